"""A store's health as it is on disk, read without repairing anything (for `pastchats doctor`).

Opening a `Library` repairs what it finds; this looks first, so the problems can be reported. Every
structure is checked on its own, and a damaged one never stops the others from being checked: each
table is read to its last value (a data file cut short is found), the derived structures are
opened as a reader opens them, and every chat is looked for in the passages and the keyword index, so
that `doctor` never calls a store healthy while search cannot find chats it holds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.stores.keyword_index import KeywordIndex
    from storage.stores.lance_store import LanceStore


@dataclass
class StoreHealth:
    home: Path
    exists: bool
    conversations: int = 0
    messages: int = 0
    passages: int = 0
    keyword_documents: int = 0
    awaiting_embeddings: int = 0
    interrupted_writes: int = 0
    unfinished_deletes: int = 0
    model: str | None = None
    # Chats stored (in the conversations table, or in the catalog when the table cannot be read) that
    # search cannot find: no passages, or none in the keyword index.
    unfindable: int = 0
    # What is wrong that `pastchats doctor --fix` repairs, one line each.
    problems: list[str] = field(default_factory=list)
    # What `doctor --fix` cannot repair, each line naming its own next step.
    blockers: list[str] = field(default_factory=list)

    @property
    def indexes_agree(self) -> bool:
        return self.passages == self.keyword_documents


def _meta(home: Path) -> dict[str, object]:
    try:
        meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def inspect(home: Path) -> StoreHealth:
    home = home.expanduser()
    if not (home / "lancedb").is_dir():
        return StoreHealth(home=home, exists=False)
    from storage.errors import StoreTooNew
    from storage.upkeep.store_meta import refuse_newer
    from storage.writing.locks import WriteLock

    health = StoreHealth(home=home, exists=True)
    meta = _meta(home)
    health.model = str(meta["model"]) if meta.get("model") else None
    try:
        refuse_newer(home)
    except StoreTooNew as exc:
        health.blockers.append(str(exc))
        return health  # this pastchats would misread the rest
    if not os.access(home, os.W_OK):
        health.blockers.append(
            f"the store in {home} is read-only: reading works, but nothing can be repaired or imported there; "
            "make it writable, or copy it and pass the copy with --home"
        )
    journal = WriteLock(home)
    health.interrupted_writes = len(journal.pending())
    health.unfinished_deletes = len(journal.deleting())
    _tables(home, meta, health)
    return health


def _tables(home: Path, meta: dict[str, object], health: StoreHealth) -> None:
    """The tables, the catalog, the keyword index and the vector matrix, each checked on its own."""
    from storage.stores.keyword_index import KeywordIndex
    from storage.stores.lance_store import LanceStore

    dim = meta.get("dim")
    store = LanceStore(home / "lancedb", dim if isinstance(dim, int) else 384)
    readable, chats, passages = _lance_tables(store, dim, health)
    held = _catalog(home, health)
    if not readable["conversations"] and held:
        health.conversations = len(held)  # what the catalog still holds, and a repair restores
    lost = sorted(set(held) - set(chats)) if readable["conversations"] else []
    if lost:
        health.problems.append(f"{len(lost)} chat(s) in the catalog are missing from the conversations table")
    keywords = KeywordIndex(home / "keyword")
    if keywords.damage is not None:
        health.problems.append(f"the keyword index is damaged ({keywords.damage})")
    health.keyword_documents = keywords.doc_count()
    if readable["chunks"] and keywords.damage is None and not health.indexes_agree:
        health.problems.append(
            f"the keyword index has {health.keyword_documents} passages, the store {health.passages}"
        )
    matrix = store.matrix.damage()
    if matrix is not None:
        health.problems.append(f"the vector matrix is damaged ({matrix})")
    everyone = chats or {cid: (version, 1) for cid, version in held.items()}
    derived = passages if readable["chunks"] else None
    health.unfindable = _unfindable(everyone, derived, keywords, set(lost)) + len(lost)
    if not readable["conversations"] and not held:
        health.blockers.append(
            "the conversations table cannot be read and the catalog holds no copy of it: import your chats "
            "again (`pastchats import FILE`; `pastchats reindex` for agent logs)"
        )


def _lance_tables(
    store: LanceStore, dim: object, health: StoreHealth
) -> tuple[dict[str, bool], dict[str, tuple[str, int]], dict[str, set[str]]]:
    """Each LanceDB table read whole; what the readable ones hold (chats' versions and message counts,
    passages' versions by chat), counted into `health`."""
    from storage.stores.lance_store import TABLE_NAMES

    readable = {}
    for name in TABLE_NAMES:
        reason = store.check(name, full=True)
        readable[name] = reason is None
        if reason is not None:
            health.problems.append(f"the {name} table is damaged ({reason})")
    chats: dict[str, tuple[str, int]] = {}
    if readable["conversations"]:
        chats = store.chat_versions()
        health.conversations = len(chats)
        health.messages = sum(count for _, count in chats.values())
    passages: dict[str, set[str]] = {}
    if readable["chunks"]:
        passages = store.passage_versions()
        health.passages = store.chunk_count()
        health.awaiting_embeddings = store.pending_count()
        stored_dim = store.chunk_dim()
        if isinstance(dim, int) and dim != stored_dim:
            health.problems.append(f"store.json names vectors of {dim} dimensions; the stored ones have {stored_dim}")
    return readable, chats, passages


def _catalog(home: Path, health: StoreHealth) -> dict[str, str]:
    """The chats' versions the catalog holds (none when it is missing or damaged, said in `health`)."""
    from storage.stores import catalog

    problem = catalog.damage(home / catalog.FILE)
    if problem is not None:
        health.problems.append(f"the catalog is damaged ({problem})")
    elif not (home / catalog.FILE).exists():
        health.problems.append("the catalog is missing")
    else:
        try:
            with catalog.Catalog.open(home) as current:
                return current.chat_versions()
        except catalog.CatalogMissing as exc:
            health.problems.append(str(exc))
    return {}


def _unfindable(
    everyone: dict[str, tuple[str, int]],
    passages: dict[str, set[str]] | None,
    keywords: KeywordIndex,
    lost: set[str],
) -> int:
    """Chats with messages that a search cannot find: passages not derived from their current version
    (`passages` None: the passages table cannot be read), or no documents in the keyword index."""
    searcher = keywords.reader()
    unfindable = 0
    for cid, (version, count) in everyone.items():
        if not count:
            continue
        derived = passages is not None and passages.get(cid) == {version}
        indexed = int(searcher.doc_freq("conversation_id", cid)) > 0
        if not (derived and indexed) or cid in lost:
            unfindable += 1
    return unfindable
