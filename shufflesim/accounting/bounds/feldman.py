"""Feldman, McMillan, Talwar (2020), "Hiding among the clones": amplification by shuffling for any
eps0-LDP randomiser.

``feldman`` — the closed form of their Theorem 3.1 as quoted in seed 001 §C.3 (eq C.2; docs/theory.md#bounds-feldman): with
p = e^{-eps0},

    eps <= log(1 + 8 sqrt(log(4/delta))/sqrt(p n) + 8/(p n)),
    i.e. delta <= 4 exp(-[(e^eps - 1 - 8/(p n)) sqrt(p n)/8]^2),                           (C.2)

valid for eps0 <= log(n/(16 log(4/delta))), equivalently delta >= 4 exp(-p n/16).  The paper prints
2/delta inside that condition; the authors' code and a later comment use 4/delta, which is the more
restrictive of the two and is what is enforced here.  The delta direction returns
max(C.2, 4 exp(-p n/16)): below the validity floor the theorem is applied at the floor (an (eps', delta)
guarantee with eps' <= eps implies (eps, delta)).

``feldman-numerical`` — the numerical method of the authors' public code (docs/theory.md#bounds-feldman-numerical), implemented here
from its description.  It evaluates the hockey-stick divergence of Feldman et al.'s pair: with
C ~ Bin(n-1, p), A ~ Bin(C, 1/2) and alpha = e^eps0/(e^eps0 + 1), given C = c the first coordinate X of the
pair (the second is c + 1 - X) has

    P_c = alpha L(A + 1) + (1 - alpha) L(A),      Q_c = alpha L(A) + (1 - alpha) L(A + 1),

whose likelihood ratio is increasing in X, so delta_c(eps) = P_c(X >= j) - e^eps Q_c(X >= j) for the
threshold j = floor(R (c+1)/(1+R)) + 1 with R = (e^eps alpha - (1-alpha))/(alpha - e^eps (1-alpha)): a
difference of two binomial tail probabilities.  delta(eps) = sum_c P(C = c) delta_c(eps).  (The pair is
symmetric under X -> c + 1 - X, so delta_{P||Q} = delta_{Q||P}.)  Adding one clone is a post-processing
(X_{c+1} = X_c + Bern(1/2) under both hypotheses), so delta_c is non-increasing in c.  The values of c
are visited in blocks of ``step`` consecutive values; within a block, delta at the block's first c is an
upper bound and delta at its last c is a lower bound (docs/theory.md#bounds-feldman-numerical).  ``step=1`` is exact.  The c outside a window around E[C] are not visited: their probability
mass (computed exactly, or by a Chernoff bound in log space if it underflows) times delta_0 = alpha -
e^eps (1 - alpha) is added to the upper bound, and the window is widened until that slack is below
``tail_rtol`` times the lower bound (or covers all c).  Everything is in log space.

The lower bound is a lower bound on the hockey-stick divergence of Feldman et al.'s pair — the quantity
this method computes — not on the delta of a particular mechanism.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import bdtrc, logsumexp

from shufflesim.accounting.numerics.logspace import EXP_OVERFLOW
from shufflesim.core.checks import check_int, check_probability, check_real
from shufflesim.errors import ParameterError
from shufflesim.accounting.model.results import DeltaBound, EpsBound, NotApplicable
from shufflesim.accounting.bounds.transforms import invert_delta_curve

__all__ = [
    "feldman_delta",
    "feldman_eps",
    "feldman_numerical_delta",
    "feldman_numerical_eps",
    "feldman_numerical_log_delta",
]

_REF_C2 = "Feldman et al. 2020 Thm 3.1 as seed 001 eq C.2"
_REF_NUM = "Feldman et al. 2020 numerical method (arXiv:2012.12803; docs/theory.md#bounds-feldman-numerical), Feldman et al.'s pair"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


# --------------------------------------------------------------------------------------------------
# Closed form, eq C.2
# --------------------------------------------------------------------------------------------------


def feldman_eps(delta: float, *, n: int, eps0: float) -> EpsBound | NotApplicable:
    """eps(delta) = log(1 + 8 sqrt(log(4/delta)/(p n)) + 8/(p n)), p = e^{-eps0} (seed 001 §C.3), where
    eps0 <= log(n/(16 log(4/delta)))."""
    delta = check_probability("delta", delta)
    n = check_int("n", n, minimum=1)
    eps0 = check_real("eps0", eps0, low=0.0)
    if delta == 0.0:
        return NotApplicable("feldman", "feldman closed form requires delta > 0; got delta=0", delta=delta)
    pn = n * math.exp(-eps0)
    log4d = math.log(4.0) - math.log(delta)  # 4/delta overflows for subnormal delta
    if 16.0 * log4d > pn:
        limit = math.log(n / (16.0 * log4d))
        return NotApplicable(
            "feldman",
            f"feldman closed form requires eps0 <= log(n/(16 log(4/delta))) = {_fmt(limit)}; got eps0={_fmt(eps0)}",
            delta=delta,
        )
    eps = math.log1p(8.0 * math.sqrt(log4d / pn) + 8.0 / pn)
    return EpsBound(delta=delta, eps_upper=eps, eps_lower=None, method="feldman", notes=(_REF_C2,))


def feldman_delta(eps: float, *, n: int, eps0: float) -> DeltaBound | NotApplicable:
    """delta(eps) = max(4 exp(-[(e^eps - 1 - 8/(p n)) sqrt(p n)/8]^2), 4 exp(-p n/16)) (eq C.2 and its
    validity floor).  Not applicable when e^eps - 1 <= 8/(p n) (no delta certifies such an eps) or when the
    result exceeds 1."""
    eps = check_real("eps", eps, low=0.0)
    n = check_int("n", n, minimum=1)
    eps0 = check_real("eps0", eps0, low=0.0)
    pn = n * math.exp(-eps0)
    x = (math.expm1(eps) if eps < EXP_OVERFLOW else math.inf) - 8.0 / pn
    if x <= 0.0:
        return NotApplicable(
            "feldman",
            f"feldman closed form certifies no delta for eps <= log(1 + 8/(p n)) = {_fmt(math.log1p(8.0 / pn))}; "
            f"got eps={_fmt(eps)}",
            eps=eps,
        )
    z = x * math.sqrt(pn) / 8.0
    log_c2 = math.log(4.0) - z * z if z < 1e150 else -math.inf  # z^2 beyond the doubles: eq C.2 is 0
    log_floor = math.log(4.0) - pn / 16.0
    notes = [_REF_C2]
    if log_floor > log_c2:
        notes.append(
            "eq C.2 is below the validity floor delta >= 4 exp(-p n/16) (eps0 <= log(n/(16 log(4/delta)))); "
            "reported at the floor"
        )
    ld = max(log_c2, log_floor)
    if ld > 0.0:
        return NotApplicable(
            "feldman",
            f"feldman closed form certifies no delta <= 1 at eps={_fmt(eps)} (eq C.2 gives {_fmt(math.exp(min(ld, 700.0)))})",
            eps=eps,
        )
    return DeltaBound(eps=eps, delta_upper=math.exp(ld), delta_lower=None, method="feldman", notes=tuple(notes))


# --------------------------------------------------------------------------------------------------
# Numerical method
# --------------------------------------------------------------------------------------------------


def _log_half_binom_pmf(m: np.ndarray, c: np.ndarray) -> np.ndarray:
    """log P(A = m), A ~ Bin(c, 1/2); -inf outside 0..c (Loader's saddle-point form,
    :func:`shufflesim.accounting.numerics.binomial.log_binom_pmf`: ~1e-12 absolute where the textbook gammaln
    difference loses ~1e-9 at c = 10^6)."""
    from shufflesim.accounting.numerics.binomial import log_binom_pmf

    return log_binom_pmf(np.asarray(m), np.asarray(c), 0.5, 0.5)


def _log_half_binom_sf(m: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower bounds on log P(A >= m), A ~ Bin(c, 1/2) (equal unless the tail underflows).

    Uses the incomplete beta function (scipy ``bdtrc``); where it underflows to 0 the sandwich
    b(m) <= P(A >= m) <= b(m)/(1 - rho), rho = (c - m)/(m + 1) < 1, is used in log space.
    """
    m = np.asarray(m, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    val = np.ones(m.shape)
    inside = (m >= 1) & (m <= c)
    if inside.any():
        val[inside] = bdtrc(m[inside] - 1, c[inside], 0.5)
    val[m > c] = 0.0
    with np.errstate(divide="ignore"):
        lg = np.log(val)
    lo = lg.copy()
    hi = lg.copy()
    under = inside & (val == 0.0)
    if under.any():
        mu = m[under]
        cu = c[under]
        lb = _log_half_binom_pmf(mu, cu)
        rho = (cu - mu) / (mu + 1.0)
        if np.any(rho >= 1.0):  # cannot happen: an underflowing tail is far above c/2
            raise ParameterError("binomial tail underflow below the median; cannot bound it")
        lo[under] = lb
        hi[under] = lb - np.log1p(-rho)
    return hi, lo


def _log_delta_c(c: np.ndarray, eps: float, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower bounds on log delta_c(eps) for Feldman et al.'s conditional pair (0 <= eps < eps0)."""
    alpha = 1.0 / (1.0 + math.exp(-eps0))
    e = math.exp(eps)
    u = alpha - e * (1.0 - alpha)
    w = e * alpha - (1.0 - alpha)
    R = w / u
    j = np.floor(R * (c + 1.0) / (1.0 + R)).astype(np.int64) + 1
    j = np.minimum(j, c + 1)  # x = c + 1 (ratio e^eps0 > e^eps) is always in the set
    # delta_c = u G(j-1) - w G(j) = u b(j-1) - (e^eps - 1) G(j), b = pmf of A, G = P(A >= .)
    lb = _log_half_binom_pmf(j - 1, c)
    lg_hi, lg_lo = _log_half_binom_sf(j, c)

    log_u = math.log(u)
    log_em1 = math.log(math.expm1(eps)) if eps > 0.0 else -math.inf

    def combine(lg: np.ndarray) -> np.ndarray:
        # log(u b(j-1) - (e^eps - 1) G(j)) = log u + lb + log1p(-x), x = (e^eps - 1) G(j)/(u b(j-1)) in [0, 1)
        x = np.exp(log_em1 + lg - log_u - lb)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = log_u + lb + np.log1p(-x)
        return np.where(x < 1.0, out, -np.inf)

    return combine(lg_lo), combine(lg_hi)


def _window(lp: np.ndarray, mode: int, floor: float) -> tuple[int, int]:
    """The contiguous range of indices around the mode of the (unimodal) log-pmf ``lp`` with lp >= floor."""
    left = lp[: mode + 1]  # non-decreasing
    right = lp[mode:]  # non-increasing
    c_lo = int(np.searchsorted(left, floor, side="left"))
    c_hi = mode + int(np.searchsorted(-right, -floor, side="right")) - 1
    return c_lo, c_hi


def _binom_window(N: int, p: float, width: float) -> tuple[int, int, np.ndarray]:
    """(c_lo, c_hi, log P(C = c) for c in c_lo..c_hi), C ~ Bin(N, p): the values within ``width`` nats of the
    mode, evaluated only there (Loader's form; memory ~ sqrt(N), not N — issue 21: n = 2e9 asked for 15 GiB)."""
    from shufflesim.accounting.numerics.binomial import log_binom_pmf

    mode = min(N, int((N + 1) * p))
    reach = int(math.ceil(1.5 * math.sqrt(2.0 * width * (N * p * (1.0 - p) + 1.0)))) + 16
    while True:
        a, b = max(0, mode - reach), min(N, mode + reach)
        lp = log_binom_pmf(np.arange(a, b + 1), N, p)
        m = int(np.argmax(lp))
        floor = lp[m] - width
        if (a == 0 or lp[0] < floor) and (b == N or lp[-1] < floor):
            lo, hi = _window(lp, m, floor)
            return a + lo, a + hi, lp[lo:hi + 1]
        reach *= 2


def _log_tail_bound(N: int, p: float, lo: int, hi: int) -> float:
    """log of a certified upper bound on P(C < lo) + P(C > hi), C ~ Bin(N, p) (the Chernoff bound
    P(C <= x) <= exp(-N KL(x/N || p)) below the mean and its mirror above; -inf for the whole support)."""
    from shufflesim.accounting.numerics.binomial import binom_log_kl

    terms = []
    if lo > 0:
        terms.append(-float(binom_log_kl(min(lo - 1, N * p), N, p)) if lo - 1 < N * p else 0.0)
    if hi < N:
        terms.append(-float(binom_log_kl(max(hi + 1, N * p), N, p)) if hi + 1 > N * p else 0.0)
    return float(np.logaddexp.reduce(terms)) if terms else -math.inf


#: largest number of clones c (the inner Bin(c, 1/2)) at which the numerical method is offered: scipy's bdtrc,
#: which gives its tails, was measured against exact sums at 3e-11 relative at c = 3.7e4 but 8e-10 at 3.7e5
#: and 4e-9 at 3.7e6, beyond ROUNDING_MARGIN (docs/theory.md#bounds-feldman-numerical)
MAX_CLONES = 50_000


def numerical_validity(n: int, eps0: float) -> str | None:
    """Why the numerical method is not offered at (n, eps0), or None: the clone counts it visits (about
    (n - 1) e^{-eps0} plus a wide margin) must stay within :data:`MAX_CLONES`."""
    N, p = n - 1, math.exp(-eps0)
    reach = N * p + 40.0 * math.sqrt(N * p) + 64.0
    if reach > MAX_CLONES:
        return (f"feldman-numerical needs clone counts up to about {reach:.3g} (n e^-eps0), beyond the "
                f"{MAX_CLONES} where its binomial tails are validated; use --method tight (same dominating "
                "question, certified at any n)")
    return None


#: relative margin added to the upper and removed from the lower bound for floating-point rounding
#: (the computed values agree with 60-digit mpmath to ~1e-14 relative in the tests)
ROUNDING_MARGIN = 1e-9


def feldman_numerical_log_delta(
    eps: float,
    *,
    n: int,
    eps0: float,
    step: int = 1,
    tail_rtol: float = 1e-6,
    decide_at: float | None = None,
) -> tuple[float, float]:
    """(log upper, log lower) bounds on delta(eps) of Feldman et al.'s pair (see module docstring).

    ``decide_at``: a log-delta threshold; if given, the window stops widening as soon as the bounds
    decide on which side of it delta lies (used by the eps(delta) bisection), so the returned interval
    may then be wider than ``tail_rtol``.
    """
    eps = check_real("eps", eps, low=0.0)
    n = check_int("n", n, minimum=1)
    eps0 = check_real("eps0", eps0, low=0.0)
    step = check_int("step", step, minimum=1)
    tail_rtol = check_real("tail_rtol", tail_rtol, low=0.0, low_open=True)
    if eps >= eps0:
        return -math.inf, -math.inf
    N = n - 1
    p = math.exp(-eps0)
    alpha = 1.0 / (1.0 + math.exp(-eps0))
    d0 = alpha - math.exp(eps) * (1.0 - alpha)  # delta_c at c = 0: the LDP delta
    # = alpha (1 - e^{eps - eps0}); in that form where the difference cancels (eps0 subnormal / eps ~ eps0)
    log_delta0 = math.log(d0) if d0 > 0.0 else math.log(-math.expm1(eps - eps0)) + math.log(alpha)
    width = 50.0
    best = None
    while True:
        c_lo, c_hi, lpw = _binom_window(N, p, width)
        if c_hi > MAX_CLONES:
            if best is not None:  # a wider window would leave the validated range: the last one, its tail added
                return best
            raise ParameterError(numerical_validity(n, eps0) or f"feldman-numerical: clone counts up to {c_hi} "
                                 f"exceed {MAX_CLONES}; use --method tight")
        starts = np.arange(c_lo, c_hi + 1, step, dtype=np.int64)
        ends = np.minimum(starts + step - 1, c_hi)
        log_mass = np.logaddexp.reduceat(lpw, starts - c_lo)
        up_s, lo_s = _log_delta_c(starts, eps, eps0)  # upper bound at the block's first c
        lo_e = lo_s if step == 1 else _log_delta_c(ends, eps, eps0)[1]  # lower bound at its last c
        log_up = float(logsumexp(log_mass + up_s))
        log_low = float(logsumexp(log_mass + lo_e))  # the c outside the window add >= 0: dropped (lower end)
        # c outside the window: delta_c <= delta_0 (delta_c decreases in c), their mass <= the Chernoff bound
        slack = _log_tail_bound(N, p, c_lo, c_hi) + log_delta0
        log_up = float(np.logaddexp(log_up, slack))
        full = c_lo == 0 and c_hi == N
        decided = decide_at is not None and (log_up <= decide_at or log_low > decide_at)
        best = (log_up + ROUNDING_MARGIN, log_low - ROUNDING_MARGIN)
        if full or decided or slack <= math.log(tail_rtol) + log_low:
            return best
        width *= 2.0


def feldman_numerical_delta(
    eps: float, *, n: int, eps0: float, step: int = 1, tail_rtol: float = 1e-6
) -> DeltaBound | NotApplicable:
    """Upper and lower bounds on delta(eps) for Feldman et al.'s pair by the numerical method.

    ``step``: width of the blocks of clone counts c (1 = exact, larger = faster and looser).
    """
    why = numerical_validity(check_int("n", n, minimum=1), check_real("eps0", eps0, low=0.0))
    if why is not None:
        return NotApplicable("feldman-numerical", why, eps=float(eps))
    log_up, log_low = feldman_numerical_log_delta(eps, n=n, eps0=eps0, step=step, tail_rtol=tail_rtol)
    eps = float(eps)
    notes = [_REF_NUM, f"step={step}"]
    if eps >= eps0:
        notes.append("eps >= eps0: delta = 0 (the pair's likelihood ratio is at most e^eps0)")
    up = math.exp(log_up) if log_up > -math.inf else 0.0
    low = math.exp(log_low) if log_low > -math.inf else 0.0
    if (up == 0.0 and log_up > -math.inf) or (low == 0.0 and log_low > -math.inf):
        notes.append(f"delta underflows a float: log delta in [{_fmt(log_low)}, {_fmt(log_up)}]")
    return DeltaBound(
        eps=eps, delta_upper=min(up, 1.0), delta_lower=min(low, 1.0), method="feldman-numerical", notes=tuple(notes)
    )


def feldman_numerical_eps(
    delta: float, *, n: int, eps0: float, step: int = 1, tail_rtol: float = 1e-6, rtol: float = 1e-8
) -> EpsBound | NotApplicable:
    """Bounds on eps(delta) for Feldman et al.'s pair: ``eps_upper`` by bisection on the upper delta curve
    (the bound there is <= delta), ``eps_lower`` by bisection on the lower curve (the true delta there is >
    delta, so the true eps(delta) is larger).  ``rtol``: relative width at which bisection stops."""
    delta = check_probability("delta", delta)
    n = check_int("n", n, minimum=1)
    eps0 = check_real("eps0", eps0, low=0.0)
    why = numerical_validity(n, eps0)
    if why is not None:
        return NotApplicable("feldman-numerical", why, delta=delta)

    log_target = math.log(delta) if delta > 0.0 else -math.inf

    def up(e: float) -> float:
        return feldman_numerical_log_delta(
            e, n=n, eps0=eps0, step=step, tail_rtol=tail_rtol, decide_at=log_target
        )[0]

    def low(e: float) -> float:
        return feldman_numerical_log_delta(
            e, n=n, eps0=eps0, step=step, tail_rtol=tail_rtol, decide_at=log_target
        )[1]

    eps_up, _, ev1 = invert_delta_curve(up, log_target, lo=0.0, hi=eps0, rtol=rtol)
    _, eps_low, ev2 = invert_delta_curve(low, log_target, lo=0.0, hi=eps0, rtol=rtol)
    notes = (
        _REF_NUM,
        f"step={step}",
        f"bisection on log delta, {ev1 + ev2} evaluations; eps_lower < true eps(delta) <= eps_upper",
    )
    return EpsBound(
        delta=delta,
        eps_upper=eps_up,
        eps_lower=0.0 if eps_low is None else eps_low,
        method="feldman-numerical",
        notes=notes,
    )
