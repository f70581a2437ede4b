"""Operator-defined HTTP tools: an ``agents.Tool`` row of kind ``http`` as a kit ``Tool``.

A call fills the row's ``url_template`` placeholders from the arguments (URL-quoted), sends
the remaining arguments as query parameters (GET, DELETE) or as a JSON body (POST, PUT,
PATCH), with headers read from the environment variables the row names.

The operator fixes where requests go: placeholders may fill the path and query only, never
the scheme, host or port, and each value is quoted so it cannot leave its segment. Every hop
(the first request and each redirect) passes ``http_fetch``'s address guard: private,
loopback and link-local addresses are refused unless the host is in
``ORKESTREL["HTTP_FETCH_ALLOW_HOSTS"]`` (an intranet service must be listed there). Redirects
are followed within the URL's origin only, unless the row allows others; the header
variables (the secrets) are never sent past a change of origin.

A row's ``system_field`` (a JSON Pointer) picks a field of the JSON answer whose text the model
reads as system messages after the turn's tool results: the call returns the kit's
``{result, system}`` payload, the field left out of ``result``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urljoin

import httpx

from orkestrel.core import Tool, create_tool
from orkestrel.telemetry.propagation import outgoing

from ..models import Tool as ToolRow
from ..validators import (
    json_pointer_tokens,
    key_variable_problem,
    template_origin_problem,
    template_placeholders,
)
from .builtins.http_fetch import FetchRefused, allowed_hosts, check_target, pinned

__all__ = [
    "MAX_REDIRECTS",
    "MAX_RESPONSE_BYTES",
    "HttpToolError",
    "build_http_tool",
    "call_http_tool",
    "render_url",
    "split_system",
]

MAX_RESPONSE_BYTES = 200_000
MAX_REDIRECTS = 5
_EXCERPT = 200
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_ACCEPT = "application/json, text/*;q=0.9, */*;q=0.5"


class HttpToolError(RuntimeError):
    """An HTTP tool call that failed: a missing variable or argument, a refused address or
    redirect, or a non-2xx answer."""


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
        problem = key_variable_problem(variable)
        if problem is not None:
            # Checked before reading: a row saved around validation must not leak SECRET_KEY.
            raise HttpToolError(f"refused the variable for header {header!r}: {problem}")
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


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return (url.scheme, url.raw_host.decode("ascii").lower(), url.port or _default_port(url))


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


def _redirect_method(method: str, status: int) -> str:
    # What browsers and httpx do: 303 (and 302) become a GET; 301 turns a POST into a GET.
    if status in (302, 303) and method != "HEAD":
        return "GET"
    if status == 301 and method == "POST":
        return "GET"
    return method


def _follow(
    current: httpx.URL, location: str, origin: tuple[str, str, int], cross_origin: bool
) -> httpx.URL:
    """The redirect's target; refused if it leaves ``origin`` and the tool does not allow it."""
    try:
        following = httpx.URL(urljoin(str(current), location))
    except httpx.InvalidURL as error:
        raise HttpToolError(f"invalid redirect {location!r}") from error
    if not cross_origin and _origin(following) != origin:
        scheme, host, port = _origin(following)
        raise HttpToolError(
            f"refused a redirect to another origin ({scheme}://{host}:{port}): this tool "
            "follows same-origin redirects only"
        )
    return following


async def _send(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    headers: Mapping[str, str],
    content: Mapping[str, Any],
    allow: frozenset[str],
) -> httpx.Response:
    """One hop, after the address guard: connects to the address that was checked."""
    try:
        address = await check_target(url, allow)
    except FetchRefused as error:
        raise HttpToolError(str(error)) from error
    target, host, extensions = pinned(url, address)
    request = client.build_request(
        method, target, headers={**headers, **host}, extensions=extensions, **content
    )
    return await client.send(request, stream=True)


async def call_http_tool(
    method: str,
    template: str,
    header_env: Mapping[str, str],
    arguments: Mapping[str, Any],
    *,
    allow: frozenset[str] = frozenset(),
    cross_origin: bool = False,
) -> dict[str, Any]:
    """Send one call; ``{status, json}`` or ``{status, text}``; non-2xx raises ``HttpToolError``.

    ``allow``: hosts reachable on internal addresses. ``cross_origin``: follow redirects to
    other origins (without the header variables). No own timeout: the tool guard bounds the
    whole call with the row's ``timeout``.
    """
    problem = template_origin_problem(template)
    if problem is not None:
        raise HttpToolError(f"refused the URL template: {problem}")
    url, used = render_url(template, arguments)
    rest = {name: value for name, value in arguments.items() if name not in used}
    secrets = _headers(header_env)
    # The run's trace goes on with the call (``traceparent``; nothing while traces are off).
    traced = outgoing()
    content: dict[str, Any] = (
        {"json": rest} if method in _BODY_METHODS else {"params": _query(rest)}
    )
    try:
        current = httpx.URL(url)
    except httpx.InvalidURL as error:
        raise HttpToolError(f"invalid URL: {error}") from error
    origin = _origin(current)
    try:
        # trust_env=False: an environment proxy would connect on our behalf, past the guard.
        async with httpx.AsyncClient(
            follow_redirects=False, trust_env=False, timeout=None
        ) as client:
            for _hop in range(MAX_REDIRECTS + 1):
                headers = {"Accept": _ACCEPT, **traced, **secrets}
                response = await _send(client, method, current, headers, content, allow)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        following = _follow(current, location, origin, cross_origin)
                        if _origin(following) != origin:
                            # The secrets were meant for the configured origin alone.
                            secrets = {}
                        redirected = _redirect_method(method, response.status_code)
                        # The query went with the first request; a body only if the method stays.
                        content = content if redirected == method and "json" in content else {}
                        method, current = redirected, following
                        continue
                    body, truncated = await _body(response)
                finally:
                    await response.aclose()
                break
            else:
                raise HttpToolError(f"stopped after {MAX_REDIRECTS} redirects")
    except httpx.TransportError as error:
        raise HttpToolError(f"request failed: {error or type(error).__name__}") from error
    if not response.is_success:
        excerpt = body[:_EXCERPT].decode("utf-8", errors="replace").strip()
        raise HttpToolError(
            f"HTTP {response.status_code}: {excerpt}" if excerpt else f"HTTP {response.status_code}"
        )
    return _result(response, body, truncated)


def _index(node: Any, token: str) -> int | None:
    # RFC 6901 array indexes: digits without a leading zero ("-", past the end, is none).
    if not isinstance(node, list) or not token.isdigit() or (token != "0" and token[0] == "0"):
        return None
    index = int(token)
    return index if index < len(node) else None


def _split(node: Any, tokens: tuple[str, ...]) -> tuple[Any, Any]:
    """``node`` without the value at ``tokens``, and that value (``None`` where there is none).

    Only the containers on the path are copied: the caller's answer is left as it was.
    """
    token, rest = tokens[0], tokens[1:]
    if isinstance(node, dict):
        if token not in node:
            return node, None
        if not rest:
            kept = dict(node)
            return kept, kept.pop(token)
        child, value = _split(node[token], rest)
        return {**node, token: child}, value
    index = _index(node, token)
    if index is None:
        return node, None
    items = list(node)
    if not rest:
        return items, items.pop(index)
    items[index], value = _split(items[index], rest)
    return items, value


def split_system(result: Mapping[str, Any], pointer: str) -> dict[str, Any]:
    """``{result, system}``: the text at ``pointer`` in the JSON answer, taken out of ``result``.

    A field that is absent (or null, or an answer that is not JSON) gives no system text; a
    value that is neither a string nor a list of strings raises ``HttpToolError``;
    ``ValueError`` for a malformed ``pointer``.
    """
    tokens = json_pointer_tokens(pointer)
    rest = dict(result)
    if "json" not in rest:
        return {"result": rest, "system": None}
    rest["json"], value = _split(rest["json"], tokens)
    if value is None or isinstance(value, str):
        return {"result": rest, "system": value}
    if isinstance(value, list) and all(isinstance(text, str) for text in value):
        return {"result": rest, "system": value}
    raise HttpToolError(
        f"HTTP {result.get('status')}, but the response's {pointer!r} is {_kind(value)}, "
        "not a string or a list of strings"
    )


def _pointer_problem(pointer: str) -> str | None:
    if not pointer:
        return None
    try:
        json_pointer_tokens(pointer)
    except ValueError as error:
        return str(error)
    return None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list holding other values"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "an object"


def build_http_tool(row: ToolRow, *, allow: frozenset[str] | None = None) -> Tool:
    """The kit ``Tool`` for an ``http`` row (name, schema and texts from the row).

    ``allow`` defaults to ``http_fetch``'s allow-list, read once, when the tool is built.
    """
    method = row.http_method.upper()
    template = row.url_template
    header_env = dict(row.header_env or {})
    hosts = allowed_hosts() if allow is None else allow
    cross_origin = row.follow_cross_origin_redirects
    pointer = row.system_field
    problem = _pointer_problem(pointer)

    async def execute(arguments: Mapping[str, Any]) -> Any:
        if problem is not None:
            # A row saved around the admin's checks: refused before anything is sent.
            raise HttpToolError(f"refused the system field {pointer!r}: {problem}")
        result = await call_http_tool(
            method, template, header_env, arguments, allow=hosts, cross_origin=cross_origin
        )
        return split_system(result, pointer) if pointer else result

    return create_tool(
        name=row.name,
        execute=execute,
        description=row.description or None,
        summary=row.summary or None,
        parameters=row.parameters or None,
        # The tool's own: a write (the operator knows whether its requests change anything).
        safe=row.safety(False),
    )
