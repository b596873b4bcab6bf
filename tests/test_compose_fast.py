"""Issue 21 (item 1, composed): the fast composed paths against the exact engines.

* the vectorised certified eps search (:func:`~shufflesim.accounting.engines.tight._eps_interval_vec`) against a
  closed-form delta(eps) (the root is known);
* the FFT accountant refined only as far as ``eps_rtol`` asks, and the bucketed engine composed, against
  exact pairwise composition (an interval ~1e-9 wide) wherever that runs: their intervals contain it and
  meet the requested relative width;
* 1000-fold: the eps_rtol path against the default-precision FFT accountant (both certified, so their
  intervals must overlap), and the width asked.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.accounting.exact import exact_rr2 as X
from shufflesim.accounting.rows.bucketed import bucketed_epsilon
from shufflesim.accounting.pairs.krr import krr_pair
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.accounting.engines.tight import TightAccountant, _eps_interval_vec


def _contains(outer_lo, outer_up, inner_lo, inner_up):
    """Containment up to the root finders' tolerance: every end is an evaluated eps within
    xtol + rtol eps = 1e-9 + 1e-9 eps of its bracket's other end (Numerics.eps_tol; _eps_interval_vec), so
    two certified intervals only that narrow may cross by that much without either being wrong."""
    tol = 1e-9 + 1e-9 * max(abs(inner_lo), abs(inner_up))
    return outer_lo <= inner_lo + tol and inner_up <= outer_up + tol and outer_lo <= inner_up and inner_lo <= outer_up


# ------------------------------------------------------------------------------------ the eps search

@pytest.mark.parametrize("rate,gap,delta", [(30.0, 1e-3, 1e-9), (2.0, 0.1, 1e-3), (1e4, 1e-6, 1e-12)])
def test_vectorised_eps_search_brackets_a_known_root(rate, gap, delta):
    """delta(eps) = exp(-rate eps) / 2 with bounds (1 -+ gap) delta(eps): the root is known in closed form;
    eps_upper must be a point where the upper bound is <= delta, eps_lower one where the lower bound is
    > delta, both around the root and as close as the tolerance and the bounds' gap allow."""
    calls = []

    def both(e):
        e = np.asarray(e, dtype=float)
        calls.append(e.size)
        d = 0.5 * np.exp(-rate * e)
        return d * (1 - gap), d * (1 + gap)

    root = math.log(0.5 / delta) / rate
    eps_max = 50 * root
    lo, up = _eps_interval_vec(both, delta, eps_max, 1e-9)
    assert both([up])[1][0] <= delta and both([lo])[0][0] > delta
    assert lo < root < up
    # the bounds' own gap moves the ends by log(1 + gap)/rate and -log(1 - gap)/rate; the search adds at
    # most its tolerance xtol + rtol eps (1e-9 + 1e-9 eps)
    tol = 1e-9 + 1e-9 * root * 2
    assert up - root <= math.log1p(gap) / rate + tol
    assert root - lo <= -math.log1p(-gap) / rate + tol
    assert len(calls) <= 25  # a few vectorised passes, not hundreds of scalar calls


def test_vectorised_eps_search_edge_cases():
    def const(v):
        return lambda e: (np.full(np.shape(e), v), np.full(np.shape(e), v))

    assert _eps_interval_vec(const(1e-3), 1e-2, 1.0, 1e-9) == (0.0, 0.0)  # met at eps = 0
    lo, up = _eps_interval_vec(const(1e-3), 1e-6, 1.0, 1e-9)  # never met below eps_max
    assert math.isinf(up) and math.isinf(lo)


# ------------------------------------------------------------------- against exact pairwise composition

@pytest.mark.parametrize("n,eps0,m,k", [(1000, 1.0, 0, 2), (1000, 2.0, 999, 2), (100, 0.5, 7, 3),
                                        (200, 2.0, 0, 3)])
def test_fft_eps_rtol_contains_exact_composition(n, eps0, m, k):
    """A binary-RR data-set pair composed k times: exact pairwise composition against the FFT path with
    eps_rtol (exact composition disabled by exact_max_atoms=1)."""
    pair = X.data_set_pair(n, eps0, m)
    exact = TightAccountant(pair, compositions=k, exact_max_atoms=10**7)
    assert exact.mode == "exact-composed"
    fft = TightAccountant(pair, compositions=k, exact_max_atoms=1, eps_rtol=2.5e-4)
    assert fft.mode == "fft"
    for delta in (1e-4, 1e-8):
        e = exact.epsilon([delta])[0]
        f = fft.epsilon([delta])[0]
        assert _contains(f.eps_lower, f.eps_upper, e.eps_lower, e.eps_upper), (delta, e, f)
        assert f.accuracy_met and f.eps_upper - f.eps_lower <= 2.5e-4 * f.eps_upper, f


@pytest.mark.parametrize("kind,eps0,kk,gamma", [("clones", 1.0, 2, 0.0), ("clones", 2.0, 2, 0.0),
                                              ("strong", 0.0, 4, 0.25), ("shuffled", 0.0, 4, 0.25)])
def test_bucketed_composed_contains_exact_composition(kind, eps0, kk, gamma):
    """Bucket rows composed (eps_rtol = rtol/4 inside) against exact pairwise composition of the rows."""
    rows = stronger_clones_pair(100, eps0, as_rows=True) if kind == "clones" else krr_pair(100, kk, gamma, kind, as_rows=True)
    exact = TightAccountant(rows, compositions=2, exact_max_atoms=2 * 10**7)
    assert exact.mode == "exact-composed"
    e = exact.epsilon([1e-6])[0]
    b = bucketed_epsilon(rows, [1e-6], accountant=TightAccountant, compositions=2, exact_max_atoms=1)[0]
    assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (e, b)


# ------------------------------------------------------------------------------------------ 1000-fold

@pytest.mark.parametrize("kind,eps0,kk,gamma,n", [
    ("clones", 1.0, 2, 0.0, 10**4),
    pytest.param("strong", 0.0, 4, 0.25, 10**5, marks=pytest.mark.slow),
    pytest.param("shuffled", 0.0, 4, 0.25, 10**5, marks=pytest.mark.slow),
    pytest.param("clones", 2.0, 2, 0.0, 10**5, marks=pytest.mark.slow),
])
def test_thousandfold_eps_rtol_against_default_precision(kind, eps0, kk, gamma, n):
    """1000-fold, no exact engine: the bucketed engine (eps_rtol inside) and the default FFT accountant on
    the unreduced rows (delta accuracy 1e-3) are both certified, so their intervals must overlap; the
    bucketed one meets the relative width 1e-3 asked."""
    rows = stronger_clones_pair(n, eps0, as_rows=True) if kind == "clones" else krr_pair(n, kk, gamma, kind, as_rows=True)
    b = bucketed_epsilon(rows, [1e-9], accountant=TightAccountant, compositions=1000)[0]
    d = TightAccountant(rows, compositions=1000).epsilon([1e-9])[0]
    assert b.eps_lower <= d.eps_upper and d.eps_lower <= b.eps_upper, (b, d)
    assert b.eps_upper - b.eps_lower <= 1e-3 * b.eps_upper, b


# --------------------------------------------------------------------- delta(eps): the column truncation

def test_bucketed_delta_column_tail_follows_the_answer():
    """At an eps where delta ~ 1e-18 (far below the default 1e-16 per row), the bucketed delta(eps) rebuilds
    its rows with a column tail following the answer: it contains the exact row engine's interval and is
    narrow (with the fixed 1e-16 the upper end would be ~1e-16, a hundred times the truth)."""
    from shufflesim.accounting.rows.bucketed import COLUMN_TAIL, DEFAULT_RTOL, bucketed_delta

    pair = stronger_clones_pair(100_000, 1.0, as_rows=True, tail_bound=1e-26)
    eps = TightAccountant(pair).epsilon([1e-18])[0].eps_upper
    exact = TightAccountant(pair).delta([eps])[0]
    assert exact.delta_upper < 1e-2 * COLUMN_TAIL
    got = bucketed_delta(pair, [eps], accountant=TightAccountant)[0]
    assert got.delta_lower <= exact.delta_lower and exact.delta_upper <= got.delta_upper
    assert (got.delta_upper - got.delta_lower) / got.delta_upper <= 10 * DEFAULT_RTOL


# ------------------------------------------------------------------ the composed lower end: one of each mirror

@pytest.mark.parametrize("n,eps0,m,k", [(200, 1.0, 0, 3), (50, 2.0, 7, 2)])
def test_mirror_data_sets_compose_to_the_same_value(n, eps0, m, k):
    """The data sets m and n - 1 - m are each other's mirror (y -> n - y swaps P and Q): their composed pairs,
    evaluated exactly (pairwise composition, both directions), give the same delta(eps) and eps(delta), so
    composed_lower_* evaluates one of each mirror pair (mirror_distinct)."""
    a = TightAccountant(X.data_set_pair(n, eps0, m), compositions=k, exact_max_atoms=10**7)
    b = TightAccountant(X.data_set_pair(n, eps0, n - 1 - m), compositions=k, exact_max_atoms=10**7)
    assert a.mode == b.mode == "exact-composed"
    for eps in (0.1, 0.5, 1.0):
        da, db = a.delta([eps])[0], b.delta([eps])[0]
        # both certified brackets of the same value: they must overlap (each is ~1e-9 wide)
        assert da.delta_lower <= db.delta_upper and db.delta_lower <= da.delta_upper, (eps, da, db)
        assert abs(da.delta_upper - db.delta_upper) <= 1e-9 * da.delta_upper + 1e-300
    assert X.mirror_distinct(n, [0, n - 1, m, n - 1 - m]) == sorted({0, min(m, n - 1 - m)})
    # the composed lower end with and without the mirror: the same value, and below the exact one
    d = 1e-6
    lo_one, m_one = X.composed_lower_eps(n, eps0, d, k, [m])
    exact = a.epsilon([d])[0]
    assert lo_one <= exact.eps_upper
    ea, eb = exact, b.epsilon([d])[0]
    assert ea.eps_lower <= eb.eps_upper + 1e-9 and eb.eps_lower <= ea.eps_upper + 1e-9, (ea, eb)
    assert m_one == min(m, n - 1 - m)


# ------------------------------------------------------------------------- the refinement's aim (refine_aim)

@pytest.mark.parametrize("aim", [0.8, 1.0])
@pytest.mark.parametrize("n,eps0,m,k", [(1000, 1.0, 0, 2), (200, 2.0, 0, 3)])
def test_refine_aim_contains_exact_composition(aim, n, eps0, m, k):
    """A refined grid aiming closer to the width needed (Numerics.refine_aim, 0.8 in the bucketed engine's composed
    eps search) changes only which grids are built: eps(delta) on the eps_rtol path and delta(eps) at the default
    target contain exact pairwise composition and meet the widths asked."""
    pair = X.data_set_pair(n, eps0, m)
    exact = TightAccountant(pair, compositions=k, exact_max_atoms=10**7)
    fft = TightAccountant(pair, compositions=k, exact_max_atoms=1, eps_rtol=2.5e-4, refine_aim=aim)
    dfft = TightAccountant(pair, compositions=k, exact_max_atoms=1, refine_aim=aim)
    assert fft.mode == dfft.mode == "fft"
    for delta in (1e-4, 1e-8):
        e = exact.epsilon([delta])[0]
        f = fft.epsilon([delta])[0]
        assert _contains(f.eps_lower, f.eps_upper, e.eps_lower, e.eps_upper), (delta, e, f)
        assert f.accuracy_met and f.eps_upper - f.eps_lower <= 2.5e-4 * f.eps_upper, f
        x = exact.delta([e.eps_upper])[0]
        g = dfft.delta([e.eps_upper])[0]
        assert g.delta_lower <= x.delta_lower and x.delta_upper <= g.delta_upper, (x, g)
        assert g.accuracy_met and g.delta_upper - g.delta_lower <= 1e-3 * g.delta_upper, g


def test_refine_aim_is_checked():
    from shufflesim.errors import ParameterError

    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ParameterError):
            TightAccountant(X.data_set_pair(100, 1.0, 0), compositions=2, refine_aim=bad)


@pytest.mark.parametrize("own,gap", [(0.6, 0.0), (0.45, 3.0)])
def test_bucketed_composed_recomputes_at_the_smaller_share(monkeypatch, own, gap):
    """The control flow of the composed eps search: each side's FFT accountant first gets COMPOSED_EPS_SHARE of
    rtol; where the merged interval misses rtol because of the FFT part the sides are recomputed at
    COMPOSED_EPS_SHARE_RETRY (same blocks), where it misses because of the blocks' certified gap more blocks are
    tried at the same share.  Stub accountants whose own interval is ``own`` x the width asked, the two sides
    ``gap`` x rtol apart at 48 blocks (the numerics are covered by the containment tests above)."""
    import shufflesim.accounting.rows.bucketed as BK
    from shufflesim.accounting.model.results import EpsBound

    rtol, calls = 1e-3, []

    def fake_run(accountant, pairs, nb, compositions, numerics, ask, column_tail=BK.COLUMN_TAIL):
        w = own * numerics["eps_rtol"]
        calls.append((nb, numerics["eps_rtol"]))
        g = gap * rtol if nb == 48 else 0.0  # more blocks close the gap
        return [EpsBound(1e-9, 1.0, 1.0 - w, "tight")], [EpsBound(1e-9, 1.0 - w - g, 1.0 - 2 * w - g, "tight")]

    monkeypatch.setattr(BK, "_run", fake_run)
    monkeypatch.setattr(BK, "COMPOSED_EPS_SHARE", 1.0)
    b = bucketed_epsilon(None, [1e-9], accountant=None, compositions=2, rtol=rtol, blocks=(48, 192))[0]
    if gap == 0.0:  # FFT part 1.2 rtol: recomputed at the smaller share (0.3 rtol), which meets it
        assert calls == [(48, pytest.approx(rtol)), (48, pytest.approx(rtol * BK.COMPOSED_EPS_SHARE_RETRY))]
    else:  # FFT part 0.9 rtol, merged 3.9 rtol: the gap is the cause, so more blocks at the same share
        assert calls == [(48, pytest.approx(rtol)), (192, pytest.approx(rtol))]
    assert b.eps_upper - b.eps_lower <= rtol * b.eps_upper


# ------------------------------------------------------------ long compositions: the data-set lower end's settings

def test_long_composition_lower_end_below_the_default_engine():
    """From LONG_COMPOSITION uses the composed data-set lower end is refined to LOWER_EPS_RTOL_LONG with refined grids
    aiming at LOWER_REFINE_AIM_LONG and the early stop of the eps search: it stays below the default-precision FFT
    accountant's certified upper end on the same data set (an independent computation at the default grid rules)
    and within its precision plus the log-error correction of that accountant's lower end."""
    n, eps0, k, delta = 2000, 1.0, X.LONG_COMPOSITION, 1e-6
    lo, m = X.composed_lower_eps(n, eps0, delta, k, [0, n - 1])
    assert m == 0
    pair = X.data_set_pair(n, eps0, 0)
    ref = TightAccountant(pair, compositions=k).epsilon([delta])[0]
    assert lo <= ref.eps_upper
    eta = pair.params["log_err"] * k
    assert lo >= ref.eps_lower * (1 - 2 * X.LOWER_EPS_RTOL_LONG) - 2 * eta - 1e-9, (lo, ref, eta)
