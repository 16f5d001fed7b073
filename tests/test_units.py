"""Byte units and the stated-precision rule."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kvrecords.kv.units import (
    BYTE_UNITS,
    Written,
    agrees,
    format_fraction,
    format_in_unit,
    parse_byte_quantity,
    parse_number,
    parse_ratio,
)

GIB = 1024**3


def test_binary_and_decimal_units() -> None:
    assert BYTE_UNITS["KiB"] == 1024 and BYTE_UNITS["KB"] == 1000
    assert BYTE_UNITS["GiB"] == 1_073_741_824 and BYTE_UNITS["GB"] == 1_000_000_000
    assert BYTE_UNITS["TiB"] == 1024**4 and BYTE_UNITS["TB"] == 10**12


def test_written_precision_interval() -> None:
    # 9.16 allows [9.155, 9.165)
    written = Written("9.16")
    assert agrees(written, Fraction("9.155"))
    assert agrees(written, Fraction("9.16499"))
    assert not agrees(written, Fraction("9.165"))
    assert not agrees(written, Fraction("9.15499"))


def test_trailing_zero_keeps_precision() -> None:
    # 9.160 allows [9.1595, 9.1605): 9.1553 (the seed's exact GiB) does not agree
    assert not agrees(Written("9.160"), Fraction(9_830_400_000, GIB))
    assert agrees(Written("9.16"), Fraction(9_830_400_000, GIB))


def test_integer_precision() -> None:
    # 23x allows [22.5, 23.5)
    assert agrees(Written("23"), Fraction(225, 10))
    assert not agrees(Written("23"), Fraction(235, 10))


def test_byte_quantities() -> None:
    quantity = parse_byte_quantity("9.16 GiB")
    assert quantity is not None and quantity.unit == "GiB"
    assert quantity.agrees_with_bytes(Fraction(9_830_400_000))
    gb = parse_byte_quantity("9.16 GB")
    assert gb is not None and not gb.agrees_with_bytes(Fraction(9_830_400_000))  # = 9.83 GB
    assert parse_byte_quantity("65,536 B") is not None
    assert parse_byte_quantity("9.16 gib") is None
    assert parse_byte_quantity("9.16") is None


@pytest.mark.parametrize("text", ["65,536", "150,000", "0.935", "7"])
def test_numbers_with_separators(text: str) -> None:
    number = parse_number(text)
    assert number is not None and number.value == Fraction(text.replace(",", ""))


@pytest.mark.parametrize("text", ["65,53", "1,2345", "abc", "1e3", "-5"])
def test_malformed_numbers(text: str) -> None:
    assert parse_number(text) is None


def test_ratio() -> None:
    ratio = parse_ratio("23x")
    assert ratio is not None and ratio.text == "23"
    assert parse_ratio("23") is None


def test_half_up_formatting() -> None:
    assert format_fraction(Fraction("75.375"), 2) == "75.38"
    assert format_fraction(Fraction("9.155"), 2) == "9.16"
    assert format_in_unit(9_830_400_000, "GiB", 2) == "9.16 GiB"
    assert format_in_unit(512 * 1024**2, "MiB", 0) == "512 MiB"
