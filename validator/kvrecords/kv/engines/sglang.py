"""SGLang: the token-to-KV pool it allocates at start-up.

Read from SGLang's source (``python/sglang/srt/mem_cache/memory_pool.py``; facts only):

- ``MHATokenToKVPool._create_buffers``: per layer one K and one V buffer of
  ``(size + page_size, head_num, head_dim)`` in the store dtype; the extra page is the padded
  slot 0 that takes dummy writes from padded tokens. ``KVCache.__init__`` stores fp8
  (``float8_e4m3fn`` / ``float8_e5m2``) as uint8, one byte per value. The pool logs
  ``KV Cache is allocated. #tokens: {size}, K size: {k / GB:.2f} GB, V size: {v / GB:.2f} GB``
  with ``GB = 1024 * 1024 * 1024``: "GB" there is GiB.
- ``MLATokenToKVPool``: per layer one buffer of ``(size + page_size, 1, kv_lora_rank +
  qk_rope_head_dim)``, logged as ``KV size``.
- ``head_num`` is the model's KV heads per tensor-parallel rank (at least one, replicated when
  there are fewer heads than ranks).

The pool size (``#tokens``, max_total_num_tokens) comes from free memory and
``--mem-fraction-static``; here ``--context`` is that pool size, so the figures are what the log
line prints for a pool of that many tokens. Sliding-window pools (``SWAKVPool``) and the mamba
pools of hybrid models are not covered, and neither are later variants that size V by its own
head dimension.
"""

from __future__ import annotations

from typing import NamedTuple

from kvrecords.kv.engines.result import (
    EngineError,
    EngineReport,
    NotCovered,
    Part,
    check_choice,
    gib_as_printed,
)
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent

ENGINE = "sglang"
KV_CACHE_DTYPES = ("auto", "fp8_e4m3", "fp8_e5m2")
VERSIONS = ("latest",)


class SglangOptions(NamedTuple):
    kv_cache_dtype: str = "auto"
    page_size: int = 1
    tp_size: int = 1
    version: str = "latest"


def report(model: Model, context_tokens: int, options: SglangOptions) -> EngineReport:
    """The K/V (or MLA KV) buffers of a pool of ``context_tokens`` tokens."""
    check_choice("--kv-cache-dtype", options.kv_cache_dtype, KV_CACHE_DTYPES)
    check_choice("--engine-version", options.version, VERSIONS)
    if context_tokens < 1 or options.page_size < 1 or options.tp_size < 1:
        raise EngineError("the pool, --page-size and --tp-size must be at least 1")
    notes: list[str] = []
    leaves = [g for g in model.leaf_groups() if g.layers]
    if any(g.kind in ("linear_attention", "mamba1", "mamba2") for g in leaves):
        raise NotCovered("SGLang's mamba pools for hybrid models are not covered")
    attention = [g for g in leaves if isinstance(g, Attention)]
    mla = [g for g in leaves if isinstance(g, MultiHeadLatent)]
    if any(g.window is not None for g in attention):
        raise NotCovered("SGLang's sliding-window pool (SWAKVPool) is not covered")
    if attention and mla:
        raise NotCovered("a model with both MLA and other attention layers is not covered")
    if options.kv_cache_dtype == "auto":
        if model.dtype in ("bf16", "fp16"):
            elem = 2
        elif model.dtype == "fp32":
            elem = 4
        else:
            elem = 2
            notes.append(
                f"'auto' is the model's dtype; models/{model.id}.yaml gives"
                f" {model.dtype or 'none'}, so bf16 (2 B) is assumed"
            )
    else:
        elem = 1
    rows = context_tokens + options.page_size
    parts: list[Part] = []
    printed: list[str] = []
    if mla:
        total: int | None = 0
        for latent in mla:
            width = (
                None
                if latent.kv_lora_rank is None or latent.qk_rope_head_dim is None
                else (latent.kv_lora_rank + latent.qk_rope_head_dim)
            )
            size = None if width is None else latent.layers * rows * width * elem
            parts.append(
                Part(
                    f"KV buffer, {latent.layers} MLA layers",
                    size,
                    f"{latent.layers} layers x ({context_tokens:,} + {options.page_size}) rows x"
                    f" (kv_lora_rank + rope) {width if width is not None else '?'} x {elem} B",
                )
            )
            total = None if total is None or size is None else total + size
        if total is not None:
            printed.append(
                f"KV Cache is allocated. #tokens: {context_tokens}, KV size: {gib_as_printed(total)} GB"
            )
    else:
        k_total: int | None = 0
        v_total: int | None = 0
        for g in attention:
            if g.head_dim != g.value_dim:
                raise NotCovered("different K and V head sizes in SGLang's pool are not covered")
            heads = None if g.kv_heads is None else max(1, g.kv_heads // options.tp_size)
            size = (
                None
                if heads is None or g.head_dim is None
                else g.layers * rows * heads * g.head_dim * elem
            )
            how = (
                f"{g.layers} layers x ({context_tokens:,} + {options.page_size}) rows x"
                f" {heads if heads is not None else '?'} heads x {g.head_dim} x {elem} B"
            )
            parts.append(Part(f"K buffer, {g.layers} attention layers", size, how))
            parts.append(Part(f"V buffer, {g.layers} attention layers", size, how))
            k_total = None if k_total is None or size is None else k_total + size
            v_total = k_total
        if k_total is not None and v_total is not None:
            printed.append(
                f"KV Cache is allocated. #tokens: {context_tokens}, K size:"
                f" {gib_as_printed(k_total)} GB, V size: {gib_as_printed(v_total)} GB"
            )
    notes.append(
        f"one extra page of {options.page_size} row(s) per layer (slot 0 takes dummy writes)"
    )
    if options.tp_size > 1:
        notes.append(f"figures are per rank of {options.tp_size}")
    return EngineReport(
        engine=ENGINE,
        version="latest",
        version_note="memory_pool.py as stored (MHATokenToKVPool, MLATokenToKVPool)",
        options=(
            ("kv_cache_dtype", options.kv_cache_dtype),
            ("page_size", str(options.page_size)),
            ("tp_size", str(options.tp_size)),
        ),
        context_tokens=context_tokens,
        context_meaning="#tokens: the pool size (max_total_num_tokens) the log line states",
        parts=tuple(parts),
        printed=tuple(printed),
        notes=tuple(notes),
    )
