"""Stores for the page's tests: eight chats of several sources and projects, a long one, one holding
secrets, one written in Markdown (code, lists, links), a coding agent's session with tool calls as
Claude Code writes it (read from its fixture by its importer), and a hostile one whose title, text
and link are markup and script."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from importers import registry
from importers.base import ImportReport
from server.settings import Settings
from server.ui.app import build_app
from storage.library import Library
from storage.models import Conversation
from tests.agent_fixtures import FIXTURES
from tests.server.processes import running, serve_command, server_env
from tests.tools.helpers import BASE, chat, library_with

TOKEN = "test-token-0123456789abcdefghijklmnopqrstu"
PORT = 8799  # only in the Host the test client sends: nothing listens
HOSTILE_TITLE = "<script>document.title='pwned'</script>Hostile"
HOSTILE_TEXT = "</div><img src=x onerror=\"document.title='pwned'\"><script>alert(1)</script> hostile payload"
MARKDOWN_ANSWER = """Retry with **exponential backoff**, and *cap* the wait:

```python
import time

def fetch_with_retry(call, tries=5):
    for attempt in range(tries):
        try:
            return call()
        except TimeoutError:
            time.sleep(min(2 ** attempt, 30))
    raise RuntimeError("<script>document.title='pwned'</script> gave up")
```

- keep the first wait short
- add jitter so clients do not retry together

See [the docs](https://docs.python.org/3/library/time.html), [not this](javascript:document.title='pwned')
and [this page's own route](/forget?source=pastchats).

<script>document.title='pwned'</script>"""
AGENT_SESSION = (
    FIXTURES / "claude-code-commands" / "projects" / "-home-ana-src-vite" / "3c1e5f70-0a1b-4c2d-8e3f-4a5b6c7d8e01.jsonl"
)
LONG_PROJECT = "/home/me/src/clients/acme-corporation/infrastructure/billing-service-reconciliation"


def agent_session() -> Conversation:
    """A Claude Code session with tool calls and results, as its importer reads it from the fixture."""
    importer = registry.agent_log("claude-code")
    (conversation,) = importer.read(AGENT_SESSION, ImportReport(path=AGENT_SESSION))
    return conversation


def from_source(conversation: Conversation, source: str) -> Conversation:
    return conversation.model_copy(update={"source": source})


def ui_chats() -> list[Conversation]:
    long_texts = [f"step {i}: tuning the kiln schedule for stoneware glaze, firing {i}" for i in range(120)]
    return [
        from_source(
            chat(
                "claude:nginx",
                ["How do I put nginx in front of Jellyfin as a reverse proxy?", "Use proxy_pass to port 8096."],
                title="Nginx setup",
                project="homelab",
                url="https://claude.ai/chat/nginx",
                updated=BASE + timedelta(days=2),
            ),
            "claude",
        ),
        chat(
            "bread",
            ["My sourdough starter smells of acetone", "Feed it twice a day."],
            title="Sourdough starter",
            updated=BASE,
        ),
        from_source(
            chat(
                "codex:kiln",
                long_texts,
                title="Kiln firing log",
                project="pottery",
                url="file:///home/me/.codex/sessions/kiln.jsonl",
                updated=BASE - timedelta(days=9),
            ),
            "codex",
        ),
        chat(
            "keys",
            ["my deploy token is ghp_R7x2Kq9LmZ4vT8wN3pY6cB1dF5hJ0sA2uXkE, is it safe here?", "Rotate it now."],
            title="Deploy token",
            updated=BASE - timedelta(days=1),
        ),
        chat(
            "hostile",
            [HOSTILE_TEXT, "Here is an answer with <b>bold</b> & <i>tags</i>."],
            title=HOSTILE_TITLE,
            url="javascript:document.title='pwned'",
            updated=BASE - timedelta(days=3),
        ),
        chat(
            "retry",
            ["How do I retry a flaky HTTP call in Python?", MARKDOWN_ANSWER],
            title="Retry with backoff",
            updated=BASE - timedelta(days=4),
        ),
        from_source(
            chat(
                "codex:ledger",
                ["Why do the ledger totals drift by a cent?", "Sum in `Decimal`, round once at the end."],
                title="Ledger rounding drift",
                project=LONG_PROJECT,
                updated=BASE - timedelta(days=5),
            ),
            "codex",
        ),
        agent_session(),
    ]


@pytest.fixture
def ui_library(tmp_path: Path) -> Iterator[Library]:
    library = library_with(tmp_path / "store", ui_chats())
    yield library
    library.close()


@pytest.fixture
def client(ui_library: Library) -> Iterator[TestClient]:
    """The page's application, reached as a browser on this machine reaches it (Host 127.0.0.1:PORT),
    holding the cookie the token's first visit sets."""
    app = build_app(Settings(home=ui_library.home), ui_library, TOKEN, PORT)
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as test_client:
        assert test_client.get(f"/?token={TOKEN}").status_code == 200
        yield test_client


@pytest.fixture
def stranger(ui_library: Library) -> Iterator[TestClient]:
    """The same application, reached without the token."""
    app = build_app(Settings(home=ui_library.home), ui_library, TOKEN, PORT)
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as test_client:
        yield test_client


ADDRESS = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)")


@dataclass
class Served:
    """`pastchats ui --no-browser` running as a user starts it, on a store built with the real model."""

    home: Path
    address: str
    port: int


@contextmanager
def ui_process(home: Path, env: dict[str, str], *extra: str, timeout: float = 120) -> Iterator[Served]:
    args = serve_command(home, "ui", "--no-browser", *extra)
    with running(args, env, ADDRESS, timeout) as found:
        yield Served(home, found.group(0), int(found.group(1)))


@pytest.fixture(scope="module")
def real_home(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    home = tmp_path_factory.mktemp("ui-store")
    library = Library.open(home, cache_dir=model_cache_dir)
    library.import_conversations(ui_chats())
    library.close()
    return home


@pytest.fixture(scope="module")
def served(real_home: Path, model_cache_dir: Path) -> Iterator[Served]:
    with ui_process(real_home, server_env(model_cache_dir)) as ui:
        yield ui
