"""The static site, without a browser: pages, links, escaping, no remote resources."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset
from kvrecords.dataset.layout import discover
from kvrecords.tools.export import rows
from kvrecords.tools.site import build_site, format_bytes, format_tokens, slug

HOSTILE = "<script>alert(1)</script>"


class Links(HTMLParser):
    """Every URL a page references, by the tag and attribute that reference it."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []  # tag, attribute, url
        self.rows = 0
        self.in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "xlink:href", "data") and value is not None:
                self.refs.append((tag, name, value))
        if tag == "tbody":
            self.in_body = True
        if tag == "tr" and self.in_body:
            self.rows += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self.in_body = False


def parse(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    written = build_site(REPO, out)
    assert all(path.is_file() for path in written)
    return out


def test_one_page_per_record_and_per_model(site: Path) -> None:
    records = discover(REPO, "record")
    models = discover(REPO, "model")
    assert len(list((site / "records").glob("*.html"))) == len(records)
    assert len(list((site / "models").glob("*.html"))) == len(models)
    for model in models:
        assert (site / "models" / f"{model.expected_id}.html").is_file()
    for row in rows(REPO):
        assert (site / "records" / f"{slug(row['id'])}.html").is_file()


def test_index_has_one_row_per_record(site: Path) -> None:
    links = parse(site / "index.html")
    assert links.rows == len(discover(REPO, "record"))
    text = (site / "index.html").read_text(encoding="utf-8")
    assert f'<span id="visible-count">{links.rows}</span>' in text
    for unit in ("tokens", "ms", "tokens/s", "bytes (dtype)"):
        assert f'<span class="unit">{unit}</span>' in text


def test_every_local_link_exists_and_nothing_remote_is_loaded(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 3
    for page in pages:
        for tag, attribute, url in parse(page).refs:
            if re.match(r"[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):
                assert tag == "a" and attribute == "href", (page, tag, url)
                assert re.match(r"https?://", url), (page, url)
                continue
            target = (page.parent / url.split("#", 1)[0]).resolve()
            assert target.is_file(), f"{page.relative_to(site)} links to missing {url}"
        text = page.read_text(encoding="utf-8")
        assert "@import" not in text and "url(http" not in text


def test_assets_are_local_and_css_is_print_friendly(site: Path) -> None:
    css = (site / "assets" / "site.css").read_text(encoding="utf-8")
    assert "@media print" in css
    assert "http" not in css
    assert "http" not in (site / "assets" / "site.js").read_text(encoding="utf-8")


def test_record_page_has_source_and_marked_recomputation(site: Path) -> None:
    page = (site / "records" / "vllm-qwen38-27b-apc-150k-rtx5090.html").read_text(encoding="utf-8")
    assert '<pre class="explain">' in page
    assert "bytes per token" in page
    assert '<span class="assumed">' in page
    assert "Senn Tech" in page
    linked = (site / "records" / "deepseek-v2-mla-8xh800.html").read_text(encoding="utf-8")
    assert '<a href="https://arxiv.org/abs/2405.04434"' in linked


def test_model_page_chart_has_labelled_axes_and_legend(site: Path) -> None:
    page = (site / "models" / "gemma-3-27b.html").read_text(encoding="utf-8")
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert "context (tokens, log scale)" in svg
    assert "KV bytes (bf16, log scale)" in svg
    assert "sliding_window" in svg and "total" in svg
    assert "128K" in svg  # no max_context_tokens in the file: the chart runs to 128K
    assert "<polyline" in svg


def test_overview_charts_on_index(site: Path) -> None:
    page = (site / "index.html").read_text(encoding="utf-8")
    for ident in ("chart-bytes-per-token", "chart-ttft", "chart-decode"):
        assert f'id="{ident}"' in page
    assert "KV bytes per token (bf16, log scale)" in page
    assert "time to first token (ms, log scale)" in page
    assert "decode (tokens/s)" in page
    for family in ("full attention", "sliding-window mix", "MLA", "hybrid linear / Mamba"):
        assert family in page


def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "data")
    record = root / "records" / "kv-efficiency" / "deepseek-v2-mla-8xh800.yaml"
    text = record.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^title: >-\n(  .*\n)+", f"title: '{HOSTILE} & \"quotes\"'\n", text, count=1)
    text = text.replace(
        "url: https://arxiv.org/abs/2405.04434", "url: 'javascript:alert(1)'"
    ).replace("publisher: DeepSeek-AI", f"publisher: '{HOSTILE}'")
    record.write_text(text, encoding="utf-8")
    out = build_site(root, tmp_path / "site")
    for page in out:
        if page.suffix == ".html":
            content = page.read_text(encoding="utf-8")
            assert HOSTILE not in content, page
            assert 'href="javascript:' not in content.lower(), page
    record_page = tmp_path / "site" / "records" / "deepseek-v2-mla-8xh800.html"
    content = record_page.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;" in content
    assert "<script" not in content


def test_units() -> None:
    assert format_bytes(65536) == "64 KiB"
    assert format_bytes(1_597_440) == "1.52 MiB"
    assert format_bytes(512) == "512 B"
    assert format_tokens(131072) == "128K"
    assert format_tokens(1048576) == "1M"
    assert slug("kv-efficiency/a-b") == "a-b"
