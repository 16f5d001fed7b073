"""Physical plausibility: figures that agree with each other can still be impossible.

Each run of a record is measured on hardware
(``hardware/<id>.yaml`` x count, or a family named without its form factor) with a model
(``models/<id>.yaml``: parameter counts and cache geometry), weights at some precision, a KV
dtype, a concurrency and perhaps speculative decoding. From those:

- KV701 fit: weights on the accelerators + sequences x (KV at context + fixed state) must fit in
  count x usable memory; offloaded weights and offloaded KV are not counted;
- KV702 decode roofline: a decode step reads the active weights once for its batch of B
  sequences, each sequence's KV, and the draft's weights once per drafted token, and emits at
  most draft tokens + 1 tokens per sequence, so per sequence
  tok/s <= (k + 1) x count x bandwidth / (active weights + k x draft weights + B x KV), the
  aggregate B times that; and no token costs less than 2 x active params FLOPs, so every rate
  is also within count x peak / (2 x active params);
- KV703 prefill ceiling: prompt tokens / TTFT and measured prefill rates are within
  count x peak / FLOPs per token, where FLOPs per token = 2 x active params + attention, and
  attention = 2 x heads x (key width + value width) x the average context a prompt token attends
  to, summed over attention layers (context / 2 for full attention, W - W^2 / (2 x context) for a
  window W below the context); heads are the model's query heads (its kv heads where the query
  heads are not stated, fewer), MLA counts one latent head of width kv_lora_rank + rope and
  value width kv_lora_rank, and state layers add nothing;
- KV704 fit claims: each ``kv_bytes_basis.fit_claims`` entry is evaluated like KV701 and must
  come out the way it claims;
- KV707 memory figures: a peak, a KV size, a budget or the weights' share a run measured is
  within its devices' memory (one device for a figure printed per device);
- KV705 hardware link: every accelerator and family a record names has a file in hardware/;
- KV706 settings: weights precisions come from the closed vocabulary, a draft model names a
  model file.

Two readings. Every check is computed twice. On the reading most favourable to the record,
each input the record leaves open takes its most generous plausible value: the fewest bits per
weight of a checkpoint the model's publisher released as the engine runs it (any the engine runs
when the model file lists none), the smallest KV dtype it offers, the lowest parameter count that rounds
to a name, the largest member of a hardware family, the most generous peak, the concurrency
that helps (one sequence for a fit or a per-sequence rate, every stated sequence for an
aggregate rate, any number when it is unbounded). A figure beyond that bound is impossible on
any reading: an error, with or without ``--strict``. On the likely reading the open inputs take
their likely values (the published checkpoint as the engine serves it by default, the stated
KV dtype, the stated concurrency at once,
the least generous family member); a figure beyond only that bound is a warning that names what
the likely reading assumes. A figure rated low in its hardware file cannot establish an
impossibility, so a check that rests on one only warns. A check that lacks an input is not run;
``explain`` says which and why, and prints both bounds of every check that ran.

Where things are: setup.py reads each run's setup and holds the evaluation types; fit.py
(KV701, KV704), decode.py (KV702), prefill.py (KV703) and links.py (KV705, KV706) each judge one
family; the arithmetic they compare against is kv/roofline.py and kv/weights.py; this module
turns violated evaluations into problems.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvrecords.checks.context import ModelLookup, RecordContext
from kvrecords.checks.plausibility.decode import DECODE_ROOFLINE, evaluate_decode
from kvrecords.checks.plausibility.fit import (
    FIT,
    check_fit_claim_bases,
    evaluate_fit,
    evaluate_fit_claims,
    fit_evaluations,
)
from kvrecords.checks.plausibility.links import check_hardware_links, check_settings
from kvrecords.checks.plausibility.memory import MEMORY_FIGURES, evaluate_memory_figures
from kvrecords.checks.plausibility.prefill import PREFILL_CEILING, evaluate_prefill
from kvrecords.checks.plausibility.setup import (
    Evaluation,
    Inputs,
    RunSetup,
    measured_value,
    run_setups,
    skip,
)
from kvrecords.dataset.document import dotted, value_or_none
from kvrecords.dataset.hardware import HardwareIndex
from kvrecords.problems import Problem, Severity

__all__ = [
    "Evaluation",
    "Inputs",
    "ModelLookup",
    "RunSetup",
    "all_evaluations",
    "evaluate_fit",
    "evaluate_fit_claims",
    "plausibility_problems",
    "run_setups",
]

# ---- the checks -----------------------------------------------------------------------------


def _message(evaluation: Evaluation) -> str:
    rule = evaluation.rule
    on = "on any reading" if evaluation.impossible else "on the likely reading"
    side = evaluation.favourable if evaluation.impossible else evaluation.likely
    assert side is not None
    label, _, what = evaluation.check.partition(": ")
    if rule is FIT:
        text = f"{label}: weights + KV do not fit {on}: "
    elif rule is DECODE_ROOFLINE:
        text = f"{label}: {what} is above the roofline {on}: "
    elif rule is PREFILL_CEILING:
        text = f"{label}: {what} is faster than the peak FLOP/s allows {on}: "
    elif rule is MEMORY_FIGURES:
        text = f"{label}: {what} is above the memory of its accelerators {on}: "
    else:
        holds = "it fits" if not evaluation.expect_within else "it does not fit"
        text = f"{evaluation.check} does not hold {on}, {holds}: "
    text += side.margin()
    if not evaluation.impossible and evaluation.favourable is not None:
        text += f"; on the favourable reading {evaluation.favourable.margin()}"
    text += evaluation.qualifiers()
    if evaluation.severity == "warning":
        text += "; a warning, since only the likely reading or a figure rated low rules it out"
    return text


def _problems(record: RecordContext, evaluations: list[Evaluation]) -> Iterator[Problem]:
    for evaluation in evaluations:
        if evaluation.violated:
            line, column = record.document.locate(evaluation.path)
            severity: Severity = "error" if evaluation.severity == "error" else "warning"
            yield evaluation.rule.problem(
                record.document.path, line, column, _message(evaluation), severity
            )


def figure_evaluations(record: RecordContext, setups: list[RunSetup]) -> list[Evaluation]:
    """The decode and prefill checks of every figure of every run."""
    found = []
    for setup in setups:
        for figure in setup.figures:
            raw = value_or_none(record.data, *figure.path)
            value = measured_value(raw, lenient_high=figure.kind == "ttft")
            rule = DECODE_ROOFLINE if figure.kind == "decode" else PREFILL_CEILING
            if value is None:
                reason = (
                    "not stated" if raw is None else "a bound on the side that does not limit it"
                )
                found.append(
                    skip(
                        rule,
                        f"{setup.label}: {figure.name}",
                        figure.path,
                        f"{dotted(figure.path)} is {reason}",
                    )
                )
                continue
            if figure.kind == "decode":
                found.append(evaluate_decode(setup, figure, value))
            else:
                found.append(evaluate_prefill(setup, figure, value))
    return found


def all_evaluations(record: RecordContext, inputs: Inputs) -> list[Evaluation]:
    """Every comparison the checks make for one record, violated or not, and every skip."""
    setups = run_setups(record, inputs)
    return [
        *fit_evaluations(setups),
        *figure_evaluations(record, setups),
        *evaluate_memory_figures(record, setups),
        *evaluate_fit_claims(record, inputs),
    ]


def plausibility_problems(
    record: RecordContext, hardware: HardwareIndex, models: ModelLookup | None = None
) -> list[Problem]:
    """Every plausibility problem of one record whose arithmetic checks have run, against the
    hardware files it names (``dataset.hardware.hardware_index``)."""
    inputs = Inputs(hardware, models)
    problems = [*check_hardware_links(record, inputs), *check_settings(record, inputs)]
    problems += check_fit_claim_bases(record)
    problems += _problems(record, all_evaluations(record, inputs))
    return problems
