"""Placing one direction of a PLD on a grid h·Z for the Fourier accountant, and the placement strategies.

After Koskela, Heikkilä, Honkela (2021, arXiv:2106.00477, §2.2, Lemma 6 and Algorithm 1) for rounding
up/down, and the mass-preserving split in the spirit of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
("Connect the dots", PETS 2022, arXiv:2207.04380); the lower bound for the split is derived in
:mod:`.fft`.

Placement on a grid h·Z, two kinds (:func:`discretise`):

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
  (mu: the loss widening; see :meth:`~shufflesim.accounting.pld.fft.GridComposition.split_correction`).  One FFT per direction
  gives both bounds, and the grid can be ~sqrt(1/target) times coarser than with "lemma6".  (This is
  the idea of the "connect the dots" discretisation of Doroshenko et al., PETS 2022; the lower
  bound above is our own derivation.)

A split depends on an atom only through its P- and Q-mass, so the split of all atoms in a cell
of a fine base grid h_b·Z is the split of their totals, and a split onto h = m h_b follows
exactly from the base points (:func:`base_split`, :func:`discretise_base`).  Pairs in row form
are placed that way without ever being expanded: :func:`~shufflesim.accounting.rows.rows_stream.rows_base_split` streams their atoms
block by block and accumulates the two totals per base cell.

Infinite-loss mass is never discretised: it composes exactly as prod(f_i + m_i) - prod f_i.
Atoms whose total mass is far below the accuracy needed may be pruned into the pair's dropped
``tail`` beforehand (:meth:`~shufflesim.accounting.pld.distribution.LossAtoms.prune`): counted in full in upper
bounds and not at all in lower bounds.

Strategies are small classes (:class:`Placement`: :data:`ROUND_UP`, :data:`ROUND_DOWN`, :data:`SPLIT`)
rather than strings: a grid PMF carries its placement, and the composition asks it which bounds it
gives.  The strings "up", "down", "split" are still accepted at the public boundary
(:func:`placement_from`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.accounting.numerics.logspace import NEG_INF, U, group_log_sum, log_sum, sum_up
from shufflesim.accounting.pld.mgf import MGFSketch
from shufflesim.accounting.pld.distribution import LossAtoms


# ---------------------------------------------------------------------------------------------
# placement strategies
# ---------------------------------------------------------------------------------------------

class Placement(ABC):
    """How the finite atoms of one direction are put on h·Z (stateless; use the module singletons).

    ``gives_upper``: the placed pair dominates the original (its delta is an upper bound);
    ``gives_lower``: its delta (with :attr:`second_order` correction for the split) is a lower bound.
    """

    name: str = ""
    gives_upper: bool = False
    gives_lower: bool = False
    #: the lower bound needs the split's second-order correction (see :mod:`.fft`)
    second_order: bool = False

    @abstractmethod
    def place(self, losses: np.ndarray, log_mass: np.ndarray, h: float,
              margin: float) -> tuple[np.ndarray, np.ndarray]:
        """(grid indices, log-masses) of atoms with sorted finite ``losses``, each known to within
        ``margin`` (see :func:`discretise` for the margin)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RoundUp(Placement):
    """omega^R of Koskela et al. (arXiv:2106.00477, eq 2.5): every loss (widened up) rounded up."""

    name = "up"
    gives_upper = True

    def place(self, losses, log_mass, h, margin):
        x = losses + margin
        k = np.ceil(x / h)
        k[k * h < x] += 1
        return k.astype(np.int64), log_mass


class RoundDown(Placement):
    """omega^L of Koskela et al. (arXiv:2106.00477, eq 2.5): every loss (widened down) rounded down."""

    name = "down"
    gives_lower = True

    def place(self, losses, log_mass, h, margin):
        x = losses - margin
        k = np.floor(x / h)
        k[k * h > x] -= 1
        return k.astype(np.int64), log_mass


class Split(Placement):
    """Every atom split between its two neighbouring grid points, keeping its P- and Q-mass."""

    name = "split"
    gives_upper = True
    gives_lower = True
    second_order = True

    def place(self, losses, log_mass, h, margin):
        k, la, lb = split_parts(losses + margin, log_mass, h)
        kk = np.concatenate((k, k + 1))
        ll = np.concatenate((la, lb))
        ok = ll > NEG_INF
        return kk[ok], ll[ok]


ROUND_UP = RoundUp()
ROUND_DOWN = RoundDown()
SPLIT = Split()
PLACEMENTS = {p.name: p for p in (ROUND_UP, ROUND_DOWN, SPLIT)}


def placement_from(value: "str | Placement") -> Placement:
    """The placement named by ``value`` ("up", "down", "split") or ``value`` itself."""
    if isinstance(value, Placement):
        return value
    if isinstance(value, str) and value in PLACEMENTS:
        return PLACEMENTS[value]
    raise ParameterError(f"rounding must be 'up', 'down' or 'split'; got {value!r}")


# ---------------------------------------------------------------------------------------------
# grid PMFs
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class GridLoss:
    """One direction of a PLD placed on h·Z: grid indices ``k`` (any order, repeats allowed) with log-masses.

    ``placement`` is :data:`ROUND_UP` (omega^R, pessimistic), :data:`ROUND_DOWN` (omega^L, optimistic;
    seed 001 eq 2.5) or :data:`SPLIT` (mass- and Q-mass-preserving split between neighbouring grid
    points; see :func:`discretise`).
    The infinite-loss mass and dropped tail are carried over unchanged from the atoms.
    """

    k: np.ndarray
    log_mass: np.ndarray
    h: float
    placement: Placement
    atoms: LossAtoms
    shift: float = 0.0  #: bound on how far a placed loss was moved up before placement (widening)
    agg_rel: float = 0.0  #: relative rounding of masses merged per grid point (beyond atoms.mass_rel_err)

    @property
    def size(self) -> int:
        return int(self.k.size)

    @property
    def rounding(self) -> str:
        """The placement's name ("up", "down" or "split")."""
        return self.placement.name

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


def split_parts(x: np.ndarray, lm: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell index k (x in [kh, (k+1)h]) and the log-masses of the two halves of the split (see
    :func:`discretise`) for atoms at (already widened) losses x with log-masses lm.

    Shared by :data:`SPLIT` and :func:`base_split`."""
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


def discretise(atoms: LossAtoms, h: float, rounding: "str | Placement") -> GridLoss:
    """Place the finite atoms on h·Z.

    ``rounding`` is a :class:`Placement` or its name.  ``"up"`` / ``"down"``: every loss is rounded
    up / down to the grid (seed 001 eq 2.5, Lemma 6).  ``"split"``: every atom (mass p, loss s in [kh, (k+1)h]) is split between its
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
    placement = placement_from(rounding)
    if not (h > 0 and math.isfinite(h)):
        raise ParameterError(f"grid spacing h must be a positive finite number; got {h!r}")
    L = atoms.losses
    keep = atoms.log_mass > NEG_INF
    L = L[keep]
    lm = atoms.log_mass[keep]
    if L.size == 0:
        return GridLoss(np.zeros(0, dtype=np.int64), np.zeros(0), h, placement, atoms, 0.0)
    margin = atoms.loss_tol + 8 * U * (float(np.max(np.abs(L))) + h)
    if float(np.max(np.abs(L))) / h > 2.0**61:
        raise ParameterError(f"grid spacing h={h!r} is too small for losses of magnitude {np.max(np.abs(L)):.3g}")
    k, lm = placement.place(L, lm, float(h), margin)
    return GridLoss(k, lm, float(h), placement, atoms, 2 * margin)

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
        k, la, lb = split_parts(L[start:start + chunk] + margin, lm[start:start + chunk], h_b)
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
        return GridLoss(base.kb.copy(), lm.copy(), float(h), SPLIT, base.atoms, base.shift)
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
    return GridLoss(ok + k0, out_lm, float(h), SPLIT, base.atoms, base.shift, agg)
