"""Real-summation baselines: cheu-sum, local-rr-sum, local-laplace-sum, central-laplace-sum, central-dlap-sum.

Randomiser / noise distributions (chi-square, binomial and KS tests), unbiasedness and coverage of the exact
MSE, the worst cases, and brute-force checks of cheu-sum's privacy bound.  Fixed seeds; family-wise level
ALPHA = 1e-3 per test, Bonferroni within a test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim import ParameterError
from shufflesim.pipeline import registry
from shufflesim.cli.main import main as cli_main
from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.protocols.sum_baselines import (
    CheuRandomiser,
    LocalLaplaceRandomiser,
    LocalRRRandomiser,
    cheu_delta,
    cheu_messages,
    local_rr_worst_mse,
)
from shufflesim.pipeline.shuffler import TrustedCurator
from shufflesim.experiments.stats import bonferroni_level

ALPHA = 1e-3


# ------------------------------------------------------------------------------------------ randomisers
def test_cheu_randomiser_bits():
    """Every bit position: P(1) = 1 − γ/2 inside the unary code, γ/2 outside (binomial test per position);
    a user's count of ones is Bin(a, 1−γ/2) + Bin(r−a, γ/2) (chi-square)."""
    r, g, n = 6, 0.3, 20_000
    rnd = CheuRandomiser(r, g)
    rng = np.random.default_rng(2)
    q = g / 2
    tests = 3 * (r + 1)
    for a in (0, 2, r):
        y = rnd.randomise(np.full(n, a / r), rng)
        assert y.shape == (n, r) and y.dtype == np.uint8 and set(np.unique(y)) <= {0, 1}
        for j in range(r):
            p1 = 1 - q if j < a else q
            assert stats.binomtest(int(y[:, j].sum()), n, p1).pvalue > ALPHA / tests
        ones = np.bincount(y.sum(axis=1, dtype=np.int64), minlength=r + 1)  # numpy 1.26: bincount takes no uint64
        pmf = np.convolve(stats.binom.pmf(np.arange(a + 1), a, 1 - q), stats.binom.pmf(np.arange(r - a + 1), r - a, q))
        assert stats.chisquare(ones, n * pmf).pvalue > ALPHA / tests


def test_cheu_randomiser_chunking_does_not_change_the_law():
    r, g = 5, 0.4
    x = np.random.default_rng(0).random(3000)
    small = CheuRandomiser(r, g, chunk_bits=7)  # many chunks
    y = small.randomise(x, np.random.default_rng(1))
    assert y.shape == (3000, r)
    # unary code structure is statistical, so compare the count of ones with its exact mean
    mean = np.sum((1 - g) * np.round(x * r, 12) + g * r / 2)
    sd = math.sqrt(np.sum(r * g * (2 - g) / 4 + (1 - g) ** 2 * (x * r % 1) * (1 - x * r % 1)))
    assert abs(y.sum() - mean) < stats.norm.ppf(1 - ALPHA / 2) * sd


def test_local_rr_randomiser():
    eps, n = 0.7, 20_000
    rnd = LocalRRRandomiser(eps)
    p = 1 / (math.exp(eps) + 1)
    rng = np.random.default_rng(4)
    xs = (0.0, 0.25, 0.5, 1.0)
    for x in xs:
        y = rnd.randomise(np.full(n, x), rng)[:, 0]
        assert stats.binomtest(int(y.sum()), n, p + (1 - 2 * p) * x).pvalue > ALPHA / len(xs)


def test_local_laplace_randomiser():
    eps, n = 0.8, 20_000
    x = np.random.default_rng(0).random(n)
    y = LocalLaplaceRandomiser(eps).randomise(x, np.random.default_rng(5))[:, 0]
    assert stats.kstest(y - x, stats.laplace(scale=1 / eps).cdf).pvalue > ALPHA


def test_central_noise_distributions():
    """central-laplace-sum: estimate − Σx ~ Lap(1/ε) (KS); central-dlap-sum: p·estimate − Σx̄ ~ DLap(α)
    (chi-square over −6..6 plus two tail bins); data on the grid so the rounding is deterministic."""
    n, T = 50, 20_000
    x = np.full(n, 0.5)
    lap = registry.create("central-laplace-sum", n, eps=0.9)
    view = TrustedCurator().shuffle(x[:, None], np.random.SeedSequence(0))
    rng = np.random.default_rng(6)
    noise = np.array([lap.analyser.analyse(view, rng) for _ in range(T)]) - x.sum()
    assert stats.kstest(noise, stats.laplace(scale=1 / 0.9).cdf).pvalue > ALPHA / 2
    dl = registry.create("central-dlap-sum", n, eps=1.0, p=2)
    alpha = dl.params["alpha"]
    assert alpha == pytest.approx(math.exp(-0.5))
    xbar = (x * 2).astype(np.int64)
    view = TrustedCurator().shuffle(xbar[:, None], np.random.SeedSequence(1))
    z = np.rint(np.array([dl.analyser.analyse(view, rng) for _ in range(T)]) * 2 - xbar.sum()).astype(int)
    ks = np.arange(-6, 7)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ks)
    tail = (1 - pmf.sum()) / 2
    obs = np.r_[np.sum(z < -6), [np.sum(z == k) for k in ks], np.sum(z > 6)]
    assert stats.chisquare(obs, T * np.r_[tail, pmf, tail]).pvalue > ALPHA / 2


# ------------------------------------------------------------------------------ unbiased, MSE coverage
PROTOCOLS = [
    ("cheu-sum", {"eps": 1.0}),
    ("local-rr-sum", {"eps": 1.0}),
    ("local-laplace-sum", {"eps": 1.0}),
    ("central-laplace-sum", {"eps": 0.5}),
    ("central-dlap-sum", {"eps": 0.5}),
]
DATASETS = ["constant:0.61", "uniform", "adult-age"]


def test_unbiased_and_mse_interval_covers_exact_value():
    n, T = 3000, 300
    tests = 2 * len(PROTOCOLS) * len(DATASETS)
    level = bonferroni_level(1 - ALPHA, tests)
    zcrit = stats.norm.ppf(1 - ALPHA / (2 * tests))
    for a, (name, kw) in enumerate(PROTOCOLS):
        proto = registry.create(name, n, **kw)
        for b, spec in enumerate(DATASETS):
            x = load_data(spec, data_kind="real", n=n, rng=40 + b)
            run = run_trials(proto, x, trials=T, rng=1000 + 10 * a + b)
            exp = proto.mse_expected(x)
            z = run.records["error"].mean() / math.sqrt(exp / T)
            assert abs(z) < zcrit, (name, spec, z)
            s = summarise(run.records, proto, x, level=level)
            lo, hi = s["mse_ci"]
            assert lo <= exp <= hi, (name, spec, s)
            assert exp <= proto.mse_worst() * (1 + 1e-12)


def test_worst_cases():
    n = 10_000
    # LocalDP row of seed 004 Table 3: n(e^eps/(e^eps-1)^2 + 1/4), attained at x = 1/2
    p = registry.create("local-rr-sum", n, eps=0.5)
    assert p.mse_worst() == pytest.approx(local_rr_worst_mse(n, 0.5)) == p.mse_expected(np.full(n, 0.5))
    assert p.mse_expected(np.zeros(n)) < p.mse_worst()
    c = registry.create("cheu-sum", n, eps=1.0, gamma=0.3)
    r = c.params["messages"]
    assert c.mse_worst() == pytest.approx(c.mse_expected(np.full(n, 0.5 / r)), rel=1e-12)
    assert registry.create("central-laplace-sum", n, eps=0.5).mse_worst() == 8.0
    d = registry.create("central-dlap-sum", n, eps=0.5)
    assert d.params["p"] == 100
    assert d.mse_worst() == pytest.approx(d.mse_expected(np.full(n, 0.005)), rel=1e-12)


def test_cheu_message_counts():
    # seed 004 Table 3 prints 50, 100, 159, 317 (paper claims) for the four (n, eps) columns
    assert [cheu_messages(n, e) for n, e in ((10**4, 0.5), (10**4, 1.0), (10**5, 0.5), (10**5, 1.0))] == [50, 100, 159, 317]


# ------------------------------------------------------------------------------- cheu privacy, brute force
def _hockey(p, q, eps):
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


def _count_pmf(a: int, r: int, q: float, m: int) -> np.ndarray:
    """Target count Bin(a, 1−q) + Bin(r−a, q) plus Bin(m, ½)."""
    t = np.convolve(stats.binom.pmf(np.arange(a + 1), a, 1 - q), stats.binom.pmf(np.arange(r - a + 1), r - a, q))
    return np.convolve(t, stats.binom.pmf(np.arange(m + 1), m, 0.5))


def test_cheu_extreme_inputs_are_the_worst_pair():
    r, q, eps = 5, 0.2, 0.3
    for m in (0, 3, 20, 80):
        worst = _hockey(_count_pmf(r, r, q, m), _count_pmf(0, r, q, m), eps)
        for a in range(r + 1):
            for b in range(r + 1):
                assert _hockey(_count_pmf(a, r, q, m), _count_pmf(b, r, q, m), eps) <= worst + 1e-15


@pytest.mark.parametrize("n,r,gamma,eps", [(6, 3, 0.6, 0.5), (10, 2, 0.3, 0.2), (8, 4, 0.8, 1.0)])
def test_cheu_bound_against_brute_force(n, r, gamma, eps):
    """cheu_delta (binned, truncated) ≥ the unbinned blanket mixture ≥ the exact δ of the count N."""
    q = gamma / 2
    n0 = (n - 1) * r
    mix = sum(stats.binom.pmf(m, n0, gamma) * _hockey(_count_pmf(r, r, q, m), _count_pmf(0, r, q, m), eps)
              for m in range(n0 + 1))
    bound = cheu_delta(n, r, gamma, eps)
    assert bound >= mix * (1 - 1e-12)
    # exact: the count is Bin(A, 1−q) + Bin(T−A, q) with A the sum of the x̄'s; the target moves a -> b
    exact = 0.0
    for a in range(r + 1):
        for b in range(r + 1):
            for others in range(n0 + 1):
                pa, pb = _count_pmf(a, r, q, 0), _count_pmf(b, r, q, 0)
                rest = np.convolve(stats.binom.pmf(np.arange(others + 1), others, 1 - q),
                                   stats.binom.pmf(np.arange(n0 - others + 1), n0 - others, q))
                exact = max(exact, _hockey(np.convolve(pa, rest), np.convolve(pb, rest), eps))
    assert mix >= exact * (1 - 1e-12)
    # with one bin per value of M the binning is exact up to the truncated tails
    assert cheu_delta(n, r, gamma, eps, bins=n0 + 2) == pytest.approx(mix, rel=1e-9, abs=1e-15)


def test_cheu_calibration_certifies():
    n, eps = 3000, 1.0
    p = registry.create("cheu-sum", n, eps=eps)
    delta = 1 / n**2
    g = p.params["gamma"]
    assert p.privacy().delta <= delta and cheu_delta(n, p.params["messages"], g, eps) <= delta
    assert cheu_delta(n, p.params["messages"], g * 0.99, eps) > delta


# -------------------------------------------------------------------------------------- parameters, CLI
@pytest.mark.parametrize("name,kw,msg", [
    ("cheu-sum", {}, "needs --eps"),
    ("cheu-sum", {"eps": 1.0, "messages": 0}, "messages must be"),
    ("local-rr-sum", {"eps": 0.0}, "eps must be in"),
    ("central-dlap-sum", {"eps": 1.0, "p": 0}, "p must be"),
])
def test_invalid_parameters(name, kw, msg):
    with pytest.raises(ParameterError, match=msg):
        registry.create(name, 1000, **kw)


@pytest.mark.parametrize("name,extra", [
    ("cheu-sum", []), ("local-rr-sum", []), ("local-laplace-sum", []), ("central-laplace-sum", []),
    ("central-dlap-sum", ["--p", "40"]),
])
def test_cli_json(name, extra, capsys):
    args = ["simulate", name, "--n", "3000", "--eps", "1", *extra, "--data", "uniform", "--trials", "20",
            "--seed", "2", "--json"]
    assert cli_main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == name and out["privacy"]["eps"] == 1.0
    assert out["mse_worst"] >= out["mse_expected"] > 0
    assert "mse_bound" in out and out["bits_per_message"] >= 1
