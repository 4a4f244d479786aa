"""Keeping the store in step with the agents' logs, in one home: the `Syncer` the settings describe
(`syncer_for`: where the agents keep their logs, extra paths, exclusions), the background sync a
server runs (`background`) and the live watcher (`watching`). What reads each agent's logs is in
`importers/` (`importers.sources.sync` walks them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importers.sources.privacy import Exclusions
    from importers.sources.sync import Syncer
    from server.settings import Settings
    from storage.library import Library


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
