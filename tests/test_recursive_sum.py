"""The recursive multi-message protocol (seed 004 §4; docs/theory.md#summation-recursive): randomiser distribution per level,
unbiasedness, exact MSE, parameter modes and the parallel-shuffler model.

Statistical tests: fixed seeds, family-wise level ALPHA = 1e-3 per test, Bonferroni within a test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from shufflesim import InfeasibleError, ParameterError
from shufflesim.pipeline import registry
from shufflesim.cli.main import main as cli_main
from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.protocols.blanket_sum import BlanketLevel, level_gamma
from shufflesim.protocols.recursive_sum import (
    RecursiveSumAnalyser,
    RecursiveSumRandomiser,
    _split_objective,
    authors_mse_bound,
    composed_delta,
    generic_precisions,
    levels_for,
    optimise_basic,
    paper_messages,
    recursive_user_variances,
    recursive_worst_mse,
)
from shufflesim.maths.rounding import mixed_radix_digits
from shufflesim.pipeline.shuffler import ParallelShufflers
from shufflesim.experiments.stats import bonferroni_level

ALPHA = 1e-3


# ------------------------------------------------------------------------------------------- randomiser
@pytest.mark.parametrize("precisions,gammas", [((3, 4), (0.2, 0.5)), ((2, 3, 5), (0.1, 0.3, 0.6))])
def test_randomiser_level_distributions(precisions, gammas):
    """Chi-square per level and per input: level j < r reports its digit through blanket RR; the last level
    the randomised rounding of p_r·t."""
    rnd = RecursiveSumRandomiser(precisions, gammas)
    levels = levels_for(precisions, gammas)
    rng = np.random.default_rng(list(precisions))
    n = 20_000
    inputs = [0.0, 0.137, 0.5, 0.8765, 1.0]
    tests = len(inputs) * len(levels)
    for x in inputs:
        y = rnd.randomise(np.full(n, x), rng)
        assert y.shape == (n, len(levels))
        digits, t = mixed_radix_digits(np.array([x]), precisions)
        for j, lv in enumerate(levels):
            if j < len(levels) - 1:
                expected = lv.report_probabilities(int(digits[j][0]))
            else:
                s = precisions[-1] * t[0]
                lo = math.floor(s)
                f = s - lo
                expected = (1 - f) * lv.report_probabilities(lo)
                if f > 0:
                    expected = expected + f * lv.report_probabilities(lo + 1)
            obs = np.bincount(y[:, j], minlength=lv.values)
            assert obs.size == lv.values
            assert stats.chisquare(obs, n * expected).pvalue > ALPHA / tests, (x, j, obs)


def test_randomiser_metadata():
    rnd = RecursiveSumRandomiser((4, 47), (0.01, 0.1))
    assert rnd.messages_per_user == 2
    assert [s.high for s in rnd.message_space] == [3, 47]
    assert rnd.bits_per_message == 6  # 48 values in the last level


# ------------------------------------------------------------------------------------ theory vs brute force
@pytest.mark.parametrize("precisions,gammas", [((3, 4), (0.05, 0.2)), ((2, 3, 5), (0.1, 0.02, 0.3)), ((7, 2), (0.5, 0.5))])
def test_user_variance_by_enumeration(precisions, gammas):
    """Σ_j Var(y_j)/(Q_j²(1−γ_j)²) against an explicit enumeration of every level's report distribution."""
    levels = levels_for(precisions, gammas)
    q = np.cumprod(precisions)
    for x in (0.0, 0.31, 0.5, 0.77, 1.0):
        digits, t = mixed_radix_digits(np.array([x]), precisions)
        total = 0.0
        for j, lv in enumerate(levels):
            if j < len(levels) - 1:
                probs = lv.report_probabilities(int(digits[j][0]))
            else:
                s = precisions[-1] * t[0]
                lo = math.floor(s)
                f = s - lo
                probs = (1 - f) * lv.report_probabilities(lo) + (f * lv.report_probabilities(lo + 1) if f else 0)
            v = np.arange(lv.values)
            m = probs @ v
            total += float(probs @ (v - m) ** 2) / (q[j] ** 2 * (1 - lv.gamma) ** 2)
        assert recursive_user_variances(np.array([x]), precisions, gammas)[0] == pytest.approx(total, rel=1e-12)


@pytest.mark.parametrize("precisions,gammas", [((3, 4), (0.05, 0.2)), ((2, 3, 5), (0.1, 0.02, 0.3)), ((4, 47), (0.01, 0.13))])
def test_worst_case_is_the_maximum_over_inputs(precisions, gammas):
    n = 1000
    grid = np.linspace(0, 1, 400_001)
    per_user = recursive_user_variances(grid, precisions, gammas)
    worst = recursive_worst_mse(n, precisions, gammas)
    assert n * per_user.max() <= worst * (1 + 1e-12)
    assert n * per_user.max() >= worst * (1 - 1e-5)
    rng = np.random.default_rng(0)
    for x in (rng.random(n), rng.beta(0.2, 0.2, n), np.ones(n)):
        assert np.sum(recursive_user_variances(x, precisions, gammas)) <= worst * (1 + 1e-12)


def test_authors_expression_can_fall_below_the_exact_worst_case():
    """The Lemma A.1 expression uses p_r where the last level has p_r + 1 values (computed, not typed)."""
    ps, gs = (3, 9), (0.0747, 0.1907)
    assert authors_mse_bound(10_000, ps, gs) < recursive_worst_mse(10_000, ps, gs)


# ------------------------------------------------------------------------------ unbiasedness and MSE coverage
DATASETS = ["constant:0.4321", "uniform", "adult-age", "constant:1"]


def test_unbiased_and_mse_interval_covers_exact_value():
    n, T = 3000, 400
    proto = registry.create("recursive-sum", n, precisions=[3, 5], gammas=[0.05, 0.3], eps_split=[0.6, 0.4],
                            mode="bennett")
    tests = 2 * len(DATASETS)
    level = bonferroni_level(1 - ALPHA, tests)
    zcrit = stats.norm.ppf(1 - ALPHA / (2 * tests))
    for i, spec in enumerate(DATASETS):
        x = load_data(spec, data_kind="real", n=n, rng=30 + i)
        run = run_trials(proto, x, trials=T, rng=300 + i)
        exp = proto.mse_expected(x)
        z = run.records["error"].mean() / math.sqrt(exp / T)
        assert abs(z) < zcrit, (spec, z)
        s = summarise(run.records, proto, x, level=level)
        lo, hi = s["mse_ci"]
        assert lo <= exp <= hi, (spec, s)
        assert exp <= proto.mse_worst()


# --------------------------------------------------------------------------------- parallel shufflers
def test_parallel_shuffler_model():
    """Each channel is a uniformly shuffled copy of one message index; channels are permuted independently,
    so the analyser cannot link a user's messages; the estimate depends on the multisets only."""
    n = 5000
    msgs = np.tile(np.arange(n, dtype=np.int64)[:, None], (1, 3))  # every user's three messages carry its id
    view = ParallelShufflers().shuffle(msgs, np.random.SeedSequence(9))
    assert view.n_channels == 3
    chans = [view.channel(j) for j in range(3)]
    for c in chans:
        assert np.array_equal(np.sort(c), np.arange(n))  # a permutation of message index j
    # positions of user i in channel 0 and channel 1: independent permutations (Spearman rho ~ N(0, 1/n))
    pos = [np.argsort(c) for c in chans]
    rho = stats.spearmanr(pos[0], pos[1]).statistic
    assert abs(rho) < stats.norm.ppf(1 - ALPHA / 2) / math.sqrt(n - 1)
    assert abs(stats.spearmanr(pos[0], np.arange(n)).statistic) < stats.norm.ppf(1 - ALPHA / 2) / math.sqrt(n - 1)
    # the analyser's output does not depend on which user sent what
    an = RecursiveSumAnalyser((3, 4), (0.1, 0.2), n)
    rng = np.random.default_rng(1)
    m = np.c_[rng.integers(0, 3, n), rng.integers(0, 5, n)]
    v1 = ParallelShufflers().shuffle(m, np.random.SeedSequence(1))
    v2 = ParallelShufflers().shuffle(m[rng.permutation(n)], np.random.SeedSequence(2))
    assert an.analyse(v1, rng) == an.analyse(v2, rng)


def test_protocol_uses_parallel_shufflers():
    p = registry.create("recursive-sum", 2000, precisions=[3, 4], gammas=[0.1, 0.2], mode="bennett")
    assert isinstance(p.shuffler, ParallelShufflers)
    res = p.run(np.random.default_rng(0).random(2000), 5, keep_view=True)
    assert res.view.n_channels == 2 and res.messages_per_user == 2


# ------------------------------------------------------------------------------------------ parameters
def test_generic_rule():
    # the rule, evaluated by hand for n = 1e4, eps = 1, r = 2: X = 8 n eps^2 / 8 = 1e4, p_t = ceil(X^(3^(t-3)))
    ps = generic_precisions(10_000, 1.0, 1e-8, 2)
    x = (3**2 - 1) * 10_000 / 2**3
    pmax = math.floor(9999 * 0.5 / max(14 * math.log(2 / 5e-9) / 0.5, 27))
    assert ps == (min(math.ceil(x ** (1 / 9)), pmax), min(math.ceil(x ** (1 / 3)), pmax))
    with pytest.raises(InfeasibleError):
        generic_precisions(10_000, 0.5, 1e-8, 3)
    assert paper_messages(10_000) == 2 and paper_messages(100_000) == 3


def test_optimised_search_matches_brute_force():
    """Surrogate + polish against an exhaustive scan (bounded Brent split) over small precisions."""
    n, eps, r = 5000, 1.0, 2
    delta = 1 / n**2
    ps, split, val = optimise_basic(n, eps, delta, r, "fixed")
    best = math.inf
    for p1 in range(2, 8):
        for p2 in range(2, 24):
            f = lambda w: _split_objective(n, (p1, p2), (w * eps, (1 - w) * eps), delta / r, "fixed")  # noqa: E731
            res = optimize.minimize_scalar(f, bounds=(1e-3, 1 - 1e-3), method="bounded", options={"xatol": 1e-5})
            best = min(best, res.fun)
    assert val <= best * (1 + 1e-6)
    assert recursive_worst_mse(n, ps, [level_gamma("bennett", n, v, e, delta / r)
                                       for v, e in zip((ps[0], ps[1] + 1), split)]) == pytest.approx(val, rel=1e-12)


def test_modes_certify_and_improve():
    n, eps = 20_000, 1.0
    delta = 1 / n**2
    ben = registry.create("recursive-sum", n, eps=eps, messages=2, mode="bennett")
    opt = registry.create("recursive-sum", n, eps=eps, messages=2, mode="optimised")
    tig = registry.create("recursive-sum", n, eps=eps, messages=2, mode="tight")
    for p in (ben, opt):
        pr = p.privacy()
        assert pr.method == "basic-composition/bennett" and pr.eps == pytest.approx(eps) and pr.delta <= delta
        assert sum(p.params["eps_split"]) == pytest.approx(eps)
    assert tig.privacy().method == "tight" and tig.privacy().delta <= delta and tig.params["eps_split"] is None
    assert tig.params["adversary"] == "shuffled"
    assert composed_delta(n, tig.precisions, tig.gammas, eps, "shuffled") <= delta
    # the same certificate through the clones descriptions at the levels' eps0 (stronger clone pairs)
    from shufflesim.accounting.account import account
    from shufflesim.accounting.model.mechanism import Composition
    from shufflesim.maths.rr import eps0_from_gamma
    from shufflesim.mechanisms.clones import Clones

    values = (tig.precisions[0], tig.precisions[1] + 1)
    comp = Composition(tuple((Clones(n, eps0_from_gamma(g, v) * (1 + 1e-12)), 1) for v, g in zip(values, tig.gammas)))
    assert account(comp, eps=[eps]).results[0].delta_upper <= delta
    assert tig.mse_worst() < opt.mse_worst() <= ben.mse_worst()
    with pytest.raises(InfeasibleError):
        registry.create("recursive-sum", 10_000, eps=0.5, messages=2, mode="paper")


def test_explicit_gammas_certified_by_basic_composition():
    n = 20_000
    opt = registry.create("recursive-sum", n, eps=1.0, messages=2, mode="optimised")
    again = registry.create("recursive-sum", n, precisions=opt.precisions, gammas=opt.gammas,
                            eps_split=opt.params["eps_split"], mode="optimised")
    assert again.privacy().delta == pytest.approx(opt.privacy().delta, rel=1e-9)
    assert again.mse_worst() == opt.mse_worst()


@pytest.mark.parametrize("kw,msg", [
    ({}, "needs --eps"),
    ({"eps": 1.0, "messages": 1}, "messages must be"),
    ({"eps": 1.0, "messages": 3, "precisions": [2, 3]}, "must agree"),
    ({"eps": 1.0, "precisions": [1, 3]}, "precisions must be"),
    ({"gammas": [0.1, 0.2]}, "give --precisions together with --gammas"),
    ({"eps": 1.0, "eps_split": [0.5, 0.4]}, "must sum to eps"),
    ({"eps": 1.0, "eps_split": [0.5, 0.5], "mode": "tight"}, "eps_split is for basic composition"),
    ({"eps": 1.0, "mode": "fast"}, "mode must be one of"),
])
def test_invalid_parameters(kw, msg):
    with pytest.raises(ParameterError, match=msg):
        registry.create("recursive-sum", 10_000, **kw)


@pytest.mark.parametrize("mode", ["bennett", "optimised", "tight"])
def test_cli_json(mode, capsys):
    args = ["simulate", "recursive-sum", "--n", "20000", "--eps", "1", "--messages", "2", "--mode", mode,
            "--data", "adult-age", "--trials", "20", "--seed", "4", "--json"]
    assert cli_main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "recursive-sum" and out["params"]["mode"] == mode
    for key in ("precisions", "gammas", "eps_split", "mode"):
        assert key in out["params"]
    assert out["messages_per_user"] == 2 and out["privacy"]["delta"] <= 1 / 20000**2
    assert out["bits_per_message"] == max(math.ceil(math.log2(p)) for p in
                                          (out["params"]["precisions"][0], out["params"]["precisions"][1] + 1))
    assert out["mse_worst"] >= out["mse_expected"]


def test_weak_adversary_calibrated_on_weak_pairs_after_strong_search():
    n, eps = 20_000, 1.0
    delta = 1 / n**2
    weak = registry.create("recursive-sum", n, eps=eps, messages=2, mode="tight", adversary="weak")
    strong = registry.create("recursive-sum", n, eps=eps, messages=2, mode="tight", adversary="strong")
    assert weak.precisions == strong.precisions  # the search ran on the strong pairs
    assert "search ran on the strong pairs" in weak.privacy().notes[1]
    assert composed_delta(n, weak.precisions, weak.gammas, eps, "weak") <= delta
    # independently of that memoised value: the levels' weak pairs composed afresh on a 10x finer grid than the
    # calibration's (another discretisation, no shared cache) are certified at the target, and the calibration's
    # certified upper end is not below the fresh lower end
    from shufflesim.accounting.account import account
    from shufflesim.accounting.engines.tight import Numerics
    from shufflesim.accounting.model.mechanism import Composition, Relation
    from shufflesim.mechanisms.krr import KRR

    comp = Composition(tuple((KRR(n, len(lv.report_probabilities(0)), lv.gamma, Relation.WEAK), 1)
                             for lv in levels_for(weak.precisions, weak.gammas)))
    (r,) = account(comp, eps=[eps], numerics={"target_accuracy": Numerics.target_accuracy / 10}).results
    assert r.delta_upper <= delta and r.delta_lower <= composed_delta(n, weak.precisions, weak.gammas, eps, "weak")
    # the final nu is calibrated on the weak pairs: less blanket than the strong adversary needs
    assert all(w < s for w, s in zip(weak.gammas, strong.gammas))
    assert weak.mse_worst() < strong.mse_worst()


@pytest.mark.parametrize("n", [1000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_auto_mode_is_the_best_certified_mode_and_monotone_in_eps(n, auto_against_named):
    """Issue 18: auto takes, at each point, the certified mode with the smallest exact worst-case MSE (the
    paper's rules stay available by name), so a sweep over eps never gets worse at a larger eps."""
    modes = ("paper", "bennett", "optimised", "tight")
    worst = {eps: auto_against_named("recursive-sum", n, eps, modes, messages=2) for eps in (0.5, 1.0)}
    assert worst[1.0] <= worst[0.5], worst
