"""``kvrecords.tools.hf_import``: model geometry files from Hugging Face config.json files.

The fixtures in tests/hf_configs/ are hand-written config.json files built from the facts in
shared/model-facts/ (one per model, with the fields a real config of that model_type has).
Each import is compared with the curated file of the same name in models/.

tests/hf_configs/no_model_file/ holds configs with no curated file: olmo-3-7b.json carries the
fields of the public Olmo-3-7B config.json (as republished with the weights quantized by
mlx-community, Olmo-3-7B-RLZero-Code-4bit: 32 layers, 32 heads and 32 kv heads, hidden 4096,
layer_types three sliding to one full, max_position_embeddings 65536), with sliding_window 4096
as transformers' Olmo3Config and every published Olmo 3 config give it.
"""

from __future__ import annotations

import copy
import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conftest import run_cli
from kvrecords.dataset.document import Document, parse_document
from kvrecords.dataset.layout import classify
from kvrecords.dataset.models import load_model_file, model_from_data
from kvrecords.kv.arithmetic import kv_report, parse_element_type
from kvrecords.runner.validate import check_model_file
from kvrecords.tools.fmt import format_text
from kvrecords.tools.hf_import import (
    DEFAULT_CITATION,
    SUPPORTED_MODEL_TYPES,
    ConfigError,
    describe_layers,
    model_data_from_hf_config,
    model_yaml_from_hf_config,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = Path(__file__).resolve().parent / "hf_configs"
MODEL_IDS = sorted(path.stem for path in CONFIGS.glob("*.json"))
SCHEMA = json.loads((ROOT / "schema" / "model.schema.json").read_text(encoding="utf-8"))
KEY_ORDER = [
    "id",
    "name",
    "hf_repo",
    "architecture",
    "num_layers",
    "query_heads",
    "hidden_size",
    "head_dim_from_hidden",
    "dtype",
    "max_context_tokens",
    "layer_groups",
    "unknown",
    "source",
    "notes",
]


def config(model_id: str) -> dict[str, Any]:
    path = CONFIGS / f"{model_id}.json"
    if not path.exists():
        path = CONFIGS / "no_model_file" / f"{model_id}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def imported(model_id: str, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    return model_data_from_hf_config(config(model_id) if cfg is None else cfg, model_id)


def curated(model_id: str) -> dict[str, Any]:
    """The data of models/<id>.yaml, read with the validator's own loader."""
    path = ROOT / "models" / f"{model_id}.yaml"
    document = parse_document(path.read_bytes(), str(path))
    assert isinstance(document, Document), document
    data: dict[str, Any] = document.data
    return data


def without_where(groups: list[dict[str, Any]]) -> list[str]:
    """Groups as comparable text, ``where`` dropped, in a fixed order (files list by shape)."""
    return sorted(
        json.dumps({k: v for k, v in group.items() if k != "where"}, sort_keys=True)
        for group in groups
    )


def kinds(data: dict[str, Any]) -> list[tuple[str, int]]:
    return [(group["kind"], group["layers"]) for group in data["layer_groups"]]


def qwen2_config(**changes: Any) -> dict[str, Any]:
    cfg = config("qwen2.5-7b-instruct")
    cfg.update(changes)
    return cfg


def test_every_required_fixture_is_present() -> None:
    assert (
        sorted(
            [
                "llama-3.1-8b",
                "qwen3-32b",
                "qwen2.5-7b-instruct",
                "mistral-7b-v0.1",
                "mixtral-8x7b",
                "gemma-2-9b",
                "gemma-3-27b",
                "gpt-oss-20b",
                "deepseek-v3",
                "jamba-v0.1",
                "nemotron-h-8b",
                "falcon-h1-0.5b",
                "qwen3-next-80b-a3b",
                "phi-3-mini-4k",
                "qwen3-235b-a22b",
            ]
        )
        == MODEL_IDS
    )


# ------------------------------------------------------------------------------------------
# Every fixture against the curated model file


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_layer_groups_match_the_curated_model_file(model_id: str) -> None:
    data = imported(model_id)
    expected = curated(model_id)
    assert without_where(data["layer_groups"]) == without_where(expected["layer_groups"])
    assert data["num_layers"] == expected["num_layers"]


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_geometry_matches_the_loaded_model(model_id: str) -> None:
    """Through kvrecords.dataset.models: the same leaf groups (kind, layers, every dimension)."""
    ours = model_from_data(imported(model_id))
    theirs = load_model_file(ROOT / "models" / f"{model_id}.yaml")
    assert sorted(map(repr, ours.groups)) == sorted(map(repr, theirs.groups))
    assert ours.num_layers == theirs.num_layers == ours.layer_count_of_groups()


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_top_level_facts_match_the_curated_model_file(model_id: str) -> None:
    data = imported(model_id)
    expected = curated(model_id)
    assert data["id"] == model_id
    if "torch_dtype" in config(model_id) or "dtype" in config(model_id):
        assert data["dtype"] == expected["dtype"]
    else:  # the curated file may take the dtype from another copy of the config
        assert data["dtype"] is None
    assert data["max_context_tokens"] == expected["max_context_tokens"]
    if "_name_or_path" in config(model_id):
        assert data["hf_repo"] == expected["hf_repo"]
    else:
        assert data["hf_repo"] is None
        assert {
            "field": "hf_repo",
            "reason": "The config has no _name_or_path naming its Hugging Face repository.",
        } in data["unknown"]


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_data_validates_against_the_schema_in_key_order(model_id: str) -> None:
    data = imported(model_id)
    errors = [e.message for e in Draft202012Validator(SCHEMA).iter_errors(data)]
    assert errors == []
    assert list(data) == KEY_ORDER
    for group in data["layer_groups"]:
        assert list(group)[:3] == ["kind", "layers", "where"]


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_yaml_validates_and_loads_back_equal(model_id: str) -> None:
    data = imported(model_id)
    text = model_yaml_from_hf_config(config(model_id), model_id, SCHEMA)
    assert text.split("\n", 1)[0] == "# yaml-language-server: $schema=../schema/model.schema.json"
    # The validator's own loader refuses anchors, aliases and tags, and keeps YAML 1.2 scalars.
    document = parse_document(text.encode("utf-8"), f"models/{model_id}.yaml")
    assert isinstance(document, Document), document
    assert document.data == data
    assert list(document.data) == KEY_ORDER
    assert list(Draft202012Validator(SCHEMA).iter_errors(document.data)) == []
    assert "\t" not in text and "{" not in text  # block style only


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_yaml_passes_the_model_file_checks(model_id: str, tmp_path: Path) -> None:
    """Written as models/<id>.yaml in a dataset: modeline, schema, nulls listed, counts add up."""
    shutil.copytree(ROOT / "schema", tmp_path / "schema")
    (tmp_path / "models").mkdir()
    path = tmp_path / "models" / f"{model_id}.yaml"
    path.write_text(model_yaml_from_hf_config(config(model_id), model_id, SCHEMA), encoding="utf-8")
    dataset_file = classify(tmp_path, path)
    assert dataset_file is not None
    state = check_model_file(tmp_path, dataset_file)
    assert [p.message for p in state.problems] == []
    assert state.model is not None


def test_two_space_indentation_and_sequence_dashes() -> None:
    text = model_yaml_from_hf_config(config("falcon-h1-0.5b"), "falcon-h1-0.5b", SCHEMA)
    assert "\nlayer_groups:\n  - kind: parallel\n    layers: 36\n" in text
    assert "\n    mixers:\n      - kind: attention\n        kv_heads: 2\n" in text
    assert "\nunknown: []\n" in text
    assert "\ndtype: bf16\n" in text


def test_heads_and_hidden_size_are_read_and_head_dim_derivation_said() -> None:
    # Llama 3.1 8B's config: hidden_size 4096, 32 heads, head_dim 128 given (tests/hf_configs)
    llama = imported("llama-3.1-8b")
    assert (llama["query_heads"], llama["hidden_size"]) == (32, 4096)
    # Qwen2.5-7B's config gives no head_dim: the qwen2 family takes 3584 / 28 = 128
    assert imported("qwen2.5-7b-instruct")["head_dim_from_hidden"] is True
    # Qwen3-32B sets head_dim 128 itself (5120 / 64 would be 80)
    assert imported("qwen3-32b")["head_dim_from_hidden"] is False


def test_nulls_are_written_out_and_listed() -> None:
    text = model_yaml_from_hf_config(config("gemma-3-27b"), "gemma-3-27b", SCHEMA)
    assert "\nhf_repo: null\n" in text
    assert "\ndtype: null\n" in text
    assert "\nmax_context_tokens: null\n" in text
    fields = [entry["field"] for entry in imported("gemma-3-27b")["unknown"]]
    assert fields == ["hf_repo", "dtype", "max_context_tokens"]


# ------------------------------------------------------------------------------------------
# Traps


def test_explicit_head_dim_is_honoured_not_derived() -> None:
    # Qwen3-32B: hidden_size 5120 / 64 heads would be 80; the config says 128.
    group = imported("qwen3-32b")["layer_groups"][0]
    assert group["head_dim"] == 128
    assert (
        "not derived as hidden_size / num_attention_heads (5120 / 64)"
        in imported("qwen3-32b")["notes"]
    )
    changed = config("qwen3-32b")
    changed["head_dim"] = 96
    assert imported("qwen3-32b", changed)["layer_groups"][0]["head_dim"] == 96


def test_head_dim_derived_only_when_absent_and_noted() -> None:
    cfg = config("llama-3.1-8b")
    del cfg["head_dim"]
    data = imported("llama-3.1-8b", cfg)
    assert data["layer_groups"][0]["head_dim"] == 4096 // 32
    assert "derived as hidden_size / num_attention_heads = 4096 / 32 = 128" in data["notes"]
    cfg["head_dim"] = None  # null counts as absent
    assert imported("llama-3.1-8b", cfg)["layer_groups"][0]["head_dim"] == 128
    assert "derived" not in imported("llama-3.1-8b")["notes"]


def test_head_dim_is_required_where_the_family_has_its_own_default() -> None:
    for model_id in ("qwen3-32b", "gemma-2-9b", "gpt-oss-20b"):
        cfg = config(model_id)
        del cfg["head_dim"]
        with pytest.raises(ConfigError, match="config has no head_dim"):
            imported(model_id, cfg)


def test_missing_kv_heads_means_mha_for_llama_and_is_noted() -> None:
    cfg = config("llama-3.1-8b")
    del cfg["num_key_value_heads"]
    data = imported("llama-3.1-8b", cfg)
    assert data["layer_groups"][0]["kv_heads"] == 32
    assert data["architecture"].startswith("MHA")
    assert "MHA assumed" in data["notes"]


def test_missing_kv_heads_is_an_error_where_the_default_is_not_mha() -> None:
    cfg = config("qwen3-32b")
    del cfg["num_key_value_heads"]
    with pytest.raises(ConfigError, match="config has no num_key_value_heads"):
        imported("qwen3-32b", cfg)


def test_qwen2_window_off_without_use_sliding_window() -> None:
    for use in (False, None):
        cfg = qwen2_config(sliding_window=4096, use_sliding_window=use)
        data = model_data_from_hf_config(cfg, "qwen2.5-7b-instruct")
        assert kinds(data) == [("attention", 28)]
        assert "window" not in data["layer_groups"][0]
    assert (
        "no window applies"
        in model_data_from_hf_config(
            qwen2_config(sliding_window=4096, use_sliding_window=False), "q"
        )["notes"]
    )


def test_qwen2_window_from_max_window_layers_on() -> None:
    cfg = qwen2_config(sliding_window=4096, use_sliding_window=True, max_window_layers=20)
    data = model_data_from_hf_config(cfg, "q")
    assert kinds(data) == [("attention", 20), ("sliding_window", 8)]
    assert data["layer_groups"][0]["where"] == "layers 0-19"
    assert data["layer_groups"][1]["where"] == "layers 20-27"
    assert data["layer_groups"][1]["window"] == 4096
    # max_window_layers equal to the layer count: no layer slides (the real Qwen2.5 value).
    cfg["max_window_layers"] = 28
    assert kinds(model_data_from_hf_config(cfg, "q")) == [("attention", 28)]
    del cfg["max_window_layers"]
    with pytest.raises(ConfigError, match="max_window_layers"):
        model_data_from_hf_config(cfg, "q")


def test_qwen_layer_types_are_honoured() -> None:
    cfg = qwen2_config(
        sliding_window=4096,
        use_sliding_window=True,
        layer_types=["sliding_attention"] * 4 + ["full_attention"] * 24,
    )
    data = model_data_from_hf_config(cfg, "q")
    assert kinds(data) == [("sliding_window", 4), ("attention", 24)]


def test_mixtral_window_only_when_set() -> None:
    assert kinds(imported("mixtral-8x7b")) == [("attention", 32)]
    cfg = config("mixtral-8x7b")
    cfg["sliding_window"] = 4096
    data = imported("mixtral-8x7b", cfg)
    assert kinds(data) == [("sliding_window", 32)]
    assert data["layer_groups"][0]["window"] == 4096


def test_mistral_and_phi3_window_every_layer() -> None:
    assert imported("mistral-7b-v0.1")["layer_groups"][0]["window"] == 4096
    phi = imported("phi-3-mini-4k")
    assert kinds(phi) == [("sliding_window", 32)]
    assert phi["layer_groups"][0]["window"] == 2047
    assert phi["architecture"] == "MHA, sliding window (2047) on all layers"


def test_gemma2_alternates_starting_with_sliding() -> None:
    groups = imported("gemma-2-9b")["layer_groups"]
    assert [(g["kind"], g["where"]) for g in groups] == [
        ("sliding_window", "i % 2 == 0: 0, 2, 4, ..., 40"),
        ("attention", "i % 2 == 1: 1, 3, 5, ..., 41"),
    ]


def test_gemma3_pattern_and_layer_types_agree() -> None:
    from_pattern = imported("gemma-3-27b")
    groups = from_pattern["layer_groups"]
    assert [g["where"] for g in groups] == [
        "i % 6 != 5: 0-4, 6-10, 12-16, ..., 54-58, 60, 61",
        "i % 6 == 5: 5, 11, 17, ..., 59",
    ]
    text = dict(config("gemma-3-27b")["text_config"])
    del text["sliding_window_pattern"]
    text["_sliding_window_pattern"] = 6
    assert imported("gemma-3-27b", text)["layer_groups"] == groups  # flat gemma3_text config
    del text["_sliding_window_pattern"]
    text["layer_types"] = [
        "full_attention" if i % 6 == 5 else "sliding_attention" for i in range(62)
    ]
    assert without_where(imported("gemma-3-27b", text)["layer_groups"]) == without_where(groups)
    del text["layer_types"]
    with pytest.raises(ConfigError, match="sliding_window_pattern"):
        imported("gemma-3-27b", text)


def test_gemma3_reads_text_config_and_top_level_dtype() -> None:
    cfg = config("gemma-3-27b")
    cfg["torch_dtype"] = "bfloat16"
    data = imported("gemma-3-27b", cfg)
    assert data["dtype"] == "bf16"
    assert data["num_layers"] == 62  # not the vision tower's 27
    assert "text_config" in data["notes"]


def test_gpt_oss_without_layer_types_alternates_from_sliding() -> None:
    cfg = config("gpt-oss-20b")
    del cfg["layer_types"]
    data = imported("gpt-oss-20b", cfg)
    assert data["layer_groups"] == imported("gpt-oss-20b")["layer_groups"]
    assert data["layer_groups"][0]["where"] == "i % 2 == 0: 0, 2, 4, ..., 22"
    assert data["layer_groups"][0]["kind"] == "sliding_window"


def test_qwen3_next_interval_and_layer_types_agree() -> None:
    data = imported("qwen3-next-80b-a3b")
    assert kinds(data) == [("linear_attention", 36), ("attention", 12)]
    assert data["layer_groups"][1]["where"] == "i % 4 == 3: 3, 7, 11, ..., 47"
    cfg = config("qwen3-next-80b-a3b")
    cfg["layer_types"] = [
        "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(48)
    ]
    del cfg["full_attention_interval"]
    assert imported("qwen3-next-80b-a3b", cfg)["layer_groups"] == data["layer_groups"]
    cfg = config("qwen3-next-80b-a3b")
    del cfg["linear_num_value_heads"]
    with pytest.raises(ConfigError, match="linear_num_value_heads"):
        imported("qwen3-next-80b-a3b", cfg)


def test_jamba_attention_by_period_and_offset() -> None:
    groups = imported("jamba-v0.1")["layer_groups"]
    assert [(g["kind"], g["layers"], g["where"]) for g in groups] == [
        ("mamba1", 28, "i % 8 != 4: 0-3, 5-11, 13-19, 21-27, 29-31"),
        ("attention", 4, "i % 8 == 4: 4, 12, 20, 28"),
    ]
    assert groups[0]["d_inner"] == 2 * 4096


def test_nemotron_h_pattern_characters() -> None:
    groups = imported("nemotron-h-8b")["layer_groups"]
    assert [(g["kind"], g["layers"]) for g in groups] == [
        ("mamba2", 24),
        ("none", 24),
        ("attention", 4),
    ]
    assert groups[2]["where"] == "pattern '*': 7, 18, 29, 40"
    cfg = config("nemotron-h-8b")
    cfg["hybrid_override_pattern"] = "ME*" + "-" * 49
    small = imported("nemotron-h-8b", cfg)
    assert kinds(small) == [("mamba2", 1), ("none", 50), ("attention", 1)]
    assert small["layer_groups"][1]["where"].startswith("pattern 'E' or '-': 1, 3, 4, 5,")
    cfg["hybrid_override_pattern"] = "MX" + "-" * 50
    with pytest.raises(ConfigError, match="'X'"):
        imported("nemotron-h-8b", cfg)
    cfg["hybrid_override_pattern"] = "M-*"
    with pytest.raises(ConfigError, match="3 characters; num_hidden_layers is 52"):
        imported("nemotron-h-8b", cfg)


def test_falcon_h1_mamba_head_dim_auto() -> None:
    cfg = config("falcon-h1-0.5b")
    cfg["mamba_d_head"] = "auto"
    data = imported("falcon-h1-0.5b", cfg)
    assert data["layer_groups"] == imported("falcon-h1-0.5b")["layer_groups"]
    assert "derived as mamba_d_ssm 1536 / mamba_n_heads 24 = 64" in data["notes"]
    cfg["mamba_d_head"] = 128
    with pytest.raises(ConfigError, match="mamba_d_head 128"):
        imported("falcon-h1-0.5b", cfg)


def test_weights_stored_quantized_leave_the_dtype_at_torch_dtype() -> None:
    """DeepSeek-V3 ships fp8 weights (quantization_config) with torch_dtype bfloat16: the
    model's dtype, which an 'auto' KV cache follows, is bfloat16, and the note says why."""
    data = imported("deepseek-v3")
    assert data["dtype"] == "bf16"
    assert "quant_method fp8" in data["notes"] and "weights precision per run" in data["notes"]
    cfg = config("deepseek-v3")
    del cfg["torch_dtype"]
    data = imported("deepseek-v3", cfg)
    assert data["dtype"] is None
    assert {"field": "dtype", "reason": "The config gives no torch_dtype."} in data["unknown"]


def test_deepseek_and_kimi_are_one_mla_group() -> None:
    data = imported("deepseek-v3")
    assert data["layer_groups"] == [
        {
            "kind": "mla",
            "layers": 61,
            "where": "all layers 0-60",
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
        }
    ]
    kimi = config("deepseek-v3")  # Kimi K2 uses the DeepSeek-V3 architecture
    kimi.update(model_type="kimi_k2", num_attention_heads=64, n_routed_experts=384)
    assert model_data_from_hf_config(kimi, "kimi-k2")["layer_groups"] == data["layer_groups"]


# ------------------------------------------------------------------------------------------
# Errors


def test_unknown_model_type_names_it_and_the_supported_ones() -> None:
    cfg = config("llama-3.1-8b")
    cfg["model_type"] = "bert"
    with pytest.raises(ConfigError) as raised:
        imported("llama-3.1-8b", cfg)
    message = str(raised.value)
    assert "'bert'" in message
    for supported in (
        "llama",
        "qwen3_next",
        "nemotron_h",
        "falcon_h1",
        "deepseek_v3",
        "gemma3_text",
    ):
        assert supported in message
    del cfg["model_type"]
    with pytest.raises(ConfigError, match="config has no model_type"):
        imported("llama-3.1-8b", cfg)


def test_missing_num_hidden_layers_is_named() -> None:
    cfg = config("jamba-v0.1")
    del cfg["num_hidden_layers"]
    with pytest.raises(ConfigError, match="config has no num_hidden_layers"):
        imported("jamba-v0.1", cfg)


def test_config_error_is_a_value_error_and_wrong_types_are_named() -> None:
    cfg = config("llama-3.1-8b")
    cfg["num_key_value_heads"] = "8"
    with pytest.raises(ValueError, match="num_key_value_heads must be a positive integer, got '8'"):
        imported("llama-3.1-8b", cfg)
    cfg = config("gpt-oss-20b")
    cfg["layer_types"] = cfg["layer_types"][:-1]
    with pytest.raises(ConfigError, match="layer_types lists 23 layers; num_hidden_layers is 24"):
        imported("gpt-oss-20b", cfg)
    cfg["layer_types"] = ["chunked_attention"] * 24
    with pytest.raises(ConfigError, match="layer_types\\[0\\] is 'chunked_attention'"):
        imported("gpt-oss-20b", cfg)


def test_bad_model_id_and_url_are_refused() -> None:
    with pytest.raises(ValueError, match="model id"):
        model_data_from_hf_config(config("llama-3.1-8b"), "Llama 3.1")
    with pytest.raises(ValueError, match="source url"):
        model_data_from_hf_config(config("llama-3.1-8b"), "llama-3.1-8b", source_url="ftp://x")


# ------------------------------------------------------------------------------------------
# Top-level fields


def test_source_url_and_citation() -> None:
    assert imported("llama-3.1-8b")["source"] == {"citation": DEFAULT_CITATION}
    url = "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"
    data = model_data_from_hf_config(
        config("llama-3.1-8b"), "llama-3.1-8b", source_url=url, source_citation="config.json @main"
    )
    assert data["source"] == {"url": url, "citation": "config.json @main"}
    assert list(data["source"]) == ["url", "citation"]


def test_name_and_hf_repo_from_name_or_path() -> None:
    data = imported("llama-3.1-8b")
    assert (data["name"], data["hf_repo"]) == ("Llama-3.1-8B", "meta-llama/Llama-3.1-8B")
    cfg = config("llama-3.1-8b")
    cfg["_name_or_path"] = "/scratch/ckpt/llama-8b-sft"
    local = imported("llama-3.1-8b", cfg)
    assert (local["name"], local["hf_repo"]) == ("llama-8b-sft", None)
    assert local["unknown"][0]["field"] == "hf_repo"
    assert "local path" in local["unknown"][0]["reason"]
    del cfg["_name_or_path"]
    assert imported("llama-3.1-8b", cfg)["name"] == "llama-3.1-8b"


def test_dtype_mapping() -> None:
    cfg = config("llama-3.1-8b")
    for given, expected in (("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp32")):
        cfg["torch_dtype"] = given
        assert imported("llama-3.1-8b", cfg)["dtype"] == expected
    del cfg["torch_dtype"]
    cfg["dtype"] = "float16"  # newer transformers write "dtype"
    assert imported("llama-3.1-8b", cfg)["dtype"] == "fp16"
    cfg["dtype"] = "auto"
    data = imported("llama-3.1-8b", cfg)
    assert data["dtype"] is None
    assert [u["field"] for u in data["unknown"]] == ["dtype"]


def test_import_does_not_modify_the_config() -> None:
    cfg = config("gemma-3-27b")
    before = copy.deepcopy(cfg)
    imported("gemma-3-27b", cfg)
    assert cfg == before


def test_supported_model_types() -> None:
    assert set(SUPPORTED_MODEL_TYPES) >= {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "qwen3_next",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "gpt_oss",
        "deepseek_v2",
        "deepseek_v3",
        "jamba",
        "nemotron_h",
        "falcon_h1",
        "phi3",
        "olmo3",
    }


def test_the_command_help_lists_the_supported_model_types() -> None:
    from kvrecords.cli.choices import HF_MODEL_TYPES

    assert HF_MODEL_TYPES == SUPPORTED_MODEL_TYPES


def test_describe_layers() -> None:
    assert describe_layers([0, 1, 2], 3) == "all layers 0-2"
    assert describe_layers([4, 5, 6], 8) == "layers 4-6"
    assert describe_layers([3], 8) == "layer 3"
    assert describe_layers(list(range(5, 60, 6)), 62) == "i % 6 == 5: 5, 11, 17, ..., 59"
    assert describe_layers([1, 4, 7], 9) == "i % 3 == 1: 1, 4, 7"
    assert describe_layers([0, 1, 3, 4], 6) == "i % 3 != 2: 0, 1, 3, 4"
    assert describe_layers([0, 2, 3, 9], 10) == "0, 2, 3, 9"


# ------------------------------------------------------------------------------------------
# Bytes per token through kvrecords.kv.arithmetic, computed by hand


def report(model_id: str, dtype: str, context: int) -> Any:
    return kv_report(model_from_data(imported(model_id)), parse_element_type(dtype), context)


def test_bytes_per_token_llama_3_1_8b() -> None:
    # 32 layers x 8 kv heads x (128 + 128) x 2 B = 32 x 4096 = 131,072 B/token
    result = report("llama-3.1-8b", "bf16", 1000)
    assert result.bytes_per_token == 131072
    assert result.kv_bytes_at_context == 131072 * 1000
    assert result.fixed_state_bytes == 0


def test_bytes_per_token_qwen3_32b_uses_head_dim_128() -> None:
    # 64 layers x 8 kv heads x (128 + 128) x 2 B = 64 x 4096 = 262,144 B/token
    # (hidden/heads = 80 would give 64 x 8 x 160 x 2 = 163,840: 37.5 % too little)
    assert report("qwen3-32b", "bf16", 1).bytes_per_token == 262144


def test_bytes_gemma_2_9b_with_window_capped() -> None:
    # per token: 42 layers x 8 x (256 + 256) x 2 B = 42 x 8192 = 344,064 B/token
    # at 8192 tokens: 21 sliding layers hold 4096 tokens, 21 global layers hold 8192:
    #   21 x 8192 x 4096 + 21 x 8192 x 8192 = 704,643,072 + 1,409,286,144 = 2,113,929,216 B
    result = report("gemma-2-9b", "bf16", 8192)
    assert result.bytes_per_token == 344064
    assert result.kv_bytes_at_context == 2113929216


def test_bytes_falcon_h1_parallel_attention_and_state() -> None:
    # attention: 36 layers x 2 kv heads x (64 + 64) x 2 B = 18,432 B/token
    # Mamba-2 state per layer: conv (4 - 1) x (24 x 64 + 2 x 1 x 128) = 3 x 1792 = 5,376
    #   + ssm 24 x 64 x 128 = 196,608 -> 201,984 elements; 36 layers x 201,984 x 2 B = 14,542,848 B
    result = report("falcon-h1-0.5b", "bf16", 100)
    assert result.bytes_per_token == 18432
    assert result.fixed_state_bytes == 14542848


def test_bytes_per_token_deepseek_v3_mla_fp8() -> None:
    # 61 layers x (512 + 64) x 1 B (fp8) = 35,136 B/token; no K/V factor 2
    assert report("deepseek-v3", "fp8", 1).bytes_per_token == Fraction(35136)


# ------------------------------------------------------------------------------------------
# Written by fmt


@pytest.mark.parametrize("model_id", [*MODEL_IDS, "olmo-3-7b"])
def test_yaml_is_what_fmt_writes(model_id: str) -> None:
    text = model_yaml_from_hf_config(config(model_id), model_id, SCHEMA)
    assert format_text(text, "model", SCHEMA) == text


# ------------------------------------------------------------------------------------------
# OLMo 3 and other configs read through their layer_types


def test_olmo3_reads_layer_types_sliding_window_and_derives_head_dim() -> None:
    data = imported("olmo-3-7b")
    assert [(g["kind"], g["layers"], g["where"]) for g in data["layer_groups"]] == [
        ("sliding_window", 24, "i % 4 != 3: 0-2, 4-6, 8-10, ..., 24-26, 28-30"),
        ("attention", 8, "i % 4 == 3: 3, 7, 11, ..., 31"),
    ]
    assert data["layer_groups"][0]["window"] == 4096
    assert {g["kv_heads"] for g in data["layer_groups"]} == {32}
    assert {g["head_dim"] for g in data["layer_groups"]} == {128}
    assert "derived as hidden_size / num_attention_heads = 4096 / 32 = 128" in data["notes"]
    assert (data["dtype"], data["max_context_tokens"]) == ("bf16", 65536)
    assert data["architecture"] == "MHA, 24 sliding window (4096) and 8 full attention layers"


def test_olmo3_bytes_with_windows_filled() -> None:
    # per token: 32 layers x 32 kv heads x (128 + 128) x 2 B = 32 x 16,384 = 524,288 B/token
    # at 65,536 tokens: 24 sliding layers hold 4,096 tokens, 8 full layers hold 65,536:
    #   24 x 16,384 x 4,096 + 8 x 16,384 x 65,536 = 1,610,612,736 + 8,589,934,592
    #   = 10,200,547,328 B
    result = report("olmo-3-7b", "bf16", 65536)
    assert result.bytes_per_token == 524288
    assert result.kv_bytes_at_context == 10200547328


def test_olmo3_without_layer_types_makes_every_fourth_layer_full() -> None:
    cfg = config("olmo-3-7b")
    del cfg["layer_types"]
    data = imported("olmo-3-7b", cfg)
    assert data["layer_groups"] == imported("olmo-3-7b")["layer_groups"]
    assert "(i + 1) % 4 == 0" in data["notes"]
    del cfg["sliding_window"]
    with pytest.raises(ConfigError, match="config has no sliding_window"):
        imported("olmo-3-7b", cfg)


def unknown_family(**changes: Any) -> dict[str, Any]:
    """The OLMo 3 config under a model_type import does not know, with head_dim stated."""
    cfg = config("olmo-3-7b")
    cfg.update(model_type="someone_elses_lm", head_dim=128)
    cfg.update(changes)
    return cfg


def test_any_model_type_is_read_through_layer_types() -> None:
    data = model_data_from_hf_config(unknown_family(), "other")
    assert data["layer_groups"] == imported("olmo-3-7b")["layer_groups"]
    assert "read through its layer_types alone" in data["notes"]
    assert "derived" not in data["notes"]


def test_any_model_type_must_state_head_dim_and_kv_heads() -> None:
    for field in ("head_dim", "num_key_value_heads"):
        cfg = unknown_family()
        del cfg[field]
        with pytest.raises(ConfigError) as raised:
            model_data_from_hf_config(cfg, "other")
        message = str(raised.value)
        assert message.startswith(f"config has no {field} (needed for model_type someone_elses_lm)")
        assert "its default is not assumed" in message
        assert "write models/<id>.yaml by hand" in message
    cfg = unknown_family()
    del cfg["sliding_window"]
    with pytest.raises(ConfigError, match="config has no sliding_window"):
        model_data_from_hf_config(cfg, "other")


def test_any_model_type_takes_only_full_and_sliding_layers() -> None:
    cfg = unknown_family(layer_types=["full_attention"] * 31 + ["linear_attention"])
    with pytest.raises(ConfigError) as raised:
        model_data_from_hf_config(cfg, "other")
    message = str(raised.value)
    assert "layer_types[31] is 'linear_attention'" in message
    assert "supported: full_attention, sliding_attention" in message
    assert "write models/<id>.yaml by hand, following schema/model.schema.json" in message


def test_unknown_model_type_without_layer_types_says_which_keys_it_needs() -> None:
    cfg = unknown_family()
    del cfg["layer_types"]
    with pytest.raises(ConfigError) as raised:
        model_data_from_hf_config(cfg, "other")
    message = str(raised.value)
    assert message.startswith("unknown model_type 'someone_elses_lm' and no layer_types")
    for needed in (
        "num_hidden_layers",
        "layer_types",
        "sliding_window",
        "num_key_value_heads",
        "head_dim",
    ):
        assert needed in message.split("is read when it has", 1)[1]
    assert "write models/<id>.yaml by hand" in message


def test_command_writes_a_file_that_validates_and_refuses_to_overwrite(empty_dataset: Path) -> None:
    config_path = CONFIGS / "no_model_file" / "olmo-3-7b.json"
    done = run_cli("model", "import-hf", str(config_path), "--id", "olmo-3-7b", cwd=empty_dataset)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "wrote models/olmo-3-7b.yaml; check it with: kvrecords validate models/olmo-3-7b.yaml\n"
    )
    checked = run_cli("validate", "models/olmo-3-7b.yaml", cwd=empty_dataset)
    assert (checked.returncode, checked.stdout) == (0, "1 file checked, no problems\n")
    formatted = run_cli("fmt", "--check", "models/olmo-3-7b.yaml", cwd=empty_dataset)
    assert formatted.returncode == 0, formatted.stdout
    again = run_cli("model", "import-hf", str(config_path), "--id", "olmo-3-7b", cwd=empty_dataset)
    assert again.returncode == 2
    assert "exists; remove it first or choose another id" in again.stderr


def test_command_names_the_missing_key_and_the_way_by_hand(empty_dataset: Path) -> None:
    cfg = unknown_family()
    del cfg["head_dim"]
    path = empty_dataset / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    done = run_cli("model", "import-hf", str(path), "--id", "other", cwd=empty_dataset)
    assert done.returncode == 2
    assert done.stderr.startswith(f"kvrecords: {path}: config has no head_dim")
    assert "write models/<id>.yaml by hand" in done.stderr
    assert not (empty_dataset / "models" / "other.yaml").exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # past Python's 4,300-digit limit for reading an integer
        ('{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}", "4300 digits"),
        ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    ],
)
def test_a_hostile_config_is_refused_with_its_reason(
    empty_dataset: Path, text: str, reason: str
) -> None:
    path = empty_dataset / "config.json"
    path.write_text(text, encoding="utf-8")
    done = run_cli("model", "import-hf", str(path), "--id", "hostile", cwd=empty_dataset)
    assert done.returncode == 2 and "internal error" not in done.stderr
    assert done.stderr.startswith(f"kvrecords: {path}: not a readable JSON config")
    assert reason in done.stderr
    assert not (empty_dataset / "models" / "hostile.yaml").exists()
