"""The fast engines (shufflesim.pipeline.fast) are equivalent to the faithful pipeline: tested, not assumed.

For every protocol with a fast engine, at two parameter points each (small n; skewed or constant data):

1. **Same distribution.**  The scalar statistic the analyser releases (the signed error of a sum, the
   debiased count of category 0 for histograms), the squared error and the metrics (``tv``) are drawn
   T = 800 times under each engine (fixed seeds) and compared with the two-sample Kolmogorov–Smirnov
   test.  The fast engine runs as run_trials and sweeps run it: in blocks, vectorised over trials where
   the protocol has ``sample_fast_batch`` (every built-in fast engine; tests/test_fast_batch.py compares
   each batch sampler with its per-trial ``sample_fast``), else one ``sample_fast`` per trial.
   Family-wise level α = 0.01 over every KS test in this file (Bonferroni, :data:`ALPHA_KS` per test), so
   a correct implementation fails with probability ≤ 1 % over seeds.  Resolution: with 800 vs 800
   samples the test rejects, with probability ≥ 1/2, any pair of distributions whose CDFs differ by
   D ≥ √(−ln(α/2)/2)·√(2/800) ≈ 0.11 somewhere; :func:`test_ks_power_against_a_wrong_sampler` shows
   that it does reject a stated wrong alternative (k-RR at ε0 = 0.8 passed off as ε0 = 1 at n = 400,
   k = 10: the estimate's standard deviation 35 % larger).
2. **First two moments equal the theory hooks.**  With T = 10 000 fast-engine trials, the mean signed
   error is 0 (unbiased) and the mean squared error equals ``mse_expected(data)`` (variance = the exact
   MSE), each within z·(standard error) where z is the Bonferroni quantile for a family-wise α = 0.01 over
   every moment check in this file.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.core.rng import trial_seed
from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials
from shufflesim.pipeline import registry
from shufflesim.pipeline.fast import fast_records, resolve_engine, run_fast, summarise_data
from shufflesim.errors import ParameterError

CASES = [
    ("krr", 30, dict(k=3, eps0=1.0), "constant:0"),
    ("krr", 400, dict(k=10, eps0=2.0), "zipf:1.5"),
    ("central-laplace-hist", 50, dict(k=4, eps=1.0), "constant:3"),
    ("central-gaussian-hist", 300, dict(k=6, eps=1.0, delta=1e-5), "zipf:2"),
    ("blanket-sum", 40, dict(eps=2.0, k=3, gamma=0.5, mode="tight"), "constant:0.37"),
    ("blanket-sum", 200, dict(eps=1.0, k=6, gamma=0.3, mode="tight"), "beta:0.5,3"),
    ("recursive-sum", 60, dict(eps=2.0, messages=3, precisions=(3, 4, 5), gammas=(0.2, 0.3, 0.5), mode="tight"),
     "constant:0.81"),
    ("recursive-sum", 150, dict(eps=2.0, messages=2, precisions=(4, 6), gammas=(0.3, 0.4), mode="tight"),
     "beta:0.5,3"),
    ("ikos-sum", 30, dict(eps=1.0), "constant:0.5"),
    ("ikos-sum", 200, dict(eps=0.5), "beta:0.5,3"),
    ("cheu-sum", 20, dict(eps=2.0, messages=4, gamma=0.5), "constant:0.3"),
    ("cheu-sum", 100, dict(eps=1.0, messages=10, gamma=0.3), "beta:0.5,3"),
    ("local-rr-sum", 25, dict(eps=1.0), "constant:0.7"),
    ("local-rr-sum", 300, dict(eps=0.5), "beta:0.5,3"),
    ("local-laplace-sum", 10, dict(eps=1.0), "constant:1"),
    ("local-laplace-sum", 200, dict(eps=2.0), "beta:0.5,3"),
    ("central-laplace-sum", 10, dict(eps=0.5), "beta:0.5,3"),
    ("central-dlap-sum", 20, dict(eps=1.0), "constant:0.45"),
    ("central-dlap-sum", 200, dict(eps=0.5), "beta:0.5,3"),
    ("matrix-rr", 150, dict(matrix=[[0.5, 0.15, 0.15, 0.2], [0.15, 0.5, 0.15, 0.2], [0.15, 0.15, 0.5, 0.2]]), "zipf:1.5"),
]
IDS = [f"{c[0]}-n{c[1]}-{c[3]}" for c in CASES]

T_KS, T_MOM = 800, 10_000
N_KS = 3 * len(CASES) + 2  # up to three KS tests per case, plus the power check's two
ALPHA_KS = 0.01 / N_KS
N_MOM = 2 * len(CASES)
Z_MOM = float(stats.norm.isf(0.01 / (2 * N_MOM)))  # two-sided, Bonferroni


def _setup(name, n, params, data):
    cls = registry.get(name)
    x = load_data(data, data_kind=cls.data_kind, n=n, k=cls.data_k(params), rng=7)
    return cls.create(n, **params), x


def _stat(res) -> float:
    """The released scalar: the signed error of a sum, the debiased count of category 0 for histograms."""
    err = np.subtract(res.estimate, res.truth, dtype=float)
    return float(err) if np.ndim(err) == 0 else float(err[0])


def _draw(proto, x, engine: str, trials: int, seed: int) -> dict[str, np.ndarray]:
    """Columns ``stat`` (the released statistic), ``sq_error`` and the metrics of ``trials`` trials.

    The fast engine runs as run_trials and sweeps run it (blocks; vectorised where the protocol has
    ``sample_fast_batch``).  Those records hold no estimate vector, so for histograms ``stat`` comes from
    single fast runs (:func:`run_fast`, the per-trial sampler the blocks fall back to)."""
    root = np.random.SeedSequence(seed)
    truth = proto.truth(x)
    if engine == "fast":
        s = summarise_data(proto, x)
        cols = fast_records(proto, s, truth, root, 0, 0, trials)
        cols["stat"] = cols["error"] if "error" in cols else np.array(
            [_stat(run_fast(proto, s, trial_seed(root, 9, t), truth)) for t in range(trials)])
        return cols
    runs = [proto.run(x, trial_seed(root, 0, t), truth=truth) for t in range(trials)]
    cols = {"stat": np.array([_stat(r) for r in runs]), "sq_error": np.array([r.sq_error for r in runs])}
    for m in runs[0].metrics:
        cols[m] = np.array([r.metrics[m] for r in runs])
    return cols


@pytest.fixture(scope="module")
def protocols():
    return {i: _setup(*c) for i, c in zip(IDS, CASES)}


def test_registered_protocols_with_sample_fast_are_all_covered():
    from shufflesim.pipeline.protocol import Protocol

    with_fast = {nm for nm in registry.names() if registry.get(nm).sample_fast is not Protocol.sample_fast}
    assert with_fast == {c[0] for c in CASES}


@pytest.mark.parametrize("case", IDS)
def test_fast_engine_has_the_faithful_distribution(protocols, case):
    proto, x = protocols[case]
    faithful = _draw(proto, x, "faithful", T_KS, seed=11)
    fast = _draw(proto, x, "fast", T_KS, seed=12)
    assert set(faithful) <= set(fast)
    for what in faithful:
        p = stats.ks_2samp(faithful[what], fast[what]).pvalue
        assert p > ALPHA_KS, f"{case}: {what} differs between engines (KS p = {p:.2g} <= {ALPHA_KS:.2g})"


@pytest.mark.parametrize("case", IDS)
def test_fast_engine_moments_equal_the_theory(protocols, case):
    proto, x = protocols[case]
    cols = _draw(proto, x, "fast", T_MOM, seed=21)
    stat, sq = cols["stat"], cols["sq_error"]
    se = stat.std(ddof=1) / math.sqrt(T_MOM)
    assert abs(stat.mean()) <= Z_MOM * se, f"{case}: biased, mean error {stat.mean():.4g} (se {se:.3g})"
    expected = proto.mse_expected(x)
    se2 = sq.std(ddof=1) / math.sqrt(T_MOM)
    assert abs(sq.mean() - expected) <= Z_MOM * se2, \
        f"{case}: mean squared error {sq.mean():.6g} vs mse_expected {expected:.6g} (se {se2:.3g})"


def test_ks_power_against_a_wrong_sampler():
    """The KS check above rejects a stated wrong alternative: k-RR at eps0 = 0.8 passed off as eps0 = 1."""
    right, x = _setup("krr", 400, dict(k=10, eps0=1.0), "zipf:1.5")
    wrong, _ = _setup("krr", 400, dict(k=10, eps0=0.8), "zipf:1.5")
    a = _draw(right, x, "faithful", T_KS, seed=31)
    b = _draw(wrong, x, "fast", T_KS, seed=32)
    assert min(stats.ks_2samp(a[c], b[c]).pvalue for c in ("stat", "sq_error")) < ALPHA_KS


def test_engine_choice_and_errors():
    proto, x = _setup("krr", 50, dict(k=3, eps0=1.0), "uniform")
    assert resolve_engine(proto, "auto") == "fast"
    assert resolve_engine(proto, "faithful") == "faithful"
    with pytest.raises(ParameterError, match="engine must be one of"):
        resolve_engine(proto, "quick")
    from shufflesim.pipeline.protocol import Protocol

    class NoFast(type(proto)):
        sample_fast = Protocol.sample_fast

    nf = NoFast(n=proto.n, randomiser=proto.randomiser, shuffler=proto.shuffler, analyser=proto.analyser,
                params=proto.params)
    assert resolve_engine(nf, "auto") == "faithful"
    with pytest.raises(ParameterError, match="has no fast engine"):
        resolve_engine(nf, "fast")


def test_run_trials_engine_is_reproducible_and_worker_independent():
    proto, x = _setup("krr", 200, dict(k=5, eps0=1.0), "zipf:1.5")
    one = run_trials(proto, x, trials=60, rng=5, engine="fast")
    two = run_trials(proto, x, trials=60, rng=5, engine="auto", workers=2)
    assert one.engine == two.engine == "fast"
    cols = [c for c in one.records.columns if c != "seconds"]
    assert one.records[cols].equals(two.records[cols])
    faithful = run_trials(proto, x, trials=5, rng=5)
    assert faithful.engine == "faithful"


@pytest.mark.parametrize("case", ["krr-n400-zipf:1.5", "cheu-sum-n20-constant:0.3"])
def test_fast_blocks_do_not_depend_on_how_trials_are_split(protocols, case):
    """Batch (k-RR) and per-trial (cheu-sum with its batch sampler hidden) block paths: any split of [0, 700)
    gives the same records."""
    proto, x = protocols[case]
    if proto.name == "cheu-sum":  # the per-trial fallback of fast_block
        proto = copy.copy(proto)
        proto.sample_fast_batch = None
    s, truth, root = summarise_data(proto, x), proto.truth(x), np.random.SeedSequence(3)
    whole = fast_records(proto, s, truth, root, 1, 0, 700)
    for cuts in ([0, 1, 255, 256, 257, 600, 700], [0, 300, 512, 513, 700]):
        pieces = [fast_records(proto, s, truth, root, 1, a, b) for a, b in zip(cuts, cuts[1:])]
        for k in whole:
            assert np.array_equal(np.concatenate([p[k] for p in pieces]), whole[k])
    other = fast_records(proto, s, truth, root, 2, 0, 700)  # another grid point: other streams
    assert not np.array_equal(other["sq_error"], whole["sq_error"])
