"""Arithmetic claims in prose: ``16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes = 65,536 B/token``.

About 1,000 lines on purpose: one small grammar (tokens, parser, evaluation, precision, the
figures it reads) whose parts share the token types; no part is used alone. Ratios said in
words (``twice``, ``half of``) live in ``kv/prose_words.py``, on the figures read here.

A claim is an expression, then an equals sign (or ``≈``, ``~`` between spaces, ``->``,
``which is``, ``gives``), then a result: a signed number with an optional unit. The expression
is a sum or difference of products and quotients of numbers, with parentheses and powers
(``2^16``), the operators written as signs or as ``times``, ``by`` (right after a number) and
``divided by``; each number may carry a byte unit (``32 GB``, ``65,536 B/token``, ``9.16
gibibytes``), a percent sign (``93.5%``, ``93.5 % of 150,000``), a multiplier (``150k``,
``78 million``) or an exponent (``9.8304e9``), and be followed by up to three label words
(``16 layers``, ``2 (K+V)``). Thousands are grouped by commas, spaces (plain, thin,
non-breaking) or apostrophes, one kind in a number; a comma that no thousands group explains
(``1,5``, ``0,935``) is a decimal comma, and a claim that fails with ``1,500`` read as
thousands but holds with it read as 1.5 is marked as ambiguous. A result may be approximate
(``= ~19.16``, ``= about 9.2 GiB``: no more latitude than ``= 19.16``), a ratio (``23x``), a
percentage (``= 93.5%``) or followed by a power of ten (``= 9.8304 x 10^9 B``); a percentage
followed by ``slower``, ``more`` and the like states a change, so ``0.541 / 0.569 is 4.9
percent slower`` is checked as 1 - 0.951 = 4.9 %, and ``from a to b = -31.2 %`` is the change
from a to b (in points, too, between two percentages).

Units: when any number in the expression carries a byte unit, the expression is in bytes and
the result must carry one too; when none does, a byte result takes the expression as bytes
(``65,536 x 150,000 = 9.16 GiB``). A byte quantity said again in another unit (``9.16 GiB =
9.84 GB``) is a claim; with ``~`` only between two units (``16 GiB ~ 24 GiB`` is a range).

Weaker verbs (``is``, ``are``, ``makes``, ``comes to``) after an expression give a *tentative*
claim: arithmetic written in words may not be a claim at all, so a check reports one that
disagrees as a warning, not an error. Arithmetic that cannot be checked (units that do not
combine, a number too large, a difference written as a range such as ``100-20 = 80``) is
reported as ``Unreadable``, never passed in silence.

The scan is linear in the length of the text: one regular expression, whose every alternative
either consumes what it reads or reads a bounded number of characters, finds the tokens, and one
pass over them builds each expression once (a word before a number is looked at only in the gap
the scan already holds, and ``from`` only in the few characters before an expression). Values
are exact fractions; no text is evaluated as code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import NamedTuple

from kvrecords.kv.units import BYTE_UNITS, Written, agrees

# Past this size a value is no plausible figure; stopping there bounds the work per operation.
MAX_VALUE_BITS = 4096
MAX_DIGITS = 60  # digits in one number
MAX_DEPTH = 16  # nested parentheses
MAX_ITEMS = 256  # numbers, operators and parentheses in one expression

# Thousands separators: a comma, a space (plain, thin, narrow or non-breaking) or an apostrophe
# (65'536); one number uses one of them throughout.
_SEPARATOR = "[,\u00a0\u2009\u202f '\u2019]"
_SPACE = "[ \u00a0\u2009\u202f]"
# Units written out: 9.16 gibibytes is 9.16 GiB
_SPELLED_UNITS = {
    "kibibyte": "KiB",
    "mebibyte": "MiB",
    "gibibyte": "GiB",
    "tebibyte": "TiB",
    "kilobyte": "KB",
    "megabyte": "MB",
    "gigabyte": "GB",
    "terabyte": "TB",
}
_BYTE_UNIT = "|".join(
    sorted(
        [*BYTE_UNITS, "bytes", "byte", *_SPELLED_UNITS, *(f"{name}s" for name in _SPELLED_UNITS)],
        key=len,
        reverse=True,
    )
)
_MULTIPLIERS = {
    "k": 1000,
    "K": 1000,
    "M": 10**6,
    "thousand": 1000,
    "million": 10**6,
    "billion": 10**9,
    "trillion": 10**12,
}
_TOKEN_RE = re.compile(
    rf"""
    (?=[0-9=≈≃≅→⇒~()×*·⋅/÷−^+\-x])  # every token starts with one of these: a fast skip
    (?:(?P<number>(?:(?<![A-Za-z0-9_.,])|(?<=x)(?<![A-Za-z_]x))
        (?P<digits>[1-9][0-9]{{0,2}}(?P<separator>{_SEPARATOR})[0-9]{{3}}
            (?:(?P=separator)[0-9]{{3}})*(?![0-9])|[0-9]+)
        (?:(?P<decimals>\.[0-9]+)|(?P<decimal_comma>,[0-9]+(?![0-9])(?!,[0-9])))?
        (?:[eE](?P<exponent>[+-]?[0-9]{{1,3}})(?![0-9]))?
        (?:(?P<multiplier>[kKM])(?![A-Za-z0-9_])
          |{_SPACE}(?P<word_multiplier>thousand|million|billion|trillion)\b)?
        (?:(?P<percent>{_SPACE}?%|{_SPACE}percent\b)(?:{_SPACE}(?P<of>of)\b)?
          |{_SPACE}?(?P<unit>(?:{_BYTE_UNIT})(?P<per_token>(?:/|{_SPACE}per{_SPACE})(?:tokens?|tok)\b)?)
              (?![A-Za-z0-9_/])
          |(?P<ratio>[x×])(?![A-Za-z0-9_(])
        )?)
    |(?P<eq>==|=>|~=|->|=|≈|≃|≅|→|⇒|(?<=\s)~(?=\s))
    |(?P<op>\*\*|[×*·⋅/÷−^]|(?<![A-Za-z_])\+|\+(?![A-Za-z_])|(?<![A-Za-z_])x(?![A-Za-z_])
        |(?<=\s)-(?=\s))
    |(?P<label>\([A-Za-z][A-Za-z0-9_+\-/]{{0,30}}(?:\ [A-Za-z][A-Za-z0-9_+\-/]{{0,30}}){{0,5}}\))
    |(?P<open>\()
    |(?P<close>\)))
    """,
    re.VERBOSE,
)
_LABEL_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_+\-/']*")
_OPERATORS = {"x": "x", "×": "x", "*": "x", "·": "x", "⋅": "x", "/": "/", "÷": "/"}
_OPERATORS |= {"+": "+", "-": "-", "−": "-", "^": "^", "**": "^"}
_QUALIFIERS = {"", "~", "about", "roughly", "approximately", "around", "nearly", "almost"}
# Words that join an expression to its result, and whether they join it only tentatively
_JOINERS: dict[tuple[str, ...], bool] = {
    ("which", "is"): False,
    ("that", "is"): False,
    ("gives",): False,
    ("giving",): False,
    ("equals",): False,
    ("is",): True,
    ("are",): True,
    ("makes",): True,
    ("make",): True,
    ("totals",): True,
    ("total",): True,
    ("comes", "to"): True,
    ("come", "to"): True,
    ("works", "out", "to"): True,
}
_HYPHENS = {"-", "–", "‑"}
_SIGNS = {"-", "−", "–", "+"}  # a sign glued to a result: = -35 %
# Operators written as words between two numbers
_WORD_OPERATORS: dict[tuple[str, ...], str] = {
    ("times",): "x",
    ("by",): "x",
    ("multiplied", "by"): "x",
    ("divided", "by"): "/",
    ("to",): "to",  # only in "from a to b", a change
}
_FROM_RE = re.compile(r"(?i)(?<![A-Za-z])from[ \u00a0]+\Z")
# A percentage followed by one of these states a change (``4.9 percent slower``), not a value
_COMPARATIVE_RE = re.compile(
    r"[ \u00a0]{1,3}(slower|faster|more|less|higher|lower|smaller|larger|bigger|fewer|greater"
    r"|shorter|longer)\b"
)

# A power of ten after a result: ``= 9.8304 x 10^9 B``
_POWER_OF_TEN_RE = re.compile(
    rf"{_SPACE}?[x×·⋅*]{_SPACE}?10(?:\^|\*\*)(?P<exponent>[+-]?[0-9]{{1,3}})(?![0-9.])"
    rf"(?:{_SPACE}?(?P<unit>(?:{_BYTE_UNIT})"
    rf"(?P<per_token>(?:/|{_SPACE}per{_SPACE})(?:tokens?|tok)\b)?)(?![A-Za-z0-9_/]))?"
)


# a value with its dimension: 1 for bytes, 0 for a plain number (x and / add and subtract it)
_Dimensioned = tuple[Fraction, int]


class Number(NamedTuple):
    """A number as prose writes it, with what the writing says about its size."""

    text: str  # as shown in messages: separators as commas, suffixes kept
    written: Written  # the digits, so the written precision survives
    scale_parts: tuple[int, int]  # what one unit of the digits is worth, as a fraction
    value: Fraction  # the digits times the scale
    unit: str | None  # a byte unit, "%" or "x" (a ratio)
    per_token: bool
    # 1,500 with one comma group reads as fifteen hundred, but with a decimal comma as 1.5
    one_comma_group: bool = False

    @property
    def decimal_reading(self) -> Fraction | None:
        """The value with the comma read as a decimal comma; None for a number that has only
        one reading."""
        return Fraction(self.written.value) / 1000 * self.scale if self.one_comma_group else None

    @property
    def scale(self) -> Fraction:
        """1000 for 150k, 1/100 for 93.5%, 1,073,741,824 for GiB."""
        return Fraction(*self.scale_parts)


class Claim(NamedTuple):
    """One arithmetic claim found in prose."""

    text: str
    start: int  # offset in the prose
    expression: str  # as messages show it: "16 x 4 x 256 x 2 x 2"
    value: Fraction  # the expression's exact value, in bytes when the result is in bytes
    numbers: tuple[Fraction, ...]  # the values of the expression's numbers
    result: Written  # the result's digits as written
    scale: Fraction  # what one unit of the result's digits is worth (in bytes for byte units)
    suffix: str  # the result's unit as written after its digits: " GiB", "%", "x", "k"
    in_bytes: bool  # the result has a byte unit (and the value is in bytes)
    per_token: bool  # the result is bytes per token
    tentative: bool  # joined by a weak verb ("is", "are"): perhaps not a claim at all
    # a conversion (``9.16 GiB = 9,835,000,000 B``): the quantity as written and its unit's bytes
    converted: tuple[Written, Fraction] | None = None
    # the expression and the result with every 1,500 read as 1.5, when the claim has such a
    # number: a claim that fails as written may hold so (``holds_with_decimal_comma``)
    comma_reading: tuple[tuple[Number | str, ...], Number] | None = None

    @property
    def unit(self) -> str | None:
        return self.suffix.strip() or None


class Unreadable(NamedTuple):
    """Arithmetic next to a stated figure that the grammar cannot check, and why."""

    text: str
    start: int
    reason: str
    beyond_limits: bool = False  # too long or too large to check, rather than ambiguous


class _Invalid(Exception):
    """The expression cannot be evaluated; the message says why."""

    def __init__(self, reason: str, *, beyond_limits: bool = False) -> None:
        super().__init__(reason)
        self.beyond_limits = beyond_limits


def _number(match: re.Match[str], *, ratio_sign_multiplies: bool = False) -> Number:
    """The number a token holds; with ``ratio_sign_multiplies``, ``4x`` is 4 followed by the
    multiplication that ``4x 5090`` means."""
    digits = match["digits"]
    if match["separator"]:
        digits = digits.replace(match["separator"], ",")
    # a decimal comma (1,5 or 0,935: no thousands group reads so) is read as a point
    decimals = match["decimals"] or (
        "." + match["decimal_comma"][1:] if match["decimal_comma"] else ""
    )
    plain = digits + decimals
    whole = digits.replace(",", "")
    if len(whole) + len(decimals) > MAX_DIGITS:
        raise _Invalid(f"a number of more than {MAX_DIGITS} digits", beyond_limits=True)
    # exact arithmetic in integers: the digits over a power of ten, times the scale
    numerator, denominator = int(whole + decimals[1:]), 10 ** max(0, len(decimals) - 1)
    scale_numerator, scale_denominator = 1, 1
    suffix = ""
    if match["exponent"]:
        exponent = int(match["exponent"])
        if exponent >= 0:
            scale_numerator *= 10**exponent
        else:
            scale_denominator *= 10**-exponent
        suffix += f"e{match['exponent']}"
    multiplier = match["multiplier"] or match["word_multiplier"]
    if multiplier:
        scale_numerator *= _MULTIPLIERS[multiplier]
        suffix += multiplier if match["multiplier"] else f" {multiplier}"
    unit = None
    if match["percent"]:
        scale_denominator *= 100
        unit, suffix = "%", suffix + "%"
    elif match["unit"]:
        unit = match["unit"] if match["unit"].isascii() else re.sub(_SPACE, " ", match["unit"])
        scale_numerator *= _unit_bytes(unit.split("/")[0].split(" ")[0])
        suffix += f" {unit}"
    elif match["ratio"] and not ratio_sign_multiplies:
        unit, suffix = "x", suffix + "x"
    return Number(
        plain + suffix,
        Written(plain),
        (scale_numerator, scale_denominator),
        Fraction(numerator * scale_numerator, denominator * scale_denominator)
        if denominator * scale_denominator != 1
        else Fraction(numerator * scale_numerator),
        unit,
        bool(match["per_token"]),
        match["separator"] == "," and not decimals and digits.count(",") == 1,
    )


def _unit_bytes(name: str) -> int:
    """Bytes in one ``GiB``, ``gibibytes`` or ``bytes``."""
    if name in BYTE_UNITS:
        return BYTE_UNITS[name]
    spelled = _SPELLED_UNITS.get(name.removesuffix("s"))
    return BYTE_UNITS[spelled] if spelled else 1


def _is_bytes(number: Number) -> bool:
    return number.unit not in (None, "%", "x")


# An expression is a list of items: a Number, or an operator or parenthesis as a string.
_Item = Number | str


def _evaluate(items: list[_Item]) -> tuple[Fraction, int]:
    """The exact value of an expression and its byte dimension (0 plain, 1 bytes)."""
    position = 0

    def peek() -> _Item | None:
        return items[position] if position < len(items) else None

    def atom() -> tuple[Fraction, int]:
        nonlocal position
        item = peek()
        position += 1
        if item == "(":
            value = expression()
            position += 1  # the closing parenthesis, which the scan guarantees
            return value
        assert isinstance(item, Number)
        return item.value, 1 if _is_bytes(item) else 0

    def power() -> tuple[Fraction, int]:
        nonlocal position
        base, dimension = atom()
        if peek() == "^":
            position += 1
            item = peek()
            position += 1
            # a unit after the exponent is the power's: 2^16 B is 65,536 B
            exponent = Fraction(item.written.value) if isinstance(item, Number) else None
            if dimension or exponent is None or exponent.denominator != 1:
                raise _Invalid("a power needs a plain base and a whole exponent")
            bits = max(base.numerator.bit_length(), base.denominator.bit_length())
            if abs(exponent) * bits > MAX_VALUE_BITS:
                raise _Invalid("a value too large to check", beyond_limits=True)
            if base == 0 and exponent < 0:
                raise _Invalid("a division by zero")
            assert isinstance(item, Number)
            base = base ** int(exponent) * item.scale
            dimension = 1 if _is_bytes(item) else 0
        return base, dimension

    def left_to_right(
        operand: Callable[[], _Dimensioned],
        operators: tuple[str, ...],
        combine: Callable[[str, _Dimensioned, _Dimensioned], _Dimensioned],
    ) -> _Dimensioned:
        """One precedence level: operands joined by its operators, from the left."""
        nonlocal position
        value = operand()
        while peek() in operators:
            operator = str(items[position])  # peek() saw one of the operators
            position += 1
            value = combine(operator, value, operand())
            _bounded(value[0])
        return value

    def multiply(operator: str, left: _Dimensioned, right: _Dimensioned) -> _Dimensioned:
        if operator == "x":
            return left[0] * right[0], left[1] + right[1]
        if right[0] == 0:
            raise _Invalid("a division by zero")
        return left[0] / right[0], left[1] - right[1]

    def add(operator: str, left: _Dimensioned, right: _Dimensioned) -> _Dimensioned:
        if right[1] != left[1]:
            raise _Invalid("a sum of bytes and plain numbers")
        return (left[0] + right[0] if operator == "+" else left[0] - right[0]), left[1]

    def product() -> _Dimensioned:
        return left_to_right(power, ("x", "/"), multiply)

    def expression() -> _Dimensioned:
        return left_to_right(product, ("+", "-"), add)

    return expression()


def _bounded(value: Fraction) -> None:
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_VALUE_BITS:
        raise _Invalid("a value too large to check", beyond_limits=True)


def _expression_text(items: list[_Item]) -> str:
    parts = [
        item.text if isinstance(item, Number) else item if item in "()" else f" {item} "
        for item in items
    ]
    return "".join(parts)


def _balanced_start(items: list[re.Match[str] | str]) -> int:
    """Where the expression starts: after the last parenthesis that opens and never closes
    (``(12 x 2 = 24``)."""
    unmatched: list[int] = []
    for index, item in enumerate(items):
        if item == "(":
            unmatched.append(index)
        elif item == ")":
            unmatched.pop()
    return unmatched[-1] + 1 if unmatched else 0


class _Scan:
    """One pass over the tokens of a text, building each expression once.

    An expression is held as tokens (a number's ``re.Match``, or an operator or parenthesis as
    a string) and read into numbers only when an equals sign makes it a claim."""

    def __init__(self, text: str, limit: int | None) -> None:
        self.text = text
        self.limit = limit
        self.stopped = False  # a claim past the limit was found
        self.claims: list[Claim] = []
        self.tokens: list[re.Match[str]] = []
        self.unreadable: list[Unreadable] = []
        self.reset()

    def reset(self) -> None:
        self.items: list[re.Match[str] | str] = []
        self.offsets: list[int] = []  # where each item starts in the text
        self.expecting = "nothing"  # "factor" after an operator, "operator" after a factor
        self.labels = 0
        self.depth = 0
        self.after_range = False  # the first number follows "100-": a range, not arithmetic
        self.too_long = False  # more than MAX_ITEMS: only the first are kept
        self.joined_sign = ""  # "which is -35 %": the sign glued to the result

    def found(self, found: Claim | Unreadable) -> None:
        if self.limit is not None and len(self.claims) + len(self.unreadable) >= self.limit:
            self.stopped = True
        elif isinstance(found, Claim):
            self.claims.append(found)
        else:
            self.unreadable.append(found)

    def add(self, item: re.Match[str] | str, offset: int) -> None:
        if len(self.items) == MAX_ITEMS:
            self.too_long = True
            return
        self.items.append(item)
        self.offsets.append(offset)

    def start(self, item: re.Match[str] | str, offset: int) -> None:
        self.reset()
        self.add(item, offset)
        self.expecting, self.depth = ("factor", 1) if item == "(" else ("operator", 0)

    def run(self, start: int, stop: int) -> bool:
        """Read every token of ``text[start:stop]``; False when the limit stopped the reading
        early."""
        text = self.text
        self.reset()
        tokens = self.tokens = list(_TOKEN_RE.finditer(text, start, stop))
        index, end, count = 0, start, len(tokens)
        while index < count:
            if self.stopped:
                return False
            token = tokens[index]
            kind = token.lastgroup or ""
            if self.expecting == "nothing" and kind != "number" and kind != "open":
                index += 1  # outside any expression only a number or "(" starts one
                end = token.end()
                continue
            gap = text[end : token.start()]
            joined = None
            if gap and self.expecting != "nothing" and not gap.isspace():
                if kind == "number" and self.word_operator(gap, end):  # "65,536 times 150,000"
                    index += self.token(kind, tokens, index, "")
                    end = token.end()
                    continue
                joined = self.gap(gap, kind == "number")
            if joined is not None:  # "... which is 9.16 GiB": the number is a result
                sign = self.joined_sign
                self.claim(
                    end, token, tentative=joined, equals_sign=False, by_sign=False, sign=sign
                )
                self.start(token, token.start())
                index += 1
            else:
                index += self.token(kind, tokens, index, gap)
            end = tokens[index - 1].end()
        return True

    def gap(self, gap: str, before_number: bool) -> bool | None:
        """Text between tokens: up to three label words after a number, perhaps ending in words
        that join the expression to a result (``which is``, ``gives``, ``is about``), else a
        break. Returns whether the join is tentative, or None when there is none."""
        if self.expecting == "factor":
            self.reset()
            return None
        self.joined_sign = ""
        if before_number and gap[-1] in _SIGNS and gap[:-1].endswith((" ", "\u00a0")):
            self.joined_sign, gap = ("+" if gap[-1] == "+" else "-"), gap[:-1]
        words = gap.split(None, 8)
        if not words or len(words) > 8:  # "1 000 -1": a sign with no words to join it
            self.reset()
            return None
        lowered = [word.lower() for word in words]
        joiner, tentative = _joiner(lowered[:-1] if lowered[-1] in _QUALIFIERS else lowered)
        if joiner:
            if not before_number:
                self.reset()
                return None
            words = words[: len(words) - joiner - (lowered[-1] in _QUALIFIERS)]
            if words and words[-1].endswith(","):  # "150,000 tokens, which is"
                words[-1] = words[-1][:-1]
                words = [word for word in words if word]
        self.labels += len(words)
        if self.labels > 3 or not all(_LABEL_WORD_RE.fullmatch(word) for word in words):
            self.reset()
            return None
        return tentative if joiner else None

    def after_from(self) -> bool:
        """Whether the expression's first number follows "from": "from a to b" is a change."""
        first = self.offsets[0]
        return _FROM_RE.search(self.text, max(0, first - 12), first) is not None

    def word_operator(self, gap: str, at: int) -> bool:
        """An operator in words before a number (``times``, ``by``, ``divided by``, and ``to``
        after ``from a``), after at most three label words: taken, and True."""
        if self.expecting != "operator" or self.too_long:
            return False
        if not gap.rstrip().lower().endswith(("times", "by", "to")):
            return False
        words = gap.split(None, 5)
        lowered = [word.lower() for word in words[-2:]]
        for length in (2, 1):
            operator = _WORD_OPERATORS.get(tuple(lowered[-length:]))
            labels = words[:-length]
            if operator is None or len(lowered) < length:
                continue
            if operator == "to" and not (len(self.items) == 1 and self.after_from()):
                return False
            # "reduced by 23x" is no product: "by" multiplies only right after a number
            if lowered[-length:] == ["by"] and labels:
                return False
            if self.labels + len(labels) > 3 or not all(map(_LABEL_WORD_RE.fullmatch, labels)):
                return False
            self.add(operator, at)
            self.expecting, self.labels = "factor", 0
            return True
        return False

    def token(self, kind: str, tokens: list[re.Match[str]], index: int, gap: str) -> int:
        """Take one token; returns how many tokens it consumed."""
        token = tokens[index]
        expecting = self.expecting
        if kind == "number":
            self.number(token, gap, tokens[index - 1] if index else None)
        elif kind == "op" and expecting == "operator":
            self.add(_OPERATORS[token.group()], token.start())
            self.expecting, self.labels = "factor", 0
        elif kind == "open" and expecting == "factor" and self.depth < MAX_DEPTH:
            self.add("(", token.start())
            self.depth += 1
        elif kind == "open" and expecting != "factor":
            self.start("(", token.start())
        elif kind == "close" and expecting == "operator" and self.depth > 0:
            self.add(")", token.start())
            self.depth -= 1
            self.labels = 0
        elif kind == "label" and expecting == "operator" and self.labels < 3:
            self.labels += 1
        elif kind == "eq" and expecting == "operator":
            found = self.result(tokens, index)
            if found is not None:
                result, sign, taken = found
                self.claim(
                    token.start(),
                    result,
                    tentative=False,
                    equals_sign=token.group() == "=",
                    by_sign=True,
                    sign=sign,
                    tilde=token.group() == "~",
                )
                self.start(result, result.start())
                return taken
            self.reset()
        else:
            self.reset()
        return 1

    def number(self, token: re.Match[str], gap: str, previous: re.Match[str] | None) -> None:
        if self.expecting == "factor":
            self.add(token, token.start())
        elif (
            self.expecting == "operator"
            and self.labels == 0
            and not self.too_long
            and not isinstance(self.items[-1], str)
            and self.items[-1]["ratio"]
            and (not gap or gap.isspace())
        ):  # "4x 5090": the ratio sign was a multiplication
            self.add("x", self.items[-1].end() - 1)
            self.add(token, token.start())
        else:
            glued = previous is not None and previous.lastgroup == "number"
            self.start(token, token.start())
            self.after_range = glued and gap in _HYPHENS
        self.labels = 0
        self.expecting = "operator"
        if token["of"]:  # "93.5% of 150,000"
            self.add("x", token.end())
            self.expecting = "factor"

    def result(
        self, tokens: list[re.Match[str]], index: int
    ) -> tuple[re.Match[str], str, int] | None:
        """The number right after the equals sign, past ``~`` or ``about``, with its sign
        (``= -35%``): the number, the sign ("-", "+" or "") and the tokens taken."""
        taken = 2
        if index + 2 < len(tokens) and tokens[index + 1].group() in ("−", "+"):
            taken = 3  # a sign the scan reads as an operator, glued to the number
        number = tokens[index + taken - 1] if index + taken - 1 < len(tokens) else None
        if number is None or number.lastgroup != "number":
            return None
        between = self.text[tokens[index].end() : number.start()]
        sign = ""
        if between[-1:] in _SIGNS:
            sign, between = "-" if between[-1] != "+" else "+", between[:-1]
        if taken == 3 and not sign:
            return None
        return (number, sign, taken) if between.strip().lower() in _QUALIFIERS else None

    def claim(
        self,
        joined_at: int,
        result_token: re.Match[str],
        *,
        tentative: bool,
        equals_sign: bool,
        by_sign: bool,
        sign: str = "",
        tilde: bool = False,
    ) -> None:
        """The expression so far, joined at ``joined_at`` to the number ``result_token`` (by a
        sign such as ``=`` or ``≈`` when ``by_sign``, else by words), itself signed ``sign``."""
        first = 0 if self.too_long else _balanced_start(self.items)
        tokens = self.items[first:]
        start = self.offsets[first] if tokens else joined_at
        text = self.text[start : result_token.end()]
        if self.too_long:
            reason = f"it has more than {MAX_ITEMS} numbers, operators and parentheses"
            self.found(Unreadable(text, start, reason, beyond_limits=True))
            return
        if not any(isinstance(item, str) and item not in "()" for item in tokens):
            if by_sign and not self.after_range and len(tokens) == 1 and not sign:
                self.conversion(tokens[0], result_token, start, text, tilde)
                return
            if self.after_range and equals_sign:
                begin = self.text.rfind(" ", 0, start - 1) + 1
                reason = "a range is not arithmetic; write a difference with spaces (a - b)"
                end = result_token.end()
                self.found(Unreadable(self.text[begin:end], begin, reason))
            return
        try:
            items = _numbers(tokens)
            result, result_end = self.result_number(result_token, sign)
            text = self.text[start:result_end]
            if "to" in items:
                if len(items) != 3:
                    reason = "it joins a change from one figure to another to more arithmetic"
                    self.found(Unreadable(text, start, reason))
                else:
                    self.change(items, result, sign, start, text, tentative)
                return
            value, dimension = _evaluate(items)
        except _Invalid as invalid:
            self.found(Unreadable(text, start, f"it holds {invalid}", invalid.beyond_limits))
            return
        if _is_bytes(result) and dimension not in (0, 1):
            self.found(Unreadable(text, start, "its units do not give bytes"))
            return
        if not _is_bytes(result) and dimension != 0:
            reason = "it counts bytes but its result has no byte unit"
            self.found(Unreadable(text, start, reason))
            return
        # "a / b is 4.9 percent slower": a change
        comparative = _COMPARATIVE_RE.match(self.text, result_end) if result.unit == "%" else None
        if comparative:
            value = abs(value - 1)
        suffix, text = self.suffixed(result, comparative, start, text)
        self.found(
            Claim(
                text,
                start,
                _expression_text(items),
                value,
                tuple(item.value for item in items if isinstance(item, Number)),
                result.written,
                result.scale,
                suffix,
                _is_bytes(result),
                result.per_token,
                tentative,
                comma_reading=_comma_reading(items, result),
            )
        )

    def suffixed(
        self, result: Number, comparative: re.Match[str] | None, start: int, text: str
    ) -> tuple[str, str]:
        """A result's unit as written after its figure, and a comparative after it ("slower")
        with the claim's text extended to it."""
        suffix = result.text[len(result.written.text) :]
        if comparative is None:
            return suffix, text
        return f"{suffix} {comparative[1]}", self.text[start : comparative.end()]

    def result_number(self, token: re.Match[str], sign: str) -> tuple[Number, int]:
        """The result with its sign and a power of ten written after it (``9.8304 x 10^9 B``),
        and where it ends."""
        number, end = _number(token), token.end()
        tail = _POWER_OF_TEN_RE.match(self.text, end) if number.unit is None else None
        if tail is not None:
            unit = tail["unit"]
            scale = number.scale * Fraction(10) ** int(tail["exponent"])
            scale *= _unit_bytes(unit.split("/")[0].split(" ")[0]) if unit else 1
            number = number._replace(
                text=f"{number.text} x 10^{tail['exponent']}" + (f" {unit}" if unit else ""),
                scale_parts=(scale.numerator, scale.denominator),
                value=Fraction(number.written.value) * scale,
                unit=unit,
                per_token=bool(tail["per_token"]),
            )
            end = tail.end()
        if sign == "-":
            written = Written(f"-{number.written.text}")
            number = number._replace(text=f"-{number.text}", written=written, value=-number.value)
        return number, end

    def change(
        self,
        items: list[_Item],
        result: Number,
        sign: str,
        start: int,
        text: str,
        tentative: bool,
    ) -> None:
        """``from 53.2 s to 36.6 s = -31.2 %``: a relative change, or a difference in points
        between two percentages; a result without a sign states the size of the change."""
        before, _, after = items
        assert isinstance(before, Number) and isinstance(after, Number)
        if result.unit != "%":
            return  # from one figure to another, then some other quantity: not a change
        if _is_bytes(before) != _is_bytes(after):
            self.found(Unreadable(text, start, "it changes between bytes and a plain number"))
            return
        if before.value == 0:
            self.found(Unreadable(text, start, "it changes from zero"))
            return
        comparative = _COMPARATIVE_RE.match(self.text, start + len(text))
        readings = [(after.value - before.value) / before.value]
        if before.unit == "%" and after.unit == "%":
            readings.append(after.value - before.value)  # percentage points
        if not sign or comparative:
            readings = [abs(reading) for reading in readings]
        holding = [r for r in readings if agrees(result.written, r / result.scale)]
        suffix, text = self.suffixed(result, comparative, start, text)
        self.found(
            Claim(
                text,
                start,
                f"from {before.text} to {after.text}",
                (holding or readings)[0],
                (before.value, after.value),
                result.written,
                result.scale,
                suffix,
                False,
                False,
                tentative,
            )
        )

    def conversion(
        self,
        quantity: re.Match[str] | str,
        result_token: re.Match[str],
        start: int,
        text: str,
        tilde: bool,
    ) -> None:
        """``9.16 GiB = 9.84 GB``: one byte quantity written in another unit is a claim too
        (and with ``~`` only in another unit: ``16 GiB ~ 24 GiB`` is a range)."""
        if isinstance(quantity, str):
            return  # a lone parenthesis
        try:
            number, result = _number(quantity), _number(result_token)
        except _Invalid:
            return  # a lone number the grammar cannot read states nothing to check
        if not (_is_bytes(number) and _is_bytes(result)) or number.per_token != result.per_token:
            return
        if tilde and number.scale == result.scale:
            return
        self.found(
            Claim(
                text,
                start,
                _expression_text([number]),
                number.value,
                (number.value,),
                result.written,
                result.scale,
                result.text[len(result.written.text) :],
                True,
                result.per_token,
                False,
                (number.written, number.scale),
            )
        )


def _comma_reading(items: list[_Item], result: Number) -> tuple[tuple[_Item, ...], Number] | None:
    """The claim's expression and result when one of its numbers reads both as thousands and
    with a decimal comma (``1,500``), else None; read again only for a claim that fails."""
    if result.one_comma_group or any(
        isinstance(item, Number) and item.one_comma_group for item in items
    ):
        return tuple(items), result
    return None


def holds_with_decimal_comma(claim: Claim) -> bool:
    """Whether a claim holds with every number such as ``1,500`` read as 1.5: then it is
    ambiguous rather than wrong."""
    if claim.comma_reading is None:
        return False
    items, result = claim.comma_reading
    read = [
        item._replace(value=item.decimal_reading)
        if isinstance(item, Number) and item.decimal_reading is not None
        else item
        for item in items
    ]
    try:
        value, _ = _evaluate(read)
    except _Invalid:
        return False
    written = result.written
    if result.one_comma_group:  # 1,500 as 1.500: three decimals written
        written = Written(written.text.replace(",", "."))
    return agrees(written, value / result.scale)


def _joiner(words: list[str]) -> tuple[int, bool]:
    """How many of the last ``words`` join an expression to its result (0 when none), and
    whether they join it only tentatively."""
    for length in (3, 2, 1):
        tentative = _JOINERS.get(tuple(words[-length:])) if len(words) >= length else None
        if tentative is not None:
            return length, tentative
    return 0, False


def _numbers(tokens: list[re.Match[str] | str]) -> list[_Item]:
    """An expression's tokens with each number read."""
    items: list[_Item] = []
    for index, token in enumerate(tokens):
        if isinstance(token, str):
            items.append(token)
        else:
            follows = tokens[index + 1] if index + 1 < len(tokens) else None
            items.append(_number(token, ratio_sign_multiplies=follows == "x"))
    return items


class Scanned(NamedTuple):
    """What a scan found: claims, arithmetic it cannot check, and whether it read to the end."""

    claims: list[Claim]
    unreadable: list[Unreadable]
    complete: bool  # False when it stopped at its limit
    per_token: list[Figure]  # every bytes-per-token figure, claimed or not


# A claim has an operator before a number (``x 4``, ``/ (2``, `` - 5``), and a range warning
# a hyphen between numbers before an equals sign; text with neither holds nothing to check.
# Each search starts with a character class, which the regular expression engine skips to in C:
# far cheaper than the scan.
_OPERATOR_BEFORE_NUMBER_RE = re.compile(
    r"[x×*·⋅/÷−^+\-](?<![A-Za-z_]x)(?:(?<=-)\s+|(?<!-)\s*)(?:\(\s*)*[0-9]"
)
_RANGE_RE = re.compile(r"[0-9][-–‑][0-9]")
_PERCENT_OF_RE = re.compile(rf"(?:%|percent){_SPACE}of\b")
# A byte quantity said again in another unit (``9.16 GiB = 9.84 GB``, ``≈ ~9.8 GB``)
_CONVERSION_RE = re.compile(
    rf"(?:{_BYTE_UNIT})(?:/tokens?|\s+per\s+tokens?)?\s{{0,3}}(?:=|≈|≃|~=|~\s)\s{{0,3}}(?:~|about\s|approx\.?\s)?\s{{0,3}}[0-9]"
)
# An operator in words before a number: "65,536 times 150,000", "from 53.2 to 36.6"; each
# search starts with a literal, which the regular expression engine skips to in C
_TIMES_OR_BY_RE = re.compile(r"(?:times|by)[ \u00a0]+[0-9]")
_TO_NUMBER_RE = re.compile(r"to[ \u00a0]+[0-9]")


def _may_hold_arithmetic(prose: str) -> bool:
    return (
        _OPERATOR_BEFORE_NUMBER_RE.search(prose) is not None
        or ("of" in prose and _PERCENT_OF_RE.search(prose) is not None)
        or ("=" in prose and _RANGE_RE.search(prose) is not None)
        or (
            ("=" in prose or "≈" in prose or "≃" in prose or "~" in prose)
            and _CONVERSION_RE.search(prose) is not None
        )
        or (("times" in prose or "by" in prose) and _TIMES_OR_BY_RE.search(prose) is not None)
        or ("from" in prose and _TO_NUMBER_RE.search(prose) is not None)
    )


def scan(prose: str, limit: int | None = None) -> Scanned:
    """Every claim in ``prose`` and every piece of arithmetic that cannot be checked, up to
    ``limit`` of them together, and every bytes-per-token figure."""
    if not _may_hold_arithmetic(prose):  # most text holds no claim; skip the scan
        return Scanned([], [], True, _per_token(prose, None) if "tok" in prose else [])
    state = _Scan(prose, limit)
    complete = True
    per_token: list[Figure] = []
    for start, stop in _sentences(prose):
        sentence = prose[start:stop]
        if complete and _may_hold_arithmetic(sentence):
            complete = state.run(start, stop)
            per_token += _per_token(sentence, state.tokens) if "tok" in sentence else []
        elif "tok" in sentence and _PER_TOKEN_UNIT_RE.search(sentence) is not None:
            per_token += _per_token(prose, list(_TOKEN_RE.finditer(prose, start, stop)))
    return Scanned(state.claims, state.unreadable, complete, per_token)


# A full stop before white space ends a sentence. No token holds one, and a gap that holds one
# ends any expression (it is no label word, joiner or operator), so no claim spans sentences
# and each sentence is scanned on its own: only those that may hold arithmetic are read.
_SENTENCE_END_RE = re.compile(r"\.\s")


def _sentences(prose: str) -> Iterator[tuple[int, int]]:
    """Where each sentence of ``prose`` starts and stops, the full stop and space with it."""
    start = 0
    for end in _SENTENCE_END_RE.finditer(prose):
        yield start, end.end()
        start = end.end()
    if start < len(prose):
        yield start, len(prose)


# Every byte unit the grammar reads ends in B, byte or bytes: where none stands before "/tok"
# or "per tok", no number of the text is a bytes-per-token figure
_PER_TOKEN_UNIT_RE = re.compile(rf"(?:B|bytes?)(?:/|{_SPACE}per{_SPACE})tok")


def _per_token(text: str, tokens: list[re.Match[str]] | None) -> list[Figure]:
    """The bytes-per-token figures among ``tokens`` (read from ``text`` when not given)."""
    if "tok" not in text or (tokens is None and _PER_TOKEN_UNIT_RE.search(text) is None):
        return []
    found = []
    for token in _TOKEN_RE.finditer(text) if tokens is None else tokens:
        if token.lastgroup == "number" and token["per_token"]:
            try:
                found.append(Figure(token.start(), token.end(), _number(token), "bytes/token"))
            except _Invalid:
                continue
    return found


def find_claims(prose: str) -> list[Claim]:
    return scan(prose).claims


class Figure(NamedTuple):
    """A number in prose and what it counts: a byte unit ("bytes", "bytes/token"), "%", "x",
    else the word after it ("s", "tokens"), or "" for none."""

    start: int
    end: int
    number: Number
    kind: str


_NEXT_WORD_RE = re.compile(r"[ \u00a0]?([A-Za-z][A-Za-z/]*)")


def figures(text: str, start: int = 0, end: int | None = None) -> list[Figure]:
    """Every number the grammar reads in ``text[start:end]``, in order (one regular-expression
    pass over that span)."""
    found = []
    for token in _TOKEN_RE.finditer(text, start, len(text) if end is None else end):
        if token.lastgroup != "number":
            continue
        try:
            number = _number(token)
        except _Invalid:
            continue
        if _is_bytes(number):
            kind = "bytes/token" if number.per_token else "bytes"
        elif number.unit is not None:
            kind = number.unit
        else:
            word = _NEXT_WORD_RE.match(text, token.end())
            kind = word[1].lower() if word else ""
        found.append(Figure(token.start(), token.end(), number, kind))
    return found


def claim_value_in_unit(claim: Claim) -> Fraction:
    """The expression's value in the unit the result is written in."""
    return claim.value / claim.scale
