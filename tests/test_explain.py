"""``explain``: each assumption stated once, only where a check rests on it; plain wording."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import copy_dataset
from kvrecords.tools.explain import explain_record

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "records" / "kv-efficiency"
SEED = RECORDS / "vllm-qwen38-27b-apc-150k-rtx5090.yaml"


def test_each_assumption_is_stated_once_and_named_by_the_checks_resting_on_it() -> None:
    text = explain_record(REPO, SEED)
    # The seed states no weights precision, so KV701 (fit) takes 4 bits; its parameter count
    # is read off the name '27B', which KV701, KV703 and both KV704 fit claims use.
    assert "Weights: not stated\n" in text
    assert text.count("4 bits assumed") == 1
    assert text.count("parameter count read off the name") == 1
    assert "\n  [1] parameter count read off the name ('27B (from the model name)')\n" in text
    assert "\n  [2] weights precision not stated, 4 bits assumed\n" in text
    plausibility = text.split("\nPlausibility\n")[1].split("\nAssumptions")[0].splitlines()
    assert [line.split(":")[0].strip() for line in plausibility] == [
        "KV701 fit",
        "KV703 prefill context / TTFT",
        "KV704 fit claim [0] (fits)",
        "KV704 fit claim [1] (does not fit)",
    ]
    assert all("(assumes [1]" in line for line in plausibility)
    assert "(assumes [1], [2], [3])" in plausibility[0]
    assert "assumes:" not in text


def test_no_assumption_is_stated_where_no_check_uses_it() -> None:
    # No accelerator stated: no hardware check runs, so the 4-bit weights are never assumed.
    text = explain_record(REPO, RECORDS / "sglang-hicache-qwen3-coder-480b-3fs-25k.yaml")
    assert "Hardware: not stated\n" in text
    assert "Weights: not stated\n" in text
    assert "Assumptions: none" in text
    assert "assumed" not in text.split("\nPlausibility\n")[0]


@pytest.mark.parametrize(
    ("hardware", "shown"),
    [
        (("rtx-5090", "2"), "Hardware: rtx-5090 x 2"),
        (("rtx-5090", "null"), "Hardware: rtx-5090 (count not stated)"),
        (("null", "1"), "Hardware: not stated (1 accelerator)"),
        (("null", "8"), "Hardware: not stated (8 accelerators)"),
        (("null", "null"), "Hardware: not stated"),
    ],
)
def test_hardware_says_what_is_not_stated(
    tmp_path: Path, hardware: tuple[str, str], shown: str
) -> None:
    root = copy_dataset(tmp_path / "dataset")
    record = root / SEED.relative_to(REPO)
    text = record.read_text(encoding="utf-8")
    stated = "  hardware:\n    accelerator: rtx-5090\n    count: 1\n"
    assert stated in text
    accelerator, count = hardware
    changed = f"  hardware:\n    accelerator: {accelerator}\n    count: {count}\n"
    record.write_text(text.replace(stated, changed), encoding="utf-8")
    assert f"\n{shown}\n" in explain_record(root, record)
