"""An output directory owned by one run at a time.

:class:`OutputDir` checks the path is (or can be) a directory, takes an exclusive lock on it for the
whole run (a second run into the same directory is refused at once, before it computes anything), and
refuses a directory that already holds files unless ``overwrite``.  Files are written with
:func:`atomic_path` (a temporary name in the same directory, renamed into place), so a reader never sees a
half-written file; together with the lock, the data and metadata files in the directory always come
from the same run.  :class:`DirectoryLock` (the lock alone) and ``atomic_path(..., durable=True)`` (also
flushed to disk before and after the rename) serve the sweeps' resumable directories too.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Iterator

from shufflesim.errors import ParameterError

#: name of the lock file used where a directory itself cannot be locked
LOCK_NAME = ".shufflesim.lock"
#: prefix of the temporary names of :func:`atomic_path` (a file left by a killed write starts with it)
TMP_PREFIX = ".shufflesim-tmp-"


@contextlib.contextmanager
def atomic_path(path: Path, *, durable: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it onto ``path``, else remove it.

    ``durable``: fsync the written file before the rename and the directory after it, so that a file
    present after a crash is complete (for runs resumed from what is on disk)."""
    path = Path(path)
    tmp = path.with_name(f"{TMP_PREFIX}{uuid.uuid4().hex[:12]}-{path.name}")
    try:
        yield tmp
        if durable:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            _fsync_dir(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows: the O_EXCL lock file is the lock
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class DirectoryLock:
    """``with DirectoryLock(path, busy):`` — an exclusive lock on the existing directory ``path``; a second
    holder is refused at once with ``ParameterError(busy)``.  POSIX locks the directory itself (no file is
    left behind, and the lock ends with the process); elsewhere a lock file created with O_EXCL."""

    def __init__(self, path: Path, busy: str):
        self.path = Path(path)
        self.busy = busy
        self._fd: int | None = None
        self._lockfile: Path | None = None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            fd = None
        if fd is not None:
            if _try_lock(fd):
                self._fd = fd
                return
            os.close(fd)
            raise ParameterError(self.busy)
        lock = self.path / LOCK_NAME
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            raise ParameterError(self.busy) from None
        self._fd, self._lockfile = fd, lock

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
        if self._lockfile is not None:
            with contextlib.suppress(FileNotFoundError):
                self._lockfile.unlink()
            self._lockfile = None

    def __enter__(self) -> "DirectoryLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class OutputDir:
    """``with OutputDir(path, overwrite=False) as d:`` — the run owns ``d.path`` until the block ends."""

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False, option: str = "--output"):
        text = os.fspath(path)
        if not str(text).strip():
            raise ParameterError(f"{option} needs a directory name; got an empty string")
        self.path = Path(text)
        self.overwrite = overwrite
        self.option = option
        self.run_id = uuid.uuid4().hex
        self._lock = DirectoryLock(self.path, f"{option} {self.path} is in use by another shufflesim run; "
                                   "wait for it to finish or choose another directory")

    def _check_is_directory(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise ParameterError(f"{self.option} {self.path} is not a directory; {self.option} names a directory "
                                 "to write the result files into")

    def __enter__(self) -> "OutputDir":
        self._check_is_directory()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            self._check_is_directory()
            raise
        self._lock.acquire()
        try:
            self._check_empty()
        except BaseException:
            self._lock.release()
            raise
        return self

    def _check_empty(self) -> None:
        entries = [e for e in self.path.iterdir() if e.name != LOCK_NAME and not e.name.startswith(TMP_PREFIX)]
        if entries and not self.overwrite:
            raise ParameterError(f"{self.option} {self.path} is not empty ({len(entries)} entries); "
                                 "pass --overwrite to replace its files, or choose another directory")

    def __exit__(self, *exc) -> None:
        self._lock.release()
