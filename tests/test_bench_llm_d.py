"""llm-d's benchmark report (v0.2) read as a run, by hand-checked values from
tests/fixtures/bench/llm-d/br_v0_2_example.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO
from kvrecords.dataset.bench import BenchFigure, BenchFileError, BenchRun, read_bench_file
from kvrecords.dataset.bench.readers.summaries import skipped_key

REPORT = REPO / "tests" / "fixtures" / "bench" / "llm-d" / "br_v0_2_example.yaml"


def _figure(run: BenchRun, metric: str, statistic: str) -> BenchFigure:
    [found] = [f for f in run.figures if (f.metric, f.statistic) == (metric, statistic)]
    return found


def test_the_run_and_its_settings() -> None:
    [run] = read_bench_file(REPORT)
    assert run.tool == "llm-d"
    # scenario.load.standardized: rate_qps 10, concurrency .inf (no cap), input fixed 2148,
    # output gaussian 1000 (not every request's length, so not taken)
    assert (run.request_rate, run.concurrency, run.unbounded) == (10.0, None, True)
    assert (run.input_tokens, run.output_tokens) == (2148, None)
    assert run.num_requests == 500  # results...requests.total
    assert run.duration_s == 49.97206788184121  # run.time.duration PT49.97206788184121S
    assert run.model == "Qwen/Qwen3-0.6B"
    assert "--max-model-len 1024" in run.flags and "--no-enable-log-requests" in run.flags
    assert run.engine is None  # the stack names llm-d's image, not the engine's release
    assert run.label == "38b1f169ca178b756f7483523b17de61 stage 3"


def test_latencies_are_converted_from_seconds() -> None:
    [run] = read_bench_file(REPORT)
    ttft = {f.statistic: f.value for f in run.figures if f.metric == "ttft_ms"}
    # time_to_first_token, units s: each value x 1000
    assert ttft == {
        "mean": 36.8578234128654,  # 0.0368578234128654 s
        "min": 27.276142966002226,  # 0.027276142966002226 s
        "median": 36.22930939309299,  # p50 0.03622930939309299 s
        "p75": 39.93474820163101,
        "p90": 42.62634576298297,
        "p95": 45.246614259667695,
        "p99": 50.29489721637218,  # 0.05029489721637218 s
        "p99.9": 57.014757215045425,  # p99p9 0.057014757215045425 s
        "max": 57.4655020609498,
    }
    # inter_token_latency, time_per_output_token and request_latency give a mean only
    assert _figure(run, "itl_ms", "mean").value == 36.8578234128654  # s/token x 1000
    assert _figure(run, "tpot_ms", "mean").value == 36.8578234128654
    assert _figure(run, "e2e_latency_ms", "mean").raw == "0.0368578234128654"


def test_throughput_and_lengths() -> None:
    [run] = read_bench_file(REPORT)
    assert _figure(run, "requests_per_s", "mean").value == 2262.448  # units queries/s
    assert _figure(run, "output_tokens_per_s", "p99.9").value == 2326.503
    assert _figure(run, "prompt_tokens", "max").value == 2328.0
    assert _figure(run, "generated_tokens", "median").value == 2262.0
    # 4 latencies (9 + 1 + 1 + 1 statistics), 4 rates and 2 lengths of 9 statistics each
    assert len(run.figures) == 12 + 6 * 9


def test_sections_and_statistics_not_imported_are_listed() -> None:
    [run] = read_bench_file(REPORT)
    listed = {skipped_key(entry) for entry in run.not_imported}
    assert {"results.observability", "results.request_performance.time_series"} <= listed
    where = "results.request_performance.aggregate"
    assert f"{where}.latency.normalized_time_per_output_token" in listed
    assert f"{where}.latency.time_to_first_token.p25" in listed


def test_the_same_report_as_json(tmp_path: Path) -> None:
    from kvrecords.dataset.bench import load_yaml

    report = load_yaml(REPORT.read_bytes())
    report["scenario"]["load"]["standardized"]["concurrency"] = 64
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report, default=str))
    [run] = read_bench_file(path, "llm-d")
    assert run.concurrency == 64
    assert _figure(run, "ttft_ms", "p99").value == 50.29489721637218


def test_another_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "report.yaml"
    path.write_text("version: '0.1'\nresults: {}\n")
    with pytest.raises(BenchFileError) as error:
        read_bench_file(path, "llm-d")
    assert error.value.key == "version"
