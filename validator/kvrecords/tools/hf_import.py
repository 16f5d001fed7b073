"""A model geometry file from a Hugging Face ``config.json`` (``kvrecords model import-hf``).

The public functions take the parsed config (a ``dict``) and return the model file's data or
its YAML text; they read and write nothing. Each supported ``model_type`` is read the way
transformers builds that model's layers:

- layer kinds come from ``layer_types`` when the config lists them, else from the family's
  own rule (Gemma 2 and gpt-oss alternate sliding/global starting with sliding at layer 0;
  Gemma 3 makes every N-th layer global; Qwen3-Next every k-th layer full attention; Jamba
  puts attention where ``i % attn_layer_period == attn_layer_offset``; Nemotron-H reads
  ``hybrid_override_pattern``; Falcon-H1 runs attention and Mamba-2 in every layer);
- a window applies only where the family applies one: Qwen2/Qwen3 need
  ``use_sliding_window: true`` and then window the layers from ``max_window_layers`` on;
  Mistral, Mixtral and Phi-3 window every layer when ``sliding_window`` is set;
- ``head_dim`` is read when given. It is derived as hidden_size / num_attention_heads only
  for the families whose transformers config derives it (llama, mistral, mixtral, qwen2,
  qwen2_moe, phi3, jamba, falcon_h1), and the notes say so; for the others (Qwen3, Gemma,
  gpt-oss, Qwen3-Next, Nemotron-H) the config class carries its own default, which is not
  hidden / heads, so a missing ``head_dim`` is an error rather than a guess;
- a missing ``num_key_value_heads`` means MHA (= num_attention_heads, noted) only for llama
  and phi3, whose config classes do exactly that; elsewhere the class default is a fixed
  number, so it is an error.

Layers of the same kind and shape form one group wherever they sit (the file lists groups by
shape); the group's ``where`` says which layer indices it holds.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from kvrecords.dataset.layout import ID_PATTERN

DEFAULT_CITATION = "Hugging Face config.json imported with kvrecords model import-hf"
MODELINE = "# yaml-language-server: $schema=../schema/model.schema.json"

_HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_URL = re.compile(r"^https?://")

# Families whose transformers config derives head_dim = hidden_size // num_attention_heads
# when the config gives none.
_DERIVES_HEAD_DIM = frozenset(
    {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "phi3", "jamba", "falcon_h1"}
)
# Families whose transformers config sets num_key_value_heads = num_attention_heads when the
# config gives none (their class default is None).
_KV_HEADS_DEFAULT_TO_HEADS = frozenset({"llama", "phi3"})
# Qwen2-style windows: sliding_window counts only when use_sliding_window is true.
_QWEN_WINDOW = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})

_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}
_EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")


class ConfigError(ValueError):
    """The config cannot be imported: a field is missing or wrong, or the type is unknown."""


class _Reader:
    """Reads a config's fields, raising ``ConfigError`` that names the field."""

    def __init__(self, data: dict[str, Any], model_type: str) -> None:
        self.data = data
        self.model_type = model_type
        self.notes: list[str] = []

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def raw(self, name: str) -> Any:
        return self.data.get(name)

    def missing(self, name: str, why: str = "") -> ConfigError:
        reason = f": {why}" if why else ""
        return ConfigError(
            f"config has no {name} (needed for model_type {self.model_type}){reason}"
        )

    def req(self, name: str, why: str = "") -> int:
        """A required positive integer field."""
        value = self.data.get(name)
        if value is None:
            raise self.missing(name, why)
        return self._checked_int(name, value)

    def opt_int(self, name: str) -> int | None:
        value = self.data.get(name)
        return None if value is None else self._checked_int(name, value)

    def _checked_int(self, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"config field {name} must be a positive integer, got {value!r}")
        return value

    def first_int(self, names: tuple[str, ...], why: str = "") -> int:
        """The first of several alternative field names that is set."""
        for name in names:
            if self.has(name):
                return self.req(name)
        raise self.missing(" or ".join(names), why)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


# --------------------------------------------------------------------------------------------
# Attention shape


def _attention_shape(
    cfg: _Reader, head_dim_fields: tuple[str, ...] = ("head_dim",)
) -> dict[str, int]:
    """kv_heads and head_dim of the config's attention layers, by the family's rules."""
    kind = cfg.model_type
    heads = cfg.opt_int("num_attention_heads")
    if cfg.has("num_key_value_heads"):
        kv_heads = cfg.req("num_key_value_heads")
    elif kind in _KV_HEADS_DEFAULT_TO_HEADS:
        if heads is None:
            raise cfg.missing("num_key_value_heads", "nor num_attention_heads to default it to")
        kv_heads = heads
        cfg.note(
            f"num_key_value_heads is not in the config: MHA assumed, kv heads = "
            f"num_attention_heads = {heads} (as transformers does for {kind})."
        )
    else:
        raise cfg.missing(
            "num_key_value_heads",
            f"transformers' {kind} config default is not num_attention_heads; state it",
        )
    given = [name for name in head_dim_fields if cfg.has(name)]
    if given:
        head_dim = cfg.req(given[0])
        if heads is not None and cfg.has("hidden_size"):
            hidden = cfg.req("hidden_size")
            if hidden % heads != 0 or hidden // heads != head_dim:
                cfg.note(
                    f"Attention {given[0]} {head_dim} is read from the config, not derived as "
                    f"hidden_size / num_attention_heads ({hidden} / {heads})."
                )
    elif kind in _DERIVES_HEAD_DIM:
        hidden = cfg.req(
            "hidden_size", "head_dim is not given, so it is hidden_size / num_attention_heads"
        )
        if heads is None:
            raise cfg.missing(
                "num_attention_heads",
                "head_dim is not given, so it is hidden_size / num_attention_heads",
            )
        if hidden % heads != 0:
            raise ConfigError(
                f"config has no head_dim and hidden_size {hidden} is not divisible by "
                f"num_attention_heads {heads}"
            )
        head_dim = hidden // heads
        cfg.note(
            f"head_dim is not in the config: derived as hidden_size / num_attention_heads = "
            f"{hidden} / {heads} = {head_dim} (as transformers does for {kind})."
        )
    else:
        raise cfg.missing(
            " or ".join(head_dim_fields),
            f"transformers' {kind} config has its own head_dim default, not hidden_size / "
            "num_attention_heads; state it",
        )
    return {"kv_heads": kv_heads, "head_dim": head_dim}


def _attention(shape: dict[str, int], window: int | None) -> dict[str, Any]:
    if window is None:
        return {"kind": "attention", **shape}
    return {"kind": "sliding_window", **shape, "window": window}


def _layer_types(cfg: _Reader, num_layers: int) -> list[str] | None:
    value = cfg.raw("layer_types")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError("config field layer_types must be a list of strings")
    if len(value) != num_layers:
        raise ConfigError(
            f"config field layer_types lists {len(value)} layers; num_hidden_layers is {num_layers}"
        )
    return value


def _layers_from_types(
    cfg: _Reader,
    types: list[str],
    shape: dict[str, int],
    window: int | None,
    linear: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    allowed = ["full_attention", "sliding_attention"] + (["linear_attention"] if linear else [])
    layers: list[dict[str, Any]] = []
    for index, layer_type in enumerate(types):
        if layer_type == "full_attention":
            layers.append(_attention(shape, None))
        elif layer_type == "sliding_attention":
            layers.append(_attention(shape, window))
        elif layer_type == "linear_attention" and linear is not None:
            layers.append(linear)
        else:
            raise ConfigError(
                f"config field layer_types[{index}] is {layer_type!r}, which model_type "
                f"{cfg.model_type} import does not support (supported: {', '.join(allowed)})"
            )
    if window is None and "sliding_attention" in types:
        cfg.note(
            "layer_types marks sliding_attention layers but no window applies (sliding_window "
            "is null or disabled), so they are counted as full attention."
        )
    cfg.note("Layer kinds are read from layer_types.")
    return layers


# --------------------------------------------------------------------------------------------
# Families


def _dense(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """llama, mistral, mixtral, phi3: the same attention on every layer, maybe windowed."""
    shape = _attention_shape(cfg)
    window = cfg.opt_int("sliding_window")
    if cfg.model_type == "llama" and window is not None:
        cfg.note(f"sliding_window {window} is set but Llama attention does not use it: no window.")
        window = None
    types = _layer_types(cfg, num_layers)
    if types is not None:
        return _layers_from_types(cfg, types, shape, window)
    if window is not None:
        cfg.note(f"sliding_window {window} applies to every layer ({cfg.model_type}).")
    elif cfg.model_type != "llama":
        cfg.note("sliding_window is null: every layer is full attention.")
    return [_attention(shape, window) for _ in range(num_layers)]


def _qwen(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """qwen2, qwen2_moe, qwen3, qwen3_moe: a window only with use_sliding_window true."""
    shape = _attention_shape(cfg)
    use = cfg.raw("use_sliding_window")
    window = cfg.opt_int("sliding_window")
    if use is not True:
        if window is not None:
            cfg.note(
                f"sliding_window {window} is in the config but use_sliding_window is "
                f"{json.dumps(use)}: no window applies (as in transformers' Qwen2)."
            )
        else:
            cfg.note("use_sliding_window is not true: every layer is full attention.")
        window = None
    elif window is None:
        cfg.note("use_sliding_window is true but sliding_window is null: no window applies.")
    types = _layer_types(cfg, num_layers)
    if types is not None:
        return _layers_from_types(cfg, types, shape, window)
    if window is None:
        return [_attention(shape, None) for _ in range(num_layers)]
    first = cfg.raw("max_window_layers")
    if first is None:
        raise cfg.missing(
            "max_window_layers", "use_sliding_window is true, and it says which layers slide"
        )
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise ConfigError(
            f"config field max_window_layers must be a non-negative integer, got {first!r}"
        )
    cfg.note(
        f"use_sliding_window is true: layers from max_window_layers ({first}) on keep a "
        f"{window}-token window, as in transformers' Qwen2."
    )
    return [_attention(shape, window if index >= first else None) for index in range(num_layers)]


def _window_for_sliding_layers(cfg: _Reader, why: str) -> int:
    return cfg.req("sliding_window", why)


def _layers_from_sliding_types(
    cfg: _Reader, types: list[str], shape: dict[str, int]
) -> list[dict[str, Any]]:
    """Explicit layer_types of full and sliding-window attention (gemma2, gemma3, gpt_oss)."""
    window = cfg.opt_int("sliding_window") if "sliding_attention" in types else None
    if "sliding_attention" in types and window is None:
        raise cfg.missing("sliding_window", "layer_types has sliding_attention layers")
    return _layers_from_types(cfg, types, shape, window)


def _alternating(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """gemma2, gpt_oss: layer_types, else sliding at even indices and global at odd ones."""
    shape = _attention_shape(cfg)
    types = _layer_types(cfg, num_layers)
    if types is not None:
        return _layers_from_sliding_types(cfg, types, shape)
    window = _window_for_sliding_layers(
        cfg, "its layers alternate sliding-window and global attention"
    )
    cfg.note(
        f"No layer_types: layers alternate sliding window ({window}) at even indices and full "
        f"attention at odd ones, as transformers builds {cfg.model_type}."
    )
    return [_attention(shape, window if index % 2 == 0 else None) for index in range(num_layers)]


def _gemma3(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """gemma3 / gemma3_text: layer_types, else every N-th layer (index % N == N - 1) global."""
    shape = _attention_shape(cfg)
    types = _layer_types(cfg, num_layers)
    if types is not None:
        return _layers_from_sliding_types(cfg, types, shape)
    names = ("sliding_window_pattern", "_sliding_window_pattern")
    period = cfg.first_int(names, "without layer_types it says which layers are global")
    window = _window_for_sliding_layers(cfg, "its local layers keep a sliding window")
    cfg.note(
        f"No layer_types: with sliding window pattern {period}, layer i is global when "
        f"i % {period} == {period - 1}; the others keep a {window}-token window."
    )
    return [
        _attention(shape, None if index % period == period - 1 else window)
        for index in range(num_layers)
    ]


def _qwen3_next(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """qwen3_next: full attention every full_attention_interval-th layer, Gated DeltaNet else."""
    shape = _attention_shape(cfg)
    linear = {
        "kind": "linear_attention",
        "conv_kernel": cfg.req("linear_conv_kernel_dim"),
        "key_heads": cfg.req("linear_num_key_heads"),
        "value_heads": cfg.req("linear_num_value_heads"),
        "key_head_dim": cfg.req("linear_key_head_dim"),
        "value_head_dim": cfg.req("linear_value_head_dim"),
    }
    types = _layer_types(cfg, num_layers)
    if types is not None:
        window = cfg.opt_int("sliding_window") if "sliding_attention" in types else None
        return _layers_from_types(cfg, types, shape, window, linear)
    interval = cfg.req(
        "full_attention_interval", "without layer_types it says which layers are full attention"
    )
    cfg.note(
        f"No layer_types: layer i is full attention when (i + 1) % {interval} == 0 "
        f"(full_attention_interval {interval}); the others are Gated DeltaNet linear attention."
    )
    return [
        _attention(shape, None) if (index + 1) % interval == 0 else linear
        for index in range(num_layers)
    ]


def _mla(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """deepseek_v2, deepseek_v3, kimi_k2: multi-head latent attention on every layer."""
    group = {
        "kind": "mla",
        "kv_lora_rank": cfg.req("kv_lora_rank"),
        "qk_rope_head_dim": cfg.req("qk_rope_head_dim"),
    }
    cfg.note(
        "MLA: each layer caches kv_lora_rank + qk_rope_head_dim elements per token; "
        "num_key_value_heads does not size the cache."
    )
    extra = cfg.raw("num_nextn_predict_layers")
    if isinstance(extra, int) and not isinstance(extra, bool) and extra > 0:
        cfg.note(
            f"num_nextn_predict_layers {extra}: the multi-token-prediction layers are not in "
            "num_hidden_layers and not counted here."
        )
    return [group for _ in range(num_layers)]


def _jamba(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """jamba: attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere."""
    period = cfg.req("attn_layer_period")
    offset = cfg.raw("attn_layer_offset")
    if offset is None:
        raise cfg.missing("attn_layer_offset")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ConfigError(
            f"config field attn_layer_offset must be a non-negative integer, got {offset!r}"
        )
    hidden = cfg.req("hidden_size", "Mamba d_inner is mamba_expand x hidden_size")
    expand = cfg.req("mamba_expand")
    mamba = {
        "kind": "mamba1",
        "d_inner": expand * hidden,
        "d_state": cfg.req("mamba_d_state"),
        "conv_kernel": cfg.req("mamba_d_conv"),
    }
    shape = _attention_shape(cfg)
    window = cfg.opt_int("sliding_window")
    if window is not None:
        cfg.note(f"sliding_window {window} applies to the attention layers.")
    cfg.note(
        f"Attention where i % {period} == {offset} (attn_layer_period {period}, "
        f"attn_layer_offset {offset}); the other layers are Mamba-1 with d_inner = mamba_expand "
        f"x hidden_size = {expand} x {hidden} = {expand * hidden}."
    )
    return [
        _attention(shape, window) if index % period == offset else mamba
        for index in range(num_layers)
    ]


def _nemotron_h(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """nemotron_h: one hybrid_override_pattern character per layer."""
    pattern = cfg.raw("hybrid_override_pattern")
    if pattern is None:
        raise cfg.missing("hybrid_override_pattern")
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
    if cfg.has("sliding_window"):
        raise ConfigError(
            "config field sliding_window is set; nemotron_h import supports no window"
        )
    layers: list[dict[str, Any]] = []
    mamba: dict[str, Any] | None = None
    attention: dict[str, Any] | None = None
    if "M" in pattern:
        mamba = {
            "kind": "mamba2",
            "num_heads": cfg.req("mamba_num_heads"),
            "head_dim": cfg.req("mamba_head_dim"),
            "n_groups": cfg.req("n_groups"),
            "d_state": cfg.req("ssm_state_size"),
            "conv_kernel": cfg.req("conv_kernel"),
        }
    if "*" in pattern:
        attention = _attention(_attention_shape(cfg, ("attention_head_dim", "head_dim")), None)
    for char in pattern:
        if char == "M" and mamba is not None:
            layers.append(mamba)
        elif char == "*" and attention is not None:
            layers.append(attention)
        else:
            layers.append({"kind": "none"})
    cfg.note(
        f"hybrid_override_pattern {json.dumps(pattern)}: 'M' Mamba-2, '*' attention, "
        "'-' MLP only and 'E' MoE only (nothing cached)."
    )
    return layers


def _falcon_h1(cfg: _Reader, num_layers: int) -> list[dict[str, Any]]:
    """falcon_h1: attention and Mamba-2 side by side in every layer."""
    indices = cfg.raw("attn_layer_indices")
    if indices is not None:
        raise ConfigError(
            "config field attn_layer_indices is set; falcon_h1 import supports only attention in "
            "every layer (attn_layer_indices null)"
        )
    if cfg.has("sliding_window"):
        raise ConfigError("config field sliding_window is set; falcon_h1 import supports no window")
    shape = _attention_shape(cfg)
    heads = cfg.req("mamba_n_heads")
    if cfg.has("mamba_d_ssm"):
        d_ssm = cfg.req("mamba_d_ssm")
        d_ssm_text = f"mamba_d_ssm {d_ssm}"
    else:
        expand = cfg.req("mamba_expand", "mamba_d_ssm is not given")
        hidden = cfg.req("hidden_size", "mamba_d_ssm is not given")
        d_ssm = expand * hidden
        d_ssm_text = f"mamba_expand x hidden_size = {expand} x {hidden} = {d_ssm}"
    given = cfg.raw("mamba_d_head")
    if given is None or given == "auto":
        if d_ssm % heads != 0:
            raise ConfigError(
                f"mamba_n_heads {heads} does not divide the Mamba width ({d_ssm_text})"
            )
        d_head = d_ssm // heads
        cfg.note(
            f"mamba_d_head is auto: derived as {d_ssm_text} / mamba_n_heads {heads} = {d_head}."
        )
    else:
        d_head = cfg.req("mamba_d_head")
        if d_head * heads != d_ssm:
            raise ConfigError(
                f"config field mamba_d_head {d_head} x mamba_n_heads {heads} is not the Mamba "
                f"width ({d_ssm_text}); transformers rejects this config too"
            )
    mixers = [
        _attention(shape, None),
        {
            "kind": "mamba2",
            "num_heads": heads,
            "head_dim": d_head,
            "n_groups": cfg.req("mamba_n_groups"),
            "d_state": cfg.req("mamba_d_state"),
            "conv_kernel": cfg.req("mamba_d_conv"),
        },
    ]
    cfg.note(
        "Parallel hybrid: every layer runs an attention mixer (a KV cache) and a Mamba-2 mixer "
        f"(a fixed state) side by side; Mamba-2 width {heads} heads x {d_head} = {heads * d_head}."
    )
    return [{"kind": "parallel", "mixers": mixers} for _ in range(num_layers)]


_FAMILIES: dict[str, Callable[[_Reader, int], list[dict[str, Any]]]] = {
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
    "deepseek_v2": _mla,
    "deepseek_v3": _mla,
    "kimi_k2": _mla,
    "jamba": _jamba,
    "nemotron_h": _nemotron_h,
    "falcon_h1": _falcon_h1,
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(_FAMILIES))


# --------------------------------------------------------------------------------------------
# Groups and their layer indices


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


def _group(spec: dict[str, Any], indices: list[int], where: str) -> dict[str, Any]:
    group: dict[str, Any] = {"kind": spec["kind"], "layers": len(indices), "where": where}
    group.update((key, value) for key, value in spec.items() if key != "kind")
    return group


def _groups(layers: list[dict[str, Any]], labels: str | None = None) -> list[dict[str, Any]]:
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
        groups.append(_group(spec, indices, where))
    return groups


# --------------------------------------------------------------------------------------------
# Architecture phrase


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


def _architecture(groups: list[dict[str, Any]], heads: int | None, moe: bool) -> str:
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


def _is_moe(cfg: _Reader) -> bool:
    for name in _EXPERT_FIELDS:
        value = cfg.raw(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            return True
    return False


# --------------------------------------------------------------------------------------------
# Top-level fields


def _dtype(cfg: _Reader, unknown: list[dict[str, str]]) -> str | None:
    name = "torch_dtype" if cfg.has("torch_dtype") else "dtype"
    raw = cfg.raw(name)
    quant = cfg.raw("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if method == "fp8":
        cfg.note(
            f"dtype fp8: quantization_config quant_method is fp8 (the weights are stored in fp8; "
            f"torch_dtype {json.dumps(raw) if raw is not None else 'not given'})."
        )
        return "fp8"
    if isinstance(method, str):
        cfg.note(
            f"The weights are quantized (quantization_config quant_method {method}); dtype is torch_dtype."
        )
    if raw is None:
        unknown.append({"field": "dtype", "reason": "The config gives no torch_dtype."})
        return None
    value = str(raw).removeprefix("torch.")
    if value in _DTYPES:
        return _DTYPES[value]
    unknown.append(
        {
            "field": "dtype",
            "reason": f"The config's {name} {json.dumps(raw)} is not one of bf16, fp16, fp32, fp8.",
        }
    )
    return None


def _name_and_repo(
    config: dict[str, Any], model_id: str, unknown: list[dict[str, str]]
) -> tuple[str, str | None]:
    path = config.get("_name_or_path")
    if not isinstance(path, str) or not path.strip():
        unknown.append(
            {
                "field": "hf_repo",
                "reason": "The config has no _name_or_path naming its Hugging Face repository.",
            }
        )
        return model_id, None
    path = path.strip()
    name = path.rstrip("/").rsplit("/", 1)[-1] or model_id
    if _HF_REPO.match(path):
        return name, path
    unknown.append(
        {
            "field": "hf_repo",
            "reason": f"The config's _name_or_path {json.dumps(path)} is a local path, not a Hugging Face repository id.",
        }
    )
    return name, None


def _max_context(cfg: _Reader, unknown: list[dict[str, str]]) -> int | None:
    value = cfg.opt_int("max_position_embeddings")
    if value is None:
        unknown.append(
            {
                "field": "max_context_tokens",
                "reason": "The config gives no max_position_embeddings.",
            }
        )
    return value


def _reader(config: dict[str, Any], model_type: str) -> _Reader:
    """A reader over the config; a multimodal config's text_config fields take precedence."""
    text = config.get("text_config")
    if not isinstance(text, dict):
        return _Reader(config, model_type)
    reader = _Reader({**config, **text, "model_type": model_type}, model_type)
    reader.note("The geometry is read from the config's text_config (the language model).")
    return reader


def model_data_from_hf_config(
    config: dict[str, Any],
    model_id: str,
    *,
    source_url: str | None = None,
    source_citation: str | None = None,
) -> dict[str, Any]:
    """The model file's data for a Hugging Face ``config.json`` (already parsed).

    Raises ``ConfigError`` (a ``ValueError``) naming the missing or wrong field, or the
    unsupported model_type with the supported ones; a bad ``model_id`` or ``source_url`` is a
    plain ``ValueError``.
    """
    if not isinstance(config, dict):
        raise ConfigError("config must be a JSON object")
    if not (isinstance(model_id, str) and ID_PATTERN.fullmatch(model_id) and len(model_id) <= 80):
        raise ValueError(
            f"model id {model_id!r} must be lowercase letters, digits, dots and hyphens "
            "(at most 80 characters), e.g. llama-3.1-8b"
        )
    if source_url is not None and not _URL.match(source_url):
        raise ValueError(f"source url {source_url!r} must start with http:// or https://")
    if source_citation is not None and not source_citation.strip():
        raise ValueError("source citation must not be empty")
    model_type = config.get("model_type")
    supported = ", ".join(SUPPORTED_MODEL_TYPES)
    if model_type is None:
        raise ConfigError(f"config has no model_type; supported model types: {supported}")
    if not isinstance(model_type, str) or model_type not in _FAMILIES:
        raise ConfigError(f"unknown model_type {model_type!r}; supported model types: {supported}")

    cfg = _reader(config, model_type)
    num_layers = cfg.req("num_hidden_layers")
    layers = _FAMILIES[model_type](cfg, num_layers)
    pattern = cfg.raw("hybrid_override_pattern") if model_type == "nemotron_h" else None
    # Layers share their shape dicts; the groups get their own copies.
    groups = copy.deepcopy(_groups(layers, pattern))

    unknown: list[dict[str, str]] = []
    name, hf_repo = _name_and_repo(config, model_id, unknown)
    dtype = _dtype(cfg, unknown)
    max_context = _max_context(cfg, unknown)
    source: dict[str, str] = {}
    if source_url is not None:
        source["url"] = source_url
    source["citation"] = source_citation if source_citation is not None else DEFAULT_CITATION
    heads = cfg.opt_int("num_attention_heads")
    lead = f"Imported from a Hugging Face config.json (model_type {model_type}) by kvrecords model import-hf."
    return {
        "id": model_id,
        "name": name,
        "hf_repo": hf_repo,
        "architecture": _architecture(groups, heads, _is_moe(cfg)),
        "num_layers": num_layers,
        "dtype": dtype,
        "max_context_tokens": max_context,
        "layer_groups": groups,
        "unknown": unknown,
        "source": source,
        "notes": " ".join([lead, *cfg.notes]),
    }


_FOLD_WIDTH = 88


def _fold_positions(text: str) -> list[int]:
    """Spaces to break a long line at, each between two non-space characters."""
    positions: list[int] = []
    line_start = 0
    last_space = -1
    for index, char in enumerate(text):
        if (
            char == " "
            and 0 < index < len(text) - 1
            and text[index - 1] != " "
            and text[index + 1] != " "
        ):
            if index - line_start > _FOLD_WIDTH and last_space > line_start:
                positions.append(last_space)
                line_start = last_space + 1
            last_space = index
    if len(text) - line_start > _FOLD_WIDTH and last_space > line_start:
        positions.append(last_space)
    return positions


def _foldable(text: str) -> bool:
    return (
        len(text) > _FOLD_WIDTH
        and text.isprintable()
        and text == text.strip()
        and bool(_fold_positions(text))
    )


def _styled(value: Any) -> Any:
    """The data with long strings as folded block scalars (``>-``), which load back equal."""
    from ruamel.yaml.scalarstring import FoldedScalarString

    if isinstance(value, dict):
        return {key: _styled(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_styled(item) for item in value]
    if isinstance(value, str) and _foldable(value):
        folded = FoldedScalarString(value)
        folded.fold_pos = _fold_positions(value)
        return folded
    return value


def dump_model_yaml(data: dict[str, Any]) -> str:
    """A model file's YAML text: the schema modeline, then block style with 2-space indents.

    No anchors, aliases or tags; ``null`` written out; long strings folded (``>-``).
    """
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    def represent_none(representer: RoundTripRepresenter, _: None) -> Any:
        return representer.represent_scalar("tag:yaml.org,2002:null", "null")

    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.representer.add_representer(type(None), represent_none)
    yaml.representer.ignore_aliases = lambda *_: True
    stream = io.StringIO()
    yaml.dump(_styled(data), stream)
    return f"{MODELINE}\n{stream.getvalue()}"


def model_yaml_from_hf_config(
    config: dict[str, Any],
    model_id: str,
    *,
    source_url: str | None = None,
    source_citation: str | None = None,
) -> str:
    """The model file's YAML text for a Hugging Face ``config.json`` (see the data function)."""
    data = model_data_from_hf_config(
        config, model_id, source_url=source_url, source_citation=source_citation
    )
    return dump_model_yaml(data)
