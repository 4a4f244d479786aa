"""The first page: search past chats as `conversation_search` does (same engine, same filters, plus
the source), or, before any query, the latest chats one line each."""

from __future__ import annotations

from server.ui.context import Context, day, stored_source, text
from server.ui.markup import Html, h, join, link, notice
from server.ui.parts import chat_card, chat_row, chat_rows, date_range, options, query_terms
from storage.errors import PastchatsError
from storage.reads.results import SearchResult
from tools.conversation_search import file_name

MAX_RESULTS = 20  # chats a search page shows; the page has no output budget to share, unlike the tool
RECENT = 20
EMPTY = (
    "The store holds no chats yet. Import some: `pastchats sync` (coding agents' logs), "
    "`pastchats import FILE` (an export), or `pastchats import --sample`."
)


def render(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    query, project, source, file = (text(params, name) for name in ("q", "project", "source", "file"))
    library = ctx.library
    names = library.names()
    form = _form(names, params, query, project, source, file)
    if query is None and file is not None:  # a file alone: the chats that touched it, found by its name
        query = file_name(file)
    try:
        after, before = day(params, "after"), day(params, "before")
        source = stored_source(names[0], source)
        if query is None:
            result = library.recent(n=RECENT, project=project, source=source, after=after, before=before)
            filtered = project or source or after or before
            if not result.chats:
                return "Search", join([form, notice("No chat matches these filters." if filtered else EMPTY)])
            return "Search", join([form, h("<h2 class='section'>Latest chats</h2>"), chat_rows(result.chats)])
        found = library.search(
            query, max_results=MAX_RESULTS, project=project, source=source, after=after, before=before, file=file
        )
    except PastchatsError as exc:  # an unknown project or source, a date that is not one
        return "Search", join([form, notice(str(exc), "bad")])
    return f"Search: {query}", join([form, join(notice(n) for n in found.notes), results(found, query)])


def _form(
    names: tuple[list[str], list[str]],
    params: dict[str, str],
    query: str | None,
    project: str | None,
    source: str | None,
    file: str | None,
) -> Html:
    sources, projects = names
    return h(
        '<form class="search" method="get" action="/" role="search">'
        '<div class="query"><label for="q">Search</label><input type="search" id="q" name="q" value="{}" autofocus '
        'placeholder="a few words from the chat: names, terms, errors" accesskey="s">'
        '<button type="submit">Search</button></div>'
        '<div class="filters">{}{}<label>File <input type="text" name="file" value="{}" size="16" '
        'placeholder="auth/session.py" title="only chats whose agent edited, created or read this file"></label>'
        "{}</div></form>",
        query or "",
        options("project", "Project", projects, project),
        options("source", "Source", sources, source),
        file or "",
        date_range(params.get("after"), params.get("before")),
    )


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
