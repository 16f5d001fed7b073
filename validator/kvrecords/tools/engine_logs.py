"""Read the cache figures out of a llama.cpp, vLLM, SGLang or TensorRT-LLM start-up log.

A contributor pastes a log instead of transcribing it: ``kvrecords kv --from-log FILE`` finds
the lines that state cache sizes (in any order, among any other output, with CRLF or CR line
ends, colour codes or timestamps in front) and prints their fields as YAML-style lines, each
with the line number it came from and the line as quoted. Figures keep the precision they were
printed with (``4352.00 MiB`` stays a string with its unit).

Each line is matched against a fixed set of regular expressions without nested repetition, on
at most ``MAX_LINE`` characters, so reading is linear in the log's size; nothing is evaluated.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

MAX_BYTES = 64 * 1024 * 1024
MAX_LINE = 8192
_ANSI = re.compile(r"\x1b\[[0-9;]{0,20}m")
_RESERVED = re.compile(r"(?i)true|false|yes|no|on|off|null|~")

_NUM = r"[0-9]{1,12}(?:\.[0-9]{1,6})?"
_INT = r"[0-9]{1,12}"
_NAME = r"[A-Za-z0-9_]{1,40}"
# vLLM prints counts with thousands separators from 0.8.0 (f"{n:,}"); V0's concurrency line
# and older builds print plain integers
_VLLM_COUNT = r"(?:[0-9]{1,3}(?:,[0-9]{3}){1,6}|[0-9]{1,12})"
# the pool's device: "GPU" on CUDA, the device type elsewhere; 0.34.0 adds " + host"
_VLLM_POOL = r"(?:GPU|[A-Z]{3,4})(?: \+ host)?"


class LogError(ValueError):
    """A file that is not a readable start-up log, or one with no cache figures."""


class Figure(NamedTuple):
    """One line that states cache figures."""

    line: int
    engine: str
    source: str  # what printed it (function or message)
    fields: tuple[tuple[str, str], ...]
    quoted: str


class Setting(NamedTuple):
    """A setting the log states (context, batch, version, model) that the figures depend on."""

    key: str
    value: str
    line: int


class LogReading(NamedTuple):
    figures: tuple[Figure, ...]
    settings: tuple[Setting, ...]

    @property
    def engines(self) -> tuple[str, ...]:
        seen: list[str] = []
        for figure in self.figures:
            if figure.engine not in seen:
                seen.append(figure.engine)
        return tuple(seen)


def _mib(value: str) -> str:
    return f"{value} MiB"


def _tokens(value: str) -> str:
    return value.replace(",", "")


# A figure pattern: (engine, compiled pattern, builder of (source, fields) from the match).
_Builder = Callable[[re.Match[str]], tuple[str, tuple[tuple[str, str], ...]]]


class _Field(NamedTuple):
    """A field of a figure line: its name, the pattern's group that holds it, and the unit
    written after the value."""

    name: str
    group: str
    unit: str = ""


def _fields(source: str | None, *fields: _Field) -> _Builder:
    """The builder of a line whose fields are its groups as printed, thousands separators
    dropped (vLLM's counts), each with its unit; a field whose optional group did not match is
    left out. The source is the function that printed the line (group ``fn``) when None."""

    def build(m: re.Match[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
        values = tuple(
            (field.name, _tokens(m[field.group]) + field.unit)
            for field in fields
            if m[field.group] is not None
        )
        return m["fn"] if source is None else source, values

    return build


def _llama_size(m: re.Match[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    recurrent = m["a"] == "R"
    fields: list[tuple[str, str]] = [
        ("size", _mib(m["size"])),
        ("cells", m["cells"]),
        ("layers", m["layers"]),
        ("seqs", m["seqs"] + (f"/{m['streams']}" if m["streams"] else "")),
    ]
    if m["rs_seq"]:  # recurrent-state snapshots per sequence (llama.cpp PR #22673)
        fields.append(("rs_seq", m["rs_seq"]))
    if recurrent:
        fields += [
            ("type_r", m["ta"]),
            ("r", _mib(m["ma"])),
            ("type_s", m["tb"]),
            ("s", _mib(m["mb"])),
        ]
        if m["mp"]:  # the per-layer-embedding conv row of newer builds
            fields += [("type_p", m["tp"]), ("p", _mib(m["mp"]))]
    else:
        fields += [
            ("type_k", m["ta"]),
            ("k", _mib(m["ma"])),
            ("type_v", m["tb"]),
            ("v", _mib(m["mb"])),
        ]
    return m["fn"], tuple(fields)


_llama_self = _fields(
    None,
    _Field("size", "size", " MiB"),
    _Field("type_k", "tk"),
    _Field("k", "mk", " MiB"),
    _Field("type_v", "tv"),
    _Field("v", "mv", " MiB"),
)
_llama_init = _fields(
    None,
    _Field("cells", "cells"),
    _Field("type_k", "tk"),
    _Field("type_v", "tv"),
    _Field("layers", "layers"),
    _Field("padding", "pad"),
)


def _llama_iswa(m: re.Match[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    cache = "sliding_window" if m["which"] == "SWA" else "full_attention"  # engine_accounting's
    return m["fn"], (("cache", cache), ("cells", m["cells"]))


def _llama_buffer(m: re.Match[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    fields: tuple[tuple[str, str], ...] = (("buffer", m["buf"]), ("buffer_size", _mib(m["size"])))
    if m["kind"] == "RS":  # llama_memory_recurrent's buffer
        fields += (("memory", "recurrent_state"),)
    return m["fn"], fields


_vllm_tokens = _fields("GPU KV cache size", _Field("gpu_kv_cache_tokens", "tokens"))
_vllm_concurrency = _fields(
    "Maximum concurrency", _Field("max_model_len", "len"), _Field("max_concurrency", "x", "x")
)
_vllm_capacity = _fields(
    "GPU KV cache size, Maximum concurrency",
    _Field("gpu_kv_cache_tokens", "tokens"),
    _Field("max_model_len", "len"),
    _Field("max_concurrency", "x", "x"),
)
_vllm_blocks = _fields("# GPU blocks", _Field("gpu_blocks", "gpu"), _Field("cpu_blocks", "cpu"))
_vllm_available = _fields(
    "Available KV cache memory", _Field("available_kv_cache_memory", "gib", " GiB")
)
_vllm_needed = _fields(
    "KV cache is needed",
    _Field("kv_cache_needed", "need", " GiB"),
    _Field("available_kv_cache_memory", "avail", " GiB"),
)
_vllm_estimate = _fields("estimated maximum model length", _Field("estimated_max_model_len", "len"))
_vllm_block_size = _fields("Setting attention block size", _Field("attention_block_size", "size"))
_vllm_mamba_pad = _fields("Padding mamba page size", _Field("mamba_page_padding", "pct", "%"))


# SGLang's SWAKVPool labels: the pool each line sizes, as engine_accounting.cache names it
_SGLANG_POOLS = {"Full": "full_attention", "SWA": "sliding_window"}


def _sglang_kv(m: re.Match[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    # 0.4.1.post6 to 0.4.3.post2 print no #tokens; from 0.5.13 a dtype comes first
    fields = [("cache", _SGLANG_POOLS[m["label"]])] if m["label"] else []  # from 0.5.19
    if m["dtype"]:
        fields.append(("dtype", m["dtype"]))
    if m["tokens"]:
        fields.append(("pool_tokens", m["tokens"]))
    if m["kv"]:
        fields.append(("kv_size", f"{m['kv']} GiB"))
    else:
        fields += [("k_size", f"{m['k']} GiB"), ("v_size", f"{m['v']} GiB")]
    return "KV Cache is allocated", tuple(fields)


_trtllm_pool = _fields(
    "Allocated ... for max tokens in paged KV cache",
    _Field("kv_pool_size", "gib", " GiB"),
    _Field("pool_tokens", "tokens"),
)
_trtllm_block = _fields("Number of tokens per block", _Field("tokens_per_block", "n"))
_trtllm_blocks = _fields("Number of blocks in KV cache primary pool", _Field("primary_blocks", "n"))
_trtllm_pages = _fields("Max KV cache pages per sequence", _Field("max_pages_per_sequence", "n"))
_trtllm_window = _fields(
    "Max KV cache blocks per sequence",
    _Field("max_blocks_per_sequence", "n"),
    _Field("window_size", "window"),
    _Field("tokens_per_block", "tpb"),
    _Field("primary_blocks", "primary"),
    _Field("secondary_blocks", "secondary"),
    _Field("max_sequence_length", "seq"),
)


# Each line the reader knows: the engine, the pattern (compiled once below) and what it gives.
_FIGURE_LINES: tuple[tuple[str, str, _Builder], ...] = (
    (
        "llamacpp",
        (
            rf"(?P<fn>{_NAME}): size = {{0,8}}(?P<size>{_NUM}) MiB \( {{0,12}}(?P<cells>{_INT})"
            rf" cells, {{0,6}}(?P<layers>{_INT}) layers, {{0,6}}(?P<seqs>{_INT})(?:/(?P<streams>{_INT}))?"
            rf" seqs(?: {{1,6}}(?P<rs_seq>{_INT}) rs_seq)?\), (?P<a>[KR]) \((?P<ta>{_NAME})\):"
            rf" {{0,8}}(?P<ma>{_NUM}) MiB, (?P<b>[VS]) \((?P<tb>{_NAME})\): {{0,8}}(?P<mb>{_NUM}) MiB"
            rf"(?:, P \((?P<tp>{_NAME})\): {{0,8}}(?P<mp>{_NUM}) MiB)?"
        ),
        _llama_size,
    ),
    (
        "llamacpp",
        (
            rf"(?P<fn>{_NAME}): KV self size {{0,4}}= {{0,8}}(?P<size>{_NUM}) MiB,"
            rf" K \((?P<tk>{_NAME})\): {{0,8}}(?P<mk>{_NUM}) MiB,"
            rf" V \((?P<tv>{_NAME})\): {{0,8}}(?P<mv>{_NUM}) MiB"
        ),
        _llama_self,
    ),
    (
        "llamacpp",
        (
            rf"(?P<fn>{_NAME}): kv_size = (?P<cells>{_INT}),(?: offload = {_INT},)?"
            rf" type_k = '(?P<tk>{_NAME})', type_v = '(?P<tv>{_NAME})', n_layer = (?P<layers>{_INT})"
            rf"(?:, can_shift = {_INT})?(?:, padding = (?P<pad>{_INT}))?"
        ),
        _llama_init,
    ),
    (
        "llamacpp",
        (
            rf"(?P<fn>{_NAME}): creating {{1,8}}(?P<which>non-SWA|SWA) KV cache,"
            rf" size = (?P<cells>{_INT}) cells"
        ),
        _llama_iswa,
    ),
    (
        "llamacpp",
        (
            rf"(?P<fn>{_NAME}): {{0,12}}(?P<buf>[A-Za-z0-9_]{{1,40}}) (?P<kind>KV|RS) buffer size"
            rf" = {{0,8}}(?P<size>{_NUM}) MiB"
        ),
        _llama_buffer,
    ),
    (  # 0.28.0 on: one line (kv_cache_utils.py update_kv_cache_capacity)
        "vllm",
        (
            rf"{_VLLM_POOL} KV cache size: (?P<tokens>{_VLLM_COUNT}) tokens, Maximum concurrency"
            rf" for (?P<len>{_VLLM_COUNT}) tokens per request: (?P<x>{_NUM})x"
        ),
        _vllm_capacity,
    ),
    (
        "vllm",
        rf"{_VLLM_POOL} KV cache size: (?P<tokens>{_VLLM_COUNT}) tokens",
        _vllm_tokens,
    ),
    (
        "vllm",
        (rf"Maximum concurrency for (?P<len>{_VLLM_COUNT}) tokens per request: (?P<x>{_NUM})x"),
        _vllm_concurrency,
    ),
    (  # V0 executor_base.py: "# %s blocks: %d, # CPU blocks: %d" with the device name
        "vllm",
        (rf"# (?:GPU|[A-Za-z]{{2,8}}) blocks: (?P<gpu>{_INT})(?:, # CPU blocks: (?P<cpu>{_INT}))?"),
        _vllm_blocks,
    ),
    ("vllm", rf"Available KV cache memory: (?P<gib>{_NUM}) GiB", _vllm_available),
    (
        "vllm",
        (
            rf"\((?P<need>{_NUM}) GiB KV cache is needed, which is larger than the available"
            rf" KV cache memory \((?P<avail>{_NUM}) GiB\)"
        ),
        _vllm_needed,
    ),
    (
        "vllm",
        rf"the estimated maximum model length is (?P<len>{_INT})",
        _vllm_estimate,
    ),
    (
        "vllm",
        rf"Setting attention block size to (?P<size>{_INT}) tokens",
        _vllm_block_size,
    ),
    (
        "vllm",
        rf"Padding mamba page size by (?P<pct>{_NUM})%",
        _vllm_mamba_pad,
    ),
    (
        "sglang",
        (
            rf"(?:(?P<label>Full|SWA) )?KV Cache (?:is allocated|VA upper bound)\.(?: dtype: (?P<dtype>[A-Za-z0-9_.]{{1,40}}),)?"
            rf"(?: #tokens: (?P<tokens>{_INT}),)?"
            rf"(?: KV size: (?P<kv>{_NUM}) GB| K size: (?P<k>{_NUM}) GB, V size: (?P<v>{_NUM}) GB)"
        ),
        _sglang_kv,
    ),
    (
        "tensorrt-llm",
        (rf"Allocated (?P<gib>{_NUM}) GiB for max tokens in paged KV cache \((?P<tokens>{_INT})\)"),
        _trtllm_pool,
    ),
    ("tensorrt-llm", rf"Number of tokens per block: (?P<n>{_INT})", _trtllm_block),
    (
        "tensorrt-llm",
        rf"Number of blocks in KV cache primary pool: (?P<n>{_INT})",
        _trtllm_blocks,
    ),
    (
        "tensorrt-llm",
        rf"Max KV cache pages per sequence: (?P<n>{_INT})",
        _trtllm_pages,
    ),
    (
        "tensorrt-llm",
        (
            rf"Max KV cache blocks per sequence: (?P<n>{_INT}) \[window size=(?P<window>{_INT})\],"
            rf" tokens per block=(?P<tpb>{_INT}), primary blocks=(?P<primary>{_INT}),"
            rf" secondary blocks=(?P<secondary>{_INT})(?:, max sequence length=(?P<seq>{_INT}))?"
        ),
        _trtllm_window,
    ),
)
_FIGURES = tuple((engine, re.compile(pattern), build) for engine, pattern, build in _FIGURE_LINES)

_SETTINGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "llamacpp_{0}",
        re.compile(
            r"(?:llama_context|llama_init_from_model|llama_new_context_with_model): "
            r"(n_ctx|n_ctx_per_seq|n_ctx_seq|n_seq_max|n_batch|n_ubatch|flash_attn|kv_unified"
            r"|swa_full|n_rs_seq) {0,24}= {0,8}([A-Za-z0-9_]{1,20})"
        ),
    ),
    ("llamacpp_build", re.compile(r"\bbuild(?: =|:) ([0-9]{1,7}) \(([0-9a-f]{4,40})\)")),
    ("llamacpp_build", re.compile(r"^version: ([0-9]{1,7}) \(([0-9a-f]{4,40})\)")),
    (
        "model_name",
        re.compile(r"general\.name {1,40}(?:str {1,40})?= {1,10}(\S(?:[^\r\n]{0,200}\S)?)"),
    ),
    ("vllm_version", re.compile(r"vLLM API server version ([0-9][0-9A-Za-z.+\-]{0,60})")),
    ("vllm_version", re.compile(r"LLM engine \(v([0-9][0-9A-Za-z.+\-]{0,60})\)")),
    ("model", re.compile(r"'model': '([^']{1,300})'")),
    ("model", re.compile(r"\bmodel='([^']{1,300})'")),
    ("kv_cache_dtype", re.compile(r"\bkv_cache_dtype=([A-Za-z0-9_]{1,40})")),
    ("kv_cache_dtype", re.compile(r"'kv_cache_dtype': '([A-Za-z0-9_]{1,40})'")),
    ("max_model_len", re.compile(r"Using max model len ([0-9]{1,9})")),
    ("model", re.compile(r"\bmodel_path='([^']{1,300})'")),
    ("kv_cache_dtype", re.compile(r"\bkv_cache_dtype='([A-Za-z0-9_]{1,40})'")),
    ("sglang_page_size", re.compile(r"\bpage_size=([0-9]{1,6}),")),
    ("sglang_tp_size", re.compile(r"\btp_size=([0-9]{1,4}),")),
    ("sglang_max_total_num_tokens", re.compile(r"\bmax_total_num_tokens=([0-9]{1,12})")),
    (
        "sglang_full_layer_tokens",
        re.compile(r"[Ss]liding window memory pool\. full_layer_tokens=([0-9]{1,12})"),
    ),
    (
        "sglang_swa_layer_tokens",
        re.compile(r"[Ss]liding window memory pool\.[^\r\n]{0,60}?swa_layer_tokens=([0-9]{1,12})"),
    ),
    (
        "tensorrt_llm_version",
        re.compile(r"TensorRT-LLM [Vv]ersion: {1,8}([0-9][0-9A-Za-z.+\-]{0,60})"),
    ),
)


def read_log(text: str) -> LogReading:
    """Every cache figure and setting in ``text``; the first value of a setting wins."""
    figures: list[Figure] = []
    settings: dict[str, Setting] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _ANSI.sub("", raw[:MAX_LINE])
        if not line.strip():
            continue
        for engine, pattern, build in _FIGURES:
            match = pattern.search(line)
            if match is not None:
                source, fields = build(match)
                figures.append(Figure(number, engine, source, fields, line.strip()))
                break
        for key, pattern in _SETTINGS:
            match = pattern.search(line)
            if match is None:
                continue
            if key == "llamacpp_{0}":
                name, value = f"llamacpp_{match[1]}", match[2]
            elif key == "llamacpp_build":
                name, value = key, f"b{match[1]} ({match[2]})"
            else:
                name, value = key, match[1]
            settings.setdefault(name, Setting(name, value, number))
    return LogReading(tuple(figures), tuple(settings.values()))


def read_log_file(path: Path) -> LogReading:
    """Read ``path``; ``LogError`` when it is unreadable, binary, too large or has no figures."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):  # a pipe or a device would block or never end
            raise LogError(f"{path}: not a regular file; save the log to a file first")
        size = status.st_size
        if size > MAX_BYTES:
            raise LogError(f"{path}: {size:,} bytes; a start-up log over {MAX_BYTES:,} is refused")
        data = path.read_bytes()
    except OSError as error:
        raise LogError(f"{path}: cannot read: {error.strerror or error}") from None
    if not data.strip():
        raise LogError(f"{path}: the log is empty")
    if b"\x00" in data:
        raise LogError(f"{path}: not a text log (it contains NUL bytes)")
    reading = read_log(data.decode("utf-8", errors="replace"))
    if not reading.figures:
        raise LogError(
            f"{path}: no cache figures found (looked for llama.cpp 'size = ... MiB (... cells',"
            " 'KV self size', vLLM 'GPU KV cache size: N tokens', 'Maximum concurrency for',"
            " SGLang 'KV Cache is allocated', with or without #tokens and dtype,"
            " TensorRT-LLM 'for max tokens in paged KV cache')"
        )
    return reading


def _scalar(value: str) -> str:
    """A YAML scalar: plain when safe, else double-quoted (JSON escapes are valid YAML)."""
    plain = re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./+\- ]{0,80}", value) is not None
    if plain and not value.endswith(" ") and not _RESERVED.fullmatch(value):
        return value
    return json.dumps(value)


def render(reading: LogReading, name: str) -> str:
    """The figures as YAML-style lines a contributor can paste into a record."""
    engines = reading.engines
    out = [f"# read from {name}: {len(reading.figures)} cache figure line(s)"]
    if len(engines) == 1:
        out.append(f"engine: {engines[0]}")
    else:
        out.append(f"engines: [{', '.join(engines)}]")
    if reading.settings:
        out.append("settings:")
        for setting in reading.settings:
            out.append(f"  {setting.key}: {_scalar(setting.value)}  # line {setting.line}")
    out.append("figures:")
    for figure in reading.figures:
        out.append(f"  - line: {figure.line}")
        if len(engines) > 1:
            out.append(f"    engine: {figure.engine}")
        out.append(f"    printed_by: {_scalar(figure.source)}")
        for key, value in figure.fields:
            out.append(f"    {key}: {_scalar(value)}")
        out.append(f"    quoted: {json.dumps(figure.quoted)}")
    return "\n".join(out)
