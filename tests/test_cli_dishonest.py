"""``simulate ... --dishonest C --strategy NAME`` and dishonest coalitions in sweeps and scenarios (issue 23).

Oracles: the derived expected bias (:func:`shufflesim.experiments.population.expected_bias`: sums of per-user
expectations, IKOS's exact remaining-noise law; tests/test_dishonest.py checks it by enumeration), exact
identities between strategies that share the honest users' draws, and the honest ``simulate`` output.
Monte-Carlo comparisons use fixed seeds and Student-t intervals from the trials at a Bonferroni-corrected
level, so that the family-wise error of each family below is at most 1e-3.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.cli.main import main
from shufflesim.experiments import population as P
from shufflesim.pipeline.registry import create

N = 30
# protocol -> (CLI options, the same as library parameters, data spec): small explicit parameters (no
# calibration); IKOS data with p*x integer (p = ceil(sqrt(30)) = 6), for which its expectation is derived exactly
CASES = {
    "blanket-sum": (["--gamma", "0.3", "--k", "4"], {"gamma": 0.3, "k": 4}, "uniform"),
    "recursive-sum": (["--precisions", "3,4", "--gammas", "0.2,0.3", "--eps", "1"],
                      {"precisions": [3, 4], "gammas": [0.2, 0.3], "eps": 1.0}, "uniform"),
    "cheu-sum": (["--eps", "1", "--messages", "3", "--gamma", "0.4"], {"eps": 1.0, "messages": 3, "gamma": 0.4},
                 "uniform"),
    "local-rr-sum": (["--eps", "1"], {"eps": 1.0}, "uniform"),
    "local-laplace-sum": (["--eps", "1"], {"eps": 1.0}, "uniform"),
    "krr": (["--k", "3", "--gamma", "0.4"], {"k": 3, "gamma": 0.4}, "uniform"),
    "ikos-sum": (["--eps", "1"], {"eps": 1.0}, "constant:0.5"),
}
FAMILY = len(CASES) * len(P.STRATEGIES)
LEVEL = 1.0 - 1e-3 / FAMILY  # each interval at this level: family-wise error <= 1e-3 (Bonferroni)


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _simulate(capsys, name, *extra, trials=2000, engine="fast", seed=5, level=LEVEL):
    opts, _, data = CASES[name]
    code, out, err = run_cli(capsys, "simulate", name, *opts, "--n", N, "--data", data, "--trials", trials,
                             "--seed", seed, "--engine", engine, "--level", level, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("strategy", P.STRATEGIES)
@pytest.mark.parametrize("name", list(CASES))
def test_attacked_bias_agrees_with_the_derived_expectation(capsys, name, strategy):
    """The measured bias's interval (Student-t over 2000 fast-engine trials, Bonferroni level over the 28
    cells) holds the derived expected bias; c = 3 of 30 users (k-RR: target 1)."""
    extra = ["--target", 1] if name == "krr" else []
    out = _simulate(capsys, name, "--dishonest", 3, "--strategy", strategy, *extra)
    assert out["dishonest"]["size"] == 3 and out["dishonest"]["strategy"] == strategy
    want = out["bias_expected"]
    assert want is not None
    lo, hi = out["attacked"]["bias_ci"]
    assert lo <= want <= hi, (name, strategy, out["attacked"]["bias"], want)
    # the honest run (same seeds, no coalition) is unbiased: its interval holds 0
    hlo, hhi = out["honest"]["bias_ci"]
    assert hlo <= 0.0 <= hhi
    # the derived expectation of a push is the worst case the output states (the top of the interval)
    # (local Laplace: unbounded, JSON null; IKOS: the decoding window, which its default shift does not reach)
    if strategy == "push" and name == "local-laplace-sum":
        assert out["bias_worst"] == [None, None]
    elif strategy == "push" and name != "ikos-sum":
        assert out["bias_worst"][1] == pytest.approx(want, rel=1e-9, abs=1e-9)


def _se(out: dict, key: str, level: float, trials: int) -> float:
    lo, hi = out["attacked"][f"{key}_ci"]
    return (hi - lo) / (2.0 * float(stats.t.ppf(0.5 + level / 2.0, trials - 1)))


def _rotated_cells(per_protocol: int) -> list:
    """Every (protocol, strategy) cell; in the default run each protocol keeps ``per_protocol`` strategies, rotated
    so that every strategy runs for several protocols (the others are marked slow: --run-slow runs all 28).  The
    Bonferroni family stays the full 28 cells, so a subset run is only more conservative."""
    cells = []
    for i, name in enumerate(CASES):
        for j, strategy in enumerate(P.STRATEGIES):
            slow = (j - i) % len(P.STRATEGIES) >= per_protocol
            cells.append(pytest.param(name, strategy, marks=pytest.mark.slow) if slow else (name, strategy))
    return cells


@pytest.mark.parametrize("name,strategy", _rotated_cells(2))
def test_fast_and_faithful_engines_agree_under_attack(capsys, name, strategy):
    """Fast vs faithful engine under attack (different draws of the same law): Welch's z on the mean error and
    on the mean squared error, each within the Bonferroni-corrected normal quantile (2 statistics x 28 cells)."""
    z = float(stats.norm.isf(1e-3 / (2 * FAMILY) / 2.0))
    extra = ["--target", 2] if name == "krr" else []
    fast = _simulate(capsys, name, "--dishonest", 0.1, "--strategy", strategy, *extra, trials=1500, level=0.95)
    faith = _simulate(capsys, name, "--dishonest", 0.1, "--strategy", strategy, *extra, trials=600,
                      engine="faithful", level=0.95)
    assert fast["engine"] == "fast" and faith["engine"] == "faithful"
    for key in ("bias", "mse"):
        diff = fast["attacked"][key] - faith["attacked"][key]
        se = math.hypot(_se(fast, key, 0.95, 1500), _se(faith, key, 0.95, 600))
        if se == 0.0:  # a deterministic attacked estimate (e.g. every user pushes): exact agreement
            assert diff == pytest.approx(0.0, abs=1e-9)
        else:
            assert abs(diff) <= z * se, (name, strategy, key, fast["attacked"][key], faith["attacked"][key])


@pytest.mark.parametrize("name", [k for k in CASES if k not in ("ikos-sum", "local-laplace-sum")])
def test_fast_engine_push_minus_dropout_is_the_derived_width(name):
    """Same block generator: the honest users' draws are identical, so a push and a dropout differ by exactly
    c·(hi − lo), the derived width of one user's influence (up to floating-point rounding of the sums)."""
    _, params, _ = CASES[name]
    proto = create(name, N, **params)
    x = np.arange(N) % proto.k if name == "krr" else (np.arange(N) % 5) / 4.0
    inf = P.influence(proto)
    for c in (1, 4):
        push = P.attack_fast_block(proto, x, P.Coalition(c, "push"), np.random.default_rng(11), 64)
        drop = P.attack_fast_block(proto, x, P.Coalition(c, "dropout"), np.random.default_rng(11), 64)
        np.testing.assert_allclose(push - drop, c * inf.width, rtol=1e-12, atol=1e-9)


def test_fast_ikos_push_is_the_shift_decoded():
    """IKOS under the fast engine: the coalition's shift s moves the honest total by exactly s mod q (same
    generator), so with a shift that wraps nothing the estimate moves by s/p exactly."""
    proto = create("ikos-sum", N, eps=1.0)
    p = proto.parameters.p
    x = np.full(N, 0.5)
    a = P.attack_fast_block(proto, x, P.Coalition(2, "push", shift=-p * 5), np.random.default_rng(3), 64)
    b = P.attack_fast_block(proto, x, P.Coalition(2, "push", shift=0), np.random.default_rng(3), 64)
    np.testing.assert_allclose(a - b, -5.0, atol=1e-12)


def _strip_seconds(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("seconds"))


@pytest.mark.parametrize("engine", ["faithful", "fast"])
def test_dishonest_zero_is_the_honest_simulate(capsys, engine):
    """--dishonest 0 (with or without a strategy) prints exactly what simulate prints without the flag (the
    elapsed seconds aside); the JSON likewise."""
    base = ["simulate", "blanket-sum", "--n", 200, "--gamma", 0.3, "--k", 4, "--trials", 30, "--seed", 3,
            "--engine", engine]
    c0, plain, _ = run_cli(capsys, *base)
    c1, zero, _ = run_cli(capsys, *base, "--dishonest", 0)
    c2, zero_s, _ = run_cli(capsys, *base, "--dishonest", 0, "--strategy", "dropout")
    assert c0 == c1 == c2 == 0
    assert _strip_seconds(plain) == _strip_seconds(zero) == _strip_seconds(zero_s)
    j0 = json.loads(run_cli(capsys, *base, "--json")[1])
    j1 = json.loads(run_cli(capsys, *base, "--json", "--dishonest", 0)[1])
    j0.pop("seconds"), j1.pop("seconds")
    assert j0 == j1


def test_faithful_no_coalition_records_are_the_protocol_trials(capsys):
    """The honest comparison run is simulate's own: its squared errors are the honest simulate's records."""
    out = _simulate(capsys, "cheu-sum", "--dishonest", 1, trials=40, engine="faithful", level=0.95)
    code, plain, _ = run_cli(capsys, "simulate", "cheu-sum", *CASES["cheu-sum"][0], "--n", N, "--trials", 40,
                             "--seed", 5, "--engine", "faithful", "--json")
    assert code == 0
    # exactness is the point: the same streams give the same trials, hence the same mean
    assert out["honest"]["mse"] == json.loads(plain)["mse"]


@pytest.mark.parametrize("argv, message", [
    (["--dishonest", 31], "more than the n=30"),
    (["--dishonest", -1], "--dishonest must be"),
    (["--dishonest", 2.5], "whole count"),
    (["--dishonest", "nan"], "--dishonest must be"),
    (["--dishonest", "inf"], "--dishonest must be"),
    (["--dishonest", 1, "--strategy", "bribe"], "--strategy must be one of"),
    (["--strategy", "push"], "needs --dishonest"),
    (["--direction", "-1"], "needs --dishonest"),
    (["--dishonest", 1, "--direction", 0], "--direction must be +1 or -1"),
    (["--dishonest", 1, "--target", 1], "target applies to krr only"),
    (["--dishonest", "x"], "invalid number"),
])
def test_hostile_inputs(capsys, tmp_path, argv, message):
    """One ``error:`` line, exit 2, nothing on stdout, nothing written into --output."""
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "simulate", "blanket-sum", "--n", N, "--gamma", 0.3, "--k", 4, "--trials", 5,
                             "--output", out_dir, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], err
    assert not out_dir.exists() or not any(p for p in out_dir.iterdir() if not p.name.startswith("."))


def test_unsupported_protocol_and_target(capsys):
    code, out, err = run_cli(capsys, "simulate", "central-laplace-sum", "--n", N, "--eps", 1, "--trials", 5,
                             "--dishonest", 1)
    assert code == 2 and out == "" and err.startswith("error:") and "central-laplace-sum" in err
    code, out, err = run_cli(capsys, "simulate", "krr", "--n", N, "--k", 3, "--gamma", 0.4, "--trials", 5,
                             "--dishonest", 1, "--target", 3)
    assert code == 2 and out == "" and "target must be a category in [0, 3)" in err


def test_sweep_dishonest_axis(capsys, tmp_path):
    """``sweep --set dishonest=... --set strategy=...``: one point per coalition size, the bias columns next to
    the derived expectation (c = 0 included: an empty coalition, bias 0 derived); the honest points of a sweep
    without the axis keep their definition (no 'attack' key: unchanged hashes)."""
    from shufflesim.experiments.sweep import SweepPoint

    assert "attack" not in SweepPoint("krr", {"k": 3}).to_dict()
    code, out, err = run_cli(capsys, "sweep", "local-rr-sum", "--set", "eps=1", "--set", "dishonest=0,2,0.2",
                             "--set", "strategy=push", "--n", N, "--trials", 3000, "--engine", "fast",
                             "--backend", "serial", "--output", tmp_path / "sw", "--json",
                             "--level", 1.0 - 1e-3 / 3)
    assert code == 0, err
    rows = json.loads(out)["summary"]
    assert [r["coalition"] for r in rows] == [0, 2, 6]
    proto = create("local-rr-sum", N, eps=1.0)
    inf = P.influence(proto)
    for r in rows:
        assert r["param_strategy"] == "push"
        assert r["bias_lo"] <= r["bias_expected"] <= r["bias_hi"]
        assert r["bias_worst_high"] == pytest.approx(r["bias_expected"], abs=1e-9)
    # a push by c users adds c·hi and removes their own inputs: derived slope per user is hi − mean input
    assert rows[0]["bias_expected"] == 0.0  # an empty coalition: exactly no bias (exactness is the point)
    assert rows[2]["bias_expected"] > rows[1]["bias_expected"] > 0 and inf.hi > 1


def test_sweep_attack_keys_refused_where_wrong(capsys, tmp_path):
    code, out, err = run_cli(capsys, "sweep", "local-rr-sum", "--set", "eps=1", "--set", "strategy=push",
                             "--n", N, "--trials", 10, "--output", tmp_path / "a")
    assert code == 2 and "needs dishonest" in err
    code, out, err = run_cli(capsys, "sweep", "local-rr-sum", "--set", "eps=1", "--set", "dishonest=1",
                             "--set", "strategy=bribe", "--n", N, "--trials", 10, "--output", tmp_path / "b")
    assert code == 2 and "strategy" in err and err.count("\n") == 1


SCENARIO = """
title = "bias against coalition size"
paper = "none"
reproduces = "none"
seed = 4

[[sweep]]
name = "b"
protocol = "{protocol}"
n = 40
params = {{ {params}, dishonest = [0, 1, 4], strategy = "push" }}
trials = 50
engine = "fast"
x = "dishonest"
y = "bias"
logx = false
logy = false
"""


def test_scenario_bias_step(tmp_path):
    """A [[sweep]] with a coalition axis and y = 'bias' runs in quick mode: its results carry the measured and
    derived bias per coalition size and the plot is drawn."""
    from shufflesim.scenarios.runner import run_scenario
    from shufflesim.scenarios.schema import load

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(protocol="krr", params="k = 4, eps0 = 1.0"))
    sc = load(path)
    run_scenario(sc, tmp_path / "out", quick=True)
    import pandas as pd

    df = pd.read_csv(tmp_path / "out" / "results" / "b.csv")
    assert list(df["coalition"]) == [0, 1, 4]
    assert df["bias_expected"].iloc[0] == 0.0  # exactness is the point: no coalition, no bias
    assert (tmp_path / "out" / "b.png").exists()
    assert "bias_expected" in (tmp_path / "out" / "report.md").read_text()


def test_scenario_bias_needs_a_coalition(tmp_path):
    from shufflesim.scenarios.schema import ScenarioError, load
    from shufflesim.scenarios.steps import check_runnable

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(protocol="krr", params="k = 4, eps0 = 1.0")
                    .replace(", dishonest = [0, 1, 4], strategy = \"push\"", ""))
    with pytest.raises(ScenarioError, match="needs params.dishonest"):
        check_runnable(load(path), quick=True)
    path.write_text(SCENARIO.format(protocol="krr", params="k = 4, eps0 = 1.0").replace("[0, 1, 4]", "[0, 41]"))
    with pytest.raises(ScenarioError, match="more than the n=40"):
        check_runnable(load(path), quick=True)


def test_attacked_run_states_the_privacy_left_among_the_honest(capsys):
    """Issue 23 (3): an attacked run reports, next to the all-honest guarantee, the protocol's certified guarantee
    among the n - c honest users (validation.dishonest.honest_privacy, the coalition's reports known); where no
    finite eps is certified at the protocol's delta (IKOS: its security term grows as honest users vanish) it says
    so instead of printing inf."""
    from shufflesim.validation.dishonest import honest_privacy

    code, out, _ = run_cli(capsys, "simulate", "krr", "--n", "1000", "--k", "4", "--eps0", "2", "--dishonest", "0.1",
                           "--strategy", "withhold-noise", "--trials", "50", "--engine", "fast", "--json")
    d = json.loads(out)
    want = honest_privacy(create("krr", 1000, k=4, eps0=2.0), 900)
    assert code == 0 and "900 of 1000 users honest" in d["privacy_honest"]["method"]
    assert d["privacy_honest"]["eps"] == pytest.approx(want.eps, rel=1e-12)
    assert d["privacy_honest"]["eps"] > d["privacy"]["eps"]
    code, out, _ = run_cli(capsys, "simulate", "ikos-sum", "--n", "1000", "--eps", "1", "--dishonest", "0.1",
                           "--strategy", "withhold-noise", "--trials", "50", "--engine", "fast", "--json")
    d = json.loads(out)
    assert code == 0 and d["privacy_honest"] is None and "no finite eps" in d["privacy_honest_reason"]
