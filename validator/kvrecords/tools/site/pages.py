"""The pages, rendered from Jinja2 templates with autoescaping from the gathered data.

Every value reaches the HTML through a template, which escapes it; the only markup that does
not is the charts' SVG, which ``charts`` builds with escaping of its own. Links go up to the
site's root with ``root`` ('' on the index, '../' one folder down).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined

from kvrecords.tools.site.charts import (
    FAMILIES,
    DecodePoint,
    ModelBar,
    TtftPair,
    attention_family,
    bytes_per_token_chart,
    decode_chart,
    model_chart,
    ttft_chart,
)
from kvrecords.tools.site.data import HardwarePage, ModelEntry, RecordEntry, SiteData
from kvrecords.tools.site.formatting import (
    format_bytes,
    measured,
    number,
    page_name,
    plain_number,
    sort_key,
)

UP = "../"


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
    )
    return env


def _record_href(entry: RecordEntry, root: str) -> str:
    return f"{root}records/{quote(entry.slug)}.html"


def ttft_pairs(records: Sequence[RecordEntry], root: str) -> list[TtftPair]:
    """The records that state both a cold and a warm TTFT."""
    pairs = []
    for entry in records:
        cold, warm = entry.row["cold_ttft_ms"], entry.row["warm_ttft_ms"]
        cold_ms, warm_ms = plain_number(cold), plain_number(warm)
        if cold_ms and warm_ms:
            href = _record_href(entry, root)
            pairs.append(
                TtftPair(entry.slug, href, cold_ms, warm_ms, measured(cold), measured(warm))
            )
    return pairs


def decode_points(records: Sequence[RecordEntry], root: str) -> list[DecodePoint]:
    """The records that give both a context and a decode rate."""
    points = []
    for entry in records:
        context, rate = plain_number(entry.row["context_tokens"]), plain_number(entry.decode)
        if context and rate:
            points.append(DecodePoint(entry.slug, _record_href(entry, root), context, rate))
    return points


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

    def __init__(self, site: SiteData) -> None:
        self.site = site
        self.env = environment()

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
            ttft=ttft_chart(ttft_pairs(records, "")),
            decode=decode_chart(decode_points(records, "")),
        )

    def hardware_options(self) -> list[tuple[str, str]]:
        """The hardware filter: each class, and each stated id inside a family."""
        options = {}
        for page in self.site.hardware_pages:
            options[page.hardware_class.id] = page.hardware_class.label
            for entry in page.records:
                for key in entry.placement.filter_keys:
                    options.setdefault(key, key)
        return sorted(options.items())

    def record(self, entry: RecordEntry) -> str:
        return self.env.get_template("record.html").render(
            title=entry.row["title"] or entry.row["id"],
            root=UP,
            record=entry,
            row=entry.row,
            methodology=entry.data["methodology"],
            reasons=entry.reasons,
        )

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
            model_chart=model_chart(entry.model, entry.chart_max_context),
        )

    def hardware(self, page: HardwarePage) -> str:
        pairs = ttft_pairs(page.records, UP)
        return self.env.get_template("hardware.html").render(
            title=f"{page.hardware_class.name}: what each technique bought",
            root=UP,
            page=page,
            ttft=ttft_chart(pairs) if pairs else None,
        )
