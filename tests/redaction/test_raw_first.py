"""Every field is redacted as its source wrote it, before anything shortens it: the `.env` an agent read,
a curl line in a tool call, a project folder, a title; and a running reader that meets chats another
process wrote unredacted redacts them before it answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from server.cli import cli
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.redaction import Redaction
from tests.redaction.secrets import ALNUM, made
from tests.redaction.test_store import store_bytes
from tests.storage.helpers import conversation

PASSWORD = "hunter22"
GITHUB = "ghp_" + made(ALNUM, 36)
STRIPE = "sk_live_51" + made(ALNUM, 97)
SESSION = "5d2c9a10-1b2c-4d3e-8f40-000000000001"


def record(n: int, kind: str, message: dict[str, object], cwd: str) -> str:
    """One line of a Claude Code session log, in the shape Claude Code 2.1 writes."""
    return json.dumps(
        {
            "parentUuid": None if n == 0 else f"00000000-0000-4000-8000-{n - 1:012d}",
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": SESSION,
            "version": "2.1.20",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-01-27T07:19:{n:02d}.000Z",
        }
    )


def assistant(block: dict[str, object]) -> dict[str, object]:
    return {
        "model": "claude-opus-4-5-20251101",
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [block],
    }


def agent_home(tmp_path: Path) -> Path:
    cwd = f"/home/ana/tmp/{GITHUB}"
    env_file = "\n".join(
        f"{n:>6}→{line}"
        for n, line in enumerate(
            ["APP_ENV=production", "DB_HOST=db.internal", f"DB_PASSWORD={PASSWORD}", "LOG_LEVEL=info"], 1
        )
    )
    curl = f'curl -sS https://api.stripe.com/v1/charges -H "Authorization: Bearer {STRIPE}" -d amount=2000'
    lines = [
        record(0, "user", {"role": "user", "content": f"the app fails on boot; the db password is {PASSWORD}"}, cwd),
        record(
            1,
            "assistant",
            assistant({"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": ".env"}}),
            cwd,
        ),
        record(
            2,
            "user",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": env_file}]},
            cwd,
        ),
        record(
            3, "assistant", assistant({"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": curl}}), cwd
        ),
        record(
            4, "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "{}"}]}, cwd
        ),
        record(
            5,
            "assistant",
            assistant({"type": "text", "text": "The charge endpoint answers; the boot failure is the db host."}),
            cwd,
        ),
    ]
    user_home = tmp_path / "user"
    folder = user_home / ".claude" / "projects" / "-home-ana-tmp-project"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return user_home


@pytest.mark.usefixtures("hash_embedder")
def test_an_agent_s_env_read_curl_call_and_project_folder_are_redacted_before_they_are_shortened(
    tmp_path: Path,
) -> None:
    env = {"PASTCHATS_USER_HOME": str(agent_home(tmp_path)), "CLAUDE_CONFIG_DIR": None, "XDG_CONFIG_HOME": None}
    home = tmp_path / "store"
    runner = CliRunner(env=env)  # type: ignore[arg-type]
    synced = runner.invoke(cli, ["--home", str(home), "sync"])
    assert synced.exit_code == 0, synced.output
    exported = runner.invoke(cli, ["--home", str(home), "export"]).output
    outputs = exported + runner.invoke(cli, ["--home", str(home), "stats", "--json"]).output
    outputs += runner.invoke(cli, ["--home", str(home), "recent"]).output
    outputs += runner.invoke(cli, ["--home", str(home), "search", "db host boot"]).output
    stored = store_bytes(home)
    for secret in (PASSWORD, GITHUB, STRIPE):
        for part in {secret, secret[-12:]}:
            assert part not in outputs
            assert part.encode() not in stored
    chat = json.loads(next(line for line in exported.splitlines() if line.startswith("{")))
    texts = [m["text"] for m in chat["messages"]]
    # The same password where the user said it and in the file the agent read: one secret, one number.
    assert texts[0].endswith("the db password is [redacted: prose-password #1]")
    result = next(t for t in texts if t.startswith("[tool result:") and "DB_HOST" in t)
    assert "DB_PASSWORD=[redacted: prose-password #1]" in result
    assert "LOG_LEVEL=info" in result  # the rest of what the agent read is still there, on one line
    call = next(t for t in texts if "api.stripe.com" in t)
    assert "[redacted: " in call
    assert chat["project"] == "/home/ana/tmp/[redacted: github-pat #1]"


def test_a_reader_redacts_what_another_process_wrote_unredacted_before_it_answers(tmp_path: Path) -> None:
    home = tmp_path / "store"
    reader = Library.open(home, embedder=HashEmbedder())
    reader.import_conversations([conversation("a", ["nginx reverse proxy notes", "use proxy_pass"])])
    assert reader.recent(n=5).chats

    writer = Library.open(home, embedder=HashEmbedder(), redaction=Redaction(enabled=False))
    secret_chat = conversation("keys", [f"the deploy token for the billing job is {GITHUB}", "rotate it"])
    writer.import_conversations([secret_chat])
    writer.close()
    assert GITHUB.encode() in store_bytes(home)  # written verbatim by the other process

    found = reader.search("deploy token billing job")
    assert [hit.uri for hit in found.chats][:1] == ["keys"]
    assert GITHUB not in found.model_dump_json()
    assert GITHUB not in reader.read_chat("keys").messages[0].text
    assert reader.read_chat("keys").messages[0].text.endswith("[redacted: github-pat #1]")
    # The truth and the catalog hold it no more; the keyword index's superseded segment goes when no
    # searcher of this process holds it any longer.
    truth = b"".join(p.read_bytes() for p in (home / "lancedb").rglob("*") if p.is_file())
    assert GITHUB.encode() not in truth + (home / "catalog.sqlite").read_bytes()
    reader.close()
