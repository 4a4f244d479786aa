"""A search result as a view the client shows inline, where it speaks MCP Apps (the `io.modelcontextprotocol/ui`
extension, in the MCP SDK as `mcp.server.apps`).

`conversation_search` names the view in its `_meta.ui.resourceUri`; a host that supports Apps reads
the `ui://` resource (one HTML document, `search_view.html`, shipped in the package), renders it in
its sandboxed iframe and hands it the tool's structured result; the view lists the chats that
matched, says so when none did, and folds the weak ones, as the page does. Every other client gets the
tool's text, unchanged. The view loads nothing and reaches nothing outside the host: no `csp` domains.
"""

from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING

from tools.conversation_search import VIEW

if TYPE_CHECKING:
    from mcp.server.apps import Apps


def search_view() -> Apps:
    """The MCP Apps extension holding the view `conversation_search` names."""
    from mcp.server.apps import Apps

    apps = Apps()
    apps.add_html_resource(
        VIEW,
        (files("server") / "search_view.html").read_text(encoding="utf-8"),
        name="search-result",
        title="Past chats found",
        description="A conversation_search result: the chats that matched, and the weak ones folded.",
        prefers_border=True,
    )
    return apps
