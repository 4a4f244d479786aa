"""What the store holds (`pastchats stats`) and where secrets were masked (by source and kind, and
the chats with the most); on a page of its own, its health (`pastchats doctor`'s checks, the CLI's own:
they read the whole store, seconds on years of history)."""

from __future__ import annotations

from server.services.doctor import Check, check_permissions, check_secrets, check_sources, check_store
from server.ui.context import Context
from server.ui.markup import Html, h, join, link, notice, when
from storage.reads.listing import StoreStats

REDACTED_CHATS = 30


def render(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    health = h(
        '<p><a href="/health">Check its health</a> (reads the whole store: a few seconds on years of history).</p>'
    )
    info = ctx.library.stats()
    return "Store", join([_holds(info), health, _secrets(ctx, info)])


def _counts(values: dict[str, int], what: str) -> Html:
    if not values:
        return h("<p>No {}.</p>", what)
    rows = join(
        h("<tr><th scope='row'>{}</th><td>{}</td></tr>", name, n)
        for name, n in sorted(values.items(), key=lambda kv: -kv[1])
    )
    return h(
        '<table class="counts"><thead><tr><th scope="col">{}</th><th scope="col">chats</th></tr></thead>'
        "<tbody>{}</tbody></table>",
        what,
        rows,
    )


def _holds(info: StoreStats) -> Html:
    span = h("{} to {}", when(info.oldest), when(info.newest)) if info.oldest and info.newest else Html("empty")
    facts = [
        ("Where", h("<code>{}</code>", info.home)),
        ("Size on disk", f"{info.disk_bytes / 1e6:.1f} MB"),
        ("Chats", info.conversations),
        ("Messages", info.messages),
        ("Indexed passages", info.chunks),
        ("Awaiting embeddings", info.awaiting_embeddings),
        ("Time span", span),
        ("Embedding model", info.model),
    ]
    listed = join(h("<dt>{}</dt><dd>{}</dd>", name, value) for name, value in facts)
    return h(
        '<section><h2 class="section">What it holds</h2><dl class="facts">{}</dl>'
        '<div class="columns"><div>{}</div><div>{}</div></div></section>',
        listed,
        _counts(info.sources, "source"),
        _counts(info.projects, "project"),
    )


def _model(ctx: Context) -> Check:
    """The model this page searches with, as it loaded here (doctor's own check would load it again)."""
    from storage.embedding.model_files import install_hint

    library = ctx.library
    if library.embedder is not None:
        return Check("model", True, f"{library.model_name} is installed and loads ({library.embedder.dim} dims)")
    problem = f"{library.model_name} did not load ({library.load_error}): search is keyword-only"
    return Check("model", False, problem, install_hint(library.model_name))


def health(ctx: Context, params: dict[str, str]) -> tuple[str, Html]:
    """`pastchats doctor --cli`'s checks, with the model as this page loaded it."""
    model = _model(ctx)
    checks = [
        model,
        check_store(ctx.settings, model.ok),
        *(c(ctx.settings) for c in (check_secrets, check_permissions, check_sources)),
    ]
    rows = []
    for check in checks:
        mark, kind = ("ok", "good") if check.ok else ("warning", "warn") if check.warning else ("problem", "bad")
        fix = h("<br>fix: <code>{}</code>", check.fix) if check.fix else Html("")
        rows.append(
            h(
                '<tr class="{}"><th scope="row">{}</th><td>{}</td><td>{}{}</td></tr>',
                kind,
                check.name,
                mark,
                check.summary,
                fix,
            )
        )
    failed = sum(check.failed for check in checks)
    verdict = notice(
        "All good." if not failed else f"{failed} problem(s): each names the command that fixes it.",
        "good" if not failed else "bad",
    )
    return "Health", h(
        '<section>{}<table class="checks"><thead><tr><th scope="col">check</th>'
        '<th scope="col">state</th><th scope="col">what was found</th></tr></thead><tbody>{}</tbody></table></section>',
        verdict,
        join(rows),
    )


def _secrets(ctx: Context, info: StoreStats) -> Html:
    state = (
        "Secrets are masked as chats are imported: each is replaced by a typed placeholder before anything is written."
        if ctx.settings.redact
        else "Redaction is OFF (PASTCHATS_REDACT=off): chats are stored verbatim, secrets included."
    )
    if not info.redacted:
        return h('<section><h2 class="section">Secrets masked</h2><p>{}</p><p>None found.</p></section>', state)
    rows = join(
        h("<tr><th scope='row'>{}</th><td>{}</td><td>{}</td></tr>", source, kind, n)
        for source, kinds in info.redacted.items()
        for kind, n in kinds.items()
    )
    chats = ctx.library.redacted_chats(REDACTED_CHATS)
    titles = {c.id: c.title for c in ctx.library.iter_conversations(ids=[cid for cid, _ in chats])}
    listed = join(
        h(
            '<li><a href="{}">{}</a>: {}</li>',
            link("/chat", uri=cid),
            titles.get(cid) or cid,
            ", ".join(f"{kind} {n}" for kind, n in kinds.items()),
        )
        for cid, kinds in chats
        if cid in titles
    )
    return h(
        '<section><h2 class="section">Secrets masked</h2><p>{}</p><table class="counts"><thead><tr>'
        '<th scope="col">source</th>'
        '<th scope="col">kind</th><th scope="col">masked</th></tr></thead><tbody>{}</tbody></table>'
        "<h3>The chats with the most</h3><ul>{}</ul></section>",
        state,
        rows,
        listed,
    )
