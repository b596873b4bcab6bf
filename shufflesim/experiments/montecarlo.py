"""Monte-Carlo runner: T independent trials of a protocol on a fixed data set.

Trial t at grid point g draws all its randomness from ``SeedSequence(root entropy, spawn_key=(1, g, t))``
(:func:`shufflesim.core.rng.trial_seed`): a trial's result depends only on (protocol, data, seed, g, t), never
on which worker ran it or how many workers there are.  Trials run in chunks on local processes
(``workers > 1``) or in this process (``workers = 1``); records are sorted by trial before they are
returned, so the table is identical for any worker count (the ``seconds`` column aside).

The result is a tidy :class:`pandas.DataFrame`, one row per trial, with primitive columns:
``trial``, ``sq_error``, ``error`` (signed, scalar estimands only), the protocol's extra metrics (e.g.
``tv``) and ``seconds``.  :func:`summarise` turns it into the mean squared error with a confidence
interval next to the protocol's theory columns.
"""

from __future__ import annotations

import math
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import DataError, ParameterError
from shufflesim.pipeline.protocol import Protocol
from shufflesim.core.rng import RngLike, as_seed_sequence, trial_seed
from shufflesim.experiments import parallel
from shufflesim.experiments.stats import support_ci
from shufflesim.pipeline.fast import FAST_BLOCK, DataSummary, fast_records, resolve_engine, summarise_data
from shufflesim.pipeline.fast import mse_expected_of

# --- worker side ---------------------------------------------------------------------------------------
_WORKER_STATE: dict[str, Any] = {}


def _init_worker(protocol: Protocol, data: np.ndarray, truth: Any, summary: Any = None) -> None:
    # the driver decides what an interrupt means: workers finish their chunk, the driver keeps the results
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_STATE.update(protocol=protocol, data=data, truth=truth, summary=summary)


def check_summary(protocol: Protocol, summary: DataSummary) -> DataSummary:
    """A DataSummary given as the data: its kind, size and (categorical) domain must match the protocol."""
    if summary.kind != protocol.data_kind:
        raise DataError(f"the counts are {summary.kind} data; protocol {protocol.name!r} takes "
                        f"{protocol.data_kind} inputs")
    counts = np.asarray(summary.counts)
    if counts.ndim != 1 or np.any(counts < 0) or int(counts.sum()) != protocol.n or summary.n != protocol.n:
        raise DataError(f"the counts must be non-negative and sum to n={protocol.n}; got total {int(counts.sum())}")
    if protocol.data_kind == "categorical" and counts.shape[0] != protocol.domain_size:
        raise DataError(f"the counts give {counts.shape[0]} categories; the protocol has {protocol.domain_size}")
    return summary


def run_trial(protocol: Protocol, data: np.ndarray, root: np.random.SeedSequence, point: int, trial: int,
              truth: Any = None) -> dict[str, Any]:
    """Run trial ``trial`` of grid point ``point`` and return its tidy record (a pure function)."""
    t0 = time.perf_counter()
    res = protocol.run(data, trial_seed(root, point, trial), validate=False, truth=truth)
    rec: dict[str, Any] = {"trial": trial, "sq_error": res.sq_error}
    if np.ndim(res.estimate) == 0:
        rec["error"] = float(res.estimate - res.truth)
    rec.update({k: float(v) for k, v in res.metrics.items()})
    rec["seconds"] = time.perf_counter() - t0
    return rec


def fast_trials(protocol: Protocol, summary: Any, truth: Any, root: np.random.SeedSequence, point: int, start: int,
                stop: int) -> list[dict[str, Any]]:
    """Records of trials ``[start, stop)`` under the fast engine (drawn in blocks,
    :func:`shufflesim.pipeline.fast.fast_records`); ``seconds`` is the chunk's time per trial."""
    t0 = time.perf_counter()
    cols = fast_records(protocol, summary, truth, root, point, start, stop)
    per = (time.perf_counter() - t0) / (stop - start)
    names = list(cols)
    return [{"trial": t, **{k: float(cols[k][i]) for k in names}, "seconds": per}
            for i, t in enumerate(range(start, stop))]


def _run_chunk(root_state: tuple, point: int, trials: list[int]) -> list[dict[str, Any]]:
    root = np.random.SeedSequence(root_state[0], spawn_key=root_state[1])
    st = _WORKER_STATE
    if st.get("summary") is not None:  # chunks are runs of consecutive trials
        return fast_trials(st["protocol"], st["summary"], st["truth"], root, point, trials[0], trials[-1] + 1)
    return [run_trial(st["protocol"], st["data"], root, point, t, st["truth"]) for t in trials]


def faithful_seconds(protocol: Protocol, data: np.ndarray, root: RngLike, *, trials: int, workers: int = 1) -> float:
    """Estimated run time of ``trials`` in-memory faithful trials (:func:`run_trials`, ``engine="faithful"``) on
    ``workers`` processes, from a probe: one execution of the protocol (randomiser, shuffler, analyser, truth) on
    the first min(:data:`~shufflesim.pipeline.stream.PROBE_USERS`, n) users with a throw-away seed (the probe
    stream of :func:`~shufflesim.pipeline.stream.plan_stream`: no trial's draws change), scaled to n users a
    trial; the faster of two probes where one is quick (the first pays for warm-up).  An analyser that refuses a
    view of fewer than n users is timed to the randomiser only.  This is what
    :func:`shufflesim.core.resources.choose_path` weighs against the time limit before a run starts."""
    from shufflesim.core.rng import child
    from shufflesim.errors import ShufflesimError
    from shufflesim.pipeline.stream import PROBE_STREAM, PROBE_USERS

    rows = np.asarray(data)
    probe = max(1, min(PROBE_USERS, int(rows.shape[0])))
    seed = child(as_seed_sequence(root), PROBE_STREAM)
    best = math.inf
    for _ in range(2):
        t0 = time.perf_counter()
        try:
            protocol.run(rows[:probe], seed, validate=False)
        except (ShufflesimError, ValueError, IndexError, ArithmeticError):
            t0 = time.perf_counter()
            protocol.randomiser.randomise(rows[:probe], np.random.Generator(np.random.PCG64(seed)))
        best = min(best, time.perf_counter() - t0)
        if best > 0.1:
            break
    return best / probe * float(protocol.n) * trials / max(1, workers)


#: bytes one trial's record takes at the peak of :func:`run_trials` (a dict of a few floats, then a DataFrame row:
#: 370 measured with tracemalloc for k-RR and the blanket sum, rounded up)
RECORD_BYTES = 512.0


def fast_seconds(protocol: Protocol, data: Any, root: RngLike, *, trials: int, workers: int = 1) -> float:
    """Estimated run time of ``trials`` fast-engine trials of :func:`run_trials` on ``workers`` processes: one
    block (up to :data:`~shufflesim.pipeline.fast.FAST_BLOCK` trials) drawn from the probe stream
    (``child(root, PROBE_STREAM)``: no trial's draws change), records included, scaled to ``trials``."""
    from shufflesim.core.rng import child
    from shufflesim.pipeline.stream import PROBE_STREAM

    resolve_engine(protocol, "fast")  # a protocol without a fast engine is refused in one line, not probed
    if isinstance(data, DataSummary):
        summary = check_summary(protocol, data)
        truth = protocol.truth_from_summary(summary)
    else:
        rows = protocol.check_data(data)
        summary, truth = summarise_data(protocol, rows), protocol.truth(rows)
    probe = min(trials, FAST_BLOCK)
    t0 = time.perf_counter()
    fast_trials(protocol, summary, truth, child(as_seed_sequence(root), PROBE_STREAM), 0, 0, probe)
    return (time.perf_counter() - t0) / probe * trials / max(1, workers)


# --- driver --------------------------------------------------------------------------------------------
@dataclass
class TrialRun:
    """Outcome of :func:`run_trials`: the records, and whether every requested trial finished."""

    records: pd.DataFrame
    complete: bool
    requested: int
    #: the engine that ran ("faithful" or "fast"; see :mod:`shufflesim.pipeline.fast`)
    engine: str = "faithful"


def run_trials(
    protocol: Protocol,
    data: np.ndarray,
    *,
    trials: int,
    rng: RngLike = None,
    point: int = 0,
    workers: int = 1,
    chunk_size: int | None = None,
    on_progress: Callable[[int], None] | None = None,
    engine: str = "faithful",
) -> TrialRun:
    """Run ``trials`` independent trials of ``protocol`` on ``data``.

    ``rng`` is the study's root seed.  On ``KeyboardInterrupt`` the trials finished so far are returned
    with ``complete=False`` (never passed off as complete).  ``workers > 1`` works from a guarded or an
    unguarded script, from stdin and from a notebook; where no worker processes can be started safely the
    trials run here, with a one-line :class:`~shufflesim.experiments.parallel.SerialFallbackWarning`
    (see :mod:`shufflesim.experiments.parallel`).  Results are identical either way.

    ``engine`` is ``"faithful"`` (every message simulated; the default), ``"fast"`` (the protocol's exact
    sufficient-statistic sampler, :mod:`shufflesim.pipeline.fast`) or ``"auto"`` (fast where it exists).
    """
    if not isinstance(protocol, Protocol):
        raise ParameterError(f"run_trials needs a Protocol (shufflesim.pipeline.registry.create); got {protocol!r}")
    trials = check_int("trials", trials, minimum=1)
    workers = check_int("workers", workers, minimum=1)
    point = check_int("point", point, minimum=0)
    if chunk_size is not None:
        chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    if on_progress is not None and not callable(on_progress):
        raise ParameterError(f"on_progress must be callable; got {on_progress!r}")
    if isinstance(data, DataSummary):  # issue 21: data as counts, never expanded to n rows
        engine = resolve_engine(protocol, engine)
        if engine != "fast":
            raise ParameterError("data given as counts (a DataSummary) run only under the fast engine; "
                                 "the faithful engine simulates every user's message (give the n inputs)")
        summary = check_summary(protocol, data)
        truth = protocol.truth_from_summary(summary)
    else:
        engine = resolve_engine(protocol, engine)
        if engine == "faithful":  # the messages of one faithful trial; the fast engine allocates none of them
            protocol.check_resources()
        data = protocol.check_data(data)
        truth = protocol.truth(data)
        summary = summarise_data(protocol, data) if engine == "fast" else None
    root = as_seed_sequence(rng)
    records: list[dict[str, Any]] = []
    complete = True
    ctx = None
    if workers > 1:
        ctx, reason = parallel.worker_context((protocol,))
        if ctx is None:
            parallel.warn_serial(reason, workers)
    try:
        if ctx is None:
            step = FAST_BLOCK if summary is not None else 1
            for s in range(0, trials, step):
                if summary is not None:
                    recs = fast_trials(protocol, summary, truth, root, point, s, min(trials, s + step))
                else:
                    recs = [run_trial(protocol, data, root, point, s, truth)]
                records.extend(recs)
                if on_progress:
                    on_progress(len(recs))
        else:
            size = chunk_size or max(1, math.ceil(trials / (workers * 16)))
            chunks = [list(range(s, min(trials, s + size))) for s in range(0, trials, size)]
            state = (root.entropy, tuple(root.spawn_key))
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                     initargs=(protocol, data, truth, summary)) as pool:
                pending = {pool.submit(_run_chunk, state, point, c) for c in chunks}
                try:
                    while pending:
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for fut in done:
                            recs = fut.result()
                            records.extend(recs)
                            if on_progress:
                                on_progress(len(recs))
                except KeyboardInterrupt:
                    # keep every chunk that finishes: cancel the queued ones, let running ones complete
                    for fut in pending:
                        fut.cancel()
                    finished, _ = wait(pending)
                    for fut in finished:
                        if not fut.cancelled() and fut.exception() is None:
                            records.extend(fut.result())
                    raise
    except KeyboardInterrupt:
        complete = False
    frame = pd.DataFrame.from_records(records)
    if len(frame):
        frame = frame.sort_values("trial", kind="stable").reset_index(drop=True)
    return TrialRun(frame, complete and len(frame) == trials, trials, engine)


def run_trials_streamed(protocol: Protocol, data: Any, *, trials: int, rng: RngLike = None, point: int = 0,
                        chunk: int | None = None, on_users: Callable[[int], None] | None = None) -> TrialRun:
    """``trials`` faithful trials streamed ``chunk`` users at a time in bounded memory
    (:mod:`shufflesim.pipeline.stream`, issue 21): ``data`` as rows or as a DataSummary (expanded one chunk at a
    time).  Trial t uses the faithful engine's seed ``trial_seed(root, point, t)``; with one chunk the records
    equal :func:`run_trials`'s.  Runs in this process (the chunks of a trial are sequential); call
    :func:`shufflesim.pipeline.stream.plan_stream` first for the estimates and refusals.  ``on_users`` gets the
    number of users done after every chunk.  An interrupt returns the finished trials with ``complete=False``."""
    from shufflesim.pipeline.stream import STREAM_CHUNK, stream_run

    if not isinstance(protocol, Protocol):
        raise ParameterError(f"run_trials_streamed needs a Protocol; got {protocol!r}")
    trials = check_int("trials", trials, minimum=1)
    chunk = STREAM_CHUNK if chunk is None else check_int("chunk", chunk, minimum=1)
    if isinstance(data, DataSummary):
        data = check_summary(protocol, data)
        truth = protocol.truth_from_summary(data)
    else:
        data = protocol.check_data(data)
        truth = protocol.truth(data)
    root = as_seed_sequence(rng)
    records: list[dict[str, Any]] = []
    try:
        for t in range(trials):
            t0 = time.perf_counter()
            res = stream_run(protocol, data, trial_seed(root, point, t), chunk=chunk, truth=truth, on_chunk=on_users)
            rec: dict[str, Any] = {"trial": t, "sq_error": res.sq_error}
            if np.ndim(res.estimate) == 0:
                rec["error"] = float(res.estimate - res.truth)
            rec.update({k: float(v) for k, v in res.metrics.items()})
            rec["seconds"] = time.perf_counter() - t0
            records.append(rec)
    except KeyboardInterrupt:
        pass
    frame = pd.DataFrame.from_records(records)
    return TrialRun(frame, len(frame) == trials, trials, "faithful")


def summarise(records: pd.DataFrame, protocol: Protocol, data: np.ndarray, *, level: float = 0.95) -> dict[str, Any]:
    """Mean squared error with a ``level`` confidence interval, beside the theory columns.

    The interval is Student-t on the trial mean where it lies within the quantity's support; where it
    leaves it (squared errors are >= 0, TV distances in [0, 1]) a support-respecting interval is used
    instead and ``ci_method`` / ``<metric>_ci_method`` say which (:func:`~.stats.support_ci`).  With
    fewer than two trials the interval is not computable: ``[None, None]`` and the method says so.
    """
    if not isinstance(protocol, Protocol):
        raise ParameterError(f"summarise needs a Protocol; got {protocol!r}")
    if not isinstance(records, pd.DataFrame) or "sq_error" not in records:
        raise ParameterError("summarise needs the records of run_trials (a DataFrame with a sq_error column)")
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    mse, lo, hi, method = support_ci(records["sq_error"].to_numpy(), level, low=0.0)
    out: dict[str, Any] = {
        "trials": int(len(records)),
        "mse": mse,
        "mse_ci": [lo, hi],
        "ci_level": level,
        "ci_method": method,
        "mse_expected": mse_expected_of(protocol, data),  # rows or a DataSummary (issue 21)
        "mse_worst": protocol.mse_worst(),
        "mse_bound": protocol.mse_bound(),
    }
    for name in protocol.metric_names:
        if name in records:
            low, high = protocol.metric_support.get(name, (None, None))
            m, l2, h2, how = support_ci(records[name].to_numpy(), level, low=low, high=high)
            out[name] = m
            out[f"{name}_ci"] = [l2, h2]
            out[f"{name}_ci_method"] = how
    return out
