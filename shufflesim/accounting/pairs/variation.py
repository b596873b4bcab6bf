"""Clone-mixture pairs: stronger clones (Feldman, McMillan, Talwar, SODA 2023) and variation-ratio pairs
(Wang et al., VLDB 2024), in row form (docs/theory.md#pairs-clone-mixture).

One family covers both: the other n - 1 users each produce a "clone" with probability r, a fair coin
deciding whether it lands on side 0 or side 1 (C ~ Bin(n-1, r) clones, A | C ~ Bin(C, 1/2) on side 0);
the target adds one element to side 0 with probability a, to side 1 with probability b and nothing with
probability 1 - a - b under P, and the same with a and b exchanged under Q.  The outcome is the pair of
side counts (x, t - x).  With t = x + (t - x) and w(i) = P(C = i):

    P(x, t) = Bin(t, 1/2)(x) [ w(t-1) (2/t) ((a - b) x + b t) + (1 - a - b) w(t) ],
    Q(x, t) = the same with x -> t - x,

i.e. :class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows` with rows t, N = t,
alpha = 2 (a - b) w(t-1) / t and beta = 2 b w(t-1) + (1 - a - b) w(t).

* stronger clones (FMT 2023): r = 2/(e^eps0 + 1), a = e^eps0/(e^eps0 + 1), b = 1 - a;
* variation ratio (p, beta, q) (Wang et al.): alpha_v = beta/(p - 1), r = 2 alpha_v p / q, a = p alpha_v,
  b = alpha_v;
* seed 001's eq 6.1 (``clones_pair``): r = e^-eps0, a = e^eps0/(e^eps0 + 1), b = 0.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from shufflesim.accounting.numerics.binomial import certified_tail, chernoff_window, log_binom_pmf, log_tail_sum
from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.pairs.common import (
    DEFAULT_TAIL_BOUND_MD,
    TRUNCATIONS,
    check_tail_bound,
    hoeffding_window,
    flip_probabilities,
    hull_rows,
    log_budget,
    row_windows,
)
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import ParameterError

REFERENCE_STRONGER = ("Feldman, McMillan, Talwar, SODA 2023 (arXiv:2208.04591): stronger clones, "
                      "C ~ Bin(n-1, 2/(e^eps0+1)); docs/theory.md#pairs-stronger-clones")
#: why the variation-ratio pair is not offered when the target can contribute nothing (a + b < 1)
VR_REFUTED = ("the variation-ratio pair with a + b < 1 (k-RR with k >= 3, Laplace, blanket randomisers) is not "
              "certified: brute-force enumeration finds data sets with a larger exact delta (e.g. k-RR k = 4, "
              "gamma = 0.25, n = 7, eps = 2: 0.1054 vs the pair's 0.0543; docs/theory.md#pairs-variation-ratio)")
REFERENCE_VR = ("Wang, Peng, Li, Wang, Xu, Li, Zhou, Huang, VLDB 2024 (doi:10.14778/3659437.3659444): "
                "variation-ratio reduction; docs/theory.md#pairs-variation-ratio")


def clone_mixture_pair(n, r: float, a: float, b: float, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD,
                       as_rows: bool = True, name: str = "clone-mixture", reference: str = "",
                       params: dict | None = None, rc: float | None = None, rest: float | None = None,
                       truncation: str = "chernoff", return_outcomes: bool = False):
    """The clone-mixture pair (module docstring) with clone probability ``r`` and target weights a >= b.

    Truncation: C on a window with half of ``tail_bound`` — Chernoff (relative entropy, the default) or
    seed 001 §6.2's Hoeffding window (``truncation="hoeffding"``) — and the fair split of the clones in
    row i on a Chernoff window whose budget is spread over the rows; the certified dropped mass is the
    pair's ``tail``, kept outcomes carry exact probabilities.  ``rc`` = 1 − r and ``rest`` = 1 − a − b may
    be given where they are known more accurately than the subtraction (e.g. 1/(e^eps0+1) at large eps0).
    ``return_outcomes=True`` (with ``as_rows=False``) also returns the two side counts of every kept outcome.
    """
    n = check_int("n", n, minimum=1)
    r = check_real("r", r, low=0.0, high=1.0, low_open=True)
    a = check_real("a", a, low=0.0, high=1.0)
    b = check_real("b", b, low=0.0, high=1.0)
    if b > a or a + b > 1.0 + 1e-12:
        raise ParameterError(f"clone mixture needs 0 <= b <= a and a + b <= 1; got a={a}, b={b}")
    if truncation not in TRUNCATIONS:
        raise ParameterError(f"truncation must be one of {', '.join(TRUNCATIONS)}; got {truncation!r}")
    if rest is None:
        rest = 1.0 - a - b
        if rest <= 1e-12:  # a + b = 1 up to rounding (the stronger clone pair): the target always contributes
            rest, b = 0.0, 1.0 - a
    else:
        rest = check_real("rest", rest, low=0.0, high=1.0)
    tail_bound = check_tail_bound(tail_bound)
    lb = log_budget(tail_bound)
    rc = 1.0 - r if rc is None else check_real("rc", rc, low=0.0, high=1.0)
    if truncation == "chernoff":
        i_lo, i_hi, lt_c = chernoff_window(n - 1, r, lb - math.log(2.0), rc)
        i_lo, i_hi, lt_c = int(i_lo), int(i_hi), float(lt_c)
    else:
        i_lo, i_hi, lt_c = hoeffding_window(n - 1, r, tail_bound / 2.0)
    i = np.arange(i_lo, i_hi + 1)
    lw = log_binom_pmf(i, n - 1, r, rc)
    with np.errstate(invalid="ignore"):
        rb = np.where(lw > -np.inf, lb - math.log(2.0) - math.log(i.size) - lw, np.inf)
    j_lo, j_hi, lt_a = row_windows(i, 0.5, rb)
    _, ot, a_lo, a_hi = hull_rows(j_lo, j_hi, np.array([i.size]))
    t_rows = i_lo + ot
    lw_prev = log_binom_pmf(t_rows - 1, n - 1, r, rc)  # log w(t-1)
    lw_here = log_binom_pmf(t_rows, n - 1, r, rc)  # log w(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.where(t_rows >= 1, math.log(2.0 * (a - b)) + lw_prev - np.log(np.maximum(t_rows, 1)), -np.inf) \
            if a > b else np.full(t_rows.shape, -np.inf)
        lbeta = np.logaddexp(math.log(2.0 * b) + lw_prev if b > 0 else np.full(t_rows.shape, -np.inf),
                             math.log(rest) + lw_here if rest > 0 else np.full(t_rows.shape, -np.inf))
    scale = np.maximum(la, lbeta)
    log_tail = np.logaddexp(lt_c, log_tail_sum(lw + lt_a))
    keep = (a_lo <= a_hi) & (scale > -np.inf)
    prm = {"n": n, **(params or {}), "r": r, "a": a, "b": b, "tail_bound": tail_bound, "clone_window": (i_lo, i_hi)}
    rows = BinomialRows(
        log_w=scale[keep],
        N=t_rows[keep],
        alpha=np.exp(la[keep] - scale[keep]),
        beta=np.exp(lbeta[keep] - scale[keep]),
        lo=a_lo[keep],
        hi=a_hi[keep],
        tail=certified_tail(float(log_tail)),
        extra_log_p=np.zeros(0),
        extra_log_q=np.zeros(0),
        name=name,
        params=prm,
        reference=reference,
    )
    rows = replace(rows, params={**prm, "support_size": rows.n_atoms, "rows": int(rows.N.size)})
    if as_rows:
        return rows
    if return_outcomes:
        log_p, log_q, row, x = rows.expand(with_outcomes=True)
        t = rows.N[row]
    else:
        log_p, log_q = rows.expand()
    pair = PMFPair(log_p=log_p, log_q=log_q, name=name, params=dict(rows.params), reference=reference,
                   tail_p=rows.tail, tail_q=rows.tail)
    return (pair, x, t - x) if return_outcomes else pair


def stronger_clones_pair(n, eps0, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD, as_rows: bool = True):
    """Feldman, McMillan, Talwar 2023's stronger clone pair for any eps0-LDP randomiser.

    P = (A + D, C - A + 1 - D), Q = (A + 1 - D, C - A + D), C ~ Bin(n-1, 2/(e^eps0+1)), A | C ~ Bin(C, 1/2),
    D ~ Bern(e^eps0/(e^eps0+1)).  Every loss is finite and at most eps0 (docs/theory.md#pairs-stronger-clones).
    """
    n = check_int("n", n, minimum=1)
    eps0 = check_positive("eps0", eps0)
    lo, hi = flip_probabilities(eps0)  # 1/(e^eps0+1), e^eps0/(e^eps0+1)
    return clone_mixture_pair(n, 2.0 * lo, hi, lo, tail_bound=tail_bound, as_rows=as_rows, name="stronger-clones",
                              reference=REFERENCE_STRONGER, params={"eps0": eps0})


def variation_ratio_weights(p: float, beta: float, q: float) -> tuple[float, float, float]:
    """(r, a, b) of the variation-ratio pair with parameters (p, beta, q): alpha = beta/(p-1), r = 2 alpha p/q,
    a = p alpha, b = alpha (Wang et al. 2024; docs/theory.md#pairs-variation-ratio)."""
    p = check_real("p", p, low=1.0, low_open=True)
    beta = check_real("beta", beta, low=0.0, high=1.0, low_open=True)
    q = check_real("q", q, low=1.0)
    alpha = beta / (p - 1.0)
    if alpha * (p + 1.0) > 1.0 + 1e-12:
        raise ParameterError(f"variation-ratio parameters need beta <= (p-1)/(p+1); got p={p}, beta={beta}")
    r = min(1.0, 2.0 * alpha * p / q)
    return r, p * alpha, alpha


def variation_ratio_pair(n, p: float, beta: float, q: float, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD,
                         as_rows: bool = True, unverified: bool = False):
    """The variation-ratio pair of Wang et al. 2024 for a randomiser with parameters (p, beta, q).

    Only the parameters with a + b = 1 (beta = (p-1)/(p+1), p = q: any eps0-LDP randomiser, binary RR) give a
    pair shufflesim certifies (it is then the stronger clone pair).  With a + b < 1 (k-RR with k >= 3, the
    Laplace mechanism, blanket randomisers) the brute-force oracle finds data sets whose exact delta exceeds
    this pair's (docs/theory.md#pairs-variation-ratio), so those parameters raise NotApplicableError unless
    ``unverified=True`` (for the tests and the benchmark, never for an answer).
    """
    r, a, b = variation_ratio_weights(p, beta, q)
    if a + b < 1.0 - 1e-12 and not unverified:
        from shufflesim.errors import NotApplicableError

        raise NotApplicableError(VR_REFUTED)
    return clone_mixture_pair(n, r, a, b, tail_bound=tail_bound, as_rows=as_rows, name="variation-ratio",
                              reference=REFERENCE_VR, params={"p": p, "beta": beta, "q": q})


# ---- variation-ratio parameters of named randomisers (docs/theory.md#pairs-variation-ratio) ----

def vr_params_ldp(eps0: float) -> tuple[float, float, float]:
    """Any eps0-LDP randomiser: (e^eps0, (e^eps0-1)/(e^eps0+1), e^eps0) -- the stronger clone pair."""
    e = math.exp(check_positive("eps0", eps0))
    return e, math.tanh(eps0 / 2.0), e


def vr_params_krr(k: int, eps0: float) -> tuple[float, float, float]:
    """k-RR with local eps0: p = q = e^eps0, beta = (e^eps0 - 1)/(e^eps0 + k - 1)."""
    e = math.exp(check_positive("eps0", eps0))
    return e, math.expm1(eps0) / (e + k - 1.0), e


def vr_params_laplace(eps0: float) -> tuple[float, float, float]:
    """The Laplace mechanism on [0, 1] with scale 1/eps0: p = q = e^eps0, beta = TV(Lap(0), Lap(1)) =
    1 - e^(-eps0/2)."""
    e = math.exp(check_positive("eps0", eps0))
    return e, -math.expm1(-eps0 / 2.0), e


def vr_params_blanket(k_values: int, gamma: float) -> tuple[float, float, float]:
    """A blanket randomiser: with probability gamma a uniform value of ``k_values``, else a value that
    depends on the input (randomised rounding in the summation protocols).  Ratio bound
    p = q = 1 + (1 - gamma) k_values / gamma; total variation beta <= 1 - gamma."""
    k_values = check_int("k_values", k_values, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    pq = 1.0 + (1.0 - gamma) * k_values / gamma
    return pq, min(1.0 - gamma, (pq - 1.0) / (pq + 1.0)), pq


def vr_params_matrix(mat) -> tuple[float, float, float]:
    """(p, beta, q) of a finite randomiser given as a (inputs x outputs) matrix of probabilities, for the
    worst pair of target inputs: p = max ratio between two inputs' laws, beta = max total variation,
    q = p (the ratio bound against any other input is the same maximum)."""
    m = np.asarray(mat, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = m[:, None, :] / m[None, :, :]
    ratio = np.where(np.isnan(ratio), 1.0, ratio)
    p = float(ratio.max())
    tv = 0.5 * np.abs(m[:, None, :] - m[None, :, :]).sum(axis=-1)
    return p, float(tv.max()), p
