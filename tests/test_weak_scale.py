"""Issue 21, the weak adversary's k-RR pair at any n: bucket rows from CDF differences
(:mod:`shufflesim.accounting.engines.bucketed_weak`, docs/theory.md#bucketed-weak).

Oracles: the exact row engine on the unreduced weak pair (:class:`~shufflesim.accounting.engines.tight.TightAccountant`
on :func:`krr_weak_pair`'s rows, an interval ~1e-8 wide single use), brute-force enumeration of the weak
adversary's view at tiny n (:func:`~shufflesim.accounting.exact.bruteforce.krr_bruteforce`, its hockey-stick
divergence summed directly), and the law of total probability for the block masses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.accounting.engines import bucketed_weak as W
from shufflesim.accounting.account import account
from shufflesim.accounting.exact.bruteforce import hockey_stick, krr_bruteforce
from shufflesim.accounting.pairs.krr import krr_weak_pair
from shufflesim.accounting.engines.tight import TightAccountant
from shufflesim.mechanisms.krr import KRR


def _contains(outer_lo, outer_up, inner_lo, inner_up) -> bool:
    return outer_lo <= inner_lo and inner_up <= outer_up


def _total_mass(rows) -> float:
    """Sum of the rows' masses w (alpha N/2 + beta) (alpha = 1 in bucket rows) and the extra atoms."""
    lm = rows.log_w + np.log(rows.alpha * rows.N / 2.0 + rows.beta)
    return float(np.exp(lm).sum() + np.exp(rows.extra_log_p).sum())


SMALL = [(4, 0.25), (3, 0.5), (10, 0.1)]


@pytest.mark.parametrize("k,gamma", SMALL)
@pytest.mark.parametrize("n", [1000, pytest.param(3000, marks=pytest.mark.slow)])
def test_contains_exact_single_use(n, k, gamma):
    """Coarse block widths: the bucketed interval contains the exact engine's, at two deltas.  At the default
    width and this small n the blocks hold one row each: both intervals are then the eps search's own
    (~1e-9 wide, not nested), and each contains the true value, so they overlap."""
    deltas = [1e-6, 1e-9]
    rows = krr_weak_pair(n, k, gamma, as_rows=True, tail_bound=1e-17)
    exact = TightAccountant(rows).epsilon(deltas)
    for h in (0.2, 0.05, None):  # None: the default refinement from rtol
        res, notes = W.weak_bucketed(n, k, gamma, delta=deltas, steps=None if h is None else (h,))
        for e, b in zip(exact, res):
            if h is None:
                assert b.eps_lower <= e.eps_upper and e.eps_lower <= b.eps_upper, (h, e, b)
            else:
                assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (h, e, b)
        if h == 0.2:  # the reduction is real here (blocks hold many rows), so the check is not vacuous
            wb = W.weak_buckets(n, k, gamma, h)
            assert wb.blocks < rows.N.size / 20


@pytest.mark.slow
@pytest.mark.parametrize("k,gamma", [(4, 0.25), (5, 0.1)])
def test_contains_exact_single_use_1e4(k, gamma):
    n = 10_000
    rows = krr_weak_pair(n, k, gamma, as_rows=True, tail_bound=1e-17)
    (e,) = TightAccountant(rows).epsilon([1e-9])
    for h in (0.02, 2e-3):
        (b,), _ = W.weak_bucketed(n, k, gamma, delta=[1e-9], steps=(h,))
        assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (h, e, b)


@pytest.mark.parametrize("k,gamma", [(4, 0.25), (3, 0.5), (2, 0.5)])
def test_contains_exact_delta(k, gamma):
    """delta(eps) intervals, coarse blocks, against the exact row engine."""
    n = 2000
    eps = [0.02, 0.05, 0.2, 0.5]
    rows = krr_weak_pair(n, k, gamma, as_rows=True, tail_bound=1e-25)
    exact = TightAccountant(rows).delta(eps)
    res, _ = W.weak_bucketed(n, k, gamma, eps=eps, steps=(0.1,))
    for e, b in zip(exact, res):
        if e.delta_upper > 1e3 * rows.tail:
            assert _contains(b.delta_lower, b.delta_upper, e.delta_lower, e.delta_upper), (e, b)
        else:  # the exact pair's own truncated tail makes its interval the wider one: both hold the truth
            assert b.delta_lower <= e.delta_upper and e.delta_lower <= b.delta_upper, (e, b)
        assert b.delta_upper > 0


@pytest.mark.parametrize("compositions", [2, pytest.param(5, marks=pytest.mark.slow)])
def test_contains_exact_composed(compositions):
    """Composed: coarse bucket rows contain the exact rows' FFT interval; at the default width both
    certified intervals overlap (each contains the true value)."""
    n, k, gamma = 1000, 4, 0.25
    rows = krr_weak_pair(n, k, gamma, as_rows=True, tail_bound=1e-17)
    (e,) = TightAccountant(rows, compositions=compositions).epsilon([1e-6])
    (b,), _ = W.weak_bucketed(n, k, gamma, delta=[1e-6], compositions=compositions, steps=(0.2,))
    assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (e, b)
    (d,), _ = W.weak_bucketed(n, k, gamma, delta=[1e-6], compositions=compositions)
    assert d.eps_lower <= e.eps_upper and e.eps_lower <= d.eps_upper, (e, d)


@pytest.mark.parametrize("n,k,gamma", [(3, 3, 0.3), (5, 3, 0.8), (6, 4, 0.5), (5, 4, 0.9)])
def test_brute_force_brackets(n, k, gamma):
    """Tiny n: the weak adversary's view enumerated (histogram + the others' coins); its delta, summed
    directly, lies in every bucketed interval, coarse (h = 1: strips and blocks of several rows) or fine."""
    bf = krr_bruteforce(n, k, gamma, "weak")
    eps = [0.05, 0.3, 1.0]
    truth = [max(hockey_stick(bf.log_p, bf.log_q, e), hockey_stick(bf.log_q, bf.log_p, e)) for e in eps]
    for h in (1.0, 0.3, 1e-3):
        res, _ = W.weak_bucketed(n, k, gamma, eps=eps, steps=(h,))
        for t, r in zip(truth, res):
            # the direct sum of <= 6^n terms has relative round-off below 1e-12
            assert r.delta_lower <= t * (1 + 1e-12) and t <= r.delta_upper * (1 + 1e-12), (h, t, r)


@pytest.mark.parametrize("n,k,gamma,h", [(10**5, 4, 0.25, 1e-3), (10**7, 3, 0.5, 1e-3), (10**9, 10, 0.05, 1e-3)])
def test_block_masses(n, k, gamma, h):
    """The upper rows plus the truncated tail carry at least all the mass, the lower rows at most all of it,
    and both within the certified rounding (relative 1e-7) of 1."""
    wb = W.weak_buckets(n, k, gamma, h, tail_bound=1e-16)
    up, lo = _total_mass(wb.upper), _total_mass(wb.lower)
    assert up + wb.upper.tail >= 1.0 and lo <= 1.0
    assert abs(up - 1.0) < 1e-7 and abs(lo - 1.0) < 1e-7


def test_size_does_not_grow_with_n():
    """At a fixed relative width the number of blocks falls as n grows (the window shrinks relative to its
    centre), and the atoms stay within the estimate used before building."""
    blocks = []
    for n in (10**6, 10**8, 10**9):
        wb = W.weak_buckets(n, 4, 0.25, 1e-3, tail_bound=1e-16)
        blocks.append(wb.blocks)
        assert wb.upper.n_atoms <= W.estimate_atoms(n, 4, 0.25, 1e-3)
    assert blocks[0] > blocks[1] > blocks[2]


def test_representatives_dominate():
    """The upper rows reach smaller N and larger lambda than the lower rows (the upper pair is never below the
    lower one), every lambda lies in (0, 1], and the lower rows only drop blocks (mass rounded down to 0)."""
    wb = W.weak_buckets(10**6, 4, 0.25, 2e-3)
    lam = lambda r: (r.N / 2.0) / (r.N / 2.0 + r.beta)  # noqa: E731
    assert wb.upper.N.min() <= wb.lower.N.min() and lam(wb.upper).max() >= lam(wb.lower).max()
    for r in (wb.upper, wb.lower):
        assert np.all(lam(r) > 0) and np.all(lam(r) <= 1.0)
    assert wb.lower.N.size <= wb.upper.N.size


def test_account_weak_at_scale_meets_precision():
    """account() at n = 1e7 takes the bucketed path (the exact rows would be ~1e12 atoms) and its interval
    meets the requested relative width 1e-3; it lies below the strong adversary's upper end (the strong
    adversary sees more)."""
    n = 10**7
    rep = account(KRR(n, 4, 0.25, "weak"), delta=[1e-9])
    (r,) = rep.results
    assert any("bucketed from CDF differences" in nt for nt in rep.notes)
    assert 0 < r.eps_lower <= r.eps_upper and (r.eps_upper - r.eps_lower) <= 1e-3 * r.eps_upper
    (s,) = account(KRR(n, 4, 0.25, "strong"), delta=[1e-9]).results
    assert r.eps_lower <= s.eps_upper


@pytest.mark.parametrize("n,delta", [(10**6, 1e-18), (10**8, 1e-16)])
def test_small_delta(n, delta):
    """delta = 1/n^2-like: the truncations (rows, columns) follow the delta asked, so the upper end stays finite,
    below eps0, and the width meets 1e-3."""
    (r,), _ = W.weak_bucketed(n, 4, 0.25, delta=[delta])
    eps0 = KRR(n, 4, 0.25, "weak").eps0
    assert 0 < r.eps_lower <= r.eps_upper < eps0 / 10
    assert (r.eps_upper - r.eps_lower) <= 1e-3 * r.eps_upper


@pytest.mark.slow
@pytest.mark.parametrize("n,compositions", [(10**9, 1), (10**8, 1000)])
def test_account_weak_internet_scale(n, compositions):
    rep = account(KRR(n, 4, 0.25, "weak"), delta=[1e-9], compositions=compositions)
    (r,) = rep.results
    assert 0 < r.eps_lower and (r.eps_upper - r.eps_lower) <= 1e-3 * r.eps_upper


def test_engine_choice():
    """Small n keeps the exact rows (cheaper and narrower there); large n the bucket rows; gamma = 1 (no
    loss) the exact pair."""
    assert not W.use_buckets(1000, 4, 0.25)
    assert W.use_buckets(10**5, 4, 0.25) and W.use_buckets(10**9, 4, 0.25)
    assert not W.use_buckets(10**9, 4, 1.0)


def test_rows_pair_still_refused_with_the_alternative(monkeypatch):
    """The unreduced weak pair is still refused before allocation at n = 1e8, and the refusal names the
    bucketed path (what account uses there)."""
    from shufflesim.errors import ResourceError

    with pytest.raises(ResourceError, match="bucketed_weak"):
        krr_weak_pair(10**8, 4, 0.25, as_rows=True)
