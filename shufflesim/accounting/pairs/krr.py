"""Shuffled k-ary randomised response (blanket form): the strong and weak adversaries' pairs.

The randomiser (docs/theory.md#randomised-response): with probability 1 - gamma report the true value, with probability
gamma a value uniform on all k values.  W.l.o.g. the target holds value 1 in X and value 2 in X'.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import ParameterError
from shufflesim.maths.rr import eps0_from_gamma, eps0_upper, gamma_from_eps0
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.numerics.binomial import certified_tail, chernoff_window, log_binom_pmf, log_tail_sum
from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.pairs.common import (
    DEFAULT_TAIL_BOUND_1D,
    DEFAULT_TAIL_BOUND_MD,
    check_tail_bound,
    finish,
    hull_rows,
    log_binom_pmf_rows,
    log_budget,
    ragged,
    row_windows,
)

from shufflesim.accounting.model.mechanism import Relation

ADVERSARIES = tuple(r.value for r in Relation)

REFERENCE_STRONG_1D = (
    "Koskela, Heikkila, Honkela: seed 000 eq 3.1 / seed 001 eq 5.1 (after Balle et al. 2019, Thm 3.1); "
    "docs/theory.md#pairs-krr-strong-1d"
)
REFERENCE_STRONG = "Balle et al. 2019 blanket argument, full view of adversary A_s; docs/theory.md#pairs-krr-strong"
REFERENCE_WEAK = "Koskela, Heikkila, Honkela (seed 001) Definition 9, Theorem 10, Appendix A; docs/theory.md#pairs-krr-weak"


def krr_gamma_from_eps0(k, eps0) -> float:
    """Blanket probability gamma = k/(e^eps0 + k - 1) of the eps0-LDP k-RR (docs/theory.md#randomised-response)."""
    k = check_int("k", k, minimum=2)
    eps0 = check_positive("eps0", eps0)
    return gamma_from_eps0(eps0, k)


def krr_eps0_from_gamma(k, gamma) -> float:
    """Local privacy eps0 = log(1 + k(1 - gamma)/gamma) of k-RR with blanket probability gamma (docs/theory.md#randomised-response)."""
    k = check_int("k", k, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    return eps0_from_gamma(gamma, k)


def krr_pair(n, k, gamma, adversary: str = "strong-1d", *, tail_bound: float | None = None, as_rows: bool = False):
    """The neighbouring pair of shuffled k-RR for one of three adversaries.

    ``adversary="strong-1d"``: :func:`krr_strong_1d_pair` (the pair exactly as the seeds state it);
    ``"strong"``: :func:`krr_strong_pair` (the strong adversary's full view);
    ``"weak"``: :func:`krr_weak_pair` (seed 001 Theorem 10);
    ``"shuffled"``: :func:`krr_shuffled_pair` (the shuffled reports alone: stronger clones at k-RR's ε0).
    ``tail_bound`` defaults to 1e-300 for the 1-D pair and 1e-15 for the 2-D/3-D pairs.
    ``as_rows=True`` returns the 2-D/3-D pairs in row form (:class:`BinomialRows`, what the tight
    accountant evaluates fastest); the 1-D pair is small and always a :class:`PMFPair`.
    """
    if adversary not in ADVERSARIES:
        raise ParameterError(f"adversary must be one of {', '.join(ADVERSARIES)}; got {adversary!r}")
    if adversary == "shuffled":
        return krr_shuffled_pair(n, k, gamma, tail_bound=DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound,
                                 as_rows=as_rows)
    if adversary == "strong-1d":
        return krr_strong_1d_pair(n, k, gamma, tail_bound=DEFAULT_TAIL_BOUND_1D if tail_bound is None else tail_bound)
    tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
    make = krr_strong_pair if adversary == "strong" else krr_weak_pair
    return make(n, k, gamma, tail_bound=tb, as_rows=as_rows)


def krr_shuffled_pair(n, k, gamma, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD, as_rows: bool = False):
    """A dominating pair for the shuffled k-RR reports alone (``adversary="shuffled"``, no blanket coins seen).

    k-RR with blanket γ is ε0-LDP with ε0 = log(1 + k(1−γ)/γ), so Feldman, McMillan and Talwar's stronger
    clone pair at that ε0 bounds the shuffled reports for every data set of the other users
    (docs/theory.md#pairs-stronger-clones).  ε0 is raised by :func:`~shufflesim.maths.rr.eps0_upper` (a larger ε0 gives a dominating
    pair: an ε0-LDP randomiser is ε0'-LDP for every ε0' ≥ ε0).
    """
    from shufflesim.accounting.pairs.variation import stronger_clones_pair

    n, k, gamma, tail_bound = check_krr(n, k, gamma, tail_bound)
    eps0 = eps0_upper(eps0_from_gamma(gamma, k))
    if not (eps0 > 0.0):  # gamma = 1: every report is uniform whatever the input; the smallest positive eps0
        eps0 = math.ulp(0.0)  # still gives a valid (and numerically trivial) pair
    return stronger_clones_pair(n, eps0, tail_bound=tail_bound, as_rows=as_rows)


def check_krr(n, k, gamma, tail_bound):
    """(n, k, gamma, tail_bound) of a k-RR pair, validated (ParameterError naming what is allowed)."""
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    return n, k, gamma, check_tail_bound(tail_bound)


def _params(n, k, gamma, adversary, tail_bound, **more):
    d = {"n": n, "k": k, "gamma": gamma, "eps0": krr_eps0_from_gamma(k, gamma), "adversary": adversary}
    d.update(tail_bound=tail_bound, **more)
    return d


def krr_strong_1d_pair(n, k, gamma, *, tail_bound: float = DEFAULT_TAIL_BOUND_1D) -> PMFPair:
    """P_s = Bin(n-1, gamma/k) + 1, Q_s = Bin(n-1, gamma/k): the strong adversary as the seeds state it.

    Seed 000 eq 3.1 / seed 001 eq 5.1: N1 ~ P_s is the count of value 1 after the adversary removes the
    other users' truthful reports under X, and N2 ~ Q_s the count of value 2 under X.  The seeds then
    treat (P_s, Q_s) as the neighbouring pair.  This is *not* the distribution of the adversary's view
    under X versus X' (that is :func:`krr_strong_pair`); it is provided to reproduce the seeds' numbers,
    and tests compare it with the full-view brute force.

    Outcome x in [0, n]: P(x) = B(x-1), Q(x) = B(x) with B the Bin(n-1, gamma/k) pmf; x = n has Q = 0
    and x = 0 has P = 0 (infinite-loss mass (gamma/k)^(n-1) and (1-gamma/k)^(n-1), seed 001 eq 2.3).
    Truncation: the Bin(n-1, gamma/k) variable is kept on a Chernoff window (see the package docstring).
    """
    n, k, gamma, tail_bound = check_krr(n, k, gamma, tail_bound)
    g = gamma / k
    lo, hi, log_tail = chernoff_window(n - 1, g, log_budget(tail_bound))
    lo, hi = int(lo), int(hi)
    x = np.arange(lo, hi + 2)
    log_p, log_q, x = finish(log_binom_pmf(x - 1, n - 1, g), log_binom_pmf(x, n - 1, g), x)
    tail = certified_tail(float(log_tail))
    return PMFPair(
        log_p=log_p,
        log_q=log_q,
        name="krr-strong-1d",
        params=_params(n, k, gamma, "strong-1d", tail_bound, support=(lo, hi + 1)),
        reference=REFERENCE_STRONG_1D,
        tail_p=tail,
        tail_q=tail,
    )


def krr_strong_pair(
    n,
    k,
    gamma,
    *,
    tail_bound: float = DEFAULT_TAIL_BOUND_MD,
    target_coin_visible: bool = True,
    return_outcomes: bool = False,
    as_rows: bool = False,
):
    """The strong adversary's full view: P = (I+1, J), Q = (I, J+1), (I, J) ~ Mult(n-1; g, g, 1-2g).

    docs/theory.md#pairs-krr-strong, g = gamma/k.  Adversary A_s (seed 001 Definition 8) knows x_1..x_{n-1} and
    who randomised -- all n users, the target included; after removing the others' truthful reports,
    what it sees that depends on the target is the count of randomised messages with value 1 and with
    value 2 (the other counts have the same law under X and X').  With the target truthful the counts
    are (I+1, J) under X and (I, J+1) under X'; the privacy loss is log(x/y) at outcome (x, y)
    (infinite when y = 0, minus infinite when x = 0).

    The target's own coin is part of A_s's view (beta in {0,1}^n): with probability gamma the target
    randomised, the adversary sees it, and the view then has the same law under X and X'.  With
    ``target_coin_visible=True`` (default) the pair is the exact law of the full view: the outcomes
    above carry mass (1 - gamma) P(x, y) and (1 - gamma) Q(x, y), plus one zero-loss atom of mass gamma
    on both sides (all randomised-target views merged: they have equal loss 0).  This agrees with the
    brute-force enumeration of the view.  ``target_coin_visible=False`` returns the pair conditioned on a
    truthful target, as the authors' later public code evaluates it (docs/theory.md#pairs-krr-strong); its single-use delta is
    1/(1 - gamma) times the full view's.

    Parametrisation: M = I + J ~ Bin(n-1, 2g) has the same law under X and X', and given M = m,
    I ~ Bin(m, 1/2).  Outcome (m, x) with y = m + 1 - x:
        log P = log Bin(n-1, 2g)(m) + log Bin(m, 1/2)(x-1),
        log Q = log Bin(n-1, 2g)(m) + log Bin(m, 1/2)(x).
    Truncation: M on a Chernoff window with half the budget; the other half is spread over the rows
    m so that row m gets budget tail/(2 R w_m) (R rows, w_m = P(M = m)) -- rows lighter than that are
    dropped whole.  The certified dropped mass sum_m w_m tail_m + tail_M is stored in tail_p = tail_q.

    ``return_outcomes=True`` also returns the (x, y) arrays of the kept outcomes ((-1, -1) marks the
    randomised-target atom).  ``as_rows=True`` returns the :class:`BinomialRows` form instead
    (rows m, N = m + 1, alpha = 2/N, beta = 0), whose ``log_delta`` is the exact single-use delta in
    O(rows) and whose ``iter_atoms`` expands the pair block by block.
    """
    n, k, gamma, tail_bound = check_krr(n, k, gamma, tail_bound)
    g2 = 2.0 * gamma / k
    lb = log_budget(tail_bound)
    m_lo, m_hi, lt_m = chernoff_window(n - 1, g2, lb - math.log(2.0))
    m = np.arange(int(m_lo), int(m_hi) + 1)
    lw = log_binom_pmf(m, n - 1, g2)
    with np.errstate(invalid="ignore"):
        rb = np.where(lw > -np.inf, lb - math.log(2.0) - math.log(m.size) - lw, np.inf)
    a_lo, a_hi, lt_a = row_windows(m, 0.5, rb)
    # row m, column x in [0, m+1], N = m + 1: P = w_m Bin(m,1/2)(x-1) = w_m Bin(N,1/2)(x) (2/N) x and
    # Q = w_m Bin(m,1/2)(x) = w_m Bin(N,1/2)(x) (2/N)(N - x): BinomialRows with alpha = 2/N, beta = 0.
    log_tail = np.logaddexp(float(lt_m), log_tail_sum(lw + lt_a))
    keep = a_lo <= a_hi
    m, lw, a_lo, a_hi = m[keep], lw[keep], a_lo[keep], a_hi[keep]
    N = m + 1
    extra = np.zeros(0)
    if target_coin_visible:
        l_truth = math.log1p(-gamma) if gamma < 1.0 else -np.inf
        lw = lw + l_truth
        log_tail = log_tail + l_truth
        extra = np.array([math.log(gamma)])
    rows = BinomialRows(
        log_w=lw,
        N=N,
        alpha=2.0 / N,
        beta=np.zeros(N.size),
        lo=a_lo,
        hi=a_hi + 1,
        tail=certified_tail(float(log_tail)),
        extra_log_p=extra,
        extra_log_q=extra.copy(),
        name="krr-strong",
        reference=REFERENCE_STRONG,
    )
    if as_rows:
        return replace(rows, params=_params(n, k, gamma, "strong", tail_bound,
                                            target_coin_visible=bool(target_coin_visible),
                                            support_size=rows.n_atoms, rows=int(rows.N.size)))
    if return_outcomes:
        log_p, log_q, r, x = rows.expand(with_outcomes=True)
        y = np.where(r >= 0, N[np.maximum(r, 0)] - x, -1)
    else:
        log_p, log_q = rows.expand()
    tail = rows.tail
    pair = PMFPair(
        log_p=log_p,
        log_q=log_q,
        name="krr-strong",
        params=_params(
            n, k, gamma, "strong", tail_bound, target_coin_visible=bool(target_coin_visible), support_size=int(log_p.size)
        ),
        reference=REFERENCE_STRONG,
        tail_p=tail,
        tail_q=tail,
    )
    return (pair, x, y) if return_outcomes else pair


#: peak bytes per row while the weak adversary's pair is built (measured: 26M rows, 6.9 GB at n = 1e6)
_WEAK_BYTES_PER_ROW = 300.0


def _check_weak_memory(n: int, gamma: float, kk: float, b_lo: int, b_hi: int, lb: float) -> None:
    """Refuse (ResourceError) before allocating when the weak pair's rows would not fit (issue 21):
    rows ~ (values of B kept) x (values of S kept at the largest B), ~300 bytes each while built."""
    from shufflesim.core.resources import check_memory

    nb = b_hi - b_lo + 1
    s_lo, s_hi, _ = chernoff_window(max(b_hi, 1), kk, lb - math.log(max(nb, 1)) + 5.0)
    rows = float(nb) * float(int(s_hi) - int(s_lo) + 2)
    check_memory(rows * _WEAK_BYTES_PER_ROW, f"the weak adversary's pair at n={n} ({rows:.3g} rows)",
                 "`account krr --adversary weak` (method tight), which takes the weak pair's bucket rows "
                 "(shufflesim.accounting.engines.bucketed_weak) at this n, or a smaller n")


def krr_weak_pair(
    n,
    k,
    gamma,
    *,
    tail_bound: float = DEFAULT_TAIL_BOUND_MD,
    return_outcomes: bool = False,
    as_rows: bool = False,
):
    """The weak adversary A_w (seed 001 Definition 9, Theorem 10, Appendix A), sufficient statistic (n1, n2, b).

    A_w knows x_1..x_{n-1} and which of the other n-1 users randomised (b of them, B ~ Bin(n-1, gamma)),
    but not the target's coin.  After removing the others' truthful reports it holds b + 1 messages:
    the b noise messages (uniform on k values) and the target's report (value 1 w.p. 1-gamma+gamma/k
    under X, value 2 w.p. gamma/k, any other w.p. (k-2)gamma/k; values 1 and 2 swapped under X').
    Appendix A gives, with n1, n2 the counts of values 1 and 2 among these b + 1 messages and
    t = b + 1:

        P_X(view)  = C * [n1 (1-gamma) + (gamma/k) t],   P_X'(view) = C * [n2 (1-gamma) + (gamma/k) t]

    with C the same for both.  Summing over the views with the same (n1, n2, b):

        P_X(n1, n2, b) = Bin(n-1, gamma)(b) * Mult(t; 1/k, 1/k, (k-2)/k)(n1, n2) * (k/t) * [n1 (1-gamma) + (gamma/k) t]

    (and n2 in the bracket for X'), where Mult(t; ...)(n1, n2) = Bin(t, 2/k)(s) Bin(s, 1/2)(n1),
    s = n1 + n2.  Theorem 10's P_w, Q_w are the likelihood-ratio statistic of this pair.

    B vs B+1: the derivation (and this function) uses t = b + 1 messages; the authors' public code
    uses B in place of B + 1 in the likelihood ratio (docs/theory.md#pairs-krr-weak), which changes epsilon in
    about the third decimal.

    Truncation: latent (B, S, U) -- B, the number S of noise messages in {1, 2} (Bin(b, 2/k)) and the
    number U of those equal to 1 (Bin(s, 1/2)) -- is kept on nested Chernoff windows with a third of
    the budget per level (spread over rows as in :func:`krr_strong_pair`); outcome (b, s', n1) covers
    every image s' in {s, s+1}, n1 in {u, u+1} of a kept latent value.

    ``return_outcomes=True`` also returns the (n1, n2, b) arrays of the kept outcomes.
    ``as_rows=True`` returns the :class:`BinomialRows` form (rows (b, s'), N = s', alpha = 1 - gamma,
    beta = gamma (b+1)/k): exact single-use delta in O(rows), atoms block by block.
    """
    n, k, gamma, tail_bound = check_krr(n, k, gamma, tail_bound)
    lb = log_budget(tail_bound) - math.log(3.0)
    kk = 2.0 / k
    # level 1: B ~ Bin(n-1, gamma)
    b_lo, b_hi, lt_b = chernoff_window(n - 1, gamma, lb)
    _check_weak_memory(n, gamma, kk, int(b_lo), int(b_hi), lb)
    b = np.arange(int(b_lo), int(b_hi) + 1)
    lw_b = log_binom_pmf(b, n - 1, gamma)
    # level 2: S | B=b ~ Bin(b, 2/k), budget spread over the b rows
    with np.errstate(invalid="ignore"):
        rb = np.where(lw_b > -np.inf, lb - math.log(b.size) - lw_b, np.inf)
    s_lo, s_hi, lt_s = row_windows(b, kk, rb)
    bi, s = ragged(s_lo, s_hi)  # latent rows (b index, s)
    lw_bs = lw_b[bi] + log_binom_pmf_rows(s, b[bi], kk)
    # level 3: U | S=s ~ Bin(s, 1/2)
    with np.errstate(invalid="ignore"):
        rbs = np.where(lw_bs > -np.inf, lb - math.log(max(bi.size, 1)) - lw_bs, np.inf)
    u_lo, u_hi, lt_u = row_windows(s, 0.5, rbs)
    # outcome rows (b, s') for s' in [s_lo_b, s_hi_b + 1]; n1 range = hull of latent rows s', s'-1
    sizes = np.maximum(s_hi - s_lo + 1, 0)
    og, ot, o_lo, o_hi = hull_rows(u_lo, u_hi, sizes)
    keep_rows = o_lo <= o_hi
    og, ot, o_lo, o_hi = og[keep_rows], ot[keep_rows], o_lo[keep_rows], o_hi[keep_rows]
    bb_rows = b[og]
    sp_rows = s_lo[og] + ot  # s' = n1 + n2: the row's N
    t_rows = bb_rows + 1.0
    # row (b, s'): P = Bin(n-1,gamma)(b) Bin(b+1,2/k)(s') (k/t) Bin(s',1/2)(n1) [(1-gamma) n1 + (gamma/k) t]
    log_w = lw_b[og] + log_binom_pmf_rows(sp_rows, bb_rows + 1, kk) + np.log(k / t_rows)
    log_tail = np.logaddexp(
        float(lt_b), np.logaddexp(log_tail_sum(lw_b + lt_s), log_tail_sum(lw_bs + lt_u))
    )
    rows = BinomialRows(
        log_w=log_w,
        N=sp_rows,
        alpha=np.full(sp_rows.size, 1.0 - gamma),
        beta=(gamma / k) * t_rows,
        lo=o_lo,
        hi=o_hi,
        tail=certified_tail(float(log_tail)),
        extra_log_p=np.zeros(0),
        extra_log_q=np.zeros(0),
        name="krr-weak",
        reference=REFERENCE_WEAK,
    )
    if as_rows:
        return replace(rows, params=_params(n, k, gamma, "weak", tail_bound, support_size=rows.n_atoms,
                                            rows=int(rows.N.size)))
    if return_outcomes:
        log_p, log_q, r, n1 = rows.expand(with_outcomes=True)
        n2 = sp_rows[r] - n1
        bb = bb_rows[r]
    else:
        log_p, log_q = rows.expand()
    tail = rows.tail
    pair = PMFPair(
        log_p=log_p,
        log_q=log_q,
        name="krr-weak",
        params=_params(n, k, gamma, "weak", tail_bound, support_size=int(log_p.size)),
        reference=REFERENCE_WEAK,
        tail_p=tail,
        tail_q=tail,
    )
    return (pair, n1, n2, bb) if return_outcomes else pair
