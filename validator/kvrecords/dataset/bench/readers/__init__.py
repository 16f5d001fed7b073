"""Every benchmark result format the dataset reads; importing this package registers them."""

from kvrecords.dataset.bench.readers import aiperf, guidellm, llm_d  # noqa: F401
