"""kvrecords export --format llm-d: each run as an llm-d benchmark report (v0.2), read back by
the llm-d reader to the same figures."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import REPO, copy_dataset, run_cli
from kvrecords.dataset.bench import BenchRun, read_bench_file

PASS_CASE = REPO / "tests" / "cases" / "KV901" / "pass" / "aiperf-profile-kept"
RECORD_ID = "kv-efficiency/aiperf-qwen3-0.6b-c1"
RECORD = PASS_CASE / "records" / "kv-efficiency" / "aiperf-qwen3-0.6b-c1.yaml"


def _dataset(tmp_path: Path, record_text: str | None = None) -> Path:
    root = copy_dataset(tmp_path / "dataset", with_records=False)
    shutil.copytree(PASS_CASE, root, dirs_exist_ok=True)
    if record_text is not None:
        (root / "records" / "kv-efficiency" / "aiperf-qwen3-0.6b-c1.yaml").write_text(record_text)
    return root


def _figures(run: BenchRun) -> dict[tuple[str, str], tuple[float, float | None]]:
    return {(f.metric, f.statistic): (f.value, f.spread) for f in run.figures}


def test_a_run_exported_and_read_back_gives_the_same_figures(tmp_path: Path) -> None:
    # the record's run c1 with a median and a p99.9 beside its TTFT mean, and a context
    text = RECORD.read_text()
    text = text.replace(
        "      - name: ttft_ms\n        statistic: p99\n",
        "      - name: ttft_ms\n        statistic: median\n        value: 30.67\n"
        "        stated_as: p50 30.67 ms\n"
        "      - name: ttft_ms\n        statistic: p99.9\n        value: 34.7\n"
        "        stated_as: p99.9 34.7 ms\n"
        "      - name: ttft_ms\n        statistic: p99\n",
    )
    text = text.replace(
        "    role: only\n",
        "    role: only\n    requests: 64\n    duration:\n      seconds: 255.56\n",
    )
    root = _dataset(tmp_path, text)
    done = run_cli("export", "--format", "llm-d", "--output", "reports", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    report = root / "reports" / "aiperf-qwen3-0.6b-c1.c1.yaml"
    [run] = read_bench_file(report)  # recognised as an llm-d report
    assert run.tool == "llm-d"
    # the record's figures, each the same after the trip (median is written as p50, which
    # llm-d's schema says is the median)
    assert _figures(run) == {
        ("ttft_ms", "mean"): (30.81, 1.37),
        ("ttft_ms", "median"): (30.67, None),
        ("ttft_ms", "p99.9"): (34.7, None),
        ("ttft_ms", "p99"): (34.34, None),
        ("tpot_ms", "mean"): (18.20, None),
    }
    # settings: concurrency 1 from the methodology, the 100-token context, 64 requests
    assert (run.concurrency, run.input_tokens, run.num_requests) == (1, 100, 64)
    assert run.duration_s == 255.56
    assert run.model == "qwen3-0.6b" and run.engine == "vllm"
    # a single-valued rate has no place in llm-d's Statistics: said, not approximated
    assert "not exported: output_tokens_per_s single" in done.stderr
    assert "wrote 1 report to reports" in done.stderr


def test_the_report_keeps_llm_ds_required_fields(tmp_path: Path) -> None:
    import yaml

    root = _dataset(tmp_path)
    done = run_cli(
        "export", "--format", "llm-d", "--record", RECORD_ID, "--output", "out", cwd=root
    )
    assert done.returncode == 0, done.stderr
    report = yaml.safe_load((root / "out" / "aiperf-qwen3-0.6b-c1.c1.yaml").read_text())
    assert report["version"] == "0.2"
    assert report["run"]["uid"] == f"{RECORD_ID}#c1"
    [engine] = report["scenario"]["stack"]
    assert set(engine) == {"metadata", "standardized", "native"}
    assert {"label", "cfg_id"} <= set(engine["metadata"])
    standardized = engine["standardized"]
    assert (standardized["kind"], standardized["tool"], standardized["role"]) == (
        "inference_engine",
        "vllm",
        "replica",
    )
    assert standardized["accelerator"] == {"model": "not stated", "count": 1, "parallelism": {}}
    ttft = report["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]
    assert ttft == {"units": "ms", "mean": 30.81, "stddev": 1.37, "p99": 34.34}


def test_export_llm_d_needs_a_folder_and_known_records(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    done = run_cli("export", "--format", "llm-d", cwd=root)
    assert done.returncode != 0 and "--output FOLDER" in done.stderr
    done = run_cli(
        "export", "--format", "llm-d", "--record", "kv-efficiency/nope", "-o", "x", cwd=root
    )
    assert done.returncode != 0 and "no record kv-efficiency/nope" in done.stderr
    done = run_cli("export", "--format", "csv", "--record", RECORD_ID, cwd=root)
    assert done.returncode != 0 and "--format llm-d only" in done.stderr
