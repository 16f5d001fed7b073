"""The pages, rendered from Jinja2 templates with autoescaping from the gathered data.

Every value reaches the HTML through a template, which escapes it; the only markup that does
not is the charts' SVG, which ``charts`` builds with escaping of its own. Links go up to the
site's root with ``root`` ('' on the index, '../' one folder down).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined

from kvrecords.kv.weights import ParameterBillions, parameter_billions, weight_bytes, weight_format
from kvrecords.runner.reporters import counted
from kvrecords.tools.site.charts import (
    FAMILIES,
    ChangeMark,
    ChangeRow,
    Chart,
    Dot,
    Memory,
    ModelBar,
    attention_family,
    bytes_per_token_chart,
    change_chart,
    context_chart,
    model_chart,
    series_styles,
)
from kvrecords.tools.site.data import HardwarePage, ModelEntry, RecordEntry, SiteData
from kvrecords.tools.site.documents import DocumentPage
from kvrecords.tools.site.figures import Change, RunPoint
from kvrecords.tools.site.formatting import (
    format_bytes,
    measured,
    number,
    page_name,
    record_href,
    sort_key,
)
from kvrecords.tools.site.planner import USERS, PlannerPage
from kvrecords.tools.site.runs import setting_text

UP = "../"
SIXTEEN_BIT_WEIGHTS = weight_format("bf16")
SERIES = (
    "A run's colour and shape are what it switches on in serving (prefix caching, offload, "
    "quantization...); the model's own design (MLA, sliding windows, linear or sparse "
    "attention) only when it switches on nothing else, and always in the tooltip. A hollow "
    "marker is a baseline run; a line joins one record's runs of one series across contexts. "
)
PLACED = (
    "A context or figure written ~N stands at N, a median context at the median; a range "
    "stands at its middle on the log scale, √(min × max), with a line across its span; a "
    "bound stands at the bound, an arrow pointing the way the figure lies. "
)


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("kvrecords.tools.site", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        measured=measured,
        bytes=format_bytes,
        number=number,
        sort_key=sort_key,
        page_name=page_name,
        setting=lambda value, key: setting_text(key, value),
    )
    return env


def dots(points: Sequence[RunPoint], metric: str, root: str) -> list[Dot]:
    """The runs' figures of ``metric`` as chart dots, each linking to its run."""
    return [
        Dot(
            point.x,
            point.y,
            point.series,
            point.role == "baseline",
            record_href(point.record, root, f"run-{point.run_id}"),
            point.tip(),
            f"{point.record}|{point.series}|{point.statistic}",
        )
        for point in points
        if point.metric == metric
    ]


def context_charts(points: Sequence[RunPoint], root: str) -> tuple[Chart, Chart]:
    """TTFT and decode rate against context, the same style for a series on both."""
    styles = series_styles(point.series for point in points)
    ttft, decode = dots(points, "ttft_ms", root), dots(points, "decode_tokens_per_s", root)
    records = len({p.record for p in points if p.metric == "ttft_ms"})
    placed = len({p.record for p in points if p.metric == "ttft_ms" and p.x is not None})
    ttft_caption = (
        f"{counted(len(ttft), 'run')} of {counted(records, 'record')} ({placed} at a stated "
        "context): each run's time to first token at its context (the run's own, else the "
        "record's), one point per run: its single, median or mean figure, else the percentile "
        "it states, as the tooltip says. "
        + SERIES
        + PLACED
        + "Runs that state no context stand in the band on the left. "
        "Different models and hardware: read each point with its record."
    )
    decode_records = len({p.record for p in points if p.metric == "decode_tokens_per_s"})
    decode_caption = (
        f"{counted(len(decode), 'run')} of {counted(decode_records, 'record')}: each run's "
        "decode rate of one sequence (decode_tokens_per_s; aggregate throughput is not drawn "
        "here) at its context, one point per run, coloured and placed as on the TTFT chart. Different "
        "models and hardware: read each point with its record."
    )
    return (
        context_chart(
            "chart-ttft",
            "Time to first token against context, by technique",
            ttft,
            styles,
            "time to first token (log scale)",
            "ms",
            ttft_caption,
        ),
        context_chart(
            "chart-decode",
            "Decode rate against context, by technique",
            decode,
            styles,
            "decode (tokens/s per sequence, log scale)",
            "",
            decode_caption,
        ),
    )


def _mark(change: Change) -> ChangeMark:
    return ChangeMark(change.gain, change.family, change.tip())


CHANGE_CAPTION = (
    "Each comparison a source states from a baseline run to a treatment run, as how many times "
    "better the treatment is: a time or a size falling, a rate or a capacity rising (a change "
    "of -67% in TTFT is 1 / (1 - 0.67) = 3.03x better; +16% throughput is 1.16x). Read from the stated "
    "figure, which the validator checks against the runs where both give the metric. A range "
    "spans its line; 'up to' and 'at least' point their arrow. "
)


def record_change_rows(
    records: Sequence[RecordEntry], root: str, class_id: str | None = None
) -> list[ChangeRow]:
    """One row per record with changes (those on hardware ``class_id`` when given), the change
    its table row shows written beside it; the records with the largest such change first."""
    rows = []
    for entry in records:
        shown = [c for c in entry.changes if class_id is None or c.class_id == class_id]
        if not shown:
            continue
        headline = entry.headline_change if entry.headline_change in shown else shown[0]
        rows.append(
            (
                -headline.gain.at,
                entry.slug,
                ChangeRow(
                    entry.slug,
                    record_href(entry.slug, root, "comparisons"),
                    tuple(_mark(c) for c in shown),
                    f"{headline.stated} {headline.metric}",
                ),
            )
        )
    return [row for _, _, row in sorted(rows, key=lambda item: item[:2])]


def model_bars(models: Sequence[ModelEntry], root: str) -> list[ModelBar]:
    bars = []
    for entry in models:
        per_token = entry.bytes_per_token
        value = float(per_token) if per_token is not None and per_token > 0 else None
        href = f"{root}models/{quote(entry.page)}.html"
        bars.append(ModelBar(entry.id, href, value, attention_family(entry.model)))
    return bars


class Pages:
    """Each page of one site as HTML text."""

    def __init__(
        self,
        site: SiteData,
        documents: Sequence[DocumentPage] = (),
        planners: Sequence[PlannerPage] = (),
    ) -> None:
        self.site = site
        self.env = environment()
        self.env.globals["documents"] = documents  # linked from every page's navigation
        self.planners = planners

    def index(self) -> str:
        records = self.site.records
        return self.env.get_template("index.html").render(
            title="KV-cache efficiency records",
            root="",
            site=self.site,
            techniques=sorted({t for r in records for t in r.row["techniques"]}),
            record_models=sorted({r.row["model"] for r in records}),
            engines=sorted({r.row["engine"] for r in records}),
            hardware_options=self.hardware_options(),
            bytes_chart=bytes_per_token_chart(model_bars(self.site.models, "")),
            context_charts=context_charts([p for r in records for p in r.points], ""),
            changes=change_chart(
                "chart-changes",
                "What each record's treatment bought over its baseline",
                record_change_rows(records, ""),
                CHANGE_CAPTION + "One row per record, every such comparison of it a marker; "
                "beside it the one its table row shows.",
            ),
        )

    def hardware_options(self) -> list[tuple[str, str]]:
        """The hardware filter: each class, and each stated id inside a family."""
        options = {}
        for page in self.site.hardware_pages:
            options[page.hardware_class.id] = page.hardware_class.label
            for entry in page.records:
                for key in entry.filter_keys:
                    options.setdefault(key, key)
        return sorted(options.items())

    def record(self, entry: RecordEntry) -> str:
        rows = [
            ChangeRow(
                f"{c.metric} ({c.statistic}), {c.to_id}",
                f"#run-{quote(c.to_id)}",
                (_mark(c),),
                f"{c.stated} ({c.gain_text})",
            )
            for c in entry.changes
        ]
        chart = change_chart(
            "chart-record-changes",
            "What the treatment bought over its baseline",
            rows,
            CHANGE_CAPTION + "One row per comparison, labelled with the treatment run.",
        )
        return self.env.get_template("record.html").render(
            title=entry.row["title"] or entry.row["id"],
            root=UP,
            record=entry,
            row=entry.row,
            methodology=entry.data["methodology"],
            reasons=entry.reasons,
            changes=chart if rows else None,
        )

    def model_memory(self, entry: ModelEntry) -> tuple[Memory | None, list[Memory]]:
        """The chart's memory lines: the weights at 16 bits (the model's total parameters),
        and the usable memory of each accelerator set the model's planner pages answer for."""
        weights = None
        count = parameter_billions(entry.model.parameters, "total", entry.id)
        if isinstance(count, ParameterBillions) and SIXTEEN_BIT_WEIGHTS is not None:
            held = weight_bytes(count.likely, SIXTEEN_BIT_WEIGHTS)
            weights = Memory(
                f"weights (bf16, {number(count.likely)}B params) + KV total, one sequence",
                float(held),
            )
        memories = {}
        for page in self.planners:
            usable = page.hardware.usable_memory_bytes
            if page.model.id == entry.id and usable is not None:
                label = f"usable memory of {page.devices} x {page.hardware.name}"
                short = f"{page.devices} x {page.hardware.id}"
                memories[label] = Memory(label, float(usable * page.devices), short)
        return weights, sorted(memories.values(), key=lambda m: m.bytes)

    def model(self, entry: ModelEntry) -> str:
        per_token = entry.bytes_per_token
        per_token_text = "unknown"
        if per_token is not None:
            per_token_text = f"{format_bytes(per_token)} ({number(per_token)} B)"
        return self.env.get_template("model.html").render(
            title=entry.model.name,
            root=UP,
            entry=entry,
            family=FAMILIES[attention_family(entry.model)][0],
            per_token=per_token_text,
            model_chart=model_chart(
                entry.model, entry.chart_max_context, *self.model_memory(entry)
            ),
            planners=[page for page in self.planners if page.model.id == entry.id],
            siblings=[model for model in self.site.models if model.id in entry.siblings],
        )

    def document(self, page: DocumentPage) -> str:
        """A page made from one of the project's Markdown documents."""
        return self.env.get_template("document.html").render(
            title=page.title, root="", body=page.body
        )

    def planner(self, page: PlannerPage) -> str:
        """One model on one set of accelerators: the plan grid and the records behind it."""
        return self.env.get_template("planner.html").render(
            title=f"{page.model.model.name} on {page.devices} x {page.hardware.name}: does it fit?",
            root=UP,
            page=page,
            users_columns=USERS,
        )

    def hardware(self, page: HardwarePage) -> str:
        rows = record_change_rows(page.records, UP, page.hardware_class.id)
        return self.env.get_template("hardware.html").render(
            title=f"{page.hardware_class.name}: what each technique bought",
            root=UP,
            page=page,
            # the ranking's filters: each treatment run's model and accelerator count
            rank_models=sorted({change.model for change in page.changes}),
            rank_counts=sorted(
                {c.accelerators for c in page.changes if c.accelerators is not None}
            ),
            context_charts=context_charts(page.points, UP),
            changes=change_chart(
                "chart-changes",
                f"What each treatment bought on {page.hardware_class.name}",
                rows,
                CHANGE_CAPTION + "One row per record, its comparisons whose treatment ran on "
                "this hardware.",
            )
            if rows
            else None,
        )
