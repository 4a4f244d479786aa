"""Two machines (two homes) sharing one store on a real S3-compatible server (SeaweedFS, started by
`conftest.py`): each finds the other's chats, changes and deletes travel, the newer copy of a chat
wins, a chat held twice in the shared table is harmless and undone, and two exchanges at once, one
killed with SIGKILL, converge with every chat there once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from bench.object_store import Seaweed
from importers.sources import privacy
from importers.sources.sync_state import forgotten
from storage.library import Library
from storage.models import Message
from storage.stores.lance_store import conversation_rows
from storage.stores.shared_store import SharedStore
from storage.writing.ingest import IngestProgress
from tests.conftest import REPO_ROOT
from tests.tools.helpers import BASE, chat

pytestmark = pytest.mark.integration


def machine(home: Path, uri: str, model_cache_dir: Path | None = None) -> Library:
    """A machine's store, sharing `uri` (the real model when a cache is given, else none)."""
    if model_cache_dir is None:
        library = Library.open(home, load_model=False)
    else:
        library = Library.open(home, cache_dir=model_cache_dir)
    library.share(SharedStore(uri))
    return library


def shared_ids(uri: str) -> list[str]:
    """Every row's chat id in the shared table, duplicates included, read past pastchats' own code."""
    table = SharedStore(uri)._open()
    return sorted(table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist())


def test_each_machine_finds_the_other_machines_chats(aws: Seaweed, tmp_path: Path, model_cache_dir: Path) -> None:
    uri = aws.uri()
    laptop = machine(tmp_path / "laptop", uri, model_cache_dir)
    desktop = machine(tmp_path / "desktop", uri, model_cache_dir)
    laptop.import_conversations(
        [chat("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."], project="lab")]
    )
    desktop.import_conversations([chat("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."])])

    assert laptop.exchange().sent == 1
    joined: list[IngestProgress] = []
    first = desktop.exchange(progress=joined.append)
    assert (first.sent, first.received) == (1, 1)
    assert joined
    assert joined[-1].conversations_done == 1
    assert laptop.exchange().received == 1

    assert [hit.uri for hit in laptop.search("sourdough acetone").chats][:1] == ["bread"]
    assert [hit.uri for hit in desktop.search("nginx jellyfin").chats][:1] == ["nginx"]
    assert desktop.read_chat("nginx").messages[1].text == "Use proxy_pass to port 8096."
    assert {c.uri for c in desktop.recent(n=5).chats} == {"nginx", "bread"}
    assert desktop.pending_embeddings() == 0 or desktop.embed_pending() > 0  # embedded here, by this machine

    again = laptop.exchange(), desktop.exchange()
    assert [(r.sent, r.received) for r in again] == [(0, 0), (0, 0)]
    assert shared_ids(uri) == ["bread", "nginx"]


def test_the_newer_copy_of_a_chat_wins_and_deletes_travel(aws: Seaweed, tmp_path: Path) -> None:
    uri = aws.uri()
    laptop = machine(tmp_path / "laptop", uri)
    desktop = machine(tmp_path / "desktop", uri)
    old = chat("plan", ["Plan the Kyoto trip", "Day one: Fushimi Inari."])
    laptop.import_conversations([old, chat("gone", ["A chat to forget about the boiler"])])
    laptop.exchange()
    desktop.exchange()

    grown = old.model_copy(
        update={
            "updated_at": BASE + timedelta(hours=2),
            "messages": [*old.messages, Message(id="plan-m2", index=2, role="user", text="Add a day in Nara")],
        }
    )
    desktop.import_conversations([grown])
    assert desktop.exchange().sent == 1
    # The laptop still holds the older copy, unchanged: it takes the newer one and never sends its own.
    report = laptop.exchange()
    assert (report.sent, report.received) == (0, 1)
    assert [m.text for m in laptop.get("plan").messages][-1] == "Add a day in Nara"

    laptop.delete(["gone"])
    assert laptop.exchange().deleted_there == 1
    assert desktop.exchange().deleted_here == 1
    assert [c.uri for c in desktop.recent(n=5).chats] == ["plan"]
    assert shared_ids(uri) == ["plan"]


def test_a_chat_forgotten_here_before_any_exchange_is_deleted_there_not_brought_back(
    aws: Seaweed, tmp_path: Path
) -> None:
    """Both machines synced one session (a home folder they share); the laptop forgets it before its
    first exchange: the desktop's copy is deleted from the bucket, then from the desktop."""
    uri = aws.uri()
    laptop = machine(tmp_path / "laptop", uri)
    desktop = machine(tmp_path / "desktop", uri)
    both = chat("tax-return", ["Which receipts does the tax return need?", "Keep every invoice."])
    laptop.import_conversations([both, chat("kept", ["A chat that stays"])])
    desktop.import_conversations([both])
    desktop.exchange()
    assert privacy.delete(laptop, ["tax-return"]) == ["tax-return"]

    report = laptop.exchange(forgotten=forgotten(laptop.home))
    assert (report.received, report.deleted_there) == (0, 1)
    assert desktop.exchange().deleted_here == 1
    assert shared_ids(uri) == ["kept"]
    assert [c.uri for c in desktop.recent(n=5).chats] == ["kept"]


def test_a_chat_held_twice_in_the_shared_table_is_harmless_and_undone(aws: Seaweed, tmp_path: Path) -> None:
    """What two machines inserting the same new chat at once can leave: LanceDB has no unique key."""
    uri = aws.uri()
    shared = SharedStore(uri)
    twice = chat("twice", ["The same session, synced from two machines sharing a home folder"])
    rows = conversation_rows([twice], {twice.id: twice.fingerprint()})
    table = shared._open()
    table.add(rows)
    table.add(rows)
    assert shared_ids(uri) == ["twice", "twice"]

    desktop = machine(tmp_path / "desktop", uri)
    assert desktop.exchange().received == 1
    assert [c.uri for c in desktop.recent(n=5).chats] == ["twice"]
    assert shared_ids(uri) == ["twice"]  # the listing deleted the extra copy


def _exchange(home: Path, uri: str, env: dict[str, str]) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tests.shared_store.exchange_process", str(home), uri]
    return subprocess.Popen(args, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("kill_after", [0.5, 2.0])
def test_two_exchanges_at_once_one_killed_converge_with_every_chat_once(
    aws: Seaweed, tmp_path: Path, kill_after: float
) -> None:
    """Two machines hold the same 300 chats (a home folder they share) and a few of their own; both
    send at once, one is killed with SIGKILL part way; after each syncs again, every chat is in the
    shared table once and on both machines."""
    uri = aws.uri()
    same = [chat(f"same-{i:03}", [f"Shared session {i} about topic {i % 17}", "An answer."]) for i in range(300)]
    homes = {name: tmp_path / name for name in ("laptop", "desktop")}
    for name, home in homes.items():
        library = Library.open(home, load_model=False)
        library.import_conversations([*same, *(chat(f"{name}-{i}", [f"{name} only, chat {i}"]) for i in range(20))])
        library.close()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    survivor = _exchange(homes["desktop"], uri, env)
    victim = _exchange(homes["laptop"], uri, env)
    assert victim.stdout is not None
    assert victim.stdout.readline().strip() == "exchanging"
    time.sleep(kill_after)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    _, errors = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, errors

    for home in homes.values():  # each syncs again, as its next sync or poll would
        done = _exchange(home, uri, env)
        _, errors = done.communicate(timeout=300)
        assert done.returncode == 0, errors
    expected = sorted([c.id for c in same] + [f"{n}-{i}" for n in homes for i in range(20)])
    # One more listing: a copy a concurrent insert left twice is deleted by the listing after it.
    SharedStore(uri).stamps()
    assert shared_ids(uri) == expected
    for home in homes.values():
        library = machine(home, uri)
        library.exchange()
        assert sorted(library.store.chat_stamps()) == expected


def test_a_bucket_that_does_not_exist_yet_is_created(aws: Seaweed, tmp_path: Path) -> None:
    """A new MinIO or SeaweedFS server has no bucket: the first sync makes the one the address names."""
    uri = f"s3://fresh-{os.getpid()}/team"
    laptop = machine(tmp_path / "laptop", uri)
    laptop.import_conversations([chat("first", ["The first chat in a new bucket"])])
    assert laptop.exchange().sent == 1
    assert shared_ids(uri) == ["first"]


def test_a_second_exchange_in_a_home_waits_for_the_first(aws: Seaweed, tmp_path: Path) -> None:
    """Two exchanges in one home (a sync while a server's watcher exchanges) each save the record of what
    was exchanged whole: the second starts once the first has saved, so neither record is lost."""
    import threading

    from filelock import FileLock

    from storage.writing.exchange import EXCHANGE_LOCK

    home, uri = tmp_path / "laptop", aws.uri()
    laptop = machine(home, uri)
    laptop.import_conversations([chat("stove", ["Descale the kettle monthly", "Vinegar works."])])
    reports = []
    worker = threading.Thread(target=lambda: reports.append(laptop.exchange()))
    with FileLock(str(home / EXCHANGE_LOCK)):  # an exchange already under way in this home
        worker.start()
        worker.join(timeout=1.5)
        assert worker.is_alive()  # waiting
        assert not reports
    worker.join(timeout=120)
    assert [r.sent for r in reports] == [1]
    assert shared_ids(uri) == ["stove"]
