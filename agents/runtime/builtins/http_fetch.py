"""The ``http_fetch`` built-in: GET a public web page for the model, refusing internal addresses.

A model-chosen URL is untrusted input, so every hop (the first request and each redirect) is
checked before it is sent: only http(s); never ``localhost``; and every address the host
resolves to must be public (not loopback, private, link-local, multicast, reserved or
unspecified). The connection then goes to the address that was checked (the URL's host kept
in ``Host`` and TLS SNI), so a DNS answer that changes between check and connect cannot steer
the request inside. Hosts in ``ORKESTREL["HTTP_FETCH_ALLOW_HOSTS"]`` skip the address check:
the operator's way to reach an intranet service on purpose.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urljoin

import httpx
from django.conf import settings as django_settings

from orkestrel.core import Tool, create_tool

from ..registry import ToolContext

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DESCRIPTION",
    "FetchFailed",
    "FetchRefused",
    "MAX_REDIRECTS",
    "NAME",
    "PARAMETERS",
    "SAFE",
    "allowed_hosts",
    "build_request",
    "check_address",
    "check_target",
    "create_http_fetch_tool",
    "fetch",
    "pinned",
]

NAME = "http_fetch"
SAFE = True  # a GET changes nothing on our side
DEFAULT_MAX_BYTES = 200_000
MAX_REDIRECTS = 3
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXTUAL = ("json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "csv")
_USER_AGENT = "orkestrel-http-fetch/1.0"

DESCRIPTION = (
    "Fetch a public web page or API with an HTTP GET and return its status, content type and "
    "text (cut at max_bytes). Only http and https URLs on the public internet."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {
            "type": "string",
            "pattern": "^[hH][tT][tT][pP][sS]?://",
            "description": "The http(s) URL to fetch.",
        },
        "max_bytes": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": 1_000_000,
            "description": f"Most bytes of the body to return (default {DEFAULT_MAX_BYTES}).",
        },
    },
    "required": ["url"],
}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(ValueError):
    """A URL the fetch tool will not request; the message says why."""


class FetchFailed(ConnectionError):
    """A request that could not complete (connection refused, reset, TLS failure)."""


def allowed_hosts(context_settings: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The operator allow-list: the run's settings first, else ``settings.ORKESTREL``."""
    if context_settings is not None and "HTTP_FETCH_ALLOW_HOSTS" in context_settings:
        hosts = context_settings["HTTP_FETCH_ALLOW_HOSTS"]
    else:
        hosts = getattr(django_settings, "ORKESTREL", {}).get("HTTP_FETCH_ALLOW_HOSTS", [])
    return frozenset(_normal(host) for host in hosts or ())


def _normal(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def check_address(address: Address) -> str | None:
    """Why ``address`` may not be fetched (``"loopback"``, ``"private"``, ...), or ``None``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # ::ffff:127.0.0.1 reaches 127.0.0.1.
        address = address.ipv4_mapped
    # Most specific first: Python counts loopback, link-local and the rest as "private" too.
    for label in ("unspecified", "loopback", "link_local", "multicast", "reserved", "private"):
        if getattr(address, f"is_{label}"):
            return label.replace("_", "-")
    if not address.is_global:
        # Shared (100.64/10), benchmarking and other special-purpose ranges.
        return "non-public"
    return None


async def _resolve(host: str, port: int) -> list[Address]:
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise FetchRefused(f"cannot resolve host {host!r}: {error}") from error
    # Drop an IPv6 scope (``fe80::1%eth0``) before parsing; the address alone decides.
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


async def check_target(url: httpx.URL, allow: frozenset[str]) -> Address | None:
    """Check one hop; the public address to connect to, or ``None`` for an allow-listed host.

    Raises ``FetchRefused``. Shared with the operator HTTP tools, which check every hop too.
    """
    if url.scheme not in ("http", "https"):
        raise FetchRefused(f"refused {url}: only http and https URLs can be fetched")
    # The ASCII (IDNA) form: what DNS and the allow-list compare.
    host = _normal(url.raw_host.decode("ascii"))
    if not host:
        raise FetchRefused(f"refused {url}: the URL has no host")
    if host in allow:
        return None
    if host == "localhost" or host.endswith(".localhost"):
        raise FetchRefused(f"refused {url}: localhost is not reachable from this tool")
    addresses = await _resolve(host, url.port or (443 if url.scheme == "https" else 80))
    if not addresses:
        raise FetchRefused(f"cannot resolve host {host!r}")
    for address in addresses:
        reason = check_address(address)
        if reason is not None:
            raise FetchRefused(f"refused {url}: {host} resolves to a {reason} address ({address})")
    return addresses[0]


def pinned(
    url: httpx.URL, address: Address | None
) -> tuple[httpx.URL, dict[str, str], dict[str, Any]]:
    """``url`` aimed at the checked ``address``, with the ``Host`` header and TLS extensions.

    ``address`` ``None`` (an allow-listed host) leaves the URL for httpx to resolve.
    """
    if address is None:
        return url, {}, {}
    # Connect to the checked address; Host and SNI keep the name the server expects.
    name = url.raw_host.decode("ascii")
    extensions: dict[str, Any] = {"sni_hostname": name} if url.scheme == "https" else {}
    return url.copy_with(host=str(address)), {"Host": url.netloc.decode("ascii")}, extensions


def build_request(
    client: httpx.AsyncClient, url: httpx.URL, address: Address | None
) -> httpx.Request:
    """A GET of ``url`` sent to ``address`` (pinned), or resolved by httpx when ``None``."""
    target, host, extensions = pinned(url, address)
    headers = {"User-Agent": _USER_AGENT, "Accept": "*/*", **host}
    return client.build_request("GET", target, headers=headers, extensions=extensions)


def _is_textual(content_type: str) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    return not kind or kind.startswith("text/") or any(part in kind for part in _TEXTUAL)


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


async def _read(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False


async def fetch(
    url: str, *, allow: Sequence[str] | frozenset[str] = (), max_bytes: int = DEFAULT_MAX_BYTES
) -> dict[str, Any]:
    """GET ``url`` (following up to ``MAX_REDIRECTS``, each hop checked); raises ``FetchRefused``.

    Returns ``{url, status, content_type, text, truncated}``; ``text`` is ``None`` for a
    non-textual body. No own timeout: the tool guard bounds the whole call.
    """
    allowed = frozenset(_normal(host) for host in allow)
    try:
        current = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as error:
        raise FetchRefused(f"invalid URL {url!r}: {error}") from error
    # trust_env=False: an environment proxy would connect on our behalf, past every check.
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=None) as client:
        for _hop in range(MAX_REDIRECTS + 1):
            address = await check_target(current, allowed)
            request = build_request(client, current, address)
            try:
                response = await client.send(request, stream=True)
            except httpx.TransportError as error:
                # httpx's messages may be empty; the model needs to know what failed.
                detail = str(error) or type(error).__name__
                raise FetchFailed(f"could not fetch {current}: {detail}") from error
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    try:
                        current = httpx.URL(urljoin(str(current), location))
                    except httpx.InvalidURL as error:
                        raise FetchRefused(f"invalid redirect {location!r}: {error}") from error
                    continue
                body, truncated = await _read(response, max_bytes)
            finally:
                await response.aclose()
            content_type = response.headers.get("content-type", "")
            text = _decode(body, response.charset_encoding) if _is_textual(content_type) else None
            return {
                "url": str(current),
                "status": response.status_code,
                "content_type": content_type,
                "text": text,
                "truncated": truncated,
            }
    raise FetchRefused(f"stopped after {MAX_REDIRECTS} redirects at {current}")


def create_http_fetch_tool(context: ToolContext) -> Tool:
    """The ``http_fetch`` tool; the allow-list is read once, when the run's tools are built."""
    allow = allowed_hosts(context.settings)

    async def execute(arguments: Mapping[str, Any]) -> Any:
        limit = arguments.get("max_bytes") or DEFAULT_MAX_BYTES
        return await fetch(arguments["url"], allow=allow, max_bytes=limit)

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
