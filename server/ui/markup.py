"""HTML built from Python values with every value escaped: chat text is hostile input, and a title or
a message holding `<script>` must show as those characters.

`Html` marks text that is already markup (made here); everything else that goes through `h` is
cleaned as chat text leaving the store is (`storage.safe_text.clean`: no controls, bidi overrides or
lone surrogates) and then escaped for both element content and quoted attributes.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from urllib.parse import urlencode, urlsplit

from storage.safe_text import clean


class Html(str):
    """Text that is markup already: inserted as it is."""

    __slots__ = ()


def esc(value: object) -> Html:
    if isinstance(value, Html):
        return value
    return Html(html.escape(clean(str(value)), quote=True))


def h(template: str, *values: object, **named: object) -> Html:
    """`template` (markup written here, never input) with `{}` / `{name}` filled by escaped values."""
    return Html(template.format(*(esc(v) for v in values), **{k: esc(v) for k, v in named.items()}))


def join(parts: Iterable[Html], separator: str = "") -> Html:
    return Html(separator.join(esc(part) for part in parts))


def link(path: str, **query: object) -> str:
    """A path inside the page with its query string; empty values are left out (`h` escapes the result)."""
    given = {k: str(v) for k, v in query.items() if v not in (None, "")}
    return f"{path}?{urlencode(given)}" if given else path


def outside_link(url: str | None) -> str | None:
    """A chat's link back to its source, only when a browser can follow it safely: http(s) only (a
    `javascript:` or `data:` url in an export must never become a link)."""
    if not url:
        return None
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in ("http", "https") else None


def when(value: datetime | None) -> Html:
    """A time as a `<time>` element: UTC, to the minute, with the exact value for the browser."""
    if value is None:
        return Html("")
    return h('<time datetime="{}">{}</time>', value.isoformat(), f"{value:%Y-%m-%d %H:%M} UTC")


# The keyboard's shortcuts, shown on every page (`?` opens them, `static/ui.js`); a click opens them too.
KEYS = Html(
    '<details class="keys" id="keys"><summary title="Keyboard shortcuts (press ?)">'
    '<kbd>?</kbd> <span class="hint">shortcuts</span></summary>'
    '<div class="panel" role="dialog" aria-label="Keyboard shortcuts"><h2>Keyboard shortcuts</h2><dl>'
    "<dt><kbd>/</kbd></dt><dd>search</dd>"
    "<dt><kbd>j</kbd> <kbd>k</kbd></dt><dd>next, previous chat or message</dd>"
    "<dt><kbd>Enter</kbd></dt><dd>open the chat</dd>"
    "<dt><kbd>?</kbd></dt><dd>show or hide this help</dd>"
    "<dt><kbd>Esc</kbd></dt><dd>close it</dd>"
    "</dl></div></details>"
)
NAV = (("/", "Search"), ("/timeline", "Timeline"), ("/store", "Store"), ("/health", "Health"), ("/forget", "Forget"))


def page(title: str, body: Html, *, current: str) -> Html:
    """A whole page: the shared head (the package's own stylesheet and script only), the navigation, `body`."""
    nav = join(
        h('<a href="{}"{}>{}</a>', path, Html(' aria-current="page"') if path == current else Html(""), name)
        for path, name in NAV
    )
    return h(
        """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · pastchats</title>
<link rel="icon" href="/static/icon.svg">
<link rel="stylesheet" href="/static/ui.css">
<script src="/static/ui.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/">past<b>chats</b></a><nav aria-label="Pages">{nav}</nav>{keys}</header>
<main id="main" tabindex="-1">
<h1>{title}</h1>
{body}
</main>
</body>
</html>
""",
        title=title,
        nav=nav,
        keys=KEYS,
        body=body,
    )


def notice(text: str, kind: str = "info") -> Html:
    return h('<p class="notice {}" role="status">{}</p>', kind, text)
