"""llama.cpp: what ``llama_kv_cache`` (and the recurrent memory of hybrid models) allocates.

About 670 lines on purpose: the eras table and the cache rules it switches read each other.

Read from llama.cpp's source (facts only; no code carried over):

- ``src/llama-kv-cache.cpp``, ``llama_kv_cache::llama_kv_cache``: per cached layer one K tensor
  of type ``type_k`` with ``n_embd_k_gqa`` values per cell and one V tensor of type ``type_v``
  with ``n_embd_v_gqa`` values per cell (``n_embd_v_gqa_max`` when the V cache is transposed,
  i.e. flash attention is off), each ``kv_size`` cells x ``n_stream`` streams. ``size_k_bytes``
  and ``size_v_bytes`` sum ``ggml_nbytes`` of those tensors; the constructor logs
  ``size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): %7.2f MiB, V (%s): ...``
  from ``(float) bytes / (1024.0f * 1024.0f)``.
- ``ggml/src/ggml-common.h``: block sizes. q8_0 is 34 bytes per 32 values (fp16 scale + 32
  int8), q4_0 18 (fp16 + 16), q4_1 20 (two fp16 + 16), q5_0 22 (fp16 + 4 high bits + 16),
  q5_1 24, iq4_nl 18; f32 4, f16 and bf16 2 bytes per value. A quantized row must hold whole
  blocks.
- ``src/llama-kv-cache-iswa.cpp``, ``llama_kv_cache_iswa::llama_kv_cache_iswa``: models with
  interleaved sliding windows get two caches, one for the full-attention layers with
  ``kv_size`` cells and one for the window layers with
  ``GGML_PAD(min(kv_size, n_swa * (unified ? n_seq_max : 1) + n_ubatch), 256)`` cells, or
  ``kv_size`` with ``--swa-full``. The older ``llama_kv_cache_unified_iswa`` used
  ``min(kv_size, GGML_PAD(n_swa * n_seq_max + n_ubatch, n_pad))``.
- ``src/llama-context.cpp`` (``llama_context::llama_context``): since PR #17046 the context is
  padded to a multiple of 256, and without a unified cache each sequence gets
  ``GGML_PAD(n_ctx / n_seq_max, 256)`` cells in a stream of its own. Before PR #16812
  ``llama_kv_cache_unified::get_padding`` padded the context to 256 cells with flash attention
  and to 32 without (PR #7257); PR #16812 removed cell padding until PR #17046 restored 256.
- ``src/llama-model.cpp``, ``llama_model::create_memory``: hybrid models add a
  ``llama_memory_recurrent`` with ``max(1, n_seq_max)`` cells of f32 R (conv) and S (SSM)
  state per recurrent layer; ``src/llama-hparams.cpp`` ``n_embd_r`` / ``n_embd_s`` give
  ``(d_conv - 1) * (d_inner + 2 * n_group * d_state)`` and ``d_state * d_inner`` values.
- ``src/llama-memory-recurrent.cpp`` (llama.cpp@0c1e57098, lines 98-137): since PR #22673
  (MTP support, May 2026) each layer's R and S tensors have ``mem_size * (1 + n_rs_seq)`` rows,
  ``n_rs_seq`` being the per-sequence state snapshots kept for speculative rollback
  (``llama_context_params.n_rs_seq``; common sets it to the draft length for the draft types
  that need it, and ``llama-context.cpp`` line 106 clamps it to 0 for architectures without
  rollback support). The size line reads ``size = %7.2f MiB (%6u cells, %3d layers, %2u seqs
  %2u rs_seq), R (%s): ..., S (%s): ...``, with ``, P (%s): %7.2f MiB`` appended in the pinned
  build (a per-layer-embedding conv row, ``hparams.ple_conv_state()``, zero for a model
  without such a module, as every model in ``models/`` is). ``layers`` there is
  ``hparams.n_layer()``, every layer of the model, not only the recurrent ones. Before PR
  #22673 the line ended ``%2u seqs), R (%s): ..., S (%s): ...`` (as quoted on master e358d75a
  in the PR's thread, and printed by build 7404 in December 2025); for the eras before
  ``2025-11-pad-256`` no recurrent line is printed, its format there not being established.
- MLA (DeepSeek-V2/V3, Kimi K2): the cache holds one "head" of ``kv_lora_rank +
  qk_rope_head_dim`` per token in K and, until PR #19067 (2026-01-24, "kv-cache : support
  V-less cache"), a V of ``kv_lora_rank`` values as well; since then MLA layers have no V
  tensor. Earlier builds (before the MLA cache of spring 2025) stored decompressed per-head K
  and V, whose dimensions the model files do not hold: not covered.

Versions: llama.cpp numbers its builds, but the build at which each change landed is not
established here, so versions are named by the change (with its PR and date). ``latest`` is
the newest, ``2026-10-p-row``, the accounting of the build llama-cpp-python 0.3.36 pins
(``PINNED_BUILD``; ``tools/llamacpp-ground-truth`` runs it). Build numbers are not accepted.

``--context`` is ``-c`` / ``--ctx-size``: the cells for all sequences together.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from kvrecords.kv.arithmetic import GGML_BLOCKS
from kvrecords.kv.engines.result import (
    TOTAL,
    EngineError,
    EngineReport,
    NotCovered,
    Part,
    bytes_of,
    check_choice,
    mib_as_printed,
    pad_to,
    state_split,
)
from kvrecords.kv.geometry import Attention, LeafGroup, Model, MultiHeadLatent, indexer_of
from kvrecords.kv.units import parse_byte_quantity

ENGINE = "llamacpp"

# name -> (values per block, bytes per block), from the block structs in ggml-common.h
CACHE_TYPES: dict[str, tuple[int, int]] = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    **{name: (values, size) for name, (_, values, size) in GGML_BLOCKS.items()},
}
CACHE_TYPE_NAMES = tuple(CACHE_TYPES)
FLASH_ATTN = ("on", "off", "auto")


class Era(NamedTuple):
    note: str
    cell_pad: str  # "fa": 256 with flash attention, else 32; "none"; "256"
    streams: bool  # one stream per sequence unless the cache is unified (PR #14363)
    swa_cache: str  # "none": window layers full size; "min-pad": min(size, PAD(..)); "pad-min"
    mla: str  # "none" (not covered), "kv" (K latent+rope and V latent), "k" (K only)
    log_prefix: str  # the function name that prints the size line
    # the llama_memory_recurrent size line: "" (not established for this version), "seqs"
    # (ends "N seqs), R.., S.."), "rs_seq" (adds "M rs_seq" and snapshot rows), "p" (adds P)
    recurrent_line: str = ""


ERAS: dict[str, Era] = {
    "2024-05-pad-by-fa": Era(
        "PR #7257 (2024-05-13): cells padded to 256 with flash attention, 32 without; one cache"
        " for every layer (window layers full size); DeepSeek MLA not yet stored as a latent",
        "fa",
        False,
        "none",
        "none",
        "llama_new_context_with_model",
    ),
    "2025-04-mla": Era(
        "the MLA latent cache (spring 2025, after the closed PR #12227): K = kv_lora_rank +"
        " qk_rope_head_dim and V = kv_lora_rank per token per MLA layer; otherwise as before",
        "fa",
        False,
        "none",
        "kv",
        "llama_init_from_model",
    ),
    "2025-05-swa": Era(
        "PR #13194 (opened 2025-04-29): a separate cache for sliding-window layers of"
        " min(kv_size, PAD(n_swa * n_seq_max + n_ubatch, pad)) cells",
        "fa",
        False,
        "min-pad",
        "kv",
        "llama_kv_cache_unified",
    ),
    "2025-07-streams": Era(
        "PR #14363 (high-throughput mode): one stream of n_ctx / n_seq cells per sequence unless"
        " --kv-unified; window cache min(kv_size, PAD(n_swa * (unified ? n_seq : 1) + n_ubatch,"
        " pad))",
        "fa",
        True,
        "min-pad",
        "kv",
        "llama_kv_cache_unified",
    ),
    "2025-10-no-pad": Era(
        "PR #16812 (opened 2025-10-28): no cell padding (n_pad 1)",
        "none",
        True,
        "min-pad",
        "kv",
        "llama_kv_cache",
    ),
    "2025-11-pad-256": Era(
        "PR #17046 (November 2025, issue #17037): context and per-sequence cells padded to 256;"
        " window cache PAD(min(kv_size, n_swa * (unified ? n_seq : 1) + n_ubatch), 256)",
        "256",
        True,
        "pad-min",
        "kv",
        "llama_kv_cache",
        "seqs",  # as build 7404 prints it (December 2025)
    ),
    "2026-01-v-less": Era(
        "PR #19067 (2026-01-24): MLA layers keep K only (latent + rope), no V tensor",
        "256",
        True,
        "pad-min",
        "k",
        "llama_kv_cache",
        "seqs",
    ),
    "2026-05-rs-seq": Era(
        "PR #22673 (MTP support, May 2026): recurrent state keeps n_rs_seq snapshot rows per"
        " cell for speculative rollback, and its size line names them (N rs_seq)",
        "256",
        True,
        "pad-min",
        "k",
        "llama_kv_cache",
        "rs_seq",
    ),
    "2026-10-p-row": Era(
        "the recurrent size line adds a P (per-layer-embedding conv row) figure; established"
        " at ggml-org/llama.cpp@0c1e57098 (2026-10-01, pinned by llama-cpp-python 0.3.36),"
        " the change that added it was not found, so it may be earlier",
        "256",
        True,
        "pad-min",
        "k",
        "llama_kv_cache",
        "p",
    ),
}
LATEST = "2026-10-p-row"
# The build tools/llamacpp-ground-truth runs, and the era its accounting follows.
PINNED_BUILD = ("0c1e57098", "2026-10-p-row")
VERSIONS = ("latest", *ERAS)


class LlamaCppOptions(NamedTuple):
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    flash_attn: str = "auto"
    swa_full: bool = False
    ubatch: int = 512
    parallel: int = 1
    kv_unified: bool = False
    rs_seq: int = 0  # n_rs_seq: recurrent-state snapshots per sequence (speculative rollback)
    version: str = "latest"


class _Cache(NamedTuple):
    """One llama_kv_cache: its cells, streams and layer groups."""

    name: str  # as engine_accounting.cache names it
    label: str
    cells: int
    streams: int
    groups: tuple[LeafGroup, ...]


def row_bytes(type_name: str, values: int, what: str) -> int:
    """Bytes of one cell's row of ``values`` values in ``type_name`` (ggml_row_size)."""
    block, block_bytes = CACHE_TYPES[type_name]
    if values % block:
        raise EngineError(
            f"llama.cpp cannot store {what} rows of {values} values as {type_name}: a row must"
            f" hold whole blocks of {block} values"
        )
    return values // block * block_bytes


def _type_formula(type_name: str) -> str:
    block, block_bytes = CACHE_TYPES[type_name]
    return f"{block_bytes} B" if block == 1 else f"{block_bytes}/{block} B ({type_name})"


class _Layers(NamedTuple):
    """The layers llama.cpp caches, by the cache that holds them."""

    full: tuple[Attention, ...]
    windowed: tuple[Attention, ...]
    latent: tuple[MultiHeadLatent, ...]
    states: tuple[LeafGroup, ...]  # recurrent state (mamba, linear attention)


class _Cells(NamedTuple):
    """Cells per stream after padding, the streams, and the padding unit."""

    per_stream: int
    streams: int
    pad: int


def report(model: Model, context_tokens: int, options: LlamaCppOptions) -> EngineReport:
    """What llama.cpp allocates for ``model`` with ``-c context_tokens`` and ``options``."""
    era_key = _checked_era(context_tokens, options)
    era = ERAS[era_key]
    layers = _cached_layers(model, era, era_key, options)
    notes: list[str] = []
    cells = _cells(context_tokens, era, options, notes)
    caches = _caches(layers, cells, era, options, notes)
    # Without flash attention V is stored transposed (v_trans), each row as wide as the widest
    # of the whole model (hparams.n_embd_v_gqa_max(), llama-kv-cache.cpp line 210), in the
    # window cache as well: [TAG_V_CACHE_VARIABLE].
    widest_v = 0
    if options.flash_attn == "off":
        rows = (_rows(group, cache.label, era) for cache in caches for group in cache.groups)
        widest_v = max((row.v_values or 0 for row in rows), default=0)
    parts: list[Part] = []
    printed: list[str] = []
    for cache in caches:
        cache_parts, line = _cache_parts(cache, era, options, widest_v)
        parts.extend(cache_parts)
        if line:
            printed.append(line)
    state_parts = _state_parts(layers.states, options, notes)
    parts.extend(state_parts)
    recurrent_line = _recurrent_line(model.num_layers, era, options, state_parts)
    if recurrent_line:
        printed.append(recurrent_line)
    if any(CACHE_TYPES[t][0] > 1 for t in (options.cache_type_k, options.cache_type_v)):
        notes.append(
            "quantized cache types carry one fp16 scale (q4_1, q5_1: scale and min) per 32 values:"
            " q8_0 is 8.5 bits per value, q4_0 and iq4_nl 4.5, q4_1 5, q5_0 5.5, q5_1 6"
        )
    if layers.latent and era.mla == "kv":
        notes.append(
            "MLA layers store the latent twice in this version: K = latent + rope, V = latent"
        )
    stated_options = (
        ("cache_type_k", options.cache_type_k),
        ("cache_type_v", options.cache_type_v),
        ("flash_attn", options.flash_attn),
        ("swa_full", str(options.swa_full).lower()),
        ("ubatch", str(options.ubatch)),
        ("parallel", str(options.parallel)),
        ("kv_unified", str(options.kv_unified).lower()),
        ("rs_seq", str(options.rs_seq)),
    )
    return EngineReport(
        engine=ENGINE,
        version=era_key,
        version_note=era.note,
        options=stated_options,
        context_tokens=context_tokens,
        context_meaning="-c / --ctx-size: cells for all sequences together",
        parts=tuple(parts),
        printed=tuple(printed),
        notes=tuple(notes),
    )


def agreeing_eras(
    model: Model,
    context_tokens: int,
    figure: str | int,
    options: LlamaCppOptions | None = None,
    cache: str = TOTAL,
) -> tuple[str, ...]:
    """The eras whose accounting gives ``figure`` for ``cache`` with these options (the
    options' own version is ignored), oldest first: which llama.cpp a printed size can come
    from when the source names no build. ``figure`` is bytes, or a size as written
    (``"2048.00 MiB"``); a MiB figure with two decimals must be the digits llama.cpp prints
    (``mib_as_printed``), any other the figure at its written precision. An era that builds
    no such cache, or cannot take the options, does not agree."""
    given = options or LlamaCppOptions()
    agreeing = []
    for era_key in ERAS:
        try:
            parts = report(model, context_tokens, given._replace(version=era_key))
            engine_bytes = bytes_of(parts.cache_parts(cache))
        except EngineError:
            continue
        if engine_bytes is not None and _states(figure, engine_bytes):
            agreeing.append(era_key)
    return tuple(agreeing)


def _states(figure: str | int, engine_bytes: int) -> bool:
    if isinstance(figure, int):
        return figure == engine_bytes
    quantity = parse_byte_quantity(figure.strip())
    if quantity is None:
        raise EngineError(f"{figure!r} is not a size such as '2048.00 MiB' or a byte count")
    if quantity.unit == "MiB" and quantity.number.decimals == 2:
        return quantity.number.text == mib_as_printed(engine_bytes)
    return quantity.agrees_with_bytes(Fraction(engine_bytes))


def _checked_era(context_tokens: int, options: LlamaCppOptions) -> str:
    """The era the options name, once every option is known and consistent."""
    check_choice("--cache-type-k", options.cache_type_k, CACHE_TYPE_NAMES)
    check_choice("--cache-type-v", options.cache_type_v, CACHE_TYPE_NAMES)
    check_choice("--flash-attn", options.flash_attn, FLASH_ATTN)
    version = check_choice("--engine-version", options.version, VERSIONS)
    era_key = LATEST if version == "latest" else version
    if context_tokens < 1:
        raise EngineError("llama.cpp needs a context of at least 1 cell")
    if options.ubatch < 1 or options.parallel < 1:
        raise EngineError("--ubatch and --parallel must be at least 1")
    if options.rs_seq < 0:
        raise EngineError("rs_seq (n_rs_seq) must be 0 or more")
    if options.rs_seq and ERAS[era_key].recurrent_line not in ("rs_seq", "p"):
        raise EngineError(
            f"version {era_key} keeps no recurrent-state snapshots (n_rs_seq came with PR #22673)"
        )
    if ERAS[era_key].cell_pad == "fa" and options.flash_attn == "auto":
        raise EngineError(
            f"in version {era_key} the cell padding depends on flash attention (256 cells with it,"
            " 32 without): give --flash-attn on or off"
        )
    if CACHE_TYPES[options.cache_type_v][0] > 1 and options.flash_attn == "off":
        raise EngineError("llama.cpp refuses a quantized V cache without flash attention")
    return era_key


def _cached_layers(model: Model, era: Era, era_key: str, options: LlamaCppOptions) -> _Layers:
    """The model's layers by cache; layouts this version handles in ways not covered are refused."""
    leaves = model.leaf_groups()
    attention = [group for group in leaves if isinstance(group, Attention) and group.layers]
    latent = tuple(group for group in leaves if isinstance(group, MultiHeadLatent) and group.layers)
    windowed = tuple(group for group in attention if group.window is not None)
    full = tuple(group for group in attention if group.window is None)
    states = tuple(
        group for group in leaves if group.kind in ("linear_attention", "mamba1", "mamba2")
    )
    if any(indexer_of(group) is not None for group in leaves):
        raise NotCovered("llama.cpp's cache for a sparse-attention indexer's keys was not read")
    if latent and era.mla == "none":
        raise NotCovered(
            f"llama.cpp before the MLA latent cache (version {era_key}) stored decompressed"
            " per-head K and V for MLA layers; models/ holds only kv_lora_rank and"
            " qk_rope_head_dim, so that allocation is not covered"
        )
    if windowed and not full and not latent and not options.swa_full:
        raise NotCovered(
            "every attention layer of this model has a sliding window; whether llama.cpp applies"
            " it depends on the architecture (Mistral 7B v0.1 runs as 'llama' without one), which"
            " the model file does not say. With --swa-full the figure is the same either way"
        )
    if latent and options.cache_type_k != options.cache_type_v and era_key == PINNED_BUILD[1]:
        # llama-context.cpp line 3835 at the pinned build; since when is not established
        raise EngineError(
            "llama.cpp refuses different K and V cache types for an MLA model"
            f" ({options.cache_type_k} and {options.cache_type_v})"
        )
    windows = {group.window for group in windowed}
    if len(windows) > 1 and era.swa_cache != "none" and not options.swa_full:
        raise NotCovered("llama.cpp keeps one n_swa per model; this model has several windows")
    return _Layers(full, windowed, latent, states)


def _cells(context_tokens: int, era: Era, options: LlamaCppOptions, notes: list[str]) -> _Cells:
    """The context, padded, split into one stream per sequence where the version does so."""
    parallel = options.parallel
    pad = {"fa": 256 if options.flash_attn == "on" else 32, "none": 1, "256": 256}[era.cell_pad]
    padded = pad_to(context_tokens, pad)
    streams = 1
    per_stream = padded
    if era.streams and not options.kv_unified and parallel > 1:
        streams = parallel
        if era.cell_pad == "256":
            per_stream = pad_to(padded // parallel, 256)
        else:
            per_stream = padded // parallel
            notes.append(
                "per-sequence cells are n_ctx / n_seq in this version; whether they were padded"
                " again is not established"
            )
        if per_stream < 1:
            raise EngineError(f"-c {context_tokens} gives no cells to each of {parallel} sequences")
    if per_stream * streams != context_tokens:
        notes.append(
            f"-c {context_tokens:,} becomes {per_stream:,} cells x {streams} stream(s)"
            f" = {per_stream * streams:,} cells ({_pad_reason(era, options, pad)})"
        )
    return _Cells(per_stream, streams, pad)


def _caches(
    layers: _Layers, cells: _Cells, era: Era, options: LlamaCppOptions, notes: list[str]
) -> list[_Cache]:
    """One cache for every attention layer, or a full and a sliding-window cache (iSWA)."""
    full_groups: tuple[LeafGroup, ...] = (*layers.full, *layers.latent)
    windowed = layers.windowed
    if not windowed or era.swa_cache == "none":
        if windowed:
            notes.append("window layers are cached at full size in this version")
        every_layer = (*full_groups, *windowed)
        return [_Cache("full_attention", "attention", cells.per_stream, cells.streams, every_layer)]
    if options.swa_full:
        window_cells = cells.per_stream
        notes.append("--swa-full: the window layers keep all cells, as full attention does")
    else:
        window = windowed[0].window
        assert window is not None
        parallel = options.parallel
        per_sequence = window * (parallel if (options.kv_unified or not era.streams) else 1)
        wanted = per_sequence + options.ubatch
        if era.swa_cache == "pad-min":
            window_cells = pad_to(min(cells.per_stream, wanted), 256)
        else:
            window_cells = min(cells.per_stream, pad_to(wanted, cells.pad))
        sequences = f" x {parallel} sequences" if per_sequence != window else ""
        notes.append(
            f"the {sum(group.layers for group in windowed)} window layers keep"
            f" {window_cells:,} cells: n_swa {window:,}{sequences} + n_ubatch {options.ubatch}"
            f" ({_swa_rule(era)}); logically they hold min(context, {window:,}) tokens"
        )
    return [
        _Cache("full_attention", "full-attention", cells.per_stream, cells.streams, full_groups),
        _Cache("sliding_window", "sliding-window", window_cells, cells.streams, windowed),
    ]


def _state_parts(
    states: tuple[LeafGroup, ...], options: LlamaCppOptions, notes: list[str]
) -> list[Part]:
    """llama_memory_recurrent: conv and recurrent state in f32, one cell per sequence, each
    cell with 1 + n_rs_seq rows since PR #22673 (llama-memory-recurrent.cpp lines 98-100)."""
    if not states:
        return []
    state_cells = max(1, options.parallel)
    rows = state_cells * (1 + options.rs_seq)
    per_cell = f"{state_cells} cell(s)"
    if options.rs_seq:
        per_cell += f" x (1 + {options.rs_seq} rs_seq) rows"
    parts: list[Part] = []
    for group in states:
        conv, recurrent = state_split(group)
        for label, elements in (("R (conv)", conv), ("S (recurrent)", recurrent)):
            total = None if elements is None else group.layers * rows * elements * 4
            parts.append(
                Part(
                    f"{label} state, {group.layers} {group.kind} layers (f32)",
                    total,
                    f"{group.layers} layers x {per_cell} x {_q(elements)} values x 4 B (f32)",
                    "recurrent_state",
                )
            )
    notes.append(
        "llama_memory_recurrent keeps the state in f32, one cell per sequence"
        f" ({state_cells}); the logical figure uses the state dtype of the model"
    )
    if options.rs_seq:
        notes.append(
            f"n_rs_seq {options.rs_seq}: llama.cpp keeps that many snapshots of each sequence's"
            " state for speculative rollback, on architectures that support it (Qwen3.5,"
            " Nemotron-H, LFM2 and a few more: llm_arch_supports_rs_rollback); for others it"
            " clamps n_rs_seq to 0, which the model file cannot say"
        )
    return parts


def _recurrent_line(layers: int, era: Era, options: LlamaCppOptions, parts: list[Part]) -> str:
    """llama_memory_recurrent's size line, in the format of the era (empty when none is known)."""
    if not parts or not era.recurrent_line:
        return ""
    r_bytes = bytes_of(tuple(part for part in parts if part.name.startswith("R ")))
    s_bytes = bytes_of(tuple(part for part in parts if part.name.startswith("S ")))
    if r_bytes is None or s_bytes is None:
        return ""
    cells = max(1, options.parallel)
    seqs = f"{cells:2d} seqs"
    if era.recurrent_line != "seqs":
        seqs += f" {options.rs_seq:2d} rs_seq"
    line = (
        f"llama_memory_recurrent: size = {mib_as_printed(r_bytes + s_bytes):>7} MiB ({cells:6d}"
        f" cells, {layers:3d} layers, {seqs}), R (f32): {mib_as_printed(r_bytes):>7} MiB,"
        f" S (f32): {mib_as_printed(s_bytes):>7} MiB"
    )
    if era.recurrent_line == "p":  # no model in models/ has a per-layer-embedding conv row
        line += f", P (f32): {mib_as_printed(0):>7} MiB"
    return line


def _pad_reason(era: Era, options: LlamaCppOptions, pad: int) -> str:
    if era.cell_pad == "none":
        return "no padding in this version"
    if era.cell_pad == "fa":
        return f"padded to {pad}, flash attention {options.flash_attn}"
    return "padded to 256, per sequence when the cache is not unified"


def _swa_rule(era: Era) -> str:
    if era.swa_cache == "pad-min":
        return "PAD(min(kv_size, ...), 256)"
    return "min(kv_size, PAD(..., pad))"


class _Rows(NamedTuple):
    """Values per cell of one layer group's K and V rows, and how they are shaped."""

    what: str
    k_values: int | None
    v_values: int | None  # 0: no V rows (MLA stores K only in some versions)
    k_shape: str
    v_shape: str


def _rows(group: LeafGroup, label: str, era: Era) -> _Rows:
    if isinstance(group, Attention):
        heads = group.kv_heads
        return _Rows(
            f"{group.layers} {label} layers",
            None if heads is None or group.head_dim is None else heads * group.head_dim,
            None if heads is None or group.value_dim is None else heads * group.value_dim,
            f"{_q(heads)} heads x {_q(group.head_dim)}",
            f"{_q(heads)} heads x {_q(group.value_dim)}",
        )
    assert isinstance(group, MultiHeadLatent)
    latent, rope = group.kv_lora_rank, group.qk_rope_head_dim
    return _Rows(
        f"{group.layers} MLA layers",
        None if latent is None or rope is None else latent + rope,
        latent if era.mla == "kv" else 0,
        f"(kv_lora_rank {_q(latent)} + rope {_q(rope)})",
        f"kv_lora_rank {_q(latent)}",
    )


def _cache_parts(
    cache: _Cache, era: Era, options: LlamaCppOptions, widest_v: int
) -> tuple[list[Part], str | None]:
    """The K and V parts of one cache and the size line llama.cpp prints for it; ``widest_v``
    is the V row every layer's V is padded to (0 with flash attention: no padding)."""
    type_k, type_v = options.cache_type_k, options.cache_type_v
    groups = [group for group in cache.groups if group.layers]
    if not groups:
        return [], None
    rows = [_rows(group, cache.label, era) for group in groups]
    cells = cache.cells * cache.streams
    per_layer = f"{cache.cells:,} cells x {cache.streams} stream(s)"
    parts: list[Part] = []
    k_total: int | None = 0
    v_total: int | None = 0
    for group, row in zip(groups, rows, strict=True):
        v_values, v_shape = row.v_values, row.v_shape
        if v_values and widest_v > v_values:
            v_values = widest_v
            v_shape += f" padded to {widest_v} (V transposed without flash attention)"
        k_bytes = (
            None
            if row.k_values is None
            else group.layers * cells * row_bytes(type_k, row.k_values, "K")
        )
        parts.append(
            Part(
                f"K cache, {row.what} ({type_k})",
                k_bytes,
                f"{group.layers} layers x {per_layer} x {row.k_shape} values"
                f" x {_type_formula(type_k)}",
                cache.name,
            )
        )
        v_bytes: int | None = 0
        if v_values != 0:
            v_bytes = (
                None
                if v_values is None
                else group.layers * cells * row_bytes(type_v, v_values, "V")
            )
            parts.append(
                Part(
                    f"V cache, {row.what} ({type_v})",
                    v_bytes,
                    f"{group.layers} layers x {per_layer} x {v_shape} values"
                    f" x {_type_formula(type_v)}",
                    cache.name,
                )
            )
        k_total = None if k_total is None or k_bytes is None else k_total + k_bytes
        v_total = None if v_total is None or v_bytes is None else v_total + v_bytes
    if k_total is None or v_total is None:
        return parts, None
    layers = sum(group.layers for group in groups)
    return parts, _size_line(era, cache, layers, k_total, v_total, options)


def _size_line(
    era: Era,
    cache: _Cache,
    layers: int,
    k_bytes: int,
    v_bytes: int,
    options: LlamaCppOptions,
) -> str:
    """The size line as llama.cpp formats it in this version."""
    size = mib_as_printed(k_bytes + v_bytes)
    k_mib, v_mib = mib_as_printed(k_bytes), mib_as_printed(v_bytes)
    tk, tv = options.cache_type_k, options.cache_type_v
    if era.swa_cache == "none":  # before the layer-filtered caches: the KV self size line
        return f"{era.log_prefix}: KV self size  = {size:>7} MiB, K ({tk}): {k_mib:>7} MiB, V ({tv}): {v_mib:>7} MiB"
    seqs = f"{options.parallel:2d}/{cache.streams}" if era.streams else f"{options.parallel:2d}"
    return (
        f"{era.log_prefix}: size = {size:>7} MiB ({cache.cells:6d} cells, {layers:3d} layers,"
        f" {seqs} seqs), K ({tk}): {k_mib:>7} MiB, V ({tv}): {v_mib:>7} MiB"
    )


def _q(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def bits_per_value(type_name: str) -> Fraction:
    """Storage bits per cached value for a cache type (block overhead included)."""
    block, block_bytes = CACHE_TYPES[type_name]
    return Fraction(block_bytes * 8, block)
