from __future__ import annotations

import pytest

from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI commands open the store with the fast test embedder (the real model is covered end to end)."""

    def open_library(settings: Settings, **_: object) -> Library:
        return Library.open(settings.home, embedder=HashEmbedder())

    monkeypatch.setattr("server.wiring.open_library", open_library)
