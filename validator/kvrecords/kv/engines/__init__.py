"""Engine models: what llama.cpp, vLLM, SGLang and TensorRT-LLM allocate for a model's cache.

The logical arithmetic (``kv.arithmetic``) counts the bytes a cache must hold; an engine
allocates more or less: padded cells, whole blocks, quantization scales, pages padded to a
common size, state kept in f32, an indexer beside the latent. Each engine's module reads its
accounting from the engine's own source and says which versions it covers.

One entry point for callers (the ``kv`` command now, record checks later)::

    engine_report(model, "llamacpp", 32768, version="latest", cache_type_k="q8_0")

returns an ``EngineReport`` (parts, total, the engine's printed lines, notes; ``cache_parts``
for one of the caches it prints a size for) or raises ``EngineError`` (``UnknownValue`` for a
value outside the engine's set, ``NotCovered`` for a model, option or version the engine model
does not cover, ``NoSuchCache`` for a printed cache the engine does not build).
"""

from __future__ import annotations

import typing

from kvrecords.kv.engine_names import TENSORRT_LLM_KV_CACHE_DTYPES, VLLM_KV_CACHE_DTYPES
from kvrecords.kv.engines import llamacpp, sglang, tensorrt_llm, vllm
from kvrecords.kv.engines.result import (
    CACHES,
    TOTAL,
    EngineError,
    EngineReport,
    NoSuchCache,
    NotCovered,
    Part,
    UnknownValue,
    bytes_of,
)
from kvrecords.kv.geometry import Model

ENGINES = ("llamacpp", "vllm", "sglang", "tensorrt-llm")
_OPTION_TUPLES: dict[str, type[tuple[object, ...]]] = {
    "llamacpp": llamacpp.LlamaCppOptions,
    "vllm": vllm.VllmOptions,
    "sglang": sglang.SglangOptions,
    "tensorrt-llm": tensorrt_llm.TensorRtLlmOptions,
}
# The options whose value is one of a set, with the set (what a record's accounting is held to
# before the engine model runs).
_CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "llamacpp": {
        "cache_type_k": llamacpp.CACHE_TYPE_NAMES,
        "cache_type_v": llamacpp.CACHE_TYPE_NAMES,
        "flash_attn": llamacpp.FLASH_ATTN,
        "version": llamacpp.VERSIONS,
    },
    "vllm": {
        "kv_cache_dtype": VLLM_KV_CACHE_DTYPES,
        "mamba_ssm_cache_dtype": vllm.MAMBA_SSM_DTYPES,
    },
    "sglang": {"kv_cache_dtype": sglang.KV_CACHE_DTYPES},
    "tensorrt-llm": {"kv_cache_dtype": TENSORRT_LLM_KV_CACHE_DTYPES},
}

__all__ = [
    "CACHES",
    "ENGINES",
    "TOTAL",
    "EngineError",
    "EngineReport",
    "NoSuchCache",
    "NotCovered",
    "Part",
    "UnknownValue",
    "bytes_of",
    "engine_report",
    "option_choices",
    "option_names",
    "option_types",
]


def option_names(engine: str) -> tuple[str, ...]:
    """The option names an engine takes (besides ``version``)."""
    return tuple(name for name in option_types(engine) if name != "version")


def option_types(engine: str) -> dict[str, tuple[type, ...]]:
    """Each option of an engine (``version`` too) with the types its value may have: ``int``
    for a count, ``str`` for a name, ``bool`` for a switch."""
    if engine not in _OPTION_TUPLES:
        raise UnknownValue("--engine", engine, ENGINES)
    hints = typing.get_type_hints(_OPTION_TUPLES[engine])
    return {
        name: tuple(t for t in typing.get_args(hint) or (hint,) if t is not type(None))
        for name, hint in hints.items()
    }


def option_choices(engine: str, option: str) -> tuple[str, ...] | None:
    """The values an option whose value is one of a set may take, else None."""
    return _CHOICES.get(engine, {}).get(option)


def engine_report(
    model: Model,
    engine: str,
    context_tokens: int,
    version: str = "latest",
    **options: object,
) -> EngineReport:
    """What ``engine`` at ``version`` with ``options`` allocates for ``model`` at the context."""
    allowed = option_names(engine)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise EngineError(f"{engine} takes no option {unknown[0]!r}; options: {', '.join(allowed)}")
    if engine == "llamacpp":
        return llamacpp.report(
            model,
            context_tokens,
            llamacpp.LlamaCppOptions(version=version, **options),  # type: ignore[arg-type]
        )
    if engine == "vllm":
        return vllm.report(
            model,
            context_tokens,
            vllm.VllmOptions(version=version, **options),  # type: ignore[arg-type]
        )
    if engine == "tensorrt-llm":
        return tensorrt_llm.report(
            model,
            context_tokens,
            tensorrt_llm.TensorRtLlmOptions(version=version, **options),  # type: ignore[arg-type]
        )
    return sglang.report(
        model,
        context_tokens,
        sglang.SglangOptions(version=version, **options),  # type: ignore[arg-type]
    )
