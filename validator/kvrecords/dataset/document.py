"""Reading a YAML file safely, with the position and written text of every value.

The file goes through the parser's event stream only, and values are built here, so nothing
in a file can construct an object or run code, and every rule is ours:
- YAML 1.2 core schema: ``no`` and ``2026-09-02`` stay strings, ``010`` is 10;
- anchors, aliases and tags are refused (a billion-laughs file is refused at its first alias);
- duplicate keys, non-string keys, several documents and non-finite numbers are refused;
- size and nesting are capped before they can cost time or memory.
Parse failures are values (``Problem``\\s), not exceptions, so every file gets reported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.problems import Problem

MAX_FILE_BYTES = 512 * 1024
MAX_DEPTH = 32

JsonPath = tuple[str | int, ...]

_NULL = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(inf|Inf|INF)$")
_NAN = re.compile(r"^\.(nan|NaN|NAN)$")


class Document(NamedTuple):
    """A parsed file: plain data plus, for every path into it, where it was written."""

    path: str
    text: str
    data: Any
    value_positions: dict[JsonPath, tuple[int, int]]
    key_positions: dict[JsonPath, tuple[int, int]]
    written: dict[JsonPath, str]  # every scalar's text as written
    # every scalar's value by path, in file order: the checks walk this, not the nested data
    leaves: dict[JsonPath, Any]

    def locate(self, path: JsonPath, *, key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the value at ``path``, else its nearest written ancestor."""
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            if key and prefix in self.key_positions:
                return self.key_positions[prefix]
            if prefix in self.value_positions:
                return self.value_positions[prefix]
        return (1, 1)

    def problem(self, code: str, path: JsonPath, message: str, *, key: bool = False) -> Problem:
        """A problem at the value (or, with ``key``, the key) at ``path``."""
        line, column = self.locate(path, key=key)
        return Problem(self.path, line, column, code, message)

    def find(self, pattern: re.Pattern[str], start_line: int) -> tuple[int, int] | None:
        """The position of the first match of ``pattern`` at or after ``start_line``."""
        lines = self.text.split("\n")
        offset = sum(len(line) + 1 for line in lines[: start_line - 1])
        match = pattern.search(self.text, offset)
        if match is None:
            return None
        before = self.text[: match.start()]
        return before.count("\n") + 1, match.start() - (before.rfind("\n") + 1) + 1


def dotted(path: JsonPath) -> str:
    """``methodology.engine.version``, ``layer_groups[1].key_heads``: a path as messages show it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


class _Refused(Exception):
    """Internal: the file breaks one of the rules; carries the problem to report."""

    def __init__(self, code: str, mark: Any, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.line = getattr(mark, "line", 0) + 1
        self.column = getattr(mark, "column", 0) + 1
        self.message = message


def read_document(file_path: Path, display_path: str) -> Document | list[Problem]:
    """Read and parse one file; never raises for anything the file holds."""
    try:
        if file_path.stat().st_size > MAX_FILE_BYTES:
            return [_file_problem(display_path, "KV007", _size_message(file_path.stat().st_size))]
        raw = file_path.read_bytes()
    except OSError as error:
        return [_file_problem(display_path, "KV009", f"cannot read the file: {error.strerror}")]
    return parse_document(raw, display_path)


def _size_message(size: int) -> str:
    return f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,} bytes"


def _file_problem(path: str, code: str, message: str, line: int = 1, column: int = 1) -> Problem:
    return Problem(path, line, column, code, message)


def parse_document(raw: bytes, display_path: str) -> Document | list[Problem]:
    if len(raw) > MAX_FILE_BYTES:
        return [_file_problem(display_path, "KV007", _size_message(len(raw)))]
    if raw.startswith(b"\xef\xbb\xbf"):
        return [
            _file_problem(
                display_path,
                "KV005",
                "file starts with a byte-order mark; save it as UTF-8 without BOM",
            )
        ]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        return [
            _file_problem(
                display_path,
                "KV005",
                f"byte 0x{raw[error.start]:02x} is not UTF-8; save the file as UTF-8",
                line,
                column,
            )
        ]
    try:
        builder = _Builder()
        data = builder.build(_events(text))
    except _Refused as refused:
        return [
            _file_problem(display_path, refused.code, refused.message, refused.line, refused.column)
        ]
    return Document(
        display_path,
        text,
        data,
        builder.value_positions,
        builder.key_positions,
        builder.written,
        builder.leaves,
    )


def _events(text: str) -> Iterator[Any]:
    """libyaml's event stream (PyYAML's C parser; its pure-Python parser where C is missing)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        yield from yaml.parse(text, Loader=loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or "invalid YAML"
        context = f" ({error.context})" if error.context else ""
        raise _Refused("KV001", mark, f"YAML syntax: {problem}{context}") from None
    except (yaml.YAMLError, ValueError) as error:
        raise _Refused("KV001", None, f"YAML syntax: {error}") from None


class _Builder:
    """Turns the event stream into plain data, recording positions as it goes."""

    def __init__(self) -> None:
        self.value_positions: dict[JsonPath, tuple[int, int]] = {}
        self.key_positions: dict[JsonPath, tuple[int, int]] = {}
        self.written: dict[JsonPath, str] = {}
        self.leaves: dict[JsonPath, Any] = {}

    def build(self, events: Iterator[Any]) -> Any:
        roots: list[Any] = []
        for event in events:
            name = type(event).__name__
            if name in ("StreamStartEvent", "StreamEndEvent", "DocumentEndEvent"):
                continue
            if name == "DocumentStartEvent":
                if roots:
                    raise _Refused(
                        "KV006", event.start_mark, "a file holds one YAML document; found a second"
                    )
                continue
            roots.append(self._node(event, events, (), 0))
        if not roots or roots[0] is None:
            raise _Refused("KV006", None, "the file is empty; a record or model is a YAML mapping")
        if not isinstance(roots[0], dict):
            raise _Refused("KV006", None, "the top level must be a mapping of keys to values")
        return roots[0]

    def _node(self, event: Any, events: Iterator[Any], path: JsonPath, depth: int) -> Any:
        name = type(event).__name__
        if name == "AliasEvent":
            raise _Refused(
                "KV003",
                event.start_mark,
                f"alias *{event.anchor}: anchors and aliases are not allowed; write the value out",
            )
        if getattr(event, "anchor", None):
            raise _Refused(
                "KV003",
                event.start_mark,
                f"anchor &{event.anchor}: anchors and aliases are not allowed; write the value out",
            )
        if getattr(event, "tag", None):
            raise _Refused(
                "KV004", event.start_mark, f"tag {event.tag} is not allowed; values are plain YAML"
            )
        if depth > MAX_DEPTH:
            raise _Refused("KV007", event.start_mark, f"nesting deeper than {MAX_DEPTH} levels")
        position = (event.start_mark.line + 1, event.start_mark.column + 1)
        self.value_positions[path] = position
        if name == "ScalarEvent":
            return self._scalar(event, path)
        if name == "SequenceStartEvent":
            items: list[Any] = []
            for child in events:
                if type(child).__name__ == "SequenceEndEvent":
                    return items
                items.append(self._node(child, events, (*path, len(items)), depth + 1))
        if name == "MappingStartEvent":
            return self._mapping(events, path, depth)
        raise _Refused("KV001", event.start_mark, f"unexpected YAML event {name}")

    def _mapping(self, events: Iterator[Any], path: JsonPath, depth: int) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key_event in events:
            name = type(key_event).__name__
            if name == "MappingEndEvent":
                return mapping
            if (
                name != "ScalarEvent"
                or getattr(key_event, "anchor", None)
                or getattr(key_event, "tag", None)
            ):
                self._node(key_event, events, path, depth + 1)  # raises for anchors and tags
                raise _Refused("KV006", key_event.start_mark, "keys must be plain strings")
            key = key_event.value
            key_position = (key_event.start_mark.line + 1, key_event.start_mark.column + 1)
            if key in mapping:
                first = self.key_positions[(*path, key)]
                raise _Refused(
                    "KV002",
                    key_event.start_mark,
                    f"duplicate key {key!r} (first at line {first[0]}, column {first[1]})",
                )
            self.key_positions[(*path, key)] = key_position
            mapping[key] = self._node(next(events), events, (*path, key), depth + 1)
        return mapping

    def _scalar(self, event: Any, path: JsonPath) -> Any:
        text: str = event.value
        self.written[path] = text
        # quoted or block scalars are strings
        value = text if event.style not in (None, "") else _resolve_plain(text, event.start_mark)
        self.leaves[path] = value
        return value


def _resolve_plain(text: str, mark: Any) -> Any:
    """A plain scalar under the YAML 1.2 core schema."""
    if len(text) > 64 and (_INT.match(text) or _FLOAT.match(text)):
        raise _Refused("KV008", mark, f"a number of {len(text)} digits is not a plausible value")
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text):
        return int(text)
    if _OCT.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        value = float(text)
        if math.isfinite(value):
            return value
    if _INF.match(text) or _NAN.match(text) or _FLOAT.match(text):
        raise _Refused(
            "KV008", mark, f"{text} is not a finite number; state a value or null with the reason"
        )
    return text
