"""The dataset for readers: one row per record, as CSV, JSON, JSON Lines or a Markdown table.

Rows carry the measured figures as the records state them and the KV figures recomputed from
the model files, so a reader never depends on a contributor's arithmetic. Export runs on a
dataset that validates without errors; anything else is refused.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.dataset.models import load_model_file
from kvrecords.dataset.records import basis_report, headline_figures
from kvrecords.dataset.release import DATASET_VERSION
from kvrecords.kv.units import format_exact, format_in_unit

FORMATS = ("csv", "json", "jsonl", "markdown")


class Column(NamedTuple):
    """One column of an exported table: the typed outputs (Parquet, the data package) read
    its type; ``required`` columns are never empty."""

    name: str
    type: str  # one of COLUMN_TYPES
    description: str
    required: bool = False


COLUMN_TYPES = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "strings": "a list of texts (in CSV joined with ;)",
    "measured": (
        "a figure as the source gives it: a number, an approximate value {about: x} or a range "
        "{min: a, max: b} (in CSV x, ~x or a-b)"
    ),
}
RECORD_COLUMNS = (
    Column("id", "string", "The record's id, kv-efficiency/<slug>.", True),
    Column("title", "string", "One line: technique, model, hardware, context."),
    Column("techniques", "strings", "What the record measures the effect of."),
    Column("model", "string", "The model's id (models/<id>.yaml).", True),
    Column("model_name", "string", "The model's name.", True),
    Column("model_layers", "integer", "The model's layer count.", True),
    Column("model_geometry", "string", "The model's layer groups, by kind.", True),
    Column("accelerator", "string", "The accelerator's id (hardware/<id>.yaml)."),
    Column("accelerator_count", "integer", "Number of accelerators."),
    Column("engine", "string", "The inference engine, lowercase.", True),
    Column("engine_version", "string", "The engine's version, build or commit as stated."),
    Column("weights_precision", "string", "Weight precision or quantization as stated."),
    Column("context_tokens", "integer", "Tokens in context when measured."),
    Column("kv_dtype", "string", "KV element type of the record's basis.", True),
    Column("kv_dtype_stated", "boolean", "Whether the source states the KV dtype.", True),
    Column("layers_counted", "string", "Which layers the KV figures count.", True),
    Column("bytes_per_token", "integer", "KV bytes per token, recomputed from the model file."),
    Column(
        "kv_bytes_at_context",
        "integer",
        "KV bytes at context_tokens, recomputed from the model file (windows capped).",
    ),
    Column(
        "fixed_state_bytes",
        "integer",
        "Per-sequence fixed state (linear attention, Mamba), recomputed from the model file.",
    ),
    Column("measured_ttft_ms_at_ctx", "measured", "Headline time to first token, ms."),
    Column("measured_tps_at_ctx", "measured", "Headline decode tokens per second."),
    Column("cold_ttft_ms", "measured", "TTFT with the prefix not cached, ms."),
    Column("warm_ttft_ms", "measured", "TTFT with the prefix served from cache, ms."),
    Column("hit_rate", "measured", "Fraction of prompt tokens served from cache."),
    Column("decode_tokens_per_s", "measured", "Decode tokens per second as measured."),
    Column("speedup", "string", "cold_ttft_ms / warm_ttft_ms as written (23x), checked."),
    Column("publisher", "string", "Who published the source.", True),
    Column("source_url", "string", "Link to the source."),
    Column("published", "string", "Publication date, YYYY-MM-DD or YYYY-MM."),
    Column("locator", "string", "Section, table or figure the figures come from."),
    Column("confidence", "number", "The curators' confidence in the record, 0 to 1.", True),
    Column("path", "string", "The record's file in the repository.", True),
    Column("dataset_version", "string", "The dataset release the row comes from.", True),
)
COLUMNS = tuple(column.name for column in RECORD_COLUMNS)


class Table(NamedTuple):
    """An exported table: its rows, and what the typed outputs say of it."""

    name: str  # the file stem: records.csv, records.parquet
    title: str
    description: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    rows: list[dict[str, Any]]


def _whole(value: Fraction | None) -> int | float | None:
    """Exact bytes as a number: whole bytes stay integers, sub-byte totals round up."""
    if value is None:
        return None
    return value.numerator if value.denominator == 1 else -(-value.numerator // value.denominator)


def _geometry_summary(model: Any) -> str:
    parts = []
    for group in model.groups:
        if group.kind == "parallel":
            mixers = " + ".join(m.kind for m in group.mixers)
            parts.append(f"{group.layers} parallel ({mixers})")
        else:
            parts.append(f"{group.layers} {group.kind}")
    return ", ".join(parts)


def rows(root: Path) -> list[dict[str, Any]]:
    """One row per record, sorted by id. The dataset must already validate."""
    model_cache: dict[str, Any] = {}
    result = []
    for record_file in discover(root, "record"):
        document = read_document(record_file.path, record_file.display)
        assert isinstance(document, Document)  # export runs on a validated dataset
        data = document.data
        model_id = data["model"]
        if model_id not in model_cache:
            model_cache[model_id] = load_model_file(root / "models" / f"{model_id}.yaml")
        model = model_cache[model_id]
        basis = data["kv_bytes_basis"]
        report = basis_report(model, basis)
        context = basis.get("context_tokens")
        methodology = data["methodology"]
        source = methodology["source"]
        hardware = methodology["hardware"]
        headline = headline_figures(data)
        result.append(
            {
                "id": data["id"],
                "title": data.get("title"),
                "techniques": data.get("techniques", []),
                "model": model_id,
                "model_name": model.name,
                "model_layers": model.num_layers,
                "model_geometry": _geometry_summary(model),
                "accelerator": hardware.get("accelerator"),
                "accelerator_count": hardware.get("count"),
                "engine": methodology["engine"]["name"],
                "engine_version": methodology["engine"].get("version"),
                "weights_precision": methodology.get("weights_precision"),
                "context_tokens": context,
                "kv_dtype": basis["dtype"],
                "kv_dtype_stated": basis["dtype_stated"],
                "layers_counted": basis["layers_counted"],
                "bytes_per_token": _whole(report.bytes_per_token),
                "kv_bytes_at_context": _whole(report.kv_bytes_at_context) if context else None,
                "fixed_state_bytes": _whole(report.fixed_state_bytes),
                "measured_ttft_ms_at_ctx": data["measured_ttft_ms_at_ctx"],
                "measured_tps_at_ctx": data["measured_tps_at_ctx"],
                **headline,
                "publisher": source["publisher"],
                "source_url": source.get("url"),
                "published": source.get("published"),
                "locator": source.get("locator"),
                "confidence": data["confidence"],
                "path": record_file.display,
                "dataset_version": DATASET_VERSION,
            }
        )
    return sorted(result, key=lambda row: row["id"])


def record_table(root: Path) -> Table:
    """The record table: ``rows`` with the description of its columns."""
    return Table(
        "records",
        "KV-cache efficiency records",
        "One row per record: the measured figures as the source gives them, the KV figures "
        "recomputed from the model file, model, hardware, engine, technique, source and "
        "confidence.",
        RECORD_COLUMNS,
        ("id",),
        rows(root),
    )


def _flat(value: Any) -> str:
    """A cell for CSV and Markdown: ranges as a-b, approximate values as ~x, lists joined."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join(_flat(v) for v in value)
    if isinstance(value, dict):
        if "about" in value:
            return f"~{value['about']}"
        return f"{value['min']}-{value['max']}"
    return str(value)


def to_csv(table: Iterable[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> str:
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(columns)
    for row in table:
        writer.writerow([_flat(row[column]) for column in columns])
    return stream.getvalue()


def to_json(table: list[dict[str, Any]]) -> str:
    return json.dumps(table, indent=2, ensure_ascii=False) + "\n"


def to_jsonl(table: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in table)


def _bytes(value: int | None) -> str:
    if value is None:
        return "n/a"
    unit = "GiB" if value >= 1024**3 else "MiB" if value >= 1024**2 else "KiB"
    return format_in_unit(value, unit, 2)


def to_markdown(table: list[dict[str, Any]]) -> str:
    """docs/dataset.md: the records grouped by technique (a record appears under each of its own)."""
    lines = [
        "# The dataset",
        "",
        "Generated by `kvrecords export --format markdown` from `records/`; do not edit.",
        "KV figures are recomputed from the model files; measured figures are as the sources give",
        "them (`~` approximate, `a-b` a range, empty when the source does not say).",
        "",
        f"{len(table)} records, {len({r['model'] for r in table})} models, "
        f"{len({r['accelerator'] for r in table if r['accelerator']})} accelerators; "
        f"dataset version {DATASET_VERSION} (CHANGELOG.md).",
    ]
    techniques = sorted({t for row in table for t in row["techniques"]})
    for technique in techniques:
        lines += [
            "",
            f"## {technique.replace('_', ' ')}",
            "",
            "| record | model | hardware | engine | context | TTFT ms (cold / warm) | decode tok/s | hit rate | KV B/token | KV at context | confidence |",
            "|---|---|---|---|---:|---|---:|---|---:|---:|---:|",
        ]
        for row in (r for r in table if technique in r["techniques"]):
            hardware = row["accelerator"] or "not stated"
            if row["accelerator_count"]:
                hardware = f"{row['accelerator_count']}x {hardware}"
            ttft = f"{_flat(row['cold_ttft_ms']) or '-'} / {_flat(row['warm_ttft_ms']) or '-'}"
            if row["cold_ttft_ms"] is None and row["warm_ttft_ms"] is None:
                ttft = _flat(row["measured_ttft_ms_at_ctx"]) or "-"
            decode = _flat(row["measured_tps_at_ctx"]) or _flat(row["decode_tokens_per_s"]) or "-"
            per_token = row["bytes_per_token"]
            lines.append(
                f"| [{row['id'].removeprefix('kv-efficiency/')}](../{row['path']}) | {row['model']} "
                f"| {hardware} | {row['engine']} | {_context(row['context_tokens'])} | {ttft} | {decode} "
                f"| {_flat(row['hit_rate']) or '-'} "
                f"| {format_exact(per_token) if per_token is not None else 'n/a'} "
                f"| {_bytes(row['kv_bytes_at_context'])} | {row['confidence']} |"
            )
    return "\n".join(lines) + "\n"


def _context(tokens: int | None) -> str:
    return "-" if tokens is None else f"{tokens:,}"


RENDERERS = {"csv": to_csv, "json": to_json, "jsonl": to_jsonl, "markdown": to_markdown}
