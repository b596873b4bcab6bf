"""Accounting whose cost grows with the precision asked, not with n: pairs in row form reduced to a few
certified *bucket rows* (issue 21).

Every row r of a :class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows` with alpha_r > 0 is, after
normalising by its mass m_r = w_r (a N/2 + b) (the same under P and Q: the row is ancillary),

    X = Y + D,   Y ~ Bin(M, 1/2), M = N - 1,   D ~ Bern((1 + lam)/2) under P, Bern((1 - lam)/2) under Q,

with lam = (a N/2)/(a N/2 + b) in (0, 1] (from B_N(x) x 2/N = B_{N-1}(x - 1),
B_N(x) (N - x) 2/N = B_{N-1}(x) and B_N(x) = (B_{N-1}(x) + B_{N-1}(x - 1))/2).  Rows with alpha = 0
(or N = 0) have P = Q: zero privacy loss.

**Certification (docs/theory.md#bucketed-rows).**  Write R(M, lam) for that row pair.  If M >= M' and
lam <= lam', R(M, lam) is a post-processing of R(M', lam'): given x' ~ R(M', lam'), with probability
lam/lam' output x' + Bin(M - M', 1/2), otherwise a fresh Bin(M + 1, 1/2) draw; under either hypothesis
the output is Bin(M) + Bern(1/2 +- lam/2), i.e. R(M, lam).  So for a block of rows with
M in [M_lo, M_hi] and lam in [lam_lo, lam_hi]:

* every row is a post-processing of R(M_lo, lam_hi) -- replacing all rows of the block by that one
  row, with the block's total mass, gives a pair that *dominates* the original one (the row is revealed,
  which is itself a post-processing-compatible mixture): every hockey-stick divergence, single use or
  composed with anything, is an upper bound (the "upper bucket rows");
* every row dominates R(M_hi, lam_lo): the same with that row gives lower bounds (the "lower bucket
  rows").

Each reduced pair has one row per block (a few dozen to a few hundred rows of O(sqrt N) columns each,
whatever n), and is handed to the unchanged certified engines (:class:`~.rows_pld.RowsPLD` single use,
the streamed FFT of :mod:`.rows_stream` for composition).  The reported interval is [lower end of the
lower bucket rows, upper end of the upper bucket rows].  Refining the blocks narrows it; blocks are
doubled until the relative width in eps meets the requested precision (or the largest block count).

Cost: rows sorted once (O(rows log rows), rows ~ sqrt(n)), then O(blocks * sqrt(N)) atoms per
evaluation; memory O(blocks * sqrt(N)).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from shufflesim.errors import AccuracyError, ParameterError
from shufflesim.accounting.numerics.binomial import certified_tail, chernoff_window
from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.numerics.logspace import NEG_INF, log_sum

#: pairs in row form with more atoms than this go through the bucketed engine by default (the exact
#: row engine's tail tables / streaming cost O(atoms): ~2-3 s single use at 3e7 atoms, where the bucket
#: rows take ~0.5 s; below, the exact engine is cheap and its interval narrower)
BUCKET_MIN_ATOMS = 30_000_000
#: composed, from this many atoms: the exact rows' FFT at its default grid stops wide (k-RR strong n = 1e6,
#: 1000-fold at delta = 1e-9: [0.476, 0.846]) where the bucket rows certify [0.8458, 0.8463] in ~13 s
BUCKET_MIN_ATOMS_COMPOSED = 1_000_000
#: block counts tried, in order, until the requested precision is met
BLOCK_STEPS = (48, 192, 768, 3072)
#: relative width in eps asked of the bucketed engine by default (issue 21)
DEFAULT_RTOL = 1e-3
#: per-row column truncation of the bucket rows (their mass outside is added to the upper end's tail)
COLUMN_TAIL = 1e-16
#: relative margin applied to the block masses and the lam of the representatives (the float rounding
#: of log_w + log(a N/2 + b), the log-sum over the block and lam = aN/2 / (aN/2 + b) is < 1e-13)
_MARGIN = 1e-11


def _row_parameters(rows: BinomialRows):
    """(log mass, M = N - 1, lam) of the rows with alpha > 0, N >= 1 and a kept window, and the log
    mass of the zero-loss rows (alpha = 0 or N = 0)."""
    keep = (rows.lo <= rows.hi) & (rows.log_w > NEG_INF) & ((rows.alpha > 0) | (rows.beta > 0))
    a = rows.alpha.astype(float)
    b = rows.beta.astype(float)
    N = rows.N.astype(float)
    lossy = keep & (a > 0) & (rows.N >= 1)
    zero = keep & ~lossy
    half = a * N / 2.0
    with np.errstate(divide="ignore"):
        log_m = rows.log_w + np.log(half + b)
    lam = np.where(lossy, half / np.where(lossy, half + b, 1.0), 0.0)
    log_zero = log_sum(log_m[zero]) if np.any(zero) else NEG_INF
    return log_m[lossy], rows.N[lossy].astype(np.int64) - 1, lam[lossy], log_zero


def _blocks(M: np.ndarray, lam: np.ndarray, n_blocks: int) -> list[np.ndarray]:
    """Rows cut into at most ``n_blocks`` blocks: runs of equal count in M order; when lam varies by more
    than 1% independently of M (the weak adversary's rows), each run is cut again by lam (a grid of about
    sqrt(n_blocks) x sqrt(n_blocks) blocks)."""
    order = np.lexsort((lam, M))
    n_blocks = max(1, min(n_blocks, order.size))
    runs = np.array_split(order, n_blocks)
    spread = max((float(np.ptp(lam[r])) / max(float(lam[r].max()), 1e-300) for r in runs if r.size), default=0.0)
    if spread <= 1e-2 or n_blocks < 4:
        return runs
    n_m = max(1, int(round(math.sqrt(n_blocks))))
    n_l = max(1, n_blocks // n_m)
    out = []
    for run in np.array_split(order, n_m):
        out += [b for b in np.array_split(run[np.argsort(lam[run], kind="stable")], n_l) if b.size]
    return out


def bucket_rows(rows: BinomialRows, n_blocks: int, side: str, column_tail: float = COLUMN_TAIL) -> BinomialRows:
    """The upper (``side="upper"``) or lower (``"lower"``) bucket rows of ``rows`` with ``n_blocks`` blocks.

    Upper: one row per block at (smallest M, largest lam) carrying the block's mass (rounded up), the
    tail = the pair's tail + the certified mass outside the new rows' column windows.  Lower: one row
    per block at (largest M, smallest lam), mass rounded down (tail kept for reference, not used by
    lower ends).  Extra atoms are kept; zero-loss rows become one extra atom of loss 0.  ``column_tail`` is the
    per-row mass left outside the new rows' column windows (added to the upper end's tail).
    """
    if side not in ("upper", "lower"):
        raise ParameterError(f"side must be 'upper' or 'lower'; got {side!r}")
    if not isinstance(rows, BinomialRows):
        raise ParameterError(f"rows must be a BinomialRows; got {type(rows).__name__}")
    log_m, M, lam, log_zero = _row_parameters(rows)
    up = side == "upper"
    reps_M, reps_lam, reps_logm = [], [], []
    for blk in (_blocks(M, lam, n_blocks) if M.size else []):
        bm = log_sum(log_m[blk])
        reps_logm.append(bm + (math.log1p(_MARGIN) if up else math.log1p(-_MARGIN)))
        if up:
            reps_M.append(int(M[blk].min()))
            reps_lam.append(min(1.0, float(lam[blk].max()) * (1.0 + _MARGIN)))
        else:
            reps_M.append(int(M[blk].max()))
            reps_lam.append(float(lam[blk].min()) * (1.0 - _MARGIN))
    Nr = np.asarray(reps_M, dtype=np.int64) + 1
    lam_r = np.asarray(reps_lam, dtype=float)
    half = Nr.astype(float) / 2.0
    # b chosen so that (N/2)/(N/2 + b) = lam; rounded so that the engine's lam errs on the safe side
    b = half * (1.0 - lam_r) / np.where(lam_r > 0, lam_r, 1.0)
    b = np.nextafter(b, 0.0 if up else np.inf)
    b = np.maximum(b, 0.0)
    b = np.where(up & (lam_r >= 1.0), 0.0, b)
    log_w = np.asarray(reps_logm, dtype=float) - np.log(half + b)
    # column windows: Bin(N - 1, 1/2) window [l, h] with mass outside <= COLUMN_TAIL covers both mixture
    # components (x - 1 and x in [l, h] for x in [l, h + 1]); made symmetric (lo + hi = N)
    tail = float(rows.tail)
    if Nr.size:
        l, h, lt = chernoff_window(Nr - 1, 0.5, math.log(column_tail))
        lo = np.minimum(l, Nr - (h + 1))
        lo = np.maximum(lo, 0)
        hi = Nr - lo
        if up:
            mass = math.exp(log_sum(np.asarray(reps_logm)))
            tail = min(1.0, (tail + certified_tail(float(np.max(lt))) * mass) * (1.0 + 1e-12))
    else:
        lo = hi = np.zeros(0, dtype=np.int64)
    xp, xq = rows.extra_log_p, rows.extra_log_q
    if log_zero > NEG_INF:
        lz = log_zero + (math.log1p(_MARGIN) if up else math.log1p(-_MARGIN))
        xp = np.concatenate((np.asarray(xp, dtype=float), [lz]))
        xq = np.concatenate((np.asarray(xq, dtype=float), [lz]))
    params = dict(rows.params, bucket_blocks=int(Nr.size), bucket_side=side)
    return BinomialRows(log_w, Nr, np.ones(Nr.size), b, lo.astype(np.int64), hi.astype(np.int64), tail,
                        np.asarray(xp, dtype=float), np.asarray(xq, dtype=float),
                        name=rows.name, params=params, reference=rows.reference)


def bucket_atoms(rows: BinomialRows, n_blocks: int) -> int:
    """Atoms of the bucket rows of ``rows`` with ``n_blocks`` blocks (both sides have about as many)."""
    return int(bucket_rows(rows, n_blocks, "upper").n_atoms)


def needs_buckets(pairs, min_atoms: int | None = None, compositions: int = 1) -> bool:
    """True when some pair in row form has more than ``min_atoms`` atoms (default
    :data:`BUCKET_MIN_ATOMS` single use, :data:`BUCKET_MIN_ATOMS_COMPOSED` composed): the bucketed
    engine is then cheaper (or, composed, narrower)."""
    seq = pairs if isinstance(pairs, (list, tuple)) else [pairs]
    if min_atoms is None:
        min_atoms = BUCKET_MIN_ATOMS if len(seq) * compositions == 1 else BUCKET_MIN_ATOMS_COMPOSED
    return any(isinstance(p, BinomialRows) and p.n_atoms > min_atoms for p in seq)


def _reduce(pairs, n_blocks: int, side: str, column_tail: float = COLUMN_TAIL):
    if isinstance(pairs, (list, tuple)):
        cache: dict[int, BinomialRows] = {}
        out = []
        for p in pairs:  # identical objects stay identical (the accountant composes repeats by powering)
            if isinstance(p, BinomialRows):
                if id(p) not in cache:
                    cache[id(p)] = bucket_rows(p, n_blocks, side, column_tail)
                out.append(cache[id(p)])
            else:
                out.append(p)
        return out
    return bucket_rows(pairs, n_blocks, side, column_tail) if isinstance(pairs, BinomialRows) else pairs


def _note(n_blocks: int) -> str:
    return (f"bucketed rows: {n_blocks} blocks per pair in row form, certified by post-processing "
            "(docs/theory.md#bucketed-rows)")


#: FFT numerics of the bucket rows when composed (unless given): the default 2^22 points stop the
#: refinement of 1000-fold compositions at delta = 1e-9 with a ~40% wide interval; 2^23 points and 8
#: refinements reach ~1e-4 (measured at n = 1e5: ~1.1 GB peak)
COMPOSED_NUMERICS = {"max_grid_size": 2**23, "max_refinements": 8}
#: composed eps(delta): the relative width in eps asked of each side's FFT accountant, as a share of rtol.  Only
#: the upper reduced pair's upper end and the lower reduced pair's lower end make the answer, and the split
#: placement's width is its lower end's correction (its upper end is within the discretisation error, far
#: less), so each side's own interval may be nearly rtol wide while the merged one is about half that (issue 21:
#: 1000-fold clones at n = 1e8, 2.4M -> 1.7M FFT points a side); where the merged interval still misses rtol,
#: the sides are recomputed at :data:`COMPOSED_EPS_SHARE_RETRY`
COMPOSED_EPS_SHARE = 0.9
#: composed eps(delta): a refined FFT grid aims at this share of the width needed (Numerics.refine_aim; 0.4 by
#: default): the split placement's width is second order in h, and at 0.4 its refinements overshoot the share
#: asked by ~2.5x in width (1000-fold clones n = 1e8: 280k -> 1.7M points where 1.1M meet it)
COMPOSED_REFINE_AIM = 0.8
#: ... and the share of the recomputation (a quarter of rtol a side: the merged width is then <= rtol/2 + the
#: blocks' gap)
COMPOSED_EPS_SHARE_RETRY = 0.25


def _run(accountant, pairs, n_blocks, compositions, numerics, ask, column_tail: float = COLUMN_TAIL):
    uses = compositions * (len(pairs) if isinstance(pairs, (list, tuple)) else 1)
    if uses > 1:
        numerics = {**COMPOSED_NUMERICS, **numerics}
    upper = accountant(_reduce(pairs, n_blocks, "upper", column_tail), compositions=compositions, **numerics)
    lower = accountant(_reduce(pairs, n_blocks, "lower", column_tail), compositions=compositions, **numerics)
    return ask(upper), ask(lower)


def bucketed_epsilon(pairs, delta, *, accountant, compositions: int = 1, rtol: float = DEFAULT_RTOL,
                     blocks: tuple[int, ...] = BLOCK_STEPS, **numerics):
    """Certified eps(delta) intervals through bucket rows; blocks are refined until every interval's
    relative width (eps_upper - eps_lower)/eps_upper is <= ``rtol`` or the block counts are exhausted.
    ``accountant`` is :class:`~.tight.TightAccountant` (passed in: :mod:`.tight` imports this module)."""
    res = None
    # the column truncation far below the smallest delta asked (as the pairs' own tails: accounting.account)
    dl = [float(d) for d in (delta if isinstance(delta, (list, tuple, np.ndarray)) else [delta])]
    uses = compositions * (len(pairs) if isinstance(pairs, (list, tuple)) else 1)
    column_tail = max(min(COLUMN_TAIL, 1e-7 * min(dl) / uses), 1e-300)
    # composed: the FFT grid only as fine as the eps precision asked needs (COMPOSED_EPS_SHARE of rtol each side,
    # then COMPOSED_EPS_SHARE_RETRY where the merged interval misses rtol because of the FFT part)
    shares = [COMPOSED_EPS_SHARE, COMPOSED_EPS_SHARE_RETRY] if uses > 1 else [None]
    for nb in blocks:
        for share in shares:
            num_eps = {"eps_rtol": rtol * share, "refine_aim": COMPOSED_REFINE_AIM, **numerics} \
                if share is not None else numerics
            up, lo = _run(accountant, pairs, nb, compositions, num_eps, lambda acc: acc.epsilon(delta), column_tail)
            res = [_merge(u, l, nb, "eps") for u, l in zip(up, lo)]
            if all(_eps_width(r) <= rtol for r in res) or all(_fft_part(u, l) <= rtol for u, l in zip(up, lo)):
                break  # met, or missed because of the blocks' gap (more blocks are the remedy)
        shares = [share]  # more blocks: at the share used last
        if all(_eps_width(r) <= rtol for r in res):
            break
        if any(_eps_width(u) > rtol / 2 for u in up if getattr(u, "applicable", True)):
            break  # the engine's own interval (FFT composition) is the wider part: more blocks cannot help
    return res


def bucketed_delta(pairs, eps, *, accountant, compositions: int = 1, rtol: float = DEFAULT_RTOL,
                     blocks: tuple[int, ...] = BLOCK_STEPS, **numerics):
    """Certified delta(eps) intervals through bucket rows (blocks refined until the relative width in
    delta is <= 10 ``rtol`` or the block counts are exhausted).

    The column truncation follows the answer (as :func:`bucketed_epsilon`'s follows the delta asked): a first
    pass at :data:`COLUMN_TAIL`; where the smallest positive delta found is so small that the truncated mass
    (per row, per use) exceeds 1e-7 of it, the rows are rebuilt with a column tail 1e-7 delta / uses and
    the answer recomputed (e.g. delta ~ 1e-18 at n = 1e9)."""
    uses = compositions * (len(pairs) if isinstance(pairs, (list, tuple)) else 1)
    column_tail = COLUMN_TAIL
    res = None
    for _attempt in range(2):
        res = None
        for nb in blocks:
            up, lo = _run(accountant, pairs, nb, compositions, numerics, lambda acc: acc.delta(eps), column_tail)
            res = [_merge(u, l, nb, "delta") for u, l in zip(up, lo)]
            if all(_delta_width(r) <= 10 * rtol for r in res):
                break
            if any(_delta_width(u) > 5 * rtol for u in up if getattr(u, "applicable", True)):
                break  # the engine's own interval is the wider part: more blocks cannot help
        seen = [v for r in res if getattr(r, "applicable", True)
                for v in ((r.delta_lower or 0.0), r.delta_upper) if v > 0]
        if not seen:
            break
        need = max(min(COLUMN_TAIL, 1e-7 * min(seen) / uses), 1e-300)
        if need >= column_tail:
            break
        column_tail = need
    return res


def _fft_part(u, l) -> float:
    """The relative width of the merged eps interval [l.eps_lower, u.eps_upper] without the part the blocks
    certainly make (the gap between the upper pair's lower end and the lower pair's upper end, where positive):
    what the two FFT accountants' own widths contribute."""
    if not (getattr(u, "applicable", True) and getattr(l, "applicable", True)) or l.eps_lower is None \
            or u.eps_lower is None or not (math.isfinite(u.eps_upper) and u.eps_upper > 0):
        return 0.0 if getattr(u, "eps_upper", 0.0) == 0 else math.inf
    gap = max(0.0, u.eps_lower - l.eps_upper)
    return (u.eps_upper - l.eps_lower - gap) / u.eps_upper


def _eps_width(r) -> float:
    if r.eps_lower is None or not math.isfinite(r.eps_upper) or r.eps_upper <= 0:
        return 0.0 if r.eps_upper == 0 else math.inf
    return (r.eps_upper - r.eps_lower) / r.eps_upper


def _delta_width(r) -> float:
    if r.delta_lower is None or r.delta_upper <= 0:
        return 0.0 if r.delta_upper == 0 else math.inf
    return (r.delta_upper - r.delta_lower) / r.delta_upper


def _merge_notes(u, l, nb):
    notes = [_note(nb)]
    for nt in tuple(u.notes) + tuple(l.notes):
        if nt not in notes:
            notes.append(nt)
    return tuple(notes)


def _merge(u, l, nb, end: str):
    """The upper reduced pair's answer ``u`` with the lower reduced pair's lower end (``eps``/``delta``: ``end``)."""
    if not getattr(u, "applicable", True):
        return u
    lower = getattr(l, f"{end}_lower", None) if getattr(l, "applicable", True) else None
    upper = getattr(u, f"{end}_upper")
    if lower is not None and lower > upper:
        raise AccuracyError(f"bucketed rows: lower end {lower} above upper end {upper} (a bug)")
    return replace(u, **{f"{end}_lower": lower}, notes=_merge_notes(u, l, nb),
                   accuracy_met=bool(u.accuracy_met and getattr(l, "accuracy_met", True)))
