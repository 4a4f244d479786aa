"""A search result as an MCP Apps view: the tool names it, the server serves it, and in Chromium, handed
a real result by a host speaking the extension's protocol, it says what was found as the page does
(matches, "No results", weak ones folded) and runs nothing a chat holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from storage.library import Library
from tests.server.ui.conftest import ui_chats
from tests.tools.helpers import server_for
from tools.conversation_search import VIEW

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SIZE = "--window-size=700,1000"
SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "search-view"

# A host's side of MCP Apps, as little as the view needs: it answers `ui/initialize`, then hands over
# the tool's input and result once the view says it is initialized, and records what the view asks.
HOST = """<!doctype html>
<html><head><meta charset="utf-8"><title>host</title></head>
<body><iframe id="view" style="width: 640px; height: 900px; border: 0"></iframe>
<script>
var frame = document.getElementById("view");
var RESULT = %(result)s;
window.asked = [];
window.addEventListener("message", function (event) {
  var m = event.data;
  window.asked.push(m.method || "reply");
  function reply(result) { frame.contentWindow.postMessage({jsonrpc: "2.0", id: m.id, result: result}, "*"); }
  if (m.method === "ui/initialize") {
    window.protocol = m.params.protocolVersion;
    reply({protocolVersion: m.params.protocolVersion, hostInfo: {name: "test-host", version: "1"},
           hostCapabilities: {openLinks: {}}, hostContext: {theme: "light", displayMode: "inline"}});
  } else if (m.method === "ui/notifications/initialized") {
    frame.contentWindow.postMessage({jsonrpc: "2.0", method: "ui/notifications/tool-input",
                                     params: {arguments: {query: RESULT.structuredContent.query}}}, "*");
    frame.contentWindow.postMessage({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: RESULT}, "*");
  } else if (m.method === "ui/notifications/size-changed") {
    window.size = m.params;
  } else if (m.method === "ui/open-link") {
    window.opened = m.params.url;
    reply({});
  }
});
frame.srcdoc = %(view)s;
</script></body></html>
"""


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Iterator[dict[str, Any]]:
    """The view's HTML as the server serves it, and real results of `conversation_search` by query."""
    library = Library.open(tmp_path_factory.mktemp("view-store"), cache_dir=model_cache_dir)
    library.import_conversations(ui_chats())

    async def ask() -> dict[str, Any]:
        async with Client(server_for(library)) as client:
            view = (await client.read_resource(VIEW)).contents[0]
            found = {}
            for query in ("nginx jellyfin reverse proxy", "zzqxnomatch", "hostile payload", "vite sourcemaps"):
                result = await client.call_tool("conversation_search", {"query": query, "max_results": 10})
                found[query] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            return {"view": view, "found": found}

    try:
        yield anyio.run(ask)
    finally:
        library.close()


def test_the_server_serves_the_view_as_an_app(searched: dict[str, Any]) -> None:
    view = searched["view"]
    assert view.mime_type == APP_MIME_TYPE
    assert view.text.startswith("<!doctype html>")
    assert view.meta == {"ui": {"prefersBorder": True}}  # no outside domain: the view loads nothing
    assert "innerHTML" not in view.text  # every node is built from text


@pytest.mark.anyio
async def test_the_view_is_advertised_and_only_the_search_names_it(tmp_path: Path) -> None:
    from tests.tools.helpers import library_with

    async with Client(server_for(library_with(tmp_path, []))) as client:
        assert EXTENSION_ID in (client.server_capabilities.extensions or {})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = [str(resource.uri) for resource in (await client.list_resources()).resources]
    assert tools["conversation_search"].meta == {"ui": {"resourceUri": VIEW}}
    assert [name for name, tool in tools.items() if tool.meta and "ui" in tool.meta] == ["conversation_search"]
    assert resources == [VIEW]


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("Chromium is not installed: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=700,1000",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def shown_in_host(driver: WebDriver, tmp_path: Path, searched: dict[str, Any], query: str) -> str:
    """The view's text once a host has handed it the result of `query` (a screenshot is kept)."""

    def script_value(value: object) -> str:  # JSON inside a <script>: no "</" can close it
        return json.dumps(value).replace("</", "<\\/")

    host = tmp_path / "host.html"
    host.write_text(
        HOST % {"result": script_value(searched["found"][query]), "view": script_value(searched["view"].text)}
    )
    driver.get(host.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return window.size !== undefined"))
    driver.switch_to.frame(driver.find_element(By.ID, "view"))
    text: str = driver.find_element(By.ID, "result").text
    driver.save_screenshot(str(SHOTS / f"{query.replace(' ', '-')}.png"))
    driver.switch_to.default_content()
    return text


@pytest.mark.integration
def test_the_view_shows_what_the_search_found(browser: WebDriver, tmp_path: Path, searched: dict[str, Any]) -> None:
    text = shown_in_host(browser, tmp_path, searched, "nginx jellyfin reverse proxy")
    assert text.startswith("1 chat matched “nginx jellyfin reverse proxy”\nNginx setup\nclaude · homelab")
    assert "#1 User: How do I put nginx in front of Jellyfin as a reverse proxy?" in text
    assert "weak results: only common words or a loose topic in common, probably unrelated" in text
    assert browser.execute_script("return window.protocol") == "2026-01-26"
    assert browser.execute_script("return window.asked.slice(0, 2)") == [
        "ui/initialize",
        "ui/notifications/initialized",
    ]
    browser.switch_to.frame(browser.find_element(By.ID, "view"))
    browser.find_element(By.CSS_SELECTOR, "a.title").click()  # its link back to claude.ai
    browser.switch_to.default_content()
    assert browser.execute_script("return window.opened") == "https://claude.ai/chat/nginx"


@pytest.mark.integration
def test_the_view_says_when_nothing_matched(browser: WebDriver, tmp_path: Path, searched: dict[str, Any]) -> None:
    text = shown_in_host(browser, tmp_path, searched, "zzqxnomatch")
    assert text.startswith("No results for “zzqxnomatch”")
    assert "matched" not in text


@pytest.mark.integration
def test_the_view_runs_nothing_a_chat_holds(browser: WebDriver, tmp_path: Path, searched: dict[str, Any]) -> None:
    text = shown_in_host(browser, tmp_path, searched, "hostile payload")
    assert "<script>document.title='pwned'</script>Hostile" in text
    assert browser.title == "host"
    browser.switch_to.frame(browser.find_element(By.ID, "view"))
    assert browser.find_elements(By.CSS_SELECTOR, "img, script:not(:last-of-type), b") == []
    assert browser.find_elements(By.CSS_SELECTOR, "a[href^='javascript']") == []
    browser.switch_to.default_content()


@pytest.mark.integration
def test_the_view_names_the_files_a_chat_touched(browser: WebDriver, tmp_path: Path, searched: dict[str, Any]) -> None:
    text = shown_in_host(browser, tmp_path, searched, "vite sourcemaps")
    assert "Vite build sourcemaps disabled\nclaude-code · vite · updated 2025-08-30 · 12 messages" in text
    assert "\nread vite.config.ts\n" in text
