"""A format-2 record's runs, metrics and comparisons, as its page shows them.

Each run lists the settings it states (the rest are the record's), its metrics with their
statistic and the vocabulary's unit, and the figures it derives, recomputed by the validator's
own functions; each comparison shows the figure as stated beside the recomputation.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.derivations import run_derivations
from kvrecords.checks.runs import Bounds, comparisons
from kvrecords.dataset.records import runs
from kvrecords.kv.metrics import BY_NAME
from kvrecords.kv.units import format_exact
from kvrecords.tools.site.formatting import format_bytes, measured
from kvrecords.tools.site.hardware import hardware_words

# The settings a run may state, in the order a reader wants them, with their labels.
SETTING_LABELS = {
    "model": "model",
    "techniques": "techniques",
    "hardware": "hardware",
    "engine": "engine",
    "kv_dtype": "KV dtype",
    "weights_precision": "weights precision",
    "weights_placement": "weights placement",
    "speculative_decoding": "speculative decoding",
    "concurrency": "concurrency",
    "request_rate": "request rate (requests/s)",
    "context_tokens": "context (tokens)",
    "output_tokens": "output (tokens)",
    "requests": "requests",
    "duration": "duration",
    "workload": "workload",
}
DERIVED_LABELS = {
    "tokens_not_recomputed": "tokens not recomputed",
    "bytes_not_recomputed": "bytes not recomputed",
    "prefill_tokens_per_s_from_ttft": "prefill from TTFT (tokens/s)",
}
ROLE_WORDS = {
    "baseline": "baseline",
    "treatment": "treatment",
    "only": "the one setting measured",
}


class Setting(NamedTuple):
    label: str
    value: str  # '' when the run states it as null
    reason: str  # why it is not stated ('' when it is, or when the record gives no reason)


class MetricRow(NamedTuple):
    name: str
    statistic: str
    value: Any  # as written
    unit: str  # from the metric vocabulary
    meaning: str
    qualifiers: str  # what a hit rate counts, the scope, the benchmark and its baseline
    stated_as: str
    note: str


class DerivedRow(NamedTuple):
    label: str
    stated: Any  # as written; None when the run does not state it
    recomputed: str  # the validator's figure, or '' when it cannot be worked out
    working: str  # the arithmetic, or why it cannot be made


class RunView(NamedTuple):
    id: str
    label: str
    role: str
    headline: bool
    context: str  # the run's own context, else the record's ('' when neither is stated)
    settings: tuple[Setting, ...]
    metrics: tuple[MetricRow, ...]
    derived: tuple[DerivedRow, ...]
    stated_as: str
    note: str

    @property
    def role_words(self) -> str:
        return ROLE_WORDS.get(self.role, self.role)


class ComparisonRow(NamedTuple):
    kind: str
    metric: str
    statistic: str
    from_id: str
    from_label: str
    to_id: str
    to_label: str
    stated: str
    recomputed: str  # '' when it cannot be recomputed
    working: str
    stated_as: str
    source_arithmetic: str  # '' unless the stated figure is the source's own slip

    @property
    def summary(self) -> str:
        """One line for a table cell: 'ttft_ms (single) speedup 23x, cold to warm'."""
        return (
            f"{self.metric} ({self.statistic}) {self.kind} {self.stated}, "
            f"{self.from_id} to {self.to_id}"
        )


def setting_text(key: str, value: Any) -> str:
    """A run setting in words; '' for null."""
    if value is None:
        return ""
    if key == "hardware":
        return hardware_words(value)
    if key == "engine":
        words = [value["name"], value.get("version") or ""]
        return " ".join(part for part in [*words, *value.get("flags", [])] if part)
    if key == "duration":
        unit, amount = next(iter(value.items()))
        return f"{measured(amount)} {unit}"
    if key == "weights_placement":
        stated = value.get("stated_as")
        return f"{value['on']} ({stated})" if stated else str(value["on"])
    if key == "speculative_decoding":
        parts = [value["method"]]
        if value.get("draft_tokens"):
            parts.append(f"{value['draft_tokens']} draft tokens per step")
        if value.get("draft_model"):
            parts.append(f"draft model {value['draft_model']}")
        return ", ".join(parts)
    if key in ("context_tokens", "output_tokens", "requests", "concurrency", "request_rate"):
        return measured(value)
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, dict):  # a KV dtype per K and V or per layer kind
        return ", ".join(f"{name} {inner}" for name, inner in value.items())
    return str(value)


COUNTED_IN = {
    "tokens": "counts tokens",
    "blocks": "counts KV blocks",
    "requests": "counts requests",
    "not_stated": "what it counts is not stated",
}
WINDOW = {
    "run": "over the run",
    "rolling": "over a rolling window",
    "cumulative": "since start",
    "not_stated": "window not stated",
}

# Qualifiers shown as the record names them, after these words
NAMED_AS = (("benchmark", "on "), ("part", "part: "), ("device", "device: "))


def _qualifiers(metric: Mapping[str, Any]) -> str:
    """How to read a metric: what a hit rate counts, the scope, the benchmark, the baseline."""
    parts = []
    definition = metric.get("definition")
    if definition:
        counted_in, window = definition["counted_in"], definition["window"]
        parts += [COUNTED_IN.get(counted_in, counted_in), WINDOW.get(window, window)]
    if metric.get("scope"):
        parts.append(metric["scope"].replace("_", " "))
    parts += [f"{words}{metric[key]}" for key, words in NAMED_AS if metric.get(key)]
    if metric.get("baseline_value") is not None:
        parts.append(f"without the technique {measured(metric['baseline_value'])}")
    spread = metric.get("spread")
    if spread is not None:
        parts.append(f"\u00b1 {measured(spread['value'])} ({SPREAD_WORDS[spread['of']]})")
    return ", ".join(parts)


SPREAD_WORDS = {
    "std": "standard deviation",
    "stderr": "standard error",
    "ci95": "95 % confidence interval",
    "not_stated": "spread not named",
}


def _metric_row(metric: Mapping[str, Any]) -> MetricRow:
    known = BY_NAME.get(metric["name"])
    return MetricRow(
        metric["name"],
        metric["statistic"],
        metric["value"],
        known.unit if known else "",
        known.meaning if known else "",
        _qualifiers(metric),
        metric.get("stated_as", ""),
        metric.get("note", ""),
    )


def _derived_text(field: str, value: Fraction) -> str:
    if field == "bytes_not_recomputed":
        return f"{format_bytes(value)} ({format_exact(value, 0)} B)"
    return format_exact(value, 1 if field == "prefill_tokens_per_s_from_ttft" else 4)


def run_views(context: RecordContext, reasons: Mapping[str, str]) -> tuple[RunView, ...]:
    """Every run of a record, with its settings, metrics and derived figures."""
    derivations: dict[tuple[int, str], DerivedRow] = {}
    for derivation in run_derivations(context):
        if derivation.stated is None and derivation.value is None:
            continue  # the run neither states nor has the inputs for this figure
        recomputed = (
            "" if derivation.value is None else _derived_text(derivation.field, derivation.value)
        )
        derivations[derivation.run.position, derivation.field] = DerivedRow(
            DERIVED_LABELS.get(derivation.field, derivation.field),
            derivation.stated,
            recomputed,
            derivation.working,
        )
    headline = context.data.get("headline_run")
    views = []
    for run in runs(context.data):
        stated = run.stated
        settings = tuple(
            Setting(
                label,
                setting_text(key, stated[key]),
                reasons.get(f"runs[{run.position}].{key}", ""),
            )
            for key, label in SETTING_LABELS.items()
            if key in stated
        )
        views.append(
            RunView(
                run.id,
                stated["label"],
                stated["role"],
                run.id == headline,
                measured(run.context(context.data)),
                settings,
                tuple(_metric_row(metric) for metric in stated.get("metrics", [])),
                tuple(
                    row for (position, _), row in derivations.items() if position == run.position
                ),
                stated.get("stated_as", ""),
                stated.get("note", ""),
            )
        )
    return tuple(views)


class RunGrid(NamedTuple):
    """Every run against every metric it measured: a sweep read at a glance."""

    columns: tuple[tuple[str, str, str], ...]  # metric name, statistic, unit
    rows: tuple[tuple[RunView, tuple[Any, ...]], ...]  # each run, its value per column or None


def run_grid(views: tuple[RunView, ...]) -> RunGrid:
    """The runs' metrics as one table, columns in the order they first appear."""
    columns: dict[tuple[str, str], str] = {}
    for view in views:
        for metric in view.metrics:
            columns.setdefault((metric.name, metric.statistic), metric.unit)
    rows = []
    for view in views:
        values = {(m.name, m.statistic): m.value for m in view.metrics}
        rows.append((view, tuple(values.get(key) for key in columns)))
    return RunGrid(tuple((name, stat, unit) for (name, stat), unit in columns.items()), tuple(rows))


def _bounds_text(bounds: Bounds, kind: str) -> str:
    if kind == "change":
        scaled = Bounds(bounds.low * 100, bounds.high * 100, bounds.approximate)
        return f"{scaled.show()}%"
    return f"{bounds.show()}x"


def comparison_rows(context: RecordContext) -> tuple[ComparisonRow, ...]:
    """Every comparison of a format-2 record, as stated and as recomputed."""
    labels = {run.id: run.stated["label"] for run in runs(context.data)}
    rows = []
    for comparison in comparisons(context):
        stated = comparison.stated
        rows.append(
            ComparisonRow(
                stated["kind"],
                stated["metric"],
                stated["statistic"],
                stated["from"],
                labels.get(stated["from"], ""),
                stated["to"],
                labels.get(stated["to"], ""),
                stated["stated"],
                "" if comparison.value is None else _bounds_text(comparison.value, stated["kind"]),
                comparison.working,
                stated.get("stated_as", ""),
                _source_arithmetic_text(stated),
            )
        )
    return tuple(rows)


def _source_arithmetic_text(stated: dict[str, Any]) -> str:
    """What the record says of a figure the source computed carelessly; '' for none."""
    flag = stated.get("source_arithmetic")
    if flag is None:
        return ""
    return f"the source's own arithmetic: its runs give {flag['recomputed']} ({flag['note']})"
