"""What ``kvrecords kv`` shows: a model's KV arithmetic at a context and, with an engine, what
that engine allocates beside it, as text for reading or as JSON for tools (README lists the keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.arithmetic import (
    DTYPE_SPELLINGS,
    ElementType,
    KvReport,
    kv_report,
    parse_element_type,
)
from kvrecords.kv.units import format_bytes_exact, format_exact, round_up

if TYPE_CHECKING:  # the engine models load only when an engine is asked for
    from kvrecords.kv.engines import EngineReport


class KvRequestError(Exception):
    """A model file, element type, context or engine option the figures cannot be computed
    for; the message says why."""


def model_report(
    path: Path,
    dtype: str,
    state_dtype: str | None,
    context_tokens: int | None,
    layers_counted: str,
) -> KvReport:
    """The KV arithmetic of the model in ``path`` at ``context_tokens`` (by default the
    model's own context length)."""
    try:
        model = load_model_file(path)
        element = parse_element_type(dtype)
        state_element = parse_element_type(state_dtype) if state_dtype else None
    except ValueError as error:
        raise KvRequestError(str(error)) from error
    if context_tokens is None:
        context_tokens = _max_context(path)
        if context_tokens is None:
            raise KvRequestError(f"{model.id} does not state its context length; give --context")
    try:
        return kv_report(model, element, context_tokens, layers_counted, state_element)
    except ValueError as error:
        raise KvRequestError(str(error)) from error


def _max_context(path: Path) -> int | None:
    """The model file's max_context_tokens as written (None unless a whole number)."""
    document = read_document(path, str(path))
    if isinstance(document, Document):
        value = document.data.get("max_context_tokens")
        return value if isinstance(value, int) else None
    return None


# The command line's name for an engine option where it differs from the engine's own: one
# --tensor-parallel-size for vLLM's tensor_parallel_size and SGLang's tp_size
_COMMAND_LINE_NAMES = {"tp_size": "tensor_parallel_size"}


def engine_allocation(
    report: KvReport, engine: str, version: str | None, options: Mapping[str, object]
) -> EngineReport:
    """What ``engine`` allocates for the report's model at its context with the ``options``
    given (by the command line's names; a version of None is the latest)."""
    from kvrecords.kv.engines import EngineError, engine_report, option_names

    own_names = {_COMMAND_LINE_NAMES.get(name, name): name for name in option_names(engine)}
    stray = [name for name in options if name not in own_names]
    if stray:
        raise KvRequestError(
            f"--{stray[0].replace('_', '-')} is not an option of {engine}; its options: "
            + ", ".join("--" + n.replace("_", "-") for n in own_names)
        )
    options = {own_names[name]: value for name, value in options.items()}
    try:
        return engine_report(
            report.model, engine, report.context_tokens, version or "latest", **options
        )
    except EngineError as error:
        raise KvRequestError(f"{engine}: {error}") from error


# vLLM's cache dtypes that neither kv.arithmetic nor the torch and ggml spellings it reads
# (DTYPE_SPELLINGS: bfloat16, float16, f16, f32) name; 'auto' is the model's dtype.
_ENGINE_ONLY_DTYPES = {
    "fp8_inc": "fp8",
    "int8_per_token_head": "int8-per-token-head",
    "fp8_per_token_head": "fp8-per-token-head",
}


class EngineDtype(NamedTuple):
    """The dtype an engine caches in, as its options give it."""

    written: str  # 'fp8', 'auto (bf16, the model's dtype)', 'K q8_0, V f16'
    element: ElementType | None  # None: no one element type of kv.arithmetic holds it
    why: str = ""  # why not, when element is None


def engine_cache_dtype(allocation: EngineReport, report: KvReport) -> EngineDtype:
    """The element type the engine keeps the cache in, from the options it ran with."""
    options = dict(allocation.options)
    if "cache_type_k" in options:  # llama.cpp types K and V apart
        key, value = options["cache_type_k"], options["cache_type_v"]
        if key != value:
            return EngineDtype(f"K {key}, V {value}", None, "K and V in different types")
        name = key
    else:
        name = options.get("kv_cache_dtype", "auto")
    if name == "auto":  # the model's dtype, bf16 when a 16-bit dtype is not stated
        model_dtype = report.model.dtype
        own = model_dtype if model_dtype in ("bf16", "fp16", "fp32") else "bf16"
        return EngineDtype(f"auto ({own}, the model's dtype)", parse_element_type(own))
    try:
        spelled = _ENGINE_ONLY_DTYPES.get(name) or DTYPE_SPELLINGS.get(name, name)
        return EngineDtype(name, parse_element_type(spelled))
    except ValueError:  # a preset of mixed widths (vLLM's turboquant_k8v4), SGLang's mxfp8
        return EngineDtype(name, None, "a type the logical arithmetic does not size")


class Comparison(NamedTuple):
    """The engine's allocation beside the logical figure in the engine's own dtype, so that
    the difference is what the engine adds or saves, not a change of dtype."""

    engine_dtype: EngineDtype
    logical: KvReport  # in the engine's dtype when one element type holds it, else the report's

    @property
    def like_with_like(self) -> bool:
        return self.engine_dtype.element is not None

    def total(self) -> Fraction | None:
        return _logical_total(self.logical)


def compare(report: KvReport, allocation: EngineReport) -> Comparison:
    """The logical figure the engine's allocation is set beside."""
    dtype = engine_cache_dtype(allocation, report)
    logical = report
    if dtype.element is not None and dtype.element != report.dtype:
        logical = kv_report(
            report.model,
            dtype.element,
            report.context_tokens,
            report.layers_counted,
            report.state_dtype,
        )
    return Comparison(dtype, logical)


def report_json(report: KvReport, allocation: EngineReport | None = None) -> dict[str, object]:
    """The figures as JSON values: exact integers where whole, byte totals rounded up."""
    data = _kv_json(report)
    if allocation is not None:
        data.update(_engine_json(allocation, report))
    return data


def report_text(report: KvReport, allocation: EngineReport | None = None) -> str:
    """The figures for reading, each with its formula."""
    text = _kv_text(report)
    if allocation is not None:
        text += "\n" + _engine_text(allocation, report)
    return text


def _number(value: Fraction | None, *, round_up_bytes: bool = False) -> int | float | None:
    """An exact value as a JSON number: an integer when whole; byte totals round up to whole
    bytes, other fractions become floats."""
    if value is None:
        return None
    if value.denominator == 1:
        return value.numerator
    return round_up(value) if round_up_bytes else float(value)


def _amount(value: Fraction | int | None) -> str:
    return "unknown" if value is None else format_bytes_exact(value)


def _logical_total(report: KvReport) -> Fraction | None:
    """The cache at the context plus the fixed state; None when either is unknown."""
    if report.kv_bytes_at_context is None or report.fixed_state_bytes is None:
        return None
    return report.kv_bytes_at_context + report.fixed_state_bytes


def _kv_json(report: KvReport) -> dict[str, object]:
    return {
        "model": report.model.id,
        "dtype": report.dtype.name,
        "state_dtype": report.state_dtype.name,
        "context_tokens": report.context_tokens,
        "layers_counted": report.layers_counted,
        "bytes_per_token": _number(report.bytes_per_token),
        "kv_bytes_at_context": _number(report.kv_bytes_at_context, round_up_bytes=True),
        "fixed_state_bytes": _number(report.fixed_state_bytes, round_up_bytes=True),
        "total_bytes_at_context": _number(_logical_total(report), round_up_bytes=True),
        "unknown": list(report.model.unknown),
        "groups": [
            {
                "kind": cost.group.kind,
                "layers": cost.group.layers,
                "bytes_per_token": _number(cost.bytes_per_token),
                "tokens_held": cost.tokens_held,
                "kv_bytes": _number(cost.kv_bytes, round_up_bytes=True),
                "state_bytes": _number(cost.state_bytes, round_up_bytes=True),
                "formula": cost.token_formula,
                "state_formula": cost.state_formula or None,
            }
            for cost in report.groups
        ],
    }


def _kv_text(report: KvReport) -> str:
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
                f"  {'':<17} holds {cost.tokens_held:,} tokens{window}: {_amount(cost.kv_bytes)}"
            )
        if cost.state_formula:
            lines.append(f"  {'':<17} state {cost.state_formula}")
    per_token = report.bytes_per_token
    lines += [
        f"bytes per token (while every layer grows): {'unknown' if per_token is None else format_exact(per_token) + ' B'}",
        f"KV bytes at {report.context_tokens:,} tokens: {_amount(report.kv_bytes_at_context)}",
        f"fixed state per sequence: {_amount(report.fixed_state_bytes)}",
    ]
    if model.unknown:
        lines.append(f"unknown in models/{model.id}.yaml: {', '.join(model.unknown)}")
    return "\n".join(lines)


def _engine_json(allocation: EngineReport, report: KvReport) -> dict[str, object]:
    comparison = compare(report, allocation)
    logical = comparison.total()
    engine_bytes = allocation.engine_kv_bytes
    difference = None
    if logical is not None and engine_bytes is not None:
        difference = _number(engine_bytes - logical, round_up_bytes=True)
    return {
        "engine": allocation.engine,
        "engine_version": allocation.version,
        "engine_version_note": allocation.version_note,
        "engine_options": dict(allocation.options),
        "engine_context_meaning": allocation.context_meaning,
        "engine_kv_bytes": engine_bytes,
        "engine_kv_dtype": comparison.engine_dtype.written,
        "logical_dtype": comparison.logical.dtype.name,
        "dtypes_differ": not comparison.like_with_like,
        "logical_total_bytes": _number(logical, round_up_bytes=True),
        "difference_bytes": difference,
        "parts": [
            {"name": part.name, "bytes": part.bytes, "how": part.how} for part in allocation.parts
        ],
        "engine_printed": list(allocation.printed),
        "engine_notes": list(allocation.notes),
    }


def _engine_text(allocation: EngineReport, report: KvReport) -> str:
    options = ", ".join(f"{key}={value}" for key, value in allocation.options)
    lines = [
        f"engine {allocation.engine}, version {allocation.version}: {allocation.version_note}",
        f"  context {allocation.context_tokens:,} = {allocation.context_meaning}",
        f"  options: {options}",
    ]
    for part in allocation.parts:
        lines.append(f"  {part.name}: {_amount(part.bytes)}")
        lines.append(f"      {part.how}")
    engine_bytes = allocation.engine_kv_bytes
    comparison = compare(report, allocation)
    logical = comparison.total()
    kv_dtype, state_dtype = comparison.logical.dtype.name, comparison.logical.state_dtype.name
    lines.append(
        f"engine allocates ({comparison.engine_dtype.written} cache): {_amount(engine_bytes)}"
    )
    lines.append(f"logical ({kv_dtype} KV, {state_dtype} state): {_amount(logical)}")
    if engine_bytes is not None and logical is not None and logical:
        difference = engine_bytes - logical
        sign = "+" if difference >= 0 else "-"
        percent = format_exact(abs(difference) * 100 / logical)
        lines.append(f"difference: {sign}{_amount(abs(difference))}, {sign}{percent}%")
    if not comparison.like_with_like:
        lines.append(
            f"the dtypes differ: the engine caches {comparison.engine_dtype.written}"
            f" ({comparison.engine_dtype.why}), the logical figure is {kv_dtype}; the difference"
            " includes the change of dtype"
        )
    elif comparison.logical.dtype != report.dtype:
        lines.append(
            f"the logical figure is in the engine's cache dtype, {kv_dtype}; in"
            f" {report.dtype.name}, as above, it is {_amount(_logical_total(report))}"
        )
    if allocation.printed:
        lines.append("the engine prints:")
        lines += [f"  {line}" for line in allocation.printed]
    if allocation.notes:
        lines.append("why the figures differ:")
        lines += [f"  - {note}" for note in allocation.notes]
    return "\n".join(lines)
