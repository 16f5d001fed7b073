"""Everything the site shows, gathered once per build.

Each record file is read once; from that one parse come its export row
(``export.record_row``), the validator's recomputation (``recomputation``) and the page's prose.
Each model file and each hardware file is read once too, and every record of a model shares the
one ``Model``. The site runs on a dataset that validates (``kvrecords site build`` checks
first); a record or model that cannot be read stops the build with a ``ValueError`` naming the
file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.hardware import hardware_catalog
from kvrecords.checks.runs import comparisons as all_comparisons
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.hardware import HardwareCatalog
from kvrecords.dataset.layout import SCHEMA_DIR, DatasetFile, discover
from kvrecords.dataset.models import model_from_data
from kvrecords.dataset.records import basis_report, run_by_id
from kvrecords.dataset.records import runs as run_list
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.arithmetic import group_cost, kv_report, parse_element_type
from kvrecords.kv.geometry import IndexerKeys, LeafGroup, Model, Parallel
from kvrecords.kv.hardware import Hardware
from kvrecords.kv.metrics import BY_NAME
from kvrecords.tools.export import record_row
from kvrecords.tools.site.figures import (
    Change,
    RunPoint,
    changes,
    chosen_metric,
    headline_change,
    run_points,
)
from kvrecords.tools.site.formatting import (
    format_bytes,
    measured,
    number,
    page_name,
    position,
    safe_url,
    slug,
)
from kvrecords.tools.site.hardware import (
    HardwareClass,
    Placement,
    hardware_families,
    placement,
)
from kvrecords.tools.site.recomputation import recompute
from kvrecords.tools.site.runs import (
    ComparisonRow,
    RunGrid,
    RunView,
    comparison_rows,
    run_grid,
    run_views,
)

BF16 = parse_element_type("bf16")
DEFAULT_MAX_CONTEXT = 128 * 1024
ASSUMED = re.compile(r"\bassume[ds]\b", re.IGNORECASE)


# ---------------------------------------------------------------- records


class CardFigure(NamedTuple):
    """One of the card's fixed figures, the headline run's metric it repeats, or why it is null."""

    label: str
    value: Any  # as written; None: the source does not state it
    metric: str  # 'ttft_ms (single)': the headline run's metric it repeats ('' when none does)
    reason: str  # why it is not stated ('' when it is)


CARD = (
    ("measured_ttft_ms_at_ctx", "TTFT at context (ms)", "ms"),
    # the card's rate is a decode rate per sequence, else aggregate output throughput (KV803):
    # the metric beside it says which
    (
        "measured_tps_at_ctx",
        "tokens/s at context (per user or aggregate: see the metric)",
        "tokens/s",
    ),
)


def card_figures(data: Mapping[str, Any], reasons: Mapping[str, str]) -> tuple[CardFigure, ...]:
    """The card's TTFT and decode rate, each with the headline run's metric and statistic."""
    headline = run_by_id(dict(data)).get(data.get("headline_run", ""))
    metrics = headline.stated.get("metrics", []) if headline else []
    figures = []
    for field, label, unit in CARD:
        value = data.get(field)
        same = (
            m
            for m in metrics
            if m["value"] == value and m["name"] in BY_NAME and BY_NAME[m["name"]].unit == unit
        )
        metric = next(same, None) if value is not None else None
        which = f"{metric['name']} ({metric['statistic']})" if metric else ""
        figures.append(CardFigure(label, value, which, reasons.get(field, "")))
    return tuple(figures)


class Rate(NamedTuple):
    """One rate of the headline run, in a column that holds that one quantity."""

    value: Any  # as written; None when the headline run does not state it
    metric: str  # 'decode_tokens_per_s (median)'; '' when not stated
    reason: str  # why the cell is empty, when the other scope's rate is stated; else ''


# The index's two rate columns: one sequence's decode rate, and the run's aggregate output.
RATES = ("decode_tokens_per_s", "output_tokens_per_s")
OTHER_SCOPE = {
    "decode_tokens_per_s": "aggregate only: see output throughput",
    "output_tokens_per_s": "per user only: see decode per user",
}


def headline_rates(data: Mapping[str, Any], card: Sequence[CardFigure]) -> tuple[Rate, ...]:
    """The headline run's decode rate per sequence and its aggregate output throughput, each
    the figure the card repeats when the card repeats that metric, else the run's single,
    median or mean figure (``figures.chosen_metric``)."""
    headline = run_by_id(dict(data)).get(data.get("headline_run", ""))
    card_rate = card[-1]
    found = {}
    for name in RATES:
        if card_rate.value is not None and card_rate.metric.startswith(f"{name} ("):
            found[name] = Rate(card_rate.value, card_rate.metric, "")
            continue
        metric = chosen_metric(headline, name) if headline is not None else None
        if metric is None:
            found[name] = Rate(None, "", "")
        else:
            found[name] = Rate(metric["value"], f"{name} ({metric['statistic']})", "")
    return tuple(
        rate
        if rate.value is not None or all(found[n].value is None for n in RATES)
        else rate._replace(reason=OTHER_SCOPE[name])
        for name, rate in found.items()
    )


class KvAtContext(NamedTuple):
    """The KV cost at the record's context (windows filled), in the basis's dtype and layers."""

    text: str  # '3 GiB', '~2.25 GiB', '0.5 GiB to 1 GiB' (a range); '' when no context is stated
    sort: float | None
    where: str  # how the context was found, for the cell's title


def record_context(data: Mapping[str, Any]) -> tuple[Any, str]:
    """The record's context as written, and where it comes from: the basis's, else the headline
    run's (the card's figures are that run's)."""
    stated = data["kv_bytes_basis"].get("context_tokens")
    if stated is not None:
        return stated, "the basis's context"
    headline = run_by_id(dict(data)).get(data.get("headline_run", ""))
    context = headline.context(dict(data)) if headline is not None else None
    if headline is not None and context is not None:
        return context, f"the headline run {headline.id}'s context"
    return None, "no context stated"


def kv_at_context(data: Mapping[str, Any], model: Model, context: Any, where: str) -> KvAtContext:
    """KV bytes at each figure of ``context`` (a count, ~N, a range, a bound, a median)."""
    basis = data["kv_bytes_basis"]

    def at(tokens: Any) -> Fraction | None:
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
            return None
        return basis_report(model, {**basis, "context_tokens": tokens}).kv_bytes_at_context

    found = position(context)
    shape = {k: at(v) for k, v in context.items()} if isinstance(context, dict) else at(context)
    figures = list(shape.values()) if isinstance(shape, dict) else [shape]
    middle = at(round(found.at)) if found is not None else None
    if middle is None or any(figure is None for figure in figures):
        return KvAtContext("", None, where)
    return KvAtContext(measured(shape, format_bytes), float(middle), where)


class ExplainLine(NamedTuple):
    text: str
    assumed: bool  # the line rests on an assumption, not a stated figure


@dataclass(frozen=True)
class RecordEntry:
    """One record: its export row, its data as written, and what the site derives from it."""

    row: dict[str, Any]
    data: dict[str, Any]
    placement: Placement  # where the record ran (its methodology's hardware)
    run_placements: dict[str, Placement]  # where each run ran, by run id
    explanation: tuple[ExplainLine, ...]
    reasons: dict[str, str]  # why each null is null, by dotted field
    runs: tuple[RunView, ...]  # format 2: each configuration the source measured
    comparisons: tuple[ComparisonRow, ...]  # format 2: as stated and as recomputed
    points: tuple[RunPoint, ...]  # each run's TTFT and decode rate at its context
    changes: tuple[Change, ...]  # each baseline-to-treatment comparison as a gain
    headline_change: Change | None  # the change the record's row shows
    card: tuple[CardFigure, ...]
    rates: tuple[Rate, ...]  # the index's decode per user and aggregate output (``RATES``)
    context: Any  # the record's context as written (``record_context``)
    kv: KvAtContext

    @property
    def slug(self) -> str:
        return slug(self.row["id"])

    @property
    def url(self) -> str | None:
        """The source's link when it is http(s), else None (shown as text, never linked)."""
        return safe_url(self.row["source_url"])

    @property
    def class_ids(self) -> set[str]:
        """The hardware classes the record or any of its runs ran on."""
        found = {p.class_id for p in (self.placement, *self.run_placements.values())}
        return {class_id for class_id in found if class_id is not None}

    @property
    def filter_keys(self) -> list[str]:
        """The hardware filter's values that match the record or one of its runs."""
        keys = dict.fromkeys(self.placement.filter_keys)
        for run_placement in self.run_placements.values():
            keys.update(dict.fromkeys(run_placement.filter_keys))
        return list(keys)

    @property
    def run_grid(self) -> RunGrid:
        return run_grid(self.runs)


# ---------------------------------------------------------------- models


class GroupRow(NamedTuple):
    """One leaf group of a model's layers, as its page's table shows it (bf16)."""

    number: int
    kind: str
    layers: int
    dimensions: str
    per_token: str
    state: str
    formula: str


# What a group may have or not: absent (None), the model has none (V as wide as K, no window,
# no indexer, indexer keys in the basis's dtype); any other None is a dimension the model has
# and its source does not publish.
OPTIONAL_DIMENSIONS = frozenset({"v_head_dim", "window", "indexer", "dtype"})


def dimension_parts(group: NamedTuple, prefix: str = "") -> list[tuple[str, str]]:
    """A group's dimensions by the model file's names ('kv_heads', 'indexer.head_dim'), each
    with its value, or 'unknown' where the model has it and the source does not publish it."""
    parts: list[tuple[str, str]] = []
    for name, value in zip(group._fields, group, strict=True):
        if name == "layers" or (value is None and name in OPTIONAL_DIMENSIONS):
            continue
        if name == "window" and getattr(group, "kind", "") != "sliding_window":
            continue  # every kind but a window's carries window None
        if isinstance(value, IndexerKeys):
            parts += dimension_parts(value, f"{prefix}{name}.")
            continue
        parts.append((f"{prefix}{name}", "unknown" if value is None else str(value)))
    return parts


def _dimensions(leaf: LeafGroup) -> str:
    return ", ".join(f"{name} {value}" for name, value in dimension_parts(leaf)) or "none"


@dataclass(frozen=True)
class ModelEntry:
    id: str
    model: Model
    data: dict[str, Any]
    records: tuple[RecordEntry, ...]
    siblings: tuple[str, ...] = ()  # the other models of the same cache geometry, by id

    @property
    def page(self) -> str:
        return page_name(self.id)

    @property
    def stated_max_context(self) -> int | None:
        value = self.data.get("max_context_tokens")
        return value if isinstance(value, int) and value > 1024 else None

    @property
    def chart_max_context(self) -> int:
        return self.stated_max_context or DEFAULT_MAX_CONTEXT

    @property
    def bytes_per_token(self) -> Fraction | None:
        """bf16, every layer as the model has it, while every layer still grows."""
        return kv_report(self.model, BF16, 1).bytes_per_token

    def group_rows(self) -> list[GroupRow]:
        rows = []
        for index, group in enumerate(self.model.groups):
            leaves = group.mixers if isinstance(group, Parallel) else (group,)
            for leaf in leaves:
                cost = group_cost(leaf, BF16, BF16, 1)
                per_token = "unknown"
                if cost.bytes_per_token is not None:
                    exact = number(cost.bytes_per_token)
                    per_token = f"{format_bytes(cost.bytes_per_token)} ({exact} B)"
                state = "unknown" if cost.state_bytes is None else format_bytes(cost.state_bytes)
                kind = f"parallel: {leaf.kind}" if isinstance(group, Parallel) else leaf.kind
                rows.append(
                    GroupRow(
                        index + 1,
                        kind,
                        leaf.layers,
                        _dimensions(leaf),
                        per_token,
                        state,
                        cost.token_formula,
                    )
                )
        return rows


# ---------------------------------------------------------------- the whole site

SAME_TECHNIQUES = "same techniques, another setting"
# A baseline run that leaves its techniques out has none by the schema's default, but what it
# had is then the record's silence, not a statement: its changes are credited to no technique.
UNSTATED_BASELINE = "baseline techniques not stated"


@dataclass(frozen=True)
class HardwarePage:
    """The reader's view of one hardware class: the records and runs on it, and what each
    technique bought there."""

    hardware_class: HardwareClass
    records: tuple[RecordEntry, ...]  # every record with the record or a run on this class
    changes: tuple[Change, ...]  # the changes whose treatment ran on this class
    points: tuple[RunPoint, ...]  # the runs' figures on this class

    @property
    def page(self) -> str:
        return page_name(self.hardware_class.id)

    def by_technique(self) -> list[tuple[str, list[Change]]]:
        """Each technique a comparison's arms differ by, with its changes ranked: most times
        better first; then the changes whose arms differ by none, and those whose baseline
        does not say."""
        grouped: dict[str, list[Change]] = {}
        for change in self.changes:
            if not change.baseline_stated:
                found: tuple[str, ...] = (UNSTATED_BASELINE,)
            else:
                found = change.added or (SAME_TECHNIQUES,)
            for technique in found:
                grouped.setdefault(technique, []).append(change)
        last = (SAME_TECHNIQUES, UNSTATED_BASELINE)
        ordered = sorted(grouped, key=lambda t: (t in last, last.index(t) if t in last else 0, t))
        return [
            (t, sorted(grouped[t], key=lambda c: (-c.gain.at, c.record, c.to_id))) for t in ordered
        ]


@dataclass(frozen=True)
class SiteData:
    records: tuple[RecordEntry, ...]
    models: tuple[ModelEntry, ...]
    hardware_pages: tuple[HardwarePage, ...]
    hardware: Mapping[str, Hardware]  # every sound hardware file, by id

    @property
    def models_with_records(self) -> int:
        return sum(1 for model in self.models if model.records)


def _read(dataset_file: DatasetFile) -> Document:
    document = read_document(dataset_file.path, dataset_file.display)
    if not isinstance(document, Document):
        details = "; ".join(f"{p.code} {p.message}" for p in document)
        raise ValueError(f"{dataset_file.display} cannot be read ({details}): validate first")
    return document


def _read_models(root: Path) -> dict[str, tuple[Model, dict[str, Any]]]:
    models = {}
    for model_file in discover(root, "model"):
        document = _read(model_file)
        if schema_problems(document, "model", root / SCHEMA_DIR):
            raise ValueError(f"{model_file.display} fails its schema: validate first")
        models[model_file.expected_id] = (model_from_data(document.data), document.data)
    return models


class HardwareFiles(NamedTuple):
    """What placing a record or a run needs: every hardware file, and the families."""

    files: Mapping[str, Hardware]
    families: Mapping[str, HardwareClass]

    def place(self, stated: Mapping[str, Any]) -> Placement:
        return placement(stated, self.files, self.families)


def _read_record(
    root: Path,
    record_file: DatasetFile,
    models: Mapping[str, tuple[Model, dict[str, Any]]],
    catalog: HardwareCatalog,
    hardware: HardwareFiles,
) -> RecordEntry:
    document = _read(record_file)
    data: dict[str, Any] = document.data
    if data.get("model") not in models:
        raise ValueError(f"{record_file.display}: no model file for {data.get('model')!r}")
    model = models[data["model"]][0]
    recomputation = recompute(
        root, document, model, catalog, lambda model_id: models.get(model_id, (None, None))[0]
    )
    context = recomputation.context
    reasons = {entry["field"]: entry["reason"] for entry in data.get("not_stated", [])}
    row = record_row(data, model, record_file.display)
    record_placement = hardware.place(data["methodology"]["hardware"])
    runs = {run.id: run for run in run_list(data)}
    run_placements = {
        run.id: hardware.place(run.stated["hardware"])
        if "hardware" in run.stated
        else record_placement
        for run in runs.values()
    }
    comparisons = comparison_rows(context) if context else ()
    recomputed = {index: row.recomputed for index, row in enumerate(comparisons)}
    record_changes = (
        changes(slug(data["id"]), all_comparisons(context), runs, data, run_placements, recomputed)
        if context
        else ()
    )
    shown_context, where = record_context(data)
    card = card_figures(data, reasons)
    return RecordEntry(
        row=row,
        data=data,
        placement=record_placement,
        run_placements=run_placements,
        explanation=tuple(
            ExplainLine(line, bool(ASSUMED.search(line))) for line in recomputation.text.split("\n")
        ),
        reasons=reasons,
        runs=run_views(context, reasons) if context else (),
        comparisons=comparisons,
        points=run_points(data, slug(data["id"]), list(runs.values()), run_placements),
        changes=record_changes,
        headline_change=headline_change(record_changes, data.get("headline_run")),
        card=card,
        rates=headline_rates(data, card),
        context=shown_context,
        kv=kv_at_context(data, model, shown_context, where),
    )


def _hardware(catalog: HardwareCatalog) -> HardwareFiles:
    files = catalog.sound()
    return HardwareFiles(files, hardware_families(files))


def _hardware_pages(records: Sequence[RecordEntry]) -> tuple[HardwarePage, ...]:
    """One page per hardware class any record or run ran on, each filled in one pass."""
    classes: dict[str, HardwareClass] = {}
    on: dict[str, tuple[list[RecordEntry], list[Change], list[RunPoint]]] = {}
    for entry in records:
        for item in (entry.placement, *entry.run_placements.values()):
            if item.hardware_class is not None:
                classes.setdefault(item.hardware_class.id, item.hardware_class)
        for class_id in sorted(entry.class_ids):
            on.setdefault(class_id, ([], [], []))[0].append(entry)
        for change in entry.changes:
            if change.class_id is not None:
                on[change.class_id][1].append(change)
        for point in entry.points:
            if point.class_id is not None:
                on[point.class_id][2].append(point)
    return tuple(
        HardwarePage(classes[key], tuple(on[key][0]), tuple(on[key][1]), tuple(on[key][2]))
        for key in sorted(on)
    )


def geometry_siblings(models: Mapping[str, Model]) -> dict[str, tuple[str, ...]]:
    """For each model, the others whose cache geometry is the same (``Model.cache_shape``),
    whatever their names: a record of one measures a cache of the other's bytes. A model with
    an unpublished cache dimension has none (its shape is not known)."""
    by_shape: dict[tuple[str, ...], list[str]] = {}
    for model_id, model in sorted(models.items()):
        if not any(field.startswith("layer_groups") for field in model.unknown):
            by_shape.setdefault(model.cache_shape(), []).append(model_id)
    return {
        model_id: tuple(other for other in same if other != model_id)
        for same in by_shape.values()
        for model_id in same
        if len(same) > 1
    }


def gather(root: Path) -> SiteData:
    """Read the dataset at ``root`` once and derive everything the pages show."""
    root = root.resolve()
    catalog = hardware_catalog(root)
    hardware = _hardware(catalog)
    models = _read_models(root)
    records = sorted(
        (
            _read_record(root, record_file, models, catalog, hardware)
            for record_file in discover(root, "record")
        ),
        key=lambda entry: entry.row["id"],
    )
    by_model: dict[str, list[RecordEntry]] = {}
    for entry in records:
        by_model.setdefault(entry.row["model"], []).append(entry)
    shapes = geometry_siblings({model_id: model for model_id, (model, _) in models.items()})
    model_entries = tuple(
        ModelEntry(
            model_id, model, data, tuple(by_model.get(model_id, ())), shapes.get(model_id, ())
        )
        for model_id, (model, data) in models.items()
    )
    return SiteData(tuple(records), model_entries, _hardware_pages(records), hardware.files)
