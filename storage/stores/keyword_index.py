"""The Tantivy BM25 index over chunk text: derived from LanceDB, rebuildable at any time.

Queries are built from analysed tokens (`storage.query.analysis`), never parsed from user text.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import tantivy

from storage.query.analysis import AnalysedQuery
from storage.query.filters import Filters
from storage.stores.lance_store import UnitHit
from storage.times import naive_utc
from storage.units.windows import MESSAGE

# 4: a `kind` field (message, window, chat); 5: `tool` (the passage is tool output); 6: `edited` and
# `touched` (the files a message's tool calls edited or created; the files read and commands run).
SCHEMA_VERSION = "6"
TITLE_BOOST = 0.5
PHRASE_BOOST = 1.5
# The files a message touched (`find_touched`): a whole path or name counts more than one of its words.
TOUCH_PHRASE_BOOST = 2.0
BIGRAM_BOOST = 0.5  # adjacent query words found near each other ("state lock") count extra
# Each document keeps the start of its text, to tell which query words a hit holds (evidence for
# fusion and for a match's strength). Passages are ~150 words; only a pasted blob is cut.
STORED_TEXT_CHARS = 4000


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("conversation_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("kind", tokenizer_name="raw")
    builder.add_text_field("text", tokenizer_name="en_stem")
    builder.add_bytes_field("stored_text", stored=True)  # not indexed: read back only
    builder.add_text_field("title", tokenizer_name="en_stem")
    builder.add_text_field("project", tokenizer_name="raw")
    builder.add_text_field("source", tokenizer_name="raw")
    builder.add_date_field("updated_at", fast=True, indexed=True)
    builder.add_date_field("at", fast=True, indexed=True)
    builder.add_integer_field("first_index", stored=True, indexed=False)
    builder.add_integer_field("last_index", stored=True, indexed=False)
    builder.add_text_field("message_ids", stored=True, tokenizer_name="raw", index_option="basic")
    # 1 for tool output (command results, file dumps, "Todos have been modified successfully"): searchable,
    # but it never makes a chat a strong match and ranks below what the user and the assistant wrote.
    builder.add_integer_field("tool", stored=True, indexed=False)
    builder.add_text_field("edited", tokenizer_name="en_stem")
    builder.add_text_field("touched", tokenizer_name="en_stem")
    return builder.build()


def _text(doc: dict[str, Any]) -> str:
    """A document's stored text (`Document.to_dict()`: a field without values has no key)."""
    stored = doc.get("stored_text")
    return bytes(stored[0]).decode("utf-8", "replace") if stored else ""


class KeywordIndex:
    """The index in `path`. A damaged index (a garbled `meta.json`, a lost or cut segment file) or one
    that cannot be opened does not stop the store: it opens empty in memory, `damage` says why, and
    the library rebuilds it from the conversations (`reset`, then `Ingestor.rebuild_keywords`)."""

    def __init__(self, path: Path):
        self.path = path
        self.schema = _schema()
        self.damage: str | None = None
        self._meta_mtime: int = 0
        try:
            self.index = self._open()
        except (ValueError, OSError) as exc:
            self.damage = " ".join(str(exc).split())[:200]
            self.index = tantivy.Index(self.schema)  # in memory, empty: reads answer nothing meanwhile
            self._meta_mtime = -1  # never reloaded from the files until `reset`

    def _open(self) -> Any:
        """The index on disk, with a searcher made once: opening a searcher reads every segment's
        footer, so a lost or cut segment file is found here (cheaply), not by the first search."""
        if self.path.is_dir() and not os.access(self.path, os.W_OK):
            return self._open_copy()
        marker = self.path / "pastchats-schema"
        try:
            current = marker.read_text().strip() == SCHEMA_VERSION
        except OSError:
            current = False
        if self.path.exists() and not current:
            shutil.rmtree(self.path)  # derived data in an old layout: rebuilt from LanceDB by the caller
        self.path.mkdir(parents=True, exist_ok=True)
        index = tantivy.Index(self.schema, path=str(self.path), reuse=True)
        if not current:
            marker.write_text(SCHEMA_VERSION)
        index.searcher()
        return index

    def _open_copy(self) -> Any:
        """A store that may not be written (a backup mount): Tantivy takes a lock file even to read, so
        it reads a private copy, removed when this process ends."""
        copy = Path(tempfile.mkdtemp(prefix="pastchats-keyword-"))
        atexit.register(shutil.rmtree, copy, True)
        shutil.copytree(self.path, copy, dirs_exist_ok=True)
        index = tantivy.Index(self.schema, path=str(copy), reuse=True)
        index.searcher()
        self._meta_mtime = -1  # a copy: nothing to reload
        return index

    def reset(self) -> None:
        """Start again from an empty index on disk (callers hold the write lock, and refill it)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.index = self._open()
        self.damage = None
        self._meta_mtime = 0

    # ---- reads -------------------------------------------------------------------------------

    def reader(self) -> Any:
        """A searcher that has seen every commit, also those of other processes. A search takes one and
        passes it to each of its keyword calls: one view of the index throughout, and one `stat` instead
        of four (each a moment the calling thread lets go of the GIL and may wait for it beside the
        vector leg)."""
        if self._meta_mtime == -1:  # damaged: the empty index in memory until the rebuild
            return self.index.searcher()
        meta = self.path / "meta.json"
        try:
            mtime = meta.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = 0
        if mtime != self._meta_mtime:
            try:
                self.index.reload()
            except ValueError as exc:  # damaged since it opened (by another process, or on disk)
                self.damage = " ".join(str(exc).split())[:200]
            self._meta_mtime = mtime
        return self.index.searcher()

    def doc_count(self) -> int:
        return int(self.reader().num_docs)

    def holds(self, kind: str, searcher: Any = None) -> bool:
        """Whether the index holds units of this kind (a store chunked without windows has none)."""
        searcher = self.reader() if searcher is None else searcher
        return int(searcher.doc_freq("kind", kind)) > 0

    def doc_freqs(self, terms: Iterable[str], searcher: Any = None) -> tuple[int, dict[str, int]]:
        """How many documents there are, and how many hold each (analysed) term."""
        searcher = self.reader() if searcher is None else searcher
        return int(searcher.num_docs), {term: int(searcher.doc_freq("text", term)) for term in terms}

    def search(self, query: AnalysedQuery, limit: int, filters: Filters, searcher: Any = None) -> list[UnitHit]:
        """The best messages by BM25, read (the keyword leg alone, as benchmarks time it). `searcher`:
        the search's own (`reader`), else a fresh one."""
        searcher = self.reader() if searcher is None else searcher
        return self.read([address for _score, address in self.find_scored(query, limit, filters, searcher)], searcher)

    # The keyword leg in two steps, for a caller that runs every Tantivy search first and reads the
    # documents after: a search lets go of the GIL and, beside a thread running Python, may wait up to the
    # switch interval (5 ms) to get it back; document reads keep it. `SearchEngine.rank` searches while
    # the vector leg's worker is in native code (the query embedding), and reads while it scans.

    def _query(self, query: AnalysedQuery) -> Any:
        """The BM25 query: each term in the text and the title, and adjacent terms and identifiers as
        phrases."""
        Q, Occur = tantivy.Query, tantivy.Occur
        should: list[tuple[Any, Any]] = []
        for term in query.terms:
            should.append((Occur.Should, Q.term_query(self.schema, "text", term)))
            title = Q.term_query(self.schema, "title", term)
            should.append((Occur.Should, Q.boost_query(title, TITLE_BOOST)))
        for left, right in zip(query.terms, query.terms[1:], strict=False):
            bigram = Q.phrase_query(self.schema, "text", [left, right], slop=1)
            should.append((Occur.Should, Q.boost_query(bigram, BIGRAM_BOOST)))
        for phrase in query.phrases:
            should.append(
                (Occur.Should, Q.boost_query(Q.phrase_query(self.schema, "text", list(phrase)), PHRASE_BOOST))
            )
        for phrase in query.required:  # a quoted word the terms leave out (a stop word) still ranks
            if len(phrase) == 1 and phrase[0] not in query.terms:
                should.append((Occur.Should, Q.term_query(self.schema, "text", phrase[0])))
        return Q.boolean_query(should)

    def _held(self, tokens: tuple[str, ...], fields: tuple[str, ...] = ("text",)) -> Any:
        """Documents holding these (analysed) tokens one after another, in any of `fields`."""
        Q = tantivy.Query
        queries = [
            Q.term_query(self.schema, name, tokens[0])
            if len(tokens) == 1
            else Q.phrase_query(self.schema, name, list(tokens))
            for name in fields
        ]
        return queries[0] if len(queries) == 1 else Q.boolean_query([(tantivy.Occur.Should, q) for q in queries])

    def _grammar(self, query: AnalysedQuery) -> list[tuple[Any, Any]]:
        """The grammar's clauses: every quoted phrase held, no excluded word in the text or the title."""
        Occur = tantivy.Occur
        clauses = [(Occur.Must, self._held(tokens)) for tokens in query.required]
        return clauses + [(Occur.MustNot, self._held(tokens, ("text", "title"))) for tokens in query.excluded]

    def holding(self, chunk_ids: Iterable[str], query: AnalysedQuery, searcher: Any = None) -> dict[str, str]:
        """Of these units (messages or windows), those holding every quoted phrase and no excluded word,
        with their stored text (to check the phrase word for word): the vector leg's hits, kept to what
        the grammar asks."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return {}
        Q, Occur = tantivy.Query, tantivy.Occur
        ids = Q.boolean_query([(Occur.Should, Q.term_query(self.schema, "chunk_id", cid)) for cid in wanted])
        searcher = self.reader() if searcher is None else searcher
        found = searcher.search(Q.boolean_query([(Occur.Must, ids), *self._grammar(query)]), len(wanted)).hits
        out = {}
        for _score, address in found:
            doc = searcher.doc(address).to_dict()
            out[doc["chunk_id"][0]] = _text(doc)
        return out

    def chats_holding(
        self, chat_ids: Iterable[str], excluded: tuple[tuple[str, ...], ...], searcher: Any = None
    ) -> set[str]:
        """Of these chats, those with an excluded word or phrase anywhere: in any passage (tool output
        too) or the title. One search a chat, each stopping at its first document."""
        if not excluded:
            return set()
        Q, Occur = tantivy.Query, tantivy.Occur
        searcher = self.reader() if searcher is None else searcher
        words = [(Occur.Should, self._held(tokens, ("text", "title"))) for tokens in excluded]
        anywhere = words[0][1] if len(words) == 1 else Q.boolean_query(words)
        holding = set()
        for cid in dict.fromkeys(chat_ids):
            chat = Q.term_query(self.schema, "conversation_id", cid)
            if searcher.search(Q.boolean_query([(Occur.Must, chat), (Occur.Must, anywhere)]), 1).hits:
                holding.add(cid)
        return holding

    def find_scored(
        self,
        query: AnalysedQuery,
        limit: int,
        filters: Filters,
        searcher: Any = None,
    ) -> list[tuple[float, Any]]:
        """The best messages' addresses with their BM25 scores: (score, address), best first (`read`
        reads them)."""
        if not query.terms and not query.required:
            return []
        return self._run(self._query(query), limit, filters, searcher, self._grammar(query))

    def find_touched(
        self, query: AnalysedQuery, limit: int, filters: Filters, searcher: Any = None, *, edited: bool
    ) -> list[Any]:
        """The messages whose tool calls touched what the query names (a path, a file's name, a command),
        unread: `edited`, the files they edited or created; else the files they read and the commands they ran."""
        field = "edited" if edited else "touched"
        searcher = self.reader() if searcher is None else searcher
        # Term lookups, not a search: most queries name nothing any tool call touched.
        if not any(searcher.doc_freq(field, term) for term in query.terms):
            return []
        Q, Occur = tantivy.Query, tantivy.Occur
        should = [(Occur.Should, Q.term_query(self.schema, field, term)) for term in query.terms]
        for phrase in query.phrases:
            whole = Q.phrase_query(self.schema, field, list(phrase))
            should.append((Occur.Should, Q.boost_query(whole, TOUCH_PHRASE_BOOST)))
        return [address for _score, address in self._run(Q.boolean_query(should), limit, filters, searcher)]

    def find_phrases(self, query: AnalysedQuery, limit: int, filters: Filters, searcher: Any = None) -> list[Any]:
        """The messages that hold one of the query's identifiers word for word, unread."""
        if not query.phrases:
            return []
        Q, Occur = tantivy.Query, tantivy.Occur
        phrases = [(Occur.Should, Q.phrase_query(self.schema, "text", list(p))) for p in query.phrases]
        found = self._run(Q.boolean_query(phrases), limit, filters, searcher, self._grammar(query))
        return [address for _score, address in found]

    def read(self, addresses: list[Any], searcher: Any) -> list[UnitHit]:
        """The units at these addresses (found with the same searcher), in their order."""
        out = []
        for address in addresses:
            # One dictionary of every stored field: half the time of six lookups on the document (300
            # documents a search).
            doc = searcher.doc(address).to_dict()
            out.append(
                UnitHit(
                    doc["chunk_id"][0],
                    doc["conversation_id"][0],
                    doc["first_index"][0],
                    doc["last_index"][0],
                    tuple(doc.get("message_ids", ())),
                    text=_text(doc),
                    tool=bool(doc.get("tool", (0,))[0]),
                )
            )
        return out

    def stored_texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        """The stored text of these units (as far as `STORED_TEXT_CHARS`), by chunk id."""
        Q, Occur = tantivy.Query, tantivy.Occur
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return {}
        ids = [(Occur.Should, Q.term_query(self.schema, "chunk_id", cid)) for cid in wanted]
        searcher = self.reader()
        out = {}
        for _score, address in searcher.search(Q.boolean_query(ids), len(wanted)).hits:
            doc = searcher.doc(address).to_dict()
            out[doc["chunk_id"][0]] = _text(doc)
        return out

    def _run(
        self,
        query: Any,
        limit: int,
        filters: Filters,
        searcher: Any = None,
        grammar: list[tuple[Any, Any]] | None = None,
    ) -> list[tuple[float, Any]]:
        """The best messages matching `query`, the grammar's clauses and the filters (windows are indexed
        too, never searched)."""
        Occur = tantivy.Occur
        clauses: list[tuple[Any, Any]] = [(Occur.Must, query), *(grammar or [])]
        clauses.append((Occur.Must, tantivy.Query.term_query(self.schema, "kind", MESSAGE)))
        clauses += [(Occur.Must, q) for q in self._filter_queries(filters)]
        searcher = self.reader() if searcher is None else searcher
        return list(searcher.search(tantivy.Query.boolean_query(clauses), limit).hits)

    def _filter_queries(self, filters: Filters) -> Iterator[Any]:
        Q = tantivy.Query
        if filters.projects is not None:
            names = [(tantivy.Occur.Should, Q.term_query(self.schema, "project", p)) for p in filters.projects]
            yield Q.boolean_query(names)
        if filters.source is not None:
            yield Q.term_query(self.schema, "source", filters.source)
        if filters.chats is not None:
            yield Q.term_set_query(self.schema, "conversation_id", sorted(filters.chats))
        if filters.after is not None or filters.before is not None:
            yield Q.range_query(
                self.schema,
                "at",
                tantivy.FieldType.Date,
                naive_utc(filters.after),
                naive_utc(filters.before),
                include_lower=filters.after is None,
                include_upper=filters.before is None,
            )

    # ---- writes (callers hold the write lock) ------------------------------------------------

    def replace(self, conversation_ids: Iterable[str], rows: Iterable[dict[str, Any]], titles: dict[str, str]) -> None:
        """Delete these conversations' documents and add `rows` (chunk rows), in one commit."""
        writer = self._writer(64_000_000)
        try:
            for cid in conversation_ids:
                writer.delete_documents_by_term("conversation_id", cid)
            for row in rows:
                writer.add_document(self._document(row, titles.get(row["conversation_id"], "")))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()

    def clear(self) -> None:
        writer = self._writer(15_000_000)
        writer.delete_all_documents()
        writer.commit()
        writer.wait_merging_threads()

    def _writer(self, heap_size: int) -> Any:
        """A writer, with the files no commit refers to removed first. A writer killed between
        writing a delete file and `meta.json` leaves that file behind under the very name the next
        commit's deletes take (the same segment and opstamp), and that commit would fail on it."""
        writer = self.index.writer(heap_size=heap_size, num_threads=1)
        writer.garbage_collect_files()
        return writer

    @staticmethod
    def _document(row: dict[str, Any], title: str) -> tantivy.Document:
        updated: datetime = row["updated_at"]
        fields: dict[str, Any] = {
            "chunk_id": row["id"],
            "conversation_id": row["conversation_id"],
            "kind": row.get("kind") or MESSAGE,
            "text": row["text"],
            "title": title,
            "source": row["source"],
            "updated_at": updated,
            "at": row.get("at") or updated,
            "stored_text": row["text"][:STORED_TEXT_CHARS].encode("utf-8", "replace"),
            "first_index": row["first_index"],
            "last_index": row["last_index"],
            "message_ids": list(row["message_ids"]),
            "tool": int(bool(row.get("tool"))),
        }
        for field in ("edited", "touched"):
            if row.get(field):
                fields[field] = row[field]
        if row.get("project") is not None:
            fields["project"] = row["project"]
        return tantivy.Document(**fields)
