"""The reader modules; importing one registers its format (``register`` in the package)."""

from kvrecords.dataset.bench.readers import llama_bench, sglang, vllm  # noqa: F401
