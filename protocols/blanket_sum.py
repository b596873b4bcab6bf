"""Single-message real summation with the privacy blanket (Balle, Bell, Gascón, Nissim 2019; seed 004 §4,
Algorithms 1–2; FORMULAS §5).

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
shuffled k-RR applies with k + 1 values (FORMULAS §2–3).  Three parameter modes:

* ``paper``   — k = ⌊n^{1/3}⌋ unless given; γ from Balle et al.'s closed form (seed 001 Thm C.1,
  eq C.1, with k + 1 values); certifies (ε, δ) only for ε ≤ 1;
* ``bennett`` — k = ⌊n^{1/3}⌋ unless given; the smallest γ for which Balle et al.'s numerical Bennett
  bound certifies (ε, δ) (as the authors' experiments did; ``bennett_variant`` "fixed" — the corrected
  bound, default — or "original-2019", the release the summation paper's code pinned);
* ``tight``   — γ(k) the smallest γ certified by the tight accountant of shuffled (k+1)-RR for the chosen
  adversary (FORMULAS §2: ``strong`` full view by default, ``strong-1d``, ``weak``), and k chosen to
  minimise the exact worst-case MSE n·max_x Var/(k²(1−γ(k))²) by golden-section search over integers
  k ∈ [1, max(16, 8⌊n^{1/3}⌋)] (assumes the MSE is unimodal in k; every evaluated k is certified either
  way, so a failure of that assumption costs optimality only).

δ defaults to 1/n² (seed 004 §7 and Appendix G use δ = 1/n²).  With ``gamma`` given the mode's method
certifies it instead: δ(ε) when ``eps`` is also given, else ε(δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from shufflesim.core.checks import check_int, check_real
from shufflesim.accounting.results import PrivacyGuarantee
from shufflesim.pipeline.analyser import Analyser
from shufflesim.errors import InfeasibleError, NotApplicableError, ParameterError
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.protocol import Protocol
from shufflesim.pipeline.randomiser import LocalRandomiser, RRFamily
from shufflesim.pipeline.registry import register
from shufflesim.maths.rounding import grid_dtype, randomised_round, rounding_variance
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
    "tight_delta_upper",
    "integer_argmin",
    "resolve_blanket",
]

MODES = ("paper", "bennett", "tight")
ADVERSARIES = ("strong", "strong-1d", "weak")
BENNETT_VARIANTS = ("fixed", "original-2019")
#: a calibrated γ this close to 1 means the target cannot be met with a usable (debiasable) blanket
GAMMA_MAX = 1.0 - 1e-9


# ---------------------------------------------------------------------------------------------------
# One blanket level: (top+1)-ary randomised response over {0, ..., top}
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlanketLevel:
    """Blanket randomised response over {0, …, top} with probability ``gamma`` (FORMULAS §1, §5)."""

    top: int
    gamma: float

    @property
    def values(self) -> int:
        """Number of reportable values, top + 1 (the k of k-RR)."""
        return self.top + 1

    @property
    def uniform_variance(self) -> float:
        """V = ((top+1)² − 1)/12, the variance of a uniform report on {0, …, top}."""
        return (self.values**2 - 1) / 12.0

    def randomise(self, d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Report each integer of ``d`` (in {0..top}) or, w.p. γ, a uniform value (vectorised)."""
        out = np.asarray(d).astype(grid_dtype(self.top), copy=True)
        idx = np.flatnonzero(rng.random(out.shape[0]) < self.gamma)
        out[idx] = rng.integers(0, self.top + 1, size=idx.size, dtype=out.dtype)
        return out

    def report_probabilities(self, value: int) -> np.ndarray:
        """P(report = j | input = value), j = 0..top."""
        p = np.full(self.values, self.gamma / self.values)
        p[value] += 1.0 - self.gamma
        return p

    def debias(self, total: int, n: int) -> float:
        """Unbiased estimate of Σ_i d_i from the reports' sum: (Σ y − nγ·top/2)/(1 − γ) (seed 004 Alg. 2)."""
        return (total - n * self.gamma * self.top / 2.0) / (1.0 - self.gamma)

    def variance(self, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
        """Var(y) of one report whose input d has mean ``mean`` and variance ``var`` (module docstring):
        γV + γ(1−γ)(mean − top/2)² + (1−γ)·var."""
        g = self.gamma
        dev = np.asarray(mean, dtype=float) - self.top / 2.0
        return g * self.uniform_variance + g * (1.0 - g) * dev * dev + (1.0 - g) * np.asarray(var, dtype=float)

    def worst_fixed_variance(self) -> float:
        """max over deterministic inputs d ∈ {0..top} of Var(y): γV + γ(1−γ)·top²/4 (at d = 0 or top)."""
        g = self.gamma
        return g * self.uniform_variance + g * (1.0 - g) * self.top**2 / 4.0

    def worst_rounded_variance(self) -> float:
        """max over s ∈ [0, top] of Var(y) when the input is the randomised rounding of s.

        Var = γV + γ(1−γ)(s − c)² + (1−γ)f(1−f), c = top/2, f = s − ⌊s⌋.  On a unit interval [m, m+1]
        this is a concave quadratic (s² coefficient −(1−γ)²).  For m in the left half, shifting s to
        s − m ∈ [0, 1] keeps f and does not decrease |s − c|, so the maximum over [0, top] is attained on
        [0, 1] (and, by symmetry, on [top−1, top]); there it sits at the stationary point
        s* = (1 − γ·top)/(2(1 − γ)) clipped to [0, 1].
        """
        g = self.gamma
        c = self.top / 2.0
        s = 0.0 if g >= 1.0 else min(max((1.0 - g * self.top) / (2.0 * (1.0 - g)), 0.0), 1.0)
        return g * self.uniform_variance + g * (1.0 - g) * (s - c) ** 2 + (1.0 - g) * s * (1.0 - s)


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
        object.__setattr__(self, "rr_family", RRFamily(self.k + 1, self.gamma))
        object.__setattr__(self, "eps0", math.log1p((self.k + 1) * (1.0 - self.gamma) / self.gamma))

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
# Privacy of one level, by method
# ---------------------------------------------------------------------------------------------------


def default_delta(n: int) -> float:
    """δ = 1/n² (seed 004 §7 / Appendix G)."""
    return 1.0 / (float(n) * float(n))


def paper_precision(n: int) -> int:
    """k = ⌊n^{1/3}⌋ computed exactly in integers (at least 1)."""
    k = max(1, int(round(n ** (1.0 / 3.0))))
    while k > 1 and k**3 > n:
        k -= 1
    while (k + 1) ** 3 <= n:
        k += 1
    return k


def _tight_numerics() -> dict:
    # only the certified upper bound matters for calibration; its width only affects optimality
    return {"target_accuracy": None, "max_grid_size": 2**20}


def tight_delta_upper(pairs, eps: float) -> float:
    """Certified upper bound on δ(ε) of a pair or a heterogeneous list of pairs (tight accountant)."""
    from shufflesim.accounting.tight import tight_delta

    return float(tight_delta(pairs, eps, **_tight_numerics())[0].delta_upper)


@lru_cache(maxsize=8)
def _krr_pair(n: int, values: int, gamma: float, adversary: str):
    """The (k+1)-ary RR pair in the accountant's fastest form (rows for the strong/weak views)."""
    from shufflesim.accounting.pairs import krr_pair

    return krr_pair(n, values, gamma, adversary, as_rows=True)


def level_delta(method: str, n: int, values: int, gamma: float, eps: float, *, variant: str = "fixed",
                adversary: str = "strong") -> float:
    """Certified δ(ε) of shuffled ``values``-ary RR with blanket γ by ``method`` (balle, bennett, tight)."""
    if gamma >= 1.0:
        return 0.0
    if method == "balle":
        from shufflesim.accounting.bounds.balle import balle_delta

        b = balle_delta(eps, n=n, k=values, gamma=gamma)
        if not b.applicable:
            raise NotApplicableError(f"balle closed form: {b.reason}")
        return float(b.delta_upper)
    if method == "bennett":
        from shufflesim.accounting.bounds.balle import KRRBlanket, bennett_delta

        return float(bennett_delta(eps, n=n, randomiser=KRRBlanket(k=values, gamma=gamma), variant=variant).delta_upper)
    if method == "tight":
        return tight_delta_upper(_krr_pair(n, values, gamma, adversary), eps)
    raise ParameterError(f"privacy method must be balle, bennett or tight; got {method!r}")


def level_eps(method: str, n: int, values: int, gamma: float, delta: float, *, variant: str = "fixed",
              adversary: str = "strong") -> float:
    """Certified ε(δ) of shuffled ``values``-ary RR with blanket γ by ``method``."""
    if method == "balle":
        from shufflesim.accounting.bounds.balle import balle_eps

        b = balle_eps(delta, n=n, k=values, gamma=gamma)
        if not b.applicable:
            raise NotApplicableError(f"balle closed form: {b.reason}")
        return float(b.eps_upper)
    if method == "bennett":
        from shufflesim.accounting.bounds.balle import KRRBlanket, bennett_eps

        return float(bennett_eps(delta, n=n, randomiser=KRRBlanket(k=values, gamma=gamma), variant=variant).eps_upper)
    if method == "tight":
        from shufflesim.accounting.tight import tight_epsilon

        return float(tight_epsilon(_krr_pair(n, values, gamma, adversary), delta, **_tight_numerics())[0].eps_upper)
    raise ParameterError(f"privacy method must be balle, bennett or tight; got {method!r}")


@lru_cache(maxsize=65536)
def level_gamma(method: str, n: int, values: int, eps: float, delta: float, *, variant: str = "fixed",
                adversary: str = "strong") -> float:
    """Smallest blanket γ of shuffled ``values``-ary RR certified (ε, δ)-DP by ``method``.

    ``balle``: the closed form (seed 001 Thm C.1); ``bennett``: bisection on Balle et al.'s Bennett bound;
    ``tight``: safe-side root finding (``accounting.calibrate``) on the tight accountant's δ upper bound,
    bracketed above by the Bennett γ when that certifies.  Raises :class:`InfeasibleError` when only a
    blanket γ ≥ 1 − 1e−9 would do (nothing left to debias).
    """
    from shufflesim.accounting.bounds.balle import balle_gamma, bennett_gamma

    if method == "balle":
        g = balle_gamma(n, values, eps, delta)
    elif method == "bennett":
        g = bennett_gamma(n, values, eps, delta, variant=variant)
    elif method == "tight":
        from shufflesim.accounting.calibrate import calibrate

        hi = 1.0
        try:
            gb = bennett_gamma(n, values, eps, delta, variant="fixed")
            if gb < 1.0 and level_delta("tight", n, values, gb, eps, adversary=adversary) <= delta:
                hi = gb
        except InfeasibleError:
            pass
        lo = hi * 1e-3
        cal = calibrate(lambda g: level_delta("tight", n, values, g, eps, adversary=adversary), delta, lo, hi,
                        increasing=False, xtol=0.0, rtol=1e-4, log_scale=True, max_evals=60)
        g = cal.x
    else:
        raise ParameterError(f"privacy method must be balle, bennett or tight; got {method!r}")
    if g >= GAMMA_MAX:
        raise InfeasibleError(
            f"{method}: ({eps:.6g}, {delta:.3g})-DP with n={n} and {values} values needs blanket gamma >= 1, "
            "which leaves nothing to debias; use a larger n, eps or delta, or a smaller precision"
        )
    return float(g)


# ---------------------------------------------------------------------------------------------------
# Parameter resolution
# ---------------------------------------------------------------------------------------------------

MODE_METHOD = {"paper": "balle", "bennett": "bennett", "tight": "tight"}


def integer_argmin(f: Callable[[int], float], lo: int, hi: int) -> tuple[int, float]:
    """Golden-section search for the minimiser of a unimodal f on the integers lo..hi (memoised).

    Returns (argmin, min).  With ties or non-unimodal f it returns a local minimum.
    """
    cache: dict[int, float] = {}

    def F(i: int) -> float:
        if i not in cache:
            cache[i] = f(i)
        return cache[i]

    a, b = lo, hi
    invphi = (math.sqrt(5.0) - 1.0) / 2.0
    while b - a > 3:
        c = int(round(b - invphi * (b - a)))
        d = int(round(a + invphi * (b - a)))
        if c == d:
            d = c + 1
        if F(c) <= F(d):
            b = d
        else:
            a = c
    best = min(range(a, b + 1), key=F)
    return best, F(best)


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

        def objective(kk: int) -> float:
            try:
                g = level_gamma(method, n, kk + 1, eps, delta, **kw)
            except InfeasibleError:
                return math.inf
            return blanket_worst_mse(n, kk, g)

        k, val = integer_argmin(objective, 1, hi)
        if not math.isfinite(val):
            raise InfeasibleError(f"tight: no precision k in [1, {hi}] meets ({eps:.6g}, {delta:.3g})-DP with n={n}")
        notes.append(f"k chosen by golden-section search over 1..{hi} minimising the exact worst-case MSE")
    elif k is None:
        k = paper_precision(n)
    g = level_gamma(method, n, k + 1, eps, delta, **kw)
    d = level_delta(method, n, k + 1, g, eps, **kw)
    return BlanketParams(k, g, eps, d, method, tuple(notes))


def _check_common(n, eps, delta, mode, adversary, variant):
    n = check_int("n", n, minimum=2)
    if mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if adversary not in ADVERSARIES:
        raise ParameterError(f"adversary must be one of {', '.join(ADVERSARIES)}; got {adversary!r}")
    if variant not in BENNETT_VARIANTS:
        raise ParameterError(f"bennett_variant must be one of {', '.join(BENNETT_VARIANTS)}; got {variant!r}")
    if eps is not None:
        eps = check_real("eps", eps, low=0.0, low_open=True)
    delta = default_delta(n) if delta is None else check_real("delta", delta, low=0.0, high=1.0, low_open=True,
                                                                 high_open=True)
    return n, eps, delta


EPS_OPTION = Option("eps", float, "central epsilon > 0 to certify (required unless --gamma is given)")
DELTA_OPTION = Option("delta", float, "central delta in (0, 1) (default: 1/n^2, as in seed 004)")
ADVERSARY_OPTION = Option("adversary", str, "adversary of the tight accountant (FORMULAS §2)", default="strong",
                          choices=ADVERSARIES)
VARIANT_OPTION = Option("bennett_variant", str,
                        "Bennett bound variant: fixed (corrected) or original-2019 (the paper's code)",
                        default="fixed", choices=BENNETT_VARIANTS)


@register
class BlanketSumProtocol(Protocol):
    """Single-message blanket real summation (randomised rounding + (k+1)-ary blanket RR, one shuffler)."""

    name = "blanket-sum"
    summary = "single-message real sum: randomised rounding to k, blanket RR over {0..k} (Balle et al. 2019)"
    data_kind = "real"
    options = (
        EPS_OPTION,
        DELTA_OPTION,
        Option("k", int, "precision k >= 1: inputs are rounded to {0..k} (default: floor(n^(1/3)); tight: optimised)",
               metavar="K"),
        Option("gamma", float, "blanket probability in (0, 1) (default: calibrated to --eps/--delta by --mode)"),
        Option("mode", str, "parameter rule: paper (closed form), bennett, tight", default="paper", choices=MODES),
        ADVERSARY_OPTION,
        VARIANT_OPTION,
    )

    @classmethod
    def create(cls, n: int, *, eps=None, delta=None, k=None, gamma=None, mode="paper", adversary="strong",
               bennett_variant="fixed") -> "BlanketSumProtocol":
        n, eps, delta = _check_common(n, eps, delta, mode, adversary, bennett_variant)
        if k is not None:
            k = check_int("k", k, minimum=1)
        if gamma is not None:
            gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True, high_open=True)
        elif eps is None:
            raise ParameterError("blanket-sum needs --eps (central epsilon > 0) or an explicit --gamma in (0, 1)")
        r = resolve_blanket(n, eps, delta, k, gamma, mode, adversary, bennett_variant)
        params = {"k": r.k, "gamma": r.gamma, "eps": r.eps, "delta": r.delta, "mode": mode,
                  "eps0": math.log1p((r.k + 1) * (1.0 - r.gamma) / r.gamma)}
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

    def mse_expected(self, data: np.ndarray) -> float:
        return float(np.sum(self.user_variances(data)))

    def mse_worst(self) -> float:
        return blanket_worst_mse(self.n, self.k, self.gamma)

    def mse_bound(self) -> float:
        """The worst-case MSE expression the summation paper's code evaluates (seed 004 Lemma A.1 with one
        level; FORMULAS §5): n/(4k²) + n[γ(k²−1)/12 + (k−1)²γ(1−γ)/4]/(k²(1−γ)²)."""
        k, g = self.k, self.gamma
        return self.n / (4.0 * k * k) + self.n * (g * (k * k - 1) / 12.0 + (k - 1) ** 2 * g * (1 - g) / 4.0) / (
            k * k * (1.0 - g) ** 2)

    def privacy(self) -> PrivacyGuarantee:
        return self._privacy
