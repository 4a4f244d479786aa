"""Ingest: upsert conversations, derive their chunks, vectors and keyword documents.

Callers hold the write lock. Conversations are written first (the truth), then the derived tables, then
the keyword index; the journal names the batch until all three have committed. A batch that fails on
its data is retried one conversation at a time, and a conversation that still fails is set aside
(`storage.writing.quarantine`): one bad record never stops an import, and never wedges the store.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from storage.embedding.embedder import Embedder, Vectors
from storage.errors import is_disk_full
from storage.models import Conversation, Message
from storage.redaction import Redaction, Remembered
from storage.stores.keyword_index import KeywordIndex
from storage.stores.lance_store import LanceStore, unit_time
from storage.times import naive_utc
from storage.units.passages import DEFAULT_OPTIONS, NO_EMBEDDING, Chunk, ChunkOptions, chunk_conversation, iter_chunks
from storage.units.windows import MESSAGE
from storage.writing.locks import WriteLock
from storage.writing.quarantine import DATA_ERRORS, Quarantine, record_from_row

log = logging.getLogger(__name__)

BATCH_CHUNKS = 1024
BATCH_CONVERSATIONS = 256
# The most of one message the store keeps (characters). Past it a message is cut, with a mark in its
# text and a note in the import report: a 200 MB pasted blob would otherwise become a million
# passages and gigabytes of memory, and no search needs more than its start (~300 pages of text).
MESSAGE_CHARS = 1_000_000
# A chat with more messages than this has its passages derived, embedded and written this many chunks
# at a time (`Ingestor.derive`): what one chat costs to index stays bounded however long it is.
SLICE_MESSAGES = 20_000
SLICE_CHUNKS = 20_000


def _long(conversation: Conversation) -> bool:
    return len(conversation.messages) > SLICE_MESSAGES


def _chunks_of(conversation: Conversation, model_name: str, options: ChunkOptions) -> Iterable[Chunk]:
    """A chat's chunks: a list for an ordinary chat, made as they are read for a long one."""
    if _long(conversation):
        return iter_chunks(conversation, model_name, options)
    return chunk_conversation(conversation, model_name, options)


def cut_long_messages(conversation: Conversation, notes: list[str]) -> Conversation:
    """The conversation with every message longer than `MESSAGE_CHARS` cut to it (noted in `notes`)."""
    long = [m for m in conversation.messages if len(m.text) > MESSAGE_CHARS]
    if not long:
        return conversation
    messages = list(conversation.messages)
    for message in long:
        mark = f"\n[… cut by pastchats: {len(message.text) - MESSAGE_CHARS:,} more characters not kept]"
        messages[message.index] = dataclasses.replace(message, text=message.text[:MESSAGE_CHARS] + mark)
        notes.append(
            f"{conversation.id}: message {message.index + 1} holds {len(message.text):,} characters; its first "
            f"{MESSAGE_CHARS:,} were kept (the most pastchats keeps of one message)"
        )
    return conversation.model_copy(update={"messages": messages})


@dataclass
class IngestStats:
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    skipped: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    redacted: Counter[str] = field(default_factory=Counter)  # secrets replaced in the chats written, by kind
    notes: list[str] = field(default_factory=list)

    @property
    def written(self) -> int:
        return self.new + self.updated


@dataclass(frozen=True)
class IngestProgress:
    conversations_done: int
    messages_done: int


def mean_vector(vectors: Sequence[Vectors], weights: Sequence[float]) -> Vectors:
    """The L2-normalised weighted mean of unit vectors: a coarse unit's vector from its members'."""
    import numpy as np

    mean = np.average(np.stack(vectors).astype(np.float32), axis=0, weights=np.asarray(weights, np.float32))
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32)


def _batches(conversations: Iterable[Conversation], notes: list[str]) -> Iterator[list[Conversation]]:
    batch: list[Conversation] = []
    size = 0
    for conversation in conversations:
        batch.append(cut_long_messages(conversation, notes))
        size += len(conversation.messages)
        if size >= BATCH_CHUNKS or len(batch) >= BATCH_CONVERSATIONS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


@dataclass(frozen=True)
class Prepared:
    """One batch of an import, redacted and fingerprinted, ready to be written."""

    conversations: int  # read, counted before duplicates are dropped
    messages: int
    unique: dict[str, Conversation]
    found: dict[str, Counter[str]]  # secrets redacted per chat, by kind
    versions: dict[str, str]  # fingerprints


def _not_replaced(conversation_id: str) -> str:
    owner = conversation_id.split(":", 1)[0]
    return (
        f"{conversation_id}: the store holds {owner}'s chat with this id, which only an import of {owner}'s "
        f"own files may replace (to replace it anyway: pastchats delete '{conversation_id}', then import again)"
    )


class Ingestor:
    def __init__(
        self,
        store: LanceStore,
        keywords: KeywordIndex,
        embedder: Embedder | None,
        lock: WriteLock,
        options: ChunkOptions = DEFAULT_OPTIONS,
        model_name: str | None = None,
        redaction: Redaction | None = None,
        remembered: Remembered | None = None,
    ):
        """`embedder` None: every new passage is stored awaiting its embedding (`model_name` names the
        model its vectors will come from). `redaction`: how secrets are taken out of every conversation
        before anything of it is written (default: redacted with every rule). `remembered`: the chats
        this process redacted last, so that a chat read again with more messages (live sync) has only
        its new messages scanned."""
        self.options = options
        self.redaction = redaction if redaction is not None else Redaction()
        self.remembered = remembered
        self.store = store
        self.keywords = keywords
        self.embedder = embedder
        self.lock = lock
        self.quarantine = Quarantine(lock.journal_path.parent)
        self.stats = IngestStats()
        self._done = self._messages = 0  # conversations and messages of this import prepared and written
        name = embedder.model_name if embedder is not None else model_name
        if name is None:
            raise ValueError("an ingestor without an embedder needs the model name")
        self.model_name = name

    def ingest(
        self,
        conversations: Iterable[Conversation],
        progress: Callable[[IngestProgress], None] | None = None,
        embed: bool = True,
        add_only: tuple[str, ...] = (),
        tidy: bool = True,
    ) -> IngestStats:
        """Upsert; `embed=False` stores new passages awaiting their embedding (see `embed_some`).
        `tidy=False` leaves compaction and the matrix's rebuild to the caller (`tidy` below).

        A conversation whose id starts with one of `add_only` is written only when the store does not
        hold that id yet: it never replaces a stored chat (another format's, `registry.foreign_prefixes`).
        """
        stats = self.begin()
        for batch in self.prepared(conversations):
            self.write_prepared(batch, progress, embed, add_only)
        if stats.written and tidy:
            self.tidy(stats)
        return stats

    def begin(self) -> IngestStats:
        """Start counting a new import (`prepared`, then `write_prepared` for each of its batches)."""
        self.stats = IngestStats()  # read by the caller when the disk fills part way
        self._done = self._messages = 0
        return self.stats

    def prepared(self, conversations: Iterable[Conversation]) -> Iterator[Prepared]:
        """The conversations in batches, each redacted and fingerprinted: what costs time and needs no
        write lock, so that a caller takes the lock only to write (`write_prepared`)."""
        stats = self.stats
        for batch in _batches(self.redaction.reading(conversations), stats.notes):
            unique: dict[str, Conversation] = {}
            found: dict[str, Counter[str]] = {}
            for conversation in batch:
                if conversation.id in unique:
                    stats.skipped.append(f"{conversation.id}: appears twice in this import; the last one was kept")
                # Before the fingerprint: what is compared, stored, embedded and indexed is the redacted chat.
                redact = self.remembered.redact if self.remembered is not None else self.redaction.redact
                unique[conversation.id], found[conversation.id] = redact(conversation)
            # One hash over every message per conversation, reused by every table written below.
            versions = {cid: conversation.fingerprint() for cid, conversation in unique.items()}
            yield Prepared(len(batch), sum(len(c.messages) for c in batch), unique, found, versions)

    def write_prepared(
        self,
        batch: Prepared,
        progress: Callable[[IngestProgress], None] | None = None,
        embed: bool = True,
        add_only: tuple[str, ...] = (),
    ) -> None:
        """Write one prepared batch (callers hold the write lock)."""
        stats, unique, versions = self.stats, batch.unique, batch.versions
        stored = self.store.versions(list(unique))
        changed = []
        for conversation in unique.values():
            if stored.get(conversation.id) == versions[conversation.id]:
                stats.unchanged += 1
            elif conversation.id in stored and conversation.id.startswith(add_only):
                stats.skipped.append(_not_replaced(conversation.id))
            else:
                changed.append(conversation)
        if changed:
            embedded, reused, failed = self._write(changed, versions, embed=embed)
            for conversation in changed:
                if conversation.id in failed:
                    stats.skipped.append(f"{conversation.id}: {failed[conversation.id]}")
                    stats.quarantined.append(conversation.id)
                    continue
                if conversation.id in stored:
                    stats.updated += 1
                else:
                    stats.new += 1
                stats.messages += len(conversation.messages)
                stats.redacted.update(batch.found[conversation.id])
            stats.chunks_embedded += embedded
            stats.chunks_reused += reused
        self._done += batch.conversations
        self._messages += batch.messages
        if progress is not None:
            progress(IngestProgress(self._done, self._messages))

    def tidy(self, stats: IngestStats) -> None:
        """What follows a write: scalar indexes, compaction, the vector matrix. The chats are committed
        by then, so a full disk here fails none of them: it is noted, and the next write or
        `pastchats doctor --fix` finishes it (search meanwhile asks LanceDB for what the matrix lacks)."""
        try:
            self.store.ensure_indexes()  # before the cleanup, so that no index commit outlives it
            self.store.optimize()
            self.store.build_matrix()
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            log.warning("the disk is full: compaction and the vector matrix wait for free space (%s)", exc)
            stats.notes.append(
                "the disk is full: every chat above was committed and is searchable; free some space, then run "
                "`pastchats doctor --fix` to finish compacting the store and rebuilding its vector matrix"
            )

    def _write(
        self,
        conversations: Sequence[Conversation],
        versions: Mapping[str, str],
        *,
        truth: bool = True,
        embed: bool = True,
    ) -> tuple[int, int, dict[str, str]]:
        """Write (if `truth`) and derive a batch under the journal. Returns (embedded, reused, set-aside
        ids with the reason): when the batch fails on its data, each conversation is tried alone."""
        self.lock.begin([c.id for c in conversations])
        failed: dict[str, str] = {}
        try:
            embedded, reused = self._write_one_batch(conversations, versions, truth, embed)
        except DATA_ERRORS:
            embedded = reused = 0
            for conversation in conversations:
                try:
                    one_embedded, one_reused = self._write_one_batch([conversation], versions, truth, embed)
                except DATA_ERRORS as exc:
                    record = conversation.model_dump(mode="json")
                    failed[conversation.id] = self._set_aside(conversation.id, record, exc)
                else:
                    embedded += one_embedded
                    reused += one_reused
        self.lock.done([c.id for c in conversations])
        return embedded, reused, failed

    def _write_one_batch(
        self, conversations: Sequence[Conversation], versions: Mapping[str, str], truth: bool, embed: bool = True
    ) -> tuple[int, int]:
        if truth:
            self.store.write_conversations(conversations, versions)
        return self.derive(conversations, versions, embed=embed)

    def _set_aside(self, conversation_id: str, record: Mapping[str, object], error: BaseException) -> str:
        """Quarantine one conversation (its record first, so nothing is lost), then drop it everywhere."""
        reason = " ".join(f"cannot be indexed: {error}".split())[:300]
        self.quarantine.put([self.redaction.redact_record(dict(record))], reason)
        self.store.delete([conversation_id])
        self.keywords.replace([conversation_id], [], {})
        return f"{reason}; set aside in {self.quarantine.directory}"

    def derive(
        self, conversations: Sequence[Conversation], versions: Mapping[str, str] | None = None, *, embed: bool = True
    ) -> tuple[int, int]:
        """Rebuild the chunks and keyword documents of these conversations from the models.

        Returns (texts embedded, vectors reused). Passages that could not be embedded now (`embed`
        False, or no embedder) are stored awaiting their embedding.
        """
        if versions is None:
            versions = {c.id: c.fingerprint() for c in conversations}
        short = [c for c in conversations if not _long(c)]
        embedded = reused = 0
        if short:
            chunks = [chunk for c in short for chunk in chunk_conversation(c, self.model_name, self.options)]
            vectors, pending, embedded, reused = self._vectors(chunks, embed)
            self.store.replace_derived(short, chunks, vectors, versions, pending)
            rows = _keyword_rows(short, chunks)
            self.keywords.replace([c.id for c in short], rows, {c.id: c.title for c in short})
        for conversation in conversations:
            if _long(conversation):
                counts = [0, 0]
                rows = self._derive_sliced(conversation, versions[conversation.id], embed, counts)
                self.keywords.replace([conversation.id], rows, {conversation.id: conversation.title})
                embedded, reused = embedded + counts[0], reused + counts[1]
        return embedded, reused

    def _derive_sliced(
        self, conversation: Conversation, version: str, embed: bool, counts: list[int]
    ) -> Iterator[dict[str, object]]:
        """Derive a long chat `SLICE_CHUNKS` chunks at a time: each slice's vectors and rows are written,
        then its keyword documents come out (the keyword index commits them once, when all are read).
        Rows of another version of the chat are dropped at the end; the journal names the chat until
        then, so a crash part way is finished by the next writer. `counts` gets (embedded, reused)."""
        stream = iter_chunks(conversation, self.model_name, self.options)
        fresh = not self.store.holds_derived(conversation.id)
        while chunks := list(itertools.islice(stream, SLICE_CHUNKS)):
            vectors, pending, embedded, reused = self._vectors(chunks, embed)
            self.store.add_derived(conversation, chunks, vectors, version, pending, fresh=fresh)
            counts[0], counts[1] = counts[0] + embedded, counts[1] + reused
            yield from _keyword_rows([conversation], chunks)
            del chunks, vectors, pending
        self.store.drop_other_versions(conversation.id, version)

    def _vectors(self, chunks: Sequence[Chunk], embed: bool = True) -> tuple[Vectors, list[bool], int, int]:
        """Each chunk's vector (stored ones reused by content key), and which chunks await theirs.

        A derived chunk (`Chunk.mean_of`) gets the mean of its members' vectors once every member has
        one (stored or embedded now), and awaits its members otherwise: it never costs a model run.
        """
        import numpy as np

        keys = [ch.embed_key for ch in chunks]
        here = {ch.embed_key for ch in chunks if ch.model_text}
        # A window's members are in this list, or (a long chat derived in slices) stored by an earlier slice.
        members = {key for ch in chunks for key in ch.mean_of if key not in here}
        known = self.store.vectors_for([ch.embed_key for ch in chunks if ch.model_text] + sorted(members))
        missing: dict[str, str] = {}
        for ch in chunks:
            if ch.model_text and ch.embed_key not in known:
                missing.setdefault(ch.embed_key, ch.embed_text)
        if missing and embed and self.embedder is not None:
            fresh = self.embedder.embed_documents(list(missing.values()))
            known.update(zip(missing.keys(), fresh, strict=True))
            embedded = len(missing)
        else:
            embedded = 0
        for ch in chunks:
            if ch.mean_of and ch.embed_key not in known and all(key in known for key in ch.mean_of):
                known[ch.embed_key] = mean_vector([known[key] for key in ch.mean_of], ch.mean_weights)
        blank = np.zeros(self.store.dim, np.float32)
        pending = [k not in known and k != NO_EMBEDDING for k in keys]  # keyword-only rows never wait
        matrix = np.stack([known.get(k, blank) for k in keys]) if keys else np.zeros((0, self.store.dim), np.float32)
        reused = sum(1 for ch in chunks if ch.model_text) - len(missing)
        return matrix.astype(np.float32), pending, embedded, reused

    def embed_some(self, conversation_ids: Sequence[str]) -> int:
        """Embed the passages of these conversations that await it; returns how many texts were embedded.

        Re-derived from the truth (the conversations table), so a conversation changed meanwhile is
        embedded as it is now. Only the chunks table is rewritten: the keywords are unchanged.
        """
        rows = self.store.conversation_rows(conversation_ids)  # one read for the batch, not one a chat
        conversations = [LanceStore.to_conversation(rows[i]) for i in conversation_ids if i in rows]
        if not conversations or self.embedder is None:
            return 0
        versions = {c.id: c.fingerprint() for c in conversations}
        short = [c for c in conversations if not _long(c)]
        chunks = [ch for c in short for ch in chunk_conversation(c, self.model_name, self.options)]
        vectors, pending, embedded, _ = self._vectors(chunks, embed=True)
        self.store.replace_derived(short, chunks, vectors, versions, pending)
        for conversation in conversations:
            if _long(conversation):
                counts = [0, 0]
                for _ in self._derive_sliced(conversation, versions[conversation.id], True, counts):
                    pass  # the keyword documents are unchanged
                embedded += counts[0]
        return embedded

    # ---- healing ---------------------------------------------------------------------------------

    def repair(self) -> list[str]:
        """Re-derive the conversations a crashed write left half-done. Returns their ids."""
        pending = self.lock.pending()
        if not pending:
            return []
        log.warning("repairing %d conversation(s) left by an interrupted write", len(pending))
        for start in range(0, len(pending), BATCH_CONVERSATIONS):
            ids = pending[start : start + BATCH_CONVERSATIONS]
            present = self._stored(ids)
            gone = sorted(set(ids) - {c.id for c in present} - set(self.store.conversation_rows(ids)))
            if gone:
                self.store.delete(gone)
                self.keywords.replace(gone, [], {})
            if present:
                self._write(present, {c.id: c.fingerprint() for c in present}, truth=False)
        self.lock.done()
        return pending

    def write_derived(self, conversations: Sequence[Conversation]) -> None:
        """Derive these stored conversations' passages and keyword documents again, under the journal."""
        self._write(conversations, {c.id: c.fingerprint() for c in conversations}, truth=False)

    def stored(self, ids: Sequence[str]) -> list[Conversation]:
        return self._stored(ids)

    def _stored(self, ids: Sequence[str]) -> list[Conversation]:
        """The stored conversations with these ids; a row that no longer validates is set aside."""
        present = []
        for cid, row in self.store.conversation_rows(ids).items():
            try:
                present.append(LanceStore.to_conversation(row))
            except DATA_ERRORS as exc:  # a row written before its values were checked
                self._set_aside(cid, record_from_row(row), exc)
        return present

    def rebuild_keywords(self) -> None:
        """Recreate the keyword index from the conversations (it is derived and may be lost or stale):
        their passages are cut again as they were stored (LanceDB keeps no copy of the passages' text)."""
        titles = dict(self.store.titles())
        self.keywords.clear()
        self.keywords.replace([], self._all_keyword_rows(), titles)

    def _all_keyword_rows(self) -> Iterator[dict[str, object]]:
        ids = self.store.conversation_ids()
        for start in range(0, len(ids), 64):
            batch = self._stored(ids[start : start + 64])
            for conversation in batch:
                yield from _keyword_rows([conversation], _chunks_of(conversation, self.model_name, self.options))

    def redact_stored(self, embed: bool = True) -> IngestStats:
        """Redact the stored conversations as an import would now (the store holds chats imported before
        redaction, or before its current rules): each changed one is written again, its old passages and
        vectors dropped, and the keyword index rebuilt so that no segment keeps the old text."""

        def stored() -> Iterator[Conversation]:
            ids = self.store.conversation_ids()
            for start in range(0, len(ids), 64):
                yield from self._stored(ids[start : start + 64])

        stats = self.ingest(stored(), embed=embed)
        if stats.written:
            self.rebuild_keywords()
        return stats

    def reembed_all(self) -> None:
        """Re-derive everything (the embedding model changed): no vectors from two models are mixed."""
        if self.embedder is None:
            raise ValueError("re-embedding needs the embedding model")
        self.store.reset_chunks(self.embedder.dim)
        self.rederive_all()

    def rederive_all(self) -> None:
        """Rebuild every derived row from the conversations; stored vectors are reused by content key."""
        ids = self.store.conversation_ids()
        for start in range(0, len(ids), 64):
            batch = self._stored(ids[start : start + 64])
            if batch:
                self._write(batch, {c.id: c.fingerprint() for c in batch}, truth=False)
        self.store.ensure_indexes()
        self.store.build_matrix()


def _keyword_rows(conversations: Sequence[Conversation], chunks: Iterable[Chunk]) -> Iterator[dict[str, object]]:
    """The keyword index's documents of these chunks (`KeywordIndex.replace`)."""
    by_id = {c.id: c for c in conversations}
    for ch in chunks:
        owner = by_id[ch.conversation_id]
        yield {
            "id": ch.id,
            "conversation_id": ch.conversation_id,
            "kind": ch.kind,
            "first_index": ch.first_index,
            "last_index": ch.last_index,
            "message_ids": list(ch.message_ids),
            "text": ch.text,
            "source": owner.source,
            "project": owner.project,
            "updated_at": naive_utc(owner.updated_at),
            "at": unit_time(owner, ch.first_index),
            "tool": ch.kind == MESSAGE and owner.messages[ch.first_index].role == "tool",
            **(_touched_fields(owner.messages[ch.first_index]) if ch.kind == MESSAGE else {}),
        }


def _touched_fields(message: Message) -> dict[str, str]:
    """The keyword fields of what a message's tool calls touched: the files edited or created, and
    the files read and commands run (`KeywordIndex.find_touched`)."""
    if not message.touches:
        return {}
    edited = [t.target for t in message.touches if t.action in {"edited", "created"}]
    other = [t.target for t in message.touches if t.action not in {"edited", "created"}]
    return {"edited": "\n".join(edited), "touched": "\n".join(other)}
