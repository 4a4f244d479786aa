"""The shared table on an object store (`PASTCHATS_STORE_URI=s3://BUCKET/PREFIX`): every machine's chats,
redacted, in one LanceDB `conversations` table that several machines write at once.

Only the conversations go there, in the local table's schema: each machine derives its own passages,
vectors, keyword index and catalog from them (`storage.writing.exchange` brings them over), so search
never waits on the network and the machines need not share a model.

Concurrent writers are kept apart by LanceDB's own commit protocol (a commit that lost the race is
retried against the newer version), with no lock of pastchats' own across machines. LanceDB has no
unique key: two machines inserting the same new chat at once can both succeed, leaving it twice. That
is made harmless and then undone: every reader keeps one row per chat (the newest: `newer`), and every
listing deletes the other rows by their row ids, so the table converges to one row per chat.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from storage.errors import SharedStoreUnreachable
from storage.query.filters import sql_in
from storage.stores.lance_store import conversation_schema

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

TABLE = "conversations"
# A store that does not answer is said to be unreachable within seconds, not after minutes of retries.
TIMEOUTS = {"connect_timeout": "3s", "timeout": "60s", "client_max_retries": "2", "client_retry_timeout": "10"}
COMMIT_TRIES = 5  # a commit that keeps losing the race to other machines' commits is retried this often
BATCH = 200  # chats read or written per request
MAX_FRAGMENTS = 32  # files of the shared table before an exchange that wrote compacts it


@dataclass(frozen=True)
class Stamp:
    """What a chat's row says of its age: compared to tell which of two copies of a chat is newer."""

    version: str
    updated_at: datetime | None
    message_count: int

    def key(self) -> tuple[datetime, int, str]:
        return (self.updated_at or datetime.min, self.message_count, self.version)


def newer(a: Stamp, b: Stamp) -> bool:
    """Whether `a` is the newer copy of a chat: later update, then more messages, then (two machines'
    copies of the same moment) the greater fingerprint, so that every machine picks the same one."""
    return a.key() > b.key()


def storage_options(env: Mapping[str, str]) -> dict[str, str]:
    """LanceDB's options for an S3 or S3-compatible store, from the standard AWS variables."""
    options = dict(TIMEOUTS)
    names = {
        "AWS_ACCESS_KEY_ID": "aws_access_key_id",
        "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
        "AWS_SESSION_TOKEN": "aws_session_token",
        "AWS_REGION": "region",
        "AWS_ENDPOINT_URL": "endpoint",
        "AWS_ALLOW_HTTP": "allow_http",
    }
    for variable, option in names.items():
        if env.get(variable):
            options[option] = env[variable]
    if "endpoint" in options and "region" not in options:
        options["region"] = "us-east-1"  # S3-compatible servers ignore it, the client needs one
    return options


def short_reason(error: BaseException) -> str:
    """One line on why the store did not answer, without the Rust client's nested debug text."""
    text = " ".join(str(error).split())
    for marker in ("Connection refused", "NoSuchBucket", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        if marker in text:
            return marker.replace("Connection refused", "connection refused")
    if "dns error" in text or "failed to lookup address" in text:
        return "the host name does not resolve"
    if "timed out" in text.lower():
        return "it did not answer in time"
    return text[:160]


class SharedStore:
    """The shared `conversations` table at `uri`, opened on first use."""

    def __init__(self, uri: str, env: Mapping[str, str] | None = None):
        self.uri = uri.rstrip("/")
        self.options = storage_options(os.environ if env is None else env)
        self._table: Any = None

    def _open(self) -> Any:
        if self._table is not None:
            return self._table
        os.environ.setdefault("LANCEDB_LOG", "error")
        import lancedb

        for attempt in range(2):
            try:
                db = lancedb.connect(self.uri, storage_options=self.options, read_consistency_interval=timedelta(0))
                self._table = db.create_table(TABLE, schema=conversation_schema(), exist_ok=True)
                break
            except Exception as exc:
                reason = short_reason(exc)
                if reason != "NoSuchBucket" or attempt or not self._make_bucket():
                    raise SharedStoreUnreachable(self.uri, reason) from None
        return self._table

    def _make_bucket(self) -> bool:
        """Create the bucket the address names (a new MinIO or SeaweedFS server starts with none);
        False when these credentials may not (then the error says the bucket does not exist)."""
        import pyarrow.fs as pafs

        endpoint = self.options.get("endpoint")
        scheme = "http" if endpoint and endpoint.startswith("http://") else "https"
        try:
            s3 = pafs.S3FileSystem(
                access_key=self.options.get("aws_access_key_id"),
                secret_key=self.options.get("aws_secret_access_key"),
                session_token=self.options.get("aws_session_token"),
                region=self.options.get("region"),
                endpoint_override=endpoint.split("://", 1)[-1] if endpoint else None,
                scheme=scheme,
                allow_bucket_creation=True,
                connect_timeout=3,
                request_timeout=10,
            )
            s3.create_dir(self.uri.removeprefix("s3://").split("/", 1)[0])
        except (OSError, ValueError) as exc:
            log.info("could not create the bucket of %s: %s", self.uri, exc)
            return False
        log.warning("created the bucket of %s", self.uri)
        return True

    def _call(self, what: str, work: Any) -> Any:
        """Run `work(table)`, any failure to reach the store turned into one plain error."""
        table = self._open()
        try:
            return work(table)
        except SharedStoreUnreachable:
            raise
        except Exception as exc:
            log.info("the shared store failed to %s: %s", what, exc)
            raise SharedStoreUnreachable(self.uri, short_reason(exc)) from None

    def version(self) -> int:
        """The table's newest version: what a follower polls (one listing of its versions)."""
        return int(self._call("report its version", lambda table: table.version))

    def stamps(self) -> dict[str, Stamp]:
        """Every chat's stamp, one per chat. Rows a concurrent insert left twice are deleted here."""

        def read(table: Any) -> dict[str, Stamp]:
            columns = ["id", "version", "updated_at", "message_count"]
            rows = table.search().select(columns).with_row_id(True).limit(None).to_arrow()
            best: dict[str, tuple[Stamp, int]] = {}
            extra: list[int] = []
            for cid, version, updated, count, row in zip(
                *(rows.column(name).to_pylist() for name in [*columns, "_rowid"]), strict=True
            ):
                stamp = Stamp(version, updated, count or 0)
                held = best.get(cid)
                if held is None:
                    best[cid] = (stamp, row)
                    continue
                # Keep the newer copy (the lower row id on a tie, as every machine would choose).
                keep_new = newer(stamp, held[0]) or (stamp == held[0] and row < held[1])
                extra.append(held[1] if keep_new else row)
                if keep_new:
                    best[cid] = (stamp, row)
            if extra:
                log.info("the shared store held %d chat(s) twice: the older copies deleted", len(extra))
                for start in range(0, len(extra), BATCH):
                    where = f"_rowid IN ({', '.join(str(r) for r in extra[start : start + BATCH])})"
                    self._commit(lambda where=where: table.delete(where))
            return {cid: stamp for cid, (stamp, _) in best.items()}

        result: dict[str, Stamp] = self._call("list its chats", read)
        return result

    def rows(self, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The chats' rows, one per chat (the newest, should one be there twice), `BATCH` at a time."""
        for start in range(0, len(ids), BATCH):
            part = list(ids[start : start + BATCH])

            def read(table: Any, part: list[str] = part) -> list[dict[str, Any]]:
                return list(table.search().where(sql_in("id", part)).limit(None).to_arrow().to_pylist())

            found: dict[str, dict[str, Any]] = {}
            for row in self._call("read chats", read):
                held = found.get(row["id"])
                if held is None or newer(_stamp(row), _stamp(held)):
                    found[row["id"]] = row
            yield from found.values()

    def put(self, rows: pa.Table, held: Collection[str]) -> None:
        """Write these chats' rows; a stored copy is replaced only by a newer one (two machines syncing
        the same chat, each with the copy it read, keep the newer whoever commits last). Chats the
        table did not hold when listed (`held`: the ones it did) are appended: no join against every
        stored row (a request per data file); one another machine inserted meanwhile is then there
        twice, as it could be after two merges, until the next listing."""
        import pyarrow.compute as pc

        ids = rows.column("id")
        known = pc.is_in(ids, value_set=_strings(list(held)))
        new_rows, old_rows = rows.filter(pc.invert(known)), rows.filter(known)
        if new_rows.num_rows:
            self._call("write chats", lambda table: self._commit(lambda: table.add(new_rows)))
        if old_rows.num_rows:
            self._merge(old_rows)

    def _merge(self, rows: pa.Table) -> None:
        newer_source = (
            "target.updated_at IS NULL OR target.updated_at < source.updated_at OR "
            "(target.updated_at = source.updated_at AND (target.message_count < source.message_count OR "
            "(target.message_count = source.message_count AND target.version < source.version)))"
        )

        def write(table: Any) -> None:
            merge = table.merge_insert("id").when_matched_update_all(where=newer_source).when_not_matched_insert_all()
            self._commit(lambda: merge.execute(rows))

        self._call("write chats", write)

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), BATCH):
            part = list(ids[start : start + BATCH])
            self._call("delete chats", lambda table, part=part: self._commit(lambda: table.delete(sql_in("id", part))))

    def tidy(self) -> None:
        """Fold the small writes of many syncs into fewer files once they pile up (each listing reads
        every file), and delete what was superseded `CLEANUP_GRACE` ago: a slower reader on another
        machine may still be reading an older version. Housekeeping: a failure (another machine's
        commit won the race) is left for the next exchange."""
        from storage.stores.lance_store import CLEANUP_GRACE

        def fold(table: Any) -> None:
            if int(table.stats()["fragment_stats"]["num_fragments"]) > MAX_FRAGMENTS:
                table.optimize(cleanup_older_than=CLEANUP_GRACE)

        try:
            self._call("compact its table", fold)
        except SharedStoreUnreachable as exc:
            log.info("compacting the shared store waits for the next exchange: %s", exc)

    @staticmethod
    def _commit(work: Any) -> Any:
        """A commit, retried when another machine committed first and LanceDB could not rebase it."""
        for attempt in range(COMMIT_TRIES):
            try:
                return work()
            except Exception as exc:
                text = str(exc).lower()
                if attempt + 1 == COMMIT_TRIES or not ("conflict" in text or "retry" in text):
                    raise
                log.info("a commit to the shared store met another machine's: trying again (%s)", exc)
                time.sleep(0.2 * (attempt + 1))
        return None


def _strings(values: list[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.string())


def _stamp(row: Mapping[str, Any]) -> Stamp:
    return Stamp(row["version"], row["updated_at"], row["message_count"] or 0)
