"""The metric vocabulary of a run's metrics: each name carries its unit and its meaning.

A run's ``metrics`` use only these names, so that ``mean TTFT`` in one record and ``ttft_mean_ms``
in another are the same column in every export. A figure the vocabulary cannot hold is a reason
to add a metric here (with its definition), never to park it in prose.
"""

from __future__ import annotations

import difflib
from typing import NamedTuple


class Metric(NamedTuple):
    """One measurable figure: its name (unit included), unit, meaning and what it needs."""

    name: str
    unit: str
    meaning: str
    fraction: bool = False  # a fraction from 0 to 1 (93.5 percent is 0.935)
    needs: str = ""  # the metric field a value of this metric must carry
    lower_is_better: bool = False  # times and sizes: a speedup is from / to
    byte_valued: bool = False  # may be written with a byte unit (`1.5 GiB`)

    @property
    def positive(self) -> bool:
        """Times, rates and sizes are above zero; counts and fractions may be zero."""
        return self.unit in _POSITIVE_UNITS


_POSITIVE_UNITS = frozenset({"ms", "s", "tokens/s", "requests/s", "GB/s", "bytes", "B/token"})


METRICS: tuple[Metric, ...] = (
    Metric(
        "ttft_ms",
        "ms",
        "Time to first token: from the request's arrival to its first generated token, "
        "queueing and prefill included.",
        lower_is_better=True,
    ),
    Metric(
        "itl_ms",
        "ms",
        "Inter-token latency: the time between two consecutive output tokens of one request "
        "(vLLM's benchmark reports its distribution over every gap).",
        lower_is_better=True,
    ),
    Metric(
        "tpot_ms",
        "ms",
        "Time per output token after the first: (e2e latency - TTFT) / (output tokens - 1), "
        "one value per request. Not the same as ITL: TPOT averages within a request first.",
        lower_is_better=True,
    ),
    Metric(
        "e2e_latency_ms",
        "ms",
        "End-to-end latency of a request: arrival to last token.",
        lower_is_better=True,
    ),
    Metric(
        "prefill_ms",
        "ms",
        "Time spent in prefill alone, as an engine or profiler reports it.",
        lower_is_better=True,
    ),
    Metric(
        "wall_time_s",
        "s",
        "Wall-clock time to finish the whole run (every request).",
        lower_is_better=True,
    ),
    Metric(
        "itl_slope_ms_per_token",
        "ms/token",
        "Slope of a linear fit of ITL against context length at concurrency 1: the decode time "
        "each cached token adds (ITL = slope x context + intercept).",
        lower_is_better=True,
    ),
    Metric(
        "itl_intercept_ms",
        "ms",
        "Intercept of that linear fit of ITL against context length: the ITL at zero context.",
        lower_is_better=True,
    ),
    Metric(
        "break_even_context_tokens",
        "tokens",
        "Context length beyond which a treatment's fitted ITL falls below the baseline's (a "
        "quantized cache's fixed overhead paid back by its smaller per-token cost).",
        lower_is_better=True,
    ),
    Metric(
        "decode_tokens_per_s",
        "tokens/s",
        "Decode rate of one sequence: output tokens per second after the first token.",
    ),
    Metric(
        "output_tokens_per_s",
        "tokens/s",
        "Aggregate output throughput: output tokens of every request per second of the run.",
    ),
    Metric(
        "total_tokens_per_s",
        "tokens/s",
        "Aggregate throughput counting prompt and output tokens per second of the run.",
    ),
    Metric(
        "input_tokens_per_s",
        "tokens/s",
        "Aggregate input throughput: prompt tokens of every request per second of the run "
        "(SGLang bench_serving's input token throughput), cached prompt tokens included.",
    ),
    Metric(
        "throughput_with_reuse_ratio",
        "ratio",
        "A token throughput that counts prompt tokens served from cache, divided by the same "
        "throughput counting only freshly computed tokens: how much prefix reuse inflates a "
        "tokens/s figure.",
    ),
    Metric(
        "prefill_tokens_per_s",
        "tokens/s",
        "Prompt tokens processed per second in prefill (llama-bench's pp rate).",
    ),
    Metric("requests_per_s", "requests/s", "Completed requests per second of the run."),
    Metric(
        "hit_rate",
        "fraction",
        "Prefix-cache hit rate; its definition says what is counted (tokens, blocks or "
        "requests) and over what window (the run, a rolling window, cumulative).",
        fraction=True,
        needs="definition",
    ),
    Metric(
        "cached_tokens",
        "tokens",
        "Prompt tokens served from cache (per request, or total with statistic total).",
    ),
    Metric(
        "kv_working_set_tokens",
        "tokens",
        "Tokens of KV the workload keeps for reuse in all (its working set: every shared prefix "
        "and history it would hit), as the source sizes it; statistic total.",
    ),
    Metric(
        "kv_bytes_reported",
        "bytes",
        "A KV size the engine printed (per request, the pool, or per device: see scope).",
        needs="scope",
        lower_is_better=True,
        byte_valued=True,
    ),
    Metric(
        "kv_tokens_reported",
        "tokens",
        "A KV capacity in tokens the engine printed (vLLM's 'GPU KV cache size: N tokens').",
        needs="scope",
    ),
    Metric(
        "kv_blocks_reported",
        "blocks",
        "A KV capacity in blocks the engine printed (num_gpu_blocks).",
        needs="scope",
    ),
    Metric(
        "waiting_requests",
        "requests",
        "Requests waiting in the engine's queue, not yet scheduled (vLLM's num_requests_waiting), "
        "sampled over the run; the statistic is over the samples.",
    ),
    Metric(
        "kv_block_size_tokens",
        "tokens",
        "Tokens per KV-cache block as the engine set or printed it; prefix reuse lands on "
        "block boundaries (hybrid models raise the attention block to the state page).",
    ),
    Metric(
        "max_concurrency",
        "requests",
        "Requests of a given length that fit in the KV pool at once, as the engine reports it.",
    ),
    Metric(
        "memory_waste_fraction",
        "fraction",
        "Fraction of reserved KV memory that holds no live token (fragmentation, over-reservation).",
        fraction=True,
        lower_is_better=True,
    ),
    Metric(
        "kv_memory_bytes",
        "bytes",
        "KV memory the source measured or states for this run (not an engine log line).",
        lower_is_better=True,
        byte_valued=True,
    ),
    Metric(
        "kv_bytes_per_token",
        "B/token",
        "KV bytes each token costs as the source measured or states it for this run (an "
        "estimator's charge, a deployed format's size); the model's geometry is the basis's "
        "bytes_per_token.",
        lower_is_better=True,
    ),
    Metric(
        "free_memory_bytes",
        "bytes",
        "Accelerator memory left free during the run (headroom beside weights and KV), as the "
        "source measured it.",
        byte_valued=True,
    ),
    Metric(
        "peak_memory_bytes",
        "bytes",
        "Peak accelerator memory during the run.",
        lower_is_better=True,
        byte_valued=True,
    ),
    Metric(
        "memory_in_use_bytes",
        "bytes",
        "Accelerator memory in use at a stated point of the run (not its peak), as the source "
        "measured it; its note says when.",
        lower_is_better=True,
        byte_valued=True,
        needs="note",
    ),
    Metric(
        "allocator_cache_bytes",
        "bytes",
        "Memory an allocator holds for reuse but no tensor uses (MLX's cache memory, PyTorch's "
        "reserved minus allocated), as measured.",
        lower_is_better=True,
        byte_valued=True,
    ),
    Metric(
        "weights_memory_bytes",
        "bytes",
        "Accelerator memory the model's weights take, as the engine printed it (vLLM's 'Model "
        "loading took 14.99 GiB') or the source measured it.",
        lower_is_better=True,
        byte_valued=True,
    ),
    Metric(
        "activation_peak_bytes",
        "bytes",
        "Peak memory of activations and temporary buffers in the engine's profiling pass "
        "(vLLM's 'torch peak memory increase'), beside weights and KV.",
        lower_is_better=True,
        byte_valued=True,
    ),
    Metric(
        "kv_budget_bytes",
        "bytes",
        "Memory the engine leaves for the KV cache after weights and activations (vLLM's "
        "'Available KV cache memory: 10.55 GiB'), as printed; the pool it allocates is this "
        "rounded down to whole blocks.",
        byte_valued=True,
    ),
    Metric(
        "max_context_tokens",
        "tokens",
        "The longest context the setup holds: what the engine estimated it could fit (vLLM's "
        "'estimated maximum model length is 205728') or the longest prompt the source ran "
        "without running out of memory; stated_as says which.",
    ),
    Metric(
        "kv_kept_fraction",
        "fraction",
        "Fraction of the context's KV entries an eviction or compression policy keeps (a budget "
        "of a quarter of the tokens is 0.25).",
        fraction=True,
    ),
    Metric(
        "kv_compression_ratio",
        "ratio",
        "KV size without the technique divided by the size with it, as the source states it "
        "(4 for a cache four times smaller).",
    ),
    Metric(
        "slo_attainment",
        "fraction",
        "Fraction of requests that met the run's latency objective, which its note states (TTFT "
        "under 2 s and TPOT under 100 ms).",
        fraction=True,
        needs="note",
    ),
    Metric(
        "goodput_requests_per_s",
        "requests/s",
        "Completed requests per second that met the run's latency objective (goodput), which "
        "its note states.",
        needs="note",
    ),
    Metric(
        "transfer_gb_per_s",
        "GB/s",
        "KV transfer bandwidth between tiers or nodes (10^9 bytes per second).",
    ),
    Metric("prompt_tokens", "tokens", "Prompt tokens in the run (statistic total) or per request."),
    Metric(
        "generated_tokens",
        "tokens",
        "Generated tokens in the run (statistic total) or per request.",
    ),
    Metric("turns", "turns", "Conversation turns per session."),
    Metric(
        "quality_score",
        "score",
        "A task score for a lossy cache, on the scale the benchmark uses; baseline_value is "
        "the same score without the technique.",
        needs="benchmark",
    ),
    Metric(
        "accuracy",
        "fraction",
        "Accuracy on a benchmark, as a fraction; baseline_value without the technique.",
        fraction=True,
        needs="benchmark",
    ),
    Metric(
        "perplexity",
        "perplexity",
        "Perplexity on a text corpus; baseline_value without the technique.",
        needs="benchmark",
        lower_is_better=True,
    ),
    Metric(
        "acceptance_rate",
        "fraction",
        "Speculative decoding: fraction of drafted tokens accepted.",
        fraction=True,
    ),
    Metric(
        "acceptance_length",
        "tokens/step",
        "Speculative decoding: mean tokens emitted per verification step of the target model, "
        "the accepted drafted tokens plus the one the target samples (1 when no draft is "
        "accepted, at most the drafted tokens + 1); an acceptance rate is acceptance_rate.",
    ),
)

BY_NAME: dict[str, Metric] = {metric.name: metric for metric in METRICS}


def nearest_metric(name: str) -> str | None:
    """The known metric a misspelt or ad-hoc name most likely means (``mean_ttft_ms`` ->
    ``ttft_ms``), or None."""
    words = set(name.split("_"))
    for metric in METRICS:  # an ad-hoc name built around a known one: ttft_p90_ms, mean_ttft_ms
        if set(metric.name.split("_")) <= words:
            return metric.name
    close = difflib.get_close_matches(name, list(BY_NAME), n=1, cutoff=0.6)
    return close[0] if close else None


def markdown() -> str:
    """docs/metrics.md: the vocabulary as a table."""
    lines = [
        "# Metrics",
        "",
        "Generated by `kvrecords metrics --markdown` from `validator/kvrecords/kv/metrics.py`; "
        "do not edit. Each run's `metrics` use these names; the unit is part of the name. See "
        "docs/conventions.md for statistics, values and comparisons.",
        "",
        "| metric | unit | meaning | needs |",
        "|---|---|---|---|",
    ]
    for metric in METRICS:
        needs = f"`{metric.needs}`" if metric.needs else ""
        lines.append(f"| `{metric.name}` | {metric.unit} | {metric.meaning} | {needs} |")
    return "\n".join(lines) + "\n"
