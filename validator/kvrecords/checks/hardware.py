"""Hardware files (hardware/<id>.yaml), each read and checked once, on first use."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from kvrecords.checks.files import identity_problems, modeline_problems, read_dataset_file
from kvrecords.dataset.document import Document
from kvrecords.dataset.layout import HARDWARE_DIR, SCHEMA_DIR, DatasetFile, IdClaims
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.hardware import GIB, Hardware, hardware_from_data
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


class HardwareState(NamedTuple):
    """A hardware file once read: its figures when sound, and its own problems."""

    display: str
    hardware: Hardware | None
    problems: list[Problem]


class HardwareCatalog:
    """hardware/<id>.yaml files of one dataset, each read and checked once, on first use."""

    def __init__(self, root: Path, claims: IdClaims | None = None) -> None:
        self.root = root
        self.claims = claims or IdClaims(root)
        self._states: dict[str, HardwareState | None] = {}

    def path(self, hardware_id: str) -> Path:
        return self.root / HARDWARE_DIR / f"{hardware_id}.yaml"

    def ids(self) -> tuple[str, ...]:
        """Every accelerator id the catalog has a file for."""
        folder = self.root / HARDWARE_DIR
        return tuple(sorted(p.stem for p in folder.glob("*.yaml"))) if folder.is_dir() else ()

    def family(self, family: str) -> tuple[Hardware, ...]:
        """The sound hardware files that declare ``family`` (reads every file once)."""
        found = (self.get(hardware_id) for hardware_id in self.ids())
        return tuple(
            state.hardware
            for state in found
            if state is not None
            and state.hardware is not None
            and family in state.hardware.families
        )

    def family_ids(self) -> tuple[str, ...]:
        """Every family some sound hardware file declares."""
        found = (self.get(hardware_id) for hardware_id in self.ids())
        return tuple(sorted({f for s in found if s and s.hardware for f in s.hardware.families}))

    def sound(self) -> dict[str, Hardware]:
        """Every hardware file whose figures are sound, by id."""
        states = {hardware_id: self.get(hardware_id) for hardware_id in self.ids()}
        return {
            hardware_id: state.hardware
            for hardware_id, state in states.items()
            if state is not None and state.hardware is not None
        }

    def get(self, hardware_id: str) -> HardwareState | None:
        """The file's state; None when hardware/<id>.yaml does not exist."""
        if hardware_id not in self._states:
            self._states[hardware_id] = self._load(hardware_id)
        return self._states[hardware_id]

    def _load(self, hardware_id: str) -> HardwareState | None:
        hardware_file = DatasetFile("hardware", f"{HARDWARE_DIR}/{hardware_id}.yaml", self.root)
        try:
            if not hardware_file.path.is_file():
                return None
        except OSError:  # a name the file system refuses (too long) names no file
            return None
        display = hardware_file.display
        document = read_dataset_file(self.root, hardware_file)
        if not isinstance(document, Document):
            return HardwareState(display, None, document)
        problems = modeline_problems(self.root, document, hardware_file)
        schema_errors = schema_problems(document, "hardware", self.root / SCHEMA_DIR)
        if schema_errors:
            return HardwareState(display, None, problems + schema_errors)
        identity = identity_problems(document, hardware_file, self.claims)
        if identity:  # a file that claims another id must not stand in for this one
            return HardwareState(display, None, problems + identity)
        problems += consistency_problems(document)
        return HardwareState(display, hardware_from_data(document.data), problems)


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
