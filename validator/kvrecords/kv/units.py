"""Byte units, written numbers and the stated-precision rule.

A figure written as ``9.16 GiB`` claims the exact value lies in [9.155, 9.165) GiB: it agrees
with a recomputation when the recomputed value, rounded half-up to the decimals written, gives
the written digits. Integers carry zero decimals, so ``23x`` allows [22.5, 23.5).
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
    "KB": 1000,
    "kB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}

# Digits with optional thousands separators (exactly three digits per group) and decimals.
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NUMBER_RE = re.compile(rf"^{_NUMBER}$")
_BYTES_RE = re.compile(rf"^\s*({_NUMBER})\s*({'|'.join(BYTE_UNITS)})\s*$")
_RATIO_RE = re.compile(rf"^\s*({_NUMBER})\s*[x×]\s*$")


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


def agrees(written: Written, exact: Fraction) -> bool:
    """True when ``exact`` rounds (half-up) to ``written`` at the written precision."""
    half_step = Fraction(1, 2) / 10**written.decimals
    stated = Fraction(written.value)
    return bool(stated - half_step <= exact < stated + half_step)


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


def parse_ratio(text: str) -> Written | None:
    """``23x`` (or ``23×``) as a written number."""
    match = _RATIO_RE.match(text)
    return Written(match.group(1)) if match else None


def format_in_unit(exact_bytes: Fraction | int, unit: str, decimals: int) -> str:
    """``exact_bytes`` in ``unit``, rounded half-up to ``decimals`` places."""
    scaled = Fraction(exact_bytes) / BYTE_UNITS[unit]
    return f"{format_fraction(scaled, decimals)} {unit}"


def format_fraction(value: Fraction, decimals: int) -> str:
    """Half-up rounding of an exact value, the same rounding the precision rule uses."""
    value = Fraction(value)
    scale = 10**decimals
    # floor(value * scale + 1/2) in integers: the digits of the rounded value
    digits = (2 * value.numerator * scale + value.denominator) // (2 * value.denominator)
    sign, digits = ("-", -digits) if digits < 0 else ("", digits)
    whole, fraction = divmod(digits, scale)
    return f"{sign}{whole}.{fraction:0{decimals}d}" if decimals else f"{sign}{whole}"


def format_exact(value: Fraction | int) -> str:
    """An exact value for messages: an integer with separators, else up to four decimals."""
    value = Fraction(value)
    if value.denominator == 1:
        return f"{value.numerator:,}"
    return format_fraction(value, 4).rstrip("0").rstrip(".")


def gib(exact_bytes: Fraction | int) -> str:
    return format_in_unit(exact_bytes, "GiB", 2)
