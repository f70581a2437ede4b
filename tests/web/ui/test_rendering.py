"""``render_markdown``: CommonMark with tables, sanitized to a strict allow-list."""

from __future__ import annotations

from conversations.rendering import render_markdown


def test_bold_italic_and_code_render():
    html = render_markdown("**bold** _it_ `x < y`")
    assert "<strong>bold</strong>" in html
    assert "<em>it</em>" in html
    assert "<code>x &lt; y</code>" in html


def test_raw_html_is_escaped_not_rendered():
    html = render_markdown('<script>alert(1)</script><b onclick="x()">b</b>')
    assert "<script" not in html and "<b " not in html
    assert "&lt;script&gt;" in html


def test_links_get_rel_and_unsafe_schemes_are_dropped():
    html = render_markdown("[ok](https://example.com) [bad](javascript:alert(1))")
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">ok</a>' in html
    assert "javascript:" not in html.split("[bad]")[0]
    assert 'href="javascript' not in html


def test_images_become_links_and_never_load():
    html = render_markdown("![a cat](https://example.com/cat.png)")
    assert "<img" not in html
    assert 'href="https://example.com/cat.png"' in html and ">a cat</a>" in html


def test_tables_and_fenced_code_keep_only_safe_attributes():
    html = render_markdown("| a | b |\n|:-|-:|\n| 1 | 2 |\n\n```python\nprint(1)\n```")
    # Alignment is a class: the CSP refuses style attributes.
    assert "<table>" in html and '<th class="align-left">a</th>' in html
    assert '<td class="align-right">2</td>' in html and "style=" not in html
    assert '<code class="language-python">' in html


def test_empty_text_renders_empty():
    assert render_markdown("") == ""
