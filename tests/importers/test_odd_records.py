"""Odd records cost only themselves: a lone surrogate, a record nested 100,000 deep, ids no one could
type back, and ids that belong to another format's chats. Imported through `pastchats import`, into a
real store on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
CLAUDE_EXPORT = FIXTURES / "claude" / "export-2025" / "conversations.json"
CLAUDE_ID = "claude:8f1c0000-0000-4000-8000-000000000010"


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    def open_library(settings: Settings, **_: object) -> Library:
        return Library.open(settings.home, embedder=HashEmbedder())

    monkeypatch.setattr("server.services.opening.open_library", open_library)


def run(home: Path, *args: str) -> Result:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def record(cid: Any, text: str = "hello", **fields: Any) -> dict[str, Any]:
    return {"id": cid, "messages": [{"role": "user", "text": text}, {"role": "assistant", "text": "ok"}], **fields}


def jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    # json.dumps writes a lone surrogate as the escape `\ud800`, as real exports do
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def imported(home: Path, *args: str) -> dict[str, Any]:
    result = run(home, "import", *args, "--json")
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def skips(summary: dict[str, Any]) -> list[str]:
    return [f"{s['where']}: {s['reason']}" for source in summary["sources"] for s in source["conversations_skipped"]]


def notes(summary: dict[str, Any]) -> list[str]:
    return [note for source in summary["sources"] for note in source["notes"]]


def stored(home: Path, uri: str) -> str:
    result = run(home, "read", uri)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_lone_surrogate_is_replaced_and_reported_and_the_chats_after_it_are_imported(tmp_path: Path) -> None:
    source = jsonl(
        tmp_path / "chats.jsonl",
        [record("a1", "alpha first"), record("a2", "bad \ud800 text", title="odd \udfff title"), record("a3", "gamma")],
    )
    summary = imported(tmp_path / "store", str(source), "--format", "plain")
    assert summary["sources"][0]["conversations_new"] == 3, summary
    assert any("lone surrogates" in note for note in notes(summary)), summary
    assert "bad \ufffd text" in stored(tmp_path / "store", "a2")
    assert "gamma" in stored(tmp_path / "store", "a3")
    assert not (tmp_path / "store" / "quarantine").exists()


def test_a_first_line_nested_100000_deep_costs_only_itself(tmp_path: Path) -> None:
    deep = '{"id": "deep", "messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
    source = tmp_path / "chats.jsonl"
    source.write_text(deep + "\n" + "".join(json.dumps(record(f"g{i}", f"good {i}")) + "\n" for i in range(3)))
    summary = imported(tmp_path / "store", str(source), "--format", "plain")
    assert summary["sources"][0]["conversations_new"] == 3, summary
    assert [s for s in skips(summary) if "line 1" in s and "nested too deeply" in s], summary
    assert "good 2" in stored(tmp_path / "store", "g2")


@pytest.mark.parametrize(
    ("bad_id", "reason"),
    [
        ("   ", "empty or only whitespace"),
        ("two\nlines", "a line break"),
        ("tab\there", "U+0009"),
        ("rlo\u202eevil", "U+202E"),
        ("lone\ud800", "U+D800"),
    ],
)
def test_an_id_no_one_could_type_back_is_rejected_with_the_reason(tmp_path: Path, bad_id: str, reason: str) -> None:
    source = jsonl(tmp_path / "chats.jsonl", [record(bad_id), record("fine")])
    summary = imported(tmp_path / "store", str(source))
    assert summary["sources"][0]["conversations_new"] == 1, summary
    assert [s for s in skips(summary) if reason in s and "id" in s], summary
    for line in skips(summary):
        assert line.isprintable(), repr(line)


def test_an_id_with_surrounding_spaces_is_stripped_and_can_be_read_and_deleted(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "chats.jsonl", [record("  padded \t")])
    home = tmp_path / "store"
    summary = imported(home, str(source))
    assert summary["sources"][0]["conversations_new"] == 1, summary
    assert "hello" in stored(home, "padded")
    assert run(home, "delete", "padded").exit_code == 0
    assert run(home, "read", "padded").exit_code != 0


def test_a_plain_record_cannot_take_over_a_chat_another_format_imported(tmp_path: Path) -> None:
    home = tmp_path / "store"
    assert imported(home, str(CLAUDE_EXPORT))["sources"][0]["conversations_new"] == 1
    original = stored(home, CLAUDE_ID)
    forged = jsonl(
        tmp_path / "forged.jsonl",
        [
            record(CLAUDE_ID, "forged text", source="claude"),
            record("claude:not-stored-yet", "restored", source="claude"),
        ],
    )
    summary = imported(home, str(forged))
    assert summary["sources"][0]["conversations_new"] == 1, summary  # a chat the store lacks is restored
    assert [s for s in skips(summary) if CLAUDE_ID in s and "pastchats delete" in s], summary
    assert stored(home, CLAUDE_ID) == original
    assert "forged text" not in original

    # Deleting it first is the deliberate way to replace it; the Claude export itself still updates it.
    assert run(home, "delete", CLAUDE_ID).exit_code == 0
    assert imported(home, str(forged))["sources"][0]["conversations_new"] == 1
    assert "forged text" in stored(home, CLAUDE_ID)
    assert imported(home, str(CLAUDE_EXPORT))["sources"][0]["conversations_updated"] == 1
    assert stored(home, CLAUDE_ID) == original
