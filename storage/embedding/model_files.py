"""Embedding models on disk: fastembed's catalogue, what is installed in a cache folder, installing.

pastchats keeps models in its own cache folder (a setting) so that every process finds the same model
whatever environment started it. A cache folder has fastembed's layout, which is the Hugging Face hub's:
`models--<org>--<repo>/snapshots/<revision>/<files>` with `refs/main` naming the revision.
Nothing here downloads unless `download` is called.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from storage.errors import PastchatsError
from storage.owner_only import make_folder

__all__ = [
    "DEFAULT_MODEL",
    "ModelError",
    "ModelInfo",
    "catalogue",
    "describe",
    "download",
    "install_from",
    "installed_path",
    "route_fastembed_logs",
]


# Light on purpose (no NumPy, no onnxruntime): the settings and every CLI command read these.
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def install_hint(name: str | None = None) -> str:
    """The commands that install the model, online and offline (every message that says how)."""
    target = f" {name}" if name else ""
    return (
        f"pastchats model install{target}  (offline: on a machine that has the model, copy the folder "
        f"`pastchats model status` shows as Models folder, then pastchats model install{target} --from DIR)"
    )


class ModelError(PastchatsError):
    """A model cannot be found, installed or loaded; the message names the next step."""


@dataclass(frozen=True)
class ModelInfo:
    name: str
    dim: int
    size_gb: float
    description: str
    repo: str  # the Hugging Face repository fastembed fetches it from
    files: tuple[str, ...]  # the model file first, then any it needs beside it

    @property
    def folder(self) -> str:
        return "models--" + self.repo.replace("/", "--")


_routed = False


def route_fastembed_logs() -> None:
    """Send fastembed's loguru lines through the standard `logging` module, one level down.

    Unrouted they print straight to stderr, download retries and all; pastchats reports each failure
    itself, so fastembed's own lines are detail (shown with `-v`).
    """
    global _routed
    if _routed:
        return
    from loguru import logger

    target = logging.getLogger("fastembed")

    def forward(message: Any) -> None:
        record = message.record
        target.log(logging.INFO if record["level"].no >= 30 else logging.DEBUG, "%s", record["message"])

    logger.remove()
    logger.add(forward, level="DEBUG", format="{message}")
    _routed = True


def catalogue() -> list[ModelInfo]:
    """fastembed's text-embedding models that come from the model hub (the ones we can install)."""
    route_fastembed_logs()
    from fastembed import TextEmbedding

    models: list[ModelInfo] = []
    for entry in TextEmbedding.list_supported_models():
        repo = (entry.get("sources") or {}).get("hf")
        if not repo:
            continue
        models.append(
            ModelInfo(
                name=entry["model"],
                dim=int(entry["dim"]),
                size_gb=float(entry.get("size_in_GB") or 0),
                description=str(entry.get("description") or ""),
                repo=repo,
                files=(entry["model_file"], *entry.get("additional_files", [])),
            )
        )
    return models


def describe(name: str) -> ModelInfo:
    """The catalogue entry for `name` (case-insensitive); raises `ModelError` naming close matches."""
    models = catalogue()
    for info in models:
        if info.name.lower() == name.lower():
            return info
    # Users type the short name ("all-minilm-l6"): match it within the full names, then by similarity.
    short = {info.name.split("/")[-1].lower(): info.name for info in models}
    close = [full for key, full in short.items() if name.lower() in key]
    close += [short[key] for key in difflib.get_close_matches(name.lower(), list(short), n=3, cutoff=0.6)]
    close = list(dict.fromkeys(close))[:3]
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    raise ModelError(f"unknown embedding model {name!r}.{hint} `pastchats model list` shows the models available.")


def _folders(cache_dir: Path, info: ModelInfo) -> list[Path]:
    """The cache folders that may hold the model: fastembed also finds older, differently cased ones."""
    if not cache_dir.is_dir():
        return []
    wanted = info.folder.lower()
    return sorted(p for p in cache_dir.iterdir() if p.name.lower() == wanted and p.is_dir())


def installed_path(info: ModelInfo, cache_dir: Path) -> Path | None:
    """The snapshot folder holding every file of the model, or None. Reads the disk only."""
    for folder in _folders(cache_dir, info):
        try:
            revision = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        snapshot = folder / "snapshots" / revision
        if all((snapshot / name).is_file() for name in info.files):
            return snapshot
    return None


def download(info: ModelInfo, cache_dir: Path, *, show: bool = True) -> Path:
    """Fetch the model from the model hub into the cache; the hub client draws its own progress bars
    unless `show` is False."""
    route_fastembed_logs()
    if not show:  # read when the hub client is imported (just below); fastembed turns the bars back on otherwise
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    from fastembed import TextEmbedding
    from loguru import logger

    make_folder(cache_dir)
    for kind in TextEmbedding.EMBEDDINGS_REGISTRY:
        if any(d.model.lower() == info.name.lower() for d in kind._list_supported_models()):
            description = kind._get_model_description(info.name)
            said: list[str] = []  # why each source failed, in fastembed's words
            listening = logger.add(said.append, level="WARNING", format="{message}")
            try:
                return Path(kind.download_model(description, str(cache_dir), retries=1))
            except Exception:  # fastembed logs each source's failure and raises one ValueError for all
                sources = [_hub_address(), *([description.sources.url] if description.sources.url else [])]
                cause = next((why for url in sources if (why := unreachable(url))), None)
                raise ModelError(
                    f"could not download {info.name}: {cause or _last_reason(said, sources)}. Without network, "
                    f"copy the models folder (`pastchats model status` names it) or the model's own folder from "
                    f"a machine that has it and run `pastchats model install {info.name} --from DIR`."
                ) from None
            finally:
                logger.remove(listening)
    raise ModelError(f"fastembed cannot download {info.name}")


def _hub_address() -> str:
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def _last_reason(said: list[str], sources: list[str]) -> str:
    # fastembed's line for a source that failed, first line only (the rest is a link to a status page)
    failures = [line.strip().splitlines()[0] for line in said if "could not" in line.lower()]
    where = " and ".join(urlsplit(url).hostname or url for url in sources)
    return f"{where} answered, but {failures[0] if failures else 'the download failed'}"


def unreachable(url: str, timeout: float = 5.0) -> str | None:
    """Why the host of `url` cannot be reached from here, in a person's words; None when it answers.
    Through a proxy (HTTPS_PROXY), the proxy is the host that must answer."""
    names = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
    proxy = next((os.environ[name] for name in names if os.environ.get(name)), "")
    parts = urlsplit(url)
    host, port, what = parts.hostname, parts.port or (80 if parts.scheme == "http" else 443), parts.hostname
    if proxy:
        through = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port, what = through.hostname, through.port or 80, f"the proxy {through.hostname} (HTTPS_PROXY)"
    if not host:
        return None
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return f"{what} could not be reached: its name does not resolve (no network, or DNS is blocked)"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except TimeoutError:
        return f"{what} could not be reached: no answer within {timeout:.0f} s (a firewall, or no route)"
    except OSError as exc:
        return f"{what} could not be reached: {exc.strerror or exc}"


def _copy_tree(source: Path, target: Path) -> None:
    """Copy files (following links, as hub caches link snapshots to blobs) without their read-only modes."""
    for root, _dirs, names in os.walk(source, followlinks=True):
        here = target / Path(root).relative_to(source)
        make_folder(here)
        for name in names:
            shutil.copyfile(Path(root) / name, here / name)


def _revision(snapshot: Path, info: ModelInfo) -> str:
    """A stable revision name for a bare model folder (the hub's cache wants one)."""
    digest = hashlib.sha1(info.repo.encode())
    for name in info.files:
        digest.update(f"{name}:{(snapshot / name).stat().st_size}".encode())
    return digest.hexdigest()


def install_from(info: ModelInfo, source: Path, cache_dir: Path) -> Path:
    """Copy the model from `source` into the cache: a fastembed cache folder, one model's cache folder
    (`models--org--repo`), or a plain folder holding the model's files. Returns the installed snapshot."""
    source = source.expanduser()
    if not source.is_dir():
        raise ModelError(f"{source} is not a folder; pass a fastembed cache folder or the model's own folder")
    found: Path | None = None
    revision = ""
    if (snapshot := installed_path(info, source)) is not None or (
        source.name.lower() == info.folder.lower() and (snapshot := installed_path(info, source.parent))
    ):
        found, revision = snapshot, snapshot.name
    elif all((source / name).is_file() for name in info.files):
        found, revision = source, _revision(source, info)
    if found is None:
        raise ModelError(
            f"{source} holds no copy of {info.name}: expected a fastembed cache folder with {info.folder}/ "
            f"in it, or a folder with {', '.join(info.files)}"
        )
    make_folder(cache_dir)
    final = cache_dir / info.folder
    # Build the copy beside its final place, then swap it in: an interrupted copy leaves no half model.
    staging = Path(tempfile.mkdtemp(prefix=".installing-", dir=cache_dir))
    try:
        _copy_tree(found, staging / "snapshots" / revision)
        (staging / "refs").mkdir()
        (staging / "refs" / "main").write_text(revision, encoding="utf-8")
        for old in _folders(cache_dir, info):
            shutil.rmtree(old)
        staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final / "snapshots" / revision


def catalogue_rows(cache_dir: Path) -> list[dict[str, Any]]:
    """The catalogue as plain rows, each saying whether it is installed in `cache_dir`."""
    return [
        {
            "name": info.name,
            "dim": info.dim,
            "size_gb": info.size_gb,
            "installed": installed_path(info, cache_dir) is not None,
            "description": info.description,
        }
        for info in catalogue()
    ]
