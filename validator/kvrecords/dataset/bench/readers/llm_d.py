"""llm-d's benchmark report, version 0.2 (llm-d-benchmark's ``BenchmarkReportV02``), tool
``llm-d``: one run per report, YAML or JSON.

The figures are ``results.request_performance.aggregate``: ``requests`` (total, and the input
and output lengths per request), ``latency`` and ``throughput``, each quantity a ``Statistics``
with its ``units``, ``mean``, ``stddev`` (the spread of the mean), ``min``, ``max`` and
percentiles. ``p50`` is the median (the schema says so); ``p99p9`` is p99.9; ``p0p1`` to ``p25``
and ``mode`` have no name among the record's statistics and are listed as not imported, as are
the time series, observability, session and health sections.

- ``time_to_first_token`` (s or ms): ``ttft_ms``; ``inter_token_latency`` (s/token or
  ms/token): ``itl_ms``; ``time_per_output_token``: ``tpot_ms``; ``request_latency``:
  ``e2e_latency_ms``. Seconds are converted to ms (x 1000).
  ``normalized_time_per_output_token`` (request latency / output tokens, the first token
  included) has no metric and is not imported.
- ``input_token_rate``, ``output_token_rate``, ``total_token_rate`` (tokens/s) and
  ``request_rate`` (queries/s): aggregate rates.
- ``input_length`` and ``output_length`` (count): ``prompt_tokens``, ``generated_tokens``.

The run's settings come from ``scenario.load.standardized`` (concurrency, ``rate_qps``, the
input and output lengths), ``run.time.duration`` (ISO 8601) and the stack's inference engine
(its model, tool and arguments).
"""

from __future__ import annotations

import math
import re
from typing import Any

from kvrecords.dataset.bench import (
    BenchFileError,
    BenchFormat,
    BenchRun,
    load_json,
    load_yaml,
    register,
)
from kvrecords.dataset.bench.readers import summaries

TOOL = "llm-d"
VERSION = "0.2"

STATISTICS = {
    "mean": "mean",
    "min": "min",
    "max": "max",
    "p50": "median",
    "p75": "p75",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "p99p9": "p99.9",
}
# Each section's quantities: the metric and, by the file's units, the factor to the metric's.
_SECONDS = {"s": 1000.0, "ms": 1.0}
_PER_TOKEN = {"s/token": 1000.0, "ms/token": 1.0}
_TOKENS_PER_S = {"tokens/s": 1.0}
SECTIONS: dict[str, dict[str, tuple[str, dict[str, float], str | None]]] = {
    "latency": {
        "time_to_first_token": ("ttft_ms", _SECONDS, None),
        "inter_token_latency": ("itl_ms", _PER_TOKEN, None),
        "time_per_output_token": ("tpot_ms", _PER_TOKEN, None),
        "request_latency": ("e2e_latency_ms", _SECONDS, None),
    },
    "throughput": {
        "input_token_rate": ("input_tokens_per_s", _TOKENS_PER_S, "aggregate"),
        "output_token_rate": ("output_tokens_per_s", _TOKENS_PER_S, "aggregate"),
        "total_token_rate": ("total_tokens_per_s", _TOKENS_PER_S, "aggregate"),
        "request_rate": ("requests_per_s", {"queries/s": 1.0}, "aggregate"),
    },
    "requests": {
        "input_length": ("prompt_tokens", {"count": 1.0}, None),
        "output_length": ("generated_tokens", {"count": 1.0}, None),
    },
}
ENGINES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "tensorrt-llm"}
NO_METRIC = "no metric of the vocabulary holds it"
UNIMPORTED = {
    "normalized_time_per_output_token": "request latency / output tokens counts the first token; "
    "tpot_ms does not",
}


# the report's version as its first lines write it: "version: '0.2'" or "version": "0.2"
_VERSION_LINE = re.compile(rb"""^\s*["']?version["']?\s*:\s*["']0\.2["']\s*,?\s*$""", re.MULTILINE)


def detect(raw: bytes, name: str) -> bool:
    return _VERSION_LINE.search(raw[:4096]) is not None and b"results" in raw


def read(raw: bytes, file_name: str) -> list[BenchRun]:
    report = load_json(raw) if raw.lstrip()[:1] in (b"{", b"[") else load_yaml(raw)
    if not isinstance(report, dict):
        raise BenchFileError("an llm-d benchmark report is a mapping")
    version = report.get("version")
    if version != VERSION:
        raise BenchFileError(
            f"report version {str(version)[:20]!r}; this reader reads version {VERSION}",
            key="version",
        )
    aggregate = summaries.mapping_at(report, "results", "request_performance", "aggregate")
    where = "results.request_performance.aggregate"
    if not aggregate:
        raise BenchFileError("the report holds no aggregate request performance", key=where)
    not_imported = _other_sections(report)
    figures = []
    for section, values in aggregate.items():
        quantities = SECTIONS.get(section)
        if quantities is None or not isinstance(values, dict):
            not_imported.append(summaries.skipped(f"{where}.{section}", values, NO_METRIC))
            continue
        for name, summary in values.items():
            key = f"{where}.{section}.{name}"
            if section == "requests" and name in ("total", "failures", "incomplete"):
                continue  # counts of the run, read below
            if name not in quantities:
                if summary is not None:
                    not_imported.append(
                        summaries.skipped(key, summary, UNIMPORTED.get(name, NO_METRIC))
                    )
                continue
            if summary is None:
                continue
            metric, units, scope = quantities[name]
            if not isinstance(summary, dict):
                raise BenchFileError("a Statistics mapping belongs here", key=key)
            unit = summary.get("units")
            if unit not in units:
                raise BenchFileError(
                    f"{name} is in {str(unit)[:20]!r}; version 0.2 writes it in "
                    f"{' or '.join(units)}",
                    key=f"{key}.units",
                )
            stats = {stat: value for stat, value in summary.items() if stat != "units"}
            quantity = summaries.Quantity(metric, units[unit], scope)
            figures += summaries.summary_figures(
                stats, key, quantity, STATISTICS, "stddev", not_imported
            )
    requests = aggregate.get("requests")
    total = _count(requests.get("total") if isinstance(requests, dict) else None, where)
    load = summaries.mapping_at(report, "scenario", "load", "standardized")
    component = _engine_component(report)
    engine = summaries.mapping_at(component, "standardized")
    return [
        BenchRun(
            TOOL,
            file_name,
            _label(report),
            tuple(figures),
            concurrency=_concurrency(load.get("concurrency")),
            unbounded=load.get("concurrency") == math.inf,  # '.inf': no cap on requests in flight
            request_rate=_rate(load.get("rate_qps")),
            num_requests=total,
            input_tokens=_length(load, "input_seq_len"),
            output_tokens=_length(load, "output_seq_len"),
            duration_s=_duration(summaries.mapping_at(report, "run", "time").get("duration")),
            engine=ENGINES.get(str(engine.get("tool"))),
            # the version of an engine named (llm-d names its image, not vLLM's release)
            engine_version=summaries.text_or_none(engine.get("tool_version"))
            if engine.get("tool") in ENGINES
            else None,
            flags=_flags(component),
            model=summaries.text_or_none(summaries.mapping_at(engine, "model").get("name")),
            not_imported=tuple(not_imported),
        )
    ]


def _other_sections(report: dict[str, Any]) -> list[str]:
    """The parts of a report that hold figures this reader does not take."""
    why = "only the aggregate request performance is read"
    sections = ("version", "run", "scenario", "results")
    found = summaries.other_entries(report, "", sections, "not a section of version 0.2")
    results = report.get("results")
    if isinstance(results, dict):
        found += summaries.other_entries(results, "results.", ("request_performance",), why)
        performance = results.get("request_performance")
        if isinstance(performance, dict):
            where = "results.request_performance."
            found += summaries.other_entries(performance, where, ("aggregate",), why)
    return found


def _engine_component(report: dict[str, Any]) -> dict[str, Any]:
    """The stack's one inference engine component (none when there are several or none)."""
    stack = summaries.mapping_at(report, "scenario").get("stack")
    engines: list[dict[str, Any]] = [
        component
        for component in (stack if isinstance(stack, list) else [])
        if summaries.mapping_at(component, "standardized").get("kind") == "inference_engine"
    ]
    return engines[0] if len(engines) == 1 else {}


def _flags(component: dict[str, Any]) -> tuple[str, ...]:
    """The engine's command-line arguments as 'name value' (a flag alone when it has none)."""
    args = summaries.mapping_at(component, "native", "args")
    return tuple(
        name if value is None else f"{name} {_shown(value)}" for name, value in args.items()
    )


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _label(report: dict[str, Any]) -> str:
    load = summaries.mapping_at(report, "scenario", "load", "standardized")
    stage = load.get("stage")
    uid = summaries.text_or_none(summaries.mapping_at(report, "run").get("uid")) or "report"
    return f"{uid} stage {stage}" if isinstance(stage, int) and stage else uid


def _concurrency(value: Any) -> int | None:
    """A cap on requests in flight; ``.inf`` (no cap) is None, as a file without one."""
    if isinstance(value, float) and math.isinf(value) and value > 0:
        return None
    figure = summaries.number(value, "scenario.load.standardized.concurrency")
    if figure is None:
        return None
    if figure != int(figure) or figure < 1:
        raise BenchFileError(
            "a concurrency is a whole number from 1", key="scenario.load.standardized.concurrency"
        )
    return int(figure)


def _rate(value: Any) -> float | None:
    if isinstance(value, float) and math.isinf(value) and value > 0:
        return math.inf
    figure = summaries.number(value, "scenario.load.standardized.rate_qps")
    if figure is not None and figure <= 0:
        raise BenchFileError("a rate is above zero", key="scenario.load.standardized.rate_qps")
    return None if figure is None else float(figure)


def _length(load: dict[str, Any], name: str) -> int | None:
    """A sequence length as configured: its fixed value only (a distribution's centre is not
    every request's length)."""
    spec = load.get(name)
    if not isinstance(spec, dict) or spec.get("distribution") != "fixed":
        return None
    value = summaries.number(spec.get("value"), f"scenario.load.standardized.{name}.value")
    return int(value) if value is not None and value == int(value) and value >= 0 else None


def _count(value: Any, where: str) -> int | None:
    figure = summaries.number(value, f"{where}.requests.total")
    if figure is not None and (figure != int(figure) or figure < 0):
        raise BenchFileError("a count belongs here", key=f"{where}.requests.total")
    return None if figure is None else int(figure)


_ISO_DURATION = re.compile(
    r"P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?"
)


def _duration(value: Any) -> float | None:
    """Seconds from an ISO 8601 duration (``PT49.97S``, ``PT1H2M3S``)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    match = _ISO_DURATION.fullmatch(value)
    if match is None or value in ("P", "PT"):
        raise BenchFileError(f"{value!r} is not an ISO 8601 duration", key="run.time.duration")
    factors = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
    return sum(float(match[name] or 0) * factor for name, factor in factors.items())


FORMAT = register(
    BenchFormat(TOOL, "llm-d benchmark report, version 0.2 (YAML or JSON)", detect, read)
)
