"""The answers of the record submission form, read from the issue body GitHub renders.

The form is ``.github/ISSUE_TEMPLATE/record.yml``. GitHub writes each answer under its label
as ``### Label``, a blank line, then the answer: an empty input or textarea becomes
``_No response_``, an empty dropdown ``None``, a multiple-choice dropdown its choices joined by
``, ``, and a textarea with ``render`` a fenced code block. Only the form's own labels start an
answer, and never inside a fence, so a heading someone types into an answer stays part of it.

Answers come from strangers: they are read as text, and the figure readers accept only the few
notations the form asks for (``2300``, ``2,300``, ``2.3 s``, ``~900``, ``43-45%``). Anything
else is left for a maintainer, never guessed.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

# The form's answers by id, with the labels GitHub renders them under (the form must match).
LABELS: dict[str, str] = {
    "source_url": "Source URL",
    "publisher": "Publisher",
    "source_title": "Source title",
    "published": "Publication date",
    "locator": "Where in the source",
    "model": "Model",
    "hardware": "Hardware",
    "accelerator_count": "Number of accelerators",
    "engine": "Engine",
    "engine_version": "Engine version",
    "engine_flags": "Engine command line",
    "techniques": "Techniques",
    "kv_dtype": "KV cache dtype",
    "weights_precision": "Weights precision",
    "context_tokens": "Context length (tokens)",
    "concurrency": "Concurrency",
    "workload": "Workload",
    "ttft_ms": "Time to first token (ms)",
    "decode_tokens_per_s": "Decode rate (tokens/s)",
    "decode_rate_scope": "Decode rate is",
    "cold_ttft_ms": "Cold TTFT (ms)",
    "warm_ttft_ms": "Warm TTFT (ms)",
    "hit_rate": "Prefix-cache hit rate",
    "prefill_tokens_per_s": "Prefill rate (tokens/s)",
    "runs": "Runs and figures",
    "other": "Anything else",
    "terms": "Sourcing",
}
# The dropdown's choices and the scope each gives a decode rate (an aggregate rate is the
# metric output_tokens_per_s, a per-sequence one decode_tokens_per_s with scope per_sequence).
DECODE_RATE_SCOPES = {
    "per sequence": "per_sequence",
    "aggregate over all sequences": "aggregate",
}
NO_ANSWER = ("_No response_", "None")
MAX_BODY_CHARACTERS = 65536  # what GitHub stores of an issue body
_IDS_BY_LABEL = {label: answer_id for answer_id, label in LABELS.items()}
_HEADING = re.compile(r"### +(.+?) *")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


class IssueFormError(ValueError):
    """The text is not a body rendered from the record form."""


def read_issue_body(path: Path) -> dict[str, str]:
    """The answers in the issue body saved at ``path`` (see ``parse_issue_body``)."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise IssueFormError(f"{path}: cannot be read: {error.strerror or error}") from None
    if len(raw) > 4 * MAX_BODY_CHARACTERS:
        raise IssueFormError(
            f"{path}: {len(raw):,} bytes; an issue body holds at most "
            f"{MAX_BODY_CHARACTERS:,} characters"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise IssueFormError(f"{path}: not UTF-8 text (byte {error.start})") from None
    try:
        return parse_issue_body(text)
    except IssueFormError as error:
        raise IssueFormError(f"{path}: {error}") from None


def parse_issue_body(text: str) -> dict[str, str]:
    """The answered questions of the form, by id; unanswered ones are left out."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fence: str | None = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        opened = _FENCE.match(line)
        if fence is None:
            heading = _HEADING.fullmatch(line)
            answer_id = _IDS_BY_LABEL.get(heading.group(1)) if heading else None
            if answer_id is not None:
                if answer_id in sections:
                    raise IssueFormError(f"the answer '### {LABELS[answer_id]}' appears twice")
                current = sections[answer_id] = []
                continue
            if opened:
                fence = opened.group(1)
        elif opened and opened.group(1).startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
        if current is not None:
            current.append(line)
    if not sections:
        raise IssueFormError(
            "no answer of the record form found (such as '### Source URL' or '### Model'); "
            "save the body of an issue opened with the 'Submit a measurement' form"
        )
    answers = {}
    for answer_id, lines in sections.items():
        answer = "\n".join(lines).strip()
        if answer and answer not in NO_ANSWER:
            answers[answer_id] = answer
    return answers


# ---- reading one answer ---------------------------------------------------------------------


def one_line(answer: str) -> str:
    """An input's answer on one line, its spacing collapsed."""
    return " ".join(answer.split())


def paragraph(answer: str) -> str:
    """A textarea's answer as one paragraph (line breaks become spaces)."""
    return " ".join(unfenced(answer).split())


def lines_of(answer: str) -> list[str]:
    """A textarea's non-empty lines, without the fence GitHub's ``render`` adds."""
    return [line.strip() for line in unfenced(answer).split("\n") if line.strip()]


def unfenced(answer: str) -> str:
    lines = answer.split("\n")
    if len(lines) >= 2 and _FENCE.match(lines[0]) and _FENCE.fullmatch(lines[-1].strip()):
        return "\n".join(lines[1:-1])
    return answer


def choices(answer: str) -> list[str]:
    """A multiple-choice dropdown's choices."""
    return [choice.strip() for choice in answer.split(",") if choice.strip()]


_TABLE_SEPARATOR = re.compile(r"\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?")


def markdown_table(answer: str) -> tuple[list[str], list[list[str]], list[str]]:
    """The first pipe table of a textarea's answer (``| run | role | ... |``, a ``|---|`` line,
    then a row per run): its header cells, each row's cells (padded or cut to the header's
    width), and the answer's lines outside the table. No table: ``([], [], lines)``."""
    lines = lines_of(answer)
    for start in range(len(lines) - 1):
        if lines[start].startswith("|") and _TABLE_SEPARATOR.fullmatch(lines[start + 1]):
            break
    else:
        return [], [], lines
    end = start + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    header = _cells(lines[start])
    rows = [(_cells(line) + [""] * len(header))[: len(header)] for line in lines[start + 2 : end]]
    return header, rows, lines[:start] + lines[end:]


def _cells(line: str) -> list[str]:
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") else text
    return [" ".join(cell.split()) for cell in text.split("|")]


_WHOLE = r"\d{1,3}(?:,\d{3})+|\d+"
_NUMBER = rf"(?:{_WHOLE})(?:\.\d+)?|\.\d+"
_APPROXIMATE = r"~|≈|about|approx\.?|approximately|around|roughly|circa|ca\."
_FIGURE = re.compile(
    rf"(?P<approx>(?:{_APPROXIMATE})\s*)?(?P<low>{_NUMBER})"
    rf"(?:\s*(?:-|–|to)\s*(?P<high>{_NUMBER}))?\s*(?P<unit>[a-z/%]+)?",
    re.IGNORECASE,
)
# The units a figure may be written in, per kind of figure, and what each multiplies by.
_UNITS: dict[str, dict[str, Decimal]] = {
    "ms": {"": Decimal(1), "ms": Decimal(1), "s": Decimal(1000), "sec": Decimal(1000)},
    "rate": {
        "": Decimal(1),
        "tok/s": Decimal(1),
        "tokens/s": Decimal(1),
        "t/s": Decimal(1),
        "tps": Decimal(1),
    },
    "fraction": {"": Decimal(1), "%": Decimal("0.01")},
}
FIGURE_FORMS = "a number (2300, 2,300), ~900 or 'about 900', or a range such as 43-45"


def figure(answer: str, kind: str) -> Any:
    """A measured figure as the record holds it: a number, ``{about: x}`` or ``{min, max}``.

    ``kind`` is ``ms`` (seconds are converted), ``rate`` (tokens per second) or ``fraction``
    (a percentage becomes a fraction). ``ValueError`` says why an answer cannot be read.
    """
    text = one_line(answer)
    match = _FIGURE.fullmatch(text)
    unit = (match.group("unit") or "").lower() if match else ""
    if match is None or unit not in _UNITS[kind]:
        units = ", ".join(u for u in _UNITS[kind] if u)
        raise ValueError(f"write it as {FIGURE_FORMS}, with no unit or one of: {units}")
    if match.group("approx") and match.group("high"):
        raise ValueError("an approximate range cannot be recorded; give its ends or one value")
    scale = _UNITS[kind][unit]
    low = _decimal(match.group("low")) * scale
    high = None if match.group("high") is None else _decimal(match.group("high")) * scale
    for value in (low, high):
        if value is None:
            continue
        if kind == "fraction" and value > 1:
            raise ValueError("a hit rate above 1: write a percentage with % (93.5%)")
        if kind != "fraction" and value <= 0:
            raise ValueError("a measured figure is above zero")
    if high is not None:
        if high <= low:
            raise ValueError("a range goes from the lower end to the higher one")
        return {"min": _number(low), "max": _number(high)}
    if match.group("approx"):
        return {"about": _number(low)}
    return _number(low)


def whole_number(answer: str) -> int:
    """A count written as digits (thousands separators allowed); ``ValueError`` otherwise."""
    text = one_line(answer)
    if not re.fullmatch(_WHOLE, text) or int(text.replace(",", "")) < 1:
        raise ValueError("write a whole number above zero in digits (150000 or 150,000)")
    return int(text.replace(",", ""))


def date(answer: str) -> str:
    """YYYY-MM-DD or YYYY-MM, a real date; ``ValueError`` otherwise."""
    text = one_line(answer)
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            datetime.date.fromisoformat(text)
            return text
        if re.fullmatch(r"\d{4}-\d{2}", text):
            datetime.date.fromisoformat(f"{text}-01")
            return text
    except ValueError:
        pass
    raise ValueError("write the date as YYYY-MM-DD or YYYY-MM")


def url(answer: str) -> str:
    text = answer.strip()
    if not re.fullmatch(r"https?://[^\s]+", text):
        raise ValueError("not an http or https link")
    return text


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:  # the pattern admits only digits, commas and one dot
        raise ValueError(f"{text!r} is not a number") from None


def _number(value: Decimal) -> int | float:
    """Whole values as integers, others as the float that prints as the decimal written."""
    return int(value) if value == value.to_integral_value() else float(value)
