"""KV arithmetic against hand computations from the model facts (shared/model-facts).

Every expected number below is worked out in the comment beside it, not taken from the code.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from kvrecords.dataset.models import load_model_file
from kvrecords.kv.arithmetic import kv_report, parse_element_type
from kvrecords.kv.geometry import Attention, Model, MultiHeadLatent

MODELS = Path(__file__).resolve().parents[1] / "models"
BF16 = parse_element_type("bf16")


def model(model_id: str) -> Model:
    return load_model_file(MODELS / f"{model_id}.yaml")


def test_mha_llama_2_7b() -> None:
    # 32 layers x 32 kv heads x (128 + 128) x 2 B = 524,288 B/token; x 4,096 = 2 GiB exactly
    report = kv_report(model("llama-2-7b"), BF16, 4096)
    assert report.bytes_per_token == 524_288
    assert report.kv_bytes_at_context == 2 * 1024**3
    assert report.fixed_state_bytes == 0


def test_gqa_llama_3_1_70b() -> None:
    # 80 x 8 x 256 x 2 = 327,680 B/token; x 131,072 tokens = 42,949,672,960 B = 40 GiB
    report = kv_report(model("llama-3.1-70b"), BF16, 131_072)
    assert report.bytes_per_token == 327_680
    assert report.kv_bytes_at_context == 40 * 1024**3


def test_head_dim_is_read_not_derived() -> None:
    # Qwen3-32B: 64 x 8 x (128 + 128) x 2 = 262,144; hidden/heads = 80 would give 163,840
    assert kv_report(model("qwen3-32b"), BF16, 1).bytes_per_token == 262_144


def test_mla_deepseek_v3() -> None:
    # 61 layers x (512 + 64) x 2 B = 70,272 B/token, no K/V factor of 2
    # x 163,840 tokens = 11,513,364,480 B; fp8 halves it: 35,136 B/token
    report = kv_report(model("deepseek-v3"), BF16, 163_840)
    assert report.bytes_per_token == 70_272
    assert report.kv_bytes_at_context == 11_513_364_480
    assert kv_report(model("deepseek-v3"), parse_element_type("fp8"), 1).bytes_per_token == 35_136


def test_fp8_ds_mla_is_vllms_deepseek_v3_2_layout() -> None:
    # per layer and token: 512 latent x 1 B + 512 / 128 = 4 fp32 scales x 4 B + 64 rope x 2 B
    # = 512 + 16 + 128 = 656 B, and the indexer key 128 x 1 B + 128 // 128 x 4 B = 132 B;
    # 61 layers x (656 + 132) = 48,068 B/token
    ds_mla = parse_element_type("fp8_ds_mla")
    report = kv_report(model("deepseek-v3.2"), ds_mla, 1000)
    assert report.bytes_per_token == 48_068
    assert report.kv_bytes_at_context == 48_068_000
    assert "(512 x 1 B fp8 + 512/128 x 4 B scales + 64 x 2 B bf16 rope)" in report.formula()
    assert "+ 61 layers x 1 indexer key x (128 x 1 B fp8 + 128/128 x 4 B scales)" in (
        report.formula()
    )
    # without an indexer (DeepSeek-V3's geometry) the MLA part alone: 61 x 656 = 40,016
    assert kv_report(model("deepseek-v3"), ds_mla, 1).bytes_per_token == 40_016
    # a layout of MLA latents: nothing to say about a model whose layers cache K and V
    assert kv_report(model("llama-3.1-8b"), ds_mla, 1000).bytes_per_token is None


def test_indexer_keys_take_the_type_the_model_stores_them_in() -> None:
    # deepseek-v3.2, bf16: MLA 61 x (512 + 64) x 2 = 70,272, plus the lightning indexer's key
    # in fp8 with one fp32 scale whatever the cache's type, 61 x (128 + 4) = 8,052: 78,324
    # B/token (what vLLM allocates in bf16); at 32,768 tokens 78,324 x 32,768 = 2,566,520,832 B
    report = kv_report(model("deepseek-v3.2"), BF16, 32_768)
    assert report.bytes_per_token == 78_324
    assert report.kv_bytes_at_context == 2_566_520_832
    assert report.formula() == (
        "61 layers x (512 + 64) x 2 B + 61 layers x 1 indexer key x 128 x 1 B"
        " + 61 layers x 1 key scales x 4 B = 78,324 B/token"
    )
    # fp8: 61 x 576 = 35,136 + the same 8,052 = 43,188; per-token-head scales add one fp32
    # scale to the latent only (the key has its own): 43,188 + 61 x 4 = 43,432
    assert kv_report(model("deepseek-v3.2"), parse_element_type("fp8"), 1).bytes_per_token == (
        43_188
    )
    per_head = kv_report(model("deepseek-v3.2"), parse_element_type("fp8-per-token-head"), 1)
    assert per_head.bytes_per_token == 43_432


def test_indexer_keys_without_a_type_of_their_own_take_the_basis_dtype() -> None:
    # the same geometry with the key's type unset: 61 x (576 + 128) x 2 = 85,888 B/token
    v32 = model("deepseek-v3.2")
    (mla,) = v32.leaf_groups()
    assert isinstance(mla, MultiHeadLatent) and mla.indexer is not None
    untyped = mla._replace(indexer=mla.indexer._replace(dtype=None))
    other = Model(v32.id, v32.name, v32.num_layers, (untyped,))
    assert kv_report(other, BF16, 1).bytes_per_token == 85_888


def test_unknown_indexer_dimensions_refuse_the_figure() -> None:
    # qwen3.8-flash-next: its 12 attention layers keep indexer keys of unpublished width
    report = kv_report(model("qwen3.8-flash-next"), BF16, 1, "full_attention")
    assert report.bytes_per_token is None
    assert "? indexer key x ?" in report.formula()


@pytest.mark.parametrize(
    ("cache_type", "block_bytes"),
    [("q8_0", 34), ("q4_0", 18), ("q4_1", 20), ("q5_0", 22), ("q5_1", 24), ("iq4_nl", 18)],
)
def test_ggml_cache_types_cost_their_block_bytes(cache_type: str, block_bytes: int) -> None:
    # Qwen3-8B: 36 layers x 8 kv heads x (128 + 128) = 73,728 values per token, 2,304 blocks
    # of 32; q8_0: 2,304 x 34 = 78,336 B/token, q4_0 2,304 x 18 = 41,472 B/token
    report = kv_report(model("qwen3-8b"), parse_element_type(cache_type), 1)
    assert report.bytes_per_token == 2_304 * block_bytes


def test_five_to_one_local_global_beyond_the_window() -> None:
    # Gemma 3 27B: 52 local layers (window 1,024) and 10 global, 16 kv heads x (128 + 128) x 2 B
    # per token while growing: 52 x 8,192 + 10 x 8,192 = 425,984 + 81,920 = 507,904
    # at 32,768 tokens: 425,984 x 1,024 + 81,920 x 32,768 = 436,207,616 + 2,684,354,560
    report = kv_report(model("gemma-3-27b"), BF16, 32_768)
    assert report.bytes_per_token == 507_904
    assert report.kv_bytes_at_context == 3_120_562_176
    # below the window every layer still grows: 507,904 x 512 = 260,046,848
    assert kv_report(model("gemma-3-27b"), BF16, 512).kv_bytes_at_context == 260_046_848


def test_all_sliding_window_mistral() -> None:
    # 32 x 8 x 256 x 2 = 131,072 B/token; every layer holds min(L, 4,096) tokens
    mistral = model("mistral-7b-v0.1")
    assert kv_report(mistral, BF16, 1_000).kv_bytes_at_context == 131_072_000
    # 131,072 x 4,096 = 536,870,912 at 4,096 and at 32,768 alike
    assert kv_report(mistral, BF16, 4_096).kv_bytes_at_context == 536_870_912
    assert kv_report(mistral, BF16, 32_768).kv_bytes_at_context == 536_870_912


def test_phi3_window_of_2047() -> None:
    # 32 x 32 x (96 + 96) x 2 = 393,216 B/token; at 4,096 tokens 2,047 are kept: 804,913,152
    assert kv_report(model("phi-3-mini-4k"), BF16, 4_096).kv_bytes_at_context == 804_913_152


def test_gated_deltanet_hybrid_state() -> None:
    # Qwen3-Next: 12 attention layers x 2 x (256 + 256) x 2 = 24,576 B/token
    # state per GDN layer: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) = 3 x 8,192 = 24,576
    #   + recurrent 32 x 128 x 128 = 524,288 -> 548,864 elements; x 36 layers x 2 B = 39,518,208
    qwen_next = model("qwen3-next-80b-a3b")
    report = kv_report(qwen_next, BF16, 100_000)
    assert report.bytes_per_token == 24_576
    assert report.kv_bytes_at_context == 2_457_600_000
    assert report.fixed_state_bytes == 39_518_208
    # the state's dtype is its own setting: fp32 doubles the state, not the KV
    fp32_state = kv_report(qwen_next, BF16, 100_000, state_dtype=parse_element_type("fp32"))
    assert fp32_state.fixed_state_bytes == 79_036_416
    assert fp32_state.bytes_per_token == 24_576


def test_unknown_state_stays_unknown() -> None:
    # qwen3-8-27b: the seed gives the 16 attention layers only; the GDN state is not published
    report = kv_report(model("qwen3-8-27b"), BF16, 150_000)
    assert report.bytes_per_token == 65_536  # 16 x 4 x (256 + 256) x 2
    assert report.kv_bytes_at_context == 9_830_400_000  # 65,536 x 150,000
    assert report.fixed_state_bytes is None


def test_mamba2_hybrid_nemotron_h() -> None:
    # 4 attention layers x 8 x (128 + 128) x 2 = 16,384 B/token
    # Mamba-2 per layer: conv 3 x (128 x 64 + 2 x 8 x 128) = 3 x 10,240 = 30,720
    #   + ssm 128 x 64 x 128 = 1,048,576 -> 1,079,296; x 24 layers x 2 B = 51,806,208
    report = kv_report(model("nemotron-h-8b"), BF16, 8_192)
    assert report.bytes_per_token == 16_384
    assert report.fixed_state_bytes == 51_806_208


def test_mamba1_hybrid_jamba() -> None:
    # Mamba-1 per layer: conv 3 x 8,192 + ssm 8,192 x 16 = 24,576 + 131,072 = 155,648
    # x 28 layers x 2 B = 8,716,288; attention 4 x 8 x 256 x 2 = 16,384 B/token
    report = kv_report(model("jamba-v0.1"), BF16, 1)
    assert report.fixed_state_bytes == 8_716_288
    assert report.bytes_per_token == 16_384


def test_parallel_hybrid_falcon_h1() -> None:
    # every one of 36 layers: attention 2 x (64 + 64) x 2 = 512 B/token -> 18,432 B/token
    # and Mamba-2: conv 3 x (24 x 64 + 2 x 1 x 128) = 5,376 + ssm 24 x 64 x 128 = 196,608
    #   -> 201,984 x 36 x 2 B = 14,542,848
    report = kv_report(model("falcon-h1-0.5b"), BF16, 16_384)
    assert report.bytes_per_token == 18_432
    assert report.fixed_state_bytes == 14_542_848


def test_shared_caches_gemma_3n() -> None:
    # 20 of 35 layers own a cache, 2 x (256 + 256) x 2 = 2,048 B/token each -> 40,960 B/token
    # at 32,768: 4 global x 2,048 x 32,768 = 268,435,456 + 16 local x 2,048 x 512 = 16,777,216
    report = kv_report(model("gemma-3n-e4b"), BF16, 32_768)
    assert report.bytes_per_token == 40_960
    assert report.kv_bytes_at_context == 285_212_672


@pytest.mark.parametrize(
    ("dtype", "bytes_per_token"),
    [
        ("fp8", 65_536),  # 32 x 8 x 256 elements = 65,536 x 1 B
        ("int4", 32_768),  # x 0.5 B
        ("nvfp4", 36_864),  # 65,536 x (4 + 8/16) bits / 8
        ("mxfp4", 34_816),  # 65,536 x (4 + 8/32) bits / 8
        ("fp8-per-token-head", 67_584),  # 65,536 + 32 layers x 16 vectors x 4 B = 2,048
        ("fp32", 262_144),
    ],
)
def test_element_types_llama_3_1_8b(dtype: str, bytes_per_token: int) -> None:
    assert (
        kv_report(model("llama-3.1-8b"), parse_element_type(dtype), 1).bytes_per_token
        == bytes_per_token
    )


def test_kivi_two_bit_grouped_quantization() -> None:
    # Llama-2-7B: 32 x 32 x 256 = 262,144 elements/token; 2 bits + (16-bit scale + 16-bit
    # zero) / 32 values = 3 bits -> 98,304 B/token; groups of 128: 2.25 bits -> 73,728
    llama2 = model("llama-2-7b")
    assert kv_report(llama2, parse_element_type("int2-g32"), 1).bytes_per_token == 98_304
    assert kv_report(llama2, parse_element_type("int2-g128"), 1).bytes_per_token == 73_728


def test_sub_byte_totals_stay_exact() -> None:
    # one layer, 1 kv head, head_dim 3: 6 elements x 4 bits = 3 B/token; fp4 over 5 tokens = 15 B
    tiny = Model("tiny", "tiny", 1, (Attention(1, 1, 3),))
    assert kv_report(tiny, parse_element_type("fp4"), 5).kv_bytes_at_context == 15
    # int3: 6 x 3 bits = 18 bits = 9/4 B per token
    assert kv_report(tiny, parse_element_type("int3"), 1).bytes_per_token == Fraction(9, 4)


def test_counterfactual_every_layer_full_attention() -> None:
    # qwen3-8-27b: 64 layers x 4 x 512 x 2 = 262,144 B/token, no state
    report = kv_report(model("qwen3-8-27b"), BF16, 150_000, "all_layers_as_full_attention")
    assert report.bytes_per_token == 262_144
    assert report.kv_bytes_at_context == 39_321_600_000
    assert report.fixed_state_bytes == 0
    # gemma-3-27b without windows at 32,768: 507,904 x 32,768 = 16,642,998,272
    no_window = kv_report(model("gemma-3-27b"), BF16, 32_768, "all_layers_as_full_attention")
    assert no_window.kv_bytes_at_context == 16_642_998_272


def test_counterfactual_needs_attention_layers() -> None:
    with pytest.raises(ValueError, match="no attention layers"):
        kv_report(model("deepseek-v3"), BF16, 1, "all_layers_as_full_attention")


def test_counterfactual_needs_one_attention_shape() -> None:
    # gemma-4-e2b: 3 global layers of 1 x (512 + 512), 12 local of 1 x (256 + 256); pricing all
    # 35 layers at the global shape (35 x 1,024 x 2 = 71,680 B/token) would overstate the saving
    with pytest.raises(ValueError, match=r"2 shapes \(1 kv heads x \(512 \+ 512\); 1 kv heads"):
        kv_report(model("gemma-4-e2b"), BF16, 1, "all_layers_as_full_attention")
    cache = kv_report(model("gemma-4-e2b"), BF16, 1, "cache")
    assert cache.bytes_per_token == 3 * 1024 * 2 + 12 * 512 * 2  # 18,432


def test_full_attention_basis_leaves_out_windows() -> None:
    # gemma-2-9b: only the 21 global layers: 21 x 8 x 512 x 2 = 172,032
    assert kv_report(model("gemma-2-9b"), BF16, 1, "full_attention").bytes_per_token == 172_032


@pytest.mark.parametrize("name", ["bf8", "int2-g0", "fp16-per-token-head-g32", "", "nvfp4-g16"])
def test_unknown_element_types_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="valid:"):
        parse_element_type(name)


def test_aliases() -> None:
    assert parse_element_type("bfloat16") == parse_element_type("bf16")
    assert parse_element_type("FP8_E4M3").value_bits == 8


def test_the_command_line_offers_every_layer_basis() -> None:
    from kvrecords.cli import choices
    from kvrecords.kv import arithmetic

    assert choices.LAYER_BASES == arithmetic.LAYER_BASES
