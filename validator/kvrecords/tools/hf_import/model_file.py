"""A model file's data from a Hugging Face ``config.json``, and its text written by ``fmt``."""

from __future__ import annotations

import json
import re
from typing import Any

from kvrecords.dataset.layout import ID_PATTERN
from kvrecords.tools.hf_import.attention import DERIVES_HEAD_DIM
from kvrecords.tools.hf_import.families import FAMILIES, from_layer_types, unknown_model_type
from kvrecords.tools.hf_import.layout import architecture_phrase, layer_groups
from kvrecords.tools.hf_import.reader import BY_HAND, ConfigError, ConfigReader, reader_for

DEFAULT_CITATION = "Hugging Face config.json imported with kvrecords model import-hf"

_HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_URL = re.compile(r"^https?://")
_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}
_EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")


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
    _check_arguments(config, model_id, source_url, source_citation)
    model_type = config.get("model_type")
    if model_type is None:
        supported = ", ".join(sorted(FAMILIES))
        raise ConfigError(
            f"config has no model_type; supported model types: {supported}; {BY_HAND}"
        )
    if not isinstance(model_type, str):
        raise ConfigError(f"config field model_type must be a string, got {model_type!r}")
    family = FAMILIES.get(model_type)
    reader = reader_for(config, model_type, known_family=family is not None)
    if family is None and reader.raw("layer_types") is None:
        raise unknown_model_type(model_type)
    num_layers = reader.required("num_hidden_layers")
    layers = (family or from_layer_types)(reader, num_layers)
    pattern = reader.raw("hybrid_override_pattern") if model_type == "nemotron_h" else None
    groups = layer_groups(layers, pattern)

    unknown: list[dict[str, str]] = []
    name, hf_repo = _name_and_repo(config, model_id, unknown)
    dtype = _dtype(reader, unknown)
    max_context = _max_context(reader, unknown)
    source: dict[str, str] = {}
    if source_url is not None:
        source["url"] = source_url
    source["citation"] = source_citation if source_citation is not None else DEFAULT_CITATION
    heads = reader.optional("num_attention_heads")
    hidden = reader.optional("hidden_size")
    for field, value, config_name in (
        ("query_heads", heads, "num_attention_heads"),
        ("hidden_size", hidden, "hidden_size"),
    ):
        if value is None:
            unknown.append({"field": field, "reason": f"The config gives no {config_name}."})
    derived = model_type in DERIVES_HEAD_DIM and not reader.has("head_dim")
    lead = f"Imported from a Hugging Face config.json (model_type {model_type}) by kvrecords model import-hf."
    return {
        "id": model_id,
        "name": name,
        "hf_repo": hf_repo,
        "architecture": architecture_phrase(groups, heads, _is_moe(reader)),
        "num_layers": num_layers,
        "query_heads": heads,
        "hidden_size": hidden,
        "head_dim_from_hidden": derived,
        "dtype": dtype,
        "max_context_tokens": max_context,
        "layer_groups": groups,
        "unknown": unknown,
        "source": source,
        "notes": " ".join([lead, *reader.notes]),
    }


def model_yaml_from_hf_config(
    config: dict[str, Any],
    model_id: str,
    schema: dict[str, Any],
    *,
    source_url: str | None = None,
    source_citation: str | None = None,
) -> str:
    """The model file's text for a Hugging Face ``config.json``, as ``kvrecords fmt`` writes it
    (``schema`` is the dataset's model schema, for the key order)."""
    from kvrecords.tools.fmt import format_data

    data = model_data_from_hf_config(
        config, model_id, source_url=source_url, source_citation=source_citation
    )
    return format_data(data, "model", schema)


def _check_arguments(
    config: Any, model_id: str, source_url: str | None, source_citation: str | None
) -> None:
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


def _is_moe(reader: ConfigReader) -> bool:
    for name in _EXPERT_FIELDS:
        value = reader.raw(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            return True
    return False


def _dtype(reader: ConfigReader, unknown: list[dict[str, str]]) -> str | None:
    name = "torch_dtype" if reader.has("torch_dtype") else "dtype"
    raw = reader.raw(name)
    quant = reader.raw("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if isinstance(method, str):
        # The stored precision of the weights (fp8, AWQ, GPTQ...) is what a record's run
        # states as its weights precision; the model's dtype stays torch_dtype.
        reader.note(
            f"The weights are quantized (quantization_config quant_method {method}); dtype is "
            "torch_dtype, and a record states the weights precision per run."
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


def _max_context(reader: ConfigReader, unknown: list[dict[str, str]]) -> int | None:
    value = reader.optional("max_position_embeddings")
    if value is None:
        unknown.append(
            {
                "field": "max_context_tokens",
                "reason": "The config gives no max_position_embeddings.",
            }
        )
    return value
