"""KV701 fit and KV704 fit claims: weights plus the cache against the accelerators' memory."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.plausibility import setup as shared
from kvrecords.checks.plausibility.links import SETTINGS
from kvrecords.dataset.document import JsonPath
from kvrecords.dataset.records import bases, basis_report, named_basis
from kvrecords.kv.arithmetic import KvReport
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.roofline import memory_needed
from kvrecords.kv.units import Unknown, gib, unknown_reasons
from kvrecords.kv.weights import (
    BF16,
    NATIVE_DTYPES,
    ParameterBillions,
    WeightFormat,
    engine_floor,
    parameter_billions,
    readings,
    weight_bytes,
    weight_bytes_working,
    weight_format,
)
from kvrecords.problems import Problem, Rule

FIT = Rule(
    "KV701",
    "fit",
    "Weights plus KV fit the accelerators: weights on the accelerators + sequences x (KV at "
    "context + fixed state) <= count x usable memory, on the reading most favourable to the "
    "record (an error) and on the likely one (a warning).",
    "Arithmetic that agrees with itself can still be impossible: a 70B model in bf16 does not "
    "fit one 80 GB card. Memory is hardware/<id>.yaml's usable_gib (the nominal size on "
    "unified-memory parts; a family named without its form factor, its largest member). Bits "
    "per weight come from weights_precision (bf16 16, fp8 8, int4 4, nvfp4 4.5, mxfp4 4.25, "
    "Q4_K_M 4.5...: the fewest the name allows); unstated, the weights are a checkpoint the "
    "model's publisher released (the model file's published_precisions) as the engine runs "
    "it: the favourable reading takes the lowest published precision or what the engine makes "
    "of a 16-bit one by itself (vLLM and SGLang quantize it in flight to 4 bits, llama.cpp to "
    "any GGUF type), the likely one what the engine serves by default (vLLM a bf16 checkpoint "
    "in bf16, Ollama Q4_K_M); a model file that lists none leaves the fewest bits the engine "
    "runs at all. The message names the bound that decided. The favourable reading "
    "counts one sequence (an engine that cannot hold every request queues the rest), the "
    "likely one the run's concurrency, at most its request count; requests sent all at once "
    "(unbounded) or an unstated concurrency give no count that must fit, so it counts one and "
    "says so. Weights with "
    "weights_placement.on: offloaded are not counted; under kv_offload the favourable reading "
    "counts no KV and the likely one the running sequences' KV, which stays on the "
    "accelerator. Two readings of one record, worked: Qwen3.8-27B (27B read off the name, so "
    "26.5B at the least), weights not stated, vLLM on one RTX 5090 (31.84 GiB): favourable "
    "26.5B x 1.5625 bits (GGUF IQ1_S, the fewest vLLM runs) / 8 = 4.82 GiB + 9.16 GiB KV = "
    "13.98 GiB, 44%: possible; likely 27B x 16 bits (bf16) / 8 = 50.29 GiB + 9.16 GiB = "
    "59.45 GiB, 187%: a warning that names the bf16 assumption. With weights_precision: bf16 "
    "stated, both readings are 187%: an error. A run with outcome: refused_to_start (the engine "
    "refused it at start-up) is not held to fitting.",
    "model: llama-3.1-8b\nruns:\n  - {id: one, hardware: {accelerator: rtx-4090, count: 1},\n"
    "     weights_precision: bf16, concurrency: 1, ...}\n# 8B x 16 bits / 8 = 14.90 GiB + "
    "0.50 GiB KV (4,096 tokens) is 64% of 23.99 GiB on both readings",
    "model: llama-3.1-405b\nruns:\n  - {id: offload, techniques: [kv_offload], hardware: "
    "{accelerator: h100-sxm, count: 1},\n     weights_precision: bf16, ...}\n# KV701 run "
    "'offload': weights + KV do not fit on any reading: weights 754.37 GiB (405B total params "
    "x 16 bits / 8) + no KV (offloaded) = 754.37 GiB is 947% of 1 x 79.65 GiB "
    "(hardware/h100-sxm.yaml usable_gib 79.65 GiB)",
)

FIT_CLAIM = Rule(
    "KV704",
    "fit-claim",
    "Each kv_bytes_basis.fit_claims entry comes out the way it claims: weights (total params "
    "x bits of its weights_precision / 8) + sequences x the basis's KV at context, against "
    "count x usable memory of its accelerator, on the reading most favourable to the claim "
    "(an error) and the likely one (a warning).",
    "Prose such as 'fits one 32 GB RTX 5090 beside a quantized 27B' is a claim about "
    "hardware that readers act on. A claim whose weights_precision_stated is false rests on "
    "an assumed precision: for a claim that something fits, the favourable reading takes the "
    "fewest bits the record's engine runs; for one that it does not, the model's own dtype "
    "(bf16 when not stated). The basis is 'main' or an index into kv_bytes_basis.alternatives.",
    "fit_claims:\n  - {basis: 0, fits: false, accelerator: rtx-5090, count: 1,\n     "
    "weights_precision: int4, weights_precision_stated: false,\n     stated_as: ...36.6 "
    "GiB, which would not.}",
    "fit_claims:\n  - {basis: 0, fits: true, accelerator: rtx-5090, count: 1,\n     "
    "weights_precision: int4, weights_precision_stated: true, ...}\n# KV704 fit claim "
    "does not hold on any reading, it does not fit: weights 12.34 GiB (26.5B total params x "
    "4 bits / 8) + 36.62 GiB KV (alternatives[0]) = 48.96 GiB is 154% of 1 x 31.84 GiB",
)

# ---- KV701 fit ------------------------------------------------------------------------------


def evaluate_fit(setup: shared.RunSetup) -> shared.Evaluation:
    check = f"{setup.label}: fit"
    if setup.refused_to_start:
        reason = "the engine refused this configuration at start-up (outcome: refused_to_start)"
        return shared.skip(FIT, check, setup.path, reason)
    common = shared.common_inputs(setup, "total")
    missing = unknown_reasons(common, setup.kv_fit)
    if missing:
        return shared.skip(FIT, check, setup.path, missing[0])
    assert isinstance(common, shared.CommonInputs) and isinstance(setup.kv_fit, shared.KvReading)
    hardware, count, total, weights = common
    kv = setup.kv_fit
    if hardware.favourable.usable_memory_bytes is None:
        return shared.skip(
            FIT, check, setup.path, f"{hardware.favourable.display} gives no memory size"
        )
    kv_offload = "kv_offload" in setup.techniques
    concurrent, uncounted = sequences_in_flight(setup)
    # Offloading lets the engine keep only the sequence it is computing on the accelerator.
    sequences = 1 if kv_offload else concurrent
    notes = list(kv.notes)
    if uncounted and not kv_offload:
        notes.append(uncounted)
    assumptions = list(shared.listed(total.assumption, weights.assumption, hardware.assumption))

    def side(
        params: Fraction,
        weights_format: WeightFormat,
        kv_bytes: Fraction,
        kv_text: str,
        seqs: int,
        hw: Hardware,
        likely: bool,
    ) -> shared.Side:
        if setup.weights_offloaded:
            weight_total, weight_text = Fraction(0), "weights offloaded"
        else:
            weight_total = weight_bytes(params, weights_format)
            weight_text = f"weights {gib(weight_total)} ({weight_bytes_working(params, weights_format, 'total')})"
        on_device = kv_bytes
        text = kv_text
        if kv_offload and not likely:
            on_device, text = Fraction(0), "no KV (offloaded)"
        if seqs > 1:
            text = f"{seqs} x ({text})"
        need = memory_needed(weight_total, seqs, on_device)
        memory = hw.usable_memory_bytes
        figure = hw.memory_figure
        if likely and hw.likely_memory_bytes is not None:
            memory, figure = hw.likely_memory_bytes, "usable_gib_approx (the GPU's default share)"
        assert memory is not None
        return shared.Side(
            need,
            count * memory,
            f"{weight_text} + {text} = {gib(need)}",
            f"{count} x {gib(memory)} ({hw.display} {figure})",
        )

    favourable = side(
        total.low,
        weights.favourable,
        kv.favourable,
        kv.favourable_text,
        1,
        hardware.favourable,
        False,
    )
    likely = side(
        total.likely, weights.likely, kv.likely, kv.likely_text, sequences, hardware.likely, True
    )
    if sequences > 1:
        assumptions.append(
            f"all {sequences} sequences the run has in flight held at the context at once"
        )
    if kv_offload:
        assumptions.append("the running sequence's KV stays on the accelerator (kv_offload)")
    if hardware.likely.likely_memory_bytes is not None:
        assumptions.append(f"{hardware.likely.display}'s default GPU share of the unified memory")
    if kv.assumption:
        assumptions.append(kv.assumption)
    if setup.weights_offloaded:
        notes.append("weights offloaded (weights_placement): not counted")
    return shared.Evaluation(
        FIT,
        check,
        setup.path,
        favourable,
        likely,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(
            shared.rated_low(hardware.favourable.memory_confidence, "memory", hardware.favourable)
        ),
        notes=tuple(notes),
    )


def sequences_in_flight(setup: shared.RunSetup) -> tuple[int, str]:
    """The sequences the likely reading holds at once: the run's concurrency, at most its
    request count; else one, with why. An engine that cannot hold them all queues the rest, so
    the favourable reading counts one. Requests sent all at once (unbounded) are a flood the
    engine admits as far as its pool goes: their count bounds the sequences in flight from
    above only, so they do not make a count that must fit."""
    concurrency, requests = setup.concurrency, setup.requests
    if isinstance(concurrency, int):
        return (min(concurrency, requests) if requests else concurrency), ""
    if concurrency == "unbounded":
        sent = f"its {requests:,} requests" if requests else "its requests"
        return 1, (
            f"one sequence counted: the run sends {sent} at once (unbounded) and the engine "
            "queues what its pool cannot hold"
        )
    return 1, "one sequence counted: the concurrency is not stated"


# ---- KV704 fit claims -----------------------------------------------------------------------


def evaluate_fit_claims(record: RecordContext, inputs: shared.Inputs) -> list[shared.Evaluation]:
    """Each fit claim on both readings."""
    claims = record.data["kv_bytes_basis"].get("fit_claims", [])
    return [_fit_claim(record, inputs, index, claim) for index, claim in enumerate(claims)]


def _fit_claim(
    record: RecordContext, inputs: shared.Inputs, index: int, claim: dict[str, Any]
) -> shared.Evaluation:
    path: JsonPath = ("kv_bytes_basis", "fit_claims", index)
    fits = bool(claim["fits"])
    check = f"fit claim [{index}] ({'fits' if fits else 'does not fit'})"
    inputs_ = _claim_inputs(record, inputs, index, claim)
    if isinstance(inputs_, Unknown):
        return shared.skip(FIT_CLAIM, check, path, inputs_.reason)
    hardware, total, report, basis_label = inputs_
    if hardware.usable_memory_bytes is None:
        return shared.skip(FIT_CLAIM, check, path, f"{hardware.display} gives no memory size")
    assert report.kv_bytes_at_context is not None
    stated = weight_format(claim["weights_precision"])
    if stated is None:
        return shared.skip(
            FIT_CLAIM,
            check,
            path,
            f"weights precision {claim['weights_precision']!r} is not in the vocabulary ({SETTINGS.code})",
        )
    engine = record.data["methodology"]["engine"]["name"]
    claimed = readings(stated, record.model.dtype, engine, record.model.published_precisions)
    assumptions = list(shared.listed(total.assumption, claimed.assumption))
    if claim["weights_precision_stated"]:
        favourable_weights = claimed.favourable
    elif fits:
        favourable_weights = engine_floor(engine).weights
        assumptions.append(
            f"weights {claimed.likely.name} (assumed; the source does not state them)"
        )
    else:
        favourable_weights = NATIVE_DTYPES.get(record.model.dtype or "", BF16)
        assumptions.append(
            f"weights {claimed.likely.name} (assumed; the source does not state them)"
        )
    if weight_bytes(Fraction(1), favourable_weights) * (1 if fits else -1) > weight_bytes(
        Fraction(1), claimed.likely
    ) * (1 if fits else -1):
        favourable_weights = claimed.likely
    sequences = claim.get("sequences", 1)
    state = report.fixed_state_bytes
    notes = []
    if state is None and any(cost.state_formula for cost in report.groups):
        notes.append("fixed state not counted (unknown dimensions)")
    kv_text = f"{gib(report.kv_bytes_at_context)} KV ({basis_label})"
    if state:
        kv_text += f" + {gib(state)} state"
    if sequences > 1:
        kv_text = f"{sequences} x ({kv_text})"
    per_sequence = report.kv_bytes_at_context + (state or 0)
    memory = hardware.usable_memory_bytes

    def side(params: Fraction, weights_format: WeightFormat) -> shared.Side:
        weights = weight_bytes(params, weights_format)
        need = memory_needed(weights, sequences, per_sequence)
        return shared.Side(
            need,
            claim["count"] * memory,
            f"weights {gib(weights)} ({weight_bytes_working(params, weights_format, 'total')}) + {kv_text} = {gib(need)}",
            f"{claim['count']} x {gib(memory)} ({hardware.display} {hardware.memory_figure})",
        )

    return shared.Evaluation(
        FIT_CLAIM,
        check,
        path,
        side(total.low if fits else total.high, favourable_weights),
        side(total.likely, claimed.likely),
        expect_within=fits,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(shared.rated_low(hardware.memory_confidence, "memory", hardware)),
        notes=tuple(notes),
    )


class _ClaimInputs(NamedTuple):
    accelerator: Hardware
    total: ParameterBillions
    report: KvReport
    basis_label: str


def _claim_inputs(
    record: RecordContext, inputs: shared.Inputs, index: int, claim: dict[str, Any]
) -> _ClaimInputs | Unknown:
    """A fit claim's accelerator, total parameters, basis arithmetic and basis label, or why
    the claim cannot be evaluated."""
    which = claim["basis"]
    named = named_basis(record.data, which)
    if named is None:
        alternatives = len(bases(record.data)) - 1
        return Unknown(f"basis {which} names no alternative (the record has {alternatives})")
    found = shared.resolve_hardware(
        {"accelerator": claim["accelerator"]}, inputs.hardware, f"fit_claims[{index}]"
    )
    total = parameter_billions(record.model.parameters, "total", record.model_display)
    reasons = unknown_reasons(found, total)
    report: KvReport | None = None
    try:
        report = basis_report(record.model, named.stated)
    except ValueError as error:
        reasons.append(str(error))
    if report is not None and (
        named.stated.get("context_tokens") is None or report.kv_bytes_at_context is None
    ):
        reasons.append("the basis has no KV at context")
    if reasons or report is None:
        return Unknown("; ".join(reasons))
    assert isinstance(found, shared.HardwareReading) and isinstance(total, ParameterBillions)
    return _ClaimInputs(found.favourable, total, report, named.label)


def fit_evaluations(setups: list[shared.RunSetup]) -> list[shared.Evaluation]:
    """One fit per run, a repeat of an earlier run's identical fit left out."""
    found: list[shared.Evaluation] = []
    seen: set[tuple[shared.Side | None, shared.Side | None]] = set()
    for setup in setups:
        evaluation = evaluate_fit(setup)
        key = (evaluation.favourable, evaluation.likely)
        if evaluation.checked and key in seen:
            continue
        seen.add(key)
        found.append(evaluation)
    return found


def check_fit_claim_bases(record: RecordContext) -> Iterator[Problem]:
    """KV704: each fit claim names a basis the record has."""
    for index, claim in enumerate(record.data["kv_bytes_basis"].get("fit_claims", [])):
        which = claim["basis"]
        if named_basis(record.data, which) is None:
            alternatives = len(bases(record.data)) - 1
            message = (
                f"basis {which} names no alternative; the record has {alternatives} "
                "(use 'main' or an index from 0)"
            )
            yield record.problem(
                FIT_CLAIM, ("kv_bytes_basis", "fit_claims", index, "basis"), message
            )
