"""``kvrecords plan``: does MODEL fit these accelerators at this context for these users, and
what has been measured to help (tools/plan.py answers; this module parses and prints)."""

from __future__ import annotations

import json
from fractions import Fraction

import click

from kvrecords.cli.choices import format_option, whole_number_option
from kvrecords.cli.common import clean_root, fail


@click.command()
@click.argument("model")
@click.option("--hardware", "hardware_id", required=True, help="Accelerator id from hardware/.")
@whole_number_option(
    "--count", default=1, help="Accelerators of that kind on one node (at most 8)."
)
@whole_number_option(
    "--context", "context_tokens", required=True, help="Tokens per request (vLLM's max_model_len)."
)
@whole_number_option("--users", default=1, help="Requests of --context tokens served at once.")
@click.option(
    "--engine",
    default="vllm",
    show_default=True,
    help="ENGINE or ENGINE@VERSION (the engine layer covers vLLM).",
)
@whole_number_option(
    "--tp",
    "tensor_parallel",
    help="Tensor-parallel size (default: every accelerator in one group).",
)
@click.option(
    "--kv-dtype",
    "kv_cache_dtype",
    default="auto",
    show_default=True,
    help="The engine's kv_cache_dtype: auto (the model's 16-bit dtype) or fp8.",
)
@click.option("--weights-precision", help="bf16, fp8, int4, awq, ... (default: 16-bit).")
@click.option(
    "--gpu-memory-utilization",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.9,
    show_default=True,
    help="vLLM's memory fraction.",
)
@click.option(
    "--kv-memory",
    "kv_memory_gib",
    help="GiB as printed: the engine's 'Available KV cache memory' from a start-up log.",
)
@format_option()
def plan(
    model: str,
    hardware_id: str,
    count: int,
    context_tokens: int,
    users: int,
    engine: str,
    tensor_parallel: int | None,
    kv_cache_dtype: str,
    weights_precision: str | None,
    gpu_memory_utilization: float,
    kv_memory_gib: str | None,
    output_format: str,
) -> None:
    """Answer "MODEL on COUNT x HARDWARE at CONTEXT tokens for USERS: does it fit, and what
    helps?" in three labelled layers: the exact arithmetic, the engine's pool as an interval
    with the lines it would print, and the nearest measured records."""
    from kvrecords.tools.plan import (
        PlanRefused,
        Question,
        answer_from_dataset,
        render_text,
        to_json,
    )

    name, _, version = engine.partition("@")
    question = Question(
        model,
        hardware_id,
        count,
        context_tokens,
        users,
        engine=name,
        engine_version=version or "latest",
        tensor_parallel=tensor_parallel,
        kv_cache_dtype=kv_cache_dtype,
        weights_precision=weights_precision,
        gpu_memory_utilization=Fraction(str(gpu_memory_utilization)),
        kv_memory_gib=kv_memory_gib,
    )
    try:
        answer = answer_from_dataset(clean_root(), question)
    except PlanRefused as refused:
        fail(f"plan: {refused}")
    if output_format == "json":
        click.echo(json.dumps(to_json(answer), indent=2))
    else:
        click.echo(render_text(answer))
