"""The vLLM, SGLang and llama-bench readers on public result files: every figure, its metric,
statistic, spread and unit, checked by hand against the file (tests/fixtures/bench/*/README.md
says where each file was published)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from bench_files import (
    LLAMA_CSV,
    LLAMA_JSON,
    LLAMA_JSONL,
    SGLANG,
    SGLANG_ONE_RUN,
    VLLM,
    VLLM_CONC4,
)

from kvrecords.dataset.bench import (
    BenchRun,
    WrittenFloat,
    WrittenInt,
    known_formats,
    load_json,
    load_yaml,
    read_bench_file,
    stated_as,
    written,
)
from kvrecords.dataset.bench.readers.summaries import other_entries


def figures(run: BenchRun) -> dict[tuple[str, str], tuple[float, float | None]]:
    """(metric, statistic) -> (value, spread)."""
    return {(f.metric, f.statistic): (f.value, f.spread) for f in run.figures}


def test_vllm_the_first_run_holds_every_figure_of_line_1() -> None:
    runs = read_bench_file(VLLM)
    assert len(runs) == 9  # nine lines, one run each
    run = runs[0]
    # line 1 of the file, copied by hand
    assert figures(run) == {
        ("ttft_ms", "mean"): (54.59561144333596, 10.45418108071603),
        ("ttft_ms", "median"): (52.868896000063614, None),
        ("ttft_ms", "p99"): (98.69780922984769, None),
        ("tpot_ms", "mean"): (13.710971568239172, 0.9966270621573491),
        ("tpot_ms", "median"): (13.686303201518745, None),
        ("tpot_ms", "p99"): (15.793261194984588, None),
        ("itl_ms", "mean"): (13.73187330695019, 4.023339545674027),
        ("itl_ms", "median"): (13.098381999952835, None),
        ("itl_ms", "p99"): (34.48662216016601, None),
        ("requests_per_s", "single"): (8.369432347779671, None),
        ("output_tokens_per_s", "single"): (2258.212337970085, None),
        ("total_tokens_per_s", "single"): (10619.275253401978, None),
        ("prompt_tokens", "total"): (299700, None),
        ("generated_tokens", "total"): (80945, None),
        ("wall_time_s", "single"): (35.84472489100017, None),
    }
    assert (run.request_rate, run.concurrency, run.unbounded) == (10.0, None, True)
    assert (run.num_requests, run.duration_s) == (300, 35.84472489100017)
    assert run.model == "meta-llama/Llama-3.2-3B-Instruct"
    assert "burstiness 1.0" in run.workload and "num_prompts 300" in run.workload
    output = next(f for f in run.figures if f.key == "line 1: output_throughput")
    assert output.scope == "aggregate"
    assert stated_as(run, output) == (
        "llm-d-llama-3.2-3b-l40s-results.json: line 1: output_throughput = 2258.212337970085"
    )


def test_vllm_percentiles_and_e2el_of_a_2026_file() -> None:
    (run,) = read_bench_file(VLLM_CONC4)
    found = figures(run)
    # --percentile-metrics ttft,tpot,itl,e2el with p90, p99, p99.9: 4 x (mean, median, p90,
    # p99, p99.9) = 20 latency figures, + 3 rates + 2 totals + the duration = 26
    assert len(found) == 26
    assert found[("e2e_latency_ms", "mean")] == (8910.336709150579, 289.10261376307136)
    assert found[("ttft_ms", "p99.9")] == (1082.7990462793985, None)
    assert found[("itl_ms", "p90")] == (8.471527020446956, None)
    assert (run.concurrency, run.unbounded, run.request_rate) == (4, False, math.inf)
    assert (run.num_requests, run.duration_s) == (40, 89.19548447802663)
    assert "best_of 1" in run.workload
    assert run.label == "request rate inf, concurrency 4"


def test_vllm_request_rate_inf_is_every_request_at_once() -> None:
    run = read_bench_file(VLLM)[2]  # line 3: "request_rate": "inf"
    assert run.request_rate == math.inf
    assert figures(run)[("ttft_ms", "mean")] == (4386.739448253334, 2469.091218460141)


def test_vllm_lists_every_key_it_does_not_import() -> None:
    """The --metadata keys and the misspelt 'request_goodput:' are not dropped silently."""
    run = read_bench_file(VLLM)[0]
    listed = {item.split(" = ")[0] for item in run.not_imported}
    assert listed == {
        "deployment",
        "gpu",
        "model",
        "gateway",
        "prefill_replicas",
        "decode_replicas",
        "input_len",
        "output_len",
        "request_goodput:",
    }


@pytest.mark.parametrize(
    "path", [VLLM, VLLM_CONC4, SGLANG, SGLANG_ONE_RUN, LLAMA_JSON, LLAMA_JSONL]
)
def test_every_key_of_every_entry_is_imported_or_listed(path: Path) -> None:
    """No key of a real file disappears: each is a figure's key, a setting, or not imported."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("["):
        entries = json.loads(text)
    else:
        entries = [json.loads(line, parse_constant=float) for line in text.splitlines() if line]
    runs = read_bench_file(path)
    assert len(runs) == len(entries)
    settings = {"model_id", "model_filename", "request_rate", "max_concurrency", "completed"}
    settings |= {"n_prompt", "n_gen", "n_depth", "type_k", "type_v", "build_number"}
    settings |= {"build_commit", "gpu_info", "cpu_info", "model_type", "date", "tokenizer_id"}
    settings |= {"test_time", "label"}
    for entry, run in zip(entries, runs, strict=True):
        # 'line 3: median_ttft_ms', '[1].avg_ts' -> the entry's own key
        figure_keys = {re.sub(r"^\[\d+\]\.", "", f.key.split(": ")[-1]) for f in run.figures}
        spreads = {"std" + k.removeprefix("mean") for k in figure_keys if k.startswith("mean_")}
        spreads |= {"stddev_ts", "stddev_ns"} & set(entry)
        listed = {item.split(" = ")[0] for item in run.not_imported}
        written_facts = {fact.split(" ")[0] for fact in run.workload + run.flags}
        accounted = figure_keys | spreads | listed | written_facts | settings
        assert set(entry) <= accounted, set(entry) - accounted


def test_sglang_the_first_run_holds_every_figure_of_line_1() -> None:
    runs = read_bench_file(SGLANG)
    assert len(runs) == 7
    run = runs[0]
    assert figures(run) == {
        ("e2e_latency_ms", "mean"): (7840.616212638561, None),
        ("e2e_latency_ms", "median"): (7819.046192569658, None),
        ("ttft_ms", "median"): (85.74514742940664, None),
        ("itl_ms", "median"): (13.638956006616354, None),
        ("output_tokens_per_s", "single"): (537.4142851849319, None),
        ("prompt_tokens", "total"): (152612, None),
        ("generated_tokens", "total"): (160347, None),
        ("wall_time_s", "single"): (298.3675805060193, None),
    }
    assert (run.request_rate, run.unbounded, run.num_requests) == (1.0, True, 300)
    assert run.engine == "sglang"  # --backend sglang: SGLang's own API
    # random_range_ratio 0.0: lengths vary up to 1024, so no fixed length is claimed
    assert (run.input_tokens, run.output_tokens) == (None, None)
    assert "random_input_len 1024" in run.workload
    assert run.not_imported == (
        "total_output_tokens_retokenized = 160192 (the output counted again by the client's "
        "tokenizer)",
    )
    assert [r.label for r in runs][5] == "line 6: request rate 4/s"  # the ShareGPT run


def test_sglang_infinity_is_a_request_rate_of_inf_and_range_ratio_1_fixes_the_lengths() -> None:
    (run,) = read_bench_file(SGLANG_ONE_RUN)
    assert run.request_rate == math.inf
    assert (run.input_tokens, run.output_tokens, run.num_requests) == (1, 512, 10000)
    assert figures(run)[("ttft_ms", "median")] == (10014.104524045251, None)


def test_llama_bench_json_pp_and_tg_with_their_spread_and_nanoseconds_in_ms() -> None:
    pp, tg = read_bench_file(LLAMA_JSON)
    assert pp.label == "pp512" and tg.label == "tg128"
    # avg_ts 7100.002165 +- stddev_ts 140.341520; avg_ns 72135640 ns / 1,000,000 = 72.13564 ms,
    # stddev_ns 1453752 ns = 1.453752 ms
    assert figures(pp) == {
        ("prefill_tokens_per_s", "mean"): (7100.002165, 140.34152),
        ("prefill_ms", "mean"): (72.13564, 1.453752),
    }
    assert figures(tg) == {("decode_tokens_per_s", "mean"): (118.881588, 1.041811)}
    assert [f.scope for f in tg.figures] == ["per_sequence"]
    prefill_ms = next(f for f in pp.figures if f.metric == "prefill_ms")
    assert stated_as(pp, prefill_ms) == (
        "qwen2.5-7b-q4km-rtx4080-b5163.json: [0].avg_ns = 72135640 (72.13564 ms)"
    )
    rate = next(f for f in pp.figures if f.metric == "prefill_tokens_per_s")
    assert rate.raw == "7100.002165" and rate.key == "[0].avg_ts"
    assert (pp.input_tokens, pp.output_tokens, pp.depth_tokens) == (512, None, 0)
    assert (tg.input_tokens, tg.output_tokens) == (None, 128)
    assert pp.engine == "llama.cpp" and pp.engine_version == "5163 (8cf427ff)"
    assert pp.kv_cache_types == ("f16", "f16")
    assert "flash_attn false" in pp.flags and "n_gpu_layers 99" in pp.flags
    assert pp.hardware == "NVIDIA GeForce RTX 4080"
    assert pp.weights == "qwen2 7B Q4_K - Medium"
    assert pp.model == "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf"


def test_llama_bench_csv_reads_the_quoted_numbers() -> None:
    pp, tg = read_bench_file(LLAMA_CSV)
    # "7285.676949","100.064434"; "70285660" ns = 70.28566 ms, "982040" ns = 0.98204 ms
    assert figures(pp) == {
        ("prefill_tokens_per_s", "mean"): (7285.676949, 100.064434),
        ("prefill_ms", "mean"): (70.28566, 0.98204),
    }
    assert figures(tg) == {("decode_tokens_per_s", "mean"): (119.915244, 0.430617)}
    assert pp.figures[0].key == "line 2: avg_ts"
    assert "flash_attn 0" in pp.flags  # the CSV writes booleans as 0 and 1


def test_llama_bench_jsonl() -> None:
    pp, tg = read_bench_file(LLAMA_JSONL)
    assert figures(pp)[("prefill_tokens_per_s", "mean")] == (7263.609157, 90.940578)
    assert figures(tg)[("decode_tokens_per_s", "mean")] == (119.844681, 0.699739)


def test_llama_bench_depth_and_differing_settings_name_the_runs(tmp_path: Path) -> None:
    """-d 0,512 with -ctk f16,q8_0: the depth joins the context, the differing cache type the
    label, and K and V kept apart."""
    entries = json.loads(LLAMA_JSON.read_text(encoding="utf-8"))
    deeper = dict(entries[0], n_depth=512, type_k="q8_0")
    path = tmp_path / "depth.json"
    path.write_text(json.dumps([entries[0], deeper]), encoding="utf-8")
    first, second = read_bench_file(path)
    assert first.label == "pp512, type_k f16" and second.label == "pp512 @ d512, type_k q8_0"
    assert (second.input_tokens, second.depth_tokens) == (512, 512)
    assert second.kv_cache_types == ("q8_0", "f16")


@pytest.mark.parametrize(
    ("path", "tool"),
    [
        (VLLM, "vllm-bench-serve"),
        (VLLM_CONC4, "vllm-bench-serve"),
        (SGLANG, "sglang-bench-serving"),
        (SGLANG_ONE_RUN, "sglang-bench-serving"),
        (LLAMA_JSON, "llama-bench"),
        (LLAMA_JSONL, "llama-bench"),
        (LLAMA_CSV, "llama-bench"),
    ],
)
def test_each_file_is_recognised_as_its_own_tool_only(path: Path, tool: str) -> None:
    raw = path.read_bytes()
    mine = {"vllm-bench-serve", "sglang-bench-serving", "llama-bench"}
    formats = known_formats()
    assert {name for name in mine if formats[name].detect(raw, path.name)} == {tool}
    assert {run.tool for run in read_bench_file(path)} == {tool}


def test_vllm_bench_serve_later_keys(tmp_path: Path) -> None:
    """An object written here with the keys vllm bench serve added after May 2025 (no public
    file with them was found): failed requests, the peak output rate (a max), a p90 the
    vocabulary holds and a p25 it does not, E2EL, and a concurrency cap."""
    result = {
        "date": "20250901-120000",
        "endpoint_type": "openai",
        "label": None,
        "model_id": "Qwen/Qwen3-8B",
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 16,
        "duration": 20.5,
        "completed": 99,
        "failed": 1,
        "request_throughput": 4.8,
        "max_output_tokens_per_s": 2100.0,
        "max_concurrent_requests": 16,
        "rtfx": 0.0,
        "mean_e2el_ms": 3000.5,
        "std_e2el_ms": 120.25,
        "p90_ttft_ms": 410.0,
        "p25_ttft_ms": 90.0,
        "mean_ttft_ms": 200.0,
    }
    path = tmp_path / "later.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    (run,) = read_bench_file(path)
    found = figures(run)
    assert found[("output_tokens_per_s", "max")] == (2100.0, None)
    assert found[("e2e_latency_ms", "mean")] == (3000.5, 120.25)
    assert found[("ttft_ms", "p90")] == (410.0, None)
    assert ("ttft_ms", "p25") not in found
    assert (run.concurrency, run.unbounded, run.num_requests) == (16, False, 99)
    listed = " | ".join(run.not_imported)
    assert "p25_ttft_ms = 90.0 (the statistic p25 is not in the record's vocabulary)" in listed
    assert "failed = 1" in listed and "max_concurrent_requests = 16" in listed
    assert "rtfx = 0.0" in listed


def test_vllm_per_request_lengths_give_the_length_only_when_all_agree(tmp_path: Path) -> None:
    """2024 files kept every request's lengths: one length for all is the run's, else listed."""
    result = json.loads(VLLM_CONC4.read_text(encoding="utf-8"))
    result.update(input_lens=[1024, 1024, 1024], output_lens=[1024, 1000, 1024])
    path = tmp_path / "lens.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    (run,) = read_bench_file(path)
    assert (run.input_tokens, run.output_tokens) == (1024, None)
    assert (
        "output_lens = a list of 3 values (per-request lengths, not one length for every "
        "request)" in run.not_imported
    )


def test_numbers_keep_the_text_the_file_wrote_them_as() -> None:
    """JSON and YAML numbers compare and compute as numbers and are shown as written."""
    data = load_json(b'{"ttft": 140.341520, "count": 500}')
    ttft, count = data["ttft"], data["count"]
    assert isinstance(ttft, WrittenFloat) and isinstance(ttft, float)
    assert isinstance(count, WrittenInt) and isinstance(count, int)
    assert (written(ttft), written(count)) == ("140.341520", "500")
    assert ttft == 140.34152 and count * 2 == 1000
    yaml_data = load_yaml(b"rate: 2.50\nrequests: 64\n")
    assert (written(yaml_data["rate"]), written(yaml_data["requests"])) == ("2.50", "64")
    assert isinstance(yaml_data["requests"], int) and yaml_data["rate"] == 2.5


def test_other_entries_lists_what_a_section_holds_beyond_what_is_read() -> None:
    section = {"aggregate": {"ttft": 1}, "per_request": [1, 2], "note": "x", "rate": 2.5}
    assert other_entries(section, "results.", ("aggregate",), "not read") == [
        "results.per_request (not read)",  # a list: its whole subtree, no value
        "results.note = x (not read)",
        "results.rate = 2.5 (not read)",
    ]
    assert other_entries(section, "", section, "not read") == []
