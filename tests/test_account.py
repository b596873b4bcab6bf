"""The account front end: every CLI line of issue 3, brute force vs tight under composition,
calibration, and published bounds against tight values."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shufflesim import NotApplicableError, ParameterError
from shufflesim.accounting.exact import bruteforce as BF
from shufflesim.accounting.account import account
from shufflesim.mechanisms import KRR, RR2, Clones
from shufflesim.mechanisms.clones import calibrate_clones_eps0
from shufflesim.mechanisms.krr import calibrate_krr_gamma
from shufflesim.accounting.pairs import biswas_count_pair, clones_pair, krr_pair, rr2_pair
from shufflesim.accounting.engines.tight import tight_delta
from shufflesim.cli.main import main


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- brute force vs tight, n_c in {1, 2, 3} ---------------------------------------------------------

def _product(pair, nc):
    lp, lq = pair.log_p, pair.log_q
    P, Q = lp, lq
    for _ in range(nc - 1):
        P = (P[:, None] + lp[None, :]).ravel()
        Q = (Q[:, None] + lq[None, :]).ravel()
    return P, Q


CASES = [
    ("rr2", lambda: BF.rr2_bruteforce(4, 1.5), lambda: rr2_pair(4, 1.5)),
    ("krr-strong", lambda: BF.krr_bruteforce(4, 3, 0.6, "strong"), lambda: krr_pair(4, 3, 0.6, "strong")),
    ("krr-weak", lambda: BF.krr_bruteforce(4, 3, 0.6, "weak"), lambda: krr_pair(4, 3, 0.6, "weak")),
    ("clones", lambda: BF.clones_bruteforce(4, 1.0), lambda: clones_pair(4, 1.0)),
    ("biswas", lambda: BF.biswas_count_bruteforce(5, 3, 1.0, 2), lambda: biswas_count_pair(5, 3, 1.0, 2)),
]


@pytest.mark.parametrize("name,brute,pair", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("nc", [1, 2, 3])
def test_bruteforce_view_vs_tight_sufficient_pair(name, brute, pair, nc):
    """The composed δ of the enumerated views lies in the tight interval of the sufficient pair."""
    b = brute()
    P, Q = _product(b, nc) if nc > 1 else (b.log_p, b.log_q)
    for eps in (0.0, 0.2, 0.7, 1.5):
        exact = BF.hockey_stick(P, Q, eps)
        (r,) = tight_delta(pair(), [eps], compositions=nc)
        assert r.delta_lower <= exact * (1 + 1e-9) + 1e-15, (name, nc, eps, r, exact)
        assert exact <= r.delta_upper * (1 + 1e-9) + 1e-15, (name, nc, eps, r, exact)


def test_strong_1d_pair_vs_direct_product():
    p = krr_pair(30, 4, 0.5, "strong-1d")
    for nc in (1, 2, 3):
        P, Q = _product(p, nc)
        for eps in (0.3, 1.0):
            exact = BF.hockey_stick(P, Q, eps)
            (r,) = tight_delta(p, [eps], compositions=nc)
            assert r.delta_lower <= exact * (1 + 1e-9) + 1e-15 and exact <= r.delta_upper * (1 + 1e-9) + 1e-15


# --- monotonicity ----------------------------------------------------------------------------------

def test_delta_monotone_in_eps_compositions_and_n():
    eps = [0.1, 0.3, 0.6, 1.0]
    one = account(KRR.from_eps0(2000, 4, 2.0, "strong"), eps=eps).results
    two = account(KRR.from_eps0(2000, 4, 2.0, "strong"), eps=eps, compositions=4).results
    big = account(KRR.from_eps0(8000, 4, 2.0, "strong"), eps=eps).results
    ups = [r.delta_upper for r in one]
    assert all(a >= b for a, b in zip(ups, ups[1:]))
    assert all(t.delta_lower >= o.delta_upper for t, o in zip(two, one))
    assert all(b.delta_upper <= o.delta_lower for b, o in zip(big, one))


# --- published bounds vs tight -----------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _tight_rr2(n: int, eps0: float, d: float):
    """The tight single-use interval of rr2 at delta d, computed once for the six methods below (~1 s each)."""
    return account(RR2(n, eps0), delta=[d]).results[0]


@pytest.mark.parametrize("method", ["erlingsson", "feldman", "feldman-numerical", "bennett", "hoeffding", "balle"])
def test_published_bounds_not_below_tight_rr2(method):
    """Every published bound for shuffled ε0-LDP / k-RR is ≥ the tight δ of the rr2 pair (where it applies).

    (The original-2019 Bennett form is excluded: it is *not* a valid bound; see test_bounds.py.)
    """
    for n, eps0 in [(1000, 0.4), (10_000, 0.5), (10_000, 2.0)]:
        for d in (1e-4, 1e-6, 1e-8):
            pub = account(RR2(n, eps0), delta=[d], method=method).results[0]
            if not pub.applicable:
                continue
            tight = _tight_rr2(n, eps0, d)
            assert pub.eps_upper >= tight.eps_lower, (method, n, eps0, d, pub, tight)


# --- calibration ---------------------------------------------------------------------------------

@settings(max_examples=8, deadline=None)
@given(st.sampled_from([300, 1000, 3000]), st.sampled_from([2, 5]), st.floats(0.3, 2.0),
       st.sampled_from([1e-4, 1e-6, 1e-9]), st.sampled_from(["strong", "strong-1d"]))
def test_calibrated_gamma_never_overshoots(n, k, eps, delta, adversary):
    from shufflesim import InfeasibleError

    try:
        c = calibrate_krr_gamma(n, k, eps, delta, adversary=adversary, rtol=1e-4)
    except InfeasibleError:
        # only acceptable when even pure noise (gamma = 1) misses the target
        r1 = account(KRR(n, k, 1.0, adversary), eps=[eps]).results[0]
        # strong-1d is a stated pair (no view, so no mechanism-level lower end, issue 17): its own bracket
        lo = r1.delta_lower if r1.delta_lower is not None else r1.bound_lower
        assert lo > delta
        return
    r = account(KRR(n, k, c.value, adversary), eps=[eps]).results[0]
    assert r.delta_upper <= delta
    # and it is close to the boundary: 1% less blanket violates the target
    r2 = account(KRR(n, k, c.value * 0.99, adversary), eps=[eps]).results[0]
    assert r2.delta_upper > delta * (1 - 1e-9)


def test_calibrated_clones_eps0_never_overshoots():
    c = calibrate_clones_eps0(5000, 1.0, 1e-6, rtol=1e-4)
    r = account(Clones(5000, c.value), eps=[1.0]).results[0]
    assert r.delta_upper <= 1e-6
    r2 = account(Clones(5000, c.value * 1.01), eps=[1.0]).results[0]
    assert r2.delta_upper > 1e-6


# --- the CLI lines of the issue ------------------------------------------------------------------

LINES = [
    ["rr2", "--n", "1000", "--eps0", "2", "--eps", "0.5", "1"],
    ["krr", "--n", "1000", "--k", "4", "--gamma", "0.25", "--adversary", "strong-1d", "--delta", "1e-6"],
    ["krr", "--n", "1000", "--k", "4", "--eps0", "2.5", "--adversary", "strong", "--eps", "0.5"],
    ["krr", "--n", "500", "--k", "4", "--gamma", "0.25", "--adversary", "weak", "--eps", "0.5", "--compositions", "2"],
    ["clones", "--n", "10000", "--eps0", "2", "--delta", "1e-6", "1e-8"],
    ["biswas", "--n", "100", "--k", "10", "--eps0", "2", "--n-x0", "80", "--method", "biswas", "--eps", "0.1"],
    ["biswas", "--n", "100", "--k", "10", "--eps0", "2", "--n-x0", "80", "--method", "exact", "--eps", "0.1"],
    ["rr2", "--n", "10000", "--eps0", "0.5", "--delta", "1e-6", "--method", "erlingsson", "--compositions", "4",
     "--composition", "advanced"],
]


@pytest.mark.parametrize("argv", LINES, ids=[" ".join(a[:1] + a[-2:]) for a in LINES])
def test_cli_json_schema(capsys, argv):
    code, out, err = cli(capsys, "account", *argv, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert set(d) >= {"mechanism", "params", "method", "compositions", "results", "notes", "seconds"}
    for r in d["results"]:
        if "eps" in r:
            assert set(r) >= {"eps", "delta_upper", "delta_lower"}
            if r.get("applicable", True):
                assert r["delta_lower"] is None or r["delta_lower"] <= r["delta_upper"]
        else:
            assert set(r) >= {"delta", "eps_upper", "eps_lower"}
            if r.get("applicable", True):
                assert r["eps_lower"] is None or r["eps_lower"] <= r["eps_upper"]


def test_not_applicable_is_reported_not_computed(capsys):
    code, out, _ = cli(capsys, "account", "krr", "--n", "1000", "--k", "4", "--gamma", "0.25", "--eps", "2",
                       "--method", "balle", "--json")
    assert code == 0
    (r,) = json.loads(out)["results"]
    assert r["applicable"] is False and "eps <= 1" in r["reason"] and r["delta_upper"] is None


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["rr2", "--n", "1000", "--eps0", "2", "--eps", "0.5", "--method", "exact-koskela"], "limit"),
        (["clones", "--n", "3000", "--eps0", "2", "--eps", "0.5", "--method", "exact"], "n <= 2000"),  # rr2 exact: any n (issue 17)
        (["krr", "--n", "100", "--k", "4", "--gamma", "1.5", "--adversary", "weak", "--eps", "0.5"], "gamma must be in"),
        (["rr2", "--n", "0", "--eps0", "2", "--eps", "0.5"], "n must be"),
        (["rr2", "--n", "10", "--eps0", "-1", "--eps", "0.5"], "eps0 must be"),
        (["rr2", "--n", "10", "--eps0", "1", "--delta", "0"], "delta must be in"),
        (["rr2", "--n", "10", "--eps0", "1", "--eps", "-1"], "eps must be in"),
        (["biswas", "--n", "10", "--k", "3", "--eps0", "1", "--n-x0", "10", "--eps", "0.5"], "n_x0 must be"),
        (["clones", "--n", "10", "--eps0", "1", "--eps", "0.5", "--compositions", "0"], "compositions must be"),
    ],
)
def test_cli_errors_one_line(capsys, argv, msg):
    code, out, err = cli(capsys, "account", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and msg in err, err


def test_exact_refusal_names_the_limit():
    with pytest.raises(NotApplicableError, match="limit"):
        account(KRR(40, 4, 0.5, "strong"), eps=[0.5], method="exact")
    with pytest.raises(ParameterError, match="does not apply"):
        account(Clones(40, 1.0), eps=[0.5], method="balle")
