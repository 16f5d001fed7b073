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

import contextlib
import gc
import json
import math
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

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
    unbounded: bool = False  # the file says no cap on requests in flight was set (null)
    request_rate: float | None = None  # requests/s; math.inf when every request is sent at once
    num_requests: int | None = None
    input_tokens: int | None = None  # per request as configured (a mean when only that is given)
    output_tokens: int | None = None
    duration_s: float | None = None
    engine: str | None = None  # the record's engine names: vllm, sglang, llamacpp, tensorrt-llm
    engine_version: str | None = None
    flags: tuple[str, ...] = ()  # engine settings the file records, as 'name value'
    model: str | None = None  # as the file names it (a Hugging Face id, a GGUF file name)
    depth_tokens: int | None = None  # tokens already in the cache before the test (llama-bench)
    kv_cache_types: tuple[str, str] | None = None  # (K, V) element types as the file names them
    hardware: str | None = None  # the accelerators as named ('NVIDIA GeForce RTX 4080')
    weights: str | None = None  # the weights as the file names them ('qwen2 7B Q4_K - Medium')
    workload: tuple[str, ...] = ()  # how the load was made, as 'name value' ('dataset_name random')
    not_imported: tuple[str, ...] = ()  # 'key = raw (why)' for each entry no figure was drawn from


def stated_as(run: BenchRun, figure: BenchFigure) -> str:
    """The trace of an imported figure: the file, the key and the value as written; a value
    converted to the metric's unit follows in brackets ('avg_ns = 72135640 (72.13564 ms)')."""
    from kvrecords.kv.metrics import BY_NAME

    trace = f"{run.file_name}: {figure.key} = {figure.raw}"
    if json.dumps(figure.value) != figure.raw and float(figure.raw) != figure.value:
        trace += f" ({figure.value} {BY_NAME[figure.metric].unit})"
    return trace


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
        if not stat.S_ISREG(path.stat().st_mode):  # a pipe or a device would block or never end
            raise BenchFileError("not a regular file; save the result to a file first")
        raw = path.read_bytes()
    except OSError as error:
        raise BenchFileError(f"cannot read the file: {error.strerror or error}") from None
    if not raw.strip():
        raise BenchFileError("the file is empty")
    nul = raw.find(b"\x00")
    if nul >= 0:  # a result file is text; a NUL would pass CSV and reach the record
        before = raw[:nul].decode("utf-8", "replace")
        raise BenchFileError("a NUL byte: a result file is text", *_position(before, len(before)))
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


def known_formats() -> dict[str, BenchFormat]:
    """Every registered format by name, the reader modules loaded."""
    _load_readers()
    return FORMATS


def _load_readers() -> None:
    """Import the reader modules (each registers itself); a function so importing the package
    costs nothing for commands that never read a result file."""
    from kvrecords.dataset.bench import readers  # noqa: F401


def load_json(raw: bytes, *, infinity: bool = False) -> Any:
    """Strict JSON: UTF-8, finite numbers only, at most MAX_JSON_DEPTH levels, errors located.

    ``infinity`` reads the literals ``Infinity`` and ``-Infinity`` as infinities: Python's
    json module writes a float('inf') setting that way (SGLang's ``request_rate`` when every
    request is sent at once), so a reader that takes them checks where they stand. ``NaN`` and
    a number beyond a double (``1e400``) are always refused.
    """
    text = decode_text(raw)
    refused: list[str] = []  # the literal that stopped the decoder, to find it in the text

    def constant(name: str) -> float:
        if infinity and name in ("Infinity", "-Infinity"):
            return math.inf if name == "Infinity" else -math.inf
        refused.append(name)
        raise ValueError(f"{name} is not a number a benchmark can report")

    def finite(number: str) -> float:
        value = WrittenFloat(number)
        if not math.isfinite(value):
            refused.append(number)
            raise ValueError(f"{number} is beyond a finite double")
        return value

    try:
        with _collection_paused():
            data = json.loads(
                text, parse_constant=constant, parse_float=finite, parse_int=WrittenInt
            )
    except json.JSONDecodeError as error:
        raise BenchFileError(f"not JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise _too_deep(text) from None
    except ValueError as error:  # a constant or infinity refused above, a huge integer
        message = str(error)
        line, column = _literal_position(text, refused[-1]) if refused else (1, 1)
        if "integer string conversion" in message:
            message = "an integer of more than 4,300 digits is not a figure"
            digits = re.search(r"[0-9]{4301}", text)  # the first run of digits that long
            line, column = _position(text, digits.start()) if digits else (1, 1)
        raise BenchFileError(message, line, column) from None
    with _collection_paused():  # the walk makes a tuple per value: the same pile-up
        too_deep = _depth(data) > MAX_JSON_DEPTH
    if too_deep:
        raise _too_deep(text)
    return data


def load_json_lines(raw: bytes, *, infinity: bool = False) -> list[tuple[int, Any]]:
    """A JSON Lines file: (line number, value) for each non-blank line."""
    values: list[tuple[int, Any]] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if line.strip():
            try:
                values.append((number, load_json(line, infinity=infinity)))
            except BenchFileError as error:
                raise BenchFileError(error.message, number, error.column, error.key) from None
    return values


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a file's values are built: every number
    is an object with a ``__dict__`` (its written text), which the collector would scan again
    and again as they pile up, making a large file cost more than its size. Parsed data holds
    no cycles, so nothing is left uncollected."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_Number = TypeVar("_Number", bound="_KeepsText")


class _KeepsText:
    """A number that keeps the text the file wrote it as (``140.341520``, not ``140.34152``)."""

    written: str

    def __new__(cls: type[_Number], text: str) -> _Number:
        # the next base is float or int, whose __new__ takes the text
        number = super().__new__(cls, text)  # type: ignore[call-arg]
        number.written = text
        return number


class WrittenFloat(_KeepsText, float):
    """A float that keeps its text."""


class WrittenInt(_KeepsText, int):
    """An integer that keeps its text."""


def written(value: Any) -> str:
    """A value as the file wrote it: the JSON text of a number, a string as it is."""
    text = getattr(value, "written", None)
    if text is not None:
        return str(text)
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value if isinstance(value, str) else json.dumps(value)


def decode_text(raw: bytes) -> str:
    """The file's text: UTF-8 (a byte-order mark allowed), else an error at the bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        before = raw[: error.start].decode("utf-8", "replace")
        line, column = _position(before, len(before))
        raise BenchFileError(f"not UTF-8 (byte {error.start})", line, column) from None


# A JSON string, or one of the structural characters: what a scan needs to follow the nesting
# without decoding values. No nested repetition: linear in the text.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def locate(text: str, key: str) -> tuple[int, int]:
    """Line and column (1-based) where ``key`` ('median_ttft_ms', '[2].avg_ts',
    'benchmarks[0].metrics.ttft') stands in the JSON ``text``: the key of an object member, the
    first character of an array element; (1, 1) when it is not there. One pass, stops there."""
    target = _key_parts(key)
    frames: list[list[Any]] = []  # [is_object, key or index, expecting a key]
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == "{":
            frames.append([True, None, True])
        elif token == "[":
            frames.append([False, 0, False])
            if _path(frames) == target:
                return _position(text, _value_start(text, match.end()))
        elif token in "}]":
            if frames:
                frames.pop()
        elif token == ",":
            if frames and frames[-1][0]:
                frames[-1][2] = True
            elif frames:
                frames[-1][1] += 1
                if _path(frames) == target:
                    return _position(text, _value_start(text, match.end()))
        elif token == ":":
            if frames and frames[-1][0] and _path(frames) == target:
                return _position(text, frames[-1][3])
        elif frames and frames[-1][0] and frames[-1][2]:  # a member's name
            frames[-1][1:] = [json.loads(token), False, match.start()]
    return 1, 1


def _key_parts(key: str) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[([0-9]+)\]", key):
        parts.append(int(index) if index else name)
    return tuple(parts)


def _path(frames: list[list[Any]]) -> tuple[str | int, ...]:
    return tuple(frame[1] for frame in frames)


def _value_start(text: str, offset: int) -> int:
    while offset < len(text) and text[offset] in " \t\r\n":
        offset += 1
    return offset


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _too_deep(text: str) -> BenchFileError:
    """Where the nesting first goes past MAX_JSON_DEPTH, found by one scan that stops there."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "{[":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                line, column = _position(text, match.start())
                return BenchFileError(f"nested deeper than {MAX_JSON_DEPTH} levels", line, column)
        elif token in "}]":
            depth -= 1
    return BenchFileError(f"nested deeper than {MAX_JSON_DEPTH} levels")


def _literal_position(text: str, literal: str) -> tuple[int, int]:
    """Where ``literal`` (NaN, Infinity, 1e400) first stands outside a string."""
    pattern = re.compile(
        r'"(?:[^"\\]|\\.)*"|(?<![0-9A-Za-z.+-])(' + re.escape(literal) + r")(?![0-9A-Za-z.])"
    )
    for match in pattern.finditer(text):
        if match.group(1):
            return _position(text, match.start(1))
    return 1, 1


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


def load_yaml(raw: bytes) -> Any:
    """A YAML result file (llm-d's benchmark report) as plain data, read as strictly as JSON.

    The parser's event stream only, so nothing in the file can construct an object: anchors,
    aliases and tags are refused, as are duplicate keys, several documents and ``.nan``; the
    YAML 1.2 core schema resolves plain scalars (``2025-11-05T18:00:42Z`` stays text). ``.inf``
    is read as infinity, which a report writes for an unbounded concurrency; a reader refuses it
    as a figure. Numbers keep their text, as ``load_json``'s do.
    """
    import yaml

    if len(raw) > MAX_BENCH_BYTES:
        raise BenchFileError(f"the file is {len(raw):,} bytes; the limit is {MAX_BENCH_BYTES:,}")
    text = decode_text(raw)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    events = yaml.parse(text, Loader=loader)
    try:
        with _collection_paused():
            return _YamlBuilder(events).document()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise BenchFileError(f"not YAML: {error.problem or error}", line, column) from None
    except yaml.YAMLError as error:
        raise BenchFileError(f"not YAML: {error}") from None


_YAML_INT = re.compile(r"[-+]?[0-9]+")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_YAML_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")


class _YamlBuilder:
    """Plain data from PyYAML's event stream, bounded in depth (the stream is read lazily, so a
    hostile file stops at its first refused event)."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def document(self) -> Any:
        roots: list[Any] = []
        for event in self.events:
            name = type(event).__name__
            if name in ("StreamStartEvent", "StreamEndEvent", "DocumentEndEvent"):
                continue
            if name == "DocumentStartEvent":
                if roots:
                    raise _located("a result file holds one YAML document; found a second", event)
                continue
            roots.append(self._node(event, 1))
        if not roots:
            raise BenchFileError("the file is empty")
        return roots[0]

    def _node(self, event: Any, depth: int) -> Any:
        name = type(event).__name__
        if name == "AliasEvent" or getattr(event, "anchor", None):
            raise _located("anchors and aliases are not read in a result file", event)
        if getattr(event, "tag", None):  # set only when the file writes one
            raise _located(f"tag {event.tag} is not read in a result file", event)
        if depth > MAX_JSON_DEPTH:
            raise _located(f"nested deeper than {MAX_JSON_DEPTH} levels", event)
        if name == "ScalarEvent":
            return event.value if event.style else _plain_scalar(event)
        if name == "SequenceStartEvent":
            items: list[Any] = []
            for child in self.events:
                if type(child).__name__ == "SequenceEndEvent":
                    return items
                items.append(self._node(child, depth + 1))
        if name == "MappingStartEvent":
            mapping: dict[str, Any] = {}
            for key in self.events:
                if type(key).__name__ == "MappingEndEvent":
                    return mapping
                if type(key).__name__ != "ScalarEvent" or key.anchor or key.tag:
                    raise _located("a key must be plain text", key)
                if key.value in mapping:
                    raise _located(f"duplicate key {key.value!r}", key)
                mapping[key.value] = self._node(next(self.events), depth + 1)
        raise _located(f"unexpected YAML event {name}", event)


def _located(message: str, event: Any) -> BenchFileError:
    mark = event.start_mark
    return BenchFileError(message, mark.line + 1, mark.column + 1)


def _plain_scalar(event: Any) -> Any:
    text: str = event.value
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if len(text) <= 4300 and _YAML_INT.fullmatch(text):
        return WrittenInt(text)
    infinite = _YAML_INF.fullmatch(text)
    if infinite or (len(text) <= 400 and _YAML_FLOAT.fullmatch(text)):
        value = WrittenFloat(text.replace(".", "", 1) if infinite else text)  # '-.inf' -> '-inf'
        if math.isinf(value) and not infinite:
            raise _located(f"{text} is beyond a finite double", event)
        value.written = text
        return value
    if text in (".nan", ".NaN", ".NAN"):
        raise _located(f"{text} is not a number a benchmark can report", event)
    return text
