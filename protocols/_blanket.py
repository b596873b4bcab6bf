"""What the blanket summation protocols share: one blanket level, its privacy by any method, common options.

A *blanket level* is (top+1)-ary randomised response over {0, …, top} with blanket probability γ — the
single-message protocol's report and each level of the recursive protocol (Balle, Bell, Gascón, Nissim,
"Private summation in the multi-message shuffle model", CCS 2020, arXiv:2002.00817, §4;
docs/theory.md#summation-blanket).  Its privacy is that of shuffled k-RR with k = top + 1 values, so it is
accounted through the mechanism description :class:`shufflesim.mechanisms.krr.KRR` and
:func:`shufflesim.accounting.account.account` — there is no second accounting front end here: the
helpers below only turn a method's answer into a number (raising where the method does not apply) and
calibrate γ with the one safe-side calibrator :func:`shufflesim.accounting.numerics.invert.calibrate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from shufflesim.accounting.account import account
from shufflesim.accounting.bounds.balle import MIN_EPS as BOUNDS_MIN_EPS
from shufflesim.accounting.bounds.balle import bennett_gamma_near
from shufflesim.accounting.numerics.invert import calibrate_near
from shufflesim.accounting.model.mechanism import Composition, Relation
from shufflesim.core.checks import EPS_PRECISION, Precision, check_int, check_real
from shufflesim.errors import InfeasibleError, NotApplicableError, ParameterError
from shufflesim.mechanisms.krr import KRR
from shufflesim.maths.rounding import grid_dtype
from shufflesim.pipeline.options import Option

MODES = ("paper", "bennett", "tight")
#: ``auto``: of the modes that certify the target, the one with the smallest exact worst-case MSE (run_mode)
AUTO = "auto"
#: the views a level can be certified for; ``shuffled`` (the released reports) first: the default
ADVERSARIES = (Relation.SHUFFLED.value,) + tuple(r.value for r in Relation if r is not Relation.SHUFFLED)
BENNETT_VARIANTS = ("fixed", "original-2019")
#: a calibrated γ this close to 1 means the target cannot be met with a usable (debiasable) blanket
GAMMA_MAX = 1.0 - 1e-9
#: adversary -> a cheaper one whose delta is an upper bound on it (it sees more: docs/theory.md#adversaries).
#: Searches over precisions are steered by the proxy and only the final blanket probabilities are calibrated
#: on the adversary's own pair (the weak pair costs ~10-100x the strong one at n >= 1e4).
SEARCH_PROXY = {Relation.WEAK.value: Relation.STRONG.value}
#: the PLD accountant's knobs for calibration: only the certified upper bound matters, its width only
#: affects optimality
TIGHT_NUMERICS = {"target_accuracy": None, "max_grid_size": 2**20}


@dataclass(frozen=True)
class BlanketLevel:
    """Blanket randomised response over {0, …, top} with probability ``gamma`` (docs/theory.md#randomised-response, docs/theory.md#summation-blanket)."""

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


def level_mechanism(n: int, values: int, gamma: float, adversary: Relation | str = Relation.SHUFFLED) -> KRR:
    """A blanket level as a mechanism description: shuffled ``values``-ary RR with blanket γ."""
    return KRR(n, values, gamma, Relation.parse(adversary))


@dataclass(frozen=True)
class _UpperOnlyKRR(KRR):
    """The level's description for the certified *upper* ends only (:func:`level_delta`, :func:`level_eps` and
    the calibrations read nothing else): the same pair and upper end as :class:`KRR`, without the mechanism-level
    lower end (:meth:`KRR.genuine_lower`, a second PLD of the same size for the shuffled reports: a third of a
    calibration's time at n = 1e9, never read)."""

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        return None


def _upper_mechanism(n: int, values: int, gamma: float, adversary: Relation | str) -> KRR:
    return _UpperOnlyKRR(n, values, gamma, Relation.parse(adversary))


def _answer(result, method: str) -> float:
    if not result.applicable:
        raise NotApplicableError(f"{method}: {result.reason}")
    return float(getattr(result, "delta_upper", getattr(result, "eps_upper", math.nan)))


def level_delta(method: str, n: int, values: int, gamma: float, eps: float, *, variant: str = "fixed",
                adversary: str = "shuffled") -> float:
    """Certified δ(ε) of one blanket level by ``method`` (any method of :class:`KRR`).

    The protocol releases only the shuffled reports, which are ε0-DP by post-processing (ε0 of the level's
    randomiser): δ(ε) = 0 for ε ≥ ε0 whatever the adversary model used below ε0 (docs/theory.md#adversaries).
    """
    if gamma >= 1.0:
        return 0.0
    level = level_mechanism(n, values, gamma, Relation.WEAK)
    if eps >= level.local_guarantee():
        return 0.0
    (r,) = account(_upper_mechanism(n, values, gamma, adversary), eps=[eps], method=method, bennett_variant=variant,
                   numerics=TIGHT_NUMERICS).results
    return _answer(r, method)


def level_eps(method: str, n: int, values: int, gamma: float, delta: float, *, variant: str = "fixed",
              adversary: str = "shuffled") -> float:
    """Certified ε(δ) of one blanket level by ``method``."""
    (r,) = account(_upper_mechanism(n, values, gamma, adversary), delta=[delta], method=method,
                   bennett_variant=variant, numerics=TIGHT_NUMERICS).results
    return _answer(r, method)


def levels_delta(n: int, values, gammas, eps: float, adversary: str) -> float:
    """Certified δ(ε) of the heterogeneous composition of blanket levels (tight accountant)."""
    comp = Composition(tuple((level_mechanism(n, int(v), float(g), adversary), 1) for v, g in zip(values, gammas)))
    (r,) = account(comp, eps=[eps], numerics=TIGHT_NUMERICS).results
    return _answer(r, "tight")


def levels_eps(n: int, values, gammas, delta: float, adversary: str) -> float:
    """Certified ε(δ) of the heterogeneous composition of blanket levels (tight accountant)."""
    comp = Composition(tuple((level_mechanism(n, int(v), float(g), adversary), 1) for v, g in zip(values, gammas)))
    (r,) = account(comp, delta=[delta], numerics={"target_accuracy": None}).results
    return _answer(r, "tight")


@lru_cache(maxsize=65536)
def level_gamma(method: str, n: int, values: int, eps: float, delta: float, *, variant: str = "fixed",
                adversary: str = "shuffled") -> float:
    """Smallest blanket γ of one level certified (ε, δ)-DP by ``method``.

    ``balle``: the closed form (seed 001 Thm C.1); ``bennett``: Balle et al.'s Bennett bound inverted by
    bisection; ``tight``: :func:`~shufflesim.accounting.numerics.invert.calibrate` on :func:`level_delta` (the tight
    accountant's δ upper bound), bracketed above by the Bennett γ when that certifies.  Raises
    :class:`InfeasibleError` when only a blanket γ ≥ 1 − 1e−9 would do (nothing left to debias).
    """
    from shufflesim.accounting.bounds.balle import balle_gamma, bennett_gamma

    if method == "balle":
        g = balle_gamma(n, values, eps, delta)
    elif method == "bennett":
        g = bennett_gamma_near(n, values, eps, delta, variant=variant)
    elif method == "tight":
        hi = 1.0
        fn = lambda x: level_delta("tight", n, values, x, eps, adversary=adversary)  # noqa: E731
        known: dict[float, float] = {}
        try:
            gb = bennett_gamma(n, values, eps, delta, variant="fixed")
            if gb < 1.0:
                known[gb] = fn(gb)
                if known[gb] <= delta:
                    hi = gb
        except InfeasibleError:
            pass
        proxy = SEARCH_PROXY.get(adversary)
        if proxy is not None:  # the proxy's gamma certifies this adversary too (its delta is an upper bound)
            try:
                hi = min(hi, level_gamma("tight", n, values, eps, delta, variant=variant, adversary=proxy))
            except InfeasibleError:
                pass
        # the safe-side calibrator on level_delta (the adversary's certified delta below eps0 and the
        # post-processing guarantee, delta = 0, from eps0 on), its evaluations placed by secant steps on
        # log(-log delta) in log gamma (calibrate_near: ~5 evaluations instead of ~30, the same guarantee)
        g = calibrate_near(fn, delta, (hi, 0.5 * hi), hi * 1e-3, hi, rtol=1e-4, max_evals=60, known=known).x
    else:
        raise ParameterError(f"privacy method must be balle, bennett or tight; got {method!r}")
    if g >= GAMMA_MAX:
        raise InfeasibleError(
            f"{method}: ({eps:.6g}, {delta:.3g})-DP with n={n} and {values} values needs blanket gamma >= 1, "
            "which leaves nothing to debias; use a larger n, eps or delta, or a smaller precision"
        )
    return float(g)


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


#: the ε range where the blanket protocols' formulas keep double precision (checks.Precision)
BLANKET_EPS_PRECISION = Precision(low=BOUNDS_MIN_EPS, below="eps^2 and the blanket bounds' terms underflow double "
                                  "precision", high=EPS_PRECISION.high, above=EPS_PRECISION.above)


def check_common(n, eps, delta, mode, adversary, variant):
    """Validate the options the blanket protocols share; returns (n, eps, delta), delta defaulting to 1/n²."""
    n = check_int("n", n, minimum=2)
    if mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if adversary not in ADVERSARIES:
        raise ParameterError(f"adversary must be one of {', '.join(ADVERSARIES)}; got {adversary!r}")
    if variant not in BENNETT_VARIANTS:
        raise ParameterError(f"bennett_variant must be one of {', '.join(BENNETT_VARIANTS)}; got {variant!r}")
    if eps is not None:
        eps = check_real("eps", eps, low=0.0, low_open=True, precise=BLANKET_EPS_PRECISION)
    delta = default_delta(n) if delta is None else check_real("delta", delta, low=0.0, high=1.0, low_open=True,
                                                                 high_open=True)
    return n, eps, delta


EPS_OPTION = Option("eps", float, "central epsilon > 0 to certify (required unless --gamma is given)")
DELTA_OPTION = Option("delta", float, "central delta in (0, 1) (default: 1/n^2, as in seed 004)")
ADVERSARY_OPTION = Option("adversary", str,
                          "view the tight accountant certifies (docs/theory.md#adversaries): shuffled (the released "
                          "reports; stronger clone pair), weak (k-RR's weak-adversary pair: also bounds the reports, "
                          "often tighter for 3+ values, slower), strong, strong-1d",
                          default="shuffled", choices=ADVERSARIES)
VARIANT_OPTION = Option("bennett_variant", str,
                        "Bennett bound variant: fixed (corrected) or original-2019 (the paper's code)",
                        default="fixed", choices=BENNETT_VARIANTS)


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def run_mode(create, mode: str, modes: tuple[str, ...]):
    """Build a protocol with ``create(mode)``.  Returns (protocol, reason); ``reason`` is None unless ``mode``
    is ``"auto"``.

    ``auto`` (issue 18) builds every mode of ``modes`` that certifies the target and keeps the one with the
    smallest exact worst-case MSE (``mse_worst``, the error the protocol can have on the worst input); ties
    (e.g. given blanket probabilities, which every mode only certifies) go to the tighter certificate (smaller
    δ, then ε), then to the earlier mode.  Since each mode's certified error can only fall as ε grows, so
    does their minimum: a sweep in auto mode is never worse at a larger ε (a fixed rule such as "the paper's
    where feasible" was: n = 10⁴ ran the paper's rule at ε = 1, worst MSE 14× the tight mode's at ε = 0.5).
    Modes are tried from the cheapest (closed forms) to the most expensive search, and the searches share
    their memoised calibrations, so auto costs little more than the tight mode alone.  The paper's rules
    stay available by name.  ``reason`` names the winner with its worst-case MSE, the other modes' values
    and which modes cannot certify the target (the mode run by name says why).
    """
    if mode != AUTO:
        if mode not in modes:
            raise ParameterError(f"mode must be one of {', '.join((AUTO,) + modes)}; got {mode!r}")
        return create(mode), None
    built: list[tuple[tuple[float, float, float, int], str, object]] = []
    failed: list[tuple[str, Exception]] = []
    for i, m in enumerate(modes):
        try:
            proto = create(m)
        except (InfeasibleError, NotApplicableError, ParameterError) as exc:
            failed.append((m, exc))
            continue
        priv = proto.privacy()
        built.append(((float(proto.mse_worst()), float(priv.delta), float(priv.eps), i), m, proto))
    if not built:
        first = failed[0][1]
        if all(type(e) is type(first) and _first_line(e) == _first_line(first) for _, e in failed):
            raise first  # the same refusal from every mode (a bad option): say it once, as it is
        detail = "; ".join(f"{m}: {_first_line(e)}" for m, e in failed)
        # a user error that every mode rejects (a bad option) keeps its class; otherwise nothing certifies
        cls = type(first) if all(type(e) is type(first) for _, e in failed) else InfeasibleError
        raise cls(f"auto: no mode certifies this target ({detail})") from None
    key, best_mode, best = min(built, key=lambda b: b[0])
    others = [f"{m} {k[0]:.4g}" for k, m, _ in built if m != best_mode]
    others += [f"{m} cannot certify it" for m, _ in failed]
    reason = (f"auto: {best_mode}, the smallest certified worst-case MSE ({key[0]:.4g}"
              + ("; " + ", ".join(others) if others else "") + ")")
    return best, reason
