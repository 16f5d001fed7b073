"""The cache element types vLLM and TensorRT-LLM accept, in a module that imports nothing, so the
command line offers them without loading the engine models (their one home; the engine models
import them from here)."""

from __future__ import annotations

# vLLM's --kv-cache-dtype (config/cache.py CacheDType, the newest release covered); the first
# release accepting each newer name is kv/engines/vllm.py DTYPE_SINCE
VLLM_KV_CACHE_DTYPES = (
    "auto",
    "bfloat16",
    "float16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "int8_per_token_head",
    "fp8_per_token_head",
    "nvfp4",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
)
# TensorRT-LLM's KvCacheConfig dtype (kv/engines/tensorrt_llm.py sizes each)
TENSORRT_LLM_KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "int8", "nvfp4")
