"""Every failure pastchats expects, in one tree under `PastchatsError`.

An expected failure is one the user (or the model) can act on: its message is one line that names
the next step. Anything that is not a `PastchatsError` is a bug: logged with its traceback, shown as
one short line. Each error is translated exactly once per surface: to an MCP `ToolError` by
`tools.errors.tool_error` and to a CLI error by `server.cli.common.PastchatsGroup`.

    PastchatsError                     storage.errors
    ├── StoreError                     storage.errors: the store cannot do what was asked
    │   ├── StoreBusy                  storage.errors: another process is writing; try again later
    │   ├── StoreReadOnly              storage.errors: the store's folder cannot be written (a backup mount)
    │   ├── StoreDamaged               storage.errors: a table cannot be read; `pastchats doctor --fix`
    │   ├── DiskFull                   storage.errors: the disk filled during a write; what was committed stays
    │   ├── StoreTooNew                storage.errors: written by a newer pastchats; upgrade pastchats
    │   ├── SharedStoreUnreachable     storage.errors: the shared store on S3 does not answer; local reads go on
    │   ├── NotFound                   storage.errors: no chat with that uri
    │   │   └── AmbiguousUri           storage.errors: a shortened uri that starts several chats' ids
    │   ├── UnknownMessage             storage.errors: read_chat's `around` names no message
    │   │   └── PastTheEnd             storage.errors: read_chat's `offset` is past the last message
    │   └── UnknownProject             storage.errors: a project filter that names no project
    ├── EmbedderUnavailable            storage.errors: the embedding model cannot load (keyword-only)
    ├── ModelError                     storage.embedding.model_files: a model cannot be found, installed or loaded
    ├── SourceError                    storage.errors: a source cannot be read at all (missing, unknown format)
    ├── Unusable                       importers._common: one conversation cannot be imported (becomes a skip)
    ├── BrokenJson                     importers._json: JSON stopped parsing part way (what came before is kept)
    ├── ArgumentError                  tools.arguments: tool arguments that do not fit the schema
    ├── InsecureBinding                server.transports: listening off loopback without a token
    ├── PortTaken                      server.ui.serving: `pastchats ui` cannot listen on the port asked for
    ├── BadInput                       server.ui.context: a value in the page's address it cannot use
    └── SetupError                     server.services.setup_clients: a client's config cannot be merged as it is

`SourceError` lives here, beside the store's errors, so that every layer can name it without
importing the layer above; `importers.base` re-exports it.
"""

from __future__ import annotations


class PastchatsError(Exception):
    """An expected failure; the message is one line for the user that names the next step."""


class StoreError(PastchatsError):
    """The store cannot do what was asked (unknown uri, store busy, no model to import with...)."""


class StoreBusy(StoreError):
    """Another process is writing to this store."""

    def __init__(self, holder: str | None = None) -> None:
        who = f" ({holder})" if holder else ""
        super().__init__(f"another pastchats process is writing to this store{who}; try again when it has finished")


class StoreReadOnly(StoreError):
    """The store's folder cannot be written: reading works, writing does not."""

    def __init__(self, home: object, action: str = "write to it") -> None:
        super().__init__(
            f"the store in {home} is read-only (a backup mount or a locked-down folder): reading works, but "
            f"pastchats cannot {action}. Make it writable, or copy it and pass the copy with --home."
        )


class StoreUncreatable(StoreError):
    """The store's folder does not exist and cannot be made (a read-only home, a folder of another user)."""

    def __init__(self, home: object, reason: str) -> None:
        super().__init__(
            f"cannot create the store in {home} ({reason}): set PASTCHATS_HOME to a folder you can write "
            "(or pass --home) to keep it there"
        )


class StoreDamaged(StoreError):
    """A table of the source of truth cannot be read as it is; `pastchats doctor --fix` repairs it."""


class DiskFull(StoreError):
    """The disk filled while writing. What was committed before stays; the rest is retried."""


def is_disk_full(error: BaseException) -> bool:
    """Whether a failure is the disk (or a quota) filling up, as Python or LanceDB's Rust side reports it."""
    import errno

    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error).lower()
    return "no space left on device" in text or "disk quota exceeded" in text


def is_read_only(error: BaseException) -> bool:
    """Whether a failure is a folder or file that may not be written (a read-only mount, a permission)."""
    import errno

    if isinstance(error, OSError) and error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return True
    text = str(error).lower()
    return "read-only file system" in text or "permission denied" in text


class StoreTooNew(StoreError):
    """The store was written by a newer pastchats, in a format this one does not know."""


class SharedStoreUnreachable(StoreError):
    """The shared store (`PASTCHATS_STORE_URI`) did not answer: what this machine holds is still searched."""

    def __init__(self, uri: str, reason: str) -> None:
        self.uri, self.reason = uri, reason
        super().__init__(
            f"the shared store {uri} could not be reached ({reason}); this machine's chats are still searchable. "
            "Check the AWS_* variables and the network, then run `pastchats doctor`"
        )


class NotFound(StoreError):
    """No chat with that uri."""


class AmbiguousUri(NotFound):
    """A shortened uri that starts the ids of several chats; `candidates` are some of them, in id order.
    The tools name the call (or, for a person, the command) that reads the first."""

    def __init__(self, prefix: str, candidates: list[str], more: bool) -> None:
        self.prefix, self.candidates = prefix, candidates
        listed = ", ".join(repr(cid) for cid in candidates) + (" and more" if more else "")
        super().__init__(f"uri {prefix!r} is the start of more than one chat's uri: {listed}")


class UnknownMessage(StoreError):
    """read_chat's `around` names no message of the chat; the message says which numbers exist."""


class PastTheEnd(UnknownMessage):
    """read_chat's `offset` is past the chat's last message. The tools add the call (or, for a person,
    the command) that reads the last page, which starts at `last_offset`."""

    def __init__(self, uri: str, offset: int, message_count: int, limit: int) -> None:
        self.uri, self.limit = uri, limit
        self.last_offset = max(0, message_count - limit)
        super().__init__(
            f"offset={offset} is past the end of chat {uri!r}, which has {message_count} messages "
            f"(offsets 0-{max(message_count - 1, 0)})."
        )


class UnknownProject(StoreError):
    """A project filter that names no project in the store; the message lists the ones there are."""

    def __init__(self, name: str, known: list[str]):
        listed = ", ".join(repr(p) for p in known[:30]) + (f" and {len(known) - 30} more" if len(known) > 30 else "")
        hint = f"Known projects: {listed}." if known else "No chat in the store has a project."
        super().__init__(f"project {name!r} is not a known project. {hint} Pass one of them, or leave project out.")
        self.known = known


class EmbedderUnavailable(PastchatsError):
    """The embedding model cannot be loaded (not downloaded, no network, broken cache)."""


class SourceError(PastchatsError):
    """The whole source cannot be read (missing, unreadable, unknown format). One line, for the user."""
