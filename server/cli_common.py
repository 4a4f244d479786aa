"""What every `pastchats` command shares: settings from flags, the opened store, options, output."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from storage.errors import PastchatsError
from storage.times import parse_iso

if TYPE_CHECKING:
    from pydantic import BaseModel

    from server.settings import Settings
    from storage.catalog import Catalog
    from storage.library import Library

T = TypeVar("T")


class IsoDatetime(click.ParamType[datetime, Any]):
    name = "datetime"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        parsed = parse_iso(str(value))
        if parsed is None:
            self.fail(f"{value!r} is not an ISO 8601 date or time (e.g. 2025-01-20 or 2025-01-20T10:00Z)")
        return parsed


ISO = IsoDatetime()

json_option = click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")


def make_settings(ctx: click.Context, *, log: bool = True, **overrides: Any) -> Settings:
    """The one Settings object: command-line flags over environment over defaults. `log=False`: logging
    was configured already, from the same values (`serve`'s quick start)."""
    # deferred, like every import a command needs but `--help` and argument errors do not: pydantic
    # and the importers are most of what is left of start-up once LanceDB is out of the way
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from server.logs import configure_logging
    from server.settings import Settings

    given = {**ctx.ensure_object(dict), **overrides}
    try:
        settings = Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise click.ClickException(f"invalid setting: {problems}") from None
    except SettingsError as exc:  # a list or mapping variable that is not JSON
        raise click.ClickException(f"invalid setting: {exc}; lists and mappings are JSON, e.g. '[\"a\"]'") from None
    if log:
        configure_logging(settings)
    return settings


class PastchatsGroup(click.Group):
    """The CLI's one translation of an expected failure (and of a tool's error, for the commands that
    answer as the tools do) into one line on stderr and exit status 1, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PastchatsError as exc:
            raise click.ClickException(str(exc)) from None
        except Exception as exc:
            # A ToolError can only come from a tool body (`as_tool`), which has imported the MCP SDK;
            # looked up here rather than imported, so that other commands never load it (start-up speed).
            sdk = sys.modules.get("mcp.server.mcpserver.exceptions")
            if sdk is not None and isinstance(exc, sdk.ToolError):
                raise click.ClickException(str(exc)) from None
            raise


def catalog_or_library(settings: Settings, stack: ExitStack) -> Catalog | Library:
    """What `stats` and `recent` read: the catalog when it reflects the store as it is (no LanceDB
    import at all), else the store itself, opened without the model (which also rebuilds the catalog)."""
    from storage.catalog import Catalog  # deferred: the results models (start-up speed of --help)

    catalog = stack.enter_context(Catalog.read(settings.home.expanduser(), settings.model_name()))
    return catalog if catalog is not None else stack.enter_context(opened(settings, model=False))


def catalog_or_store(settings: Settings, stack: ExitStack) -> Catalog | Library:
    """What `read` and `export` read: the catalog when it reflects the store as it is (no LanceDB),
    else the store opened without the model. Unlike `catalog_or_library`, `stats` is not asked of it,
    so no model name is needed."""
    from storage.catalog import Catalog  # deferred: the results models (start-up speed of --help)

    catalog = stack.enter_context(Catalog.read(settings.home.expanduser()))
    return catalog if catalog is not None else stack.enter_context(opened(settings, model=False))


@contextmanager
def opened(settings: Settings, *, model: bool = True) -> Iterator[Library]:
    """The store, with the embedding model loaded only when `model` (search, import, sync need it)."""
    from server import wiring

    library = wiring.open_library(settings, load_model=model)
    try:
        yield library
    finally:
        library.close()


def as_tool(name: str, work: Callable[[], T]) -> T:
    """Run a tool body as the MCP server does: its errors read exactly as the model would see them."""
    from tools.errors import guarded  # deferred: not needed by commands that are no tool

    return guarded(name, work)


def emit(output: BaseModel, text: str, as_json: bool) -> None:
    click.echo(output.model_dump_json(indent=2) if as_json else text)
