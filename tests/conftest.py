"""Shared helpers: a small dataset built for the tests, copied to change freely, and the
``kvrecords`` command run in this process (``run_cli``) or as its own process (``spawn_cli``).

The tests read ``tests/dataset/records`` (a fixed set of records chosen for what the tests
exercise), never the live ``records/``: correcting a live record must not break an unrelated
test. The live dataset is checked by ``make validate`` and by ``test_live_dataset.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvrecords.cli.main import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE_DATASET = REPO / "tests" / "dataset"
SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")


def copy_dataset(destination: Path, *, with_records: bool = True) -> Path:
    """schema/, models/ and hardware/ of the repository, and the test dataset's records, under
    ``destination``."""
    for folder in ("schema", "models", "hardware"):
        shutil.copytree(REPO / folder, destination / folder)
    if with_records:
        shutil.copytree(FIXTURE_DATASET / "records", destination / "records")
    else:
        (destination / "records" / "kv-efficiency").mkdir(parents=True)
    return destination


@contextlib.contextmanager
def _environment(cwd: Path, env: dict[str, str] | None) -> Iterator[None]:
    """The working directory and environment a user's shell would give the command."""
    saved_cwd, saved_env = Path.cwd(), dict(os.environ)
    os.environ.pop("GITHUB_ACTIONS", None)
    os.environ.update(env or {})
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The kvrecords command run in this process through ``main(argv)`` (outside GitHub Actions
    unless ``env`` says so): its exit code and what it printed, as a process would give them."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        _environment(cwd, env),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        code = main(list(args))
    return subprocess.CompletedProcess(list(args), code, stdout.getvalue(), stderr.getvalue())


def spawn_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The kvrecords command as its own process, for the tests where the process is the point
    (start-up, exit codes seen by a shell, worker processes)."""
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
    """A copy of the test dataset (records included)."""
    return copy_dataset(tmp_path / "dataset")


@pytest.fixture
def seed_dataset(tmp_path: Path) -> Path:
    """The seed record alone, with its model and accelerator: for the tests that run a whole
    dataset command once per case, where more files would add time and no coverage."""
    root = tmp_path / "dataset"
    shutil.copytree(REPO / "schema", root / "schema")
    for folder, name in (("models", "qwen3-8-27b"), ("hardware", "rtx-5090")):
        (root / folder).mkdir()
        shutil.copy(REPO / folder / f"{name}.yaml", root / folder)
    (root / SEED).parent.mkdir(parents=True)
    shutil.copy(FIXTURE_DATASET / SEED, root / SEED)
    return root


@pytest.fixture
def empty_dataset(tmp_path: Path) -> Path:
    """The schemas, models and hardware, with no records."""
    return copy_dataset(tmp_path / "dataset", with_records=False)


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the test dataset, with its docs, for the tests that only read it (never
    change it)."""
    return with_docs(copy_dataset(tmp_path_factory.mktemp("fixture") / "dataset"))


def with_docs(root: Path) -> Path:
    """docs/ in a copied dataset: the test dataset's coverage notes, the repository's other
    pages, and the generated ones made current for the copy."""
    from kvrecords.tools.docs import write_pages

    shutil.copytree(FIXTURE_DATASET / "docs", root / "docs", dirs_exist_ok=True)
    for page in (REPO / "docs").iterdir():
        if page.is_file() and not (root / "docs" / page.name).exists():
            shutil.copy(page, root / "docs" / page.name)
    write_pages(root)
    return root
