"""An output directory owned by one run at a time.

:class:`OutputDir` checks the path is (or can be) a directory, takes an exclusive lock on it for the
whole run (a second run into the same directory is refused at once, before it computes anything), and
refuses a directory that already holds files unless ``overwrite``.  Files are written with
:func:`atomic_path` (a temporary name in the same directory, renamed into place), so a reader never sees a
half-written file; together with the lock, the data and metadata files in the directory always come
from the same run.  :class:`DirectoryLock` (the lock alone) and ``atomic_path(..., durable=True)`` (also
flushed to disk before and after the rename) serve the sweeps' resumable directories too.

Output folders are ours (issue 29): shufflesim never writes through a symbolic link inside an output folder
(the folder itself may be a link).  A folder is scanned for links when its lock is taken, before anything is
written (:func:`check_no_links`), and every write below a locked folder — :func:`atomic_path` for files,
:func:`make_dirs` for folders — checks each component below it again (:func:`refuse_links`), so a link
planted during the run is refused too.  An empty folder name is refused (:func:`check_dir_name`).
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


#: the folders this process holds a :class:`DirectoryLock` on (absolute, links not resolved): the output roots
#: below which :func:`refuse_links` allows no link
_OWNED: list[str] = []


def check_dir_name(text: str | os.PathLike | None, option: str) -> None:
    """ParameterError for an empty (or blank) output folder name (``Path('')`` is the current directory), and for
    one that is not UTF-8 text (bytes that are not UTF-8 reach Python as surrogates, which the Parquet writer
    cannot name a file with: refused before anything is written)."""
    if text is None:
        return
    name = os.fsdecode(text)
    if not name.strip():
        raise ParameterError(f"{option} needs a directory name; got an empty string")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = name.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise ParameterError(f"{option} must be a path in UTF-8 text; got {shown!r}") from None


def _link_error(link: str, root: str) -> ParameterError:
    return ParameterError(f"{link} is a symbolic link inside the output folder {root}; shufflesim does not write "
                          "through links there: remove the link, or choose another folder")


def refuse_links(path: str | os.PathLike) -> Path:
    """``path``, after checking that no component of it below the outermost locked output folder that holds it
    (:data:`_OWNED`) is a symbolic link (ParameterError naming the link).  Paths outside every locked folder
    are returned unchecked.  Every write under an output folder goes through here (:func:`atomic_path`,
    :func:`make_dirs`)."""
    full = os.path.abspath(path)
    for root in sorted(_OWNED, key=len):
        if full.startswith(root.rstrip(os.sep) + os.sep):
            cur = root
            for part in full[len(root):].strip(os.sep).split(os.sep):
                cur = os.path.join(cur, part)
                if os.path.islink(cur):
                    raise _link_error(cur, root)
            break
    return Path(path)


def check_no_links(root: str | os.PathLike) -> None:
    """ParameterError naming the first symbolic link anywhere inside folder ``root`` (links are not followed)."""
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            if os.path.islink(os.path.join(here, name)):
                raise _link_error(os.path.join(here, name), os.fspath(root))


def make_dirs(path: str | os.PathLike) -> Path:
    """``path.mkdir(parents=True, exist_ok=True)`` below an output folder, refusing links (:func:`refuse_links`)."""
    path = refuse_links(path)
    path.mkdir(parents=True, exist_ok=True)
    return refuse_links(path)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, refusing links (:func:`atomic_path`)."""
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def atomic_path(path: Path, *, durable: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it onto ``path``, else remove it.  A link on
    the way below a locked output folder is refused first (:func:`refuse_links`); the rename replaces the
    directory entry, never the file a link at ``path`` would point to.

    ``durable``: fsync the written file before the rename and the directory after it, so that a file
    present after a crash is complete (for runs resumed from what is on disk)."""
    path = refuse_links(path)
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
        self._owned: str | None = None

    def acquire(self) -> None:
        """Lock, then scan the folder for links (:func:`check_no_links`: refused before anything is written) and
        make it an output root for :func:`refuse_links` until :meth:`release`."""
        self._lock()
        try:
            refuse_links(self.path)  # a folder nested in a locked one (a scenario's sweep) is checked on the way
            check_no_links(self.path)
        except BaseException:
            self.release()
            raise
        self._owned = os.path.abspath(self.path)
        _OWNED.append(self._owned)

    def _lock(self) -> None:
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
        owned = getattr(self, "_owned", None)
        if owned is not None:
            with contextlib.suppress(ValueError):
                _OWNED.remove(owned)
            self._owned = None
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
        check_dir_name(text, option)
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
