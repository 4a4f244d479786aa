"""A real S3-compatible server for the shared-store tests: SeaweedFS (`bench.object_store`), started
once for the whole run on free ports in a temporary folder and stopped at its end; each test gets a
store address of its own in the one bucket. Without `weed` installed the tests skip, saying how."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.object_store import INSTALL, Seaweed, free_ports, seaweed, weed_binary


@pytest.fixture(scope="session")
def object_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    weed = weed_binary()
    if weed is None:
        pytest.skip(f"SeaweedFS is not installed: {INSTALL}")
    with seaweed(tmp_path_factory.mktemp("seaweedfs"), weed) as server:
        yield server


@pytest.fixture
def aws(object_store: Seaweed, monkeypatch: pytest.MonkeyPatch) -> Seaweed:
    """This process's AWS variables pointed at the test server (what a machine's shell would set)."""
    for name, value in object_store.env.items():
        monkeypatch.setenv(name, value)
    return object_store


def dead_endpoint() -> str:
    """An address where nothing listens."""
    (port,) = free_ports(1)
    return f"http://127.0.0.1:{port}"
