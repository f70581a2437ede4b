"""Operator-defined HTTP tools: templated URLs, query or JSON arguments, headers from the env.

Every hop passes ``http_fetch``'s address guard: the loopback test server is reached only
because these tests allow-list ``127.0.0.1`` (and ``localhost``, as a second origin).
"""

from __future__ import annotations

import json
import socket

import pytest

from agents.models import Tool as ToolRow
from agents.runtime.arguments import guard_tool
from agents.runtime.http_tools import (
    MAX_REDIRECTS,
    MAX_RESPONSE_BYTES,
    build_http_tool,
    render_url,
)
from orkestrel.core import ToolManager, create_agent
from orkestrel.providers import ScriptedProvider

from .helpers import Reply, call

PARAMETERS = {
    "type": "object",
    "properties": {
        "item_id": {"type": "string"},
        "q": {"type": "string"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "count": {"type": "integer"},
    },
}


@pytest.fixture(autouse=True)
def allow_loopback(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]}


def allow(settings, *hosts: str) -> None:
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": list(hosts)}


def http_tool(server, path: str = "/items/{item_id}", **fields) -> ToolManager:
    row = ToolRow(
        name=fields.pop("name", "items"),
        kind=ToolRow.Kind.HTTP,
        url_template=f"{server.url}{path}",
        parameters=fields.pop("parameters", PARAMETERS),
        description="Look up items.",
        **fields,
    )
    # The admin's validation, minus the uniqueness query: the template names declared params.
    row.clean_fields()
    row.clean()
    return ToolManager(guard_tool(build_http_tool(row), timeout=row.timeout))


async def test_a_get_fills_the_template_and_sends_the_rest_as_query_parameters(server):
    server.routes["/items/a%2Fb%20c"] = Reply(200, {"id": "a/b c"}, "application/json")
    manager = http_tool(server)
    result = await call(manager, "items", item_id="a/b c", q="x y", flag=True, tags=["p", "q"])
    assert (result.error, result.value) == (None, {"status": 200, "json": {"id": "a/b c"}})
    seen = server.seen[0]
    assert seen.method == "GET"
    assert seen.path == "/items/a%2Fb%20c?q=x+y&flag=true&tags=p&tags=q"


async def test_a_placeholder_value_cannot_climb_out_of_its_segment(server):
    manager = http_tool(server)
    await call(manager, "items", item_id="../admin?x=1")
    assert server.paths() == ["/items/..%2Fadmin%3Fx%3D1"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
async def test_a_body_method_sends_the_other_arguments_as_json(server, method):
    server.routes["/items/7"] = Reply(201, {"ok": True}, "application/json")
    manager = http_tool(server, http_method=method)
    result = await call(manager, "items", item_id="7", q="new", count=3)
    assert result.value == {"status": 201, "json": {"ok": True}}
    seen = server.seen[0]
    assert (seen.method, seen.path) == (method, "/items/7")
    assert seen.headers["content-type"] == "application/json"
    assert json.loads(seen.body) == {"q": "new", "count": 3}


async def test_a_delete_sends_query_parameters(server):
    server.routes["/items/9"] = Reply(204, "")
    manager = http_tool(server, http_method="DELETE")
    result = await call(manager, "items", item_id="9", q="why")
    assert result.value == {"status": 204, "text": ""}
    assert (server.seen[0].method, server.seen[0].path) == ("DELETE", "/items/9?q=why")


async def test_headers_come_from_the_named_environment_variables(server, monkeypatch):
    monkeypatch.setenv("ITEMS_TOKEN", "Bearer s3cret-value")
    server.routes["/items/1"] = Reply(200, "plain words")
    manager = http_tool(server, header_env={"Authorization": "ITEMS_TOKEN"})
    result = await call(manager, "items", item_id="1")
    assert result.value == {"status": 200, "text": "plain words"}
    assert server.seen[0].headers["authorization"] == "Bearer s3cret-value"


async def test_a_missing_variable_is_an_error_naming_it_and_nothing_is_sent(server, monkeypatch):
    monkeypatch.delenv("ITEMS_TOKEN", raising=False)
    manager = http_tool(server, header_env={"Authorization": "ITEMS_TOKEN"})
    result = await call(manager, "items", item_id="1")
    assert (
        result.error == "environment variable 'ITEMS_TOKEN' for header 'Authorization' is not set"
    )
    assert server.seen == []


async def test_a_non_2xx_answer_is_an_error_with_the_status_and_an_excerpt(server):
    server.routes["/items/404"] = Reply(404, "item 404 does not exist" + "!" * 500)
    manager = http_tool(server)
    result = await call(manager, "items", item_id="404")
    assert result.value is None
    assert result.error.startswith("HTTP 404: item 404 does not exist!!!")
    assert len(result.error) < 260


async def test_a_server_error_without_a_body_still_names_the_status(server):
    server.routes["/items/x"] = Reply(503, "")
    result = await call(http_tool(server), "items", item_id="x")
    assert result.error == "HTTP 503"


async def test_a_missing_placeholder_argument_is_an_error(server):
    result = await call(http_tool(server), "items", q="no id")
    assert result.error == "missing argument 'item_id' for the URL"
    assert server.seen == []


async def test_an_oversized_answer_is_cut_and_flagged(server):
    server.routes["/items/big"] = Reply(200, "z" * (MAX_RESPONSE_BYTES + 1), "application/json")
    result = await call(http_tool(server), "items", item_id="big")
    assert result.value["truncated"] is True
    assert len(result.value["text"]) == MAX_RESPONSE_BYTES


def test_render_url_quotes_every_placeholder():
    url, used = render_url("https://api.example/{a}/x/{b}", {"a": "é/1", "b": 2, "c": "rest"})
    assert (url, used) == ("https://api.example/%C3%A9%2F1/x/2", {"a", "b"})


def test_the_tool_carries_the_rows_texts_and_schema(server):
    row = ToolRow(
        name="lookup",
        kind="http",
        url_template=f"{server.url}/{{item_id}}",
        parameters=PARAMETERS,
        summary="Lean.",
        description="Full.",
        safe=True,
    )
    tool = build_http_tool(row)
    assert (tool.name, tool.summary, tool.description, tool.parameters, tool.safe) == (
        "lookup",
        "Lean.",
        "Full.",
        PARAMETERS,
        True,
    )


async def test_an_unreachable_service_is_an_error(server):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        server.port = probe.getsockname()[1]
    result = await call(http_tool(server), "items", item_id="1")
    assert result.error.startswith("request failed: ")


# -- where requests may go ------------------------------------------------------------------


def unvalidated_tool(template: str, **fields) -> ToolManager:
    """A row saved around the admin's validation (a shell, a fixture): the run time's checks."""
    row = ToolRow(
        name="items", kind=ToolRow.Kind.HTTP, url_template=template, parameters=PARAMETERS, **fields
    )
    return ToolManager(guard_tool(build_http_tool(row), timeout=row.timeout))


async def test_loopback_is_refused_unless_allow_listed(server, settings):
    allow(settings)
    server.routes["/items/1"] = Reply(200, "internal")
    result = await call(http_tool(server), "items", item_id="1")
    assert result.value is None
    assert result.error == (
        f"refused {server.url}/items/1: 127.0.0.1 resolves to a loopback address (127.0.0.1)"
    )
    assert server.seen == []


async def test_a_redirect_hop_to_an_internal_host_is_refused(server, settings, monkeypatch):
    # Only 127.0.0.1 is allow-listed: the hop to localhost (same machine) is refused.
    monkeypatch.setenv("ITEMS_TOKEN", "Bearer s3cret-value")
    location = f"http://localhost:{server.port}/admin"
    server.routes["/items/1"] = Reply(302, "", headers={"location": location})
    manager = http_tool(
        server, header_env={"Authorization": "ITEMS_TOKEN"}, follow_cross_origin_redirects=True
    )
    result = await call(manager, "items", item_id="1")
    assert result.error == f"refused {location}: localhost is not reachable from this tool"
    assert server.paths() == ["/items/1"]


async def test_a_cross_origin_redirect_is_refused_by_default(server, settings, monkeypatch):
    allow(settings, "127.0.0.1", "localhost")
    monkeypatch.setenv("ITEMS_TOKEN", "Bearer s3cret-value")
    server.routes["/items/1"] = Reply(
        307, "", headers={"location": f"http://localhost:{server.port}/elsewhere"}
    )
    server.routes["/elsewhere"] = Reply(200, "taken")
    result = await call(
        http_tool(server, header_env={"Authorization": "ITEMS_TOKEN"}), "items", item_id="1"
    )
    assert result.error == (
        f"refused a redirect to another origin (http://localhost:{server.port}): "
        "this tool follows same-origin redirects only"
    )
    assert server.paths() == ["/items/1"]


async def test_an_allowed_cross_origin_redirect_drops_the_header_variables(
    server, settings, monkeypatch
):
    allow(settings, "127.0.0.1", "localhost")
    monkeypatch.setenv("ITEMS_TOKEN", "Bearer s3cret-value")
    server.routes["/items/1"] = Reply(
        302, "", headers={"location": f"http://localhost:{server.port}/elsewhere"}
    )
    server.routes["/back"] = Reply(200, "back")
    server.routes["/elsewhere"] = Reply(
        302, "", headers={"location": f"http://127.0.0.1:{server.port}/back"}
    )
    manager = http_tool(
        server, header_env={"Authorization": "ITEMS_TOKEN"}, follow_cross_origin_redirects=True
    )
    result = await call(manager, "items", item_id="1")
    assert result.value == {"status": 200, "text": "back"}
    assert server.paths() == ["/items/1", "/elsewhere", "/back"]
    first, *later = server.seen
    assert first.headers["authorization"] == "Bearer s3cret-value"
    # Dropped at the change of origin, and not restored on coming back: the chain is tainted.
    assert all("authorization" not in seen.headers for seen in later)
    assert later[0].headers["host"] == f"localhost:{server.port}"


async def test_a_same_origin_redirect_keeps_the_headers(server, monkeypatch):
    monkeypatch.setenv("ITEMS_TOKEN", "Bearer s3cret-value")
    server.routes["/items/1"] = Reply(301, "", headers={"location": "/items/2"})
    server.routes["/items/2"] = Reply(200, {"id": "2"}, "application/json")
    manager = http_tool(server, header_env={"Authorization": "ITEMS_TOKEN"})
    result = await call(manager, "items", item_id="1", q="x")
    assert result.value == {"status": 200, "json": {"id": "2"}}
    assert server.paths() == ["/items/1?q=x", "/items/2"]
    assert [seen.headers["authorization"] for seen in server.seen] == ["Bearer s3cret-value"] * 2


@pytest.mark.parametrize(("status", "method", "sent"), [(303, "GET", None), (307, "POST", "new")])
async def test_a_redirected_post_follows_the_http_rules(server, status, method, sent):
    # 303: the next hop is a GET without the body; 307: the same POST with the same body.
    server.routes["/items/1"] = Reply(status, "", headers={"location": "/items/done"})
    server.routes["/items/done"] = Reply(200, "done")
    result = await call(http_tool(server, http_method="POST"), "items", item_id="1", q="new")
    assert result.value == {"status": 200, "text": "done"}
    final = server.seen[-1]
    assert (final.method, final.path) == (method, "/items/done")
    assert (json.loads(final.body)["q"] if final.body else None) == sent


async def test_a_redirect_loop_stops(server):
    server.routes["/items/1"] = Reply(302, "", headers={"location": "/items/1"})
    result = await call(http_tool(server), "items", item_id="1")
    assert result.error == f"stopped after {MAX_REDIRECTS} redirects"
    assert len(server.seen) == MAX_REDIRECTS + 1


@pytest.mark.parametrize(
    "template",
    ["http://{item_id}:{port}/items", "http://127.0.0.1:{{port}}/items", "{q}://127.0.0.1:{port}/"],
)
async def test_a_placeholder_in_the_scheme_host_or_port_is_refused_at_run_time(server, template):
    template = template.replace("{port}", str(server.port)).replace("{{port}}", "{count}")
    result = await call(
        unvalidated_tool(template), "items", item_id="127.0.0.1", count=server.port, q="http"
    )
    assert result.error == (
        "refused the URL template: Placeholders may fill the path and query only, never the "
        "scheme, host or port."
    )
    assert server.seen == []


# -- a field of the answer as system messages ---------------------------------------------------


async def test_the_system_field_is_read_after_the_turns_tool_messages(server):
    server.routes["/items/1"] = Reply(
        200, {"id": "1", "notice": "The quota is nearly used."}, "application/json"
    )
    provider = ScriptedProvider(
        script=[
            {"tools": [{"id": "c1", "name": "items", "arguments": {"item_id": "1"}}]},
            "Noted.",
        ]
    )
    agent = create_agent(provider, tools=http_tool(server, system_field="/notice"))
    agent.context.messages.add({"role": "user", "content": "look up item 1"})
    await agent.generate()
    sent = provider.calls[1].messages
    assert [m.role for m in sent[-3:]] == ["assistant", "tool", "system"]
    tool, system = sent[-2:]
    # The model reads the field once, as a system message, and the rest as the result.
    assert json.loads(tool.content) == {"status": 200, "json": {"id": "1"}}
    assert system.content == "The quota is nearly used."


@pytest.mark.parametrize(
    ("body", "pointer", "system", "rest"),
    [
        ({"meta": {"notes": ["a", "b"]}, "n": 1}, "/meta/notes", ("a", "b"), {"meta": {}, "n": 1}),
        ({"a/b": {"~": "x"}}, "/a~1b/~0", ("x",), {"a/b": {}}),
        ({"notes": ["keep", "say"]}, "/notes/1", ("say",), {"notes": ["keep"]}),
        ({"n": 1}, "/notice", None, {"n": 1}),
        ({"notice": None, "n": 1}, "/notice", None, {"n": 1}),
        ({"notes": ["a"]}, "/notes/01", None, {"notes": ["a"]}),
        ({"notice": []}, "/notice", None, {}),
    ],
    ids=["list", "escaped", "index", "missing", "null", "not-an-index", "empty-list"],
)
async def test_the_system_field_is_taken_out_of_the_result(server, body, pointer, system, rest):
    server.routes["/items/1"] = Reply(200, body, "application/json")
    result = await call(http_tool(server, system_field=pointer), "items", item_id="1")
    assert (result.error, result.system, result.value) == (
        None,
        system,
        {"status": 200, "json": rest},
    )


async def test_a_text_answer_has_no_system_field(server):
    server.routes["/items/1"] = Reply(200, "plain words")
    result = await call(http_tool(server, system_field="/notice"), "items", item_id="1")
    assert (result.system, result.value) == (None, {"status": 200, "text": "plain words"})


@pytest.mark.parametrize(
    ("value", "kind"),
    [(3, "a number"), ({"text": "x"}, "an object"), (["x", 1], "a list holding other values")],
)
async def test_a_system_field_that_is_not_text_is_the_calls_error(server, value, kind):
    server.routes["/items/1"] = Reply(200, {"notice": value}, "application/json")
    result = await call(http_tool(server, system_field="/notice"), "items", item_id="1")
    assert result.value is None
    assert result.error == (
        f"HTTP 200, but the response's '/notice' is {kind}, not a string or a list of strings"
    )


async def test_a_malformed_system_field_saved_around_validation_sends_nothing(server):
    manager = unvalidated_tool(f"{server.url}/items/{{item_id}}", system_field="notice")
    result = await call(manager, "items", item_id="1")
    assert result.error == (
        "refused the system field 'notice': Enter a JSON Pointer starting with /, such as "
        "/notice or /meta/notes."
    )
    assert server.seen == []
