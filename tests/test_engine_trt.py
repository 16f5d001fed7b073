"""The TensorRT-LLM engine model against pool sizes TensorRT-LLM printed in public logs.

Each expected figure is a printed one, quoted from the public source named beside it, or a
hand computation in the comment from the model's published shape; none is the code's output
pasted back. The rows are on docs/calibration.md (the TensorRT-LLM section).
"""

from __future__ import annotations

import pytest

from conftest import REPO, run_cli
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.engines import (
    ENGINES,
    EngineError,
    NotCovered,
    UnknownValue,
    engine_report,
    tensorrt_llm,
)
from kvrecords.kv.engines.tensorrt_llm import TensorRtLlmOptions, primary_blocks, report
from kvrecords.kv.geometry import Attention, Model
from kvrecords.tools.engine_logs import read_log


def model(model_id: str) -> Model:
    return load_model_file(REPO / "models" / f"{model_id}.yaml")


def allocated_line(report_lines: tuple[str, ...]) -> str:
    return next(line for line in report_lines if "paged KV cache" in line)


def test_pool_of_issue_1188_prints_the_quoted_line() -> None:
    # NVIDIA/TensorRT-LLM issue #1188, comment by ayaromenok of 2024-11-21 (Qwen2.5-Coder-0.5B,
    # int8 weights, RTX A4000): "Allocated 4.53 GiB for max tokens in paged KV cache (395776)."
    # 24 layers x 2 (K, V) x 2 KV heads x 64 x 2 B = 12,288 B/token;
    # 395,776 x 12,288 = 4,863,295,488 B = 4.529 GiB, printed 4.53.
    result = engine_report(model("qwen2.5-coder-0.5b-instruct"), "tensorrt-llm", 395_776)
    assert result.engine_kv_bytes == 4_863_295_488
    assert allocated_line(result.printed) == (
        "[MemUsageChange] Allocated 4.53 GiB for max tokens in paged KV cache (395776)."
    )


def test_the_latest_release_matches_a_1_2_1_log() -> None:
    # A TensorRT-LLM 1.2.1 smoke run on one H100, PyTorch backend, Qwen/Qwen3-Reranker-0.6B
    # (Qwen3ForCausalLM, BF16, 28 layers; public GitHub code found by its line "for max tokens in paged KV
    # cache ("): "[MemUsageChange] Allocated 68.69 GiB for max tokens in paged KV cache
    # (643136)." Qwen3-0.6B's shape: 28 x 2 x 8 KV heads x 128 x 2 B = 114,688 B/token;
    # 643,136 x 114,688 = 73,759,981,568 B = 68.694 GiB, printed 68.69.
    result = report(model("qwen3-0.6b"), 643_136, TensorRtLlmOptions(version="1.2.1"))
    assert result.engine_kv_bytes == 73_759_981_568
    assert result.printed[1] == (
        "[MemUsageChange] Allocated 68.69 GiB for max tokens in paged KV cache (643136)."
    )


def test_fp8_cache_holds_one_byte_per_value() -> None:
    # NVIDIA/TensorRT-LLM issue #4275, comment 2941155249: TensorRT-LLM 0.19.0 on an RTX 5090,
    # Llama-3.1-8B-Instruct quantized with --kv_cache_dtype fp8, trtllm-build without
    # --tokens_per_block: "Number of blocks in KV cache primary pool: 8219" / "Number of tokens
    # per block: 32." / "[MemUsageChange] Allocated 16.05 GiB for max tokens in paged KV cache
    # (263008)". 8,219 x 32 = 263,008 tokens. In fp8: 32 layers x 2 x 8 heads x 128 x 1 B =
    # 65,536 B/token; x 263,008 = 17,236,492,288 B = 16.053 GiB, printed 16.05 (bf16: 32.11).
    options = TensorRtLlmOptions(kv_cache_dtype="fp8", version="0.19.0")
    result = report(model("llama-3.1-8b"), 263_008, options)
    assert result.engine_kv_bytes == 17_236_492_288
    assert result.printed == (
        "Number of tokens per block: 32.",
        "[MemUsageChange] Allocated 16.05 GiB for max tokens in paged KV cache (263008).",
    )


def test_a_llama_2_7b_fp8_log_in_the_memory_page() -> None:
    # NVIDIA/TensorRT-LLM docs/source/reference/memory.md @ 7ff53023, FAQ "How to debug the
    # memory usage of TensorRT-LLM?" (model and version not named; H100, "total: 79.10 GiB"):
    # "Number of blocks in KV cache primary pool: 4060" / "Number of tokens per block: 64." /
    # "[MemUsageChange] Allocated 63.44 GiB for max tokens in paged KV cache (259840)."
    # 4,060 x 64 = 259,840 tokens. Llama-2-7B in fp8: 32 layers x 2 x 32 KV heads x 128 x 1 B =
    # 262,144 B/token (2^18); 259,840 x 2^18 = 68,115,496,960 B = 259,840 / 4,096 GiB =
    # 63.4375 GiB, printed 63.44. The same log's "GPU 6678 (MiB)" after loading the engine fits
    # Llama-2-7B's weights in 8 bits (docs/calibration.md).
    options = TensorRtLlmOptions(kv_cache_dtype="fp8", tokens_per_block=64, version="0.12.0")
    result = report(model("llama-2-7b"), 259_840, options)
    assert result.engine_kv_bytes == 68_115_496_960
    assert result.printed == (
        "Number of tokens per block: 64.",
        "[MemUsageChange] Allocated 63.44 GiB for max tokens in paged KV cache (259840).",
    )


def test_the_0_12_trtllm_bench_log_is_a_gpt_j_6b_pool() -> None:
    # The trtllm-bench log of NVIDIA/TensorRT-LLM benchmarks/Suite.md (July 2024; replaced by a
    # 0.12.0 run in later versions), summary "Model: meta-llama/Llama-2-7b-hf", "TensorRT-LLM
    # Version: 0.12.0.dev2024073000", "KV Cache Dtype: FP8": "Number of blocks in KV cache
    # primary pool: 4607" / "Number of tokens per block: 64." / "[MemUsageChange] Allocated
    # 62.99 GiB for max tokens in paged KV cache (294848)." 4,607 x 64 = 294,848 tokens.
    # kvCacheManager.cpp sizes the blocks and prints the bytes from the same per-token figure
    # (layers x 2 x KV heads x head size x dtype bytes), and 62.99 GiB / 294,848 is 229,376 B:
    # GPT-J-6B's shape in fp8 (28 layers x 2 x 16 heads x 256 x 1 B), whose 8-bit weights fit
    # the log's "GPU 6166 (MiB)" (docs/calibration.md). 294,848 x 229,376 = 294,848 x 7 x 2^15
    # = 67,631,054,848 B = 2,063,936 / 32,768 GiB = 62.986 GiB, printed 62.99.
    gpt_j_6b = Model("gpt-j-6b-shape", "28 x 16 x 256", 28, (Attention(28, 16, 256),))
    options = TensorRtLlmOptions(kv_cache_dtype="fp8", version="0.12.0.dev2024073000")
    result = report(gpt_j_6b, 294_848, options)
    assert result.engine_kv_bytes == 67_631_054_848
    assert result.printed == (
        "Number of tokens per block: 64.",
        "[MemUsageChange] Allocated 62.99 GiB for max tokens in paged KV cache (294848).",
    )
    assert result.parts[0].how.startswith("4,607 blocks x 28 layers x 2 (K, V) x 16 heads")
    # Llama-2-7B, which the summary names, would print 71.98: 294,848 x 2^18 B = 294,848 /
    # 4,096 GiB = 71.984 GiB.
    llama = report(model("llama-2-7b"), 294_848, options)
    assert llama.printed[1] == (
        "[MemUsageChange] Allocated 71.98 GiB for max tokens in paged KV cache (294848)."
    )


def test_0_12_blocks_come_from_the_free_memory_and_the_bytes_per_token() -> None:
    # kvCacheManager.cpp, 0.12 form of KVCacheManager::calculateMaxNumBlocks: max tokens =
    # (SizeType32) (fraction x available / bytes per token), then ceilDiv by 64 tokens per block.
    # The Suite.md log above prints "available: 63.62 GiB" with "KV Memory Percentage: 99.0%"
    # and 4,607 blocks; 63.62 stands for 63.615 to 63.625 GiB = 68,306,086,133 to
    # 68,316,823,552 B. GPT-J-6B in fp8 (229,376 B/token): 68,306,086,133 x 0.99 / 229,376 =
    # 294,812.99 tokens -> 4,606.45 -> 4,607 blocks; at 63.62 GiB (68,311,454,842 B) 294,836.2
    # -> 4,607; at the top, 294,859.3 -> 4,607.18 -> 4,608. Llama-2-7B in fp8 (262,144 B/token)
    # at 63.62 GiB: 257,981.6 tokens -> 4,030.96 -> 4,031, not the 4,607 printed.
    gpt_j_6b = Model("gpt-j-6b-shape", "28 x 16 x 256", 28, (Attention(28, 16, 256),))
    options = TensorRtLlmOptions(kv_cache_dtype="fp8", version="0.12.0.dev2024073000")
    assert primary_blocks(gpt_j_6b, 68_306_086_133, options, 0.99) == 4_607
    assert primary_blocks(gpt_j_6b, 68_311_454_842, options, 0.99) == 4_607
    assert primary_blocks(gpt_j_6b, 68_316_823_552, options, 0.99) == 4_608
    llama = model("llama-2-7b")
    assert primary_blocks(llama, 68_311_454_842, options, 0.99) == 4_031
    # The memory page's log: "available: 70.48 GiB", the default fraction 0.9 (a C++ float,
    # 0.8999999761581421), 4,060 blocks. 70.475 to 70.485 GiB = 75,671,955,046 to
    # 75,682,692,464 B; x 0.9 / 262,144 = 259,799.0 to 259,835.9 tokens -> 4,059.4 to 4,059.9
    # -> 4,060 blocks over the whole interval.
    faq = TensorRtLlmOptions(kv_cache_dtype="fp8", tokens_per_block=64, version="0.12.0")
    for free in (75_671_955_046, 75_682_692_464):
        assert primary_blocks(llama, free, faq) == 4_060
    with pytest.raises(NotCovered, match=r"from 1\.0"):
        primary_blocks(llama, 1 << 30, TensorRtLlmOptions())
    with pytest.raises(EngineError, match="fraction"):
        primary_blocks(llama, 1 << 30, options, 1.0)


def test_sliding_window_layers_keep_the_whole_pool() -> None:
    # gpt-oss-120b on DGX Spark, TensorRT-LLM 1.1.0rc3, PyTorch backend (a public log in the
    # public GitHub code found by its line "for max tokens in paged KV cache"): "Adjusted
    # max_attention_window_vec to [8224]" (one window), "kv size is 73728", "Allocated 0.56 GiB
    # ... (8224)" and "Allocated 5.95 GiB ... (86720)". All 36 layers, the 18 window-128 ones
    # included: 36 x 2 x 8 heads x 64 x 2 B = 73,728 B/token. 8,224 x 73,728 = 606,339,072 B =
    # 0.565 GiB; 86,720 x 73,728 = 6,393,692,160 B = 5.955 GiB.
    gpt_oss = model("gpt-oss-120b")
    small = report(gpt_oss, 8_224, TensorRtLlmOptions(version="1.1.0rc3"))
    large = report(gpt_oss, 86_720, TensorRtLlmOptions(version="1.1.0rc3"))
    assert (small.engine_kv_bytes, large.engine_kv_bytes) == (606_339_072, 6_393_692_160)
    assert "Allocated 0.56 GiB for max tokens in paged KV cache (8224)." in small.printed[1]
    assert "Allocated 5.95 GiB for max tokens in paged KV cache (86720)." in large.printed[1]


def test_a_pool_rounds_up_to_whole_blocks() -> None:
    # The same gpt-oss log: "Both free_gpu_memory_fraction and max_tokens are set (to ... and
    # 86711 ...)" then "(86720)": calculateMaxNumBlocks takes ceilDiv(86,711, 32) = 2,710
    # blocks = 86,720 tokens.
    result = report(model("gpt-oss-120b"), 86_711, TensorRtLlmOptions())
    assert result.printed[1].endswith("(86720).")
    assert result.engine_kv_bytes == 86_720 * 73_728


def test_tensor_parallel_ranks_hold_ceil_of_the_kv_heads() -> None:
    # resource_manager.py: heads per rank = (heads + tp - 1) // tp. Llama-3.1-8B, 8 KV heads:
    # TP 2 -> 4 heads, TP 3 -> 3 heads, TP 16 -> 1 head (replicated).
    # Per token: 32 layers x 2 x heads x 128 x 2 B = 16,384 B per head.
    llama = model("llama-3.1-8b")
    for ranks, heads in ((2, 4), (3, 3), (16, 1)):
        result = report(llama, 1024, TensorRtLlmOptions(tensor_parallel_size=ranks))
        assert result.engine_kv_bytes == 1024 * 16_384 * heads


def test_mla_keeps_one_latent_head_from_1_0() -> None:
    # _util.py: MLA is a SELFKONLY cache (kvFactor 1) of one head of kv_lora_rank +
    # qk_rope_head_dim = 512 + 64 = 576 values. DeepSeek-V3, 61 layers, fp8:
    # 61 x 576 x 1 B = 35,136 B/token; 32,768 tokens = 1,151,336,448 B.
    deepseek = model("deepseek-v3")
    result = report(deepseek, 32_768, TensorRtLlmOptions(kv_cache_dtype="fp8"))
    assert result.engine_kv_bytes == 1_151_336_448
    with pytest.raises(NotCovered, match=r"MLA before 1\.0"):
        report(deepseek, 32_768, TensorRtLlmOptions(version="0.17.0"))


def test_versions_outside_the_table_are_refused_with_the_range() -> None:
    qwen = model("qwen2.5-coder-0.5b-instruct")
    assert report(qwen, 64, TensorRtLlmOptions()).version == tensorrt_llm.LATEST == "1.2.1"
    # The trtllm-bench log of 0.12.0.dev2024073000 in TensorRT-LLM's documentation prints "Number
    # of tokens per block: 64."; issue #4275's 0.19.0 engine prints 32 (test above); 0.18.x is
    # not established, so its report says the default is assumed.
    old = report(qwen, 128, TensorRtLlmOptions(version="0.12.0.dev2024073000"))
    assert old.printed[0] == "Number of tokens per block: 64."
    unsure = report(qwen, 128, TensorRtLlmOptions(version="0.18.2"))
    assert any("assumed" in note for note in unsure.notes)
    for release in ("0.11.0", "1.3.0rc1", "2.0.0"):
        # outside the table: refused as a value it does not take, naming the range covered
        with pytest.raises(
            UnknownValue, match=r"latest \(1\.2\.1\), a release from 0\.12\.0 to 1\.2\.x"
        ):
            report(qwen, 64, TensorRtLlmOptions(version=release))
    with pytest.raises(UnknownValue, match=r"1\.1\.0rc3"):
        report(qwen, 64, TensorRtLlmOptions(version="main"))


def test_layouts_not_read_are_refused() -> None:
    with pytest.raises(NotCovered, match="nvfp4"):
        report(model("llama-3.1-8b"), 64, TensorRtLlmOptions(kv_cache_dtype="nvfp4"))
    with pytest.raises(NotCovered, match="linear_attention"):
        report(model("qwen3-next-80b-a3b"), 64, TensorRtLlmOptions())
    with pytest.raises(NotCovered, match="shared"):
        report(model("gemma-3n-e4b"), 64, TensorRtLlmOptions())


def test_from_log_reads_the_pool_lines() -> None:
    # Lines from the Dynamo TensorRT-LLM example README (vickiegpt/dynamo, a fork of
    # ai-dynamo/dynamo: examples/python_rs/llm/trtllm/README.md) and the gpt-oss log above.
    log = (
        "[TensorRT-LLM] TensorRT-LLM version: 1.1.0rc3\n"
        "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 2048\n"
        "[TensorRT-LLM][INFO] Number of tokens per block: 64.\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 26.91 GiB for max tokens in paged KV"
        " cache (220480).\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 4.35 GB GPU memory for decoder.\n"
    )
    reading = read_log(log)
    assert reading.engines == ("tensorrt-llm",)
    assert [dict(figure.fields) for figure in reading.figures] == [
        {"max_pages_per_sequence": "2048"},
        {"tokens_per_block": "64"},
        {"kv_pool_size": "26.91 GiB", "pool_tokens": "220480"},
    ]
    assert [(s.key, s.value) for s in reading.settings] == [("tensorrt_llm_version", "1.1.0rc3")]


def test_kv_command_takes_the_engine() -> None:
    assert "tensorrt-llm" in ENGINES
    result = run_cli(
        "kv", "llama-3.1-8b", "--context", "220480", "--engine", "tensorrt-llm",
        "--tokens-per-block", "64", "--engine-version", "0.17.0", cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # 220,480 x 131,072 B (32 x 2 x 8 x 128 x 2 B) = 28,898,754,560 B = 26.914 GiB; the Dynamo
    # README above prints 26.91 for this pool.
    assert "Allocated 26.91 GiB for max tokens in paged KV cache (220480)." in result.stdout
    wrong = run_cli("kv", "llama-3.1-8b", "--engine", "tensorrt-llm", "--page-size", "4", cwd=REPO)
    assert wrong.returncode == 2 and "--tokens-per-block" in wrong.stderr


def test_from_log_reads_the_per_window_line() -> None:
    # triton-inference-server/tutorials PR #150 (TensorRT-LLM PyTorch backend log): "Max KV
    # cache blocks per sequence: 65 [window size=2051], tokens per block=32, primary
    # blocks=116617, secondary blocks=0" then "Allocated 78.30 GiB for max tokens in paged KV
    # cache (3731744)": 116,617 blocks x 32 = 3,731,744 tokens, the count the pool line prints.
    line = (
        "[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 65 [window size=2051], tokens"
        " per block=32, primary blocks=116617, secondary blocks=0"
    )
    (figure,) = read_log(line).figures
    fields = dict(figure.fields)
    assert (fields["window_size"], fields["primary_blocks"]) == ("2051", "116617")
    assert int(fields["primary_blocks"]) * int(fields["tokens_per_block"]) == 3_731_744


def test_several_attention_windows_are_refused() -> None:
    # _util.py switches to variable sliding window attention when max_attention_window holds
    # more than one size; kvCacheManager.cpp then gives each window its own blocks from an equal
    # share of free memory, which the printed pool size does not fix. One size is the default.
    gemma = model("gemma-3-27b")
    with pytest.raises(NotCovered, match="variable sliding window"):
        report(gemma, 1024, TensorRtLlmOptions(max_attention_window=(1024, 131072)))
    single = report(gemma, 1024, TensorRtLlmOptions(max_attention_window=(131072,)))
    assert single.engine_kv_bytes == report(gemma, 1024, TensorRtLlmOptions()).engine_kv_bytes
