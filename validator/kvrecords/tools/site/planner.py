"""The site's planner view: for each model and accelerator set a record ran on, a grid of
context x users answered by ``kvrecords plan``'s engine layer (vLLM), each cell with its pool and
verdict, beside the records measured on that pair (the evidence)."""

from __future__ import annotations

from typing import NamedTuple

from kvrecords.kv.hardware import Hardware
from kvrecords.tools.plan import PlanRefused, Question, plan
from kvrecords.tools.site.data import ModelEntry, RecordEntry, SiteData
from kvrecords.tools.site.formatting import page_name

CONTEXTS = (4096, 32768, 131072)
USERS = (1, 8, 32)


class PlannerCell(NamedTuple):
    context_tokens: int
    users: int
    verdict: str  # fits, does not fit, depends, not answered
    detail: str  # the pool, the most users, or why there is no answer


class PlannerPage(NamedTuple):
    name: str  # file stem under planner/
    model: ModelEntry
    hardware: Hardware
    devices: int  # accelerators of the kind, as the records state them
    rows: tuple[tuple[PlannerCell, ...], ...]  # one row per context, one cell per user count
    records: tuple[RecordEntry, ...]  # the evidence: records of this model on these accelerators
    assumptions: tuple[str, ...]


def planner_pages(site: SiteData) -> list[PlannerPage]:
    """One page per (model, accelerator, count) a record states, in name order."""
    pairs: dict[tuple[str, str, int], list[RecordEntry]] = {}
    for entry in site.records:
        accelerator = entry.row["accelerator"]
        if accelerator in site.hardware:
            key = (entry.row["model"], accelerator, entry.row["accelerator_count"] or 1)
            pairs.setdefault(key, []).append(entry)
    models = {model.id: model for model in site.models}
    pages = []
    for (model_id, hardware_id, count), records in sorted(pairs.items()):
        if model_id not in models:
            continue
        model, hardware = models[model_id], site.hardware[hardware_id]
        assumptions: list[str] = []
        rows = tuple(
            tuple(_cell(model, hardware, count, context, users, assumptions) for users in USERS)
            for context in CONTEXTS
        )
        name = page_name(f"{model_id}--{count}x-{hardware_id}")
        pages.append(
            PlannerPage(
                name,
                model,
                hardware,
                count,
                rows,
                tuple(records),
                tuple(dict.fromkeys(assumptions)),
            )
        )
    return pages


def _cell(
    model: ModelEntry, hardware: Hardware, count: int, context: int, users: int, notes: list[str]
) -> PlannerCell:
    question = Question(model.id, hardware.id, count, context, users)
    try:
        answer = plan(question, model.model, hardware, [], lambda _: None)
    except PlanRefused as refused:
        return PlannerCell(context, users, "not answered", str(refused))
    notes += answer.assumptions
    engine = answer.engine
    if "refused" in engine:
        return PlannerCell(context, users, "not answered", engine["refused"])
    low, high = engine["most_users_at_context"]
    detail = f"pool {engine['pool_per_device']} a device; {low} to {high} users at this context"
    if engine["starts"] == "no":
        return PlannerCell(context, users, "does not fit", "vLLM would not start: " + detail)
    verdict = {"yes": "fits", "no": "does not fit"}.get(engine["fits"], "depends")
    return PlannerCell(context, users, verdict, detail)
