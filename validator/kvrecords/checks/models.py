"""Model files (models/<id>.yaml): judged once ``dataset.document`` has read them, and turned
into geometry."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.files import file_problems
from kvrecords.checks.references import null_reason_problems
from kvrecords.dataset.document import Document, JsonPath
from kvrecords.dataset.layout import DatasetFile, IdClaims
from kvrecords.dataset.models import model_from_data
from kvrecords.kv.geometry import Model
from kvrecords.kv.units import exact, format_exact
from kvrecords.kv.weights import weight_format
from kvrecords.problems import Problem, Rule

LAYER_COUNT = Rule(
    "KV601",
    "layer-count",
    "A model's layer groups add up to num_layers.",
    "A missing or double-counted group changes every byte computed from the model.",
    "num_layers: 64\nlayer_groups: [{kind: attention, layers: 16, ...}, {kind: linear_attention, layers: 48, ...}]",
    "num_layers: 64\nlayer_groups: [{kind: attention, layers: 16, ...}]\n# KV601 layer groups add up to 16; num_layers is 64",
)


GEOMETRY = Rule(
    "KV602",
    "geometry",
    "A model's attention agrees with itself: kv heads <= query_heads and divide them; where "
    "head_dim_from_hidden is true, head_dim = hidden_size / query_heads; a window is at most "
    "max_context_tokens.",
    "A typo in one dimension changes every byte and FLOP computed from the model; the config's "
    "own relations catch it. head_dim is checked against hidden_size / query_heads only where "
    "the architecture derives it so (the config gives no head_dim: Llama, Mistral, Qwen2): "
    "Qwen3, Gemma and gpt-oss set it apart.",
    "hidden_size: 4096\nquery_heads: 32\nhead_dim_from_hidden: true\nlayer_groups:\n  - {kind: "
    "attention, layers: 32, kv_heads: 8, head_dim: 128}",
    "hidden_size: 4096\nquery_heads: 32\nhead_dim_from_hidden: true\nlayer_groups:\n  - {kind: "
    "attention, layers: 32, kv_heads: 8, head_dim: 256}\n# KV602 head_dim is 256; "
    "head_dim_from_hidden says it is hidden_size / query_heads = 4,096 / 32 = 128",
)

PARAMETERS = Rule(
    "KV603",
    "parameters",
    "A model's active parameters are at most its total, parameters.stated_as gives the "
    "counts the file states (1T = 1,000B), and each published precision is a name of the "
    "weights vocabulary.",
    "The hardware checks divide by these counts; stated_as is the source's wording, so a count "
    "that differs from it was copied wrong, and an active count above the total is impossible.",
    "parameters: {total_billions: 80, active_billions: 3, stated_as: 80B total / 3B active}",
    "parameters: {total_billions: 80, active_billions: 30, stated_as: 80B total / 3B active}\n"
    "# KV603 active_billions is 30; stated_as '80B total / 3B active' gives 80B, 3B",
)


class ModelState(NamedTuple):
    """A model file once checked: its geometry when it is sound, and its own problems."""

    file: DatasetFile
    model: Model | None
    problems: list[Problem]


def judge_model_file(
    root: Path, claims: IdClaims, document: Document, dataset_file: DatasetFile
) -> ModelState:
    """A model file that was read: its modeline, schema and id, then its geometry."""
    own = file_problems(root, document, dataset_file, claims)
    if not own.schema_holds:
        return ModelState(dataset_file, None, own.problems)
    problems = own.problems + null_reason_problems(document, "unknown")
    problems += layer_count_problems(document)
    problems += list(geometry_problems(document))
    problems += list(parameter_problems(document))
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


def _attention_groups(data: dict[str, Any]) -> Iterator[tuple[JsonPath, dict[str, Any]]]:
    """Each attention or sliding-window group (a parallel group's mixers too) with its path."""
    for index, group in enumerate(data["layer_groups"]):
        mixers = group.get("mixers") if group["kind"] == "parallel" else [group]
        for position, mixer in enumerate(mixers or []):
            path: JsonPath = ("layer_groups", index)
            if group["kind"] == "parallel":
                path = (*path, "mixers", position)
            if mixer["kind"] in ("attention", "sliding_window"):
                yield path, mixer


def geometry_problems(document: Document) -> Iterator[Problem]:
    """KV602: heads, head_dim and windows against the model's own figures."""
    data = document.data
    heads, hidden = data.get("query_heads"), data.get("hidden_size")
    derived = data.get("head_dim_from_hidden")
    if derived and (heads is None or hidden is None):
        message = "head_dim_from_hidden is true, but hidden_size or query_heads is not stated"
        yield document.problem(GEOMETRY, ("head_dim_from_hidden",), message)
        derived = False
    maximum = data.get("max_context_tokens")
    for path, group in _attention_groups(data):
        kv_heads, head_dim, window = group["kv_heads"], group["head_dim"], group.get("window")
        if heads is not None and kv_heads is not None:
            if kv_heads > heads:
                message = f"kv_heads is {kv_heads}; a layer has only {heads} query heads"
                yield document.problem(GEOMETRY, (*path, "kv_heads"), message)
            elif heads % kv_heads:
                message = (
                    f"kv_heads is {kv_heads}, which does not divide query_heads {heads}: each kv "
                    "head serves a whole group of query heads"
                )
                yield document.problem(GEOMETRY, (*path, "kv_heads"), message)
        if derived and head_dim is not None and head_dim * heads != hidden:
            message = (
                f"head_dim is {head_dim}; head_dim_from_hidden says it is hidden_size / "
                f"query_heads = {hidden:,} / {heads} = {format_exact(Fraction(hidden, heads))}"
            )
            yield document.problem(GEOMETRY, (*path, "head_dim"), message)
        if window is not None and maximum is not None and window > maximum:
            message = f"window is {window:,} tokens, above max_context_tokens {maximum:,}"
            yield document.problem(GEOMETRY, (*path, "window"), message)


_COUNT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([BT])(?![a-z])")


def parameter_problems(document: Document) -> Iterator[Problem]:
    """KV603: active <= total, stated_as gives the counts, published precisions are known."""
    yield from _published_precision_problems(document)
    parameters = document.data.get("parameters")
    if parameters is None:
        return
    total, active = parameters["total_billions"], parameters["active_billions"]
    if total is not None and active is not None and exact(active) > exact(total):
        message = f"active_billions is {active}, above total_billions {total}"
        yield document.problem(PARAMETERS, ("parameters", "active_billions"), message)
    stated = parameters["stated_as"]
    given = [
        exact(number) * (1000 if unit == "T" else 1) for number, unit in _COUNT.findall(stated)
    ]
    shown = ", ".join(f"{format_exact(value)}B" for value in given) or "no count"
    for key, value in (("total_billions", total), ("active_billions", active)):
        if value is not None and exact(value) not in given:
            message = f"{key} is {value}; stated_as {stated!r} gives {shown}"
            yield document.problem(PARAMETERS, ("parameters", key), message)


def _published_precision_problems(document: Document) -> Iterator[Problem]:
    """KV603: the precisions the hardware checks bound weights by are ones they can read."""
    for index, entry in enumerate(document.data.get("published_precisions") or ()):
        if weight_format(entry["precision"]) is None:
            message = (
                f"published precision {entry['precision']!r} is not in the weights vocabulary "
                "(bf16, fp16, fp8, int8, int4, nvfp4, mxfp4, GGUF types ...)"
            )
            yield document.problem(
                PARAMETERS, ("published_precisions", index, "precision"), message
            )
