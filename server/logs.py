"""Logging for every command: stderr or a log file, never stdout (stdout carries the protocol)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Protocol

from storage.owner_only import make_folder


class LogSettings(Protocol):
    """What logging reads of the settings (`Settings`, or the read-only commands' `QuickSettings`)."""

    @property
    def log_file(self) -> Path | None: ...
    @property
    def log_level(self) -> str: ...


NOISY = ("httpx", "uvicorn.access", "lance", "lancedb", "fastembed")


def configure_logging(settings: LogSettings) -> None:
    handler: logging.Handler
    if settings.log_file is not None:
        make_folder(settings.log_file.parent)
        handler = logging.FileHandler(settings.log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    if settings.log_level != "DEBUG":
        for name in NOISY:
            logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(settings.log_level)))
