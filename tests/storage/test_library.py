from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.errors import NotFound, UnknownMessage, UnknownProject
from storage.library import Library
from tests.storage.helpers import BASE, conversation


@pytest.fixture
def library(tmp_path: Path) -> Library:
    return Library.open(tmp_path / "store", embedder=HashEmbedder())


def chat_ids(result: object) -> list[str]:
    return [chat.uri for chat in result.chats]  # type: ignore[attr-defined]


CHATS = [
    conversation(
        "nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."], project="homelab"
    ),
    conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
    conversation("bug", ["TypeError: can only concatenate str", "Convert with str() first."], project="work", day=2),
]


def test_reimporting_the_same_conversations_adds_no_duplicates(library: Library) -> None:
    first = library.import_conversations(CHATS)
    second = library.import_conversations(CHATS)
    assert (first.new, first.unchanged) == (3, 0)
    assert (second.new, second.updated, second.unchanged) == (0, 0, 3)
    stats = library.stats()
    # six messages and one exchange window per two-message chat
    assert (stats.conversations, stats.messages, stats.chunks) == (3, 6, 6 + 3)
    assert library.keywords.doc_count() == 6 + 3


def test_a_grown_conversation_is_updated_and_only_new_text_is_embedded(library: Library) -> None:
    library.import_conversations(CHATS)
    grown = conversation(
        "nginx",
        ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096.", "And TLS?", "Use certbot."],
        project="homelab",
    )
    stats = library.import_conversations([grown])
    # embedded: the two new messages; reused: the two old ones (the windows are derived from all four)
    assert (stats.updated, stats.chunks_embedded, stats.chunks_reused) == (1, 2, 2)
    assert library.get("nginx").messages[-1].text == "Use certbot."
    assert library.stats().messages == 8
    assert "nginx" in chat_ids(library.search("certbot TLS", max_results=1))


def stored_rows(library: Library, cid: str) -> list[str]:
    """The passage ids LanceDB holds for one conversation."""
    where = f"conversation_id = '{cid}'"
    chunks = library.store.chunks.search().where(where).select(["id"]).limit(None).to_arrow()
    return sorted(chunks.column("id").to_pylist())


def test_a_shortened_conversation_keeps_no_row_of_what_it_lost(library: Library) -> None:
    long = ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096.", "And TLS?", "Use certbot."]
    library.import_conversations([*CHATS[1:], conversation("nginx", long, project="homelab")])
    before = stored_rows(library, "nginx")
    shortened = conversation("nginx", long[:2], project="homelab")
    assert library.import_conversations([shortened]).updated == 1
    chunks = stored_rows(library, "nginx")
    assert len(library.get("nginx").messages) == library.stats().messages - 4 == 2
    assert len(chunks) == 2 + 1  # two messages, one window
    assert len(before) == 4 + 2  # four messages, two windows
    assert "certbot" not in " ".join(m.text for m in library.get("nginx").messages)
    assert "nginx" not in chat_ids(library.search("certbot", max_results=3, mode="keyword"))
    assert stored_rows(library, "bread")  # the other chats untouched


def test_a_project_is_found_by_its_folder_name_on_every_platform(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    projects = {
        "posix": "/home/ana/src/vite",
        "windows": "c:\\Users\\ana\\vite\\",
        "named": "vite",
        "other": "/srv/vite-docs",
    }
    library.import_conversations([conversation(cid, ["the dev server"], project=p) for cid, p in projects.items()])

    assert set(library.resolve_project("VITE") or ()) == {projects["posix"], projects["windows"], "vite"}
    assert library.resolve_project("/home/ana/src/vite") == ("/home/ana/src/vite",)  # a path: that path only
    with pytest.raises(UnknownProject):
        library.resolve_project("src/vite")


def test_embedding_waiting_passages_rewrites_them_in_place(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS, embed=False)
    before = {cid: stored_rows(library, cid) for cid in ("nginx", "bread", "bug")}
    assert library.pending_embeddings() == 9
    assert library.embed_pending() == 9
    assert library.pending_embeddings() == 0
    assert {cid: stored_rows(library, cid) for cid in ("nginx", "bread", "bug")} == before
    assert library.stats().chunks == 9
    assert "nginx" in chat_ids(library.search("jellyfin proxy", max_results=1, mode="vector"))


def test_search_finds_by_keyword_and_filters_by_project_and_time(library: Library) -> None:
    library.import_conversations(CHATS)
    assert chat_ids(library.search("TypeError", max_results=1, mode="keyword")) == ["bug"]
    assert chat_ids(library.search("jellyfin proxy", max_results=3, project="homelab")) == ["nginx"]
    assert chat_ids(library.search("jellyfin proxy", max_results=3, project="HOMELAB")) == ["nginx"]
    with pytest.raises(UnknownProject, match="Known projects: 'homelab', 'work'"):
        library.search("jellyfin proxy", max_results=3, project="nope")
    after_first_day = BASE + timedelta(days=1)
    found = chat_ids(library.search("sourdough TypeError nginx", max_results=5, after=after_first_day))
    assert set(found) == {"bread", "bug"}
    found = chat_ids(library.search("sourdough TypeError nginx", max_results=5, before=after_first_day))
    assert found == ["nginx"]


def test_an_unknown_search_mode_is_refused_up_front_by_name(library: Library) -> None:
    # The tools check their arguments first; a library caller gets as plain an answer.
    for mode in ("semantic", "HYBRID", ""):
        with pytest.raises(ValueError, match=r"unknown search mode .*hybrid, keyword, vector"):
            library.search("nginx", mode=mode)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="unknown search mode"):
            library.search_units("nginx", mode=mode)  # type: ignore[arg-type]
    assert library.search("nginx", mode="keyword").mode == "keyword"


def test_a_match_names_the_matched_message_and_shows_its_neighbours(library: Library) -> None:
    texts = [f"filler message number {i} about gardening" for i in range(20)]
    texts[11] = "we settled on caddy with automatic https for the reverse proxy"
    library.import_conversations([conversation("long", texts)])
    result = library.search("caddy automatic https", max_results=1, mode="keyword")
    match = result.chats[0].matches[0]
    assert match.message_ids[0] == "long-m11"
    # an assistant message is shown with the question it answers
    assert (match.first_index, match.last_index) == (10, 11)
    assert [(m.index, m.role) for m in match.messages] == [(10, "user"), (11, "assistant")]
    assert [m.matched for m in match.messages] == [False, True]


@pytest.mark.parametrize(
    "query",
    ['"', "&&", "foo AND", "title:(", "'; DROP TABLE conversations; --", "x" * 10_000, "你好 🎉 emoji", "   ", ""],
)
def test_hostile_queries_return_results_or_nothing_never_raise(library: Library, query: str) -> None:
    library.import_conversations(CHATS)
    with pytest.raises(UnknownProject):
        library.search(query, max_results=5, project="it's")
    library.search(query, max_results=5, project="homelab")
    library.search(query, max_results=5)


def test_deleting_removes_a_chat_from_search_recent_and_read(library: Library) -> None:
    library.import_conversations(CHATS)
    assert library.delete(["bug", "missing"]) == 1
    assert "bug" not in chat_ids(library.search("TypeError", max_results=5))
    assert "bug" not in chat_ids(library.recent(n=10))
    with pytest.raises(NotFound):
        library.read_chat("bug")
    assert library.stats().chunks == library.keywords.doc_count() == 4 + 2  # messages and windows


def test_read_chat_pages_through_a_conversation_and_centres_on_a_message(library: Library) -> None:
    library.import_conversations([conversation("long", [f"message {i}" for i in range(25)])])
    page = library.read_chat("long", offset=0, limit=10)
    assert [m.index for m in page.messages] == list(range(10))
    assert page.next_offset == 10
    last = library.read_chat("long", offset=20, limit=10)
    assert last.next_offset is None
    assert len(last.messages) == 5
    around = library.read_chat("long", around="long-m17", limit=6)
    assert [m.index for m in around.messages] == [14, 15, 16, 17, 18, 19]
    assert [m.id for m in around.messages if m.matched] == ["long-m17"]
    by_number = library.read_chat("long", around=18, limit=6)
    assert by_number.messages == around.messages
    with pytest.raises(UnknownMessage):
        library.read_chat("long", around="nope")
    with pytest.raises(UnknownMessage):
        library.read_chat("long", around=26)


def walk(library: Library, order: str, n: int) -> list[str]:
    seen: list[str] = []
    bound: datetime | None = None
    while True:
        if order == "desc":
            page = library.recent(n=n, sort_order="desc", before=bound)
            bound = page.next_before
        else:
            page = library.recent(n=n, sort_order="asc", after=bound)
            bound = page.next_after
        seen += [c.uri for c in page.chats]
        if bound is None:
            return seen


def test_recent_paging_walks_every_chat_once_in_both_orders_even_with_shared_times(library: Library) -> None:
    shared = datetime(2025, 3, 1, tzinfo=UTC)
    chats = [
        conversation(f"c{i:03}", [f"topic {i}"], day=i % 40, updated=shared if 40 <= i < 47 else None)
        for i in range(100)
    ]
    library.import_conversations(chats)
    for n in (3, 7, 20):
        newest_first = walk(library, "desc", n)
        assert sorted(newest_first) == sorted(c.id for c in chats)
        assert len(newest_first) == len(set(newest_first)) == 100
        oldest_first = walk(library, "asc", n)
        assert len(oldest_first) == len(set(oldest_first)) == 100
    times = [c.updated_at for c in library.recent(n=20).chats]
    assert times == sorted(times, reverse=True)


def test_recent_honours_a_before_and_after_window(library: Library) -> None:
    library.import_conversations([conversation(f"d{i}", [f"day {i}"], day=i) for i in range(10)])
    page = library.recent(n=20, after=BASE + timedelta(days=2), before=BASE + timedelta(days=6))
    assert [c.uri for c in page.chats] == ["d5", "d4", "d3", "d2"]
    assert page.next_before is None


def test_keyword_only_search_still_answers_when_the_model_cannot_load(tmp_path: Path) -> None:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder()).import_conversations(CHATS)
    degraded = Library.open(home, model_name="no-such/model", cache_dir=tmp_path / "empty-cache")
    result = degraded.search("sourdough", max_results=3)
    assert result.mode == "keyword"
    assert chat_ids(result)[0] == "bread"
    assert any("embedding model" in note for note in result.notes)


def test_a_lost_keyword_index_is_rebuilt_on_open(tmp_path: Path) -> None:
    import shutil

    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder()).import_conversations(CHATS)
    shutil.rmtree(home / "keyword")
    reopened = Library.open(home, embedder=HashEmbedder())
    assert reopened.keywords.doc_count() == 6 + 3  # messages and windows
    assert chat_ids(reopened.search("TypeError", max_results=1, mode="keyword")) == ["bug"]


def test_changing_the_model_re_embeds_instead_of_mixing_vector_spaces(tmp_path: Path) -> None:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder(64)).import_conversations(CHATS)
    reopened = Library.open(home, embedder=HashEmbedder(32))
    assert reopened.store.chunk_dim() == 32
    assert reopened.stats().chunks == 6 + 3  # messages and windows
    assert chat_ids(reopened.search("sourdough starter", max_results=1, mode="vector")) == ["bread"]


def test_matches_in_one_chat_never_show_a_message_twice(library: Library) -> None:
    texts = [f"unrelated filler {i} about knitting" for i in range(12)]
    for i in (3, 5, 7):
        texts[i] = f"the zeppelin hangar plan, step {i}"
    library.import_conversations([conversation("hangar", texts)])
    hit = library.search("zeppelin hangar plan", max_results=1, mode="keyword").chats[0]
    shown = [m.index for match in hit.matches for m in match.messages]
    assert len(shown) == len(set(shown))
    # Steps 3, 5 and 7 hold the same words: the latest stands for them (how the chat ended), with its question.
    assert [(m.first_index, m.last_index) for m in hit.matches] == [(6, 7)]
    assert "hangar-m7" in hit.matches[0].message_ids
