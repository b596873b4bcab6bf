"""Client sampling in the federated study (issue 31 item 4): ``fl --clients-per-round m`` / ``--participation q``.

The participants' law is checked against its definition (fixed: exactly m distinct clients, each included with
probability m/n; Poisson: Binomial(n, q) participants a round), with fixed seeds and a significance level set
before looking (1e-3 per test, Bonferroni over the checks of one test); m = n and q = 1 reproduce an unsampled
run bit for bit, and the unsampled run reproduces the numbers of the code before client sampling existed.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from shufflesim.cli.main import main
from shufflesim.federated.training import FLSettings, run_privacy, sample_clients, train

ALPHA = 1e-3
ROOT = Path(__file__).resolve().parent.parent

#: the unsampled runs of FLSettings(protocol=p, rounds=2, n=120, seed=3, tight=(p == "ss-double")) on digits,
#: recorded with the code before client sampling (commit 82eba91): (accuracy per round, eps, messages)
#: the protocols whose runs take a sampling law (and "dp", which takes only a fixed m)
PROTOCOLS = ("np", "ss-simple", "ss-double", "ss-topk", "dp", "ldp")


def _settings(protocol: str, **kw) -> FLSettings:
    return FLSettings(protocol=protocol, rounds=2, n=120, seed=3, tight=(protocol == "ss-double"), **kw)


def _rounds(seed: int, rounds: int) -> list[np.random.SeedSequence]:
    """The rounds' SeedSequence children as train() spawns them (one spawn a round from the root)."""
    root = np.random.SeedSequence(seed)
    return [root.spawn(1)[0] for _ in range(rounds)]


# -- the law of the participants ---------------------------------------------------------------------------------

def test_fixed_size_is_exactly_m_distinct_and_uniform():
    """Exactly m distinct positions in [0, n) every round, ascending; over R independent rounds each client's
    inclusions are exactly Binomial(R, m/n) (its marginal), so every count lies in its two-sided range at
    ALPHA/n (Bonferroni: a union bound, valid although one round's inclusions are dependent)."""
    n, m, R = 40, 7, 3000
    counts = np.zeros(n, dtype=np.int64)
    for seq in _rounds(11, R):
        s = sample_clients(seq, n, clients_per_round=m)
        assert s.size == m and np.unique(s).size == m and np.all(np.diff(s) > 0) and 0 <= s[0] and s[-1] < n
        counts[s] += 1
    assert counts.sum() == R * m
    p = m / n
    lo = stats.binom.ppf(ALPHA / (2 * n), R, p)
    hi = stats.binom.isf(ALPHA / (2 * n), R, p)
    assert np.all((counts >= lo) & (counts <= hi)), (counts.min(), counts.max(), lo, hi)


def test_poisson_participation_is_binomial():
    """Each round's number of participants is Binomial(n, q): the total over R rounds is Binomial(R n, q)
    (binomtest), the per-round counts fit Binomial(n, q) (chi-square over bins with expected count >= 5), and
    each client's inclusions are Binomial(R, q) (every one inside its Bonferroni range); ALPHA split over the
    three checks."""
    n, q, R = 50, 0.3, 4000
    per_round = np.empty(R, dtype=np.int64)
    incl = np.zeros(n, dtype=np.int64)
    for i, seq in enumerate(_rounds(12, R)):
        s = sample_clients(seq, n, participation=q)
        assert np.unique(s).size == s.size and (s.size == 0 or (s[0] >= 0 and s[-1] < n))
        per_round[i] = s.size
        incl[s] += 1
    a = ALPHA / 3
    assert stats.binomtest(int(per_round.sum()), R * n, q).pvalue > a
    k = np.arange(n + 1)
    expected = R * stats.binom.pmf(k, n, q)
    observed = np.bincount(per_round, minlength=n + 1).astype(float)
    keep = expected >= 5  # the tails pooled into the two end bins
    lo_k, hi_k = k[keep][0], k[keep][-1]
    exp_b = np.concatenate([[expected[: lo_k + 1].sum()], expected[lo_k + 1:hi_k], [expected[hi_k:].sum()]])
    obs_b = np.concatenate([[observed[: lo_k + 1].sum()], observed[lo_k + 1:hi_k], [observed[hi_k:].sum()]])
    assert stats.chisquare(obs_b, exp_b * obs_b.sum() / exp_b.sum()).pvalue > a
    lo = stats.binom.ppf(a / (2 * n), R, q)
    hi = stats.binom.isf(a / (2 * n), R, q)
    assert np.all((incl >= lo) & (incl <= hi))


def test_poisson_can_be_empty_and_the_run_handles_it():
    """q small enough that some round is empty: the run completes, the empty round leaves the model (and its
    accuracy) where it was, and the report counts it."""
    res = train(FLSettings(protocol="ss-double", rounds=6, n=5, seed=0, participation=0.05, tight=False))
    sm = res["sampling"]
    assert sm["empty_rounds"] == sm["participants"].count(0) >= 1
    acc = res["accuracy"]
    for r, c in enumerate(sm["participants"]):
        if c == 0:
            assert acc[r + 1] == acc[r]


def test_m_equal_n_and_q_one_keep_every_client_in_order():
    for seq in _rounds(5, 20):
        assert np.array_equal(sample_clients(seq, 30, clients_per_round=30), np.arange(30))
        assert np.array_equal(sample_clients(seq, 30, participation=1.0), np.arange(30))
        assert np.array_equal(sample_clients(seq, 30), np.arange(30))


# -- reproducibility ---------------------------------------------------------------------------------------------

def _participants(args):
    seed, rounds, n, m, q = args
    return [sample_clients(seq, n, m, q).tolist() for seq in _rounds(seed, rounds)]


def _run(s: FLSettings):
    r = train(s)
    return r["accuracy"], r["sampling"]["participants"], r["eps"]


def test_same_seed_same_clients_on_one_and_two_workers():
    """The participants are a function of the seed and the round only: serial, and in two worker processes
    (each its own interpreter), give the same clients, and the same training run."""
    jobs = [(7, 5, 100, 10, None), (7, 5, 100, None, 0.2)]
    serial = [_participants(j) for j in jobs]
    s = _settings("ss-topk", clients_per_round=30)
    s2 = _settings("np", participation=0.4)
    with ProcessPoolExecutor(2) as pool:
        assert list(pool.map(_participants, jobs)) == serial
        two = list(pool.map(_run, [s, s2]))
    assert two == [_run(s), _run(s2)]
    assert serial[0] != _participants((8, 5, 100, 10, None))  # another seed, other clients


def test_sampling_leaves_the_protocol_draws_alone():
    """The sampling stream is not a spawn of the round's generator: with m = n the protocol's draws are the
    unsampled run's (the next test checks the whole run); the stream differs from the round's own children."""
    seq = _rounds(3, 1)[0]
    g = np.random.Generator(np.random.PCG64(seq))
    before = g.spawn(2)[0].random(4)
    sample_clients(seq, 10, clients_per_round=4)
    g2 = np.random.Generator(np.random.PCG64(_rounds(3, 1)[0]))
    assert np.array_equal(g2.spawn(2)[0].random(4), before)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_m_equal_n_and_q_one_reproduce_the_unsampled_run_bit_for_bit(protocol):
    """m = n clients per round, or participation 1, is the unsampled run: the same accuracies, ε and messages,
    bit for bit (exactness is the point: the sampling stream must not move any draw of the run).  Compared in the
    same process: recorded numbers would differ across numpy releases (the floor's numpy 1.26 draws differently
    for the same seed), which is not what this test is about."""
    plain = train(_settings(protocol))
    if protocol == "ss-double":
        # the run's eps takes SS-Double's coordinate-sampling credit (docs/theory.md#flame-double) where it is
        # smaller than the unsampled clones PLD, which stays among the methods
        assert plain["privacy"]["method"] == "clones-coordinate-sampling"
        assert plain["eps"] == plain["privacy"]["values"]["clones-coordinate-sampling"]
        assert plain["eps"] < plain["privacy"]["values"]["clones"]
    laws = [{"clients_per_round": 120}] + ([] if protocol == "dp" else [{"participation": 1.0}])
    for law in laws:
        r = train(_settings(protocol, **law))
        assert r["accuracy"] == plain["accuracy"], law
        assert r["eps"] == plain["eps"] and r["messages"] == plain["messages"], law
        assert r["sampling"]["participants"] == [120, 120]


# -- the run's epsilon -------------------------------------------------------------------------------------------

def _configs(proto: str, m, q):
    """The round's configuration (every participant of the largest round: m, or all 100 under Poisson) and the
    same with the sampling law, as train() builds them (digits-sized: d = 650, k = 13)."""
    from shufflesim.federated.encoding import FlameConfig
    from shufflesim.federated.training import SampledFlameConfig

    cfg = FlameConfig(proto, 650, m if m is not None else 100, 26.0, C=0.1, k=13)
    sampled = SampledFlameConfig(proto, 650, 100, 26.0, C=0.1, k=13, n_p=None if proto == "ss-simple" else cfg.n_p,
                                 l=cfg.l, clients_per_round=m, participation=q)
    return cfg, sampled


def test_run_privacy_without_credit_is_the_unsampled_accounting():
    """No sampling credit unless the accountant states one: fixed m (SS-*) and Poisson SS-Double/Topk give the
    unsampled accounting of the round's configuration; Poisson SS-Simple gives the local guarantee's composition
    (a round may hold the target alone) and lists no shuffling method."""
    from shufflesim.federated.accounting import flame_privacy

    delta = 1e-5
    for proto in ("ss-simple", "ss-double", "ss-topk"):
        for m, q in ((30, None), (None, 0.3)):
            cfg, sampled = _configs(proto, m, q)
            out = run_privacy(cfg, sampled, 2, delta, tight=False)
            ref = flame_privacy(cfg, 2, delta, tight=False)
            assert out["sampling_credit"] is False and "no sampling credit" in out["sampling_note"]
            if proto == "ss-simple" and q is not None:
                assert out["method"] == "ldp" and out["eps"] == ref.values["ldp"]
                assert set(out["values"]) == {"ldp", "paper-original-2019"} and out["paper_n"] == 30
            else:
                assert out["eps"] == ref.eps and out["method"] == ref.method


def test_the_papers_value_of_a_sampled_run_does_not_depend_on_the_accountant():
    """The paper's accounting of a sampled run (a comparison column, not a guarantee) is the same whether the
    sampling is credited (tight) or not: SS-Simple under Poisson participation at the expected participants q·n
    (it has no padding; docs/flame.md "Client sampling"), the others at the round's configuration."""

    delta = 1e-5
    for proto in ("ss-simple", "ss-double"):
        for m, q in ((30, None), (None, 0.3)):
            cfg, sampled = _configs(proto, m, q)
            loose = run_privacy(cfg, sampled, 2, delta, tight=False)
            credited = run_privacy(cfg, sampled, 2, delta, tight=True)
            assert credited["sampling_credit"] is True
            assert (credited["values"]["paper-original-2019"] == loose["values"]["paper-original-2019"]
                    is not None), (proto, m, q)
            assert credited.get("paper_n") == loose.get("paper_n"), (proto, m, q)


def test_the_cli_prints_the_law_and_the_method(capsys):
    assert main(["fl", "--protocol", "ss-double", "--rounds", "2", "--n", "60", "--clients-per-round", "20",
                 "--no-tight"]) == 0
    out = capsys.readouterr().out
    assert "client sampling: exactly 20 of the n = 60 clients a round; participants 20 20" in out
    assert "sampling: no sampling credit claimed" in out


# -- bad input ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags, words", [
    (["--clients-per-round", "0"], "clients_per_round must be an integer >= 1"),
    (["--clients-per-round", "301"], "clients_per_round must be at most n = 300"),
    (["--participation", "0"], "participation must be in (0.0, 1.0]"),
    (["--participation", "1.5"], "participation must be in (0.0, 1.0]"),
    (["--participation", "nan"], "participation must be finite"),
    (["--participation", "inf"], "participation must be finite"),
    (["--clients-per-round", "5", "--participation", "0.5"], "not both"),
    (["--participation", "0.5", "--poisoned", "0.1"], "poisoned clients are simulated without client sampling"),
    (["--clients-per-round", "2.5"], "--clients-per-round: invalid integer"),
])
def test_bad_flags_exit_2_with_one_line(flags, words, capsys):
    assert main(["fl", "--protocol", "ss-topk", "--rounds", "1", *flags]) == 2
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], cap.err
    assert "Traceback" not in cap.err and cap.out == ""


def test_dp_refuses_poisson_participation(capsys):
    assert main(["fl", "--protocol", "dp", "--rounds", "1", "--participation", "0.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not implemented for dp" in err[0]


# -- the scenario ------------------------------------------------------------------------------------------------

def _scenario_on(tmp_path: Path, dataset: str | None):
    from shufflesim.scenarios.runner import run_scenario
    from shufflesim.scenarios.schema import load

    sc = load(ROOT / "scenarios" / "flame_training_sampling.toml")
    if dataset is not None:  # the same steps on the digits (d = 650; n = 300 clients): the step kinds, quickly
        sc["training"] = [dict(s, dataset=dataset, settings={**s["settings"], "n": 300, "eps_l": 26.0,
                                                             "tight": False}) for s in sc["training"]]
    out = tmp_path / "out"
    run_scenario(sc, out, quick=True)
    return out


def _check_scenario_output(out: Path, n_protocols: int, *, credited: bool):
    """``credited``: the scenario's tight accountant credits the sampling (run_privacy -> sampled_privacy) in
    every shuffled row; with tight = False no row claims a credit."""
    import pandas as pd

    assert (out / "accuracy_vs_eps.png").exists() and (out / "report.md").exists()
    for name in ("mnist_m100", "mnist_q01"):
        df = pd.read_parquet(out / "results" / f"{name}.parquet")
        assert set(df["protocol"]) == {"np", "ss-simple", "ss-double", "ss-topk"} and len(df) == 2 * n_protocols
        shuffled = df[df["protocol"] != "np"]
        assert shuffled["eps"].notna().all() and shuffled["eps_paper"].notna().all()
        assert (shuffled["sampling_credit"] == credited).all()
        assert not df[df["protocol"] == "np"]["sampling_credit"].any()
        assert df["eps_lower"].isna().all()  # no lower end is derived under client sampling (p < 1)
        law = df["clients_per_round"].iloc[0] if name == "mnist_m100" else df["participation"].iloc[0]
        assert law == (100 if name == "mnist_m100" else 0.1)
    report = (out / "report.md").read_text()
    assert "eps_paper" in report and "participants_mean" in report and "eps_lower" in report


def test_the_scenario_runs_quick_on_the_digits(tmp_path):
    _check_scenario_output(_scenario_on(tmp_path, "digits"), 4, credited=False)  # tight = False: no credit


@pytest.mark.slow
def test_the_scenario_runs_quick(tmp_path):
    """The scenario itself (MNIST, tight accountant) in quick mode: ~40 s on the 2-core machine."""
    _check_scenario_output(_scenario_on(tmp_path, None), 4, credited=True)


def test_the_cost_estimate_counts_the_sampled_clients(monkeypatch):
    """The time estimate (core.resources.choose_path) is timed on the clients that compute: m, or ⌈q·n⌉."""
    import shufflesim.core.resources as resources

    seen = []
    real = resources.choose_path

    def spy(what, paths, **kw):
        seen.append(what)
        return real(what, paths, **kw)

    monkeypatch.setattr(resources, "choose_path", spy)
    for law in ({}, {"clients_per_round": 30}, {"participation": 0.25}):
        train(FLSettings(protocol="np", rounds=1, n=120, seed=0, **law))
    assert [w.rsplit("for ", 1)[1] for w in seen] == ["120 users", "30 users", "30 users"]


# -- the no-credit argument, by brute force ----------------------------------------------------------------------
#
# A round of a shuffled binary RR "coordinate" among N = 4 clients (client 0 the target), every participation
# pattern S enumerated with its probability; the analyser sees the number of participants and the histogram of
# the coordinate's messages: the participants' reports, plus (padded, as SS-Double/Topk) dummies up to n_p = N
# drawn from the blanket (a uniform bit: RR of a uniform input).  run_privacy's no-credit answer is the unsampled
# accounting with n_p messages, whose guarantee holds for every data set of the others, so it is at least the
# worst exact δ over them: the sampled δ must not exceed that, single use and 2-fold (the argument of
# run_privacy / docs/flame.md "Client sampling").  Unpadded (SS-Simple) under Poisson participation a round may
# hold the target alone, a pattern the unsampled accounting does not dominate: why only ldp is reported there.

N_CLIENTS = 4


def _patterns(law: dict):
    import itertools

    for S in itertools.product((0, 1), repeat=N_CLIENTS):
        c = sum(S)
        if "q" in law:
            w = law["q"] ** c * (1 - law["q"]) ** (N_CLIENTS - c)
        else:
            w = 1.0 / math.comb(N_CLIENTS, law["m"]) if c == law["m"] else 0.0
        if w > 0:
            yield [i for i in range(N_CLIENTS) if S[i]], w


def _sampled_law(R_aug, data, law, padded: bool) -> dict:
    from shufflesim.accounting.exact.shuffle_oracle import histogram_law

    out: dict = {}
    for S, w in _patterns(law):
        inputs = [data[i] for i in S] + ([2] * (N_CLIENTS - len(S)) if padded else [])
        for h, p in histogram_law(R_aug, inputs).items():
            out[(len(S), h)] = out.get((len(S), h), 0.0) + w * p
    return out


def _hockey(P: dict, Q: dict, eps: float) -> float:
    e = math.exp(eps)
    keys = set(P) | set(Q)
    return max(sum(max(0.0, P.get(k, 0.0) - e * Q.get(k, 0.0)) for k in keys),
               sum(max(0.0, Q.get(k, 0.0) - e * P.get(k, 0.0)) for k in keys))


def _product(P: dict, Q: dict) -> dict:
    return {(a, b): p * q for a, p in P.items() for b, q in Q.items()}


def _others():
    import itertools

    return list(itertools.product((0, 1), repeat=N_CLIENTS - 1))


def _unsampled_worst(R, eps: float, folds: int) -> float:
    """Largest exact δ(ε) of ``folds`` rounds of the unsampled coordinate (the target and N - 1 others, every
    assignment of the others' bits, chosen afresh each round)."""
    import itertools

    from shufflesim.accounting.exact.shuffle_oracle import histogram_law

    laws = {o: (histogram_law(R, [0, *o]), histogram_law(R, [1, *o])) for o in _others()}
    best = 0.0
    for combo in itertools.product(_others(), repeat=folds):
        P, Q = laws[combo[0]]
        for o in combo[1:]:
            P, Q = _product(P, laws[o][0]), _product(Q, laws[o][1])
        best = max(best, _hockey(P, Q, eps))
    return best


@pytest.mark.parametrize("eps0", [1.0, 3.0])
def test_padded_sampling_is_dominated_by_the_unsampled_accounting(eps0):
    from shufflesim.accounting.exact.shuffle_oracle import krr_matrix

    R = krr_matrix(2, eps0)
    R_aug = np.vstack([R, [0.5, 0.5]])  # input 2: the blanket's dummy
    for eps in (0.0, 0.5, 1.5):
        worst1, worst2 = _unsampled_worst(R, eps, 1), _unsampled_worst(R, eps, 2)
        for law in ({"q": 0.3}, {"q": 0.8}, {"m": 1}, {"m": 2}, {"m": 4}):
            for o in _others():
                P = _sampled_law(R_aug, (0, *o), law, padded=True)
                Q = _sampled_law(R_aug, (1, *o), law, padded=True)
                assert _hockey(P, Q, eps) <= worst1 + 1e-12, (eps, law, o)
                assert _hockey(_product(P, P), _product(Q, Q), eps) <= worst2 + 1e-12, (eps, law, o)


def test_unpadded_poisson_escapes_the_per_pattern_argument():
    """SS-Simple's case: no padding, so a Poisson round may hold the target alone, and that pattern's δ exceeds
    the unsampled worst case among N clients: the per-pattern argument does not cover it (why run_privacy reports
    only the ldp composition there).  The mixture itself stays below the local guarantee, and fixed m = N
    (everyone, always) is the unsampled mechanism itself."""
    from shufflesim.accounting.exact.shuffle_oracle import krr_matrix

    R = krr_matrix(2, 3.0)
    eps = 0.5
    worst = _unsampled_worst(R, eps, 1)
    alone = _hockey({0: R[0, 0], 1: R[0, 1]}, {0: R[1, 0], 1: R[1, 1]}, eps)  # the target's RR alone: the ldp δ
    assert alone > worst
    sampled = max(_hockey(_sampled_law(R, (0, *o), {"q": 0.5}, False), _sampled_law(R, (1, *o), {"q": 0.5}, False),
                          eps) for o in _others())
    assert sampled <= alone
    full = max(_hockey(_sampled_law(R, (0, *o), {"m": N_CLIENTS}, False),
                       _sampled_law(R, (1, *o), {"m": N_CLIENTS}, False), eps) for o in _others())
    assert abs(full - worst) < 1e-12


def _printed_rounded_up(printed: str, value: float) -> bool:
    """``printed`` is ``value`` rounded UP to its own number of decimals (the smallest such decimal ≥ value)."""
    from decimal import Decimal

    p = Decimal(printed)
    step = Decimal(1).scaleb(p.as_tuple().exponent)
    return p >= Decimal(value) > p - step


def test_docs_client_sampling_table_is_the_accountants_value_rounded_up():
    """docs/flame.md "Client sampling": the SS-Simple row's certified ε of the MNIST scenario
    (scenarios/flame_training_sampling.toml: d = 7850, n = 1000, ε_l = 78.5, 10 rounds, δ = 0.01/n^1.1; m = 100
    and q = 0.1) recomputed by run_privacy with the configurations train() builds, and the printed values must be
    those numbers rounded up (so the table cannot go stale silently: review after commit 35186b9, where the
    Poisson row still showed 1.56 for 1.6084)."""
    import re

    from shufflesim.federated.encoding import FlameConfig
    from shufflesim.federated.training import SampledFlameConfig

    lines = (ROOT / "docs" / "flame.md").read_text(encoding="utf-8").splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| protocol | m = 100: accuracy"))
    row = next(line for line in lines[head:] if line.startswith("| ss-simple |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    printed = {"m": re.match(r"\*\*([0-9.]+)\*\*", cells[2]).group(1),
               "q": re.match(r"\*\*([0-9.]+)\*\*", cells[5]).group(1)}
    s = FLSettings(protocol="ss-simple", dataset="mnist", n=1000, eps_l=78.5, rounds=10)
    d, n, delta = 7850, 1000, 0.01 / 1000**1.1
    k = max(1, round(s.beta * d))
    for key, m, q in (("m", 100, None), ("q", None, 0.1)):
        cfg = FlameConfig("ss-simple", d, m if m is not None else n, s.eps_l, C=s.C, randomiser=s.randomiser, b=s.b,
                          k=k)
        sampled = SampledFlameConfig("ss-simple", d, n, s.eps_l, C=s.C, randomiser=s.randomiser, b=s.b, k=k,
                                     n_p=None, l=cfg.l, clients_per_round=m, participation=q)
        out = run_privacy(cfg, sampled, s.rounds, delta)
        assert out["method"] == "clones" and out["sampling_credit"] is True
        assert _printed_rounded_up(printed[key], out["eps"]), (key, printed[key], out["eps"])
