"""Issue 8: every valid question answered meaningfully, every invalid one refused in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from shufflesim.accounting.account import account
from shufflesim.cli.main import main
from shufflesim.mechanisms import KRR, RR2, Clones
from shufflesim.maths.rr import EPS0_MARGIN  # the stated upward margin of an eps0 computed from gamma


def _cli(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


# --- privacy answers that must mean something -------------------------------------------------------------
@pytest.mark.parametrize("mech, delta", [(Clones(10, 1e-5), 1e-3), (Clones(1000, 0.05), 1e-6), (Clones(1, 2.0), 1e-6),
                                         (RR2(1000, 2.0), 1e-320), (KRR(1000, 4, 1e-320, "weak"), 1e-6)])
def test_no_answer_exceeds_eps0(mech, delta):
    rep = account(mech, delta=delta)
    (r,) = rep.results
    assert r.eps_upper <= mech.eps0 * (1 + EPS0_MARGIN) * (1 + 1e-15) and math.isfinite(r.eps_upper)
    assert r.eps_lower is None or r.eps_lower <= r.eps_upper


def test_strong_adversary_is_not_capped_at_eps0():
    """The strong adversary sees the target's blanket coin: its view is not eps0-DP, so no eps0 cap applies
    (brute force: n = 5, k = 4, gamma = 0.5 has delta(1.7) = 0.2931 although eps0 = log 5 = 1.609)."""
    from shufflesim.accounting.exact.bruteforce import hockey_stick, krr_bruteforce

    pair = krr_bruteforce(5, 4, 0.5, "strong")
    exact = hockey_stick(pair.log_p, pair.log_q, 1.7)
    (r,) = account(KRR(5, 4, 0.5, "strong"), eps=[1.7], method="exact").results
    assert exact > 0.29 and r.delta_lower <= exact <= r.delta_upper
    (e,) = (rep := account(KRR(1000, 4, 1e-320, "strong"), delta=1e-6)).results
    assert e.eps_upper == math.inf and any("infinite" in nt or "inf" in nt for nt in rep.notes)


def test_cap_is_explained_and_delta_zero_above_eps0():
    rep = account(RR2(10000, 0.5), delta=1e-6, method="erlingsson", compositions=4, composition="advanced")
    assert any(nt.startswith("capped at the local guarantee") for nt in rep.notes)
    rep = account(RR2(100, 1.0), eps=[0.5, 1.0, 2.0])
    assert [r.delta_upper for r in rep.results][1:] == [0.0, 0.0]
    rep = account(RR2(10000, 0.5), delta=1e-6, method="erlingsson", compositions=4, composition="advanced")
    assert rep.results[0].eps_upper <= 4 * 0.5


def test_gamma_underflow_reports_finite_eps0(capsys):
    code, d, err = _cli(capsys, "account", "krr", "--n", "1000", "--k", "4", "--gamma", "1e-320", "--adversary",
                        "strong", "--delta", "1e-6")
    assert code == 0, err
    assert d["params"]["eps0"] == pytest.approx(738.2, rel=1e-3)


@pytest.mark.parametrize("n", ["1", "2"])
def test_krr_tiny_n_has_valid_default_delta_and_capped_eps(capsys, n):
    code, d, err = _cli(capsys, "simulate", "krr", "--n", n, "--k", "3", "--eps0", "1", "--trials", "2")
    assert code == 0, err
    assert 0 < d["params"]["delta"] < 1
    assert d["privacy"]["eps"] <= 1.0
    assert "inf" not in " ".join(d["privacy"]["notes"]).replace("infinite", "")


@pytest.mark.parametrize("argv", [
    ["account", "rr2", "--n", "1000", "--eps0", "1000", "--delta", "1e-6"],
    ["account", "krr", "--n", "1000", "--k", "4", "--eps0", "1000", "--delta", "1e-6"],
    ["account", "clones", "--n", "1000", "--eps0", "1000", "--delta", "1e-6"],
    ["account", "biswas", "--n", "100", "--k", "10", "--eps0", "1000", "--n-x0", "80", "--eps", "0.1"],
    ["account", "rr2", "--n", "1000", "--eps0", "1000", "--delta", "1e-6", "--method", "erlingsson"],
    ["simulate", "krr", "--n", "100", "--k", "3", "--eps0", "1000", "--trials", "2"],
])
def test_huge_eps0_is_answered_from_the_local_guarantee(capsys, argv):
    code, d, err = _cli(capsys, *argv)
    assert code == 0, err
    if argv[0] == "account":
        r = d["results"][0]
        # eps0 itself, rounded up by two ulps at most (the cap is on the safe side of eps0)
        assert 1000.0 <= r.get("eps_upper", 1000.0) <= 1000.0 * (1 + EPS0_MARGIN) * (1 + 1e-15) and r.get("delta_upper", 1.0) == 1.0
        assert any(nt.startswith("eps0 > 700") for nt in d["notes"])
    else:
        assert d["privacy"]["eps"] == 1000.0


# --- unhandled exceptions: one error line or an answer ---------------------------------------------------
ANSWERED = [
    ["simulate", "cheu-sum", "--n", "100", "--eps", "1000", "--messages", "20", "--trials", "2"],
    ["simulate", "local-rr-sum", "--n", "100", "--eps", "1000", "--trials", "2"],
    ["simulate", "local-laplace-sum", "--n", "100", "--eps", "1e308", "--trials", "2"],
    ["simulate", "blanket-sum", "--n", "100", "--eps", "1", "--delta", "1e-320", "--trials", "2"],
]
REFUSED = [
    (["simulate", p, "--n", "100", "--eps", "1e-320", "--trials", "2"], "eps must be >= 1e-100")
    for p in ("local-rr-sum", "local-laplace-sum", "central-laplace-sum", "central-dlap-sum")
] + [
    (["simulate", "central-laplace-hist", "--n", "100", "--k", "3", "--eps", "1e-320", "--trials", "2"],
     "eps must be >= 1e-100"),
    (["simulate", "recursive-sum", "--n", "100", "--eps", "1", "--messages", "1000000", "--trials", "2"],
     "at most 64 messages"),
    (["simulate", "central-dlap-sum", "--n", "100", "--eps", "1", "--p", "1e18", "--trials", "2"], "noise scale"),
    # issue 21: the default r = ceil(eps*sqrt(n)) is capped (with a note) instead of refused; more than the cap is refused
    (["simulate", "cheu-sum", "--n", "100", "--eps", "1000", "--messages", "2001", "--trials", "2"], "messages must be"),
    # a count beyond int64 is refused by its range before any memory estimate (issue 29)
    (["simulate", "krr", "--k", "3", "--eps0", "1", "--data", "counts:1e30,1,1", "--trials", "2"], "must be an integer <="),
]


@pytest.mark.parametrize("argv", ANSWERED)
def test_extreme_eps_answered(capsys, argv):
    code, d, err = _cli(capsys, *argv)
    assert code == 0, err
    assert d["mse"] is not None and math.isfinite(d["mse"])


@pytest.mark.parametrize("argv, words", REFUSED)
def test_extreme_inputs_refused_in_one_line(capsys, argv, words):
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and words in err, err


def test_local_rr_sum_tiny_eps_debiases():
    from shufflesim.pipeline import registry

    proto = registry.create("local-rr-sum", 100, eps=1e-50)
    assert proto.analyser.contrast == pytest.approx(5e-51)


# --- library: only ShufflesimError subclasses for bad input ---------------------------------------------
def _library_calls():
    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import run_trials, summarise
    from shufflesim.pipeline import registry

    proto = registry.create("krr", 20, k=3, eps0=1.0)
    x = load_data("uniform", data_kind="categorical", n=20, k=3, rng=0)
    recs = run_trials(proto, x, trials=2, rng=0).records
    m = RR2(100, 1.0)
    return [
        lambda: account(None, delta=1e-6),
        lambda: account(m, None),
        lambda: account(m, delta=1e-6, numerics={"bogus": 1}),
        lambda: account(m, delta=np.array([])),
        lambda: account(m, eps="1"),
        lambda: load_data(None, data_kind="categorical", n=10, k=3),
        lambda: load_data(5, data_kind="categorical", n=10, k=3),
        lambda: load_data("uniform", data_kind="categorical", n="10", k=3),
        lambda: load_data("uniform", data_kind="categorical", n=10.5, k=3),
        lambda: load_data("uniform", data_kind="categorical", n=10, k="3"),
        lambda: load_data("uniform", data_kind="categorical", n=10, k=2.5),
        lambda: run_trials(proto, x, trials=2, point=-1),
        lambda: run_trials(proto, x, trials=2, chunk_size=-3, workers=2),
        lambda: run_trials(None, x, trials=2),
        lambda: summarise(recs, proto, x, level=2),
        lambda: summarise(None, proto, x),
    ]


def test_library_bad_input_raises_shufflesim_errors():
    from shufflesim.errors import ShufflesimError

    for i, call in enumerate(_library_calls()):
        with pytest.raises(ShufflesimError):
            call()
            pytest.fail(f"call {i} accepted bad input")


# --- resources ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["simulate", "krr", "--n", "10", "--k", "2147483647", "--eps0", "1", "--trials", "2"],
    ["simulate", "cheu-sum", "--n", "1000", "--eps", "1", "--messages", "1e9", "--trials", "2"],
])
def test_memory_refused_before_allocation(capsys, argv):
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err


def test_memory_estimate_names_the_estimate(monkeypatch):
    from shufflesim.core import resources
    from shufflesim.errors import ResourceError
    from shufflesim.pipeline import registry

    monkeypatch.setattr(resources, "available_memory", lambda: 1 << 20)
    with pytest.raises(ResourceError, match="needs about .* of memory"):
        registry.create("krr", 10, k=100_000, eps0=1.0).check_resources()


# --- statistics that respect their support --------------------------------------------------------------
def test_ci_stays_in_support_and_says_how(capsys):
    code, d, err = _cli(capsys, "simulate", "krr", "--n", "100", "--k", "3", "--eps0", "1", "--trials", "5")
    assert code == 0, err
    assert d["mse_ci95"][0] >= 0 and d["tv_ci95"][0] >= 0 and d["tv_ci95"][1] <= 1
    assert "clipped to the support" in d["ci_method"] and "clipped" in d["tv_ci_method"]


def test_one_trial_ci_not_computable(capsys):
    code, d, err = _cli(capsys, "simulate", "krr", "--n", "100", "--k", "3", "--eps0", "1", "--trials", "1")
    assert code == 0, err
    assert d["mse_ci95"] == [None, None] and "not computable" in d["ci_method"]


def test_tv_clipped_to_one():
    """Disjoint supports, each law's decimals summing to 1 (0.33 + 0.56 + 0.11) but to 1 + 2^-52 in double
    precision: the raw ½ Σ |p − q| exceeds 1 (asserted, so the clipping is exercised) and TV is clipped to 1.
    (The old input, a point mass against a uniform law, has TV 1 − 1/N below 1: it never reached the clipping.)"""
    from shufflesim.maths.simplex import total_variation

    law = [0.33, 0.56, 0.11]
    p, q = np.array(law + [0.0] * 3), np.array([0.0] * 3 + law)
    assert 0.5 * np.abs(p - q).sum() > 1.0  # the round-off the clipping is for
    assert total_variation(p, q) == 1.0
    assert total_variation(q, p) == 1.0


def test_support_ci_keeps_student_t_inside_support():
    from shufflesim.experiments.stats import mean_ci, support_ci

    x = np.array([10.0, 11.0, 12.0, 9.0])
    assert support_ci(x, 0.95, low=0.0)[1:3] == mean_ci(x, 0.95)[1:3]


# --- messages that tell the truth -----------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["--bogus"], "unknown option '--bogus'"),
    (["simulate", "krr", "--n", "10", "--k", "3", "--eps0", "1", "--data", "/dev/null:x"], "not a regular file"),
    (["simulate", "krr", "--n", "10", "--k", "3", "--eps0", "1", "--data", "/tmp:x"], "is a directory"),
    (["simulate", "krr", "--n", "10", "--k", "3", "--eps0", "1", "--lower", "0"], "categorical"),
    (["simulate", "local-rr-sum", "--n", "10", "--eps", "1", "--lower", "-inf", "--upper", "1"], "do not apply"),
    (["simulate", "local-rr-sum", "--n", "10", "--eps", "-1e-3"], "eps must be in"),
])
def test_messages_tell_the_truth(capsys, argv, words):
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and words in err, err


def test_negative_values_reach_the_range_check(tmp_path, capsys):
    f = tmp_path / "x.csv"
    f.write_text("v\n-3\n0.5\n2\n")
    code, d, err = _cli(capsys, "simulate", "local-rr-sum", "--eps", "1", "--data", f"{f}:v", "--lower", "-inf",
                        "--upper", "2", "--trials", "2")
    assert code == 2 and "finite" in err
    code, d, err = _cli(capsys, "simulate", "local-rr-sum", "--eps", "1", "--data", f"{f}:v", "--lower", "-3e0",
                        "--upper", "2", "--trials", "2")
    assert code == 0, err


def test_blank_csv_lines_reported_trailing_ignored(tmp_path, capsys):
    inner, trailing = tmp_path / "a.csv", tmp_path / "b.csv"
    inner.write_text("c\n1\n\n2\n")
    trailing.write_text("c\n1\n2\n\n\n")
    code, _, err = _cli(capsys, "simulate", "krr", "--k", "3", "--eps0", "1", "--data", f"{inner}:c", "--trials", "2")
    assert code == 2 and "line 3 is blank" in err
    code, d, err = _cli(capsys, "simulate", "krr", "--k", "3", "--eps0", "1", "--data", f"{trailing}:c", "--trials",
                        "2")
    assert code == 0 and d["n"] == 2, err


# --- protocol assumptions -------------------------------------------------------------------------------
def test_ikos_refuses_modulus_breaking_decoding(capsys):
    code, _, err = _cli(capsys, "simulate", "ikos-sum", "--n", "100", "--eps", "1", "--q", "2", "--trials", "2")
    assert code == 2 and "q must be > 2np" in err, err


def test_ikos_underflowing_delta_explained(capsys):
    code, d, err = _cli(capsys, "simulate", "ikos-sum", "--n", "100", "--eps", "1", "--messages", "100000",
                        "--trials", "1")
    assert code == 0, err
    assert d["privacy"]["delta"] == 0.0 and any("underflows" in nt for nt in d["privacy"]["notes"])


def test_ikos_huge_sigma_refused_with_estimate(capsys):
    code, _, err = _cli(capsys, "simulate", "ikos-sum", "--n", "100", "--eps", "1", "--sigma", "1e6", "--trials", "1")
    assert code == 2 and "messages per user" in err, err


# --- found by the fuzz suite ----------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["account", "rr2", "--n", "3", "--eps0", "2", "--eps", "2", "--method", "bennett"],
    ["account", "krr", "--n", "40", "--k", "2", "--eps0", "2", "--eps", "2", "--method", "bennett"],
])
def test_bennett_at_eps0_is_zero_not_division_error(capsys, argv):
    code, d, err = _cli(capsys, *argv)
    assert code == 0, err
    assert d["results"][0]["delta_upper"] == 0.0


def test_huge_k_memory_estimate_does_not_overflow(capsys):
    code, _, err = _cli(capsys, "simulate", "central-gaussian-hist", "--k", "1e308", "--eps", "0.5", "--delta",
                        "1e-3", "--n", "3", "--trials", "1")
    assert code == 2 and err.startswith("error: "), err


def test_bennett_tiny_eps_is_trivial_with_note():
    from shufflesim.accounting.bounds.balle import KRRBlanket, bennett_delta

    r = bennett_delta(1e-320, n=100, randomiser=KRRBlanket(2, 0.5))
    assert r.delta_upper == 1.0 and any("underflow" in nt for nt in r.notes)


def test_long_composition_warns_before_running(capsys, monkeypatch):
    import importlib

    cli_account = importlib.import_module("shufflesim.cli.account")
    monkeypatch.setattr(cli_account, "SLOW_COMPOSITIONS", 3)  # a 3-composition run stands in for a long one
    code = main(["account", "rr2", "--n", "100", "--eps0", "1", "--delta", "1e-6", "--compositions", "3"])
    err = capsys.readouterr().err
    assert code == 0 and err.startswith("warning: 3 compositions")
    # a request that is refused gets its error alone, never a warning that contradicts it (issue 18)
    queries = importlib.import_module("shufflesim.accounting.model.queries")  # the one question validator (issue 28)
    monkeypatch.setattr(queries, "MAX_COMPOSITIONS", 2)
    code = main(["account", "rr2", "--n", "100", "--eps0", "1", "--delta", "1e-6", "--compositions", "3"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_demo_one_trial_says_not_computable(tmp_path, capsys):
    code = main(["demo", "--trials", "1", "--eps0", "1", "--output", str(tmp_path / "d"), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    row = json.loads(out.out)["summary"][0]
    assert row["mse_lo"] is None and row["covers"] == "not computable with 1 trial"


@pytest.mark.parametrize("argv", [
    ["account", "rr2", "--n", "5", "--eps0", "5e-324", "--eps", "0", "--method", "feldman-numerical"],
    ["account", "rr2", "--n", "1", "--eps0", "5e-324", "--eps", "0", "--compare"],
    ["account", "clones", "--n", "5", "--eps0", "1e-200", "--delta", "1e-6"],
])
def test_subnormal_eps0_answered_from_local_guarantee(capsys, argv):
    code, d, err = _cli(capsys, *argv)
    assert code == 0, err

