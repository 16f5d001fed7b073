"""One entry of a result file (a JSON object, a JSON Lines line, a CSV row) read key by key.

A reader asks an ``Entry`` for each key it knows, as a number or a text; a value of the wrong
type is a ``BenchFileError`` at the key's line and column, never a crash later. The keys it
never asked for are what the draft lists as not imported, with their values as written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from kvrecords.dataset.bench import BenchFigure, BenchFileError, locate, written
from kvrecords.kv.metrics import BY_NAME

Locator = Callable[[str], tuple[int, int]]  # a key of the entry -> (line, column) in the file


class Entry:
    """The values of one entry by key; ``key_prefix`` names the entry in the file ('[2].')."""

    def __init__(self, values: Mapping[str, Any], where: Locator, key_prefix: str = "") -> None:
        self.values = values
        self.where = where
        self.key_prefix = key_prefix
        self.used: set[str] = set()
        self.skipped: list[str] = []  # 'key = raw (why)' for figures read but not imported

    @classmethod
    def in_json(cls, values: Mapping[str, Any], text: str, key_prefix: str = "") -> Entry:
        """An object of a JSON file whose whole text is ``text``."""
        return cls(values, lambda key: locate(text, key_prefix + key), key_prefix)

    @classmethod
    def on_line(cls, values: Mapping[str, Any], line_text: str, line: int) -> Entry:
        """The object on line ``line`` of a JSON Lines file; its keys read 'line 3: key'."""

        def where(key: str) -> tuple[int, int]:
            return line, locate(line_text, key)[1]

        return cls(values, where, f"line {line}: ")

    def error(self, key: str, message: str) -> BenchFileError:
        line, column = self.where(key)
        return BenchFileError(message, line, column, self.key_prefix + key)

    def require(self, tool: str, *keys: str) -> None:
        """An entry of another tool's file (or of none) stops here, not as a run of garbage."""
        missing = [key for key in keys if key not in self.values]
        if missing:
            line, column = self.where("")
            raise BenchFileError(
                f"not a {tool} result: no {' or '.join(missing)} key", line, column, self.key_prefix
            )

    def has(self, key: str) -> bool:
        return key in self.values

    def _read(self, key: str) -> Any:
        """The value at ``key``, marked as imported; None when the key is absent or null."""
        if key not in self.values:
            return None
        self.used.add(key)
        return self.values[key]

    def number(self, key: str, *, infinite: bool = False) -> int | float | None:
        """The number at ``key``; None when the key is absent or null. Infinity only where
        ``infinite`` allows it (a request rate)."""
        value = self._read(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"{key} is {_kind(value)}; a number was expected")
        if isinstance(value, float) and not math.isfinite(value) and not infinite:
            raise self.error(key, f"{key} is {written(value)}; a finite number was expected")
        return value

    def count(self, key: str) -> int | None:
        """A whole, non-negative number at ``key`` (requests, tokens, layers)."""
        value = self.number(key)
        if value is None:
            return None
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(key, f"{key} is {written(value)}; a whole number was expected")
            value = int(value)
        if value < 0:
            raise self.error(key, f"{key} is {written(value)}; a count is not negative")
        return int(value)

    def text(self, key: str) -> str | None:
        """The value at ``key`` as text (a string, or a number or boolean as written)."""
        value = self._read(key)
        if value is None:
            return None
        if isinstance(value, (dict, list)):
            raise self.error(key, f"{key} is {_kind(value)}; a text or a number was expected")
        return written(value)

    def ignore(self, *keys: str) -> None:
        """Keys read as known and deliberately not turned into figures or settings."""
        self.used.update(keys)

    def skip(self, key: str, why: str) -> None:
        """A key the reader knows but draws no figure from: listed as not imported."""
        if key in self.values:
            self.used.add(key)
            self.skipped.append(f"{key} = {_shown(self.values[key])} ({why})")

    def figure(
        self,
        key: str,
        metric: str,
        statistic: str,
        *,
        spread_key: str | None = None,
        scope: str | None = None,
        divide_by: int = 1,
    ) -> BenchFigure | None:
        """The figure at ``key`` in ``metric``; ``divide_by`` converts the file's unit to the
        metric's (1,000,000 for nanoseconds to milliseconds), exactly in decimal. None when the
        key is absent or null; a value a metric cannot take (a time of zero) is not imported."""
        value = self.number(key)
        if value is None:
            return None
        raw = written(value)
        if BY_NAME[metric].positive and value <= 0:
            self.skipped.append(f"{key} = {raw} (a {metric} figure is above zero)")
            return None
        spread = None
        if spread_key is not None:
            deviation = self.number(spread_key)
            if deviation is not None and deviation < 0:
                raise self.error(spread_key, f"{spread_key} is {written(deviation)}; negative")
            spread = None if deviation is None else _converted(deviation, divide_by)
        return BenchFigure(
            metric,
            statistic,
            _converted(value, divide_by),
            self.key_prefix + key,
            raw,
            spread=None if spread is None else float(spread),
            scope=scope,
        )

    def not_imported(self) -> tuple[str, ...]:
        """Every key the reader did not use, with its value, and the figures it skipped."""
        unknown = [
            f"{key} = {_shown(value)} (not a key this reader knows)"
            for key, value in self.values.items()
            if key not in self.used
        ]
        return tuple(self.skipped + unknown)


def _converted(value: int | float, divide_by: int) -> int | float:
    """A plain int or float (not the file's written number) in the metric's unit."""
    if divide_by == 1:
        return int(value) if isinstance(value, int) else float(value)
    exact = Decimal(written(value)) / Decimal(divide_by)  # ns -> ms: 72135640 -> 72.13564
    whole = isinstance(value, int) and exact == exact.to_integral_value()
    return int(exact) if whole else float(exact)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the text {_shown(value)}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{written(value)}"


def _shown(value: Any, limit: int = 60) -> str:
    """A value as written, cut short: lists by their length (per-request arrays)."""
    if isinstance(value, list):
        return f"a list of {len(value):,} values"
    if isinstance(value, dict):
        return f"an object of {len(value):,} keys"
    text = repr(value) if isinstance(value, str) else written(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
