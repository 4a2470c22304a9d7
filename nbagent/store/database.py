"""The history file itself: opening it, sharing it between kernels, replacing it when corrupt.

Robustness rules: the file is opened lazily on first use (creating an Agent costs
no I/O); WAL mode, a busy timeout and ``BEGIN IMMEDIATE`` let several kernels
write at once; a corrupt file is moved aside with a warning and a new one is
started; a file from a newer nbagent turns history off untouched; any other
database failure becomes a :class:`HistoryWarning`, never an exception in the
user's run.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .._internal.private_files import make_private_folder, prepare_private_file
from ..errors import ConfigError
from .migrations import SCHEMA_VERSION, NewerSchemaError, migrate

logger = logging.getLogger("nbagent")

T = TypeVar("T")
Self = TypeVar("Self", bound="Database")


class HistoryWarning(UserWarning):
    """History could not be written or read; the run itself is unaffected."""


class Database:
    """One SQLite history file and the transactions run on it.

    One connection is shared by the kernel's threads (the sync API runs the loop in a
    background thread); a lock serialises its use.

    Args:
        path: the SQLite file (created with its folder on first write).
        busy_timeout: seconds to wait for another kernel's write before giving up.
        clock: returns the time in seconds since the epoch (tests inject one).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout = busy_timeout
        self.clock = clock
        self.generation = 0
        """Bumped when a corrupt file is replaced, so writers rewrite what they had saved."""
        self._db: sqlite3.Connection | None = None
        self._disabled: str | None = None
        self._claims: dict[tuple[str, int], set[int]] = {}
        self._identity: tuple[int, int] | None = None
        """(device, inode) of the file when opened: a replaced file is noticed at the next write."""
        self._header: _HeaderReader | None = None
        """Reads the open file's first bytes without ever closing a descriptor of it."""
        self._full_warned = False
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def claims(self, conversation_id: str, owner: object) -> set[int]:
        """The message rows ``owner`` (a Conversation object) was loaded from or wrote.

        Rows of its conversation outside this set were written by someone else (a
        second kernel continuing the same conversation): a writer never replaces them.
        """
        with self._lock:
            return self._claims.setdefault((conversation_id, id(owner)), set())

    @property
    def is_open(self) -> bool:
        """Whether the file is open (it is opened on the first read or write)."""
        return self._db is not None

    def close(self) -> None:
        """Close the connection (the next use opens it again); checkpoints the WAL."""
        with self._lock:
            self._close_connection()

    def _close_connection(self, *, from_finalizer: bool = False) -> None:
        """Close the SQLite connection, then let go of the header reader (in that order)."""
        db, self._db = self._db, None
        try:
            if db is not None:
                db.close()
        finally:
            header, self._header = getattr(self, "_header", None), None
            if header is not None:
                header.release(wait=not from_finalizer)

    def __del__(self) -> None:
        # A forgotten Store must not leave its connection to the garbage collector
        # (which warns about it in newer Pythons). The collector may run this on a
        # thread that is inside _HeaderReader.acquire (an allocation there triggers a
        # collection), so the header is let go without waiting for the registry.
        try:
            self._close_connection(from_finalizer=True)
        except Exception:
            pass

    def __enter__(self: Self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ----------------------------------------------------------------

    def write(self, work: Callable[[sqlite3.Connection], object]) -> bool:
        """Run ``work`` in one write transaction; False (after a warning) if it failed.

        Never raises: history must not end the user's run. A corrupt file is moved
        aside (and :attr:`generation` bumped, so writers save everything again).
        """
        with self._lock:
            if self._db is not None and not self._still_ours():
                return False  # moved aside or reopened; the writer writes everything again
            db = self._connection()
            if db is None:
                return False
            try:
                self._transaction(db, work)
                self._full_warned = False
                return True
            except sqlite3.DatabaseError as error:
                if is_corrupt(error):
                    self._move_aside(error)
                elif is_full(error, self.path):
                    if not self._full_warned:  # once, until a write succeeds again
                        self._full_warned = True
                        _warn(
                            f"nbagent history not saved ({self.path}): the disk is full (or "
                            f"the file size limit is reached; SQLite said: {error}). Runs go "
                            "on without history until there is room again."
                        )
                else:
                    _warn(f"nbagent history not saved ({self.path}): {error}")
            except Exception as error:  # a bug here must not end the user's run
                logger.exception("history write failed")
                _warn(f"nbagent history not saved ({self.path}): {error!r}")
            return False

    def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on one consistent snapshot (a read transaction).

        Raises:
            ConfigError: the history cannot be opened (the warning before says why).
        """
        with self._lock:
            db = self._connection()
            if db is None:
                reason = self._disabled or "see the warning above"
                raise ConfigError(f"nbagent history is unavailable ({self.path}): {reason}")
            db.execute("BEGIN")
            try:
                return work(db)
            finally:
                db.execute("COMMIT")

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` ("ok" when the file is sound)."""
        rows = self.read(lambda db: db.execute("PRAGMA integrity_check").fetchall())
        return "\n".join(str(r[0]) for r in rows)

    def _transaction(
        self, db: sqlite3.Connection, work: Callable[[sqlite3.Connection], object]
    ) -> None:
        # BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that
        # read first could fail with SQLITE_BUSY at its first write, which the busy
        # handler cannot retry. The retry covers the rare busy that slips through.
        self._while_busy(lambda: db.execute("BEGIN IMMEDIATE"), pause=0.05)
        try:
            work(db)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # -- the connection --------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection, opening (and if need be migrating or replacing) the file."""
        if self._db is not None:
            return self._db
        if self._disabled:
            return None
        try:
            make_private_folder(self.path.parent)  # 0700 (see _open)
            try:
                self._db = self._open_when_free()
            except sqlite3.DatabaseError as error:
                if not is_corrupt(error):
                    raise
                self._move_aside(error)
                if self._disabled:
                    return None
                self._db = self._open_when_free()
        except NewerSchemaError as error:
            self._disable(str(error))
        except OSError as error:  # the folder cannot be made: it will not fix itself
            self._disable(str(error))
        except sqlite3.Error as error:
            # Not remembered: a locked file may work next time.
            _warn(f"nbagent history unavailable ({self.path}): {error}")
        return self._db

    def _open_when_free(self) -> sqlite3.Connection:
        """:meth:`_open`, retried while another process holds the file.

        Two kernels opening a new file at once race on switching it to WAL and on the
        first migration; SQLite reports some of those collisions as "database is
        locked" at once, without calling the busy handler, so wait and retry here.
        """
        return self._while_busy(self._open, pause=0.1)

    def _while_busy(self, action: Callable[[], T], *, pause: float) -> T:
        """``action()``, retried after a random pause of up to ``pause`` s while busy.

        Gives up (re-raising) after :attr:`busy_timeout`; other errors pass at once.
        """
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                return action()
            except sqlite3.OperationalError as error:
                if not is_busy(error) or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(pause / 10, pause))

    def _open(self) -> sqlite3.Connection:
        prepare_private_file(self.path, companions=("-wal", "-shm"))  # 0600 in 0700
        db = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            db.execute("PRAGMA foreign_keys = ON")
            # Checked before anything changes the file (WAL mode would rewrite its header).
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise NewerSchemaError(version)
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL survives an application crash (kill -9); only a power
            # cut can lose the last commits, and it never corrupts the file.
            db.execute("PRAGMA synchronous = NORMAL")
            migrate(db)
            db.execute("SELECT count(*) FROM conversations").fetchone()
            stat = os.stat(self.path)
            self._identity = (stat.st_dev, stat.st_ino)
            self._header = _HeaderReader.acquire(self.path, self._identity)
        except BaseException:
            db.close()
            raise
        return db

    def _still_ours(self) -> bool:
        """Whether the open file is still the SQLite file we opened (checked before a write).

        Something else may have overwritten it (garbage, truncation) or replaced or
        deleted it while the connection was open; SQLite itself would go on writing
        into its WAL and report success. A damaged file is moved aside (with one
        warning); a replaced or deleted one is simply opened again (SQLite then says
        whether the new one is a database). Either way the generation changes, so
        writers save their conversation again.

        The check is ``os.stat`` plus reading the header through a descriptor held
        while the connection is open: opening and closing the file here would drop
        the process's POSIX locks SQLite relies on (sqlite.org, "How To Corrupt An
        SQLite Database File", 2.2), which let two writers lose rounds.
        """
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self.close()
            self._bump("the history file was deleted")
            return False
        except OSError:
            return True  # unreachable now: let SQLite report what it finds
        if (stat.st_dev, stat.st_ino) != self._identity:
            self.close()  # replaced by another file: use that one from now on
            self._bump("the history file was replaced")
            return False
        if self._header is None or self._header.read() == SQLITE_HEADER:
            return True
        self._move_aside(sqlite3.DatabaseError("file is not a database (overwritten while open)"))
        return False

    def _bump(self, why: str) -> None:
        logger.info("%s (%s): writing to it afresh", why, self.path)
        self.generation += 1
        self._claims.clear()

    def _disable(self, reason: str) -> None:
        self._disabled = reason
        _warn(f"nbagent history is off for {self.path}: {reason}")

    def _move_aside(self, error: BaseException) -> None:
        """Rename a corrupt file (and its WAL) out of the way so a new one can start."""
        try:
            self._close_connection()
        except sqlite3.Error:
            pass
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.clock()))
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            for suffix in ("", "-wal", "-shm"):
                source = Path(str(self.path) + suffix)
                if source.exists():
                    os.replace(source, Path(str(target) + suffix))
        except OSError as move_error:
            self._disable(f"the file is unreadable ({error}) and cannot be moved ({move_error})")
            return
        self.generation += 1
        self._claims.clear()  # a new file: nothing in it belongs to anyone yet
        _warn(
            f"nbagent history file {self.path} was unreadable ({error}); "
            f"moved it to {target.name} and started a new one"
        )


class _HeaderReader:
    """A read-only descriptor of one history file (by inode), shared in the process.

    On POSIX, closing *any* descriptor of a file drops every lock the process holds
    on it, SQLite's included. So the descriptor is opened once per file and closed
    only when the last :class:`Database` of this process using that file has closed
    its connection (no nbagent connection then holds a lock on it).
    """

    _open: dict[tuple[int, int], _HeaderReader] = {}
    _registry_lock = threading.Lock()
    _deferred: list[_HeaderReader] = []
    """Released by a garbage collection that found the registry busy; handled at the next
    acquire or release (``list.append`` needs no lock)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 1

    @classmethod
    def acquire(cls, path: Path, identity: tuple[int, int]) -> _HeaderReader | None:
        """The reader of the file ``identity`` names (None where files cannot be read so)."""
        if not hasattr(os, "pread"):
            return None  # Windows: no POSIX locks to lose, and an open file cannot be replaced
        with cls._registry_lock:
            cls._release_deferred()
            reader = cls._open.get(identity)
            if reader is None:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                stat = os.fstat(fd)
                reader = cls._open.get((stat.st_dev, stat.st_ino))
                if reader is not None:
                    # Replaced between the stat and this open by a file we already read:
                    # this descriptor is left open (closing it could drop our locks).
                    reader.users += 1
                    return reader
                reader = cls._open[(stat.st_dev, stat.st_ino)] = cls(fd)
            else:
                reader.users += 1
            return reader

    def read(self) -> bytes:
        """The file's first 16 bytes as they are now (b"" when truncated)."""
        try:
            return os.pread(self.fd, 16, 0)
        except OSError:
            return SQLITE_HEADER  # unreadable now: let SQLite report what it finds

    def release(self, *, wait: bool = True) -> None:
        """One user fewer; the last one closes the descriptor.

        With ``wait`` False (a finalizer) a busy registry is not waited for: its holder
        may be this very thread, interrupted by the garbage collector, and waiting would
        hang it for good. The release is then left to the registry's next user.
        """
        if not self._registry_lock.acquire(blocking=wait):
            self._deferred.append(self)
            return
        try:
            self._release_deferred()
            self._drop_user()
        finally:
            self._registry_lock.release()

    @classmethod
    def _release_deferred(cls) -> None:
        """Finish the releases a finalizer left (the registry lock is held)."""
        while cls._deferred:
            cls._deferred.pop()._drop_user()

    def _drop_user(self) -> None:
        """One user fewer (the registry lock is held); the last one closes the descriptor."""
        self.users -= 1
        if self.users > 0:
            return
        for key, reader in list(self._open.items()):
            if reader is self:
                del self._open[key]
        os.close(self.fd)


def is_corrupt(error: BaseException) -> bool:
    """Whether SQLite's ``error`` says the file is damaged or not a database."""
    code: Any = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
        return True
    text = str(error).lower()
    return "malformed" in text or "not a database" in text


SQLITE_HEADER = b"SQLite format 3\x00"


def is_full(error: BaseException, path: Path | None = None) -> bool:
    """Whether ``error`` means no room: a full disk, or the process's file size limit.

    SQLite says "database or disk is full"; when the size limit (or some file
    systems) stops a write it says only "disk I/O error", so then the free space
    and the limit are looked at.
    """
    code: Any = getattr(error, "sqlite_errorcode", None)
    text = str(error).lower()
    if (code is not None and code & 0xFF == 13) or "disk is full" in text:  # SQLITE_FULL
        return True
    if "disk i/o error" not in text or path is None:
        return False
    try:
        if shutil.disk_usage(path.parent).free < 1 << 20:
            return True
    except OSError:
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    except (ImportError, OSError, ValueError):  # Windows has no resource module
        return False
    if soft == resource.RLIM_INFINITY:
        return False
    sizes = [Path(str(path) + s) for s in ("", "-wal")]
    return any(p.exists() and p.stat().st_size + (64 << 10) >= soft for p in sizes)


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` means another connection holds the lock (worth retrying)."""
    text = str(error).lower()
    return "locked" in text or "busy" in text


def _warn(message: str) -> None:
    logger.warning(message)
    # stacklevel 3: the warning points at the caller of write()/read() (as before).
    warnings.warn(message, HistoryWarning, stacklevel=3)
