"""The page in a real browser: Debian's Chromium, headless, driven through its chromedriver.

Each page is opened as a user opens it (the printed address first), checked for what a person sees,
and kept as a screenshot in tests/artifacts/ui/ (gitignored; CI keeps it beside the run). A hostile
chat runs nothing, the keyboard alone reaches everything, and a phone-wide window never scrolls
sideways.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.server.ui.conftest import Served

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

PAGES = {
    "search-latest": "/",
    "search-results": "/?q=nginx+jellyfin+reverse+proxy",
    "timeline-weeks": "/timeline",
    "timeline-period": "/timeline?period=2025-01-20",
    "chat": "/chat?uri=codex%3Akiln",
    "chat-hostile": "/chat?uri=hostile",
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
    browser.save_screenshot(str(SHOTS / f"{name}.png"))
    assert browser.find_element(By.TAG_NAME, "h1").text
    assert browser.execute_script("return document.styleSheets[0].cssRules.length") > 10  # the stylesheet applied
    assert console_problems(browser) == []
    assert browser.title.endswith("· pastchats")


def test_a_hostile_chat_runs_no_script(browser: WebDriver, served: Served) -> None:
    for path in ("/chat?uri=hostile", "/?q=hostile+payload", "/"):
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


@pytest.mark.parametrize("name", ["search-results", "timeline-weeks", "chat", "store", "health", "forget-confirm"])
def test_a_narrow_window_never_scrolls_sideways(browser: WebDriver, served: Served, name: str) -> None:
    browser.set_window_size(375, 800)
    try:
        open_page(browser, served, PAGES[name])
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        seen = browser.execute_script("return document.documentElement.clientWidth")
        browser.save_screenshot(str(SHOTS / f"narrow-{name}.png"))
        assert wide <= seen
    finally:
        browser.set_window_size(1280, 900)


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
