"""A model geometry file from a Hugging Face ``config.json`` (``kvrecords model import-hf``).

``reader`` reads a config's fields and names the one that is missing or wrong; ``attention``
gives attention layers their shape and reads ``layer_types``; ``families`` holds each supported
``model_type``'s rules (and reads any other config through its ``layer_types``); ``layout`` groups
the layers and describes where each group sits; ``model_file`` puts the file together, and
``kvrecords fmt`` writes its text. Nothing here reads or writes a file.

``head_dim`` is read when given. It is derived as hidden_size / num_attention_heads only for the
families whose transformers code derives it (llama, mistral, mixtral, qwen2, qwen2_moe, phi3,
jamba, falcon_h1, olmo3), and the notes say so; for the others the config class carries its own
default, which is not hidden / heads, so a missing ``head_dim`` is an error rather than a guess.
A missing ``num_key_value_heads`` means MHA (noted) only for llama, phi3 and olmo3, whose config
classes do exactly that.
"""

from kvrecords.tools.hf_import.families import SUPPORTED_MODEL_TYPES
from kvrecords.tools.hf_import.layout import describe_layers
from kvrecords.tools.hf_import.model_file import (
    DEFAULT_CITATION,
    model_data_from_hf_config,
    model_yaml_from_hf_config,
)
from kvrecords.tools.hf_import.reader import ConfigError

__all__ = [
    "DEFAULT_CITATION",
    "SUPPORTED_MODEL_TYPES",
    "ConfigError",
    "describe_layers",
    "model_data_from_hf_config",
    "model_yaml_from_hf_config",
]
