"""``kvrecords plan``: the three layers, each from hand arithmetic on published facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from kvrecords.tools.plan import PlanRefused, Question, answer_from_dataset

GIB = 1024**3


def test_llama_31_70b_on_one_h100_at_128k_for_8_users(fixture_root: Path) -> None:
    question = Question("llama-3.1-70b", "h100-sxm", 1, 131_072, 8, weights_precision="fp8")
    answer = answer_from_dataset(fixture_root, question)
    arithmetic = answer.arithmetic
    # 80 layers x 8 KV heads x (128 + 128) x 2 B = 327,680 B/token (Meta's config, bf16 cache)
    assert arithmetic["bytes_per_token"] == 327_680
    # x 131,072 tokens = 42,949,672,960 B = 40 GiB for one sequence, 320 GiB for eight
    assert arithmetic["kv_bytes_per_sequence"] == 42_949_672_960 == 40 * GIB
    assert arithmetic["kv_bytes_all_users"] == 8 * 40 * GIB
    engine = answer.engine
    # The largest pool vLLM could have: 0.9 x 79.65 GiB (the driver's total) - 70e9 B of fp8
    # weights - the smallest activation peak (0.19 GiB) and non-torch memory (0.01 GiB):
    # 71.685 GiB - 65.19 GiB - 0.20 GiB = 6.29 GiB, under the 40 GiB one request needs.
    high = engine["pool_per_device_bytes"][1]
    expected = (79.65 * 0.9 - 0.20) * GIB - 70e9
    assert abs(high - expected) < 1024  # exact in fractions; the float here is the check's
    assert engine["starts"] == "no" and engine["fits"] == "no"
    assert engine["most_users_at_context"] == [0, 0]
    # vLLM 0.34 pages in 64-token blocks: 64 x 327,680 B = 20,971,520 B a block, and
    # 6,757,531,289 B hold 322 of them (20,608 tokens; 322 / 2,048 blocks a request = 0.16x).
    # Eight users get 322 // 8 = 40 blocks each: 2,560 tokens.
    assert engine["blocks"][1] == 322
    assert engine["longest_context_for_users"][1] == 2_560
    assert engine["printed"]["high"] == [
        "GPU KV cache size: 20,608 tokens, Maximum concurrency for 131,072 tokens per request:"
        " 0.16x"
    ]


def test_a_printed_pool_reproduces_the_engines_own_lines(fixture_root: Path) -> None:
    # aws-samples, vLLM 0.24.0, Qwen3-Coder-30B-A3B on 4 x L40S at TP 4 (the record
    # vllm-kv-pool-qwen3-coder-30b-a3b-4xl40s-tp4-32k): 'Available KV cache memory: 23.74 GiB',
    # 'GPU KV cache size: 1,037,152 tokens', 'Maximum concurrency for 32,768 tokens per request:
    # 31.65x'. Per rank: 1 of 4 KV heads, 48 layers x 16 tokens x 256 values x 2 B = 393,216 B a
    # block; 1,037,152 / 16 = 64,822 blocks = 23.739 GiB, inside [23.735, 23.745) GiB.
    question = Question(
        "qwen3-coder-30b-a3b-instruct",
        "l40s",
        4,
        32_768,
        1,
        engine_version="0.24.0",
        kv_memory_gib="23.74",
    )
    engine = answer_from_dataset(fixture_root, question).engine
    low, high = engine["blocks"]
    assert low <= 64_822 <= high
    tokens = [
        int(lines[0].split(": ")[1].split()[0].replace(",", ""))
        for lines in (engine["printed"]["low"], engine["printed"]["high"])
    ]
    assert tokens[0] <= 1_037_152 <= tokens[1]
    assert "31.65x" in engine["printed"]["low"][1]


@pytest.mark.parametrize(
    ("question", "refusal"),
    [
        # 8 KV heads cannot be split over 3 ranks
        (Question("llama-3.1-70b", "h100-sxm", 3, 8192, 1), "neither divides"),
        (Question("llama-3.1-70b", "h100-sxm", 16, 8192, 1), "more than one node"),
        (Question("llama-3.1-70b", "h100-sxm", 2, 8192, 1, tensor_parallel=3), "whole number"),
        (Question("llama-3.1-70b", "no-such-gpu", 1, 8192, 1), "hardware/no-such-gpu.yaml"),
        (Question("no-such-model", "h100-sxm", 1, 8192, 1), "models/no-such-model.yaml"),
        (Question("llama-3.1-70b", "h100-sxm", 1, 8192, 1, kv_cache_dtype="int3"), "--kv-dtype"),
        # Qwen3.8-27B's Gated DeltaNet state dimensions are unpublished: refused, naming them
        (Question("qwen3-8-27b", "rtx-5090", 1, 150_000, 1), r"layer_groups\[1\]\.conv_kernel"),
    ],
)
def test_a_question_that_cannot_be_answered_names_why(
    fixture_root: Path, question: Question, refusal: str
) -> None:
    with pytest.raises(PlanRefused, match=refusal):
        answer_from_dataset(fixture_root, question)


def test_the_engine_layer_refuses_what_the_engine_refuses(fixture_root: Path) -> None:
    # Llama 3.1's max_position_embeddings is 131,072: vLLM refuses a longer max_model_len
    answer = answer_from_dataset(fixture_root, Question("llama-3.1-70b", "h100-sxm", 8, 200_000, 1))
    assert "refuses a max_model_len of 200,000" in answer.engine["refused"]
    assert answer.arithmetic["bytes_per_token"] == 327_680  # the arithmetic still stands
    other = answer_from_dataset(
        fixture_root, Question("llama-3.1-70b", "h100-sxm", 8, 8192, 1, engine="sglang")
    )
    assert "covers vLLM" in other.engine["refused"]


def test_evidence_names_a_different_model_and_its_geometry(fixture_root: Path) -> None:
    answer = answer_from_dataset(fixture_root, Question("llama-3.1-70b", "h100-sxm", 8, 8192, 8))
    nearest = answer.evidence["nearest"]
    assert nearest, "the test dataset holds Llama 3.x 70B records"
    for record in nearest:
        if record["model"] != "llama-3.1-70b":
            named = [d for d in record["differs_in"] if d.startswith("model ")]
            assert named and ("same geometry" in named[0] or "other geometry" in named[0])
    # Llama 3.3 70B shares 3.1's geometry: its records come before any other model's
    models = [record["model"] for record in nearest]
    assert "llama-3.3-70b-instruct" in models or "llama-3.1-70b" in models


def test_the_command_answers_in_text_and_json(fixture_root: Path) -> None:
    args = ["plan", "llama-3.1-70b", "--hardware", "h100-sxm", "--context", "131072"]
    text = run_cli(*args, "--users", "8", "--weights-precision", "fp8", cwd=fixture_root)
    assert text.returncode == 0, text.stderr
    for heading in ("Arithmetic (exact", "Engine (a model of one vLLM release", "Evidence (cited"):
        assert heading in text.stdout
    done = run_cli(*args, "--format", "json", cwd=fixture_root)
    data = json.loads(done.stdout)
    assert set(data) == {"question", "arithmetic", "engine", "evidence", "assumptions", "unknown"}
    refused = run_cli("plan", "nope", "--hardware", "h100-sxm", "--context", "8", cwd=fixture_root)
    assert (
        refused.returncode == 2 and "plan: no sound model file models/nope.yaml" in refused.stderr
    )


def test_an_mla_latent_is_held_whole_by_every_rank(fixture_root: Path) -> None:
    # DeepSeek-V3: 61 MLA layers x (512 + 64) x 2 B = 70,272 B/token; the latent has no heads
    # to split, so each of 8 tensor-parallel ranks holds all of it
    answer = answer_from_dataset(fixture_root, Question("deepseek-v3", "h200", 8, 4096, 1))
    assert answer.arithmetic["bytes_per_token"] == 70_272
    assert answer.arithmetic["bytes_per_token_per_device"] == 70_272


def test_techniques_rank_by_the_first_figure_of_each_stated_speedup() -> None:
    from kvrecords.tools.plan import _techniques

    nearest = [
        {"id": "a", "speedup": "2x–22x", "speedup_techniques": ["kv_offload"]},
        {"id": "b", "speedup": "9x", "speedup_techniques": ["prefix_caching"]},
        {"id": "c", "speedup": None, "speedup_techniques": ["mla"]},  # nothing measured
        # an upgrade in which both runs offload: its 5x is credited to no technique
        {"id": "d", "speedup": "5x", "speedup_techniques": []},
    ]
    ranked = _techniques(nearest)
    assert [(t["technique"], t["record"]) for t in ranked] == [
        ("prefix_caching", "b"),
        ("kv_offload", "a"),  # 2x, not 222x read off the digits of the range
    ]


def test_a_speedup_counts_for_the_techniques_its_runs_differ_by() -> None:
    from kvrecords.dataset.records import headline_figures

    def run(run_id: str, role: str, techniques: list[str], ttft: float) -> dict[str, object]:
        metric = {"name": "ttft_ms", "statistic": "mean", "value": ttft}
        return {"id": run_id, "role": role, "techniques": techniques, "metrics": [metric]}

    def record(baseline: list[str], treatment: list[str]) -> dict[str, object]:
        return {
            "model": "m",
            "techniques": ["kv_offload", "prefix_caching"],
            "runs": [
                run("old", "baseline", baseline, 500),
                run("new", "treatment", treatment, 100),
            ],
            "comparisons": [
                {
                    "kind": "speedup",
                    "metric": "ttft_ms",
                    "statistic": "mean",
                    "from": "old",
                    "to": "new",
                    "stated": "5x",
                }
            ],
        }

    # a version upgrade in which both runs offload: 5x, but bought by no technique
    upgrade = headline_figures(record(["kv_offload"], ["kv_offload"]))
    assert (upgrade["speedup"], upgrade["speedup_techniques"]) == ("5x", [])
    # prefix caching switched on beside an offload both runs have: prefix caching alone
    switched = headline_figures(record(["kv_offload"], ["kv_offload", "prefix_caching"]))
    assert switched["speedup_techniques"] == ["prefix_caching"]
