"""Hostile result files for ``new --from-bench``: each a located error (FILE:LINE:COL), exit 1,
nothing written, no traceback, in time linear in the file's size."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from bench_files import LLAMA_CSV, LLAMA_JSON, SGLANG, VLLM, VLLM_CONC4

from conftest import copy_dataset, run_cli
from kvrecords.dataset.bench import MAX_BENCH_BYTES, read_bench_file


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return copy_dataset(tmp_path / "dataset", with_records=False)


def refused(dataset: Path, path: Path, *extra: str) -> tuple[int, int, str]:
    """Run the import; assert it failed cleanly; the (line, column) and message it gave."""
    started = time.perf_counter()
    result = run_cli("new", "--from-bench", str(path), *extra, cwd=dataset)
    elapsed = time.perf_counter() - started
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert list((dataset / "records" / "kv-efficiency").iterdir()) == []  # nothing written
    assert elapsed < 30, elapsed  # a 16 MiB file at most, read in one pass
    match = re.fullmatch(rf"{re.escape(str(path))}:(\d+):(\d+): (.+)\n", result.stderr)
    assert match is not None, result.stderr
    return int(match[1]), int(match[2]), match[3]


def vllm_lines() -> list[str]:
    return VLLM.read_text(encoding="utf-8").splitlines(keepends=True)


def test_malformed_json_is_located(dataset: Path, tmp_path: Path) -> None:
    lines = vllm_lines()
    lines[1] = lines[1].replace('"backend": "vllm",', '"backend": "vllm",,')
    path = tmp_path / "malformed.json"
    path.write_text("".join(lines), encoding="utf-8")
    line, column, message = refused(dataset, path)
    assert line == 2 and column == lines[1].index(",,") + 2
    assert message.startswith("not JSON")


def test_a_truncated_file_stops_where_it_ends(dataset: Path, tmp_path: Path) -> None:
    text = VLLM.read_text(encoding="utf-8")
    cut = text.index('"p99_ttft_ms"', len(text) // 2)
    path = tmp_path / "truncated.json"
    path.write_text(text[:cut], encoding="utf-8")
    line, _, message = refused(dataset, path)
    assert line == text[:cut].count("\n") + 1  # the last, unfinished line
    assert message.startswith("not JSON")


def test_a_100_mb_file_is_refused_unread(dataset: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:  # sparse: 100 MB of size, nothing on disk
        handle.truncate(100 * 1024 * 1024)
    line, column, message = refused(dataset, path)
    assert (line, column) == (1, 1)
    assert "104,857,600 bytes" in message and f"{MAX_BENCH_BYTES:,}" in message


@pytest.mark.parametrize("depth", [100, 5_000, 1_000_000])
def test_deep_nesting_is_located_at_the_level_past_the_bound(
    dataset: Path, tmp_path: Path, depth: int
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"model_id": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    line, column, message = refused(dataset, path, "--tool", "vllm-bench-serve")
    # the object is level 1, so the 64th '[' is level 65: at column len('{"model_id": ') + 64
    assert (line, column) == (1, len('{"model_id": ') + 64)
    assert message == "nested deeper than 64 levels"


def test_nan_is_refused_where_it_stands(dataset: Path, tmp_path: Path) -> None:
    lines = vllm_lines()
    lines[3] = re.sub(r'"p99_ttft_ms": [0-9.]+', '"p99_ttft_ms": NaN', lines[3])
    path = tmp_path / "nan.json"
    path.write_text("".join(lines), encoding="utf-8")
    line, column, message = refused(dataset, path)
    assert (line, column) == (4, lines[3].index("NaN") + 1)
    assert message == "NaN is not a number a benchmark can report"


def test_infinity_is_refused_outside_a_request_rate(dataset: Path, tmp_path: Path) -> None:
    lines = vllm_lines()
    lines[0] = re.sub(r'"mean_ttft_ms": [0-9.]+', '"mean_ttft_ms": Infinity', lines[0])
    path = tmp_path / "infinity.json"
    path.write_text("".join(lines), encoding="utf-8")
    line, column, message = refused(dataset, path)
    assert (line, column) == (1, lines[0].index('"mean_ttft_ms"') + 1)
    assert message == "mean_ttft_ms is Infinity; a finite number was expected"


def test_1e400_is_beyond_a_double(dataset: Path, tmp_path: Path) -> None:
    text = LLAMA_JSON.read_text(encoding="utf-8").replace('"avg_ts": 118.881588', '"avg_ts": 1e400')
    path = tmp_path / "overflow.json"
    path.write_text(text, encoding="utf-8")
    line, column, message = refused(dataset, path)
    before = text[: text.index("1e400")]
    assert (line, column) == (before.count("\n") + 1, len(before) - before.rindex("\n"))
    assert message == "1e400 is beyond a finite double"


def test_1e308_is_a_finite_figure_kept_as_written(tmp_path: Path) -> None:
    """The largest doubles are numbers: read exactly, converted without overflow (ns to ms)."""
    text = LLAMA_JSON.read_text(encoding="utf-8").replace('"avg_ns": 72135640', '"avg_ns": 1e308')
    path = tmp_path / "large.json"
    path.write_text(text, encoding="utf-8")
    pp, _ = read_bench_file(path)
    prefill_ms = next(f for f in pp.figures if f.metric == "prefill_ms")
    assert prefill_ms.raw == "1e308" and prefill_ms.value == 1e302  # 1e308 ns = 1e302 ms


def test_a_text_where_a_number_is_is_located(dataset: Path, tmp_path: Path) -> None:
    lines = vllm_lines()
    lines[4] = re.sub(r'"median_itl_ms": [0-9.]+', '"median_itl_ms": "fast"', lines[4])
    path = tmp_path / "types.json"
    path.write_text("".join(lines), encoding="utf-8")
    line, column, message = refused(dataset, path)
    assert (line, column) == (5, lines[4].index('"median_itl_ms"') + 1)
    assert message == "median_itl_ms is the text 'fast'; a number was expected"


def test_a_text_where_a_number_is_in_csv_is_located(dataset: Path, tmp_path: Path) -> None:
    lines = LLAMA_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace('"119.915244"', '"fast"')
    path = tmp_path / "types.csv"
    path.write_text("".join(lines), encoding="utf-8")
    line, column, message = refused(dataset, path)
    assert (line, column) == (3, lines[2].index('"fast"') + 1)
    assert message == "avg_ts is the text 'fast'; a number was expected"


def test_a_boolean_where_a_count_is_is_located(dataset: Path, tmp_path: Path) -> None:
    text = LLAMA_JSON.read_text(encoding="utf-8").replace('"n_gen": 128', '"n_gen": true')
    path = tmp_path / "bool.json"
    path.write_text(text, encoding="utf-8")
    line, column, message = refused(dataset, path)
    before = text[: text.index('"n_gen": true')]
    assert (line, column) == (before.count("\n") + 1, len(before) - before.rindex("\n"))
    assert message == "n_gen is the boolean true; a number was expected"


def test_an_empty_file(dataset: Path, tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"\n  \n")
    assert refused(dataset, path) == (1, 1, "the file is empty")


def test_a_file_of_another_tool_is_not_read_as_this_one(dataset: Path, tmp_path: Path) -> None:
    """SGLang's bench_serving lines named as llama-bench: refused at the first line, not
    turned into runs without figures."""
    assert refused(dataset, SGLANG, "--tool", "llama-bench") == (
        1,
        1,
        "not a llama-bench result: no n_prompt or n_gen or avg_ts key",
    )


def test_a_file_no_reader_knows(dataset: Path, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"run_name": "test_run", "batch_size": 1, "prefill_latency": 0.02}\n')
    line, column, message = refused(dataset, path)
    assert (line, column) == (1, 1)
    assert message.startswith("no known benchmark format matches this file; name it with --tool")


def test_bytes_that_are_not_utf8_are_located(dataset: Path, tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(VLLM.read_bytes()[:200] + b"\xff" + VLLM.read_bytes()[200:])
    assert refused(dataset, path, "--tool", "vllm-bench-serve")[:2] == (1, 201)


def test_a_named_pipe_is_not_waited_on(dataset: Path, tmp_path: Path) -> None:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    assert refused(dataset, path)[2] == "not a regular file; save the result to a file first"


def test_reading_is_linear_in_the_file_size(tmp_path: Path) -> None:
    """Per-request lists as vllm bench serve saves them, near the size bound: read in one pass
    (a quadratic scan of 15 MB would take minutes), and a wrong type at the very end located."""
    first = VLLM.read_text(encoding="utf-8").splitlines()[0]
    values = ", ".join(["13.505887271504633"] * 800_000)  # ~15.2 MB of ITL samples
    text = first[:-1] + f', "itls": [{values}], "p90_ttft_ms": "x"}}'
    assert len(text) < MAX_BENCH_BYTES
    path = tmp_path / "big.json"
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(Exception) as caught:
        read_bench_file(path)
    assert time.perf_counter() - started < 30
    column = text.rindex('"p90_ttft_ms"') + 1
    assert str(caught.value).startswith(f"1:{column}: p90_ttft_ms is the text 'x'")


def test_a_run_where_no_request_finished(dataset: Path, tmp_path: Path) -> None:
    text = VLLM_CONC4.read_text(encoding="utf-8").replace('"completed": 40', '"completed": 0')
    path = tmp_path / "none.json"
    path.write_text(text, encoding="utf-8")
    assert refused(dataset, path) == (
        1,
        text.index('"completed"') + 1,
        "completed is 0: no request finished, nothing was measured",
    )


def test_a_llama_bench_test_of_no_tokens(dataset: Path, tmp_path: Path) -> None:
    text = LLAMA_JSON.read_text(encoding="utf-8").replace('"n_gen": 128', '"n_gen": 0')
    path = tmp_path / "zero.json"
    path.write_text(text, encoding="utf-8")
    line, _, message = refused(dataset, path)
    assert line == text[: text.rindex('"n_prompt": 0')].count("\n") + 1
    assert message == "n_prompt and n_gen are both 0: the test processed no token"


def test_a_nul_byte_is_located(dataset: Path, tmp_path: Path) -> None:
    text = LLAMA_CSV.read_text(encoding="utf-8").replace('"CUDA"', '"CU\x00DA"', 1)
    path = tmp_path / "nul.csv"
    path.write_text(text, encoding="utf-8")
    line, column, message = refused(dataset, path)
    before = text[: text.index("\x00")]
    assert (line, column) == (2, len(before) - before.rindex("\n"))
    assert message == "a NUL byte: a result file is text"


def test_a_csv_row_short_of_fields_is_located(dataset: Path, tmp_path: Path) -> None:
    lines = LLAMA_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "short.csv"
    path.write_text(lines[0] + lines[1].replace('"CUDA",', "", 1), encoding="utf-8")
    assert refused(dataset, path) == (2, 1, "the row has 32 fields; the header names 33")


def test_an_integer_past_the_digit_limit_is_located(dataset: Path, tmp_path: Path) -> None:
    text = LLAMA_JSON.read_text(encoding="utf-8").replace(
        '"n_batch": 2048', '"n_batch": ' + "9" * 5000, 1
    )
    path = tmp_path / "digits.json"
    path.write_text(text, encoding="utf-8")
    line, column, message = refused(dataset, path)
    before = text[: text.index("9" * 5000)]
    assert (line, column) == (before.count("\n") + 1, len(before) - before.rindex("\n"))
    assert message == "an integer of more than 4,300 digits is not a figure"
