"""No secret a chat held reaches a tool, a command or a file of the store (the archive of agent logs
alone keeps the files as their tools wrote them); every chat is still found by its other words."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from storage.library import Library
from storage.redaction import Redaction
from storage.upkeep.store_meta import STORE_FORMAT
from tests.redaction.secrets import SECRETS, in_context
from tests.storage.helpers import conversation, set_format
from tests.tools.helpers import call, server_for, text_of

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
JSON_SAFE = [(kind, secret) for kind, secret in SECRETS if kind != "private-key" and secret.isprintable()]
# Each source's files as its tool writes them, a secret planted in their messages' words.
SOURCES = [
    ("chatgpt/single", " the ", "slack-bot-token"),
    ("claude/export-2024", " a ", "openai-api-key"),
    ("claude-code-2.1", " the ", "github-pat"),
    ("codex-2026", " the ", "aws-access-token"),
    ("gemini-home/.gemini", " the ", "stripe-access-token"),
    ("aider", " the ", "gitlab-pat"),
]


def run(home: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    result = CliRunner(env=env).invoke(cli, ["--home", str(home), *args])
    assert result.exit_code == 0, result.output
    return result


def imported(summary: str) -> tuple[str, ...]:
    return re.findall(r"(\d+) new, \d+ updated, \d+ unchanged, (\d+) skipped", summary)[0]


def store_bytes(home: Path) -> bytes:
    """Every file of the store but the archive (which keeps the tools' files as they were)."""
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file() and "archive" not in p.parts)


def planted_copy(tmp_path: Path, fixture: str, word: str, secret: str) -> Path:
    source = FIXTURES / fixture
    copy = tmp_path / "sources" / fixture
    if source.is_dir():
        shutil.copytree(source, copy)
    else:
        copy.parent.mkdir(parents=True)
        shutil.copy2(source, copy)
    planted = 0
    for path in [copy] if copy.is_file() else sorted(p for p in copy.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        planted += text.count(word)
        path.write_text(text.replace(word, f"{word.rstrip()} {secret} "), encoding="utf-8")
    assert planted, f"{fixture} holds no {word!r} to plant a secret in"
    return copy


@pytest.mark.usefixtures("hash_embedder")
def test_no_source_s_secret_reaches_the_store_and_every_chat_still_imports(tmp_path: Path) -> None:
    home = tmp_path / "store"
    wanted: dict[str, str] = {}
    for fixture, word, kind in SOURCES:
        secret = dict(SECRETS)[kind]
        plain = run(tmp_path / "plain", "import", str(FIXTURES / fixture)).output
        planted = run(home, "import", str(planted_copy(tmp_path, fixture, word, secret))).output
        assert "secrets redacted" in planted, planted
        assert kind in planted, planted
        # The same chats as without the secret: redaction never costs a chat.
        assert imported(plain) == imported(planted) != ("0", "0")
        wanted[kind] = secret
    stored = store_bytes(home)
    stats = json.loads(run(home, "stats", "--json").output)
    for kind, secret in wanted.items():
        assert secret.encode() not in stored
        assert any(kind in kinds for kinds in stats["redacted"].values()), stats["redacted"]
    exported = run(home, "export").output
    assert "[redacted: " in exported
    assert all(secret not in exported for secret in wanted.values())


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Library:
    """One chat a kind, each about its own topic and holding its secret in every context."""
    home = tmp_path_factory.mktemp("planted")
    library = Library.open(home, cache_dir=model_cache_dir)
    chats = [
        conversation(f"chat-{i}", [f"Notes on the {topic(i)} integration", *in_context(kind, secret)], project="ops")
        for i, (kind, secret) in enumerate(SECRETS)
    ]
    library.import_conversations(chats)
    return library


def topic(i: int) -> str:
    return ["weather", "billing", "geocoding", "newsletter", "payroll", "invoicing", "telemetry", "search"][i % 8] + (
        f" service {i}"
    )


def secrets_in(text: str) -> list[str]:
    return [kind for kind, secret in SECRETS if secret in text or secret[:40] in text]


@pytest.mark.anyio
async def test_no_tool_shows_a_secret_and_each_chat_is_found_by_its_other_words(planted: Library) -> None:
    server = server_for(planted, budget=50_000)
    for i, (_, secret) in enumerate(SECRETS):
        found = text_of(await call(server, "conversation_search", {"query": f"{topic(i)} integration"}))
        assert f"uri='chat-{i}'" in found
        assert secrets_in(found) == []
        query = secret.splitlines()[0][:60]
        by_secret = text_of(await call(server, "conversation_search", {"query": query}))
        assert secrets_in(by_secret.replace(query, "")) == []  # the query itself is echoed, nothing stored
        read = text_of(await call(server, "read_chat", {"uri": f"chat-{i}"}))
        assert "[redacted: " in read
        assert secrets_in(read) == []
    recent = text_of(await call(server, "recent_chats", {"n": 20}))
    assert secrets_in(recent) == []
    assert secrets_in(store_bytes(planted.home).decode("utf-8", "replace")) == []
    counts = planted.stats().redacted["pastchats"]
    assert set(counts) >= {kind for kind, _ in SECRETS} - {"generic-api-key"}
    assert counts["private-key"] == 2  # two distinct keys: two placeholders, each counted once


def test_a_store_written_verbatim_is_redacted_once_when_redaction_is_on_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from storage.embedding.embedder import HashEmbedder

    kind, secret = JSON_SAFE[1]
    chats = [
        conversation("keys", [f"the deploy token is {secret}", "rotate it"], title="deploy token"),
        conversation("x", ["nothing"]),
    ]
    home = tmp_path / "store"
    verbatim = Library.open(home, embedder=HashEmbedder(), redaction=Redaction(enabled=False))
    verbatim.import_conversations(chats)
    assert secret.encode() in store_bytes(home)
    assert json.loads((home / "store.json").read_text())["redaction"] == "off"
    verbatim.close()

    with caplog.at_level("WARNING"):
        library = Library.open(home, embedder=HashEmbedder())
    assert "redacted 1 secret(s) in 1 chat(s)" in caplog.text
    assert secret.encode() not in store_bytes(home)
    assert library.stats().redacted == {"pastchats": {kind: 1}}
    assert library.read_chat("keys").messages[0].text == f"the deploy token is [redacted: {kind} #1]"
    assert json.loads((home / "store.json").read_text())["redaction"] == Redaction().stamp
    library.close()
    caplog.clear()
    with caplog.at_level("WARNING"):
        Library.open(home, embedder=HashEmbedder()).close()
    assert "redact" not in caplog.text  # once


def test_a_store_of_the_format_before_is_redacted_on_upgrade_without_the_model(tmp_path: Path) -> None:
    from storage.embedding.embedder import HashEmbedder

    _, secret = JSON_SAFE[0]
    home = tmp_path / "store"
    old = Library.open(home, embedder=HashEmbedder(), redaction=Redaction(enabled=False))
    old.import_conversations([conversation("keys", [f"AWS key {secret} for the backups bucket"])])
    old.close()
    set_format(home, STORE_FORMAT - 1)
    meta = json.loads((home / "store.json").read_text())
    del meta["redaction"]
    (home / "store.json").write_text(json.dumps(meta))

    result = CliRunner().invoke(cli, ["--home", str(home), "search", "backups bucket"])
    assert result.exit_code == 0, result.output
    assert "[redacted: aws-access-token #1]" in result.output
    assert secret not in result.output
    assert json.loads((home / "store.json").read_text())["format"] == STORE_FORMAT
    assert secret.encode() not in store_bytes(home)


@pytest.mark.usefixtures("hash_embedder")
def test_redaction_off_and_the_allow_list_are_read_from_the_environment(tmp_path: Path) -> None:
    kind, secret = JSON_SAFE[1]
    source = tmp_path / "chats.jsonl"
    source.write_text(json.dumps({"id": "k", "messages": [{"role": "user", "text": f"token {secret} ok"}]}) + "\n")
    allow = {"PASTCHATS_REDACT_ALLOW": json.dumps([kind])}
    allowed = run(tmp_path / "a", "import", str(source), env=allow)
    assert "redacted" not in allowed.output
    assert secret in run(tmp_path / "a", "read", "k", env=allow).output
    # Without it (a client that starts the server in another environment), the store is redacted.
    assert "[redacted: github-pat #1]" in run(tmp_path / "a", "read", "k").output
    off = run(tmp_path / "b", "import", str(source), env={"PASTCHATS_REDACT": "off"})
    assert "redacted" not in off.output
    assert "redaction is OFF" in run(tmp_path / "b", "stats", env={"PASTCHATS_REDACT": "off"}).output
    bad = CliRunner(env={"PASTCHATS_REDACT_ALLOW": '["(["]'}).invoke(cli, ["--home", str(tmp_path / "c"), "stats"])
    assert bad.exit_code != 0
    assert "Traceback" not in bad.output
    assert "redact_allow" in bad.output


@pytest.mark.usefixtures("hash_embedder")
def test_the_archive_keeps_agent_logs_as_written_and_reindex_redacts_as_import_does(tmp_path: Path) -> None:
    kind, secret = "github-pat", dict(SECRETS)["github-pat"]
    user_home = tmp_path / "user"
    logs = planted_copy(tmp_path, "claude-code-2.1", " the ", secret)
    shutil.copytree(logs, user_home / ".claude")
    env = {"PASTCHATS_USER_HOME": str(user_home), "CLAUDE_CONFIG_DIR": None, "XDG_CONFIG_HOME": None}
    home = tmp_path / "store"
    synced = run(home, "sync", env=env)  # type: ignore[arg-type]
    assert f"{kind} " in synced.output
    archive = b"".join(p.read_bytes() for p in (home / "archive").rglob("*") if p.is_file())
    assert secret.encode() in archive  # the agent's own file, kept as it wrote it
    assert secret.encode() not in store_bytes(home)
    reindexed = run(home, "reindex", env=env)  # type: ignore[arg-type]
    assert "Archive:" in reindexed.output
    assert secret.encode() not in store_bytes(home)
    assert "[redacted: github-pat #1]" in run(home, "export").output


def test_chats_set_aside_before_redaction_are_redacted_with_the_store(tmp_path: Path) -> None:
    from storage.embedding.embedder import HashEmbedder
    from storage.writing.quarantine import Quarantine

    secret = dict(SECRETS)["gitlab-pat"]
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder(), redaction=Redaction(enabled=False)).close()
    record = {
        "id": "odd",
        "source": "pastchats",
        "title": f"token {secret}",
        "messages": [{"role": "user", "text": secret}],
    }
    Quarantine(home).put([record], "cannot be indexed: a date Tantivy cannot hold")
    Library.open(home, embedder=HashEmbedder()).close()
    kept = json.loads(next((home / "quarantine").glob("*.jsonl")).read_text(encoding="utf-8"))
    assert kept["title"] == "token [redacted: gitlab-pat #1]"
    assert kept["messages"] == [{"role": "user", "text": "[redacted: gitlab-pat #1]"}]
    assert kept["quarantined"] == "cannot be indexed: a date Tantivy cannot hold"


def test_a_secret_in_a_command_an_agent_ran_is_redacted_in_its_touches_too(tmp_path: Path) -> None:
    """A command line is kept whole as what a chat ran: its secret is replaced there as in the text, and
    a store written verbatim has it taken out of the touches when redaction is on again."""
    from dataclasses import replace

    from storage.embedding.embedder import HashEmbedder
    from storage.models import Touch

    kind, secret = JSON_SAFE[1]
    ran = Touch("ran", f"curl -H 'Authorization: token {secret}' https://api.example.com/deploy")
    edited = Touch("edited", f"/srv/app/{secret}/settings.py")
    chat = conversation("deploy", ["deploy it", "done"], title="deploy")
    chat = chat.model_copy(update={"messages": [chat.messages[0], replace(chat.messages[1], touches=(ran, edited))]})

    redacted, found = Redaction().redact(chat)
    assert found == {kind: 1}
    assert [t.target for t in redacted.messages[1].touches] == [
        f"curl -H 'Authorization: token [redacted: {kind} #1]' https://api.example.com/deploy",
        f"/srv/app/[redacted: {kind} #1]/settings.py",
    ]

    home = tmp_path / "store"
    verbatim = Library.open(home, embedder=HashEmbedder(), redaction=Redaction(enabled=False))
    verbatim.import_conversations([chat])
    assert secret.encode() in store_bytes(home)
    verbatim.close()
    library = Library.open(home, embedder=HashEmbedder())
    assert secret.encode() not in store_bytes(home)
    assert library.touching("settings.py") == {"deploy"}
    library.close()
