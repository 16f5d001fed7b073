"""KV807: the figures of one run agree with each other.

A run that states a per-sequence decode rate and a TPOT, an E2E latency and an output length,
cached and prompt tokens, an acceptance length and a draft length, or vLLM's maximum
concurrency beside its KV pool, states the same facts twice; a slip in one of them is
invisible to the geometry. Each figure is read as the interval its written precision allows
(``7.28`` is 7.275 to 7.285; ``53,200`` is 53,150 to 53,250, its trailing zeros being
rounding; ``{about: x}`` one unit of its last digit either way; a range its ends; a bound
one-sided), and a check fails only when no point of those intervals satisfies the relation.

The relations, and how far each statistic lets them go:

- decode rate and TPOT: one request's rate is 1000 / TPOT tokens/s. For single figures, a
  harmonic mean rate against a mean TPOT, a minimum rate against the maximum TPOT and a
  maximum rate against the minimum TPOT this is exact. A mean (or median) rate is never
  below 1000 / the mean (or median) TPOT: the mean of reciprocals is at least the reciprocal
  of the mean, and the two middle values of an even count obey the same inequality. Above
  it, only the spread of the TPOTs moves a mean rate: mean(1/x) is about (1 + CV^2) / mean(x),
  so a mean rate over 1.25 x 1000 / mean TPOT needs TPOTs whose standard deviation exceeds
  half their mean: a warning (the likely reading), never an error;
- decode rate, E2E latency and output length: a request's rate is (output - 1) x 1000 /
  (E2E - TTFT), so a single rate is at least (output - 1) x 1000 / E2E, with the TTFT taken
  off where the run states it; a mean or median rate is at least (output - 1) x 1000 / the
  mean or median E2E (a mean TTFT may be taken off a mean E2E, a median not);
- cached tokens are at most the prompt tokens of the same statistic, and per request at most
  the run's context (prompt tokens, cached prefix included);
- an acceptance length is at least 1 (the target's own token) and at most draft_tokens + 1;
- vLLM's 'Maximum concurrency for N tokens per request: Mx' against the pool the run printed
  (``checks.max_concurrency``, which says how each release computes it).

A decode rate whose scope is not stated may be an aggregate when the run's concurrency is not
1, so its contradictions are warnings there; an aggregate rate is not compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext, value_at
from kvrecords.dataset.document import JsonPath
from kvrecords.dataset.records import Measured, Run
from kvrecords.kv.units import exact, format_exact
from kvrecords.problems import Problem, Rule, Severity

RUN_FIGURES = Rule(
    "KV807",
    "run-figures",
    "The figures of one run agree with each other at the precision written: a per-sequence "
    "decode rate with its TPOT (1000 / TPOT) and with its E2E latency and output length "
    "((output - 1) x 1000 / E2E at least), cached tokens with prompt tokens and the context, "
    "an acceptance length with 1 and draft_tokens + 1, and vLLM's maximum concurrency with "
    "its pool and the tokens per request it names: the pool's tokens / N where every layer "
    "keeps full attention or MLA (down to whole blocks per request; where only the KV budget "
    "is logged, at most what the budget can hold), and for sliding-window and hybrid (mamba, linear attention) models the rule of "
    "the release that printed it, the pool's blocks over the blocks one request takes, every "
    "setting the run does not state read the way most favourable to the record.",
    "A run that states one fact twice (a rate and its TPOT) shows a copying slip that no "
    "geometry check sees. Exact relations (single figures, a harmonic mean rate against a "
    "mean TPOT) fail as errors; a mean or median rate is only bounded below by 1000 / the "
    "mean or median TPOT (the mean of reciprocals is at least the reciprocal of the mean), "
    "and one over 1.25 x that bound is a warning: it needs TPOTs whose standard deviation "
    "exceeds half their mean. A decode rate of unstated scope under a concurrency other than "
    "1 may be an aggregate, so it only warns. vLLM keeps only a window's blocks for a window "
    "layer and a few state pages for a mamba layer, so its concurrency for those models is "
    "not the pool's tokens / N; a maximum concurrency no check can reach (no pool printed, no "
    "'for N tokens per request' quoted, another engine) is listed by `kvrecords explain` under "
    "Not checked.",
    "concurrency: 1\nmetrics:\n  - {name: tpot_ms, statistic: mean, value: 7.28}\n"
    "  - {name: decode_tokens_per_s, statistic: harmonic_mean, value: 137.4}",
    "  - {name: decode_tokens_per_s, statistic: harmonic_mean, value: 173.4}\n"
    "# KV807 decode_tokens_per_s (harmonic_mean) is 173.4; 1000 / tpot_ms (mean) 7.28 = "
    "137.27 to 137.46 in run 'one'",
)

# How far above 1000 / mean TPOT a mean rate may lie before the likely reading doubts it.
MEAN_RATE_SPREAD = Fraction(5, 4)


class Interval(NamedTuple):
    """A figure as the values its written form allows; None: unbounded on that side."""

    low: Fraction | None
    high: Fraction | None
    shown: str


def written_step(text: str) -> Fraction:
    """One unit of the last digit written: 0.01 for ``7.28``, 100 for ``53,200``."""
    text = text.replace(",", "").lstrip("+-")
    if "e" in text.lower():
        return Fraction(0)  # a float's scientific form: no written precision to read
    if "." in text:
        return Fraction(1, 10 ** len(text.split(".")[1]))
    zeros = len(text) - len(text.rstrip("0"))
    return Fraction(10 ** min(zeros, len(text) - 1)) if text.strip("0") else Fraction(1)


def interval(record: RecordContext, path: JsonPath) -> Interval | None:
    """The value at ``path`` as an interval, or None when it is no number (a byte size)."""
    value = value_at(record.data, path)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        text = record.written(path).text
        number, half = record.exact(path), written_step(text) / 2
        return Interval(number - half, number + half, text)
    if not isinstance(value, dict):
        return None
    if "about" in value:
        text = record.written((*path, "about")).text
        number, step = record.exact((*path, "about")), written_step(text)
        return Interval(number - step, number + step, f"~{text}")
    ends = {key: record.exact((*path, key)) for key in ("min", "max") if key in value}
    halves = {key: written_step(record.written((*path, key)).text) / 2 for key in ends}
    low = ends["min"] - halves["min"] if "min" in ends else None
    high = ends["max"] + halves["max"] if "max" in ends else None
    shown = "-".join(record.written((*path, key)).text for key in ("min", "max") if key in ends)
    prefix = "" if len(ends) == 2 else ("at least " if "min" in ends else "at most ")
    return Interval(low, high, prefix + shown)


def _show(value: Fraction) -> str:
    return format_exact(value, 2)


def _span(low: Fraction | None, high: Fraction | None) -> str:
    if low is None:
        return f"at most {_show(high)}" if high is not None else "anything"
    if high is None:
        return f"at least {_show(low)}"
    return _show(low) if low == high else f"{_show(low)} to {_show(high)}"


class Figure(NamedTuple):
    item: Measured
    interval: Interval

    @property
    def statistic(self) -> str:
        return str(self.item.stated["statistic"])

    def named(self) -> str:
        return f"{self.item.stated['name']} ({self.statistic}) {self.interval.shown}"

    def beside(self, other: Figure) -> bool:
        """Whether two figures are of the same part of the run and the same device."""
        return all(
            self.item.stated.get(key) == other.item.stated.get(key) for key in ("part", "device")
        )


def figures(record: RecordContext, run: Run, name: str) -> list[Figure]:
    found = []
    for index, metric in enumerate(run.stated.get("metrics", [])):
        if metric["name"] != name:
            continue
        item = Measured(run, index, metric)
        read = interval(record, item.value_path)
        if read is not None:
            found.append(Figure(item, read))
    return found


def run_setting(record: RecordContext, run: Run, key: str) -> Any:
    return run.stated[key] if key in run.stated else record.data["methodology"].get(key)


def _per_sequence_rates(record: RecordContext, run: Run) -> list[tuple[Figure, Severity, str]]:
    """The run's decode rates that are one sequence's, with how sure that reading is."""
    concurrency = run_setting(record, run, "concurrency")
    found: list[tuple[Figure, Severity, str]] = []
    for figure in figures(record, run, "decode_tokens_per_s"):
        scope = figure.item.stated.get("scope")
        if scope == "aggregate":
            continue
        if scope == "per_sequence" or concurrency == 1:
            found.append((figure, "error", ""))
        else:
            shown = "not stated" if concurrency is None else str(concurrency)
            why = f"; a warning, as the rate's scope is not stated at concurrency {shown}"
            found.append((figure, "warning", why))
    return found


def figure_problem(
    record: RecordContext, figure: Figure, message: str, severity: Severity
) -> Problem:
    line, column = record.document.locate(figure.item.value_path)
    return RUN_FIGURES.problem(record.document.path, line, column, message, severity)


# ---- decode rate against TPOT ---------------------------------------------------------------

# (rate statistic, TPOT statistic) -> exact (the rate is 1000 / TPOT) or at_least.
_RATE_TPOT = {
    ("single", "single"): "exact",
    ("harmonic_mean", "mean"): "exact",
    ("min", "max"): "exact",
    ("max", "min"): "exact",
    ("mean", "mean"): "at_least",
    ("median", "median"): "at_least",
    ("p50", "p50"): "at_least",
    ("median", "p50"): "at_least",
    ("p50", "median"): "at_least",
}


def _reciprocal(tpot: Interval) -> tuple[Fraction | None, Fraction | None]:
    """1000 / TPOT in tokens/s over the interval TPOT allows."""
    low = None if tpot.high is None else 1000 / tpot.high
    high = None if tpot.low is None or tpot.low <= 0 else 1000 / tpot.low
    return low, high


def _rate_against_tpot(record: RecordContext, run: Run) -> Iterator[Problem]:
    tpots = figures(record, run, "tpot_ms")
    for rate, severity, why in _per_sequence_rates(record, run):
        for tpot in tpots:
            relation = _RATE_TPOT.get((rate.statistic, tpot.statistic))
            if relation is None or not rate.beside(tpot):
                continue
            low, high = _reciprocal(tpot.interval)
            working = f"1000 / {tpot.named()} = {_span(low, high)}"
            where = f"{rate.named()}; {working} in run '{run.id}'"
            below = low is not None and rate.interval.high is not None and rate.interval.high < low
            above = high is not None and rate.interval.low is not None and rate.interval.low > high
            if below or (relation == "exact" and above):
                yield figure_problem(record, rate, f"{where}{why}", severity)
            elif (
                relation == "at_least"
                and high is not None
                and rate.interval.low is not None
                and rate.interval.low > high * MEAN_RATE_SPREAD
            ):
                message = (
                    f"{where}: more than {format_exact(MEAN_RATE_SPREAD, 2)}x above it needs "
                    "TPOTs whose standard deviation exceeds half their mean; a warning"
                )
                yield figure_problem(record, rate, message, "warning")


# ---- decode rate against E2E latency and output length ----------------------------------------


def _token_low(value: Any) -> Fraction | None:
    """The fewest tokens a stated per-request count allows (exact, about, range, {min})."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, dict):
        if "about" in value:
            number = exact(value["about"])
            return number - written_step(str(value["about"]))
        if "min" in value:
            return exact(value["min"])
    return None


def _token_high(value: Any, statistic: str) -> Fraction | None:
    """The most tokens a per-request count allows a figure of ``statistic``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, dict):
        if "about" in value:
            return exact(value["about"]) + written_step(str(value["about"]))
        if "max" in value:
            return exact(value["max"])
        if len(value) == 1 and statistic in value:  # {mean: N} bounds a mean
            return exact(value[statistic])
    return None


_RATE_E2E = {"single": "single", "mean": "mean", "median": "median", "p50": "p50"}


def _rate_against_latency(record: RecordContext, run: Run) -> Iterator[Problem]:
    output = _token_low(run_setting(record, run, "output_tokens"))
    if output is None or output <= 1:
        return
    latencies = figures(record, run, "e2e_latency_ms")
    ttfts = figures(record, run, "ttft_ms")
    for rate, severity, why in _per_sequence_rates(record, run):
        statistic = _RATE_E2E.get(rate.statistic)
        for latency in (f for f in latencies if f.statistic == statistic and f.beside(rate)):
            if latency.interval.high is None or latency.interval.high <= 0:
                continue
            span = latency.interval.high
            working = f"({format_exact(output)} - 1) x 1000 / {latency.named()}"
            # a mean TTFT comes off a mean E2E (the mean of differences); a median's does not
            ttft = next((f for f in ttfts if f.statistic == statistic and f.beside(rate)), None)
            if (
                statistic in ("single", "mean")
                and ttft is not None
                and ttft.interval.low
                and span - ttft.interval.low > 0
            ):
                span -= ttft.interval.low
                working = (
                    f"({format_exact(output)} - 1) x 1000 / ({latency.named()} - {ttft.named()})"
                )
            floor = (output - 1) * 1000 / span
            if rate.interval.high is not None and rate.interval.high < floor:
                message = (
                    f"{rate.named()}; {working} = at least {_show(floor)} in run '{run.id}'{why}"
                )
                yield figure_problem(record, rate, message, severity)


# ---- cached tokens, acceptance length ---------------------------------------------------------


def _cached_tokens(record: RecordContext, run: Run) -> Iterator[Problem]:
    prompts = figures(record, run, "prompt_tokens")
    context = run.context(record.data)
    for cached in figures(record, run, "cached_tokens"):
        if cached.interval.low is None:
            continue
        for prompt in prompts:
            if (
                prompt.statistic != cached.statistic
                or cached.statistic == "not_stated"
                or not prompt.beside(cached)
            ):
                continue
            if prompt.interval.high is not None and cached.interval.low > prompt.interval.high:
                message = f"{cached.named()} is above {prompt.named()} in run '{run.id}'"
                yield figure_problem(record, cached, message, "error")
        if cached.statistic == "total":
            continue
        high = _token_high(context, cached.statistic)
        if high is not None and cached.interval.low > high:
            message = (
                f"{cached.named()} is above the run's context of {format_exact(high)} prompt "
                f"tokens per request in run '{run.id}'"
            )
            yield figure_problem(record, cached, message, "error")


def _acceptance_length(record: RecordContext, run: Run) -> Iterator[Problem]:
    drafting = run_setting(record, run, "speculative_decoding") or {}
    draft_tokens = drafting.get("draft_tokens")
    for length in figures(record, run, "acceptance_length"):
        if length.interval.high is not None and length.interval.high < 1:
            message = (
                f"{length.named()} is below 1 in run '{run.id}': every verification step "
                "emits at least the target model's own token"
            )
            yield figure_problem(record, length, message, "error")
        elif (
            isinstance(draft_tokens, int)
            and length.interval.low is not None
            and length.interval.low > draft_tokens + 1
        ):
            message = (
                f"{length.named()} is above draft_tokens + 1 = {draft_tokens + 1} in run "
                f"'{run.id}': a step emits at most the drafted tokens and one of its own"
            )
            yield figure_problem(record, length, message, "error")


def check_run_figures(record: RecordContext) -> Iterator[Problem]:
    """KV807, for every run."""
    for run in record.runs:
        yield from _rate_against_tpot(record, run)
        yield from _rate_against_latency(record, run)
        yield from _cached_tokens(record, run)
        yield from _acceptance_length(record, run)
