"""``render_all``: large batches render in a child process, with the same output as inline."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from conversations import render_pool
from conversations.rendering import render_markdown

LONG = "## Title\n\nSome **bold** text, `code` and a [link](https://example.com).\n\n" * 40


@pytest.fixture(autouse=True)
def fresh_pool():
    render_pool.shutdown()
    yield
    render_pool.shutdown()


def _renderers() -> list[multiprocessing.Process]:
    return [child for child in multiprocessing.active_children() if child.is_alive()]


def test_a_large_batch_renders_in_a_child_process_exactly_as_inline():
    texts = [LONG, "<script>x</script> *hi*", ""]
    before = {child.pid for child in _renderers()}

    html = render_pool.render_all(texts)

    assert html == [render_markdown(text) for text in texts]
    assert {child.pid for child in _renderers()} - before, "no rendering process started"


def test_small_texts_render_inline_without_a_process():
    before = {child.pid for child in _renderers()}

    html = render_pool.render_all(["*a*", "b"])

    assert html == ["<p><em>a</em></p>\n", "<p>b</p>\n"]
    assert {child.pid for child in _renderers()} == before


def test_a_killed_rendering_process_loses_no_output_and_is_replaced():
    render_pool.render_all([LONG])
    (child,) = [c for c in _renderers() if c.pid not in (os.getpid(),)][-1:]
    os.kill(child.pid, signal.SIGKILL)
    child.join(5)

    assert render_pool.render_all([LONG]) == [render_markdown(LONG)]
    assert render_pool.render_all([LONG + "!"]) == [render_markdown(LONG + "!")]
    assert any(c.pid != child.pid for c in _renderers())


def test_an_empty_batch_renders_nothing():
    assert render_pool.render_all([]) == []
