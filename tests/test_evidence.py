"""Raw result files kept with a record (KV901) beyond the directory fixtures: a file of several
runs, figures converted from seconds, spreads, the selection of a run by a changed kept file,
and a record without evidence reading nothing."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset, run_cli
from kvrecords.runner.validate import validate

GUIDELLM = REPO / "tests" / "fixtures" / "bench" / "guidellm" / "guidellm_report_v2.json"
SLUG = "guidellm-qwen3-0.6b-rates"
RECORD = f"records/kv-efficiency/{SLUG}.yaml"
EVIDENCE = f"evidence/{SLUG}/report.json"

# Two runs drawn from the report's two benchmarks (constant 2 and 4 requests/s); figures as
# the file gives them, rounded by hand: benchmarks[0] TTFT mean 11.481165885925293 ms is 11.48,
# std_dev 0.20515918731689453 is 0.205 (0.21 would be 2.4 % off, past the 1 % every figure
# is held to); request_latency p99.9 0.020308971405029297 s is
# 20.31 ms; benchmarks[1] TTFT median 9.419918060302734 ms is 9.42.
RUNS = """\
runs:
  - id: rate-2
    label: constant 2 requests/s
    role: baseline
    request_rate: 2
    metrics:
      - name: ttft_ms
        statistic: mean
        value: 11.48
        spread:
          of: std
          value: 0.205
        stated_as: 'report.json: benchmarks[0].metrics.time_to_first_token_ms.successful.mean = 11.481165885925293'
      - name: e2e_latency_ms
        statistic: p99.9
        value: 20.31
        stated_as: 'report.json: benchmarks[0].metrics.request_latency.successful.percentiles.p999 = 0.020308971405029297'
  - id: rate-4
    label: constant 4 requests/s
    role: treatment
    request_rate: 4
    metrics:
      - name: ttft_ms
        statistic: median
        value: 9.42
        stated_as: 'report.json: benchmarks[1].metrics.time_to_first_token_ms.successful.median = 9.419918060302734'
"""


def _record(runs: str, digest: str, listed: str = "[rate-2, rate-4]") -> str:
    return f"""\
# yaml-language-server: $schema=../../schema/record.schema.json
format: 2
id: kv-efficiency/{SLUG}
title: GuideLLM constant-rate runs at 2 and 4 requests/s against a local test server
model: qwen3-0.6b
techniques:
  - baseline
kv_bytes_basis:
  dtype: bf16
  dtype_stated: false
  layers_counted: cache
  context_tokens: null
  bytes_per_token: 114688
  kv_at_context: null
  explanation: >-
    models/qwen3-0.6b: 28 layers x 8 kv heads x (128 + 128) x 2 B = 114,688 B/token.
methodology:
  source:
    publisher: llm-d-benchmark
    title: GuideLLM report test fixture
    url: null
    published: '2026-08-17'
    locator: tests/fixtures/guidellm_report_v2.json
    citation: A GuideLLM report kept with this record.
  hardware:
    accelerator: null
    count: 1
  engine:
    name: vllm
    version: null
  concurrency: null
  workload: Synthetic prompts of about 32 tokens and 8 output tokens, two requests per rate.
{runs}evidence:
  - file: report.json
    format: guidellm
    sha256: {digest}
    runs: {listed}
headline_run: rate-2
notes: >-
  Two constant-rate runs; the test server answers at once, so the figures say nothing of a GPU.
confidence: 0.3
confidence_reason: >-
  A test server, not an engine; the report is kept to show how the figures are read.
measured_ttft_ms_at_ctx: 11.48
measured_tps_at_ctx: null
not_stated:
  - field: kv_bytes_basis.context_tokens
    reason: Prompts vary in length.
  - field: kv_bytes_basis.kv_at_context
    reason: No single context length.
  - field: methodology.source.url
    reason: A test fixture, cited by its repository path.
  - field: methodology.hardware.accelerator
    reason: A local test server.
  - field: methodology.engine.version
    reason: The report does not name the server.
  - field: methodology.concurrency
    reason: A rate, not a concurrency, was set.
  - field: measured_tps_at_ctx
    reason: The test server's rates are not an engine's.
"""


DIGEST = hashlib.sha256(GUIDELLM.read_bytes()).hexdigest()


def _dataset(tmp_path: Path, runs: str = RUNS, listed: str = "[rate-2, rate-4]") -> Path:
    root = copy_dataset(tmp_path / "dataset", with_records=False)
    (root / RECORD).write_text(_record(runs, DIGEST, listed))
    (root / EVIDENCE).parent.mkdir(parents=True)
    shutil.copy(GUIDELLM, root / EVIDENCE)
    return root


def _problems(root: Path) -> list[str]:
    return [f"{p.line}:{p.column}: {p.code} {p.message}" for p in validate(root).problems]


def test_a_record_drawn_from_a_report_of_two_runs_validates(tmp_path: Path) -> None:
    assert _problems(_dataset(tmp_path)) == []


def test_a_converted_figure_is_held_to_the_metrics_unit(tmp_path: Path) -> None:
    # 0.020308971405029297 s = 20.308971405029297 ms: 20.30 does not round to it
    runs = RUNS.replace("value: 20.31", "value: 20.30")
    [problem] = _problems(_dataset(tmp_path, runs))
    assert "KV901 e2e_latency_ms p99.9 is 20.30" in problem
    assert "0.020308971405029297 (20.308971405029297 ms)" in problem


def test_a_spread_that_differs_from_the_files_std(tmp_path: Path) -> None:
    [problem] = _problems(_dataset(tmp_path, RUNS.replace("value: 0.205", "value: 0.305")))
    assert "KV901 spread is 0.305" in problem and "0.20515918731689453" in problem


def test_a_run_drawing_from_two_of_the_files_runs(tmp_path: Path) -> None:
    # rate-4's median taken from the first benchmark: 11.276006698608398 ms is 11.28
    runs = RUNS.replace(
        "value: 9.42\n        stated_as: 'report.json: benchmarks[1].metrics.time_to_first_token_ms"
        ".successful.median = 9.419918060302734'",
        "value: 11.28\n        stated_as: 'report.json: benchmarks[0].metrics.time_to_first_token_ms"
        ".successful.median = 11.276006698608398'",
    )
    problems = _problems(_dataset(tmp_path, runs))
    assert len(problems) == 2
    # its stated rate of 4 is not that benchmark's, and rate-2 already draws from it
    assert "request_rate is 4; run 'rate-4' draws from 'constant 2 requests/s'" in problems[0]
    assert "runs 'rate-2' and 'rate-4' both draw from 'constant 2 requests/s'" in problems[1]


def test_a_listed_run_that_draws_nothing(tmp_path: Path) -> None:
    runs = RUNS.replace("report.json: benchmarks[1]", "the page: benchmarks[1]")
    problems = _problems(_dataset(tmp_path, runs))
    assert problems == [
        f"{_line(tmp_path, 'runs: [rate-2, rate-4]')}:{len('    runs: [rate-2, ') + 1}: KV901 "
        "report.json lists run 'rate-4', which draws no figure from it"
    ]


def test_a_key_that_is_not_imported_or_absent(tmp_path: Path) -> None:
    runs = RUNS.replace("successful.mean = 11.481165885925293", "successful.mode = 11.276")
    runs = runs.replace("percentiles.p999", "percentiles.p9999")
    problems = _problems(_dataset(tmp_path, runs))
    assert any("successful.mode is not a figure the guidellm reader imports" in p for p in problems)
    assert any("report.json has no figure at benchmarks[0]" in p for p in problems)


def test_the_quote_must_be_the_files_text(tmp_path: Path) -> None:
    runs = RUNS.replace("= 9.419918060302734", "= 9.42")
    [problem] = _problems(_dataset(tmp_path, runs))
    assert "stated_as quotes 9.42; report.json writes 9.419918060302734" in problem


def test_a_changed_kept_file_brings_its_record_into_a_run(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    with (root / EVIDENCE).open("ab") as file:
        file.write(b" ")  # one byte more: the digest no longer matches
    done = run_cli("validate", EVIDENCE, cwd=root)
    assert done.returncode == 1
    assert f"{RECORD}:" in done.stdout and "KV901" in done.stdout
    assert "1 file checked" in done.stdout
    # the record given alone reads its kept files too
    done = run_cli("validate", RECORD, cwd=root)
    assert done.returncode == 1 and "KV901" in done.stdout and "has sha256" in done.stdout
    # a removed kept file brings it in too, and says the file is missing
    (root / EVIDENCE).unlink()
    done = run_cli("validate", EVIDENCE, cwd=root)
    assert done.returncode == 1 and "no such file" in done.stdout


def test_a_record_without_evidence_reads_no_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kvrecords.dataset import evidence

    def refuse(*args: object) -> None:
        raise AssertionError("read evidence for a record without it")

    monkeypatch.setattr(evidence, "read_evidence", refuse)
    root = copy_dataset(tmp_path / "dataset")
    assert validate(root).problems == []


def _line(tmp_path: Path, text: str) -> int:
    lines = (tmp_path / "dataset" / RECORD).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def test_a_kept_file_whose_record_is_gone_is_a_problem(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    (root / RECORD).unlink()
    done = run_cli("validate", EVIDENCE, cwd=root)
    assert done.returncode == 1
    assert f"evidence/{SLUG}:1:1: KV901 kept for kv-efficiency/{SLUG}, which has no record" in (
        done.stdout
    )


def test_a_run_whose_settings_the_file_contradicts(tmp_path: Path) -> None:
    # rate-4 draws from the benchmark at 4 requests/s but says 8; 2 requests completed, not 3
    runs = RUNS.replace("    request_rate: 4\n", "    request_rate: 8\n    requests: 3\n")
    problems = _problems(_dataset(tmp_path, runs))
    assert [p.split(" KV901 ")[1] for p in problems] == [
        "request_rate is 8; run 'rate-4' draws from 'constant 4 requests/s' of report.json, "
        "whose request_rate is 4.0",
        "requests is 3; 'constant 4 requests/s' of report.json completed 2",
    ]


def test_a_kept_file_name_that_is_a_path_is_refused_by_the_schema(tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    record = root / RECORD
    record.write_text(record.read_text().replace("file: report.json", "file: ../../etc/passwd"))
    problems = validate(root).problems
    assert [p.code for p in problems] == ["KV101"]
    # the message names the field and its pattern (not a KV dtype's names)
    assert problems[0].message == (
        "evidence[0].file: '../../etc/passwd' does not match '^[A-Za-z0-9][A-Za-z0-9._-]*$'"
    )
