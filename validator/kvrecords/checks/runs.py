"""KV801-KV803, and KV402 per comparison: a record's runs, metrics and comparisons.

Every figure a source measured stands in a run's ``metrics``; these checks hold each to the
vocabulary and to what any run can measure, tie the record's card to its headline run, and
recompute every comparison (checks/derivations.py recomputes what a run derives).

About 640 lines on purpose: the metric checks and the comparisons read the same value bounds
and statistics of a metric, which a split would leave each half importing from the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext, value_at
from kvrecords.checks.measurements import (
    SPEEDUP,
    source_slip,
)
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import Measured, Run, measured, run_by_id
from kvrecords.kv.metrics import BY_NAME, nearest_metric
from kvrecords.kv.units import (
    Written,
    format_exact,
    format_number,
    parse_byte_quantity,
    rounds_to,
)
from kvrecords.problems import Problem, Rule

RUN_REFERENCES = Rule(
    "KV801",
    "run-references",
    "Run ids are unique in a record; headline_run and each comparison's from and to name its "
    "runs, and a comparison compares two different runs; when one of them gives the compared "
    "metric at its statistic, so does the other, or not_recomputed says why not.",
    "Comparisons, the card and every export join on run ids; a dangling or repeated id "
    "silently attaches a figure to the wrong configuration. A comparison whose one run has "
    "the figure and the other not names a wrong run, metric or statistic, and would otherwise "
    "pass unchecked as 'stated only'; a source that gives one figure only through the ratio "
    "says so in not_recomputed.",
    "runs:\n  - {id: cold, ...}\n  - {id: warm, ...}\nheadline_run: warm",
    "headline_run: hot\n# KV801 headline_run names run 'hot'; the runs are cold, warm",
)

METRIC = Rule(
    "KV802",
    "metric",
    "Each metric is named from the vocabulary (docs/metrics.md) and given once per statistic in "
    "a run, unless a qualifier tells the figures apart (definition, scope, benchmark, part, "
    "device); a fraction is at most 1, a time at most a year and a rate at most 10^12 per second; "
    "hit_rate carries its definition, engine-reported KV figures "
    "their scope and quality metrics their benchmark; only byte metrics are written with a unit.",
    "One name per figure is what lets export, the site and a reader compare records; an "
    "ad-hoc name (`mean_ttft_ms`) or a percentage where a fraction is meant would be a "
    "different column or a figure off by a factor of 100. No run lasts a year or "
    "reaches 10^12 tokens or requests a second (a million accelerators at a million each): "
    "a figure beyond is a slip of units or exponent, whatever the hardware.",
    "metrics:\n  - {name: ttft_ms, statistic: mean, value: 2300}",
    "metrics:\n  - {name: mean_ttft_ms, statistic: mean, value: 2300}\n"
    "# KV802 unknown metric 'mean_ttft_ms': did you mean ttft_ms? (the statistic goes in "
    "statistic; see docs/metrics.md)",
)

HEADLINE = Rule(
    "KV803",
    "headline",
    "measured_ttft_ms_at_ctx equals one of the headline run's ttft_ms values and "
    "measured_tps_at_ctx one of its decode_tokens_per_s (else output_tokens_per_s) values; "
    "each is null when that run has none.",
    "The card's two figures are what a reader scans; they must be the source's figures for "
    "the configuration the record is about, not a number from nowhere.",
    "headline_run: warm\nmeasured_ttft_ms_at_ctx: 2300   (run warm: ttft_ms 2300)",
    "measured_ttft_ms_at_ctx: 2000\n# KV803 measured_ttft_ms_at_ctx is 2,000; headline run "
    "'warm' gives ttft_ms 2,300",
)

_DECODE_METRICS = ("decode_tokens_per_s", "output_tokens_per_s")


class Bounds(NamedTuple):
    """A measured value as an interval: equal ends for a number or an ``about``."""

    low: Fraction
    high: Fraction
    approximate: bool = False

    def show(self) -> str:
        if self.low == self.high:
            return ("~" if self.approximate else "") + format_exact(self.low)
        return f"{format_exact(self.low)}-{format_exact(self.high)}"


def value_bounds(record: RecordContext, path: JsonPath) -> Bounds | str:
    """The value at ``path`` as an interval, or why it cannot serve as an input."""
    value = value_at(record.data, path)
    if isinstance(value, dict):
        if "about" in value:
            about = record.exact((*path, "about"))
            return Bounds(about, about, approximate=True)
        if set(value) == {"min", "max"}:
            return Bounds(record.exact((*path, "min")), record.exact((*path, "max")))
        return f"{dotted(path)} is a bound"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = record.exact(path)
        return Bounds(number, number)
    quantity = parse_byte_quantity(value) if isinstance(value, str) else None
    if quantity is not None:  # a size as the source printed it: '4352.00 MiB', in bytes
        size = Fraction(quantity.number.value) * quantity.unit_bytes
        return Bounds(size, size)
    return f"{dotted(path)} is not a number"


# ---- KV801: references ------------------------------------------------------------------------


def check_references(record: RecordContext) -> Iterator[Problem]:
    """KV801: unique run ids; headline_run, from and to name runs; from differs from to."""
    seen: set[str] = set()
    for run in record.runs:
        if run.id in seen:
            message = f"run id '{run.id}' is used twice; each run needs its own id"
            yield record.problem(RUN_REFERENCES, (*run.path, "id"), message)
        seen.add(run.id)
    known = ", ".join(run_by_id(record.data)) or "none"
    headline = record.data.get("headline_run")
    if headline is not None and headline not in seen:
        message = f"headline_run names run '{headline}'; the runs are {known}"
        yield record.problem(RUN_REFERENCES, ("headline_run",), message)
    for index, comparison in enumerate(record.data.get("comparisons", [])):
        for end in ("from", "to"):
            if comparison[end] not in seen:
                message = f"comparison {end} names run '{comparison[end]}'; the runs are {known}"
                yield record.problem(RUN_REFERENCES, ("comparisons", index, end), message)
        if comparison["from"] == comparison["to"]:
            message = f"comparison compares run '{comparison['to']}' with itself"
            yield record.problem(RUN_REFERENCES, ("comparisons", index, "to"), message)
        yield from _compared_figures(record, index, comparison)


def _compared_figures(
    record: RecordContext, index: int, comparison: dict[str, Any]
) -> Iterator[Problem]:
    """A comparison whose one run gives the metric and the other not: a wrong run, metric or
    statistic, unless not_recomputed says the source gives that figure only as the ratio."""
    by_id = run_by_id(record.data)
    ends = [by_id.get(comparison[end]) for end in ("from", "to")]
    if None in ends:
        return
    metric, statistic = comparison["metric"], comparison["statistic"]
    for end, run in zip(("from", "to"), ends, strict=True):
        assert run is not None
        several = [
            m
            for m in run.stated.get("metrics", [])
            if (m["name"], m["statistic"]) == (metric, statistic)
        ]
        if len(several) > 1:
            message = (
                f"run '{run.id}' gives {len(several)} figures of {metric} ({statistic}), told "
                "apart by their qualifiers; a comparison cannot say which: compare runs that "
                "give one"
            )
            yield record.problem(RUN_REFERENCES, ("comparisons", index, end), message)
            return
    given = [measured(run, metric, statistic) is not None for run in ends if run is not None]
    reason = comparison.get("not_recomputed")
    path: JsonPath = ("comparisons", index)
    if all(given) and reason is not None:
        message = (
            f"both runs give {metric} ({statistic}), so the comparison is recomputed: "
            "not_recomputed does not apply"
        )
        yield record.problem(RUN_REFERENCES, (*path, "not_recomputed"), message)
    elif any(given) and not all(given) and reason is None:
        end = ("from", "to")[given.index(False)]
        lacking, other = (ends[given.index(False)], ends[given.index(True)])
        assert lacking is not None and other is not None
        others = [m["statistic"] for m in lacking.stated.get("metrics", []) if m["name"] == metric]
        gives = f" (it gives {metric} as {', '.join(others)})" if others else ""
        message = (
            f"comparison {end} names run '{lacking.id}', which states no {metric} "
            f"({statistic}){gives}; run '{other.id}' does: add the figure, or say in "
            "not_recomputed why the source gives it only through this comparison"
        )
        yield record.problem(RUN_REFERENCES, (*path, end), message)


# ---- KV802: metrics ---------------------------------------------------------------------------


def check_metrics(record: RecordContext) -> Iterator[Problem]:
    """KV802: each metric from the vocabulary, once per statistic, with what it needs."""
    for run in record.runs:
        given: set[tuple[str, str, tuple[str, ...]]] = set()
        for index, metric in enumerate(run.stated.get("metrics", [])):
            item = Measured(run, index, metric)
            yield from _check_metric(record, item)
            key = (metric["name"], metric["statistic"], qualifier(metric))
            if key in given:
                message = (
                    f"{metric['name']} ({metric['statistic']}) is given twice in run '{run.id}'; "
                    "tell the figures apart with part, device or benchmark, or give the second "
                    "its own run"
                )
                yield record.problem(METRIC, (*item.path, "name"), message)
            given.add(key)
    for index, comparison in enumerate(record.data.get("comparisons", [])):
        if comparison["metric"] not in BY_NAME:
            path: JsonPath = ("comparisons", index, "metric")
            yield record.problem(METRIC, path, _unknown(comparison["metric"]))


def qualifier(metric: dict[str, Any]) -> tuple[str, ...]:
    """What tells two figures of one metric and statistic in one run apart: a hit rate's
    definition, a size's scope, a score's benchmark, the part of the run or the device it
    covers, the note of a reading taken at a stated point."""
    known = BY_NAME.get(metric["name"])
    noted = known is not None and known.needs == "note"
    return tuple(
        str(metric.get(key))
        for key in ("definition", "scope", "benchmark", "part", "device")
        + (("note",) if noted else ())
    )


def _unknown(name: str) -> str:
    nearest = nearest_metric(name)
    hint = f": did you mean {nearest}?" if nearest else ""
    return f"unknown metric '{name}'{hint} (the statistic goes in statistic; see docs/metrics.md)"


def _check_metric(record: RecordContext, item: Measured) -> Iterator[Problem]:
    metric = BY_NAME.get(item.stated["name"])
    if metric is None:
        yield record.problem(METRIC, (*item.path, "name"), _unknown(item.stated["name"]))
        return
    if metric.needs and metric.needs not in item.stated:
        message = f"{metric.name} needs {metric.needs}: {_NEEDS[metric.needs]}"
        yield record.problem(METRIC, (*item.path, "name"), message)
    value = item.stated["value"]
    if isinstance(value, str) and not metric.byte_valued:
        message = f"{metric.name} is in {metric.unit}: write the number, without a unit"
        yield record.problem(METRIC, item.value_path, message)
    for path, number in _numbers(value, item.value_path):
        if number < 0 or (number == 0 and metric.positive):
            sign = "negative" if number < 0 else "zero"
            message = f"{metric.name} is {format_number(number)}; it cannot be {sign}"
            yield record.problem(METRIC, path, message)
        elif metric.unit in CEILINGS and number > CEILINGS[metric.unit][0]:
            limit, what = CEILINGS[metric.unit]
            message = (
                f"{metric.name} is {format_number(number)} {metric.unit}, above "
                f"{format_number(limit)} {metric.unit} ({what}): no run reaches it"
            )
            yield record.problem(METRIC, path, message)
        elif metric.fraction and number > 1:
            message = (
                f"{metric.name} is {format_number(number)}, above 1: it is a fraction, "
                f"write {format_exact(Fraction(Decimal(str(number))) / 100)}"
            )
            yield record.problem(METRIC, path, message)


# The most any run can measure, stated once: a time of a year, a rate of 10^12 a second.
_YEAR_S = 365 * 24 * 3600
_RATE = (10**12, "a million accelerators at a million a second")
CEILINGS: dict[str, tuple[int, str]] = {
    "ms": (_YEAR_S * 1000, "a year"),
    "s": (_YEAR_S, "a year"),
    "ms/token": (_YEAR_S * 1000, "a year"),
    "tokens/s": _RATE,
    "requests/s": _RATE,
    "GB/s": _RATE,
}

_NEEDS = {
    "definition": "what it counts (counted_in: tokens, blocks or requests) and over what "
    "window (window: run, rolling or cumulative); not_stated where the source is silent",
    "scope": "per_request, pool or per_device, as the engine printed it",
    "benchmark": "the benchmark or corpus the score is on",
    "note": "the latency objective it is measured against, or when in the run it was taken, "
    "as the source gives it",
}


def _numbers(value: Any, path: JsonPath) -> Iterator[tuple[JsonPath, int | float]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _numbers(inner, (*path, key))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


# ---- KV803: the card and the headline run -----------------------------------------------------


def check_headline(record: RecordContext) -> Iterator[Problem]:
    """KV803: the card's TTFT and decode rate are the headline run's."""
    headline = run_by_id(record.data).get(record.data.get("headline_run", ""))
    if headline is None:
        return  # KV801 reports it
    yield from _tie(record, headline, "measured_ttft_ms_at_ctx", ("ttft_ms",))
    yield from _tie(record, headline, "measured_tps_at_ctx", _DECODE_METRICS)


def _tie(
    record: RecordContext, headline: Run, field: str, names: tuple[str, ...]
) -> Iterator[Problem]:
    card = record.data.get(field)
    given = [
        (metric["name"], metric["value"])
        for name in names
        for metric in headline.stated.get("metrics", [])
        if metric["name"] == name
    ]
    # The card holds a number, {about} or a range; a bound ("over 50K tokens/s") has no place
    # on it, so a headline run that gives only bounds leaves the card null.
    cardable = [(name, value) for name, value in given if not _is_bound(value)]
    if card is None:
        if cardable:
            name, value = cardable[0]
            message = (
                f"{field} is null; headline run '{headline.id}' gives {name} {show_figure(value)}: "
                "state it"
            )
            yield record.problem(HEADLINE, (field,), message)
        return
    if any(card == value for _, value in given):
        return
    if given:
        shown = " or ".join(f"{name} {show_figure(value)}" for name, value in given)
        message = f"{field} is {show_figure(card)}; headline run '{headline.id}' gives {shown}"
    else:
        message = (
            f"{field} is {show_figure(card)}; headline run '{headline.id}' has no "
            f"{' or '.join(names)}: add the figure to the run, or make this null"
        )
    yield record.problem(HEADLINE, (field,), message)


def _is_bound(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and set(value) <= {"min", "max"}


def show_figure(value: Any) -> str:
    """A stated figure as messages show it: a number grouped, a range as its parts."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {format_number(inner)}" for key, inner in value.items())
    return format_number(value) if isinstance(value, (int, float)) else str(value)


# ---- KV402: comparisons -----------------------------------------------------------------------


class Comparison(NamedTuple):
    """A comparison between two runs, recomputed where both runs give the metric."""

    position: int
    stated: dict[str, Any]
    value: Bounds | None  # None when it cannot be recomputed
    working: str  # "53,200 / 2,300" or why it is not recomputed
    # where a run gives a bound ("over 50K tokens/s"): the one-sided interval the comparison
    # can take (None: unbounded on that side), and its working
    limits: tuple[Fraction | None, Fraction | None] | None = None
    limits_working: str = ""

    @property
    def path(self) -> JsonPath:
        return ("comparisons", self.position)


def comparisons(record: RecordContext) -> list[Comparison]:
    """Every comparison with its recomputation (explain renders them)."""
    by_id = run_by_id(record.data)
    found = []
    for index, stated in enumerate(record.data.get("comparisons", [])):
        found.append(_comparison(record, index, stated, by_id))
    return found


def _comparison(
    record: RecordContext, index: int, stated: dict[str, Any], by_id: dict[str, Run]
) -> Comparison:
    ends: list[Bounds] = []
    sides: list[_Side] = []
    one_sided = ""
    for end in ("from", "to"):
        run = by_id.get(stated[end])
        if run is None:
            return Comparison(index, stated, None, f"run '{stated[end]}' does not exist")
        item = measured(run, stated["metric"], stated["statistic"])
        if item is None:
            reason = f"run '{run.id}' states no {stated['metric']} ({stated['statistic']})"
            return Comparison(index, stated, None, f"stated only: {reason}")
        bounds = value_bounds(record, item.value_path)
        side = _side(record, item.value_path, bounds)
        if side is None:
            assert isinstance(bounds, str)
            return Comparison(index, stated, None, f"stated only: {bounds}")
        sides.append(side)
        if isinstance(bounds, str):
            one_sided = one_sided or bounds
        else:
            ends.append(bounds)
    if one_sided:
        limits, working = _open_comparison(stated, *sides)
        return Comparison(index, stated, None, f"stated only: {one_sided}", limits, working)
    first, second = ends
    metric = BY_NAME.get(stated["metric"])
    kind = stated["kind"]
    if kind != "difference" and (first.low <= 0 or second.low <= 0):
        return Comparison(index, stated, None, "stated only: a value is zero")
    if kind == "difference":
        # to - from in the metric's unit; a fraction's difference is in percentage points
        scale = 100 if metric is not None and metric.fraction else 1
        value = Bounds((second.low - first.high) * scale, (second.high - first.low) * scale)
        working = f"{second.show()} - {first.show()}" + (" (x 100 points)" if scale != 1 else "")
    elif kind == "change":
        value = Bounds(
            (second.low - first.high) / first.high, (second.high - first.low) / first.low
        )
        working = f"({second.show()} - {first.show()}) / {first.show()}"
    elif kind == "speedup" and metric is not None and metric.lower_is_better:
        value = Bounds(first.low / second.high, first.high / second.low)
        working = f"{first.show()} / {second.show()}"
    else:
        value = Bounds(second.low / first.high, second.high / first.low)
        working = f"{second.show()} / {first.show()}"
    approximate = first.approximate or second.approximate
    return Comparison(index, stated, value._replace(approximate=approximate), working)


class _Side(NamedTuple):
    """One run's figure as a possibly one-sided interval (None: unbounded that way)."""

    low: Fraction | None
    high: Fraction | None
    shown: str


def _side(record: RecordContext, path: JsonPath, bounds: Bounds | str) -> _Side | None:
    """A figure as an interval: a number or range as itself, a bound ({max: x}: 'under x',
    {min: x}: 'over x') open on one side; None when it is no number."""
    if isinstance(bounds, Bounds):
        return _Side(bounds.low, bounds.high, bounds.show())
    value = value_at(record.data, path)
    if isinstance(value, dict) and set(value) == {"max"}:
        high = record.exact((*path, "max"))
        return _Side(Fraction(0), high, f"at most {format_exact(high)}")
    if isinstance(value, dict) and set(value) == {"min"}:
        low = record.exact((*path, "min"))
        return _Side(low, None, f"at least {format_exact(low)}")
    return None


def _quotient(top: _Side, bottom: _Side) -> tuple[Fraction | None, Fraction | None]:
    """top / bottom over the intervals (every figure compared is at least 0)."""
    low = None if top.low is None else (0 if bottom.high is None else top.low / bottom.high)
    high = None if top.high is None or not bottom.low else top.high / bottom.low
    return (Fraction(low) if low is not None else Fraction(0)), high


def _open_comparison(
    stated: dict[str, Any], first: _Side, second: _Side
) -> tuple[tuple[Fraction | None, Fraction | None], str]:
    """What a comparison can be when a run gives only a bound, in the stated form's unit."""
    kind, metric = stated["kind"], BY_NAME.get(stated["metric"])
    if kind == "difference":
        scale = 100 if metric is not None and metric.fraction else 1
        low = None if second.low is None or first.high is None else second.low - first.high
        high = None if second.high is None or first.low is None else second.high - first.low
        limits = (
            None if low is None else low * scale,
            None if high is None else high * scale,
        )
        return limits, f"{second.shown} - {first.shown}"
    if kind == "speedup" and metric is not None and metric.lower_is_better:
        return _quotient(first, second), f"{first.shown} / {second.shown}"
    low, high = _quotient(second, first)
    working = f"{second.shown} / {first.shown}"
    if kind == "change":  # a change in percent
        return (
            (low - 1) * 100 if low is not None else None,
            (high - 1) * 100 if high is not None else None,
        ), f"({working} - 1) x 100"
    return (low, high), working


class Stated(NamedTuple):
    """A comparison as written: ``23x``, ``~23x``, ``2.35-3.47x``, ``<=4x`` (up to),
    ``>=2x`` (at least), ``-95.7%``, and a difference in its unit: ``+20pp``, ``-120 ms``."""

    low: Written
    high: Written
    form: str  # "exact", "about", "range", "max" or "min"
    unit: str  # "x", "%", "pp" (percentage points) or the metric's unit

    @property
    def percent(self) -> bool:
        return self.unit == "%"

    def half_step(self) -> Fraction:
        decimals = max(self.low.decimals, self.high.decimals)
        return Fraction(1, 2 * 10**decimals)


def stated_comparison(text: str) -> Stated:
    """A comparison's ``stated`` text, read (the schema's pattern admits only these forms)."""
    form = "exact"
    for prefix, name in (("~", "about"), ("<=", "max"), (">=", "min")):
        if text.startswith(prefix):
            form, text = name, text[len(prefix) :]
    number_end = max(i for i, character in enumerate(text) if character.isdigit()) + 1
    body, unit = text[:number_end], text[number_end:].strip()
    sign = "-" if body.startswith("-") else ""
    body = body.lstrip("+-")
    low_text, _, high_text = body.partition("-")
    if high_text:
        form = "range"
    low = Written(sign + low_text.replace(",", ""))
    high = Written(sign + (high_text or low_text).replace(",", ""))
    return Stated(low, high, form, unit)


def check_comparisons(record: RecordContext) -> Iterator[Problem]:
    """KV402: each comparison agrees with its runs at the precision written (a figure flagged
    as the source's own arithmetic is KV407's)."""
    for comparison in comparisons(record):
        if comparison.limits is not None:
            yield from _check_open_comparison(record, comparison)
        if comparison.value is None:
            continue
        stated = stated_comparison(comparison.stated["stated"])
        unit = comparison_unit(comparison.stated["kind"], comparison.stated["metric"])
        if stated.unit != unit and not (unit == "x" and stated.percent):
            message = (
                f"{comparison.stated['kind']} is {comparison.stated['stated']}; a "
                f"{comparison.stated['kind']} of {comparison.stated['metric']} is written in "
                f"{unit}"
            )
            yield record.problem(SPEEDUP, (*comparison.path, "stated"), message)
            continue
        scale = 100 if stated.percent else 1
        low, high = comparison.value.low * scale, comparison.value.high * scale
        if "source_arithmetic" in comparison.stated:
            continue  # the source's own figure: KV407 (checks/source_arithmetic.py)
        if comparison_agrees(stated, low, high, comparison.value.approximate):
            continue
        suffix = unit_suffix("%" if stated.percent else unit)
        message = (
            f"{comparison.stated['kind']} is {comparison.stated['stated']}; "
            f"{comparison.working} = {shown_recomputed(stated, low, high)}{suffix}"
        )
        if stated.form == "exact" and source_slip(stated.low, low, high) is None:
            message += (
                f"; if the source itself wrote {comparison.stated['stated']} from these "
                "figures, keep it and flag it with source_arithmetic (docs/conventions.md)"
            )
        yield record.problem(SPEEDUP, (*comparison.path, "stated"), message)


def _check_open_comparison(record: RecordContext, comparison: Comparison) -> Iterator[Problem]:
    """KV402 where a run gives a bound: the stated figure, at its written precision, must be
    a value the bound leaves open ('over 50K tokens/s' from a stated 40K is over 1.25x)."""
    assert comparison.limits is not None
    stated = stated_comparison(comparison.stated["stated"])
    unit = comparison_unit(comparison.stated["kind"], comparison.stated["metric"])
    scale = 100 if stated.percent and unit == "x" else 1  # a ratio written as a percent
    half = stated.half_step() * (2 if stated.form == "about" else 1)
    stated_low = None if stated.form == "max" else Fraction(stated.low.value) - half
    stated_high = None if stated.form == "min" else Fraction(stated.high.value) + half
    low, high = (None if end is None else end * scale for end in comparison.limits)
    apart = (high is not None and stated_low is not None and stated_low > high) or (
        low is not None and stated_high is not None and stated_high < low
    )
    if not apart:
        return
    suffix = unit_suffix("%" if stated.percent else unit)
    if low is not None and high is not None:
        shown = f"{format_exact(low, 4)} to {format_exact(high, 4)}{suffix}"
    elif low is not None:
        shown = f"at least {format_exact(low, 4)}{suffix}"
    else:
        assert high is not None
        shown = f"at most {format_exact(high, 4)}{suffix}"
    message = (
        f"{comparison.stated['kind']} is {comparison.stated['stated']}; "
        f"{comparison.limits_working} = {shown}"
    )
    yield record.problem(SPEEDUP, (*comparison.path, "stated"), message)


def comparison_unit(kind: str, metric_name: str) -> str:
    """What a comparison is written in: x for a speedup or ratio (or % for any change), the
    metric's unit for a difference, pp (percentage points) for a fraction's."""
    if kind == "change":
        return "%"
    if kind != "difference":
        return "x"
    metric = BY_NAME.get(metric_name)
    if metric is None:
        return "?"
    return "pp" if metric.fraction else metric.unit


def unit_suffix(unit: str) -> str:
    """``23x``, ``-95.7%``, ``+20 pp``, ``-120 ms``: how a comparison's value is followed."""
    return unit if unit in ("x", "%") else f" {unit}"


def comparison_agrees(stated: Stated, low: Fraction, high: Fraction, approximate: bool) -> bool:
    """Whether the recomputed interval [low, high] can be what the source wrote."""
    half = stated.half_step()
    stated_low, stated_high = Fraction(stated.low.value), Fraction(stated.high.value)
    if stated.form == "max":  # "up to 4x": the recomputation may not exceed it
        return low < stated_high + half
    if stated.form == "min":
        return high >= stated_low - half
    if stated.form == "about" or approximate:  # one unit of the last written digit either way
        return low - 2 * half <= stated_low and stated_high <= high + 2 * half
    if stated.form == "range":  # the stated range and the recomputed one overlap
        return low < stated_high + half and high >= stated_low - half
    # the source's own rounding: its figure is quoted as written, so only the written precision
    # applies (a figure a record derives itself meets the full precision rule)
    return rounds_to(stated.low, low) or rounds_to(stated.low, high) or low <= stated_low <= high


def shown_recomputed(stated: Stated, low: Fraction, high: Fraction) -> str:
    """The recomputed value or interval, with enough decimals to show the difference."""
    if low == high:
        return format_exact(low, max(stated.low.decimals, 4))
    return f"{format_exact(low, 4)} to {format_exact(high, 4)}"


def check_runs(record: RecordContext) -> Iterator[Problem]:
    """Every check of a record's runs, in file order of concern."""
    yield from check_references(record)
    yield from check_metrics(record)
    yield from check_headline(record)
    yield from check_comparisons(record)
