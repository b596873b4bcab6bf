"""Monte-Carlo runner: reproducibility across worker counts, tidy records, summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shufflesim.pipeline import registry
from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.core.rng import as_generator, as_seed_sequence, trial_seed


def _setup():
    x = load_data("zipf:1.0", data_kind="categorical", n=3000, k=5, rng=0)
    return registry.create("krr", 3000, k=5, eps0=1.0), x


def test_bit_identical_for_one_and_two_workers():
    proto, x = _setup()
    a = run_trials(proto, x, trials=24, rng=42, workers=1).records.drop(columns="seconds")
    b = run_trials(proto, x, trials=24, rng=42, workers=2, chunk_size=5).records.drop(columns="seconds")
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_trial_stream_depends_only_on_point_and_trial():
    proto, x = _setup()
    full = run_trials(proto, x, trials=10, rng=7).records
    # trial 6 run on its own gives the same record
    one = proto.run(x, trial_seed(as_seed_sequence(7), 0, 6))
    assert one.sq_error == full.loc[6, "sq_error"]


def test_different_seeds_differ_and_same_seed_repeats():
    proto, x = _setup()
    a = run_trials(proto, x, trials=5, rng=1).records["sq_error"]
    b = run_trials(proto, x, trials=5, rng=1).records["sq_error"]
    c = run_trials(proto, x, trials=5, rng=2).records["sq_error"]
    assert a.equals(b) and not a.equals(c)


def test_records_are_tidy():
    proto, x = _setup()
    rec = run_trials(proto, x, trials=5, rng=0).records
    assert list(rec["trial"]) == [0, 1, 2, 3, 4]
    assert {"trial", "sq_error", "tv", "seconds"} <= set(rec.columns)
    assert all(rec[c].dtype.kind in "if" for c in rec.columns)


def test_summary_has_theory_columns():
    proto, x = _setup()
    rec = run_trials(proto, x, trials=30, rng=0).records
    s = summarise(rec, proto, x)
    assert s["mse_expected"] == proto.mse_expected(x)
    assert s["mse_ci"][0] < s["mse"] < s["mse_ci"][1]
    assert s["ci_method"].startswith("student-t")


def test_no_global_rng_state_touched():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    proto, x = _setup()
    run_trials(proto, x, trials=3, rng=0)
    assert np.array_equal(np.random.get_state()[1], before)


def test_rng_normalisation():
    g = np.random.default_rng(5)
    assert as_generator(g) is g
    assert as_generator(3).integers(0, 2**62) == as_generator(3).integers(0, 2**62)
    ss = np.random.SeedSequence(9)
    assert as_seed_sequence(ss) is ss
    from shufflesim import ParameterError

    with pytest.raises(ParameterError):
        as_seed_sequence(-1)
    with pytest.raises(ParameterError):
        as_seed_sequence("seed")


#: significance level of the coverage tests' binomial test
COVERAGE_ALPHA = 1e-3


def _coverage(n: int, studies: int, seed0: int) -> int:
    """How many of ``studies`` independent studies of T = 300 trials (k-RR, k = 4, eps0 = 1.5, uniform data of n
    users) have a 95% Student-t interval covering the exact MSE."""
    x = load_data("uniform", data_kind="categorical", n=n, k=4, rng=3)
    p = registry.create("krr", n, k=4, eps0=1.5)
    cov = 0
    for s in range(studies):
        sm = summarise(run_trials(p, x, trials=300, rng=seed0 + s).records, p, x)
        cov += sm["mse_ci"][0] <= sm["mse_expected"] <= sm["mse_ci"][1]
    return cov


def test_ci_coverage_rate_fast():
    """The fast, default-on version of :func:`test_ci_coverage_rate`: R = 60 studies at n = 500 (~2 s).  If the
    interval is calibrated the count of covering studies is Binomial(60, 0.95); the two-sided binomial test at
    significance COVERAGE_ALPHA = 1e-3 rejects a coverage of 80 % or less with probability > 0.5 (e.g. an interval
    half as wide, ~68 % coverage, is rejected with probability ~1)."""
    from scipy import stats

    R = 60
    cov = _coverage(500, R, 20_000)
    assert stats.binomtest(cov, R, 0.95).pvalue > COVERAGE_ALPHA, cov


@pytest.mark.slow
def test_ci_coverage_rate():
    """The 95% Student-t interval covers the exact MSE in 95% of independent studies.

    R = 300 studies of T = 300 trials; the number of covering studies is Binomial(R, 0.95) if the
    interval is calibrated; two-sided binomial test at significance 1e-3.
    """
    from scipy import stats

    R = 300
    cov = _coverage(5000, R, 10_000)
    assert stats.binomtest(cov, R, 0.95).pvalue > COVERAGE_ALPHA, cov


def test_interrupt_keeps_finished_trials_and_flags_incomplete():
    proto, x = _setup()
    seen = []

    def stop_after_three(k):
        seen.append(k)
        if len(seen) == 3:
            raise KeyboardInterrupt

    run = run_trials(proto, x, trials=10, rng=0, on_progress=stop_after_three)
    assert not run.complete and len(run.records) == 3 and run.requested == 10
    full = run_trials(proto, x, trials=10, rng=0).records
    assert run.records["sq_error"].equals(full["sq_error"].iloc[:3])


def test_progress_bar_only_on_a_terminal():
    import io

    from shufflesim.experiments.progress import Progress

    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    quiet = io.StringIO()
    p = Progress(10, stream=quiet)
    p.update(10)
    p.close()
    assert quiet.getvalue() == ""
    tty = FakeTTY()
    p = Progress(4, stream=tty)
    for _ in range(4):
        p.update()
    p.close()
    text = tty.getvalue()
    assert "4/4 trials" in text and "ETA" in text and text.endswith("\n")
