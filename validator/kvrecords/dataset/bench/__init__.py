"""Benchmark result files read as data: the figures a benchmark tool wrote and where it wrote them.

A reader turns one tool's output (``vllm bench serve --save-result`` JSON, SGLang
``bench_serving`` JSONL, ``llama-bench`` JSON or CSV, GuideLLM, AIPerf / GenAI-Perf, llm-d) into
``BenchRun``\\s: every figure the file gives, named in the metric vocabulary (``kv/metrics.py``)
with its statistic and converted to the metric's unit, and the run's settings where the file holds
them. ``None`` always means "not in the benchmark output". Files are parsed, never executed:
JSON through ``load_json`` (no NaN or infinities, bounded nesting and size), CSV through the
standard reader. A file a reader cannot read raises ``BenchFileError`` with where it stopped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BENCH_BYTES = 16 * 1024 * 1024  # the largest result file read; a 100 MB file is refused unread
MAX_JSON_DEPTH = 64  # result files nest a few levels; deeper is hostile


class BenchFileError(Exception):
    """A benchmark file that cannot be read: the message, and where in the file (1-based)."""

    def __init__(self, message: str, line: int = 1, column: int = 1, key: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.key = key  # the key path the message is about, when there is one

    def __str__(self) -> str:
        where = f" at {self.key}" if self.key else ""
        return f"{self.line}:{self.column}: {self.message}{where}"


@dataclass(frozen=True)
class BenchFigure:
    """One figure of a run, as the file gives it."""

    metric: str  # a name from kv/metrics.py METRICS
    statistic: str  # the record's statistic vocabulary: mean, median, p90, p99, single, total, ...
    value: int | float  # in the metric's unit (converted where the tool's unit differs)
    key: str  # where the file holds it: 'median_ttft_ms', '[2].avg_ts', 'benchmarks[0].metrics...'
    raw: str  # the value as the file writes it, before any conversion
    spread: float | None = None  # the standard deviation the file gives beside it, metric's unit
    scope: str | None = None  # per_sequence or aggregate, for rates


@dataclass(frozen=True)
class BenchRun:
    """One measured configuration of a result file."""

    tool: str  # the reader's name: 'vllm-bench-serve', 'sglang-bench-serving', 'llama-bench', ...
    file_name: str  # the file's name as given, for stated_as: '<file_name>: <key> = <raw>'
    label: str  # tells the runs of one file apart ('pp512', 'concurrency 16', ...)
    figures: tuple[BenchFigure, ...]
    concurrency: int | None = None  # the tool's cap on requests in flight; None: not in the file
    request_rate: float | None = None  # requests/s; math.inf when every request is sent at once
    num_requests: int | None = None
    input_tokens: int | None = None  # per request as configured (a mean when only that is given)
    output_tokens: int | None = None
    duration_s: float | None = None
    engine: str | None = None  # the record's engine names: vllm, sglang, llamacpp, tensorrt-llm
    engine_version: str | None = None
    flags: tuple[str, ...] = ()  # engine settings the file records, as 'name value'
    model: str | None = None  # as the file names it (a Hugging Face id, a GGUF file name)


def stated_as(run: BenchRun, figure: BenchFigure) -> str:
    """The trace of an imported figure: the file, the key and the value as written."""
    return f"{run.file_name}: {figure.key} = {figure.raw}"


Reader = Callable[[bytes, str], list[BenchRun]]  # (the file's bytes, its name) -> runs


@dataclass(frozen=True)
class BenchFormat:
    """A tool's result format: its name, how to recognise a file of it, how to read it."""

    name: str
    description: str
    detect: Callable[[bytes, str], bool]  # cheap: looks at the name and the first bytes or keys
    read: Reader


FORMATS: dict[str, BenchFormat] = {}


def register(bench_format: BenchFormat) -> BenchFormat:
    """Called once by each reader module at import."""
    FORMATS[bench_format.name] = bench_format
    return bench_format


def read_bench_file(path: Path, tool: str | None = None) -> list[BenchRun]:
    """The runs of a result file; ``tool`` names the format, else it is recognised."""
    _load_readers()
    try:
        size = path.stat().st_size
        if size > MAX_BENCH_BYTES:
            raise BenchFileError(
                f"the file is {size:,} bytes; a result file is read only up to "
                f"{MAX_BENCH_BYTES:,} bytes (keep the tool's summary, not its per-request dump)"
            )
        raw = path.read_bytes()
    except OSError as error:
        raise BenchFileError(f"cannot read the file: {error.strerror or error}") from None
    if tool is not None:
        if tool not in FORMATS:
            raise BenchFileError(f"unknown format {tool!r}; known: {', '.join(sorted(FORMATS))}")
        return FORMATS[tool].read(raw, path.name)
    matches = [f for f in FORMATS.values() if f.detect(raw, path.name)]
    if len(matches) != 1:
        found = "no" if not matches else "more than one"
        raise BenchFileError(
            f"{found} known benchmark format matches this file; name it with --tool "
            f"({', '.join(sorted(FORMATS))})"
        )
    return matches[0].read(raw, path.name)


def _load_readers() -> None:
    """Import the reader modules (each registers itself); a function so importing the package
    costs nothing for commands that never read a result file."""
    from kvrecords.dataset.bench import readers  # noqa: F401


def load_json(raw: bytes) -> Any:
    """Strict JSON: UTF-8, finite numbers only, at most MAX_JSON_DEPTH levels, errors located."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BenchFileError(f"not UTF-8 (byte {error.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as error:
        raise BenchFileError(f"not JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise BenchFileError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as error:  # a constant or infinity refused below, a huge integer
        message = str(error)
        if "integer string conversion" in message:
            message = "an integer of more than 4,300 digits is not a figure"
        raise BenchFileError(message) from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise BenchFileError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def load_json_lines(raw: bytes) -> list[tuple[int, Any]]:
    """A JSON Lines file: (line number, value) for each non-blank line."""
    values: list[tuple[int, Any]] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if line.strip():
            try:
                values.append((number, load_json(line)))
            except BenchFileError as error:
                raise BenchFileError(error.message, number, error.column, error.key) from None
    return values


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a benchmark can report")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond a finite double")
    return value


def _depth(data: Any) -> int:
    """The nesting depth, without recursion (the decoder has already bounded it by the stack)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(value, dict):
            stack.extend((child, level + 1) for child in value.values())
        elif isinstance(value, list):
            stack.extend((child, level + 1) for child in value)
    return deepest
