"""The values the command line offers, repeated from the library so that ``kvrecords --help``
starts without loading it (a test ties each to its source), and the options of a KV basis that
kv and new both take."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kvrecords.kv.engine_names import TENSORRT_LLM_KV_CACHE_DTYPES, VLLM_KV_CACHE_DTYPES

_Command = TypeVar("_Command", bound=Callable[..., object])

# kv.arithmetic.LAYER_BASES, for kv's and new's --layers (tests/test_arithmetic.py ties them)
LAYER_BASES = ("cache", "full_attention", "all_layers_as_full_attention")
# The record schema's techniques, for new's help (tests/test_cli_help.py ties them)
TECHNIQUES = (
    "prefix_caching",
    "radix_reuse",
    "cache_aware_routing",
    "kv_quantization",
    "mla",
    "sliding_window",
    "hybrid_linear_attention",
    "kv_offload",
    "kv_sharing",
    "kv_eviction",
    "sparse_attention",
    "disaggregated_serving",
    "paged_allocation",
    "speculative_decoding",
    "weight_offload",
    "baseline",
)
# The engine models' choices, for kv's engine options (tests/test_engines.py ties them)
ENGINES = ("llamacpp", "vllm", "sglang", "tensorrt-llm")
LLAMACPP_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")
LLAMACPP_VERSIONS = (
    "latest",
    "2024-05-pad-by-fa",
    "2025-04-mla",
    "2025-05-swa",
    "2025-07-streams",
    "2025-10-no-pad",
    "2025-11-pad-256",
    "2026-01-v-less",
    "2026-05-rs-seq",
    "2026-10-p-row",
)
SGLANG_KV_CACHE_DTYPES = (
    "auto",
    "fp8_e5m2",
    "fp8_e4m3",
    "bf16",
    "bfloat16",
    "fp4_e2m1",
    "mxfp8",
    "nvfp4",
    "fp4_mx_block16",
)
KV_CACHE_DTYPES = tuple(
    dict.fromkeys(VLLM_KV_CACHE_DTYPES + SGLANG_KV_CACHE_DTYPES + TENSORRT_LLM_KV_CACHE_DTYPES)
)
# hf_import.SUPPORTED_MODEL_TYPES, for import-hf's help (tests/test_import_hf.py ties them)
HF_MODEL_TYPES = (
    "deepseek_v2",
    "deepseek_v3",
    "falcon_h1",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "jamba",
    "kimi_k2",
    "llama",
    "mistral",
    "mixtral",
    "nemotron_h",
    "olmo3",
    "phi3",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
)


def dtype_option(help: str) -> Callable[[_Command], _Command]:
    """``--dtype``: the KV element type, bf16 unless given."""
    return click.option("--dtype", default="bf16", show_default=True, help=help)


def format_option(
    choices: tuple[str, ...] = ("text", "json"),
    help: str = "text for reading; json for tools (the keys are listed in the README).",
) -> Callable[[_Command], _Command]:
    """``--format``: the output's form, the first choice unless given."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help=help,
    )


def layers_option(help: str) -> Callable[[_Command], _Command]:
    """``--layers``: which layers the figures count, one of LAYER_BASES (cache unless given)."""
    return click.option(
        "--layers",
        "layers_counted",
        default="cache",
        show_default=True,
        type=click.Choice(LAYER_BASES),
        help=help,
    )


def whole_number_option(*names: str, help: str, **settings: Any) -> Callable[[_Command], _Command]:
    """An option taking a whole number from 1 up (a count, a context, a size); a default is shown."""
    return click.option(
        *names,
        type=click.IntRange(min=1),
        show_default="default" in settings,
        help=help,
        **settings,
    )


def switch_option(name: str, help: str) -> Callable[[_Command], _Command]:
    """A flag that is None unless given, so an engine's own default stands when it is absent."""
    return click.option(name, is_flag=True, default=None, help=help)
