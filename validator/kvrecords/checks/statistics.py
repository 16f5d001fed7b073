"""KV806: the statistics of one figure in one run keep their order.

A run that gives a metric as several statistics (a median and a p99 TTFT, a min, mean and max
rate) holds one distribution: its percentiles rise with the percentile, and the mean lies
between the minimum and the maximum. A p50 above its own p99 is a copying slip, whatever the
geometry says. A range or an "about" value is read on the reading most favourable to the
record (the lower statistic at its lowest, the higher at its highest).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import JsonPath
from kvrecords.problems import Problem, Rule

STATISTIC_ORDER = Rule(
    "KV806",
    "statistic-order",
    "In one run, the statistics of one metric keep their order: min <= p50 (median) <= p90 <= "
    "p95 <= p99 <= max, and min <= mean <= max.",
    "They describe one distribution; a median above its own p99, or a mean above the maximum, "
    "is a slip in copying that no other check sees.",
    "- {name: ttft_ms, statistic: median, value: 315.4}\n"
    "- {name: ttft_ms, statistic: p99, value: 384.4}",
    "- {name: ttft_ms, statistic: median, value: 384.4}\n"
    "- {name: ttft_ms, statistic: p99, value: 315.4}\n"
    "# KV806 ttft_ms median is 384.4, above its p99 315.4 in run 'main'",
)

# Percentiles by rank; the mean is held between min and max only.
_RANKED = {"min": 0, "p50": 50, "median": 50, "p90": 90, "p95": 95, "p99": 99, "max": 100}
_PERCENTILE = re.compile(r"p(\d{1,2}(?:\.\d+)?)")
# What tells two figures of one name apart besides their statistic (a scope, a benchmark, ...).
_NOT_QUALIFIERS = ("value", "statistic", "stated_as", "note", "spread", "engine_accounting")


def check_statistic_order(record: RecordContext) -> Iterator[Problem]:
    """KV806, for every run."""
    for run in record.runs:
        groups: dict[str, list[tuple[str, int, Any]]] = {}
        for index, metric in enumerate(run.stated.get("metrics", [])):
            qualifiers = {k: v for k, v in metric.items() if k not in _NOT_QUALIFIERS}
            groups.setdefault(repr(sorted(qualifiers.items())), []).append(
                (metric.get("statistic") or "", index, metric.get("value"))
            )
        for figures in groups.values():
            if len(figures) > 1:
                name = run.stated["metrics"][figures[0][1]]["name"]
                yield from _out_of_order(record, run.path, name, run.stated["id"], figures)


def _out_of_order(
    record: RecordContext,
    run_path: JsonPath,
    name: str,
    run_id: str,
    figures: list[tuple[str, int, Any]],
) -> Iterator[Problem]:
    known = [
        (statistic, index, bounds)
        for statistic, index, value in figures
        if (bounds := _bounds(value)) is not None
    ]
    for statistic, index, (low, _) in known:
        for other, _, (_, high) in known:
            if _ranks_below(statistic, other) and low > high:
                path = (*run_path, "metrics", index, "value")
                message = (
                    f"{name} {statistic} is {_show(low)}, above its {other} {_show(high)} in run"
                    f" '{run_id}'"
                )
                yield record.problem(STATISTIC_ORDER, path, message)
                break


def _rank(statistic: str) -> float | None:
    if statistic in _RANKED:
        return _RANKED[statistic]
    match = _PERCENTILE.fullmatch(statistic)
    return float(match[1]) if match else None


def _ranks_below(statistic: str, other: str) -> bool:
    """Whether ``statistic`` must not exceed ``other``."""
    if statistic == "mean" or other == "mean":
        return (statistic, other) in (("min", "mean"), ("mean", "max"))
    rank, other_rank = _rank(statistic), _rank(other)
    return rank is not None and other_rank is not None and rank < other_rank


def _bounds(value: Any) -> tuple[Fraction, Fraction] | None:
    """A figure's lowest and highest reading: a number is itself, a range its ends."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Fraction(value), Fraction(value)
    if isinstance(value, dict) and {"min", "max"} <= set(value):
        return Fraction(value["min"]), Fraction(value["max"])
    return None  # an about value, a one-sided bound or a byte quantity: no order to hold


def _show(value: Fraction) -> str:
    return f"{value.numerator:,}" if value.denominator == 1 else f"{float(value):,.6g}"
