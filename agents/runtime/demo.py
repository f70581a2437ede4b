"""The offline demo model: a scripted provider that needs no model server.

It streams a short, honest reply word by word, shows a little reasoning, and calls the
``workspace`` tool when asked about files, so a new user sees every part of the chat UI.
"""

from __future__ import annotations

from collections.abc import Sequence

from orkestrel.core import Message, TokenUsage, estimate_messages, estimate_tokens
from orkestrel.providers import ScriptedProvider, ScriptedTurn

__all__ = ["DEMO_WORD_DELAY", "create_demo_provider"]

DEMO_WORD_DELAY = 0.03
TOOL_TRIGGERS = ("file", "workspace", "tool")


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [word + (" " if index < len(words) - 1 else "") for index, word in enumerate(words)]


def _usage(messages: Sequence[Message], *texts: str) -> TokenUsage:
    """Estimated usage, so the demo's usage readout and context meter move like a real model's."""
    prompt = estimate_messages(messages)
    completion = sum(estimate_tokens(text) for text in texts)
    return TokenUsage(prompt, completion, prompt + completion)


def _reply(messages: Sequence[Message], delay: float) -> ScriptedTurn:
    last = messages[-1] if messages else None
    if last is not None and last.role == "tool":
        text = (
            "The workspace tool answered: "
            + (last.content if len(last.content) < 400 else last.content[:400] + "…")
            + " That is what your workspace holds right now."
        )
        return ScriptedTurn(content=_words(text), delay=delay, usage=_usage(messages, text))
    user = next((m for m in reversed(messages) if m.role == "user"), None)
    said = (user.content.strip() if user is not None else "") or "(nothing)"
    if any(trigger in said.lower() for trigger in TOOL_TRIGGERS):
        thinking = "The user asks about files, so I will list the workspace."
        content = "Let me look at your workspace."
        return ScriptedTurn(
            thinking=_words(thinking),
            content=_words(content),
            tools=[{"name": "workspace", "arguments": {"operation": "list"}}],
            delay=delay,
            usage=_usage(messages, thinking, content),
        )
    text = (
        f"You said: {said} — I am orkestrel's offline demo model, so I can only echo you. "
        "Ask me about your files to see a tool call, or point this profile at a real "
        "OpenAI-compatible, Anthropic or Ollama endpoint in the admin."
    )
    thinking = "A demo reply: echo the message and explain."
    return ScriptedTurn(
        thinking=_words(thinking),
        content=_words(text),
        delay=delay,
        usage=_usage(messages, thinking, text),
    )


def create_demo_provider(delay: float = DEMO_WORD_DELAY, name: str = "demo") -> ScriptedProvider:
    """An endless scripted provider answering every call with a demo turn."""
    return ScriptedProvider(script=[], name=name, fallback=lambda messages: _reply(messages, delay))
