"""Files only their owner can read: 0600 files in 0700 folders, whatever the umask.

The history database, raw response logs and recordings hold prompts, answers,
tool results and images. Under the usual umask 022 a plain ``open()`` makes them
readable by every local user; SSH and most credential stores create such files
0600 in 0700 folders, and so does nbagent. A leaf module (no nbagent imports).

Folders nbagent creates are made 0700 (each missing level); folders that already
exist are left as they are (``NBAGENT_HOME`` may name a shared folder on purpose).
Existing files of ours that others could read are tightened with ``os.chmod``,
which opens no descriptor: closing a descriptor of a database file would drop the
process's SQLite locks on it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "make_private_folder",
    "open_private",
    "prepare_private_file",
]

FILE_MODE = 0o600
FOLDER_MODE = 0o700
_POSIX = os.name == "posix"


def make_private_folder(folder: Path) -> None:
    """Create ``folder`` and its missing parents, each 0700 (existing ones are kept)."""
    missing: list[Path] = []
    at = Path(folder)
    while not at.exists():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    for level in reversed(missing):
        try:
            os.mkdir(level, FOLDER_MODE)
        except FileExistsError:  # another process made it meanwhile
            continue
        if _POSIX:
            os.chmod(level, FOLDER_MODE)  # mkdir's mode is masked by the umask


def tighten(path: Path) -> None:
    """Make an existing file of ours 0600 if others could read or write it."""
    if not _POSIX:
        return
    try:
        info = os.stat(path)
    except OSError:
        return
    if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)
        except OSError:  # a read-only file system: nothing more to do
            pass


def prepare_private_file(path: Path, *, companions: tuple[str, ...] = ()) -> None:
    """Make ``path``'s folder and an empty 0600 ``path`` if missing, else tighten it.

    ``companions`` are suffixes of files kept beside it (SQLite's ``-wal``/``-shm``,
    which SQLite creates with the database file's mode), tightened when present.
    """
    path = Path(path)
    make_private_folder(path.parent)
    try:
        # O_EXCL: an existing file is never opened here (see the module docstring).
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        tighten(path)
    else:
        os.close(descriptor)
    for suffix in companions:
        tighten(Path(f"{path}{suffix}"))


def open_private(path: Path, mode: str = "a") -> IO[str]:
    """``open(path, mode)`` for text (``"w"`` or ``"a"``), creating the file 0600 if missing."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    descriptor = os.open(path, flags, FILE_MODE)
    try:
        file = os.fdopen(descriptor, mode, encoding="utf-8")
    except BaseException:
        os.close(descriptor)
        raise
    tighten(Path(path))
    return file
