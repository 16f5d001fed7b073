"""KV501-KV502: arithmetic claims in a record's prose are right and argue from its basis.

Claims are found and evaluated by ``kv.prose`` (a small grammar, never code); these checks
compare each with its stated result and with the bytes per token the record states.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import JsonPath
from kvrecords.dataset.records import bases
from kvrecords.kv.prose import Claim, claim_value_in_unit, find_claims
from kvrecords.kv.units import BYTE_UNITS, agrees, format_exact, format_fraction
from kvrecords.problems import Problem, Rule

PROSE_ARITHMETIC = Rule(
    "KV501",
    "prose-arithmetic",
    "Every `a x b x c = d unit` claim in prose is right at the precision written.",
    "Prose is what readers quote; a wrong product in the explanation is as harmful as a wrong "
    "field. Claims are parsed with a small grammar, never evaluated as code.",
    "16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes = 65,536 B/token",
    "65,536 x 150,000 = 9.61 GiB\n# KV501 prose claims 65,536 x 150,000 = 9.61 GiB; it is 9.16 GiB",
)

PROSE_BASIS = Rule(
    "KV502",
    "prose-basis",
    "A bytes-per-token result in prose (`= N B/token`) equals a bytes_per_token the record states.",
    "Prose that argues from a basis the record does not state escapes the geometry check.",
    "... = 65,536 B/token   (kv_bytes_basis.bytes_per_token: 65536)",
    "2 x 2 = 4 B/token\n# KV502 prose gives 4 B/token; the record states 65,536",
)


def check_prose(record: RecordContext) -> Iterator[Problem]:
    """KV501-KV502: arithmetic claims in every prose field."""
    stated_bases: set[int] = {
        basis.stated["bytes_per_token"]
        for basis in bases(record.data)
        if basis.stated.get("bytes_per_token") is not None
    }
    for path, text in record.document.leaves.items():
        if not isinstance(text, str):
            continue
        for claim in find_claims(text):
            problem = _claim_problem(record, path, claim, stated_bases)
            if problem is not None:
                yield problem


def _claim_problem(
    record: RecordContext, path: JsonPath, claim: Claim, stated_bases: set[int]
) -> Problem | None:
    value = claim_value_in_unit(claim)
    unit = f" {claim.unit}" if claim.unit else ""
    if not agrees(claim.result, value):
        shown = format_fraction(value, claim.result.decimals)
        in_bytes = f" ({format_exact(claim.value)} B)" if claim.unit in BYTE_UNITS else ""
        message = (
            f"prose claims {claim.expression()} = {claim.result.text}{unit}; "
            f"it is {shown}{unit}{in_bytes}"
        )
        return PROSE_ARITHMETIC.problem(
            record.document.path, *_claim_position(record, path, claim), message
        )
    if claim.unit == "B/token" and claim.value not in stated_bases:
        listed = ", ".join(f"{b:,}" for b in sorted(stated_bases)) or "none"
        message = f"prose gives {claim.result.text} B/token; the record's stated bytes_per_token: {listed}"
        return PROSE_BASIS.problem(
            record.document.path, *_claim_position(record, path, claim), message
        )
    return None


def _claim_position(record: RecordContext, path: JsonPath, claim: Claim) -> tuple[int, int]:
    """The claim's own line and column in the file, even inside a folded block scalar."""
    line, column = record.document.locate(path)
    words = [re.escape(word) for word in claim.text.split()]
    found = record.document.find(re.compile(r"\s+".join(words)), line)
    return found or (line, column)
