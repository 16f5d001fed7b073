"""The export readers use: one row per record, recomputed KV figures, the generated table."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

from conftest import REPO, run_cli
from kvrecords.dataset.release import DATASET_VERSION
from kvrecords.tools.export import COLUMNS, rows, to_markdown

SEED_ID = "kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090"


def export(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("export", *args, cwd=cwd)


def test_csv_has_one_row_per_record(dataset: Path) -> None:
    result = export("--format", "csv", cwd=dataset)
    assert result.returncode == 0, result.stderr
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    records = sorted(p.stem for p in (dataset / "records/kv-efficiency").glob("*.yaml"))
    assert sorted(row["id"].removeprefix("kv-efficiency/") for row in table) == records
    assert tuple(table[0]) == COLUMNS
    seed = next(row for row in table if row["id"] == SEED_ID)
    # recomputed from models/qwen3-8-27b: 16 x 4 x (256 + 256) x 2 = 65,536; x 150,000 tokens
    assert (seed["bytes_per_token"], seed["kv_bytes_at_context"]) == ("65536", "9830400000")
    assert (seed["cold_ttft_ms"], seed["warm_ttft_ms"], seed["hit_rate"]) == (
        "53200",
        "2300",
        "0.935",
    )
    assert seed["techniques"] == "prefix_caching;hybrid_linear_attention"
    assert seed["fixed_state_bytes"] == ""  # the Gated DeltaNet state is not published
    assert {row["dataset_version"] for row in table} == {DATASET_VERSION}


def test_json_and_jsonl_agree(dataset: Path) -> None:
    as_json = json.loads(export("--format", "json", cwd=dataset).stdout)
    as_lines = [
        json.loads(line) for line in export("--format", "jsonl", cwd=dataset).stdout.splitlines()
    ]
    assert as_json == as_lines
    seed = next(row for row in as_json if row["id"] == SEED_ID)
    assert seed["measured_tps_at_ctx"] is None
    assert seed["model_geometry"] == "16 attention, 48 linear_attention"


def test_export_refuses_a_dataset_with_errors(dataset: Path) -> None:
    seed = dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    seed.write_text(seed.read_text().replace("speedup: 23x", "speedup: 25x"))
    result = export(cwd=dataset)
    assert result.returncode == 1
    assert result.stdout == "" and "run kvrecords validate" in result.stderr


def test_the_generated_table_is_current() -> None:
    docs = (REPO / "docs" / "dataset.md").read_text(encoding="utf-8")
    assert docs == to_markdown(rows(REPO)), (
        "run: kvrecords export --format markdown -o docs/dataset.md"
    )
