"""The first page: search past chats as `conversation_search` does (same engine, same filters, plus
the source), or, before any query, the latest chats."""

from __future__ import annotations

from server.ui.context import Context, day, stored_source, text
from server.ui.markup import Html, h, join, notice
from server.ui.parts import chat_card, date_field, options, query_terms
from storage.errors import PastchatsError

MAX_RESULTS = 20  # chats a search page shows; the page has no output budget to share, unlike the tool
RECENT = 20
EMPTY = (
    "The store holds no chats yet. Import some: `pastchats sync` (coding agents' logs), "
    "`pastchats import FILE` (an export), or `pastchats import --sample`."
)


def render(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    query, project, source = text(params, "q"), text(params, "project"), text(params, "source")
    library = ctx.library
    sources, projects = library.names()
    form = h(
        '<form class="search" method="get" action="/" role="search">'
        '<label class="query">Search <input type="search" name="q" value="{}" autofocus '
        'placeholder="a few words from the chat: names, terms, errors" accesskey="s"></label>'
        '<div class="filters">{}{}{}{}</div><button type="submit">Search</button></form>',
        query or "",
        options("project", "Project", projects, project),
        options("source", "Source", sources, source),
        date_field("after", "Messages after", params.get("after")),
        date_field("before", "before", params.get("before")),
    )
    try:
        after, before = day(params, "after"), day(params, "before")
        source = stored_source(sources, source)
        if query is None:
            result = library.recent(n=RECENT, project=project, source=source, after=after, before=before)
            filtered = project or source or after or before
            heading = (
                h("<h2 class='section'>Latest chats</h2>")
                if result.chats
                else notice("No chat matches these filters." if filtered else EMPTY)
            )
            listing = join(chat_card(hit) for hit in result.chats)
            return "Search", join([form, heading, listing])
        found = library.search(
            query, max_results=MAX_RESULTS, project=project, source=source, after=after, before=before
        )
    except PastchatsError as exc:  # an unknown project or source, a date that is not one
        return "Search", join([form, notice(str(exc), "bad")])
    notes = join(notice(n) for n in found.notes)
    if not found.chats:
        summary = notice(f"Nothing matched {query!r}. Try other words the chat would have used, or fewer filters.")
    else:
        strong = sum(hit.strength == "strong" for hit in found.chats)
        summary = h(
            '<p class="summary" role="status">{} chat{} matched; showing {} ({} strong).</p>',
            found.matching_chats,
            "" if found.matching_chats == 1 else "s",
            len(found.chats),
            strong,
        )
    terms = query_terms(query)
    return f"Search: {query}", join([form, notes, summary, join(chat_card(hit, terms=terms) for hit in found.chats)])
