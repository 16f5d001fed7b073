"""GuideLLM's report JSON (``guidellm benchmark ... --output-path report.json``), tool ``guidellm``.

One run per entry of ``benchmarks``: its strategy (synchronous, concurrent streams, throughput,
a constant or Poisson rate) says its concurrency and request rate. Each quantity of
``metrics.<name>.successful`` (requests that completed; errored and incomplete ones are not
figures of the run) gives mean, median, min, max and percentiles p50, p75, p90, p95, p99 and
p999 (p99.9), with ``std_dev`` as the spread of the mean; mode, variance, count and the
percentiles the record's statistics have no name for (p001 to p25) are listed as not imported.

How GuideLLM defines what it reports (``src/guidellm/schemas/request_stats.py``):
- ``time_to_first_token_ms``: first token - request start, in ms: ``ttft_ms``.
- ``inter_token_latency_ms``: (last token - first token) / (output tokens - 1) per request,
  weighted by its gaps, in ms: its mean is the mean over every gap, ``itl_ms`` as named.
- ``time_per_output_token_ms``: (last token - request start) / output tokens, the first token
  included, in ms. The vocabulary's ``tpot_ms`` leaves the first token out, so it is not
  imported rather than entered as a different quantity under that name.
- ``request_latency``: in seconds; ``e2e_latency_ms`` x 1000.
- ``requests_per_second``, ``output_tokens_per_second``, ``tokens_per_second`` (prompt and
  output) and ``prompt_tokens_per_second``: rates over the run, aggregate.
- ``prompt_token_count`` and ``output_token_count``: tokens per request (``total_sum``: the run's
  total) as ``prompt_tokens`` and ``generated_tokens``.
"""

from __future__ import annotations

import math
from typing import Any

from kvrecords.dataset.bench import (
    BenchFileError,
    BenchFormat,
    BenchRun,
    load_json,
    register,
)
from kvrecords.dataset.bench.readers import summaries

TOOL = "guidellm"

STATISTICS = {
    "mean": "mean",
    "median": "median",
    "min": "min",
    "max": "max",
    "total_sum": "total",  # kept only for token counts (TOTALS)
    "percentiles.p50": "p50",
    "percentiles.p75": "p75",
    "percentiles.p90": "p90",
    "percentiles.p95": "p95",
    "percentiles.p99": "p99",
    "percentiles.p999": "p99.9",
}
WITHOUT_TOTAL = {name: statistic for name, statistic in STATISTICS.items() if name != "total_sum"}

QUANTITIES = {
    "time_to_first_token_ms": summaries.Quantity("ttft_ms"),
    "inter_token_latency_ms": summaries.Quantity("itl_ms"),
    "request_latency": summaries.Quantity("e2e_latency_ms", 1000),  # seconds to ms
    "requests_per_second": summaries.Quantity("requests_per_s", scope="aggregate"),
    "output_tokens_per_second": summaries.Quantity("output_tokens_per_s", scope="aggregate"),
    "tokens_per_second": summaries.Quantity("total_tokens_per_s", scope="aggregate"),
    "prompt_tokens_per_second": summaries.Quantity("input_tokens_per_s", scope="aggregate"),
    "prompt_token_count": summaries.Quantity("prompt_tokens"),
    "output_token_count": summaries.Quantity("generated_tokens"),
}
TOTALS = frozenset({"prompt_token_count", "output_token_count"})

# Keys of a benchmark that hold its settings, timing and per-request samples, not figures.
BENCHMARK_KEYS = frozenset(
    {
        "type_",
        "id_",
        "run_id",
        "run_index",
        "config",
        "args",
        "scheduler_state",
        "scheduler_metrics",
        "run_stats",
        "worker",
        "request_loader",
        "extras",
        "requests",
        "start_time",
        "end_time",
        "duration",
        "warmup_duration",
        "cooldown_duration",
        "metrics",
    }
)
REPORT_KEYS = frozenset({"metadata", "config", "args", "benchmarks"})
ONLY_SUCCESSFUL = "only the successful requests' figures are the run's"
NO_METRIC = "no metric of the vocabulary holds it"
UNIMPORTED = {
    "time_per_output_token_ms": "GuideLLM's TPOT counts the first token; tpot_ms does not",
    "time_to_first_output_token_ms": "the first content token after reasoning; ttft_ms is the first",
}


def detect(raw: bytes, name: str) -> bool:
    return b'"benchmarks"' in raw and b"generative_benchmark" in raw


def read(raw: bytes, file_name: str) -> list[BenchRun]:
    report = load_json(raw)
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        raise BenchFileError("a GuideLLM report is an object with a list of benchmarks")
    if not report["benchmarks"]:
        raise BenchFileError("the report holds no benchmark", key="benchmarks")
    file_level = summaries.other_entries(
        report, "", REPORT_KEYS, "not a key of a GuideLLM report this reader knows"
    )
    spec = summaries.mapping_at(report, "config", "spec")
    model = summaries.text_or_none(summaries.mapping_at(spec, "backend").get("model"))
    prompt_tokens, output_tokens = _configured_lengths(spec)
    return [
        _run(
            benchmark,
            f"benchmarks[{index}]",
            file_name,
            file_level,
            model,
            prompt_tokens,
            output_tokens,
        )
        for index, benchmark in enumerate(report["benchmarks"])
    ]


def _run(
    benchmark: Any,
    key: str,
    file_name: str,
    file_level: list[str],
    model: str | None,
    prompt_tokens: int | None,
    output_tokens: int | None,
) -> BenchRun:
    if not isinstance(benchmark, dict) or not isinstance(benchmark.get("metrics"), dict):
        raise BenchFileError("a benchmark is an object with its metrics", key=key)
    not_imported = list(file_level)
    not_imported += summaries.other_entries(
        benchmark, f"{key}.", BENCHMARK_KEYS, "not a key of a benchmark this reader knows"
    )
    metrics = benchmark["metrics"]
    figures = []
    for name, value in metrics.items():
        where = f"{key}.metrics.{name}"
        quantity = QUANTITIES.get(name)
        if quantity is None:
            if name != "request_totals":
                not_imported.append(
                    summaries.skipped(where, value, UNIMPORTED.get(name, NO_METRIC))
                )
            continue
        if not isinstance(value, dict) or "successful" not in value:
            raise BenchFileError("a metric holds its successful requests' summary", key=where)
        not_imported += [
            summaries.skipped(f"{where}.{status}", summary, ONLY_SUCCESSFUL)
            for status, summary in value.items()
            if status != "successful"
        ]
        statistics = STATISTICS if name in TOTALS else WITHOUT_TOTAL
        figures += summaries.summary_figures(
            value["successful"],
            f"{where}.successful",
            quantity,
            statistics,
            "std_dev",
            not_imported,
        )
    strategy = _strategy(benchmark, key)
    concurrency, request_rate, label = _load(strategy, key)
    totals = metrics.get("request_totals")
    completed = totals.get("successful") if isinstance(totals, dict) else None
    if isinstance(totals, dict):
        not_imported += [
            summaries.skipped(f"{key}.metrics.request_totals.{status}", count, ONLY_SUCCESSFUL)
            for status, count in totals.items()
            if status != "successful"
        ]
    duration = summaries.number(benchmark.get("duration"), f"{key}.duration")
    return BenchRun(
        TOOL,
        file_name,
        label,
        tuple(figures),
        concurrency=concurrency,
        request_rate=request_rate,
        num_requests=_count(completed, f"{key}.metrics.request_totals.successful"),
        input_tokens=prompt_tokens,
        output_tokens=output_tokens,
        duration_s=None if duration is None else float(duration),
        model=model,
        not_imported=tuple(not_imported),
    )


def _strategy(benchmark: dict[str, Any], key: str) -> dict[str, Any]:
    """The scheduling strategy: ``config.strategy`` (GuideLLM 0.4 on), ``args.strategy`` before."""
    for holder in ("config", "args"):
        strategy = summaries.mapping_at(benchmark, holder).get("strategy")
        if isinstance(strategy, dict):
            return strategy
    raise BenchFileError("the benchmark does not say its strategy", key=f"{key}.config.strategy")


def _load(strategy: dict[str, Any], key: str) -> tuple[int | None, float | None, str]:
    """Concurrency, request rate and a label from GuideLLM's strategy types. A rate-based
    strategy's ``max_concurrency`` is its worker pool's limit, not a cap the user set."""
    kind = strategy.get("type_")
    where = f"{key}.config.strategy"
    if kind == "synchronous":
        return 1, None, "synchronous"
    if kind == "concurrent":
        streams = _count(strategy.get("streams"), f"{where}.streams")
        return streams, None, f"concurrent {streams}"
    if kind == "throughput":
        cap = _count(strategy.get("max_concurrency"), f"{where}.max_concurrency")
        return cap, math.inf, "throughput" if cap is None else f"throughput, at most {cap}"
    if kind in ("constant", "poisson", "async_constant", "async_poisson"):
        rate = summaries.number(strategy.get("rate"), f"{where}.rate")
        if rate is None or rate <= 0:
            raise BenchFileError("a rate strategy gives its rate above zero", key=f"{where}.rate")
        shown = kind.removeprefix("async_")
        return None, float(rate), f"{shown} {rate:g} requests/s"
    raise BenchFileError(f"unknown GuideLLM strategy {str(kind)[:40]!r}", key=f"{where}.type_")


def _configured_lengths(spec: dict[str, Any]) -> tuple[int | None, int | None]:
    """Prompt and output tokens per request as configured, from one synthetic data source."""
    data = spec.get("data")
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], dict):
        return None, None
    source = data[0]
    return (
        _count(source.get("prompt_tokens"), "config.spec.data[0].prompt_tokens"),
        _count(source.get("output_tokens"), "config.spec.data[0].output_tokens"),
    )


def _count(value: Any, key: str) -> int | None:
    figure = summaries.number(value, key)
    if figure is None:
        return None
    if figure != int(figure) or figure < 0:
        raise BenchFileError(f"a count belongs here, not {figure}", key=key)
    return int(figure)


FORMAT = register(
    BenchFormat(TOOL, "GuideLLM report JSON (guidellm benchmark --output-path)", detect, read)
)
