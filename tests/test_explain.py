"""``explain``: each assumption stated once, only where a check rests on it; plain wording."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import copy_dataset
from kvrecords.tools.explain import explain_record

RECORDS = Path("records/kv-efficiency")
SEED = RECORDS / "vllm-qwen38-27b-apc-150k-rtx5090.yaml"


def test_each_assumption_is_stated_once_and_named_by_the_checks_resting_on_it(
    fixture_root: Path,
) -> None:
    text = explain_record(fixture_root, fixture_root / SEED)
    # The seed's weights are "a quantized 27B": the likely reading takes int4, the favourable
    # one the fewest bits vLLM runs; its parameter count is read off the name '27B', which
    # the fit, the prefill ceiling and both fit claims use.
    assert "Weights: 'quantized' -> quantized (" in text
    assert text.count("read off the name") == 1
    assert "\n  [1] 27B read off the name (models/qwen3-8-27b: from_name), not 26.5B\n" in text
    assert "\n  [2] weights precision quantized, width not stated: int4 taken as likely" in text
    plausibility = text.split("\nPlausibility\n")[1].split("\nAssumptions")[0].splitlines()
    assert [line.split(": favourable")[0].strip() for line in plausibility] == [
        "KV701 run 'cold': fit",
        "KV701 run 'four-days-mixed': fit",
        "KV703 run 'cold': prefill context / TTFT",
        "KV704 fit claim [0] (fits)",
        "KV704 fit claim [1] (does not fit)",
    ]
    assert all("(assumes [1]" in line for line in plausibility)
    assert all("favourable: " in line and "; likely: " in line for line in plausibility)
    assert "assumes:" not in text


def test_no_assumption_is_stated_where_no_check_uses_it(fixture_root: Path) -> None:
    # No accelerator stated: no hardware check runs, so nothing is assumed.
    text = explain_record(fixture_root, fixture_root / RECORDS / "kivi-2bit-kv-llama2.yaml")
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
    record = root / SEED
    text = record.read_text(encoding="utf-8")
    stated = "  hardware:\n    accelerator: rtx-5090\n    count: 1\n"
    assert stated in text
    accelerator, count = hardware
    changed = f"  hardware:\n    accelerator: {accelerator}\n    count: {count}\n"
    record.write_text(text.replace(stated, changed), encoding="utf-8")
    assert f"\n{shown}\n" in explain_record(root, record)


def test_runs_that_name_another_model_are_checked_with_that_model(fixture_root: Path) -> None:
    """explain loads the model a run names, as validate does, for every record that has one."""
    named_elsewhere = 0
    for path in sorted((fixture_root / RECORDS).glob("*.yaml")):
        text = explain_record(fixture_root, path)
        assert "is not loaded" not in text, path
        if "\n    model: " in text:
            named_elsewhere += 1
    assert named_elsewhere >= 1


def test_an_engine_line_for_one_cache_shows_that_cache_recomputed(fixture_root: Path) -> None:
    record = fixture_root / RECORDS / "llamacpp-gemma4-e4b-shared-kv-layers-4x3090-128k.yaml"
    text = explain_record(fixture_root, record)
    engine = text.split("\nWhat the engine printed, against the engine model\n")[1]
    first = engine.splitlines()[0]
    assert first.startswith("  main: kv_bytes_reported 2048.00 MiB: llamacpp (")
    assert "allocates for its full_attention cache: K cache, 4 full-attention layers" in first
    assert "sliding-window" not in first
    # llama.cpp's build is not mapped to an era: each era is tried, and the one that agrees says so
    assert first.endswith(" = 2,147,483,648 B (agrees)")


CASES = Path(__file__).parent / "cases"


def _case_root(tmp_path: Path, case: str) -> tuple[Path, Path]:
    """A dataset holding one fixture case's record, and that record's path."""
    root = copy_dataset(tmp_path / "dataset", with_records=False)
    (record,) = (CASES / case).glob("records/kv-efficiency/*.yaml")
    target = root / RECORDS / record.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(record.read_text(encoding="utf-8"), encoding="utf-8")
    return root, target


def test_a_prefill_rate_is_derived_only_with_one_request_in_flight(tmp_path: Path) -> None:
    # 8,192 tokens / 4.096 s = 2,000 tokens/s for one request at a time; the same mean TTFT
    # of 50 requests in flight holds queueing, so no rate is derived from it.
    root, record = _case_root(tmp_path, "KV405/pass/prefill-rate-one-at-a-time")
    text = explain_record(root, record)
    assert "main: prefill rate: 8,192 tokens / 4.096 s = 2,000.0 tok/s" in text
    root, record = _case_root(tmp_path / "load", "KV405/fail/prefill-rate-under-load")
    text = explain_record(root, record)
    reason = "run 'main' has 50 requests in flight: its TTFT holds queueing"
    assert f"main: prefill rate: not derived: {reason}" in text
    assert f"\n  KV404 main: prefill_tokens_per_s_from_ttft: {reason}" in text


def test_not_checked_lists_every_skip(fixture_root: Path) -> None:
    """'Not checked: nothing' only where every derivation, comparison and check ran."""
    with_skips = 0
    for path in sorted((fixture_root / RECORDS).glob("*.yaml")):
        text = explain_record(fixture_root, path)
        runs_part = text.split("\nRuns\n")[1].split("\nPlausibility\n")[0]
        skipped = "not derived: " in runs_part or ": stated only: " in runs_part
        if skipped:
            assert "\nNot checked\n" in text, path
            assert "Not checked: nothing" not in text, path
            with_skips += 1
    assert with_skips >= 10


def test_the_fit_says_why_it_counts_one_sequence(tmp_path: Path) -> None:
    root, record = _case_root(tmp_path, "KV701/fail/concurrency-held-at-once")
    text = record.read_text(encoding="utf-8")
    record.write_text(text.replace("concurrency: 128", "concurrency: unbounded"), "utf-8")
    explained = explain_record(root, record)
    assert (
        "one sequence counted: the run sends its 200 requests at once (unbounded) and the "
        "engine queues what its pool cannot hold" in explained
    )
    assert "Problems: none" in explained


def test_not_checked_names_a_maximum_concurrency_no_check_reaches(tmp_path: Path) -> None:
    # A window model's concurrency line is checked against the pool its run printed; without
    # the pool, or under an engine no engine model covers, explain says so.
    root, record = _case_root(tmp_path, "KV807/pass/max-concurrency-window")
    assert "KV807" not in explain_record(root, record).split("\nNot checked")[1]
    text = record.read_text(encoding="utf-8")
    pool_start = text.index("      - name: kv_tokens_reported")
    pool_end = text.index("      - name: max_concurrency")
    record.write_text(text[:pool_start] + text[pool_end:], encoding="utf-8")
    explained = explain_record(root, record)
    assert "\n  KV807 startup: max_concurrency 284.25: the run prints no pool" in explained
    record.write_text(text.replace("name: vllm", "name: sglang"), encoding="utf-8")
    explained = explain_record(root, record)
    assert "KV807 startup: max_concurrency 284.25: a model with window or state layers under" in (
        explained
    )


def test_a_state_model_over_more_ranks_than_kv_heads_needs_its_block_size(tmp_path: Path) -> None:
    # Qwen3-Next keeps 2 kv heads: over 4 ranks each holds one (replicated) while the Gated
    # DeltaNet state shards four ways, so the attention block sized to the state page differs
    # from one rank's view; without a printed block size the line is not checked, and says so.
    root, record = _case_root(tmp_path, "KV807/pass/max-concurrency-hybrid")
    assert "KV807" not in explain_record(root, record).split("\nNot checked")[1]
    text = record.read_text(encoding="utf-8")
    record.write_text(text.replace("count: 2", "count: 4"), encoding="utf-8")
    explained = explain_record(root, record)
    assert "KV807 startup: max_concurrency 1.66: a state model over more devices than kv" in (
        explained
    )
