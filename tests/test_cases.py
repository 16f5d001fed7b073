"""Directory-driven fixtures: tests/cases/<CODE>/{pass,fail}/<case>/ overlays on the dataset.

Each case is copied over the repository's schemas, models and hardware (no records). A pass case
validates clean; a fail case reports its code, plus any code named in ``also.txt``, and nothing
else. ``symlinks.txt`` lines (``path -> target``) become symlinks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import copy_dataset
from kvrecords.checks import registry as rules
from kvrecords.runner.validate import validate

CASES = Path(__file__).parent / "cases"
SETUP_FILES = ("symlinks.txt", "also.txt")


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


@pytest.mark.parametrize("case", _cases("fail"), ids=_case_id)
def test_fail_case_reports_its_code(case: Path, tmp_path: Path) -> None:
    code = case.parent.parent.name
    also = case / "also.txt"
    expected = {code} | (set(also.read_text().split()) if also.exists() else set())
    problems = validate(_build(case, tmp_path)).problems
    assert {p.code for p in problems} == expected, [f"{p.code} {p.message}" for p in problems]
    for problem in problems:
        assert problem.line >= 1 and problem.column >= 1
        assert problem.message


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
