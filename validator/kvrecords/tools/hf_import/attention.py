"""Attention layers: their shape (kv heads, head_dim) and their kinds from ``layer_types``."""

from __future__ import annotations

from typing import Any

from kvrecords.tools.hf_import.reader import BY_HAND, ConfigError, ConfigReader

# Families whose transformers code takes head_dim = hidden_size // num_attention_heads when
# the config gives none.
DERIVES_HEAD_DIM = frozenset(
    {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "phi3", "jamba", "falcon_h1", "olmo3"}
)
# Families whose transformers config sets num_key_value_heads = num_attention_heads when the
# config gives none (their class default is None).
KV_HEADS_DEFAULT_TO_HEADS = frozenset({"llama", "phi3", "olmo3"})

LayerSpec = dict[str, Any]


def attention_shape(
    reader: ConfigReader, head_dim_fields: tuple[str, ...] = ("head_dim",)
) -> dict[str, int]:
    """kv_heads and head_dim of the config's attention layers, by the family's rules."""
    return {"kv_heads": _kv_heads(reader), "head_dim": _head_dim(reader, head_dim_fields)}


def _kv_heads(reader: ConfigReader) -> int:
    family = reader.model_type
    if reader.has("num_key_value_heads"):
        return reader.required("num_key_value_heads")
    if family not in KV_HEADS_DEFAULT_TO_HEADS:
        raise reader.missing("num_key_value_heads", _no_default(reader, "num_attention_heads"))
    heads = reader.optional("num_attention_heads")
    if heads is None:
        raise reader.missing("num_key_value_heads", "nor num_attention_heads to default it to")
    reader.note(
        f"num_key_value_heads is not in the config: MHA assumed, kv heads = "
        f"num_attention_heads = {heads} (as transformers does for {family})."
    )
    return heads


def _head_dim(reader: ConfigReader, fields: tuple[str, ...]) -> int:
    family = reader.model_type
    heads = reader.optional("num_attention_heads")
    given = [name for name in fields if reader.has(name)]
    if given:
        head_dim = reader.required(given[0])
        if heads is not None and reader.has("hidden_size"):
            hidden = reader.required("hidden_size")
            if hidden % heads != 0 or hidden // heads != head_dim:
                reader.note(
                    f"Attention {given[0]} {head_dim} is read from the config, not derived as "
                    f"hidden_size / num_attention_heads ({hidden} / {heads})."
                )
        return head_dim
    if family not in DERIVES_HEAD_DIM:
        raise reader.missing(" or ".join(fields), _no_default(reader, "hidden_size / heads"))
    why = "head_dim is not given, so it is hidden_size / num_attention_heads"
    hidden = reader.required("hidden_size", why)
    if heads is None:
        raise reader.missing("num_attention_heads", why)
    if hidden % heads != 0:
        raise ConfigError(
            f"config has no head_dim and hidden_size {hidden} is not divisible by "
            f"num_attention_heads {heads}"
        )
    reader.note(
        f"head_dim is not in the config: derived as hidden_size / num_attention_heads = "
        f"{hidden} / {heads} = {hidden // heads} (as transformers does for {family})."
    )
    return hidden // heads


def _no_default(reader: ConfigReader, what: str) -> str:
    """Why a field the config leaves out cannot be filled in for the reader's family."""
    family = reader.model_type
    if reader.known_family:
        return f"transformers' {family} config default is not {what}; state it"
    return (
        f"model_type {family} is not one import knows, so its default is not assumed; add the "
        f"field to the config if the model's source states it, {BY_HAND}"
    )


def attention(shape: dict[str, int], window: int | None) -> LayerSpec:
    """One attention layer: full, or keeping a window of ``window`` tokens."""
    if window is None:
        return {"kind": "attention", **shape}
    return {"kind": "sliding_window", **shape, "window": window}


def layer_types(reader: ConfigReader, num_layers: int) -> list[str] | None:
    """The config's ``layer_types``, checked against the layer count; None when absent."""
    value = reader.raw("layer_types")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError("config field layer_types must be a list of strings")
    if len(value) != num_layers:
        raise ConfigError(
            f"config field layer_types lists {len(value)} layers; num_hidden_layers is {num_layers}"
        )
    return value


def layers_from_types(
    reader: ConfigReader,
    types: list[str],
    shape: dict[str, int],
    window: int | None,
    linear: LayerSpec | None = None,
) -> list[LayerSpec]:
    """One layer per entry of ``layer_types``: full, sliding-window or linear attention."""
    allowed = ["full_attention", "sliding_attention"] + (["linear_attention"] if linear else [])
    layers: list[LayerSpec] = []
    for index, layer_type in enumerate(types):
        if layer_type == "full_attention":
            layers.append(attention(shape, None))
        elif layer_type == "sliding_attention":
            layers.append(attention(shape, window))
        elif layer_type == "linear_attention" and linear is not None:
            layers.append(linear)
        else:
            raise ConfigError(
                f"config field layer_types[{index}] is {layer_type!r}, which model_type "
                f"{reader.model_type} import does not support (supported: {', '.join(allowed)}); "
                f"{BY_HAND}"
            )
    if window is None and "sliding_attention" in types:
        reader.note(
            "layer_types marks sliding_attention layers but no window applies (sliding_window "
            "is null or disabled), so they are counted as full attention."
        )
    reader.note("Layer kinds are read from layer_types.")
    return layers


def layers_from_sliding_types(
    reader: ConfigReader, types: list[str], shape: dict[str, int]
) -> list[LayerSpec]:
    """Explicit layer_types of full and sliding-window attention; sliding layers need a window."""
    window = reader.optional("sliding_window") if "sliding_attention" in types else None
    if "sliding_attention" in types and window is None:
        raise reader.missing("sliding_window", "layer_types has sliding_attention layers")
    return layers_from_types(reader, types, shape, window)
