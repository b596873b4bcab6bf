"""Shuffled mechanisms with random participation (Poisson or fixed-size sampling of users): the augmented
randomiser, its brute-force oracle, the dominating pair (upper end) and explicit data sets (lower end).

docs/theory.md#sampling derives everything here.  In one line: with Poisson participation at rate q and an
analyser who sees the multiset of the participants' reports (n public), the view is a bijective
post-processing of the shuffled output of the *augmented* randomiser

    R_q(x) = q R(x) + (1 − q) δ_⊥     (a non-participant "reports" ⊥),

so Poisson-sampled replace-one neighbouring is the unsampled shuffle model of R_q, and add/remove is the
same with the target's neighbouring row δ_⊥ (it never takes part).

* the brute-force oracle (R_q as a matrix, every data set and participating subset) is
  :mod:`shufflesim.accounting.exact.sampled_oracle`;
* :func:`sampled_krr_rows` — the blanket pair of R_q for k-RR (binary RR: k = 2) in row form
  (:class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows`), replace-one; it dominates every data set
  and, by Feldman–McMillan–Talwar's post-processing, every ε0-LDP randomiser with k = 2 (docs/theory.md#sampling);
* :func:`sampled_krr_addremove_pair` — add/remove, the same blanket view enumerated (moderate n);
* :func:`data_set_pair` — the exact law of the count of the target's value on the explicit data set
  "every other user holds another value" (a post-processing of the view: a lower end), Poisson or fixed-size.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.accounting.model.mechanism import check_sample_rate, check_sample_relation
from shufflesim.accounting.numerics.binomial import (BINOM_LOG_ERR, certified_tail, chernoff_window, log_binom_pmf,
                                                     log_tail_sum)
from shufflesim.accounting.numerics.logspace import U
from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD, check_tail_bound, log_budget
from shufflesim.accounting.pairs.variation import clone_mixture_pair
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import NotApplicableError, ParameterError

REFERENCE_SAMPLED = ("docs/theory.md#sampling: the augmented randomiser R_q = q R + (1-q) delta_bot, its blanket pair "
                     "(Balle, Bell, Gascon, Nissim 2019; Su, Cheng, Wang 2025) in clone-mixture row form")
#: largest number of atoms of the add/remove pair enumerated (:func:`sampled_krr_addremove_pair`)
MAX_ADDREMOVE_ATOMS = 20_000_000
#: largest number of N-groups of the replace-one rows (:func:`sampled_krr_rows`): the blanket count N is
#: rounded down to the smallest N of its group (a post-processing argument, docs/theory.md#sampling)
MAX_GROUPS = 64


# ---- the blanket pair of R_q for k-RR (docs/theory.md#sampling) ----

def krr_sampled_parameters(k: int, eps0: float, q: float) -> dict:
    """The blanket of R_q for k-RR at local privacy eps0: γ (blanket probability), r (a blanket draw lands on
    one of the target's two values), the target's weights a (its own value) and b (the other value), and the
    complements 1 − γ, 1 − r, 1 − a − b computed without cancellation.

    Every probability is a ratio of sums of non-negative terms whose numerator is one of the denominator's terms
    (γ = 2b + rest, r = 2b/γ, 1 − r = rest/γ), so rounding cannot take it above 1 (float addition and division
    are monotone and 1 is a float); γ = 1 − (1 − γ) cancelled to 0 or to a few ulps' worth at q ≈ 1 and large
    ε0, and r exceeded 1 at q = 1 (review of issue 30)."""
    k = check_int("k", k, minimum=2)
    eps0 = check_positive("eps0", eps0)
    q = check_sample_rate(q)
    t = math.exp(-eps0)  # 1/e^eps0: every weight below is finite at any eps0
    D = 1.0 + (k - 1) * t  # (e^eps0 + k − 1)/e^eps0
    non_blanket = q * -math.expm1(-eps0) / D  # q (e^eps0 − 1)/(e^eps0 + k − 1)
    low = q * t / D  # q/(e^eps0 + k − 1): each value's blanket mass
    rest = (1.0 - q) + (k - 2) * low  # ⊥ or one of the k − 2 other values
    gamma = 2.0 * low + rest  # (1 − q) + k low, no cancellation
    return {"gamma": gamma, "one_minus_gamma": non_blanket, "r": 2.0 * low / gamma,
            "one_minus_r": rest / gamma, "a": q / D, "b": low, "rest": rest}


def ldp_sampled_parameters(eps0: float, q: float) -> dict:
    """The clone decomposition of R_q for *any* ε0-LDP randomiser R (docs/theory.md#sampling): every other user
    is a clone (a fair coin between Q0 and Q1, R(x0) + R(x1) = Q0 + Q1) with probability q e^{−ε0}, ⊥ with
    probability 1 − q, else its own leftover law (revealed); the target is Q0 / Q1 / ⊥ with probabilities
    q e^{ε0}/(e^{ε0}+1), q/(e^{ε0}+1), 1 − q.  Same keys as :func:`krr_sampled_parameters`, computed the same
    way (γ = q e^{−ε0} + (1 − q), r and 1 − r its two terms over it: neither can round above 1)."""
    eps0 = check_positive("eps0", eps0)
    q = check_sample_rate(q)
    t = math.exp(-eps0)
    non_blanket = q * -math.expm1(-eps0)  # q (1 − e^{−ε0})
    gamma = q * t + (1.0 - q)  # 1 − q (1 − e^{−ε0}), no cancellation
    return {"gamma": gamma, "one_minus_gamma": non_blanket, "r": q * t / gamma, "one_minus_r": (1.0 - q) / gamma,
            "a": q / (1.0 + t), "b": q * t / (1.0 + t), "rest": 1.0 - q}


def sampled_krr_rows(n: int, k: int, eps0: float, q: float, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD,
                     groups: int = MAX_GROUPS) -> BinomialRows:
    """The blanket pair of Poisson-sampled shuffled k-RR (replace-one) in row form.

    The others' reports are blanket draws (probability γ each) or their own value (revealed to the adversary);
    given the N ~ Bin(n − 1, γ) blanket draws, the view reduces to the counts of the target's two values, a
    clone mixture with N + 1 users, clone probability r, target weights a, b (:func:`clone_mixture_pair`).
    N is rounded down to the smallest value of its group (at most ``groups`` groups over its Chernoff window):
    fewer blanket draws is a dominating pair (one more draw is a post-processing).  ``tail_bound`` is the mass
    dropped (N outside its window and the rows' own truncation)."""
    prm = {"k": check_int("k", k, minimum=2), "eps0": eps0, "q": q}
    return sampled_rows(n, krr_sampled_parameters(k, eps0, q), tail_bound=tail_bound, groups=groups,
                        name="sampled-blanket", params=prm)


def sampled_ldp_rows(n: int, eps0: float, q: float, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD,
                     groups: int = MAX_GROUPS) -> BinomialRows:
    """A dominating pair of Poisson-sampled shuffling of *any* ε0-LDP randomiser (replace-one): the clone
    decomposition of :func:`ldp_sampled_parameters` in the row form of :func:`sampled_krr_rows`."""
    return sampled_rows(n, ldp_sampled_parameters(eps0, q), tail_bound=tail_bound, groups=groups,
                        name="sampled-clones", params={"eps0": eps0, "q": q})


def sampled_rows(n: int, s: dict, *, tail_bound: float = DEFAULT_TAIL_BOUND_MD, groups: int = MAX_GROUPS,
                 name: str = "sampled-blanket", params: dict | None = None) -> BinomialRows:
    """The row form shared by :func:`sampled_krr_rows` and :func:`sampled_ldp_rows`: N ~ Bin(n − 1, γ) blanket
    (clone or ⊥) users, grouped down (post-processing), each group the clone mixture of N + 1 users."""
    n = check_int("n", n, minimum=1)
    tail_bound = check_tail_bound(tail_bound)
    groups = check_int("groups", groups, minimum=1)
    lb = log_budget(tail_bound)
    n_lo, n_hi, lt_n = chernoff_window(n - 1, s["gamma"], lb - math.log(2.0), s["one_minus_gamma"])
    n_lo, n_hi, lt_n = int(n_lo), int(n_hi), float(lt_n)
    Ns = np.arange(n_lo, n_hi + 1)
    lw = log_binom_pmf(Ns, n - 1, s["gamma"], s["one_minus_gamma"])
    parts = np.array_split(np.arange(Ns.size), min(groups, Ns.size))
    fields: dict[str, list] = {f: [] for f in ("log_w", "N", "alpha", "beta", "lo", "hi")}
    log_tails = [lt_n]
    for idx in parts:
        lg = log_tail_sum(lw[idx]) + BINOM_LOG_ERR + 1e-12  # the group's mass, rounded up (log-PMF error + sum)
        rows = clone_mixture_pair(int(Ns[idx[0]]) + 1, s["r"], s["a"], s["b"], tail_bound=tail_bound / 2.0,
                                  rc=s["one_minus_r"], rest=s["rest"])
        fields["log_w"].append(rows.log_w + lg)
        for f in ("N", "alpha", "beta", "lo", "hi"):
            fields[f].append(getattr(rows, f))
        if rows.tail > 0:
            log_tails.append(lg + math.log(rows.tail))
    prm = {"n": n, **(params or {}), "gamma": s["gamma"], "blanket_window": (n_lo, n_hi), "groups": len(parts),
           "tail_bound": tail_bound}
    return BinomialRows(log_w=np.concatenate(fields["log_w"]), N=np.concatenate(fields["N"]),
                        alpha=np.concatenate(fields["alpha"]), beta=np.concatenate(fields["beta"]),
                        lo=np.concatenate(fields["lo"]), hi=np.concatenate(fields["hi"]),
                        tail=certified_tail(log_tail_sum(np.array(log_tails))),
                        extra_log_p=np.zeros(0), extra_log_q=np.zeros(0), name=name,
                        params=prm, reference=REFERENCE_SAMPLED)


def sampled_krr_addremove_pair(n: int, k: int, eps0: float, q: float, *,
                               tail_bound: float = DEFAULT_TAIL_BOUND_MD) -> PMFPair:
    """The blanket pair of Poisson-sampled shuffled k-RR under add/remove: P has the target (value 0) with
    R_q(0), Q has it absent (δ_⊥).  Outcomes (N, c_⊥, c_0): N ~ Bin(n − 1, γ) blanket draws, c_⊥ the ⊥ count and
    c_0 the count of the target's value among the N + 1 items (docs/theory.md#sampling).  Enumerated on Chernoff
    windows (at most :data:`MAX_ADDREMOVE_ATOMS` atoms)."""
    n = check_int("n", n, minimum=1)
    tail_bound = check_tail_bound(tail_bound)
    s = krr_sampled_parameters(k, eps0, q)
    q = float(q)
    lb = log_budget(tail_bound) - math.log(3.0)
    n_lo, n_hi, lt_n = chernoff_window(n - 1, s["gamma"], lb, s["one_minus_gamma"])
    Ns = np.arange(int(n_lo), int(n_hi) + 1)
    lwN = log_binom_pmf(Ns, n - 1, s["gamma"], s["one_minus_gamma"])
    p_bot = (1.0 - q) / s["gamma"]  # a blanket draw is ⊥ (<= 1: γ = 2b + rest, rest >= 1 − q, all rounded monotonely)
    p_val = k * s["b"] / s["gamma"]  # it is one of the k values (uniform): γ's other terms, no cancellation
    lbN = lb - lwN - math.log(Ns.size)
    b_lo, b_hi, lt_b = chernoff_window(Ns, p_bot, lbN, p_val)
    atoms = int(((b_hi - b_lo + 2) * (Ns + 2)).sum())
    if atoms > MAX_ADDREMOVE_ATOMS:
        raise NotApplicableError(f"add/remove sampling is enumerated up to {MAX_ADDREMOVE_ATOMS:.0e} atoms "
                                 f"({atoms:.2e} here: n={n}); use --sample-relation replace-one")
    a = s["a"]
    lq_keep, lp_keep = [], []
    log_tails = [float(lt_n)]
    for j, N in enumerate(Ns.tolist()):
        c = np.arange(int(b_lo[j]), int(b_hi[j]) + 2)  # c_⊥ among the N + 1 items (the target's ⊥ adds one)
        lB_Q = log_binom_pmf(c - 1, N, p_bot, p_val)  # Q: the target is ⊥
        lB_P = log_binom_pmf(c, N, p_bot, p_val)  # P: the target is not ⊥ (and c - 1 for ⊥)
        t = N + 1 - c  # non-⊥ items
        x = np.arange(0, N + 2)
        # c_0 | t: Q: Bin(t, 1/k); P: target ⊥ (1 − q): Bin(t, 1/k); target 0 (a): 1 + Bin(t − 1, 1/k);
        # target other value (q − a): Bin(t − 1, 1/k)
        T, X = np.meshgrid(t, x, indexing="ij")
        lk = log_binom_pmf(X, T, 1.0 / k, (k - 1.0) / k)
        lk1 = log_binom_pmf(X - 1, T - 1, 1.0 / k, (k - 1.0) / k)
        lk0 = log_binom_pmf(X, T - 1, 1.0 / k, (k - 1.0) / k)
        base = lwN[j]
        lQ = base + lB_Q[:, None] + lk
        with np.errstate(divide="ignore"):
            lP = np.logaddexp(math.log1p(-q) + lB_Q[:, None] + lk if q < 1 else np.full(lk.shape, -np.inf),
                              lB_P[:, None] + np.logaddexp(math.log(a) + lk1,
                                                           (math.log(q - a) if q > a else -np.inf) + lk0))
        lP = base + lP
        keep = (lP > -np.inf) | (lQ > -np.inf)
        lp_keep.append(lP[keep])
        lq_keep.append(lQ[keep])
        log_tails.append(float(lwN[j] + lt_b[j]))
    tail = certified_tail(log_tail_sum(np.array(log_tails)) + math.log1p(1e-9))
    return PMFPair(log_p=np.concatenate(lp_keep), log_q=np.concatenate(lq_keep), name="sampled-blanket-add-remove",
                   params={"n": n, "k": k, "eps0": eps0, "q": q, "gamma": s["gamma"], "tail_bound": tail_bound},
                   reference=REFERENCE_SAMPLED, tail_p=tail, tail_q=tail)


# ---- lower ends: an explicit data set, one count ----

def data_set_pair(n: int, k: int, eps0: float, *, q: float | None = None, m: int | None = None,
                  relation: str = "replace-one") -> PMFPair:
    """The exact law of c_0, the number of reports equal to the target's value 0, on the data sets "the other
    n − 1 users hold 1, the target holds 0 (P) or 1 / is absent (Q)", under Poisson participation at rate ``q``
    or fixed-size sampling of ``m`` users (replace-one only).  c_0 is a post-processing of the view, so the
    pair's δ — composed over rounds on the same data — is a lower end on the mechanism's
    (docs/theory.md#sampling).  ``params["log_err"]`` bounds the absolute error of every log-probability."""
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    eps0 = check_positive("eps0", eps0)
    check_sample_relation(relation)
    t = math.exp(-eps0)
    D = 1.0 + (k - 1) * t
    hi_p, lo_p = 1.0 / D, t / D  # k-RR: own value, each other value
    if q is not None:
        q = check_sample_rate(q)
        # c_0 = D_target + Bin(n − 1, q lo_p); D_target ~ Bern(q hi_p) (P), Bern(q lo_p) or 0 (Q)
        # the complements without cancellation (1 − q hi_p = 1 − q + q (k − 1) lo_p, 1 − q lo_p = 1 − q + q (hi_p
        # + (k − 2) lo_p)): 1 − q hi_p rounded to 0 or below at q = 1 and large eps0
        beta = q * lo_p
        c_beta = (1.0 - q) + q * (hi_p + (k - 2) * lo_p)
        c_lo, c_hi, _ = chernoff_window(n - 1, beta, -745.0, c_beta)
        c = np.arange(int(c_lo), int(c_hi) + 2)
        lB = log_binom_pmf(c, n - 1, beta, c_beta)
        lB1 = log_binom_pmf(c - 1, n - 1, beta, c_beta)
        aP = q * hi_p
        aQ = q * lo_p if relation == "replace-one" else 0.0
        cP = (1.0 - q) + q * (k - 1) * lo_p
        cQ = c_beta if relation == "replace-one" else 1.0
        with np.errstate(divide="ignore"):
            log_p = np.logaddexp(math.log(aP) + lB1, (math.log(cP) if cP > 0 else -np.inf) + lB)
            log_q = np.logaddexp(math.log(aQ) + lB1 if aQ > 0 else np.full(c.shape, -np.inf), math.log(cQ) + lB)
        prm = {"n": n, "k": k, "eps0": eps0, "q": q, "relation": relation}
    else:
        if relation != "replace-one":
            raise ParameterError("fixed-size sampling is accounted under replace-one only")
        m = check_int("sample size", m, minimum=1, maximum=n)
        eta = m / n
        # target sampled (m/n): Bern(hi_p or lo_p) + Bin(m − 1, lo_p); not sampled: Bin(m, lo_p)
        c = np.arange(0, m + 1)
        lB1 = log_binom_pmf(c - 1, m - 1, lo_p, 1.0 - lo_p)
        lB0 = log_binom_pmf(c, m - 1, lo_p, 1.0 - lo_p)
        lBm = log_binom_pmf(c, m, lo_p, 1.0 - lo_p)
        with np.errstate(divide="ignore"):
            in_p = np.logaddexp(math.log(hi_p) + lB1, math.log1p(-hi_p) + lB0)
            in_q = np.logaddexp(math.log(lo_p) + lB1, math.log1p(-lo_p) + lB0)
            out = math.log1p(-eta) + lBm if eta < 1 else np.full(c.shape, -np.inf)
            log_p = np.logaddexp(math.log(eta) + in_p, out)
            log_q = np.logaddexp(math.log(eta) + in_q, out)
        prm = {"n": n, "k": k, "eps0": eps0, "m": m, "relation": relation}
    keep = (log_p > -np.inf) | (log_q > -np.inf)
    log_p, log_q = log_p[keep], log_q[keep]
    fin = np.concatenate((log_p[np.isfinite(log_p)], log_q[np.isfinite(log_q)]))
    err = 4 * BINOM_LOG_ERR + 16 * U * (eps0 + (float(np.max(np.abs(fin))) if fin.size else 0.0) + 10.0)
    return PMFPair(log_p=log_p, log_q=log_q, name="sampled-data-set", params={**prm, "log_err": err},
                   reference="docs/theory.md#sampling")


#: largest number of atoms of :func:`data_set_pair_2d` before its second count is binned (a post-processing)
MAX_LOWER_ATOMS = 4_000_000
#: the log-budget of the windows of the lower ends' counts (dropping mass only lowers a lower end)
LOWER_LOG_BUDGET = -60.0
#: atoms of a lower end's pair with both probabilities below this are dropped (:func:`data_set_pair_2d`)
LOWER_ATOM_CUT = 1e-13


def data_set_pair_2d(n: int, k: int, eps0: float, q: float, *, other: int = 1, relation: str = "replace-one",
                     max_atoms: int = MAX_LOWER_ATOMS, atom_cut: float = LOWER_ATOM_CUT) -> PMFPair:
    """The exact law of (c_0, c_1), the numbers of reports 0 and 1, under Poisson participation at rate ``q`` on
    the data sets "the other n − 1 users hold ``other``, the target holds 0 (P) or 1 / is absent (Q)" — for
    binary RR the whole view (c_⊥ = n − c_0 − c_1), for k ≥ 3 a post-processing of it; a lower end
    (docs/theory.md#sampling).  Above ``max_atoms`` atoms c_1 is binned (another post-processing).  Atoms on
    Chernoff windows of mass e^-60 outside, and atoms below ``atom_cut`` on both sides dropped: the pair is a
    sub-probability pair with no ``tail`` (its dropped mass is ``params["dropped"]``) — for a lower end only
    (the hockey-stick of the kept atoms, composed or not, is a sub-sum of the full one).  ``params["log_err"]``
    bounds the absolute error of every log-probability."""
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    eps0 = check_positive("eps0", eps0)
    q = check_sample_rate(q)
    check_sample_relation(relation)
    other = check_int("other", other, minimum=1, maximum=k - 1)
    t = math.exp(-eps0)
    D = 1.0 + (k - 1) * t
    hi_p, lo_p = 1.0 / D, t / D
    pi0 = q * lo_p  # an other user reports 0
    pi1 = q * (hi_p if other == 1 else lo_p)  # ... reports 1
    # the rest (⊥ or a third value) and the complements as sums of non-negative terms: no cancellation, and
    # p1 = pi1 / (pi1 + rest) cannot round above 1 (it exceeded 1 at q = 1, k = 2)
    rest_o = (1.0 - q) + q * ((k - 2) * lo_p if other == 1 else hi_p + (k - 3) * lo_p)
    c_pi0 = pi1 + rest_o  # 1 − pi0
    c0_lo, c0_hi, _ = chernoff_window(n - 1, pi0, LOWER_LOG_BUDGET, c_pi0)
    c0 = np.arange(int(c0_lo), int(c0_hi) + 1)
    l0 = log_binom_pmf(c0, n - 1, pi0, c_pi0)
    p1, c_p1 = pi1 / c_pi0, rest_o / c_pi0
    # c_1 | c_0 ~ Bin(n − 1 − c_0, p1): one window covering every kept c_0's
    m_lo, _, _ = chernoff_window(n - 1 - int(c0_hi), p1, LOWER_LOG_BUDGET, c_p1)
    _, m_hi, _ = chernoff_window(n - 1 - int(c0_lo), p1, LOWER_LOG_BUDGET, c_p1)
    c1 = np.arange(int(m_lo), int(m_hi) + 1)
    C0, C1 = np.meshgrid(c0, c1, indexing="ij")
    O = l0[:, None] + log_binom_pmf(C1, n - 1 - C0, p1, c_p1)  # others' law on the window
    ninf = -np.inf
    Op = np.full((O.shape[0] + 1, O.shape[1] + 1), ninf)  # outcomes (c0_lo..c0_hi+1) x (c1_lo..c1_hi+1)
    Op[:-1, :-1] = O
    sh0 = np.full_like(Op, ninf)
    sh0[1:, :-1] = O  # target reports 0
    sh1 = np.full_like(Op, ninf)
    sh1[:-1, 1:] = O  # target reports 1

    def target(r0: float, r1: float) -> np.ndarray:
        rest = (1.0 - q) + q * (k - 2) * lo_p  # ⊥ or another value: 1 − r0 − r1 without cancellation
        with np.errstate(divide="ignore"):
            out = np.logaddexp(math.log(r0) + sh0 if r0 > 0 else np.full_like(Op, ninf),
                               math.log(r1) + sh1 if r1 > 0 else np.full_like(Op, ninf))
            return np.logaddexp(out, math.log(rest) + Op if rest > 0 else np.full_like(Op, ninf))

    log_p = target(q * hi_p, q * lo_p)
    log_q = target(q * lo_p, q * hi_p) if relation == "replace-one" else Op.copy()
    width = 1
    if log_p.size > max_atoms:  # bin c_1 (a post-processing): sum the probabilities of each bin
        width = math.ceil(log_p.size / max_atoms)
        cols = math.ceil(log_p.shape[1] / width)

        def binned(L: np.ndarray) -> np.ndarray:
            pad = np.full((L.shape[0], cols * width), ninf)
            pad[:, :L.shape[1]] = L
            B = pad.reshape(L.shape[0], cols, width)
            mx = np.max(B, axis=2)
            safe = np.where(np.isfinite(mx), mx, 0.0)
            with np.errstate(divide="ignore"):
                return np.log(np.exp(B - safe[:, :, None]).sum(axis=2)) + np.where(np.isfinite(mx), safe, ninf)

        log_p, log_q = binned(log_p), binned(log_q)
    log_p, log_q = log_p.ravel(), log_q.ravel()
    # atoms below LOWER_ATOM_CUT on both sides are dropped: the composed hockey-stick of the kept (sub-probability)
    # atoms sums fewer non-negative terms, so it stays a lower end, and the far atoms' large losses no longer
    # stretch the FFT grid (n = 1e6, q = 0.01, 1000-fold: eps_lower 0.0073 -> 0.02445)
    cut = math.log(atom_cut)
    keep = (log_p > cut) | (log_q > cut)
    dropped = float(np.exp(log_tail_sum(np.maximum(log_p[~keep], log_q[~keep])))) if (~keep).any() else 0.0
    log_p, log_q = log_p[keep], log_q[keep]
    fin = np.concatenate((log_p[np.isfinite(log_p)], log_q[np.isfinite(log_q)]))
    err = (6 * BINOM_LOG_ERR + (width + 8) * U * 1.01
           + 16 * U * (eps0 + (float(np.max(np.abs(fin))) if fin.size else 0.0) + 10.0))
    return PMFPair(log_p=log_p, log_q=log_q, name="sampled-data-set-2d",
                   params={"n": n, "k": k, "eps0": eps0, "q": q, "other": other, "relation": relation,
                           "c1_bin": width, "log_err": err, "dropped": dropped, "atom_cut": atom_cut},
                   reference="docs/theory.md#sampling")
