"""A real headless Chromium (Debian's `chromium` + `chromium-driver`, via selenium) uses the page on the demo index.

Skipped with a visible reason when Chromium or selenium is missing — except in CI
(``CI=true``), where a missing browser is a failure: this test must never pass silently there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from server.servehelp import DEMO_ANSWER, DEMO_QUESTION, Served

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
DRIVER = shutil.which("chromedriver")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1440,1000"]


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None or DRIVER is None:
        return "Chromium not found: apt-get install -y chromium chromium-driver"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the browser test, but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gearag-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver: Any, condition: Any, timeout: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def test_page_asks_streams_and_draws_the_graph(browser: Any, served: Served, tmp_path: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(served.base_url + "/")
    body = browser.find_element(By.TAG_NAME, "body")
    _wait(browser, lambda d: body.get_attribute("data-index") == "loaded")
    options = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#method option")]
    assert {"bm25", "syncge", "gear"} <= set(options)
    assert browser.switch_to.active_element.get_attribute("id") == "question"  # focus starts in the question

    question = browser.find_element(By.ID, "question")
    question.send_keys(DEMO_QUESTION + Keys.ENTER)  # Enter submits
    _wait(browser, lambda d: body.get_attribute("data-state") in ("done", "error"))
    status = browser.find_element(By.ID, "status").text
    assert body.get_attribute("data-state") == "done", status

    assert browser.find_element(By.ID, "answer").text == DEMO_ANSWER
    passages = browser.find_elements(By.CSS_SELECTOR, "#passages > li")
    titles = [p.find_element(By.TAG_NAME, "strong").text for p in passages]
    assert len(passages) == 5 and any("Virginia Tech Hokies" in t for t in titles), titles
    steps = browser.find_elements(By.CSS_SELECTOR, "#steps > li[data-step]")
    assert len(steps) >= 1 and "Query:" in steps[0].text
    nodes = browser.execute_script("return window.gearagGraph.nodes().length")
    highlighted = browser.execute_script("return window.gearagGraph.edges('.hl').length")
    assert nodes > 3 and highlighted >= 1, (nodes, highlighted)

    # Passage text on demand: opening the first passage shows its text.
    passages[0].find_element(By.TAG_NAME, "summary").click()
    assert passages[0].find_element(By.TAG_NAME, "p").is_displayed()

    # Browse an entity's neighbourhood.
    entity = browser.find_element(By.ID, "entity")
    entity.send_keys("Dell Curry" + Keys.ENTER)
    _wait(browser, lambda d: "Neighbourhood of Dell Curry" in d.find_element(By.ID, "graph-caption").text, 20)
    assert browser.execute_script("return window.gearagGraph.nodes('.focus').length") == 1

    if os.environ.get("GEARAG_SCREENSHOT"):  # `GEARAG_SCREENSHOT=docs/serve.png pytest ...` refreshes the README's
        question.clear()
        question.send_keys(DEMO_QUESTION + Keys.ENTER)
        _wait(browser, lambda d: body.get_attribute("data-state") == "done")
        browser.save_screenshot(os.environ["GEARAG_SCREENSHOT"])


def test_page_escapes_data_from_the_index(browser: Any, served: Served) -> None:
    """A question with markup comes back as text in the steps, never as HTML."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(served.base_url + "/")
    body = browser.find_element(By.TAG_NAME, "body")
    _wait(browser, lambda d: body.get_attribute("data-index") == "loaded")
    hostile = "<img src=x onerror=\"document.title='pwned'\"> Stephen Curry father?"
    browser.find_element(By.ID, "question").send_keys(hostile + Keys.ENTER)
    _wait(browser, lambda d: body.get_attribute("data-state") in ("done", "error"))
    assert browser.title == "gearag"
    assert browser.find_elements(By.CSS_SELECTOR, "#steps img") == []
    assert hostile in browser.find_element(By.ID, "steps").text


def test_docs_render_offline_and_offer_to_authorise(browser: Any, served: Served) -> None:
    """/docs draws Swagger UI from gearag's own files (the machine has no internet) with an Authorize button."""
    from selenium.webdriver.common.by import By

    browser.get(served.base_url + "/docs")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock"), 30)
    assert browser.find_elements(By.CSS_SELECTOR, "button.authorize")
    paths = {e.text for e in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert {"/v1/retrieve", "/v1/ask"} <= paths
