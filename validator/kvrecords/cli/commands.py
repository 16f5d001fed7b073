"""The ``kvrecords`` commands: parse options, run, return an exit code (see ``entry.py``).

Heavy modules are imported inside the commands so that ``kvrecords --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import click

from kvrecords.cli.common import dataset_root as _root
from kvrecords.cli.common import fail as _fail
from kvrecords.cli.common import run_validate
from kvrecords.runner.reporters import counted, problem_line

FORMATS = ("text", "json", "github")
# arithmetic.LAYER_BASES, repeated here so that the command line starts without the library
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
# The engine models' choices, repeated here for the same reason (tests/test_engines.py ties them)
ENGINES = ("llamacpp", "vllm", "sglang")
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
VLLM_KV_CACHE_DTYPES = (
    "auto",
    "bfloat16",
    "float16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "int8_per_token_head",
    "fp8_per_token_head",
    "nvfp4",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
)
SGLANG_KV_CACHE_DTYPES = ("auto", "fp8_e4m3", "fp8_e5m2")
KV_CACHE_DTYPES = VLLM_KV_CACHE_DTYPES
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kv-efficiency-records")
def cli() -> None:
    """KV-cache efficiency records: validate the dataset and show its arithmetic."""


def _clean_root() -> Path:
    """The dataset root, once the dataset validates without errors (exit 1 otherwise)."""
    from kvrecords.runner.validate import validate as run

    root = _root()
    errors = [p for p in run(root).problems if p.severity == "error"]
    if errors:
        click.echo(
            f"kvrecords: the dataset has {counted(len(errors), 'error')}; run kvrecords validate",
            err=True,
        )
        sys.exit(1)
    return root


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    help="Output format; github when GITHUB_ACTIONS=true, else text.",
)
@click.option("--strict", is_flag=True, help="Warnings fail the run too.")
def validate(paths: tuple[Path, ...], output_format: str | None, strict: bool) -> None:
    """Check records and models; recompute every derived number.

    With no PATHS, the whole dataset. With PATHS (as pre-commit passes them), those files and
    every record that depends on them: a changed model re-checks each record linking it.
    """
    sys.exit(run_validate(list(paths), output_format, strict))


def _number(value: Fraction | None, *, round_up: bool = False) -> int | float | None:
    """Exact values as JSON numbers: integers when whole; byte totals round up to whole bytes."""
    if value is None:
        return None
    from kvrecords.kv import units

    if value.denominator == 1:
        return value.numerator
    return units.round_up(value) if round_up else float(value)


@cli.command()
@click.argument("model", required=False)
@click.option(
    "--context",
    "context_tokens",
    type=click.IntRange(min=0),
    help="Context length in tokens; default: the model's max_context_tokens.",
)
@click.option(
    "--dtype",
    default="bf16",
    show_default=True,
    help="KV element type (bf16, fp8, int2-g32, nvfp4, ...).",
)
@click.option(
    "--state-dtype", help="Element type of the fixed state; default: the model's dtype, else bf16."
)
@click.option(
    "--layers",
    "layers_counted",
    default="cache",
    show_default=True,
    type=click.Choice(LAYER_BASES),
    help="Which layers count.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for reading; json for tools (the keys are listed in the README).",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    help="Also show what this engine allocates at --context: llamacpp, vllm or sglang.",
)
@click.option(
    "--engine-version",
    help=(
        "The engine's version (default latest). llamacpp: "
        + ", ".join(LLAMACPP_VERSIONS)
        + " (named by the change; build numbers are not mapped). vllm: a release such as"
        " 0.10.1. sglang: latest."
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
@click.option(
    "--swa-full",
    is_flag=True,
    default=None,
    help="llamacpp: keep all cells for sliding-window layers (flag; default off).",
)
@click.option(
    "--ubatch",
    "-ub",
    type=click.IntRange(min=1),
    help="llamacpp: physical batch size n_ubatch (default 512); sizes the window cache.",
)
@click.option(
    "--parallel",
    "-np",
    type=click.IntRange(min=1),
    help="llamacpp: number of sequences / server slots (default 1).",
)
@click.option(
    "--kv-unified",
    is_flag=True,
    default=None,
    help="llamacpp: one cache shared by all sequences (flag; default: a stream per sequence).",
)
@click.option(
    "--kv-cache-dtype",
    type=click.Choice(KV_CACHE_DTYPES),
    help=(
        "vllm or sglang: cache dtype (default auto). vllm: "
        + ", ".join(VLLM_KV_CACHE_DTYPES)
        + ". sglang: "
        + ", ".join(SGLANG_KV_CACHE_DTYPES)
        + "."
    ),
)
@click.option(
    "--block-size",
    type=click.IntRange(min=1),
    help="vllm: tokens per block (default 16, 64 for MLA; hybrids align it to the state page).",
)
@click.option(
    "--max-num-batched-tokens",
    type=click.IntRange(min=1),
    help="vllm: tokens per step (default 8192); sizes the pages of sliding-window layers.",
)
@click.option(
    "--tensor-parallel-size",
    "--tp-size",
    "tensor_parallel_size",
    type=click.IntRange(min=1),
    help="vllm or sglang: tensor-parallel ranks (default 1); figures are per rank.",
)
@click.option(
    "--mamba-ssm-cache-dtype",
    type=click.Choice(("auto", "float32", "bfloat16", "float16")),
    help="vllm: dtype of the SSM / recurrent state (default auto, the model dtype).",
)
@click.option(
    "--disable-hybrid-kv-cache-manager",
    is_flag=True,
    default=None,
    help="vllm: window layers keep every token, as before the hybrid allocator (flag).",
)
@click.option(
    "--page-size",
    type=click.IntRange(min=1),
    help="sglang: tokens per page (default 1).",
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
    **engine_options: Any,
) -> None:
    """Show the KV arithmetic of MODEL (an id from models/ or a path to a model file).

    With --engine, also what that engine allocates at --context, part by part, next to the
    logical figure, with the engine's own option spellings. With --from-log FILE, read the
    cache figures out of an engine's start-up log instead (no MODEL).
    """
    if from_log is not None:
        if model is not None or engine is not None:
            _fail("give MODEL (with --engine) or --from-log FILE, not both")
        _kv_from_log(from_log)
        return
    if model is None:
        _fail("give MODEL, or --from-log FILE")
    given = {name: value for name, value in engine_options.items() if value is not None}
    if engine is None and (given or engine_version is not None):
        _fail(f"--{next(iter(given), 'engine_version').replace('_', '-')} needs --engine")
    path = _model_path(model)
    geometry, report = _kv_report(path, dtype, state_dtype, context_tokens, layers_counted)
    engine_report = None
    if engine is not None:
        engine_report = _engine_report(
            geometry, engine, engine_version, report.context_tokens, given
        )
    if output_format == "json":
        data = _kv_json(report)
        if engine_report is not None:
            data.update(_engine_json(engine_report, report))
        click.echo(json.dumps(data, indent=2))
    else:
        text = _kv_text(report)
        if engine_report is not None:
            text += "\n" + _engine_text(engine_report, report)
        click.echo(text)


def _model_path(model: str) -> Path:
    """The model file MODEL names: a path as given, else models/<id>.yaml (exit 2 if none)."""
    from kvrecords.problems import did_you_mean

    if model.endswith((".yaml", ".yml")) or os.sep in model or "/" in model:
        if not Path(model).is_file():
            _fail(f"no model file {model}")
        return Path(model)
    models = _root() / "models"
    path = models / f"{model}.yaml"
    if not path.is_file():
        hint = did_you_mean(model, (known.stem for known in models.glob("*.yaml")))
        _fail(f"model {model!r}: models/{model}.yaml does not exist{hint}")
    return path


def _kv_report(
    path: Path,
    dtype: str,
    state_dtype: str | None,
    context_tokens: int | None,
    layers_counted: str,
) -> tuple[Any, Any]:
    """The model in ``path`` and its KV arithmetic at ``context_tokens`` (by default the
    model's own context length); exit 2 for an unreadable model or option."""
    from kvrecords.dataset.models import load_model_file
    from kvrecords.kv.arithmetic import kv_report, parse_element_type

    try:
        geometry = load_model_file(path)
        element = parse_element_type(dtype)
        state_element = parse_element_type(state_dtype) if state_dtype else None
    except ValueError as error:
        _fail(str(error))
    if context_tokens is None:
        context_tokens = _max_context(path)
        if context_tokens is None:
            _fail(f"{geometry.id} does not state its context length; give --context")
    try:
        report = kv_report(geometry, element, context_tokens, layers_counted, state_element)
    except ValueError as error:
        _fail(str(error))
    return geometry, report


# Which option belongs to which engine (each engine's own spelling on the command line).
_ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {
    "llamacpp": (
        "cache_type_k",
        "cache_type_v",
        "flash_attn",
        "swa_full",
        "ubatch",
        "parallel",
        "kv_unified",
    ),
    "vllm": (
        "kv_cache_dtype",
        "block_size",
        "max_num_batched_tokens",
        "tensor_parallel_size",
        "mamba_ssm_cache_dtype",
        "disable_hybrid_kv_cache_manager",
    ),
    "sglang": ("kv_cache_dtype", "page_size", "tensor_parallel_size"),
}
_SGLANG_NAMES = {"tensor_parallel_size": "tp_size"}


def _engine_report(
    geometry: Any, engine: str, version: str | None, context: int, given: dict[str, Any]
) -> Any:
    from kvrecords.kv.engines import EngineError, engine_report

    stray = [name for name in given if name not in _ENGINE_OPTIONS[engine]]
    if stray:
        _fail(
            f"--{stray[0].replace('_', '-')} is not an option of {engine}; its options: "
            + ", ".join("--" + n.replace("_", "-") for n in _ENGINE_OPTIONS[engine])
        )
    if engine == "sglang":
        given = {_SGLANG_NAMES.get(name, name): value for name, value in given.items()}
    try:
        return engine_report(geometry, engine, context, version or "latest", **given)
    except EngineError as error:
        _fail(f"{engine}: {error}")


def _logical_total(report: Any) -> Fraction | None:
    if report.kv_bytes_at_context is None or report.fixed_state_bytes is None:
        return None
    total: Fraction = report.kv_bytes_at_context + report.fixed_state_bytes
    return total


def _engine_json(engine_report: Any, report: Any) -> dict[str, Any]:
    logical = _logical_total(report)
    engine_bytes = engine_report.engine_kv_bytes
    difference = None
    if logical is not None and engine_bytes is not None:
        difference = _number(engine_bytes - logical, round_up=True)
    return {
        "engine": engine_report.engine,
        "engine_version": engine_report.version,
        "engine_version_note": engine_report.version_note,
        "engine_options": dict(engine_report.options),
        "engine_context_meaning": engine_report.context_meaning,
        "engine_kv_bytes": engine_bytes,
        "logical_total_bytes": _number(logical, round_up=True),
        "difference_bytes": difference,
        "parts": [
            {"name": part.name, "bytes": part.bytes, "how": part.how}
            for part in engine_report.parts
        ],
        "engine_printed": list(engine_report.printed),
        "engine_notes": list(engine_report.notes),
    }


def _engine_text(engine_report: Any, report: Any) -> str:
    from kvrecords.kv.units import format_bytes_exact, format_exact

    def amount(value: Fraction | int | None) -> str:
        return "unknown" if value is None else format_bytes_exact(value)

    options = ", ".join(f"{key}={value}" for key, value in engine_report.options)
    lines = [
        f"engine {engine_report.engine}, version {engine_report.version}: "
        f"{engine_report.version_note}",
        f"  context {engine_report.context_tokens:,} = {engine_report.context_meaning}",
        f"  options: {options}",
    ]
    for part in engine_report.parts:
        lines.append(f"  {part.name}: {amount(part.bytes)}")
        lines.append(f"      {part.how}")
    engine_bytes = engine_report.engine_kv_bytes
    logical = _logical_total(report)
    lines.append(f"engine allocates: {amount(engine_bytes)}")
    lines.append(
        f"logical ({report.dtype.name} KV, {report.state_dtype.name} state): {amount(logical)}"
    )
    if engine_bytes is not None and logical is not None and logical:
        difference = engine_bytes - logical
        sign = "+" if difference >= 0 else "-"
        percent = format_exact(abs(difference) * 100 / logical)
        lines.append(f"difference: {sign}{amount(abs(difference))}, {sign}{percent}%")
    if engine_report.printed:
        lines.append("the engine prints:")
        lines += [f"  {line}" for line in engine_report.printed]
    if engine_report.notes:
        lines.append("why the figures differ:")
        lines += [f"  - {note}" for note in engine_report.notes]
    return "\n".join(lines)


def _kv_from_log(path: Path) -> None:
    from kvrecords.tools.engine_logs import LogError, read_log_file, render

    try:
        reading = read_log_file(path)
    except LogError as error:
        click.echo(f"kvrecords: {error}", err=True)
        sys.exit(1)
    click.echo(render(reading, path.name))


def _max_context(path: Path) -> int | None:
    from kvrecords.dataset.document import Document, read_document

    document = read_document(path, str(path))
    if isinstance(document, Document):
        value = document.data.get("max_context_tokens")
        return value if isinstance(value, int) else None
    return None


def _kv_json(report: Any) -> dict[str, Any]:
    total = None
    if report.kv_bytes_at_context is not None and report.fixed_state_bytes is not None:
        total = report.kv_bytes_at_context + report.fixed_state_bytes
    return {
        "model": report.model.id,
        "dtype": report.dtype.name,
        "state_dtype": report.state_dtype.name,
        "context_tokens": report.context_tokens,
        "layers_counted": report.layers_counted,
        "bytes_per_token": _number(report.bytes_per_token),
        "kv_bytes_at_context": _number(report.kv_bytes_at_context, round_up=True),
        "fixed_state_bytes": _number(report.fixed_state_bytes, round_up=True),
        "total_bytes_at_context": _number(total, round_up=True),
        "unknown": list(report.model.unknown),
        "groups": [
            {
                "kind": cost.group.kind,
                "layers": cost.group.layers,
                "bytes_per_token": _number(cost.bytes_per_token),
                "tokens_held": cost.tokens_held,
                "kv_bytes": _number(cost.kv_bytes, round_up=True),
                "state_bytes": _number(cost.state_bytes, round_up=True),
                "formula": cost.token_formula,
                "state_formula": cost.state_formula or None,
            }
            for cost in report.groups
        ],
    }


def _kv_text(report: Any) -> str:
    from kvrecords.kv.units import format_bytes_exact, format_exact

    def amount(value: Fraction | None) -> str:
        return "unknown" if value is None else format_bytes_exact(value)

    model = report.model
    lines = [
        f"{model.id} ({model.name}): {report.dtype.name} KV, {report.state_dtype.name} state, "
        f"{report.context_tokens:,} tokens, layers counted: {report.layers_counted}",
    ]
    for cost in report.groups:
        lines.append(f"  {cost.group.kind:<17} {cost.token_formula}")
        if cost.bytes_per_token:
            window = " (window)" if cost.tokens_held < report.context_tokens else ""
            lines.append(
                f"  {'':<17} holds {cost.tokens_held:,} tokens{window}: {amount(cost.kv_bytes)}"
            )
        if cost.state_formula:
            lines.append(f"  {'':<17} state {cost.state_formula}")
    per_token = report.bytes_per_token
    lines += [
        f"bytes per token (while every layer grows): {'unknown' if per_token is None else format_exact(per_token) + ' B'}",
        f"KV bytes at {report.context_tokens:,} tokens: {amount(report.kv_bytes_at_context)}",
        f"fixed state per sequence: {amount(report.fixed_state_bytes)}",
    ]
    if model.unknown:
        lines.append(f"unknown in models/{model.id}.yaml: {', '.join(model.unknown)}")
    return "\n".join(lines)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--check", is_flag=True, help="Change nothing; list unformatted files and exit 1 if any."
)
def fmt(paths: tuple[Path, ...], check: bool) -> None:
    """Format records, models and hardware files canonically.

    Key order follows the schema, prose becomes folded blocks, the schema modeline comes first;
    every comment and every value is kept and the write is atomic. With no PATHS, the whole
    dataset; files outside records/, models/ and hardware/ are skipped.
    """
    from kvrecords.dataset.layout import HARDWARE_DIR, MODELS_DIR, RECORDS_DIR
    from kvrecords.tools.fmt import (
        FormatRefused,
        check_file,
        file_kind,
        first_change,
        format_file,
    )

    root = _root()
    if paths:
        targets = [p for p in paths if file_kind(root, p) is not None]
        missing = [p for p in targets if not (p.exists() or p.is_symlink())]
        if missing:
            _fail(f"{missing[0]}: no such file")
    else:
        folders = (RECORDS_DIR, MODELS_DIR, HARDWARE_DIR)
        targets = sorted(p for f in folders for p in (root / f).rglob("*.y*ml") if p.is_file())
    changed, refused = [], False
    for path in targets:
        shown = file_kind(root, path)
        display = shown[1] if shown else str(path)
        try:
            if check:
                if not check_file(path, root):
                    changed.append(display)
            elif format_file(path, root):
                changed.append(display)
        except FormatRefused as error:
            refused = True
            for problem in error.problems:
                click.echo(problem_line(problem))
        except ValueError as error:
            refused = True
            click.echo(f"{display}: not formatted: {error}")
    for display in changed:
        why = f": {first_change(root / display, root)}" if check else ""
        click.echo(f"{'would reformat' if check else 'formatted'} {display}{why}")
    verb = "would be reformatted" if check else "reformatted"
    click.echo(f"{counted(len(targets), 'file')} checked, {len(changed)} {verb}")
    sys.exit(1 if refused or (check and changed) else 0)


@cli.command()
@click.option("--slug", help="The record's slug: records/kv-efficiency/<slug>.yaml.")
@click.option("--model", "model_id", help="Model id from models/.")
@click.option(
    "--dtype",
    default="bf16",
    show_default=True,
    help="KV element type (bf16, fp8, int2-g32, nvfp4, ...), as for kvrecords kv.",
)
@click.option(
    "--dtype-stated/--dtype-assumed",
    default=False,
    show_default=True,
    help="Whether the source states the KV dtype.",
)
@click.option(
    "--context", "context_tokens", type=click.IntRange(min=1), help="Context length in tokens."
)
@click.option(
    "--layers",
    "layers_counted",
    default="cache",
    show_default=True,
    type=click.Choice(LAYER_BASES),
    help="Which layers the basis counts: cache (every layer as the model is, windows capped), "
    "full_attention (only full-attention layers) or all_layers_as_full_attention (the "
    "counterfactual where every layer is full attention).",
)
@click.option("--source-url", help="URL of the source.")
@click.option(
    "--publisher", default="TODO: who published the source", help="Who published the source."
)
@click.option(
    "--technique",
    "techniques",
    multiple=True,
    type=click.Choice(TECHNIQUES),
    help="A technique the record measures (repeatable); baseline when none is given.",
)
@click.option("--accelerator", help="Hardware id from hardware/.")
@click.option("--count", type=click.IntRange(min=1), help="Number of accelerators.")
@click.option("--engine", default="vllm", show_default=True, help="Engine name, lowercase.")
@click.option("--engine-version", help="Engine version as stated.")
@click.option(
    "--from-issue",
    "issue_body",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draft the record from the body of an issue opened with the 'Submit a measurement' "
    "form (.github/ISSUE_TEMPLATE/record.yml), saved to a file; options given beside it win "
    "over the issue's answers.",
)
def new(
    slug: str | None,
    model_id: str | None,
    dtype: str,
    dtype_stated: bool,
    context_tokens: int | None,
    layers_counted: str,
    source_url: str | None,
    publisher: str,
    techniques: tuple[str, ...],
    accelerator: str | None,
    count: int | None,
    engine: str,
    engine_version: str | None,
    issue_body: Path | None,
) -> None:
    """Scaffold a record with its KV arithmetic already computed from the model.

    Measured fields are null and listed under not_stated with a TODO reason; fill them from
    the source. With --from-issue, the issue's answers fill what they can, and an answer that
    cannot be recorded as written is quoted in a TODO. Never overwrites an existing file.
    """
    from kvrecords.tools.scaffold import scaffold_record, write_scaffold

    root = _root()
    if issue_body is not None:
        _new_from_issue(root, issue_body)
        return
    if slug is None or model_id is None:
        _fail("give --slug and --model, or --from-issue FILE")
    try:
        text = scaffold_record(
            root,
            slug=slug,
            model_id=model_id,
            dtype=dtype,
            dtype_stated=dtype_stated,
            context_tokens=context_tokens,
            layers_counted=layers_counted,
            source_url=source_url,
            publisher=publisher,
            techniques=list(techniques) or ["baseline"],
            accelerator=accelerator,
            count=count,
            engine=engine,
            engine_version=engine_version,
        )
        path = write_scaffold(root, slug, text)
    except (ValueError, FileExistsError) as error:
        _fail(str(error))
    _wrote_scaffold(root, path)


def _wrote_scaffold(root: Path, path: Path) -> None:
    shown = path.relative_to(root).as_posix()
    click.echo(f"wrote {shown}")
    click.echo(
        f"fill the TODOs and nulls from the source, then: kvrecords fmt {shown} && kvrecords validate {shown}"
    )


# new's options by the ScaffoldInputs field each one sets
_SCAFFOLD_OPTIONS = {
    "slug": "slug",
    "model_id": "model_id",
    "dtype": "dtype",
    "dtype_stated": "dtype_stated",
    "context_tokens": "context_tokens",
    "layers_counted": "layers_counted",
    "source_url": "source_url",
    "publisher": "publisher",
    "techniques": "techniques",
    "accelerator": "accelerator",
    "count": "accelerator_count",
    "engine": "engine",
    "engine_version": "engine_version",
}


def _new_from_issue(root: Path, issue_body: Path) -> None:
    from click.core import ParameterSource

    from kvrecords.tools.issue_form import IssueFormError, read_issue_body
    from kvrecords.tools.scaffold import scaffold_from_issue, write_scaffold

    context = click.get_current_context()
    overrides = {
        field: context.params[option]
        for option, field in _SCAFFOLD_OPTIONS.items()
        if context.get_parameter_source(option) == ParameterSource.COMMANDLINE
    }
    if "techniques" in overrides:
        overrides["techniques"] = list(overrides["techniques"])
    try:
        answers = read_issue_body(issue_body)
        slug, text = scaffold_from_issue(root, answers, overrides)
        path = write_scaffold(root, slug, text)
    except IssueFormError as error:
        _fail(str(error))
    except (ValueError, FileExistsError) as error:
        _fail(f"{issue_body}: {error}")
    _wrote_scaffold(root, path)


@cli.command()
@click.argument("record", type=click.Path(dir_okay=False, path_type=Path))
def explain(record: Path) -> None:
    """Every number the validator derives for RECORD (a record file), its inputs and each
    check's margin."""
    from kvrecords.tools.explain import explain_record

    root = _root()
    if not record.is_file():
        _fail(f"no record file {record}{_close_records(root, record)}")
    click.echo(explain_record(root, record))


def _close_records(root: Path, record: Path) -> str:
    """``; did you mean records/kv-efficiency/<slug>.yaml?`` for a record path that is wrong."""
    from kvrecords.dataset.layout import RECORDS_DIR
    from kvrecords.problems import did_you_mean

    folder = root / RECORDS_DIR / "kv-efficiency"
    paths = {path.stem: os.path.relpath(path) for path in folder.glob("*.yaml")}
    return did_you_mean(record.stem, paths)


@cli.command()
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["csv", "json", "jsonl", "markdown", "parquet", "datapackage"]),
    default="csv",
    show_default=True,
    help="parquet: a typed Parquet file (needs pyarrow: pip install "
    "'kv-efficiency-records[parquet]'). datapackage: a folder with the CSV tables and their "
    "datapackage.json (Frictionless Data).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    help="Write to a file (a folder for datapackage) instead of standard output.",
)
@click.option(
    "--metrics",
    is_flag=True,
    help="One row per record x run x metric (and per comparison between runs) instead of one "
    "per record; not with --format markdown.",
)
def export(output_format: str, output: Path | None, metrics: bool) -> None:
    """The dataset, one row per record: measured figures, recomputed KV figures, model,
    hardware, engine, technique, source and confidence; with --metrics, one row per measured
    figure with its run's configuration. Every row carries the dataset version.

    Refused (exit 1) while the dataset has errors: run kvrecords validate.
    """
    from kvrecords.tools.export import METRIC_COLUMN_NAMES, RENDERERS, metric_rows, rows, to_csv

    if output_format in ("parquet", "datapackage"):
        _export_files(output_format, output, metrics)
        return
    if metrics and output_format == "markdown":
        _fail("--metrics writes csv, json, jsonl, parquet or datapackage, not markdown")
    root = _clean_root()
    table = metric_rows(root) if metrics else rows(root)
    if metrics and output_format == "csv":
        text = to_csv(table, METRIC_COLUMN_NAMES)
    else:
        text = RENDERERS[output_format](table)
    if output is None:
        click.echo(text, nl=False)
    else:
        from kvrecords.dataset.atomic import write_atomically

        try:
            write_atomically(output, text)
        except OSError as error:
            _fail(f"{output}: {error.strerror or error}")
        noun = "figure" if metrics else "record"
        click.echo(f"wrote {counted(len(table), noun)} to {output}", err=True)


def _export_files(output_format: str, output: Path | None, metrics: bool) -> None:
    """The typed outputs: a Parquet file (the record or the metric table), or a data package
    folder (both tables)."""
    from kvrecords.tools.export import metric_table, record_table
    from kvrecords.tools.tables import (
        MissingDependency,
        require_pyarrow,
        write_datapackage,
        write_parquet,
    )

    if output is None:
        where = "FILE" if output_format == "parquet" else "FOLDER"
        _fail(f"--format {output_format} writes files: give --output {where}")
    try:
        if output_format == "parquet":
            require_pyarrow()  # before the dataset is read
        root = _clean_root()
        if output_format == "parquet":
            table = metric_table(root) if metrics else record_table(root)
            write_parquet(table, output)
            noun = "figure" if metrics else "record"
            click.echo(f"wrote {counted(len(table.rows), noun)} to {output}", err=True)
        else:
            written = write_datapackage([record_table(root), metric_table(root)], output)
            click.echo(f"wrote {', '.join(str(path) for path in written)}", err=True)
    except MissingDependency as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"{output}: {error.strerror or error}")


@cli.command()
@click.option(
    "--base",
    "base_ref",
    required=True,
    help="The git revision to compare with (a branch, tag or commit; never checked out).",
)
@click.option(
    "--head",
    "head_ref",
    help="Compare this revision with BASE instead of the working tree (two releases: "
    "--base data-2026.12.0 --head data-2027.1.0); read through git too.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="markdown for a pull request comment or job summary; json for tools.",
)
def review(base_ref: str, head_ref: str | None, output_format: str) -> None:
    """What the working tree (or --head) changes in the dataset since BASE, for reviewers
    and release notes.

    Records added, changed (field by field) and removed, each with the validator's
    recomputation; for a changed model or hardware file, every record linking it whose
    derived figures move, old and new. Revisions are read through git, never checked out.
    """
    from kvrecords.tools.review import review as compare_with
    from kvrecords.tools.review_report import to_json, to_markdown
    from kvrecords.tools.revision import RevisionError

    try:
        found = compare_with(_root(), base_ref, head_ref)
    except RevisionError as error:
        _fail(str(error))
    click.echo((to_json if output_format == "json" else to_markdown)(found), nl=False)


@cli.group()
def site() -> None:
    """The static web site of the dataset."""


@site.command("build")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("site"),
    show_default=True,
    help="Folder to write the site into (created if missing).",
)
def site_build(out: Path) -> None:
    """Write a static site: index.html (sortable, filterable table and overview charts), one
    page per record (with the validator's recomputation), one per model, and one per
    accelerator class ranking what each technique bought on it.

    Refused (exit 1) while the dataset has errors: run kvrecords validate.
    """
    from kvrecords.tools.site import build_site

    root = _clean_root()
    written = build_site(root, out)
    click.echo(
        f"wrote {counted(len(written), 'file')} to {out}; open {out / 'index.html'}", err=True
    )


@cli.group()
def model() -> None:
    """Model geometry files."""


@model.command(
    "import-hf",
    help=(
        "Write models/<ID>.yaml from a Hugging Face config.json, as kvrecords fmt writes it.\n\n"
        "Model types read by their own rules (head_dim, kv heads, windows, layer kinds as "
        f"transformers builds them): {', '.join(HF_MODEL_TYPES)}. A config of any other type "
        "is read through its layer_types (full_attention, sliding_attention) when it also states "
        "num_hidden_layers, sliding_window, num_key_value_heads and head_dim. Otherwise the "
        "error names the missing key; the file can always be written by hand "
        "(schema/model.schema.json, docs/conventions.md). Refuses to overwrite a file."
    ),
)
@click.argument(
    "config_path",
    metavar="CONFIG.json",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--id", "model_id", required=True, help="Model id: lowercase letters, digits, dots, hyphens."
)
@click.option("--source-url", help="Where the config was read (kept in the file's source).")
@click.option("--citation", help="What was read, when there is no URL or to say more.")
@click.option(
    "--stdout",
    "to_stdout",
    is_flag=True,
    help="Print the file instead of writing models/<id>.yaml.",
)
def import_hf(
    config_path: Path, model_id: str, source_url: str | None, citation: str | None, to_stdout: bool
) -> None:
    from kvrecords.tools.fmt import load_schema
    from kvrecords.tools.hf_import import model_yaml_from_hf_config

    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        _fail(f"{config_path}: not a readable JSON config: {error}")
    if not isinstance(config, dict):
        _fail(f"{config_path}: the config must be a JSON object")
    root = _root()
    try:
        text = model_yaml_from_hf_config(
            config,
            model_id,
            load_schema(root, "model"),
            source_url=source_url,
            source_citation=citation,
        )
    except ValueError as error:
        _fail(f"{config_path}: {error}")
    if to_stdout:
        click.echo(text, nl=False)
        return
    from kvrecords.dataset.atomic import create_new

    target = root / "models" / f"{model_id}.yaml"
    try:
        create_new(target, text)
    except FileExistsError:
        _fail(f"{target} exists; remove it first or choose another id")
    shown = target.relative_to(root).as_posix()
    click.echo(f"wrote {shown}; check it with: kvrecords validate {shown}")


@cli.command()
@click.option("--markdown", is_flag=True, help="Print docs/rules.md.")
def rules(markdown: bool) -> None:
    """List the check codes."""
    import kvrecords.checks.registry as registry

    if markdown:
        click.echo(registry.markdown(), nl=False)
        return
    for rule in registry.RULES.values():
        click.echo(f"{rule.code}  {rule.name:<22} {rule.summary}")


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing; list the format-1 records and exit 1 if there are any.",
)
def migrate(paths: tuple[Path, ...], check: bool) -> None:
    """Rewrite format-1 records (every record when no PATH is given) as format 2.

    Every figure is carried over with the text it was written with; a figure under a name no
    metric holds leaves its record unchanged and is listed. Exit 1 when a record could not be
    migrated (or, with --check, when one is format 1).
    """
    from kvrecords.dataset.layout import discover
    from kvrecords.tools.migrate import migrate_file, write_migration

    root = Path.cwd()
    files = list(paths) or [found.path for found in discover(root, "record")]
    failed = False
    for path in files:
        migration = migrate_file(path, root)
        if migration.refused:
            failed = True
            click.echo("\n".join(problem_line(problem) for problem in migration.refused))
            continue
        if migration.text is None and not migration.unplaced:
            if migration.summary != "is format 2 already":
                click.echo(f"{migration.display}: {migration.summary}")
                failed = True
            continue
        if migration.unplaced:
            failed = True
            click.echo(f"{migration.display}: not migrated; no metric holds:")
            for figure in migration.unplaced:
                click.echo(f"  {figure}")
            continue
        if check:
            failed = True
            click.echo(f"{migration.display}: format 1 (kvrecords migrate {migration.display})")
            continue
        write_migration(path, migration)
        click.echo(f"migrated {migration.display}: {migration.summary}")
    if not check:
        click.echo("check the runs against the source, then: kvrecords validate")
    sys.exit(1 if failed else 0)


@cli.command()
@click.option("--markdown", is_flag=True, help="Print docs/metrics.md.")
def metrics(markdown: bool) -> None:
    """List the metric vocabulary a run's metrics are named from."""
    from kvrecords.kv.metrics import METRICS
    from kvrecords.kv.metrics import markdown as metrics_markdown

    if markdown:
        click.echo(metrics_markdown(), nl=False)
        return
    for metric in METRICS:
        needs = f" (needs {metric.needs})" if metric.needs else ""
        click.echo(f"{metric.name:<24} {metric.unit:<11} {metric.meaning}{needs}")


@cli.command()
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing; show how the generated pages of docs/ differ from what they should be,"
    " with the command that fixes them, and exit 1 if they do.",
)
def docs(check: bool) -> None:
    """Regenerate docs/rules.md (the check codes), docs/metrics.md (the metric vocabulary),
    docs/dataset.md (the dataset table) and docs/coverage.md (records per technique, engine and
    hardware class, with docs/coverage-notes.yaml).

    The kvrecords-docs pre-commit hook runs this on every commit that changes the data or the
    validator. Refused (exit 1) while the dataset has errors: run kvrecords validate.
    """
    from kvrecords.tools.docs import drift, write_pages

    root = _clean_root()
    try:
        if check:
            reports = drift(root)
            for report in reports:
                click.echo(report)
            sys.exit(1 if reports else 0)
        for page in write_pages(root):
            click.echo(f"wrote {page}; add it to the commit: git add docs")
    except ValueError as error:  # docs/coverage-notes.yaml that cannot be read: the data's fault
        click.echo(f"kvrecords: {error}", err=True)
        sys.exit(1)


def run_click(args: list[str]) -> int:
    """Every command line but pre-commit's plain ``validate FILE...`` (``main.main``)."""
    try:
        code = cli.main(args, prog_name="kvrecords", standalone_mode=False)
    except click.exceptions.Abort:
        return 2
    except click.ClickException as error:
        error.show()
        return 2
    return code if isinstance(code, int) else 0
