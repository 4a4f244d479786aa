"""How the secrets redacted in a store are said, the same in `pastchats stats` and in doctor."""

from __future__ import annotations


def redaction_text(redacted: dict[str, dict[str, int]], enabled: bool) -> str:
    """`stats`' line on secrets: how many of each kind were replaced, per source."""
    if not enabled:
        off = "Secrets: redaction is OFF (PASTCHATS_REDACT=off): chats are stored verbatim, secrets included"
        return off + (f"; redacted before it was turned off: {_redacted(redacted)}" if redacted else "")
    return f"Secrets redacted: {_redacted(redacted)}" if redacted else "Secrets redacted: none found"


def _redacted(redacted: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        f"{source} {sum(kinds.values())} ({', '.join(f'{k} {n}' for k, n in kinds.items())})"
        for source, kinds in redacted.items()
    )
