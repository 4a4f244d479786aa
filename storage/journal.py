"""`journal.json`, read: what a write or a delete began and did not finish (`storage.locks` keeps it).

Apart from the lock so that a reader (the catalog, for `stats` and `recent`) can check it without
importing filelock (~0.1 s of start-up).
"""

from __future__ import annotations

import json
import os

FILE = "journal.json"
LISTS = ("conversations", "deleting", "deleted")


def load_journal(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The journal's lists (each empty when missing); a missing or unreadable journal is empty."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.loads(handle.read())
    except (FileNotFoundError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    out: dict[str, list[str]] = {}
    for name in LISTS:
        value = data.get(name)
        out[name] = [x for x in value if isinstance(x, str)] if isinstance(value, list) else []
    return out
