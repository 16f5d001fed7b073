"""The validation run: which files to check, and each file's checks in order.

A file that fails to parse stops there; a record that fails its schema skips its arithmetic; a
record whose model is broken skips its arithmetic. Every other file still runs.
"""

from __future__ import annotations

import errno
import functools
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.dates import date_problems
from kvrecords.checks.evidence import orphan_evidence_problems
from kvrecords.checks.files import identity_problems, modeline_problems
from kvrecords.checks.hardware import hardware_catalog
from kvrecords.checks.models import ModelState, judge_model_file
from kvrecords.checks.references import (
    broken_model_problem,
    engine_name_problems,
    model_link_problem,
    null_reason_problems,
    placeholder_problems,
    run_model_problems,
)
from kvrecords.checks.registry import record_problems
from kvrecords.dataset.document import (
    MAX_FILE_BYTES,
    Document,
    parse_document,
    read_dataset_file,
)
from kvrecords.dataset.evidence import orphan_folders, record_of_evidence
from kvrecords.dataset.hardware import HardwareCatalog, hardware_index
from kvrecords.dataset.layout import (
    ID_PATTERN,
    RECORDS_DIR,
    SCHEMA_DIR,
    DatasetFile,
    IdClaims,
    classify,
    discover,
    escapes_root,
)
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.geometry import Model
from kvrecords.problems import Problem


class Selection(NamedTuple):
    """What one run checks: records, and the model and hardware files by id."""

    records: list[DatasetFile]
    model_ids: list[str]
    hardware_ids: list[str]
    # record ids whose evidence/ folder to hold to having a record: every folder in a whole run
    evidence_owners: frozenset[str] | None = frozenset()  # None: every folder under evidence/


class Outcome(NamedTuple):
    problems: list[Problem]
    files_checked: int


class UsageError(Exception):
    """A path that is not part of the dataset (exit code 2)."""


# Below this many records one process is faster than starting workers.
PARALLEL_THRESHOLD = 400
CHUNK_SIZE = 100


class _Checker:
    """Checks files of one dataset, reading each model and hardware file once."""

    def __init__(self, root: Path, models: dict[str, DatasetFile]) -> None:
        self.root = root
        self.models = models
        self.model_states: dict[str, ModelState] = {}
        self.claims = IdClaims(root)
        # hardware/<id>.yaml, read once each, on first use
        self.hardware = hardware_catalog(root, self.claims)

    def model_state(self, model_id: str) -> ModelState | None:
        if model_id not in self.model_states and model_id in self.models:
            self.model_states[model_id] = check_model_file(
                self.root, self.models[model_id], self.claims
            )
        return self.model_states.get(model_id)

    def records(self, records: Sequence[DatasetFile]) -> list[Problem]:
        problems: list[Problem] = []
        for record in records:
            problems += check_record_file(
                self.root, record, self.model_state, self.claims, self.hardware
            )
        return problems


_worker: _Checker | None = None


def _start_worker(root: Path, models: dict[str, DatasetFile]) -> None:
    global _worker
    _worker = _Checker(root, models)


def _check_in_worker(records: list[DatasetFile]) -> list[Problem]:
    assert _worker is not None
    return _worker.records(records)


def validate(
    root: Path, paths: Sequence[Path] | None = None, *, jobs: int | None = None
) -> Outcome:
    """Check the dataset at ``root`` (or ``paths`` and what depends on them).

    ``jobs``: worker processes for the records; by default every core once there are enough
    records to pay for starting them.
    """
    models = {f.expected_id: f for f in discover(root, "model")}
    hardware_ids = [f.expected_id for f in discover(root, "hardware")]
    selection = _select(root, paths, models, hardware_ids)
    checker = _Checker(root, models)
    problems: list[Problem] = []
    for model_id in selection.model_ids:
        state = checker.model_state(model_id)
        if state is not None:
            problems += state.problems
    for hardware_id in selection.hardware_ids:
        hardware_state = checker.hardware.get(hardware_id)
        if hardware_state is not None:
            problems += hardware_state.problems
    if jobs is None:
        enough = len(selection.records) >= PARALLEL_THRESHOLD
        jobs = min(os.cpu_count() or 1, 8) if enough else 1
    if jobs > 1:
        problems += _in_workers(checker, selection.records, jobs)
    else:
        problems += checker.records(selection.records)
    if selection.evidence_owners != frozenset():
        problems += orphan_evidence_problems(orphan_folders(root, selection.evidence_owners))
    checked = len(selection.records) + len(selection.model_ids) + len(selection.hardware_ids)
    return Outcome(sorted(set(problems)), checked)


def _in_workers(checker: _Checker, records: list[DatasetFile], jobs: int) -> list[Problem]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    # several chunks per worker, so that a slow chunk does not leave the other cores idle
    size = max(1, min(CHUNK_SIZE, len(records) // (jobs * 4)))
    chunks = [records[i : i + size] for i in range(0, len(records), size)]
    with ProcessPoolExecutor(
        jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(checker.root, checker.models),
    ) as pool:
        return [problem for chunk in pool.map(_check_in_worker, chunks) for problem in chunk]


def _select(
    root: Path,
    paths: Sequence[Path] | None,
    models: dict[str, DatasetFile],
    hardware_ids: list[str],
) -> Selection:
    """What to check: the given files and everything that depends on them.

    Records are listed only when the selection needs them all (a whole run, a folder, a model
    or hardware file and the records naming it); changed records alone are taken as given.
    """
    all_records = functools.cache(functools.partial(discover, root, "record"))
    if not paths:
        return Selection(all_records(), sorted(models), sorted(hardware_ids), None)
    given = _Given(root)
    for path in paths:
        absolute = path if path.is_absolute() else Path.cwd() / path
        # the folder resolved, not the file: a symlink leading out is KV009's to report
        if not _is_under(absolute.parent.resolve() / absolute.name, root):
            # a run from the wrong folder must not pass what it never read
            raise UsageError(f"{path}: outside the dataset at {root}")
        if absolute.is_dir():
            given.add_folder(absolute, [*all_records(), *models.values()])
        elif absolute.name.endswith(".schema.json") and absolute.parent.name == SCHEMA_DIR:
            # a schema change re-checks everything
            return Selection(all_records(), sorted(models), sorted(hardware_ids), None)
        else:
            given.add_file(path, absolute, classify(root, absolute), models, hardware_ids)
    if given.changed_models or given.changed_hardware:
        given.record_displays |= _dependents(
            root, all_records(), given.changed_models, given.changed_hardware
        )
    if given.evidence_owners:
        given.record_displays |= {
            r.display for r in all_records() if r.expected_id in given.evidence_owners
        }
    records = given.records
    if given.record_displays:
        records |= {r.display: r for r in all_records() if r.display in given.record_displays}
    return Selection(
        [records[display] for display in sorted(records)],
        sorted(given.model_ids),
        sorted(given.hardware_ids),
        frozenset(given.evidence_owners),
    )


class _Given:
    """The files a run was given, sorted by what checking them takes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.evidence_owners: set[str] = set()  # record ids whose kept files were given
        self.records: dict[str, DatasetFile] = {}  # given record files, by display path
        self.record_displays: set[str] = set()  # records to take from the full listing
        self.model_ids: set[str] = set()
        self.hardware_ids: set[str] = set()
        # ids of the given model and hardware files, existing or not: their records re-run
        self.changed_models: set[str] = set()
        self.changed_hardware: set[str] = set()

    def add_folder(self, folder: Path, dataset_files: list[DatasetFile]) -> None:
        inside = [f for f in dataset_files if _is_under(f.path, folder)]
        self.record_displays |= {f.display for f in inside if f.kind == "record"}
        self.model_ids |= {f.expected_id for f in inside if f.kind == "model"}

    def add_file(
        self,
        given: Path,
        absolute: Path,
        dataset_file: DatasetFile | None,
        models: dict[str, DatasetFile],
        hardware_ids: list[str],
    ) -> None:
        owner = record_of_evidence(self.root.resolve(), absolute.parent.resolve() / absolute.name)
        if owner is not None:
            # a kept result file, changed or removed: its record re-reads it
            self.evidence_owners.add(owner)
            return
        if dataset_file is None:
            if not absolute.exists():
                raise UsageError(f"{given}: no such file")
            return  # not a dataset file (pre-commit may pass any file): nothing to check
        if dataset_file.kind == "record":
            if not absolute.exists() and not absolute.is_symlink():
                raise UsageError(f"{given}: no such file")
            self.records[dataset_file.display] = dataset_file
        elif dataset_file.kind == "model":
            if dataset_file.expected_id in models:
                self.model_ids.add(dataset_file.expected_id)
            self.changed_models.add(dataset_file.expected_id)
        else:
            if dataset_file.expected_id in hardware_ids:
                self.hardware_ids.add(dataset_file.expected_id)
            self.changed_hardware.add(dataset_file.expected_id)


def _is_under(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder.resolve())
    except ValueError:
        return False
    return True


# A record names its model under the key ``model`` (its own, a run's) and its hardware under keys
# named ``accelerator`` (methodology.hardware, a run's hardware, fit claims). The canonical
# spellings, which nearly every record uses, are recognised in the bytes; any other file holding
# an id, or an escape that could spell one, is parsed and its values read.
_MODEL_LINE = rb"^model:[ \t]*(['\"]?){id}\1[ \t]*(#[^\n]*)?\r?$"
_ACCELERATOR_LINE = rb"^[ \t]*(- )?accelerator:[ \t]*(['\"]?){id}\2[ \t]*(#[^\n]*)?\r?$"


def _dependents(
    root: Path, records: list[DatasetFile], model_ids: set[str], hardware_ids: set[str]
) -> set[str]:
    """Display paths of the records that name one of ``model_ids`` or ``hardware_ids``.

    Over-approximates, never misses: a record whose text holds none of the ids and no
    backslash (the only way a quoted scalar spells characters it does not show) cannot name
    them; a record that cannot be read or parsed is included, so that its problems are reported.
    """
    ids = sorted(model_ids | hardware_ids)
    needles = [b"\\", *(dependency_id.encode() for dependency_id in ids)]
    canonical = [
        re.compile(_MODEL_LINE.replace(b"{id}", re.escape(i.encode())), re.MULTILINE)
        for i in sorted(model_ids)
    ] + [
        re.compile(_ACCELERATOR_LINE.replace(b"{id}", re.escape(i.encode())), re.MULTILINE)
        for i in sorted(hardware_ids)
    ]
    found: set[str] = set()
    if escapes_root(root, root / RECORDS_DIR):
        return found  # every record is refused unread (KV009)
    folder = str(root)
    for record in records:
        raw = _raw_text(root, folder, record)
        if raw is None or not _holds_any(raw, needles):
            continue
        if any(pattern.search(raw) for pattern in canonical):
            found.add(record.display)
            continue
        document = parse_document(raw, record.display)
        if not isinstance(document, Document):
            found.add(record.display)
            continue
        named = {
            value
            for path, value in document.leaves.items()
            if path
            and isinstance(value, str)
            and (
                (path[-1] == "model" and value in model_ids)
                or (path[-1] == "accelerator" and value in hardware_ids)
            )
        }
        if named:
            found.add(record.display)
    return found


def _holds_any(raw: bytes, needles: list[bytes]) -> bool:
    # ``in`` is several times faster here than one regular expression of alternatives
    return any(needle in raw for needle in needles)


def _raw_text(root: Path, folder: str, record: DatasetFile) -> bytes | None:
    """A record's bytes (up to the size limit and a little more), unless a symlink leads out.

    Plain strings and one ``open`` without following links: this runs over every record when a
    model changes, and regular files (nearly all) then cost one system call to open.
    """
    path = os.path.join(folder, record.display)
    try:
        descriptor = os.open(path, _NO_FOLLOW)
    except OSError as error:
        if error.errno != errno.ELOOP or escapes_root(root, Path(path)):
            return None
        try:  # a symlink that stays inside the dataset is read like a file
            descriptor = os.open(path, os.O_RDONLY)
        except OSError:
            return None
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_FILE_BYTES:  # small reads: a record is a few KiB
            chunk = os.read(descriptor, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return b"".join(chunks)


_NO_FOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def check_record_file(
    root: Path,
    dataset_file: DatasetFile,
    state_of: Callable[[str], ModelState | None],
    claims: IdClaims,
    hardware: HardwareCatalog | None = None,
) -> list[Problem]:
    """One record's checks in order: file, identity, schema, references, arithmetic, hardware."""
    document = read_dataset_file(root, dataset_file)
    if not isinstance(document, Document):
        return document
    problems = modeline_problems(root, document, dataset_file)
    problems += identity_problems(document, dataset_file, claims)
    schema_errors = schema_problems(document, "record", root / SCHEMA_DIR)
    problems += _unfilled_problems(document, schema_errors)
    if schema_errors:
        return problems + schema_errors
    problems += engine_name_problems(document)
    problems += date_problems(document)
    if "evidence" in document.data:  # the kept result files, read only for a record listing them
        problems += _evidence_problems(root, document, dataset_file)
    model_id: str = document.data["model"]
    state = state_of(model_id) if ID_PATTERN.fullmatch(model_id) else None
    link = model_link_problem(root, document, state is not None)
    problems += run_model_problems(
        root, document, lambda run_model: state_of(run_model) is not None
    )
    if link is not None or state is None:
        return [*problems, *([link] if link else [])]
    if state.model is None or any(p.severity == "error" for p in state.problems):
        return [*problems, broken_model_problem(document, state.file.display)]
    context = RecordContext(
        document, state.model, state.file.display.removesuffix(".yaml"), claims.model_ids()
    )
    named_hardware = hardware_index(document.data, hardware or hardware_catalog(root, claims))
    return problems + record_problems(
        context, named_hardware, lambda model_id: sound_model(state_of, model_id)
    )


def _evidence_problems(root: Path, document: Document, dataset_file: DatasetFile) -> list[Problem]:
    from kvrecords.checks.evidence import evidence_problems
    from kvrecords.dataset.evidence import read_evidence, unlisted_files

    listed = document.data["evidence"]
    record_id = dataset_file.expected_id
    files = read_evidence(root, record_id, listed)
    return evidence_problems(document, files, unlisted_files(root, record_id, listed))


def _unfilled_problems(document: Document, schema_errors: list[Problem]) -> list[Problem]:
    """The placeholders left (KV206), which read any shape of record: on a record the schema
    refuses too, so that a draft's first run lists every field left to fill, not its one schema
    error; then the nulls and their reasons (KV205), on a record the schema accepts."""
    if schema_errors:
        refused = {(p.line, p.column) for p in schema_errors}
        return [p for p in placeholder_problems(document) if (p.line, p.column) not in refused]
    return null_reason_problems(document, "not_stated") + placeholder_problems(document)


def check_model_file(
    root: Path, dataset_file: DatasetFile, claims: IdClaims | None = None
) -> ModelState:
    """Read one model file, then judge it."""
    document = read_dataset_file(root, dataset_file)
    if not isinstance(document, Document):
        return ModelState(dataset_file, None, document)
    return judge_model_file(root, claims or IdClaims(root), document, dataset_file)


def sound_model(state_of: Callable[[str], ModelState | None], model_id: str) -> Model | None:
    """The geometry of a model file that exists and has no errors, else None."""
    state = state_of(model_id) if ID_PATTERN.fullmatch(model_id) else None
    if state is None or any(p.severity == "error" for p in state.problems):
        return None
    return state.model
