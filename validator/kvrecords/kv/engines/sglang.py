"""SGLang: the token-to-KV pool it allocates at start-up, and the line it prints, by release.

Read from the wheels on PyPI of every release from 0.4.0 to 0.5.23 (``RELEASES``; facts only,
no code carried over; ``file:line`` is in the release named):

- ``mem_cache/memory_pool.py``, ``MHATokenToKVPool``: per layer one K buffer of ``(rows,
  head_num, head_dim)`` and one V buffer of ``(rows, head_num, v_head_dim)`` (0.5.23 :2567
  ``_kv_buffer_shapes``). ``rows`` is the pool plus one padded page that takes dummy writes:
  ``size + 1`` before 0.4.4 (0.4.1.post6 :230), ``size + page_size`` from 0.4.4, when
  ``--page-size`` arrived (0.4.4 :228). V had head_dim until ``v_head_dim`` came in 0.5.7
  (:619). ``KVCache`` stores fp8 as uint8, one byte a value (0.4.1.post6 :131, 0.5.23 :2031).
  ``get_kv_size_bytes`` sums the K and the V buffers apart (0.5.23 :2753).
- ``MLATokenToKVPool``: per layer one buffer of ``(rows, 1, kv_lora_rank + qk_rope_head_dim)``
  (0.4.1.post6 :345).
- ``NSATokenToKVPool`` (0.5.3 :1214; ``DSATokenToKVPool`` from 0.5.13), DeepSeek-V3.2: the MLA
  buffer with ``size + 64`` rows (the pool asserts a page of 64, and server_args sets it: 0.5.3
  server_args.py:820), each row ``kv_lora_rank + qk_rope_head_dim`` values, or with fp8_e4m3
  656 bytes (512 fp8 values, 4 fp32 scales, 64 bf16 rope values: 0.5.3 :1055, 0.5.5 :1590
  ``override_dim``). From 0.5.9 the trtllm DSA backend keeps the raw 576-byte fp8 row
  (model_runner_kv_cache_mixin.py:223 ``calculate_mla_kv_cache_dim``), and from 0.5.10 it is
  the default for fp8 on Blackwell (server_args.py ``_set_default_nsa_backends``); option
  ``nsa_backend`` chooses. Beside it, per layer, the indexer keys: ``(size + page + 1) //
  page`` pages of ``page x (index_head_dim + index_head_dim // 128 x 4)`` bytes (0.5.3 :1262,
  128 fp8 values and one fp32 scale per token).
- The line (``GB = 1024 * 1024 * 1024``, so "GB" is GiB: 0.4.1.post6 :41): none before
  0.4.1.post6; ``KV Cache is allocated. K size: {k} GB, V size: {v} GB.`` (0.4.1.post6 :221);
  ``#tokens: {size}, `` after the first full stop from 0.4.3.post3 (:206); an MLA pool prints
  ``KV size`` from 0.4.5.post3 (:453); ``dtype: {torch dtype}, `` before ``#tokens`` from 0.5.13
  (:819). An NSA pool's ``KV size`` leaves the indexer keys out in 0.5.3 (the MLA constructor
  logs before the index buffers exist) and counts them from 0.5.3.post1 (SGLang PR #11309).
  From 0.5.17 another pool (a draft model's, or a labelled one) prints ``{label} KV Cache``.
- ``head_num`` is the KV heads per attention tensor-parallel rank, at least one
  (``ModelConfig.get_num_kv_heads``: ``max(1, heads // tp_size)``, called with
  ``get_attention_tp_size()``: option ``tp_size`` is ``--tp`` divided by ``--dp`` under
  ``--enable-dp-attention``).
- ``--kv-cache-dtype`` choices (``KV_CACHE_DTYPE_ERAS``, from server_args.py): "auto" is the
  model's dtype, or fp8_e4m3 when the checkpoint's quantization config says
  ``kv_cache_quant_algo: FP8`` (from 0.5.3), which a model file does not record.
- ``SWAKVPool`` (from 0.4.9; mem_cache/swa_memory_pool.py from 0.5.8): two MHA pools, one
  over the full-attention layers with ``size`` tokens and one over the window layers with
  ``size_swa`` (the log's "Use Sliding window memory pool. full_layer_tokens=...,
  swa_layer_tokens=..."), each printing its own line: the window pool's first until 0.5.17,
  the full pool's first from 0.5.17, labelled ``Full KV Cache`` and ``SWA KV Cache`` from
  0.5.19. Both ran with pages of 1 before 0.5.8 (0.5.6 memory_pool.py:1170); window
  layers with their own head shape (``swa_head_num``) from 0.5.7. Whether a model gets it
  depends on its architecture class and the release (Gemma 2/3/3n are held out in 0.5.3
  server_args.py:793, Llama 4 in model_runner.py:354), so a window model needs
  ``swa_tokens`` (the window pool's size) or ``disable_hybrid_swa_memory`` (one pool, as
  before 0.4.9). The two lines are the caches ``full_attention`` and ``sliding_window``.

The pool size (``#tokens``, max_total_num_tokens) comes from free memory and
``--mem-fraction-static``; here ``--context`` is that pool size. The page size defaults to 1
(attention backends that need pages, such as flashmla, raise it), and to 64 for DeepSeek-V3.2.
The parts of a single MHA pool carry the caches ``k`` and ``v`` (the line's K and V sizes).
Not covered: the mamba / linear-attention pools, an all-window pool, and the packed fp4 and
mxfp8 pools with their scales.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from kvrecords.kv.engines.result import (
    EngineError,
    EngineReport,
    NotCovered,
    Part,
    UnknownValue,
    check_choice,
    gib_as_printed,
    model_dtype_bytes,
)
from kvrecords.kv.geometry import Attention, IndexerKeys, Model, MultiHeadLatent, indexer_of

ENGINE = "sglang"

# Every release on PyPI from 0.4.0 to the newest, each wheel read (pip download sglang==V).
RELEASES = (
    *("0.4.0", "0.4.0.post1", "0.4.0.post2"),
    *("0.4.1", *(f"0.4.1.post{n}" for n in range(1, 8))),
    *("0.4.2", *(f"0.4.2.post{n}" for n in range(1, 5))),
    *("0.4.3", *(f"0.4.3.post{n}" for n in range(1, 5))),
    *("0.4.4", *(f"0.4.4.post{n}" for n in range(1, 5))),
    *("0.4.5", *(f"0.4.5.post{n}" for n in range(1, 4))),
    *("0.4.6", *(f"0.4.6.post{n}" for n in range(1, 6))),
    *("0.4.7", "0.4.7.post1", "0.4.8", "0.4.8.post1"),
    *("0.4.9", *(f"0.4.9.post{n}" for n in range(1, 7))),
    *("0.4.10", "0.4.10.post1", "0.4.10.post2"),
    *("0.5.1", *(f"0.5.1.post{n}" for n in range(1, 4))),
    *("0.5.2", "0.5.3", "0.5.3.post1", "0.5.3.post2", "0.5.3.post3"),
    *("0.5.4", *(f"0.5.4.post{n}" for n in range(1, 4))),
    *("0.5.5", *(f"0.5.5.post{n}" for n in range(1, 4))),
    *("0.5.6", "0.5.6.post1", "0.5.6.post2", "0.5.7", "0.5.8", "0.5.8.post1"),
    *("0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.12.post1"),
    *("0.5.13", "0.5.13.post1", "0.5.14", "0.5.15", "0.5.15.post1"),
    *("0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"),
)
LATEST = RELEASES[-1]
VERSION_FORMS = ("latest", f"a release from {RELEASES[0]} to {LATEST}, such as 0.5.6.post2")

Release = tuple[int, int, int, int]  # major, minor, patch, post

# The first release of each change (see the module docstring for where each was read).
LINE_PRINTED = (0, 4, 1, 6)
TOKENS_PRINTED = (0, 4, 3, 3)
PAGED_ROWS = (0, 4, 4, 0)
MLA_LINE_PRINTED = (0, 4, 5, 3)
NSA_POOL = (0, 5, 3, 0)
NSA_LINE_COUNTS_INDEX = (0, 5, 3, 1)
V_HEAD_DIM = (0, 5, 7, 0)
TRTLLM_RAW_ROWS = (0, 5, 9, 0)
BLACKWELL_FP8_TRTLLM = (0, 5, 10, 0)
DTYPE_PRINTED = (0, 5, 13, 0)
SWA_POOL = (0, 4, 9, 0)
SWA_HEAD_SHAPES = (0, 5, 7, 0)
SWA_PAGED = (0, 5, 8, 0)
SWA_FULL_FIRST = (0, 5, 17, 0)
SWA_LABELS = (0, 5, 19, 0)

# --kv-cache-dtype choices from each release on (server_args.py; from 0.5.16
# arg_groups/fields/model.py); 0.5.16 to 0.5.20 also list fp4_e2m1, last.
_DTYPES_0_5_21 = (
    "auto",
    "fp8_e5m2",
    "fp8_e4m3",
    "mxfp8",
    "bf16",
    "bfloat16",
    "nvfp4",
    "fp4_mx_block16",
)
KV_CACHE_DTYPE_ERAS: tuple[tuple[Release, tuple[str, ...]], ...] = (
    ((0, 4, 0, 0), ("auto", "fp8_e5m2")),
    ((0, 4, 1, 6), ("auto", "fp8_e5m2", "fp8_e4m3")),
    ((0, 5, 4, 0), ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16")),
    ((0, 5, 4, 3), ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
    ((0, 5, 16, 0), (*_DTYPES_0_5_21, "fp4_e2m1")),
    ((0, 5, 21, 0), _DTYPES_0_5_21),
)
KV_CACHE_DTYPES = tuple(dict.fromkeys(name for _, names in KV_CACHE_DTYPE_ERAS for name in names))
# The dtypes sized here: (bytes per value, torch dtype as the line prints it); 'auto' is the model's.
_SIZED = {
    "fp8_e4m3": (1, "torch.float8_e4m3fn"),
    "fp8_e5m2": (1, "torch.float8_e5m2"),
    "bf16": (2, "torch.bfloat16"),
    "bfloat16": (2, "torch.bfloat16"),
}
_TORCH_NAMES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}
NSA_BACKENDS = ("flashmla", "trtllm")
NSA_PAGE = 64
INDEX_QUANT_BLOCK = 128  # NSATokenToKVPool.quant_block_size: one fp32 scale per 128 values
INDEX_HEAD_DIM = 128  # the pool asserts it

_RELEASE_RE = re.compile(r"^v?(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\.post(\d{1,3}))?$")


class SglangOptions(NamedTuple):
    kv_cache_dtype: str = "auto"
    page_size: int | None = None  # None: the engine's default (1; 64 for DeepSeek-V3.2)
    tp_size: int = 1
    version: str = "latest"
    nsa_backend: str = "flashmla"  # DeepSeek-V3.2 fp8 rows: flashmla (scaled) or trtllm (raw)
    swa_tokens: int | None = None  # the window pool's #tokens (the log's swa_layer_tokens)
    disable_hybrid_swa_memory: bool = False  # one pool for window and full layers


def parse_release(text: str) -> tuple[str, Release]:
    """``latest``, ``0.5.6.post2`` or ``v0.5.6.post2`` as (release, key); a release the table
    does not hold is refused, naming those it does."""
    name = LATEST if text == "latest" else text.strip().removeprefix("v")
    match = _RELEASE_RE.match(name)
    if match is None:
        raise UnknownValue("--engine-version", text, VERSION_FORMS)
    if name not in RELEASES:  # a release not read is refused, never taken for another
        raise UnknownValue("--engine-version", text, VERSION_FORMS)
    major, minor, patch, post = match.groups()
    return name, (int(major), int(minor), int(patch), int(post or 0))


def kv_cache_dtypes(release: Release) -> tuple[str, ...]:
    """The --kv-cache-dtype choices of a release."""
    return next(names for start, names in reversed(KV_CACHE_DTYPE_ERAS) if release >= start)


class _Pool(NamedTuple):
    tokens: int
    extra: int  # rows per layer beyond the pool: the padded page
    page: int
    element_bytes: int
    dtype_printed: str  # the torch dtype the line prints
    tp_size: int

    @property
    def rows(self) -> int:
        return self.tokens + self.extra

    @property
    def rows_shown(self) -> str:
        return f"({self.tokens:,} + {self.extra}) rows"


def report(model: Model, context_tokens: int, options: SglangOptions) -> EngineReport:
    """The pool SGLang at ``options.version`` allocates for ``context_tokens`` tokens."""
    name, release = parse_release(options.version)
    check_choice("--kv-cache-dtype", options.kv_cache_dtype, kv_cache_dtypes(release))
    check_choice("nsa_backend", options.nsa_backend, NSA_BACKENDS)
    if context_tokens < 1 or options.tp_size < 1 or (options.page_size or 1) < 1:
        raise EngineError("the pool, --page-size and --tp-size must be at least 1")
    attention, latent = _pool_groups(model)
    notes: list[str] = []
    indexed = any(indexer_of(group) is not None for group in latent)
    pool = _pool(model, context_tokens, options, release, indexed, notes)
    if indexed:
        parts, printed = _nsa_pool(latent, pool, options, release, notes)
    elif latent:
        parts, printed = _latent_pool(latent, pool, release)
    else:
        parts, printed = _attention_pool(attention, pool, release, options, notes)
    if release < LINE_PRINTED or (latent and release < MLA_LINE_PRINTED):
        notes.append(f"SGLang {name} prints no size line for this pool")
    notes.append("one extra page of rows per layer: the padded page (slot 0 takes dummy writes)")
    if options.tp_size > 1:
        notes.append(f"figures are per rank of {options.tp_size}")
    return EngineReport(
        engine=ENGINE,
        version=name,
        version_note=(
            f"release {name}"
            + (" (the newest covered)" if name == LATEST else "")
            + f"; releases read: {RELEASES[0]} to {LATEST}"
        ),
        options=(
            ("kv_cache_dtype", options.kv_cache_dtype),
            ("page_size", str(pool.page)),
            ("tp_size", str(options.tp_size)),
            *((("nsa_backend", options.nsa_backend),) if indexed else ()),
        ),
        context_tokens=context_tokens,
        context_meaning="#tokens: the pool size (max_total_num_tokens) the log line states",
        parts=tuple(parts),
        printed=tuple(printed),
        notes=tuple(notes),
    )


def _pool_groups(model: Model) -> tuple[list[Attention], list[MultiHeadLatent]]:
    """The attention or the MLA layers of a model one SGLang token pool holds, or why not."""
    leaves = [group for group in model.leaf_groups() if group.layers]
    if any(group.kind in ("linear_attention", "mamba1", "mamba2") for group in leaves):
        raise NotCovered(
            "SGLang's mamba pools (MambaPool beside HybridLinearKVPool) are not covered: their"
            " conv and SSM states per request slot take shapes from each model's config class"
        )
    attention = [group for group in leaves if isinstance(group, Attention)]
    latent = [group for group in leaves if isinstance(group, MultiHeadLatent)]
    if len(attention) + len(latent) != len(leaves):
        raise NotCovered("layers that share another layer's cache or cache nothing are not covered")
    if attention and latent:
        raise NotCovered("a model with both MLA and other attention layers is not covered")
    if any(indexer_of(group) is not None for group in attention):
        raise NotCovered("an indexer beside non-MLA attention is not covered")
    return attention, latent


def _pool(
    model: Model,
    tokens: int,
    options: SglangOptions,
    release: Release,
    indexed: bool,
    notes: list[str],
) -> _Pool:
    """Rows, page and element type of the pool."""
    page = options.page_size
    if indexed:
        if page not in (None, NSA_PAGE):
            raise EngineError(f"SGLang runs DeepSeek-V3.2's pool with pages of {NSA_PAGE}")
        page = NSA_PAGE
    elif release < PAGED_ROWS and page not in (None, 1):
        raise NotCovered("--page-size arrived in SGLang 0.4.4")
    page = page or 1
    extra = page if release >= PAGED_ROWS else 1
    name = options.kv_cache_dtype
    if name in _SIZED:
        element_bytes, printed = _SIZED[name]
    elif name == "auto":
        element_bytes = model_dtype_bytes(model, notes)
        printed = _TORCH_NAMES.get(model.dtype or "bf16", "torch.bfloat16")
        if release >= NSA_POOL:
            notes.append(
                "'auto' becomes fp8_e4m3 when the checkpoint's quantization config says"
                " kv_cache_quant_algo FP8, which the model file does not record"
            )
    else:
        raise NotCovered(f"the packed {name} pool and its scale buffers were not read")
    return _Pool(tokens, extra, page, element_bytes, printed, options.tp_size)


def _attention_pool(
    groups: list[Attention],
    pool: _Pool,
    release: Release,
    options: SglangOptions,
    notes: list[str],
) -> tuple[list[Part], list[str]]:
    """MHATokenToKVPool, or SWAKVPool's two of them: K and V buffers, printed apart."""
    windows = [group for group in groups if group.window is not None]
    if not windows or release < SWA_POOL or options.disable_hybrid_swa_memory:
        if windows:
            notes.append("one pool: the window layers keep every token, as the full ones do")
        _one_shape(groups)
        return _mha(groups, pool, release, "", ("k", "v"))
    if options.swa_tokens is None:
        raise NotCovered(
            "SGLang gives this model one pool or a window pool (SWAKVPool) by its architecture"
            " class and release: state swa_tokens (the log's swa_layer_tokens) or"
            " disable_hybrid_swa_memory"
        )
    full = [group for group in groups if group.window is None]
    if not full:
        raise NotCovered("SGLang's all-window pool is not covered")
    if release < SWA_PAGED:  # SWAKVPool sets a page of 1 for both of its pools
        if pool.page != 1:
            notes.append(f"SGLang's window pool runs with pages of 1 before 0.5.8, not {pool.page}")
        pool = pool._replace(page=1, extra=1)
    if _one_shape(full) != _one_shape(windows) and release < SWA_HEAD_SHAPES:
        raise NotCovered("window layers with their own head shape are pooled from 0.5.7")
    labelled = release >= SWA_LABELS
    full_parts, full_lines = _mha(
        full, pool, release, "Full " if labelled else "", ("full_attention",) * 2
    )
    swa_pool = pool._replace(tokens=options.swa_tokens)
    swa_parts, swa_lines = _mha(
        windows, swa_pool, release, "SWA " if labelled else "", ("sliding_window",) * 2
    )
    if release < SWA_FULL_FIRST:
        return swa_parts + full_parts, swa_lines + full_lines
    return full_parts + swa_parts, full_lines + swa_lines


def _one_shape(groups: list[Attention]) -> tuple[int | None, int | None, int | None]:
    """The (kv heads, K dim, V dim) all of a pool's layers share."""
    shapes = {(group.kv_heads, group.head_dim, group.value_dim) for group in groups}
    if len(shapes) > 1:
        raise NotCovered("an SGLang MHA pool has one head shape; these layers have several")
    return shapes.pop()


def _mha(
    groups: list[Attention], pool: _Pool, release: Release, label: str, caches: tuple[str, str]
) -> tuple[list[Part], list[str]]:
    """One MHATokenToKVPool over ``groups``: its K and V parts (tagged with ``caches``) and
    its line."""
    parts: list[Part] = []
    sizes: list[int | None] = [0, 0]
    kind = "window" if any(group.window is not None for group in groups) else "attention"
    for group in groups:
        if group.head_dim != group.value_dim and release < V_HEAD_DIM:
            raise NotCovered("SGLang's pool sizes V by its own head dimension from 0.5.7")
        heads = None if group.kv_heads is None else max(1, group.kv_heads // pool.tp_size)
        for index, (which, dim) in enumerate((("K", group.head_dim), ("V", group.value_dim))):
            size = (
                None
                if heads is None or dim is None
                else group.layers * pool.rows * heads * dim * pool.element_bytes
            )
            how = (
                f"{group.layers} layers x {pool.rows_shown} x {heads if heads is not None else '?'}"
                f" heads x {dim if dim is not None else '?'} x {pool.element_bytes} B"
            )
            parts.append(
                Part(f"{which} buffer, {group.layers} {kind} layers", size, how, caches[index])
            )
            previous = sizes[index]
            sizes[index] = None if previous is None or size is None else previous + size
    k_size, v_size = sizes
    if k_size is None or v_size is None or release < LINE_PRINTED:
        return parts, []
    figures = f"K size: {gib_as_printed(k_size)} GB, V size: {gib_as_printed(v_size)} GB"
    return parts, [_line(pool, release, figures, label)]


def _latent_row(group: MultiHeadLatent) -> int | None:
    if group.kv_lora_rank is None or group.qk_rope_head_dim is None:
        return None
    return group.kv_lora_rank + group.qk_rope_head_dim


def _latent_parts(
    groups: list[MultiHeadLatent], pool: _Pool, row_bytes: dict[int, int | None], cache: str = ""
) -> tuple[list[Part], int | None]:
    """One latent buffer per MLA layer; ``row_bytes`` maps a group's index to its row's bytes."""
    parts: list[Part] = []
    total: int | None = 0
    for index, group in enumerate(groups):
        row = row_bytes[index]
        size = None if row is None else group.layers * pool.rows * row
        parts.append(
            Part(
                f"KV buffer, {group.layers} MLA layers",
                size,
                f"{group.layers} layers x {pool.rows_shown} x {row if row is not None else '?'} B a row",
                cache,
            )
        )
        total = None if total is None or size is None else total + size
    return parts, total


def _latent_pool(
    groups: list[MultiHeadLatent], pool: _Pool, release: Release
) -> tuple[list[Part], list[str]]:
    """MLATokenToKVPool: one buffer of latent + rope per MLA layer."""
    rows = {}
    for index, group in enumerate(groups):
        width = _latent_row(group)
        rows[index] = None if width is None else width * pool.element_bytes
    parts, total = _latent_parts(groups, pool, rows)
    if total is None or release < MLA_LINE_PRINTED:
        return parts, []
    return parts, [_line(pool, release, f"KV size: {gib_as_printed(total)} GB")]


def _nsa_pool(
    groups: list[MultiHeadLatent],
    pool: _Pool,
    options: SglangOptions,
    release: Release,
    notes: list[str],
) -> tuple[list[Part], list[str]]:
    """NSATokenToKVPool (DSATokenToKVPool): the MLA buffer, fp8 rows with scales, and the
    indexer's fp8 keys with one fp32 scale per 128 values, in pages of 64."""
    if release < NSA_POOL:
        raise NotCovered("SGLang sizes DeepSeek-V3.2's indexer keys (NSATokenToKVPool) from 0.5.3")
    dtype = options.kv_cache_dtype
    if dtype not in ("auto", "bf16", "bfloat16", "fp8_e4m3"):
        raise NotCovered(
            f"SGLang's DeepSeek-V3.2 pool in {dtype} is not covered (bf16 or fp8_e4m3)"
        )
    fp8 = dtype == "fp8_e4m3"
    raw = options.nsa_backend == "trtllm"
    if raw and release < TRTLLM_RAW_ROWS:
        raise NotCovered("the trtllm DSA backend's raw fp8 rows were read from 0.5.9")
    rows: dict[int, int | None] = {}
    for index, group in enumerate(groups):
        width = _latent_row(group)
        if width is None or group.kv_lora_rank is None or not fp8 or raw:
            rows[index] = None if width is None else width * pool.element_bytes
        else:  # fp8 latent, an fp32 scale per 128 of it, the rope part kept in bf16
            latent = group.kv_lora_rank
            rows[index] = latent + latent // INDEX_QUANT_BLOCK * 4 + (width - latent) * 2
    # 0.5.3 prints the latent buffers alone: a size of their own ('latent')
    cache = "latent" if release < NSA_LINE_COUNTS_INDEX else ""
    parts, latent_total = _latent_parts(groups, pool, rows, cache)
    pages = (pool.tokens + pool.page + 1) // pool.page
    index_total: int | None = 0
    for group in groups:
        keys = indexer_of(group)
        assert keys is not None  # every MLA group of an indexed model has one
        per_token = _index_key_bytes(keys)
        size = None if per_token is None else group.layers * pages * pool.page * per_token
        parts.append(
            Part(
                f"indexer key buffer, {group.layers} layers",
                size,
                f"{group.layers} layers x {pages:,} pages x {pool.page} x"
                f" {per_token if per_token is not None else '?'} B (fp8 key + fp32 scale)",
            )
        )
        index_total = None if index_total is None or size is None else index_total + size
    if fp8 and release >= BLACKWELL_FP8_TRTLLM and not raw:
        notes.append("on Blackwell SGLang defaults to the trtllm DSA backend: nsa_backend trtllm")
    if dtype == "auto":
        notes.append("on Blackwell (SM 10) SGLang turns 'auto' into fp8_e4m3 for DeepSeek-V3.2")
    if latent_total is None or index_total is None:
        return parts, []
    if release < NSA_LINE_COUNTS_INDEX:
        notes.append("the line counts the latent buffer only: the indexer keys are left out")
        return parts, [_line(pool, release, f"KV size: {gib_as_printed(latent_total)} GB")]
    printed = gib_as_printed(latent_total + index_total)
    return parts, [_line(pool, release, f"KV size: {printed} GB")]


def _index_key_bytes(keys: IndexerKeys) -> int | None:
    """Bytes of one token's indexer key in a layer: fp8 values and an fp32 scale per 128."""
    if keys.head_dim is None or keys.keys_per_token is None:
        return None
    if keys.head_dim != INDEX_HEAD_DIM or keys.keys_per_token != 1:
        raise NotCovered(f"SGLang's indexer pool holds one key of {INDEX_HEAD_DIM} per token")
    return keys.head_dim + keys.head_dim // INDEX_QUANT_BLOCK * 4


def _line(pool: _Pool, release: Release, figures: str, label: str = "") -> str:
    """The pool's line as this release prints it, around its size figures."""
    if release < TOKENS_PRINTED:
        return f"{label}KV Cache is allocated. {figures}."
    tokens = f"#tokens: {pool.tokens}, {figures}"
    if release < DTYPE_PRINTED:
        return f"{label}KV Cache is allocated. {tokens}"
    return f"{label}KV Cache is allocated. dtype: {pool.dtype_printed}, {tokens}"
