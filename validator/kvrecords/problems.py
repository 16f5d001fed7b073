"""The values every check shares: a problem at a place in a file, and the rule it breaks."""

from __future__ import annotations

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
