"""What a record points at and leaves open: its model link, nulls with reasons, placeholders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kvrecords.checks.context import ModelLookup, RecordContext, value_at
from kvrecords.dataset.document import Document, JsonPath, dotted, value_or_none
from kvrecords.dataset.layout import ID_PATTERN, model_file
from kvrecords.dataset.schemas import is_placeholder, may_hold_placeholder
from kvrecords.problems import Problem, Rule, closest

MODEL_LINK = Rule(
    "KV203",
    "model-link",
    "`model` (the record's, and a run's own) names a file models/<model>.yaml that exists: an "
    "id, never a path.",
    "Every derived number is recomputed from that file; a missing or renamed model leaves "
    "the record unchecked.",
    "model: qwen3-8-27b",
    "model: ../../etc/passwd\n# KV203 model must be an id ...",
)

MODEL_BROKEN = Rule(
    "KV204",
    "model-broken",
    "The linked model file passes its own checks.",
    "Arithmetic from a broken geometry would be wrong; the record's arithmetic is skipped "
    "and the model's own problems are reported at the model file.",
    "model: llama-3.1-8b   (a valid model file)",
    "model: broken-model   (its groups do not add up)\n# KV204 models/broken-model.yaml has problems",
)

NULL_REASON = Rule(
    "KV205",
    "null-reason",
    "Every null has its reason: records list it under not_stated, models under unknown, once; nothing is listed that is not null.",
    "A null without a reason cannot be told from a forgotten value, and a reader needs to "
    "know what the source did not say.",
    "methodology:\n  engine: {name: vllm, version: null}\nnot_stated:\n  - field: methodology.engine.version\n    reason: The post does not name the version.",
    "methodology:\n  engine: {name: vllm, version: null}\n# KV205 methodology.engine.version is null; list it under not_stated with the reason",
)

PLACEHOLDER = Rule(
    "KV206",
    "placeholder",
    "No text is left as a TODO placeholder from kvrecords new (nor todo, TBD or FIXME, in any case).",
    "A scaffold marks every field the contributor must fill or explain; a TODO that reaches "
    "the dataset is a figure or a reason nobody checked.",
    "reason: The post does not publish decode tokens/s.",
    "reason: 'TODO: fill from the source or give the reason it is not stated'\n# KV206 not_stated[3].reason is still a placeholder",
)


ENGINE_NAME = Rule(
    "KV209",
    "engine-name",
    "An engine the dataset knows is named one way: llama.cpp, tensorrt-llm, "
    "text-generation-inference, vllm, sglang (not llamacpp, trtllm or tgi), in the record's "
    "engine and in a run's.",
    "The coverage tables, the site and plan's evidence group records by engine name; two "
    "spellings of one engine split its evidence in two and hide it from a reader filtering by "
    "the other.",
    "engine: {name: llama.cpp, version: b4407}",
    "engine: {name: llamacpp, version: b4407}\n# KV209 methodology.engine.name: write "
    "'llama.cpp', the name the dataset uses for this engine",
)

# Other spellings of the engines the dataset names, to the one it uses.
ENGINE_SPELLINGS = {
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "trtllm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "tensorrt": "tensorrt-llm",
    "tgi": "text-generation-inference",
    "v-llm": "vllm",
    "sg-lang": "sglang",
}


def engine_name_problems(document: Document) -> list[Problem]:
    """KV209: the record's engine and each run's are named as the dataset names them."""
    places: list[JsonPath] = [("methodology", "engine", "name")]
    places += [
        ("runs", index, "engine", "name")
        for index, run in enumerate(document.data.get("runs", []))
        if isinstance(run.get("engine"), dict)
    ]
    problems = []
    for place in places:
        name = value_or_none(document.data, *place)
        if isinstance(name, str) and name in ENGINE_SPELLINGS:
            wanted = ENGINE_SPELLINGS[name]
            message = (
                f"{dotted(place)}: write {wanted!r}, the name the dataset uses for this engine"
            )
            problems.append(document.problem(ENGINE_NAME, place, message))
    return problems


def model_link_problem(
    root: Path, document: Document, model_exists: bool, path: JsonPath = ("model",)
) -> Problem | None:
    """KV203: the ``model`` at ``path`` is an id naming an existing models/<id>.yaml, never a
    path."""
    model_id: str = value_at(document.data, path)
    if not ID_PATTERN.fullmatch(model_id):
        message = (
            f"model {model_id!r} must be a model id naming models/<id>.yaml "
            "(lowercase letters, digits, dots, hyphens), never a path"
        )
        return document.problem(MODEL_LINK, path, message)
    if model_exists:
        return None
    display = f"models/{model_id}.yaml"
    reason = (
        "is a dangling symlink" if model_file(root, model_id).is_symlink() else "does not exist"
    )
    return document.problem(MODEL_LINK, path, f"model {model_id!r}: {display} {reason}")


def run_model_problems(
    root: Path, document: Document, model_exists: Callable[[str], bool]
) -> list[Problem]:
    """KV203 for each run that names a model of its own."""
    problems = []
    for index, run in enumerate(document.data.get("runs", [])):
        if "model" in run:
            exists = bool(ID_PATTERN.fullmatch(run["model"])) and model_exists(run["model"])
            problem = model_link_problem(root, document, exists, ("runs", index, "model"))
            if problem is not None:
                problems.append(problem)
    return problems


def broken_model_problem(document: Document, model_display: str) -> Problem:
    """KV204: the linked model has problems of its own, so the arithmetic is not checked."""
    message = f"{model_display} has problems (reported there); arithmetic not checked"
    return document.problem(MODEL_BROKEN, ("model",), message)


def placeholder_problems(document: Document) -> list[Problem]:
    """KV206: no TODO placeholder from a scaffold is left in the record."""
    if not may_hold_placeholder(document.text):
        return []
    return [
        document.problem(
            PLACEHOLDER, path, f"{dotted(path)} is still a placeholder: {_opening(value)!r}"
        )
        for path, value in document.leaves.items()
        if is_placeholder(value)
    ]


def _opening(text: str, width: int = 60) -> str:
    """The text's first words, cut at a word's end: ``TODO: who published the...``."""
    import textwrap  # only for a record that still holds a placeholder

    return textwrap.shorten(text, width, placeholder="...")


def null_reason_problems(document: Document, list_key: str) -> list[Problem]:
    """KV205: every null is listed with a reason under ``list_key``, and only nulls are listed."""
    nulls = {
        dotted(path): path
        for path, value in document.leaves.items()
        if value is None and path and path[0] != list_key
    }
    listed: dict[str, int] = {}
    problems = []
    entries = document.data.get(list_key, []) if isinstance(document.data, dict) else []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict) or not isinstance(entry.get("field"), str):
            continue  # the schema reports it (this check also runs on a record it refuses)
        first = listed.setdefault(entry["field"], index)
        if first != index:
            message = f"{list_key} lists {entry['field']} again (first at {list_key}[{first}])"
            problems.append(document.problem(NULL_REASON, (list_key, index, "field"), message))
    for name, path in sorted(nulls.items()):
        if name not in listed:
            message = f"{name} is null; list it under {list_key} with the reason"
            problems.append(document.problem(NULL_REASON, path, message))
    fields: set[str] | None = None  # every field the document has, read only when needed
    for name, index in sorted(listed.items()):
        if name not in nulls:
            fields = fields if fields is not None else _fields(document, list_key)
            if name in fields:
                message = f"{list_key} lists {name}, which is not null"
            else:
                unlisted = [null for null in nulls if null not in listed]
                close = closest(name, unlisted, n=1) or closest(name, fields, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                message = f"{list_key} lists {name}, but the file has no such field{hint}"
            problems.append(document.problem(NULL_REASON, (list_key, index, "field"), message))
    return problems


def _fields(document: Document, list_key: str) -> set[str]:
    """The dotted name of every value in the document and of every mapping or list holding one
    (``methodology.engine`` as well as ``methodology.engine.version``), ``list_key`` aside."""
    fields: set[str] = set()
    for path in document.leaves:
        if path and path[0] != list_key:
            fields.update(dotted(path[:end]) for end in range(1, len(path) + 1))
    return fields


GEOMETRY_OF = Rule(
    "KV208",
    "geometry-sibling",
    "`geometry_of` names the model whose published geometry the record's model shares (a "
    "sibling release): its file exists, passes its own checks and agrees with the record's "
    "model on every cache dimension.",
    "A source often runs a release whose config was not read (an Instruct or a later point "
    "release) on the geometry of a sibling; said as a field, the claim is checked and shown, "
    "instead of resting on prose. A dimension one file leaves unknown is not compared (it may "
    "agree); every dimension both files state must be equal.",
    "model: llama-3-70b\ngeometry_of:\n  model: llama-3.1-70b\n  reason: The same 80 layers, 8 kv heads and head_dim 128 in Meta's sku_list.",
    "model: llama-3-70b\ngeometry_of: {model: llama-3.2-3b, reason: ...}\n# KV208 geometry_of.model: "
    "models/llama-3-70b and models/llama-3.2-3b differ in num_layers (80 vs 28)",
)


def check_geometry_of(record: RecordContext, models: ModelLookup | None) -> list[Problem]:
    """KV208: the sibling ``geometry_of`` names exists, is sound and has the record's geometry."""
    sibling = record.data.get("geometry_of")
    if sibling is None or models is None:
        return []
    path: JsonPath = ("geometry_of", "model")
    sibling_id = sibling["model"]
    display = f"models/{sibling_id}"
    if sibling_id == record.data["model"]:
        message = f"geometry_of names the record's own model {sibling_id!r}; name the sibling"
        return [record.problem(GEOMETRY_OF, path, message)]
    other = models(sibling_id)
    if other is None:
        message = f"geometry_of.model {sibling_id!r}: {display}.yaml does not exist or has problems"
        return [record.problem(GEOMETRY_OF, path, message)]
    difference = _difference(record.model.num_layers, other.num_layers, "num_layers")
    difference = difference or _difference(record.model.groups, other.groups, "layer_groups")
    if difference is None:
        return []
    message = f"geometry_of.model: {record.model_display} and {display} differ in {difference}"
    return [record.problem(GEOMETRY_OF, path, message)]


def _difference(mine: object, theirs: object, where: str) -> str | None:
    """The first cache dimension that differs (``layer_groups[0].kv_heads (8 vs 4)``), or
    None; a dimension unknown (None) on either side is not compared."""
    if mine is None or theirs is None:
        return None
    if type(mine) is not type(theirs):
        return f"{where} ({_kind(mine)} vs {_kind(theirs)})"
    if isinstance(mine, tuple) and hasattr(mine, "_fields"):
        for field in mine._fields:
            found = _difference(getattr(mine, field), getattr(theirs, field), f"{where}.{field}")
            if found:
                return found
        return None
    if isinstance(mine, tuple) and isinstance(theirs, tuple):
        if len(mine) != len(theirs):
            return f"{where} ({len(mine)} vs {len(theirs)} groups)"
        for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            found = _difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if mine == theirs else f"{where} ({mine} vs {theirs})"


def _kind(group: object) -> str:
    return str(getattr(group, "kind", type(group).__name__))
