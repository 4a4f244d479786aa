"""Conversations the store could not index, set aside so they can never block it.

A write that fails on one conversation's data (a time Tantivy cannot hold, a value LanceDB refuses)
would otherwise stay in the journal, and every later command would re-run the failing write. Instead
the conversation is removed from every index and written to `home/quarantine/<when>.jsonl` in the plain
import format, with the reason, so nothing is lost: fix the file and `pastchats import` it again.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from storage.owner_only import make_folder, open_private

log = logging.getLogger(__name__)

# What a conversation's own data can make a write raise (pyarrow's ArrowInvalid is a ValueError,
# ArrowTypeError a TypeError; Tantivy raises ValueError for a date it cannot hold). An OSError (disk
# full, permissions) is the machine's problem, not the conversation's: it propagates and the journal
# keeps the batch for the next writer.
# A MemoryError too: a chat too large to derive in one piece is set aside rather than left in the
# journal, where every later import would try it again first and fail the same way.
DATA_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, MemoryError)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def record_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored conversation row as a plain-format record (what `pastchats import` reads back)."""
    try:
        messages: Any = json.loads(row.get("messages_json") or "[]")
    except ValueError:
        messages = []
    record = {k: _plain(row.get(k)) for k in ("id", "source", "title", "created_at", "updated_at", "project", "url")}
    record["messages"] = messages
    return record


class Quarantine:
    def __init__(self, home: Path):
        self.directory = home / "quarantine"

    def put(self, records: Sequence[Mapping[str, Any]], reason: str) -> Path:
        """Append the records (plain format) with the reason; returns the file they went to."""
        make_folder(self.directory)
        path = self.directory / f"{datetime.now(UTC):%Y-%m-%d}.jsonl"
        # A lone surrogate (what LanceDB refuses) is written as its JSON escape `\ud800`: setting a
        # conversation aside never fails on the text that made it fail.
        with open(path, "a", encoding="utf-8", errors="backslashreplace", opener=open_private) as handle:
            for record in records:
                line = json.dumps({**record, "quarantined": reason}, ensure_ascii=False, default=str)
                handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        log.warning(
            "set aside %d conversation(s) the store cannot index (%s) in %s; fix them and import that file again",
            len(records),
            reason,
            path,
        )
        return path

    def count(self) -> int:
        """How many conversations have been set aside so far (lines in every quarantine file)."""
        if not self.directory.is_dir():
            return 0
        total = 0
        for path in self.directory.glob("*.jsonl"):
            with path.open("rb") as handle:
                total += sum(1 for line in handle if line.strip())
        return total

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
        """Pass every record set aside through `change` (e.g. redaction with newer rules), each file
        replaced whole; returns how many records changed. A line that is not a record stays as it is."""
        changed = 0
        for path in sorted(self.directory.glob("*.jsonl")) if self.directory.is_dir() else []:
            lines = path.read_text(encoding="utf-8").splitlines()
            out = []
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    out.append(line)
                    continue
                new = change(record) if isinstance(record, dict) else record
                changed += new != record
                out.append(json.dumps(new, ensure_ascii=False, default=str))
            if out != lines:
                temporary = path.with_suffix(".jsonl.tmp")
                temporary.write_text("".join(line + "\n" for line in out), encoding="utf-8")
                os.replace(temporary, path)
        return changed
