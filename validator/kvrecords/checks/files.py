"""Checks every dataset file gets, whatever its kind: reading it safely, the schema modeline,
and an id that matches its path and no other file's."""

from __future__ import annotations

import os
from pathlib import Path

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import SCHEMA_DIR, DatasetFile, IdClaims, escapes_root
from kvrecords.problems import Problem

MODELINE_PREFIX = "# yaml-language-server: $schema="


def read_dataset_file(root: Path, dataset_file: DatasetFile) -> Document | list[Problem]:
    """Read a record, model or hardware file; a symlink out of the tree is refused unread."""
    if escapes_root(root, dataset_file.path):
        return [
            Problem(
                dataset_file.display,
                1,
                1,
                "KV009",
                "symlink leads outside the dataset; commit the file itself",
            )
        ]
    return read_document(dataset_file.path, dataset_file.display)


def modeline_problems(root: Path, document: Document, dataset_file: DatasetFile) -> list[Problem]:
    """KV102: the first line points editors at the file's schema."""
    schema = root / SCHEMA_DIR / f"{dataset_file.kind}.schema.json"
    expected = MODELINE_PREFIX + Path(os.path.relpath(schema, dataset_file.path.parent)).as_posix()
    first_line = document.text.split("\n", 1)[0].rstrip()
    if first_line == expected:
        return []
    return [
        Problem(
            document.path,
            1,
            1,
            "KV102",
            f"first line must be {expected!r} so editors check the file",
        )
    ]


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
        problems.append(document.problem("KV201", ("id",), message))
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
        problems.append(document.problem("KV202", ("id",), message))
    return problems
