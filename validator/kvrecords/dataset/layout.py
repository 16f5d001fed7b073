"""Where the dataset's files are: the root, the record and model files, and their names."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import NamedTuple

RECORDS_DIR = "records"
MODELS_DIR = "models"
HARDWARE_DIR = "hardware"
SCHEMA_DIR = "schema"
RECORD_PREFIX = "kv-efficiency"
YAML_SUFFIXES = (".yaml", ".yml")
# A model, hardware or record-slug id: lowercase letters, digits, dots and hyphens, so that an
# id names exactly one file and never a path (the schemas hold the same pattern).
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9.-]*")


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``schema/`` and ``models/``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / SCHEMA_DIR / "record.schema.json").is_file() and (
            folder / MODELS_DIR
        ).is_dir():
            return folder
    return None


class DatasetFile(NamedTuple):
    """One file of the dataset, by kind, with the path shown in messages (relative to the root)."""

    kind: str  # "record", "model" or "hardware"
    display: str  # relative to the root, with forward slashes
    root: Path

    @property
    def path(self) -> Path:
        # built on demand: a pre-commit run lists every file but opens only a few
        return self.root / self.display

    @property
    def expected_id(self) -> str:
        if self.kind in ("model", "hardware"):
            return self.display.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return self.display.removeprefix(f"{RECORDS_DIR}/").rsplit(".", 1)[0]


def classify(root: Path, path: Path) -> DatasetFile | None:
    """The dataset file at ``path`` (absolute or relative to the working folder), if it is one."""
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        relative = absolute.parent.resolve().relative_to(root) / absolute.name
    except ValueError:
        return None
    parts = relative.parts
    if not parts or relative.suffix not in YAML_SUFFIXES:
        return None
    display = relative.as_posix()
    if parts[0] == RECORDS_DIR and len(parts) >= 2:
        return DatasetFile("record", display, root)
    if parts[0] in (MODELS_DIR, HARDWARE_DIR) and len(parts) == 2:
        kind = "model" if parts[0] == MODELS_DIR else "hardware"
        return DatasetFile(kind, display, root)
    return None


_FOLDERS = {"record": RECORDS_DIR, "model": MODELS_DIR, "hardware": HARDWARE_DIR}


def discover(root: Path, kind: str) -> list[DatasetFile]:
    """Every file of one kind, sorted by path.

    A plain directory walk with no path resolution: it runs on every validation, also when
    pre-commit passes one file of a large dataset. Symlinks are listed like files; the checks
    refuse those that lead out of the tree.
    """
    top = _FOLDERS[kind]
    found: list[DatasetFile] = []
    for folder, subfolders, names in os.walk(root / top):
        if kind != "record":
            subfolders.clear()  # models and hardware are flat; records may sit in subfolders
        relative = Path(folder).relative_to(root).as_posix()
        for name in names:
            if name.endswith(YAML_SUFFIXES):
                display = f"{relative}/{name}"
                found.append(DatasetFile(kind, display, root))
    return sorted(found, key=lambda f: f.display)


class IdClaims:
    """Which files claim an id, compared case-insensitively (two such files clash on macOS and
    Windows checkouts).

    A file claims the id its path gives; KV201 ties the id it states to that. Only the folders
    along an id's path are listed, each once, so a pre-commit run over one record of a large
    dataset lists one folder instead of walking the tree.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._listings: dict[Path, dict[str, list[str]]] = {}
        self._model_ids: frozenset[str] | None = None
        self._folders: dict[tuple[str, ...], list[tuple[Path, str]]] = {}  # an id's folders

    def claimants(self, kind: str, dataset_id: str) -> list[str]:
        """Display paths of the files of ``kind`` whose path gives ``dataset_id``, in any case."""
        *folder_names, name = dataset_id.casefold().split("/")
        if folder_names and kind != "record":
            return []  # models and hardware are flat
        return sorted(
            f"{shown}/{entry}"
            for folder, shown in self._id_folders(kind, tuple(folder_names))
            for suffix in YAML_SUFFIXES
            for entry in self._entries(folder).get(name + suffix, [])
            if entry.endswith(YAML_SUFFIXES) and not os.path.isdir(os.path.join(folder, entry))
        )

    def _id_folders(self, kind: str, folder_names: tuple[str, ...]) -> list[tuple[Path, str]]:
        """The folders an id's folder names lead to, in any case, each with its path as messages
        show it; found once for all the ids that share them (every record of a folder)."""
        key = (_FOLDERS[kind], *folder_names)
        if key not in self._folders:
            folders = [self.root / _FOLDERS[kind]]
            for folder_name in folder_names:  # as discover() walks: symlinked folders not entered
                folders = [
                    folder / entry
                    for folder in folders
                    for entry in self._entries(folder).get(folder_name, [])
                    if (folder / entry).is_dir() and not (folder / entry).is_symlink()
                ]
            self._folders[key] = [
                (folder, folder.relative_to(self.root).as_posix()) for folder in folders
            ]
        return self._folders[key]

    def model_ids(self) -> frozenset[str]:
        """The ids of the model files, from the one listing of models/ the claims keep."""
        if self._model_ids is None:
            self._model_ids = self._list_model_ids()
        return self._model_ids

    def _list_model_ids(self) -> frozenset[str]:
        return frozenset(
            entry.removesuffix(suffix)
            for entries in self._entries(self.root / MODELS_DIR).values()
            for entry in entries
            for suffix in YAML_SUFFIXES
            if entry.endswith(suffix) and ID_PATTERN.fullmatch(entry.removesuffix(suffix))
        )

    def _entries(self, folder: Path) -> dict[str, list[str]]:
        """The folder's entry names by their case-folded form, listed once."""
        if folder not in self._listings:
            try:
                names = os.listdir(folder)
            except OSError:
                names = []  # a missing or unreadable folder holds no claims
            # one casefold call for the whole folder; no file name holds a NUL
            folded = "\0".join(names).casefold().split("\0") if names else []
            entries: dict[str, list[str]] = {}
            for entry, key in zip(names, folded, strict=True):
                entries.setdefault(key, []).append(entry)
            self._listings[folder] = entries
        return self._listings[folder]


def model_file(root: Path, model_id: str) -> Path:
    return root / MODELS_DIR / f"{model_id}.yaml"


def escapes_root(root: Path, path: Path) -> bool:
    """True when ``path`` is a symlink (at any depth below the root) resolving outside it."""
    if _plainly_inside(root, path):
        return False
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return True
    return False


def _plainly_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` is written below a resolved ``root`` and no step below the root is a
    symlink: then it resolves where it is written. One ``lstat`` a step, where resolving costs
    one a step from ``/`` and a path object each; this runs for every file of a validation."""
    base, text = str(root), str(path)
    if not text.startswith(base + os.sep) or not _is_resolved(root):
        return False
    steps = text[len(base) + 1 :].split(os.sep)
    if any(step in ("", ".", "..") for step in steps):
        return False
    at = base
    for step in steps:
        at = f"{at}{os.sep}{step}"
        if os.path.islink(at):
            return False
    return True


@functools.cache
def _is_resolved(root: Path) -> bool:
    return root.is_absolute() and root.resolve() == root
