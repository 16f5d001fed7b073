"""A tool's summary of one measured quantity (its mean, median, percentiles and standard
deviation) turned into figures of the metric vocabulary, and what the reader did not take.

GuideLLM, AIPerf / GenAI-Perf and llm-d's report each give a quantity as a small mapping of
statistics (``{"mean": .., "median": .., "std_dev": .., "percentiles": {"p90": ..}}``); the
readers differ only in the statistic names and where the mapping stands, which they pass in.
"""

from __future__ import annotations

import math
from collections.abc import Container, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

from kvrecords.dataset.bench import BenchFigure, BenchFileError, written

# No benchmark figure comes near this (10^15 ms is 31,700 years; 10^15 tokens, a thousand
# times a large training corpus): a larger one is a corrupted or hostile file.
MAX_FIGURE = 1e15


class Quantity(NamedTuple):
    """How one quantity of a file becomes a metric."""

    metric: str  # a name from kv/metrics.py
    scale: float = 1  # the factor from the file's unit to the metric's (1000: seconds to ms)
    scope: str | None = None  # per_sequence or aggregate, for rates


def number(value: Any, key: str) -> int | float | None:
    """A figure of the file: a finite number, or None where the file writes null. A text, a
    boolean or a collection where a number belongs is refused with its key."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = type(value).__name__ if isinstance(value, dict | list) else repr(value)[:40]
        raise BenchFileError(f"a number belongs here, not {shown}", key=key)
    if isinstance(value, float) and not math.isfinite(value):
        raise BenchFileError(f"{written(value)} is not a figure a benchmark reports", key=key)
    return value


def summary_figures(
    summary: Any,
    key: str,
    quantity: Quantity,
    statistics: Mapping[str, str],
    spread_key: str | None,
    not_imported: list[str],
) -> list[BenchFigure]:
    """The figures of one summary at ``key``: each statistic named in ``statistics`` (the
    tool's name, dotted for a nested one such as ``percentiles.p90``, to the record's), the
    standard deviation at ``spread_key`` as the spread of the mean. Every other entry is added
    to ``not_imported``; a null statistic is one the tool did not compute and is skipped."""
    if not isinstance(summary, dict):
        raise BenchFileError("a mapping of statistics belongs here", key=key)
    figures: list[BenchFigure] = []
    spread = None
    if spread_key is not None and spread_key in summary:
        std = number(summary[spread_key], f"{key}.{spread_key}")
        spread = None if std is None else _scaled(std, quantity.scale, f"{key}.{spread_key}")
    for name, value in _flattened(summary):
        where = f"{key}.{name}"
        if name == spread_key:
            continue
        if name not in statistics:
            if value is not None:
                not_imported.append(
                    skipped(where, value, f"{name} is not among the record's statistics")
                )
            continue
        figure = number(value, where)
        if figure is None:
            continue
        if abs(figure) > MAX_FIGURE:
            raise BenchFileError(
                f"{written(figure)} is not a figure a benchmark reports", key=where
            )
        statistic = statistics[name]
        figures.append(
            BenchFigure(
                quantity.metric,
                statistic,
                _scaled(figure, quantity.scale, where),
                where,
                written(figure),
                spread if statistic == "mean" else None,
                quantity.scope,
            )
        )
    if spread is not None and not any(f.statistic == "mean" for f in figures):
        not_imported.append(
            skipped(f"{key}.{spread_key}", summary[spread_key], "a spread with no mean beside it")
        )
    return figures


def _flattened(summary: dict[str, Any]) -> list[tuple[str, Any]]:
    """``{"percentiles": {"p90": 1}}`` as ``[("percentiles.p90", 1)]``: one level deep, as the
    tools nest their percentiles."""
    items: list[tuple[str, Any]] = []
    for name, value in summary.items():
        if isinstance(value, dict):
            items += [(f"{name}.{inner}", child) for inner, child in value.items()]
        else:
            items.append((name, value))
    return items


def _scaled(value: int | float, scale: float, key: str) -> int | float:
    """The value in the metric's unit: the file's decimal text times the factor, in decimal
    (0.05029489721637218 s is 50.29489721637218 ms, not the double product's ...185)."""
    if scale == 1:  # a plain number: the loader's subclass keeps its text in `raw` only
        return int(value) if isinstance(value, int) else float(value)
    scaled = float(Decimal(written(value)) * Decimal(repr(scale)))
    if not math.isfinite(scaled):
        raise BenchFileError(f"{written(value)} x {scale:g} is beyond a finite double", key=key)
    return scaled


def skipped(key: str, value: Any, why: str) -> str:
    """A ``not_imported`` entry as the package writes them: ``key = raw (why)``, or ``key
    (why)`` for a mapping or list (its whole subtree)."""
    if isinstance(value, dict | list) or value is None:
        return f"{key} ({why})"
    return f"{key} = {written(value)[:40]} ({why})"


def other_entries(
    section: dict[str, Any], prefix: str, read: Container[str], why: str
) -> list[str]:
    """A ``not_imported`` entry for each entry of ``section`` (at ``prefix``) not in ``read``."""
    return [
        skipped(prefix + name, value, why) for name, value in section.items() if name not in read
    ]


def skipped_key(entry: str) -> str:
    """The key of a ``not_imported`` entry (keys hold no spaces)."""
    return entry.split(" ", 1)[0]


def mapping_at(data: Any, *path: str) -> dict[str, Any]:
    """The mapping at ``path`` under ``data``; empty where the file has none (or another type)."""
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def text_or_none(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None
