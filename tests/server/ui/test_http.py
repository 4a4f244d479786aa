"""`pastchats ui` over plain HTTP: who may open it, what every answer forbids, hostile chats shown as
text, and each page's behaviour on a real store (LanceDB, Tantivy and the catalog on disk)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from importers.sources.sync_state import SyncState
from server.ui.guard import CSP
from storage.library import Library
from tests.server.ui.conftest import HOSTILE_TEXT, PORT, TOKEN

PAGES = ["/", "/?q=nginx", "/timeline", "/timeline?by=day", "/chat?uri=bread", "/store", "/health", "/forget"]


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the confirmation carries the form's csrf field"
    return found.group(1)


@pytest.mark.parametrize("path", [*PAGES, "/static/ui.css", "/delete?uri=bread"])
def test_without_the_token_every_page_is_refused(stranger: TestClient, path: str) -> None:
    answer = stranger.get(path)
    assert answer.status_code == 403
    assert "pastchats ui" in answer.text
    assert "Nginx" not in answer.text


def test_a_wrong_token_or_cookie_is_refused(stranger: TestClient) -> None:
    assert stranger.get("/?token=nope").status_code == 403
    assert stranger.get("/", headers={"Cookie": f"pastchats-ui-{PORT}=nope"}).status_code == 403
    assert stranger.get("/", headers={"Cookie": f"pastchats-ui-{PORT + 1}={TOKEN}"}).status_code == 403


def test_the_token_becomes_a_cookie_and_leaves_the_address(stranger: TestClient) -> None:
    first = stranger.get(f"/timeline?by=day&token={TOKEN}", follow_redirects=False)
    assert first.status_code == 303
    assert first.headers["location"] == "/timeline?by=day"
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"pastchats-ui-{PORT}={TOKEN};")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert stranger.get("/chat?uri=bread").status_code == 200  # links work with the cookie alone


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": f"localhost:{PORT}"}, 200),
        ({"Origin": f"http://127.0.0.1:{PORT}"}, 200),
        ({"Host": "evil.example.com"}, 421),
        ({"Host": f"127.0.0.1:{PORT}@evil.com"}, 421),
        ({"Host": f"127.0.0.1:{PORT + 1}"}, 421),
        ({"Origin": "http://evil.com"}, 403),
        ({"Origin": f"http://127.0.0.1:{PORT}.evil.com"}, 403),
    ],
)
def test_host_and_origin_must_name_this_page_exactly(client: TestClient, headers: dict[str, str], status: int) -> None:
    assert client.get("/", headers=headers).status_code == status


@pytest.mark.parametrize("path", PAGES)
def test_every_page_forbids_outside_content_framing_and_referrers(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == CSP
    assert "default-src 'none'" in CSP
    assert "'unsafe-inline'" not in CSP
    assert answer.headers["referrer-policy"] == "same-origin"
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["cache-control"] == "no-store"
    # Everything the page loads is its own: no script, style or image from elsewhere, no inline script.
    assert re.findall(r'<(?:script|link|img)[^>]*(?:src|href)="(?!/static/)', answer.text) == []
    assert re.findall(r"<script>", answer.text) == []
    assert re.findall(r"\sstyle=", answer.text) == []


def test_the_shipped_stylesheet_and_script_are_served(client: TestClient) -> None:
    css, js = client.get("/static/ui.css"), client.get("/static/ui.js")
    assert css.headers["content-type"].startswith("text/css")
    assert js.headers["content-type"].startswith("text/javascript")
    assert "section.chat" in css.text
    assert "keydown" in js.text
    assert client.get("/static/other.js").status_code == 404


@pytest.mark.parametrize(
    "path", ["/", "/?q=hostile+payload", "/chat?uri=hostile", "/delete?uri=hostile", "/timeline?period=2025-01-13"]
)
def test_a_hostile_chat_is_shown_as_text_never_as_markup(client: TestClient, path: str) -> None:
    page = client.get(path).text
    assert "<script>document.title" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;Hostile" in page
    assert 'href="javascript:' not in page


def test_a_hostile_messages_markup_reads_as_its_characters(client: TestClient) -> None:
    page = client.get("/chat?uri=hostile").text
    assert "&lt;/div&gt;&lt;img src=x onerror=&quot;document.title=&#x27;pwned&#x27;&quot;&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;i&gt;tags&lt;/i&gt;" in page
    assert HOSTILE_TEXT not in page


def test_search_groups_matches_by_chat_marks_them_and_shows_strength(client: TestClient) -> None:
    page = client.get("/?q=nginx+jellyfin+reverse+proxy").text
    strong = page.partition('<details class="weak">')[0]
    chats = re.findall(r'<section class="chat"><h3><a href="([^"]+)">([^<]+)</a>', strong)
    assert chats == [("/chat?uri=claude%3Anginx&amp;around=1#m1", "Nginx setup")]
    assert "1 chat matched <q>nginx jellyfin reverse proxy</q>" in strong
    assert 'class="msg role-user matched"' in strong
    assert "<mark>nginx</mark>" in page
    assert "<mark>Jellyfin</mark>" in page
    assert "open the original" in page
    assert 'href="https://claude.ai/chat/nginx" rel="noopener noreferrer" target="_blank"' in page


def test_search_filters_as_the_tool_does_plus_the_source(client: TestClient) -> None:
    assert "Nginx setup" not in client.get("/?q=nginx+proxy&project=pottery").text
    assert "Nginx setup" in client.get("/?q=nginx+proxy&project=HOMELAB").text  # any case, as the tool
    assert "Nginx setup" not in client.get("/?q=nginx+proxy&source=codex").text
    assert "Nginx setup" in client.get("/?q=nginx+proxy&source=claude").text
    assert "Nginx setup" not in client.get("/?q=nginx+proxy&after=2025-02-01").text
    assert "Nginx setup" in client.get("/?q=nginx+proxy&after=2025-01-01&before=2025-02-01").text
    unknown = client.get("/?q=nginx&project=garden").text
    assert "project &#x27;garden&#x27; is not a known project. Known projects: &#x27;/home/ana/src/vite&#x27;" in (
        unknown
    )
    assert (
        "no chat comes from the source &#x27;gemini&#x27;; known: claude, claude-code, codex, pastchats"
        in client.get("/?q=nginx&source=gemini").text
    )
    assert "No chat matches these filters." in client.get("/?source=codex&after=2025-06-01").text
    assert "is not a date" in client.get("/?q=nginx&after=soon").text


def test_without_a_query_the_first_page_lists_the_latest_chats(client: TestClient) -> None:
    titles = re.findall(r'<li class="row"><a class="title" href="[^"]+">([^<]+)</a>', client.get("/").text)
    assert titles == [
        "Vite build sourcemaps disabled",
        "Nginx setup",
        "Sourdough starter",
        "Deploy token",
        "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;Hostile",
        "Retry with backoff",
        "Ledger rounding drift",
        "Kiln firing log",
    ]


def test_the_timeline_counts_chats_per_period_and_source_and_opens_a_period(client: TestClient) -> None:
    weeks = client.get("/timeline").text
    assert "8 chats in 4 weeks with activity." in weeks
    assert 'aria-label="claude 1, pastchats 1"' in weeks  # the week of Monday 2025-01-20
    assert 'aria-label="codex 1, pastchats 3"' in weeks  # the week before
    days = client.get("/timeline?by=day").text
    assert "8 chats in 8 days with activity." in days
    only_codex = client.get("/timeline?source=codex").text
    assert "2 chats in 2 weeks with activity." in only_codex
    week = client.get("/timeline?period=2025-01-20").text
    titles = re.findall(r'<li class="row"><a class="title" href="[^"]+">([^<]+)</a>', week)
    assert titles == ["Nginx setup", "Sourdough starter"]
    assert "is not a known project" in client.get("/timeline?project=garden").text
    assert "no chat comes from the source" in client.get("/timeline?source=gemini").text
    assert "1 chats" in client.get("/timeline?project=Pottery").text


def test_a_long_chat_is_read_a_page_at_a_time_with_roles_and_times(client: TestClient) -> None:
    first = client.get("/chat?uri=codex%3Akiln").text
    assert "messages 1–50 of 120" in first
    assert first.count('<article class="msg role-') == 50
    assert '<span class="role">user</span>' in first
    assert '<span class="role">assistant</span>' in first
    assert 'href="/chat?uri=codex%3Akiln&amp;offset=50" rel="next"' in first
    assert "<dt>Original</dt><dd><code>file:///home/me/.codex/sessions/kiln.jsonl</code>" in first  # not a link
    last = client.get("/chat?uri=codex%3Akiln&offset=100").text
    assert "messages 101–120 of 120" in last
    assert 'rel="next"' not in last
    around = client.get("/chat?uri=codex%3Akiln&around=90").text
    assert 'class="msg role-assistant matched" id="m90"' in around


def test_an_unknown_chat_answers_not_found(client: TestClient) -> None:
    answer = client.get("/chat?uri=nothing-here")
    assert answer.status_code == 404
    assert "no chat with uri" in answer.text


def test_deleting_a_chat_needs_the_form_secret_and_then_removes_it_for_good(
    client: TestClient, ui_library: Library
) -> None:
    confirm = client.get("/delete?uri=bread").text
    assert "Delete <strong>Sourdough starter</strong>" in confirm
    assert client.post("/delete", data={"uri": "bread"}).status_code == 403
    assert client.post("/delete", data={"uri": "bread", "csrf": "0" * 64}).status_code == 403
    assert client.get("/chat?uri=bread").status_code == 200  # refused forms changed nothing

    done = client.post("/delete", data={"uri": "bread", "csrf": csrf_of(confirm)})
    assert done.status_code == 200
    assert "Deleted the chat" in done.text
    assert client.get("/chat?uri=bread").status_code == 404
    assert "Sourdough starter" not in client.get("/?q=sourdough+starter").text
    assert not ui_library.search("sourdough starter acetone", mode="keyword").chats
    assert "bread" in SyncState.load(ui_library.home).forgotten  # sync will not bring it back


def test_forget_shows_what_would_go_and_deletes_it_once_confirmed(client: TestClient, ui_library: Library) -> None:
    confirm = client.get("/forget?source=pastchats&before=2025-01-20").text
    assert "Delete these <strong>3 chats</strong>" in confirm
    assert "Deploy token" in confirm
    assert "Sourdough starter" not in confirm  # updated at 2025-01-20 10:00, not before
    form = {"source": "pastchats", "before": "2025-01-20", "csrf": csrf_of(confirm)}
    assert client.post("/forget", data={**form, "csrf": "x"}).status_code == 403
    changed = client.post("/forget", data={**form, "count": "2"}).text
    assert "What matches changed since you confirmed" in changed
    assert ui_library.stats().conversations == 8

    done = client.post("/forget", data={**form, "count": "3"}).text
    assert "Deleted 3 chat(s)" in done
    assert ui_library.stats().conversations == 5
    assert {"keys", "hostile", "retry"} <= set(SyncState.load(ui_library.home).forgotten)


def test_forget_names_unknown_criteria_and_asks_for_one(client: TestClient) -> None:
    assert "Show what would go" in client.get("/forget").text
    assert "&#x27;homelab&#x27;, &#x27;pottery&#x27;. Pass one of them" in client.get("/forget?project=garden").text
    assert "no chat comes from the source" in client.get("/forget?source=gemini").text
    assert (
        "Say what to forget"
        in client.post("/forget", data={"csrf": csrf_of(client.get("/forget?source=codex").text)}).text
    )


def test_the_store_page_shows_its_totals_and_where_secrets_were_masked(client: TestClient) -> None:
    page = client.get("/store").text
    assert "<dt>Chats</dt><dd>8</dd>" in page
    assert "<dt>Messages</dt><dd>144</dd>" in page
    assert "<th scope='row'>pastchats</th><td>github-pat</td><td>1</td>" in page
    assert '<a href="/chat?uri=keys">Deploy token</a>: github-pat 1' in page
    assert "ghp_R7x2Kq9" not in client.get("/chat?uri=keys").text  # masked before it was stored


def test_the_health_page_runs_the_doctor_checks(client: TestClient) -> None:
    page = client.get("/health").text
    for name in ("model", "store", "secrets", "permissions", "sources"):
        assert f'<th scope="row">{name}</th>' in page
    assert "8 chats, 144 messages" in page
