"""Model files (models/<id>.yaml): read once, checked, and turned into geometry."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kvrecords.checks.files import identity_problems, modeline_problems, read_dataset_file
from kvrecords.checks.references import null_reason_problems
from kvrecords.dataset.document import Document
from kvrecords.dataset.layout import SCHEMA_DIR, DatasetFile, IdClaims
from kvrecords.dataset.models import model_from_data
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.geometry import Model
from kvrecords.problems import Problem, Rule

LAYER_COUNT = Rule(
    "KV601",
    "layer-count",
    "A model's layer groups add up to num_layers.",
    "A missing or double-counted group changes every byte computed from the model.",
    "num_layers: 64\nlayer_groups: [{kind: attention, layers: 16, ...}, {kind: linear_attention, layers: 48, ...}]",
    "num_layers: 64\nlayer_groups: [{kind: attention, layers: 16, ...}]\n# KV601 layer groups add up to 16; num_layers is 64",
)


class ModelState(NamedTuple):
    """A model file once checked: its geometry when it is sound, and its own problems."""

    file: DatasetFile
    model: Model | None
    problems: list[Problem]


def check_model_file(
    root: Path, dataset_file: DatasetFile, claims: IdClaims | None = None
) -> ModelState:
    document = read_dataset_file(root, dataset_file)
    if not isinstance(document, Document):
        return ModelState(dataset_file, None, document)
    problems = modeline_problems(root, document, dataset_file)
    schema_errors = schema_problems(document, "model", root / SCHEMA_DIR)
    if schema_errors:
        return ModelState(dataset_file, None, problems + schema_errors)
    problems += identity_problems(document, dataset_file, claims or IdClaims(root))
    problems += null_reason_problems(document, "unknown")
    problems += layer_count_problems(document)
    return ModelState(dataset_file, model_from_data(document.data), problems)


def layer_count_problems(document: Document) -> list[Problem]:
    """KV601: the layer groups add up to the model's layer count."""
    data = document.data
    total = sum(group["layers"] for group in data["layer_groups"])
    if total == data["num_layers"]:
        return []
    counts = " + ".join(f"{g['layers']} {g['kind']}" for g in data["layer_groups"])
    message = f"layer groups add up to {total} ({counts}); num_layers is {data['num_layers']}"
    return [document.problem(LAYER_COUNT, ("num_layers",), message)]
