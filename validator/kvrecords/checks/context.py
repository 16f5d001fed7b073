"""What every record check receives: a schema-valid record and the model it links."""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from kvrecords.dataset.document import Document, JsonPath
from kvrecords.dataset.records import Run, runs
from kvrecords.kv.geometry import Model
from kvrecords.kv.units import Written, exact
from kvrecords.problems import Problem, Rule

# The geometry of a model a run or a draft names other than the record's (None: not sound).
ModelLookup = Callable[[str], Model | None]


class RecordContext:
    """A schema-valid record and the model it links (already checked). A plain class: a
    dataclass would import inspect on the one-file validate path (tests/test_import_budget)."""

    def __init__(
        self,
        document: Document,
        model: Model,
        model_display: str,  # "models/<id>", as messages name the model
        model_ids: frozenset[str] = frozenset(),  # every model file's id, for the text's names
    ) -> None:
        self.document = document
        self.model = model
        self.model_display = model_display
        self.model_ids = model_ids

    @property
    def data(self) -> dict[str, Any]:
        return self.document.data  # type: ignore[no-any-return]

    @functools.cached_property
    def runs(self) -> tuple[Run, ...]:
        """The record's runs, in file order: read once for the checks that each go over them."""
        return tuple(runs(self.data))

    def problem(self, rule: Rule, path: JsonPath, message: str) -> Problem:
        return self.document.problem(rule, path, message)

    def exact(self, path: JsonPath) -> Fraction:
        """The value at ``path`` exactly as written (0.935 stays 935/1000, not a binary float)."""
        written = self.document.written.get(path)
        value = value_at(self.data, path)
        if written is not None and not isinstance(value, bool):
            try:
                return exact(written)
            except ArithmeticError:
                pass
        return Fraction(value)

    def written(self, path: JsonPath) -> Written:
        """The number at ``path`` as its text stands in the file."""
        return Written(self.document.written.get(path, str(value_at(self.data, path))))


def value_at(data: Any, path: JsonPath) -> Any:
    """The value at ``path``; ``KeyError`` or ``IndexError`` when it is not there."""
    for part in path:
        data = data[part]
    return data
