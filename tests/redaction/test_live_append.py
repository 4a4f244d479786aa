"""A chat read again with more messages (an agent's log synced live) has only its new messages scanned:
its earlier messages keep their placeholders, and a secret seen before keeps its number."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.redaction import Redaction, Remembered
from tests.redaction.secrets import SECRETS, made
from tests.storage.helpers import conversation

TOKEN = SECRETS[1][1]
OTHER = "ghp_" + made("abcdefghijklmnopqrstuvwxyz0123456789", 36)


class Counting(Redaction):
    """The real redaction, counting the texts it scans."""

    scanned: list[str]

    def find(self, text: str):  # type: ignore[no-untyped-def]
        self.scanned.append(text)
        return super().find(text)


def _texts(n: int) -> list[str]:
    return [f"step {i}: the deploy uses {TOKEN}" if i == 3 else f"step {i} of the kiln schedule" for i in range(n)]


def test_an_appended_message_alone_is_scanned_and_numbered_on() -> None:
    redaction = Counting()
    object.__setattr__(redaction, "scanned", [])
    remembered = Remembered(redaction)
    first, _ = remembered.redact(conversation("live", _texts(200)))
    redaction.scanned.clear()

    grown = conversation("live", [*_texts(200), f"now {TOKEN} and a new one {OTHER}"])
    second, counts = remembered.redact(grown)

    assert redaction.scanned == [grown.messages[-1].text]
    assert [m.text for m in second.messages[:200]] == [m.text for m in first.messages]
    assert second.messages[3].text == "step 3: the deploy uses [redacted: github-pat #1]"
    assert second.messages[-1].text == "now [redacted: github-pat #1] and a new one [redacted: github-pat #2]"
    assert counts == {"github-pat": 2}
    assert second == Redaction().redact(grown)[0]  # what a whole redaction makes of it


def test_a_changed_message_is_scanned_again_from_there_on() -> None:
    redaction = Counting()
    object.__setattr__(redaction, "scanned", [])
    remembered = Remembered(redaction)
    remembered.redact(conversation("live", _texts(10)))
    redaction.scanned.clear()
    texts = _texts(10)
    texts[8] = f"step 8 rewritten with {OTHER}"
    again, _ = remembered.redact(conversation("live", texts))
    assert len(redaction.scanned) == 2  # the changed message and the one after it
    assert again.messages[8].text == "step 8 rewritten with [redacted: github-pat #2]"


@pytest.mark.parametrize("live", [True, False])
def test_live_imports_remember_and_whole_ones_do_not(tmp_path: Path, live: bool) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations([conversation("live", _texts(20))], live=live)
    library.import_conversations([conversation("live", [*_texts(20), f"again {TOKEN}"])], live=live)
    stored = library.get("live")
    assert stored.messages[-1].text == "again [redacted: github-pat #1]"
    assert stored.messages[3].text == "step 3: the deploy uses [redacted: github-pat #1]"
    library.close()


def test_an_import_redacts_before_it_takes_the_write_lock(tmp_path: Path) -> None:
    """While a chat is scanned for secrets, another writer can take the store's lock (it is let go
    between batches, and taken only to write what was redacted)."""
    from storage.writing.locks import WriteLock

    home = tmp_path / "store"
    others_got_it: list[bool] = []

    class Probing(Redaction):
        def find(self, text: str):  # type: ignore[no-untyped-def]
            try:
                with WriteLock(home).hold(timeout=0):
                    others_got_it.append(True)
            except Exception:
                others_got_it.append(False)
            return super().find(text)

    library = Library.open(home, embedder=HashEmbedder(), redaction=Probing())
    chats = [conversation(f"c{i}", _texts(5)) for i in range(600)]  # three batches
    stats = library.import_conversations(chats)
    assert stats.new == 600
    assert others_got_it
    assert all(others_got_it)
    assert library.get("c3").messages[3].text == "step 3: the deploy uses [redacted: github-pat #1]"
    library.close()


def test_a_live_sync_scans_what_is_new_before_it_takes_the_write_lock(tmp_path: Path) -> None:
    from importers.sources.sync import Syncer
    from storage.writing.locks import WriteLock
    from tests.importers.sources.agent_home import write_session

    home, store = tmp_path / "home", tmp_path / "store"
    scans: list[bool] = []  # per text scanned: whether another writer could take the lock meanwhile

    class Probing(Redaction):
        def find(self, text: str):  # type: ignore[no-untyped-def]
            try:
                with WriteLock(store).hold(timeout=0):
                    scans.append(True)
            except Exception:
                scans.append(False)
            return super().find(text)

    session = "5e55e000-5555-4000-8000-000000000005"
    path = home / ".claude" / "projects" / "-home-ana-src-live" / f"{session}.jsonl"
    texts = _texts(30)
    write_session(path, session, texts)
    library = Library.open(store, embedder=HashEmbedder(), redaction=Probing())
    syncer = Syncer(library, env={}, home=home, formats=["claude-code"])
    syncer.run_once(embed=False)  # the watcher's first sync: a whole one
    scans.clear()

    write_session(path, session, [*texts, f"appended with {OTHER}"])
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    report = syncer.run_once(embed=False, live=True)

    assert report.conversations_updated == 1
    assert scans
    assert all(scans)  # every scan ran with the lock free: under it, the sync found them redacted
    assert library.get(f"claude-code:{session}").messages[-1].text == "appended with [redacted: github-pat #2]"
    library.close()
