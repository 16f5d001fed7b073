"""Raw result files kept with a record: ``evidence/<slug>/<file>``, read as data and digested.

A record lists them under ``evidence`` (file, format, sha256, runs); ``validate`` reads each
one here and ``checks/evidence.py`` (KV901) compares it with the record. A file is read only
when it is a regular file inside its record's folder (a symlink leading anywhere else is
refused unread), at most ``MAX_BENCH_BYTES``; it is parsed by its format's reader, never run.
A record without ``evidence`` reads nothing: this module and the readers load only for one
that has it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kvrecords.dataset.layout import RECORD_PREFIX, RECORDS_DIR, YAML_SUFFIXES, escapes_root

if TYPE_CHECKING:
    from kvrecords.dataset.bench import BenchRun

EVIDENCE_DIR = "evidence"


class EvidenceFile(NamedTuple):
    """One listed file as read: its digest and runs, or why it could not be read."""

    position: int  # in the record's evidence list
    display: str  # evidence/<slug>/<file>, as messages show it
    sha256: str | None  # of the bytes read; None when the file was not read
    runs: list[BenchRun] | None  # None when it was not read or not parsed
    problem: str | None  # why not, located in the file where the reader says (line:column)


def evidence_folder(root: Path, record_id: str) -> Path:
    """Where a record's files are kept: ``evidence/<slug>`` for ``kv-efficiency/<slug>``."""
    return root / EVIDENCE_DIR / record_id.removeprefix(f"{RECORD_PREFIX}/")


def record_of_evidence(root: Path, path: Path) -> str | None:
    """The record id whose evidence ``path`` (absolute, under ``root``) is, else None."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return None
    if len(parts) < 3 or parts[0] != EVIDENCE_DIR:
        return None
    return f"{RECORD_PREFIX}/{parts[1]}"


def orphan_folders(root: Path, owners: frozenset[str] | None) -> list[tuple[str, str]]:
    """(record id, display path) of each evidence folder whose record file is gone, among
    ``owners`` (record ids), or among every folder under evidence/ when None."""
    return [
        (record_id, display)
        for record_id, display in _evidence_folders(root, owners)
        if not any((root / RECORDS_DIR / f"{record_id}{end}").is_file() for end in YAML_SUFFIXES)
    ]


def _evidence_folders(root: Path, owners: frozenset[str] | None) -> list[tuple[str, str]]:
    """(record id, display path) of each folder under evidence/ (or of ``owners`` only)."""
    if owners is None:
        try:
            with os.scandir(root / EVIDENCE_DIR) as entries:
                names = [entry.name for entry in entries if entry.is_dir()]
        except OSError:
            return []  # no evidence/ folder: nothing kept
        owners = frozenset(f"{RECORD_PREFIX}/{name}" for name in names)
    return [
        (owner, f"{EVIDENCE_DIR}/{owner.removeprefix(f'{RECORD_PREFIX}/')}")
        for owner in sorted(owners)
    ]


def read_evidence(root: Path, record_id: str, listed: list[Any]) -> list[EvidenceFile]:
    """Each file a (schema-valid) record lists, read and parsed in list order."""
    folder = evidence_folder(root.resolve(), record_id)
    return [
        _read(folder, f"{EVIDENCE_DIR}/{folder.name}/{entry['file']}", position, entry)
        for position, entry in enumerate(listed)
    ]


def unlisted_files(root: Path, record_id: str, listed: list[Any]) -> list[str]:
    """Files in the record's folder that its evidence does not list (never checked otherwise)."""
    folder = evidence_folder(root, record_id)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    known = {entry["file"] for entry in listed}
    return [f"{EVIDENCE_DIR}/{folder.name}/{name}" for name in names if name not in known]


def _read(folder: Path, display: str, position: int, entry: dict[str, Any]) -> EvidenceFile:
    from kvrecords.dataset.bench import MAX_BENCH_BYTES

    path = folder / entry["file"]
    if escapes_root(folder, path):
        return _unread(position, display, "a symlink leading outside the record's evidence folder")
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return _unread(position, display, "no such file; commit it or remove its entry")
    except OSError as error:
        return _unread(position, display, f"cannot read the file: {error.strerror or error}")
    if not stat.S_ISREG(status.st_mode):
        return _unread(position, display, "not a regular file")
    if status.st_size > MAX_BENCH_BYTES:
        return _unread(
            position,
            display,
            f"the file is {status.st_size:,} bytes; an evidence file is at most "
            f"{MAX_BENCH_BYTES:,} bytes (keep the tool's summary, not its per-request dump)",
        )
    try:
        raw = path.read_bytes()
    except OSError as error:
        return _unread(position, display, f"cannot read the file: {error.strerror or error}")
    import hashlib

    digest = hashlib.sha256(raw).hexdigest()
    runs, problem = _parsed(raw, entry)
    return EvidenceFile(position, display, digest, runs, problem)


def _parsed(raw: bytes, entry: dict[str, Any]) -> tuple[list[BenchRun] | None, str | None]:
    from kvrecords.dataset.bench import BenchFileError, known_formats

    if not raw.strip():
        return None, "the file is empty"
    formats = known_formats()
    reader = formats.get(entry["format"])
    if reader is None:
        return None, f"unknown format {entry['format']!r}; known: {', '.join(sorted(formats))}"
    try:
        return reader.read(raw, entry["file"]), None
    except BenchFileError as error:
        return None, f"{error.line}:{error.column}: {error.message}" + (
            f" at {error.key}" if error.key else ""
        )
    except RecursionError:
        return None, "nested too deeply to read"


def _unread(position: int, display: str, problem: str) -> EvidenceFile:
    return EvidenceFile(position, display, None, None, problem)
