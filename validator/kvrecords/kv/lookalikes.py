"""Characters that look like arithmetic to a reader but not to the prose grammar.

A Cyrillic х between two numbers reads as a multiplication to a person and as a letter to
``kv.prose``, so a wrong product written with it would pass unseen; a digit outside 0-9 reads
as a number to some tools and not to others. These are found so that a check can name them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Characters a reader takes for an operator, with the one they look like
LOOK_ALIKES = {
    **dict.fromkeys("хХχΧⅹⅩ✕✖⨯⨉", "x"),
    **dict.fromkeys("∗⁎＊✱", "*"),
    **dict.fromkeys("∕⁄／⧸", "/"),
    **dict.fromkeys("＝꞊᐀⹀", "="),
    **dict.fromkeys("＋᛭", "+"),
}
# A look-alike operator not glued to a word, before a number; a digit outside 0-9; a
# look-alike percent sign after a number
_LOOK_ALIKE_RE = re.compile(
    rf"(?<![^\W\d_])[{''.join(LOOK_ALIKES)}](?=\s*[(0-9])|(?:(?![0-9])\d)+|(?<=[0-9])[％٪]"
)


class LookAlike(NamedTuple):
    """A character (or a run of digits) that looks like arithmetic the grammar does not read."""

    start: int
    text: str

    def describe(self) -> str:
        import unicodedata  # only text outside ASCII gets here

        first = self.text[0]
        name = f"U+{ord(first):04X} {unicodedata.name(first, 'unnamed')}"
        if first in LOOK_ALIKES:
            meant = LOOK_ALIKES[first]
            return f"{name} stands where {meant!r} would; write {meant!r}"
        if first in "％٪":
            return f"{name} stands where '%' would; write '%'"
        digits = "".join(str(unicodedata.digit(character)) for character in self.text)
        more = f" (the first of {len(self.text)})" if len(self.text) > 1 else ""
        return f"{name}{more} is not a digit 0-9, which is all the arithmetic reads; write {digits}"


def look_alikes(text: str) -> list[LookAlike]:
    """Digits outside 0-9 and characters that look like operators beside a number."""
    if text.isascii():
        return []
    return [LookAlike(m.start(), m.group()) for m in _LOOK_ALIKE_RE.finditer(text)]
