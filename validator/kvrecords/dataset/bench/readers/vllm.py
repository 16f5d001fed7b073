"""vLLM's serving benchmark: ``vllm bench serve --save-result`` (and ``benchmarks/
benchmark_serving.py --save-result`` before it), one JSON object per run; ``--append-result``
writes one object per line.

Key sets: 2024 releases wrote ``input_throughput`` and mean/median/p99 of TTFT, TPOT and ITL
with per-request lists (``input_lens``, ``ttfts``, ``itls``); 2025 added ``burstiness``,
``max_concurrency``, ``std_*`` and E2EL, ``--metadata`` adds free keys; ``vllm bench serve``
adds ``endpoint_type``, ``failed``, ``max_output_tokens_per_s``, ``max_concurrent_requests``.
Latencies are in milliseconds and throughputs per second, as the metrics are: no conversion.
"""

from __future__ import annotations

from typing import Any

from kvrecords.dataset.bench import (
    BenchFileError,
    BenchFormat,
    BenchRun,
    decode_text,
    load_json,
    load_json_lines,
    register,
)
from kvrecords.dataset.bench.entry import Entry
from kvrecords.dataset.bench.readers import serving

TOOL = "vllm-bench-serve"
PER_REQUEST = ("ttfts", "itls", "generated_texts", "errors", "start_times", "latencies")
SETTINGS = ("burstiness", "num_prompts", "endpoint_type", "backend", "best_of", "use_beam_search")


def detect(raw: bytes, name: str) -> bool:
    head = raw[:65536]
    serving = b'_ttft_ms"' in head and b'"request_throughput"' in head
    sglang = b'_e2e_latency_ms"' in head or b'"total_output_tokens_retokenized"' in head
    return serving and not sglang and (b'"model_id"' in head or b'"burstiness"' in head)


def read(raw: bytes, file_name: str) -> list[BenchRun]:
    text = decode_text(raw)
    try:
        objects = [(0, load_json(raw, infinity=True))]
    except BenchFileError as error:
        if not error.message.startswith("not JSON: Extra data"):
            raise
        objects = load_json_lines(raw, infinity=True)  # --append-result: one run per line
    lines = text.split("\n")
    runs = []
    for line, data in objects:
        if not isinstance(data, dict):
            raise BenchFileError("a vLLM result is a JSON object", max(line, 1), 1)
        entry = Entry.on_line(data, lines[line - 1], line) if line else Entry.in_json(data, text)
        runs.append(_run(entry, file_name))
    if not runs:
        raise BenchFileError("the file holds no result")
    return runs


def _run(entry: Entry, file_name: str) -> BenchRun:
    if not entry.has("tokenizer_id"):  # every release writes model_id and tokenizer_id
        entry.require("vllm bench serve", "model_id")
    figures = serving.run_figures(entry, serving.VLLM)
    rate, cap = serving.request_rate(entry), serving.concurrency(entry)
    failed = entry.count("failed")
    if failed:
        entry.skipped.append(
            f"failed = {failed} (requests that failed; the figures leave them out)"
        )
    entry.skip("max_concurrent_requests", "the most requests in flight at once; no metric holds it")
    entry.skip("rtfx", "an audio real-time factor")
    workload = [f"{key} {entry.text(key)}" for key in SETTINGS if entry.has(key)]
    entry.ignore("date", "label", "tokenizer_id")
    input_tokens = _same_length(entry, "input_lens")
    output_tokens = _same_length(entry, "output_lens")
    for key in PER_REQUEST:
        entry.skip(key, "per-request values the figures summarise")
    label = entry.text("label")
    return BenchRun(
        tool=TOOL,
        file_name=file_name,
        label=entry.key_prefix + label if label else serving.described(entry, rate, cap),
        figures=tuple(figures),
        concurrency=cap,
        unbounded=cap is None and entry.has("max_concurrency"),
        request_rate=rate,
        num_requests=serving.completed(entry),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        duration_s=serving.duration_of(figures),
        model=entry.text("model_id"),
        workload=tuple(workload),
        not_imported=entry.not_imported(),
    )


def _same_length(entry: Entry, key: str) -> int | None:
    """The per-request token count when every request had the same (a fixed-length dataset);
    otherwise the list is listed as not imported."""
    if key not in entry.values:
        return None
    values: Any = entry.values[key]
    whole = isinstance(values, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values
    )
    if whole and len(set(values)) == 1:
        entry.used.add(key)
        return int(values[0])
    entry.skip(key, "per-request lengths, not one length for every request")
    return None


FORMAT = register(
    BenchFormat(
        TOOL,
        "vllm bench serve --save-result JSON (benchmark_serving.py before it); JSON Lines with --append-result",
        detect,
        read,
    )
)
