"""Deleting a chat, or forgetting every chat of a project, a source or before a date: each asked for,
shown, confirmed, then done through the same code as `pastchats delete` and `pastchats forget`
(`importers.sources.privacy`): gone from every index and the archive, and never brought back by sync."""

from __future__ import annotations

from datetime import datetime

from importers.sources.privacy import delete, matching
from server.ui.context import Context, day, stored_source, text
from server.ui.markup import Html, h, join, link, notice
from server.ui.parts import chat_facts, date_field, hidden, options
from storage.errors import NotFound, PastchatsError

SHOWN = 20  # chats a forget's confirmation names
WAIT = 10.0  # seconds a delete waits for another writer (an import) before saying the store is busy
GONE = "from every index and the archive; sync will not bring it back (importing its file again would)"


def ask_delete(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    uri = text(params, "uri") or ""
    try:
        hit = ctx.library.read_chat(uri, limit=1).chat
    except NotFound as exc:
        return "Delete a chat", notice(str(exc), "bad")
    form = h(
        '<form method="post" action="/delete" class="confirm">{}<p>Delete <strong>{}</strong> {}?</p>'
        '<div class="choices"><a class="button" href="{}">Cancel</a>'
        '<button type="submit" class="danger">Delete for good</button></div></form>',
        hidden(uri=hit.uri, csrf=ctx.csrf),
        hit.title or "(untitled)",
        GONE,
        link("/chat", uri=hit.uri),
    )
    return "Delete a chat", join([chat_facts(hit), form])


def do_delete(ctx: Context, form: dict[str, str]) -> tuple[str, Html]:
    uri = text(form, "uri") or ""
    try:
        deleted = delete(ctx.library, [uri], wait=WAIT)
    except PastchatsError as exc:
        return "Delete a chat", notice(str(exc), "bad")
    if not deleted:
        return "Delete a chat", notice(f"No chat with uri {uri!r}: it was deleted already.", "bad")
    return "Deleted", join(
        [notice(f"Deleted the chat {uri!r} {GONE}.", "good"), h('<p><a href="/">Back to search</a></p>')]
    )


def _criteria(ctx: Context, params: dict[str, str]) -> tuple[tuple[str, ...] | None, str | None, datetime | None]:
    """The project's stored spellings, the source as stored, the date: as `pastchats forget` reads them."""
    projects = ctx.library.resolve_project(text(params, "project"))
    source = stored_source(ctx.library.names()[0], text(params, "source"))
    return projects, source, day(params, "before")


def _ids(ctx: Context, projects: tuple[str, ...] | None, source: str | None, before: datetime | None) -> list[str]:
    return sorted(
        {
            cid
            for spelling in projects or [None]
            for cid in matching(ctx.library, project=spelling, source=source, before=before)
        }
    )


def ask_forget(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    sources, projects = ctx.library.names()
    project, source, before = text(params, "project"), text(params, "source"), params.get("before")
    form = h(
        '<form method="get" action="/forget" class="filters">{}{}{}'
        '<button type="submit">Show what would go</button></form>',
        options("project", "Project", projects, project),
        options("source", "Source", sources, source),
        date_field("before", "Last updated before", before),
    )
    intro = h("<p>Forget every chat that matches all the criteria given, {}.</p>", GONE)
    if project is None and source is None and not before:
        return "Forget chats", join([intro, form])
    try:
        ids = _ids(ctx, *_criteria(ctx, params))
    except PastchatsError as exc:  # an unknown project or source, a date that is not one
        return "Forget chats", join([intro, form, notice(str(exc), "bad")])
    if not ids:
        return "Forget chats", join([intro, form, notice("Nothing matches: nothing to forget.")])
    named = join(
        h(
            '<li><a href="{}">{}</a> <span class="source">{}</span></li>',
            link("/chat", uri=c.id),
            c.title or "(untitled)",
            c.source,
        )
        for c in ctx.library.iter_conversations(ids=ids[:SHOWN])
    )
    rest = h("<li>and {} more</li>", len(ids) - SHOWN) if len(ids) > SHOWN else Html("")
    confirm = h(
        '<form method="post" action="/forget" class="confirm">{}<p>Delete these <strong>{} chat{}</strong> {}?</p>'
        '<ul class="doomed">{}{}</ul><div class="choices"><a class="button" href="/forget">Cancel</a>'
        '<button type="submit" class="danger">Forget {} chat{}</button></div></form>',
        hidden(project=project, source=source, before=before or None, count=len(ids), csrf=ctx.csrf),
        len(ids),
        "" if len(ids) == 1 else "s",
        GONE,
        named,
        rest,
        len(ids),
        "" if len(ids) == 1 else "s",
    )
    return "Forget chats", join([intro, form, confirm])


def do_forget(ctx: Context, form: dict[str, str]) -> tuple[str, Html]:
    if text(form, "project") is None and text(form, "source") is None and not form.get("before"):
        return "Forget chats", notice("Say what to forget: a project, a source and/or a date.", "bad")
    try:
        ids = _ids(ctx, *_criteria(ctx, form))
        if str(len(ids)) != form.get("count"):  # the store changed since the confirmation: confirm again
            title, page = ask_forget(ctx, form)
            return title, join([notice("What matches changed since you confirmed: check again.", "bad"), page])
        deleted = delete(ctx.library, ids, wait=WAIT) if ids else []
    except PastchatsError as exc:
        return "Forget chats", notice(str(exc), "bad")
    return "Forgotten", join(
        [notice(f"Deleted {len(deleted)} chat(s) {GONE}.", "good"), h('<p><a href="/">Back to search</a></p>')]
    )
