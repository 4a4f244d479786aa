"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.hermetic import HomeGuard, hermetic_environment

if TYPE_CHECKING:
    from storage.library import Library

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT / "tests" / "fixtures" / "corpus"
CORPUS_CHATS = 31


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Where the real embedding model is cached; tests that need the real model skip without it.

    Tests never download: the cache comes from FASTEMBED_CACHE_PATH, or from `../shared/fastembed_cache`
    next to the repository.
    """
    configured = os.environ.get("FASTEMBED_CACHE_PATH")
    if configured:
        return Path(configured)
    shared = REPO_ROOT.parent / "shared" / "fastembed_cache"
    if shared.is_dir():
        return shared
    pytest.skip("the embedding model is not cached; set FASTEMBED_CACHE_PATH to a fastembed cache")


# Captured when the test run starts, before anything changes HOME.
HOME_GUARD = HomeGuard.of_this_machine(REPO_ROOT)


@pytest.hookimpl(trylast=True)  # after pytest's own configuration, which makes the temporary folders
def pytest_configure(config: pytest.Config) -> None:
    """Before anything else (collection included), the run gets a home of its own: HOME, the XDG and
    Windows folders and every agent's location variable in this run's temporary folder, and so do the
    processes tests start; files pastchats derives from the model go to a cache folder of this run (made
    once, by the first import). From here on, touching the real home fails the run."""
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    home = factory.mktemp("home", numbered=False)
    os.environ.update(hermetic_environment(home, factory.mktemp("user-cache", numbered=False)))
    HOME_GUARD.allow(factory.getbasetemp())
    HOME_GUARD.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    HOME_GUARD.stop()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every touch fails the run, those outside any test (collection, a module's fixtures) too."""
    touched = HOME_GUARD.touched_since(0)
    if touched:
        print("\nTests touched the real home:\n" + "\n".join(touched), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def nothing_touches_the_real_home() -> Iterator[None]:
    start = len(HOME_GUARD.touched)  # what came before this test is reported at the end of the run
    yield
    touched = HOME_GUARD.touched_since(start)
    if touched:
        pytest.fail("this test touched the real home:\n" + "\n".join(touched), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def owner_only_files() -> None:
    """Stores built in a test's own process are made as every pastchats entry point makes them: under
    the owner-only umask (`storage.owner_only.restrict_new_files`). Tests of that umask itself start
    their commands from a permissive one."""
    from storage.owner_only import restrict_new_files

    restrict_new_files()


@pytest.fixture(autouse=True)
def no_background_sync_of_the_real_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers built in tests never sync this machine's own agent logs; tests that sync opt in."""
    monkeypatch.setenv("PASTCHATS_SYNC", "false")


@pytest.fixture(scope="session")
def corpus_library(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Iterator[Library]:
    """The realistic corpus (tests/fixtures/corpus) in a store with the real model; built once, read-only."""
    from importers.registry import read
    from storage.library import Library

    conversations, report = read(CORPUS / "chats.jsonl")
    lib = Library.open(tmp_path_factory.mktemp("corpus-store"), cache_dir=model_cache_dir)
    assert lib.load_error is None, f"the real embedding model did not load: {lib.load_error}"
    stats = lib.import_conversations(conversations)
    assert not report.skipped, report.skipped
    assert stats.new == CORPUS_CHATS
    yield lib
    lib.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI commands open the store with the fast test embedder (the real model is covered end to end),
    redacting as the settings say."""
    from server.services.opening import redaction_from
    from server.settings import Settings
    from storage.embedding.embedder import HashEmbedder
    from storage.library import Library

    def open_library(settings: Settings, **_: object) -> Library:
        return Library.open(settings.home, embedder=HashEmbedder(), redaction=redaction_from(settings))

    monkeypatch.setattr("server.services.opening.open_library", open_library)
    with_hash_model(monkeypatch)


def with_hash_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model `search` (and the server) load while the store opens: the fast test embedder."""
    from storage.embedding.embedder import HashEmbedder

    class HashModel:
        def __init__(self, *_: object) -> None:
            pass

        def result(self) -> tuple[HashEmbedder, None]:
            return HashEmbedder(), None

    monkeypatch.setattr("server.services.opening.ModelLoad", HashModel)
