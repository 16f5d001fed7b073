"""Where a file that does not parse is reported: at the place its writer has to change."""

from __future__ import annotations

import pytest

from kvrecords.dataset.document import parse_document


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        # a quote left open to the end of the file: at the opening quote, not past the last line
        ("id: x\nnotes: 'four days\n", 2, 8, "the quoted string that opens here is never closed"),
        # a quote left open until an apostrophe lines later closes it
        (
            "source:\n  publisher: 'Senn Tech\nnotes: the collection's rows\n",
            2,
            14,
            "runs on to line 3, column 22",
        ),
        # an unclosed flow sequence: where the parser stopped, saying where the bracket opened
        ("flags: [--a, --b\nmodel: x\n", 2, 6, "flow sequence that opens at line 1, column 8"),
        # a control character: at the character itself
        ("id: x\nmodel: a\x00b\n", 2, 9, "character U+0000 is not allowed"),
        # a quoted string on one line with text after it: where the parser stopped
        ("id: 'x' y\n", 1, 9, "did not find expected key"),
    ],
)
def test_syntax_errors_point_at_what_to_fix(text: str, line: int, column: int, words: str) -> None:
    problems = parse_document(text.encode(), "f.yaml")
    assert isinstance(problems, list)
    [problem] = problems
    assert (problem.code, problem.line, problem.column) == ("KV001", line, column)
    assert words in problem.message
