"""Headless Chromium renders the report without touching the network; the screenshot is kept for a human look."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.objectstore import S3Settings
from app.report import build_report
from tests.report_sample import ROOT, RUN_ID, SPEC, write_sample

ARTIFACTS = ROOT / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.browser
def test_chromium_renders_the_report_offline_and_a_screenshot_is_saved(s3: S3Settings, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    spec = tmp_path / "quick-3.yaml"
    spec.write_text(f"extends: {SPEC}\nrepeats: 3\n")
    write_sample(s3, repeats=3)
    ARTIFACTS.mkdir(exist_ok=True)
    html, png, pdf = ARTIFACTS / "report.html", ARTIFACTS / "report.png", ARTIFACTS / "report.pdf"
    build_report(str(spec), RUN_ID, s3, html)
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            page.goto(html.as_uri())
            page.screenshot(path=str(png), full_page=True)
            charts = page.locator("svg.chart")
            widths = [charts.nth(i).bounding_box()["width"] for i in range(charts.count())]
            overflow = page.evaluate("""() => {
                const main = document.querySelector('main').getBoundingClientRect();
                return [...document.querySelectorAll('table, figure')].filter(
                    e => e.getBoundingClientRect().right > main.right + 0.5).length; }""")
            page.emulate_media(media="print")
            page.pdf(path=str(pdf), format="A4", print_background=True)
        finally:
            browser.close()
    assert requests == [html.as_uri()]  # nothing fetched but the document itself: self-contained
    # Every chart of the document (13 from the sample's tables, plus the resource and client-settings charts the
    # sample's raw records give) laid out at a readable size.
    in_document = html.read_text().count('class="chart"')
    assert in_document >= 13 and len(widths) == in_document and all(w > 300 for w in widths), (in_document, widths)
    assert overflow == 0  # no table or chart sticks out of the page column
    assert png.stat().st_size > 100_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
