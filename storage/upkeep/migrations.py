"""Bringing a store written by an older pastchats to today's format, in named steps.

`MIGRATIONS` lists the steps in the order they run; each applies to stores of a format older than its
`before` and is recorded in `store.json` (`migrations`) as soon as it has run, so a step is never run
twice and a migration cut short resumes with the next step. A step that needs the embedding model
waits for an open that has it; the others run at once. Once no step is due, the store is of today's
format (`STORE_FORMAT`), recorded as such, and its catalog is rebuilt from the tables.

The formats themselves are described beside `STORE_FORMAT` (`storage.upkeep.store_meta`). Steps run
under the write lock, after the tables are mended and before anything else writes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage.stores.lance_store import LanceStore
from storage.upkeep.store_meta import STORE_FORMAT, read_meta, record_meta
from storage.writing.ingest import Ingestor

log = logging.getLogger("storage.library")


@dataclass(frozen=True)
class Migration:
    name: str
    before: int  # applies to stores of a format older than this
    needs_model: bool
    run: Callable[[LanceStore, Ingestor | None], None]


def drop_copies_the_catalog_replaced(store: LanceStore, ingestor: Ingestor | None) -> None:
    """Format 4: the catalog holds every chat's messages, so the LanceDB messages table and the
    passages' own text go. First of all: today's rows are written without them."""
    store.drop_copies()


def derive_units_again(store: LanceStore, ingestor: Ingestor | None) -> None:
    """Formats 2 and 3: retrieval units carry their message's time, and exchange windows sit beside
    the messages; every chat's units are derived again from the conversations table (and embedded)."""
    assert ingestor is not None, "a step that needs the model runs only with it"
    ingestor.rederive_all()


MIGRATIONS: tuple[Migration, ...] = (
    Migration("drop_copies_the_catalog_replaced", before=4, needs_model=False, run=drop_copies_the_catalog_replaced),
    Migration("derive_units_again", before=3, needs_model=True, run=derive_units_again),
)


def due(meta: dict[str, object], steps: tuple[Migration, ...] = MIGRATIONS) -> list[Migration]:
    """The steps a store with this `store.json` still needs, in order (none for a store of today's
    format, or one that records no format: a new store)."""
    found = meta.get("format")
    if not isinstance(found, int) or found >= STORE_FORMAT:
        return []
    applied = meta.get("migrations")
    done = set(applied) if isinstance(applied, list) else set()
    return [step for step in steps if found < step.before and step.name not in done]


def migrate(
    home: Path, store: LanceStore, ingestor: Ingestor | None, steps: tuple[Migration, ...] = MIGRATIONS
) -> bool:
    """Run the steps due that can run now (`ingestor` None: without the model), recording each; returns
    True when this brought the store to today's format (its catalog is then to be rebuilt whole)."""
    meta = read_meta(home)
    older = meta.get("format")
    if not isinstance(older, int) or older >= STORE_FORMAT:
        return False
    for step in due(meta, steps):
        if step.needs_model and ingestor is None:
            continue
        step.run(store, ingestor)
        applied = read_meta(home).get("migrations")
        record_meta(home, migrations=[*(applied if isinstance(applied, list) else []), step.name])
    if due(read_meta(home), steps):
        return False  # the rest waits for an open with the model
    log.warning(
        "migrating the store in %s from format %d to %d: rebuilding its catalog from the tables (once; no chat "
        "is lost)",
        home,
        older,
        STORE_FORMAT,
    )
    finished = read_meta(home) | {"format": STORE_FORMAT}
    finished.pop("migrations", None)  # today's format says every step has run
    (home / "store.json").write_text(json.dumps(finished), encoding="utf-8")
    return True
