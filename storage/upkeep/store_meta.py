"""`store.json`: which store format and embedding model a store holds. Free of LanceDB: read before
the store opens (and by `stats` and `recent`, which answer from the catalog without opening it)."""

from __future__ import annotations

import json
from pathlib import Path

from storage.errors import StoreTooNew

# What each format changed (`storage.upkeep.migrations` brings an older store to today's):
# 2: retrieval units carry their message's time (`at`), so time filters see inside a chat.
# 3: exchange windows beside the messages (`storage.units.windows`).
# 4: no LanceDB messages table: the catalog (`storage.stores.catalog`) holds what readers show of each chat.
# 5: secrets redacted at ingest (`storage.redaction`); `redaction` records the rules the chats were
#    redacted with, and a store whose record differs is redacted again when opened.
# 6: messages carry the files their tool calls touched and the commands they ran (`Message.touches`, in
#    `messages_json`: no table changes, so no step; an older pastchats, which would drop them when it
#    rewrites a chat, refuses the store). Chats stored before have none until their agent's log is read
#    again: the next sync reads every log once (`importers.sources.sync_state.READING`).
STORE_FORMAT = 6


def read_meta(home: Path) -> dict[str, object]:
    """`store.json`: the store's format version and which embedding model its vectors come from."""
    try:
        data = json.loads((home / "store.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_meta(home: Path, **values: object) -> None:
    """Change these values of `store.json`, keeping the rest."""
    (home / "store.json").write_text(json.dumps(read_meta(home) | values), encoding="utf-8")


def vector_size(home: Path) -> int:
    """The size of the stored vectors: `store.json`'s, unless the vector matrix (built from the
    vectors themselves) says otherwise; then the matrix is right and `store.json` is corrected at
    the next repair."""
    stored = read_meta(home).get("dim")
    try:
        built = json.loads((home / "vectors" / "manifest.json").read_text(encoding="utf-8")).get("dim")
    except (OSError, ValueError, AttributeError):
        built = None
    if isinstance(built, int) and built != stored:
        return built
    return stored if isinstance(stored, int) else 384


def refuse_newer(home: Path) -> None:
    """Stop before anything touches a store written by a newer pastchats: this one would misread it."""
    found = read_meta(home).get("format")
    if isinstance(found, int) and found > STORE_FORMAT:
        raise StoreTooNew(
            f"the store in {home} was written by a newer pastchats (store format {found}; this one reads "
            f"formats up to {STORE_FORMAT}). Upgrade pastchats (`uv tool upgrade pastchats` or "
            "`pipx upgrade pastchats`), or use another store with --home or PASTCHATS_HOME."
        )


def store_model(home: Path) -> str | None:
    """The model a store's vectors come from (its `store.json`), read without opening the store."""
    try:
        data = json.loads((home.expanduser() / "store.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None
