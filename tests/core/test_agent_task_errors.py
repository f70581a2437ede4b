"""A failed ``Agent.generate`` collects its run task's error (issue 17, finding 19): asyncio
logs "Task exception was never retrieved" for a task whose error nobody took, once per failed
run of every job, summary and ``/v1`` answer that goes through ``generate``."""

from __future__ import annotations

import gc
import logging

import pytest

from orkestrel.core import ProviderError, create_agent
from orkestrel.providers import ScriptedProvider


async def _failed_generate(error_after: bool) -> str:
    """Run an agent whose model fails; the error's text (the agent and its tasks are dropped
    on return, so the collector can report a task nobody collected)."""
    failure = ProviderError("model server down", provider="scripted", status=503)
    provider = ScriptedProvider(
        script=[{"content": ["half an"], "error": failure, "error_after": error_after}]
    )
    agent = create_agent(provider)
    agent.context.messages.add({"role": "user", "content": "hello"})
    try:
        await agent.generate()
    except ProviderError as caught:
        return caught.message
    return "no error"


@pytest.mark.parametrize("error_after", [False, True], ids=["before-any-text", "mid-answer"])
async def test_a_failed_generate_leaves_no_task_error_unretrieved(error_after, caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")
    assert await _failed_generate(error_after) == "model server down"
    gc.collect()
    assert "exception was never retrieved" not in caplog.text
