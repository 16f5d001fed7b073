"""The values every check shares: a problem at a place in a file, and the rule it breaks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

Severity = Literal["error", "warning"]


class Problem(NamedTuple):
    """A located problem. Ordering (path, line, column, code) makes output deterministic."""

    path: str
    line: int
    column: int
    code: str
    message: str
    severity: Severity = "error"


class Rule(NamedTuple):
    """One problem code and its documentation, declared beside the check that emits it.

    ``docs/rules.md`` and ``kvrecords rules`` are generated from these values (collected by
    ``kvrecords.checks.registry``). A NamedTuple, not a dataclass: modules that declare rules
    load on every pre-commit run, where importing ``dataclasses`` alone costs about 10 ms.
    """

    code: str  # KV followed by three digits, stable and never reused
    name: str
    summary: str  # what it checks
    why: str  # why it matters
    passing: str  # a YAML fragment that passes
    failing: str  # a YAML fragment that fails, with the message it gets

    def problem(
        self, path: str, line: int, column: int, message: str, severity: Severity = "error"
    ) -> Problem:
        """This rule's problem at ``path:line:column``."""
        return Problem(path, line, column, self.code, message, severity)


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names closest to a misspelt one, best first (none when nothing is close)."""
    import difflib  # only when a name is wrong

    return difflib.get_close_matches(name[:100], sorted(known), n=n)


def did_you_mean(name: str, known: Iterable[str] | Mapping[str, str]) -> str:
    """``; did you mean rtx-5090, rtx-4090?``: the known names closest to a misspelt one, or ''.

    ``known`` may map each name to the form to show it in (a record's slug to its path).
    """
    shown = known if isinstance(known, Mapping) else {name: name for name in known}
    close = closest(name, shown)
    return f"; did you mean {', '.join(shown[c] for c in close)}?" if close else ""
