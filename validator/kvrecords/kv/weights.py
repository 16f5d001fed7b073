"""Weight precision: from the free text a record states to bits per weight.

``methodology.weights_precision`` is written as the source writes it (``bf16``, ``AWQ int4``,
``Q4_K_XL``, ``nvfp4``, ``4.65bpw``). The hardware checks need two facts from it: how many bits
one weight takes in memory, and which tensor-core types its matmuls can run in.

Bits include the format's fixed block scales (nvfp4: 4 + 8/16; GGUF Q4_K: 144 bytes per 256
weights = 4.5). Where a name covers a mix (Q4_K_M keeps some tensors in Q6_K; AWQ/GPTQ group
sizes vary; embeddings often stay 16-bit) the figure is the lowest the name allows, so weight
bytes are never over-counted and the ceilings stay lenient. The compute types are every type
an engine may run those weights in (W4A16 dequantises to 16-bit; W4A8 and FP8 kernels exist;
llama.cpp runs quantised matmuls on INT8 dot products), so a prefill ceiling takes the most
generous.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

SIXTEEN_BIT = ("bf16", "fp16")
MAX_NAME = 200
EVERY_COMPUTE_TYPE = ("bf16", "fp16", "fp8", "fp4", "int8")


class WeightFormat(NamedTuple):
    """What a weight precision costs: bits per weight and the compute types it can run in."""

    name: str  # canonical name shown in messages
    bits: Fraction
    compute_types: tuple[str, ...]
    note: str = ""

    def describe(self) -> str:
        bits = f"{float(self.bits):g}"
        return f"{self.name} ({bits} bits per weight{'; ' + self.note if self.note else ''})"


def _format(
    name: str, bits: Fraction | int, compute: tuple[str, ...], note: str = ""
) -> WeightFormat:
    return WeightFormat(name, Fraction(bits), compute, note)


_FLOAT16 = _format("bf16", 16, SIXTEEN_BIT)
_INT4_COMPUTE = (*SIXTEEN_BIT, "int8", "fp8")
_GGUF_COMPUTE = (*SIXTEEN_BIT, "int8")

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
# Unsloth dynamic "_XL" mixes may drop some tensors to the i-quant of the same width.
_XL_FLOOR = {
    "q2": "iq2_xxs",
    "q3": "iq3_xxs",
    "q4": "iq4_xs",
    "q5": "q5_k",
    "q6": "q6_k",
    "q8": "q8_0",
}

_GGUF_RE = re.compile(r"(?:^|_)(i?q[1-8](?:_[a-z0-9]+)*)")
_BPW_RE = re.compile(r"(\d+(?:\.\d+)?)_?bpw")
_WA_RE = re.compile(r"(?:^|_)w(\d)a(\d+)")
_NBIT_RE = re.compile(r"(?:^|_)(\d)_?bits?(?:$|_)")


def _gguf(token: str) -> WeightFormat | None:
    """A GGUF type name, or the longest leading part of ``token`` that is one."""
    parts = token.split("_")
    for end in range(len(parts), 0, -1):
        found = _gguf_exact("_".join(parts[:end]))
        if found is not None:
            return found
    return None


def _gguf_exact(base: str) -> WeightFormat | None:
    token = base
    if base in _XL_FLOOR:  # a bare "q2": any mix of that width
        floor = _XL_FLOOR[base]
        note = f"GGUF {base} mix; lowest tensor type taken as {floor.upper()}"
        return _format(base.upper(), GGUF_BITS[floor], _GGUF_COMPUTE, note)
    if base in GGUF_BITS:
        return _format(token.upper(), GGUF_BITS[base], _GGUF_COMPUTE, "GGUF block format")
    if base.endswith("_xl") and base[:2] in _XL_FLOOR:
        floor = _XL_FLOOR[base[:2]]
        note = f"dynamic GGUF mix; lowest tensor type taken as {floor.upper()}"
        return _format(token.upper(), GGUF_BITS[floor], _GGUF_COMPUTE, note)
    for suffix in ("_m", "_s", "_l", "_xs", "_xxs", "_m_l"):
        if base.endswith(suffix) and base[: -len(suffix)] in GGUF_BITS:
            root = base[: -len(suffix)]
            note = f"GGUF mix; lowest tensor type taken as {root.upper()}"
            return _format(token.upper(), GGUF_BITS[root], _GGUF_COMPUTE, note)
    return None


def weight_format(stated: str) -> WeightFormat | None:
    """The format a stated weight precision names; None when it is not recognised."""
    # Precision names are short; a long string is prose, and only its start is read.
    text = re.sub(r"[^a-z0-9.]+", "_", stated[:MAX_NAME].strip().lower()).strip("_")
    if not text:
        return None
    if "nvfp4" in text:
        return _format("nvfp4", Fraction(9, 2), (*EVERY_COMPUTE_TYPE,), "fp8 scale per 16")
    if "mxfp4" in text:
        return _format("mxfp4", Fraction(17, 4), (*EVERY_COMPUTE_TYPE,), "8-bit scale per 32")
    gguf = _GGUF_RE.search(text)
    if gguf:
        found = _gguf(gguf.group(1))
        if found is not None:
            return found
    bpw = _BPW_RE.search(text)
    if bpw:
        return _format(f"{bpw.group(1)} bpw", Fraction(bpw.group(1)), _GGUF_COMPUTE)
    weights_activations = _WA_RE.search(text)
    if weights_activations:
        bits = int(weights_activations.group(1))
        compute = _INT4_COMPUTE if bits < 8 else ("int8", "fp8", *SIXTEEN_BIT)
        return _format(f"w{bits}a{weights_activations.group(2)}", bits, compute)
    words = set(text.split("_"))
    if words & {"awq", "gptq", "int4", "marlin", "w4", "uint4", "exl2", "hqq"}:
        return _format("int4", 4, _INT4_COMPUTE, "group scales not counted")
    if words & {"fp4", "e2m1"}:
        return _format("fp4", 4, (*EVERY_COMPUTE_TYPE,))
    if words & {"fp8", "e4m3", "e5m2", "fp8_e4m3", "float8"} or text.startswith("fp8"):
        return _format("fp8", 8, ("fp8", "int8", *SIXTEEN_BIT))
    if words & {"int8", "w8", "smoothquant", "llm.int8", "bnb8", "8bit"}:
        return _format("int8", 8, ("int8", "fp8", *SIXTEEN_BIT))
    if words & {"bf16", "bfloat16"}:
        return _FLOAT16
    if words & {"fp16", "float16", "half", "f16"}:
        return _format("fp16", 16, SIXTEEN_BIT)
    if words & {"fp32", "float32", "f32"}:
        return _format("fp32", 32, SIXTEEN_BIT)
    if words & {"unquantized", "unquantised"}:
        return _FLOAT16
    nbit = _NBIT_RE.search(text)
    if nbit:
        bits = int(nbit.group(1))
        compute = _INT4_COMPUTE if bits < 8 else ("int8", "fp8", *SIXTEEN_BIT)
        return _format(f"{bits}-bit", bits, compute)
    return None


# When the record does not state its weights (or states something unrecognised), the checks
# assume the commonest quantised serving format. It is an assumption, so they only warn.
ASSUMED_BITS = 4
ASSUMED_FORMAT = _format(
    "4-bit (assumed)", ASSUMED_BITS, (*EVERY_COMPUTE_TYPE,), "assumed: the source does not say"
)
