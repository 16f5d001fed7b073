"""Messages speak YAML and English: null not None, '1 file' not '1 files', words not cut."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_null_is_called_null_and_one_file_is_one_file(dataset: Path) -> None:
    _edit(dataset / SEED, "confidence: 0.62", "confidence: null")
    done = run_cli("validate", str(SEED), cwd=dataset)
    assert done.returncode == 1
    assert "confidence: null is not of type 'number'" in done.stdout
    assert "None" not in done.stdout
    assert done.stdout.endswith("1 file checked: 1 error, 0 warnings in 1 file\n")


def test_a_placeholder_is_quoted_up_to_a_word_end(dataset: Path) -> None:
    placeholder = "TODO: fill from the source or give the reason it is not stated"
    _edit(dataset / SEED, "confidence_reason: >-\n", f"confidence_reason: >-\n  {placeholder}\n")
    done = run_cli("validate", str(SEED), cwd=dataset)
    assert (
        "KV206 confidence_reason is still a placeholder: "
        "'TODO: fill from the source or give the reason it is not...'"
    ) in done.stdout, done.stdout
