"""A comparison whose figure is the source's own careless arithmetic: kept as the source wrote
it, flagged, checked (KV407) and shown beside what its runs give in explain, the site and the
export."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from conftest import run_cli
from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.models import load_model_file
from kvrecords.runner.validate import validate
from kvrecords.tools.explain import explain_record
from kvrecords.tools.site.runs import comparison_rows

SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")
SEED_ID = "kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090"
WRITTEN = "    stated: 23x\n"
NOTE = "the post rounds its own times"


def flagged(dataset: Path, stated: str, recomputed: str, metric: str = "ttft_ms") -> Path:
    """The seed with its 53.2 s -> 2.3 s speedup stated as ``stated`` and flagged."""
    path = dataset / SEED
    text = path.read_text(encoding="utf-8")
    assert WRITTEN in text
    flag = f"    source_arithmetic: {{recomputed: {recomputed}, note: {NOTE}}}\n"
    text = text.replace(WRITTEN, f"    stated: {stated}\n{flag}", 1)
    path.write_text(text.replace("    metric: ttft_ms\n", f"    metric: {metric}\n", 1))
    return path


def problems(dataset: Path, path: Path) -> list[tuple[str, str]]:
    return [(p.code, p.message) for p in validate(dataset, [path]).problems]


def test_a_flagged_slip_validates_and_unflagged_it_is_refused(dataset: Path) -> None:
    # 53,200 / 2,300 = 23.1304: a source writing 23.2x is 0.7 units of its last digit and
    # 0.3 % off, a slip; 23.13x is what the runs give, at the full precision rule
    path = flagged(dataset, "23.2x", "23.13x")
    assert problems(dataset, path) == []
    flag = f"    source_arithmetic: {{recomputed: 23.13x, note: {NOTE}}}\n"
    path.write_text(path.read_text().replace(flag, ""))
    ((code, message),) = problems(dataset, path)
    assert code == "KV402"
    assert message.startswith("speedup is 23.2x; 53,200 / 2,300 = 23.1304x; if the source itself")


def test_a_flag_on_a_comparison_that_cannot_be_recomputed_is_refused(dataset: Path) -> None:
    # neither run states a decode rate: nothing to recompute, so nothing for the flag to say
    path = flagged(dataset, "23.2x", "23.13x", metric="decode_tokens_per_s")
    found = [message for code, message in problems(dataset, path) if code == "KV407"]
    assert found == [
        "source_arithmetic cannot be checked: stated only: run 'cold' states no "
        "decode_tokens_per_s (single); a figure that cannot be recomputed needs no flag"
    ]


def test_a_negative_change_rounded_away_from_its_runs(dataset: Path) -> None:
    # (2,300 - 53,200) / 53,200 = -95.6767 %: -95.7% agrees; -95.66% is a slip of 1.67
    # units of its last digit (0.02 %), so it may be flagged with -95.68%
    path = dataset / SEED
    comparison = "comparisons:\n  - kind: speedup\n"
    path.write_text(path.read_text().replace(comparison, "comparisons:\n  - kind: change\n"))
    flagged(dataset, "-95.66%", "-95.68%")
    assert problems(dataset, path) == []
    path.write_text(path.read_text().replace("recomputed: -95.68%", "recomputed: -95.67%"))
    # -95.67 for -95.6767: does not round to the figure written
    assert problems(dataset, path) == [
        (
            "KV407",
            "source_arithmetic.recomputed is -95.67%; (2,300 - 53,200) / 53,200 = -95.6767%",
        )
    ]


def test_explain_the_site_and_the_export_show_the_recomputed_figure(dataset: Path) -> None:
    path = flagged(dataset, "23.2x", "23.13x")
    explained = explain_record(dataset, path)
    assert (
        "speedup of ttft_ms (single), cold -> warm: 53,200 / 2,300 = 23.1304x (stated 23.2x)\n"
        f"    the source's own arithmetic: it states 23.2x, its runs give 23.13x ({NOTE})"
    ) in explained
    document = read_document(path, SEED.as_posix())
    assert isinstance(document, Document)
    model = load_model_file(dataset / "models" / "qwen3-8-27b.yaml")
    (row,) = comparison_rows(RecordContext(document, model, "models/qwen3-8-27b"))
    assert row.source_arithmetic == f"the source's own arithmetic: its runs give 23.13x ({NOTE})"
    result = run_cli("export", "--format", "csv", "--metrics", cwd=dataset)
    assert result.returncode == 0, result.stderr
    rows = [
        row
        for row in csv.DictReader(io.StringIO(result.stdout))
        if row["record_id"] == SEED_ID and row["kind"] == "speedup"
    ]
    assert [(row["value_as_written"], row["recomputed"]) for row in rows] == [
        ("23.2x", f"23.13x ({NOTE})")
    ]
    measured = [row["recomputed"] for row in csv.DictReader(io.StringIO(result.stdout))]
    assert measured.count("") == len(measured) - 1
