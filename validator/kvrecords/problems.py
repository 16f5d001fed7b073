"""The one value every check yields: a problem at a place in a file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Problem:
    """A located problem. Ordering (path, line, column, code) makes output deterministic."""

    path: str
    line: int
    column: int
    code: str
    message: str
    severity: Severity = "error"
