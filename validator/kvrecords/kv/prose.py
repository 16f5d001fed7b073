"""Arithmetic claims in prose: ``16 layers x 4 kv heads x 256 head_dim x 2 bytes = 65,536 B/token``.

A claim is a chain of numbers joined by ``x``, ``×``, ``*`` or `` / ``, each number optionally
followed by up to three label words, then ``=`` and a result with an optional unit (a byte unit,
``B/token`` or ``x``). Numbers may carry thousands separators and a trailing ``%``. The chain is
evaluated here with exact fractions: record text comes from strangers and is never evaluated as
code.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

from kvrecords.kv.units import BYTE_UNITS, Written

_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
# A factor: a number, or a parenthesised sum of numbers such as (512 + 64).
_FACTOR = rf"(?:{_NUMBER}|\({_NUMBER}(?:[ \t\n]*\+[ \t\n]*{_NUMBER})+\))"
# A label word: letters and the punctuation of names like head_dim or (K+V); never a lone x,
# and never a parenthesis followed by a digit, which opens a new expression.
_LABEL = r"(?!(?:x|×)(?![A-Za-z_]))(?:[A-Za-z_]|\((?=[A-Za-z]))[A-Za-z0-9_()+\-/]*"
_TERM = rf"{_FACTOR}(?:[ \t\n]+{_LABEL}){{0,3}}"
_OPERATOR = r"(?:[ \t\n]*(?<![A-Za-z_\-])[x×*][ \t\n]*|[ \t\n]+/[ \t\n]+)"
_UNITS = "|".join(sorted([*BYTE_UNITS, "B/token"], key=len, reverse=True))
_CLAIM_RE = re.compile(
    rf"(?<![\w.,])(?P<chain>{_TERM}(?:{_OPERATOR}{_TERM})+)[ \t\n]*=[ \t\n]*"
    rf"(?P<result>(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?)(?:[ \t\n]*(?P<unit>{_UNITS}|x)(?![A-Za-z]))?"
)
_FACTOR_RE = re.compile(_FACTOR)
_NUMBER_RE = re.compile(_NUMBER)
_OPERATOR_RE = re.compile(_OPERATOR)


class Claim(NamedTuple):
    """One arithmetic claim found in prose."""

    text: str
    start: int  # offset in the prose
    factors: tuple[tuple[str, str], ...]  # (operator, number as written); the first operator is ""
    result: Written
    unit: str | None

    @property
    def value(self) -> Fraction:
        """The chain's exact value."""
        total = Fraction(1)
        for operator, number in self.factors:
            factor = _number_value(number)
            total = total / factor if operator == "/" else total * factor
        return total

    def expression(self) -> str:
        parts = [f"{op} {num}" if op else num for op, num in self.factors]
        return " ".join(parts).replace("*", "x")


def _number_value(written: str) -> Fraction:
    if written.startswith("("):
        return sum((_number_value(n) for n in _NUMBER_RE.findall(written)), Fraction(0))
    if written.endswith("%"):
        return Fraction(written[:-1].replace(",", "")) / 100
    return Fraction(written.replace(",", ""))


def find_claims(prose: str) -> list[Claim]:
    if "=" not in prose:  # most prose holds no claim; skip the regex
        return []
    claims = []
    for match in _CLAIM_RE.finditer(prose):
        chain = match["chain"]
        factors: list[tuple[str, str]] = []
        # Split the chain at its operators; each piece starts with its number.
        pieces = _OPERATOR_RE.split(chain)
        operators = [""] + [op.strip() for op in _OPERATOR_RE.findall(chain)]
        for operator, piece in zip(operators, pieces, strict=True):
            number = _FACTOR_RE.match(piece.strip())
            if number is None:
                break
            factors.append(("/" if operator == "/" else "x" if operator else "", number.group()))
        else:
            if any(_number_value(n) == 0 for op, n in factors if op == "/"):
                continue
            claims.append(
                Claim(
                    match.group(),
                    match.start(),
                    tuple(factors),
                    Written(match["result"]),
                    match["unit"],
                )
            )
    return claims


def claim_value_in_unit(claim: Claim) -> Fraction:
    """The chain's value in the claim's unit (bytes divided by the unit's size)."""
    if claim.unit in BYTE_UNITS:
        return claim.value / BYTE_UNITS[claim.unit]
    return claim.value
