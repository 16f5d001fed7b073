"""AIPerf's ``profile_export_aiperf.json`` and GenAI-Perf's ``profile_export_genai_perf.json``,
tool ``aiperf``: one run per file.

Both write one object per quantity, ``{"unit": "ms", "avg": .., "p50": .., "p90": .., "std": ..}``,
at the top level (AIPerf before 0.3 nested them under ``records``); the same keys name the same
quantities in both. ``avg``, ``min``, ``max``, ``p50``, ``p75``, ``p90``, ``p95`` and ``p99`` are
imported, ``std`` as the spread of the mean; p1 to p25 have no name among the record's
statistics and are listed as not imported.

How AIPerf defines them (docs/metrics_reference.md):
- ``time_to_first_token``: first response - request start: ``ttft_ms``.
- ``inter_token_latency``: (request latency - TTFT) / (output tokens - 1), one value per
  request: the vocabulary's ``tpot_ms`` by definition, whatever the tool calls it.
- ``inter_chunk_latency``: every gap between consecutive response chunks, pooled: ``itl_ms``
  (vLLM's benchmark measures its ITL between chunks too).
- ``request_latency``: ``e2e_latency_ms``.
- ``output_token_throughput_per_user``: 1 / ITL per request, ``decode_tokens_per_s`` per sequence.
- ``prefill_throughput``: input tokens / TTFT per request, ``prefill_tokens_per_s``.
- ``request_throughput``, ``output_token_throughput``, ``total_token_throughput``: one value
  over the run (count / benchmark duration), written as ``avg``: statistic ``single``.
- ``input_sequence_length``, ``output_sequence_length`` (reasoning tokens included),
  ``total_isl`` and ``total_osl``: ``prompt_tokens`` and ``generated_tokens``.
Times in another unit (``sec``, ``ns``) are converted to ms.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvrecords.dataset.bench import BenchFileError, BenchFormat, BenchRun, load_json, register
from kvrecords.dataset.bench.readers import summaries

TOOL = "aiperf"

STATISTICS = {
    "avg": "mean",
    "min": "min",
    "max": "max",
    "p50": "p50",
    "p75": "p75",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
}
RUN_STATISTICS = {"avg": "single"}  # one value over the run, written as its 'avg'
TOTAL_STATISTICS = {"avg": "total"}

TIME_UNITS = {"ms": 1.0, "sec": 1000.0, "s": 1000.0, "ns": 1e-6, "us": 1e-3}


class _Known(NamedTuple):
    """A quantity of the file: its metric, the units the file may write it in (each with its
    factor to the metric's unit), its statistics."""

    metric: str
    units: dict[str, float]
    statistics: dict[str, str] = STATISTICS
    scope: str | None = None


_TOKENS = {"tokens": 1.0}
_TOKENS_PER_S = {"tokens/sec": 1.0, "tokens/s": 1.0}
QUANTITIES = {
    "time_to_first_token": _Known("ttft_ms", TIME_UNITS),
    "inter_token_latency": _Known("tpot_ms", TIME_UNITS),
    "inter_chunk_latency": _Known("itl_ms", TIME_UNITS),
    "request_latency": _Known("e2e_latency_ms", TIME_UNITS),
    "output_token_throughput_per_user": _Known(
        "decode_tokens_per_s",
        {"tokens/sec/user": 1.0, "tokens/s/user": 1.0},
        scope="per_sequence",
    ),
    "prefill_throughput": _Known("prefill_tokens_per_s", _TOKENS_PER_S, scope="per_sequence"),
    "request_throughput": _Known(
        "requests_per_s", {"requests/sec": 1.0, "req/s": 1.0}, RUN_STATISTICS, "aggregate"
    ),
    "output_token_throughput": _Known(
        "output_tokens_per_s", _TOKENS_PER_S, RUN_STATISTICS, "aggregate"
    ),
    "total_token_throughput": _Known(
        "total_tokens_per_s", _TOKENS_PER_S, RUN_STATISTICS, "aggregate"
    ),
    "input_sequence_length": _Known("prompt_tokens", _TOKENS),
    "output_sequence_length": _Known("generated_tokens", _TOKENS),
    "total_isl": _Known("prompt_tokens", _TOKENS, TOTAL_STATISTICS),
    "total_osl": _Known("generated_tokens", _TOKENS, TOTAL_STATISTICS),
}
NO_METRIC = "no metric of the vocabulary holds it"
UNIMPORTED = {
    "output_token_count": "the same count as output_sequence_length, without reasoning tokens",
    "total_output_tokens": "total_osl, reasoning tokens included, is the run's generated_tokens",
}
# Keys that hold the run's settings or bookkeeping, read below or deliberately not figures.
SETTING_KEYS = frozenset(
    {"input_config", "was_cancelled", "error_summary", "start_time", "end_time", "records"}
)


def detect(raw: bytes, name: str) -> bool:
    return name.endswith(("_aiperf.json", "_genai_perf.json")) or (
        b'"input_config"' in raw and b'"time_to_first_token"' in raw
    )


def read(raw: bytes, file_name: str) -> list[BenchRun]:
    export = load_json(raw)
    if not isinstance(export, dict):
        raise BenchFileError("a profile export is a JSON object of metrics")
    # AIPerf before 0.3 nested the metrics under 'records'
    records = export.get("records")
    quantities, prefix = (records, "records.") if isinstance(records, dict) else (export, "")
    not_imported: list[str] = []
    figures = []
    for name, summary in quantities.items():
        key = f"{prefix}{name}"
        known = QUANTITIES.get(name)
        if summary is None or (not prefix and name in SETTING_KEYS):
            continue
        if name in ("request_count", "benchmark_duration"):
            continue  # settings of the run, below
        if known is None:
            not_imported.append(summaries.skipped(key, summary, UNIMPORTED.get(name, NO_METRIC)))
            continue
        if not isinstance(summary, dict):
            raise BenchFileError("a mapping of statistics belongs here", key=key)
        unit = summary.get("unit")
        if unit not in known.units:
            raise BenchFileError(
                f"{name} is in {str(unit)[:20]!r}; this reader knows it in "
                f"{', '.join(known.units)}",
                key=f"{key}.unit",
            )
        quantity = summaries.Quantity(known.metric, known.units[unit], known.scope)
        statistics = {name: value for name, value in summary.items() if name != "unit"}
        figures += summaries.summary_figures(
            statistics, key, quantity, known.statistics, "std", not_imported
        )
    if prefix:
        not_imported += summaries.other_entries(
            export, "", SETTING_KEYS, "not a key of a profile export this reader knows"
        )
    config = export.get("input_config")
    config = config if isinstance(config, dict) else {}
    concurrency, request_rate = _load(config)
    count = _avg(quantities.get("request_count"), f"{prefix}request_count", {"requests"})
    duration = _avg(quantities.get("benchmark_duration"), f"{prefix}benchmark_duration", {"sec"})
    prompt = _section(config, "input", "prompt")
    return [
        BenchRun(
            TOOL,
            file_name,
            _label(concurrency, request_rate),
            tuple(figures),
            concurrency=concurrency,
            request_rate=request_rate,
            num_requests=None if count is None else int(count),
            input_tokens=_mean_tokens(prompt, "input_tokens"),
            output_tokens=_mean_tokens(prompt, "output_tokens"),
            duration_s=duration,
            model=_model(config),
            not_imported=tuple(not_imported),
        )
    ]


def _label(concurrency: int | None, request_rate: float | None) -> str:
    if concurrency is not None:
        return f"concurrency {concurrency}"
    return f"{request_rate:g} requests/s" if request_rate is not None else "profile"


def _avg(summary: Any, key: str, units: set[str]) -> float | None:
    """The ``avg`` of a quantity that is one value over the run (a count, a duration)."""
    if summary is None:
        return None
    if not isinstance(summary, dict) or summary.get("unit") not in units:
        raise BenchFileError(f"a value in {', '.join(sorted(units))} belongs here", key=key)
    value = summaries.number(summary.get("avg"), f"{key}.avg")
    return None if value is None else float(value)


def _load(config: dict[str, Any]) -> tuple[int | None, float | None]:
    """Concurrency and request rate: AIPerf's ``loadgen``; GenAI-Perf's ``perf_analyzer.stimulus``
    (``{"concurrency": 8}``), or its top-level settings before that."""
    loadgen = _section(config, "loadgen") or _section(config, "perf_analyzer", "stimulus") or config
    concurrency = summaries.number(loadgen.get("concurrency"), "input_config.loadgen.concurrency")
    rate = summaries.number(loadgen.get("request_rate"), "input_config.loadgen.request_rate")
    if concurrency is not None and (concurrency != int(concurrency) or concurrency < 1):
        raise BenchFileError("a concurrency is a whole number from 1", key="input_config.loadgen")
    if rate is not None and rate <= 0:
        raise BenchFileError("a request rate is above zero", key="input_config.loadgen")
    return (
        None if concurrency is None else int(concurrency),
        None if rate is None else float(rate),
    )


def _mean_tokens(prompt: dict[str, Any], name: str) -> int | None:
    mean = summaries.number(
        _section(prompt, name).get("mean"), f"input_config.input.prompt.{name}.mean"
    )
    return int(mean) if mean is not None and mean == int(mean) and mean >= 0 else None


def _model(config: dict[str, Any]) -> str | None:
    names = _section(config, "endpoint").get("model_names") or config.get(
        "model_names", config.get("model")
    )
    if isinstance(names, list) and len(names) == 1:
        names = names[0]
    return names if isinstance(names, str) and names else None


def _section(data: dict[str, Any], *path: str) -> dict[str, Any]:
    for part in path:
        found = data.get(part)
        data = found if isinstance(found, dict) else {}
    return data


FORMAT = register(
    BenchFormat(
        TOOL,
        "AIPerf / GenAI-Perf profile export JSON (profile_export_aiperf.json, "
        "profile_export_genai_perf.json)",
        detect,
        read,
    )
)
