"""KV707 memory figures: what a run measured in memory against the memory its devices have.

A peak, a KV size the engine printed, a budget or the weights' share is memory on the run's
accelerators, so it cannot exceed them. A figure the engine prints per device (a KV size of
scope per_device, vLLM's 'Available KV cache memory', 'Model loading took', its profiling
peak) is held to one device; any other to every device of the run on the reading most
favourable to the record, and to one device on the likely reading (a peak or a memory in use
is what a tool such as nvidia-smi shows per device).
"""

from __future__ import annotations

from kvrecords.checks.context import RecordContext
from kvrecords.checks.plausibility.setup import (
    Evaluation,
    HardwareReading,
    RunSetup,
    Side,
    rated_low,
    skip,
)
from kvrecords.checks.runs import Bounds, value_bounds
from kvrecords.dataset.document import JsonPath
from kvrecords.kv.units import gib
from kvrecords.problems import Rule

MEMORY_FIGURES = Rule(
    "KV707",
    "memory-figures",
    "A memory figure of a run (peak_memory_bytes, memory_in_use_bytes, kv_bytes_reported, "
    "kv_budget_bytes, weights_memory_bytes, activation_peak_bytes, allocator_cache_bytes, "
    "kv_memory_bytes) is within its accelerators' memory: one device for a figure printed per "
    "device, every device of the run on the favourable reading (an error) and one on the "
    "likely reading (a warning) otherwise.",
    "Memory that a run measured was on its devices; a peak of 95 GiB on one 80 GB H100 is a "
    "unit or copying slip, or the wrong accelerator. The device's memory is hardware/<id>.yaml's "
    "usable_gib (the driver's total); a family named without its form factor, its largest "
    "member.",
    "hardware: {accelerator: h100-sxm, count: 1}\nmetrics:\n  - {name: peak_memory_bytes, "
    "statistic: max, value: 71.2 GiB}",
    "value: 95.2 GiB\n# KV707 run 'main': memory peak_memory_bytes is above the memory of its "
    "accelerators on any reading: peak_memory_bytes 95.20 GiB is 120% of 1 x 79.65 GiB "
    "(hardware/h100-sxm.yaml usable_gib 79.65 GiB)",
)

# Figures the engine prints for one device (vLLM's worker lines), whatever the device count.
_PER_DEVICE = ("kv_budget_bytes", "weights_memory_bytes", "activation_peak_bytes")
_ON_DEVICE = (
    "peak_memory_bytes",
    "memory_in_use_bytes",
    "kv_bytes_reported",
    "kv_memory_bytes",
    "allocator_cache_bytes",
    *_PER_DEVICE,
)


def evaluate_memory_figures(record: RecordContext, setups: list[RunSetup]) -> list[Evaluation]:
    """Each memory figure of each run against its devices."""
    found = []
    for setup, run in zip(setups, record.runs, strict=True):
        for index, metric in enumerate(run.stated.get("metrics", [])):
            if metric["name"] not in _ON_DEVICE:
                continue
            path: JsonPath = (*run.path, "metrics", index, "value")
            found.append(_evaluate(record, setup, metric, path))
    return found


def _evaluate(
    record: RecordContext, setup: RunSetup, metric: dict[str, object], path: JsonPath
) -> Evaluation:
    name = str(metric["name"])
    check = f"{setup.label}: memory {name}"
    if setup.weights_offloaded or "kv_offload" in setup.techniques:
        return skip(MEMORY_FIGURES, check, path, "part of the run's memory is off the device")
    if not isinstance(setup.hardware, HardwareReading):
        return skip(MEMORY_FIGURES, check, path, setup.hardware.reason)
    if setup.device_count is None:
        return skip(MEMORY_FIGURES, check, path, "the accelerator count is null")
    bounds = value_bounds(record, path)
    if not isinstance(bounds, Bounds):
        return skip(MEMORY_FIGURES, check, path, bounds)
    hardware = setup.hardware.favourable
    memory = hardware.usable_memory_bytes
    if memory is None:
        return skip(MEMORY_FIGURES, check, path, f"{hardware.display} gives no memory size")
    per_device = name in _PER_DEVICE or metric.get("scope") == "per_device"
    devices = 1 if per_device else setup.device_count
    value = bounds.low  # the lowest reading the written figure allows

    def side(count: int) -> Side:
        return Side(
            value,
            count * memory,
            f"{name} {gib(value)}",
            f"{count} x {gib(memory)} ({hardware.display} {hardware.memory_figure})",
        )

    favourable = side(devices)
    likely = side(1)
    assumptions: tuple[str, ...] = ()
    if devices > 1:
        assumptions = (f"{name} is one device's figure, not the sum over {devices}",)
    return Evaluation(
        MEMORY_FIGURES,
        check,
        path,
        favourable,
        likely,
        assumptions=assumptions,
        unfirm=tuple(rated_low(hardware.memory_confidence, "memory", hardware)),
    )
