"""A review as Markdown (a pull request's comment and job summary) or as JSON.

Everything a record holds comes from a stranger's pull request, so every value goes into the
Markdown inside a code span: no link, image, mention or HTML in a record can reach the page.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kvrecords.checks.references import GEOMETRY_OF
from kvrecords.tools.review import (
    DependencyReview,
    FieldChange,
    Recomputation,
    RecordReview,
    Review,
)

# The comment the workflow updates is found by this line (never shown by GitHub).
MARKER = "<!-- kvrecords-review -->"
MAX_CELL = 160


def to_json(review: Review) -> str:
    data = {
        "base": {"ref": review.base.ref, "commit": review.base.commit},
        "head": None
        if review.head is None
        else {"ref": review.head.ref, "commit": review.head.commit},
        "counts": review.counts(),
        "dependencies": [_plain(d) for d in review.dependencies],
        "schemas": list(review.schemas),
        "records": [_plain(r) for r in review.records],
        "head_is_base": review.head_is_base,
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _plain(value: Any) -> Any:
    """NamedTuples as objects, tuples as lists, all the way down."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return value


# ---- Markdown -------------------------------------------------------------------------------


def to_markdown(review: Review) -> str:
    lines = [MARKER, "## Dataset review", "", _summary(review)]
    moved = [r for r in review.records if r.moved]
    if moved:
        lines += ["", "### Derived figures that move", ""]
        lines += _table(
            ("record", "figure", "old", "new", "because"),
            [
                (
                    _code(r.id),
                    _code(m.what),
                    _code(m.old),
                    _code(m.new),
                    ", ".join(_code(b) for b in r.because) or "the record changed",
                )
                for r in moved
                for m in r.moved
            ],
        )
    if review.schemas:
        lines += ["", "### Schemas changed", ""]
        lines += [f"- {_code(path)}: every record was recomputed" for path in review.schemas]
    for dependency in review.dependencies:
        lines += _dependency(dependency, review)
    for change, heading in (("added", "added"), ("changed", "changed"), ("removed", "removed")):
        group = [r for r in review.records if r.change == change]
        if group:
            lines += ["", f"### Records {heading}"]
            for record in group:
                lines += _record(record)
    return "\n".join(lines) + "\n"


def _summary(review: Review) -> str:
    counts = review.counts()
    base = f"Against {_code(review.base.ref)} ({_code(review.base.commit[:12])}): "
    if review.head is not None:
        base = (
            f"{_code(review.head.ref)} ({_code(review.head.commit[:12])}) against "
            f"{_code(review.base.ref)} ({_code(review.base.commit[:12])}): "
        )
    parts = [
        _count(counts["records_added"], "record added", "records added"),
        _count(counts["records_changed"], "record changed", "records changed"),
        _count(counts["records_removed"], "record removed", "records removed"),
    ]
    if counts["models_changed"]:
        parts.append(_count(counts["models_changed"], "model file changed", "model files changed"))
    if counts["hardware_changed"]:
        parts.append(
            _count(counts["hardware_changed"], "hardware file changed", "hardware files changed")
        )
    moved = counts["records_moved"]
    tail = (
        f"; the derived figures of {_count(moved, 'record', 'records')} move."
        if moved
        else "; no derived figure moves."
    )
    if not review.records and not review.dependencies and not review.schemas:
        if review.head_is_base:
            return base + HEAD_IS_BASE.format(ref=_code(review.base.ref))
        return base + "no record, model, hardware or schema file changed."
    return base + ", ".join(parts) + tail


HEAD_IS_BASE = (
    "no record, model, hardware or schema file changed, because HEAD is {ref}'s own commit: "
    "commits made on {ref} are on both sides of the comparison. Compare with the commit your "
    "work started from (`kvrecords review --base origin/main`, or `--base HEAD~1` for one "
    "commit), and make the next change on a branch (`git switch -c add-my-record`), which is "
    "what review and the pull request compare with main."
)


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _dependency(dependency: DependencyReview, review: Review) -> list[str]:
    lines = ["", f"### {dependency.kind.capitalize()} {_code(dependency.path)} {dependency.change}"]
    if dependency.change == "changed":
        lines += ["", *_fields(dependency.fields)]
    moving = {r.id for r in review.records if r.moved and dependency.path in r.because}
    linked = len(dependency.dependents)
    lines += [
        "",
        f"{_count(linked, 'record links', 'records link')} it; "
        f"the derived figures of {len(moving)} of them move (listed above).",
    ]
    failing = [
        r for r in review.records if dependency.path in r.because and r.new and r.new_errors()
    ]
    if failing:
        lines += [
            "",
            f"`kvrecords validate` fails {_count(len(failing), 'record', 'records')} that "
            f"{'links' if len(failing) == 1 else 'link'} it after this change:",
            *[f"- {_code(r.id)}: {_code(r.new_errors()[0])}" for r in failing],
        ]
    elif dependency.dependents:
        lines += ["", "Records linking it:", *[f"- {_code(d)}" for d in dependency.dependents]]
    if dependency.problems:
        lines += ["", "Its problems:", *[f"- {_code(p)}" for p in dependency.problems]]
    return lines


def _record(record: RecordReview) -> list[str]:
    lines = ["", f"#### {_code(record.id)}", "", f"File {_code(record.path)}."]
    if record.because:
        lines[-1] += " Depends on changed " + ", ".join(_code(b) for b in record.because) + "."
    source = record.source
    lines += [
        "",
        f"Source: {_code(source.url, '(no URL)')}, at {_code(source.locator, '(no locator)')}.",
    ]
    if source.url is None and source.citation:
        lines[-1] += f" Cited as {_code(source.citation)}."
    if record.geometry_of:
        sibling, reason = record.geometry_of
        lines += [
            "",
            f"Geometry of {_code('models/' + sibling)} (checked, {GEOMETRY_OF.code}): {_code(reason)}.",
        ]
    if record.change == "changed":
        lines += ["", *_fields(record.fields)]
    if record.change == "removed":
        return lines
    assert record.new is not None
    lines += _recomputation(record.new, record.old)
    if record.explanation:
        fence = "`" * max(3, _longest_backtick_run(record.explanation) + 1)
        lines += [
            "",
            "<details><summary>Every number the validator derives "
            "(<code>kvrecords explain</code>)</summary>",
            "",
            f"{fence}text",
            record.explanation,
            fence,
            "",
            "</details>",
        ]
    return lines


def _fields(fields: tuple[FieldChange, ...]) -> list[str]:
    if not fields:
        return ["Only comments or formatting changed."]
    return _table(
        ("field", "old", "new"),
        [
            (_code(f.field), _code(f.old_text, "(absent)"), _code(f.new_text, "(absent)"))
            for f in fields
        ],
    )


def _recomputation(new: Recomputation, old: Recomputation | None) -> list[str]:
    lines: list[str] = []
    if not new.derived:
        lines += ["", f"Nothing is derived: {new.explanation}."]
    if new.figures:
        lines += ["", "KV figures, stated and recomputed from the model file:", ""]
        lines += _table(
            ("basis", "figure", "stated", "recomputed"),
            [
                (f.basis, _code(f.name), _code(f.stated), _code(f.recomputed, "unknown"))
                for f in new.figures
            ],
        )
    checked = [m for m in new.margins if m.share is not None]
    if checked:
        lines += ["", "Plausibility margins (the figure as a share of its physical limit):", ""]
        lines += _table(
            ("check", "margin", "verdict"),
            [(_code(m.key), m.share or "", m.verdict) for m in checked],
        )
    lines += [""]
    if new.problems:
        lines += ["Problems:", *[f"- {_code(p)}" for p in new.problems]]
    else:
        lines += ["Problems: none."]
    if old is not None and old.problems != new.problems:
        fixed = [p for p in old.problems if p not in new.problems]
        if fixed:
            lines += ["", "Problems in the base that are gone:", *[f"- {_code(p)}" for p in fixed]]
    return lines


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _code(value: Any, missing: str = "-") -> str:
    """A value as an inline code span that is safe in a table cell."""
    if value is None:
        return missing
    text = " ".join(str(value).split())
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    text = text.replace("|", "\\|")  # a table's pipe, escaped even inside a code span
    fence = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
