"""The shared store through the commands and the server a person runs: `pastchats sync` sends the
agent logs' chats redacted (whatever `PASTCHATS_REDACT` says) and never the archive; a store that
cannot be reached is one line, and search still answers, saying so; `doctor` names the store and
whether it answers; a running server shows another machine's new chat within 30 s."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pyarrow.fs as pafs
import pytest
from mcp import Client, StdioServerParameters

from bench.corpus.agent_writes import CHAT_IDS, append_exchange, make_agent_home
from bench.object_store import KEY, SECRET, Seaweed
from storage.library import Library
from storage.stores.shared_store import SharedStore
from tests.conftest import REPO_ROOT
from tests.redaction.secrets import SECRETS
from tests.shared_store.conftest import dead_endpoint
from tests.tools.helpers import block_uris, chat, text_of

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

FOLLOW_BUDGET = 30.0  # seconds from another machine's sync to a running server showing its chat


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def machine_env(tmp_path: Path, seaweed: Seaweed, uri: str, model_cache_dir: Path, **extra: str) -> dict[str, str]:
    """A machine's environment: its own user home (with agents' logs), store, and the AWS variables."""
    user = tmp_path / "user"
    if not user.exists():
        make_agent_home(user)
    return {
        "HOME": str(user),
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO_ROOT),
        "PASTCHATS_HOME": str(tmp_path / "store"),
        "PASTCHATS_STORE_URI": uri,
        "FASTEMBED_CACHE_PATH": str(model_cache_dir),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(tmp_path / "cache")),
        **seaweed.env,
        **extra,
    }


def pastchats(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "server.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)


def bucket_objects(seaweed: Seaweed, uri: str) -> dict[str, bytes]:
    """Every object under the store's prefix, read back whole."""
    s3 = pafs.S3FileSystem(
        access_key=KEY, secret_key=SECRET, endpoint_override=seaweed.endpoint, scheme="http", region="us-east-1"
    )
    prefix = uri.removeprefix("s3://")
    out: dict[str, bytes] = {}
    for info in s3.get_file_info(pafs.FileSelector(prefix, recursive=True)):
        if info.type == pafs.FileType.File:
            with s3.open_input_stream(info.path) as stream:
                out[info.path] = stream.read()
    return out


@pytest.mark.parametrize("redact", ["on", "off"])
def test_sync_sends_every_chat_redacted_and_never_the_archive(
    aws: Seaweed, tmp_path: Path, model_cache_dir: Path, redact: str
) -> None:
    kind, secret = SECRETS[0]
    uri = aws.uri()
    env = machine_env(tmp_path, aws, uri, model_cache_dir, PASTCHATS_REDACT=redact)
    append_exchange(Path(env["HOME"]), "claude-code", f"deploy with key {secret} please", "Done.", 1)

    done = pastchats(env, "sync")
    assert done.returncode == 0, done.stderr
    new = re.search(r"Chats: (\d+) new", done.stdout)
    assert new is not None
    assert f"Shared store: {new[1]} sent, 0 received" in done.stdout

    objects = bucket_objects(aws, uri)
    prefix = uri.removeprefix("s3://")
    assert objects
    assert all(path.startswith(f"{prefix}/conversations.lance/") for path in objects)  # the table, nothing else
    assert not [path for path, data in objects.items() if secret.encode() in data]
    archive = Path(env["PASTCHATS_HOME"]) / "archive"
    archived = [p for p in archive.rglob("*") if p.is_file()]
    assert archived  # the private copies are kept here...
    assert not [p for p in archived if any(p.name in path for path in objects)]  # ...and never sent
    rows = list(SharedStore(uri).rows([CHAT_IDS["claude-code"]]))
    assert f"[redacted: {kind}" in rows[0]["messages_json"]
    assert secret not in rows[0]["messages_json"]


def test_an_unreachable_store_is_one_line_and_search_answers_from_this_machine(
    aws: Seaweed, tmp_path: Path, model_cache_dir: Path
) -> None:
    uri = aws.uri()
    env = machine_env(tmp_path, aws, uri, model_cache_dir)
    assert pastchats(env, "sync").returncode == 0
    doctor = pastchats(env, "doctor", "--cli")
    held = len(SharedStore(uri).stamps())
    assert held >= len(CHAT_IDS)
    assert f"ok   shared store: {uri} at {aws.endpoint} answers: {held} chat(s)" in doctor.stdout

    away = {**env, "AWS_ENDPOINT_URL": dead_endpoint()}
    sync = pastchats(away, "sync")
    assert sync.returncode == 1
    assert "Traceback" not in sync.stderr
    assert sync.stderr.strip().splitlines() == [
        f"Error: the shared store {uri} could not be reached (connection refused); this machine's chats are "
        "still searchable. Check the AWS_* variables and the network, then run `pastchats doctor`"
    ]
    search = pastchats(away, "search", "glimmer OR deploy OR configure")
    assert search.returncode == 0, search.stderr
    assert "Traceback" not in search.stderr
    assert block_uris(search.stdout)
    assert f"Note: the shared store {uri} could not be reached (connection refused" in search.stdout
    doctor = pastchats(away, "doctor", "--cli")
    assert f"BAD  shared store: {uri} at {away['AWS_ENDPOINT_URL']} cannot be reached: connection refused" in (
        doctor.stdout
    )

    search = pastchats(env, "search", "configure")  # reachable again: no note
    assert "could not be reached" not in search.stdout


@pytest.mark.parametrize("sync", ["true", "false"])
async def test_a_running_server_shows_another_machines_new_chat_within_30_seconds(
    aws: Seaweed, tmp_path: Path, model_cache_dir: Path, sync: str
) -> None:
    """With its own agents' logs followed or not (`PASTCHATS_SYNC`), a server follows the shared store."""
    uri = aws.uri()
    env = machine_env(tmp_path / "desktop", aws, uri, model_cache_dir, PASTCHATS_SYNC=sync)
    own = set(CHAT_IDS.values()) if sync == "true" else set()
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "serve"], env=env)
    laptop = Library.open(tmp_path / "laptop", load_model=False)
    laptop.share(SharedStore(uri))
    async with Client(params, mode="legacy") as client:
        with anyio.fail_after(120):  # the desktop's own agents' logs, synced and sent
            while not own <= SharedStore(uri).stamps().keys():
                await anyio.sleep(0.5)
        for word in ("orchid", "marzipan"):
            laptop.import_conversations([chat(f"laptop-{word}", [f"How do I repot an {word}?", "Use bark mix."])])
            laptop.exchange()
            start = time.monotonic()
            with anyio.fail_after(FOLLOW_BUDGET + 30):
                while True:
                    result = await client.call_tool("conversation_search", {"query": f"repot {word}"})
                    if f"laptop-{word}" in block_uris(text_of(result)):
                        break
                    await anyio.sleep(0.5)
            assert time.monotonic() - start < FOLLOW_BUDGET
        recent = text_of(await client.call_tool("recent_chats", {"n": 10}))
        assert {"laptop-orchid", "laptop-marzipan", *own} <= set(block_uris(recent))
    if sync == "false":  # its own agents' logs left alone: only what the laptop sent
        assert set(block_uris(recent)) == {"laptop-orchid", "laptop-marzipan"}
    assert SharedStore(uri).stamps().keys() >= {"laptop-orchid", "laptop-marzipan", *own}


def test_two_syncs_of_one_home_folder_at_once_one_killed_converge(
    aws: Seaweed, tmp_path: Path, model_cache_dir: Path
) -> None:
    """Two machines whose agents write to one home folder (a network home) run `pastchats sync` at
    once and one is killed with SIGKILL; after each syncs again, every chat is in the bucket once."""
    uri = aws.uri()
    laptop = machine_env(tmp_path / "laptop", aws, uri, model_cache_dir)
    desktop = {**machine_env(tmp_path / "desktop", aws, uri, model_cache_dir), "HOME": laptop["HOME"]}
    command = [sys.executable, "-m", "server.cli", "sync", "-q"]
    survivor = subprocess.Popen(command, env=desktop, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    victim = subprocess.Popen(command, env=laptop, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(4.0)  # the process has started, read the logs and is writing
    victim.kill()
    victim.wait(timeout=30)
    assert survivor.wait(timeout=300) == 0, survivor.communicate()[1]
    for env in (laptop, desktop):
        again = pastchats(env, "sync", "-q")
        assert again.returncode == 0, again.stderr

    table = SharedStore(uri)._open()
    ids = table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert set(CHAT_IDS.values()) <= set(ids)
    for env in (laptop, desktop):
        library = Library.open(Path(env["PASTCHATS_HOME"]), load_model=False)
        assert {chat.uri for chat in library.recent(n=20).chats} == set(ids)
