"""KV401-KV405: figures a record derives from its measurements agree with them.

Each derivation is worked out once, as a ``Derivation`` value, whether or not the record states
the figure: the checks compare it with what the record states, and ``explain`` shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.basis import compare_bytes
from kvrecords.checks.context import RecordContext, value_at
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import basis_report
from kvrecords.kv.units import (
    Written,
    agrees,
    format_exact,
    format_number,
    format_written,
    parse_ratio,
    precision_note,
)
from kvrecords.problems import Problem, Rule

TOKENS_NOT_RECOMPUTED = Rule(
    "KV401",
    "tokens-not-recomputed",
    "results.tokens_not_recomputed = hit_rate x context_tokens, at the precision written, within 1 % and to two significant figures.",
    "The hit rate is measured; the tokens it saves follow from it and must agree.",
    "hit_rate: 0.935\ntokens_not_recomputed: 140250   (context 150,000)",
    "hit_rate: 0.935\ntokens_not_recomputed: 142500\n# KV401 tokens_not_recomputed is 142,500; 0.935 x 150,000 = 140,250",
)

SPEEDUP = Rule(
    "KV402",
    "speedup",
    "results.speedup = cold_ttft_ms / warm_ttft_ms, at the precision written, within 1 % and to two significant figures.",
    "A speedup is the headline a reader quotes; it must follow from the two TTFTs.",
    "cold_ttft_ms: 53200\nwarm_ttft_ms: 2300\nspeedup: 23x",
    "cold_ttft_ms: 53200\nwarm_ttft_ms: 2300\nspeedup: 32x\n# KV402 speedup is 32x; 53,200 / 2,300 = 23.1304",
)

BYTES_NOT_RECOMPUTED = Rule(
    "KV403",
    "bytes-not-recomputed",
    "results.bytes_not_recomputed = hit_rate x context_tokens x bytes_per_token, at the precision written, within 1 % and to two significant figures.",
    "It is the KV the cache saved from being written again; it uses the basis's bytes per "
    "token as recomputed from the model.",
    "bytes_not_recomputed: 8.56 GiB",
    "bytes_not_recomputed: 8.65 GiB\n# KV403 bytes_not_recomputed is 8.65 GiB; 0.935 x 150,000 x 65,536 B = 8.56 GiB",
)

PREFILL_RATE = Rule(
    "KV404",
    "prefill-rate",
    "results.prefill_tokens_per_s_from_ttft = context_tokens / TTFT in seconds (cold TTFT when given, else measured_ttft_ms_at_ctx).",
    "A derived prefill rate must follow from the stated context and TTFT.",
    "context_tokens: 150000\ncold_ttft_ms: 53200\nprefill_tokens_per_s_from_ttft: 2819.5",
    "prefill_tokens_per_s_from_ttft: 3000\n# KV404 prefill_tokens_per_s_from_ttft is 3,000; 150,000 / 53.2 s = 2,819.5489",
)

RANGE_ORDER = Rule(
    "KV405",
    "range-order",
    "A range's min is not above its max; a derived figure has what it is derived from.",
    "A reversed range is a typo that every consumer would mishandle; a derived figure whose "
    "inputs are null or ranges cannot be checked and must not be stated as one number.",
    "hit_rate: {min: 0.43, max: 0.45}",
    "hit_rate: {min: 0.45, max: 0.43}\n# KV405 range min 0.45 is above max 0.43",
)

FRACTION = Rule(
    "KV406",
    "fraction",
    "An observation's figure named as a hit rate or a share (`*hit_rate`, `*_fraction`, "
    "`*_share`) is a fraction from 0 to 1.",
    "A percentage written where a fraction is meant (43 for 43 %) is a hundredfold error that "
    "every chart and export would carry.",
    "aggregate_prefix_hit_rate: {min: 0.43, max: 0.45}",
    "aggregate_prefix_hit_rate: {min: 43, max: 45}\n# KV406 aggregate_prefix_hit_rate is 43, "
    "above 1: it is a fraction, write 0.43",
)

_FRACTION_NAMES = ("hit_rate", "_fraction", "_share")
_BOUNDS = ("about", "min", "max")

_HIT_RATE: JsonPath = ("results", "hit_rate")
_CONTEXT: JsonPath = ("kv_bytes_basis", "context_tokens")
_COLD_TTFT: JsonPath = ("results", "cold_ttft_ms")
_WARM_TTFT: JsonPath = ("results", "warm_ttft_ms")
_MEASURED_TTFT: JsonPath = ("measured_ttft_ms_at_ctx",)


class Derivation(NamedTuple):
    """A figure that follows from the measurements, worked out whether the record states it."""

    rule: Rule
    field: str  # under results
    stated: Any  # the record's figure, None when it does not state one
    value: Fraction | None = None  # the exact derivation; None when it cannot be made
    working: str = ""  # the derivation as messages show it: "0.935 x 150,000"
    missing: tuple[str, ...] = ()  # why it cannot be made
    source: str = ""  # the TTFT a prefill rate rests on: "cold TTFT" or measured_ttft_ms_at_ctx

    @property
    def path(self) -> JsonPath:
        return ("results", self.field)


def derivations(record: RecordContext) -> list[Derivation]:
    """Every figure the measurements give: tokens and bytes not recomputed, speedup, prefill."""
    return [
        _tokens_not_recomputed(record),
        _bytes_not_recomputed(record),
        _speedup(record),
        _prefill_rate(record),
    ]


def _input(record: RecordContext, path: JsonPath) -> Fraction | str:
    """An input to a derivation: its exact value, or why it cannot serve as one."""
    try:
        value = value_at(record.data, path)
    except (KeyError, IndexError):
        return f"{dotted(path)} is not stated"
    if value is None:
        return f"{dotted(path)} is null"
    if isinstance(value, dict):
        if "about" in value:
            return record.exact((*path, "about"))
        return f"{dotted(path)} is a range"
    return record.exact(path)


def _stated(record: RecordContext, field: str) -> Any:
    return record.data.get("results", {}).get(field)


def _derivation(
    record: RecordContext, rule: Rule, field: str, inputs: list[Fraction | str]
) -> Derivation | list[Fraction]:
    """The inputs' exact values, or the derivation that could not be made for want of them."""
    missing = tuple(value for value in inputs if isinstance(value, str))
    if missing:
        return Derivation(rule, field, _stated(record, field), missing=missing)
    return [value for value in inputs if isinstance(value, Fraction)]


def _tokens_not_recomputed(record: RecordContext) -> Derivation:
    field = "tokens_not_recomputed"
    inputs = [_input(record, _HIT_RATE), _input(record, _CONTEXT)]
    exact = _derivation(record, TOKENS_NOT_RECOMPUTED, field, inputs)
    if isinstance(exact, Derivation):
        return exact
    hit_rate, context = exact
    working = f"{format_exact(hit_rate)} x {format_exact(context)}"
    stated = _stated(record, field)
    return Derivation(TOKENS_NOT_RECOMPUTED, field, stated, hit_rate * context, working)


def _bytes_not_recomputed(record: RecordContext) -> Derivation:
    field = "bytes_not_recomputed"
    inputs = [_input(record, _HIT_RATE), _input(record, _CONTEXT)]
    try:
        per_token = basis_report(record.model, record.data["kv_bytes_basis"]).bytes_per_token
    except ValueError as error:  # the basis does not apply (KV304)
        inputs.append(str(error))
    else:
        if per_token is None:
            inputs.append(f"{record.model_display} does not give bytes per token")
        else:
            inputs.append(Fraction(per_token))
    exact = _derivation(record, BYTES_NOT_RECOMPUTED, field, inputs)
    if isinstance(exact, Derivation):
        return exact
    hit_rate, context, bytes_per_token = exact
    working = (
        f"{format_exact(hit_rate)} x {format_exact(context)} x {format_exact(bytes_per_token)} B"
    )
    value = hit_rate * context * bytes_per_token
    return Derivation(BYTES_NOT_RECOMPUTED, field, _stated(record, field), value, working)


def _speedup(record: RecordContext) -> Derivation:
    inputs = [_input(record, _COLD_TTFT), _input(record, _WARM_TTFT)]
    exact = _derivation(record, SPEEDUP, "speedup", inputs)
    if isinstance(exact, Derivation):
        return exact
    cold, warm = exact
    working = f"{format_exact(cold)} / {format_exact(warm)}"
    return Derivation(SPEEDUP, "speedup", _stated(record, "speedup"), cold / warm, working)


def _prefill_rate(record: RecordContext) -> Derivation:
    field = "prefill_tokens_per_s_from_ttft"
    cold_stated = record.data.get("results", {}).get("cold_ttft_ms") is not None
    ttft, source = (
        (_COLD_TTFT, "cold TTFT") if cold_stated else (_MEASURED_TTFT, dotted(_MEASURED_TTFT))
    )
    inputs = [_input(record, _CONTEXT), _input(record, ttft)]
    exact = _derivation(record, PREFILL_RATE, field, inputs)
    if isinstance(exact, Derivation):
        return exact._replace(source=source)
    context, ttft_ms = exact
    working = f"{format_exact(context)} tokens / {format_exact(ttft_ms / 1000)} s"
    value = context * 1000 / ttft_ms
    return Derivation(PREFILL_RATE, field, _stated(record, field), value, working, source=source)


def check_results(record: RecordContext) -> Iterator[Problem]:
    """KV401-KV404 (and KV405 for a figure that cannot be derived): each stated figure agrees
    with its derivation at the precision written."""
    for derivation in derivations(record):
        if derivation.stated is None:
            continue
        if derivation.value is None:
            reasons = "; ".join(derivation.missing)
            message = f"{derivation.field} is stated but cannot be derived: {reasons}"
            yield record.problem(RANGE_ORDER, derivation.path, message)
        elif derivation.rule is BYTES_NOT_RECOMPUTED:
            path, value, working = derivation.path, derivation.value, derivation.working
            yield from compare_bytes(record, BYTES_NOT_RECOMPUTED, path, value, working)
        else:
            yield from _compare_number(record, derivation, derivation.value)


def _compare_number(
    record: RecordContext, derivation: Derivation, value: Fraction
) -> Iterator[Problem]:
    written: Written | None
    if derivation.rule is SPEEDUP:
        written = parse_ratio(derivation.stated)
        suffix = "x"
    else:
        written, suffix = record.written(derivation.path), ""
    assert written is not None  # the schema admits only numbers of this form here
    if agrees(written, value):
        return
    shown = format_exact(value, max(written.decimals, 4))
    stated = f"{format_written(written)}{suffix}"
    message = f"{derivation.field} is {stated}; {derivation.working} = {shown}"
    message += precision_note(written, value)
    yield record.problem(derivation.rule, derivation.path, message)


def check_ranges(record: RecordContext) -> Iterator[Problem]:
    """KV405: no range runs backwards."""
    for path, low in record.document.leaves.items():
        if path[-1] != "min":
            continue
        parent = value_at(record.data, path[:-1])
        high = parent.get("max")
        is_range = set(parent) == {"min", "max"} and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)
        )
        if is_range and low > high:
            message = f"range min {format_number(low)} is above max {format_number(high)}"
            yield record.problem(RANGE_ORDER, path[:-1], message)


def check_fractions(record: RecordContext) -> Iterator[Problem]:
    """KV406: figures named as hit rates or shares lie between 0 and 1."""
    for path, value in record.document.leaves.items():
        names = [part for part in path if isinstance(part, str) and part not in _BOUNDS]
        if path[:1] != ("results",) or not names or not names[-1].endswith(_FRACTION_NAMES):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or 0 <= value <= 1:
            continue
        written = record.written(path)
        fraction = format_exact(record.exact(path) / 100)
        message = f"{names[-1]} is {format_written(written)}, not a fraction from 0 to 1"
        if 1 < value <= 100:
            message += f": if it is a percentage, write {fraction}"
        yield record.problem(FRACTION, path, message)
