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
from typing import Any

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.dataset.models import load_model_file
from kvrecords.dataset.records import basis_report
from kvrecords.dataset.release import DATASET_VERSION
from kvrecords.kv.units import format_exact, format_in_unit

FORMATS = ("csv", "json", "jsonl", "markdown")
COLUMNS = (
    "id",
    "title",
    "techniques",
    "model",
    "model_name",
    "model_layers",
    "model_geometry",
    "accelerator",
    "accelerator_count",
    "engine",
    "engine_version",
    "weights_precision",
    "context_tokens",
    "kv_dtype",
    "kv_dtype_stated",
    "layers_counted",
    "bytes_per_token",
    "kv_bytes_at_context",
    "fixed_state_bytes",
    "measured_ttft_ms_at_ctx",
    "measured_tps_at_ctx",
    "cold_ttft_ms",
    "warm_ttft_ms",
    "hit_rate",
    "decode_tokens_per_s",
    "speedup",
    "publisher",
    "source_url",
    "published",
    "locator",
    "confidence",
    "path",
    "dataset_version",
)


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
        results = data.get("results", {})
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
                "cold_ttft_ms": results.get("cold_ttft_ms"),
                "warm_ttft_ms": results.get("warm_ttft_ms"),
                "hit_rate": results.get("hit_rate"),
                "decode_tokens_per_s": results.get("decode_tokens_per_s"),
                "speedup": results.get("speedup"),
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


def to_csv(table: Iterable[dict[str, Any]]) -> str:
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in table:
        writer.writerow([_flat(row[column]) for column in COLUMNS])
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
