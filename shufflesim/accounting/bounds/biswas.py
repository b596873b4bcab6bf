"""Biswas, Jung, Palamidessi: seed 003 §IV, Definition IV.2 (eq 6) and Theorem IV.1, EXACTLY as published.

Setting (seed 003 §IV-B/C; docs/theory.md#pairs-biswas): n users run k-RR with local privacy eps0; the released
quantity analysed is the shuffled count of the value x0.  User u holds x0 (data set D(x0)) or x1 != x0
(D(x1)); n_{x0} of the other n - 1 users hold x0 and the remaining n - 1 - n_{x0} hold values other than x0.

The paper defines (eqs 3-5, Definition IV.2), for s in {0..n} and r in {0..s}:

    kappa1 = e^eps0 (e^eps0 + k - 2)/(k - 1),   kappa2 = (k - 1)/(e^eps0 + k - 2),
    kappa3(s) = (k - 1)^{n_x0} (e^eps0 + k - 2)^{n - n_x0 - s} / (e^eps0 + k - 1)^n,
    mu(s, r) = C(n_x0, r) C(n - n_x0, s - r) kappa1^r,
    tau_r = kappa2 (n - n_x0) + (e^eps0 - kappa2)(s - r),
    delta_hat(eps) = sum_s 1{v_s > eps} (1 - e^{eps - v_s}) kappa3/(n - n_x0) sum_r mu(s, r) tau_r        (6)

with, in Theorem IV.1,

    v_s = ln( kappa2 + [(e^eps0 - kappa2)/(n - n_x0)] sum_r (s - r) C(n_x0, r) C(n - 1 - n_x0, s - 1 - r) kappa1^r
                       / sum_r C(n_x0, r) C(n - n_x0, s - r) kappa1^r ).

How the garbled text was read (every reading is a choice; all are recorded here):

1. tau_r depends on s through (s - r) although the notation shows only r: it is tau_{s,r}, as in the
   derivation (Appendix A, the step before eq 12).
2. C(a, b) = 0 when b < 0 or b > a; in particular the r = s term of the v_s numerator vanishes
   (C(., -1) = 0 and s - r = 0).
3. kappa3 depends on s (eq 5); it multiplies the inner sum of eq 6 term by term.
4. The sums over r run over 0..s as printed; terms with r > n_x0 vanish through C(n_x0, r).
5. eq 6 is one-directional (x0 over x1, Definition IV.1); no maximum with the reverse direction is taken.
6. Theorem IV.1 is stated for eps > 0 (eps <= 0 is refused); Remark 2 allows k >= 2 and eps0 > 0, while
   the appendix writes "for every k > 2"; k = 2 is accepted and flagged in the notes.
7. v_s is used exactly as printed in Theorem IV.1 and in the last line of the appendix's eq 15.  The
   previous line of eq 15 (and eqs 11-13) give the log ratio of the two count distributions with the
   numerator sum_r C(n_x0, r) C(n - 1 - n_x0, s - 1 - r) kappa1^r, without the factor (s - r)/(n - n_x0);
   the printed form keeps that factor AND the binomial C(n - 1 - n_x0, s - 1 - r), so it is not equal to
   the previous line.  It is NOT corrected here (the brief: "implemented exactly as published"); see
   :func:`biswas_log_pmfs` for the paper's own eqs 12-13, whose log ratio is the true privacy loss.

Sums are evaluated in log space; the sums over r are convolutions, evaluated exactly (algebraically
identical rearrangement: sum_r mu(s,r) tau_{s,r} = kappa2 (n - n_x0) M_s + (e^eps0 - kappa2) sum_r mu(s,r)(s-r)).
The cost is O(n * min(n_x0, n - n_x0)); ``max_work`` caps it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, logsumexp

from shufflesim.core.checks import check_int, check_probability, check_real
from shufflesim.errors import ParameterError
from shufflesim.accounting.model.results import DeltaBound, EpsBound, NotApplicable
from shufflesim.accounting.bounds.transforms import invert_delta_curve

__all__ = [
    "biswas_log_pmfs",
    "biswas_privacy_loss",
    "biswas_delta",
    "biswas_eps",
    "BISWAS_MAX_WORK",
]

#: default cap on n * min(n_x0 + 1, n - n_x0 + 1), the size of the log-space convolutions
BISWAS_MAX_WORK = 200_000_000

_REF = "seed 003 eq 6 / Theorem IV.1 as published (not a certified bound: see module docstring)"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _log_comb(a: int, b: np.ndarray) -> np.ndarray:
    """log C(a, b) elementwise, -inf outside 0 <= b <= a."""
    b = np.asarray(b)
    ok = (b >= 0) & (b <= a)
    bb = np.where(ok, b, 0).astype(float)
    out = gammaln(a + 1.0) - gammaln(bb + 1.0) - gammaln(a - bb + 1.0)
    return np.where(ok, out, -np.inf)


def _log_convolve(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """out[s] = log sum_r exp(la[r] + lb[s - r]), exactly, looping over the shorter sequence."""
    if la.size > lb.size:
        la, lb = lb, la
    out = np.full(la.size + lb.size - 1, -np.inf)
    for r, v in enumerate(la):
        if v == -np.inf:
            continue
        seg = out[r : r + lb.size]
        np.logaddexp(seg, v + lb, out=seg)
    return out


def _check(n, k, eps0, n_x0, max_work) -> tuple[int, int, float, int]:
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    eps0 = check_real("eps0", eps0, low=0.0, low_open=True)  # Remark 2: eps0 > 0
    n_x0 = check_int("n_x0", n_x0, minimum=0, maximum=n - 1)
    work = (n + 1) * (min(n_x0, n - n_x0) + 1)
    if work > max_work:
        raise ParameterError(
            f"biswas: n={n}, n_x0={n_x0} needs {work:.3g} log-space operations per convolution, above the "
            f"limit max_work={max_work:.3g}; raise max_work or use smaller n"
        )
    return n, k, eps0, n_x0


@lru_cache(maxsize=16)
def _tables(n: int, k: int, eps0: float, n_x0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(v_hat, log P0, log P1) over s = 0..n; P0 = eq 12 (the summand of eq 6), P1 = eq 13."""
    m = n_x0
    E = math.exp(eps0)
    log_k1 = eps0 + math.log(E + k - 2) - math.log(k - 1)
    kappa2 = (k - 1) / (E + k - 2)
    r = np.arange(m + 1)
    j = np.arange(n - m + 1)
    la = _log_comb(m, r) + r * log_k1  # C(n_x0, r) kappa1^r
    lb = _log_comb(n - m, j)  # C(n - n_x0, j)
    with np.errstate(divide="ignore"):
        log_j = np.log(j.astype(float))
    log_M = _log_convolve(la, lb)  # sum_r mu(s, r)
    log_Ms_r = _log_convolve(la, lb + log_j)  # sum_r mu(s, r) (s - r)
    # printed v_s numerator: sum_r (s - r) C(n_x0, r) C(n - 1 - n_x0, s - 1 - r) kappa1^r
    log_num = _log_convolve(la, log_j + _log_comb(n - 1 - m, j - 1))
    s = np.arange(n + 1)
    log_k3 = m * math.log(k - 1) + (n - m - s) * math.log(E + k - 2) - n * math.log(E + k - 1)
    # sum_r mu tau = kappa2 (n - m) M_s + (E - kappa2) sum_r mu (s - r)
    log_sum_mu_tau = np.logaddexp(math.log(kappa2 * (n - m)) + log_M, math.log(E - kappa2) + log_Ms_r)
    log_P0 = log_k3 - math.log(n - m) + log_sum_mu_tau
    log_P1 = log_k3 + log_M
    # the printed numerator is at most sum_r C(n_x0, r) C(n-1-n_x0, s-1-r) kappa1^r <= M_s, so
    # frac <= e^eps0 - kappa2 and v_hat <= eps0 (equality at s = n); clip rounding noise above that
    frac = np.exp(math.log(E - kappa2) - math.log(n - m) + log_num - log_M)
    v_hat = np.minimum(np.log(kappa2 + frac), eps0)
    for arr in (v_hat, log_P0, log_P1):
        arr.setflags(write=False)
    return v_hat, log_P0, log_P1


def biswas_log_pmfs(
    *, n: int, k: int, eps0: float, n_x0: int, max_work: int = BISWAS_MAX_WORK
) -> tuple[np.ndarray, np.ndarray]:
    """log P(M_x0(x0) = s) and log P(M_x0(x1) = s), s = 0..n, from the paper's own eqs 12 and 13
    (seed 003 Appendix A): kappa3/(n - n_x0) sum_r mu(s,r) tau_r and kappa3 sum_r mu(s,r)."""
    n, k, eps0, n_x0 = _check(n, k, eps0, n_x0, max_work)
    _, lp0, lp1 = _tables(n, k, eps0, n_x0)
    return lp0.copy(), lp1.copy()


def biswas_privacy_loss(*, n: int, k: int, eps0: float, n_x0: int, max_work: int = BISWAS_MAX_WORK) -> np.ndarray:
    """v_s of Theorem IV.1 exactly as printed, s = 0..n."""
    n, k, eps0, n_x0 = _check(n, k, eps0, n_x0, max_work)
    return _tables(n, k, eps0, n_x0)[0].copy()


def _log_delta_hat(eps: float, v: np.ndarray, lp0: np.ndarray) -> float:
    sel = v > eps
    if not sel.any():
        return -math.inf
    return float(logsumexp(np.log(-np.expm1(eps - v[sel])) + lp0[sel]))


def _notes(k: int) -> tuple[str, ...]:
    notes = [_REF, "one direction only (x0 over x1), as eq 6"]
    if k == 2:
        notes.append("k = 2: the paper's appendix states k > 2 (Remark 2 allows k >= 2); evaluated as printed")
    return tuple(notes)


def biswas_delta(
    eps: float, *, n: int, k: int, eps0: float, n_x0: int, max_work: int = BISWAS_MAX_WORK
) -> DeltaBound | NotApplicable:
    """delta_hat(eps) of seed 003 eq 6 with v_s as printed in Theorem IV.1.

    This is the published formula, reported in ``delta_upper`` because that is how the paper presents it;
    it is not certified (see the module docstring, item 7, and the tests comparing it with exact
    computation).  A value below the float range is returned as 0.0 with its log in the notes.
    """
    eps = check_real("eps", eps, low=0.0)
    n, k, eps0, n_x0 = _check(n, k, eps0, n_x0, max_work)
    if eps <= 0.0:
        return NotApplicable("biswas", "biswas Theorem IV.1 is stated for eps > 0; got eps=0", eps=eps)
    v, lp0, _ = _tables(n, k, eps0, n_x0)
    ld = _log_delta_hat(eps, v, lp0)
    notes = list(_notes(k))
    val = math.exp(ld) if ld > -math.inf else 0.0
    if val == 0.0 and ld > -math.inf:
        notes.append(f"delta underflows a float: log delta = {_fmt(ld)}")
    return DeltaBound(eps=eps, delta_upper=val, delta_lower=None, method="biswas", notes=tuple(notes))


def biswas_eps(
    delta: float, *, n: int, k: int, eps0: float, n_x0: int, max_work: int = BISWAS_MAX_WORK, rtol: float = 1e-10
) -> EpsBound | NotApplicable:
    """The smallest eps with delta_hat(eps) <= delta, by bisection on eq 6 that never undershoots (the
    paper gives only delta(eps)); between 0 and max_s v_s, where delta_hat vanishes."""
    delta = check_probability("delta", delta)
    n, k, eps0, n_x0 = _check(n, k, eps0, n_x0, max_work)
    v, lp0, _ = _tables(n, k, eps0, n_x0)
    hi = max(float(v.max()), 0.0)
    log_target = math.log(delta) if delta > 0.0 else -math.inf
    eps_up, _, evals = invert_delta_curve(lambda e: _log_delta_hat(e, v, lp0), log_target, lo=0.0, hi=hi, rtol=rtol)
    notes = _notes(k) + (f"eps by bisection on eq 6, safe side with respect to eq 6, {evals} evaluations",)
    return EpsBound(delta=delta, eps_upper=eps_up, eps_lower=None, method="biswas", notes=notes)
