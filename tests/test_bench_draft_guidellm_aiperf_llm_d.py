"""``kvrecords new --from-bench`` on the GuideLLM, AIPerf and llm-d examples: a draft whose runs
hold the readers' figures, with their traces, that fails only for what a person gives: the
confidence and the placeholders (KV206) beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, copy_dataset, run_cli
from kvrecords.dataset.document import Document, parse_document
from kvrecords.runner.validate import validate

BENCH = REPO / "tests" / "fixtures" / "bench"


@pytest.mark.parametrize(
    ("fixture", "runs", "trace"),
    [
        # two benchmarks; benchmarks[0] TTFT mean as the file writes it
        (
            "guidellm/guidellm_report_v2.json",
            2,
            "guidellm_report_v2.json: benchmarks[0].metrics.time_to_first_token_ms.successful"
            ".mean = 11.481165885925293",
        ),
        (
            "aiperf/profile_export_aiperf.json",
            1,
            "profile_export_aiperf.json: time_to_first_token.avg = 30.814987671875",
        ),
        # seconds in the file, ms in the record: the trace gives both
        (
            "llm-d/br_v0_2_example.yaml",
            1,
            "br_v0_2_example.yaml: results.request_performance.aggregate.latency"
            ".time_to_first_token.mean = 0.0368578234128654 (36.8578234128654 ms)",
        ),
    ],
)
def test_a_draft_from_each_format_fails_only_for_what_a_person_gives(
    fixture: str, runs: int, trace: str, tmp_path: Path
) -> None:
    dataset = copy_dataset(tmp_path / "dataset", with_records=False)
    # none of the three names the server it measured: the contributor says which
    done = run_cli(
        "new",
        "--from-bench",
        str(BENCH / fixture),
        "--model",
        "qwen3-0.6b",
        "--engine",
        "vllm",
        cwd=dataset,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (dataset / "records" / "kv-efficiency").iterdir()
    codes = [p.code for p in validate(dataset, [path]).problems]
    assert codes.count("KV101") == 1 and set(codes) <= {"KV101", "KV206"}  # what a person gives
    document = parse_document(path.read_bytes(), path.name)
    assert isinstance(document, Document)
    assert len(document.data["runs"]) == runs
    quotes = [m["stated_as"] for run in document.data["runs"] for m in run["metrics"]]
    assert trace in quotes
