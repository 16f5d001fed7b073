"""Checks every dataset file gets, whatever its kind, once ``dataset.document`` has read it:
the schema modeline, and an id that matches its path and no other file's."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import NamedTuple

from kvrecords.dataset.document import Document
from kvrecords.dataset.layout import SCHEMA_DIR, DatasetFile, IdClaims
from kvrecords.dataset.schemas import schema_problems
from kvrecords.problems import Problem, Rule

SCHEMA_MODELINE = Rule(
    "KV102",
    "schema-modeline",
    "The file starts with the yaml-language-server modeline pointing at its schema.",
    "Editors use the modeline to autocomplete and check fields while the contributor types.",
    "# yaml-language-server: $schema=../../schema/record.schema.json",
    "# a record without the modeline\n# KV102 first line must be '# yaml-language-server: $schema=...'",
)

ID_PATH = Rule(
    "KV201",
    "id-path",
    "A record's id is kv-efficiency/<slug> for the file records/kv-efficiency/<slug>.yaml; a model's id is its file name.",
    "Ids are how records are linked and cited; a mismatch means two names for one thing.",
    "id: kv-efficiency/example   (in records/kv-efficiency/example.yaml)",
    "id: kv-efficiency/other   (in records/kv-efficiency/example.yaml)\n# KV201 id does not match the path",
)

DUPLICATE_ID = Rule(
    "KV202",
    "duplicate-id",
    "No two records or models share an id, compared case-insensitively.",
    "Case-insensitive file systems (macOS, Windows) would merge them, and readers cannot "
    "tell them apart.",
    "records/kv-efficiency/a.yaml and records/kv-efficiency/b.yaml",
    "records/kv-efficiency/a.yaml and records/kv-efficiency/A.yaml\n# KV202 same id as ...",
)

MODELINE_PREFIX = "# yaml-language-server: $schema="


def modeline_problems(root: Path, document: Document, dataset_file: DatasetFile) -> list[Problem]:
    """KV102: the first line points editors at the file's schema."""
    folder = os.path.dirname(dataset_file.display)
    expected = _expected_modeline(root, dataset_file.kind, folder)
    first_line = document.text.split("\n", 1)[0].rstrip()
    if first_line == expected:
        return []
    message = f"first line must be {expected!r} so editors check the file"
    return [SCHEMA_MODELINE.problem(document.path, 1, 1, message)]


@functools.lru_cache(maxsize=64)
def _expected_modeline(root: Path, kind: str, folder: str) -> str:
    """The modeline of a ``kind`` file in ``folder`` (relative to the root): worked out once a
    folder, since every file in it has the same one."""
    schema = root / SCHEMA_DIR / f"{kind}.schema.json"
    return MODELINE_PREFIX + Path(os.path.relpath(schema, root / folder)).as_posix()


def identity_problems(
    document: Document, dataset_file: DatasetFile, claims: IdClaims
) -> list[Problem]:
    """KV201 (id matches path) and KV202 (no other file claims the same id)."""
    stated = document.data.get("id")
    if not isinstance(stated, str):
        return []
    problems = []
    if stated != dataset_file.expected_id:
        message = f"id {stated!r} does not match the path; it must be {dataset_file.expected_id!r}"
        problems.append(document.problem(ID_PATH, ("id",), message))
    clashes = sorted(
        {
            other
            for claimed in (stated, dataset_file.expected_id)
            for other in claims.claimants(dataset_file.kind, claimed)
            if other != dataset_file.display
        }
    )
    if clashes:
        message = f"id {stated!r} is also claimed by {', '.join(clashes)} (ids compare case-insensitively)"
        problems.append(document.problem(DUPLICATE_ID, ("id",), message))
    return problems


class FileProblems(NamedTuple):
    """What a model or hardware file gets before its figures are judged."""

    problems: list[Problem]  # KV102, the schema's errors, then KV201 and KV202
    schema_holds: bool  # the data has the shape the later checks read
    identity_holds: bool  # its id matches its path and no other file claims it


def file_problems(
    root: Path, document: Document, dataset_file: DatasetFile, claims: IdClaims
) -> FileProblems:
    """The modeline, the schema of the file's kind and, once the schema holds, the id."""
    problems = modeline_problems(root, document, dataset_file)
    schema_errors = schema_problems(document, dataset_file.kind, root / SCHEMA_DIR)
    if schema_errors:
        return FileProblems(problems + schema_errors, False, False)
    identity = identity_problems(document, dataset_file, claims)
    return FileProblems(problems + identity, True, not identity)
