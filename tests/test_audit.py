"""Empirical privacy audits (issue 10): coverage of the certified lower bounds, a broken randomiser is
caught, the k-RR likelihood ratio is exact, the CLI's JSON."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom, multinomial

from shufflesim.accounting.exact import bruteforce as bf
from shufflesim.accounting.numerics.invert import eps_interval_for_delta
from shufflesim.accounting.pairs import biswas_count_pair, clones_pair
from shufflesim.maths.rr_count import rr2_count_pmfs
from shufflesim.mechanisms import KRR
from shufflesim.validation.audit import (
    krr_explicit,
    krr_worst_case,
    pmf_setup,
    rr2_count_setup,
    run_audit,
)
from shufflesim.errors import ShufflesimError


def _exact_eps(log_p, log_q, delta):
    """Exact eps(delta) of a pair, both directions: the accountant's inversion of the exact hockey-stick curve."""
    def d(e):
        return max(bf.hockey_stick(log_p, log_q, e), bf.hockey_stick(log_q, log_p, e))
    return eps_interval_for_delta(d, d, delta, 50.0)[1]


def _coverage(setup, log_p, log_q, eps, delta, runs, trials, alpha=0.05):
    exact_d = max(bf.hockey_stick(log_p, log_q, eps), bf.hockey_stick(log_q, log_p, eps))
    exact_e = _exact_eps(log_p, log_q, delta)
    over_d = over_e = positive = 0
    for r in range(runs):
        res = run_audit(setup, eps=eps, delta=delta, trials=trials, rng=r, alpha=alpha)
        over_d += res["delta_lower"] > exact_d
        over_e += res["eps_lower"] > exact_e
        positive += res["delta_lower"] > 0
    return over_d, over_e, positive, exact_d


def _within_level(count, runs, alpha):
    return binom.sf(count - 1, runs, alpha) > 1e-3


@pytest.mark.parametrize("which", ["rr2", "biswas", "clones"])
def test_lower_bounds_exceed_exact_values_no_more_often_than_alpha(which):
    if which == "rr2":
        setup = rr2_count_setup(20, 1.0, ones=3)
        lp, lq = _rr2_pmfs(20, 1.0, 3)
        eps, delta = 0.1, 0.01
    elif which == "biswas":
        pair = biswas_count_pair(20, 4, 2.0, 10)
        lp, lq = pair.log_p, pair.log_q
        setup = pmf_setup(lp, lq, pair="biswas count", statistic="count")
        eps, delta = 0.2, 0.01
    else:
        pair = clones_pair(20, 1.0)
        lp, lq = pair.log_p, pair.log_q
        setup = pmf_setup(lp, lq, pair="clones", statistic="clone counts")
        eps, delta = 0.2, 0.01
    runs = 150
    over_d, over_e, positive, exact = _coverage(setup, lp, lq, eps, delta, runs, 20_000)
    assert exact > 0.01 and positive > 0.9 * runs  # the audit sees something
    assert _within_level(over_d, runs, 0.05) and _within_level(over_e, runs, 0.05)


def _rr2_pmfs(n, eps0, ones):
    P, Q = rr2_count_pmfs(n, eps0, ones)  # checked against enumeration in tests/test_audit_rr_count.py
    with np.errstate(divide="ignore"):
        return np.log(P), np.log(Q)


def test_krr_worst_case_llr_is_exact():
    # tiny n: enumerate every histogram, compute the likelihoods from the multinomials directly
    n, k, g = 4, 3, 0.5
    q = g / k
    others = [q, q, 1 - g + q]
    target = {0: [1 - g + q, q, q], 1: [q, 1 - g + q, q]}
    setup = krr_worst_case(n, k, g)
    for h in itertools.product(range(n + 1), repeat=3):
        if sum(h) != n:
            continue
        lik = []
        for side in (0, 1):
            s = 0.0
            for j in range(3):
                hh = list(h)
                hh[j] -= 1
                if hh[j] >= 0:
                    s += target[side][j] * multinomial.pmf(hh, n - 1, others)
            lik.append(s)
        base = n - h[2] + q * h[2] / others[2]
        L = math.log(base + (1 - g) / q * h[0]) - math.log(base + (1 - g) / q * h[1])
        assert L == pytest.approx(math.log(lik[0] / lik[1]), rel=1e-10, abs=1e-12)
    # the sampler's draws are histograms of the right law: mean of N_a under X
    x = setup.sample(np.random.default_rng(0), 2000, 0)
    assert np.isfinite(x).all()


def test_broken_randomiser_is_violated_unbroken_is_consistent():
    n, k, eps0 = 100, 4, 2.0
    mech = KRR.from_eps0(n, k, eps0, "strong")
    broken = run_audit(krr_worst_case(n, k, mech.gamma, leak=0.01, mechanism=mech), eps=1.0, trials=200_000, rng=1)
    assert broken["verdict"] == "violated" and broken["delta_lower"] > broken["accountant"]["delta_upper"]
    assert "violated" in broken["verdict_reason"]
    fine = run_audit(krr_worst_case(n, k, mech.gamma, mechanism=mech), eps=1.0, trials=200_000, rng=1)
    assert fine["verdict"] == "consistent"


def test_krr_audit_million_trials_meets_the_weak_bound():
    # 10^6 samples per side of a 100-user k-RR (the speed target); quality: ratio lower/upper
    mech = KRR(100, 4, 0.5, "weak")
    res = run_audit(krr_worst_case(100, 4, 0.5, mechanism=mech), eps=0.1, delta=1e-3, trials=10**6, rng=0)
    assert res["verdict"] == "consistent" and 0.5 < res["ratio"] <= 1.0
    assert 0 < res["eps_lower"] <= res["accountant"]["eps_upper"]


def test_explicit_pair_checks_neighbouring():
    with pytest.raises(ShufflesimError, match="differ in exactly one"):
        krr_explicit(np.array([0, 0, 0]), np.array([1, 1, 0]), 3, 0.5)
    with pytest.raises(ShufflesimError, match="same number"):
        krr_explicit(np.array([0, 0]), np.array([0, 0, 1]), 3, 0.5)


def test_cli_audit_json_keys():
    out = subprocess.run([sys.executable, "-P", "-m", "shufflesim", "audit", "krr", "--n", "100", "--k", "4", "--eps0", "2",
                          "--eps", "0.2", "--delta", "1e-3", "--trials", "100000", "--seed", "1", "--json"],
                         capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    assert {"delta_lower", "eps_lower", "trials", "alpha", "pair", "accountant", "verdict"} <= set(d)
    assert {"method", "delta_upper"} <= set(d["accountant"])
    assert d["verdict"] == "consistent" and d["delta_lower"] <= d["accountant"]["delta_upper"]


def test_cli_audit_rejects_unsupported_protocol_in_one_line():
    out = subprocess.run([sys.executable, "-P", "-m", "shufflesim", "audit", "krr", "--k", "4", "--eps0", "2", "--eps", "1",
                          "--pair", "counts:1,1,0,0", "counts:2,2,0,0", "--trials", "100"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("error:") and out.stderr.count("\n") == 1


def test_explicit_pair_is_consistent_and_sees_leakage():
    n, k, g = 10, 3, 0.5
    x = np.array([0] + [2] * (n - 1))
    y = np.array([1] + [2] * (n - 1))
    res = run_audit(krr_explicit(x, y, k, g, mechanism=KRR(n, k, g, "weak")), eps=0.2, trials=100_000, rng=2)
    assert res["verdict"] == "consistent" and res["delta_lower"] > 0.5 * res["accountant"]["delta_upper"]
    assert res["distinguisher"] == "threshold on the statistic"
