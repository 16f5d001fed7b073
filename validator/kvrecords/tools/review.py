"""``kvrecords review``: what a change does to the dataset, for the people who review it.

Two trees of the same dataset are compared: the base (a git revision, written out by
``revision``) and the working tree, or a second revision (two releases). For every record added, changed or removed, and for every
record whose model or hardware file changed, the review holds the fields that differ (old and
new, as written) and the validator's recomputation on both sides: the KV figures each basis
states beside the ones the model gives, the plausibility margins, and the problems. A record
whose recomputed figures or margins differ between the two sides has *moved*; the moved figures
are what a release's changelog of values lists.

Both sides are recomputed by the code that runs the review, so a difference comes from the
files, never from the code. Only the records a change can reach are recomputed: a changed
record, a record linking a changed model or hardware file, and every record when a schema
changed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.hardware import hardware_catalog
from kvrecords.checks.models import ModelState
from kvrecords.checks.plausibility import Evaluation, Inputs, all_evaluations
from kvrecords.dataset.document import Document, JsonPath, dotted, read_dataset_file
from kvrecords.dataset.hardware import hardware_index
from kvrecords.dataset.layout import (
    ID_PATTERN,
    SCHEMA_DIR,
    IdClaims,
    discover,
    escapes_root,
)
from kvrecords.dataset.records import accelerator_links, bases, basis_report
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.geometry import Model
from kvrecords.kv.units import format_bytes_exact, format_exact, percent
from kvrecords.problems import Problem
from kvrecords.runner.validate import check_model_file, check_record_file, sound_model
from kvrecords.tools.explain import explain_record
from kvrecords.tools.revision import Revision, resolve, write_dataset

# ---- what the review holds ------------------------------------------------------------------


class FieldChange(NamedTuple):
    """One value that differs: its dotted path, and the old and new value (None: absent)."""

    field: str
    old: Any
    new: Any
    old_text: str | None  # as written in the file
    new_text: str | None


class Figure(NamedTuple):
    """A KV figure of one basis: what the record states and what the model file gives."""

    basis: str  # "main basis", "alternatives[0]"
    name: str  # "bytes_per_token", "kv_at_context", "fixed_state"
    stated: str | None
    recomputed: str | None  # None: the model file lacks a dimension it needs

    @property
    def key(self) -> str:
        return f"{self.basis} {self.name}"


class Margin(NamedTuple):
    """One plausibility comparison: the value as a share of its physical limit."""

    code: str
    check: str
    share: str | None  # "68%" on the likely reading; None when not checked
    verdict: str  # "ok", "violated", "violated on the likely reading" or "not checked"
    detail: str  # the comparison with its working, or why it was not made

    @property
    def key(self) -> str:
        return f"{self.code} {self.check}"

    @property
    def reading(self) -> str:
        return self.verdict if self.share is None else f"{self.share} ({self.verdict})"


class Recomputation(NamedTuple):
    """The validator's reading of one record on one side."""

    figures: tuple[Figure, ...]
    margins: tuple[Margin, ...]
    problems: tuple[str, ...]  # "line:column CODE message", warnings marked
    derived: bool  # False: the record could not be read, failed its schema or lacks its model
    explanation: str | None  # why nothing was derived


class Movement(NamedTuple):
    """A recomputed figure or margin that differs between the sides."""

    what: str  # "main basis kv_at_context", "KV701 fit"
    old: str | None
    new: str | None


class Source(NamedTuple):
    """Where a record's figures come from: what a reviewer reads the record against."""

    url: str | None
    locator: str | None
    citation: str | None


class RecordReview(NamedTuple):
    id: str
    path: str
    change: str  # "added", "changed", "removed" or "moved" (a file it depends on changed)
    because: tuple[str, ...]  # the changed model and hardware files it depends on
    fields: tuple[FieldChange, ...]
    old: Recomputation | None
    new: Recomputation | None
    moved: tuple[Movement, ...]
    explanation: str | None  # ``kvrecords explain`` in the working tree (added and changed)
    source: Source  # as the newer side states it (the base's for a removed record)
    geometry_of: tuple[str, str] | None  # the sibling model's id and the reason, when stated

    def new_errors(self) -> tuple[str, ...]:
        """The errors validate gives this record after the change that it did not give before."""
        before = self.old.problems if self.old else ()
        after = self.new.problems if self.new else ()
        return tuple(p for p in after if p not in before and not p.endswith("(warning)"))


class DependencyReview(NamedTuple):
    """A changed model or hardware file and the records depending on it on either side."""

    kind: str  # "model" or "hardware"
    path: str
    change: str  # "added", "changed" or "removed"
    fields: tuple[FieldChange, ...]
    dependents: tuple[str, ...]  # record ids
    problems: tuple[str, ...]  # the file's own problems in the working tree


class Review(NamedTuple):
    base: Revision
    records: tuple[RecordReview, ...]
    dependencies: tuple[DependencyReview, ...]
    schemas: tuple[str, ...]  # schema files that changed
    head: Revision | None = None  # None: the working tree
    # the working tree's HEAD is the base commit itself: commits made on the base branch are
    # in both sides, so they cannot show
    head_is_base: bool = False

    def counts(self) -> dict[str, int]:
        changes = [r.change for r in self.records]
        return {
            "records_added": changes.count("added"),
            "records_changed": changes.count("changed"),
            "records_removed": changes.count("removed"),
            "records_moved": sum(1 for r in self.records if r.moved),
            "models_changed": sum(1 for d in self.dependencies if d.kind == "model"),
            "hardware_changed": sum(1 for d in self.dependencies if d.kind == "hardware"),
            "schemas_changed": len(self.schemas),
        }


# ---- one side of the comparison -------------------------------------------------------------


class _Side:
    """One tree of the dataset: its files by path, each model and hardware file read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.claims = IdClaims(root)
        self.hardware = hardware_catalog(root, self.claims)
        self.files = {
            f.display: f for kind in ("record", "model", "hardware") for f in discover(root, kind)
        }
        self.models = {f.expected_id: f for f in self.files.values() if f.kind == "model"}
        self._model_states: dict[str, ModelState] = {}
        self._documents: dict[str, Document | None] = {}

    def content(self, display: str) -> bytes | None:
        """The file's bytes; None when absent, unreadable or a link out of the dataset."""
        dataset_file = self.files.get(display)
        if dataset_file is None or escapes_root(self.root, dataset_file.path):
            return None
        try:
            return dataset_file.path.read_bytes()
        except OSError:
            return None

    def document(self, display: str) -> Document | None:
        if display not in self._documents:
            dataset_file = self.files.get(display)
            read = None if dataset_file is None else read_dataset_file(self.root, dataset_file)
            self._documents[display] = read if isinstance(read, Document) else None
        return self._documents[display]

    def model_state(self, model_id: str) -> ModelState | None:
        if model_id not in self._model_states and model_id in self.models:
            self._model_states[model_id] = check_model_file(
                self.root, self.models[model_id], self.claims
            )
        return self._model_states.get(model_id)

    def dependencies(self, display: str) -> set[str]:
        """The model and hardware files a record names (as paths), as far as it can be read."""
        document = self.document(display)
        if document is None or not isinstance(document.data, dict):
            return set()
        data = document.data
        found = set()
        sibling = data.get("geometry_of")
        for model_id in (
            data.get("model"),
            sibling.get("model") if isinstance(sibling, dict) else None,
        ):
            if isinstance(model_id, str) and ID_PATTERN.fullmatch(model_id):
                found.add(f"models/{model_id}.yaml")
        if not schema_problems(document, "record", self.root / SCHEMA_DIR):
            found |= {
                f"hardware/{name}.yaml" for _, name, family in accelerator_links(data) if not family
            }
        return found

    def recompute(self, display: str) -> Recomputation:
        dataset_file = self.files[display]
        problems = check_record_file(
            self.root, dataset_file, self.model_state, self.claims, self.hardware
        )
        shown = _problem_texts(problems)
        context = self._context(display)
        if isinstance(context, str):
            return Recomputation((), (), shown, False, context)
        inputs = Inputs(hardware_index(context.data, self.hardware), self._model)
        margins = tuple(_margin(e) for e in all_evaluations(context, inputs))
        return Recomputation(tuple(_figures(context)), margins, shown, True, None)

    def _model(self, model_id: str) -> Model | None:
        return sound_model(self.model_state, model_id)

    def _context(self, display: str) -> RecordContext | str:
        document = self.document(display)
        if document is None:
            return "the file cannot be read"
        if schema_problems(document, "record", self.root / SCHEMA_DIR):
            return "the record fails its schema"
        model_id = document.data["model"]
        state = self.model_state(model_id) if ID_PATTERN.fullmatch(model_id) else None
        if state is None:
            return f"models/{model_id}.yaml does not exist"
        if state.model is None or any(p.severity == "error" for p in state.problems):
            return f"{state.file.display} has problems"
        return RecordContext(document, state.model, state.file.display.removesuffix(".yaml"))

    def problems_of(self, display: str) -> tuple[str, ...]:
        """A model or hardware file's own problems."""
        dataset_file = self.files.get(display)
        if dataset_file is None:
            return ()
        if dataset_file.kind == "model":
            state = self.model_state(dataset_file.expected_id)
            found = state.problems if state else []
        else:
            hardware_state = self.hardware.get(dataset_file.expected_id)
            found = hardware_state.problems if hardware_state else []
        return _problem_texts(found)


def _problem_texts(problems: list[Problem]) -> tuple[str, ...]:
    return tuple(
        f"{p.line}:{p.column} {p.code} {p.message}"
        + (" (warning)" if p.severity == "warning" else "")
        for p in sorted(set(problems))
    )


def _bytes(value: Fraction | None) -> str | None:
    return None if value is None else format_bytes_exact(value, ("GiB", "MiB", "KiB"))


def _stated(value: Any) -> str | None:
    return None if value is None else str(value)


def _figures(record: RecordContext) -> Iterator[Figure]:
    for basis in bases(record.data):
        stated = basis.stated
        try:
            report = basis_report(record.model, stated)
        except ValueError as error:
            yield Figure(
                basis.label,
                "bytes_per_token",
                _stated(stated.get("bytes_per_token")),
                f"not computed: {error}",
            )
            continue
        per_token = report.bytes_per_token
        yield Figure(
            basis.label,
            "bytes_per_token",
            _stated(stated.get("bytes_per_token")),
            None if per_token is None else f"{format_exact(per_token)} B",
        )
        if stated.get("context_tokens") is not None:
            yield Figure(
                basis.label,
                "kv_at_context",
                _stated(stated.get("kv_at_context")),
                _bytes(report.kv_bytes_at_context),
            )
        if stated.get("fixed_state") is not None or report.fixed_state_bytes:
            yield Figure(
                basis.label,
                "fixed_state",
                _stated(stated.get("fixed_state")),
                _bytes(report.fixed_state_bytes),
            )


def _margin(evaluation: Evaluation) -> Margin:
    if not evaluation.checked:
        reason = evaluation.skipped or "an input is missing"
        return Margin(evaluation.rule.code, evaluation.check, None, "not checked", reason)
    side = evaluation.likely or evaluation.favourable
    assert side is not None
    if evaluation.impossible:
        verdict = "violated"
    elif evaluation.violated:
        verdict = "violated on the likely reading"
    else:
        verdict = "ok"
    return Margin(
        evaluation.rule.code,
        evaluation.check,
        percent(side.value, side.limit),
        verdict,
        evaluation.summary(),
    )


# ---- comparing the sides --------------------------------------------------------------------


def field_changes(old: Document | None, new: Document | None) -> tuple[FieldChange, ...]:
    """Every scalar that differs in value or in how it is written, in the new file's order."""
    old_leaves = old.leaves if old else {}
    new_leaves = new.leaves if new else {}
    changes = []
    for path in [*new_leaves, *(p for p in old_leaves if p not in new_leaves)]:
        before = _written(old, path)
        after = _written(new, path)
        if before != after:
            changes.append(
                FieldChange(
                    _dotted(path), old_leaves.get(path), new_leaves.get(path), before, after
                )
            )
    return tuple(changes)


def _written(document: Document | None, path: JsonPath) -> str | None:
    if document is None or path not in document.leaves:
        return None
    value = document.leaves[path]
    if value is None:
        return "null"
    return document.written.get(path, str(value))


def _dotted(path: JsonPath) -> str:
    return dotted(path) or "(the whole file)"


def movements(old: Recomputation | None, new: Recomputation | None) -> tuple[Movement, ...]:
    """Recomputed figures and margins that differ between two readings of one record."""
    if old is None or new is None:
        return ()
    if old.derived != new.derived:  # a model or hardware file gone or broken, or mended
        return (
            Movement(
                "derived figures",
                "derived" if old.derived else f"none: {old.explanation}",
                "derived" if new.derived else f"none: {new.explanation}",
            ),
        )
    if not old.derived:
        return ()
    found = []
    for before, after in (
        ({f.key: f.recomputed for f in old.figures}, {f.key: f.recomputed for f in new.figures}),
        ({m.key: m.reading for m in old.margins}, {m.key: m.reading for m in new.margins}),
    ):
        for key in [*after, *(k for k in before if k not in after)]:
            if before.get(key) != after.get(key):
                found.append(Movement(key, before.get(key), after.get(key)))
    return tuple(found)


def review(root: Path, ref: str, head_ref: str | None = None) -> Review:
    """Compare the dataset at git revision ``ref`` with the working tree at ``root``, or with
    revision ``head_ref`` (two releases, say), both read through git."""
    revision = resolve(root, ref)
    head_revision = None if head_ref is None else resolve(root, head_ref)
    with tempfile.TemporaryDirectory(prefix="kvrecords-review-") as folder:
        base_root = Path(folder).resolve() / "base"
        write_dataset(root, revision, base_root)
        head_root = root.resolve()
        if head_revision is not None:
            head_root = Path(folder).resolve() / "head"
            write_dataset(root, head_revision, head_root)
        found = compare(_Side(base_root), _Side(head_root), revision, head_revision)
    if head_revision is None and revision.commit == resolve(root, "HEAD").commit:
        found = found._replace(head_is_base=True)
    return found


def compare(
    base: _Side, head: _Side, revision: Revision, head_revision: Revision | None = None
) -> Review:
    changed = {
        display
        for display in {*base.files, *head.files}
        if base.content(display) != head.content(display)
    }
    schemas = _changed_schemas(base, head)
    dependency_paths = sorted(d for d in changed if not d.startswith("records/"))
    record_paths = sorted(d for d in {*base.files, *head.files} if d.startswith("records/"))
    records = []
    dependents: dict[str, set[str]] = {d: set() for d in dependency_paths}
    for display in record_paths:
        links = base.dependencies(display) | head.dependencies(display)
        because = tuple(sorted(links & set(dependents)))
        for dependency in because:
            dependents[dependency].add(_record_id(display))
        if display not in changed and not because and not schemas:
            continue
        review = _record_review(base, head, display, display in changed, because)
        if review is not None:
            records.append(review)
    dependencies = tuple(
        DependencyReview(
            "model" if display.startswith("models/") else "hardware",
            display,
            _change(base, head, display),
            field_changes(base.document(display), head.document(display)),
            tuple(sorted(dependents[display])),
            head.problems_of(display),
        )
        for display in dependency_paths
    )
    return Review(revision, tuple(records), dependencies, schemas, head_revision)


def _changed_schemas(base: _Side, head: _Side) -> tuple[str, ...]:
    names = {p.name for side in (base, head) for p in (side.root / SCHEMA_DIR).glob("*.json")}
    return tuple(
        f"{SCHEMA_DIR}/{name}"
        for name in sorted(names)
        if _schema_bytes(base, name) != _schema_bytes(head, name)
    )


def _record_review(
    base: _Side, head: _Side, display: str, edited: bool, because: tuple[str, ...]
) -> RecordReview | None:
    """How one record's figures moved; None when only a dependency changed and they did not."""
    old = base.recompute(display) if display in base.files else None
    new = head.recompute(display) if display in head.files else None
    change = "added" if old is None else "removed" if new is None else "changed"
    if not edited:
        change = "moved"
        if old == new:
            return None  # a dependency changed in a way this record does not see
    explained = None
    if change in ("added", "changed"):
        explained = explain_record(head.root, head.files[display].path)
    return RecordReview(
        _record_id(display),
        display,
        change,
        because,
        field_changes(base.document(display), head.document(display)),
        old,
        new,
        movements(old, new),
        explained,
        _source(head.document(display) or base.document(display)),
        _geometry_of(head.document(display) or base.document(display)),
    )


def _geometry_of(document: Document | None) -> tuple[str, str] | None:
    data = document.data if document is not None else None
    sibling = data.get("geometry_of") if isinstance(data, dict) else None
    if not isinstance(sibling, dict):
        return None
    model, reason = sibling.get("model"), sibling.get("reason")
    return (model, reason) if isinstance(model, str) and isinstance(reason, str) else None


def _source(document: Document | None) -> Source:
    """The record's source URL, locator and citation, as far as the file can be read."""
    data = document.data if document is not None else None
    methodology = data.get("methodology") if isinstance(data, dict) else None
    source = methodology.get("source") if isinstance(methodology, dict) else None
    if not isinstance(source, dict):
        return Source(None, None, None)
    return Source(
        *(
            value if isinstance(value, str) else None
            for value in (source.get("url"), source.get("locator"), source.get("citation"))
        )
    )


def _schema_bytes(side: _Side, name: str) -> bytes | None:
    try:
        return (side.root / SCHEMA_DIR / name).read_bytes()
    except OSError:
        return None


def _change(base: _Side, head: _Side, display: str) -> str:
    if display not in base.files:
        return "added"
    return "removed" if display not in head.files else "changed"


def _record_id(display: str) -> str:
    return display.removeprefix("records/").rsplit(".", 1)[0]
