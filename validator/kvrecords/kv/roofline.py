"""What accelerators allow a model: memory to hold it, decode and prefill rates at most.

Exact arithmetic for N devices of one kind, with no judgement of a record in it:

- fit: weights + sequences x (KV at context + fixed state) against N x usable memory;
- decode roofline: a decode step reads the active weights once for its batch of B sequences,
  the draft's weights once per drafted token and each sequence's KV, and emits at most
  ``steps`` tokens per sequence (drafted tokens + 1), so one sequence decodes at most
  steps x N x bandwidth / bytes per step; with any number of sequences the weights are shared
  by all of them, and only the sequence's own KV is left per step;
- compute bound: no token costs less than 2 FLOPs per active parameter;
- prefill ceiling: a prompt token costs those FLOPs plus attention, 2 x heads x (key width +
  value width) x the average context it attends to, summed over attention layers (context / 2
  for full attention, W - W^2 / (2 x context) for a window W below the context); heads are the
  model's query heads (its kv heads where the query heads are not stated, fewer), MLA counts one
  latent head of width kv_lora_rank + rope and value width kv_lora_rank, state layers nothing.
"""

from __future__ import annotations

from fractions import Fraction

from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent
from kvrecords.kv.units import format_exact
from kvrecords.kv.weights import BILLION, WeightFormat


def memory_needed(weights: Fraction, sequences: int, per_sequence: Fraction) -> Fraction:
    """Bytes on the accelerators: the weights once, the cache once per sequence."""
    return weights + sequences * per_sequence


def decode_step_bytes(
    weights: Fraction, draft: Fraction, batch: int, kv_per_sequence: Fraction
) -> Fraction:
    """Bytes one decode step of ``batch`` sequences reads."""
    return weights + draft + batch * kv_per_sequence


def decode_roofline(
    devices: int, bandwidth_bytes_per_s: Fraction, steps: Fraction, step_bytes: Fraction
) -> Fraction:
    """Tokens/s one sequence decodes at most when each step reads ``step_bytes`` and emits
    ``steps`` tokens for it."""
    return steps * (devices * bandwidth_bytes_per_s) / step_bytes


def draft_head_bytes(hidden_size: int, weights: WeightFormat) -> Fraction:
    """The least a drafted token of an EAGLE, MTP or Medusa head reads: one hidden x hidden
    projection."""
    return Fraction(hidden_size * hidden_size) * weights.bits / 8


def matmul_flops_per_token(active_billions: Fraction) -> Fraction:
    """FLOPs of one token through the weights: a multiply and an add per active parameter."""
    return 2 * active_billions * BILLION


def tokens_per_s_at_peak(
    devices: int, flops_per_s: Fraction, flops_per_token: Fraction
) -> Fraction:
    """Tokens/s the devices' peak FLOP/s allows at ``flops_per_token``."""
    return devices * flops_per_s / flops_per_token


def attention_flops_per_token(model: Model, context: Fraction) -> tuple[Fraction, str]:
    """FLOPs one prompt token spends attending, averaged over a prompt of ``context`` tokens,
    with the working."""
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
        attended, attended_text = attended_context(group.window, context)
        total += 2 * group.layers * heads * (widths[0] + widths[1]) * attended
        terms.append(
            f"2 x {group.layers} layers x {heads} heads x ({widths[0]} + {widths[1]}) x {attended_text}"
        )
    return total, " + ".join(terms) or "0"


def attended_context(window: int | None, context: Fraction) -> tuple[Fraction, str]:
    """The average context a prompt token attends to, with its working."""
    shown = format_exact(context)
    if window is None or context <= window:
        return context / 2, f"{shown}/2"
    attended = window * (2 * context - window) / (2 * context)
    return attended, f"{window:,} x (2 x {shown} - {window:,}) / (2 x {shown})"
