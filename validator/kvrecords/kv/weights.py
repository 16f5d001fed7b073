"""Weight precision: a closed vocabulary, from the name a record states to bits per weight.

``weights_precision`` takes one of the names below, or a synonym sources use for it (``BF16``,
``non-quantized``, ``16-bit``, ``W4A16``, ``AWQ int4``, ``GPTQ``, ``UD-Q4_K_XL``, ``4.65bpw``).
A value the vocabulary does not hold is not guessed at: ``weight_format`` returns None and the
check names the nearest known value. The hardware checks need two facts from a name: how many
bits one weight takes in memory, and which tensor-core types its matmuls can run in.

Bits include the format's fixed block scales (nvfp4: 4 + 8/16; GGUF Q4_K: 144 bytes per 256
weights = 4.5). Where a name covers a mix (Q4_K_M keeps some tensors in Q6_K; AWQ/GPTQ group
sizes vary; embeddings often stay 16-bit) the figure is the lowest the name allows, so weight
bytes are never over-counted. The compute types are every type an engine may run those weights
in (W4A16 dequantises to 16-bit, W4A8 and FP8 kernels exist, llama.cpp runs quantised matmuls
on INT8 dot products); ``likely_compute`` is the one they usually run in.

Two names stand for a precision the record does not pin down: ``native`` (the model's own
dtype: non-quantized, unquantized, full precision) and ``quantized`` (quantized, precision not
stated). ``readings`` resolves them, and an unstated precision, against the model's dtype and
the engine: the fewest bits any reading allows, and the likely one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import NamedTuple

from kvrecords.kv.geometry import ParameterCount
from kvrecords.kv.units import Unknown, format_exact

SIXTEEN_BIT = ("bf16", "fp16")
EVERY_COMPUTE_TYPE = ("bf16", "fp16", "fp8", "fp4", "int8")
MAX_NAME = 200


class WeightFormat(NamedTuple):
    """What a weight precision costs: bits per weight and the compute types it can run in."""

    name: str  # canonical name shown in messages
    bits: Fraction
    compute_types: tuple[str, ...]
    likely_compute: str
    note: str = ""

    def describe(self) -> str:
        if not self.bits:  # native or quantized: the model and engine decide
            return f"{self.name} ({self.note}: read against the model and engine)"
        bits = f"{float(self.bits):g}"
        return f"{self.name} ({bits} bits per weight{'; ' + self.note if self.note else ''})"


def _format(
    name: str, bits: Fraction | int, compute: tuple[str, ...], note: str = ""
) -> WeightFormat:
    return WeightFormat(name, Fraction(bits), compute, compute[0], note)


_INT4_COMPUTE = (*SIXTEEN_BIT, "int8", "fp8")
_INT8_COMPUTE = ("int8", "fp8", *SIXTEEN_BIT)
_GGUF_COMPUTE = ("int8", *SIXTEEN_BIT)

BF16 = _format("bf16", 16, SIXTEEN_BIT)
FP16 = _format("fp16", 16, ("fp16", "bf16"))
SIXTEEN = _format("16-bit", 16, SIXTEEN_BIT, "bf16 or fp16")
FP32 = _format("fp32", 32, SIXTEEN_BIT)
FP8 = _format("fp8", 8, ("fp8", "int8", *SIXTEEN_BIT))
INT8 = _format("int8", 8, _INT8_COMPUTE)
W4A8 = _format("w4a8", 4, ("int8", "fp8", *SIXTEEN_BIT), "group scales not counted")
INT4 = _format("int4", 4, _INT4_COMPUTE, "group scales not counted")
NF4 = _format("nf4", 4, _INT4_COMPUTE, "block scales not counted")
INT3 = _format("int3", 3, _INT4_COMPUTE, "group scales not counted")
INT2 = _format("int2", 2, _INT4_COMPUTE, "group scales not counted")
FP4 = _format("fp4", 4, ("fp4", *EVERY_COMPUTE_TYPE[:3], "int8"))
NVFP4 = _format("nvfp4", Fraction(9, 2), FP4.compute_types, "fp8 scale per 16")
MXFP4 = _format("mxfp4", Fraction(17, 4), FP4.compute_types, "8-bit scale per 32")

# Stand-ins resolved by ``readings``: the model's own dtype, and a quantization of unstated width.
NATIVE = _format("native", 0, SIXTEEN_BIT, "the model's own dtype")
QUANTIZED = _format("quantized", 0, _INT4_COMPUTE, "quantized, precision not stated")

# GGUF block formats: bits per weight from the block layout (ggml-common.h), lowest of a mix.
GGUF_BITS: dict[str, Fraction] = {
    "q8_0": Fraction(34 * 8, 32),  # 32 int8 + one fp16 scale = 8.5
    "q6_k": Fraction(210 * 8, 256),  # 6.5625
    "q5_k": Fraction(176 * 8, 256),  # 5.5
    "q5_1": Fraction(24 * 8, 32),  # 6
    "q5_0": Fraction(22 * 8, 32),  # 5.5
    "q4_k": Fraction(144 * 8, 256),  # 4.5
    "q4_1": Fraction(20 * 8, 32),  # 5
    "q4_0": Fraction(18 * 8, 32),  # 4.5
    "q3_k": Fraction(110 * 8, 256),  # 3.4375
    "q2_k": Fraction(84 * 8, 256),  # 2.625
    "iq4_nl": Fraction(18 * 8, 32),  # 4.5
    "iq4_xs": Fraction(136 * 8, 256),  # 4.25
    "iq3_s": Fraction(110 * 8, 256),  # 3.4375
    "iq3_xxs": Fraction(98 * 8, 256),  # 3.0625
    "iq2_s": Fraction(82 * 8, 256),  # 2.5625
    "iq2_xs": Fraction(74 * 8, 256),  # 2.3125
    "iq2_xxs": Fraction(66 * 8, 256),  # 2.0625
    "iq1_m": Fraction(56 * 8, 256),  # 1.75
    "iq1_s": Fraction(50 * 8, 256),  # 1.5625
}
# A bare "q4" or an Unsloth dynamic "_XL" mix may drop some tensors to the i-quant of that width.
_MIX_FLOOR = {
    "q2": "iq2_xxs",
    "q3": "iq3_xxs",
    "q4": "iq4_xs",
    "q5": "q5_k",
    "q6": "q6_k",
    "q8": "q8_0",
}
_MIX_SUFFIXES = ("_m", "_s", "_l", "_xs", "_xxs")
GGUF_FLOOR = _format("iq1_s", GGUF_BITS["iq1_s"], _GGUF_COMPUTE, "GGUF block format")


def _gguf(name: str) -> WeightFormat | None:
    """A GGUF type or mix name (``q4_k_m``, ``q4_k_xl``, ``q2``, ``iq2_xxs``), or None."""
    if name in _MIX_FLOOR:
        floor = _MIX_FLOOR[name]
        note = f"GGUF {name} mix; lowest tensor type taken as {floor.upper()}"
        return _format(name.upper(), GGUF_BITS[floor], _GGUF_COMPUTE, note)
    if name in GGUF_BITS:
        return _format(name.upper(), GGUF_BITS[name], _GGUF_COMPUTE, "GGUF block format")
    if name.endswith("_xl") and name[:2] in _MIX_FLOOR and name[:-3] in (name[:2], name[:2] + "_k"):
        floor = _MIX_FLOOR[name[:2]]
        note = f"dynamic GGUF mix; lowest tensor type taken as {floor.upper()}"
        return _format(name.upper(), GGUF_BITS[floor], _GGUF_COMPUTE, note)
    for suffix in _MIX_SUFFIXES:
        root = name.removesuffix(suffix)
        if root != name and root in GGUF_BITS and root.endswith("_k"):
            note = f"GGUF mix; lowest tensor type taken as {root.upper()}"
            return _format(name.upper(), GGUF_BITS[root], _GGUF_COMPUTE, note)
    return None


# Every name and synonym the vocabulary holds, after normalising (lower case, runs of other
# characters as "_"), to its format. Method names alone (AWQ, GPTQ) stand for their usual width.
PRECISIONS: Mapping[str, WeightFormat] = {
    **dict.fromkeys(
        (
            "native",
            "non_quantized",
            "non_quantised",
            "unquantized",
            "unquantised",
            "not_quantized",
            "full_precision",
            "original",
            "model_dtype",
        ),
        NATIVE,
    ),
    **dict.fromkeys(("quantized", "quantised"), QUANTIZED),
    **dict.fromkeys(("bf16", "bfloat16", "bf_16"), BF16),
    **dict.fromkeys(("fp16", "float16", "f16", "fp_16", "half", "half_precision"), FP16),
    **dict.fromkeys(("16_bit", "16bit", "16_bits"), SIXTEEN),
    **dict.fromkeys(("fp32", "float32", "f32", "32_bit", "full_fp32"), FP32),
    **dict.fromkeys(
        (
            "fp8",
            "float8",
            "fp_8",
            "fp8_e4m3",
            "fp8_e5m2",
            "e4m3",
            "e5m2",
            "fp8_dynamic",
            "fp8_static",
            "fp8_block",
            "w8a8_fp8",
            "8_bit_float",
        ),
        FP8,
    ),
    **dict.fromkeys(
        (
            "int8",
            "w8a8",
            "w8a16",
            "w8a8_int8",
            "8_bit",
            "8bit",
            "8_bits",
            "llm.int8",
            "bnb_8bit",
            "bitsandbytes_8bit",
            "smoothquant",
        ),
        INT8,
    ),
    **dict.fromkeys(("w4a8", "w4a8_fp8", "w4a8_int8", "w4afp8"), W4A8),
    **dict.fromkeys(
        (
            "int4",
            "uint4",
            "w4a16",
            "4_bit",
            "4bit",
            "4_bits",
            "awq",
            "gptq",
            "autoround",
            "marlin",
            "hqq",
            "awq_int4",
            "gptq_int4",
            "autoround_int4",
            "awq_4bit",
            "gptq_4bit",
            "gptq_4_bit",
            "awq_4_bit",
            "autoround_4_bit",
            "marlin_int4",
            "compressed_tensors_w4a16",
            "mlx_4bit",
            "mlx_4_bit",
        ),
        INT4,
    ),
    **dict.fromkeys(("nf4", "bnb_nf4", "bnb_4bit", "bitsandbytes_4bit", "qlora_nf4"), NF4),
    **dict.fromkeys(("int3", "3_bit", "3bit", "mlx_3bit"), INT3),
    **dict.fromkeys(("int2", "2_bit", "2bit", "mlx_2bit"), INT2),
    **dict.fromkeys(("fp4", "e2m1", "fp4_e2m1"), FP4),
    **dict.fromkeys(("nvfp4", "nv_fp4", "modelopt_fp4"), NVFP4),
    **dict.fromkeys(("mxfp4", "mx_fp4"), MXFP4),
}
# Words that may come before a GGUF type name (``UD-Q4_K_XL``, ``Unsloth Dynamic Q4_K_M``,
# ``GGUF Q8_0``) or after it, and say nothing about its width.
_GGUF_WORDS = frozenset({"gguf", "unsloth", "dynamic", "ud", "llama.cpp"})
_BPW = re.compile(r"^(?:exl2_)?(\d+(?:\.\d+)?)_?bpw(?:_exl2)?$")
CANONICAL = (
    "native",
    "quantized",
    "bf16",
    "fp16",
    "16-bit",
    "fp32",
    "fp8",
    "int8",
    "w4a8",
    "int4",
    "nf4",
    "int3",
    "int2",
    "fp4",
    "nvfp4",
    "mxfp4",
    "Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_K_XL, Q4_0, IQ4_XS, Q3_K_M, Q2_K, IQ2_XXS, IQ1_S ... (GGUF)",
    "<bits>bpw (EXL2)",
)


def normalise(stated: str) -> str:
    """The form the vocabulary is looked up in: lower case, other characters as ``_``."""
    return re.sub(r"[^a-z0-9.]+", "_", stated[:MAX_NAME].strip().lower()).strip("_")


def weight_format(stated: str) -> WeightFormat | None:
    """The format a stated weight precision names; None when the vocabulary does not hold it."""
    text = normalise(stated)
    if text in PRECISIONS:
        return PRECISIONS[text]
    bpw = _BPW.match(text)
    if bpw:
        return _format(f"{bpw.group(1)} bpw", Fraction(bpw.group(1)), _GGUF_COMPUTE, "EXL2")
    words = text.split("_")
    while words and words[0] in _GGUF_WORDS:
        words = words[1:]
    while words and words[-1] in _GGUF_WORDS:
        words = words[:-1]
    return _gguf("_".join(words)) if words else None


# ---- what an engine runs --------------------------------------------------------------------


class EngineFloor(NamedTuple):
    """What an engine can run: the fewest bits per weight and per cached value it offers, the
    quantised weights it serves by default (None: a checkpoint as published), and the fewest
    bits it turns a 16-bit checkpoint into by itself (in-flight or its own conversion step)."""

    weights: WeightFormat
    kv_dtype: str  # an element type name (kv.arithmetic)
    likely_weights: WeightFormat | None  # None: the published checkpoint as it is
    why: str
    from_checkpoint: WeightFormat = GGUF_FLOOR
    checkpoint_why: str = "any quantization of it"


_GGUF_ENGINE = EngineFloor(
    GGUF_FLOOR,
    "int4",
    _gguf("q4_k_m"),
    "GGUF down to IQ1_S; cache types down to q4_0 (4 bits counted)",
    GGUF_FLOOR,
    "quantizes a checkpoint to any GGUF type (llama-quantize), down to IQ1_S",
)
# vLLM quantizes a 16-bit checkpoint in flight with bitsandbytes to 4 bits (docs.vllm.ai,
# features/quantization/bnb: "Inflight quantization: load as 4bit"); SGLang's online
# quantization (docs.sglang.io, advanced_features/quantization) and its bitsandbytes load
# format go as low; TensorRT-LLM's quantization step writes int4 AWQ / W4A8; mlx_lm.convert
# quantizes to as few as 2 bits.
_IN_FLIGHT_NF4 = "quantizes a 16-bit checkpoint in flight to 4 bits (bitsandbytes nf4)"
ENGINES: Mapping[str, EngineFloor] = {
    "llama.cpp": _GGUF_ENGINE,
    "llamacpp": _GGUF_ENGINE,
    "ollama": _GGUF_ENGINE,
    "gguf-parser": _GGUF_ENGINE,
    "ds4": _GGUF_ENGINE,
    "vllm": EngineFloor(
        GGUF_FLOOR, "fp8", None, "GGUF weights down to IQ1_S; fp8 cache", NF4, _IN_FLIGHT_NF4
    ),
    "sglang": EngineFloor(
        GGUF_FLOOR,
        "fp4",
        None,
        "GGUF weights down to IQ1_S; fp4_e2m1 cache",
        NF4,
        "quantizes a 16-bit checkpoint online to 4 bits (torchao int4, bitsandbytes nf4)",
    ),
    "tensorrt-llm": EngineFloor(
        INT4,
        "fp4",
        None,
        "int4 AWQ / W4A8 weights; fp4 cache",
        INT4,
        "writes int4 AWQ / W4A8 from a 16-bit checkpoint in its quantization step",
    ),
    "mlx": EngineFloor(
        INT2,
        "int2-g64",
        INT4,
        "2-bit weights and quantized cache",
        INT2,
        "quantizes a checkpoint to as few as 2 bits (mlx_lm.convert)",
    ),
}
# An engine the table does not know may run anything the vocabulary holds.
ANY_ENGINE = EngineFloor(GGUF_FLOOR, "int2", None, "any engine: the lowest precisions there are")

# A model whose dtype is not stated may have been released in any of these.
NATIVE_DTYPES: Mapping[str, WeightFormat] = {"bf16": BF16, "fp16": FP16, "fp32": FP32, "fp8": FP8}


def engine_floor(engine: str | None) -> EngineFloor:
    return ENGINES.get((engine or "").lower(), ANY_ENGINE)


class WeightReadings(NamedTuple):
    """The weights a record runs on its most favourable reading (fewest bits) and its likely
    one, with what the likely reading assumes (None: it is what the record states)."""

    favourable: WeightFormat
    likely: WeightFormat
    assumption: str | None


def readings(
    stated: WeightFormat | None,
    model_dtype: str | None,
    engine: str | None,
    published: tuple[str, ...] | None = None,
) -> WeightReadings:
    """Both readings of a known (or unstated: None) weights precision. Unstated weights are a
    checkpoint the model's publisher released (``published``, from the model file) as the
    engine runs it: the fewest bits are the lowest published precision or what the engine
    makes of a 16-bit one by itself; the likely reading is the engine's default with it."""
    floor = engine_floor(engine)
    native = NATIVE_DTYPES.get(model_dtype or "")
    formats = [f for f in (weight_format(name) for name in published or ()) if f is not None]
    if stated is None and formats:
        return _published_readings(formats, floor, engine or "an unnamed engine")
    if stated is None or stated is QUANTIZED:
        # unstated: the checkpoint of the model's own dtype as the engine serves it by default;
        # quantized: the commonest quantised serving format, as a reviewer would first guess it
        default = native if stated is None else None
        likely = floor.likely_weights or default or INT4
        what = "not stated" if stated is None else "quantized, width not stated"
        engine_name = engine or "an unnamed engine"
        bound = "; the model file lists no published precisions" if stated is None else ""
        assumption = (
            f"weights precision {what}: {likely.name} taken as likely; {engine_name} runs "
            f"down to {floor.weights.name} ({float(floor.weights.bits):g} bits{bound})"
        )
        return WeightReadings(floor.weights, likely, assumption)
    if stated is NATIVE:
        if native is not None:
            return WeightReadings(native, native, None)
        lowest = min(NATIVE_DTYPES.values(), key=lambda f: f.bits)
        assumption = (
            f"native weights of a model whose dtype is not stated: bf16 taken as likely, "
            f"{lowest.name} the fewest bits a release uses"
        )
        return WeightReadings(lowest, BF16, assumption)
    return WeightReadings(stated, stated, None)


def _published_readings(
    formats: list[WeightFormat], floor: EngineFloor, engine: str
) -> WeightReadings:
    """Unstated weights of a model with published checkpoints: which bound decides, said."""

    def runs_as(published: WeightFormat) -> WeightFormat:
        if published.bits >= 16 and floor.from_checkpoint.bits < published.bits:
            return floor.from_checkpoint
        return published

    source = min(formats, key=lambda f: runs_as(f).bits)
    favourable = runs_as(source)
    likely = floor.likely_weights or formats[0]  # the main checkpoint comes first
    listed = ", ".join(f.name for f in formats)
    if favourable is source:
        decided = f"the published {source.name} checkpoint"
    else:
        decided = f"{engine} {floor.checkpoint_why}, from the published {source.name}"
    default = (
        f"{engine}'s default" if floor.likely_weights else f"{engine} serves the checkpoint as is"
    )
    assumption = (
        f"weights precision not stated: {likely.name} taken as likely ({default}); the fewest "
        f"bits {favourable.name} ({float(favourable.bits):g}): {decided} (published: {listed})"
    )
    return WeightReadings(favourable, likely, assumption)


# ---- parameter counts and weight bytes ------------------------------------------------------

BILLION = 10**9


class ParameterBillions(NamedTuple):
    """A parameter count in billions on both readings, and the bounds a name read as a count
    allows (27B read off a name is at least 26.5B and below 27.5B)."""

    low: Fraction
    likely: Fraction
    high: Fraction
    assumption: str | None  # what the likely reading assumes; None: the count is stated


@functools.lru_cache(maxsize=1024)  # pure, and asked again for every run of every record
def parameter_billions(
    parameters: ParameterCount | None, which: str, model_display: str
) -> ParameterBillions | Unknown:
    """The model's total or active parameter count (``which``), or why there is none."""
    if parameters is None:
        return Unknown(f"{model_display} states no parameter counts")
    value = parameters.total_billions if which == "total" else parameters.active_billions
    if value is None:
        return Unknown(
            f"{model_display} does not state its {which} parameter count ({parameters.stated_as!r})"
        )
    if not parameters.from_name:
        return ParameterBillions(value, value, value, None)
    decimals = 0
    while (value * 10**decimals).denominator != 1:
        decimals += 1
    half = Fraction(1, 2 * 10**decimals)
    assumption = (
        f"{format_exact(value)}B read off the name ({model_display}: from_name), not "
        f"{format_exact(value - half)}B"
    )
    return ParameterBillions(value - half, value, value + half, assumption)


@functools.lru_cache(maxsize=1024)
def weight_bytes(billions: Fraction, weights: WeightFormat) -> Fraction:
    """Bytes of ``billions`` of parameters stored in ``weights``."""
    return billions * BILLION * weights.bits / 8


@functools.lru_cache(maxsize=1024)
def weight_bytes_working(billions: Fraction, weights: WeightFormat, label: str) -> str:
    """``27B total params x 16 bits / 8 (bf16)``: how ``weight_bytes`` came out."""
    return f"{format_exact(billions)}B {label} params x {float(weights.bits):g} bits / 8 ({weights.name})"
