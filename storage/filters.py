"""The filters both retrieval legs share, rendered safely for LanceDB SQL and as Tantivy query objects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from storage.models import to_utc


def sql_string(value: str) -> str:
    """A SQL string literal: single quotes doubled, NUL bytes dropped. User text never enters SQL raw."""
    return "'" + value.replace("\x00", "").replace("'", "''") + "'"


def sql_time(value: datetime) -> str:
    naive = to_utc(value).replace(tzinfo=None)
    return f"CAST({sql_string(naive.isoformat(sep=' '))} AS TIMESTAMP)"


def sql_in(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})" if values else "false"


@dataclass(frozen=True)
class Filters:
    project: str | None = None
    source: str | None = None
    after: datetime | None = None  # exclusive, on updated_at
    before: datetime | None = None  # exclusive, on updated_at

    def sql(self) -> str | None:
        clauses = []
        if self.project is not None:
            clauses.append(f"project = {sql_string(self.project)}")
        if self.source is not None:
            clauses.append(f"source = {sql_string(self.source)}")
        if self.after is not None:
            clauses.append(f"updated_at > {sql_time(self.after)}")
        if self.before is not None:
            clauses.append(f"updated_at < {sql_time(self.before)}")
        return " AND ".join(clauses) if clauses else None

    def is_empty(self) -> bool:
        return self.sql() is None
