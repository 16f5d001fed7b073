"""The one value every check yields: a problem at a place in a file."""

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
