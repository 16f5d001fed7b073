"""End to end through real git and real pre-commit: a wrong number is rejected at commit time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset

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


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = copy_dataset(tmp_path / "repo")
    shutil.copy(REPO / ".pre-commit-config.yaml", root)
    env = {
        **os.environ,
        # the hooks run the kvrecords installed beside this interpreter, offline
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "Contributor",
        "GIT_AUTHOR_EMAIL": "contributor@example.org",
        "GIT_COMMITTER_NAME": "Contributor",
        "GIT_COMMITTER_EMAIL": "contributor@example.org",
    }
    env.pop("GITHUB_ACTIONS", None)
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
        "records/kv-efficiency/apc-copy.yaml:13:20: KV301 bytes_per_token is 131,072; models/qwen3-8-27b "
        "gives 16 layers x 4 kv heads x (256 + 256) x 2 B = 65,536 B/token"
    ) in rejected.stdout
    assert git(root, "log", "--oneline", env=env).stdout.count("\n") == 1

    new.write_text(text)
    git(root, "add", str(new), env=env)
    accepted = git(root, "commit", "-m", "add a record", env=env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "kvrecords validate" in accepted.stdout and "Passed" in accepted.stdout


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
            "results:\n  cold_ttft_ms: 53200\n  warm_ttft_ms: 2300\n",
            "results:\n  warm_ttft_ms: 2300\n  cold_ttft_ms: 53200\n",
        )
    )
    git(root, "add", str(record), env=env)
    first = git(root, "commit", "-m", "reorder", env=env)
    assert first.returncode != 0 and "formatted records/" in first.stdout
    assert "  cold_ttft_ms: 53200\n  warm_ttft_ms: 2300\n" in record.read_text()
