"""n_c-fold composition of privacy loss distributions with certified two-sided bounds.

Method (Koskela et al., seed 001 §2.2, Lemma 6 and Algorithm 1, with a different treatment of the
grid range and a rigorous error budget).  One direction X||Y of every component is handled at a time;
delta = max over the two directions of the composed pair (P_1 x ... x P_r, Q_1 x ... x Q_r).

1. **Placement on a grid** h·Z, two options (:func:`discretise`):

   * "lemma6" (seed 001 eq 2.5, Lemma 6): every finite loss is rounded *up* (omega^R) for the upper
     bound and *down* (omega^L) for the lower bound, after widening by the loss's floating-point
     tolerance.  Coupling the rounded and true losses atom by atom, S^L <= S <= S^R pointwise, and
     f(s) = (1 - e^{eps - s})_+ is non-decreasing, so delta^L <= delta <= delta^R.  The gap is first
     order in h (about n h (P(S > eps) - delta)), and it takes two FFTs per direction.
   * "split" (default): every atom is split between its two neighbouring grid points so that its
     P-mass and its Q-mass are both preserved.  The original pair is a post-processing (merging the
     two halves) of the split pair, so the split pair dominates it for every eps and after any
     composition: delta <= delta^split.  Conversely, only product outcomes whose split straddles eps
     change, each by at most (1 - e^{-n(h + mu)}) of its mass, which gives the second-order bound
         delta >= delta^split - (1 - e^{-n(h+mu)}) P'(eps - nh < S' <= eps + nh) - n mu P'(S' > eps)
     (mu: the loss widening; see :meth:`GridComposition._split_correction`).  One FFT per direction
     gives both bounds, and the grid can be ~sqrt(1/target) times coarser than with "lemma6".  (This is
     the idea of the "connect the dots" discretisation of Doroshenko et al., PETS 2022; the lower
     bound above is our own derivation.)

   A split depends on an atom only through its P- and Q-mass, so the split of all atoms in a cell
   of a fine base grid h_b·Z is the split of their totals, and a split onto h = m h_b follows
   exactly from the base points (:func:`base_split`, :func:`discretise_base`).  Pairs in row form
   are placed that way without ever being expanded: :func:`rows_base_split` streams their atoms
   block by block and accumulates the two totals per base cell.

   Infinite-loss mass is never discretised: it composes exactly as prod(f_i + m_i) - prod f_i.
   Atoms whose total mass is far below the accuracy needed may be pruned into the pair's dropped
   ``tail`` beforehand (:meth:`~shufflesim.accounting.pld.LossAtoms.prune`): counted in full in upper
   bounds and not at all in lower bounds.

2. **Exponential tilting** (optional, lam >= 0).  Each grid PMF x_i is replaced by
   x~_i(s) = x_i(s) e^{lam s} / C_i(lam), C_i(lam) = sum_s x_i(s) e^{lam s}; the composed PMFs satisfy
   y(s) = e^{Lambda - lam s} y~(s) with Lambda = sum_i n_i log C_i(lam), exactly.  Hence

       delta_fin(eps) = e^{Lambda - lam eps} sum_s w(s) y~(s),   w(s) = f(s) e^{-lam (s - eps)} <= c(lam),

   with c(lam) = lam^lam/(lam+1)^(lam+1) (see :mod:`.tails`).  With lam near the Chernoff-optimal value
   for eps, the terms that make up a tiny delta are O(1) in the tilted measure, so the FFT's absolute
   round-off (~1e-16 of the total tilted mass) becomes a *relative* error of delta: deltas far below
   1e-16 come out with full relative accuracy.  lam = 0 is the plain Fourier accountant.

3. **Circular convolution on a window** [lo, lo + M) of grid indices (M = FFT length).  Every component
   is folded modulo M (index k -> k mod M); folding commutes with convolution, so the FFT returns, at
   each residue, the composed tilted mass summed over all indices congruent to it ("aliasing").  The
   window is chosen so that the tilted mass outside it, P~(S outside window), is tiny; that mass is
   bounded rigorously with a tilted Chernoff bound,

       P~(S >= a) <= exp( sum_i n_i [log C_i(lam + th) - log C_i(lam)] - th a )   (any th > 0),

   and its mirror image for the lower tail.  If the window covers the whole support, there is no
   aliasing and these terms are exactly zero.

4. **Error budget.**  Writing c^ for the computed window, c for the exact circular convolution of the
   computed inputs, and y~ for the tilted composed mass restricted to the window, aliasing gives
   c >= y~ on the window and sum(c - y~) = P~(S outside window).  Then, for every eps,

   upper: delta_fin <= e^{Lambda - lam eps} [ sum_j w_j max(c^_j, 0) (1 + rel) + rho ||w||_2
                                               + P~(S >= hi) + c(lam) P~(S < lo) ]
          (the last term only if (lo - 1) h > eps; mass above the window contributes
           <= e^{Lambda - lam eps} P~(S >= hi) because f <= 1 and e^{-lam (s - eps)} <= 1 there, or
           f e^{-lam(s-eps)} <= c(lam) <= 1 if the window ends below eps);
   lower: delta_fin >= e^{Lambda - lam eps} [ sum_j w_j c^_j (1 - rel) - gamma sum_j w_j |c^_j|
                                               - rho ||w||_2 - c(lam) P~(S outside window) ].

   * rho bounds ||c^ - c||_2.  Model: a length-M (inverse) real FFT has relative l2 error at most
     eps_F = FFT_KAPPA · u · ceil(log2 M) (Higham, *Accuracy and Stability of Numerical Algorithms*,
     Thm 24.2, gives (log2 M) eta/(1 - (log2 M) eta) with eta ~ 6.7u for radix-2 with accurate twiddle
     factors; FFT_KAPPA = 10 adds a margin for mixed radices).  Inputs are non-negative with total mass
     <= 1, so ||x~_i||_2 <= 1 and every Fourier coefficient has modulus <= 1.  A product of N = sum n_i
     spectra (binary powering for repeated factors) then has l2 error <= sqrt(M)(N eps_F + 3 N u), and
     the inverse transform (scaled by 1/M) gives
         ||c^ - c||_2 <= rho = 1.01 [ (N + 1) eps_F + 3 N u ] + (underflow: N K 1e-300).
     By Cauchy-Schwarz |sum_j w_j (c^_j - c_j)| <= rho ||w||_2.  ``tests/test_fft_compose.py`` checks
     the model against direct convolution.
   * rel covers the relative rounding of the tilted inputs (their exponent arguments, the log-sum
     normalisers, the folding sums): rel = 1.01 N theta_max + REL_SLACK; non-negative inputs perturbed
     by factors (1 + theta) give outputs perturbed by at most (1 + theta_max)^N.
   * gamma covers the evaluation of sum_j w_j c^_j through suffix sums computed by a first-order
     recursion (lfilter), gamma = (3M + 30) u + 8u (1 + lam)(max|s| + |eps| + 1).

   The round-off floor of the plain accountant (lam = 0) is rho ||w||_2 ~ 1e-10..1e-9 of the total
   mass for M ~ 1e6; below it :mod:`.tight` tilts (or, if tilting is disabled, falls back to
   :mod:`.tails`).

Also :func:`compose_exact`: exact composition by pairwise convolution of atoms, for small supports
(n_c = 2, 3), used as a cross-check and for tiny problems.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np
import scipy.fft
from scipy.optimize import minimize_scalar
from scipy.signal import lfilter

from shufflesim.errors import AccuracyError, ParameterError
from shufflesim.accounting.pld import (
    NEG_INF,
    REL_SLACK,
    U,
    LossAtoms,
    PrivacyLossDistribution,
    _exp,
    compose_log_extra,
    exp_down,
    exp_up,
    sum_up,
    group_log_sum,
    log_sum,
)
from shufflesim.accounting.tails import MGFSketch, composed_log_inf_mass, composed_tail, log_c

#: margin factor of the FFT round-off model (see module docstring)
FFT_KAPPA = 10.0


# ---------------------------------------------------------------------------------------------
# grid placement
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class GridLoss:
    """One direction of a PLD placed on h·Z: grid indices ``k`` (any order, repeats allowed) with log-masses.

    ``rounding`` is "up" (omega^R, pessimistic), "down" (omega^L, optimistic; seed 001 eq 2.5) or
    "split" (mass- and Q-mass-preserving split between neighbouring grid points; see :func:`discretise`).
    The infinite-loss mass and dropped tail are carried over unchanged from the atoms.
    """

    k: np.ndarray
    log_mass: np.ndarray
    h: float
    rounding: str
    atoms: LossAtoms
    shift: float = 0.0  #: bound on how far a placed loss was moved up before placement (widening)
    agg_rel: float = 0.0  #: relative rounding of masses merged per grid point (beyond atoms.mass_rel_err)

    @property
    def size(self) -> int:
        return int(self.k.size)

    @cached_property
    def values(self) -> np.ndarray:
        return self.k * self.h

    @cached_property
    def kmin(self) -> int:
        return int(np.min(self.k))

    @cached_property
    def kmax(self) -> int:
        return int(np.max(self.k))

    @cached_property
    def max_abs_log_mass(self) -> float:
        fin = self.log_mass[np.isfinite(self.log_mass)]
        return float(np.max(np.abs(fin))) if fin.size else 0.0

    @cached_property
    def sketch(self) -> MGFSketch:
        """Upper envelope of this grid PMF's MGF: the atoms' sketch with every block widened by h
        (each placed value lies within h of its atom's loss, and placement preserves the P-mass)."""
        sk = self.atoms.sketch
        return MGFSketch(sk.log_mass, sk.vmin - self.h - self.shift, sk.vmax + self.h + self.shift)

    def log_mgf(self, t: float) -> float:
        """log sum_k x_k e^{t k h} (exact evaluation)."""
        return log_sum(self.log_mass + t * self.values)


def _split_parts(x: np.ndarray, lm: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell index k (x in [kh, (k+1)h]) and the log-masses of the two halves of the split (see
    :func:`discretise`) for atoms at (already widened) losses x with log-masses lm."""
    k = np.floor(x / h)
    d = x - k * h
    if np.any(d < 0) or np.any(d >= h):
        k = np.where(d < 0, k - 1, np.where(d >= h, k + 1, k))
        d = x - k * h
    np.clip(d, 0.0, h, out=d)
    log_den = math.log(-math.expm1(-h))
    with np.errstate(divide="ignore"):
        la = np.log(np.expm1(h - d))
        la += lm - h - log_den
        lb = np.log(-np.expm1(-d))
        lb += lm - log_den
    return k.astype(np.int64), la, lb


def discretise(atoms: LossAtoms, h: float, rounding: str) -> GridLoss:
    """Place the finite atoms on h·Z.

    ``rounding="up"`` / ``"down"``: every loss is rounded up / down to the grid (seed 001 eq 2.5,
    Lemma 6).  ``rounding="split"``: every atom (mass p, loss s in [kh, (k+1)h]) is split between its
    two neighbouring grid points with masses

        p_a = p (e^{-d} - e^{-h}) / (1 - e^{-h})  at kh,     p_b = p (1 - e^{-d}) / (1 - e^{-h})  at (k+1)h,

    d = s - kh, which keeps both its P-mass (p_a + p_b = p) and its Q-mass
    (p_a e^{-kh} + p_b e^{-(k+1)h} = p e^{-s}).  Merging the two halves back is a post-processing, so
    the split pair dominates the original for every eps and every composition (data processing for
    the hockey-stick divergence): the split gives an *upper* bound whose error is second order in h
    (see :meth:`GridComposition.interval` for the matching lower bound).  This is the idea of the
    "connect the dots" discretisation of Doroshenko et al. (PETS 2022), derived here independently.

    Losses are first widened (moved up) by ``atoms.loss_tol`` plus a margin 8u(max|L| + h) covering
    the rounding of L/h, k·h and d, so that the exact loss is <= (up, split) or >= (down) the one
    placed.  Moving a loss up only lowers the Q-mass, which can only increase the hockey-stick
    divergence, so the split of the widened atom still dominates.
    """
    if rounding not in ("up", "down", "split"):
        raise ParameterError(f"rounding must be 'up', 'down' or 'split'; got {rounding!r}")
    if not (h > 0 and math.isfinite(h)):
        raise ParameterError(f"grid spacing h must be a positive finite number; got {h!r}")
    L = atoms.losses
    keep = atoms.log_mass > NEG_INF
    L = L[keep]
    lm = atoms.log_mass[keep]
    if L.size == 0:
        return GridLoss(np.zeros(0, dtype=np.int64), np.zeros(0), h, rounding, atoms, 0.0)
    margin = atoms.loss_tol + 8 * U * (float(np.max(np.abs(L))) + h)
    if float(np.max(np.abs(L))) / h > 2.0**61:
        raise ParameterError(f"grid spacing h={h!r} is too small for losses of magnitude {np.max(np.abs(L)):.3g}")
    if rounding == "up":
        x = L + margin
        k = np.ceil(x / h)
        k[k * h < x] += 1
    elif rounding == "down":
        x = L - margin
        k = np.floor(x / h)
        k[k * h > x] -= 1
    else:
        k, la, lb = _split_parts(L + margin, lm, h)
        kk = np.concatenate((k, k + 1))
        ll = np.concatenate((la, lb))
        ok = ll > NEG_INF
        return GridLoss(kk[ok], ll[ok], float(h), rounding, atoms, 2 * margin)
    return GridLoss(k.astype(np.int64), lm, float(h), rounding, atoms, 2 * margin)


@dataclass(frozen=True, eq=False)
class BaseSplit:
    """Atoms split once onto a fine base grid h_b·Z (placement "split"), aggregated per grid point.

    A two-point distribution on {kh, (k+1)h} with given P-mass and Q-mass is unique, so for any
    h = m·h_b the split of these base atoms onto h·Z (done in integer arithmetic, without further
    widening: :func:`discretise_base`) is exactly the split of the original atoms onto h·Z: every
    original atom ends on the two end points of the h-cell containing its (widened) loss.  This
    makes repeated grid refinements cost O(number of base points) instead of O(number of atoms).
    ``atoms`` is the base atoms as a :class:`LossAtoms` (losses k_b h_b, the original's infinite mass
    and tail) used for bookkeeping (masses, largest loss, MGF sketch); ``shift`` bounds the widening.
    """

    kb: np.ndarray
    h_b: float
    shift: float
    atoms: LossAtoms

    @property
    def size(self) -> int:
        return int(self.kb.size)

    def prune(self, log_budget: float) -> "BaseSplit":
        """Drop the lightest base points into the tail (as :meth:`LossAtoms.prune`)."""
        keep, dropped = self.atoms.prune_mask(log_budget)
        if keep is None:
            return self
        a = self.atoms
        pruned = LossAtoms(a.losses[keep], a.log_mass[keep], a.log_inf_mass, min(1.0, sum_up(a.tail, dropped)),
                           a.loss_tol, a.mass_rel_err)
        return BaseSplit(self.kb[keep], self.h_b, self.shift, pruned)



def base_split(atoms: LossAtoms, h_b: float, chunk: int = 1 << 20) -> BaseSplit:
    """Split ``atoms`` onto h_b·Z (as :func:`discretise` with "split") and aggregate per grid point.

    Processed in chunks of ``chunk`` atoms (cache-friendly); the per-point masses are accumulated in
    a dense log-space array, one logaddexp per chunk and point (included in ``mass_rel_err``).
    """
    keep = atoms.log_mass > NEG_INF
    L, lm = atoms.losses[keep], atoms.log_mass[keep]
    if L.size == 0:
        empty = LossAtoms(np.zeros(0), np.zeros(0), atoms.log_inf_mass, atoms.tail, 0.0)
        return BaseSplit(np.zeros(0, dtype=np.int64), float(h_b), 0.0, empty)
    margin = atoms.loss_tol + 8 * U * (max(abs(float(L[0])), abs(float(L[-1]))) + h_b)
    k_first = int(np.floor((float(L[0]) + margin) / h_b)) - 1
    k_last = int(np.floor((float(L[-1]) + margin) / h_b)) + 2
    dense = np.full(k_last - k_first + 2, NEG_INF)
    err = 0.0
    n_chunks = 0
    for start in range(0, L.size, chunk):
        k, la, lb = _split_parts(L[start:start + chunk] + margin, lm[start:start + chunk], h_b)
        ka, la, e1 = group_log_sum(k, la)  # k is non-decreasing (losses are sorted)
        _, lb, e2 = group_log_sum(k, lb)  # same groups: these halves sit at ka + 1
        ia = ka - k_first
        dense[ia] = np.logaddexp(dense[ia], la)
        dense[ia + 1] = np.logaddexp(dense[ia + 1], lb)
        err = max(err, e1, e2)
        n_chunks += 1
    ok = np.flatnonzero(dense > NEG_INF)
    kk, vals = ok + k_first, dense[ok]
    values = kk * h_b
    # each base mass: merges within chunks (err), then <= 2 logaddexp per chunk (2u each)
    base_atoms = LossAtoms(values, vals, atoms.log_inf_mass, atoms.tail, 2 * U * float(np.max(np.abs(values))),
                           atoms.mass_rel_err + err + 4 * U * (2 * n_chunks + 2))
    return BaseSplit(kk, float(h_b), 2 * margin, base_atoms)


def discretise_base(base: BaseSplit, m: int) -> GridLoss:
    """Split base atoms (exact grid points k_b h_b) onto h·Z with h = m·h_b, in integer arithmetic,
    and merge the masses landing on the same grid point.

    A base point at k_b = k m + r (0 <= r < m, d = r h_b) sends the fractions
    (e^{-d} - e^{-h})/(1 - e^{-h}) to kh and (1 - e^{-d})/(1 - e^{-h}) to (k+1)h (as :func:`discretise`);
    they depend on r only and are tabulated once.  The masses of a grid point are summed in linear
    scale relative to their largest (max-shifted segment sums over the sorted base points); the
    rounding of that merge is ``agg_rel`` of the result.
    """
    h = m * base.h_b
    lm = base.atoms.log_mass
    if m == 1 or base.size == 0:
        return GridLoss(base.kb.copy(), lm.copy(), float(h), "split", base.atoms, base.shift)
    kb = base.kb
    k = np.floor_divide(kb, m)
    r = kb - k * m
    d = np.arange(m) * base.h_b
    log_den = math.log(-math.expm1(-h))
    with np.errstate(divide="ignore"):
        frac_a = np.log(np.expm1(h - d)) - h - log_den
        frac_b = np.log(-np.expm1(-d)) - log_den
    la = lm + frac_a[r]
    lb = lm + frac_b[r]
    # segments of equal k (kb is sorted, so k is non-decreasing)
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    counts = np.diff(np.append(starts, k.size))
    kc = k[starts]

    def seg_logsum(vals: np.ndarray) -> tuple[np.ndarray, float]:
        top = np.maximum.reduceat(vals, starts)
        safe = np.where(top > NEG_INF, top, 0.0)
        rel = vals - np.repeat(safe, counts)
        span = float(-np.min(rel, where=np.isfinite(rel), initial=0.0))
        sums = np.add.reduceat(np.exp(rel), starts)
        with np.errstate(divide="ignore"):
            out = np.where(top > NEG_INF, safe + np.log(sums), NEG_INF)
        return out, span

    sa, span_a = seg_logsum(la)
    sb, span_b = seg_logsum(lb)
    k0 = int(kc[0])
    dense = np.full(int(kc[-1]) - k0 + 2, NEG_INF)
    dense[kc - k0] = sa
    dense[kc + 1 - k0] = np.logaddexp(dense[kc + 1 - k0], sb)
    ok = np.flatnonzero(dense > NEG_INF)
    out_lm = dense[ok]
    # exp of the shifted arguments (u per unit of shift + 4u), <= 2 * max count sequential additions,
    # the log and the re-shift (u per unit of |log mass|), the final two-term merge (4u)
    mag = float(np.max(np.abs(out_lm))) if out_lm.size else 0.0
    agg = 1.01 * (U * (max(span_a, span_b) + 4) + 2 * (int(counts.max()) + 2) * U + 2 * U * (mag + 2) + 4 * U)
    return GridLoss(ok + k0, out_lm, float(h), "split", base.atoms, base.shift, agg)


# ---------------------------------------------------------------------------------------------
# pairs in row form: atoms streamed onto a base grid block by block
# ---------------------------------------------------------------------------------------------

#: width (in log-mass) of the scales at which streamed atoms are accumulated: atoms more than
#: _BAND below the largest are summed at a second scale, atoms more than 2 _BAND below it are dropped
#: into the tail (their total is bounded by count * e^{top - 2 _BAND})
_BAND = 700.0
#: cells per block when streaming rows (~2 MB per float64 temporary: measured fastest here)
STREAM_CELLS = 1 << 18
#: largest base grid a pair in row form is streamed onto (two float64 accumulators of this length)
MAX_BASE_POINTS = 1 << 26


def _rows_kept(rows) -> np.ndarray:
    return (rows.lo <= rows.hi) & (rows.log_w > NEG_INF) & ((rows.alpha > 0) | (rows.beta > 0))


def rows_spread(rows) -> float:
    """Width of the range of finite losses of the P||Q direction of ``rows``, extra atoms included
    (0 if there are none)."""
    lmin, lmax, _ = rows_loss_range(rows)
    xp = np.asarray(rows.extra_log_p, dtype=float)
    xq = np.asarray(rows.extra_log_q, dtype=float)
    fin = (xp > NEG_INF) & (xq > NEG_INF)
    if np.any(fin):
        x = xp[fin] - xq[fin]
        lmin, lmax = min(lmin, float(x.min())), max(lmax, float(x.max()))
    return lmax - lmin if lmax >= lmin else 0.0


def rows_loss_range(rows) -> tuple[float, float, float]:
    """(smallest finite loss, largest finite loss, largest |log| of a linear factor) over the kept atoms
    of the P||Q direction of ``rows`` (a BinomialRows), in O(rows).

    In row r the loss log(a x + b) - log(a (N - x) + b) is non-decreasing in the column x, so its
    range is read at the first column with P > 0 and the last with Q > 0."""
    keep = _rows_kept(rows)
    if not np.any(keep):
        return math.inf, NEG_INF, 0.0
    a, b = rows.alpha[keep], rows.beta[keep]
    N = rows.N[keep].astype(float)
    lo, hi = rows.lo[keep].astype(float), rows.hi[keep].astype(float)
    xf = np.where(a * lo + b > 0, lo, lo + 1.0)
    xl = np.where(a * (N - hi) + b > 0, hi, hi - 1.0)
    ok = xf <= xl
    if not np.any(ok):
        return math.inf, NEG_INF, 0.0
    a, b, N, lo, hi, xf, xl = (v[ok] for v in (a, b, N, lo, hi, xf, xl))
    with np.errstate(divide="ignore"):
        v = [a * xf + b, a * hi + b, a * (N - xl) + b, a * (N - lo) + b]
        logs = [np.log(t) for t in v]
        first = np.log(a * xf + b) - np.log(a * (N - xf) + b)
        last = np.log(a * xl + b) - np.log(a * (N - xl) + b)
    labs = max(float(np.max(np.abs(t[np.isfinite(t)]))) if np.any(np.isfinite(t)) else 0.0 for t in logs)
    return float(np.min(first)), float(np.max(last)), labs


def _row_cell_count(rows, keep: np.ndarray, h_b: float) -> float:
    """Upper bound on the number of atoms of one row sharing a cell of width h_b, summed over rows.

    In row r the loss increases by at least 2a / (a (N + 1) + b) per column (log(1 + z) >= z/(1 + z)),
    so at most 1 + h_b (a (N + 1) + b) / (2a) columns share a cell (all of them when a = 0)."""
    a, b = rows.alpha[keep], rows.beta[keep]
    N = rows.N[keep].astype(float)
    width = (rows.hi[keep] - rows.lo[keep] + 1).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(a > 0, 1.0 + h_b * (a * (N + 1.0) + b) / (2.0 * a), width)
    return float(np.sum(np.minimum(per, width)))


def _log_binom_by_n(rows, keep: np.ndarray, cells: int, gap: int):
    """log Bin(N, 1/2) on the union window of the kept rows of each distinct N, flattened with ``gap``
    entries of -inf after each N, when that table is much smaller than the atoms (rows sharing N, as
    in the weak adversary's pair); else None.  Returns (per-row offset such that the entry of column x
    of row r is at offset[r] + x, table)."""
    from shufflesim.accounting.pairs import _chunks, binom_rows

    N = rows.N[keep]
    uniq, grp = np.unique(N, return_inverse=True)
    LO = np.full(uniq.size, np.iinfo(np.int64).max, dtype=np.int64)
    HI = np.full(uniq.size, -1, dtype=np.int64)
    np.minimum.at(LO, grp, rows.lo[keep].astype(np.int64))
    np.maximum.at(HI, grp, rows.hi[keep].astype(np.int64))
    W = HI - LO + 1
    if 4 * int(W.sum() + gap * W.size) > int(np.sum(rows.hi[keep] - rows.lo[keep] + 1)):
        return None
    off = np.cumsum(W + gap) - (W + gap)
    table = np.full(int(W.sum() + gap * W.size), NEG_INF)
    for g in _chunks(W, cells):
        G, mask = binom_rows(uniq[g], 0.5, LO[g], HI[g])
        pos = (off[g][:, None] + np.arange(G.shape[1])[None, :])[mask]
        table[pos] = G[mask]
    base = np.zeros(rows.N.size, dtype=np.int64)
    base[keep] = (off - LO)[grp]
    return base, table


def rows_base_split(rows, h_b: float, *, cells: int | None = None) -> BaseSplit:
    """The P||Q direction of a pair in row form, split onto h_b·Z (placement "split") and aggregated
    per grid point, streaming the atoms block by block (memory O(block + grid points)).

    ``rows`` is a :class:`~shufflesim.accounting.pairs.BinomialRows` (pass ``rows.mirrored()`` for the
    Q||P direction).  Atom (r, x) has P-mass p = w_r B(x) (a x + b), Q-mass q = w_r B(x) (a (N - x) + b)
    and loss log(p/q) (see :class:`~shufflesim.accounting.pld.RowsDirection`).

    The split of :func:`discretise` sends an atom with P-mass p and (widened) loss s in the cell
    [kh, (k+1)h] to the two end points with masses p_a = (q' e^{kh} - p e^{-h})/(1 - e^{-h}) and
    p_b = (p - q' e^{kh})/(1 - e^{-h}) = p - p_a, q' = p e^{-s}: linear in (p, q'), so the split of all atoms
    of a cell is the split of their totals (P_k, Q'_k) -- the unique two-point law with that P- and
    Q-mass.  Hence only P_k and Q_k are accumulated per cell of h_b·Z (masses in linear scale
    relative to an upper bound ``top`` of all log-masses), and each cell is split once at the end.
    Per atom this costs a cell index and two masses: rows sharing c = b/a (all rows of the k-RR
    pairs) read log(a x + b) - log a from one table F_c(n) = log(n + c), so there is no per-atom
    log; rows sharing N read log B from one table.  Certification:

    * an atom is assigned to the cell of its computed loss + ``tol_assign`` (the rounding of the
      loss and of the index); Q is widened by ``mu`` = 2 tol_assign + eps_ratio (Q'_k = Q_k e^{-mu}),
      eps_ratio covering the ratio of the accumulated totals (the factors, or the two exps, and the
      sequential sums: at most :func:`_row_cell_count` terms per cell).  Then every atom has an
      effective placement inside its cell and at or above its true loss, and a two-point law with
      the cell's P-mass and a Q-mass at most that of such placed atoms dominates them (move mass to
      the upper point, then merge: a post-processing of a pair with less Q-mass); clamping the two
      masses to [0, P_k] only lowers Q further.  So the result dominates the pair, and any
      h = m h_b splits on from it exactly (:func:`discretise_base`);
    * ``mass_rel_err``: the rounding common to an atom's p and q (exp of the shifted log-mass, the
      binomial model :data:`~shufflesim.accounting.pld.BINOM_LOG_ERR`), the sums, the final split;
    * ``loss_tol`` = h_b + 2 mu: every base point lies within it of the true loss of every atom it
      received mass from, so the base atoms stand in for the original atoms in the Chernoff and
      product-event bounds of :mod:`.tails` (which widen by ``loss_tol``);
    * infinite-loss atoms (Q = 0: x = N when b = 0) are summed per row in closed form (B(N) = 2^-N);
      atoms more than 2 * 700 below ``top`` are dropped into ``tail`` (count * e^{top - 1400}).
    """
    from shufflesim.accounting.pairs import _chunks, binom_rows, log_int_table
    from shufflesim.accounting.pld import BINOM_LOG_ERR

    if not (h_b > 0 and math.isfinite(h_b)):
        raise ParameterError(f"base grid spacing h_b must be a positive finite number; got {h_b!r}")
    cells = STREAM_CELLS if cells is None else int(cells)
    keep = _rows_kept(rows)
    lmin, lmax, labs = rows_loss_range(rows)
    # extra atoms (outside the rows): finite ones are split like the others, Q = 0 ones are infinite
    xp = np.asarray(rows.extra_log_p, dtype=float)
    xq = np.asarray(rows.extra_log_q, dtype=float)
    x_fin = (xp > NEG_INF) & (xq > NEG_INF)
    x_loss = xp[x_fin] - xq[x_fin]
    x_lm = xp[x_fin]
    if x_loss.size:
        lmin, lmax = min(lmin, float(x_loss.min())), max(lmax, float(x_loss.max()))
    # infinite-loss atoms: column N of rows with b = 0 (Q = 0 there), mass w a N 2^-N
    inf_rows = keep & (rows.beta == 0) & (rows.alpha > 0) & (rows.hi == rows.N) & (rows.N >= 1)
    log_inf = NEG_INF
    inf_rel = 0.0
    if np.any(inf_rows):
        Ni = rows.N[inf_rows].astype(float)
        terms = rows.log_w[inf_rows] + Ni * math.log(0.5) + np.log(rows.alpha[inf_rows] * Ni)
        log_inf = log_sum(terms)
        inf_rel = 8 * U * (float(np.max(np.abs(terms))) + math.log(terms.size + 1) + 4) + BINOM_LOG_ERR
    x_inf = (xp > NEG_INF) & (xq == NEG_INF)
    if np.any(x_inf):
        log_inf = float(np.logaddexp(log_inf, log_sum(xp[x_inf])))
        inf_rel = max(inf_rel, REL_SLACK)
    tail = float(rows.tail)
    if log_inf > NEG_INF and inf_rel > 0:
        tail = sum_up(tail, exp_up(log_inf + math.log(2 * inf_rel)))
        log_inf = log_inf + math.log1p(-2 * inf_rel)
    if not math.isfinite(lmin):
        empty = LossAtoms(np.zeros(0), np.zeros(0), log_inf, min(1.0, tail), 0.0)
        return BaseSplit(np.zeros(0, dtype=np.int64), float(h_b), 0.0, empty)
    if not np.any(keep):  # extra atoms only: stream an empty row set
        keep = np.zeros(rows.N.size, dtype=bool)
    lmag = max(abs(lmin), abs(lmax))
    if lmag / h_b > 2.0**61:
        raise ParameterError(f"base grid spacing h_b={h_b!r} is too small for losses of magnitude {lmag:.3g}")
    idx_rows = np.flatnonzero(keep)
    width = rows.hi[idx_rows] - rows.lo[idx_rows] + 1
    c_max = _row_cell_count(rows, keep, h_b) + x_loss.size + 1
    # blocks of rows of similar width waste little padding (the order of the rows is immaterial)
    order = np.argsort(width, kind="stable")
    idx_rows, width = idx_rows[order], width[order]
    a_r = rows.alpha[idx_rows]
    # rows sharing c = b/a share the table F_c(n) = log(n + c): then log p = log(w a B(x)) + F_c(x),
    # log q = log(w a B(x)) + F_c(N - x) and the loss is F_c(x) - F_c(N - x) (no per-atom log)
    nmax = int(rows.N[idx_rows].max()) if idx_rows.size else 0
    F = None
    if idx_rows.size and np.all(a_r > 0):
        cvals, cgrp = np.unique(rows.beta[idx_rows] / a_r, return_inverse=True)
        if 4 * cvals.size * (nmax + 1) <= int(width.sum()):
            with np.errstate(divide="ignore"):
                F = np.log(np.arange(nmax + 1, dtype=float)[None, :] + cvals[:, None]).ravel()
            f_off = cgrp.astype(np.int64) * (nmax + 1)
            with np.errstate(divide="ignore"):
                log_a = np.log(a_r)
            fin_f = F[np.isfinite(F)]
            labs = max(labs, float(np.max(np.abs(fin_f))) if fin_f.size else 0.0)
    # margin: cell assignment (computed loss: two logs of the factors, 4 ulp each, and their
    # difference; then L/h_b + shift and its floor), and the ratio of the two accumulated totals
    # (factors 2u each, or two exp of arguments <= 745 in size, 2u(745 + 2); <= c_max sequential
    # additions each; e^{kh - mu}: u(|kh| + 4))
    tol_assign = 1.01 * (8 * U * (2 * labs + 2) + 8 * U * (lmag + h_b))
    eps_ratio = 4 * U + 2 * U * (745 + 2) + 2 * (c_max + 2) * U + U * (lmag + h_b + 4) + 4 * U
    # cells are assigned from the computed loss + tol_assign; Q is widened by mu = 2 tol_assign +
    # eps_ratio, so that every atom's effective placement lies in its cell and above its true loss
    mu = 1.01 * (2 * tol_assign + eps_ratio)
    k_first = int(math.floor((lmin - h_b) / h_b)) - 2
    k_last = int(math.floor((lmax + mu + h_b) / h_b)) + 2
    size = k_last - k_first + 2
    if size > MAX_BASE_POINTS:
        raise ParameterError(f"base grid spacing h_b={h_b:.3g} would need {size} points for losses in "
                             f"[{lmin:.4g}, {lmax:.4g}]; at most {MAX_BASE_POINTS} are allowed")
    with np.errstate(divide="ignore"):
        vmax = np.where(keep, rows.alpha * np.maximum(rows.hi, rows.N - rows.lo) + rows.beta, 0.0)
        tops = np.where(keep & (vmax > 0), rows.log_w + np.log(vmax), NEG_INF)
        xtop = float(np.max(np.maximum(xp[x_fin], xq[x_fin]))) if x_loss.size else NEG_INF
    top = max(float(np.max(tops)) if tops.size else NEG_INF, xtop)  # log B <= 0: bounds every p and q
    wshift = rows.log_w - top
    P0 = np.zeros(size)
    Q0 = np.zeros(size)
    P1: np.ndarray | None = None
    Q1: np.ndarray | None = None
    n_dropped = 0
    arg_max = 0.0
    inv_h = 1.0 / h_b
    # tables are read through sliding windows (row r of a block reads W consecutive entries from its
    # own start: a row copy per row, no per-cell index arithmetic); -inf pads keep windows in range
    wpad = int(width.max()) + 1 if width.size else 1
    by_n = _log_binom_by_n(rows, keep, cells, wpad)
    L = log_int_table(nmax + 2) if by_n is None else None
    if by_n is not None:
        g_tab = np.concatenate((by_n[1], np.full(wpad, NEG_INF)))
    if F is not None:
        f_tab = np.concatenate((np.full(wpad, NEG_INF), F, np.full(wpad, NEG_INF)))
        f_rev = f_tab[::-1].copy()
    shift_cells = tol_assign * inv_h - k_first  # y = L / h_b + shift_cells: the cell index
    for blk in _chunks(width, cells):
        g = idx_rows[blk]
        N_g = rows.N[g]
        lo_g = rows.lo[g]
        w_g = width[blk]
        nr = g.size
        jj = np.arange(int(w_g.max()))[None, :]
        W = jj.shape[1]
        padded = bool(w_g.min() != W)
        if by_n is None:
            G, _ = binom_rows(N_g, 0.5, lo_g, rows.hi[g], log_int=L)
        else:
            G = np.lib.stride_tricks.sliding_window_view(g_tab, W)[by_n[0][g] + lo_g]
        if padded:  # cells past a row's window: zero mass (their loss may lie outside the grid range)
            G[jj >= w_g[:, None]] = NEG_INF
        # cells where P or Q vanishes (zero mass, but a nan or infinite loss): padding, column 0 of
        # rows with b = 0, column N (infinite loss when b = 0)
        one_sided = padded or bool(np.any(rows.hi[g] >= N_g) or np.any((rows.beta[g] == 0) & (lo_g == 0)))
        last = w_g - 1
        ar = np.arange(nr)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if F is not None:
                G += (wshift[g] + log_a[blk])[:, None]
                start = f_off[blk] + wpad
                f1 = np.lib.stride_tricks.sliding_window_view(f_tab, W)[start + lo_g]  # F(x), x = lo..
                # F(N - x) for x = lo.. read forwards in the reversed table
                f2 = np.lib.stride_tricks.sliding_window_view(f_rev, W)[f_tab.size - 1 - (start + N_g - lo_g)]
                y = f1 - f2
                lp = f1
                lp += G  # log p - top
                lq = f2
                lq += G  # log q - top
            else:
                G += wshift[g][:, None]
                xf = (lo_g[:, None] + jj).astype(float)
                a = rows.alpha[g][:, None]
                b = rows.beta[g][:, None]
                v1 = a * xf
                v2 = N_g[:, None] - xf
                v2 *= a
                if np.any(rows.beta[g] != 0):
                    v1 += b
                    v2 += b
                y = v1 / v2
                np.log(y, out=y)
                lp = None
            y *= inv_h
            y += shift_cells
            np.floor(y, out=y)
            if one_sided:  # nan/inf there (zero mass): fmax/fmin map them into range
                np.fmax(y, 0.0, out=y)
                np.fmin(y, size - 2.0, out=y)
            idx = y.astype(np.int64).ravel()
            # the smallest log P-mass of a row is at one of its ends (B(x)(a x + b) is log-concave)
            if lp is not None:
                ends = np.concatenate([lp[ar, np.minimum(j, last)] for j in (0, 1)]
                                      + [lp[ar, np.maximum(last - j, 0)] for j in (0, 1)])
            else:
                ends = np.concatenate([G[ar, np.minimum(j, last)] + np.log(v1[ar, np.minimum(j, last)]) for j in (0, 1)]
                                      + [G[ar, np.maximum(last - j, 0)] + np.log(v1[ar, np.maximum(last - j, 0)])
                                         for j in (0, 1)])
        gmin = float(np.min(ends, where=np.isfinite(ends), initial=0.0))
        arg_max = max(arg_max, -gmin)
        if gmin >= -_BAND:  # every P-mass is within e^-700 of e^top: one band
            if lp is not None:
                p = np.exp(lp, out=lp)
                q = np.exp(lq, out=lq)
            else:
                wgt = np.exp(G, out=G)
                p = v1
                p *= wgt
                q = v2
                q *= wgt
            if one_sided:
                np.copyto(p, 0.0, where=~(q > 0))  # infinite-loss atoms (summed above), columns beyond N
                np.copyto(q, 0.0, where=~(p > 0))  # atoms with P = 0 play no part in P||Q
            np.add.at(P0, idx, p.ravel())  # sequential per cell
            np.add.at(Q0, idx, q.ravel())
            continue
        # rare: masses spanning more than 700 nats -- two bands by the log P-mass (an atom's Q-mass
        # goes with its P-mass; a Q-mass that underflows there only lowers Q, which is safe)
        if lp is None:
            lp = G + np.log(v1)
            lq = G + np.log(v2)
        if P1 is None:
            P1, Q1 = np.zeros(size), np.zeros(size)
        ok = (lp > NEG_INF) & (lq > NEG_INF)
        n_dropped += int(np.count_nonzero(ok & (lp < -2 * _BAND)))
        for shift, Pd, Qd, sel in ((0.0, P0, Q0, ok & (lp >= -_BAND)),
                                   (_BAND, P1, Q1, ok & (lp < -_BAND) & (lp >= -2 * _BAND))):
            np.add.at(Pd, idx, np.where(sel, np.exp(lp + shift), 0.0).ravel())
            np.add.at(Qd, idx, np.where(sel, np.exp(lq + shift), 0.0).ravel())
    if x_loss.size:  # the extra atoms, in the top band
        with np.errstate(divide="ignore"):
            xi = np.clip(np.floor((x_loss + tol_assign) * inv_h) - k_first, 0, size - 2).astype(np.int64)
        np.add.at(P0, xi, np.exp(x_lm - top))
        np.add.at(Q0, xi, np.exp(xp[x_fin] - x_loss - top))
        arg_max = max(arg_max, float(np.max(np.abs(x_lm - top))))
    # split each cell's totals: p_a at k, p_b at k + 1 (clamped to [0, P_k]; see the docstring)
    kc = np.arange(size) + k_first
    den = -math.expm1(-h_b)
    out = np.zeros(size + 1)
    out1 = np.zeros(size + 1) if P1 is not None else None
    for Pd, Qd, o in ((P0, Q0, out), (P1, Q1, out1)):
        if Pd is None:
            continue
        nz = np.flatnonzero(Pd > 0)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            X = np.exp(np.log(Qd[nz]) + (kc[nz] * h_b - mu))  # Q e^{kh - mu} (0 when Q = 0)
        Pn = Pd[nz]
        # p_b = (P - X)/(1 - e^{-h}); p_a = P - p_b = (X - P e^{-h})/(1 - e^{-h}).  P - X is exact when
        # it cancels, so an error in X acts as a loss shift (covered by mu); P is kept to rounding
        pb = np.clip((Pn - X) / den, 0.0, Pn)
        pa = Pn - pb
        o[nz] += pa
        o[nz + 1] += pb
    with np.errstate(divide="ignore"):
        log_dense = np.log(out) + top
        if out1 is not None:
            log_dense = np.logaddexp(log_dense, np.log(out1) + (top - _BAND))
    ok = np.flatnonzero(log_dense > NEG_INF)
    kk = ok + k_first
    values = kk * h_b
    if n_dropped:
        tail = sum_up(tail, exp_up(top - 2 * _BAND + math.log(n_dropped)))
    # relative error of every output mass: the part common to an atom's p and q (exp of the
    # shifted log-mass, u per unit of its size + 4u; the binomial model), the factors (2u), the sums
    # (c_max u), the split formula (4u, after the subtraction, which is exact when it cancels)
    rel_bin = BINOM_LOG_ERR * max(1.0, (arg_max + abs(top) + labs) / 100.0)
    wmag = (float(np.max(np.abs(rows.log_w[keep]))) if np.any(keep) else 0.0) + abs(top)
    wmag += float(np.max(np.abs(log_a))) if F is not None else 0.0
    rel = 1.01 * (U * (2 * arg_max + 4 * labs + 2 * wmag + 8) + rel_bin + (c_max + 2) * U + 12 * U)
    loss_tol = h_b + 2 * mu + 4 * U * (float(np.max(np.abs(values))) if values.size else 0.0)
    base_atoms = LossAtoms(values, log_dense[ok], log_inf, min(1.0, tail), loss_tol, rel)
    return BaseSplit(kk, float(h_b), 2 * mu, base_atoms)


class RowsComponent:
    """One direction (P||Q) of a pair in row form as an FFT component: its atoms are streamed onto a
    base grid on demand (:func:`rows_base_split`) and never held all at once.

    ``atoms`` (the base atoms at the default spacing ``h_b``) stands in for the original atoms in
    the accountant's heuristics and in the Chernoff/product-event bounds (see
    :func:`rows_base_split` on ``loss_tol``)."""

    def __init__(self, rows, h_b: float):
        self.rows = rows
        self.h_b = float(h_b)
        self._bases: dict[float, BaseSplit] = {}

    def base(self, h_b: float | None = None) -> BaseSplit:
        h_b = self.h_b if h_b is None else float(h_b)
        if h_b not in self._bases:
            for key in [k for k in self._bases if k != self.h_b]:
                del self._bases[key]  # keep the default base and the newest one
            self._bases[h_b] = rows_base_split(self.rows, h_b)
        return self._bases[h_b]

    @property
    def atoms(self) -> LossAtoms:
        return self.base().atoms

    @property
    def size(self) -> int:
        return self.atoms.size


# ---------------------------------------------------------------------------------------------
# tilted tail bounds and window choice
# ---------------------------------------------------------------------------------------------

GridComponents = Sequence[tuple[GridLoss, int]]


def _tail_exponent_sketch(comps: GridComponents, log_cs: Sequence[float], lam: float, th: float) -> float:
    """Upper envelope of sum_i n_i [log C_i(lam + th) - log C_i(lam)] (th may be negative)."""
    return float(sum(n * (g.sketch.log_mgf_upper(lam + th) - lc) for (g, n), lc in zip(comps, log_cs)))


def _tail_exponent_exact(comps: GridComponents, log_cs: Sequence[float], lam: float, th: float) -> float:
    return float(sum(n * (g.log_mgf(lam + th) + math.log1p(REL_SLACK) - lc) for (g, n), lc in zip(comps, log_cs)))


def _scale(comps: GridComponents, lam: float) -> float:
    var = 0.0
    for g, n in comps:
        _, v = g.sketch.tilted_moments(lam)
        var += n * v
    h = comps[0][0].h
    return max(math.sqrt(var), h)


def _boundary(comps, log_cs, lam, log_tau, side: str) -> float:
    """Loss value a such that the tilted tail beyond a is <= e^{log_tau} (via a scalar search on th).

    side "upper": smallest a found with P~(S >= a) <= tau; "lower": largest a with P~(S <= a) <= tau.
    Uses the sketch (an upper envelope), so the answer is conservative.
    """
    sc = _scale(comps, lam)
    sign = 1.0 if side == "upper" else -1.0

    def a_of(x: float) -> float:
        # upper side: the boundary a(th); lower side: minus the boundary b(th); minimise both
        th = math.exp(x)
        return (_tail_exponent_sketch(comps, log_cs, lam, sign * th) - log_tau) / th

    lo_x, hi_x = math.log(1e-6 / sc), math.log(1e6 / sc)
    res = minimize_scalar(a_of, bounds=(lo_x, hi_x), method="bounded", options={"xatol": 1e-3})
    best = min(float(res.fun), a_of(lo_x), a_of(hi_x))
    return sign * best


def _tail_log_bound(comps, log_cs, lam, a: float, side: str) -> float:
    """log of a certified bound on P~(S >= a) (side "upper") or P~(S <= a) (side "lower")."""
    sign = 1.0 if side == "upper" else -1.0
    sc = _scale(comps, lam)

    def g(x: float) -> float:
        th = math.exp(x)
        return _tail_exponent_sketch(comps, log_cs, lam, sign * th) - sign * th * a

    res = minimize_scalar(g, bounds=(math.log(1e-6 / sc), math.log(1e6 / sc)), method="bounded",
                          options={"xatol": 1e-3})
    th = math.exp(float(res.x))
    val = _tail_exponent_exact(comps, log_cs, lam, sign * th) - sign * th * a
    return min(0.0, val)


@dataclass(frozen=True)
class Window:
    """Grid-index window [lo, lo + M) of a circular convolution of length M."""

    lo: int
    M: int


def choose_window(comps: GridComponents, lam: float, log_cs: Sequence[float], tau_w: float,
                  max_size: int, min_size: int = 64) -> Window:
    """Window containing all but ~tau_w of the tilted composed mass (or the whole support if smaller)."""
    h = comps[0][0].h
    kmin = sum(n * g.kmin for g, n in comps)
    kmax = sum(n * g.kmax for g, n in comps)
    full = kmax - kmin + 1
    if full <= max(min_size, 1 << 12):
        return Window(kmin, scipy.fft.next_fast_len(max(full, min_size), real=True))
    log_tau = math.log(tau_w / 2)
    hi_a = _boundary(comps, log_cs, lam, log_tau, "upper")
    lo_a = _boundary(comps, log_cs, lam, log_tau, "lower")
    lo = max(kmin, int(math.floor(lo_a / h)) - 2)
    hi = min(kmax, int(math.ceil(hi_a / h)) + 2)
    if hi < lo:
        lo, hi = min(lo, hi), max(lo, hi)
    width = hi - lo + 1
    if full <= 2 * width:
        lo, width = kmin, full
    M = scipy.fft.next_fast_len(max(width, min_size), real=True)
    if M > max_size:
        raise AccuracyError(
            f"the composed privacy loss needs a grid of {M} points at spacing h={h:.3g} "
            f"(> max_grid_size={max_size}); raise max_grid_size or loosen target_accuracy"
        )
    return Window(lo, M)


# ---------------------------------------------------------------------------------------------
# the composition itself
# ---------------------------------------------------------------------------------------------

def _cpow(z: np.ndarray, n: int) -> np.ndarray:
    """z**n by binary powering (relative error <= ~3 n u for |z| <= 1)."""
    result = None
    base = z
    while n > 0:
        if n & 1:
            result = base.copy() if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    return result


def _suffix(x: np.ndarray, a: float) -> np.ndarray:
    """s_j = sum_{j' >= j} x_{j'} a^{j' - j}, length M + 1 with s_M = 0."""
    out = np.zeros(x.size + 1)
    if a == 1.0:
        out[:-1] = np.cumsum(x[::-1])[::-1]
    else:
        out[:-1] = lfilter([1.0], [1.0, -a], x[::-1])[::-1]
    return out


@dataclass(frozen=True, eq=False)
class GridComposition:
    """The FFT composition of one direction on one placement, with certified bounds on delta_dir.

    Placement "up" gives upper bounds only, "down" lower bounds only, "split" both (see
    :meth:`interval`); the error terms are those of the module docstring, item 4.
    """

    rounding: str
    h: float
    lam: float
    window: Window
    n_total: int
    log_norm: float
    log_tail_above: float
    log_tail_below: float
    rho: float
    rel: float
    s_max: float
    s_absmax: float
    log_inf: float
    tail: float
    shift: float
    c: np.ndarray
    suffixes: dict

    @property
    def M(self) -> int:
        return self.window.M

    # ---------------------------------------------------------------- pieces
    def _common(self, eps: np.ndarray) -> dict:
        h, lam, M, lo = self.h, self.lam, self.M, self.window.lo
        j0 = np.floor(eps / h - lo).astype(np.int64) + 1
        j0 = np.clip(j0, 0, M)
        for _ in range(2):  # fix-ups so that s_{j0} > eps >= s_{j0 - 1}
            s0 = (lo + j0) * h
            j0 = np.where((j0 < M) & (s0 <= eps), j0 + 1, j0)
            sm = (lo + j0 - 1) * h
            j0 = np.where((j0 > 0) & (sm > eps), j0 - 1, j0)
        s0 = (lo + j0) * h
        d0 = np.where(j0 < M, s0 - eps, 0.0)
        n_rest = (M - j0).astype(float)
        log_cl = float(log_c(lam))
        with np.errstate(divide="ignore"):
            half_log_n = 0.5 * np.log(n_rest)
            if lam > 0:
                log_geo = -lam * d0 - 0.5 * math.log(-math.expm1(-2 * lam * h))
                log_w = np.minimum(half_log_n + min(0.0, log_cl), log_geo)
            else:
                log_w = half_log_n
            log_rho = math.log(self.rho) if self.rho > 0 else NEG_INF
        gamma = (3 * M + 30) * U + 8 * U * (1 + lam) * (self.s_absmax + np.abs(eps) + 1)
        return {"j0": j0, "log_e1": -lam * d0, "r2": np.exp(-d0), "log_cl": log_cl, "log_ro": log_rho + log_w,
                "gamma": gamma, "logpre": self.log_norm - lam * eps, "beyond": eps >= self.s_max}

    @staticmethod
    def _log(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), NEG_INF)

    def _upper_log_fin(self, eps: np.ndarray, cm: dict) -> np.ndarray:
        """log of the upper bound on the finite part (pessimistic placements)."""
        j0, r2 = cm["j0"], cm["r2"]
        Up, Vp = self.suffixes["pos"]
        main = np.maximum(Up[j0] - r2 * Vp[j0], 0.0)
        ev = cm["gamma"] * (Up[j0] + r2 * Vp[j0])
        below = np.where((self.window.lo - 1) * self.h > eps, cm["log_cl"] + self.log_tail_below, NEG_INF)
        log_fixed = np.logaddexp(np.logaddexp(cm["log_ro"], self.log_tail_above), below)
        log_b = np.logaddexp(cm["log_e1"] + self._log(main + ev), log_fixed)
        out = cm["logpre"] + log_b + math.log1p(self.rel)
        return np.where(cm["beyond"], NEG_INF, out)

    def _lower_terms(self, eps: np.ndarray, cm: dict) -> tuple[np.ndarray, np.ndarray]:
        """(log positive part, log subtracted part) of the lower bound, relative to e^{logpre}."""
        j0, r2 = cm["j0"], cm["r2"]
        Us, Vs, Ua, Va = self.suffixes["signed"]
        a = (Us[j0] - r2 * Vs[j0]) * (1 - self.rel) - cm["gamma"] * (Ua[j0] + r2 * Va[j0])
        log_pos = cm["log_e1"] + self._log(a)
        log_neg = np.logaddexp(cm["log_ro"], cm["log_cl"] + np.logaddexp(self.log_tail_above, self.log_tail_below))
        return log_pos, log_neg

    def _split_correction(self, eps: np.ndarray) -> np.ndarray:
        """log of (delta^split - delta)'s bound, relative to e^{logpre} (placement "split").

        For a product outcome o of the original pair with P-mass p_o, the split produces sub-outcomes
        with the same total P- and Q-mass whose losses lie in an interval of length n h containing
        the (widened) loss of o.  Its contribution changes only if the sub-outcomes straddle eps, and
        then by at most p_o (1 - e^{-n(h + mu)}); all such sub-outcomes have loss in (eps - n h,
        eps + n h].  Widening the losses by at most mu adds at most n mu P'(S' > eps).  Hence

            delta >= delta^split - (1 - e^{-n(h+mu)}) P'(eps - nh < S' <= eps + nh) - n mu P'(S' > eps),

        with P' the split composition, bounded here from the computed window (weights e^{-lam(s-eps)}
        of the tilted sums, round-off rho, tilted tails outside the window); P'(S' > eps) <=
        e^{Lambda - lam eps}(1 + rel) because e^{-lam(s - eps)} <= 1 there.
        """
        h, lam, M, lo, n = self.h, self.lam, self.M, self.window.lo, self.n_total
        cp = self.suffixes["cpos"]
        span = n * h
        ja = np.floor((eps - span) / h - lo).astype(np.int64)
        jb = np.ceil((eps + span) / h - lo).astype(np.int64)
        width = int(np.max(jb - ja)) + 1
        idx = ja[:, None] + np.arange(width)[None, :]
        valid = (idx >= 0) & (idx < M) & (idx <= jb[:, None])
        idxc = np.clip(idx, 0, M - 1)
        svals = (lo + idxc) * h
        logw = np.where(valid, -lam * (svals - eps[:, None]), NEG_INF)
        top_w = np.max(logw, axis=1)
        top_w = np.where(np.isfinite(top_w), top_w, 0.0)
        w = np.exp(logw - top_w[:, None])  # <= 1
        win = np.sum(w * cp[idxc], axis=1) * (1 + (width + 4) * U)
        win += self.rho * np.sqrt(np.sum(w * w, axis=1))
        win *= 1 + self.rel
        log_win = self._log(win) + top_w
        # tilted mass beyond the window that could fall in (eps - span, eps + span]
        top = (lo + M) * h
        above = np.where(eps + span >= top,
                         -lam * (np.maximum(top, eps - span) - eps) + self.log_tail_above, NEG_INF)
        below = np.where(eps - span < lo * h, lam * span + self.log_tail_below, NEG_INF)
        log_win = np.logaddexp(log_win, np.logaddexp(above, below))
        log_fac = math.log(-math.expm1(-n * (h + self.shift)))
        log_mu = math.log(n * self.shift * (1 + self.rel)) if self.shift > 0 else NEG_INF
        return np.logaddexp(log_fac + log_win, log_mu)

    # ---------------------------------------------------------------- public
    def interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta_dir(eps); the trivial bound where unavailable."""
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        cm = self._common(eps)
        inf_lo = exp_down(self.log_inf + math.log1p(-REL_SLACK))
        inf_up = exp_up(self.log_inf + math.log1p(REL_SLACK))
        lo_triv = np.full(eps.shape, inf_lo)
        if self.rounding in ("up", "split"):
            logfin = self._upper_log_fin(eps, cm)
            fin = np.array([exp_up(float(v)) for v in logfin])
            # two additions: two ulps up keep the sum above the exact one
            total = np.nextafter(np.nextafter(inf_up + fin + self.tail, np.inf), np.inf)
            upper = np.where((inf_up == 0) & (fin == 0) & (self.tail == 0), 0.0, np.minimum(total, 1.0))
        else:
            upper = np.ones(eps.shape)
        if self.rounding == "up":
            return lo_triv, upper
        log_pos, log_neg = self._lower_terms(eps, cm)
        if self.rounding == "split":
            log_neg = np.logaddexp(log_neg, self._split_correction(eps))
        with np.errstate(invalid="ignore"):
            ok = log_pos > log_neg
            diff = np.where(ok, log_pos + np.log(-np.expm1(np.where(ok, log_neg - log_pos, -1.0))), NEG_INF)
        logfin = np.minimum(cm["logpre"] + diff, 0.0)
        fin = np.where(cm["beyond"] | ~ok, 0.0, np.nextafter(np.exp(np.where(ok, logfin, 0.0)), 0.0))
        lower = np.minimum(np.maximum(np.nextafter(inf_lo + fin, 0.0), 0.0), 1.0)
        return np.minimum(lower, upper), upper

    def fixed_error(self, eps) -> np.ndarray:
        """The part of the interval's width that does not shrink with h (round-off, aliasing, tails)."""
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        cm = self._common(eps)
        terms = [cm["log_ro"], np.full(eps.shape, self.log_tail_above),
                 cm["log_cl"] + np.full(eps.shape, self.log_tail_below)]
        key = "pos" if "pos" in self.suffixes else "signed"
        Us, Vs = self.suffixes[key][0], self.suffixes[key][1]
        j0, r2 = cm["j0"], cm["r2"]
        main = np.abs(Us[j0] - r2 * Vs[j0])
        terms.append(cm["log_e1"] + self._log(cm["gamma"] * (np.abs(Us[j0]) + r2 * np.abs(Vs[j0])) + self.rel * main))
        log_err = terms[0]
        for t in terms[1:]:
            log_err = np.logaddexp(log_err, t)
        with np.errstate(over="ignore"):
            val = 2.0 * np.exp(np.minimum(cm["logpre"] + log_err, 700.0))
        return np.where(cm["beyond"], 0.0, val)

    def ratio(self, eps: float) -> float:
        """P(S > eps)/delta_fin(eps) estimated from the suffix sums."""
        cm = self._common(np.array([eps]))
        key = "pos" if "pos" in self.suffixes else "signed"
        Us, Vs = self.suffixes[key][0], self.suffixes[key][1]
        j0 = int(cm["j0"][0])
        if j0 >= self.M:
            return 1.0
        main = float(Us[j0] - cm["r2"][0] * Vs[j0])
        if main <= 0:
            return 1.0
        return max(float(Us[j0]) / main, 1.0)


def compose_grid(comps: GridComponents, *, lam: float, window: Window, workers: int = 1) -> GridComposition:
    """Compose ``comps`` (grid PMFs with multiplicities) at tilt ``lam`` on ``window`` via the FFT."""
    rounding = comps[0][0].rounding
    h = comps[0][0].h
    M, lo = window.M, window.lo
    n_total = int(sum(n for _, n in comps))
    atoms_comps = [(g.atoms, n) for g, n in comps]
    log_inf = composed_log_inf_mass(atoms_comps)
    tail = composed_tail(atoms_comps)
    shift = max(g.shift for g, _ in comps)
    if any(g.size == 0 for g, n in comps if n > 0):
        # no finite product outcome: only infinite mass and tails remain
        z = np.zeros(M + 1)
        sfx = {"pos": (z, z), "signed": (z, z, z, z), "cpos": np.zeros(M)}
        return GridComposition(rounding, h, lam, window, n_total, NEG_INF, NEG_INF, NEG_INF, 0.0, 0.0,
                               NEG_INF, 0.0, log_inf, tail, shift, np.zeros(M), sfx)
    log_cs = [g.log_mgf(lam) for g, _ in comps]
    spectrum = None
    theta = 0.0
    n_atoms = 0
    for (g, n), lc in zip(comps, log_cs):
        if n == 0:
            continue
        arg = g.log_mass + lam * g.values - lc
        x = np.bincount(np.mod(g.k, M), weights=np.exp(arg), minlength=M)
        fold = -(-g.size // M) + 1
        theta = max(theta, 4 * U * (g.max_abs_log_mass + abs(lam) * float(np.max(np.abs(g.values))) + abs(lc) + 2)
                    + (math.log2(g.size + 1) + 10) * U + fold * U + g.atoms.mass_rel_err + g.agg_rel)
        n_atoms += g.size
        X = scipy.fft.rfft(x, workers=workers)
        del x
        X = _cpow(X, int(n))
        spectrum = X if spectrum is None else spectrum * X
    c = scipy.fft.irfft(spectrum, n=M, workers=workers)
    del spectrum
    c = np.roll(c, -(lo % M))
    eps_f = FFT_KAPPA * U * math.ceil(math.log2(max(M, 2)))
    rho = 1.01 * ((n_total + 1) * eps_f + 3 * n_total * U) + n_total * n_atoms * 1e-300
    rel = 1.01 * n_total * theta + REL_SLACK
    kmin = sum(n * g.kmin for g, n in comps)
    kmax = sum(n * g.kmax for g, n in comps)
    log_above = NEG_INF if lo + M - 1 >= kmax else _tail_log_bound(comps, log_cs, lam, (lo + M) * h, "upper")
    log_below = NEG_INF if lo <= kmin else _tail_log_bound(comps, log_cs, lam, (lo - 1) * h, "lower")
    a1 = math.exp(-lam * h)
    a2 = math.exp(-(lam + 1.0) * h)
    sfx: dict = {}
    if rounding in ("up", "split"):
        cp = np.maximum(c, 0.0)
        sfx["pos"] = (_suffix(cp, a1), _suffix(cp, a2))
        sfx["cpos"] = cp
    if rounding in ("down", "split"):
        ca = np.abs(c)
        sfx["signed"] = (_suffix(c, a1), _suffix(c, a2), _suffix(ca, a1), _suffix(ca, a2))
    s_absmax = max(abs(lo), abs(lo + M), abs(kmin), abs(kmax)) * h
    # beyond s_max the finite part is exactly 0: the grid's largest sum (down grid: it is below the
    # true maximum, which is irrelevant for a lower bound) or the atoms' largest sum, whichever is smaller
    s_true = float(sum(n * (g.atoms.max_loss + g.atoms.loss_tol) for g, n in comps))
    s_true += 4 * U * abs(s_true)
    s_max = kmax * h if rounding == "down" else min(kmax * h, s_true)
    return GridComposition(
        rounding, h, lam, window, n_total, float(sum(n * lc for (g, n), lc in zip(comps, log_cs))),
        log_above, log_below, rho, rel, s_max, s_absmax, log_inf, tail, shift, c, sfx,
    )


# ---------------------------------------------------------------------------------------------
# exact composition (pairwise convolution of atoms)
# ---------------------------------------------------------------------------------------------

def _compose_atoms_two(a: LossAtoms, b: LossAtoms, merge: bool) -> LossAtoms:
    losses = (a.losses[:, None] + b.losses[None, :]).ravel()
    log_mass = (a.log_mass[:, None] + b.log_mass[None, :]).ravel()
    order = np.argsort(losses, kind="stable")
    losses = losses[order]
    log_mass = log_mass[order]
    err = a.mass_rel_err + b.mass_rel_err + 4 * U
    if merge:
        losses, log_mass, e2 = group_log_sum(losses, log_mass)
        err += e2
    log_inf = compose_log_extra([a.log_finite_mass, b.log_finite_mass], [a.log_inf_mass, b.log_inf_mass])
    with np.errstate(divide="ignore"):
        lt = [math.log(t) if t > 0 else NEG_INF for t in (a.tail, b.tail)]
    tail = exp_up(compose_log_extra([a.log_kept_mass, b.log_kept_mass], lt)) * (1 + 1e-9) if (a.tail or b.tail) else 0.0
    absmax = float(np.max(np.abs(losses))) if losses.size else 0.0
    tol = a.loss_tol + b.loss_tol + 2 * U * absmax
    return LossAtoms(losses, log_mass, log_inf, min(tail, 1.0), tol, err)


def compose_atoms_exact(components: Sequence[tuple[LossAtoms, int]], *, max_atoms: int = 4_000_000,
                        merge: bool = True) -> LossAtoms:
    """Exact composition of one direction by pairwise convolution of atoms (no grid)."""
    seq: list[LossAtoms] = []
    for a, n in components:
        seq.extend([a] * int(n))
    if not seq:
        raise ParameterError("nothing to compose: the list of components is empty")
    size = 1
    for a in seq:
        size *= max(a.size, 1)
        if size > max_atoms:
            raise ParameterError(
                f"exact composition would need more than max_atoms={max_atoms} atoms; use the FFT accountant"
            )
    out = seq[0]
    for a in seq[1:]:
        out = _compose_atoms_two(out, a, merge)
    return out


def compose_exact(plds: Sequence[PrivacyLossDistribution], *, compositions: int = 1,
                  max_atoms: int = 4_000_000, merge: bool = True) -> PrivacyLossDistribution:
    """Exact PLD of the composition of ``plds`` (each ``compositions`` times), by pairwise convolution.

    The composed pair is (P_1 x ... x P_r, Q_1 x ... x Q_r) (seed 001 Theorem 5); feasible only for small
    supports (the product of the support sizes must not exceed ``max_atoms``).
    """
    plds = list(plds)
    if not plds:
        raise ParameterError("compose_exact needs at least one PrivacyLossDistribution")
    pq = compose_atoms_exact([(p.pq, compositions) for p in plds], max_atoms=max_atoms, merge=merge)
    qp = compose_atoms_exact([(p.qp, compositions) for p in plds], max_atoms=max_atoms, merge=merge)
    names = "+".join(p.name for p in plds)
    return PrivacyLossDistribution(pq, qp, f"({names})^{compositions}" if compositions > 1 else names,
                                   {"components": [p.name for p in plds], "compositions": compositions},
                                   "exact pairwise composition")
