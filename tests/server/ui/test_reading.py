"""What the page says and shows, over plain HTTP on a real store: a search says what it found (nothing,
strong chats, weak ones apart), chat text reads as Markdown with nothing of it run, tool calls folded,
secrets' placeholders shown as such, projects by their short name, the shortcuts on every page, and a
chat's files touched and resume command."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from tests.server.ui.conftest import LONG_PROJECT

AGENT_CHAT = "/chat?uri=claude-code%3A3c1e5f70-0a1b-4c2d-8e3f-4a5b6c7d8e01"


def test_a_search_that_matches_nothing_says_so_and_marks_nothing(client: TestClient) -> None:
    page = client.get("/?q=zzqxnomatch").text
    assert "<strong>No results for <q>zzqxnomatch</q>:</strong> no chat holds these words" in page
    assert 'class="badge"' not in page
    assert "matched" not in page  # no message, no chat, no count
    assert '<section class="chat">' not in page  # only strong chats are shown with their messages
    assert "<mark>" not in page


def test_weak_results_are_folded_apart_from_the_strong_ones(client: TestClient) -> None:
    page = client.get("/?q=nginx+jellyfin+reverse+proxy").text
    strong, folded, weak = page.partition('<details class="weak"><summary>')
    assert folded, "the weak results have their own folded heading"
    assert weak.startswith("7 weak results: only common words or a loose topic in common, probably unrelated")
    assert strong.count('<section class="chat">') == 1
    assert "Nginx setup" in strong
    assert "Nginx setup" not in weak
    assert "matched" not in weak  # a weak chat is never shown as a match
    rows = re.findall(r'<li class="row"><a class="title" href="([^"]+)">([^<]+)</a>', weak)
    assert len(rows) == 7
    assert all("around=" not in href for href, _ in rows)  # opened at the start: nothing in them matched for sure
    assert 'class="why"' in weak


def test_chat_text_reads_as_markdown(client: TestClient) -> None:
    page = client.get("/chat?uri=retry").text
    assert '<pre><code class="language-python">import time\n' in page
    assert "```" not in page
    assert "<strong>exponential backoff</strong>" in page
    assert "<em>cap</em>" in page
    assert "<li>keep the first wait short</li>" in page
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt; gave up" in page  # code stays code
    assert "<p>&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;</p>" in page  # raw HTML is text


def test_links_in_chat_text_are_safe_or_inert(client: TestClient) -> None:
    page = client.get("/chat?uri=retry").text
    assert (
        '<a href="https://docs.python.org/3/library/time.html" rel="noopener noreferrer nofollow" '
        'target="_blank">the docs</a>' in page
    )
    assert 'href="javascript:' not in page
    assert "[not this](javascript:document.title=&#x27;pwned&#x27;)" in page  # shown as written
    assert '<span class="inert-link" title="/forget?source=pastchats">this page&#x27;s own route</span>' in page
    assert 'href="/forget?source=pastchats"' not in page


def test_tool_calls_and_results_are_folded(client: TestClient) -> None:
    page = client.get(AGENT_CHAT).text
    assert "I&#x27;ll read the package manifest and the Vite config first.</p>\n" in page
    assert (
        '<details class="tools"><summary>1 tool call: Read</summary><ul class="calls"><li><code>'
        "[tool Read: /home/ana/src/vite/vite.config.ts]</code></li></ul></details>"
    ) in page
    assert '<details class="tools"><summary>[tool result: Set model to opus (claude-opus-4-1-20250805)]' in page
    assert page.count('class="msg role-tool"') == 4
    assert "<details open" not in page  # folded: a click opens each


def test_redaction_placeholders_are_shown_as_masked_secrets(client: TestClient) -> None:
    page = client.get("/chat?uri=keys").text
    assert (
        '<span class="redacted" title="a secret (github-pat), masked before it was stored">'
        "[redacted: github-pat #1]</span>"
    ) in page
    assert "ghp_R7x2Kq9" not in page


def test_projects_go_by_their_short_name_with_the_path_on_hover_and_whole_on_the_chat(client: TestClient) -> None:
    home = client.get("/").text
    assert f'<span class="project" title="{LONG_PROJECT}">billing-service-reconciliation</span>' in home
    assert '<span class="project" title="/home/ana/src/vite">vite</span>' in home
    assert f">{LONG_PROJECT}<" not in home  # the filter names it short too
    assert f'<option value="{LONG_PROJECT}" title="{LONG_PROJECT}">billing-service-reconciliation</option>' in home
    chat = client.get("/chat?uri=codex%3Aledger").text
    assert f"<dt>Project</dt><dd><code>{LONG_PROJECT}</code></dd>" in chat


def test_every_page_shows_its_keyboard_shortcuts(client: TestClient) -> None:
    for path in ("/", "/?q=nginx", "/timeline", "/chat?uri=bread", "/store", "/health", "/forget"):
        page = client.get(path).text
        assert '<details class="keys" id="keys"><summary title="Keyboard shortcuts (press ?)">' in page
        assert "<dt><kbd>j</kbd> <kbd>k</kbd></dt><dd>next, previous chat or message</dd>" in page


def test_a_confirmation_keeps_cancel_apart_from_the_destructive_button(client: TestClient) -> None:
    confirm = client.get("/delete?uri=bread").text
    assert (
        '<div class="choices"><a class="button" href="/chat?uri=bread">Cancel</a>'
        '<button type="submit" class="danger">Delete for good</button></div>'
    ) in confirm
    forget = client.get("/forget?source=codex").text
    assert '<div class="choices"><a class="button" href="/forget">Cancel</a>' in forget


def test_a_chat_shows_the_files_its_agent_touched_and_how_to_resume_it(client: TestClient) -> None:
    page = client.get(AGENT_CHAT).text
    assert (
        '<section class="files"><h2 class="section">Files and commands</h2><dl class="facts"><div><dt>Read</dt>'
        '<dd><ul class="touched"><li><code title="/home/ana/src/vite/vite.config.ts">vite.config.ts</code></li>'
    ) in page
    assert (
        "<pre><code>cd /home/ana/src/vite &amp;&amp; claude --resume 3c1e5f70-0a1b-4c2d-8e3f-4a5b6c7d8e01</code></pre>"
    ) in page
    plain = client.get("/chat?uri=bread").text
    assert '<section class="files">' not in plain  # nothing touched: no section
    assert '<p class="resume none">Resume: pastchats has no command that continues a past session' in plain


def test_a_search_can_be_kept_to_the_chats_that_touched_a_file(client: TestClient) -> None:
    alone = client.get("/?file=vite.config.ts").text
    assert "matched <q>vite.config.ts</q></h2>" in alone
    assert re.findall(r'<section class="chat"><h3><a href="[^"]+">([^<]+)</a>', alone) == [
        "Vite build sourcemaps disabled"
    ]
    assert 'name="file" value="vite.config.ts"' in alone
    assert '<p class="facts touched">Files: read vite.config.ts</p>' in alone
    assert "Nginx setup" not in client.get("/?q=nginx+proxy&file=vite.config.ts").text
    assert "Nginx setup" in client.get("/?q=nginx+proxy").text
