"""``kvrecords new --from-bench``: a record drafted from public result files, its runs holding
every figure the file gives (checked by hand against the file), that validates but for what only
a person can give, and that never replaces a file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from bench_files import (
    LLAMA_CSV,
    LLAMA_JSON,
    LLAMA_LOG,
    SGLANG,
    SGLANG_ONE_RUN,
    VLLM,
    VLLM_CONC4,
    VLLM_CONC8,
)

from conftest import copy_dataset, run_cli
from kvrecords.dataset.document import Document, parse_document
from kvrecords.problems import Problem
from kvrecords.runner.validate import validate


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return copy_dataset(tmp_path / "dataset", with_records=False)


def drafted(dataset: Path, *args: str) -> tuple[Path, dict[str, Any]]:
    result = run_cli("new", *args, cwd=dataset)
    assert result.returncode == 0, result.stderr
    (path,) = (dataset / "records" / "kv-efficiency").iterdir()
    document = parse_document(path.read_bytes(), path.name)
    assert isinstance(document, Document)
    return path, document.data


def metric(run: dict[str, Any], name: str, statistic: str) -> dict[str, Any]:
    (found,) = [m for m in run["metrics"] if (m["name"], m["statistic"]) == (name, statistic)]
    return found


def test_llama_bench_draft_holds_each_test_with_its_figures(dataset: Path) -> None:
    path, data = drafted(dataset, "--from-bench", str(LLAMA_JSON))
    assert data["model"] == "qwen2.5-7b-instruct"  # models/Qwen2.5-7B-Instruct-Q4_K_M.gguf
    pp, tg = data["runs"]
    assert (pp["label"], tg["label"]) == ("pp512", "tg128")
    rate = metric(pp, "prefill_tokens_per_s", "mean")
    assert rate["value"] == 7100.002165 and rate["spread"] == {"of": "std", "value": 140.34152}
    assert rate["stated_as"] == "qwen2.5-7b-q4km-rtx4080-b5163.json: [0].avg_ts = 7100.002165"
    assert metric(pp, "prefill_ms", "mean")["value"] == 72.13564  # 72135640 ns / 1,000,000
    decode = metric(tg, "decode_tokens_per_s", "mean")
    assert (decode["value"], decode["spread"]["value"]) == (118.881588, 1.041811)
    assert (pp["context_tokens"], tg["output_tokens"]) == (512, 128)
    assert "request_rate" not in pp  # a single-sequence test has no request rate
    assert pp["kv_dtype"] == "fp16" and pp["kv_dtype_stated"] is True
    engine = data["methodology"]["engine"]
    assert (engine["name"], engine["version"]) == ("llama.cpp", "5163 (8cf427ff)")
    assert "flash_attn false" in engine["flags"] and "n_gpu_layers 99" in engine["flags"]
    assert data["methodology"]["weights_precision"] == "Q4_K_M"
    assert data["methodology"]["concurrency"] == 1
    # qwen2.5-7b-instruct at fp16: 28 layers x 4 kv heads x 128 x 2 (K+V) x 2 B = 57,344 B
    assert data["kv_bytes_basis"]["bytes_per_token"] == 28 * 4 * 128 * 2 * 2 == 57344
    assert data["measured_tps_at_ctx"] is None  # the headline pp run gives no decode rate
    # unrated, it fails only for the confidence; rated, only for the TODOs a person fills
    assert _only_confidence_and_placeholders(validate(dataset, [path]).problems)
    path.write_text(path.read_text().replace("confidence: null", "confidence: 0.5"))
    assert {p.code for p in validate(dataset, [path]).problems} == {"KV206"}


def test_vllm_draft_has_a_run_for_each_line_with_its_settings(dataset: Path) -> None:
    # the file's client backend is "vllm", which names the API, not the server: the contributor
    # says which engine served it (the llm-d harness ran vLLM)
    path, data = drafted(dataset, "--from-bench", str(VLLM), "--engine", "vllm")
    assert _only_confidence_and_placeholders(validate(dataset, [path]).problems)
    runs = data["runs"]
    assert len(runs) == 9
    assert data["model"] == "llama-3.2-3b"  # meta-llama/Llama-3.2-3B-Instruct, same geometry
    first, third = runs[0], runs[2]
    assert (first["request_rate"], third["request_rate"]) == (10.0, "inf")
    assert first["concurrency"] == "unbounded"  # "max_concurrency": null: no cap was set
    assert (first["requests"], first["duration"]) == (300, {"seconds": 35.84472489100017})
    ttft = metric(first, "ttft_ms", "median")
    assert ttft["value"] == 52.868896000063614
    assert ttft["stated_as"] == (
        "llm-d-llama-3.2-3b-l40s-results.json: line 1: median_ttft_ms = 52.868896000063614"
    )
    assert metric(third, "tpot_ms", "mean")["spread"]["value"] == 22.250639166144722
    assert len(first["metrics"]) == 15
    assert "Not imported: deployment = 'no-features'" in first["note"]
    reasons = {item["field"]: item["reason"] for item in data["not_stated"]}
    assert reasons["runs[0].context_tokens"] == "not in the benchmark output"
    assert reasons["methodology.engine.version"] == "not in the benchmark output"
    # the card is the headline run's (the first: no baseline was named)
    assert data["measured_ttft_ms_at_ctx"] == 54.59561144333596  # its first TTFT, the mean
    assert data["measured_tps_at_ctx"] == 2258.212337970085


def test_a_file_naming_no_model_needs_model(dataset: Path) -> None:
    result = run_cli("new", "--from-bench", str(SGLANG), cwd=dataset)
    assert result.returncode == 1
    assert result.stderr == (
        f"{SGLANG.name}:1:1: the file names no model; give --model ID (an id from models/)\n"
    )
    _, data = drafted(dataset, "--from-bench", str(SGLANG), "--model", "llama-3.3-70b-instruct")
    assert len(data["runs"]) == 7 and data["methodology"]["engine"]["name"] == "sglang"


def test_two_files_with_a_baseline_give_two_runs(dataset: Path) -> None:
    """InferenceX's gpt-oss-120b sweep at concurrency 4 (the baseline) and 8."""
    path, data = drafted(
        dataset, "--from-bench", str(VLLM_CONC8), "--baseline", str(VLLM_CONC4), "--engine", "vllm"
    )
    assert _only_confidence_and_placeholders(validate(dataset, [path]).problems)
    assert data["model"] == "gpt-oss-120b"  # /models/models--openai--gpt-oss-120b/snapshots/...
    baseline, treated = data["runs"]
    assert (baseline["role"], treated["role"]) == ("baseline", "treatment")
    assert baseline["label"] == "gpt-oss-120b-disagg-conc4.json: request rate inf, concurrency 4"
    assert (baseline["concurrency"], treated["concurrency"]) == (4, 8)
    assert (baseline["requests"], treated["requests"]) == (40, 80)
    assert data["headline_run"] == treated["id"]
    assert data["methodology"]["concurrency"] is None  # differs by run
    # each run's figures are its own file's
    assert metric(baseline, "e2e_latency_ms", "p99.9")["value"] == 9560.362910952654
    assert metric(treated, "e2e_latency_ms", "p99.9")["value"] == 8953.599093816709
    assert metric(treated, "output_tokens_per_s", "single")["stated_as"] == (
        "gpt-oss-120b-disagg-conc8.json: output_throughput = 928.9837604849168"
    )
    assert data["measured_ttft_ms_at_ctx"] == 122.96592185739428  # the treatment's mean TTFT


def test_a_one_run_file_of_sglang_with_its_infinity(dataset: Path) -> None:
    _, data = drafted(dataset, "--from-bench", str(SGLANG_ONE_RUN), "--model", "deepseek-v2")
    (run,) = data["runs"]
    assert run["request_rate"] == "inf"
    assert (run["context_tokens"], run["output_tokens"]) == (1, 512)


def test_several_files_give_each_file_its_runs(dataset: Path) -> None:
    _, data = drafted(
        dataset, "--from-bench", str(LLAMA_CSV), str(LLAMA_JSON), "--baseline", str(LLAMA_JSON)
    )
    roles = [(run["label"], run["role"]) for run in data["runs"]]
    assert roles == [
        ("qwen2.5-7b-q4km-rtx4080-b5163.csv: pp512", "treatment"),
        ("qwen2.5-7b-q4km-rtx4080-b5163.csv: tg128", "treatment"),
        ("qwen2.5-7b-q4km-rtx4080-b5163.json: pp512", "baseline"),
        ("qwen2.5-7b-q4km-rtx4080-b5163.json: tg128", "baseline"),
    ]


def test_a_startup_log_fills_kv_bytes_reported_and_its_engine_accounting(dataset: Path) -> None:
    path, data = drafted(dataset, "--from-bench", str(LLAMA_JSON), "--log", str(LLAMA_LOG))
    reported = metric(data["runs"][0], "kv_bytes_reported", "single")
    # line 24: "size =   56.00 MiB (  1024 cells, ...), K (f16): ..., V (f16): ..."
    assert reported["value"] == "56.00 MiB" and reported["scope"] == "pool"
    assert reported["engine_accounting"]["context_tokens"] == 1024
    assert reported["engine_accounting"]["options"] == {
        "cache_type_k": "f16",
        "cache_type_v": "f16",
        "flash_attn": "on",  # line 19: flash_attn = enabled
    }
    assert reported["stated_as"].startswith("qwen2.5-7b-instruct.log:24: llama_kv_cache: size")
    assert metric(data["runs"][0], "kv_tokens_reported", "single")["value"] == 1024
    # the engine model agrees: 57,344 B/token x 1,024 cells = 58,720,256 B = 56.00 MiB
    path.write_text(path.read_text().replace("confidence: null", "confidence: 0.5"))
    assert {p.code for p in validate(dataset, [path]).problems} == {"KV206"}


def test_never_overwrites_a_record(dataset: Path) -> None:
    path, _ = drafted(dataset, "--from-bench", str(LLAMA_JSON))
    before = path.read_bytes()
    result = run_cli("new", "--from-bench", str(LLAMA_CSV), "--slug", path.stem, cwd=dataset)
    assert result.returncode == 1 and "already exists" in result.stderr
    assert path.read_bytes() == before


def test_a_model_no_id_matches_gets_a_todo_naming_the_nearest(
    dataset: Path, tmp_path: Path
) -> None:
    text = LLAMA_JSON.read_text(encoding="utf-8").replace(
        "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Qwen2.5-7B-Instruct-abliterated-Q4_K_M.gguf"
    )
    path = tmp_path / "renamed.json"
    path.write_text(text, encoding="utf-8")
    result = run_cli("new", "--from-bench", str(path), cwd=dataset)
    assert result.returncode == 0, result.stderr
    assert "TODO: the file names the model" in result.stdout
    (draft,) = (dataset / "records" / "kv-efficiency").iterdir()
    notes = parse_document(draft.read_bytes(), draft.name).data["notes"]  # type: ignore[union-attr]
    assert notes.startswith(
        "TODO: the file names the model 'models/Qwen2.5-7B-Instruct-abliterated-Q4_K_M.gguf', "
        "which no models/ id matches; the nearest are qwen2.5-7b-instruct"
    )


def test_contributing_path_from_a_result_file_to_a_record_that_passes_make_check(
    dataset: Path, tmp_path: Path
) -> None:
    """CONTRIBUTING.md, 'I measured it myself': draft, say where it is published and rate it,
    replace the TODOs, format; then validate and fmt --check (what make check runs) pass."""
    from kvrecords.tools.fmt import format_data, load_schema

    bench = tmp_path / "bench.json"
    shutil.copyfile(LLAMA_JSON, bench)
    slug = "llamacpp-qwen25-7b-q4km-rtx4080-pp512-tg128"
    path, data = drafted(dataset, "--from-bench", str(bench), "--slug", slug)
    readme = (
        "https://github.com/ggml-org/llama.cpp/blob/5a32f10adf766d67ebc31e3525a257ce57956ca2/"
        "tools/llama-bench/README.md"
    )
    data["title"] = (
        "llama-bench b5163, Qwen2.5-7B-Instruct Q4_K_M on one RTX 4080 with f16 KV: pp512 and tg128"
    )
    data["methodology"]["source"].update(
        publisher="ggml-org (llama.cpp)",
        title="llama.cpp/tools/llama-bench README",
        url=readme,
        locator="Output formats, JSON",
        citation="llama.cpp repository, tools/llama-bench/README.md, 'Output formats: JSON' "
        "(commit 5a32f10a), the example run of build 5163 on 2025-04-24",
    )
    data["methodology"]["workload"] = (
        "llama-bench's default tests: a 512-token prompt processed at once (pp512) and 128 "
        "tokens generated one at a time (tg128), each repeated five times, one sequence."
    )
    data["notes"] = "The README's example output: a single-card prefill and decode rate."
    data["confidence"] = 0.6
    data["confidence_reason"] = (
        "The tool's own result file with build, model file, cache types and GPU; the card's "
        "form factor and the reason for the run are not given."
    )
    filled = {"methodology.source.title", "methodology.source.url", "methodology.source.locator"}
    data["not_stated"] = [
        item if "TODO" not in item["reason"] else {**item, "reason": "The README gives no date."}
        for item in data["not_stated"]
        if item["field"] not in filled
    ]
    path.write_text(format_data(data, "record", load_schema(dataset, "record")), encoding="utf-8")
    assert "TODO" not in path.read_text(encoding="utf-8")
    relative = str(path.relative_to(dataset))
    checked = run_cli("validate", relative, cwd=dataset)
    assert checked.returncode == 0, checked.stdout
    assert "no problems" in checked.stdout
    assert run_cli("fmt", "--check", relative, cwd=dataset).returncode == 0
    # the figures are still the file's
    pp = data["runs"][0]
    assert metric(pp, "prefill_tokens_per_s", "mean")["value"] == 7100.002165


def test_an_sglang_log_gives_the_whole_bytes_its_rounded_sizes_allow(tmp_path: Path) -> None:
    """The line records/kv-efficiency/sglang-kv-pool-qwq-32b-4xl4-tp4.yaml quotes (from
    didier-durand/llms-in-clouds docs/sglang.md): K and V each printed to 0.01 GiB."""
    from kvrecords.tools.bench_draft import _log_metrics

    log = tmp_path / "server.log"
    log.write_text(
        "server_args=ServerArgs(model_path='Qwen/QwQ-32B', tp_size=4, page_size=1, )\n"
        "[2025-03-08 12:29:21 TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, "
        "V size: 1.42 GB\n",
        encoding="utf-8",
    )
    reported, tokens = _log_metrics(log)
    # K + V in [2.83, 2.85) GiB: 2.83 x 2^30 = 3,038,689,361.92 -> 3,038,689,362 whole bytes;
    # 2.85 x 2^30 = 3,060,164,198.4 -> 3,060,164,198; the record holds the same range
    assert reported["value"] == {"min": 3038689362, "max": 3060164198}
    assert reported["engine_accounting"]["context_tokens"] == 46611
    assert reported["engine_accounting"]["options"] == {"tp_size": 4}
    assert (tokens["name"], tokens["value"]) == ("kv_tokens_reported", 46611)


def test_a_vllm_log_gives_its_pool_in_tokens_and_the_memory_left_for_it(tmp_path: Path) -> None:
    """vLLM prints no KV size in bytes; its token capacity and KV budget are what it gives."""
    from kvrecords.tools.bench_draft import _log_metrics

    log = tmp_path / "server.log"
    log.write_text(
        "INFO 05-30 [gpu_worker.py:227] Available KV cache memory: 8.11 GiB\n"
        "INFO 05-30 [kv_cache_utils.py:634] GPU KV cache size: 178,880 tokens\n",
        encoding="utf-8",
    )
    budget, tokens = _log_metrics(log)
    assert (budget["name"], budget["value"]) == ("kv_budget_bytes", "8.11 GiB")
    assert (tokens["name"], tokens["value"], tokens["scope"]) == (
        "kv_tokens_reported",
        178880,
        "pool",
    )
    assert (
        tokens["stated_as"]
        == "server.log:2: INFO 05-30 [kv_cache_utils.py:634] GPU KV cache size: 178,880 tokens"
    )


def test_a_log_without_a_cache_line_is_refused(dataset: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("INFO starting\n", encoding="utf-8")
    result = run_cli("new", "--from-bench", str(LLAMA_JSON), "--log", str(log), cwd=dataset)
    assert result.returncode == 1 and "no cache figures found" in result.stderr
    assert list((dataset / "records" / "kv-efficiency").iterdir()) == []


def test_runs_of_another_engine_or_model_say_so(dataset: Path) -> None:
    """An SGLang file beside a vLLM file: each run keeps its engine and its model."""
    _, data = drafted(
        dataset, "--from-bench", str(VLLM_CONC4), str(SGLANG_ONE_RUN), "--engine", "vllm"
    )
    vllm_run, sglang_run = data["runs"]
    assert data["model"] == "gpt-oss-120b" and data["methodology"]["engine"]["name"] == "vllm"
    assert "engine" not in vllm_run and "model" not in vllm_run
    assert sglang_run["engine"] == {"name": "sglang", "version": None}
    # the SGLang file names no model: a person says whether it is the record's
    assert "model" not in sglang_run
    assert sglang_run["note"].startswith("TODO: the file names no model")


def test_result_files_follow_from_bench(dataset: Path) -> None:
    result = run_cli("new", str(LLAMA_JSON), cwd=dataset)
    assert result.returncode == 2 and "result files follow --from-bench" in result.stderr
    result = run_cli("new", "--baseline", str(LLAMA_JSON), cwd=dataset)
    assert result.returncode == 2 and "go with --from-bench" in result.stderr


def _only_confidence_and_placeholders(problems: list[Problem]) -> bool:
    """What a draft fails for before a person fills it: the confidence to rate (the one schema
    error) and the placeholders left to write, listed beside it."""
    codes = [problem.code for problem in problems]
    return codes.count("KV101") == 1 and set(codes) <= {"KV101", "KV206"}


def test_a_serving_benchmark_that_names_no_engine_needs_engine(dataset: Path) -> None:
    """vllm bench serve measures any OpenAI-compatible server: a file whose backend is the
    generic "openai" client is not assumed to be vLLM."""
    result = run_cli("new", "--from-bench", str(VLLM_CONC4), cwd=dataset)
    assert result.returncode == 1
    assert "does not name the engine that served it" in result.stderr
    assert "give --engine" in result.stderr and "Traceback" not in result.stderr
    assert not list((dataset / "records" / "kv-efficiency").glob("*gpt-oss-120b*"))
