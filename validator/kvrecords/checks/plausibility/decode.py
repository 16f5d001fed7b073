"""KV702 decode roofline: a decode rate against the memory bandwidth and the compute peak."""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from kvrecords.checks.plausibility import setup as shared
from kvrecords.kv.geometry import Model
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.roofline import (
    decode_roofline,
    decode_step_bytes,
    draft_head_bytes,
    matmul_flops_per_token,
    tokens_per_s_at_peak,
)
from kvrecords.kv.units import Unknown, format_exact, gib, tokens_per_s, unknown_reasons
from kvrecords.kv.weights import (
    EVERY_COMPUTE_TYPE,
    WeightFormat,
    parameter_billions,
    weight_bytes,
    weight_bytes_working,
)
from kvrecords.problems import Rule

DECODE_ROOFLINE = Rule(
    "KV702",
    "decode-roofline",
    "Decode rates (decode_tokens_per_s, output_tokens_per_s) "
    "are within the memory-bandwidth roofline, per sequence <= (k + 1) x count x bandwidth / "
    "(active weights + k x draft weights + B x KV), aggregate <= B times that, and within "
    "count x peak / (2 x active params), on the favourable reading (an error) and the likely "
    "one (a warning).",
    "Each decode step reads the active weights once for its batch of B sequences and each "
    "sequence's KV, so no engine decodes faster than the memory can feed it; a separate input "
    "embedding (the model file's vocab_size with tie_word_embeddings false) is left out, since "
    "a token reads one row of it. Speculative "
    "decoding (the run's speculative_decoding: method, draft_tokens, acceptance_rate) emits at "
    "most draft tokens + 1 per step (1 + acceptance x draft tokens on the likely reading) and "
    "still reads the draft: a draft_model's active weights, or at least one hidden x hidden "
    "projection of an EAGLE, MTP or Medusa head, per drafted token. Bandwidth is the highest "
    "figure in hardware/<id>.yaml (decimal GB/s). A rate under concurrency is checked as an "
    "aggregate over it: the favourable reading takes a per-sequence rate at one sequence and "
    "an aggregate at every stated sequence; with unbounded or unstated concurrency the "
    "aggregate is checked only against what holds for any number of sequences (bandwidth / KV "
    "per sequence, and the compute bound). Ranges are checked at their low end.",
    "model: llama-3.1-8b   (8B, bf16, 4,096 tokens, one rtx-4090)\nmetrics:\n  - {name: "
    "decode_tokens_per_s, statistic: mean, value: 55}\n# 55.0 tok/s is 84% of the 65.1 tok/s "
    "roofline",
    "value: 150   (same run)\n# KV702 run 'one': decode_tokens_per_s is above the "
    "memory-bandwidth roofline on any reading: 150.0 tok/s read as one sequence is 230% of "
    "the 65.1 tok/s roofline = 1 x 1,008 GB/s / (weights 13.92 GiB [7.4747B active params x "
    "16 bits / 8 (bf16); the 0.5253B input embedding left out: a token reads one row] + 0.50 "
    "GiB KV (bf16)) (hardware/rtx-4090.yaml memory_bandwidth_gb_s 1,008 GB/s)",
)

# Draft methods that run a head on the target's hidden states: each drafted token reads at
# least one hidden x hidden projection of it.
_HEAD_DRAFTS = ("eagle", "eagle3", "mtp", "medusa")

# ---- KV702 decode roofline ------------------------------------------------------------------


class _Reading(NamedTuple):
    """How a decode rate is read: per sequence or aggregate over B sequences (None: any)."""

    aggregate: bool
    batch: int | None
    text: str


def _decode_readings(
    concurrency: int | str | None, scope: str | None
) -> tuple[_Reading, _Reading, str | None]:
    """The favourable and likely readings of a decode rate, and what the likely one assumes."""
    stated = concurrency if isinstance(concurrency, int) else None
    if scope == "per_sequence" or (scope is None and stated == 1):
        likely_batch = stated or 1
        favourable = _Reading(False, 1, "one sequence")
        likely = _Reading(
            False,
            likely_batch,
            f"one of {likely_batch} sequences" if likely_batch > 1 else "one sequence",
        )
        return (
            favourable,
            likely,
            (f"{likely_batch} sequences decoding at once" if likely_batch > 1 else None),
        )
    if stated is not None:
        aggregate = _Reading(True, stated, f"aggregate over {stated} sequences")
        if scope == "aggregate":
            return aggregate, aggregate, None
        per_sequence = _Reading(False, stated, f"one of {stated} sequences")
        return (
            aggregate,
            per_sequence,
            "decode_tokens_per_s is one sequence's rate (its scope is not stated)",
        )
    any_batch = _Reading(
        True,
        None,
        f"aggregate over any number of sequences (concurrency {concurrency or 'not stated'})",
    )
    if scope == "aggregate" or concurrency == "unbounded":
        if scope == "aggregate":
            return any_batch, any_batch, None
        return (
            any_batch,
            _Reading(False, 1, "one sequence"),
            "one sequence's rate (scope not stated)",
        )
    return any_batch, _Reading(False, 1, "one sequence"), "concurrency not stated: one sequence"


def _unread_embedding(model: Model, likely: bool) -> Fraction:
    """Billions of parameters of an input embedding a decode step does not read: a token
    looks up one row of it. Only a separate table (tie_word_embeddings false) goes unread; a
    tied one is read whole as the output head. An unknown tie counts as separate on the
    favourable reading only."""
    separate = model.tie_word_embeddings is False or (
        not likely and model.tie_word_embeddings is None
    )
    if not separate or model.vocab_size is None or model.hidden_size is None:
        return Fraction(0)
    return Fraction(model.vocab_size * model.hidden_size, 10**9)


def evaluate_decode(
    setup: shared.RunSetup, figure: shared.Figure, value: Fraction
) -> shared.Evaluation:
    check = f"{setup.label}: decode {figure.name}"
    common = shared.common_inputs(setup, "active")
    reasons = unknown_reasons(common, setup.kv_decode, setup.drafting)
    if reasons:
        return shared.skip(DECODE_ROOFLINE, check, figure.path, "; ".join(reasons))
    assert isinstance(common, shared.CommonInputs) and isinstance(setup.kv_decode, shared.KvReading)
    assert isinstance(setup.drafting, shared.Drafting) and setup.model is not None
    hardware, count, active, weights = common
    kv, drafting, model = setup.kv_decode, setup.drafting, setup.model
    favourable_reading, likely_reading, reading_assumption = _decode_readings(
        setup.concurrency, figure.scope
    )
    notes = list(kv.notes)
    assumptions = list(
        shared.listed(
            active.assumption,
            weights.assumption,
            hardware.assumption,
            kv.assumption,
            reading_assumption,
        )
    )
    k = drafting.draft_tokens
    if drafting.method is not None and k is None:
        notes.append("speculative decoding with an unstated draft length: only the compute bound")
    if drafting.acceptance is not None and k is not None:
        assumptions.append(
            f"{format_exact(1 + drafting.acceptance * k)} tokens per step (acceptance {format_exact(drafting.acceptance)} x {k} drafted + 1)"
        )

    def draft_bytes(bits: WeightFormat, likely: bool) -> tuple[Fraction, str]:
        if drafting.method is None or k is None:
            return Fraction(0), ""
        if drafting.draft_model is not None:
            draft = parameter_billions(
                drafting.draft_model.parameters, "active", f"models/{drafting.draft_model_id}"
            )
            if isinstance(draft, Unknown):
                notes.append(f"draft weights not counted: {draft.reason}")
                return Fraction(0), ""
            params = draft.likely if likely else draft.low
            per = weight_bytes(params, bits)
            return (
                k * per,
                f" + {k} x draft {gib(per)} [{weight_bytes_working(params, bits, 'active')}]",
            )
        hidden = model.hidden_size
        if drafting.method in _HEAD_DRAFTS and hidden is not None:
            per = draft_head_bytes(hidden, bits)
            return k * per, f" + {k} x draft head >= {hidden:,}^2 x {float(bits.bits):g} bits / 8"
        if drafting.method in _HEAD_DRAFTS:
            notes.append(f"draft head not counted: {setup.model_display} states no hidden_size")
        return Fraction(0), ""

    def side(
        reading: _Reading,
        params: Fraction,
        bits: WeightFormat,
        kv_bytes: Fraction,
        kv_text: str,
        hw: Hardware,
        steps: Fraction | None,
        compute_types: tuple[str, ...],
        likely: bool,
    ) -> shared.Side | Unknown:
        limits: list[tuple[Fraction, str]] = []
        lookup = _unread_embedding(model, likely)
        weights_total = weight_bytes(params - lookup, bits)
        embedding_text = (
            f"; the {format_exact(lookup)}B input embedding left out: a token reads one row"
            if lookup
            else ""
        )
        draft, draft_text = draft_bytes(bits, likely)
        bandwidth = hw.bandwidth_bytes_per_s
        if bandwidth is not None and steps is not None:
            factor = f"{format_exact(steps)} x " if steps != 1 else ""
            bandwidth_text = f"{factor}{count} x {format_exact(bandwidth / 10**9)} GB/s"
            weights_text = f"weights {gib(weights_total)} [{weight_bytes_working(params - lookup, bits, 'active')}{embedding_text}]{draft_text}"
            if reading.batch is None:
                if kv_bytes > 0:
                    limits.append(
                        (
                            decode_roofline(count, bandwidth, steps, kv_bytes),
                            f"the {{limit}} roofline for any batch = {bandwidth_text} / ({kv_text} per sequence) ({hw.display} {hw.bandwidth_figure})",
                        )
                    )
            else:
                batch = reading.batch
                per_step = decode_step_bytes(weights_total, draft, batch, kv_bytes)
                per_sequence = decode_roofline(count, bandwidth, steps, per_step)
                kv_term = f"{batch} x {kv_text}" if batch > 1 else kv_text
                times = f"{batch} sequences x " if reading.aggregate else ""
                limits.append(
                    (
                        per_sequence * batch if reading.aggregate else per_sequence,
                        f"the {{limit}} roofline = {times}{bandwidth_text} / ({weights_text} + {kv_term}) ({hw.display} {hw.bandwidth_figure})",
                    )
                )
        peak = hw.peak(compute_types)
        if peak is not None:
            compute_type, figure_ = peak
            limits.append(
                (
                    tokens_per_s_at_peak(
                        count, figure_.flops_per_s, matmul_flops_per_token(params)
                    ),
                    f"the {{limit}} compute bound = {count} x {format_exact(figure_.flops_per_s / 10**12)} TFLOP/s {compute_type} ({figure_.figure}) / (2 x {format_exact(params)}e9 FLOP/token)",
                )
            )
        if not limits:
            return Unknown(f"{hw.display} gives no bandwidth or peak")
        limit, working = min(limits, key=lambda item: item[0])
        return shared.Side(
            value,
            limit,
            f"{tokens_per_s(value)} read as {reading.text}",
            working.format(limit=tokens_per_s(limit)),
        )

    steps_favourable = (
        None if (drafting.method is not None and k is None) else Fraction((k or 0) + 1)
    )
    steps_likely = steps_favourable
    if drafting.acceptance is not None and k is not None:
        steps_likely = 1 + drafting.acceptance * k
    favourable_types = (
        weights.favourable.compute_types if weights.assumption is None else EVERY_COMPUTE_TYPE
    )
    favourable = side(
        favourable_reading,
        active.low,
        weights.favourable,
        kv.favourable,
        kv.favourable_text,
        hardware.favourable,
        steps_favourable,
        favourable_types,
        False,
    )
    likely = side(
        likely_reading,
        active.likely,
        weights.likely,
        kv.likely,
        kv.likely_text,
        hardware.likely,
        steps_likely,
        (weights.likely.likely_compute,),
        True,
    )
    if isinstance(favourable, Unknown):
        return shared.skip(DECODE_ROOFLINE, check, figure.path, favourable.reason)
    if isinstance(likely, Unknown):
        likely = favourable
    unfirm = shared.rated_low(
        hardware.favourable.bandwidth_confidence, "bandwidth", hardware.favourable
    )
    if "compute bound" in favourable.working:
        peak = hardware.favourable.peak(favourable_types)
        if peak is not None:
            unfirm = shared.rated_low(peak[1].confidence, f"{peak[0]} peak", hardware.favourable)
    return shared.Evaluation(
        DECODE_ROOFLINE,
        check,
        figure.path,
        favourable,
        likely,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(unfirm),
        notes=tuple(dict.fromkeys(notes)),
    )
