"""Hostile and malformed input: a located problem and exit 1, never a traceback, a hang,
code run, a network connection or a changed file."""

from __future__ import annotations

import hashlib
import re
import socket
import time
from pathlib import Path

import pytest

from conftest import run_cli
from kvrecords.dataset.document import MAX_DEPTH, MAX_FILE_BYTES, parse_document
from kvrecords.runner.validate import validate

REPO = Path(__file__).resolve().parents[1]
SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")
SEED_ID = "kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090"


def record_text(dataset: Path, slug: str) -> str:
    return (dataset / SEED).read_text().replace(SEED_ID, f"kv-efficiency/{slug}")


def write(dataset: Path, slug: str, content: bytes | str) -> Path:
    path = dataset / "records" / "kv-efficiency" / f"{slug}.yaml"
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


HOSTILE: dict[str, tuple[bytes | str, str]] = {
    "tab-indentation": ("id: x\nmodel:\n\tqwen3-8-27b\n", "KV001"),
    "unclosed-quote": ("id: 'kv-efficiency/x\n", "KV001"),
    "duplicate-key": ("id: a\nid: b\n", "KV002"),
    "billion-laughs": (
        "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" * 1,
        "KV003",
    ),
    "python-apply": (
        "id: !!python/object/apply:os.system ['echo pwned > /tmp/kvrecords-pwned']\n",
        "KV004",
    ),
    "python-name": ("id: !!python/name:os.system\n", "KV004"),
    "local-tag": ("id: !custom x\n", "KV004"),
    "non-utf8": (b"id: \xc3\x28\n", "KV005"),
    "bom": (b"\xef\xbb\xbfid: x\n", "KV005"),
    "utf16": ("id: x\n".encode("utf-16"), "KV005"),
    "empty": ("", "KV006"),
    "only-comment": ("# nothing here\n", "KV006"),
    "document-list": ("id: a\n---\nid: b\n", "KV006"),
    "scalar-document": ("just a string\n", "KV006"),
    "complex-key": ("? [a, b]\n: 1\n", "KV006"),
    "deep-nesting": ("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n", "KV007"),
    "deep-mappings": (
        "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, MAX_DEPTH + 5)),
        "KV007",
    ),
    "huge-file": ("id: x\nnotes: '" + "a" * (MAX_FILE_BYTES + 10) + "'\n", "KV007"),
    "nan": ("confidence: .nan\n", "KV008"),
    "infinity": ("confidence: -.inf\n", "KV008"),
    "overflowing-float": ("confidence: 1e400\n", "KV008"),
    "absurd-integer": ("confidence: " + "9" * 5000 + "\n", "KV008"),
    "null-bytes": (b"id: x\x00\n", "KV001"),
    # characters YAML 1.1 readers (libyaml) take for line breaks and YAML 1.2 readers for text
    "line-separator-in-a-flow-sequence": ("id: x\nflags: [--a, 'b\u2028c']\n", "KV005"),
    "paragraph-separator-hiding-a-key": ("id: x\n# note\u2029confidence: 1\n", "KV005"),
    "next-line-in-plain-text": ("id: x\nnotes: a\x85b\n", "KV005"),
    "hexadecimal-number": ("confidence: 0x1\n", "KV008"),
    "octal-number": ("confidence: 0o1\n", "KV008"),
    "long-hexadecimal-number": ("confidence: 0x" + "f" * 100_000 + "\n", "KV008"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_gets_a_located_problem_and_exit_1(name: str, dataset: Path) -> None:
    content, code = HOSTILE[name]
    path = write(dataset, name, content)
    before = snapshot(dataset)
    result = run_cli("validate", str(path.relative_to(dataset)), cwd=dataset)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert re.match(rf"^records/kv-efficiency/{name}\.yaml:\d+:\d+: {code} ", first), first
    assert snapshot(dataset) == before
    assert not Path("/tmp/kvrecords-pwned").exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_fmt_on_a_hostile_file_exits_1_with_its_place_and_changes_nothing(
    name: str, seed_dataset: Path
) -> None:
    dataset = seed_dataset
    content, code = HOSTILE[name]
    path = write(dataset, name, content)
    before = snapshot(dataset)
    for args in (["fmt", "--check"], ["fmt"], ["fmt", str(path.relative_to(dataset))]):
        result = run_cli(*args, cwd=dataset)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stdout + result.stderr
        assert "internal error" not in result.stdout + result.stderr
        assert re.search(
            rf"^records/kv-efficiency/{re.escape(name)}\.yaml:\d+:\d+: {code} ", result.stdout, re.M
        ), result.stdout
        assert snapshot(dataset) == before


@pytest.mark.parametrize(
    ("old", "new", "decimal"),
    [
        ("tokens_not_recomputed: 140250", "tokens_not_recomputed: 0x223DA", "140250"),
        ("bytes_per_token: 65536", "bytes_per_token: 0o200000", "65536"),
        ("context_tokens: 150000", "context_tokens: 0x249F0", "150000"),
    ],
)
def test_a_derived_number_in_hexadecimal_or_octal_is_refused_at_its_place(
    dataset: Path, old: str, new: str, decimal: str
) -> None:
    path = write(dataset, "hex", record_text(dataset, "hex").replace(old, new, 1))
    result = run_cli("validate", str(path.relative_to(dataset)), cwd=dataset)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    text = path.read_text()
    offset = text.index(new.split(": ")[1])
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"records/kv-efficiency/hex.yaml:{line}:{column}: KV008 "), first
    assert f"write it in decimal ({decimal})" in first
    assert old.split(":")[0] in first


WRONG_VALUES = {
    "string-with-separators": (
        ("measured_ttft_ms_at_ctx: 2300", "measured_ttft_ms_at_ctx: '2,300'"),
        "KV101",
    ),
    "boolean-ttft": (("measured_ttft_ms_at_ctx: 2300", "measured_ttft_ms_at_ctx: yes"), "KV101"),
    "negative-context": (("context_tokens: 150000", "context_tokens: -150000"), "KV101"),
    "zero-warm-ttft": (("value: 2300\n", "value: 0\n"), "KV802"),
    # JSON Schema's integer admits 0.0; it is compared as 0 bytes, never read as a quantity
    "float-bytes-at-context": (("  kv_at_context: 9.16 GiB", "  kv_at_context: 0.0"), "KV302"),
    "zero-warm-ttft-about": (("value: 2300\n", "value: {about: 0}\n"), "KV802"),
    "unknown-key": (("confidence: 0.62", "confidence: 0.62\nverified: true"), "KV101"),
    "model-path": (("model: qwen3-8-27b", "model: ../../etc/passwd"), "KV203"),
    "model-absolute": (("model: qwen3-8-27b", "model: /etc/passwd"), "KV203"),
    "missing-model": (("model: qwen3-8-27b", "model: qwen3-8-28b"), "KV203"),
    "id-not-path": (("id: kv-efficiency/id-not-path", "id: kv-efficiency/elsewhere"), "KV201"),
}


@pytest.mark.parametrize("name", sorted(WRONG_VALUES))
def test_wrong_values(name: str, dataset: Path) -> None:
    (old, new), code = WRONG_VALUES[name]
    text = record_text(dataset, name)
    assert old in text
    path = write(dataset, name, text.replace(old, new, 1))
    problems = validate(dataset, [path]).problems
    assert code in {p.code for p in problems}, problems
    assert all(p.line >= 1 and p.column >= 1 for p in problems)


def test_the_seed_read_back_is_still_valid_after_hostile_neighbours(dataset: Path) -> None:
    # per-file failures never stop the rest of the run
    for name, (content, _) in HOSTILE.items():
        write(dataset, name, content)
    (dataset / SEED).write_text((dataset / SEED).read_text().replace("stated: 23x", "stated: 24x"))
    problems = validate(dataset).problems
    assert ("KV402", SEED.as_posix()) in {(p.code, p.path) for p in problems}
    assert {p.path for p in problems} >= {f"records/kv-efficiency/{name}.yaml" for name in HOSTILE}


def test_symlinks_leading_out_of_the_tree(dataset: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("id: secret-contents\n")
    (dataset / "records/kv-efficiency/leak.yaml").symlink_to(secret)
    (dataset / "models/leaky-model.yaml").symlink_to(secret)
    result = run_cli("validate", cwd=dataset)
    assert result.returncode == 1
    assert (
        "records/kv-efficiency/leak.yaml:1:1: KV009 symlink leads outside the dataset"
        in result.stdout
    )
    assert "models/leaky-model.yaml:1:1: KV009 symlink leads outside the dataset" in result.stdout
    assert "secret-contents" not in result.stdout


def test_two_files_with_the_same_id(dataset: Path) -> None:
    write(dataset, "copy", (dataset / SEED).read_text())
    problems = validate(dataset).problems
    assert {(p.code, p.path) for p in problems} == {
        ("KV201", "records/kv-efficiency/copy.yaml"),
        ("KV202", "records/kv-efficiency/copy.yaml"),
    }


def test_model_groups_that_do_not_add_up(dataset: Path) -> None:
    model = dataset / "models/qwen3-8-27b.yaml"
    model.write_text(model.read_text().replace("layers: 48", "layers: 47"))
    problems = validate(dataset).problems
    assert ("KV601", "models/qwen3-8-27b.yaml") in {(p.code, p.path) for p in problems}
    assert ("KV204", SEED.as_posix()) in {(p.code, p.path) for p in problems}


def test_no_network_is_touched(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the validator opened a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert validate(dataset).problems == []


def test_no_eval_exec_or_unsafe_loaders_in_the_package() -> None:
    source = "\n".join(p.read_text() for p in (REPO / "validator" / "kvrecords").rglob("*.py"))
    assert not re.search(r"(?<![\w.])(eval|exec|compile)\(", source)
    assert (
        "yaml.load(" not in source and "typ='unsafe'" not in source and 'typ="unsafe"' not in source
    )
    assert "pickle" not in source and "marshal" not in source


def test_parse_document_never_constructs_objects() -> None:
    document = parse_document(b"a: !!python/object/new:os.system [echo]\n", "x.yaml")
    assert isinstance(document, list) and document[0].code == "KV004"


def test_file_names_with_line_breaks_do_not_confuse_the_id_check(dataset: Path) -> None:
    odd = dataset / "records/kv-efficiency/two\nlines.yaml"
    odd.write_text((dataset / SEED).read_text())
    twin = dataset / "records/kv-efficiency/Two\nLines.yml"
    twin.write_text((dataset / SEED).read_text())
    problems = validate(dataset, [odd, dataset / SEED]).problems
    clashes = {p.path: p.message for p in problems if p.code == "KV202"}
    assert set(clashes) == {"records/kv-efficiency/two\nlines.yaml"}
    # claimed by the seed (the id it states) and by its case twin (the id its path gives)
    assert SEED.as_posix() in clashes["records/kv-efficiency/two\nlines.yaml"]
    assert "Two\nLines.yml" in clashes["records/kv-efficiency/two\nlines.yaml"]


ADVERSARIAL_PROSE = {
    "chain-without-result": ("= ", "1 x "),
    "percentages": ("", "1% x "),
    "quotients": ("", "1 / "),
    "parenthesised-sums": ("", "(1 + "),
    "wrong-claims": ("", "1 x 1 = 2. "),
    "weak-verbs": ("", "2 x 3 is 7, "),
    "space-groups": ("", "1 000 x "),
    "apostrophe-groups-in-words": ("", "1'000 times "),
    "changes": ("", "from 1 to 2 = 3 %, "),
    "ratios-in-words": ("", "9 GiB, twice 4 GiB, "),
    "decimal-commas": ("", "1,5 x 2,000 = 3, "),
    "tilde-conversions": ("", "9.16 GiB ~ 19.84 GB, "),
    "powers-of-ten": ("", "2 x 3 = 6 x 10^0 B "),
    "per-token-figures": ("", "1 B/token, "),
}


def folded(text: str, width: int = 90) -> str:
    """``text`` as the lines of a folded block scalar, broken at spaces."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) >= width:
            lines.append(line)
            line = ""
        line += f" {word}" if line else word
    return "".join(f"  {line}\n" for line in [*lines, line])


@pytest.mark.parametrize("name", sorted(ADVERSARIAL_PROSE))
def test_a_record_of_adversarial_prose_up_to_the_size_cap_is_checked_in_seconds(
    name: str, dataset: Path
) -> None:
    text = record_text(dataset, name)
    first, piece = ADVERSARIAL_PROSE[name]
    room = MAX_FILE_BYTES - len(text.encode()) - 1000
    prose = folded(first + piece * (room * 95 // 100 // len(piece)))  # indentation takes 3 %
    path = write(dataset, name, text.replace("notes: >-\n", f"notes: >-\n{prose}", 1))
    assert 500_000 < path.stat().st_size <= MAX_FILE_BYTES
    started = time.monotonic()
    result = run_cli("validate", str(path.relative_to(dataset)), cwd=dataset)
    # under 2 s on the 2-core reference machine; the bound leaves room for a busy one
    assert time.monotonic() - started < 30
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_path_outside_the_dataset_is_a_usage_error(seed_dataset: Path, tmp_path: Path) -> None:
    # a pre-commit run from the wrong folder must not report "no problems" for files it never read
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("id: x\n")
    result = run_cli("validate", str(outside), cwd=seed_dataset)
    assert result.returncode == 2
    assert f"{outside}: outside the dataset at" in result.stderr


def test_kv_from_a_named_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    import os

    from conftest import REPO, spawn_cli

    fifo = tmp_path / "startup.log"
    os.mkfifo(fifo)
    result = spawn_cli("kv", "--from-log", str(fifo), cwd=REPO)  # its timeout fails a hang
    assert result.returncode == 1  # as any log that cannot be read
    assert "not a regular file" in result.stderr and "Traceback" not in result.stderr


def test_a_reader_that_stops_early_ends_the_output_quietly(seed_dataset: Path) -> None:
    import subprocess
    import sys

    code = "from kvrecords.cli.main import main; raise SystemExit(main())"
    with subprocess.Popen(
        [sys.executable, "-c", code, "rules", "--markdown"],
        cwd=seed_dataset,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # as `kvrecords rules --markdown | head -0` would
        errors = process.stderr.read().decode()
        assert process.wait(timeout=120) == 1
    assert errors == ""


def test_kv_and_explain_do_not_follow_a_symlink_out_of_the_dataset(
    seed_dataset: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("id: secret-contents\n")
    (seed_dataset / "models/leaky.yaml").symlink_to(secret)
    (seed_dataset / "records/kv-efficiency/leak.yaml").symlink_to(secret)
    for args in (["kv", "leaky"], ["explain", "records/kv-efficiency/leak.yaml"]):
        result = run_cli(*args, cwd=seed_dataset)
        assert result.returncode == 2, args
        assert "symlink leading outside the dataset" in result.stderr
        assert "secret-contents" not in result.stdout + result.stderr
