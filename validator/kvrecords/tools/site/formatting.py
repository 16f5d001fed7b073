"""Figures as the site shows them: measured values, bytes, token counts, page names, safe links.

Plain text only: escaping is the templates' job (autoescape) and the charts' (``Markup``).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

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


def measured(value: Any) -> str:
    """A measured figure as the record states it, its digits as written: 12.5, ~900, 40–60,
    323.28, up to 9, median 4,096; '' when absent."""
    if value is None:
        return ""
    if isinstance(value, dict):
        if "about" in value:
            return f"~{measured(value['about'])}"
        if "min" in value and "max" in value:
            return f"{measured(value['min'])}–{measured(value['max'])}"
        (key, inner), *_ = value.items()  # a bound or one statistic of a distribution
        return f"{BOUND_WORDS.get(key, key)} {measured(inner)}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


def plain_number(value: Any) -> float | None:
    """The number a measured figure sorts and plots by (a range by its low end), else None."""
    if isinstance(value, dict):
        value = value.get("about", value.get("min"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def sort_key(value: Any) -> str:
    """A table cell's data-sort value: the number as text, '' (sorted last) when absent."""
    figure = plain_number(value)
    return "" if figure is None else repr(figure)


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


def format_ratio(value: float) -> str:
    """A speedup worked out from two figures: 23.13 -> '23.1x'."""
    return f"{value:.3g}x"


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
