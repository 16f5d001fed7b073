"""Hardware files (hardware/<id>.yaml), judged once ``dataset.hardware`` has read them."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

from kvrecords.checks.files import file_problems
from kvrecords.dataset.document import Document
from kvrecords.dataset.hardware import HardwareCatalog, HardwareState
from kvrecords.dataset.layout import DatasetFile, IdClaims
from kvrecords.kv.hardware import GIB, hardware_from_data
from kvrecords.kv.units import BYTE_UNITS, Written, agrees, exact, format_exact
from kvrecords.problems import Problem, Rule

CONSISTENCY = Rule(
    "KV604",
    "hardware-consistency",
    "A hardware file agrees with itself: usable memory (and the approximate GPU share) is at "
    "most the nominal size, the driver's total as printed (usable_reported) gives usable_gib "
    "at the precision written, the capacity the vendor states is nominal_gib, and "
    "memory_bandwidth_gb_s_max is above memory_bandwidth_gb_s.",
    "The fit and roofline checks divide by these figures; a usable size above the physical "
    "one, or one that does not follow from the driver output it cites, was copied wrong.",
    "nominal_gib: 80\nusable_gib: 79.65\nusable_reported: 81559 MiB",
    "nominal_gib: 80\nusable_gib: 81.65\nusable_reported: 81559 MiB\n# KV604 usable_gib is "
    "81.65, above nominal_gib 80",
)
_REPORTED = re.compile(r"^([0-9][0-9,]*(?:\.[0-9]+)?) (MiB|GiB|bytes|B)$")
_STATED = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?(GB|GiB|TB)\b")


def hardware_catalog(root: Path, claims: IdClaims | None = None) -> HardwareCatalog:
    """The dataset's hardware files, each read once on first use and judged here."""
    return HardwareCatalog(
        root, functools.partial(judge_hardware_file, root, claims or IdClaims(root))
    )


def judge_hardware_file(
    root: Path, claims: IdClaims, document: Document, hardware_file: DatasetFile
) -> HardwareState:
    """A hardware file that was read: its modeline, schema and id, then its figures."""
    own = file_problems(root, document, hardware_file, claims)
    # a file that claims another id must not stand in for this one
    if not own.identity_holds:
        return HardwareState(hardware_file.display, None, own.problems)
    problems = own.problems + consistency_problems(document)
    return HardwareState(hardware_file.display, hardware_from_data(document.data), problems)


def _figure(document: Document, path: tuple[str, ...]) -> tuple[Written, Fraction] | None:
    value = document.data
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if value is None or isinstance(value, bool):
        return None
    written = Written(document.written.get(path, str(value)))
    return written, exact(written.text)


def consistency_problems(document: Document) -> list[Problem]:
    """KV604: the memory and bandwidth figures of one hardware file against each other."""
    return list(_consistency(document))


def _consistency(document: Document) -> Iterator[Problem]:
    memory = document.data["memory"]
    nominal = _figure(document, ("memory", "nominal_gib"))
    for key in ("usable_gib", "usable_gib_approx"):
        usable = _figure(document, ("memory", key))
        if usable is not None and nominal is not None and usable[1] > nominal[1]:
            message = f"{key} is {usable[0].text}, above nominal_gib {nominal[0].text}"
            yield document.problem(CONSISTENCY, ("memory", key), message)
    usable = _figure(document, ("memory", "usable_gib"))
    reported = _REPORTED.match(memory.get("usable_reported") or "")
    if usable is not None and reported is not None:
        number, unit = reported.groups()
        size = exact(number.replace(",", "")) * (1 if unit in ("bytes", "B") else BYTE_UNITS[unit])
        if not agrees(usable[0], size / GIB):
            message = (
                f"usable_gib is {usable[0].text}; usable_reported {memory['usable_reported']!r} "
                f"is {format_exact(size / GIB)} GiB"
            )
            yield document.problem(CONSISTENCY, ("memory", "usable_gib"), message)
    stated = _STATED.search(memory["stated"])
    if stated is not None and nominal is not None:
        capacity = exact(stated.group(1)) * (1024 if stated.group(2) == "TB" else 1)
        if capacity != nominal[1]:
            message = (
                f"nominal_gib is {nominal[0].text}; the vendor states {stated.group(0)!r} "
                "(round GB capacities are binary: 24 GB is 24 GiB)"
            )
            yield document.problem(CONSISTENCY, ("memory", "nominal_gib"), message)
    bandwidth = _figure(document, ("memory_bandwidth_gb_s",))
    highest = _figure(document, ("memory_bandwidth_gb_s_max",))
    if bandwidth is not None and highest is not None and highest[1] <= bandwidth[1]:
        message = (
            f"memory_bandwidth_gb_s_max is {highest[0].text}, not above memory_bandwidth_gb_s "
            f"{bandwidth[0].text}: omit it"
        )
        yield document.problem(CONSISTENCY, ("memory_bandwidth_gb_s_max",), message)
