"""Kilo Code 7 and the `kilo` CLI (Kilo-Org/kilocode, rebuilt on OpenCode in 2026): sessions in the
SQLite database `kilo.db` in Kilo's data folder, `$XDG_DATA_HOME/kilo`, else `~/.local/share/kilo`
(on Linux, macOS and Windows alike, as the `xdg-basedir` package Kilo uses resolves it). The
database is OpenCode's (`session`, `message`, `part`; Kilo adds columns of its own, which are not
needed here), and is read as OpenCode's (`importers.opencode`). The VS Code extension's tasks
from before version 7 are another format: `importers.kilo_code`.
"""

from __future__ import annotations

from importers.opencode import OpenCodeImporter


class KiloImporter(OpenCodeImporter):
    name = "kilo"
    resume = ()  # no resume command of Kilo's own is known to pastchats
    app = "kilo"  # `$XDG_DATA_HOME/kilo/kilo.db`
    kind = "a Kilo database"
    none_found = "no Kilo database (kilo.db) in {path}"
