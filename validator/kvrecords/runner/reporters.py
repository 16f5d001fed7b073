"""Output formats for problems; the checks never print."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from kvrecords.problems import Problem


def counted(number: int, noun: str) -> str:
    """``1 file``, ``2 files``: a count with its noun in the right number."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _summary(problems: Sequence[Problem], files_checked: int) -> str:
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    files = len({p.path for p in problems})
    checked = f"{counted(files_checked, 'file')} checked"
    if not problems:
        return f"{checked}, no problems"
    return (
        f"{checked}: {counted(errors, 'error')}, {counted(warnings, 'warning')} "
        f"in {counted(files, 'file')}"
    )


def problem_line(problem: Problem) -> str:
    """``path:line:column: CODE message``, marked when it is a warning: the one text form."""
    warning = " [warning]" if problem.severity == "warning" else ""
    return (
        f"{problem.path}:{problem.line}:{problem.column}: {problem.code} {problem.message}{warning}"
    )


def text(problems: Sequence[Problem], files_checked: int) -> str:
    lines = [problem_line(problem) for problem in problems]
    return "\n".join([*lines, _summary(problems, files_checked)])


def github(problems: Sequence[Problem], files_checked: int) -> str:
    """GitHub Actions workflow commands: each problem becomes an annotation on the PR diff."""

    def escape(value: str) -> str:
        return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def escape_property(value: str) -> str:
        return escape(value).replace(":", "%3A").replace(",", "%2C")

    lines = [
        f"::{p.severity} file={escape_property(p.path)},line={p.line},col={p.column},"
        f"title={p.code}::{escape(p.code + ' ' + p.message)}"
        for p in problems
    ]
    return "\n".join([*lines, _summary(problems, files_checked)])


def json_report(problems: Sequence[Problem], files_checked: int) -> str:
    return json.dumps(
        {
            "files_checked": files_checked,
            "errors": sum(1 for p in problems if p.severity == "error"),
            "warnings": sum(1 for p in problems if p.severity == "warning"),
            "problems": [
                {
                    "path": p.path,
                    "line": p.line,
                    "column": p.column,
                    "code": p.code,
                    "severity": p.severity,
                    "message": p.message,
                }
                for p in problems
            ],
        },
        indent=2,
    )


REPORTERS: dict[str, Callable[[Sequence[Problem], int], str]] = {
    "text": text,
    "json": json_report,
    "github": github,
}
