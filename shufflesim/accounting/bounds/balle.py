"""Balle, Bell, Gascón, Nissim (2019), "The privacy blanket of the shuffle model": published bounds.

* ``balle`` — the closed form for shuffled k-RR, as quoted in seed 001 Theorem C.1 and inverted in eq C.1
  (docs/theory.md#bounds-balle): (eps, delta)-DP for eps <= 1 and delta in (0, 1] when
  gamma = max{14 k log(2/delta) / ((n-1) eps^2), 27 k / ((n-1) eps)}.
* ``bennett`` and ``hoeffding`` — the numerical bounds of the authors' public package (docs/theory.md#bounds-blanket-numerical), for a
  randomiser with blanket probability gamma, described by three properties of its privacy amplification
  random variable L_eps: its maximum ``b+`` ("max_l"), its range ``b`` ("range_l") and its variance ``c``
  ("var_l").  Two randomisers are provided: k-ary randomised response (:class:`KRRBlanket`) and the
  Laplace mechanism on [0, 1] (:class:`LaplaceBlanket`).

  With a = e^eps - 1, alpha = c/b+^2, beta = a b+/c, phi(u) = (1+u) log(1+u) - u and M ~ Bin(n, gamma):

  - Bennett, ``variant="fixed"`` (the package after the upstream fix, eta = 1/b+):
    delta = b+ / (gamma n log(1+beta)) * E[1{M>=1} exp(-M alpha phi(beta))];
  - Bennett, ``variant="original-2019"`` (the release pinned by the summation code and used for FLAME's
    numbers; eta = a/b+ and an extra 1/M): delta = b+ / (a gamma n log(1+beta)) * E[1{M>=1} exp(-M alpha phi(beta)) / M];
  - Hoeffding: delta = (1/(gamma n)) * b^2/(4a) * (1 - gamma (1 - exp(-2 a^2/b^2)))^n.

  For eps >= eps0 every eps0-LDP randomiser gives delta = 0 after shuffling (post-processing), and these
  functions return 0 with a note (the package returns its numerical floor there).  All deltas are computed
  in log space; a value above 1 is reported as the trivial bound 1 with a note.

The expectation of the fixed form has the closed form (1 - gamma + gamma e^{-k})^n - (1 - gamma)^n with
k = alpha phi(beta); the original form is summed over all m = 1..n in log space (vectorised).

Calibration helpers for protocols: :func:`c1_gamma_terms` (the one evaluation of Theorem C.1's gamma, safe for
every eps > 0), :func:`balle_gamma` (that gamma with its validity check) and :func:`bennett_gamma` /
:func:`bennett_gamma_near` (smallest gamma for which the Bennett bound certifies the target delta, by the
safe-side calibrator, which never overshoots; the second places its evaluations from Theorem C.1's scale).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Union

import numpy as np
from scipy.special import gammaln, logsumexp

from shufflesim.core.checks import check_int, check_probability, check_real
from shufflesim.maths.rr import eps0_from_gamma, eps0_upper, gamma_from_eps0
from shufflesim.errors import InfeasibleError, NotApplicableError, ParameterError
from shufflesim.accounting.model.results import DeltaBound, EpsBound, NotApplicable
from shufflesim.accounting.bounds.transforms import invert_delta_curve

__all__ = [
    "KRRBlanket",
    "MIN_EPS",
    "LaplaceBlanket",
    "BennettVariant",
    "balle_delta",
    "balle_eps",
    "balle_gamma",
    "c1_gamma_terms",
    "bennett_delta",
    "bennett_eps",
    "bennett_gamma",
    "bennett_gamma_near",
    "hoeffding_delta",
    "hoeffding_eps",
]

BennettVariant = Literal["original-2019", "fixed"]
_VARIANTS = ("original-2019", "fixed")

#: smallest eps at which the blanket bounds are evaluated: below it eps^2 (< 1e-300) and the numerical bounds'
#: terms underflow double precision (the numerical bounds report the trivial delta = 1 there; the blanket
#: protocols refuse such an eps)
MIN_EPS = 1e-150

_REF_C1 = "seed 001 Thm C.1 / eq C.1 (Balle et al. 2019)"
_REF_NUM = "Balle et al. 2019 numerical bounds (arXiv:1903.02837; docs/theory.md#bounds-blanket-numerical)"


# --------------------------------------------------------------------------------------------------
# Randomisers: the privacy amplification random variable's maximum, range and variance
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KRRBlanket:
    """k-ary randomised response in blanket form (docs/theory.md#randomised-response): report the truth w.p. 1 - gamma, else a
    uniform value of the k (truth included).  eps0 = log(1 + k(1 - gamma)/gamma).

    ``max_l``, ``range_l``, ``var_l``: Balle et al.'s package (docs/theory.md#bounds-krr-blanket).
    """

    k: int
    gamma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_int("k", self.k, minimum=2))
        object.__setattr__(
            self, "gamma", check_real("gamma", self.gamma, low=0.0, high=1.0, low_open=True)
        )

    @classmethod
    def from_eps0(cls, k: int, eps0: float) -> "KRRBlanket":
        """The k-RR with local privacy eps0: gamma = k/(e^eps0 + k - 1) (docs/theory.md#randomised-response)."""
        k = check_int("k", k, minimum=2)
        eps0 = check_real("eps0", eps0, low=0.0)
        return cls(k=k, gamma=gamma_from_eps0(eps0, k))

    @property
    def name(self) -> str:
        return f"{self.k}-RR"

    @property
    def eps0(self) -> float:
        """Local privacy of the randomiser: log(1 + k(1 - gamma)/gamma), raised by maths.rr.eps0_upper so that
        "eps >= eps0 ⇒ delta = 0" is never applied below the true eps0."""
        return eps0_upper(eps0_from_gamma(self.gamma, self.k))

    def max_l(self, eps: float) -> float:
        """b+ = gamma (1 - e^eps) + (1 - gamma) k."""
        return -self.gamma * math.expm1(eps) + (1.0 - self.gamma) * self.k

    def range_l(self, eps: float) -> float:
        """b = (1 - gamma) k (e^eps + 1)."""
        return (1.0 - self.gamma) * self.k * (math.exp(eps) + 1.0)

    def var_l(self, eps: float) -> float:
        """c = gamma (2 - gamma) (e^eps - 1)^2 + (1 - gamma)^2 k (e^{2 eps} + 1)."""
        g = self.gamma
        return g * (2.0 - g) * math.expm1(eps) ** 2 + (1.0 - g) ** 2 * self.k * (math.exp(2.0 * eps) + 1.0)


@dataclass(frozen=True)
class LaplaceBlanket:
    """The Laplace mechanism Lap(1/eps0) on inputs in [0, 1] in Balle et al.'s blanket analysis
    (docs/theory.md#bounds-laplace-blanket): gamma = e^{-eps0/2}.

    ``max_l``, ``range_l``, ``var_l``: Balle et al.'s package ("LaplaceMechanism").  The range is
    (e^eps + 1)(e^{eps0/2} - e^{-eps0/2}), as in the authors' package.
    """

    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True))

    @property
    def name(self) -> str:
        return "Laplace"

    @property
    def gamma(self) -> float:
        return math.exp(-self.eps0 / 2.0)

    def max_l(self, eps: float) -> float:
        """b+ = e^{eps0/2} (1 - e^{eps - eps0})."""
        return -math.exp(self.eps0 / 2.0) * math.expm1(eps - self.eps0)

    def range_l(self, eps: float) -> float:
        """b = (e^eps + 1)(e^{eps0/2} - e^{-eps0/2})."""
        return (math.exp(eps) + 1.0) * 2.0 * math.sinh(self.eps0 / 2.0)

    def var_l(self, eps: float) -> float:
        """c = ((e^{2eps} + 1)/3)(2 e^{eps0/2} + e^{-eps0}) - 2 e^eps (2 e^{-eps0/2} - e^{-eps0})."""
        e0 = self.eps0
        return (math.exp(2.0 * eps) + 1.0) / 3.0 * (2.0 * math.exp(e0 / 2.0) + math.exp(-e0)) - 2.0 * math.exp(
            eps
        ) * (2.0 * math.exp(-e0 / 2.0) - math.exp(-e0))


BlanketRandomiser = Union[KRRBlanket, LaplaceBlanket]


# --------------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------------


def _eps(eps) -> float:
    return check_real("eps", eps, low=0.0)


def _delta(delta) -> float:
    return check_probability("delta", delta)


def _n(n) -> int:
    return check_int("n", n, minimum=1)


def _randomiser(randomiser) -> BlanketRandomiser:
    if not isinstance(randomiser, (KRRBlanket, LaplaceBlanket)):
        raise ParameterError(
            f"randomiser must be a KRRBlanket or a LaplaceBlanket; got {type(randomiser).__name__}"
        )
    return randomiser


def _variant(variant) -> str:
    if variant not in _VARIANTS:
        raise ParameterError(f"variant must be one of {', '.join(_VARIANTS)}; got {variant!r}")
    return variant


def _fmt(x: float) -> str:
    return f"{x:.6g}"


# --------------------------------------------------------------------------------------------------
# Closed form (seed 001 Theorem C.1 / eq C.1)
# --------------------------------------------------------------------------------------------------


def balle_delta(eps: float, *, n: int, k: int, gamma: float) -> DeltaBound | NotApplicable:
    """delta(eps) from Balle et al.'s closed form for shuffled k-RR (seed 001 Thm C.1).

    Theorem C.1 certifies (eps, delta) when eps <= 1 and gamma >= max{14 k log(2/delta)/((n-1) eps^2),
    27 k/((n-1) eps)} (the theorem states equality; a larger gamma is a post-processing of the k-RR with
    the smaller one, so ">=" follows).  Solving for delta: delta = 2 exp(-gamma (n-1) eps^2 / (14 k)),
    applicable when eps <= 1, gamma (n-1) eps >= 27 k and the resulting delta <= 1.
    """
    eps = _eps(eps)
    n = _n(n)
    k = check_int("k", k, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    m = "balle"
    if n < 2:
        return NotApplicable(m, f"balle closed form requires n >= 2; got n={n}", eps=eps)
    if eps > 1.0:
        return NotApplicable(m, f"balle closed form requires eps <= 1; got eps={_fmt(eps)}", eps=eps)
    if eps == 0.0 or gamma * (n - 1) * eps < 27 * k:
        need = math.inf if eps == 0.0 else 27 * k / ((n - 1) * eps)
        return NotApplicable(
            m,
            f"balle closed form requires gamma >= 27k/((n-1)eps) = {_fmt(need)}; got gamma={_fmt(gamma)}",
            eps=eps,
        )
    log_delta = math.log(2.0) - gamma * (n - 1) * eps * eps / (14.0 * k)
    if log_delta > 0.0:
        return NotApplicable(
            m,
            "balle closed form certifies no delta <= 1 here: requires gamma >= 14k log(2)/((n-1)eps^2) = "
            f"{_fmt(14 * k * math.log(2.0) / ((n - 1) * eps * eps))}; got gamma={_fmt(gamma)}",
            eps=eps,
        )
    return DeltaBound(eps=eps, delta_upper=math.exp(log_delta), delta_lower=None, method=m, notes=(_REF_C1,))


def balle_eps(delta: float, *, n: int, k: int, gamma: float) -> EpsBound | NotApplicable:
    """eps(delta) from Balle et al.'s closed form (seed 001 Thm C.1, eq C.1).

    The smallest eps allowed by Theorem C.1 for this gamma is
    max{sqrt(14 k log(2/delta)/((n-1) gamma)), 27 k/((n-1) gamma)}; for delta <= 2e^-2 and eps <= 1 the
    first term is the larger one and this is exactly eq C.1.  Applicable when the result is <= 1.
    """
    delta = _delta(delta)
    n = _n(n)
    k = check_int("k", k, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    m = "balle"
    if n < 2:
        return NotApplicable(m, f"balle closed form requires n >= 2; got n={n}", delta=delta)
    if delta == 0.0:
        return NotApplicable(m, "balle closed form requires delta in (0, 1]; got delta=0", delta=delta)
    eps_c1 = math.sqrt(14.0 * k * _log_2_over(delta) / ((n - 1) * gamma))
    eps_27 = 27.0 * k / ((n - 1) * gamma)
    eps = max(eps_c1, eps_27)
    if eps > 1.0:
        return NotApplicable(
            m,
            f"balle closed form requires eps <= 1 (and eq C.1 delta <= 2e^-2); got eps={_fmt(eps)} "
            f"for delta={_fmt(delta)}, n={n}, k={k}, gamma={_fmt(gamma)}",
            delta=delta,
        )
    notes = [_REF_C1]
    if eps_27 > eps_c1:
        notes.append("the 27k/((n-1)gamma) term of Thm C.1 dominates (delta > 2e^{-27 eps/14}); eq C.1 does not apply")
    return EpsBound(delta=delta, eps_upper=eps, eps_lower=None, method=m, notes=tuple(notes))


def _log_2_over(delta: float) -> float:
    """log(2/δ), also where 2/δ overflows (δ subnormal)."""
    r = 2.0 / delta
    return math.log(r) if math.isfinite(r) else math.log(2.0) - math.log(delta)


def c1_gamma_terms(n: int, k: int, eps: float, delta: float) -> tuple[float, float]:
    """The two terms of Theorem C.1's blanket probability (seed 001; docs/theory.md#bounds-balle),
    (14 k log(2/delta) / ((n-1) eps^2), 27 k / ((n-1) eps)), unclipped: the one place this formula is computed
    (:func:`balle_gamma` takes their maximum, :func:`bennett_gamma_near` places its search from the first).

    For n >= 2, eps > 0 and delta in (0, 1].  A term that exceeds the double range is ``math.inf`` (gamma > 1:
    no blanket certifies the target), including where eps^2 or (n-1) eps^2 underflows to 0 (eps below ~1e-154;
    the subnormal eps = 5e-324 included), so no input divides by an underflowed zero.
    """
    den = (n - 1) * eps * eps
    first = 14.0 * k * _log_2_over(delta) / den if den > 0.0 else math.inf
    den = (n - 1) * eps
    second = 27.0 * k / den if den > 0.0 else math.inf
    return first, second


def balle_gamma(n: int, k: int, eps: float, delta: float) -> float:
    """The blanket probability of Balle et al.'s closed form (seed 001 Thm C.1):
    gamma = max{14 k log(2/delta)/((n-1) eps^2), 27 k/((n-1) eps)}.

    Raises :class:`NotApplicableError` unless n >= 2, 0 < eps <= 1 and 0 < delta <= 1, and
    :class:`InfeasibleError` when the formula gives gamma > 1 (n too small for the target).
    """
    n = _n(n)
    k = check_int("k", k, minimum=2)
    eps = _eps(eps)
    delta = _delta(delta)
    if n < 2:
        raise NotApplicableError(f"balle closed form requires n >= 2; got n={n}")
    if not (0.0 < eps <= 1.0):
        raise NotApplicableError(f"balle closed form requires 0 < eps <= 1; got eps={_fmt(eps)}")
    if delta == 0.0:
        raise NotApplicableError("balle closed form requires delta in (0, 1]; got delta=0")
    gamma = max(c1_gamma_terms(n, k, eps, delta))
    if math.isinf(gamma):
        raise InfeasibleError(f"balle closed form: eps={_fmt(eps)} is so small that gamma = 14k log(2/delta)/((n-1) eps^2) overflows; no gamma <= 1 exists")
    if gamma > 1.0:
        raise InfeasibleError(
            f"balle closed form needs gamma={_fmt(gamma)} > 1 for n={n}, k={k}, eps={_fmt(eps)}, "
            f"delta={_fmt(delta)}: n must be at least {math.ceil(gamma * (n - 1)) + 1}"
        )
    return gamma


# --------------------------------------------------------------------------------------------------
# Numerical bounds (Bennett, Hoeffding)
# --------------------------------------------------------------------------------------------------


def _phi(u: float) -> float:
    """phi(u) = (1+u) log(1+u) - u, with a series for small u (no cancellation)."""
    if u < 1e-3:
        return u * u * (0.5 + u * (-1.0 / 6.0 + u * (1.0 / 12.0 + u * (-1.0 / 20.0 + u / 30.0))))
    return (1.0 + u) * math.log1p(u) - u


@lru_cache(maxsize=2)
def _log_binom_coef_over_m(n: int) -> np.ndarray:
    """log C(n, m) - log m for m = 1..n (the gamma-free part of the original-2019 expectation's weights)."""
    m = np.arange(1, n + 1, dtype=float)
    out = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(n - m + 1.0) - np.log(m)
    out.setflags(write=False)
    return out


def _bennett_log_delta(eps: float, n: int, r: BlanketRandomiser, variant: str) -> float:
    """log of the Bennett bound for 0 < eps < eps0 (see module docstring)."""
    gamma = r.gamma
    a = math.expm1(eps)
    b_plus = r.max_l(eps)
    c = r.var_l(eps)
    alpha = c / (b_plus * b_plus)
    beta = a * b_plus / c
    kappa = alpha * _phi(beta)
    log_pref = math.log(b_plus) - math.log(gamma) - math.log(n) - math.log(math.log1p(beta))
    if variant == "fixed":
        # E[1{M>=1} e^{-M kappa}] = (1 - g + g e^{-kappa})^n - (1 - g)^n
        l1 = math.log1p(gamma * math.expm1(-kappa))
        if gamma >= 1.0:
            log_e = n * l1
        else:
            ratio = math.log1p(gamma * math.exp(-kappa) / (1.0 - gamma))  # log((1-g+g e^-k)/(1-g)) > 0
            log_e = n * l1 + math.log(-math.expm1(-n * ratio))
        return log_pref + log_e
    # original-2019: eta = a/b+ and an extra 1/M in the expectation
    # log P(M = m) - log m - m kappa, m = 1..n, summed in log space
    m = np.arange(1, n + 1, dtype=float)
    terms = _log_binom_coef_over_m(n) + m * (math.log(gamma) - kappa) + (n - m) * math.log1p(-gamma)
    log_e = float(logsumexp(terms))
    return log_pref - math.log(a) + log_e


def _hoeffding_log_delta(eps: float, n: int, r: BlanketRandomiser) -> float:
    gamma = r.gamma
    a = math.expm1(eps)
    b = r.range_l(eps)
    log_base = math.log1p(gamma * math.expm1(-2.0 * a * a / (b * b)))
    return -math.log(gamma * n) + 2.0 * math.log(b) - math.log(4.0 * a) + n * log_base


#: above this eps the numerical bounds' variance term (e^(2 eps)) overflows double precision (log(DBL_MAX) / 2 =
#: 354.9): :func:`_numeric_delta` reports the trivial delta = 1 there (sound; an eps(delta) search treats it as
#: above every target)
MAX_NUMERIC_EPS = float(math.floor(math.log(sys.float_info.max) / 2.0))


def _numeric_delta(method: str, eps: float, n: int, r: BlanketRandomiser, log_delta_fn) -> DeltaBound:
    notes = [_REF_NUM, f"randomiser={r.name}, gamma={_fmt(r.gamma)}, eps0={_fmt(r.eps0)}"]
    eps0 = r.eps0
    if eps >= eps0 or r.max_l(eps) <= 0.0:  # eps0 recomputed from gamma can round just above eps
        notes.append("eps >= eps0: the shuffled output is a post-processing of eps0-LDP reports, so delta = 0")
        return DeltaBound(eps=eps, delta_upper=0.0, delta_lower=None, method=method, notes=tuple(notes))
    if eps == 0.0:
        notes.append("eps = 0: the bound is vacuous (a = e^eps - 1 = 0); reported as the trivial delta = 1")
        return DeltaBound(eps=eps, delta_upper=1.0, delta_lower=None, method=method, notes=tuple(notes))
    if eps < MIN_EPS:
        notes.append(f"eps = {_fmt(eps)} < {MIN_EPS:g}: the bound's terms underflow double precision; reported as the "
                     "trivial delta = 1")
        return DeltaBound(eps=eps, delta_upper=1.0, delta_lower=None, method=method, notes=tuple(notes))
    if eps > MAX_NUMERIC_EPS:
        notes.append(f"eps = {_fmt(eps)} > {MAX_NUMERIC_EPS:g}: the bound's terms (e^(2 eps)) overflow double precision; "
                     "reported as the trivial delta = 1")
        return DeltaBound(eps=eps, delta_upper=1.0, delta_lower=None, method=method, notes=tuple(notes))
    ld = log_delta_fn(eps)
    if not ld < 0.0:
        if math.isnan(ld):
            raise ParameterError(f"{method} bound is undefined at eps={_fmt(eps)} for {r!r}")
        notes.append(f"the bound exceeds 1 (log delta = {_fmt(ld)}); reported as the trivial delta = 1")
        return DeltaBound(eps=eps, delta_upper=1.0, delta_lower=None, method=method, notes=tuple(notes))
    val = math.exp(ld)
    if val == 0.0:
        notes.append(f"delta underflows a float: log delta = {_fmt(ld)}")
    return DeltaBound(eps=eps, delta_upper=val, delta_lower=None, method=method, notes=tuple(notes))


def bennett_delta(
    eps: float, *, n: int, randomiser: BlanketRandomiser, variant: BennettVariant = "fixed"
) -> DeltaBound:
    """delta(eps) from Balle et al.'s Bennett bound (docs/theory.md#bounds-bennett), ``variant`` "fixed" or "original-2019".

    The delta may underflow to 0.0 as a float; its logarithm is always finite for 0 < eps < eps0.
    """
    eps = _eps(eps)
    n = _n(n)
    r = _randomiser(randomiser)
    variant = _variant(variant)
    b = _numeric_delta("bennett", eps, n, r, lambda e: _bennett_log_delta(e, n, r, variant))
    return DeltaBound(
        eps=b.eps, delta_upper=b.delta_upper, delta_lower=None, method="bennett",
        notes=b.notes + (f"variant={variant}",),
    )


def hoeffding_delta(eps: float, *, n: int, randomiser: BlanketRandomiser) -> DeltaBound:
    """delta(eps) from Balle et al.'s Hoeffding bound (docs/theory.md#bounds-hoeffding)."""
    eps = _eps(eps)
    n = _n(n)
    r = _randomiser(randomiser)
    return _numeric_delta("hoeffding", eps, n, r, lambda e: _hoeffding_log_delta(e, n, r))


def _numeric_eps(method: str, delta: float, n: int, r: BlanketRandomiser, delta_fn, rtol: float) -> EpsBound:
    """Safe-side inversion on [0, eps0]: delta(eps0) = 0 always qualifies."""
    eps_hi, _, evals = invert_delta_curve(lambda e: delta_fn(e).delta_upper, delta, lo=0.0, hi=r.eps0, rtol=rtol)
    notes = (
        _REF_NUM,
        f"randomiser={r.name}, gamma={_fmt(r.gamma)}, eps0={_fmt(r.eps0)}",
        f"eps by bisection on the delta(eps) bound, safe side (delta(eps_upper) <= target), {evals} evaluations",
    )
    return EpsBound(delta=delta, eps_upper=eps_hi, eps_lower=None, method=method, notes=notes)


def bennett_eps(
    delta: float,
    *,
    n: int,
    randomiser: BlanketRandomiser,
    variant: BennettVariant = "fixed",
    rtol: float = 1e-10,
) -> EpsBound:
    """eps(delta) from the Bennett bound: the eps found by bisection at which the bound gives <= delta.

    The paper gives only delta(eps); the inversion never reports an eps whose bound exceeds ``delta``.
    """
    delta = _delta(delta)
    n = _n(n)
    r = _randomiser(randomiser)
    variant = _variant(variant)
    b = _numeric_eps(
        "bennett", delta, n, r, lambda e: bennett_delta(e, n=n, randomiser=r, variant=variant), rtol
    )
    return EpsBound(
        delta=b.delta, eps_upper=b.eps_upper, eps_lower=None, method="bennett", notes=b.notes + (f"variant={variant}",)
    )


def hoeffding_eps(delta: float, *, n: int, randomiser: BlanketRandomiser, rtol: float = 1e-10) -> EpsBound:
    """eps(delta) from the Hoeffding bound (safe-side bisection, as :func:`bennett_eps`)."""
    delta = _delta(delta)
    n = _n(n)
    r = _randomiser(randomiser)
    return _numeric_eps("hoeffding", delta, n, r, lambda e: hoeffding_delta(e, n=n, randomiser=r), rtol)


def bennett_gamma(
    n: int, k: int, eps: float, delta: float, *, variant: BennettVariant = "fixed", rtol: float = 1e-9
) -> float:
    """Smallest blanket probability gamma of k-RR for which the Bennett bound gives delta(eps) <= ``delta``.

    The one safe-side calibrator (:func:`shufflesim.accounting.numerics.invert.calibrate`) on gamma in (0, 1]:
    the returned gamma was evaluated to satisfy the target (gamma = 1 always does: the output is then
    independent of the inputs), so it never overshoots the privacy target.  Stops when the bracket is
    below ``rtol`` relative.
    """
    from shufflesim.accounting.numerics.invert import calibrate

    n = _n(n)
    k = check_int("k", k, minimum=2)
    eps = _eps(eps)
    delta = _delta(delta)
    variant = _variant(variant)

    def delta_at(g: float) -> float:
        return bennett_delta(eps, n=n, randomiser=KRRBlanket(k=k, gamma=g), variant=variant).delta_upper

    # lo: a gamma far below any useful blanket (the bound there is ~1); 1.0 certifies every target
    return calibrate(delta_at, delta, 1e-300, 1.0, increasing=False, xtol=0.0, rtol=rtol, log_scale=True).x


def bennett_gamma_near(n: int, k: int, eps: float, delta: float, *, variant: BennettVariant = "fixed",
                       rtol: float = 1e-9) -> float:
    """:func:`bennett_gamma` (the smallest blanket gamma of k-RR whose Bennett delta(eps) is <= ``delta``, to
    ``rtol``, evaluated: never past the target) with its evaluations placed by
    :func:`~shufflesim.accounting.numerics.invert.calibrate_near` from the closed form's scale (the first term of
    :func:`c1_gamma_terms`, seed 001 Thm C.1; the Bennett gamma is ~0.1-0.5 of it): ~5-8 evaluations of the bound
    instead of ~45 from [1e-300, 1] (the blanket protocols' ``optimised`` search tabulates ~2000).  Same function,
    same bracket and tolerance; the answer may differ from ``bennett_gamma``'s within rtol.  Where the scale
    leaves the double range (eps tiny: Thm C.1 needs gamma > 1) the search starts from gamma ~ 1."""
    from shufflesim.accounting.numerics.invert import calibrate_near

    n = _n(n)
    k = check_int("k", k, minimum=2)
    eps = _eps(eps)
    delta = _delta(delta)
    variant = _variant(variant)
    fn = lambda g: bennett_delta(eps, n=n, randomiser=KRRBlanket(k=k, gamma=g), variant=variant).delta_upper  # noqa: E731
    scale = c1_gamma_terms(n, k, eps, delta)[0] if n >= 2 and eps > 0.0 and delta > 0.0 else math.inf
    scale = min(scale, 1.0) if scale > 0.0 else 1.0
    return calibrate_near(fn, delta, (0.3 * scale, 0.15 * scale), 1e-300, 1.0, rtol=rtol, max_evals=200).x
