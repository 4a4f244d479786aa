"""Reading a command's options as click would, for the CLI's fast paths (`server.cli`,
`server.cli_delete`): only the forms whose reading is certain; anything else is click's to answer."""

from __future__ import annotations

from storage.errors import PastchatsError


class Fallback(PastchatsError):
    """This invocation is for the click group to answer."""


def split_options(
    tokens: list[str], valued: set[str], flags: set[str], positionals: list[str] | None = None
) -> list[tuple[str, str | None]]:
    """(option, value) in command-line order, arguments into `positionals` (when the command takes
    them); Fallback for anything click might read differently."""
    found: list[tuple[str, str | None]] = []
    rest = list(tokens)
    while rest:
        token = rest.pop(0)
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if positionals is not None and token and not token.startswith("-"):
            positionals.append(token)
        elif name in flags and not eq:
            found.append((name, None))
        elif name in valued and eq:
            found.append((name, value))
        elif name in valued and rest:
            found.append((name, rest.pop(0)))
        elif len(token) > 2 and token[:2] in valued and not token.startswith("--"):  # -n5
            found.append((token[:2], token[2:]))
        else:
            raise Fallback
    for name, given in found:
        if name == "--out" and given == "-":
            continue  # standard output, as click reads it too (the next token, whatever it is)
        if given is not None and (not given or given.startswith("-")):
            raise Fallback  # click's reading of these is subtle; let it decide
    return found
