"""``kvrecords kv --engine``: the engine's allocation beside the logical figure in the same dtype.

The figures are worked by hand from the model files:
- llama-3.1-8b: 32 layers x 8 kv heads x (128 + 128) values per token. In fp8 (1 B) that is
  65,536 B/token, 8,192 tokens x 65,536 B = 536,870,912 B; in bf16 (2 B) twice that,
  1,073,741,824 B.
- qwen3-8b: 36 layers x 8 kv heads x (128 + 128) = 73,728 values per token; q8_0 stores 32
  values in 34 bytes, so 73,728 x 34 / 32 = 78,336 B/token, 2,560 tokens x 78,336 B =
  200,540,160 B; bf16: 147,456 B/token, 2,560 x 147,456 = 377,487,360 B.
"""

from __future__ import annotations

import json

from conftest import REPO, run_cli


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = run_cli("kv", *args, "--format", "json", cwd=REPO)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_an_fp8_engine_cache_is_compared_with_the_fp8_logical_figure() -> None:
    data = _json("llama-3.1-8b", "--context", "8192", "--engine", "vllm", "--kv-cache-dtype", "fp8")
    assert data["kv_bytes_at_context"] == 1_073_741_824  # the report itself stays bf16
    assert data["engine_kv_dtype"] == "fp8"
    assert data["logical_dtype"] == "fp8" and data["dtypes_differ"] is False
    assert data["logical_total_bytes"] == 536_870_912
    # 8,192 tokens fill 128 whole blocks of 64: the engine allocates what the arithmetic says
    assert data["engine_kv_bytes"] == 536_870_912
    assert data["difference_bytes"] == 0


def test_the_text_names_the_dtype_compared_and_reports_no_dtype_change_as_a_saving() -> None:
    result = run_cli(
        "kv", "llama-3.1-8b", "--context", "8192", "--engine", "vllm", "--kv-cache-dtype", "fp8",
        cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "engine allocates (fp8 cache): 536,870,912 B" in result.stdout
    assert "logical (fp8 KV, bf16 state): 536,870,912 B" in result.stdout
    assert "difference: +0 B" in result.stdout
    assert "-50%" not in result.stdout
    assert "in bf16, as above, it is 1,073,741,824 B" in result.stdout


def test_a_quantized_llamacpp_cache_is_compared_in_its_own_type_scales_included() -> None:
    data = _json(
        "qwen3-8b", "--context", "2560", "--engine", "llamacpp", "-ctk", "q8_0", "-ctv", "q8_0"
    )
    assert data["logical_dtype"] == "q8_0" and data["dtypes_differ"] is False
    assert data["logical_total_bytes"] == 200_540_160
    assert data["engine_kv_bytes"] == 200_540_160


def test_k_and_v_of_different_types_are_said_to_differ_from_the_logical_dtype() -> None:
    data = _json("qwen3-8b", "--context", "2560", "--engine", "llamacpp", "-ctk", "q8_0")
    assert data["engine_kv_dtype"] == "K q8_0, V f16"
    assert data["dtypes_differ"] is True
    assert data["logical_dtype"] == "bf16" and data["logical_total_bytes"] == 377_487_360
    text = run_cli(
        "kv", "qwen3-8b", "--context", "2560", "--engine", "llamacpp", "-ctk", "q8_0", cwd=REPO
    )
    assert (
        "the dtypes differ: the engine caches K q8_0, V f16 (K and V in different types), the"
        " logical figure is bf16" in text.stdout
    )
    assert "the difference includes the change of dtype" in text.stdout


def test_auto_is_the_model_s_own_dtype() -> None:
    data = _json("llama-3.1-8b", "--context", "8192", "--engine", "vllm")
    assert data["engine_kv_dtype"] == "auto (bf16, the model's dtype)"
    assert data["logical_dtype"] == "bf16" and data["dtypes_differ"] is False
    assert data["logical_total_bytes"] == data["engine_kv_bytes"] == 1_073_741_824
    # asked for an fp8 report of a bf16 engine cache, the comparison is still in bf16
    asked = _json("llama-3.1-8b", "--context", "8192", "--dtype", "fp8", "--engine", "vllm")
    assert asked["kv_bytes_at_context"] == 536_870_912
    assert asked["logical_total_bytes"] == 1_073_741_824 and asked["difference_bytes"] == 0
