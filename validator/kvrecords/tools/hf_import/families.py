"""Each supported ``model_type``'s layers, read the way transformers builds that model.

- Layer kinds come from ``layer_types`` when the config lists them, else from the family's own
  rule (Gemma 2 and gpt-oss alternate sliding/global starting with sliding at layer 0; Gemma 3
  makes every N-th layer global; OLMo 3 makes every fourth layer full attention; Qwen3-Next every
  k-th layer full attention; Jamba puts attention where ``i % attn_layer_period ==
  attn_layer_offset``; Nemotron-H reads ``hybrid_override_pattern``; Falcon-H1 runs attention
  and Mamba-2 in every layer).
- A window applies only where the family applies one: Qwen2/Qwen3 need ``use_sliding_window:
  true`` and then window the layers from ``max_window_layers`` on; Mistral, Mixtral and Phi-3
  window every layer when ``sliding_window`` is set.
- A ``model_type`` import does not know is read through its ``layer_types`` alone (full and
  sliding-window attention), with every dimension stated in the config: no family default is
  assumed for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kvrecords.tools.hf_import.attention import (
    LayerSpec,
    attention,
    attention_shape,
    layer_types,
    layers_from_sliding_types,
    layers_from_types,
)
from kvrecords.tools.hf_import.reader import BY_HAND, ConfigError, ConfigReader


def _dense(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """llama, mistral, mixtral, phi3: the same attention on every layer, maybe windowed."""
    shape = attention_shape(reader)
    window = reader.optional("sliding_window")
    if reader.model_type == "llama" and window is not None:
        reader.note(
            f"sliding_window {window} is set but Llama attention does not use it: no window."
        )
        window = None
    types = layer_types(reader, num_layers)
    if types is not None:
        return layers_from_types(reader, types, shape, window)
    if window is not None:
        reader.note(f"sliding_window {window} applies to every layer ({reader.model_type}).")
    elif reader.model_type != "llama":
        reader.note("sliding_window is null: every layer is full attention.")
    return [attention(shape, window) for _ in range(num_layers)]


def _qwen(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """qwen2, qwen2_moe, qwen3, qwen3_moe: a window only with use_sliding_window true."""
    shape = attention_shape(reader)
    use = reader.raw("use_sliding_window")
    window = reader.optional("sliding_window")
    if use is not True:
        if window is not None:
            reader.note(
                f"sliding_window {window} is in the config but use_sliding_window is "
                f"{json.dumps(use)}: no window applies (as in transformers' Qwen2)."
            )
        else:
            reader.note("use_sliding_window is not true: every layer is full attention.")
        window = None
    elif window is None:
        reader.note("use_sliding_window is true but sliding_window is null: no window applies.")
    types = layer_types(reader, num_layers)
    if types is not None:
        return layers_from_types(reader, types, shape, window)
    if window is None:
        return [attention(shape, None) for _ in range(num_layers)]
    first = reader.non_negative(
        "max_window_layers", "use_sliding_window is true, and it says which layers slide"
    )
    reader.note(
        f"use_sliding_window is true: layers from max_window_layers ({first}) on keep a "
        f"{window}-token window, as in transformers' Qwen2."
    )
    return [attention(shape, window if index >= first else None) for index in range(num_layers)]


def _alternating(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """gemma2, gpt_oss: layer_types, else sliding at even indices and global at odd ones."""
    shape = attention_shape(reader)
    types = layer_types(reader, num_layers)
    if types is not None:
        return layers_from_sliding_types(reader, types, shape)
    window = reader.required(
        "sliding_window", "its layers alternate sliding-window and global attention"
    )
    reader.note(
        f"No layer_types: layers alternate sliding window ({window}) at even indices and full "
        f"attention at odd ones, as transformers builds {reader.model_type}."
    )
    return [attention(shape, window if index % 2 == 0 else None) for index in range(num_layers)]


def _gemma3(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """gemma3 / gemma3_text: layer_types, else every N-th layer (index % N == N - 1) global."""
    shape = attention_shape(reader)
    types = layer_types(reader, num_layers)
    if types is not None:
        return layers_from_sliding_types(reader, types, shape)
    names = ("sliding_window_pattern", "_sliding_window_pattern")
    period = reader.first_of(names, "without layer_types it says which layers are global")
    window = reader.required("sliding_window", "its local layers keep a sliding window")
    reader.note(
        f"No layer_types: with sliding window pattern {period}, layer i is global when "
        f"i % {period} == {period - 1}; the others keep a {window}-token window."
    )
    return [
        attention(shape, None if index % period == period - 1 else window)
        for index in range(num_layers)
    ]


def _olmo3(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """olmo3: layer_types, else sliding window on every layer but each fourth (full attention)."""
    shape = attention_shape(reader)
    types = layer_types(reader, num_layers)
    if types is not None:
        return layers_from_sliding_types(reader, types, shape)
    window = reader.required("sliding_window", "its local layers keep a sliding window")
    reader.note(
        f"No layer_types: layer i is full attention when (i + 1) % 4 == 0 and keeps a "
        f"{window}-token window otherwise, as transformers builds olmo3."
    )
    return [
        attention(shape, None if (index + 1) % 4 == 0 else window) for index in range(num_layers)
    ]


def _qwen3_next(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """qwen3_next: full attention every full_attention_interval-th layer, Gated DeltaNet else."""
    shape = attention_shape(reader)
    linear = {
        "kind": "linear_attention",
        "conv_kernel": reader.required("linear_conv_kernel_dim"),
        "key_heads": reader.required("linear_num_key_heads"),
        "value_heads": reader.required("linear_num_value_heads"),
        "key_head_dim": reader.required("linear_key_head_dim"),
        "value_head_dim": reader.required("linear_value_head_dim"),
    }
    types = layer_types(reader, num_layers)
    if types is not None:
        window = reader.optional("sliding_window") if "sliding_attention" in types else None
        return layers_from_types(reader, types, shape, window, linear)
    interval = reader.required(
        "full_attention_interval", "without layer_types it says which layers are full attention"
    )
    reader.note(
        f"No layer_types: layer i is full attention when (i + 1) % {interval} == 0 "
        f"(full_attention_interval {interval}); the others are Gated DeltaNet linear attention."
    )
    return [
        attention(shape, None) if (index + 1) % interval == 0 else linear
        for index in range(num_layers)
    ]


def _mla(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """deepseek_v2, deepseek_v3, kimi_k2: multi-head latent attention on every layer."""
    group = {
        "kind": "mla",
        "kv_lora_rank": reader.required("kv_lora_rank"),
        "qk_rope_head_dim": reader.required("qk_rope_head_dim"),
    }
    reader.note(
        "MLA: each layer caches kv_lora_rank + qk_rope_head_dim elements per token; "
        "num_key_value_heads does not size the cache."
    )
    extra = reader.raw("num_nextn_predict_layers")
    if isinstance(extra, int) and not isinstance(extra, bool) and extra > 0:
        reader.note(
            f"num_nextn_predict_layers {extra}: the multi-token-prediction layers are not in "
            "num_hidden_layers and not counted here."
        )
    return [group for _ in range(num_layers)]


def _jamba(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """jamba: attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere."""
    period = reader.required("attn_layer_period")
    offset = reader.non_negative("attn_layer_offset")
    hidden = reader.required("hidden_size", "Mamba d_inner is mamba_expand x hidden_size")
    expand = reader.required("mamba_expand")
    mamba = {
        "kind": "mamba1",
        "d_inner": expand * hidden,
        "d_state": reader.required("mamba_d_state"),
        "conv_kernel": reader.required("mamba_d_conv"),
    }
    shape = attention_shape(reader)
    window = reader.optional("sliding_window")
    if window is not None:
        reader.note(f"sliding_window {window} applies to the attention layers.")
    reader.note(
        f"Attention where i % {period} == {offset} (attn_layer_period {period}, "
        f"attn_layer_offset {offset}); the other layers are Mamba-1 with d_inner = mamba_expand "
        f"x hidden_size = {expand} x {hidden} = {expand * hidden}."
    )
    return [
        attention(shape, window) if index % period == offset else mamba
        for index in range(num_layers)
    ]


def _nemotron_h(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """nemotron_h: one hybrid_override_pattern character per layer."""
    pattern = reader.raw("hybrid_override_pattern")
    if pattern is None:
        raise reader.missing("hybrid_override_pattern")
    if not isinstance(pattern, str):
        raise ConfigError("config field hybrid_override_pattern must be a string")
    if len(pattern) != num_layers:
        raise ConfigError(
            f"config field hybrid_override_pattern has {len(pattern)} characters; "
            f"num_hidden_layers is {num_layers}"
        )
    unknown = sorted(set(pattern) - set("M*-E"))
    if unknown:
        raise ConfigError(
            f"config field hybrid_override_pattern has character(s) {', '.join(map(repr, unknown))}; "
            "supported: 'M' (Mamba-2), '*' (attention), '-' (MLP), 'E' (MoE)"
        )
    if reader.has("sliding_window"):
        raise ConfigError(
            "config field sliding_window is set; nemotron_h import supports no window"
        )
    layers: list[LayerSpec] = []
    mamba: LayerSpec | None = None
    attention_layer: LayerSpec | None = None
    if "M" in pattern:
        mamba = {
            "kind": "mamba2",
            "num_heads": reader.required("mamba_num_heads"),
            "head_dim": reader.required("mamba_head_dim"),
            "n_groups": reader.required("n_groups"),
            "d_state": reader.required("ssm_state_size"),
            "conv_kernel": reader.required("conv_kernel"),
        }
    if "*" in pattern:
        attention_layer = attention(
            attention_shape(reader, ("attention_head_dim", "head_dim")), None
        )
    for char in pattern:
        if char == "M" and mamba is not None:
            layers.append(mamba)
        elif char == "*" and attention_layer is not None:
            layers.append(attention_layer)
        else:
            layers.append({"kind": "none"})
    reader.note(
        f"hybrid_override_pattern {json.dumps(pattern)}: 'M' Mamba-2, '*' attention, "
        "'-' MLP only and 'E' MoE only (nothing cached)."
    )
    return layers


def _falcon_h1(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """falcon_h1: attention and Mamba-2 side by side in every layer."""
    indices = reader.raw("attn_layer_indices")
    if indices is not None:
        raise ConfigError(
            "config field attn_layer_indices is set; falcon_h1 import supports only attention in "
            "every layer (attn_layer_indices null)"
        )
    if reader.has("sliding_window"):
        raise ConfigError("config field sliding_window is set; falcon_h1 import supports no window")
    shape = attention_shape(reader)
    heads = reader.required("mamba_n_heads")
    if reader.has("mamba_d_ssm"):
        d_ssm = reader.required("mamba_d_ssm")
        d_ssm_text = f"mamba_d_ssm {d_ssm}"
    else:
        expand = reader.required("mamba_expand", "mamba_d_ssm is not given")
        hidden = reader.required("hidden_size", "mamba_d_ssm is not given")
        d_ssm = expand * hidden
        d_ssm_text = f"mamba_expand x hidden_size = {expand} x {hidden} = {d_ssm}"
    given = reader.raw("mamba_d_head")
    if given is None or given == "auto":
        if d_ssm % heads != 0:
            raise ConfigError(
                f"mamba_n_heads {heads} does not divide the Mamba width ({d_ssm_text})"
            )
        d_head = d_ssm // heads
        reader.note(
            f"mamba_d_head is auto: derived as {d_ssm_text} / mamba_n_heads {heads} = {d_head}."
        )
    else:
        d_head = reader.required("mamba_d_head")
        if d_head * heads != d_ssm:
            raise ConfigError(
                f"config field mamba_d_head {d_head} x mamba_n_heads {heads} is not the Mamba "
                f"width ({d_ssm_text}); transformers rejects this config too"
            )
    mixers = [
        attention(shape, None),
        {
            "kind": "mamba2",
            "num_heads": heads,
            "head_dim": d_head,
            "n_groups": reader.required("mamba_n_groups"),
            "d_state": reader.required("mamba_d_state"),
            "conv_kernel": reader.required("mamba_d_conv"),
        },
    ]
    reader.note(
        "Parallel hybrid: every layer runs an attention mixer (a KV cache) and a Mamba-2 mixer "
        f"(a fixed state) side by side; Mamba-2 width {heads} heads x {d_head} = {heads * d_head}."
    )
    return [{"kind": "parallel", "mixers": mixers} for _ in range(num_layers)]


FAMILIES: dict[str, Callable[[ConfigReader, int], list[LayerSpec]]] = {
    "llama": _dense,
    "mistral": _dense,
    "mixtral": _dense,
    "phi3": _dense,
    "qwen2": _qwen,
    "qwen2_moe": _qwen,
    "qwen3": _qwen,
    "qwen3_moe": _qwen,
    "qwen3_next": _qwen3_next,
    "gemma2": _alternating,
    "gpt_oss": _alternating,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "olmo3": _olmo3,
    "deepseek_v2": _mla,
    "deepseek_v3": _mla,
    "kimi_k2": _mla,
    "jamba": _jamba,
    "nemotron_h": _nemotron_h,
    "falcon_h1": _falcon_h1,
}


def from_layer_types(reader: ConfigReader, num_layers: int) -> list[LayerSpec]:
    """A model_type import does not know: full and sliding-window layers from layer_types."""
    types = layer_types(reader, num_layers)
    if types is None:
        raise unknown_model_type(reader.model_type)
    shape = attention_shape(reader)
    reader.note(
        f"model_type {reader.model_type} is read through its layer_types alone: every "
        "dimension comes from the config, none from a family default; check them against the "
        "model's source."
    )
    return layers_from_sliding_types(reader, types, shape)


def unknown_model_type(model_type: str) -> ConfigError:
    """The refusal of a config that neither names a known family nor lists its layer_types."""
    return ConfigError(
        f"unknown model_type {model_type!r} and no layer_types; supported model types: {', '.join(SUPPORTED_MODEL_TYPES)}; "
        "a config of another model_type is read when it has num_hidden_layers, layer_types "
        "(full_attention or sliding_attention per layer), sliding_window (when a layer slides), "
        f"num_key_value_heads and head_dim; {BY_HAND}"
    )


SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(FAMILIES))
