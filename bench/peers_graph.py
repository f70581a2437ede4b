"""The LangGraph side of ``bench/peers_server.py``: a one-node graph streaming from the fake model.

Served by ``langgraph dev`` from its own venv (``langgraph.json`` names ``graph``). The node
sends the conversation to ``bench/openai_upstream.py`` (``BENCH_UPSTREAM``, its ``/v1`` URL)
through ``langchain-openai``'s ``ChatOpenAI(streaming=True)`` and returns the answer; the
server streams its chunks to the client (``stream_mode`` ``messages-tuple``). One model object
for the process: its HTTP client and connection pool are shared by every run, as a provider's
are in orkestrel.
"""

from __future__ import annotations

import os

from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import SecretStr

__all__ = ["graph"]

model = ChatOpenAI(
    model="bench",
    base_url=os.environ["BENCH_UPSTREAM"],
    api_key=SecretStr("bench"),  # the fake upstream checks none
    streaming=True,
    max_retries=0,  # a failure shows as a lost run, not as a slow one
)


async def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """The one node: the model's streamed answer to the conversation so far."""
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile(name="peers")
