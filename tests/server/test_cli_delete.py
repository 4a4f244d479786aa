"""`pastchats delete` and `forget`: what they print, their exit status, and the chats gone from every
index, the catalog and the archive when the command returns (and kept out of the next sync)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from importers.sources.sync_state import SyncState
from server.cli import cli
from storage.library import Library
from storage.query.filters import Filters
from storage.stores.catalog import Catalog
from tests.importers.sources.agent_home import CODEX, SHOP, SHOP_FILE, make_agent_home

ROOT = Path(__file__).resolve().parents[2]
DELETED = "Deleted {} chat(s) from every index and the archive.\n"


def run(home: Path, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args], input=stdin, env={"PASTCHATS_SYNC": "false"})


def rows_of(home: Path) -> set[str]:
    """Every chat id LanceDB (chats, passages), Tantivy and the catalog hold, opened without
    repairing anything (Tantivy's passages are counted against LanceDB's)."""
    library = Library.open(home, load_model=False, heal=False)
    store = library.store
    ids = set(store.conversation_ids(None))
    for table in (store.chunks,):
        ids |= set(table.search().select(["conversation_id"]).limit(None).to_arrow().column(0).to_pylist())
    assert library.keywords.doc_count() == store.chunk_count()
    with Catalog.read(home) as catalog:
        if catalog is not None:
            ids |= {cid for _, cid in catalog.timeline(Filters())}
    return ids


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store synced from agent logs: chats in several projects and sources, with archive copies."""
    agents = make_agent_home(tmp_path_factory.mktemp("agents"))
    agents.syncer().run_once()
    home = agents.library.home
    agents.library.close()
    return home


@pytest.fixture
def home(synced: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(synced, tmp_path / "store", symlinks=True))


def test_delete_removes_a_chat_from_every_index_and_the_archive(home: Path) -> None:
    copies = [path for path in (home / "archive").rglob("*") if path.name == Path(SHOP_FILE).name]
    assert copies  # sync kept a private copy of the chat's log
    result = run(home, "delete", SHOP)
    assert (result.stdout, result.stderr, result.exit_code) == (DELETED.format(1), "", 0)
    assert SHOP not in rows_of(home)
    assert SHOP in SyncState.load(home).forgotten
    assert not any(path.exists() for path in copies)
    listed = run(home, "recent", "-n", "20")
    assert f"{SHOP}'" not in listed.stdout  # (a subagent's uri extends it)
    assert "no chat with uri" in run(home, "read", SHOP).stderr


def test_delete_names_the_uris_it_did_not_find_and_fails_when_it_found_none(home: Path) -> None:
    result = run(home, "delete", SHOP, "claude-code:no-such-chat")
    assert (result.stdout, result.stderr, result.exit_code) == (
        DELETED.format(1),
        "No chat with uri: claude-code:no-such-chat\n",
        0,
    )
    result = run(home, "delete", "no-such-chat")
    assert (result.stdout, result.stderr, result.exit_code) == ("", "No chat with uri: no-such-chat\n", 1)


def test_delete_as_json_lists_what_it_deleted_and_what_it_did_not_find(home: Path) -> None:
    result = run(home, "delete", "--json", "no-such-chat", SHOP, SHOP, CODEX)
    assert result.exit_code == 0
    assert result.stdout == (
        '{\n  "deleted": [\n    "'
        + SHOP
        + '",\n    "'
        + CODEX
        + '"\n  ],\n  "not_found": [\n    "no-such-chat"\n  ]\n}\n'
    )
    assert rows_of(home).isdisjoint({SHOP, CODEX})
    result = run(home, "delete", "--json", "no-such-chat")
    assert (result.stdout, result.exit_code) == (
        '{\n  "deleted": [],\n  "not_found": [\n    "no-such-chat"\n  ]\n}\n',
        1,
    )


@pytest.mark.parametrize(
    ("args", "gone"),
    [
        (["--project", "/home/ana/src/shop"], {SHOP}),
        (["--source", "codex"], {CODEX}),
        (["--project", "/home/ana/src/shop", "--source", "claude-code", "--before", "2100-01-01"], {SHOP}),
    ],
)
def test_forget_deletes_every_chat_matching_all_the_criteria(home: Path, args: list[str], gone: set[str]) -> None:
    before = rows_of(home)
    result = run(home, "forget", *args, "--yes")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Deleted ")
    assert result.stdout.endswith(" chat(s) from every index and the archive.\n")
    assert gone <= before - rows_of(home)


def test_forget_before_a_date_and_as_json(home: Path) -> None:
    result = run(home, "forget", "--before", "2000-01-01T00:00Z", "--yes", "--json")
    assert (result.stdout, result.exit_code) == ('{\n  "deleted": []\n}\n', 0)
    result = run(home, "forget", "--before", "2000-01-01", "--yes")  # nothing to do is not a failure
    assert (result.stdout, result.exit_code) == ("Nothing matched.\n", 0)
    result = run(home, "forget", "--before", "2100-01-01", "--yes")
    assert result.exit_code == 0
    assert rows_of(home) == set()


def test_forget_asks_first_and_deletes_nothing_when_not_told_yes(home: Path) -> None:
    result = run(home, "forget", "--source", "codex", stdin="n\n")
    assert result.exit_code == 1
    assert "Delete 2 chat(s) from every index and the archive? [y/N]" in result.stderr  # a subagent too
    assert "Aborted" in result.stderr
    assert CODEX in rows_of(home)


def test_forget_without_criteria_is_a_usage_error(home: Path) -> None:
    result = run(home, "forget", "--yes")
    assert result.exit_code == 2
    assert "say what to forget: --project, --source and/or --before" in result.stderr


@pytest.mark.anyio
@pytest.mark.integration
async def test_a_running_stdio_server_stops_showing_a_chat_once_it_is_deleted(
    tmp_path: Path, model_cache_dir: Path
) -> None:
    from mcp import Client, StdioServerParameters

    from tests.server.processes import build_real_store, serve_command
    from tests.tools.helpers import block_uris, text_of

    home = build_real_store(tmp_path / "store", model_cache_dir)
    command = serve_command(home, "serve")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "PASTCHATS_SYNC": "false",
        "FASTEMBED_CACHE_PATH": str(model_cache_dir),
    }
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))

    async def shown(client: Client) -> tuple[bool, list[str], bool]:
        """Whether search finds nginx, what recent lists, whether nginx can be read."""
        found = await client.call_tool("conversation_search", {"query": "reverse proxy for my media server"})
        recent = await client.call_tool("recent_chats", {"n": 5})
        read = await client.call_tool("read_chat", {"uri": "nginx"})
        return "nginx" in block_uris(text_of(found)), block_uris(text_of(recent)), not read.is_error

    async with Client(params, mode="legacy") as client:
        assert await shown(client) == (True, ["nginx", "bread"], True)
        result = run(home, "delete", "nginx")
        assert (result.stdout, result.exit_code) == (DELETED.format(1), 0)
        assert await shown(client) == (False, ["bread"], False)
    assert "nginx" not in rows_of(home)
