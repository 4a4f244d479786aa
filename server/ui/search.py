"""The first page: search past chats as `conversation_search` does (same engine, same filters, plus
the source), or, before any query, the latest chats one line each."""

from __future__ import annotations

from server.ui.context import Context, day, stored_source, text
from server.ui.markup import Html, h, join, link, notice
from server.ui.parts import chat_card, chat_row, chat_rows, date_range, options, query_terms
from storage.errors import PastchatsError
from storage.reads.results import SearchResult

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
        '<div class="query"><label for="q">Search</label><input type="search" id="q" name="q" value="{}" autofocus '
        'placeholder="a few words from the chat: names, terms, errors" accesskey="s">'
        '<button type="submit">Search</button></div>'
        '<div class="filters">{}{}{}</div></form>',
        query or "",
        options("project", "Project", projects, project),
        options("source", "Source", sources, source),
        date_range(params.get("after"), params.get("before")),
    )
    try:
        after, before = day(params, "after"), day(params, "before")
        source = stored_source(sources, source)
        if query is None:
            result = library.recent(n=RECENT, project=project, source=source, after=after, before=before)
            filtered = project or source or after or before
            if not result.chats:
                return "Search", join([form, notice("No chat matches these filters." if filtered else EMPTY)])
            return "Search", join([form, h("<h2 class='section'>Latest chats</h2>"), chat_rows(result.chats)])
        found = library.search(
            query, max_results=MAX_RESULTS, project=project, source=source, after=after, before=before
        )
    except PastchatsError as exc:  # an unknown project or source, a date that is not one
        return "Search", join([form, notice(str(exc), "bad")])
    return f"Search: {query}", join([form, join(notice(n) for n in found.notes), results(found, query)])


def results(found: SearchResult, query: str) -> Html:
    """What the search found, said plainly: the strong chats with their matches, the ones beyond those
    shown, and the weak ones (common words or a loose topic in common) apart and folded, never marked
    as matches."""
    strong = [hit for hit in found.chats if hit.strength == "strong"]
    weak = [hit for hit in found.chats if hit.strength != "strong"]
    terms = query_terms(query)
    parts = []
    if strong:
        total = max(found.matching_chats, len(strong))
        parts.append(
            h(
                '<h2 class="section found" role="status">{} chat{} matched <q>{}</q></h2>',
                total,
                "" if total == 1 else "s",
                query,
            )
        )
        parts += [chat_card(hit, terms=terms) for hit in strong]
        if found.others:
            more = join(
                h('<li><a href="{}">{}</a></li>', link("/chat", uri=o.uri, around=o.number) + f"#m{o.number}", o.title)
                for o in found.others
            )
            parts.append(h('<h3 class="section">More chats that matched</h3><ul class="others">{}</ul>', more))
    else:
        parts.append(
            h(
                '<p class="notice none" role="status"><strong>No results for <q>{}</q>:</strong> {}</p>',
                query,
                "no chat holds these words or anything close in meaning. Try other words the chat would have "
                "used, fewer words, or fewer filters.",
            )
        )
    if weak:
        rows = join(chat_row(hit, why=hit.evidence.why if hit.evidence else None, at_match=False) for hit in weak)
        parts.append(
            h(
                '<details class="weak"><summary>{} weak result{}: only common words or a loose topic in common, '
                "probably unrelated</summary>"
                '<ul class="rows">{}</ul></details>',
                len(weak),
                "" if len(weak) == 1 else "s",
                rows,
            )
        )
    return join(parts)
