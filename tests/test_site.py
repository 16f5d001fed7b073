"""The static site, without a browser: pages, links, escaping, what each page shows, one read."""

from __future__ import annotations

import builtins
import html
import io
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, copy_dataset
from kvrecords.checks.hardware import hardware_catalog
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.kv.hardware import Hardware
from kvrecords.tools.explain import explain_record
from kvrecords.tools.export import rows
from kvrecords.tools.site import build_site, format_bytes, format_tokens, slug
from kvrecords.tools.site.charts import (
    ChangeMark,
    ChangeRow,
    Dot,
    LogAxis,
    ModelBar,
    bytes_per_token_chart,
    change_chart,
    context_chart,
    log_bounds,
    nice_log_bounds,
    series_styles,
)
from kvrecords.tools.site.data import gather
from kvrecords.tools.site.figures import gain, technique_series
from kvrecords.tools.site.formatting import Position, measured, position, sort_key
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
def root(fixture_root: Path) -> Path:
    """The test dataset the site is built from."""
    return fixture_root


@pytest.fixture(scope="module")
def site(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    written = build_site(root, out)
    assert all(path.is_file() for path in written)
    return out


def record_data(root: Path, record_id: str) -> dict[str, Any]:
    path = root / "records" / f"{record_id}.yaml"
    document = read_document(path, str(path))
    assert isinstance(document, Document)
    data: dict[str, Any] = document.data
    return data


# ---------------------------------------------------------------- structure and links


def test_one_page_per_record_model_and_hardware_class(root: Path, site: Path) -> None:
    records = discover(root, "record")
    models = discover(root, "model")
    assert len(list((site / "records").glob("*.html"))) == len(records)
    assert len(list((site / "models").glob("*.html"))) == len(models)
    for model in models:
        assert (site / "models" / f"{model.expected_id}.html").is_file()
    for row in rows(root):
        assert (site / "records" / f"{slug(row['id'])}.html").is_file()
    classes = {class_id for entry in gather(root).records for class_id in entry.class_ids}
    assert {p.stem for p in (site / "hardware").glob("*.html")} == classes
    # a run on other hardware than its record's gets its class a page: the B200 sweep of a
    # record on an H100
    assert "b200" in classes


def test_index_has_one_row_per_record(root: Path, site: Path) -> None:
    page = parse(site / "index.html")
    assert len(page.body_rows) == len(discover(root, "record"))
    text = (site / "index.html").read_text(encoding="utf-8")
    assert f'<span id="visible-count">{len(page.body_rows)}</span>' in text
    for unit in (
        "tokens",
        "ms, headline run",
        "tokens/s of one sequence, headline run",
        "tokens/s, all users together, headline run",
        "baseline to treatment",
        "bytes, per token beside (dtype)",
    ):
        assert f'<span class="unit">{unit}</span>' in text


def test_index_counts_the_models_that_have_records(root: Path, site: Path) -> None:
    with_records = len({row["model"] for row in rows(root)})
    text = parse(site / "index.html").text
    assert f"of {with_records} models (the dataset holds the geometry of" in text
    assert with_records < len(discover(root, "model"))


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


def _cells(site: Path, header: str) -> dict[str, tuple[str, str]]:
    """Each record's cell in the index column ``header``: (data-sort, text)."""
    index = _column(site, header)
    return {row[0][1]: row[index] for row in parse(site / "index.html").body_rows}


def test_change_column_shows_what_the_treatment_bought_sorted_by_times_better(
    site: Path,
) -> None:
    cells = _cells(site, "change")
    # cold -> warm: 23x faster TTFT
    assert cells[SEED] == ("23.0", "23x ttft_ms (single): 23x better")
    # -67% mean TTFT is 1 / (1 - 0.67) = 100 / 33 = 3.0303... times better
    assert cells["lmcache-cpu-offload-gpt-oss-120b-20k"] == (
        repr(100 / 33),
        "-67% ttft_ms (mean): 3.03x better",
    )
    # the comparison ending at the headline run (fp8-16k), the record's first such: -3.4%
    # prefill rate is 0.966 times the baseline's
    assert cells["vllm-fp8kv-qwen3-8b-a100-1k-16k"] == (
        repr(0.966),
        "-3.4% prefill_tokens_per_s (median): 0.966x: worse than the baseline",
    )
    # 2-22x sorts at its middle on a log scale: sqrt(2 x 22) = sqrt(44) = 6.633...
    assert cells["vllm-cpu-offload-llama31-8b-h100"][0] == repr(44**0.5)
    # a record with no baseline-to-treatment comparison is blank
    assert cells["vllm-qwen36-35b-a3b-int4-fp8kv-2x5090-87k"] == ("", "")


@pytest.mark.parametrize(
    ("kind", "metric", "stated", "expected"),
    [
        ("speedup", "ttft_ms", "23x", Position(23, 23, 23)),
        ("speedup", "output_tokens_per_s", ">=2x", Position(2, 2, 2, "min")),
        # a time: -67% is 1 / 0.33; a rate: +16% is 1.16
        ("change", "ttft_ms", "-67%", Position(100 / 33, 100 / 33, 100 / 33)),
        ("change", "input_tokens_per_s", "+16%", Position(1.16, 1.16, 1.16)),
        # a rate halving is half as good; a time's slope at 80% is 1 / 0.8 = 1.25 times better
        ("ratio", "decode_tokens_per_s", "~50%", Position(0.5, 0.5, 0.5)),
        ("ratio", "itl_slope_ms_per_token", "80%", Position(1.25, 1.25, 1.25)),
        # 'at least -80%' of a time is at most 1 / 0.2 = 5 times better
        ("change", "ttft_ms", ">=-80%", Position(5, 5, 5, "max")),
        ("change", "total_tokens_per_s", "<=+32%", Position(1.32, 1.32, 1.32, "max")),
        # a range: 2 to 22, at sqrt(44); +10% to +68% latency is 1 / 1.68 to 1 / 1.1
        ("speedup", "ttft_ms", "2-22x", Position(44**0.5, 2, 22)),
        (
            "change",
            "e2e_latency_ms",
            "~+10-68%",
            Position((1 / 1.68 / 1.1) ** 0.5, 1 / 1.68, 1 / 1.1),
        ),
    ],
)
def test_a_stated_comparison_as_times_better(
    kind: str, metric: str, stated: str, expected: Position
) -> None:
    found = gain(kind, metric, stated)
    assert found is not None
    assert found.bound == expected.bound
    assert found[:3] == pytest.approx(expected[:3])


def test_a_fall_of_all_of_a_rate_is_no_gain() -> None:
    assert gain("change", "ttft_ms", "-100%") is None


def test_a_difference_is_not_read_as_a_gain() -> None:
    """+20 points of hit rate is not 'so many times better': no place on the change chart."""
    assert gain("difference", "hit_rate", "+20pp") is None
    assert gain("difference", "ttft_ms", "-120 ms") is None


def test_positions_of_contexts_and_figures() -> None:
    assert position(150000) == Position(150000, 150000, 150000)
    assert position({"about": 20000}) == Position(20000, 20000, 20000)
    assert position({"median": 14400}) == Position(14400, 14400, 14400)
    # 9,300 x 9,700 = 90,210,000; its square root is 9,497.89...
    middle = position({"min": 9300, "max": 9700})
    assert middle is not None and middle.at == pytest.approx(9497.89, abs=0.01)
    assert (middle.low, middle.high) == (9300, 9700)
    assert position({"max": 3500}) == Position(3500, 3500, 3500, "max")
    assert position({"min": 0, "max": 4}) == Position(2, 0, 4)  # no log middle of 0
    assert position("8.56 GiB") is None and position(None) is None
    # a median context sorts; before, it sorted last as if absent
    assert sort_key({"median": 14400}) == "14400.0"
    assert sort_key(None) == ""


def test_series_are_what_a_run_switches_on() -> None:
    assert technique_series(["prefix_caching", "hybrid_linear_attention"]) == "prefix_caching"
    assert technique_series(["sparse_attention", "sliding_window"]) == (
        "sliding_window + sparse_attention"
    )
    assert technique_series(["baseline"]) == "baseline"
    assert technique_series(["kv_offload", "prefix_caching", "mla"]) == (
        "kv_offload + prefix_caching"
    )


def test_kv_column_is_the_cost_at_context_with_the_per_token_figure_beside(
    root: Path, site: Path
) -> None:
    by_record = _cells(site, "KV at context")
    for row in rows(root):
        sort, text = by_record[slug(row["id"])]
        at_context, per_token = row["kv_bytes_at_context"], row["bytes_per_token"]
        if at_context is not None:  # the basis states the context
            assert sort == repr(float(at_context))
            assert text.startswith(format_bytes(at_context)), text
        if per_token is not None:
            assert f"{format_bytes(per_token)}/token" in text
        assert text.endswith(row["kv_dtype"])
    # gpt-oss-20b's sliding windows fill: 12 full layers x 2,048 B x 131,072 plus 12 window
    # layers x 2,048 B x 128 = 3,221,225,472 + 3,145,728 B, 3 GiB, not 48 KiB x 131,072
    assert by_record["gguf-parser-gpt-oss-20b-swa-kv-estimate"] == (
        repr(3_224_371_200.0),
        "3 GiB 48 KiB/token fp16",
    )
    # no basis context: the headline run's ~16,000 tokens, fp8: 73,728 x 16,000 B
    assert by_record["vllm-fp8kv-qwen3-8b-a100-1k-16k"] == (
        repr(1_179_648_000.0),
        f"~{format_bytes(1_179_648_000)} 72 KiB/token fp8",
    )
    # ~20,000 tokens of gpt-oss-20b in bf16: 12 full layers x 2,048 B x 20,000 plus 12 window
    # layers x 2,048 B x 128 = 491,520,000 + 3,145,728 = 494,665,728 B
    sort, text = by_record["vllm-fp8kv-gpt-oss-20b-h100-20k-c8"]
    assert sort == repr(494_665_728.0)
    assert text.startswith(f"~{format_bytes(494_665_728)} ")


def test_the_context_column_is_the_basis_else_the_headline_run(site: Path) -> None:
    cells = _cells(site, "context")
    assert cells[SEED] == ("150000.0", "150,000")
    assert cells["vllm-fp8kv-qwen3-8b-a100-1k-16k"] == ("16000.0", "~16,000")
    assert cells["vllm-cpu-offload-llama31-8b-h100"] == ("100000.0", "up to 100,000")


def test_ttft_and_the_rates_carry_the_headline_runs_statistic(site: Path) -> None:
    ttft = _cells(site, "TTFT at context")
    decode, output = _cells(site, "decode per user"), _cells(site, "output throughput")
    assert ttft[SEED] == ("2300.0", "2,300 ttft_ms (single)")
    llmd = "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100"
    assert ttft[llmd] == ("542.0", "542 ttft_ms (p90)")
    # a cluster's aggregate output is not a decode rate per user
    assert output[llmd] == ("8730.0", "8,730.0 output_tokens_per_s (single)")
    assert decode[llmd] == ("", "aggregate only: see output throughput")
    qwen = "vllm-fp8kv-qwen3-8b-a100-1k-16k"
    assert decode[qwen] == ("231.3", "231.3 decode_tokens_per_s (median)")
    assert output[qwen] == ("", "per user only: see decode per user")
    # a run that states both shows both, each in its column
    gb10 = "vllm-apc-qwen38-flash-next-nvfp4-gb10"
    assert decode[gb10] == ("5.8", "5.8 decode_tokens_per_s (p50)")
    assert output[gb10] == ("81.79", "81.79 output_tokens_per_s (single)")
    assert decode[SEED] == output[SEED] == ("", ""), "neither stated: blank"


def test_each_rate_column_holds_one_quantity_the_headline_run_states(
    root: Path, site: Path
) -> None:
    """Every record: the decode column shows only decode_tokens_per_s, the throughput column
    only output_tokens_per_s, each a value the headline run states for that metric."""
    by_slug = {slug(f.expected_id): f.expected_id for f in discover(root, "record")}
    columns = {
        "decode_tokens_per_s": _cells(site, "decode per user"),
        "output_tokens_per_s": _cells(site, "output throughput"),
    }
    for name, cells in columns.items():
        shown = 0
        for record, (key, text) in cells.items():
            data = record_data(root, by_slug[record])
            (headline,) = [r for r in data["runs"] if r["id"] == data["headline_run"]]
            stated = {
                f"{measured(m['value'])} {name} ({m['statistic']})"
                for m in headline["metrics"]
                if m["name"] == name
            }
            if not key:
                assert not stated, (record, name, stated)
                continue
            assert text in stated, (record, name, text, stated)
            shown += 1
        assert shown >= 3, name


# ---------------------------------------------------------------- record pages


def test_record_page_has_source_and_marked_recomputation(site: Path) -> None:
    page = (site / "records" / f"{SEED}.html").read_text(encoding="utf-8")
    assert '<pre class="explain">' in page
    assert "bytes per token" in page
    assert '<span class="assumed">' in page
    assert "Senn Tech" in page
    linked = (site / "records" / "deepseek-v2-mla-8xh800.html").read_text(encoding="utf-8")
    assert '<a href="https://arxiv.org/abs/2405.04434"' in linked


def test_record_pages_carry_the_validators_recomputation_verbatim(root: Path, site: Path) -> None:
    for row in rows(root)[:6]:
        page = parse(site / "records" / f"{slug(row['id'])}.html")
        assert words(explain_record(root, root / row["path"])) in page.text


def test_record_pages_show_what_a_reader_needs(root: Path, site: Path) -> None:
    """Notes, workload, confidence and its reason, not_stated reasons, runs with their metrics
    and statistics, comparisons."""
    for row in rows(root):
        data = record_data(root, row["id"])
        text = parse(site / "records" / f"{slug(row['id'])}.html").text
        assert "is not loaded" not in text  # a run naming another model is checked with it
        assert words(data["notes"]) in text
        assert words(data["methodology"]["workload"]) in text
        assert f"Confidence {data['confidence']}" in text
        if "confidence_reason" in data:
            assert words(data["confidence_reason"]) in text
        for entry in data.get("not_stated", []):
            assert f"{entry['field']} {words(entry['reason'])}" in text
        for run in data.get("runs", []):
            assert f"{run['id']} {words(run['label'])} {ROLE_WORDS[run['role']]}" in text
            for metric in run["metrics"]:
                assert metric["name"] in text
                assert f"{metric['statistic']} {measured(metric['value'])}" in text
                assert words(metric.get("stated_as", "")) in text
        for comparison in data.get("comparisons", []):
            assert f"{comparison['kind']} of {comparison['metric']}" in text
            assert words(comparison.get("stated_as", "")) in text
        drafting = data["methodology"].get("speculative_decoding")
        if drafting is not None:
            assert f"speculative decoding {drafting['method']}" in text
        placement = data["methodology"].get("weights_placement")
        if placement is not None:
            assert f"weights placement {placement['on']}" in text


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
        "tokens/s at context (per user or aggregate: see the metric) not stated The post does"
        " not publish decode tokens/s." in text
    )


def _table_rows(page: str, css_class: str) -> list[str]:
    """The text of each row of the page's table with class ``css_class``, cells joined by '|'."""
    table = page[page.index(f'<table class="{css_class}">') :]
    table = table[: table.index("</table>")]
    rows = []
    for row in re.findall(r"<tr(?: [^>]*)?>(.*?)</tr>", table, re.DOTALL):
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
    assert "23x better 23x ttft_ms (single); recomputed 23.1304x cold" in hardware


def test_a_null_setup_or_source_field_says_why_where_it_stands(root: Path, site: Path) -> None:
    text = parse(site / "records" / f"{SEED}.html").text
    for shown in (
        "engine version not stated : The post does not name the vLLM version or build.",
        "concurrency not stated : The post does not state the concurrency of the replay.",
        "link not stated : The figures were recorded without the post's URL.",
        "locator not stated : The post is short; the figures are not tied to a section or table.",
    ):
        assert shown in text
    # a stated locator is shown as written
    source = record_data(root, "kv-efficiency/deepseek-v2-mla-8xh800")["methodology"]["source"]
    text = parse(site / "records" / "deepseek-v2-mla-8xh800.html").text
    assert f"locator {words(source['locator'])} citation" in text


# ---------------------------------------------------------------- the reader's view by hardware


@pytest.fixture(scope="module")
def hardware(root: Path) -> dict[str, Hardware]:
    """Every hardware file of the repository."""
    catalog = hardware_catalog(root)
    found = {}
    for hardware_id in catalog.ids():
        state = catalog.get(hardware_id)
        if state is not None and state.hardware is not None:
            found[hardware_id] = state.hardware
    return found


def test_families_are_those_the_hardware_files_name(hardware: dict[str, Hardware]) -> None:
    families = hardware_families(hardware)
    for family in families.values():
        assert all(family.id in member.families for member in family.members)
    named = {f for h in hardware.values() for f in h.families}
    assert set(families) == named
    assert {m.id for m in families["h100"].members} == {"h100-sxm", "h100-pcie"}
    assert {m.id for m in families["a100-80gb"].members} == {"a100-80gb-pcie", "a100-80gb-sxm"}
    assert families["h100"].name == "NVIDIA H100"  # the words the members' names share


@pytest.mark.parametrize(
    ("stated", "text", "class_id"),
    [
        ({"accelerator": "h100-sxm", "count": 1}, "1 x h100-sxm", "h100"),
        # a member of two families joins the widest: every A100 on one page
        ({"accelerator": "a100-80gb-sxm", "count": 1}, "1 x a100-80gb-sxm", "a100"),
        ({"accelerator": "rtx-5090", "count": 2}, "2 x rtx-5090", "rtx-5090"),
        (
            {"accelerator": None, "family": "h100", "count": 4, "host": "4x H100"},
            "4 x h100, form factor not stated",
            "h100",
        ),
        (
            {"accelerator": None, "family": "a100-80gb", "count": 1},
            "1 x a100-80gb, form factor not stated",
            "a100",
        ),
        # words in the host or memory text place nothing: the record states its family
        (
            {"accelerator": None, "count": 4, "host": "4x H100 (form factor not stated)"},
            "4 x accelerator not stated",
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
    linked = {
        url.split("#")[0]
        for tag, _, url in page.refs
        if tag == "a" and url.startswith("../records/")
    }
    expected = {
        "vllm-cpu-offload-llama31-8b-h100",  # h100-sxm
        "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100",  # family: h100
        "lmcache-tiered-llama33-70b-8xh100-1k-100k",
        "vllm-fp8kv-gpt-oss-20b-h100-20k-c8",
        "vllm-turboquant-fp8-llama33-70b-4xh100-1k",
    }
    assert {f"../records/{name}.html" for name in expected} <= linked
    assert "NVIDIA H100" in page.text
    assert "16 x h100, form factor not stated" in page.text
    # 'a single A100/H100' states neither an accelerator nor a family: the record is unplaced
    assert "lmcache-cpu-offload-gpt-oss-120b-20k" not in page.text
    index = parse(site / "index.html")
    assert ("a", "href", "hardware/h100.html") in index.refs
    record = parse(site / "records" / "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100.html")
    assert ("a", "href", "../hardware/h100.html") in record.refs


def _ranked(page: str, technique: str) -> list[str]:
    """The 'better' cell of each row of an accelerator page's table for ``technique``; the
    table is ranked by the figure each cell sorts by, largest first."""
    section = page[page.index(f'<h3 id="technique-{technique}">') :]
    table = section[: section.index("</table>")]
    keys = [float(k) for k in re.findall(r'<tr[^>]*><td class="num" data-sort="([^"]+)">', table)]
    assert keys == sorted(keys, reverse=True)
    return [row.split("|")[0] for row in _table_rows(section, "by-technique")[1:]]


def in_order(found: Sequence[str], expected: Sequence[str]) -> bool:
    """Whether every item of ``expected`` is in ``found`` in that order, others between them
    (records added later take their place among them)."""
    rest = iter(found)
    return all(any(item == other for other in rest) for item in expected)


def test_accelerator_page_ranks_what_each_technique_bought(site: Path) -> None:
    h100 = (site / "hardware" / "h100.html").read_text(encoding="utf-8")
    # up to 9x total tokens/s; 2-22x TTFT at its log middle sqrt(44) = 6.6; -79% TTFT is
    # 1 / 0.21 = 4.76 times better
    assert in_order(
        _ranked(h100, "kv_offload"),
        [
            "up to 9x better",
            "2x–22x better",
            "4.76x better",
            # +121% TTFT with tiering at 10K is 1 / 2.21 = 0.452 times: said so
            "0.452x: worse than the baseline",
        ],
    )
    gb10 = (site / "hardware" / "gb10-dgx-spark.html").read_text(encoding="utf-8")
    section = gb10[gb10.index('<h3 id="technique-prefix_caching">') :]
    section = section[: section.index("</table>")]
    order = re.findall(r'<a href="\.\./records/([^"#]+)\.html">', section)
    # ~7.5x TTFT before 1.76x output tokens/s
    assert in_order(
        order,
        [
            "vllm-prefix-reuse-qwen38-flash-next-2xgb10-131k",
            "vllm-apc-qwen38-flash-next-nvfp4-gb10",
        ],
    )
    # the chunk-size pairs switch nothing on: ranked apart
    assert in_order(
        _ranked(gb10, "same-techniques-another-setting"),
        [
            "1.04x better",  # -3.6% latency: 1 / 0.964
            "1.03x better",  # -2.9% latency: 1 / 0.971
        ],
    )
    for ident in ("chart-changes", "chart-ttft", "chart-decode"):
        assert f'id="{ident}"' in gb10


def _ranked_records(page: str, technique: str) -> list[tuple[str, str]]:
    """(record, 'better' cell) of each row under ``technique`` on an accelerator page."""
    start = page.find(f'<h3 id="technique-{technique}">')
    if start < 0:
        return []
    section = page[start:]
    section = section[: section.index("</table>")]
    rows = section.split("<tr data-model=")[1:]
    return [
        (
            re.findall(r'<a href="\.\./records/([^"#]+)\.html">', row)[-1],
            re.findall(r'<td class="num" data-sort="[^"]*">([^<]*)</td>', row)[0],
        )
        for row in rows
    ]


def test_a_version_upgrade_in_which_both_arms_offload_is_not_credited_to_offload(
    site: Path,
) -> None:
    """vLLM 0.11.0's offloading connector against 0.12.0's: both arms offload, and the
    baseline run does not state its techniques, so 'up to 4x' and 'up to 5x' stand under
    their own heading, credited to no technique."""
    h100 = (site / "hardware" / "h100.html").read_text(encoding="utf-8")
    offload = _ranked_records(h100, "kv_offload")
    assert ("vllm-cpu-offload-llama31-8b-h100", "up to 9x better") in offload
    assert ("vllm-cpu-offload-llama31-8b-h100", "up to 5x better") not in offload
    assert ("vllm-cpu-offload-llama31-8b-h100", "up to 4x better") not in offload
    unstated = _ranked_records(h100, "baseline-techniques-not-stated")
    assert ("vllm-cpu-offload-llama31-8b-h100", "up to 5x better") in unstated
    assert ("vllm-cpu-offload-llama31-8b-h100", "up to 4x better") in unstated


def test_no_ranking_credits_a_technique_the_two_arms_do_not_differ_by(
    root: Path, site: Path
) -> None:
    """Every row under a technique, on every accelerator page: the baseline run states its
    techniques and lacks the technique, the treatment run has it, and a design of the model
    (MLA, windows, linear or sparse attention, shared layers) only between different models."""
    design = {"mla", "sliding_window", "hybrid_linear_attention", "sparse_attention", "kv_sharing"}
    by_slug = {slug(f.expected_id): f.expected_id for f in discover(root, "record")}
    checked = 0
    for path in sorted((site / "hardware").glob("*.html")):
        page = path.read_text(encoding="utf-8")
        for ident in re.findall(r'<h3 id="technique-([a-z_]+)">', page):
            section = page[page.index(f'<h3 id="technique-{ident}">') :]
            section = section[: section.index("</table>")]
            for row in section.split("<tr data-model=")[1:]:
                links = re.findall(r'records/([^"#]+)\.html#run-([^"]+)"', row)
                (record, start), (_, end) = links[0], links[1]
                data = record_data(root, by_slug[record])
                runs = {run["id"]: run for run in data["runs"]}
                baseline, treatment = runs[start], runs[end]
                assert "techniques" in baseline, (path.name, record, start)
                has = treatment.get("techniques", data["techniques"])
                assert ident in has and ident not in baseline["techniques"], (record, ident)
                if ident in design:
                    models = {run.get("model", data["model"]) for run in (baseline, treatment)}
                    assert len(models) == 2, (path.name, record, ident)
                checked += 1
    assert checked > 50


def test_a_model_s_own_design_is_credited_only_between_different_models(site: Path) -> None:
    """gpt-oss-20b's fp8 cache with its window layers kept in bf16 is a kv_quantization
    change on one model: its sliding windows are the model's on both arms."""
    h100 = (site / "hardware" / "h100.html").read_text(encoding="utf-8")
    assert '<h3 id="technique-sliding_window">' not in h100
    quantized = _ranked_records(h100, "kv_quantization")
    assert any(record == "vllm-fp8kv-gpt-oss-20b-h100-20k-c8" for record, _ in quantized)


def test_a_run_on_other_hardware_is_ranked_on_its_own_page(site: Path) -> None:
    """The record ran on H100s; its B200 runs stand on the B200 page, not the H100's."""
    b200 = parse(site / "hardware" / "b200.html")
    assert "vllm-fp8kv-gpt-oss-20b-h100-20k-c8" in b200.text
    h800 = parse(site / "hardware" / "h800.html").text
    # SGLang's Qwen3-235B runs on 8x H800, in a record whose own hardware is not stated
    assert "sglang-qwen3-235b-mooncake-hicache" in h800


# ---------------------------------------------------------------- model pages


class GroupsTable(HTMLParser):
    """The cells of a model page's layer-group table, row by row, as text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._inside = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and dict(attrs).get("class") == "groups":
            self._inside = True
        elif self._inside and tag == "tr":
            self.rows.append([])
        elif self._inside and tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._inside = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(words(" ".join(self._cell)))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _leaf_groups(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each leaf group of a model file with its path: a parallel group's mixers one by one."""
    found = []
    for index, group in enumerate(data["layer_groups"]):
        if group["kind"] == "parallel":
            for number, mixer in enumerate(group["mixers"]):
                found.append((f"layer_groups[{index}].mixers[{number}]", mixer))
        else:
            found.append((f"layer_groups[{index}]", group))
    return found


NOT_DIMENSIONS = {"kind", "layers", "where"}


def test_no_model_page_shows_an_unknown_the_model_does_not_have(root: Path, site: Path) -> None:
    """Every model page: each dimension a group shows is one its model file has, and it reads
    'unknown' exactly when the file leaves it null and lists it under unknown; a group whose
    every dimension is published shows no unknown or '?' anywhere in its row, and the page
    says 'unknown' only when the file lists something unknown."""
    model_files = list(discover(root, "model"))
    assert len(model_files) >= 40
    for model_file in model_files:
        document = read_document(model_file.path, model_file.display)
        assert isinstance(document, Document)
        data: dict[str, Any] = document.data
        listed = {entry["field"] for entry in data.get("unknown", [])}
        page_path = site / "models" / f"{model_file.expected_id}.html"
        table = GroupsTable()
        table.feed(page_path.read_text(encoding="utf-8"))
        leaves = _leaf_groups(data)
        body = [row for row in table.rows if row]  # the header row has no td
        assert len(body) == len(leaves), page_path.name
        for (path, group), row in zip(leaves, body, strict=True):
            expected = []
            for key, value in group.items():
                if key in NOT_DIMENSIONS:
                    continue
                if isinstance(value, dict):  # the indexer's own dimensions
                    expected += [(f"{key}.{k}", v) for k, v in value.items()]
                else:
                    expected.append((key, value))
            shown = (
                "none"
                if not expected
                else ", ".join(
                    f"{key} {'unknown' if value is None else value}" for key, value in expected
                )
            )
            assert row[3] == shown, (page_path.name, path, row[3])
            nulls = [f"{path}.{key}" for key, value in expected if value is None]
            assert set(nulls) <= listed, (page_path.name, nulls)
            if not nulls:
                assert not re.search(r"\bunknown\b|\?", " ".join(row)), (page_path.name, row)
        facts = parse(page_path).text.split("Layer groups")[0]
        if not listed:
            assert "unknown" not in facts, (page_path.name, facts)


def test_an_indexer_shows_its_dimensions_and_a_model_without_one_shows_none(site: Path) -> None:
    table = GroupsTable()
    table.feed((site / "models" / "deepseek-v3.2.html").read_text(encoding="utf-8"))
    assert table.rows[1][3] == (
        "kv_lora_rank 512, qk_rope_head_dim 64, indexer.head_dim 128, indexer.keys_per_token 1,"
        " indexer.dtype fp8-per-token-head"
    )
    llama = GroupsTable()
    llama.feed((site / "models" / "llama-3.1-8b.html").read_text(encoding="utf-8"))
    # 32 layers x 8 kv heads x (128 + 128) x 2 B = 131,072 B = 128 KiB per token, no state
    assert llama.rows[1:] == [
        ["1", "attention", "32", "kv_heads 8, head_dim 128", "128 KiB (131,072 B)", "0 B",
         "32 layers x 8 kv heads x (128 + 128) x 2 B = 131,072 B/token"]
    ]  # fmt: skip


def _cache_dimensions(data: dict[str, Any]) -> tuple[str, ...] | None:
    """A model file's leaf groups as written, but where their layers stand, in a fixed order;
    None when the file leaves a cache dimension unknown."""
    if any(e["field"].startswith("layer_groups") for e in data.get("unknown", [])):
        return None
    leaves = []
    for group in data["layer_groups"]:
        for _, leaf in _leaf_groups({"layer_groups": [group]}):
            found = {k: v for k, v in leaf.items() if k != "where"}
            found["layers"] = group["layers"]
            leaves.append(repr(sorted(found.items())))
    return tuple(sorted(leaves))


def test_model_pages_of_one_cache_geometry_link_each_other_s_records(
    root: Path, site: Path
) -> None:
    """Every model page names exactly the other models whose files give the same layer groups
    and cache dimensions, with their records; Llama 3.1 70B's page lists Llama 3.3 70B's."""
    shapes = {}
    for model_file in discover(root, "model"):
        document = read_document(model_file.path, model_file.display)
        assert isinstance(document, Document)
        shapes[model_file.expected_id] = _cache_dimensions(document.data)
    linked = 0
    for model_id, shape in shapes.items():
        page = (site / "models" / f"{model_id}.html").read_text(encoding="utf-8")
        expected = {
            other for other, its in shapes.items() if other != model_id and shape and its == shape
        }
        section = page.split('id="same-geometry"')[1] if expected else ""
        shown = set(re.findall(r'<li><a href="\.\./models/([^"]+)\.html">', section))
        assert shown == expected, model_id
        assert bool(section) == bool(expected), model_id
        linked += len(expected)
    assert linked >= 4
    llama = (site / "models" / "llama-3.1-70b.html").read_text(encoding="utf-8")
    section = llama.split('id="same-geometry"')[1]
    assert "../records/lmcache-tiered-llama33-70b-8xh100-1k-100k.html" in section
    assert "../records/vllm-turboquant-fp8-llama33-70b-4xh100-1k.html" in section
    back = (site / "models" / "llama-3.3-70b-instruct.html").read_text(encoding="utf-8")
    assert '<a href="../models/llama-3.1-70b.html">' in back.split('id="same-geometry"')[1]


# ---------------------------------------------------------------- charts


def test_model_page_chart_has_labelled_axes_and_legend(site: Path) -> None:
    page = (site / "models" / "gemma-3-27b.html").read_text(encoding="utf-8")
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert "context (tokens, log scale)" in svg
    assert "bytes (log scale)" in svg
    assert "sliding_window" in svg and "total" in svg
    assert "128K" in svg  # no max_context_tokens in the file: the chart runs to 128K
    assert "<polyline" in svg


def _lines(svg: str) -> dict[str, list[tuple[float, float]]]:
    """Each polyline of a chart by its title, as (x, y) points."""
    return {
        title: [tuple(map(float, point.split(","))) for point in points.split()]  # type: ignore[misc]
        for points, title in re.findall(r'points="([^"]*)"><title>([^<]*)</title>', svg)
    }


def test_model_chart_draws_fp8_beside_bf16_and_the_memory_a_deployment_needs(
    site: Path,
) -> None:
    """Llama 3.1 70B: 80 layers x 8 kv heads x (128 + 128) values a token, 2 B each in bf16 and
    1 B in fp8, so the fp8 line is half the bf16 one at every context: one factor of 2 below
    it, half the spacing of the y axis's ticks (powers of 4). The weights are 70B params x 2 B
    = 140,000,000,000 B = 130.4 GiB, drawn with the bf16 total above it."""
    page = (site / "models" / "llama-3.1-70b.html").read_text(encoding="utf-8")
    svg = page[page.index('<figure class="chart" id="chart-model">') :]
    svg = svg[: svg.index("</figure>")]
    lines = _lines(svg)
    bf16, fp8 = lines["80 attention (group 1), the total"], lines["total, fp8 KV"]
    ticks = sorted(float(y) for y in re.findall(r'<line class="grid" x1="90" y1="([0-9.]+)"', svg))
    factor_of_two = (ticks[-1] - ticks[0]) / (len(ticks) - 1) / 2
    for (x1, y1), (x2, y2) in zip(bf16, fp8, strict=True):
        assert x1 == x2 and abs((y2 - y1) - factor_of_two) < 0.2  # screen y grows downwards
    need = lines["weights (bf16, 70B params) + KV total, one sequence"]
    assert all(y < y_kv for (_, y), (_, y_kv) in zip(need, bf16, strict=True))
    assert "is the weights (130 GiB) plus the bf16 total" in svg
    # the accelerators its records ran on, each a flat line named on the chart
    memory = lines["usable memory of 3 x NVIDIA H200 (SXM; 141GB)"]
    assert len({y for _, y in memory}) == 1
    assert "3 x h200:" in svg


def test_overview_charts_on_index(site: Path) -> None:
    page = (site / "index.html").read_text(encoding="utf-8")
    for ident in ("chart-bytes-per-token", "chart-ttft", "chart-decode", "chart-changes"):
        assert f'id="{ident}"' in page
    assert "KV bytes per token (bf16, log scale)" in page
    assert "time to first token (log scale)" in page
    assert "decode (tokens/s per sequence, log scale)" in page
    assert "times better than the baseline (log scale)" in page
    for family in ("full attention", "sliding-window mix", "MLA", "hybrid linear / Mamba"):
        assert family in page


def _svg(page: str, ident: str) -> str:
    figure = page[page.index(f'<figure class="chart" id="{ident}">') :]
    return figure[: figure.index("</figure>")]


def _tips(svg: str) -> list[str]:
    """The tooltips of a chart's markers (every <title> but the chart's own)."""
    return [html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", svg)[1:]]


def _runs_giving(root: Path, metric: str) -> tuple[set[str], set[str]]:
    """From the records as written: the records with a run that gives ``metric`` as a number,
    and those of them where the run or the record states the run's context."""
    giving, placed = set(), set()
    for record_file in discover(root, "record"):
        data = record_data(root, record_file.expected_id)
        for run in data.get("runs", []):
            for item in run.get("metrics", []):
                value = item["value"]
                if item["name"] != metric or not isinstance(value, (int, float, dict)):
                    continue
                giving.add(slug(data["id"]))
                context = run.get("context_tokens", data["kv_bytes_basis"].get("context_tokens"))
                if context is not None:
                    placed.add(slug(data["id"]))
    return giving, placed


def test_ttft_chart_plots_every_run_that_gives_a_ttft(root: Path, site: Path) -> None:
    svg = _svg((site / "index.html").read_text(encoding="utf-8"), "chart-ttft")
    tips = [t for t in _tips(svg) if ", run " in t]
    plotted = {t.split(", run ")[0] for t in tips}
    at_context = {t.split(", run ")[0] for t in tips if not t.endswith("context not stated")}
    giving, placed = _runs_giving(root, "ttft_ms")
    assert (plotted, at_context) == (giving, placed)
    assert len(at_context) >= 8 and len(plotted) >= 15
    assert f"{len(tips)} runs of {len(plotted)} records ({len(at_context)} at a stated" in svg
    for tip in (
        f"{SEED}, run cold (150,000-token replay prompt, cache empty; baseline): "
        "ttft_ms (single) 53,200 ms at context 150,000 tokens",
        f"{SEED}, run warm (the same prompt again, prefix cached; prefix_caching, "
        "hybrid_linear_attention): ttft_ms (single) 2,300 ms at context 150,000 tokens",
        # 9,300 x 9,700 = 90,210,000, whose square root is 9,497.9
        "vllm-qwen36-35b-a3b-int4-fp8kv-2x5090-87k, run prefill-10k (~10K prompt, "
        "cache-busted prefill; kv_quantization, hybrid_linear_attention): ttft_ms (single) "
        "457 ms at context 9,300–9,700 tokens (plotted at 9,497.9, the middle of the range "
        "on a log scale)",
        # a p99 given only as a bound; the run's median is preferred where it has one
        "vllm-turboquant-fp8-llama33-70b-4xh100-1k, run burst-tq-k8v4 (burst serving "
        "(request rate inf), TurboQuant k8v4 (Figure 14); kv_quantization): ttft_ms (p99) "
        "up to 3,500 ms (plotted at the bound, 3,500) at context 1,024 tokens",
        "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100, run precise-scheduling",
    ):
        assert any(t.startswith(tip) for t in tips), tip
    # one point per run: the llm-d runs give a p90 and a mean TTFT; the mean is plotted
    llmd = [t for t in tips if t.startswith("llmd-precise-prefix-routing-qwen3-32b-6k-16xh100")]
    assert all("ttft_ms (mean)" in t or "ttft_ms (single)" in t for t in llmd)
    assert "not stated" in svg and "hollow: a baseline run" in svg


def test_decode_chart_plots_each_runs_rate_of_one_sequence(root: Path, site: Path) -> None:
    svg = _svg((site / "index.html").read_text(encoding="utf-8"), "chart-decode")
    tips = [t for t in _tips(svg) if ", run " in t]
    assert {t.split(", run ")[0] for t in tips} == _runs_giving(root, "decode_tokens_per_s")[0]
    assert any(
        t.startswith("vllm-fp8kv-qwen3-8b-a100-1k-16k, run auto-1k")
        and t.endswith("decode_tokens_per_s (median) 227.8 tokens/s at context ~1,000 tokens")
        for t in tips
    )
    # aggregate output throughput is another figure: not on this chart
    assert not any("output_tokens_per_s" in t for t in tips)


def test_change_chart_has_a_row_per_record_largest_change_first(site: Path) -> None:
    svg = html.unescape(_svg((site / "index.html").read_text(encoding="utf-8"), "chart-changes"))
    labels = re.findall(r'<text [^>]*class="tick" text-anchor="end">([^<]*)</text></a>', svg)
    # >=170x, 46x, 23x, ~7.5x, -41% TTFT (1 / 0.59 = 1.69x), ~50% decode rate (0.5x): the
    # row's own change (its table cell) sorts the rows
    assert in_order(
        labels,
        [
            "llmd-precise-prefix-routing-qwen3-32b-6k-16xh100",
            "vllm-mooncake-store-kimi-k25-nvfp4-gb200-codex",
            SEED,
            "vllm-prefix-reuse-qwen38-flash-next-2xgb10-131k",
            "pegaflow-mla-dedup-deepseek-v32-tp8",
            "llamacpp-vs-mlx-minimax-m21-m3ultra-30k-146k",
        ],
    )
    assert not in_order(labels, [SEED, "vllm-mooncake-store-kimi-k25-nvfp4-gb200-codex"])
    assert ">=170x ttft_ms" in svg and "23x ttft_ms" in svg
    tips = _tips(svg)
    # all of the tiered record's comparisons are on its row: TTFT, input rate and latency at
    # 4 contexts in test 2 and 5 in test 3, 3 x (4 + 5) = 27
    assert sum(t.startswith("lmcache-tiered-llama33-70b-8xh100-1k-100k:") for t in tips) == 27
    assert (
        f"{SEED}: ttft_ms (single) speedup 23x; recomputed 23.1304x, from cold (150,000-token "
        "replay prompt, cache empty) to warm (the same prompt again, prefix cached): 23x better"
    ) in tips


def test_context_chart_draws_bands_hollow_baselines_and_sweeps() -> None:
    one = Position(1000.0, 1000.0, 1000.0)
    dots = [
        Dot(Position(1024, 1024, 1024), one, "baseline", True, "a.html", "base", "s"),
        Dot(Position(4096, 4096, 4096), one, "baseline", True, "a.html", "base 2", "s"),
        Dot(None, Position(10, 10, 10), "kv_offload", False, "b.html", "unplaced", "t"),
        Dot(
            Position(4096, 2048, 8192),
            Position(50, 50, 50, "max"),
            "kv_offload",
            False,
            "b.html",
            "range",
            "",
        ),
    ]
    chart = context_chart("c", "t", dots, series_styles(["baseline", "kv_offload"]), "y", "ms", "")
    assert chart.svg.count("<polyline") == 1 + 1  # the sweep, and the bound's arrowhead
    assert 'fill="#ffffff"' in chart.svg  # hollow baselines
    assert "not stated" in chart.svg
    # with a band, the context axis starts 84 px right of the plot's left edge
    assert 'class="band" x1="168"' in chart.svg


def test_scales() -> None:
    axis = LogAxis(1024, 131072, 0, 700)
    assert axis.at(1024) == 0 and axis.at(131072) == 700
    assert axis.at(8192) == pytest.approx(300)
    assert axis.ticks(2) == [2.0**p for p in range(10, 18)]
    assert log_bounds([3, 900], 10) == (1.0, 1000.0)
    assert log_bounds([100], 10) == (10.0, 1000.0)  # a value on a power gets room
    # changes near 1x keep their spread: 0.5x to 5x, not 0.1x to 10x
    assert nice_log_bounds([0.951, 1.0, 2.0]) == (0.5, 5.0)
    assert nice_log_bounds([1.0, 170.0]) == (0.5, 200.0)
    # 1, 2 and 5 per decade over up to four decades, powers alone beyond
    assert LogAxis(10, 1000, 0, 1).nice_ticks() == [10, 20, 50, 100, 200, 500, 1000]
    assert LogAxis(1, 10**6, 0, 1).nice_ticks() == [10.0**p for p in range(7)]


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
    docs = root / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "calibration.md").write_text(
        f"# Calibration {HOSTILE}\n\n{HOSTILE} [a](javascript:alert(1)) [b](file:///etc/passwd) "
        "[c](elsewhere.md) <img src=x onerror=alert(1)>\n",
        encoding="utf-8",
    )
    (docs / "coverage-notes.yaml").write_text(
        f"fewer_than_three:\n  kv_sharing: '{HOSTILE} [d](javascript:alert(1))'\n",
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
            assert "<img" not in content and 'href="file:' not in content, page
            assert 'href="elsewhere.md"' not in content, page  # no link leaves the site but http(s)
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
        "calibration.html": 3,  # the title (twice) and the text
        "coverage.html": 1,  # a technique's reason
    }
    for name, at_least in shown_on.items():
        content = (site / name).read_text(encoding="utf-8")
        assert content.count(ESCAPED) >= at_least, name


# ---------------------------------------------------------------- document pages


def test_coverage_and_calibration_pages_are_linked_from_every_page(site: Path) -> None:
    pages = [p for p in site.rglob("*.html")]
    assert len(pages) > 50
    for page in pages:
        nav = page.read_text(encoding="utf-8").split('<nav class="crumbs">')[1].split("</nav>")[0]
        up = "../" * (len(page.relative_to(site).parts) - 1)
        assert f'<a href="{up}coverage.html">coverage</a>' in nav, page
        assert f'<a href="{up}calibration.html">calibration</a>' in nav, page


def test_coverage_page_is_the_generated_table_with_records_linked(root: Path, site: Path) -> None:
    page = (site / "coverage.html").read_text(encoding="utf-8")
    records = len(list((root / "records" / "kv-efficiency").glob("*.yaml")))
    assert "<title>Coverage</title>" in page
    assert f"How many of the {records} records measure each technique" in page
    assert "<th>technique</th>" in page and "<td>prefix_caching</td>" in page
    notes = (root / "docs" / "coverage-notes.yaml").read_text(encoding="utf-8")
    for record_id in re.findall(r"- (kv-efficiency/[\w.-]+)", notes):
        href = f"records/{slug(record_id)}.html"
        assert f'<a href="{href}"><code>{record_id}</code></a>' in page
        assert (site / href).is_file()


def test_calibration_page_holds_the_engine_log_tables(site: Path) -> None:
    page = (site / "calibration.html").read_text(encoding="utf-8")
    assert "<title>Calibration: engine models against what the engines printed</title>" in page
    # llama.cpp public logs and pinned build, vLLM, SGLang, TensorRT-LLM
    assert page.count("<table>") == 5
    assert 'href="https://github.com/ggml-org/llama.cpp/issues/11200"' in page
    assert "4352.00 / 2176.00 / 2176.00" in page


def test_a_dataset_without_calibration_notes_has_no_calibration_page(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "data")
    written = build_site(root, tmp_path / "site")
    assert tmp_path / "site" / "coverage.html" in written
    assert not (tmp_path / "site" / "calibration.html").exists()
    assert "calibration.html" not in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_markup_in_a_chart_label_is_escaped() -> None:
    """Dataset ids are file-safe, but a chart escapes whatever it is given."""
    hostile_href = 'x.html" onclick="alert(1)'
    charts = [
        bytes_per_token_chart([ModelBar(HOSTILE, hostile_href, 65536.0, "full")]),
        context_chart(
            "chart-ttft",
            HOSTILE,
            [Dot(None, Position(9, 9, 9), HOSTILE, False, hostile_href, HOSTILE, HOSTILE)],
            series_styles([HOSTILE]),
            HOSTILE,
            HOSTILE,
            HOSTILE,
        ),
        change_chart(
            "chart-changes",
            HOSTILE,
            [
                ChangeRow(
                    HOSTILE,
                    hostile_href,
                    (ChangeMark(Position(2, 2, 2), "ttft", HOSTILE),),
                    HOSTILE,
                )
            ],
            HOSTILE,
        ),
    ]
    for chart in charts:
        assert HOSTILE not in chart.svg and 'onclick="' not in chart.svg, chart.ident
        assert ESCAPED in chart.svg and "&#34; onclick=&#34;" in chart.svg, chart.ident


# ---------------------------------------------------------------- reading the dataset once


def test_the_build_reads_each_record_file_once(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: Counter[Path] = Counter()
    real_open = io.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, Path)):
            opened[Path(file).resolve()] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    build_site(root, tmp_path / "site")
    monkeypatch.undo()
    records = [f.path.resolve() for f in discover(root, "record")]
    assert {path: opened[path] for path in records} == dict.fromkeys(records, 1)
    for folder in ("models", "hardware"):
        files = [p.resolve() for p in (root / folder).glob("*.yaml")]
        assert max(opened[p] for p in files) == 1, folder


def test_validating_does_not_load_jinja(root: Path) -> None:
    code = (
        "import sys; from kvrecords.cli.main import main; import kvrecords.cli.app; "
        "main(['validate']); print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jinja2', 'markupsafe') or m.startswith('kvrecords.tools.site')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
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


def test_site_build_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    # a process of its own, with Jinja2 hidden on its path as if the site extra were missing
    from conftest import spawn_cli

    blocker = tmp_path / "blocker" / "jinja2"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError('jinja2', name='jinja2')\n")
    root = copy_dataset(tmp_path / "dataset")
    done = spawn_cli(
        "site",
        "build",
        "--out",
        str(tmp_path / "out"),
        cwd=root,
        env={"PYTHONPATH": str(blocker.parent)},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pip install 'kv-efficiency-records[site]'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_planner_pages_answer_each_model_on_the_accelerators_its_records_ran_on(
    root: Path, site: Path
) -> None:
    html = (site / "planner" / "llama-3.1-8b--1x-h100-sxm.html").read_text(encoding="utf-8")
    verdicts = re.findall(r'class="planner-cell ([a-z-]+)"', html)
    # 3 contexts (4,096, 32,768, 131,072 tokens) x 3 user counts (1, 8, 32), row by row.
    # Llama 3.1 8B: 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B/token, so 4,096
    # tokens are 0.5 GiB and 131,072 tokens 16 GiB a user; one H100's pool of about 45-57 GiB
    # holds one short request, and never 32 users of 131,072 tokens (512 GiB)
    assert len(verdicts) == 9
    assert verdicts[0] == "fits" and verdicts[-1] == "does-not-fit", verdicts
    assert "vllm-cpu-offload-llama31-8b-h100" in html
    model_page = (site / "models" / "llama-3.1-8b.html").read_text(encoding="utf-8")
    assert 'href="../planner/llama-3.1-8b--1x-h100-sxm.html"' in model_page


def test_an_accelerator_ranking_names_each_rows_model_and_count_to_filter_by(site: Path) -> None:
    page = (site / "hardware" / "h100.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr data-model="([^"]*)" data-count="([^"]*)">', page)
    assert rows and all(model for model, _ in rows)
    # the 16-GPU cluster's row says so, in its cell and for the filter
    assert ("qwen3-32b", "16") in rows
    cluster = page[page.index('<tr data-model="qwen3-32b" data-count="16">') :]
    cluster = cluster[: cluster.index("</tr>")]
    assert '<td class="num">16</td>' in cluster and "models/qwen3-32b.html" in cluster
    models = re.findall(r'<select id="rank-model">(.*?)</select>', page, re.DOTALL)[0]
    assert set(re.findall(r'<option value="([^"]+)">', models)) == {m for m, _ in rows}
    options = re.findall(r'<select id="rank-count">(.*?)</select>', page, re.DOTALL)[0]
    counts = re.findall(r'<option value="(\d+)">', options)
    assert counts == sorted(counts, key=int) and set(counts) >= {c for _, c in rows if c}


def test_a_record_page_shows_the_sibling_whose_geometry_it_shares(
    empty_dataset: Path, tmp_path: Path
) -> None:
    case = REPO / "tests/cases/KV208/pass/sibling-geometry"
    shutil.copytree(case, empty_dataset, dirs_exist_ok=True)
    out = tmp_path / "site"
    build_site(empty_dataset, out)
    page = (out / "records" / "sibling-geometry.html").read_text(encoding="utf-8")
    assert "<dt>geometry of</dt>" in page
    assert '<a href="../models/llama-3.1-70b.html">llama-3.1-70b</a>' in page
    assert "the same 80 layers, 8 kv heads and head_dim 128" in page
    other = (out / "records").glob("*.html")
    assert all("geometry of" not in p.read_text() for p in other if p.stem != "sibling-geometry")


def test_a_metric_s_qualifiers_read_in_order_with_their_words() -> None:
    from kvrecords.tools.site.runs import _qualifiers

    metric = {
        "name": "prefix_cache_hit_rate",
        "definition": {"counted_in": "blocks", "window": "rolling"},
        "scope": "per_sequence",
        "benchmark": "ShareGPT",
        "part": "decode",
        "device": "gpu0",
        "spread": {"value": 0.02, "of": "std"},
    }
    assert _qualifiers(metric) == (
        "counts KV blocks, over a rolling window, per sequence, on ShareGPT, part: decode, "
        "device: gpu0, \u00b1 0.02 (standard deviation)"
    )
    # an empty or absent qualifier adds nothing
    assert _qualifiers({"benchmark": "", "part": None}) == ""
