"""The planner against vLLM's own start-up lines (docs/planner-calibration.md).

The rows are raw vLLM 0.19.0 logs of an H100-80GB sweep (llm-d-incubation/llm-d-planner,
PR #205 at commit d3121e0, gpu_memory_utilization 0.95, max_num_batched_tokens 8192, prefix
caching off). Given the printed 'Available KV cache memory', the planner's interval must hold
the printed 'GPU KV cache size' and 'Maximum concurrency'; from the hardware alone, its pool
interval must hold the printed memory and be at most 25 % wide (high / low).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from kvrecords.tools.plan import Question, answer_from_dataset

GIB = 1024**3

# (row, model, max_model_len, printed available GiB, printed tokens, printed concurrency)
LOGS = [
    ("P21", "llama-3.1-8b", 8192, "58.11", 476_016, "58.11x"),
    ("P20", "llama-3.1-8b", 2048, "58.11", 476_016, "232.43x"),
    ("P26", "llama-3.1-8b", 32768, "58.11", 476_016, "14.53x"),
    ("P41", "qwen2.5-7b-instruct", 8192, "58.53", 1_096_000, "133.79x"),
    ("P40", "qwen2.5-7b-instruct", 32768, "58.53", 1_096_000, "33.45x"),
    ("P45", "qwen3-8b", 8192, "57.5", 418_688, "51.11x"),
]


def _question(model: str, context: int, kv_memory: str | None) -> Question:
    return Question(
        model,
        "h100-sxm",
        1,
        context,
        1,
        engine_version="0.19.0",
        gpu_memory_utilization=Fraction(95, 100),
        kv_memory_gib=kv_memory,
    )


def _figures(lines: list[str]) -> tuple[int, float]:
    """'GPU KV cache size: N tokens' and 'Maximum concurrency for ...: Yx' as numbers."""
    tokens = int(lines[0].split(": ")[1].split()[0].replace(",", ""))
    return tokens, float(lines[1].rsplit(": ", 1)[1].rstrip("x"))


@pytest.mark.parametrize(("row", "model", "context", "available", "tokens", "concurrency"), LOGS)
def test_the_printed_pool_reproduces_the_printed_lines(
    fixture_root: Path,
    row: str,
    model: str,
    context: int,
    available: str,
    tokens: int,
    concurrency: str,
) -> None:
    engine = answer_from_dataset(fixture_root, _question(model, context, available)).engine
    low_tokens, low_concurrency = _figures(engine["printed"]["low"])
    high_tokens, high_concurrency = _figures(engine["printed"]["high"])
    assert low_tokens <= tokens <= high_tokens, row
    assert low_concurrency <= float(concurrency.rstrip("x")) <= high_concurrency, row


@pytest.mark.parametrize(
    ("row", "model", "available_gib"),
    # the same rows' printed 'Available KV cache memory' (GiB)
    [
        ("P21", "llama-3.1-8b", 58.11),
        ("P41", "qwen2.5-7b-instruct", 58.53),
        ("P45", "qwen3-8b", 57.5),
    ],
)
def test_from_the_hardware_alone_the_interval_holds_the_printed_pool(
    fixture_root: Path, row: str, model: str, available_gib: float
) -> None:
    engine = answer_from_dataset(fixture_root, _question(model, 8192, None)).engine
    low, high = engine["pool_per_device_bytes"]
    assert low <= available_gib * GIB <= high, row
    assert high / low <= 1.25, row
