"""A new record's first draft (``kvrecords new``): the KV arithmetic done, the rest to fill.

The derived fields (bytes per token, KV at the context, the fixed state) are computed here
from the model file with the same arithmetic the validator checks them with, and the
explanation writes that arithmetic out as claims the prose checker verifies. Everything the
contributor must read from the source is null (listed under ``not_stated`` with a TODO reason)
or a ``TODO`` placeholder; ``confidence`` is null so that validation fails until it is rated.
The record is format 2: one headline run to which the contributor adds each figure as a metric
(and each other configuration the source measured as a run). The text comes back in the
canonical format (``format_text`` leaves it unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.atomic import create_new
from kvrecords.dataset.document import Document, parse_document, read_document
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
from kvrecords.kv.units import format_binary, format_in_unit
from kvrecords.kv.weights import weight_format
from kvrecords.problems import closest, did_you_mean
from kvrecords.tools.fmt import format_data, load_schema
from kvrecords.tools.issue_form import (
    DECODE_RATE_SCOPES,
    choices,
    date,
    figure,
    lines_of,
    one_line,
    paragraph,
    url,
    whole_number,
)

TODO_REASON = "TODO: fill from the source or give the reason it is not stated"
_MAX_SLUG = 120 - len(f"{RECORD_PREFIX}/")  # the schema caps the id at 120 characters
_RUN_LABEL = "TODO: what this run measured, in a few words"
_RUN_NOTE = (
    "TODO: each figure the source gives for this run as a metric (name, statistic, value: "
    "{name: ttft_ms, statistic: median, value: 2300}; kvrecords metrics lists the names), each "
    "other configuration it measured as a run of its own; then remove this note"
)


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
    )
    return _finish(root, *_draft(root, inputs))


def _draft(root: Path, inputs: ScaffoldInputs) -> tuple[dict[str, Any], dict[str, str]]:
    """The record's data, checked input by input, and the reasons of the nulls it explains."""
    path = scaffold_path(root, inputs.slug)
    if path.exists() or path.is_symlink():
        raise FileExistsError(
            f"{path.relative_to(root).as_posix()} already exists; choose another slug"
        )
    model, model_display = _load_model(root, inputs.model_id)
    layers_counted, context_tokens = inputs.layers_counted, inputs.context_tokens
    if layers_counted not in LAYER_BASES:
        raise ValueError(f"layers_counted {layers_counted!r}: one of {', '.join(LAYER_BASES)}")
    if context_tokens is not None and (isinstance(context_tokens, bool) or context_tokens < 1):
        raise ValueError(f"context_tokens {context_tokens!r}: a positive number of tokens, or None")
    _check_accelerator(root, inputs.accelerator)
    element = parse_element_type(inputs.dtype)  # ValueError lists the valid forms
    report = basis_report(
        model,
        {"dtype": element.name, "context_tokens": context_tokens, "layers_counted": layers_counted},
    )
    return _record(inputs, model_display=model_display, model=model, report=report)


def _finish(root: Path, record: dict[str, Any], reasons: dict[str, str]) -> str:
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


# ---- from a submission issue ----------------------------------------------------------------
# Every answer lands in the field it names, read as strictly as the validator reads the field.
# The headline figures become metrics of runs: a cold TTFT a baseline run, a warm TTFT and a hit
# rate the treatment run (the headline), or one run when the source measured one setting; the
# card repeats the headline run's figures. An answer that cannot be read leaves its field null
# with a TODO reason quoting it (a run's figure: a TODO note on the run), each run's note asks
# for the statistic the form does not, and answers with no field of their own (the other runs,
# anything else) go into the notes placeholder. KV206 rejects every placeholder until a
# maintainer has dealt with it.

_STATISTIC_TODO = (
    "TODO: each figure's statistic as the source gives it (single for one unqualified "
    "measurement; mean, median or a percentile otherwise)"
)
_DEFINITION_TODO = ", and the hit rate's definition (what it counts, over what window)"
_UNKNOWN_DEFINITION = {"counted_in": "not_stated", "window": "not_stated"}
# The headline answers: how each is read, and the metric it is in a run.
_RUN_FIGURES = {
    "ttft_ms": ("ms", "ttft_ms"),
    "cold_ttft_ms": ("ms", "ttft_ms"),
    "warm_ttft_ms": ("ms", "ttft_ms"),
    "hit_rate": ("fraction", "hit_rate"),
    "decode_tokens_per_s": ("rate", "decode_tokens_per_s"),
    "prefill_tokens_per_s": ("rate", "prefill_tokens_per_s"),
}
_COMPARED = ("cold_ttft_ms", "warm_ttft_ms", "hit_rate")  # answers that make two runs
_CARD = {"ttft_ms": "measured_ttft_ms_at_ctx", "decode_tokens_per_s": "measured_tps_at_ctx"}
_VENDOR_WORDS = ("nvidia", "amd", "apple", "geforce", "instinct")
_MODEL_SPELLINGS = ("name", "hf_repo")
_HARDWARE_SPELLINGS = ("name",)


def scaffold_from_issue(
    root: Path, answers: dict[str, str], overrides: dict[str, Any]
) -> tuple[str, str]:
    """The slug and YAML text of a record drafted from a submission issue's answers.

    ``answers`` come from ``issue_form.parse_issue_body``; ``overrides`` (fields of
    ``ScaffoldInputs``, as given on the command line) win over them. ``ValueError`` when the
    model, engine or KV dtype, which the arithmetic and the schema cannot do without, is missing
    or cannot be read; ``FileExistsError`` when the record exists.
    """
    reasons: dict[str, str] = {}

    def read(answer_id: str, reader: Callable[[str], Any], field: str) -> Any:
        answer = answers.get(answer_id)
        if answer is None:
            return None
        try:
            return reader(answer)
        except ValueError as error:
            reasons[field] = _unread(answer, str(error))
            return None

    model_id = overrides.get("model_id") or _issue_model(root, answers.get("model"))
    engine = overrides.get("engine") or _issue_engine(answers.get("engine"))
    accelerator = None
    if answers.get("hardware") is not None:
        accelerator = _issue_hardware(root, answers["hardware"])
        if accelerator is None:
            reasons["methodology.hardware.accelerator"] = _unread(
                answers["hardware"],
                _no_file(root, HARDWARE_DIR, answers["hardware"], _HARDWARE_SPELLINGS),
            )
    techniques = choices(answers.get("techniques", ""))
    inputs = ScaffoldInputs(
        slug="",
        model_id=model_id,
        dtype=one_line(answers.get("kv_dtype", "bf16")),
        dtype_stated="kv_dtype" in answers,
        context_tokens=read("context_tokens", whole_number, "kv_bytes_basis.context_tokens"),
        layers_counted="cache",
        source_url=read("source_url", url, "methodology.source.url"),
        publisher=one_line(answers.get("publisher", "TODO: who published the source")),
        techniques=[t for t in techniques if t in _techniques(root)],
        accelerator=accelerator,
        accelerator_count=read("accelerator_count", whole_number, "methodology.hardware.count"),
        engine=engine,
        engine_version=_line_or_none(answers.get("engine_version")),
    )
    inputs = inputs._replace(**overrides)
    for name, field in (
        ("context_tokens", "kv_bytes_basis.context_tokens"),
        ("source_url", "methodology.source.url"),
        ("accelerator", "methodology.hardware.accelerator"),
        ("accelerator_count", "methodology.hardware.count"),
    ):
        if name in overrides:
            reasons.pop(field, None)  # the command line answered it
    if not inputs.slug:
        inputs = inputs._replace(slug=_issue_slug(inputs))
    try:
        parse_element_type(inputs.dtype)
    except ValueError as error:
        raise ValueError(f"the KV cache dtype answer: {error}; give --dtype") from None
    record, geometry_reasons = _draft(root, inputs)
    reasons.update(geometry_reasons)

    methodology = record["methodology"]
    source = methodology["source"]
    source["title"] = _line_or_none(answers.get("source_title"))
    source["published"] = read("published", date, "methodology.source.published")
    source["locator"] = _line_or_none(answers.get("locator"))
    flags = lines_of(answers.get("engine_flags", ""))
    if flags:
        methodology["engine"]["flags"] = flags
    weights = _line_or_none(answers.get("weights_precision"))
    if weights is not None and weight_format(weights) is None:
        # the source's words; the precision waits, listed with a TODO, for a vocabulary name
        methodology["weights_stated_as"] = weights
        weights = None
    methodology["weights_precision"] = weights
    methodology["concurrency"] = read("concurrency", whole_number, "methodology.concurrency")
    if answers.get("workload"):
        methodology["workload"] = paragraph(answers["workload"])
    _issue_runs(record, answers, reasons)
    record["notes"] = _issue_notes(answers, [t for t in techniques if t not in _techniques(root)])
    return inputs.slug, _finish(root, record, reasons)


def _issue_runs(record: dict[str, Any], answers: dict[str, str], reasons: dict[str, str]) -> None:
    """The runs the headline answers describe, the headline run, and the card from it; an
    unreadable card figure gets its reason in ``reasons``, a run's in the run's note."""
    figures: dict[str, Any] = {}
    unread: dict[str, str] = {}
    for answer_id, (kind, _) in _RUN_FIGURES.items():
        if answer_id in answers:
            try:
                figures[answer_id] = figure(answers[answer_id], kind)
            except ValueError as error:
                unread[answer_id] = _unread(answers[answer_id], str(error))
    for answer_id, field in _CARD.items():
        if answer_id in unread:
            reasons[field] = unread.pop(answer_id)
    runs: list[dict[str, Any]] = []
    if "cold_ttft_ms" in answers:
        cold = {"id": "cold", "label": "prefix not cached (cold)", "role": "baseline"}
        runs.append(_issue_run(cold, ["cold_ttft_ms"], figures, unread))
    headline: dict[str, Any]
    if any(answer_id in answers for answer_id in _COMPARED):
        # the form's headline TTFT is the warm one when the warm TTFT is not answered apart
        ttft = "warm_ttft_ms" if "warm_ttft_ms" in answers else "ttft_ms"
        headline = {"id": "warm", "label": "prefix served from cache (warm)", "role": "treatment"}
        own = [ttft, "hit_rate"]
    else:
        headline = {"id": "main", "label": _RUN_LABEL, "role": "only"}
        own = ["ttft_ms"]
    own += ["decode_tokens_per_s", "prefill_tokens_per_s"]
    scope = DECODE_RATE_SCOPES.get(answers.get("decode_rate_scope", ""))
    runs.append(_issue_run(headline, own, figures, unread, scope))
    record["runs"] = runs
    record["headline_run"] = headline["id"]
    given = {metric["name"]: metric["value"] for metric in headline["metrics"]}
    record["measured_ttft_ms_at_ctx"] = figures.get("ttft_ms", given.get("ttft_ms"))
    record["measured_tps_at_ctx"] = figures.get("decode_tokens_per_s")


def _issue_run(
    run: dict[str, Any],
    answer_ids: list[str],
    figures: dict[str, Any],
    unread: dict[str, str],
    scope: str | None = None,
) -> dict[str, Any]:
    """A run with the figures of ``answer_ids`` as metrics, and a note of what to check: the
    answers that could not be read, each figure's statistic, a hit rate's definition."""
    run["metrics"] = []
    for answer_id in answer_ids:
        if answer_id not in figures:
            continue
        name = _RUN_FIGURES[answer_id][1]
        if name == "decode_tokens_per_s" and scope == "aggregate":
            name = "output_tokens_per_s"  # an aggregate rate has its own metric
        metric = {"name": name, "statistic": "single", "value": figures[answer_id]}
        if name == "hit_rate":
            metric["definition"] = dict(_UNKNOWN_DEFINITION)
        if name == "decode_tokens_per_s" and scope == "per_sequence":
            metric["scope"] = scope
        run["metrics"].append(metric)
    notes = [unread[answer_id] for answer_id in answer_ids if answer_id in unread]
    if run["metrics"]:
        defined = any(metric["name"] == "hit_rate" for metric in run["metrics"])
        notes.append(_STATISTIC_TODO + (_DEFINITION_TODO if defined else ""))
    if notes:
        run["note"] = "; ".join(notes)
    return run


def _issue_model(root: Path, answer: str | None) -> str:
    if answer is None:
        raise ValueError("the issue does not name the model; give --model")
    found = _find_id(root, MODELS_DIR, answer, _MODEL_SPELLINGS)
    if found is None:
        why = _no_file(root, MODELS_DIR, answer, _MODEL_SPELLINGS)
        raise ValueError(
            f"the Model answer {one_line(answer)!r}: {why}; add the "
            "model (kvrecords model import-hf) or give --model"
        )
    return found


def _issue_hardware(root: Path, answer: str) -> str | None:
    return _find_id(root, HARDWARE_DIR, answer, _HARDWARE_SPELLINGS)


def _issue_engine(answer: str | None) -> str:
    if answer is None:
        raise ValueError("the issue does not name the engine; give --engine")
    name = "-".join(one_line(answer).lower().split())
    if not ID_PATTERN.fullmatch(name.replace("_", "-").replace("+", "-")):
        raise ValueError(
            f"the Engine answer {one_line(answer)!r} is not an engine name such as vllm, sglang "
            "or llama.cpp; give --engine"
        )
    return name


def _find_id(root: Path, folder: str, answer: str, keys: tuple[str, ...]) -> str | None:
    """The one file of ``folder`` whose id, name or Hugging Face repository (or its last part)
    the answer spells, ignoring case, spaces and punctuation; None when none or several do."""
    variants = {_key(one_line(answer)), _key(one_line(answer).rsplit("/", 1)[-1])}
    for word in _VENDOR_WORDS:  # "NVIDIA H100 SXM" is h100-sxm
        variants |= {v.removeprefix(word) for v in set(variants)}
    found = set()
    for file_id, spellings in _spellings(root, folder, keys).items():
        keyed = {_key(spelling) for spelling in spellings}
        keyed |= {_key(spelling.rsplit("/", 1)[-1]) for spelling in spellings}
        if keyed & variants:
            found.add(file_id)
    return found.pop() if len(found) == 1 else None


def _spellings(root: Path, folder: str, keys: tuple[str, ...]) -> dict[str, list[str]]:
    """Each file's id with its name and repository (the ``keys`` it states) in ``folder``."""
    found = {}
    for path in sorted((root / folder).glob("*.yaml")):
        spellings = [path.stem]
        document = read_document(path, f"{folder}/{path.name}")
        if isinstance(document, Document) and isinstance(document.data, dict):
            values = (document.data.get(key) for key in keys)
            spellings += [value for value in values if isinstance(value, str)]
        found[path.stem] = spellings
    return found


def _key(text: str) -> str:
    return "".join(character for character in text.lower() if character.isalnum())


def _no_file(root: Path, folder: str, answer: str, keys: tuple[str, ...]) -> str:
    """Why the answer names no file, with the files that share the most of its words."""
    words = set(re.findall(r"[a-z0-9.]{2,}", one_line(answer).lower()))
    scores = {
        file_id: sum(1 for word in words if any(word in s.lower() for s in spellings))
        for file_id, spellings in _spellings(root, folder, keys).items()
    }
    best = max(scores.values(), default=0)
    close = sorted(file_id for file_id, score in scores.items() if score == best and best)[:3]
    if not close:
        close = closest(_key(answer), scores)
    hint = f" (close: {', '.join(close)})" if close else ""
    return f"no single file in {folder}/ is named so{hint}"


def _techniques(root: Path) -> set[str]:
    techniques = load_schema(root, "record")["properties"]["techniques"]
    return set(techniques["items"]["enum"])


def _issue_slug(inputs: ScaffoldInputs) -> str:
    """engine-model-accelerator-context, as the records are named (vllm-qwen3-8b-h100-sxm-32k)."""
    context = inputs.context_tokens
    parts = [inputs.engine.replace(".", ""), inputs.model_id, inputs.accelerator or ""]
    if context:
        parts.append(f"{context // 1000}k" if context % 1000 == 0 else str(context))
    slug = "-".join(part for part in parts if part)
    slug = "-".join(piece for piece in slug.replace("_", "-").replace("+", "-").split("-") if piece)
    return slug[:_MAX_SLUG].rstrip(".-")


def _issue_notes(answers: dict[str, str], unknown_techniques: list[str]) -> str:
    """The notes placeholder, carrying the answers that have no field of their own."""
    parts = ["TODO: what the record shows and how to read it."]
    if answers.get("runs"):
        parts.append(
            "The issue's runs and figures, each to be written as a run with its metrics: "
            + _sentence(lines_of(answers["runs"]))
        )
    if answers.get("other"):
        parts.append("The issue adds: " + _sentence(lines_of(answers["other"])))
    if unknown_techniques:
        parts.append(f"Techniques the schema does not know: {', '.join(unknown_techniques)}.")
    return " ".join(parts)


def _sentence(lines: list[str]) -> str:
    return "; ".join(line.rstrip(".;") for line in lines) + "."


def _unread(answer: str, why: str) -> str:
    shown = one_line(answer)
    if len(shown) > 80:
        shown = shown[:79] + "…"
    return f"TODO: the issue answers {shown!r}, which cannot be recorded as it is: {why}"


def _line_or_none(answer: str | None) -> str | None:
    return None if answer is None else one_line(answer)


# ---- inputs ---------------------------------------------------------------------------------


def _check_slug(slug: str) -> None:
    if not ID_PATTERN.fullmatch(slug) or len(slug) > _MAX_SLUG:
        raise ValueError(
            f"slug {slug!r}: use lowercase letters, digits, dots and hyphens, starting with a letter "
            f"or digit, at most {_MAX_SLUG} characters (the record becomes {RECORDS_DIR}/{RECORD_PREFIX}/<slug>.yaml)"
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
    if problems:
        raise ValueError("; ".join(p.message for p in problems))


# ---- the record -----------------------------------------------------------------------------


def _record(
    inputs: ScaffoldInputs, *, model_display: str, model: Model, report: KvReport
) -> tuple[dict[str, Any], dict[str, str]]:
    """The record's data without not_stated, and the reasons of the nulls it can explain."""
    slug, model_id, context_tokens = inputs.slug, inputs.model_id, inputs.context_tokens
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
        "kv_at_context": None if at_context is None else format_in_unit(at_context, "GiB", 2),
    }
    state = report.fixed_state_bytes
    if state:  # only models with state layers whose dimensions are published
        basis["fixed_state"] = _readable(state)
    basis["explanation"] = _explanation(
        model_display, model, report, inputs.dtype_stated, context_tokens
    )
    record: dict[str, Any] = {
        "format": 2,
        "id": f"{RECORD_PREFIX}/{slug}",
        "title": "TODO: one line with the technique, model, hardware and context",
        "model": model_id,
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
            "locator": None,
            "citation": "TODO: a citation a reader can follow without the URL (author, title, date, section)",
        },
        "hardware": {"accelerator": inputs.accelerator, "count": inputs.accelerator_count},
        "engine": {"name": inputs.engine, "version": inputs.engine_version},
        "weights_precision": None,
        "concurrency": None,
        "workload": "TODO: the prompts and traffic (lengths, sharing, repetitions)",
    }
    record["runs"] = [
        {"id": "main", "label": _RUN_LABEL, "role": "only", "metrics": [], "note": _RUN_NOTE}
    ]
    record["headline_run"] = "main"
    record["notes"] = "TODO: what the record shows and how to read it"
    record["confidence"] = None
    record["confidence_reason"] = (
        "TODO: rate with the rubric in CONTRIBUTING.md and say what is stated and what is assumed"
    )
    record["measured_ttft_ms_at_ctx"] = None
    record["measured_tps_at_ctx"] = None
    reasons = {}
    if per_token is None:
        geometry_reason = f"{model_display}.yaml does not publish {', '.join(model.unknown) or 'the dimensions needed'}"
        reasons = dict.fromkeys(
            ("kv_bytes_basis.bytes_per_token", "kv_bytes_basis.kv_at_context"), geometry_reason
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
            total = format_in_unit(at_context, "GiB", 2)
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
    """A byte figure with 2 decimals in the largest binary unit that keeps it at 1 or more."""
    return format_binary(exact_bytes)
