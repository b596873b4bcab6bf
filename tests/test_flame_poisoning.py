"""FLAME under poisoning (issue 23 item 5): poisoned FL clients, the analyser's range check, the FL CLI flags and
the [[training]] step's poisoning axes (shufflesim/federated/poisoning.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from shufflesim.errors import ParameterError
from shufflesim.federated import crypto
from shufflesim.federated.encoding import FlameConfig, aggregate, run_round
from shufflesim.federated.poisoning import Poisoning, report_radius
from shufflesim.federated.training import FLSettings, train


def rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))


def _shuffled(cfg, upd, seed, **kw):
    """The round's result and the shuffled (index, value) the analyser receives (plaintext path)."""
    seen = {}

    def capture(idx, pay):
        seen["idx"], seen["val"] = np.asarray(idx).copy(), np.asarray(pay, dtype=float).copy()
        return idx, pay

    res = run_round(cfg, upd, rng(seed), interfere=capture, **kw)
    return res, seen["idx"], seen["val"]


def _mask(n, chosen):
    m = np.zeros(n, dtype=bool)
    m[list(chosen)] = True
    return m


CONFIGS = [("ss-simple", {}), ("ss-double", {"k": 3}), ("ss-topk", {"k": 2, "l": 2})]


# --- the honest path is unchanged -------------------------------------------------------------------------
@pytest.mark.parametrize("protocol,kw", CONFIGS)
def test_no_poisoned_client_is_the_honest_round(protocol, kw):
    n, d = 30, 10
    upd = rng(1).normal(0, 0.3, (n, d))
    cfg = FlameConfig(protocol, d, n, eps_l=4.0, n_p=n, **kw)
    ref = run_round(cfg, upd, rng(2))
    for poisoned in (None, np.zeros(n, dtype=bool)):
        for strategy in ("worst-in-range", "worst-message", "out-of-range"):
            got = run_round(cfg, upd, rng(2), poisoned=poisoned, strategy=strategy)
            # exact: the same draws summed in the same order
            assert np.array_equal(got.estimate, ref.estimate) and got.report == ref.report


def test_no_poisoning_is_the_honest_training_run():
    base = dict(protocol="ss-double", n=40, rounds=2, seed=4, tight=False)
    ref = train(FLSettings(**base))
    got = train(FLSettings(**base, poisoned=0, poison_strategy="out-of-range"))
    for r in (ref, got):
        r.pop("seconds")
    assert got == ref and "poisoning" not in got  # exact: the same run, and no new key in its output


@pytest.mark.parametrize("protocol,kw", CONFIGS)
@pytest.mark.parametrize("strategy", ["worst-message", "out-of-range"])
def test_poisoners_change_only_their_own_messages(protocol, kw, strategy):
    """The honest clients' messages, the indices and the shuffle are the honest run's: exactly the poisoned
    clients' messages (count x messages per client) differ."""
    n, d, c = 30, 10, 4
    upd = rng(1).normal(0, 0.3, (n, d))
    cfg = FlameConfig(protocol, d, n, eps_l=4.0, n_p=n, **kw)
    _, idx0, val0 = _shuffled(cfg, upd, 2)
    res, idx1, val1 = _shuffled(cfg, upd, 2, poisoned=_mask(n, range(3, 3 + c)), strategy=strategy)
    assert np.array_equal(idx0, idx1)
    assert np.count_nonzero(val0 != val1) == c * cfg.messages_per_user == res.report["poisoned"]["messages"]


# --- out-of-range poisoners are all dropped and counted ------------------------------------------------
@pytest.mark.parametrize("protocol,kw", CONFIGS)
@pytest.mark.parametrize("randomiser", ["laplace", "rr"])
def test_out_of_range_poisoners_are_dropped_and_counted(protocol, kw, randomiser):
    n, d, c = 30, 10, 5
    upd = rng(5).normal(0, 0.3, (n, d))
    cfg = FlameConfig(protocol, d, n, eps_l=4.0, n_p=n, randomiser=randomiser, b=8, **kw)
    _, idx0, val0 = _shuffled(cfg, upd, 6)
    bad = _mask(n, range(0, 2 * c, 2))
    res, idx1, val1 = _shuffled(cfg, upd, 6, poisoned=bad, strategy="out-of-range")
    count = c * cfg.messages_per_user  # every message of every poisoned client
    assert res.report["out_of_range"] == count and res.report["rejected_messages"] == count
    keep = val0 == val1  # the honest clients' messages (previous test: exactly these are unchanged)
    assert np.count_nonzero(~keep) == count
    # exact: the estimate is the analyser's aggregate of the honest messages alone, in the same order
    assert np.array_equal(res.estimate, aggregate(cfg, idx0, val0, keep))
    # without the range check the same values are counted, and summed
    off, _, _ = _shuffled(cfg, upd, 6, poisoned=bad, strategy="out-of-range", range_check=False)
    assert off.report["out_of_range"] == count and off.report["rejected_messages"] == 0
    assert np.array_equal(off.estimate, aggregate(cfg, idx1, val1))


def test_encrypted_out_of_range_poisoners_are_dropped_and_counted():
    n, d, c = 12, 6, 3
    upd = rng(7).normal(0, 0.3, (n, d))
    cfg = FlameConfig("ss-double", d, n, eps_l=4.0, k=2, n_p=n)
    bad = _mask(n, [1, 5, 9])
    plain = run_round(cfg, upd, rng(8), poisoned=bad, strategy="out-of-range")
    enc = run_round(cfg, upd, rng(8), keys=crypto.AnalyserKeys(), poisoned=bad, strategy="out-of-range")
    assert enc.report["decrypt"]["rejected"] == 0 and enc.report["out_of_range"] == c * cfg.k
    assert enc.report["rejected_messages"] == c * cfg.k
    assert np.array_equal(enc.estimate, plain.estimate)


def test_training_counts_every_dropped_value():
    s = FLSettings(protocol="ss-topk", n=50, rounds=3, seed=2, tight=False, k=3, poisoned=0.1,
                   poison_strategy="out-of-range")
    r = train(s)
    per_round = math.floor(0.1 * 50) * r["params"]["messages_per_user"]
    p = r["poisoning"]
    assert p["clients_per_round"] == 5 and p["out_of_range"] == p["dropped_out_of_range"] == 3 * per_round
    assert r["rejected_messages"] == 3 * per_round == p["messages"]


# --- the shift a coalition forces ------------------------------------------------------------------------
@pytest.mark.parametrize("c", [1, 3, 7])
def test_worst_in_range_shift_is_count_times_range_over_n(c):
    """SS-Simple, every honest update beyond +C (clipped to x̃ = 1): the poisoned clients send x̃ = 0 and
    follow the protocol, so with the same noise each coordinate of the estimate moves by exactly
    −c·2C/n (count × range / n, range = 2C), up to the rounding of the float sums."""
    n, d, C = 20, 6, 0.25
    upd = np.full((n, d), 3 * C)
    cfg = FlameConfig("ss-simple", d, n, eps_l=3.0, C=C)
    h, _, val = _shuffled(cfg, upd, 9)
    p = run_round(cfg, upd, rng(9), poisoned=_mask(n, range(c)), strategy="worst-in-range")
    assert p.report["out_of_range"] == 0  # honest-looking messages: the check cannot reject them
    # rounding: a sum of n terms of magnitude <= M errs by at most n·M·2^-52; two such sums, scaled by 2C/n
    M = np.max(np.abs(val - 0.5)) + 1.0
    tol = 2 * n * M * 2.0**-52 * 2 * C / n
    assert np.all(np.abs((p.estimate - h.estimate) - (-c * 2 * C / n)) <= tol)


@pytest.mark.parametrize("randomiser", ["laplace", "rr"])
def test_worst_message_is_the_edge_of_the_accepted_range(randomiser):
    """worst-message sends the most extreme value the range check accepts: it passes, and one ulp further out
    does not; the estimate moves against the mean update on every coordinate (n·shift = 2C/(shrink)·Σ over
    the changed messages of the change of unit value, so its sign is the push's)."""
    n, d = 30, 10
    upd = rng(3).normal(0.05, 0.02, (n, d))  # mean update > 0 on every coordinate: the push is down
    cfg = FlameConfig("ss-simple", d, n, eps_l=20.0, randomiser=randomiser, b=8)
    R = cfg.coord_randomiser()
    h, _, val0 = _shuffled(cfg, upd, 4)
    p, _, val1 = _shuffled(cfg, upd, 4, poisoned=_mask(n, [0, 1]), strategy="worst-message")
    assert p.report["out_of_range"] == 0
    sent = val1[val1 != val0]  # (an honest R_{γ,b} report may already have been the edge level: not counted)
    assert p.report["poisoned"]["messages"] == 2 * d and 0 < sent.size <= 2 * d
    assert np.all(sent == sent[0]) and R.valid(sent).all()
    assert not R.valid(np.nextafter(sent, -np.inf)).any()
    assert float(R.unit(sent[:1])[0]) == pytest.approx(0.5 - report_radius(R), abs=1e-12)
    assert np.all(p.estimate < h.estimate)


def test_worst_in_range_poisoning_degrades_accuracy():
    """Paired runs over seeds (same data and noise draws, 40 % worst-in-range poisoners vs none): the mean
    accuracy over the rounds drops.  One-sided paired t-test at level 1 % (the threshold is Student's
    quantile times the observed standard error over the seeds, not a tuned constant)."""
    seeds = range(8)
    diff = []
    for seed in seeds:
        base = dict(protocol="ss-topk", n=100, rounds=4, seed=seed, tight=False)
        honest = train(FLSettings(**base))["accuracy"][1:]
        poisoned = train(FLSettings(**base, poisoned=0.4))["accuracy"][1:]
        diff.append(np.mean(honest) - np.mean(poisoned))
    diff = np.array(diff)
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert diff.mean() > student_t.ppf(0.99, diff.size - 1) * se


# --- hostile input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [1.5, -0.1, -1, math.nan, math.inf, True, "0.1"])
def test_poisoned_refuses_what_is_neither_a_fraction_nor_a_count(bad):
    with pytest.raises(ParameterError, match="poisoned"):
        Poisoning(bad)


def test_poisoning_count_and_fraction():
    assert [Poisoning(f).count(300) for f in (0, 0.01, 0.05, 0.1, 0.2)] == [0, 3, 15, 30, 60]
    assert Poisoning(0.999).count(10) == 9 and Poisoning(7).count(7) == 7 and Poisoning(1).count(300) == 1
    with pytest.raises(ParameterError, match="exceeds"):
        Poisoning(8).count(7)
    with pytest.raises(ParameterError, match="strategy"):
        Poisoning(0.1, "flip")


@pytest.mark.parametrize("argv", [
    ["--poisoned", "1.5"], ["--poisoned", "-0.2"], ["--poisoned", "nan"], ["--poisoned", "301"],
    ["--poisoned", "0.1", "--poison-strategy", "nope"], ["--poisoned", "0.1", "--protocol", "np"],
    ["--no-range-check", "--protocol", "dp"],
])
def test_cli_refuses_hostile_poisoning(argv, capsys):
    from shufflesim.cli.main import main

    assert main(["fl", "--protocol", "ss-topk", "--rounds", "1", "--no-tight", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1


def test_cli_poisoned_json(capsys):
    from shufflesim.cli.main import main

    assert main(["fl", "--protocol", "ss-double", "--rounds", "2", "--n", "40", "--no-tight", "--poisoned", "0.1",
                 "--poison-strategy", "out-of-range", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    k = out["params"]["k"]
    assert out["poisoning"]["clients_per_round"] == 4 and out["poisoning"]["out_of_range"] == 2 * 4 * k
    assert main(["fl", "--protocol", "ss-double", "--rounds", "1", "--n", "40", "--no-tight", "--poisoned", "2",
                 "--poison-strategy", "out-of-range", "--no-range-check"]) == 0
    text = capsys.readouterr().out
    assert f"2 of 40 clients a round (out-of-range), range check off: {2 * k} out-of-range values summed" in text
    assert "note: eps above assumes all n clients randomise honestly" in text  # the printed eps is not the honest clients'


# --- scenario files ---------------------------------------------------------------------------------------
STEP = """
title = "t"
paper = "none"
reproduces = "none"
seed = 1

[[training]]
name = "poison"
protocol = "ss-double"
rounds = 2
{extra}
settings = {{ tight = false, n = 30 }}
"""


def _scenario(tmp_path, extra):
    from shufflesim.scenarios.schema import load
    from shufflesim.scenarios.steps import check_runnable

    p = tmp_path / "s.toml"
    p.write_text(STEP.format(extra=extra))
    sc = load(p)
    check_runnable(sc, quick=True)
    return sc


def test_training_step_poisoning_axes(tmp_path):
    from shufflesim.scenarios.runner import run_training_step

    sc = _scenario(tmp_path, 'poisoned = [0, 0.1]\npoison_strategy = "out-of-range"\nrange_check = [true, false]\n'
                             'x = "poisoned"')
    df = run_training_step(sc["training"][0], sc, quick=True)
    last = df[df["round"] == df["round"].max()]
    assert len(last) == 4 and set(last["label"]) == {"ss-double, range check True", "ss-double, range check False"}
    assert sorted(last["poisoned_fraction"]) == [0.0, 0.0, 0.1, 0.1]
    hit = last[last["poisoned_fraction"] == 0.1]
    assert (hit["out_of_range"] == 2 * 3 * max(1, round(650 / 50))).all()
    # the honest point is the step without poisoning keys (same rows, the poisoning columns aside)
    plain = run_training_step(_scenario(tmp_path, "")["training"][0], sc, quick=True)
    honest = df[(df["poisoned_fraction"] == 0) & df["range_check"]]
    assert honest["accuracy"].tolist() == plain["accuracy"].tolist()


@pytest.mark.parametrize("extra,match", [
    ("poisoned = [0, 1.5]", "poisoned"),
    ("poisoned = -0.1", "out of range"),
    ('x = "poisoned"', "needs the step's poisoned"),
    ('poison_strategy = "nope"\npoisoned = 0.1', "strategy"),
])
def test_training_step_refuses_bad_poisoning(tmp_path, extra, match):
    from shufflesim.scenarios.schema import ScenarioError

    with pytest.raises(ScenarioError, match=match):
        _scenario(tmp_path, extra)


def test_training_step_refuses_the_same_key_twice(tmp_path):
    from shufflesim.scenarios.schema import ScenarioError

    p = tmp_path / "s.toml"
    p.write_text(STEP.format(extra="poisoned = 0.1").replace("n = 30", "n = 30, poisoned = 0.2"))
    from shufflesim.scenarios.schema import load
    from shufflesim.scenarios.steps import check_runnable

    with pytest.raises(ScenarioError, match="give it once"):
        check_runnable(load(p), quick=True)


def test_training_step_seeds(tmp_path):
    """``seeds = 2`` runs every point with the scenario's seed and the next; the first is the single-seed run."""
    from shufflesim.scenarios.runner import run_training_step

    sc = _scenario(tmp_path, 'poisoned = 0.1\nseeds = 2\nx = "poisoned"')
    df = run_training_step(sc["training"][0], sc, quick=False)
    assert sorted(set(df["seed"])) == [1, 2] and len(df) == 2 * 3
    one = _scenario(tmp_path, 'poisoned = 0.1\nx = "poisoned"')
    single = run_training_step(one["training"][0], one, quick=False)
    assert "seed" not in single and single["accuracy"].tolist() == df[df["seed"] == 1]["accuracy"].tolist()
