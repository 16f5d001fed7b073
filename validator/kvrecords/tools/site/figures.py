"""What the charts and the reader's view plot from a record's runs, worked out once per record.

- A ``RunPoint`` is one run's TTFT, or its decode rate, at the run's context: the run's own
  context, else the record's. A run gives one point per metric: its ``single``, ``median``,
  ``p50`` or ``mean`` figure, in that order, else the first statistic it states (a p99, say).
  Where a context or a value stands on a chart is ``formatting.position``'s rule.
- A ``Change`` is one comparison from a baseline run to a treatment run, as what the treatment
  bought: how many times better it is than the baseline, read from the figure the source
  states (the validator has checked it against the runs where both give the metric). A time or
  a size (the vocabulary's ``lower_is_better``) is better when it falls, any other metric when
  it rises, as a stated speedup already counts it. What a change is credited to is what its
  two arms differ by (``technique_difference``), never the record's techniques alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.runs import Comparison, Stated, stated_comparison
from kvrecords.dataset.records import ARCHITECTURE, BASELINE, Run, run_model, technique_difference
from kvrecords.kv.metrics import BY_NAME
from kvrecords.tools.site.formatting import Position, measured, position
from kvrecords.tools.site.hardware import Placement

CENTRAL = ("single", "median", "p50", "mean", "harmonic_mean", "not_stated")
PLOTTED = ("ttft_ms", "decode_tokens_per_s")


def technique_series(techniques: Sequence[str]) -> str:
    """A run's series on a chart: what it switches on in serving ('kv_offload +
    prefix_caching'), else the model's own design ('sliding_window'), else 'baseline'."""
    on = [t for t in techniques if t != BASELINE]
    serving = [t for t in on if t not in ARCHITECTURE]
    return " + ".join(sorted(serving or on)) or BASELINE


class RunPoint(NamedTuple):
    """One run's figure for a chart of a metric against context."""

    record: str  # the record's page name (slug)
    run_id: str
    run_label: str
    role: str  # baseline, treatment or only
    series: str  # technique_series of the run's techniques
    techniques: tuple[str, ...]  # as the run has them
    metric: str
    statistic: str
    value: Any  # as written
    y: Position
    context: Any  # as written; None when neither the run nor the record states one
    x: Position | None
    class_id: str | None  # the hardware class the run ran on

    def tip(self) -> str:
        """The point's tooltip: the record, the run, the figure and the context as written."""
        unit = BY_NAME[self.metric].unit
        figure = f"{self.metric} ({self.statistic}) {measured(self.value)} {unit}"
        if self.y.how:
            figure += f" ({self.y.how})"
        if self.x is None:
            where = "context not stated"
        else:
            where = f"context {measured(self.context)} tokens"
            if self.x.how:
                where += f" ({self.x.how})"
        techniques = ", ".join(self.techniques) or BASELINE
        return (
            f"{self.record}, run {self.run_id} ({self.run_label}; {techniques}): "
            f"{figure} at {where}"
        )


def chosen_metric(run: Run, name: str) -> dict[str, Any] | None:
    """The run's figure of metric ``name`` a chart or a column shows: its single, median or
    mean figure, in ``CENTRAL``'s order, else the first it states; None when it has none."""
    metrics: list[dict[str, Any]] = [m for m in run.stated.get("metrics", []) if m["name"] == name]
    for statistic in CENTRAL:
        for metric in metrics:
            if metric["statistic"] == statistic:
                return metric
    return metrics[0] if metrics else None


def run_points(
    record: dict[str, Any], slug: str, runs: Sequence[Run], placements: Mapping[str, Placement]
) -> tuple[RunPoint, ...]:
    """Each run's TTFT and decode rate, where the run states them as a number."""
    points = []
    for run in runs:
        for name in PLOTTED:
            metric = chosen_metric(run, name)
            y = position(metric["value"]) if metric else None
            if metric is None or y is None or y.at <= 0:
                continue
            context = run.context(record)
            x = position(context)
            points.append(
                RunPoint(
                    slug,
                    run.id,
                    run.stated["label"],
                    run.stated["role"],
                    technique_series(run.techniques),
                    tuple(run.techniques),
                    name,
                    metric["statistic"],
                    metric["value"],
                    y,
                    context,
                    x if x is not None and x.at > 0 else None,
                    placements[run.id].class_id,
                )
            )
    return tuple(points)


# ---------------------------------------------------------------- what a treatment bought


def metric_family(name: str) -> str:
    """What the change chart colours a comparison by: 'ttft', 'latency' (any other time),
    'rate' (per second) or 'capacity' (sizes, counts, hit rates, quality)."""
    metric = BY_NAME.get(name)
    if name == "ttft_ms":
        return "ttft"
    if metric is not None and metric.unit in ("ms", "s", "ms/token"):
        return "latency"
    if metric is not None and metric.unit.endswith("/s"):
        return "rate"
    return "capacity"


class Change(NamedTuple):
    """One comparison from a baseline run to a treatment run, as what the treatment bought."""

    record: str  # the record's page name (slug)
    kind: str
    metric: str
    statistic: str
    stated: str  # as written: '23x', '-67%', '<=9x'
    from_id: str
    from_label: str
    to_id: str
    to_label: str
    gain: Position  # times better than the baseline
    added: tuple[str, ...]  # the techniques the arms differ by (``technique_difference``)
    baseline_stated: bool  # the baseline run states its techniques
    context: Any  # the treatment run's context as written
    class_id: str | None  # where the treatment run ran
    recomputed: str  # the validator's figure from the runs, '' when stated only
    model: str  # the treatment run's model id
    from_model: str  # the baseline run's
    accelerators: int | None  # the treatment run's accelerator count (None: not stated)
    from_accelerators: int | None  # the baseline run's

    @property
    def accelerators_text(self) -> str:
        """'8', 'not stated', or '1 → 16' when the arms ran on different counts."""

        def shown(count: int | None) -> str:
            return "not stated" if count is None else str(count)

        if self.accelerators == self.from_accelerators:
            return shown(self.accelerators)
        return f"{shown(self.from_accelerators)} → {shown(self.accelerators)}"

    @property
    def family(self) -> str:
        return metric_family(self.metric)

    @property
    def gain_text(self) -> str:
        """'23x', '~7.5x', '2–22x', 'up to 9x', '0.5x' (worse)."""
        words = {"max": "up to ", "min": "at least "}.get(self.gain.bound, "")
        if self.gain.low != self.gain.high:
            return f"{_times(self.gain.low)}–{_times(self.gain.high)}"
        return f"{words}{_times(self.gain.at)}"

    @property
    def verdict(self) -> str:
        """'23x better', or '0.5x: worse than the baseline'."""
        if self.gain.at >= 1:
            return f"{self.gain_text} better"
        return f"{self.gain_text}: worse than the baseline"

    def summary(self) -> str:
        """'ttft_ms (single) 23x: cold → warm'."""
        return f"{self.metric} ({self.statistic}) {self.stated}: {self.from_id} → {self.to_id}"

    def tip(self) -> str:
        recomputed = f"; recomputed {self.recomputed}" if self.recomputed else ""
        return (
            f"{self.record}: {self.metric} ({self.statistic}) {self.kind} {self.stated}"
            f"{recomputed}, from {self.from_id} ({self.from_label}) to {self.to_id} "
            f"({self.to_label}): {self.verdict}"
        )


def _times(value: float) -> str:
    return f"{value:.3g}x"


def gain(kind: str, metric: str, stated: str) -> Position | None:
    """How many times better the treatment is, from the comparison as the source states it;
    None when it cannot be (a difference, or a fall of 100 percent or more in a ratio or
    change)."""
    if kind == "difference":
        return None
    written: Stated = stated_comparison(stated)
    lower_is_better = BY_NAME[metric].lower_is_better if metric in BY_NAME else False
    scale = Fraction(1, 100) if written.percent else Fraction(1)
    ends = []
    for end in (written.low, written.high):
        figure = Fraction(end.value) * scale
        if kind == "change":
            figure += 1
        if figure <= 0:
            return None
        if kind != "speedup" and lower_is_better:
            figure = 1 / figure
        ends.append(float(figure))
    low, high = sorted(ends)
    if written.form in ("max", "min"):
        # a ratio or change of a time turns the bound around: 'at least -80%' is 'up to 5x'
        flips = kind != "speedup" and lower_is_better
        bound = {"max": "min", "min": "max"}[written.form] if flips else written.form
        return Position(low, low, low, bound)
    if low == high:
        return Position(low, low, low)
    found = position({"min": low, "max": high})
    assert found is not None
    return found


def run_count(run: Run, record: dict[str, Any]) -> int | None:
    """How many accelerators a run ran on: its hardware's count, else the record's."""
    hardware = run.stated.get("hardware") or record["methodology"]["hardware"]
    count = hardware.get("count")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def changes(
    slug: str,
    comparisons: Sequence[Comparison],
    runs: Mapping[str, Run],
    record: dict[str, Any],
    placements: Mapping[str, Placement],
    recomputed: Mapping[int, str],
) -> tuple[Change, ...]:
    """Each comparison from a baseline run to a treatment run that can be read as a gain."""
    found = []
    for comparison in comparisons:
        stated = comparison.stated
        start, end = runs.get(stated["from"]), runs.get(stated["to"])
        if start is None or end is None:
            continue
        if (start.stated["role"], end.stated["role"]) != ("baseline", "treatment"):
            continue
        times = gain(stated["kind"], stated["metric"], stated["stated"])
        if times is None:
            continue
        found.append(
            Change(
                slug,
                stated["kind"],
                stated["metric"],
                stated["statistic"],
                stated["stated"],
                start.id,
                start.stated["label"],
                end.id,
                end.stated["label"],
                times,
                technique_difference(start, end, record),
                "techniques" in start.stated,
                end.context(record),
                placements[end.id].class_id,
                recomputed.get(comparison.position, ""),
                run_model(end, record),
                run_model(start, record),
                run_count(end, record),
                run_count(start, record),
            )
        )
    return tuple(found)


def headline_change(changes: Sequence[Change], headline_run: str | None) -> Change | None:
    """The change a record's row shows: one that ends at the headline run, a TTFT change
    before any other, else the record's first."""
    if not changes:
        return None

    def preference(change: Change) -> tuple[bool, bool]:
        return (change.to_id != headline_run, change.metric != "ttft_ms")

    return min(changes, key=preference)
