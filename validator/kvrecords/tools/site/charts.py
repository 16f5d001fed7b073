"""Charts drawn by hand as inline SVG: axes on log and linear scales, one function per chart.

About 700 lines on purpose: the charts share their axes, scales and escaping helpers.

Every piece of SVG is built with ``Markup.format``, which escapes each value it inserts, so a
label from the dataset can never become markup. A chart function takes plain figures (labels,
links relative to the page that shows it, numbers) and returns a ``Chart``: the SVG, and its
heading and caption as plain text for the page template to escape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import NamedTuple

from markupsafe import Markup

from kvrecords.kv.arithmetic import (
    ElementType,
    default_state_dtype,
    group_cost,
    kv_report,
    parse_element_type,
)
from kvrecords.kv.geometry import LeafGroup, Model
from kvrecords.tools.site.formatting import Position, format_bytes, format_tokens, number

BF16 = parse_element_type("bf16")
FP8 = parse_element_type("fp8")
WIDTH = 900
TOTAL = "total (KV + state)"
TOTAL_COLOUR = "#1b1f24"
FP8_COLOUR = "#d62728"
NEED_COLOUR = "#6f42c1"  # the weights with the cache: what one sequence needs in memory
MEMORY_COLOUR = "#57606a"  # what a set of accelerators holds
# Attention families for the overview chart, with colours readable in greyscale print too.
FAMILIES = {
    "full": ("full attention", "#1f77b4"),
    "sliding": ("sliding-window mix", "#ff7f0e"),
    "mla": ("MLA", "#2ca02c"),
    "hybrid": ("hybrid linear / Mamba", "#9467bd"),
}
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


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


class Dot(NamedTuple):
    """One run's figure on a chart against context."""

    x: Position | None  # the context; None: not stated (drawn in a band of its own)
    y: Position
    series: str  # the run's techniques, a legend entry
    hollow: bool  # a baseline run
    href: str
    tip: str
    line: str  # runs sharing a line key are joined, left to right ('' for none)


class ChangeMark(NamedTuple):
    """One comparison on the change chart: how many times better the treatment is."""

    gain: Position
    family: str  # a key of CHANGE_FAMILIES
    tip: str


class ChangeRow(NamedTuple):
    label: str
    href: str
    marks: tuple[ChangeMark, ...]
    note: str  # written right of the row: the change its table shows


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

    def nice_ticks(self) -> list[float]:
        """1, 2 and 5 times the powers of ten inside the axis; powers alone when that is more
        than ten ticks."""
        low, high = min(self.low, self.high), max(self.low, self.high)
        first = math.floor(math.log10(low) - 1e-9)
        last = math.ceil(math.log10(high) + 1e-9)
        steps = (1, 2, 5) if last - first <= 4 else (1,)
        ticks = [m * 10.0**p for p in range(first, last + 1) for m in steps]
        return [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]


def log_bounds(values: Iterable[float], base: int) -> tuple[float, float]:
    """Powers of ``base`` enclosing ``values`` (all positive)."""
    numbers = list(values)
    # A value exactly on a power gets one more power of room, so no bar has zero length.
    low = base ** math.floor(math.log(min(numbers), base) - 1e-9)
    high = base ** math.ceil(math.log(max(numbers), base) + 1e-9)
    return float(low), float(high)


def nice_log_bounds(values: Iterable[float]) -> tuple[float, float]:
    """The 1, 2 or 5 times a power of ten next below and next above ``values`` (all positive),
    so that a chart of figures near one another is not squeezed into one decade."""
    numbers = list(values)
    steps = [m * 10.0**p for p in range(-12, 13) for m in (1, 2, 5)]
    low = max(s for s in steps if s < min(numbers) * (1 - 1e-9))
    high = min(s for s in steps if s > max(numbers) * (1 + 1e-9))
    return low, high


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


def line(css: str, x1: float, y1: float, x2: float, y2: float) -> Markup:
    """A line; a computed (float) coordinate to one decimal, a whole one as it is."""
    ends = (f"{v:.1f}" if isinstance(v, float) else str(v) for v in (x1, y1, x2, y2))
    return Markup('<line class="{}" x1="{}" y1="{}" x2="{}" y2="{}"/>').format(css, *ends)


def x_axis(
    box: Box, ticks: Sequence[float], at: Callable[[float], float], label: Callable[[float], str]
) -> list[Markup]:
    """The bottom axis line, a grid line and label per tick."""
    parts = [line("axis", box.left, box.bottom, box.right, box.bottom)]
    for tick in ticks:
        x = float(at(tick))
        parts.append(line("grid", x, box.top, x, box.bottom))
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
    parts = [line("axis", box.left, box.top, box.left, box.bottom)]
    for tick in ticks:
        y = float(at(tick))
        parts.append(line("grid", box.left, y, box.right, y))
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


# ---------------------------------------------------------------- charts from runs

# Technique series: a colour and a shape each, so that neighbours differ in greyscale too.
PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
)
SHAPES = ("circle", "square", "triangle", "diamond")
BASELINE = "baseline"
BASELINE_STYLE = ("#57606a", "circle")
CHANGE_FAMILIES = {
    "ttft": ("time to first token", "#d62728", "circle"),
    "latency": ("other latency and time", "#ff7f0e", "square"),
    "rate": ("throughput and decode rate", "#1f77b4", "diamond"),
    "capacity": ("capacity, memory, hit rate, quality", "#2ca02c", "triangle"),
}
BAND = 84  # pixels left of the context axis for the runs that state no context


def series_styles(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """A colour and a shape for each series; 'baseline' in grey, the rest in name order."""
    unique = set(names)
    styles = {BASELINE: BASELINE_STYLE} if BASELINE in unique else {}
    for index, name in enumerate(sorted(unique - {BASELINE})):
        styles[name] = (PALETTE[index % len(PALETTE)], SHAPES[index % len(SHAPES)])
    return styles


def marker(shape: str, x: float, y: float, colour: str, hollow: bool, tip: str) -> Markup:
    """A marker of ``shape`` centred on (x, y), filled or hollow, with its tooltip."""
    paint = Markup('fill="{}" stroke="{}" stroke-width="2"').format(
        "#ffffff" if hollow else colour, colour
    )
    tooltip = Markup("<title>{}</title>").format(tip)
    if shape == "square":
        return Markup('<rect x="{:.1f}" y="{:.1f}" width="10" height="10" {}>{}</rect>').format(
            x - 5, y - 5, paint, tooltip
        )
    if shape in ("triangle", "diamond"):
        corners = (
            ((x, y - 6.5), (x + 6, y + 4.5), (x - 6, y + 4.5))
            if shape == "triangle"
            else ((x, y - 7), (x + 6, y), (x, y + 7), (x - 6, y))
        )
        points = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in corners)
        return Markup('<polygon points="{}" {}>{}</polygon>').format(points, paint, tooltip)
    return Markup('<circle cx="{:.1f}" cy="{:.1f}" r="5.5" {}>{}</circle>').format(
        x, y, paint, tooltip
    )


def marker_legend(
    entries: Sequence[tuple[str, str, str]], x: float, y: float, right: float
) -> tuple[list[Markup], float]:
    """A legend of markers (label, colour, shape) flowing in rows; returns it and the y below."""
    parts = []
    left, top = x, y
    for label, colour, shape in entries:
        width = 18 + 7 * len(label) + 18
        if left > x and left + width > right:
            left, top = x, top + 18
        parts.append(marker(shape, left + 6, top, colour, False, label))
        parts.append(text(left + 16, top + 4, label, "legend", "start"))
        left += width
    return parts, top + 18


def segment(x1: float, y1: float, x2: float, y2: float, colour: str, arrow: bool) -> Markup:
    """A line from (x1, y1) to (x2, y2); with ``arrow``, a chevron at its far end."""
    line = Markup(
        '<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="1.5"/>'
    ).format(x1, y1, x2, y2, colour)
    if not arrow:
        return line
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    wings = [
        (x2 - 5 * ux + 4 * uy, y2 - 5 * uy - 4 * ux),
        (x2 - 5 * ux - 4 * uy, y2 - 5 * uy + 4 * ux),
    ]
    points = " ".join(f"{px:.1f},{py:.1f}" for px, py in (wings[0], (x2, y2), wings[1]))
    return line + Markup(
        '<polyline points="{}" fill="none" stroke="{}" stroke-width="1.5"/>'
    ).format(points, colour)


def extent(
    x: float,
    y: float,
    across: Position | None,
    up: Position,
    at_x: Callable[[float], float],
    at_y: Callable[[float], float],
    colour: str,
) -> list[Markup]:
    """What a marker alone cannot say: a range's span (a line from its low end to its high end)
    and a bound's direction (an arrow the way the figure lies: up to points down or left)."""
    parts = []
    if across is not None and across.low != across.high:
        parts.append(segment(at_x(across.low), y, at_x(across.high), y, colour, False))
    if across is not None and across.bound:
        parts.append(segment(x, y, x + (-16 if across.bound == "max" else 16), y, colour, True))
    if up.low != up.high:
        parts.append(segment(x, at_y(up.low), x, at_y(up.high), colour, False))
    if up.bound:
        # screen y grows downwards: 'up to' points down the page
        parts.append(segment(x, y, x, y + (16 if up.bound == "max" else -16), colour, True))
    return parts


def _reach(position: Position) -> tuple[float, float]:
    return position.low, position.high


def context_chart(
    ident: str,
    title: str,
    dots: Sequence[Dot],
    styles: dict[str, tuple[str, str]],
    y_title: str,
    y_unit: str,
    caption: str,
) -> Chart:
    """Scatter on log scales: a metric of each run against its context, one colour and shape
    per technique series, a hollow marker for a baseline run, a sweep's runs joined; runs that
    state no context stand in a band left of the axis."""
    left, right = 84, 860
    series = sorted({d.series for d in dots}, key=lambda s: (s != BASELINE, s))
    entries = [(s, *styles[s]) for s in series]
    parts, top = marker_legend(entries, left, 14, right)
    if dots:
        parts.append(text(right, top + 2, "hollow: a baseline run", "legend", "end"))
        top += 12
    box = Box(left, right, top + 8, top + 8 + 320)
    if not dots:
        parts.append(text(450, box.top + 120, "no run states this figure", "tick"))
        return Chart(ident, title, svg(box.bottom + 60, title, parts), caption)
    unplaced = any(d.x is None for d in dots)
    axis_left = left + BAND if unplaced else left
    placed = [d.x for d in dots if d.x is not None]
    x_ends = [end for x in placed for end in _reach(x)] or [1024.0]
    x_scale = LogAxis(*log_bounds(x_ends, 2), axis_left + 10, right)
    y_ends = [end for d in dots for end in _reach(d.y)]
    y_scale = LogAxis(*log_bounds(y_ends, 10), box.bottom, box.top)
    parts += x_axis(box, x_scale.ticks(2), x_scale.at, format_tokens)
    parts.append(
        text((axis_left + right) / 2, box.bottom + 38, "context (tokens, log scale)", "axis-label")
    )
    parts += y_axis(
        box, y_scale.nice_ticks(), y_scale.at, lambda v: f"{number(v)} {y_unit}", y_title
    )
    band_x = left + BAND / 2
    if unplaced:
        parts.append(
            Markup('<line class="band" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>').format(
                axis_left, box.top, box.bottom
            )
        )
        parts.append(text(band_x, box.bottom + 16, "not stated", "tick"))

    # in the band, each record a little apart from the next, so that their runs do not overlap
    pages = list(dict.fromkeys(d.href.split("#")[0] for d in dots if d.x is None))
    offsets = {page: (index % 5 - 2) * 9.0 for index, page in enumerate(pages)}

    def spot(dot: Dot) -> tuple[float, float]:
        if dot.x is None:
            return band_x + offsets[dot.href.split("#")[0]], y_scale.at(dot.y.at)
        return x_scale.at(dot.x.at), y_scale.at(dot.y.at)

    lines: dict[str, list[Dot]] = {}
    for dot in dots:
        if dot.line and dot.x is not None:
            lines.setdefault(dot.line, []).append(dot)
    for joined in lines.values():
        xs = [d.x.at for d in joined if d.x is not None]
        if len(joined) < 2 or len(set(xs)) != len(xs):
            continue  # one run, or two at one context: nothing to join
        ordered = sorted(joined, key=lambda d: d.x.at if d.x is not None else 0.0)
        points = " ".join("{:.1f},{:.1f}".format(*spot(d)) for d in ordered)
        parts.append(
            Markup(
                '<polyline class="sweep" points="{}" fill="none" stroke="{}" stroke-width="1.5"/>'
            ).format(points, styles[joined[0].series][0])
        )
    for dot in dots:
        colour, shape = styles[dot.series]
        x, y = spot(dot)
        parts += extent(x, y, dot.x, dot.y, x_scale.at, y_scale.at, colour)
        parts.append(link(dot.href, marker(shape, x, y, colour, dot.hollow, dot.tip)))
    return Chart(ident, title, svg(box.bottom + 60, title, parts), caption)


def change_chart(ident: str, title: str, rows: Sequence[ChangeRow], caption: str) -> Chart:
    """One row per record (or comparison), each comparison a marker at how many times better
    the treatment is than its baseline, on a log scale around 1x (no change)."""
    left, right, step = 330, 710, 24
    entries = [(label, colour, shape) for label, colour, shape in CHANGE_FAMILIES.values()]
    parts, top = marker_legend(entries, left - 200, 14, right + 120)
    box = Box(left, right, top + 6, top + 6 + step * max(len(rows), 1))
    gains = [end for row in rows for mark in row.marks for end in _reach(mark.gain)]
    if not gains:
        parts.append(text(450, box.top + 20, "no baseline-to-treatment comparison", "tick"))
        return Chart(ident, title, svg(box.bottom + 60, title, parts), caption)
    axis = LogAxis(*nice_log_bounds([*gains, 1.0]), left, right)
    parts += x_axis(box, axis.nice_ticks(), axis.at, lambda v: f"{number(v)}x")
    one = axis.at(1.0)
    parts.append(
        Markup('<line class="unchanged" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}"/>').format(
            one, box.top, box.bottom
        )
    )
    parts.append(text(one - 8, box.bottom + 38, "← worse", "axis-label", "end"))
    parts.append(text(one + 8, box.bottom + 38, "better →", "axis-label", "start"))
    parts.append(text(one, box.bottom + 54, "times better than the baseline (log scale)", "tick"))
    for index, row in enumerate(rows):
        y = box.top + index * step + step / 2
        if index % 2:
            parts.append(
                Markup('<rect class="stripe" x="0" y="{:.1f}" width="{}" height="{}"/>').format(
                    y - step / 2, WIDTH, step
                )
            )
        parts.append(link(row.href, text(left - 8, y + 4, row.label, "tick", "end")))
        for mark in row.marks:
            _, colour, shape = CHANGE_FAMILIES[mark.family]
            x = axis.at(mark.gain.at)
            parts += extent(x, y, mark.gain, Position(1.0, 1.0, 1.0), axis.at, axis.at, colour)
            parts.append(marker(shape, x, y, colour, False, mark.tip))
        parts.append(text(right + 22, y + 4, row.note, "value", "start"))
    return Chart(ident, title, svg(box.bottom + 70, title, parts), caption)


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


class Memory(NamedTuple):
    """A memory line on a model's chart, drawn across every context."""

    label: str  # the legend's: 'usable memory of 8 x NVIDIA H100 SXM5 80GB'
    bytes: float
    short: str = ""  # written on the line: '8 x h100-sxm'


def _totals(
    model: Model, dtype: ElementType, contexts: Sequence[int], state_known: bool = True
) -> list[float | None]:
    """KV at each context in ``dtype`` plus the fixed state in the model's own state dtype;
    the KV alone when ``state_known`` is false."""
    totals: list[float | None] = []
    for context in contexts:
        report = kv_report(model, dtype, context)
        kv, state = report.kv_bytes_at_context, report.fixed_state_bytes
        if not state_known:
            state = Fraction(0)
        totals.append(None if kv is None or state is None else float(kv + state))
    return totals


UNCOUNTED_STATE = " (the state is unknown: not counted)"


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
        series.append((TOTAL, _totals(model, BF16, contexts), False))
    elif series and not unknown:  # one growing group and no state: its line is the total
        label, values, dashed = series[0]
        series[0] = (f"{label}, the total", values, dashed)
    return series, unknown


def fp8_label(model: Model, state_known: bool) -> str:
    if not state_known:
        return "KV in fp8" + UNCOUNTED_STATE
    has_state = any(leaf.state_elements() for leaf in model.leaf_groups())
    state = f", state in {default_state_dtype(model).name}" if has_state else ""
    return f"total, fp8 KV{state}"


def model_chart(
    model: Model,
    max_context: int,
    weights: Memory | None = None,
    memories: Sequence[Memory] = (),
) -> Chart:
    """KV bytes against context for one model: each leaf group (bf16), its state, the total
    in bf16 and in fp8; with ``weights``, the weights plus the bf16 total (what one sequence
    needs); and each of ``memories`` across every context (what accelerators hold)."""
    title = f"KV bytes against context, {model.id}"
    windows = (leaf.window for leaf in model.leaf_groups() if leaf.window is not None)
    contexts = sample_contexts(max_context, windows)
    series, unknown = _model_series(model, contexts)
    colours = [
        TOTAL_COLOUR if label == TOTAL else SERIES_COLOURS[i % len(SERIES_COLOURS)]
        for i, (label, _, _) in enumerate(series)
    ]
    state_known = kv_report(model, BF16, 1).fixed_state_bytes is not None
    bf16_totals = _totals(model, BF16, contexts, state_known)
    if any(bf16_totals):
        series.append(
            (fp8_label(model, state_known), _totals(model, FP8, contexts, state_known), False)
        )
        colours.append(FP8_COLOUR)
        if weights is not None:
            need = [None if v is None else v + weights.bytes for v in bf16_totals]
            label = weights.label + ("" if state_known else UNCOUNTED_STATE)
            series.append((label, need, False))
            colours.append(NEED_COLOUR)
        for memory in memories:
            series.append((memory.label, [memory.bytes] * len(contexts), True))
            colours.append(MEMORY_COLOUR)
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
    parts += y_axis(box, y_scale.ticks(4), y_scale.at, format_bytes, "bytes (log scale)")
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
    # each memory line named on the line, since all are one grey; a label that would sit on
    # the one below moves right of it
    label_x, label_y, label_end = 0.0, math.inf, float(left)
    for memory in memories if any(bf16_totals) else ():
        y = y_scale.at(memory.bytes) - 4
        label = f"{memory.short or memory.label}: {format_bytes(memory.bytes)}"
        label_x = label_end + 16 if abs(label_y - y) < 12 else left + 6
        label_y, label_end = y, label_x + 6.5 * len(label)
        parts.append(text(label_x, y, label, "value", "start"))
    caption = (
        f"KV bytes of one sequence from 1K to {format_tokens(contexts[-1])} tokens: each layer "
        "group in bf16, the total in bf16 and in fp8 (half the bytes of each cached value; a "
        "state stays in the model's dtype). Full attention and MLA grow with the context; a "
        "sliding window stops growing at its window; linear-attention and Mamba state is "
        "constant."
    )
    if weights is not None and any(bf16_totals):
        caption += (
            f" '{weights.label}' is the weights ({format_bytes(weights.bytes)}) plus the bf16 "
            "total: what one sequence needs in memory before activations and the engine's own."
        )
    if memories and any(bf16_totals):
        caption += (
            " The dashed grey lines are the usable memory of the accelerator sets this model's "
            "records ran on: where the need crosses one, one sequence no longer fits there; "
            "each further user adds the KV total again (the planner pages answer for users)."
        )
    if unknown:
        caption += " Not drawn, a dimension is unknown: " + ", ".join(unknown) + "."
    return Chart("chart-model", title, svg(box.bottom + 60, title, parts), caption)
