"""Everything the site shows, gathered once per build.

Each record file is read once; from that one parse come its export row (``rows``), the
validator's recomputation (``recomputation``) and the page's prose. Each model file and each
hardware file is read once too, and every record of a model shares the one ``Model``. The site
runs on a dataset that validates (``kvrecords site build`` checks first); a record or model
that cannot be read stops the build with a ``ValueError`` naming the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.hardware import HardwareCatalog
from kvrecords.checks.runs import stated_comparison
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import SCHEMA_DIR, DatasetFile, discover
from kvrecords.dataset.models import model_from_data
from kvrecords.dataset.records import headline_figures
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.arithmetic import group_cost, kv_report, parse_element_type
from kvrecords.kv.geometry import LeafGroup, Model, Parallel
from kvrecords.kv.hardware import Hardware
from kvrecords.tools.site.formatting import (
    format_bytes,
    format_ratio,
    number,
    page_name,
    plain_number,
    safe_url,
    slug,
)
from kvrecords.tools.site.hardware import (
    HardwareClass,
    Placement,
    hardware_families,
    hardware_words,
    placement,
)
from kvrecords.tools.site.recomputation import recompute
from kvrecords.tools.site.rows import export_row
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


class Speedup(NamedTuple):
    value: float
    text: str
    stated: bool  # False: cold / warm worked out here, the source gives no ratio


def speedup_of(results: Mapping[str, Any]) -> Speedup | None:
    """The speedup the record states (``23x``, ``~23x``, ``2.35-3.47x``, ``<=4x``; ranked by
    its low end), else cold / warm TTFT when both are given. ``results``: a record's headline
    figures (``headline_figures``)."""
    stated = results.get("speedup")
    if isinstance(stated, str) and stated.endswith("x"):
        return Speedup(float(stated_comparison(stated).low.value), stated, True)
    cold = plain_number(results.get("cold_ttft_ms"))
    warm = plain_number(results.get("warm_ttft_ms"))
    if cold and warm:
        return Speedup(cold / warm, format_ratio(cold / warm), False)
    return None


# The headline figures and the results, in the order a reader wants them.
HEADLINE_LABELS = {
    "measured_ttft_ms_at_ctx": "TTFT at context (ms)",
    "measured_tps_at_ctx": "decode at context (tokens/s)",
}
RESULT_LABELS = {
    "cold_ttft_ms": "TTFT cold (ms)",
    "warm_ttft_ms": "TTFT warm (ms)",
    "speedup": "speedup (cold / warm)",
    "hit_rate": "hit rate (0-1)",
    "tokens_not_recomputed": "tokens not recomputed",
    "bytes_not_recomputed": "bytes not recomputed",
    "decode_tokens_per_s": "decode (tokens/s)",
    "decode_rate_scope": "decode rate is",
    "prefill_tokens_per_s": "prefill (tokens/s)",
    "prefill_tokens_per_s_from_ttft": "prefill from TTFT (tokens/s)",
}


class Figure(NamedTuple):
    label: str
    value: Any  # as written; None: the source does not state it
    reason: str  # why it is not stated ('' when it is)


class Observation(NamedTuple):
    """A further figure set the source gives (another host, run or setting), as stated."""

    label: str
    hardware: str
    context_tokens: int | None
    figures: tuple[tuple[str, Any], ...]
    stated_as: str


class ExplainLine(NamedTuple):
    text: str
    assumed: bool  # the line rests on an assumption, not a stated figure


@dataclass(frozen=True)
class RecordEntry:
    """One record: its export row, its data as written, and what the site derives from it."""

    row: dict[str, Any]
    data: dict[str, Any]
    placement: Placement
    speedup: Speedup | None
    explanation: tuple[ExplainLine, ...]
    reasons: dict[str, str]  # why each null is null, by dotted field
    runs: tuple[RunView, ...]  # format 2: each configuration the source measured
    comparisons: tuple[ComparisonRow, ...]  # format 2: as stated and as recomputed

    @property
    def slug(self) -> str:
        return slug(self.row["id"])

    @property
    def decode(self) -> Any:
        """The decode rate at the record's context, else the one in results."""
        headline = self.row["measured_tps_at_ctx"]
        return headline if headline is not None else self.row["decode_tokens_per_s"]

    @property
    def url(self) -> str | None:
        """The source's link when it is http(s), else None (shown as text, never linked)."""
        return safe_url(self.row["source_url"])

    def results(self) -> list[Figure]:
        """The headline figures, then every result the record holds, with the reason for a null."""
        reasons = self.reasons
        figures = [
            Figure(label, self.data.get(key), reasons.get(key, ""))
            for key, label in HEADLINE_LABELS.items()
        ]
        results: dict[str, Any] = self.data.get("results", {})
        ordered = [k for k in RESULT_LABELS if k in results]
        ordered += [k for k in results if k not in RESULT_LABELS and k != "observations"]
        for key in ordered:
            reason = reasons.get(f"results.{key}", "")
            figures.append(Figure(RESULT_LABELS.get(key, key), results[key], reason))
        return figures

    @property
    def observations(self) -> list[Observation]:
        return [
            Observation(
                item["label"],
                hardware_words(item["hardware"]) if "hardware" in item else "",
                item.get("context_tokens"),
                tuple(item["figures"].items()),
                item["stated_as"],
            )
            for item in self.data.get("results", {}).get("observations", [])
        ]

    @property
    def run_grid(self) -> RunGrid:
        return run_grid(self.runs)

    def rank(self) -> tuple[float, float, str]:
        """Best first: the larger speedup, then the faster decode."""
        speedup = self.speedup.value if self.speedup else 0.0
        return (-speedup, -(plain_number(self.decode) or 0.0), self.slug)


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


def _dimensions(leaf: LeafGroup) -> str:
    skip = {"layers"} if leaf.kind == "sliding_window" else {"layers", "window"}
    parts = []
    for name, value in zip(leaf._fields, leaf, strict=True):
        if name in skip or (name in ("v_head_dim", "window") and value is None):
            continue
        parts.append(f"{name} {'?' if value is None else value}")
    return ", ".join(parts) or "none"


@dataclass(frozen=True)
class ModelEntry:
    id: str
    model: Model
    data: dict[str, Any]
    records: tuple[RecordEntry, ...]

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


@dataclass(frozen=True)
class HardwarePage:
    """The reader's view of one hardware class: its records, by technique, best first."""

    hardware_class: HardwareClass
    records: tuple[RecordEntry, ...]

    @property
    def page(self) -> str:
        return page_name(self.hardware_class.id)

    def by_technique(self) -> list[tuple[str, list[RecordEntry]]]:
        techniques = sorted({t for entry in self.records for t in entry.row["techniques"]})
        return [
            (t, sorted((e for e in self.records if t in e.row["techniques"]), key=RecordEntry.rank))
            for t in techniques
        ]


@dataclass(frozen=True)
class SiteData:
    records: tuple[RecordEntry, ...]
    models: tuple[ModelEntry, ...]
    hardware_pages: tuple[HardwarePage, ...]

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


def _read_record(
    root: Path,
    record_file: DatasetFile,
    models: Mapping[str, tuple[Model, dict[str, Any]]],
    catalog: HardwareCatalog,
    families: Mapping[str, HardwareClass],
    hardware: Mapping[str, Hardware],
) -> RecordEntry:
    document = _read(record_file)
    data: dict[str, Any] = document.data
    if data.get("model") not in models:
        raise ValueError(f"{record_file.display}: no model file for {data.get('model')!r}")
    model = models[data["model"]][0]
    recomputation = recompute(root, document, model, catalog)
    context = recomputation.context
    reasons = {entry["field"]: entry["reason"] for entry in data.get("not_stated", [])}
    return RecordEntry(
        row=export_row(data, model, record_file.display),
        data=data,
        placement=placement(data["methodology"]["hardware"], hardware, families),
        speedup=speedup_of(headline_figures(data)),
        explanation=tuple(
            ExplainLine(line, bool(ASSUMED.search(line))) for line in recomputation.text.split("\n")
        ),
        reasons=reasons,
        runs=run_views(context, reasons) if context else (),
        comparisons=comparison_rows(context) if context else (),
    )


def gather(root: Path) -> SiteData:
    """Read the dataset at ``root`` once and derive everything the pages show."""
    root = root.resolve()
    catalog = HardwareCatalog(root)
    hardware = {}
    for hardware_id in catalog.ids():
        state = catalog.get(hardware_id)
        if state is not None and state.hardware is not None:
            hardware[hardware_id] = state.hardware
    families = hardware_families(hardware)
    models = _read_models(root)
    records = sorted(
        (
            _read_record(root, record_file, models, catalog, families, hardware)
            for record_file in discover(root, "record")
        ),
        key=lambda entry: entry.row["id"],
    )
    model_entries = tuple(
        ModelEntry(model_id, model, data, tuple(r for r in records if r.row["model"] == model_id))
        for model_id, (model, data) in models.items()
    )
    classes = {
        r.placement.hardware_class.id: r.placement.hardware_class
        for r in records
        if r.placement.hardware_class is not None
    }
    pages = tuple(
        HardwarePage(classes[key], tuple(r for r in records if r.placement.class_id == key))
        for key in sorted(classes)
    )
    return SiteData(tuple(records), model_entries, pages)
