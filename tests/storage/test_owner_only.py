"""The store is its user's alone: a store made readable by others (by an older pastchats, or a chmod
since) is tightened when opened, once, saying so; the owner's own bits and what links point to are
left as they are."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.owner_only import exposed, tighten
from tests.importers.sources.agent_home import make_agent_home
from tests.storage.helpers import conversation, loosen

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows keeps the store private by its folder's ACL")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def everything(root: Path) -> list[Path]:
    return [root, *root.rglob("*")]


def test_an_old_store_readable_by_others_is_made_owner_only_on_open_saying_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = make_agent_home(tmp_path)  # a store with an archive of agent logs, synced
    agents.syncer().run_once()
    agents.library.import_conversations([conversation("nginx", ["How do I proxy Jellyfin?", "Use proxy_pass."])])
    home = agents.library.home
    assert (home / "archive").is_dir()
    assert any((home / "lancedb").rglob("*.lance")), "LanceDB's data files are walked too"
    total = loosen(home)

    with caplog.at_level(logging.WARNING, logger="storage.library"):
        Library.open(home, embedder=HashEmbedder()).close()
        notes = [r.getMessage() for r in caplog.records if "owner-only" in r.getMessage()]
        assert notes == [
            f"made the store in {home} owner-only: {total} file(s) and folder(s) in it could be read by other "
            "users of this machine"
        ]
        for path in everything(home):
            assert mode(path) & 0o077 == 0, f"{path} is {oct(mode(path))}"
        assert mode(home) == 0o700
        assert mode(home / "store.json") == 0o600
        assert {mode(path) for path in (home / "archive").rglob("*") if path.is_file()} == {0o600}

        caplog.clear()
        Library.open(home, embedder=HashEmbedder()).close()
        assert [r for r in caplog.records if "owner-only" in r.getMessage()] == []


def test_a_new_store_is_owner_only_from_its_folder_down_whatever_the_umask(tmp_path: Path) -> None:
    before = os.umask(0o022)  # a library user that never set the umask: the folder itself keeps others out
    try:
        library = Library.open(tmp_path / "a" / "store", embedder=HashEmbedder())
        library.import_conversations([conversation("bread", ["My starter smells of acetone", "Feed it."])])
    finally:
        os.umask(before)
    assert mode(tmp_path / "a" / "store") == 0o700
    assert mode(tmp_path / "a" / "store" / "write.lock") == 0o600
    assert mode(tmp_path / "a" / "store" / "lancedb.readers") == 0o600


def test_tightening_keeps_the_owners_own_bits_and_leaves_what_links_point_to(tmp_path: Path) -> None:
    home = tmp_path / "store"
    home.mkdir()
    home.chmod(0o755)
    (home / "read-only").write_text("x")
    (home / "read-only").chmod(0o444)
    (home / "script").write_text("x")
    (home / "script").chmod(0o755)
    elsewhere = tmp_path / "shared.txt"
    elsewhere.write_text("not pastchats'")
    elsewhere.chmod(0o644)
    (home / "link").symlink_to(elsewhere)

    assert sorted(p.name for p in exposed(home)) == ["read-only", "script", "store"]
    assert tighten(home) == 3
    assert (mode(home), mode(home / "read-only"), mode(home / "script")) == (0o700, 0o400, 0o700)
    assert mode(elsewhere) == 0o644
    assert list(exposed(home)) == []
    assert tighten(home) == 0


def test_a_store_reached_through_a_link_is_tightened_where_it_lives(tmp_path: Path) -> None:
    real = tmp_path / "disk" / "pastchats"
    real.mkdir(parents=True)
    real.chmod(0o755)
    (real / "store.json").write_text("{}")
    (real / "store.json").chmod(0o644)
    link = tmp_path / "store"
    link.symlink_to(real)
    assert tighten(link) == 2
    assert (mode(real), mode(real / "store.json")) == (0o700, 0o600)
