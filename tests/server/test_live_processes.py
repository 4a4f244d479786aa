"""Live sync between real processes: a running server finds what an agent appended seconds ago, and a
watcher killed with SIGKILL is replaced by another process with nothing lost or imported twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from bench.corpus.agent_writes import CHAT_IDS, append_exchange, make_agent_home
from server.services.sync.watching import TAKEOVER_POLL, watch_status
from storage.library import Library
from storage.upkeep.health import inspect
from tests.tools.helpers import block_uris, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

LIVE_BUDGET = 5.0  # seconds from an append to `conversation_search` finding it


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def minimal_env(tmp_path: Path, model_cache_dir: Path) -> dict[str, str]:
    """What a desktop client gives the server (HOME, PATH) plus the store and the model's cache: the
    agents' logs are found in HOME, where the agents keep them."""
    home = make_agent_home(tmp_path / "user")
    return {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "PASTCHATS_HOME": str(tmp_path / "store"),
        "FASTEMBED_CACHE_PATH": str(model_cache_dir),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(tmp_path / "cache")),
    }


async def test_what_claude_code_codex_and_gemini_append_is_found_by_a_running_server_within_seconds(
    tmp_path: Path, model_cache_dir: Path
) -> None:
    env = minimal_env(tmp_path, model_cache_dir)
    home = Path(env["HOME"])
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "serve"], env=env)
    async with Client(params, mode="legacy") as client:
        with anyio.fail_after(120):  # the first sync: every session already there
            while True:
                result = await client.call_tool("recent_chats", {"n": 20})
                if not result.is_error and set(CHAT_IDS.values()) <= set(block_uris(text_of(result))):
                    break
                await anyio.sleep(0.1)
        for n, (agent, word) in enumerate(
            [("claude-code", "glimmerfax"), ("codex", "tundrabolt"), ("gemini", "vexilloid")]
        ):
            append_exchange(home, agent, f"How do I configure the {word} option?", f"Set {word} to true.", n)
            start = time.monotonic()
            with anyio.fail_after(30):
                while True:
                    result = await client.call_tool("conversation_search", {"query": word})
                    text = text_of(result)
                    if CHAT_IDS[agent] in block_uris(text) and word in text:  # found for its word
                        break
                    await anyio.sleep(0.05)
            assert time.monotonic() - start < LIVE_BUDGET, f"{agent}: {time.monotonic() - start:.1f} s"
    assert watch_status(Path(env["PASTCHATS_HOME"])) is None  # the server has exited: nobody watches


class Watching:
    """`pastchats sync --watch` processes on one store, and what each has said on stderr."""

    ARGS = (sys.executable, "-m", "server.cli", "sync", "--watch")

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.processes: dict[int, subprocess.Popen[str]] = {}
        self.said: dict[int, list[str]] = {}

    def start(self) -> int:
        process = subprocess.Popen(
            self.ARGS, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.processes[process.pid] = process
        lines = self.said[process.pid] = []

        def pump() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                lines.append(line)

        threading.Thread(target=pump, daemon=True).start()
        return process.pid

    def standing_by(self, pid: int) -> bool:
        return any("taking over when it exits" in line for line in self.said[pid])

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        self.processes.pop(pid).wait()

    def stop(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGINT)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for(condition: object, timeout: float) -> float:
    start = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - start < timeout, f"not within {timeout} s"
        time.sleep(0.1)
    return time.monotonic() - start


def found(store: Path, word: str) -> list[str]:
    library = Library.open(store, load_model=False, heal=False)
    return [chat.uri for chat in library.search(word, mode="keyword").chats]


def test_a_watcher_killed_with_sigkill_is_replaced_and_nothing_is_lost_or_imported_twice(
    tmp_path: Path, model_cache_dir: Path
) -> None:
    env = minimal_env(tmp_path, model_cache_dir)
    home, store = Path(env["HOME"]), Path(env["PASTCHATS_HOME"])
    watching = Watching(env)
    try:
        for _ in range(2):
            watching.start()
        wait_for(lambda: CHAT_IDS["codex"] in found(store, "pagination"), 120)
        questions = []
        for n, word in enumerate(["firstkill", "secondkill", "thirdkill"]):
            status = watch_status(store)
            assert status is not None
            (standby,) = set(watching.processes) - {status.pid}
            wait_for(lambda s=standby: watching.standing_by(s), 120)  # started, and asking for the turn
            questions.append(f"Where did the {word} go?")
            append_exchange(home, "claude-code", questions[-1], f"The {word} went home.", n)
            time.sleep(0.4 * n)  # killed before, during or after the sync of the append
            watching.kill(status.pid)
            taken = wait_for(lambda s=standby: (now := watch_status(store)) is not None and now.pid == s, 30)
            assert taken < TAKEOVER_POLL + 1.5
            wait_for(lambda w=word: found(store, w) == [CHAT_IDS["claude-code"]], 30)
            watching.start()  # the next one to stand by
    finally:
        watching.stop()
    library = Library.open(store, load_model=False, heal=False)
    texts = [message.text for message in library.get(CHAT_IDS["claude-code"]).messages]
    assert [texts.count(question) for question in questions] == [1, 1, 1]
    health = inspect(store)
    assert health.interrupted_writes == 0
    assert health.unfindable == 0
    assert health.problems == []
