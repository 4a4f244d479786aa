"""A chat's whole conversation, a page of messages at a time, with roles, times and the link back."""

from __future__ import annotations

from server.ui.context import Context, number, text
from server.ui.markup import Html, h, join, link, notice
from server.ui.parts import chat_facts, message
from storage.errors import NotFound, UnknownMessage

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
            chat_facts(hit),
            h('<p class="facts">started {} · uri <code>{}</code></p>', hit.created_at.strftime("%Y-%m-%d"), hit.uri),
            actions,
            pager,
            h('<div class="conversation">{}</div>', join(message(m) for m in page.messages)),
            pager,
        ]
    )
    return hit.title or "(untitled)", body


def _pager(uri: str, offset: int, next_offset: int | None, first: int, last: int, total: int) -> Html:
    parts = []
    if offset > 0:
        parts.append(h('<a href="{}" rel="prev">← earlier</a>', link("/chat", uri=uri, offset=max(0, offset - PAGE))))
    parts.append(h("<span>messages {}–{} of {}</span>", first, last, total))
    if next_offset is not None:
        parts.append(h('<a href="{}" rel="next">later →</a>', link("/chat", uri=uri, offset=next_offset)))
    return h('<nav class="pager" aria-label="Pages of this chat">{}</nav>', join(parts, " "))
