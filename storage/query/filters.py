"""The filters both retrieval legs share, rendered safely for LanceDB SQL and as Tantivy query objects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from storage.times import clamp, naive_utc


def sql_string(value: str) -> str:
    """A SQL string literal: single quotes doubled, NUL bytes dropped. User text never enters SQL raw."""
    return "'" + value.replace("\x00", "").replace("'", "''") + "'"


def sql_time(value: datetime) -> str:
    naive = naive_utc(value)
    return f"CAST({sql_string(naive.isoformat(sep=' '))} AS TIMESTAMP)"


def sql_in(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})" if values else "false"


@dataclass(frozen=True)
class Filters:
    """`project` names every stored spelling of one project (they are matched case-insensitively).

    `after`/`before` are exclusive. On conversations (recent_chats, exports) they bound `updated_at`;
    on retrieval units they bound the time of the unit's message (`at`: the message's own time, or its
    chat's `updated_at` when the source gave none), so a long chat is found through the part of it that
    falls in the window. `chats`: only these chats (the ones that touched a file, `Catalog.touching`).
    """

    project: str | tuple[str, ...] | None = None
    source: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    chats: frozenset[str] | None = None

    def __post_init__(self) -> None:
        # Bounds beyond what can be stored exclude nothing more; clamped, they reach SQL and Tantivy
        # as times both can hold (a bound of year 1 with an offset, or 2300, is a fair question).
        for name in ("after", "before"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, clamp(value))

    @property
    def projects(self) -> tuple[str, ...] | None:
        if self.project is None:
            return None
        return (self.project,) if isinstance(self.project, str) else self.project

    def sql(self, time_column: str = "updated_at", id_column: str = "id") -> str | None:
        clauses = []
        if self.chats is not None:
            clauses.append(sql_in(id_column, sorted(self.chats)))
        if self.projects is not None:
            clauses.append(sql_in("project", list(self.projects)))
        if self.source is not None:
            clauses.append(f"source = {sql_string(self.source)}")
        if self.after is not None:
            clauses.append(f"{time_column} > {sql_time(self.after)}")
        if self.before is not None:
            clauses.append(f"{time_column} < {sql_time(self.before)}")
        return " AND ".join(clauses) if clauses else None

    def unit_sql(self) -> str | None:
        """The filter on retrieval units (chunks): times are message times."""
        return self.sql("at", "conversation_id")

    def is_empty(self) -> bool:
        return self.sql() is None

    def narrows(self) -> bool:
        """True when a project or a time window can have excluded chats (for the "filtered out" notes)."""
        return self.project is not None or self.after is not None or self.before is not None or self.chats is not None
