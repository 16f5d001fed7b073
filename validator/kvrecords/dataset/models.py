"""Model geometry files: from validated YAML data to ``geometry.Model``."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from kvrecords.kv.geometry import (
    Attention,
    GatedDeltaNet,
    IndexerKeys,
    LayerGroup,
    LeafGroup,
    Mamba1,
    Mamba2,
    Model,
    MultiHeadLatent,
    NoCache,
    Parallel,
    ParameterCount,
    SharedCache,
)
from kvrecords.kv.units import exact

_STATE_GROUPS: dict[str, type[GatedDeltaNet] | type[Mamba1] | type[Mamba2]] = {
    "linear_attention": GatedDeltaNet,
    "mamba1": Mamba1,
    "mamba2": Mamba2,
}


def leaf_from_data(data: dict[str, Any], layers: int) -> LeafGroup:
    """One leaf group from its (schema-valid) mapping."""
    kind = data["kind"]
    if kind in ("attention", "sliding_window"):
        return Attention(
            layers,
            data["kv_heads"],
            data["head_dim"],
            data.get("v_head_dim"),
            data.get("window") if kind == "sliding_window" else None,
            indexer_from_data(data.get("indexer")),
        )
    if kind == "mla":
        return MultiHeadLatent(
            layers,
            data["kv_lora_rank"],
            data["qk_rope_head_dim"],
            indexer=indexer_from_data(data.get("indexer")),
        )
    if kind in _STATE_GROUPS:
        group = _STATE_GROUPS[kind]
        # a state group's fields after `layers` (and before `window`) are the schema's keys
        return group(layers, *(data[field] for field in group._fields[1:-1]))
    if kind == "shared":
        return SharedCache(layers, data["shares_from"])
    if kind == "none":
        return NoCache(layers)
    raise ValueError(f"unknown layer group kind {kind!r}")


def indexer_from_data(data: dict[str, Any] | None) -> IndexerKeys | None:
    """A layer's indexer key cache, or None when the group has none."""
    if data is None:
        return None
    return IndexerKeys(data["head_dim"], data["keys_per_token"], data.get("dtype"))


def group_from_data(data: dict[str, Any]) -> LayerGroup:
    layers = data["layers"]
    if data["kind"] == "parallel":
        return Parallel(layers, tuple(leaf_from_data(mixer, layers) for mixer in data["mixers"]))
    return leaf_from_data(data, layers)


def model_from_data(data: dict[str, Any]) -> Model:
    """A ``Model`` from a model file's data, which must already satisfy the model schema."""
    return Model(
        id=data["id"],
        name=data["name"],
        num_layers=data["num_layers"],
        groups=tuple(group_from_data(group) for group in data["layer_groups"]),
        dtype=data.get("dtype"),
        unknown=tuple(entry["field"] for entry in data.get("unknown", ())),
        parameters=parameters_from_data(data.get("parameters")),
        max_context_tokens=data.get("max_context_tokens"),
        query_heads=data.get("query_heads"),
        hidden_size=data.get("hidden_size"),
        vocab_size=data.get("vocab_size"),
        tie_word_embeddings=data.get("tie_word_embeddings"),
        published_precisions=(
            tuple(entry["precision"] for entry in data["published_precisions"])
            if data.get("published_precisions")
            else None
        ),
    )


def parameters_from_data(data: dict[str, Any] | None) -> ParameterCount | None:
    """The model's parameter counts, exact as written (5.1 stays 51/10)."""
    if data is None:
        return None

    def billions(value: float | int | None) -> Fraction | None:
        return None if value is None else exact(value)

    return ParameterCount(
        billions(data.get("total_billions")),
        billions(data.get("active_billions")),
        data.get("stated_as", ""),
        bool(data.get("from_name", False)),
    )


def load_model_file(path: Path) -> Model:
    """Read, schema-check and convert one model file; ``ValueError`` lists its problems.

    For readers using the library from Python; the validator reports the same problems located.
    The schema is the one of the dataset the file belongs to.
    """
    from kvrecords.dataset.document import Document, read_document
    from kvrecords.dataset.layout import SCHEMA_DIR, find_root
    from kvrecords.dataset.schemas import schema_problems

    root = find_root(path.parent)
    if root is None:
        raise ValueError(f"{path} is not inside a dataset (no schema/ and models/ above it)")
    document = read_document(path, str(path))
    if not isinstance(document, Document):
        raise ValueError("; ".join(p.message for p in document))
    problems = schema_problems(document, "model", root / SCHEMA_DIR)
    if problems:
        raise ValueError("; ".join(f"{p.line}:{p.column} {p.message}" for p in problems))
    return model_from_data(document.data)
