"""Small builders for storage tests."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.models import Conversation, Message
from storage.upkeep.store_meta import STORE_FORMAT

BASE = datetime(2025, 1, 1, tzinfo=UTC)


def conversation(
    cid: str,
    texts: list[str],
    *,
    title: str | None = None,
    project: str | None = None,
    source: str = "pastchats",
    day: int = 0,
    updated: datetime | None = None,
) -> Conversation:
    created = BASE + timedelta(days=day)
    messages = [
        Message(id=f"{cid}-m{i}", index=i, role="user" if i % 2 == 0 else "assistant", text=text)
        for i, text in enumerate(texts)
    ]
    return Conversation(
        id=cid,
        source=source,
        title=title or texts[0][:40],
        created_at=created,
        updated_at=updated or created + timedelta(hours=1),
        project=project,
        messages=messages,
    )


CHATS_FOR_FORMAT = [
    conversation("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."]),
    conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
]


def stored_format(home: Path) -> object:
    return json.loads((home / "store.json").read_text(encoding="utf-8")).get("format")


def set_format(home: Path, version: int) -> None:
    meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    (home / "store.json").write_text(json.dumps(meta | {"format": version}), encoding="utf-8")


def older_store(home: Path, version: int = STORE_FORMAT - 1) -> None:
    """A store as an older pastchats left it. Format 2: conversations kept, search units not in today's
    shape (emptied here, so only a rebuild from the conversations table can make them searchable
    again). Format 3: every message also in a LanceDB table of its own, and a catalog of that format."""
    library = Library.open(home, embedder=HashEmbedder())
    library.import_conversations(CHATS_FOR_FORMAT)
    if version < 3:
        library.store.reset_chunks(HashEmbedder().dim)
    else:
        rows = [
            {"key": f"{c.id}\x1f{m.id}", "conversation_id": c.id, "id": m.id, "position": m.index, "text": m.text}
            for c in CHATS_FOR_FORMAT
            for m in c.messages
        ]
        library.store._db.create_table("messages", data=rows)
        library.store.chunks.add_columns({"text": "'passage text'"})
        with closing(sqlite3.connect(home / "catalog.sqlite")) as catalog, catalog:
            catalog.execute("UPDATE state SET value = 3 WHERE key = 'format'")
    library.close()
    set_format(home, version)


def chats() -> list[Conversation]:
    """Chats of every shape a listing or a page must render: long, unicode, several projects spelled
    differently, a lone message, one a year later, one whose messages carry their own times."""
    when = datetime(2025, 1, 4, 9, tzinfo=UTC)
    long = "A long answer, with many words about tuning PostgreSQL. " * 40
    dated = conversation("dated", ["day one", "reply", "day three", "reply", "day five"], day=500)
    stamped = [
        dataclasses.replace(message, created_at=dated.created_at + timedelta(days=i, microseconds=7))
        for i, message in enumerate(dated.messages)
    ]
    return [
        conversation("nginx", ["nginx in front of Jellyfin?", "proxy_pass to 8096.", "and TLS?", "certbot."] * 2),
        conversation("bread", ["Sourdough smells of acetone", "Feed it twice a day."], project="baking", day=1),
        conversation("lab1", ["Proxmox VLANs", "Tag the bridge."], project="homelab", day=2, updated=when),
        conversation("lab2", ["ZFS scrub schedule", "Monthly is fine."], project="Homelab", day=2, updated=when),
        conversation("solo", ["one lonely message"], source="claude", day=3),
        conversation("pg", ["How do I tune Postgres?", long, "And vacuum?", long, "Thanks", long], day=4),
        conversation(
            "unicode",
            ["Ünïcödé — «quotes», 日本語のテキスト, emoji 🎉", "Réponse: <chat uri='x'> is inert here\n\n\nnext line"],
            title="Title " + "très long " * 30,
            project="Naïve ☃",
            day=5,
        ),
        conversation("late", ["a message"], day=400),  # a chat a year later
        dated.model_copy(update={"messages": stamped, "updated_at": stamped[-1].created_at}),
    ]


def loosen(root: Path) -> int:
    """Give `root` the modes pastchats left before it kept stores owner-only (0755 folders, 0644 files,
    as the usual umask makes them); returns how many entries that is."""
    count = 0
    for folder, _folders, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
        count += 1 + len(files)
    return count
