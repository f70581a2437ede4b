"""Operator-defined HTTP tools: an ``agents.Tool`` row of kind ``http`` as a kit ``Tool``.

A call fills the row's ``url_template`` placeholders from the arguments (URL-quoted), sends
the remaining arguments as query parameters (GET, DELETE) or as a JSON body (POST, PUT,
PATCH), with headers read from the environment variables the row names.

Unlike ``http_fetch``, these requests are NOT refused for private or loopback addresses: the
URL is trusted configuration written by an operator (often an intranet service), and the model
only fills placeholders, each quoted so it cannot leave its path segment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from orkestrel.core import Tool, create_tool

from ..models import Tool as ToolRow
from ..validators import template_placeholders

__all__ = [
    "MAX_RESPONSE_BYTES",
    "HttpToolError",
    "build_http_tool",
    "call_http_tool",
    "render_url",
]

MAX_RESPONSE_BYTES = 200_000
_EXCERPT = 200
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class HttpToolError(RuntimeError):
    """An HTTP tool call that failed: a missing variable or argument, or a non-2xx answer."""


def _text(value: Any) -> str:
    # JSON spelling for scalars a model sends (true, not True); containers as compact JSON.
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def render_url(template: str, arguments: Mapping[str, Any]) -> tuple[str, set[str]]:
    """``template`` with each ``{name}`` replaced by its quoted argument, and the names used."""
    names = template_placeholders(template)
    missing = [name for name in names if arguments.get(name) is None]
    if missing:
        raise HttpToolError(f"missing argument {missing[0]!r} for the URL")
    # ``safe=""``: a value like "../admin" or "a/b?c" stays inside its own segment.
    values = {name: quote(_text(arguments[name]), safe="") for name in names}
    return template.format_map(values), set(names)


def _headers(header_env: Mapping[str, str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for header, variable in header_env.items():
        value = os.environ.get(variable)
        if value is None:
            # The name only: the value is a secret and never reaches the model or the logs.
            raise HttpToolError(
                f"environment variable {variable!r} for header {header!r} is not set"
            )
        headers[header] = value
    return headers


def _query(arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = []
    for name, value in arguments.items():
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        params.extend((name, _text(item)) for item in items)
    return params


async def _body(response: httpx.Response) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > MAX_RESPONSE_BYTES:
            return bytes(body[:MAX_RESPONSE_BYTES]), True
    return bytes(body), False


def _result(response: httpx.Response, body: bytes, truncated: bool) -> dict[str, Any]:
    try:
        text = body.decode(response.encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = body.decode("utf-8", errors="replace")
    kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if not truncated and ("json" in kind or not kind):
        try:
            return {"status": response.status_code, "json": json.loads(text)}
        except ValueError:
            pass
    result: dict[str, Any] = {"status": response.status_code, "text": text}
    if truncated:
        result["truncated"] = True
    return result


async def call_http_tool(
    method: str, template: str, header_env: Mapping[str, str], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Send one call; ``{status, json}`` or ``{status, text}``; non-2xx raises ``HttpToolError``.

    No own timeout: the tool guard bounds the whole call with the row's ``timeout``.
    """
    url, used = render_url(template, arguments)
    rest = {name: value for name, value in arguments.items() if name not in used}
    headers = {"Accept": "application/json, text/*;q=0.9, */*;q=0.5", **_headers(header_env)}
    request: dict[str, Any] = {"headers": headers}
    if method in _BODY_METHODS:
        request["json"] = rest
    else:
        request["params"] = _query(rest)
    try:
        async with (
            httpx.AsyncClient(follow_redirects=True, max_redirects=5, timeout=None) as client,
            client.stream(method, url, **request) as response,
        ):
            body, truncated = await _body(response)
    except httpx.TransportError as error:
        raise HttpToolError(f"request failed: {error or type(error).__name__}") from error
    if not response.is_success:
        excerpt = body[:_EXCERPT].decode("utf-8", errors="replace").strip()
        raise HttpToolError(
            f"HTTP {response.status_code}: {excerpt}" if excerpt else f"HTTP {response.status_code}"
        )
    return _result(response, body, truncated)


def build_http_tool(row: ToolRow) -> Tool:
    """The kit ``Tool`` for an ``http`` row (name, schema and texts from the row)."""
    method = row.http_method.upper()
    template = row.url_template
    header_env = dict(row.header_env or {})

    async def execute(arguments: Mapping[str, Any]) -> Any:
        return await call_http_tool(method, template, header_env, arguments)

    return create_tool(
        name=row.name,
        execute=execute,
        description=row.description or None,
        summary=row.summary or None,
        parameters=row.parameters or None,
        safe=row.safe,
    )
