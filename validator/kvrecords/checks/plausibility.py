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
- KV705 hardware link: every accelerator and family a record names has a file in hardware/;
- KV706 settings: weights precisions come from the closed vocabulary, a draft model names a
  model file.

Two readings. Every check is computed twice. On the reading most favourable to the record,
each input the record leaves open takes its most generous plausible value: the fewest bits per
weight the engine runs, the smallest KV dtype it offers, the lowest parameter count that rounds
to a name, the largest member of a hardware family, the most generous peak, the concurrency
that helps (one sequence for a fit or a per-sequence rate, every stated sequence for an
aggregate rate, any number when it is unbounded). A figure beyond that bound is impossible on
any reading: an error, with or without ``--strict``. On the likely reading the open inputs take
their likely values (the model's own dtype, the stated KV dtype, all stated sequences at once,
the least generous family member); a figure beyond only that bound is a warning that names what
the likely reading assumes. A figure rated low in its hardware file cannot establish an
impossibility, so a check that rests on one only warns. A check that lacks an input is not run;
``explain`` says which and why, and prints both bounds of every check that ran.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.hardware import HardwareCatalog, HardwareState
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import Run, bases, basis_report, named_basis, runs
from kvrecords.kv.arithmetic import KvReport, kv_report, parse_element_type
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent, ParameterCount
from kvrecords.kv.hardware import Hardware, family_reading
from kvrecords.kv.units import exact, format_exact, format_scientific, gib, percent, tokens_per_s
from kvrecords.kv.weights import (
    BF16,
    EVERY_COMPUTE_TYPE,
    GGUF_BITS,
    NATIVE_DTYPES,
    PRECISIONS,
    WeightFormat,
    WeightReadings,
    engine_floor,
    normalise,
    readings,
    weight_format,
)
from kvrecords.problems import Problem, Rule, Severity, did_you_mean

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
    "Q4_K_M 4.5...: the fewest the name allows); unstated, the favourable reading takes the "
    "fewest the engine runs and the likely one the model's own dtype. The favourable reading "
    "counts one sequence, the likely one every concurrent sequence. Weights with "
    "weights_placement.on: offloaded are not counted; under kv_offload the favourable reading "
    "counts no KV and the likely one the running sequences' KV, which stays on the "
    "accelerator. Two readings of one record, worked: Qwen3.8-27B (27B read off the name, so "
    "26.5B at the least), weights not stated, vLLM on one RTX 5090 (31.84 GiB): favourable "
    "26.5B x 1.5625 bits (GGUF IQ1_S, the fewest vLLM runs) / 8 = 4.82 GiB + 9.16 GiB KV = "
    "13.98 GiB, 44%: possible; likely 27B x 16 bits (bf16) / 8 = 50.29 GiB + 9.16 GiB = "
    "59.45 GiB, 187%: a warning that names the bf16 assumption. With weights_precision: bf16 "
    "stated, both readings are 187%: an error.",
    "model: llama-3.1-8b\nruns:\n  - {id: one, hardware: {accelerator: rtx-4090, count: 1},\n"
    "     weights_precision: bf16, concurrency: 1, ...}\n# 8B x 16 bits / 8 = 14.90 GiB + "
    "0.50 GiB KV (4,096 tokens) is 64% of 23.99 GiB on both readings",
    "model: llama-3.1-405b\nruns:\n  - {id: offload, techniques: [kv_offload], hardware: "
    "{accelerator: h100-sxm, count: 1},\n     weights_precision: bf16, ...}\n# KV701 run "
    "'offload': weights + KV do not fit on any reading: weights 754.37 GiB (405B total params "
    "x 16 bits / 8) + no KV (offloaded) = 754.37 GiB is 947% of 1 x 79.65 GiB "
    "(hardware/h100-sxm.yaml usable_gib 79.65 GiB)",
)

DECODE_ROOFLINE = Rule(
    "KV702",
    "decode-roofline",
    "Decode rates (decode_tokens_per_s, output_tokens_per_s) "
    "are within the memory-bandwidth roofline, per sequence <= (k + 1) x count x bandwidth / "
    "(active weights + k x draft weights + B x KV), aggregate <= B times that, and within "
    "count x peak / (2 x active params), on the favourable reading (an error) and the likely "
    "one (a warning).",
    "Each decode step reads the active weights once for its batch of B sequences and each "
    "sequence's KV, so no engine decodes faster than the memory can feed it. Speculative "
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
    "decode_tokens_per_s, statistic: mean, value: 55}\n# 55.0 tok/s is 90% of the 61.0 tok/s "
    "roofline",
    "value: 150   (same run)\n# KV702 run 'one': decode_tokens_per_s is above the "
    "memory-bandwidth roofline on any reading: 150.0 tok/s read as one sequence is 246% of "
    "the 61.0 tok/s roofline = 1 x 1,008 GB/s / (weights 14.90 GiB [8B active params x 16 "
    "bits / 8] + 0.50 GiB KV) (hardware/rtx-4090.yaml memory_bandwidth_gb_s 1,008 GB/s)",
)

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

HARDWARE_LINK = Rule(
    "KV705",
    "hardware-link",
    "Every accelerator a record names (methodology.hardware, runs, fit_claims) is a file "
    "hardware/<id>.yaml that passes its own schema, and every family one that some hardware "
    "file declares.",
    "The hardware checks divide by the file's memory, bandwidth and peaks; a misspelt or "
    "missing accelerator would silently skip them.",
    "hardware: {accelerator: rtx-5090, count: 1}\nhardware: {accelerator: null, family: h100, "
    "count: 16}",
    "hardware: {accelerator: rtx-5009, count: 1}\n# KV705 accelerator 'rtx-5009': "
    "hardware/rtx-5009.yaml does not exist; did you mean rtx-5090?",
)

SETTINGS = Rule(
    "KV706",
    "settings",
    "weights_precision (of the methodology, a run or a fit claim) is a name or synonym from the "
    "weights vocabulary, and speculative_decoding.draft_model names a model file.",
    "The hardware checks read bits per weight off the precision; a value they do not know "
    "would have to be guessed, and every guess so far was wrong somewhere ('non-quantized' "
    "read as 4-bit, 'BF16 weights, FP8 KV' as 8-bit weights). The vocabulary: native "
    "(non-quantized, unquantized, full precision: the model's own dtype), quantized (width not "
    "stated), bf16, fp16, 16-bit, fp32, fp8, int8 (W8A8), w4a8, int4 (W4A16, AWQ, GPTQ, "
    "AutoRound, 4-bit), nf4, int3, int2, fp4, nvfp4, mxfp4, GGUF types (Q8_0 ... IQ1_S, "
    "Q4_K_M, UD-Q4_K_XL) and EXL2 bits (4.65bpw). The source's own words go in "
    "weights_stated_as.",
    "weights_precision: non-quantized\nweights_precision: AWQ int4\nweights_precision: Q4_K_M",
    "weights_precision: BF-16 weights\n# KV706 weights precision 'BF-16 weights' is not in the "
    "vocabulary; did you mean bf16?",
)

BILLION = 10**9
# Techniques under which a measured TTFT may be served from reused KV, not a full prefill.
PREFIX_REUSE = ("prefix_caching", "radix_reuse", "cache_aware_routing", "kv_offload")
# Draft methods that run a head on the target's hidden states: each drafted token reads at
# least one hidden x hidden projection of it.
_HEAD_DRAFTS = ("eagle", "eagle3", "mtp", "medusa")


# ---- evaluations ----------------------------------------------------------------------------


class Side(NamedTuple):
    """One reading of a check: the figure, its physical limit, and the working of each."""

    value: Fraction
    limit: Fraction
    subject: str  # the value with its working, e.g. "12.57 GiB weights + 9.16 GiB KV"
    working: str  # the limit with its working

    def within(self) -> bool:
        return self.value <= self.limit

    def margin(self) -> str:
        """``12.57 GiB is 39% of 31.84 GiB``: the value as a share of its limit."""
        return f"{self.subject} is {percent(self.value, self.limit)} of {self.working}"


class Evaluation(NamedTuple):
    """One comparison of a figure with its physical limit on both readings, or why it could
    not be made."""

    rule: Rule
    check: str  # what is compared, e.g. "run 'warm': decode decode_tokens_per_s"
    path: JsonPath  # where a violation is reported
    favourable: Side | None = None  # the reading most favourable to the record
    likely: Side | None = None  # None: the same as the favourable one
    expect_within: bool = True  # False: the record claims value > limit (does not fit)
    assumptions: tuple[str, ...] = ()  # what the likely reading assumes
    unfirm: tuple[str, ...] = ()  # figures rated low: the favourable bound only warns
    notes: tuple[str, ...] = ()  # simplifications, shown but not changing the verdict
    skipped: str | None = None  # why the check was not run

    @property
    def checked(self) -> bool:
        return self.skipped is None and self.favourable is not None

    def _holds(self, side: Side | None) -> bool:
        return side is None or side.within() == self.expect_within

    @property
    def impossible(self) -> bool:
        """Violated on the reading most favourable to the record."""
        return self.checked and not self._holds(self.favourable)

    @property
    def violated(self) -> bool:
        return self.impossible or (self.checked and not self._holds(self.likely))

    @property
    def severity(self) -> str:
        return "error" if self.impossible and not self.unfirm else "warning"

    @property
    def value(self) -> Fraction | None:
        return None if self.favourable is None else self.favourable.value

    @property
    def limit(self) -> Fraction | None:
        return None if self.favourable is None else self.favourable.limit

    def margin(self) -> str:
        assert self.favourable is not None
        return self.favourable.margin()

    def readings(self) -> str:
        """Both bounds, as explain prints them."""
        assert self.favourable is not None
        text = f"favourable: {self.favourable.margin()}"
        if self.likely is not None and self.likely != self.favourable:
            text += f"; likely: {self.likely.margin()}"
        return text

    def summary(self) -> str:
        if not self.checked:
            return f"{self.rule.code} {self.check}: not checked: {self.skipped}"
        if self.impossible:
            verdict = "VIOLATED on any reading"
        elif self.violated:
            verdict = "VIOLATED on the likely reading"
        else:
            verdict = "ok"
        return f"{self.rule.code} {self.check}: {self.readings()} [{verdict}]{self.qualifiers()}"

    def qualifiers(self) -> str:
        """The simplifications and assumptions behind the comparison."""
        text = ""
        if self.notes:
            text += f"; {'; '.join(self.notes)}"
        if self.unfirm:
            text += f"; rests on figures rated low: {'; '.join(self.unfirm)}"
        if self.assumptions:
            text += f" (likely reading assumes: {'; '.join(self.assumptions)})"
        return text


def _skip(rule: Rule, check: str, path: JsonPath, reason: str) -> Evaluation:
    return Evaluation(rule, check, path, skipped=reason)


# ---- inputs ---------------------------------------------------------------------------------


class HardwareIndex(NamedTuple):
    """The hardware files a record names, already read: the checks themselves do no I/O."""

    states: Mapping[str, HardwareState | None]  # None: no such file
    catalog_ids: tuple[str, ...] = ()  # every id in hardware/, for "did you mean" hints
    families: Mapping[str, tuple[Hardware, ...]] = {}  # family id -> its sound members
    family_ids: tuple[str, ...] = ()  # every family in hardware/, for hints

    def get(self, hardware_id: str) -> HardwareState | None:
        return self.states.get(hardware_id)


ModelLookup = Callable[[str], Model | None]


class Billions(NamedTuple):
    """A parameter count on both readings, and the bounds a name read as a count allows."""

    low: Fraction
    likely: Fraction
    high: Fraction
    assumption: str | None


@functools.lru_cache(maxsize=1024)  # pure, and asked again for every run of every record
def billions(parameters: ParameterCount | None, which: str, model_display: str) -> Billions | str:
    """The model's total or active parameter count, or why there is none."""
    if parameters is None:
        return f"{model_display} states no parameter counts"
    value = parameters.total_billions if which == "total" else parameters.active_billions
    if value is None:
        return (
            f"{model_display} does not state its {which} parameter count ({parameters.stated_as!r})"
        )
    if not parameters.from_name:
        return Billions(value, value, value, None)
    decimals = 0
    while (value * 10**decimals).denominator != 1:
        decimals += 1
    half = Fraction(1, 2 * 10**decimals)
    assumption = (
        f"{format_exact(value)}B read off the name ({model_display}: from_name), not "
        f"{format_exact(value - half)}B"
    )
    return Billions(value - half, value, value + half, assumption)


class HardwareReading(NamedTuple):
    """The accelerator a run names, on both readings (one part: both the same)."""

    favourable: Hardware
    likely: Hardware
    assumption: str | None


class KvReading(NamedTuple):
    """Cache bytes one sequence holds on the accelerator, on both readings."""

    favourable: Fraction
    likely: Fraction
    favourable_text: str
    likely_text: str
    assumption: str | None
    notes: tuple[str, ...]


class Drafting(NamedTuple):
    """Speculative decoding as a run states it (method None: none)."""

    method: str | None
    draft_tokens: int | None
    acceptance: Fraction | None
    draft_model: Model | None
    draft_model_id: str | None


class Figure(NamedTuple):
    """One measured figure a plausibility check compares: where it stands and how to read it."""

    kind: str  # decode | ttft | prefill
    path: JsonPath
    name: str  # as messages name it
    statistic: str | None
    scope: str | None  # per_sequence | aggregate | None


class RunSetup(NamedTuple):
    """What a run was measured with: its own settings, else the record's."""

    label: str  # "run 'warm'"
    path: JsonPath  # where a fit problem is reported
    model: Model | None
    model_display: str
    hardware: HardwareReading | str
    device_count: int | None
    engine: str | None
    weights: WeightReadings | str
    weights_offloaded: bool
    techniques: tuple[str, ...]
    concurrency: int | str | None  # a number, "unbounded", or None when not stated
    requests: int | None  # requests in the run, when stated
    drafting: Drafting | str
    kv_fit: KvReading | str  # KV at the longest context a sequence is known to reach
    kv_decode: KvReading | str  # KV at the context every sequence is known to reach
    prefill_context: Fraction | str  # prompt tokens of a full prefill
    figures: tuple[Figure, ...]
    reuse: tuple[str, ...]  # why a TTFT of this run may not be a full prefill


class Inputs(NamedTuple):
    """Every file a record's plausibility checks read, already loaded."""

    hardware: HardwareIndex
    models: ModelLookup | None = None


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


def _measured(value: Any, *, lenient_high: bool) -> Fraction | None:
    """A measured figure: a number, ``{about: x}``, a range (the lenient end), or a bound that
    limits it on the lenient side ({max: x} of a time, {min: x} of a rate)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return exact(value)
    if isinstance(value, dict):
        if "about" in value:
            return _measured(value["about"], lenient_high=lenient_high)
        if "min" in value and "max" in value:
            return _measured(value["max" if lenient_high else "min"], lenient_high=lenient_high)
        if set(value) == {"min"} and not lenient_high:
            return _measured(value["min"], lenient_high=lenient_high)
        if set(value) == {"max"} and lenient_high:
            return _measured(value["max"], lenient_high=lenient_high)
    return None


def resolve_hardware(
    stated: dict[str, Any], index: HardwareIndex, where: str
) -> HardwareReading | str:
    """The accelerator (or family) a hardware mapping names, or why there is none to use."""
    accelerator, family = stated.get("accelerator"), stated.get("family")
    if accelerator is not None:
        state = index.get(accelerator)
        if state is None:
            return f"hardware/{accelerator}.yaml does not exist"
        if state.hardware is None:
            return f"{state.display} has problems"
        return HardwareReading(state.hardware, state.hardware, None)
    if family is not None:
        members = index.families.get(family, ())
        if not members:
            return f"no hardware file declares family {family}"
        generous = family_reading(family, members, generous=True)
        if len(members) == 1:
            return HardwareReading(generous, generous, None)
        least = family_reading(family, members, generous=False)
        assumption = (
            f"the {family} family's least generous member ({', '.join(m.id for m in members)})"
        )
        return HardwareReading(generous, least, assumption)
    return f"{where}.accelerator is null"


def _weights(stated: Any, model: Model, engine: str | None) -> WeightReadings | str:
    found = None if stated is None else weight_format(str(stated))
    if stated is not None and found is None:
        return f"weights precision {stated!r} is not in the vocabulary (KV706)"
    return readings(found, model.dtype, engine)


@functools.lru_cache(maxsize=256)
def _element_bits(name: str) -> Fraction:
    element = parse_element_type(name)
    overhead = Fraction(element.group_scale_bits, element.group_size or 1)
    return Fraction(element.value_bits) + (overhead if element.group_size else 0)


@functools.lru_cache(maxsize=4096)  # pure: runs of a record share model, dtype and context
def _kv_bytes(
    model: Model, dtype: str, context: int, state_dtype: str | None
) -> tuple[Fraction, str, tuple[str, ...]]:
    """The physical cache (every layer as the model is, windows capped) of one sequence."""
    try:
        report = kv_report(
            model,
            parse_element_type(dtype),
            context,
            "cache",
            parse_element_type(state_dtype) if state_dtype else None,
        )
    except ValueError as error:
        return Fraction(0), "no KV", (f"KV not counted: {error}",)
    notes: list[str] = []
    kv = report.kv_bytes_at_context
    text = f"{gib(kv)} KV ({dtype})" if kv is not None else "no KV"
    if kv is None:
        kv = Fraction(0)
        notes.append(f"KV not counted: models/{model.id} does not give it")
    state = report.fixed_state_bytes
    if state is None:
        if any(cost.state_formula for cost in report.groups):
            notes.append("fixed state not counted (unknown dimensions)")
    elif state:
        text += f" + {gib(state)} state"
    return kv + (state or 0), text, tuple(notes)


def kv_reading(
    model: Model,
    context: int | None,
    dtype: Any,
    dtype_stated: bool,
    state_dtype: str | None,
    engine: str | None,
) -> KvReading | str:
    """One sequence's cache at ``context`` on both readings of the KV dtype."""
    if context is None:
        return KvReading(
            Fraction(0), Fraction(0), "no KV", "no KV", None, ("KV not counted: no context stated",)
        )
    names = list(dtype.values()) if isinstance(dtype, dict) else [dtype]
    try:
        likely = min(names, key=_element_bits)
    except ValueError as error:
        return str(error)
    notes = ["KV at the smallest of the stated types"] if len(set(names)) > 1 else []
    favourable, assumption = likely, None
    if not dtype_stated:
        floor = engine_floor(engine).kv_dtype
        if _element_bits(floor) < _element_bits(likely):
            favourable = floor
        assumption = (
            f"KV dtype {likely} assumed (not stated; {engine or 'the engine'} offers {floor})"
        )
    low, low_text, low_notes = _kv_bytes(model, favourable, context, state_dtype)
    high, high_text, high_notes = _kv_bytes(model, likely, context, state_dtype)
    notes += [note for note in dict.fromkeys(low_notes + high_notes)]
    if low == high:
        assumption = None
    return KvReading(low, high, low_text, high_text, assumption, tuple(notes))


def _context_forms(value: Any) -> tuple[int | None, int | None, Fraction | str]:
    """A run's context as (a length some sequence reaches, a length every sequence reaches,
    the prompt tokens of one prefill or why not)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value, Fraction(value)
    if isinstance(value, dict):
        if "about" in value:
            about = exact(value["about"])
            return math.floor(about), math.floor(about), about
        if "min" in value and "max" in value:
            low = exact(value["min"])
            return math.floor(exact(value["max"])), math.floor(low), low
        if len(value) == 1:
            ((statistic, number),) = value.items()
            reach = math.floor(exact(number))
            every = reach if statistic == "min" else None
            return reach, every, f"the context is a distribution ({statistic} {number:,})"
    return None, None, "the context is not stated"


def _drafting(stated: dict[str, Any] | None, models: ModelLookup | None) -> Drafting | str:
    if stated is None:
        return Drafting(None, None, None, None, None)
    acceptance = stated.get("acceptance_rate")
    draft_id = stated.get("draft_model")
    draft = None
    if draft_id is not None:
        draft = models(draft_id) if models is not None else None
        if draft is None:
            return f"draft model {draft_id!r} is not a sound model file (KV706)"
    return Drafting(
        stated["method"],
        stated.get("draft_tokens"),
        None if acceptance is None else exact(acceptance),
        draft,
        draft_id,
    )


def _run_figures(run: Run, data: dict[str, Any]) -> tuple[Figure, ...]:
    figures = []
    for index, metric in enumerate(run.stated.get("metrics", [])):
        path: JsonPath = (*run.path, "metrics", index, "value")
        name, statistic = metric["name"], metric["statistic"]
        if name == "decode_tokens_per_s":
            figures.append(Figure("decode", path, name, statistic, metric.get("scope")))
        elif name == "output_tokens_per_s":
            figures.append(Figure("decode", path, name, statistic, "aggregate"))
        elif name == "ttft_ms":
            figures.append(Figure("ttft", path, name, statistic, None))
        elif name == "prefill_tokens_per_s":
            figures.append(Figure("prefill", path, name, statistic, metric.get("scope")))
    return tuple(figures)


def _reuse(techniques: tuple[str, ...], metrics: list[dict[str, Any]]) -> tuple[str, ...]:
    """Why a run's TTFT may come from reused KV: a reuse technique on in it (whatever its
    role: an `only` run with prefix caching may have hit), or a stated hit rate."""
    reasons = [t for t in techniques if t in PREFIX_REUSE]
    if any(m["name"] == "hit_rate" for m in metrics):
        reasons.append("a hit rate is stated")
    return tuple(reasons)


def run_setups(record: RecordContext, inputs: Inputs) -> list[RunSetup]:
    """Each run's setup."""
    return [_run_setup(record, inputs, run) for run in runs(record.data)]


def _setup(
    record: RecordContext,
    inputs: Inputs,
    *,
    label: str,
    path: JsonPath,
    settings: Mapping[str, Any],
    model_id: str | None,
    techniques: tuple[str, ...],
    context: Any,
    figures: tuple[Figure, ...],
    reuse: tuple[str, ...],
    hardware_where: str,
) -> RunSetup:
    data = record.data
    methodology = data["methodology"]
    basis = data["kv_bytes_basis"]

    def setting(key: str) -> Any:
        return settings[key] if key in settings else methodology.get(key)

    model: Model | None = record.model
    model_display = record.model_display
    if model_id is not None and model_id != data["model"]:
        model = inputs.models(model_id) if inputs.models is not None else None
        model_display = f"models/{model_id}"
    hardware_stated = setting("hardware")
    engine = (setting("engine") or {}).get("name")
    hardware = resolve_hardware(hardware_stated, inputs.hardware, hardware_where)
    placement = setting("weights_placement") or {}
    concurrency = setting("concurrency")
    if "kv_dtype" in settings:
        dtype, dtype_stated = settings["kv_dtype"], bool(settings.get("kv_dtype_stated", False))
    else:
        dtype, dtype_stated = basis["dtype"], bool(basis["dtype_stated"])
    reach, every, prefill_context = _context_forms(context)
    weights: WeightReadings | str
    kv_fit: KvReading | str
    kv_decode: KvReading | str
    if model is None:
        weights = kv_fit = kv_decode = f"{model_display} is not loaded"
    else:
        weights = _weights(setting("weights_precision"), model, engine)
        state_dtype = basis.get("state_dtype")
        kv_fit = kv_reading(model, reach, dtype, dtype_stated, state_dtype, engine)
        kv_decode = (  # one context for both, the common case: the reading is the same
            kv_fit
            if every == reach
            else kv_reading(model, every, dtype, dtype_stated, state_dtype, engine)
        )
        if every is None and reach is not None and isinstance(kv_decode, KvReading):
            kv_decode = kv_decode._replace(notes=("KV not counted: the context is a distribution",))
    return RunSetup(
        label=label,
        path=path,
        model=model,
        model_display=model_display,
        hardware=hardware,
        device_count=_whole(hardware_stated.get("count")),
        engine=engine,
        weights=weights,
        weights_offloaded=placement.get("on") == "offloaded",
        techniques=techniques,
        concurrency=concurrency,
        requests=_whole(settings.get("requests")),
        drafting=_drafting(setting("speculative_decoding"), inputs.models),
        kv_fit=kv_fit,
        kv_decode=kv_decode,
        prefill_context=prefill_context,
        figures=figures,
        reuse=reuse,
    )


def _run_setup(record: RecordContext, inputs: Inputs, run: Run) -> RunSetup:
    own_hardware = "hardware" in run.stated and run.stated["hardware"].get("accelerator")
    path: JsonPath = (*run.path, "hardware", "accelerator") if own_hardware else (*run.path, "id")
    where = f"runs[{run.position}].hardware" if "hardware" in run.stated else "methodology.hardware"
    techniques = tuple(run.techniques)
    return _setup(
        record,
        inputs,
        label=f"run '{run.id}'",
        path=path,
        settings=run.stated,
        model_id=run.stated.get("model"),
        techniques=techniques,
        context=run.context(record.data),
        figures=_run_figures(run, record.data),
        reuse=_reuse(techniques, run.stated.get("metrics", [])),
        hardware_where=where,
    )


def _whole(count: Any) -> int | None:
    """A count as an integer: the schema's ``integer`` admits ``4.0`` (JSON Schema counts a
    number with no fraction as one), which the checks read as 4."""
    return int(count) if isinstance(count, float) and count.is_integer() else count


def _count(setup: RunSetup) -> int | str:
    return "the accelerator count is null" if setup.device_count is None else setup.device_count


def _rated_low(rating: str, what: str, hardware: Hardware) -> list[str]:
    return [f"{what} rated low in {hardware.display}"] if rating == "low" else []


def _listed(*items: str | None) -> tuple[str, ...]:
    return tuple(item for item in items if item is not None)


@functools.lru_cache(maxsize=1024)
def weight_bytes(billions_: Fraction, weights: WeightFormat) -> Fraction:
    return billions_ * BILLION * weights.bits / 8


@functools.lru_cache(maxsize=1024)
def _weights_working(billions_: Fraction, weights: WeightFormat, label: str) -> str:
    return f"{format_exact(billions_)}B {label} params x {float(weights.bits):g} bits / 8 ({weights.name})"


def _common(
    setup: RunSetup, which: str
) -> tuple[HardwareReading, int, Billions, WeightReadings] | str:
    """The hardware, count, parameter count and weights every check needs, or why not."""
    active = (
        billions(setup.model.parameters, which, setup.model_display)
        if setup.model is not None
        else f"{setup.model_display} is not loaded"
    )
    count = _count(setup)
    missing = [m for m in (setup.hardware, count, active, setup.weights) if isinstance(m, str)]
    if missing:
        return "; ".join(missing)
    assert isinstance(setup.hardware, HardwareReading) and isinstance(count, int)
    assert isinstance(active, Billions) and isinstance(setup.weights, WeightReadings)
    return setup.hardware, count, active, setup.weights


# ---- KV701 fit ------------------------------------------------------------------------------


def evaluate_fit(setup: RunSetup) -> Evaluation:
    check = f"{setup.label}: fit"
    common = _common(setup, "total")
    if isinstance(common, str) or isinstance(setup.kv_fit, str):
        return _skip(
            FIT, check, setup.path, common if isinstance(common, str) else str(setup.kv_fit)
        )
    hardware, count, total, weights = common
    kv = setup.kv_fit
    if hardware.favourable.usable_memory_bytes is None:
        return _skip(FIT, check, setup.path, f"{hardware.favourable.display} gives no memory size")
    kv_offload = "kv_offload" in setup.techniques
    # Offloading lets the engine keep only the sequence it is computing on the accelerator.
    concurrent = setup.concurrency if isinstance(setup.concurrency, int) else 1
    sequences = 1 if kv_offload else concurrent
    notes = list(kv.notes)
    assumptions = list(_listed(total.assumption, weights.assumption, hardware.assumption))

    def side(
        params: Fraction,
        weights_format: WeightFormat,
        kv_bytes: Fraction,
        kv_text: str,
        seqs: int,
        hw: Hardware,
        likely: bool,
    ) -> Side:
        if setup.weights_offloaded:
            weight_total, weight_text = Fraction(0), "weights offloaded"
        else:
            weight_total = weight_bytes(params, weights_format)
            weight_text = (
                f"weights {gib(weight_total)} ({_weights_working(params, weights_format, 'total')})"
            )
        on_device = kv_bytes
        text = kv_text
        if kv_offload and not likely:
            on_device, text = Fraction(0), "no KV (offloaded)"
        if seqs > 1:
            text = f"{seqs} x ({text})"
        need = weight_total + seqs * on_device
        memory = hw.usable_memory_bytes
        figure = hw.memory_figure
        if likely and hw.likely_memory_bytes is not None:
            memory, figure = hw.likely_memory_bytes, "usable_gib_approx (the GPU's default share)"
        assert memory is not None
        return Side(
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
        assumptions.append(f"all {sequences} concurrent sequences at the context at once")
    if kv_offload:
        assumptions.append("the running sequence's KV stays on the accelerator (kv_offload)")
    if hardware.likely.likely_memory_bytes is not None:
        assumptions.append(f"{hardware.likely.display}'s default GPU share of the unified memory")
    if kv.assumption:
        assumptions.append(kv.assumption)
    if setup.weights_offloaded:
        notes.append("weights offloaded (weights_placement): not counted")
    return Evaluation(
        FIT,
        check,
        setup.path,
        favourable,
        likely,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(
            _rated_low(hardware.favourable.memory_confidence, "memory", hardware.favourable)
        ),
        notes=tuple(notes),
    )


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


def evaluate_decode(setup: RunSetup, figure: Figure, value: Fraction) -> Evaluation:
    check = f"{setup.label}: decode {figure.name}"
    common = _common(setup, "active")
    reasons = [r for r in (common, setup.kv_decode, setup.drafting) if isinstance(r, str)]
    if reasons:
        return _skip(DECODE_ROOFLINE, check, figure.path, "; ".join(reasons))
    assert not isinstance(common, str) and isinstance(setup.kv_decode, KvReading)
    assert isinstance(setup.drafting, Drafting) and setup.model is not None
    hardware, count, active, weights = common
    kv, drafting, model = setup.kv_decode, setup.drafting, setup.model
    favourable_reading, likely_reading, reading_assumption = _decode_readings(
        setup.concurrency, figure.scope
    )
    notes = list(kv.notes)
    assumptions = list(
        _listed(
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
            draft = billions(
                drafting.draft_model.parameters, "active", f"models/{drafting.draft_model_id}"
            )
            if isinstance(draft, str):
                notes.append(f"draft weights not counted: {draft}")
                return Fraction(0), ""
            params = draft.likely if likely else draft.low
            per = weight_bytes(params, bits)
            return (
                k * per,
                f" + {k} x draft {gib(per)} [{_weights_working(params, bits, 'active')}]",
            )
        hidden = model.hidden_size
        if drafting.method in _HEAD_DRAFTS and hidden is not None:
            per = Fraction(hidden * hidden) * bits.bits / 8
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
    ) -> Side | str:
        limits: list[tuple[Fraction, str]] = []
        weights_total = weight_bytes(params, bits)
        draft, draft_text = draft_bytes(bits, likely)
        bandwidth = hw.bandwidth_bytes_per_s
        if bandwidth is not None and steps is not None:
            total_bandwidth = count * bandwidth
            factor = f"{format_exact(steps)} x " if steps != 1 else ""
            bandwidth_text = f"{factor}{count} x {format_exact(bandwidth / 10**9)} GB/s"
            weights_text = f"weights {gib(weights_total)} [{_weights_working(params, bits, 'active')}]{draft_text}"
            if reading.batch is None:
                if kv_bytes > 0:
                    limits.append(
                        (
                            steps * total_bandwidth / kv_bytes,
                            f"the {{limit}} roofline for any batch = {bandwidth_text} / ({kv_text} per sequence) ({hw.display} {hw.bandwidth_figure})",
                        )
                    )
            else:
                batch = reading.batch
                per_step = weights_total + draft + batch * kv_bytes
                per_sequence = steps * total_bandwidth / per_step
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
                    count * figure_.flops_per_s / (2 * params * BILLION),
                    f"the {{limit}} compute bound = {count} x {format_exact(figure_.flops_per_s / 10**12)} TFLOP/s {compute_type} ({figure_.figure}) / (2 x {format_exact(params)}e9 FLOP/token)",
                )
            )
        if not limits:
            return f"{hw.display} gives no bandwidth or peak"
        limit, working = min(limits, key=lambda item: item[0])
        return Side(
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
    if isinstance(favourable, str):
        return _skip(DECODE_ROOFLINE, check, figure.path, favourable)
    if isinstance(likely, str):
        likely = favourable
    unfirm = _rated_low(hardware.favourable.bandwidth_confidence, "bandwidth", hardware.favourable)
    if "compute bound" in favourable.working:
        peak = hardware.favourable.peak(favourable_types)
        if peak is not None:
            unfirm = _rated_low(peak[1].confidence, f"{peak[0]} peak", hardware.favourable)
    return Evaluation(
        DECODE_ROOFLINE,
        check,
        figure.path,
        favourable,
        likely,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(unfirm),
        notes=tuple(dict.fromkeys(notes)),
    )


# ---- KV703 prefill ceiling ------------------------------------------------------------------


def attention_flops_per_token(model: Model, context: Fraction) -> tuple[Fraction, str]:
    """FLOPs one prompt token spends attending, averaged over a prompt of ``context`` tokens."""
    total = Fraction(0)
    terms = []
    for group in model.leaf_groups():
        if isinstance(group, Attention):
            if group.kv_heads is None or group.head_dim is None or group.value_dim is None:
                continue
            heads, widths = model.query_heads or group.kv_heads, (group.head_dim, group.value_dim)
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


def _attended(window: int | None, context: Fraction) -> tuple[Fraction, str]:
    """The average context a prompt token attends to, with its working."""
    shown = format_exact(context)
    if window is None or context <= window:
        return context / 2, f"{shown}/2"
    attended = window * (2 * context - window) / (2 * context)
    return attended, f"{window:,} x (2 x {shown} - {window:,}) / (2 x {shown})"


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
    if statistic == "max":
        return Fraction(concurrency)
    if statistic == "mean":
        return Fraction(concurrency + 1, 2)
    if statistic in ("median", "p50"):
        return Fraction(math.ceil(concurrency / 2))
    if statistic.startswith("p"):
        return Fraction(math.ceil(exact(statistic[1:]) * concurrency / 100))
    return Fraction(1)


def evaluate_prefill(setup: RunSetup, figure: Figure, value: Fraction) -> Evaluation:
    """The prefill rate of one TTFT (``value`` in ms) or measured prefill rate."""
    check = f"{setup.label}: prefill {'context / TTFT' if figure.kind == 'ttft' else figure.name}"
    common = _common(setup, "active")
    if isinstance(common, str):
        return _skip(PREFILL_CEILING, check, figure.path, common)
    assert setup.model is not None
    hardware, count, active, weights = common
    context = setup.prefill_context
    notes: list[str] = []
    assumptions = list(_listed(active.assumption, weights.assumption, hardware.assumption))
    if figure.kind == "ttft":
        if setup.reuse:
            return _skip(
                PREFILL_CEILING,
                check,
                figure.path,
                f"the TTFT may be served from reused KV ({', '.join(setup.reuse)})",
            )
        if isinstance(context, str):
            return _skip(PREFILL_CEILING, check, figure.path, context)
        if value <= 0:
            return _skip(PREFILL_CEILING, check, figure.path, "the TTFT is not positive")
        rate = context * 1000 / value
        subject = f"{format_exact(context)} tokens / {format_exact(value / 1000)} s = {tokens_per_s(rate)}"
        together = _together(setup.concurrency, figure.statistic, setup.requests)
        likely_rate, likely_subject = rate, subject
        if together > 1:
            likely_rate = together * rate
            likely_subject = (
                f"{format_exact(together)} prompts x {subject} = {tokens_per_s(likely_rate)}"
            )
            assumptions.append(
                f"the {setup.concurrency} prompts arrived together ({figure.statistic} TTFT)"
            )
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
    ) -> Side | str:
        peak = hw.peak(compute_types)
        if peak is None:
            return f"{hw.display} publishes no dense peak for {', '.join(compute_types)}"
        compute_type, figure_ = peak
        flops = 2 * params * BILLION + attention
        limit = count * figure_.flops_per_s / flops
        tflops = format_exact(figure_.flops_per_s / 10**12)
        return Side(
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
    if isinstance(favourable, str):
        return _skip(PREFILL_CEILING, check, figure.path, favourable)
    peak = hardware.favourable.peak(favourable_types)
    assert peak is not None
    return Evaluation(
        PREFILL_CEILING,
        check,
        figure.path,
        favourable,
        favourable if isinstance(likely, str) else likely,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(_rated_low(peak[1].confidence, f"{peak[0]} peak", hardware.favourable)),
        notes=tuple(notes),
    )


# ---- KV704 fit claims -----------------------------------------------------------------------


def evaluate_fit_claims(record: RecordContext, inputs: Inputs) -> list[Evaluation]:
    """Each fit claim on both readings."""
    claims = record.data["kv_bytes_basis"].get("fit_claims", [])
    return [_fit_claim(record, inputs, index, claim) for index, claim in enumerate(claims)]


def _fit_claim(
    record: RecordContext, inputs: Inputs, index: int, claim: dict[str, Any]
) -> Evaluation:
    path: JsonPath = ("kv_bytes_basis", "fit_claims", index)
    fits = bool(claim["fits"])
    check = f"fit claim [{index}] ({'fits' if fits else 'does not fit'})"
    inputs_ = _claim_inputs(record, inputs, index, claim)
    if isinstance(inputs_, str):
        return _skip(FIT_CLAIM, check, path, inputs_)
    hardware, total, report, basis_label = inputs_
    if hardware.usable_memory_bytes is None:
        return _skip(FIT_CLAIM, check, path, f"{hardware.display} gives no memory size")
    assert report.kv_bytes_at_context is not None
    stated = weight_format(claim["weights_precision"])
    if stated is None:
        return _skip(
            FIT_CLAIM,
            check,
            path,
            f"weights precision {claim['weights_precision']!r} is not in the vocabulary (KV706)",
        )
    engine = record.data["methodology"]["engine"]["name"]
    claimed = readings(stated, record.model.dtype, engine)
    assumptions = list(_listed(total.assumption, claimed.assumption))
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
    kv_total = sequences * (report.kv_bytes_at_context + (state or 0))
    memory = hardware.usable_memory_bytes

    def side(params: Fraction, weights_format: WeightFormat) -> Side:
        weights = weight_bytes(params, weights_format)
        need = weights + kv_total
        return Side(
            need,
            claim["count"] * memory,
            f"weights {gib(weights)} ({_weights_working(params, weights_format, 'total')}) + {kv_text} = {gib(need)}",
            f"{claim['count']} x {gib(memory)} ({hardware.display} {hardware.memory_figure})",
        )

    return Evaluation(
        FIT_CLAIM,
        check,
        path,
        side(total.low if fits else total.high, favourable_weights),
        side(total.likely, claimed.likely),
        expect_within=fits,
        assumptions=tuple(dict.fromkeys(assumptions)),
        unfirm=tuple(_rated_low(hardware.memory_confidence, "memory", hardware)),
        notes=tuple(notes),
    )


def _claim_inputs(
    record: RecordContext, inputs: Inputs, index: int, claim: dict[str, Any]
) -> tuple[Hardware, Billions, KvReport, str] | str:
    """A fit claim's accelerator, total parameters, basis arithmetic and basis label, or why
    the claim cannot be evaluated."""
    which = claim["basis"]
    named = named_basis(record.data, which)
    if named is None:
        alternatives = len(bases(record.data)) - 1
        return f"basis {which} names no alternative (the record has {alternatives})"
    found = resolve_hardware(
        {"accelerator": claim["accelerator"]}, inputs.hardware, f"fit_claims[{index}]"
    )
    total = billions(record.model.parameters, "total", record.model_display)
    reasons = [m for m in (found, total) if isinstance(m, str)]
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
        return "; ".join(reasons)
    assert isinstance(found, HardwareReading) and isinstance(total, Billions)
    return found.favourable, total, report, named.label


# ---- KV705 hardware link and KV706 settings ----------------------------------------------------


def accelerator_links(data: dict[str, Any]) -> list[tuple[JsonPath, str, bool]]:
    """Every accelerator id (False) or family (True) a record names, with where it names it."""
    links: list[tuple[JsonPath, str, bool]] = []
    places: list[JsonPath] = [("methodology", "hardware")]
    places += [("runs", i, "hardware") for i in range(len(_find(data, "runs") or []))]
    for place in places:
        for key, family in (("accelerator", False), ("family", True)):
            named = _find(data, *place, key)
            if isinstance(named, str):
                links.append(((*place, key), named, family))
    for index, claim in enumerate(_find(data, "kv_bytes_basis", "fit_claims") or []):
        links.append(
            (("kv_bytes_basis", "fit_claims", index, "accelerator"), claim["accelerator"], False)
        )
    return links


def check_hardware_links(record: RecordContext, inputs: Inputs) -> Iterator[Problem]:
    """KV705: every accelerator names a sound file in hardware/, every family some files."""
    index = inputs.hardware
    for path, named, family in accelerator_links(record.data):
        if family:
            if not index.families.get(named):
                known = sorted({f for f in index.families if index.families[f]})
                message = (
                    f"family {named!r}: no hardware file declares it{did_you_mean(named, known)}"
                )
                yield record.problem(HARDWARE_LINK, path, message)
            continue
        state = index.get(named)
        if state is None:
            hint = did_you_mean(named, index.catalog_ids)
            yield record.problem(
                HARDWARE_LINK,
                path,
                f"accelerator {named!r}: hardware/{named}.yaml does not exist{hint}",
            )
        elif state.hardware is None:
            message = f"accelerator {named!r}: {state.display} has problems (reported there); hardware checks not run"
            yield record.problem(HARDWARE_LINK, path, message)
            yield from state.problems


def _precision_places(data: dict[str, Any]) -> Iterator[JsonPath]:
    yield ("methodology", "weights_precision")
    for index, _ in enumerate(_find(data, "runs") or []):
        yield ("runs", index, "weights_precision")
    for index, _ in enumerate(_find(data, "kv_bytes_basis", "fit_claims") or []):
        yield ("kv_bytes_basis", "fit_claims", index, "weights_precision")


def nearest_precision(stated: str) -> str:
    """The vocabulary's name closest to an unknown value: the first run of its words that is a
    known value, else the name most like the whole."""
    import difflib  # only when a value is unknown

    text = normalise(stated)
    names = {
        **{name: name.replace("_", "-") for name in PRECISIONS},
        **{n: n.upper() for n in GGUF_BITS},
    }
    words = text.split("_")
    for start in range(len(words)):
        for end in range(len(words), start, -1):
            found = weight_format("_".join(words[start:end]))
            if found is not None:
                return found.name
    best = max(sorted(names), key=lambda name: difflib.SequenceMatcher(None, text, name).ratio())
    return names[best]


def check_settings(record: RecordContext, inputs: Inputs) -> Iterator[Problem]:
    """KV706: weights precisions from the vocabulary; draft models that exist."""
    data = record.data
    for path in _precision_places(data):
        stated = _find(data, *path)
        if isinstance(stated, str) and weight_format(stated) is None:
            message = (
                f"weights precision {stated!r} is not in the vocabulary; the nearest known "
                f"value is {nearest_precision(stated)} (the source's own words go in "
                "weights_stated_as)"
            )
            yield record.problem(SETTINGS, path, message)
    places: list[JsonPath] = [("methodology",)]
    places += [("runs", index) for index in range(len(_find(data, "runs") or []))]
    for place in places:
        path = (*place, "speculative_decoding", "draft_model")
        draft = _find(data, *path)
        if isinstance(draft, str) and (inputs.models is None or inputs.models(draft) is None):
            yield record.problem(
                SETTINGS,
                path,
                f"draft model {draft!r}: models/{draft}.yaml is not a sound model file",
            )


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


def fit_evaluations(setups: list[RunSetup]) -> list[Evaluation]:
    """One fit per run, a repeat of an earlier run's identical fit left out."""
    found: list[Evaluation] = []
    seen: set[tuple[Side | None, Side | None]] = set()
    for setup in setups:
        evaluation = evaluate_fit(setup)
        key = (evaluation.favourable, evaluation.likely)
        if evaluation.checked and key in seen:
            continue
        seen.add(key)
        found.append(evaluation)
    return found


def figure_evaluations(record: RecordContext, setups: list[RunSetup]) -> list[Evaluation]:
    """The decode and prefill checks of every figure of every run."""
    found = []
    for setup in setups:
        for figure in setup.figures:
            raw = _find(record.data, *figure.path)
            value = _measured(raw, lenient_high=figure.kind == "ttft")
            rule = DECODE_ROOFLINE if figure.kind == "decode" else PREFILL_CEILING
            if value is None:
                reason = (
                    "not stated" if raw is None else "a bound on the side that does not limit it"
                )
                found.append(
                    _skip(
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
        *evaluate_fit_claims(record, inputs),
    ]


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


def hardware_index(data: dict[str, Any], catalog: HardwareCatalog) -> HardwareIndex:
    """The hardware files a record names, read through the catalog (the only I/O here)."""
    links = accelerator_links(data)
    states = {named: catalog.get(named) for _, named, family in links if not family}
    families = {named: catalog.family(named) for _, named, family in links if family}
    missing = None in states.values()
    family_ids = catalog.family_ids() if not all(families.values()) else ()
    return HardwareIndex(states, catalog.ids() if missing else (), families, family_ids)


def plausibility_problems(
    record: RecordContext, catalog: HardwareCatalog, models: ModelLookup | None = None
) -> list[Problem]:
    """Every plausibility problem of one record whose arithmetic checks have run."""
    inputs = Inputs(hardware_index(record.data, catalog), models)
    problems = [*check_hardware_links(record, inputs), *check_settings(record, inputs)]
    problems += check_fit_claim_bases(record)
    problems += _problems(record, all_evaluations(record, inputs))
    return problems
