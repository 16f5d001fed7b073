"""The published benchmark result files the bench tests read, one name each."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
BENCH = FIXTURES / "bench"
VLLM = BENCH / "vllm" / "llm-d-llama-3.2-3b-l40s-results.json"
VLLM_CONC4 = BENCH / "vllm" / "gpt-oss-120b-disagg-conc4.json"
VLLM_CONC8 = BENCH / "vllm" / "gpt-oss-120b-disagg-conc8.json"
SGLANG = BENCH / "sglang" / "llama-3.3-70b-h200-online.jsonl"
SGLANG_ONE_RUN = BENCH / "sglang" / "deepseek-v2-dp-attention-h200.jsonl"
LLAMA_JSON = BENCH / "llama-bench" / "qwen2.5-7b-q4km-rtx4080-b5163.json"
LLAMA_JSONL = BENCH / "llama-bench" / "qwen2.5-7b-q4km-rtx4080-b5163.jsonl"
LLAMA_CSV = BENCH / "llama-bench" / "qwen2.5-7b-q4km-rtx4080-b5163.csv"
LLAMA_LOG = FIXTURES / "llamacpp" / "qwen2.5-7b-instruct.log"
