"""A chat's whole conversation, a page of messages at a time, with roles, times, everything known of
the chat (the project's whole path, its id) and the link back."""

from __future__ import annotations

from server.ui.context import Context, number, text
from server.ui.markup import Html, esc, h, join, link, notice, outside_link, when
from server.ui.parts import message
from storage.errors import NotFound, UnknownMessage
from storage.reads.results import ChatHit

PAGE = 50  # messages a page shows


def render(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    uri = text(params, "uri")
    if uri is None:
        raise NotFound("no chat named: open a chat from a search or the timeline")
    around = text(params, "around")
    try:
        page = ctx.library.read_chat(uri, offset=number(params, "offset"), limit=PAGE, around=around)
    except UnknownMessage as exc:
        return "Chat", notice(str(exc), "bad")
    hit = page.chat
    first, last = page.offset + 1, page.offset + len(page.messages)
    pager = _pager(uri, page.offset, page.next_offset, first, last, hit.message_count)
    actions = h('<p class="actions"><a class="danger" href="{}">Delete this chat…</a></p>', link("/delete", uri=uri))
    body = join(
        [
            _facts(hit),
            # The files this chat touched and the command that resumes it in its agent go here, beside the
            # facts, once the store records them.
            actions,
            pager,
            h('<div class="conversation">{}</div>', join(message(m) for m in page.messages)),
            pager,
        ]
    )
    return hit.title or "(untitled)", body


def _facts(hit: ChatHit) -> Html:
    """Everything known of the chat, in full: the project's whole path, its id, where it came from."""
    rows = [("Source", esc(hit.source))]
    if hit.project:
        rows.append(("Project", h("<code>{}</code>", hit.project)))
    rows += [
        ("Started", when(hit.first_message_at or hit.created_at)),
        ("Updated", when(hit.updated_at)),
        ("Messages", esc(hit.message_count)),
        ("Chat id", h("<code>{}</code>", hit.uri)),
    ]
    url = outside_link(hit.url)
    if url:
        rows.append(("Original", h('<a href="{}" rel="noopener noreferrer" target="_blank">{}</a>', url, url)))
    elif hit.url:
        rows.append(("Original", h("<code>{}</code>", hit.url)))  # a file, not a link from a web page
    listed = join(h("<div><dt>{}</dt><dd>{}</dd></div>", name, value) for name, value in rows)
    return h('<dl class="facts about">{}</dl>', listed)


def _pager(uri: str, offset: int, next_offset: int | None, first: int, last: int, total: int) -> Html:
    parts = []
    if offset > 0:
        parts.append(h('<a href="{}" rel="prev">← earlier</a>', link("/chat", uri=uri, offset=max(0, offset - PAGE))))
    parts.append(h("<span>messages {}–{} of {}</span>", first, last, total))
    if next_offset is not None:
        parts.append(h('<a href="{}" rel="next">later →</a>', link("/chat", uri=uri, offset=next_offset)))
    return h('<nav class="pager" aria-label="Pages of this chat">{}</nav>', join(parts, " "))
