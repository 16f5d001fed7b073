"""The prose-arithmetic grammar: what is a claim, and what it evaluates to."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kvrecords.kv.prose import claim_value_in_unit, find_claims


@pytest.mark.parametrize(
    ("text", "expression", "value", "unit"),
    [
        # the seed's three claims
        (
            "16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes = 65,536 B/token",
            "16 x 4 x 256 x 2 x 2 bytes",
            65536,
            "B/token",
        ),
        (
            "that is 65,536 x\n    150,000 = 9.16 GiB of KV",
            "65,536 x 150,000",
            Fraction(9_830_400_000, 1024**3),
            "GiB",
        ),
        (
            "reads of 0.935 x 150,000 x 65,536 = 8.56 GiB",
            "0.935 x 150,000 x 65,536",
            Fraction(9_191_424_000, 1024**3),
            "GiB",
        ),
        # the kv command's own formula form, with a parenthesised sum
        (
            "61 layers x (512 + 64) x 1 byte = 35,136 B/token",
            "61 x (512 + 64) x 1 byte",
            35136,
            "B/token",
        ),
        # a parenthesis before a number opens the claim rather than labelling the number before it
        ("128 tokens each (12 x 2,048 x 128 = 3,145,728 B)", "12 x 2,048 x 128", 3_145_728, "B"),
        ("53.2 / 2.3 = 23x", "53.2 / 2.3", Fraction(532, 23), "x"),
        ("93.5% x 150,000 = 140,250 tokens", "93.5% x 150,000", 140_250, None),
        ("2x3 = 6", "2 x 3", 6, None),
        (
            "in GB: 65,536 x 150,000 = 9.83 GB",
            "65,536 x 150,000",
            Fraction(9_830_400_000, 10**9),
            "GB",
        ),
    ],
)
def test_claims(text: str, expression: str, value: Fraction, unit: str | None) -> None:
    (claim,) = find_claims(text)
    assert claim.expression == expression
    assert claim.unit == unit
    assert claim_value_in_unit(claim) == value


@pytest.mark.parametrize(
    "text",
    [
        "53.2 s cold to 2.3 s warm is 23x",  # no '='
        "x = 5",  # no chain
        "model-x 3 = 3",  # a single number is not a chain
        "a 1 / 0 = 4 ratio",  # division by zero is not a claim
        "see https://example.org/a?x=1",
    ],
)
def test_not_claims(text: str) -> None:
    assert find_claims(text) == []


def test_several_claims_in_one_text() -> None:
    claims = find_claims("First 2 x 3 = 6. Then 4 x 5 = 21, which is wrong.")
    assert [(c.expression, c.result.text) for c in claims] == [("2 x 3", "6"), ("4 x 5", "21")]
