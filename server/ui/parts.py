"""Pieces several pages show: a chat's facts, a message, a chat on one line or with its matches, the filter fields."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from server.ui.markup import Html, h, join, link, outside_link, when
from server.ui.rendering import render, render_tool_message
from storage.query.grammar import parse, plain_words
from storage.reads.listing import folder_name
from storage.reads.results import ChatHit, ShownMessage
from tools.render import touched_line

SNIPPET_CHARS = 600  # of a message in a listing; the chat page shows it whole


def project_name(hit: ChatHit) -> Html:
    """The project by its folder's name where that names one project (`shown_project`), the whole path
    on hover: long workspace paths would crowd every line."""
    if not hit.project:
        return Html("")
    return h('<span class="project" title="{}">{}</span>', hit.project, hit.shown_project or hit.project)


def chat_facts(hit: ChatHit) -> Html:
    """Source, project, last update, size, and the link back to the original where a browser can follow it."""
    facts = [h('<span class="source">{}</span>', hit.source)]
    if hit.project:
        facts.append(project_name(hit))
    facts.append(h("<span>updated {}</span>", when(hit.updated_at)))
    facts.append(h("<span>{} message{}</span>", hit.message_count, "" if hit.message_count == 1 else "s"))
    url = outside_link(hit.url)
    if url:
        facts.append(h('<a href="{}" rel="noopener noreferrer" target="_blank">open the original</a>', url))
    return h('<p class="facts">{}</p>', join(facts, " · "))


def query_terms(query: str | None) -> re.Pattern[str] | None:
    """What to mark of the query (`storage.query.grammar`): its words outside quotes, each quoted phrase
    whole, never an excluded word."""
    parsed = parse(query or "")
    words = {w for w in re.findall(r"\w+", parsed.loose) if len(w) > 1}
    phrases = {r"\W+".join(map(re.escape, plain_words(p))) for p in parsed.phrases}
    patterns = sorted(phrases | {re.escape(w) for w in words}, key=len, reverse=True)
    if not patterns:
        return None
    return re.compile("(" + "|".join(rf"\b{p}" for p in patterns) + ")", re.IGNORECASE)


def message(m: ShownMessage, *, terms: re.Pattern[str] | None = None, limit: int | None = None) -> Html:
    """One message: its number, role and time, its text as Markdown (cut to `limit` characters in a
    listing); marked where the search matched it."""
    text = m.text if limit is None or len(m.text) <= limit else m.text[:limit] + " …"
    hit = m.matched
    shown = render_tool_message(text, terms) if m.role == "tool" else render(text, terms)
    return h(
        '<article class="{}" id="m{}"><header><span class="num">#{}</span> <span class="role">{}</span> {}{}</header>'
        '<div class="text">{}</div></article>',
        f"msg role-{m.role}" + (" matched" if hit else ""),
        m.number,
        m.number,
        m.role,
        when(m.created_at),
        Html(' <span class="badge">matched</span>') if hit else Html(""),
        shown,
    )


def _target(hit: ChatHit) -> str:
    """The chat's page, at its best matching message when the search matched one."""
    matched = [m.number for match in hit.matches for m in match.messages if m.matched]
    return link("/chat", uri=hit.uri, around=matched[0] if matched else None) + (f"#m{matched[0]}" if matched else "")


def chat_row(hit: ChatHit, *, why: str | None = None, at_match: bool = True) -> Html:
    """A chat on one line: its title (a link to read it), source, project, last update and size; a weak
    search result also says `why` it was found, and opens at its start (`at_match` False: nothing in it
    matched for sure)."""
    day = hit.updated_at.strftime("%Y-%m-%d")
    return h(
        '<li class="row"><a class="title" href="{}">{}</a><span class="meta"><span class="source">{}</span>{}'
        '<time datetime="{}" title="{}">{}</time><span class="count">{} msg{}</span></span>{}</li>',
        _target(hit) if at_match else link("/chat", uri=hit.uri),
        hit.title or "(untitled)",
        hit.source,
        project_name(hit) or Html('<span class="project"></span>'),  # an empty column keeps the rest aligned
        hit.updated_at.isoformat(),
        f"{hit.updated_at:%Y-%m-%d %H:%M} UTC",
        day,
        hit.message_count,
        "" if hit.message_count == 1 else "s",
        h('<span class="why">{}</span>', why) if why else Html(""),
    )


def chat_rows(hits: Iterable[ChatHit]) -> Html:
    return h('<ul class="rows">{}</ul>', join(chat_row(hit) for hit in hits))


def chat_card(hit: ChatHit, *, terms: re.Pattern[str] | None = None) -> Html:
    """A strong chat in a result: title (a link to read it, at its best match), facts, why it was found,
    and the messages shown around each match."""
    why = hit.evidence.why if hit.evidence else None
    files = touched_line(hit)  # "Files: edited auth/session.py (+3) · ran pytest", as the tool's header
    shown = join(
        h('<div class="match">{}</div>', join(message(m, terms=terms, limit=SNIPPET_CHARS) for m in match.messages))
        for match in hit.matches
    )
    return h(
        '<section class="chat"><h3><a href="{}">{}</a></h3>{}{}{}{}</section>',
        _target(hit),
        hit.title or "(untitled)",
        chat_facts(hit),
        h('<p class="why">{}</p>', why) if why else Html(""),
        h('<p class="facts touched">{}</p>', files) if files else Html(""),
        shown,
    )


def options(name: str, label: str, values: Iterable[str], chosen: str | None) -> Html:
    """A labelled select of the store's projects or sources, "any" first; a project by its folder's name
    where no other project has that name (the full path on hover)."""
    values = list(values)
    folders = Counter(folder_name(v).casefold() for v in values) if name == "project" else Counter()
    items = [h('<option value="">any</option>')]
    for value in values:
        selected = Html(" selected") if chosen is not None and value.casefold() == chosen.casefold() else Html("")
        short = folder_name(value) if folders[folder_name(value).casefold()] == 1 else value
        items.append(h('<option value="{}" title="{}"{}>{}</option>', value, value, selected, short or value))
    return h('<label>{} <select name="{}">{}</select></label>', label, name, join(items))


def date_field(name: str, label: str, value: str | None) -> Html:
    return h('<label>{} <input type="date" name="{}" value="{}"></label>', label, name, value or "")


def date_range(after: str | None, before: str | None) -> Html:
    """The two dates of a window as one group: side by side, each under its word on a narrow screen,
    never one left alone on a line."""
    return h(
        '<span class="dates" role="group" aria-label="Messages written"><span class="what">Messages</span>{}{}</span>',
        date_field("after", "after", after),
        date_field("before", "before", before),
    )


def hidden(**values: object) -> Html:
    return join(h('<input type="hidden" name="{}" value="{}">', k, v) for k, v in values.items() if v is not None)
