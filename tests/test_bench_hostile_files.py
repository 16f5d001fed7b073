"""Hostile result files for the GuideLLM, AIPerf and llm-d readers, and as kept evidence:
malformed, truncated, 100 MB, deeply nested, NaN, 1e308 and 1e400, wrong types, empty. Each is
a located error (a BenchFileError with its line, column or key; KV901 at the record's entry),
never a traceback, and each is read in time linear in its size."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset
from kvrecords.dataset.bench import MAX_BENCH_BYTES, BenchFileError, read_bench_file
from kvrecords.runner.validate import validate

FIXTURES = REPO / "tests" / "fixtures" / "bench"
GUIDELLM = FIXTURES / "guidellm" / "guidellm_report_v2.json"
AIPERF = FIXTURES / "aiperf" / "profile_export_aiperf.json"
LLM_D = FIXTURES / "llm-d" / "br_v0_2_example.yaml"
SECONDS = 10  # every hostile file below is refused in well under this on a loaded machine


def _guidellm(edit: Callable[[dict[str, object]], None]) -> bytes:
    report = json.loads(GUIDELLM.read_text())
    edit(report)
    return json.dumps(report).encode()


def _ttft(report: dict[str, object]) -> dict[str, object]:
    return report["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]  # type: ignore[index, no-any-return]


def _latency(report: dict[str, object]) -> dict[str, object]:
    return report["benchmarks"][0]["metrics"]["request_latency"]["successful"]  # type: ignore[index, no-any-return]


def _aiperf(text: str, new: str) -> bytes:
    original = AIPERF.read_text()
    assert text in original
    return original.replace(text, new, 1).encode()


def _llm_d(text: str, new: str) -> bytes:
    original = LLM_D.read_text()
    assert text in original
    return original.replace(text, new, 1).encode()


CASES: dict[str, tuple[str, bytes, str]] = {
    # name: (tool, the file's bytes, what the message says)
    "guidellm-malformed": ("guidellm", b'{"benchmarks": [}', "not JSON"),
    "guidellm-truncated": ("guidellm", GUIDELLM.read_bytes()[:3000], "not JSON"),
    "guidellm-empty": ("guidellm", b"", "empty"),
    "guidellm-nan": (
        "guidellm",
        GUIDELLM.read_bytes().replace(b"11.481165885925293", b"NaN", 1),
        "NaN",
    ),
    "guidellm-1e400": (
        "guidellm",
        GUIDELLM.read_bytes().replace(b"11.481165885925293", b"1e400", 1),
        "1e400",
    ),
    "guidellm-1e308-seconds": (
        "guidellm",
        _guidellm(lambda r: _latency(r).update(mean=1e308)),
        "1e+308 is not a figure a benchmark reports",
    ),
    "guidellm-1e308": (
        "guidellm",
        GUIDELLM.read_bytes().replace(b"11.481165885925293", b"1e308", 1),
        "not a figure a benchmark reports",
    ),
    "guidellm-wrong-type": (
        "guidellm",
        _guidellm(lambda r: _ttft(r).update(mean="fast")),
        "a number belongs here",
    ),
    "guidellm-boolean": ("guidellm", _guidellm(lambda r: _ttft(r).update(median=True)), "True"),
    "guidellm-not-a-list": ("guidellm", b'{"benchmarks": {"a": 1}}', "a list of benchmarks"),
    "guidellm-deep": ("guidellm", b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
    "aiperf-malformed": (
        "aiperf",
        b'{"time_to_first_token": {"unit": "ms", "avg": 1.0,,}}',
        "not JSON",
    ),
    "aiperf-truncated": ("aiperf", AIPERF.read_bytes()[:777], "not JSON"),
    "aiperf-empty": ("aiperf", b"", "empty"),
    "aiperf-nan": ("aiperf", _aiperf('"avg": 30.814987671875', '"avg": NaN'), "NaN"),
    "aiperf-infinity": (
        "aiperf",
        _aiperf('"avg": 30.814987671875', '"avg": -Infinity'),
        "Infinity",
    ),
    "aiperf-1e400": ("aiperf", _aiperf('"avg": 30.814987671875', '"avg": 1e400'), "1e400"),
    "aiperf-1e308": ("aiperf", _aiperf('"avg": 30.814987671875', '"avg": 1e308'), "not a figure"),
    "aiperf-wrong-type": ("aiperf", _aiperf('"avg": 30.814987671875', '"avg": [30.8]'), "not list"),
    "aiperf-not-an-object": ("aiperf", b"[1, 2, 3]", "a JSON object"),
    "aiperf-deep": ("aiperf", b'{"a": ' * 50_000 + b"1" + b"}" * 50_000, "nested deeper"),
    "llm-d-malformed": ("llm-d", b"version: '0.2'\nresults: [unclosed\n", "not YAML"),
    "llm-d-truncated": ("llm-d", LLM_D.read_bytes()[:2000], "aggregate"),
    "llm-d-empty": ("llm-d", b"", "empty"),
    "llm-d-nan": ("llm-d", _llm_d("mean: 2262.448", "mean: .nan"), ".nan"),
    "llm-d-1e400": ("llm-d", _llm_d("mean: 2262.448", "mean: 1e400"), "1e400"),
    "llm-d-1e308-seconds": (
        "llm-d",
        _llm_d("mean: 0.0368578234128654", "mean: 1e308"),
        "1e308 is not a figure a benchmark reports",
    ),
    "llm-d-wrong-type": ("llm-d", _llm_d("mean: 2262.448", "mean: lots"), "a number belongs here"),
    "llm-d-alias": ("llm-d", b"version: '0.2'\nrun: &r {uid: a}\nscenario: *r\n", "aliases"),
    "llm-d-tag": ("llm-d", b"version: !!python/object/apply:os.system [id]\n", "tag"),
    "llm-d-duplicate": ("llm-d", b"version: '0.2'\nversion: '0.2'\n", "duplicate key"),
    # libyaml stops at its own depth limit before the reader's
    "llm-d-deep": (
        "llm-d",
        b"version: '0.2'\nresults: " + b"[" * 50_000 + b"]" * 50_000,
        "nesting",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_result_file_is_a_located_error(name: str, tmp_path: Path) -> None:
    tool, raw, says = CASES[name]
    path = tmp_path / "result.json"
    path.write_bytes(raw)
    started = time.monotonic()
    with pytest.raises(BenchFileError) as error:
        read_bench_file(path, tool)
    assert time.monotonic() - started < SECONDS
    assert says in str(error.value)
    assert error.value.line >= 1 and error.value.column >= 1


def test_a_malformed_file_says_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "report.yaml"
    path.write_bytes(b"version: '0.2'\nresults:\n  a: [1, 2\n")
    with pytest.raises(BenchFileError) as error:
        read_bench_file(path, "llm-d")
    assert (error.value.line, error.value.column) == (4, 1)  # where the parser gave up
    path.write_bytes(b'{\n  "benchmarks": [\n    {,}\n  ]\n}')
    with pytest.raises(BenchFileError) as error:
        read_bench_file(path, "guidellm")
    assert (error.value.line, error.value.column) == (3, 6)


def test_a_100_mb_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as file:
        file.truncate(100 * 1024 * 1024)  # sparse: 100 MB that cost no disk
    for tool in ("guidellm", "aiperf", "llm-d"):
        started = time.monotonic()
        with pytest.raises(BenchFileError) as error:
            read_bench_file(path, tool)
        assert time.monotonic() - started < 1
        assert "104,857,600 bytes" in str(error.value)


@pytest.mark.parametrize("tool", ["guidellm", "aiperf", "llm-d"])
def test_reading_time_grows_linearly_with_size(tool: str, tmp_path: Path) -> None:
    # a long list of figures the reader does not import, at 1 and 8 MB: eight times the bytes
    # may take at most about eight times as long (twenty, for a loaded machine's noise)
    def timed(megabytes: int) -> float:
        filler = json.dumps(list(range(megabytes * 1024 * 1024 // 8)))
        if tool == "llm-d":
            raw = LLM_D.read_bytes() + f"\nfiller: {filler}\n".encode()
        else:
            report = json.loads((GUIDELLM if tool == "guidellm" else AIPERF).read_text())
            report["filler"] = json.loads(filler)
            raw = json.dumps(report).encode()
        assert len(raw) <= MAX_BENCH_BYTES
        path = tmp_path / f"{megabytes}.json"
        path.write_bytes(raw)
        started = time.monotonic()
        runs = read_bench_file(path, tool)
        assert any("filler" in key for key in runs[0].not_imported)
        return time.monotonic() - started

    small, large = timed(1), timed(8)
    assert large < max(small, 0.05) * 20


# ---- as kept evidence -------------------------------------------------------------------------

PASS_CASE = REPO / "tests" / "cases" / "KV901" / "pass" / "aiperf-profile-kept"
KEPT = "evidence/aiperf-qwen3-0.6b-c1/profile_export_aiperf.json"


def _kept(tmp_path: Path, raw: bytes | None) -> Path:
    root = copy_dataset(tmp_path / "dataset", with_records=False)
    shutil.copytree(PASS_CASE, root, dirs_exist_ok=True)
    if raw is not None:
        (root / KEPT).write_bytes(raw)
    return root


@pytest.mark.parametrize(
    "name", ["aiperf-truncated", "aiperf-empty", "aiperf-nan", "aiperf-1e400", "aiperf-deep"]
)
def test_a_hostile_kept_file_is_a_located_problem(name: str, tmp_path: Path) -> None:
    _, raw, says = CASES[name]
    started = time.monotonic()
    problems = validate(_kept(tmp_path, raw)).problems
    assert time.monotonic() - started < SECONDS * 3
    # the digest no longer matches (at sha256) and the file does not parse (at format)
    assert [(p.code, p.line, p.column) for p in problems] == [("KV901", 64, 13), ("KV901", 65, 13)]
    assert says in problems[0].message


def test_a_100_mb_kept_file_is_refused_unread(tmp_path: Path) -> None:
    root = _kept(tmp_path, None)
    with (root / KEPT).open("wb") as file:
        file.truncate(100 * 1024 * 1024)
    started = time.monotonic()
    [problem] = validate(root).problems
    assert time.monotonic() - started < SECONDS * 3
    assert (problem.code, problem.line, problem.column) == ("KV901", 63, 11)
    assert "104,857,600 bytes" in problem.message


def test_a_kept_file_that_is_a_folder_or_a_pipe_is_refused_unread(tmp_path: Path) -> None:
    import os

    root = _kept(tmp_path, None)
    (root / KEPT).unlink()
    os.mkfifo(root / KEPT)  # opening it would wait for a writer forever
    [problem] = validate(root).problems
    assert "not a regular file" in problem.message
