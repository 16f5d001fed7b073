"""KV808: the record's own words name the model it links.

Two models of one geometry (Llama 3 8B and Llama 3.1 8B, a base model and its instruct
release) pass every arithmetic check whichever of them ``model`` names, so a record whose
title says one and whose ``model`` links the other slips through. The title and the run
labels (short texts that say what was measured) are read for the ids of the model files
(``Llama 3.1 8B`` and ``Llama-3.1-8B-Instruct`` name ``llama-3.1-8b``). To stay free of
false alarms it warns only where a text names a known model, does not name the record's own,
and the record links the named model nowhere else (a run's model, a draft model, the
geometry_of sibling) nor names it beside its own in any text (the explanation and notes
included): a comparison's other model is linked, and prose that names both is about both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import JsonPath, value_or_none
from kvrecords.problems import Problem, Rule

MODEL_NAMED = Rule(
    "KV808",
    "model-named",
    "A title or run label that names a model of the dataset names the record's own model too, "
    "or one the record links elsewhere (a run's model, a draft model, geometry_of) or names "
    "beside its own "
    "in its explanation, notes or confidence_reason; otherwise a warning names both.",
    "Models of one geometry pass every arithmetic check whichever the record links; the words "
    "are where a swapped model shows.",
    "model: llama-3.1-8b\ntitle: vLLM prefix caching, Llama 3.1 8B on one H100",
    "model: llama-3.1-8b\ntitle: vLLM prefix caching, Llama 3 8B on one H100\n"
    "# KV808 title names llama-3-8b, not the record's model llama-3.1-8b: is model the one "
    "measured? (a warning)",
)

_SEPARATORS = re.compile(r"[\s_]+")


@functools.lru_cache(maxsize=8)
def _pattern(model_ids: frozenset[str]) -> re.Pattern[str] | None:
    """One expression for every id, the longest first, each a whole name (``-instruct`` may
    follow it; another letter or digit may not)."""
    if not model_ids:
        return None
    alternatives = "|".join(re.escape(i) for i in sorted(model_ids, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9.])(?:{alternatives})(?![a-z0-9])")


def named_ids(text: str, model_ids: frozenset[str]) -> set[str]:
    """The model ids a text names: lower case, spaces and underscores read as hyphens."""
    pattern = _pattern(model_ids)
    if pattern is None:
        return set()
    return set(pattern.findall(_SEPARATORS.sub("-", text.lower())))


def _texts(data: dict[str, Any]) -> Iterator[tuple[JsonPath, str]]:
    """The short texts that say what was measured: the title and each run's label."""
    if isinstance(data.get("title"), str):
        yield ("title",), data["title"]
    for index, run in enumerate(data.get("runs", [])):
        if "model" not in run:  # a run measuring another model names that one
            yield ("runs", index, "label"), run["label"]


def _linked(data: dict[str, Any]) -> set[str]:
    linked = {data["model"]}
    sibling = value_or_none(data, "geometry_of", "model")
    if isinstance(sibling, str):  # the model whose published geometry the record's shares
        linked.add(sibling)
    drafting = [value_or_none(data, "methodology", "speculative_decoding")]
    for run in data.get("runs", []):
        linked.add(run.get("model", data["model"]))
        drafting.append(run.get("speculative_decoding"))
    linked |= {d["draft_model"] for d in drafting if isinstance(d, dict) and "draft_model" in d}
    return linked


def check_named_models(record: RecordContext) -> Iterator[Problem]:
    """KV808, for the title and each run's label."""
    if not record.model_ids:
        return
    own = record.data["model"]
    linked = _linked(record.data)
    texts: list[tuple[JsonPath, set[str]]] = [
        (path, named_ids(text, record.model_ids)) for path, text in _texts(record.data)
    ]
    suspects = [(path, named - linked) for path, named in texts if own not in named]
    if not any(others for _, others in suspects):
        return
    # a text that names the record's model beside another one acknowledges that other (an
    # explanation of why the base release's geometry stands for an instruct release)
    prose: tuple[JsonPath, ...] = (
        ("kv_bytes_basis", "explanation"),
        ("notes",),
        ("confidence_reason",),
    )
    for place in prose:
        text = value_or_none(record.data, *place)
        if isinstance(text, str):
            texts.append((place, named_ids(text, record.model_ids)))
    acknowledged = set().union(*(named for _, named in texts if own in named))
    for path, others in suspects:
        for other in sorted(others - acknowledged):
            where = ".".join(str(part) for part in path)
            message = (
                f"{where} names {other}, not the record's model {own}: is model the one "
                "measured? (a warning)"
            )
            line, column = record.document.locate(path)
            yield MODEL_NAMED.problem(record.document.path, line, column, message, "warning")
