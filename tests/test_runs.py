"""Comparisons as sources write them, and the card beside a headline run that gives a bound.

The seed's runs: cold TTFT 53,200 ms, warm 2,300 ms, so the speedup is 53,200 / 2,300 =
23.1304 (hand computation).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvrecords.runner.validate import validate

SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")


def with_stated(dataset: Path, stated: str) -> list[str]:
    path = dataset / SEED
    path.write_text(path.read_text().replace("stated: 23x", f"stated: '{stated}'"))
    return [p.code for p in validate(dataset, [path]).problems]


@pytest.mark.parametrize(
    ("stated", "codes"),
    [
        ("23x", []),
        ("~23x", []),  # about: one unit of the last digit either way, 22-24
        ("~25x", ["KV402"]),
        ("20-25x", []),  # a range that holds 23.13
        ("24-25x", ["KV402"]),  # starts above 23.13 + 0.5
        ("<=24x", []),  # "up to 24x"
        ("<=22x", ["KV402"]),  # 23.13 is above 22.5
        (">=20x", []),  # "over 20x"
        (">=24x", ["KV402"]),  # 23.13 is below 23.5
        ("-95.7%", ["KV402"]),  # a speedup is not a change, and 23x is not -95.7x
    ],
)
def test_a_stated_comparison_is_held_to_what_it_says(
    dataset: Path, stated: str, codes: list[str]
) -> None:
    assert with_stated(dataset, stated) == codes


def test_a_change_is_recomputed_as_a_signed_percentage(dataset: Path) -> None:
    path = dataset / SEED
    text = path.read_text().replace("kind: speedup", "kind: change")
    # (2,300 - 53,200) / 53,200 = -0.95677, written -95.7%
    path.write_text(text.replace("stated: 23x", "stated: -95.7%"))
    assert validate(dataset, [path]).problems == []
    path.write_text(text.replace("stated: 23x", "stated: -90%"))
    (problem,) = validate(dataset, [path]).problems
    assert problem.message == "change is -90%; (2,300 - 53,200) / 53,200 = -95.6767%"


def test_a_headline_bound_leaves_the_card_null(dataset: Path) -> None:
    """ "Over 100 tokens/s" is a bound: the card cannot hold it, so null is right there."""
    path = dataset / SEED
    bound = (
        "      - name: output_tokens_per_s\n"
        "        statistic: single\n"
        "        value: {min: 100}\n"
        "      - name: hit_rate\n"
    )
    text = path.read_text().replace("      - name: hit_rate\n", bound, 1)
    path.write_text(text)
    assert validate(dataset, [path]).problems == []
    path.write_text(text.replace("value: {min: 100}", "value: 100"))
    problems = {p.code: p for p in validate(dataset, [path]).problems}
    assert set(problems) == {"KV803"}
    problem = problems["KV803"]
    assert "headline run 'warm' gives output_tokens_per_s 100: state it" in problem.message


def test_a_rate_stated_as_at_least_is_checked_at_that_bound(dataset: Path) -> None:
    """ "Over 50K tokens/s" on one RTX 5090 for a 27B is impossible on any reading: with any
    number of sequences each step reads every sequence's KV, at least 150,000 x 32,768 B (fp8)
    = 4.9152 GB, so 1,792 GB/s gives at most 1,792 / 4.9152 = 364.6 tok/s."""
    path = dataset / SEED
    bound = (
        "      - name: output_tokens_per_s\n"
        "        statistic: single\n"
        "        value: {min: 50000}\n"
        "      - name: hit_rate\n"
    )
    path.write_text(path.read_text().replace("      - name: hit_rate\n", bound, 1))
    problems = validate(dataset, [path]).problems
    assert [(p.code, p.severity) for p in problems] == [("KV702", "error")]


def test_unbounded_concurrency_is_read_favourably_not_crashed_on(dataset: Path) -> None:
    path = dataset / SEED
    text = path.read_text().replace("  concurrency: null\n", "  concurrency: unbounded\n")
    text = text.replace(
        "  - field: methodology.concurrency\n    reason: The post does not state the concurrency of the replay.\n",
        "",
    )
    path.write_text(text)
    assert validate(dataset, [path]).problems == []


@pytest.mark.parametrize(("rate", "flagged"), [(60, False), (100, True)])
def test_a_runs_decode_rate_meets_the_roofline(dataset: Path, rate: int, flagged: bool) -> None:
    """One RTX 5090: 1,792e9 B/s / (27e9 x 4 / 8 + 9,830,400,000 B) = 76.81 tok/s per sequence
    (4-bit weights, the most lenient reading of "a quantized 27B")."""
    path = dataset / SEED
    decode = (
        "      - name: decode_tokens_per_s\n"
        "        statistic: single\n"
        f"        value: {rate}\n"
        "      - name: hit_rate\n"
    )
    text = path.read_text().replace("      - name: hit_rate\n", decode, 1)
    text = text.replace("measured_tps_at_ctx: null", f"measured_tps_at_ctx: {rate}")
    text = text.replace(
        "  - field: measured_tps_at_ctx\n    reason: The post does not publish decode tokens/s.\n",
        "",
    )
    path.write_text(text)
    problems = validate(dataset, [path]).problems
    roofline = [p for p in problems if p.code == "KV702"]
    assert bool(roofline) is flagged, problems
    assert {p.code for p in problems} <= {"KV702"}
    if flagged:
        line = text.split("\n")[roofline[0].line - 1]
        assert line.strip() == f"value: {rate}"


@pytest.mark.parametrize("statistic", ["not_stated", "harmonic_mean"])
def test_figures_of_one_statistic_are_compared_as_stated(dataset: Path, statistic: str) -> None:
    """A benchmark's unqualified "TTFT 53.2 s" is not_stated, not a guessed mean; a rate from
    the mean time per token is harmonic_mean. Figures with the same statistic are compared as
    stated: 53,200 / 2,300 = 23.1304."""
    path = dataset / SEED
    text = path.read_text()
    for value in ("value: 53200", "value: 2300"):
        text = text.replace(
            f"statistic: single\n        {value}", f"statistic: {statistic}\n        {value}"
        )
    text = text.replace(
        "statistic: single\n    from: cold", f"statistic: {statistic}\n    from: cold"
    )
    assert text.count(f"statistic: {statistic}") == 3
    path.write_text(text)
    assert validate(dataset, [path]).problems == []
    path.write_text(text.replace("stated: 23x", "stated: 32x"))
    (problem,) = validate(dataset, [path]).problems
    assert problem.code == "KV402"
    assert problem.message == "speedup is 32x; 53,200 / 2,300 = 23.1304x"


def with_comparison(dataset: Path, comparison: str) -> list[tuple[str, str]]:
    """The seed with one more comparison after its speedup; its problems, code and message."""
    path = dataset / SEED
    text = path.read_text()
    anchor = "    stated_as: 53.2 s cold to 2.3 s warm is 23x on that one prompt\n"
    path.write_text(text.replace(anchor, anchor + comparison, 1))
    return [(p.code, p.message) for p in validate(dataset, [path]).problems]


TTFT_DIFFERENCE = (
    "  - kind: difference\n    metric: ttft_ms\n    statistic: single\n"
    "    from: cold\n    to: warm\n    stated: '{stated}'\n"
)
HIT_RATE_DIFFERENCE = (
    "  - kind: difference\n    metric: hit_rate\n    statistic: single\n"
    "    from: four-days-mixed\n    to: four-days-reused-documents\n    stated: '{stated}'\n"
)


@pytest.mark.parametrize(
    ("comparison", "stated", "problems"),
    [
        # 2,300 - 53,200 = -50,900 ms
        (TTFT_DIFFERENCE, "-50,900 ms", []),
        (
            TTFT_DIFFERENCE,
            "-50,000 ms",
            [("KV402", "difference is -50,000 ms; 2,300 - 53,200 = -50,900 ms")],
        ),
        (
            TTFT_DIFFERENCE,
            "-50.9 s",
            [("KV402", "difference is -50.9 s; a difference of ttft_ms is written in ms")],
        ),
        # hit rates 0.43-0.45 and 0.70-0.90: 0.70 - 0.45 = 0.25 to 0.90 - 0.43 = 0.47, in
        # percentage points 25 to 47
        (HIT_RATE_DIFFERENCE, "+25-47pp", []),
        (HIT_RATE_DIFFERENCE, "+30pp", []),
        (
            HIT_RATE_DIFFERENCE,
            "+10pp",
            [
                (
                    "KV402",
                    "difference is +10pp; 0.7-0.9 - 0.43-0.45 (x 100 points) = 25 to 47 pp",
                )
            ],
        ),
        (
            HIT_RATE_DIFFERENCE,
            "+30%",
            [("KV402", "difference is +30%; a difference of hit_rate is written in pp")],
        ),
    ],
)
def test_a_difference_is_recomputed_in_the_metrics_unit(
    dataset: Path, comparison: str, stated: str, problems: list[tuple[str, str]]
) -> None:
    assert with_comparison(dataset, comparison.format(stated=stated)) == problems


def test_sizes_written_with_a_unit_are_compared_in_bytes(dataset: Path) -> None:
    """10 GiB cold and 5120 MiB warm: 5,368,709,120 / 10,737,418,240 = 0.5 exactly."""
    path = dataset / SEED
    text = path.read_text()
    for stated_as, size in (("53.2 s cold", "10 GiB"), ("2.3 s warm", "5120 MiB")):
        line = f"        stated_as: {stated_as}\n"
        added = f"      - name: kv_memory_bytes\n        statistic: single\n        value: {size}\n"
        assert line in text
        text = text.replace(line, line + added, 1)
    ratio = (
        "  - kind: ratio\n    metric: kv_memory_bytes\n    statistic: single\n"
        "    from: cold\n    to: warm\n    stated: '{stated}'\n"
    )
    path.write_text(text)
    assert with_comparison(dataset, ratio.format(stated="0.5x")) == []
    path.write_text(text)
    assert with_comparison(dataset, ratio.format(stated="0.6x")) == [
        ("KV402", "ratio is 0.6x; 5,368,709,120 / 10,737,418,240 = 0.5x")
    ]
