"""``kvrecords kv``: a model's KV arithmetic, what an engine allocates for it, or the cache
figures an engine's start-up log states."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from kvrecords.cli.choices import (
    ENGINES,
    KV_CACHE_DTYPES,
    LLAMACPP_CACHE_TYPES,
    LLAMACPP_VERSIONS,
    SGLANG_KV_CACHE_DTYPES,
    dtype_option,
    format_option,
    layers_option,
    switch_option,
    whole_number_option,
)
from kvrecords.cli.common import dataset_root, fail, inside_dataset
from kvrecords.kv.engine_names import TENSORRT_LLM_KV_CACHE_DTYPES, VLLM_KV_CACHE_DTYPES


@click.command()
@click.argument("model", required=False)
@click.option(
    "--context",
    "context_tokens",
    type=click.IntRange(min=0),
    help="Context length in tokens; default: the model's max_context_tokens.",
)
@dtype_option("KV element type (bf16, fp8, int2-g32, nvfp4, ...).")
@click.option(
    "--state-dtype", help="Element type of the fixed state; default: the model's dtype, else bf16."
)
@layers_option("Which layers count.")
@format_option()
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    help=(
        "Also show what this engine allocates at --context: llamacpp, vllm, sglang or tensorrt-llm."
    ),
)
@click.option(
    "--engine-version",
    help=(
        "The engine's version (default latest). llamacpp: "
        + ", ".join(LLAMACPP_VERSIONS)
        + " (named by the change; build numbers are not mapped). vllm: a release such as"
        " 0.10.1. sglang: a release from 0.4.0 to 0.5.23, such as 0.5.6.post2. tensorrt-llm: a"
        " release 0.12.0 to 1.2.x such as 1.1.0rc3."
    ),
)
@click.option(
    "--cache-type-k",
    "-ctk",
    type=click.Choice(LLAMACPP_CACHE_TYPES),
    help="llamacpp: K cache type (default f16); one of " + ", ".join(LLAMACPP_CACHE_TYPES) + ".",
)
@click.option(
    "--cache-type-v",
    "-ctv",
    type=click.Choice(LLAMACPP_CACHE_TYPES),
    help="llamacpp: V cache type (default f16); one of " + ", ".join(LLAMACPP_CACHE_TYPES) + ".",
)
@click.option(
    "--flash-attn",
    "-fa",
    type=click.Choice(("on", "off", "auto")),
    help="llamacpp: flash attention on, off or auto (default auto); older versions need on/off.",
)
@switch_option(
    "--swa-full", help="llamacpp: keep all cells for sliding-window layers (flag; default off)."
)
@whole_number_option(
    "--ubatch",
    "-ub",
    help="llamacpp: physical batch size n_ubatch (default 512); sizes the window cache.",
)
@whole_number_option(
    "--parallel",
    "-np",
    help="llamacpp: number of sequences / server slots (default 1).",
)
@switch_option(
    "--kv-unified",
    help="llamacpp: one cache shared by all sequences (flag; default: a stream per sequence).",
)
@click.option(
    "--kv-cache-dtype",
    type=click.Choice(KV_CACHE_DTYPES),
    help=(
        "vllm, sglang or tensorrt-llm: cache dtype (default auto). vllm: "
        + ", ".join(VLLM_KV_CACHE_DTYPES)
        + ". sglang: "
        + ", ".join(SGLANG_KV_CACHE_DTYPES)
        + ". tensorrt-llm: "
        + ", ".join(TENSORRT_LLM_KV_CACHE_DTYPES)
        + "."
    ),
)
@whole_number_option(
    "--block-size",
    help="vllm: tokens per block (default 16, 64 for MLA; hybrids align it to the state page).",
)
@whole_number_option(
    "--max-num-batched-tokens",
    help="vllm: tokens per step (default 8192); sizes the pages of sliding-window layers.",
)
@whole_number_option(
    "--tensor-parallel-size",
    "--tp-size",
    "tensor_parallel_size",
    help="vllm, sglang or tensorrt-llm: tensor-parallel ranks (default 1); figures are per rank.",
)
@click.option(
    "--mamba-ssm-cache-dtype",
    type=click.Choice(("auto", "float32", "bfloat16", "float16")),
    help="vllm: dtype of the SSM / recurrent state (default auto, the model dtype).",
)
@switch_option(
    "--disable-hybrid-kv-cache-manager",
    help="vllm: window layers keep every token, as before the hybrid allocator (flag).",
)
@whole_number_option(
    "--tokens-per-block",
    help="tensorrt-llm: tokens per KV cache block (default 32 from 0.19.0, 64 before).",
)
@whole_number_option(
    "--page-size",
    help="sglang: tokens per page (default 1; 64 for DeepSeek-V3.2).",
)
@click.option(
    "--from-log",
    "from_log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read a llama.cpp, vLLM or SGLang start-up log and print the cache figures it states.",
)
def kv(
    model: str | None,
    context_tokens: int | None,
    dtype: str,
    state_dtype: str | None,
    layers_counted: str,
    output_format: str,
    engine: str | None,
    engine_version: str | None,
    from_log: Path | None,
    **engine_options: object,
) -> None:
    """Show the KV arithmetic of MODEL (an id from models/ or a path to a model file).

    With --engine, also what that engine allocates at --context, part by part, next to the
    logical figure, with the engine's own option spellings. With --from-log FILE, read the
    cache figures out of an engine's start-up log instead (no MODEL).
    """
    if from_log is not None:
        if model is not None or engine is not None:
            fail("give MODEL (with --engine) or --from-log FILE, not both")
        _kv_from_log(from_log)
        return
    if model is None:
        fail("give MODEL, or --from-log FILE")
    given = {name: value for name, value in engine_options.items() if value is not None}
    if engine is None and (given or engine_version is not None):
        fail(f"--{next(iter(given), 'engine_version').replace('_', '-')} needs --engine")
    path = _model_path(model)
    from kvrecords.tools.kv_report import (
        KvRequestError,
        engine_allocation,
        model_report,
        report_json,
        report_text,
    )

    try:
        report = model_report(path, dtype, state_dtype, context_tokens, layers_counted)
        allocation = None
        if engine is not None:
            allocation = engine_allocation(report, engine, engine_version, given)
    except KvRequestError as error:
        fail(str(error))
    if output_format == "json":
        click.echo(json.dumps(report_json(report, allocation), indent=2))
    else:
        click.echo(report_text(report, allocation))


def _model_path(model: str) -> Path:
    """The model file MODEL names: a path as given, else models/<id>.yaml (exit 2 if none)."""
    from kvrecords.problems import did_you_mean

    if model.endswith((".yaml", ".yml")) or os.sep in model or "/" in model:
        if not Path(model).is_file():
            fail(f"no model file {model}")
        return Path(model)
    root = dataset_root()
    models = root / "models"
    path = models / f"{model}.yaml"
    if not path.is_file():
        hint = did_you_mean(model, (known.stem for known in models.glob("*.yaml")))
        fail(f"model {model!r}: models/{model}.yaml does not exist{hint}")
    return inside_dataset(root, path)


def _kv_from_log(path: Path) -> None:
    from kvrecords.tools.engine_logs import LogError, read_log_file, render

    try:
        reading = read_log_file(path)
    except LogError as error:
        click.echo(f"kvrecords: {error}", err=True)
        sys.exit(1)
    click.echo(render(reading, path.name))
