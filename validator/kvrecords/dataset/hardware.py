"""Hardware files (hardware/<id>.yaml): each read once, on first use, and the ones a record
names gathered for its checks.

Reading is done here; what a file that was read is worth (its modeline, schema, id and figures)
is judged by the function the catalog is given, ``checks.hardware.judge_hardware_file`` as
``checks.hardware.hardware_catalog`` builds it, so a run reads here and judges there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.document import Document, read_dataset_file
from kvrecords.dataset.layout import HARDWARE_DIR, DatasetFile
from kvrecords.dataset.records import accelerator_links
from kvrecords.kv.hardware import Hardware
from kvrecords.problems import Problem


class HardwareState(NamedTuple):
    """A hardware file once read and judged: its figures when sound, and its own problems."""

    display: str
    hardware: Hardware | None
    problems: list[Problem]


# What a hardware file that was read is worth: its figures when sound, and its problems.
HardwareJudge = Callable[[Document, DatasetFile], HardwareState]


class HardwareCatalog:
    """hardware/<id>.yaml files of one dataset, each read and judged once, on first use."""

    def __init__(self, root: Path, judge: HardwareJudge) -> None:
        self.root = root
        self.judge = judge
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
        document = read_dataset_file(self.root, hardware_file)
        if not isinstance(document, Document):
            return HardwareState(hardware_file.display, None, document)
        return self.judge(document, hardware_file)


class HardwareIndex(NamedTuple):
    """The hardware files a record names, already read: the checks themselves do no I/O."""

    states: Mapping[str, HardwareState | None]  # None: no such file
    catalog_ids: tuple[str, ...] = ()  # every id in hardware/, for "did you mean" hints
    families: Mapping[str, tuple[Hardware, ...]] = {}  # family id -> its sound members
    family_ids: tuple[str, ...] = ()  # every family in hardware/, for hints

    def get(self, hardware_id: str) -> HardwareState | None:
        return self.states.get(hardware_id)


def hardware_index(data: dict[str, Any], catalog: HardwareCatalog) -> HardwareIndex:
    """The hardware files a record names, read through the catalog."""
    links = accelerator_links(data)
    states = {named: catalog.get(named) for _, named, family in links if not family}
    families = {named: catalog.family(named) for _, named, family in links if family}
    missing = None in states.values()
    family_ids = catalog.family_ids() if not all(families.values()) else ()
    return HardwareIndex(states, catalog.ids() if missing else (), families, family_ids)
