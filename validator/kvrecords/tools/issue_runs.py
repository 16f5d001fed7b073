"""The runs of a submission issue's runs table (``kvrecords new --from-issue``).

The form's "Runs and figures" answer may hold a Markdown table, one row per run the source
compares::

    | run         | role      | context | TTFT mean (ms) | hit rate (%) |
    |-------------|-----------|---------|----------------|--------------|
    | caching off | baseline  | 14,400  | 15,900         |              |
    | caching on  | treatment | 14,400  | 6,650          | 43-45        |

The columns ``run`` (the label), ``role`` and ``context`` (tokens) describe the run; every other
column is a metric, named as the vocabulary names it (``ttft_ms``) or in words with its unit in
brackets (``TTFT (s)``, ``decode (tokens/s)``), with a statistic when the header gives one
(``mean``, ``median``, ``p99``). Each cell is read as strictly as the form's headline figures
(``issue_form.figure``); a cell written without a unit takes the column's. A cell or a column
that cannot be read is quoted in a TODO (the run's note, or the record's notes), never guessed.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from kvrecords.kv.metrics import METRICS, Metric
from kvrecords.tools.issue_form import figure, markdown_table, whole_number

ROLES = ("baseline", "treatment", "only")
STATISTIC_TODO = (
    "TODO: each figure's statistic as the source gives it (single for one unqualified "
    "measurement; mean, median or a percentile otherwise)"
)
DEFINITION_TODO = ", and the hit rate's definition (what it counts, over what window)"
UNKNOWN_DEFINITION = {"counted_in": "not_stated", "window": "not_stated"}
_RUN_COLUMNS = {
    "run": "label",
    "label": "label",
    "run label": "label",
    "role": "role",
    "context": "context",
    "context tokens": "context",
    "prompt tokens": "context",
}
_STATISTICS = {
    "mean": "mean",
    "average": "mean",
    "avg": "mean",
    "median": "median",
    "min": "min",
    "max": "max",
    **{p: p for p in ("p50", "p75", "p90", "p95", "p99", "p99.9")},
}
# The metrics a header may name in words, by its words without the unit.
_METRIC_WORDS = {
    "ttft": "ttft_ms",
    "time to first token": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "e2e": "e2e_latency_ms",
    "e2e latency": "e2e_latency_ms",
    "decode": "decode_tokens_per_s",
    "decode rate": "decode_tokens_per_s",
    "prefill": "prefill_tokens_per_s",
    "prefill rate": "prefill_tokens_per_s",
    "output": "output_tokens_per_s",
    "output throughput": "output_tokens_per_s",
    "hit rate": "hit_rate",
}
_KIND_OF_UNIT = {"ms": "ms", "tokens/s": "rate"}
_EMPTY = ("", "-", "–", "n/a")
_METRIC_BY_NAME = {metric.name: metric for metric in METRICS}


class _Column(NamedTuple):
    metric: Metric
    kind: str  # how issue_form.figure reads it: ms, rate or fraction
    unit: str  # given to a cell written without one
    statistic: str | None


class TableRuns(NamedTuple):
    runs: list[dict[str, Any]]  # empty: the answer holds no table
    unread_columns: list[str]  # why each column that names no readable metric was left
    other_lines: list[str]  # the answer's lines outside the table


def table_runs(answer: str) -> TableRuns:
    """The runs of the table in the runs answer, each with its metrics and a note of what is
    left to check."""
    header, rows, other_lines = markdown_table(answer)
    columns: dict[int, str | _Column] = {}
    unread = []
    for index, cell in enumerate(header):
        words = " ".join(cell.lower().replace("(tokens)", "").split())
        if words in _RUN_COLUMNS:
            columns[index] = _RUN_COLUMNS[words]
            continue
        column = _metric_column(cell)
        if isinstance(column, str):
            unread.append(column)
        else:
            columns[index] = column
    labels: dict[str, int] = {}  # how many runs each id was given, so ids stay unique
    runs = [_run(row, columns, len(rows), labels) for row in rows]
    return TableRuns(runs, unread, other_lines)


def _metric_column(header: str) -> _Column | str:
    """The metric a column's header names, or why it names none the form can read."""
    match = re.fullmatch(r"(?P<name>[^()]*?)\s*(?:\((?P<unit>[^()]*)\))?", header.strip())
    name, unit = (match["name"], (match["unit"] or "").strip()) if match else (header, "")
    words = name.lower().split()
    statistic = next((_STATISTICS[w] for w in words if w in _STATISTICS), None)
    words = [w for w in words if w not in _STATISTICS]
    base = re.sub(r"[^a-z0-9]+", "_", " ".join(words)).strip("_")
    unit_key = re.sub(r"[^a-z0-9]+", "_", unit.lower().replace("/", " per ")).strip("_")
    metric = (
        _METRIC_BY_NAME.get(f"{base}_{unit_key}")
        or _METRIC_BY_NAME.get(base)
        or _METRIC_BY_NAME.get(_METRIC_WORDS.get(" ".join(words), ""))
    )
    if metric is None:
        return f"the column {header!r} names no metric (kvrecords metrics lists them)"
    kind = "fraction" if metric.fraction else _KIND_OF_UNIT.get(metric.unit)
    if kind is None:
        return f"the column {header!r} is {metric.name}, in {metric.unit}, which the form does not read"
    return _Column(metric, kind, "" if unit.lower() == metric.unit else unit, statistic)


def _run(
    row: list[str], columns: dict[int, str | _Column], rows: int, labels: dict[str, int]
) -> dict[str, Any]:
    """One row as a run; what cannot be read is quoted in the run's note."""
    notes: list[str] = []
    cells = {what: row[i] for i, what in columns.items() if isinstance(what, str)}
    label = cells.get("label") or ""
    role = cells.get("role", "").lower()
    if role not in ROLES:
        if "role" in cells:
            notes.append(f"TODO: the role {cells['role']!r} is baseline, treatment or only")
        elif rows > 1:
            notes.append("TODO: the run's role (baseline or treatment)")
        role = "only" if rows == 1 else "treatment"
    run: dict[str, Any] = {
        "id": _run_id(label, labels),
        "label": label or "TODO: what this run measured, in a few words",
        "role": role,
    }
    if cells.get("context", "") not in _EMPTY:
        try:
            run["context_tokens"] = whole_number(cells["context"])
        except ValueError as error:
            notes.append(f"TODO: the context {cells['context']!r} cannot be recorded: {error}")
    run["metrics"] = []
    for index, column in columns.items():
        if isinstance(column, str) or row[index] in _EMPTY:
            continue
        cell = row[index]
        written = cell if re.search(r"[a-z%]", cell, re.IGNORECASE) else f"{cell} {column.unit}"
        try:
            value = figure(written.strip(), column.kind)
        except ValueError as error:
            notes.append(
                f"TODO: {column.metric.name} {cell!r} cannot be recorded as it is: {error}"
            )
            continue
        metric: dict[str, Any] = {
            "name": column.metric.name,
            "statistic": column.statistic or "single",
            "value": value,
        }
        if column.metric.name == "hit_rate":
            metric["definition"] = dict(UNKNOWN_DEFINITION)
        run["metrics"].append(metric)
    names = {metric["name"] for metric in run["metrics"]}
    unstated = any(
        column.statistic is None for column in columns.values() if not isinstance(column, str)
    )
    if run["metrics"] and (unstated or "hit_rate" in names):
        todo = STATISTIC_TODO if unstated else "TODO: check each figure against the source"
        notes.append(todo + (DEFINITION_TODO if "hit_rate" in names else ""))
    if notes:
        run["note"] = "; ".join(notes)
    return run


def _run_id(label: str, labels: dict[str, int]) -> str:
    """The label as a run id (``caching off`` is ``caching-off``), unique in the record: a
    repeated label gets ``-2``, ``-3``... (in a form of its own, ``x-2-2``, should ``x-2`` be a
    label too), found in constant time however many rows repeat it."""
    base = "-".join(re.findall(r"[a-z0-9]+", label.lower()))[:50].strip("-") or "run"
    run_id = base
    while run_id in labels:
        labels[run_id] += 1
        run_id = f"{run_id}-{labels[run_id]}"
    labels[run_id] = 1
    return run_id
