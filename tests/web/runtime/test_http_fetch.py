"""The ``http_fetch`` built-in: internal addresses are refused on every hop unless allow-listed."""

from __future__ import annotations

import ipaddress
import socket

import httpx
import pytest

from agents.runtime.arguments import guard_tool
from agents.runtime.builtins.http_fetch import (
    DEFAULT_MAX_BYTES,
    allowed_hosts,
    build_request,
    check_address,
    create_http_fetch_tool,
)
from orkestrel.core import ToolManager

from .helpers import Reply, call, tool_context


def fetcher(settings: dict | None = None) -> ToolManager:
    return ToolManager(
        guard_tool(create_http_fetch_tool(tool_context(settings=settings)), timeout=5)
    )


@pytest.fixture
def allow_loopback(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]}


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("http://127.0.0.1:{port}/", "loopback"),
        ("http://localhost:{port}/", "localhost is not reachable"),
        ("http://LOCALHOST.:{port}/", "localhost is not reachable"),
        ("http://api.localhost:{port}/", "localhost is not reachable"),
        ("http://[::1]:{port}/", "loopback"),
        ("http://[::ffff:127.0.0.1]:{port}/", "loopback"),
        ("http://2130706433:{port}/", "loopback"),
        ("http://0x7f000001:{port}/", "loopback"),
        ("http://127.1:{port}/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("http://192.168.0.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://0.0.0.0:{port}/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://100.64.0.1/", "non-public"),
    ],
)
async def test_internal_addresses_are_refused_before_any_request(server, template, reason):
    result = await call(fetcher(), "http_fetch", url=template.format(port=server.port))
    assert result.value is None
    assert result.error.startswith("refused ")
    assert reason in result.error
    assert server.seen == []


async def test_a_host_name_resolving_to_an_internal_address_is_refused(server):
    name = socket.gethostname()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, 80)}
    except OSError:
        pytest.skip(f"{name!r} does not resolve here")
    if any(check_address(ipaddress.ip_address(one.split("%")[0])) is None for one in addresses):
        pytest.skip(f"{name!r} resolves to a public address here")
    result = await call(fetcher(), "http_fetch", url=f"http://{name}:{server.port}/")
    assert f"refused http://{name}:{server.port}/: {name} resolves to a" in result.error
    assert server.seen == []


@pytest.mark.parametrize("url", ["ftp://example.com/file", "file:///etc/passwd", "example.com"])
async def test_only_http_urls_are_accepted(url):
    result = await call(fetcher(), "http_fetch", url=url)
    assert result.error.startswith("invalid arguments at $.url")


@pytest.mark.usefixtures("allow_loopback")
async def test_an_allow_listed_host_is_fetched(server):
    server.routes["/page"] = Reply(200, "héllo wörld", "text/html; charset=utf-8")
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/page")
    assert result.error is None
    assert result.value == {
        "url": f"{server.url}/page",
        "status": 200,
        "content_type": "text/html; charset=utf-8",
        "text": "héllo wörld",
        "truncated": False,
    }
    assert server.seen[0].method == "GET"
    assert server.seen[0].headers["user-agent"].startswith("orkestrel-http-fetch")


async def test_the_run_settings_allow_list_wins_over_django_settings(server):
    server.routes["/"] = Reply(200, "ok")
    manager = fetcher(settings={"HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]})
    result = await call(manager, "http_fetch", url=f"{server.url}/")
    assert result.value["text"] == "ok"


@pytest.mark.usefixtures("allow_loopback")
async def test_an_error_status_is_returned_not_raised(server):
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/missing")
    assert (result.error, result.value["status"], result.value["text"]) == (
        None,
        404,
        "no such route",
    )


@pytest.mark.usefixtures("allow_loopback")
async def test_a_large_body_is_cut_at_max_bytes_and_flagged(server):
    server.routes["/big"] = Reply(200, "x" * 5000)
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/big", max_bytes=100)
    assert (len(result.value["text"]), result.value["truncated"]) == (100, True)


@pytest.mark.usefixtures("allow_loopback")
async def test_the_default_cap_is_200_kb(server):
    server.routes["/huge"] = Reply(200, b"y" * (DEFAULT_MAX_BYTES + 10))
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/huge")
    assert (len(result.value["text"]), result.value["truncated"]) == (DEFAULT_MAX_BYTES, True)


@pytest.mark.usefixtures("allow_loopback")
async def test_a_binary_body_has_no_text(server):
    server.routes["/logo.png"] = Reply(200, b"\x89PNG\r\n", "image/png")
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/logo.png")
    assert (result.value["content_type"], result.value["text"]) == ("image/png", None)


@pytest.mark.usefixtures("allow_loopback")
async def test_redirects_within_allowed_hosts_are_followed(server):
    server.routes["/old"] = Reply(301, "", headers={"location": "/new"})
    server.routes["/new"] = Reply(200, {"moved": True}, "application/json")
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/old")
    assert result.value["url"] == f"{server.url}/new"
    assert result.value["text"] == '{"moved": true}'
    assert server.paths() == ["/old", "/new"]


@pytest.mark.usefixtures("allow_loopback")
@pytest.mark.parametrize(
    "target", ["http://localhost:{port}/secret", "http://[::1]:{port}/secret", "http://10.0.0.8/"]
)
async def test_a_redirect_from_an_allowed_host_to_a_refused_one_is_refused(server, target):
    location = target.format(port=server.port)
    server.routes["/hop"] = Reply(302, "", headers={"location": location})
    server.routes["/secret"] = Reply(200, "internal")
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/hop")
    assert result.value is None
    assert result.error.startswith(f"refused {location}")
    assert server.paths() == ["/hop"]


@pytest.mark.usefixtures("allow_loopback")
async def test_a_redirect_loop_stops_after_three_redirects(server):
    server.routes["/loop"] = Reply(302, "", headers={"location": "/loop"})
    result = await call(fetcher(), "http_fetch", url=f"{server.url}/loop")
    assert result.error == f"stopped after 3 redirects at {server.url}/loop"
    assert server.paths() == ["/loop"] * 4


def test_the_allow_list_is_read_from_django_settings(settings):
    settings.ORKESTREL = {"HTTP_FETCH_ALLOW_HOSTS": ["Intranet.Example.", "[fd00::1]"]}
    assert allowed_hosts({}) == {"intranet.example", "fd00::1"}
    assert allowed_hosts({"HTTP_FETCH_ALLOW_HOSTS": []}) == frozenset()


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("93.184.216.34", None),
        ("2606:4700:4700::1111", None),
        ("127.0.0.53", "loopback"),
        ("172.16.5.4", "private"),
        ("fd12:3456::1", "private"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("::", "unspecified"),
        ("::ffff:10.0.0.1", "private"),
    ],
)
def test_check_address_names_why_an_address_is_internal(address, reason):
    assert check_address(ipaddress.ip_address(address)) == reason


async def test_a_pinned_request_connects_to_the_checked_address_under_the_urls_host(server):
    server.routes["/p"] = Reply(200, "pinned")
    url = httpx.URL(f"http://public.example:{server.port}/p?q=1")
    async with httpx.AsyncClient(trust_env=False) as client:
        request = build_request(client, url, ipaddress.ip_address("127.0.0.1"))
        response = await client.send(request)
    assert response.text == "pinned"
    assert server.seen[0].path == "/p?q=1"
    assert server.seen[0].headers["host"] == f"public.example:{server.port}"


def test_a_pinned_https_request_keeps_the_name_for_tls():
    client = httpx.AsyncClient()
    url = httpx.URL("https://Public.Example/x")
    request = build_request(client, url, ipaddress.ip_address("2606:4700::1"))
    assert str(request.url) == "https://[2606:4700::1]/x"
    assert request.headers["host"] == "public.example"
    assert request.extensions["sni_hostname"] == "public.example"


async def test_a_connection_failure_is_an_error_naming_the_url(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]}
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = await call(fetcher(), "http_fetch", url=f"http://127.0.0.1:{port}/")
    assert result.error.startswith(f"could not fetch http://127.0.0.1:{port}/: ")
