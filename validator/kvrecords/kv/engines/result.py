"""What an engine allocates for a model's cache: the shared result type of the engine models.

An engine model answers one question: given a model's geometry, an engine, its version, its
options and a context, how many bytes does the engine allocate for the cache, part by part?
The answer is an ``EngineReport``: named parts (bytes and the arithmetic behind them), their
total, the log lines the engine would print for them where the engine prints such lines, and
notes on how the allocation differs from the logical figure of ``kv.arithmetic``. Where an
engine prints a size for each of several caches (llama.cpp: the full-attention cache, the
sliding-window cache, the recurrent state), each part names the cache it belongs to, so a
printed line can be checked against that cache alone.

Everything is integer arithmetic: engines allocate whole bytes. A part the model file cannot
size (a dimension it lists as unknown) has ``bytes is None`` and so does the total.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kvrecords.kv.geometry import (
    GatedDeltaNet,
    LeafGroup,
    Mamba1,
    Mamba2,
    Model,
)


class EngineError(ValueError):
    """An engine option or version the engine model cannot take; the message says why."""


class UnknownValue(EngineError):
    """A value outside the allowed set; ``allowed`` lists the values the engine accepts."""

    def __init__(self, option: str, value: object, allowed: tuple[str, ...]) -> None:
        self.option = option
        self.value = value
        self.allowed = allowed
        super().__init__(f"{option}: unknown value {value!r}; allowed: {', '.join(allowed)}")


class NotCovered(EngineError):
    """The engine model does not cover this model, option or version (never a guess)."""


class NotServed(NotCovered):
    """The engine itself refuses this model with these options or at this version."""


class NoSuchCache(EngineError):
    """The engine builds no such cache for this model, options and version."""


# The caches an engine prints a size for, as engine_accounting.cache names them: the whole
# allocation, and llama.cpp's separate memories (its non-SWA llama_kv_cache, which holds every
# attention layer when there is no separate window cache; the SWA cache; llama_memory_recurrent).
TOTAL = "total"
CACHES = (TOTAL, "full_attention", "sliding_window", "recurrent_state")


class Part(NamedTuple):
    """One allocation: a cache tensor set, a state, a padding, an indexer."""

    name: str
    bytes: int | None
    how: str
    cache: str = ""  # the printed cache it belongs to (one of CACHES); "" when only the total is


class EngineReport(NamedTuple):
    """What one engine allocates for one model at one context."""

    engine: str
    version: str  # the accounting era the figures follow (engine-specific key)
    version_note: str  # which releases or changes that era covers
    options: tuple[tuple[str, str], ...]  # the settings used, defaults included
    context_tokens: int
    context_meaning: str  # what the context is to this engine (cells, pool, request)
    parts: tuple[Part, ...]
    printed: tuple[str, ...]  # the engine's own log lines for these figures, where it prints any
    notes: tuple[str, ...]  # how the allocation differs from the logical figure

    @property
    def engine_kv_bytes(self) -> int | None:
        """Every byte the engine allocates for the cache and state at this context."""
        return bytes_of(self.parts)

    @property
    def caches(self) -> tuple[str, ...]:
        """The caches the engine prints a size for, the total first."""
        return (TOTAL, *dict.fromkeys(part.cache for part in self.parts if part.cache))

    def cache_parts(self, cache: str) -> tuple[Part, ...]:
        """The parts of one printed cache (every part for the total)."""
        check_choice("cache", cache, CACHES)
        if cache not in self.caches:
            raise NoSuchCache(
                f"{self.engine} ({self.version}) prints no {cache} cache size for this model;"
                f" the sizes it prints: {', '.join(self.caches)}"
            )
        return tuple(part for part in self.parts if cache in (TOTAL, part.cache))


def bytes_of(parts: tuple[Part, ...]) -> int | None:
    """The parts' bytes together; None when one is unknown."""
    total = 0
    for part in parts:
        if part.bytes is None:
            return None
        total += part.bytes
    return total


def check_choice(option: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise UnknownValue(option, value, allowed)
    return value


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative integers."""
    return -(-a // b)


def pad_to(value: int, multiple: int) -> int:
    """``value`` rounded up to a multiple of ``multiple`` (ggml's GGML_PAD)."""
    return cdiv(value, multiple) * multiple


def float32(value: int) -> float:
    """The value as a C ``float`` holds it (24-bit significand, round to nearest even)."""
    packed: float = struct.unpack("<f", struct.pack("<f", float(value)))[0]
    return packed


def mib_as_printed(byte_count: int) -> str:
    """``%.2f`` of ``(float) bytes / (1024.0f * 1024.0f)``: how llama.cpp prints a size in MiB.

    The byte count is first cast to a 32-bit float (llama_kv_cache constructor and the older
    llama_new_context_with_model both do); dividing by 2**20 is then exact, and printf rounds
    the exact binary value (ties to even), as Python's ``%`` formatting does.
    """
    return "%.2f" % (float32(byte_count) / (1024 * 1024))


def gib_as_printed(byte_count: int) -> str:
    """``f"{bytes / 2**30:.2f}"`` of a Python float: how vLLM and SGLang print GiB figures."""
    return f"{byte_count / (1 << 30):.2f}"


def state_split(group: LeafGroup) -> tuple[int | None, int | None]:
    """(conv elements, recurrent/SSM elements) of one layer of a state group, for engines that
    store the two in different element types. ``(0, 0)`` for groups without state."""
    if isinstance(group, GatedDeltaNet):
        return group.conv_elements(), group.recurrent_elements()
    if isinstance(group, Mamba1):
        if group.d_inner is None or group.d_state is None or group.conv_kernel is None:
            return None, None
        return (group.conv_kernel - 1) * group.d_inner, group.d_inner * group.d_state
    if isinstance(group, Mamba2):
        heads, head_dim = group.num_heads, group.head_dim
        if None in (heads, head_dim, group.n_groups, group.d_state, group.conv_kernel):
            return None, None
        assert heads is not None and head_dim is not None and group.n_groups is not None
        assert group.d_state is not None and group.conv_kernel is not None
        d_inner = heads * head_dim
        conv = (group.conv_kernel - 1) * (d_inner + 2 * group.n_groups * group.d_state)
        return conv, d_inner * group.d_state
    return 0, 0


def model_dtype_bytes(model: Model, notes: list[str]) -> int:
    """Bytes per value in the model's dtype, which vLLM's and SGLang's 'auto' cache follows
    (the config's torch_dtype); bf16 when the model file does not give it, with a note."""
    if model.dtype in ("bf16", "fp16"):
        return 2
    if model.dtype == "fp32":
        return 4
    notes.append(
        f"'auto' follows the config's torch_dtype; models/{model.id}.yaml gives"
        f" {model.dtype or 'none'}, so bf16 (2 B) is assumed"
    )
    return 2


def logical_dtype_name(model: Model) -> str:
    """The model's dtype as the model file states it ('unknown' when null)."""
    return model.dtype or "unknown"


def fmt_bytes(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,} B"
