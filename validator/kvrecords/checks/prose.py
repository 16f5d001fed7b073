"""KV501-KV504: arithmetic claims in a record's prose are right and argue from its basis, and
arithmetic the grammar cannot check is said to be so.

Claims are found and evaluated by ``kv.prose`` (a small grammar, never code, linear in the
length of the text); these checks compare each with its stated result and with the bytes per
token the record states. The number of claims checked per record is bounded.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from fractions import Fraction

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import Document, JsonPath
from kvrecords.dataset.records import bases, basis_report
from kvrecords.kv.prose import (
    Claim,
    LookAlike,
    Unreadable,
    claim_value_in_unit,
    look_alikes,
    scan,
)
from kvrecords.kv.units import (
    RELATIVE_TOLERANCE,
    agrees,
    format_exact,
    format_fraction,
    format_written,
    precision_note,
    rounds_to,
    shown_decimals,
)
from kvrecords.problems import Problem, Rule, Severity

PROSE_ARITHMETIC = Rule(
    "KV501",
    "prose-arithmetic",
    "Every arithmetic claim in prose (`a x b x c = d unit`; also `≈`, `->`, `which is`, `gives`, "
    "sums, differences, quotients, powers, units on the numbers and a byte quantity said again in "
    "another unit, `9.16 GiB = 9.84 GB`) is right at the precision "
    "written, within 1 % and to two significant figures.",
    "Prose is what readers quote; a wrong product in the explanation is as harmful as a wrong "
    "field. Claims are parsed with a small grammar, never evaluated as code.",
    "16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes = 65,536 B/token",
    "65,536 x 150,000 = 9.61 GiB\n# KV501 prose claims 65,536 x 150,000 = 9.61 GiB; it is 9.16 GiB",
)

PROSE_BASIS = Rule(
    "KV502",
    "prose-basis",
    "A bytes-per-token result in prose (`= N B/token`, `bytes/token`, `B per token`, `bytes per "
    "token`) equals a bytes_per_token the record states or one layer group's part of it, or is "
    "worked out from one.",
    "Prose that argues from a basis the record does not state escapes the geometry check. A "
    "figure worked out from a stated basis (`69,120 x 6 / 16 = 25,920 B per token`) is checked "
    "as arithmetic; a record whose model gives no bytes per token has none to compare.",
    "... = 65,536 B/token   (kv_bytes_basis.bytes_per_token: 65536)",
    "2 x 2 = 4 B/token\n# KV502 prose gives 4 B/token; the record states 65,536",
)


# Claims and unreadable pieces checked per record: far above any real record, and a bound on
# the work a hostile one can ask for.
MAX_CLAIMS = 1000

LOOK_ALIKE = Rule(
    "KV503",
    "look-alike",
    "Text holds no digit other than 0-9, and no character that looks like an operator or a "
    "percent sign (Cyrillic х, ∗, ∕, fullwidth ＝ or ％) beside a number.",
    "A reader takes `65,536 х 150,000` for arithmetic, but with a Cyrillic х the grammar does "
    "not, so a wrong result would pass unseen; a Bengali or fullwidth digit reads as a number to "
    "some tools and not to others. The problem names the character and what to write.",
    "65,536 x 150,000 = 9.16 GiB",
    "65,536 х 150,000 = 9.61 GiB\n# KV503 U+0445 CYRILLIC SMALL LETTER HA stands where 'x' "
    "would; write 'x'",
)

PROSE_UNCHECKED = Rule(
    "KV504",
    "prose-unchecked",
    "Arithmetic in prose that the grammar cannot check is reported, not passed: a warning for a "
    "piece it cannot read, an error for one beyond its limits (more than 256 numbers and "
    "operators, a number of more than 60 digits, more than 1,000 claims in a record).",
    "A claim skipped in silence is a claim nobody checked. Units that do not combine, a range "
    "written where a difference is meant (`100-20 = 80`), a number too large to be a figure, or "
    "a wrong figure after a weak verb (`2 x 3 is 7`) are warnings: rewrite them as `a x b = c` "
    "with units on both sides, or reword them if they are not arithmetic.",
    "4 x 32 GB = 128 GB",
    "4 x 32 GB = 128\n# KV504 cannot check '4 x 32 GB = 128': it counts bytes but its result has "
    "no byte unit [warning]",
)


def check_prose(record: RecordContext) -> Iterator[Problem]:
    """KV501-KV504: arithmetic claims and look-alike characters in every text field."""
    stated_bases: set[int] = set()
    shares: set[Fraction] = set()  # each layer group's part of a stated basis
    for basis in bases(record.data):
        if basis.stated.get("bytes_per_token") is None:
            continue
        stated_bases.add(basis.stated["bytes_per_token"])
        try:
            report = basis_report(record.model, basis.stated)
        except ValueError:  # the basis does not apply (KV304)
            continue
        if report.bytes_per_token == basis.stated["bytes_per_token"]:  # else KV301 reports it
            shares |= {cost.bytes_per_token for cost in report.groups if cost.bytes_per_token}
    locator = _Locator(record.document)
    budget = MAX_CLAIMS
    for path, text in record.document.leaves.items():
        if not isinstance(text, str):
            continue
        scanned = scan(text, budget)
        budget -= len(scanned.claims) + len(scanned.unreadable)
        pieces: list[Claim | Unreadable | LookAlike] = [
            *scanned.claims,
            *scanned.unreadable,
            *look_alikes(text),
        ]
        for piece in sorted(pieces, key=lambda piece: piece.start):  # the locator reads on
            found = _piece_problem(piece, stated_bases, shares)
            if found is not None:
                rule, message, severity = found
                line, column = locator.locate(path, text, piece.start, _piece_text(text, piece))
                yield rule.problem(record.document.path, line, column, message, severity)
        if not scanned.complete:
            message = (
                f"the record holds more than {MAX_CLAIMS:,} arithmetic claims; the rest are not "
                "checked: keep worked arithmetic to the figures the record needs"
            )
            yield record.problem(PROSE_UNCHECKED, path, message)
            return


def _quoted(piece: str) -> str:
    """A piece of prose on one line, shortened to what a message can show."""
    flat = " ".join(piece.split())
    return f"'{flat}'" if len(flat) <= 80 else f"'{flat[:60]} ... {flat[-15:]}'"


def _piece_text(text: str, piece: Claim | Unreadable | LookAlike) -> str:
    """The text to look for in the file: a claim's own, or the word holding a character."""
    if not isinstance(piece, LookAlike):
        return piece.text
    start = max(text.rfind(" ", 0, piece.start), text.rfind("\n", 0, piece.start)) + 1
    ends = [end for end in (text.find(" ", piece.start), text.find("\n", piece.start)) if end >= 0]
    return text[start : min(ends, default=len(text))]


def _piece_problem(
    piece: Claim | Unreadable | LookAlike, stated_bases: set[int], shares: set[Fraction]
) -> tuple[Rule, str, Severity] | None:
    if isinstance(piece, LookAlike):
        return LOOK_ALIKE, piece.describe(), "error"
    if isinstance(piece, Unreadable):
        message = f"cannot check {_quoted(piece.text)}: {piece.reason}"
        return PROSE_UNCHECKED, message, "error" if piece.beyond_limits else "warning"
    claim = piece
    value = claim_value_in_unit(claim)
    result = f"{format_written(claim.result)}{claim.suffix}"
    if not agrees(claim.result, value) and not _converts_back(claim):
        shown = _recomputed(claim, value)
        if claim.tentative:
            message = (
                f"{_quoted(claim.text)} reads as {claim.expression} = {result}, but it is "
                f"{shown}: correct the figure, or reword the sentence if it is not arithmetic"
            )
            return PROSE_UNCHECKED, message, "warning"
        message = f"prose claims {claim.expression} = {result}; it is {shown}"
        message += precision_note(claim.result, value)
        return PROSE_ARITHMETIC, message, "error"
    derived = (
        claim.value in stated_bases
        or claim.value in shares
        or any(number in stated_bases for number in claim.numbers)
    )
    if claim.per_token and not claim.tentative and stated_bases and not derived:
        listed = ", ".join(f"{b:,}" for b in sorted(stated_bases))
        message = f"prose gives {result}; the record's stated bytes_per_token: {listed}"
        return PROSE_BASIS, message, "error"
    return None


def _recomputed(claim: Claim, value: Fraction) -> str:
    """What the expression gives, in the result's unit at the decimals the figure needs, with
    the bytes beside a scaled unit. A value that shows as zero in that unit is given in bytes
    alone (``2.4096 B``, not ``0.00 GiB (2.4096 B)``), and a quotient's result is said to be a
    ratio: dividing two sizes or two plain numbers gives no byte figure."""
    shown = f"{format_fraction(value, shown_decimals(claim.result, value))}{claim.suffix}"
    if not claim.in_bytes or claim.scale == 1:
        return shown
    in_bytes = f"{format_exact(claim.value)} B"
    if value == 0 or abs(value) >= Fraction(1, 100):
        return f"{shown} ({in_bytes})"
    ratio = " (a quotient of two sizes or of plain numbers is a ratio, not bytes)"
    return f"{in_bytes}, not {claim.suffix.strip()}{ratio if '/' in claim.expression else ''}"


def _converts_back(claim: Claim) -> bool:
    """A conversion holds when its result, said in the quantity's unit, rounds to the quantity
    as written (and is within 1 %): ``9.16 GiB`` stands for 9.155 to 9.165 GiB, so
    ``9,835,000,000 B`` (9.1596 GiB) states it."""
    if claim.converted is None:
        return False
    quantity, quantity_scale = claim.converted
    result_bytes = Fraction(claim.result.value) * claim.scale
    close = abs(result_bytes - claim.value) <= RELATIVE_TOLERANCE * abs(claim.value)
    return close and rounds_to(quantity, result_bytes / quantity_scale)


class _Locator:
    """Where a piece of prose stands in the file, even inside a folded block scalar.

    Each field's pieces are looked up in order, each search starting where the last one ended
    and reading no further than the field can stretch, so a field with many pieces costs one
    pass over it."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.line_starts: list[int] | None = None
        self.field: JsonPath | None = None
        self.resume = 0

    def locate(self, path: JsonPath, prose: str, start: int, piece: str) -> tuple[int, int]:
        text = self.document.text
        if self.line_starts is None:
            self.line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        line, column = self.document.locate(path)
        if path != self.field:
            self.field, self.resume = path, self.line_starts[line - 1]
        # a field written in the file spans at most a few times its own length (escapes,
        # indentation of folded lines)
        limit = self.line_starts[line - 1] + 8 * len(prose) + 64 * (prose.count("\n") + 2)
        words = [re.escape(word) for word in piece.split()[:12]]
        found = re.compile(r"\s+".join(words)).search(text, self.resume, limit)
        if found is None:
            return line, column
        self.resume = found.start() + 1  # the next piece may share this one's last number
        line = bisect.bisect_right(self.line_starts, found.start())
        return line, found.start() - self.line_starts[line - 1] + 1
