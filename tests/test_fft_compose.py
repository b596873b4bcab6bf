"""Composition: FFT accountant (both placements, tilting, aliasing bounds) against exact composition.

Oracles: exact pairwise convolution of the atoms (itself checked against 60-digit brute force),
60-digit brute force over product outcomes for tiny supports, and Google's dp_accounting as an
independent implementation (its pessimistic/optimistic estimates must bracket our interval).
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from shufflesim.accounting.engines import tight as tightmod
from shufflesim.accounting.pld.exact_compose import compose_exact
from shufflesim.accounting.pld.fft import Window, compose_grid
from shufflesim.accounting.pld.placement import base_split, discretise, discretise_base
from shufflesim.accounting.interop import to_dp_accounting
from shufflesim.accounting.pld.distribution import LossAtoms, PrivacyLossDistribution
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.engines.tight import TightAccountant, tight_delta
from shufflesim.errors import AccuracyError

mpmath.mp.dps = 60


def rr2_pair(n: int, eps0: float) -> PMFPair:
    """Shuffled binary randomised response (seed 001 eq 4.1): P = Bin(n, p), Q = Bin(n-1, p) + Bern(1-p)."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    k = np.arange(n + 1)
    lp = binom.logpmf(k, n, p)
    b = binom.logpmf(k, n - 1, p)
    lq = np.logaddexp(math.log(p) + b, math.log1p(-p) + np.concatenate(([-np.inf], b[:-1])))
    return PMFPair(lp, lq, "rr2-test", {"n": n, "eps0": eps0})


def _mp_exp(x):
    return mpmath.mpf(0) if x == -math.inf else mpmath.exp(mpmath.mpf(float(x)))


def mp_delta_composed(pairs, eps):
    """60-digit brute force of delta for the product pair (P_1 x ... x P_r, Q_1 x ... x Q_r)."""
    E = mpmath.exp(mpmath.mpf(float(eps)))
    ps = [[_mp_exp(a) for a in pr.log_p] for pr in pairs]
    qs = [[_mp_exp(b) for b in pr.log_q] for pr in pairs]
    pq = qp = mpmath.mpf(0)
    for idx in itertools.product(*[range(len(p)) for p in ps]):
        p = mpmath.fprod(ps[i][j] for i, j in enumerate(idx))
        q = mpmath.fprod(qs[i][j] for i, j in enumerate(idx))
        pq += max(p - E * q, 0)
        qp += max(q - E * p, 0)
    return max(pq, qp)


@st.composite
def random_pairs(draw, max_size=8):
    size = draw(st.integers(2, max_size))
    raw_p = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
    raw_q = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
    zp = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    raw_p[zp & (np.arange(size) > 1)] = 0.0
    raw_p[0] += 0.05
    raw_p[1] += 0.05
    raw_q[0] += 0.05
    raw_q[1] += 0.05
    with np.errstate(divide="ignore"):
        return PMFPair(np.log(raw_p / raw_p.sum()), np.log(raw_q / raw_q.sum()), "random")


# --------------------------------------------------------------------------- exact composition itself
def test_exact_composition_matches_brute_force():
    a = rr2_pair(4, 1.0)
    b = PMFPair(np.log([0.2, 0.5, 0.3]), np.log([0.4, 0.4, 0.2]), "b")
    for pairs, nc in (([a], 2), ([a], 3), ([a, b], 1)):
        plds = [PrivacyLossDistribution.from_pair(p) for p in pairs]
        comp = compose_exact(plds, compositions=nc)
        for eps in (0.0, 0.2, 0.8, 1.5):
            lo, up = comp.delta_interval(eps)
            exact = mp_delta_composed(pairs * nc, eps)
            assert mpmath.mpf(lo[0]) <= exact <= mpmath.mpf(up[0])


def test_infinite_mass_composes_as_one_minus_product():
    m = 0.03
    pair = PMFPair(np.log([0.5, 0.47, m]), np.array([math.log(0.5), math.log(0.5), -np.inf]), "inf")
    for nc in (2, 3, 5):
        r = tight_delta(pair, 100.0, compositions=nc)[0]
        expected = 1 - (1 - m) ** nc
        assert r.delta_lower <= expected * (1 + 1e-12) and expected <= r.delta_upper * (1 + 1e-12)
        assert r.delta_upper == pytest.approx(expected, rel=1e-9)


# --------------------------------------------------------------------------- FFT vs exact
@given(pair=random_pairs(), nc=st.sampled_from([2, 3]), eps=st.floats(0.0, 2.5),
       disc=st.sampled_from(["split", "lemma6"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fft_interval_contains_exact_composition(pair, nc, eps, disc):
    exact = TightAccountant(pair, compositions=nc)
    assert exact.mode == "exact-composed"
    fft = TightAccountant(pair, compositions=nc, exact_max_atoms=1, discretisation=disc, target_accuracy=None)
    # (a pair whose losses all coincide has one atom and is composed exactly even here)
    assert fft.mode == "fft" or PrivacyLossDistribution.from_pair(pair).size == 1
    e = exact.delta(eps)[0]
    f = fft.delta(eps)[0]
    assert f.delta_lower <= e.delta_upper and e.delta_lower <= f.delta_upper
    assert 0.0 <= f.delta_lower <= f.delta_upper <= 1.0


@pytest.mark.parametrize("disc", ["split", "lemma6"])
@pytest.mark.parametrize("nc", [2, 3])
def test_fft_certifies_target_accuracy_and_contains_exact(disc, nc):
    pair = rr2_pair(60, 1.0)
    exact = TightAccountant(pair, compositions=nc, exact_max_atoms=10**6)
    assert exact.mode == "exact-composed"
    fft = TightAccountant(pair, compositions=nc, exact_max_atoms=1, discretisation=disc, target_accuracy=1e-3)
    for eps in (0.1, 0.5, 1.0, 1.5, 1.8):
        e, f = exact.delta(eps)[0], fft.delta(eps)[0]
        assert f.delta_lower <= e.delta_lower and e.delta_upper <= f.delta_upper, (eps, e, f)
        assert f.delta_upper - f.delta_lower <= 1e-3 * f.delta_upper
        assert any("FFT grid" in n for n in f.notes)


def test_heterogeneous_composition_contains_exact():
    pairs = [rr2_pair(30, 1.0), rr2_pair(50, 0.5), rr2_pair(20, 2.0)]
    exact = TightAccountant(pairs, exact_max_atoms=10**6)
    fft = TightAccountant(pairs, exact_max_atoms=1)
    assert exact.mode == "exact-composed" and fft.mode == "fft"
    for eps in (0.2, 1.0, 2.0, 3.0):
        e, f = exact.delta(eps)[0], fft.delta(eps)[0]
        assert f.delta_lower <= e.delta_lower and e.delta_upper <= f.delta_upper
        assert f.delta_upper - f.delta_lower <= 1e-3 * f.delta_upper
    # compositions multiplies the whole list
    twice = TightAccountant(pairs, compositions=2)
    assert twice.n_total == 6


def test_tilted_fft_is_tight_far_below_the_round_off_floor():
    """delta ~ 1e-25 .. 1e-34 after 2-fold composition: certified to 1e-3 relative by tilting."""
    pair = rr2_pair(300, 2.0)
    exact = TightAccountant(pair, compositions=2)
    fft = TightAccountant(pair, compositions=2, exact_max_atoms=1)
    for eps in (3.0, 3.9):
        e, f = exact.delta(eps)[0], fft.delta(eps)[0]
        assert e.delta_upper < 1e-24
        assert f.delta_lower <= e.delta_lower and e.delta_upper <= f.delta_upper
        assert f.delta_upper - f.delta_lower <= 1e-3 * f.delta_upper
        assert any("tilt lam=" in n and "tilt lam=0," not in n for n in f.notes)


def test_chernoff_fallback_below_round_off_floor():
    pair = rr2_pair(300, 2.0)
    exact = TightAccountant(pair, compositions=2)
    fft = TightAccountant(pair, compositions=2, exact_max_atoms=1, tilt=False)
    for eps in (3.0, 3.9):
        e, f = exact.delta(eps)[0], fft.delta(eps)[0]
        assert any("Chernoff fallback" in n for n in f.notes)
        assert f.delta_lower <= e.delta_lower and e.delta_upper <= f.delta_upper
        assert f.delta_upper > 0 and f.delta_upper < 1e3 * e.delta_upper  # an informative bound


def test_accuracy_out_of_reach_is_reported_not_raised_and_never_garbage():
    pair = rr2_pair(60, 1.0)
    exact = TightAccountant(pair, compositions=3, exact_max_atoms=10**6).delta(1.0)[0]
    r = tight_delta(pair, 1.0, compositions=3, exact_max_atoms=1, max_grid_size=64)[0]
    assert r.accuracy_met is False
    assert any("accuracy_met=false" in n and "max_grid_size=64" in n for n in r.notes)
    assert "\n" not in " ".join(r.notes)
    assert r.delta_lower <= exact.delta_lower and exact.delta_upper <= r.delta_upper
    assert r.to_dict()["accuracy_met"] is False
    loose = tight_delta(pair, 1.0, compositions=3, exact_max_atoms=1, max_grid_size=64, target_accuracy=None)[0]
    assert loose.delta_lower <= exact.delta_lower and exact.delta_upper <= loose.delta_upper
    assert exact.accuracy_met is True


def test_eps_at_the_largest_loss_needs_an_absolute_tolerance():
    """At eps = n_c * eps0 the true delta of rr2 is 0 up to the rounding of the loss values: no grid
    can certify a relative accuracy there (accuracy_met is False); an absolute tolerance accepts."""
    pair = rr2_pair(60, 1.0)
    e = tight_delta(pair, 2.0, compositions=2)[0]
    r0 = tight_delta(pair, 2.0, compositions=2, exact_max_atoms=1)[0]
    assert r0.accuracy_met is False and r0.delta_lower <= e.delta_lower and e.delta_upper <= r0.delta_upper
    r = tight_delta(pair, 2.0, compositions=2, exact_max_atoms=1, absolute_accuracy=1e-20)[0]
    assert r.accuracy_met is True
    assert r.delta_lower <= e.delta_lower and e.delta_upper <= r.delta_upper <= 1e-20


def test_too_small_range_L_is_reported_not_hidden():
    """Koskela et al.'s script returns eps = 100 when L is too small; we widen and say so, never lie."""
    pair = rr2_pair(60, 1.0)
    exact = TightAccountant(pair, compositions=3, exact_max_atoms=10**6).delta(0.5)[0]
    kw = dict(compositions=3, exact_max_atoms=1, L=0.05, m=1000)
    strict = tight_delta(pair, 0.5, **kw)[0]
    assert strict.accuracy_met is False
    assert strict.delta_lower <= exact.delta_lower and exact.delta_upper <= strict.delta_upper
    wide = tight_delta(pair, 0.5, target_accuracy=None, **kw)[0]
    assert wide.delta_lower <= exact.delta_lower and exact.delta_upper <= wide.delta_upper
    ok = tight_delta(pair, 0.5, compositions=3, exact_max_atoms=1, L=5.0, m=200_000, target_accuracy=None)[0]
    assert ok.delta_lower <= exact.delta_lower and exact.delta_upper <= ok.delta_upper
    assert ok.delta_upper - ok.delta_lower < 1e-3 * ok.delta_upper


def test_epsilon_composed_never_overshoots():
    pair = rr2_pair(100, 1.0)
    exact = TightAccountant(pair, compositions=2)
    fft = TightAccountant(pair, compositions=2, exact_max_atoms=1)
    for target in (1e-3, 1e-6, 1e-10):
        e = fft.epsilon(target)[0]
        lo_up, up_up = exact._exact.delta_interval(e.eps_upper)
        assert up_up[0] <= target * (1 + 1e-9)
        lo_lo, _ = exact._exact.delta_interval(e.eps_lower)
        assert lo_lo[0] > target
        ex = exact.epsilon(target)[0]
        assert e.eps_lower <= ex.eps_upper and ex.eps_lower <= e.eps_upper


def test_monotone_in_compositions_and_eps():
    pair = rr2_pair(100, 1.0)
    prev = None
    for nc in (1, 2, 4, 8):
        r = tight_delta(pair, 0.5, compositions=nc)[0]
        if prev is not None:
            assert r.delta_lower > prev.delta_upper
        prev = r
    res = tight_delta(pair, list(np.linspace(0.1, 2.0, 12)), compositions=8)
    ups = [r.delta_upper for r in res]
    los = [r.delta_lower for r in res]
    assert all(a >= b for a, b in zip(ups, ups[1:])) and all(a >= b for a, b in zip(los, los[1:]))


# --------------------------------------------------------------------------- the error model
def test_fft_round_off_model_holds_against_direct_convolution():
    """||c^ - c||_2 <= rho (fft module docstring) with c the exact circular convolution."""
    rng = np.random.default_rng(7)
    for size, n in ((300, 2), (257, 3), (1000, 5)):
        x = rng.random(size) ** 6
        x /= x.sum()
        k = np.arange(size, dtype=np.int64)
        atoms = LossAtoms(k * 0.01, np.log(x))
        g = discretise(atoms, 0.01, "up")
        M = size * n
        comp = compose_grid([(g, n)], lam=0.0, window=Window(int(g.kmin) * n, M))
        direct = x.copy()
        for _ in range(n - 1):
            direct = np.convolve(direct, x)
        # re-normalise as compose_grid does (tilt 0: divide by the total mass)
        direct = direct / np.exp(g.log_mgf(0.0)) ** n
        err = np.linalg.norm(comp.c[: direct.size] - direct)
        assert err <= comp.rho, (err, comp.rho)
        assert err < comp.rho / 10  # the model has a margin


def test_split_placement_preserves_both_masses():
    pair = rr2_pair(40, 1.0)
    pld = PrivacyLossDistribution.from_pair(pair)
    for h in (1e-3, 0.037):
        g = discretise(pld.pq, h, "split")
        pm = np.exp(g.log_mass)
        qm = pm * np.exp(-g.values)
        assert pm.sum() == pytest.approx(np.exp(pld.pq.log_finite_mass), rel=1e-12)
        # Q-mass of the split is at most (slightly below, from the widening) the original Q-mass
        q_orig = np.exp(pld.pq.log_mass - pld.pq.losses).sum()
        assert qm.sum() <= q_orig and qm.sum() == pytest.approx(q_orig, rel=1e-9)


def test_base_grid_split_equals_direct_split():
    """Splitting onto a fine grid h_b and then onto h = m h_b gives the direct split onto h (a
    two-point law with given P- and Q-mass is unique)."""
    pld = PrivacyLossDistribution.from_pair(rr2_pair(500, 1.0))
    h_b = 1.7e-4
    base = base_split(pld.pq, h_b, chunk=97)  # small chunks exercise the chunk merging
    for m in (1, 3, 10):
        g1 = discretise_base(base, m)
        g2 = discretise(pld.pq, m * h_b, "split")
        a = np.zeros(int(max(g1.kmax, g2.kmax)) - int(min(g1.kmin, g2.kmin)) + 1)
        b = a.copy()
        k0 = min(g1.kmin, g2.kmin)
        np.add.at(a, g1.k - k0, np.exp(g1.log_mass))
        np.add.at(b, g2.k - k0, np.exp(g2.log_mass))
        assert np.allclose(a, b, rtol=1e-9, atol=1e-15)


def test_base_grid_path_contains_exact(monkeypatch):
    monkeypatch.setattr(tightmod, "BASE_MIN_ATOMS", 10)
    monkeypatch.setattr(tightmod, "BASE_POINTS", 2**16)
    pair = rr2_pair(300, 2.0)
    exact = TightAccountant(pair, compositions=2)
    fft = TightAccountant(pair, compositions=2, exact_max_atoms=1)
    for eps in (0.5, 2.0, 3.5):
        e, f = exact.delta(eps)[0], fft.delta(eps)[0]
        assert f.delta_lower <= e.delta_lower and e.delta_upper <= f.delta_upper
        assert f.delta_upper - f.delta_lower <= 1e-3 * f.delta_upper
    sol = fft._dirs[0]
    assert sol.h_base > 0 and any(type(c).__name__ == "BaseSplit" for c, _ in sol.work_components(True))


# --------------------------------------------------------------------------- dp_accounting
def test_agreement_with_dp_accounting():
    pytest.importorskip("dp_accounting")
    pair = rr2_pair(200, 1.0)
    pld = PrivacyLossDistribution.from_pair(pair)
    pess = to_dp_accounting(pld, value_discretization_interval=1e-4)
    opt = to_dp_accounting(pld, value_discretization_interval=1e-4, pessimistic_estimate=False)
    for eps in (0.05, 0.1, 0.3):
        r = pld.delta(eps)[0]
        assert opt.get_delta_for_epsilon(eps) <= r.delta_lower and r.delta_upper <= pess.get_delta_for_epsilon(eps)
    acc = TightAccountant(pld, compositions=8)
    p8, o8 = pess.self_compose(8), opt.self_compose(8)
    for eps in (0.2, 0.5, 1.0):  # deltas 2e-2 .. 1.5e-7, far above dp_accounting's ~1e-15 floor
        r = acc.delta(eps)[0]
        dp_hi, dp_lo = p8.get_delta_for_epsilon(eps), o8.get_delta_for_epsilon(eps)
        assert dp_lo <= r.delta_lower and r.delta_upper <= dp_hi
        assert (dp_hi - dp_lo) / dp_hi < 0.05


def test_dp_accounting_export_matches_its_own_constructor():
    dpa = pytest.importorskip("dp_accounting")
    pair = rr2_pair(50, 1.0)
    ours = to_dp_accounting(pair, value_discretization_interval=1e-3)
    lp = {i: float(v) for i, v in enumerate(pair.log_p)}
    lq = {i: float(v) for i, v in enumerate(pair.log_q)}
    theirs = dpa.pld.privacy_loss_distribution.from_two_probability_mass_functions(
        lq, lp, value_discretization_interval=1e-3, symmetric=False)
    for eps in (0.1, 0.3, 0.6):
        # (ours widens each loss by its rounding tolerance before rounding up, so an atom lying exactly
        # on a grid point - rr2's largest loss is eps0 = 1000 h - moves one bin up: ours is never below)
        a, b = ours.get_delta_for_epsilon(eps), theirs.get_delta_for_epsilon(eps)
        assert a >= b * (1 - 1e-12) and a == pytest.approx(b, rel=1e-4)


# ------------------------------------------------------- the geometric suffix sums without scipy.signal (issue 21)

@pytest.mark.parametrize("M,lam_h,blocks", [
    (300, 0.01, "one block"),        # B = 100 < M: three blocks and the carries
    (5000, 2e-4, "one block"),       # B = 5000 >= M: a single block
    (2000, 0.03, "blocks"),          # B = 33: many blocks
    (100, 0.001, "recursion"),       # M < 128: the recursion itself
    (400, 0.2, "recursion"),         # B = 5 < 16: the recursion itself
])
def test_geometric_suffix_within_its_error_bound(M, lam_h, blocks):
    """fft._geometric_suffix against the suffix sums of the float inputs in 60-digit arithmetic (mpmath; its own
    error ~1e-55 relative): every entry within 2 M u relative, the bound gamma's 3M u in
    GridComposition._common relies on (docstring of _geometric_suffix), on non-negative inputs spanning many
    orders of magnitude, with zeros."""
    from shufflesim.accounting.pld.fft import _geometric_suffix, _suffix

    rng = np.random.default_rng(M)
    x = np.abs(rng.standard_normal(M)) * np.exp(rng.uniform(-40, 0, M))
    x[rng.random(M) < 0.2] = 0.0
    x[-3:] = 0.0
    a = math.exp(-lam_h)
    got = _geometric_suffix(x, a)
    with mpmath.workdps(60):
        fa, acc, worst = mpmath.mpf(a), mpmath.mpf(0), mpmath.mpf(0)
        for j in range(M - 1, -1, -1):
            acc = mpmath.mpf(float(x[j])) + fa * acc
            if acc > 0:
                worst = max(worst, abs(mpmath.mpf(float(got[j])) - acc) / acc)
            else:
                assert got[j] == 0.0  # exactly: a suffix of zeros
    assert float(worst) <= 2 * M * 2.0**-53, (blocks, float(worst) / 2.0**-53)
    s = _suffix(x, a)
    assert s.size == M + 1 and s[M] == 0.0 and np.array_equal(s[:M], got)  # exact: the same computation
    # a ratio that underflowed to 0 (a steep tilt on a coarse grid): the recursion's s_j = x_j, exactly
    assert np.array_equal(_geometric_suffix(x, 0.0), x)
