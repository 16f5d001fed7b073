"""JSON Schema validation with every error located at a line and column of the file."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.document import Document, JsonPath, dotted
from kvrecords.kv.arithmetic import dtype_spelling
from kvrecords.kv.units import BYTE_UNITS, parse_number
from kvrecords.problems import Problem, Rule, closest

SCHEMA = Rule(
    "KV101",
    "schema",
    "The file satisfies its JSON Schema (schema/record.schema.json or schema/model.schema.json).",
    "The schema names every field and its type; every error is reported at its line and "
    "column, with a hint for the common slips (a number written with thousands separators "
    "is text in YAML; units are case-sensitive). A value outside a closed vocabulary (a KV "
    "dtype, a speculative-decoding method, a technique) names the value the schema writes "
    "for it (bfloat16 is bf16, EAGLE-3 is eagle3) or the nearest ones; nothing is read as a "
    "synonym silently.",
    "bytes_per_token: 65536",
    "bytes_per_token: 65,536\n# KV101 kv_bytes_basis.bytes_per_token: '65,536' is not of type "
    "'integer', 'null' (write 65536 without thousands separators)",
)

SCHEMA_NAMES = ("record", "model", "hardware")

# TODO, which kvrecords new writes where the contributor must write, in any case, and the other
# marks people leave (TBD, FIXME), opening the text
_PLACEHOLDER_RE = re.compile(r"\s*(?:todo|tbd|fixme)\b", re.IGNORECASE)


def is_placeholder(value: object) -> bool:
    """A text a draft left for a person to write (KV206 reports each)."""
    return isinstance(value, str) and _PLACEHOLDER_RE.match(value) is not None


def may_hold_placeholder(file_text: str) -> bool:
    """Whether any value of a file with this text may be a placeholder: an ASCII text that
    never writes the words in any case (nor a backslash, which could spell them in an escape)
    holds none. Substring tests: a case-blind regular expression would try every position."""
    if "\\" in file_text or not file_text.isascii():
        return True
    lowered = file_text.lower()
    return "todo" in lowered or "tbd" in lowered or "fixme" in lowered


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
    if name == "record":
        older = _older_format(document)
        if older is not None:
            return [older]
    validator = validator_for(schema_dir, name)
    problems = []
    for error in validator.iter_errors(document.data):
        problems.append(_problem(document, _most_specific(error)))
    return sorted(set(problems))


def _older_format(document: Document) -> Problem | None:
    """One problem for a record in format 1 (``results``, no ``format: 2``, or ``format: 1``),
    which says how to rewrite it, instead of every way format 2's schema refuses it."""
    data = document.data
    if "format" in data:
        path: JsonPath = ("format",)
        if data["format"] != 1 or isinstance(data["format"], bool):
            return None
    elif "results" in data:
        path = ("results",)
    else:
        return None
    message = (
        "this record is in format 1 (results and observations), which is no longer read: "
        f"rewrite it as format 2 with `kvrecords migrate {document.path}`, then check its runs "
        "against the source"
    )
    return document.problem(SCHEMA, path, message, key=path == ("results",))


def _most_specific(error: Any) -> Any:
    """For oneOf/anyOf failures, the error from the branch the value was meant for.

    jsonschema's own pick often lands on a branch of another type (``93.5 is not of type
    'null'`` for a hit rate of 93.5). A branch whose type, constant or enum the value itself
    does not match was not meant for it; among the others, the closest wins: a branch whose
    discriminating constant (a layer group's ``kind``) does not match comes last, then one whose
    keys the mapping does not have. When no branch takes the value's type, the error names every
    type and value the field takes.
    """
    from jsonschema.exceptions import best_match

    while error.context:
        branches: dict[Any, list[Any]] = {}
        for sub in error.context:
            branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
            branches.setdefault(branch, []).append(sub)
        depth = len(error.absolute_path)
        meant = [subs for subs in branches.values() if not any(_misfit(s, depth) for s in subs)]
        if not meant:
            return _no_branch(error)
        ranks = [_distance(subs, depth) for subs in meant]
        closest = [subs for subs, rank in zip(meant, ranks, strict=True) if rank == min(ranks)]
        error = best_match([sub for subs in closest for sub in subs])
    return error


def _distance(errors: list[Any], depth: int) -> tuple[int, int, int]:
    """How far a branch is from the value: a discriminating constant that does not match, then
    keys that do not fit (missing or unknown), then the number of errors."""
    wrong_kind = sum(_wrong_kind(e, depth) for e in errors)
    keys = sum(
        e.validator in ("required", "additionalProperties") and len(e.absolute_path) == depth
        for e in errors
    )
    return (wrong_kind, keys, len(errors))


_SHAPE_VALIDATORS = ("type", "const", "enum")


def _misfit(sub: Any, depth: int) -> bool:
    """The value itself is of another type (or constant) than this branch takes."""
    return sub.validator in _SHAPE_VALIDATORS and len(sub.absolute_path) == depth


def _wrong_kind(sub: Any, depth: int) -> bool:
    """A key of the mapping holds another constant than this branch takes (``kind: mla``)."""
    return sub.validator in ("const", "enum") and len(sub.absolute_path) == depth + 1


class _NoBranch(NamedTuple):
    """An error for a value that fits no branch's type, shaped like jsonschema's errors."""

    absolute_path: Any
    message: str
    instance: Any
    schema: Any
    validator_value: Any
    validator: str = "type"


_TYPE_ORDER = ("integer", "number", "string", "boolean", "object", "array", "null")


def _no_branch(error: Any) -> _NoBranch:
    types: list[str] = []
    values: list[str] = []
    for sub in error.context:
        if not _misfit(sub, len(error.absolute_path)):
            continue
        if sub.validator == "type":
            wanted = sub.validator_value
            types += [wanted] if isinstance(wanted, str) else list(wanted)
        elif sub.validator == "const":
            values.append(repr(sub.validator_value))
        else:
            values += [repr(v) for v in sub.validator_value]
    types = sorted(set(types), key=lambda t: _TYPE_ORDER.index(t) if t in _TYPE_ORDER else 99)
    values = list(dict.fromkeys(values))
    parts = [values[0] if len(values) == 1 else f"one of {', '.join(values)}"] if values else []
    if types:
        parts.append(f"of type {', '.join(repr(t) for t in types)}")
    message = f"{error.instance!r} is not {' or '.join(parts)}"
    return _NoBranch(error.absolute_path, message, error.instance, error.schema, types)


def _problem(document: Document, error: Any) -> Problem:
    path: JsonPath = tuple(error.absolute_path)
    field = dotted(path) or "the top level"
    message = f"{field}: {_in_yaml_words(error.message, error.instance)}"
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
    explained = _explained(document, path, error)
    if explained:
        message = f"{field}: {explained}"
    else:
        hint = _hint(error)
        if hint:
            message += f" ({hint})"
    return document.problem(SCHEMA, path, message, key=on_key)


def _in_yaml_words(message: str, instance: Any) -> str:
    """jsonschema's message with the value as the file spells it: ``null``, ``true`` and
    ``false``, not Python's ``None``, ``True`` and ``False``."""
    written = repr(instance)
    if not message.startswith(written):
        return message
    if instance is None or isinstance(instance, bool):
        shown = "null" if instance is None else str(instance).lower()
    elif isinstance(instance, (dict, list)):
        shown = json.dumps(instance, ensure_ascii=False)
    else:
        return message
    return shown + message[len(written) :]


# A number as a YAML reader reads it when unquoted; hexadecimal, octal, binary, ``1_000`` and
# ``12:30`` are numbers to some readers and not others.
_DECIMAL = re.compile(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")
_OTHER_NOTATION = re.compile(r"[-+]?(0[xob][0-9a-fA-F_]+|[0-9][0-9_]*_[0-9][0-9_]*)")


def _explained(document: Document, path: JsonPath, error: Any) -> str:
    """The whole message for slips that have one fix: what the value is and what to write."""
    instance = error.instance
    if is_placeholder(instance):
        shown = instance if len(instance) <= 60 else instance[:57].rstrip() + "..."
        return f"{shown!r} is still a placeholder: write the value it asks for"
    wanted = error.validator_value if error.validator == "type" else None
    wanted_types = [wanted] if isinstance(wanted, str) else list(wanted or [])
    # A quoted number where a number (or a byte figure with its unit) is meant.
    numeric = {"number", "integer"} & set(wanted_types) or error.validator == "pattern"
    if error.validator == "pattern" and error.validator_value == "\\S":
        what = str(path[-1]).replace("_", " ") if path else "text"
        return f"{instance!r} is blank: write the {what}"
    if error.validator == "pattern" and isinstance(instance, str):
        dtype = _dtype_name(instance, error.validator_value)
        if dtype:
            return dtype
    if isinstance(instance, str) and numeric:
        text = instance.strip()
        if not text.isascii():
            from kvrecords.kv.lookalikes import look_alikes

            found = look_alikes(text)
            if found:
                return f"{instance!r}: {found[0].describe()}"
        if _DECIMAL.fullmatch(text):
            return f"{instance!r} is a string: write the number {text.lstrip('+')} (no quotes)"
        if _OTHER_NOTATION.fullmatch(text):
            return (
                f"{instance!r} is a string: write the number in decimal digits only (no "
                "quotes, underscores, 0x, 0o or 0b), so that every reader reads the same number"
            )
    if (
        error.validator == "maximum"
        and error.validator_value == 1
        and not isinstance(instance, bool)
        and isinstance(instance, (int, float))
        and 1 < instance <= 100
    ):
        return _percent_for_fraction(document, path, instance)
    return ""


def _dtype_name(instance: str, pattern: str) -> str:
    """For a KV dtype the schema does not name: the schema's name for it, or the nearest, and
    every name the pattern lists. '' when the pattern is not the KV dtype's."""
    # the KV dtype's pattern names types: it takes bf16 and q8_0 and refuses a plain word (a
    # file name's or an id's pattern takes all three)
    if not (re.search(pattern, "bf16") and re.search(pattern, "q8_0")) or re.search(
        pattern, "xyzzy"
    ):
        return ""
    names = list(dict.fromkeys(re.findall(r"(?<=[(|])([a-z][a-z0-9_]*)(?=[|)])", pattern)))
    listed = f"the names: {', '.join(names)}; quantized forms <type>-g<G> and <type>-per-token-head"
    if instance.strip().lower() == "auto":
        return (
            f"'auto' is the engine's choice, not a dtype: write the dtype it resolves to (with "
            f"vLLM and SGLang, the model's dtype) and whether the source states it ({listed})"
        )
    spelled = dtype_spelling(instance)
    if re.search(pattern, spelled):
        return f"{instance!r} is written {spelled} here"
    close = closest(spelled, names, n=2)
    nearest = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"{instance!r} is not a KV dtype{nearest}; {listed}"


def _percent_for_fraction(document: Document, path: JsonPath, instance: float) -> str:
    """``72.5 is above 1: rates are fractions, write 0.725`` (a drafting acceptance rate); other
    fractions may be above 1 by mistake rather than as a percentage (``confidence: 1.5``), so
    the hint hedges."""
    from decimal import Decimal, InvalidOperation

    written = document.written.get(path, repr(instance))
    try:
        fraction = format(Decimal(written).scaleb(-2), "f")
    except InvalidOperation:
        fraction = repr(instance / 100)
    names = [part for part in path if isinstance(part, str) and part not in ("about", "min", "max")]
    name = names[-1] if names else ""
    if name.endswith("rate"):
        return f"{written} is above 1: rates are fractions, write {fraction}"
    return (
        f"{written} is greater than the maximum of 1 (a fraction from 0 to 1; if {written} is a "
        f"percentage, write {fraction})"
    )


# How sources name the values of the schema's closed vocabularies, by the written name in
# lower case with everything but letters and digits dropped (EAGLE-3 is eagle3 already).
ENUM_SPELLINGS = {
    "multitokenprediction": "mtp",
    "nextn": "mtp",
    "promptlookup": "ngram",
    "promptlookupdecoding": "ngram",
    "eagle1": "eagle",
    "eagle2": "eagle",
    "draft": "draft_model",
}


def _enum_value(instance: str, values: list[Any]) -> str:
    """``write eagle3`` for ``EAGLE-3``, ``did you mean ...`` for a near miss, or ''."""
    names = [v for v in values if isinstance(v, str)]
    key = re.sub(r"[^a-z0-9]", "", instance.lower())
    keys = {re.sub(r"[^a-z0-9]", "", name.lower()): name for name in names}
    spelled = keys.get(key) or ENUM_SPELLINGS.get(key) or dtype_spelling(instance)
    if spelled in names:
        return f"write {spelled}"
    close = closest(key, keys, n=2)
    return f"did you mean {' or '.join(keys[c] for c in close)}?" if close else ""


def _hint(error: Any) -> str:
    """A nudge for the common slips."""
    instance = error.instance
    if isinstance(instance, str) and error.validator == "enum":
        return _enum_value(instance, error.validator_value)
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
        pattern = error.schema.get("pattern") if error.validator == "pattern" else None
        if isinstance(pattern, str) and instance.endswith("X"):
            lowered_x = instance[:-1] + "x"
            if re.search(pattern, lowered_x):
                return f"a ratio is written with a lower-case x: {lowered_x}"
    if isinstance(instance, bool) and error.validator == "type":
        return "a boolean here; write a number, or null with the reason in prose"
    return ""
