"""KV808: which model ids a record's words name, and when naming another one warns."""

from __future__ import annotations

import pytest

from kvrecords.checks.named_models import named_ids

IDS = frozenset(
    {"llama-3-8b", "llama-3.1-8b", "qwen3-235b-a22b", "qwen3-235b-a22b-instruct-2507", "qwen3-8b"}
)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Llama 3.1 8B on one H100", {"llama-3.1-8b"}),
        ("meta-llama/Llama-3.1-8B-Instruct", {"llama-3.1-8b"}),
        ("Llama 3 8B and Llama 3.1 8B", {"llama-3-8b", "llama-3.1-8b"}),
        # the longest id wins where one id begins another
        ("Qwen3-235B-A22B-Instruct-2507 BF16", {"qwen3-235b-a22b-instruct-2507"}),
        ("Qwen3-235B-A22B, 1P1D", {"qwen3-235b-a22b"}),
        # a longer name that is no id names nothing: Qwen3.8-27B is not Qwen3-8B
        ("Qwen3.8-27B on an RTX 5090", set()),
        ("qwen3-8bx", set()),
        ("Qwen3_8B", {"qwen3-8b"}),
    ],
)
def test_the_ids_a_text_names(text: str, named: set[str]) -> None:
    assert named_ids(text, IDS) == named


def test_no_ids_name_nothing() -> None:
    assert named_ids("Llama 3.1 8B", frozenset()) == set()
