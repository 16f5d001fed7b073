"""What vLLM's and SGLang's serving benchmarks share: per-request latencies summarised as
``<statistic>_<name>_ms`` keys (``mean_ttft_ms``, ``median_itl_ms``, ``std_tpot_ms``,
``p99_e2el_ms``), all in milliseconds like the metrics they map to, and run-wide throughputs;
one table of them, with each tool's name for each figure.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from kvrecords.dataset.bench import BenchFigure
from kvrecords.dataset.bench.entry import Entry

# The percentiles the record's statistic vocabulary holds; 'p99.9' is how vLLM names 99.9
RECORD_PERCENTILES = frozenset({"p50", "p75", "p90", "p95", "p99", "p99.9"})
LATENCY_KEY = re.compile(
    r"^(mean|median|std|max|min|p[0-9]{1,2}(?:\.[0-9]{1,3})?)_([a-z0-9_]+?)_ms$"
)


def latency_figures(entry: Entry, names: dict[str, str]) -> list[BenchFigure | None]:
    """Every ``<statistic>_<name>_ms`` key whose name ``names`` maps to a metric; the mean
    carries the std beside it as its spread. A percentile the vocabulary has no name for is
    listed as not imported."""
    figures: list[BenchFigure | None] = []
    for key in list(entry.values):
        match = LATENCY_KEY.match(key)
        if match is None or match[2] not in names:
            continue
        statistic, name = match[1], match[2]
        metric = names[name]
        if statistic == "std":
            if not entry.has(f"mean_{name}_ms"):
                entry.skip(key, "a standard deviation without the mean it spreads around")
            continue  # read with the mean
        if statistic.startswith("p") and statistic not in RECORD_PERCENTILES:
            entry.skip(key, f"the statistic {statistic} is not in the record's vocabulary")
            continue
        spread_key = f"std_{name}_ms" if statistic == "mean" else None
        figures.append(entry.figure(key, metric, statistic, spread_key=spread_key))
    return figures


def request_rate(entry: Entry, key: str = "request_rate") -> float | None:
    """Requests per second the load generator sent; math.inf for every request at once, which
    vLLM writes as the text 'inf' and SGLang as the JSON literal Infinity."""
    if entry.values.get(key) == "inf":
        entry.used.add(key)
        return math.inf
    rate = entry.number(key, infinite=True)
    if rate is None:
        return None
    if rate <= 0 or rate == -math.inf:
        raise entry.error(key, f"{key} is {rate}; a rate is above zero")
    return float(rate)


def concurrency(entry: Entry, key: str = "max_concurrency") -> int | None:
    """The cap on requests in flight; None when the file says none was set (null)."""
    value = entry.count(key)
    if value == 0:
        raise entry.error(key, f"{key} is 0; a concurrency cap is at least 1")
    return value


# The figures both tools give, each under (vLLM's name, SGLang's name); None where the tool
# writes none. A latency's name is the <name> of its <statistic>_<name>_ms keys.
LATENCY_NAMES = {
    "ttft_ms": ("ttft", "ttft"),
    "tpot_ms": ("tpot", "tpot"),
    "itl_ms": ("itl", "itl"),
    "e2e_latency_ms": ("e2el", "e2e_latency"),
}
RATE_KEYS = (  # run-wide rates: (metric, statistic, names)
    ("requests_per_s", "single", ("request_throughput", "request_throughput")),
    ("goodput_requests_per_s", "single", ("request_goodput", None)),
    ("input_tokens_per_s", "single", ("input_throughput", "input_throughput")),
    ("output_tokens_per_s", "single", ("output_throughput", "output_throughput")),
    ("total_tokens_per_s", "single", ("total_token_throughput", "total_throughput")),
    # the peak one-second window
    ("output_tokens_per_s", "max", ("max_output_tokens_per_s", "max_output_tokens_per_s")),
)


class Keys(NamedTuple):
    """One tool's names for the figures of ``LATENCY_NAMES`` and ``RATE_KEYS``."""

    latencies: dict[str, str]  # the <name> of <statistic>_<name>_ms keys -> metric
    rates: tuple[tuple[str, str, str], ...]  # (key, metric, statistic)


def _keys(tool: int) -> Keys:
    """The names in place ``tool`` of each row (0 vLLM, 1 SGLang)."""
    latencies = {names[tool]: metric for metric, names in LATENCY_NAMES.items()}
    rates = tuple(
        (key, metric, statistic)
        for metric, statistic, names in RATE_KEYS
        if (key := names[tool]) is not None
    )
    return Keys(latencies, rates)


VLLM, SGLANG = _keys(0), _keys(1)


def run_figures(entry: Entry, keys: Keys) -> list[BenchFigure]:
    """The figures a serving benchmark gives for a run, under the tool's ``keys``: latencies,
    run-wide rates (token rates over the whole run: aggregate), the prompt and output token
    totals, the run's duration."""
    figures = latency_figures(entry, keys.latencies)
    for key, metric, statistic in keys.rates:
        scope = "aggregate" if metric.endswith("tokens_per_s") else None
        figures.append(entry.figure(key, metric, statistic, scope=scope))
    figures.append(entry.figure("total_input_tokens", "prompt_tokens", "total"))
    figures.append(entry.figure("total_output_tokens", "generated_tokens", "total"))
    figures.append(entry.figure("duration", "wall_time_s", "single"))
    return [figure for figure in figures if figure is not None]


def described(entry: Entry, rate: float | None, cap: int | None) -> str:
    """A run's label: where it is in the file, its request rate and concurrency cap."""
    parts = []
    if rate is not None:
        parts.append("request rate " + ("inf" if rate == math.inf else f"{rate:g}/s"))
    if cap:
        parts.append(f"concurrency {cap}")
    return entry.key_prefix + (", ".join(parts) or "the run")


def duration_of(figures: list[BenchFigure]) -> float | None:
    return next((float(f.value) for f in figures if f.metric == "wall_time_s"), None)


def completed(entry: Entry) -> int | None:
    """The requests that finished; none finishing leaves no measurement to import."""
    count = entry.count("completed")
    if count == 0:
        raise entry.error("completed", "completed is 0: no request finished, nothing was measured")
    return count
