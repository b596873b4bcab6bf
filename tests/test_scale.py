"""Issue 21: the bucketed engine (bucket rows) against the exact row engine, and estimates before allocation.

Oracles: the exact row engine (:class:`~shufflesim.accounting.engines.tight.TightAccountant` on the unreduced
rows, an interval ~1e-8 wide for single use) and exact pairwise composition for the composed case.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

from shufflesim.accounting.rows.bucketed import bucket_rows, bucketed_delta, bucketed_epsilon
from shufflesim.accounting.pairs.krr import krr_pair
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.accounting.engines.tight import TightAccountant
from shufflesim.errors import ResourceError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pair(kind: str, n: int, eps0: float, k: int, gamma: float):
    if kind == "clones":
        return stronger_clones_pair(n, eps0, as_rows=True)
    return krr_pair(n, k, gamma, kind, as_rows=True)


CASES = [  # (kind, eps0 for clones, k, gamma)
    ("clones", 0.5, 2, 0.0),
    ("clones", 2.0, 2, 0.0),
    ("strong", 0.0, 4, 0.25),
    ("strong", 0.0, 10, 0.5),
    ("shuffled", 0.0, 4, 0.25),
    ("weak", 0.0, 4, 0.25),
]


def _contains(outer_lo, outer_up, inner_lo, inner_up):
    return outer_lo <= inner_lo and inner_up <= outer_up


@pytest.mark.parametrize("n", [1000, 10_000, 100_000])
@pytest.mark.parametrize("kind,eps0,k,gamma", CASES)
def test_bucketed_contains_exact_single_use(n, kind, eps0, k, gamma):
    if kind == "weak" and n > 10_000:
        pytest.skip("the weak pair has O(n) rows; its construction at n = 1e5 takes ~20 s")
    rows = _pair(kind, n, eps0, k, gamma)
    exact = TightAccountant(rows).epsilon([1e-6, 1e-9])
    for blocks in ((4,), (48,)):  # coarse blocks: a visible gap; default first step
        buck = bucketed_epsilon(rows, [1e-6, 1e-9], accountant=TightAccountant, blocks=blocks)
        for e, b in zip(exact, buck):
            assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (blocks, e, b)
    # the default refinement meets the requested relative width (not for the weak adversary, whose rows
    # vary in N and lam independently: its width shrinks like 1/sqrt(blocks), ~1e-2 at 3072 blocks)
    if kind == "weak":
        return
    buck = bucketed_epsilon(rows, [1e-9], accountant=TightAccountant, rtol=1e-3)
    assert (buck[0].eps_upper - buck[0].eps_lower) <= 1e-3 * buck[0].eps_upper


@pytest.mark.parametrize("kind,eps0,k,gamma", CASES[:3] + CASES[4:5])
def test_bucketed_contains_exact_delta(kind, eps0, k, gamma):
    rows = _pair(kind, 20_000, eps0, k, gamma)
    eps = [0.01, 0.03]
    exact = TightAccountant(rows).delta(eps)
    buck = bucketed_delta(rows, eps, accountant=TightAccountant, blocks=(6,))
    for e, b in zip(exact, buck):
        assert _contains(b.delta_lower, b.delta_upper, e.delta_lower, e.delta_upper), (e, b)


@pytest.mark.parametrize("kind,eps0,k,gamma", [CASES[0], CASES[2], CASES[4]])
def test_bucketed_contains_exact_composed(kind, eps0, k, gamma):
    """Two-fold composition, exact pairwise on both sides (no FFT width in the way)."""
    rows = _pair(kind, 100, eps0, k, gamma)
    num = {"exact_max_atoms": 2 * 10**7}
    exact = TightAccountant(rows, compositions=2, **num)
    assert exact.mode == "exact-composed"
    e = exact.epsilon([1e-4])[0]
    b = bucketed_epsilon(rows, [1e-4], accountant=TightAccountant, compositions=2, blocks=(3,), **num)[0]
    assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (e, b)
    assert b.eps_upper > b.eps_lower  # three blocks of a pair with more rows: a real reduction


@pytest.mark.slow
@pytest.mark.parametrize("kind,eps0,k,gamma", [CASES[0], CASES[2], CASES[4]])
def test_bucketed_contains_exact_1e6(kind, eps0, k, gamma):
    rows = _pair(kind, 1_000_000, eps0, k, gamma)
    e = TightAccountant(rows).epsilon([1e-9])[0]
    b = bucketed_epsilon(rows, [1e-9], accountant=TightAccountant)[0]
    assert _contains(b.eps_lower, b.eps_upper, e.eps_lower, e.eps_upper), (e, b)
    assert b.eps_upper - b.eps_lower <= 1e-3 * b.eps_upper


def test_bucket_rows_preserve_mass_and_bracket_parameters():
    """Each side keeps the total mass (up to its 1e-11 margin) and the representatives' (N, lam) bracket
    the rows they replace (upper: smallest N, largest lam; lower: largest N, smallest lam)."""
    rows = stronger_clones_pair(50_000, 1.0, as_rows=True)
    a, b, N = rows.alpha, rows.beta, rows.N.astype(float)
    mass = np.logaddexp.reduce(rows.log_w + np.log(a * N / 2 + b))
    lam = (a * N / 2) / (a * N / 2 + b)
    for side in ("upper", "lower"):
        r = bucket_rows(rows, 5, side)
        m = np.logaddexp.reduce(r.log_w + np.log(r.N / 2 + r.beta))
        assert abs(m - mass) < 1e-9
        lam_r = (r.N / 2) / (r.N / 2 + r.beta)
        if side == "upper":
            assert r.N.min() == rows.N.min() and lam_r.max() >= lam.max()
        else:
            assert r.N.max() == rows.N.max() and lam_r.min() <= lam.min()
        assert r.symmetric


# --------------------------------------------------------------------------------------------- estimates

def test_memory_refusal_before_allocation(monkeypatch):
    """With a low limit through the project's knob the weak pair is refused before its rows exist:
    the traced allocations stay far below the estimate."""
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "50M")
    tracemalloc.start()
    try:
        with pytest.raises(ResourceError, match="needs about"):
            krr_pair(10**6, 4, 0.25, "weak", as_rows=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 << 20  # < 5 MB allocated, against ~7 GB the rows would take


def test_accounting_refusal_under_rlimit():
    """An address-space limit (resource.setrlimit) is honoured: the CLI refuses with one line and exit 2."""
    code = ("import resource,sys; from shufflesim.cli.main import main; "
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY)); "
            "sys.exit(main(['account','krr','--n','1e6','--k','4','--gamma','0.25','--adversary','weak',"
            "'--delta','1e-9','--compositions','50']))")  # single use now fits (bucketed_weak): composed does not
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("SHUFFLESIM_MEMORY_LIMIT", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("error:") and "needs about" in p.stderr and "Traceback" not in p.stderr


_MEASURE = """
import json, sys
def hwm():  # VmHWM: this process's peak RSS (ru_maxrss would inherit the parent's peak across fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.accounting.engines.estimates import estimate_accounting
from shufflesim.accounting.engines.tight import tight_epsilon
n, comp = int(float(sys.argv[1])), int(sys.argv[2])
r = stronger_clones_pair(n, 1.0, as_rows=True)
base = hwm()
est = estimate_accounting(r, comp)
tight_epsilon(r, 1e-9, compositions=comp)
peak = hwm()
print(json.dumps({"est": est.bytes, "measured": peak - base}))
"""


@pytest.mark.parametrize("n,comp", [(100_000, 1), pytest.param(10**6, 1, marks=pytest.mark.slow),
                                    pytest.param(10**8, 1, marks=pytest.mark.slow),
                                    pytest.param(10**7, 1000, marks=pytest.mark.slow)])
def test_memory_estimate_within_factor(n, comp):
    from shufflesim.accounting.engines.estimates import COMPOSED_MEMORY_FACTOR, MEMORY_FACTOR

    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", _MEASURE, str(n), str(comp)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout.strip().splitlines()[-1])
    ratio = d["est"] / max(d["measured"], 1)
    if comp == 1:
        assert 1 / MEMORY_FACTOR <= ratio <= MEMORY_FACTOR, d
    else:  # an upper estimate (the largest grid the refinement may reach)
        assert 1 <= ratio <= COMPOSED_MEMORY_FACTOR, d


def test_progress_stage_prints_eta(monkeypatch):
    from shufflesim.core.progress import stage

    out = io.StringIO()
    with stage("not a terminal", 10.0, stream=out, quiet_s=0.05, every_s=0.05):
        time.sleep(0.2)
    assert out.getvalue() == ""  # by default only a terminal gets progress lines
    monkeypatch.setenv("SHUFFLESIM_PROGRESS", "1")
    out = io.StringIO()
    with stage("demo", 10.0, stream=out, quiet_s=0.05, every_s=0.05):
        time.sleep(0.3)
    text = out.getvalue()
    assert "progress: demo: estimated" in text and "ETA" in text
    out = io.StringIO()
    with stage("quick", 0.1, stream=out, quiet_s=5.0):
        pass
    assert out.getvalue() == ""


# --------------------------------------------------------------------------------------------- counts input

def test_fast_engine_from_counts_at_1e9_matches_exact_mse():
    """k-RR at n = 1e9 from counts (never n rows): the mean squared error over 4000 fast-engine trials agrees
    with the closed form E sum_j (c_hat_j - c_j)^2 (protocols.krr.krr_mse_expected) within 4 standard errors
    of the trial mean (the standard error estimated from the trials)."""
    from shufflesim.protocols.krr import krr_mse_expected
    from shufflesim.experiments.data import data_counts
    from shufflesim.experiments.montecarlo import run_trials
    from shufflesim.pipeline import registry

    n, k = 10**9, 10
    proto = registry.create("krr", n, k=k, eps0=1.0)
    counts = data_counts("uniform", n=n, k=k, rng=1)
    assert counts.counts.sum() == n and counts.counts.shape == (k,)
    run = run_trials(proto, counts, trials=4000, rng=2, engine="fast")
    assert run.complete and run.engine == "fast"
    se = run.records["sq_error"].to_numpy()
    want = krr_mse_expected(n, k, proto.gamma)
    assert abs(se.mean() - want) <= 4 * se.std(ddof=1) / np.sqrt(se.size)


def test_counts_input_checks():
    from shufflesim.errors import DataError, ParameterError
    from shufflesim.experiments.data import data_counts
    from shufflesim.experiments.montecarlo import run_trials
    from shufflesim.pipeline import registry

    proto = registry.create("krr", 1000, k=4, eps0=1.0)
    c = data_counts("counts:100,200,300,400", n=1000, k=4)
    assert c.counts.tolist() == [100, 200, 300, 400]  # exact: the spec's counts
    assert data_counts("constant:2", n=1000, k=4).counts.tolist() == [0, 0, 1000, 0]
    with pytest.raises(ParameterError, match="fast engine"):
        run_trials(proto, c, trials=2, rng=0, engine="faithful")
    with pytest.raises(DataError, match="sum to n"):
        run_trials(registry.create("krr", 999, k=4, eps0=1.0), c, trials=2, rng=0, engine="fast")
    with pytest.raises(DataError, match="cannot be given as counts"):
        data_counts("adult-age", n=1000, k=4)


def test_wide_bucketed_single_use_falls_back_to_the_exact_engine(monkeypatch):
    # the weak adversary's rows bucket loosely (width ~ blocks^-1/2): where the exact row engine fits, a bucketed
    # single-use answer wider than BUCKET_MAX_WIDTH is replaced by the exact engine's (both certified)
    import shufflesim.accounting.rows.bucketed as B
    from shufflesim.accounting.pairs import krr_pair
    from shufflesim.accounting.engines.tight import BUCKET_MAX_WIDTH, TightAccountant, tight_epsilon

    pair = krr_pair(300, k=4, gamma=0.5, adversary="weak", as_rows=True)
    exact = TightAccountant(pair).epsilon([1e-6])[0]
    monkeypatch.setattr(B, "BUCKET_MIN_ATOMS", 1)  # force the bucket rows at this small n
    bucketed = B.bucketed_epsilon(pair, [1e-6], accountant=TightAccountant)[0]
    assert bucketed.eps_lower <= exact.eps_lower and exact.eps_upper <= bucketed.eps_upper  # containment
    assert (bucketed.eps_upper - bucketed.eps_lower) / bucketed.eps_upper > BUCKET_MAX_WIDTH  # too wide here
    got = tight_epsilon(pair, [1e-6])[0]
    assert (got.eps_lower, got.eps_upper) == (exact.eps_lower, exact.eps_upper)  # the same engine, same answer


def test_bucketed_eps_at_a_delta_below_the_default_column_tail(monkeypatch):
    # the column truncation follows the delta asked (as the pairs' tails do): at delta = 1e-18, far below the
    # default 1e-16 per row, the bucketed answer stays finite and contains the exact engine's
    import shufflesim.accounting.rows.bucketed as B

    pair = stronger_clones_pair(100_000, 1.0, as_rows=True, tail_bound=1e-26)
    exact = TightAccountant(pair).epsilon([1e-18])[0]
    monkeypatch.setattr(B, "BUCKET_MIN_ATOMS", 1)
    got = B.bucketed_epsilon(pair, [1e-18], accountant=TightAccountant)[0]
    assert np.isfinite(got.eps_upper)
    assert got.eps_lower <= exact.eps_lower and exact.eps_upper <= got.eps_upper
    assert (got.eps_upper - got.eps_lower) / got.eps_upper <= B.DEFAULT_RTOL


def test_simulate_fast_from_counts_at_population_scale(capsys):
    # `simulate --engine fast` above COUNTS_MIN_N draws categorical synthetic data as counts (never n rows) and is
    # not refused by the faithful engine's memory check; the MSE agrees with the exact expectation (5 s.e.)
    from shufflesim.cli.main import main
    from shufflesim.cli.simulate import COUNTS_MIN_N

    n = 10**9
    assert n > COUNTS_MIN_N
    assert main(["simulate", "krr", "--n", str(n), "--k", "10", "--eps0", "1", "--data", "zipf:1.1", "--engine",
                 "fast", "--trials", "2000", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == n and out["engine"] == "fast" and out["complete"]
    lo, hi = out["mse_ci95"]
    half = (hi - lo) / 2 / 1.96  # one standard error of the trial mean
    assert abs(out["mse"] - out["mse_expected"]) <= 5 * half
    assert out["privacy"]["eps"] < 1e-3  # amplified at this n (the bucketed accountant, delta = 1/n^2)
