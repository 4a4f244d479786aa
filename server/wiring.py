"""How the settings become working parts: the library, the exclusions, the syncer.

Shared by the MCP server (its background sync) and the CLI, so neither reaches through the other.
Importing this module stays cheap: the store and the sources pull in lancedb (~1.5 s), so they are
imported inside the functions that build them, after the server has answered `initialize`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from server.settings import Settings

if TYPE_CHECKING:
    from importers.sources.privacy import Exclusions
    from importers.sources.sync import Syncer
    from storage.library import Library


def open_library(settings: Settings, *, load_model: bool = True) -> Library:
    """The real library, with the configured model (not loaded for commands that only read or delete)."""
    from storage.library import Library  # deferred: pulls in lancedb (start-up speed)

    return Library.open(
        settings.home, model_name=settings.model_name(), cache_dir=settings.model_cache, load_model=load_model
    )


def exclusions_from(settings: Settings) -> Exclusions:
    """The exclusion settings (`PASTCHATS_EXCLUDE_PROJECTS`, `_PATHS`, `_SOURCES`); absent ones are empty."""
    from importers.sources.privacy import Exclusions  # deferred: pulls in lancedb (start-up speed)

    return Exclusions(
        projects=tuple(settings.exclude_projects),
        paths=tuple(settings.exclude_paths),
        sources=tuple(settings.exclude_sources),
    )


def syncer_for(settings: Settings, library: Library, extra: Sequence[Path] = ()) -> Syncer:
    """The Syncer the settings describe: where the agents keep their logs, extras, exclusions."""
    from importers.sources.sync import Syncer  # deferred: pulls in lancedb (start-up speed)

    return Syncer(
        library,
        env=settings.agent_env,
        home=settings.user_home,
        extra_paths=[*settings.sync_paths, *extra],
        exclusions=exclusions_from(settings),
    )
