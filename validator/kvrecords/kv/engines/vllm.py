"""vLLM (V1 engine): the pages one request holds, and the figures vLLM prints at start-up.

One module of about 1,200 lines on purpose: the release table and the page rules it switches
read each other (a rule names the release it starts in, a row names the rules it changes), so
splitting them would leave each half pointing into the other.

Read from the released wheels of 0.8.0 to 0.34.0 (``COVERED`` lists each release read; the
``RELEASES`` table says what changed when, with the file each fact is in). Facts only; no code
carried over:

- ``vllm/v1/kv_cache_interface.py``: ``AttentionSpec.page_size_bytes`` (a block of
  ``block_size`` tokens holds K and V for ``num_kv_heads`` heads: ``block_size x num_kv_heads x
  (head_size + head_size_v) x dtype bytes``, plus ``2 x block_size x num_kv_heads x 4`` bytes of
  fp32 scales for the ``*_per_token_head`` dtypes); ``MLAAttentionSpec`` (one vector of
  ``kv_lora_rank + qk_rope_head_dim`` per token, or 656 bytes per token with ``fp8_ds_mla``: 512
  fp8 latent values, 16 bytes of fp32 scales, 64 bf16 rope values); ``TQFullAttentionSpec``
  (``block_size x num_kv_heads x tq_slot_size``); ``FullAttentionSpec.max_memory_usage_bytes``
  (``cdiv(max_model_len, block_size)`` pages); ``SlidingWindowSpec.max_memory_usage_bytes``
  (``cdiv(min(window - 1 + in-flight tokens, max_model_len), block_size) + 1`` pages, the
  in-flight tokens one batch up to 0.25.x and ``VllmConfig.max_in_flight_tokens`` from 0.26.0:
  2 batches with async scheduling); ``MambaSpec`` (per request one page of state with
  ``mamba_cache_mode`` none, 2 with 'align', plus ``num_prefill_checkpoint_blocks``; padded to
  ``page_size_padded``).
- ``vllm/model_executor/models/config.py`` (``HybridAttentionMambaModelConfig``) up to 0.19.x,
  ``vllm/platforms/interface.py`` (``_align_hybrid_block_size``) from 0.20.0: for hybrid
  models the attention block size becomes ``step x cdiv(mamba_page, step x attention bytes per
  token)`` (when not set larger) and the mamba page is padded to the attention page; ``step`` is
  16, from 0.20.0 max(16, block_size), and a multiple of 64 with FlashInfer GDN checkpoints;
  ``MambaModelConfig``: prefix caching on sets ``mamba_cache_mode`` ('all' for
  SupportsMambaPrefixCaching models up to 0.27.0, else 'align'); ``DeepseekV32ForCausalLM``:
  an fp8 cache becomes ``fp8_ds_mla`` for DeepSeek-V3.2 (``index_topk`` in the config).
- ``vllm/platforms/cuda.py`` and the MLA backends' kernel block sizes: FlashMLA 64 (and
  FlashMLASparse for ``index_topk`` models), FlashInfer MLA 64, CUTLASS MLA 128, Triton MLA
  any multiple of 16 (the default block size).
- ``vllm/engine/arg_utils.py`` ``get_batch_defaults``: the default ``max_num_batched_tokens``
  by device memory and usage context (``default_max_num_batched_tokens``).
- ``vllm/model_executor/models/deepseek_v2.py``, ``DeepseekV32IndexerCache`` and ``Indexer``: the
  V3.2 lightning indexer keeps its own key cache per MLA layer, an ``MLAAttentionSpec`` with one
  head of uint8, ``head_dim + head_dim // quant_block_size x 4`` bytes per token: 128 fp8 values
  and one fp32 scale = 132 bytes. The model file's ``indexer`` on an MLA group says the layers
  have it (``arithmetic.indexer_fp8_bytes``); an indexer on other attention is not covered.
- ``vllm/model_executor/layers/quantization/turboquant/config.py``, ``TurboQuantConfig``: the
  presets ``turboquant_k8v4`` (fp8 keys, 4-bit values), ``turboquant_4bit_nc``,
  ``turboquant_k3v4_nc``, ``turboquant_3bit_nc``; a slot per head and token is the packed key
  (``head_dim`` bytes for fp8 keys, else ``ceil(head_dim x bits / 8)`` + a 2-byte fp16 norm)
  plus the packed value (``ceil(head_dim x bits / 8)`` + 4 bytes of fp16 scale and zero),
  rounded up to an even count; ``get_boundary_skip_layers`` keeps the first and last 2 layers
  of a dense model in the model dtype (``kv_cache_dtype_skip_layers`` -> "auto") and none of a
  hybrid model. PR #38479's description lists slot sizes 2 bytes larger for the MSE-key
  presets (136, 120, 104 at head_dim 128: a 4-byte key norm); this model follows the stored
  config.py (134, 118, 102) and states the difference.
- ``vllm/v1/core/kv_cache_utils.py``: ``get_kv_cache_groups`` (one group when every layer is
  full attention, ``UniformTypeKVCacheSpecs`` summing per-layer pages; otherwise groups of
  ``min`` layers per type, or ``max`` when it is under 1.5 x ``min``, padded with empty layers,
  "Add %d padding layers, may waste at most %.2f%% KV cache memory"); ``get_num_blocks``
  (available // page // layers per group); ``get_max_concurrency_for_kv_cache_config``;
  ``_report_kv_cache_config``.

What "GPU KV cache size: N tokens" meant, by release (``RELEASES``, ``TOKEN_FIGURES``):
0.8.0-0.9.x ``num_blocks x block_size``; 0.10.0-0.20.0 ``num_blocks // number of KV cache
groups x smallest block size``, which for hybrid models is not what one request can hold
(issue #40691 on 0.19.0); from 0.21.0 ``int(max_concurrency x max_model_len)``
(``get_kv_cache_capacity``). Counts print with thousands separators throughout; from 0.28.0
the token and concurrency figures share one line. The 'Maximum concurrency' beside it is the
token figure / max_model_len up to 0.9.0 (``_get_kv_cache_config_uniform_type``), then
num_blocks / the blocks one request takes summed over the groups
(``get_max_concurrency_for_kv_cache_config``; ``printed_concurrency`` reads it back from a
printed pool). GiB figures print ``%.2f`` up to 0.13.0 and ``round(x, 2)`` (``format_gib``,
'8.0') from 0.14.0. 0.7.x and older (V0's "# GPU blocks: N") are not covered.

The sliding-window savings and V1 hybrid (mamba / linear attention) support date from the
hybrid allocator (taken as 0.10.0: 0.9.0 turns window layers into full ones, 0.9.2 already
groups them, ``_get_kv_cache_config_uniform_page_size``; 0.9.1 and 0.9.2 are not covered);
TurboQuant from 0.20.0 for dense models and 0.21.0 for hybrid ones (PR #39931), as public
deployment notes state; their first releases are not established from the source. ``nvfp4``
is not covered (``nvfp4_kv_cache_full_dim`` not read). Speculative decoding adds
``num_speculative_tokens`` state pages per request to each mamba or linear-attention layer from
0.15.0 (``MambaSpec.num_speculative_blocks``); before, a state layer keeps one page of
``mamba_block_size`` = max_model_len. Not modelled: the draft model's own cache, pipeline
parallelism (max_concurrent_batches is pp_size + 1 with async scheduling), an 'auto' cache that
a checkpoint's quantization_config turns into fp8 (``resolve_kv_cache_dtype_string``), the
token figure multiplied by the context-parallel world size (decode, and from 0.12.0
prefill, context parallelism; 0.11.0 to 0.20.x).

``--context`` is ``max_model_len``: the pages one request of that many tokens holds.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import NamedTuple

from kvrecords.kv.arithmetic import indexer_fp8_bytes, mla_fp8_bytes
from kvrecords.kv.engine_names import VLLM_KV_CACHE_DTYPES as KV_CACHE_DTYPES
from kvrecords.kv.engines.result import (
    EngineError,
    EngineReport,
    NotCovered,
    NotServed,
    Part,
    UnknownValue,
    cdiv,
    check_choice,
    gib_as_printed,
    model_dtype_bytes,
    state_split,
)
from kvrecords.kv.geometry import Attention, LeafGroup, Model, MultiHeadLatent

ENGINE = "vllm"

MAMBA_SSM_DTYPES = ("auto", "float32", "bfloat16", "float16")
# the first release whose CacheDType (config/cache.py) accepts a --kv-cache-dtype; the others
# (auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2) are accepted by every covered release
DTYPE_SINCE: dict[str, tuple[int, int, int]] = {
    "fp8_inc": (0, 10, 0),
    "fp8_ds_mla": (0, 11, 1),
    "int8_per_token_head": (0, 20, 0),
    "fp8_per_token_head": (0, 20, 0),
    **dict.fromkeys(("turboquant_k8v4", "turboquant_4bit_nc"), (0, 20, 0)),  # dense models
    **dict.fromkeys(("turboquant_k3v4_nc", "turboquant_3bit_nc"), (0, 20, 0)),
}

# preset -> (key bits, value bits); 8 = fp8 keys
TURBOQUANT_PRESETS: dict[str, tuple[int, int]] = {
    "turboquant_k8v4": (8, 4),
    "turboquant_4bit_nc": (4, 4),
    "turboquant_k3v4_nc": (3, 4),
    "turboquant_3bit_nc": (3, 3),
}
TQ_KEY_NORM_BYTES = 2  # config.py (commit 1471680b); PR #38479's table implies 4
TQ_BOUNDARY_LAYERS = 2  # get_boundary_skip_layers(n=2)
KERNEL_BLOCK_ALIGNMENT = 16  # non-MLA attention backends (HybridAttentionMambaModelConfig)

HYBRID_ALLOCATOR = (0, 10, 0)
TURBOQUANT_HYBRID = (0, 21, 0)
V32_SUPPORT = (0, 11, 0)
MAMBA_ALIGN_MODE = (0, 15, 0)  # config/cache.py: MambaCacheMode "all" | "align" | "none"
# models/config.py MambaModelConfig: 0.11.0 turns prefix caching off for every hybrid model; from
# 0.11.1 only for those without SupportsMambaPrefixCaching (the mamba kinds declare it, Gated
# DeltaNet models do not), whose prefix caching before 0.15.0 is not covered
MAMBA_PREFIX_CACHING = (0, 11, 1)
PERFORMANCE_MODE = (0, 17, 0)  # arg_utils.py: performance_mode "throughput" doubles the batch
# 'align' mode adds a prefill checkpoint page (MambaSpec.num_prefill_checkpoint_blocks = 1):
# MambaMixer2.get_kv_cache_spec from 0.32.0; Qwen GDN with the FlashInfer prefill kernel from
# 0.33.0 (qwen_gdn_linear_attn.py), whose checkpoints also make blocks multiples of
# FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (platforms/interface.py _align_hybrid_block_size)
MAMBA2_CHECKPOINT_PAGE = (0, 32, 0)
GDN_CHECKPOINT_PAGE = (0, 33, 0)
GDN_CHECKPOINT_ALIGNMENT = 64
# the hybrid block grows in steps of 16 (models/config.py HybridAttentionMambaModelConfig) up to
# 0.19.x; from 0.20.0 of max(the backend's smallest kernel block, block_size) (platforms/interface.py)
HYBRID_STEP_FOLLOWS_BLOCK = (0, 20, 0)
MLA_HYBRID_STEP_128 = (0, 27, 0)  # MLA + mamba hybrids: blocks a multiple of 128 tokens
GDN_PREFILL_BACKENDS = ("triton", "flashinfer")


class Release(NamedTuple):
    """What the releases from ``first`` on do that sizes the cache or its printed lines."""

    first: tuple[int, int, int]
    token_figure: str  # the 'GPU KV cache size' era, a key of TOKEN_FIGURES
    default_block_size: int  # CacheConfig block size when --block-size is not given
    window_in_flight: bool  # SlidingWindowSpec reserves max_in_flight_tokens, not one batch
    hybrid_prefix_caching: bool  # hybrid (mamba / GDN) models default to prefix caching on
    mamba_all_mode: bool  # prefix caching puts SupportsMambaPrefixCaching models in 'all' mode
    gib_rounded: bool  # GiB figures as round(x, 2) ('8.0'), not '%.2f' ('8.00')
    one_capacity_line: bool  # tokens and concurrency in one log line
    large_gpu_batch: bool  # a 16,384-token server batch on devices of 160 GiB or more


# Read from the released wheels (vllm/v1/core/kv_cache_utils.py, v1/kv_cache_interface.py,
# config/cache.py, config/vllm.py, config/model.py, engine/arg_utils.py,
# model_executor/models/config.py, v1/worker/gpu_worker.py); each row holds until the next.
RELEASES: tuple[Release, ...] = (
    # 0.8.0 (kv_cache_utils.py:535): num_blocks x block_size, printed with f"{:,}"
    Release((0, 8, 0), "blocks-x-size", 16, False, False, False, False, False, False),
    # 0.10.0 (kv_cache_utils.py:995): num_blocks // len(groups) x min block size
    Release((0, 10, 0), "per-group", 16, False, False, False, False, False, False),
    # 0.14.0 (gpu_worker.py): 'Available KV cache memory: %s GiB' of format_gib = round(x, 2)
    Release((0, 14, 0), "per-group", 16, False, False, True, True, False, False),
    # 0.21.0 (kv_cache_utils.py get_kv_cache_capacity): int(max_concurrency x max_model_len)
    Release((0, 21, 0), "concurrency", 16, False, False, True, True, False, False),
    # 0.26.0: SlidingWindowSpec.max_admission_blocks_per_request takes
    # VllmConfig.max_in_flight_tokens = max_concurrent_batches (2 with async scheduling, the
    # default since 0.11.2) x max_num_batched_tokens; ModelConfig.is_prefix_caching_supported
    # returns True for generative hybrid models ("Generative hybrid models support prefix caching")
    Release((0, 26, 0), "concurrency", 16, True, True, True, True, False, False),
    # 0.28.0: update_kv_cache_capacity logs "GPU KV cache size: %s tokens, Maximum concurrency
    # for %s tokens per request: %.2fx" as one line; get_batch_defaults adds the >= 160 GiB tier;
    # MambaModelConfig sets mamba_cache_mode 'align' for every hybrid ('all' only on request)
    Release((0, 28, 0), "concurrency", 16, True, True, False, True, True, True),
    # 0.34.0: CacheConfig.DEFAULT_BLOCK_SIZE = 64
    Release((0, 34, 0), "concurrency", 64, True, True, False, True, True, True),
)
# Every release whose source was read for the table; others are refused, never guessed.
COVERED: tuple[tuple[int, int, int], ...] = (
    (0, 8, 0),
    (0, 8, 5),
    (0, 9, 0),
    (0, 10, 0),
    (0, 10, 1),
    (0, 10, 2),
    (0, 11, 0),
    (0, 11, 1),
    (0, 11, 2),
    *sorted({(0, minor, 0) for minor in range(12, 35)} | {(0, 25, 1)}),
)
LATEST = max(COVERED)
TOKEN_FIGURES = {
    "blocks-x-size": "tokens = num_blocks x block_size",
    "per-group": "tokens = num_blocks // KV cache groups x smallest block size",
    "concurrency": "tokens = int(max_concurrency x max_model_len)",
}
_VERSION_RE = re.compile(
    r"^v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?"
    r"(?P<pre>(?:\.?(?:dev|rc|a|b)\d{0,6}){1,2})?(?:\.post\d{1,3})?(?:\+[0-9A-Za-z.]{1,60})?$"
)
VERSION_FORMS = (
    "latest",
    "a release such as 0.10.1 or 0.29.0 (a local build such as 0.11.0+nv25.11 is its release)",
)
# SupportsMambaPrefixCaching in 0.26.0 (jamba, mamba, mamba2, nemotron_h, zamba2,
# granitemoehybrid, falcon_h1); Gated DeltaNet models do not declare it
ALL_MODE_KINDS = ("mamba1", "mamba2")
MLA_BACKEND_BLOCKS = {  # platforms/cuda.py (0.11.0) and each backend's supported kernel blocks
    "FLASHMLA": 64,
    "FLASHINFER_MLA": 64,
    "CUTLASS_MLA": 128,
    "TRITON_MLA": 0,  # MultipleOf(16): the release's default block size
}


class VllmOptions(NamedTuple):
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    version: str = "latest"
    max_num_batched_tokens: int | None = None  # None: the release's default for the device
    tensor_parallel_size: int = 1
    mamba_ssm_cache_dtype: str = "auto"
    disable_hybrid_kv_cache_manager: bool = False
    enable_prefix_caching: bool | None = None  # None: the release's default for the model kind
    async_scheduling: bool = True  # the default for generative models since 0.11.2
    device_memory_gib: int | None = None  # sizes the default max_num_batched_tokens
    device_name: str = ""  # 'a100' in it keeps the small default (arg_utils.py, PR #17885)
    usage_context: str = "openai_api_server"  # 'vllm serve'; llm_class for the LLM class
    performance_mode: str = "balanced"  # 'throughput' doubles the default batch (0.17.0+)
    attention_backend: str | None = None  # MLA: FLASHMLA (default), CUTLASS_MLA, ...
    gdn_prefill_backend: str = "triton"  # flashinfer on Hopper (and SM100/120 with CUDA 13)
    num_speculative_tokens: int = 0  # --speculative-config: a state page per draft token


def rule_releases() -> tuple[str, ...]:
    """One release for each span of covered releases that every rule here treats alike (each
    table row and each first release a rule names), newest first: a reading of a record whose
    release is not stated tries these."""
    firsts = {row.first for row in RELEASES} | set(DTYPE_SINCE.values())
    firsts |= {
        HYBRID_ALLOCATOR,
        TURBOQUANT_HYBRID,
        V32_SUPPORT,
        MAMBA_ALIGN_MODE,
        MAMBA_PREFIX_CACHING,
        PERFORMANCE_MODE,
        MAMBA2_CHECKPOINT_PAGE,
        GDN_CHECKPOINT_PAGE,
        HYBRID_STEP_FOLLOWS_BLOCK,
        MLA_HYBRID_STEP_128,
    }
    return tuple(".".join(map(str, release)) for release in sorted(firsts, reverse=True))


def parse_version(text: str) -> tuple[int, int, int]:
    """``0.10.1``, ``v0.11.0+582e4e37.nv25.11`` or ``latest`` as a covered release."""
    if text == "latest":
        return LATEST
    match = _VERSION_RE.match(text.strip())
    covered = tuple(".".join(map(str, v)) for v in COVERED)
    if match is None:
        raise UnknownValue("--engine-version", text, VERSION_FORMS)
    release = (int(match[1]), int(match[2]), int(match[3] or 0))
    # A release not read, or a pre-release between releases the table tells apart, is refused
    # as a value outside the table, never taken for another release.
    if release not in COVERED or (match["pre"] and not _settled(release)):
        latest = ".".join(map(str, LATEST))
        raise UnknownValue("--engine-version", text, (f"latest ({latest})", *covered))
    return release


def _settled(release: tuple[int, int, int]) -> bool:
    """A pre-release of ``release`` is sized as ``release`` when the covered release before it
    falls in the same table row: whatever commit it is, the facts on both sides agree."""
    earlier = [version for version in COVERED if version < release]
    return release in COVERED and bool(earlier) and release_of(earlier[-1]) == release_of(release)


def release_of(version: tuple[int, int, int]) -> Release:
    """The table row a covered release falls in."""
    return [row for row in RELEASES if version >= row.first][-1]


def token_figure_era(version: tuple[int, int, int]) -> tuple[str, str]:
    era = release_of(version).token_figure
    return era, TOKEN_FIGURES[era]


def default_max_num_batched_tokens(version: tuple[int, int, int], options: VllmOptions) -> int:
    """EngineArgs.get_batch_defaults: the per-step token budget when none is given.

    CUDA devices of 70 GiB or more whose name lacks 'a100' get 8,192 (serve) / 16,384 (LLM
    class), others 2,048 / 8,192; from 0.28.0 devices of 160 GiB or more get 16,384 for both;
    performance_mode 'throughput' doubles it (0.17.0+). An RTX 5090 (32 GiB) serving in
    throughput mode gets 4,096.
    """
    memory = options.device_memory_gib or 0
    serve = options.usage_context == "openai_api_server"
    if release_of(version).large_gpu_batch and memory >= 160:
        tokens = 16384
    elif memory >= 70 and "a100" not in options.device_name.lower():
        tokens = 8192 if serve else 16384
    else:
        tokens = 2048 if serve else 8192
    if options.performance_mode == "throughput":
        if version < PERFORMANCE_MODE:
            raise NotCovered("performance_mode is not known to vLLM before 0.17.0")
        tokens *= 2
    return tokens


class _Spec(NamedTuple):
    """Layers that share one page layout (vLLM's KVCacheSpec), per request."""

    type: str  # "full", "window", "state"
    layers: int
    per_token: int | None  # bytes per token per layer (attention types)
    state: int | None  # bytes of state per layer, unpadded (state type)
    window: int | None
    name: str
    shape: str


def _dtype_bytes(name: str, model: Model, notes: list[str]) -> int:
    """Element bytes of a kv_cache_dtype (and of 'auto', the model dtype)."""
    if name == "auto":
        return model_dtype_bytes(model, notes)
    if name in ("bfloat16", "float16"):
        return 2
    return 1  # fp8 variants, int8 / fp8 per token head


class Layout(NamedTuple):
    """The resolved page layout of a model under vLLM: block size, specs and pages."""

    block_size: int
    specs: tuple[_Spec, ...]
    pages: tuple[int | None, ...]  # page bytes per layer of each spec
    block_sizes: tuple[int, ...]  # tokens per block of each spec (unified page sizes)
    grouped: bool  # hybrid groups (False: one group of every layer)
    group_size: int
    groups_per_spec: tuple[int, ...]
    printed: tuple[str, ...]
    notes: tuple[str, ...]
    version: tuple[int, int, int]
    in_flight: int  # tokens scheduled but not settled, which window layers also hold
    mamba_cache_mode: str  # "none" (1 state page a request), "align" (2, or 3 with a checkpoint)
    checkpoint_pages: tuple[int, ...]  # prefill checkpoint pages per request, of each spec
    speculative_pages: int = 0  # MambaSpec.num_speculative_blocks (0.15.0 on)


class _Setup(NamedTuple):
    """What vLLM resolves from the model and options before it sizes any page."""

    dtype: str  # the kv_cache_dtype in effect (an fp8 cache is fp8_ds_mla on DeepSeek-V3.2)
    element_bytes: int  # bytes per cached value in that dtype
    model_dtype_bytes: int  # bytes per value in the model dtype ('auto')
    ranks: int  # tensor-parallel size
    hybrid_allocator: bool
    attention: tuple[Attention, ...]
    latent: tuple[MultiHeadLatent, ...]
    states: tuple[LeafGroup, ...]  # mamba and linear-attention layers
    turboquant: bool
    indexer: bool  # a lightning-indexer key cache beside the MLA layers (DeepSeek-V3.2)


def layout(model: Model, options: VllmOptions) -> Layout:
    """Resolve dtypes, block sizes and groups as vLLM does at start-up."""
    version = _checked_version(options)
    notes: list[str] = []
    printed: list[str] = []
    setup = _setup(model, options, version, notes, printed)
    specs = [
        *_attention_specs(model, setup, options, notes),
        *_latent_specs(setup),
        *_state_specs(setup, options),
    ]
    if not specs:
        raise NotCovered("the model caches nothing vLLM pages")
    mode = _mamba_cache_mode(setup, options, version, notes)
    checkpoints = _checkpoint_pages(specs, setup, options, version, mode)
    block_size, state_page = _block_size(
        specs,
        setup,
        options,
        version,
        any(checkpoints) and _gdn_flashinfer(setup, options),
        notes,
        printed,
    )
    in_flight = _in_flight_tokens(specs, options, version, notes)
    pages = tuple(
        state_page
        if spec.type == "state"
        else (None if spec.per_token is None else spec.per_token * block_size)
        for spec in specs
    )
    windows = {spec.window for spec in specs if spec.type == "window"}
    uniform_window = all(spec.type == "window" for spec in specs) and len(windows) == 1
    if all(spec.type == "full" for spec in specs) or uniform_window or not setup.hybrid_allocator:
        block_sizes: tuple[int, ...] = (block_size,) * len(specs)
        grouped, group_size = False, sum(spec.layers for spec in specs)
        groups_per_spec: tuple[int, ...] = (1,) * len(specs)
    else:
        pages, block_sizes = _unified_pages(pages, block_size, notes)
        grouped = True
        group_size, groups_per_spec = _groups(specs, printed)
    return Layout(
        block_size,
        tuple(specs),
        pages,
        block_sizes,
        grouped,
        group_size,
        groups_per_spec,
        tuple(printed),
        tuple(notes),
        version,
        in_flight,
        mode,
        checkpoints,
        options.num_speculative_tokens if version >= MAMBA_ALIGN_MODE else 0,
    )


def _gdn_flashinfer(setup: _Setup, options: VllmOptions) -> bool:
    return options.gdn_prefill_backend == "flashinfer" and any(
        group.kind == "linear_attention" for group in setup.states
    )


def _checkpoint_pages(
    specs: list[_Spec],
    setup: _Setup,
    options: VllmOptions,
    version: tuple[int, int, int],
    mode: str,
) -> tuple[int, ...]:
    """One prefill checkpoint page per request for the state layers that export one."""
    if mode != "align":
        return (0,) * len(specs)
    kinds = iter(group.kind for group in setup.states)
    pages: list[int] = []
    for spec in specs:
        kind = next(kinds) if spec.type == "state" else ""
        mamba2 = kind == "mamba2" and version >= MAMBA2_CHECKPOINT_PAGE
        gdn = (
            kind == "linear_attention"
            and version >= GDN_CHECKPOINT_PAGE
            and options.gdn_prefill_backend == "flashinfer"
        )
        pages.append(int(mamba2 or gdn))
    return tuple(pages)


def _in_flight_tokens(
    specs: list[_Spec], options: VllmOptions, version: tuple[int, int, int], notes: list[str]
) -> int:
    """The tokens a window layer keeps beyond its window (SlidingWindowSpec): one batch up to
    0.25.x; from 0.26.0 VllmConfig.max_in_flight_tokens, max_concurrent_batches (2 with async
    scheduling, pipeline parallel 1) x max_num_batched_tokens."""
    batch = options.max_num_batched_tokens
    if batch is None:
        batch = default_max_num_batched_tokens(version, options)
        if any(spec.type == "window" for spec in specs):
            notes.append(
                f"max_num_batched_tokens {batch:,}: the {options.usage_context} default for a"
                f" device of {options.device_memory_gib or 'under 70'} GiB"
                " (engine/arg_utils.py get_batch_defaults); pass max_num_batched_tokens or"
                " device_memory_gib for another device"
            )
    batches = 2 if release_of(version).window_in_flight and options.async_scheduling else 1
    return batches * batch


def _mamba_cache_mode(
    setup: _Setup, options: VllmOptions, version: tuple[int, int, int], notes: list[str]
) -> str:
    """MambaModelConfig.verify_and_update_config: prefix caching on puts state layers in
    'align' mode (the last state and one being written: 2 pages a request, MambaSpec
    max_memory_usage_bytes), or in 0.26.0-0.28.0 'all' mode for SupportsMambaPrefixCaching
    (mamba) models; off, 'none' (1 page)."""
    if not setup.states:
        return "none"
    caching = options.enable_prefix_caching
    if caching is None:
        caching = release_of(version).hybrid_prefix_caching
    if not caching:
        return "none"
    if version < MAMBA_ALIGN_MODE:
        if version >= MAMBA_PREFIX_CACHING and any(
            group.kind in ALL_MODE_KINDS for group in setup.states
        ):
            raise NotCovered("prefix caching of mamba state before 0.15.0 is not covered")
        notes.append(
            "vLLM turns prefix caching off for this hybrid model before 0.15.0: every hybrid"
            " up to 0.11.0, any without SupportsMambaPrefixCaching (Gated DeltaNet) after"
        )
        return "none"
    all_mode = release_of(version).mamba_all_mode
    if all_mode and any(group.kind in ALL_MODE_KINDS for group in setup.states):
        raise NotCovered(
            "prefix caching puts mamba models in 'all' mode (a state page per block, aligned to"
            " the mamba chunk size), which is not covered"
        )
    notes.append(
        "prefix caching on: mamba_cache_mode 'align', 2 state pages per request and layer"
        " (3 where a prefill checkpoint page is kept: mamba2 from 0.32.0, Gated DeltaNet with"
        " gdn_prefill_backend flashinfer, Hopper's default, from 0.33.0)"
    )
    return "align"


def _checked_version(options: VllmOptions) -> tuple[int, int, int]:
    check_choice("--kv-cache-dtype", options.kv_cache_dtype, KV_CACHE_DTYPES)
    check_choice("--mamba-ssm-cache-dtype", options.mamba_ssm_cache_dtype, MAMBA_SSM_DTYPES)
    if options.block_size is not None and options.block_size < 1:
        raise EngineError("--block-size must be at least 1")
    check_choice("gdn_prefill_backend", options.gdn_prefill_backend, GDN_PREFILL_BACKENDS)
    check_choice("usage_context", options.usage_context, ("openai_api_server", "llm_class"))
    check_choice("performance_mode", options.performance_mode, ("balanced", "throughput"))
    if options.attention_backend is not None:
        check_choice("attention_backend", options.attention_backend, tuple(MLA_BACKEND_BLOCKS))
    batch = options.max_num_batched_tokens
    if (batch is not None and batch < 1) or options.tensor_parallel_size < 1:
        raise EngineError("--max-num-batched-tokens and --tensor-parallel-size must be >= 1")
    if options.num_speculative_tokens < 0:
        raise EngineError("num_speculative_tokens must be 0 or more")
    version = parse_version(options.version)
    since = DTYPE_SINCE.get(options.kv_cache_dtype, (0, 0, 0))
    if version < since:
        raise NotCovered(
            f"--kv-cache-dtype {options.kv_cache_dtype} is not known to vLLM before"
            f" {'.'.join(map(str, since))}"
        )
    return version


def _setup(
    model: Model,
    options: VllmOptions,
    version: tuple[int, int, int],
    notes: list[str],
    printed: list[str],
) -> _Setup:
    """The dtype in effect and the layer kinds; what this model does not cover is refused."""
    leaves = [group for group in model.leaf_groups() if group.layers]
    latent = tuple(group for group in leaves if isinstance(group, MultiHeadLatent))
    attention = tuple(group for group in leaves if isinstance(group, Attention))
    states = tuple(
        group for group in leaves if group.kind in ("linear_attention", "mamba1", "mamba2")
    )
    hybrid_allocator = version >= HYBRID_ALLOCATOR and not options.disable_hybrid_kv_cache_manager
    # vLLM keys DeepSeek-V3.2's sparse attention on the config's index_topk (deepseek_v2.py
    # is_v32, platforms/cuda.py use_sparse); its DeepseekV32IndexerCache holds one key of
    # index_head_dim per token, which is what a model file's MLA indexer states
    indexer = any(group.indexer is not None for group in latent)
    if any(g.indexer is not None and g.indexer.keys_per_token not in (1, None) for g in latent):
        raise NotCovered("vLLM's indexer cache holds one key per token (index_head_dim)")
    if any(group.indexer is not None for group in attention):
        raise NotCovered(
            "vLLM's indexer cache beside GQA layers (not MLA) was not read; not covered"
        )
    dtype = options.kv_cache_dtype
    if dtype == "nvfp4":
        raise NotCovered(
            "vLLM's nvfp4 page size uses nvfp4_kv_cache_full_dim, which was not read; not covered"
        )
    if indexer:
        if version < V32_SUPPORT:
            raise NotCovered("DeepSeek-V3.2 is not known to vLLM before 0.11.0")
        if dtype.startswith("fp8"):
            if dtype != "fp8_ds_mla" and version < (0, 13, 0):  # models/config.py, 0.11-0.12
                printed.append("Using custom fp8 kv-cache format for DeepSeekV3.2")
            dtype = "fp8_ds_mla"
    if dtype == "fp8_ds_mla" and (not latent or attention):
        raise EngineError("fp8_ds_mla is an MLA cache format; this model has other attention")
    if dtype.endswith("_per_token_head") and latent:
        raise NotCovered("per-token-head scales for MLA pages are not covered")
    turboquant = dtype in TURBOQUANT_PRESETS
    if turboquant:
        if states and version < TURBOQUANT_HYBRID:
            raise NotCovered("vLLM rejected TurboQuant for hybrid models before 0.21.0 (PR #39931)")
        if latent or any(group.window is not None for group in attention):
            raise NotCovered(
                "TurboQuant applies to full-attention layers; MLA and windows are not covered"
            )
    if states and not hybrid_allocator:
        raise NotServed(
            "state layers (mamba, linear attention) in the V1 page pool need the hybrid allocator"
            " (0.10.0 and later, not disabled)"
        )
    if states and options.tensor_parallel_size > 1:
        raise NotCovered(
            "tensor-parallel sharding of mamba / linear-attention state is not covered"
        )
    auto_notes: list[str] = []
    model_dtype_bytes = _dtype_bytes("auto", model, auto_notes)
    element_bytes = model_dtype_bytes if dtype == "auto" else _dtype_bytes(dtype, model, notes)
    if dtype == "auto" or states or turboquant:
        notes.extend(auto_notes)  # where the model dtype sizes something
    return _Setup(
        dtype,
        element_bytes,
        model_dtype_bytes,
        options.tensor_parallel_size,
        hybrid_allocator,
        attention,
        latent,
        states,
        turboquant,
        indexer,
    )


def _attention_specs(
    model: Model, setup: _Setup, options: VllmOptions, notes: list[str]
) -> list[_Spec]:
    """Full and sliding-window attention pages (TurboQuant's boundary layers apart)."""
    boundary_layers = _turboquant_boundary_layers(model, setup)
    specs: list[_Spec] = []
    for group in setup.attention:
        heads = None if group.kv_heads is None else max(1, group.kv_heads // setup.ranks)
        if group.kv_heads is not None and group.kv_heads < setup.ranks:
            notes.append(
                f"{group.kv_heads} kv heads over {setup.ranks} ranks:"
                " each rank keeps 1 head (replicated)"
            )
        if setup.turboquant:
            specs.extend(_turboquant_specs(group, heads, boundary_layers, setup))
            continue
        kind = "window" if group.window is not None and setup.hybrid_allocator else "full"
        label = "sliding-window" if group.window is not None else "full-attention"
        per_token = _attention_token_bytes(heads, group, setup.element_bytes)
        shape = (
            f"{_q(heads)} heads x ({_q(group.head_dim)} + {_q(group.value_dim)})"
            f" x {setup.element_bytes} B"
        )
        if setup.dtype.endswith("_per_token_head") and per_token is not None and heads is not None:
            per_token += 2 * heads * 4
            shape += f" + 2 x {heads} x 4 B scales"
        window = group.window if kind == "window" else None
        name = f"{group.layers} {label} layers ({setup.dtype})"
        specs.append(_Spec(kind, group.layers, per_token, None, window, name, shape))
        if group.window is not None and kind == "full":
            why = (
                "the hybrid allocator is disabled"
                if options.disable_hybrid_kv_cache_manager
                else "no hybrid allocator before 0.10.0"
            )
            notes.append(f"window layers hold every token: {why}")
    return specs


def _turboquant_boundary_layers(model: Model, setup: _Setup) -> int:
    """Layers a TurboQuant preset keeps in the model dtype: the first and last two, dense only."""
    if not setup.turboquant or setup.states:
        return 0
    dense = len(setup.attention) == 1 and setup.attention[0].layers == model.num_layers
    if not dense:
        raise NotCovered("TurboQuant boundary layers for this layer layout are not covered")
    kept = min(TQ_BOUNDARY_LAYERS, model.num_layers // 2)
    return len(set(range(kept)) | set(range(model.num_layers - kept, model.num_layers)))


def _turboquant_specs(
    group: Attention, heads: int | None, boundary_layers: int, setup: _Setup
) -> list[_Spec]:
    if group.head_dim != group.value_dim:
        raise NotCovered("TurboQuant with different K and V head sizes is not covered")
    slot = None if group.head_dim is None else turboquant_slot_bytes(setup.dtype, group.head_dim)
    specs: list[_Spec] = []
    if boundary_layers:
        specs.append(
            _Spec(
                "full",
                boundary_layers,
                _attention_token_bytes(heads, group, setup.model_dtype_bytes),
                None,
                None,
                f"{boundary_layers} boundary layers in the model dtype",
                f"{_q(heads)} heads x ({_q(group.head_dim)} + {_q(group.value_dim)})"
                f" x {setup.model_dtype_bytes} B",
            )
        )
    quantized = group.layers - boundary_layers
    specs.append(
        _Spec(
            "full",
            quantized,
            None if heads is None or slot is None else heads * slot,
            None,
            None,
            f"{quantized} full-attention layers ({setup.dtype})",
            f"{_q(heads)} heads x {_q(slot)} B slot",
        )
    )
    return specs


def _latent_specs(setup: _Setup) -> list[_Spec]:
    """MLA pages (656 B per token with fp8_ds_mla) and DeepSeek-V3.2's indexer key caches."""
    specs: list[_Spec] = []
    for group in setup.latent:
        latent, rope = group.kv_lora_rank, group.qk_rope_head_dim
        per_token: int | None
        if setup.dtype == "fp8_ds_mla":
            if (latent, rope) != (512, 64):
                raise EngineError("fp8_ds_mla's 656-byte layout is for kv_lora_rank 512 + rope 64")
            size = mla_fp8_bytes(group._replace(indexer=None))  # the one definition: 656 B
            assert size is not None and size.denominator == 1
            per_token = int(size)
            shape = f"{per_token} B (512 fp8 + 16 B fp32 scales + 64 bf16)"
        else:
            per_token = (
                None if latent is None or rope is None else (latent + rope) * setup.element_bytes
            )
            shape = f"(kv_lora_rank {_q(latent)} + rope {_q(rope)}) x {setup.element_bytes} B"
        name = f"{group.layers} MLA layers ({setup.dtype})"
        specs.append(_Spec("full", group.layers, per_token, None, None, name, shape))
        if group.indexer is not None:
            keys, width = group.indexer.keys_per_token, group.indexer.head_dim
            specs.append(
                _Spec(
                    "full",
                    group.layers,
                    indexer_fp8_bytes(group.indexer),
                    None,
                    None,
                    f"{group.layers} indexer key caches (uint8)",
                    f"{_q(keys)} x ({_q(width)} fp8 values + {_q(width)} // 128 x 4 B fp32 scales)",
                )
            )
    return specs


def _state_specs(setup: _Setup, options: VllmOptions) -> list[_Spec]:
    """One page of recurrent and conv state per mamba or linear-attention layer."""
    conv_bytes = setup.model_dtype_bytes
    ssm_bytes = {"auto": conv_bytes, "float32": 4, "bfloat16": 2, "float16": 2}[
        options.mamba_ssm_cache_dtype
    ]
    specs: list[_Spec] = []
    for group in setup.states:
        conv, recurrent = state_split(group)
        state = (
            None if conv is None or recurrent is None else conv * conv_bytes + recurrent * ssm_bytes
        )
        specs.append(
            _Spec(
                "state",
                group.layers,
                None,
                state,
                None,
                f"{group.layers} {group.kind} layers (state)",
                f"conv {_q(conv)} x {conv_bytes} B + recurrent {_q(recurrent)} x {ssm_bytes} B",
            )
        )
    return specs


def _block_size(
    specs: list[_Spec],
    setup: _Setup,
    options: VllmOptions,
    version: tuple[int, int, int],
    gdn_checkpoints: bool,
    notes: list[str],
    printed: list[str],
) -> tuple[int, int | None]:
    """Tokens per block and the state page: the user's block size, else the release's default
    (MLA: the backend's, FlashMLA's 64 unless named); a hybrid model's block grows in steps
    (HYBRID_STEP_FOLLOWS_BLOCK) until its attention page holds the state page."""
    block_size = options.block_size or release_of(version).default_block_size
    if options.block_size is None and setup.latent:
        backend = options.attention_backend or "FLASHMLA"
        block_size = MLA_BACKEND_BLOCKS[backend] or block_size
        if setup.indexer:
            block_size = 64  # FlashMLASparse: "Forcing kv cache block size to 64"
        elif options.attention_backend is None:
            notes.append(
                "MLA backends: FlashMLA (Hopper) uses 64-token blocks, CUTLASS_MLA (Blackwell)"
                " 128, TRITON_MLA the default size; pass attention_backend for another"
            )
    state_specs = [spec for spec in specs if spec.type == "state"]
    if not state_specs:
        return block_size, None
    attention_specs = [spec for spec in specs if spec.type != "state"]
    if not attention_specs or attention_specs[0].per_token is None:
        raise NotCovered("the attention page of this hybrid model is unknown")
    if any(spec.state is None for spec in state_specs):
        return block_size, None
    mamba_page = max(spec.state or 0 for spec in state_specs)
    one_token = attention_specs[0].per_token
    alignment = KERNEL_BLOCK_ALIGNMENT
    if version >= HYBRID_STEP_FOLLOWS_BLOCK:
        alignment = max(KERNEL_BLOCK_ALIGNMENT, block_size)
    elif setup.latent:  # models/config.py: "128 if use_cutlass_mla else 64"
        alignment = 128 if options.attention_backend == "CUTLASS_MLA" else 64
    if setup.latent and version >= MLA_HYBRID_STEP_128:
        alignment = max(alignment, 128)  # TRTLLM / FlashInfer MLA decode kernels
    if gdn_checkpoints:
        alignment = math.lcm(alignment, GDN_CHECKPOINT_ALIGNMENT)
    aligned = alignment * cdiv(mamba_page, alignment * one_token)
    if block_size < aligned:
        block_size = aligned
        printed.append(
            f"Setting attention block size to {aligned} tokens to ensure that attention"
            " page size is >= mamba page size."
        )
    attention_page = block_size * one_token
    if attention_page != mamba_page:
        padding = 100 * Fraction(attention_page - mamba_page, mamba_page)
        printed.append(
            f"Padding mamba page size by {float(padding):.2f}% to ensure that mamba page size"
            " and attention page size are exactly equal."
        )
    notes.append(
        f"the state page ({mamba_page:,} B) is padded to the attention page of"
        f" {block_size} tokens ({attention_page:,} B)"
    )
    return block_size, attention_page


def _unified_pages(
    pages: tuple[int | None, ...], block_size: int, notes: list[str]
) -> tuple[tuple[int | None, ...], tuple[int, ...]]:
    """Hybrid groups share one page size: smaller pages take proportionally larger blocks."""
    block_sizes = [block_size] * len(pages)
    known = [page for page in pages if page is not None]
    if len(known) < len(pages) or len(set(known)) < 2:
        return pages, tuple(block_sizes)
    biggest = max(known)
    for index, page in enumerate(known):
        if biggest % page:
            raise NotCovered("vLLM cannot unify these page sizes (not multiples)")
        block_sizes[index] = block_size * (biggest // page)
    notes.append("smaller pages get larger blocks so every group's page is the same size")
    return tuple(biggest for _ in pages), tuple(block_sizes)


def _groups(specs: list[_Spec], printed: list[str]) -> tuple[int, tuple[int, ...]]:
    """Layers per KV cache group and groups per spec (get_kv_cache_groups), padding printed."""
    counts = [spec.layers for spec in specs]
    group_size = min(counts)
    if max(counts) < group_size * 1.5:
        group_size = max(counts)
    groups_per_spec = tuple(cdiv(layers, group_size) for layers in counts)
    for spec, groups in zip(specs, groups_per_spec, strict=True):
        padding = groups * group_size - spec.layers
        if padding:
            printed.append(
                f"Add {padding} padding layers, may waste at most"
                f" {padding / spec.layers * 100:.2f}% KV cache memory"
            )
    return group_size, groups_per_spec


def _attention_token_bytes(heads: int | None, g: Attention, elem: int) -> int | None:
    if heads is None or g.head_dim is None or g.value_dim is None:
        return None
    return heads * (g.head_dim + g.value_dim) * elem


def turboquant_slot_bytes(
    preset: str, head_dim: int, key_norm_bytes: int = TQ_KEY_NORM_BYTES
) -> int:
    """Bytes per head and token of a TurboQuant preset (TurboQuantConfig.slot_size_aligned)."""
    key_bits, value_bits = TURBOQUANT_PRESETS[preset]
    key = head_dim if key_bits == 8 else cdiv(head_dim * key_bits, 8) + key_norm_bytes
    value = cdiv(head_dim * value_bits, 8) + 4
    slot = key + value
    return slot + slot % 2


def _blocks(page_layout: Layout, index: int, tokens: int) -> int:
    """Pages one request of ``tokens`` tokens holds in each layer of spec ``index``."""
    spec, size = page_layout.specs[index], page_layout.block_sizes[index]
    if spec.type == "state":
        checkpoint = page_layout.checkpoint_pages[index] + page_layout.speculative_pages
        return (2 if page_layout.mamba_cache_mode == "align" else 1) + checkpoint
    if spec.type == "window":
        assert spec.window is not None
        return cdiv(min(spec.window - 1 + page_layout.in_flight, tokens), size) + 1
    return cdiv(tokens, size)


def request_bytes(page_layout: Layout, tokens: int) -> int | None:
    """vLLM's max_memory_usage for one request of ``tokens`` tokens, padding layers included."""
    total = 0
    for i, spec in enumerate(page_layout.specs):
        page = page_layout.pages[i]
        if page is None:
            return None
        layers = (
            page_layout.groups_per_spec[i] * page_layout.group_size
            if page_layout.grouped
            else spec.layers
        )
        total += layers * _blocks(page_layout, i, tokens) * page
    return total


def report(model: Model, context_tokens: int, options: VllmOptions) -> EngineReport:
    """The pages vLLM holds for one request of ``context_tokens`` tokens (max_model_len)."""
    if context_tokens < 1:
        raise EngineError("max_model_len must be at least 1")
    page_layout = layout(model, options)
    era, meaning = token_figure_era(page_layout.version)
    stated_options = (
        ("kv_cache_dtype", options.kv_cache_dtype),
        ("block_size", str(page_layout.block_size)),
        *(
            (("window in-flight tokens", str(page_layout.in_flight)),)
            if any(spec.type == "window" for spec in page_layout.specs)
            else ()
        ),
        ("mamba_cache_mode", page_layout.mamba_cache_mode),
        *(
            (("speculative state pages", str(page_layout.speculative_pages)),)
            if page_layout.speculative_pages and any(s.type == "state" for s in page_layout.specs)
            else ()
        ),
        ("tensor_parallel_size", str(options.tensor_parallel_size)),
        ("mamba_ssm_cache_dtype", options.mamba_ssm_cache_dtype),
        ("disable_hybrid_kv_cache_manager", str(options.disable_hybrid_kv_cache_manager).lower()),
    )
    return EngineReport(
        engine=ENGINE,
        version=".".join(str(p) for p in page_layout.version),
        version_note=f"'GPU KV cache size' era {era}: {meaning}",
        options=stated_options,
        context_tokens=context_tokens,
        context_meaning="max_model_len: the pages one request of this many tokens holds",
        parts=tuple(_request_parts(page_layout, context_tokens)),
        printed=page_layout.printed,
        notes=(*page_layout.notes, *_request_notes(page_layout, context_tokens, options)),
    )


def _request_parts(page_layout: Layout, context_tokens: int) -> list[Part]:
    """Each spec's pages for one request, and the padding layers of hybrid groups."""
    parts: list[Part] = []
    for index, spec in enumerate(page_layout.specs):
        page = page_layout.pages[index]
        blocks = _blocks(page_layout, index, context_tokens)
        size = page_layout.block_sizes[index]
        if spec.type == "state":
            how = (
                f"{spec.layers} layers x {blocks} page(s) of {_b(page)}"
                f" ({spec.shape} = {_b(spec.state)}, padded)"
            )
            name = f"state pages, {spec.name}"
        elif spec.type == "window":
            assert spec.window is not None
            how = (
                f"{spec.layers} layers x (cdiv(min({spec.window:,} - 1 + {page_layout.in_flight:,},"
                f" {context_tokens:,}), {size}) + 1 = {blocks:,} blocks) x {size} tokens x {spec.shape}"
            )
            name = f"pages, {spec.name}"
        else:
            how = f"{spec.layers} layers x {blocks:,} blocks of {size} tokens x {spec.shape}"
            name = f"pages, {spec.name}"
        parts.append(Part(name, None if page is None else spec.layers * blocks * page, how))
        padding = (
            page_layout.groups_per_spec[index] * page_layout.group_size - spec.layers
            if page_layout.grouped
            else 0
        )
        if padding:
            parts.append(
                Part(
                    f"padding layers of the {spec.type} groups",
                    None if page is None else padding * blocks * page,
                    f"{padding} empty layers x {blocks:,} pages x {_b(page)}",
                )
            )
    return parts


def _request_notes(page_layout: Layout, context_tokens: int, options: VllmOptions) -> list[str]:
    """Why one request's pages differ from the logical figure."""
    notes: list[str] = []
    full_blocks = [
        _blocks(page_layout, index, context_tokens)
        for index, spec in enumerate(page_layout.specs)
        if spec.type == "full"
    ]
    if full_blocks and context_tokens % page_layout.block_size:
        unused = full_blocks[0] * page_layout.block_size - context_tokens
        notes.append(
            f"{context_tokens:,} tokens fill {full_blocks[0]:,} blocks of {page_layout.block_size}:"
            f" {unused:,} token slots per layer unused"
        )
    if any(spec.type == "window" for spec in page_layout.specs):
        notes.append(
            f"window layers keep min(window - 1 + {page_layout.in_flight:,} in-flight tokens,"
            " context) tokens plus one block, more than the window the logical figure counts"
            " (from 0.26.0 two batches in flight with async scheduling)"
        )
    if options.kv_cache_dtype in TURBOQUANT_PRESETS:
        notes.append(
            "TurboQuant slots follow the stored config.py (2-byte fp16 key norm); PR #38479's"
            " table lists 2 bytes more per slot for the MSE-key presets"
        )
    if options.tensor_parallel_size > 1:
        notes.append(f"figures are per rank of {options.tensor_parallel_size}")
    return notes


class Capacity(NamedTuple):
    """What vLLM prints once it knows the memory available for the cache."""

    num_blocks: int
    tokens: int  # the 'GPU KV cache size' figure
    max_concurrency: Fraction
    printed: tuple[str, ...]


def capacity(
    model: Model, options: VllmOptions, available_bytes: int, max_model_len: int
) -> Capacity:
    """num_blocks, 'GPU KV cache size' and 'Maximum concurrency' for ``available_bytes``."""
    page_layout = layout(model, options)
    if any(p is None for p in page_layout.pages):
        raise NotCovered("a page size is unknown (a dimension the model file lacks)")
    pages = [p or 0 for p in page_layout.pages]
    if page_layout.grouped:
        num_blocks = available_bytes // pages[0] // page_layout.group_size
    else:
        page_sum = sum(p * s.layers for p, s in zip(pages, page_layout.specs, strict=True))
        num_blocks = available_bytes // page_sum
    per_request = request_blocks(page_layout, max_model_len)
    release = release_of(page_layout.version)
    if release.token_figure == "blocks-x-size":
        tokens = num_blocks * page_layout.block_size
        concurrency = Fraction(tokens, max_model_len)  # 0.8.0-0.9.0: num_tokens / max_model_len
    elif release.token_figure == "per-group":
        tokens = num_blocks // kv_cache_groups(page_layout) * min(page_layout.block_sizes)
        concurrency = Fraction(num_blocks, per_request)
    else:
        concurrency = Fraction(num_blocks, per_request)
        tokens = int(float(concurrency) * max_model_len)
    size = f"GPU KV cache size: {tokens:,} tokens"
    most = (
        f"Maximum concurrency for {max_model_len:,} tokens per request: {float(concurrency):.2f}x"
    )
    lines = [f"{size}, {most}"] if release.one_capacity_line else [size, most]
    return Capacity(num_blocks, tokens, concurrency, tuple(lines))


def kv_cache_groups(page_layout: Layout) -> int:
    """The KV cache groups vLLM forms: one per ``group_size`` layers of each spec when hybrid."""
    return sum(page_layout.groups_per_spec) if page_layout.grouped else 1


def request_blocks(page_layout: Layout, max_model_len: int) -> int:
    """Blocks of the shared pool one request of ``max_model_len`` tokens takes
    (get_max_concurrency_for_kv_cache_config): the sum over KV cache groups of each group's
    pages when hybrid; one group of every layer otherwise, its largest spec deciding."""
    if page_layout.grouped:
        return sum(
            n * _blocks(page_layout, i, max_model_len)
            for i, n in enumerate(page_layout.groups_per_spec)
        )
    return max(_blocks(page_layout, i, max_model_len) for i in range(len(page_layout.specs)))


class ConcurrencySpan(NamedTuple):
    """The maximum concurrency a release computes for a pool it printed, over what is unknown."""

    low: Fraction
    high: Fraction
    working: str


def printed_concurrency(
    model: Model,
    options: VllmOptions,
    max_model_len: int,
    tokens: int | None = None,
    blocks: int | None = None,
    batch: tuple[int, int] | None = None,
    stages: int | None = 1,
) -> ConcurrencySpan | None:
    """The 'Maximum concurrency' a release prints beside its pool, printed as ``tokens`` ('GPU
    KV cache size') or as ``blocks`` (num_gpu_blocks): num_blocks / the blocks one request
    takes (get_max_concurrency_for_kv_cache_config), except 0.8.0-0.9.0 (tokens / max_model_len).
    A token figure gives the block count back by its era's rule (TOKEN_FIGURES): exactly up to
    0.9.0, within the groups' rounding up to 0.20.x; from 0.21.0 it is the concurrency times
    max_model_len, cut to a whole token. ``batch`` is the span max_num_batched_tokens may take
    (None: what ``options`` give); window layers keep one batch beyond their window, and from
    0.26.0 max_concurrent_batches of them (config/vllm.py: 2 with async scheduling, up to
    pipeline stages + 1 with pipeline parallelism, at most ``stages`` of them; None: any
    number). None when this layout cannot print the token figure (not a multiple of its block
    size)."""
    release = release_of(parse_version(options.version))
    if tokens is not None and release.token_figure == "concurrency":
        low, high = Fraction(tokens, max_model_len), Fraction(tokens + 1, max_model_len)
        return ConcurrencySpan(low, high, f"int(concurrency x {max_model_len:,}) = {tokens:,}")
    page_layout = layout(model, options)
    unknown_state = any(spec.type == "state" and spec.state is None for spec in page_layout.specs)
    if unknown_state and options.block_size is None:
        raise NotCovered("the state page is unknown, and so is the attention block it sizes")
    if release.token_figure == "blocks-x-size":
        count = blocks * page_layout.block_size if blocks is not None else tokens or 0
        if tokens is not None and tokens != count:
            return None  # blocks x block size is the token line
        value = Fraction(count, max_model_len)
        return ConcurrencySpan(value, value, f"{count:,} tokens / {max_model_len:,}")
    groups, smallest = kv_cache_groups(page_layout), min(page_layout.block_sizes)
    layout_text = f"{groups} KV cache group(s) of {smallest}-token blocks"
    if blocks is not None:
        if tokens is not None and tokens != blocks // groups * smallest:
            return None  # the token line this layout prints beside those blocks differs
        fewest, most, shown = blocks, blocks, f"{blocks:,} blocks ({layout_text})"
    elif tokens is None or tokens % smallest:
        return None
    else:
        fewest = tokens // smallest * groups
        most = fewest + groups - 1
        shown = f"{tokens:,} tokens = {fewest:,} to {most:,} blocks ({layout_text})"
    if batch is None:
        in_flight = (page_layout.in_flight, page_layout.in_flight)
    else:
        batches = (2 if stages is None else stages + 1) if release.window_in_flight else 1
        top = max_model_len if stages is None and release.window_in_flight else batch[1] * batches
        in_flight = (batch[0], top)
    least, greatest = (
        request_blocks(page_layout._replace(in_flight=tokens_in_flight), max_model_len)
        for tokens_in_flight in in_flight
    )
    per_request = f"{least:,}" if least == greatest else f"{least:,} to {greatest:,}"
    working = f"{shown} / {per_request} blocks a {max_model_len:,}-token request takes"
    return ConcurrencySpan(Fraction(fewest, greatest), Fraction(most, least), working)


def gib_printed(version: tuple[int, int, int], byte_count: int) -> str:
    """A GiB figure as the release prints it: '%.2f' up to 0.13.0, then format_gib's
    round(x, 2) (utils/mem_utils.py), which drops trailing zeros ('8.0')."""
    if release_of(version).gib_rounded:
        return str(round(byte_count / (1 << 30), 2))
    return gib_as_printed(byte_count)


def available_line(options: VllmOptions, available_bytes: int) -> str:
    """gpu_worker.py's 'Available KV cache memory' line."""
    version = parse_version(options.version)
    return f"Available KV cache memory: {gib_printed(version, available_bytes)} GiB"


def needed_gib(model: Model, options: VllmOptions, max_model_len: int) -> str:
    """The 'N GiB KV cache is needed' figure vLLM prints when one request does not fit."""
    page_layout = layout(model, options)
    needed = request_bytes(page_layout, max_model_len)
    if needed is None:
        raise NotCovered("a page size is unknown (a dimension the model file lacks)")
    return gib_printed(page_layout.version, needed)


def max_model_len(model: Model, options: VllmOptions, available_bytes: int, upper: int) -> int:
    """The largest max_model_len whose request fits ``available_bytes`` (vLLM's binary search)."""
    page_layout = layout(model, options)

    def fits(tokens: int) -> bool:
        needed = request_bytes(page_layout, tokens)
        if needed is None:
            raise NotCovered("a page size is unknown (a dimension the model file lacks)")
        return needed <= available_bytes

    if not fits(1):
        return 0
    low, high, best = 1, upper, 1
    while low <= high:
        mid = (low + high) // 2
        if fits(mid):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def _q(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _b(value: int | None) -> str:
    return "? B" if value is None else f"{value:,} B"
