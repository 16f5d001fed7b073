"""Hardware plausibility (KV701-KV705) and ``explain``, against hand computations.

Every expected number is worked out in the comment beside it from the hardware and model files
(hardware/*.yaml, models/*.yaml), not taken from the code.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset, run_cli
from kvrecords.checks.context import RecordContext
from kvrecords.checks.hardware import HardwareCatalog
from kvrecords.checks.plausibility import (
    Evaluation,
    Setup,
    attention_flops_per_token,
    evaluate_decode,
    evaluate_fit,
    evaluate_fit_claims,
    evaluate_prefill,
    hardware_index,
    setup_of,
    speculation,
)
from kvrecords.dataset.document import Document, parse_document, read_document
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.geometry import Attention, Model
from kvrecords.kv.hardware import hardware_from_data
from kvrecords.kv.weights import weight_format
from kvrecords.runner.validate import validate
from kvrecords.tools.explain import explain_record

GIB = 1024**3
SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")
CATALOG = HardwareCatalog(REPO)


def hardware(hardware_id: str) -> object:
    state = CATALOG.get(hardware_id)
    assert state is not None and state.hardware is not None, state
    return state.hardware


def context_of(root: Path, record: Path) -> tuple[RecordContext, Setup]:
    document = read_document(root / record, record.as_posix())
    assert isinstance(document, Document)
    model_id = document.data["model"]
    model = load_model_file(root / "models" / f"{model_id}.yaml")
    ctx = RecordContext(document, model, f"models/{model_id}")
    return ctx, setup_of(ctx, hardware_index(document.data, HardwareCatalog(root)))


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
    state = HardwareCatalog(root).get("rtx-4090")
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
        ("MXFP4 (gpt-oss native)", Fraction(17, 4)),  # 4 + one 8-bit scale per 32
        ("q8_0", Fraction(17, 2)),  # 34 bytes per 32 weights
        ("Q4_K_M", Fraction(9, 2)),  # lowest tensor type Q4_K: 144 bytes per 256
        ("Q4_K_XL", Fraction(17, 4)),  # dynamic mix, lowest taken as IQ4_XS: 136 / 256
        ("Unsloth Dynamic UD-Q4_K_XL", Fraction(17, 4)),
        ("q2 GGUF (ds4flash.gguf, ~91 GiB)", Fraction(33, 16)),  # IQ2_XXS: 66 bytes per 256
        ("Q6_K", Fraction(105, 16)),  # 210 bytes per 256
        ("4.65bpw exl2", Fraction(93, 20)),
        ("4-bit", 4),
    ],
)
def test_weight_precision_bits(stated: str, bits: Fraction | int) -> None:
    found = weight_format(stated)
    assert found is not None and found.bits == bits


@pytest.mark.parametrize("stated", ["", "something else", "dynamic"])
def test_unknown_weight_precision(stated: str) -> None:
    assert weight_format(stated) is None


def test_compute_types_follow_the_weights() -> None:
    assert weight_format("bf16").compute_types == ("bf16", "fp16")  # type: ignore[union-attr]
    assert "fp4" in weight_format("nvfp4").compute_types  # type: ignore[union-attr]
    assert "int8" in weight_format("Q4_K_M").compute_types  # type: ignore[union-attr]
    assert "fp4" not in weight_format("AWQ int4").compute_types  # type: ignore[union-attr]


# ---- formulas on the seed ---------------------------------------------------------------------


def test_seed_fit_with_assumed_weights() -> None:
    ctx, setup = context_of(REPO, SEED)
    fit = evaluate_fit(ctx, setup)
    # 27e9 params x 4 bits / 8 = 13,500,000,000 B; KV 65,536 x 150,000 = 9,830,400,000 B
    assert fit.value == 13_500_000_000 + 9_830_400_000
    # one RTX 5090: 31.84 GiB usable
    assert fit.limit == Fraction(3184, 100) * GIB
    # 23,330,400,000 / 34,187,939,676.16 = 68%
    assert fit.checked and not fit.violated and "is 68% of 1 x 31.84 GiB" in fit.margin()
    # weights unstated, 27B from the name, KV dtype assumed: a violation would only warn
    assert fit.severity == "warning"


def test_seed_fit_claims_both_evaluated() -> None:
    ctx, setup = context_of(REPO, SEED)
    fits, does_not_fit = evaluate_fit_claims(ctx, setup)
    limit = Fraction(3184, 100) * GIB  # 34,187,939,676.16 B
    # "9.16 GiB of KV fits one 32 GB RTX 5090 beside a quantized 27B" (int4 assumed):
    # 13,500,000,000 + 9,830,400,000 = 23,330,400,000 B <= limit
    assert (fits.value, fits.limit, fits.expect_within) == (23_330_400_000, limit, True)
    assert fits.within and not fits.violated
    # "a full 64-layer GQA-4 cache ... 36.6 GiB, which would not":
    # 13,500,000,000 + 262,144 x 150,000 = 13,500,000,000 + 39,321,600,000 = 52,821,600,000 B
    assert (does_not_fit.value, does_not_fit.expect_within) == (52_821_600_000, False)
    assert not does_not_fit.within and not does_not_fit.violated
    # the KV alone, 39,321,600,000 B = 36.62 GiB, is above 31.84 GiB whatever the weights
    assert limit < 39_321_600_000
    assert fits.severity == does_not_fit.severity == "warning"  # int4 is an assumption


def test_seed_prefill_ceiling() -> None:
    ctx, setup = context_of(REPO, SEED)
    (from_ttft,) = evaluate_prefill(ctx, setup)  # the seed's runs measure no prefill rate
    # 150,000 tokens / 53.2 s = 2,819.55 tok/s
    assert from_ttft.value == Fraction(150_000_000, 53_200)
    # 2 x 27e9 + 2 x 16 layers x 4 kv heads x (256 + 256) x 150,000/2
    # = 54,000,000,000 + 4,915,200,000 = 58,915,200,000 FLOP/token;
    # weights not stated, so the most generous peak on the card: fp4 1,676 TFLOP/s
    assert from_ttft.limit == Fraction(1676 * 10**12, 58_915_200_000)  # 28,447.6 tok/s
    assert "is 9.9% of the 28,448 tok/s ceiling" in from_ttft.margin()
    assert not from_ttft.violated and from_ttft.severity == "warning"  # fp4 rated low, 27B by name


@pytest.mark.parametrize(("tps", "violated"), [(60, False), (100, True)])
def test_one_rtx_5090_decode_roofline(tmp_path: Path, tps: int, violated: bool) -> None:
    root = copy_dataset(tmp_path / "d")
    edit(root / SEED, "measured_tps_at_ctx: null", f"measured_tps_at_ctx: {tps}")
    ctx, setup = context_of(root, SEED)
    decode = evaluate_decode(ctx, setup)[0]
    # 1,792e9 B/s / (27e9 x 4 / 8 + 9,830,400,000) = 1,792e9 / 23,330,400,000 = 76.81 tok/s
    assert decode.limit == Fraction(1792 * 10**9, 23_330_400_000)
    assert decode.violated is violated
    assert decode.severity == "warning"  # concurrency and weights not stated, 27B from the name


def fixture_record(tmp_path: Path, case: str) -> tuple[RecordContext, Setup]:
    """A fixture's record (tests/cases/<code>/<outcome>/<slug>) over a copy of the dataset."""
    folder = REPO / "tests" / "cases" / case
    record = Path("records/kv-efficiency") / f"{folder.name}.yaml"
    root = copy_dataset(tmp_path / "d", with_records=False)
    (root / record).write_text((folder / record).read_text())
    return context_of(root, record)


def test_decode_batch_shares_the_weights(tmp_path: Path) -> None:
    # llama-3.1-8b bf16 on one RTX 4090, 4,096 tokens, 8 sequences, 300 tok/s:
    # weights 8e9 x 2 = 16e9 B; KV 131,072 B/token x 4,096 = 536,870,912 B per sequence
    # per sequence <= 1,008e9 / (16e9 + 8 x 536,870,912) = 1,008e9 / 20,294,967,296 = 49.67
    # aggregate <= 8 x that = 397.3 tok/s: the record does not say, so 300 reads as aggregate
    ctx, setup = fixture_record(tmp_path, "KV702/pass/aggregate-lenient-reading")
    decode = evaluate_decode(ctx, setup)[1]
    assert decode.limit == Fraction(8 * 1008 * 10**9, 16 * 10**9 + 8 * 536_870_912)
    assert "aggregate over 8 sequences (the record does not say; the lenient reading)" in (
        decode.subject
    )
    assert decode.checked and not decode.violated and decode.severity == "error"


def test_speculative_decoding_multiplies_the_roofline(tmp_path: Path) -> None:
    ctx, setup = fixture_record(tmp_path, "KV702/pass/speculative-decoding")
    assert speculation(ctx) == (4, "speculative decoding, up to 4 tokens per step")
    decode = evaluate_decode(ctx, setup)[0]
    # 4 tokens per step x 1,008e9 / (16e9 + 536,870,912) = 243.8 tok/s >= 150
    assert decode.limit == Fraction(4 * 1008 * 10**9, 16 * 10**9 + 536_870_912)
    assert not decode.violated


def test_attention_flops_with_a_window() -> None:
    # one full layer and two window-4 layers, 1 kv head of width 4 (K) + 4 (V), context 8:
    # full: 2 x 1 x 1 x (4 + 4) x 8/2 = 64
    # window: average attended = 4 x (2 x 8 - 4) / (2 x 8) = 3; 2 x 2 x 1 x 8 x 3 = 96
    model = Model("m", "M", 3, (Attention(1, 1, 4), Attention(2, 1, 4, window=4)))
    document = parse_document(b"{}\n", "r.yaml")
    assert isinstance(document, Document)
    ctx = RecordContext(document, model, "models/m")
    flops, text = attention_flops_per_token(ctx, 8)
    assert flops == 64 + 96
    assert text.startswith("2 x 1 layers x 1 heads x (4 + 4) x 8/2")
    # below the window every layer attends context/2 on average: 3 layers x 2 x 8 x 2 = 96
    assert attention_flops_per_token(ctx, 4)[0] == 96


def test_missing_inputs_are_not_checked(tmp_path: Path) -> None:
    root = copy_dataset(tmp_path / "d")
    edit(
        root / SEED,
        "    accelerator: rtx-5090\n    count: 1",
        "    accelerator: null\n    count: 1",
    )
    ctx, setup = context_of(root, SEED)
    evaluations: list[Evaluation] = [evaluate_fit(ctx, setup), *evaluate_prefill(ctx, setup)]
    assert all(not e.checked for e in evaluations)
    assert evaluations[0].skipped == "methodology.hardware.accelerator is null"


# ---- severities and the command line ----------------------------------------------------------


def test_warnings_fail_only_with_strict(tmp_path: Path) -> None:
    # 405B at an assumed 4 bits = 202.5e9 B on one 24 GiB RTX 4090: impossible, but assumed
    case = REPO / "tests/cases/KV701/fail/assumed-weights-warn"
    root = copy_dataset(tmp_path / "d", with_records=False)
    record = "records/kv-efficiency/assumed-weights-warn.yaml"
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
    assert "weights 130.39 GiB (70B total params x 16 bits / 8) + 1.25 GiB KV = 131.64 GiB" in (
        problem.message
    )
    assert run_cli("validate", cwd=root).returncode == 1


def test_repository_records_have_no_hardware_problems() -> None:
    assert validate(REPO).problems == []


# ---- explain ----------------------------------------------------------------------------------


def test_explain_the_seed() -> None:
    text = explain_record(REPO, REPO / SEED)
    for expected in [
        "bytes per token: 16 layers x 4 kv heads x (256 + 256) x 2 B = 65,536 B/token",
        "KV at context: 65,536 B/token x 150,000 tokens = 9,830,400,000 B (9.16 GiB)",
        "speedup of ttft_ms (single), cold -> warm: 53,200 / 2,300 = 23.1304x (stated 23x)",
        "cold: prefill rate: 150,000 tokens / 53.2 s = 2,819.5 tok/s",
        "parameters: 27B total, 27B active",
        "fp16 dense peak 419 TFLOP/s (peak_dense_tflops.fp16_fp16_accumulate 419",
        "= 21.73 GiB is 68% of 1 x 31.84 GiB",
        "is 9.9% of the 28,448 tok/s ceiling",
        "KV704 fit claim [1] (does not fit): weights 12.57 GiB",
        "= 49.19 GiB is 155% of 1 x 31.84 GiB",
        "KV702 decode measured_tps_at_ctx: measured_tps_at_ctx is not stated",
        "Problems: none",
    ]:
        assert expected in text, expected


@pytest.mark.parametrize("record", sorted((REPO / "records").rglob("*.yaml")), ids=lambda p: p.stem)
def test_explain_every_record(record: Path) -> None:
    text = explain_record(REPO, record)
    assert text.startswith(record.relative_to(REPO).as_posix())
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
