"""Charts drawn by hand as inline SVG: axes on log and linear scales, one function per chart.

Every piece of SVG is built with ``Markup.format``, which escapes each value it inserts, so a
label from the dataset can never become markup. A chart function takes plain figures (labels,
links relative to the page that shows it, numbers) and returns a ``Chart``: the SVG, and its
heading and caption as plain text for the page template to escape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from markupsafe import Markup

from kvrecords.kv.arithmetic import group_cost, kv_report, parse_element_type
from kvrecords.kv.geometry import LeafGroup, Model
from kvrecords.tools.site.formatting import format_bytes, format_tokens, number

BF16 = parse_element_type("bf16")
WIDTH = 900
TOTAL = "total (KV + state)"
TOTAL_COLOUR = "#1b1f24"
# Attention families for the overview chart, with colours readable in greyscale print too.
FAMILIES = {
    "full": ("full attention", "#1f77b4"),
    "sliding": ("sliding-window mix", "#ff7f0e"),
    "mla": ("MLA", "#2ca02c"),
    "hybrid": ("hybrid linear / Mamba", "#9467bd"),
}
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
TTFT_SERIES = (("cold (no cache hit)", "#d62728"), ("warm (prefix cached)", "#2ca02c"))


class Chart(NamedTuple):
    ident: str  # the id of the <figure>
    title: str
    svg: Markup
    caption: str


class ModelBar(NamedTuple):
    label: str
    href: str
    bytes_per_token: float | None  # None: a dimension is unknown, or no per-token cache
    family: str  # a key of FAMILIES


class TtftPair(NamedTuple):
    label: str
    href: str
    cold_ms: float
    warm_ms: float
    cold_text: str  # as the record states it: ~900, or a range
    warm_text: str


class DecodePoint(NamedTuple):
    label: str
    href: str
    context_tokens: float
    tokens_per_s: float


# ---------------------------------------------------------------- scales and axes


class LogAxis(NamedTuple):
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
        return [float(base**power) for power in powers[::step]]


class LinearAxis(NamedTuple):
    low: float
    high: float
    start: float
    end: float

    def at(self, value: float) -> float:
        share = (value - self.low) / (self.high - self.low) if self.high > self.low else 0.5
        return self.start + share * (self.end - self.start)

    def ticks(self) -> list[float]:
        """About five round steps (1, 2, 2.5 or 5 times a power of ten) from low to high."""
        raw = (self.high - self.low) / 5 or 1
        magnitude = 10 ** math.floor(math.log10(raw))
        step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
        first = math.ceil(self.low / step) * step
        return [first + i * step for i in range(int((self.high - first) / step + 1e-9) + 1)]


def log_bounds(values: Iterable[float], base: int) -> tuple[float, float]:
    """Powers of ``base`` enclosing ``values`` (all positive)."""
    numbers = list(values)
    # A value exactly on a power gets one more power of room, so no bar has zero length.
    low = base ** math.floor(math.log(min(numbers), base) - 1e-9)
    high = base ** math.ceil(math.log(max(numbers), base) + 1e-9)
    return float(low), float(high)


class Box(NamedTuple):
    """The plotting area in pixels."""

    left: float
    right: float
    top: float
    bottom: float


def text(x: float, y: float, content: str, css: str, anchor: str = "middle") -> Markup:
    return Markup('<text x="{:.1f}" y="{:.1f}" class="{}" text-anchor="{}">{}</text>').format(
        x, y, css, anchor, content
    )


def x_axis(
    box: Box, ticks: Sequence[float], at: Callable[[float], float], label: Callable[[float], str]
) -> list[Markup]:
    """The bottom axis line, a grid line and label per tick."""
    parts = [
        Markup('<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>').format(
            box.left, box.bottom, box.right, box.bottom
        )
    ]
    for tick in ticks:
        x = at(tick)
        parts.append(
            Markup('<line class="grid" x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}"/>').format(
                x, box.top, x, box.bottom
            )
        )
        parts.append(text(x, box.bottom + 16, label(tick), "tick"))
    return parts


def x_title(box: Box, title: str) -> Markup:
    return text((box.left + box.right) / 2, box.bottom + 38, title, "axis-label")


def y_axis(
    box: Box,
    ticks: Sequence[float],
    at: Callable[[float], float],
    label: Callable[[float], str],
    title: str,
) -> list[Markup]:
    """The left axis line, a grid line and label per tick, and the title turned upright."""
    parts = [
        Markup('<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>').format(
            box.left, box.top, box.left, box.bottom
        )
    ]
    for tick in ticks:
        y = at(tick)
        parts.append(
            Markup('<line class="grid" x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}"/>').format(
                box.left, y, box.right, y
            )
        )
        parts.append(text(box.left - 6, y + 4, label(tick), "tick", "end"))
    middle = (box.top + box.bottom) / 2
    parts.append(
        Markup(
            '<text x="16" y="{0:.1f}" class="axis-label" text-anchor="middle" '
            'transform="rotate(-90 16 {0:.1f})">{1}</text>'
        ).format(middle, title)
    )
    return parts


def legend(
    entries: Sequence[tuple[str, str]],
    x: float,
    y: float,
    right: float,
    dashed: Sequence[bool] = (),
) -> tuple[list[Markup], float]:
    """A legend flowing in rows from (x, y) up to ``right``; returns it and the y below it."""
    parts = []
    left, top = x, y
    for index, (label, colour) in enumerate(entries):
        width = 24 + 7 * len(label) + 18  # 12px text is about 7px a character
        if left > x and left + width > right:
            left, top = x, top + 18
        dash = "5 3" if index < len(dashed) and dashed[index] else "none"
        parts.append(
            Markup(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="4" '
                'stroke-dasharray="{}"/>'
            ).format(left, top, left + 18, top, colour, dash)
        )
        parts.append(text(left + 24, top + 4, label, "legend", "start"))
        left += width
    return parts, top + 18


def link(href: str, inner: Markup) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, inner)


def bar(x: float, y: float, width: float, height: float, colour: str, tip: str) -> Markup:
    return Markup(
        '<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}</title></rect>'
    ).format(x, y, width, height, colour, tip)


def svg(height: float, title: str, parts: Iterable[Markup]) -> Markup:
    head = Markup(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {0} {1}" width="{0}" height="{1}" '
        'role="img" aria-label="{2}"><title>{2}</title>'
    ).format(WIDTH, int(height), title)
    return head + Markup("\n").join(parts) + Markup("</svg>")


# ---------------------------------------------------------------- the charts


def attention_family(model: Model) -> str:
    """The attention family of a model, for colouring: hybrid > MLA > sliding mix > full."""
    kinds = {leaf.kind for leaf in model.leaf_groups()}
    if kinds & {"linear_attention", "mamba1", "mamba2"}:
        return "hybrid"
    if "mla" in kinds:
        return "mla"
    if "sliding_window" in kinds:
        return "sliding"
    return "full"


def bytes_per_token_chart(bars: Sequence[ModelBar]) -> Chart:
    """Horizontal bars: bf16 bytes per token of every model whose geometry gives it."""
    title = "KV bytes per token, bf16, every model"
    known = sorted((b for b in bars if b.bytes_per_token), key=lambda b: b.bytes_per_token or 0.0)
    missing = [b.label for b in bars if not b.bytes_per_token]
    left, right, step = 230, 840, 16
    parts, top = legend(list(FAMILIES.values()), left, 14, right)
    box = Box(left, right, top + 4, top + 4 + step * len(known) + 6)
    if known:
        axis = LogAxis(*log_bounds((b.bytes_per_token or 1.0 for b in known), 4), left, right)
        parts += x_axis(box, axis.ticks(4), axis.at, format_bytes)
        parts.append(x_title(box, "KV bytes per token (bf16, log scale)"))
        for index, item in enumerate(known):
            value = item.bytes_per_token or 1.0
            y = box.top + index * step + 2
            tip = f"{item.label}: {format_bytes(value)} per token"
            shape = bar(left, y, axis.at(value) - left, step - 4, FAMILIES[item.family][1], tip)
            label = text(left - 6, y + step - 6, item.label, "tick", "end")
            parts.append(link(item.href, shape + label))
            parts.append(
                text(axis.at(value) + 4, y + step - 6, format_bytes(value), "value", "start")
            )
    caption = (
        "Bytes each new token adds to the cache while every layer still grows (sliding windows "
        "not yet full), bf16, layers as the model has them; shared and state layers add nothing."
    )
    if missing:
        caption += (
            " Not drawn (a dimension is unknown, or no per-token cache): "
            + ", ".join(missing)
            + "."
        )
    return Chart("chart-bytes-per-token", title, svg(box.bottom + 60, title, parts), caption)


def ttft_chart(pairs: Sequence[TtftPair]) -> Chart:
    """Paired horizontal bars: cold and warm TTFT of the records that state both."""
    title = "Cold and warm time to first token"
    left, right, step = 330, 820, 44
    parts, top = legend(TTFT_SERIES, left, 14, right)
    box = Box(left, right, top, top + step * max(len(pairs), 1))
    if pairs:
        figures = (v for p in pairs for v in (p.cold_ms, p.warm_ms))
        axis = LogAxis(*log_bounds(figures, 10), left, right)
        parts += x_axis(box, axis.ticks(10), axis.at, lambda v: f"{number(v)} ms")
        parts.append(x_title(box, "time to first token (ms, log scale)"))
        for index, pair in enumerate(pairs):
            y = box.top + index * step + 4
            parts.append(link(pair.href, text(left - 6, y + 20, pair.label, "tick", "end")))
            for offset, value, shown, (series, colour) in (
                (0, pair.cold_ms, pair.cold_text, TTFT_SERIES[0]),
                (18, pair.warm_ms, pair.warm_text, TTFT_SERIES[1]),
            ):
                width = axis.at(value) - left
                parts.append(bar(left, y + offset, width, 16, colour, f"{series}: {shown} ms"))
                parts.append(
                    text(left + width + 4, y + offset + 12, f"{shown} ms", "value", "start")
                )
    else:
        parts.append(
            text(450, box.top + 20, "no record states both a cold and a warm TTFT", "tick")
        )
    caption = (
        f"{len(pairs)} records state both a cold and a warm TTFT (as measured; ~ approximate)."
    )
    return Chart("chart-ttft", title, svg(box.bottom + 60, title, parts), caption)


def decode_chart(points: Sequence[DecodePoint]) -> Chart:
    """Scatter: decode tokens/s against context, one colour per record."""
    title = "Decode tokens per second against context"
    left, right = 80, 840
    colours = [SERIES_COLOURS[i % len(SERIES_COLOURS)] for i in range(len(points))]
    parts, top = legend(
        [(p.label, c) for p, c in zip(points, colours, strict=True)], left, 14, right
    )
    box = Box(left, right, top + 6, top + 6 + 280)
    if points:
        x_scale = LogAxis(*log_bounds((p.context_tokens for p in points), 2), left, right)
        highest = max(p.tokens_per_s for p in points)
        y_scale = LinearAxis(0, highest * 1.15, box.bottom, box.top)
        parts += x_axis(box, x_scale.ticks(2), x_scale.at, format_tokens)
        parts.append(x_title(box, "context (tokens, log scale)"))
        parts += y_axis(box, y_scale.ticks(), y_scale.at, number, "decode (tokens/s)")
        for point, colour in zip(points, colours, strict=True):
            tip = (
                f"{point.label}: {number(point.tokens_per_s)} tok/s at "
                f"{number(point.context_tokens)} tokens"
            )
            dot = Markup(
                '<circle cx="{:.1f}" cy="{:.1f}" r="6" fill="{}"><title>{}</title></circle>'
            ).format(x_scale.at(point.context_tokens), y_scale.at(point.tokens_per_s), colour, tip)
            parts.append(link(point.href, dot))
    else:
        parts.append(text(450, 200, "no record gives both a context and a decode rate", "tick"))
    caption = (
        f"{len(points)} records give both a context and a decode rate (measured_tps_at_ctx, "
        "else results.decode_tokens_per_s). Different models and hardware: read each point alone."
    )
    return Chart("chart-decode", title, svg(box.bottom + 60, title, parts), caption)


def leaf_label(leaf: LeafGroup) -> str:
    window = f", window {leaf.window:,}" if leaf.window is not None else ""
    return f"{leaf.layers} {leaf.kind}{window}"


def sample_contexts(max_context: int, windows: Iterable[int]) -> list[int]:
    """Contexts from 1K to ``max_context``, log-spaced, plus each window (the kink)."""
    low = 1024
    points = {low, max_context}
    steps = 48
    for i in range(steps + 1):
        points.add(round(low * (max_context / low) ** (i / steps)))
    points.update(w for w in windows if low <= w <= max_context)
    return sorted(points)


Series = tuple[str, list[float | None], bool]  # label, a value per context, dashed


def _model_series(model: Model, contexts: Sequence[int]) -> tuple[list[Series], list[str]]:
    """Each leaf group's growth and constant state, the total; and the groups not drawn."""
    series: list[Series] = []
    unknown: list[str] = []  # groups with a dimension missing
    for index, leaf in enumerate(model.leaf_groups()):
        name = f"{leaf_label(leaf)} (group {index + 1})"
        costs = [group_cost(leaf, BF16, BF16, c) for c in contexts]
        if costs[0].bytes_per_token:
            growth = [None if c.kv_bytes is None else float(c.kv_bytes) for c in costs]
            series.append((name, growth, False))
        state = costs[0].state_bytes
        if state is None or costs[0].bytes_per_token is None:
            unknown.append(name)
        if state:
            label = f"{leaf.kind} state, group {index + 1} (constant)"
            series.append((label, [float(state)] * len(contexts), True))
    if len(series) > 1:
        totals: list[float | None] = []
        for context in contexts:
            report = kv_report(model, BF16, context)
            kv, state = report.kv_bytes_at_context, report.fixed_state_bytes
            totals.append(None if kv is None or state is None else float(kv + state))
        series.append((TOTAL, totals, False))
    return series, unknown


def model_chart(model: Model, max_context: int) -> Chart:
    """KV bytes (bf16) against context for one model: each leaf group, the state and the total."""
    title = f"KV bytes against context, {model.id}"
    windows = (leaf.window for leaf in model.leaf_groups() if leaf.window is not None)
    contexts = sample_contexts(max_context, windows)
    series, unknown = _model_series(model, contexts)
    colours = [
        TOTAL_COLOUR if label == TOTAL else SERIES_COLOURS[i % len(SERIES_COLOURS)]
        for i, (label, _, _) in enumerate(series)
    ]
    left, right = 90, 840
    entries = [(label, colour) for (label, _, _), colour in zip(series, colours, strict=True)]
    parts, top = legend(entries, left, 14, right, [dashed for _, _, dashed in series])
    box = Box(left, right, top + 6, top + 6 + 300)
    values = [v for _, vs, _ in series for v in vs if v]
    if not values:
        parts.append(text(450, 200, "cannot be drawn: a dimension of the model is unknown", "tick"))
        caption = "KV bytes (bf16) against context: nothing known to draw."
        return Chart("chart-model", title, svg(box.bottom + 60, title, parts), caption)
    x_scale = LogAxis(float(contexts[0]), float(contexts[-1]), left, right)
    y_scale = LogAxis(*log_bounds(values, 4), box.bottom, box.top)
    x_ticks = x_scale.ticks(2)
    if float(contexts[-1]) not in x_ticks:
        x_ticks.append(float(contexts[-1]))
    parts += x_axis(box, x_ticks, x_scale.at, format_tokens)
    parts.append(x_title(box, "context (tokens, log scale)"))
    parts += y_axis(box, y_scale.ticks(4), y_scale.at, format_bytes, "KV bytes (bf16, log scale)")
    for (label, line_values, dashed), colour in zip(series, colours, strict=True):
        points = " ".join(
            f"{x_scale.at(c):.1f},{y_scale.at(v):.1f}"
            for c, v in zip(contexts, line_values, strict=True)
            if v
        )
        parts.append(
            Markup(
                '<polyline fill="none" stroke="{}" stroke-width="{}" stroke-dasharray="{}" '
                'points="{}"><title>{}</title></polyline>'
            ).format(
                colour, 3.5 if label == TOTAL else 2.5, "6 4" if dashed else "none", points, label
            )
        )
    caption = (
        f"KV bytes of one sequence in bf16 from 1K to {format_tokens(contexts[-1])} tokens. "
        "Full attention and MLA grow with the context; a sliding window stops growing at its "
        "window; linear-attention and Mamba state is constant."
    )
    if unknown:
        caption += " Not drawn, a dimension is unknown: " + ", ".join(unknown) + "."
    return Chart("chart-model", title, svg(box.bottom + 60, title, parts), caption)
