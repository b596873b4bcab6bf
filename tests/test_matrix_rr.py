"""Bring your own randomiser (issue 22): the matrix randomiser, the matrix-rr protocol and its two-sided accounting.

Oracles: the built-in ``krr`` protocol and its closed forms (k-RR written as a matrix), exact rational arithmetic
for ε0, and brute-force enumeration of every neighbouring data set (accounting.shuffle_oracle) for the accounting.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from shufflesim.accounting import account
from shufflesim.accounting.exact.shuffle_oracle import krr_matrix, worst_neighbouring_delta
from shufflesim.errors import DataError, ParameterError
from shufflesim.maths.rr import eps0_upper
from shufflesim.mechanisms import KRR
from shufflesim.mechanisms.matrix import ShuffledMatrix
from shufflesim.pipeline import registry
from shufflesim.pipeline.fast import DataSummary
from shufflesim.pipeline.matrix import (MatrixRandomiser, SamplerRandomiser, check_matrix, inversion_bias,
                                        inversion_operator, matrix_eps0, matrix_histogram, matrix_histogram_batch,
                                        read_matrix, unidentifiable_inputs)


def exact_eps0(R: np.ndarray) -> Decimal:
    """ε0 of the float matrix R with exact rational ratios and a 40-digit logarithm (independent of matrix_eps0)."""
    getcontext().prec = 40
    best = Fraction(1)
    for y in range(R.shape[1]):
        col = [Fraction(float(v)) for v in R[:, y]]
        if max(col) > 0:
            best = max(best, max(col) / min(col))
    return (Decimal(best.numerator) / Decimal(best.denominator)).ln()


def random_ldp_matrix(rng: np.random.Generator, k: int, m: int, spread: float) -> np.ndarray:
    R = np.exp(spread * rng.random((k, m)))
    return R / R.sum(axis=1, keepdims=True)


# --- the matrix and its eps0 -------------------------------------------------------------------------------
@pytest.mark.parametrize("k,m,spread", [(2, 2, 1.0), (3, 4, 2.0), (4, 3, 0.5), (5, 6, 3.0), (3, 3, 1e-6)])
def test_eps0_derived_exactly(k, m, spread):
    R = check_matrix(random_ldp_matrix(np.random.default_rng(k * 100 + m), k, m, spread))
    exact = exact_eps0(R)
    got = matrix_eps0(R)
    # a few ulps of relative error (log1p of an exactly rounded ratio), also for tiny eps0
    assert abs(Decimal(got) - exact) <= Decimal(8 * 2.0**-52) * exact
    assert Decimal(eps0_upper(got)) >= exact  # what the accountant uses is never below the truth


def test_eps0_of_krr_matrix_is_krr_eps0():
    for k, eps0 in ((2, 1.0), (3, 1.5), (10, 0.3)):
        # the matrix entries are rounded, so agreement to a few ulps (not bit-identity) is what holds
        assert math.isclose(matrix_eps0(krr_matrix(k, eps0)), eps0, rel_tol=1e-14)


@pytest.mark.parametrize("matrix,msg", [
    ([[0.5, 0.5]], "at least 2 inputs"),
    ([[0.5, 0.6], [0.5, 0.5]], "row 0 sums to"),
    ([[1.2, -0.2], [0.5, 0.5]], ">= 0"),
    ([[0.5, 0.5], [0.5]], "same number of outputs"),
    ([[0.5, "x"], [0.5, 0.5]], "fraction like 1/3"),
    ([[0.5, float("nan")], [0.5, 0.5]], "finite"),
    ("0.5,0.5", "list of rows"),
])
def test_bad_matrices_are_refused(matrix, msg):
    with pytest.raises(ParameterError, match=msg):
        check_matrix(matrix)


def test_declared_eps0_is_checked_not_trusted():
    R = krr_matrix(3, 1.0)
    MatrixRandomiser(R, 1.0)
    with pytest.raises(ParameterError, match="does not match the matrix"):
        MatrixRandomiser(R, 0.9)
    with pytest.raises(ParameterError, match="not eps0-LDP"):
        ShuffledMatrix(10, [[1.0, 0.0], [0.5, 0.5]])
    # rank < k is not refused (issue 29): the inputs that cannot be told apart are named, the estimate is biased
    # and its exact MSE carries the squared bias (tests/test_matrix_checks.py)
    R0 = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert unidentifiable_inputs(inversion_bias(R0, inversion_operator(R0))) == [0, 1]
    assert unidentifiable_inputs(inversion_bias(R, inversion_operator(R))) == []


def test_read_matrix_files(tmp_path):
    (tmp_path / "m.csv").write_text("# 2-RR, eps0 = log 3\n3/4, 1/4\n0.25, 0.75\n")
    R, declared = read_matrix(tmp_path / "m.csv")
    assert declared is None and R.shape == (2, 2)
    assert math.isclose(matrix_eps0(R), math.log(3.0), rel_tol=1e-14)
    (tmp_path / "m.toml").write_text("eps0 = 1.0986122886681098\nmatrix = [[0.75, 0.25], ['1/4', '3/4']]\n")
    R2, declared = read_matrix(tmp_path / "m.toml")
    assert declared == 1.0986122886681098 and np.array_equal(R, R2)  # same parsed numbers: exactness is the point
    (tmp_path / "bad.toml").write_text("matrix = [[0.75, 0.25]\n")
    with pytest.raises(DataError, match="not valid TOML"):
        read_matrix(tmp_path / "bad.toml")
    (tmp_path / "nokey.toml").write_text("rows = [[1.0]]\n")
    with pytest.raises(DataError, match="no 'matrix' key"):
        read_matrix(tmp_path / "nokey.toml")
    with pytest.raises(DataError, match="not found"):
        read_matrix(tmp_path / "missing.csv")


# --- k-RR written as a matrix agrees with the built-in krr ---------------------------------------------------
def _pair(tmp_path, n=2000, k=4, eps0=1.0):
    f = tmp_path / "krr.toml"
    rows = ",\n".join("[" + ", ".join(repr(float(v)) for v in row) + "]" for row in krr_matrix(k, eps0))
    f.write_text(f"matrix = [\n{rows}\n]\n")
    return registry.create("krr", n, k=k, eps0=eps0), registry.create("matrix-rr", n, matrix=str(f))


def test_same_view_same_estimate(tmp_path):
    krr, mat = _pair(tmp_path)
    x = np.random.default_rng(1).integers(0, 4, size=krr.n)
    res = krr.run(x, rng=7, keep_view=True)
    est = mat.analyser.analyse(res.view, np.random.default_rng(0))
    assert np.array_equal(est.histogram, res.details.histogram)  # the same draws: the same histogram, exactly
    # the pseudo-inverse and krr's closed-form debiasing differ by round-off only: |error| <= n * 1e-12
    np.testing.assert_allclose(est.counts, res.estimate, rtol=0, atol=krr.n * 1e-12)


def test_mse_theory_equals_krr(tmp_path):
    krr, mat = _pair(tmp_path)
    x = np.random.default_rng(2).integers(0, 4, size=krr.n)
    # two closed forms of the same quantity; they agree to round-off
    assert math.isclose(mat.mse_expected(x), krr.mse_expected(x), rel_tol=1e-10)
    assert math.isclose(mat.mse_worst(), krr.mse_worst(), rel_tol=1e-10)


@pytest.mark.parametrize("engine", ["faithful", "fast"])
def test_histogram_distribution_matches_krr(tmp_path, engine):
    """Mean and variance of every histogram cell over T trials against the exact k-RR values (|z| < 5)."""
    krr, mat = _pair(tmp_path, n=500)
    counts = np.array([300, 150, 50, 0])
    x = np.repeat(np.arange(4), counts)
    T = 2000
    if engine == "fast":
        H = matrix_histogram_batch(counts, mat.matrix, np.random.default_rng(3), T).astype(float)
    else:
        H = np.array([mat.run(x, rng=s, validate=False).details.histogram for s in range(T)], dtype=float)
    R = krr_matrix(4, 1.0)
    mean = counts @ R
    var = counts @ (R * (1 - R))
    z = (H.mean(axis=0) - mean) / np.sqrt(var / T)
    assert np.all(np.abs(z) < 5.0), z
    # variance: the sample variance of T draws has standard error about var * sqrt(2 / T) (near-normal cells)
    zv = (H.var(axis=0, ddof=1) - var) / (var * math.sqrt(2.0 / T))
    assert np.all(np.abs(zv) < 5.0), zv


def test_fast_engine_single_and_batch_agree_in_law(tmp_path):
    _, mat = _pair(tmp_path, n=300)
    summary = DataSummary.of(np.repeat(np.arange(4), [100, 100, 50, 50]), "categorical", 4)
    h = matrix_histogram(summary.counts, mat.matrix, np.random.default_rng(0))
    assert h.sum() == 300 and h.shape == (4,)
    one = mat.sample_fast(summary, np.random.default_rng(0))
    assert np.array_equal(one.histogram, h)  # the same generator state: the same draw
    cols = mat.sample_fast_batch(summary, summary.counts.astype(float), np.random.default_rng(1), 4000)
    # E sq_error = the exact MSE; the mean of 4000 draws is within 5 standard errors
    se = cols["sq_error"].std(ddof=1) / math.sqrt(4000)
    x = np.repeat(np.arange(4), summary.counts)
    assert abs(cols["sq_error"].mean() - mat.mse_expected(x)) < 5 * se


def test_accounting_overlaps_krr_and_brackets_brute_force():
    k, eps0 = 3, 1.5
    R = krr_matrix(k, eps0)
    for n in (3, 5):
        mine = account(ShuffledMatrix(n, R.tolist()), eps=[0.1, 0.5, 1.0]).results
        theirs = account(KRR.from_eps0(n, k, eps0, "shuffled"), eps=[0.1, 0.5, 1.0]).results
        for a, b in zip(mine, theirs):
            truth = worst_neighbouring_delta(R, n, a.eps)[0]
            assert a.delta_lower <= truth * (1 + 1e-9) and truth <= a.delta_upper  # float oracle: 1e-9 relative
            assert truth <= b.delta_upper
            assert max(a.delta_lower, b.delta_lower) <= min(a.delta_upper, b.delta_upper)  # the intervals overlap


def test_krr_shuffled_lower_end_below_brute_force():
    R = krr_matrix(3, 1.5)
    r = account(KRR.from_eps0(3, 3, 1.5, "shuffled"), eps=[0.1]).results[0]
    assert r.delta_lower <= worst_neighbouring_delta(R, 3, 0.1)[0] * (1 + 1e-9)


@pytest.mark.parametrize("k,m,n,spread,seed", [(2, 3, 6, 2.0, 0), (3, 3, 4, 1.5, 1), (3, 4, 3, 3.0, 2),
                                               (4, 2, 5, 1.0, 3), (2, 2, 6, 0.7, 4)])
def test_random_ldp_matrices_bracket_brute_force(k, m, n, spread, seed):
    R = check_matrix(random_ldp_matrix(np.random.default_rng(seed), k, m, spread))
    mech = ShuffledMatrix(n, R.tolist())
    eps_grid = [0.0, 0.05, 0.3, 0.8 * mech.eps0]
    for r in account(mech, eps=eps_grid).results:
        truth = worst_neighbouring_delta(R, n, r.eps)[0]
        assert r.delta_lower is not None
        assert r.delta_lower <= truth * (1 + 1e-9) + 1e-15 and truth <= r.delta_upper, (r, truth)
    for d in (1e-3, 0.05):
        r = account(mech, delta=[d]).results[0]
        assert r.eps_lower <= r.eps_upper
        # eps_upper certified: the true delta there is at most d; eps_lower: the true delta there is at least d
        assert worst_neighbouring_delta(R, n, r.eps_upper)[0] <= d * (1 + 1e-9)
        if r.eps_lower > 0:
            assert worst_neighbouring_delta(R, n, r.eps_lower)[0] >= d * (1 - 1e-9)


@pytest.mark.parametrize("k,m,n,spread,seed", [(2, 3, 6, 2.0, 0), (3, 3, 4, 1.5, 1), (4, 2, 5, 1.0, 3)])
def test_projected_lower_end_below_brute_force(monkeypatch, k, m, n, spread, seed):
    """Beyond the enumeration the lower end is a projected count of explicit data sets; forced at small n, it is
    below the brute-force worst case (both directions of the question)."""
    import shufflesim.mechanisms.matrix as M

    monkeypatch.setattr(M, "ENUMERATION_BUDGET", 0)
    R = check_matrix(random_ldp_matrix(np.random.default_rng(seed), k, m, spread))
    mech = ShuffledMatrix(n, R.tolist())
    rep = account(mech, eps=[0.0, 0.1, 0.5 * mech.eps0], method="tight")
    assert any("through the count of report" in nt for nt in rep.notes)
    for r in rep.results:
        truth = worst_neighbouring_delta(R, n, r.eps)[0]
        assert r.delta_lower is not None and r.delta_lower <= truth * (1 + 1e-9) and truth <= r.delta_upper
    r = account(mech, delta=[0.05], method="tight").results[0]
    if r.eps_lower > 0:
        assert worst_neighbouring_delta(R, n, r.eps_lower)[0] >= 0.05 * (1 - 1e-9)


def test_projected_lower_end_at_large_n_against_krr_weak():
    """k-RR as a matrix at n = 2000: the projected lower end lies below the weak adversary's certified upper end
    (the weak adversary sees more than the shuffled reports, so its upper end bounds their true eps)."""
    R = krr_matrix(4, 1.0)
    mine = account(ShuffledMatrix(2000, R.tolist()), delta=[1e-6]).results[0]
    weak = account(KRR.from_eps0(2000, 4, 1.0, "weak"), delta=[1e-6]).results[0]
    assert 0 < mine.eps_lower <= weak.eps_upper <= mine.eps_upper * (1 + 1e-9)


def test_lower_end_is_none_beyond_projection_and_for_samplers(monkeypatch):
    import shufflesim.mechanisms.matrix as M

    monkeypatch.setattr(M, "MAX_N_PROJECTED", 1000)  # (10^7 in use; a small n keeps the test fast)
    r = account(ShuffledMatrix(2000, krr_matrix(4, 1.0).tolist()), eps=[0.2], method="tight")
    assert r.results[0].delta_lower is None and any("no lower end" in nt for nt in r.notes)
    s = account(ShuffledMatrix(50, None, 1.0), eps=[0.2])
    assert s.results[0].delta_lower is None and s.params["eps0_source"].startswith("declared")
    assert s.results[0].delta_upper == account(ShuffledMatrix(50, krr_matrix(2, 1.0).tolist()), eps=[0.2],
                                               method="tight").results[0].delta_upper


def _composed_deltas_brute_force(R: np.ndarray, n: int, eps: float, k: int) -> list[float]:
    """The k-fold δ(ε) (same data in every use) of every neighbouring pair of data sets of n users, by enumeration
    of every report vector: the histogram's law of each data set is summed over all R.shape[1]^n report tuples,
    the k-fold law is the outer product of k copies, and δ is the larger of the two directions."""
    import itertools

    m = R.shape[1]
    tuples = list(itertools.product(range(m), repeat=n))
    hist_index = {h: i for i, h in enumerate(sorted({tuple(np.bincount(t, minlength=m)) for t in tuples}))}

    def law(data) -> np.ndarray:
        out = np.zeros(len(hist_index))
        for t in tuples:
            out[hist_index[tuple(np.bincount(t, minlength=m))]] += math.prod(R[x, y] for x, y in zip(data, t))
        return out

    e = math.exp(eps)
    deltas = []
    for others in itertools.combinations_with_replacement(range(R.shape[0]), n - 1):
        for x0, x1 in itertools.combinations(range(R.shape[0]), 2):
            p, q = law((x0, *others)), law((x1, *others))
            pk, qk = p, q
            for _ in range(k - 1):
                pk, qk = np.multiply.outer(pk, p).ravel(), np.multiply.outer(qk, q).ravel()
            deltas.append(max(np.maximum(pk - e * qk, 0).sum(), np.maximum(qk - e * pk, 0).sum()))
    return deltas


@pytest.mark.parametrize("k", [2, 3])
def test_compositions_lower_end_below_composed_brute_force(k):
    """Two compositions: the lower end is the explicit worst pair composed, a lower bound on the composition.
    Brute force over every neighbouring pair of data sets (every report vector enumerated): the mechanism's
    composed δ lies between the ends, and the lower end is one data set's composed δ (exact composition here:
    to the engine's round-off), not merely some number below the upper end."""
    R = krr_matrix(k, 1.0)
    n, eps, comps = 4, 0.5, 2
    r = account(ShuffledMatrix(n, R.tolist()), eps=[eps], compositions=comps).results[0]
    deltas = _composed_deltas_brute_force(R, n, eps, comps)
    truth = max(deltas)
    assert r.delta_lower is not None and 0 < r.delta_lower <= truth * (1 + 1e-12)
    assert truth <= r.delta_upper * (1 + 1e-12)
    assert min(abs(d - r.delta_lower) for d in deltas) <= 1e-9 * r.delta_lower, (r.delta_lower, sorted(deltas))


# --- the sampler-only path ----------------------------------------------------------------------------------
def test_sampler_randomiser_and_what_it_misses():
    from shufflesim.pipeline.fast import resolve_engine
    from shufflesim.protocols.matrix_rr import SamplerProtocol

    R = krr_matrix(3, 1.0)

    class Coded(SamplerProtocol):
        name = "test-coded-krr"

        @classmethod
        def build_sampler(cls, eps0=1.0):
            def sample(x, rng):
                keep = rng.random(x.shape[0]) < R[0, 0] - R[0, 1]
                return np.where(keep, x, rng.integers(0, 3, size=x.shape[0]))  # k-RR: keep w.p. 1 - gamma
            return SamplerRandomiser(sample, 3, 3, eps0)

        def estimate_counts(self, hist):
            return hist @ np.linalg.inv(R).T

    p = Coded.create(600)
    x = np.random.default_rng(0).integers(0, 3, size=600)
    res = p.run(x, rng=1)
    assert res.estimate.shape == (3,) and p.params["eps0_source"].startswith("declared")
    assert len(p.missing()) >= 4 and p.mse_expected(x) is None
    with pytest.raises(ParameterError, match="no fast engine"):
        resolve_engine(p, "fast")
    assert p.privacy().eps <= 1.0
    with pytest.raises(ParameterError, match="declared"):
        SamplerRandomiser(lambda x, rng: x, 3, 3, math.inf)


# --- command line -------------------------------------------------------------------------------------------
def test_cli_errors_are_one_line(tmp_path, capsys):
    from shufflesim.cli.main import main

    (tmp_path / "bad.csv").write_text("0.5, 0.6\n0.5, 0.5\n")
    for argv in (["simulate", "matrix-rr", "--matrix", str(tmp_path / "bad.csv"), "--n", "100"],
                 ["simulate", "matrix-rr", "--n", "100"],
                 ["account", "matrix", "--n", "5", "--matrix", str(tmp_path / "nope.toml"), "--eps", "1"],
                 ["audit", "matrix-rr", "--matrix", str(tmp_path / "bad.csv"), "--n", "5", "--eps", "1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), err
