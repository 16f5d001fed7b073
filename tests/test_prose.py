"""The prose-arithmetic grammar: what is a claim, and what it evaluates to."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from kvrecords.kv.lookalikes import look_alikes
from kvrecords.kv.prose import (
    claim_value_in_unit,
    find_claims,
    holds_with_decimal_comma,
    scan,
)
from kvrecords.kv.prose_words import word_claims
from kvrecords.runner.validate import validate


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


GIB = 1024**3
SEED_KV = Fraction(9_830_400_000, GIB)  # 65,536 B/token x 150,000 tokens in GiB


@pytest.mark.parametrize(
    ("text", "expression", "value", "suffix"),
    [
        # equals signs and the words that stand for one
        ("65,536 x 150,000 ≈ 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65,536 x 150,000 -> 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65,536 x 150,000, which is 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65,536 x 150,000 gives 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("2 x 9.58 = ~19.16", "2 x 9.58", Fraction("19.16"), ""),
        ("2 x 9.58, which is about 19.16", "2 x 9.58", Fraction("19.16"), ""),
        # how numbers are written: 150k, thin and non-breaking spaces, billion, 9.8304e9
        ("65,536 x 150k = 9.16 GiB", "65,536 x 150k", SEED_KV, " GiB"),
        ("65\u2009536 x 150\u202f000 = 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65\u00a0536 x 2 = 131,072 B/token", "65,536 x 2", 131_072, " B/token"),
        ("27 billion x 0.5 bytes = 13.5 GB", "27 billion x 0.5 bytes", Fraction("13.5"), " GB"),
        # 9,830,400,000 B is 9.8304 x 10^9 B
        ("65,536 x 150,000 = 9.8304e9 B", "65,536 x 150,000", Fraction("9.8304"), "e9 B"),
        # quotients with / or ÷, and a percentage of a number
        ("53.2/2.3 = 23x", "53.2 / 2.3", Fraction(532, 23), "x"),
        ("53.2 ÷ 2.3 = 23x", "53.2 / 2.3", Fraction(532, 23), "x"),
        ("93.5% of 150,000 = 140,250 tokens", "93.5% x 150,000", 140_250, ""),
        # a percentage as the result: 140,250 / 150,000 = 0.935
        ("140,250 / 150,000 = 93.5%", "140,250 / 150,000", Fraction("93.5"), "%"),
        # sums and differences, with units: 2 GiB + 0.5 GiB; 36.6 - 9.16
        ("2 GiB + 512 MiB = 2.5 GiB", "2 GiB + 512 MiB", Fraction("2.5"), " GiB"),
        ("36.6 GiB - 9.16 GiB = 27.44 GiB", "36.6 GiB - 9.16 GiB", Fraction("27.44"), " GiB"),
        # units on the numbers: 128 GB; 9.16 x 4 = 36.64
        ("4 x 32 GB = 128 GB", "4 x 32 GB", 128, " GB"),
        ("9.16 GiB x 4 = 36.6 GiB", "9.16 GiB x 4", Fraction("36.64"), " GiB"),
        # powers: 2^16 = 65,536, and 65,536 B = 64 KiB
        ("2^16 = 65,536", "2 ^ 16", 65_536, ""),
        ("2^16 B = 64 KiB", "2 ^ 16 B", 64, " KiB"),
        # bytes per token in words
        (
            "16 x 4 x 512 x 2 = 65,536 bytes per token",
            "16 x 4 x 512 x 2",
            65_536,
            " bytes per token",
        ),
        ("16 x 4 x 512 x 2 = 65,536 B per token", "16 x 4 x 512 x 2", 65_536, " B per token"),
        ("16 x 4 x 512 x 2 = 65,536 bytes/token", "16 x 4 x 512 x 2", 65_536, " bytes/token"),
        # "4x 5090": the ratio sign multiplies
        ("4x 2 = 8", "4 x 2", 8, ""),
    ],
)
def test_forms_writers_use(text: str, expression: str, value: Fraction, suffix: str) -> None:
    (claim,) = find_claims(text)
    assert claim.expression == expression
    assert claim.suffix == suffix
    assert claim_value_in_unit(claim) == value
    assert not claim.tentative


def test_bytes_per_token_results_are_marked() -> None:
    for unit in ("B/token", "bytes/token", "B per token", "bytes per token"):
        (claim,) = find_claims(f"2 x 2 = 4 {unit}")
        assert claim.per_token
    (claim,) = find_claims("2 x 2 = 4 B")
    assert not claim.per_token


def test_a_weak_verb_makes_a_tentative_claim() -> None:
    (claim,) = find_claims("Two hosts of 4 GPUs, 2 x 4 GPUs is 9 GPUs.")
    assert claim.expression == "2 x 4" and claim.tentative and claim.result.text == "9"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("45-43 = 2", "a range is not arithmetic; write a difference with spaces (a - b)"),
        ("4 x 32 GB = 128", "it counts bytes but its result has no byte unit"),
        ("2 GiB x 3 GiB = 6 GiB", "its units do not give bytes"),
        ("a 1 / 0 = 4 ratio", "it holds a division by zero"),
        ("1e999 x 1e999 x 1e999 x 1e999 x 1e999 = 1", "it holds a value too large to check"),
    ],
)
def test_arithmetic_the_grammar_cannot_check_is_reported(text: str, reason: str) -> None:
    scanned = scan(text)
    assert scanned.claims == []
    (piece,) = scanned.unreadable
    assert piece.reason == reason


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("65,536 х 150,000 = 9.61 GiB", "х"),  # Cyrillic ha
        ("16 layers × 4 ∗ 2", "∗"),  # asterisk operator
        ("২৫৬ tokens", "২৫৬"),  # Bengali digits
        ("93.5％ of them", "％"),  # fullwidth percent sign
    ],
)
def test_look_alike_characters_are_found(text: str, found: str) -> None:
    assert [piece.text for piece in look_alikes(text)] == [found]


@pytest.mark.parametrize("text", ["Сенн Тех, хорошо 5", "65,536 × 150,000", "ascii only"])
def test_words_in_other_scripts_are_not_look_alikes(text: str) -> None:
    assert look_alikes(text) == []


def test_messages_print_numbers_with_separators(dataset: Path) -> None:
    seed = dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    text = seed.read_text().replace(
        "notes: >-\n", "notes: >-\n  61 x 576 x 2 = 72072 B/token.\n", 1
    )
    seed.write_text(text)
    (problem,) = [p for p in validate(dataset, [seed]).problems if p.code == "KV501"]
    # 61 x 576 x 2 = 70,272
    assert problem.message == "prose claims 61 x 576 x 2 = 72,072 B/token; it is 70,272 B/token"


def test_a_percentage_followed_by_slower_or_more_is_a_change() -> None:
    # 0.541 / 0.569 = 0.9508, a change of 1 - 0.9508 = 4.92 %
    (claim,) = find_claims("at 1k, 0.541 s / 0.569 s is 4.9 percent slower prefill")
    assert claim.suffix == "% slower"
    assert claim_value_in_unit(claim) == (1 - Fraction(541, 569)) * 100


@pytest.mark.parametrize(
    ("prose", "wrong"),
    [
        # 9.16 GiB = 9.16 x 1,073,741,824 = 9,835,475,107.8 B; 9.155 to 9.165 GiB is what
        # 9.16 stands for, so 9,835,000,000 B (9.1596 GiB) states it
        ("9.16 GiB = 9,835,000,000 B.", None),
        ("9.16 GiB is about 9.84 GB, 9.16 GiB ≈ 9.84 GB.", None),
        # 36.6 GiB = 39,298,950,758 B = 39.3 GB: not 40 GB (37.25 GiB)
        ("36.6 GiB = 39.3 GB.", None),
        ("36.6 GiB = 40 GB.", "prose claims 36.6 GiB = 40 GB; it is 39 GB (39,298,950,758.4 B)"),
        ("36.6 GiB ≈ 50 GB.", "prose claims 36.6 GiB = 50 GB; it is 39 GB (39,298,950,758.4 B)"),
        # 65,536 B/token = 64 KiB/token exactly
        ("65,536 B/token = 64 KiB/token.", None),
        (
            "65,536 B/token = 60 KiB/token.",
            "prose claims 65,536 B/token = 60 KiB/token; it is 64 KiB/token (65,536 B)",
        ),
        # a count of tokens is no byte quantity: nothing to convert
        ("150,000 tokens = 9.16 GiB.", None),
    ],
)
def test_a_byte_quantity_said_in_another_unit_is_checked(
    dataset: Path, prose: str, wrong: str | None
) -> None:
    seed = dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    seed.write_text(seed.read_text().replace("notes: >-\n", f"notes: >-\n  {prose}\n", 1))
    found = [p.message for p in validate(dataset, [seed]).problems if p.code == "KV501"]
    assert found == ([] if wrong is None else [wrong])


# 65,536 B/token x 150,000 tokens = 9,830,400,000 B: 9.155 GiB, 9.8304 GB, 9,375 MiB exactly
@pytest.mark.parametrize(
    ("text", "expression", "value", "suffix"),
    [
        # digit groups of plain spaces and apostrophes
        ("65 536 x 150 000 = 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65'536 x 150'000 = 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65\u2019536 x 2 = 131,072", "65,536 x 2", 131_072, ""),
        # operators in words
        ("65,536 times 150,000 = 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("65,536 by 150,000 = 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        ("16 layers times 4 heads x 1,024 = 65,536", "16 x 4 x 1,024", 65_536, ""),
        ("53.2 s divided by 2.3 s = 23x", "53.2 / 2.3", Fraction(532, 23), "x"),
        # a percentage written with a space, then "of"
        ("93.5 % of 150,000 = 140,250 tokens", "93.5% x 150,000", 140_250, ""),
        # a power of ten after the result: 9.8304 x 10^9 B
        ("65,536 x 150,000 = 9.8304 x 10^9 B", "65,536 x 150,000", Fraction("9.8304"), " x 10^9 B"),
        ("65,536 x 150,000 = 9.8304 × 10^9 B", "65,536 x 150,000", Fraction("9.8304"), " x 10^9 B"),
        # units written out
        ("65,536 x 150,000 = 9.16 gibibytes", "65,536 x 150,000", SEED_KV, " gibibytes"),
        (
            "65,536 x 150,000 = 9.83 gigabytes",
            "65,536 x 150,000",
            Fraction(9_830_400_000, 10**9),
            " gigabytes",
        ),
        ("65,536 x 150,000 = 9,375 mebibytes", "65,536 x 150,000", 9375, " mebibytes"),
        # a decimal comma where no thousands group reads so: 2 x 4.58 = 9.16
        ("2 x 4,58 GiB = 9,16 GiB", "2 x 4.58 GiB", Fraction("9.16"), " GiB"),
        ("0,935 x 150,000 = 140,250", "0.935 x 150,000", 140_250, ""),
        # "~" between an expression and its result
        ("65,536 x 150,000 ~ 9.16 GiB", "65,536 x 150,000", SEED_KV, " GiB"),
        # a signed result: 36.6 - 40 = -3.4
        ("36.6 - 40 = -3.4", "36.6 - 40", Fraction("-3.4"), ""),
    ],
)
def test_more_forms_writers_use(text: str, expression: str, value: Fraction, suffix: str) -> None:
    (claim,) = find_claims(text)
    assert claim.expression == expression
    assert claim.suffix == suffix
    assert claim_value_in_unit(claim) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # (36.6 - 53.2) / 53.2 = -16.6 / 53.2 = -31.203 %
        ("from 53.2 s to 36.6 s = -35 %", Fraction(-166, 532) * 100),
        ("from 53.2 s to 36.6 s, which is -31.2 %", Fraction(-166, 532) * 100),
        # a change written without its sign states its size
        ("from 53.2 s to 36.6 s = 31.2 %", Fraction(166, 532) * 100),
        # between two percentages the change may be in points: 50 - 40 = 10
        ("from 40 % to 50 % = 10 %", Fraction(10)),
        ("from 40 % to 50 % = 25 %", Fraction(25)),
    ],
)
def test_a_change_from_one_figure_to_another(text: str, value: Fraction) -> None:
    (claim,) = find_claims(text)
    assert claim.expression.startswith("from ")
    assert claim_value_in_unit(claim) == value


@pytest.mark.parametrize(
    "text",
    [
        "TTFT reduced by 23x = 2.3 s",  # "by" after a word is no product
        "16 GiB ~ 24 GiB",  # "~" between two figures of one unit is a range
        "from 4 GiB to 2 GiB = 2 GiB",  # a change is a percentage
        "the batch grew to 8 = twice",
    ],
)
def test_word_forms_that_are_not_claims(text: str) -> None:
    assert find_claims(text) == []


def test_a_comma_that_reads_both_ways_is_ambiguous_not_wrong() -> None:
    # 1,5 x 2,000 = 3: as thousands 1.5 x 2,000 = 3,000; with decimal commas 1.5 x 2.000 = 3
    (claim,) = find_claims("1,5 x 2,000 = 3")
    assert holds_with_decimal_comma(claim)
    # 1,500 x 2 = 3,000 holds as thousands, so the check never asks the other reading
    (claim,) = find_claims("1,500 x 2 = 3,000")
    assert claim_value_in_unit(claim) == 3000
    # 1,500 x 2 = 4: wrong either way (3,000 or 3)
    (claim,) = find_claims("1,500 x 2 = 4")
    assert not holds_with_decimal_comma(claim)


@pytest.mark.parametrize(
    ("text", "expression", "result", "value"),
    [
        # 2 x 4.00 = 8.00, not 9.16; 9.16 / 2 = 4.58, not 4.00
        ("the cache holds 9.16 GiB, twice the 4.00 GiB of fp8", "twice 4.00 GiB", "9.16", 8),
        ("fp8 holds 5.58 GiB, half of 9.16 GiB", "half of 9.16 GiB", "5.58", Fraction("4.58")),
        ("twice 4.58 GiB is 10.16 GiB", "twice 4.58 GiB", "10.16", Fraction("9.16")),
        # 36.6 / 4 = 9.15
        (
            "q4 takes 3.29 GiB, a quarter of 36.6 GiB",
            "a quarter of 36.6 GiB",
            "3.29",
            Fraction("9.15"),
        ),
        # 3 x 2 s = 6 s (or 4 x 2 s = 8 s for "3 times more"): 5 s is neither
        ("TTFT is 5 s, 3 times more than 2 s", "3 times more than 2 s", "5", 6),
        ("decode 70 tok/s, half of 150 tok/s", "half of 150 tok/s", "70", 75),
    ],
)
def test_a_ratio_in_words_that_its_figures_do_not_bear_out(
    text: str, expression: str, result: str, value: Fraction
) -> None:
    (claim,) = word_claims(text)
    assert (claim.expression, claim.result.text) == (expression, result)
    assert claim_value_in_unit(claim) == value


@pytest.mark.parametrize(
    "text",
    [
        "the cache holds 9.16 GiB, twice the 4.58 GiB of fp8",
        "fp8 holds 4.58 GiB, half of 9.16 GiB",
        "TTFT is 6 s, 3 times more than 2 s",
        "TTFT is 8 s, 3 times more than 2 s",  # "3 times more" read as 4 times
        "q4 takes 9.15 GiB, a quarter of 36.6 GiB",
        "it needs about twice 4 GiB, 9 GiB",  # hedged: no exact ratio claimed
        "the mean inter-token latency doubled, from 65.17 ms",  # nothing after the word
        "at 150,000 tokens, twice 4.58 GiB",  # no figure of the same kind to compare
    ],
)
def test_ratios_in_words_that_hold_or_claim_nothing(text: str) -> None:
    assert word_claims(text) == []


@pytest.mark.parametrize(
    ("prose", "warned"),
    [
        # the seed's basis: 16 layers x 4 x 512 x 2 = 65,536 B/token; in fp8 32,768; per layer
        # 65,536 / 16 = 4,096; per device of the 4-card run 65,536 / 4 = 16,384
        ("The cache needs 65,536 B/token.", False),
        ("In fp8 it would need 32,768 B/token.", False),
        ("Each attention layer holds 4,096 B/token.", False),
        ("Each of four cards holds 16,384 B/token.", False),
        ("That is 64 KiB per token.", False),  # 65,536 B in KiB
        # another model's figure, named by its file: 80 x 8 x 256 x 2 = 327,680
        ("Llama 3.1 70B (models/llama-3.1-70b) needs 327,680 B/token.", False),
        ("Llama 3.1 70B needs 327,680 B/token.", True),
        ("The cache needs 40,000 B/token.", True),
    ],
)
def test_a_bytes_per_token_figure_that_matches_no_basis_is_a_warning(
    dataset: Path, prose: str, warned: bool
) -> None:
    seed = dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    seed.write_text(seed.read_text().replace("notes: >-\n", f"notes: >-\n  {prose}\n", 1))
    found = [p for p in validate(dataset, [seed]).problems if p.code == "KV502"]
    assert [p.severity for p in found] == (["warning"] if warned else [])
    if warned:
        assert "main basis 65,536" in found[0].message
        assert "4,096 per attention layer" in found[0].message
