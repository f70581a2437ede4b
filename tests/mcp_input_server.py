"""A real MCP server whose tools ask the user for input: the official SDK's ``MCPServer`` over
Streamable HTTP, in a process of its own (``McpProcess.start(..., script=SCRIPT)``).

- ``book_table`` asks for a booking through a resolver (``Resolve(Elicit)``): the SDK sends an
  ``elicitation/create`` request mid-call on a 2025-11-25 connection, and an input-required
  result on 2026-07-28; it answers with the values it got, or says it was declined/cancelled.
- ``confirm_order`` returns its input-required result by hand (2026-07-28 only).
- ``link_account`` asks the user to open a URL (URL mode; 2025-11-25 only).

With ``MCP_TEST_LEGACY=1`` the server refuses ``server/discover``, so clients fall back to the
2025-11-25 handshake.
"""

# No ``from __future__ import annotations``: the SDK reads the tools' annotations at run time.
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

SCRIPT = Path(__file__)
ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "quantity": {"type": "integer", "title": "Quantity", "minimum": 1, "maximum": 5},
        "gift": {"type": "boolean", "title": "Gift wrap", "default": False},
    },
    "required": ["quantity"],
}


def build_app() -> Any:
    """The server's ASGI app (imported only in the server's own process)."""
    import mcp_types as types
    from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.resolve import Elicit, Resolve
    from mcp.shared.exceptions import MCPError
    from pydantic import BaseModel, Field

    server = MCPServer("asking")

    class Booking(BaseModel):
        party: int = Field(title="Party size", ge=1, le=12, description="How many people.")
        day: str = Field(title="Day", json_schema_extra={"format": "date"})
        seating: Literal["indoor", "outdoor"] = Field(title="Seating")
        notes: str | None = Field(default=None, title="Notes")

    def ask_booking(restaurant: str) -> Elicit[Booking]:
        return Elicit(f"Book a table at {restaurant}?", Booking)

    @server.tool(description="Book a table (asks the user for the details).")
    def book_table(
        restaurant: str,
        booking: Annotated[ElicitationResult[Booking], Resolve(ask_booking)],
    ) -> str:
        if isinstance(booking, AcceptedElicitation):
            got = booking.data
            notes = f" ({got.notes})" if got.notes else ""
            return f"booked {got.party} at {restaurant} on {got.day}, {got.seating}{notes}"
        return f"booking {booking.action}d" if booking.action == "decline" else "booking cancelled"

    @server.tool(description="Order an item (asks how many, by an input-required result).")
    def confirm_order(item: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        answers = ctx.input_responses or {}
        answer = answers.get("order")
        if answer is None:
            return types.InputRequiredResult(
                input_requests={
                    "order": types.ElicitRequest(
                        params=types.ElicitRequestFormParams(
                            message=f"How many {item}?", requested_schema=ORDER_SCHEMA
                        )
                    )
                },
                request_state="order-1",
            )
        action, content = getattr(answer, "action", None), getattr(answer, "content", None)
        if action != "accept" or not isinstance(content, dict):
            text = f"order {action}"
        else:
            wrap = " gift-wrapped" if content.get("gift") else ""
            text = f"ordered {content['quantity']} {item}{wrap}"
        return types.CallToolResult(content=[types.TextContent(text=text)])

    @server.tool(description="Link the user's account (asks them to open a page).")
    async def link_account(ctx: Context) -> str:
        outcome = await ctx.elicit_url(
            "Sign in to link your account.", "https://accounts.example.com/link", "link-1"
        )
        return f"link {outcome.action}"

    if os.environ.get("MCP_TEST_LEGACY") == "1":

        async def no_discover(ctx: Any, params: Any) -> Any:
            raise MCPError(code=types.METHOD_NOT_FOUND, message="no server/discover here")

        server._lowlevel_server.add_request_handler(
            "server/discover", types.RequestParams, no_discover
        )

    return server.streamable_http_app(streamable_http_path="/mcp")


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
