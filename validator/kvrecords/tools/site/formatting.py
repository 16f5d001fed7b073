"""Figures as the site shows them: measured values, bytes, token counts, page names, safe links.

Plain text only: escaping is the templates' job (autoescape) and the charts' (``Markup``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple
from urllib.parse import quote

from kvrecords.kv.units import format_bytes_short, format_number

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def number(value: float | int | Fraction) -> str:
    """12,345 for whole values; four significant figures below 1,000, one decimal above."""
    if isinstance(value, Fraction):
        value = float(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"


BOUND_WORDS = {"min": "at least", "max": "up to"}


def measured(value: Any, show: Callable[[Any], str] = format_number) -> str:
    """A measured figure as the record states it, its digits as written: 12.5, ~900, 40–60,
    323.28, up to 9, median 4,096; '' when absent. ``show`` writes each number (bytes, say)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        if "about" in value:
            return f"~{measured(value['about'], show)}"
        if "min" in value and "max" in value:
            return f"{measured(value['min'], show)}–{measured(value['max'], show)}"
        (key, inner), *_ = value.items()  # a bound or one statistic of a distribution
        return f"{BOUND_WORDS.get(key, key)} {measured(inner, show)}"
    if _is_number(value) or isinstance(value, Fraction):
        return show(value)
    return str(value)


class Position(NamedTuple):
    """Where a measured figure is plotted and sorted, and the extent a chart draws around it.

    A number, ``{about: x}`` and one statistic of a distribution (``{median: x}``) stand at
    x. A range ``{min: a, max: b}`` stands at its middle on a log scale, the geometric mean
    √(a × b) (the arithmetic middle when an end is not above zero), and spans a to b. A bound
    (``{max: x}``, up to x; ``{min: x}``, at least x) stands at x and says which way it points.
    """

    at: float
    low: float
    high: float
    bound: str = ""  # 'max' (up to) or 'min' (at least); '' for a figure or a range

    @property
    def how(self) -> str:
        """How the figure was placed, for a tooltip: '' when it stands where it is written."""
        if self.low != self.high:
            return f"plotted at {number(self.at)}, the middle of the range on a log scale"
        if self.bound:
            return f"plotted at the bound, {number(self.at)}"
        return ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def position(value: Any) -> Position | None:
    """Where a measured figure (a context, a metric's value) is plotted and sorted; None when
    it is absent or not a number."""
    if _is_number(value):
        return Position(float(value), float(value), float(value))
    if not isinstance(value, dict) or not all(_is_number(v) for v in value.values()):
        return None
    if "min" in value and "max" in value:
        low, high = float(value["min"]), float(value["max"])
        middle = math.sqrt(low * high) if low > 0 and high > 0 else (low + high) / 2
        return Position(middle, low, high)
    if len(value) != 1:
        return None
    (key, inner), *_ = value.items()
    figure = float(inner)
    return Position(figure, figure, figure, key if key in BOUND_WORDS else "")


def sort_key(value: Any) -> str:
    """A table cell's data-sort value: where the figure stands (``position``) as text, '' (sorted
    last) when absent."""
    found = position(value)
    return "" if found is None else repr(found.at)


def format_bytes(value: float | int | Fraction | None) -> str:
    """Binary units: 65,536 -> '64 KiB'; '' when unknown."""
    return "" if value is None else format_bytes_short(value)


def format_tokens(value: float) -> str:
    """Token counts on axes: 1024 -> '1K', 131072 -> '128K', 1048576 -> '1M'."""
    if value >= 1024 * 1024 and value % (1024 * 1024) == 0:
        return f"{int(value) // (1024 * 1024)}M"
    if value >= 1024 and value % 1024 == 0:
        return f"{int(value) // 1024}K"
    return number(value)


def slug(record_id: str) -> str:
    """The file name of a record's page: its id without the 'kv-efficiency/' prefix."""
    name = record_id.split("/", 1)[-1].replace("/", "--")
    return _UNSAFE_NAME.sub("_", name) or "_"


def page_name(identifier: str) -> str:
    """The file name of a model's or a hardware class's page: its id, made file-safe."""
    return _UNSAFE_NAME.sub("_", identifier) or "_"


def safe_url(url: Any) -> str | None:
    """A source URL fit for an <a href>: http(s) only, never javascript: or data:."""
    if isinstance(url, str) and re.match(r"https?://", url, re.IGNORECASE):
        return url
    return None


def record_href(record_slug: str, root: str, anchor: str = "") -> str:
    """The link to a record's page from a page ``root`` below the site's top."""
    return f"{root}records/{quote(record_slug)}.html" + (f"#{quote(anchor)}" if anchor else "")
