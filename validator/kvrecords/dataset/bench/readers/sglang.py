"""SGLang's serving benchmark: ``python -m sglang.bench_serving --output-file F``, which
appends one JSON object per run to F (JSON Lines).

Early releases (late 2024) wrote a short key set (``mean_e2e_latency_ms``, ``median_ttft_ms``,
``median_itl_ms``, ``output_throughput``, the dataset settings); later ones add the full
mean/median/std/p99 of TTFT, TPOT, ITL and end-to-end latency, input and total throughput,
``concurrency`` and ``accept_length``. A request rate of inf is written as the JSON literal
``Infinity`` (Python's json module). Latencies are in milliseconds, as the metrics are.
"""

from __future__ import annotations

from kvrecords.dataset.bench import (
    BenchFileError,
    BenchFormat,
    BenchRun,
    decode_text,
    load_json_lines,
    register,
)
from kvrecords.dataset.bench.entry import Entry
from kvrecords.dataset.bench.readers import serving

TOOL = "sglang-bench-serving"
SETTINGS = (
    "backend",
    "dataset_name",
    "sharegpt_output_len",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
    "tag",
)


def detect(raw: bytes, name: str) -> bool:
    head = raw[:65536]
    return b'"backend"' in head and (
        b'_e2e_latency_ms"' in head or b'"total_output_tokens_retokenized"' in head
    )


def read(raw: bytes, file_name: str) -> list[BenchRun]:
    lines = decode_text(raw).split("\n")
    objects = load_json_lines(raw, infinity=True)
    runs = []
    for line, data in objects:
        if not isinstance(data, dict):
            raise BenchFileError("each line of an SGLang result is a JSON object", line, 1)
        runs.append(_run(Entry.on_line(data, lines[line - 1], line), file_name))
    if not runs:
        raise BenchFileError("the file holds no result")
    return runs


def _run(entry: Entry, file_name: str) -> BenchRun:
    entry.require("sglang.bench_serving", "backend", "completed")
    if not any(key.endswith("_e2e_latency_ms") for key in entry.values):
        entry.require("sglang.bench_serving", "mean_e2e_latency_ms")
    figures = serving.run_figures(entry, serving.SGLANG)
    accepted = entry.figure("accept_length", "acceptance_length", "mean")
    if accepted is not None:
        figures.append(accepted)
    rate, cap = serving.request_rate(entry), serving.concurrency(entry)
    entry.skip("concurrency", "the mean number of requests in flight; no metric holds it")
    entry.skip("max_concurrent_requests", "the most requests in flight at once; no metric holds it")
    entry.skip(
        "total_output_tokens_retokenized", "the output counted again by the client's tokenizer"
    )
    entry.skip("total_input_text_tokens", "the text part of total_input_tokens")
    entry.skip("total_input_vision_tokens", "the image part of total_input_tokens")
    workload = [f"{key} {entry.text(key)}" for key in SETTINGS if entry.has(key)]
    fixed = (
        entry.values.get("dataset_name") == "random" and entry.values.get("random_range_ratio") == 1
    )
    backend = entry.values.get("backend")
    model = entry.text("model_id") or entry.text("model")
    return BenchRun(
        tool=TOOL,
        file_name=file_name,
        label=serving.described(entry, rate, cap),
        figures=tuple(figures),
        concurrency=cap,
        unbounded=cap is None and entry.has("max_concurrency"),
        request_rate=rate,
        num_requests=serving.completed(entry),
        # random prompts of exactly these lengths only when the range ratio is 1
        input_tokens=entry.count("random_input_len") if fixed else None,
        output_tokens=entry.count("random_output_len") if fixed else None,
        duration_s=serving.duration_of(figures),
        # SGLang's own request API (backend sglang) is served by SGLang alone
        engine="sglang" if backend == "sglang" else None,
        model=model,
        workload=tuple(workload),
        not_imported=entry.not_imported(),
    )


FORMAT = register(
    BenchFormat(
        TOOL,
        "python -m sglang.bench_serving --output-file (JSON Lines, a run a line)",
        detect,
        read,
    )
)
