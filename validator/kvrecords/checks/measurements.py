"""KV401-KV405, KV407: figures derived from measurements agree with them, ranges run forwards,
and a source's own arithmetic is flagged only where it is the source's.

The rules are declared here; ``checks/runs.py`` reports KV401, KV403 and KV404 for each run's
``derived`` figures and KV402 and KV407 for each comparison, where the runs they rest on are
read.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from kvrecords.checks.context import RecordContext, value_at
from kvrecords.kv.units import (
    MIN_SIGNIFICANT_FIGURES,
    Written,
    format_fraction,
    format_number,
    significant_figures,
)
from kvrecords.problems import Problem, Rule

TOKENS_NOT_RECOMPUTED = Rule(
    "KV401",
    "tokens-not-recomputed",
    "A run's derived.tokens_not_recomputed = its hit_rate x its context_tokens, at the precision "
    "written, within 1 % and to two significant figures.",
    "The hit rate is measured; the tokens it saves follow from it and must agree.",
    "metrics:\n  - {name: hit_rate, statistic: single, value: 0.935, ...}\n"
    "derived: {tokens_not_recomputed: 140250}   (context 150,000)",
    "derived: {tokens_not_recomputed: 142500}\n"
    "# KV401 tokens_not_recomputed is 142,500; 0.935 x 150,000 = 140,250",
)

SPEEDUP = Rule(
    "KV402",
    "speedup",
    "A comparison's stated speedup, ratio, change or difference agrees with its two runs' "
    "values of the metric and statistic it names, at the precision the source wrote it, and "
    "is written in its unit (x, %, or the metric's unit for a difference: pp for a fraction); "
    "where a run gives only a bound ('over 50K tokens/s'), a value the bound leaves open. "
    "`23x` holds for [22.5, 23.5); `~23x` ('about') for one unit of its last digit either way, "
    "[22, 24]; a range when it overlaps the recomputed one; `<=` and `>=` as bounds. "
    "The 1 % rule of the record's own figures does not apply: the figure is the source's.",
    "A speedup is the headline a reader quotes; it must follow from the two runs' figures. "
    "Where the source itself rounded or computed carelessly, the record keeps its figure and "
    "says so with `source_arithmetic` (KV407), not with a `~` the source never wrote.",
    "comparisons:\n  - {kind: speedup, metric: ttft_ms, statistic: single, from: cold, to: warm, "
    "stated: 23x}   (cold 53,200 ms, warm 2,300 ms)",
    "stated: 32x\n# KV402 speedup is 32x; 53,200 / 2,300 = 23.1304x",
)

SOURCE_ARITHMETIC = Rule(
    "KV407",
    "source-arithmetic",
    "A comparison flagged `source_arithmetic` keeps a plain figure that its runs do not give at "
    "the precision written, but within two units of its last digit, and has at least two "
    "significant figures; `recomputed` gives "
    "what the "
    "runs give, in the same unit, by the full precision rule (at the precision written, within "
    "1 %, two significant figures).",
    "Sources round and compute carelessly (-70.9% where their own figures give -70.85%, 1.49x "
    "for 1.50x). `~` would claim the source said 'about'; the flag keeps the source's figure as "
    "the source's, and explain, the site and the export show the recomputed one beside it. "
    "The flag cannot hide a different figure or a typo: a figure further off than two units "
    "of its last digit is not a rounding slip, a figure of one significant figure is too coarse "
    "to tell a slip from a different figure, and a flag on a figure that agrees is "
    "refused.",
    "stated: -27.93%   (runs: 98,049.79 ms -> 70,669.68 ms)\n"
    "source_arithmetic: {recomputed: -27.92%, note: the table's rounding}",
    "stated: -27.93%\nsource_arithmetic: {recomputed: -27.90%, note: ...}\n"
    "# KV407 source_arithmetic.recomputed is -27.90%; (70,669.68 - 98,049.79) / 98,049.79 = "
    "-27.9248%",
)

# A source's careless rounding or arithmetic moves its figure by a unit or two of its last
# digit (half-up against half-even, truncation, rounding an intermediate figure); a figure
# further off is a different quantity, a misreading or a typo, which the flag must not hide, and
# one significant figure (0.6x for 0.5x) is too coarse to tell a slip from a different figure.
SOURCE_SLIP_UNITS = 2


def source_slip(figure: Written, low: Fraction, high: Fraction) -> str | None:
    """Why ``figure`` cannot be a source's slip from [low, high]; None when it can be (at most
    two units of its last digit from the nearest end, two significant figures at least)."""
    stated = Fraction(figure.value)
    nearest = min(max(stated, low), high)
    units = abs(stated - nearest) * 10**figure.decimals
    if units > SOURCE_SLIP_UNITS:
        return f"is {format_fraction(units, 1)} units of its last digit from"
    if significant_figures(figure) < MIN_SIGNIFICANT_FIGURES:
        return "has one significant figure, too coarse to be told from"
    return None


BYTES_NOT_RECOMPUTED = Rule(
    "KV403",
    "bytes-not-recomputed",
    "A run's derived.bytes_not_recomputed = its hit_rate x its context_tokens x bytes_per_token, "
    "at the precision written, within 1 % and to two significant figures.",
    "It is the KV the cache saved from being written again; it uses the basis's bytes per "
    "token as recomputed from the model.",
    "derived: {bytes_not_recomputed: 8.56 GiB}",
    "derived: {bytes_not_recomputed: 8.65 GiB}\n"
    "# KV403 bytes_not_recomputed is 8.65 GiB; 0.935 x 150,000 x 65,536 B = 8.56 GiB",
)

PREFILL_RATE = Rule(
    "KV404",
    "prefill-rate",
    "A run's derived.prefill_tokens_per_s_from_ttft = its context_tokens / its TTFT in seconds, "
    "for a run that reuses no cached KV (no hit_rate) and has one request in flight at a time.",
    "A derived prefill rate must follow from the stated context and TTFT. Under a concurrency "
    "above 1 (or unbounded) a TTFT holds queueing and prefills shared in a batch, so context / "
    "TTFT is no prefill rate: it is not derived, and stating it is KV405.",
    "context_tokens: 150000\nmetrics:\n  - {name: ttft_ms, statistic: single, value: 53200}\n"
    "derived: {prefill_tokens_per_s_from_ttft: 2819.5}",
    "derived: {prefill_tokens_per_s_from_ttft: 3000}\n"
    "# KV404 prefill_tokens_per_s_from_ttft is 3,000; 150,000 tokens / 53.2 s = 2,819.5489",
)

RANGE_ORDER = Rule(
    "KV405",
    "range-order",
    "A range's min is not above its max; a derived figure has what it is derived from.",
    "A reversed range is a typo that every consumer would mishandle; a derived figure whose "
    "inputs are missing or ranges cannot be checked and must not be stated as one number.",
    "value: {min: 0.43, max: 0.45}",
    "value: {min: 0.45, max: 0.43}\n# KV405 range min 0.45 is above max 0.43",
)


def check_ranges(record: RecordContext) -> Iterator[Problem]:
    """KV405: no range runs backwards."""
    for path, low in record.document.leaves.items():
        if path[-1] != "min":
            continue
        parent = value_at(record.data, path[:-1])
        high = parent.get("max")
        is_range = set(parent) == {"min", "max"} and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)
        )
        if is_range and low > high:
            message = f"range min {format_number(low)} is above max {format_number(high)}"
            yield record.problem(RANGE_ORDER, path[:-1], message)
