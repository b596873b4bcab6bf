"""The faithful engine streamed: every user's messages drawn by the protocol's own randomiser, chunk by chunk of
users, in bounded memory (issue 21 (b)).

What streams.  A shuffler applies a uniformly random permutation; an analyser that reads its view only through
permutation-invariant summaries -- the histogram of a channel's integer messages (:meth:`View.counts`) or their
exact sum (:meth:`View.integer_sum`) -- sees the same thing whatever the order (the multiset is a sufficient
statistic of the shuffled sequence, :mod:`shufflesim.pipeline.shuffler`).  Those summaries add up over chunks of
users, so a trial randomises ``chunk`` users at a time, adds each chunk's messages into a :class:`StreamView`
(per channel: the running histogram while the messages are integers below :data:`HIST_MAX`, the exact integer
sum always) and lets the protocol's *own* analyser read that view.  Nothing is approximated: the users' messages
are the randomiser's, the analyser is the protocol's.  Analysers that need the messages in order
(:meth:`View.channel`: the central baselines, real-valued messages) are refused before the run
(:class:`NeedsMessages`, found by a probe) -- they have fast engines instead.  Shufflers: one shuffler (one
channel of all messages) or parallel shufflers (one channel per message index, none bypassing the shuffle).

Memory: O(chunk · messages per user) for the chunk's messages and temporaries plus the histograms, whatever n.
Data given as a :class:`~shufflesim.pipeline.fast.DataSummary` are expanded one chunk at a time (users in the
order of the sorted distinct values: the randomisers treat users independently, so the order does not change
the law of the multiset of messages).

Seeds.  Trial t at grid point g uses the faithful engine's seed ``s = trial_seed(root, g, t)``.  The analyser
draws from ``child(s, ANALYSER_STREAM)`` as :meth:`Protocol.run` does.  With one chunk (chunk ≥ n) the users'
messages are drawn from ``child(s, RANDOMISER_STREAM)`` exactly as :meth:`Protocol.run` draws them, so the result
is bit-identical to the unchunked faithful engine on the same rows (tested).  With several chunks, chunk c draws
from ``child(s, RANDOMISER_STREAM, c)`` (an addressable ``SeedSequence.spawn`` child; no global RNG).  Exact
identity across chunkings is impossible: a randomiser draws all users' coins of one kind before the next (k-RR:
n uniforms for the blanket coins, then n noise values), so cutting the users into chunks changes which generator
output each user's coin comes from.  The chunked engine is therefore equal to the unchunked one in distribution
(every user's messages independent with the randomiser's law), tested against the exact MSE and the unchunked
engine's trials; a result depends on (seed, chunk), and the chunk size is reported with it.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from shufflesim.core.rng import child
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.integers import exact_integer_sum
from shufflesim.pipeline.protocol import ANALYSER_STREAM, RANDOMISER_STREAM, Protocol, RunResult
from shufflesim.pipeline.shuffler import ParallelShufflers, SingleShuffler

#: default users per chunk (about 60 MiB of messages and temporaries for one message per user)
STREAM_CHUNK = 1 << 20
#: a channel keeps a running histogram while its messages are integers in [0, HIST_MAX)
HIST_MAX = 1 << 20
#: users randomised by the probe that times a chunk before a run (smaller probes stay in cache and run ~3x faster
#: per user than a chunk of 2^20 users: k-RR 35 vs 110 ns a user)
PROBE_USERS = 1 << 18
#: spawn-key prefix of the probe's throw-away seed (disjoint from the data 0, trial 1 and fast-block 2 streams)
PROBE_STREAM = 7


_OTHERWISE = ("run the unchunked faithful engine (no --chunk, n <= 1e7) or --engine fast where the protocol has "
              "one")


class NeedsMessages(NotApplicableError):
    """The analyser asked for the messages themselves, which the streamed engine never holds."""


class StreamView:
    """A view accumulated chunk by chunk: per channel the histogram and exact sum of its integer messages.

    Answers :meth:`counts` and :meth:`integer_sum` as :class:`~shufflesim.pipeline.shuffler.View` does for the
    whole multiset; :meth:`channel` raises :class:`NeedsMessages`."""

    padding = 0
    in_user_order: tuple[int, ...] = ()

    def __init__(self, n_channels: int):
        self._hist: list[np.ndarray | None] = [np.zeros(0, dtype=np.int64) for _ in range(n_channels)]
        self._sum: list[int | None] = [0] * n_channels
        self._size = [0] * n_channels

    def add(self, j: int, msgs: np.ndarray) -> None:
        msgs = np.asarray(msgs)
        self._size[j] += int(msgs.size)
        if msgs.size == 0:
            return
        if msgs.dtype.kind not in "iub":  # real-valued messages: no histogram, no exact sum
            self._hist[j] = self._sum[j] = None
            return
        h = self._hist[j]
        if h is not None:
            lo = 0 if msgs.dtype.kind in "ub" else int(msgs.min())
            hi = int(msgs.max())
            if lo < 0 or hi >= HIST_MAX:  # no histogram from here on: its messages' sum moves to the running sum
                self._sum[j] += _hist_sum(h)
                self._hist[j] = h = None
            else:
                # int64 for booleans and unsigned messages (numpy < 2 refuses to bincount uint64; values < HIST_MAX)
                c = np.bincount(msgs.astype(np.int64, copy=False) if msgs.dtype.kind in "ub" else msgs)
                if c.shape[0] > h.shape[0]:
                    h = np.concatenate([h, np.zeros(c.shape[0] - h.shape[0], dtype=np.int64)])
                h[: c.shape[0]] += c
                self._hist[j] = h
        if h is None and self._sum[j] is not None:  # while a histogram is kept, the sum is read from it
            self._sum[j] += exact_integer_sum(msgs)

    @property
    def n_channels(self) -> int:
        return len(self._size)

    def channel_size(self, j: int = 0) -> int:
        return self._size[j]

    def counts(self, j: int = 0, minlength: int = 0) -> np.ndarray:
        h = self._hist[j]
        if h is None:
            raise NeedsMessages("the analyser needs the histogram of messages outside [0, HIST_MAX) or real-valued")
        return np.concatenate([h, np.zeros(max(0, minlength - h.shape[0]), dtype=np.int64)])

    def integer_sum(self, j: int = 0) -> int:
        if self._sum[j] is None:
            raise NeedsMessages("the analyser needs the sum of real-valued messages (not kept exactly)")
        h = self._hist[j]
        return self._sum[j] + (0 if h is None else _hist_sum(h))

    def channel(self, j: int = 0) -> np.ndarray:
        raise NeedsMessages("the analyser reads the messages in order")

    @property
    def channels(self) -> tuple[np.ndarray, ...]:
        raise NeedsMessages("the analyser reads the messages in order")


def _hist_sum(h: np.ndarray) -> int:
    """Σ_v v·h_v exactly (Python ints; at most HIST_MAX terms, once a trial)."""
    nz = np.flatnonzero(h)
    return sum(int(v) * int(c) for v, c in zip(nz.tolist(), h[nz].tolist()))


class _Users:
    """The users' inputs, chunk by chunk: rows (sliced) or a DataSummary (expanded per chunk, values sorted)."""

    def __init__(self, data: Any):
        from shufflesim.pipeline.fast import DataSummary

        self.summary = isinstance(data, DataSummary)
        if self.summary:
            self.values = np.asarray(data.values)
            self.ends = np.cumsum(np.asarray(data.counts, dtype=np.int64))
            self.n = int(self.ends[-1]) if self.ends.size else 0
        else:
            self.rows = data
            self.n = int(data.shape[0])

    def take(self, a: int, b: int) -> np.ndarray:
        if not self.summary:
            return self.rows[a:b]
        starts = np.concatenate(([0], self.ends[:-1]))
        reps = np.clip(np.minimum(self.ends, b) - np.maximum(starts, a), 0, None)
        return np.repeat(self.values, reps)


def _channels(protocol: Protocol) -> tuple[int, bool]:
    """(number of channels, single shuffler?) of a protocol the streamed engine can run, else refuse."""
    sh, m = protocol.shuffler, int(protocol.messages_per_user)
    if isinstance(sh, SingleShuffler):
        return 1, True
    if isinstance(sh, ParallelShufflers) and not sh.unshuffled:
        return m, False
    raise NotApplicableError(f"protocol {protocol.name!r} cannot be streamed: its shuffler ({sh.name}) is neither one "
                             f"shuffler nor parallel shufflers that shuffle every message; {_OTHERWISE}")


def check_streamable(protocol: Protocol) -> None:
    """Refuse (NotApplicableError) a protocol whose shufflers the streamed engine does not support, and an n whose
    users cannot be counted in int64."""
    _channels(protocol)
    if protocol.n > 2**62:
        raise ParameterError(f"n={protocol.n} is beyond what the streamed engine counts (2^62 users)")


def stream_memory(protocol: Protocol, chunk: int) -> float:
    """Bytes a streamed trial needs at its peak: the chunk's inputs, messages and temporaries (the in-memory
    engine's estimate, :meth:`Protocol.memory_estimate`, for ``chunk`` users) plus a histogram per channel."""
    m = float(getattr(protocol.randomiser, "messages_per_user", 1) or 1)
    k = float(protocol.domain_size or 0)
    chans = _channels(protocol)[0]
    return 8.0 * (4.0 * chunk * m + 3.0 * chunk + 8.0 * k) + 8.0 * chans * HIST_MAX


def stream_run(protocol: Protocol, data: Any, seed: np.random.SeedSequence, *, chunk: int = STREAM_CHUNK,
               truth: Any = None, on_chunk: Callable[[int], None] | None = None) -> RunResult:
    """One faithful execution, ``chunk`` users at a time (see the module docstring for the seeds)."""
    users = _Users(data)
    n = users.n
    if n != protocol.n:
        raise ParameterError(f"the data hold {n} users; the protocol has n={protocol.n}")
    chans, single = _channels(protocol)
    pieces = max(1, math.ceil(n / chunk))
    view = StreamView(chans)
    for c in range(pieces):
        a, b = c * chunk, min(n, (c + 1) * chunk)
        key = child(seed, RANDOMISER_STREAM) if pieces == 1 else child(seed, RANDOMISER_STREAM, c)
        msgs = np.asarray(protocol.randomiser.randomise(users.take(a, b), np.random.Generator(np.random.PCG64(key))))
        if msgs.ndim == 1:
            msgs = msgs[:, None]
        if single:
            view.add(0, msgs.reshape(-1))
        else:
            for j in range(chans):
                view.add(j, msgs[:, j])
        del msgs
        if on_chunk is not None:
            on_chunk(b - a)
    raw = protocol.analyser.analyse(view, np.random.Generator(np.random.PCG64(child(seed, ANALYSER_STREAM))))
    estimate = protocol.point_estimate(raw)
    err = np.subtract(estimate, truth, dtype=float)
    return RunResult(estimate=estimate, truth=truth, sq_error=float(np.sum(np.square(err))),
                     metrics=protocol.metrics(raw, truth), messages_per_user=protocol.randomiser.messages_per_user,
                     bits_per_message=protocol.randomiser.bits_per_message, view=None, details=raw)


def plan_stream(protocol: Protocol, data: Any, root: np.random.SeedSequence, *, chunk: int, trials: int,
                limit_time: bool = True) -> dict:
    """Check a streamed run before it starts: refuse (ResourceError with the estimate and the knob) when a
    chunk would not fit in memory -- before anything is allocated -- or when the time estimated from a probe
    (:data:`PROBE_USERS` users randomised with a throw-away seed, then the protocol's analyser on their view,
    which also refuses analysers that need the messages) exceeds ``SHUFFLESIM_TIME_LIMIT``.  Returns the
    estimates: ``memory_bytes``, ``seconds``, ``users_per_second`` (of the probe).  ``limit_time=False`` leaves
    the time to the caller's policy (:func:`shufflesim.core.resources.choose_path`, as ``simulate`` does)."""
    from shufflesim.core.resources import check_memory, check_time

    check_streamable(protocol)
    what = f"a streamed faithful trial of {protocol.name} (n={protocol.n}, chunks of {chunk} users)"
    mem = stream_memory(protocol, chunk)
    check_memory(mem, what, "lower the chunk size (--chunk USERS)")
    users = _Users(data)
    probe = min(PROBE_USERS, users.n, chunk)
    gen = np.random.Generator(np.random.PCG64(child(root, PROBE_STREAM)))
    chans, single = _channels(protocol)
    view = StreamView(chans)
    t0 = time.perf_counter()  # the probe times what a chunk does: take the users, randomise, accumulate
    msgs = np.asarray(protocol.randomiser.randomise(users.take(0, probe), gen))
    msgs = msgs[:, None] if msgs.ndim == 1 else msgs
    for j in range(chans):
        view.add(j, msgs.reshape(-1) if single else msgs[:, j])
    per_user = (time.perf_counter() - t0) / probe
    try:
        protocol.analyser.analyse(view, gen)
    except NeedsMessages as exc:
        raise NotApplicableError(f"protocol {protocol.name!r} cannot be streamed ({exc}); {_OTHERWISE}") from None
    seconds = per_user * protocol.n * trials
    if limit_time:
        check_time(seconds, f"{trials} streamed faithful trial(s) of {protocol.name} (n={protocol.n})",
                   "lower n or --trials, or use --engine fast")
    return {"memory_bytes": mem, "seconds": seconds, "users_per_second": 1.0 / per_user if per_user > 0 else math.inf}
