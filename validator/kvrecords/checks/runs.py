"""KV801-KV804, and KV401-KV404 per run: a record's runs, metrics and comparisons.

Every figure a source measured stands in a run's ``metrics``; these checks hold each to the
vocabulary, tie the record's card to its headline run, and recompute every comparison and
every figure a run derives from its measurements.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.basis import compare_bytes
from kvrecords.checks.context import RecordContext, value_at
from kvrecords.checks.measurements import (
    BYTES_NOT_RECOMPUTED,
    PREFILL_RATE,
    RANGE_ORDER,
    SPEEDUP,
    TOKENS_NOT_RECOMPUTED,
    source_slip,
)
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import Measured, Run, basis_report, measured, run_by_id, runs
from kvrecords.kv.metrics import BY_NAME, nearest_metric
from kvrecords.kv.units import (
    Written,
    agrees,
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
    "runs, and a comparison compares two different runs.",
    "Comparisons, the card and every export join on run ids; a dangling or repeated id "
    "silently attaches a figure to the wrong configuration.",
    "runs:\n  - {id: cold, ...}\n  - {id: warm, ...}\nheadline_run: warm",
    "headline_run: hot\n# KV801 headline_run names run 'hot'; the runs are cold, warm",
)

METRIC = Rule(
    "KV802",
    "metric",
    "Each metric is named from the vocabulary (docs/metrics.md) and given once per statistic in "
    "a run; a fraction is at most 1; hit_rate carries its definition, engine-reported KV figures "
    "their scope and quality metrics their benchmark; only byte metrics are written with a unit.",
    "One name per figure is what lets export, the site and a reader compare records; an "
    "ad-hoc name (`mean_ttft_ms`) or a percentage where a fraction is meant would be a "
    "different column or a figure off by a factor of 100.",
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
    for run in runs(record.data):
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


# ---- KV802: metrics ---------------------------------------------------------------------------


def check_metrics(record: RecordContext) -> Iterator[Problem]:
    """KV802: each metric from the vocabulary, once per statistic, with what it needs."""
    for run in runs(record.data):
        given: set[tuple[str, str, str]] = set()
        for index, metric in enumerate(run.stated.get("metrics", [])):
            item = Measured(run, index, metric)
            yield from _check_metric(record, item)
            known = BY_NAME.get(metric["name"])
            # what tells two figures of one metric apart: a hit rate's definition, a size's
            # scope, a score's benchmark, the note of a reading taken at a stated point
            noted = known is not None and known.needs == "note"
            qualifier = str(
                metric.get("definition")
                or metric.get("scope")
                or metric.get("benchmark")
                or (metric.get("note") if noted else None)
            )
            key = (metric["name"], metric["statistic"], qualifier)
            if key in given:
                message = (
                    f"{metric['name']} ({metric['statistic']}) is given twice in run '{run.id}'; "
                    "a second figure of the same kind belongs in its own run"
                )
                yield record.problem(METRIC, (*item.path, "name"), message)
            given.add(key)
    for index, comparison in enumerate(record.data.get("comparisons", [])):
        if comparison["metric"] not in BY_NAME:
            path: JsonPath = ("comparisons", index, "metric")
            yield record.problem(METRIC, path, _unknown(comparison["metric"]))


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
        elif metric.fraction and number > 1:
            message = (
                f"{metric.name} is {format_number(number)}, above 1: it is a fraction, "
                f"write {format_exact(Fraction(Decimal(str(number))) / 100)}"
            )
            yield record.problem(METRIC, path, message)


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
    for end in ("from", "to"):
        run = by_id.get(stated[end])
        if run is None:
            return Comparison(index, stated, None, f"run '{stated[end]}' does not exist")
        item = measured(run, stated["metric"], stated["statistic"])
        if item is None:
            reason = f"run '{run.id}' states no {stated['metric']} ({stated['statistic']})"
            return Comparison(index, stated, None, f"stated only: {reason}")
        bounds = value_bounds(record, item.value_path)
        if isinstance(bounds, str):
            return Comparison(index, stated, None, f"stated only: {bounds}")
        ends.append(bounds)
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


# ---- KV401, KV403, KV404: what a run derives from its measurements -------------------------------


class _Invalid(str):
    """An input that another check already reports; derivations from it are not checked."""


class RunDerivation(NamedTuple):
    """A figure a run derives, worked out whether the run states it."""

    rule: Rule
    run: Run
    field: str
    stated: Any
    value: Fraction | None
    working: str  # the arithmetic, or why it cannot be made

    @property
    def path(self) -> JsonPath:
        return (*self.run.path, "derived", self.field)


def run_derivations(record: RecordContext) -> list[RunDerivation]:
    """Tokens and bytes not recomputed and the prefill rate of every run that has the inputs."""
    found = []
    for run in runs(record.data):
        derived = run.stated.get("derived", {})
        hit = _single(record, run, "hit_rate")
        context = _context(record, run)
        ttft = _single(record, run, "ttft_ms")
        if measured(run, "hit_rate") is not None:  # a TTFT served from cache is not a prefill
            ttft = f"run '{run.id}' reuses cached KV (it has a hit_rate)"
        for rule, field, inputs in (
            (TOKENS_NOT_RECOMPUTED, "tokens_not_recomputed", (hit, context)),
            (BYTES_NOT_RECOMPUTED, "bytes_not_recomputed", (hit, context, _per_token(record))),
            (PREFILL_RATE, "prefill_tokens_per_s_from_ttft", (context, ttft)),
        ):
            missing = [value for value in inputs if isinstance(value, str)]
            stated = derived.get(field)
            invalid = [value for value in missing if isinstance(value, _Invalid)]
            if invalid:
                found.append(RunDerivation(rule, run, field, stated, None, invalid[0]))
                continue
            if missing:
                found.append(RunDerivation(rule, run, field, stated, None, "; ".join(missing)))
                continue
            numbers = [value for value in inputs if isinstance(value, Fraction)]
            found.append(RunDerivation(rule, run, field, stated, *_derive(field, numbers)))
    return found


def _derive(field: str, numbers: list[Fraction]) -> tuple[Fraction, str]:
    if field == "prefill_tokens_per_s_from_ttft":
        context, ttft = numbers
        return (
            context * 1000 / ttft,
            f"{format_exact(context)} tokens / {format_exact(ttft / 1000)} s",
        )
    product = Fraction(1)
    for number in numbers:
        product *= number
    shown = " x ".join(format_exact(number) for number in numbers)
    return product, shown + (" B" if field == "bytes_not_recomputed" else "")


def _single(record: RecordContext, run: Run, name: str) -> Fraction | str:
    item = measured(run, name)
    if item is None:
        return f"run '{run.id}' has no {name}"
    bounds = value_bounds(record, item.value_path)
    if isinstance(bounds, str):
        return bounds
    if bounds.low != bounds.high:
        return f"{dotted(item.value_path)} is a range"
    metric = BY_NAME[name]
    if (metric.fraction and bounds.low > 1) or (metric.positive and bounds.low <= 0):
        return _Invalid(f"{dotted(item.value_path)} is out of range (KV802)")
    return bounds.low


def _context(record: RecordContext, run: Run) -> Fraction | str:
    try:
        value = value_at(record.data, run.context_path)
    except (KeyError, IndexError):
        return f"{dotted(run.context_path)} is not stated"
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if value is None:
        return f"{dotted(run.context_path)} is null"
    return f"{dotted(run.context_path)} is not an exact token count"


def _per_token(record: RecordContext) -> Fraction | str:
    try:
        per_token = basis_report(record.model, record.data["kv_bytes_basis"]).bytes_per_token
    except ValueError as error:  # the basis does not apply (KV304)
        return str(error)
    if per_token is None:
        return f"{record.model_display} does not give bytes per token"
    return Fraction(per_token)


def check_run_derivations(record: RecordContext) -> Iterator[Problem]:
    """KV401, KV403, KV404 per run (KV405 for a stated figure without its inputs)."""
    for derivation in run_derivations(record):
        if derivation.stated is None or isinstance(derivation.working, _Invalid):
            continue
        if derivation.value is None:
            message = f"{derivation.field} is stated but cannot be derived: {derivation.working}"
            yield record.problem(RANGE_ORDER, derivation.path, message)
        elif derivation.rule is BYTES_NOT_RECOMPUTED:
            value, working = derivation.value, derivation.working
            yield from compare_bytes(record, BYTES_NOT_RECOMPUTED, derivation.path, value, working)
        else:
            written = record.written(derivation.path)
            if agrees(written, derivation.value):
                continue
            shown = format_exact(derivation.value, max(written.decimals, 4))
            message = (
                f"{derivation.field} is {format_number(derivation.stated)}; "
                f"{derivation.working} = {shown}"
            )
            yield record.problem(derivation.rule, derivation.path, message)


def check_runs(record: RecordContext) -> Iterator[Problem]:
    """Every check of a record's runs, in file order of concern."""
    yield from check_references(record)
    yield from check_metrics(record)
    yield from check_headline(record)
    yield from check_comparisons(record)
    yield from check_run_derivations(record)
