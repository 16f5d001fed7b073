"""llama.cpp's ``llama-bench -o json`` (a JSON array), ``-o jsonl`` (an object a line) and
``-o csv`` (a header and a row per test); one run per test: a prompt-processing test (pp,
``n_prompt`` > 0) or a generation test (tg, ``n_gen`` > 0), at a depth of ``n_depth`` tokens
already in the cache.

``avg_ts`` is the mean over the repetitions of tokens per second (``stddev_ts`` their standard
deviation): the prefill rate of a pp test, the decode rate of one sequence in a tg test.
``avg_ns`` is the mean time of the test in nanoseconds: for a pp test the prefill time, written
here in milliseconds (divided by 1,000,000, exactly). The CSV writes every value quoted; numbers
are read from their text as JSON would read them.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from kvrecords.dataset.bench import (
    BenchFigure,
    BenchFileError,
    BenchFormat,
    BenchRun,
    WrittenFloat,
    WrittenInt,
    decode_text,
    load_json,
    load_json_lines,
    register,
)
from kvrecords.dataset.bench.entry import Entry, Locator

TOOL = "llama-bench"
# engine settings kept as flags ('name value'), in llama-bench's order
FLAGS = (
    "backends", "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict",
    "poll", "type_k", "type_v", "n_gpu_layers", "n_cpu_moe", "split_mode", "main_gpu",
    "no_kv_offload", "flash_attn", "devices", "tensor_split", "tensor_buft_overrides",
    "use_mmap", "use_direct_io", "embeddings", "no_op_offload", "no_host", "repack",
    "fit_target", "fit_min_ctx", "load_mode", "moe_cache", "n_gen_warmup",
)  # fmt: skip
# what tells one test of a file from another, besides its shape
_NOT_SETTINGS = frozenset(
    {"test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts",
     "n_prompt", "n_gen", "n_depth"}
)  # fmt: skip
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?P<fraction>\.[0-9]+)?(?P<exponent>[eE][+-]?[0-9]+)?")


def detect(raw: bytes, name: str) -> bool:
    head = raw[:65536]
    return b"avg_ts" in head and b"n_prompt" in head and b"build_commit" in head


def read(raw: bytes, file_name: str) -> list[BenchRun]:
    text = decode_text(raw)
    first = text.lstrip()[:1]
    if first == "[":
        data = load_json(raw)
        if not isinstance(data, list):
            raise BenchFileError("llama-bench -o json writes a JSON array")
        entries = [_entry_in_json(item, text, index) for index, item in enumerate(data)]
    elif first == "{":
        lines = text.split("\n")
        entries = [
            _entry_on_line(item, lines[line - 1], line) for line, item in load_json_lines(raw)
        ]
    else:
        entries = _csv_entries(text)
    if not entries:
        raise BenchFileError("the file holds no test")
    differing = _differing(entries)
    return [_run(entry, file_name, differing) for entry in entries]


def _entry_in_json(item: Any, text: str, index: int) -> Entry:
    if not isinstance(item, dict):
        raise BenchFileError(
            "each test of llama-bench -o json is an object", *_at(text, f"[{index}]")
        )
    return Entry.in_json(item, text, f"[{index}].")


def _entry_on_line(item: Any, line_text: str, line: int) -> Entry:
    if not isinstance(item, dict):
        raise BenchFileError("each line of llama-bench -o jsonl is an object", line, 1)
    return Entry.on_line(item, line_text, line)


def _at(text: str, key: str) -> tuple[int, int]:
    from kvrecords.dataset.bench import locate

    return locate(text, key)


def _csv_entries(text: str) -> list[Entry]:
    """The rows of ``-o csv``; each value at its row's line and its field's column."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or "avg_ts" not in header:
            raise BenchFileError("not llama-bench CSV: the first line names no avg_ts column")
        lines = text.split("\n")
        entries = []
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != len(header):
                raise BenchFileError(
                    f"the row has {len(row)} fields; the header names {len(header)}", line, 1
                )
            columns = _field_columns(lines[line - 1].rstrip("\r"))
            values = {name: _csv_value(field) for name, field in zip(header, row, strict=True)}
            places = {name: columns[i] if i < len(columns) else 1 for i, name in enumerate(header)}
            entries.append(Entry(values, _csv_locator(line, places), f"line {line}: "))
    except csv.Error as error:
        raise BenchFileError(f"not CSV: {error}", reader.line_num or 1, 1) from None
    return entries


def _csv_locator(line: int, places: dict[str, int]) -> Locator:
    def where(key: str) -> tuple[int, int]:
        return line, places.get(key, 1)

    return where


def _csv_value(field: str) -> Any:
    """A CSV field as JSON would read its text: an integer, a finite float, else the text."""
    match = _NUMBER.fullmatch(field)
    if match is None:
        return field
    if match["fraction"] or match["exponent"]:
        value = WrittenFloat(field)
        return value if math.isfinite(value) else field  # '1e400' stays text: not a number
    return WrittenInt(field) if len(field) <= 4300 else field


def _field_columns(line: str) -> list[int]:
    """The 1-based column where each field of a CSV line starts (quoted fields may hold commas)."""
    columns, position, length = [], 0, len(line)
    while position <= length:
        columns.append(position + 1)
        if position < length and line[position] == '"':
            position += 1
            while position < length:
                if line[position] == '"':
                    if position + 1 < length and line[position + 1] == '"':
                        position += 2
                        continue
                    break
                position += 1
            position += 1
        comma = line.find(",", position)
        if comma < 0:
            break
        position = comma + 1
    return columns


def _differing(entries: list[Entry]) -> list[str]:
    """The settings whose values differ between the tests of the file, for their labels."""
    keys: list[str] = []
    for key in entries[0].values:
        if key in _NOT_SETTINGS:
            continue
        seen = {repr(entry.values.get(key)) for entry in entries}
        if len(seen) > 1:
            keys.append(key)
    return keys


def _run(entry: Entry, file_name: str, differing: list[str]) -> BenchRun:
    entry.require("llama-bench", "n_prompt", "n_gen", "avg_ts")
    n_prompt, n_gen, n_depth = entry.count("n_prompt"), entry.count("n_gen"), entry.count("n_depth")
    if not n_prompt and not n_gen:
        raise entry.error("n_prompt", "n_prompt and n_gen are both 0: the test processed no token")
    figures: list[BenchFigure] = []
    if n_prompt and not n_gen:  # prompt processing
        test = f"pp{n_prompt}"
        rate = entry.figure(
            "avg_ts", "prefill_tokens_per_s", "mean", spread_key="stddev_ts", scope="per_sequence"
        )
        # nanoseconds to milliseconds: / 1,000,000
        time = entry.figure(
            "avg_ns", "prefill_ms", "mean", spread_key="stddev_ns", divide_by=1_000_000
        )
        figures += [f for f in (rate, time) if f is not None]
    elif n_gen and not n_prompt:  # generation: one sequence decoding
        test = f"tg{n_gen}"
        rate = entry.figure(
            "avg_ts", "decode_tokens_per_s", "mean", spread_key="stddev_ts", scope="per_sequence"
        )
        figures += [rate] if rate is not None else []
        for key in ("avg_ns", "stddev_ns"):
            entry.skip(key, f"the time of the whole {test} test, whose rate avg_ts gives")
    else:
        test = f"pp{n_prompt}+tg{n_gen}"
        for key in ("avg_ts", "stddev_ts", "avg_ns", "stddev_ns"):
            entry.skip(key, "a rate over prompt and generation together; no metric holds it")
    for key in ("samples_ts", "samples_ns"):
        entry.skip(key, "the repetitions avg_ts and avg_ns summarise")
    entry.skip("model_size", "the model file's size in bytes")
    entry.skip("model_n_params", "the model's parameter count")
    entry.ignore("test_time")
    if n_depth:
        test += f" @ d{n_depth}"
    label = ", ".join([test] + [f"{key} {entry.values.get(key)}" for key in differing])
    flags = tuple(f"{key} {entry.text(key)}" for key in FLAGS if entry.has(key))
    type_k, type_v = entry.text("type_k"), entry.text("type_v")
    build, commit = entry.text("build_number"), entry.text("build_commit")
    version = f"{build} ({commit})" if build and commit else build or commit
    gpu, cpu = entry.text("gpu_info"), entry.text("cpu_info")
    return BenchRun(
        tool=TOOL,
        file_name=file_name,
        label=label,
        figures=tuple(figures),
        concurrency=1,  # llama-bench runs one sequence at a time
        input_tokens=n_prompt or None,
        output_tokens=n_gen or None,
        depth_tokens=n_depth,
        engine="llama.cpp",
        engine_version=version,
        flags=flags,
        model=entry.text("model_filename"),
        kv_cache_types=(type_k, type_v) if type_k and type_v else None,
        hardware=gpu or cpu,
        weights=entry.text("model_type"),
        not_imported=entry.not_imported(),
    )


FORMAT = register(
    BenchFormat(
        TOOL, "llama-bench -o json, -o jsonl or -o csv: a run per pp or tg test", detect, read
    )
)
