"""The ``skills`` built-in: the model lists the skills operators offer and activates some.

Activating is what ``/skill name`` does (``agents.runtime.skills``): durable for the
conversation, all or nothing, idempotent. A run's prompt is built once, when it starts, so the
run that activates a skill reads the skill's instruction in the tool's result (as the model
reads a loaded skill in other agent products); every later run has it among its instructions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orkestrel.core import Tool, create_tool
from orkestrel.db import in_thread

from ..registry import ToolContext
from ..skills import activate_skills, list_skills

__all__ = ["DESCRIPTION", "NAME", "PARAMETERS", "SAFE", "create_skills_tool"]

NAME = "skills"
# It changes nothing of the user's data or of the world, only which of the operators'
# instructions this conversation carries: a read-only conversation may load skills too.
SAFE = True
MAX_NAMES = 20

DESCRIPTION = (
    "The skills operators offer: instructions for particular kinds of task. Call it without "
    "`activate` to list each skill's name, when it helps and whether it is active; call it "
    "with `activate` naming the skills the task needs: their instructions come back in the "
    "result, follow them, and they stay in this conversation's instructions from the next "
    "answer on. An unknown name activates nothing."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "activate": {
            "type": ["array", "null"],
            "items": {"type": "string", "minLength": 1, "maxLength": 100},
            "maxItems": MAX_NAMES,
            "description": "Names of skills to activate; leave out to list the skills.",
        },
    },
}


def create_skills_tool(context: ToolContext) -> Tool:
    """The ``skills`` tool bound to this run's user, conversation and live instructions."""

    async def execute(arguments: Mapping[str, Any]) -> Any:
        names = arguments.get("activate") or []
        if not names:
            offered = await in_thread(list_skills)(context.user_id, context.conversation_id)
            return {"skills": offered}
        activation = await in_thread(activate_skills)(
            context.user_id, context.conversation_id, names
        )
        # Also in the live registry: a context rebuilt in this run (after compaction) has them.
        instructions = context.agent_context.instructions
        for entry in activation.entries:
            if instructions.instruction(entry.name) is None:
                instructions.add(entry.instruction)
        added = [entry for entry in activation.entries if entry.name in activation.added]
        return {
            "activated": [entry.name for entry in added],
            "already_active": [
                entry.name for entry in activation.entries if entry.name not in activation.added
            ],
            "active": list(activation.active),
            "instructions": {
                entry.name: entry.instruction.get("format") or entry.instruction["content"]
                for entry in added
            },
        }

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
