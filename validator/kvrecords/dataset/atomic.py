"""Writing files so that a reader, a crash or a failed write never sees half a file.

The new text goes to a temporary file in the same folder (so the final rename stays on one
file system), is flushed to disk, and only then takes the target's name in one step. When
anything fails the temporary file is removed and the original file is left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

# Permission bits for a new file before the umask, as open() would use.
_NEW_FILE_MODE = 0o666


def write_atomically(path: Path, text: str | bytes) -> None:
    """Replace (or create) ``path`` with ``text`` (UTF-8, or bytes as they are) in one rename.

    An existing file keeps its permission bits. A symlink is written through: its target is
    replaced, the link stays.
    """
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    data = text.encode("utf-8") if isinstance(text, str) else text
    temporary = _write_temporary(target, data, mode)
    try:
        os.replace(temporary, target)
    except BaseException:
        _remove(temporary)
        raise
    _sync_folder(target.parent)


def create_new(path: Path, text: str) -> None:
    """Create ``path`` with ``text``; ``FileExistsError`` if it exists, even if created meanwhile.

    The complete file is hard-linked into place: a link never replaces an existing name, so a
    file created concurrently under the same name is not overwritten.
    """
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "file exists; not overwritten", str(path))
    temporary = _write_temporary(path, text.encode("utf-8"), None)
    try:
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise FileExistsError(errno.EEXIST, "file exists; not overwritten", str(path)) from None
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            _create_exclusively(path, temporary)  # a file system without hard links
    finally:
        _remove(temporary)
    _sync_folder(path.parent)


def _write_temporary(target: Path, data: bytes, mode: int | None) -> Path:
    """A fully written and synced sibling of ``target``, with ``mode`` (else the umask's)."""
    for _ in range(100):
        temporary = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        try:
            # O_EXCL: never reuse a name someone else holds; 0o666 lets the umask apply as usual.
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_FILE_MODE)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(target.parent))
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
    except BaseException:
        _remove(temporary)
        raise
    return temporary


def _create_exclusively(path: Path, temporary: Path) -> None:
    """Fallback without hard links: still never overwrites, but is not all-or-nothing."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_FILE_MODE)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(temporary.read_bytes())
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        _remove(path)
        raise


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable; not every platform can open a folder, so best effort."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
