"""Numbers: byte units, written numbers, exact values, the stated-precision rule, formatting.

The one home for numbers. A stated figure agrees with its recomputation when it equals it, or
when all three hold:

- at its written precision: ``9.16 GiB`` claims the exact value lies in [9.155, 9.165) GiB, so
  the recomputed value, rounded half-up to the decimals written, gives the written digits
  (integers carry zero decimals: ``23x`` allows [22.5, 23.5));
- within 1 % of the recomputed value (the tolerance of the MLPerf submission checker), so that
  coarse writing cannot hide an error: ``10 GB`` for 9.83 GB is 1.7 % off;
- with at least two significant figures: ``2 GiB`` for 2.14 GiB, and any non-zero value stated
  as ``0``, are refused.

Values are exact fractions taken from the text as written, never binary floats, and every
message prints a number the same way: rounded half-up, with thousands separators
(``72,072 B/token``, ``2,819.5 tok/s``, ``1,033%``).
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

GIB = 1024**3

BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": GIB,
    "TiB": 1024**4,
    "KB": 1000,
    "kB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}

# Digits with optional thousands separators (exactly three digits per group) and decimals.
_NUMBER = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"
_NUMBER_RE = re.compile(rf"^{_NUMBER}$")
_BYTES_RE = re.compile(rf"^\s*({_NUMBER})\s*({'|'.join(BYTE_UNITS)})\s*$")


class Unknown(NamedTuple):
    """Why a value cannot be given, returned in its place: callers test for it by type."""

    reason: str


def unknown_reasons(*values: object) -> list[str]:
    """The reasons of those ``values`` that are ``Unknown``, in order."""
    return [value.reason for value in values if isinstance(value, Unknown)]


class Written(NamedTuple):
    """A number exactly as a contributor wrote it, so its precision survives."""

    text: str

    @property
    def value(self) -> Decimal:
        return Decimal(self.text.replace(",", ""))

    @property
    def decimals(self) -> int:
        exponent = self.value.as_tuple().exponent
        assert isinstance(exponent, int)
        return max(0, -exponent)

    def agrees_with(self, exact: Fraction) -> bool:
        return agrees(self, exact)


def parse_number(text: str) -> Written | None:
    """``65,536`` or ``9.16`` as written; None when the text is not a plain decimal number."""
    text = text.strip()
    return Written(text) if _NUMBER_RE.match(text) else None


RELATIVE_TOLERANCE = Fraction(1, 100)
MIN_SIGNIFICANT_FIGURES = 2


def significant_figures(written: Written) -> int:
    """The digits from the first non-zero one on: ``0.050`` has 2, ``150,000`` 6, ``0`` none."""
    return len(written.text.lstrip("+-").replace(",", "").replace(".", "").lstrip("0"))


def _digits(written: Written) -> tuple[int, int]:
    """The written value as an integer of its digits and the decimals after them: ``9.16`` is
    (916, 2). The precision rule runs on thousands of figures a run, so it compares integers."""
    text = written.text.replace(",", "")
    whole, point, decimals = text.partition(".")
    if whole.lstrip("+-").isdigit() and (decimals.isdigit() or not point):
        return int(whole + decimals), len(decimals)
    exponent = written.value.as_tuple().exponent  # any other form Decimal reads
    assert isinstance(exponent, int)
    places = max(0, -exponent)
    return int(written.value.scaleb(places)), places


def rounds_to(written: Written, exact: Fraction) -> bool:
    """True when ``exact`` rounds (half-up) to ``written`` at the written precision."""
    digits, decimals = _digits(written)
    return _within_half_step(digits, decimals, exact)


def _within_half_step(digits: int, decimals: int, exact: Fraction) -> bool:
    # digits / 10^d - 1 / (2 x 10^d) <= p / q < digits / 10^d + 1 / (2 x 10^d), times 2 x 10^d x q
    numerator, denominator = exact.numerator, exact.denominator
    scaled = 2 * 10**decimals * numerator
    return bool((2 * digits - 1) * denominator <= scaled < (2 * digits + 1) * denominator)


def disagreement(written: Written, exact: Fraction) -> str | None:
    """Why ``written`` does not agree with ``exact`` (None when it does): the precision rule."""
    digits, decimals = _digits(written)
    if digits * exact.denominator == exact.numerator * 10**decimals:
        return None
    if not _within_half_step(digits, decimals, exact):
        return "it does not round to the figure written"
    if digits == 0:
        return "it is not zero"
    if significant_figures(written) < MIN_SIGNIFICANT_FIGURES:
        return "write it with at least two significant figures"
    # |digits / 10^d - p / q| > |p / q| x tolerance, times 10^d x q
    power, numerator = 10**decimals, exact.numerator
    off = abs(digits * exact.denominator - numerator * power)
    tolerance = RELATIVE_TOLERANCE
    if off * tolerance.denominator > abs(numerator) * power * tolerance.numerator:
        difference = abs(Fraction(digits, power) - exact)
        return f"it is {percent(difference, abs(exact))} off; a figure agrees within 1 %"
    return None


def agrees(written: Written, exact: Fraction) -> bool:
    """True when ``written`` states ``exact`` by the precision rule (see the module's notes)."""
    return disagreement(written, exact) is None


def precision_note(written: Written, exact: Fraction) -> str:
    """What a message adds when ``written`` rounds to ``exact`` yet breaks the precision rule
    (too few significant figures, more than 1 % off); "" otherwise."""
    why = disagreement(written, exact)
    return f"; {why}" if why and rounds_to(written, exact) else ""


def shown_decimals(written: Written, exact: Fraction) -> int:
    """Decimals to show a recomputed value beside ``written``: the written ones, and enough for
    three significant figures when those do not show the difference."""
    decimals = written.decimals
    if not rounds_to(written, exact):
        return decimals  # the written precision already shows the difference
    magnitude = abs(exact)
    while decimals < 12 and magnitude and magnitude * 10**decimals < 100:
        decimals += 1
    return decimals


class ByteQuantity(NamedTuple):
    """``9.16 GiB``: a written number and a byte unit."""

    number: Written
    unit: str

    @property
    def unit_bytes(self) -> int:
        return BYTE_UNITS[self.unit]

    def agrees_with_bytes(self, exact_bytes: Fraction) -> bool:
        return agrees(self.number, exact_bytes / self.unit_bytes)

    def __str__(self) -> str:
        return f"{self.number.text} {self.unit}"


def parse_byte_quantity(text: str) -> ByteQuantity | None:
    match = _BYTES_RE.match(text)
    if match is None:
        return None
    return ByteQuantity(Written(match.group(1)), match.group(2))


# ---- exact values -------------------------------------------------------------------------


def exact(value: int | float | str) -> Fraction:
    """A number exactly as written: 0.935 is 935/1000, not the binary float nearest to it.

    A float's ``str`` is the shortest text that reads back as the same float, which is the text
    the file held; ``Decimal`` turns that text into its exact value. Raises ``ArithmeticError``
    for text that is not a decimal number.
    """
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(*Decimal(str(value).replace(",", "")).as_integer_ratio())


def round_up(value: Fraction) -> int:
    """The smallest integer not below ``value``: whole bytes, never fewer than needed."""
    return -(-value.numerator // value.denominator)


# ---- formatting -----------------------------------------------------------------------------


def format_fraction(value: Fraction | int, decimals: int) -> str:
    """Half-up rounding to ``decimals`` places (the rounding the precision rule uses), with
    thousands separators: ``format_fraction(Fraction(28195489, 10000), 1)`` is ``2,819.5``."""
    if not isinstance(value, (int, Fraction)):  # a float read from a file: its exact value
        value = Fraction(value)
    return _format_ratio(value.numerator, value.denominator, decimals)


def _format_ratio(numerator: int, denominator: int, decimals: int) -> str:
    """numerator / denominator as format_fraction shows it, in integers only (no Fraction is
    built: messages format thousands of figures a run)."""
    scale = 10**decimals
    # floor(value * scale + 1/2) in integers: the digits of the rounded value
    digits = (2 * numerator * scale + denominator) // (2 * denominator)
    sign, digits = ("-", -digits) if digits < 0 else ("", digits)
    whole, fraction = divmod(digits, scale)
    return f"{sign}{whole:,}.{fraction:0{decimals}d}" if decimals else f"{sign}{whole:,}"


_MOST_DECIMALS = 30


def format_exact(value: Fraction | int, decimals: int = 4) -> str:
    """An exact value: an integer in full, else rounded to at most ``decimals`` places with
    trailing zeros dropped (``0.935``, ``23.1304``, ``65,536``)."""
    if isinstance(value, int):
        return f"{int(value):,}"
    if not isinstance(value, Fraction):  # a float read from a file: its exact value
        value = Fraction(value)
    numerator, denominator = value.numerator, value.denominator
    if denominator == 1:
        return f"{numerator:,}"
    # a value below one keeps four significant figures (8.94e-06 is 0.00000894, not 0):
    # |n / q| x 10^d < 1000 in integers
    size, below = abs(numerator), 1000 * denominator
    while size * 10**decimals < below and decimals < _MOST_DECIMALS:
        decimals += 1
    return _format_ratio(numerator, denominator, decimals).rstrip("0").rstrip(".")


def format_written(number: Written) -> str:
    """A number as the contributor wrote it, its decimals kept, with thousands separators
    (text that is not a plain decimal number, such as ``1e3``, is shown as written)."""
    if not _NUMBER_RE.match(number.text):
        return number.text
    whole, point, fraction = number.text.replace(",", "").partition(".")
    return f"{int(whole):,}{point}{fraction}"


def format_number(value: int | float) -> str:
    """A number read from a file, its decimals as written, with thousands separators."""
    return format_written(Written(str(value)))


def format_in_unit(exact_bytes: Fraction | int, unit: str, decimals: int) -> str:
    """``exact_bytes`` in ``unit``, rounded half-up to ``decimals`` places."""
    if not isinstance(exact_bytes, (int, Fraction)):
        exact_bytes = Fraction(exact_bytes)
    denominator = exact_bytes.denominator * BYTE_UNITS[unit]
    return f"{_format_ratio(exact_bytes.numerator, denominator, decimals)} {unit}"


def gib(exact_bytes: Fraction | int) -> str:
    """``9.16 GiB``: bytes in GiB to two decimals."""
    return format_in_unit(exact_bytes, "GiB", 2)


def format_binary(
    exact_bytes: Fraction | int, units: tuple[str, ...] = ("TiB", "GiB", "MiB", "KiB", "B")
) -> str:
    """Bytes in the first of ``units`` (largest first) that keeps the figure at 1 or more (in
    size), else in the last: two decimals, or whole bytes in B."""
    size = abs(Fraction(exact_bytes))
    unit = next((u for u in units if size >= BYTE_UNITS[u]), units[-1])
    return format_in_unit(exact_bytes, unit, 0 if unit == "B" else 2)


def format_bytes_exact(exact_bytes: Fraction | int, units: tuple[str, ...] = ("GiB", "MiB")) -> str:
    """``9,830,400,000 B (9.16 GiB)``: the exact byte count, then in the first of ``units`` that
    keeps the figure at 1 or more (GiB, or MiB below a GiB)."""
    return f"{format_exact(exact_bytes)} B ({format_binary(exact_bytes, units)})"


def format_bytes_short(value: float | int | Fraction) -> str:
    """A byte figure for tables and chart axes, three significant figures: ``64 KiB``,
    ``1.52 MiB``, ``512 B`` (whole figures and those of 100 or more without decimals)."""
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(amount) < 1024:
            if unit == "B" or amount >= 100 or amount.is_integer():
                return f"{amount:,.0f} {unit}"
            return f"{amount:.3g} {unit}"
        amount /= 1024
    return f"{amount:,.0f} TiB" if amount >= 100 or amount.is_integer() else f"{amount:.3g} TiB"


def percent(value: Fraction, limit: Fraction) -> str:
    """``value`` as a share of ``limit``: one decimal below 10% and near 100%, else none."""
    share = value / limit * 100
    decimals = 1 if share < 10 or 99 <= share < 101 else 0
    return f"{format_fraction(share, decimals)}%"


def tokens_per_s(value: Fraction) -> str:
    """A token rate: one decimal below 1,000 tok/s, whole tokens above."""
    return f"{format_fraction(value, 1 if value < 1000 else 0)} tok/s"


def format_scientific(value: Fraction) -> str:
    """Four significant digits, for FLOP counts (``2.459e+10``)."""
    return f"{float(value):.4g}"
