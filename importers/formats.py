"""The formats pastchats reads, by name, in the order detection tries them: specific formats first,
the lenient plain format last. Nothing is imported here, so the CLI checks `--format` (and lists the
formats in its error) at the cost of a bare interpreter start; `importers.registry.IMPORTERS` holds
the importers in this order (a test keeps them equal)."""

FORMATS = ("claude", "chatgpt", "claude-code", "codex", "gemini", "cursor", "aider", "plain")
