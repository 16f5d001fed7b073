"""The dataset as a git revision holds it, written into a folder of its own.

``kvrecords review --base REF`` compares the dataset at REF with the working tree. The base is
never checked out: its files come from ``git ls-tree`` and ``git cat-file --batch``, so the
working tree, the index and HEAD stay exactly as they are. Only regular files under the
dataset's folders are written; a symbolic link or a submodule in the base is left out, and a
path that could leave the destination is refused.
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath
from typing import IO, NamedTuple

from kvrecords.dataset.layout import HARDWARE_DIR, MODELS_DIR, RECORDS_DIR, SCHEMA_DIR

DATASET_FOLDERS = (RECORDS_DIR, MODELS_DIR, HARDWARE_DIR, SCHEMA_DIR)
_REGULAR_FILE_MODES = ("100644", "100755")
_CHUNK = 1024 * 1024


class RevisionError(Exception):
    """git is missing, the folder is not in a repository, or the ref names no commit."""


class Revision(NamedTuple):
    ref: str  # as the user gave it
    commit: str  # the full commit id it names


def resolve(root: Path, ref: str) -> Revision:
    """The commit ``ref`` names in the repository holding ``root``."""
    if not ref or ref.startswith("-"):
        raise RevisionError(f"{ref!r} is not a git revision")
    commit = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if not commit:
        raise RevisionError(f"{ref!r} names no commit in the repository at {root}")
    return Revision(ref, commit.strip())


def write_dataset(root: Path, revision: Revision, destination: Path) -> int:
    """Write the dataset's folders as ``revision`` holds them under ``destination``.

    Paths are those of the dataset root (a dataset in a subfolder of its repository keeps its
    place). Returns the number of files written.
    """
    listing = _git(root, "ls-tree", "-r", "-z", revision.commit, "--", *DATASET_FOLDERS)
    blobs: list[tuple[str, PurePosixPath]] = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        header, _, name = entry.partition("\t")
        mode, kind, object_id = header.split(" ")
        if kind == "blob" and mode in _REGULAR_FILE_MODES:
            blobs.append((object_id, _safe_path(name)))
    destination.mkdir(parents=True, exist_ok=True)
    with _start(root, "cat-file", "--batch") as reader:
        assert reader.stdin is not None and reader.stdout is not None
        for object_id, relative in blobs:
            reader.stdin.write(f"{object_id}\n".encode("ascii"))
            reader.stdin.flush()
            target = destination.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_blob(reader.stdout, target, object_id)
        reader.stdin.close()
    return len(blobs)


def _safe_path(name: str) -> PurePosixPath:
    """A tree path that stays inside the destination (git never writes others; a crafted
    repository can still hold them)."""
    path = PurePosixPath(name)
    if path.is_absolute() or any(part in ("", ".", "..", ".git") for part in path.parts):
        raise RevisionError(f"the revision holds a path that leaves the dataset: {name!r}")
    return path


def _copy_blob(stream: IO[bytes], target: Path, object_id: str) -> None:
    header = stream.readline().decode("ascii", "replace").split()
    if len(header) != 3 or header[1] != "blob":
        raise RevisionError(f"git cat-file did not return blob {object_id}: {' '.join(header)}")
    remaining = int(header[2])
    with target.open("wb") as out:
        while remaining:
            chunk = stream.read(min(_CHUNK, remaining))
            if not chunk:
                raise RevisionError(f"git cat-file stopped inside blob {object_id}")
            out.write(chunk)
            remaining -= len(chunk)
    stream.read(1)  # the newline after each object


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RevisionError(f"git could not run: {error}") from error
    if done.returncode != 0 and done.stderr.strip():
        raise RevisionError(f"git {args[0]}: {done.stderr.strip().splitlines()[-1]}")
    return done.stdout


def _start(root: Path, *args: str) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            ["git", *args], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
    except OSError as error:
        raise RevisionError(f"git could not run: {error}") from error
