"""The tight accountant on pairs in row form (BinomialRows): exact single use in O(rows) per eps and
composition by streaming the atoms onto the FFT grid (issue 3, "Performance").

Oracles, independent of the row engine:

* mpmath (40 digits) evaluating the hockey-stick divergence of the rows' mathematical pair
  P(r, x) = w_r C(N, x) 2^-N (a x + b), Q(r, x) = w_r C(N, x) 2^-N (a (N - x) + b) atom by atom, with
  exact integer binomials;
* brute-force enumeration of the adversary's view (shufflesim.accounting.exact.bruteforce);
* the atom path: the same pair expanded into a PMFPair, accounted exactly (single use) or by exact
  pairwise composition (n_c = 2, 3).

Every check is an interval containment or intersection of certified intervals; nothing is tuned.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shufflesim.accounting.exact import bruteforce as bf
from shufflesim.accounting.engines import tight as tightmod
from shufflesim.accounting.account import account
from shufflesim.mechanisms import KRR, Clones
from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.pairs import clones_pair, krr_strong_pair, krr_weak_pair
from shufflesim.accounting.pld.placement import discretise_base
from shufflesim.accounting.pld.distribution import PrivacyLossDistribution
from shufflesim.accounting.rows.rows_pld import RowsPLD
from shufflesim.accounting.rows.rows_stream import RowsComponent, rows_base_split, rows_loss_range
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.engines.tight import TightAccountant, tight_delta, tight_epsilon

EPS = (0.0, 0.03, 0.2, 0.7, 1.5, 4.0, 40.0)


def mp_delta(rows: BinomialRows, eps: float, reverse: bool = False) -> mpmath.mpf:
    """delta_{P||Q}(eps) (or Q||P) of the kept atoms of ``rows`` and its extra atoms, in mpmath."""
    mpmath.mp.dps = 40
    ee = mpmath.exp(mpmath.mpf(eps))
    total = mpmath.mpf(0)
    for lw, N, a, b, lo, hi in zip(rows.log_w, rows.N, rows.alpha, rows.beta, rows.lo, rows.hi):
        if lo > hi or lw == -math.inf:
            continue
        w = mpmath.exp(mpmath.mpf(float(lw))) / mpmath.mpf(2) ** int(N)
        a, b = mpmath.mpf(float(a)), mpmath.mpf(float(b))
        for x in range(int(lo), int(hi) + 1):
            B = w * mpmath.binomial(int(N), x)
            p, q = B * (a * x + b), B * (a * (int(N) - x) + b)
            if reverse:
                p, q = q, p
            total += max(p - ee * q, 0)
    for lp, lq in zip(rows.extra_log_p, rows.extra_log_q):
        p = mpmath.exp(mpmath.mpf(float(lp))) if lp > -math.inf else mpmath.mpf(0)
        q = mpmath.exp(mpmath.mpf(float(lq))) if lq > -math.inf else mpmath.mpf(0)
        if reverse:
            p, q = q, p
        total += max(p - ee * q, 0)
    return total


def mp_delta_both(rows, eps):
    return max(mp_delta(rows, eps), mp_delta(rows, eps, reverse=True))


def expanded(rows: BinomialRows) -> PMFPair:
    lp, lq = rows.expand()
    return PMFPair(lp, lq, rows.name, {}, "", rows.tail, rows.tail)


SMALL = [
    ("strong", lambda **kw: krr_strong_pair(14, 3, 0.4, **kw)),
    ("strong-nocoin", lambda **kw: krr_strong_pair(14, 3, 0.4, target_coin_visible=False, **kw)),
    ("weak", lambda **kw: krr_weak_pair(9, 3, 0.5, **kw)),
    ("clones", lambda **kw: clones_pair(14, 1.2, **kw)),
]


# --------------------------------------------------------------------------------------------------
# single use
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,make", SMALL, ids=[c[0] for c in SMALL])
def test_single_use_contains_mpmath_value_of_the_untruncated_pair(name, make):
    rows = make(tail_bound=0.0, as_rows=True)
    assert rows.tail == 0.0
    pld = RowsPLD.from_rows(rows)
    lo, up = pld.delta_interval(np.array(EPS))
    for e, l, u in zip(EPS, lo, up):
        exact = mp_delta_both(rows, e)
        assert l <= exact <= u, (name, e, l, float(exact), u)
        assert u - l <= 1e-9 * u + 1e-300  # and it is tight


@pytest.mark.parametrize("n,k,gamma,adv", [(4, 3, 0.6, "strong"), (5, 2, 0.3, "strong"), (4, 3, 0.6, "weak"),
                                           (5, 3, 0.25, "weak"), (3, 2, 1.0, "weak")])
def test_single_use_contains_bruteforce_view(n, k, gamma, adv):
    make = krr_strong_pair if adv == "strong" else krr_weak_pair
    rows = make(n, k, gamma, tail_bound=0.0, as_rows=True)
    brute = bf.krr_bruteforce(n, k, gamma, adv)
    lo, up = RowsPLD.from_rows(rows).delta_interval(np.array(EPS))
    for e, l, u in zip(EPS, lo, up):
        b_lo, b_up = bf.delta_interval(brute, e)  # float hockey stick of the enumerated views
        assert l <= b_up * (1 + 1e-12) and b_lo * (1 - 1e-12) <= u, (adv, e, l, u, b_lo)


def test_single_use_clones_contains_bruteforce():
    rows = clones_pair(5, 1.3, tail_bound=0.0, as_rows=True)
    brute = bf.clones_bruteforce(5, 1.3)
    lo, up = RowsPLD.from_rows(rows).delta_interval(np.array(EPS))
    for e, l, u in zip(EPS, lo, up):
        b_lo, b_up = bf.delta_interval(brute, e)
        assert l <= b_up * (1 + 1e-12) and b_lo * (1 - 1e-12) <= u, (e, l, u, b_lo)


MEDIUM = [
    ("strong", lambda **kw: krr_strong_pair(3000, 4, 0.3, **kw)),
    ("weak", lambda **kw: krr_weak_pair(800, 4, 0.3, **kw)),
    ("weak-k2", lambda **kw: krr_weak_pair(500, 2, 0.5, **kw)),
    ("clones", lambda **kw: clones_pair(3000, 2.0, **kw)),
]


@pytest.mark.parametrize("name,make", MEDIUM, ids=[c[0] for c in MEDIUM])
def test_single_use_agrees_with_the_atom_path(name, make):
    """Truncated pairs: the row interval and the atom path's exact interval are both certified for
    the same pair and intersect; the row path evaluates a superset of the kept atoms (union of the
    windows of rows with equal N), so its lower bound is at least the atom path's lower bound minus
    rounding, and both uppers add the same tail."""
    rows = make(as_rows=True)
    pair = make()
    R = RowsPLD.from_rows(rows)
    P = PrivacyLossDistribution.from_pair(pair)
    eps = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 2.0])
    rl, ru = R.delta_interval(eps)
    pl, pu = P.delta_interval(eps)
    assert np.all(rl <= pu) and np.all(pl <= ru)
    assert np.all(rl >= pl * (1 - 1e-10))
    assert np.all(ru - rl <= 1e-9 * ru + rows.tail * (1 + 1e-9))


def test_single_use_tiny_delta_in_log_space():
    """delta ~ 1e-40 .. 1e-90 come out with full relative precision (a 1e-300 truncation; at the
    largest eps only the infinite-loss mass is left)."""
    rows = krr_strong_pair(2000, 4, 0.4, tail_bound=1e-300, as_rows=True)
    pair = krr_strong_pair(2000, 4, 0.4, tail_bound=1e-300)
    R = RowsPLD.from_rows(rows)
    P = PrivacyLossDistribution.from_pair(pair)
    eps = np.array([1.6, 3.0, 6.0, 60.0])
    rl, ru = R.delta_interval(eps)
    pl, pu = P.delta_interval(eps)
    assert np.all(pl > 0) and float(pl.min()) < 1e-80
    assert np.all(rl <= pu) and np.all(pl <= ru)
    assert np.all(ru - rl <= 1e-9 * ru)


def _asymmetric_rows() -> BinomialRows:
    rng = np.random.default_rng(7)
    N = np.array([6, 9, 13, 20, 31])
    lo = np.array([0, 2, 5, 3, 10])
    hi = np.array([6, 8, 13, 15, 25])
    alpha = rng.uniform(0.2, 1.0, N.size)
    beta = np.array([0.0, 0.3, 0.0, 0.05, 0.7])
    raw = rng.uniform(0.5, 1.5, N.size)
    # normalise so that P (all columns) has total mass 0.9; the extra atoms carry 0.1 under P
    mass = raw * (alpha * N / 2 + beta)
    log_w = np.log(0.9 * raw / mass.sum())
    extra_p = np.log(np.array([0.04, 0.06, 0.0 + 1e-300]))
    extra_q = np.log(np.array([0.07, 1e-300, 0.03]))
    extra_q[1] = -np.inf  # an infinite-loss extra atom (P only)
    return BinomialRows(log_w, N, alpha, beta, lo, hi, 0.0, extra_p, extra_q, name="asym")


def test_asymmetric_rows_both_directions():
    rows = _asymmetric_rows()
    R = RowsPLD.from_rows(rows)
    assert not R.symmetric
    for d, rev in ((R.pq, False), (R.qp, True)):
        for e in EPS:
            lo, up = d.delta_interval(e)
            exact = mp_delta(rows, e, reverse=rev)
            assert lo[0] <= exact <= up[0], (rev, e, lo, float(exact), up)
    lo, up = R.delta_interval(np.array(EPS))
    for e, l, u in zip(EPS, lo, up):
        assert l <= mp_delta_both(rows, e) <= u


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(1, 5), st.floats(0.0, 3.0))
def test_random_rows_contain_mpmath_value(seed, n_rows, eps):
    """Random row-form pairs (distinct N per row, arbitrary windows, b = 0 or not, extra atoms)."""
    rng = np.random.default_rng(seed)
    N = rng.choice(np.arange(1, 40), size=n_rows, replace=False)
    lo = np.array([rng.integers(0, n + 1) for n in N])
    hi = np.array([rng.integers(l, n + 1) for l, n in zip(lo, N)])
    alpha = rng.uniform(0.0, 2.0, n_rows) * (rng.random(n_rows) > 0.1)
    beta = rng.uniform(0.0, 1.0, n_rows) * (rng.random(n_rows) > 0.5)
    log_w = rng.uniform(-8.0, 0.0, n_rows)
    # a sub-probability pair: the rows' full P-mass (= Q-mass) sum_r w_r (a N/2 + b) is at most 0.9
    total = float(np.sum(np.exp(log_w) * (alpha * N / 2 + beta)))
    if total > 0.9:
        log_w = log_w + math.log(0.9 / total)
    ex = rng.integers(0, 3)
    extra_p = np.log(rng.uniform(1e-6, 1e-2, ex))
    extra_q = np.log(rng.uniform(1e-6, 1e-2, ex))
    rows = BinomialRows(log_w, N, alpha, beta, lo, hi, 0.0, extra_p, extra_q)
    lo_, up_ = RowsPLD.from_rows(rows).delta_interval(eps)
    exact = mp_delta_both(rows, eps)
    assert lo_[0] <= exact <= up_[0], (seed, eps, lo_, float(exact), up_)


def _random_rows(seed: int) -> BinomialRows:
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 6))
    N = rng.choice(np.arange(1, 40), size=n_rows, replace=False)
    lo = np.array([rng.integers(0, n + 1) for n in N])
    hi = np.array([rng.integers(l, n + 1) for l, n in zip(lo, N)])
    alpha = rng.uniform(0.0, 2.0, n_rows) * (rng.random(n_rows) > 0.1)
    beta = rng.uniform(0.0, 1.0, n_rows) * (rng.random(n_rows) > 0.5)
    log_w = rng.uniform(-8.0, 0.0, n_rows)
    total = float(np.sum(np.exp(log_w) * (alpha * N / 2 + beta)))
    if total > 0.9:
        log_w = log_w + math.log(0.9 / total)
    ex = rng.integers(0, 3)
    return BinomialRows(log_w, N, alpha, beta, lo, hi, 0.0, np.log(rng.uniform(1e-6, 1e-2, ex)),
                        np.log(rng.uniform(1e-6, 1e-2, ex)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_random_rows_composition_contains_exact(seed):
    """Random row-form pairs, n_c = 2: streamed rows on the FFT grid vs exact pairwise composition
    of the expanded atoms.  Tiny pairs give FFT intervals as narrow as 1e-12, so this also checks
    that the streamed base grid keeps masses to rounding (not only to the FFT's accuracy)."""
    rows = _random_rows(seed)
    if rows.n_atoms < 2 or rows.n_atoms > 2000:
        return
    exact = TightAccountant(expanded(rows), compositions=2, exact_max_atoms=10**7)
    fft = TightAccountant(rows, compositions=2, exact_max_atoms=1, target_accuracy=None)
    for e in (0.0, 0.2, 1.0, 3.0):
        a, x = fft.delta([e])[0], exact.delta([e])[0]
        assert a.delta_lower <= x.delta_upper and x.delta_lower <= a.delta_upper, (seed, e, a, x)


def test_epsilon_single_use_brackets_the_root():
    rows = krr_strong_pair(5000, 4, 0.3, as_rows=True)
    (r,) = tight_epsilon(rows, 1e-6)
    R = RowsPLD.from_rows(rows)
    assert R.delta_interval(r.eps_upper)[1][0] <= 1e-6
    assert r.eps_lower is not None and R.delta_interval(r.eps_lower)[0][0] > 1e-6
    assert r.eps_upper - r.eps_lower <= 1e-8


def test_rows_validation():
    rows = krr_strong_pair(50, 3, 0.3, as_rows=True)
    from dataclasses import replace

    from shufflesim.errors import DataError, ParameterError

    with pytest.raises(DataError, match="alpha and beta"):
        RowsPLD.from_rows(replace(rows, alpha=-rows.alpha))
    with pytest.raises(DataError, match="window"):
        RowsPLD.from_rows(replace(rows, hi=rows.hi + 5))
    with pytest.raises(ParameterError, match="BinomialRows"):
        RowsPLD.from_rows(object())


def test_mirrored_and_symmetric():
    rows = krr_weak_pair(60, 3, 0.3, as_rows=True)
    assert rows.symmetric
    m = rows.mirrored()
    assert np.array_equal(m.lo, rows.N - rows.hi) and np.array_equal(m.hi, rows.N - rows.lo)
    assert not _asymmetric_rows().symmetric


# --------------------------------------------------------------------------------------------------
# composition: streamed rows on the FFT grid vs exact pairwise composition of the atoms
# --------------------------------------------------------------------------------------------------

COMPOSE = [
    ("strong", lambda **kw: krr_strong_pair(40, 3, 0.4, **kw), 2),
    ("weak", lambda **kw: krr_weak_pair(25, 3, 0.4, **kw), 2),
    ("clones", lambda **kw: clones_pair(40, 1.5, **kw), 2),
    ("strong", lambda **kw: krr_strong_pair(12, 3, 0.5, **kw), 3),
    ("weak", lambda **kw: krr_weak_pair(8, 3, 0.5, **kw), 3),
    ("clones", lambda **kw: clones_pair(12, 1.0, **kw), 3),
]


@pytest.mark.parametrize("name,make,nc", COMPOSE, ids=[f"{c[0]}-nc{c[2]}" for c in COMPOSE])
def test_composition_contains_exact_pairwise_composition(name, make, nc):
    rows = make(tail_bound=0.0, as_rows=True)
    pair = make(tail_bound=0.0)
    exact = TightAccountant(pair, compositions=nc, exact_max_atoms=10**7)
    assert exact.mode == "exact-composed"
    fft = TightAccountant(rows, compositions=nc, exact_max_atoms=1)
    assert fft.mode == "fft" and isinstance(fft._dirs[0].sources[0][0], RowsComponent)
    eps = [0.0, 0.1, 0.4, 1.0, 2.0]
    for e, x in zip(fft.delta(eps), exact.delta(eps)):
        assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper, (name, nc, e, x)
        assert e.delta_upper - e.delta_lower <= 1e-3 * e.delta_upper + 1e-15


def test_composition_truncated_medium_n_contains_atom_path():
    """n = 150: exact 2-fold composition of the truncated atoms vs the streamed rows (both intervals
    certified for the same truncated pair, both adding its tail to the upper bound)."""
    make = lambda **kw: krr_strong_pair(150, 4, 0.3, **kw)  # noqa: E731
    exact = TightAccountant(make(), compositions=2, exact_max_atoms=10**7)
    fft = TightAccountant(make(as_rows=True), compositions=2, exact_max_atoms=1)
    assert exact.mode == "exact-composed" and fft.mode == "fft"
    for e, x in zip(fft.delta([0.1, 0.5, 1.0]), exact.delta([0.1, 0.5, 1.0])):
        assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper


def test_composition_asymmetric_rows_two_directions():
    rows = _asymmetric_rows()
    fft = TightAccountant(rows, compositions=2, exact_max_atoms=1)
    assert len(fft._dirs) == 2
    exact = TightAccountant(expanded(rows), compositions=2, exact_max_atoms=10**7)
    for e, x in zip(fft.delta([0.0, 0.3, 1.0, 3.0]), exact.delta([0.0, 0.3, 1.0, 3.0])):
        assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper, (e, x)


def test_heterogeneous_rows_and_atoms():
    a = krr_weak_pair(20, 3, 0.4, tail_bound=0.0)
    b_rows = clones_pair(30, 1.0, tail_bound=0.0, as_rows=True)
    exact = TightAccountant([a, expanded(b_rows)], exact_max_atoms=10**7)
    fft = TightAccountant([a, b_rows], exact_max_atoms=1)
    for e, x in zip(fft.delta([0.2, 0.8]), exact.delta([0.2, 0.8])):
        assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper


def test_rows_restreamed_when_the_grid_is_finer_than_the_base(monkeypatch):
    monkeypatch.setattr(tightmod, "ROWS_BASE_POINTS", 16)  # a coarse base grid: the FFT needs finer
    rows = krr_strong_pair(30, 3, 0.4, tail_bound=0.0, as_rows=True)
    fft = TightAccountant(rows, compositions=2, exact_max_atoms=1)
    h0 = fft._dirs[0].h_base
    exact = TightAccountant(expanded(rows), compositions=2, exact_max_atoms=10**7)
    for e, x in zip(fft.delta([0.1, 0.6]), exact.delta([0.1, 0.6])):
        assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper
    assert fft._dirs[0].h_base < h0


def test_lemma6_placement_expands_rows():
    rows = clones_pair(30, 1.0, tail_bound=0.0, as_rows=True)
    fft = TightAccountant(rows, compositions=2, exact_max_atoms=1, discretisation="lemma6")
    exact = TightAccountant(expanded(rows), compositions=2, exact_max_atoms=10**7)
    (e,), (x,) = fft.delta([0.5]), exact.delta([0.5])
    assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper


def test_tilted_composition_far_below_round_off():
    """n_c = 2 at eps where delta ~ 1e-20 .. 1e-35, far below the FFT's round-off floor: the
    streamed rows keep relative accuracy (tilted FFT)."""
    rows = clones_pair(40, 1.5, tail_bound=0.0, as_rows=True)
    exact = TightAccountant(expanded(rows), compositions=2, exact_max_atoms=10**7)
    fft = TightAccountant(rows, compositions=2, exact_max_atoms=1)
    for x, e in zip(exact.delta([7.0, 8.5]), fft.delta([7.0, 8.5])):
        assert 0 < x.delta_lower < 1e-20
        assert e.delta_lower <= x.delta_lower and x.delta_upper <= e.delta_upper
        assert e.delta_upper - e.delta_lower <= 1e-3 * e.delta_upper


# --------------------------------------------------------------------------------------------------
# the streamed base grid
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: krr_strong_pair(200, 4, 0.3, as_rows=True),
                                  lambda: krr_weak_pair(150, 4, 0.3, as_rows=True),
                                  lambda: clones_pair(200, 1.5, as_rows=True)])
def test_base_split_keeps_p_mass_and_lowers_q_mass_by_at_most_the_margin(make):
    rows = make()
    lp, lq = rows.expand()
    fin = np.isfinite(lp) & np.isfinite(lq)
    p_fin = math.fsum(np.exp(lp[fin]))
    q_fin = math.fsum(np.exp(lq[fin]))
    lmin, lmax, _ = rows_loss_range(rows)
    base = rows_base_split(rows, (lmax - lmin) / 3000, cells=997)  # small blocks: many of them
    a = base.atoms
    p_base = math.fsum(np.exp(a.log_mass))
    q_base = math.fsum(np.exp(a.log_mass - a.losses))
    rel = a.mass_rel_err + 1e-13  # + the expanded atoms' own rounding
    assert abs(p_base - p_fin) <= rel * p_fin
    mu = base.shift / 2
    assert q_fin * math.exp(-mu) * (1 - rel) <= q_base <= q_fin * (1 + rel)
    # infinite-loss mass: the P-mass of atoms with Q = 0 (x = N with b = 0)
    inf = math.fsum(np.exp(lp[np.isfinite(lp) & ~np.isfinite(lq)]))
    assert abs(math.exp(a.log_inf_mass) - inf) <= 1e-10 * inf + 1e-300 if inf > 0 else a.log_inf_mass == -math.inf
    # every coarser grid h = m h_b splits on exactly: total P-mass unchanged
    for m in (1, 7, 40):
        g = discretise_base(base, m)
        assert abs(math.fsum(np.exp(g.log_mass)) - p_base) <= (g.agg_rel + 1e-14) * p_base


# --------------------------------------------------------------------------------------------------
# the front end
# --------------------------------------------------------------------------------------------------

def test_account_uses_rows_and_agrees_with_the_atom_path():
    rep = account(KRR(1000, 4, 0.3, "weak"), eps=[0.1, 0.4])
    assert any("row form" in nt for nt in rep.notes)
    pair = krr_weak_pair(1000, 4, 0.3)
    for r, e in zip(rep.results, (0.1, 0.4)):
        (x,) = tight_delta(pair, [e])
        assert r.delta_lower <= x.delta_upper and x.delta_lower <= r.delta_upper
    rep2 = account(Clones(3000, 2.0), eps=[0.3], compositions=4, method="tight-koskela")  # eq 6.1 (issue 9)
    (x,) = tight_delta(clones_pair(3000, 2.0), [0.3], compositions=4)
    (r,) = rep2.results
    assert r.delta_lower <= x.delta_upper and x.delta_lower <= r.delta_upper
    rep3 = account(KRR(3000, 4, 0.3, "strong"), delta=[1e-6])
    (r,) = rep3.results
    R = RowsPLD.from_rows(krr_strong_pair(3000, 4, 0.3, as_rows=True))  # the pair account() builds
    assert R.delta_interval(r.eps_upper)[1][0] <= 1e-6 < R.delta_interval(r.eps_lower)[0][0]
