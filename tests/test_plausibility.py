"""Hardware plausibility (KV701-KV705) and ``explain``, against hand computations.

Every expected number is worked out in the comment beside it from the hardware and model files
(hardware/*.yaml, models/*.yaml), not taken from the code.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from conftest import FIXTURE_DATASET, REPO, copy_dataset, run_cli
from kvrecords.checks.context import RecordContext
from kvrecords.checks.hardware import hardware_catalog
from kvrecords.checks.plausibility import (
    Evaluation,
    Inputs,
    RunSetup,
    all_evaluations,
    evaluate_fit,
    evaluate_fit_claims,
    run_setups,
)
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.hardware import hardware_index
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.geometry import Attention, Model
from kvrecords.kv.hardware import hardware_from_data
from kvrecords.kv.roofline import attention_flops_per_token
from kvrecords.kv.weights import BF16, readings, weight_format
from kvrecords.runner.validate import validate
from kvrecords.tools.explain import explain_record

GIB = 1024**3
SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")
CATALOG = hardware_catalog(REPO)


def hardware(hardware_id: str) -> object:
    state = CATALOG.get(hardware_id)
    assert state is not None and state.hardware is not None, state
    return state.hardware


def context_of(root: Path, record: Path) -> tuple[RecordContext, Inputs]:
    document = read_document(root / record, record.as_posix())
    assert isinstance(document, Document)
    model_id = document.data["model"]
    model = load_model_file(root / "models" / f"{model_id}.yaml")
    ctx = RecordContext(document, model, f"models/{model_id}")
    return ctx, Inputs(hardware_index(document.data, hardware_catalog(root)))


def evaluations_of(root: Path, record: Path) -> dict[str, Evaluation]:
    """Every evaluation of a record by its check's name."""
    ctx, inputs = context_of(root, record)
    return {evaluation.check: evaluation for evaluation in all_evaluations(ctx, inputs)}


def setups_of(root: Path, record: Path) -> list[RunSetup]:
    ctx, inputs = context_of(root, record)
    return run_setups(ctx, inputs)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# ---- the hardware catalog ---------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((REPO / "hardware").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_hardware_file_loads_clean(path: Path) -> None:
    state = CATALOG.get(path.stem)
    assert state is not None and state.problems == [] and state.hardware is not None
    assert state.hardware.id == path.stem


def test_rtx_5090_figures() -> None:
    hw = hardware("rtx-5090")
    # usable_gib 31.84 -> 31.84 x 2^30 B, exact (not a binary float)
    assert hw.usable_memory_bytes == Fraction(3184, 100) * GIB  # type: ignore[attr-defined]
    assert not hw.memory_is_nominal  # type: ignore[attr-defined]
    # 1,792 GB/s decimal
    assert hw.bandwidth_bytes_per_s == 1792 * 10**9  # type: ignore[attr-defined]
    peaks = hw.peaks  # type: ignore[attr-defined]
    # GeForce: the FP16-accumulate rate is the generous one (419, not 209.5; FP8 838, not 419)
    assert peaks["fp16"].flops_per_s == 419 * 10**12
    assert peaks["bf16"].flops_per_s == Fraction(2095, 10) * 10**12
    assert peaks["fp8"].flops_per_s == 838 * 10**12
    assert (peaks["fp4"].flops_per_s, peaks["fp4"].confidence) == (1676 * 10**12, "low")
    assert peaks["bf16"].confidence == "high" and peaks["fp8"].confidence == "medium"


def test_most_generous_figures_are_taken() -> None:
    # GB200: upper_bound 2500 (half the datasheet's sparse 5 PF) beats exemplar's 2450
    assert hardware("gb200").peaks["bf16"].flops_per_s == 2500 * 10**12  # type: ignore[attr-defined]
    # B200: bandwidth_max 8000 (DGX) beats the HGX table's 7700
    assert hardware("b200").bandwidth_bytes_per_s == 8000 * 10**9  # type: ignore[attr-defined]
    # A10G: no published peak, the A10's 125 as the upper bound, rated low
    a10g = hardware("a10g").peaks["bf16"]  # type: ignore[attr-defined]
    assert (a10g.flops_per_s, a10g.confidence) == (125 * 10**12, "low")
    # RTX 3090: INT8 284 TOPS from other_peak_rates serves GGUF matmuls
    assert hardware("rtx-3090").peaks["int8"].flops_per_s == 284 * 10**12  # type: ignore[attr-defined]


def test_unified_memory_is_nominal_and_flagged() -> None:
    gb10 = hardware("gb10-dgx-spark")
    # no driver total: nominal 128 GiB stands in, flagged; bandwidth max 301 over 273
    assert gb10.usable_memory_bytes == 128 * GIB  # type: ignore[attr-defined]
    assert gb10.memory_is_nominal and gb10.unified  # type: ignore[attr-defined]
    assert gb10.bandwidth_bytes_per_s == 301 * 10**9  # type: ignore[attr-defined]
    assert set(gb10.peaks) == {"fp4"}  # type: ignore[attr-defined]


def test_hardware_file_with_wrong_id_is_refused(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "d", with_records=False)
    edit(root / "hardware" / "rtx-4090.yaml", "id: rtx-4090", "id: rtx-4091")
    state = hardware_catalog(root).get("rtx-4090")
    assert state is not None and state.hardware is None
    assert [p.code for p in state.problems] == ["KV201"]


def test_hardware_from_data_without_memory_size() -> None:
    data = {
        "id": "x",
        "name": "X",
        "memory": {"nominal_gib": None, "usable_gib": None, "unified": False},
        "memory_bandwidth_gb_s": None,
        "peak_dense_tflops": {"bf16": None},
        "confidence": {"memory": "high", "bandwidth": "high", "compute": "high"},
    }
    hw = hardware_from_data(data)
    assert hw.usable_memory_bytes is None and hw.bandwidth_bytes_per_s is None and not hw.peaks


# ---- weight precision -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stated", "bits"),
    [
        ("bf16", 16),
        ("FP16", 16),
        ("fp8", 8),
        ("FP8 (dynamic)", 8),
        ("int8", 8),
        ("w8a8", 8),
        ("int4", 4),
        ("AWQ int4", 4),
        ("GPTQ-Int4", 4),
        ("AutoRound INT4", 4),
        ("nvfp4", Fraction(9, 2)),  # 4 + one fp8 scale per 16 values
        ("MXFP4", Fraction(17, 4)),  # 4 + one 8-bit scale per 32
        ("q8_0", Fraction(17, 2)),  # 34 bytes per 32 weights
        ("Q4_K_M", Fraction(9, 2)),  # lowest tensor type Q4_K: 144 bytes per 256
        ("Q4_K_XL", Fraction(17, 4)),  # dynamic mix, lowest taken as IQ4_XS: 136 / 256
        ("Unsloth Dynamic UD-Q4_K_XL", Fraction(17, 4)),
        ("q2 GGUF", Fraction(33, 16)),  # IQ2_XXS: 66 bytes per 256
        ("Q6_K", Fraction(105, 16)),  # 210 bytes per 256
        ("4.65bpw exl2", Fraction(93, 20)),
        ("4-bit", 4),
        ("W4A16", 4),
        ("16-bit", 16),
        ("BF-16", 16),
        ("IQ1_S", Fraction(25, 16)),  # 50 bytes per 256
    ],
)
def test_weight_precision_bits(stated: str, bits: Fraction | int) -> None:
    found = weight_format(stated)
    assert found is not None and found.bits == bits


@pytest.mark.parametrize(
    "stated",
    [
        "",
        "something else",
        "dynamic",
        "BF16 weights, FP8 KV",
        "MXFP4 (gpt-oss native)",
        "16 bit-ish",
    ],
)
def test_unknown_weight_precision(stated: str) -> None:
    assert weight_format(stated) is None


@pytest.mark.parametrize(
    "stated", ["non-quantized", "unquantized", "full precision", "native", "Non-Quantised"]
)
def test_native_weights_are_the_models_own_dtype(stated: str) -> None:
    native = weight_format(stated)
    assert native is not None
    # a bf16 model: 16 bits on both readings; a model of unstated dtype: fp8 at the fewest
    assert readings(native, "bf16", "vllm") == (BF16, BF16, None)
    unknown = readings(native, None, "vllm")
    assert (unknown.favourable.bits, unknown.likely.bits) == (8, 16) and unknown.assumption


def test_unstated_weights_take_the_fewest_bits_the_engine_runs() -> None:
    # vLLM and llama.cpp load GGUF down to IQ1_S (50 bytes per 256 weights = 1.5625 bits)
    assert readings(None, "bf16", "vllm").favourable.bits == Fraction(25, 16)
    assert readings(None, "bf16", "llama.cpp").likely.name == "Q4_K_M"
    # TensorRT-LLM's lowest is int4; an engine the table does not know may run anything
    assert readings(None, "bf16", "tensorrt-llm").favourable.bits == 4
    assert readings(None, None, "some-new-engine").favourable.bits == Fraction(25, 16)


def test_compute_types_follow_the_weights() -> None:
    assert weight_format("bf16").compute_types == ("bf16", "fp16")  # type: ignore[union-attr]
    assert "fp4" in weight_format("nvfp4").compute_types  # type: ignore[union-attr]
    assert "int8" in weight_format("Q4_K_M").compute_types  # type: ignore[union-attr]
    assert "fp4" not in weight_format("AWQ int4").compute_types  # type: ignore[union-attr]


# ---- formulas on the seed ---------------------------------------------------------------------

LIMIT_5090 = Fraction(3184, 100) * GIB  # one RTX 5090: 31.84 GiB = 34,187,939,676.16 B


def test_seed_fit_on_both_readings(fixture_root: Path) -> None:
    fit = evaluations_of(fixture_root, SEED)["run 'cold': fit"]
    assert fit.favourable is not None and fit.likely is not None
    # favourable: 27B read off the name is at least 26.5e9; "quantized" with vLLM is at least
    # IQ1_S, 1.5625 bits: 26.5e9 x 1.5625 / 8 = 5,175,781,250 B; the KV dtype is not stated,
    # vLLM's smallest is fp8: 16 layers x 4 x (256 + 256) x 1 B x 150,000 = 4,915,200,000 B
    assert fit.favourable.value == 5_175_781_250 + 4_915_200_000
    # likely: 27e9 x 4 bits / 8 = 13,500,000,000 B + bf16 KV 9,830,400,000 B = 68% of the card
    assert fit.likely.value == 13_500_000_000 + 9_830_400_000
    assert fit.favourable.limit == fit.likely.limit == LIMIT_5090
    assert fit.checked and not fit.violated and "is 68% of 1 x 31.84 GiB" in fit.likely.margin()


def test_seed_fit_claims_on_the_reading_that_favours_each(fixture_root: Path) -> None:
    ctx, inputs = context_of(fixture_root, SEED)
    fits, does_not_fit = evaluate_fit_claims(ctx, inputs)
    assert fits.favourable is not None and fits.likely is not None
    assert does_not_fit.favourable is not None and does_not_fit.likely is not None
    # "fits ... beside a quantized 27B": fewest bytes, 26.5e9 x 1.5625 / 8 = 5,175,781,250 B
    # + 9,830,400,000 B; likely int4: 13,500,000,000 + 9,830,400,000 = 23,330,400,000 B
    assert fits.favourable.value == 5_175_781_250 + 9_830_400_000
    assert fits.likely.value == 23_330_400_000 and fits.expect_within
    # "36.6 GiB, which would not": most bytes, 27.5e9 x 16 bits / 8 = 55,000,000,000 B
    # + 262,144 x 150,000 = 39,321,600,000 B; likely 13,500,000,000 + 39,321,600,000
    assert does_not_fit.favourable.value == 55_000_000_000 + 39_321_600_000
    assert does_not_fit.likely.value == 52_821_600_000 and not does_not_fit.expect_within
    assert not fits.violated and not does_not_fit.violated


def test_seed_prefill_ceiling_on_both_readings(fixture_root: Path) -> None:
    prefill = evaluations_of(fixture_root, SEED)["run 'cold': prefill context / TTFT"]
    assert prefill.favourable is not None and prefill.likely is not None
    # 150,000 tokens / 53.2 s = 2,819.55 tok/s
    assert prefill.favourable.value == Fraction(150_000_000, 53_200)
    # attention: 2 x 16 layers x 4 kv heads (no query heads stated) x (256 + 256) x 75,000
    # = 4,915,200,000 FLOP/token. Favourable: 2 x 26.5e9 + that = 57,915,200,000 against the
    # most generous peak on the card, fp4 1,676 TFLOP/s
    assert prefill.favourable.limit == Fraction(1676 * 10**12, 57_915_200_000)
    # likely: int4 weights run in bf16, 209.5 TFLOP/s / (54e9 + 4,915,200,000) = 3,555.9 tok/s
    assert prefill.likely.limit == Fraction(2095 * 10**11, 58_915_200_000)
    # the fp4 peak is rated low: even a violation of the favourable bound would only warn
    assert not prefill.violated and prefill.unfirm and prefill.severity == "warning"


def fixture(tmp_path: Path, case: str) -> dict[str, Evaluation]:
    """The evaluations of a fixture's record (tests/cases/<code>/<outcome>/<slug>)."""
    folder = REPO / "tests" / "cases" / case
    record = Path("records/kv-efficiency") / f"{folder.name}.yaml"
    root = copy_dataset(tmp_path / "d", with_records=False)
    (root / record).write_text((folder / record).read_text())
    return evaluations_of(root, record)


# llama-3.1-8b in bf16: 8e9 x 2 B, less its separate input embedding (128,256 x 4,096 =
# 525,336,576 parameters, 1,050,673,152 B), of which a decode step reads one row a token
BF16_8B = 16 * 10**9 - 128_256 * 4096 * 2  # 14,949,326,848 B read a decode step
KV_8B_4K = 131_072 * 4096  # 536,870,912 B at 4,096 tokens in bf16


def test_a_decode_rate_twice_the_favourable_roofline_fails_without_strict(tmp_path: Path) -> None:
    decode = fixture(tmp_path, "KV702/fail/twice-the-favourable-roofline")[
        "run 'one': decode decode_tokens_per_s"
    ]
    # everything stated: 1,008e9 / (14,949,326,848 + 536,870,912) = 65.1 tok/s on both
    # readings; 130 is 200%
    assert decode.limit == Fraction(1008 * 10**9, BF16_8B + KV_8B_4K)
    assert decode.impossible and decode.severity == "error"


def test_a_per_sequence_rate_under_concurrency_is_an_aggregate_at_best(tmp_path: Path) -> None:
    decode = fixture(tmp_path, "KV702/fail/unscoped-rate-under-concurrency-warns")[
        "run 'one': decode decode_tokens_per_s"
    ]
    assert decode.favourable is not None and decode.likely is not None
    # 8 sequences share one read of the weights: aggregate <= 8 x 1,008e9 / (14.95e9 + 8 x KV)
    # = 419.0 tok/s, which 300 is within; as one of the 8 sequences, 52.4 tok/s, which it is not
    assert decode.favourable.limit == Fraction(8 * 1008 * 10**9, BF16_8B + 8 * KV_8B_4K)
    assert decode.likely.limit == Fraction(1008 * 10**9, BF16_8B + 8 * KV_8B_4K)
    assert decode.violated and not decode.impossible and decode.severity == "warning"


def test_speculative_decoding_pays_for_its_draft(tmp_path: Path) -> None:
    decode = fixture(tmp_path, "KV702/pass/speculative-decoding-field")[
        "run 'one': decode decode_tokens_per_s"
    ]
    assert decode.favourable is not None
    # eagle3 drafting 3: at most 4 tokens a step, 4 x 1,008e9 / (14.95e9 + draft + KV) <= 260.4
    assert decode.favourable.limit <= Fraction(4 * 1008 * 10**9, BF16_8B + KV_8B_4K)
    assert not decode.violated


def test_speculative_decoding_under_methodology_holds_for_every_run(tmp_path: Path) -> None:
    own = fixture(tmp_path / "own", "KV702/pass/speculative-decoding-field")
    shared = fixture(tmp_path / "shared", "KV702/pass/speculative-decoding-for-every-run")
    run_level = own["run 'one': decode decode_tokens_per_s"]
    every_run = shared["run 'one': decode decode_tokens_per_s"]
    assert every_run.favourable is not None and run_level.favourable is not None
    # the same eagle3 drafting 3, stated once for the record: the same 4-tokens-a-step bound
    assert every_run.favourable.limit == run_level.favourable.limit
    assert every_run.favourable.limit > Fraction(1008 * 10**9, BF16_8B + KV_8B_4K)
    assert not every_run.violated


def test_a_thousand_drafted_tokens_do_not_buy_a_thousandfold(tmp_path: Path) -> None:
    decode = fixture(tmp_path, "KV702/fail/thousand-draft-tokens")[
        "run 'one': decode decode_tokens_per_s"
    ]
    # no token costs less than 2 x 8e9 FLOP: 330.3 TFLOP/s / 16e9 = 20,643.75 tok/s at most
    assert decode.limit is not None and decode.limit <= Fraction(3303 * 10**11, 16 * 10**9)
    assert decode.impossible and decode.severity == "error"


def test_kv_offload_exempts_the_kv_not_the_weights(tmp_path: Path) -> None:
    fit = fixture(tmp_path, "KV701/fail/bf16-405b-one-h100-kv-offload")["run 'one': fit"]
    # 405e9 x 2 B = 810,000,000,000 B of weights on one 79.65 GiB H100, KV not counted
    assert fit.value == 810 * 10**9
    assert fit.limit == Fraction(7965, 100) * GIB
    assert fit.impossible and fit.severity == "error"


def test_attention_flops_with_a_window() -> None:
    # one full layer and two window-4 layers, 1 kv head of width 4 (K) + 4 (V), context 8:
    # full: 2 x 1 x 1 x (4 + 4) x 8/2 = 64
    # window: average attended = 4 x (2 x 8 - 4) / (2 x 8) = 3; 2 x 2 x 1 x 8 x 3 = 96
    model = Model("m", "M", 3, (Attention(1, 1, 4), Attention(2, 1, 4, window=4)))
    flops, text = attention_flops_per_token(model, Fraction(8))
    assert flops == 64 + 96
    assert text.startswith("2 x 1 layers x 1 heads x (4 + 4) x 8/2")
    # below the window every layer attends context/2 on average: 3 layers x 2 x 8 x 2 = 96
    assert attention_flops_per_token(model, Fraction(4))[0] == 96
    # with 4 query heads stated, each of them attends: 4 x 160
    with_heads = Model("m", "M", 3, model.groups, query_heads=4)
    assert attention_flops_per_token(with_heads, Fraction(8))[0] == 4 * 160


def test_missing_inputs_are_not_checked(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "d")
    edit(
        root / SEED,
        "    accelerator: rtx-5090\n    count: 1",
        "    accelerator: null\n    count: 1",
    )
    cold = setups_of(root, SEED)[0]
    fit = evaluate_fit(cold)
    assert not fit.checked and fit.skipped == "methodology.hardware.accelerator is null"


# ---- severities and the command line ----------------------------------------------------------


def test_warnings_fail_only_with_strict(tmp_path: Path) -> None:
    # native weights of llama-3.1-70b, whose dtype is not stated: 70e9 x 8 bits (fp8, the
    # fewest a release uses) fits one H100, 70e9 x 16 bits (bf16, likely) does not
    case = REPO / "tests/cases/KV701/fail/native-weights-dtype-unknown-warns"
    root = copy_dataset(tmp_path / "d", with_records=False)
    record = "records/kv-efficiency/native-weights-dtype-unknown-warns.yaml"
    (root / record).write_text((case / record).read_text())
    problems = validate(root).problems
    assert [(p.code, p.severity) for p in problems] == [("KV701", "warning")]
    relaxed = run_cli("validate", cwd=root)
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert "KV701" in relaxed.stdout and "[warning]" in relaxed.stdout
    assert "0 errors, 1 warning in 1 file" in relaxed.stdout
    strict = run_cli("validate", "--strict", cwd=root)
    assert strict.returncode == 1, strict.stdout + strict.stderr


def test_stated_inputs_make_an_error(tmp_path: Path) -> None:
    case = REPO / "tests/cases/KV701/fail/bf16-70b-on-one-h100"
    root = copy_dataset(tmp_path / "d", with_records=False)
    record = "records/kv-efficiency/bf16-70b-on-one-h100.yaml"
    (root / record).write_text((case / record).read_text())
    (problem,) = validate(root).problems
    # 70e9 x 2 B = 140,000,000,000 B = 130.39 GiB; KV 327,680 x 4,096 = 1.25 GiB
    assert problem.severity == "error"
    assert "weights 130.39 GiB (70B total params x 16 bits / 8 (bf16)) + 1.25 GiB KV (bf16)" in (
        problem.message
    )
    assert run_cli("validate", cwd=root).returncode == 1


# ---- explain ----------------------------------------------------------------------------------


def test_explain_the_seed(fixture_root: Path) -> None:
    text = explain_record(fixture_root, fixture_root / SEED)
    for expected in [
        "bytes per token: 16 layers x 4 kv heads x (256 + 256) x 2 B = 65,536 B/token",
        "KV at context: 65,536 B/token x 150,000 tokens = 9,830,400,000 B (9.16 GiB)",
        "speedup of ttft_ms (single), cold -> warm: 53,200 / 2,300 = 23.1304x (stated 23x)",
        "cold: prefill rate: 150,000 tokens / 53.2 s = 2,819.5 tok/s",
        "parameters: 27B total, 27B active",
        "fp16 dense peak 419 TFLOP/s (peak_dense_tflops.fp16_fp16_accumulate 419",
        "= 21.73 GiB is 68% of 1 x 31.84 GiB",
        "KV704 fit claim [1] (does not fit): favourable: weights 51.22 GiB",
        "= 49.19 GiB is 155% of 1 x 31.84 GiB",
        "KV703 run 'warm': prefill context / TTFT: the TTFT may be served from reused KV",
        "Problems: none",
    ]:
        assert expected in text, expected


@pytest.mark.parametrize(
    "record",
    sorted(p.relative_to(FIXTURE_DATASET) for p in (FIXTURE_DATASET / "records").rglob("*.yaml")),
    ids=lambda p: p.stem,
)
def test_explain_every_record(fixture_root: Path, record: Path) -> None:
    text = explain_record(fixture_root, fixture_root / record)
    assert text.startswith(record.as_posix())
    assert "Plausibility" in text and "Not checked" in text


def test_explain_never_raises_on_broken_records(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "d")
    folder = root / "records" / "kv-efficiency"
    (folder / "bad-yaml.yaml").write_text("id: [unclosed\n")
    (folder / "bad-schema.yaml").write_text("id: kv-efficiency/bad-schema\nmodel: 3\n")
    text = (root / SEED).read_text()
    (folder / "no-model.yaml").write_text(text.replace("model: qwen3-8-27b", "model: nope"))
    (folder / "path-model.yaml").write_text(text.replace("model: qwen3-8-27b", "model: ../x"))
    assert "cannot be read" in explain_record(root, folder / "bad-yaml.yaml")
    assert "fails its schema" in explain_record(root, folder / "bad-schema.yaml")
    assert "models/nope.yaml does not exist" in explain_record(root, folder / "no-model.yaml")
    assert "not a model id" in explain_record(root, folder / "path-model.yaml")


@pytest.mark.parametrize(
    ("published", "engine", "favourable", "likely"),
    [
        # a bf16 checkpoint: vLLM serves it as is, and quantizes it in flight to 4 bits at least
        (("bf16",), "vllm", "nf4", "bf16"),
        (("bf16",), "sglang", "nf4", "bf16"),
        (("bf16",), "tensorrt-llm", "int4", "bf16"),
        # llama.cpp quantizes any checkpoint to any GGUF type; Ollama serves Q4_K_M by default
        (("bf16",), "ollama", "iq1_s", "Q4_K_M"),
        # an fp8 checkpoint (DeepSeek-V3) is not requantized: both readings are fp8
        (("fp8",), "vllm", "fp8", "fp8"),
        # the main checkpoint first: fp8 likely, the published mxfp4 (4.25 bits) the fewest
        (("fp8", "mxfp4"), "vllm", "mxfp4", "fp8"),
        # a bf16 checkpoint in flight (4 bits) goes below a published mxfp4 (4.25 bits)
        (("bf16", "mxfp4"), "vllm", "nf4", "bf16"),
        # nothing listed: the fewest bits the engine runs, the model's own dtype as likely
        (None, "vllm", "iq1_s", "bf16"),
    ],
)
def test_unstated_weights_are_bounded_by_the_published_checkpoints(
    published: tuple[str, ...] | None, engine: str, favourable: str, likely: str
) -> None:
    found = readings(None, "bf16", engine, published)
    assert (found.favourable.name, found.likely.name) == (favourable, likely)
    assert found.assumption is not None
    decided = "published" if published else "lists no published precisions"
    assert decided in found.assumption


def test_a_stated_precision_is_not_moved_by_the_published_ones() -> None:
    stated = weight_format("fp8")
    assert readings(stated, "bf16", "vllm", ("bf16",)) == (stated, stated, None)
