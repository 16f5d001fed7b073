"""KV-cache arithmetic: pure functions from a model's geometry and an element type to bytes.

Conventions (docs/conventions.md explains them with a worked example per kind):
- logical bytes: no block or page rounding, no padding, no tensor-parallel replication;
- at context L a sliding-window layer holds exactly min(L, W) tokens;
- the fixed per-sequence state (linear attention, Mamba) has its own element type;
- values are exact ``Fraction``s: sub-byte types and scale overheads stay exact.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import NamedTuple

from kvrecords.kv.geometry import (
    Attention,
    IndexerKeys,
    LeafGroup,
    Model,
    MultiHeadLatent,
    StateGroup,
    TokenElements,
    indexer_of,
    shown,
)
from kvrecords.kv.units import format_exact, gib

VALUE_BITS: dict[str, int] = {
    "fp32": 32,
    "fp16": 16,
    "bf16": 16,
    "fp8": 8,
    "int8": 8,
    "fp4": 4,
    "int4": 4,
    "int3": 3,
    "int2": 2,
}
ALIASES: dict[str, str] = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
}
# ggml's quantized cache types (ggml-common.h block structs): bits per value, values per block,
# bytes per block; the block's scale (and min) are what the bytes hold beyond the values.
GGML_BLOCKS: dict[str, tuple[int, int, int]] = {
    "q8_0": (8, 32, 34),
    "q4_0": (4, 32, 18),
    "q4_1": (4, 32, 20),
    "q5_0": (5, 32, 22),
    "q5_1": (5, 32, 24),
    "iq4_nl": (4, 32, 18),
}
# How sources, torch and engine flags spell the element types the schema names, by the written
# name lower-cased with hyphens and spaces read as underscores.
DTYPE_SPELLINGS: dict[str, str] = {
    "float32": "fp32",
    "f32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "f16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3": "fp8_e4m3",
    "fp8_e4m3fn": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "e5m2": "fp8_e5m2",
}
# Per-group scale (and zero point) in fp16, as in KIVI: 32 bits shared by G values.
GROUP_SCALE_AND_ZERO_BITS = 32
# Per token and head: one fp32 scale for each cached head vector.
VECTOR_SCALE_BYTES = 4
DTYPE_FORMS = (
    "bf16, fp16, fp32, fp8, int8, int4, fp4, int3, int2; nvfp4 (fp4 + one fp8 scale per 16 "
    "values); mxfp4 (fp4 + one 8-bit scale per 32 values); <type>-g<G> (fp16 scale and zero "
    "per group of G values, KIVI-style); <type>-per-token-head (one fp32 scale per cached "
    "head vector); llama.cpp's q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl (ggml blocks of 32 values "
    "with their scales); fp8_ds_mla (vLLM's MLA layout for DeepSeek-V3.2: fp8 latent, fp32 "
    "scale per 128 values, bf16 rope)"
)
_DTYPE_RE = re.compile(
    r"^(?P<base>[a-z0-9_]+?)(?:-g(?P<group>[1-9]\d*)|(?P<pth>-per-token-head))?$"
)


class ElementType(NamedTuple):
    """How one cached value is stored, with the scale overhead its quantization carries."""

    name: str
    value_bits: int
    group_size: int | None = None
    group_scale_bits: int = 0
    vector_scale_bytes: int = 0
    mla_layout: bool = False  # fp8_ds_mla: a layout of MLA latents only, see mla_fp8_bytes

    def bytes_for(self, token: TokenElements) -> Fraction:
        bits = Fraction(token.elements * self.value_bits)
        if self.group_size is not None:
            bits += Fraction(token.elements * self.group_scale_bits, self.group_size)
        return bits / 8 + token.vectors * self.vector_scale_bytes

    def element_formula(self) -> str:
        """What one element costs, as the formulas print it."""
        if self.group_size is None:
            return f"{format_exact(Fraction(self.value_bits, 8))} B"
        return f"({self.value_bits} + {self.group_scale_bits}/{self.group_size})/8 B"


def dtype_spelling(written: str) -> str:
    """The name the schema would give an element type as a source spells it: ``FP8`` is fp8,
    ``torch.bfloat16`` bf16, ``float8_e4m3fn`` fp8_e4m3; other names come back lower-cased."""
    key = re.sub(r"[-\s]+", "_", written.strip().lower()).removeprefix("torch.")
    return DTYPE_SPELLINGS.get(key, key)


# vLLM's fp8_ds_mla (MLAAttentionSpec, DeepSeek-V3.2): per token and layer the latent in fp8,
# one fp32 scale per 128 latent values, and the rope key kept in bf16: 512 + 16 + 128 = 656 B.
# The indexer's keys beside it (DeepseekV32IndexerCache, uint8) are fp8 with one fp32 scale per
# 128 values, head_dim + head_dim // 128 x 4: 128 + 4 = 132 B per key.
FP8_DS_MLA = "fp8_ds_mla"
FP8_DS_MLA_SCALE_EVERY = 128
FP8_SCALE_BYTES = 4


def _fp8_with_scales(values: int) -> Fraction:
    """fp8 values with one fp32 scale per 128 of them."""
    return values + Fraction(values * FP8_SCALE_BYTES, FP8_DS_MLA_SCALE_EVERY)


def indexer_fp8_bytes(indexer: IndexerKeys) -> int | None:
    """Bytes of a layer's indexer keys per token as vLLM stores them: fp8 + fp32 scales."""
    if indexer.head_dim is None or indexer.keys_per_token is None:
        return None
    scales = indexer.head_dim // FP8_DS_MLA_SCALE_EVERY * FP8_SCALE_BYTES
    return indexer.keys_per_token * (indexer.head_dim + scales)


def mla_fp8_bytes(group: MultiHeadLatent) -> Fraction | None:
    """Bytes one MLA layer caches per token in vLLM's fp8_ds_mla layout, indexer keys included."""
    latent, rope = group.kv_lora_rank, group.qk_rope_head_dim
    if latent is None or rope is None:
        return None
    main = _fp8_with_scales(latent) + rope * 2
    if group.indexer is None:
        return main
    keys = indexer_fp8_bytes(group.indexer)
    return None if keys is None else main + keys


@functools.lru_cache(maxsize=256)
def parse_element_type(name: str) -> ElementType:
    """An element type from its name; ``ValueError`` names the valid forms."""
    match = _DTYPE_RE.match(name.strip().lower())
    if match is None:
        raise ValueError(f"unknown element type {name!r}; valid: {DTYPE_FORMS}")
    base = ALIASES.get(match["base"], match["base"])
    if base == FP8_DS_MLA and not match["group"] and not match["pth"]:
        return ElementType(FP8_DS_MLA, 8, mla_layout=True)
    if base in GGML_BLOCKS and not match["group"] and not match["pth"]:
        bits, values, block_bytes = GGML_BLOCKS[base]
        return ElementType(base, bits, values, block_bytes * 8 - values * bits)
    if base == "nvfp4" and not match["group"] and not match["pth"]:
        return ElementType("nvfp4", 4, group_size=16, group_scale_bits=8)
    if base == "mxfp4" and not match["group"] and not match["pth"]:
        return ElementType("mxfp4", 4, group_size=32, group_scale_bits=8)
    if base not in VALUE_BITS:
        raise ValueError(f"unknown element type {name!r}; valid: {DTYPE_FORMS}")
    if match["group"]:
        group_size = int(match["group"])
        return ElementType(f"{base}-g{group_size}", VALUE_BITS[base], group_size, 32)
    if match["pth"]:
        return ElementType(
            f"{base}-per-token-head", VALUE_BITS[base], vector_scale_bytes=VECTOR_SCALE_BYTES
        )
    return ElementType(base, VALUE_BITS[base])


LAYER_BASES = ("cache", "full_attention", "all_layers_as_full_attention")
LAYER_BASIS_MEANING = {
    "cache": "every layer as the model is: windows capped, shared and state layers add nothing",
    "full_attention": "only the full-attention layers (no window, no MLA, no state)",
    "all_layers_as_full_attention": (
        "counterfactual: every layer of the model as full attention with the model's "
        "one attention geometry, no window (not defined when its attention layers differ in shape)"
    ),
}


class GroupCost(NamedTuple):
    """One leaf group's share of the cache, at one context."""

    group: LeafGroup
    bytes_per_token: Fraction | None  # all layers of the group, while they still grow
    tokens_held: int
    state_bytes: Fraction | None  # per sequence, all layers of the group
    token_formula: str
    state_formula: str

    @property
    def kv_bytes(self) -> Fraction | None:
        if self.bytes_per_token is None:
            return None
        return self.bytes_per_token * self.tokens_held


class KvReport(NamedTuple):
    """The KV arithmetic of one model for one element type, context and layer basis."""

    model: Model
    dtype: ElementType
    state_dtype: ElementType
    context_tokens: int
    layers_counted: str
    groups: tuple[GroupCost, ...]
    # the groups' totals; None when any group's is unknown
    bytes_per_token: Fraction | None  # while every layer still grows (no window reached)
    kv_bytes_at_context: Fraction | None
    fixed_state_bytes: Fraction | None

    def formula(self) -> str:
        """The per-token arithmetic of every group that caches tokens, with the total."""
        terms = [
            cost.token_formula.rsplit(" = ", 1)[0]
            for cost in self.groups
            if cost.bytes_per_token != 0
        ]
        total = self.bytes_per_token
        result = "unknown" if total is None else f"{format_exact(total)} B/token"
        return f"{' + '.join(terms) or '0 B'} = {result}"


def _total(values: object) -> Fraction | None:
    total = Fraction(0)
    for value in values:  # type: ignore[attr-defined]
        if value is None:
            return None
        total += value
    return total


def full_attention_geometry(model: Model) -> Attention:
    """The model's full-attention layer shape (a window layer's, without the window, if none).

    Refused when the attention layers have more than one shape (Gemma 4's 512-dim global and
    256-dim local heads): one shape for every layer would price the other layers at a size
    they never have, and overstate what the technique saves."""
    attention = [g for g in model.leaf_groups() if isinstance(g, Attention)]
    if not attention:
        raise ValueError(f"model {model.id} has no attention layers to extend to every layer")
    shapes = dict.fromkeys(g.token_formula() for g in attention)
    if len(shapes) > 1:
        raise ValueError(
            f"model {model.id}'s attention layers have {len(shapes)} shapes "
            f"({'; '.join(shapes)}): no one shape stands for every layer, so "
            "all_layers_as_full_attention is not defined for it"
        )
    template = attention[0]
    return Attention(model.num_layers, template.kv_heads, template.head_dim, template.v_head_dim)


def counted_groups(model: Model, layers_counted: str) -> tuple[LeafGroup, ...]:
    if layers_counted == "cache":
        return model.leaf_groups()
    if layers_counted == "full_attention":
        return tuple(
            g for g in model.leaf_groups() if isinstance(g, Attention) and g.window is None
        )
    if layers_counted == "all_layers_as_full_attention":
        return (full_attention_geometry(model),)
    raise ValueError(f"unknown layer basis {layers_counted!r}; valid: {', '.join(LAYER_BASES)}")


def group_cost(
    group: LeafGroup, dtype: ElementType, state_dtype: ElementType, context_tokens: int
) -> GroupCost:
    token = group.token_elements()
    layers = group.layers
    tokens_held = context_tokens if group.window is None else min(context_tokens, group.window)
    if dtype.mla_layout and token is not None and token.elements:
        # a layout of MLA latents: its bytes for an MLA layer, unknown for any other cache
        one = mla_fp8_bytes(group) if isinstance(group, MultiHeadLatent) else None
        per_token = None if one is None else layers * one
    else:
        per_token = None if token is None else layers * dtype.bytes_for(token)
        own = _indexer_own_bytes(group)
        per_token = None if per_token is None or own is None else per_token + layers * own
    state = group.state_elements()
    state_bytes = None if state is None else layers * state * Fraction(state_dtype.value_bits, 8)
    return GroupCost(
        group=group,
        bytes_per_token=per_token,
        tokens_held=tokens_held,
        state_bytes=state_bytes,
        token_formula=_token_formula(group, dtype, per_token),
        state_formula=_state_formula(group, state_dtype, state_bytes),
    )


def _indexer_own_bytes(group: LeafGroup) -> Fraction | None:
    """Bytes per token and layer of indexer keys the model stores in a type of their own (0
    when there are none; the basis dtype's keys are among the group's token elements)."""
    indexer = indexer_of(group)
    if indexer is None or indexer.dtype is None:
        return Fraction(0)
    keys = indexer.token_elements()
    return None if keys is None else parse_element_type(indexer.dtype).bytes_for(keys)


def _indexer_formula(indexer: IndexerKeys, layers: str, dtype: ElementType) -> str:
    """`` + 61 layers x 1 indexer key x 128 x 1 B + 61 layers x 1 vectors x 4 B``."""
    stored = dtype if indexer.dtype is None else parse_element_type(indexer.dtype)
    text = f" + {layers} x {indexer.token_formula()} x {stored.element_formula()}"
    if indexer.dtype is not None and stored.vector_scale_bytes:
        keys = shown(indexer.keys_per_token)
        text += f" + {layers} x {keys} key scales x {stored.vector_scale_bytes} B"
    return text


def _token_formula(group: LeafGroup, dtype: ElementType, per_token: Fraction | None) -> str:
    if not isinstance(group, Attention | MultiHeadLatent):
        return f"{group.layers} {group.kind} layers x 0 B"
    result = "unknown" if per_token is None else f"{format_exact(per_token)} B/token"
    layers = f"{group.layers} layers"
    if dtype.mla_layout:
        if not isinstance(group, MultiHeadLatent):
            return f"{layers}: {FP8_DS_MLA} stores MLA latents only = unknown"
        latent, rope = shown(group.kv_lora_rank), shown(group.qk_rope_head_dim)
        text = (
            f"{layers} x ({latent} x 1 B fp8 + {latent}/{FP8_DS_MLA_SCALE_EVERY} x 4 B "
            f"scales + {rope} x 2 B bf16 rope)"
        )
        if group.indexer is not None:
            keys, width = shown(group.indexer.keys_per_token), shown(group.indexer.head_dim)
            text += (
                f" + {layers} x {keys} indexer key x ({width} x 1 B fp8 + "
                f"{width}/{FP8_DS_MLA_SCALE_EVERY} x 4 B scales)"
            )
        return f"{text} = {result}"
    text = f"{layers} x {group.token_formula()} x {dtype.element_formula()}"
    if group.indexer is not None:
        text += _indexer_formula(group.indexer, layers, dtype)
    if dtype.vector_scale_bytes:
        token = group.token_elements()
        vectors = "?" if token is None else str(token.vectors)
        text += f" + {layers} x {vectors} vectors x {dtype.vector_scale_bytes} B"
    return f"{text} = {result}"


def _state_formula(group: LeafGroup, state_dtype: ElementType, state: Fraction | None) -> str:
    if not isinstance(group, StateGroup):
        return ""
    shape = group.state_formula()
    result = "unknown" if state is None else f"{format_exact(state)} B"
    return f"{group.layers} layers x [{shape}] x {state_dtype.element_formula()} = {result}"


@functools.lru_cache(maxsize=4096)  # pure: a record's checks ask for the same basis repeatedly
def kv_report(
    model: Model,
    dtype: ElementType,
    context_tokens: int,
    layers_counted: str = "cache",
    state_dtype: ElementType | None = None,
) -> KvReport:
    """The arithmetic for ``model`` at ``context_tokens`` tokens on the given layer basis.

    The fixed state belongs to the model's state layers; the counterfactual basis, where every
    layer is full attention, has none.
    """
    if context_tokens < 0:
        raise ValueError("context_tokens must not be negative")
    state_type = state_dtype or default_state_dtype(model)
    groups = list(counted_groups(model, layers_counted))
    if layers_counted == "full_attention":
        # The state layers still hold their state even when only attention is counted.
        groups += [g for g in model.leaf_groups() if isinstance(g, StateGroup)]
    costs = tuple(group_cost(g, dtype, state_type, context_tokens) for g in groups)
    return KvReport(
        model,
        dtype,
        state_type,
        context_tokens,
        layers_counted,
        costs,
        bytes_per_token=_total(cost.bytes_per_token for cost in costs),
        kv_bytes_at_context=_total(cost.kv_bytes for cost in costs),
        fixed_state_bytes=_total(cost.state_bytes for cost in costs),
    )


@functools.lru_cache(maxsize=256)
def element_bits(name: str) -> Fraction:
    """Bits one cached value of the element type ``name`` takes, its group scales included."""
    element = parse_element_type(name)
    overhead = Fraction(element.group_scale_bits, element.group_size or 1)
    return Fraction(element.value_bits) + (overhead if element.group_size else 0)


class SequenceCache(NamedTuple):
    """What one sequence holds at a context: KV plus fixed state, and how it was counted."""

    bytes: Fraction  # what could not be counted counts as 0, and a note says so
    working: str  # "9.16 GiB KV (bf16) + 0.12 GiB state"
    notes: tuple[str, ...]


@functools.lru_cache(maxsize=4096)  # pure: runs of a record share model, dtype and context
def sequence_cache(
    model: Model, dtype: str, context: int, state_dtype: str | None
) -> SequenceCache:
    """The physical cache of one sequence at ``context``: every layer as the model is, windows
    capped, plus its fixed state."""
    try:
        report = kv_report(
            model,
            parse_element_type(dtype),
            context,
            "cache",
            parse_element_type(state_dtype) if state_dtype else None,
        )
    except ValueError as error:
        return SequenceCache(Fraction(0), "no KV", (f"KV not counted: {error}",))
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
    return SequenceCache(kv + (state or 0), text, tuple(notes))


def default_state_dtype(model: Model) -> ElementType:
    """Engines keep state in the model's dtype by default; bf16 when the model does not say."""
    return parse_element_type(model.dtype or "bf16")
