"""KV805's reading of a quote: every number as the source wrote it, on every reading."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kvrecords.checks.quotes import quoted_numbers


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        # thousands separators and trailing zeros: 6,793.80 is 679380/100
        ("Median TTFT (ms): 6,793.80", [(Fraction(679380, 100), "")]),
        # a unit after the number, with or without a space
        ("53.2 s cold", [(Fraction(532, 10), "s")]),
        ("drops vRAM usage by cache from 4GB to 1.1GB", [(4, "GB"), (Fraction(11, 10), "GB")]),
        # a decimal comma (llama.cpp under a European locale): 256,00 MiB is 256.00 MiB
        ("size =  256,00 MiB", [(256, "MiB")]),
        # a CSV row: a comma before a decimal number separates fields (127,11.94 is 127 and
        # 11.94, not 127.11 followed by 94)
        (
            "128,11.97,127,11.94",
            [(128, ""), (Fraction(1197, 100), ""), (127, ""), (Fraction(1194, 100), "")],
        ),
        # an exponent: 8.94e-06 = 894 / 10^8
        ("slope 8.94e-06 ms/token", [(Fraction(894, 10**8), "ms")]),
        # "percent" is %
        ("93.5 percent on the replay", [(Fraction(935, 10), "%")]),
    ],
)
def test_numbers_are_read_as_written(quote: str, expected: list[tuple[Fraction, str]]) -> None:
    assert [(n.number, n.unit) for n in quoted_numbers(quote)] == [
        (Fraction(number), unit) for number, unit in expected
    ]


def test_space_grouped_digits_are_read_both_ways() -> None:
    # "16 178" is 16,178 in a locale that groups by spaces, or 16 and 178
    numbers = {n.number for n in quoted_numbers("Same image | 16 178 |")}
    assert numbers == {16178, 16, 178}


def test_ratios_and_number_words_are_read() -> None:
    assert Fraction(1) in {n.number for n in quoted_numbers("scored 30/30 with caching on")}
    assert 5 in {n.number for n in quoted_numbers("roughly five times higher")}


def test_number_words_are_read_in_any_case_and_not_inside_other_words() -> None:
    assert [n.number for n in quoted_numbers("TWICE as many, Half the rest")] == [2, Fraction(1, 2)]
    assert quoted_numbers("often, attention, someone, two3") == []
    # U+0130 folds to "i" case-blind but lowers to two characters: read, never a crash
    assert [n.number for n in quoted_numbers("f\u0130ve times")] == [5]


def test_half_of_the_last_written_digit_is_the_tolerance() -> None:
    (number,) = quoted_numbers("2.30 s")
    assert number.half_step == Fraction(5, 1000)  # 2.30 allows [2.295, 2.305)
    (number,) = quoted_numbers("23x")
    assert number.half_step == Fraction(1, 2)
