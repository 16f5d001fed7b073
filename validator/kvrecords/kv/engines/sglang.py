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
    model_dtype_bytes,
)
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent, indexer_of

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
    leaves = [group for group in model.leaf_groups() if group.layers]
    if any(group.kind in ("linear_attention", "mamba1", "mamba2") for group in leaves):
        raise NotCovered("SGLang's mamba pools for hybrid models are not covered")
    attention = [group for group in leaves if isinstance(group, Attention)]
    latent = [group for group in leaves if isinstance(group, MultiHeadLatent)]
    if any(group.window is not None for group in attention):
        raise NotCovered("SGLang's sliding-window pool (SWAKVPool) is not covered")
    if attention and latent:
        raise NotCovered("a model with both MLA and other attention layers is not covered")
    if any(indexer_of(group) is not None for group in leaves):
        raise NotCovered("SGLang's pool for a sparse-attention indexer's keys was not read")
    notes: list[str] = []
    pool = _Pool(context_tokens, options, _element_bytes(model, options, notes))
    if latent:
        parts, printed = _latent_pool(latent, pool)
    else:
        parts, printed = _attention_pool(attention, pool)
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


class _Pool(NamedTuple):
    tokens: int
    options: SglangOptions
    element_bytes: int

    @property
    def rows(self) -> int:
        """Rows per layer: the pool and one extra page."""
        return self.tokens + self.options.page_size

    @property
    def rows_shown(self) -> str:
        return f"({self.tokens:,} + {self.options.page_size}) rows"


def _element_bytes(model: Model, options: SglangOptions, notes: list[str]) -> int:
    """Bytes per cached value: the model's dtype for 'auto', else one (fp8 variants)."""
    if options.kv_cache_dtype != "auto":
        return 1
    return model_dtype_bytes(model, notes)


def _latent_pool(groups: list[MultiHeadLatent], pool: _Pool) -> tuple[list[Part], list[str]]:
    """MLATokenToKVPool: one buffer of latent + rope per MLA layer."""
    parts: list[Part] = []
    total: int | None = 0
    for group in groups:
        width = (
            None
            if group.kv_lora_rank is None or group.qk_rope_head_dim is None
            else group.kv_lora_rank + group.qk_rope_head_dim
        )
        size = None if width is None else group.layers * pool.rows * width * pool.element_bytes
        parts.append(
            Part(
                f"KV buffer, {group.layers} MLA layers",
                size,
                f"{group.layers} layers x {pool.rows_shown} x (kv_lora_rank + rope)"
                f" {width if width is not None else '?'} x {pool.element_bytes} B",
            )
        )
        total = None if total is None or size is None else total + size
    if total is None:
        return parts, []
    return parts, [
        f"KV Cache is allocated. #tokens: {pool.tokens}, KV size: {gib_as_printed(total)} GB"
    ]


def _attention_pool(groups: list[Attention], pool: _Pool) -> tuple[list[Part], list[str]]:
    """MHATokenToKVPool: a K and a V buffer of the same size per attention layer."""
    parts: list[Part] = []
    total: int | None = 0  # of the K buffers, which the V buffers equal
    for group in groups:
        if group.head_dim != group.value_dim:
            raise NotCovered("different K and V head sizes in SGLang's pool are not covered")
        heads = None if group.kv_heads is None else max(1, group.kv_heads // pool.options.tp_size)
        size = (
            None
            if heads is None or group.head_dim is None
            else group.layers * pool.rows * heads * group.head_dim * pool.element_bytes
        )
        how = (
            f"{group.layers} layers x {pool.rows_shown} x"
            f" {heads if heads is not None else '?'} heads x {group.head_dim} x"
            f" {pool.element_bytes} B"
        )
        parts.append(Part(f"K buffer, {group.layers} attention layers", size, how))
        parts.append(Part(f"V buffer, {group.layers} attention layers", size, how))
        total = None if total is None or size is None else total + size
    if total is None:
        return parts, []
    buffer = gib_as_printed(total)
    return parts, [
        f"KV Cache is allocated. #tokens: {pool.tokens}, K size: {buffer} GB, V size: {buffer} GB"
    ]
