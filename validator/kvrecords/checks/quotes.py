"""KV805: each figure against its own quote: the value, its statistic, its metric, its bound.

Every metric carries ``stated_as``, the source's words for it. A slip in copying (a digit, a
unit, a percent for a fraction, seconds for milliseconds), a statistic the quote contradicts
(the quote says median, the metric says mean), a metric it contradicts (the quote says TPOT,
the metric is ITL) or a bound turned round ("under 4 %" entered as a lower bound) is caught
here. A quote is read on the reading most favourable to the record: a number without a unit
may be in the metric's unit or its usual alternative (seconds for a time, percent for a
fraction), ``K`` may be 1,000 or 1,024, and the value agrees with a number when either one,
rounded to the other's written precision, gives the other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import JsonPath
from kvrecords.kv.metrics import BY_NAME, Metric
from kvrecords.kv.units import BYTE_UNITS, exact, parse_byte_quantity
from kvrecords.problems import Problem, Rule

QUOTE = Rule(
    "KV805",
    "quote",
    "A metric's value is a number its stated_as gives (in the quote's unit: seconds or "
    "milliseconds, percent or fraction, GiB or GB, K or M); the quote's statistic words "
    "(mean, average, median, p50, p90, p99, max, peak) and metric words (TTFT, TPOT, ITL, E2E) "
    "do not contradict the metric's; a lower or upper bound points the way the quote's words "
    "do (under, up to, at most; over, at least, exceeding). A quote with no number warns.",
    "stated_as is the source's own words, and the value is what every check, export and chart "
    "uses: a figure copied wrong, or the wrong statistic or metric given to it, would pass "
    "every arithmetic check and still be wrong.",
    "- {name: ttft_ms, statistic: median, value: 6793.8, stated_as: 'Median TTFT (ms): 6793.80'}",
    "- {name: ttft_ms, statistic: mean, value: 6739.8, stated_as: 'Median TTFT (ms): 6793.80'}\n"
    "# KV805 value is 6,739.8; stated_as gives 6793.80 ... (no number agrees)\n"
    "# KV805 statistic is mean; stated_as names median",
)

# A number as sources write it (thousands grouped by commas, or by spaces in some locales; a
# decimal comma; an exponent), with the unit or multiplier that follows it.
_DIGITS = (
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+,\d{1,2}(?![\d,]|\.\d)|\d+(?:\.\d+)?(?:[eE][-+]?\d{1,3})?)"
)
_SPACED_DIGITS = r"(\d{1,3}(?: \d{3})+(?![\d.,]))"
_UNIT = (
    r"(?:\s?(%|x|×|GB/s|B/token|[KMGT]i?B\b|kB\b|B\b|bytes\b|[kKM]\b|ms\b|µs\b|us\b"
    r"|s\b|sec\b|secs\b|seconds?\b|min\b|minutes?\b|thousand\b|million\b|billion\b|percent\b))?"
)
_QUOTED_NUMBERS = (
    re.compile(rf"(?<![\w.]){_DIGITS}{_UNIT}"),
    re.compile(rf"(?<![\w.,]){_SPACED_DIGITS}{_UNIT}"),
)
_SMALL_NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve"
_NUMBER_WORDS = {word: Fraction(value) for value, word in enumerate(_SMALL_NUMBERS.split(" "))} | {
    "twice": Fraction(2),
    "double": Fraction(2),
    "triple": Fraction(3),
    "half": Fraction(1, 2),
}
_WORD = re.compile(rf"\b({'|'.join(_NUMBER_WORDS)})\b", re.IGNORECASE)
_ASCII_WORD = re.compile(r"\w+", re.ASCII)
_SPACED_GROUP = re.compile(r"\d \d")
_DECIMAL_COMMA = re.compile(r"\d+,\d{1,2}")  # 256,00: a decimal comma, not thousands
_RATIO = re.compile(r"(?<![\w.])(\d+)\s?/\s?(\d+)(?![\w.])")
_MULTIPLIERS = {
    "thousand": (Fraction(1000),),
    "million": (Fraction(10**6),),
    "billion": (Fraction(10**9),),
}
_TIME_IN_MS = {
    "ms": (Fraction(1),),
    "µs": (Fraction(1, 1000),),
    "us": (Fraction(1, 1000),),
    "s": (Fraction(1000),),
    "sec": (Fraction(1000),),
    "secs": (Fraction(1000),),
    "second": (Fraction(1000),),
    "seconds": (Fraction(1000),),
    "min": (Fraction(60000),),
    "minute": (Fraction(60000),),
    "minutes": (Fraction(60000),),
    "": (Fraction(1), Fraction(1000)),
}
_COUNT = {
    "": (Fraction(1),),
    "x": (Fraction(1),),
    "×": (Fraction(1),),
    "k": (Fraction(1000), Fraction(1024)),
    "K": (Fraction(1000), Fraction(1024)),
    "M": (Fraction(10**6), Fraction(2**20)),
    "GB/s": (Fraction(1),),
    "B/token": (Fraction(1),),
    **_MULTIPLIERS,
}
# A byte figure: GiB, MiB, KiB, TiB are binary; GB, MB, KB, TB are decimal, or binary as some
# engines (SGLang) and posts write them; a number with no unit may be in any of them (a table
# column's unit stands in its header, outside the quote).
_BYTE_READINGS: dict[str, tuple[Fraction, ...]] = {
    **{unit: (Fraction(size),) for unit, size in BYTE_UNITS.items() if "i" in unit or unit == "B"},
    **{
        unit: (Fraction(size), Fraction(BYTE_UNITS[unit[0].upper() + "iB"]))
        for unit, size in BYTE_UNITS.items()
        if "i" not in unit and unit != "B"
    },
    "bytes": (Fraction(1),),
    "": tuple(sorted({Fraction(size) for size in BYTE_UNITS.values()})),
    **_MULTIPLIERS,
}
_STATISTIC_WORDS = {
    "mean": re.compile(r"\b(mean|avg|average)\b", re.IGNORECASE),
    "median": re.compile(r"\b(median|p50)\b", re.IGNORECASE),
    "max": re.compile(r"\b(max|maximum|peak)\b", re.IGNORECASE),
    "min": re.compile(r"\b(min|minimum)\b", re.IGNORECASE),
}
_PERCENTILE = re.compile(r"\bp(\d{2}(?:\.\d)?)\b|\b(\d{2})(?:th|nd|rd) percentile", re.IGNORECASE)
_SAME_STATISTIC = {"p50": "median", "harmonic_mean": "mean"}
_METRIC_WORDS = {
    "ttft_ms": re.compile(r"\bTTFT|time to first token", re.IGNORECASE),
    "tpot_ms": re.compile(r"\bTPOT|time per output token", re.IGNORECASE),
    "itl_ms": re.compile(r"\bITL|inter-token latency", re.IGNORECASE),
    "e2e_latency_ms": re.compile(r"\bE2E|end-to-end", re.IGNORECASE),
}
_UPPER_WORDS = re.compile(
    r"(under|below|less than|fewer than|up to|upto|at most|no more than|within|<|≤|<=)\s*\S*\s*$",
    re.IGNORECASE,
)
_LOWER_WORDS = re.compile(
    r"(over|above|more than|exceeding|exceeds|at least|no less than|>|≥|>=)\s*\S*\s*$",
    re.IGNORECASE,
)


class QuotedNumber(NamedTuple):
    """A number the quote gives: its digits as ``integer / 10**places x 10**exponent`` (or a
    ratio), the unit or multiplier after it, and where it starts. Exact values are made only
    when a comparison comes close (``_agrees``); floats decide the rest."""

    integer: int
    places: int
    exponent: int
    unit: str
    start: int
    denominator: int = 1  # a ratio's (30/30); 0 for a number word, which is exact

    @property
    def number(self) -> Fraction:
        value = Fraction(self.integer, 10**self.places * self.denominator)
        return value * Fraction(10) ** self.exponent if self.exponent else value

    @property
    def half_step(self) -> Fraction:
        if self.denominator != 1:
            return Fraction(0)
        half = Fraction(1, 2 * 10**self.places)
        return half * Fraction(10) ** self.exponent if self.exponent else half

    @property
    def approximate(self) -> tuple[float, float]:
        """The number and its half step as floats, for the quick test of ``_agrees``."""
        scale = 10.0**self.exponent
        value = self.integer / (10.0**self.places * self.denominator) * scale
        half = 0.0 if self.denominator != 1 else 0.5 / 10.0**self.places * scale
        return value, half


def quoted_numbers(quote: str) -> list[QuotedNumber]:
    """Every number in a quote, with its unit, on every reading of its digits (``16 178`` is
    16,178 or 16 and 178; ``256,00`` is 256.00); a ratio ``30/30`` is also read as its value,
    and the small numbers written as words (``five times``, ``twice``). Nothing is evaluated."""
    found = []
    # the spaced reading needs a digit, a space and a digit; most quotes have none
    patterns = _QUOTED_NUMBERS if _SPACED_GROUP.search(quote) else _QUOTED_NUMBERS[:1]
    for pattern in patterns:
        for match in pattern.finditer(quote):
            digits, unit = match[1], match[2] or ""
            unit = "%" if unit == "percent" else unit
            if "," in digits and _DECIMAL_COMMA.fullmatch(digits):
                digits = digits.replace(",", ".")
            digits = digits.replace(",", "").replace(" ", "")
            mantissa, _, exponent = digits.lower().partition("e")
            whole, _, decimals = mantissa.partition(".")
            found.append(
                QuotedNumber(
                    int(whole + decimals), len(decimals), int(exponent or 0), unit, match.start()
                )
            )
    for start, value in _number_words(quote):
        found.append(QuotedNumber(value.numerator, 0, 0, "", start, value.denominator or 1))
    for match in _RATIO.finditer(quote) if "/" in quote else ():
        if int(match[2]):
            found.append(QuotedNumber(int(match[1]), 0, 0, "", match.start(), int(match[2])))
    return found


def _number_words(quote: str) -> Iterator[tuple[int, Fraction]]:
    """Where the small numbers written as words stand, and their values. In ASCII text a word
    is a run of [A-Za-z0-9_] and its lower case is exact, so each word is looked up: a
    case-blind pattern of alternatives would be tried at every position of the quote. Other
    text is matched case-blind, as Unicode's simple case folding has it (``fİve``)."""
    if quote.isascii():
        for word in _ASCII_WORD.finditer(quote):
            value = _NUMBER_WORDS.get(word[0].lower())
            if value is not None:
                yield word.start(), value
        return
    for match in _WORD.finditer(quote):
        yield (
            match.start(),
            next(
                value
                for word, value in _NUMBER_WORDS.items()
                if re.fullmatch(word, match[1], re.IGNORECASE)
            ),
        )


def check_quotes(record: RecordContext) -> Iterator[Problem]:
    """KV805, for every metric of every run."""
    for run in record.runs:
        for index, metric in enumerate(run.stated.get("metrics", [])):
            quote = metric.get("stated_as")
            definition = BY_NAME.get(metric["name"])
            if isinstance(quote, str) and definition is not None:  # else KV802 reports it
                yield from _metric_against_quote(
                    record, (*run.path, "metrics", index), metric, quote, definition
                )


def _metric_against_quote(
    record: RecordContext, path: JsonPath, metric: dict[str, Any], quote: str, definition: Metric
) -> Iterator[Problem]:
    numbers = quoted_numbers(quote)
    if not numbers:
        message = f"stated_as {_short(quote)!r} gives no number to check the value against"
        yield record.problem(QUOTE, (*path, "stated_as"), message)._replace(severity="warning")
        return
    matched: list[QuotedNumber] = []
    for part_path, key in _value_parts(path, metric["value"]):
        stated = _stated_value(record, part_path)
        if stated is None:
            continue
        figure, half_step = stated
        if definition.fraction and figure > 1:
            continue  # a percentage where a fraction belongs: KV802 says to write the fraction
        approximate = (float(figure), float(half_step))
        matching = [
            number
            for number in numbers
            if _agrees(stated, approximate, number, definition.unit, definition.fraction)
        ] or _sums_agreeing(figure, half_step, numbers, definition.unit)
        if not matching:
            shown = ", ".join(_shown_number(number) for number in numbers[:6])
            message = (
                f"{key} is {_plain(figure)}; stated_as {_short(quote)!r} gives {shown}, none of "
                f"which is {_plain(figure)} {_unit_words(definition.unit, definition.fraction)}"
            )
            yield record.problem(QUOTE, part_path, message)
            continue
        matched += matching
        if key in ("min", "max"):
            yield from _bound_direction(record, part_path, key, quote, matching)
    if matched:
        yield from _words_against_quote(record, path, metric, quote, matched)


def _value_parts(path: JsonPath, value: Any) -> list[tuple[JsonPath, str]]:
    """The numbers a value states: itself, or its about, min and max."""
    value_path = (*path, "value")
    if isinstance(value, dict):
        return [((*value_path, key), key) for key in ("about", "min", "max") if key in value]
    return [(value_path, "value")]


def _sums_agreeing(
    figure: Fraction, half_step: Fraction, numbers: list[QuotedNumber], unit: str
) -> list[QuotedNumber]:
    """A byte total the quote gives as parts (SGLang's K size and V size): the numbers written
    with one byte unit, added, on each reading of that unit."""
    if unit != "bytes":
        return []
    for byte_unit in sorted({number.unit for number in numbers if number.unit}):
        parts = [number for number in numbers if number.unit == byte_unit]
        if len(parts) < 2:
            continue
        total = sum((n.number for n in parts), Fraction(0))
        total_half = sum((n.half_step for n in parts), Fraction(0))
        for factor in _factors(byte_unit, unit, fraction=False):
            if abs(total * factor - figure) <= max(half_step, total_half * factor):
                return parts
    return []


def _stated_value(record: RecordContext, path: JsonPath) -> tuple[Fraction, Fraction] | None:
    """The value at ``path`` exactly, in the metric's unit (bytes for a byte figure), with half
    its last written digit."""
    written = record.document.written.get(path)
    raw = record.document.leaves.get(path)
    if isinstance(raw, bool) or written is None:
        return None
    if isinstance(raw, str):
        quantity = parse_byte_quantity(raw)
        if quantity is None:
            return None
        scale = quantity.unit_bytes
        number = Fraction(quantity.number.value)
        return number * scale, Fraction(1, 2) / 10**quantity.number.decimals * scale
    number = exact(written)
    places = len(written.split(".")[1]) if "." in written and "e" not in written.lower() else 0
    return number, Fraction(1, 2) / 10**places


def _agrees(
    stated: tuple[Fraction, Fraction],
    approximately: tuple[float, float],
    quoted: QuotedNumber,
    unit: str,
    fraction: bool,
) -> bool:
    """Whether the stated figure (in the metric's unit, with half its last written digit; the
    same as floats) and the quoted number agree on some reading of the quote's unit, at the
    coarser of the two written precisions."""
    figure, half_step = stated
    approximate, slack = approximately[0], approximately[1] * 1.001
    quoted_number, quoted_half = quoted.approximate
    for factor, scale in _readings(quoted.unit, unit, fraction):
        # in floats first: most numbers of a quote are far from the figure, and exact
        # fractions cost a hundred times more; a near one is then settled exactly
        allowed = max(slack, quoted_half * scale * 1.001) + abs(approximate) * 1e-12
        distance = abs(quoted_number * scale - approximate)
        if distance > allowed:
            continue
        if distance < allowed * 0.99 - abs(approximate) * 1e-9:
            return True  # well inside the tolerance: no float error can put it outside
        number = quoted.number * factor
        tolerance = max(half_step, quoted.half_step * factor)
        if abs(number - figure) <= tolerance:
            return True
    return False


@functools.lru_cache(maxsize=256)
def _readings(quoted_unit: str, unit: str, fraction: bool) -> tuple[tuple[Fraction, float], ...]:
    """``_factors`` with each factor's float beside it (asked for every number of every quote)."""
    return tuple((factor, float(factor)) for factor in _factors(quoted_unit, unit, fraction))


def _factors(quoted_unit: str, unit: str, fraction: bool) -> tuple[Fraction, ...]:
    """How a number in the quote's unit converts to the metric's unit, on each reading."""
    if unit == "bytes":
        return _BYTE_READINGS.get(quoted_unit, ())
    if fraction:
        return {"%": (Fraction(1, 100),), "": (Fraction(1), Fraction(1, 100))}.get(quoted_unit, ())
    if unit.startswith("ms"):  # ms, ms/token
        return _TIME_IN_MS.get(quoted_unit, ())
    if unit == "s":
        times = {key: tuple(f / 1000 for f in factors) for key, factors in _TIME_IN_MS.items()}
        return (Fraction(1),) if quoted_unit == "" else times.get(quoted_unit, ())
    if quoted_unit == "%":
        return (Fraction(1), Fraction(1, 100))
    return _COUNT.get(quoted_unit, ())


def _bound_direction(
    record: RecordContext, path: JsonPath, key: str, quote: str, matching: list[QuotedNumber]
) -> Iterator[Problem]:
    """A min (lower bound) the quote calls 'under', or a max (upper bound) it calls 'over'."""
    made, said, fix = (
        ("a lower", "an upper", "max") if key == "min" else ("an upper", "a lower", "min")
    )
    for number in matching:
        before = quote[max(0, number.start - 30) : number.start]
        upper, lower = _UPPER_WORDS.search(before), _LOWER_WORDS.search(before)
        against, other = (upper, lower) if key == "min" else (lower, upper)
        if against and not other:
            message = (
                f"{key} makes {_shown_number(number)} {made} bound; stated_as says "
                f"{against[1]!r}, {said} bound: write it as {fix}"
            )
            yield record.problem(QUOTE, path, message)
            return


def _words_against_quote(
    record: RecordContext,
    path: JsonPath,
    metric: dict[str, Any],
    quote: str,
    matched: list[QuotedNumber],
) -> Iterator[Problem]:
    """The statistic and the metric the quote's words name beside the number the value is: a
    contradiction only when every number that agrees stands beside words that contradict."""
    statistic = metric.get("statistic") or ""
    family = _SAME_STATISTIC.get(statistic, statistic)
    segments = [_segment(quote, number.start) for number in matched]
    checked = family in ("mean", "median", "max", "min") or re.fullmatch(r"p\d+", family)
    named = [_statistics_named(segment) for segment in segments]
    if checked and all(names and family not in names for names in named):
        message = (
            f"statistic is {statistic}; stated_as {_short(quote)!r} names "
            f"{', '.join(sorted(set().union(*named)))} beside the figure"
        )
        yield record.problem(QUOTE, (*path, "statistic"), message)
    if metric["name"] in _METRIC_WORDS:
        spoken = [
            {name for name, words in _METRIC_WORDS.items() if words.search(segment)}
            for segment in segments
        ]
        if all(names and metric["name"] not in names for names in spoken):
            message = (
                f"name is {metric['name']}; stated_as {_short(quote)!r} speaks of "
                f"{', '.join(sorted(set().union(*spoken)))} beside the figure"
            )
            yield record.problem(QUOTE, (*path, "name"), message)


def _segment(quote: str, start: int) -> str:
    """The words before a number back to the previous separator (a table cell, a clause)."""
    before = quote[:start]
    cut = max(before.rfind(mark) for mark in ("|", ";", "\n", ", ", ". "))
    return before[cut + 1 :]


def _statistics_named(quote: str) -> set[str]:
    named = {name for name, words in _STATISTIC_WORDS.items() if words.search(quote)}
    for match in _PERCENTILE.finditer(quote):
        percent = match[1] or match[2]
        named.add("median" if percent == "50" else f"p{percent}")
    return named


def _short(quote: str) -> str:
    return quote if len(quote) <= 80 else quote[:77] + "..."


def _plain(number: Fraction) -> str:
    if number.denominator == 1:
        return f"{number.numerator:,}"
    return f"{float(number):,.6g}"


def _shown_number(number: QuotedNumber) -> str:
    return f"{_plain(number.number)}{' ' + number.unit if number.unit else ''}"


def _unit_words(unit: str, fraction: bool) -> str:
    if fraction:
        return "(as a fraction or a percent)"
    if unit == "ms":
        return "ms (in ms, s or minutes)"
    if unit == "bytes":
        return "B (in any byte unit)"
    return unit
