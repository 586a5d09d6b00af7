"""Look at the Airflow UI in headless Chromium (Debian's /usr/bin/chromium via playwright-python; playwright
never downloads a browser here): log in with a JWT `_token` cookie, open a DAG page, screenshot it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"]


@dataclass(frozen=True)
class PageCheck:
    url: str
    title: str
    text: str
    screenshot: Path


def check_page(api_url: str, token: str, path: str, expect_texts: list[str], screenshot: Path,
               timeout_ms: int = 60_000) -> PageCheck:
    """Open `path` logged in, wait until every text in `expect_texts` is visible, take a screenshot."""
    from playwright.sync_api import sync_playwright

    screenshot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.add_cookies([{"name": "_token", "value": token, "url": api_url}])
            page = context.new_page()
            page.goto(f"{api_url}{path}", wait_until="networkidle", timeout=timeout_ms)
            for text in expect_texts:
                page.get_by_text(text, exact=False).first.wait_for(timeout=timeout_ms)
            page.wait_for_timeout(1500)  # let the grid finish drawing before the screenshot
            page.screenshot(path=str(screenshot), full_page=False)
            return PageCheck(url=page.url, title=page.title(), text=page.inner_text("body"), screenshot=screenshot)
        finally:
            browser.close()
