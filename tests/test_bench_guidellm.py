"""GuideLLM's report read as runs: every summary statistic of every quantity, by hand-checked
values from tests/fixtures/bench/guidellm/guidellm_report_v2.json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from kvrecords.dataset.bench import BenchFigure, BenchFileError, BenchRun, read_bench_file
from kvrecords.dataset.bench.readers import guidellm
from kvrecords.dataset.bench.readers.summaries import skipped_key

REPORT = REPO / "tests" / "fixtures" / "bench" / "guidellm" / "guidellm_report_v2.json"


def _figure(run: BenchRun, metric: str, statistic: str) -> BenchFigure:
    [found] = [f for f in run.figures if (f.metric, f.statistic) == (metric, statistic)]
    return found


def test_one_run_per_benchmark_with_its_strategy_and_settings() -> None:
    runs = read_bench_file(REPORT)  # recognised without naming the tool
    assert [run.tool for run in runs] == ["guidellm", "guidellm"]
    # config.strategy: {"type_": "constant", "rate": 2.0} and 4.0; max_concurrency 10240 is the
    # worker pool's limit, not a cap the user set, so no concurrency
    assert [(run.request_rate, run.concurrency) for run in runs] == [(2.0, None), (4.0, None)]
    assert [run.label for run in runs] == ["constant 2 requests/s", "constant 4 requests/s"]
    first = runs[0]
    assert first.num_requests == 2  # metrics.request_totals.successful
    assert first.duration_s == 5.01964807510376  # benchmarks[0].duration
    assert (first.input_tokens, first.output_tokens) == (32, 8)  # config.spec.data[0]
    assert first.model == "e2e-mock-model"
    assert first.engine is None  # GuideLLM talks to an HTTP endpoint; it does not say which


def test_every_statistic_of_ttft_with_its_spread() -> None:
    run = read_bench_file(REPORT, "guidellm")[0]
    # benchmarks[0].metrics.time_to_first_token_ms.successful as the file writes it (ms)
    expected = {
        "mean": 11.481165885925293,
        "median": 11.276006698608398,
        "min": 11.276006698608398,
        "max": 11.686325073242188,
        "p50": 11.276006698608398,
        "p75": 11.686325073242188,
        "p90": 11.686325073242188,
        "p95": 11.686325073242188,
        "p99": 11.686325073242188,
        "p99.9": 11.686325073242188,
    }
    ttft = {f.statistic: f for f in run.figures if f.metric == "ttft_ms"}
    assert {name: f.value for name, f in ttft.items()} == expected
    assert ttft["mean"].spread == 0.20515918731689453  # std_dev beside the mean
    assert ttft["median"].spread is None
    assert (
        ttft["p99.9"].key
        == "benchmarks[0].metrics.time_to_first_token_ms.successful.percentiles.p999"
    )
    assert ttft["mean"].raw == "11.481165885925293"


def test_request_latency_is_converted_from_seconds() -> None:
    run = read_bench_file(REPORT, "guidellm")[0]
    mean = _figure(run, "e2e_latency_ms", "mean")
    # "request_latency": {"successful": {"mean": 0.01978909969329834, "std_dev": 0.000519871711730957
    # seconds x 1000 = 19.78909969329834 ms, spread 0.519871711730957 ms
    assert mean.raw == "0.01978909969329834"
    assert mean.value == 19.78909969329834
    assert mean.spread == 0.519871711730957
    assert (
        _figure(run, "e2e_latency_ms", "max").value == 20.308971405029297
    )  # 0.020308971405029297 s


def test_rates_and_token_counts() -> None:
    second = read_bench_file(REPORT, "guidellm")[1]
    output = _figure(second, "output_tokens_per_s", "mean")
    assert (output.value, output.scope) == (6.377131566888984, "aggregate")
    assert _figure(second, "requests_per_s", "mean").value == 0.7940882013937378
    assert _figure(second, "total_tokens_per_s", "median").value == 69.74022855557114
    assert _figure(second, "input_tokens_per_s", "max").value == 68.79874025744158
    # two requests of 8 output tokens: total_sum 16
    assert _figure(second, "generated_tokens", "total").value == 16.0
    assert _figure(second, "generated_tokens", "mean").value == 8.0
    assert _figure(second, "itl_ms", "mean").value == 1.0904414313180106


def test_each_run_holds_every_imported_quantity_once_per_statistic() -> None:
    for run in read_bench_file(REPORT, "guidellm"):
        pairs = [(f.metric, f.statistic) for f in run.figures]
        assert len(pairs) == len(set(pairs))
        # 9 quantities x 10 statistics (mean, median, min, max, p50, p75, p90, p95, p99, p99.9),
        # plus the totals of the two token counts
        assert len(pairs) == 9 * 10 + 2


def test_every_figure_is_the_value_at_its_key() -> None:
    report = json.loads(REPORT.read_text())
    for run in read_bench_file(REPORT, "guidellm"):
        for figure in run.figures:
            value = _at(report, figure.key)
            scale = 1000 if ".request_latency." in figure.key else 1
            assert math.isclose(figure.value, value * scale, rel_tol=1e-15), figure.key
            assert figure.raw == repr(value)


def test_what_is_not_imported_is_listed() -> None:
    run = read_bench_file(REPORT, "guidellm")[0]
    listed = {skipped_key(entry) for entry in run.not_imported}
    # GuideLLM's TPOT counts the first token; the vocabulary's tpot_ms does not
    assert "benchmarks[0].metrics.time_per_output_token_ms" in listed
    assert "benchmarks[0].metrics.request_concurrency" in listed
    assert "benchmarks[0].metrics.time_to_first_token_ms.errored" in listed
    assert "benchmarks[0].metrics.time_to_first_token_ms.successful.mode" in listed
    assert "benchmarks[0].metrics.time_to_first_token_ms.successful.percentiles.p25" in listed
    assert not any(f.metric == "tpot_ms" for f in run.figures)
    # each entry says its key, the value as written where it is one, and why
    assert (
        "benchmarks[0].metrics.time_per_output_token_ms (GuideLLM's TPOT counts the first "
        "token; tpot_ms does not)"
    ) in run.not_imported
    assert (
        "benchmarks[0].metrics.time_to_first_token_ms.successful.mode = 11.276006698608398 "
        "(mode is not among the record's statistics)"
    ) in run.not_imported


def test_an_unknown_key_is_listed_not_dropped(tmp_path: Path) -> None:
    report = json.loads(REPORT.read_text())
    report["benchmarks"][0]["metrics"]["kv_cache_hit_ratio"] = {"successful": {"mean": 0.5}}
    report["benchmarks"][0]["surprise"] = 1
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    run = read_bench_file(path, "guidellm")[0]
    assert "benchmarks[0].metrics.kv_cache_hit_ratio (no metric of the vocabulary holds it)" in (
        run.not_imported
    )
    assert "benchmarks[0].surprise = 1 (not a key of a benchmark this reader knows)" in (
        run.not_imported
    )


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ({"type_": "synchronous"}, (1, None, "synchronous")),
        ({"type_": "concurrent", "streams": 16}, (16, None, "concurrent 16")),
        ({"type_": "throughput", "max_concurrency": 64}, (64, math.inf, "throughput, at most 64")),
        ({"type_": "poisson", "rate": 1.5}, (None, 1.5, "poisson 1.5 requests/s")),
    ],
)
def test_strategies(strategy: dict[str, object], expected: tuple[object, ...]) -> None:
    assert guidellm._load(strategy, "benchmarks[0]") == expected


def test_an_unknown_strategy_is_a_located_error() -> None:
    with pytest.raises(BenchFileError) as error:
        guidellm._load({"type_": "sweep-of-doom"}, "benchmarks[3]")
    assert error.value.key == "benchmarks[3].config.strategy.type_"


def _at(data: Any, key: str) -> float:
    for part in key.replace("[", ".[").split("."):
        data = data[int(part[1:-1])] if part.startswith("[") else data[part]
    assert isinstance(data, int | float)
    return data
