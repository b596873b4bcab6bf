"""Privacy loss distributions of a neighbouring pair, and exact single-use delta(eps) over their atoms.

For a pair (P, Q) of probability mass functions on a common finite support, the privacy loss of an
outcome o is L(o) = log P(o) - log Q(o), distributed under P (Koskela et al., seed 001 §2.1, eq 2.2).
Outcomes with Q(o) = 0 < P(o) carry infinite loss; their total P-mass is delta_{P||Q}(inf)
(seed 001 eq 2.3).  The tight delta of a single use is the hockey-stick divergence

    delta_{P||Q}(eps) = sum_{L_i > eps} p_i (1 - e^{eps - L_i}) + P(L = inf)        (seed 001 eq 2.3, n_c = 1)

and delta(eps) = max(delta_{P||Q}(eps), delta_{Q||P}(eps)) (seed 001 Theorem 5; docs/theory.md#hockey-stick).

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

Pairs in row form have their own single-use engine, :class:`~shufflesim.accounting.rows.rows_pld.RowsPLD`.
The floating-point helpers live in :mod:`.logspace`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np

from shufflesim.errors import DataError, ParameterError
from shufflesim.accounting.numerics.logspace import (NEG_INF, REL_SLACK, U, exp_clamped, exp_down, exp_up, group_log_sum,
                                            log_sum, sum_down, sum_up)
from shufflesim.accounting.pld.mgf import MGFSketch
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.model.queries import check_delta, check_eps
from shufflesim.accounting.model.results import DeltaBound, EpsBound

#: atoms whose log-mass is below (max log-mass - CORE_SPAN) are summarised by their total mass
CORE_SPAN = 150.0


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
        return exp_clamped(self.log_inf_mass)

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
        stay valid (see :class:`~shufflesim.accounting.pld.pmf_pair.PMFPair`).  O(N): atoms are binned by
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
    def sketch(self) -> MGFSketch:
        """Upper envelope of this direction's MGF (for Chernoff-parameter searches)."""
        return MGFSketch.from_values(self.losses, self.log_mass, tol=self.loss_tol)


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


class TwoDirections:
    """What both single-use PLD forms share: δ(ε) is the larger of the two directions' (each certified
    interval), reported with the form's :meth:`note`.  Subclasses give ``pq``, ``qp``, ``symmetric``."""

    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta(eps) = max of the two directions (single use)."""
        lo1, up1 = self.pq.delta_interval(eps)  # type: ignore[attr-defined]
        if self.symmetric:  # type: ignore[attr-defined]
            return lo1, up1
        lo2, up2 = self.qp.delta_interval(eps)  # type: ignore[attr-defined]
        return np.maximum(lo1, lo2), np.maximum(up1, up2)

    def note(self) -> str:
        raise NotImplementedError

    def delta(self, eps) -> list[DeltaBound]:
        """Exact single-use delta(eps), as certified intervals, for a scalar or list of eps >= 0."""
        eps_arr = check_eps(eps)
        lo, up = self.delta_interval(eps_arr)
        note = self.note()
        return [DeltaBound(float(e), float(u), float(l), "tight", (note,)) for e, l, u in zip(eps_arr, lo, up)]


@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution(TwoDirections):
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

    def max_finite_loss(self) -> float:
        return max(self.pq.max_loss + self.pq.loss_tol, self.qp.max_loss + self.qp.loss_tol)

    def note(self) -> str:
        return f"exact over {self.pq.size}+{self.qp.size} atoms (single use)"

    def epsilon(self, delta, *, eps_tol: float = 1e-9) -> list[EpsBound]:
        """Smallest eps with delta(eps) <= delta, as a certified interval (eps_lower, eps_upper]."""
        from shufflesim.accounting.numerics.invert import eps_interval_for_delta

        deltas = check_delta(delta)
        eps_max = max(0.0, self.max_finite_loss()) * (1 + 4 * U) + 1e-300
        note = self.note()
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

