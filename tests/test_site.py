"""The static site, without a browser: pages, links, escaping, what each page shows, one read."""

from __future__ import annotations

import builtins
import io
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, copy_dataset
from kvrecords.checks.hardware import HardwareCatalog
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.kv.hardware import Hardware
from kvrecords.tools.explain import explain_record
from kvrecords.tools.export import rows
from kvrecords.tools.site import build_site, format_bytes, format_tokens, slug
from kvrecords.tools.site.charts import (
    DecodePoint,
    LinearAxis,
    LogAxis,
    ModelBar,
    TtftPair,
    bytes_per_token_chart,
    decode_chart,
    log_bounds,
    ttft_chart,
)
from kvrecords.tools.site.data import Speedup, gather, speedup_of
from kvrecords.tools.site.formatting import measured
from kvrecords.tools.site.hardware import hardware_families, placement
from kvrecords.tools.site.runs import ROLE_WORDS

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SEED = "vllm-qwen38-27b-apc-150k-rtx5090"


class Page(HTMLParser):
    """A page as a reader and a link checker see it: its URLs, its ids, its text, its records
    table."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []  # tag, attribute, url
        self.chunks: list[str] = []
        self.ids: set[str] = set()
        self.table: list[list[tuple[str, str]]] = []  # #records rows: (data-sort, text) per cell
        self._in_records = False
        self._cell: list[str] | None = None
        self._sort = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        for name, value in attrs:
            if name in ("href", "src", "xlink:href", "data") and value is not None:
                self.refs.append((tag, name, value))
        if tag == "table" and found.get("id") == "records":
            self._in_records = True
        if self._in_records and tag == "tr":
            self.table.append([])
        if self._in_records and tag == "td":
            self._cell, self._sort = [], found.get("data-sort") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_records = False
        if tag == "td" and self._cell is not None:
            self.table[-1].append((self._sort, " ".join(" ".join(self._cell).split())))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self) -> str:
        """Every text on the page, whitespace collapsed."""
        return " ".join(" ".join(self.chunks).split())

    @property
    def body_rows(self) -> list[list[tuple[str, str]]]:
        return [row for row in self.table if row]


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    written = build_site(REPO, out)
    assert all(path.is_file() for path in written)
    return out


def record_data(record_id: str) -> dict[str, Any]:
    path = REPO / "records" / f"{record_id}.yaml"
    document = read_document(path, str(path))
    assert isinstance(document, Document)
    data: dict[str, Any] = document.data
    return data


# ---------------------------------------------------------------- structure and links


def test_one_page_per_record_model_and_hardware_class(site: Path) -> None:
    records = discover(REPO, "record")
    models = discover(REPO, "model")
    assert len(list((site / "records").glob("*.html"))) == len(records)
    assert len(list((site / "models").glob("*.html"))) == len(models)
    for model in models:
        assert (site / "models" / f"{model.expected_id}.html").is_file()
    for row in rows(REPO):
        assert (site / "records" / f"{slug(row['id'])}.html").is_file()
    classes = {entry.placement.class_id for entry in gather(REPO).records} - {None}
    assert {p.stem for p in (site / "hardware").glob("*.html")} == classes


def test_index_has_one_row_per_record(site: Path) -> None:
    page = parse(site / "index.html")
    assert len(page.body_rows) == len(discover(REPO, "record"))
    text = (site / "index.html").read_text(encoding="utf-8")
    assert f'<span id="visible-count">{len(page.body_rows)}</span>' in text
    for unit in ("tokens", "ms", "tokens/s", "cold / warm", "bytes, per token beside (dtype)"):
        assert f'<span class="unit">{unit}</span>' in text


def test_index_counts_the_models_that_have_records(site: Path) -> None:
    with_records = len({row["model"] for row in rows(REPO)})
    text = parse(site / "index.html").text
    assert f"of {with_records} models (the dataset holds the geometry of" in text
    assert with_records < len(discover(REPO, "model"))


def test_every_local_link_exists_and_nothing_remote_is_loaded(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 3
    for page in pages:
        parsed = parse(page)
        for tag, attribute, url in parsed.refs:
            if re.match(r"[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):
                assert tag == "a" and attribute == "href", (page, tag, url)
                assert re.match(r"https?://", url), (page, url)
                continue
            if url.startswith("#"):
                assert url[1:] in parsed.ids, f"{page.relative_to(site)} links to missing {url}"
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


# ---------------------------------------------------------------- the index table


def _column(site: Path, header: str) -> int:
    text = (site / "index.html").read_text(encoding="utf-8")
    thead = text[text.index("<thead>") : text.index("</thead>")]
    labels = re.findall(r'<span class="label">([^<]*)</span>', thead)
    return labels.index(header)


def test_speedup_column_sorts_by_the_ratio(site: Path) -> None:
    index = _column(site, "speedup")
    page = parse(site / "index.html")
    by_record = {row[0][1]: row[index] for row in page.body_rows}
    assert by_record[SEED] == ("23.0", "23x")
    stated = {slug(r["id"]) for r in rows(REPO) if r["speedup"]}
    assert {name for name, cell in by_record.items() if cell[0]} == stated


def test_a_stated_speedup_ranks_by_its_low_end_else_cold_over_warm() -> None:
    for stated, value in (("23x", 23.0), ("~23x", 23.0), ("2.35-3.47x", 2.35), ("<=4x", 4.0)):
        assert speedup_of({"speedup": stated}) == Speedup(value, stated, True)
    # 53,200 / 2,300 = 23.13...: worked out here, so not 'stated'
    assert speedup_of({"cold_ttft_ms": 53200, "warm_ttft_ms": 2300}) == Speedup(
        53200 / 2300, "23.1x", False
    )
    assert speedup_of({"cold_ttft_ms": 53200, "warm_ttft_ms": None}) is None


def test_kv_column_is_the_cost_at_context_with_the_per_token_figure_beside(site: Path) -> None:
    index = _column(site, "KV at context")
    page = parse(site / "index.html")
    by_record = {row[0][1]: row[index] for row in page.body_rows}
    for row in rows(REPO):
        sort, text = by_record[slug(row["id"])]
        at_context, per_token = row["kv_bytes_at_context"], row["bytes_per_token"]
        assert sort == ("" if at_context is None else repr(float(at_context)))
        if at_context is not None:
            assert text.startswith(format_bytes(at_context)), text
        if per_token is not None:
            assert f"{format_bytes(per_token)}/token" in text
        assert text.endswith(row["kv_dtype"])
    # gpt-oss-20b's sliding windows fill: 3 GiB at 131,072 tokens, not 48 KiB x 131,072
    sort, text = by_record["gguf-parser-gpt-oss-20b-swa-kv-estimate"]
    assert text == "3 GiB 48 KiB/token fp16"


# ---------------------------------------------------------------- record pages


def test_record_page_has_source_and_marked_recomputation(site: Path) -> None:
    page = (site / "records" / f"{SEED}.html").read_text(encoding="utf-8")
    assert '<pre class="explain">' in page
    assert "bytes per token" in page
    assert '<span class="assumed">' in page
    assert "Senn Tech" in page
    linked = (site / "records" / "deepseek-v2-mla-8xh800.html").read_text(encoding="utf-8")
    assert '<a href="https://arxiv.org/abs/2405.04434"' in linked


def test_record_pages_carry_the_validators_recomputation_verbatim(site: Path) -> None:
    for row in rows(REPO)[:6]:
        page = parse(site / "records" / f"{slug(row['id'])}.html")
        assert words(explain_record(REPO, REPO / row["path"])) in page.text


def test_record_pages_show_what_a_reader_needs(site: Path) -> None:
    """Notes, workload, confidence and its reason, not_stated reasons, observations (format 1),
    runs with their metrics and comparisons (format 2)."""
    for row in rows(REPO):
        data = record_data(row["id"])
        text = parse(site / "records" / f"{slug(row['id'])}.html").text
        assert words(data["notes"]) in text
        assert words(data["methodology"]["workload"]) in text
        assert f"Confidence {data['confidence']}" in text
        if "confidence_reason" in data:
            assert words(data["confidence_reason"]) in text
        for entry in data.get("not_stated", []):
            assert f"{entry['field']} {words(entry['reason'])}" in text
        for observation in data.get("results", {}).get("observations", []):
            assert words(observation["label"]) in text
            assert words(observation["stated_as"]) in text
            for name in observation["figures"]:
                assert name in text
        for run in data.get("runs", []):
            assert f"{run['id']} {words(run['label'])} {ROLE_WORDS[run['role']]}" in text
            for metric in run["metrics"]:
                assert metric["name"] in text
                assert words(metric.get("stated_as", "")) in text
        for comparison in data.get("comparisons", []):
            assert f"{comparison['kind']} of {comparison['metric']}" in text
            assert words(comparison.get("stated_as", "")) in text


def test_seed_record_page_shows_each_run_with_its_metrics(site: Path) -> None:
    text = parse(site / "records" / f"{SEED}.html").text
    # the replay: cold and warm, with the hit rate and what it counts
    assert "ttft_ms single 53,200 ms 53.2 s cold" in text
    assert "hit_rate counts tokens, over the run single 0.935 fraction" in text
    # 0.935 x 150,000 = 140,250 tokens; x 65,536 B = 9,191,424,000 B = 8.56 GiB
    assert "tokens not recomputed 140,250 140,250 0.935 x 150,000" in text
    assert "bytes not recomputed 8.56 GiB 8.56 GiB (9,191,424,000 B)" in text
    # the four days on the second host
    assert "four-days-mixed second host, 4x RTX 5090, four days of mixed traffic" in text
    assert "hardware 4 x rtx-5090, 128 GB VRAM" in text
    assert "duration 4 days" in text
    assert "hit_rate what it counts is not stated, over the run single 0.43–0.45" in text
    assert "hit_rate what it counts is not stated, over the run single 0.7–0.9" in text
    assert "prompt_tokens total ~78,000,000 tokens" in text
    # a run's null says why
    assert (
        "context (tokens) not stated : The post gives no prompt lengths for the four days" in text
    )
    # the card, from the headline run, with the reason for its null
    assert (
        "decode at context (tokens/s) not stated The post does not publish decode tokens/s." in text
    )


def _table_rows(page: str, css_class: str) -> list[str]:
    """The text of each row of the page's table with class ``css_class``, cells joined by '|'."""
    table = page[page.index(f'<table class="{css_class}">') :]
    table = table[: table.index("</table>")]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.DOTALL)
        rows.append("|".join(" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells))
    return rows


def test_runs_at_a_glance_put_every_run_against_every_metric(site: Path) -> None:
    page = (site / "records" / f"{SEED}.html").read_text(encoding="utf-8")
    head, *body = _table_rows(page, "run-grid")
    assert head == (
        "run|role|context tokens|ttft_ms single, ms|hit_rate single, fraction"
        "|prompt_tokens total, tokens|generated_tokens total, tokens"
    )
    assert body == [
        "cold|baseline|150,000|53,200|||",
        "warm headline|treatment|150,000|2,300|0.935||",
        "four-days-mixed|treatment|||0.43–0.45|~78,000,000|~5,900,000",
        "four-days-reused-documents|treatment|||0.7–0.9||",
    ]


def test_comparisons_show_the_stated_figure_beside_the_recomputation(site: Path) -> None:
    text = parse(site / "records" / f"{SEED}.html").text
    # 53,200 / 2,300 = 23.130434...: four decimals, as explain prints it
    assert "speedup of ttft_ms (single) cold" in text
    assert "23x 23.1304x 53,200 / 2,300 53.2 s cold to 2.3 s warm is 23x" in text
    hardware = parse(site / "hardware" / "rtx-5090.html").text
    assert "ttft_ms (single) speedup 23x, cold to warm" in hardware


def test_a_null_setup_or_source_field_says_why_where_it_stands(site: Path) -> None:
    text = parse(site / "records" / f"{SEED}.html").text
    for shown in (
        "engine version not stated : The post does not name the vLLM version or build.",
        "concurrency not stated : The post does not state the concurrency of the replay.",
        "link not stated : The figures were recorded without the post's URL.",
        "locator not stated : The post is short; the figures are not tied to a section or table.",
    ):
        assert shown in text
    # a stated locator is shown as written
    source = record_data("kv-efficiency/deepseek-v2-mla-8xh800")["methodology"]["source"]
    text = parse(site / "records" / "deepseek-v2-mla-8xh800.html").text
    assert f"locator {words(source['locator'])} citation" in text


# ---------------------------------------------------------------- the reader's view by hardware


@pytest.fixture(scope="module")
def hardware() -> dict[str, Hardware]:
    """Every hardware file of the repository."""
    catalog = HardwareCatalog(REPO)
    found = {}
    for hardware_id in catalog.ids():
        state = catalog.get(hardware_id)
        if state is not None and state.hardware is not None:
            found[hardware_id] = state.hardware
    return found


def test_families_are_the_ids_sharing_a_chip_name(hardware: dict[str, Hardware]) -> None:
    families = hardware_families(hardware)
    assert {m.id for m in families["h100"].members} == {"h100-sxm", "h100-pcie"}
    assert {m.id for m in families["a100"].members} == {
        "a100-40gb-sxm",
        "a100-80gb-pcie",
        "a100-80gb-sxm",
    }
    assert families["h100"].name == "NVIDIA H100"  # the words the members' names share
    assert "rtx" not in families and "apple" not in families  # a vendor or line, not a chip


@pytest.mark.parametrize(
    ("stated", "text", "class_id"),
    [
        ({"accelerator": "h100-sxm", "count": 1}, "1 x h100-sxm", "h100"),
        ({"accelerator": "rtx-5090", "count": 2}, "2 x rtx-5090", "rtx-5090"),
        (
            {"accelerator": None, "count": 4, "host": "4x H100 (form factor not stated)"},
            "4 x h100, form factor not stated",
            "h100",
        ),
        (
            {"accelerator": None, "count": 8, "memory_stated": "8 x nvidia-h100-mega-80gb"},
            "8 x h100, form factor not stated",
            "h100",
        ),
        (
            {"accelerator": None, "count": 1, "host": "a single A100/H100"},
            "1 x accelerator not stated",
            None,
        ),
        ({"accelerator": None, "count": None, "host": "8x RTX 5090"}, "not stated", None),
    ],
)
def test_placement(
    hardware: dict[str, Hardware], stated: dict[str, Any], text: str, class_id: str | None
) -> None:
    found = placement(stated, hardware, hardware_families(hardware))
    assert (found.text, found.class_id) == (text, class_id)


def test_accelerator_page_groups_a_family_and_links_its_records(site: Path) -> None:
    page = parse(site / "hardware" / "h100.html")
    linked = {url for tag, _, url in page.refs if tag == "a" and url.startswith("../records/")}
    expected = {
        "vllm-cpu-offload-llama31-8b-h100",  # h100-sxm
        "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100",  # 'NVIDIA H100', form factor unstated
        "lmcache-tiered-llama33-70b-8xh100-1k-100k",  # 'nvidia-h100-mega-80gb'
        "vllm-fp8kv-gpt-oss-20b-h100-20k-c8",
        "vllm-turboquant-fp8-llama33-70b-4xh100-1k",
    }
    assert linked == {f"../records/{name}.html" for name in expected}
    assert "NVIDIA H100" in page.text
    assert "16 x h100, form factor not stated" in page.text
    # 'a single A100/H100' names two families: the record stays unplaced
    assert "lmcache-cpu-offload-gpt-oss-120b-20k" not in page.text
    index = parse(site / "index.html")
    assert ("a", "href", "hardware/h100.html") in index.refs
    record = parse(site / "records" / "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100.html")
    assert ("a", "href", "../hardware/h100.html") in record.refs


def test_accelerator_page_ranks_what_each_technique_bought(site: Path) -> None:
    text = (site / "hardware" / "gb10-dgx-spark.html").read_text(encoding="utf-8")
    section = text[text.index('<h3 id="prefix_caching">') :]
    section = section[: section.index("</table>")]
    order = re.findall(r'href="\.\./records/([^"]+)\.html"', section)
    # 7.5x before 2.3x; a record with no speedup after both
    assert order[:2] == [
        "vllm-prefix-reuse-qwen38-flash-next-2xgb10-131k",
        "vllm-apc-qwen38-flash-next-nvfp4-gb10",
    ]
    assert 'id="chart-ttft"' in text


# ---------------------------------------------------------------- charts


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


def test_scales() -> None:
    axis = LogAxis(1024, 131072, 0, 700)
    assert axis.at(1024) == 0 and axis.at(131072) == 700
    assert axis.at(8192) == pytest.approx(300)
    assert axis.ticks(2) == [2.0**p for p in range(10, 18)]
    assert log_bounds([3, 900], 10) == (1.0, 1000.0)
    assert log_bounds([100], 10) == (10.0, 1000.0)  # a value on a power gets room
    linear = LinearAxis(0, 115, 300, 0)
    assert linear.at(0) == 300 and linear.at(115) == 0
    assert linear.ticks() == [0, 25, 50, 75, 100]


# ---------------------------------------------------------------- escaping


def _hostile_dataset(root: Path) -> None:
    """Records, a model and a hardware file with markup in every kind of text a page shows."""
    record = root / "records" / "kv-efficiency" / "deepseek-v2-mla-8xh800.yaml"
    text = record.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^title: >-\n(  .*\n)+", f"title: '{HOSTILE} & \"quotes\"'\n", text, count=1)
    text = re.sub(r"(?m)^notes: >-\n(  .*\n)+", f"notes: '{HOSTILE} in the notes'\n", text, count=1)
    text = (
        text.replace("url: https://arxiv.org/abs/2405.04434", "url: 'javascript:alert(1)'")
        .replace("publisher: DeepSeek-AI", f"publisher: '{HOSTILE}'")
        .replace("name: deepseek-internal", f"name: '{HOSTILE}'")
    )
    record.write_text(text, encoding="utf-8")
    seed = root / "records" / "kv-efficiency" / f"{SEED}.yaml"
    seed.write_text(
        seed.read_text(encoding="utf-8")
        .replace("label: the same prompt again, prefix cached", f"label: '{HOSTILE} run'")
        .replace("stated_as: 53.2 s cold\n", f"stated_as: '{HOSTILE} metric'\n")
        .replace(
            "stated_as: 53.2 s cold to 2.3 s warm is 23x on that one prompt",
            f"stated_as: '{HOSTILE} comparison'",
        ),
        encoding="utf-8",
    )
    model = root / "models" / "deepseek-v2.yaml"
    model.write_text(
        re.sub(r"(?m)^name: .*$", f"name: '{HOSTILE}'", model.read_text(encoding="utf-8")),
        encoding="utf-8",
    )
    hardware = root / "hardware" / "h800.yaml"
    hardware.write_text(
        re.sub(r"(?m)^name: .*$", f"name: '{HOSTILE}'", hardware.read_text(encoding="utf-8")),
        encoding="utf-8",
    )


def test_markup_in_the_dataset_is_escaped_on_every_page_that_shows_it(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "data")
    _hostile_dataset(root)
    written = build_site(root, tmp_path / "site")
    for page in written:
        if page.suffix == ".html":
            content = page.read_text(encoding="utf-8")
            assert HOSTILE not in content, page
            assert 'href="javascript:' not in content.lower(), page
    site = tmp_path / "site"
    record = (site / "records" / "deepseek-v2-mla-8xh800.html").read_text(encoding="utf-8")
    assert f"{ESCAPED} &amp; &#34;quotes&#34;" in record  # the title
    assert f"{ESCAPED} in the notes" in record
    assert "<script" not in record
    shown_on = {
        "index.html": 2,  # the engine in the table and in the engine filter
        "records/deepseek-v2-mla-8xh800.html": 6,  # title (twice), notes, publisher, engine, model
        f"records/{SEED}.html": 4,  # a run's label (twice), a metric's and a comparison's words
        "models/deepseek-v2.html": 3,  # the model's name (twice) and the record's title
        "hardware/h800.html": 3,  # the hardware's name (twice), the engine
    }
    for name, at_least in shown_on.items():
        content = (site / name).read_text(encoding="utf-8")
        assert content.count(ESCAPED) >= at_least, name


def test_markup_in_a_chart_label_is_escaped() -> None:
    """Dataset ids are file-safe, but a chart escapes whatever it is given."""
    hostile_href = 'x.html" onclick="alert(1)'
    charts = [
        bytes_per_token_chart([ModelBar(HOSTILE, hostile_href, 65536.0, "full")]),
        ttft_chart([TtftPair(HOSTILE, hostile_href, 900.0, 90.0, HOSTILE, "90")]),
        decode_chart([DecodePoint(HOSTILE, hostile_href, 4096.0, 50.0)]),
    ]
    for chart in charts:
        assert HOSTILE not in chart.svg and 'onclick="' not in chart.svg, chart.ident
        assert ESCAPED in chart.svg and "&#34; onclick=&#34;" in chart.svg, chart.ident


# ---------------------------------------------------------------- reading the dataset once


def test_the_build_reads_each_record_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: Counter[Path] = Counter()
    real_open = io.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, Path)):
            opened[Path(file).resolve()] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    build_site(REPO, tmp_path / "site")
    monkeypatch.undo()
    records = [f.path.resolve() for f in discover(REPO, "record")]
    assert {path: opened[path] for path in records} == dict.fromkeys(records, 1)
    for folder in ("models", "hardware"):
        files = [p.resolve() for p in (REPO / folder).glob("*.yaml")]
        assert max(opened[p] for p in files) == 1, folder


def test_the_rows_are_exports_rows() -> None:
    assert [entry.row for entry in gather(REPO).records] == rows(REPO)


def test_validating_does_not_load_jinja() -> None:
    code = (
        "import sys; from kvrecords.cli.main import main; import kvrecords.cli.commands; "
        "main(['validate']); print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jinja2', 'markupsafe') or m.startswith('kvrecords.tools.site')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_units() -> None:
    assert format_bytes(65536) == "64 KiB"
    assert format_bytes(1_597_440) == "1.52 MiB"
    assert format_bytes(512) == "512 B"
    assert format_tokens(131072) == "128K"
    assert format_tokens(1048576) == "1M"
    assert slug("kv-efficiency/a-b") == "a-b"


def test_a_measured_figure_keeps_its_written_digits() -> None:
    assert measured(323.28) == "323.28"
    assert measured(52184460) == "52,184,460"
    assert measured(8.94e-06) == "8.94e-06"
    assert measured({"about": 78000000}) == "~78,000,000"
    assert measured({"min": 0.43, "max": 0.45}) == "0.43–0.45"
    assert measured({"max": 9}) == "up to 9"
    assert measured({"median": 4096}) == "median 4,096"
    assert measured("8.56 GiB") == "8.56 GiB"
    assert measured(None) == ""
