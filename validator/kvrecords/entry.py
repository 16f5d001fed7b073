"""The ``kvrecords`` entry point: exit codes, and pre-commit's call without click.

``kvrecords validate FILE...`` is what pre-commit runs on every commit, so it runs here without
importing click (about a seventh of that run). Every other command line, including any option
or ``--help``, goes through click in ``cli.py``. Exit codes: 0 clean, 1 problems found, 2 usage
or internal error; never a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn


def main() -> None:
    args = sys.argv[1:]
    try:
        if args[:1] == ["validate"] and not any(arg.startswith("-") for arg in args[1:]):
            sys.exit(run_validate([Path(arg) for arg in args[1:]]))
        from kvrecords.cli import run_click

        run_click()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(2)
    except Exception as error:
        fail(f"internal error: {type(error).__name__}: {error}")


def run_validate(paths: list[Path], output_format: str | None = None, strict: bool = False) -> int:
    """``kvrecords validate``: print the problems; the exit code."""
    from kvrecords.reporters import REPORTERS
    from kvrecords.validate import UsageError, validate

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
    from kvrecords.dataset import find_root

    root = find_root(Path.cwd())
    if root is None:
        fail(
            f"{Path.cwd()} is not inside a dataset (no schema/record.schema.json and models/ above it)"
        )
    return root


def fail(message: str) -> NoReturn:
    """Exit 2 with a message: a usage error, or a failure that is not the dataset's."""
    print(f"kvrecords: {message}", file=sys.stderr)
    sys.exit(2)
