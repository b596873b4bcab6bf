"""The referee (issue 19): a sample of the registry's claims, every seed paper (000-004) and the literature
checked beyond them, whose verdict numbers are recomputed here by code that does not go through the registry's
check functions or the pairs they use.

Each test runs the claim through the registry (``run_claim``: its verdict and its named values) and recomputes
the values that decide the verdict from scratch: the papers' formulas typed from the text in
/work/shared/papers (seed 000 eq 3.1, seed 001 eq 6.1, seed 003 Appendix A eqs 11-13, seed 004's Polya noise),
distributions built here from scipy.stats.binom / numpy convolutions, and brute-force enumeration of every
neighbouring pair of data sets with a histogram-law computation of its own.  So a check function cannot agree
with itself.

Tolerances: both sides are exact computations in double precision that differ only in summation order and in
the library's certified truncation of tails below 1e-250 (far below the compared values), so they agree to a
relative 1e-9 (round-off of sums of at most ~10^6 terms stays below 1e-10 relative at these magnitudes).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.validation import claims as C

REL = 1e-9
_REGISTRY = {(c.paper, c.id): c for c in C.load()}


def registry(paper: str, cid: str) -> dict:
    """The registry's record of a claim (verdict, values), run through its check."""
    return C.run_claim(_REGISTRY[(paper, cid)])


# --------------------------------------------------------------------------------------------------
# independent building blocks
# --------------------------------------------------------------------------------------------------


def hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """sum max(0, p - e^eps q) over a common support (arrays of probabilities)."""
    return float(np.sum(np.maximum(0.0, p - math.exp(eps) * q)))


def binom_pmf(n: int, p: float) -> np.ndarray:
    return binom.pmf(np.arange(n + 1), n, p)


def rr2_count_delta(n: int, eps0: float, m: int, eps: float) -> float:
    """Shuffled binary RR, others: m hold 1, n-1-m hold 0; target 0 (P) vs 1 (Q).  The count of ones is a
    sufficient statistic of the shuffled reports; max of both hockey-stick directions."""
    t = math.exp(eps0) / (1 + math.exp(eps0))  # report the true bit
    others = np.convolve(binom_pmf(m, t), binom_pmf(n - 1 - m, 1 - t))
    P = np.convolve(others, [t, 1 - t])   # target holds 0: reports 1 w.p. 1 - t
    Q = np.convolve(others, [1 - t, t])   # target holds 1
    return max(hockey(P, Q, eps), hockey(Q, P, eps))


def two_sided_pair(n: int, r: float, a: float, b: float) -> tuple[dict, dict]:
    """The clone constructions, as the papers describe them: C ~ Bin(n-1, r) clones, A | C ~ Bin(C, 1/2) of them
    on side 0; under P the target adds one element to side 0 w.p. a, to side 1 w.p. b, nothing otherwise;
    under Q a and b are exchanged.  Outcome: (side-0 count, side-1 count)."""
    P: dict = {}
    Q: dict = {}
    w = binom_pmf(n - 1, r)
    for c in range(n):
        half = binom_pmf(c, 0.5)
        for x in range(c + 1):
            base = w[c] * half[x]
            for (dx, dy), (wp, wq) in (((1, 0), (a, b)), ((0, 1), (b, a)), ((0, 0), (1 - a - b, 1 - a - b))):
                key = (x + dx, c - x + dy)
                P[key] = P.get(key, 0.0) + base * wp
                Q[key] = Q.get(key, 0.0) + base * wq
    return P, Q


def dict_delta(P: dict, Q: dict, eps: float) -> float:
    keys = sorted(set(P) | set(Q))
    p = np.array([P.get(k, 0.0) for k in keys])
    q = np.array([Q.get(k, 0.0) for k in keys])
    return max(hockey(p, q, eps), hockey(q, p, eps))


def histogram_law(R: np.ndarray, data) -> np.ndarray:
    """Law of the histogram of n reports as a tensor of shape (n+1,)*k_out (the generating function's
    coefficients), one user at a time: T <- sum_y R[x, y] shift_y(T)."""
    n, m = len(data), R.shape[1]
    T = np.zeros((n + 1,) * m)
    T[(0,) * m] = 1.0
    for x in data:
        new = np.zeros_like(T)
        for y in range(m):
            src = [slice(None)] * m
            dst = [slice(None)] * m
            src[y], dst[y] = slice(0, n), slice(1, n + 1)
            new[tuple(dst)] += R[x, y] * T[tuple(src)]
        T = new
    return T


def krr(k: int, eps0: float) -> np.ndarray:
    e = math.exp(eps0)
    return np.where(np.eye(k, dtype=bool), e, 1.0) / (e + k - 1)


def worst_shuffled_delta(R: np.ndarray, n: int, eps: float) -> float:
    """Largest exact delta of the shuffled reports over every neighbouring pair of data sets of n users."""
    k = R.shape[0]
    best = 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        laws = {x: histogram_law(R, [x, *others]).ravel() for x in range(k)}
        for x0, x1 in itertools.permutations(range(k), 2):
            best = max(best, hockey(laws[x0], laws[x1], eps))
    return best


# --------------------------------------------------------------------------------------------------
# seed 000 (eq 3.1) and seed 001 (§4, eq 6.1)
# --------------------------------------------------------------------------------------------------


def test_seed000_strong_1d_pair_typed_from_eq_3_1():
    """Seed 000 eq 3.1: P_s = Bin(n-1, gamma/k) + 1, Q_s = Bin(n-1, gamma/k)."""
    r = registry("koskela", "strong-1d-pair")
    v = r["_values"]
    for key, (n, k, g, eps) in {"s1_05": (1000, 4, 0.25, 0.5), "s1_1": (1000, 4, 0.25, 1.0),
                                "s1_fig4": (10**4, 5, 0.1, 0.3), "s1_tiny": (5, 3, 0.9, 0.5)}.items():
        base = binom_pmf(n - 1, g / k)
        P, Q = np.concatenate([[0.0], base]), np.concatenate([base, [0.0]])
        assert v[key] == pytest.approx(max(hockey(P, Q, eps), hockey(Q, P, eps)), rel=REL), key
    assert r["verdict"] == "refuted" and v["s1_05"] < v["full_05"]


def test_seed001_rr2_all_zeros_versus_every_data_set():
    r = registry("koskela", "rr2-worst-case")
    v = r["_values"]
    for tag, (n, eps0, eps) in (("6", (6, 2.0, 0.05)), ("10", (10, 2.0, 0.2))):
        d = [rr2_count_delta(n, eps0, m, eps) for m in range(n)]
        assert v["seed_" + tag] == pytest.approx(d[0], rel=REL)
        assert v["worst_" + tag] == pytest.approx(max(d), rel=REL)
        # delta(m) = delta(n-1-m) (exchange 0 and 1): the registry's argmax is one of the tied maxima
        assert d[v["argworst_" + tag]] == pytest.approx(max(d), rel=REL)
    d = [rr2_count_delta(100, 4.0, m, 0.5) for m in range(100)]
    assert v["pct_100"] == pytest.approx(100 * (max(d) / d[0] - 1), rel=1e-6)
    assert r["verdict"] == "refuted"


def test_seed001_rr2_all_zeros_gap_where_and_how_much():
    r = registry("koskela", "rr2-all-zeros-gap")
    v = r["_values"]
    d = [rr2_count_delta(v["n_max"], v["eps0_max"], m, v["eps_max"]) for m in range(v["n_max"])]
    assert v["zeros_max"] == pytest.approx(d[0], rel=REL) and v["worst_max"] == pytest.approx(max(d), rel=REL)
    assert d[v["m_max"]] == pytest.approx(max(d), rel=REL) and 0 < v["m_max"] <= v["m_max_sym"]
    # the largest gap of the grid, recomputed over the whole grid (n <= 100 here: n = 1000 is the check's job)
    grid = _REGISTRY[("koskela", "rr2-all-zeros-gap")].params
    gaps = []
    for n in (x for x in grid["n"] if x <= 100):
        for eps0 in grid["eps0"]:
            for eps in grid["eps"]:
                dd = [rr2_count_delta(n, eps0, m, eps) for m in range(n)]
                gaps.append(max(dd) / dd[0] - 1)
    assert v["pct_max"] == pytest.approx(100 * max(gaps), rel=1e-6)
    assert r["verdict"] == "refuted"


def test_seed001_eq_6_1_clones_pair_and_the_2023_stronger_pair():
    """Seed 001 eq 6.1: P = (A + Delta, C - A), Q = (A, C - A + Delta), C ~ Bin(n-1, e^-eps0),
    A ~ Bin(C, 1/2), Delta ~ Bern(e^eps0/(e^eps0+1)); FMT 2023's stronger clones: C ~ Bin(n-1, 2/(e^eps0+1)),
    the target on side 0 w.p. e^eps0/(e^eps0+1), else on side 1 (exchanged under Q)."""
    r = registry("koskela", "clones-pair")
    v = r["_values"]
    for tag, (n, eps0, eps) in (("20", (20, 1.0, 0.3)), ("200", (200, 0.5, 0.3))):
        hi = math.exp(eps0) / (math.exp(eps0) + 1)
        assert v["clones_" + tag] == pytest.approx(dict_delta(*two_sided_pair(n, math.exp(-eps0), hi, 0.0), eps), rel=REL)
        assert v["stronger_" + tag] == pytest.approx(
            dict_delta(*two_sided_pair(n, 2 / (math.exp(eps0) + 1), hi, 1 - hi), eps), rel=REL)
    # the figures: n = 20, eps0 = 1, eps = 0.3: stronger pair 0.0247 < Feldman's numerical 0.042
    assert f"{v['stronger_20']:.4f}" == "0.0247" and v["stronger_20"] < v["feldman_20"] < v["clones_20"]


# --------------------------------------------------------------------------------------------------
# seed 002 (FLAME / Balle et al. 2019's Bennett bound)
# --------------------------------------------------------------------------------------------------


def test_seed002_original_bennett_below_the_exact_delta_of_a_realised_pair():
    """The counts (N_x1, N_x2) of shuffled k-RR (k = 20, gamma = 0.2, n = 200) when the target holds x1 (P) or
    x2 (Q) and every other user x3: a post-processing of the released histogram."""
    r = registry("flame", "bennett-original-valid")
    v = r["_values"]
    n, k, g, eps = 200, 20, 0.2, v["eps"]
    q = g / k
    N = n - 1
    # others: each reports x1 w.p. q, x2 w.p. q, else something else: trinomial over (a, b)
    a = np.arange(N + 1)[:, None]
    b = np.arange(N + 1)[None, :]
    s = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        others = np.where(s <= N, np.exp(binom.logpmf(s, N, 2 * q) + binom.logpmf(a, np.maximum(s, 0), 0.5)), 0.0)
    O = np.zeros((N + 2, N + 2))
    O[:N + 1, :N + 1] = others
    up_a, up_b = np.roll(O, 1, axis=0), np.roll(O, 1, axis=1)
    t1, rest = 1 - g + q, (k - 2) * q
    P = t1 * up_a + q * up_b + rest * O
    Q = q * up_a + t1 * up_b + rest * O
    exact = max(hockey(P.ravel(), Q.ravel(), eps), hockey(Q.ravel(), P.ravel(), eps))
    assert v["exact_200"] == pytest.approx(exact, rel=REL)
    assert r["verdict"] == "refuted" and v["orig_200"] < exact


# --------------------------------------------------------------------------------------------------
# seed 003 (Biswas et al.)
# --------------------------------------------------------------------------------------------------


def test_seed003_exact_delta_of_the_released_count_from_appendix_a():
    """Seed 003 Appendix A eqs 11-13: the released count of x0 is Bin(n_x0, p) + Bin(n-1-n_x0, pbar) + Bern(p)
    (target holds x0) or + Bern(pbar) (target holds x1), p = e^eps0/(e^eps0+k-1), pbar = 1/(e^eps0+k-1)."""
    r = registry("biswas", "eq6-vs-exact")
    v = r["_values"]
    n, k, eps0, m, eps = 100, 10, 2.0, 80, 0.1
    p, pbar = math.exp(eps0) / (math.exp(eps0) + k - 1), 1 / (math.exp(eps0) + k - 1)
    F = np.convolve(binom_pmf(m, p), binom_pmf(n - 1 - m, pbar))
    P, Q = np.convolve(F, [1 - p, p]), np.convolve(F, [1 - pbar, pbar])
    assert v["exact"] == pytest.approx(hockey(P, Q, eps), rel=REL)
    assert r["verdict"] == "refuted" and v["eq6"] < hockey(P, Q, eps)


def test_seed003_released_histogram_leaks_more_than_the_count():
    r = registry("biswas", "count-vs-histogram")
    v = r["_values"]
    R = krr(3, 2.0)
    # n = 6: the target holds x0 (value 0) or x1 (value 1); one other user holds x0 (n_x0 = 1), four hold x1 or x2
    for key, rest in (("hist", 1), ("worst", 2)):
        data = [0] + [rest] * 4
        P, Q = histogram_law(R, [0, *data]).ravel(), histogram_law(R, [1, *data]).ravel()
        assert v[key] == pytest.approx(max(hockey(P, Q, 1.0), hockey(Q, P, 1.0)), rel=REL), key
    assert r["verdict"] == "refuted" and v["worst"] > v["count"]


# --------------------------------------------------------------------------------------------------
# seed 004 (Balle, Bell, Gascón, Nissim)
# --------------------------------------------------------------------------------------------------


def test_seed004_ikos_noise_variances_closed_form():
    """The summed noise of n Polya(1/n, .) differences: a negative binomial NB(r, s) (s the success probability,
    numpy/scipy's convention) has variance r (1 - s)/s^2; the correct call has s = 1 - alpha, the authors' s =
    alpha, alpha = exp(-eps/precision), precision = floor(sqrt(n)); the MSE contribution is 2 n Var / precision^2."""
    r = registry("balle2020", "ikos-noise-code")
    v = r["_values"]
    n, eps = 10000, 1.0
    prec = math.isqrt(n)
    alpha = math.exp(-eps / prec)
    right = 2 * n * (1 / n) * alpha / (1 - alpha) ** 2 / prec**2
    wrong = 2 * n * (1 / n) * (1 - alpha) / alpha**2 / prec**2
    assert v["right"] == pytest.approx(right, rel=REL) and v["wrong"] == pytest.approx(wrong, rel=REL)
    assert r["verdict"] == "refuted"


def test_seed004_lemma_a1_expression_below_the_exact_expected_mse():
    """The blanket summation protocol (one level): each value x in [0, 1] randomly rounded to {0..k}/k, replaced
    w.p. gamma by a uniform value of {0..k}; the debiased total is unbiased, so its MSE is the variance of the
    sum of reports / ((1 - gamma) k)^2.  The expression is the one the claim quotes."""
    from shufflesim.core.rng import as_seed_sequence, data_seed
    from shufflesim.experiments.data import load_data
    from shufflesim.pipeline import registry as protocols

    claim = _REGISTRY[("balle2020", "lemma-a1-error-bound")]
    r = registry("balle2020", "lemma-a1-error-bound")
    v = r["_values"]
    prm = claim.params
    x = load_data(prm["data"], data_kind="real", n=prm["n"], rng=data_seed(as_seed_sequence(prm["seed"])))
    proto = protocols.create(prm["protocol"], len(x), **prm["options"])
    k, g, n = proto.k, proto.gamma, len(x)
    lo = np.floor(x * k)
    frac = x * k - lo
    e1 = lo + frac                      # E[rounded], in units of 1/k
    e2 = lo**2 + frac * (2 * lo + 1)    # E[rounded^2]
    u1, u2 = k / 2, k * (2 * k + 1) / 6  # uniform on {0..k}
    var = (1 - g) * e2 + g * u2 - ((1 - g) * e1 + g * u1) ** 2
    exact = float(np.sum(var)) / ((1 - g) * k) ** 2
    bound = n / (4 * k * k) + n * (g * (k * k - 1) / 12 + (k - 1) ** 2 * g * (1 - g) / 4) / (k * k * (1 - g) ** 2)
    assert v["expected"] == pytest.approx(exact, rel=1e-9) and v["bound"] == pytest.approx(bound, rel=REL)
    assert r["verdict"] == "refuted" and exact > bound


# --------------------------------------------------------------------------------------------------
# beyond the seeds: FMT 2023's stronger clones vs binary RR, Wang et al.'s variation ratio for k-RR
# --------------------------------------------------------------------------------------------------


def test_stronger_clone_pair_is_not_attained_by_binary_rr():
    r = registry("beyond", "stronger-clones-binary-rr")
    v = r["_values"]
    pts = _REGISTRY[("beyond", "stronger-clones-binary-rr")].params["points"]
    gaps = 0
    for i, (n, eps0, eps) in enumerate(pts):
        exact = max(rr2_count_delta(n, eps0, m, eps) for m in range(n))
        hi = math.exp(eps0) / (math.exp(eps0) + 1)
        pair = dict_delta(*two_sided_pair(n, 2 / (math.exp(eps0) + 1), hi, 1 - hi), eps)
        assert v[f"exact_{i}"] == pytest.approx(exact, rel=REL) and v[f"pair_{i}"] == pytest.approx(pair, rel=REL)
        assert exact <= pair * (1 + REL)  # a valid upper bound ...
        gaps += exact < pair * (1 - 1e-6)  # ... not attained
    # the figures: n = 4, eps0 = 2, eps = 0.1: 0.52087 vs 0.53511
    assert (f"{v['exact_0']:.5f}", f"{v['pair_0']:.5f}") == ("0.52087", "0.53511")
    assert gaps == v["not_attained"] > 0 and r["verdict"] == "refuted"


def test_variation_ratio_below_the_exact_delta_of_krr4():
    """Wang et al.'s reduction with k-RR's (p, beta, q) = (e^eps0, (e^eps0-1)/(e^eps0+k-1), e^eps0):
    alpha = beta/(p-1), clone probability r = 2 alpha p/q, target weights a = p alpha, b = alpha."""
    r = registry("beyond", "variation-ratio-krr")
    v = r["_values"]
    n, k, g, eps = 7, 4, 0.25, 2.0
    eps0 = math.log((1 - g) * k / g + 1)  # k-RR with blanket gamma: e^eps0 = 1 + (1-gamma) k/gamma
    assert v["eps0"] == pytest.approx(eps0, rel=1e-12)
    exact = worst_shuffled_delta(krr(k, eps0), n, eps)
    e = math.exp(eps0)
    beta = (e - 1) / (e + k - 1)
    alpha = beta / (e - 1)
    vr = dict_delta(*two_sided_pair(n, 2 * alpha * e / e, e * alpha, alpha), eps)
    assert v["exact"] == pytest.approx(exact, rel=REL) and v["vr"] == pytest.approx(vr, rel=REL)
    assert (f"{exact:.5f}", f"{vr:.4f}") == ("0.10538", "0.0543")
    assert r["verdict"] == "refuted" and v["kept_out"] is True
