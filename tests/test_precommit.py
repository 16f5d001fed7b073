"""End to end through real git and real pre-commit: a wrong number is rejected at commit time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset, with_docs

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SEED = "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"


def git(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """git with stdout and stderr together (hooks write to either)."""
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        timeout=300,
    )


def without_this_environment(path: str) -> str:
    """PATH as a new shell has it: no activated environment, so no kvrecords on it."""
    here = Path(sys.executable).parent
    return os.pathsep.join(p for p in path.split(os.pathsep) if p and Path(p) != here)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = copy_dataset(tmp_path / "repo")
    shutil.copy(REPO / ".pre-commit-config.yaml", root)
    (root / "tools").mkdir()
    shutil.copy(REPO / "tools" / "kvrecords", root / "tools")
    with_docs(root)
    # `make validate` leaves the environment in .venv; the hooks find it there, offline.
    (root / ".venv").symlink_to(Path(sys.prefix))
    (root / ".gitignore").write_text("/.venv\n")
    env = {
        **os.environ,
        "PATH": without_this_environment(os.environ.get("PATH", "")),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "Contributor",
        "GIT_AUTHOR_EMAIL": "contributor@example.org",
        "GIT_COMMITTER_NAME": "Contributor",
        "GIT_COMMITTER_EMAIL": "contributor@example.org",
    }
    env.pop("GITHUB_ACTIONS", None)
    env.pop("VIRTUAL_ENV", None)
    assert shutil.which("kvrecords", path=env["PATH"]) is None
    assert git(root, "init", "-q", "-b", "main", env=env).returncode == 0
    assert git(root, "add", "-A", env=env).returncode == 0
    assert git(root, "commit", "-q", "-m", "dataset", env=env).returncode == 0
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return root, env


def test_wrong_record_is_rejected_and_the_corrected_one_commits(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    text = (root / SEED).read_text().replace("vllm-qwen38-27b-apc-150k-rtx5090", "apc-copy")
    new = root / "records/kv-efficiency/apc-copy.yaml"
    new.write_text(text.replace("bytes_per_token: 65536", "bytes_per_token: 131072", 1))
    git(root, "add", str(new), env=env)
    rejected = git(root, "commit", "-m", "add a record", env=env)
    assert rejected.returncode != 0
    assert (
        "records/kv-efficiency/apc-copy.yaml:14:20: KV301 bytes_per_token is 131,072; models/qwen3-8-27b "
        "gives 16 layers x 4 kv heads x (256 + 256) x 2 B = 65,536 B/token"
    ) in rejected.stdout
    assert git(root, "log", "--oneline", env=env).stdout.count("\n") == 1

    new.write_text(text)
    git(root, "add", str(new), env=env)
    # The record passes; the dataset table gains its row, to be added to the commit.
    stopped = git(root, "commit", "-m", "add a record", env=env)
    assert stopped.returncode != 0
    assert "kvrecords validate" in stopped.stdout and "Passed" in stopped.stdout
    assert "wrote docs/dataset.md; add it to the commit: git add docs" in stopped.stdout
    git(root, "add", "docs", env=env)
    accepted = git(root, "commit", "-m", "add a record", env=env)
    assert accepted.returncode == 0, accepted.stdout


def test_a_model_change_is_checked_against_its_records(repo: tuple[Path, dict[str, str]]) -> None:
    root, env = repo
    model = root / "models/qwen3-8-27b.yaml"
    model.write_text(model.read_text().replace("kv_heads: 4", "kv_heads: 8"))
    git(root, "add", str(model), env=env)
    rejected = git(root, "commit", "-m", "change the model", env=env)
    assert rejected.returncode != 0
    assert f"{SEED}:" in rejected.stdout and "KV301" in rejected.stdout


def test_the_formatting_hook_rewrites_and_stops_the_commit(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    record = root / SEED
    record.write_text(
        record.read_text().replace(
            "    label: 150,000-token replay prompt, cache empty\n    role: baseline\n",
            "    role: baseline\n    label: 150,000-token replay prompt, cache empty\n",
        )
    )
    git(root, "add", str(record), env=env)
    first = git(root, "commit", "-m", "reorder", env=env)
    assert first.returncode != 0 and "formatted records/" in first.stdout
    assert "    label: 150,000-token replay prompt, cache empty\n    role: baseline\n" in (
        record.read_text()
    )


def test_the_docs_hook_regenerates_the_dataset_table(repo: tuple[Path, dict[str, str]]) -> None:
    root, env = repo
    text = (root / SEED).read_text().replace("vllm-qwen38-27b-apc-150k-rtx5090", "apc-copy")
    (root / "records/kv-efficiency/apc-copy.yaml").write_text(text)
    git(root, "add", "records", env=env)
    stopped = git(root, "commit", "-m", "add a record", env=env)
    assert stopped.returncode != 0
    assert (
        "kvrecords docs" in stopped.stdout and "files were modified by this hook" in stopped.stdout
    )
    assert "wrote docs/dataset.md; add it to the commit: git add docs" in stopped.stdout
    assert "records/kv-efficiency/apc-copy.yaml" in (root / "docs/dataset.md").read_text()
    git(root, "add", "docs", env=env)
    accepted = git(root, "commit", "-m", "add a record", env=env)
    assert accepted.returncode == 0, accepted.stdout


def test_without_the_environment_the_hook_says_how_to_install(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    (root / ".venv").unlink()
    record = root / SEED
    record.write_text(record.read_text() + "# a comment\n")
    git(root, "add", str(record), env=env)
    stopped = git(root, "commit", "-m", "a comment", env=env)
    assert stopped.returncode != 0
    assert (
        "kvrecords is not installed: run 'make validate' (it creates .venv), then commit again"
    ) in stopped.stdout
