"""Which format a path holds, told from names and the first bytes of files: no file is parsed.

Every importer's `detect` is a function here, and so is the choice `pastchats import` makes
(`choose`: the format named, or the detected one, or an error that names the format the path looks
like). It imports the standard library only (no pydantic, no importer, no JSON parser), so a wrong path or
format is answered before anything heavy loads; `importers.registry` gives the same answers through
the importers.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from pathlib import Path

from importers.formats import FORMATS
from importers.sniff_files import Bundle, any_file, not_regular_reason, open_bundle, open_regular, read_head, walk_files
from storage.errors import SourceError

CLAUDE_CONVERSATIONS = "conversations.json"
CHATGPT_SHARD = re.compile(r"^conversations(-\d+)?\.json$")
CURSOR_DB = "state.vscdb"
AIDER_HISTORY = ".aider.chat.history.md"
# The very first releases (May 2023) wrote "Aider" capitalised.
AIDER_SESSION = re.compile(r"^# [Aa]ider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[ \t]*\r?$", re.MULTILINE)


def _export_head(path: Path, members: Callable[[Bundle], list[str]]) -> tuple[Bundle, str] | None:
    """The export's bundle and the start of its first conversations member, for a zip, a folder or a .json."""
    if path.is_file() and path.suffix.lower() not in {".zip", ".json"}:
        return None
    bundle = open_bundle(path)
    found = members(bundle) if bundle is not None else []
    return (bundle, bundle.head(found[0])) if bundle is not None and found else None


# ---- each format, as its importer's `detect` -------------------------------------------------------


def claude_member(bundle: Bundle) -> str | None:
    """The member of a Claude.ai export holding its conversations."""
    if bundle.has(CLAUDE_CONVERSATIONS):
        return CLAUDE_CONVERSATIONS
    if bundle.kind == "file" and bundle.path.suffix.lower() == ".json":
        return bundle.path.name
    return None


def looks_like_claude(head: str) -> bool:
    return '"mapping"' not in head and ('"chat_messages"' in head or ('"account"' in head and '"uuid"' in head))


def claude(path: Path) -> bool:
    found = _export_head(path, lambda bundle: [m] if (m := claude_member(bundle)) else [])
    if found is None:
        return False
    bundle, head = found
    # An export with no chats yet is `[]`: tell it apart by the files a Claude export has.
    return looks_like_claude(head) or (
        head.strip() in {"", "[]"} and bundle.has("users.json") and not bundle.has("user.json")
    )


def chatgpt_members(bundle: Bundle) -> list[str]:
    """The members of a ChatGPT export holding its conversations (one file, or numbered shards)."""
    shards = [name for name in bundle.names() if CHATGPT_SHARD.match(name)]
    if shards:
        return sorted(shards)
    if bundle.kind == "file" and bundle.path.suffix.lower() == ".json":
        return [bundle.path.name]
    return []


def looks_like_chatgpt(head: str) -> bool:
    return '"mapping"' in head and ('"current_node"' in head or '"create_time"' in head)


def chatgpt(path: Path) -> bool:
    found = _export_head(path, chatgpt_members)
    if found is None:
        return False
    bundle, head = found
    return looks_like_chatgpt(head) or (
        head.strip() in {"", "[]"} and (bundle.has("export_manifest.json") or bundle.has("user.json"))
    )


def claude_code_root(path: Path) -> Path:
    return path / "projects" if (path / "projects").is_dir() else path


def looks_like_transcript(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    head = read_head(path, 8192)
    return '"sessionId"' in head and ('"parentUuid"' in head or '"leafUuid"' in head)


def claude_code(path: Path) -> bool:
    if path.is_file():
        return looks_like_transcript(path)
    return path.is_dir() and any_file(claude_code_root(path), 3, looks_like_transcript)


def codex_roots(path: Path) -> list[Path]:
    inside = [path / name for name in ("sessions", "archived_sessions") if (path / name).is_dir()]
    return inside or [path]


def looks_like_rollout(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    head = read_head(path, 8192)
    first = head.split("\n", 1)[0]
    if '"session_meta"' in first:
        return True
    # Early rollouts: a bare `{id, timestamp, instructions}` line, then bare response items.
    return path.name.startswith("rollout-") and '"timestamp"' in first and '"sessionId"' not in first


def codex(path: Path) -> bool:
    if path.is_file():
        return looks_like_rollout(path)
    return path.is_dir() and any(any_file(root, 4, looks_like_rollout) for root in codex_roots(path))


def gemini_root(path: Path) -> Path:
    return path / "tmp" if (path / "tmp").is_dir() else path


def looks_like_session(path: Path) -> bool:
    if not path.name.startswith("session-") or path.suffix not in {".json", ".jsonl"}:
        return False
    return '"projectHash"' in read_head(path, 8192)


def gemini(path: Path) -> bool:
    if path.is_file():
        return looks_like_session(path)
    return path.is_dir() and any_file(gemini_root(path), 3, looks_like_session)


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def cursor(path: Path) -> bool:
    if path.is_file():
        return path.suffix == ".vscdb" and is_sqlite(path)
    return path.is_dir() and any(f.name == CURSOR_DB for f in walk_files(path, 2))


def aider(path: Path) -> bool:
    if path.is_dir():
        return (path / AIDER_HISTORY).is_file()
    if not path.is_file() or path.suffix.lower() != ".md":
        return False
    return path.name == AIDER_HISTORY or AIDER_SESSION.match(read_head(path, 512).lstrip()) is not None


def plain(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() not in {".json", ".jsonl", ".ndjson"}:
        return False
    try:
        with open_regular(path) as handle:
            head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    if head.startswith(('{"conversations"', '{ "conversations"')):
        return True
    first_line = head.split("\n", 1)[0]
    return first_line.startswith("{") and '"messages"' in head and '"role"' in head and '"mapping"' not in head


DETECT: dict[str, Callable[[Path], bool]] = {
    "claude": claude,
    "chatgpt": chatgpt,
    "claude-code": claude_code,
    "codex": codex,
    "gemini": gemini,
    "cursor": cursor,
    "aider": aider,
    "plain": plain,
}


# ---- the choice `pastchats import` makes -------------------------------------------------------------


def require_readable_kind(path: Path) -> None:
    """Only folders and regular files are sources: reading a FIFO or a device could block forever."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise SourceError(f"{path} is {not_regular_reason(mode)}: give a chat export file or folder")


def known(name: str) -> str:
    if name not in FORMATS:
        raise SourceError(f"unknown format {name!r}; known formats: {', '.join(FORMATS)}")
    return name


def detect(path: Path) -> str:
    """The format of `path`; SourceError when it is missing, unreadable or none pastchats reads."""
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    require_readable_kind(path)
    for name in FORMATS:
        if DETECT[name](path):
            return name
    raise SourceError(f"cannot tell what kind of chat history {path} is; pass --format (one of: {', '.join(FORMATS)})")


def choose(path: Path, format: str | None = None) -> str:
    """The format to read `path` as: the one named, if the path looks like it, else the detected one;
    SourceError naming the format the path looks like when the named one does not fit."""
    if format is None:
        return detect(path)
    known(format)
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    require_readable_kind(path)
    if DETECT[format](path):
        return format
    looks = next((other for other in FORMATS if other != format and DETECT[other](path)), None)
    if looks is None:
        raise SourceError(f"{path} does not look like a {format} source, nor like any format pastchats reads")
    raise SourceError(
        f"{path} does not look like a {format} source; it looks like {looks} (use --format {looks}, "
        "or leave --format out to detect it)"
    )
