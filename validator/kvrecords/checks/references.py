"""What a record points at and leaves open: its model link, nulls with reasons, placeholders."""

from __future__ import annotations

from pathlib import Path

from kvrecords.dataset.document import Document, dotted
from kvrecords.dataset.layout import ID_PATTERN, model_file
from kvrecords.problems import Problem

PLACEHOLDER = "TODO"  # what kvrecords new writes where the contributor must write


def model_link_problem(root: Path, document: Document, model_exists: bool) -> Problem | None:
    """KV203: ``model`` is an id naming an existing models/<id>.yaml, never a path."""
    model_id: str = document.data["model"]
    if not ID_PATTERN.fullmatch(model_id):
        message = (
            f"model {model_id!r} must be a model id naming models/<id>.yaml "
            "(lowercase letters, digits, dots, hyphens), never a path"
        )
        return document.problem("KV203", ("model",), message)
    if model_exists:
        return None
    display = f"models/{model_id}.yaml"
    reason = (
        "is a dangling symlink" if model_file(root, model_id).is_symlink() else "does not exist"
    )
    return document.problem("KV203", ("model",), f"model {model_id!r}: {display} {reason}")


def broken_model_problem(document: Document, model_display: str) -> Problem:
    """KV204: the linked model has problems of its own, so the arithmetic is not checked."""
    message = f"{model_display} has problems (reported there); arithmetic not checked"
    return document.problem("KV204", ("model",), message)


def placeholder_problems(document: Document) -> list[Problem]:
    """KV206: no TODO placeholder from a scaffold is left in the record."""
    return [
        document.problem("KV206", path, f"{dotted(path)} is still a placeholder: {value[:60]!r}")
        for path, value in document.leaves.items()
        if isinstance(value, str) and value.lstrip().startswith(PLACEHOLDER)
    ]


def null_reason_problems(document: Document, list_key: str) -> list[Problem]:
    """KV205: every null is listed with a reason under ``list_key``, and only nulls are listed."""
    nulls = {
        dotted(path): path
        for path, value in document.leaves.items()
        if value is None and path[0] != list_key
    }
    listed: dict[str, int] = {}
    for index, entry in enumerate(document.data.get(list_key, [])):
        listed.setdefault(entry["field"], index)
    problems = []
    for name, path in sorted(nulls.items()):
        if name not in listed:
            message = f"{name} is null; list it under {list_key} with the reason"
            problems.append(document.problem("KV205", path, message))
    for name, index in sorted(listed.items()):
        if name not in nulls:
            message = f"{list_key} lists {name}, which is not null"
            problems.append(document.problem("KV205", (list_key, index, "field"), message))
    return problems
