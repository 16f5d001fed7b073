"""TensorRT-LLM: the paged KV cache pool it allocates at start-up, and the lines it prints.

Read from TensorRT-LLM's source (facts only; no code carried over). The wheels are published on
NVIDIA's own index, which this project cannot reach; the PyPI sdists are stubs. The files were
read from stored copies of github.com/NVIDIA/TensorRT-LLM at commit b35ac1b6 (``version.py``:
1.2.0rc2) and at older stored versions of the same files (line numbers are not given: the files
were read as text, not from a checkout):

- ``cpp/tensorrt_llm/batch_manager/kvCacheManager.h``, ``KVCacheBlockPool``: a block holds
  ``numKvHeads x sizePerHead x tokensPerBlock`` values per layer and per K or V;
  ``WindowBlockManager`` groups the layers of one attention window by their KV head count, one
  pool per head count.
- ``kvCacheManager.cpp``, ``WindowBlockManager::allocatePools``: each pool is one tensor of
  ``[primary blocks, layers in the pool, kvFactor, block size]`` in the cache dtype;
  ``kvFactor`` is 2 (K and V), or 1 for ``CacheType::kSELFKONLY`` (MLA keeps one latent).
- ``kvCacheManager.cpp``, ``KVCacheManager::allocatePools``: the bytes printed are the sum of
  every pool's volume x element size; the token count printed is primary blocks x tokens per
  block; the lines are ``Number of tokens per block: %d.`` and ``[MemUsageChange] Allocated
  %0.2f GiB for max tokens in paged KV cache (%d).`` (bytes / 2^30). The older single-pool
  manager printed the same two lines from the one pool's shape.
- ``kvCacheManager.cpp``, ``BaseKVCacheManager::calculateMaxNumBlocks``: primary blocks are
  ``ceilDiv(max tokens, tokens per block)``, so the pool is a whole number of blocks; with
  several attention windows the free memory is split into equal shares per window size, each
  window getting its own blocks (variable sliding window attention).
- ``tensorrt_llm/_torch/pyexecutor/resource_manager.py``, ``KVCacheManager.__init__``: KV heads
  per rank are ``ceil(heads / tp_size)``; ``kv_factor`` 1 for ``SELFKONLY``; without
  ``kv_cache_config.max_attention_window`` the window vector is ``[max_seq_len]``, one window
  for every layer, so sliding-window layers keep the whole pool (the gpt-oss-120b log of
  1.1.0rc3 shows ``Adjusted max_attention_window_vec to [8224]``, one window).
- ``tensorrt_llm/_torch/pyexecutor/_util.py``, ``KvCacheCreator._create_kv_cache_manager``: MLA
  models get a ``SELFKONLY`` cache of one head of ``kv_lora_rank + qk_rope_head_dim`` values
  for every layer; the cache dtype is fp8 or nvfp4 when the checkpoint's quantization config
  says so, else the model's dtype; several window sizes only when
  ``kv_cache_config.max_attention_window`` holds more than one; a draft model for speculative
  decoding gets its own manager, which prints its own pair of lines.
- ``kvCacheManager.cpp``, ``BaseKVCacheManager::calculateFreeMemBytes``: the share of free
  memory is ``KvCacheConfig::kDefaultGpuMemFraction`` (0.9) unless set; ``max_tokens`` caps it.
- The 0.12 form (stored mid-2024 versions of ``kvCacheManager.cpp`` and ``kvCacheManager.h``,
  before the per-window manager): ``KVCacheManager::calculateMaxNumBlocks`` takes max tokens =
  fraction x (free memory + memory-pool free) / (``calculateCacheSizePerToken`` x
  ``BufferDataType(dtype).getSize()``), truncated, then ``ceilDiv(max tokens, tokens per
  block)`` primary blocks (``primary_blocks``); ``calculateCacheSizePerToken`` is ``getSumLocalKvHeads`` (KV heads
  summed over the rank's attention layers) x 2 x ``getSizePerHead``; ``BlockManager::
  allocatePools`` makes ``{blocks, layers, 2, kvHeads x sizePerHead x tokensPerBlock}`` tensors
  and ``KVCacheManager::allocatePools`` prints their volume x the same element size. fp8 has no
  case of its own (one byte). The block count and the printed bytes share one per-token
  figure, so a log whose figures imply another per-token size than the model's comes from
  another shape (docs/calibration.md: the 0.12 trtllm-bench log is a GPT-J-6B pool).
- ``tensorrt_llm/llmapi/llm_args.py``, ``KvCacheConfig.tokens_per_block``: default 32 (1.x).
  ``PluginConfig._tokens_per_block`` (engine builds) is 64 in an older stored version and 32 in
  later ones; logs date the change (``TOKENS_PER_BLOCK_DEFAULTS``).

``--context`` is the pool size in tokens, the number in parentheses of the printed line (how
many tokens fit is chosen by ``free_gpu_memory_fraction``, default 0.9, or ``max_tokens``; it is
rounded up to whole blocks here as the engine rounds). The byte figure of a printed token count
does not depend on the block size, since the count is always whole blocks.

Not covered (refused, never guessed): several attention windows in one pool set
(``max_attention_window`` per layer: the split follows free memory, not the token count),
nvfp4 caches (block-scale pools), K and V of different head sizes, layers of different head
sizes, KV-sharing layers, mamba and linear-attention state, sparse-attention indexers, MLA
before 1.0 (the TensorRT engine backend's layout was not read), and releases outside
``COVERED`` (1.3 release candidates were not read; they add a second, optional KV cache
manager). Layers a speculative
decoder adds to the target's pool (MTP, passed as ``spec_config`` to ``get_pp_layers``) are not
counted: the figures are for the model's own layers. The AutoDeploy backend is not covered: it
sizes its caches itself and its log prints the pool line of a placeholder manager (``Using fake
cache manager with head_dim=0`` then ``Allocated 0.00 GiB ... (3958272)`` in a 1.2.0rc5 log).
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

from kvrecords.kv.engine_names import TENSORRT_LLM_KV_CACHE_DTYPES as KV_CACHE_DTYPES
from kvrecords.kv.engines.result import (
    EngineError,
    EngineReport,
    NotCovered,
    Part,
    UnknownValue,
    bytes_of,
    cdiv,
    check_choice,
    gib_as_printed,
    model_dtype_bytes,
)
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent, indexer_of

ENGINE = "tensorrt-llm"

# Releases whose accounting this model follows: the earliest is the oldest release a
# calibrating log names (0.12.0.dev2024073000); the newest is the newest stable release on PyPI
# (1.2.1; the source read is 1.2.0rc2). The print and the pool layout are the same throughout.
COVERED = ((0, 12), (1, 2))  # (major, minor), both ends included
LATEST = "1.2.1"
PYTORCH_DEFAULT = (1, 0, 0)  # from 1.0 the LLM API and trtllm-serve run the PyTorch backend
DEFAULT_FREE_FRACTION = 0.9  # KvCacheConfig::kDefaultGpuMemFraction
# Tokens per block when not set, from the first release with that default. 0.x engine builds
# printed 64 in the logs of 0.12.0.dev (July 2024) and of a February 2025 build; issue #4275's
# 0.19.0 engine, built without --tokens_per_block, prints 32; 1.x's KvCacheConfig defaults to 32.
# Whether 0.18.x builds default to 64 or 32 is not established (a note says so).
TOKENS_PER_BLOCK_DEFAULTS = (((0, 12, 0), 64), ((0, 19, 0), 32))
UNSURE_BLOCK_DEFAULT = (0, 18)
_VERSION_RE = re.compile(
    r"^v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:(?:rc|\.dev|\.post|\.?[a-z]).{0,40})?$"
)
VERSION_FORMS = (
    "latest (1.2.1)",
    "a release from 0.12.0 to 1.2.x, such as 0.17.0, 1.1.0rc3 or 0.12.0.dev2024073000",
)


class TensorRtLlmOptions(NamedTuple):
    kv_cache_dtype: str = "auto"
    tokens_per_block: int | None = None
    tensor_parallel_size: int = 1
    max_attention_window: tuple[int, ...] | None = None  # KvCacheConfig's, repeated over layers
    version: str = "latest"


def parse_version(text: str) -> tuple[int, int, int]:
    """``1.1.0rc3``, ``0.12.0.dev2024073000`` or ``latest`` as (major, minor, patch); a release
    outside ``COVERED`` is refused with the covered range named."""
    match = _VERSION_RE.match(LATEST if text == "latest" else text.strip())
    if match is None:
        raise UnknownValue("--engine-version", text, VERSION_FORMS)
    version = int(match[1]), int(match[2]), int(match[3] or 0)
    if not COVERED[0] <= version[:2] <= COVERED[1]:  # never taken for another release
        raise UnknownValue("--engine-version", text, VERSION_FORMS)
    return version


class _Pool(NamedTuple):
    """What sizes the pool: the release, tokens per block, bytes per value, cached groups."""

    version: tuple[int, int, int]
    tokens_per_block: int
    element_bytes: int
    groups: list[Attention | MultiHeadLatent]


def _pool(model: Model, options: TensorRtLlmOptions, notes: list[str]) -> _Pool:
    version = _checked_version(options)
    default_block = next(
        size for start, size in reversed(TOKENS_PER_BLOCK_DEFAULTS) if version >= start
    )
    return _Pool(
        version,
        options.tokens_per_block or default_block,
        _element_bytes(model, options.kv_cache_dtype, notes),
        _groups(model, version >= PYTORCH_DEFAULT),
    )


def report(model: Model, context_tokens: int, options: TensorRtLlmOptions) -> EngineReport:
    """The primary KV pool of ``context_tokens`` tokens (rounded up to whole blocks)."""
    if context_tokens < 1:
        raise EngineError("the pool must be at least 1 token")
    notes: list[str] = []
    version, tokens_per_block, element_bytes, groups = _pool(model, options, notes)
    blocks = cdiv(context_tokens, tokens_per_block)
    pool_tokens = blocks * tokens_per_block
    parts = tuple(
        _part(group, blocks, tokens_per_block, element_bytes, options) for group in groups
    )
    if pool_tokens != context_tokens:
        notes.append(
            f"{context_tokens:,} tokens round up to {blocks:,} blocks of {tokens_per_block}"
            f" ({pool_tokens:,} tokens), as calculateMaxNumBlocks rounds"
        )
    if any(isinstance(group, Attention) and group.window is not None for group in groups):
        notes.append(
            "sliding-window layers keep the whole pool: with the default max_attention_window"
            " every layer shares one window (max_seq_len); several windows are not covered"
        )
    if options.tokens_per_block is None:
        unsure = version[:2] == UNSURE_BLOCK_DEFAULT
        notes.append(
            f"tokens per block {tokens_per_block}: the default of this release"
            + (
                " (assumed: 0.18.x may default to 32); give --tokens-per-block as the log prints it"
                if unsure
                else ""
            )
        )
    if options.tensor_parallel_size > 1:
        notes.append(f"figures are per rank of {options.tensor_parallel_size}")
    total = bytes_of(parts)
    printed = (
        ()
        if total is None
        else (
            f"Number of tokens per block: {tokens_per_block}.",
            f"[MemUsageChange] Allocated {gib_as_printed(total)} GiB for max tokens in paged KV"
            f" cache ({pool_tokens}).",
        )
    )
    return EngineReport(
        engine=ENGINE,
        version=".".join(map(str, version)),
        version_note="0.12.0 to 1.2.x: one pool per KV head count, bytes = pool volume",
        options=(
            ("kv_cache_dtype", options.kv_cache_dtype),
            ("tokens_per_block", str(tokens_per_block)),
            ("tensor_parallel_size", str(options.tensor_parallel_size)),
        ),
        context_tokens=context_tokens,
        context_meaning="max tokens in the paged KV cache: the pool size the log line states",
        parts=parts,
        printed=printed,
        notes=tuple(notes),
    )


def primary_blocks(
    model: Model,
    free_bytes: int,
    options: TensorRtLlmOptions,
    fraction: float = DEFAULT_FREE_FRACTION,
) -> int:
    """The primary pool's blocks when ``free_bytes`` are free, as 0.x's
    ``KVCacheManager::calculateMaxNumBlocks`` sizes them: max tokens = (SizeType32) (fraction x
    free / bytes per token), the fraction a C++ float, then ``ceilDiv`` by the tokens per block.
    ``free_bytes`` is what the log prints as ``available`` (free GPU memory plus the memory
    pool's free bytes); a ``max_tokens`` below the result caps it, which ``report`` takes."""
    if free_bytes < 0 or not 0 < fraction < 1:
        raise EngineError("free memory must be at least 0 and the fraction between 0 and 1")
    pool = _pool(model, options, [])
    if pool.version >= PYTORCH_DEFAULT:
        raise NotCovered(
            "from 1.0 each window's blocks come from an allotted byte figure less extra costs"
            " (BaseKVCacheManager::calculateMaxNumBlocks), which this model does not take;"
            " give the pool's tokens instead"
        )
    per_token = bytes_of(tuple(_part(g, 1, 1, pool.element_bytes, options) for g in pool.groups))
    if per_token is None:
        raise NotCovered("the bytes per token need a dimension the model file does not give")
    as_float = struct.unpack("f", struct.pack("f", fraction))[0]  # std::optional<float>
    return cdiv(int(as_float * free_bytes / per_token), pool.tokens_per_block)


def _checked_version(options: TensorRtLlmOptions) -> tuple[int, int, int]:
    """The release, once every option is one the engine model covers."""
    check_choice("--kv-cache-dtype", options.kv_cache_dtype, KV_CACHE_DTYPES)
    version = parse_version(options.version)
    if options.tensor_parallel_size < 1:
        raise EngineError("--tensor-parallel-size must be at least 1")
    if options.tokens_per_block is not None and options.tokens_per_block < 1:
        raise EngineError("--tokens-per-block must be at least 1")
    windows = set(options.max_attention_window or ())
    if any(window < 1 for window in windows):
        raise EngineError("max_attention_window sizes must be at least 1")
    if len(windows) > 1:
        raise NotCovered(
            "several max_attention_window sizes (variable sliding window attention): each window"
            " gets its own blocks from an equal share of free memory, which the pool size alone"
            " does not fix; not covered"
        )
    if options.kv_cache_dtype == "nvfp4":
        raise NotCovered("nvfp4 caches add block-scale pools whose printed size was not checked")
    return version


def _element_bytes(model: Model, dtype: str, notes: list[str]) -> int:
    """Bytes per cached value: the model dtype for 'auto' (the checkpoint's), else the dtype's."""
    if dtype == "auto":
        return model_dtype_bytes(model, notes)
    return 2 if dtype in ("float16", "bfloat16") else 1


def _groups(model: Model, pytorch_default: bool) -> list[Attention | MultiHeadLatent]:
    """The cache-holding layer groups, refusing what the pool layout read does not cover."""
    leaves = [group for group in model.leaf_groups() if group.layers and group.kind != "none"]
    covered: list[Attention | MultiHeadLatent] = []
    for group in leaves:
        if indexer_of(group) is not None:
            raise NotCovered("sparse-attention indexer caches were not read; not covered")
        if isinstance(group, MultiHeadLatent):
            if not pytorch_default:
                raise NotCovered("MLA before 1.0 (TensorRT engine backend) was not read")
            covered.append(group)
        elif isinstance(group, Attention):
            if group.head_dim != group.value_dim:
                raise NotCovered("K and V of different head sizes (one sizePerHead) not covered")
            covered.append(group)
        else:
            raise NotCovered(f"{group.kind} layers are not covered by the TensorRT-LLM model")
    if any(isinstance(group, MultiHeadLatent) for group in covered) and any(
        isinstance(group, Attention) for group in covered
    ):
        raise NotCovered("a model with both MLA and other attention layers is not covered")
    head_dims = {group.head_dim for group in covered if isinstance(group, Attention)}
    if len(head_dims) > 1:
        raise NotCovered("layers of different head sizes (one sizePerHead per pool) not covered")
    if not covered:
        raise NotCovered("the model caches nothing TensorRT-LLM pages")
    return covered


def _part(
    group: Attention | MultiHeadLatent,
    blocks: int,
    tokens_per_block: int,
    element_bytes: int,
    options: TensorRtLlmOptions,
) -> Part:
    """One layer group's share of the pool: blocks x layers x kvFactor x heads x size x tokens."""
    pool = f"{blocks:,} blocks x {group.layers} layers"
    if isinstance(group, MultiHeadLatent):
        width = (
            None
            if group.kv_lora_rank is None or group.qk_rope_head_dim is None
            else group.kv_lora_rank + group.qk_rope_head_dim
        )
        size = None if width is None else blocks * group.layers * width * tokens_per_block
        how = (
            f"{pool} x 1 (K only) x 1 head x (kv_lora_rank + rope) {width or '?'} x"
            f" {tokens_per_block} tokens x {element_bytes} B"
        )
        return Part(
            f"latent blocks, {group.layers} MLA layers",
            None if size is None else size * element_bytes,
            how,
        )
    heads = None if group.kv_heads is None else cdiv(group.kv_heads, options.tensor_parallel_size)
    size = (
        None
        if heads is None or group.head_dim is None
        else blocks * group.layers * 2 * heads * group.head_dim * tokens_per_block
    )
    kind = "sliding-window" if group.window is not None else "attention"
    how = (
        f"{pool} x 2 (K, V) x {heads if heads is not None else '?'} heads x"
        f" {group.head_dim if group.head_dim is not None else '?'} x {tokens_per_block} tokens x"
        f" {element_bytes} B"
    )
    return Part(
        f"K and V blocks, {group.layers} {kind} layers",
        None if size is None else size * element_bytes,
        how,
    )
