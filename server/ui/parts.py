"""Pieces several pages show: a chat's heading and facts, a message, a chat in a listing, the filter fields."""

from __future__ import annotations

import re
from collections.abc import Iterable

from server.ui.markup import Html, esc, h, join, link, outside_link, when
from storage.query.grammar import parse, plain_words
from storage.reads.results import ChatHit, ShownMessage

SNIPPET_CHARS = 600  # of a message in a listing; the chat page shows it whole


def chat_facts(hit: ChatHit) -> Html:
    """Source, project, last update, size, and the link back to the original where there is one."""
    facts = [h('<span class="source">{}</span>', hit.source)]
    if hit.project:
        facts.append(h('<span class="project">project {}</span>', hit.project))
    facts.append(h("<span>updated {}</span>", when(hit.updated_at)))
    facts.append(h("<span>{} message{}</span>", hit.message_count, "" if hit.message_count == 1 else "s"))
    url = outside_link(hit.url)
    if url:
        facts.append(h('<a href="{}" rel="noopener noreferrer" target="_blank">open the original</a>', url))
    elif hit.url:
        facts.append(h('<span class="origin">from <code>{}</code></span>', hit.url))
    return h('<p class="facts">{}</p>', join(facts, " · "))


def highlighted(text: str, terms: re.Pattern[str] | None) -> Html:
    """`text` escaped, with the query's words marked."""
    if terms is None:
        return esc(text)
    pieces = terms.split(text)  # the pattern captures: odd pieces are the matches
    return join(h("<mark>{}</mark>", piece) if i % 2 else esc(piece) for i, piece in enumerate(pieces))


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
    """One message: its number, role and time, its text (cut to `limit` characters in a listing)."""
    text = m.text if limit is None or len(m.text) <= limit else m.text[:limit] + " …"
    classes = f"msg role-{m.role}" + (" matched" if m.matched else "")
    return h(
        '<article class="{}" id="m{}"><header><span class="num">#{}</span> <span class="role">{}</span> {}{}</header>'
        '<div class="text">{}</div></article>',
        classes,
        m.number,
        m.number,
        m.role,
        when(m.created_at),
        Html(' <span class="badge">matched</span>') if m.matched else Html(""),
        highlighted(text, terms),
    )


def chat_card(hit: ChatHit, *, terms: re.Pattern[str] | None = None) -> Html:
    """A chat in a listing: title (a link to read it, at its best match), strength, facts, its shown messages."""
    matched = [m.number for match in hit.matches for m in match.messages if m.matched]
    target = link("/chat", uri=hit.uri, around=matched[0] if matched else None) + (f"#m{matched[0]}" if matched else "")
    strength = h(' <span class="strength {}">{}</span>', hit.strength, hit.strength) if hit.strength else Html("")
    shown = join(
        h('<div class="match">{}</div>', join(message(m, terms=terms, limit=SNIPPET_CHARS) for m in match.messages))
        for match in hit.matches
    )
    return h(
        '<section class="chat"><h2><a href="{}">{}</a>{}</h2>{}{}</section>',
        target,
        hit.title or "(untitled)",
        strength,
        chat_facts(hit),
        shown,
    )


def options(name: str, label: str, values: Iterable[str], chosen: str | None) -> Html:
    """A labelled select of the store's projects or sources, "any" first."""
    items = [h('<option value="">any</option>')]
    for value in values:
        selected = Html(" selected") if chosen is not None and value.casefold() == chosen.casefold() else Html("")
        items.append(h('<option value="{}"{}>{}</option>', value, selected, value))
    return h('<label>{} <select name="{}">{}</select></label>', label, name, join(items))


def date_field(name: str, label: str, value: str | None) -> Html:
    return h('<label>{} <input type="date" name="{}" value="{}"></label>', label, name, value or "")


def hidden(**values: object) -> Html:
    return join(h('<input type="hidden" name="{}" value="{}">', k, v) for k, v in values.items() if v is not None)
