"""The live dataset: the one test that reads records/ (every other test reads tests/dataset/).

`make validate` runs the same check; this test keeps it in the suite, with the generated pages
of docs/ that are built from the records.
"""

from __future__ import annotations

from conftest import REPO, run_cli
from kvrecords.runner.validate import validate
from kvrecords.tools.export import rows, to_markdown


def test_the_live_dataset_validates_and_its_generated_pages_are_current() -> None:
    outcome = validate(REPO)
    problems = outcome.problems  # warnings too: the live dataset is kept clean
    assert problems == [], "\n".join(
        f"{p.path}:{p.line}:{p.column}: {p.code} {p.message}" for p in problems
    )
    assert outcome.files_checked >= 26
    drift = run_cli("docs", "--check", cwd=REPO)
    assert (drift.returncode, drift.stdout, drift.stderr) == (0, "", "")
    table = (REPO / "docs" / "dataset.md").read_text(encoding="utf-8")
    assert table == to_markdown(rows(REPO)), "run: kvrecords docs"
