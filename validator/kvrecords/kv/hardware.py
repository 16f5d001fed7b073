"""Accelerator figures (from hardware/<id>.yaml): what the plausibility checks divide by.

Every figure is per device and exact (a ``Fraction`` of the value as written):
- memory in bytes, from ``memory.usable_gib`` (GiB, 2^30 B); where the driver reports no total
  (unified memory) the nominal capacity stands in, flagged ``memory_is_nominal``;
- bandwidth in bytes/s, decimal (GB/s x 10^9), the highest figure a source gives;
- dense peak FLOP/s per compute type, the most generous figure that applies: the
  FP16-accumulate rate on GeForce cards, an upper-bound hint where it is larger.
A ceiling built from these figures must never flag a real measurement, so each is the most
lenient reading of the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any, NamedTuple

from kvrecords.kv.units import BYTE_UNITS, exact

GIB = BYTE_UNITS["GiB"]
GB = BYTE_UNITS["GB"]
TERA = 10**12

# Compute types the checks know, and the catalog keys each one's peak may come from.
PEAK_KEYS: dict[str, tuple[str, ...]] = {
    "bf16": ("bf16",),
    "fp16": ("fp16", "fp16_fp16_accumulate"),
    "fp8": ("fp8", "fp8_fp16_accumulate"),
    "fp4": ("fp4",),
}
# INT8 tensor throughput is kept with the other rates (TOPS); it serves int8 and GGUF matmuls.
INT8_KEY = "int8_dense_tops"
# Which confidence rating covers each compute type (the schema: bf16 covers fp16 too).
_CONFIDENCE_KEY = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "fp4": "fp4", "int8": "compute"}


class Peak(NamedTuple):
    """One compute type's dense peak, and where in the file it was read."""

    flops_per_s: Fraction
    figure: str  # e.g. "peak_dense_tflops.fp16_fp16_accumulate 419"
    confidence: str  # high | medium | low


class Hardware(NamedTuple):
    """One accelerator, per device, in exact bytes, bytes/s and FLOP/s."""

    id: str
    name: str
    usable_memory_bytes: Fraction | None
    memory_is_nominal: bool  # no driver total: the nominal capacity stands in
    memory_figure: str  # where the memory figure was read, as the messages show it
    memory_confidence: str
    bandwidth_bytes_per_s: Fraction | None
    bandwidth_figure: str
    bandwidth_confidence: str
    peaks: Mapping[str, Peak] = MappingProxyType({})
    unified: bool = False
    families: tuple[str, ...] = ()  # the chip's families (h100 for h100-sxm and h100-pcie)
    likely_memory_bytes: Fraction | None = None  # what a unified part leaves the GPU by default

    @property
    def display(self) -> str:
        if self.families == (self.id,):
            return f"the {self.id} family"
        return f"hardware/{self.id}.yaml"  # where the dataset keeps the file

    def peak(self, compute_types: tuple[str, ...]) -> tuple[str, Peak] | None:
        """The most generous peak among ``compute_types`` that this part publishes."""
        known = [(name, self.peaks[name]) for name in compute_types if name in self.peaks]
        if not known:
            return None
        return max(known, key=lambda item: item[1].flops_per_s)


def _figure(value: Fraction) -> str:
    shown = f"{float(value):,.2f}".rstrip("0").rstrip(".")
    return shown


def hardware_from_data(data: dict[str, Any]) -> Hardware:
    """A ``Hardware`` from a hardware file's data, which must already satisfy its schema."""
    confidence: dict[str, str] = data["confidence"]
    memory = data["memory"]
    usable, nominal = memory.get("usable_gib"), memory.get("nominal_gib")
    if usable is not None:
        memory_bytes: Fraction | None = exact(usable) * GIB
        memory_figure = f"usable_gib {_figure(exact(usable))} GiB"
        memory_confidence = confidence.get("usable_memory", confidence["memory"])
    elif nominal is not None:
        memory_bytes = exact(nominal) * GIB
        memory_figure = f"nominal_gib {_figure(exact(nominal))} GiB (no driver total)"
        memory_confidence = confidence["memory"]
    else:
        memory_bytes, memory_figure, memory_confidence = None, "unknown", confidence["memory"]

    bandwidth = data.get("memory_bandwidth_gb_s")
    bandwidth_key = "memory_bandwidth_gb_s"
    highest = data.get("memory_bandwidth_gb_s_max")
    if highest is not None and (bandwidth is None or highest > bandwidth):
        bandwidth, bandwidth_key = highest, "memory_bandwidth_gb_s_max"
    bandwidth_bytes = None if bandwidth is None else exact(bandwidth) * GB
    bandwidth_figure = (
        "unknown" if bandwidth is None else f"{bandwidth_key} {_figure(exact(bandwidth))} GB/s"
    )

    peaks: dict[str, Peak] = {}
    stated = data.get("peak_dense_tflops", {})
    upper = data.get("peak_dense_tflops_upper_bound", {})
    for compute_type, keys in PEAK_KEYS.items():
        candidates = [
            (exact(source[key]), f"{where}.{key}")
            for where, source in (("peak_dense_tflops", stated), ("upper_bound", upper))
            for key in keys
            if source.get(key) is not None
        ]
        if candidates:
            tflops, where = max(candidates, key=lambda c: c[0])
            rating = confidence.get(_CONFIDENCE_KEY[compute_type], confidence["compute"])
            peaks[compute_type] = Peak(tflops * TERA, f"{where} {_figure(tflops)}", rating)
    int8 = data.get("other_peak_rates", {}).get(INT8_KEY)
    if int8 is not None:
        peaks["int8"] = Peak(
            exact(int8) * TERA,
            f"other_peak_rates.{INT8_KEY} {_figure(exact(int8))}",
            confidence["compute"],
        )
    return Hardware(
        id=data["id"],
        name=data["name"],
        usable_memory_bytes=memory_bytes,
        memory_is_nominal=usable is None,
        memory_figure=memory_figure,
        memory_confidence=memory_confidence,
        bandwidth_bytes_per_s=bandwidth_bytes,
        bandwidth_figure=bandwidth_figure,
        bandwidth_confidence=confidence["bandwidth"],
        peaks=MappingProxyType(peaks),
        unified=bool(memory["unified"]),
        families=tuple(data.get("families", ())),
        likely_memory_bytes=_approximate(memory.get("usable_gib_approx")),
    )


def _approximate(gib_value: float | int | None) -> Fraction | None:
    return None if gib_value is None else exact(gib_value) * GIB


def family_reading(family: str, members: tuple[Hardware, ...], generous: bool) -> Hardware:
    """A family named without its form factor, as one part: each figure the highest among its
    members (``generous``: the reading most favourable to a record) or the lowest."""
    pick = max if generous else min

    def chosen(figure: str) -> Hardware:
        known = [m for m in members if getattr(m, figure) is not None]
        return pick(known, key=lambda m: getattr(m, figure)) if known else members[0]

    memory, bandwidth = chosen("usable_memory_bytes"), chosen("bandwidth_bytes_per_s")
    peaks: dict[str, Peak] = {}
    for compute_type in {name for m in members for name in m.peaks}:
        found = [(m, m.peaks[compute_type]) for m in members if compute_type in m.peaks]
        member, peak = pick(found, key=lambda item: item[1].flops_per_s)
        peaks[compute_type] = peak._replace(figure=f"{member.id} {peak.figure}")
    ids = ", ".join(m.id for m in members)
    which = "highest" if generous else "lowest"
    return Hardware(
        id=family,
        name=f"{family} family ({ids}), the {which} figure of each",
        usable_memory_bytes=memory.usable_memory_bytes,
        memory_is_nominal=memory.memory_is_nominal,
        memory_figure=f"{memory.id} {memory.memory_figure}",
        memory_confidence=memory.memory_confidence,
        bandwidth_bytes_per_s=bandwidth.bandwidth_bytes_per_s,
        bandwidth_figure=f"{bandwidth.id} {bandwidth.bandwidth_figure}",
        bandwidth_confidence=bandwidth.bandwidth_confidence,
        peaks=MappingProxyType(peaks),
        unified=memory.unified,
        families=(family,),
        likely_memory_bytes=memory.likely_memory_bytes,
    )
