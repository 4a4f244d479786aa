"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

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


@pytest.fixture(scope="session", autouse=True)
def derived_models_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Files pastchats derives from the model (the int8 copy for documents) go to a cache folder of
    this test session, not this machine's user cache: made once per session, by the first import."""
    before = {name: os.environ.get(name) for name in ("XDG_CACHE_HOME", "UV_CACHE_DIR")}
    # uv finds its own cache by the same variable: tests that install offline keep the machine's.
    os.environ["UV_CACHE_DIR"] = before["UV_CACHE_DIR"] or str(
        Path(before["XDG_CACHE_HOME"] or Path.home() / ".cache") / "uv"
    )
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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
