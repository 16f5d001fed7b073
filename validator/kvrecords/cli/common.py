"""What every command shares: the dataset root (clean or not), usage failures, and the validate
run itself. No click here: ``main`` runs pre-commit's validate through this module alone."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn


def run_validate(paths: list[Path], output_format: str | None = None, strict: bool = False) -> int:
    """``kvrecords validate``: print the problems; the exit code."""
    from kvrecords.runner.reporters import REPORTERS
    from kvrecords.runner.validate import UsageError, validate

    if output_format is None:
        output_format = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    root = dataset_root()
    try:
        outcome = validate(root, paths or None)
    except UsageError as error:
        fail(str(error))
    print(REPORTERS[output_format](outcome.problems, outcome.files_checked))
    failing = [p for p in outcome.problems if p.severity == "error" or strict]
    return 1 if failing else 0


def dataset_root() -> Path:
    """The dataset the working folder is in (exit 2 outside one)."""
    from kvrecords.dataset.layout import find_root

    root = find_root(Path.cwd())
    if root is None:
        fail(
            f"{Path.cwd()} is not inside a dataset (no schema/record.schema.json and models/ above it)"
        )
    return root


def clean_root() -> Path:
    """The dataset root, once the dataset validates without errors (exit 1 otherwise): what
    export, site build and docs need, since they publish the recomputed figures."""
    from kvrecords.runner.reporters import counted
    from kvrecords.runner.validate import validate

    root = dataset_root()
    errors = [p for p in validate(root).problems if p.severity == "error"]
    if errors:
        print(
            f"kvrecords: the dataset has {counted(len(errors), 'error')}; run kvrecords validate",
            file=sys.stderr,
        )
        sys.exit(1)
    return root


def fail(message: str) -> NoReturn:
    """Exit 2 with a message: a usage error, or a failure that is not the dataset's."""
    print(f"kvrecords: {message}", file=sys.stderr)
    sys.exit(2)


def inside_dataset(root: Path, path: Path) -> Path:
    """``path``, when it does not lead outside the dataset through a symlink (exit 2 otherwise):
    what validate refuses as KV009, kv and explain do not read either."""
    from kvrecords.dataset.layout import escapes_root

    if path.is_symlink() and escapes_root(root.resolve(), path):
        fail(f"{path}: a symlink leading outside the dataset at {root}; not read")
    return path
