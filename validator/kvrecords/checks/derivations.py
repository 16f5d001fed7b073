"""KV401, KV403, KV404 per run: the figures a run derives from its own measurements.

Tokens and bytes not recomputed (hit rate x context, x bytes per token) and the prefill rate
(context / TTFT) are worked out for every run that has the inputs, whether or not it states
them, so ``explain`` shows them; a stated one is held to the recomputation.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.basis import compare_bytes
from kvrecords.checks.context import RecordContext, value_at
from kvrecords.checks.measurements import (
    BYTES_NOT_RECOMPUTED,
    PREFILL_RATE,
    RANGE_ORDER,
    TOKENS_NOT_RECOMPUTED,
)
from kvrecords.checks.runs import METRIC, value_bounds
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import Run, basis_report, measured
from kvrecords.kv.metrics import BY_NAME
from kvrecords.kv.units import agrees, format_exact, format_number
from kvrecords.problems import Problem, Rule

# ---- KV401, KV403, KV404: what a run derives from its measurements -------------------------------


class _Invalid(str):
    """An input that another check already reports; derivations from it are not checked."""


class RunDerivation(NamedTuple):
    """A figure a run derives, worked out whether the run states it."""

    rule: Rule
    run: Run
    field: str
    stated: Any
    value: Fraction | None
    working: str  # the arithmetic, or why it cannot be made

    @property
    def path(self) -> JsonPath:
        return (*self.run.path, "derived", self.field)


def run_derivations(record: RecordContext) -> list[RunDerivation]:
    """Tokens and bytes not recomputed and the prefill rate of every run that has the inputs."""
    found = []
    for run in record.runs:
        derived = run.stated.get("derived", {})
        hit = _single(record, run, "hit_rate")
        context = _context(record, run)
        ttft = _single(record, run, "ttft_ms")
        if measured(run, "hit_rate") is not None:  # a TTFT served from cache is not a prefill
            ttft = f"run '{run.id}' reuses cached KV (it has a hit_rate)"
        elif (crowd := _under_load(record, run)) is not None:
            ttft = crowd
        for rule, field, inputs in (
            (TOKENS_NOT_RECOMPUTED, "tokens_not_recomputed", (hit, context)),
            (BYTES_NOT_RECOMPUTED, "bytes_not_recomputed", (hit, context, _per_token(record))),
            (PREFILL_RATE, "prefill_tokens_per_s_from_ttft", (context, ttft)),
        ):
            missing = [value for value in inputs if isinstance(value, str)]
            stated = derived.get(field)
            invalid = [value for value in missing if isinstance(value, _Invalid)]
            if invalid:
                found.append(RunDerivation(rule, run, field, stated, None, invalid[0]))
                continue
            if missing:
                found.append(RunDerivation(rule, run, field, stated, None, "; ".join(missing)))
                continue
            numbers = [value for value in inputs if isinstance(value, Fraction)]
            found.append(RunDerivation(rule, run, field, stated, *_derive(field, numbers)))
    return found


def _under_load(record: RecordContext, run: Run) -> str | None:
    """Why a TTFT of ``run`` is not one prompt's prefill time, or None when it may be: with
    several requests in flight a TTFT holds queueing and prefills shared in a batch, so the
    context over it is no prefill rate."""
    concurrency = run.stated.get("concurrency", record.data["methodology"].get("concurrency"))
    requests = run.stated.get("requests")
    why = "its TTFT holds queueing and prefills shared in a batch"
    if concurrency == "unbounded" and requests != 1:
        return f"run '{run.id}' sends its requests at once (concurrency unbounded): {why}"
    if isinstance(concurrency, int) and concurrency > 1 and requests != 1:
        return f"run '{run.id}' has {concurrency} requests in flight: {why}"
    return None


def _derive(field: str, numbers: list[Fraction]) -> tuple[Fraction, str]:
    if field == "prefill_tokens_per_s_from_ttft":
        context, ttft = numbers
        return (
            context * 1000 / ttft,
            f"{format_exact(context)} tokens / {format_exact(ttft / 1000)} s",
        )
    product = Fraction(1)
    for number in numbers:
        product *= number
    shown = " x ".join(format_exact(number) for number in numbers)
    return product, shown + (" B" if field == "bytes_not_recomputed" else "")


def _single(record: RecordContext, run: Run, name: str) -> Fraction | str:
    item = measured(run, name)
    if item is None:
        return f"run '{run.id}' has no {name}"
    bounds = value_bounds(record, item.value_path)
    if isinstance(bounds, str):
        return bounds
    if bounds.low != bounds.high:
        return f"{dotted(item.value_path)} is a range"
    metric = BY_NAME[name]
    if (metric.fraction and bounds.low > 1) or (metric.positive and bounds.low <= 0):
        return _Invalid(f"{dotted(item.value_path)} is out of range ({METRIC.code})")
    return bounds.low


def _context(record: RecordContext, run: Run) -> Fraction | str:
    try:
        value = value_at(record.data, run.context_path)
    except (KeyError, IndexError):
        return f"{dotted(run.context_path)} is not stated"
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if value is None:
        return f"{dotted(run.context_path)} is null"
    return f"{dotted(run.context_path)} is not an exact token count"


def _per_token(record: RecordContext) -> Fraction | str:
    try:
        per_token = basis_report(record.model, record.data["kv_bytes_basis"]).bytes_per_token
    except ValueError as error:  # the basis does not apply (KV304)
        return str(error)
    if per_token is None:
        return f"{record.model_display} does not give bytes per token"
    return Fraction(per_token)


def check_run_derivations(record: RecordContext) -> Iterator[Problem]:
    """KV401, KV403, KV404 per run (KV405 for a stated figure without its inputs)."""
    for derivation in run_derivations(record):
        if derivation.stated is None or isinstance(derivation.working, _Invalid):
            continue
        if derivation.value is None:
            message = f"{derivation.field} is stated but cannot be derived: {derivation.working}"
            yield record.problem(RANGE_ORDER, derivation.path, message)
        elif derivation.rule is BYTES_NOT_RECOMPUTED:
            value, working = derivation.value, derivation.working
            yield from compare_bytes(record, BYTES_NOT_RECOMPUTED, derivation.path, value, working)
        else:
            written = record.written(derivation.path)
            if agrees(written, derivation.value):
                continue
            shown = format_exact(derivation.value, max(written.decimals, 4))
            message = (
                f"{derivation.field} is {format_number(derivation.stated)}; "
                f"{derivation.working} = {shown}"
            )
            yield record.problem(derivation.rule, derivation.path, message)
