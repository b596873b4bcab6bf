"""General eps0-LDP randomisers: Feldman, McMillan and Talwar's "clones" pair (seed 001 §6, Appendix B)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import ParameterError
from shufflesim.accounting.pmf_pair import PMFPair
from shufflesim.accounting.binomial import certified_tail, chernoff_window, log_binom_pmf, log_tail_sum
from shufflesim.accounting.binomial_rows import BinomialRows
from shufflesim.accounting.pairs.common import (
    DEFAULT_TAIL_BOUND_MD,
    check_tail_bound,
    flip_probabilities,
    hull_rows,
    log_budget,
    row_windows,
)

REFERENCE_CLONES = (
    "Feldman, McMillan, Talwar 2020 (Remark 3.5) via Koskela, Heikkila, Honkela (seed 001) §6, "
    "eqs 6.1-6.8, Lemmas B.1-B.3, §6.2; docs/theory.md#pairs-clones"
)

TRUNCATIONS = ("chernoff", "hoeffding")


def clones_pair(
    n,
    eps0,
    *,
    tail_bound: float = DEFAULT_TAIL_BOUND_MD,
    truncation: str = "chernoff",
    return_outcomes: bool = False,
    as_rows: bool = False,
):
    """P = (A + Delta, C - A), Q = (A, C - A + Delta) (seed 001 eqs 6.1-6.2).

    C ~ Bin(n-1, e^-eps0), A | C ~ Bin(C, 1/2), Delta ~ Bern(e^eps0/(e^eps0+1)).  The pair bounds the
    shuffled output of *any* eps0-LDP randomiser against an adversary that sees the shuffled output;
    it is tight for the pair, not for a specific randomiser (seed 001 §6).

    Outcome (a, b).  As the mixtures of eqs 6.3-6.4, with q = e^eps0/(e^eps0+1), t = a + b and
    w(i) = P(C = i):
        P(a, b) = q w(t-1) Bin(t-1, 1/2)(a-1) + (1-q) w(t) Bin(t, 1/2)(a)
        Q(a, b) = q w(t-1) Bin(t-1, 1/2)(a)   + (1-q) w(t) Bin(t, 1/2)(a)
    which equal eqs 6.7-6.8 (Lemma B.3) and give the log-ratios of Lemma 11 / Lemma B.2 (tests check
    both).  The only infinite-loss outcome of P/Q is (n, 0), with mass 2^-(n-1) e^-(n-2)eps0/(e^eps0+1)
    (§6.1); symmetrically (0, n) for Q/P.  Note Lemma B.2 of the seed writes "q = e^-eps0": the q of
    eq 6.3 is meant.

    Truncation (§6.2): C is kept on a window with half of ``tail_bound``, and A | C = i on a window
    whose budget is spread over the rows (row i gets tail/(2 R w(i))).  ``truncation="hoeffding"``
    uses the paper's Hoeffding window for C, S_c = [(p - c)(n-1), (p + c)(n-1)] with
    c = sqrt(log(2/tau)/(2(n-1))), tau = tail_bound; the default ``"chernoff"`` uses the relative-entropy
    (Chernoff) bound, which certifies the same tail with a much narrower window when e^-eps0 is small.
    Either way the certified dropped mass is stored in tail_p = tail_q and every kept outcome has its
    exact probability.  ``return_outcomes=True`` also returns the (a, b) arrays.  ``as_rows=True``
    returns the :class:`BinomialRows` form (rows t = a + b, which has the same law under P and Q):
    exact single-use delta in O(rows) (the exact counterpart of Feldman et al.'s numerical method,
    docs/theory.md#bounds-feldman-numerical) and atoms block by block.
    """
    n = check_int("n", n, minimum=1)
    eps0 = check_positive("eps0", eps0)
    tail_bound = check_tail_bound(tail_bound)
    if truncation not in TRUNCATIONS:
        raise ParameterError(f"truncation must be one of {', '.join(TRUNCATIONS)}; got {truncation!r}")
    p = math.exp(-eps0)  # clone probability
    pc = -math.expm1(-eps0)  # 1 - p
    dq0, dq1 = flip_probabilities(eps0)  # P(Delta = 0), P(Delta = 1)
    lb = log_budget(tail_bound)
    if truncation == "chernoff":
        i_lo, i_hi, lt_c = chernoff_window(n - 1, p, lb - math.log(2.0), pc)
        i_lo, i_hi, lt_c = int(i_lo), int(i_hi), float(lt_c)
    else:
        i_lo, i_hi, lt_c = _hoeffding_window(n - 1, p, tail_bound / 2.0)
    i = np.arange(i_lo, i_hi + 1)
    lw = log_binom_pmf(i, n - 1, p, pc)
    with np.errstate(invalid="ignore"):
        rb = np.where(lw > -np.inf, lb - math.log(2.0) - math.log(i.size) - lw, np.inf)
    j_lo, j_hi, lt_a = row_windows(i, 0.5, rb)
    # outcome rows: totals t = i_lo .. i_hi + 1; a in the hull of rows t (Delta = 0) and t-1 (Delta = 1)
    _, ot, a_lo, a_hi = hull_rows(j_lo, j_hi, np.array([i.size]))
    t_rows = i_lo + ot
    ldq0, ldq1 = math.log(dq0), math.log(dq1)
    lw_prev = log_binom_pmf(t_rows - 1, n - 1, p, pc)  # log w(t-1)
    lw_here = log_binom_pmf(t_rows, n - 1, p, pc)  # log w(t)
    # Row t, column a, N = t.  By Lemma B.1, Bin(t-1,1/2)(a-1) = Bin(t,1/2)(a) 2a/t and
    # Bin(t-1,1/2)(a) = Bin(t,1/2)(a) 2(t-a)/t, so
    #   P(a, b) = Bin(t,1/2)(a) [q w(t-1) (2/t) a + (1-q) w(t)],  Q(a, b) = same with a -> t - a:
    # BinomialRows with alpha = q w(t-1) 2/t and beta = (1-q) w(t) (scaled by their maximum).
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.where(t_rows >= 1, ldq1 + lw_prev + math.log(2.0) - np.log(np.maximum(t_rows, 1)), -np.inf)
    lbeta = ldq0 + lw_here
    scale = np.maximum(la, lbeta)
    log_tail = np.logaddexp(lt_c, log_tail_sum(lw + lt_a))
    keep = (a_lo <= a_hi) & (scale > -np.inf)
    rows = BinomialRows(
        log_w=scale[keep],
        N=t_rows[keep],
        alpha=np.exp(la - scale)[keep],
        beta=np.exp(lbeta - scale)[keep],
        lo=a_lo[keep],
        hi=a_hi[keep],
        tail=certified_tail(float(log_tail)),
        extra_log_p=np.zeros(0),
        extra_log_q=np.zeros(0),
        name="clones",
        reference=REFERENCE_CLONES,
    )
    if as_rows:
        return replace(rows, params={"n": n, "eps0": eps0, "tail_bound": tail_bound, "truncation": truncation,
                                     "clone_window": (i_lo, i_hi), "support_size": rows.n_atoms,
                                     "rows": int(rows.N.size)})
    if return_outcomes:
        log_p, log_q, r, a = rows.expand(with_outcomes=True)
        t = rows.N[r]
    else:
        log_p, log_q = rows.expand()
    tail = rows.tail
    pair = PMFPair(
        log_p=log_p,
        log_q=log_q,
        name="clones",
        params={
            "n": n,
            "eps0": eps0,
            "tail_bound": tail_bound,
            "truncation": truncation,
            "clone_window": (i_lo, i_hi),
            "support_size": int(log_p.size),
        },
        reference=REFERENCE_CLONES,
        tail_p=tail,
        tail_q=tail,
    )
    return (pair, a, t - a) if return_outcomes else pair


def _hoeffding_window(N: int, p: float, tau: float) -> tuple[int, int, float]:
    """Seed 001 §6.2: S_c = [max(0, (p-c)N), min(N, (p+c)N)], c = sqrt(log(2/tau)/(2N)); mass outside <= tau."""
    if N == 0 or tau <= 0:
        return 0, N, -math.inf
    c = math.sqrt(math.log(2.0 / tau) / (2.0 * N))
    lo = max(0, math.ceil((p - c) * N))
    hi = min(N, math.floor((p + c) * N))
    # Hoeffding: P(C <= (p-c)N) <= exp(-2Nc^2) = tau/2 and the same above; a side inside the support
    # boundary drops nothing.
    sides = (lo > 0) + (hi < N)
    log_tail = math.log(sides * tau / 2.0) if sides else -math.inf
    return lo, hi, log_tail
