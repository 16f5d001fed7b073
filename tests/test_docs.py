"""``kvrecords docs``: the generated pages of docs/ written, and their drift reported with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURE_DATASET, REPO, run_cli, with_docs
from kvrecords.runner.validate import validate
from kvrecords.tools.coverage import coverage_markdown


def test_drift_shows_the_diff_and_the_command_that_fixes_it(dataset: Path) -> None:
    root = with_docs(dataset)
    (root / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml").unlink()
    (root / "docs/rules.md").unlink()
    done = run_cli("docs", "--check", cwd=root)
    assert done.returncode == 1
    assert "\n-| [vllm-qwen38-27b-apc-150k-rtx5090]" in done.stdout
    # the dataset table and the coverage page both lose the record
    assert done.stdout.count("run make docs (or kvrecords docs) and commit it") == 3
    assert "docs/rules.md is missing: run make docs" in done.stdout
    assert "docs/dataset.md is out of date: run make docs" in done.stdout


def test_docs_writes_only_the_pages_that_changed(dataset: Path) -> None:
    root = with_docs(dataset)
    (root / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml").unlink()
    rules = (root / "docs/rules.md").stat().st_mtime_ns
    done = run_cli("docs", cwd=root)
    assert (done.returncode, done.stdout) == (
        0,
        "wrote docs/dataset.md; add it to the commit: git add docs\n"
        "wrote docs/coverage.md; add it to the commit: git add docs\n",
    )
    assert (root / "docs/rules.md").stat().st_mtime_ns == rules
    assert "vllm-qwen38-27b-apc-150k-rtx5090" not in (root / "docs/dataset.md").read_text()
    assert run_cli("docs", "--check", cwd=root).returncode == 0


def test_docs_is_refused_while_the_dataset_has_errors(dataset: Path) -> None:
    root = with_docs(dataset)
    model = root / "models/qwen3-8-27b.yaml"
    model.write_text(model.read_text().replace("kv_heads: 4", "kv_heads: 8"))
    table = (root / "docs/dataset.md").read_text()
    errors = len(validate(root).problems)  # every record that links the model, however many
    assert errors > 0
    done = run_cli("docs", cwd=root)
    assert done.returncode == 1
    expected = f"kvrecords: the dataset has {errors} errors; run kvrecords validate"
    assert done.stderr.startswith(expected)
    assert (root / "docs/dataset.md").read_text() == table


def test_the_two_run_example_in_contributing_validates(dataset: Path) -> None:
    """The runs CONTRIBUTING shows, put in the seed, pass; a wrong speedup there is caught."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("### Runs, metrics and comparisons") :]
    example = section[section.index("```yaml\n") + 8 : section.index("```\n", 8)]
    seed = dataset / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    record = seed.read_text(encoding="utf-8")
    start, end = record.index("runs:\n"), record.index("notes: >-")
    record = record[:start] + example + record[end:]
    record = record.replace("measured_ttft_ms_at_ctx: 2300", "measured_ttft_ms_at_ctx: 6650")
    record = record.replace(
        "  - field: runs[2].context_tokens\n    reason: The post gives no prompt lengths for the four days of mixed traffic.\n  - field: runs[3].context_tokens\n    reason: The post gives no prompt lengths for the reused documents.\n",
        "",
    )
    seed.write_text(record, encoding="utf-8")
    assert validate(dataset, [seed]).problems == []
    seed.write_text(record.replace("stated: 2.4x", "stated: 2.5x"), encoding="utf-8")
    (problem,) = validate(dataset, [seed]).problems
    assert (problem.code, problem.message) == (
        "KV402",
        # 2.5 is 1.09 units of its last digit from 2.391: within a source's slip
        "speedup is 2.5x; 15,900 / 6,650 = 2.391x; if the source itself wrote 2.5x from these "
        "figures, keep it and flag it with source_arithmetic (docs/conventions.md)",
    )


def test_coverage_counts_each_record_once_per_technique_and_engine(empty_dataset: Path) -> None:
    seed = (
        FIXTURE_DATASET / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    ).read_text()
    folder = empty_dataset / "records/kv-efficiency"
    (folder / "vllm-qwen38-27b-apc-150k-rtx5090.yaml").write_text(seed)
    # the same measurements said to come from SGLang: a second record, on another engine
    copy = seed.replace("vllm-qwen38-27b-apc-150k-rtx5090", "sglang-copy").replace(
        "    name: vllm\n", "    name: sglang\n    components: [SGLang HiCache with Mooncake]\n"
    )
    (folder / "sglang-copy.yaml").write_text(copy)
    (empty_dataset / "docs").mkdir()
    (empty_dataset / "docs/coverage-notes.yaml").write_text(
        "fewer_than_three:\n  mla: Searched the vLLM and SGLang blogs.\n"
        "named_rows:\n  - row: An APC sweep on an A100\n    records: []\n"
        "    note: No public source gives one.\n"
        "  - row: The seed\n    records: [kv-efficiency/sglang-copy]\n"
        "components: [HiCache, Mooncake, LMCache, Cache]\n"
    )
    page = coverage_markdown(empty_dataset)
    engines, hardware = page.split("## Technique x hardware class")
    # the seed's cold run is the baseline; its warm run uses the record's two techniques
    assert "| technique | records | sglang | vllm |" in engines
    assert "| prefix_caching | 2 | 1 | 1 |" in engines
    assert "| hybrid_linear_attention | 2 | 1 | 1 |" in engines
    assert "| baseline | 2 | 1 | 1 |" in engines
    assert "| mla | none yet |  |  |" in engines
    assert "| prefix_caching | 2 | 2 |" in hardware  # both on the one rtx-5090 class
    assert "How many of the 2 records" in page
    assert "- **mla** (0): Searched the vLLM and SGLang blogs." in page
    assert "- **prefix_caching** (2): no reason recorded yet" in page
    assert "- An APC sweep on an A100: no record yet. No public source gives one." in page
    assert "- The seed: `kv-efficiency/sglang-copy`." in page
    # a component is a whole word of an engine's name or components: 'Cache' is not 'HiCache'
    for row in ("| HiCache | 1 |", "| Mooncake | 1 |", "| LMCache | none yet |"):
        assert row in page
    assert "| Cache | none yet |" in page
    # the planner's table: Qwen3.8-27B (27B) on an RTX 5090 at 150,000 tokens (the cold and
    # warm runs; the four-day runs state no context): both records in that one cell
    assert "| 21-40B | consumer or workstation | - | - | 2 |" in page
    assert "Cells with no record: 7-9B on consumer or workstation at under 32K;" in page
    assert (
        "Techniques with no record yet: radix_reuse, cache_aware_routing, kv_quantization, mla,"
        in page
    )


@pytest.mark.parametrize(
    "notes",
    [
        "fewer_than_three: [\n",
        "fewer_than_three: [mla]\n",
        "named_rows:\n  - records: []\n",
        "components: LMCache\n",
    ],
)
def test_unreadable_coverage_notes_are_an_error_naming_the_file(dataset: Path, notes: str) -> None:
    root = with_docs(dataset)
    (root / "docs/coverage-notes.yaml").write_text(notes)
    done = run_cli("docs", cwd=root)
    assert done.returncode == 1
    assert done.stderr.startswith("kvrecords: docs/coverage-notes.yaml")
    assert "Traceback" not in done.stderr


def test_no_file_holds_a_merge_conflict_marker() -> None:
    """A merge that left `<<<<<<<` in a doc or module would ship both sides as text."""
    import re
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    marker = re.compile(rb"^(<{7}|>{7})( |$)", re.MULTILINE)
    marked = [
        name.decode()
        for name in tracked
        if name
        and (REPO / name.decode()).is_file()
        and marker.search((REPO / name.decode()).read_bytes())
    ]
    assert marked == []
