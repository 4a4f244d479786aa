"""A chat's whole conversation, a page of messages at a time, with roles, times, everything known of
the chat (the project's whole path, its id, the link back), the command that resumes it in its agent
and the files and commands its tool calls touched."""

from __future__ import annotations

from server.services.resume import resume_command
from server.ui.context import Context, number, text
from server.ui.markup import Html, esc, h, join, link, notice, outside_link, when
from server.ui.parts import message
from storage.errors import NotFound, UnknownMessage
from storage.reads.results import ChatHit, touched_groups
from tools.render import in_project

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
            _touched(hit),
            _resume(ctx, hit),
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


def _resume(ctx: Context, hit: ChatHit) -> Html:
    """The agent's own command that continues this session in its folder (as `pastchats resume`), or why
    there is none."""
    resume = resume_command(ctx.library, hit.uri)
    if resume.command is None:
        return h('<p class="resume none">Resume: {}.</p>', resume.reason or "no command known")
    return h(
        '<section class="resume"><h2 class="section">Resume</h2>'
        '<p class="facts">Continue this session in {}, in its folder:</p><pre><code>{}</code></pre></section>',
        resume.source,
        resume.command,
    )


TOUCHED = (("edited", "Edited"), ("read", "Read"), ("ran", "Ran"))


def _touched(hit: ChatHit) -> Html:
    """The files its agent's tool calls edited (or created) and read and the commands they ran, paths
    inside the chat's project named from it (the whole path on hover)."""
    groups = touched_groups(hit.touched)
    totals = hit.touched_totals or {}
    rows = []
    for group, label in TOUCHED:
        if not groups[group]:
            continue
        items = join(
            h('<li><code title="{}">{}</code></li>', item, item if group == "ran" else in_project(item, hit.project))
            for item in groups[group]
        )
        more = totals.get(group, len(groups[group])) - len(groups[group])
        rest = h('<li class="more">and {} more</li>', more) if more > 0 else Html("")
        rows.append(h('<div><dt>{}</dt><dd><ul class="touched">{}{}</ul></dd></div>', label, items, rest))
    if not rows:
        return Html("")
    return h(
        '<section class="files"><h2 class="section">Files and commands</h2><dl class="facts">{}</dl></section>',
        join(rows),
    )


def _pager(uri: str, offset: int, next_offset: int | None, first: int, last: int, total: int) -> Html:
    parts = []
    if offset > 0:
        parts.append(h('<a href="{}" rel="prev">← earlier</a>', link("/chat", uri=uri, offset=max(0, offset - PAGE))))
    parts.append(h("<span>messages {}–{} of {}</span>", first, last, total))
    if next_offset is not None:
        parts.append(h('<a href="{}" rel="next">later →</a>', link("/chat", uri=uri, offset=next_offset)))
    return h('<nav class="pager" aria-label="Pages of this chat">{}</nav>', join(parts, " "))
