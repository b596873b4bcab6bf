"""Mechanism descriptions of the summation protocols: the discrete Laplace mechanism (central-dlap-sum and
IKOS's comparison mechanism), IKOS's shares within 2^-sigma of it, Cheu et al.'s unary protocol, and the
local baselines.

* closed forms against brute-force enumeration of the PMFs at small parameters (every shift, every
  randomised-rounding data pair, the wrapped sum modulo q);
* every protocol's privacy() claim against account(protocol.mechanism()).
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from shufflesim import ParameterError
from shufflesim.accounting import account
from shufflesim.cli.main import main as cli_main
from shufflesim.maths.polya import dlap_logpmf
from shufflesim.mechanisms import kinds
from shufflesim.accounting.bounds.cheu import cheu_delta
from shufflesim.mechanisms.cheu import CheuSum
from shufflesim.mechanisms.dlap import CentralDLap, dlap_delta
from shufflesim.mechanisms.ikos import IKOSSum
from shufflesim.pipeline import registry

#: the enumerations below sum ~10^3-10^4 terms below 1 in double precision: their round-off is below this
SUM_ROUNDOFF = 1e-14


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return max(float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0))),
               float(np.sum(np.maximum(q - math.exp(eps) * p, 0.0))))


def _dlap(alpha: float, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    z = np.arange(-half_width, half_width + 1)
    return z, np.exp(dlap_logpmf(z, alpha))


def _width(eps0: float, sensitivity: int) -> int:
    """Half-width beyond which DLap's mass is below 1e-30 (α^w ≤ 1e-30)."""
    return int(math.ceil(70.0 * sensitivity / eps0)) + 2 * sensitivity


# ------------------------------------------------------------------------------------ discrete Laplace
@pytest.mark.parametrize("eps0", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("sensitivity", [1, 2, 3, 7, 10])
def test_dlap_closed_form_is_the_largest_shift_enumerated(eps0, sensitivity):
    """δ(ε) of (Z, Z + d) enumerated for every d ≤ Δ: the closed form equals d = Δ and bounds every d."""
    z, pz = _dlap(math.exp(-eps0 / sensitivity), _width(eps0, sensitivity))
    for eps in (0.0, 0.05, 0.2, 0.5, 0.9 * eps0, eps0, 1.5 * eps0):
        closed = dlap_delta(eps, eps0, sensitivity)
        shifted = [_hockey(pz[: pz.size - d], pz[d:], eps) for d in range(sensitivity + 1)]  # Z vs Z + d
        assert closed == pytest.approx(shifted[-1], rel=1e-12, abs=SUM_ROUNDOFF)
        assert max(shifted) <= closed + SUM_ROUNDOFF


def test_dlap_rounding_data_pairs_are_within_the_closed_form():
    """R + Z with R = Σ x̄ (randomised roundings at precision p): every pair of data sets differing in one
    user's value in a grid with fractional points, enumerated; the pair 0 -> 1 attains the closed form."""
    n, p, eps0 = 3, 4, 1.0
    alpha = math.exp(-eps0 / p)
    z, pz = _dlap(alpha, _width(eps0, p))
    values = (0.0, 0.1, 0.375, 0.5, 0.9, 1.0)

    def law(xs):
        pmf = np.ones(1)
        for x in xs:
            lo = math.floor(p * x)
            f = p * x - lo
            pmf = np.convolve(pmf, np.r_[np.zeros(lo), 1 - f, f][: p + 1] if lo < p else np.r_[np.zeros(p), 1.0])
        full = np.zeros(n * p + 1)
        full[: pmf.size] = pmf[: n * p + 1]
        return np.convolve(full, pz)

    for eps in (0.0, 0.3, 0.8):
        closed = dlap_delta(eps, eps0, p)
        worst = 0.0
        for others in itertools.product(values, repeat=n - 1):
            for a, b in itertools.combinations(values, 2):
                worst = max(worst, _hockey(law((a, *others)), law((b, *others)), eps))
        assert worst <= closed + SUM_ROUNDOFF
        assert worst == pytest.approx(closed, rel=1e-12, abs=SUM_ROUNDOFF)


def test_dlap_limits():
    for eps0 in (0.5, 2.0):
        for eps in (0.0, 0.3 * eps0):  # Δ = 1: the geometric mechanism
            assert dlap_delta(eps, eps0, 1) == pytest.approx(-math.expm1(eps - eps0) / (1 + math.exp(-eps0)), rel=1e-14)
        for big in (10**3, 10**4):  # large Δ: the Laplace mechanism's profile, within the grid step λ = ε0/Δ
            assert abs(dlap_delta(0.3 * eps0, eps0, big) + math.expm1(-0.35 * eps0)) <= eps0 / big


def test_dlap_description_and_protocol():
    (r,) = account(CentralDLap(1.0, 10), eps=[0.5]).results
    assert r.delta_lower <= dlap_delta(0.5, 1.0, 10) <= r.delta_upper
    proto = registry.create("central-dlap-sum", 400, eps=0.7, p=9)
    mech = proto.mechanism()
    assert mech == CentralDLap(0.7, 9)
    got = account(mech, eps=[proto.privacy().eps, 0.3]).results
    assert got[0].delta_upper == proto.privacy().delta == 0.0
    assert got[1].delta_upper >= dlap_delta(0.3, 0.7, 9) > 0
    (e,) = account(mech, delta=[1e-6]).results
    assert e.eps_upper <= 0.7 and CentralDLap(0.7, 9).delta(e.eps_upper).delta_upper <= 1e-6
    with pytest.raises(ParameterError, match="sensitivity"):
        CentralDLap(1.0, 0)


# ------------------------------------------------------------------------------------------------ IKOS
def test_ikos_bound_is_dlap_plus_tv_minimised_over_smaller_eps():
    """u(ε) = min over ε' ≤ ε of δ_DLap(ε') + (1 + e^ε')2^-σ: it is that bound at min(ε, ε*), ε* is no worse
    than any point of a fine grid, and u is non-increasing (interior ε* for the middle three settings)."""
    for eps0, p, sigma in ((1.0, 5, 30.0), (5.0, 7, 6.0), (2.0, 20, 3.0), (5.0, 20, 8.0), (1.0, 4, 0.5)):
        m = IKOSSum(eps0, p, sigma)
        eta = 2.0 ** -sigma

        def raw(e):
            return dlap_delta(e, eps0, p) + (1 + math.exp(e)) * eta

        star = m.argmin_eps()
        assert 0.0 <= star <= eps0
        grid = np.linspace(0.0, 1.5 * eps0, 3001)
        raw_grid = np.array([raw(e) for e in grid])
        assert raw(star) <= raw_grid.min() * (1 + 1e-12)
        got = np.array([m.delta(e).delta_upper for e in grid])
        want = np.array([min(1.0, raw(min(e, star))) for e in grid])
        assert np.all(np.abs(got - want) <= 1.1e-12 * want)
        assert np.all(got <= np.minimum(1.0, np.minimum.accumulate(raw_grid)) * (1 + 1.1e-12))
        assert np.all(np.diff(got) <= 0.0)
    assert 0.0 < IKOSSum(5.0, 7, 6.0).argmin_eps() < 5.0  # an interior minimum is exercised


def test_ikos_minimum_is_at_eps0_when_the_claimed_delta_is_below_half():
    """docs/theory.md#summation-ikos-profile: (1 + e^ε0)2^-σ < ½ implies that the bound's slope in e^ε is
    negative up to ε0, so ε* = ε0 and the upper curve is δ_DLap(ε) + (1 + e^ε)2^-σ itself below ε0."""
    checked = 0
    for eps0 in (0.1, 0.5, 1.0, 3.0, 8.0):
        for p in (1, 2, 5, 32, 1000):
            # sigma from "just below 1/2" to large
            for claimed in (0.49, 0.3, 1e-3, 1e-9):
                sigma = math.log2((1 + math.exp(eps0)) / claimed)
                m = IKOSSum(eps0, p, sigma)
                assert m.argmin_eps() == eps0
                for e in (0.0, 0.5 * eps0, 0.99 * eps0):
                    raw = dlap_delta(e, eps0, p) + (1 + math.exp(e)) * 2.0 ** -sigma
                    assert m.delta(e).delta_upper == pytest.approx(min(1.0, raw), rel=1.1e-12)
                checked += 1
    assert checked == 100


def test_ikos_lower_bound_below_the_wrapped_sum_enumerated():
    """The view's sum of shares is (R + Z) mod q: its δ for the neighbours 0 -> 1 (enumerated with small q,
    so that wrapping matters) is at least the lower bound, which is at most the upper bound."""
    eps0, p = 1.0, 4
    alpha = math.exp(-eps0 / p)
    z, pz = _dlap(alpha, _width(eps0, p))
    for q in (2 * p + 3, 25, 40, 101):
        m = IKOSSum(eps0, p, 20.0, q)
        wrapped_p = np.bincount(np.mod(z, q), weights=pz, minlength=q)
        wrapped_q = np.bincount(np.mod(z + p, q), weights=pz, minlength=q)
        for eps in (0.0, 0.2, 0.6, 1.0):
            r = m.delta(eps)
            assert r.delta_lower <= _hockey(wrapped_p, wrapped_q, eps) + SUM_ROUNDOFF
            assert r.delta_lower <= r.delta_upper
    assert IKOSSum(eps0, p, 20.0).delta(0.3).delta_lower is None  # without q: no statement
    # a large q loses nothing: the lower bound is the comparison mechanism's exact delta
    assert IKOSSum(eps0, p, 20.0, 10**6).delta(0.3).delta_lower == pytest.approx(dlap_delta(0.3, eps0, p), rel=1e-11)


def test_ikos_protocol_privacy_is_what_account_certifies():
    proto = registry.create("ikos-sum", 2000, eps=1.0)
    claim = proto.privacy()
    mech = proto.mechanism()
    prm = proto.parameters
    assert mech == IKOSSum(prm.eps, prm.p, prm.sigma, prm.q, n=2000)
    (r,) = account(mech, eps=[claim.eps]).results
    # the same expression, widened by 1e-12 relative like every closed form the accountant evaluates
    assert claim.delta <= r.delta_upper <= claim.delta * (1 + 1.1e-12)
    # below eps the description certifies a whole profile; at the claim's delta (+ the widening) eps itself
    (e,) = account(mech, delta=[claim.delta * (1 + 2e-12)]).results
    assert e.eps_upper <= claim.eps and e.eps_lower <= e.eps_upper
    # no smaller delta is certified at any eps: (1+e^eps)*2^-sigma is the floor of the bound
    (e2,) = account(mech, delta=[claim.delta / 2]).results
    assert e2.eps_upper == math.inf
    assert proto.params["delta"] == claim.delta


# ------------------------------------------------------------------------------------------------ Cheu
def _binom(n: int, p: float) -> np.ndarray:
    from scipy import stats

    return stats.binom.pmf(np.arange(n + 1), n, p)


@pytest.mark.parametrize("n,r,gamma", [(6, 3, 0.6), (10, 2, 0.3), (4, 4, 0.8)])
def test_cheu_description_against_enumeration(n, r, gamma):
    """Upper: the blanket mixture over M = every value (no binning) is below it.  Lower: the exact δ of the
    analyser's count when every other user holds 0, and no more than the exact δ of the worst data pair."""
    f = gamma / 2
    n0 = (n - 1) * r
    mech = CheuSum(n, r, gamma)
    for eps in (0.2, 0.5, 1.0):
        (res,) = account(mech, eps=[eps]).results
        assert res.delta_upper == min(cheu_delta(n, r, gamma, eps), 1.0)
        mix = sum(_binom(n0, gamma)[m] * _hockey(np.convolve(_binom(r, 1 - f), _binom(m, 0.5)),
                                                 np.convolve(_binom(r, f), _binom(m, 0.5)), eps)
                  for m in range(n0 + 1))
        assert mix <= res.delta_upper * (1 + 1e-12)
        # the analyser's count: Bin(U, 1 - f) + Bin(nr - U, f); the target moves U by a - b, others hold u
        exact_worst = 0.0
        for u in range(n0 + 1):
            rest = np.convolve(_binom(u, 1 - f), _binom(n0 - u, f))
            for a in range(r + 1):
                for b in range(a + 1, r + 1):
                    ta = np.convolve(_binom(a, 1 - f), _binom(r - a, f))
                    tb = np.convolve(_binom(b, 1 - f), _binom(r - b, f))
                    exact_worst = max(exact_worst, _hockey(np.convolve(rest, ta), np.convolve(rest, tb), eps))
        zeros = _hockey(np.convolve(_binom(n0, f), _binom(r, f)), np.convolve(_binom(n0, f), _binom(r, 1 - f)), eps)
        assert res.delta_lower <= zeros <= exact_worst + SUM_ROUNDOFF
        assert res.delta_lower == pytest.approx(zeros, abs=1e-9)
        assert exact_worst <= mix * (1 + 1e-12) + SUM_ROUNDOFF


def test_cheu_protocol_privacy_is_what_account_certifies():
    proto = registry.create("cheu-sum", 3000, eps=1.0)
    claim = proto.privacy()
    mech = proto.mechanism()
    assert mech == CheuSum(3000, proto.params["messages"], proto.params["gamma"])
    (r,) = account(mech, eps=[claim.eps]).results
    assert r.delta_upper == claim.delta  # the same computation
    (e,) = account(mech, delta=[claim.delta]).results
    # eps(delta) is bisected to the relative tolerance 1e-9 (cheu's efun), on the safe side
    assert claim.eps <= e.eps_upper <= claim.eps * (1 + 1e-9) and 0.0 <= e.eps_lower <= e.eps_upper
    # every user's r bits are r*log((2-gamma)/gamma)-LDP: the accountant's cap
    assert mech.local_guarantee() == pytest.approx(proto.params["messages"] * proto.randomiser.eps0, rel=1e-12)


def test_cheu_description_validates():
    with pytest.raises(ParameterError, match="messages"):
        CheuSum(10, 0, 0.5)
    with pytest.raises(ParameterError, match="gamma"):
        CheuSum(10, 3, 0.0)
    with pytest.raises(ParameterError, match="tail"):
        CheuSum(10, 3, 0.5, tail=0.0)
    CheuSum(10**9, 2000, 1e-3)  # issue 21: n*r = 2e12 is accepted (the bound's cost no longer grows with n*r)
    (r,) = account(CheuSum(10, 3, 1.0), eps=[0.1]).results  # every bit uniform: nothing leaks
    assert r.delta_upper == 0.0


# ------------------------------------------------------------------------------------------ local baselines
def test_local_protocols_mechanisms_certify_their_claims():
    for name in ("local-rr-sum", "local-laplace-sum"):
        proto = registry.create(name, 500, eps=1.0)
        claim = proto.privacy()
        (r,) = account(proto.mechanism(), eps=[claim.eps]).results
        assert r.delta_upper <= claim.delta == 0.0
        (d,) = account(proto.mechanism(), eps=[0.5]).results
        assert 0.0 < d.delta_upper < 1.0  # amplification below the local epsilon


# ------------------------------------------------------------------------------------------------ CLI
def test_new_kinds_are_offered_and_answer_on_the_cli(capsys):
    assert {"central-dlap", "ikos", "cheu"} <= set(kinds())
    for argv in (["account", "central-dlap", "--eps0", "1", "--sensitivity", "10", "--eps", "0.5"],
                 ["account", "ikos", "--eps0", "1", "--p", "45", "--sigma", "30", "--q", "184614", "--eps", "0.5", "1"],
                 ["account", "cheu", "--n", "200", "--messages", "5", "--gamma", "0.5", "--delta", "1e-6"]):
        assert cli_main([*argv, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        for res in out["results"]:
            lo = res.get("delta_lower", res.get("eps_lower"))
            hi = res.get("delta_upper", res.get("eps_upper"))
            assert lo is not None and hi is not None and 0.0 <= lo <= hi
