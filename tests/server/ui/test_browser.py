"""The page in a real browser: Debian's Chromium, headless, driven through its chromedriver.

Each page is opened as a user opens it (the printed address first), checked for what a person sees,
and kept as a screenshot at 1280 and 400 px wide in tests/artifacts/ui/ (gitignored; CI keeps it
beside the run). A search says what it found and shows weak results apart; a chat's code reads as
code; a hostile chat runs nothing; the home lists eight chats in one screen; the keyboard alone
reaches everything and `?` shows how; a phone-wide window never scrolls sideways.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.server.ui.conftest import Served
from tests.server.ui.test_reading import AGENT_CHAT

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = REPO_ROOT / "tests" / "artifacts" / "ui"

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip("Chromium is not installed: apt-get install chromium chromium-driver", allow_module_level=True)

from selenium import webdriver  # noqa: E402  (after the skip: only where Chromium is)
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

NO_MATCH_HINT = (
    "no chat holds these words or anything close in meaning. "
    "Try other words the chat would have used, fewer words, or fewer filters."
)
PAGES = {
    "search-latest": "/",
    "search-results": "/?q=nginx+jellyfin+reverse+proxy",
    "search-nothing": "/?q=zzqxnomatch",
    "timeline-weeks": "/timeline",
    "timeline-period": "/timeline?period=2025-01-20",
    "chat": "/chat?uri=codex%3Akiln",
    "chat-hostile": "/chat?uri=hostile",
    "chat-markdown": "/chat?uri=retry",
    "chat-agent": AGENT_CHAT,
    "store": "/store",
    "health": "/health",
    "forget-confirm": "/forget?source=codex",
    "delete-confirm": "/delete?uri=bread",
}


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        driver.get(served.address)  # the token's visit: swapped for the cookie
        yield driver
    finally:
        driver.quit()


def base(served: Served) -> str:
    return f"http://127.0.0.1:{served.port}"


def open_page(driver: WebDriver, served: Served, path: str) -> None:
    driver.get(base(served) + path)
    WebDriverWait(driver, 60).until(expected_conditions.presence_of_element_located((By.TAG_NAME, "h1")))


def snapshot(driver: WebDriver, name: str) -> None:
    """The whole page as a screenshot (the window grown to its height, then put back)."""
    size = driver.get_window_size()
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size["width"], min(max(height + 140, size["height"]), 6000))
    try:
        driver.save_screenshot(str(SHOTS / f"{name}.png"))
    finally:
        driver.set_window_size(size["width"], size["height"])


def console_problems(driver: WebDriver) -> list[str]:
    """What the browser complained of: a refused resource (CSP), a script error, a failed load."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


def no_alert(driver: WebDriver) -> bool:
    try:
        driver.switch_to.alert  # noqa: B018  (reading it is the check)
    except NoAlertPresentException:
        return True
    return False


def test_the_printed_address_opens_the_search_page(browser: WebDriver, served: Served) -> None:
    assert browser.current_url == base(served) + "/"  # the token left the address bar
    assert browser.find_element(By.TAG_NAME, "h1").text == "Search"
    assert browser.switch_to.active_element.get_attribute("name") == "q"  # ready to type


@pytest.mark.parametrize("name", list(PAGES))
def test_each_page_renders_whole_without_a_console_complaint(browser: WebDriver, served: Served, name: str) -> None:
    console_problems(browser)  # what earlier pages left
    open_page(browser, served, PAGES[name])
    snapshot(browser, name)
    assert browser.find_element(By.TAG_NAME, "h1").text
    assert browser.execute_script("return document.styleSheets[0].cssRules.length") > 10  # the stylesheet applied
    assert console_problems(browser) == []
    assert browser.title.endswith("· pastchats")


def test_a_hostile_chat_runs_no_script(browser: WebDriver, served: Served) -> None:
    for path in ("/chat?uri=hostile", "/?q=hostile+payload", "/", "/chat?uri=retry"):
        open_page(browser, served, path)
        assert browser.title != "pwned"  # what the payload would set
        assert no_alert(browser)
        assert browser.find_elements(By.CSS_SELECTOR, "main img, main script, main b") == []
    open_page(browser, served, "/chat?uri=hostile")
    text = browser.find_element(By.CSS_SELECTOR, "div.conversation").text
    assert "<script>alert(1)</script> hostile payload" in text
    assert "<b>bold</b> & <i>tags</i>" in text
    assert browser.find_elements(By.CSS_SELECTOR, "a[href^='javascript']") == []


def test_the_keyboard_alone_searches_and_opens_a_chat(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, "/timeline")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "Skip to content"
    open_page(browser, served, "/")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("/")  # the search field, wherever the focus was
    active = browser.switch_to.active_element
    assert active.get_attribute("name") == "q"
    active.send_keys("sourdough starter acetone", Keys.ENTER)
    WebDriverWait(browser, 60).until(expected_conditions.title_contains("sourdough"))
    browser.find_element(By.TAG_NAME, "body").send_keys("j")  # to the first result
    first = browser.switch_to.active_element
    assert first.text == "Sourdough starter"
    first.send_keys(Keys.ENTER)
    WebDriverWait(browser, 60).until(expected_conditions.title_contains("Sourdough starter"))
    matched = browser.find_elements(By.CSS_SELECTOR, "article.msg.matched")
    assert matched
    assert "acetone" in matched[0].text
    browser.save_screenshot(str(SHOTS / "keyboard-opened-chat.png"))


@pytest.mark.parametrize("name", list(PAGES))
def test_a_narrow_window_never_scrolls_sideways(browser: WebDriver, served: Served, name: str) -> None:
    browser.set_window_size(400, 800)
    try:
        open_page(browser, served, PAGES[name])
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        seen = browser.execute_script("return document.documentElement.clientWidth")
        snapshot(browser, f"{name}-400")
        assert wide <= seen
    finally:
        browser.set_window_size(1280, 900)


def shown(driver: WebDriver, selector: str) -> list[str]:
    """The text of each element matching `selector` that a person can see."""
    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, selector) if element.is_displayed()]


def test_a_search_that_matches_nothing_says_so_and_marks_nothing(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, "/?q=zzqxnomatch")
    assert shown(browser, "main [role=status]") == ["No results for zzqxnomatch: " + NO_MATCH_HINT]
    assert browser.find_elements(By.CSS_SELECTOR, ".badge, article.msg.matched, section.chat, mark") == []
    assert "matched" not in browser.find_element(By.TAG_NAME, "main").text
    weak = browser.find_element(By.CSS_SELECTOR, "details.weak")
    assert weak.get_attribute("open") is None
    assert shown(browser, "details.weak li.row") == []  # folded until asked for


def test_weak_results_stand_apart_from_the_strong_ones(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, "/?q=nginx+jellyfin+reverse+proxy")
    assert shown(browser, "section.chat h3") == ["Nginx setup"]
    assert shown(browser, "details.weak li.row") == []
    browser.find_element(By.CSS_SELECTOR, "details.weak > summary").click()
    rows = shown(browser, "details.weak li.row a.title")
    assert len(rows) == 7
    assert "Nginx setup" not in rows
    weak = browser.find_element(By.CSS_SELECTOR, "details.weak")
    assert weak.find_elements(By.CSS_SELECTOR, ".badge, .matched, mark") == []
    assert weak.location["y"] > browser.find_element(By.CSS_SELECTOR, "section.chat").location["y"]
    browser.save_screenshot(str(SHOTS / "search-weak-opened.png"))


def test_a_chat_with_code_shows_it_as_code(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, "/chat?uri=retry")
    code = browser.find_elements(By.CSS_SELECTOR, "div.conversation pre > code")
    assert len(code) == 1
    assert "def fetch_with_retry(call, tries=5):" in code[0].text
    conversation = browser.find_element(By.CSS_SELECTOR, "div.conversation").text
    assert "```" not in conversation
    assert browser.find_elements(By.CSS_SELECTOR, "div.conversation li")
    assert browser.title != "pwned"
    assert no_alert(browser)
    links = browser.find_elements(By.CSS_SELECTOR, "div.conversation a")
    assert [a.get_attribute("href") for a in links] == ["https://docs.python.org/3/library/time.html"]
    assert links[0].get_attribute("rel") == "noopener noreferrer nofollow"


def test_an_agents_tool_calls_are_folded(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, AGENT_CHAT)
    assert "[tool Read:" not in browser.find_element(By.CSS_SELECTOR, "div.conversation").text
    summary = browser.find_element(By.CSS_SELECTOR, "details.tools > summary")
    assert summary.text == "1 tool call: Read"
    summary.click()
    assert "[tool Read: /home/ana/src/vite/vite.config.ts]" in shown(browser, "details.tools[open] li")


def test_the_home_with_eight_chats_fits_in_1200_pixels(browser: WebDriver, served: Served) -> None:
    browser.set_window_size(1280, 700)  # shorter than the page could be: its height is its own
    try:
        open_page(browser, served, "/")
        assert len(shown(browser, "ul.rows li.row")) == 8
        height = browser.execute_script("return document.documentElement.scrollHeight")
        assert height <= 1200
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        assert wide <= browser.execute_script("return document.documentElement.clientWidth")
    finally:
        browser.set_window_size(1280, 900)


def test_question_mark_opens_the_shortcuts(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, "/")
    hint = browser.find_element(By.CSS_SELECTOR, "details.keys > summary")
    assert hint.is_displayed()
    assert "shortcuts" in hint.text
    assert not browser.find_element(By.CSS_SELECTOR, "details.keys .panel").is_displayed()
    browser.switch_to.active_element.send_keys("?")  # the cursor is in the empty search field
    panel = browser.find_element(By.CSS_SELECTOR, "details.keys .panel")
    assert panel.is_displayed()
    assert "next, previous chat or message" in panel.text
    assert browser.find_element(By.NAME, "q").get_attribute("value") == ""
    browser.save_screenshot(str(SHOTS / "shortcuts.png"))
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert not panel.is_displayed()
    open_page(browser, served, "/chat?uri=retry")
    browser.find_element(By.TAG_NAME, "body").send_keys("?")
    assert browser.find_element(By.CSS_SELECTOR, "details.keys .panel").is_displayed()
    field = browser.find_element(By.NAME, "q") if browser.find_elements(By.NAME, "q") else None
    assert field is None  # the chat page has no search field: "?" reached the page itself


# Last: it deletes a chat from the store the other tests read.
def test_deleting_a_chat_from_the_page(browser: WebDriver, served: Served) -> None:
    open_page(browser, served, "/chat?uri=keys")  # a chat no other test here reads
    browser.find_element(By.LINK_TEXT, "Delete this chat…").click()
    WebDriverWait(browser, 60).until(expected_conditions.title_contains("Delete a chat"))
    browser.find_element(By.CSS_SELECTOR, "button.danger").click()
    WebDriverWait(browser, 60).until(expected_conditions.title_contains("Deleted"))
    browser.save_screenshot(str(SHOTS / "deleted.png"))
    assert "Deleted the chat" in browser.find_element(By.CSS_SELECTOR, ".notice").text
    open_page(browser, served, "/chat?uri=keys")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
