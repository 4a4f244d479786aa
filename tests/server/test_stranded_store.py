"""Nothing a user meets strands them: a read-only home, a stuck writer, a full disk, a damaged table, a
store from a newer pastchats. Each is real (a read-only mount, a SIGSTOPped process holding the lock, a
tmpfs filled to the last byte, files cut on disk), and each answer is one plain line naming the next
step, never a traceback."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from server.app import build_server
from server.cli import cli
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.storage.helpers import conversation

CHATS = [
    conversation("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."]),
    conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
]
ROOT = Path(__file__).resolve().parents[2]


def run(home: Path, *args: str) -> Result:
    env = {"PASTCHATS_SYNC": "false", "PASTCHATS_MODEL_CACHE": str(home.parent / "no-models")}
    return CliRunner().invoke(cli, ["--home", str(home), *args], env=env)


def plain(result: Result) -> str:
    """The command's output, checked to hold no traceback."""
    text = result.output
    assert "Traceback" not in text, text
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return text


def store(tmp_path: Path) -> Path:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder()).import_conversations(CHATS)
    return home


@contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder` as a read-only mount sees it. As root, permissions do not stop writes: a read-only bind
    mount does (skipped, with the reason, only where mounting is not allowed)."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in [folder, *folder.rglob("*")]}
        for path in modes:
            path.chmod(modes[path] & ~0o222)
        try:
            yield folder
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    mount = folder.with_name(folder.name + "-ro")
    mount.mkdir()
    done = subprocess.run(["mount", "--bind", str(folder), str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"running as root and cannot bind-mount read-only here: {done.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True, capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=False, capture_output=True)


def test_a_read_only_home_is_read_and_writes_say_read_only_with_the_next_step(tmp_path: Path) -> None:
    home = store(tmp_path)
    (home / "catalog.sqlite").unlink()  # reads must rebuild it, and cannot write it
    with read_only(home) as mounted:
        assert "Chats: 2" in plain(run(mounted, "stats"))
        assert "sourdough" in plain(run(mounted, "search", "sourdough"))
        assert "nginx" in plain(run(mounted, "recent"))
        exported = run(mounted, "export")
        assert plain(exported).count('"id"') >= 2
        for args in (["import", str(ROOT / "tests" / "fixtures" / "corpus" / "chats.jsonl")], ["delete", "bread"]):
            refused = run(mounted, *args)
            assert refused.exit_code == 1
            assert "is read-only" in plain(refused)
            assert "copy it and pass the copy with --home" in refused.output


HOLDER = """
import sys, time
from pathlib import Path
from storage.library import Library
library = Library.open(Path(sys.argv[1]), load_model=False)
with library.lock.hold():
    print("holding", flush=True)
    time.sleep(120)
"""


def test_a_stuck_writer_is_named_within_two_seconds_with_what_to_do(tmp_path: Path) -> None:
    home = store(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        holder.send_signal(signal.SIGSTOP)  # an import stopped while it holds the lock
        waiter = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "--home", str(home), "delete", "bread"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PASTCHATS_SYNC": "false"},
        )
        try:
            assert waiter.stderr is not None
            lines: queue.Queue[str] = queue.Queue()
            threading.Thread(target=lambda: [lines.put(line) for line in waiter.stderr], daemon=True).start()  # type: ignore[union-attr]
            # The command's own start-up (its imports) comes first, then the notice within 2 s of waiting.
            said = lines.get(timeout=10)
            assert f"held by pid {holder.pid}" in said, said
            assert "stopped (suspended)" in said
            assert f"kill -CONT {holder.pid}" in said
            assert "Traceback" not in said
        finally:
            waiter.kill()
            waiter.wait()
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.kill()
        holder.wait()


@contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, which only root can mount here")
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=False)  # the store may still have files mapped


def fill(folder: Path, leave: int) -> Path:
    """Fill the disk holding `folder` but for about `leave` bytes."""
    filler = folder / "filler"
    free = shutil.disk_usage(folder).free
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(0, free - leave))
    return filler


def test_a_disk_that_fills_during_an_import_loses_nothing_committed(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "64m") as disk:
        home = disk / "store"
        Library.open(home, embedder=HashEmbedder()).import_conversations(CHATS)
        filler = fill(disk, 256 * 1024)
        many = [
            conversation(f"chat-{i}", [f"question {i} about zeppelins " * 40, "an answer " * 80]) for i in range(300)
        ]
        source = tmp_path / "many.jsonl"
        source.write_text("".join(json.dumps(c.model_dump(mode="json")) + "\n" for c in many), encoding="utf-8")
        result = run(home, "import", str(source))
        text = plain(result)
        assert "disk" in text
        assert "full" in text
        filler.unlink()
        library = Library.open(home, embedder=HashEmbedder())
        stored = set(library.store.conversation_ids())
        assert {"nginx", "bread"} <= stored
        for cid in stored:  # every chat committed is whole and findable
            assert cid in [c.uri for c in library.search(library.get(cid).messages[0].text[:60]).chats], cid
        assert not library.lock.pending()


def test_doctor_finds_a_cut_table_and_fix_restores_every_chat(tmp_path: Path) -> None:
    home = store(tmp_path)
    for path in (home / "lancedb" / "conversations.lance" / "data").iterdir():
        os.truncate(path, path.stat().st_size // 2)
    before = run(home, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(before.stdout)["checks"]}
    assert not checks["store"]["ok"]
    assert "the conversations table is damaged" in checks["store"]["summary"]
    assert checks["store"]["fix"] == "pastchats doctor --fix"
    fixed = run(home, "doctor", "--fix", "--json")
    checks = {c["name"]: c for c in json.loads(fixed.stdout)["checks"]}
    assert checks["store"]["details"]["unfindable"] == 0
    assert checks["store"]["details"]["conversations"] == 2
    assert "sourdough" in plain(run(home, "search", "sourdough"))


def test_doctor_is_never_ok_while_search_cannot_find_a_stored_chat(tmp_path: Path) -> None:
    home = store(tmp_path)
    library = Library.open(home, load_model=False, heal=False)
    library.store.chunks.delete("conversation_id = 'bread'")  # its passages lost; the counts agree again below
    library.keywords.replace(["bread"], [], {})
    result = run(home, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["store"]["ok"]
    assert "1 chat(s) cannot be found by search" in checks["store"]["summary"]
    run(home, "doctor", "--fix")
    again = {c["name"]: c for c in json.loads(run(home, "doctor", "--json").stdout)["checks"]}
    assert again["store"]["details"]["unfindable"] == 0
    assert "bread" in plain(run(home, "search", "sourdough"))


def test_doctor_names_a_store_from_a_newer_pastchats(tmp_path: Path) -> None:
    home = store(tmp_path)
    meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    (home / "store.json").write_text(json.dumps(meta | {"format": 99}), encoding="utf-8")
    checks = {c["name"]: c for c in json.loads(run(home, "doctor", "--json").stdout)["checks"]}
    assert "written by a newer pastchats" in checks["store"]["summary"]
    assert "Upgrade pastchats" in checks["store"]["summary"]
    assert "written by a newer pastchats" in plain(run(home, "stats"))


@pytest.mark.anyio
async def test_the_server_names_the_real_problem_when_the_store_cannot_open(tmp_path: Path) -> None:
    home = store(tmp_path)
    meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    (home / "store.json").write_text(json.dumps(meta | {"format": 99}), encoding="utf-8")
    settings = Settings(home=home)
    server = build_server(settings, lambda s: Library.open(s.home, embedder=HashEmbedder()))
    async with Client(server) as client:
        result = await client.call_tool("recent_chats", {})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "written by a newer pastchats" in text
    assert "Upgrade pastchats" in text
    assert "pastchats stats" not in text
