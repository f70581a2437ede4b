"""The turn context: system prompt, instructions, workspaces, tools, scope and conversations.

``build()`` renders the next provider input fresh on every call and never mutates a stored
message: one leading system message (prompt, instructions, the active workspace's text
files), then the active conversation's ``view()``, with the active workspace's images
attached to a copy of the last user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypedDict, Unpack

from .constants import WORKSPACE_SECTION_HEADER
from .conversation import Conversation
from .conversation_manager import ConversationManager
from .files import File, is_image, is_text
from .instructions import InstructionManager, render_instruction_section
from .messages import Message, mint_id
from .provider import ContextFormat
from .scopes import Scope, filter_allow_list
from .text import fenced_file
from .tools import ToolManager
from .workspace_manager import WorkspaceManager

__all__ = ["AgentContext", "create_agent_context"]


class AgentContextOptions(TypedDict, total=False):
    """The keyword options of ``AgentContext`` / ``create_agent_context``."""

    system: str | None
    tools: ToolManager | None
    instructions: InstructionManager | None
    workspaces: WorkspaceManager | None
    scope: Scope | None
    conversations: ConversationManager | None
    conversation: Conversation | None


class AgentContext:
    """What one agent turn is built from; event-free (its managers own their emitters)."""

    __slots__ = ("_conversations", "_workspaces", "instructions", "scope", "system", "tools")

    def __init__(
        self,
        *,
        system: str | None = None,
        tools: ToolManager | None = None,
        instructions: InstructionManager | None = None,
        workspaces: WorkspaceManager | None = None,
        scope: Scope | None = None,
        conversations: ConversationManager | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        if system is not None and not isinstance(system, str):
            raise TypeError("system must be a string")
        if scope is not None and not isinstance(scope, Scope):
            raise TypeError("scope must be a Scope")
        self.system = system
        self.tools = tools if tools is not None else ToolManager()
        self.instructions = instructions if instructions is not None else InstructionManager()
        self.scope = scope
        self._workspaces = workspaces if workspaces is not None else WorkspaceManager()
        manager = conversations if conversations is not None else ConversationManager()
        if conversation is not None:
            # A single injected conversation becomes the registry's active one.
            if manager.conversation(conversation.id) is not conversation:
                manager.add(conversation)
            manager.switch(conversation.id)
        self._conversations = manager
        self._ensure_active()

    @property
    def workspaces(self) -> WorkspaceManager:
        return self._workspaces

    @workspaces.setter
    def workspaces(self, value: WorkspaceManager) -> None:
        if not isinstance(value, WorkspaceManager):
            raise TypeError("workspaces must be a WorkspaceManager")
        self._workspaces = value

    @property
    def conversations(self) -> ConversationManager:
        return self._conversations

    @conversations.setter
    def conversations(self, value: ConversationManager) -> None:
        if not isinstance(value, ConversationManager):
            raise TypeError("conversations must be a ConversationManager")
        self._conversations = value
        self._ensure_active()

    @property
    def messages(self) -> Conversation:
        """The active conversation itself (its live tail is the message store)."""
        active = self._conversations.active
        if active is None:
            active = self._ensure_active()
        return active

    def _ensure_active(self) -> Conversation:
        manager = self._conversations
        active = manager.active
        if active is None:
            existing = manager.conversations()
            if existing:
                active = existing[0]
                manager.switch(active.id)
            else:
                active = manager.add()
        return active

    def build(self, format: ContextFormat | None = None) -> list[Message]:
        """The next turn's provider input, computed fresh."""
        scope = self.scope
        parts: list[str] = []
        if self.system is not None:
            parts.append(self.system)
        if self.instructions.count:
            section = render_instruction_section(
                self.instructions, format, scope.instructions if scope is not None else None
            )
            if section:
                parts.append(section)
        images: list[str] = []
        workspace = self._workspaces.active
        if workspace is not None and workspace.count:
            files: Sequence[File] = workspace.files()
            if scope is not None and scope.files is not None:
                files = filter_allow_list(files, scope.files, lambda file: file.path)
            blocks = [
                fenced_file(file.path, file.content.language, file.content.text)
                for file in files
                if is_text(file.content)
            ]
            if blocks:
                parts.append("\n\n".join([WORKSPACE_SECTION_HEADER, *blocks]))
            images = [file.content.data for file in files if is_image(file.content)]
        view = self.messages.view()
        output: list[Message] = []
        if parts:
            output.append(Message(mint_id(), "system", "\n\n".join(parts)))
        output.extend(view)
        if images:
            _attach(output, images)
        return output


def _attach(messages: list[Message], images: Sequence[str]) -> None:
    """Replace the last user message with a copy carrying its own images, then ``images``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user":
            merged = (*(message.images or ()), *images)
            messages[index] = replace(message, images=merged)
            return


def create_agent_context(**options: Unpack[AgentContextOptions]) -> AgentContext:
    """Create an ``AgentContext``; see its keyword arguments."""
    return AgentContext(**options)
