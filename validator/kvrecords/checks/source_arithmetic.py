"""KV407: a comparison flagged as the source's own arithmetic is one, and says what its runs
give.

A source that rounds or computes carelessly (-70.9% where its figures give -70.85%) keeps its
figure in ``stated``; ``source_arithmetic.recomputed`` holds what the runs give. The flag stands
only on a plain figure that misses the runs at its written precision by at most two units of its
last digit (with two significant figures at least), and the recomputed figure meets the full
precision rule of the record's own figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from kvrecords.checks.context import RecordContext
from kvrecords.checks.measurements import SOURCE_ARITHMETIC, source_slip
from kvrecords.checks.runs import (
    Comparison,
    Stated,
    comparison_agrees,
    comparisons,
    shown_recomputed,
    stated_comparison,
    unit_suffix,
)
from kvrecords.kv.units import Written, agrees
from kvrecords.problems import Problem


def check_source_arithmetic(record: RecordContext) -> Iterator[Problem]:
    """KV407: every flagged comparison, against its recomputation."""
    if not any("source_arithmetic" in item for item in record.data.get("comparisons", [])):
        return
    for comparison in comparisons(record):
        if "source_arithmetic" not in comparison.stated:
            continue
        if comparison.value is None:
            message = (
                f"source_arithmetic cannot be checked: {comparison.working}; a figure that "
                "cannot be recomputed needs no flag"
            )
            yield record.problem(
                SOURCE_ARITHMETIC, (*comparison.path, "source_arithmetic"), message
            )
            continue
        stated = stated_comparison(comparison.stated["stated"])
        scale = 100 if stated.percent else 1
        low, high = comparison.value.low * scale, comparison.value.high * scale
        agreeing = comparison_agrees(stated, low, high, comparison.value.approximate)
        yield from _flag_problems(record, comparison, stated, agreeing, low, high)


def _flag_problems(
    record: RecordContext,
    comparison: Comparison,
    stated: Stated,
    agreeing: bool,
    low: Fraction,
    high: Fraction,
) -> Iterator[Problem]:
    """KV407: the flag stands on a plain figure the runs do not give, a slip of at most two
    units of its last digit, and its recomputed figure is what the runs give."""
    flag = comparison.stated["source_arithmetic"]
    path = (*comparison.path, "source_arithmetic")
    written = comparison.stated["stated"]
    suffix = unit_suffix(stated.unit)
    working = f"{comparison.working} = {shown_recomputed(stated, low, high)}{suffix}"
    problem = None
    if stated.form != "exact":
        problem = (
            f"stated {written} is not one plain figure; source_arithmetic keeps a figure the "
            "source wrote as exact (`~`, a range or a bound already says how exact it is)"
        )
    elif agreeing:
        problem = (
            f"stated {written} agrees with {working} at the precision written: it is no slip "
            "of the source's; remove source_arithmetic"
        )
    elif (too_far := source_slip(stated.low, low, high)) is not None:
        problem = (
            f"stated {written} {too_far} {working}: not a source's rounding slip (at most two "
            "units of its last digit, two significant figures); read the runs and the figure "
            "again against the source"
        )
    if problem is not None:
        yield record.problem(SOURCE_ARITHMETIC, path, problem)
        return
    recomputed = stated_comparison(flag["recomputed"])
    if recomputed.unit != stated.unit:
        message = (
            f"source_arithmetic.recomputed is {flag['recomputed']}; it is written in "
            f"{stated.unit}, as stated {written} is"
        )
    elif recomputed.low.decimals < stated.low.decimals:
        message = (
            f"source_arithmetic.recomputed is {flag['recomputed']}; write it with at least as "
            f"many decimals as stated {written} ({working})"
        )
    elif not _recomputed_agrees(recomputed.low, low, high):
        message = f"source_arithmetic.recomputed is {flag['recomputed']}; {working}"
    else:
        return
    yield record.problem(SOURCE_ARITHMETIC, (*path, "recomputed"), message)


def _recomputed_agrees(written: Written, low: Fraction, high: Fraction) -> bool:
    """The record's own figure: the full precision rule against the value, or inside the
    interval a range of measurements gives."""
    if low == high:
        return agrees(written, low)
    figure = Fraction(written.value)
    return low <= figure <= high or agrees(written, low) or agrees(written, high)
