"""The vectorised fast-engine samplers (``sample_fast_batch``) of the summation protocols draw the same law
as their per-trial samplers (``sample_fast``), and the exact MSE.

``fast_block`` uses ``sample_fast_batch`` where a protocol has it, so since the batch samplers exist the
per-trial ones no longer run in sweeps or ``validate``; tests/test_fast_engines.py compares the (batch) fast
engine with the faithful pipeline, this file compares it with the per-trial sampler it replaces:

1. **Same law.**  For every case, T = 2000 trials of each sampler (fixed, distinct seeds; the per-trial one
   through ``fast_block``'s own fallback, the batch attribute hidden) and the two-sample Kolmogorov–Smirnov
   test on the signed error of the estimate (the released statistic: the squared error is a function of
   it).  Family-wise level α = 0.01 over the KS tests of this file (Bonferroni, :data:`ALPHA_KS` each), so
   a correct implementation fails with probability ≤ 1 % over seeds (at most: the estimates lie on a
   lattice, where KS is conservative).  Resolution: with 2000 vs 2000 samples the test rejects, with
   probability ≥ 1/2, any pair of laws whose CDFs differ by D ≥ √(−ln(α/2)/2)·√(2/2000) ≈ 0.063
   somewhere; :func:`test_ks_power_against_a_wrong_batch_sampler` shows it rejects a stated wrong
   alternative (the blanket drawn with γ·1.25).
2. **MSE equals the theory.**  T = 20 000 batch trials: the mean squared error equals ``mse_expected`` and
   the mean error is 0, each within z·(standard error), z the Bonferroni quantile for a family-wise
   α = 0.01 over every moment check of this file (the CLT interval of a mean of T i.i.d. draws).
3. **Reproducible.**  Records do not depend on how the trials are split into chunks (blocks are seeded by
   ``SeedSequence(root, spawn_key=(2, point, block))`` and drawn whole) or workers (slow test: 1 vs 2
   processes of ``run_trials``).

The cases cover both ways the batch samplers draw rounding (shufflesim.pipeline.fast.PER_USER_MAX): large
groups of equal inputs (binomials), small ones (one uniform per user), a mix of the two, a data set large
enough that a block is drawn in several row-chunks (BATCH_CELLS), and IKOS totals that wrap modulo q.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials
from shufflesim.pipeline import fast, registry
from shufflesim.pipeline.fast import fast_records, summarise_data


def _mixed(n_single: int = 60) -> np.ndarray:
    """Large groups (30 and 12 equal inputs), small groups (5 values x 3 users) and single users."""
    rng = np.random.default_rng(42)
    return np.concatenate([np.full(30, 0.37), np.full(12, 0.9), np.repeat(rng.random(5), 3),
                           rng.beta(0.5, 3.0, n_single)])


CASES = [
    ("blanket-sum", dict(eps=2.0, k=3, gamma=0.5, mode="tight"), "constant:0.37", 40),
    ("blanket-sum", dict(eps=1.0, k=6, gamma=0.3, mode="tight"), "beta:0.5,3", 200),
    ("blanket-sum", dict(eps=1.0, k=5, gamma=0.2, mode="tight"), "mixed", None),
    ("blanket-sum", dict(eps=1.0, k=3, gamma=0.14, mode="tight"), "uniform", 1000),  # row-chunks of a block
    ("recursive-sum", dict(eps=2.0, messages=3, precisions=(3, 4, 5), gammas=(0.2, 0.3, 0.5), mode="tight"),
     "constant:0.81", 60),
    ("recursive-sum", dict(eps=2.0, messages=2, precisions=(4, 6), gammas=(0.3, 0.4), mode="tight"),
     "beta:0.5,3", 150),
    ("recursive-sum", dict(eps=2.0, messages=2, precisions=(3, 7), gammas=(0.1, 0.25), mode="tight"), "mixed", None),
    ("ikos-sum", dict(eps=1.0), "constant:0.5", 30),
    ("ikos-sum", dict(eps=0.5), "mixed", None),
    ("ikos-sum", dict(eps=1.0, q=2**64 - 1), "constant:0", 30),  # half the totals wrap to q - |noise|
    ("ikos-sum", dict(eps=0.05, q=400), "constant:0.5", 30),  # noise sd ~170 vs q/2 = 200: frequent wraps
    ("cheu-sum", dict(eps=2.0, messages=4, gamma=0.5), "constant:0.3", 20),
    ("cheu-sum", dict(eps=1.0, messages=10, gamma=0.3), "mixed", None),
    ("local-rr-sum", dict(eps=1.0), "constant:0.7", 25),
    ("local-rr-sum", dict(eps=0.5), "mixed", None),
    ("local-laplace-sum", dict(eps=2.0), "beta:0.5,3", 200),
    ("central-laplace-sum", dict(eps=0.5), "beta:0.5,3", 10),
    ("central-dlap-sum", dict(eps=1.0), "constant:0.45", 20),
    ("central-dlap-sum", dict(eps=0.5), "mixed", None),
]
IDS = [f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)]

T_KS, T_MOM = 2000, 20_000
N_KS = len(CASES) + 2  # one KS test a case, plus the power check's two
ALPHA_KS = 0.01 / N_KS
N_MOM = 2 * len(CASES)
Z_MOM = float(stats.norm.isf(0.01 / (2 * N_MOM)))  # two-sided, Bonferroni


def _setup(name, params, data, n):
    cls = registry.get(name)
    x = _mixed() if data == "mixed" else load_data(data, data_kind=cls.data_kind, n=n, rng=7)
    return cls.create(x.shape[0], **params), x


def _per_trial(proto):
    """The same protocol object with its batch sampler hidden: fast_block falls back to sample_fast."""

    class PerTrial(type(proto)):
        sample_fast_batch = None

    other = PerTrial.__new__(PerTrial)
    other.__dict__.update(proto.__dict__)
    return other


def _records(proto, x, trials, seed, point=0):
    return fast_records(proto, summarise_data(proto, x), proto.truth(x), np.random.SeedSequence(seed), point, 0,
                        trials)


@pytest.fixture(scope="module")
def protocols():
    return {i: _setup(*c) for i, c in zip(IDS, CASES)}


def test_every_real_sum_with_a_fast_engine_has_a_batch_sampler_and_is_covered():
    from shufflesim.pipeline.protocol import Protocol

    scalar = {nm for nm in registry.names() if registry.get(nm).sample_fast is not Protocol.sample_fast
              and registry.get(nm).data_kind == "real"}
    assert scalar == {c[0] for c in CASES}
    assert all(callable(getattr(registry.get(nm), "sample_fast_batch", None)) for nm in scalar)


def test_the_cases_exercise_every_drawing_path(protocols):
    """Large and small groups, and a block split into row-chunks (else the cases would not test them)."""
    counts = summarise_data(*protocols[IDS[2]]).counts
    assert counts.max() > fast.PER_USER_MAX and (counts <= fast.PER_USER_MAX).any() and (counts > 1).sum() > 2
    n_big = summarise_data(*protocols[IDS[3]]).counts.shape[0]
    assert fast.BATCH_CELLS // n_big < fast.FAST_BLOCK


@pytest.mark.parametrize("case", IDS)
def test_batch_sampler_has_the_per_trial_law(protocols, case):
    proto, x = protocols[case]
    batch = _records(proto, x, T_KS, seed=1)
    single = _records(_per_trial(proto), x, T_KS, seed=2)
    assert set(batch) == set(single) == {"sq_error", "error"}
    assert np.array_equal(batch["sq_error"], batch["error"] ** 2)  # exact: the column is computed so
    p = stats.ks_2samp(batch["error"], single["error"]).pvalue
    assert p > ALPHA_KS, f"{case}: batch and per-trial laws differ (KS p = {p:.2g} <= {ALPHA_KS:.2g})"


@pytest.mark.parametrize("case", IDS)
def test_batch_sampler_moments_equal_the_theory(protocols, case):
    proto, x = protocols[case]
    cols = _records(proto, x, T_MOM, seed=3)
    err, sq = cols["error"], cols["sq_error"]
    se = err.std(ddof=1) / math.sqrt(T_MOM)
    expected = proto.mse_expected(x)
    if expected is None:  # ikos-sum with a small q: overflow makes the rounding+noise formula inexact
        assert proto.name == "ikos-sum" and proto.params["q"] == 400
        return
    assert abs(err.mean()) <= Z_MOM * se, f"{case}: biased, mean error {err.mean():.4g} (se {se:.3g})"
    se2 = sq.std(ddof=1) / math.sqrt(T_MOM)
    assert abs(sq.mean() - expected) <= Z_MOM * se2, \
        f"{case}: mean squared error {sq.mean():.6g} vs mse_expected {expected:.6g} (se {se2:.3g})"


def test_ks_power_against_a_wrong_batch_sampler(protocols):
    """The KS check rejects a stated wrong alternative: blanket-sum's batch drawn with γ·1.25 (0.3 -> 0.375)
    but debiased with γ = 0.3, at n = 200 (beta data)."""
    proto, x = protocols[IDS[1]]
    wrong = _per_trial(proto)
    gamma = proto.gamma

    def wrong_batch(summary, truth, rng, size):
        lo, frac = fast.rounded_parts(summary.values, proto.k)
        total = fast.blanket_total_batch(lo, frac, summary.counts, proto.k, 1.25 * gamma, rng, size)
        return fast.scalar_columns(proto.analyser.level.debias(total, proto.n) / proto.k, truth)

    wrong.sample_fast_batch = wrong_batch
    a = _records(_per_trial(proto), x, T_KS, seed=4)
    b = _records(wrong, x, T_KS, seed=5)
    assert min(stats.ks_2samp(a[c], b[c]).pvalue for c in ("error", "sq_error")) < ALPHA_KS


@pytest.mark.parametrize("case", [IDS[2], IDS[3], IDS[6], IDS[10]])
def test_batch_records_do_not_depend_on_how_trials_are_split(protocols, case):
    proto, x = protocols[case]
    whole = _records(proto, x, 700, seed=6, point=1)
    s, truth, root = summarise_data(proto, x), proto.truth(x), np.random.SeedSequence(6)
    for cuts in ([0, 1, 255, 256, 257, 600, 700], [0, 300, 512, 513, 700]):
        pieces = [fast_records(proto, s, truth, root, 1, a, b) for a, b in zip(cuts, cuts[1:])]
        for k in whole:
            assert np.array_equal(np.concatenate([p[k] for p in pieces]), whole[k])
    assert not np.array_equal(_records(proto, x, 700, seed=6, point=2)["error"], whole["error"])


@pytest.mark.slow  # ~15 s of process start-up under load; the split test above covers the mechanism
def test_run_trials_with_batches_is_worker_independent(protocols):
    """Two worker processes give the records of one (they run fast_records on sub-ranges of trials)."""
    proto, x = protocols[IDS[3]]
    one = run_trials(proto, x, trials=600, rng=5, engine="fast")
    two = run_trials(proto, x, trials=600, rng=5, engine="fast", workers=2)
    cols = [c for c in one.records.columns if c != "seconds"]
    assert one.records[cols].equals(two.records[cols])
