"""Chat text as the page renders it: Markdown with raw HTML off, whatever a chat holds. Links open only
to http(s) and mail addresses (else inert), nothing becomes an attribute that runs, a tool run folds
under the names of its tools, and a placeholder or the query's words are marked in prose and code."""

from __future__ import annotations

import re

import pytest

from server.ui.parts import query_terms
from server.ui.rendering import render, render_tool_message

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](javascript&#58;alert(1))",
    "[click](&#x6A;avascript:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox(1))",
    "<javascript:alert(1)>",
    '[click](https://example.com "x\\" onmouseover=\\"alert(1)")',
    '[click](https://example.com "a" onmouseover="alert(1)")',
    "![x](https://example.com/x.png)",
    "![x](javascript:alert(1))",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "```html\n</code></pre><script>alert(1)</script>\n```",
    "`</code><script>alert(1)</script>`",
    "<a href='javascript:alert(1)'>x</a>",
    "<details open ontoggle=alert(1)>",
    "[x](//evil.example/)",
    "[x](/delete?uri=bread)",
    "\u202e[x](https://example.com)",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_nothing_a_chat_writes_becomes_markup_that_runs_or_leads_astray(text: str) -> None:
    html = render(text, query_terms("alert"))
    assert "<script" not in html
    assert "<img" not in html
    assert "<details open" not in html
    assert not re.search(r"<[a-z]+[^>]*\son[a-z]+=", html)  # no event handler attribute on any element
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("https://", "http://", "mailto:")), href
    assert "\u202e" not in html  # bidi overrides go as everywhere chat text is shown


def test_links_that_may_be_followed_open_elsewhere_without_referrer() -> None:
    html = render("see <https://example.com/a?b=1&c=2> and [mail](mailto:me@example.com)")
    assert (
        '<a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">'
        "https://example.com/a?b=1&amp;c=2</a>"
    ) in html
    assert '<a href="mailto:me@example.com" rel="noopener noreferrer nofollow" target="_blank">mail</a>' in html


def test_markdown_reads_as_its_writer_meant() -> None:
    html = render("# Plan\n\n1. **first**\n2. _second_\n\n> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~")
    for piece in ("<h1>Plan</h1>", "<ol>", "<strong>first</strong>", "<em>second</em>", "<blockquote>", "<table>"):
        assert piece in html
    assert "<s>old</s>" in html
    assert render("line one\nline two") == "<p>line one<br />\nline two</p>\n"  # chat text keeps its lines


def test_a_run_of_tool_calls_folds_under_the_names_of_its_tools() -> None:
    text = (
        "Checking.\n\n[tool Bash: git status]\n\n[tool Bash: git diff]\n\n[tool Edit: src/app.py]\n\n"
        "[tool result: ok]\n[tool error: exit 1]\n\nDone."
    )
    html = render(text)
    assert html.count('<details class="tools">') == 1
    assert "<summary>3 tool calls: Bash ×2, Edit · 1 result · 1 error</summary>" in html
    assert html.startswith("<p>Checking.</p>\n<details")
    assert html.endswith("</details><p>Done.</p>\n")
    assert "<li><code>[tool Edit: src/app.py]</code></li>" in html


def test_a_tool_line_among_prose_stays_in_its_paragraph() -> None:
    html = render("I ran it:\n[tool Bash: make]")
    assert "<details" not in html
    assert "[tool Bash: make]" in html


def test_a_tool_message_folds_under_its_first_line() -> None:
    html = render_tool_message("[tool result: " + "x" * 200 + "]")
    assert html.startswith('<details class="tools"><summary>[tool result: ' + "x" * 76 + " …</summary>")


def test_placeholders_and_the_querys_words_are_marked_in_prose_and_code() -> None:
    html = render(
        "key [redacted: aws-access-key #2] for nginx\n\n```\nexport K=[redacted: aws-access-key #2] # nginx\n```"
    )
    placeholder = (
        '<span class="redacted" title="a secret (aws-access-key), masked before it was stored">'
        "[redacted: aws-access-key #2]</span>"
    )
    assert html.count(placeholder) == 2
    marked = render("nginx in `nginx.conf`", query_terms("nginx"))
    assert marked == "<p><mark>nginx</mark> in <code><mark>nginx</mark>.conf</code></p>\n"
