"""``exact`` for a finite randomiser's shuffled view (issue 30 item 2; docs/theory.md#exact-finite).

The oracle is written here from scratch: every data set of n users (every multiset of n inputs), the law of its
shuffled histogram by :func:`shufflesim.accounting.exact.shuffle_oracle.histogram_law`, every neighbouring pair
(one user's input changed) and both hockey-stick directions; ε(δ) by bisection of that worst δ(ε).  None of
:mod:`shufflesim.accounting.exact.enumeration` (its lattice, its reuse of the others' law, its inversion) is used.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from shufflesim.accounting.account import account
from shufflesim.accounting.exact.enumeration import (EXACT_ENUMERATION_BUDGET, check_enumeration, enumeration_steps,
                                                     largest_n)
from shufflesim.accounting.exact.shuffle_oracle import histogram_law, krr_matrix
from shufflesim.cli.main import main
from shufflesim.errors import NotApplicableError
from shufflesim.mechanisms.krr import KRR
from shufflesim.mechanisms.matrix import ShuffledMatrix

REL = 1e-9


def brute_pairs(R: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q): the histogram laws of every neighbouring pair of data sets of n users, in both orders (rows)."""
    k = R.shape[0]
    laws = {ms: histogram_law(R, ms) for ms in itertools.combinations_with_replacement(range(k), n)}
    keys = sorted(set().union(*laws.values()))
    col = {h: j for j, h in enumerate(keys)}
    dense = {}
    for ms, lw in laws.items():
        v = np.zeros(len(keys))
        for h, p in lw.items():
            v[col[h]] = p
        dense[ms] = v
    P, Q = [], []
    for ms in laws:  # every data set and every user's switch to another input
        for i, x in enumerate(ms):
            for x2 in range(k):
                if x2 != x:
                    P.append(dense[ms])
                    Q.append(dense[tuple(sorted(ms[:i] + ms[i + 1:] + (x2,)))])
    return np.array(P), np.array(Q)


def brute_delta(P: np.ndarray, Q: np.ndarray, eps: float) -> float:
    return float(np.maximum(P - math.exp(eps) * Q, 0.0).sum(axis=1).max())


def brute_eps(P: np.ndarray, Q: np.ndarray, delta: float, hi: float) -> float:
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if brute_delta(P, Q, mid) > delta:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def local_eps(R: np.ndarray) -> float:
    L = np.log(R)
    return float(np.max(L[:, None, :] - L[None, :, :]))


def random_cases(count: int = 32, seed: int = 20261128):
    """``count`` random randomisers (2 <= k, m <= 4 inputs and outputs, n <= 6 users), from a fixed seed."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        k, m = (int(v) for v in rng.integers(2, 5, size=2))
        n = int(rng.integers(2, 7))
        R = rng.uniform(0.05, 1.0, size=(k, m))
        yield R / R.sum(axis=1, keepdims=True), n


CASES = list(random_cases())


def test_enough_random_cases():
    assert len(CASES) >= 30
    assert {R.shape for R, _ in CASES} >= {(2, 2), (4, 4)}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_equals_brute_force(case):
    R, n = CASES[case]
    mech = ShuffledMatrix(n, R.tolist())
    R = mech.array  # the normalised matrix the mechanism runs
    P, Q = brute_pairs(R, n)
    e0 = local_eps(R)
    eps = [0.2 * e0, 0.5 * e0]
    truth = [brute_delta(P, Q, e) for e in eps]
    assert min(truth) > 1e-4  # the relative comparison is meaningful (not an allowance-sized delta)
    rep = account(mech, eps=eps, method="exact")
    for r, t in zip(rep.results, truth):
        assert r.delta_lower <= r.delta_upper
        assert abs(r.delta_lower - t) <= REL * t and abs(r.delta_upper - t) <= REL * t, (r, t)
    deltas = [0.5 * truth[0], truth[1]]
    rep = account(mech, delta=deltas, method="exact")
    for r, d in zip(rep.results, deltas):
        t = brute_eps(P, Q, d, e0 + 1.0)
        assert t > 0.01
        assert r.eps_lower <= r.eps_upper
        assert abs(r.eps_lower - t) <= REL * t and abs(r.eps_upper - t) <= REL * t, (r, t)


def test_krr_shuffled_exact_issue_value():
    """The issue's k-RR figure: n = 7, k = 4, γ = 0.25, ε = 2: the worst case is 0.10538."""
    mech = KRR(7, 4, 0.25, "shuffled")
    r = account(mech, eps=[2.0], method="exact").results[0]
    P, Q = brute_pairs(krr_matrix(4, mech.eps0), 7)
    t = brute_delta(P, Q, 2.0)
    assert round(t, 5) == 0.10538
    assert abs(r.delta_lower - t) <= REL * t and abs(r.delta_upper - t) <= REL * t
    # the default's interval (stronger clones above, explicit data sets below) contains it
    d = account(mech, eps=[2.0]).results[0]
    assert d.delta_lower <= r.delta_lower and r.delta_upper <= d.delta_upper


@pytest.mark.parametrize("n,k,gamma", [(2, 3, 0.5), (4, 3, 0.3), (5, 5, 0.6)])
def test_krr_shuffled_exact_small(n, k, gamma):
    mech = KRR(n, k, gamma, "shuffled")
    P, Q = brute_pairs(krr_matrix(k, mech.eps0), n)
    for e in (0.3, 1.0):
        t = brute_delta(P, Q, e)
        r = account(mech, eps=[e], method="exact").results[0]
        assert abs(r.delta_lower - t) <= REL * t and abs(r.delta_upper - t) <= REL * t


def test_budget_and_largest_n():
    for k, m in ((3, 3), (4, 4), (10, 10)):
        big = largest_n(k, m)
        assert enumeration_steps(big, k, m) <= EXACT_ENUMERATION_BUDGET < enumeration_steps(big + 1, k, m)
        check_enumeration(big, k, m)
        with pytest.raises(NotApplicableError, match=f"the largest n within it is {big};"):
            check_enumeration(big + 1, k, m)


def test_refused_beyond_budget_one_line(tmp_path: Path, capsys):
    f = tmp_path / "m.csv"
    f.write_text("0.6,0.3,0.1\n0.2,0.5,0.3\n0.25,0.25,0.5\n")
    big = largest_n(3, 3, inverse=True)
    code = main(["account", "matrix", "--matrix", str(f), "--n", str(big + 1), "--delta", "1e-6", "--method", "exact"])
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error:") and f"the largest n within it is {big};" in lines[0]
    code = main(["account", "krr", "--n", "1000", "--k", "4", "--gamma", "0.25", "--eps", "1", "--method", "exact"])
    out, err = capsys.readouterr()
    assert code == 2 and len([ln for ln in err.splitlines() if ln.strip()]) == 1 and "budget" in err


def test_composed_exact_says_what_it_certifies():
    R, n = CASES[0]
    mech = ShuffledMatrix(n, R.tolist())
    one = account(mech, eps=[0.5], method="exact").results[0]
    rep = account(mech, eps=[0.5], method="exact", compositions=3)
    r = rep.results[0]
    assert any("exact for a single use only" in nt for nt in rep.notes)
    assert r.delta_lower is not None and r.delta_lower <= r.delta_upper
    assert r.delta_lower >= one.delta_lower  # three uses of the worst pair leak at least as much as one


@pytest.mark.parametrize("case", [0, 5, 11])
def test_explicit_data_set_beyond_the_enumeration(case):
    """dataset_worst (one explicit data set, any n its law fits) equals the brute force of that data set's pairs."""
    from shufflesim.accounting.exact.enumeration import dataset_worst

    R, n = CASES[case]
    R = ShuffledMatrix(n, R.tolist()).array
    k = R.shape[0]
    counts = [n - 2, 1] + [0] * (k - 2)  # a two-input split of the others
    others = [0] * (n - 2) + [1]
    laws = {x: histogram_law(R, [x, *others]) for x in range(k)}
    keys = sorted(set().union(*laws.values()))
    dense = {x: np.array([[laws[x].get(h, 0.0) for h in keys]]) for x in range(k)}
    P = np.vstack([dense[x] for x in range(k) for x2 in range(k) if x2 != x])
    Q = np.vstack([dense[x2] for x in range(k) for x2 in range(k) if x2 != x])
    e = 0.3 * local_eps(R)
    t = brute_delta(P, Q, e)
    w = dataset_worst(R, counts, eps=[e])[0]
    assert w.lower <= w.upper and abs(w.lower - t) <= REL * t and abs(w.upper - t) <= REL * t
    d = 0.5 * t
    te = brute_eps(P, Q, d, local_eps(R) + 1.0)
    w = dataset_worst(R, counts, delta=[d])[0]
    assert w.lower <= te * (1 + 1e-12) and abs(w.lower - te) <= REL * te


@pytest.mark.parametrize("case", [1, 7, 20])
def test_default_interval_contains_exact(case):
    R, n = CASES[case]
    mech = ShuffledMatrix(n, R.tolist())
    e = 0.3 * mech.eps0
    ex = account(mech, eps=[e], method="exact").results[0]
    d = account(mech, eps=[e]).results[0]
    assert d.delta_lower <= ex.delta_upper and ex.delta_lower <= d.delta_upper


def test_estimate_account_prices_exact_and_refuses_as_account_does():
    """``estimate_account(method="exact")`` for a matrix and k-RR's released view prices the enumeration (it used
    to refuse: "no neighbouring pair for method 'exact'") and refuses beyond the budget with account()'s line."""
    from shufflesim.accounting.account import account, estimate_account
    from shufflesim.errors import NotApplicableError
    from shufflesim.mechanisms import KRR
    from shufflesim.mechanisms.matrix import ShuffledMatrix

    M = ((.6, .3, .1), (.2, .5, .3), (.25, .25, .5))
    for mech in (ShuffledMatrix(20, M), KRR(12, 4, 0.25)):
        assert estimate_account(mech, method="exact").engine == "exact enumeration"
    big = ShuffledMatrix(2000, M)
    with pytest.raises(NotApplicableError) as est:
        estimate_account(big, method="exact")
    with pytest.raises(NotApplicableError) as run:
        account(big, eps=[1.0], method="exact")
    assert str(est.value) == str(run.value)
