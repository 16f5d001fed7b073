"""KV501-KV504: arithmetic claims in a record's prose are right and argue from its basis, and
arithmetic the grammar cannot check is said to be so.

Claims are found and evaluated by ``kv.prose`` (a small grammar, never code, linear in the
length of the text); these checks compare each with its stated result and with the bytes per
token the record states. The number of claims checked per record is bounded.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterator
from fractions import Fraction
from typing import NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import Document, JsonPath
from kvrecords.dataset.records import bases, basis_report
from kvrecords.kv.arithmetic import mla_fp8_bytes
from kvrecords.kv.geometry import LeafGroup, MultiHeadLatent
from kvrecords.kv.lookalikes import LookAlike, look_alikes
from kvrecords.kv.prose import (
    Claim,
    Figure,
    Scanned,
    Unreadable,
    claim_value_in_unit,
    holds_with_decimal_comma,
    scan,
)
from kvrecords.kv.prose_words import word_claims
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
    "Every arithmetic claim in prose is right at the precision written, within 1 % and to two "
    "significant figures (`= ~x`, `≈ x` and `= about x` get no more latitude than `= x`): "
    "`a x b x c = d unit`, also with `*`, `×`, `times`, `by` or `divided by`, `≈`, `~`, `->`, "
    "`which is`, `gives`, sums, differences, quotients, powers, `93.5 % of`, a change "
    "(`from a to b = -31.2 %`), a result with a power of ten (`9.8304 x 10^9 B`), units on the "
    "numbers written as symbols or words (`gibibytes`), a byte quantity said again in another "
    "unit (`9.16 GiB = 9.84 GB`, `9.16 GiB ~ 9.84 GB`) and a ratio said in words between two "
    "figures of a sentence (`twice`, `double`, `half of`, `a quarter of`, `a third of`, "
    "`N times more than`). Digits may be grouped with commas, spaces or apostrophes; a decimal "
    "comma is read where no thousands group reads so (`1,5 GiB`).",
    "Prose is what readers quote; a wrong product in the explanation is as harmful as a wrong "
    "field. Claims are parsed with a small grammar, never evaluated as code. The 1 % rule is "
    "the record's own: a source's figure quoted in a comparison is held to its written "
    "precision only (see speedup).",
    "16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes = 65,536 B/token",
    "65,536 x 150,000 = 9.61 GiB\n# KV501 prose claims 65,536 x 150,000 = 9.61 GiB; it is 9.16 GiB",
)

PROSE_BASIS = Rule(
    "KV502",
    "prose-basis",
    "A bytes-per-token result in prose (`= N B/token`, `bytes/token`, `B per token`, `bytes per "
    "token`) equals a bytes_per_token the record states or one layer group's part of it, or is "
    "worked out from one (an error); any other bytes-per-token figure in prose matches a basis "
    "of the record, whole, per layer group, per layer or per device, in some element type, at "
    "the precision written (a warning naming the bases compared with).",
    "Prose that argues from a basis the record does not state escapes the geometry check. A "
    "figure worked out from a stated basis (`69,120 x 6 / 16 = 25,920 B per token`) is checked "
    "as arithmetic; a record whose model gives no bytes per token has none to compare, and a "
    "figure in a sentence that names another model's file (`models/llama-3.1-8b`) is that "
    "model's.",
    "... = 65,536 B/token   (kv_bytes_basis.bytes_per_token: 65536)",
    "2 x 2 = 4 B/token\n# KV502 prose gives 4 B/token; the record states 65,536",
)


_DIGIT_RE = re.compile("[0-9]")

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
    "piece it cannot read or a comma it cannot tell (`1,500` as a thousands group is wrong, "
    "as a decimal comma right), an error for one beyond its limits (more than 256 numbers and "
    "operators, a number of more than 60 digits, more than 1,000 claims in a record).",
    "A claim skipped in silence is a claim nobody checked. Units that do not combine, a range "
    "written where a difference is meant (`100-20 = 80`), a number too large to be a figure, or "
    "a wrong figure after a weak verb (`2 x 3 is 7`) are warnings: rewrite them as `a x b = c` "
    "with units on both sides, or reword them if they are not arithmetic.",
    "4 x 32 GB = 128 GB",
    "4 x 32 GB = 128\n# KV504 cannot check '4 x 32 GB = 128': it counts bytes but its result has "
    "no byte unit [warning]",
)


class _Bases(NamedTuple):
    """What a bytes-per-token figure in prose may be: a stated basis, one layer group's part of
    it, one layer's, or one device's, each with how messages name it."""

    stated: set[int]
    shares: set[Fraction]  # each layer group's part of a stated basis
    # every figure compared with, and what names it: (value, "per device of", 4), named only
    # in a message, which few records need
    named: dict[Fraction, tuple[str, str]]
    # the bases priced in other element types, worked out once when a figure needs them
    other: list[set[Fraction]]


def _bases(record: RecordContext) -> _Bases:
    stated: set[int] = set()
    shares: set[Fraction] = set()
    named: dict[Fraction, tuple[str, str]] = {}
    data = record.data
    devices = {data["methodology"]["hardware"].get("count")}
    devices |= {run.stated.get("hardware", {}).get("count") for run in record.runs}
    counts = [count for count in devices if isinstance(count, int) and count > 1]
    for basis in bases(data):
        per_token = basis.stated.get("bytes_per_token")
        if per_token is None:
            continue
        stated.add(per_token)
        named.setdefault(Fraction(per_token), (basis.label, ""))
        for count in counts:
            named.setdefault(Fraction(per_token, count), ("", f"per device of {count}"))
        try:
            report = basis_report(record.model, basis.stated)
        except ValueError:  # the basis does not apply (KV304)
            continue
        if report.bytes_per_token != per_token:  # KV301 reports it
            continue
        for cost in report.groups:
            if not cost.bytes_per_token:
                continue
            shares.add(cost.bytes_per_token)
            kind = cost.group.kind
            named.setdefault(cost.bytes_per_token, ("", f"({kind})"))
            named.setdefault(cost.bytes_per_token / cost.group.layers, ("", f"per {kind} layer"))
    return _Bases(stated, shares, named, [])


def _name(value: Fraction, parts: tuple[str, str]) -> str:
    """``main basis 65,536``, ``4,096 per attention layer``."""
    before, after = parts
    return " ".join(part for part in (before, format_exact(value), after) if part)


def check_prose(record: RecordContext) -> Iterator[Problem]:
    """KV501-KV504: arithmetic claims, bytes-per-token figures and look-alike characters in
    every text field."""
    known = _bases(record)
    locator = _Locator(record.document)
    budget = MAX_CLAIMS
    for path, text in record.document.leaves.items():
        if not isinstance(text, str) or (_DIGIT_RE.search(text) is None and text.isascii()):
            continue  # no digit 0-9 and no look-alike: nothing to read (most fields)
        scanned = scan(text, budget)
        in_words = word_claims(text, max(0, budget)) if budget > 0 else []
        budget -= len(scanned.claims) + len(scanned.unreadable) + len(in_words)
        unmatched = (
            _unmatched_per_token(record, text, scanned, known, budget) if scanned.per_token else []
        )
        budget -= len(unmatched)
        pieces: list[Claim | Unreadable | LookAlike | Figure] = [
            *scanned.claims,
            *in_words,
            *scanned.unreadable,
            *look_alikes(text),
            *unmatched,
        ]
        for piece in sorted(pieces, key=lambda piece: piece.start):  # the locator reads on
            found = _piece_problem(piece, known)
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


# Element types a figure in prose may price the record's model in beside its bases
_OTHER_DTYPES = ("fp32", "bf16", "fp8", "int4", "q8_0", "q4_0", "nvfp4", "fp8_ds_mla")
# A sentence that names another model's file argues from that model: its figures are its own
_MODEL_FILE_RE = re.compile(r"models/([a-z0-9][a-z0-9.-]*[a-z0-9])")


def _unmatched_per_token(
    record: RecordContext, text: str, scanned: Scanned, known: _Bases, budget: int
) -> list[Figure]:
    """Bytes-per-token figures in ``text`` that are no claim's result (KV502 holds those to the
    bases) and match none of the record's bases, on the reading most favourable to the record:
    at the precision written, in any element type, in a sentence naming no other model."""
    if not known.named or not scanned.per_token:
        return []
    results = {claim.start + len(claim.text) for claim in scanned.claims}
    # no more figures are read than the record's claims may still number: a bound on the work
    unmatched = [
        figure
        for figure in scanned.per_token[: max(0, budget)]
        if figure.end not in results
        and not _matches(figure, known.named)
        and not _names_another_model(record, text, figure.start)
    ]
    if unmatched and not known.other:
        known.other.append(_other_dtypes(record))
    return [figure for figure in unmatched if not _matches(figure, known.other[0])]


def _matches(figure: Figure, values: Collection[Fraction]) -> bool:
    number = figure.number
    if number.value in values:  # the usual case, settled without rounding
        return True
    return any(rounds_to(number.written, value / number.scale) for value in values)


def _names_another_model(record: RecordContext, text: str, at: int) -> bool:
    """Whether the sentence around ``at`` (read no further than a few lines either way) names
    another model's file."""
    reach = max(0, at - 400), min(len(text), at + 400)
    start = max(text.rfind(". ", reach[0], at), text.rfind("; ", reach[0], at), reach[0] - 1) + 1
    ends = [
        end for end in (text.find(". ", at, reach[1]), text.find("; ", at, reach[1])) if end >= 0
    ]
    sentence = text[start : min(ends, default=reach[1])]
    return any(name != record.data["model"] for name in _MODEL_FILE_RE.findall(sentence))


def _other_dtypes(record: RecordContext) -> set[Fraction]:
    """The record's bases priced in other element types: whole, per layer group, per layer."""
    found: set[Fraction] = set()
    for basis in bases(record.data):
        for dtype in _OTHER_DTYPES:
            try:
                report = basis_report(record.model, {**basis.stated, "dtype": dtype})
            except ValueError:
                continue
            if report.bytes_per_token:
                found.add(report.bytes_per_token)
            for cost in report.groups:
                if cost.bytes_per_token:
                    found |= {cost.bytes_per_token, cost.bytes_per_token / cost.group.layers}
                found |= _latent_alone(cost.group)
    return found


def _latent_alone(group: LeafGroup) -> set[Fraction]:
    """An MLA layer's latent without its indexer keys, per layer and for the group: in 16 and
    8 bits and in vLLM's fp8_ds_mla layout (656 B per layer for DeepSeek-V3.2)."""
    if not isinstance(group, MultiHeadLatent) or group.indexer is None:
        return set()
    alone = mla_fp8_bytes(group._replace(indexer=None))
    if alone is None or group.kv_lora_rank is None or group.qk_rope_head_dim is None:
        return set()
    width = group.kv_lora_rank + group.qk_rope_head_dim
    per_layer = {Fraction(width * 2), Fraction(width), alone}
    return per_layer | {value * group.layers for value in per_layer}


def _quoted(piece: str) -> str:
    """A piece of prose on one line, shortened to what a message can show."""
    flat = " ".join(piece.split())
    return f"'{flat}'" if len(flat) <= 80 else f"'{flat[:60]} ... {flat[-15:]}'"


def _piece_text(text: str, piece: Claim | Unreadable | LookAlike | Figure) -> str:
    """The text to look for in the file: a claim's own, or the word holding a character."""
    if isinstance(piece, Figure):
        return text[piece.start : piece.end]
    if not isinstance(piece, LookAlike):
        return piece.text
    start = max(text.rfind(" ", 0, piece.start), text.rfind("\n", 0, piece.start)) + 1
    ends = [end for end in (text.find(" ", piece.start), text.find("\n", piece.start)) if end >= 0]
    return text[start : min(ends, default=len(text))]


def _piece_problem(
    piece: Claim | Unreadable | LookAlike | Figure, known: _Bases
) -> tuple[Rule, str, Severity] | None:
    if isinstance(piece, LookAlike):
        return LOOK_ALIKE, piece.describe(), "error"
    if isinstance(piece, Unreadable):
        message = f"cannot check {_quoted(piece.text)}: {piece.reason}"
        return PROSE_UNCHECKED, message, "error" if piece.beyond_limits else "warning"
    if isinstance(piece, Figure):
        compared = ", ".join(_name(value, known.named[value]) for value in sorted(known.named))
        message = (
            f"prose gives {piece.number.text}, which matches no basis of the record; compared "
            f"with {compared}: correct it, state it as an alternative basis, or name the "
            "model file it is from (models/<id>) in its sentence"
        )
        return PROSE_BASIS, message, "warning"
    claim = piece
    value = claim_value_in_unit(claim)
    result = f"{format_written(claim.result)}{claim.suffix}"
    if not agrees(claim.result, value) and not _converts_back(claim):
        shown = _recomputed(claim, value)
        if holds_with_decimal_comma(claim):
            message = (
                f"{_quoted(claim.text)} is ambiguous: with the comma as a thousands separator "
                f"it reads {claim.expression} = {result}, which is {shown}, but with a decimal "
                "comma it holds; write the decimals with a point (1.5) or group thousands "
                "with spaces"
            )
            return PROSE_UNCHECKED, message, "warning"
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
        claim.value in known.stated
        or claim.value in known.shares
        or any(number in known.stated for number in claim.numbers)
    )
    if claim.per_token and not claim.tentative and known.stated and not derived:
        listed = ", ".join(f"{b:,}" for b in sorted(known.stated))
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
