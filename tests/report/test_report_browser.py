"""``report.html`` in a real browser: Debian's headless Chromium, driven by Selenium through
``chromedriver``. The page is opened from its file:// URL; the test fails on any console error,
on any request other than the page itself (Chrome's performance log records every one), on a
blank screenshot, and when a hostile memory's markup ran.

Skips, naming what is missing, when Chromium, chromedriver or Selenium is not installed, unless
``RECALLBENCH_REQUIRE_BROWSER=1`` (``.ci/run`` sets it): then it fails, so a broken install
cannot pass CI as a skip. The screenshot is saved in the test's temporary folder; its path, size
and share of non-blank pixels are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

from recallbench.cli import app

pytestmark = pytest.mark.slow

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WINDOW = (1200, 2400)
MIN_INK = 0.02
"""Least share of the screenshot's pixels that are not the page's white background."""


def _missing(what: str) -> NoReturn:
    message = f"{what} not installed (apt-get install chromium chromium-driver; pip selenium)"
    if os.environ.get("RECALLBENCH_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{message}; RECALLBENCH_REQUIRE_BROWSER=1 requires it")
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium under chromedriver, logging the console and every network event."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium")
    binary = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if binary is None:
        _missing("chromium")
    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        _missing("chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps",
                f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _report(run_dir: Path, out: Path) -> Path:
    result = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out / "report.html"


def _requests(driver: Any) -> list[str]:
    """The URL of every request the page made since the log was last read."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params") or {}
        if message["method"] == "Network.requestWillBeSent":
            urls.append(params["request"]["url"])
        elif message["method"] == "Network.webSocketCreated":
            urls.append(params["url"])
    return urls


def ink_share(png: Path) -> tuple[tuple[int, int], float]:
    """The image's size and the share of its pixels that differ from pure white."""
    from PIL import Image

    with Image.open(png) as image:
        grey = image.convert("L")
        histogram = grey.histogram()
        return image.size, 1.0 - histogram[255] / (grey.width * grey.height)


def _open(driver: Any, html: Path) -> list[str]:
    driver.get_log("performance")  # drop what came before
    driver.get_log("browser")
    driver.get(html.resolve().as_uri())
    rows = driver.find_elements("css selector", "#q tbody tr.row")
    assert rows, "the question table was not filled: the page's script did not run"
    return [r.text for r in rows]


def _check_clean(driver: Any, html: Path) -> None:
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    assert _requests(driver) == [html.resolve().as_uri()]
    assert driver.execute_script("return window.__pwned === undefined")


def test_the_report_renders_offline_without_errors(
    browser: Any, sample_run: Path, tmp_path: Path
) -> None:
    html = _report(sample_run, tmp_path)
    _open(browser, html)
    # filter by a system and a verdict, then open a question
    browser.execute_script(
        "var s = document.querySelectorAll('#filters select');"
        "s[1].value = s[1].options[2].value; s[1].dispatchEvent(new Event('change'));"
        "s[3].value = 'right'; s[3].dispatchEvent(new Event('change'));"
    )
    rows = browser.find_elements("css selector", "#q tbody tr.row")
    assert rows and all(" bm25 " in f" {r.text} " and "right" in r.text for r in rows)
    rows[0].click()
    detail = browser.find_element("css selector", "#q tbody tr.detail").text
    assert "what came back" in detail and "metrics of this question" in detail
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    size, ink = ink_share(shot)
    print(f"\nscreenshot {shot}: {size[0]}x{size[1]} px, {shot.stat().st_size:,} bytes, "
          f"{ink:.1%} of pixels not blank")
    assert ink > MIN_INK
    _check_clean(browser, html)


def test_a_hostile_memory_stays_text_in_the_browser(
    browser: Any, hostile_run: Path, hostile_texts: tuple[str, str], tmp_path: Path
) -> None:
    hostile, hostile_slice = hostile_texts
    html = _report(hostile_run, tmp_path)
    texts = _open(browser, html)
    assert any(hostile_slice in t for t in texts)  # shown as text, in the table
    row = next(r for r in browser.find_elements("css selector", "#q tbody tr.row")
               if " q01 " in f" {r.text} ")
    row.click()
    detail = browser.find_element("css selector", "#q tbody tr.detail").text
    assert "window.__pwned = 1" in detail and "<b>bold?</b>" in detail
    assert browser.find_elements("css selector", "main img, #q b img") == []
    _check_clean(browser, html)


def test_the_checks_see_a_request_and_a_console_error(browser: Any, tmp_path: Path) -> None:
    """The two checks above are not vacuous: a page (not a report) that logs an error and asks
    a loopback port nothing listens on for an image is caught by both."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body><script>console.error("boom")</script>'
        '<img src="http://127.0.0.1:9/x.png"></body></html>',
        encoding="utf-8",
    )
    browser.get_log("performance")
    browser.get_log("browser")
    browser.get(page.resolve().as_uri())
    browser.execute_script("return document.readyState")
    assert "http://127.0.0.1:9/x.png" in _requests(browser)
    assert any("boom" in e["message"] for e in browser.get_log("browser")
               if e["level"] == "SEVERE")
