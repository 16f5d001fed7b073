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
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.hardware import HardwareCatalog, HardwareState
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import Measured, bases, basis_report, measured, named_basis, runs
from kvrecords.kv.arithmetic import KvReport, kv_report, parse_element_type
from kvrecords.kv.geometry import Attention, MultiHeadLatent, ParameterCount
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.units import (
    exact,
    format_exact,
    format_scientific,
    gib,
    percent,
    tokens_per_s,
)
from kvrecords.kv.weights import ASSUMED_BITS, ASSUMED_FORMAT, WeightFormat, weight_format
from kvrecords.problems import Problem, Rule, Severity, did_you_mean

FIT = Rule(
    "KV701",
    "fit",
    "Weights plus KV fit the accelerators: total params x bits per weight / 8 + sequences x "
    "(KV at context + fixed state) <= count x usable memory, unless techniques lists kv_offload.",
    "Arithmetic that agrees with itself can still be impossible: a 70B model in bf16 does not "
    "fit one 80 GB card. Memory is hardware/<id>.yaml's usable_gib (the driver's total; the "
    "nominal size, flagged, on unified-memory parts); sequences is methodology.concurrency, "
    "else 1; the KV is every layer as the model is, at the record's KV dtype. Bits per weight "
    "come from methodology.weights_precision (bf16 16, fp8 8, AWQ/GPTQ int4 4, nvfp4 4.5, "
    "mxfp4 4.25, Q4_K_M 4.5, Q8_0 8.5, ...: the fewest the name allows); when it is null or "
    "not recognised, 4 bits are assumed. A check that rests on an assumption (weights "
    "precision, a parameter count read off the model's name, an unstated KV dtype, nominal "
    "memory, a hardware figure rated below high) is a warning, else an error.",
    "model: llama-3.1-8b\nmethodology:\n  hardware: {accelerator: rtx-4090, count: 1}\n"
    "  weights_precision: bf16\n# 8B x 16 bits / 8 = 14.90 GiB + 0.50 GiB KV (4,096 tokens) "
    "is 64% of 23.99 GiB",
    "model: llama-3.1-70b\nmethodology:\n  hardware: {accelerator: h100-sxm, count: 1}\n"
    "  weights_precision: bf16\n# KV701 weights + KV do not fit: weights 130.39 GiB (70B "
    "total params x 16 bits / 8) + 1.25 GiB KV = 131.64 GiB is 165% of 1 x 79.65 GiB "
    "(hardware/h100-sxm.yaml usable_gib 79.65 GiB); if the cache is offloaded, add "
    "kv_offload to techniques",
)

DECODE_ROOFLINE = Rule(
    "KV702",
    "decode-roofline",
    "Decode tokens/s (measured_tps_at_ctx, results.decode_tokens_per_s) are within the "
    "memory-bandwidth roofline: per sequence <= s x count x bandwidth / (active params x "
    "bits / 8 + B x KV per sequence), aggregate <= B times that.",
    "Each decode step reads the active weights once for the whole batch of B sequences and "
    "each sequence's KV at context, so no engine decodes faster than the memory can feed it "
    "(s = 1 + draft tokens under speculative decoding; with an unstated draft length the "
    "check is not run). Bandwidth is the highest figure in hardware/<id>.yaml (decimal "
    "GB/s). results.decode_rate_scope says whether a rate is per sequence or aggregate; "
    "when it is omitted the lenient reading is taken (aggregate when concurrency is above "
    "1), and an unstated concurrency is read as one sequence, which only warns. Ranges are "
    "checked at their low end.",
    "model: llama-3.1-8b   (8B, bf16, 4,096 tokens)\nmethodology: {hardware: {accelerator: "
    "rtx-4090, count: 1}, weights_precision: bf16, concurrency: 1}\nmeasured_tps_at_ctx: 55\n"
    "# 55.0 tok/s is 90% of the 61.0 tok/s roofline",
    "measured_tps_at_ctx: 150   (same record)\n# KV702 decode measured_tps_at_ctx is above the "
    "memory-bandwidth roofline: 150.0 tok/s read as one sequence is 246% of the 61.0 tok/s "
    "roofline = 1 x 1,008 GB/s / (weights 14.90 GiB [8B active params x 16 bits / 8] + "
    "0.50 GiB KV) (hardware/rtx-4090.yaml memory_bandwidth_gb_s 1,008 GB/s)",
)

PREFILL_CEILING = Rule(
    "KV703",
    "prefill-ceiling",
    "The prefill rate (context / cold TTFT, else / measured_ttft_ms_at_ctx when no prefix "
    "reuse is involved; and results.prefill_tokens_per_s) is within count x peak FLOP/s / "
    "FLOPs per token.",
    "A prompt cannot be processed faster than the chip's dense peak allows. FLOPs per token "
    "= 2 x active params + attention, where attention = 2 x layers x heads x (head_dim + "
    "v_head_dim) x the average context a prompt token attends to (context / 2 for full "
    "attention, W - W^2 / (2 x context) for a window W shorter than the context), i.e. "
    "2 x 2 x layers x heads x head_dim x context / 2 when K and V have the same width. Heads "
    "are the model file's kv heads (a lower bound: query heads are not recorded), MLA counts "
    "one latent head, linear-attention and Mamba layers add nothing. The peak is the most "
    "generous that applies to the weights' precision (FP16-accumulate on GeForce, INT8 for "
    "GGUF, FP4 for nvfp4/mxfp4, every type when the precision is not stated), and a peak "
    "rated below high makes a violation a warning.",
    "context_tokens: 150000\ncold_ttft_ms: 53200   (27B on one rtx-5090)\n# 2,820 tok/s is "
    "9.9% of the 28,448 tok/s ceiling",
    "model: llama-3.1-8b   (bf16 on one a100-80gb-sxm)\ncontext_tokens: 131072\n"
    "cold_ttft_ms: 1000\n# KV703 prefill context / TTFT is faster than the peak FLOP/s "
    "allows: 131,072 tokens / 1 s = 131,072 tok/s is 1,033% of the 12,688 tok/s ceiling = 1 x "
    "312 TFLOP/s bf16 (peak_dense_tflops.bf16 312; the most generous for bf16 weights) / "
    "(2 x 8e9 + 2 x 32 layers x 8 heads x (128 + 128) x 131,072/2 = 2.459e+10 FLOP/token)",
)

FIT_CLAIM = Rule(
    "KV704",
    "fit-claim",
    "Each kv_bytes_basis.fit_claims entry comes out the way it claims: weights (total params "
    "x bits of its weights_precision / 8) + sequences x the basis's KV at context, against "
    "count x usable memory of its accelerator.",
    "Prose such as 'fits one 32 GB RTX 5090 beside a quantized 27B' is a claim about "
    "hardware that readers act on. A claim whose weights_precision_stated is false rests on "
    "an assumed precision and only warns; the basis is 'main' or an index into "
    "kv_bytes_basis.alternatives.",
    "fit_claims:\n  - {basis: 0, fits: false, accelerator: rtx-5090, count: 1,\n     "
    "weights_precision: int4, weights_precision_stated: false,\n     stated_as: ...36.6 "
    "GiB, which would not.}",
    "fit_claims:\n  - {basis: 0, fits: true, accelerator: rtx-5090, count: 1,\n     "
    "weights_precision: int4, weights_precision_stated: false, ...}\n# KV704 fit claim "
    "does not hold, it does not fit: weights 12.57 GiB (27B total params x 4 bits / 8) + "
    "36.62 GiB KV (alternatives[0]) = 49.19 GiB is 155% of 1 x 31.84 GiB "
    "(hardware/rtx-5090.yaml usable_gib 31.84 GiB) (assumes: parameter count read off the "
    "name ('27B (from the model name)'); weights int4 assumed (the source does not state "
    "them)); a warning, since it rests on those assumptions [warning]",
)

HARDWARE_LINK = Rule(
    "KV705",
    "hardware-link",
    "Every accelerator a record names (methodology.hardware, observations, fit_claims) is a "
    "file hardware/<id>.yaml that passes its own schema.",
    "The hardware checks divide by the file's memory, bandwidth and peaks; a misspelt or "
    "missing accelerator would silently skip them.",
    "hardware: {accelerator: rtx-5090, count: 1}",
    "hardware: {accelerator: rtx-5009, count: 1}\n# KV705 accelerator 'rtx-5009': "
    "hardware/rtx-5009.yaml does not exist; did you mean rtx-5090?",
)

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

    rule: Rule
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
    def severity(self) -> Severity:
        return "warning" if self.assumptions else "error"

    def margin(self) -> str:
        """``12.57 GiB is 39% of 31.84 GiB``: the value as a share of its limit."""
        assert self.value is not None and self.limit is not None
        return f"{self.subject} is {percent(self.value, self.limit)} of {self.working}"

    def summary(self) -> str:
        if not self.checked:
            return f"{self.rule.code} {self.check}: not checked: {self.skipped}"
        verdict = "VIOLATED" if self.violated else "ok"
        text = f"{self.rule.code} {self.check}: {self.margin()} [{verdict}]"
        return text + self.qualifiers()

    def qualifiers(self) -> str:
        """The simplifications and assumptions behind the comparison."""
        text = ""
        if self.notes:
            text += f"; {'; '.join(self.notes)}"
        if self.assumptions:
            text += f" (assumes: {'; '.join(self.assumptions)})"
        return text


def _skip(base: Evaluation, reason: str) -> Evaluation:
    return Evaluation(base.rule, base.check, base.path, skipped=reason)


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


class Assumed(NamedTuple):
    """What a record's hardware checks take on assumption, each as messages phrase it, or None
    where the record or its model states the figure.

    Gathered here once: the checks list the ones they rest on (which makes a violation a
    warning), and ``explain`` marks the same inputs as assumed.
    """

    parameters: str | None  # a parameter count read off the model's name
    weights: str | None  # a weights precision not stated or not recognised
    kv_dtype: str | None  # a KV element type the source does not state
    concurrency: str | None  # no concurrency stated, one sequence assumed


def assumed_inputs(record: RecordContext, weights: Weights) -> Assumed:
    basis = record.data["kv_bytes_basis"]
    kv_dtype = None
    if not basis["dtype_stated"]:
        kv_dtype = f"KV dtype {basis['dtype']} assumed (kv_bytes_basis.dtype_stated: false)"
    concurrency = None
    if record.data["methodology"].get("concurrency") is None:
        concurrency = "concurrency not stated, one sequence assumed"
    return Assumed(
        parameters=_parameters_from_name(record.model.parameters),
        weights=weights.assumption,
        kv_dtype=kv_dtype,
        concurrency=concurrency,
    )


def _parameters_from_name(parameters: ParameterCount | None) -> str | None:
    if parameters is None or not parameters.from_name:
        return None
    return f"parameter count read off the name ({parameters.stated_as!r})"


def _rated_below_high(rating: str, what: str, hardware: Hardware) -> list[str]:
    return [] if rating == "high" else [f"{what} rated {rating} in {hardware.display}"]


def _memory_assumptions(hardware: Hardware) -> list[str]:
    found = []
    if hardware.memory_is_nominal:
        shared = ", shared with the OS" if hardware.unified else ""
        found.append(f"{hardware.display} memory is nominal{shared}")
    return found + _rated_below_high(hardware.memory_confidence, "memory", hardware)


def _listed(*assumptions: str | None) -> list[str]:
    return [assumption for assumption in assumptions if assumption is not None]


class KvPerSequence(NamedTuple):
    """Cache bytes one sequence holds at the record's context (KV plus fixed state)."""

    bytes: Fraction
    working: str
    notes: tuple[str, ...]


def kv_per_sequence(record: RecordContext) -> KvPerSequence:
    """The physical cache (every layer as the model is, windows capped) at the record's dtype."""
    basis = record.data["kv_bytes_basis"]
    context = basis.get("context_tokens")
    try:
        state_dtype = basis.get("state_dtype")
        report = kv_report(
            record.model,
            parse_element_type(basis["dtype"]),
            context or 0,
            "cache",
            parse_element_type(state_dtype) if state_dtype else None,
        )
    except ValueError as error:
        return KvPerSequence(Fraction(0), "0 B", (f"KV not counted: {error}",))
    notes: list[str] = []
    kv = report.kv_bytes_at_context
    working = "" if kv is None else f"{gib(kv)} KV"
    if context is None:
        kv, working = Fraction(0), "no KV"
        notes.append("KV not counted: context_tokens not stated")
    elif kv is None:
        kv, working = Fraction(0), "no KV"
        notes.append(f"KV not counted: {record.model_display} does not give it")
    state = report.fixed_state_bytes
    if state is None:
        notes.append("fixed state not counted (unknown dimensions)")
    elif state:
        working += f" + {gib(state)} state"
    return KvPerSequence(kv + (state or 0), working, tuple(notes))


def _measured(value: Any, *, lenient_high: bool) -> Fraction | None:
    """A measured figure: a number, ``{about: x}``, or a range (the lenient end)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return exact(value)
    if isinstance(value, dict):
        if "about" in value:
            return _measured(value["about"], lenient_high=lenient_high)
        if "min" in value and "max" in value:
            return _measured(value["max" if lenient_high else "min"], lenient_high=lenient_high)
    return None


def _find(data: Any, *path: str | int) -> Any:
    """The value at ``path``, or None when any step of it is missing."""
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
    concurrency: int | str | None  # a number, "unbounded", or None when not stated
    named_hardware: HardwareIndex  # every hardware file the record names (fit claims too)
    assumed: Assumed


def setup_of(record: RecordContext, hardware_files: HardwareIndex) -> Setup:
    """Everything the checks need, worked out once per record."""
    methodology = record.data["methodology"]
    stated = methodology["hardware"]
    found, missing = _resolve(
        stated.get("accelerator"), hardware_files, "methodology.hardware.accelerator"
    )
    weights = record_weights(methodology.get("weights_precision"))
    return Setup(
        hardware=found,
        hardware_missing=missing,
        device_count=stated.get("count"),
        parameters=record.model.parameters,
        weights=weights,
        kv=kv_per_sequence(record),
        concurrency=methodology.get("concurrency"),
        named_hardware=hardware_files,
        assumed=assumed_inputs(record, weights),
    )


def _resolve(
    accelerator: str | None, hardware_files: HardwareIndex, where: str
) -> tuple[Hardware | None, str | None]:
    if accelerator is None:
        return None, f"{where} is null"
    state = hardware_files.get(accelerator)
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


def weight_bytes(billions: Fraction, weights: WeightFormat) -> Fraction:
    return billions * BILLION * weights.bits / 8


def _weights_working(billions: Fraction, weights: WeightFormat, label: str) -> str:
    return f"{format_exact(billions)}B {label} params x {float(weights.bits):g} bits / 8"


# ---- KV701 fit ------------------------------------------------------------------------------


def evaluate_fit(record: RecordContext, setup: Setup) -> Evaluation:
    path: JsonPath = ("methodology", "hardware", "accelerator")
    base = Evaluation(FIT, "fit", path)
    if "kv_offload" in record.data.get("techniques", []):
        return _skip(base, "the record declares kv_offload (the cache may live off the device)")
    total = _billions(setup.parameters, "total", record.model_display)
    count = _count(setup)
    missing = [m for m in (setup.hardware_missing, total, count) if isinstance(m, str)]
    if missing or setup.hardware is None:
        return _skip(base, "; ".join(missing))
    assert isinstance(total, Fraction) and isinstance(count, int)
    hardware = setup.hardware
    if hardware.usable_memory_bytes is None:
        return _skip(base, f"{hardware.display} gives no memory size")
    # Unbounded concurrency fixes no number of sequences: one is the reading most favourable
    # to the record.
    sequences = setup.concurrency if isinstance(setup.concurrency, int) else 1
    weights = weight_bytes(total, setup.weights.format)
    need = weights + sequences * setup.kv.bytes
    assumed = setup.assumed
    assumptions = _listed(
        assumed.parameters, assumed.weights, assumed.kv_dtype if setup.kv.bytes else None
    )
    per_sequence = f"{sequences} x ({setup.kv.working})" if sequences > 1 else setup.kv.working
    return base._replace(
        value=need,
        limit=count * hardware.usable_memory_bytes,
        subject=(
            f"weights {gib(weights)} ({_weights_working(total, setup.weights.format, 'total')})"
            f" + {per_sequence} = {gib(need)}"
        ),
        working=(
            f"{count} x {gib(hardware.usable_memory_bytes)} "
            f"({hardware.display} {hardware.memory_figure})"
        ),
        assumptions=(*assumptions, *_memory_assumptions(hardware)),
        notes=setup.kv.notes,
    )


# ---- KV702 decode roofline ------------------------------------------------------------------

DECODE_FIGURES: tuple[JsonPath, ...] = (
    ("measured_tps_at_ctx",),
    ("results", "decode_tokens_per_s"),
)


def speculation(record: RecordContext) -> tuple[int | None, str | None]:
    """Tokens a decode step may emit: (1 + draft tokens, its source), (None, why) if unknown."""
    engine = record.data["methodology"]["engine"]
    text = " ".join([*engine.get("flags", []), *engine.get("components", [])])
    if not _SPECULATIVE.search(text):
        return 1, None
    drafted = _DRAFT_TOKENS.search(text)
    if drafted is None:
        return None, "speculative decoding with an unstated draft length"
    draft = int(drafted.group(1))
    return 1 + draft, f"speculative decoding, up to {1 + draft} tokens per step"


# A run that sets its own hardware, model, engine, weights, concurrency or drafting is measured
# in another setup than the record's; the record-level checks do not apply to its figures.
_OWN_SETUP = (
    "hardware",
    "model",
    "engine",
    "weights_precision",
    "concurrency",
    "speculative_decoding",
)


def record_setup_metrics(data: dict[str, Any], names: tuple[str, ...]) -> list[Measured]:
    """The format-2 metrics named ``names`` of every run measured in the record's own setup and
    at the basis's context (the KV the checks count)."""
    context = data["kv_bytes_basis"].get("context_tokens")
    return [
        found
        for run in runs(data)
        if not any(key in run.stated for key in _OWN_SETUP) and run.context(data) == context
        for index, metric in enumerate(run.stated.get("metrics", []))
        if metric["name"] in names and (found := Measured(run, index, metric))
    ]


def decode_figures(data: dict[str, Any]) -> list[tuple[JsonPath, str | None]]:
    """Each decode rate a record states, with its scope (per_sequence, aggregate, or None)."""
    if "runs" not in data:
        scope = _find(data, "results", "decode_rate_scope")
        return [(path, scope) for path in DECODE_FIGURES]
    found: list[tuple[JsonPath, str | None]] = []
    for item in record_setup_metrics(data, ("decode_tokens_per_s", "output_tokens_per_s")):
        aggregate = item.stated["name"] == "output_tokens_per_s"
        found.append((item.value_path, "aggregate" if aggregate else item.stated.get("scope")))
    if not found:
        found.append((("measured_tps_at_ctx",), None))
    return found


def evaluate_decode(record: RecordContext, setup: Setup) -> list[Evaluation]:
    evaluations = []
    for path, scope in decode_figures(record.data):
        value = _measured(_find(record.data, *path), lenient_high=False)
        base = Evaluation(DECODE_ROOFLINE, f"decode {dotted(path)}", path)
        if value is None:
            evaluations.append(_skip(base, f"{dotted(path)} is not stated"))
            continue
        evaluations.append(_decode_one(record, setup, base, value, scope))
    return evaluations


class _DecodeReading(NamedTuple):
    """How a stated decode rate is read: per sequence or aggregate over a batch."""

    aggregate: bool
    batch: int
    text: str
    assumption: str | None


def _decode_reading(record: RecordContext, setup: Setup, scope: str | None) -> _DecodeReading | str:
    concurrency = setup.concurrency
    if concurrency == "unbounded":
        if scope == "per_sequence":
            return _DecodeReading(False, 1, "per sequence (as stated; concurrency unbounded)", None)
        return "concurrency unbounded: an aggregate rate over any number of sequences has no bound"
    batch = concurrency if isinstance(concurrency, int) else 1
    if scope == "per_sequence":
        return _DecodeReading(False, batch, "per sequence (as the record states)", None)
    if scope == "aggregate":
        text = f"aggregate over {batch} sequences (as the record states)"
        return _DecodeReading(True, batch, text, setup.assumed.concurrency)
    if isinstance(concurrency, int) and concurrency > 1:
        text = f"aggregate over {batch} sequences (the record does not say; the lenient reading)"
        return _DecodeReading(True, batch, text, None)
    if concurrency is None:
        text = "one sequence (concurrency not stated)"
        return _DecodeReading(False, batch, text, setup.assumed.concurrency)
    return _DecodeReading(False, batch, "one sequence", None)


def _decode_one(
    record: RecordContext, setup: Setup, base: Evaluation, value: Fraction, scope: str | None
) -> Evaluation:
    active = _billions(setup.parameters, "active", record.model_display)
    count = _count(setup)
    steps, speculative = speculation(record)
    missing = [m for m in (setup.hardware_missing, active, count) if isinstance(m, str)]
    if steps is None:
        missing.append(speculative or "")
    if missing or setup.hardware is None:
        return _skip(base, "; ".join(missing))
    assert isinstance(active, Fraction) and isinstance(count, int) and steps is not None
    hardware = setup.hardware
    if hardware.bandwidth_bytes_per_s is None:
        return _skip(base, f"{hardware.display} gives no memory bandwidth")
    reading = _decode_reading(record, setup, scope)
    if isinstance(reading, str):
        return _skip(base, reading)
    batch = reading.batch
    assumed = setup.assumed
    assumptions = _listed(
        assumed.parameters,
        reading.assumption,
        assumed.weights,
        assumed.kv_dtype if setup.kv.bytes else None,
    )
    weights = weight_bytes(active, setup.weights.format)
    bandwidth = count * hardware.bandwidth_bytes_per_s
    per_sequence = steps * bandwidth / (weights + batch * setup.kv.bytes)
    limit = per_sequence * batch if reading.aggregate else per_sequence
    kv_term = f"{batch} x {setup.kv.working}" if batch > 1 else setup.kv.working
    factor = f"{steps} x " if steps > 1 else ""
    times_batch = f"{batch} sequences x " if reading.aggregate else ""
    bandwidth_text = f"{count} x {format_exact(hardware.bandwidth_bytes_per_s / 10**9)} GB/s"
    working = (
        f"the {tokens_per_s(limit)} roofline = {times_batch}{factor}{bandwidth_text} / "
        f"(weights {gib(weights)} [{_weights_working(active, setup.weights.format, 'active')}]"
        f" + {kv_term}) ({hardware.display} {hardware.bandwidth_figure})"
    )
    return base._replace(
        value=value,
        limit=limit,
        subject=f"{tokens_per_s(value)} read as {reading.text}",
        working=working,
        assumptions=(
            *assumptions,
            *_rated_below_high(hardware.bandwidth_confidence, "bandwidth", hardware),
        ),
        notes=(*setup.kv.notes, *_listed(speculative)),
    )


# ---- KV703 prefill ceiling ------------------------------------------------------------------


def attention_flops_per_token(record: RecordContext, context: int) -> tuple[Fraction, str]:
    """FLOPs one prompt token spends attending, averaged over a prompt of ``context`` tokens."""
    total = Fraction(0)
    terms = []
    for group in record.model.leaf_groups():
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
        attended, attended_text = _attended(group.window, context)
        total += 2 * group.layers * heads * (widths[0] + widths[1]) * attended
        terms.append(
            f"2 x {group.layers} layers x {heads} heads x ({widths[0]} + {widths[1]}) x {attended_text}"
        )
    return total, " + ".join(terms) or "0"


def _attended(window: int | None, context: int) -> tuple[Fraction, str]:
    """The average context a prompt token attends to, with its working."""
    if window is None or context <= window:
        return Fraction(context, 2), f"{context:,}/2"
    attended = Fraction(window * (2 * context - window), 2 * context)
    return attended, f"{window:,} x (2 x {context:,} - {window:,}) / (2 x {context:,})"


def _cold_ttft_path(data: dict[str, Any]) -> JsonPath:
    """Where the TTFT of a full prefill at the basis's context stands: a format-2 run that
    reuses nothing (no hit rate), at that context; else format 1's results.cold_ttft_ms."""
    context = data["kv_bytes_basis"].get("context_tokens")
    for run in runs(data):
        at_context = run.context(data) == context
        cold = measured(run, "ttft_ms")
        reuses = run.stated["role"] == "treatment" and set(run.techniques) & set(PREFIX_REUSE)
        if at_context and cold is not None and measured(run, "hit_rate") is None and not reuses:
            return cold.value_path
    return ("results", "cold_ttft_ms")


def _ttft(record: RecordContext) -> tuple[JsonPath, Fraction] | str:
    cold_path = _cold_ttft_path(record.data)
    cold = _measured(_find(record.data, *cold_path), lenient_high=True)
    if cold is not None and cold <= 0:  # the schema or KV802 reports it
        return "the cold TTFT is not positive"
    if cold is not None:
        return cold_path, cold
    reuse = [t for t in record.data.get("techniques", []) if t in PREFIX_REUSE]
    measured = _measured(record.data.get("measured_ttft_ms_at_ctx"), lenient_high=True)
    if measured is None:
        return "no cold TTFT and no measured_ttft_ms_at_ctx"
    if measured <= 0:
        return "measured_ttft_ms_at_ctx is not positive"
    if reuse:
        return f"no cold TTFT, and measured_ttft_ms_at_ctx may be served from reused KV ({', '.join(reuse)})"
    return ("measured_ttft_ms_at_ctx",), measured


def evaluate_prefill(record: RecordContext, setup: Setup) -> list[Evaluation]:
    """The prefill rate from context / TTFT, and the measured prefill rate when stated."""
    context = record.data["kv_bytes_basis"].get("context_tokens")
    evaluations = []
    base = Evaluation(
        PREFILL_CEILING, "prefill context / TTFT", ("kv_bytes_basis", "context_tokens")
    )
    ttft = _ttft(record)
    if context is None:
        evaluations.append(_skip(base, "kv_bytes_basis.context_tokens is null"))
    elif isinstance(ttft, str):
        evaluations.append(_skip(base, ttft))
    else:
        path, ttft_ms = ttft
        value = Fraction(context * 1000) / ttft_ms
        subject = f"{context:,} tokens / {format_exact(ttft_ms / 1000)} s = {tokens_per_s(value)}"
        evaluations.append(_prefill_one(record, setup, base._replace(path=path), value, subject))
    for measured_path in prefill_figures(record.data):
        measured = _measured(_find(record.data, *measured_path), lenient_high=False)
        shown = dotted(measured_path)
        base = Evaluation(PREFILL_CEILING, f"prefill {shown}", measured_path)
        if measured is None:
            evaluations.append(_skip(base, f"{shown} is not stated"))
        else:
            subject = f"{tokens_per_s(measured)} measured"
            evaluations.append(_prefill_one(record, setup, base, measured, subject))
    return evaluations


def prefill_figures(data: dict[str, Any]) -> list[JsonPath]:
    """Each measured prefill rate a record states in its own setup."""
    if "runs" not in data:
        return [("results", "prefill_tokens_per_s")]
    return [item.value_path for item in record_setup_metrics(data, ("prefill_tokens_per_s",))]


def _prefill_one(
    record: RecordContext, setup: Setup, base: Evaluation, value: Fraction, subject: str
) -> Evaluation:
    context = record.data["kv_bytes_basis"].get("context_tokens")
    active = _billions(setup.parameters, "active", record.model_display)
    count = _count(setup)
    missing = [m for m in (setup.hardware_missing, active, count) if isinstance(m, str)]
    if missing or setup.hardware is None:
        return _skip(base, "; ".join(missing))
    assert isinstance(active, Fraction) and isinstance(count, int)
    hardware = setup.hardware
    weights = setup.weights.format
    peak = hardware.peak(weights.compute_types)
    if peak is None:
        types = ", ".join(weights.compute_types)
        return _skip(base, f"{hardware.display} publishes no dense peak for {types}")
    compute_type, figure = peak
    notes = []
    if context is None:
        attention, attention_text = Fraction(0), "0"
        notes.append("attention not counted: context_tokens not stated")
    else:
        attention, attention_text = attention_flops_per_token(record, context)
    flops = 2 * active * BILLION + attention
    limit = count * figure.flops_per_s / flops
    which = (
        "the most generous on the card, precision not stated"
        if weights is ASSUMED_FORMAT
        else f"the most generous for {weights.name} weights"
    )
    tflops = format_exact(figure.flops_per_s / 10**12)
    return base._replace(
        value=value,
        limit=limit,
        subject=subject,
        working=(
            f"the {tokens_per_s(limit)} ceiling = {count} x {tflops} TFLOP/s "
            f"{compute_type} ({figure.figure}; {which}) / "
            f"(2 x {format_exact(active)}e9 + {attention_text} = {format_scientific(flops)} FLOP/token)"
        ),
        assumptions=(
            *_listed(setup.assumed.parameters),
            *_rated_below_high(figure.confidence, f"{compute_type} peak", hardware),
        ),
        notes=tuple(notes),
    )


# ---- KV704 fit claims -----------------------------------------------------------------------


def evaluate_fit_claims(record: RecordContext, setup: Setup) -> list[Evaluation]:
    """Each fit claim evaluated like KV701 (or one skip when the record states none)."""
    claims = record.data["kv_bytes_basis"].get("fit_claims", [])
    if not claims:
        return [Evaluation(FIT_CLAIM, "fit claims", (), skipped="the record states no fit_claims")]
    return [_fit_claim(record, setup, index, claim) for index, claim in enumerate(claims)]


def _fit_claim(
    record: RecordContext, setup: Setup, index: int, claim: dict[str, Any]
) -> Evaluation:
    path: JsonPath = ("kv_bytes_basis", "fit_claims", index)
    fits = bool(claim["fits"])
    label = f"fit claim [{index}] ({'fits' if fits else 'does not fit'})"
    base = Evaluation(FIT_CLAIM, label, path, expect_within=fits)
    inputs = _claim_inputs(record, setup, index, claim)
    if isinstance(inputs, str):
        return _skip(base, inputs)
    hardware, total, report, basis_label = inputs
    if hardware.usable_memory_bytes is None:
        return _skip(base, f"{hardware.display} gives no memory size")
    assert report.kv_bytes_at_context is not None
    weights = record_weights(
        claim["weights_precision"], stated_flag=claim["weights_precision_stated"]
    )
    sequences = claim.get("sequences", 1)
    state = report.fixed_state_bytes
    weight_total = weight_bytes(total, weights.format)
    need = weight_total + sequences * (report.kv_bytes_at_context + (state or 0))
    assumptions = _listed(setup.assumed.parameters, weights.assumption)
    notes = []
    if state is None:
        notes.append("fixed state not counted (unknown dimensions)")
        if not fits and any(cost.state_formula for cost in report.groups):
            assumptions.append("fixed state counted as 0")
    kv_text = f"{gib(report.kv_bytes_at_context)} KV ({basis_label})"
    if state:
        kv_text += f" + {gib(state)} state"
    if sequences > 1:
        kv_text = f"{sequences} x ({kv_text})"
    return base._replace(
        value=need,
        limit=claim["count"] * hardware.usable_memory_bytes,
        subject=(
            f"weights {gib(weight_total)} ({_weights_working(total, weights.format, 'total')})"
            f" + {kv_text} = {gib(need)}"
        ),
        working=(
            f"{claim['count']} x {gib(hardware.usable_memory_bytes)} "
            f"({hardware.display} {hardware.memory_figure})"
        ),
        assumptions=(*_memory_assumptions(hardware), *assumptions),
        notes=tuple(notes),
    )


def _claim_inputs(
    record: RecordContext, setup: Setup, index: int, claim: dict[str, Any]
) -> tuple[Hardware, Fraction, KvReport, str] | str:
    """A fit claim's accelerator, total parameters, basis arithmetic and basis label, or why
    the claim cannot be evaluated."""
    which = claim["basis"]
    named = named_basis(record.data, which)
    if named is None:
        alternatives = len(bases(record.data)) - 1
        return f"basis {which} names no alternative (the record has {alternatives})"
    found, missing = _resolve(
        claim["accelerator"], setup.named_hardware, f"fit_claims[{index}].accelerator"
    )
    total = _billions(record.model.parameters, "total", record.model_display)
    reasons = [m for m in (missing, total) if isinstance(m, str)]
    report: KvReport | None = None
    try:
        report = basis_report(record.model, named.stated)
    except ValueError as error:
        reasons.append(str(error))
    if report is not None and (
        named.stated.get("context_tokens") is None or report.kv_bytes_at_context is None
    ):
        reasons.append("the basis has no KV at context")
    if reasons or found is None or report is None:
        return "; ".join(reasons)
    assert isinstance(total, Fraction)
    return found, total, report, named.label


# ---- KV705 hardware link --------------------------------------------------------------------


def accelerator_links(data: dict[str, Any]) -> list[tuple[JsonPath, str]]:
    """Every accelerator id a record names, with where it names it."""
    links: list[tuple[JsonPath, str]] = []
    main = _find(data, "methodology", "hardware", "accelerator")
    if isinstance(main, str):
        links.append((("methodology", "hardware", "accelerator"), main))
    for index, observation in enumerate(_find(data, "results", "observations") or []):
        named = _find(observation, "hardware", "accelerator")
        if isinstance(named, str):
            links.append((("results", "observations", index, "hardware", "accelerator"), named))
    for index, run in enumerate(_find(data, "runs") or []):
        named = _find(run, "hardware", "accelerator")
        if isinstance(named, str):
            links.append((("runs", index, "hardware", "accelerator"), named))
    for index, claim in enumerate(_find(data, "kv_bytes_basis", "fit_claims") or []):
        links.append((("kv_bytes_basis", "fit_claims", index, "accelerator"), claim["accelerator"]))
    return links


def check_hardware_links(record: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV705: every accelerator names a sound file in hardware/."""
    for path, accelerator in accelerator_links(record.data):
        state = setup.named_hardware.get(accelerator)
        if state is None:
            hint = did_you_mean(accelerator, setup.named_hardware.catalog_ids)
            message = (
                f"accelerator {accelerator!r}: hardware/{accelerator}.yaml does not exist{hint}"
            )
            yield record.problem(HARDWARE_LINK, path, message)
        elif state.hardware is None:
            message = (
                f"accelerator {accelerator!r}: {state.display} has problems (reported there); "
                "hardware checks not run"
            )
            yield record.problem(HARDWARE_LINK, path, message)
            yield from state.problems


# ---- the checks -----------------------------------------------------------------------------


def _problems(record: RecordContext, evaluations: list[Evaluation]) -> Iterator[Problem]:
    for evaluation in evaluations:
        if evaluation.violated:
            line, column = record.document.locate(evaluation.path)
            yield evaluation.rule.problem(
                record.document.path, line, column, _message(evaluation), evaluation.severity
            )


def _message(evaluation: Evaluation) -> str:
    rule = evaluation.rule
    if rule is FIT:
        text = "weights + KV do not fit: "
    elif rule is DECODE_ROOFLINE:
        text = f"{evaluation.check} is above the memory-bandwidth roofline: "
    elif rule is PREFILL_CEILING:
        text = f"{evaluation.check} is faster than the peak FLOP/s allows: "
    else:
        holds = "it fits" if not evaluation.expect_within else "it does not fit"
        text = f"fit claim does not hold, {holds}: "
    text += evaluation.margin()
    if rule is FIT:
        text += "; if the cache is offloaded, add kv_offload to techniques"
    text += evaluation.qualifiers()
    if evaluation.assumptions:
        text += "; a warning, since it rests on those assumptions"
    return text


def check_fit(record: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV701: weights plus KV at context fit the accelerators' memory."""
    yield from _problems(record, [evaluate_fit(record, setup)])


def check_decode(record: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV702: decode rates are below the memory-bandwidth roofline."""
    yield from _problems(record, evaluate_decode(record, setup))


def check_prefill(record: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV703: prefill rates are below the compute ceiling."""
    yield from _problems(record, evaluate_prefill(record, setup))


def check_fit_claims(record: RecordContext, setup: Setup) -> Iterator[Problem]:
    """KV704: each fit claim names a basis the record has and comes out the way it says."""
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
    yield from _problems(record, evaluate_fit_claims(record, setup))


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


def plausibility_problems(record: RecordContext, catalog: HardwareCatalog) -> list[Problem]:
    """Every plausibility problem of one record whose arithmetic checks have run."""
    setup = setup_of(record, hardware_index(record.data, catalog))
    problems: list[Problem] = []
    for check in PLAUSIBILITY_CHECKS:
        problems += check(record, setup)
    return problems


def all_evaluations(record: RecordContext, setup: Setup) -> list[Evaluation]:
    """Every comparison the checks make for one record, violated or not, and every skip."""
    return [
        evaluate_fit(record, setup),
        *evaluate_decode(record, setup),
        *evaluate_prefill(record, setup),
        *evaluate_fit_claims(record, setup),
    ]
