"""KV703 prefill ceiling: a prefill rate against the compute peak."""

from __future__ import annotations

import math
from fractions import Fraction

from kvrecords.checks.plausibility import setup as shared
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.roofline import (
    attention_flops_per_token,
    matmul_flops_per_token,
    tokens_per_s_at_peak,
)
from kvrecords.kv.units import Unknown, exact, format_exact, format_scientific, tokens_per_s
from kvrecords.kv.weights import EVERY_COMPUTE_TYPE
from kvrecords.problems import Rule

PREFILL_CEILING = Rule(
    "KV703",
    "prefill-ceiling",
    "The prefill rate (context / TTFT of a run that reuses no KV, and prefill_tokens_per_s) is "
    "within count x peak FLOP/s / FLOPs per token, on the favourable reading (an error) and the "
    "likely one (a warning).",
    "A prompt cannot be processed faster than the chip's dense peak allows. FLOPs per token "
    "= 2 x active params + attention, where attention = 2 x layers x heads x (head_dim + "
    "v_head_dim) x the average context a prompt token attends to (context / 2 for full "
    "attention, W - W^2 / (2 x context) for a window W shorter than the context). Heads are the "
    "model's query heads (its kv heads when they are not stated), MLA counts one latent head, "
    "linear-attention and Mamba layers add nothing. The favourable reading takes the most "
    "generous peak the weights may run in (every type when the precision is not stated); the "
    "likely one their usual type. Under a concurrency of N the favourable reading takes one "
    "request's prefill (other requests only slow it); the likely one that the N prompts "
    "arrived together, so that by the stated TTFT statistic as many prompts were prefilled as "
    "it covers (N for max, half for the median, (N + 1) / 2 on average for the mean), unless "
    "the run states more requests than N: its slots are refilled one at a time as requests "
    "end, so its prompts are read one at a time. A run "
    "with prefix caching, radix reuse, cache-aware routing or KV offload on, or with a hit "
    "rate, may have served its TTFT from reused KV whatever its role, so its TTFT is not read "
    "as a prefill. A peak rated low makes a violation a warning.",
    "context_tokens: 150000\nmetrics: [{name: ttft_ms, statistic: single, value: 53200}]   "
    "(27B on one rtx-5090)\n# 2,820 tok/s is 9.9% of the ceiling",
    "model: llama-3.1-8b   (bf16 on one a100-80gb-sxm)\ncontext_tokens: 131072\nmetrics: "
    "[{name: ttft_ms, statistic: single, value: 1000}]\n# KV703 run 'cold': prefill context / "
    "TTFT is faster than the peak FLOP/s allows on any reading: 131,072 tokens / 1 s = 131,072 "
    "tok/s is 1,033% of the 12,688 tok/s ceiling = 1 x 312 TFLOP/s bf16 (...) / (2 x 8e9 + "
    "... = 2.459e+10 FLOP/token)",
)

# ---- KV703 prefill ceiling ------------------------------------------------------------------


def _together(
    concurrency: int | str | None, statistic: str | None, requests: int | None
) -> Fraction:
    """How many of N prompts sent together were prefilled by the stated TTFT statistic. A run
    of more requests than its N slots refills a slot as a request ends, so its prompts arrive
    one at a time after the first N: there the likely reading is one prompt, as well."""
    if not isinstance(concurrency, int) or concurrency <= 1 or statistic is None:
        return Fraction(1)
    if isinstance(requests, int) and requests > concurrency:
        return Fraction(1)
    if isinstance(requests, int) and requests < concurrency:
        concurrency = requests  # no more prompts arrive together than the run sends
    if statistic == "max":
        return Fraction(concurrency)
    if statistic == "mean":
        return Fraction(concurrency + 1, 2)
    if statistic in ("median", "p50"):
        return Fraction(math.ceil(concurrency / 2))
    if statistic.startswith("p"):
        return Fraction(math.ceil(exact(statistic[1:]) * concurrency / 100))
    return Fraction(1)


def evaluate_prefill(
    setup: shared.RunSetup, figure: shared.Figure, value: Fraction
) -> shared.Evaluation:
    """The prefill rate of one TTFT (``value`` in ms) or measured prefill rate."""
    check = f"{setup.label}: prefill {'context / TTFT' if figure.kind == 'ttft' else figure.name}"
    common = shared.common_inputs(setup, "active")
    if isinstance(common, Unknown):
        return shared.skip(PREFILL_CEILING, check, figure.path, common.reason)
    assert setup.model is not None
    hardware, count, active, weights = common
    context = setup.prefill_context
    notes: list[str] = []
    assumptions = list(shared.listed(active.assumption, weights.assumption, hardware.assumption))
    if figure.kind == "ttft":
        if setup.reuse:
            return shared.skip(
                PREFILL_CEILING,
                check,
                figure.path,
                f"the TTFT may be served from reused KV ({', '.join(setup.reuse)})",
            )
        if isinstance(context, Unknown):
            return shared.skip(PREFILL_CEILING, check, figure.path, context.reason)
        if value <= 0:
            return shared.skip(PREFILL_CEILING, check, figure.path, "the TTFT is not positive")
        rate = context * 1000 / value
        subject = f"{format_exact(context)} tokens / {format_exact(value / 1000)} s = {tokens_per_s(rate)}"
        together = _together(setup.concurrency, figure.statistic, setup.requests)
        likely_rate, likely_subject = rate, subject
        if together > 1:
            likely_rate = together * rate
            likely_subject = (
                f"{format_exact(together)} prompts x {subject} = {tokens_per_s(likely_rate)}"
            )
            sent = setup.concurrency
            if isinstance(sent, int) and setup.requests and setup.requests < sent:
                sent = setup.requests
            assumptions.append(f"the {sent} prompts arrived together ({figure.statistic} TTFT)")
    else:
        rate, subject = value, f"{tokens_per_s(value)} measured"
        likely_rate, likely_subject = rate, subject
    attended_context = context if isinstance(context, Fraction) else None
    if attended_context is None:
        attention, attention_text = Fraction(0), "0"
        notes.append("attention not counted: no exact context")
    else:
        attention, attention_text = attention_flops_per_token(setup.model, attended_context)

    def side(
        params: Fraction,
        compute_types: tuple[str, ...],
        hw: Hardware,
        value_: Fraction,
        subject_: str,
        which: str,
    ) -> shared.Side | Unknown:
        peak = hw.peak(compute_types)
        if peak is None:
            return Unknown(f"{hw.display} publishes no dense peak for {', '.join(compute_types)}")
        compute_type, figure_ = peak
        flops = matmul_flops_per_token(params) + attention
        limit = tokens_per_s_at_peak(count, figure_.flops_per_s, flops)
        tflops = format_exact(figure_.flops_per_s / 10**12)
        return shared.Side(
            value_,
            limit,
            subject_,
            f"the {tokens_per_s(limit)} ceiling = {count} x {tflops} TFLOP/s {compute_type} "
            f"({figure_.figure}; {which}) / (2 x {format_exact(params)}e9 + {attention_text} "
            f"= {format_scientific(flops)} FLOP/token)",
        )

    favourable_types = (
        weights.favourable.compute_types if weights.assumption is None else EVERY_COMPUTE_TYPE
    )
    favourable = side(
        active.low, favourable_types, hardware.favourable, rate, subject, "the most generous"
    )
    likely_types: tuple[str, ...] = (weights.likely.likely_compute,)
    if hardware.likely.peak(likely_types) is None:
        likely_types = weights.likely.compute_types
    likely = side(
        active.likely,
        likely_types,
        hardware.likely,
        likely_rate,
        likely_subject,
        f"{weights.likely.name} weights",
    )
    if isinstance(favourable, Unknown):
        return shared.skip(PREFILL_CEILING, check, figure.path, favourable.reason)
    peak = hardware.favourable.peak(favourable_types)
    assert peak is not None
    return shared.Evaluation(
        PREFILL_CEILING,
        check,
        figure.path,
        favourable,
        favourable if isinstance(likely, Unknown) else likely,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(shared.rated_low(peak[1].confidence, f"{peak[0]} peak", hardware.favourable)),
        notes=tuple(notes),
    )
