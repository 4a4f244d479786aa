"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


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


@pytest.fixture(autouse=True)
def no_background_sync_of_the_real_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers built in tests never sync this machine's own agent logs; tests that sync opt in."""
    monkeypatch.setenv("PASTCHATS_SYNC", "false")
