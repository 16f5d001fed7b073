"""docs/coverage.md: how many records hold each technique, by engine and by hardware class.

A record counts once in a cell when any of its runs uses that technique on that engine or that
hardware class (a run's own engine and hardware where it states them, else the record's). Every
technique of the record schema has a row, so a technique with no record is visible as one.
Hardware classes are the site's: an accelerator id, or its family when the form factor is
unknown or several ids share a chip.

``docs/coverage-notes.yaml`` says why a technique has fewer than three records (what was
searched) and where each row the collection names stands; the page shows both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.hardware import hardware_catalog
from kvrecords.dataset.document import Document, parse_document, read_document
from kvrecords.dataset.layout import discover
from kvrecords.dataset.records import runs
from kvrecords.kv.hardware import Hardware
from kvrecords.tools.fmt import load_schema
from kvrecords.tools.site.hardware import hardware_families, placement

NOT_STATED = "not stated"
NOTES = "docs/coverage-notes.yaml"
ENOUGH = 3  # records per technique the collection aims for


class RunUse(NamedTuple):
    """What one run of one record used."""

    record_id: str
    techniques: tuple[str, ...]
    engine: str
    hardware_class: str


def technique_names(root: Path) -> tuple[str, ...]:
    """The record schema's technique vocabulary, in its order."""
    schema = load_schema(root, "record")
    return tuple(schema["properties"]["techniques"]["items"]["enum"])


def read_records(root: Path) -> list[dict[str, Any]]:
    """Every record's data, from a validated dataset."""
    found = []
    for record_file in discover(root, "record"):
        document = read_document(record_file.path, record_file.display)
        assert isinstance(document, Document)  # docs are generated from a validated dataset
        found.append(document.data)
    return found


def run_uses(records: Sequence[dict[str, Any]], hardware: Mapping[str, Hardware]) -> list[RunUse]:
    """Each run of each record with its techniques, engine and hardware class."""
    families = hardware_families(hardware)
    uses = []
    for data in records:
        methodology = data["methodology"]
        for run in runs(data):
            engine = run.stated.get("engine") or methodology["engine"]
            where = placement(
                run.stated.get("hardware") or methodology["hardware"], hardware, families
            )
            uses.append(
                RunUse(
                    data["id"],
                    tuple(run.techniques),
                    engine["name"],
                    where.class_id or NOT_STATED,
                )
            )
    return uses


def _table(techniques: Iterable[str], uses: list[RunUse], column: str, heading: str) -> list[str]:
    """Rows of techniques, columns of ``column`` values (most records first): record counts."""
    cells: dict[tuple[str, str], set[str]] = {}
    totals: dict[str, set[str]] = {}
    for use in uses:
        for technique in use.techniques:
            value = getattr(use, column)
            cells.setdefault((technique, value), set()).add(use.record_id)
            totals.setdefault(value, set()).add(use.record_id)
    columns = sorted(totals, key=lambda value: (value == NOT_STATED, -len(totals[value]), value))
    lines = [
        f"| technique | records | {' | '.join(columns)} |",
        f"|---|---:|{'---:|' * len(columns)}",
    ]
    for technique in techniques:
        held = set().union(*(cells.get((technique, value), set()) for value in columns))
        shown = [
            str(len(cells[technique, value])) if (technique, value) in cells else ""
            for value in columns
        ]
        total = str(len(held)) if held else "none yet"
        lines.append(f"| {technique} | {total} | {' | '.join(shown)} |")
    return [f"## Technique x {heading}", "", *lines, ""]


class CoverageNotes(NamedTuple):
    """What docs/coverage-notes.yaml says."""

    fewer_than_enough: dict[str, str]  # technique -> why it has fewer records (what was searched)
    named_rows: list[dict[str, Any]]  # row, records (ids), note
    components: list[str]  # KV stores and connectors to count in the records' engines


def read_notes(root: Path) -> CoverageNotes:
    """The notes file, or none; ``ValueError`` naming the file when it is not readable."""
    path = root / NOTES
    if not path.is_file():
        return CoverageNotes({}, [], [])
    document = parse_document(path.read_bytes(), NOTES)
    if not isinstance(document, Document):
        problem = document[0]
        raise ValueError(f"{NOTES}:{problem.line}:{problem.column}: {problem.message}")
    data = document.data
    reasons = data.get("fewer_than_three") or {}
    rows = data.get("named_rows") or []
    if not isinstance(reasons, dict) or not all(isinstance(v, str) for v in reasons.values()):
        raise ValueError(f"{NOTES}: fewer_than_three maps each technique to a reason (text)")
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and isinstance(row.get("row"), str) for row in rows
    ):
        raise ValueError(f"{NOTES}: each of named_rows has a row (text), records and a note")
    components = data.get("components") or []
    if not isinstance(components, list) or not all(isinstance(c, str) for c in components):
        raise ValueError(f"{NOTES}: components is a list of names (text)")
    return CoverageNotes(reasons, rows, components)


def _short_of_enough(
    techniques: Iterable[str], uses: list[RunUse], notes: CoverageNotes
) -> list[str]:
    held = {t: {u.record_id for u in uses if t in u.techniques} for t in techniques}
    lines = [f"## Techniques with fewer than {ENOUGH} records", ""]
    short = [t for t in held if t != "baseline" and len(held[t]) < ENOUGH]
    for technique in short:
        reason = " ".join(notes.fewer_than_enough.get(technique, "no reason recorded yet").split())
        lines.append(f"- **{technique}** ({len(held[technique])}): {reason}")
    return [*lines, ""] if short else [*lines, "None.", ""]


def _named_rows(notes: CoverageNotes, record_ids: set[str]) -> list[str]:
    lines = ["## Rows the collection names", ""]
    for row in notes.named_rows:
        held = [r for r in row.get("records") or [] if r in record_ids]
        where = ", ".join(f"`{r}`" for r in held) if held else "no record yet"
        note = " ".join(str(row.get("note") or "").split())
        lines.append(f"- {row['row']}: {where}." + (f" {note}" if note else ""))
    return [*lines, ""]


def _components(notes: CoverageNotes, records: Sequence[dict[str, Any]]) -> list[str]:
    """How many records name each KV store or connector in an engine (its name or components)."""
    if not notes.components:
        return []
    named: dict[str, set[str]] = {name: set() for name in notes.components}
    for data in records:
        engines = [data["methodology"]["engine"]]
        engines += [run.stated["engine"] for run in runs(data) if "engine" in run.stated]
        text = " ".join(
            " ".join([engine["name"], *engine.get("components", [])]) for engine in engines
        ).lower()
        for name in named:
            if re.search(rf"(?<![a-z0-9]){re.escape(name.lower())}(?![a-z0-9])", text):
                named[name].add(data["id"])
    lines = [
        "## KV stores and connectors",
        "",
        "Records whose engine (its name or components) names each; the list is in "
        "`docs/coverage-notes.yaml`.",
        "",
        "| component | records |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {len(ids) or 'none yet'} |" for name, ids in named.items()]
    return [*lines, ""]


# The planner's questions: the size of the model, the class of accelerator and the context
_SIZE_CLASSES = ((10, "7-9B"), (21, "10-20B"), (41, "21-40B"), (81, "41-80B"), (None, "over 80B"))
_CONTEXT_BANDS = ((32768, "under 32K"), (131073, "32K-128K"), (None, "over 128K"))
_GPU_CLASSES = ("consumer or workstation", "data-centre")


def _size_class(billions: Any) -> str:
    if isinstance(billions, bool) or not isinstance(billions, (int, float, Fraction)):
        return NOT_STATED
    return next(name for limit, name in _SIZE_CLASSES if limit is None or billions < limit)


def _context_band(tokens: Any) -> str:
    if not isinstance(tokens, int):
        return NOT_STATED
    return next(name for limit, name in _CONTEXT_BANDS if limit is None or tokens < limit)


def _gpu_class(accelerator: Any) -> str:
    if not isinstance(accelerator, str):
        return NOT_STATED
    consumer = accelerator.startswith(("rtx-", "apple-", "gb10"))
    return _GPU_CLASSES[0] if consumer else _GPU_CLASSES[1]


def _planner_questions(
    root: Path, records: Sequence[dict[str, Any]], known_sizes: Mapping[str, Any]
) -> list[str]:
    """Records by model size x accelerator class x context band: where a planner's question
    finds evidence, and the cells that have none."""
    sizes: dict[str, Any] = dict(known_sizes)
    counts: dict[tuple[str, str, str], int] = {}
    placed: set[str] = set()
    for data in records:
        model_id = data["model"]
        if model_id not in sizes:
            document = read_document(root / "models" / f"{model_id}.yaml", model_id)
            parameters = document.data.get("parameters") if isinstance(document, Document) else None
            sizes[model_id] = (parameters or {}).get("total_billions")
        stated = [data["methodology"]["hardware"].get("accelerator")]
        contexts = [data["kv_bytes_basis"].get("context_tokens")]
        for run in runs(data):
            stated.append((run.stated.get("hardware") or {}).get("accelerator"))
            contexts.append(run.stated.get("context_tokens"))
        gpus = {_gpu_class(a) for a in stated if a} or {NOT_STATED}
        numbers = [c for c in contexts if isinstance(c, int) and not isinstance(c, bool)]
        for context in contexts:  # {about: N}, {median: N}, {min: a, max: b}: each figure
            if isinstance(context, dict):
                numbers += [v for v in context.values() if isinstance(v, int)]
        reached = {_context_band(c) for c in numbers} or {NOT_STATED}
        size = _size_class(sizes[model_id])
        for key in {(size, gpu, band) for gpu in gpus for band in reached}:
            counts[key] = counts.get(key, 0) + 1
            if NOT_STATED not in key:
                placed.add(data["id"])
    bands = [name for _, name in _CONTEXT_BANDS]
    lines = [
        "## Planner questions",
        "",
        "Records by the model's total parameters, the accelerator class and the context (the"
        " record's or a run's; a record counts once in each cell its runs reach); a planner's"
        " question finds its nearest evidence in its cell.",
        "",
        f"| model size | accelerators | {' | '.join(bands)} |",
        "|---|---|" + "---:|" * len(bands),
    ]
    empty = []
    for _, size in _SIZE_CLASSES:
        for gpu in _GPU_CLASSES:
            cells = [counts.get((size, gpu, band), 0) for band in bands]
            lines.append(f"| {size} | {gpu} | {' | '.join(str(c) if c else '-' for c in cells)} |")
            empty += [
                f"{size} on {gpu} at {band}" for band, c in zip(bands, cells, strict=True) if not c
            ]
    unplaced = len(records) - len(placed)
    lines += [
        "",
        f"Records in no cell (the model's size, the accelerator or every context not stated):"
        f" {unplaced}.",
        "",
        "Cells with no record: " + ("; ".join(empty) if empty else "none") + ".",
        "",
    ]
    return lines


def coverage_markdown(
    root: Path,
    records: Sequence[dict[str, Any]] | None = None,
    hardware: Mapping[str, Hardware] | None = None,
    model_sizes: Mapping[str, Any] | None = None,
) -> str:
    """The page: technique x engine and technique x hardware class, in records. The records'
    data, the sound hardware files and the models' total parameters (billions, by model id)
    are read from ``root`` unless the caller has them."""
    records = read_records(root) if records is None else records
    hardware = hardware_catalog(root).sound() if hardware is None else hardware
    uses = run_uses(records, hardware)
    techniques = technique_names(root)
    notes = read_notes(root)
    lacking = [t for t in techniques if not any(t in use.techniques for use in uses)]
    lines = [
        "# Coverage",
        "",
        "Generated by `kvrecords docs` from `records/` and `docs/coverage-notes.yaml`; do not edit.",
        f"How many of the {len(records)} records measure each technique, by engine and by hardware",
        "class. A record counts once in a cell when any of its runs uses that technique there;",
        "a hardware class is an accelerator, or its family when the form factor is not stated.",
        "",
        "Techniques with no record yet: "
        + (", ".join(lacking) if lacking else "none")
        + ". Contributions are welcome (CONTRIBUTING.md).",
        "",
        *_table(techniques, uses, "engine", "engine"),
        *_table(techniques, uses, "hardware_class", "hardware class"),
        *_components(notes, records),
        *_planner_questions(root, records, model_sizes or {}),
        *_short_of_enough(techniques, uses, notes),
        *_named_rows(notes, {use.record_id for use in uses}),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"
