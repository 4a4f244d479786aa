"""Chats by time: how many were last active each day or week, per source, narrowed to a project or a
source; a period opens as the list of its chats, newest first, a page at a time."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from server.ui.context import BadInput, Context, stored_source, text
from server.ui.markup import Html, h, join, link, notice
from server.ui.parts import chat_rows, hidden, options
from storage.errors import PastchatsError
from storage.times import parse_iso

Period = Literal["day", "week"]
LISTED = 30  # chats a period's page lists
PERIODS = 60  # periods a page of the timeline shows, newest first
BAR = 240  # width of the longest bar, in pixels
TICK = timedelta(microseconds=1)  # the listing's bounds are exclusive
FIRST_DAY, LAST_DAY = "0001-01-08", "9999-12-24"  # the periods whose bounds are dates, by day or week


def period_start(at: datetime, by: Period) -> date:
    day = at.astimezone(UTC).date()
    return day - timedelta(days=day.weekday()) if by == "week" else day


def period_name(start: date, by: Period) -> str:
    if by == "day":
        return f"{start:%a %Y-%m-%d}"
    year, week, _ = start.isocalendar()
    return f"{year}-W{week:02d} (from {start:%b %d})"


def render(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    by: Period = "day" if params.get("by") == "day" else "week"
    project, source = text(params, "project"), text(params, "source")
    sources, projects = ctx.library.names()
    by_choice = join(
        h('<option value="{}"{}>{}</option>', value, Html(" selected") if value == by else Html(""), label)
        for value, label in (("week", "by week"), ("day", "by day"))
    )
    form = h(
        '<form class="filters" method="get" action="/timeline"><label>Show <select name="by">{}</select></label>'
        '{}{}<button type="submit">Show</button></form>',
        by_choice,
        options("project", "Project", projects, project),
        options("source", "Source", sources, source),
    )
    try:
        source = stored_source(sources, source)
        if text(params, "period"):
            return _period(ctx, params, by, project, source, form)
        rows = ctx.library.activity(project=project, source=source)
    except BadInput:  # a period that is not one: the page answers 400 and says why
        raise
    except PastchatsError as exc:  # an unknown project or source
        return "Timeline", join([form, notice(str(exc), "bad")])
    counts: dict[date, Counter[str]] = {}
    by_day = Counter((at.date(), chat_source) for at, _, chat_source, _ in rows)  # times are UTC already
    for (day, chat_source), n in by_day.items():
        counts.setdefault(day - timedelta(days=day.weekday()) if by == "week" else day, Counter())[chat_source] += n
    if not counts:
        return "Timeline", join([form, notice("No chats to show.")])
    palette = {name: i % 8 for i, name in enumerate(sources)}
    legend = join(h('<span class="key"><i class="s{}"></i>{}</span>', palette.get(s, 0), s) for s in sources)
    most = max(sum(c.values()) for c in counts.values())
    until = parse_iso(params.get("until", ""))
    starts = [start for start in sorted(counts, reverse=True) if until is None or start < until.date()]
    shown, rest = starts[:PERIODS], starts[PERIODS:]
    lines = join(_line(start, counts[start], most, palette, by, project, source) for start in shown)
    table = h(
        '<p class="legend">{}</p><table class="timeline"><thead><tr><th scope="col">{}</th><th scope="col">chats</th>'
        '<th scope="col">by source</th></tr></thead><tbody>{}</tbody></table>',
        legend,
        by,
        lines,
    )
    if rest:
        older = link("/timeline", by=by, project=project, source=source, until=shown[-1].isoformat())
        table = join([table, h('<nav class="pager"><a href="{}" rel="next">older {}s →</a></nav>', older, by)])
    summary = h('<p class="summary">{} chats in {} {}s with activity.</p>', len(rows), len(counts), by)
    return "Timeline", join([form, summary, table])


def _line(
    start: date,
    count: Counter[str],
    most: int,
    palette: dict[str, int],
    by: Period,
    project: str | None,
    source: str | None,
) -> Html:
    total = sum(count.values())
    x, rects = 0.0, []
    for name, n in sorted(count.items()):
        width = BAR * n / most
        rects.append(
            h(
                '<rect x="{}" y="0" width="{}" height="14" class="s{}"></rect>',
                f"{x:.1f}",
                f"{width:.1f}",
                palette.get(name, 0),
            )
        )
        x += width
    described = ", ".join(f"{name} {n}" for name, n in sorted(count.items()))
    target = link("/timeline", by=by, period=start.isoformat(), project=project, source=source)
    return h(
        '<tr><th scope="row"><a href="{}">{}</a></th><td>{}</td><td><svg width="{}" height="14" role="img" '
        'aria-label="{}">{}</svg> <span class="counts">{}</span></td></tr>',
        target,
        period_name(start, by),
        total,
        BAR,
        described,
        join(rects),
        described,
    )


def _period(
    ctx: Context, params: dict[str, str], by: Period, project: str | None, source: str | None, form: Html
) -> tuple[str, Html]:
    """The chats last active in one period, newest first; `before` pages on."""
    begun = parse_iso(params.get("period", ""))
    if begun is None:
        raise BadInput("period: give the first day of the period, like 2025-01-20")
    try:
        start = datetime.combine(period_start(begun, by), datetime.min.time(), UTC)
        end = start + timedelta(days=7 if by == "week" else 1)
        page_before = parse_iso(params.get("before", "")) or end
        result = ctx.library.recent(n=LISTED, after=start - TICK, before=page_before, project=project, source=source)
    except OverflowError:  # a period at either end of the calendar: its bounds are not dates
        raise BadInput(f"period: give a day between {FIRST_DAY} and {LAST_DAY}, like 2025-01-20") from None
    title = period_name(start.date(), by)
    back = h('<p><a href="{}">← the whole timeline</a></p>', link("/timeline", by=by, project=project, source=source))
    listing = chat_rows(result.chats) if result.chats else notice("No chats in this period.")
    more = Html("")
    if result.next_before is not None:
        more = h(
            '<form method="get" action="/timeline">{}<button type="submit">Older chats of this {}</button></form>',
            hidden(
                by=by,
                period=start.date().isoformat(),
                project=project,
                source=source,
                before=result.next_before.isoformat(),
            ),
            by,
        )
    return f"Timeline: {title}", join([form, back, listing, more])
