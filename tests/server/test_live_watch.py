"""The live watcher: what an agent appends is searchable within seconds; one watcher per store, and
another takes over when it stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.corpus.agent_writes import CHAT_IDS, append_exchange, make_agent_home
from importers.sources.report import SyncReport
from server.cli.common import stats_text
from server.services.doctor import check_watcher
from server.services.sync.watching import TAKEOVER_POLL, Watcher, watch_status
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.errors import NotFound
from storage.library import Library

LIVE_BUDGET = 5.0  # seconds from an append to the text being keyword-searchable


@contextmanager
def watching(settings: Settings, library: Library, reports: list[SyncReport] | None = None) -> Iterator[Watcher]:
    watcher = Watcher(settings, library, on_round=None if reports is None else reports.append)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()


def until(condition: object, timeout: float) -> float:
    """Seconds until `condition()` holds (fails the test after `timeout`)."""
    start = time.monotonic()
    while not condition():  # type: ignore[operator]
        if time.monotonic() - start > timeout:
            pytest.fail(f"not within {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - start


def stored(library: Library, uri: str) -> bool:
    try:
        library.get(uri)
    except NotFound:
        return False
    return True


def found(library: Library, word: str) -> list[str]:
    return [chat.uri for chat in library.search(word, mode="keyword").chats]


@pytest.fixture
def agents(tmp_path: Path) -> tuple[Settings, Library]:
    home = make_agent_home(tmp_path / "home")
    settings = Settings(home=tmp_path / "store", user_home=home, agent_env={}, sync_interval=0)
    return settings, Library.open(settings.home, embedder=HashEmbedder())


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_an_exchange_an_agent_appends_is_keyword_searchable_within_seconds_and_then_embedded(
    agents: tuple[Settings, Library], agent: str
) -> None:
    settings, library = agents
    with watching(settings, library) as watcher:
        until(lambda: watcher.rounds >= 1 and stored(library, CHAT_IDS[agent]), 30)
        append_exchange(settings.user_home, agent, "Why does the quokkaplex fail?", "The flux capacitor is wet.", 1)
        assert until(lambda: found(library, "quokkaplex") == [CHAT_IDS[agent]], 15) < LIVE_BUDGET
        until(lambda: library.pending_embeddings() == 0, 30)  # embedded in the background
    messages = [m.text for m in library.get(CHAT_IDS[agent]).messages]
    assert messages.count("Why does the quokkaplex fail?") == 1


def test_a_half_written_last_line_waits_for_its_end(agents: tuple[Settings, Library]) -> None:
    settings, library = agents
    reports: list[SyncReport] = []
    with watching(settings, library, reports) as watcher:
        until(lambda: watcher.rounds >= 1 and stored(library, CHAT_IDS["codex"]), 30)
        question, answer = "Is the zebrafrost cached?", "Yes, the zebrafrost is."
        append_exchange(settings.user_home, "codex", question, answer, 1, half=True)
        until(lambda: "zebrafrost" in " ".join(m.text for m in library.get(CHAT_IDS["codex"]).messages), 15)
    texts = [m.text for m in library.get(CHAT_IDS["codex"]).messages]
    assert texts[-2:] == ["Is the zebrafrost cached?", "Yes, the zebrafrost is."]
    codex_notes = [note for report in reports for note in report.notes if "rollout-2025-03-14" in note]
    assert not [note for note in codex_notes if "cut off" in note]  # never read with half a line
    assert any(report.files_waiting for report in reports)  # the file waited for its line's end


def test_one_watcher_per_store_and_another_takes_over_when_it_stops(agents: tuple[Settings, Library]) -> None:
    settings, library = agents
    first = watching(settings, library)
    watcher = first.__enter__()
    until(lambda: watcher.status is not None, 10)
    with watching(settings, Library.open(settings.home, embedder=HashEmbedder())) as standby:
        time.sleep(TAKEOVER_POLL * 1.5)
        assert standby.status is None
        assert standby.rounds == 0
        status = watch_status(settings.home)
        assert status is not None
        assert status.mode == "events"
        assert watcher.status is not None
        assert status.since == watcher.status.since
        first.__exit__(None, None, None)  # the watcher stops: the other takes over within seconds
        assert until(lambda: standby.status is not None, 10) < TAKEOVER_POLL + 1
        append_exchange(settings.user_home, "gemini", "Where is the moonquartz?", "In the drawer.", 1)
        until(lambda: found(library, "moonquartz") == [CHAT_IDS["gemini"]], 15)
    assert watch_status(settings.home) is None  # nobody watches now


def test_where_events_are_unavailable_it_polls_and_doctor_and_stats_say_so(agents: tuple[Settings, Library]) -> None:
    settings, library = agents
    settings = settings.model_copy(update={"watch_polling": True})
    with watching(settings, library) as watcher:
        until(lambda: watcher.rounds >= 1 and stored(library, CHAT_IDS["gemini"]), 30)
        append_exchange(settings.user_home, "gemini", "Is the plumbus polled?", "The plumbus is polled.", 1)
        assert until(lambda: found(library, "plumbus") == [CHAT_IDS["gemini"]], 15) < LIVE_BUDGET
        check = check_watcher(settings)
        assert check.warning
        assert "polling" in check.summary
        assert "PASTCHATS_WATCH_POLLING" in check.summary
        assert "Watching the agent logs: pid" in stats_text(library, as_json=False)
    assert check_watcher(settings).ok
    assert "Watching the agent logs: no process now" in stats_text(library, as_json=False)
