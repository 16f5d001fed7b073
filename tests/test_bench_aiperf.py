"""AIPerf's and GenAI-Perf's profile exports read as a run, by hand-checked values from
tests/fixtures/bench/aiperf/profile_export_aiperf.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO
from kvrecords.dataset.bench import BenchFigure, BenchFileError, BenchRun, read_bench_file
from kvrecords.dataset.bench.readers.summaries import skipped_key

EXPORT = REPO / "tests" / "fixtures" / "bench" / "aiperf" / "profile_export_aiperf.json"


def _figure(run: BenchRun, metric: str, statistic: str) -> BenchFigure:
    [found] = [f for f in run.figures if (f.metric, f.statistic) == (metric, statistic)]
    return found


def test_the_run_and_its_settings() -> None:
    [run] = read_bench_file(EXPORT)
    assert run.tool == "aiperf"
    # input_config.loadgen: {"concurrency": 1, "request_count": 64, ...}
    assert (run.concurrency, run.request_rate, run.label) == (1, None, "concurrency 1")
    assert run.num_requests == 64  # request_count.avg 64.0
    assert run.duration_s == 255.56017270100003  # benchmark_duration.avg, unit sec
    assert (run.input_tokens, run.output_tokens) == (100, 200)  # input.prompt.*.mean
    assert run.model == "Qwen/Qwen3-0.6B"


def test_ttft_every_statistic_and_its_spread() -> None:
    [run] = read_bench_file(EXPORT, "aiperf")
    ttft = {f.statistic: f.value for f in run.figures if f.metric == "ttft_ms"}
    # time_to_first_token, unit ms, as written
    assert ttft == {
        "mean": 30.814987671875,
        "p50": 30.668547999999998,
        "p75": 31.591614,
        "p90": 32.5407818,
        "p95": 33.0437491,
        "p99": 34.344268879999994,
        "min": 28.662267,
        "max": 34.717433,
    }
    assert _figure(run, "ttft_ms", "mean").spread == 1.3745155360138603  # std
    assert _figure(run, "ttft_ms", "mean").key == "time_to_first_token.avg"


def test_itl_and_tpot_follow_aiperfs_definitions() -> None:
    [run] = read_bench_file(EXPORT, "aiperf")
    # inter_token_latency = (latency - TTFT) / (OSL - 1) per request: the vocabulary's TPOT
    assert _figure(run, "tpot_ms", "mean").value == 18.19909533160138
    assert _figure(run, "tpot_ms", "mean").key == "inter_token_latency.avg"
    # inter_chunk_latency pools every gap: the vocabulary's ITL
    assert _figure(run, "itl_ms", "p99").value == 20.8811646
    assert _figure(run, "itl_ms", "p99").key == "inter_chunk_latency.p99"


def test_rates_over_the_run_are_single_values() -> None:
    [run] = read_bench_file(EXPORT, "aiperf")
    requests = _figure(run, "requests_per_s", "single")
    assert (requests.value, requests.scope) == (0.2504302580624667, "aggregate")
    assert _figure(run, "output_tokens_per_s", "single").value == 50.08213863971112
    per_user = _figure(run, "decode_tokens_per_s", "mean")
    assert (per_user.value, per_user.scope) == (54.96763210350922, "per_sequence")
    assert _figure(run, "prefill_tokens_per_s", "p50").value == 3260.6696082508024
    assert _figure(run, "generated_tokens", "total").value == 12799.0  # total_osl
    assert _figure(run, "prompt_tokens", "total").value == 6400.0  # total_isl: 64 x 100
    assert _figure(run, "e2e_latency_ms", "max").value == 3954.0145199999997


def test_not_imported_is_listed() -> None:
    [run] = read_bench_file(EXPORT, "aiperf")
    listed = {skipped_key(entry) for entry in run.not_imported}
    assert {"time_to_second_token", "telemetry_data", "time_to_first_token.p25"} <= listed
    assert "output_token_count" in listed  # the same count as output_sequence_length
    assert "input_config" not in listed  # read for the settings
    pairs = [(f.metric, f.statistic) for f in run.figures]
    assert len(pairs) == len(set(pairs))


def test_seconds_are_converted_and_an_unknown_unit_refused(tmp_path: Path) -> None:
    export = json.loads(EXPORT.read_text())
    export["time_to_first_token"] = {"unit": "sec", "avg": 0.0308, "p99": 0.0343, "std": 0.001}
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(export))
    [run] = read_bench_file(path)
    # 0.0308 s = 30.8 ms; 0.0343 s = 34.3 ms; std 0.001 s = 1 ms
    assert _figure(run, "ttft_ms", "mean").value == 30.8
    assert _figure(run, "ttft_ms", "p99").value == 34.3
    assert _figure(run, "ttft_ms", "mean").spread == 1.0
    export["time_to_first_token"]["unit"] = "fortnights"
    path.write_text(json.dumps(export))
    with pytest.raises(BenchFileError) as error:
        read_bench_file(path)
    assert error.value.key == "time_to_first_token.unit"


def test_genai_perf_and_the_older_records_layout(tmp_path: Path) -> None:
    # the keys GenAI-Perf writes (ai-dynamo/aiperf issue #340), its input_config without loadgen
    genai = {
        "request_throughput": {"unit": "requests/sec", "avg": 17.222547659562533},
        "time_to_first_token": {"unit": "ms", "avg": 184.63779366666665, "p99": 425.02943662},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 44190.56002502682},
        "input_config": {"model": ["my_model"], "concurrency": 8},
    }
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text(json.dumps(genai))
    [run] = read_bench_file(path)
    assert (run.concurrency, run.model) == (8, "my_model")
    assert _figure(run, "ttft_ms", "p99").value == 425.02943662
    # GenAI-Perf's later config: model_names and perf_analyzer.stimulus
    genai["input_config"] = {
        "model_names": ["gpt2"],
        "perf_analyzer": {"stimulus": {"request_rate": 4}},
    }
    path.write_text(json.dumps(genai))
    [run] = read_bench_file(path)
    assert (run.concurrency, run.request_rate, run.model) == (None, 4.0, "gpt2")
    assert run.label == "4 requests/s"
    older = {"records": {"time_to_first_token": {"unit": "ms", "avg": 15.5}}, "input_config": {}}
    path.write_text(json.dumps(older))
    [run] = read_bench_file(path)
    assert _figure(run, "ttft_ms", "mean").key == "records.time_to_first_token.avg"
