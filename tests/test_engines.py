"""Engine models against figures the engines printed in public logs (docs/calibration.md).

Every expected number below is either an engine's printed figure, quoted from the public issue
or pull request named beside it, or a hand computation shown in the comment; none is the
code's own output pasted back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.engines import (
    CACHES,
    ENGINES,
    EngineError,
    NoSuchCache,
    NotCovered,
    UnknownValue,
    bytes_of,
    engine_report,
    llamacpp,
    sglang,
    vllm,
)
from kvrecords.kv.engines.result import mib_as_printed
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent
from kvrecords.tools.engine_logs import LogError, read_log, read_log_file, render

GIB = 1 << 30
MIB = 1 << 20


def model(model_id: str) -> Model:
    return load_model_file(REPO / "models" / f"{model_id}.yaml")


def printed_sizes(line: str) -> tuple[str, ...]:
    """The MiB figures of a llama.cpp size line, in order (total, K, V)."""
    return tuple(word for word in line.replace(",", " ").split() if word.count(".") == 1)


# --- ggml block sizes (ggml/src/ggml-common.h) -------------------------------------------


@pytest.mark.parametrize(
    ("name", "block", "block_bytes"),
    [
        ("q8_0", 32, 34),  # fp16 scale + 32 int8
        ("q4_0", 32, 18),  # fp16 scale + 16 bytes of nibbles
        ("q4_1", 32, 20),  # fp16 scale and min + 16
        ("q5_0", 32, 22),  # fp16 + 4 bytes of fifth bits + 16
        ("q5_1", 32, 24),  # two fp16 + 4 + 16
        ("iq4_nl", 32, 18),  # fp16 + 16
        ("f16", 1, 2),
        ("bf16", 1, 2),
        ("f32", 1, 4),
    ],
)
def test_llamacpp_cache_type_sizes(name: str, block: int, block_bytes: int) -> None:
    assert llamacpp.CACHE_TYPES[name] == (block, block_bytes)


def test_sizes_print_as_llamacpp_rounds_them() -> None:
    # 61 x 576 x 34/32 x 32768 = 1,223,294,976 B = 1166.625 MiB exactly; printf rounds the tie
    # to even: 1166.62 (as ik_llama.cpp PR #259 shows)
    assert mib_as_printed(1_223_294_976) == "1166.62"
    # 2**33 + 1 bytes is not a float32: it prints as 8192.00
    assert mib_as_printed(2**33 + 1) == "8192.00"


# --- llama.cpp: dense GQA ------------------------------------------------------------------


def test_llamacpp_q8_0_dense_gqa_issue_11200() -> None:
    # https://github.com/ggml-org/llama.cpp/issues/11200 (January 2025), Qwen2.5-Coder 32B:
    #   llama_kv_cache_init: kv_size = 32768, ..., type_k = 'q8_0', type_v = 'q8_0', n_layer = 64
    #   llama_new_context_with_model: KV self size  = 4352.00 MiB, K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB
    # Its K/V shape (64 layers x 8 kv heads x 128) is the one models/qwen3-32b.yaml holds.
    # By hand: 64 layers x 32768 cells x 1024 values x 34/32 B = 2,281,701,376 B = 2176 MiB per K.
    report = engine_report(
        model("qwen3-32b"),
        "llamacpp",
        32768,
        version="2024-05-pad-by-fa",
        cache_type_k="q8_0",
        cache_type_v="q8_0",
        flash_attn="on",
    )
    assert report.engine_kv_bytes == 2 * 2_281_701_376
    (line,) = report.printed
    assert line == (
        "llama_new_context_with_model: KV self size  = 4352.00 MiB,"
        " K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB"
    )


@pytest.mark.parametrize(
    ("cache_type", "printed"),
    [
        # https://github.com/ggml-org/llama.cpp/pull/21551, "Bonsai 8B" table ("kvcache size")
        ("f16", "360.00"),  # 36 x 2560 x 2048 values x 2 B = 377,487,360 B
        ("q8_0", "191.25"),  # 36 x 2560 x 2048 x 34/32 = 200,540,160 B
        ("q4_0", "101.25"),  # 36 x 2560 x 2048 x 18/32 = 106,168,320 B
        ("iq4_nl", "101.25"),  # same block size as q4_0
    ],
)
def test_llamacpp_quantized_caches_pr_21551_qwen3_8b_shape(cache_type: str, printed: str) -> None:
    # The table does not print cells; 2,560 (10 x 256) is the only count that gives 360.00 MiB
    # in f16 for the Qwen3-8B shape (36 layers x 8 kv heads x 128), and the quantized rows then
    # follow exactly.
    report = engine_report(
        model("qwen3-8b"), "llamacpp", 2560, cache_type_k=cache_type, cache_type_v=cache_type
    )
    assert printed_sizes(report.printed[0])[0] == printed


@pytest.mark.parametrize(
    ("cache_type", "printed"),
    [("f16", "1040.00"), ("q8_0", "552.50"), ("q4_0", "292.50")],
)
def test_llamacpp_quantized_caches_pr_21551_24b(cache_type: str, printed: str) -> None:
    # Same table, "Magidonia 24b" (a Mistral Small 24B finetune: 40 layers x 8 kv heads x 128).
    # 1040 x 17/32 = 552.5 and 1040 x 9/32 = 292.5 hold whatever the shape; 6,656 cells gives 1040.
    shape = Model("mistral-small-24b-shape", "40 x 8 x 128", 40, (Attention(40, 8, 128),))
    report = engine_report(
        shape, "llamacpp", 6656, cache_type_k=cache_type, cache_type_v=cache_type
    )
    assert printed_sizes(report.printed[0])[0] == printed


def test_llamacpp_k_and_v_types_apart() -> None:
    # -ctk q8_0 -ctv q4_0 on qwen3-8b at 4096 cells: K 36 x 4096 x 1024 x 34/32 = 160,432,128 B,
    # V 36 x 4096 x 1024 x 18/32 = 84,934,656 B
    report = engine_report(
        model("qwen3-8b"), "llamacpp", 4096, cache_type_k="q8_0", cache_type_v="q4_0"
    )
    assert [part.bytes for part in report.parts] == [160_432_128, 84_934_656]
    assert "K (q8_0)" in report.printed[0] and "V (q4_0)" in report.printed[0]


@pytest.mark.parametrize(
    ("version", "flash_attn", "cells"),
    [
        ("latest", "auto", 5120),  # padded to 256 (PR #17046)
        ("2025-10-no-pad", "auto", 5000),  # PR #16812: no padding
        ("2024-05-pad-by-fa", "off", 5024),  # PR #7257: 32 without flash attention
        ("2024-05-pad-by-fa", "on", 5120),  # 256 with it
    ],
)
def test_llamacpp_cell_padding_by_version(version: str, flash_attn: str, cells: int) -> None:
    report = engine_report(
        model("llama-3.1-8b"), "llamacpp", 5000, version=version, flash_attn=flash_attn
    )
    # 32 layers x cells x 1024 values x 2 B, for K and for V
    assert report.engine_kv_bytes == 2 * 32 * cells * 1024 * 2


def test_llamacpp_padding_that_depends_on_flash_attention_needs_it_stated() -> None:
    with pytest.raises(EngineError, match="--flash-attn on or off"):
        engine_report(model("llama-3.1-8b"), "llamacpp", 4096, version="2025-07-streams")
    with pytest.raises(EngineError, match="without flash attention"):
        engine_report(
            model("llama-3.1-8b"), "llamacpp", 4096, cache_type_v="q8_0", flash_attn="off"
        )


def test_llamacpp_per_sequence_streams_pad_each_sequence() -> None:
    # -c 10000 -np 3 without --kv-unified (PR #17046): n_ctx 10240, per sequence
    # PAD(10240 / 3 = 3413, 256) = 3584 cells x 3 streams
    report = engine_report(model("llama-3.1-8b"), "llamacpp", 10000, parallel=3)
    assert report.engine_kv_bytes == 2 * 32 * 3584 * 3 * 1024 * 2
    assert "3584 cells" in report.printed[0] and " 3/3 seqs" in report.printed[0]
    unified = engine_report(model("llama-3.1-8b"), "llamacpp", 10000, parallel=3, kv_unified=True)
    assert unified.engine_kv_bytes == 2 * 32 * 10240 * 1024 * 2


# --- llama.cpp: MLA ------------------------------------------------------------------------


def test_llamacpp_mla_stores_k_only_pr_259() -> None:
    # https://github.com/ikawrakow/ik_llama.cpp/pull/259, DeepSeek-R1 (the fork stores the
    # latent once, as upstream does since PR #19067), -c 32768 with a q8_0 cache:
    #   llama_new_context_with_model: KV self size  = 1166.62 MiB, c^KV (q8_0): 1166.62 MiB, kv^T: not used
    # By hand: 61 layers x 32768 x (512 + 64) x 34/32 = 1,223,294,976 B = 1166.625 MiB.
    report = engine_report(
        model("deepseek-v3"), "llamacpp", 32768, cache_type_k="q8_0", cache_type_v="q8_0"
    )
    assert report.engine_kv_bytes == 1_223_294_976
    assert printed_sizes(report.printed[0])[:2] == ("1166.62", "1166.62")


def test_llamacpp_mla_before_v_less_keeps_the_latent_twice() -> None:
    # K as above plus V: 61 x 32768 x 512 x 34/32 = 1,087,373,312 B (1037.00 MiB)
    report = engine_report(
        model("deepseek-v3"),
        "llamacpp",
        32768,
        version="2025-11-pad-256",
        cache_type_k="q8_0",
        cache_type_v="q8_0",
    )
    assert [part.bytes for part in report.parts] == [1_223_294_976, 1_087_373_312]
    assert printed_sizes(report.printed[0]) == ("2203.62", "1166.62", "1037.00")


def test_llamacpp_mla_before_the_latent_cache_is_not_covered() -> None:
    with pytest.raises(NotCovered, match="decompressed"):
        engine_report(
            model("deepseek-v3"), "llamacpp", 4096, version="2024-05-pad-by-fa", flash_attn="on"
        )


# --- llama.cpp: sliding window and recurrent state -----------------------------------------

GEMMA3_270M = Model(
    "gemma-3-270m-shape",
    "18 layers: 15 window 512 + 3 global, 1 kv head x 256",
    18,
    (Attention(15, 1, 256, window=512), Attention(3, 1, 256)),
)


@pytest.mark.parametrize(("slots", "mib"), [(3, 27), (4, 18)])
def test_llamacpp_window_cache_unsloth_pr_7530(slots: int, mib: int) -> None:
    # https://github.com/unslothai/unsloth/pull/7530 (llama.cpp build 10107, Gemma 3 270M):
    # "ctx 1024 with 3 slots allocates 1536 cells / 27.0 MiB, but 4 slots allocates 1024 cells /
    # 18.0 MiB". By hand (f16, 1024 B per cell per layer): 3 slots: PAD(1024 / 3, 256) = 512
    # cells per slot; 3 global x 1536 + 15 window x min(512, 512 + 512) x 3 = 27 MiB.
    # 4 slots: 256 per slot; 3 x 1024 + 15 x 256 x 4 = 18 MiB.
    report = engine_report(GEMMA3_270M, "llamacpp", 1024, parallel=slots)
    assert report.engine_kv_bytes == mib * MIB


def test_llamacpp_window_cache_cells_and_swa_full() -> None:
    # gemma-3-27b at -c 32768: 52 window layers keep PAD(min(32768, 1024 + 512), 256) = 1536
    # cells; with --swa-full all 32768. Per cell and layer 16 heads x 128 x 2 B = 4096 B each.
    small = engine_report(model("gemma-3-27b"), "llamacpp", 32768)
    full = engine_report(model("gemma-3-27b"), "llamacpp", 32768, swa_full=True)
    assert small.engine_kv_bytes == 2 * 4096 * (10 * 32768 + 52 * 1536)
    assert full.engine_kv_bytes == 2 * 4096 * 62 * 32768
    assert "  1536 cells,  52 layers" in small.printed[1]


def test_llamacpp_window_only_models_are_not_guessed() -> None:
    with pytest.raises(NotCovered, match="architecture"):
        engine_report(model("mistral-7b-v0.1"), "llamacpp", 8192)
    report = engine_report(model("mistral-7b-v0.1"), "llamacpp", 8192, swa_full=True)
    assert report.engine_kv_bytes == 2 * 32 * 8192 * 1024 * 2


def test_llamacpp_recurrent_state_in_f32() -> None:
    # qwen3-next-80b-a3b: 36 Gated DeltaNet layers, one sequence, f32:
    # R 36 x 3 x (2 x 16 x 128 + 32 x 128) x 4 = 3,538,944 B; S 36 x 32 x 128 x 128 x 4 =
    # 75,497,472 B. Attention: 12 x 32768 x 512 x 2 B = 402,653,184 B each for K and V.
    report = engine_report(model("qwen3-next-80b-a3b"), "llamacpp", 32768)
    assert [part.bytes for part in report.parts] == [
        402_653_184,
        402_653_184,
        3_538_944,
        75_497_472,
    ]


# --- one printed cache (engine_accounting.cache) --------------------------------------------


def test_llamacpp_prints_each_cache_apart_gemma_4_e4b_issue_21730() -> None:
    # https://github.com/ggml-org/llama.cpp/issues/21730 (build b8801, default 131,072 cells,
    # -np 1): "llama_kv_cache: size = 2048.00 MiB (131072 cells,   4 layers,  1/1 seqs)" and
    # "creating     SWA KV cache, size = 1024 cells". By hand: the full-attention cache is 4
    # layers x 131,072 cells x 2 kv heads x (512 + 512) x 2 B = 2,147,483,648 B = 2048.00 MiB;
    # the window cache PAD(min(131072, 512 + 512), 256) = 1,024 cells x 20 layers x 2 kv heads x
    # (256 + 256) x 2 B = 41,943,040 B = 40.00 MiB (its size line is not in the issue).
    report = engine_report(model("gemma-4-e4b"), "llamacpp", 131072, parallel=1)
    assert report.caches == ("total", "full_attention", "sliding_window")
    full = bytes_of(report.cache_parts("full_attention"))
    window = bytes_of(report.cache_parts("sliding_window"))
    assert full == 2_147_483_648
    assert window == 41_943_040
    assert mib_as_printed(2_147_483_648) == "2048.00"
    assert report.engine_kv_bytes == 2_147_483_648 + 41_943_040
    assert report.cache_parts("total") == report.parts
    assert printed_sizes(report.printed[0]) == ("2048.00", "1024.00", "1024.00")
    assert "  1024 cells,  20 layers" in report.printed[1]


def test_llamacpp_full_attention_cache_gemma_3n_e4b_issue_14604() -> None:
    # https://github.com/ggml-org/llama.cpp/issues/14604 (-c 32768): "llama_kv_cache_unified:
    # size =  256,00 MiB ( 32768 cells,   4 lay". By hand: 4 layers x 32,768 cells x 2 kv heads
    # x (256 + 256) x 2 B = 268,435,456 B = 256.00 MiB, in every version with a window cache.
    for version in ("2025-05-swa", "2025-07-streams", "latest"):
        report = engine_report(model("gemma-3n-e4b"), "llamacpp", 32768, version, flash_attn="off")
        assert bytes_of(report.cache_parts("full_attention")) == 268_435_456


def test_llamacpp_recurrent_state_is_a_cache_of_its_own() -> None:
    # qwen3-next-80b-a3b: llama_memory_recurrent prints its own size line; R + S as in
    # test_llamacpp_recurrent_state_in_f32: 3,538,944 + 75,497,472 B.
    report = engine_report(model("qwen3-next-80b-a3b"), "llamacpp", 32768)
    assert report.caches == ("total", "full_attention", "recurrent_state")
    assert bytes_of(report.cache_parts("recurrent_state")) == 3_538_944 + 75_497_472
    assert bytes_of(report.cache_parts("full_attention")) == 2 * 402_653_184


def test_a_cache_the_engine_does_not_build_is_refused() -> None:
    dense = engine_report(model("qwen3-8b"), "llamacpp", 2560)
    assert dense.caches == ("total", "full_attention")
    with pytest.raises(NoSuchCache, match="prints no sliding_window cache size"):
        dense.cache_parts("sliding_window")
    # before PR #13194 window layers sit in the one cache, at full size
    old = engine_report(
        model("gemma-3-27b"), "llamacpp", 32768, "2024-05-pad-by-fa", flash_attn="on"
    )
    assert old.caches == ("total", "full_attention")
    assert bytes_of(old.cache_parts("full_attention")) == old.engine_kv_bytes
    with pytest.raises(NoSuchCache):
        old.cache_parts("sliding_window")
    # vLLM and SGLang print one figure for the whole allocation
    pages = engine_report(model("gemma-3-27b"), "vllm", 32768)
    assert pages.caches == ("total",)
    with pytest.raises(NoSuchCache, match="the sizes it prints: total"):
        pages.cache_parts("sliding_window")
    with pytest.raises(UnknownValue, match="allowed: total, full_attention"):
        pages.cache_parts("swa")


def test_the_schema_names_the_caches_the_engine_models_do() -> None:
    schema = json.loads((REPO / "schema" / "record.schema.json").read_text(encoding="utf-8"))
    accounting = schema["$defs"]["metric"]["properties"]["engine_accounting"]
    assert tuple(accounting["properties"]["cache"]["enum"]) == CACHES


# --- vLLM ----------------------------------------------------------------------------------

QWEN3_30B_A3B_SHAPE = Model(
    "qwen3-30b-a3b-shape", "48 layers x 4 kv heads x 128", 48, (Attention(48, 4, 128),)
)


def test_vllm_fp8_per_token_bytes_issue_25350() -> None:
    # https://github.com/vllm-project/vllm/issues/25350 (vLLM 0.10.x, --kv-cache-dtype fp8):
    #   Available KV cache memory: 10.55 GiB / GPU KV cache size: 230,528 tokens /
    #   Maximum concurrency for 100,000 tokens per request: 2.31x
    #   (221000): 10.12 GiB KV cache is needed ... (5.59 GiB) ... estimated maximum model length
    #   is 122080
    # The excerpt does not name the model; every figure fixes 49,152 B per token in fp8
    # = 48 layers x 2 x 4 kv heads x 128 x 1 B. By hand: 230,528 tokens = 14,408 blocks of 16;
    # the least memory for them is 14,408 x 16 x 49,152 = 11,330,912,256 B = 10.5527 GiB.
    options = vllm.VllmOptions(version="0.10.2", kv_cache_dtype="fp8")
    report = vllm.report(QWEN3_30B_A3B_SHAPE, 100_000, options)
    assert report.engine_kv_bytes == 6250 * 16 * 49_152  # cdiv(100000, 16) blocks
    memory = 14_408 * 16 * 49_152
    assert f"{memory / GIB:.2f}" == "10.55"
    result = vllm.capacity(QWEN3_30B_A3B_SHAPE, options, memory, 100_000)
    assert result.printed == (
        "GPU KV cache size: 230,528 tokens",
        "Maximum concurrency for 100,000 tokens per request: 2.31x",
    )
    # 221,000 x 49,152 = 10,862,592,000 B = 10.116 GiB
    assert vllm.needed_gib(QWEN3_30B_A3B_SHAPE, options, 221_000) == "10.12"
    low = vllm.max_model_len(QWEN3_30B_A3B_SHAPE, options, int(5.585 * GIB), 221_000)
    high = vllm.max_model_len(QWEN3_30B_A3B_SHAPE, options, int(5.595 * GIB), 221_000)
    assert low <= 122_080 <= high


def test_vllm_dense_gqa_recipes_pr_12() -> None:
    # https://github.com/vllm-project/recipes/pull/12 (v0.10.1.dev), Qwen3-Coder-480B-A35B-FP8:
    #   (262144), (62.00 GiB KV cache is needed, ... (48.66 GiB). ... estimated maximum model
    #   length is 205728 / with 55.65 GiB available: 235296
    # By hand: 62 layers x 2 x 8 x 128 x 2 B = 253,952 B per token; x 262,144 = 62 GiB exactly.
    qwen = model("qwen3-coder-480b-a35b")
    options = vllm.VllmOptions(version="0.10.1")
    assert vllm.needed_gib(qwen, options, 262_144) == "62.00"
    for shown, expected in (("48.66", 205_728), ("55.65", 235_296)):
        centre = float(shown)
        low = vllm.max_model_len(qwen, options, int((centre - 0.005) * GIB), 262_144)
        high = vllm.max_model_len(qwen, options, int((centre + 0.005) * GIB), 262_144)
        assert low <= expected <= high


def test_vllm_hybrid_block_size_pr_32492() -> None:
    # https://github.com/vllm-project/vllm/pull/32492: Qwen3-Next "uses non-standard block size
    # (544)". By hand: state page = (24,576 + 524,288) x 2 B = 1,097,728 B; attention per token
    # 2 x 2 heads x 256 x 2 B = 2,048 B; 16 x cdiv(1,097,728, 16 x 2,048) = 16 x 34 = 544 tokens,
    # page 1,114,112 B; padding (1,114,112 - 1,097,728) / 1,097,728 = 1.49 %.
    # (0.25.1: the last release before hybrid models default to prefix caching)
    report = vllm.report(model("qwen3-next-80b-a3b"), 32768, vllm.VllmOptions(version="0.25.1"))
    assert report.printed[0].startswith("Setting attention block size to 544 tokens")
    assert report.printed[1].startswith("Padding mamba page size by 1.49%")
    # 12 attention layers x cdiv(32768, 544) = 61 pages + 36 state layers x 1 page
    assert report.engine_kv_bytes == (12 * 61 + 36) * 1_114_112


def test_vllm_turboquant_slots_and_boundary_layers() -> None:
    # turboquant/config.py at head_dim 128: k8v4 128 + (64 + 4) = 196; 4bit_nc (64 + 2) + 68 =
    # 134; k3v4_nc (48 + 2) + 68 = 118; 3bit_nc 50 + (48 + 4) = 102.
    # https://github.com/vllm-project/vllm/pull/38479's table prints 196, 136, 120, 104: the
    # same layout with a 4-byte key norm.
    stored = [vllm.turboquant_slot_bytes(p, 128) for p in vllm.TURBOQUANT_PRESETS]
    table = [vllm.turboquant_slot_bytes(p, 128, key_norm_bytes=4) for p in vllm.TURBOQUANT_PRESETS]
    assert stored == [196, 134, 118, 102]
    assert table == [196, 136, 120, 104]
    # llama-3.1-8b, k8v4: layers 0, 1, 30, 31 stay bf16 (8 x 256 x 2 = 4,096 B per token), the
    # other 28 take 8 heads x 196 B = 1,568 B: 4 x 4,096 + 28 x 1,568 = 60,288 B per token.
    report = vllm.report(
        model("llama-3.1-8b"), 32768, vllm.VllmOptions(kv_cache_dtype="turboquant_k8v4")
    )
    assert report.engine_kv_bytes == 60_288 * 32768
    with pytest.raises(NotCovered, match=r"0\.20\.0"):
        vllm.report(
            model("llama-3.1-8b"),
            4096,
            vllm.VllmOptions(kv_cache_dtype="turboquant_k8v4", version="0.19.0"),
        )


def test_vllm_deepseek_v32_fp8_ds_mla_and_indexer() -> None:
    # 656 B (512 fp8 + 16 B scales + 64 bf16) + 132 B indexer (128 fp8 + 4 B scale) per token and
    # layer: 61 x 788 = 48,068 B per token; 32768 tokens fill 512 blocks of 64.
    report = vllm.report(model("deepseek-v3.2"), 32768, vllm.VllmOptions(kv_cache_dtype="fp8"))
    assert report.engine_kv_bytes == 61 * 788 * 32768
    assert "Using custom fp8 kv-cache format for DeepSeekV3.2" not in report.printed
    # models/config.py prints that line in 0.11.0-0.12.0 only
    older = vllm.VllmOptions(kv_cache_dtype="fp8", version="0.12.0")
    assert (
        "Using custom fp8 kv-cache format for DeepSeekV3.2"
        in vllm.report(model("deepseek-v3.2"), 32768, older).printed
    )


def test_vllm_reads_the_indexer_from_the_model_file() -> None:
    # the same geometry without its indexer is DeepSeek-V3 to vLLM: bf16 latent only,
    # 61 x 576 x 2 = 70,272 B per token, and fp8 stays plain fp8 (61 x 576 = 35,136)
    v32 = model("deepseek-v3.2")
    plain = Model(v32.id, v32.name, v32.num_layers, (MultiHeadLatent(61, 512, 64),))
    assert vllm.report(plain, 64, vllm.VllmOptions()).engine_kv_bytes == 70_272 * 64
    fp8 = vllm.report(plain, 64, vllm.VllmOptions(kv_cache_dtype="fp8"))
    assert fp8.engine_kv_bytes == 35_136 * 64
    # with it, bf16 MLA pages plus uint8 indexer pages: 61 x (1,152 + 132) = 78,324 B per token
    assert vllm.report(v32, 64, vllm.VllmOptions()).engine_kv_bytes == 78_324 * 64
    # an indexer beside GQA layers (qwen3.8-flash-next) is not covered
    with pytest.raises(NotCovered, match="indexer"):
        vllm.report(model("qwen3.8-flash-next"), 64, vllm.VllmOptions())


@pytest.mark.parametrize("engine", ["llamacpp"])
def test_an_indexer_the_engine_model_does_not_size_is_refused(engine: str) -> None:
    # llama.cpp's cache for DeepSeek-V3.2's indexer keys was not read: its figure would leave
    # 61 x 132 B per token out, so it is refused rather than given short (SGLang sizes it:
    # tests/test_engine_sglang.py)
    with pytest.raises(NotCovered, match="indexer"):
        engine_report(model("deepseek-v3.2"), engine, 4096)


def test_vllm_window_pages_and_padding_layers() -> None:
    # gemma-3-27b, 0.25.1: 10 full + 52 window layers -> groups of 10: the window type fills 6
    # groups (60 layers, 8 of them padding). Window pages per request at 32768 with
    # max_num_batched_tokens 8192: cdiv(min(1023 + 8192, 32768), 16) + 1 = 577; full 2048.
    # Page 16 x 16 x 256 x 2 = 131,072 B. Total 10 x 131,072 x (2048 + 6 x 577).
    options = vllm.VllmOptions(version="0.25.1", max_num_batched_tokens=8192)
    report = vllm.report(model("gemma-3-27b"), 32768, options)
    assert report.engine_kv_bytes == 10 * 131_072 * (2048 + 6 * 577)
    assert "Add 8 padding layers, may waste at most 15.38% KV cache memory" in report.printed
    # before the hybrid allocator every layer holds every token
    old = vllm.report(model("gemma-3-27b"), 32768, vllm.VllmOptions(version="0.9.0"))
    assert old.engine_kv_bytes == 62 * 2048 * 131_072


def test_vllm_token_figure_by_version() -> None:
    # llama-3.1-8b bf16: page 16 x 8 x 256 x 2 = 65,536 B per layer, 32 layers per block.
    memory = 1000 * 32 * 65_536  # exactly 1000 blocks
    for version, first in (
        ("0.8.5", "GPU KV cache size: 16,000 tokens"),
        ("0.19.0", "GPU KV cache size: 16,000 tokens"),
        # 1000 / cdiv(10000, 16) = 1.6 -> int(1.6 x 10000)
        ("0.26.0", "GPU KV cache size: 16,000 tokens"),
    ):
        result = vllm.capacity(
            model("llama-3.1-8b"), vllm.VllmOptions(version=version), memory, 10_000
        )
        assert result.printed[0] == first
    # a hybrid: 0.19 divides blocks among groups, 0.21 on reports what requests can hold
    # (0.25.1: the last release before hybrids default to prefix caching, 2 state pages)
    qwen = model("qwen3-next-80b-a3b")
    page_pool = 500 * 12 * 1_114_112
    per_group = vllm.capacity(qwen, vllm.VllmOptions(version="0.19.0"), page_pool, 32768)
    latest = vllm.capacity(qwen, vllm.VllmOptions(version="0.25.1"), page_pool, 32768)
    # 500 blocks // 4 groups = 125 x 544 = 68,000; 500 / (61 + 3) = 7.8125 x 32768 = 256,000
    assert per_group.tokens == 68_000
    assert latest.tokens == 256_000


def test_vllm_unknown_and_uncovered() -> None:
    with pytest.raises(UnknownValue) as caught:
        vllm.report(model("llama-3.1-8b"), 10, vllm.VllmOptions(kv_cache_dtype="int4"))
    assert "turboquant_k8v4" in str(caught.value)
    with pytest.raises(NotCovered, match="nvfp4"):
        vllm.report(model("llama-3.1-8b"), 10, vllm.VllmOptions(kv_cache_dtype="nvfp4"))
    with pytest.raises(UnknownValue):
        vllm.report(model("llama-3.1-8b"), 10, vllm.VllmOptions(version="new"))


# --- SGLang --------------------------------------------------------------------------------


def test_sglang_pool_sizes() -> None:
    # memory_pool.py: (#tokens + page_size) rows; "GB" is 2**30 B. qwen3-8b, pool 100,000 bf16:
    # 36 x 100,001 x 8 x 128 x 2 B = 7,372,873,728 B = 6.87 GiB for K and again for V.
    report = sglang.report(model("qwen3-8b"), 100_000, sglang.SglangOptions(version="0.5.12"))
    assert report.engine_kv_bytes == 2 * 7_372_873_728
    assert report.printed == (
        "KV Cache is allocated. #tokens: 100000, K size: 6.87 GB, V size: 6.87 GB",
    )
    # MLA, fp8: 61 x 100,001 x 576 x 1 B = 3,513,635,136 B = 3.27 GiB
    mla = sglang.report(
        model("deepseek-v3"), 100_000, sglang.SglangOptions("fp8_e4m3", version="0.5.12")
    )
    assert mla.printed == ("KV Cache is allocated. #tokens: 100000, KV size: 3.27 GB",)
    with pytest.raises(NotCovered, match="SWAKVPool"):
        sglang.report(model("gemma-3-27b"), 1000, sglang.SglangOptions())


# --- the entry point a check calls ----------------------------------------------------------


def test_engine_report_rejects_options_of_another_engine() -> None:
    assert ENGINES == ("llamacpp", "vllm", "sglang", "tensorrt-llm")
    with pytest.raises(EngineError, match="block_size"):
        engine_report(model("qwen3-8b"), "llamacpp", 10, block_size=16)
    with pytest.raises(UnknownValue, match="allowed: f32, f16"):
        engine_report(model("qwen3-8b"), "llamacpp", 10, cache_type_k="q2_k")


def test_unknown_dimensions_stay_unknown() -> None:
    # qwen3-8-27b's Gated DeltaNet dimensions are unpublished: its recurrent state is unknown
    report = engine_report(model("qwen3-8-27b"), "llamacpp", 4096)
    assert report.engine_kv_bytes is None
    assert any(part.bytes is None for part in report.parts)


# --- command line --------------------------------------------------------------------------


def test_cli_engine_json() -> None:
    result = run_cli(
        "kv", "qwen3-8b", "--context", "2560", "--engine", "llamacpp", "-ctk", "q8_0",
        "-ctv", "q8_0", "--format", "json", cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["engine"] == "llamacpp"
    assert data["engine_kv_bytes"] == 200_540_160
    assert data["kv_bytes_at_context"] == 377_487_360
    assert {"name", "bytes", "how"} == set(data["parts"][0])
    assert "191.25 MiB" in data["engine_printed"][0]


def test_cli_engine_text_and_usage_errors() -> None:
    text = run_cli(
        "kv", "qwen3-next-80b-a3b", "--context", "32768", "--engine", "vllm",
        "--engine-version", "0.25.1", cwd=REPO,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "Setting attention block size to 544 tokens" in text.stdout
    assert "why the figures differ:" in text.stdout
    bad = run_cli("kv", "qwen3-8b", "--engine", "llamacpp", "--cache-type-k", "q9", cwd=REPO)
    assert bad.returncode == 2 and "q8_0" in bad.stderr
    wrong = run_cli("kv", "qwen3-8b", "--engine", "vllm", "--ubatch", "64", cwd=REPO)
    assert wrong.returncode == 2 and "--kv-cache-dtype" in wrong.stderr
    loose = run_cli("kv", "qwen3-8b", "--block-size", "32", cwd=REPO)
    assert loose.returncode == 2 and "needs --engine" in loose.stderr
    version = run_cli(
        "kv", "qwen3-8b", "--context", "10", "--engine", "llamacpp", "--engine-version", "b5913",
        cwd=REPO,
    )  # fmt: skip
    assert version.returncode == 2 and "2025-11-pad-256" in version.stderr
    uncovered = run_cli(
        "kv", "mistral-7b-v0.1", "--context", "10", "--engine", "llamacpp", cwd=REPO
    )
    assert uncovered.returncode == 2 and "--swa-full" in uncovered.stderr


def test_cli_engine_choices_match_the_library() -> None:
    from kvrecords.cli import choices

    assert choices.ENGINES == ENGINES
    assert choices.LLAMACPP_CACHE_TYPES == llamacpp.CACHE_TYPE_NAMES
    assert choices.LLAMACPP_VERSIONS == llamacpp.VERSIONS
    assert choices.SGLANG_KV_CACHE_DTYPES == sglang.KV_CACHE_DTYPES


# --- start-up logs ---------------------------------------------------------------------------

LOG = (
    "\x1b[32mINFO 09-21 12:00:01 [kv_cache_utils.py:868] Maximum concurrency for 100,000 tokens"
    " per request: 2.31x\x1b[0m\r\n"
    "random noise: size = lots\r\n"
    "llama_context: n_ctx         = 32768\r\n"
    "llama_kv_cache: size = 1166.62 MiB ( 32768 cells,  61 layers,  1/1 seqs),"
    " K (q8_0): 1166.62 MiB, V (q8_0):    0.00 MiB\r\n"
    "(EngineCore pid=1) INFO [kv_cache_utils.py:1319] GPU KV cache size: 230,528 tokens\r\n"
    "llama_memory_recurrent: size =   78.87 MiB (     1 cells,  48 layers,  1 seqs),"
    " R (f32):    3.38 MiB, S (f32):   75.50 MiB\r\n"
    "llama_new_context_with_model: KV self size  = 4352.00 MiB, K (q8_0): 2176.00 MiB,"
    " V (q8_0): 2176.00 MiB\r\n"
    "[TP0] KV Cache is allocated. #tokens: 300288, K size: 8.38 GB, V size: 5.59 GB\r\n"
)


def test_log_reader_finds_the_figures_in_any_order() -> None:
    reading = read_log(LOG)
    assert [f.line for f in reading.figures] == [1, 4, 5, 6, 7, 8]
    assert reading.engines == ("vllm", "llamacpp", "sglang")
    by_line = {f.line: dict(f.fields) for f in reading.figures}
    assert by_line[1] == {"max_model_len": "100000", "max_concurrency": "2.31x"}
    assert by_line[4]["size"] == "1166.62 MiB" and by_line[4]["seqs"] == "1/1"
    assert by_line[5] == {"gpu_kv_cache_tokens": "230528"}
    assert by_line[6]["s"] == "75.50 MiB" and by_line[6]["type_r"] == "f32"
    assert by_line[7]["k"] == "2176.00 MiB"
    assert by_line[8] == {"pool_tokens": "300288", "k_size": "8.38 GiB", "v_size": "5.59 GiB"}
    assert ("llamacpp_n_ctx", "32768", 3) in reading.settings
    text = render(reading, "x.log")
    assert "engines: [vllm, llamacpp, sglang]" in text
    assert "    size: 1166.62 MiB" in text


@pytest.mark.parametrize(
    ("line", "source", "fields"),
    [
        (  # vLLM's error when the context does not fit (its two GiB figures as printed)
            "ValueError: To serve at least one request with the models's max seq len (131072),"
            " (16.00 GiB KV cache is needed, which is larger than the available KV cache memory"
            " (9.53 GiB).",
            "KV cache is needed",
            (("kv_cache_needed", "16.00 GiB"), ("available_kv_cache_memory", "9.53 GiB")),
        ),
        (
            "Based on the available memory, the estimated maximum model length is 41984.",
            "estimated maximum model length",
            (("estimated_max_model_len", "41984"),),
        ),
        (
            "INFO [config.py:404] Setting attention block size to 1072 tokens to ensure that"
            " attention page size is >= mamba page size.",
            "Setting attention block size",
            (("attention_block_size", "1072"),),
        ),
        (
            "INFO [config.py:435] Padding mamba page size by 1.20% to ensure that mamba page"
            " size and attention page size are exactly equal.",
            "Padding mamba page size",
            (("mamba_page_padding", "1.20%"),),
        ),
        (  # the count's thousands separator dropped, the concurrency with its x
            "INFO [kv_cache_utils.py:868] Maximum concurrency for 32,768 tokens per request:"
            " 37.68x",
            "Maximum concurrency",
            (("max_model_len", "32768"), ("max_concurrency", "37.68x")),
        ),
        (  # the optional CPU blocks left out when the line has none
            "INFO [executor_base.py:102] # GPU blocks: 2048",
            "# GPU blocks",
            (("gpu_blocks", "2048"),),
        ),
        (  # every optional group present, in the order printed
            "[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 65 [window size=2051], tokens"
            " per block=32, primary blocks=3006, secondary blocks=0, max sequence length=2051",
            "Max KV cache blocks per sequence",
            (
                ("max_blocks_per_sequence", "65"),
                ("window_size", "2051"),
                ("tokens_per_block", "32"),
                ("primary_blocks", "3006"),
                ("secondary_blocks", "0"),
                ("max_sequence_length", "2051"),
            ),
        ),
        (
            "llama_kv_cache_init: kv_size = 4096, offload = 1, type_k = 'f16', type_v = 'f16',"
            " n_layer = 32, can_shift = 1, padding = 32",
            "llama_kv_cache_init",
            (
                ("cells", "4096"),
                ("type_k", "f16"),
                ("type_v", "f16"),
                ("layers", "32"),
                ("padding", "32"),
            ),
        ),
    ],
)
def test_log_reader_gives_each_line_s_fields_as_printed(
    line: str, source: str, fields: tuple[tuple[str, str], ...]
) -> None:
    (figure,) = read_log(line).figures
    assert (figure.source, figure.fields) == (source, fields)


def test_log_reader_names_the_cache_as_engine_accounting_does() -> None:
    reading = read_log(
        "llama_kv_cache_iswa: creating non-SWA KV cache, size = 131072 cells\n"
        "llama_kv_cache_iswa: creating     SWA KV cache, size = 1024 cells\n"
    )
    caches = [dict(figure.fields)["cache"] for figure in reading.figures]
    assert caches == ["full_attention", "sliding_window"]
    assert set(caches) <= set(CACHES)


def test_log_reader_refuses_what_is_not_a_log(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("\n\n")
    binary = tmp_path / "binary.log"
    binary.write_bytes(b"GPU KV cache size: 1 tokens\x00\x01")
    none = tmp_path / "none.log"
    none.write_text("hello\nworld\n")
    for path, message in ((empty, "empty"), (binary, "NUL"), (none, "no cache figures")):
        with pytest.raises(LogError, match=message):
            read_log_file(path)
    with pytest.raises(LogError, match="cannot read"):
        read_log_file(tmp_path / "missing.log")


def test_log_reader_is_linear_on_hostile_lines() -> None:
    hostile = ("llama_kv_cache: size = " + "1" * 200_000 + " MiB (" + " " * 100_000) * 3
    hostile += "\n" + "GPU KV cache size: " + "1," * 100_000 + "\n"
    start = time.perf_counter()
    reading = read_log(hostile * 20)
    # under 1 s on the 2-core reference machine: the bound catches a quadratic scan (which
    # takes minutes on this input), not a busy machine
    assert time.perf_counter() - start < 30
    assert reading.figures == ()


def test_cli_from_log(tmp_path: Path) -> None:
    log = tmp_path / "start.log"
    log.write_bytes(LOG.encode())
    result = run_cli("kv", "--from-log", str(log), cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "gpu_kv_cache_tokens: 230528" in result.stdout
    assert result.stdout.count("  - line: ") == 6
    empty = tmp_path / "empty.log"
    empty.write_text("")
    failed = run_cli("kv", "--from-log", str(empty), cwd=REPO)
    assert failed.returncode == 1 and "empty" in failed.stderr
    both = run_cli("kv", "qwen3-8b", "--from-log", str(log), cwd=REPO)
    assert both.returncode == 2
