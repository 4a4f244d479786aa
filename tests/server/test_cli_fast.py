"""The fast path of `pastchats` (server/cli.py): `stats`, `recent`, `--help`, their argument errors and
an import of a missing path, answered without click or pydantic-settings as the click group answers."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from server.cli_help import help_texts
from server.cli_help_texts import HELP
from server.settings_quick import terminal_columns
from tests.server.processes import build_real_store, server_env

RUN = """
import sys
sys.argv[0] = "pastchats"
try:
    if {full!r}:
        from server.cli_commands import cli
        cli.main(sys.argv[1:], prog_name="pastchats")
    else:
        from server.cli import main
        main()
except SystemExit as exit:
    code = exit.code
loaded = [m for m in ("click", "pydantic_settings", "lancedb", "pydantic") if m in sys.modules]
print("\\nLOADED " + " ".join(loaded), file=sys.stderr)
sys.exit(code)
"""

# Answered by the fast path: neither click nor pydantic-settings is imported.
FAST = [
    ["stats"],
    ["stats", "--json"],
    ["--model", "some/model", "-vv", "stats"],
    ["recent"],
    ["recent", "-n", "1"],
    ["recent", "-n1", "--json"],
    ["recent", "--sort-order=asc", "-n", "1", "--sort-order", "asc"],
    ["recent", "--project", "HOMELAB"],
    ["recent", "--after", "2020-01-01", "--before=2100-01-01T00:00Z", "--json"],
    ["-v", "recent", "--before", "2025-01-01T00:00:00+02:00"],
    ["recent", "-n", "99"],
    ["recent", "-n", "0", "--sort-order", "up"],
    ["recent", "--sort-order", "up", "-n", "0"],
    ["recent", "--before", "yesterday"],
    ["recent", "-n", "20"],
    ["recent", "-n", "20", "--sort-order", "asc"],
    ["recent", "--project", "homelab", "-n", "1"],
    ["recent", "--project", " HomeLab "],
    ["recent", "--after", "2025-06-01", "--sort-order", "asc", "-n", "2"],
    ["recent", "--before", "2025-06-01T00:00:00.5Z", "-n", "2"],
    ["recent", "--after", "2100-01-01"],
    ["read", "nginx"],
    ["read", "--limit=1", "bread", "--offset", "1"],
    ["read", "nginx", "--around", "2", "--json"],
    ["read", "nginx", "--around=nginx-m1", "--limit", "1"],
    ["read", "--json", "--offset=1", "bread"],
    ["read", " nginx "],
    ["read", "nginx", "--around", "  "],
    ["export"],
    ["export", "--format", "json", "--project", "homelab"],
    ["export", "--source=nowhere"],
    ["export", "--format=json", "--source", "pastchats", "--project", "Homelab"],
    ["export", "--out", "-", "--format", "json"],
    ["export", "--out=-"],
    ["import", "/nonexistent/pastchats-test/chats.json"],
    ["import", "--json", "/nonexistent/pastchats-test/chats.json", "--sample", "/nonexistent/other"],
    ["import", "--format", "xml", "/nonexistent/pastchats-test/chats.json"],
    ["import", "--format=claude", "/nonexistent/pastchats-test/chats.json"],
    ["import", "./nonexistent-pastchats//", "--format", "cursor"],
    ["import", "/dev/null", "--format", "plain"],
]
HELPS = [["--help"], ["-h"], ["stats", "--help"], ["recent", "-h"], ["import", "--help"], ["model", "--help"]]
# Answered without pydantic either (from a current catalog): `stats` and `recent` as text, `read`, `export`.
LEAN = [
    args
    for args in FAST
    if args[0] in ("read", "export") or (args[0] in ("stats", "recent") and "--json" not in args and "-n1" not in args)
]
# Left to the click group (errors it words, values the fast path does not read): the same answer.
CLICK = [
    ["read", "no-such-chat"],
    ["read", "no-such-chat", "--json"],
    ["read", "nginx", "--around", "nginx-m9"],
    ["read", "nginx", "--around", "99"],
    ["read", "nginx", "--limit", "0"],
    ["read", "nginx", "bread"],
    ["read"],
    ["export", "--format", "xml"],
    ["export", "extra"],
    ["export", "--out", "/nonexistent/dir/out.jsonl"],
    ["recent", "--after", "2025-06-01", "--before", "2025-05-01"],
    ["recent", "--project", "nowhere"],
    ["recent", "--bogus"],
    ["stats", "extra"],
    ["recent", "-n"],
    ["recent", "-n", "abc"],
    ["recent", "-n", "-1"],
    ["recent", "--project", ""],
    ["recent", "--json", "--help"],
    ["import"],
    ["import", "--format", "claude"],
    ["import", "--format", "xml"],
    ["import", "/nonexistent/a.json", "--format", "claude", "--format", "xml"],
]


def run(home: Path, env: dict[str, str], args: list[str], *, full: bool) -> tuple[str, str, int, set[str]]:
    argv = [sys.executable, "-c", RUN.format(full=full), *args]
    if args[0] not in ("--help", "-h") and args[-1] not in ("--help", "-h"):
        argv[3:3] = ["--home", str(home)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    stderr, loaded = done.stderr.rsplit("\nLOADED", 1)
    return done.stdout, stderr, done.returncode, set(loaded.split())


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    home = build_real_store(tmp_path_factory.mktemp("store"), model_cache_dir)
    return home


@pytest.fixture
def env(model_cache_dir: Path) -> dict[str, str]:
    environment = server_env(model_cache_dir)
    environment.pop("COLUMNS", None)
    return environment


@pytest.mark.parametrize("args", FAST + HELPS)
def test_the_fast_path_answers_as_the_click_group_does_without_importing_it(
    home: Path, env: dict[str, str], args: list[str]
) -> None:
    *fast, loaded = run(home, env, args, full=False)
    *full, _ = run(home, env, args, full=True)
    assert fast == full
    assert loaded - {"pydantic"} == set(), loaded
    assert "Traceback" not in fast[1]
    if args in LEAN and full[2] == 0:
        assert "pydantic" not in loaded


def test_after_a_delete_the_fast_path_still_answers_as_the_click_group(
    home: Path, env: dict[str, str], tmp_path: Path
) -> None:
    copy = tmp_path / "store"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    listed = run(copy, env, ["recent", "-n", "1", "--json"], full=True)[0]
    uri = listed.split('"uri": "', 1)[1].split('"', 1)[0]
    assert run(copy, env, ["delete", uri], full=True)[2] == 0
    for args in (["stats"], ["recent", "-n", "20"], ["recent", "--json"], ["export"], ["read", uri]):
        *fast, loaded = run(copy, env, args, full=False)
        *full, _ = run(copy, env, args, full=True)
        assert fast == full
        assert uri not in fast[0]
        assert "lancedb" not in loaded


@pytest.mark.parametrize("args", CLICK)
def test_what_the_fast_path_leaves_to_click_reads_the_same(home: Path, env: dict[str, str], args: list[str]) -> None:
    *fast, _ = run(home, env, args, full=False)
    *full, _ = run(home, env, args, full=True)
    assert fast == full


def test_help_on_a_narrow_terminal_is_clicks_own(home: Path, env: dict[str, str]) -> None:
    env["COLUMNS"] = "60"
    *fast, loaded = run(home, env, ["recent", "--help"], full=False)
    *full, _ = run(home, env, ["recent", "--help"], full=True)
    assert fast == full
    assert "click" in loaded


@pytest.mark.parametrize("args", [["stats"], ["read", "nginx", "--json"], ["export", "--format", "json"]])
def test_a_store_without_a_catalog_is_answered_by_the_store_and_then_fast(
    home: Path, env: dict[str, str], tmp_path: Path, args: list[str]
) -> None:
    copy = tmp_path / "store"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    (copy / "catalog.sqlite").unlink(missing_ok=True)
    *first, loaded = run(copy, env, args, full=False)
    assert "lancedb" in loaded
    *again, loaded = run(copy, env, args, full=False)
    assert again == first
    assert loaded == set()


def test_a_stale_catalog_is_not_read_by_the_lean_commands(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    copy = tmp_path / "store"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    for args in (["read", "nginx"], ["export"]):
        with closing(sqlite3.connect(copy / "catalog.sqlite")) as connection, connection:  # a write it missed
            connection.execute("UPDATE stamps SET version = version - 1 WHERE name = 'messages'")
            connection.execute("UPDATE chats SET title = 'stale' WHERE id = 'nginx'")
        *answer, loaded = run(copy, env, args, full=False)
        assert "stale" not in answer[0]
        assert "lancedb" in loaded


def test_the_stored_help_texts_are_what_the_click_group_prints() -> None:
    assert help_texts() == HELP, "regenerate them: `uv run python -m server.cli_help`"


@pytest.mark.parametrize("columns", [None, "", "0", "60", "200", "wide"])
def test_the_terminal_width_is_read_as_shutil_reads_it(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize("format_", ["jsonl", "json"])
def test_an_export_to_a_file_is_the_click_groups(home: Path, env: dict[str, str], tmp_path: Path, format_: str) -> None:
    written = []
    for full in (False, True):
        out = tmp_path / f"export-{full}.{format_}"
        *answer, loaded = run(home, env, ["export", "--format", format_, "--out", str(out)], full=full)
        written.append((answer[0], answer[1].replace(str(out), "OUT"), answer[2], out.read_bytes()))
        if not full:
            assert loaded - {"pydantic"} == set(), loaded
    assert written[0] == written[1]
    assert written[0][3].count(b'"id"') >= 2


LIGHT = """
import sys
sys.argv[0] = "pastchats"
from server.cli import main
try:
    main()
except SystemExit:
    pass
heavy = ("typing", "html", "pathlib", "logging", "dataclasses", "pydantic", "lancedb", "click")
print("\\nLOADED " + " ".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [["stats"], ["recent"], ["read", "nginx"], ["read", "nginx", "--json", "--around", "2"], ["export", "--out", "-"]],
)
def test_the_lean_commands_import_none_of_the_costly_standard_modules(
    home: Path, env: dict[str, str], args: list[str]
) -> None:
    argv = [sys.executable, "-c", LIGHT, "--home", str(home), *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout
    assert done.stderr.rsplit("\nLOADED", 1)[1].split() == []


def test_a_path_in_another_format_than_named_is_answered_as_the_click_group_answers(
    home: Path, env: dict[str, str], tmp_path: Path
) -> None:
    plain = tmp_path / "chats.json"
    plain.write_text('{"conversations": []}', encoding="utf-8")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a chat", encoding="utf-8")
    cases = [
        ["import", "--format", "claude", str(plain)],
        ["import", "--format=aider", str(notes)],
        ["import", str(notes)],
        ["import", "--format", "codex", str(tmp_path)],
        ["import", "--format", "plain", str(plain), str(tmp_path / "missing.json")],
        ["import", f"{tmp_path}/./chats.json/", "--format", "chatgpt"],
    ]
    for args in cases:
        *fast, loaded = run(home, env, args, full=False)
        *full, _ = run(home, env, args, full=True)
        assert fast == full
        assert fast[2] == 1
        assert fast[1].startswith("Error: ")
        assert loaded - {"pydantic"} == set(), loaded
    assert "it looks like plain (use --format plain" in run(home, env, cases[0], full=False)[1]


def test_search_answers_without_the_mcp_sdk(home: Path, env: dict[str, str]) -> None:
    """`pastchats search` runs the tool's own body (`tools.topic_search`), not the SDK's wrapper."""
    script = LIGHT.replace("heavy = (", 'heavy = ("mcp", "mcp_types", ').replace("LOADED", "HEAVY")
    argv = [sys.executable, "-c", script, "--home", str(home), "search", "nginx"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert "nginx" in done.stdout.lower()
    loaded = done.stderr.rsplit("\nHEAVY", 1)[1].split()
    assert not {"mcp", "mcp_types"} & set(loaded), loaded
