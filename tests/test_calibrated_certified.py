"""Claimed vs certified privacy of every calibrated protocol and calibrator (h6 audit).

For each protocol calibrated to a target (eps_t, delta_t) at small parameters, the *same* accountant the
protocol's mechanism is accounted with (``account(protocol.mechanism(), ...)``) must certify what it reports:

* the reported pair meets the target: eps_rep <= eps_t and delta_rep <= delta_t;
* the reported delta is never below the certified upper end at the reported eps:
  delta_upper(eps_rep) <= delta_rep;
* the reported eps is never below the certified upper end at the reported delta:
  eps_upper(delta_rep) <= eps_rep.  The calibrated summation protocols report delta_rep = delta_upper(eps_t),
  a point *on* the certified curve, so this round trip has no margin: before the fix the eps(delta) search
  returned the feasible end of its final bracket, eps_t plus its resolution (blanket-sum n = 300, eps = 1:
  1.0000000010004029; n = 1000: 1.00000000049994; cheu-sum n = 300, eps = 0.5: 0.500000000346623), and on
  the FFT path the grid the search built gave recursive-sum (n = 100, eps = 1) 1.0000000437223862;
* the calibration is not needlessly loose: the parameter moved by the calibration's stated relative
  tolerance towards less noise fails the target (the calibrator's bracket has its infeasible end within that
  tolerance; the tolerance is stated on the parameter, which is why the check is made there and not as
  "delta_upper >= delta_t (1 - rtol)": at blanket-sum n = 300 a relative change 1e-4 of gamma moves delta
  by ~5e-4).

Every inequality below is compared exactly, with no tolerance: the whole point is that it holds as computed
(a float compared exactly is the point of this file).
"""

from __future__ import annotations

import math

import pytest

from shufflesim.accounting.account import account, calibrate_mechanism, certified_delta_upper
from shufflesim.mechanisms.clones import Clones, calibrate_clones_eps0
from shufflesim.mechanisms.krr import KRR, calibrate_krr_gamma
from shufflesim.mechanisms.rr2 import RR2
from shufflesim.pipeline import registry


def _eps_upper(mech, delta: float) -> float:
    (r,) = account(mech, delta=[delta]).results
    return r.eps_upper


def _delta_upper(mech, eps: float) -> float:
    (r,) = account(mech, eps=[eps]).results
    return r.delta_upper


def _check_reported(proto, eps_t: float, delta_t: float) -> None:
    """The four reported-vs-certified inequalities of the module docstring (exact comparisons)."""
    g = proto.privacy()
    mech = proto.mechanism()
    assert g.eps <= eps_t and g.delta <= delta_t, (g.eps, g.delta)
    assert _delta_upper(mech, g.eps) <= g.delta, (proto.name, g)
    assert _eps_upper(mech, g.delta) <= g.eps, (proto.name, g, _eps_upper(mech, g.delta))


# --- blanket-sum (protocols/_blanket.py level_gamma: calibrate on gamma, rtol 1e-4) ---------------------------
@pytest.mark.parametrize("n,eps,k", [(300, 1.0, 2), (300, 0.5, 2)])
def test_blanket_sum_reports_what_its_accountant_certifies(n, eps, k):
    from shufflesim.protocols._blanket import level_delta

    delta_t = 1.0 / n**2
    proto = registry.create("blanket-sum", n, eps=eps, mode="tight", k=k)
    _check_reported(proto, eps, delta_t)
    # not loose: gamma lowered by level_gamma's rtol (1e-4) no longer certifies the target
    assert level_delta("tight", n, k + 1, proto.gamma * (1 - 1e-4), eps) > delta_t


def test_blanket_sum_at_n_1000_round_trips_exactly():
    """The case the audit started from (n = 1000, eps = 1: the eps query gave 1.00000000049994)."""
    proto = registry.create("blanket-sum", 1000, eps=1.0, mode="tight", k=3)
    _check_reported(proto, 1.0, 1e-6)


# --- cheu-sum (protocols/sum_baselines.py cheu_gamma: calibrate on gamma, rtol 1e-4) --------------------------
@pytest.mark.parametrize("n,eps", [pytest.param(100, 1.0, marks=pytest.mark.slow), (300, 0.5)])
def test_cheu_sum_reports_what_its_accountant_certifies(n, eps):
    from shufflesim.protocols.sum_baselines import cheu_delta

    delta_t = 1.0 / n**2
    proto = registry.create("cheu-sum", n, eps=eps)
    _check_reported(proto, eps, delta_t)
    r, gamma = proto.params["messages"], proto.params["gamma"]
    assert cheu_delta(n, r, gamma * (1 - 1e-4), eps) > delta_t


# --- recursive-sum tight (protocols/recursive_sum.py _calibrate_nu: calibrate on nu, rtol 3e-3) ---------------
def test_recursive_sum_given_gammas_round_trips_on_the_fft_path():
    """The FFT composition's eps query at the protocol's own delta_upper(eps) (given gammas: no calibration,
    the same reported pair); before the fix 1.0000001027789964 (the search's grid, not the delta query's)."""
    proto = registry.create("recursive-sum", 100, eps=1.0, mode="tight", messages=2, precisions=[2, 2],
                            gammas=[0.4, 0.5])
    _check_reported(proto, 1.0, 1.0)


def test_recursive_sum_reports_what_its_accountant_certifies():
    """Default-on (~1.5 s): the soundness of recursive-sum's tight calibration."""
    from shufflesim.protocols.recursive_sum import _search_tight, _surrogate_gammas, composed_delta

    n, eps, ps = 100, 1.0, (2, 2)
    delta_t = 1.0 / n**2
    proto = registry.create("recursive-sum", n, eps=eps, mode="tight", messages=2, precisions=list(ps))
    _check_reported(proto, eps, delta_t)
    # the gammas are gamma_j(nu) at the calibrated nu; nu lowered by the rtol 3e-3 fails the target
    _, gs, _, nu = _search_tight(n, eps, delta_t, 2, "fixed", "shuffled", ps)
    assert tuple(proto.gammas) == gs
    assert composed_delta(n, ps, _surrogate_gammas(n, ps, nu * (1 - 3e-3)), eps, "shuffled") > delta_t


# --- ikos-sum (protocols/ikos_sum.py: the fewest messages m whose sigma meets the target) --------------------
@pytest.mark.parametrize("n,eps", [(1000, 1.0), (500, 0.5)])
def test_ikos_sum_reports_what_its_accountant_certifies(n, eps):
    delta_t = 1.0 / n**2
    proto = registry.create("ikos-sum", n, eps=eps)
    # before the fix: the reported delta, the bare closed form, was 1e-12 relative below the mechanism's
    # certified upper end (its float-error widening): 5.2624196682291847e-08 < 5.2624196682344475e-08
    _check_reported(proto, eps, delta_t)
    from shufflesim.protocols.ikos_sum import certified_delta, ikos_sigma_improved

    prm = proto.parameters
    # not loose: one message fewer does not certify the target
    assert certified_delta(eps, ikos_sigma_improved(n, prm.q, prm.m - 2)) > delta_t


# --- the calibrators behind account --tolerate and the k-RR / clones calibrations (rtol 1e-6) ----------------
@pytest.mark.slow
def test_calibrate_krr_gamma_and_clones_eps0_are_certified_and_tight():
    n, eps, delta = 1000, 1.0, 1e-6
    cal = calibrate_krr_gamma(n, 3, eps, delta, adversary="shuffled")
    mech = KRR(n, 3, cal.value, "shuffled")
    assert _delta_upper(mech, eps) == cal.delta_upper <= delta  # the same accountant, the same number
    assert _eps_upper(mech, cal.delta_upper) <= eps
    assert certified_delta_upper(KRR(n, 3, cal.value * (1 - 1e-6), "shuffled"), eps) > delta
    cal = calibrate_clones_eps0(n, eps, delta)
    mech = Clones(n, cal.value)
    assert _delta_upper(mech, eps) == cal.delta_upper <= delta
    assert _eps_upper(mech, cal.delta_upper) <= eps
    assert certified_delta_upper(Clones(n, cal.value * (1 + 1e-6)), eps) > delta


def test_tolerant_mechanism_rr2_is_certified():
    from shufflesim.validation.dishonest import tolerant_mechanism

    tol = tolerant_mechanism(RR2(1000, 2.0), 0.2, 1e-6)
    assert tol.delta_defended_h0 <= tol.delta and tol.eps_defended_h0[1] <= tol.target_eps and tol.certified
    # not loose: eps0 raised by calibrate_mechanism's rtol 1e-6 no longer meets the target at h0
    assert certified_delta_upper(RR2(tol.h0, tol.value * (1 + 1e-6)), tol.target_eps) > tol.delta


def test_calibrate_mechanism_returns_the_safe_end():
    """The generic calibrator: the value it returns is certified at exactly that value (the safe end of its
    bracket), and the other end is within its rtol (a k-RR gamma, decreasing delta)."""
    n, eps, delta = 500, 0.8, 1e-5
    cal = calibrate_mechanism(lambda g: KRR(n, 4, g, "strong"), "gamma", eps, delta, 1e-6, 1.0, increasing=False,
                              rtol=1e-6)
    assert certified_delta_upper(KRR(n, 4, cal.value, "strong"), eps) == cal.delta_upper <= delta
    assert certified_delta_upper(KRR(n, 4, cal.value * (1 - 1e-6), "strong"), eps) > delta


# --- krr --tolerate (validation.dishonest.tolerant_protocol: calibrate on gamma, rtol 1e-5) ------------------
def test_krr_tolerate_is_certified_by_the_protocols_own_accountant():
    """Default-on (~1.5 s): the soundness of krr's --tolerate calibration."""
    from shufflesim.validation.dishonest import tolerant_protocol

    proto = registry.create("krr", 500, k=3, eps0=2.0)
    tol = tolerant_protocol(proto, 0.2)
    g = proto.privacy()
    eps_h0 = registry.create("krr", tol.h0, k=3, gamma=tol.value, delta=g.delta).privacy().eps
    assert eps_h0 == tol.eps_defended_h0[1] <= g.eps
    looser = registry.create("krr", tol.h0, k=3, gamma=tol.value * (1 - 1e-5), delta=g.delta).privacy().eps
    assert looser > g.eps


# --- central Gaussian calibrations (maths.central.analytic_gaussian_sigma: brentq rtol 1e-12, then moved up) --
def test_central_gaussian_hist_and_dp_fl_sigma():
    from shufflesim.federated.training import _eps_total_gaussian
    from shufflesim.maths.central import analytic_gaussian_sigma, gaussian_delta

    proto = registry.create("central-gaussian-hist", 1000, k=4, eps=1.0, delta=1e-6)
    _check_reported(proto, 1.0, 1e-6)
    # DP-FL (federated.training, protocol dp, analytic): sigma for the whole run, eps reported by bisection
    sens = 2.0 / 1000 * math.sqrt(10)
    sigma = analytic_gaussian_sigma(1.0, 1e-5, sens)
    eps_rep = _eps_total_gaussian(sigma, sens, 1e-5)
    assert eps_rep <= 1.0 and gaussian_delta(sigma, eps_rep, sens) <= 1e-5
    assert gaussian_delta(sigma * (1 - 1e-11), 1.0, sens) > 1e-5


def test_tolerate_zero_keeps_the_blanket_and_its_certificate():
    """--tolerate 0 (every user honest) is the protocol itself: the same gamma (it was recalibrated to the
    certified delta_upper(eps) below the target: MSE price x1.0000315 at n = 1000), and the undefended
    protocol's certified eps at its own delta is its reported eps (it was 1.00000000049994 at n = 1000)."""
    from shufflesim.validation.dishonest import honest_privacy, tolerant_protocol

    proto = registry.create("blanket-sum", 300, eps=1.0, mode="tight", k=2)
    tol = tolerant_protocol(proto, 0.0)
    assert tol.value == tol.base_value and tol.mse_ratio == 1.0  # the same protocol: exactness is the point
    assert tol.eps_base_n[1] <= tol.target_eps and tol.eps_defended_h0[1] <= tol.target_eps and tol.certified
    assert honest_privacy(proto, proto.n).eps <= proto.privacy().eps
