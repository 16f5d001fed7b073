"""SGLang's engine model against the pool lines SGLang printed in public logs.

Every expected figure is a line quoted from the public source named beside it, or a hand
computation shown in the comment from published facts (the model files' geometry, the facts
read from SGLang's released source and listed in kv/engines/sglang.py); none is the code's own
output pasted back. "GB" in SGLang's line is 2**30 bytes.
"""

from __future__ import annotations

import pytest

from conftest import REPO, run_cli
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.engines import NoSuchCache, NotCovered, UnknownValue, bytes_of, engine_report
from kvrecords.kv.engines.sglang import LATEST, RELEASES, SglangOptions, kv_cache_dtypes, report
from kvrecords.kv.geometry import Model
from kvrecords.tools.engine_logs import read_log

GIB = 1 << 30


def model(model_id: str) -> Model:
    return load_model_file(REPO / "models" / f"{model_id}.yaml")


def v32(tokens: int, version: str) -> tuple[str, ...]:
    options = SglangOptions(kv_cache_dtype="fp8_e4m3", version=version)
    return report(model("deepseek-v3.2"), tokens, options).printed


def test_v32_line_leaves_the_indexer_keys_out_in_0_5_3() -> None:
    # sglang PR #11309 (8xB200, DeepSeek-V3.2-Exp, --tp 8 --dp 8, main before the PR):
    # "[2025-10-07 22:29:11 DP0 TP0] KV Cache is allocated. #tokens: 1462784, KV size: 54.52 GB"
    # 61 layers x (1,462,784 + 64) rows x 656 B (512 fp8 + 4 fp32 scales + 64 bf16 rope)
    # = 58,537,325,568 B = 54.517 GiB; the indexer keys are not in the line.
    assert v32(1_462_784, "0.5.3") == (
        "KV Cache is allocated. #tokens: 1462784, KV size: 54.52 GB",
    )


def test_v32_allocation_includes_the_indexer_keys() -> None:
    # PR #11309: "KV size including index is actually 65.49 GB". Indexer keys per layer:
    # (1,462,784 + 64 + 1) // 64 = 22,857 pages x 64 x (128 fp8 + 4 B scale) = 193,095,936 B;
    # x 61 = 11,778,852,096 B. With the latent's 58,537,325,568 B: 70,316,177,664 B = 65.49 GiB.
    result = report(model("deepseek-v3.2"), 1_462_784, SglangOptions("fp8_e4m3", version="0.5.3"))
    assert result.engine_kv_bytes == 58_537_325_568 + 11_778_852_096
    assert f"{70_316_177_664 / GIB:.2f}" == "65.49"
    assert result.caches == ("total", "latent")  # 0.5.3 prints the latent buffers alone
    assert bytes_of(result.cache_parts("total")) == 70_316_177_664


def test_v32_line_counts_the_indexer_keys_from_0_5_3_post1() -> None:
    # PR #11309 (its own branch, merged 2025-10-07; first released in 0.5.3.post1):
    # "[2025-10-07 23:17:19 DP0 TP0] KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB"
    # 61 x (975,424 + 64) x 656 = 39,035,127,808 B; keys 61 x (975,489 // 64 = 15,242 pages)
    # x 64 x 132 = 7,854,629,376 B; together 46,889,757,184 B = 43.669 GiB.
    assert v32(975_424, "0.5.3.post1") == (
        "KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB",
    )


def test_v32_trtllm_backend_keeps_raw_fp8_rows() -> None:
    # From 0.5.9 calculate_mla_kv_cache_dim keeps kv_lora_rank + rope = 576 one-byte values a row
    # for the trtllm DSA backend: 61 x (975,424 + 64) x 576 = 34,274,746,368 B, + the keys.
    options = SglangOptions("fp8_e4m3", nsa_backend="trtllm", version="0.5.23")
    result = report(model("deepseek-v3.2"), 975_424, options)
    assert result.engine_kv_bytes == 34_274_746_368 + 7_854_629_376
    with pytest.raises(NotCovered, match=r"0\.5\.9"):
        report(model("deepseek-v3.2"), 975_424, options._replace(version="0.5.8"))


def test_v32_bf16_rows_and_page_64() -> None:
    # bf16: 576 values x 2 B = 1,152 B a row; the pool's page is 64 whatever is asked for.
    result = report(model("deepseek-v3.2"), 64_000, SglangOptions("bf16", version="0.5.6"))
    latent = 61 * (64_000 + 64) * 1152
    keys = 61 * ((64_000 + 65) // 64) * 64 * 132
    assert result.engine_kv_bytes == latent + keys
    assert ("page_size", "64") in result.options
    with pytest.raises(NotCovered, match=r"0\.5\.3"):
        report(model("deepseek-v3.2"), 64_000, SglangOptions(version="0.5.2"))


def test_k_and_v_are_printed_apart_and_exposed_as_parts() -> None:
    # vllm #21348 (Qwen3-235B-A22B-FP8, SGLang --tp 4, July 2025, release not stated; the
    # #tokens format without dtype is 0.4.3.post3 to 0.5.12):
    # "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"
    # 94 layers x (367,404 + 1) rows x 1 KV head per rank (4 // 4) x 128 x 2 B = 8,841,233,920 B
    # = 8.234 GiB for K, and the same for V.
    result = report(model("qwen3-235b-a22b"), 367_404, SglangOptions(tp_size=4, version="0.4.9"))
    assert result.printed == (
        "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB",
    )
    assert result.caches == ("total", "k", "v")
    assert [part.bytes for part in result.parts if part.cache == "k"] == [8_841_233_920]
    assert [part.bytes for part in result.parts if part.cache == "v"] == [8_841_233_920]


def test_qwq_pool_of_four_l4() -> None:
    # didier-durand/llms-in-clouds docs/sglang.md (QwQ-32B, 4 x L4, --tensor-parallel-size 4):
    # "[2025-03-08 12:29:21 TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size:
    # 1.42 GB". 64 layers x 46,612 rows x 2 heads (8 // 4) x 128 x 2 B = 1,527,382,016 B = 1.42
    # GiB.
    result = report(model("qwq-32b"), 46_611, SglangOptions(tp_size=4, version="0.4.3.post3"))
    assert result.printed == (
        "KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB",
    )


def test_the_line_by_release() -> None:
    # llama-3.1-8b bf16: 32 layers x (444,500 + 1) x 8 heads x 128 x 2 B = 29,130,817,536 B =
    # 27.13 GiB for K and for V. Before 0.4.1.post6 no line; to 0.4.3.post2 no #tokens and a full
    # stop; from 0.5.13 the torch dtype first.
    def line(version: str) -> tuple[str, ...]:
        return report(model("llama-3.1-8b"), 444_500, SglangOptions(version=version)).printed

    figures = "K size: 27.13 GB, V size: 27.13 GB"
    assert line("0.4.1.post5") == ()
    assert line("0.4.2") == (f"KV Cache is allocated. {figures}.",)
    assert line("0.5.12") == (f"KV Cache is allocated. #tokens: 444500, {figures}",)
    assert line(LATEST) == (
        f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: 444500, {figures}",
    )


def test_fp8_line_prints_the_torch_dtype() -> None:
    # club-3090 #1261 shows the format: "KV Cache is allocated. dtype: torch.float8_e4m3fn,
    # #tokens: 454112, K size: 3.46 GB, V size: 3.46 GB" (a hybrid GDN model, not sized here).
    # llama-3.1-8b fp8: 32 x 100,001 x 8 x 128 x 1 B = 3,276,832,768 B = 3.05 GiB.
    result = report(model("llama-3.1-8b"), 100_000, SglangOptions("fp8_e4m3"))
    assert result.printed == (
        "KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 100000,"
        " K size: 3.05 GB, V size: 3.05 GB",
    )


def test_mla_pool_prints_from_0_4_5_post3() -> None:
    # deepseek-v3 bf16: 61 x (100,000 + 1) x 576 x 2 B = 7,027,270,272 B = 6.54 GiB.
    def line(version: str) -> tuple[str, ...]:
        return report(model("deepseek-v3"), 100_000, SglangOptions(version=version)).printed

    assert line("0.4.5.post2") == ()
    assert line("0.4.5.post3") == ("KV Cache is allocated. #tokens: 100000, KV size: 6.54 GB",)


def test_page_size_pads_one_page_and_arrived_in_0_4_4() -> None:
    # (#tokens + page_size) rows: llama-3.1-8b, page 64: 32 x 100,064 x 8 x 128 x 2 x 2 (K, V).
    result = report(model("llama-3.1-8b"), 100_000, SglangOptions(page_size=64))
    assert result.engine_kv_bytes == 32 * 100_064 * 8 * 128 * 2 * 2
    with pytest.raises(NotCovered, match=r"0\.4\.4"):
        report(model("llama-3.1-8b"), 100_000, SglangOptions(page_size=64, version="0.4.3"))


def test_versions_are_releases_read_and_latest_is_the_newest() -> None:
    assert LATEST == RELEASES[-1] == "0.5.23"
    same = report(model("qwen3-8b"), 1000, SglangOptions(version="v0.5.23"))
    assert same.version == report(model("qwen3-8b"), 1000, SglangOptions()).version == "0.5.23"
    # a release not read is refused as a value outside the table, never taken for another
    with pytest.raises(UnknownValue, match=r"from 0\.4\.0 to 0\.5\.23"):
        report(model("qwen3-8b"), 1000, SglangOptions(version="0.5.24"))
    with pytest.raises(UnknownValue, match=r"such as 0\.5\.6\.post2"):
        report(model("qwen3-8b"), 1000, SglangOptions(version="PR 11309 branch"))


def test_cache_dtypes_follow_the_release() -> None:
    # bf16 arrived in 0.5.4, fp4_e2m1 in 0.5.4.post3 and left in 0.5.21 (server_args.py)
    assert "bf16" not in kv_cache_dtypes((0, 5, 3, 3))
    assert "fp4_e2m1" in kv_cache_dtypes((0, 5, 20, 0))
    assert "fp4_e2m1" not in kv_cache_dtypes((0, 5, 21, 0))
    with pytest.raises(UnknownValue, match="fp8_e5m2"):
        report(model("qwen3-8b"), 1000, SglangOptions("bf16", version="0.5.3"))
    with pytest.raises(NotCovered, match="nvfp4"):
        report(model("qwen3-8b"), 1000, SglangOptions("nvfp4"))


def test_window_pool_needs_its_size_or_one_pool_stated() -> None:
    # Whether SGLang gives a model SWAKVPool depends on its architecture class and release, which
    # a model file does not record: neither is assumed.
    with pytest.raises(NotCovered, match="swa_tokens"):
        report(model("gpt-oss-20b"), 1000, SglangOptions())
    with pytest.raises(NotCovered, match="mamba"):
        report(model("qwen3-next-80b-a3b"), 1000, SglangOptions())


def test_window_pool_prints_two_lines_in_the_release_order() -> None:
    # gpt-oss-20b bf16: 12 full + 12 window layers, 8 KV heads x 64. Full pool 100,000 tokens:
    # 12 x 100,001 x 8 x 64 x 2 B = 1,228,812,288 B = 1.14 GiB for K and for V; window pool
    # 80,000: 12 x 80,001 x 8 x 64 x 2 = 983,052,288 B = 0.92 GiB. Before 0.5.17 the window pool
    # is built (and printed) first, as the Gemma 4 E4B log of jethac/dgx-spark-hijinks on 0.5.13
    # shows ("#tokens: 644444" then "#tokens: 805556"); from 0.5.19 each line is labelled.
    def lines(version: str) -> tuple[str, ...]:
        options = SglangOptions(swa_tokens=80_000, version=version)
        return report(model("gpt-oss-20b"), 100_000, options).printed

    full, window = "K size: 1.14 GB, V size: 1.14 GB", "K size: 0.92 GB, V size: 0.92 GB"
    assert lines("0.5.6") == (
        f"KV Cache is allocated. #tokens: 80000, {window}",
        f"KV Cache is allocated. #tokens: 100000, {full}",
    )
    dtype = "dtype: torch.bfloat16"
    assert lines("0.5.23") == (
        f"Full KV Cache is allocated. {dtype}, #tokens: 100000, {full}",
        f"SWA KV Cache is allocated. {dtype}, #tokens: 80000, {window}",
    )
    result = report(model("gpt-oss-20b"), 100_000, SglangOptions(swa_tokens=80_000))
    assert result.caches == ("total", "full_attention", "sliding_window")
    assert bytes_of(result.cache_parts("sliding_window")) == 2 * 983_052_288


def test_window_pool_pages_of_one_before_0_5_8() -> None:
    # SWAKVPool set page_size 1 for both pools until 0.5.8 passed --page-size through:
    # full 12 x (100,000 + 64) x 1,024 B a row (8 x 64 x 2 B) x 2 (K, V), window with 80,064 rows.
    options = SglangOptions(page_size=64, swa_tokens=80_000)
    paged = report(model("gpt-oss-20b"), 100_000, options)
    assert paged.engine_kv_bytes == 12 * 1024 * 2 * (100_064 + 80_064)
    early = report(model("gpt-oss-20b"), 100_000, options._replace(version="0.5.7"))
    assert early.engine_kv_bytes == 12 * 1024 * 2 * (100_001 + 80_001)


def test_one_pool_when_the_window_pool_is_off_or_absent() -> None:
    # --disable-hybrid-swa-memory, or a release before SWAKVPool (0.4.9): all 24 layers keep
    # every token: 24 x 100,001 x 8 x 64 x 2 B = 2,457,624,576 B = 2.29 GiB for K and for V.
    off = SglangOptions(disable_hybrid_swa_memory=True, version="0.5.6")
    assert report(model("gpt-oss-20b"), 100_000, off).printed == (
        "KV Cache is allocated. #tokens: 100000, K size: 2.29 GB, V size: 2.29 GB",
    )
    before = report(model("gpt-oss-20b"), 100_000, SglangOptions(version="0.4.8"))
    assert before.engine_kv_bytes == 2 * 2_457_624_576


def test_a_cache_sglang_does_not_print_apart() -> None:
    with pytest.raises(NoSuchCache, match="total, k, v"):
        engine_report(model("qwen3-8b"), "sglang", 1000).cache_parts("full_attention")


def test_log_reader_reads_every_format() -> None:
    log = (
        # club-3090 #1261 (2026-09-12, SGLang with dtype in the line)
        "[2026-09-12 00:22:48 TP0] KV Cache is allocated. dtype: torch.float8_e4m3fn,"
        " #tokens: 454112, K size: 3.46 GB, V size: 3.46 GB\n"
        # sglang PR #11309
        "[2025-10-07 23:17:19 DP0 TP0] KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB\n"
        # the 0.4.1.post6 to 0.4.3.post2 format (memory_pool.py:221 in 0.4.1.post6)
        "[TP0] KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB.\n"
    )
    reading = read_log(
        log
        # the 0.5.19 format of SWAKVPool's pools (memory_pool.py ``cache_name``), and the
        # pool split the Gemma 4 E4B log above would print on 0.5.13
        + "Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 805556, K size: 10.76 GB,"
        " V size: 10.76 GB\n"
        "Use sliding window memory pool. full_layer_tokens=805556, swa_layer_tokens=644444\n"
    )
    fields = [dict(figure.fields) for figure in reading.figures]
    assert fields == [
        {
            "dtype": "torch.float8_e4m3fn",
            "pool_tokens": "454112",
            "k_size": "3.46 GiB",
            "v_size": "3.46 GiB",
        },
        {"pool_tokens": "975424", "kv_size": "43.67 GiB"},
        {"k_size": "27.13 GiB", "v_size": "27.13 GiB"},
        {
            "cache": "full_attention",
            "dtype": "torch.bfloat16",
            "pool_tokens": "805556",
            "k_size": "10.76 GiB",
            "v_size": "10.76 GiB",
        },
    ]
    settings = {setting.key: setting.value for setting in reading.settings}
    assert settings["sglang_full_layer_tokens"] == "805556"
    assert settings["sglang_swa_layer_tokens"] == "644444"


def test_cli_takes_a_release_and_the_new_dtypes() -> None:
    result = run_cli(
        "kv", "llama-3.1-8b", "--context", "100000", "--engine", "sglang",
        "--engine-version", "0.5.6.post2", "--kv-cache-dtype", "bf16", cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "KV Cache is allocated. #tokens: 100000, K size: 6.10 GB, V size: 6.10 GB" in (
        result.stdout
    )  # 32 x 100,001 x 8 x 128 x 2 B = 6,553,665,536 B = 6.10 GiB
