"""A delete committed to the journal and not yet carried out (the quick `pastchats delete` leaves the
removal to a background process): no read shows its chats, in this process or in a library opened
before the commit (a running server), and whoever next takes the write lock removes them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.errors import NotFound
from storage.library import Library
from storage.stores.catalog import open_current
from storage.writing.journal import DeletedWatch
from storage.writing.locks import WriteLock
from tests.tools.helpers import BASE, chat

CHATS = [
    chat("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."], project="homelab"),
    chat("caddy", ["Is Caddy a simpler reverse proxy than nginx?", "Yes, with automatic HTTPS."], project="homelab"),
    chat("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], updated=BASE - timedelta(days=1)),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS)
    return tmp_path / "store"


def visible(library: Library) -> dict[str, set[str]]:
    """Which of the chats each read shows."""
    shown = {
        "search": {c.uri for c in library.search("nginx reverse proxy", max_results=10).chats},
        "search_units": {u.conversation_id for u in library.search_units("nginx reverse proxy")},
        "recent": {c.uri for c in library.recent(n=10).chats},
        "project": {c.uri for c in library.recent(n=10, project="homelab").chats},
        "source": {c.uri for c in library.recent(n=10, source="pastchats").chats},
        "activity": {cid for _, cid, _, _ in library.activity()},
        "activity of a project": {cid for _, cid, _, _ in library.activity(project="HOMELAB")},
        "iter": {c.id for c in library.iter_conversations()},
        "read": set(),
        "get": set(),
    }
    for cid in ("nginx", "caddy", "bread"):
        try:
            library.read_chat(cid)
            shown["read"].add(cid)
            library.get(cid)
            shown["get"].add(cid)
        except NotFound:
            pass
    return shown


def test_a_committed_delete_is_hidden_from_every_read_of_a_library_opened_before_it(home: Path) -> None:
    server = Library.open(home, embedder=HashEmbedder())  # open, as a running server is
    assert visible(server)["search"] >= {"nginx", "caddy"}
    WriteLock(home).commit_delete(["nginx"])  # as the quick delete does: the journal, nothing else
    assert "nginx" in server.store.conversation_ids(None)  # the rows are all still there
    for read, shown in visible(server).items():
        assert "nginx" not in shown, read
        assert "caddy" in shown, read  # and the others still are: a page is filled from the rest
    assert visible(Library.open(home, embedder=HashEmbedder(), heal=False))["recent"] == {"caddy", "bread"}


def test_where_secrets_were_masked_leaves_out_a_committed_delete(home: Path) -> None:
    library = Library.open(home, embedder=HashEmbedder())
    token = "ghp_R7x2Kq9LmZ4vT8wN3pY6cB1dF5hJ0sA2uXkE"
    library.import_conversations(
        [chat("keys", [f"my token {token} and AKIAZ7QW3ERT5YUI2OP4", "Rotate them."]), chat("one", [token, "ok"])]
    )
    both = {"aws-access-token": 1, "github-pat": 1}
    assert library.redacted_chats() == [("keys", both), ("one", {"github-pat": 1})]
    WriteLock(home).commit_delete(["keys"])
    assert library.redacted_chats() == [("one", {"github-pat": 1})]
    assert library.names() == (["pastchats"], ["homelab"])


def test_search_fills_its_results_from_the_other_chats(home: Path) -> None:
    library = Library.open(home, embedder=HashEmbedder())
    WriteLock(home).commit_delete(["nginx"])
    result = library.search("reverse proxy", max_results=1)
    assert [c.uri for c in result.chats] == ["caddy"]


def test_the_next_writer_removes_the_rows_and_the_catalog_stays_current(home: Path) -> None:
    WriteLock(home).commit_delete(["caddy"])
    assert open_current(home) is None  # the catalog leaves it to the store meanwhile
    library = Library.open(home, embedder=HashEmbedder())  # takes the lock: finishes the delete
    assert "caddy" not in library.store.conversation_ids(None)
    assert library.keywords.doc_count() == library.store.chunk_count()
    assert library.unfinished_deletes() == ["caddy"]  # for the sync state's layer to take (privacy.finish)
    connection = open_current(home)
    assert connection is not None  # updated for the removed chat, not rebuilt or left stale
    assert {row[0] for row in connection.execute("SELECT id FROM chats")} == {"nginx", "bread"}
    connection.close()


def test_the_journal_is_read_again_only_when_it_changes(home: Path) -> None:
    watch = DeletedWatch(str(home))
    assert watch.ids() == frozenset()
    WriteLock(home).commit_delete(["bread"])
    assert watch.ids() == {"bread"}
    (home / "journal.json").write_text('{"deleting": ["nginx"]}', encoding="utf-8")  # a new file: read again
    assert watch.ids() == {"nginx"}
    (home / "journal.json").unlink()
    assert watch.ids() == frozenset()


def test_stats_leave_out_the_chats_being_removed(home: Path) -> None:
    server = Library.open(home, embedder=HashEmbedder())
    WriteLock(home).commit_delete(["nginx"])
    pending = server.stats()
    finished = Library.open(home, embedder=HashEmbedder()).stats()  # takes the lock: finishes the delete
    assert "nginx" not in server.store.conversation_ids(None)
    assert (pending.conversations, pending.messages, pending.chunks) == (2, 4, finished.chunks)
    assert (finished.conversations, finished.messages) == (2, 4)
    assert pending.projects == finished.projects == {"homelab": 1}
    assert pending.sources == finished.sources
    assert pending.awaiting_embeddings == finished.awaiting_embeddings == 0


def test_stats_stay_right_while_the_finisher_is_half_way(home: Path) -> None:
    library = Library.open(home, embedder=HashEmbedder())
    WriteLock(home).commit_delete(["caddy"])
    library.store.conversations.delete("id = 'caddy'")  # the finisher killed after its first table
    info = library.stats()
    assert (info.conversations, info.messages) == (2, 4)
    assert info.projects == {"homelab": 1}
