"""The recursive multi-message real-summation protocol (Balle, Bell, Gascón, Nissim; seed 004 §4,
Algorithms 3–4, Theorem 4.2, Lemma A.1, Appendix G.2; docs/theory.md#summation-recursive).

Encoding.  Precisions p_1, …, p_r (r ≥ 2 messages), Q_j = p_1⋯p_j.  x ∈ [0, 1] is written in mixed radix,
x = Σ_{j<r} d_j/Q_j + t/Q_{r−1} with digits d_j ∈ {0..p_j−1} and t ∈ [0, 1]; the last message carries the
randomised rounding d_r of p_r·t ∈ [0, p_r] (:mod:`shufflesim.maths.rounding`).  Message j goes through blanket
randomised response with its own γ_j over {0..D_j} (D_j = p_j − 1 for j < r, D_r = p_r) and through its own
shuffler (:class:`~shufflesim.pipeline.shuffler.ParallelShufflers`: the analyser knows the level of a message but
not its sender).

Analyser: per-level debiasing, Ŝ = Σ_j (1/Q_j)(Σ_i y_ij − nγ_j D_j/2)/(1 − γ_j); unbiased for Σ x.

Exact error.  Levels and users are independent given the data, so E(Ŝ − S)² = Σ_i Σ_j Var(y_ij)/(Q_j²(1−γ_j)²)
with Var(y) of :meth:`BlanketLevel.variance <protocols.blanket_sum.BlanketLevel.variance>` (a deterministic
digit for j < r; mean p_r·t and rounding variance for j = r).  The digits and t of x ∈ [0, 1) range over
the whole product {0..p_1−1} × … × [0, 1) (and x = 1 is all digits maximal with t = 1), so the worst case
over inputs is n·[Σ_{j<r} worst_fixed_j/(Q_j²(1−γ_j)²) + worst_rounded_r/(Q_r²(1−γ_r)²)].

``mse_bound`` is the expression the paper's Table 3 evaluates (Lemma A.1 with Theorem 4.1; the formula as
the authors' public code has it; docs/theory.md#summation-recursive): n/(4Q_r²) + Σ_j B_j/Q_j² with
B_j = n[γ_j(p_j²−1)/12 + (p_j−1)²γ_j(1−γ_j)/4]/(1−γ_j)².  It uses p_j where the last level has p_r + 1
values, so it can fall *below* the exact worst case (tests show it).

Parameter modes (δ defaults to 1/n² as in seed 004; r defaults to the paper's round(log₃ log₂ n), at least 2):

* ``auto`` (the default) — of the modes below that certify the target, the one with the smallest exact
  worst-case MSE (:func:`~protocols._blanket.run_mode`; ties go to the tighter certificate); the resolved
  ``params`` carry the mode that ran and ``mode_reason`` names it with every candidate's worst-case MSE
  or why it could not certify.  The minimum over certified modes can only fall as ε grows, so a sweep
  is never worse at a larger ε; the paper's rules stay available by name for reproductions.
* ``paper``     — the generic rule of Theorem 4.2 as the authors' code evaluates it: ε_j = ε/r, δ_j = δ/r,
  X = (3^r − 1)nε²/r³, p_t = min(⌈X^{3^{t−r−1}}⌉, ⌊p_max⌋) with p_max = (n−1)ε_j / max(14 log(2/δ_j)/ε_j, 27)
  (the largest precision for which the closed form gives γ ≤ 1), and γ_j from the closed form (seed 001
  Thm C.1) with D_j + 1 values.  Privacy: basic composition.
* ``bennett``   — the same precisions and split, γ_j from the Bennett bound (Table 3's "Recursive" rows).
* ``optimised`` — precisions and ε split chosen to minimise the exact worst-case MSE, γ_j from the Bennett
  bound at (ε_j, δ/r), basic composition.  Search (:func:`optimise_basic`): (1) a surrogate — the
  calibrated γ(v, ε_j) tabulated on a grid of level sizes v (every integer to 16, then ratio 1.2) and of
  per-level budgets ε_j = ε·i/48, interpolated in log v — is minimised *exhaustively* over the grid splits
  (min-plus convolution across levels) and over all precisions p_j ≤ 64 (r = 2) or Q_{r−1} ≤ 256 (r ≥ 3)
  for the intermediate levels and p_r ≤ max(128, 8⌊n^{1/3}⌋) for the last; (2) the 4 best precision tuples
  get their split re-optimised with exact calibrations (bounded Brent, i.e. golden section with parabolic
  steps, on ε_1/ε for r = 2; Nelder–Mead on the split's softmax logits for r ≥ 3) and the best exact value
  wins.  Unlike the authors' golden-section search it assumes no convexity in the precisions; the
  returned parameters are certified whatever the search finds.
* ``tight``     — privacy by the tight accountant: the r level pairs (shuffled (D_j+1)-RR, adversary
  selectable) composed heterogeneously by FFT (seed 001 Theorem 5 / Algorithm 1) instead of basic
  composition.  Search: a level with v_j values and blanket γ_j contributes a privacy loss of variance
  ≈ 2v_j/(nγ_j) (blanket mass nγ_j/v_j per value), and variances add under composition, so the surrogate
  privacy cost is Σ_j v_j/γ_j.  For a multiplier ν, γ_j(ν) = argmin_γ MSE_j(γ) + ν v_j/γ (the Lagrangian
  optimum of the exact worst-case MSE under that cost; bounded Brent per level); γ_j(ν) grows with ν, and
  ν is calibrated by safe-side root finding on the *exact* composed δ(ε) of the tight accountant (evaluations
  placed by :func:`~shufflesim.accounting.numerics.invert.calibrate_near`, ~4 per calibration; the refinements start at the ν the
  surrogate gives the new precisions at the calibrated budget).
  Starting from the ``optimised`` precisions, the precisions are then re-chosen by coordinate
  golden-section search on the surrogate at the calibrated cost, re-calibrated exactly, and kept only if
  the exact worst-case MSE improves (two rounds at most).  Only the certified composition decides the
  privacy; the surrogate only steers the search.  The adversary is ``shuffled`` by default (the released
  reports, stronger clone pairs); for ``weak`` the search runs on the strong pairs (an upper bound on the
  weak adversary's δ, 10-100× cheaper) and only the final ν is calibrated on the weak pairs.

With ``precisions`` given they replace the rule; with ``gammas`` given they are certified instead of
calibrated (basic composition at ``eps_split`` or at δ/r per level; tight: δ(ε) of the composition).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
from scipy import optimize

from shufflesim.core.checks import check_int, check_real
from shufflesim.accounting.model.results import PrivacyGuarantee
from shufflesim.pipeline.analyser import Analyser
from shufflesim.errors import InfeasibleError, ParameterError
from shufflesim.pipeline.options import Option, float_list, int_list
from shufflesim.pipeline.protocol import Protocol
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.registry import register
from shufflesim.maths.rounding import grid_dtype, mixed_radix_digits, randomised_round, rounding_variance
from shufflesim.pipeline.shuffler import ParallelShufflers, View
from shufflesim.pipeline.spaces import IntegerRange

from shufflesim.accounting.model.mechanism import Composition
from shufflesim.accounting.bounds.balle import c1_gamma_terms
from shufflesim.accounting.numerics.invert import calibrate_near
from shufflesim.protocols._blanket import (
    ADVERSARY_OPTION,
    DELTA_OPTION,
    EPS_OPTION,
    GAMMA_MAX,
    VARIANT_OPTION,
    SEARCH_PROXY,
    BlanketLevel,
    check_common,
    integer_argmin,
    level_delta,
    level_eps,
    level_gamma,
    level_mechanism,
    run_mode,
    levels_delta,
    levels_eps,
)

__all__ = [
    "RECURSIVE_MODES",
    "levels_for",
    "RecursiveSumRandomiser",
    "RecursiveSumAnalyser",
    "RecursiveSumProtocol",
    "paper_messages",
    "generic_precisions",
    "recursive_worst_mse",
    "recursive_user_variances",
    "authors_mse_bound",
    "optimise_basic",
    "resolve_recursive",
]

RECURSIVE_MODES = ("paper", "bennett", "optimised", "tight")
BASIC_METHOD = {"paper": "balle", "bennett": "bennett", "optimised": "bennett"}


def levels_for(precisions: Sequence[int], gammas: Sequence[float]) -> list[BlanketLevel]:
    """The r blanket levels: {0..p_j−1} for j < r and {0..p_r} for the last (randomised-rounding) level."""
    r = len(precisions)
    return [BlanketLevel(int(p) - 1 if j < r - 1 else int(p), float(g)) for j, (p, g) in enumerate(zip(precisions, gammas))]


def _cumulative(precisions: Sequence[int]) -> list[float]:
    return [float(q) for q in np.cumprod(np.asarray(precisions, dtype=float))]


# ---------------------------------------------------------------------------------------------------
# Randomiser and analyser
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RecursiveSumRandomiser(LocalRandomiser):
    """Mixed-radix encoding, randomised rounding in the last digit, blanket RR per level (seed 004 Alg. 3)."""

    precisions: tuple[int, ...]
    gammas: tuple[float, ...]

    def __post_init__(self) -> None:
        levels = levels_for(self.precisions, self.gammas)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "messages_per_user", len(levels))
        object.__setattr__(self, "message_space", tuple(IntegerRange(0, lv.top) for lv in levels))
        object.__setattr__(self, "eps0", None)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        digits, t = mixed_radix_digits(x, self.precisions)
        digits.append(randomised_round(t, self.precisions[-1], rng))
        dt = grid_dtype(max(lv.top for lv in self.levels))
        out = np.empty((np.shape(x)[0], len(self.levels)), dtype=dt)
        for j, (lv, d) in enumerate(zip(self.levels, digits)):  # r levels, each vectorised over users
            out[:, j] = lv.randomise(d, rng)
        return out


class RecursiveSumAnalyser(Analyser):
    """Ŝ = Σ_j (1/Q_j)(Σ_i y_ij − nγ_j D_j/2)/(1 − γ_j), channel j = shuffler j (seed 004 Alg. 4)."""

    name = "recursive-debias"

    def __init__(self, precisions: Sequence[int], gammas: Sequence[float], n: int):
        self.levels = levels_for(precisions, gammas)
        self.q = _cumulative(precisions)
        self.n = n

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        if view.n_channels != len(self.levels):
            raise ParameterError(f"the recursive analyser needs {len(self.levels)} channels; got {view.n_channels}")
        return float(sum(lv.debias(view.integer_sum(j), self.n) / q for j, (lv, q) in enumerate(zip(self.levels, self.q))))


# ---------------------------------------------------------------------------------------------------
# Theory
# ---------------------------------------------------------------------------------------------------


def recursive_user_variances(x: np.ndarray, precisions: Sequence[int], gammas: Sequence[float]) -> np.ndarray:
    """Each user's exact contribution Σ_j Var(y_ij)/(Q_j²(1−γ_j)²) to the MSE of the sum."""
    x = np.asarray(x, dtype=float)
    levels = levels_for(precisions, gammas)
    q = _cumulative(precisions)
    digits, t = mixed_radix_digits(x, precisions)
    out = np.zeros_like(x)
    for lv, d, qj in zip(levels[:-1], digits, q[:-1]):
        out += lv.variance(d, 0.0) / (qj * qj * (1.0 - lv.gamma) ** 2)
    last, p = levels[-1], precisions[-1]
    out += last.variance(p * t, rounding_variance(t, p)) / (q[-1] ** 2 * (1.0 - last.gamma) ** 2)
    return out


def recursive_worst_mse(n: int, precisions: Sequence[int], gammas: Sequence[float]) -> float:
    """Exact worst-case MSE of the sum over inputs in [0, 1] (module docstring)."""
    levels = levels_for(precisions, gammas)
    q = _cumulative(precisions)
    total = sum(lv.worst_fixed_variance() / (qj * qj * (1.0 - lv.gamma) ** 2) for lv, qj in zip(levels[:-1], q[:-1]))
    last = levels[-1]
    total += last.worst_rounded_variance() / (q[-1] ** 2 * (1.0 - last.gamma) ** 2)
    return n * total


def authors_mse_bound(n: int, precisions: Sequence[int], gammas: Sequence[float]) -> float:
    """n/(4Q_r²) + Σ_j B_j/Q_j², B_j = n[γ_j(p_j²−1)/12 + (p_j−1)²γ_j(1−γ_j)/4]/(1−γ_j)² (docs/theory.md#summation-recursive)."""
    q = _cumulative(precisions)
    total = n / (4.0 * q[-1] ** 2)
    for p, g, qj in zip(precisions, gammas, q):
        b = n * (g * (p * p - 1) / 12.0 + (p - 1) ** 2 * g * (1.0 - g) / 4.0) / (1.0 - g) ** 2
        total += b / (qj * qj)
    return total


# ---------------------------------------------------------------------------------------------------
# Parameter rules
# ---------------------------------------------------------------------------------------------------


#: most levels (messages per user) recursive-sum accepts (the paper's rule gives r <= 4 for any n < 2^(3^4.5))
MAX_LEVELS = 64


def paper_messages(n: int) -> int:
    """r = round(log₃ log₂ n) (Theorem 4.2), at least 2."""
    return max(2, int(round(math.log(math.log2(n), 3)))) if n > 2 else 2


def closed_form_pmax(n: int, eps_j: float, delta_j: float) -> float:
    """Largest k with the closed-form γ = max(14k log(2/δ_j)/((n−1)ε_j²), 27k/((n−1)ε_j)) ≤ 1 (seed 001 Thm C.1)."""
    if delta_j <= 0.0:
        raise InfeasibleError(f"delta per level underflows to 0 (delta_j = {delta_j!r}): the closed-form rule needs "
                              "log(2/delta_j); use a delta above 1e-300")
    return 1.0 / max(c1_gamma_terms(n, 1, eps_j, delta_j))  # γ is linear in k (0 where the γ of k = 1 overflows)


def generic_precisions(n: int, eps: float, delta: float, r: int) -> tuple[int, ...]:
    """Theorem 4.2's rule as the authors' code evaluates it (module docstring); raises InfeasibleError when a
    precision falls below 2."""
    pmax = math.floor(closed_form_pmax(n, eps / r, delta / r))
    x = (3**r - 1) * n * eps * eps / r**3
    ps = tuple(min(math.ceil(x ** (3.0 ** (t - r - 1))), pmax) for t in range(1, r + 1))
    if min(ps) < 2:
        raise InfeasibleError(
            f"the generic rule gives precisions {list(ps)} (p_max = {pmax}) for n={n}, eps={eps:.6g}, "
            f"delta={delta:.3g}, r={r}: every precision must be >= 2; use fewer messages or a larger n, eps"
        )
    return ps


def _level_values(precisions: Sequence[int]) -> list[int]:
    r = len(precisions)
    return [int(p) if j < r - 1 else int(p) + 1 for j, p in enumerate(precisions)]


def level_gammas(method: str, n: int, precisions, eps_split, delta_j: float, variant: str) -> tuple[float, ...]:
    """The blanket γ of each level (:func:`~shufflesim.protocols._blanket.level_gamma` by ``method``) for the
    given precisions and per-level ε split, each level at δ_j."""
    return tuple(level_gamma(method, n, v, float(e), delta_j, variant=variant)
                 for v, e in zip(_level_values(precisions), eps_split))


OBJECTIVES = {"exact": lambda n, ps, gs: recursive_worst_mse(n, ps, gs),
              "authors-bound": lambda n, ps, gs: authors_mse_bound(n, ps, gs)}


def _split_objective(n, precisions, eps_split, delta_j, variant, objective: str = "exact") -> float:
    if min(eps_split) <= 0:
        return math.inf
    try:
        gs = level_gammas("bennett", n, precisions, eps_split, delta_j, variant)
    except InfeasibleError:
        return math.inf
    return OBJECTIVES[objective](n, precisions, gs)


def _softmax(z: np.ndarray) -> np.ndarray:
    w = np.exp(z - z.max())
    return w / w.sum()


def _optimise_split(n, eps, delta_j, precisions, variant, start: Sequence[float],
                    objective: str = "exact") -> tuple[tuple[float, ...], float]:
    r = len(precisions)
    if r == 2:
        f = lambda w: _split_objective(n, precisions, (w * eps, (1.0 - w) * eps), delta_j, variant,  # noqa: E731
                                       objective)
        res = optimize.minimize_scalar(f, bounds=(1e-4, 1.0 - 1e-4), method="bounded", options={"xatol": 1e-5})
        cand = [(res.fun, (res.x * eps, (1.0 - res.x) * eps))]
        w0 = start[0] / eps
        cand.append((f(w0), tuple(start)))
        val, split = min(cand, key=lambda c: c[0])
        return tuple(float(s) for s in split), float(val)
    z0 = np.log(np.asarray(start, dtype=float) / eps)
    g = lambda z: _split_objective(n, precisions, tuple(_softmax(np.r_[0.0, z]) * eps), delta_j, variant,  # noqa: E731
                                   objective)
    res = optimize.minimize(g, (z0 - z0[0])[1:], method="Nelder-Mead",
                            options={"xatol": 1e-4, "fatol": 1e-9, "maxiter": 400})
    split = tuple(float(s) for s in _softmax(np.r_[0.0, res.x]) * eps)
    v0 = _split_objective(n, precisions, tuple(start), delta_j, variant, objective)
    if v0 <= res.fun:
        return tuple(float(s) for s in start), float(v0)
    return split, float(res.fun)


def _vector_level_cost(n: int, p: int, last: bool, g: np.ndarray, objective: str) -> np.ndarray:
    """Level cost at precision p and blanket γ (array), before division by Q_{j−1}²: n·W/(p²(1−γ)²) for
    the exact worst case, n[γ(p²−1)/12 + (p−1)²γ(1−γ)/4]/(p²(1−γ)²) for the authors' bound."""
    g = np.asarray(g, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective == "authors-bound":
            w = g * (p * p - 1) / 12.0 + (p - 1) ** 2 * g * (1.0 - g) / 4.0
        else:
            top = p if last else p - 1
            vu = ((top + 1) ** 2 - 1) / 12.0
            if last:
                s = np.clip((1.0 - g * top) / (2.0 * (1.0 - g)), 0.0, 1.0)
                w = g * vu + g * (1.0 - g) * (s - top / 2.0) ** 2 + (1.0 - g) * s * (1.0 - s)
            else:
                w = g * vu + g * (1.0 - g) * top * top / 4.0
        out = n * w / (p * p * (1.0 - g) ** 2)
    return np.where(g < GAMMA_MAX, out, np.inf)


def _value_grid(vmax: int) -> np.ndarray:
    """Level sizes at which γ is tabulated: every integer up to 16, then a geometric grid (ratio 1.2)."""
    vs = set(range(2, 17))
    v = 16.0
    while v < vmax:
        v *= 1.2
        vs.add(min(int(round(v)), vmax))
    return np.array(sorted(vs), dtype=float)


def _gamma_surface(n, eps_grid, delta_j, variant, vgrid) -> np.ndarray:
    """log γ(v, ε) of the Bennett calibration on the grid (0, i.e. γ = 1, where nothing smaller certifies)."""
    out = np.zeros((vgrid.size, eps_grid.size))
    for a, v in enumerate(vgrid):  # ~40 sizes x 47 epsilons, each one (memoised) calibration
        for b, e in enumerate(eps_grid):
            try:
                out[a, b] = math.log(level_gamma("bennett", n, int(v), float(e), delta_j, variant=variant))
            except InfeasibleError:
                out[a, b] = 0.0
    return out


def _compositions(total: int, parts: int):
    """All tuples of ``parts`` positive integers summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(1, total - parts + 2):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def _minplus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """res[u] = min_{u1 + u2 = u} a[u1] + b[u2] over units 1..L (arrays indexed u − 1)."""
    L = a.size
    res = np.full(L, np.inf)
    for i in range(L - 1):  # L ~ 47 shifts, each vectorised
        res[i + 1:] = np.minimum(res[i + 1:], a[i] + b[: L - i - 1])
    return res


def _interp_rows(vgrid: np.ndarray, surface: np.ndarray, values: np.ndarray) -> np.ndarray:
    """γ̃(v, ·) by linear interpolation of log γ in log v (exact at grid sizes)."""
    lv, lg = np.log(vgrid), np.log(values.astype(float))
    idx = np.clip(np.searchsorted(lv, lg) - 1, 0, vgrid.size - 2)
    t = ((lg - lv[idx]) / (lv[idx + 1] - lv[idx]))[:, None]
    return np.exp(np.minimum((1.0 - t) * surface[idx] + t * surface[idx + 1], 0.0))


@lru_cache(maxsize=64)
def optimise_basic(n: int, eps: float, delta: float, r: int, variant: str,
                   precisions: tuple[int, ...] | None = None,
                   objective: str = "exact") -> tuple[tuple[int, ...], tuple[float, ...], float]:
    """The ``optimised`` search (module docstring): returns (precisions, eps_split, objective value).

    Stage 1 (surrogate): γ(v, ε_j) of the Bennett bound is tabulated for level sizes v on a grid (every
    integer to 16, then ratio 1.2) and per-level ε on the grid ε·i/48, and interpolated in (log v) between
    sizes (γ is close to linear in v); the objective is then minimised exhaustively over the grid splits and
    over all precisions with p_j ≤ 64 for r = 2 intermediate levels (Q_{r−1} ≤ 256 for r ≥ 3) and
    p_r ≤ max(128, 8⌊n^{1/3}⌋).  Stage 2 (exact): the 4 best precision tuples get their split optimised
    with exact calibrations (bounded Brent / Nelder–Mead, :func:`_optimise_split`) and the best is returned.
    With ``precisions`` given only stage 2 runs.  ``objective`` "exact" minimises the exact worst-case MSE;
    "authors-bound" the expression of :func:`authors_mse_bound` (to reproduce Table 3).
    """
    delta_j = delta / r
    if precisions is not None:
        split, best = _optimise_split(n, eps, delta_j, list(precisions), variant, (eps / r,) * r, objective)
        if not math.isfinite(best):
            raise InfeasibleError(f"optimised: no eps split certifies ({eps:.6g}, {delta:.3g})-DP with n={n} and "
                                  f"precisions {list(precisions)} by the Bennett bound")
        return tuple(precisions), split, best
    G = 48
    egrid = eps * np.arange(1, G) / G
    p_last_max = max(128, 8 * round(n ** (1.0 / 3.0)))
    mid_max = 64 if r == 2 else 256
    vgrid = _value_grid(max(p_last_max + 1, mid_max))
    surface = _gamma_surface(n, egrid, delta_j, variant, vgrid)
    mids = np.arange(2, mid_max + 1)
    lasts = np.arange(2, p_last_max + 1)
    u_mid = np.array([_vector_level_cost(n, int(p), False, g, objective)
                      for p, g in zip(mids, _interp_rows(vgrid, surface, mids))])
    u_last = np.array([_vector_level_cost(n, int(p), True, g, objective)
                       for p, g in zip(lasts, _interp_rows(vgrid, surface, lasts + 1))])
    units = np.arange(1, G)  # units of eps/G used by the first r - 1 levels

    cands: list[tuple[float, tuple[int, ...]]] = []  # (surrogate value, precisions)
    # the last level gets the remaining G - u units: its cost table in that order, computed once (not per prefix)
    u_rest = np.ascontiguousarray(u_last[:, G - units - 1])
    rest_min = float(np.min(u_rest)) if u_rest.size else math.inf
    kept: list[float] = []  # the 4 smallest surrogate values so far (only the 4 best candidates are ever used)

    def scan(prefix: tuple[int, ...], q: float, head: np.ndarray) -> None:
        # a prefix whose lower bound (its cheapest head + the cheapest last level) exceeds the 4th best value
        # found so far contributes no candidate that is used: skipped (the same 4 best as the full scan)
        if len(kept) >= 4 and float(np.min(head)) + rest_min / (q * q) > kept[3]:
            return
        tot = head[None, :] + u_rest / (q * q)
        if objective == "authors-bound":
            tot = tot + (n / (4.0 * (q * lasts) ** 2))[:, None]
        vals = tot.min(axis=1)
        for k in np.argsort(vals)[:4]:
            if np.isfinite(vals[k]):
                cands.append((float(vals[k]), prefix + (int(lasts[k]),)))
                kept.append(float(vals[k]))
        kept.sort()
        del kept[4:]

    def heads(level: int, prefix: tuple[int, ...], q: float, acc: np.ndarray | None) -> None:
        if level == r - 1:
            scan(prefix, q, acc)
            return
        for a, p in enumerate(mids):
            if q * p > mid_max:
                break
            cost = u_mid[a] / (q * q)
            heads(level + 1, prefix + (int(p),), q * p, cost if acc is None else _minplus(acc, cost))

    heads(0, (), 1.0, None)
    if not cands:
        raise InfeasibleError(f"optimised: no precisions/eps split certify ({eps:.6g}, {delta:.3g})-DP with n={n} "
                              f"and r={r} messages by the Bennett bound")
    cands.sort(key=lambda c: c[0])

    def grid_split(ps: tuple[int, ...]) -> tuple[float, ...]:
        # the surrogate's best split for these precisions (all compositions of G units), as a start
        q = np.cumprod(np.asarray(ps, dtype=float))
        rows = [u_mid[p - 2] / (qp * qp) for p, qp in zip(ps[:-1], np.r_[1.0, q[:-2]])]
        rows.append(u_last[ps[-1] - 2] / q[-2] ** 2)
        best_v, best_u = math.inf, None
        for us in _compositions(G, r):
            v = sum(row[u - 1] for row, u in zip(rows, us))
            if v < best_v:
                best_v, best_u = v, us
        return tuple(eps * u / G for u in best_u) if best_u else (eps / r,) * r

    best: tuple[float, tuple[int, ...], tuple[float, ...]] = (math.inf, (), ())
    seen = set()
    for val, ps in cands:
        if ps in seen:
            continue
        seen.add(ps)
        split, exact = _optimise_split(n, eps, delta_j, list(ps), variant, grid_split(ps), objective)
        if exact < best[0]:
            best = (exact, ps, split)
        if len(seen) >= 4:
            break
    if not math.isfinite(best[0]):
        raise InfeasibleError(f"optimised: no precisions/eps split certify ({eps:.6g}, {delta:.3g})-DP with n={n} "
                              f"and r={r} messages by the Bennett bound")
    return best[1], best[2], best[0]


def composed_delta(n: int, precisions, gammas, eps: float, adversary: str) -> float:
    """Certified δ(ε) of the heterogeneous composition of the r levels (tight accountant); memoised (the final
    certification of a calibrated ν re-asks the value its calibration evaluated)."""
    return _composed_delta(int(n), tuple(int(p) for p in precisions), tuple(float(g) for g in gammas), float(eps),
                           str(adversary))


@lru_cache(maxsize=256)
def _composed_delta(n: int, precisions: tuple[int, ...], gammas: tuple[float, ...], eps: float,
                    adversary: str) -> float:
    return levels_delta(n, _level_values(precisions), gammas, eps, adversary)


#: seconds (CPU, 2-core machine) of one composed accounting per level at n <= 1e6, growing by this much per
#: decade of n above (measured: the whole tight search 4-5 s at n = 1e4-1e6, 8.5 s at 1e7, 9 s at 1e8, 15 s at 1e9),
#: and the evaluations a tight search makes (3 calibrations of ~4 each, :func:`_calibrate_nu`, and the
#: optimised search's share): the estimate announced before the search (progress with an ETA, issue 21)
COMPOSED_SECONDS_PER_LEVEL = 0.12
TIGHT_SEARCH_EVALUATIONS = 13


def tight_search_estimate(n: int, r: int, adversary: str) -> float:
    """Estimated seconds of the ``tight`` search (:data:`TIGHT_SEARCH_EVALUATIONS` composed accountings of r
    levels; the weak adversary's final calibration ~10x dearer per evaluation, up to 8 of them)."""
    per = COMPOSED_SECONDS_PER_LEVEL * r * (1.0 + max(0.0, math.log10(max(n, 1)) - 6.0))
    sec = TIGHT_SEARCH_EVALUATIONS * per
    if adversary in SEARCH_PROXY:
        sec += 8 * 10 * per
    return sec


def _level_worst(n: int, precisions, j: int, gamma: float) -> float:
    """Level j's exact contribution to the worst-case MSE at blanket γ (module docstring)."""
    r = len(precisions)
    q = float(np.prod(np.asarray(precisions[: j + 1], dtype=float)))
    lv = levels_for(precisions, (gamma,) * r)[j]
    w = lv.worst_rounded_variance() if j == r - 1 else lv.worst_fixed_variance()
    return n * w / (q * q * (1.0 - gamma) ** 2)


def _surrogate_gammas(n: int, precisions, nu: float) -> tuple[float, ...]:
    """γ_j(ν) = argmin_γ MSE_j(γ) + ν·v_j/γ, v_j the level's number of values (module docstring, ``tight``)."""
    out = []
    for j, v in enumerate(_level_values(precisions)):
        f = lambda lg, j=j, v=v: _level_worst(n, precisions, j, math.exp(lg)) + nu * v * math.exp(-lg)  # noqa: E731
        res = optimize.minimize_scalar(f, bounds=(math.log(1e-12), math.log(GAMMA_MAX)), method="bounded",
                                       options={"xatol": 1e-7})
        out.append(min(math.exp(res.x), GAMMA_MAX))
    return tuple(out)


def _surrogate_cost(precisions, gammas) -> float:
    """Σ_j v_j/γ_j: the surrogate privacy cost (composed loss variance ∝ Σ v_j/(nγ_j))."""
    return float(sum(v / g for v, g in zip(_level_values(precisions), gammas)))


def _nu_scale(n: int, precisions, gammas) -> float:
    """A ν at which every γ_j(ν) is at least the given γ_j (so (ν, precisions) is at least as private)."""
    nus = []
    for j, (v, g) in enumerate(zip(_level_values(precisions), gammas)):
        h = g * 1e-4
        d = (_level_worst(n, precisions, j, g + h) - _level_worst(n, precisions, j, g - h)) / (2 * h)
        nus.append(d * g * g / v)
    return 1.5 * max(nus)


def _calibrate_nu(n, precisions, eps, delta, adversary, nu_good: float, lo_factor: float = 1e-3,
                  max_evals: int = 40, guess: float | None = None) -> tuple[float, tuple[float, ...]]:
    """Smallest ν (safe side, to rtol 3e-3) whose γ(ν) the tight composition certifies, searched on
    [lo_factor·nu_good, nu_good] with at most ``max_evals`` evaluations per bracket (the answer is always a
    certified ν); the bracket is widened when the guess is wrong.  The evaluations are placed by
    :func:`~shufflesim.accounting.numerics.invert.calibrate_near` (secant steps on log(−log δ) in log ν, starting from ``guess``
    and a point 1% below it, else from 0.05 and 0.03 nu_good; every evaluation is cached across brackets):
    ~4-6 composed accountings instead of ~15 per calibration, each 1-4 s at n = 1e9."""
    f = lambda nu: composed_delta(n, precisions, _surrogate_gammas(n, precisions, nu), eps, adversary)  # noqa: E731
    known: dict[float, float] = {}
    # nu_good certifies by a wide margin (the Bennett gammas; the root was ~0.03-0.04 nu_good at n = 1e6-1e9) and
    # an evaluation there costs ~10x one near the root: the search starts below it
    guesses = (guess, 0.99 * guess) if guess is not None else (0.05 * nu_good, 0.03 * nu_good)
    lo = nu_good * lo_factor
    for _ in range(12):
        try:
            cal = calibrate_near(f, delta, guesses, lo, nu_good, rtol=3e-3, max_evals=max_evals, known=known)
        except InfeasibleError:
            nu_good, lo = nu_good * 1e3, nu_good
            continue
        if cal.x_unsafe is None:  # the whole bracket certifies: look lower
            nu_good, lo = lo, lo * lo_factor
            continue
        return cal.x, _surrogate_gammas(n, precisions, cal.x)
    raise InfeasibleError(f"tight: could not bracket the blanket probabilities for precisions {list(precisions)}")


def _surrogate_nu(n, precisions, budget: float) -> float | None:
    """The smallest ν with Σ_j v_j/γ_j(ν) ≤ budget (bisection on ν); None when infeasible."""
    lo, hi = 1e-12, 1e12
    if _surrogate_cost(precisions, _surrogate_gammas(n, precisions, hi)) > budget:
        return None
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if _surrogate_cost(precisions, _surrogate_gammas(n, precisions, mid)) > budget:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-6:
            break
    return hi


def _surrogate_best(n, precisions, budget: float) -> float:
    """min Σ_j MSE_j(γ_j) subject to Σ_j v_j/γ_j ≤ budget (bisection on ν); inf when infeasible."""
    nu = _surrogate_nu(n, precisions, budget)
    if nu is None:
        return math.inf
    gs = _surrogate_gammas(n, precisions, nu)
    return recursive_worst_mse(n, precisions, gs) if max(gs) < GAMMA_MAX else math.inf


@lru_cache(maxsize=32)
def optimise_tight(n: int, eps: float, delta: float, r: int, variant: str, adversary: str,
                   precisions: tuple[int, ...] | None = None) -> tuple[tuple[int, ...], tuple[float, ...], float]:
    """The ``tight`` search (module docstring): returns (precisions, gammas, worst-case MSE).

    For an adversary with a cheaper proxy (:data:`SEARCH_PROXY`: weak → strong, whose δ bounds the weak one)
    the whole search runs on the proxy, and only the final ν is calibrated on the adversary's own pairs,
    bracketed above by the proxy's ν (which certifies the adversary too).
    """
    proxy = SEARCH_PROXY.get(adversary)
    if proxy is not None:
        ps, _, _, nu_p = _search_tight(n, eps, delta, r, variant, proxy, precisions)
        # the proxy's nu certifies the weak adversary too; the weak one was 0.97x it at n = 1e5 (r = 3), so a
        # bracket of a factor 1.25 (widened by that factor while all of it certifies) and at most 8 evaluations
        # of the weak pairs (each ~2 s CPU at n = 1e5) land within 0.2 % of the calibrated nu there
        _, gs = _calibrate_nu(n, ps, eps, delta, adversary, nu_p, lo_factor=0.8, max_evals=8, guess=nu_p)
        if max(gs) >= GAMMA_MAX:
            raise InfeasibleError(f"tight: no gammas < 1 certify ({eps:.6g}, {delta:.3g})-DP with n={n}, r={r}")
        return tuple(ps), tuple(float(g) for g in gs), recursive_worst_mse(n, ps, gs)
    ps, gs, val, _ = _search_tight(n, eps, delta, r, variant, adversary, precisions)
    return ps, gs, val


@lru_cache(maxsize=32)
def _search_tight(n: int, eps: float, delta: float, r: int, variant: str, adversary: str,
                  precisions: tuple[int, ...] | None) -> tuple[tuple[int, ...], tuple[float, ...], float, float]:
    """The search of :func:`optimise_tight` on ``adversary``'s pairs; also returns the calibrated ν."""
    ps, split, _ = optimise_basic(n, eps, delta, r, variant, precisions)
    base = level_gammas("bennett", n, ps, split, delta / r, variant)
    nu, gs = _calibrate_nu(n, ps, eps, delta, adversary, _nu_scale(n, ps, base))
    best, best_nu = (recursive_worst_mse(n, ps, gs), tuple(ps), gs), nu
    if precisions is None:
        for _ in range(2):
            budget = _surrogate_cost(best[1], best[2])
            cand = list(best[1])
            for j in range(r):  # coordinate search on the surrogate (no accountant calls)
                def f(p: int, j=j) -> float:
                    trial = list(cand)
                    trial[j] = p
                    return _surrogate_best(n, trial, budget)

                cand[j], _ = integer_argmin(f, 2, max(64, 8 * cand[j]))
            cand_t = tuple(cand)
            if cand_t == best[1]:
                break
            # started at the nu of the surrogate's budget for these precisions (that of the calibrated ones)
            nu_c, gs_c = _calibrate_nu(n, cand_t, eps, delta, adversary, 4.0 * nu,
                                       guess=_surrogate_nu(n, cand_t, budget))
            val = recursive_worst_mse(n, cand_t, gs_c)
            if val >= best[0]:
                break
            best, best_nu = (val, cand_t, gs_c), nu_c
    if max(best[2]) >= GAMMA_MAX:
        raise InfeasibleError(f"tight: no gammas < 1 certify ({eps:.6g}, {delta:.3g})-DP with n={n}, r={r}")
    return best[1], tuple(float(g) for g in best[2]), best[0], best_nu


# ---------------------------------------------------------------------------------------------------
# Resolution and the protocol
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecursiveParams:
    precisions: tuple[int, ...]
    gammas: tuple[float, ...]
    eps_split: tuple[float, ...] | None
    eps: float
    delta: float
    method: str
    notes: tuple[str, ...]


@lru_cache(maxsize=128)
def resolve_recursive(n: int, eps: float | None, delta: float, r: int, precisions: tuple[int, ...] | None,
                      gammas: tuple[float, ...] | None, eps_split: tuple[float, ...] | None, mode: str,
                      adversary: str, variant: str) -> RecursiveParams:
    """Choose and certify the recursive protocol's parameters for ``mode`` (module docstring); memoised."""
    delta_j = delta / r
    if mode == "tight":
        note = f"heterogeneous FFT composition of {r} shuffled k-RR pairs (adversary={adversary})"
        if gammas is None:
            from shufflesim.core.progress import stage

            with stage(f"recursive-sum: tight calibration of {r} levels (n={n})", tight_search_estimate(n, r, adversary)):
                ps, gs, _ = optimise_tight(n, eps, delta, r, variant, adversary, precisions)
            note2 = ("gammas from the Lagrangian surrogate, calibrated on the composed delta; precisions from the "
                     "optimised search, refined on the surrogate")
            if adversary in SEARCH_PROXY:
                note2 += (f"; the search ran on the {SEARCH_PROXY[adversary]} pairs (an upper bound on the "
                          f"{adversary} adversary's delta, far cheaper) and only the final gammas on the {adversary} pairs")
        else:
            ps, gs, note2 = precisions, gammas, "given gammas certified"
        if eps is not None:
            d = composed_delta(n, ps, gs, eps, adversary)
            return RecursiveParams(ps, gs, None, eps, d, "tight", (note, note2))
        e = levels_eps(n, _level_values(ps), gs, delta, adversary)
        return RecursiveParams(ps, gs, None, e, delta, "tight", (note, note2))

    method = BASIC_METHOD[mode]
    notes = [f"basic composition over {r} levels of " + ("Balle et al.'s closed form (seed 001 Thm C.1)"
                                                        if method == "balle" else f"the Bennett bound (variant={variant})")]
    if gammas is not None:
        ps = precisions
        vals = _level_values(ps)
        if eps_split is not None:
            ds = [level_delta(method, n, v, g, e, variant=variant) for v, g, e in zip(vals, gammas, eps_split)]
            return RecursiveParams(ps, gammas, eps_split, float(sum(eps_split)), float(sum(ds)), method,
                                   tuple(notes + ["delta certified per level at the given eps split"]))
        es = tuple(level_eps(method, n, v, g, delta_j, variant=variant) for v, g in zip(vals, gammas))
        return RecursiveParams(ps, gammas, es, float(sum(es)), delta, method,
                               tuple(notes + ["eps certified per level at delta/r"]))
    if mode == "optimised" and eps_split is None:
        ps, split, _ = optimise_basic(n, eps, delta, r, variant, precisions)
        notes.append("precisions and eps split by the optimised search (exact worst-case MSE)")
    else:
        ps = precisions if precisions is not None else generic_precisions(n, eps, delta, r)
        split = eps_split if eps_split is not None else (eps / r,) * r
        if precisions is None:
            notes.append("precisions from the generic rule of Theorem 4.2")
    gs = level_gammas(method, n, ps, split, delta_j, variant)
    ds = [level_delta(method, n, v, g, e, variant=variant) for v, g, e in zip(_level_values(ps), gs, split)]
    return RecursiveParams(tuple(ps), gs, tuple(float(s) for s in split), float(sum(split)), float(sum(ds)), method,
                           tuple(notes))


@register
class RecursiveSumProtocol(Protocol):
    """The r-message recursive protocol (one parallel shuffler per message index)."""

    name = "recursive-sum"
    summary = "recursive multi-message real sum: mixed-radix digits, blanket RR per level, parallel shufflers"
    example = "--eps 1 --messages 2"
    data_kind = "real"
    options = (
        EPS_OPTION,
        DELTA_OPTION,
        Option("messages", int, "number of messages r >= 2 (default: round(log3 log2 n), at least 2)", metavar="R"),
        Option("precisions", int_list, "comma-separated precisions p_1,...,p_r >= 2 (default: by --mode)",
               metavar="P1,P2,..."),
        Option("gammas", float_list, "comma-separated blanket probabilities in (0, 1) (default: calibrated)",
               metavar="G1,G2,..."),
        Option("eps_split", float_list, "comma-separated per-level epsilons, summing to --eps (basic composition)",
               metavar="E1,E2,..."),
        Option("mode", str, "parameter rule: auto (the certified mode with the smallest worst-case MSE), paper "
               "(closed form), bennett, "
               "optimised, tight", default="auto", choices=("auto",) + RECURSIVE_MODES),
        ADVERSARY_OPTION,
        VARIANT_OPTION,
    )

    @classmethod
    def create(cls, n: int, *, eps=None, delta=None, messages=None, precisions=None, gammas=None, eps_split=None,
               mode="auto", adversary="shuffled", bennett_variant="fixed") -> "RecursiveSumProtocol":
        """Validate and resolve the parameters; ``mode="auto"`` (module docstring) says which mode ran."""
        proto, why = run_mode(lambda m: cls._create(n, eps, delta, messages, precisions, gammas, eps_split, m,
                                                    adversary, bennett_variant), mode, RECURSIVE_MODES)
        if why is not None:
            proto.params["mode_reason"] = why
        return proto

    @classmethod
    def _create(cls, n, eps, delta, messages, precisions, gammas, eps_split, mode, adversary,
                bennett_variant) -> "RecursiveSumProtocol":
        n, eps, delta = check_common(n, eps, delta, "paper", adversary, bennett_variant)
        lists = {"precisions": precisions, "gammas": gammas, "eps_split": eps_split}
        lengths = {len(v) for v in lists.values() if v is not None}
        if messages is not None:
            messages = check_int("messages", messages, minimum=2)
            lengths.add(messages)
        if len(lengths) > 1:
            raise ParameterError("messages, precisions, gammas and eps_split must agree on the number of levels r")
        r = lengths.pop() if lengths else paper_messages(n)
        if r > MAX_LEVELS:
            raise ParameterError(f"recursive-sum: at most {MAX_LEVELS} messages (levels) per user: each level is "
                                 f"calibrated and simulated separately; got {r}")
        if r < 2:
            raise ParameterError(f"recursive-sum needs r >= 2 messages; got {r} (use blanket-sum for one message)")
        if precisions is not None:
            precisions = tuple(check_int("precisions", p, minimum=2) for p in precisions)
        if gammas is not None:
            gammas = tuple(check_real("gammas", g, low=0.0, high=1.0, low_open=True, high_open=True) for g in gammas)
            if precisions is None:
                raise ParameterError("give --precisions together with --gammas")
        if eps_split is not None:
            eps_split = tuple(check_real("eps_split", e, low=0.0, low_open=True) for e in eps_split)
            if mode == "tight":
                raise ParameterError("eps_split is for basic composition; the tight mode composes the levels' PLDs")
            if eps is not None and not math.isclose(sum(eps_split), eps, rel_tol=1e-9):
                raise ParameterError(f"eps_split must sum to eps={eps:g}; got {sum(eps_split):g}")
            eps = float(sum(eps_split)) if eps is None else eps
        if eps is None and gammas is None:
            raise ParameterError("recursive-sum needs --eps (central epsilon > 0) or explicit --precisions and --gammas")
        rp = resolve_recursive(n, eps, delta, r, precisions, gammas, eps_split, mode, adversary, bennett_variant)
        params: dict[str, Any] = {
            "messages": r, "precisions": list(rp.precisions), "gammas": list(rp.gammas),
            "eps_split": list(rp.eps_split) if rp.eps_split is not None else None,
            "eps": rp.eps, "delta": rp.delta, "mode": mode,
        }
        if mode == "tight":
            params["adversary"] = adversary
        if mode in ("bennett", "optimised"):
            params["bennett_variant"] = bennett_variant
        proto = cls(n=n, randomiser=RecursiveSumRandomiser(rp.precisions, rp.gammas), shuffler=ParallelShufflers(),
                    analyser=RecursiveSumAnalyser(rp.precisions, rp.gammas, n), params=params)
        proto._privacy = PrivacyGuarantee(rp.eps, rp.delta, rp.method if mode == "tight" else
                                          f"basic-composition/{rp.method}", rp.notes)
        return proto

    @property
    def precisions(self) -> tuple[int, ...]:
        return tuple(self.params["precisions"])

    @property
    def gammas(self) -> tuple[float, ...]:
        return tuple(self.params["gammas"])

    def truth(self, data: np.ndarray) -> float:
        return float(np.sum(data))

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: per level, the histogram of the users' digits (deterministic digits grouped by input
        value; the last digit's randomised rounding as binomials), then that level's blanket RR of the
        multiset (:func:`~shufflesim.pipeline.fast.rr_histogram`).  The levels go through separate
        shufflers and the analyser needs only each channel's total."""
        from shufflesim.pipeline.fast import rounded_histogram, rr_histogram

        an = self.analyser
        precisions = self.randomiser.precisions
        digits, t = mixed_radix_digits(summary.values, precisions)
        hists = [np.bincount(d.astype(np.int64), weights=summary.counts, minlength=lv.top + 1).astype(np.int64)
                 for d, lv in zip(digits, an.levels[:-1])]
        hists.append(rounded_histogram(t, summary.counts, precisions[-1], rng))
        est = 0.0
        for lv, qj, h in zip(an.levels, an.q, hists):
            rep = rr_histogram(h, lv.gamma, lv.top + 1, rng)
            est += lv.debias(int(np.dot(np.arange(lv.top + 1, dtype=np.int64), rep)), self.n) / qj
        return float(est)

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``): each
        channel's total drawn with the same law (:func:`~shufflesim.pipeline.fast.blanket_total_batch`;
        deterministic digits, then the last level's randomised rounding), levels independent.

        What the law needs of the data: the histogram of each level's digit and, for the last level, the
        multiset of its fractional parts (binomial round-ups per distinct value): the multiset of inputs,
        i.e. for data on a grid its histogram there; Σx and Σx² do not suffice."""
        from shufflesim.pipeline.fast import blanket_total_batch, rounded_parts, scalar_columns

        an = self.analyser
        precisions = self.randomiser.precisions
        digits, t = mixed_radix_digits(summary.values, precisions)
        lo_last, frac_last = rounded_parts(t, precisions[-1])
        inputs = [(d, None) for d in digits] + [(lo_last, frac_last)]
        est = np.zeros(size)
        for lv, qj, (lo, frac) in zip(an.levels, an.q, inputs):
            total = blanket_total_batch(lo.astype(np.int64), frac, summary.counts, lv.top, lv.gamma, rng, size)
            est += lv.debias(total, self.n) / qj
        return scalar_columns(est, truth)

    def mse_expected(self, data: np.ndarray) -> float:
        return float(np.sum(recursive_user_variances(data, self.precisions, self.gammas)))

    def truth_from_summary(self, summary) -> float:
        """Σ x from the data's multiset (data given as counts, issue 21)."""
        from shufflesim.pipeline.fast import summary_total

        return summary_total(summary)

    def mse_expected_summary(self, summary) -> float:
        """:meth:`mse_expected` from the data's multiset: Σ_v c_v·(user variance at v) (issue 21)."""
        from shufflesim.pipeline.fast import summary_dot

        return summary_dot(summary, recursive_user_variances(summary.values, self.precisions, self.gammas))

    def mse_worst(self) -> float:
        return recursive_worst_mse(self.n, self.precisions, self.gammas)

    def mse_bound(self) -> float:
        return authors_mse_bound(self.n, self.precisions, self.gammas)

    def mechanism(self) -> Composition:
        """The r levels, each shuffled (p_j-ary or (p_r+1)-ary) randomised response with its γ_j, composed
        (one parallel shuffler per level; relation: ``adversary``, ``shuffled`` by default)."""
        adv = self.params.get("adversary", "shuffled")
        return Composition(tuple((level_mechanism(self.n, int(v), float(g), adv), 1)
                                 for v, g in zip(_level_values(self.precisions), self.gammas)))

    def privacy(self) -> PrivacyGuarantee:
        return self._privacy
