"""``explain``: every number the validator derives for one record, and what it could not check.

The text lists the inputs read from the model and hardware files, the KV arithmetic with its
formulas, the figures derived from the measurements, each plausibility check with its margin,
and the checks that were not run for lack of a stated input. It never raises for anything a
record holds: a file that cannot be read or fails its schema is explained as far as it goes.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from kvrecords.checks.context import RecordContext
from kvrecords.checks.derivations import RunDerivation, run_derivations
from kvrecords.checks.engine_reported import ENGINE_REPORTED, engine_checks
from kvrecords.checks.hardware import hardware_catalog
from kvrecords.checks.max_concurrency import unchecked_concurrency
from kvrecords.checks.measurements import (
    BYTES_NOT_RECOMPUTED,
    PREFILL_RATE,
    SPEEDUP,
    TOKENS_NOT_RECOMPUTED,
)
from kvrecords.checks.plausibility import Evaluation, Inputs, ModelLookup, all_evaluations
from kvrecords.checks.registry import record_problems
from kvrecords.checks.runs import (
    Bounds,
    comparison_unit,
    comparisons,
    unit_suffix,
)
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.hardware import HardwareCatalog, HardwareIndex, hardware_index
from kvrecords.dataset.layout import (
    ID_PATTERN,
    MODELS_DIR,
    SCHEMA_DIR,
    DatasetFile,
    IdClaims,
    classify,
    model_file,
)
from kvrecords.dataset.records import bases, basis_report, runs
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.arithmetic import KvReport
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.units import (
    format_binary,
    format_bytes_exact,
    format_exact,
    format_fraction,
    format_in_unit,
)
from kvrecords.kv.weights import weight_format
from kvrecords.problems import Problem, Rule
from kvrecords.runner.reporters import counted, problem_line

INDENT = "  "


def explain_record(root: Path, record_path: Path) -> str:
    """Everything the validator derives for the record at ``record_path``, as text."""
    root = root.resolve()
    dataset_file = classify(root, record_path)
    display = dataset_file.display if dataset_file else str(record_path)
    lines = [display]
    document = read_document(record_path, display)
    if not isinstance(document, Document):
        return "\n".join([*lines, "cannot be read:", *_problem_lines(document)])
    schema_errors = schema_problems(document, "record", root / SCHEMA_DIR)
    if schema_errors:
        lines.append("fails its schema, so nothing is derived:")
        return "\n".join(lines + _problem_lines(schema_errors))
    record = _record_context(root, document)
    if isinstance(record, str):
        return "\n".join([*lines, record])
    return "\n".join(lines + explain_lines(record, hardware_catalog(root), model_lookup(root)))


def model_lookup(root: Path) -> ModelLookup:
    """The geometry of a model a run or a draft names, read once, when its file is sound."""
    from kvrecords.checks.models import ModelState
    from kvrecords.runner.validate import check_model_file, sound_model

    states: dict[str, ModelState | None] = {}

    def state_of(model_id: str) -> ModelState | None:
        if model_id not in states:
            display = f"{MODELS_DIR}/{model_id}.yaml"
            found = model_file(root, model_id).is_file()
            states[model_id] = (
                check_model_file(root, DatasetFile("model", display, root)) if found else None
            )
        return states[model_id]

    return lambda model_id: sound_model(state_of, model_id)


def explain_lines(
    record: RecordContext, catalog: HardwareCatalog, models: ModelLookup | None = None
) -> list[str]:
    """The explanation of a schema-valid record whose model is loaded (the site's pages too).

    ``models`` gives the geometry of the other models its runs or drafts name; without it
    those runs are shown as not checked."""
    hardware = hardware_index(record.data, catalog)
    lines = _model_section(record)
    lines += _hardware_section(record, hardware)
    lines += _kv_section(record)
    lines += _runs_section(record, models)
    evaluations = all_evaluations(record, Inputs(hardware, models))
    assumptions = _assumptions_used(evaluations)
    lines += _plausibility_section(evaluations, assumptions)
    lines += _assumptions_section(assumptions)
    lines += _not_checked_section(record, evaluations, models)
    problems = record_problems(record, hardware, models)
    lines.append("Problems:" if problems else "Problems: none")
    lines += _problem_lines(sorted(set(problems)))
    return lines


def _problem_lines(problems: list[Problem]) -> list[str]:
    return [INDENT + problem_line(problem) for problem in problems]


def _record_context(root: Path, document: Document) -> RecordContext | str:
    from kvrecords.runner.validate import check_model_file

    model_id = document.data["model"]
    if not ID_PATTERN.fullmatch(model_id):
        return f"model {model_id!r} is not a model id; nothing is derived"
    path = model_file(root, model_id)
    display = f"{MODELS_DIR}/{model_id}.yaml"
    if not path.is_file():
        return f"model {model_id!r}: {display} does not exist; nothing is derived"
    state = check_model_file(root, DatasetFile("model", display, root))
    if state.model is None or any(p.severity == "error" for p in state.problems):
        lines = [f"{display} has problems; nothing is derived:", *_problem_lines(state.problems)]
        return "\n".join(lines)
    model_ids = IdClaims(root).model_ids()
    return RecordContext(document, state.model, display.removesuffix(".yaml"), model_ids)


# ---- inputs ---------------------------------------------------------------------------------


def _model_section(record: RecordContext) -> list[str]:
    model = record.model
    lines = [f"Model {record.model_display}.yaml: {model.name}, {model.num_layers} layers"]
    for group in model.groups:
        lines.append(f"{INDENT}{group.layers} x {group.kind}")
    parameters = model.parameters
    if parameters is None:
        lines.append(f"{INDENT}parameters: not stated")
    else:
        total = _billions(parameters.total_billions)
        active = _billions(parameters.active_billions)
        lines.append(
            f"{INDENT}parameters: {total} total, {active} active, stated as "
            f"{parameters.stated_as!r}"
        )
    published = model.published_precisions
    lines.append(
        f"{INDENT}published precisions: "
        + (", ".join(published) if published else "not listed (unstated weights may be any)")
    )
    if model.unknown:
        lines.append(f"{INDENT}unknown in the model file: {', '.join(model.unknown)}")
    return lines


def _billions(value: Fraction | None) -> str:
    return "not stated" if value is None else f"{format_exact(value)}B"


def _hardware_section(record: RecordContext, hardware: HardwareIndex) -> list[str]:
    methodology = record.data["methodology"]
    lines = [f"Hardware: {_stated_hardware(methodology['hardware'])}"]
    for accelerator, state in sorted(hardware.states.items()):
        if state is None:
            lines.append(f"{INDENT}{accelerator}: hardware/{accelerator}.yaml does not exist")
        elif state.hardware is None:
            lines.append(f"{INDENT}{state.display}: has problems, figures not used")
        else:
            lines += _hardware_lines(state.hardware)
    lines.append(f"Weights: {_stated_weights(methodology.get('weights_precision'))}")
    concurrency = methodology.get("concurrency")
    lines.append(f"Concurrency: {concurrency if concurrency is not None else 'not stated'}")
    if methodology.get("request_rate") is not None:
        lines.append(f"Request rate: {methodology['request_rate']} requests/s")
    drafting = methodology.get("speculative_decoding")
    if drafting is not None:
        lines.append(f"Speculative decoding (every run): {_flow(drafting)}")
    return lines


def _stated_hardware(stated: dict[str, Any]) -> str:
    """``rtx-5090 x 2``, or what of it the record does not state."""
    accelerator, count = stated.get("accelerator"), stated.get("count")
    if accelerator is None:
        return "not stated" if count is None else f"not stated ({counted(count, 'accelerator')})"
    return f"{accelerator} (count not stated)" if count is None else f"{accelerator} x {count}"


def _stated_weights(stated: str | None) -> str:
    """The weights precision as stated, and what the checks read it as (assumptions apart)."""
    if stated is None:
        return "not stated"
    weights = weight_format(stated)
    if weights is None:
        return f"{stated!r}, not in the vocabulary"
    return f"{stated!r} -> {weights.describe()}"


def _hardware_lines(hardware: Hardware) -> list[str]:
    memory = (
        "unknown" if hardware.usable_memory_bytes is None else _bytes(hardware.usable_memory_bytes)
    )
    bandwidth = (
        "unknown"
        if hardware.bandwidth_bytes_per_s is None
        else f"{format_exact(hardware.bandwidth_bytes_per_s)} B/s"
    )
    lines = [
        f"{INDENT}{hardware.display}: {hardware.name}",
        f"{INDENT * 2}memory {memory} ({hardware.memory_figure}; confidence {hardware.memory_confidence}"
        + (", unified" if hardware.unified else "")
        + ")",
        f"{INDENT * 2}bandwidth {bandwidth} ({hardware.bandwidth_figure}; confidence "
        f"{hardware.bandwidth_confidence})",
    ]
    for compute_type, peak in sorted(hardware.peaks.items()):
        tflops = format_exact(peak.flops_per_s / 10**12)
        lines.append(
            f"{INDENT * 2}{compute_type} dense peak {tflops} TFLOP/s ({peak.figure}; "
            f"confidence {peak.confidence})"
        )
    if not hardware.peaks:
        lines.append(f"{INDENT * 2}no dense peak published")
    return lines


def _bytes(value: Fraction | int) -> str:
    """Exact bytes in full; a figure read from a file in GiB (not whole bytes) approximately."""
    value = Fraction(value)
    if value.denominator == 1:
        return format_bytes_exact(value)
    return f"~{round(value):,} B ({format_binary(value, ('GiB', 'MiB'))})"


# ---- KV arithmetic --------------------------------------------------------------------------


def _kv_section(record: RecordContext) -> list[str]:
    basis = record.data["kv_bytes_basis"]
    context_tokens = basis.get("context_tokens")
    dtype_note = "stated" if basis.get("dtype_stated") else "not stated by the source"
    lines = [
        f"KV arithmetic ({basis['dtype']}, {dtype_note}; context "
        f"{'not stated' if context_tokens is None else f'{context_tokens:,} tokens'})"
    ]
    for _, label, stated in bases(record.data):
        try:
            report = basis_report(record.model, stated)
        except ValueError as error:
            lines.append(f"{INDENT}{label}: {error}")
            continue
        lines += _basis_lines(label, stated, report, context_tokens)
    return lines


def _basis_lines(
    label: str, stated: dict[str, Any], report: KvReport, context_tokens: int | None
) -> list[str]:
    lines = [f"{INDENT}{label} ({stated['layers_counted']}, {report.dtype.name})"]
    lines.append(
        f"{INDENT * 2}bytes per token: {report.formula()}" + _stated(stated.get("bytes_per_token"))
    )
    at_context = report.kv_bytes_at_context
    if context_tokens is None:
        lines.append(f"{INDENT * 2}KV at context: not computed (no context_tokens)")
    elif at_context is None:
        lines.append(f"{INDENT * 2}KV at context: unknown (the geometry is incomplete)")
    else:
        terms = " + ".join(
            f"{format_exact(cost.bytes_per_token)} B/token x {cost.tokens_held:,} tokens"
            for cost in report.groups
            if cost.bytes_per_token
        )
        lines.append(
            f"{INDENT * 2}KV at context: {terms or '0'} = {_bytes(at_context)}"
            + _stated(stated.get("kv_at_context"))
        )
    state = report.fixed_state_bytes
    formulas = " + ".join(cost.state_formula for cost in report.groups if cost.state_formula)
    if formulas:
        shown = "" if state is None else f" ({format_in_unit(state, 'MiB', 2)})"
        lines.append(
            f"{INDENT * 2}fixed state: {formulas}{shown}" + _stated(stated.get("fixed_state"))
        )
    return lines


def _stated(value: Any) -> str:
    return "" if value is None else f" (stated {value})"


# ---- measurements ---------------------------------------------------------------------------


def _rate(value: Fraction) -> str:
    return f"{format_fraction(value, 1)} tok/s"


# What each derivation is called, and how its value is shown.
_DERIVED_AS: dict[Rule, tuple[str, Callable[[Fraction], str]]] = {
    TOKENS_NOT_RECOMPUTED: ("tokens not recomputed", format_exact),
    BYTES_NOT_RECOMPUTED: ("bytes not recomputed", _bytes),
    PREFILL_RATE: ("prefill rate", _rate),
}


_RUN_SETTINGS = (
    "model",
    "techniques",
    "kv_dtype",
    "engine",
    "hardware",
    "weights_precision",
    "weights_placement",
    "speculative_decoding",
    "concurrency",
    "request_rate",
    "context_tokens",
    "output_tokens",
    "requests",
    "duration",
)


def _runs_section(record: RecordContext, models: ModelLookup | None) -> list[str]:
    """Each run with what it sets and measures, each comparison recomputed, each derivation."""
    lines = ["Runs"]
    for run in runs(record.data):
        stated = run.stated
        lines.append(f"{INDENT}{run.id} ({stated['role']}): {stated['label']}")
        for key in _RUN_SETTINGS:
            if key in stated:
                lines.append(f"{INDENT * 2}{key}: {_flow(stated[key])}")
        for metric in stated.get("metrics", []):
            shown_value = _flow(metric["value"])
            spread = metric.get("spread")
            if spread is not None:
                shown_value += f" \u00b1 {_flow(spread['value'])} ({spread['of']})"
            lines.append(f"{INDENT * 2}{metric['name']} ({metric['statistic']}): {shown_value}")
    lines.append("Comparisons" if record.data.get("comparisons") else "Comparisons: none")
    for comparison in comparisons(record):
        stated = comparison.stated
        head = f"{stated['kind']} of {stated['metric']} ({stated['statistic']}), "
        head += f"{stated['from']} -> {stated['to']}"
        if comparison.value is None:
            lines.append(f"{INDENT}{head}: {comparison.working} (stated {stated['stated']})")
            continue
        scale = 100 if stated["kind"] == "change" else 1
        scaled = Bounds(comparison.value.low * scale, comparison.value.high * scale)
        shown = f"{scaled.show()}{unit_suffix(comparison_unit(stated['kind'], stated['metric']))}"
        lines.append(f"{INDENT}{head}: {comparison.working} = {shown} (stated {stated['stated']})")
        flag = stated.get("source_arithmetic")
        if flag is not None:
            lines.append(
                f"{INDENT * 2}the source's own arithmetic: it states {stated['stated']}, its "
                f"runs give {flag['recomputed']} ({flag['note']})"
            )
    lines.append("Derived from each run's measurements")
    lines += [_run_derivation_line(derivation) for derivation in run_derivations(record)]
    checks = engine_checks(record, models)
    if checks:
        lines.append("What the engine printed, against the engine model")
    for check in checks:
        where = (
            f"{INDENT}{check.item.run.id}: kv_bytes_reported {_flow(check.item.stated['value'])}"
        )
        for error in check.errors:
            lines.append(f"{where}: not computed: {error.message}")
        if not check.candidates and not check.errors:
            lines.append(f"{where}: not checked: {check.why_not}")
        for candidate in check.candidates:
            verdict = "agrees" if candidate.agrees else "differs"
            lines.append(f"{where}: {candidate.working} = {candidate.bytes:,} B ({verdict})")
    return lines


def _run_derivation_line(derivation: RunDerivation) -> str:
    label, shown = _DERIVED_AS[derivation.rule]
    where = f"{INDENT}{derivation.run.id}: {label}"
    if derivation.value is None:
        return f"{where}: not derived: {derivation.working}"
    return f"{where}: {derivation.working} = {shown(derivation.value)}{_stated(derivation.stated)}"


def _flow(value: Any) -> str:
    """A stated value on one line: mappings as `key value`, lists joined."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {_flow(inner)}" for key, inner in value.items())
    if isinstance(value, list):
        return ", ".join(_flow(item) for item in value)
    if value is None:
        return "not stated"
    return str(value)


# ---- plausibility ---------------------------------------------------------------------------


def _assumptions_used(evaluations: list[Evaluation]) -> list[str]:
    """Every assumption a check that ran rests on, once each, in the order first used."""
    used = (a for e in evaluations if e.checked for a in e.assumptions)
    return list(dict.fromkeys(used))


def _plausibility_section(evaluations: list[Evaluation], assumptions: list[str]) -> list[str]:
    """Each check that ran, naming its assumptions by number (the list follows)."""
    lines = ["Plausibility"]
    for evaluation in (e for e in evaluations if e.checked):
        numbers = ", ".join(f"[{assumptions.index(a) + 1}]" for a in evaluation.assumptions)
        rests_on = f" (assumes {numbers})" if numbers else ""
        lines.append(f"{INDENT}{evaluation._replace(assumptions=()).summary()}{rests_on}")
    if len(lines) == 1:
        lines.append(f"{INDENT}no check could run (see below)")
    return lines


def _assumptions_section(assumptions: list[str]) -> list[str]:
    if not assumptions:
        return ["Assumptions: none"]
    lines = ["Assumptions of the likely reading (a check violated only on it warns)"]
    lines += [f"{INDENT}[{number}] {text}" for number, text in enumerate(assumptions, 1)]
    return lines


def _not_checked_section(
    record: RecordContext, evaluations: list[Evaluation], models: ModelLookup | None
) -> list[str]:
    """Everything the checks could not work out, and why: comparisons stated only, figures a
    run cannot derive, engine lines no engine model sizes, plausibility checks lacking an
    input. "nothing" only when every one of them ran."""
    skipped = [
        f"{derivation.rule.code} {derivation.run.id}: {derivation.field}: {derivation.working}"
        for derivation in run_derivations(record)
        if derivation.value is None
    ]
    for comparison in comparisons(record):
        if comparison.value is None:
            stated = comparison.stated
            what = f"{stated['kind']} of {stated['metric']} ({stated['statistic']})"
            where = f"{stated['from']} -> {stated['to']}"
            bound = " (held to the bound it leaves open)" if comparison.limits else ""
            skipped.append(f"{SPEEDUP.code} {what}, {where}: {comparison.working}{bound}")
    for check in engine_checks(record, models):
        if not check.candidates and not check.errors:
            skipped.append(f"{ENGINE_REPORTED.code} {check.item.run.id}: {check.why_not}")
    skipped += unchecked_concurrency(record)
    skipped += [f"{e.rule.code} {e.check}: {e.skipped}" for e in evaluations if not e.checked]
    lines = ["Not checked" if skipped else "Not checked: nothing"]
    lines += [f"{INDENT}{line}" for line in skipped]
    return lines
