"""`pastchats model status | list | install | use`: the embedding model, kept in pastchats' own cache.
Only `install` ever downloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from server.cli.common import make_settings, opened, quiet_option
from server.services.model import model_report
from storage.embedding.model_files import install_hint

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.embedding.model_files import ModelInfo

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _describe(name: str) -> ModelInfo:
    from storage.embedding.model_files import ModelError, describe

    try:
        return describe(name)
    except ModelError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def model() -> None:
    """The embedding model: which one, installing it (also offline), switching it."""


@model.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Which model the store uses, where models are kept, and whether it loads."""
    report = model_report(make_settings(ctx))
    if as_json:
        click.echo(json.dumps(report, indent=2))
        if report["problem"]:
            ctx.exit(1)
        return
    state = f"loads ({report['dim']} dimensions)" if report["loads"] else "does not load"
    if not report["installed"]:
        state = "not installed"
    click.echo(f"Model: {report['model']}: {state}\nModels folder: {report['cache']}")
    if report["store_model"] and report["store_model"] != report["model"]:
        click.echo(f"The store's vectors come from {report['store_model']}: it is re-embedded at the next import.")
    if report["problem"]:
        click.echo(f"Problem: {report['problem']}\nFix: {install_hint(report['model'])}")
        ctx.exit(1)


@model.command("list")
@json_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """fastembed's text-embedding models, their sizes, and which are installed."""
    from storage.embedding.model_files import catalogue_rows

    settings = make_settings(ctx)
    current = settings.model_name()
    rows = catalogue_rows(settings.model_cache)
    for row in rows:
        row["current"] = row["name"] == current
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(row["name"]) for row in rows)
    click.echo(f"  {'model':<{width}}  {'dim':>5}  {'size':>8}  installed")
    for row in rows:
        mark = "*" if row["current"] else " "
        size = f"{row['size_gb'] * 1000:.0f} MB"
        line = f"{mark} {row['name']:<{width}}  {row['dim']:>5}  {size:>8}  {'yes' if row['installed'] else ''}"
        click.echo(line.rstrip())
    click.echo(f"* in use. Models folder: {settings.model_cache}")


def install_model(settings: Settings, info: ModelInfo, source: Path | None, *, show: bool = True) -> dict[str, Any]:
    """Install (or find installed) and verify: what happened, as `model install --json` prints it.
    Raises ClickException. `show`: say on stderr what takes time (the download, the int8 copy)."""
    from server.services.progress import progress
    from server.settings import derived_models_dir
    from storage.embedding.embedder import prepare_documents_model, verify
    from storage.embedding.model_files import ModelError, download, install_from, installed_path

    cache = settings.model_cache
    result: dict[str, Any] = {"model": info.name, "cache": str(cache), "already_installed": False, "dim": None}
    try:
        if source is None and installed_path(info, cache) is not None:
            try:
                result["dim"] = verify(info.name, cache)
                result["already_installed"] = True
            except ModelError:
                pass  # a broken copy: fetch it again
        if not result["already_installed"]:
            if source is not None:
                install_from(info, source, cache)
            else:
                if show:
                    size = f"about {info.size_gb * 1000:.0f} MB"
                    click.echo(f"Downloading {info.name} ({size}) into {cache}...", err=True)
                download(info, cache, show=show)
            result["dim"] = verify(info.name, cache)
        # Documents are embedded with an int8 copy derived from the model here (`storage.embedding.int8_model`):
        # made now, so that the first import does not wait for it (~10-60 s the first time: said as it goes).
        with progress("preparing the model for documents", "steps", enabled=show):
            prepare_documents_model(info.name, cache, derived_models_dir())
    except ModelError as exc:
        raise click.ClickException(str(exc)) from None
    return result


def installed_text(result: dict[str, Any]) -> str:
    if result["already_installed"]:
        return f"{result['model']} is already installed in {result['cache']} and loads ({result['dim']} dimensions)."
    return f"Installed {result['model']} in {result['cache']}; it loads and embeds ({result['dim']} dimensions)."


@model.command()
@click.argument("name", required=False)
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path),
    help="Copy the model from this folder (a fastembed cache, or the model's own folder) instead of downloading.",
)
@quiet_option
@json_option
@click.pass_context
def install(ctx: click.Context, name: str | None, source: Path | None, quiet: bool, as_json: bool) -> None:
    """Install the embedding model (default: the one in use), then embed what awaits embedding."""
    settings = make_settings(ctx)
    info = _describe(name or settings.model_name())
    show = not (quiet or as_json)
    result = install_model(settings, info, source, show=show)
    if not as_json:
        click.echo(installed_text(result))
    result["embedded"] = 0
    if info.name == settings.model_name():
        result["embedded"] = _embed_awaiting(settings, show=show, say=not as_json)
    if as_json:
        click.echo(json.dumps(result, indent=2))


@model.command()
@click.argument("name")
@click.option("--from", "source", type=click.Path(path_type=Path), help="Install it from this folder first.")
@quiet_option
@json_option
@click.pass_context
def use(ctx: click.Context, name: str, source: Path | None, quiet: bool, as_json: bool) -> None:
    """Switch the store to another model (installing it first if needed) and re-embed every passage."""
    from storage.embedding.model_files import installed_path
    from storage.upkeep.store_meta import store_model

    settings = make_settings(ctx)
    info = _describe(name)
    show = not (quiet or as_json)
    if settings.model and settings.model != info.name:
        raise click.ClickException(
            f"PASTCHATS_MODEL (or --model) says {settings.model}: unset it, or set it to {info.name}"
        )
    result: dict[str, Any] = {"model": info.name, "installed": None, "switched": False, "embedded": 0}
    if source is not None or installed_path(info, settings.model_cache) is None:
        result["installed"] = install_model(settings, info, source, show=show)
        if not as_json:
            click.echo(installed_text(result["installed"]), err=True)
    if store_model(settings.home) == info.name:
        if not as_json:
            click.echo(f"The store already uses {info.name}.")
        result["embedded"] = _embed_awaiting(settings, show=show, say=not as_json)
    else:
        result["switched"], result["embedded"] = True, _switch(settings, info.name, show=show, say=not as_json)
    if as_json:
        click.echo(json.dumps(result, indent=2))


def _embed_awaiting(settings: Settings, *, show: bool, say: bool) -> int:
    """Embed the passages that awaited the model; a line on what changed for search."""
    from server.services.embedding import embed_awaiting

    with opened(settings, "write") as library:
        done, had_vectors = embed_awaiting(library, show=show)
    if done and say:
        hybrid = "again" if had_vectors else "now: by meaning as well as by keywords"
        click.echo(f"Embedded {done} passage(s) that awaited the model; search is hybrid {hybrid}.")
    return done


def _switch(settings: Settings, name: str, *, show: bool, say: bool) -> int:
    """Re-embed every passage with model `name`; a line on what changed."""
    from server.services.embedding import load_model, switch_model

    embedder = load_model(settings, name)  # before the store opens: a model that cannot load stops here
    with opened(settings, "write-without-model") as library:
        count = switch_model(library, embedder, show=show)
    if say:
        click.echo(f"The store now uses {name}: {count} passage(s) embedded.")
    return count


COMMANDS: list[click.Command] = [model]
