"""``kvrecords plan``: MODEL on N accelerators at a context for C users, answered in three layers
that each say what they rest on and never borrow certainty from one another.

1. **arithmetic** (exact, from the model file): bytes per token per device, the cache of one
   sequence at the context, of every user, and the fixed state;
2. **engine** (a model of one engine release, vLLM here): the KV pool the engine would have, as
   an interval where an input is uncertain, the pool in the engine's own units and the lines
   that release prints, whether the users fit (yes, no, or depends, naming the deciding input),
   the most users at this context and the longest context for these users;
3. **evidence** (cited records): the records nearest the question, each with its figures,
   confidence and what it differs in; techniques ranked only by comparisons records measured.

A missing fact is a refusal that names it, never a guess. The engine layer's uncertain inputs
come from public start-up logs (``STARTUP_MEMORY``), each range with the rows it rests on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.kv.arithmetic import kv_report, parse_element_type
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.units import GIB, Unknown
from kvrecords.kv.weights import BILLION, parameter_billions, weight_format


class PlanRefused(ValueError):
    """The question cannot be answered: the message names the missing fact or the limit."""


class Question(NamedTuple):
    model_id: str
    hardware_id: str
    devices: int  # accelerators of one kind on one node
    context_tokens: int
    users: int
    engine: str = "vllm"
    engine_version: str = "latest"
    tensor_parallel: int | None = None  # None: every accelerator in one tensor-parallel group
    kv_cache_dtype: str = "auto"  # in the engine's spelling
    weights_precision: str | None = None  # None: the model's own 16-bit weights
    gpu_memory_utilization: Fraction = Fraction(9, 10)  # vLLM's default
    kv_memory_gib: str | None = None  # the engine's "Available KV cache memory", as printed


class Interval(NamedTuple):
    low: Fraction
    high: Fraction

    def shown_gib(self) -> str:
        if self.low == self.high:
            return f"{float(self.low / GIB):.2f} GiB"
        return f"{float(self.low / GIB):.2f} to {float(self.high / GIB):.2f} GiB"


class Range(NamedTuple):
    """An uncertain start-up input: its bounds in GiB and the public rows they rest on."""

    low: Fraction
    high: Fraction
    source: str


# What vLLM V1 takes from the budget besides the weights, from public start-up logs (the rows of
# vLLM 0.19.0's H100 sweep in llm-d-incubation/llm-d-planner PR #205, the llm-d-benchmark config
# explorer's H100 table, and logs in vLLM issues on H100, A100, L40S, RTX 3090/4090/5090).
STARTUP_MEMORY = {
    "activation_peak": Range(
        Fraction(19, 100),
        Fraction(738, 100),
        "'PyTorch activation peak memory' / 'GiB for peak activation' of vLLM V1 logs: 0.19 GiB"
        " (RTX-class, small models) to 7.38 GiB (gpt-oss on H100, llm-d-benchmark's table)",
    ),
    "non_torch_single": Range(
        Fraction(1, 100),
        Fraction(55, 100),
        "'non_torch_memory' of one-GPU vLLM V1 logs: 0.01 to 0.55 GiB",
    ),
    "non_torch_parallel": Range(
        Fraction(24, 100),
        Fraction(221, 100),
        "'non_torch_memory' per GPU under tensor parallelism: 0.24 GiB (PCIe) to 2.21 GiB"
        " (NVLink, NCCL buffers), vLLM 0.19.0 on H100 TP2/TP4 and PCIe TP logs",
    ),
    "cuda_graphs": Range(
        Fraction(0),
        Fraction(237, 100),
        "'CUDA graph' memory, taken from the budget from vLLM 0.21.0 on: up to 2.37 GiB"
        " (Qwen3-Next-80B TP2 on H200); earlier releases take it from the headroom",
    ),
    "seen_below_driver": Range(
        Fraction(0),
        Fraction(1, 2),
        "the total vLLM sees per device is below the driver's: 79.18 GiB on H100 where"
        " nvidia-smi reports 79.65 GiB",
    ),
}
# A quantized checkpoint keeps embeddings, norms and the output layer at 16 bits: llm-d's H100
# table prints 67.72 GiB for Llama-3.3-70B FP8, 3.9 % above 70e9 x 8 bits.
WEIGHTS_OVERHEAD = Fraction(104, 100)
CUDA_GRAPHS_COUNTED_FROM = (0, 21, 0)
MAX_DEVICES = 8  # one node; a multi-node or disaggregated set-up is refused


class Answer(NamedTuple):
    question: Question
    arithmetic: dict[str, Any]
    engine: dict[str, Any]
    evidence: dict[str, Any]
    assumptions: list[str]
    unknown: list[str]


def plan(
    question: Question,
    model: Model,
    hardware: Hardware,
    rows: list[dict[str, Any]],
    model_of: Callable[[str], Model | None],
) -> Answer:
    """The three layers for ``question``; ``rows`` are the dataset's export rows (the evidence)
    and ``model_of`` gives a record's model for the same-geometry test."""
    if question.devices < 1 or question.users < 1 or question.context_tokens < 1:
        raise PlanRefused("--count, --users and --context must be at least 1")
    if question.devices > MAX_DEVICES:
        raise PlanRefused(
            f"{question.devices} accelerators is more than one node ({MAX_DEVICES}): multi-node and"
            " disaggregated set-ups are not planned"
        )
    tp = question.tensor_parallel or question.devices
    if question.devices % tp:
        raise PlanRefused(f"--count {question.devices} is not a whole number of --tp {tp} groups")
    assumptions: list[str] = []
    unknown: list[str] = []
    arithmetic = _arithmetic(question, model, tp, assumptions)
    try:
        engine = _engine(question, model, hardware, tp, arithmetic, assumptions)
    except PlanRefused as refused:
        engine = {"refused": str(refused)}
        unknown.append(f"engine: {refused}")
    evidence = _evidence(question, model, rows, model_of)
    return Answer(question, arithmetic, engine, evidence, assumptions, unknown)


def _kv_element(question: Question, model: Model, assumptions: list[str]) -> str:
    """The cache's element type as the engine resolves its kv_cache_dtype."""
    if question.kv_cache_dtype == "auto":
        assumptions.append(
            "kv_cache_dtype auto: vLLM keeps the cache in the model's 16-bit dtype (a float32 or"
            f" unstated checkpoint is served in 16 bits){'' if model.dtype else '; the model file states no dtype'}"
        )
        return "bf16"
    if question.kv_cache_dtype in ("fp8", "fp8_e4m3", "fp8_e5m2"):
        return "fp8"
    raise PlanRefused(
        f"--kv-dtype {question.kv_cache_dtype}: plan covers auto, fp8, fp8_e4m3 and fp8_e5m2"
    )


def _arithmetic(
    question: Question, model: Model, tp: int, assumptions: list[str]
) -> dict[str, Any]:
    element = _kv_element(question, model, assumptions)
    report = kv_report(model, parse_element_type(element), question.context_tokens)
    if None in (report.bytes_per_token, report.kv_bytes_at_context, report.fixed_state_bytes):
        fields = [field for field in model.unknown if field.startswith("layer_groups")]
        raise PlanRefused(
            f"models/{model.id} leaves a cache dimension unknown"
            f" ({', '.join(fields or model.unknown)}): fill it from the model's published config"
        )
    assert report.bytes_per_token is not None and report.kv_bytes_at_context is not None
    for group in model.leaf_groups():
        if isinstance(group, Attention) and group.kv_heads and group.layers:
            heads = group.kv_heads
            if heads % tp and tp % heads:
                raise PlanRefused(
                    f"--tp {tp} neither divides nor is a multiple of the {heads} KV heads:"
                    " vLLM refuses it"
                )
    fixed = report.fixed_state_bytes or Fraction(0)  # None refused above
    per_sequence = report.kv_bytes_at_context + fixed
    return {
        "kv_dtype": element,
        "bytes_per_token": int(report.bytes_per_token),
        "bytes_per_token_per_device": _per_device(report.bytes_per_token, model, tp),
        "formula": report.formula(),
        "kv_bytes_per_sequence": int(report.kv_bytes_at_context),
        "fixed_state_bytes_per_sequence": int(fixed),
        "kv_bytes_all_users": int(per_sequence * question.users),
        "tensor_parallel": tp,
        "replicas": question.devices // tp,
    }


def _per_device(bytes_per_token: Fraction, model: Model, tp: int) -> int:
    """Per device under tensor parallelism: heads split across ranks (replicated when there are
    fewer heads than ranks, so a rank never holds less than one head); an MLA latent has no
    heads to split, so every rank holds all of it."""
    share = Fraction(0)
    for group in model.leaf_groups():
        if isinstance(group, MultiHeadLatent) and group.layers:
            share = Fraction(1)
        elif isinstance(group, Attention) and group.kv_heads:
            share = max(share, Fraction(max(1, group.kv_heads // tp), group.kv_heads))
    return math.ceil(bytes_per_token * (share or Fraction(1, tp)))


def _engine(
    question: Question,
    model: Model,
    hardware: Hardware,
    tp: int,
    arithmetic: dict[str, Any],
    assumptions: list[str],
) -> dict[str, Any]:
    from kvrecords.kv.engines import EngineError, vllm

    if question.engine != "vllm":
        raise PlanRefused(
            f"the engine layer covers vLLM; {question.engine}'s start-up memory is not sourced"
        )
    if model.max_context_tokens is None:
        raise PlanRefused(f"models/{model.id} states no max_context_tokens (vLLM's ceiling)")
    if question.context_tokens > model.max_context_tokens:
        raise PlanRefused(
            f"vLLM refuses a max_model_len of {question.context_tokens:,} above the model's"
            f" max_position_embeddings {model.max_context_tokens:,}"
        )
    try:
        version = vllm.parse_version(question.engine_version)
    except EngineError as error:
        raise PlanRefused(str(error)) from None
    pool, working = _pool(question, model, hardware, tp, version, assumptions)
    options = vllm.VllmOptions(
        kv_cache_dtype=question.kv_cache_dtype,
        version=question.engine_version,
        tensor_parallel_size=tp,
    )
    replicas = question.devices // tp
    users_per_replica = math.ceil(question.users / replicas)
    try:
        low = vllm.capacity(model, options, max(0, int(pool.low)), question.context_tokens)
        high = vllm.capacity(model, options, max(0, int(pool.high)), question.context_tokens)
        needed = vllm.needed_gib(model, options, question.context_tokens)
    except EngineError as error:
        raise PlanRefused(f"vllm: {error}") from None
    fits = _verdict(low.max_concurrency, high.max_concurrency, users_per_replica)
    starts = _verdict(low.max_concurrency, high.max_concurrency, 1)
    longest = [
        _longest_context(model, options, int(bound), users_per_replica, model.max_context_tokens)
        for bound in pool
    ]
    return {
        "engine": f"vllm {'.'.join(map(str, version))}",
        "pool_per_device_bytes": [int(pool.low), int(pool.high)],
        "pool_per_device": pool.shown_gib(),
        "pool_working": working,
        "blocks": [low.num_blocks, high.num_blocks],
        "printed": {"low": list(low.printed), "high": list(high.printed)},
        "one_request_needs": f"{needed} GiB KV cache",
        "starts": starts,  # vLLM refuses to start unless one request of max_model_len fits
        "fits": fits,
        "most_users_at_context": [
            math.floor(low.max_concurrency) * replicas,
            math.floor(high.max_concurrency) * replicas,
        ],
        "longest_context_for_users": longest,
    }


def _pool(
    question: Question,
    model: Model,
    hardware: Hardware,
    tp: int,
    version: tuple[int, int, int],
    assumptions: list[str],
) -> tuple[Interval, str]:
    """The KV memory per device vLLM would have, as an interval, and how it came out."""
    if question.kv_memory_gib is not None:
        # the printed figure is rounded: every memory that prints as it does is possible
        written = question.kv_memory_gib.strip()
        places = len(written.split(".")[1]) if "." in written else 0
        try:
            middle = Fraction(written)
        except ValueError:
            raise PlanRefused(f"--kv-memory {written!r} is not a number of GiB") from None
        half = Fraction(1, 2 * 10**places)
        return Interval((middle - half) * GIB, (middle + half) * GIB), (
            f"given: the engine's 'Available KV cache memory: {written} GiB', every memory that"
            " prints so"
        )
    if hardware.usable_memory_bytes is None:
        raise PlanRefused(f"hardware/{hardware.id}.yaml gives no memory size")
    weights = _weights_per_device(question, model, tp, assumptions)
    seen = STARTUP_MEMORY["seen_below_driver"]
    total = Interval(hardware.usable_memory_bytes - seen.high * GIB, hardware.usable_memory_bytes)
    budget = Interval(
        total.low * question.gpu_memory_utilization, total.high * question.gpu_memory_utilization
    )
    ranges = [STARTUP_MEMORY["activation_peak"]]
    ranges.append(STARTUP_MEMORY["non_torch_parallel" if tp > 1 else "non_torch_single"])
    if version >= CUDA_GRAPHS_COUNTED_FROM:
        ranges.append(STARTUP_MEMORY["cuda_graphs"])
    low = budget.low - weights.high - sum(r.high for r in ranges) * GIB
    high = budget.high - weights.low - sum(r.low for r in ranges) * GIB
    assumptions += [r.source for r in (seen, *ranges)]
    working = (
        f"{float(question.gpu_memory_utilization):g} x {total.shown_gib()} - weights"
        f" {weights.shown_gib()} - activation peak, non-torch"
        + (" and CUDA graph" if version >= CUDA_GRAPHS_COUNTED_FROM else "")
        + " memory (sourced ranges)"
    )
    return Interval(low, high), working


def _weights_per_device(
    question: Question, model: Model, tp: int, assumptions: list[str]
) -> Interval:
    billions = parameter_billions(model.parameters, "total", f"models/{model.id}")
    if isinstance(billions, Unknown):
        raise PlanRefused(f"{billions.reason}: fill parameters.total_billions")
    name = question.weights_precision or "bf16"
    if question.weights_precision is None:
        assumptions.append("weights in the model's 16-bit dtype (give --weights-precision)")
    precision = weight_format(name)
    if precision is None or not precision.bits:
        raise PlanRefused(f"--weights-precision {name}: no fixed bits per weight")
    if billions.assumption:
        assumptions.append(billions.assumption)
    low = billions.low * BILLION * precision.bits / 8 / tp
    high = billions.high * BILLION * precision.bits / 8 * WEIGHTS_OVERHEAD / tp
    return Interval(low, high)


def _verdict(low: Fraction, high: Fraction, users: int) -> str:
    if low >= users:
        return "yes"
    if high < users:
        return "no"
    return (
        f"depends: {float(low):.2f}x to {float(high):.2f}x requests fit; the activation peak,"
        " non-torch and CUDA graph memory decide (give --kv-memory from a start-up log)"
    )


def _longest_context(model: Model, options: Any, pool: int, users: int, ceiling: int) -> int:
    """The longest max_model_len at which ``users`` requests fit the pool (0: none)."""
    from kvrecords.kv.engines import vllm

    def fits(tokens: int) -> bool:
        return vllm.capacity(model, options, max(0, pool), tokens).max_concurrency >= users

    if not fits(1):
        return 0
    low, high = 1, ceiling
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


# ---- evidence -----------------------------------------------------------------------------


def _evidence(
    question: Question,
    model: Model,
    rows: list[dict[str, Any]],
    model_of: Callable[[str], Model | None],
) -> dict[str, Any]:
    """The records nearest the question, same geometry first, then family, hardware, count,
    engine and context; each says what it differs in. Techniques ranked by measured speedups."""
    shape = model.cache_shape()
    scored = []
    for row in rows:
        other = model_of(row["model"])
        same_geometry = other is not None and other.cache_shape() == shape
        differs = []
        if row["model"] != question.model_id:
            differs.append(
                f"model {row['model']}"
                + (" (same geometry)" if same_geometry else " (other geometry)")
            )
        if row["accelerator"] != question.hardware_id:
            differs.append(f"hardware {row['accelerator'] or 'not stated'}")
        if row["accelerator_count"] != question.devices:
            differs.append(f"{row['accelerator_count'] or '?'} accelerators")
        if row["engine"] != question.engine:
            differs.append(f"engine {row['engine']}")
        context = row["context_tokens"]
        if context != question.context_tokens:
            differs.append(f"context {context:,}" if context else "context not stated")
        distance = abs(math.log((context or 1) / question.context_tokens))
        key = (
            0 if row["model"] == question.model_id else 1 if same_geometry else 2,
            row["accelerator"] != question.hardware_id,
            row["accelerator_count"] != question.devices,
            row["engine"] != question.engine,
            distance,
        )
        scored.append((key, row, differs))
    scored.sort(key=lambda item: (item[0], item[1]["id"]))
    nearest = [
        {
            "id": row["id"],
            "model": row["model"],
            "hardware": f"{row['accelerator'] or 'not stated'} x {row['accelerator_count'] or '?'}",
            "engine": row["engine"],
            "context_tokens": row["context_tokens"],
            "ttft_ms": row["measured_ttft_ms_at_ctx"],
            "tokens_per_s": row["measured_tps_at_ctx"],
            "speedup": row["speedup"],
            "speedup_techniques": row["speedup_techniques"],
            "techniques": row["techniques"],
            "confidence": row["confidence"],
            "differs_in": differs or ["nothing the question states"],
        }
        for key, row, differs in scored[:5]
        if key[0] < 2 or key[1] is False
    ]
    return {"nearest": nearest, "techniques": _techniques(nearest)}


def _techniques(nearest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each technique the nearest records measured a speedup for, best first; none unmeasured.
    A speedup counts for the techniques its two runs differ by, never for every technique the
    record is about (an engine upgrade in which both runs offload bought no offload)."""
    found = []
    for record in nearest:
        speedup = record["speedup"]
        for technique in record["speedup_techniques"] or [] if speedup else []:
            found.append({"technique": technique, "speedup": speedup, "record": record["id"]})
    return sorted(found, key=lambda item: -_number(item["speedup"]))


def _number(text: str) -> float:
    """The first figure of a stated speedup (``23x``, ``2x-22x``, ``up to 9x``), for ranking."""
    found = re.search(r"\d+(?:\.\d+)?", str(text))
    return float(found[0]) if found else 0.0


# ---- text --------------------------------------------------------------------------------


def render_text(answer: Answer) -> str:
    q = answer.question
    a = answer.arithmetic
    lines = [
        f"{q.model_id} on {q.devices} x {q.hardware_id} at {q.context_tokens:,} tokens for"
        f" {_users(q.users)} ({q.engine} {q.engine_version})",
        "",
        "Arithmetic (exact, from the model file)",
        f"  per token: {a['formula']} ({a['kv_dtype']})",
        f"  per device at --tp {a['tensor_parallel']}: {a['bytes_per_token_per_device']:,} B/token",
        f"  one sequence at {q.context_tokens:,} tokens: {a['kv_bytes_per_sequence']:,} B"
        f" ({a['kv_bytes_per_sequence'] / GIB:.2f} GiB) + fixed state"
        f" {a['fixed_state_bytes_per_sequence']:,} B",
        f"  {_users(q.users)}: {a['kv_bytes_all_users']:,} B"
        f" ({a['kv_bytes_all_users'] / GIB:.2f} GiB)",
        "",
        "Engine (a model of one vLLM release; an interval where an input is uncertain)",
    ]
    e = answer.engine
    if "refused" in e:
        lines.append(f"  not answered: {e['refused']}")
    else:
        lines += [
            f"  {e['engine']}: KV pool per device {e['pool_per_device']} ({e['pool_working']})",
            f"  blocks: {e['blocks'][0]:,} to {e['blocks'][1]:,}",
            "  it would print, at the low end: " + " | ".join(e["printed"]["low"]),
            "                  at the high end: " + " | ".join(e["printed"]["high"]),
            f"  one request of {q.context_tokens:,} tokens needs {e['one_request_needs']};"
            f" vLLM starts: {e['starts']}",
            f"  fits {_users(q.users)}: {e['fits']}",
            f"  most users at {q.context_tokens:,} tokens: {e['most_users_at_context'][0]} to"
            f" {e['most_users_at_context'][1]}",
            f"  longest context for {_users(q.users)}: {e['longest_context_for_users'][0]:,} to"
            f" {e['longest_context_for_users'][1]:,} tokens",
        ]
    lines += ["", "Evidence (cited records, nearest first)"]
    for record in answer.evidence["nearest"]:
        ttft = "no TTFT" if record["ttft_ms"] is None else f"TTFT {record['ttft_ms']} ms"
        rate = "no rate" if record["tokens_per_s"] is None else f"{record['tokens_per_s']} tokens/s"
        lines.append(
            f"  {record['id']} (confidence {record['confidence']}): {ttft}, {rate};"
            f" differs in: {', '.join(record['differs_in'])}"
        )
    if not answer.evidence["nearest"]:
        lines.append("  no record on this geometry or this hardware")
    lines.append("Techniques measured by these records (best first)")
    techniques = answer.evidence["techniques"]
    lines += [f"  {t['technique']}: {t['speedup']} ({t['record']})" for t in techniques] or [
        "  no evidence"
    ]
    if answer.assumptions:
        lines += ["", "Assumptions"] + [f"  - {text}" for text in answer.assumptions]
    return "\n".join(lines)


def _users(count: int) -> str:
    return f"{count} user" if count == 1 else f"{count} users"


def to_json(answer: Answer) -> dict[str, Any]:
    q = answer.question
    return {
        "question": {
            "model": q.model_id,
            "hardware": q.hardware_id,
            "count": q.devices,
            "context_tokens": q.context_tokens,
            "users": q.users,
            "engine": q.engine,
            "engine_version": q.engine_version,
            "kv_cache_dtype": q.kv_cache_dtype,
            "weights_precision": q.weights_precision,
            "gpu_memory_utilization": float(q.gpu_memory_utilization),
            "kv_memory_gib": q.kv_memory_gib,
        },
        "arithmetic": answer.arithmetic,
        "engine": answer.engine,
        "evidence": answer.evidence,
        "assumptions": answer.assumptions,
        "unknown": answer.unknown,
    }


def answer_from_dataset(root: Path, question: Question) -> Answer:
    """Read what the question needs from the dataset at ``root`` and answer it."""
    from kvrecords.checks.hardware import hardware_catalog
    from kvrecords.tools.explain import model_lookup
    from kvrecords.tools.export import rows

    model_of = model_lookup(root)
    model = model_of(question.model_id)
    if model is None:
        raise PlanRefused(f"no sound model file models/{question.model_id}.yaml")
    state = hardware_catalog(root).get(question.hardware_id)
    if state is None or state.hardware is None:
        raise PlanRefused(f"no sound hardware file hardware/{question.hardware_id}.yaml")
    return plan(question, model, state.hardware, rows(root), model_of)
