"""Reading a YAML file safely, with the position and written text of every value.

The file goes through the parser's event stream only, and values are built here, so nothing
in a file can construct an object or run code, and every rule is ours:
- YAML 1.2 core schema: ``no`` and ``2026-09-02`` stay strings, ``010`` is 10;
- numbers in hexadecimal or octal (``0x223DA``, ``0o17``) are refused: a reviewer cannot check
  them by eye, and YAML 1.1 readers do not read ``0o17`` as a number at all;
- U+2028, U+2029 and U+0085 are refused: libyaml and other YAML 1.1 readers take them for line
  breaks (a comment could hide a key behind one), YAML 1.2 readers for text;
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

from kvrecords.dataset.layout import DatasetFile, escapes_root
from kvrecords.problems import Problem, Rule

YAML_SYNTAX = Rule(
    "KV001",
    "yaml-syntax",
    "The file is well-formed YAML.",
    "A file the parser cannot read cannot be checked at all; the message gives the parser's "
    "own reason at the line and column where it stopped, or, for a quote left open, at the "
    "opening quote.",
    "kv_at_context: 9.16 GiB",
    "kv_at_context: '9.16 GiB\n# KV001 YAML syntax: the quoted string that opens here is never "
    "closed",
)

DUPLICATE_KEY = Rule(
    "KV002",
    "duplicate-key",
    "No mapping repeats a key.",
    "Most YAML loaders keep the last value silently, so a record could show a reviewer one "
    "figure and feed the dataset another.",
    "bytes_per_token: 65536",
    "bytes_per_token: 65536\nbytes_per_token: 131072\n# KV002 duplicate key 'bytes_per_token'",
)

ANCHOR_ALIAS = Rule(
    "KV003",
    "anchor-alias",
    "No anchors (&a) or aliases (*a).",
    "Aliases hide where a value comes from and allow exponential expansion (billion laughs); "
    "records are small enough to write every value out.",
    "dtype: bf16",
    "dtype: &d bf16\n# KV003 anchor &d: anchors and aliases are not allowed",
)

TAG = Rule(
    "KV004",
    "tag",
    "No explicit tags (!!python/object, !!binary, !custom).",
    "Tags ask a loader to construct objects; some loaders run code for them. Values in this "
    "dataset are plain strings, numbers, booleans, lists and mappings.",
    "engine: {name: vllm}",
    "engine: !!python/object/apply:os.system [id]\n# KV004 tag ... is not allowed",
)

ENCODING = Rule(
    "KV005",
    "encoding",
    "The file is UTF-8 without a byte-order mark, and holds no U+2028, U+2029 or U+0085.",
    "Other encodings and BOMs make diffs, tools and the export disagree about the text. YAML "
    "1.1 readers (libyaml among them) take U+2028, U+2029 and U+0085 for line breaks and YAML "
    "1.2 readers for text, so a key could hide behind a comment for one reader and not another.",
    "publisher: Senn Tech",
    "publisher: Senn\\xff Tech   (a byte that is not UTF-8)\n# KV005 byte 0xff is not UTF-8",
)

DOCUMENT_SHAPE = Rule(
    "KV006",
    "document-shape",
    "One YAML document whose top level is a mapping with string keys.",
    "An empty file, a list, a second document after `---` or a complex key is not a record "
    "or a model.",
    "id: kv-efficiency/example",
    "- id: kv-efficiency/example\n# KV006 the top level must be a mapping of keys to values",
)

LIMITS = Rule(
    "KV007",
    "limits",
    "The file is at most 512 KiB and nested at most 32 levels deep.",
    "The validator runs on strangers' pull requests: a huge or deeply nested file must not "
    "cost minutes or memory. Real records are a few KiB and a few levels deep.",
    "value: {min: 0.43, max: 0.45}",
    "a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n# KV007 nesting deeper than 32 levels",
)

NON_FINITE_NUMBER = Rule(
    "KV008",
    "non-finite-number",
    "Numbers are finite and decimal: no .nan, .inf, numbers of absurd length, or numbers in "
    "hexadecimal or octal (0x223DA, 0o17).",
    "NaN compares false with everything, so it would slip past every range check; a reviewer "
    "cannot check 0x223DA by eye, and YAML 1.1 readers do not read 0o17 as a number at all.",
    "confidence: 0.62",
    "confidence: .nan\n# KV008 .nan is not a finite number",
)

FILE_ACCESS = Rule(
    "KV009",
    "file-access",
    "Every file under records/ and models/ is a readable file inside the dataset.",
    "A symlink leading out of the tree would make the validator read (and CI print) files "
    "that are not part of the dataset.",
    "records/kv-efficiency/example.yaml (a regular file)",
    "records/kv-efficiency/example.yaml -> /etc/passwd\n# KV009 symlink leads outside the dataset",
)

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

    def problem(self, rule: Rule, path: JsonPath, message: str, *, key: bool = False) -> Problem:
        """A problem under ``rule`` at the value (or, with ``key``, the key) at ``path``."""
        line, column = self.locate(path, key=key)
        return rule.problem(self.path, line, column, message)

    def find(self, pattern: re.Pattern[str], start_line: int) -> tuple[int, int] | None:
        """The position of the first match of ``pattern`` at or after ``start_line``."""
        lines = self.text.split("\n")
        offset = sum(len(line) + 1 for line in lines[: start_line - 1])
        match = pattern.search(self.text, offset)
        if match is None:
            return None
        before = self.text[: match.start()]
        return before.count("\n") + 1, match.start() - (before.rfind("\n") + 1) + 1


def value_or_none(data: Any, *path: str | int) -> Any:
    """The value at ``path``, or None when any step of it is missing."""
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def dotted(path: JsonPath) -> str:
    """``methodology.engine.version``, ``layer_groups[1].key_heads``: a path as messages show it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


class _Refused(Exception):
    """Internal: the file breaks one of the rules; carries the problem to report."""

    def __init__(self, rule: Rule, mark: Any, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.line = getattr(mark, "line", 0) + 1
        self.column = getattr(mark, "column", 0) + 1
        self.message = message


def read_document(file_path: Path, display_path: str) -> Document | list[Problem]:
    """Read and parse one file; never raises for anything the file holds."""
    try:
        if file_path.stat().st_size > MAX_FILE_BYTES:
            return [LIMITS.problem(display_path, 1, 1, _size_message(file_path.stat().st_size))]
        raw = file_path.read_bytes()
    except OSError as error:
        return [FILE_ACCESS.problem(display_path, 1, 1, f"cannot read the file: {error.strerror}")]
    return parse_document(raw, display_path)


def read_dataset_file(root: Path, dataset_file: DatasetFile) -> Document | list[Problem]:
    """Read a record, model or hardware file; a symlink out of the tree is refused unread."""
    if escapes_root(root, dataset_file.path):
        message = "symlink leads outside the dataset; commit the file itself"
        return [FILE_ACCESS.problem(dataset_file.display, 1, 1, message)]
    return read_document(dataset_file.path, dataset_file.display)


def _size_message(size: int) -> str:
    return f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,} bytes"


def parse_document(raw: bytes, display_path: str) -> Document | list[Problem]:
    if len(raw) > MAX_FILE_BYTES:
        return [LIMITS.problem(display_path, 1, 1, _size_message(len(raw)))]
    if raw.startswith(b"\xef\xbb\xbf"):
        return [
            ENCODING.problem(
                display_path,
                1,
                1,
                "file starts with a byte-order mark; save it as UTF-8 without BOM",
            )
        ]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        return [
            ENCODING.problem(
                display_path,
                line,
                column,
                f"byte 0x{raw[error.start]:02x} is not UTF-8; save the file as UTF-8",
            )
        ]
    odd_break = None if text.isascii() else _ODD_BREAK.search(text)  # all three are non-ASCII
    if odd_break is not None:
        return [_odd_break_problem(text, odd_break.start(), display_path)]
    try:
        builder = _Builder()
        data = _build(builder, text)
    except _Refused as refused:
        return [refused.rule.problem(display_path, refused.line, refused.column, refused.message)]
    return Document(
        display_path,
        text,
        data,
        builder.value_positions,
        builder.key_positions,
        builder.written,
        builder.leaves,
    )


# Characters YAML 1.1 readers (libyaml among them) take for line breaks and YAML 1.2 readers for
# text: positions, comments and values would differ between readers.
_ODD_BREAK = re.compile("[\u2028\u2029\x85]")
_ODD_BREAK_NAMES = {
    "\u2028": "U+2028 LINE SEPARATOR",
    "\u2029": "U+2029 PARAGRAPH SEPARATOR",
    "\x85": "U+0085 NEXT LINE",
}


def _odd_break_problem(text: str, index: int, display_path: str) -> Problem:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    name = _ODD_BREAK_NAMES[text[index]]
    return ENCODING.problem(
        display_path,
        line,
        column,
        f"{name}: YAML 1.1 readers take it for a line break and YAML 1.2 readers for text, so "
        "they read this file differently; use a line break or a space",
    )


def _events(text: str) -> Iterator[Any]:
    """libyaml's event stream (PyYAML's C parser; its pure-Python parser where C is missing)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    last_event = None
    try:
        for last_event in yaml.parse(text, Loader=loader):
            yield last_event
    except yaml.MarkedYAMLError as error:
        raise _syntax_error(error, last_event) from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position)
        column = error.position - (text.rfind("\n", 0, error.position) + 1)
        raise _Refused(
            YAML_SYNTAX,
            yaml.Mark("", error.position, line, column, None, 0),
            f"YAML syntax: character U+{error.character:04X} is not allowed ({error.reason})",
        ) from None
    except (yaml.YAMLError, ValueError) as error:
        raise _Refused(YAML_SYNTAX, None, f"YAML syntax: {error}") from None


def _build(builder: _Builder, text: str) -> Any:
    """``builder`` fed straight from the parser, with no generator resumed per event between
    them; a syntax error is located by reading the text again through ``_events``, so only a
    broken file pays for tracking the last event."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        return builder.build(iter(loader.get_event, None))
    except (yaml.YAMLError, ValueError):
        for _ in _events(text):
            pass
        raise _Refused(YAML_SYNTAX, None, "YAML syntax: the file cannot be read") from None


def _syntax_error(error: Any, last_event: Any) -> _Refused:
    """The parser's reason, placed where the contributor has to look.

    An unclosed quote is reported at its opening quote, not where the parser gave up (the end
    of the file, or the next quote, many lines on); any other error where the parser stopped.
    """
    problem = error.problem or "invalid YAML"
    stopped = error.problem_mark or error.context_mark
    if error.context == "while scanning a quoted scalar" and error.context_mark is not None:
        return _Refused(
            YAML_SYNTAX,
            error.context_mark,
            f"YAML syntax: the quoted string that opens here is never closed ({problem})",
        )
    if _ends_quoted_lines(last_event, stopped):
        end = last_event.end_mark
        return _Refused(
            YAML_SYNTAX,
            last_event.start_mark,
            f"YAML syntax: the quoted string that opens here runs on to line {end.line + 1}, "
            f"column {end.column} ({problem} after it); is its closing quote missing?",
        )
    context = f" ({error.context})" if error.context else ""
    if "flow" in (error.context or "") and error.context_mark is not None:
        opened = error.context_mark
        context = (
            f" ({error.context} that opens at line {opened.line + 1}, column {opened.column + 1})"
        )
    return _Refused(YAML_SYNTAX, stopped, f"YAML syntax: {problem}{context}")


def _ends_quoted_lines(event: Any, mark: Any) -> bool:
    """Whether ``event`` is a quoted string over several lines that ends on ``mark``'s line."""
    return (
        type(event).__name__ == "ScalarEvent"
        and event.style in ("'", '"')
        and mark is not None
        and event.end_mark.line > event.start_mark.line
        and event.end_mark.line == mark.line
    )


class _Builder:
    """Turns the event stream into plain data, recording positions as it goes."""

    def __init__(self) -> None:
        from yaml import events  # loaded already: the stream comes from PyYAML's parser

        # event classes compared by identity: the build visits every node of every file
        self.scalar = events.ScalarEvent
        self.sequence_start = events.SequenceStartEvent
        self.sequence_end = events.SequenceEndEvent
        self.mapping_start = events.MappingStartEvent
        self.mapping_end = events.MappingEndEvent
        self.value_starts = (self.scalar, self.mapping_start, self.sequence_start)
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
                        DOCUMENT_SHAPE,
                        event.start_mark,
                        "a file holds one YAML document; found a second",
                    )
                continue
            roots.append(self._node(event, events, (), 0))
        if not roots or roots[0] is None:
            raise _Refused(
                DOCUMENT_SHAPE, None, "the file is empty; a record or model is a YAML mapping"
            )
        if not isinstance(roots[0], dict):
            raise _Refused(
                DOCUMENT_SHAPE, None, "the top level must be a mapping of keys to values"
            )
        return roots[0]

    def _node(self, event: Any, events: Iterator[Any], path: JsonPath, depth: int) -> Any:
        kind = type(event)
        if kind not in self.value_starts or event.anchor or event.tag:
            self._refuse_node(event)
        if depth > MAX_DEPTH:
            raise _Refused(LIMITS, event.start_mark, f"nesting deeper than {MAX_DEPTH} levels")
        mark = event.start_mark
        self.value_positions[path] = (mark.line + 1, mark.column + 1)
        if kind is self.scalar:
            text: str = event.value
            self.written[path] = text
            # quoted or block scalars are strings
            value = text if event.style else _resolve_plain(text, mark, path)
            self.leaves[path] = value
            return value
        if kind is self.mapping_start:
            return self._mapping(events, path, depth)
        items: list[Any] = []
        for child in events:
            if type(child) is self.sequence_end:
                return items
            items.append(self._node(child, events, (*path, len(items)), depth + 1))
        return items

    def _refuse_node(self, event: Any) -> None:
        """An alias, an anchor, a tag or an event no value starts with: the reason why not."""
        name = type(event).__name__
        if name == "AliasEvent":
            raise _Refused(
                ANCHOR_ALIAS,
                event.start_mark,
                f"alias *{event.anchor}: anchors and aliases are not allowed; write the value out",
            )
        if getattr(event, "anchor", None):
            raise _Refused(
                ANCHOR_ALIAS,
                event.start_mark,
                f"anchor &{event.anchor}: anchors and aliases are not allowed; write the value out",
            )
        if getattr(event, "tag", None):
            raise _Refused(
                TAG, event.start_mark, f"tag {event.tag} is not allowed; values are plain YAML"
            )
        raise _Refused(YAML_SYNTAX, event.start_mark, f"unexpected YAML event {name}")

    def _mapping(self, events: Iterator[Any], path: JsonPath, depth: int) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        scalar, mapping_end, key_positions = self.scalar, self.mapping_end, self.key_positions
        for key_event in events:
            kind = type(key_event)
            if kind is mapping_end:
                return mapping
            if kind is not scalar or key_event.anchor or key_event.tag:
                self._node(key_event, events, path, depth + 1)  # raises for anchors and tags
                raise _Refused(DOCUMENT_SHAPE, key_event.start_mark, "keys must be plain strings")
            key = key_event.value
            child = (*path, key)
            if key in mapping:
                first = key_positions[child]
                raise _Refused(
                    DUPLICATE_KEY,
                    key_event.start_mark,
                    f"duplicate key {key!r} (first at line {first[0]}, column {first[1]})",
                )
            mark = key_event.start_mark
            key_positions[child] = (mark.line + 1, mark.column + 1)
            mapping[key] = self._node(next(events), events, child, depth + 1)
        return mapping


def _resolve_plain(text: str, mark: Any, path: JsonPath = ()) -> Any:
    """A plain scalar under the YAML 1.2 core schema."""
    if text[:1].isalpha():  # no number starts with a letter: null, a boolean or text
        if text in _NULL:
            return None
        return True if text in _TRUE else False if text in _FALSE else text
    if len(text) > 64 and (_INT.match(text) or _FLOAT.match(text)):
        raise _Refused(
            NON_FINITE_NUMBER, mark, f"a number of {len(text)} digits is not a plausible value"
        )
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text):
        return int(text)
    if _OCT.match(text) or _HEX.match(text):
        base, name = (8, "octal") if text[1] == "o" else (16, "hexadecimal")
        # the decimal only for a plausible length (a long one would cost quadratic time)
        decimal = f" ({int(text[2:], base)})" if len(text) <= 24 else ""
        shown = text if len(text) <= 24 else f"{text[:24]}..."
        where = f"{dotted(path)}: " if path else ""
        raise _Refused(
            NON_FINITE_NUMBER,
            mark,
            f"{where}{shown} is a number in {name}; write it in decimal{decimal} so that a "
            "reviewer can check it, or quote it if it is text",
        )
    if _FLOAT.match(text):
        value = float(text)
        if math.isfinite(value):
            return value
    if _INF.match(text) or _NAN.match(text) or _FLOAT.match(text):
        raise _Refused(
            NON_FINITE_NUMBER,
            mark,
            f"{text} is not a finite number; state a value or null with the reason",
        )
    return text
