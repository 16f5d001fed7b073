"""The validator's recomputation of a record already read: ``kvrecords explain``'s text.

``explain_record`` reads the record and its model from disk; the site has both in memory and
a hardware catalog shared by every record, so this is its body for a parsed document, with
explain's own lines (the text is the same, line for line), and the record as the checks see
it, from which the pages show each run's and each comparison's recomputation.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.plausibility import ModelLookup
from kvrecords.dataset.document import Document
from kvrecords.dataset.hardware import HardwareCatalog
from kvrecords.dataset.layout import MODELS_DIR, SCHEMA_DIR
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.geometry import Model
from kvrecords.tools.explain import _problem_lines, explain_lines


class Recomputation(NamedTuple):
    text: str  # what ``kvrecords explain`` prints
    context: RecordContext | None  # the record as the checks see it; None: it fails its schema


def recompute(
    root: Path, document: Document, model: Model, catalog: HardwareCatalog, models: ModelLookup
) -> Recomputation:
    """What ``kvrecords explain`` prints for ``document``, whose model is ``model``; ``models``
    gives the other models its runs name."""
    lines = [document.path]
    schema_errors = schema_problems(document, "record", root / SCHEMA_DIR)
    if schema_errors:
        lines.append("fails its schema, so nothing is derived:")
        return Recomputation("\n".join(lines + _problem_lines(schema_errors)), None)
    context = RecordContext(document, model, f"{MODELS_DIR}/{document.data['model']}")
    return Recomputation("\n".join(lines + explain_lines(context, catalog, models)), context)
