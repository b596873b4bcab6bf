"""Exact fast engines: sample the analyser's sufficient statistic directly instead of every message.

Many analysers depend on the shuffled view only through a small statistic: the histogram of the messages
(k-RR, the blanket summation), per-level histograms (the recursive protocol), a total mod q (IKOS), a count
of ones (Cheu et al.), the curator's exact total plus noise (central baselines).  Given the data, that
statistic has an exact distribution that is a composition of binomials and multinomials *grouped by input
value* — users with the same input are exchangeable — so a trial costs O(k) or O(k²) draws instead of
O(n·m).

A protocol opts in by implementing one method, :meth:`Protocol.sample_fast(summary, rng)
<shufflesim.pipeline.protocol.Protocol.sample_fast>`: given the :class:`DataSummary` of the data (distinct
input values and their multiplicities) and a ``numpy.random.Generator``, it returns exactly what its
faithful pipeline's analyser returns (same type, same distribution).  Everything after the analyser
(:meth:`~shufflesim.pipeline.protocol.Protocol.point_estimate`, metrics, squared error) is shared, so the
two engines differ only in how the analyser's output is drawn.

Engines: ``"faithful"`` (every message drawn, shuffled lazily, analysed), ``"fast"`` (the sampler above;
an error for protocols without one), ``"auto"`` (fast where it exists, else faithful).

Streams of the fast engine: blocks.  At O(k) draws a trial, deriving a seed sequence per trial would cost
more than the trial.  The fast engine therefore draws trials in blocks of :data:`FAST_BLOCK` consecutive
trials: block b of grid point g draws from ``SeedSequence(root, spawn_key=(2, g, b))`` (prefix 2: the
data use 0, the faithful trials 1), trial t is row t mod FAST_BLOCK of block t // FAST_BLOCK.  A block's
content never depends on how trials are grouped into chunks or workers (a chunk computes the blocks that
cover it and keeps its rows), so results stay bit-identical for any chunking, worker count and backend.
A protocol may also implement ``sample_fast_batch(summary, truth, rng, size)`` returning the records'
columns for ``size`` trials at once, vectorised over trials (every built-in fast engine does; the
summation protocols through :func:`blanket_total_batch` and :func:`rounded_total_batch`, which draw the same
laws as the per-trial samplers, tests/test_fast_batch.py); otherwise :func:`fast_block` calls
:meth:`~Protocol.sample_fast` once per trial with the block's generator.  Fast-engine numbers are *not*
the faithful engine's numbers (other draws from the same distribution).  Equivalence in distribution is
tested per protocol (tests/test_fast_engines.py).

The shared exact samplers used by the protocols live here: :func:`rr_histogram` (k-ary blanket randomised
response of a multiset), :func:`rounded_total` (the sum of randomised roundings), :func:`flip_count`
(ones after independent bit flips).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from shufflesim.core.rng import RngLike, as_seed_sequence, child
from shufflesim.errors import ParameterError
from shufflesim.pipeline.protocol import Protocol, RunResult

ENGINES = ("faithful", "fast", "auto")
#: spawn-key prefix of the fast engine's blocks, ``(FAST_STREAM, point, block)``
FAST_STREAM = 2
#: trials per block of the fast engine (part of the engine's definition: changing it changes the numbers)
FAST_BLOCK = 256


@dataclass(frozen=True)
class DataSummary:
    """The data as a multiset: sorted distinct ``values`` and their ``counts`` (Σ counts = n).

    For categorical data ``values`` is ``arange(k)`` (zero counts included), so ``counts`` is the
    histogram.  Real-valued data keep their distinct values (float64).
    """

    values: np.ndarray
    counts: np.ndarray
    n: int
    kind: str

    @classmethod
    def of(cls, data: np.ndarray, kind: str, k: int | None = None) -> "DataSummary":
        data = np.asarray(data)
        if kind == "categorical":
            counts = np.bincount(data, minlength=k or 0).astype(np.int64)
            return cls(np.arange(counts.shape[0]), counts, int(data.shape[0]), kind)
        values, counts = np.unique(np.asarray(data, dtype=float), return_counts=True)
        return cls(values, counts.astype(np.int64), int(data.shape[0]), kind)


def summarise_data(protocol: Protocol, data: np.ndarray) -> DataSummary:
    """The :class:`DataSummary` of ``data`` for ``protocol`` (categorical: histogram over k values)."""
    return DataSummary.of(data, protocol.data_kind, protocol.domain_size)


def has_fast(protocol: Protocol) -> bool:
    """Whether ``protocol`` implements :meth:`~Protocol.sample_fast`."""
    return type(protocol).sample_fast is not Protocol.sample_fast


def resolve_engine(protocol: Protocol, engine: str) -> str:
    """``"faithful"`` or ``"fast"``: the engine that runs for ``engine`` (``faithful | fast | auto``)."""
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "auto":
        return "fast" if has_fast(protocol) else "faithful"
    if engine == "fast" and not has_fast(protocol):
        raise ParameterError(f"protocol {protocol.name!r} has no fast engine (its analyser needs the messages); "
                             "use --engine faithful or auto")
    return engine


def run_fast(protocol: Protocol, summary: DataSummary, rng: RngLike, truth: Any) -> RunResult:
    """One execution under the fast engine with its own seed (a single run; Monte-Carlo trials and sweeps
    draw in blocks, :func:`fast_records`)."""
    gen = np.random.Generator(np.random.PCG64(as_seed_sequence(rng)))
    return _result(protocol, protocol.sample_fast(summary, gen), truth)


def block_seed(root: np.random.SeedSequence, point: int, block: int) -> np.random.SeedSequence:
    """Seed sequence of the fast engine's block ``block`` at grid point ``point``."""
    return child(root, FAST_STREAM, point, block)


def record_columns(results: list[RunResult]) -> dict[str, np.ndarray]:
    """The per-trial record columns (``sq_error``, ``error`` for scalar estimands, the metrics)."""
    cols: dict[str, np.ndarray] = {"sq_error": np.array([r.sq_error for r in results], dtype=float)}
    if results and np.ndim(results[0].estimate) == 0:
        cols["error"] = np.array([float(r.estimate - r.truth) for r in results], dtype=float)
    for name in (results[0].metrics if results else {}):
        cols[name] = np.array([float(r.metrics[name]) for r in results], dtype=float)
    return cols


def fast_block(protocol: Protocol, summary: DataSummary, truth: Any, root: np.random.SeedSequence, point: int,
               block: int, rows: int = FAST_BLOCK) -> dict[str, np.ndarray]:
    """Record columns of the first ``rows`` trials of block ``block`` (the same values whatever ``rows``)."""
    gen = np.random.Generator(np.random.PCG64(block_seed(root, point, block)))
    batch = getattr(protocol, "sample_fast_batch", None)
    if batch is not None:  # vectorised: always the whole block, so that its draws never depend on rows
        return {k: v[:rows] for k, v in batch(summary, truth, gen, FAST_BLOCK).items()}
    results = []
    for _ in range(rows):  # sequential: the first rows trials are a prefix of the whole block
        raw = protocol.sample_fast(summary, gen)
        results.append(_result(protocol, raw, truth))
    return record_columns(results)


def fast_records(protocol: Protocol, summary: DataSummary, truth: Any, root: RngLike, point: int, start: int,
                 stop: int) -> dict[str, np.ndarray]:
    """Record columns of trials ``[start, stop)`` of grid point ``point`` under the fast engine."""
    root = as_seed_sequence(root)
    parts = []
    for b in range(start // FAST_BLOCK, (stop - 1) // FAST_BLOCK + 1):
        lo = b * FAST_BLOCK
        cols = fast_block(protocol, summary, truth, root, point, b, rows=min(FAST_BLOCK, stop - lo))
        a = max(start - lo, 0)
        parts.append({k: v[a:] for k, v in cols.items()})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _result(protocol: Protocol, raw: Any, truth: Any) -> RunResult:
    estimate = protocol.point_estimate(raw)
    err = np.subtract(estimate, truth, dtype=float)
    return RunResult(estimate=estimate, truth=truth, sq_error=float(np.sum(np.square(err))),
                     metrics=protocol.metrics(raw, truth), messages_per_user=_cached(protocol, "messages_per_user"),
                     bits_per_message=_cached(protocol, "bits_per_message"), view=None, details=raw)


def _cached(protocol: Protocol, name: str) -> Any:
    # fixed per protocol; computing bits_per_message costs more than a fast trial's draws
    cache = protocol.__dict__.setdefault("_fast_cache", {})
    if name not in cache:
        cache[name] = getattr(protocol, name)
    return cache[name]


# --- shared exact samplers ------------------------------------------------------------------------------
def rr_histogram(counts: np.ndarray, gamma: float, k: int, rng: np.random.Generator) -> np.ndarray:
    """Histogram of k-ary blanket randomised response applied to a multiset with histogram ``counts``.

    Each user independently keeps its value with probability 1 − γ and otherwise reports a uniform value
    on {0..k−1}.  The users of value v who keep it are Binomial(c_v, 1 − γ), independently over v; the
    others (their total B) report Multinomial(B, uniform) — whose values they had does not matter.
    Exact, O(k).
    """
    counts = np.asarray(counts, dtype=np.int64)
    kept = rng.binomial(counts, 1.0 - gamma) if gamma < 1.0 else np.zeros_like(counts)
    blanket = int(counts.sum() - kept.sum())
    out = rng.multinomial(blanket, _uniform(k)) if blanket else np.zeros(k, dtype=np.int64)
    out[: kept.shape[0]] += kept
    return out


_UNIFORM: dict[int, np.ndarray] = {}


def _uniform(k: int) -> np.ndarray:
    if k not in _UNIFORM:
        _UNIFORM[k] = np.full(k, 1.0 / k)
    return _UNIFORM[k]


def rr_histogram_batch(counts: np.ndarray, gamma: float, k: int, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent draws of :func:`rr_histogram`, one per row (vectorised over trials)."""
    counts = np.asarray(counts, dtype=np.int64)
    kept = rng.binomial(counts, 1.0 - gamma, size=(size, counts.shape[0])) if gamma < 1.0 \
        else np.zeros((size, counts.shape[0]), dtype=np.int64)
    blanket = counts.sum() - kept.sum(axis=1)
    out = rng.multinomial(blanket, _uniform(k))
    out[:, : counts.shape[0]] += kept
    return out


def rounded_parts(values: np.ndarray, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """⌊scale·v⌋ and the fractional part per distinct value, computed exactly as
    :func:`shufflesim.maths.rounding.randomised_round` computes them per user."""
    s = np.asarray(values, dtype=float) * scale
    lo = np.floor(s)
    return lo, s - lo


def rounded_total(values: np.ndarray, counts: np.ndarray, scale: int, rng: np.random.Generator) -> int:
    """Σ over users of randomised_round(x, scale): Σ_v c_v⌊scale·v⌋ + Binomial(c_v, frac_v). Exact."""
    lo, frac = rounded_parts(values, scale)
    ups = rng.binomial(np.asarray(counts, dtype=np.int64), frac)
    return int(np.dot(lo.astype(np.int64), counts)) + int(ups.sum())


def rounded_histogram(values: np.ndarray, counts: np.ndarray, scale: int, rng: np.random.Generator) -> np.ndarray:
    """Histogram over {0..scale} of randomised_round(x, scale) for the users' multiset.  Exact, O(#values)."""
    lo, frac = rounded_parts(values, scale)
    counts = np.asarray(counts, dtype=np.int64)
    ups = rng.binomial(counts, frac)
    hist = np.zeros(scale + 1, dtype=np.int64)
    np.add.at(hist, lo.astype(np.int64), counts - ups)
    np.add.at(hist, np.minimum(lo.astype(np.int64) + 1, scale), ups)
    return hist


def flip_count(ones: int, total: int, flip: float, rng: np.random.Generator) -> int:
    """Number of ones after flipping each of ``total`` bits (``ones`` of them 1) independently w.p. ``flip``."""
    return int(rng.binomial(ones, 1.0 - flip)) + int(rng.binomial(total - ones, flip))


# --- batch samplers: the same laws for ``size`` trials at once (``sample_fast_batch``) ------------------
#: distinct values held by at most this many users are drawn user by user in the batch samplers (one
#: uniform a user: a uniform costs ~1/10 of a binomial draw), larger groups by binomials per value
PER_USER_MAX = 8
#: draws per row-chunk of a batch: temporary arrays of ~512 kB stay in cache (2.4x faster than 16 MB chunks
#: for blanket-sum at n = 1000).  Depends on the data only, so a block's draws never depend on workers or
#: chunking
BATCH_CELLS = 1 << 16


def _groups(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the value of every user of a small group, indices of the large groups) — see PER_USER_MAX."""
    small = counts <= PER_USER_MAX
    return np.repeat(np.flatnonzero(small), counts[small]), np.flatnonzero(~small)


def _row_chunks(size: int, cells: int):
    step = max(1, BATCH_CELLS // max(1, cells))
    return ((a, min(size, a + step)) for a in range(0, size, step))


def rounded_total_batch(values: np.ndarray, counts: np.ndarray, scale: int, rng: np.random.Generator,
                        size: int) -> np.ndarray:
    """``size`` independent draws of :func:`rounded_total` (int64 array), vectorised over trials.

    Same law: Σ_v c_v⌊scale·v⌋ plus, per value, Binomial(c_v, frac_v) rounded-up users — drawn as one
    binomial per value for large groups and as one Bernoulli (uniform < frac) per user for values held by
    at most :data:`PER_USER_MAX` users (a Binomial(c, f) is the sum of c independent Bernoulli(f))."""
    lo, frac = rounded_parts(values, scale)
    counts = np.asarray(counts, dtype=np.int64)
    users, big = _groups(counts)
    base = int(np.dot(lo.astype(np.int64), counts))
    f_user, c_big, f_big = frac[users], counts[big], frac[big]
    out = np.full(size, base, dtype=np.int64)
    for a, b in _row_chunks(size, users.size + big.size):
        if big.size:
            out[a:b] += rng.binomial(c_big, f_big, size=(b - a, big.size)).sum(axis=1)
        if users.size:
            out[a:b] += (rng.random((b - a, users.size)) < f_user).sum(axis=1)
    return out


def blanket_total_batch(lo: np.ndarray, frac: np.ndarray | None, counts: np.ndarray, top: int, gamma: float,
                        rng: np.random.Generator, size: int) -> np.ndarray:
    """Sum of the reports of blanket RR over {0..top} (keep w.p. 1 − γ, else uniform on {0..top}) applied to
    users whose inputs are ``lo_v + Bernoulli(frac_v)`` (``frac`` None: the integers ``lo_v``), ``counts_v``
    users per value; ``size`` independent draws (int64 array), vectorised over trials.

    The law of the total of :func:`rr_histogram` applied to :func:`rounded_histogram` (or to the exact
    histogram of ``lo``), drawn in the same way except that users of small groups (values held by at most
    :data:`PER_USER_MAX` users, when ``frac`` is given) are drawn one by one: one uniform u a user,
    blanketed if u < γ, kept and rounded up if γ ≤ u < γ + (1 − γ)·frac (probability (1 − γ)·frac), kept
    and rounded down otherwise — the same three probabilities as a rounding then an independent blanket
    coin.  The other users: ups ~ Binomial(c_v, frac_v) per value, their histogram over {0..top}, and
    Binomial(h_d, 1 − γ) kept users per value d.  The B blanketed users report Multinomial(B, uniform)
    over {0..top}, whatever their inputs."""
    lo = np.asarray(lo, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    bins = top + 1
    grid = np.arange(bins, dtype=np.int64)
    if frac is None:  # exact histogram of the inputs: one binomial per value d of {0..top}
        users, big = np.zeros(0, dtype=np.int64), np.flatnonzero(counts)
    else:
        users, big = _groups(counts)
        users = users[np.argsort(lo[users], kind="stable")]  # by input floor: segments of equal lo
        frac = np.asarray(frac, dtype=float)
    seg_lo, seg_start = np.unique(lo[users], return_index=True)  # Σ over blanketed users of lo, per segment
    lo_sum_user = int(lo[users].sum())
    thr_user = None if frac is None else gamma + (1.0 - gamma) * frac[users]
    hist_big = np.bincount(lo[big], weights=counts[big], minlength=bins).astype(np.int64)
    c_big, up_bin = counts[big], np.minimum(lo[big] + 1, top)
    f_big = None if frac is None else frac[big]
    out = np.empty(size, dtype=np.int64)
    for a, b in _row_chunks(size, users.size + big.size + 2 * bins):
        m = b - a
        kept_sum = np.zeros(m, dtype=np.int64)
        kept = np.zeros(m, dtype=np.int64)
        if big.size:
            # binomials drawn value by value (size (values, m)): numpy's BTPE reuses its set-up while (n, p)
            # repeat, 1.4x faster than row by row
            if f_big is not None:  # rounded histogram: ups move from lo to lo + 1 (rounded_histogram)
                ups = rng.binomial(c_big[:, None], f_big[:, None], size=(big.size, m)).T
                rows = np.repeat(np.arange(m) * bins, big.size)
                moved = np.bincount(rows + np.tile(up_bin, m), weights=ups.ravel(), minlength=m * bins) - \
                    np.bincount(rows + np.tile(lo[big], m), weights=ups.ravel(), minlength=m * bins)
                hist = hist_big + moved.reshape(m, bins).astype(np.int64)
                kb = rng.binomial(hist, 1.0 - gamma)  # kept users per reported value (rr_histogram)
            else:
                kb = rng.binomial(hist_big[:, None], 1.0 - gamma, size=(bins, m)).T
            kept_sum += kb @ grid
            kept += kb.sum(axis=1)
        if users.size:
            u = rng.random((m, users.size))
            blank = u < gamma
            nb = np.count_nonzero(blank, axis=1)
            kept_sum += lo_sum_user - np.add.reduceat(blank, seg_start, axis=1, dtype=np.int64) @ seg_lo
            if thr_user is not None:
                kept_sum += np.count_nonzero(u < thr_user, axis=1) - nb  # gamma <= u < thr: kept, rounded up
            kept += users.size - nb
        out[a:b] = kept_sum + rng.multinomial(n - kept, _uniform(bins)) @ grid
    return out


def flip_count_batch(ones: np.ndarray, total: int, flip: float, rng: np.random.Generator) -> np.ndarray:
    """:func:`flip_count` for an array of ``ones`` (one independent draw per entry)."""
    ones = np.asarray(ones, dtype=np.int64)
    return rng.binomial(ones, 1.0 - flip) + rng.binomial(total - ones, flip)


def scalar_columns(estimate: np.ndarray, truth: float) -> dict[str, np.ndarray]:
    """The record columns of a scalar estimand (``sq_error``, ``error``), as :func:`record_columns` computes
    them per trial."""
    err = np.subtract(estimate, truth, dtype=float)
    return {"sq_error": err * err, "error": err}


# --- data given as counts (issue 21): the estimand and the exact MSE from the multiset --------------------
def summary_total(summary: DataSummary) -> float:
    """Σ over users of their inputs, Σ_v c_v·v, from the multiset (correctly rounded: ``math.fsum`` of the
    per-value products)."""
    import math

    return math.fsum((np.asarray(summary.values, dtype=float) * np.asarray(summary.counts, dtype=float)).tolist())


def summary_dot(summary: DataSummary, per_user: np.ndarray) -> float:
    """Σ over users of a per-user quantity given per distinct value (``per_user[i]`` for ``values[i]``):
    Σ_v c_v·f(v), the form of every summation protocol's exact MSE (a sum of independent users' variances)."""
    return float(np.dot(np.asarray(summary.counts, dtype=float), np.asarray(per_user, dtype=float)))


def mse_expected_of(protocol: Protocol, data: Any) -> float | None:
    """The protocol's exact E[sq_error] for ``data`` given as rows or as a :class:`DataSummary`: a summary goes
    to the protocol's ``mse_expected_summary`` where it has one, else to ``mse_expected`` only for categorical
    protocols (whose exact MSE does not read the data: k-RR, the central histograms), else ``None``."""
    if not isinstance(data, DataSummary):
        return protocol.mse_expected(data)
    hook = getattr(protocol, "mse_expected_summary", None)
    if hook is not None:
        return hook(data)
    return protocol.mse_expected(data) if protocol.data_kind == "categorical" else None
