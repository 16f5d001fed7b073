"""Ratios claimed in words between two figures of one sentence.

``the bf16 cache holds 9.16 GiB, twice the 4.58 GiB of fp8`` claims 9.16 = 2 x 4.58; so do
``double``, ``half (of)``, ``a quarter of``, ``a third of`` and ``N times more than``,
``N times as much as``, ``N times larger than`` (``less``, ``fewer``, ``smaller`` and ``lower``
divide). The figure after the words is the one compared against (at most three words after
them, and only ``the``, ``of``, ``what`` and the like: ``cut in half: 4.58 GiB`` names a result,
not what is halved); the figure claimed is the nearest one before them in the sentence that
counts the same thing (bytes with bytes, ``%`` with ``%``, ``s`` with ``s``), else the one
joined to the first by ``is`` or ``=`` (``twice 4.58 GiB is 9.16 GiB``).
A hedged claim (``about twice``, ``nearly half``, ``more than double``) claims no exact ratio
and is not read. ``N times more`` is read both ways writers mean it (N and N + 1 times).

A claim holds when either figure, at the precision written, agrees with the other times the
ratio (the precision rule of ``kv.units``). Only claims that hold in neither direction are
returned: as ``Claim`` values whose result is the figure claimed, so a check reports them as
it reports arithmetic. One pass of regular expressions over the text; figures are read only in
the sentences that hold such words.
"""

from __future__ import annotations

import bisect
import re
from fractions import Fraction

from kvrecords.kv.prose import Claim, Figure, figures
from kvrecords.kv.units import agrees

_FRACTIONS = {"quarter": Fraction(1, 4), "third": Fraction(1, 3), "fifth": Fraction(1, 5)}
_MORE = r"more|as\s+much\s+as|as\s+many\s+as|larger|bigger|higher|greater"
_LESS = r"less|fewer|smaller|lower"
_WORDS_RE = re.compile(
    r"(?i)(?<![A-Za-z])(?:(?P<hedge>about|roughly|nearly|almost|around|approximately|over|under"
    r"|more\s+than|less\s+than|at\s+least|up\s+to|~)\s+)?"
    r"(?:(?P<twice>twice|double|two\s+times)(?:\s+(?:of|what))?"
    r"|(?P<half>half)(?:\s+of)?"
    r"|(?:a|one)\s+(?P<part>quarter|third|fifth)\s+of"
    r"|(?P<times>[0-9]{1,3}(?:\.[0-9]{1,3})?)\s+times\s+"
    r"(?:(?P<more>" + _MORE + r")|(?P<less>" + _LESS + r"))(?:\s+than)?)"
    r"(?![A-Za-z\-])"  # not half-precision, double-check
)
# A sentence ends at a full stop, semicolon, question or exclamation mark before a space
_SENTENCE_END_RE = re.compile(r"[.;!?](?=\s|$)|\n\s*\n")
_WORDS_BETWEEN = 3
# Between the words and the figure compared against: "twice the 4.58 GiB", "half of what"
_FILLERS = {"the", "of", "that", "what", "its", "their", "a", "an"}
# Between that figure and the one claimed, when the claim comes after both: "twice 4.58 GiB is"
_JOINS = {"is", "are", "=", "gives", "makes", "equals", "which is", "or", ", or", ", which is"}
# How far around the words figures are looked for: a bound on the work per match, so that a
# sentence of a thousand such words costs a thousand short reads, not a thousand long ones
_REACH = 240


def word_claims(text: str, limit: int | None = None) -> list[Claim]:
    """The ratios claimed in words in ``text`` that their two figures do not bear out, up to
    ``limit`` of them."""
    if not (
        "wice" in text  # the words without their first letter: "Half" is found as "half" is
        or "ouble" in text
        or "alf" in text
        or "uarter" in text
        or "hird" in text
        or "ifth" in text
        or "imes" in text
    ):
        return []
    matches = list(_WORDS_RE.finditer(text))
    if not matches:
        return []
    ends = [match.end() for match in _SENTENCE_END_RE.finditer(text)]
    wrong = []
    for match in matches:
        if match["hedge"]:
            continue
        at = bisect.bisect_left(ends, match.start())
        sentence_start = ends[at - 1] if at else 0
        sentence_end = ends[at] if at < len(ends) else len(text)
        start = max(sentence_start, match.start() - _REACH)
        end = min(sentence_end, match.end() + _REACH)
        claim = _claim(text, match, start, end)
        if claim is not None:
            wrong.append(claim)
            if limit is not None and len(wrong) >= limit:
                break
    return wrong


def _ratios(match: re.Match[str]) -> list[Fraction]:
    """The ratios the words may mean."""
    if match["twice"]:
        return [Fraction(2)]
    if match["half"]:
        return [Fraction(1, 2)]
    if match["part"]:
        return [_FRACTIONS[match["part"].lower()]]
    times = Fraction(match["times"])
    if match["less"]:
        return [1 / times] if times else []
    return [times, times + 1] if match["more"] == "more" else [times]


def _claim(text: str, match: re.Match[str], start: int, end: int) -> Claim | None:
    after = figures(text, match.end(), end)
    if not after:
        return None
    between = text[match.end() : after[0].start].split()
    if len(between) > _WORDS_BETWEEN or not all(word.lower() in _FILLERS for word in between):
        return None  # "cut in half: 4.58 GiB" names the result, not what is halved
    compared = after[0]
    if compared.kind in ("", "x"):
        return None  # a bare number or a ratio: nothing says what it counts
    same = [f for f in figures(text, start, match.start()) if f.kind == compared.kind]
    if same:
        claimed = same[-1]
    else:  # "twice 4.58 GiB is 9.16 GiB"
        later = [f for f in after[1:] if f.kind == compared.kind]
        if not later or " ".join(text[compared.end : later[0].start].split()) not in _JOINS:
            return None
        claimed = later[0]
    ratios = _ratios(match)
    for ratio in ratios:
        value = compared.number.value * ratio
        if agrees(claimed.number.written, value / claimed.number.scale) or agrees(
            compared.number.written, claimed.number.value / ratio / compared.number.scale
        ):
            return None
    if not ratios:
        return None
    begin = min(claimed.start, match.start())
    finish = max(claimed.end, compared.end)
    words = " ".join(match.group().split())
    return _as_claim(text[begin:finish], begin, words, compared, claimed, ratios[0])


def _as_claim(
    text: str, start: int, words: str, compared: Figure, claimed: Figure, ratio: Fraction
) -> Claim:
    number = claimed.number
    return Claim(
        text,
        start,
        f"{words} {_shown(compared)}",
        compared.number.value * ratio,
        (compared.number.value,),
        number.written,
        number.scale,
        number.text[len(number.written.text) :],
        claimed.kind.startswith("bytes"),
        claimed.kind == "bytes/token",
        False,
    )


def _shown(figure: Figure) -> str:
    """``4.58 GiB``, ``2 s``: a figure with what it counts."""
    if figure.kind and figure.number.unit is None:
        return f"{figure.number.text} {figure.kind}"
    return figure.number.text
