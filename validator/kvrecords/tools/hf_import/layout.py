"""Layers of the same kind and shape as one group wherever they sit, the group's ``where``
saying which layer indices it holds, and the architecture phrase of the groups."""

from __future__ import annotations

import copy
import json
from typing import Any

from kvrecords.tools.hf_import.attention import LayerSpec


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def _run_text(run: tuple[int, int]) -> str:
    first, last = run
    if first == last:
        return str(first)
    if last == first + 1:
        return f"{first}, {last}"
    return f"{first}-{last}"


def _runs_text(runs: list[tuple[int, int]], abbreviate: bool) -> str:
    if abbreviate and len(runs) > 6:
        runs_shown = [*map(_run_text, runs[:3]), "...", *map(_run_text, runs[-2:])]
        return ", ".join(runs_shown)
    return ", ".join(map(_run_text, runs))


def _progression_text(indices: list[int]) -> str:
    if len(indices) <= 6:
        return ", ".join(map(str, indices))
    return f"{indices[0]}, {indices[1]}, {indices[2]}, ..., {indices[-1]}"


def describe_layers(indices: list[int], num_layers: int) -> str:
    """Which layers, compactly: a range, a residue class ``i % k == r`` (or its complement),
    else the explicit list."""
    if indices == list(range(num_layers)):
        return "layer 0" if num_layers == 1 else f"all layers 0-{num_layers - 1}"
    runs = _runs(indices)
    if len(runs) == 1:
        first, last = runs[0]
        return f"layer {first}" if first == last else f"layers {first}-{last}"
    chosen = set(indices)
    for period in range(2, num_layers):
        for rest in range(period):
            if chosen == set(range(rest, num_layers, period)):
                return f"i % {period} == {rest}: {_progression_text(indices)}"
        for rest in range(period):
            if chosen == {i for i in range(num_layers) if i % period != rest}:
                return f"i % {period} != {rest}: {_runs_text(runs, abbreviate=True)}"
    return _runs_text(runs, abbreviate=False)


def _group(spec: LayerSpec, indices: list[int], where: str) -> dict[str, Any]:
    group: dict[str, Any] = {"kind": spec["kind"], "layers": len(indices), "where": where}
    group.update((key, value) for key, value in spec.items() if key != "kind")
    return group


def layer_groups(layers: list[LayerSpec], labels: str | None = None) -> list[LayerSpec]:
    """One group per distinct layer shape, in order of first appearance."""
    by_shape: dict[str, tuple[dict[str, Any], list[int]]] = {}
    for index, spec in enumerate(layers):
        key = json.dumps(spec, sort_keys=True)
        by_shape.setdefault(key, (spec, []))[1].append(index)
    groups = []
    for spec, indices in by_shape.values():
        if labels is not None:
            # A pattern's layers are listed one by one, as the pattern gives them.
            chars = sorted({labels[i] for i in indices}, key=labels.index)
            where = f"pattern {' or '.join(repr(c) for c in chars)}: {', '.join(map(str, indices))}"
        else:
            where = describe_layers(indices, len(layers))
        # Layers share their shape dicts; each group gets its own copy.
        groups.append(_group(copy.deepcopy(spec), indices, where))
    return groups


def _attention_label(group: dict[str, Any], heads: int | None) -> str:
    kv_heads = group["kv_heads"]
    if heads is None:
        return "attention"
    if kv_heads == heads:
        return "MHA"
    if kv_heads == 1:
        return "MQA"
    return "GQA"


def _leaf_label(group: dict[str, Any], heads: int | None) -> str:
    kind = group["kind"]
    if kind == "attention":
        return f"{_attention_label(group, heads)} attention"
    if kind == "sliding_window":
        return f"{_attention_label(group, heads)} sliding window ({group['window']})"
    labels = {
        "mla": "MLA",
        "linear_attention": "Gated DeltaNet",
        "mamba1": "Mamba-1",
        "mamba2": "Mamba-2",
        "none": "MLP-only",
    }
    return labels.get(str(kind), str(kind))


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def architecture_phrase(groups: list[LayerSpec], heads: int | None, moe: bool) -> str:
    """The model file's ``architecture``: attention labels, layer counts, hybrids, MoE."""
    suffix = ", MoE" if moe else ""
    kinds = {group["kind"] for group in groups}
    if len(groups) == 1:
        group = groups[0]
        kind = group["kind"]
        if kind == "attention":
            return f"{_attention_label(group, heads)}, all layers full attention{suffix}"
        if kind == "sliding_window":
            return f"{_attention_label(group, heads)}, sliding window ({group['window']}) on all layers{suffix}"
        if kind == "mla":
            return f"MLA (multi-head latent attention) on every layer{suffix}"
        if kind == "parallel":
            mixers = [_leaf_label(mixer, heads) for mixer in group["mixers"]]
            return f"parallel hybrid: {_join(mixers)} side by side in every layer{suffix}"
    if kinds <= {"attention", "sliding_window"}:
        label = _attention_label(groups[0], heads)
        parts = [
            f"{g['layers']} sliding window ({g['window']})"
            if g["kind"] == "sliding_window"
            else f"{g['layers']} full attention"
            for g in groups
        ]
        return f"{label}, {_join(parts)} layers{suffix}"
    parts = [f"{g['layers']} {_leaf_label(g, heads)}" for g in groups]
    return f"hybrid: {_join(parts)} layers{suffix}"
