"""The vLLM engine model by release: the version table, window and state pages, printed lines.

Each rule comes from the released wheels' source (module docstring of kv/engines/vllm.py);
each hand computation is in the test's comments.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from conftest import REPO
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.engines import NotCovered, UnknownValue, vllm
from kvrecords.kv.geometry import GatedDeltaNet, IndexerKeys, Model, MultiHeadLatent
from kvrecords.tools.engine_logs import read_log

GIB = 1 << 30


def model(model_id: str) -> Model:
    return load_model_file(REPO / "models" / f"{model_id}.yaml")


def fields(line: str) -> dict[str, str]:
    (figure,) = read_log(line).figures
    return dict(figure.fields)


# --- the version table -----------------------------------------------------------------------


def test_a_release_not_read_is_refused_naming_the_covered_ones() -> None:
    # refused as a value outside the table (a located error in a record), never taken for
    # another release
    with pytest.raises(UnknownValue) as caught:
        vllm.parse_version("0.7.3")
    assert "0.8.0" in str(caught.value) and "latest (0.34.0)" in str(caught.value)
    # a development build between 0.21.0 and 0.20.0, which print different token lines
    with pytest.raises(UnknownValue, match=r"0\.21\.0\.dev42"):
        vllm.parse_version("0.21.0.dev42+g1234abc")
    # between 0.10.0 and 0.10.1, which the table does not tell apart (recipes #12's build)
    assert vllm.parse_version("0.10.1.dev101+gbda9d0535") == (0, 10, 1)
    with pytest.raises(UnknownValue):
        vllm.parse_version("main")


def test_latest_is_the_newest_release_read_and_a_local_build_is_its_release() -> None:
    assert vllm.parse_version("latest") == vllm.LATEST == (0, 34, 0)
    # NVIDIA's container build of 0.11.0 (records/...-dgx-spark-32k.yaml)
    assert vllm.parse_version("0.11.0+582e4e37.nv25.11") == (0, 11, 0)
    assert vllm.parse_version("v0.10.1.1") == (0, 10, 1)


def test_the_default_block_size_is_64_from_0_34() -> None:
    # CacheConfig.DEFAULT_BLOCK_SIZE: 16 in 0.33.0, 64 in 0.34.0. llama-3.1-8b, 32 layers x
    # 8 heads x (128 + 128) x 2 B = 4,096 B per layer and token; 10,000 tokens fill
    # cdiv(10000, 16) = 625 blocks = 10,000 slots, or cdiv(10000, 64) = 157 blocks = 10,048.
    llama = model("llama-3.1-8b")
    old = vllm.report(llama, 10_000, vllm.VllmOptions(version="0.33.0"))
    new = vllm.report(llama, 10_000, vllm.VllmOptions(version="0.34.0"))
    assert old.engine_kv_bytes == 32 * 4096 * 10_000
    assert new.engine_kv_bytes == 32 * 4096 * 10_048


# --- sliding windows with asynchronous scheduling ---------------------------------------------


def test_window_layers_hold_two_batches_in_flight_from_0_26() -> None:
    # gpt-oss-120b: 18 window-128 layers + 18 full, 8 heads x (64 + 64) x 2 B = 2,048 B per
    # layer and token, page 16 x 2,048 = 32,768 B. max_model_len 32,768, max_num_batched_tokens
    # 8,192. Full layers: 2,048 blocks. Window layers, 0.25.1 (one batch):
    # cdiv(min(127 + 8192, 32768), 16) + 1 = 521; 0.26.0 (async scheduling, 2 batches):
    # cdiv(min(127 + 16384, 32768), 16) + 1 = 1,033. 18 x 32,768 x (2,048 + 521) against
    # 18 x 32,768 x (2,048 + 1,033): the older rule is 16.6 % short.
    gpt = model("gpt-oss-120b")
    before = vllm.report(gpt, 32768, vllm.VllmOptions("auto", 16, "0.25.1", 8192))
    after = vllm.report(gpt, 32768, vllm.VllmOptions("auto", 16, "0.26.0", 8192))
    assert before.engine_kv_bytes == 18 * 32_768 * (2_048 + 521)
    assert after.engine_kv_bytes == 18 * 32_768 * (2_048 + 1_033)
    # --no-async-scheduling: max_concurrent_batches is 1 again
    sync = vllm.report(
        gpt, 32768, vllm.VllmOptions("auto", 16, "0.26.0", 8192, async_scheduling=False)
    )
    assert sync.engine_kv_bytes == before.engine_kv_bytes


def test_the_default_batch_follows_the_device() -> None:
    # engine/arg_utils.py get_batch_defaults (0.29.0), 'vllm serve': an RTX 5090 (32 GiB)
    # gets 2,048 and 4,096 in throughput mode; an H100 (80 GiB) 8,192; an A100 80 GB 2,048;
    # a B200 (180 GiB) 16,384 from 0.28.0 and 8,192 before.
    def default(version: str, **device: object) -> int:
        options = vllm.VllmOptions(version=version, **device)  # type: ignore[arg-type]
        return vllm.default_max_num_batched_tokens(vllm.parse_version(version), options)

    assert default("0.29.0", device_memory_gib=32) == 2048
    assert default("0.29.0", device_memory_gib=32, performance_mode="throughput") == 4096
    assert default("0.29.0", device_memory_gib=80, device_name="NVIDIA H100 80GB HBM3") == 8192
    assert default("0.29.0", device_memory_gib=80, device_name="NVIDIA A100-SXM4-80GB") == 2048
    assert default("0.29.0", device_memory_gib=180) == 16384
    assert default("0.27.0", device_memory_gib=180) == 8192
    with pytest.raises(NotCovered, match=r"0\.17\.0"):
        default("0.16.0", performance_mode="throughput")


# --- hybrid models and prefix caching ---------------------------------------------------------


def test_hybrid_models_default_to_prefix_caching_with_two_state_pages_from_0_26() -> None:
    # qwen3-next-80b-a3b (test_engines: block 544, page 1,114,112 B). max_model_len 32,768:
    # 12 attention layers x cdiv(32768, 544) = 61 pages. 0.25.1: prefix caching off for
    # hybrids, 1 state page per layer; 0.26.0: on, mamba_cache_mode 'align', 2 pages.
    qwen = model("qwen3-next-80b-a3b")
    page = 1_114_112
    off = vllm.report(qwen, 32768, vllm.VllmOptions(version="0.25.1"))
    on = vllm.report(qwen, 32768, vllm.VllmOptions(version="0.26.0"))
    assert off.engine_kv_bytes == (12 * 61 + 36 * 1) * page
    assert on.engine_kv_bytes == (12 * 61 + 36 * 2) * page
    asked_off = vllm.report(
        qwen, 32768, vllm.VllmOptions(version="0.26.0", enable_prefix_caching=False)
    )
    assert asked_off.engine_kv_bytes == off.engine_kv_bytes


def test_flashinfer_gdn_prefill_keeps_a_checkpoint_page_from_0_33() -> None:
    # qwen3-next-80b-a3b, 0.33.0, align mode with the FlashInfer GDN prefill (Hopper): blocks
    # are multiples of lcm(16, 64) = 64: 64 x cdiv(1,097,728, 64 x 2,048) = 64 x 9 = 576
    # tokens, page 576 x 2,048 = 1,179,648 B; 12 x cdiv(32768, 576) = 12 x 57 attention pages
    # and 36 x 3 state pages (the last state, the one written, a prefill checkpoint).
    qwen = model("qwen3-next-80b-a3b")
    report = vllm.report(
        qwen, 32768, vllm.VllmOptions(version="0.33.0", gdn_prefill_backend="flashinfer")
    )
    assert report.printed[0].startswith("Setting attention block size to 576 tokens")
    assert report.engine_kv_bytes == (12 * 57 + 36 * 3) * 1_179_648
    triton = vllm.report(qwen, 32768, vllm.VllmOptions(version="0.33.0"))
    assert triton.engine_kv_bytes == (12 * 61 + 36 * 2) * 1_114_112


def test_mamba_models_in_all_mode_are_refused() -> None:
    # 0.26.0-0.27.0: prefix caching puts SupportsMambaPrefixCaching models (jamba) in 'all'
    # mode, one state page per block, which the engine model does not size
    with pytest.raises(NotCovered, match="'all' mode"):
        vllm.report(model("jamba-v0.1"), 4096, vllm.VllmOptions(version="0.26.0"))


# --- MLA ---------------------------------------------------------------------------------------


def test_mla_block_size_follows_the_backend() -> None:
    # deepseek-v2-lite: 27 layers x (512 + 64) x 2 B = 1,152 B per layer and token; 1,200
    # tokens fill 75 blocks of 16 (TRITON_MLA, 1,200 slots), 19 of 64 (FlashMLA, 1,216),
    # 10 of 128 (CUTLASS_MLA, 1,280)
    lite = model("deepseek-v2-lite")
    for backend, slots in (("TRITON_MLA", 1_200), ("FLASHMLA", 1_216), ("CUTLASS_MLA", 1_280)):
        options = vllm.VllmOptions(version="0.33.0", attention_backend=backend)
        assert vllm.report(lite, 1200, options).engine_kv_bytes == 27 * 1_152 * slots


def test_the_indexer_cache_holds_one_key_per_token() -> None:
    # DeepseekV32IndexerCache: one key of index_head_dim per token; fp8_ds_mla is 656 B
    # (kv.arithmetic.mla_fp8_bytes) plus the 128 + 4 = 132 B key. deepseek-v3.2, fp8 at
    # 64 tokens (one FlashMLASparse block): 61 x (656 + 132) x 64.
    v32 = vllm.report(model("deepseek-v3.2"), 64, vllm.VllmOptions(kv_cache_dtype="fp8"))
    assert v32.engine_kv_bytes == 61 * (656 + 132) * 64
    two_keys = Model(
        "two-keys",
        "MLA with two indexer keys",
        4,
        (MultiHeadLatent(4, 512, 64, None, IndexerKeys(128, 2)),),
    )
    with pytest.raises(NotCovered, match="one key per token"):
        vllm.report(two_keys, 64, vllm.VllmOptions())


# --- printed lines -------------------------------------------------------------------------------


def test_the_token_line_is_max_concurrency_times_max_model_len_from_0_21() -> None:
    # qwen3-next-80b-a3b, 500 blocks: 0.20.0 prints 500 // 4 groups x 544 = 68,000 tokens;
    # 0.21.0 (kv_cache_utils.py get_kv_cache_capacity) int(500 / (61 + 3) x 32768) = 256,000
    qwen = model("qwen3-next-80b-a3b")
    pool = 500 * 12 * 1_114_112
    assert vllm.capacity(qwen, vllm.VllmOptions(version="0.20.0"), pool, 32768).tokens == 68_000
    assert vllm.capacity(qwen, vllm.VllmOptions(version="0.21.0"), pool, 32768).tokens == 256_000


def test_calibration_akiyax_kvcache_lab_vllm_0_26() -> None:
    # https://github.com/akiyax/kvcache-lab/blob/b8af95d54c1ab072174d1292b62f4b74a9ef3e44/docs/phase1-baseline.md
    # (vLLM 0.26.0, Qwen2.5-7B-Instruct-AWQ, RTX 4080, max_model_len 32,768):
    # "Available KV cache memory: 8.0 GiB", "GPU KV cache size: 149,712 tokens", 4.57x.
    # Page: 28 layers x 16 x 4 heads x (128 + 128) x 2 B = 917,504 B. 9,357 blocks =
    # 8,585,084,928 B = 7.9955 GiB, which format_gib prints as round(7.9955, 2) = 8.0;
    # int(9357 / 2048 x 32768) = 149,712; 9357 / 2048 = 4.57.
    qwen = model("qwen2.5-7b-instruct")
    options = vllm.VllmOptions(version="0.26.0")
    available = 9_357 * 917_504
    assert vllm.available_line(options, available) == "Available KV cache memory: 8.0 GiB"
    assert vllm.capacity(qwen, options, available, 32768).printed == (
        "GPU KV cache size: 149,712 tokens",
        "Maximum concurrency for 32,768 tokens per request: 4.57x",
    )
    # the same memory as 0.13.0 printed it ('%.2f')
    older = vllm.VllmOptions(version="0.13.0")
    assert vllm.available_line(older, available) == "Available KV cache memory: 8.00 GiB"


def test_calibration_aws_sample_vllm_0_24_tp4() -> None:
    # https://github.com/aws-samples/sample-claude-code-multi-model/blob/152d9f08201f5b36eb7efd026fe9d6e0b9120ca0/self-hosted/vllm/README.md
    # (vLLM 0.24.0, Qwen3-Coder-30B-A3B-Instruct, TP4 on L40S): "Available KV cache memory:
    # 23.74 GiB", "GPU KV cache size: 1,037,152 tokens", "...32,768 tokens per request:
    # 31.65x". Per rank 1 of 4 heads: 48 layers x 16 x (128 + 128) x 2 B = 393,216 B a block;
    # 1,037,152 / 16 = 64,822 blocks = 25,489,047,552 B = 23.7385 GiB -> 23.74;
    # 64,822 / 2,048 = 31.65.
    coder = model("qwen3-coder-30b-a3b-instruct")
    options = vllm.VllmOptions(version="0.24.0", tensor_parallel_size=4)
    available = 64_822 * 393_216
    assert vllm.available_line(options, available) == "Available KV cache memory: 23.74 GiB"
    assert vllm.capacity(coder, options, available, 32768).printed == (
        "GPU KV cache size: 1,037,152 tokens",
        "Maximum concurrency for 32,768 tokens per request: 31.65x",
    )


def test_from_0_28_tokens_and_concurrency_are_one_line() -> None:
    # kv_cache_utils.py update_kv_cache_capacity (0.28.0): "GPU KV cache size: %s tokens,
    # Maximum concurrency for %s tokens per request: %.2fx"; same pool as the akiyax row
    qwen = model("qwen2.5-7b-instruct")
    printed = vllm.capacity(qwen, vllm.VllmOptions(version="0.28.0"), 9_357 * 917_504, 32768)
    assert printed.printed == (
        "GPU KV cache size: 149,712 tokens, Maximum concurrency for 32,768 tokens per request:"
        " 4.57x",
    )
    # read back by kv --from-log (no public log with this line was found to cite)
    assert fields(printed.printed[0]) == {
        "gpu_kv_cache_tokens": "149712",
        "max_model_len": "32768",
        "max_concurrency": "4.57x",
    }


def test_from_log_reads_the_v0_lines_without_separators() -> None:
    # https://github.com/vllm-project/vllm/issues/10517 (V0 engine, RTX 3090)
    assert fields("# GPU blocks: 1478, # CPU blocks: 2048") == {
        "gpu_blocks": "1478",
        "cpu_blocks": "2048",
    }
    assert fields("Maximum concurrency for 29000 tokens per request: 0.82x") == {
        "max_model_len": "29000",
        "max_concurrency": "0.82x",
    }


def test_from_log_reads_the_v1_lines_with_separators() -> None:
    # https://github.com/vllm-project/vllm/pull/13596 (the token line's first form)
    line = "INFO 02-19 23:56:55 kv_cache_utils.py:524] GPU KV cache size: 2,042,016 tokens"
    assert fields(line) == {"gpu_kv_cache_tokens": "2042016"}
    # the akiyax row's rounded figure keeps its printed precision
    assert fields("Available KV cache memory: 8.0 GiB") == {"available_kv_cache_memory": "8.0 GiB"}


def test_calibration_gpt_oss_120b_window_pages_vllm_0_11_2() -> None:
    # https://github.com/tonghuikang/blog/blob/034b47cfaf722bbf5ae60d05552b1dac14492489/_posts/2025-12-28-vllm-logs.md
    # (vLLM 0.11.2, gpt-oss-120b, max_model_len 98,304, max_num_batched_tokens 8,192):
    # "Available KV cache memory: 8.99 GiB", "GPU KV cache size: 130,960 tokens",
    # "Maximum concurrency for 98,304 tokens per request: 2.46x". Two groups of 18 layers,
    # page 32,768 B: 16,370 blocks x 18 x 32,768 B = 8.9923 GiB; tokens (per-group era)
    # 16,370 // 2 x 16 = 130,960; one request 6,144 full blocks + cdiv(127 + 8192, 16) + 1 =
    # 521 window blocks (one batch in flight before 0.26.0): 16,370 / 6,665 = 2.46.
    gpt = model("gpt-oss-120b")
    options = vllm.VllmOptions(version="0.11.2", max_num_batched_tokens=8192)
    available = 16_370 * 18 * 32_768
    assert vllm.available_line(options, available) == "Available KV cache memory: 8.99 GiB"
    assert vllm.capacity(gpt, options, available, 98_304).printed == (
        "GPU KV cache size: 130,960 tokens",
        "Maximum concurrency for 98,304 tokens per request: 2.46x",
    )


def test_a_cache_dtype_is_refused_before_the_release_that_accepts_it() -> None:
    # config/cache.py CacheDType: fp8_per_token_head and the TurboQuant presets from 0.20.0,
    # fp8_ds_mla as an option from 0.11.1
    llama = model("llama-3.1-8b")
    with pytest.raises(NotCovered, match=r"before 0\.20\.0"):
        vllm.report(
            llama, 16, vllm.VllmOptions(kv_cache_dtype="fp8_per_token_head", version="0.19.0")
        )
    assert vllm.report(
        llama, 16, vllm.VllmOptions(kv_cache_dtype="fp8_per_token_head", version="0.20.0")
    )


def test_mla_hybrid_blocks_are_multiples_of_128_from_0_27() -> None:
    # One MLA layer beside three Gated DeltaNet layers of Qwen3-Next's shape: state page
    # (24,576 + 524,288) x 2 B = 1,097,728 B; MLA (512 + 64) x 2 B = 1,152 B per token.
    # 0.19.0 (models/config.py, FlashMLA): 64 x cdiv(1,097,728, 64 x 1,152) = 64 x 15 = 960;
    # 0.26.0: max(16, block 64) = 64, again 960; 0.27.0 (platforms/interface.py, MLA decode
    # kernels): 128 x cdiv(1,097,728, 128 x 1,152) = 128 x 8 = 1,024.
    shape = Model(
        "mla-gdn",
        "MLA + Gated DeltaNet",
        4,
        (MultiHeadLatent(1, 512, 64), GatedDeltaNet(3, 4, 16, 32, 128, 128)),
    )
    for version, tokens in (("0.19.0", 960), ("0.26.0", 960), ("0.27.0", 1024)):
        report = vllm.report(shape, 4096, vllm.VllmOptions(version=version))
        assert report.printed[0].startswith(f"Setting attention block size to {tokens} tokens")


# --- the maximum concurrency printed beside a pool ----------------------------------------------


def test_printed_concurrency_of_window_groups_from_the_printed_pool() -> None:
    # dennislee22/vLLM-benchmarking, log/vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes.log (vLLM
    # 0.10.1.1, gpt-oss-120b, max_model_len 16,384, max_num_batched_tokens 2,048): "GPU KV cache
    # size: 2,640,144 tokens", num_gpu_blocks 330,018, "Maximum concurrency for 16,384 tokens
    # per request: 284.25x". Two groups of 16-token blocks: 330,018 // 2 x 16 = 2,640,144; a
    # request takes cdiv(16,384, 16) = 1,024 full blocks + cdiv(127 + 2,048, 16) + 1 = 137
    # window blocks = 1,161; 330,018 / 1,161 = 284.25.
    gpt = model("gpt-oss-120b")
    options = vllm.VllmOptions(version="0.10.1")
    batch = (2048, 2048)
    from_blocks = vllm.printed_concurrency(gpt, options, 16384, blocks=330_018, batch=batch)
    assert from_blocks is not None
    assert (from_blocks.low, from_blocks.high) == (Fraction(330_018, 1161),) * 2
    # the token line alone: 330,018 or 330,019 blocks (the // 2 drops one)
    from_tokens = vllm.printed_concurrency(gpt, options, 16384, tokens=2_640_144, batch=batch)
    assert from_tokens is not None
    assert (from_tokens.low, from_tokens.high) == (Fraction(330_018, 1161), Fraction(330_019, 1161))
    # any batch from 1 to 16,384 tokens: the window group takes cdiv(128, 16) + 1 = 9 to
    # cdiv(16,384, 16) + 1 = 1,025 blocks
    wide = vllm.printed_concurrency(gpt, options, 16384, tokens=2_640_144, batch=(1, 16384))
    assert wide is not None
    assert (wide.low, wide.high) == (Fraction(330_018, 2049), Fraction(330_019, 1033))
    # a token line beside the blocks that this layout would not print: no such reading
    assert vllm.printed_concurrency(gpt, options, 16384, tokens=2_640_160, blocks=330_018) is None


def test_printed_concurrency_of_a_hybrid_model_follows_its_state_sized_block() -> None:
    # vllm-project/vllm issue #26646 (Qwen3-Next-80B-A3B, a 0.11 build): "GPU KV cache size:
    # 90,048 tokens", "Maximum concurrency for 215,040 tokens per request: 1.66x". State page
    # (3 x 8,192 + 32 x 128 x 128) x 2 B = 1,097,728 B; an fp8 attention token 2 x 512 x 1 B
    # = 1,024 B, so blocks of 16 x cdiv(1,097,728, 16 x 1,024) = 1,072 tokens; 4 groups of 12
    # layers; 90,048 // 1,072 = 84 -> 336 to 339 blocks; a request 201 + 3 x 1 = 204 blocks.
    qwen = model("qwen3-next-80b-a3b")
    fp8 = vllm.VllmOptions(version="0.11.0", kv_cache_dtype="fp8")
    span = vllm.printed_concurrency(qwen, fp8, 215_040, tokens=90_048, batch=(1, 215_040))
    assert span is not None
    assert (span.low, span.high) == (Fraction(336, 204), Fraction(339, 204))
    # a bf16 cache sizes 544-token blocks (16 x cdiv(1,097,728, 16 x 2,048) = 16 x 34), and
    # 90,048 is no multiple of 544
    bf16 = vllm.VllmOptions(version="0.11.0")
    assert vllm.printed_concurrency(qwen, bf16, 215_040, tokens=90_048) is None
    # from 0.21.0 the token line is int(concurrency x max_model_len): 90,048 / 215,040 = 0.42
    late = vllm.printed_concurrency(qwen, fp8._replace(version="0.21.0"), 215_040, tokens=90_048)
    assert late is not None
    assert (late.low, late.high) == (Fraction(90_048, 215_040), Fraction(90_049, 215_040))


def test_before_0_9_1_the_concurrency_is_the_pool_over_max_model_len() -> None:
    # 0.8.0 and 0.9.0 (_get_kv_cache_config_uniform_type): max_concurrency = num_tokens /
    # max_model_len, not num_blocks / cdiv(max_model_len, block_size). llama-3.1-8b, 16-token
    # pages of 16 x 8 x 256 x 2 B = 65,536 B per layer, 32 layers: 1,000 blocks = 2,097,152,000
    # B; max_model_len 1,000: 16,000 tokens / 1,000 = 16.00x (1,000 / cdiv(1,000, 16) = 15.87).
    llama = model("llama-3.1-8b")
    printed = vllm.capacity(llama, vllm.VllmOptions(version="0.9.0"), 2_097_152_000, 1000)
    assert printed.max_concurrency == 16
    assert printed.printed[1] == "Maximum concurrency for 1,000 tokens per request: 16.00x"


def test_gated_deltanet_models_keep_prefix_caching_off_before_0_15() -> None:
    # models/config.py MambaModelConfig: 0.11.0 turns prefix caching off for every hybrid
    # model, 0.11.1-0.14 for those without SupportsMambaPrefixCaching (Qwen3-Next), so asking
    # for it leaves one state page per layer; a mamba model asking for it is not covered.
    qwen = model("qwen3-next-80b-a3b")
    asked = vllm.VllmOptions(version="0.14.0", enable_prefix_caching=True)
    assert vllm.layout(qwen, asked).mamba_cache_mode == "none"
    with pytest.raises(NotCovered, match="prefix caching of mamba state"):
        vllm.layout(model("jamba-v0.1"), asked)


def test_rule_releases_hold_one_release_per_span_the_rules_treat_alike() -> None:
    releases = vllm.rule_releases()
    assert releases[0] == "0.34.0" and releases[-1] == "0.8.0"
    assert {"0.10.0", "0.21.0", "0.26.0", "0.15.0", "0.20.0"} <= set(releases)
    assert all(vllm.parse_version(release) for release in releases)


def test_speculative_decoding_adds_a_state_page_per_draft_token_from_0_15() -> None:
    # MambaSpec.max_memory_usage_bytes (0.15.0): page x (1 + num_speculative_blocks) with
    # prefix caching off; 0.14.0: cdiv(max_model_len, mamba_block_size = max_model_len) = 1
    # page. qwen3-next-80b-a3b (block 544, page 1,114,112 B), 32,768 tokens, 2 draft tokens:
    # 12 x 61 attention pages + 36 x (1 + 2) state pages.
    qwen = model("qwen3-next-80b-a3b")
    drafting = vllm.VllmOptions(
        version="0.15.0", enable_prefix_caching=False, num_speculative_tokens=2
    )
    report = vllm.report(qwen, 32768, drafting)
    assert report.engine_kv_bytes == (12 * 61 + 36 * 3) * 1_114_112
    earlier = vllm.report(qwen, 32768, drafting._replace(version="0.14.0"))
    assert earlier.engine_kv_bytes == (12 * 61 + 36 * 1) * 1_114_112
