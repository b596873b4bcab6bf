"""Issue 21 (3): simulation at population scale -- data as a multiset for the fast engines at n = 1e9, the
streamed faithful engine, and the privacy reported at that n.

Oracles: each protocol's exact MSE (its ``mse_expected`` formula, evaluated on the same multiset through
``mse_expected_summary``); the unchunked faithful engine (bit-identity with one chunk); the rows path (the fast
engine reads only the multiset, so rows and counts give identical records for the same seed).  Statistical
checks: the trial mean of the squared errors against the exact MSE, |mean - exact| <= z * s / sqrt(T) with s
the trials' standard deviation and z = 3.29 (two-sided significance 1e-3 for the normal approximation of the
trial mean, which holds here: the squared errors have finite variance), fixed seeds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from shufflesim.errors import NotApplicableError, ResourceError
from shufflesim.experiments.data import REAL_COUNTS_GRID, load_data, real_counts
from shufflesim.experiments.montecarlo import run_trials, run_trials_streamed
from shufflesim.pipeline import registry
from shufflesim.pipeline.fast import DataSummary, mse_expected_of

Z = 3.29  # two-sided 1e-3
N9 = 10**9


def _agrees(values: np.ndarray, exact: float) -> bool:
    return abs(values.mean() - exact) <= Z * values.std(ddof=1) / np.sqrt(values.size)


# --------------------------------------------------------------------------- (a) fast engines from counts

EXPLICIT = {  # parameters given, so that creating the protocol runs no calibration search
    "krr": {"k": 5, "gamma": 0.5},
    "blanket-sum": {"k": 10, "gamma": 0.3},
    "recursive-sum": {"precisions": (4, 8), "gammas": (0.3, 0.4)},
    "ikos-sum": {"eps": 1.0},
    "cheu-sum": {"eps": 1.0, "messages": 8, "gamma": 0.3},
    "local-rr-sum": {"eps": 1.0},
}

SUMS_1E9 = [  # protocols creatable at n = 1e9 in about a second (cheu-sum: tests/test_cheu_scale.py)
    ("blanket-sum", {"eps": 1.0, "mode": "paper"}),
    ("recursive-sum", {"eps": 1.0, "mode": "paper"}),
    ("ikos-sum", {"eps": 1.0}),
    ("central-dlap-sum", {"eps": 1.0}),
    ("local-rr-sum", {"eps": 1.0}),
    ("local-laplace-sum", {"eps": 1.0}),
    ("central-laplace-sum", {"eps": 1.0}),
]


@pytest.mark.parametrize("name,params", SUMS_1E9)
def test_summation_fast_engine_from_counts_at_1e9_matches_exact_mse(name, params):
    proto = registry.create(name, N9, **params)
    data = real_counts("beta:2,5", n=N9, rng=1)
    assert isinstance(data, DataSummary) and data.n == N9 and data.values.size <= REAL_COUNTS_GRID + 2
    run = run_trials(proto, data, trials=1000, rng=2, engine="fast")
    assert run.complete and run.engine == "fast"
    exact = mse_expected_of(proto, data)
    assert exact is not None and exact > 0
    assert _agrees(run.records["sq_error"].to_numpy(), exact)
    assert _agrees(run.records["error"].to_numpy(), 0.0)  # unbiased


@pytest.mark.parametrize("name,params", [("central-laplace-hist", {"k": 10, "eps": 1.0}),
                                         ("central-gaussian-hist", {"k": 10, "eps": 1.0, "delta": 1e-9})])
def test_central_histograms_from_counts_at_1e9_match_exact_mse(name, params):
    from shufflesim.experiments.data import data_counts

    proto = registry.create(name, N9, **params)
    data = data_counts("zipf:1.1", n=N9, k=10, rng=1)
    run = run_trials(proto, data, trials=1000, rng=2, engine="fast")
    assert _agrees(run.records["sq_error"].to_numpy(), proto.mse_expected(data))


def test_cheu_from_counts():
    # a given blanket probability (no calibration) at n = 1e6; cheu-sum's calibrated run at n = 1e9 from counts is
    # tests/test_cheu_scale.py (issue 21: the bound's cost no longer grows with n*r)
    proto = registry.create("cheu-sum", 10**6, eps=1.0, messages=20, gamma=0.3)
    data = real_counts("uniform", n=10**6, rng=1)
    run = run_trials(proto, data, trials=1000, rng=2, engine="fast")
    assert _agrees(run.records["sq_error"].to_numpy(), mse_expected_of(proto, data))


@pytest.mark.parametrize("name", ["blanket-sum", "ikos-sum", "recursive-sum", "local-rr-sum", "cheu-sum"])
def test_real_counts_give_the_rows_records(name):
    # exactness is the point: the fast engine reads only the multiset, so counts and rows agree bit for bit
    spec = "counts:300,0,500,1200,700,300"
    rows = load_data(spec, data_kind="real", rng=5)
    summary = real_counts(spec, n=None)
    assert rows.size == summary.n == 3000
    assert sorted(rows.tolist()) == np.repeat(summary.values, summary.counts).tolist()
    proto = registry.create(name, 3000, **EXPLICIT[name])
    a = run_trials(proto, rows, trials=300, rng=7, engine="fast").records
    b = run_trials(proto, summary, trials=300, rng=7, engine="fast").records
    assert a.drop(columns="seconds").equals(b.drop(columns="seconds"))
    assert mse_expected_of(proto, summary) == pytest.approx(proto.mse_expected(rows), rel=1e-12)


def test_real_counts_quantised_distribution():
    # beta(2, 5) on the grid: the mean of the quantised data is within half a cell plus 5 standard errors of 2/7
    d = real_counts("beta:2,5", n=N9, rng=3)
    assert d.counts.sum() == N9 and np.all(d.counts > 0)
    assert np.all((d.values >= 0) & (d.values <= 1)) and np.all(np.diff(d.values) > 0)
    mean = float(np.dot(d.values, d.counts)) / N9
    sd = np.sqrt(2 * 5 / (7**2 * 8))
    assert abs(mean - 2 / 7) <= 0.5 / REAL_COUNTS_GRID + 5 * sd / np.sqrt(N9)
    clipped = real_counts("normal:0.1,0.2", n=10**6, rng=3)  # clipped mass sits at 0, as the rows path clips
    assert clipped.values[0] == 0.0 and clipped.counts[0] > 0.25 * 10**6


def test_simulate_summation_at_1e9_from_a_distribution_never_builds_rows(capsys, monkeypatch):
    import shufflesim.experiments.data as D
    from shufflesim.cli.main import main

    def boom(*a, **k):
        raise AssertionError("n rows built")

    monkeypatch.setattr(D, "load_data", boom)
    assert main(["simulate", "blanket-sum", "--eps", "1", "--mode", "paper", "--n", "1e9", "--data", "beta:2,5",
                 "--engine", "fast", "--trials", "1000", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == N9 and out["complete"] and out["privacy"]["eps"] <= 1.0
    half = (out["mse_ci95"][1] - out["mse_ci95"][0]) / 2 / 1.96  # one standard error
    assert abs(out["mse"] - out["mse_expected"]) <= Z * half


# --------------------------------------------------------------------------- (b) streamed faithful engine

STREAMABLE = [(name, EXPLICIT[name], "categorical" if name == "krr" else "real")
              for name in ("krr", "blanket-sum", "recursive-sum", "cheu-sum", "local-rr-sum", "ikos-sum")]


@pytest.mark.parametrize("name,params,kind", STREAMABLE)
def test_streamed_with_one_chunk_equals_the_unchunked_faithful_engine(name, params, kind):
    # bit-identity is the point: one chunk draws the users' messages from the same stream as Protocol.run
    n = 3000
    proto = registry.create(name, n, **params)
    data = load_data("uniform", data_kind=kind, n=n, k=proto.domain_size, rng=1)
    a = run_trials(proto, data, trials=4, rng=3).records
    b = run_trials_streamed(proto, data, trials=4, rng=3, chunk=n).records
    assert a.drop(columns="seconds").equals(b.drop(columns="seconds"))


@pytest.mark.parametrize("name,params,kind", STREAMABLE[:4])
def test_streamed_in_chunks_agrees_with_the_exact_mse(name, params, kind):
    n = 2000
    proto = registry.create(name, n, **params)
    data = load_data("uniform", data_kind=kind, n=n, k=proto.domain_size, rng=1)
    run = run_trials_streamed(proto, data, trials=800, rng=4, chunk=300)  # 7 chunks a trial
    assert run.complete
    assert _agrees(run.records["sq_error"].to_numpy(), proto.mse_expected(data))
    if "error" in run.records:
        assert _agrees(run.records["error"].to_numpy(), 0.0)


def test_streamed_from_counts_equals_streamed_from_sorted_rows():
    # a DataSummary is expanded chunk by chunk in the order of its sorted values: identical to the sorted rows
    from shufflesim.experiments.data import data_counts

    proto = registry.create("krr", 5000, k=6, eps0=1.0)
    summary = data_counts("counts:100,2000,0,900,1500,500", n=5000, k=6)
    rows = np.repeat(np.arange(6), summary.counts)
    a = run_trials_streamed(proto, summary, trials=5, rng=9, chunk=777).records
    b = run_trials_streamed(proto, rows, trials=5, rng=9, chunk=777).records
    assert a.drop(columns="seconds").equals(b.drop(columns="seconds"))


def test_streamed_memory_refusal_before_allocation(monkeypatch):
    from shufflesim.experiments.data import data_counts
    from shufflesim.pipeline.stream import plan_stream

    proto = registry.create("krr", N9, k=10, eps0=1.0)
    data = data_counts("uniform", n=N9, k=10, rng=1)
    calls = []
    monkeypatch.setattr(type(proto.randomiser), "randomise", lambda self, x, rng: calls.append(1))
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "64M")
    with pytest.raises(ResourceError, match="--chunk"):
        plan_stream(proto, data, np.random.SeedSequence(0), chunk=1 << 24, trials=1)
    assert calls == []  # refused before a single user was randomised


def test_streamed_time_refusal_and_unstreamable(monkeypatch):
    from shufflesim.experiments.data import data_counts
    from shufflesim.pipeline.stream import plan_stream

    proto = registry.create("krr", N9, k=10, eps0=1.0)
    data = data_counts("uniform", n=N9, k=10, rng=1)
    monkeypatch.setenv("SHUFFLESIM_TIME_LIMIT", "1")
    with pytest.raises(ResourceError, match="SHUFFLESIM_TIME_LIMIT"):
        plan_stream(proto, data, np.random.SeedSequence(0), chunk=1 << 16, trials=1)
    monkeypatch.delenv("SHUFFLESIM_TIME_LIMIT")
    lap = registry.create("local-laplace-sum", 1000, eps=1.0)
    with pytest.raises(NotApplicableError, match="cannot be streamed"):
        plan_stream(lap, load_data("uniform", data_kind="real", n=1000, rng=0), np.random.SeedSequence(0),
                    chunk=100, trials=1)


def test_simulate_faithful_at_1e9_refused_with_the_knob(capsys, monkeypatch):
    from shufflesim.cli.main import main

    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "64M")
    code = main(["simulate", "krr", "--n", "1e9", "--k", "10", "--eps0", "1", "--engine", "faithful",
                 "--trials", "1", "--chunk", "100000000"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    assert cap.err.startswith("error:") and "--chunk" in cap.err


def test_simulate_chunk_equal_to_n_reproduces_the_faithful_run(capsys):
    from shufflesim.cli.main import main

    base = ["simulate", "krr", "--k", "4", "--gamma", "0.5", "--n", "4000", "--trials", "6", "--seed", "2", "--json"]
    assert main(base) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(base + ["--chunk", "4000"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["mse"] == b["mse"] and b["stream"]["chunk"] == 4000  # exact: the same draws


# --------------------------------------------------------------------------- (c) privacy at n = 1e9

def test_krr_privacy_at_1e9_uses_the_bucketed_accountant(monkeypatch):
    # the privacy simulate prints at n = 1e9 (Protocol.privacy) comes from the bucket rows, never from the exact
    # row engine: every tight_epsilon call is answered by bucketed_epsilon and none falls back to the rows
    import shufflesim.accounting.rows.bucketed as B
    import shufflesim.accounting.engines.tight as T

    used, fallback = [], []
    real_b, real_x = B.bucketed_epsilon, T._exact_instead

    def spy_b(*a, **k):
        used.append(1)
        return real_b(*a, **k)

    def spy_x(*a, **k):
        fallback.append(real_x(*a, **k))
        return fallback[-1]

    chosen, real_c = [], T._bucketed

    def spy_c(*a, **k):
        chosen.append(real_c(*a, **k))
        return chosen[-1]

    monkeypatch.setattr(B, "bucketed_epsilon", spy_b)
    monkeypatch.setattr(T, "_exact_instead", spy_x)
    monkeypatch.setattr(T, "_bucketed", spy_c)
    proto = registry.create("krr", N9, k=10, eps0=1.0)
    p = proto.privacy()
    assert used and chosen and all(chosen) and not any(fallback)
    assert 0 < p.eps < 1e-3 and p.method == "tight"
