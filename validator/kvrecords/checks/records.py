"""Checks of one schema-valid record against its model: each a generator of problems.

The arithmetic comes from ``arithmetic``; these functions only compare what a record states
with what the geometry gives and say so with the recomputation in the message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.dataset.document import Document, JsonPath, dotted
from kvrecords.dataset.records import bases, basis_report
from kvrecords.kv.arithmetic import KvReport
from kvrecords.kv.geometry import Model
from kvrecords.kv.prose import claim_value_in_unit, find_claims
from kvrecords.kv.units import (
    BYTE_UNITS,
    ByteQuantity,
    Written,
    agrees,
    format_exact,
    format_fraction,
    format_in_unit,
    parse_byte_quantity,
    parse_ratio,
)
from kvrecords.problems import Problem

# The other family's unit of the same prefix: a GB/GiB mix-up is the commonest slip.
_SWAPPED_UNIT = {"KB": "KiB", "kB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB"}
_SWAPPED_UNIT.update(
    {binary: decimal for decimal, binary in list(_SWAPPED_UNIT.items()) if decimal != "kB"}
)


class RecordContext(NamedTuple):
    """A schema-valid record and the model it links (already checked)."""

    document: Document
    model: Model
    model_display: str

    @property
    def data(self) -> dict[str, Any]:
        return self.document.data  # type: ignore[no-any-return]

    def problem(self, code: str, path: JsonPath, message: str) -> Problem:
        return self.document.problem(code, path, message)

    def exact(self, path: JsonPath) -> Fraction:
        """The value at ``path`` exactly as written (0.935 stays 935/1000, not a binary float)."""
        written = self.document.written.get(path)
        value = _get(self.data, path)
        if written is not None and not isinstance(value, bool):
            try:
                return Fraction(Decimal(written))
            except ArithmeticError:
                pass
        return Fraction(value)

    def written(self, path: JsonPath) -> Written:
        return Written(self.document.written.get(path, str(_get(self.data, path))))


def _get(data: Any, path: JsonPath) -> Any:
    for part in path:
        data = data[part]
    return data


# ---- KV basis -------------------------------------------------------------------------------


def check_basis(ctx: RecordContext) -> Iterator[Problem]:
    """KV301-KV305: the main basis and every alternative, recomputed from the geometry."""
    for basis in bases(ctx.data):
        yield from _check_one_basis(ctx, basis.path, basis.stated, is_main=len(basis.path) == 1)


def _check_one_basis(
    ctx: RecordContext, path: JsonPath, stated: dict[str, Any], *, is_main: bool
) -> Iterator[Problem]:
    source = ctx.model_display
    try:
        report = basis_report(ctx.model, stated)
    except ValueError as error:
        yield ctx.problem("KV304", (*path, "layers_counted"), str(error))
        return
    unknown = ", ".join(ctx.model.unknown) or "a dimension"

    per_token = report.bytes_per_token
    stated_per_token = stated.get("bytes_per_token")
    where = (*path, "bytes_per_token")
    if stated_per_token is not None and per_token is None:
        yield ctx.problem(
            "KV303",
            where,
            f"bytes_per_token cannot be computed: {source} does not publish {unknown}",
        )
    elif stated_per_token is None and per_token is not None:
        yield ctx.problem(
            "KV303",
            where,
            f"bytes_per_token is null but {source} gives {report.formula()}; state it",
        )
    elif stated_per_token is not None and per_token is not None and stated_per_token != per_token:
        yield ctx.problem(
            "KV301",
            where,
            f"bytes_per_token is {stated_per_token}; {source} gives {report.formula()}",
        )

    context = stated.get("context_tokens")
    at_context = report.kv_bytes_at_context
    where = (*path, "kv_at_context")
    stated_at_context = stated.get("kv_at_context")
    if stated_at_context is not None:
        if context is None:
            yield ctx.problem("KV303", where, "kv_at_context needs kv_bytes_basis.context_tokens")
        elif at_context is None:
            yield ctx.problem(
                "KV303",
                where,
                f"kv_at_context cannot be computed: {source} does not publish {unknown}",
            )
        else:
            yield from _compare_bytes(ctx, "KV302", where, at_context, _at_context_working(report))
    elif is_main and context is not None and at_context is not None:
        yield ctx.problem(
            "KV303",
            where,
            f"kv_at_context is null but {source} gives {format_exact(at_context)} B "
            f"({format_in_unit(at_context, 'GiB', 2)}) at {context:,} tokens; state it",
        )

    if is_main and stated.get("fixed_state") is not None:
        where = (*path, "fixed_state")
        state = report.fixed_state_bytes
        if state is None:
            yield ctx.problem(
                "KV303",
                where,
                f"fixed_state cannot be computed: {source} does not publish {unknown}",
            )
        else:
            working = " + ".join(c.state_formula for c in report.groups if c.state_formula)
            yield from _compare_bytes(ctx, "KV305", where, state, working or "no state layers")


def _at_context_working(report: KvReport) -> str:
    terms = []
    for cost in report.groups:
        if cost.bytes_per_token:
            capped = " (window)" if cost.tokens_held < report.context_tokens else ""
            terms.append(
                f"{format_exact(cost.bytes_per_token)} B/token x {cost.tokens_held:,} tokens{capped}"
            )
    return " + ".join(terms) or "0 B"


def _compare_bytes(
    ctx: RecordContext, code: str, path: JsonPath, exact: Fraction, working: str
) -> Iterator[Problem]:
    """A stated byte figure (integer bytes or ``9.16 GiB``) against an exact recomputation."""
    stated = _get(ctx.data, path)
    field = path[-1]
    if isinstance(stated, int):
        if stated != exact:
            yield ctx.problem(
                code,
                path,
                f"{field} is {stated:,} B; {ctx.model_display} gives {format_exact(exact)} B = {working}",
            )
        return
    quantity = parse_byte_quantity(stated)
    assert quantity is not None  # the schema's pattern admits only byte quantities
    if quantity.agrees_with_bytes(exact):
        return
    shown = format_in_unit(exact, quantity.unit, quantity.number.decimals)
    message = f"{field} is {quantity}; {ctx.model_display} gives {format_exact(exact)} B = {shown} ({working})"
    yield ctx.problem(code, path, message + _unit_hint(quantity, exact))


def _unit_hint(quantity: ByteQuantity, exact: Fraction) -> str:
    swapped = _SWAPPED_UNIT.get(quantity.unit)
    if swapped and agrees(quantity.number, exact / BYTE_UNITS[swapped]):
        return (
            f"; it would be right in {swapped}: {quantity.unit} is {BYTE_UNITS[quantity.unit]:,} B,"
            f" {swapped} is {BYTE_UNITS[swapped]:,} B"
        )
    return ""


# ---- measurement-derived figures ----------------------------------------------------------


def _plain_input(ctx: RecordContext, path: JsonPath) -> Fraction | str:
    """An input to a derivation: its exact value, or why it cannot serve as one."""
    try:
        value = _get(ctx.data, path)
    except (KeyError, IndexError):
        return f"{dotted(path)} is not stated"
    if value is None:
        return f"{dotted(path)} is null"
    if isinstance(value, dict):
        if "about" in value:
            return ctx.exact((*path, "about"))
        return f"{dotted(path)} is a range"
    return ctx.exact(path)


def _derived(
    ctx: RecordContext,
    code: str,
    field: str,
    inputs: list[JsonPath],
    compute: Callable[[list[Fraction]], Fraction],
    describe: Callable[[list[Fraction]], str],
    parse: Callable[[Any], Written | None],
) -> Iterator[Problem]:
    results = ctx.data.get("results", {})
    if results.get(field) is None:
        return
    path: JsonPath = ("results", field)
    values = [_plain_input(ctx, p) for p in inputs]
    missing = [v for v in values if isinstance(v, str)]
    if missing:
        yield ctx.problem(
            "KV405", path, f"{field} is stated but cannot be derived: {'; '.join(missing)}"
        )
        return
    exact_inputs = [v for v in values if isinstance(v, Fraction)]
    exact = compute(exact_inputs)
    written = parse(results[field])
    assert written is not None  # the schema admits only numbers of this form here
    if not agrees(written, exact):
        shown = format_fraction(exact, max(written.decimals, 4)).rstrip("0").rstrip(".")
        yield ctx.problem(
            code, path, f"{field} is {results[field]}; {describe(exact_inputs)} = {shown}"
        )


def _written_number(ctx: RecordContext, field: str) -> Callable[[Any], Written | None]:
    return lambda value: ctx.written(("results", field))


_CONTEXT: JsonPath = ("kv_bytes_basis", "context_tokens")


def check_results(ctx: RecordContext) -> Iterator[Problem]:
    """KV401-KV404: figures derived from the measurements agree with them."""
    yield from _derived(
        ctx,
        "KV401",
        "tokens_not_recomputed",
        [("results", "hit_rate"), _CONTEXT],
        lambda v: v[0] * v[1],
        lambda v: f"{_n(v[0])} x {_n(v[1])}",
        _written_number(ctx, "tokens_not_recomputed"),
    )
    yield from _derived(
        ctx,
        "KV402",
        "speedup",
        [("results", "cold_ttft_ms"), ("results", "warm_ttft_ms")],
        lambda v: v[0] / v[1],
        lambda v: f"{_n(v[0])} / {_n(v[1])}",
        parse_ratio,
    )
    yield from _check_bytes_not_recomputed(ctx)
    ttft: JsonPath = ("results", "cold_ttft_ms")
    if ctx.data.get("results", {}).get("cold_ttft_ms") is None:
        ttft = ("measured_ttft_ms_at_ctx",)
    yield from _derived(
        ctx,
        "KV404",
        "prefill_tokens_per_s_from_ttft",
        [_CONTEXT, ttft],
        lambda v: v[0] * 1000 / v[1],
        lambda v: f"{_n(v[0])} tokens / {_n(v[1] / 1000)} s",
        _written_number(ctx, "prefill_tokens_per_s_from_ttft"),
    )


def _check_bytes_not_recomputed(ctx: RecordContext) -> Iterator[Problem]:
    results = ctx.data.get("results", {})
    stated = results.get("bytes_not_recomputed")
    if stated is None:
        return
    path: JsonPath = ("results", "bytes_not_recomputed")
    per_token = basis_report(ctx.model, ctx.data["kv_bytes_basis"]).bytes_per_token
    inputs = [_plain_input(ctx, ("results", "hit_rate")), _plain_input(ctx, _CONTEXT)]
    reasons = [v for v in inputs if isinstance(v, str)]
    if per_token is None:
        reasons.append(f"{ctx.model_display} does not give bytes per token")
    if reasons:
        yield ctx.problem(
            "KV405",
            path,
            f"bytes_not_recomputed is stated but cannot be derived: {'; '.join(reasons)}",
        )
        return
    hit_rate, context = (v for v in inputs if isinstance(v, Fraction))
    assert per_token is not None
    working = f"{_n(hit_rate)} x {_n(context)} x {format_exact(per_token)} B"
    yield from _compare_bytes(ctx, "KV403", path, hit_rate * context * per_token, working)


def _n(value: Fraction) -> str:
    return format_exact(value)


def check_ranges(ctx: RecordContext) -> Iterator[Problem]:
    """KV405: no range runs backwards."""
    for path, low in ctx.document.leaves.items():
        if path[-1] != "min":
            continue
        parent = _get(ctx.data, path[:-1])
        high = parent.get("max")
        is_range = set(parent) == {"min", "max"} and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)
        )
        if is_range and low > high:
            yield ctx.problem("KV405", path[:-1], f"range min {low} is above max {high}")


# ---- prose ------------------------------------------------------------------------------------


def check_prose(ctx: RecordContext) -> Iterator[Problem]:
    """KV501-KV502: arithmetic claims in every prose field."""
    stated_bases: set[int] = {
        basis.stated["bytes_per_token"]
        for basis in bases(ctx.data)
        if basis.stated.get("bytes_per_token") is not None
    }
    for path, text in ctx.document.leaves.items():
        if not isinstance(text, str):
            continue
        for claim in find_claims(text):
            value = claim_value_in_unit(claim)
            unit = f" {claim.unit}" if claim.unit else ""
            if not agrees(claim.result, value):
                shown = format_fraction(value, max(claim.result.decimals, 0))
                yield Problem(
                    ctx.document.path,
                    *_claim_position(ctx, path, claim.text),
                    "KV501",
                    f"prose claims {claim.expression()} = {claim.result.text}{unit}; it is {shown}{unit}"
                    + (f" ({format_exact(claim.value)} B)" if claim.unit in BYTE_UNITS else ""),
                )
            elif claim.unit == "B/token" and claim.value not in stated_bases:
                listed = ", ".join(f"{b:,}" for b in sorted(stated_bases)) or "none"
                yield Problem(
                    ctx.document.path,
                    *_claim_position(ctx, path, claim.text),
                    "KV502",
                    f"prose gives {claim.result.text} B/token; the record's stated bytes_per_token: {listed}",
                )


def _claim_position(ctx: RecordContext, path: JsonPath, claim_text: str) -> tuple[int, int]:
    """The claim's own line and column in the file, even inside a folded block scalar."""
    import re

    line, column = ctx.document.locate(path)
    words = [re.escape(word) for word in claim_text.split()]
    found = ctx.document.find(re.compile(r"\s+".join(words)), line)
    return found or (line, column)


RECORD_CHECKS = (check_basis, check_results, check_ranges, check_prose)
