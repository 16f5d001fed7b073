"""The validator's recomputation of a record already read: ``kvrecords explain``'s text.

``explain_record`` reads the record and its model from disk; the site has both in memory and
a hardware catalog shared by every record, so this is its body for a parsed document, built
from explain's own sections (the text is the same, line for line). Once ``explain`` takes a
parsed document itself, this module goes.
"""

from __future__ import annotations

from pathlib import Path

from kvrecords.checks.context import RecordContext
from kvrecords.checks.hardware import HardwareCatalog
from kvrecords.checks.plausibility import all_evaluations, hardware_index, setup_of
from kvrecords.checks.registry import record_problems
from kvrecords.dataset.document import Document
from kvrecords.dataset.layout import MODELS_DIR, SCHEMA_DIR
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.geometry import Model
from kvrecords.tools.explain import (
    _hardware_section,
    _kv_section,
    _measurement_section,
    _model_section,
    _not_checked_section,
    _plausibility_section,
    _problem_lines,
)


def recompute(root: Path, document: Document, model: Model, catalog: HardwareCatalog) -> str:
    """What ``kvrecords explain`` prints for ``document``, whose model is ``model``."""
    lines = [document.path]
    schema_errors = schema_problems(document, "record", root / SCHEMA_DIR)
    if schema_errors:
        lines.append("fails its schema, so nothing is derived:")
        return "\n".join(lines + _problem_lines(schema_errors))
    context = RecordContext(document, model, f"{MODELS_DIR}/{document.data['model']}")
    hardware = hardware_index(document.data, catalog)
    lines += _model_section(context)
    lines += _hardware_section(context, hardware)
    lines += _kv_section(context)
    lines += _measurement_section(context)
    evaluations = all_evaluations(context, setup_of(context, hardware))
    lines += _plausibility_section(evaluations)
    lines += _not_checked_section(evaluations)
    problems = record_problems(context, catalog)
    lines.append("Problems:" if problems else "Problems: none")
    lines += _problem_lines(sorted(set(problems)))
    return "\n".join(lines)
