"""AgentContext.build(): the system block, the cascade, the workspace render, the view."""

import pytest

from orkestrel.core import (
    AgentContext,
    ContextFormat,
    ContextSectionFormat,
    create_agent_context,
    create_binary_content,
    create_conversation,
    create_conversation_manager,
    create_file,
    create_instruction_manager,
    create_scope,
    create_tool,
    create_tool_manager,
    create_workspace_manager,
)


async def summarize(messages):
    return "folded " + str(len(messages))


def test_build_with_system_prepends_system_then_conversation():
    context = create_agent_context(system="You are concise.")
    context.messages.add(
        [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "user", "content": "Reply with just the number."},
        ]
    )
    built = context.build()
    assert [(m.role, m.content) for m in built] == [
        ("system", "You are concise."),
        ("user", "What is 2 + 3?"),
        ("user", "Reply with just the number."),
    ]


def test_build_without_system_is_just_the_conversation_and_empty_is_empty():
    context = create_agent_context()
    assert context.system is None
    assert context.build() == []
    message = context.messages.add({"role": "user", "content": "hi"})
    assert context.build() == [message]


@pytest.mark.parametrize("system", ["", "   "])
def test_explicit_empty_or_blank_system_still_prepended(system):
    context = create_agent_context(system=system)
    assert context.build()[0].role == "system"


def test_seed_worked_example_renders_byte_for_byte():
    context = create_agent_context(system="You are a code reviewer.")
    context.instructions.add({"name": "tone", "content": "Be terse.", "priority": 10})
    context.workspaces.add().write("src/main.ts", "export const x = 1")
    context.messages.add({"role": "user", "content": "Review this."})
    built = context.build()
    assert built[0].content == (
        "You are a code reviewer.\n\n## Instructions\n\nBe terse.\n\n## Workspace\n\n"
        "File: src/main.ts\n```typescript\nexport const x = 1\n```"
    )
    assert (built[1].role, built[1].content) == ("user", "Review this.")


def test_xml_cascade_example_renders_byte_for_byte():
    instructions = create_instruction_manager(
        format={
            "open": "<rules>",
            "render": lambda one: f"<rule>{one.content}</rule>",
            "close": "</rules>",
        }
    )
    context = create_agent_context(instructions=instructions)
    context.instructions.add({"name": "tone", "content": "Be terse."})
    context.instructions.add(
        {"name": "raw", "content": "ignored", "format": '<rule priority="high">Escalate.</rule>'}
    )
    assert context.build()[0].content == (
        '<rules>\n\n<rule>Be terse.</rule>\n\n<rule priority="high">Escalate.</rule>\n\n</rules>'
    )


def test_provider_format_is_the_cascade_level_below_manager_options():
    context = create_agent_context()
    context.instructions.add({"name": "a", "content": "A"})
    provider_format = ContextFormat(
        instructions=ContextSectionFormat(
            open="<p>", render=lambda i: f"[{i.content}]", close="</p>"
        )
    )
    assert context.build(provider_format)[0].content == "<p>\n\n[A]\n\n</p>"


def test_tools_are_never_in_the_prompt():
    tools = create_tool_manager()
    tools.add(
        create_tool(name="secret_tool", description="does secret things", execute=lambda a: 1)
    )
    context = create_agent_context(system="s", tools=tools)
    context.messages.add({"role": "user", "content": "x"})
    assert context.tools is tools
    text = "".join(m.content for m in context.build())
    assert "secret_tool" not in text and "secret things" not in text
    assert create_agent_context().tools.count == 0


def test_build_is_fresh_each_call():
    context = create_agent_context(system="s")
    first = context.build()
    context.messages.add({"role": "user", "content": "later"})
    second = context.build()
    assert len(second) == len(first) + 1
    assert first[0].id != second[0].id


def test_reuses_passed_instruction_manager_by_identity():
    manager = create_instruction_manager()
    assert create_agent_context(instructions=manager).instructions is manager
    assert create_agent_context().instructions.count == 0


def test_scope_filters_instructions_and_is_recomputed_when_swapped():
    context = create_agent_context()
    context.instructions.add(
        [{"name": "safety", "content": "Be safe."}, {"name": "verbose", "content": "Be long."}]
    )
    assert context.scope is None
    context.scope = create_scope(name="s", instructions=["safety"])
    assert "Be long." not in context.build()[0].content
    context.scope = create_scope(name="none", instructions=[])
    assert context.build() == []
    context.scope = None
    assert "Be long." in context.build()[0].content


def test_initial_scope_via_options():
    scope = create_scope(name="s")
    assert create_agent_context(scope=scope).scope is scope


def test_active_workspace_images_attach_to_a_copy_of_the_last_user_message():
    context = create_agent_context()
    workspace = context.workspaces.add(
        seed=[
            create_file("a.png", create_binary_content("aGk=", "image/png")),
            create_file("b.png", create_binary_content("aGV5", "image/png")),
        ]
    )
    first = context.messages.add({"role": "user", "content": "one"})
    last = context.messages.add({"role": "user", "content": "look", "images": ["b3du"]})
    context.messages.add({"role": "assistant", "content": "ok"})
    built = context.build()
    assert built[0] is first
    assert built[1].images == ("b3du", "aGk=", "aGV5")
    assert last.images == ("b3du",)
    assert workspace.count == 2


def test_images_skipped_when_no_user_message():
    context = create_agent_context()
    context.workspaces.add(seed=[create_file("a.png", create_binary_content("aGk=", "image/png"))])
    context.messages.add({"role": "assistant", "content": "hi"})
    assert context.build()[0].images is None


def test_scope_files_filters_both_carriers():
    context = create_agent_context()
    workspace = context.workspaces.add(
        seed=[
            create_file("keep.png", create_binary_content("aGk=", "image/png")),
            create_file("drop.png", create_binary_content("aGV5", "image/png")),
        ]
    )
    workspace.write({"keep.md": "kept", "drop.md": "dropped"})
    context.messages.add({"role": "user", "content": "x"})
    context.scope = create_scope(name="s", files=["keep.png", "keep.md"])
    built = context.build()
    assert "kept" in built[0].content and "dropped" not in built[0].content
    assert built[1].images == ("aGk=",)


def test_only_the_active_workspace_renders_and_switch_follows():
    context = create_agent_context()
    first = context.workspaces.add()
    first.write("one.txt", "first file")
    second = context.workspaces.add()
    second.write("two.txt", "second file")
    assert "first file" in context.build()[0].content
    assert "second file" not in context.build()[0].content
    context.workspaces.switch(second.id)
    assert "second file" in context.build()[0].content


def test_workspaces_registry_is_settable_and_empty_renders_nothing():
    context = create_agent_context()
    assert context.workspaces.count == 0 and context.build() == []
    other = create_workspace_manager()
    other.add().write("x.py", "print(1)")
    context.workspaces = other
    assert "print(1)" in context.build()[0].content
    with pytest.raises(TypeError):
        context.workspaces = "nope"


async def test_injected_conversation_is_the_message_source_and_view_is_folded():
    conversation = create_conversation(summarize=summarize, keep=1)
    context = AgentContext(conversation=conversation)
    assert context.messages is conversation
    conversation.add(
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ]
    )
    await conversation.compact()
    built = context.build()
    assert built[0].content.startswith("[Summary of earlier messages] folded")
    assert built[-1].content == "c"


def test_conversations_registry_switch_redirects_messages_by_identity():
    threads = create_conversation_manager()
    a = threads.add(id="a")
    b = threads.add(id="b")
    context = create_agent_context(conversations=threads)
    assert context.messages is a
    threads.switch("b")
    assert context.messages is b
    b.add({"role": "user", "content": "in b"})
    assert [m.content for m in context.build()] == ["in b"]


def test_conversations_setter_ensures_an_active_conversation():
    context = create_agent_context()
    default = context.messages
    empty = create_conversation_manager()
    context.conversations = empty
    assert context.messages is not default and empty.count == 1
    with pytest.raises(TypeError):
        context.conversations = None
