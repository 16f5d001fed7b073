"""A new record's first draft (``kvrecords new``): the KV arithmetic done, the rest to fill.

The derived fields (bytes per token, KV at the context, the fixed state) are computed here
from the model file with the same arithmetic the validator checks them with, and the
explanation writes that arithmetic out as claims the prose checker verifies. Everything the
contributor must read from the source is null (listed under ``not_stated`` with a TODO reason)
or a ``TODO`` placeholder; ``confidence`` is null so that validation fails until it is rated.
The record is format 2: one headline run to which the contributor adds each figure as a metric
(and each other configuration the source measured as a run). The text comes back in the
canonical format (``format_text`` leaves it unchanged). ``issue_scaffold`` drafts a record
from a submission issue with ``draft_record`` and ``finish_record``.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.atomic import create_new
from kvrecords.dataset.document import Document, parse_document
from kvrecords.dataset.layout import (
    HARDWARE_DIR,
    ID_PATTERN,
    MODELS_DIR,
    RECORD_PREFIX,
    RECORDS_DIR,
    SCHEMA_DIR,
    DatasetFile,
    model_file,
)
from kvrecords.dataset.records import basis_report
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.arithmetic import (
    LAYER_BASES,
    LAYER_BASIS_MEANING,
    ElementType,
    GroupCost,
    KvReport,
    parse_element_type,
)
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent
from kvrecords.kv.units import format_binary
from kvrecords.problems import did_you_mean
from kvrecords.tools.fmt import format_data, load_schema

TODO_REASON = "TODO: fill from the source or give the reason it is not stated"
MAX_SLUG = 120 - len(f"{RECORD_PREFIX}/")  # the schema caps the id at 120 characters
RUN_LABEL = "TODO: what this run measured, in a few words"
_RUN_NOTE = (
    "TODO: each figure the source gives for this run as a metric (name, statistic, value: "
    "{name: ttft_ms, statistic: median, value: 2300}; kvrecords metrics lists the names), each "
    "other configuration it measured as a run of its own; then remove this note"
)


class ContextPastModel(ValueError):
    """The context asked for is above the model's max_context_tokens (KV306 would refuse it)."""


def scaffold_path(root: Path, slug: str) -> Path:
    """Where the record ``kv-efficiency/<slug>`` lives; ``ValueError`` for a malformed slug."""
    _check_slug(slug)
    return root / RECORDS_DIR / RECORD_PREFIX / f"{slug}.yaml"


class ScaffoldInputs(NamedTuple):
    """What a scaffold is made from (the options of ``kvrecords new``)."""

    slug: str
    model_id: str
    dtype: str
    dtype_stated: bool
    context_tokens: int | None
    layers_counted: str
    source_url: str | None
    publisher: str
    techniques: list[str]
    accelerator: str | None
    accelerator_count: int | None
    engine: str
    engine_version: str | None
    locator: str | None = None


def scaffold_record(
    root: Path,
    *,
    slug: str,
    model_id: str,
    dtype: str,
    dtype_stated: bool,
    context_tokens: int | None,
    layers_counted: str,
    source_url: str | None,
    publisher: str,
    techniques: list[str],
    accelerator: str | None,
    count: int | None,
    engine: str,
    engine_version: str | None,
    locator: str | None = None,
) -> str:
    """The YAML text of a new record, formatted; ``ValueError`` says which input is wrong.

    ``FileExistsError`` when the record already exists: a scaffold never replaces one.
    """
    inputs = ScaffoldInputs(
        slug,
        model_id,
        dtype,
        dtype_stated,
        context_tokens,
        layers_counted,
        source_url,
        publisher,
        techniques,
        accelerator,
        count,
        engine,
        engine_version,
        locator,
    )
    return finish_record(root, *draft_record(root, inputs))


def draft_record(
    root: Path, inputs: ScaffoldInputs, model_todo: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The record's data, checked input by input, and the reasons of the nulls it explains.

    ``model_todo`` (a TODO naming the model files closest to the one meant) drafts a record
    whose model file does not exist yet: its KV figures wait, null, for a person to name one.
    """
    path = scaffold_path(root, inputs.slug)
    if path.exists() or path.is_symlink():
        raise FileExistsError(
            f"{path.relative_to(root).as_posix()} already exists; choose another slug"
        )
    layers_counted, context_tokens = inputs.layers_counted, inputs.context_tokens
    if layers_counted not in LAYER_BASES:
        raise ValueError(f"layers_counted {layers_counted!r}: one of {', '.join(LAYER_BASES)}")
    if context_tokens is not None and (isinstance(context_tokens, bool) or context_tokens < 1):
        raise ValueError(f"context_tokens {context_tokens!r}: a positive number of tokens, or None")
    if model_todo is not None:
        _check_accelerator(root, inputs.accelerator)
        return _record_without_model(inputs, model_todo)
    model, model_display = _load_model(root, inputs.model_id)
    limit = model.max_context_tokens
    if context_tokens is not None and limit is not None and context_tokens > limit:
        raise ContextPastModel(
            f"context_tokens {context_tokens:,}: {model_display} holds at most {limit:,} tokens "
            "(max_context_tokens)"
        )
    _check_accelerator(root, inputs.accelerator)
    element = parse_element_type(inputs.dtype)  # ValueError lists the valid forms
    report = basis_report(
        model,
        {"dtype": element.name, "context_tokens": context_tokens, "layers_counted": layers_counted},
    )
    return _record(inputs, model_display=model_display, model=model, report=report)


def finish_record(root: Path, record: dict[str, Any], reasons: dict[str, str]) -> str:
    """The record with every null listed under not_stated (``reasons`` by field, else a TODO),
    formatted and checked against the schema."""
    record["not_stated"] = [
        {"field": field, "reason": reasons.get(field, TODO_REASON)}
        for field in _null_fields(record, "")
        if field != "confidence"  # to be rated, not explained: validation fails while it is null
    ]
    text = format_data(record, "record", load_schema(root, "record"))
    _check_schema(root, text)
    return text


def write_scaffold(root: Path, slug: str, text: str) -> Path:
    """Write a scaffold at its path; ``FileExistsError`` (nothing written) if a file is there."""
    path = scaffold_path(root, slug)
    create_new(path, text)
    return path


# ---- inputs ---------------------------------------------------------------------------------


def _check_slug(slug: str) -> None:
    if not ID_PATTERN.fullmatch(slug) or len(slug) > MAX_SLUG:
        raise ValueError(
            f"slug {slug!r}: use lowercase letters, digits, dots and hyphens, starting with a letter "
            f"or digit, at most {MAX_SLUG} characters (the record becomes {RECORDS_DIR}/{RECORD_PREFIX}/<slug>.yaml)"
        )


def _load_model(root: Path, model_id: str) -> tuple[Model, str]:
    """The model's geometry, from a sound model file only (the validator's own model checks)."""
    from kvrecords.runner.validate import check_model_file

    if not ID_PATTERN.fullmatch(model_id):
        raise ValueError(
            f"model {model_id!r}: a model id is lowercase letters, digits, dots and hyphens, not a path"
        )
    path = model_file(root, model_id)
    display = f"{MODELS_DIR}/{model_id}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (root / MODELS_DIR).glob("*.yaml"))
        hint = did_you_mean(model_id, known) or f"; known models: {', '.join(known)}"
        raise ValueError(f"model {model_id!r}: {display} does not exist{hint}")
    state = check_model_file(root.resolve(), DatasetFile("model", display, root.resolve()))
    errors = [p for p in state.problems if p.severity == "error"]
    if state.model is None or errors:
        listed = "; ".join(f"{p.line}:{p.column} {p.code} {p.message}" for p in errors)
        raise ValueError(f"model {model_id!r}: {display} has problems: {listed}")
    return state.model, display.removesuffix(".yaml")


def _check_accelerator(root: Path, accelerator: str | None) -> None:
    folder = root / HARDWARE_DIR
    if accelerator is None or not folder.is_dir() or (folder / f"{accelerator}.yaml").is_file():
        return
    known = sorted(p.stem for p in folder.glob("*.yaml"))
    hint = did_you_mean(accelerator, known) or f"; known: {', '.join(known)}"
    raise ValueError(
        f"accelerator {accelerator!r}: {HARDWARE_DIR}/{accelerator}.yaml does not exist{hint}"
    )


def _check_schema(root: Path, text: str) -> None:
    """The scaffold satisfies the schema once rated (confidence is the one null it may not keep)."""
    document = parse_document(text.encode("utf-8"), "<scaffold>")
    assert isinstance(document, Document)  # format_text has just read it back
    rated = document._replace(data={**document.data, "confidence": 0.5})
    problems = schema_problems(rated, "record", root / SCHEMA_DIR)
    problems = [p for p in problems if "still a placeholder" not in p.message]  # KV206's
    if problems:
        raise ValueError("; ".join(p.message for p in problems))


# ---- the record -----------------------------------------------------------------------------


def _record(
    inputs: ScaffoldInputs, *, model_display: str, model: Model, report: KvReport
) -> tuple[dict[str, Any], dict[str, str]]:
    """The record's data without not_stated, and the reasons of the nulls it can explain."""
    context_tokens = inputs.context_tokens
    per_token = report.bytes_per_token
    if per_token is not None and per_token.denominator != 1:
        raise ValueError(
            f"{model_display} at {report.dtype.name} gives {float(per_token):,.2f} B/token, not a "
            "whole number of bytes, and bytes_per_token is an exact integer; choose another group size"
        )
    at_context = report.kv_bytes_at_context if context_tokens is not None else None
    basis: dict[str, Any] = {
        "dtype": report.dtype.name,
        "dtype_stated": inputs.dtype_stated,
        "layers_counted": report.layers_counted,
        "context_tokens": context_tokens,
        "bytes_per_token": None if per_token is None else int(per_token),
        "kv_at_context": None if at_context is None else _readable(at_context),
    }
    state = report.fixed_state_bytes
    if state:  # only models with state layers whose dimensions are published
        basis["fixed_state"] = _readable(state)
    basis["explanation"] = _explanation(
        model_display, model, report, inputs.dtype_stated, context_tokens
    )
    record = _common_fields(inputs, basis)
    reasons = {}
    if per_token is None:
        geometry_reason = f"{model_display}.yaml does not publish {', '.join(model.unknown) or 'the dimensions needed'}"
        reasons = dict.fromkeys(
            ("kv_bytes_basis.bytes_per_token", "kv_bytes_basis.kv_at_context"), geometry_reason
        )
    return record, reasons


def _common_fields(inputs: ScaffoldInputs, basis: dict[str, Any]) -> dict[str, Any]:
    """Every field of a draft but the KV basis's figures, in the schema's order."""
    record: dict[str, Any] = {
        "format": 2,
        "id": f"{RECORD_PREFIX}/{inputs.slug}",
        "title": "TODO: one line with the technique, model, hardware and context",
        "model": inputs.model_id,
    }
    if inputs.techniques:
        record["techniques"] = list(inputs.techniques)
    record["kv_bytes_basis"] = basis
    record["methodology"] = {
        "source": {
            "publisher": inputs.publisher,
            "title": None,
            "url": inputs.source_url,
            "published": None,
            "locator": inputs.locator,
            "citation": "TODO: a citation a reader can follow without the URL (author, title, date, section)",
        },
        "hardware": {"accelerator": inputs.accelerator, "count": inputs.accelerator_count},
        "engine": {"name": inputs.engine, "version": inputs.engine_version},
        "weights_precision": None,
        "concurrency": None,
        "workload": "TODO: the prompts and traffic (lengths, sharing, repetitions)",
    }
    record["runs"] = [
        {"id": "main", "label": RUN_LABEL, "role": "only", "metrics": [], "note": _RUN_NOTE}
    ]
    record["headline_run"] = "main"
    record["notes"] = "TODO: what the record shows and how to read it"
    record["confidence"] = None
    record["confidence_reason"] = (
        "TODO: rate with the rubric in CONTRIBUTING.md and say what is stated and what is assumed"
    )
    record["measured_ttft_ms_at_ctx"] = None
    record["measured_tps_at_ctx"] = None
    return record


_KV_WAITS = "TODO: computed from the model file once the record names one ({command})"


def _record_without_model(
    inputs: ScaffoldInputs, model_todo: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """A draft whose model is a TODO: every other field as usual, the KV figures null with
    the command that computes them once the model is named."""
    element = parse_element_type(inputs.dtype)  # ValueError lists the valid forms
    context = f" --context {inputs.context_tokens}" if inputs.context_tokens else ""
    command = f"kvrecords kv MODEL --dtype {element.name} --layers {inputs.layers_counted}{context}"
    waits = _KV_WAITS.format(command=command)
    basis = {
        "dtype": element.name,
        "dtype_stated": inputs.dtype_stated,
        "layers_counted": inputs.layers_counted,
        "context_tokens": inputs.context_tokens,
        "bytes_per_token": None,
        "kv_at_context": None,
        "explanation": waits.replace("computed", "the KV arithmetic, written out"),
    }
    record = _common_fields(inputs, basis)
    record["model"] = model_todo
    reasons = dict.fromkeys(
        ("kv_bytes_basis.bytes_per_token", "kv_bytes_basis.kv_at_context"), waits
    )
    return record, reasons


def _null_fields(value: Any, prefix: str) -> Iterator[str]:
    """Dotted paths of the nulls, in order (the form not_stated uses)."""
    if value is None:
        yield prefix
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _null_fields(child, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _null_fields(child, f"{prefix}[{index}]")


# ---- the explanation ------------------------------------------------------------------------
# Claims are written only as pure products (``a x b x c = d unit``), the one form the prose
# checker evaluates; sums and formulas with scales are written without ``=`` so that no part of
# them reads as a (wrong) claim.


def _explanation(
    model_display: str,
    model: Model,
    report: KvReport,
    dtype_stated: bool,
    context_tokens: int | None,
) -> str:
    stated = (
        "as the source states"
        if dtype_stated
        else "assumed: the source does not state the KV dtype"
    )
    sentences = [
        f"KV arithmetic from {model_display} at {report.dtype.name} ({stated}), counting "
        f"{LAYER_BASIS_MEANING[report.layers_counted]}."
    ]
    per_token = report.bytes_per_token
    if per_token is None:
        unknown = ", ".join(model.unknown) or "a dimension"
        sentences.append(
            f"{model_display} does not publish {unknown}, so bytes per token cannot be computed."
        )
        return " ".join(sentences)
    growing = [cost for cost in report.groups if cost.bytes_per_token]
    single = len(growing) == 1
    for cost in growing:
        sentences.append(_per_token_sentence(cost, report.dtype, single))
    if len(growing) > 1:
        sentences.append(f"Together that makes {_number(per_token)} B/token.")
    for cost in report.groups:
        if cost.bytes_per_token == 0:
            sentences.append(
                f"The {cost.group.layers} {cost.group.kind} layers add no per-token term."
            )
    at_context = report.kv_bytes_at_context
    if context_tokens is not None and at_context is not None and growing:
        terms = [_at_context_claim(cost, context_tokens) for cost in growing]
        if single:
            sentences.append(f"At {context_tokens:,} tokens: {terms[0]}.")
        else:
            total = _readable(at_context)
            sentences.append(f"At {context_tokens:,} tokens: {'; '.join(terms)}; in all {total}.")
    if report.fixed_state_bytes:
        sentences.append(
            f"The fixed state is {_readable(report.fixed_state_bytes)} per sequence at {report.state_dtype.name}."
        )
    return " ".join(sentences)


def _per_token_sentence(cost: GroupCost, dtype: ElementType, single: bool) -> str:
    chain = _chain(cost, dtype)
    assert cost.bytes_per_token is not None
    if chain is None:
        return cost.token_formula.replace(" = ", ", which gives ") + "."
    if single:
        return f"{chain} = {_number(cost.bytes_per_token)} B/token."
    return f"{chain} = {_number(cost.bytes_per_token)} B per token."


def _chain(cost: GroupCost, dtype: ElementType) -> str | None:
    """``16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes``, or None if not a product."""
    element = _element_bytes(dtype)
    if element is None or _decimal(element) is None:
        return None
    group = cost.group
    if isinstance(group, Attention) and group.kv_heads and group.head_dim and group.value_dim:
        if group.head_dim == group.value_dim:
            shape = f"{group.kv_heads:,} kv heads x {group.head_dim:,} head_dim x 2 (K+V)"
        else:
            shape = f"{group.kv_heads:,} kv heads x {group.head_dim + group.value_dim:,} (head_dim+v_head_dim)"
    elif isinstance(group, MultiHeadLatent) and group.kv_lora_rank and group.qk_rope_head_dim:
        shape = f"{group.kv_lora_rank + group.qk_rope_head_dim:,} (kv_lora_rank+qk_rope_head_dim)"
    else:
        return None
    return f"{group.layers:,} layers x {shape} x {_decimal(element)} bytes"


def _element_bytes(dtype: ElementType) -> Fraction | None:
    """Bytes per element with the group scales spread over it; None with per-vector scales."""
    if dtype.vector_scale_bytes:
        return None
    bits = Fraction(dtype.value_bits)
    if dtype.group_size is not None:
        bits += Fraction(dtype.group_scale_bits, dtype.group_size)
    return bits / 8


def _at_context_claim(cost: GroupCost, context_tokens: int) -> str:
    assert cost.bytes_per_token is not None
    window = " (the window)" if cost.tokens_held < context_tokens else ""
    return (
        f"{_number(cost.bytes_per_token)} B/token x {cost.tokens_held:,} tokens{window} = "
        f"{_readable(cost.bytes_per_token * cost.tokens_held)}"
    )


def _decimal(value: Fraction) -> str | None:
    """The exact decimal text of ``value`` with thousands separators; None if it does not end."""
    denominator = value.denominator
    places = 0
    while denominator % 10 == 0:
        denominator //= 10
        places += 1
    for factor in (2, 5):
        while denominator % factor == 0:
            denominator //= factor
            places += 1
    if denominator != 1:
        return None
    text = f"{Decimal(value.numerator) / Decimal(value.denominator):,.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _number(value: Fraction) -> str:
    return _decimal(value) or f"{float(value):,.4f}"


def _readable(exact_bytes: Fraction) -> str:
    """A byte figure with 2 decimals in the largest binary unit that keeps it at 1 or more
    (whole bytes below a KiB), so it has at least three significant figures and lies within
    0.5 % of the exact value: the validator's precision rule accepts it at any size, where a
    fixed GiB would write 72 MiB as ``0.07 GiB`` (one significant figure)."""
    return format_binary(exact_bytes)
