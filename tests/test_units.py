"""Byte units and the stated-precision rule."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kvrecords.kv.units import (
    BYTE_UNITS,
    Written,
    agrees,
    disagreement,
    format_exact,
    format_fraction,
    format_in_unit,
    parse_byte_quantity,
    parse_number,
    significant_figures,
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
    # 23x allows [22.5, 23.5): both ends are within 1 % of 23 (0.5 / 22.5 is 2.2 %, so the
    # relative rule decides at the low end: 22.5 is 2.2 % below 23)
    assert agrees(Written("23"), Fraction(2301, 100))
    assert agrees(Written("23"), Fraction(2278, 100))  # 0.97 % below 23
    assert not agrees(Written("23"), Fraction(225, 10))  # rounds to 23 but 2.2 % off
    assert not agrees(Written("23"), Fraction(235, 10))


@pytest.mark.parametrize(
    ("text", "figures"),
    [("9.16", 3), ("0.050", 2), ("150,000", 6), ("0", 0), ("0.0", 0), ("10", 2), ("7", 1)],
)
def test_significant_figures(text: str, figures: int) -> None:
    assert significant_figures(Written(text)) == figures


@pytest.mark.parametrize(
    ("written", "exact", "why"),
    [
        # 9.16 GiB is 9,830,400,000 B: 0 TiB and 0 TB round to it, but it is not zero
        ("0", Fraction(9_830_400_000, 1024**4), "it is not zero"),
        ("0", Fraction(9_830_400_000, 10**12), "it is not zero"),
        # 9,830,400,000 B is 9.8304 GB: 10 GB rounds to it, 0.1696 / 9.8304 = 1.7 % off
        ("10", Fraction(98_304, 10_000), "it is 1.7% off; a figure agrees within 1 %"),
        # 2.14 GiB: 2 has one significant figure; 2.1 is 0.04 / 2.14 = 1.9 % off
        ("2", Fraction(214, 100), "write it with at least two significant figures"),
        ("2.1", Fraction(214, 100), "it is 1.9% off; a figure agrees within 1 %"),
        ("9.61", Fraction(9_830_400_000, 1024**3), "it does not round to the figure written"),
    ],
)
def test_a_figure_must_agree_within_one_percent_with_two_significant_figures(
    written: str, exact: Fraction, why: str
) -> None:
    assert disagreement(Written(written), exact) == why
    assert not agrees(Written(written), exact)


@pytest.mark.parametrize(
    ("written", "exact"),
    [
        ("6", Fraction(6)),  # exact: any number of figures
        ("0", Fraction(0)),
        ("9.16", Fraction(9_830_400_000, 1024**3)),  # 9.1553: 0.05 % off
        ("36.6", Fraction(39_321_600_000, 1024**3)),  # 36.621: 0.06 % off
        ("23", Fraction(53_200, 2_300)),  # 23.130: 0.57 % off
    ],
)
def test_figures_that_agree(written: str, exact: Fraction) -> None:
    assert disagreement(Written(written), exact) is None


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


def test_half_up_formatting() -> None:
    assert format_fraction(Fraction("75.375"), 2) == "75.38"
    assert format_fraction(Fraction("9.155"), 2) == "9.16"
    assert format_in_unit(9_830_400_000, "GiB", 2) == "9.16 GiB"
    assert format_in_unit(512 * 1024**2, "MiB", 0) == "512 MiB"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (Fraction(65536), "65,536"),
        (Fraction(187, 200), "0.935"),
        (Fraction(1, 3), "0.3333"),
        (Fraction("23.13043"), "23.1304"),
        # below one, four significant figures: an ITL slope of 8.94e-06 ms/token is not 0
        (Fraction("8.94e-06"), "0.00000894"),
        (Fraction("7.14e-06") / Fraction("8.94e-06"), "0.7987"),
        (Fraction(1, 20000), "0.00005"),
        (Fraction(-1, 7000), "-0.0001429"),
    ],
)
def test_exact_values_are_shown_with_their_significant_figures(value: Fraction, shown: str) -> None:
    assert format_exact(value) == shown
