"""The benchmark's generated datasets and its verdicts (its timings are not tested here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from conftest import REPO
from kvrecords.runner.validate import validate

_spec = importlib.util.spec_from_file_location("bench", REPO / "benchmarks" / "bench.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench"] = bench  # dataclasses look their module up by name
_spec.loader.exec_module(bench)


def test_generated_records_validate_with_their_figures_recomputed(
    fixture_root: Path, tmp_path: Path
) -> None:
    # the test dataset's copy of the seed stands in for the repository's
    dataset = bench.build_dataset(fixture_root, tmp_path / "n8", 8)
    assert dataset.varied and len(dataset.record_paths) == 8
    outcome = validate(dataset.root)
    assert outcome.problems == []
    assert outcome.files_checked == 8 + len(list((REPO / "models").glob("*.yaml"))) + len(
        list((REPO / "hardware").glob("*.yaml"))
    )
    # 144,000 tokens x 65,536 B/token = 9,437,184,000 B = 8.7890625 GiB, written as 8.79 GiB
    second = (dataset.root / dataset.record_paths[1]).read_text()
    assert "context_tokens: 144000" in second
    assert "kv_at_context: 8.79 GiB" in second


def _case(n: int, files_given: int, ours: float, peer: float, peak_mib: float = 30) -> Any:
    def stats(seconds: float, peak: float) -> Any:
        return bench.Stats(seconds, seconds, seconds, peak, [0], [seconds])

    return bench.Case(f"N={n}", n, files_given, stats(ours, peak_mib), stats(peer, 40))


def test_targets_are_judged_on_the_ratio_of_medians_and_the_peak() -> None:
    cases = [
        _case(10_000, 0, 2.0, 10.0),  # 0.20x
        _case(10_000, 1, 0.44, 1.0),  # 0.44x
    ]
    bench.judge(cases, 10_000)
    assert [c.result for c in cases] == ["PASS", "PASS"]
    cases = [
        _case(10_000, 0, 2.0, 10.0, peak_mib=151),
        _case(10_000, 1, 0.46, 1.0),
    ]
    bench.judge(cases, 10_000)
    assert [c.result for c in cases] == ["FAIL (memory)", "FAIL"]


def test_linear_growth_is_judged_on_the_marginal_cost_per_record() -> None:
    # marginal costs: (1.1 - 0.2) s / 900 records = 1 ms; then (x - 1.1) s / 9,000 records
    for last_seconds, verdict in ((1.1 + 9 * 1.4, "PASS"), (1.1 + 9 * 1.6, "FAIL")):
        full = [_case(100, 0, 0.2, 1), _case(1000, 0, 1.1, 5), _case(10_000, 0, last_seconds, 50)]
        assert bench.linearity(bench.per_record(full))["result"] == verdict
