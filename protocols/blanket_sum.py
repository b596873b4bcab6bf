"""Single-message real summation with the privacy blanket (Balle, Bell, Gascón, Nissim 2019; seed 004 §4,
Algorithms 1–2; docs/theory.md#summation-blanket).

Randomiser: x ∈ [0, 1] is rounded at random to x̄ ∈ {0, …, k} (E[x̄] = kx), then blanket randomised response
over the k + 1 values {0, …, k}: report x̄ with probability 1 − γ, else a value uniform on {0, …, k}.
Analyser (sees only the shuffled multiset, through its exact integer sum): Ŝ = (Σ y/k − nγ/2)/(1 − γ),
unbiased for Σ x.

Exact error.  For one user with input x, put μ = kx, v = Var(x̄) = f(1 − f) (f = kx − ⌊kx⌋), c = k/2 and
V = ((k+1)² − 1)/12 (the variance of the uniform report).  Conditioning on the blanket coin B,
Var(y) = γV + Var((1−B)x̄ + Bc) = γV + γ(1−γ)(μ − c)² + (1−γ)v, so the users' reports being independent,
E(Ŝ − S)² = Σ_i Var(y_i) / (k²(1−γ)²) (:meth:`BlanketLevel.variance`).  The worst case over inputs is
n times the largest per-user term (:meth:`BlanketLevel.worst_rounded_variance`, derived there).

Privacy.  The report is (k+1)-ary randomised response with blanket probability γ, so every accountant for
shuffled k-RR applies with k + 1 values (docs/theory.md#pairs-krr, docs/theory.md#bounds).  Three parameter modes:

* ``paper``   — k = ⌊n^{1/3}⌋ unless given; γ from Balle et al.'s closed form (seed 001 Thm C.1,
  eq C.1, with k + 1 values); certifies (ε, δ) only for ε ≤ 1;
* ``bennett`` — k = ⌊n^{1/3}⌋ unless given; the smallest γ for which Balle et al.'s numerical Bennett
  bound certifies (ε, δ) (as the authors' experiments did; ``bennett_variant`` "fixed" — the corrected
  bound, default — or "original-2019", the release the summation paper's code pinned);
* ``tight``   — γ(k) the smallest γ certified by the tight accountant of shuffled (k+1)-RR for the chosen
  view (docs/theory.md#adversaries: ``shuffled`` — the released reports, by the stronger clone pair — by
  default; ``weak``, valid for the reports too and often tighter for many values but slower; ``strong``,
  ``strong-1d``), and k chosen to
  minimise the exact worst-case MSE n·max_x Var/(k²(1−γ(k))²) by golden-section search over integers
  k ∈ [1, max(16, 8⌊n^{1/3}⌋)] (assumes the MSE is unimodal in k; every evaluated k is certified either
  way, so a failure of that assumption costs optimality only).

* ``auto`` (the default) — of the modes below that certify the target, the one with the smallest exact
  worst-case MSE (:func:`~protocols._blanket.run_mode`; ties go to the tighter certificate); the resolved
  ``params`` carry the mode that ran and ``mode_reason`` names it with every candidate's worst-case MSE
  or why it could not certify.  The minimum over certified modes can only fall as ε grows, so a sweep
  is never worse at a larger ε; the paper's rules stay available by name for reproductions.

δ defaults to 1/n² (seed 004 §7 and Appendix G use δ = 1/n²).  With ``gamma`` given the mode's method
certifies it instead: δ(ε) when ``eps`` is also given, else ε(δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from shufflesim.core.checks import check_int, check_real
from shufflesim.accounting.model.mechanism import Relation
from shufflesim.mechanisms.krr import KRR
from shufflesim.protocols._blanket import (
    ADVERSARIES,
    ADVERSARY_OPTION,
    BENNETT_VARIANTS,
    DELTA_OPTION,
    EPS_OPTION,
    MODES,
    SEARCH_PROXY,
    VARIANT_OPTION,
    run_mode,
    BlanketLevel,
    check_common,
    default_delta,
    integer_argmin,
    level_delta,
    level_eps,
    level_gamma,
    paper_precision,
)
from shufflesim.accounting.model.results import PrivacyGuarantee
from shufflesim.pipeline.analyser import Analyser
from shufflesim.errors import InfeasibleError, ParameterError
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.protocol import Protocol
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.registry import register
from shufflesim.maths.rr import eps0_from_gamma
from shufflesim.maths.rounding import randomised_round, rounding_variance
from shufflesim.pipeline.shuffler import SingleShuffler, View
from shufflesim.pipeline.spaces import IntegerRange

__all__ = [
    "MODES",
    "ADVERSARIES",
    "BENNETT_VARIANTS",
    "BlanketLevel",
    "BlanketSumRandomiser",
    "BlanketSumAnalyser",
    "BlanketSumProtocol",
    "default_delta",
    "paper_precision",
    "level_gamma",
    "level_delta",
    "level_eps",
    "integer_argmin",
    "resolve_blanket",
]



# ---------------------------------------------------------------------------------------------------
# Randomiser and analyser
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BlanketSumRandomiser(LocalRandomiser):
    """Randomised rounding to {0..k}, then blanket RR over the k + 1 values (one message per user)."""

    k: int
    gamma: float

    def __post_init__(self) -> None:
        level = BlanketLevel(self.k, self.gamma)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "message_space", IntegerRange(0, self.k))
        object.__setattr__(self, "messages_per_user", 1)
        object.__setattr__(self, "eps0", eps0_from_gamma(self.gamma, self.k + 1))

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.level.randomise(randomised_round(x, self.k, rng), rng)[:, None]


class BlanketSumAnalyser(Analyser):
    """Ŝ = (Σ y/k − nγ/2)/(1 − γ) from the exact sum of the shuffled reports."""

    name = "blanket-debias"

    def __init__(self, k: int, gamma: float, n: int):
        self.level, self.k, self.n = BlanketLevel(k, gamma), k, n

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        return self.level.debias(view.integer_sum(0), self.n) / self.k


# ---------------------------------------------------------------------------------------------------
# Parameter resolution
# ---------------------------------------------------------------------------------------------------

MODE_METHOD = {"paper": "balle", "bennett": "bennett", "tight": "tight"}


def blanket_worst_mse(n: int, k: int, gamma: float) -> float:
    """Exact worst-case MSE of the sum: n·max_x Var(y)/(k²(1−γ)²) (module docstring)."""
    return n * BlanketLevel(k, gamma).worst_rounded_variance() / (k * k * (1.0 - gamma) ** 2)


@dataclass(frozen=True)
class BlanketParams:
    """Resolved parameters of the single-message protocol and their certificate."""

    k: int
    gamma: float
    eps: float
    delta: float
    method: str
    notes: tuple[str, ...]


def tight_k_search_estimate(n: int, adversary: str = "shuffled") -> float:
    """Estimated seconds (CPU, 2-core machine) of the tight mode's search over k: ~24 calibrations of ~4-5
    certified level deltas (measured 1-2 s at n = 1e4-1e6, 2.2 s at 1e7, 3.2 s at 1e9); for an adversary searched
    on a proxy (weak), the descent's ~3 calibrations on its own pairs, each ~10-100x dearer (taken as 10x the
    whole proxy search); announced with an ETA when long (issue 21)."""
    sec = 1.5 + 0.3 * max(0.0, math.log10(max(n, 1)) - 6.0)
    return sec * (11.0 if adversary in SEARCH_PROXY else 1.0)


def _descend(f, k: int, lo: int, hi: int) -> tuple[int, float]:
    """From ``k``, step to the better integer neighbour until neither improves f: a local minimum."""
    val = f(k)
    while True:
        cands = [(f(j), j) for j in (k - 1, k + 1) if lo <= j <= hi]
        best = min(cands, default=(math.inf, k))
        if not best[0] < val:
            return k, val
        val, k = best


@lru_cache(maxsize=256)
def resolve_blanket(n: int, eps: float | None, delta: float, k: int | None, gamma: float | None, mode: str,
                    adversary: str, variant: str) -> BlanketParams:
    """Choose (k, γ) for ``mode`` and certify the result (see the module docstring); memoised."""
    method = MODE_METHOD[mode]
    kw: dict[str, Any] = {"variant": variant, "adversary": adversary}
    notes: list[str] = []
    if method == "tight":
        notes.append(f"tight accountant, shuffled k-RR pair, adversary={adversary}")
    elif method == "bennett":
        notes.append(f"Balle et al. Bennett bound, variant={variant}")
    else:
        notes.append("Balle et al. closed form (seed 001 Thm C.1)")
    if gamma is not None:
        if k is None:
            k = paper_precision(n)
        if eps is not None:
            d = level_delta(method, n, k + 1, gamma, eps, **kw)
            return BlanketParams(k, gamma, eps, d, method, tuple(notes + ["delta certified at the given eps"]))
        e = level_eps(method, n, k + 1, gamma, delta, **kw)
        return BlanketParams(k, gamma, e, delta, method, tuple(notes + ["eps certified at the given delta"]))
    assert eps is not None
    if k is None and mode == "tight":
        hi = max(16, 8 * paper_precision(n))

        def objective(kk: int, adv: str = adversary) -> float:
            try:
                g = level_gamma(method, n, kk + 1, eps, delta, **dict(kw, adversary=adv))
            except InfeasibleError:
                return math.inf
            return blanket_worst_mse(n, kk, g)

        proxy = SEARCH_PROXY.get(adversary)
        from shufflesim.core.progress import stage

        with stage(f"blanket-sum: tight search over k in 1..{hi} (n={n})", tight_k_search_estimate(n, adversary)):
            k, val = integer_argmin(lambda kk: objective(kk, proxy or adversary), 1, hi)
        if not math.isfinite(val):
            raise InfeasibleError(f"tight: no precision k in [1, {hi}] meets ({eps:.6g}, {delta:.3g})-DP with n={n}")
        notes.append(f"k chosen by golden-section search over 1..{hi} minimising the exact worst-case MSE")
        if proxy is not None:  # descend from the proxy's k on the adversary's own calibration (a local minimum)
            k, val = _descend(objective, k, 1, hi)
            notes[-1] += (f" under the {proxy} pair (an upper bound on the {adversary} adversary's delta, far "
                          f"cheaper), then moved to a local minimum of the MSE calibrated on the {adversary} pair")
    elif k is None:
        k = paper_precision(n)
    g = level_gamma(method, n, k + 1, eps, delta, **kw)
    d = level_delta(method, n, k + 1, g, eps, **kw)
    return BlanketParams(k, g, eps, d, method, tuple(notes))


@register
class BlanketSumProtocol(Protocol):
    """Single-message blanket real summation (randomised rounding + (k+1)-ary blanket RR, one shuffler)."""

    name = "blanket-sum"
    summary = "single-message real sum: randomised rounding to k, blanket RR over {0..k} (Balle et al. 2019)"
    example = "--eps 1"
    data_kind = "real"
    options = (
        EPS_OPTION,
        DELTA_OPTION,
        Option("k", int, "precision k >= 1: inputs are rounded to {0..k} (default: floor(n^(1/3)); tight: optimised)",
               metavar="K"),
        Option("gamma", float, "blanket probability in (0, 1) (default: calibrated to --eps/--delta by --mode)"),
        Option("mode", str, "parameter rule: auto (the certified mode with the smallest worst-case MSE), paper "
               "(closed form), bennett, "
               "tight", default="auto", choices=("auto",) + MODES),
        ADVERSARY_OPTION,
        VARIANT_OPTION,
    )

    @classmethod
    def create(cls, n: int, *, eps=None, delta=None, k=None, gamma=None, mode="auto", adversary="shuffled",
               bennett_variant="fixed") -> "BlanketSumProtocol":
        """Validate and resolve the parameters; ``mode="auto"`` (module docstring) says which mode ran."""
        proto, why = run_mode(lambda m: cls._create(n, eps, delta, k, gamma, m, adversary, bennett_variant), mode,
                              MODES)
        if why is not None:
            proto.params["mode_reason"] = why
        return proto

    @classmethod
    def _create(cls, n, eps, delta, k, gamma, mode, adversary, bennett_variant) -> "BlanketSumProtocol":
        n, eps, delta = check_common(n, eps, delta, mode, adversary, bennett_variant)
        if k is not None:
            k = check_int("k", k, minimum=1)
        if gamma is not None:
            gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True, high_open=True)
        elif eps is None:
            raise ParameterError("blanket-sum needs --eps (central epsilon > 0) or an explicit --gamma in (0, 1)")
        r = resolve_blanket(n, eps, delta, k, gamma, mode, adversary, bennett_variant)
        params = {"k": r.k, "gamma": r.gamma, "eps": r.eps, "delta": r.delta, "mode": mode,
                  "eps0": eps0_from_gamma(r.gamma, r.k + 1)}
        if mode == "tight":
            params["adversary"] = adversary
        if mode == "bennett":
            params["bennett_variant"] = bennett_variant
        proto = cls(n=n, randomiser=BlanketSumRandomiser(r.k, r.gamma), shuffler=SingleShuffler(),
                    analyser=BlanketSumAnalyser(r.k, r.gamma, n), params=params)
        proto._privacy = PrivacyGuarantee(r.eps, r.delta, r.method, r.notes)
        return proto

    @property
    def k(self) -> int:
        return self.params["k"]

    @property
    def gamma(self) -> float:
        return self.params["gamma"]

    def truth(self, data: np.ndarray) -> float:
        return float(np.sum(data))

    def user_variances(self, data: np.ndarray) -> np.ndarray:
        """Each user's contribution Var(y_i)/(k²(1−γ)²) to the exact MSE."""
        lvl = BlanketLevel(self.k, self.gamma)
        x = np.asarray(data, dtype=float)
        return lvl.variance(self.k * x, rounding_variance(x, self.k)) / (self.k**2 * (1.0 - self.gamma) ** 2)

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: the histogram of the rounded inputs over {0..k} (binomials grouped by input value),
        then (k+1)-ary blanket RR of that multiset (:func:`~shufflesim.pipeline.fast.rr_histogram`); the
        analyser needs only the reports' total."""
        from shufflesim.pipeline.fast import rounded_histogram, rr_histogram

        xbar = rounded_histogram(summary.values, summary.counts, self.k, rng)
        hist = rr_histogram(xbar, self.gamma, self.k + 1, rng)
        total = int(np.dot(np.arange(self.k + 1, dtype=np.int64), hist))
        return self.analyser.level.debias(total, self.n) / self.k

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``): the
        reports' total drawn with the same law (:func:`~shufflesim.pipeline.fast.blanket_total_batch`).

        What the law needs of the data: per distinct input v its count c_v, ⌊kv⌋ and the fractional part of
        kv (the rounded-up users are Binomial(c_v, frac_v)), i.e. the multiset of inputs -- for data on a grid,
        its histogram on that grid.  Neither Σx nor Σx² suffices: the rounding's law depends on every
        fractional part (a Poisson-binomial)."""
        from shufflesim.pipeline.fast import blanket_total_batch, rounded_parts, scalar_columns

        lo, frac = rounded_parts(summary.values, self.k)
        total = blanket_total_batch(lo, frac, summary.counts, self.k, self.gamma, rng, size)
        return scalar_columns(self.analyser.level.debias(total, self.n) / self.k, truth)

    def mse_expected(self, data: np.ndarray) -> float:
        return float(np.sum(self.user_variances(data)))

    def truth_from_summary(self, summary) -> float:
        """Σ x from the data's multiset (data given as counts, issue 21)."""
        from shufflesim.pipeline.fast import summary_total

        return summary_total(summary)

    def mse_expected_summary(self, summary) -> float:
        """:meth:`mse_expected` from the data's multiset: Σ_v c_v·(user variance at v) (issue 21)."""
        from shufflesim.pipeline.fast import summary_dot

        return summary_dot(summary, self.user_variances(summary.values))

    def mse_worst(self) -> float:
        return blanket_worst_mse(self.n, self.k, self.gamma)

    def mse_bound(self) -> float:
        """The worst-case MSE expression the summation paper's code evaluates (seed 004 Lemma A.1 with one
        level; docs/theory.md#summation-recursive): n/(4k²) + n[γ(k²−1)/12 + (k−1)²γ(1−γ)/4]/(k²(1−γ)²)."""
        k, g = self.k, self.gamma
        return self.n / (4.0 * k * k) + self.n * (g * (k * k - 1) / 12.0 + (k - 1) ** 2 * g * (1 - g) / 4.0) / (
            k * k * (1.0 - g) ** 2)

    def mechanism(self) -> KRR:
        """The shuffled reports: (k+1)-ary randomised response with blanket γ (relation: ``adversary``,
        ``shuffled`` by default — the paper and bennett modes' bounds hold for the strong adversary's view,
        hence for the reports too)."""
        return KRR(self.n, self.k + 1, self.gamma, Relation.parse(self.params.get("adversary", "shuffled")))

    def privacy(self) -> PrivacyGuarantee:
        return self._privacy
