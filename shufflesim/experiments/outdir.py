"""An output directory owned by one run at a time.

:class:`OutputDir` checks the path is (or can be) a directory, takes an exclusive lock on it for the
whole run (a second run into the same directory is refused at once, before it computes anything), and
refuses a directory that already holds files unless ``overwrite``.  Files are written with
:func:`atomic_path` (a temporary name in the same directory, renamed into place), so a reader never sees a
half-written file; together with the lock, the data and metadata files in the directory always come
from the same run.
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
_TMP_PREFIX = ".shufflesim-tmp-"


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it onto ``path``, else remove it."""
    path = Path(path)
    tmp = path.with_name(f"{_TMP_PREFIX}{uuid.uuid4().hex[:12]}-{path.name}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


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
        self._fd: int | None = None
        self._lockfile: Path | None = None

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
        self._acquire()
        try:
            self._check_empty()
        except BaseException:
            self._release()
            raise
        return self

    def _acquire(self) -> None:
        busy = ParameterError(f"{self.option} {self.path} is in use by another shufflesim run; "
                              "wait for it to finish or choose another directory")
        try:
            fd = os.open(self.path, os.O_RDONLY)  # POSIX: lock the directory itself, no file left behind
        except OSError:
            fd = None
        if fd is not None:
            if _try_lock(fd):
                self._fd = fd
                return
            os.close(fd)
            raise busy
        lock = self.path / LOCK_NAME
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            raise busy from None
        self._fd, self._lockfile = fd, lock

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
        if self._lockfile is not None:
            with contextlib.suppress(FileNotFoundError):
                self._lockfile.unlink()
            self._lockfile = None

    def _check_empty(self) -> None:
        entries = [e for e in self.path.iterdir() if e.name != LOCK_NAME and not e.name.startswith(_TMP_PREFIX)]
        if entries and not self.overwrite:
            raise ParameterError(f"{self.option} {self.path} is not empty ({len(entries)} entries); "
                                 "pass --overwrite to replace its files, or choose another directory")

    def __exit__(self, *exc) -> None:
        self._release()
