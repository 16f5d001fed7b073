"""The generated pages of docs/: the check codes, the metric vocabulary, the dataset table and
its coverage.

``kvrecords docs`` writes them, the ``kvrecords-docs`` pre-commit hook runs it on every commit
that changes the data or the validator, and CI runs ``kvrecords docs --check`` for drift.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from kvrecords.dataset.atomic import write_atomically

RULES_PAGE = "docs/rules.md"
METRICS_PAGE = "docs/metrics.md"
DATASET_PAGE = "docs/dataset.md"
COVERAGE_PAGE = "docs/coverage.md"
# What brings a stale page up to date; every drift message says it.
FIX = "make docs (or kvrecords docs)"


def generated_pages(root: Path) -> dict[str, str]:
    """Each generated page's path (relative to the dataset root) and its text."""
    from kvrecords.checks.registry import markdown
    from kvrecords.kv.metrics import markdown as metrics_markdown
    from kvrecords.tools.coverage import coverage_markdown
    from kvrecords.tools.export import rows, to_markdown

    return {
        RULES_PAGE: markdown(),
        METRICS_PAGE: metrics_markdown(),
        DATASET_PAGE: to_markdown(rows(root)),
        COVERAGE_PAGE: coverage_markdown(root),
    }


def _current(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def write_pages(root: Path) -> list[str]:
    """Write the pages that changed; their paths."""
    written = []
    for page, text in generated_pages(root).items():
        if _current(root / page) != text:
            (root / page).parent.mkdir(parents=True, exist_ok=True)
            write_atomically(root / page, text)
            written.append(page)
    return written


def drift(root: Path) -> list[str]:
    """For each stale page, the diff from the file to what it should be, and the fix."""
    reports = []
    for page, text in generated_pages(root).items():
        current = _current(root / page)
        if current == text:
            continue
        diff = difflib.unified_diff(
            (current or "").splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"{page} (committed)",
            tofile=f"{page} (generated)",
        )
        state = "is missing" if current is None else "is out of date"
        reports.append(f"{''.join(diff)}{page} {state}: run {FIX} and commit it")
    return reports
