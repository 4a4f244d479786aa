"""Chat text as the page shows it: Markdown read by markdown-it-py with raw HTML off, so a message's
code blocks, lists and emphasis read as their writer meant and its markup still shows as characters.

What markdown-it leaves to the caller is decided here:
- Links open only when a browser can follow them safely: absolute http(s) or mailto, in a new tab,
  with no referrer, opener or endorsement (`nofollow`); anything else (`javascript:`, a relative path
  that would land on this page's own routes) is inert text with its target on hover. Images are not
  read (the page loads nothing from elsewhere: its CSP would refuse them anyway).
- Text is cleaned as chat text leaving the store is (`storage.safe_text.clean`); the query's words are
  marked and redaction placeholders (`[redacted: github-pat #1]`) shown as what they are, in prose and
  in code alike.
- A run of tool-call lines (`[tool Bash: git status]`, `[tool result: …]`) is folded under one line
  that names the tools, and a tool's message folded whole: a coding agent's chat reads as its
  conversation, with every call one click away.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt

from server.ui.markup import Html, esc, h, join
from storage.redaction import PLACEHOLDER
from storage.safe_text import clean

if TYPE_CHECKING:
    from markdown_it.renderer import RendererHTML
    from markdown_it.rules_core import StateCore
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

# A line a source wrote for a tool call or its result (`importers._common.summarise_tool_call`).
TOOL_LINE = re.compile(r"\[tool[ :]")
TOOL_NAME = re.compile(r"\[tool (?:(result|error):|([^:\]]+))")
SAFE_SCHEMES = ("http", "https", "mailto")
REDACTED = '<span class="redacted" title="a secret ({}), masked before it was stored">{}</span>'
SUMMARY_CHARS = 90  # of a folded tool message's first line


def marked(text: str, terms: re.Pattern[str] | None) -> Html:
    """`text` escaped, the query's words marked and redaction placeholders shown as such."""
    parts, at = [], 0
    for found in PLACEHOLDER.finditer(text):
        parts += [_words(text[at : found.start()], terms), h(REDACTED, found.group(1), found.group(0))]
        at = found.end()
    parts.append(_words(text[at:], terms))
    return join(parts)


def _words(text: str, terms: re.Pattern[str] | None) -> Html:
    if terms is None:
        return esc(text)
    pieces = terms.split(text)  # the pattern captures: odd pieces are the matches
    return join(h("<mark>{}</mark>", piece) if i % 2 else esc(piece) for i, piece in enumerate(pieces))


def _terms(env: EnvType) -> re.Pattern[str] | None:
    terms = env.get("terms")
    return terms if isinstance(terms, re.Pattern) else None


def _text(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return marked(tokens[idx].content, _terms(env))


def _code_inline(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return h("<code>{}</code>", marked(tokens[idx].content, _terms(env)))


def _code_block(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    language = token.info.split()[0] if token.info.strip() else ""
    code = marked(token.content, _terms(env))
    if language:
        return h('<pre><code class="language-{}">{}</code></pre>\n', language, code)
    return h("<pre><code>{}</code></pre>\n", code)


def _safe_href(href: str) -> bool:
    try:
        parts = urlsplit(href)
    except ValueError:
        return False
    return parts.scheme.lower() in SAFE_SCHEMES and (parts.scheme.lower() == "mailto" or bool(parts.netloc))


def _links(state: StateCore) -> None:
    """Links a browser may follow open outside the page; any other becomes inert text (a `span`)."""
    for block in state.tokens:
        opened: list[Token] = []
        for token in block.children or ():
            if token.type == "link_open":
                href = str(token.attrGet("href") or "")
                if _safe_href(href):
                    token.attrs = {"href": href, "rel": "noopener noreferrer nofollow", "target": "_blank"}
                else:
                    token.tag, token.attrs = "span", {"class": "inert-link", "title": href}
                opened.append(token)
            elif token.type == "link_close" and opened:
                token.tag = opened.pop().tag


def _reader() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"]).disable(["image"])
    md.core.ruler.push("pastchats_links", _links)
    for name, rule in (
        ("text", _text),
        ("code_inline", _code_inline),
        ("fence", _code_block),
        ("code_block", _code_block),
    ):
        md.add_render_rule(name, rule)
    return md


MARKDOWN = _reader()


def _tool_lines(tokens: Sequence[Token], at: int) -> list[str] | None:
    """The lines of the paragraph opening at `at` when every one is a tool call or result."""
    if tokens[at].type != "paragraph_open" or tokens[at].level != 0 or at + 1 >= len(tokens):
        return None
    lines = [line.strip() for line in tokens[at + 1].content.splitlines() if line.strip()]
    return lines if lines and all(TOOL_LINE.match(line) for line in lines) else None


def _tools_summary(lines: list[str]) -> str:
    """ "3 tool calls: Bash ×2, Edit · 1 result" for the folded run."""
    calls: Counter[str] = Counter()
    results = errors = 0
    for line in lines:
        found = TOOL_NAME.match(line)
        if found and found.group(1) == "result":
            results += 1
        elif found and found.group(1) == "error":
            errors += 1
        else:
            calls[found.group(2).strip() if found else "tool"] += 1
    said = []
    if calls:
        names = ", ".join(name + (f" ×{n}" if n > 1 else "") for name, n in calls.most_common())
        total = sum(calls.values())
        said.append(f"{total} tool call{'' if total == 1 else 's'}: {names}")
    if results:
        said.append(f"{results} result{'' if results == 1 else 's'}")
    if errors:
        said.append(f"{errors} error{'' if errors == 1 else 's'}")
    return " · ".join(said)


def _folded(lines: list[str], terms: re.Pattern[str] | None) -> Html:
    items = join(h("<li><code>{}</code></li>", marked(line, terms)) for line in lines)
    return h(
        '<details class="tools"><summary>{}</summary><ul class="calls">{}</ul></details>', _tools_summary(lines), items
    )


def render(text: str, terms: re.Pattern[str] | None = None) -> Html:
    """A message's text as HTML: Markdown, with each run of tool-call paragraphs folded."""
    env: dict[str, Any] = {"terms": terms}
    tokens = MARKDOWN.parse(clean(text), env)
    out: list[Html] = []
    start = at = 0
    while at < len(tokens):
        lines = _tool_lines(tokens, at)
        if lines is None:
            at += 1
            continue
        run, end = list(lines), at + 3
        while end < len(tokens) and (more := _tool_lines(tokens, end)) is not None:
            run += more
            end += 3
        out += [Html(MARKDOWN.renderer.render(tokens[start:at], MARKDOWN.options, env)), _folded(run, terms)]
        start = at = end
    out.append(Html(MARKDOWN.renderer.render(tokens[start:], MARKDOWN.options, env)))
    return join(out)


def render_tool_message(text: str, terms: re.Pattern[str] | None = None) -> Html:
    """A tool's message (its output, as the source kept it): folded under its first line."""
    first = next((line.strip() for line in clean(text).splitlines() if line.strip()), "(empty)")
    shown = first if len(first) <= SUMMARY_CHARS else first[:SUMMARY_CHARS] + " …"
    return h('<details class="tools"><summary>{}</summary>{}</details>', shown, render(text, terms))
