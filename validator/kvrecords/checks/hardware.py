"""Hardware files (hardware/<id>.yaml), each read and checked once, on first use."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kvrecords.checks.files import identity_problems, modeline_problems, read_dataset_file
from kvrecords.dataset.document import Document
from kvrecords.dataset.layout import HARDWARE_DIR, SCHEMA_DIR, DatasetFile, IdClaims
from kvrecords.dataset.schemas import schema_problems
from kvrecords.kv.hardware import Hardware, hardware_from_data
from kvrecords.problems import Problem


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
        return HardwareState(display, hardware_from_data(document.data), problems)
