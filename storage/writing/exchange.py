"""This machine's store in step with the shared tables (`storage.stores.shared_store`): the chats this
machine synced sent there, every other machine's chats brought here.

The local store stays whole on its own: its LanceDB tables hold this machine's working copy of every
chat, from which its keyword index, vectors and catalog are derived as for any import, so a search
never waits on the network and still answers while the shared store cannot be reached. An exchange
compares each chat's stamp here and there (`Stamp`: version, last update, message count) with what
the last exchange saw of it (`<home>/shared.json`), then:

- a chat that changed there and not here (or is newer there) is imported here (redacted under this
  machine's rules, awaiting its embedding);
- a chat that changed here is sent (redacted first, whatever `PASTCHATS_REDACT` says: no secret leaves
  the machine), replacing the shared copy only if it is newer;
- a chat this machine deleted is deleted there; one another machine deleted is deleted here.

Every step is idempotent, so a sync killed part way and another machine's sync meanwhile converge:
the next exchange finds what is left to do. The private archive of agent logs is never sent.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from filelock import FileLock

from storage.errors import SharedStoreUnreachable
from storage.owner_only import FILE_MODE, open_private
from storage.stores.shared_store import SharedStore, Stamp, newer

if TYPE_CHECKING:
    import pyarrow as pa

    from storage.models import Conversation
    from storage.redaction import Redaction
    from storage.stores.lance_store import LanceStore
    from storage.writing.ingest import IngestProgress, IngestStats

log = logging.getLogger(__name__)

STATE = "shared.json"
EXCHANGE_LOCK = "shared.lock"


class Library(Protocol):
    """What an exchange uses of `storage.library.Library`."""

    home: Path
    store: LanceStore
    redaction: Redaction

    def import_conversations(
        self,
        conversations: Iterable[Conversation],
        *,
        progress: Callable[[IngestProgress], None] | None = None,
        wait: float = -1,
        embed: bool = True,
    ) -> IngestStats: ...
    def delete(self, uris: Iterable[str], *, wait: float = -1) -> int: ...
    def unfinished_deletes(self) -> list[str]: ...


@dataclass
class SharedState:
    """What the last exchange saw (`seen`: per chat, its version there and here), and the last contact."""

    uri: str = ""
    seen: dict[str, list[str]] = field(default_factory=dict)
    version: int | None = None  # the shared table's version after the last exchange
    reached: bool = True
    reason: str = ""
    at: str = ""

    @classmethod
    def load(cls, home: Path, uri: str) -> SharedState:
        try:
            data = json.loads((home / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(uri=uri)
        if not isinstance(data, dict) or data.get("uri") != uri:
            return cls(uri=uri)  # another shared store: nothing seen of it yet
        return cls(
            uri=uri,
            seen={k: list(v) for k, v in data.get("seen", {}).items()},
            version=data.get("version"),
            reached=bool(data.get("reached", True)),
            reason=str(data.get("reason", "")),
            at=str(data.get("at", "")),
        )

    def save(self, home: Path) -> None:
        tmp = home / f".{STATE}.{os.getpid()}.tmp"
        fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self.__dict__, handle)
        os.replace(tmp, home / STATE)

    def contact(self, error: SharedStoreUnreachable | None) -> None:
        self.reached, self.reason = error is None, error.reason if error is not None else ""
        self.at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def record_contact(home: Path, uri: str, error: SharedStoreUnreachable | None) -> None:
    """Note whether the shared store answered (what `unreachable_note` and `doctor` read)."""
    state = SharedState.load(home, uri)
    if state.reached == (error is None) and error is None:
        return  # nothing new to say: no write while all is well
    state.contact(error)
    try:
        state.save(home)
    except OSError as exc:
        log.info("could not write %s: %s", home / STATE, exc)


def probe(home: Path, shared: SharedStore) -> threading.Thread:
    """Ask the shared store whether it answers, on a thread of its own (a search does not wait on the
    network), and note it for `unreachable_note`; join the thread to wait for the answer."""

    def ask() -> None:
        try:
            shared.version()
        except SharedStoreUnreachable as exc:
            record_contact(home, shared.uri, exc)
        except Exception:
            log.exception("asking the shared store whether it answers failed")
        else:
            record_contact(home, shared.uri, None)

    thread = threading.Thread(target=ask, name="pastchats-shared-probe", daemon=True)
    thread.start()
    return thread


# The note of each home's state file, by the file's (mtime, size): a search reads the file (which
# lists every chat exchanged, ~70 bytes each) only when an exchange or a contact has rewritten it.
_NOTES: dict[tuple[Path, str], tuple[tuple[int, int], str | None]] = {}


def unreachable_note(home: Path, uri: str) -> str | None:
    """What a search says while the shared store's last contact failed (None while it answered)."""
    try:
        info = (home / STATE).stat()
    except OSError:
        return None
    stamp = (info.st_mtime_ns, info.st_size)
    cached = _NOTES.get((home, uri))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    state = SharedState.load(home, uri)
    note = None
    if not state.reached:
        note = (
            f"the shared store {uri} could not be reached ({state.reason}, {state.at}): these results come "
            "from this machine's copy, without what other machines synced since"
        )
    _NOTES[(home, uri)] = (stamp, note)
    return note


@dataclass
class ExchangeReport:
    sent: int = 0
    received: int = 0
    deleted_there: int = 0
    deleted_here: int = 0
    version: int | None = None

    def text(self) -> str:
        parts = [f"{self.sent} sent", f"{self.received} received"]
        if self.deleted_there or self.deleted_here:
            parts.append(f"{self.deleted_there + self.deleted_here} deleted")
        return "Shared store: " + ", ".join(parts)


@dataclass
class _Plan:
    pull: list[str] = field(default_factory=list)
    push: list[str] = field(default_factory=list)
    drop_there: list[str] = field(default_factory=list)
    drop_here: list[str] = field(default_factory=list)
    agreed: dict[str, list[str]] = field(default_factory=dict)


def plan(
    local: dict[str, Stamp], remote: dict[str, Stamp], seen: dict[str, list[str]], forgotten: Collection[str] = ()
) -> _Plan:
    """What to move which way, chat by chat (see the module's docstring). `forgotten`: chats deleted here
    that must not come back (sync's record), whether or not an exchange saw them."""
    out = _Plan()
    for cid in sorted(local.keys() | remote.keys() | seen.keys()):
        here, there, was = local.get(cid), remote.get(cid), seen.get(cid)
        if here is None and there is None:
            continue
        if here is None:
            assert there is not None
            if (was is not None and was[0] == there.version) or cid in forgotten:
                out.drop_there.append(cid)  # deleted here since the last exchange, unchanged there
            else:
                out.pull.append(cid)
        elif there is None:
            if was is not None and was[1] == here.version and remote:
                out.drop_here.append(cid)  # deleted by another machine, unchanged here
            else:
                out.push.append(cid)
        elif there.version == here.version:
            out.agreed[cid] = [there.version, here.version]
        else:
            changed_there = was is None or was[0] != there.version
            changed_here = was is None or was[1] != here.version
            if changed_there and (not changed_here or newer(there, here)):
                out.pull.append(cid)
            elif changed_here:
                out.push.append(cid)
            elif was is not None:
                out.agreed[cid] = list(was)  # as the last exchange left them (redacted differently there)
    return out


def exchange(
    library: Library,
    shared: SharedStore,
    *,
    progress: Callable[[IngestProgress], None] | None = None,
    wait: float = -1,
    forgotten: Collection[str] = (),
) -> ExchangeReport:
    """Bring this machine's store and the shared one in step (raises `SharedStoreUnreachable`, noted
    for searches, when it cannot be reached). `forgotten`: chats deleted here never to come back."""
    # One exchange at a time in a home (a `sync` while a server's watcher exchanges): each reads and
    # saves the record whole, and a record lost to the other's save would send back a chat another
    # machine deleted meanwhile. An exchange is short; the second waits for the first.
    with FileLock(str(library.home / EXCHANGE_LOCK), mode=FILE_MODE):
        state = SharedState.load(library.home, shared.uri)
        try:
            report = _exchange(library, shared, state, progress, wait, set(forgotten))
        except SharedStoreUnreachable as exc:
            state.contact(exc)
            state.save(library.home)
            raise
        state.contact(None)
        state.save(library.home)
        return report


def _local_stamps(library: Library) -> dict[str, Stamp]:
    hidden = set(library.unfinished_deletes())
    stamps = library.store.chat_stamps()
    return {cid: Stamp(v, at, n) for cid, (v, at, n) in stamps.items() if cid not in hidden}


def _exchange(
    library: Library,
    shared: SharedStore,
    state: SharedState,
    progress: Callable[[IngestProgress], None] | None,
    wait: float,
    forgotten: set[str],
) -> ExchangeReport:
    from storage.stores.lance_store import LanceStore

    report = ExchangeReport()
    # The version read before the listing: a commit from elsewhere after it (or this exchange's own)
    # moves the version past it, and the next poll exchanges again.
    report.version = shared.version()
    remote = shared.stamps()
    work = plan(_local_stamps(library), remote, state.seen, forgotten)
    seen = dict(work.agreed)
    if work.pull:
        conversations = (LanceStore.to_conversation(row) for row in shared.rows(work.pull))
        stats = library.import_conversations(conversations, progress=progress, wait=wait, embed=False)
        report.received = stats.new + stats.updated
    if work.drop_here:
        library.delete(work.drop_here, wait=wait)
        report.deleted_here = len(work.drop_here)
    local = _local_stamps(library)
    for cid in work.pull:
        if cid in local and cid in remote:
            seen[cid] = [remote[cid].version, local[cid].version]
    if work.push:
        report.sent = _send(library, shared, work.push, remote, local, seen)
    if work.drop_there:
        shared.delete(work.drop_there)
        report.deleted_there = len(work.drop_there)
    unsent: set[str] = set()
    if report.sent:
        # Listed again: a copy another machine inserted at the same moment is deleted now, not at the
        # next exchange, and a chat whose commit did not land is sent again next time.
        landed = shared.stamps()
        unsent = {cid for cid in work.push if cid not in landed}
        for cid in unsent:
            seen.pop(cid, None)
        report.sent -= len(unsent)
    if report.sent or report.deleted_there:
        shared.tidy()
    # Chats left alone this time (one this machine has not synced yet, deleted meanwhile) keep their record.
    left_alone = unsent | set(work.drop_there) | set(work.drop_here)
    for cid, was in state.seen.items():
        if cid not in seen and cid in local and cid not in left_alone:
            seen.setdefault(cid, was)
    state.seen = seen
    state.version = report.version
    if report.sent or report.received or report.deleted_here or report.deleted_there:
        log.info("%s", report.text())
    return report


def _send(
    library: Library,
    shared: SharedStore,
    push: list[str],
    remote: dict[str, Stamp],
    local: dict[str, Stamp],
    seen: dict[str, list[str]],
) -> int:
    """This machine's changed chats put in the shared table in batches, each as it may leave the
    machine (`_redacted`); `seen` records what was sent. How many were sent."""
    sent_count = 0
    for start in range(0, len(push), 200):
        sent = _redacted(library, library.store.conversation_table(push[start : start + 200]))
        shared.put(sent, held=remote.keys())
        for cid, version in zip(sent.column("id").to_pylist(), sent.column("version").to_pylist(), strict=True):
            if cid in local:
                seen[cid] = [version, local[cid].version]
                sent_count += 1
    return sent_count


def _redacted(library: Library, rows: pa.Table) -> pa.Table:
    """The rows as they may leave the machine: as stored when this store redacts, else redacted now
    with every rule (and this machine's allow list), their fingerprints made again."""
    if library.redaction.enabled:
        return rows
    from storage.redaction import Redaction
    from storage.stores.lance_store import LanceStore, conversation_rows

    redaction = Redaction(allow=library.redaction.allow)
    chats: list[Conversation] = [redaction.redact(LanceStore.to_conversation(row))[0] for row in rows.to_pylist()]
    return conversation_rows(chats, {c.id: c.fingerprint() for c in chats})
