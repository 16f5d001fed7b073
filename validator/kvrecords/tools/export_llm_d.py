"""Records' runs as llm-d benchmark reports (version 0.2): the data flows both ways with llm-d.

``kvrecords export --format llm-d --output FOLDER`` writes one report per run,
``<slug>.<run id>.yaml``, in the layout of llm-d-benchmark's ``BenchmarkReportV02``, which the
dataset's llm-d reader (``dataset/bench/readers/llm_d.py``) reads back to the same figures:

- ``run``: uid ``<record id>#<run id>``, the record as the experiment (``eid``), the title and
  label as the description, the run's techniques as keywords;
- ``scenario.stack``: the run's engine (name, version, flags) serving its model on its
  accelerators; ``scenario.load``: its concurrency, request rate and context (only when the
  context is one exact count: llm-d's load needs an input length);
- ``results.request_performance.aggregate``: each latency (in ms), rate and token count of the
  run whose mean is stated, with the other statistics the record states for it (``median`` as
  ``p50``, ``p99.9`` as ``p99p9``) and a standard deviation spread as ``stddev``.

What version 0.2 cannot hold is listed, never approximated: a figure without a mean beside it
(``Statistics`` requires one), a single, total or unqualified figure, an approximate value, a
range or a bound, and metrics outside request performance (hit rates, KV sizes).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import RECORD_PREFIX, discover
from kvrecords.dataset.records import Run, runs

VERSION = "0.2"
LOAD_TOOL = "not stated"  # the source's load generator, which a record does not name

# metric -> (section, quantity, units written); the reader maps each back (seconds become ms
# there; ms are written here, so nothing is converted on the way out)
QUANTITIES: dict[str, tuple[str, str, str]] = {
    "ttft_ms": ("latency", "time_to_first_token", "ms"),
    "itl_ms": ("latency", "inter_token_latency", "ms/token"),
    "tpot_ms": ("latency", "time_per_output_token", "ms/token"),
    "e2e_latency_ms": ("latency", "request_latency", "ms"),
    "input_tokens_per_s": ("throughput", "input_token_rate", "tokens/s"),
    "output_tokens_per_s": ("throughput", "output_token_rate", "tokens/s"),
    "total_tokens_per_s": ("throughput", "total_token_rate", "tokens/s"),
    "requests_per_s": ("throughput", "request_rate", "queries/s"),
    "prompt_tokens": ("requests", "input_length", "count"),
    "generated_tokens": ("requests", "output_length", "count"),
}
STATISTICS = {
    "mean": "mean",
    "median": "p50",
    "p50": "p50",
    "p75": "p75",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "p99.9": "p99p9",
    "min": "min",
    "max": "max",
}
_SECONDS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


class Report(NamedTuple):
    """One run as an llm-d report, and the run's figures the report could not hold."""

    file_name: str  # <slug>.<run id>.yaml
    report: dict[str, Any]
    not_exported: list[str]  # 'ttft_ms single: why'


def reports(root: Path, record_ids: list[str] | None = None) -> list[Report]:
    """Every run of every record (or of ``record_ids``), sorted by record and run. The dataset
    must already validate."""
    found: list[Report] = []
    for record_file in discover(root, "record"):
        if record_ids is not None and record_file.expected_id not in record_ids:
            continue
        document = read_document(record_file.path, record_file.display)
        assert isinstance(document, Document)  # export runs on a validated dataset
        found += [run_report(document.data, run) for run in runs(document.data)]
    return sorted(found, key=lambda report: report.file_name)


def run_report(data: dict[str, Any], run: Run) -> Report:
    """One run of a record as an llm-d v0.2 report."""
    stated = run.stated
    slug = str(data["id"]).removeprefix(f"{RECORD_PREFIX}/")
    aggregate, not_exported = _aggregate(stated)
    requests = stated.get("requests")
    if isinstance(requests, int):
        aggregate.setdefault("requests", {})["total"] = requests
    elif "requests" in aggregate:  # llm-d counts every request when it gives their lengths
        for length in aggregate.pop("requests").values():
            not_exported.append(f"{length['_metric']}: the run's request count is not stated")
    for section in aggregate.values():
        for quantity in section.values():
            if isinstance(quantity, dict):
                quantity.pop("_metric", None)
    report: dict[str, Any] = {
        "version": VERSION,
        "run": _run(data, run, slug),
        "scenario": {"stack": [_engine(data, stated)]},
        "results": {"request_performance": {"aggregate": aggregate}},
    }
    load = _load(data, run)
    if load is not None:
        report["scenario"]["load"] = load
    return Report(f"{slug}.{run.id}.yaml", report, not_exported)


def to_yaml(report: dict[str, Any]) -> str:
    """A report as llm-d writes its own: YAML, keys in schema order (``.inf`` for no limit)."""
    import yaml

    return str(yaml.safe_dump(report, sort_keys=False, allow_unicode=True, width=100))


def _aggregate(stated: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The run's figures by llm-d section and quantity, and those version 0.2 cannot hold."""
    by_quantity: dict[str, list[dict[str, Any]]] = {}
    not_exported: list[str] = []
    for metric in stated.get("metrics", []):
        name = f"{metric['name']} {metric['statistic']}"
        why = _why_not(metric)
        if why:
            not_exported.append(f"{name}: {why}")
            continue
        by_quantity.setdefault(metric["name"], []).append(metric)
    aggregate: dict[str, Any] = {}
    for metric_name, metrics in by_quantity.items():
        if not any(m["statistic"] == "mean" for m in metrics):
            not_exported += [
                f"{metric_name} {m['statistic']}: llm-d's Statistics needs the mean beside it"
                for m in metrics
            ]
            continue
        section, quantity, units = QUANTITIES[metric_name]
        statistics: dict[str, Any] = {"_metric": metric_name, "units": units}
        for metric in metrics:
            key = STATISTICS[metric["statistic"]]
            if key in statistics:  # median and p50 both stated: one key holds them
                not_exported.append(f"{metric_name} {metric['statistic']}: {key} is written once")
                continue
            statistics[key] = metric["value"]
            spread = metric.get("spread")
            if metric["statistic"] == "mean" and spread and spread["of"] == "std":
                statistics["stddev"] = spread["value"]
        aggregate.setdefault(section, {})[quantity] = statistics
    return aggregate, not_exported


def _why_not(metric: dict[str, Any]) -> str | None:
    if metric["name"] not in QUANTITIES:
        return "not a request-performance figure of llm-d's report"
    if metric["statistic"] not in STATISTICS:
        return f"llm-d's Statistics has no {metric['statistic']}"
    value = metric["value"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "an approximate value, a range or a bound, not one number"
    return None


def _run(data: dict[str, Any], run: Run, slug: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        "uid": f"{data['id']}#{run.id}",
        "eid": str(data["id"]),
        "description": f"{data.get('title') or slug}: {run.stated['label']}",
        "keywords": run.techniques,
    }
    seconds = _seconds(run.stated.get("duration"))
    if seconds is not None:
        found["time"] = {"duration": f"PT{seconds:g}S"}
    return found


def _engine(data: dict[str, Any], stated: dict[str, Any]) -> dict[str, Any]:
    methodology = data["methodology"]
    engine = stated.get("engine") or methodology["engine"]
    hardware = stated.get("hardware") or methodology["hardware"]
    standardized = {
        "kind": "inference_engine",
        "tool": engine["name"],
        "tool_version": engine.get("version") or "not stated",
        "role": "replica",
        "replicas": 1,
        "model": {"name": stated.get("model", data["model"])},
        "accelerator": {
            "model": hardware.get("accelerator") or hardware.get("family") or "not stated",
            "count": hardware.get("count") or 1,
            "parallelism": {},
        },
    }
    flags = engine.get("flags") or []
    return {
        "metadata": {
            "schema_version": "0.0.1",
            "label": f"{engine['name']}-0",
            "cfg_id": _digest(standardized, flags),
            "description": "The record's engine, as the source states it.",
        },
        "standardized": standardized,
        "native": {"args": _args(flags)},
    }


def _args(flags: list[str]) -> dict[str, Any]:
    """'--max-model-len 1024' as {'--max-model-len': '1024'}; a flag alone as null."""
    args: dict[str, Any] = {}
    for flag in flags:
        name, _, value = str(flag).partition(" ")
        args[name] = value or None
    return args


def _load(data: dict[str, Any], run: Run) -> dict[str, Any] | None:
    context = run.context(data)
    if isinstance(context, bool) or not isinstance(context, int):
        return None  # llm-d's load needs one input length
    stated, methodology = run.stated, data["methodology"]
    concurrency, rate = (
        stated[key] if key in stated else methodology.get(key)
        for key in ("concurrency", "request_rate")
    )
    standardized: dict[str, Any] = {
        "tool": LOAD_TOOL,
        "tool_version": LOAD_TOOL,
        "source": "unknown",
        "input_seq_len": {"distribution": "fixed", "value": context},
    }
    output = stated.get("output_tokens")
    if isinstance(output, int) and not isinstance(output, bool):
        standardized["output_seq_len"] = {"distribution": "fixed", "value": output}
    if isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0:
        standardized["rate_qps"] = rate
    elif rate == "inf":
        standardized["rate_qps"] = float("inf")
    if isinstance(concurrency, int) and not isinstance(concurrency, bool):
        standardized["concurrency"] = concurrency
    elif concurrency == "unbounded":
        standardized["concurrency"] = float("inf")
    return {
        "metadata": {"schema_version": "0.0.1", "cfg_id": _digest(standardized, [])},
        "standardized": standardized,
        "native": {},
    }


def _seconds(duration: Any) -> float | None:
    if not isinstance(duration, dict) or len(duration) != 1:
        return None
    [(unit, value)] = duration.items()
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value * _SECONDS[unit])


def _digest(standardized: dict[str, Any], flags: list[str]) -> str:
    """A component's cfg_id: the same settings give the same id (llm-d uses a hash too)."""
    text = json.dumps([standardized, flags], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
