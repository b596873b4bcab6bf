"""Privacy loss distributions of a neighbouring pair, and exact single-use delta(eps) over their atoms.

For a pair (P, Q) of probability mass functions on a common finite support, the privacy loss of an
outcome o is L(o) = log P(o) - log Q(o), distributed under P (Koskela et al., seed 001 §2.1, eq 2.2).
Outcomes with Q(o) = 0 < P(o) carry infinite loss; their total P-mass is delta_{P||Q}(inf)
(seed 001 eq 2.3).  The tight delta of a single use is the hockey-stick divergence

    delta_{P||Q}(eps) = sum_{L_i > eps} p_i (1 - e^{eps - L_i}) + P(L = inf)        (seed 001 eq 2.3, n_c = 1)

and delta(eps) = max(delta_{P||Q}(eps), delta_{Q||P}(eps)) (seed 001 Theorem 5; FORMULAS.md §2).

Everything is computed in log space, so delta values down to ~1e-300 come out with full relative
precision.  The answers are certified intervals: the input log-probabilities are taken as exact, and
the only errors are this module's floating-point operations, bounded as follows.

* Loss values: fl(log p - log q) differs from the exact difference by at most u|L| (u = 2^-53);
  every loss is therefore widened by ``loss_tol = 2u max|L|`` (upper bound: losses moved up; lower
  bound: moved down).  The factor (1 - e^{eps-L}) is increasing in L, so this brackets the truth.
* Summation: each term log p_i + log(-expm1(eps - L_i)) has absolute error <= 4u·(|log p_i| + 2)
  <= 4u·747 (terms below e^-745 underflow), i.e. a relative error <= 3.4e-13 after exponentiation;
  the max-shifted pairwise sum adds at most (log2 N + 4)u.  A relative slack ``REL_SLACK = 1e-12`` covers both
  for N <= 2^60 atoms.
* Dropped atoms: to stay fast for 10^6-atom supports, atoms whose log-mass is more than ``CORE_SPAN``
  below the largest are summarised by their total mass, which is added to the upper bound only; if
  that total is not negligible (>1e-15 of the core sum) the full sum is taken instead.

``pair.tail_p`` / ``pair.tail_q`` (mass dropped by a constructor's truncation) are added to the upper
bound of the corresponding direction only.

Pairs in row form (:class:`~shufflesim.accounting.pairs.BinomialRows`: the k-RR strong and weak
adversaries' pairs and the clones pair, 1e7-1e8 atoms at n = 1e6) have their own single-use engine,
:class:`RowsPLD`: in row r, p - e^eps q = w a (1 + e^eps) B(x) (x - t_r) with a real threshold t_r, so
delta is a sum over rows of partial expectations of Bin(N, 1/2) read from tail tables (one pass over
the atoms to build them, then O(rows) per eps, no sort, no atoms kept).  Its intervals are certified
for the mathematical pair under the stated accuracy model of the binomial log-PMF
(:data:`BINOM_LOG_ERR`), with the same discipline: every rounding covered by an explicit slack, the
truncated tail added to the upper bound only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

import numpy as np

from shufflesim.errors import DataError, ParameterError
from shufflesim.accounting.pmf_pair import PMFPair
from shufflesim.accounting.results import DeltaBound, EpsBound

#: unit round-off of IEEE double precision
U = float(np.finfo(float).eps) / 2.0
#: relative slack covering rounding in a log-space sum of non-negative terms (see module docstring)
REL_SLACK = 1e-12
#: atoms whose log-mass is below (max log-mass - CORE_SPAN) are summarised by their total mass
CORE_SPAN = 150.0
#: smallest positive double; an upper bound that underflows is reported as this value
TINY = float(np.nextafter(0.0, 1.0))

NEG_INF = -math.inf


def log_sum(values: np.ndarray) -> float:
    """log(sum(exp(values))) for a 1-D array, -inf for an empty array or all -inf.

    Shifted by the maximum, so the relative error is that of a pairwise sum of numbers in [0, 1]
    plus one exp/log per term (within REL_SLACK, see the module docstring).
    """
    if values.size == 0:
        return NEG_INF
    m = float(np.max(values))
    if m == NEG_INF or m == math.inf:
        return m
    return m + math.log(float(np.sum(np.exp(values - m))))


def group_log_sum(keys: np.ndarray, log_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Merge equal consecutive ``keys`` (already sorted) by log-sum-exp of their ``log_values``.

    Returns (unique keys, merged log-values, relative error bound of the merged masses).  Each group
    is summed as max + log(sum exp(x - max)): c terms in (0, 1] summed sequentially are within
    (c + 2)u relative, plus exp/log rounding; the bound returned, 2(c + 4)u, uses the largest group."""
    n = keys.size
    if n < 2:
        return keys, log_values, 0.0
    same = np.empty(n, dtype=bool)  # same[i]: keys[i] equals keys[i - 1]
    same[0] = False
    np.equal(keys[1:], keys[:-1], out=same[1:])
    n_dup = int(np.count_nonzero(same))
    if n_dup == 0:
        return keys, log_values, 0.0
    if n_dup * 8 < n:
        # few duplicates: merge only the runs that have them, then drop the merged-away entries
        d = np.flatnonzero(same)
        run_start = np.flatnonzero(~same[d - 1])  # indices into d where a run of duplicates begins
        heads = d[run_start] - 1  # first element of each group with duplicates
        sizes = np.diff(np.append(run_start, d.size)) + 1
        sub_idx = np.repeat(heads, sizes) + (np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes))
        _, merged, err = group_log_sum(keys[sub_idx], log_values[sub_idx])
        keep = ~same
        out_vals = log_values[keep]
        out_vals[heads - np.searchsorted(d, heads)] = merged  # heads shift left by the drops before them
        return keys[keep], out_vals, err
    new_group = ~same
    starts = np.flatnonzero(new_group)
    counts = np.empty(starts.size, dtype=np.int64)
    counts[:-1] = np.diff(starts)
    counts[-1] = n - starts[-1]
    out = log_values[starts]
    multi = counts > 1
    if 2 * int(np.count_nonzero(multi)) < starts.size:
        # mostly singletons: work on the elements of the multi-element groups only
        sel = np.repeat(multi, counts)
        vals = log_values[sel]
        c = counts[multi]
        st = np.zeros(c.size, dtype=np.int64)
        np.cumsum(c[:-1], out=st[1:])
    else:
        vals, c, st = log_values, counts, starts
    gmax = np.maximum.reduceat(vals, st)
    safe = np.where(gmax > NEG_INF, gmax, 0.0)
    sums = np.add.reduceat(np.exp(vals - np.repeat(safe, c)), st)
    with np.errstate(divide="ignore"):
        merged = safe + np.log(sums)
    merged[gmax == NEG_INF] = NEG_INF
    if vals is log_values:
        out = merged
    else:
        out[multi] = merged
    return keys[starts], out, 2.0 * (int(counts.max()) + 4) * U


def log_diff_exp(a: float, b: float) -> float:
    """log(e^a - e^b) for a >= b (``-inf`` when equal)."""
    if b == NEG_INF:
        return a
    if b >= a:
        return NEG_INF
    return a + math.log(-math.expm1(b - a))


def exp_up(log_value: float) -> float:
    """exp for an *upper* bound: one ulp above the rounded value (>= the exact value, also for
    subnormal results, where relative slack would not help); +inf on overflow, 0 only for -inf."""
    if log_value == NEG_INF:
        return 0.0
    if log_value >= 709.7:
        return math.inf
    return math.nextafter(math.exp(log_value), math.inf)


def exp_down(log_value: float) -> float:
    """exp for a *lower* bound: one ulp below the rounded value (<= the exact value)."""
    if log_value == NEG_INF:
        return 0.0
    return math.nextafter(math.exp(min(log_value, 709.7)), 0.0)


def sum_up(*terms: float) -> float:
    """A float >= the exact sum of the terms (correctly rounded sum, then one ulp up)."""
    s = math.fsum(terms)
    return math.nextafter(s, math.inf) if any(terms) else 0.0


def sum_down(*terms: float) -> float:
    """A float <= the exact sum of non-negative terms (clipped at 0)."""
    s = math.fsum(terms)
    return max(math.nextafter(s, 0.0), 0.0) if s > 0 else 0.0


def _exp(log_value: float) -> float:
    return 0.0 if log_value == NEG_INF else math.exp(min(log_value, 700.0))


@dataclass(frozen=True, eq=False)
class LossAtoms:
    """One direction X||Y of a privacy loss distribution (seed 001 eqs 2.2-2.3).

    ``losses`` are the finite privacy losses log X(o) - log Y(o), sorted ascending; ``log_mass`` the
    log X-mass of each atom (atoms may be merged when losses are equal); ``log_inf_mass`` the log of
    X(Y = 0), the infinite-loss mass; ``tail`` the X-mass a constructor dropped (added to upper bounds
    only); ``loss_tol`` an absolute bound on the floating-point error of every loss value;
    ``mass_rel_err`` a relative bound on the rounding of the atom masses from merging (beyond REL_SLACK).
    The finite masses may sum to less than one (a sub-probability), e.g. after truncation.
    """

    losses: np.ndarray
    log_mass: np.ndarray
    log_inf_mass: float = NEG_INF
    tail: float = 0.0
    loss_tol: float = 0.0
    mass_rel_err: float = 0.0

    def __post_init__(self) -> None:
        losses = np.ascontiguousarray(self.losses, dtype=float)
        log_mass = np.ascontiguousarray(self.log_mass, dtype=float)
        if losses.ndim != 1 or losses.shape != log_mass.shape:
            raise DataError("losses and log_mass must be 1-D arrays of equal length")
        if losses.size and (not np.isfinite(losses[0]) or not np.isfinite(losses[-1])
                            or bool(np.any(losses[1:] < losses[:-1]))):
            raise DataError("losses must be finite and sorted ascending")
        if np.any(np.isnan(log_mass)) or np.any(log_mass == math.inf):
            raise DataError("log_mass must not contain nan or +inf")
        object.__setattr__(self, "losses", losses)
        object.__setattr__(self, "log_mass", log_mass)
        object.__setattr__(self, "log_inf_mass", float(self.log_inf_mass))
        object.__setattr__(self, "tail", float(self.tail))
        object.__setattr__(self, "loss_tol", float(self.loss_tol))
        object.__setattr__(self, "mass_rel_err", float(self.mass_rel_err))

    # ------------------------------------------------------------------ summaries
    @property
    def size(self) -> int:
        return int(self.losses.size)

    @cached_property
    def log_finite_mass(self) -> float:
        return log_sum(self.log_mass)

    @cached_property
    def log_kept_mass(self) -> float:
        """log of the finite plus infinite mass (everything not dropped)."""
        return float(np.logaddexp(self.log_finite_mass, self.log_inf_mass))

    @property
    def inf_mass(self) -> float:
        return _exp(self.log_inf_mass)

    @property
    def max_loss(self) -> float:
        return float(self.losses[-1]) if self.size else NEG_INF

    @property
    def min_loss(self) -> float:
        return float(self.losses[0]) if self.size else math.inf

    @cached_property
    def _shifted(self) -> tuple[np.ndarray, np.ndarray]:
        """Losses widened up / down by ``loss_tol`` (both still sorted)."""
        if self.loss_tol == 0:
            return self.losses, self.losses
        return self.losses + self.loss_tol, self.losses - self.loss_tol

    def _core_level(self, level: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Atoms within CORE_SPAN * 5**level of the largest log-mass, and suffix log-sums of the rest.

        ``rest_suffix[j]`` bounds log sum_{i >= j, i not in core} mass_i (doubled to cover the rounding
        of the accumulation).  Returns None when the level already contains every atom.
        """
        cache = self.__dict__.setdefault("_core_cache", {})
        if level in cache:
            return cache[level]
        n = self.size
        top = float(np.max(self.log_mass)) if n else 0.0
        core_mask = self.log_mass >= top - CORE_SPAN * 5.0**level
        if n == 0 or bool(np.all(core_mask)):
            cache[level] = None
            return None
        core_idx = np.flatnonzero(core_mask)
        rest = np.where(core_mask, NEG_INF, self.log_mass)
        suffix = np.empty(n + 1)
        suffix[n] = NEG_INF
        suffix[:n] = np.logaddexp.accumulate(rest[::-1])[::-1] + math.log(2.0)
        cache[level] = (core_idx, suffix)
        return cache[level]

    # ------------------------------------------------------------------ hockey-stick divergence
    def _log_terms(self, idx: np.ndarray | slice, eps: float, x_all: np.ndarray) -> float:
        x = x_all[idx]
        lm = self.log_mass[idx]
        keep = x > eps
        if not np.any(keep):
            return NEG_INF
        return log_sum(lm[keep] + np.log(-np.expm1(eps - x[keep])))

    def log_delta_finite(self, eps: float) -> tuple[float, float]:
        """(log lower, log upper) bounds on sum_{L > eps} m (1 - e^{eps - L}) over the finite atoms.

        Rounding is accounted for as described in the module docstring (loss widening, REL_SLACK).
        Atoms far below the largest mass are first summarised by their total (added to the upper
        bound); the summary is refined level by level until it is negligible (< 1e-15 of the sum).
        """
        if self.size == 0:
            return NEG_INF, NEG_INF
        x_up, x_lo = self._shifted
        j_up = int(np.searchsorted(x_up, eps, side="right"))
        j_lo = int(np.searchsorted(x_lo, eps, side="right"))
        core_up = core_lo = NEG_INF
        rest = NEG_INF
        level = 0
        while True:
            lev = self._core_level(level)
            if lev is None:
                core_up = self._log_terms(slice(j_up, None), eps, x_up)
                core_lo = self._log_terms(slice(j_lo, None), eps, x_lo)
                rest = NEG_INF
                break
            core_idx, rest_suffix = lev
            rest = float(rest_suffix[j_up])
            c_lo = core_idx[np.searchsorted(core_idx, j_lo):]
            core_lo = self._log_terms(c_lo, eps, x_lo)
            if rest == NEG_INF or (core_lo > NEG_INF and rest < core_lo + math.log(1e-15)):
                c_up = core_idx[np.searchsorted(core_idx, j_up):]
                core_up = self._log_terms(c_up, eps, x_up)
                break
            level += 1
        log_rel_up = math.log1p(REL_SLACK + self.mass_rel_err)
        log_rel_lo = math.log1p(-REL_SLACK - self.mass_rel_err)
        up = float(np.logaddexp(core_up + log_rel_up, rest)) if core_up > NEG_INF else rest
        lo = core_lo + log_rel_lo if core_lo > NEG_INF else NEG_INF
        return lo, up

    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta_{X||Y}(eps) for an array of eps (single use)."""
        eps_arr = np.atleast_1d(np.asarray(eps, dtype=float))
        lo = np.empty(eps_arr.shape)
        up = np.empty(eps_arr.shape)
        inf_lo = exp_down(self.log_inf_mass + math.log1p(-REL_SLACK))
        inf_up = exp_up(self.log_inf_mass + math.log1p(REL_SLACK))
        for i, e in enumerate(eps_arr):
            llo, lup = self.log_delta_finite(float(e))
            lo[i] = min(1.0, sum_down(inf_lo, exp_down(llo)))
            up[i] = min(1.0, sum_up(inf_up, exp_up(lup), self.tail))
        return lo, up

    # ------------------------------------------------------------------ pruning
    @cached_property
    def _mass_histogram(self) -> tuple[float, np.ndarray]:
        """(b0, cum): atoms binned by floor(log mass) from b0 up; cum[j] bounds the log of the total
        mass of bins 0..j (running log-sum of per-bin sums, plus log 2 for rounding)."""
        lm = self.log_mass
        fin = lm > NEG_INF
        if not np.any(fin):
            return math.inf, np.zeros(0)
        bins = np.floor(lm[fin])
        b0 = float(bins.min())
        # per-bin sums: every term exp(lm - bin) lies in [1, e), so no under- or overflow
        sums = np.bincount((bins - b0).astype(np.int64), weights=np.exp(lm[fin] - bins))
        with np.errstate(divide="ignore"):
            log_bins = np.log(sums) + b0 + np.arange(sums.size)
        return b0, np.logaddexp.accumulate(log_bins) + math.log(2.0)

    def prune_mask(self, log_budget: float) -> tuple[np.ndarray | None, float]:
        """(mask of the atoms kept, upper bound on the mass dropped) for :meth:`prune`; mask None if
        nothing can be dropped."""
        if self.size == 0 or not math.isfinite(log_budget):
            return None, 0.0
        b0, cum = self._mass_histogram
        if b0 > log_budget:
            return None, 0.0
        j = int(np.searchsorted(cum, log_budget, side="right"))  # bins 0..j-1 can go
        if j == 0:
            return None, 0.0
        j = min(j, cum.size - 1)  # keep at least the heaviest bin
        return self.log_mass >= b0 + j, exp_up(float(cum[j - 1]))

    def prune(self, log_budget: float) -> "LossAtoms":
        """Drop the lightest atoms, of total mass at most e^{log_budget}, adding that mass to ``tail``.

        The dropped mass then counts in full in upper bounds and not at all in lower bounds, so both
        stay valid (see :class:`~shufflesim.accounting.pmf_pair.PMFPair`).  O(N): atoms are binned by
        floor(log mass); whole bins are dropped from the lightest up while their running total (from
        the per-bin sums, doubled to cover rounding) stays within the budget.  Returns ``self`` if
        nothing can be dropped.
        """
        keep, dropped = self.prune_mask(log_budget)
        if keep is None:
            return self
        return LossAtoms(self.losses[keep], self.log_mass[keep], self.log_inf_mass,
                         min(1.0, sum_up(self.tail, dropped)), self.loss_tol, self.mass_rel_err)

    # ------------------------------------------------------------------ moments
    def log_mgf(self, t: float) -> float:
        """log sum_i m_i e^{t L_i} over the finite atoms (exact evaluation)."""
        if self.size == 0:
            return NEG_INF
        return log_sum(self.log_mass + t * self.losses)

    @cached_property
    def sketch(self):
        from shufflesim.accounting.tails import MGFSketch

        return MGFSketch.from_values(self.losses, self.log_mass, tol=self.loss_tol)


def compose_log_extra(log_finite: Sequence[float], log_other: Sequence[float]) -> float:
    """log( prod_i (f_i + m_i) - prod_i f_i ): mass of product outcomes with >= 1 'other' component.

    Used for the infinite-loss mass of a composition (seed 001 Theorem 5 gives 1 - (1 - m)^{n_c} when
    f + m = 1) and for dropped tails.  Computed as prod f · expm1(sum log1p(m/f)) to avoid
    cancellation when the m_i are tiny.
    """
    lf = np.asarray(log_finite, dtype=float)
    lm = np.asarray(log_other, dtype=float)
    if lm.size == 0 or np.all(lm == NEG_INF):
        return NEG_INF
    if np.any(lf == NEG_INF):
        # some factor has no finite mass: prod f = 0, the answer is prod (f + m)
        return float(np.sum(np.logaddexp(lf, lm)))
    ratio = np.exp(np.minimum(lm - lf, 700.0))
    s = float(np.sum(np.log1p(ratio)))
    if s > 700:
        return float(np.sum(np.logaddexp(lf, lm)))
    val = math.expm1(s)
    if val <= 0:
        return NEG_INF
    return float(np.sum(lf)) + math.log(val)


def _atoms_one_direction(losses: np.ndarray, log_mass: np.ndarray, log_inf: float, tail: float,
                         merge: bool) -> LossAtoms:
    """Atoms already sorted by loss; optionally merge equal losses."""
    err = 0.0
    if merge:
        losses, log_mass, err = group_log_sum(losses, log_mass)
    tol = 2.0 * U * float(np.max(np.abs(losses))) if losses.size else 0.0
    return LossAtoms(losses, log_mass, log_inf, tail, tol, err)


def _check_pair(pair: PMFPair) -> None:
    for name, arr in (("log_p", pair.log_p), ("log_q", pair.log_q)):
        if np.any(np.isnan(arr)) or np.any(arr == math.inf):
            raise DataError(f"pair {pair.name!r}: {name} contains nan or +inf; log-probabilities must be <= 0 or -inf")
        if arr.size and float(np.max(arr)) > 1e-9:
            raise DataError(f"pair {pair.name!r}: {name} has a value > 0; log-probabilities must be <= 0")
        total = math.exp(log_sum(arr)) if arr.size else 0.0
        if total > 1.0 + 1e-9:
            raise DataError(f"pair {pair.name!r}: {name} sums to {total!r} > 1; a PMF must sum to at most 1")
    for name, t in (("tail_p", pair.tail_p), ("tail_q", pair.tail_q)):
        if not (0.0 <= float(t) <= 1.0):
            raise DataError(f"pair {pair.name!r}: {name}={t!r} must be a dropped mass in [0, 1]")


@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution:
    """Both directions of the PLD of a neighbouring pair (P, Q) (seed 001 §2.1, eqs 2.2-2.3).

    ``pq`` is omega_{P/Q} (losses log P/Q under P), ``qp`` is omega_{Q/P}.  Build with
    :meth:`from_pair`.  Single-use bounds are exact over the atoms (no grid): see the module docstring.
    """

    pq: LossAtoms
    qp: LossAtoms
    name: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = ""

    @classmethod
    def from_pair(cls, pair: PMFPair, *, merge: bool = True) -> "PrivacyLossDistribution":
        """PLD of ``pair`` in both directions; ``merge`` merges atoms whose float losses are equal."""
        if not isinstance(pair, PMFPair):
            raise ParameterError(f"pair must be a PMFPair; got {type(pair).__name__}")
        _check_pair(pair)
        lp, lq = pair.log_p, pair.log_q
        fin_p, fin_q = np.isfinite(lp), np.isfinite(lq)
        both = fin_p & fin_q
        lp_b, lq_b = lp[both], lq[both]
        losses = lp_b - lq_b
        # one sort serves both directions: the losses of Q||P are exactly the negated ones
        order = np.argsort(losses, kind="stable")
        losses = losses[order]
        pq = _atoms_one_direction(losses, lp_b[order], log_sum(lp[fin_p & ~fin_q]), float(pair.tail_p), merge)
        rev = order[::-1]
        qp = _atoms_one_direction(-losses[::-1], lq_b[rev], log_sum(lq[fin_q & ~fin_p]), float(pair.tail_q), merge)
        return cls(pq, qp, pair.name, dict(pair.params), pair.reference)

    @property
    def directions(self) -> tuple[LossAtoms, LossAtoms]:
        return (self.pq, self.qp)

    @cached_property
    def symmetric(self) -> bool:
        """True when both directions have identical atoms (then one suffices)."""
        a, b = self.pq, self.qp
        return (
            a.size == b.size
            and a.log_inf_mass == b.log_inf_mass
            and a.tail == b.tail
            and bool(np.array_equal(a.losses, b.losses))
            and bool(np.array_equal(a.log_mass, b.log_mass))
        )

    @property
    def size(self) -> int:
        return max(self.pq.size, self.qp.size)

    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta(eps) = max of the two directions (single use)."""
        lo1, up1 = self.pq.delta_interval(eps)
        if self.symmetric:
            return lo1, up1
        lo2, up2 = self.qp.delta_interval(eps)
        return np.maximum(lo1, lo2), np.maximum(up1, up2)

    def max_finite_loss(self) -> float:
        return max(self.pq.max_loss + self.pq.loss_tol, self.qp.max_loss + self.qp.loss_tol)

    def delta(self, eps) -> list[DeltaBound]:
        """Exact single-use delta(eps), as certified intervals, for a scalar or list of eps >= 0."""
        eps_arr = _check_eps(eps)
        lo, up = self.delta_interval(eps_arr)
        note = f"exact over {self.pq.size}+{self.qp.size} atoms (single use)"
        return [DeltaBound(float(e), float(u), float(l), "tight", (note,)) for e, l, u in zip(eps_arr, lo, up)]

    def epsilon(self, delta, *, eps_tol: float = 1e-9) -> list[EpsBound]:
        """Smallest eps with delta(eps) <= delta, as a certified interval (eps_lower, eps_upper]."""
        from shufflesim.accounting.calibrate import eps_interval_for_delta

        deltas = _check_delta(delta)
        eps_max = max(0.0, self.max_finite_loss()) * (1 + 4 * U) + 1e-300
        note = f"exact over {self.pq.size}+{self.qp.size} atoms (single use)"
        out = []
        for d in deltas:
            lo_e, up_e = eps_interval_for_delta(
                lambda e: float(self.delta_interval(e)[1][0]),
                lambda e: float(self.delta_interval(e)[0][0]),
                float(d),
                eps_max,
                xtol=eps_tol,
            )
            out.append(EpsBound(float(d), up_e, lo_e, "tight", (note,)))
        return out


def _check_eps(eps) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(eps, dtype=float))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError("eps must be a number or a non-empty list of numbers")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ParameterError(f"eps must be finite and >= 0; got {arr.tolist()!r}")
    return arr


def _check_delta(delta) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(delta, dtype=float))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError("delta must be a number or a non-empty list of numbers")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr >= 1):
        raise ParameterError(f"delta must be in [0, 1); got {arr.tolist()!r}")
    return arr


check_eps = _check_eps
check_delta = _check_delta


# ---------------------------------------------------------------------------------------------
# pairs in row form (BinomialRows): exact single use in O(rows) per eps
# ---------------------------------------------------------------------------------------------

#: accuracy model of the binomial log-PMF values (``log_binom_pmf`` and its row recurrence
#: ``binom_rows``; checked against mpmath in tests/test_pairs.py): the absolute error of log B is
#: at most BINOM_LOG_ERR * max(1, |log B| / 100).  The row engine certifies its intervals for the
#: mathematical pair under this model (the atom engine takes its input log-PMFs as exact instead).
BINOM_LOG_ERR = 2e-12
#: smallest positive subnormal double (absolute rounding error of an underflowing exp)
_SUBNORMAL = 5e-324


def _bucket_rows(rows, keep: np.ndarray):
    """Rows grouped by N: (group of each kept row, distinct N, union windows LO/HI per group)."""
    N = rows.N[keep]
    uniq, grp = np.unique(N, return_inverse=True)
    LO = np.full(uniq.size, np.iinfo(np.int64).max, dtype=np.int64)
    HI = np.full(uniq.size, -1, dtype=np.int64)
    np.minimum.at(LO, grp, rows.lo[keep].astype(np.int64))
    np.maximum.at(HI, grp, rows.hi[keep].astype(np.int64))
    return grp, uniq.astype(np.int64), LO, HI


@dataclass(frozen=True, eq=False)
class RowTables:
    """Tail tables of Bin(N, 1/2) on a window [LO, HI] for each distinct N of a pair in row form.

    For group g (one value N_g) with scale m_g = max log B(x) over the window and e(x) = B(x) e^{-m_g}:

        T_g(j) = sum_{x=j}^{HI} e(x),        U_g(j) = sum_{i=j}^{HI} T_g(i) = sum_{x >= j} (x - j + 1) e(x),

    stored flat (``off[g]`` is the position of j = LO_g).  Both are reverse cumulative sums of
    non-negative terms (sequential), so each entry has relative error <= ``rel`` (exp of the
    rounded argument, (W + 1)u per accumulation, the binomial model BINOM_LOG_ERR) plus an absolute
    ``W^2 2^-1074`` in units of e^{m_g} where some e(x) underflowed (``abs_slack``).
    """

    N: np.ndarray
    LO: np.ndarray
    HI: np.ndarray
    off: np.ndarray
    m: np.ndarray
    T: np.ndarray
    U: np.ndarray
    rel: float
    abs_slack: np.ndarray

    @classmethod
    def build(cls, N: np.ndarray, LO: np.ndarray, HI: np.ndarray) -> "RowTables":
        from shufflesim.accounting.pairs import CHUNK_CELLS, _chunks, binom_rows, log_int_table

        W = (HI - LO + 1).astype(np.int64)
        off = np.cumsum(W) - W
        total = int(W.sum())
        t_flat = np.empty(total)
        u_flat = np.empty(total)
        m = np.full(N.size, NEG_INF)
        abs_slack = np.zeros(N.size)
        L = log_int_table(int(N.max()) + 2) if N.size else None
        max_span = 0.0
        max_abs_g = 0.0
        for g in _chunks(W, CHUNK_CELLS):
            G, mask = binom_rows(N[g], 0.5, LO[g], HI[g], log_int=L)
            G[~mask] = NEG_INF
            top = np.max(G, axis=1)
            top = np.where(top > NEG_INF, top, 0.0)
            G -= top[:, None]
            dmin = np.min(np.where(mask & (G > NEG_INF), G, 0.0), axis=1)
            max_span = max(max_span, float(-dmin.min()))
            max_abs_g = max(max_abs_g, float(np.max(-(top + dmin))))
            np.exp(G, out=G)
            # reverse cumulative sums along each row, computed on the block with both axes reversed;
            # selecting the kept cells then gives rows last..first with columns hi..lo, and one flat
            # flip restores rows first..last with columns lo..hi (the layout of ``off``)
            t_rev = np.cumsum(G[::-1, ::-1], axis=1)
            u_rev = np.cumsum(t_rev, axis=1)
            sel = mask[::-1, ::-1]
            a = int(off[g[0]])
            b = a + int(W[g].sum())
            t_flat[a:b] = t_rev[sel][::-1]
            u_flat[a:b] = u_rev[sel][::-1]
            m[g] = top
            w = W[g].astype(float)
            abs_slack[g] = np.where(dmin < -708.0, (w * w + w + 2.0) * _SUBNORMAL * 2.0, 0.0)
        wmax = float(W.max()) if W.size else 0.0
        rel_exp = U * (min(max_span, 746.0) + 4.0)
        rel_acc = 2.0 * (wmax + 2.0) * U
        rel_bin = 1.01 * BINOM_LOG_ERR * max(1.0, max_abs_g / 100.0)
        # relative errors compose multiplicatively; 1.01 covers the second-order terms
        return cls(N, LO, HI, off, m, t_flat, u_flat, 1.01 * (rel_exp + rel_acc + rel_bin), abs_slack)

    @property
    def size(self) -> int:
        return int(self.T.size)


@dataclass(frozen=True, eq=False)
class RowsDirection:
    """The P||Q direction of a pair in row form (:class:`~shufflesim.accounting.pairs.BinomialRows`).

    Row r has weight w_r = exp(log_w[r]) and columns x ~ Bin(N_r, 1/2) with
    P(r, x) = w_r B(x) (a x + b), Q(r, x) = w_r B(x) (a (N - x) + b) (a = alpha_r, b = beta_r >= 0).
    Then p - e^eps q = w_r a (1 + e^eps) B(x) (x - t_r) with the real threshold

        t_r = N sigma + (b/a) tanh(eps/2),   sigma = e^eps / (1 + e^eps),

    so the row's share of the hockey-stick divergence (seed 001 eq 2.3; outcomes with Q = 0, x = N
    when b = 0, included: their term is exactly their P-mass) is

        delta_r(eps) = w_r a (1 + e^eps) sum_x B(x) (x - t_r)_+ ,

    a sum of non-negative terms read from the tail tables T, U of :class:`RowTables` in O(1) per row
    (with j the first column above t_r and d = j - t_r, the inner sum is e^m [d T(j) + U(j + 1)])
    (no cancellation).  Each row is evaluated over the union window of the rows with the same N (a
    superset of its kept columns; every column has its exact mass, so the result is still a lower
    bound and the constructor's ``tail`` still bounds what is missing).

    Certification: the computed t_r has relative error <= 8u; the sum is non-increasing in t, so it
    is evaluated at t_r (1 +- 12u) (or, for t_r > N/2, at N - s_r with s_r = N - t_r computed
    directly as N/(1 + e^eps) - (b/a) tanh(eps/2), whichever bound is tighter) for the lower and the
    upper bound; table errors (:class:`RowTables`), the evaluation and the log-space sum over rows
    are covered by explicit relative slacks.  The extra atoms (row -1) go through :class:`LossAtoms`.
    """

    rows: Any

    @cached_property
    def _kept(self) -> np.ndarray:
        r = self.rows
        return (r.lo <= r.hi) & (r.alpha > 0) & (r.log_w > NEG_INF)

    @cached_property
    def tables(self) -> RowTables:
        keep = self._kept
        grp, N, LO, HI = _bucket_rows(self.rows, keep)
        # for eps >= 0 every threshold is >= N/2 (t = N sigma + (b/a) tanh(eps/2), sigma >= 1/2), so
        # the first column ever read is >= floor(N/2 - 12uN) + 1 >= N//2 - 1: tabulate from there
        LO = np.minimum(np.maximum(LO, N // 2 - 1), HI)
        tab = RowTables.build(N, LO, HI)
        object.__setattr__(self, "_grp", grp)
        return tab

    @cached_property
    def extra(self) -> LossAtoms | None:
        r = self.rows
        if r.extra_log_p.size == 0:
            return None
        pair = PMFPair(np.asarray(r.extra_log_p, dtype=float), np.asarray(r.extra_log_q, dtype=float), "extra")
        return PrivacyLossDistribution.from_pair(pair).pq

    @property
    def n_atoms(self) -> int:
        return int(self.rows.n_atoms)

    @property
    def n_rows(self) -> int:
        return int(np.count_nonzero(self._kept))

    @cached_property
    def _consts(self) -> dict:
        """Per-row constants of :meth:`log_delta_rows` (kept rows only)."""
        tab = self.tables
        grp = self._grp
        r = self.rows
        keep = self._kept
        a = r.alpha[keep].astype(float)
        with np.errstate(over="ignore"):
            c = np.minimum(r.beta[keep] / a, 1e300)  # b/a beyond 1e300: the threshold is far above every column
        N = r.N[keep]
        return {"N": N.astype(float), "c": c, "half": (N // 2 - 1).astype(float),
                "LO": tab.LO[grp].astype(float), "HI": tab.HI[grp].astype(float),
                "base": (tab.off[grp] - tab.LO[grp]).astype(np.int64),
                "pre": r.log_w[keep] + np.log(a) + tab.m[grp], "slack": tab.abs_slack[grp]}

    def log_delta_rows(self, eps: float) -> tuple[float, float]:
        """(log lower, log upper) of the rows' part of delta_{P||Q}(eps) (no extra atoms, no tail)."""
        tab = self.tables
        if not np.any(self._kept):
            return NEG_INF, NEG_INF
        k = self._consts
        em = math.exp(-eps)
        den = 1.0 + em
        sig = 1.0 / den
        tau = em / den
        th = -math.expm1(-eps) / den
        with np.errstate(over="ignore", invalid="ignore"):
            ct = k["c"] * th
            t = k["N"] * sig + ct
            s_pos = k["N"] * tau
            s = s_pos - ct
            e_t = 12.0 * U * t
            e_s = 12.0 * U * (s_pos + ct)
        # rows whose lowest possible threshold is above their last column contribute exactly 0
        act = np.flatnonzero(np.minimum(t - e_t, k["N"] - (s + e_s)) < k["HI"] + 1.0)
        if act.size == 0:
            return NEG_INF, NEG_INF
        t, s, e_t, e_s = t[act], s[act], e_t[act], e_s[act]
        N, HI, LO, half = k["N"][act], k["HI"][act], k["LO"][act], k["half"][act]
        base = k["base"][act]
        use_s = e_s < e_t

        vals = []
        for sign in (+1.0, -1.0):  # threshold moved up (lower bound on delta), then down (upper bound)
            # t >= 0 always; thresholds above HI + 1 contribute nothing, so only large values are clipped
            tt = np.minimum(t + sign * e_t, HI + 2.0)
            jt = np.floor(tt) + 1.0
            ss = np.maximum(s - sign * e_s, N - HI - 2.0)  # threshold N - ss
            cs = np.ceil(ss)
            j = np.where(use_s, N - cs + 1.0, jt)
            d = np.where(use_s, ss + (1.0 - cs), jt - tt)  # ss + (1 - cs) is exact (Sterbenz), also for tiny ss
            if not (np.all(np.isfinite(j)) and np.all(np.isfinite(d))):
                raise AssertionError("row thresholds must be finite")  # c <= 1e300 and eps finite
            if np.any((j < half) & (j <= HI)):
                raise AssertionError("row threshold below N/2 - 1 (the tables start there)")
            # sum_x e(x) (x - thr)_+ = d T(j) + U(j + 1) over the window, j the first column above thr
            # (d = j - thr); a j below the window moves to LO (d grows by the shift), beyond HI gives 0
            below = j < LO
            d = np.where(below, d + (LO - j), d)
            j = np.where(below, LO, j)
            inside = j <= HI
            idx = base + np.where(inside, j, LO).astype(np.int64)
            t_j = np.where(inside, tab.T[idx], 0.0)
            nxt = inside & (j + 1.0 <= HI)
            u_next = np.where(nxt, tab.U[np.where(nxt, idx + 1, idx)], 0.0)
            vals.append(d * t_j + u_next)
        v_lo, v_up = vals
        v_lo *= 1.0 - tab.rel - 4 * U
        v_up *= 1.0 + tab.rel + 4 * U
        v_up += k["slack"][act]
        with np.errstate(divide="ignore"):
            pre = k["pre"][act] + (eps + math.log1p(em))
            t_lo = pre + np.log(v_lo)
            t_up = pre + np.log(v_up)
        fin = t_up[np.isfinite(t_up)]
        if fin.size == 0:
            return NEG_INF, NEG_INF
        # log-space sum: per-term rounding of the log and exp, pairwise summation (see module docstring)
        err = 8.0 * U * (float(np.max(np.abs(fin))) + math.log(fin.size) + 2.0) + (math.log2(fin.size) + 4.0) * U
        lo = log_sum(t_lo[np.isfinite(t_lo)])
        up = log_sum(fin)
        return (lo + math.log1p(-min(err * 1.01, 0.5)) if lo > NEG_INF else NEG_INF), up + 1.01 * err

    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta_{P||Q}(eps) for an array of eps >= 0 (single use)."""
        eps_arr = np.atleast_1d(np.asarray(eps, dtype=float))
        lo = np.empty(eps_arr.shape)
        up = np.empty(eps_arr.shape)
        tail = float(self.rows.tail)
        cache = self.__dict__.setdefault("_cache", {})  # root finding asks for both bounds at each eps
        for i, e in enumerate(eps_arr):
            e = float(e)
            if e not in cache:
                if len(cache) > 64:
                    cache.clear()
                llo, lup = self.log_delta_rows(e)
                x_lo, x_up = (self.extra.delta_interval(e) if self.extra is not None else (np.zeros(1), np.zeros(1)))
                cache[e] = (min(1.0, sum_down(exp_down(llo), float(x_lo[0]))),
                            min(1.0, sum_up(exp_up(lup), float(x_up[0]), tail)))
            lo[i], up[i] = cache[e]
        return lo, up

    def max_finite_loss(self) -> float:
        """An upper bound on the largest finite privacy loss among the columns evaluated."""
        best = NEG_INF
        keep = self._kept
        if np.any(keep):
            tab = self.tables
            r = self.rows
            N = r.N[keep].astype(float)
            a, b = r.alpha[keep], r.beta[keep]
            x = tab.HI[self._grp].astype(float)
            x = np.where((b == 0) & (x >= N), x - 1.0, x)
            ok = x >= tab.LO[self._grp]
            if np.any(ok):
                with np.errstate(divide="ignore"):
                    loss = np.log(a * x + b) - np.log(a * (N - x) + b)
                loss = loss[ok & np.isfinite(loss)]
                if loss.size:
                    best = float(np.max(loss))
        if np.any((self.rows.lo <= self.rows.hi) & (self.rows.alpha == 0)):
            best = max(best, 0.0)
        if self.extra is not None and self.extra.size:
            best = max(best, self.extra.max_loss + self.extra.loss_tol)
        return best + 16 * U * abs(best) + 1e-300 if best > NEG_INF else NEG_INF


@dataclass(frozen=True, eq=False)
class RowsPLD:
    """Both directions of the PLD of a pair in row form; the single-use counterpart of
    :class:`PrivacyLossDistribution` for :class:`~shufflesim.accounting.pairs.BinomialRows`.

    ``pq`` is the P||Q direction, ``qp`` the Q||P direction (the P||Q direction of the mirrored rows).
    Single-use delta(eps) costs O(rows) per eps after one O(atoms) pass building tail tables (one
    per distinct N); nothing of size O(atoms) is kept except the tables.  For composition the tight
    accountant streams the atoms onto its grid (:func:`~shufflesim.accounting.fft.rows_base_split`).
    """

    rows: Any
    name: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = ""

    @classmethod
    def from_rows(cls, rows) -> "RowsPLD":
        """Validate ``rows`` (a BinomialRows) and wrap it."""
        from shufflesim.accounting.pairs import BinomialRows

        if not isinstance(rows, BinomialRows):
            raise ParameterError(f"rows must be a BinomialRows; got {type(rows).__name__}")
        n = rows.N.size
        for nm in ("log_w", "N", "alpha", "beta", "lo", "hi"):
            arr = getattr(rows, nm)
            if np.ndim(arr) != 1 or np.size(arr) != n:
                raise DataError(f"rows {rows.name!r}: {nm} must be a 1-D array with one entry per row ({n})")
        if np.any(np.isnan(rows.log_w)) or np.any(rows.log_w == math.inf):
            raise DataError(f"rows {rows.name!r}: log_w must be finite log-weights (or -inf)")
        if not (np.all(np.isfinite(rows.alpha)) and np.all(np.isfinite(rows.beta))
                and np.all(rows.alpha >= 0) and np.all(rows.beta >= 0)):
            raise DataError(f"rows {rows.name!r}: alpha and beta must be finite and >= 0")
        keep = rows.lo <= rows.hi
        if np.any(rows.N < 0) or np.any((rows.lo < 0) & keep) or np.any((rows.hi > rows.N) & keep):
            raise DataError(f"rows {rows.name!r}: every kept window [lo, hi] must lie in [0, N] with N >= 0")
        if not (0.0 <= float(rows.tail) <= 1.0):
            raise DataError(f"rows {rows.name!r}: tail={rows.tail!r} must be a dropped mass in [0, 1]")
        if rows.extra_log_p.shape != rows.extra_log_q.shape:
            raise DataError(f"rows {rows.name!r}: extra_log_p and extra_log_q must have the same shape")
        return cls(rows, rows.name, dict(rows.params), rows.reference)

    @cached_property
    def pq(self) -> RowsDirection:
        return RowsDirection(self.rows)

    @cached_property
    def qp(self) -> RowsDirection:
        return self.pq if self.symmetric else RowsDirection(self.rows.mirrored())

    @property
    def directions(self) -> tuple[RowsDirection, RowsDirection]:
        return (self.pq, self.qp)

    @cached_property
    def symmetric(self) -> bool:
        return bool(self.rows.symmetric)

    @property
    def size(self) -> int:
        return int(self.rows.n_atoms)

    @property
    def tail(self) -> float:
        return float(self.rows.tail)

    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta(eps) = max of the two directions (single use)."""
        lo1, up1 = self.pq.delta_interval(eps)
        if self.symmetric:
            return lo1, up1
        lo2, up2 = self.qp.delta_interval(eps)
        return np.maximum(lo1, lo2), np.maximum(up1, up2)

    def max_finite_loss(self) -> float:
        return max(self.pq.max_finite_loss(), self.qp.max_finite_loss())

    def note(self) -> str:
        return (f"exact over {self.pq.n_rows} rows ({self.size} atoms) in row form, "
                f"{self.pq.tables.size} tail-table entries (single use)")

    def delta(self, eps) -> list[DeltaBound]:
        """Exact single-use delta(eps), as certified intervals, for a scalar or list of eps >= 0."""
        eps_arr = _check_eps(eps)
        lo, up = self.delta_interval(eps_arr)
        note = self.note()
        return [DeltaBound(float(e), float(u), float(l), "tight", (note,)) for e, l, u in zip(eps_arr, lo, up)]

    def to_pld(self) -> PrivacyLossDistribution:
        """The same pair with its kept atoms expanded (for exact pairwise composition of small pairs)."""
        lp, lq = self.rows.expand()
        pair = PMFPair(lp, lq, self.name, dict(self.params), self.reference, self.tail, self.tail)
        return PrivacyLossDistribution.from_pair(pair)
