"""Shared helpers: a throwaway copy of the dataset to change freely."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def copy_dataset(destination: Path, *, with_records: bool = True) -> Path:
    """schema/, models/ and hardware/ of the repository (and its records) under ``destination``."""
    for folder in ("schema", "models", "hardware"):
        shutil.copytree(REPO / folder, destination / folder)
    if with_records:
        shutil.copytree(REPO / "records", destination / "records")
    else:
        (destination / "records" / "kv-efficiency").mkdir(parents=True)
    return destination


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The kvrecords command as a user runs it (outside GitHub Actions unless ``env`` says so)."""
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environment.update(env or {})
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from kvrecords.cli.main import main; raise SystemExit(main())",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A full copy of the dataset (records included)."""
    return copy_dataset(tmp_path / "dataset")


@pytest.fixture
def empty_dataset(tmp_path: Path) -> Path:
    """The schemas, models and hardware, with no records."""
    return copy_dataset(tmp_path / "dataset", with_records=False)
