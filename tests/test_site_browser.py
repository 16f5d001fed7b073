"""The static site in a real headless Chromium: sorting, filtering, links, charts, no JS errors.

Needs /usr/bin/chromium and /usr/bin/chromedriver (tools/install-browser.sh) and selenium.
A missing browser fails the tests on purpose: the site's JS is only tested here.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvrecords.tools.site import build_site

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# for a human to look at; `make site-screenshot` copies it to docs/screenshot-site.png
SCREENSHOT = REPO / "site" / "screenshot.png"
CHARTS_SCREENSHOT = REPO / "site" / "screenshot-charts.png"
RECORD_SCREENSHOT = REPO / "site" / "screenshot-record.png"
INSTALL_HINT = "make test installs chromium and chromedriver as root; else run sudo sh tools/install-browser.sh"

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.chrome.webdriver import WebDriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.ui import Select
except ImportError:  # pragma: no cover - reported by the fixture as a failure, not a skip
    webdriver = None  # type: ignore[assignment]


@pytest.fixture(scope="module")
def site(fixture_root: Path) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="kvrecords-site-"))
    build_site(fixture_root, folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    if webdriver is None:
        pytest.fail("selenium is not installed: pip install -e '.[test]'; then " + INSTALL_HINT)
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: {INSTALL_HINT}")
    profile = tempfile.mkdtemp(prefix="kvrecords-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_window_size(1400, 1000)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_chromium_chromedriver_and_selenium_are_installed() -> None:
    """A missing browser is a failure with the fix in the message, never a skip."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    assert not missing, f"{', '.join(missing)} missing: {INSTALL_HINT}"
    assert webdriver is not None, "selenium is not installed: pip install -e '.[test]'"


def _open_index(browser: WebDriver, site: Path) -> None:
    browser.get((site / "index.html").as_uri())
    _log(browser)  # start each test with an empty log


def _log(browser: WebDriver) -> list[dict[str, Any]]:
    """The browser console since the last call (goog:loggingPrefs browser ALL)."""
    entries: list[dict[str, Any]] = browser.get_log("browser")  # type: ignore[no-untyped-call]
    return entries


def _severe(browser: WebDriver) -> list[str]:
    return [str(e["message"]) for e in _log(browser) if e["level"] == "SEVERE"]


def _visible_rows(browser: WebDriver) -> list[WebElement]:
    rows = browser.find_elements(By.CSS_SELECTOR, "#records tbody tr")
    return [row for row in rows if row.is_displayed()]


def _column(browser: WebDriver, header: str) -> int:
    headers = browser.find_elements(By.CSS_SELECTOR, "#records thead th")
    names = [h.text.splitlines()[0].strip() for h in headers]
    return names.index(header)


def _context_keys(browser: WebDriver, index: int) -> list[float | None]:
    cells = browser.find_elements(By.CSS_SELECTOR, f"#records tbody tr td:nth-child({index + 1})")
    keys = [cell.get_attribute("data-sort") or "" for cell in cells]
    return [float(k) if k else None for k in keys]


def test_index_loads_without_console_errors(browser: WebDriver, site: Path) -> None:
    browser.get((site / "index.html").as_uri())
    assert browser.find_element(By.ID, "records")
    assert _severe(browser) == []
    count = browser.find_element(By.ID, "visible-count").text
    assert int(count) == len(_visible_rows(browser)) > 0


def test_clicking_context_header_sorts_by_context(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    index = _column(browser, "context")
    before = _context_keys(browser, index)
    header = browser.find_elements(By.CSS_SELECTOR, "#records thead th")[index]
    header.click()
    after = _context_keys(browser, index)
    numbers = [k for k in after if k is not None]
    assert numbers == sorted(numbers), after
    assert after[len(numbers) :] == [None] * (len(after) - len(numbers)), "empty cells go last"
    assert sorted(before, key=str) == sorted(after, key=str), "the same rows, reordered"
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = [k for k in _context_keys(browser, index) if k is not None]
    assert descending == sorted(numbers, reverse=True)
    assert _context_keys(browser, index)[-1] is None, "empty cells still last"
    assert _severe(browser) == []


def test_text_filter_and_technique_select_reduce_rows(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    total = len(_visible_rows(browser))
    Select(browser.find_element(By.ID, "filter-technique")).select_by_value("prefix_caching")
    with_technique = _visible_rows(browser)
    assert 0 < len(with_technique) < total
    for row in with_technique:
        assert "prefix_caching" in (row.get_attribute("data-techniques") or "").split()
    box = browser.find_element(By.ID, "filter-q")
    box.send_keys("qwen")
    narrowed = _visible_rows(browser)
    assert 0 < len(narrowed) < len(with_technique)
    for row in narrowed:
        assert "qwen" in row.text.lower()
        assert "prefix_caching" in (row.get_attribute("data-techniques") or "").split()
    assert browser.find_element(By.ID, "visible-count").text == str(len(narrowed))
    assert _severe(browser) == []


def test_hardware_filter_takes_a_family_or_one_form_factor(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    select = Select(browser.find_element(By.ID, "filter-hardware"))
    select.select_by_value("h100")
    family = _visible_rows(browser)
    keys = [(row.get_attribute("data-hardware") or "").split() for row in family]
    assert all("h100" in k for k in keys)
    assert any("h100-sxm" in k for k in keys), "a stated h100-sxm is in the family"
    assert any(k == ["h100"] for k in keys), "so is an H100 of unstated form factor"
    select.select_by_value("h100-sxm")
    one = _visible_rows(browser)
    assert 0 < len(one) < len(family)
    for row in one:
        assert "h100-sxm" in (row.get_attribute("data-hardware") or "").split()
    assert _severe(browser) == []


def test_accelerator_page_opens_from_a_hardware_cell(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    link = browser.find_element(By.CSS_SELECTOR, "#records tbody td a[href='hardware/h100.html']")
    link.click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "NVIDIA H100"
    tables = browser.find_elements(By.CSS_SELECTOR, "table.by-technique")
    assert tables and all(t.size["height"] > 0 for t in tables)
    browser.find_element(By.CSS_SELECTOR, "table.by-technique a[href^='../records/']").click()
    assert browser.find_element(By.CSS_SELECTOR, "pre.explain")
    assert _severe(browser) == []


def test_record_link_opens_the_recomputation(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    link = browser.find_element(By.CSS_SELECTOR, "#records tbody tr td a[href^='records/']")
    link.click()
    pre = browser.find_element(By.CSS_SELECTOR, "pre.explain")
    assert "bytes per token" in pre.text
    assert _severe(browser) == []


def test_record_page_shows_notes_and_why_each_null_is_null(browser: WebDriver, site: Path) -> None:
    browser.get((site / "records" / "vllm-qwen38-27b-apc-150k-rtx5090.html").as_uri())
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    for heading in ("Workload", "Headline", "Runs", "Comparisons", "Notes", "Confidence"):
        assert heading in headings
    assert "Results" not in headings and "Further observations" not in headings
    notes = browser.find_element(By.XPATH, "//h2[.='Notes']/following-sibling::p[1]")
    assert notes.is_displayed()
    assert "43-45 percent hit over four days" in notes.text
    reasons = browser.find_elements(By.CSS_SELECTOR, "table.not-stated tbody tr")
    shown = {row.find_element(By.TAG_NAME, "code").text: row.text for row in reasons}
    assert all(row.is_displayed() for row in reasons)
    assert (
        "The post does not name the vLLM version or build." in shown["methodology.engine.version"]
    )
    assert "not tied to a section or table" in shown["methodology.source.locator"]
    warm = browser.find_element(By.ID, "run-warm")
    assert "headline" in warm.find_element(By.TAG_NAME, "h3").text
    metrics = warm.find_elements(By.CSS_SELECTOR, "table.metrics tbody tr")
    assert [m.find_element(By.TAG_NAME, "code").text for m in metrics] == ["ttft_ms", "hit_rate"]
    browser.find_element(By.CSS_SELECTOR, "table.comparisons a[href='#run-cold']").click()
    assert browser.find_element(By.ID, "run-cold").is_displayed()
    locator = browser.find_element(By.XPATH, "//dt[.='locator']/following-sibling::dd[1]")
    assert locator.text.startswith("not stated: The post is short")
    assert _severe(browser) == []
    # the runs, for a human to look at (`make site-screenshot`)
    runs = browser.find_element(By.XPATH, "//h2[.='Runs']")
    browser.execute_script("arguments[0].scrollIntoView()", runs)
    RECORD_SCREENSHOT.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(RECORD_SCREENSHOT))
    assert RECORD_SCREENSHOT.stat().st_size > 10_000


def test_overview_charts_have_size_and_screenshot(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    for ident in ("chart-ttft", "chart-decode", "chart-changes", "chart-bytes-per-token"):
        svg = browser.find_element(By.CSS_SELECTOR, f"#{ident} svg")
        size = svg.size
        assert size["width"] > 100 and size["height"] > 100, (ident, size)
    browser.set_window_size(1400, 1000)
    SCREENSHOT.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000
    # the TTFT chart and what each treatment bought, below the table
    browser.set_window_size(1400, 1600)
    browser.execute_script("document.querySelector('#chart-ttft').scrollIntoView()")
    assert browser.save_screenshot(str(CHARTS_SCREENSHOT))
    assert CHARTS_SCREENSHOT.stat().st_size > 10_000
    browser.set_window_size(1400, 1000)
    assert _severe(browser) == []


def test_a_point_on_the_ttft_chart_opens_its_run(browser: WebDriver, site: Path) -> None:
    _open_index(browser, site)
    href = "records/vllm-qwen38-27b-apc-150k-rtx5090.html#run-cold"
    point = browser.find_element(By.CSS_SELECTOR, f"#chart-ttft a[href='{href}']")
    browser.execute_script("arguments[0].scrollIntoView()", point)
    browser.execute_script(
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", point
    )
    run = browser.find_element(By.ID, "run-cold")
    assert run.is_displayed()
    assert "53,200" in run.text
    assert _severe(browser) == []


def test_accelerator_page_tables_sort(browser: WebDriver, site: Path) -> None:
    browser.get((site / "hardware" / "h100.html").as_uri())
    table = browser.find_element(By.CSS_SELECTOR, "table.records-here")
    headers = table.find_elements(By.CSS_SELECTOR, "thead th")
    names = [h.text.splitlines()[0].strip() for h in headers]
    index = names.index("KV at context")
    headers[index].click()
    cells = table.find_elements(By.CSS_SELECTOR, f"tbody tr td:nth-child({index + 1})")
    keys = [cell.get_attribute("data-sort") or "" for cell in cells]
    numbers = [float(k) for k in keys if k]
    assert len(numbers) >= 3 and numbers == sorted(numbers)
    assert keys[len(numbers) :] == [""] * (len(keys) - len(numbers)), "empty cells go last"
    assert _severe(browser) == []


def test_a_planner_page_shows_its_grid_and_links_its_evidence(
    browser: WebDriver, site: Path
) -> None:
    # Llama 3.1 8B on one H100 SXM, as the test dataset's CPU-offload record ran it
    browser.get((site / "planner" / "llama-3.1-8b--1x-h100-sxm.html").as_uri())
    assert _severe(browser) == []
    cells = browser.find_elements(By.CSS_SELECTOR, "#planner-grid td.planner-cell")
    assert len(cells) == 9  # 3 contexts x 3 user counts
    cells[0].find_element(By.TAG_NAME, "a").click()
    assert browser.current_url.endswith("#evidence")
    evidence = browser.find_element(By.ID, "evidence").find_element(
        By.XPATH, "following-sibling::ul"
    )
    assert "vllm-cpu-offload-llama31-8b-h100" in evidence.text


def test_an_accelerator_ranking_filters_by_accelerator_count(
    browser: WebDriver, site: Path
) -> None:
    browser.get((site / "hardware" / "h100.html").as_uri())
    assert _severe(browser) == []
    rows = browser.find_elements(By.CSS_SELECTOR, "table.by-technique tbody tr")
    counts = {row.get_attribute("data-count") for row in rows}
    choice = sorted(c for c in counts if c)[0]
    Select(browser.find_element(By.ID, "rank-count")).select_by_value(choice)
    shown = [row for row in rows if row.is_displayed()]
    assert shown and all(row.get_attribute("data-count") == choice for row in shown)
    Select(browser.find_element(By.ID, "rank-count")).select_by_value("")
    assert len([row for row in rows if row.is_displayed()]) == len(rows)


# Each table that is wider than its container, or sticks out of it, or makes the page scroll
# sideways: [page-relative name, table's width, container's width].
OVERFLOWING_TABLES = """
const found = [];
document.querySelectorAll("table").forEach((table, index) => {
  const box = table.parentElement;
  const right = table.getBoundingClientRect().right;
  if (table.scrollWidth > table.clientWidth + 1 || box.scrollWidth > box.clientWidth + 1
      || right > box.getBoundingClientRect().right + 1) {
    found.push([table.className || table.id || "table " + index, table.scrollWidth, box.clientWidth]);
  }
});
if (document.documentElement.scrollWidth > window.innerWidth) {
  found.push(["the page", document.documentElement.scrollWidth, window.innerWidth]);
}
return found;
"""


def _overflowing(browser: WebDriver, pages: list[Path], top: Path) -> dict[str, Any]:
    browser.set_window_size(1400, 1000)
    found = {}
    for page in pages:
        browser.get(page.as_uri())
        wide = browser.execute_script(OVERFLOWING_TABLES)
        if wide:
            found[str(page.relative_to(top))] = wide
    return found


def test_no_table_overflows_its_container_at_1400_px(browser: WebDriver, site: Path) -> None:
    """Every page of the site in a 1,400 px window: the coverage and calibration tables, the
    index, each accelerator, model, planner and record page."""
    pages = sorted(site.rglob("*.html"))
    names = {str(page.relative_to(site)) for page in pages}
    assert {"coverage.html", "calibration.html", "index.html", "hardware/h100.html"} <= names
    assert _overflowing(browser, pages, site) == {}
    assert _severe(browser) == []


@pytest.fixture(scope="module")
def live_site() -> Iterator[Path]:
    """The site of the dataset in this repository, as readers get it."""
    folder = Path(tempfile.mkdtemp(prefix="kvrecords-live-site-"))
    build_site(REPO, folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_live_site_s_coverage_index_and_accelerator_tables_fit_1400_px(
    browser: WebDriver, live_site: Path
) -> None:
    """The widest tables are the live dataset's: every engine and accelerator class it holds a
    column of the coverage matrices, every record a row of the index."""
    pages = [
        live_site / "coverage.html",
        live_site / "index.html",
        *sorted((live_site / "hardware").glob("*.html")),
    ]
    assert _overflowing(browser, pages, live_site) == {}


def test_the_index_shows_each_rate_in_the_column_of_its_scope(
    browser: WebDriver, site: Path
) -> None:
    """Decode per user holds only one sequence's decode rate, output throughput only the
    aggregate; an empty cell says which column holds the run's figure."""
    _open_index(browser, site)
    decode, output = _column(browser, "decode per user"), _column(browser, "output throughput")
    per_user = aggregate = 0
    for row in browser.find_elements(By.CSS_SELECTOR, "#records tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        mine, other = cells[decode].text, cells[output].text
        if cells[decode].get_attribute("data-sort"):
            assert "decode_tokens_per_s (" in mine and "output_tokens" not in mine, mine
            per_user += 1
        if cells[output].get_attribute("data-sort"):
            assert "output_tokens_per_s (" in other and "decode_tokens" not in other, other
            aggregate += 1
        if not cells[decode].get_attribute("data-sort") and cells[output].get_attribute(
            "data-sort"
        ):
            assert mine == "aggregate only: see output throughput"
    assert per_user >= 3 and aggregate >= 3
    assert _severe(browser) == []


def test_an_accelerator_ranking_filters_by_model_and_hides_what_is_left_empty(
    browser: WebDriver, site: Path
) -> None:
    browser.get((site / "hardware" / "h100.html").as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "table.by-technique tbody tr")
    total = len(rows)
    assert browser.find_element(By.ID, "rank-shown").text == f"{total} of {total} comparisons shown"
    Select(browser.find_element(By.ID, "rank-model")).select_by_value("llama-3.1-8b")
    shown = [row for row in rows if row.is_displayed()]
    assert 0 < len(shown) < total
    assert all(row.get_attribute("data-model") == "llama-3.1-8b" for row in shown)
    assert all("llama-3.1-8b" in row.text for row in shown)
    assert (
        browser.find_element(By.ID, "rank-shown").text
        == f"{len(shown)} of {total} comparisons shown"
    )
    # a technique none of whose comparisons is left goes, heading and all
    routing = browser.find_element(By.ID, "technique-cache_aware_routing")
    assert not routing.is_displayed()
    assert browser.find_element(By.ID, "technique-kv_offload").is_displayed()
    Select(browser.find_element(By.ID, "rank-model")).select_by_value("")
    assert routing.is_displayed() and len([r for r in rows if r.is_displayed()]) == total
    # the 16-GPU cluster's rows say 16 and go when one card is asked for
    cluster = [row for row in rows if row.get_attribute("data-count") == "16"]
    assert cluster and all(row.find_elements(By.XPATH, "td[.='16']") for row in cluster)
    Select(browser.find_element(By.ID, "rank-count")).select_by_value("1")
    assert not any(row.is_displayed() for row in cluster)
    Select(browser.find_element(By.ID, "rank-count")).select_by_value("")
    assert _severe(browser) == []


def test_no_model_page_shows_an_unknown_its_model_file_does_not_list(
    browser: WebDriver, site: Path, fixture_root: Path
) -> None:
    """Every model page as a reader sees it: a layer-group row says 'unknown' or '?' only when
    the model file lists one of that group's dimensions as unknown."""
    from kvrecords.dataset.document import Document, read_document
    from kvrecords.dataset.layout import discover

    checked = 0
    for model_file in discover(fixture_root, "model"):
        document = read_document(model_file.path, model_file.display)
        assert isinstance(document, Document)
        listed = [entry["field"] for entry in document.data.get("unknown", [])]
        browser.get((site / "models" / f"{model_file.expected_id}.html").as_uri())
        rows = browser.find_elements(By.CSS_SELECTOR, "table.groups tbody tr")
        assert rows, model_file.expected_id
        for index, row in enumerate(rows):
            shows_unknown = "unknown" in row.text or "?" in row.text
            # a parallel group's mixers are rows of their own, under the group's number
            number = int(row.find_element(By.TAG_NAME, "td").text) - 1
            group_listed = any(f.startswith(f"layer_groups[{number}].") for f in listed)
            assert not shows_unknown or group_listed, (model_file.expected_id, index, row.text)
        checked += 1
    assert checked >= 40
    assert _severe(browser) == []


def test_a_model_page_links_its_geometry_sibling_s_records_and_draws_fp8(
    browser: WebDriver, site: Path
) -> None:
    browser.get((site / "models" / "llama-3.1-70b.html").as_uri())
    chart = browser.find_element(By.CSS_SELECTOR, "#chart-model svg")
    assert chart.size["height"] > 100
    titles = [t.get_attribute("textContent") for t in chart.find_elements(By.TAG_NAME, "title")]
    assert "total, fp8 KV" in titles
    assert "weights (bf16, 70B params) + KV total, one sequence" in titles
    section = browser.find_element(By.ID, "same-geometry")
    assert section.is_displayed()
    link = browser.find_element(
        By.CSS_SELECTOR,
        "ul.siblings a[href='../records/lmcache-tiered-llama33-70b-8xh100-1k-100k.html']",
    )
    link.click()
    assert "llama-3.3-70b-instruct" in browser.find_element(By.TAG_NAME, "body").text
    assert _severe(browser) == []
