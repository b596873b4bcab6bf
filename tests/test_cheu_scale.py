"""Issue 21 (2, 3): cheu-sum at population scale -- the blanket-binomial bound from tails, its calibration, the
fast engine from counts at n = 1e9, and the faithful engine's refusal before allocating.

Oracles: the bound as first computed (direct convolution of the target's Bin(r, ·) with Bin(m, ½) on a window,
copied below from the published computation, ``_old_delta``) at moderate n; log-PMFs summed one by one
(Loader's form per atom) for the tail sums of the new computation; the exact all-zeros pair from its mass
functions for the lower end; the protocol's exact MSE on the same multiset (``mse_expected_summary``) for the
fast engine, with the trial mean's normal confidence interval (z = 3.29, two-sided 1e-3; fixed seeds).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.accounting.account import account
from shufflesim.accounting.numerics.binomial import log_binom_pmf
from shufflesim.cli.main import main
from shufflesim.errors import ResourceError
from shufflesim.accounting.bounds import cheu
from shufflesim.accounting.bounds.cheu import cheu_delta, cheu_lower_delta, lower_pair
from shufflesim.mechanisms.cheu import MAX_CHEU_MESSAGES, CheuSum
from shufflesim.pipeline import registry
from shufflesim.protocols._blanket import default_delta
from shufflesim.protocols.sum_baselines import cheu_gamma

Z = 3.29
N9 = 10**9


def _old_delta(n: int, r: int, gamma: float, eps: float, bins: int = 64, tail: float = 1e-16) -> float:
    """The bound as published before issue 21: 64 bins of M between scipy's quantiles at ``tail``, each charged
    the δ of its smallest m, with Bin(m, ½) on a window dropping ``tail`` per side (added)."""
    q = gamma / 2.0
    n0 = (n - 1) * r

    def pair(m):
        lo, hi = int(stats.binom.ppf(tail, m, 0.5)), int(stats.binom.isf(tail, m, 0.5))
        noise = stats.binom.pmf(np.arange(lo, hi + 1), m, 0.5)
        k = np.arange(r + 1)
        return np.convolve(noise, stats.binom.pmf(k, r, 1 - q)), np.convolve(noise, stats.binom.pmf(k, r, q))

    m_lo, m_hi = int(stats.binom.ppf(tail, n0, gamma)), int(stats.binom.isf(tail, n0, gamma)) + 1
    edges = np.unique(np.linspace(m_lo, m_hi, bins + 1).round().astype(np.int64))
    cdf = stats.binom.cdf(edges - 1, n0, gamma)
    weights = np.diff(np.r_[cdf, 1.0])
    total = float(cdf[0])
    for a, w in zip(edges, weights):
        if w > 0:
            p, qq = pair(int(a))
            total += w * min(1.0, float(np.sum(np.maximum(p - math.exp(eps) * qq, 0.0))) + 2 * tail)
    return min(1.0, total)


@pytest.mark.parametrize("n,r,gamma,eps", [(3000, 55, 0.05, 1.0), (3000, 55, 0.2, 1.0), (10**4, 100, 0.1, 0.5),
                                           (200, 7, 0.4, 0.3)])
def test_bound_from_tails_agrees_with_the_convolution(n, r, gamma, eps):
    new, old = cheu_delta(n, r, gamma, eps), _old_delta(n, r, gamma, eps)
    # the new M window (Chernoff) is a little wider than scipy's quantiles, so its 64 bins are a little coarser:
    # never below the old bound less its own truncation allowance, and within 1e-3 of it
    assert new >= old - 2 * 64 * 1e-16 - 1e-16
    assert new <= old * (1 + 1e-3)
    # one bin per value of M: the two computations of each bin's hockey-stick agree to 1e-8
    n0 = (n - 1) * r
    if n0 < 2000:
        assert cheu_delta(n, r, gamma, eps, bins=n0 + 2) == pytest.approx(
            _old_delta(n, r, gamma, eps, bins=n0 + 2), rel=1e-8, abs=1e-13)


def test_calibrated_gamma_matches_the_old_calibration():
    from shufflesim.accounting.numerics.invert import calibrate
    from shufflesim.protocols._blanket import GAMMA_MAX

    n, eps = 3000, 1.0
    delta = 1.0 / n**2
    p = registry.create("cheu-sum", n, eps=eps)
    r, g = p.params["messages"], p.params["gamma"]
    assert cheu_delta(n, r, g, eps) <= delta and p.privacy().delta <= delta  # certified at the calibrated gamma
    old = calibrate(lambda x: _old_delta(n, r, x, eps), delta, 1e-4, GAMMA_MAX, increasing=False, xtol=0.0,
                    rtol=1e-4, log_scale=True, max_evals=60)
    # both searches stop within a relative bracket of 1e-4 of their root; the bounds differ by < 1e-3 in delta,
    # which moves the root by far less (delta falls by orders of magnitude as gamma doubles)
    assert g == pytest.approx(old.x, rel=3e-4)
    # the smallest: the search's infeasible end lies within 1e-4 of g, and delta falls as gamma grows
    assert cheu_delta(n, r, g * (1 - 2e-4), eps) > delta


def test_tail_sums_against_atom_by_atom_sums():
    # population scale: Bin(2e9, 1/2) 12 standard deviations out; and the lower pair's Bin(2e12, 3.3e-4)
    for m, p, z in ((1_999_527_157, 0.5, 12.0), (2 * 10**12, 3.3e-4, 9.0), (10**6, 0.5, 3.0)):
        sd, mu = math.sqrt(m * p * (1 - p)), m * p
        ks = np.array([int(mu + z * sd), int(mu + z * sd) + 37])
        s, val, R, eta, ea = cheu.tail_sums(m, p, 1 - p, ks)
        got = np.exp(s) * val
        j = np.arange(ks[0], int(mu + (z + 8) * sd))  # beyond: below 1e-14 of the first atom
        atoms = np.exp(log_binom_pmf(j, m, p, 1 - p))
        ref = np.array([atoms[k - ks[0]:].sum() for k in ks])
        tol = eta + 4 * ea + 1e-12  # the stated bounds, and the reference's own Loader error (~2e-12 per atom)
        assert np.all(np.abs(got / ref - 1) <= tol), (got / ref - 1, tol)
        assert R <= 1e-17 * got[-1]  # the remainder: the Chernoff bound below 1e-18 of the last needed atom


def test_log_pmf_at_population_scale_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    for m, p, k in ((2 * 10**12, 3.3e-4, 660_300_000), (1_999_527_157, 0.5, 1_000_031_000)):
        exact = (mp.loggamma(m + 1) - mp.loggamma(k + 1) - mp.loggamma(m - k + 1) + k * mp.log(p)
                 + (m - k) * mp.log(1 - mp.mpf(p)))
        got = float(log_binom_pmf(np.array([k]), m, p, 1 - p)[0])
        # the model without its doubling: Loader's form, and the rounded complement 1 - p (the second case)
        assert abs(got - float(exact)) <= cheu.log_err(np.array([got]), np.array([k]), m, p, 1 - p) / 2


@pytest.mark.parametrize("n,r,gamma,eps", [(300, 20, 0.3, 0.5), (3000, 55, 0.05, 1.0)])
def test_lower_end_from_tails_is_the_exact_pair_less_its_margins(n, r, gamma, eps):
    P, Q = lower_pair(n, r, gamma)
    exact = max(cheu.hockey(P, Q, eps), cheu.hockey(Q, P, eps))
    low = cheu_lower_delta(n, r, gamma, eps)
    assert exact * (1 - 1e-8) <= low <= exact * (1 + 1e-12)


def test_population_scale_description_accounts_both_ends():
    mech = CheuSum(N9, 2000, 6e-4)
    (res,) = account(mech, eps=[1.0]).results
    assert 0.0 < res.delta_lower <= res.delta_upper <= 1e-15


def test_cheu_sum_at_1e9_fast_engine_from_counts_matches_the_exact_mse(capsys):
    assert main(["simulate", "cheu-sum", "--eps", "1", "--n", "1e9", "--data", "beta:2,5", "--engine", "fast",
                 "--trials", "1000", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == N9 and out["complete"] and out["engine"] == "fast"
    assert out["params"]["messages"] == MAX_CHEU_MESSAGES and out["params"]["messages_paper"] == math.ceil(math.sqrt(N9))
    assert any(f"capped at {MAX_CHEU_MESSAGES}" in line for line in out["notes"])
    assert out["privacy"]["eps"] == 1.0 and out["privacy"]["delta"] <= 1.0 / N9**2
    half = (out["mse_ci95"][1] - out["mse_ci95"][0]) / 2 / 1.96  # one standard error of the trial mean
    assert abs(out["mse"] - out["mse_expected"]) <= Z * half
    # the protocol's claim is what the accountant certifies for its mechanism (the same computation)
    proto = registry.create("cheu-sum", N9, eps=1.0)
    # exactness is the point: a fresh (uncached) calibration at the same (n, r, eps, delta) is the same computation
    assert cheu_gamma.__wrapped__(N9, MAX_CHEU_MESSAGES, 1.0, default_delta(N9)) == out["params"]["gamma"]
    (res,) = account(proto.mechanism(), eps=[1.0]).results
    assert res.delta_upper == proto.privacy().delta  # the same computation


def test_cheu_sum_note_is_printed(capsys):
    assert main(["simulate", "cheu-sum", "--eps", "1", "--n", "1e9", "--engine", "fast", "--trials", "10"]) == 0
    err = capsys.readouterr().err
    assert err.count(f"note: cheu-sum: r = {MAX_CHEU_MESSAGES} messages per user") == 1


def test_faithful_engine_refuses_before_allocating(capsys, monkeypatch):
    from shufflesim.protocols.sum_baselines import CheuRandomiser

    def boom(*a, **k):
        raise AssertionError("messages allocated")

    monkeypatch.setattr(CheuRandomiser, "randomise", boom)
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "4G")
    # streamed (n above 1e7): the chunk's messages
    assert main(["simulate", "cheu-sum", "--eps", "1", "--n", "1e9", "--engine", "faithful", "--trials", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: a streamed faithful trial of cheu-sum") and "needs about" in err and "--chunk" in err
    # in memory: the n*r messages, refused with the estimate and the knobs
    proto = registry.create("cheu-sum", 10**6, eps=1.0, messages=2000, gamma=0.01)  # creating allocates nothing
    with pytest.raises(ResourceError, match=r"needs about 59\.6 GiB.*--engine fast.*--chunk"):
        proto.check_resources()
    assert main(["simulate", "cheu-sum", "--eps", "1", "--n", "1e6", "--messages", "2000", "--gamma", "0.01",
                 "--engine", "faithful", "--trials", "2"]) == 2
    assert "--engine fast" in capsys.readouterr().err


# ------------------------------------------------------------------ validity: n·r and the CDF allowance
def test_n_times_r_beyond_the_checked_range_is_refused():
    from shufflesim.errors import ParameterError
    from shufflesim.mechanisms.cheu import MAX_CHEU_NR

    CheuSum(MAX_CHEU_NR // 2000, 2000, 0.01)  # at the limit: accepted
    with pytest.raises(ParameterError, match=rf"n\*r must be <= 2e\+12.*--messages <= {MAX_CHEU_NR // (2 * 10**9)}"):
        CheuSum(2 * 10**9, 2000, 0.01)


def test_default_messages_capped_by_n_times_r():
    from shufflesim.mechanisms.cheu import MAX_CHEU_NR
    from shufflesim.protocols.sum_baselines import cheu_messages

    proto = registry.create("cheu-sum", 10**10, eps=1.0)
    assert proto.params["messages"] == MAX_CHEU_NR // 10**10 < MAX_CHEU_MESSAGES
    assert proto.params["messages_paper"] == cheu_messages(10**10, 1.0)
    assert "n*r <= 2e+12" in proto.notes[0]


@pytest.mark.slow
def test_cdf_allowance_covers_scipys_error_at_1e11():
    # the bins' weights are scipy's binomial CDF times (1 + allowance): at n·r = 1e11, gamma = 0.3 scipy is a few
    # 1e-10 low at the lowest bin edges (below the small-n allowance 1e-10), so the allowance there must cover it;
    # exact CDF by a 30-digit ratio recurrence from -13 sd (the mass below is < 1e-30 of it)
    import mpmath as mp
    from scipy import stats

    from shufflesim.accounting.bounds.cheu import cdf_rtol, cheu_components

    n, r, g = 50_000_001, 2000, 0.3
    n0 = (n - 1) * r
    edges = [int(m) - 1 for m in cheu_components(n, r, g)["ms"][1:3]]
    mu, sd = n0 * g, math.sqrt(n0 * g * (1 - g))
    with mp.workdps(30):
        k = int(mu - 13 * sd)
        t = mp.exp(mp.loggamma(n0 + 1) - mp.loggamma(k + 1) - mp.loggamma(n0 - k + 1) + k * mp.log(g)
                   + (n0 - k) * mp.log(1 - mp.mpf(g)))
        ratio, acc, exact = mp.mpf(g) / (1 - mp.mpf(g)), mp.mpf(0), {}
        while k <= edges[-1]:
            acc += t
            if k in edges:
                exact[k] = acc
            t = t * (n0 - k) / (k + 1) * ratio
            k += 1
    for e in edges:
        used = float(stats.binom.cdf(e, n0, g)) * (1 + cdf_rtol(n0))
        assert used >= exact[e], (e, used / float(exact[e]) - 1)


def test_no_certificate_beyond_the_accountants_range(capsys, monkeypatch):
    """Issue 29: n = 3e12 has no r >= 1 with n*r <= 2e12; cheu-sum capped r at 1 and certified delta = 1.1e-31
    with the protocol's own call to the bound, where the accountant (CheuSum) refuses.  Refused on every path,
    before the calibration evaluates the bound (whose cast warned there)."""
    import warnings

    from shufflesim.errors import ParameterError
    from shufflesim.protocols import sum_baselines

    def boom(*a, **k):
        raise AssertionError("the bound was evaluated beyond its validity range")

    monkeypatch.setattr(sum_baselines, "cheu_delta", boom)
    sum_baselines.cheu_gamma.cache_clear()
    with pytest.raises(ParameterError, match=r"n must be <= 2e\+12"):
        registry.create("cheu-sum", 3 * 10**12, eps=1.0)
    with pytest.raises(ParameterError, match=r"n\*r must be <= 2e\+12.*--messages <= 1\b"):
        sum_baselines.CheuSumProtocol.create(10**12 + 1, eps=1.0, messages=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["simulate", "cheu-sum", "--n", "3e12", "--eps", "1", "--engine", "fast"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "n must be <= 2e+12" in err


def test_every_protocol_create_builds_its_description():
    """Issue 29, by construction: Protocol.create (any subclass, a plug-in's too) builds mechanism(), so the
    accountant's own validity checks run wherever a protocol is built."""
    from shufflesim.errors import ParameterError
    from shufflesim.pipeline.protocol import Protocol

    class Refused(Protocol):
        name = "refused-test"

        @classmethod
        def create(cls, n, **params):
            return cls(n=n, randomiser=None, shuffler=None, analyser=None, params={})

        def truth(self, data):
            return 0.0

        def mechanism(self):
            raise ParameterError("the accountant refuses this description")

    with pytest.raises(ParameterError, match="accountant refuses"):
        Refused.create(10)


def test_cheu_bound_guess_cast_is_defined():
    """The normal-approximation guess (only where the bisection looks) was cast from +-inf to int64 where the
    mean difference underflowed to its floor (RuntimeWarning: invalid value encountered in cast, issue 29)."""
    import warnings

    from shufflesim.accounting.bounds.cheu import cheu_delta

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = cheu_delta(2 * 10**12, 1, 1.0 - 1e-9, 1.0)  # gamma -> 1 (cheu-sum's search meets it at n = 2e12)
    assert 0.0 <= d < 1e-30  # nearly every bit a uniform coin: only the charged tail mass remains
