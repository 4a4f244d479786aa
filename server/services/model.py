"""The embedding model as `pastchats model status` and doctor report it: which one the store uses,
where it is looked for, whether it is installed and loads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.settings import Settings


def model_report(settings: Settings, *, load: bool = True) -> dict[str, Any]:
    """Which model the store uses, where it is looked for, whether it is installed and loads."""
    from storage.embedding.embedder import verify
    from storage.embedding.model_files import ModelError, describe, installed_path
    from storage.upkeep.store_meta import store_model

    name = settings.model_name()
    report: dict[str, Any] = {
        "model": name,
        "store_model": store_model(settings.home),
        "cache": str(settings.model_cache),
        "installed": False,
        "loads": False,
        "dim": None,
        "problem": None,
    }
    try:
        info = describe(name)
    except ModelError as exc:
        report["problem"] = str(exc)
        return report
    report["installed"] = installed_path(info, settings.model_cache) is not None
    if not report["installed"]:
        report["problem"] = f"{name} is not installed in {settings.model_cache}"
    elif load:
        try:
            report["dim"] = verify(name, settings.model_cache)
            report["loads"] = True
        except ModelError as exc:
            report["problem"] = str(exc)
    return report
