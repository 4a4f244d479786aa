"""Opening the store: the one way every face (the CLI, the MCP server, the page) and every service
(import, sync, embedding, doctor) gets a `Library`, named for what the caller needs (`open_store`).

Importing this module stays cheap: the store and the model pull in NumPy, pyarrow and onnxruntime, so
they are imported inside the functions that build them, after the server has answered `initialize`.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.embedding.embedder import Embedder
    from storage.library import Library
    from storage.redaction import Redaction

log = logging.getLogger("pastchats.server")


def redaction_from(settings: Settings) -> Redaction:
    """How secrets are taken out of what is stored (`PASTCHATS_REDACT`, `PASTCHATS_REDACT_ALLOW`)."""
    from storage.redaction import Redaction

    return Redaction(enabled=settings.redact, allow=tuple(settings.redact_allow))


def tighten_own_cache() -> None:
    """pastchats' own model cache, made its user's alone if it was not (made by an older pastchats, or
    loosened since), saying so once. A cache elsewhere (`FASTEMBED_CACHE_PATH`) is the user's to set."""
    from server.settings import own_cache
    from storage.owner_only import tighten

    if loosened := tighten(own_cache()):
        log.warning(
            "made pastchats' model cache in %s owner-only: %d file(s) and folder(s) in it could be read by "
            "other users of this machine",
            own_cache(),
            loosened,
        )


# What a caller needs of the store:
# - "read": `stats`, `recent`, `read`, `export`: no model, and LanceDB only when opening must repair.
# - "search": the MCP server, the page, `pastchats search`: ready for the first search as early as
#   possible, and following the store's model when another process switches it.
# - "write": import, sync, reindex, embedding what awaits it: the model loaded first.
# - "write-without-model": delete, forget, switching to another model (which brings its own).
Need = Literal["read", "search", "write", "write-without-model"]


def open_store(settings: Settings, need: Need) -> Library:
    """The store in `settings.home`, opened as `need` says (see `Need`)."""
    if need == "read":
        return _for_reading(settings)
    if need == "search":
        return _for_searching(settings)
    return open_library(settings, load_model=need == "write")


def open_library(settings: Settings, *, load_model: bool = True) -> Library:
    """The library built from the settings and healed, with the configured model or without it
    (`open_store`'s writers; tests put a library of their own in its place)."""
    from server.settings import derived_models_dir
    from storage.library import Library  # deferred: pulls in lancedb (start-up speed)

    tighten_own_cache()
    library = Library.open(
        settings.home,
        model_name=settings.model_name(),
        cache_dir=settings.model_cache,
        load_model=load_model,
        derived_dir=derived_models_dir(),
        redaction=redaction_from(settings),
    )
    return shared(settings, library)


def shared(settings: Settings, library: Library) -> Library:
    """The library, exchanging its chats with the shared store the settings name (if any)."""
    if settings.store_uri:
        from storage.stores.shared_store import SharedStore

        library.share(SharedStore(settings.store_uri))
    return library


class ModelLoad:
    """The embedding model, loaded on its own thread from the moment this is made."""

    def __init__(self, name: str, cache: Path | None):
        self._name, self._cache = name, cache
        self.embedder: Embedder | None = None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._load, name="pastchats-model", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        from storage.embedding.embedder import EmbedderUnavailable, FastEmbedder

        try:
            self.embedder = FastEmbedder(self._name, self._cache)
        except EmbedderUnavailable as exc:
            log.info("%s; search will be keyword-only", exc)
            self.error = str(exc)
        except Exception as exc:  # onnxruntime and fastembed raise many kinds; search still answers
            log.exception("the embedding model failed to load")
            self.error = f"the embedding model failed to load ({type(exc).__name__}); see the server log"

    def result(self) -> tuple[Embedder | None, str | None]:
        self._thread.join()
        return self.embedder, self.error


def _opened_without_model(settings: Settings) -> Library:
    """The store opened as reads need it: no model, nothing repaired yet (`Library.needs_repair`)."""
    from storage.library import Library

    library = Library.open(
        settings.home,
        model_name=settings.model_name(),
        load_model=False,
        heal=False,
        redaction=redaction_from(settings),
    )
    return shared(settings, library)


def _for_reading(settings: Settings) -> Library:
    """Without the model, and without LanceDB unless opening has something to repair, as a server opens it."""
    library = _opened_without_model(settings)
    if library.needs_repair():
        library.repair()
    return library


def _for_searching(settings: Settings) -> Library:
    """The model loads on its own thread while the store opens, so a first search waits for the slower
    of the two, not their sum. LanceDB is opened only when opening has something to repair (a crashed
    write, another model's vectors, a derived file out of step); otherwise reads come from the derived
    files and the change log, and LanceDB is imported on first need (a changed chat, a write).
    """
    from storage.embedding.embedder import FastEmbedder

    tighten_own_cache()
    model = ModelLoad(settings.model_name(), settings.model_cache)
    library = _opened_without_model(settings)
    if library.shared is not None:  # whether it answers, asked while the model loads (searches say if not)
        from storage.writing.exchange import probe

        library.shared_probe = probe(library.home, library.shared)
    library.prepare()
    library.use_model(*model.result())
    if library.needs_repair():
        log.info("the store needs repair before serving: opening LanceDB")
        library.repair()
    library.follow_store_model(lambda name: FastEmbedder(name, settings.model_cache))
    return library
