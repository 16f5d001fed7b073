"""The export readers use: one row per record, recomputed KV figures, the generated table."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURE_DATASET, REPO, run_cli, spawn_cli
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.models import load_model_file
from kvrecords.dataset.release import DATASET_VERSION
from kvrecords.tools.export import (
    COLUMN_TYPES,
    COLUMNS,
    METRIC_COLUMNS,
    RECORD_COLUMNS,
    csv_cell,
    record_row,
    record_table,
    rows,
)
from kvrecords.tools.tables import MEASURED_PATTERN, write_datapackage

SEED_ID = "kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090"


def export(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli("export", *args, cwd=cwd, env=env)


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
    seed.write_text(seed.read_text().replace("stated: 23x", "stated: 25x"))
    result = export(cwd=dataset)
    assert result.returncode == 1
    assert result.stdout == "" and "run kvrecords validate" in result.stderr


# ---- the row builder the export and the site share -------------------------------------


def _record_data(slug: str) -> dict[str, Any]:
    path = FIXTURE_DATASET / "records" / "kv-efficiency" / f"{slug}.yaml"
    document = read_document(path, f"records/kv-efficiency/{slug}.yaml")
    assert isinstance(document, Document)
    return document.data


def test_every_row_holds_the_record_columns_in_order(fixture_root: Path) -> None:
    table = rows(fixture_root)
    assert len(table) == len(list((fixture_root / "records" / "kv-efficiency").glob("*.yaml")))
    for row in table:
        assert tuple(row) == COLUMNS, row["id"]


def test_a_row_is_built_from_data_already_read() -> None:
    data = _record_data(SEED_ID.removeprefix("kv-efficiency/"))
    model = load_model_file(REPO / "models" / "qwen3-8-27b.yaml")
    row = record_row(data, model, "shown/as.yaml")
    assert (row["id"], row["model"], row["model_name"]) == (SEED_ID, "qwen3-8-27b", "Qwen3.8-27B")
    # recomputed from the model, not copied from the record
    assert (row["bytes_per_token"], row["kv_bytes_at_context"]) == (65536, 9_830_400_000)
    assert row["fixed_state_bytes"] is None  # the Gated DeltaNet state is not published
    assert row["model_geometry"] == "16 attention, 48 linear_attention"
    assert (row["cold_ttft_ms"], row["warm_ttft_ms"], row["hit_rate"]) == (53200, 2300, 0.935)
    assert row["path"] == "shown/as.yaml" and row["dataset_version"] == DATASET_VERSION


def test_a_row_without_a_context_states_no_bytes_at_context() -> None:
    data = _record_data("kivi-2bit-kv-llama2")
    row = record_row(data, load_model_file(REPO / "models" / "llama-2-7b.yaml"), "kivi.yaml")
    assert row["context_tokens"] is None and row["kv_bytes_at_context"] is None
    assert row["bytes_per_token"] == 98304  # int2-g32: 262,144 elements x 3 bits / 8


def test_a_parallel_group_is_summarized_with_its_mixers() -> None:
    data = _record_data(SEED_ID.removeprefix("kv-efficiency/"))
    model = load_model_file(REPO / "models" / "falcon-h1-0.5b.yaml")
    assert record_row(data, model, "x.yaml")["model_geometry"] == "36 parallel (attention + mamba2)"


# ---- typed outputs: Parquet and the data package ------------------------------------------


def test_parquet_loads_with_pyarrow_typed_and_versioned(dataset: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "records.parquet"
    result = export("--format", "parquet", "--output", str(out), cwd=dataset)
    assert result.returncode == 0, result.stderr
    table = pq.read_table(out)
    records = list((dataset / "records/kv-efficiency").glob("*.yaml"))
    assert table.num_rows == len(records)
    assert tuple(table.column_names) == COLUMNS
    metadata = table.schema.metadata
    assert metadata[b"kvrecords.dataset_version"] == DATASET_VERSION.encode()
    assert metadata[b"kvrecords.license"] == b"CC-BY-4.0"
    types = {field.name: str(field.type) for field in table.schema}
    assert types["bytes_per_token"] == "int64" and types["confidence"] == "double"
    assert types["kv_dtype_stated"] == "bool"
    assert types["techniques"] == "list<element: string>"
    assert types["hit_rate"] == "struct<value: double, about: double, min: double, max: double>"
    by_id = {row["id"]: row for row in table.to_pylist()}
    seed = by_id[SEED_ID]
    # 16 x 4 x (256 + 256) x 2 = 65,536 B/token; x 150,000 tokens = 9,830,400,000 B
    assert (seed["bytes_per_token"], seed["kv_bytes_at_context"]) == (65536, 9_830_400_000)
    assert seed["hit_rate"] == {"value": 0.935, "about": None, "min": None, "max": None}
    assert seed["techniques"] == ["prefix_caching", "hybrid_linear_attention"]
    assert seed["measured_tps_at_ctx"] is None and seed["dataset_version"] == DATASET_VERSION
    # an approximate figure stays approximate: the source says "~900 ms"
    gdn = by_id["kv-efficiency/vllm-gdn-prefix-cache-qwen3-coder-next-fp8-gb10-8k"]
    approximate = {"value": None, "about": 900.0, "min": None, "max": None}
    assert gdn["measured_ttft_ms_at_ctx"] == approximate


def test_every_value_survives_the_parquet_file(dataset: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kvrecords.tools.tables import parquet_bytes

    table = record_table(dataset)
    loaded = pq.read_table(pa.BufferReader(parquet_bytes(table))).to_pylist()
    measured = {c.name for c in table.columns if c.type == "measured"}
    for row, back in zip(table.rows, loaded, strict=True):
        for name, value in row.items():
            if name in measured and value is not None:
                parts = {k: v for k, v in back[name].items() if v is not None}
                assert parts == (value if isinstance(value, dict) else {"value": value})
            else:
                assert back[name] == value, (row["id"], name)


def test_parquet_says_how_to_install_pyarrow_when_it_is_missing(
    dataset: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named pyarrow')\n")
    out = tmp_path / "records.parquet"
    env = {"PYTHONPATH": str(blocker.parent)}
    # a process of its own: PYTHONPATH is read at start-up, and this one has pyarrow loaded
    result = spawn_cli("export", "--format", "parquet", "-o", str(out), cwd=dataset, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "pip install 'kv-efficiency-records[parquet]'" in result.stderr
    assert not out.exists()
    result = export("--format", "parquet", cwd=dataset)
    assert result.returncode == 2 and "give --output FILE" in result.stderr


def test_the_data_package_validates_with_frictionless(dataset: Path, tmp_path: Path) -> None:
    from frictionless import validate

    folder = tmp_path / "release"
    result = export("--format", "datapackage", "--output", str(folder), cwd=dataset)
    assert result.returncode == 0, result.stderr
    report = validate(str(folder / "datapackage.json"))
    assert report.valid, report.flatten(["rowNumber", "fieldName", "type", "message"])
    descriptor = json.loads((folder / "datapackage.json").read_text(encoding="utf-8"))
    assert descriptor["version"] == DATASET_VERSION
    assert descriptor["licenses"][0]["name"] == "CC-BY-4.0"
    resource, metrics = descriptor["resources"]
    assert (resource["name"], metrics["name"]) == ("records", "metrics")
    assert metrics["schema"]["primaryKey"] == ["record_id", "figure"]
    metrics_csv = (folder / "metrics.csv").read_text(encoding="utf-8")
    assert metrics_csv == export("--format", "csv", "--metrics", cwd=dataset).stdout
    # the package's CSV is the CSV export, byte for byte
    csv_text = (folder / "records.csv").read_text(encoding="utf-8")
    assert csv_text == export("--format", "csv", cwd=dataset).stdout
    fields = {f["name"]: f for f in resource["schema"]["fields"]}
    assert tuple(fields) == COLUMNS
    assert fields["bytes_per_token"]["type"] == "integer"
    assert fields["hit_rate"]["constraints"]["pattern"] == MEASURED_PATTERN
    assert resource["schema"]["primaryKey"] == ["id"]


def test_frictionless_catches_a_table_that_breaks_its_schema(dataset: Path, tmp_path: Path) -> None:
    """The descriptor is strict enough to matter: a cell that is not what it says fails."""
    from frictionless import validate

    table = record_table(dataset)
    broken = table._replace(
        rows=[
            {**row, "bytes_per_token": "many"} if i == 0 else row
            for i, row in enumerate(table.rows)
        ]
    )
    write_datapackage([broken], tmp_path / "broken")
    report = validate(str(tmp_path / "broken" / "datapackage.json"))
    assert not report.valid
    assert ["bytes_per_token", "type-error"] in report.flatten(["fieldName", "type"])


def test_every_column_has_a_known_type_and_a_description() -> None:
    for columns in (RECORD_COLUMNS, METRIC_COLUMNS):
        assert all(c.type in COLUMN_TYPES and c.description for c in columns)
        names = [c.name for c in columns]
        assert len(set(names)) == len(names)


def test_metrics_export_has_one_row_per_figure_of_each_run(dataset: Path) -> None:
    result = export("--format", "csv", "--metrics", cwd=dataset)
    assert result.returncode == 0, result.stderr
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    seed = [row for row in table if row["record_id"] == SEED_ID]
    # the seed: cold TTFT; warm TTFT and hit rate; four days: prompt and generated tokens and
    # the aggregate hit rate; reused documents' hit rate; and the 23x speedup
    assert [(r["run_id"], r["kind"], r["metric"], r["statistic"], r["value"]) for r in seed] == [
        ("cold", "measured", "ttft_ms", "single", "53200"),
        ("warm", "measured", "ttft_ms", "single", "2300"),
        ("warm", "measured", "hit_rate", "single", "0.935"),
        ("four-days-mixed", "measured", "prompt_tokens", "total", "~78000000"),
        ("four-days-mixed", "measured", "generated_tokens", "total", "~5900000"),
        ("four-days-mixed", "measured", "hit_rate", "single", "0.43-0.45"),
        ("four-days-reused-documents", "measured", "hit_rate", "single", "0.7-0.9"),
        ("warm", "speedup", "ttft_ms", "single", "23"),
    ]
    assert [row["figure"] for row in seed] == [str(n) for n in range(1, 9)]
    cold, warm, hit = seed[:3]
    assert (cold["techniques"], warm["techniques"]) == (
        "baseline",
        "prefix_caching;hybrid_linear_attention",
    )
    assert (hit["unit"], hit["definition"], hit["context"]) == ("fraction", "tokens/run", "150000")
    assert seed[3]["accelerator_count"] == "4" and seed[3]["context"] == ""
    assert (seed[-1]["compared_with"], seed[-1]["value_as_written"]) == ("cold", "23x")
    lines = export("--format", "jsonl", "--metrics", cwd=dataset).stdout.splitlines()
    assert len(lines) == len(table)
    assert json.loads(lines[0])["value"] is not None
    refused = export("--format", "markdown", "--metrics", cwd=dataset)
    assert refused.returncode == 2 and "not markdown" in refused.stderr


def test_metrics_export_says_the_request_rate_of_each_run(dataset: Path) -> None:
    """A run's request rate, else the methodology's: a number, inf (a burst), a-b (a ramp)."""
    path = dataset / "records" / f"{SEED_ID}.yaml"
    text = path.read_text(encoding="utf-8")
    assert "  concurrency: null\n" in text
    text = text.replace(
        "  concurrency: null\n", "  concurrency: null\n  request_rate: {min: 3, max: 60}\n", 1
    )
    text = text.replace("    role: treatment\n", "    role: treatment\n    request_rate: inf\n", 1)
    path.write_text(text, encoding="utf-8")
    result = export("--format", "csv", "--metrics", cwd=dataset)
    assert result.returncode == 0, result.stderr
    rates = {
        (row["run_id"], row["request_rate"])
        for row in csv.DictReader(io.StringIO(result.stdout))
        if row["record_id"] == SEED_ID
    }
    assert ("cold", "3-60") in rates and ("warm", "inf") in rates


def test_a_difference_is_exported_in_its_unit(dataset: Path) -> None:
    path = dataset / "records" / f"{SEED_ID}.yaml"
    anchor = "    stated_as: 53.2 s cold to 2.3 s warm is 23x on that one prompt\n"
    difference = (
        "  - kind: difference\n    metric: hit_rate\n    statistic: single\n"
        "    from: four-days-mixed\n    to: four-days-reused-documents\n    stated: +30pp\n"
    )
    text = path.read_text(encoding="utf-8")
    assert anchor in text
    path.write_text(text.replace(anchor, anchor + difference, 1), encoding="utf-8")
    result = export("--format", "csv", "--metrics", cwd=dataset)
    assert result.returncode == 0, result.stderr
    (row,) = [
        row
        for row in csv.DictReader(io.StringIO(result.stdout))
        if row["record_id"] == SEED_ID and row["kind"] == "difference"
    ]
    assert (row["unit"], row["value"], row["value_as_written"]) == ("pp", "30", "+30pp")
    assert (row["run_id"], row["compared_with"]) == (
        "four-days-reused-documents",
        "four-days-mixed",
    )


def test_a_spread_beside_a_value_is_kept_and_exported(dataset: Path) -> None:
    """'53.2 s +/- 1.5 s (std)': the value stays 53,200; the spread rides beside it."""
    path = dataset / "records" / f"{SEED_ID}.yaml"
    text = path.read_text(encoding="utf-8")
    old = "        value: 53200\n"
    assert old in text
    path.write_text(
        text.replace(old, old + "        spread: {of: std, value: 1500}\n", 1), encoding="utf-8"
    )
    result = export("--format", "csv", "--metrics", cwd=dataset)
    assert result.returncode == 0, result.stderr
    rows = [r for r in csv.DictReader(io.StringIO(result.stdout)) if r["record_id"] == SEED_ID]
    assert [(r["run_id"], r["value"], r["spread"]) for r in rows[:2]] == [
        ("cold", "53200", "1500 std"),
        ("warm", "2300", ""),
    ]
    explained = run_cli("explain", str(path.relative_to(dataset)), cwd=dataset).stdout
    assert "ttft_ms (single): 53200 \u00b1 1500 (std)" in explained
    path.write_text(
        text.replace(old, old + "        spread: {of: sd, value: -1}\n", 1), encoding="utf-8"
    )
    invalid = run_cli("validate", str(path.relative_to(dataset)), cwd=dataset)
    assert invalid.returncode == 1 and invalid.stdout.count("KV101") == 2


def test_metrics_parquet_keeps_bounds_and_ranges_typed(dataset: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "metrics.parquet"
    result = export("--format", "parquet", "--metrics", "--output", str(out), cwd=dataset)
    assert result.returncode == 0, result.stderr
    rows_back = pq.read_table(out).to_pylist()
    seed = [row for row in rows_back if row["record_id"] == SEED_ID]
    assert seed[5]["value"] == {"value": None, "about": None, "min": 0.43, "max": 0.45}
    assert seed[7]["value"] == {"value": 23.0, "about": None, "min": None, "max": None}


def test_an_output_that_cannot_be_written_is_refused_by_name(dataset: Path, tmp_path: Path) -> None:
    for output_format, output in (
        ("csv", tmp_path),  # a folder
        ("json", tmp_path / "missing" / "records.json"),
        ("parquet", tmp_path),
        ("datapackage", dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"),
    ):
        result = export("--format", output_format, "-o", str(output), cwd=dataset)
        assert result.returncode == 2, (output_format, result.stderr)
        assert result.stderr.startswith(f"kvrecords: {output}: "), result.stderr
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_an_integer_past_int64_is_kept_exact_in_parquet(
    empty_dataset: Path, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    seed = (
        FIXTURE_DATASET / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    ).read_text()
    stated = "  hardware:\n    accelerator: rtx-5090\n    count: 1\n"
    assert stated in seed
    huge = 10**20  # past int64's 9.2e18, still a valid record
    record = seed.replace(stated, f"  hardware:\n    accelerator: rtx-5090\n    count: {huge}\n")
    (empty_dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml").write_text(
        record
    )
    out = tmp_path / "metrics.parquet"
    done = export("--metrics", "--format", "parquet", "-o", str(out), cwd=empty_dataset)
    assert done.returncode == 0, done.stderr
    column = pq.read_table(out).column("accelerator_count")
    assert str(column.type) == "decimal128(38, 0)" and int(column[0].as_py()) == huge


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://example.org")', '\'=HYPERLINK("http://example.org")'),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("-13%", "-13%"),  # a signed figure a source states is a figure, not a formula
        ("+2.4x", "+2.4x"),
        (-31.2, "-31.2"),  # numbers are written as they are
        ("vLLM blog", "vLLM blog"),
    ],
)
def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_neutralised(
    value: object, cell: str
) -> None:
    assert csv_cell(value) == cell
