"""The reader modules; importing one registers its format (``register`` in the package)."""

from kvrecords.dataset.bench.readers import (  # noqa: F401
    aiperf,
    guidellm,
    llama_bench,
    llm_d,
    sglang,
    vllm,
)
