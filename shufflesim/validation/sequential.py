"""Anytime-valid confidence sequences for a mean: the sequential design behind ``validate`` (issue 20).

Design.  ``validate`` draws trials in batches and looks at the data after every batch, stopping as soon as
every check is decided.  A fixed-sample interval looked at after every batch loses its level (the chance
that *some* look misleads grows without bound with the number of looks).  A **confidence sequence**
(C_t)_{t ≥ t0} covers the mean at every look simultaneously: P(∃ t ≥ t0 : μ ∉ C_t) ≤ α, so any stopping
rule — including "stop when decided" or "stop when the time budget is spent" — keeps the level.

Which sequence.  The **asymptotic confidence sequence (AsympCS)** of Waudby-Smith, Arbour, Sinha, Kennedy
and Ramdas, "Time-uniform central limit theory and asymptotic confidence sequences", *Annals of
Statistics* 52 (2024), Theorem 2.2: Robbins' two-sided normal-mixture boundary with the empirical standard
deviation σ̂_t,

    C_t = μ̂_t ± σ̂_t · sqrt( 2(tρ² + 1) / (t²ρ²) · log( sqrt(tρ² + 1) / α ) ),

with ρ chosen before any data to make the sequence tightest at ``t_opt`` trials:
ρ² = (−2 log α + log(−2 log α + 1)) / t_opt (their approximate optimiser).

Moment assumptions, for squared errors.  The trials are i.i.d. by construction (independent seed streams).
AsympCS needs a finite (2 + δ)-th moment of the observations, and its coverage is asymptotic: the
probability of *any* miscoverage after t0 tends to at most α as t0 grows (their Thm 2.2; the first look,
``t0``, is a burn-in).  Squared errors of shufflesim's protocols have finite moments of every order: the
estimates of the message-based protocols are bounded (finitely many messages with bounded values), and
the central baselines add Laplace, discrete-Laplace or Gaussian noise (all moments finite).  But they are
right-skewed (χ²-like) and their range is no useful bound (the worst case is orders of magnitude above the
mean), so the non-asymptotic alternatives were not chosen: a bounded-range betting or empirical-Bernstein
sequence (Waudby-Smith & Ramdas, JRSS-B 2024) on the deterministic range of a k-RR squared error would need
about ten times more trials for the upper side, and the central protocols' errors have no range at all.
(An assumption-free *lower* sequence exists for non-negative data — a betting martingale — but the upper
side, needed for "agrees" and "holds", cannot be had without an assumption.)  What the asymptotic
guarantee costs at the burn-in and sample sizes used is *measured*: the whole procedure's error rates on
skewed and heavy-tailed data with known mean are simulated in ``tests/test_validation.py`` and reported in
docs/validation.md.

One sequence decides every check.  All checks of a run compare the same mean μ = E[squared error] with
constants (the theory values), and every wrong decision of any check needs μ ∉ C_t at the stopping time,
so a single (1 − α) sequence controls the family-wise error of all checks at α with no further correction.
Decisions use the running intersection of C_1, …, C_t, which covers μ whenever every C_s does (so a
verdict, once reached, never flips back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.core.checks import ALPHA_PRECISION, check_int, check_real

#: trials before the first look (burn-in of the asymptotic sequence); a multiple of the fast engine's block
FIRST_LOOK = 1024
#: the number of trials at which the sequence is made tightest (fixed before any data)
T_OPT = 32768
METHOD = ("asymptotic confidence sequence (Waudby-Smith et al., Ann. Statist. 2024, Thm 2.2; normal mixture, "
          "tightest at {t_opt} trials, first look after {t0}) at level {level:g}: one sequence for every check "
          "(family-wise error {alpha:g} over all looks)")


@dataclass(frozen=True)
class AsympCS:
    """The two-sided (1 − ``alpha``) asymptotic confidence sequence for a mean, tightest at ``t_opt``."""

    alpha: float = 0.05
    t_opt: int = T_OPT

    def __post_init__(self):
        check_real("alpha", self.alpha, low=0.0, high=1.0, low_open=True, high_open=True,
               precise=ALPHA_PRECISION)
        check_int("t_opt", self.t_opt, minimum=1)

    @property
    def rho2(self) -> float:
        """ρ² = (−2 log α + log(−2 log α + 1)) / t_opt (Waudby-Smith et al.'s approximate optimiser)."""
        a = -2.0 * math.log(self.alpha)
        return (a + math.log(a + 1.0)) / self.t_opt

    def factor(self, t) -> np.ndarray | float:
        """The radius of C_t in units of σ̂_t (decreasing in t)."""
        t = np.asarray(t, dtype=float)
        r2 = self.rho2
        v = t * r2 + 1.0
        out = np.sqrt(2.0 * v / (t * t * r2) * np.log(np.sqrt(v) / self.alpha))
        return float(out) if out.ndim == 0 else out

    def interval(self, mean: float, sd: float, t: int) -> tuple[float, float]:
        """C_t from the running mean and standard deviation after ``t`` observations."""
        r = sd * self.factor(t)
        return mean - r, mean + r

    def alpha_at(self, distance: float, sd: float, t: int) -> float:
        """The smallest level α′ at which C_t (with this sequence's ρ) excludes a value ``distance`` away from
        the running mean on one side: the inverse of :meth:`factor` in α (Robbins' normal-mixture boundary is
        valid for every fixed ρ, so for every α′ the sequence with the same ρ covers the mean at all looks with
        probability ≥ 1 − α′).  1 when the value is on the other side or at the mean."""
        if not distance > 0:
            return 1.0
        if not sd > 0:
            return 0.0
        r2 = self.rho2
        v = t * r2 + 1.0
        return min(1.0, math.sqrt(v) * math.exp(-(distance / sd) ** 2 * t * t * r2 / (2.0 * v)))

    def anytime_p(self, looks, value: float, side: str) -> float:
        """Anytime-valid p-value (Howard et al., Ann. Statist. 2021, §2; Waudby-Smith et al. 2024) of the
        decision "the running intersection's upper end is at most ``value``" (``side`` "upper") or "its lower end
        is at least ``value``" (``side`` "lower"), from the looks' (t, mean, sd): the smallest α′ at which that
        decision is reached, i.e. the minimum over looks of :meth:`alpha_at` (a one-sided decision on the
        running intersection is reached at α′ iff one look reaches it at α′)."""
        best = 1.0
        for t, mean, sd in looks:
            d = (value - mean) if side == "upper" else (mean - value)
            best = min(best, self.alpha_at(d, sd, t))
        return best

    def trials_for_radius(self, radius: float, sd: float) -> int | None:
        """The smallest t whose radius σ̂·factor(t) is at most ``radius`` (``None`` for radius ≤ 0)."""
        if not radius > 0 or not math.isfinite(radius):
            return None
        if sd <= 0:
            return 1
        lo, hi = 1, 2
        while self.factor(hi) * sd > radius:
            lo, hi = hi, hi * 2
            if hi > 2**62:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.factor(mid) * sd > radius:
                lo = mid
            else:
                hi = mid
        return hi


class RunningMoments:
    """Count, mean and sum of squared deviations of a growing sample, updated batch by batch (Chan, Golub
    and LeVeque's pairwise combination; no sample is kept)."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=float)
        nb = int(x.size)
        if nb == 0:
            return
        mb = float(x.mean())
        m2b = float(((x - mb) ** 2).sum())
        n = self.n + nb
        d = mb - self.mean
        self.m2 += m2b + d * d * self.n * nb / n
        self.mean += d * nb / n
        self.n = n

    @property
    def sd(self) -> float:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else math.nan


def next_look(t: int, first: int = FIRST_LOOK, block: int = 256) -> int:
    """The trial count of the look after ``t``: batches of about t/8 (at least ``block``), whole blocks.

    The looks depend on t only (not on the data or the clock), so a run stopped by its decision is
    reproducible from its seed; the sequence is valid at every t, so the batch size costs no level."""
    if t < first:
        return first
    step = max(block, (t // 8) // block * block)
    return t + step
