"""Canonical formatting of dataset files (``kvrecords fmt``), through ruamel.yaml's round trip.

One module of about 1,000 lines on purpose: reading, rebuilding, laying comments back and the
guard are one contract that shares private types (the anchored comments, the builder's string
styles); as separate modules they would be a public API nobody else uses.

The canonical form:
- the first line is the schema modeline;
- keys in the order of the schema's ``properties`` at every level (``$ref``, ``oneOf`` and the
  ``if``/``then`` branch a mapping's ``kind`` selects are followed); unknown keys keep their
  relative order after the known ones;
- mappings indented by 2, sequence dashes by 2 under their key (``  - item``);
- a string that contains a newline or does not fit on its line is a folded block (``>-``)
  wrapped at 96 columns, when folding gives back exactly the same string (else it stays as it
  is); a short string is plain when it reads back as the same string both under YAML 1.2 (this
  project's reader) and under YAML 1.1 (PyYAML and many others, which read ``no``, ``on`` or
  ``12:30`` as a boolean or a number), else quoted: double quotes for a string with characters
  that are not printable (written as escapes), else single quotes;
- tabs between tokens (``key:<tab>value``) become spaces;
- numbers exactly as written (``0.70`` stays ``0.70``), ``null`` for nulls, flow mappings
  such as ``{about: 78000000}`` stay flow;
- every comment kept, next to the key or item it precedes or ends the line of; blank lines
  between entries are dropped.

ruamel ties a comment to the key *before* it, so reordering keys would move comments away from
what they describe; comments are therefore read here by position and written back beside the
node they belong to. Every result is checked before it is returned: the safe reader must read
the same data, the same number texts and the same comments back, else ``UnsafeFormat``.
"""

from __future__ import annotations

import bisect
import functools
import io
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.checks.files import MODELINE_PREFIX
from kvrecords.dataset.atomic import write_atomically
from kvrecords.dataset.document import (
    FILE_ACCESS,
    Document,
    JsonPath,
    parse_document,
    read_document,
)
from kvrecords.dataset.layout import SCHEMA_DIR, classify
from kvrecords.problems import Problem

WIDTH = 96
KINDS = ("record", "model", "hardware")
# Where each kind's files live relative to schema/: records/kv-efficiency/x.yaml, models/x.yaml.
DEFAULT_SCHEMA_REFS = {
    "record": "../../schema/record.schema.json",
    "model": "../schema/model.schema.json",
    "hardware": "../schema/hardware.schema.json",
}
_NO_WRAP = 1 << 16  # ruamel wraps nothing itself; folds are placed here
_MAX_SCHEMA_DEPTH = 64  # bounds $ref chains in a (possibly forked) schema


class FormatRefused(ValueError):
    """The file cannot be formatted safely as it is; ``problems`` say why (as validate would)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "; ".join(f"{p.path}:{p.line}:{p.column}: {p.code} {p.message}" for p in problems)
        )


class UnsafeFormat(ValueError):
    """The formatted text would not read back the same; nothing is written."""


# ---- files ----------------------------------------------------------------------------------


def format_file(path: Path, root: Path) -> bool:
    """Format one dataset file in place (atomically); True when it changed."""
    original, formatted = _format_path(path, root)
    if formatted == original:
        return False
    write_atomically(path, formatted)
    return True


def check_file(path: Path, root: Path) -> bool:
    """True when the file is already in canonical form; never writes."""
    original, formatted = _format_path(path, root)
    return formatted == original


class FileOutcome(NamedTuple):
    """One file through fmt: whether it changes (or would), and why it was refused if it was."""

    path: Path
    display: str
    changed: bool
    refused: tuple[str, ...] = ()  # the lines that say why, when the file was not formatted


# Above this many files, fmt works in one process per core (forked, so nothing is re-imported):
# the round trip costs about 20 ms a file, a worker about 50 ms to start.
PARALLEL_FILES = 40


def format_files(paths: list[Path], root: Path, *, check: bool) -> list[FileOutcome]:
    """Each file formatted in place, or with ``check`` only compared, in the order given."""
    import multiprocessing
    import threading

    jobs = min(os.cpu_count() or 1, 8)
    forkable = "fork" in multiprocessing.get_all_start_methods()
    # forking a process that runs other threads may deadlock: then one process does it all
    if len(paths) < PARALLEL_FILES or jobs < 2 or not forkable or threading.active_count() > 1:
        return _outcomes(paths, root, check)
    from concurrent.futures import ProcessPoolExecutor

    size = max(1, len(paths) // (jobs * 4))
    chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
    work = functools.partial(_outcomes, root=root, check=check)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        return [outcome for chunk in pool.map(work, chunks) for outcome in chunk]


def _outcomes(paths: list[Path], root: Path, check: bool) -> list[FileOutcome]:
    from kvrecords.runner.reporters import problem_line

    outcomes = []
    for path in paths:
        shown = file_kind(root, path)
        display = shown[1] if shown else str(path)
        try:
            changed = not check_file(path, root) if check else format_file(path, root)
            outcomes.append(FileOutcome(path, display, changed))
        except FormatRefused as error:
            lines = tuple(problem_line(problem) for problem in error.problems)
            outcomes.append(FileOutcome(path, display, False, lines))
        except ValueError as error:
            outcomes.append(
                FileOutcome(path, display, False, (f"{display}: not formatted: {error}",))
            )
    return outcomes


def first_change(path: Path, root: Path) -> str:
    """What formatting changes first in a file: ``line 182 'confidence:\\t0.62' becomes
    'confidence: 0.62'``, so that a check says what is wrong, not only that something is."""
    original, formatted = _format_path(path, root)
    before, after = original.splitlines(), formatted.splitlines()
    for number, (old, new) in enumerate(zip(before, after, strict=False), start=1):
        if old != new:
            return f"line {number} {_shown(old)} becomes {_shown(new)}"
    if len(before) != len(after):
        return f"line {min(len(before), len(after)) + 1}: lines are added or removed"
    return "line endings or the final newline change"


def _shown(line: str) -> str:
    text = line if len(line) <= 70 else line[:67] + "..."
    return repr(text)


def file_kind(root: Path, path: Path) -> tuple[str, str] | None:
    """(kind, path relative to the root) of a record, model or hardware file, else None."""
    found = classify(root.resolve(), path)
    return None if found is None else (found.kind, found.display)


@functools.cache
def _schema_at(schema_file: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_file.read_text(encoding="utf-8"))
    return loaded


def load_schema(root: Path, kind: str) -> dict[str, Any]:
    """The dataset's own schema for ``kind`` (a fork formats by its own key order)."""
    return _schema_at(root.resolve() / SCHEMA_DIR / f"{kind}.schema.json")


def _format_path(path: Path, root: Path) -> tuple[str, str]:
    root = root.resolve()
    found = file_kind(root, path)
    if found is None:
        raise ValueError(f"{path}: not a record, model or hardware file of the dataset at {root}")
    kind, display = found
    if path.is_symlink():
        # Replacing a link with a file (or writing through it) would change what it points at.
        raise FormatRefused(
            [FILE_ACCESS.problem(display, 1, 1, "is a symlink; fmt rewrites regular files only")]
        )
    document = read_document(path, display)
    if not isinstance(document, Document):
        raise FormatRefused(document)
    schema_file = root / SCHEMA_DIR / f"{kind}.schema.json"
    schema_ref = Path(os.path.relpath(schema_file, (root / display).parent)).as_posix()
    return document.text, _format_document(document, load_schema(root, kind), schema_ref)


# ---- text -----------------------------------------------------------------------------------


def format_text(
    text: str,
    kind: str,
    schema: dict[str, Any],
    *,
    schema_ref: str | None = None,
    display_path: str = "<text>",
) -> str:
    """The canonical form of ``text``, a ``kind`` file ("record", "model" or "hardware").

    ``schema`` is the loaded JSON schema (for key order); ``schema_ref`` the modeline's path to
    it, by default where the kind's files live. ``FormatRefused`` when the safe reader refuses
    the text, ``UnsafeFormat`` when the result would not read back the same.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    document = parse_document(text.encode("utf-8"), display_path)
    if not isinstance(document, Document):
        raise FormatRefused(document)
    return _format_document(document, schema, schema_ref or DEFAULT_SCHEMA_REFS[kind])


def format_data(data: dict[str, Any], kind: str, schema: dict[str, Any]) -> str:
    """The canonical text of a new file's data (what ``new`` and ``model import-hf`` write)."""
    from ruamel.yaml import YAML

    stream = io.StringIO()
    YAML(typ="rt").dump(data, stream)
    return format_text(stream.getvalue(), kind, schema)


def _format_document(original: Document, schema: dict[str, Any], schema_ref: str) -> str:
    # One kind of line break, so that positions, comments and ruamel agree on the lines; tabs
    # between tokens, which libyaml accepts and ruamel does not, as spaces (column for column).
    document = original
    text = _untabbed(original.text.replace("\r\n", "\n").replace("\r", "\n"))
    if text != original.text:
        document = _parsed(text, original.path)
    comments = _without_modelines(_comments(text), document)
    builder = _Builder(document, _SchemaView(schema))
    tree = _tree_from_events(text)
    try:
        if tree is None:
            raise _NeedsRoundTrip
        body = builder.dump(builder.build(tree, document.data, (), schema, 0, in_flow=False))
    except _NeedsRoundTrip:
        tree = _round_trip_tree(text, original.path)
        body = builder.dump(builder.build(tree, document.data, (), schema, 0, in_flow=False))
    laid_out = _parsed(body, original.path)
    commented = _with_comments(body, laid_out, _anchor(comments, document))
    result = f"{MODELINE_PREFIX}{schema_ref}\n{commented}"
    _guard(original, result, comments)
    return result


class _NeedsRoundTrip(Exception):
    """The tree built from libyaml's events cannot say what ruamel's own reader would."""


def _round_trip_tree(text: str, display_path: str) -> Any:
    """ruamel.yaml's round-trip tree of ``text``: exact for every scalar style and type, and
    about five times slower than ``_tree_from_events``, so used only where that one cannot
    answer."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    loader = YAML(typ="rt")
    loader.preserve_quotes = True
    try:
        return loader.load(text)
    except YAMLError as error:  # ruamel reads a corner of YAML differently: leave the file
        raise UnsafeFormat(_unreadable(display_path, error)) from None


def _tree_from_events(text: str) -> Any:
    """The tree ruamel's round-trip reader (quotes kept) would build, from libyaml's events.

    The builder uses of that tree only the mappings' and sequences' flow style, the keys, each
    string's style and the text of a string ruamel types otherwise; those are built here from
    libyaml's events. None when a key is quoted or not a scalar (ruamel keeps a key's quotes);
    a folded string's own fold positions, and the value of a string ruamel types otherwise,
    are asked for only where the builder needs them, which then asks for ruamel's tree. The text was read by the safe reader already, so it
    parses and holds no anchor or tag.
    """
    import yaml
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import (
        DoubleQuotedScalarString,
        LiteralScalarString,
        SingleQuotedScalarString,
    )

    scalar_types = {
        "'": SingleQuotedScalarString,
        '"': DoubleQuotedScalarString,
        "|": LiteralScalarString,
        ">": _EventFolded,
    }
    resolve = _ruamel_plain_tag
    scalar, mapping_start, sequence_start = (
        yaml.ScalarEvent,
        yaml.MappingStartEvent,
        yaml.SequenceStartEvent,
    )
    mapping_end, sequence_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    stack: list[Any] = []
    keys: list[Any] = []  # per open mapping: the key waiting for its value, else None
    root: Any = None
    events: Iterator[Any] = yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for event in events:
        kind = type(event)
        if kind is scalar:
            if event.style:
                value: Any = scalar_types[event.style](event.value)
            else:
                tag = resolve(event.value)
                if tag == "str":
                    value = event.value
                elif tag == "date":
                    value = _date(event.value)
                else:  # a number or null to both readers, or else a string ruamel types
                    value = _EventTyped(event.value)
        elif kind is mapping_start or kind is sequence_start:
            value = CommentedMap() if kind is mapping_start else CommentedSeq()
            if event.flow_style:
                value.fa.set_flow_style()
        elif kind is mapping_end or kind is sequence_end:
            value = stack.pop()
            keys.pop()
            if not stack:
                root = value
            continue
        else:
            continue
        if stack:
            parent = stack[-1]
            if isinstance(parent, list):
                parent.append(value)
            elif keys[-1] is None:
                if kind is not scalar or event.style:
                    return None  # a quoted or complex key: ruamel keeps its quotes
                keys[-1] = value
            else:
                parent[keys[-1]] = value
                keys[-1] = None
        if kind is mapping_start or kind is sequence_start:
            stack.append(value)
            keys.append(None)
    return root


class _EventFolded(str):
    """A folded string read from events: its own fold positions are not known (``_fresh``)."""


class _EventTyped(str):
    """A plain scalar ruamel types as other than a string or a date; where the safe reader
    reads a string there, ruamel's typed value is written, so its tree is asked for."""


_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _date(text: str) -> Any:
    import datetime

    return datetime.date.fromisoformat(text)


@functools.cache
def _ruamel_resolver() -> Any:
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver(version=None)


@functools.lru_cache(maxsize=4096)
def _ruamel_plain_tag(text: str) -> str:
    """How ruamel's round-trip reader types a plain scalar: str, date (``2026-09-02``, which
    it writes back as it was) or other."""
    from ruamel.yaml.nodes import ScalarNode

    tag = _ruamel_resolver().resolve(ScalarNode, text, (True, False))
    if tag == "tag:yaml.org,2002:str":
        return "str"
    if tag == "tag:yaml.org,2002:timestamp" and _DATE.fullmatch(text):
        return "date"
    return "other"


def _unreadable(display_path: str, error: Exception) -> str:
    """Where and why ruamel.yaml (which fmt writes with) cannot read a file the validator reads."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"{display_path}:{mark.line + 1}:{mark.column + 1}" if mark else display_path
    problem = getattr(error, "problem", None) or str(error).split("\n", 1)[0]
    context = getattr(error, "context", None)
    reason = f"{problem} ({context})" if context else problem
    return (
        f"{where}: ruamel.yaml, which fmt writes with, cannot read this: {reason}; the validator "
        "can, so the data is fine, but write this spot in plainer YAML to format the file; "
        "nothing written"
    )


def _untabbed(text: str) -> str:
    """``text`` with every tab between two tokens (outside scalars and comments) as a space.

    YAML allows tabs as separators (``key:<tab>value``) and libyaml reads them; ruamel.yaml
    refuses them. A tab is one column to both scanners, so positions do not move.
    """
    if "\t" not in text:
        return text
    import yaml

    chars = list(text)
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    position = 0
    for token in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        start = line_starts[token.start_mark.line] + token.start_mark.column
        end = line_starts[token.end_mark.line] + token.end_mark.column
        if start > position:
            _untab_gap(text, chars, position, start)
        if getattr(token, "style", None) in ("|", ">"):
            header_end = text.find("\n", start)  # the header: indicators, space, a comment
            _untab_gap(text, chars, start, len(text) if header_end < 0 else header_end)
        position = max(position, end)
    _untab_gap(text, chars, position, len(text))
    return "".join(chars)


def _untab_gap(text: str, chars: list[str], start: int, end: int) -> None:
    """Tabs to spaces in a gap between tokens, up to each line's comment (kept as written)."""
    in_comment = False
    for index in range(start, end):
        ch = text[index]
        if ch == "\n":
            in_comment = False
        elif ch == "#":
            in_comment = True
        elif ch == "\t" and not in_comment:
            chars[index] = " "


def _parsed(text: str, display_path: str) -> Document:
    """Text this module produced, read back; it must read (else it is this module's fault)."""
    document = parse_document(text.encode("utf-8"), display_path)
    if not isinstance(document, Document):
        raise UnsafeFormat(
            f"{display_path}: the formatted text does not read back: {document[0].message}"
        )
    return document


# ---- comments -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Comment:
    line: int  # 1-based
    column: int  # 1-based
    text: str  # from '#' to the end of the line, trailing spaces dropped
    trailing: bool  # code precedes it on its line


def _comments(text: str) -> list[_Comment]:
    """Every comment, found in the gaps between the scanner's tokens (never inside a scalar)."""
    import yaml

    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    found: list[_Comment] = []
    position = 0
    # the validator's own scanner (libyaml through PyYAML), so both agree on what is YAML
    for token in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        # Offsets from line and column (characters), whichever scanner (C or Python) runs.
        start = line_starts[token.start_mark.line] + token.start_mark.column
        end = line_starts[token.end_mark.line] + token.end_mark.column
        if start > position:
            found += _comments_between(text, position, start, line_starts)
        if getattr(token, "style", None) in ("|", ">"):
            # A block scalar's header line may end in a comment, inside the token's span.
            header_end = text.find("\n", start)
            found += _comments_between(
                text, start, len(text) if header_end < 0 else header_end, line_starts
            )
        position = max(position, end)
    found += _comments_between(text, position, len(text), line_starts)
    return found


def _comments_between(
    text: str, start: int, end: int, line_starts: list[int]
) -> Iterator[_Comment]:
    """Comments in a gap between tokens, which holds nothing but whitespace and comments."""
    index = text.find("#", start, end)
    while index >= 0:
        line_end = text.find("\n", index)
        line_end = len(text) if line_end < 0 else line_end
        line = bisect.bisect_right(line_starts, index)
        line_start = line_starts[line - 1]
        code_before = text[line_start:index].strip() != ""
        yield _Comment(line, index - line_start + 1, text[index:line_end].rstrip(), code_before)
        index = text.find("#", line_end, end)


def _without_modelines(comments: list[_Comment], document: Document) -> list[_Comment]:
    """The comments to keep: a schema modeline above the first node is rewritten, not kept."""
    first_line = min((line for line, _ in document.key_positions.values()), default=1)
    return [
        c
        for c in comments
        if c.trailing
        or c.column != 1
        or c.line >= first_line
        or not c.text.startswith(MODELINE_PREFIX)
    ]


def _node_starts(document: Document) -> list[tuple[int, int, int, JsonPath]]:
    """(line, column, depth, path) where each key and each sequence item starts, in text order."""
    starts = [
        (line, column, len(path), path) for path, (line, column) in document.key_positions.items()
    ]
    starts += [
        (line, column, len(path), path)
        for path, (line, column) in document.value_positions.items()
        if path and isinstance(path[-1], int)
    ]
    return sorted(starts, key=lambda start: start[:3])


@dataclass(frozen=True)
class _Anchored:
    comment: _Comment
    where: str  # at the "start", "before" the node's line, "after" it on its line, at the "end"
    path: JsonPath


def _anchor(comments: list[_Comment], document: Document) -> list[_Anchored]:
    """Each comment tied to a node: the outermost node it precedes, or the last node on its line.

    Comments above the first node are the file's header and stay at the top.
    """
    starts = _node_starts(document)
    positions = [start[:3] for start in starts]
    anchored = []
    for comment in comments:
        if comment.trailing:
            index = bisect.bisect_left(positions, (comment.line, comment.column, -1)) - 1
            if index >= 0:
                anchored.append(_Anchored(comment, "after", starts[index][3]))
                continue
        index = bisect.bisect_left(positions, (comment.line + 1, 0, 0))
        if index == 0:
            anchored.append(_Anchored(comment, "start", ()))  # the file's own header
        elif index < len(starts):
            anchored.append(_Anchored(comment, "before", starts[index][3]))
        else:
            anchored.append(_Anchored(comment, "end", ()))
    return anchored


def _line_of(document: Document, path: JsonPath) -> int:
    """0-based line where the node at ``path`` starts (its key, or its item's value)."""
    if path and isinstance(path[-1], str):
        return document.key_positions[path][0] - 1
    return document.value_positions[path][0] - 1


def _with_comments(body: str, laid_out: Document, anchored: list[_Anchored]) -> str:
    lines = body.rstrip("\n").split("\n")
    before: dict[int, list[str]] = {}
    after: dict[int, str] = {}
    start: list[str] = []
    end: list[str] = []
    for item in anchored:
        if item.where in ("start", "end"):
            indent = 0 if item.where == "start" else item.comment.column - 1
            (start if item.where == "start" else end).append(" " * indent + item.comment.text)
            continue
        line = _line_of(laid_out, item.path)
        if item.where == "after" and line not in after:
            after[line] = item.comment.text
            continue
        indent = len(lines[line]) - len(lines[line].lstrip(" "))
        before.setdefault(line, []).append(" " * indent + item.comment.text)
    out = start
    for number, line_text in enumerate(lines):
        out += before.get(number, [])
        out.append(f"{line_text}  {after[number]}" if number in after else line_text)
    return "\n".join(out + end) + "\n"


# ---- key order ------------------------------------------------------------------------------


class _SchemaView:
    """Key order from a JSON schema: which (sub)schemas describe a given mapping."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            return {}  # only the schema's own $defs; remote schemas add no order
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node

    def applicable(self, schema: Any, value: Any, depth: int = 0) -> list[dict[str, Any]]:
        """Every subschema that applies to ``value``: refs, matching branches, if/then."""
        if not isinstance(schema, dict) or depth > _MAX_SCHEMA_DEPTH:
            return []
        found = [schema]
        ref = schema.get("$ref")
        if isinstance(ref, str):
            found += self.applicable(self._target(ref), value, depth + 1)
        for keyword in ("oneOf", "anyOf"):
            for branch in schema.get(keyword, []):
                if self._constants_match(branch, value, depth + 1):
                    found += self.applicable(branch, value, depth + 1)
        for part in schema.get("allOf", []):
            found += self.applicable(part, value, depth + 1)
        if "if" in schema:
            chosen = "then" if self._constants_match(schema["if"], value, depth + 1) else "else"
            found += self.applicable(schema.get(chosen), value, depth + 1)
        return found

    def _constants_match(self, schema: Any, value: Any, depth: int) -> bool:
        """Whether a branch's ``const`` properties (a layer group's ``kind``) match the mapping."""
        if not isinstance(value, dict):
            return True
        for part in self.applicable(schema, None, depth):
            for name, property_schema in part.get("properties", {}).items():
                constants = [
                    p["const"]
                    for p in self.applicable(property_schema, None, depth)
                    if "const" in p
                ]
                if constants and (name not in value or value[name] != constants[0]):
                    return False
        return True

    @staticmethod
    def key_order(schemas: list[dict[str, Any]]) -> dict[str, int]:
        order: dict[str, int] = {}
        for schema in schemas:
            for name in schema.get("properties", {}):
                order.setdefault(name, len(order))
        return order

    @staticmethod
    def child(schemas: list[dict[str, Any]], key: str | None) -> dict[str, Any]:
        """The schema of a mapping's ``key`` (or, with None, of a sequence's items)."""
        if key is None:
            parts = [s["items"] for s in schemas if isinstance(s.get("items"), dict)]
        else:
            parts = [s["properties"][key] for s in schemas if key in s.get("properties", {})]
            if not parts:
                parts = [
                    s["additionalProperties"]
                    for s in schemas
                    if isinstance(s.get("additionalProperties"), dict)
                ]
        return {"allOf": parts}


# ---- building the canonical tree ------------------------------------------------------------


class _Number(str):
    """A number's text exactly as written: ``0.70`` and ``+1`` are not re-rendered."""


@functools.cache
def _representer() -> Any:
    """ruamel's round-trip representer with ``null`` for None and numbers as written."""
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        """A subclass, so that these representers do not change ruamel for its other users."""

    def represent_null(representer: Any, data: None) -> Any:
        return representer.represent_scalar("tag:yaml.org,2002:null", "null")

    def represent_number(representer: Any, data: _Number) -> Any:
        # Tagged as the text resolves, so that the number is written plain (untagged).
        tag = representer.dumper.resolver.resolve(ScalarNode, str(data), (True, False))
        return representer.represent_scalar(tag, str(data))

    Representer.add_representer(type(None), represent_null)
    Representer.add_representer(_Number, represent_number)
    return Representer


class _Builder:
    """Rebuilds ruamel's tree without comments, in schema order, with canonical string styles."""

    def __init__(self, document: Document, view: _SchemaView) -> None:
        from ruamel.yaml import YAML

        self.yaml = YAML(typ="rt")
        self.yaml.Representer = _representer()
        self.yaml.indent(mapping=2, sequence=4, offset=2)
        self.yaml.width = _NO_WRAP
        self.document = document
        self.view = view

    def dump(self, tree: Any) -> str:
        stream = io.StringIO()
        self.yaml.dump(tree, stream)
        return stream.getvalue()

    def build(
        self, node: Any, data: Any, path: JsonPath, schema: Any, column: int, *, in_flow: bool
    ) -> Any:
        """``column``: where this mapping's keys (or this sequence's dashes) start."""
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        if isinstance(node, CommentedMap) and isinstance(data, dict):
            return self._mapping(node, data, path, schema, column, in_flow=in_flow)
        if isinstance(node, CommentedSeq) and isinstance(data, list):
            return self._sequence(node, data, path, schema, column, in_flow=in_flow)
        raise UnsafeFormat(f"{self.document.path}: ruamel and the safe reader disagree at {path}")

    def _mapping(
        self,
        node: Any,
        data: dict[str, Any],
        path: JsonPath,
        schema: Any,
        column: int,
        *,
        in_flow: bool,
    ) -> Any:
        """The mapping's keys in schema order (unknown keys after, in text order)."""
        from ruamel.yaml.comments import CommentedMap

        schemas = self.view.applicable(schema, data)
        order = self.view.key_order(schemas)
        # ruamel and the safe reader list keys in the same (text) order: pair them.
        pairs = list(zip(node.keys(), data.keys(), strict=True))
        ranked = sorted(
            range(len(pairs)),
            key=lambda i: (0, order[pairs[i][1]], i) if pairs[i][1] in order else (1, 0, i),
        )
        mapping = CommentedMap()
        flow = _keep_flow_style(node, mapping, in_flow)
        for index in ranked:
            node_key, key = pairs[index]
            line_start = column + len(str(node_key)) + 2
            mapping[node_key] = self._child(
                node[node_key],
                data[key],
                (*path, key),
                self.view.child(schemas, key),
                column + 2,
                line_start,
                flow,
            )
        return mapping

    def _sequence(
        self,
        node: Any,
        data: list[Any],
        path: JsonPath,
        schema: Any,
        column: int,
        *,
        in_flow: bool,
    ) -> Any:
        from ruamel.yaml.comments import CommentedSeq

        item_schema = self.view.child(self.view.applicable(schema, data), None)
        sequence = CommentedSeq()
        flow = _keep_flow_style(node, sequence, in_flow)
        for index, (value, item) in enumerate(zip(node, data, strict=True)):
            sequence.append(
                self._child(value, item, (*path, index), item_schema, column + 2, column + 2, flow)
            )
        return sequence

    def _child(
        self,
        node: Any,
        data: Any,
        path: JsonPath,
        schema: Any,
        column: int,
        line_start: int,
        in_flow: bool,
    ) -> Any:
        """A value inside a mapping or sequence: a collection built, or a scalar styled."""
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        if isinstance(node, (CommentedMap, CommentedSeq)):
            return self.build(node, data, path, schema, column, in_flow=in_flow)
        return self.scalar(node, data, path, column, line_start, in_flow=in_flow)

    def scalar(
        self,
        node: Any,
        value: Any,
        path: JsonPath,
        content_column: int,
        line_start: int,
        *,
        in_flow: bool,
    ) -> Any:
        """One scalar in canonical style; ``line_start`` is where it starts when on one line."""
        if value is None or isinstance(value, bool):
            return value  # written canonically: null, true, false
        if isinstance(value, (int, float)):
            return _Number(self.document.written[path])
        if isinstance(node, _EventTyped):
            raise _NeedsRoundTrip
        if not isinstance(node, str):
            return node  # a string ruamel types otherwise (2026-09-02, 1_000): its text is kept
        if in_flow:
            return self.short(value)
        if "\n" in value or line_start + len(value) > WIDTH:
            positions = _fold_positions(value, WIDTH - content_column)
            # Fold when it helps: a line break, a wrap, or a line of its own that fits.
            if "\n" in value or positions or content_column + len(value) <= WIDTH:
                return self.fold(value, positions) or _fresh(node)
        return self.short(value)

    def short(self, value: str) -> Any:
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

        if "\n" not in value and _reads_back_plain(value):
            return str(value)  # ruamel still quotes it where its own rules need quotes
        if not value.isprintable():
            # ruamel writes control characters and line-break-like ones as escapes only here
            return DoubleQuotedScalarString(value)
        if "'" in value and not any(ch in value for ch in '"\\') and value.isprintable():
            return DoubleQuotedScalarString(value)  # "it's" reads better than 'it''s'
        return SingleQuotedScalarString(value)

    def fold(self, value: str, positions: list[int]) -> Any:
        """A folded block broken at ``positions``, or None when it would not read back the same."""
        from ruamel.yaml.scalarstring import FoldedScalarString

        folded = FoldedScalarString(value)
        folded.fold_pos = positions
        if value.isprintable() and value == value.strip() and "  " not in value:
            # One paragraph of printable words folded at single spaces reads back the same
            # (and the guard re-reads the whole file); anything else is tried first.
            return folded
        sample = self.dump({"k": folded})
        if not sample.startswith("k: >"):
            return None  # ruamel found the string unfit for a block scalar
        read = parse_document(sample.encode("utf-8"), "<fold>")
        if not isinstance(read, Document) or read.data.get("k") != value:
            return None
        return folded


def _fresh(node: str) -> Any:
    """The same scalar in the same style, without ruamel's attached comment (written by us)."""
    from ruamel.yaml.scalarstring import FoldedScalarString, ScalarString

    if isinstance(node, _EventFolded):
        raise _NeedsRoundTrip  # its fold positions are in ruamel's tree
    if not isinstance(node, ScalarString):
        return str(node)
    copy = type(node)(str(node))
    if isinstance(node, FoldedScalarString) and hasattr(node, "fold_pos"):
        copy.fold_pos = list(node.fold_pos)
    return copy


def _reads_back_plain(value: str) -> bool:
    """Whether ``key: value`` reads back as this very string under the YAML 1.2 core schema
    (this project's reader) and as a string under YAML 1.1 (PyYAML and many other readers)."""
    if not value.isprintable():
        return False
    read = parse_document(f"k: {value}\n".encode(), "<plain>")
    if not isinstance(read, Document):
        return False
    loaded = read.data.get("k")
    return isinstance(loaded, str) and loaded == value and _yaml11_string(value)


# YAML 1.1 booleans that PyYAML's resolver leaves out but the 1.1 type repository (and readers
# that follow it) includes.
_YAML11_SHORT_BOOLEANS = frozenset({"y", "Y", "n", "N"})


def _yaml11_string(value: str) -> bool:
    """Whether a YAML 1.1 reader takes the plain scalar ``value`` for a string: not ``no``,
    ``on``, ``y``, ``12:30``, ``1_000``, ``.5``, ``0b101``, ``2026-09-02``, ``~``, ``<<``..."""
    import yaml

    if value in _YAML11_SHORT_BOOLEANS:
        return False
    tag = _yaml11_resolver().resolve(yaml.ScalarNode, value, (True, False))
    return bool(tag == "tag:yaml.org,2002:str")


@functools.cache
def _yaml11_resolver() -> Any:
    import yaml

    return yaml.resolver.Resolver()


def _fold_positions(value: str, available: int) -> list[int]:
    """Greedy wrap: indices of the spaces to fold at so lines fit ``available`` columns.

    Only a single space between two non-space characters folds back to exactly one space.
    """
    positions: list[int] = []
    offset = 0
    for paragraph in value.split("\n"):
        end = offset + len(paragraph)
        line_start = offset
        previous: int | None = None
        for index in range(offset + 1, end - 1):
            if value[index] != " " or value[index - 1] == " " or value[index + 1] == " ":
                continue
            if index - line_start > available and previous is not None:
                positions.append(previous)
                line_start = previous + 1
            previous = index
        if end - line_start > available and previous is not None:
            positions.append(previous)
        offset = end + 1
    return positions


# ---- the guard ------------------------------------------------------------------------------


def _guard(before: Document, text: str, comments: list[_Comment]) -> None:
    """Refuse a result that reads back different data, number texts or comments."""
    after = _parsed(text, before.path)
    if not _same(before.data, after.data):
        raise UnsafeFormat(f"{before.path}: formatting would change the data; nothing written")
    if _number_texts(before) != _number_texts(after):
        raise UnsafeFormat(f"{before.path}: formatting would rewrite a number; nothing written")
    hidden = sorted(
        f"U+{ord(ch):04X}"
        for ch in set(text) - set(before.text)
        if not ch.isprintable() and ch not in "\n\t"
    )
    if hidden:
        # ruamel writes some characters raw that the file had as escapes ("\u202e")
        raise UnsafeFormat(
            f"{before.path}: formatting would write {', '.join(hidden)} as a raw character where "
            "the file has an escape; nothing written"
        )
    kept = Counter(c.text for c in _without_modelines(_comments(text), after))
    if kept != Counter(c.text for c in comments):
        lost = sorted((Counter(c.text for c in comments) - kept).elements())
        raise UnsafeFormat(f"{before.path}: formatting would lose comments {lost}; nothing written")


def _same(left: Any, right: Any) -> bool:
    """Equality that also tells 1 from 1.0 and from true."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(
            _same(a, b) for a, b in zip(left, right, strict=True)
        )
    return bool(left == right)


def _number_texts(document: Document) -> dict[JsonPath, str]:
    return {
        path: text for path, text in document.written.items() if _is_number(document.data, path)
    }


def _is_number(data: Any, path: JsonPath) -> bool:
    for part in path:
        data = data[part]
    return isinstance(data, (int, float)) and not isinstance(data, bool)


def _keep_flow_style(node: Any, fresh: Any, in_flow: bool) -> bool:
    """A collection written in flow style ({a: 1}, [1, 2]) stays so, and so do its children."""
    if node.fa.flow_style():
        fresh.fa.set_flow_style()
    return in_flow or bool(node.fa.flow_style())
