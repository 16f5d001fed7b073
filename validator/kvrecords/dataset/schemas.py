"""JSON Schema validation with every error located at a line and column of the file."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from kvrecords.dataset.document import Document, JsonPath, dotted
from kvrecords.kv.units import BYTE_UNITS, parse_number
from kvrecords.problems import Problem

SCHEMA_NAMES = ("record", "model", "hardware")


@functools.cache
def _schema(schema_dir: Path, name: str) -> dict[str, Any]:
    """One schema of a dataset, read once per process.

    The schemas belong to the dataset (``schema/`` beside ``records/``), so a fork that changes
    its schema is checked against its own.
    """
    loaded: dict[str, Any] = json.loads((schema_dir / f"{name}.schema.json").read_text("utf-8"))
    return loaded


@functools.cache
def validator_for(schema_dir: Path, name: str) -> Any:
    """The jsonschema validator, which explains every error; built on the first invalid file."""
    from jsonschema import Draft202012Validator

    schema = _schema(schema_dir, name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@functools.cache
def _fast_validator(schema_dir: Path, name: str) -> Any:
    """jsonschema-rs, about a hundred times faster, answers only whether a file is valid."""
    try:
        import jsonschema_rs
    except ImportError:  # a platform without its wheel: the pure-Python validator does all
        return None
    return jsonschema_rs.validator_for(_schema(schema_dir, name))


def schema_problems(document: Document, name: str, schema_dir: Path) -> list[Problem]:
    """Every schema error in ``document``, each at the position of what it is about.

    Valid files (nearly all) pass the fast check and never load the explaining validator.
    """
    fast = _fast_validator(schema_dir, name)
    if fast is not None and fast.is_valid(document.data):
        return []
    validator = validator_for(schema_dir, name)
    problems = []
    for error in validator.iter_errors(document.data):
        problems.append(_problem(document, _most_specific(error)))
    return sorted(set(problems))


def _most_specific(error: Any) -> Any:
    """For oneOf/anyOf/if-then failures, the error from the branch that came closest."""
    from jsonschema.exceptions import best_match

    while error.context:
        error = best_match(error.context)
    return error


def _problem(document: Document, error: Any) -> Problem:
    path: JsonPath = tuple(error.absolute_path)
    field = dotted(path) or "the top level"
    message = f"{field}: {error.message}"
    on_key = False
    if error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extras = sorted(k for k in error.instance if k not in allowed)
        if extras:
            path = (*path, extras[0])
            on_key = True
            message = (
                f"{dotted(path)}: unknown key {extras[0]!r}; allowed here: "
                f"{', '.join(sorted(allowed))}"
            )
    elif error.validator == "required":
        on_key = bool(path)
    hint = _hint(error)
    if hint:
        message += f" ({hint})"
    return document.problem("KV101", path, message, key=on_key)


def _hint(error: Any) -> str:
    """A nudge for the common slips."""
    instance = error.instance
    if isinstance(instance, str) and error.validator in ("type", "oneOf", "anyOf", "pattern"):
        number = parse_number(instance)
        if number is not None and "," in instance:
            return (
                f"write {number.value} without thousands separators; YAML reads {instance} as text"
            )
        unit = instance.split()[-1] if instance.split() else ""
        lowered = {u.lower(): u for u in BYTE_UNITS}
        if unit not in BYTE_UNITS and unit.lower() in lowered:
            return f"units are case-sensitive: {lowered[unit.lower()]} (GiB = 2^30 B, GB = 10^9 B)"
    if isinstance(instance, bool) and error.validator == "type":
        return "a boolean here; write a number, or null with the reason in prose"
    return ""
