"""Directory-driven fixtures: tests/cases/<CODE>/{pass,fail}/<case>/ overlays on the dataset.

Each case is copied over the repository's schemas, models and hardware (no records). A pass case
validates clean. A fail case reports exactly the problems its ``expected.txt`` pins, one a line as
``path:line:column: CODE`` (with `` [warning]`` for a warning), in output order; its folder's code
is among them. ``symlinks.txt`` lines (``path -> target``) become symlinks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import copy_dataset
from kvrecords.checks import registry as rules
from kvrecords.problems import Problem
from kvrecords.runner.validate import validate

CASES = Path(__file__).parent / "cases"
SETUP_FILES = ("symlinks.txt", "expected.txt")


def _cases(outcome: str) -> list[Path]:
    return sorted(CASES.glob(f"KV*/{outcome}/*"))


def _build(case: Path, tmp_path: Path) -> Path:
    root = copy_dataset(tmp_path / "dataset", with_records=False)
    shutil.copytree(case, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*SETUP_FILES))
    links = case / "symlinks.txt"
    if links.exists():
        for line in links.read_text().splitlines():
            link, target = (part.strip() for part in line.split("->"))
            (root / link).parent.mkdir(parents=True, exist_ok=True)
            (root / link).symlink_to(target)
    return root


def _case_id(case: Path) -> str:
    return f"{case.parent.parent.name}-{case.name}"


@pytest.mark.parametrize("case", _cases("pass"), ids=_case_id)
def test_pass_case_validates_clean(case: Path, tmp_path: Path) -> None:
    outcome = validate(_build(case, tmp_path))
    assert outcome.problems == []
    assert outcome.files_checked > 0


def _pinned(problem: Problem) -> str:
    """A problem as ``expected.txt`` pins it: where, which code, and whether it only warns."""
    warning = " [warning]" if problem.severity == "warning" else ""
    return f"{problem.path}:{problem.line}:{problem.column}: {problem.code}{warning}"


@pytest.mark.parametrize("case", _cases("fail"), ids=_case_id)
def test_fail_case_reports_the_pinned_problems(case: Path, tmp_path: Path) -> None:
    expected = (case / "expected.txt").read_text(encoding="utf-8").splitlines()
    problems = validate(_build(case, tmp_path)).problems
    assert [_pinned(problem) for problem in problems] == expected, [
        f"{_pinned(p)} {p.message}" for p in problems
    ]
    assert case.parent.parent.name in {problem.code for problem in problems}
    assert all(problem.message for problem in problems)


def test_every_code_is_documented_and_has_a_failing_fixture() -> None:
    for code, rule in rules.RULES.items():
        assert rule.code == code
        assert all([rule.name, rule.summary, rule.why, rule.passing, rule.failing]), code
        assert list((CASES / code / "fail").iterdir()), f"{code} has no failing fixture"


def test_fixture_folders_name_known_codes() -> None:
    for folder in CASES.iterdir():
        assert folder.name in rules.RULES, folder.name
        assert {child.name for child in folder.iterdir()} <= {"pass", "fail"}


def test_rules_doc_is_generated_from_the_registry() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    assert docs.read_text(encoding="utf-8") == rules.markdown(), (
        "run: kvrecords rules --markdown > docs/rules.md"
    )
