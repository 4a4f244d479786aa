"""The watcher stays inside the agents' folders: a symbolic link in them is not followed (its target's
folders are never watched), and a folder created in them is watched from then on."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.corpus.agent_writes import CHAT_IDS, make_agent_home
from server.services.sync.watching import watched_folders
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.server.test_live_watch import found, stored, until, watching

SHOP = "-home-ana-src-shop"


def test_a_symlink_out_of_the_agents_folders_is_not_watched(tmp_path: Path) -> None:
    outside = tmp_path / "usr"
    for name in ("bin", "lib/python", "share/doc/deep"):
        (outside / name).mkdir(parents=True)
    projects = tmp_path / "home" / ".claude" / "projects"
    (projects / SHOP / "sub").mkdir(parents=True)
    (projects / "x").symlink_to(outside, target_is_directory=True)
    (projects / SHOP / "loop").symlink_to(projects, target_is_directory=True)

    folders = watched_folders([projects])

    assert sorted(folders) == sorted([projects, projects / SHOP, projects / SHOP / "sub"])
    assert not [folder for folder in folders if outside in folder.resolve().parents or folder.resolve() == outside]


def test_a_folder_created_while_watching_is_watched_and_its_sessions_synced(tmp_path: Path) -> None:
    home = make_agent_home(tmp_path / "home")
    (home / ".claude" / "projects" / "x").symlink_to(tmp_path, target_is_directory=True)
    settings = Settings(home=tmp_path / "store", user_home=home, agent_env={}, sync_interval=0)
    library = Library.open(settings.home, embedder=HashEmbedder())
    source = next((home / ".claude" / "projects" / SHOP).glob("*.jsonl"))
    with watching(settings, library) as watcher:
        until(lambda: watcher.rounds >= 1 and stored(library, CHAT_IDS["claude-code"]), 30)
        new_project = home / ".claude" / "projects" / "-home-ana-src-new"
        new_project.mkdir()
        copy = new_project / "5e55e000-2222-4000-8000-000000000002.jsonl"
        shutil.copyfile(source, copy)
        until(lambda: stored(library, "claude-code:5e55e000-2222-4000-8000-000000000002"), 20)
        # The new folder is watched: a later append in it is seen too.
        text = copy.read_text().replace("Why is the checkout test failing?", "Why is the wombatgrid failing?")
        copy.write_text(text)
        until(lambda: "claude-code:5e55e000-2222-4000-8000-000000000002" in found(library, "wombatgrid"), 20)
    library.close()
