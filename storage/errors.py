"""Every failure pastchats expects, in one tree under `PastchatsError`.

An expected failure is one the user (or the model) can act on: its message is one line that names
the next step. Anything that is not a `PastchatsError` is a bug: logged with its traceback, shown as
one short line. Each error is translated exactly once per surface: to an MCP `ToolError` by
`tools.errors.tool_error` and to a CLI error by `server.cli.common.PastchatsGroup`.

    PastchatsError                     storage.errors
    ├── StoreError                     storage.errors: the store cannot do what was asked
    │   ├── StoreBusy                  storage.errors: another process is writing; try again later
    │   ├── StoreTooNew                storage.errors: written by a newer pastchats; upgrade pastchats
    │   ├── NotFound                   storage.errors: no chat with that uri
    │   ├── UnknownMessage             storage.errors: read_chat's `around` names no message
    │   └── UnknownProject             storage.errors: a project filter that names no project
    ├── EmbedderUnavailable            storage.errors: the embedding model cannot load (keyword-only)
    ├── ModelError                     storage.embedding.model_files: a model cannot be found, installed or loaded
    ├── SourceError                    storage.errors: a source cannot be read at all (missing, unknown format)
    ├── Unusable                       importers._common: one conversation cannot be imported (becomes a skip)
    ├── BrokenJson                     importers._json: JSON stopped parsing part way (what came before is kept)
    ├── ArgumentError                  tools.arguments: tool arguments that do not fit the schema
    ├── InsecureBinding                server.transports: listening off loopback without a token
    └── SetupError                     server.setup_clients: a client's config cannot be merged as it is

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

    def __init__(self) -> None:
        super().__init__("another pastchats process is writing to this store; try again when it has finished")


class StoreTooNew(StoreError):
    """The store was written by a newer pastchats, in a format this one does not know."""


class NotFound(StoreError):
    """No chat with that uri."""


class UnknownMessage(StoreError):
    """read_chat's `around` names no message of the chat; the message says which numbers exist."""


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
