"""Physical plausibility: figures that agree with each other can still be impossible.

A record runs on hardware (``methodology.hardware``: hardware/<id>.yaml x count) with a model
(``models/<id>.yaml``: parameter counts and cache geometry) at a weight precision. From those:

- KV701 fit: total params x bits / 8 + sequences x (KV at context + fixed state) must fit in
  count x usable memory, unless the record declares ``kv_offload``;
- KV702 decode roofline: every decode step reads the active weights once for the whole batch
  and each sequence's KV, so for B concurrent sequences
  per-sequence tok/s <= s x count x bandwidth / (active params x bits / 8 + B x KV), and the
  aggregate is B times that (s = 1 + draft tokens with speculative decoding, else 1);
- KV703 prefill ceiling: context / TTFT <= count x peak / FLOPs per token, where
  FLOPs per token = 2 x active params + attention, and attention = 2 x heads x (key width +
  value width) x the average context a prompt token attends to, summed over attention layers
  (context / 2 for full attention, W - W^2 / (2 x context) for a window W below the context);
  heads are the model file's kv heads (query heads are not recorded, and there are at least as
  many), MLA counts one latent head of width kv_lora_rank + rope and value width kv_lora_rank,
  and state layers add nothing (both lower bounds, so the ceiling stays lenient);
- KV704 fit claims: each ``kv_bytes_basis.fit_claims`` entry is evaluated like KV701 and must
  come out the way it claims;
- KV705 hardware link: every accelerator a record names has a file in hardware/.

Every input takes its most lenient reading (most generous peak, highest bandwidth, fewest
bits a precision name allows, KV at the smallest batch the record allows). A check whose inputs
are all stated is an error when violated; one that rests on an assumption (weights precision not
stated, a parameter count read off the name, a KV dtype the source does not state, a nominal
memory size, a hardware figure rated below high) is a warning. A check that lacks an input is
not run; ``explain_record`` says which and why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.hardware import HardwareCatalog, HardwareState
from kvrecords.checks.records import RecordContext
from kvrecords.dataset.document import JsonPath
from kvrecords.dataset.records import bases, basis_report, named_basis
from kvrecords.kv.arithmetic import kv_report, parse_element_type
from kvrecords.kv.geometry import Attention, MultiHeadLatent, ParameterCount
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.units import format_exact, format_fraction
from kvrecords.kv.weights import ASSUMED_BITS, ASSUMED_FORMAT, WeightFormat, weight_format
from kvrecords.problems import Problem

GIB = 1024**3
BILLION = 10**9
# Techniques under which a measured TTFT may be served from reused KV, not a full prefill.
PREFIX_REUSE = ("prefix_caching", "radix_reuse", "cache_aware_routing", "kv_offload")
_SPECULATIVE = re.compile(r"specul|\bmtp\b|eagle|medusa|draft|lookahead|ngram", re.IGNORECASE)
_DRAFT_TOKENS = re.compile(
    r"(?:num[_-]speculative[_-]tokens|speculative[_-]num[_-]draft[_-]tokens|draft[_-]max"
    r"|num[_-]draft[_-]tokens)[\"'\s:=]+(\d+)",
    re.IGNORECASE,
)


class HardwareIndex(NamedTuple):
    """The hardware files a record names, already read: the checks themselves do no I/O."""

    states: Mapping[str, HardwareState | None]  # None: no such file
    catalog_ids: tuple[str, ...] = ()  # every id in hardware/, for "did you mean" hints

    def get(self, hardware_id: str) -> HardwareState | None:
        return self.states.get(hardware_id)


# ---- evaluations ----------------------------------------------------------------------------


class Evaluation(NamedTuple):
    """One comparison of a figure with its physical limit, or why it could not be made."""

    code: str
    check: str  # what is compared, e.g. "decode results.decode_tokens_per_s"
    path: JsonPath  # where a violation is reported
    value: Fraction | None = None
    limit: Fraction | None = None
    expect_within: bool = True  # False: the record claims value > limit (does not fit)
    subject: str = ""  # the value with its working, e.g. "12.57 GiB weights + 9.16 GiB KV"
    working: str = ""  # the limit with its working
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # lenient simplifications, shown but not downgrading
    skipped: str | None = None  # why the check was not run

    @property
    def checked(self) -> bool:
        return self.skipped is None and self.value is not None and self.limit is not None

    @property
    def within(self) -> bool:
        assert self.value is not None and self.limit is not None
        return self.value <= self.limit

    @property
    def violated(self) -> bool:
        return self.checked and self.within != self.expect_within

    @property
    def severity(self) -> str:
        return "warning" if self.assumptions else "error"

    def margin(self) -> str:
        """``12.57 GiB is 39% of 31.84 GiB``: the value as a share of its limit."""
        assert self.value is not None and self.limit is not None
        return f"{self.subject} is {percent(self.value, self.limit)} of {self.working}"

    def summary(self) -> str:
        if not self.checked:
            return f"{self.code} {self.check}: not checked: {self.skipped}"
        verdict = "VIOLATED" if self.violated else "ok"
        text = f"{self.code} {self.check}: {self.margin()} [{verdict}]"
        return text + self.qualifiers()

    def qualifiers(self) -> str:
        """The simplifications and assumptions behind the comparison."""
        text = ""
        if self.notes:
            text += f"; {'; '.join(self.notes)}"
        if self.assumptions:
            text += f" (assumes: {'; '.join(self.assumptions)})"
        return text


def percent(value: Fraction, limit: Fraction) -> str:
    share = value / limit * 100
    decimals = 1 if share < 10 or 99 <= share < 101 else 0
    return f"{format_fraction(share, decimals)}%"


def gib(value: Fraction | int) -> str:
    return f"{format_fraction(Fraction(value) / GIB, 2)} GiB"


def rate(value: Fraction) -> str:
    if value < 1000:
        return f"{format_fraction(value, 1)} tok/s"
    return f"{int(format_fraction(value, 0)):,} tok/s"


# ---- inputs ---------------------------------------------------------------------------------


class Weights(NamedTuple):
    """The weight format a record runs, with the assumption behind it when not stated."""

    format: WeightFormat
    assumption: str | None


def record_weights(stated: str | None, *, stated_flag: bool = True) -> Weights:
    if stated is None:
        return Weights(ASSUMED_FORMAT, f"weights precision not stated, {ASSUMED_BITS} bits assumed")
    found = weight_format(stated)
    if found is None:
        return Weights(
            ASSUMED_FORMAT,
            f"weights precision {stated!r} not recognised, {ASSUMED_BITS} bits assumed",
        )
    if not stated_flag:
        return Weights(found, f"weights {stated} assumed (the source does not state them)")
    return Weights(found, None)


class KvPerSequence(NamedTuple):
    """Cache bytes one sequence holds at the record's context (KV plus fixed state)."""

    bytes: Fraction
    working: str
    notes: tuple[str, ...]
    assumption: str | None  # the KV dtype, when the source does not state it


def kv_per_sequence(ctx: RecordContext) -> KvPerSequence:
    """The physical cache (every layer as the model is, windows capped) at the record's dtype."""
    basis = ctx.data["kv_bytes_basis"]
    context = basis.get("context_tokens")
    notes: list[str] = []
    assumption = None
    if not basis.get("dtype_stated", True):
        assumption = f"KV dtype {basis['dtype']} assumed (kv_bytes_basis.dtype_stated: false)"
    try:
        state_dtype = basis.get("state_dtype")
        report = kv_report(
            ctx.model,
            parse_element_type(basis["dtype"]),
            context or 0,
            "cache",
            parse_element_type(state_dtype) if state_dtype else None,
        )
    except ValueError as error:
        return KvPerSequence(Fraction(0), "0 B", (f"KV not counted: {error}",), None)
    kv = report.kv_bytes_at_context
    working = "" if kv is None else f"{gib(kv)} KV"
    if context is None:
        kv, working = Fraction(0), "no KV"
        notes.append("KV not counted: context_tokens not stated")
    elif kv is None:
        kv, working = Fraction(0), "no KV"
        notes.append(f"KV not counted: {ctx.model_display} does not give it")
    state = report.fixed_state_bytes
    if state is None:
        notes.append("fixed state not counted (unknown dimensions)")
    elif state:
        working += f" + {gib(state)} state"
    return KvPerSequence(kv + (state or 0), working, tuple(notes), assumption)


def _number(value: Any, *, lenient_high: bool) -> Fraction | None:
    """A measured figure: a number, ``{about: x}``, or a range (the lenient end)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Fraction(Decimal(str(value)))
    if isinstance(value, dict):
        if "about" in value:
            return _number(value["about"], lenient_high=lenient_high)
        if "min" in value and "max" in value:
            return _number(value["max" if lenient_high else "min"], lenient_high=lenient_high)
    return None


def _get(data: Any, *path: str | int) -> Any:
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


class Setup(NamedTuple):
    """What the checks take from the record, its model and its hardware, or why not."""

    hardware: Hardware | None
    hardware_missing: str | None
    device_count: int | None
    parameters: ParameterCount | None
    weights: Weights
    kv: KvPerSequence
    concurrency: int | None
    named_hardware: HardwareIndex  # every hardware file the record names (fit claims too)
    assumptions_common: tuple[str, ...] = ()


def setup_of(ctx: RecordContext, hardware: HardwareIndex) -> Setup:
    """Everything the checks need, worked out once per record."""
    stated = ctx.data["methodology"]["hardware"]
    accelerator = stated.get("accelerator")
    found, missing = _resolve(accelerator, hardware, "methodology.hardware.accelerator")
    parameters = ctx.model.parameters
    common = []
    if parameters is not None and parameters.from_name:
        common.append(f"parameter count read off the name ({parameters.stated_as!r})")
    return Setup(
        hardware=found,
        hardware_missing=missing,
        device_count=stated.get("count"),
        parameters=parameters,
        weights=record_weights(ctx.data["methodology"].get("weights_precision")),
        kv=kv_per_sequence(ctx),
        concurrency=ctx.data["methodology"].get("concurrency"),
        named_hardware=hardware,
        assumptions_common=tuple(common),
    )


def _resolve(
    accelerator: str | None, hardware: HardwareIndex, where: str
) -> tuple[Hardware | None, str | None]:
    if accelerator is None:
        return None, f"{where} is null"
    state = hardware.get(accelerator)
    if state is None:
        return None, f"hardware/{accelerator}.yaml does not exist"
    if state.hardware is None:
        return None, f"{state.display} has problems"
    return state.hardware, None


def _billions(parameters: ParameterCount | None, which: str, model_display: str) -> Fraction | str:
    if parameters is None:
        return f"{model_display} states no parameter counts"
    value = parameters.total_billions if which == "total" else parameters.active_billions
    if value is None:
        return (
            f"{model_display} does not state its {which} parameter count ({parameters.stated_as!r})"
        )
    return value


def _count(setup: Setup) -> int | str:
    return (
        "methodology.hardware.count is null" if setup.device_count is None else setup.device_count
    )


def _below_high(rating: str, what: str, hardware: Hardware) -> list[str]:
    return [] if rating == "high" else [f"{what} rated {rating} in {hardware.display}"]


def weight_bytes(billions: Fraction, weights: WeightFormat) -> Fraction:
    return billions * BILLION * weights.bits / 8


def _weights_working(billions: Fraction, weights: WeightFormat, label: str) -> str:
    return f"{format_exact(billions)}B {label} params x {float(weights.bits):g} bits / 8"


# ---- KV701 fit ------------------------------------------------------------------------------


def evaluate_fit(ctx: RecordContext, setup: Setup) -> Evaluation:
    path: JsonPath = ("methodology", "hardware", "accelerator")
    base = Evaluation("KV701", "fit", path)
    techniques = ctx.data.get("techniques", [])
    if "kv_offload" in techniques:
        return _skip(base, "the record declares kv_offload (the cache may live off the device)")
    total = _billions(setup.parameters, "total", ctx.model_display)
    count = _count(setup)
    missing = [m for m in (setup.hardware_missing, total, count) if isinstance(m, str)]
    if missing or setup.hardware is None:
        return _skip(base, "; ".join(missing))
    assert isinstance(total, Fraction) and isinstance(count, int)
    hw = setup.hardware
    if hw.usable_memory_bytes is None:
        return _skip(base, f"{hw.display} gives no memory size")
    sequences = setup.concurrency or 1
    weights = weight_bytes(total, setup.weights.format)
    need = weights + sequences * setup.kv.bytes
    assumptions = [*setup.assumptions_common]
    if setup.weights.assumption:
        assumptions.append(setup.weights.assumption)
    if setup.kv.assumption and setup.kv.bytes:
        assumptions.append(setup.kv.assumption)
    assumptions += _memory_assumptions(hw)
    per_sequence = f"{sequences} x ({setup.kv.working})" if sequences > 1 else setup.kv.working
    return Evaluation(
        "KV701",
        "fit",
        path,
        value=need,
        limit=count * hw.usable_memory_bytes,
        subject=(
            f"weights {gib(weights)} ({_weights_working(total, setup.weights.format, 'total')})"
            f" + {per_sequence} = {gib(need)}"
        ),
        working=f"{count} x {gib(hw.usable_memory_bytes)} ({hw.display} {hw.memory_figure})",
        assumptions=tuple(assumptions),
        notes=setup.kv.notes,
    )


def _memory_assumptions(hw: Hardware) -> list[str]:
    found = []
    if hw.memory_is_nominal:
        shared = ", shared with the OS" if hw.unified else ""
        found.append(f"{hw.display} memory is nominal{shared}")
    return found + _below_high(hw.memory_confidence, "memory", hw)


def _skip(base: Evaluation, reason: str) -> Evaluation:
    return Evaluation(base.code, base.check, base.path, skipped=reason)


# ---- KV702 decode roofline ------------------------------------------------------------------

DECODE_FIGURES: tuple[JsonPath, ...] = (
    ("measured_tps_at_ctx",),
    ("results", "decode_tokens_per_s"),
)


def speculation(ctx: RecordContext) -> tuple[int | None, str | None]:
    """Tokens a decode step may emit: (1 + draft tokens, its source), (None, why) if unknown."""
    engine = ctx.data["methodology"]["engine"]
    text = " ".join([*engine.get("flags", []), *engine.get("components", [])])
    if not _SPECULATIVE.search(text):
        return 1, None
    drafted = _DRAFT_TOKENS.search(text)
    if drafted is None:
        return None, "speculative decoding with an unstated draft length"
    draft = int(drafted.group(1))
    return 1 + draft, f"speculative decoding, up to {1 + draft} tokens per step"


def evaluate_decode(ctx: RecordContext, setup: Setup) -> list[Evaluation]:
    evaluations = []
    for path in DECODE_FIGURES:
        value = _number(_get(ctx.data, *path), lenient_high=False)
        label = f"decode {'.'.join(str(p) for p in path)}"
        base = Evaluation("KV702", label, path)
        if value is None:
            evaluations.append(_skip(base, f"{'.'.join(map(str, path))} is not stated"))
            continue
        evaluations.append(_decode_one(ctx, setup, base, value))
    return evaluations


def _decode_one(ctx: RecordContext, setup: Setup, base: Evaluation, value: Fraction) -> Evaluation:
    active = _billions(setup.parameters, "active", ctx.model_display)
    count = _count(setup)
    steps, speculative = speculation(ctx)
    missing = [m for m in (setup.hardware_missing, active, count) if isinstance(m, str)]
    if steps is None:
        missing.append(speculative or "")
    if missing or setup.hardware is None:
        return _skip(base, "; ".join(missing))
    assert isinstance(active, Fraction) and isinstance(count, int) and steps is not None
    hw = setup.hardware
    if hw.bandwidth_bytes_per_s is None:
        return _skip(base, f"{hw.display} gives no memory bandwidth")
    scope = _get(ctx.data, "results", "decode_rate_scope")
    concurrency = setup.concurrency
    assumptions = [*setup.assumptions_common]
    batch = concurrency or 1
    if scope == "per_sequence":
        aggregate = False
        reading = "per sequence (as the record states)"
    elif scope == "aggregate":
        aggregate = True
        reading = f"aggregate over {batch} sequences (as the record states)"
        if concurrency is None:
            assumptions.append("concurrency not stated, one sequence assumed")
    elif concurrency is not None and concurrency > 1:
        aggregate = True
        reading = f"aggregate over {batch} sequences (the record does not say; the lenient reading)"
    else:
        aggregate = False
        reading = "one sequence"
        if concurrency is None:
            assumptions.append("concurrency not stated, one sequence assumed")
            reading = "one sequence (concurrency not stated)"
    weights = weight_bytes(active, setup.weights.format)
    if setup.weights.assumption:
        assumptions.append(setup.weights.assumption)
    if setup.kv.assumption and setup.kv.bytes:
        assumptions.append(setup.kv.assumption)
    assumptions += _below_high(hw.bandwidth_confidence, "bandwidth", hw)
    bandwidth = count * hw.bandwidth_bytes_per_s
    per_sequence = steps * bandwidth / (weights + batch * setup.kv.bytes)
    limit = per_sequence * batch if aggregate else per_sequence
    kv_term = f"{batch} x {setup.kv.working}" if batch > 1 else setup.kv.working
    factor = f"{steps} x " if steps > 1 else ""
    times_batch = f"{batch} sequences x " if aggregate else ""
    bandwidth_text = f"{count} x {format_exact(hw.bandwidth_bytes_per_s / 10**9)} GB/s"
    working = (
        f"the {rate(limit)} roofline = {times_batch}{factor}{bandwidth_text} / "
        f"(weights {gib(weights)} [{_weights_working(active, setup.weights.format, 'active')}]"
        f" + {kv_term}) ({hw.display} {hw.bandwidth_figure})"
    )
    notes = list(setup.kv.notes)
    if speculative:
        notes.append(speculative)
    return Evaluation(
        "KV702",
        base.check,
        base.path,
        value=value,
        limit=limit,
        subject=f"{rate(value)} read as {reading}",
        working=working,
        assumptions=tuple(assumptions),
        notes=tuple(notes),
    )


# ---- KV703 prefill ceiling ------------------------------------------------------------------


def attention_flops_per_token(ctx: RecordContext, context: int) -> tuple[Fraction, str]:
    """FLOPs one prompt token spends attending, averaged over a prompt of ``context`` tokens."""
    total = Fraction(0)
    terms = []
    for group in ctx.model.leaf_groups():
        if isinstance(group, Attention):
            if group.kv_heads is None or group.head_dim is None or group.value_dim is None:
                continue
            heads, widths = group.kv_heads, (group.head_dim, group.value_dim)
        elif isinstance(group, MultiHeadLatent):
            if group.kv_lora_rank is None or group.qk_rope_head_dim is None:
                continue
            heads = 1
            widths = (group.kv_lora_rank + group.qk_rope_head_dim, group.kv_lora_rank)
        else:
            continue
        window = group.window
        if window is None or context <= window:
            attended = Fraction(context, 2)
            attended_text = f"{context:,}/2"
        else:
            attended = Fraction(window * (2 * context - window), 2 * context)
            attended_text = f"{window:,} x (2 x {context:,} - {window:,}) / (2 x {context:,})"
        flops = 2 * group.layers * heads * (widths[0] + widths[1]) * attended
        total += flops
        terms.append(
            f"2 x {group.layers} layers x {heads} heads x ({widths[0]} + {widths[1]}) x {attended_text}"
        )
    return total, " + ".join(terms) or "0"


def _ttft(ctx: RecordContext) -> tuple[JsonPath, Fraction] | str:
    cold = _number(_get(ctx.data, "results", "cold_ttft_ms"), lenient_high=True)
    if cold is not None:
        return ("results", "cold_ttft_ms"), cold
    reuse = [t for t in ctx.data.get("techniques", []) if t in PREFIX_REUSE]
    measured = _number(ctx.data.get("measured_ttft_ms_at_ctx"), lenient_high=True)
    if measured is None:
        return "no cold TTFT and no measured_ttft_ms_at_ctx"
    if reuse:
        return f"no cold TTFT, and measured_ttft_ms_at_ctx may be served from reused KV ({', '.join(reuse)})"
    return ("measured_ttft_ms_at_ctx",), measured


def evaluate_prefill(ctx: RecordContext, setup: Setup) -> list[Evaluation]:
    """The prefill rate from context / TTFT, and the measured prefill rate when stated."""
    context = ctx.data["kv_bytes_basis"].get("context_tokens")
    evaluations = []
    base = Evaluation("KV703", "prefill context / TTFT", ("kv_bytes_basis", "context_tokens"))
    ttft = _ttft(ctx)
    if context is None:
        evaluations.append(_skip(base, "kv_bytes_basis.context_tokens is null"))
    elif isinstance(ttft, str):
        evaluations.append(_skip(base, ttft))
    else:
        path, ttft_ms = ttft
        value = Fraction(context * 1000) / ttft_ms
        subject = f"{context:,} tokens / {format_exact(ttft_ms / 1000)} s = {rate(value)}"
        evaluations.append(_prefill_one(ctx, setup, base._replace(path=path), value, subject))
    measured_path: JsonPath = ("results", "prefill_tokens_per_s")
    measured = _number(_get(ctx.data, *measured_path), lenient_high=False)
    base = Evaluation("KV703", "prefill results.prefill_tokens_per_s", measured_path)
    if measured is None:
        evaluations.append(_skip(base, "results.prefill_tokens_per_s is not stated"))
    else:
        subject = f"{rate(measured)} measured"
        evaluations.append(_prefill_one(ctx, setup, base, measured, subject))
    return evaluations


def _prefill_one(
    ctx: RecordContext, setup: Setup, base: Evaluation, value: Fraction, subject: str
) -> Evaluation:
    context = ctx.data["kv_bytes_basis"].get("context_tokens")
    active = _billions(setup.parameters, "active", ctx.model_display)
    count = _count(setup)
    missing = [m for m in (setup.hardware_missing, active, count) if isinstance(m, str)]
    if missing or setup.hardware is None:
        return _skip(base, "; ".join(missing))
    assert isinstance(active, Fraction) and isinstance(count, int)
    hw = setup.hardware
    weights = setup.weights.format
    peak = hw.peak(weights.compute_types)
    if peak is None:
        return _skip(
            base, f"{hw.display} publishes no dense peak for {', '.join(weights.compute_types)}"
        )
    compute_type, figure = peak
    notes = []
    if context is None:
        attention, attention_text = Fraction(0), "0"
        notes.append("attention not counted: context_tokens not stated")
    else:
        attention, attention_text = attention_flops_per_token(ctx, context)
    flops = 2 * active * BILLION + attention
    limit = count * figure.flops_per_s / flops
    assumptions = [*setup.assumptions_common]
    assumptions += _below_high(figure.confidence, f"{compute_type} peak", hw)
    which = (
        "the most generous on the card, precision not stated"
        if weights is ASSUMED_FORMAT
        else f"the most generous for {weights.name} weights"
    )
    return Evaluation(
        "KV703",
        base.check,
        base.path,
        value=value,
        limit=limit,
        subject=subject,
        working=(
            f"the {rate(limit)} ceiling = {count} x {format_exact(figure.flops_per_s / 10**12)} TFLOP/s "
            f"{compute_type} ({figure.figure}; {which}) / "
            f"(2 x {format_exact(active)}e9 + {attention_text} = {_sci(flops)} FLOP/token)"
        ),
        assumptions=tuple(assumptions),
        notes=tuple(notes),
    )


def _sci(value: Fraction) -> str:
    return f"{float(value):.4g}"


# ---- KV704 fit claims -----------------------------------------------------------------------


def evaluate_fit_claims(ctx: RecordContext, setup: Setup) -> list[Evaluation]:
    basis = ctx.data["kv_bytes_basis"]
    return [
        _fit_claim(ctx, setup.named_hardware, index, claim)
        for index, claim in enumerate(basis.get("fit_claims", []))
    ]


def _fit_claim(
    ctx: RecordContext, hardware: HardwareIndex, index: int, claim: dict[str, Any]
) -> Evaluation:
    path: JsonPath = ("kv_bytes_basis", "fit_claims", index)
    fits = bool(claim["fits"])
    label = f"fit claim [{index}] ({'fits' if fits else 'does not fit'})"
    base = Evaluation("KV704", label, path, expect_within=fits)
    which = claim["basis"]
    named = named_basis(ctx.data, which)
    if named is None:
        alternatives = len(bases(ctx.data)) - 1
        return _skip(base, f"basis {which} names no alternative (the record has {alternatives})")
    stated, basis_name = named.stated, named.label
    found, missing = _resolve(claim["accelerator"], hardware, f"fit_claims[{index}].accelerator")
    total = _billions(ctx.model.parameters, "total", ctx.model_display)
    reasons = [m for m in (missing, total) if isinstance(m, str)]
    try:
        report = basis_report(ctx.model, stated)
    except ValueError as error:
        reasons.append(str(error))
        report = None
    if report is not None and (
        stated.get("context_tokens") is None or report.kv_bytes_at_context is None
    ):
        reasons.append("the basis has no KV at context")
    if reasons or found is None or report is None:
        return _skip(base, "; ".join(reasons))
    assert isinstance(total, Fraction) and report.kv_bytes_at_context is not None
    if found.usable_memory_bytes is None:
        return _skip(base, f"{found.display} gives no memory size")
    weights = record_weights(
        claim["weights_precision"], stated_flag=claim["weights_precision_stated"]
    )
    sequences = claim.get("sequences", 1)
    state = report.fixed_state_bytes
    kv = report.kv_bytes_at_context + (state or 0)
    weight_total = weight_bytes(total, weights.format)
    need = weight_total + sequences * kv
    assumptions = [*_memory_assumptions(found)]
    if ctx.model.parameters is not None and ctx.model.parameters.from_name:
        assumptions.append(
            f"parameter count read off the name ({ctx.model.parameters.stated_as!r})"
        )
    if weights.assumption:
        assumptions.append(weights.assumption)
    notes = []
    if state is None:
        notes.append("fixed state not counted (unknown dimensions)")
        if not fits and any(cost.state_formula for cost in report.groups):
            assumptions.append("fixed state counted as 0")
    kv_text = f"{gib(report.kv_bytes_at_context)} KV ({basis_name})"
    if state:
        kv_text += f" + {gib(state)} state"
    if sequences > 1:
        kv_text = f"{sequences} x ({kv_text})"
    return Evaluation(
        "KV704",
        label,
        path,
        value=need,
        limit=claim["count"] * found.usable_memory_bytes,
        expect_within=fits,
        subject=(
            f"weights {gib(weight_total)} ({_weights_working(total, weights.format, 'total')})"
            f" + {kv_text} = {gib(need)}"
        ),
        working=f"{claim['count']} x {gib(found.usable_memory_bytes)} ({found.display} {found.memory_figure})",
        assumptions=tuple(assumptions),
        notes=tuple(notes),
    )


# ---- KV705 hardware link --------------------------------------------------------------------


def accelerator_links(data: dict[str, Any]) -> list[tuple[JsonPath, str]]:
    """Every accelerator id a record names, with where it names it."""
    links: list[tuple[JsonPath, str]] = []
    main = _get(data, "methodology", "hardware", "accelerator")
    if isinstance(main, str):
        links.append((("methodology", "hardware", "accelerator"), main))
    for index, observation in enumerate(_get(data, "results", "observations") or []):
        named = _get(observation, "hardware", "accelerator")
        if isinstance(named, str):
            links.append((("results", "observations", index, "hardware", "accelerator"), named))
    for index, claim in enumerate(_get(data, "kv_bytes_basis", "fit_claims") or []):
        links.append((("kv_bytes_basis", "fit_claims", index, "accelerator"), claim["accelerator"]))
    return links


def check_hardware_links(ctx: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV705: every accelerator names a sound file in hardware/."""
    for path, accelerator in accelerator_links(ctx.data):
        state = setup.named_hardware.get(accelerator)
        if state is None:
            import difflib  # only for a broken link's "did you mean"

            close = difflib.get_close_matches(
                accelerator[:100], setup.named_hardware.catalog_ids, n=3
            )
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            yield ctx.problem(
                "KV705",
                path,
                f"accelerator {accelerator!r}: hardware/{accelerator}.yaml does not exist{hint}",
            )
        elif state.hardware is None:
            yield ctx.problem(
                "KV705",
                path,
                f"accelerator {accelerator!r}: {state.display} has problems (reported there); "
                "hardware checks not run",
            )
            yield from state.problems


# ---- the checks -----------------------------------------------------------------------------


def _problems(ctx: RecordContext, evaluations: list[Evaluation]) -> Iterator[Problem]:
    for evaluation in evaluations:
        if not evaluation.violated:
            continue
        problem = ctx.problem(evaluation.code, evaluation.path, _message(evaluation))
        if evaluation.severity == "warning":
            problem = Problem(
                problem.path, problem.line, problem.column, problem.code, problem.message, "warning"
            )
        yield problem


def _message(evaluation: Evaluation) -> str:
    text = {
        "KV701": "weights + KV do not fit: ",
        "KV702": f"{evaluation.check} is above the memory-bandwidth roofline: ",
        "KV703": f"{evaluation.check} is faster than the peak FLOP/s allows: ",
        "KV704": (
            "fit claim does not hold, it fits: "
            if not evaluation.expect_within
            else "fit claim does not hold, it does not fit: "
        ),
    }[evaluation.code]
    text += evaluation.margin()
    if evaluation.code == "KV701":
        text += "; if the cache is offloaded, add kv_offload to techniques"
    text += evaluation.qualifiers()
    if evaluation.assumptions:
        text += "; a warning, since it rests on those assumptions"
    return text


def check_fit(ctx: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV701: weights plus KV at context fit the accelerators' memory."""
    yield from _problems(ctx, [evaluate_fit(ctx, setup)])


def check_decode(ctx: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV702: decode rates are below the memory-bandwidth roofline."""
    yield from _problems(ctx, evaluate_decode(ctx, setup))


def check_prefill(ctx: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV703: prefill rates are below the compute ceiling."""
    yield from _problems(ctx, evaluate_prefill(ctx, setup))


def check_fit_claims(ctx: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV704: each fit claim comes out the way it says."""
    for index, claim in enumerate(ctx.data["kv_bytes_basis"].get("fit_claims", [])):
        which = claim["basis"]
        if named_basis(ctx.data, which) is None:
            yield ctx.problem(
                "KV704",
                ("kv_bytes_basis", "fit_claims", index, "basis"),
                f"basis {which} names no alternative; the record has {len(bases(ctx.data)) - 1} "
                f"(use 'main' or an index from 0)",
            )
    yield from _problems(ctx, evaluate_fit_claims(ctx, setup))


PlausibilityCheck = Callable[[RecordContext, Setup], Iterator[Problem]]
PLAUSIBILITY_CHECKS: tuple[PlausibilityCheck, ...] = (
    check_hardware_links,
    check_fit,
    check_decode,
    check_prefill,
    check_fit_claims,
)


def hardware_index(data: dict[str, Any], catalog: HardwareCatalog) -> HardwareIndex:
    """The hardware files a record names, read through the catalog (the only I/O here)."""
    states = {accelerator: catalog.get(accelerator) for _, accelerator in accelerator_links(data)}
    return HardwareIndex(states, catalog.ids() if None in states.values() else ())


def plausibility_problems(ctx: RecordContext, catalog: HardwareCatalog) -> list[Problem]:
    """Every plausibility problem of one record whose arithmetic checks have run."""
    setup = setup_of(ctx, hardware_index(ctx.data, catalog))
    problems: list[Problem] = []
    for check in PLAUSIBILITY_CHECKS:
        problems += check(ctx, setup)
    return problems


def all_evaluations(ctx: RecordContext, setup: Setup) -> list[Evaluation]:
    """Every comparison the checks make for one record, violated or not, and every skip."""
    return [
        evaluate_fit(ctx, setup),
        *evaluate_decode(ctx, setup),
        *evaluate_prefill(ctx, setup),
        *evaluate_fit_claims(ctx, setup),
    ]
