"""Messages speak YAML and English: null not None, '1 file' not '1 files', words not cut."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import run_cli
from kvrecords.dataset.document import Document, dotted, parse_document

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


def test_a_listed_field_the_record_does_not_have_is_called_no_such_field(dataset: Path) -> None:
    # results is format 1's; format 2 has no such field, so "which is not null" would mislead
    _edit(
        dataset / SEED,
        "not_stated:\n",
        "not_stated:\n  - field: results.ttft_ms\n    reason: Not given.\n"
        "  - field: methodology.engine.versoin\n    reason: Not given.\n"
        "  - field: methodology.source\n    reason: Not given.\n",
    )
    done = run_cli("validate", str(SEED), cwd=dataset)
    lines = [line for line in done.stdout.splitlines() if " KV205 " in line]
    assert lines == [
        f"{SEED}:190:12: KV205 not_stated lists results.ttft_ms, but the file has no such field",
        f"{SEED}:192:12: KV205 not_stated lists methodology.engine.versoin, but the file has no "
        "such field; did you mean methodology.engine.version?",
        f"{SEED}:194:12: KV205 not_stated lists methodology.source, which is not null",
    ], done.stdout


def test_a_byte_unit_on_a_ratio_is_shown_in_bytes_not_as_zero(dataset: Path) -> None:
    # 9,830,400,000 / 4,079,616,000 = 2.4096 (to four decimals): a ratio, read as 2.4096 B,
    # which in GiB shows as 0.00
    _edit(
        dataset / SEED,
        "GQA-4 cache would be 262,144 B/token and 36.6 GiB, which would not.",
        "GQA-4 cache would be 262,144 B/token and 36.6 GiB, which would not. Per user that is "
        "9,830,400,000 / 4,079,616,000 = 2.41 GiB.",
    )
    done = run_cli("validate", str(SEED), cwd=dataset)
    assert (
        "KV501 prose claims 9,830,400,000 / 4,079,616,000 = 2.41 GiB; it is 2.4096 B, not GiB "
        "(a quotient of two sizes or of plain numbers is a ratio, not bytes)"
    ) in done.stdout, done.stdout
    assert "0.00 GiB" not in done.stdout


def test_a_drafts_first_validate_lists_every_field_left_to_fill(dataset: Path) -> None:
    """The schema's one refusal (confidence, still to rate) does not hide the placeholders."""
    options = ["--slug", "draft", "--model", "qwen3-8b", "--context", "512", "--engine", "vllm"]
    assert run_cli("new", *options, cwd=dataset).returncode == 0
    draft = "records/kv-efficiency/draft.yaml"
    done = run_cli("validate", draft, cwd=dataset)
    lines = done.stdout.splitlines()[:-1]
    assert [line for line in lines if " KV101 " in line] == [
        f"{draft}:49:13: KV101 confidence: null is not of type 'number'"
    ]
    # every field the draft leaves a TODO in is reported, at its own line
    document = parse_document((dataset / draft).read_bytes(), draft)
    assert isinstance(document, Document)
    todos = {
        dotted(path) for path, value in document.leaves.items() if str(value).startswith("TODO")
    }
    reported = {line.split(" ")[2] for line in lines if " KV206 " in line}
    assert reported == todos
    assert all(re.match(rf"{draft}:\d+:\d+: KV", line) for line in lines)
    total = 1 + len(todos)
    assert done.stdout.endswith(f"1 file checked: {total} errors, 0 warnings in 1 file\n")
