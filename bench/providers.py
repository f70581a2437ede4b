"""Per-chunk client CPU of the real providers: stream 100,000 chunks from a loopback server.

The server runs in a separate process (so its CPU is not counted) and answers every request
with one prebuilt body: N content chunks in the provider's wire format (SSE for OpenAI and
Anthropic, NDJSON for Ollama), then the end-of-turn events. The client side is measured with
``time.process_time()`` around one full ``provider.stream(...)`` drain, after a warm-up run.
A raw ``httpx`` drain of the same body is reported as the transport's share.

Run: ``.venv/bin/python bench/providers.py [--chunks 100000] [--provider openai]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import multiprocessing.queues
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orkestrel.core.abort import AbortSignal
from orkestrel.core.provider import ContentDelta, ProviderResult
from orkestrel.providers.anthropic import AnthropicProvider
from orkestrel.providers.base import HttpProvider
from orkestrel.providers.ollama import OllamaProvider
from orkestrel.providers.openai import OpenAIProvider

TARGET_US = 50.0


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def openai_body(chunks: int) -> bytes:
    head = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }
    parts = []
    for i in range(chunks):
        choice = {"index": 0, "delta": {"content": f" tok{i % 10}"}, "finish_reason": None}
        parts.append(f"data: {_dumps({**head, 'choices': [choice]})}\n\n")
    end = {"index": 0, "delta": {}, "finish_reason": "stop"}
    parts.append(f"data: {_dumps({**head, 'choices': [end]})}\n\n")
    usage = {"prompt_tokens": 10, "completion_tokens": chunks, "total_tokens": chunks + 10}
    parts.append(f"data: {_dumps({**head, 'choices': [], 'usage': usage})}\n\n")
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def anthropic_body(chunks: int) -> bytes:
    def event(data: dict[str, object]) -> str:
        return f"event: {data['type']}\ndata: {_dumps(data)}\n\n"

    start = {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    parts = [
        event(start),
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
    ]
    for i in range(chunks):
        delta = {"type": "text_delta", "text": f" tok{i % 10}"}
        parts.append(event({"type": "content_block_delta", "index": 0, "delta": delta}))
    parts.append(event({"type": "content_block_stop", "index": 0}))
    parts.append(
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": chunks},
            }
        )
    )
    parts.append(event({"type": "message_stop"}))
    return "".join(parts).encode()


def ollama_body(chunks: int) -> bytes:
    parts = []
    for i in range(chunks):
        line = {
            "model": "qwen3:8b",
            "created_at": "2025-05-27T22:54:57.641643Z",
            "message": {"role": "assistant", "content": f" tok{i % 10}"},
            "done": False,
        }
        parts.append(_dumps(line) + "\n")
    last = {
        "model": "qwen3:8b",
        "created_at": "2025-05-27T22:54:58.100509Z",
        "message": {"role": "assistant", "content": ""},
        "done_reason": "stop",
        "done": True,
        "prompt_eval_count": 10,
        "eval_count": chunks,
    }
    parts.append(_dumps(last) + "\n")
    return "".join(parts).encode()


BODIES: dict[str, Callable[[int], bytes]] = {
    "openai": openai_body,
    "anthropic": anthropic_body,
    "ollama": ollama_body,
}


def serve(kind: str, chunks: int, ready: multiprocessing.queues.Queue[int]) -> None:
    """The server process: answer every request on every connection with the same body."""
    body = BODIES[kind](chunks)
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in request.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                writer.write(head)
                writer.write(body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


PROVIDERS: dict[str, Callable[[str], HttpProvider]] = {
    "openai": lambda url: OpenAIProvider(model="gpt-4o-mini", base_url=url + "/v1"),
    "anthropic": lambda url: AnthropicProvider(model="claude-sonnet-4-5", base_url=url),
    "ollama": lambda url: OllamaProvider(model="qwen3:8b", base_url=url),
}


async def drain_provider(provider: HttpProvider, chunks: int) -> float:
    messages = [{"role": "user", "content": "count"}]
    started = time.process_time()
    deltas = 0
    result = None
    async for item in provider.stream(messages, AbortSignal()):
        if type(item) is ContentDelta:
            deltas += 1
        else:
            result = item
    spent = time.process_time() - started
    assert isinstance(result, ProviderResult), "the stream must end with its result"
    assert deltas == chunks, f"expected {chunks} deltas, got {deltas}"
    return spent


async def drain_raw(client: httpx.AsyncClient, url: str) -> float:
    started = time.process_time()
    async with client.stream("POST", url, content=b"{}") as response:
        async for _ in response.aiter_bytes():
            pass
    return time.process_time() - started


async def measure(kind: str, url: str, chunks: int) -> tuple[float, float]:
    async with PROVIDERS[kind](url) as provider:
        await drain_provider(provider, chunks)  # warm-up: connection, imports, caches
        spent = await drain_provider(provider, chunks)
    async with httpx.AsyncClient(timeout=60) as client:
        await drain_raw(client, url)
        raw = await drain_raw(client, url)
    return spent, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--provider", choices=sorted(PROVIDERS), action="append")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    print(f"{args.chunks:,} chunks per stream; client CPU only (server in another process)")
    print(f"{'provider':<10} {'µs/chunk':>9} {'httpx share':>12}  target < {TARGET_US:.0f} µs")
    for kind in args.provider or list(PROVIDERS):
        ready = context.Queue()
        server = context.Process(target=serve, args=(kind, args.chunks, ready), daemon=True)
        server.start()
        try:
            port = ready.get(timeout=60)
            spent, raw = asyncio.run(measure(kind, f"http://127.0.0.1:{port}", args.chunks))
        finally:
            server.terminate()
            server.join()
        per_chunk = spent / args.chunks * 1e6
        share = raw / args.chunks * 1e6
        verdict = "ok" if per_chunk < TARGET_US else "OVER"
        print(f"{kind:<10} {per_chunk:>9.2f} {share:>12.2f}  {verdict}")


if __name__ == "__main__":
    main()
