"""Where a sweep's chunks run: in this process, on local worker processes, or on a Dask cluster.

Every backend offers one operation, :meth:`Backend.imap_unordered`: apply a pure, module-level function to
a stream of tasks and yield ``(task, result)`` pairs as they finish, with at most ``max_in_flight`` tasks
submitted at a time (so the results waiting in memory stay bounded however many tasks there are).  Which
backend ran never changes a result: tasks carry their own seeds (see :mod:`shufflesim.experiments.sweep`).

* :class:`SerialBackend` — this process, in task order;
* :class:`ProcessBackend` — local worker processes (the default; the start method is chosen by
  :mod:`shufflesim.experiments.parallel`, and where no worker can start safely the tasks run here with a
  :class:`~shufflesim.experiments.parallel.SerialFallbackWarning`);
* :class:`DaskBackend` — an existing Dask distributed cluster (``pip install 'shufflesim[dask]'``), given
  the scheduler's address ``tcp://HOST:PORT``.  A worker that dies mid-task loses nothing: the scheduler
  reruns its tasks elsewhere, and because a task is a pure function of its arguments a rerun returns the
  same bytes; the driver records each chunk once.
"""

from __future__ import annotations

import re
import signal
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterable, Iterator

from shufflesim.errors import ParameterError
from shufflesim.experiments import parallel

#: how long connecting to a Dask scheduler may take before it is an error (seconds)
CONNECT_TIMEOUT = 20.0

BACKENDS = ("serial", "processes", "dask")


class Backend:
    """Base class: see the module docstring."""

    name = "backend"
    workers = 1

    def imap_unordered(self, fn: Callable[[Any], Any], tasks: Iterable[Any],
                       max_in_flight: int | None = None) -> Iterator[tuple[Any, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def describe(self) -> dict:
        return {"backend": self.name, "workers": self.workers}


class SerialBackend(Backend):
    name = "serial"

    def imap_unordered(self, fn, tasks, max_in_flight=None):
        for task in tasks:
            yield task, fn(task)


def _ignore_sigint() -> None:
    # the driver decides what an interrupt means; workers finish their task
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class ProcessBackend(Backend):
    """``workers`` local processes (``ProcessPoolExecutor``)."""

    name = "processes"

    def __init__(self, workers: int, objects: tuple = ()):
        self.workers = workers
        self._pool = None
        ctx, reason = parallel.worker_context(objects)
        if ctx is None:
            parallel.warn_serial(reason, workers)
            self.name, self.workers = "serial", 1
        else:
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_ignore_sigint)

    def imap_unordered(self, fn, tasks, max_in_flight=None):
        if self._pool is None:
            yield from SerialBackend().imap_unordered(fn, tasks)
            return
        limit = max_in_flight or 2 * self.workers
        it = iter(tasks)
        pending: dict = {}
        try:
            for task in it:
                pending[self._pool.submit(fn, task)] = task
                if len(pending) >= limit:
                    break
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    task = pending.pop(fut)
                    result = fut.result()
                    nxt = next(it, None)
                    if nxt is not None:
                        pending[self._pool.submit(fn, nxt)] = nxt
                    yield task, result
        finally:
            for fut in pending:
                fut.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskBackend(Backend):
    """Tasks on an existing Dask distributed cluster (``scheduler`` = ``tcp://HOST:PORT``)."""

    name = "dask"

    def __init__(self, scheduler: str, timeout: float = CONNECT_TIMEOUT):
        try:
            from distributed import Client
        except ImportError:
            raise ParameterError("the dask backend needs the optional extra: pip install 'shufflesim[dask]'") from None
        self.scheduler = scheduler
        try:
            self._client = Client(scheduler, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:  # TimeoutError: nothing answered within `timeout`
            raise ParameterError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self.workers = max(1, sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values()))

    def imap_unordered(self, fn, tasks, max_in_flight=None):
        with self._client.as_current():  # as_completed needs a current client
            yield from self._imap(fn, tasks, max_in_flight)

    def _imap(self, fn, tasks, max_in_flight):
        from distributed import as_completed

        limit = max_in_flight or max(4, 2 * self.workers)
        it = iter(tasks)
        pending: dict = {}
        # pure=True: the key is a hash of (fn, task), so a resubmitted task is the same task
        for task in it:
            pending[self._client.submit(fn, task, pure=True)] = task
            if len(pending) >= limit:
                break
        ac = as_completed(list(pending))
        try:
            for fut in ac:
                task = pending.pop(fut)
                result = fut.result()
                fut.release()
                nxt = next(it, None)
                if nxt is not None:
                    new = self._client.submit(fn, nxt, pure=True)
                    pending[new] = nxt
                    ac.add(new)
                yield task, result
        finally:
            for fut in pending:
                fut.cancel()

    def describe(self) -> dict:
        return {"backend": self.name, "workers": self.workers, "scheduler": self.scheduler}

    def close(self) -> None:
        self._client.close()


#: a scheduler address: [tcp|tls]://HOST:PORT or HOST:PORT (HOST a name, an IPv4 or a bracketed IPv6 address)
_ADDRESS = re.compile(r"(?:(tcp|tls)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")


def check_scheduler_address(address) -> str:
    """``address`` if it has the form ``[tcp|tls]://HOST:PORT`` (or ``HOST:PORT``) with a port in 1..65535, else a
    :class:`ParameterError` (distributed itself would print a traceback and keep retrying)."""
    m = _ADDRESS.fullmatch(address.strip()) if isinstance(address, str) else None
    if m is None or not 1 <= int(m.group(3)) <= 65535:
        raise ParameterError(f"--scheduler {address!r} is not a Dask scheduler address (allowed: tcp://HOST:PORT or "
                             "tls://HOST:PORT, e.g. tcp://127.0.0.1:8786)")
    return address.strip()


def make_backend(name: str = "processes", *, workers: int = 1, scheduler: str | None = None,
                 objects: tuple = ()) -> Backend:
    """The backend ``name`` (``serial | processes | dask``); ``scheduler`` implies ``dask``."""
    if scheduler is not None:
        name = "dask"
    if name not in BACKENDS:
        raise ParameterError(f"backend must be one of {', '.join(BACKENDS)}; got {name!r}")
    if name == "dask":
        if not scheduler:
            raise ParameterError("the dask backend needs the scheduler's address, e.g. --scheduler tcp://HOST:8786")
        return DaskBackend(check_scheduler_address(scheduler))
    if name == "serial" or workers <= 1:
        return SerialBackend()
    return ProcessBackend(workers, objects)
