"""KV807 for vLLM's 'Maximum concurrency for N tokens per request: Mx', against the pool the
same run printed, by the rule of the release that printed it.

What vLLM computes (read from the released wheels, 0.8.0 to 0.34.0; ``kv.engines.vllm`` holds
each rule and the release it starts in):

- 0.8.0-0.9.0 (``_get_kv_cache_config_uniform_type``): the pool in tokens (num_blocks x
  block_size) / max_model_len, whatever the layers are (windows count as full attention);
- later (``get_max_concurrency_for_kv_cache_config``): num_blocks / the blocks one request of
  max_model_len tokens takes from the shared pool, summed over the KV cache groups: a
  full-attention group cdiv(N, block size), a sliding-window group cdiv(min(window - 1 +
  in-flight tokens, N), block size) + 1, a mamba or linear-attention group its state pages
  (1; 2 in prefix caching's 'align' mode, 3 with a prefill checkpoint). For a model whose every
  layer keeps full attention or MLA this is the pool's tokens / N; window and state groups make
  it larger;
- the token line beside it: num_blocks x block size up to 0.9.0, num_blocks // groups x the
  smallest block size up to 0.20.x, int(concurrency x max_model_len) from 0.21.0.

So a model whose every layer keeps full-attention or MLA KV is checked as tokens / N (or, with
only the KV budget logged, at most every device's budget over the fewest bytes a token can
take, / N). A window or state model under vLLM is checked through the engine model: the block
counts the printed pool allows, over the blocks a request takes (or, with only the KV budget
logged, at most what any reading's pool of that budget gives). What the run does not state (the
release, the block size, the KV and state dtypes, max_num_batched_tokens, prefix caching,
whether the hybrid allocator ran, pipeline stages up to one per device) is read every way it
can be (the favourable reading): a figure that no reading gives is an error. Speculative
decoding adds a state page per drafted token from 0.15.0: a record that mentions none is read
as drafting none; one that mentions it without the count leaves the low side open. What cannot
be checked is listed by ``kvrecords explain`` under "Not checked": a line without its 'for N
tokens per request', a run that printed no pool, another engine, a reading the engine model
does not cover.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

from kvrecords.checks.context import RecordContext
from kvrecords.checks.run_figures import (
    RUN_FIGURES,
    Figure,
    figure_problem,
    figures,
    run_setting,
    written_step,
)
from kvrecords.dataset.records import Run
from kvrecords.kv.arithmetic import kv_report, parse_element_type
from kvrecords.kv.geometry import Attention, MultiHeadLatent
from kvrecords.kv.units import exact, format_exact, parse_byte_quantity
from kvrecords.kv.weights import engine_floor
from kvrecords.problems import Problem

if TYPE_CHECKING:
    from kvrecords.kv.engines.vllm import ConcurrencySpan, VllmOptions

_LINE = re.compile(r"for ([0-9][0-9,]*) tokens per request")
# how records quote the setting among an engine's flags: --max-num-batched-tokens 8192, or
# vLLM's own printout max_num_batched_tokens=8192
_BATCH_FLAG = re.compile(
    r"(?:--max-num-batched-tokens[ =]|max_num_batched_tokens\s*[=:]\s*)([0-9][0-9,]{0,12})"
)
# --block-size choices (config/cache.py BlockSize: 256 from 0.11.1); None: the release's default
BLOCK_SIZES = (None, 1, 8, 16, 32, 64, 128, 256)
LARGEST_BLOCK = max(size for size in BLOCK_SIZES if size)
STATE_KINDS = ("linear_attention", "mamba1", "mamba2")
# a record's KV dtype as vLLM's --kv-cache-dtype
_VLLM_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "fp8"}


class Verdict(NamedTuple):
    """One max_concurrency figure: its problem, or why it is not checked ("" when it is)."""

    figure: Figure
    problem: Problem | None = None
    not_checked: str = ""


def check_max_concurrency(record: RecordContext) -> Iterator[Problem]:
    """KV807 for every max_concurrency figure."""
    for run in record.runs:
        for verdict in verdicts(record, run):
            if verdict.problem is not None:
                yield verdict.problem


def unchecked_concurrency(record: RecordContext) -> list[str]:
    """Each max_concurrency figure no check reaches, and why (for explain's "Not checked")."""
    return [
        f"{RUN_FIGURES.code} {run.id}: max_concurrency {verdict.figure.interval.shown}:"
        f" {verdict.not_checked}"
        for run in record.runs
        for verdict in verdicts(record, run)
        if verdict.not_checked
    ]


def verdicts(record: RecordContext, run: Run) -> list[Verdict]:
    """Every max_concurrency figure of the run, checked or with why not."""
    found = figures(record, run, "max_concurrency")
    if not found:
        return []
    uniform = _uniform_cache(record, run)
    pool = _pool_tokens(record, run) if uniform else None
    bound = _budget_tokens(record, run) if uniform and pool is None else None
    result = []
    for figure in found:
        line = _LINE.search(str(figure.item.stated.get("stated_as", "")))
        written = printed(figure)
        per_request = int(line.group(1).replace(",", "")[:30]) if line else 0
        if line is None or written is None or not per_request:
            why = (
                "not one printed figure"
                if written is None
                else "its stated_as quotes no 'for N tokens per request' (N above 0)"
            )
            result.append(Verdict(figure, not_checked=why))
        elif not uniform:
            result.append(_by_release(record, run, figure, written, per_request))
        elif pool is not None:
            result.append(_against_pool(record, run, figure, written, per_request, *pool))
        elif bound is not None:
            result.append(_against_budget(record, run, figure, per_request, *bound))
        else:
            why = "the run prints no pool (kv_tokens_reported, or kv_blocks_reported with its"
            why += " kv_block_size_tokens, scope pool) nor a KV budget to hold it to"
            result.append(Verdict(figure, not_checked=why))
    return result


def printed(figure: Figure) -> Fraction | None:
    """A single figure an engine printed as a plain number, exactly; None for any other."""
    value = figure.item.stated["value"]
    if figure.statistic != "single" or isinstance(value, (bool, dict, str)):
        return None
    return exact(value)


def _agrees(written: Fraction, step: Fraction, low: Fraction, high: Fraction) -> bool:
    """Printed to the written precision, rounded or cut off."""
    return low - step < written <= high + step / 2


# ---- every layer full attention or MLA: tokens / N ----------------------------------------------


def _uniform_cache(record: RecordContext, run: Run) -> bool:
    """Whether every layer of the run's model keeps full-attention or MLA KV."""
    if run.stated.get("model", record.data["model"]) != record.data["model"]:
        return False
    groups = record.model.groups
    return all(
        isinstance(group, (Attention, MultiHeadLatent)) and group.window is None for group in groups
    )


def _pool_tokens(record: RecordContext, run: Run) -> tuple[Fraction, str] | None:
    """The run's KV pool in tokens as the engine printed it, or None."""
    for figure in figures(record, run, "kv_tokens_reported"):
        if figure.item.stated.get("scope") == "pool" and (count := printed(figure)) is not None:
            return count, f"kv_tokens_reported {figure.interval.shown}"
    blocks = [f for f in figures(record, run, "kv_blocks_reported") if printed(f) is not None]
    sizes = [f for f in figures(record, run, "kv_block_size_tokens") if printed(f) is not None]
    if blocks and sizes and blocks[0].item.stated.get("scope") == "pool":
        count, size = printed(blocks[0]), printed(sizes[0])
        assert count is not None and size is not None
        shown = f"{blocks[0].interval.shown} blocks x {sizes[0].interval.shown} tokens"
        return count * size, shown
    return None


def _budget_bytes(record: RecordContext, run: Run) -> tuple[Fraction, str, int] | None:
    """The KV budget one device logged, at the top of its written precision, as written, and
    the run's device count; None without both."""
    budget = None
    for metric in run.stated.get("metrics", []):
        per_device = metric["name"] == "kv_budget_bytes" or (
            metric["name"] == "kv_bytes_reported" and metric.get("scope") == "per_device"
        )
        quantity = (
            parse_byte_quantity(metric["value"]) if isinstance(metric["value"], str) else None
        )
        if per_device and metric["statistic"] == "single" and quantity is not None:
            half = Fraction(1, 2 * 10**quantity.number.decimals)
            budget = ((Fraction(quantity.number.value) + half) * quantity.unit_bytes, str(quantity))
            break
    devices = run_setting(record, run, "hardware").get("count")
    if budget is None or not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        return None
    return budget[0], budget[1], devices


def _budget_tokens(record: RecordContext, run: Run) -> tuple[Fraction, str] | None:
    """The most tokens the run's logged KV budget can hold, when it printed no pool: every
    device's budget (vLLM prints one device's) over the fewest bytes a token can take (the
    stated KV dtype, else the smallest the engine offers), the budget at the top of its
    written precision. Block rounding only lowers the pool, so this bounds it from above."""
    budget = _budget_bytes(record, run)
    if budget is None:
        return None
    per_device, written, devices = budget
    dtype = _stated_kv_dtype(record, run)
    if dtype is None:
        dtype = engine_floor((run_setting(record, run, "engine") or {}).get("name")).kv_dtype
    try:
        per_token = kv_report(record.model, parse_element_type(str(dtype)), 1).bytes_per_token
    except ValueError:
        return None  # a dtype of several parts or unknown: no single figure per token
    if not per_token:
        return None
    most = per_device * devices / per_token
    shown = f"{written} x {devices} device(s) / {format_exact(per_token)} B a token ({dtype})"
    return most, shown


def _stated_kv_dtype(record: RecordContext, run: Run) -> str | None:
    """The run's KV dtype where the record states it, else None."""
    if "kv_dtype" in run.stated:
        return str(run.stated["kv_dtype"]) if run.stated.get("kv_dtype_stated") else None
    basis = record.data["kv_bytes_basis"]
    return str(basis["dtype"]) if basis["dtype_stated"] else None


def _against_pool(
    record: RecordContext,
    run: Run,
    figure: Figure,
    written: Fraction,
    per_request: int,
    tokens: Fraction,
    pool_text: str,
) -> Verdict:
    """0.10.0 to 0.20.x divide the pool's blocks by whole blocks per request, cdiv(N, block
    size): with N no multiple of the block size that is below tokens / N, at least tokens /
    N rounded up to the largest block size (LARGEST_BLOCK)."""
    quotient = tokens / per_request
    whole_blocks = tokens / (-(-per_request // LARGEST_BLOCK) * LARGEST_BLOCK)
    if _agrees(written, written_step(figure.interval.shown), whole_blocks, quotient):
        return Verdict(figure)
    rounded = ""
    if whole_blocks != quotient:
        rounded = (
            f" (down to {format_exact(whole_blocks, 4)} in whole {LARGEST_BLOCK}-token blocks)"
        )
    message = (
        f"max_concurrency is {figure.interval.shown}; {pool_text} / {per_request:,} tokens "
        f"per request = {format_exact(quotient, 4)}{rounded} in run '{run.id}'"
    )
    return Verdict(figure, figure_problem(record, figure, message, "error"))


def _against_budget(
    record: RecordContext, run: Run, figure: Figure, per_request: int, most: Fraction, shown: str
) -> Verdict:
    if figure.interval.low is None or figure.interval.low <= most / per_request:
        return Verdict(figure)
    message = (
        f"max_concurrency is {figure.interval.shown}; {shown} / {per_request:,} tokens "
        f"per request = {format_exact(most / per_request, 2)} at most in run '{run.id}'"
    )
    return Verdict(figure, figure_problem(record, figure, message, "error"))


# ---- window and state layers: the engine model of the release -----------------------------------


def _printed_pool(record: RecordContext, run: Run) -> tuple[int | None, int | None]:
    """The pool the run printed: its tokens ('GPU KV cache size') and its blocks."""
    pool: dict[str, int | None] = {"kv_tokens_reported": None, "kv_blocks_reported": None}
    for name in pool:
        for figure in figures(record, run, name):
            count = printed(figure)
            if figure.item.stated.get("scope") == "pool" and count is not None:
                pool[name] = int(count) if count.denominator == 1 else None
                break
    return pool["kv_tokens_reported"], pool["kv_blocks_reported"]


def _by_release(
    record: RecordContext, run: Run, figure: Figure, written: Fraction, per_request: int
) -> Verdict:
    model_id = run.stated.get("model", record.data["model"])
    engine = run_setting(record, run, "engine") or {}
    if model_id != record.data["model"]:
        return Verdict(figure, not_checked=f"the run's model {model_id} is not the record's")
    if engine.get("name") != "vllm":
        why = f"a model with window or state layers under {engine.get('name')}: no engine model"
        return Verdict(figure, not_checked=why + " computes this line")
    tokens, blocks = _printed_pool(record, run)
    if tokens is not None or blocks is not None:
        return _pool_by_release(record, run, figure, written, per_request, engine, tokens, blocks)
    budget = _budget_bytes(record, run)
    if budget is not None:
        return _budget_by_release(record, run, figure, per_request, engine, budget)
    why = "the run prints no pool (kv_tokens_reported or kv_blocks_reported, scope pool) nor"
    return Verdict(figure, not_checked=why + " a KV budget to hold it to")


def _pool_by_release(
    record: RecordContext,
    run: Run,
    figure: Figure,
    written: Fraction,
    per_request: int,
    engine: dict[str, Any],
    tokens: int | None,
    blocks: int | None,
) -> Verdict:
    """The printed concurrency against every reading of the printed pool. The engine model
    sizes one rank of tensor parallelism; block counts do not depend on it, but a state
    model's block grows to its state page, whose ratio to the attention page changes where a
    kv head is replicated over ranks, so such a run must print its block size."""
    from kvrecords.kv.engines import EngineError, NotCovered
    from kvrecords.kv.engines.result import NotServed
    from kvrecords.kv.engines.vllm import printed_concurrency

    leaves = [group for group in record.model.leaf_groups() if group.layers]
    devices = run_setting(record, run, "hardware").get("count")
    fewest_heads = min(
        (g.kv_heads for g in leaves if isinstance(g, Attention) and g.kv_heads), default=None
    )
    states = any(group.kind in STATE_KINDS for group in leaves)
    drafting_unknown = states and _draft_tokens(record, run) is None
    counted = isinstance(devices, int) and not isinstance(devices, bool) and devices > 0
    sharded_alike = devices == 1 or (counted and fewest_heads and devices <= fewest_heads)
    if states and not _printed_block_size(record, run) and not sharded_alike:
        why = "a state model over more devices than kv heads (or an unknown count) sizes its"
        why += " attention block by rank; the run prints no kv_block_size_tokens"
        return Verdict(figure, not_checked=why)
    stages = devices if counted else None  # pipeline stages: at most one per device
    step = written_step(figure.interval.shown)
    spans: list[tuple[str, ConcurrencySpan]] = []
    uncovered: list[str] = []
    for options, batch in _readings(record, run, engine, per_request, every_dtype=False):
        try:
            span = printed_concurrency(
                record.model, options, per_request, tokens, blocks, batch, stages
            )
        except NotServed:
            continue  # vLLM itself refuses this reading
        except NotCovered as error:
            uncovered.append(f"{options.version}: {error}")
            continue
        except EngineError:
            continue
        if span is None:
            continue  # this layout cannot print that token count
        if drafting_unknown:  # each drafted token adds a state page: any count lowers it
            span = span._replace(low=Fraction(0), working=f"{span.working} (fewer with drafts)")
        if _agrees(written, step, span.low, span.high):
            return Verdict(figure)
        spans.append((options.version, span))
    if uncovered or not spans:
        why = "; ".join(dict.fromkeys(uncovered)) or "no vLLM release prints that pool"
        return Verdict(figure, not_checked=f"no reading the vLLM engine model covers: {why}")
    version, nearest = min(
        spans, key=lambda item: min(abs(item[1].low - written), abs(item[1].high - written))
    )
    shown = _span(nearest.low, nearest.high)
    readings = f"the nearest of {len(spans)} readings" if len(spans) > 1 else "its one reading"
    message = (
        f"max_concurrency is {figure.interval.shown}; vLLM {version} ({readings} of what the"
        f" run leaves unstated): {nearest.working} = {shown} in run '{run.id}'"
    )
    return Verdict(figure, figure_problem(record, figure, message, "error"))


def _budget_by_release(
    record: RecordContext,
    run: Run,
    figure: Figure,
    per_request: int,
    engine: dict[str, Any],
    budget: tuple[Fraction, str, int],
) -> Verdict:
    """Without a printed pool: the most any reading's pool of the logged budget gives, the
    budget at the top of its precision, split over as many ranks as the run has devices (the
    smallest pages), the fewest tokens in flight and the smallest KV dtype unless stated."""
    from kvrecords.kv.engines import EngineError, NotCovered
    from kvrecords.kv.engines.result import NotServed
    from kvrecords.kv.engines.vllm import capacity

    per_device, written, devices = budget
    most: tuple[Fraction, str] | None = None
    uncovered: list[str] = []
    for options, batch in _readings(record, run, engine, per_request, every_dtype=True):
        reading = options._replace(
            max_num_batched_tokens=batch[0], async_scheduling=False, tensor_parallel_size=devices
        )
        try:
            pool = capacity(record.model, reading, int(per_device), per_request)
        except NotServed:
            continue
        except NotCovered as error:
            uncovered.append(f"{options.version}: {error}")
            continue
        except EngineError:
            continue
        if most is None or pool.max_concurrency > most[0]:
            size = f"{reading.block_size}-token" if reading.block_size else "default"
            how = f"vLLM {options.version}, {options.kv_cache_dtype} cache, {size} blocks"
            most = (pool.max_concurrency, f"{how}: {pool.num_blocks:,} blocks")
    if uncovered or most is None:
        why = "; ".join(dict.fromkeys(uncovered)) or "no vLLM release sizes this model"
        return Verdict(figure, not_checked=f"no reading the vLLM engine model covers: {why}")
    if figure.interval.low is None or figure.interval.low <= most[0]:
        return Verdict(figure)
    message = (
        f"max_concurrency is {figure.interval.shown}; a budget of {written} per device over"
        f" {devices} rank(s) holds at most {format_exact(most[0], 2)} requests of"
        f" {per_request:,} tokens on any reading ({most[1]}) in run '{run.id}'"
    )
    return Verdict(figure, figure_problem(record, figure, message, "error"))


def _printed_block_size(record: RecordContext, run: Run) -> int | None:
    for figure in figures(record, run, "kv_block_size_tokens"):
        size = printed(figure)
        if size is not None and size.denominator == 1 and size > 0:
            return int(size)
    return None


def _span(low: Fraction, high: Fraction) -> str:
    if format_exact(low, 2) == format_exact(high, 2):
        return format_exact(low, 2)
    return f"{format_exact(low, 2)} to {format_exact(high, 2)}"


def _readings(
    record: RecordContext,
    run: Run,
    engine: dict[str, Any],
    per_request: int,
    every_dtype: bool,
) -> Iterator[tuple[VllmOptions, tuple[int, int]]]:
    """Every vLLM setting the run allows: its stated release (else one of each span of
    releases the engine model's rules treat alike, newest first), block size, KV and state
    dtypes, prefix caching, Gated DeltaNet prefill backend, whether the hybrid allocator ran,
    and the span of max_num_batched_tokens (as its flags quote it, else 1 to N). The KV dtype
    changes block counts only through a state page, unless ``every_dtype`` (a budget's pool)."""
    from kvrecords.kv.engines import UnknownValue
    from kvrecords.kv.engines.vllm import VllmOptions, parse_version, rule_releases

    stated = engine.get("version")
    try:
        if stated is None:
            raise UnknownValue("--engine-version", stated, ())
        parse_version(str(stated))
        versions: tuple[str, ...] = (str(stated),)
    except UnknownValue:
        versions = rule_releases()
    leaves = [group for group in record.model.leaf_groups() if group.layers]
    states = any(group.kind in STATE_KINDS for group in leaves)
    printed_size = _printed_block_size(record, run)
    block_sizes: tuple[int | None, ...] = (
        (printed_size,) if printed_size else (None,) if states else BLOCK_SIZES
    )
    stated_dtype = _VLLM_DTYPES.get(_stated_kv_dtype(record, run) or "")
    open_dtype = states or every_dtype
    dtypes = (stated_dtype,) if stated_dtype else ("auto", "fp8") if open_dtype else ("auto",)
    either = (False, True)
    gdn = any(group.kind == "linear_attention" for group in leaves)
    batches = _batch_flags(record, run)
    batch = (min(batches), max(batches)) if batches else (1, per_request)
    drafted = _draft_tokens(record, run) if states else 0
    for version, block_size, dtype, ssm, caching, backend, no_hybrid in itertools.product(
        versions,
        block_sizes,
        dtypes,
        ("auto", "float32") if states else ("auto",),
        either if states else (None,),
        ("triton", "flashinfer") if gdn else ("triton",),
        either,
    ):
        options = VllmOptions(
            kv_cache_dtype=dtype,
            block_size=block_size,
            version=version,
            mamba_ssm_cache_dtype=ssm,
            disable_hybrid_kv_cache_manager=no_hybrid,
            enable_prefix_caching=caching,
            gdn_prefill_backend=backend,
            num_speculative_tokens=drafted or 0,
        )
        yield options, batch


def _draft_tokens(record: RecordContext, run: Run) -> int | None:
    """The tokens a run drafts per step (each adds a state page per request from 0.15.0): 0
    where the record mentions no speculative decoding, None where it does without the count."""
    drafting = run_setting(record, run, "speculative_decoding")
    if isinstance(drafting, dict) and isinstance(drafting.get("draft_tokens"), int):
        return int(drafting["draft_tokens"])
    techniques = [*record.data.get("techniques", []), *run.stated.get("techniques", [])]
    mentioned = drafting or "speculative_decoding" in techniques
    return None if mentioned or any("speculative" in flag for flag in _flags(record, run)) else 0


def _flags(record: RecordContext, run: Run) -> list[str]:
    """The engine flags the record and the run quote."""
    engines = (record.data["methodology"].get("engine"), run.stated.get("engine"))
    return [
        str(flag)
        for engine in engines
        if isinstance(engine, dict)
        for flag in engine.get("flags") or []
    ]


def _batch_flags(record: RecordContext, run: Run) -> list[int]:
    """Every max_num_batched_tokens the run's engine flags quote."""
    found = (match.group(1) for flag in _flags(record, run) for match in _BATCH_FLAG.finditer(flag))
    return [value for text in found if (value := int(text.replace(",", ""))) > 0]
