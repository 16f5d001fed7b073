"""The dataset for readers: one row per record, as CSV, JSON, JSON Lines or a Markdown table.

Rows carry the measured figures as the records state them and the KV figures recomputed from
the model files, so a reader never depends on a contributor's arithmetic. Export runs on a
dataset that validates without errors; anything else is refused.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.runs import Stated, comparison_unit, stated_comparison
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.dataset.models import load_model_file
from kvrecords.dataset.records import Run, basis_report, headline_figures, runs
from kvrecords.dataset.release import DATASET_VERSION
from kvrecords.kv.geometry import Model, Parallel
from kvrecords.kv.metrics import BY_NAME
from kvrecords.kv.units import format_binary, format_exact, round_up
from kvrecords.runner.reporters import counted

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
        "a figure as the source gives it: a number, an approximate value {about: x}, a range "
        "{min: a, max: b} or a bound {max: x} / {min: x} (in CSV x, ~x, a-b, <=x or >=x)"
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
    Column(
        "decode_tokens_per_s", "measured", "The headline run's decode tokens/s of one sequence."
    ),
    Column(
        "output_tokens_per_s",
        "measured",
        "The headline run's output tokens/s of all sequences together (aggregate).",
    ),
    Column("speedup", "string", "cold_ttft_ms / warm_ttft_ms as written (23x), checked."),
    Column(
        "speedup_techniques",
        "strings",
        "The techniques the speedup's two runs differ by (none: an upgrade, another engine).",
    ),
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


def _whole(value: Fraction | None) -> int | None:
    """Exact bytes as a number: whole bytes stay integers, sub-byte totals round up."""
    return None if value is None else round_up(value)


def _geometry_summary(model: Model) -> str:
    parts = []
    for group in model.groups:
        if isinstance(group, Parallel):
            parts.append(f"{group.layers} parallel ({' + '.join(m.kind for m in group.mixers)})")
        else:
            parts.append(f"{group.layers} {group.kind}")
    return ", ".join(parts)


def record_row(data: dict[str, Any], model: Model, display: str) -> dict[str, Any]:
    """One record's row (the RECORD_COLUMNS, in order) from its data, its model and the path
    it is shown by: the export's rows and the site's table are built by this alone."""
    basis = data["kv_bytes_basis"]
    report = basis_report(model, basis)
    context = basis.get("context_tokens")
    methodology = data["methodology"]
    source, hardware = methodology["source"], methodology["hardware"]
    return {
        "id": data["id"],
        "title": data.get("title"),
        "techniques": data.get("techniques", []),
        "model": data["model"],
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
        **headline_figures(data),
        "publisher": source["publisher"],
        "source_url": source.get("url"),
        "published": source.get("published"),
        "locator": source.get("locator"),
        "confidence": data["confidence"],
        "path": display,
        "dataset_version": DATASET_VERSION,
    }


def rows(root: Path) -> list[dict[str, Any]]:
    """One row per record, sorted by id. The dataset must already validate."""
    models: dict[str, Model] = {}
    result = []
    for record_file in discover(root, "record"):
        document = read_document(record_file.path, record_file.display)
        assert isinstance(document, Document)  # export runs on a validated dataset
        model_id = document.data["model"]
        if model_id not in models:
            models[model_id] = load_model_file(root / "models" / f"{model_id}.yaml")
        result.append(record_row(document.data, models[model_id], record_file.display))
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
    """A cell for CSV and Markdown: ranges as a-b, approximate values as ~x, bounds as <=x or
    >=x, one statistic of a distribution as `median x`, lists joined."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join(_flat(v) for v in value)
    if isinstance(value, dict):
        if "about" in value:
            return f"~{value['about']}"
        if set(value) == {"min", "max"}:
            return f"{value['min']}-{value['max']}"
        ((key, inner),) = value.items()
        return {"max": f"<={inner}", "min": f">={inner}"}.get(key, f"{key} {inner}")
    return str(value)


# A spreadsheet reads a cell that starts with one of these as a formula (CSV injection); a
# signed figure such as -13% or +2.4x is a figure, not a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_SIGNED_FIGURE = re.compile(r"[-+][0-9][0-9.,]*(%|x|pp)?")


def csv_cell(value: Any) -> str:
    """A CSV cell: text a spreadsheet would run as a formula gets a leading apostrophe, as the
    OWASP guidance on CSV injection says; figures are written as they are."""
    cell = _flat(value)
    formula = isinstance(value, str) and cell.startswith(_FORMULA_START)
    return "'" + cell if formula and not _SIGNED_FIGURE.fullmatch(cell) else cell


def to_csv(table: Iterable[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> str:
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(columns)
    for row in table:
        writer.writerow([csv_cell(row[column]) for column in columns])
    return stream.getvalue()


def to_json(table: list[dict[str, Any]]) -> str:
    return json.dumps(table, indent=2, ensure_ascii=False) + "\n"


def to_jsonl(table: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in table)


METRIC_COLUMNS = (
    Column("record_id", "string", "The record's id, kv-efficiency/<slug>.", True),
    Column(
        "figure",
        "integer",
        "The figure's place in its record: the runs' metrics in order, then the comparisons.",
        True,
    ),
    Column("run_id", "string", "The run's id, unique in its record.", True),
    Column("run_label", "string", "What the run is, in a few words.", True),
    Column("role", "string", "baseline, treatment or only.", True),
    Column(
        "kind",
        "string",
        "measured (a metric of the run), or speedup, ratio or change (a comparison the source "
        "states from compared_with to this run, recomputed by the validator).",
        True,
    ),
    Column(
        "metric", "string", "The metric's name from docs/metrics.md (its unit in the name).", True
    ),
    Column("unit", "string", "The metric's unit; x for a speedup or ratio, % for a change.", True),
    Column(
        "statistic",
        "string",
        "single, mean, harmonic_mean, median, p50...p99.9, min, max, total or not_stated.",
        True,
    ),
    Column(
        "value",
        "measured",
        "The value as the source gives it: a number, {about: x}, {min: a, max: b}, or a bound "
        "{max: x} (under x) / {min: x} (over x). Fractions, not percentages.",
    ),
    Column(
        "value_as_written",
        "string",
        "A byte figure with its unit (1.5 GiB), or a comparison as written (23x).",
    ),
    Column("compared_with", "string", "For a comparison: the run it is compared from."),
    Column(
        "recomputed",
        "string",
        "For a comparison whose value is the source's own careless arithmetic (it does not "
        "follow from the runs at its precision): what the two runs give, as written (-27.92%), "
        "and the record's note on it; empty otherwise.",
    ),
    Column(
        "definition", "string", "For a hit rate: what it counts and over what window (tokens/run)."
    ),
    Column("scope", "string", "For engine-reported KV and rates: per_request, pool, per_device..."),
    Column("benchmark", "string", "For a quality metric: the benchmark or corpus."),
    Column(
        "part", "string", "The part of the run a figure covers (a phase, a layer group, a tier)."
    ),
    Column("device", "string", "The device a figure is of, when the run gives one per device."),
    Column("baseline_value", "measured", "For a quality metric: the value without the technique."),
    Column(
        "spread",
        "string",
        "The spread the source gives beside the value: its half-width and what it is (12 std).",
    ),
    Column(
        "context", "string", "Prompt tokens per request: exact, ~x, a-b or a statistic (median x)."
    ),
    Column(
        "concurrency",
        "string",
        "Concurrent requests: a number, unbounded, or empty when not stated.",
    ),
    Column(
        "request_rate",
        "string",
        "Requests per second the load generator sent: a number, inf, a-b for a ramp, or empty.",
    ),
    Column("model", "string", "The model's id (the record's unless the run names another).", True),
    Column("accelerator", "string", "The accelerator's id."),
    Column("accelerator_count", "integer", "Number of accelerators."),
    Column("engine", "string", "The inference engine.", True),
    Column("techniques", "strings", "Techniques on in the run."),
    Column("stated_as", "string", "The source's own words for the figure."),
    Column("dataset_version", "string", "The dataset release the row comes from.", True),
)
METRIC_COLUMN_NAMES = tuple(column.name for column in METRIC_COLUMNS)


def metric_rows(root: Path) -> list[dict[str, Any]]:
    """One row per record x run x metric, and one per comparison. The dataset must validate."""
    return _numbered(_figure_rows(root))


def _figure_rows(root: Path) -> list[dict[str, Any]]:
    result = []
    for record_file in discover(root, "record"):
        document = read_document(record_file.path, record_file.display)
        assert isinstance(document, Document)  # export runs on a validated dataset
        data = document.data
        by_id = {run.id: run for run in runs(data)}
        for run in by_id.values():
            setting = _run_setting(data, run)
            for metric in run.stated.get("metrics", []):
                result.append({**setting, **_metric_cells(metric)})
        for comparison in data.get("comparisons", []):
            to_run = by_id[comparison["to"]]
            stated = str(comparison["stated"])
            value = _comparison_value(stated_comparison(stated))
            cells = dict.fromkeys(
                (
                    "definition",
                    "scope",
                    "benchmark",
                    "part",
                    "device",
                    "baseline_value",
                    "spread",
                    "stated_as",
                )
            )
            cells.update(
                kind=comparison["kind"],
                metric=comparison["metric"],
                unit=comparison_unit(comparison["kind"], comparison["metric"]),
                statistic=comparison["statistic"],
                value=value,
                value_as_written=stated,
                compared_with=comparison["from"],
                recomputed=_source_arithmetic(comparison),
                stated_as=comparison.get("stated_as"),
            )
            result.append({**_run_setting(data, to_run), **cells})
    return result


def _source_arithmetic(comparison: dict[str, Any]) -> str | None:
    """``-27.92% (the table rounds ...)`` for a comparison flagged as the source's own slip."""
    flag = comparison.get("source_arithmetic")
    return None if flag is None else f"{flag['recomputed']} ({flag['note']})"


def _numbered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with its place among its record's figures, in column order."""
    place: dict[str, int] = {}
    numbered = []
    for row in rows:
        place[row["record_id"]] = place.get(row["record_id"], 0) + 1
        cells = {**row, "figure": place[row["record_id"]]}
        numbered.append({name: cells[name] for name in METRIC_COLUMN_NAMES})
    return numbered


def _comparison_value(stated: Stated) -> Any:
    """A comparison's stated value in the shape of a measured value."""
    low, high = (_plain(written.value) for written in (stated.low, stated.high))
    if stated.form == "range":
        return {"min": low, "max": high}
    if stated.form in ("about", "max", "min"):
        return {stated.form: low}
    return low


def _plain(number: Decimal) -> int | float:
    return int(number) if number == number.to_integral_value() else float(number)


def _run_setting(data: dict[str, Any], run: Run) -> dict[str, Any]:
    """The columns that say which configuration a figure was measured in."""
    methodology = data["methodology"]
    stated = run.stated
    hardware = stated.get("hardware") or methodology["hardware"]
    engine = stated.get("engine") or methodology["engine"]
    concurrency, request_rate = (
        stated[key] if key in stated else methodology.get(key)
        for key in ("concurrency", "request_rate")
    )
    return {
        "record_id": data["id"],
        "run_id": run.id,
        "run_label": stated["label"],
        "role": stated["role"],
        "context": _flat(run.context(data)) or None,
        "concurrency": None if concurrency is None else str(concurrency),
        "request_rate": _flat(request_rate) or None,
        "model": stated.get("model", data["model"]),
        "accelerator": hardware.get("accelerator"),
        "accelerator_count": hardware.get("count"),
        "engine": engine["name"],
        "techniques": run.techniques,
        "dataset_version": DATASET_VERSION,
    }


def _metric_cells(metric: dict[str, Any]) -> dict[str, Any]:
    value = metric["value"]
    definition = metric.get("definition")
    return {
        "kind": "measured",
        "metric": metric["name"],
        "unit": BY_NAME[metric["name"]].unit,
        "statistic": metric["statistic"],
        "value": None if isinstance(value, str) else value,
        "value_as_written": value if isinstance(value, str) else None,
        "compared_with": None,
        "recomputed": None,
        "definition": f"{definition['counted_in']}/{definition['window']}" if definition else None,
        "scope": metric.get("scope"),
        "benchmark": metric.get("benchmark"),
        "part": metric.get("part"),
        "device": metric.get("device"),
        "baseline_value": metric.get("baseline_value"),
        "spread": _spread(metric.get("spread")),
        "stated_as": metric.get("stated_as"),
    }


def _spread(spread: dict[str, Any] | None) -> str | None:
    return None if spread is None else f"{_plain(Decimal(str(spread['value'])))} {spread['of']}"


def metric_table(root: Path) -> Table:
    """The per-metric table: ``metric_rows`` with the description of its columns."""
    return Table(
        "metrics",
        "KV-cache efficiency measurements, one per metric",
        "One row per record x run x metric (and per comparison a source states between two "
        "runs), with the run's configuration.",
        METRIC_COLUMNS,
        ("record_id", "figure"),
        metric_rows(root),
    )


def _bytes(value: int | None) -> str:
    return "n/a" if value is None else format_binary(value, ("GiB", "MiB", "KiB"))


def to_markdown(table: list[dict[str, Any]]) -> str:
    """docs/dataset.md: the records grouped by technique (a record appears under each of its own)."""
    lines = [
        "# The dataset",
        "",
        "Generated by `kvrecords export --format markdown` from `records/`; do not edit.",
        "KV figures are recomputed from the model files; measured figures are as the sources give",
        "them (`~` approximate, `a-b` a range, empty when the source does not say).",
        "",
        f"{counted(len(table), 'record')}, {counted(len({r['model'] for r in table}), 'model')}, "
        f"{counted(len({r['accelerator'] for r in table if r['accelerator']}), 'accelerator')}; "
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
