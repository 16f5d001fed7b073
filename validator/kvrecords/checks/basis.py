"""KV301-KV305: each KV basis a record states, recomputed from its model's geometry.

The arithmetic comes from ``kv.arithmetic``; these functions only compare what a record states
with what the geometry gives and say so with the recomputation in the message.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from kvrecords.checks.context import RecordContext, value_at
from kvrecords.dataset.document import JsonPath, dotted
from kvrecords.dataset.records import Basis, bases, basis_report
from kvrecords.kv.arithmetic import KvReport
from kvrecords.kv.units import (
    BYTE_UNITS,
    ByteQuantity,
    agrees,
    format_exact,
    format_in_unit,
    format_number,
    format_written,
    gib,
    parse_byte_quantity,
    precision_note,
    shown_decimals,
)
from kvrecords.problems import Problem, Rule

BYTES_PER_TOKEN = Rule(
    "KV301",
    "bytes-per-token",
    "kv_bytes_basis.bytes_per_token (and each alternative's) equals the model geometry's, exactly.",
    "Bytes per token is an integer product of the geometry; any difference is a wrong "
    "dimension (often head_dim derived from hidden_size, or a missed window).",
    "bytes_per_token: 65536",
    "bytes_per_token: 131072\n# KV301 bytes_per_token is 131,072; models/qwen3-8-27b gives 65,536 = 16 layers x 4 kv heads x (256 + 256) x 2 B",
)

KV_AT_CONTEXT = Rule(
    "KV302",
    "kv-at-context",
    "kv_at_context equals bytes at context_tokens (windows capped at W tokens) at the precision written, within 1 % and to two significant figures.",
    "`9.16 GiB` claims [9.155, 9.165) GiB; a GB/GiB mix-up is a 7% error that this catches. "
    "Coarse writing cannot hide an error: `10 GB` for 9.83 GB (1.7 % off), `2 GiB` for 2.14 GiB "
    "(one significant figure) and `0 TiB` for any non-zero figure are refused.",
    "context_tokens: 150000\nkv_at_context: 9.16 GiB",
    "context_tokens: 150000\nkv_at_context: 9.16 GB\n# KV302 kv_at_context is 9.16 GB; models/qwen3-8-27b gives 9,830,400,000 B = 9.83 GB",
)

BASIS_COMPUTABLE = Rule(
    "KV303",
    "basis-computable",
    "A stated KV figure can be computed from the geometry, and one that can be computed is stated.",
    "A figure that rests on a dimension the model file marks unknown is a guess; a null "
    "where the geometry gives the value hides arithmetic the reader needs.",
    "bytes_per_token: 65536   (the attention geometry is known)",
    "fixed_state: 1 GiB   (the Gated DeltaNet dimensions are unknown)\n# KV303 fixed_state cannot be computed: models/qwen3-8-27b does not publish ...",
)

BASIS_APPLIES = Rule(
    "KV304",
    "basis-applies",
    "The basis applies to the model: the dtype is known and the model has the layers the basis counts.",
    "all_layers_as_full_attention needs one attention geometry to extend; an MLA-only model "
    "has none, and a model whose attention layers differ in shape (Gemma 4) has no one.",
    "layers_counted: cache",
    "layers_counted: all_layers_as_full_attention   (model: deepseek-v3)\n# KV304 model deepseek-v3 has no attention layers to extend",
)

FIXED_STATE = Rule(
    "KV305",
    "fixed-state",
    "kv_bytes_basis.fixed_state equals the model's per-sequence state at state_dtype, at the precision written, within 1 % and to two significant figures.",
    "Hybrid models trade per-token KV for a fixed state; its size decides how many sequences fit.",
    "fixed_state: 37.69 MiB   (qwen3-next-80b-a3b, bf16 state)",
    "fixed_state: 75.38 MiB   (bf16 state)\n# KV305 fixed_state is 75.38 MiB; models/qwen3-next-80b-a3b gives 39,518,208 B = 37.69 MiB",
)

CONTEXT_LIMIT = Rule(
    "KV306",
    "context-limit",
    "No context a record states on its own model (the basis's, a run's) is above the model's "
    "max_context_tokens.",
    "A context the model cannot hold is a typo (an extra zero) or a different model; its KV "
    "arithmetic would describe a cache no engine builds. An engine accounting's context is the "
    "engine's whole cache, which holds several sequences (llama.cpp's -c with --parallel, a "
    "vLLM pool) and may exceed one sequence's maximum; the engine-figure check holds it to the "
    "printed size.",
    "context_tokens: 131072   (gpt-oss-20b, max_context_tokens: 131072)",
    "context_tokens: 1310720\n# KV306 context_tokens is 1,310,720; models/gpt-oss-20b holds at most "
    "131,072 tokens (max_context_tokens)",
)

# The other family's unit of the same prefix: a GB/GiB mix-up is the commonest slip.
_SWAPPED_UNIT = {"KB": "KiB", "kB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB"}
_SWAPPED_UNIT.update(
    {binary: decimal for decimal, binary in list(_SWAPPED_UNIT.items()) if decimal != "kB"}
)


def check_context_limit(record: RecordContext) -> Iterator[Problem]:
    """KV306: every context the record states on its own model fits the model's maximum."""
    limit = record.model.max_context_tokens
    if limit is None:
        return
    for path, value in record.document.leaves.items():
        if "context_tokens" not in path or "engine_accounting" in path:
            continue
        if _on_another_model(record, path):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= limit:
            continue
        field = dotted(path[: path.index("context_tokens") + 1])
        message = (
            f"{field} is {value:,}; {record.model_display} holds at most {limit:,} tokens "
            "(max_context_tokens)"
        )
        yield record.problem(CONTEXT_LIMIT, path, message)


def _on_another_model(record: RecordContext, path: JsonPath) -> bool:
    """A run that names a model of its own, or a figure inside one (its limits are that model's)."""
    if path[:1] != ("runs",) or len(path) < 2:
        return False
    run = record.data["runs"][path[1]]
    return isinstance(run, dict) and run.get("model", record.data["model"]) != record.data["model"]


def check_basis(record: RecordContext) -> Iterator[Problem]:
    """KV301-KV305: the main basis and every alternative, recomputed from the geometry."""
    for basis in bases(record.data):
        try:
            report = basis_report(record.model, basis.stated)
        except ValueError as error:
            yield record.problem(BASIS_APPLIES, (*basis.path, "layers_counted"), str(error))
            continue
        yield from _check_bytes_per_token(record, basis, report)
        yield from _check_kv_at_context(record, basis, report)
        if _is_main(basis) and basis.stated.get("fixed_state") is not None:
            yield from _check_fixed_state(record, basis, report)


def _is_main(basis: Basis) -> bool:
    return len(basis.path) == 1  # alternatives stand at kv_bytes_basis.alternatives[i]


def _not_published(record: RecordContext, field: str) -> str:
    unknown = ", ".join(record.model.unknown) or "a dimension"
    return f"{field} cannot be computed: {record.model_display} does not publish {unknown}"


def _check_bytes_per_token(
    record: RecordContext, basis: Basis, report: KvReport
) -> Iterator[Problem]:
    """KV301 and KV303 for bytes_per_token: stated exactly when the geometry gives it."""
    computed = report.bytes_per_token
    stated = basis.stated.get("bytes_per_token")
    where = (*basis.path, "bytes_per_token")
    if stated is not None and computed is None:
        yield record.problem(BASIS_COMPUTABLE, where, _not_published(record, "bytes_per_token"))
    elif stated is None and computed is not None:
        written = "null" if "bytes_per_token" in basis.stated else "not given"
        message = (
            f"bytes_per_token is {written} but {record.model_display} gives {report.formula()}; "
            "state it"
        )
        yield record.problem(BASIS_COMPUTABLE, where, message)
    elif stated is not None and computed is not None and stated != computed:
        message = f"bytes_per_token is {stated:,}; {record.model_display} gives {report.formula()}"
        yield record.problem(BYTES_PER_TOKEN, where, message)


def _check_kv_at_context(
    record: RecordContext, basis: Basis, report: KvReport
) -> Iterator[Problem]:
    """KV302 and KV303 for kv_at_context: stated at the precision written, when computable."""
    context = basis.stated.get("context_tokens")
    computed = report.kv_bytes_at_context
    where = (*basis.path, "kv_at_context")
    if basis.stated.get("kv_at_context") is not None:
        if context is None:
            message = "kv_at_context needs kv_bytes_basis.context_tokens"
            yield record.problem(BASIS_COMPUTABLE, where, message)
        elif computed is None:
            yield record.problem(BASIS_COMPUTABLE, where, _not_published(record, "kv_at_context"))
        else:
            working = at_context_working(report) or "0 B"
            yield from compare_bytes(record, KV_AT_CONTEXT, where, computed, working)
    elif _is_main(basis) and context is not None and computed is not None:
        message = (
            f"kv_at_context is null but {record.model_display} gives {format_exact(computed)} B "
            f"({gib(computed)}) at {context:,} tokens; state it"
        )
        yield record.problem(BASIS_COMPUTABLE, where, message)


def _check_fixed_state(record: RecordContext, basis: Basis, report: KvReport) -> Iterator[Problem]:
    """KV305 and KV303 for the main basis's fixed_state."""
    where = (*basis.path, "fixed_state")
    state = report.fixed_state_bytes
    if state is None:
        yield record.problem(BASIS_COMPUTABLE, where, _not_published(record, "fixed_state"))
    else:
        working = fixed_state_working(report) or "no state layers"
        yield from compare_bytes(record, FIXED_STATE, where, state, working)


def at_context_working(report: KvReport) -> str:
    """How the KV at context adds up: each group's bytes per token times the tokens it holds."""
    terms = []
    for cost in report.groups:
        if cost.bytes_per_token:
            capped = " (window)" if cost.tokens_held < report.context_tokens else ""
            terms.append(
                f"{format_exact(cost.bytes_per_token)} B/token x {cost.tokens_held:,} tokens{capped}"
            )
    return " + ".join(terms)


def fixed_state_working(report: KvReport) -> str:
    """How the fixed state adds up: each state group's formula ("" when there is none)."""
    return " + ".join(cost.state_formula for cost in report.groups if cost.state_formula)


def compare_bytes(
    record: RecordContext, rule: Rule, path: JsonPath, computed: Fraction, working: str
) -> Iterator[Problem]:
    """A stated byte figure (integer bytes or ``9.16 GiB``) against an exact recomputation."""
    stated: Any = value_at(record.data, path)
    field = path[-1]
    gives = f"{record.model_display} gives {format_exact(computed)} B"
    if isinstance(stated, (int, float)):  # JSON Schema's integer admits 65536.0 too
        if stated != computed:
            message = f"{field} is {format_number(stated)} B; {gives} = {working}"
            yield record.problem(rule, path, message)
        return
    quantity = parse_byte_quantity(stated)
    assert quantity is not None  # the schema's pattern admits only byte quantities
    if quantity.agrees_with_bytes(computed):
        return
    in_unit = computed / quantity.unit_bytes
    decimals = shown_decimals(quantity.number, in_unit)
    shown = format_in_unit(computed, quantity.unit, decimals)
    message = f"{field} is {format_written(quantity.number)} {quantity.unit}; {gives} = {shown}"
    message += f" ({working})" + precision_note(quantity.number, in_unit)
    message += _unit_hint(quantity, computed)
    yield record.problem(rule, path, message)


def _unit_hint(quantity: ByteQuantity, computed: Fraction) -> str:
    swapped = _SWAPPED_UNIT.get(quantity.unit)
    if swapped and agrees(quantity.number, computed / BYTE_UNITS[swapped]):
        return (
            f"; it would be right in {swapped}: {quantity.unit} is {BYTE_UNITS[quantity.unit]:,} B,"
            f" {swapped} is {BYTE_UNITS[swapped]:,} B"
        )
    return ""
