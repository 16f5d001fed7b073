"""The dataset as a static web site: a sortable, filterable table, one page per record and model.

The site is plain files: HTML, one hand-written CSS file, one hand-written JS file, and charts
drawn here as inline SVG. Nothing is fetched at view time. Every value from the dataset is
escaped with ``html.escape``; only ``<a href>`` may point outside the site, and only to http(s).
The figures are the ones ``export.rows`` gives (KV recomputed from the model files) and the
record pages carry the validator's own recomputation (``explain_record``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.arithmetic import group_cost, kv_report, parse_element_type
from kvrecords.kv.geometry import LeafGroup, Model, Parallel
from kvrecords.tools.explain import explain_record
from kvrecords.tools.export import rows

ASSETS = ("site.css", "site.js")
BF16 = parse_element_type("bf16")
DEFAULT_MAX_CONTEXT = 128 * 1024
TOTAL = "total (KV + state)"
ASSUMED = re.compile(r"\bassume[ds]\b", re.IGNORECASE)

# Attention families for the overview chart, with colours readable in greyscale print too.
FAMILIES = {
    "full": ("full attention", "#1f77b4"),
    "sliding": ("sliding-window mix", "#ff7f0e"),
    "mla": ("MLA", "#2ca02c"),
    "hybrid": ("hybrid linear / Mamba", "#9467bd"),
}
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


# ---------------------------------------------------------------- formatting


def _h(value: object) -> str:
    """Any value as escaped HTML text."""
    return escape(str(value), quote=True)


def _number(value: float | int | Fraction) -> str:
    if isinstance(value, Fraction):
        value = float(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"


def _measured(value: Any) -> str:
    """A measured figure as the record states it: 12.5, ~900, 40-60."""
    if value is None:
        return ""
    if isinstance(value, dict):
        if "about" in value:
            return f"~{_number(value['about'])}"
        return f"{_number(value['min'])}–{_number(value['max'])}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(value)
    return str(value)


def _sort_key(value: Any) -> str:
    """The number a measured figure sorts by (a range by its low end); '' when absent."""
    if isinstance(value, dict):
        value = value.get("about", value.get("min"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))
    return ""


def _numeric(value: Any) -> float | None:
    key = _sort_key(value)
    return float(key) if key else None


def format_bytes(value: float | int | Fraction | None) -> str:
    """Binary units: 65,536 -> '64 KiB'."""
    if value is None:
        return ""
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(amount) < 1024 or unit == "TiB":
            if unit == "B" or amount >= 100 or amount.is_integer():
                return f"{amount:,.0f} {unit}"
            return f"{amount:.3g} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")


def format_tokens(value: float) -> str:
    """Token counts on axes: 1024 -> '1K', 131072 -> '128K', 1048576 -> '1M'."""
    if value >= 1024 * 1024 and value % (1024 * 1024) == 0:
        return f"{int(value) // (1024 * 1024)}M"
    if value >= 1024 and value % 1024 == 0:
        return f"{int(value) // 1024}K"
    return _number(value)


def slug(record_id: str) -> str:
    """The file name of a record's page: its id without the 'kv-efficiency/' prefix."""
    name = record_id.split("/", 1)[-1].replace("/", "--")
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_"


def model_slug(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", model_id) or "_"


def _safe_url(url: Any) -> str | None:
    """A source URL fit for an <a href>: http(s) only, never javascript: or data:."""
    if isinstance(url, str) and re.match(r"https?://", url, re.IGNORECASE):
        return url
    return None


# ---------------------------------------------------------------- SVG charts


@dataclass(frozen=True)
class LogAxis:
    """A log-scaled axis from ``low`` to ``high`` mapped onto pixels ``start`` to ``end``."""

    low: float
    high: float
    start: float
    end: float

    def at(self, value: float) -> float:
        span = math.log(self.high) - math.log(self.low)
        share = (math.log(value) - math.log(self.low)) / span if span else 0.5
        return self.start + share * (self.end - self.start)

    def ticks(self, base: int) -> list[float]:
        """Powers of ``base`` inside the axis, thinned to at most eight."""
        first = math.ceil(math.log(self.low, base) - 1e-9)
        last = math.floor(math.log(self.high, base) + 1e-9)
        powers = list(range(first, last + 1))
        step = max(1, math.ceil(len(powers) / 8))
        return [float(base**p) for p in powers[::step]]


@dataclass(frozen=True)
class LinearAxis:
    low: float
    high: float
    start: float
    end: float

    def at(self, value: float) -> float:
        share = (value - self.low) / (self.high - self.low) if self.high > self.low else 0.5
        return self.start + share * (self.end - self.start)

    def ticks(self) -> list[float]:
        raw = (self.high - self.low) / 5 or 1
        magnitude = 10 ** math.floor(math.log10(raw))
        step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
        first = math.ceil(self.low / step) * step
        return [first + i * step for i in range(int((self.high - first) / step + 1e-9) + 1)]


def _log_bounds(values: Iterable[float], base: int) -> tuple[float, float]:
    """Powers of ``base`` enclosing ``values`` (all positive)."""
    numbers = list(values)
    # A value exactly on a power gets one more power of room, so no bar has zero length.
    low = base ** math.floor(math.log(min(numbers), base) - 1e-9)
    high = base ** math.ceil(math.log(max(numbers), base) + 1e-9)
    return float(low), float(high)


def _svg_open(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{_h(title)}">',
        f"<title>{_h(title)}</title>",
    ]


def _text(
    x: float, y: float, content: str, css: str, anchor: str = "middle", extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" class="{css}" text-anchor="{anchor}"{extra}>'
        f"{_h(content)}</text>"
    )


def _x_axis(
    ticks: Sequence[float],
    at: Callable[[float], float],
    label: Callable[[float], str],
    top: float,
    bottom: float,
    title: str,
    left: float,
    right: float,
) -> list[str]:
    parts = [f'<line class="axis" x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}"/>']
    for tick in ticks:
        x = at(tick)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}"/>')
        parts.append(_text(x, bottom + 16, label(tick), "tick"))
    parts.append(_text((left + right) / 2, bottom + 38, title, "axis-label"))
    return parts


def _y_axis(
    ticks: Sequence[float],
    at: Callable[[float], float],
    label: Callable[[float], str],
    left: float,
    right: float,
    title: str,
    top: float,
    bottom: float,
) -> list[str]:
    parts = [f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{bottom}"/>']
    for tick in ticks:
        y = at(tick)
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
        parts.append(_text(left - 6, y + 4, label(tick), "tick", "end"))
    middle = (top + bottom) / 2
    parts.append(
        _text(16, middle, title, "axis-label", extra=f' transform="rotate(-90 16 {middle:.1f})"')
    )
    return parts


def _legend(
    entries: Sequence[tuple[str, str]],
    x: float,
    y: float,
    right: float,
    dashed: Sequence[bool] = (),
) -> tuple[list[str], float]:
    """A legend flowing in rows from (x, y) up to ``right``; returns it and the y below it."""
    parts = []
    left, top = x, y
    for index, (label, colour) in enumerate(entries):
        width = 24 + 7 * len(label) + 18  # 12px text is about 7px a character
        if left > x and left + width > right:
            left, top = x, top + 18
        dash = ' stroke-dasharray="5 3"' if index < len(dashed) and dashed[index] else ""
        parts.append(
            f'<line x1="{left}" y1="{top}" x2="{left + 18}" y2="{top}" stroke="{colour}" '
            f'stroke-width="4"{dash}/>'
        )
        parts.append(_text(left + 24, top + 4, label, "legend", "start"))
        left += width
    return parts, top + 18


def _figure(svg: list[str], caption: str, ident: str) -> str:
    heading = svg[1].removeprefix("<title>").removesuffix("</title>")  # already escaped
    return (
        f'<figure class="chart" id="{_h(ident)}"><h3>{heading}</h3>'
        + "\n".join([*svg, "</svg>"])
        + f"<figcaption>{caption}</figcaption></figure>"
    )


def family(model: Model) -> str:
    """The attention family of a model, for colouring: hybrid > MLA > sliding mix > full."""
    kinds = {leaf.kind for leaf in model.leaf_groups()}
    if kinds & {"linear_attention", "mamba1", "mamba2"}:
        return "hybrid"
    if "mla" in kinds:
        return "mla"
    if "sliding_window" in kinds:
        return "sliding"
    return "full"


def bytes_per_token_chart(models: Sequence[tuple[str, Model]]) -> str:
    """Horizontal bars: bf16 bytes per token of every model whose geometry gives it."""
    known: list[tuple[str, Model, float]] = []
    missing: list[str] = []
    for model_id, model in models:
        per_token = kv_report(model, BF16, 1).bytes_per_token
        if per_token is None or per_token <= 0:
            missing.append(model_id)
        else:
            known.append((model_id, model, float(per_token)))
    known.sort(key=lambda item: item[2])
    left, right, bar = 230, 840, 16
    legend, top = _legend(list(FAMILIES.values()), left, 14, right)
    top += 4
    bottom = top + bar * len(known) + 6
    svg = [*_svg_open(900, int(bottom + 60), "KV bytes per token, bf16, every model"), *legend]
    if known:
        axis = LogAxis(*_log_bounds((v for _, _, v in known), 4), left, right)
        svg += _x_axis(
            axis.ticks(4),
            axis.at,
            format_bytes,
            top,
            bottom,
            "KV bytes per token (bf16, log scale)",
            left,
            right,
        )
        for index, (model_id, model, value) in enumerate(known):
            y = top + index * bar + 2
            colour = FAMILIES[family(model)][1]
            href = f"models/{quote(model_slug(model_id))}.html"
            svg.append(
                f'<a href="{_h(href)}"><rect x="{left}" y="{y}" width="{axis.at(value) - left:.1f}" '
                f'height="{bar - 4}" fill="{colour}"><title>{_h(model_id)}: '
                f"{_h(format_bytes(value))} per token</title></rect>"
                + _text(left - 6, y + bar - 6, model_id, "tick", "end")
                + "</a>"
            )
            svg.append(
                _text(axis.at(value) + 4, y + bar - 6, format_bytes(value), "value", "start")
            )
    caption = (
        "Bytes each new token adds to the cache while every layer still grows (sliding windows "
        "not yet full), bf16, layers as the model has them; shared and state layers add nothing."
    )
    if missing:
        caption += (
            " Not drawn (a dimension is unknown, or no per-token cache): "
            + ", ".join(_h(m) for m in missing)
            + "."
        )
    return _figure(svg, caption, "chart-bytes-per-token")


def ttft_chart(table: Sequence[dict[str, Any]]) -> str:
    """Paired horizontal bars: cold and warm TTFT of the records that state both."""
    pairs = [
        (row, cold, warm)
        for row in table
        if (cold := _numeric(row["cold_ttft_ms"])) and (warm := _numeric(row["warm_ttft_ms"]))
    ]
    left, right, step = 330, 820, 44
    colours = (("cold (no cache hit)", "#d62728"), ("warm (prefix cached)", "#2ca02c"))
    legend, top = _legend(colours, left, 14, right)
    bottom = top + step * max(len(pairs), 1)
    svg = [*_svg_open(900, int(bottom + 60), "Cold and warm time to first token"), *legend]
    if pairs:
        axis = LogAxis(*_log_bounds((v for _, c, w in pairs for v in (c, w)), 10), left, right)
        svg += _x_axis(
            axis.ticks(10),
            axis.at,
            lambda v: f"{_number(v)} ms",
            top,
            bottom,
            "time to first token (ms, log scale)",
            left,
            right,
        )
        for index, (row, cold, warm) in enumerate(pairs):
            y = top + index * step + 4
            name = slug(row["id"])
            href = f"records/{quote(name)}.html"
            svg.append(
                f'<a href="{_h(href)}">' + _text(left - 6, y + 20, name, "tick", "end") + "</a>"
            )
            for offset, value, raw, (label, colour) in (
                (0, cold, row["cold_ttft_ms"], colours[0]),
                (18, warm, row["warm_ttft_ms"], colours[1]),
            ):
                svg.append(
                    f'<rect x="{left}" y="{y + offset}" width="{axis.at(value) - left:.1f}" '
                    f'height="16" fill="{colour}"><title>{_h(label)}: {_h(_measured(raw))} ms</title></rect>'
                )
                svg.append(
                    _text(
                        axis.at(value) + 4,
                        y + offset + 12,
                        f"{_measured(raw)} ms",
                        "value",
                        "start",
                    )
                )
    else:
        svg.append(_text(450, top + 20, "no record states both a cold and a warm TTFT", "tick"))
    caption = (
        f"{len(pairs)} records state both a cold and a warm TTFT (as measured; ~ approximate)."
    )
    return _figure(svg, caption, "chart-ttft")


def decode_chart(table: Sequence[dict[str, Any]]) -> str:
    """Scatter: decode tokens/s against context, for records that give both."""
    points = []
    for row in table:
        tps = _numeric(row["measured_tps_at_ctx"]) or _numeric(row["decode_tokens_per_s"])
        if row["context_tokens"] and tps:
            points.append((row, float(row["context_tokens"]), tps))
    left, right = 80, 840
    entries = [
        (slug(r["id"]), SERIES_COLOURS[i % len(SERIES_COLOURS)])
        for i, (r, _, _) in enumerate(points)
    ]
    legend, top = _legend(entries, left, 14, right)
    top += 6
    bottom = top + 280
    svg = [*_svg_open(900, int(bottom + 60), "Decode tokens per second against context"), *legend]
    if points:
        x_axis = LogAxis(*_log_bounds((p[1] for p in points), 2), left, right)
        highest = max(p[2] for p in points)
        y_axis = LinearAxis(0, highest * 1.15, bottom, top)
        svg += _x_axis(
            x_axis.ticks(2),
            x_axis.at,
            format_tokens,
            top,
            bottom,
            "context (tokens, log scale)",
            left,
            right,
        )
        svg += _y_axis(
            y_axis.ticks(), y_axis.at, _number, left, right, "decode (tokens/s)", top, bottom
        )
        for index, (row, context, tps) in enumerate(points):
            x, y = x_axis.at(context), y_axis.at(tps)
            colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
            name = slug(row["id"])
            href = f"records/{quote(name)}.html"
            svg.append(
                f'<a href="{_h(href)}"><circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}">'
                f"<title>{_h(name)}: {_h(_number(tps))} tok/s at {_h(_number(context))} tokens"
                "</title></circle></a>"
            )
    else:
        svg.append(_text(450, 200, "no record gives both a context and a decode rate", "tick"))
    caption = (
        f"{len(points)} records give both a context and a decode rate (measured_tps_at_ctx, "
        "else results.decode_tokens_per_s). Different models and hardware: read each point alone."
    )
    return _figure(svg, caption, "chart-decode")


def _contexts(max_context: int, windows: Iterable[int]) -> list[int]:
    """Sample contexts from 1K to ``max_context``, log-spaced, plus each window (the kink)."""
    low = 1024
    points = {low, max_context}
    steps = 48
    for i in range(steps + 1):
        points.add(round(low * (max_context / low) ** (i / steps)))
    points.update(w for w in windows if low <= w <= max_context)
    return sorted(points)


def model_chart(model: Model, max_context: int) -> str:
    """KV bytes (bf16) against context for one model: each leaf group, the state and the total."""
    leaves = model.leaf_groups()
    contexts = _contexts(max_context, (g.window for g in leaves if g.window is not None))
    series: list[tuple[str, list[float | None], bool]] = []  # label, values, dashed
    unknown: list[str] = []  # groups with a dimension missing: not drawn
    for index, leaf in enumerate(leaves):
        costs = [group_cost(leaf, BF16, BF16, c) for c in contexts]
        if costs[0].bytes_per_token:
            growth = [None if c.kv_bytes is None else float(c.kv_bytes) for c in costs]
            series.append((f"{_leaf_label(leaf)} (group {index + 1})", growth, False))
        state = costs[0].state_bytes
        if state is None or costs[0].bytes_per_token is None:
            unknown.append(f"{_leaf_label(leaf)} (group {index + 1})")
        if state:
            label = f"{leaf.kind} state, group {index + 1} (constant)"
            series.append((label, [float(state)] * len(contexts), True))
    totals: list[float | None] = []
    for context in contexts:
        report = kv_report(model, BF16, context)
        kv, state = report.kv_bytes_at_context, report.fixed_state_bytes
        totals.append(None if kv is None or state is None else float(kv + state))
    if len(series) > 1:
        series.append((TOTAL, totals, False))
    colours = [
        (label, "#1b1f24" if label == TOTAL else SERIES_COLOURS[i % len(SERIES_COLOURS)])
        for i, (label, _, _) in enumerate(series)
    ]
    left, right = 90, 840
    legend, top = _legend(colours, left, 14, right, [d for _, _, d in series])
    top += 6
    bottom = top + 300
    svg = [*_svg_open(900, int(bottom + 60), f"KV bytes against context, {model.id}"), *legend]
    values: list[float] = [v for _, vs, _ in series for v in vs if v]
    if not values:
        svg.append(_text(450, 200, "cannot be drawn: a dimension of the model is unknown", "tick"))
        return _figure(
            svg, "KV bytes (bf16) against context: nothing known to draw.", "chart-model"
        )
    x_axis = LogAxis(float(contexts[0]), float(contexts[-1]), left, right)
    y_axis = LogAxis(*_log_bounds(values, 4), bottom, top)
    x_ticks = x_axis.ticks(2)
    if float(contexts[-1]) not in x_ticks:
        x_ticks.append(float(contexts[-1]))
    svg += _x_axis(
        x_ticks, x_axis.at, format_tokens, top, bottom, "context (tokens, log scale)", left, right
    )
    svg += _y_axis(
        y_axis.ticks(4),
        y_axis.at,
        format_bytes,
        left,
        right,
        "KV bytes (bf16, log scale)",
        top,
        bottom,
    )
    for (label, vs, dashed), (_, colour) in zip(series, colours, strict=True):
        points = " ".join(
            f"{x_axis.at(c):.1f},{y_axis.at(v):.1f}" for c, v in zip(contexts, vs, strict=True) if v
        )
        width = 3.5 if label == TOTAL else 2.5
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        svg.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="{width}"{dash} points="{points}">'
            f"<title>{_h(label)}</title></polyline>"
        )
    caption = (
        f"KV bytes of one sequence in bf16 from 1K to {_h(format_tokens(contexts[-1]))} tokens. "
        "Full attention and MLA grow with the context; a sliding window stops growing at its "
        "window; linear-attention and Mamba state is constant."
    )
    if unknown:
        caption += " Not drawn, a dimension is unknown: " + _h(", ".join(unknown)) + "."
    return _figure(svg, caption, "chart-model")


# ---------------------------------------------------------------- pages


def _page(title: str, body: str, depth: int) -> str:
    up = "../" * depth
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_h(title)}</title>\n"
        f'<link rel="stylesheet" href="{up}assets/site.css">\n'
        "</head>\n<body>\n"
        f"{body}\n"
        "</body>\n</html>\n"
    )


def _hardware(row: dict[str, Any]) -> str:
    accelerator = row["accelerator"] or "not stated"
    return (
        f"{row['accelerator_count']} x {accelerator}" if row["accelerator_count"] else accelerator
    )


def _decode(row: dict[str, Any]) -> Any:
    return (
        row["measured_tps_at_ctx"]
        if row["measured_tps_at_ctx"] is not None
        else row["decode_tokens_per_s"]
    )


@dataclass(frozen=True)
class Column:
    header: str
    unit: str
    numeric: bool
    cell: Callable[[dict[str, Any]], str]  # the escaped HTML inside the <td>
    sort: Callable[[dict[str, Any]], str]  # the data-sort value ('' sorts last)


def _link_cell(row: dict[str, Any]) -> str:
    return f'<a href="records/{_h(quote(slug(row["id"])))}.html">{_h(slug(row["id"]))}</a>'


def _model_cell(row: dict[str, Any]) -> str:
    return f'<a href="models/{_h(quote(model_slug(row["model"])))}.html">{_h(row["model"])}</a>'


def _kv_cell(key: str) -> Callable[[dict[str, Any]], str]:
    """Bytes in binary units, with the record's KV dtype in small type under them."""

    def cell(row: dict[str, Any]) -> str:
        if row[key] is None:
            return ""
        return f'{_h(format_bytes(row[key]))}<span class="unit">{_h(row["kv_dtype"])}</span>'

    return cell


COLUMNS = (
    Column("record", "", False, _link_cell, lambda r: slug(r["id"])),
    Column(
        "technique(s)",
        "",
        False,
        lambda r: _h(", ".join(r["techniques"])),
        lambda r: ",".join(r["techniques"]),
    ),
    Column("model", "", False, _model_cell, lambda r: r["model"]),
    Column(
        "hardware",
        "count x id",
        False,
        lambda r: _h(_hardware(r)),
        lambda r: r["accelerator"] or "",
    ),
    Column("engine", "", False, lambda r: _h(r["engine"]), lambda r: r["engine"]),
    Column(
        "context",
        "tokens",
        True,
        lambda r: _h(_measured(r["context_tokens"])),
        lambda r: _sort_key(r["context_tokens"]),
    ),
    Column(
        "TTFT cold",
        "ms",
        True,
        lambda r: _h(_measured(r["cold_ttft_ms"])),
        lambda r: _sort_key(r["cold_ttft_ms"]),
    ),
    Column(
        "TTFT warm",
        "ms",
        True,
        lambda r: _h(_measured(r["warm_ttft_ms"])),
        lambda r: _sort_key(r["warm_ttft_ms"]),
    ),
    Column(
        "decode",
        "tokens/s",
        True,
        lambda r: _h(_measured(_decode(r))),
        lambda r: _sort_key(_decode(r)),
    ),
    Column(
        "hit rate",
        "0-1",
        True,
        lambda r: _h(_measured(r["hit_rate"])),
        lambda r: _sort_key(r["hit_rate"]),
    ),
    Column(
        "KV per token",
        "bytes (dtype)",
        True,
        _kv_cell("bytes_per_token"),
        lambda r: _sort_key(r["bytes_per_token"]),
    ),
    Column(
        "KV at context",
        "bytes (dtype)",
        True,
        _kv_cell("kv_bytes_at_context"),
        lambda r: _sort_key(r["kv_bytes_at_context"]),
    ),
    Column(
        "confidence",
        "0-1",
        True,
        lambda r: _h(_measured(r["confidence"])),
        lambda r: _sort_key(r["confidence"]),
    ),
)


def _select(name: str, label: str, options: Iterable[str]) -> str:
    choices = "".join(f'<option value="{_h(o)}">{_h(o)}</option>' for o in sorted(set(options)))
    return (
        f'<label>{_h(label)}<select name="{name}" id="filter-{name}">'
        f'<option value="">all</option>{choices}</select></label>'
    )


def index_page(table: Sequence[dict[str, Any]], models: Sequence[tuple[str, Model]]) -> str:
    head = "".join(
        f'<th class="sortable{" num" if c.numeric else ""}" data-type="{"num" if c.numeric else "text"}" '
        f'tabindex="0" scope="col"><span class="label">{_h(c.header)}</span>'
        + (f'<span class="unit">{_h(c.unit)}</span>' if c.unit else "")
        + "</th>"
        for c in COLUMNS
    )
    body_rows = []
    for row in table:
        cells = "".join(
            f'<td class="{("num " if c.numeric else "") + ("empty" if not c.sort(row) and c.numeric else "")}'
            f'" data-sort="{_h(c.sort(row))}">{c.cell(row)}</td>'
            for c in COLUMNS
        )
        context = _sort_key(row["context_tokens"])
        body_rows.append(
            f'<tr data-techniques="{_h(" ".join(row["techniques"]))}" data-model="{_h(row["model"])}" '
            f'data-hardware="{_h(row["accelerator"] or "")}" data-engine="{_h(row["engine"])}" '
            f'data-context="{_h(context)}">{cells}</tr>'
        )
    filters = (
        '<form class="filters" id="filters" role="search">'
        '<label>search<input type="search" name="q" id="filter-q" placeholder="any text in a row"></label>'
        + _select("technique", "technique", (t for r in table for t in r["techniques"]))
        + _select("model", "model", (r["model"] for r in table))
        + _select("hardware", "hardware", (r["accelerator"] for r in table if r["accelerator"]))
        + _select("engine", "engine", (r["engine"] for r in table))
        + '<label>min context (tokens)<input type="number" min="0" name="min_context" id="filter-min-context"></label>'
        + '<label>max context (tokens)<input type="number" min="0" name="max_context" id="filter-max-context"></label>'
        + '<button type="reset">clear</button></form>'
    )
    body = f"""<h1>KV-cache efficiency records</h1>
<p class="lead">{len(table)} published measurements of KV-cache efficiency for LLM inference, across
{len(models)} models. Measured figures are as the sources give them (~ approximate, a–b a range,
blank when the source does not say). KV figures are recomputed by the validator from the model
geometry files, in the record's KV dtype. Click a column header to sort; click a record for its
source and the validator's recomputation.</p>
{filters}
<p class="count"><span id="visible-count">{len(table)}</span> of {len(table)} records shown</p>
<div class="table-wrap"><table id="records">
<thead><tr>{head}</tr></thead>
<tbody>
{chr(10).join(body_rows)}
</tbody></table></div>
<h2>Overview</h2>
<div class="charts">
{bytes_per_token_chart(models)}
<div>
{ttft_chart(table)}
{decode_chart(table)}
</div>
</div>
<h2>Models</h2>
<p>{", ".join(f'<a href="models/{_h(quote(model_slug(m)))}.html">{_h(m)}</a>' for m, _ in models)}</p>
<script src="assets/site.js"></script>"""
    return _page("KV-cache efficiency records", body, 0)


def _explain_html(text: str) -> str:
    lines = []
    for line in text.splitlines():
        escaped = _h(line)
        lines.append(f'<span class="assumed">{escaped}</span>' if ASSUMED.search(line) else escaped)
    return "\n".join(lines)


def _facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A definition list of (label, escaped HTML) pairs, skipping empty values."""
    items = "".join(f"<dt>{_h(k)}</dt><dd>{v}</dd>" for k, v in pairs if v)
    return f'<dl class="facts">{items}</dl>'


def record_page(root: Path, row: dict[str, Any]) -> str:
    document = read_document(root / row["path"], row["path"])
    data = document.data if isinstance(document, Document) else {}
    source = data.get("methodology", {}).get("source", {})
    url = _safe_url(row["source_url"])
    link = f'<a href="{_h(url)}" rel="noopener noreferrer">{_h(url)}</a>' if url else ""
    if row["source_url"] and not url:
        link = _h(row["source_url"])
    engine = row["engine"] + (f" {row['engine_version']}" if row["engine_version"] else "")
    source_facts = _facts(
        [
            ("publisher", _h(row["publisher"] or "")),
            ("title", _h(source.get("title") or "")),
            ("published", _h(row["published"] or "")),
            ("source", link or "no URL (see the citation)"),
            ("locator", _h(row["locator"] or "")),
            ("citation", _h(source.get("citation") or "")),
            ("record file", _h(row["path"])),
        ]
    )
    measurement_facts = _facts(
        [
            ("techniques", _h(", ".join(row["techniques"]))),
            ("model", _model_cell(row).replace('href="models/', 'href="../models/')),
            ("hardware", _h(_hardware(row))),
            ("engine", _h(engine)),
            ("weights precision", _h(row["weights_precision"] or "")),
            ("context (tokens)", _h(_measured(row["context_tokens"]))),
            ("TTFT cold (ms)", _h(_measured(row["cold_ttft_ms"]))),
            ("TTFT warm (ms)", _h(_measured(row["warm_ttft_ms"]))),
            ("TTFT at context (ms)", _h(_measured(row["measured_ttft_ms_at_ctx"]))),
            ("decode at context (tokens/s)", _h(_measured(row["measured_tps_at_ctx"]))),
            ("decode (tokens/s)", _h(_measured(row["decode_tokens_per_s"]))),
            ("hit rate (0-1)", _h(_measured(row["hit_rate"]))),
            ("speedup (cold / warm)", _h(_measured(row["speedup"]))),
            ("confidence (0-1)", _h(_measured(row["confidence"]))),
        ]
    )
    dtype = f"{row['kv_dtype']}{'' if row['kv_dtype_stated'] else ', assumed (the source does not state it)'}"
    kv_facts = _facts(
        [
            ("KV dtype", _h(dtype)),
            ("layers counted", _h(row["layers_counted"])),
            ("KV per token", _h(format_bytes(row["bytes_per_token"]) or "unknown")),
            ("KV at context", _h(format_bytes(row["kv_bytes_at_context"]) or "not computed")),
            ("fixed state per sequence", _h(format_bytes(row["fixed_state_bytes"]) or "unknown")),
        ]
    )
    explanation = explain_record(root, root / row["path"])
    body = f"""<nav class="crumbs"><a href="../index.html">all records</a></nav>
<h1>{_h(row["title"] or row["id"])}</h1>
<p class="muted">{_h(row["id"])}</p>
<h2>Source</h2>
{source_facts}
<h2>Measurements</h2>
{measurement_facts}
<h2>KV arithmetic (recomputed from the model file)</h2>
{kv_facts}
<h2>The validator's recomputation</h2>
<p class="muted">The output of <code>kvrecords explain</code>. Lines marked
<span class="assumed-key">like this</span> rest on an assumption, not a stated figure.</p>
<pre class="explain">{_explain_html(explanation)}</pre>"""
    return _page(row["title"] or row["id"], body, 1)


def _leaf_label(leaf: LeafGroup) -> str:
    window = f", window {leaf.window:,}" if leaf.window is not None else ""
    return f"{leaf.layers} {leaf.kind}{window}"


def _dims(leaf: LeafGroup) -> str:
    skip = {"layers", "window"} if leaf.kind != "sliding_window" else {"layers"}
    parts = []
    for name, value in zip(leaf._fields, leaf, strict=True):
        if name in skip:
            continue
        if name in ("v_head_dim", "window") and value is None:
            continue
        parts.append(f"{name} {'?' if value is None else value}")
    return ", ".join(parts) or "none"


def model_page(
    model_id: str, model: Model, data: dict[str, Any], table: Sequence[dict[str, Any]]
) -> str:
    max_context = data.get("max_context_tokens")
    known_max = isinstance(max_context, int) and max_context > 1024
    chart_max = max_context if isinstance(max_context, int) and known_max else DEFAULT_MAX_CONTEXT
    group_rows = []
    for index, group in enumerate(model.groups):
        leaves = group.mixers if isinstance(group, Parallel) else (group,)
        for leaf in leaves:
            cost = group_cost(leaf, BF16, BF16, 1)
            kind = f"parallel: {leaf.kind}" if isinstance(group, Parallel) else leaf.kind
            per_token = (
                "unknown" if cost.bytes_per_token is None else format_bytes(cost.bytes_per_token)
            )
            exact = "" if cost.bytes_per_token is None else f" ({_number(cost.bytes_per_token)} B)"
            state = "unknown" if cost.state_bytes is None else format_bytes(cost.state_bytes)
            group_rows.append(
                f"<tr><td>{index + 1}</td><td>{_h(kind)}</td><td class=num>{leaf.layers}</td>"
                f"<td>{_h(_dims(leaf))}</td><td class=num>{_h(per_token + exact)}</td>"
                f"<td class=num>{_h(state)}</td><td>{_h(cost.token_formula)}</td></tr>"
            )
    total = kv_report(model, BF16, 1).bytes_per_token
    total_text = "unknown" if total is None else f"{format_bytes(total)} ({_number(total)} B)"
    records = [r for r in table if r["model"] == model_id]
    record_links = "".join(
        f'<li><a href="../records/{_h(quote(slug(r["id"])))}.html">{_h(slug(r["id"]))}</a>'
        f" — {_h(r['title'] or '')}</li>"
        for r in records
    )
    unknown = ", ".join(model.unknown)
    context_note = (
        f"{max_context:,} tokens"
        if known_max
        else "not stated in the model file; the chart runs to 128K"
    )
    facts = _facts(
        [
            ("id", _h(model_id)),
            ("Hugging Face repo", _h(data.get("hf_repo") or "")),
            ("architecture", _h(data.get("architecture") or "")),
            ("layers", _h(model.num_layers)),
            ("weights dtype", _h(model.dtype or "not stated")),
            ("max context", _h(context_note)),
            ("attention family", _h(FAMILIES[family(model)][0])),
            ("KV per token, bf16", _h(total_text)),
            ("unknown in the model file", _h(unknown)),
        ]
    )
    body = f"""<nav class="crumbs"><a href="../index.html">all records</a></nav>
<h1>{_h(model.name)}</h1>
{facts}
<h2>Layer groups (bf16)</h2>
<div class="table-wrap"><table>
<thead><tr><th>group</th><th>kind</th><th class=num>layers</th><th>dimensions</th>
<th class=num>KV per token<span class="unit">bytes, all layers of the group</span></th>
<th class=num>fixed state<span class="unit">bytes per sequence</span></th><th>formula</th></tr></thead>
<tbody>{"".join(group_rows)}</tbody></table></div>
{model_chart(model, chart_max)}
<h2>Records of this model</h2>
{f"<ul>{record_links}</ul>" if records else "<p>none</p>"}"""
    return _page(model.name, body, 1)


# ---------------------------------------------------------------- the build


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written.append(path)


def build_site(root: Path, out: Path) -> list[Path]:
    """Write the site for the dataset at ``root`` into ``out``; returns the files written.

    The dataset should validate first (``kvrecords validate``): the rows come from
    ``export.rows``, which assumes a valid dataset.
    """
    root = root.resolve()
    table = rows(root)
    models: list[tuple[str, Model]] = []
    model_data: dict[str, dict[str, Any]] = {}
    for model_file in discover(root, "model"):
        model_id = model_file.expected_id
        document = read_document(model_file.path, model_file.display)
        model_data[model_id] = document.data if isinstance(document, Document) else {}
        models.append((model_id, load_model_file(model_file.path)))
    written: list[Path] = []
    for name in ASSETS:
        asset = (
            resources.files("kvrecords.tools")
            .joinpath("site_assets", name)
            .read_text(encoding="utf-8")
        )
        _write(out / "assets" / name, asset, written)
    _write(out / "index.html", index_page(table, models), written)
    for row in table:
        _write(out / "records" / f"{slug(row['id'])}.html", record_page(root, row), written)
    for model_id, model in models:
        page = model_page(model_id, model, model_data[model_id], table)
        _write(out / "models" / f"{model_slug(model_id)}.html", page, written)
    return written
