"""One question validator (issue 28 item 4): an edge question (delta = 0 or 1, eps negative / nan / inf, compositions
0 or 1e300, ...) gets the same one-line answer on every path — the library (``account``, ``tight_delta`` /
``tight_epsilon``, the PLD, ``calibrate_mechanism``, ``compare``), the command line and the scenario files."""

from __future__ import annotations

import math

import pytest

from shufflesim import ParameterError
from shufflesim.accounting.account import account, calibrate_mechanism
from shufflesim.accounting.pairs import rr2_pair
from shufflesim.accounting.pld.distribution import PrivacyLossDistribution
from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon
from shufflesim.cli.main import main
from shufflesim.mechanisms import RR2
from shufflesim.scenarios.schema import ScenarioError, validate

PAIR = rr2_pair(20, 1.0)
MECH = RR2(20, 1.0)

#: delta = 0 refused everywhere (no engine certifies it on every path; module docstring of accounting.queries)
DELTA_ZERO = ("delta must be in (0, 1); got 0.0 (pure DP: no engine certifies delta = 0 on every path; ask for a "
              "small delta such as 1e-300)")


def _message(fn) -> str:
    with pytest.raises(ParameterError) as exc:
        fn()
    return str(exc.value)


def _cli(capsys, *argv) -> str:
    code = main(["account", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0][len("error: "):]


def _scenario(step: dict) -> str:
    doc = {"title": "t", "paper": "none", "reproduces": "none", "seed": 1,
           "curve": [dict({"name": "c", "mechanism": "rr2", "args": {"n": 20, "eps0": 1.0}}, **step)]}
    with pytest.raises(ScenarioError) as exc:
        validate(doc)
    return str(exc.value)


# --- the regression tests of the issue (each failed on the old code) ---------------------------------------

def test_tight_epsilon_at_delta_zero_is_refused_in_one_line():
    # old: ValueError: math domain error (tight.py, math.log(target))
    assert _message(lambda: tight_epsilon(PAIR, 0.0)) == DELTA_ZERO


def test_account_at_delta_zero_is_the_same_line():
    # old: "delta must be in (0.0, 1.0); got 0.0", while the engines accepted delta = 0
    assert _message(lambda: account(MECH, delta=0)) == DELTA_ZERO
    assert _message(lambda: account(MECH, delta=[1e-6, 0.0], method="tight")) == DELTA_ZERO
    assert _message(lambda: account(MECH, delta=0.0, method="best")) == DELTA_ZERO


def test_pld_at_delta_zero_is_the_same_line():
    # old: answered (eps_upper = 1.0000000000000007) where tight_epsilon failed and account refused
    assert _message(lambda: PrivacyLossDistribution.from_pair(PAIR).epsilon(0.0)) == DELTA_ZERO


def test_cli_at_delta_zero_exits_2_with_the_same_line(capsys):
    assert _cli(capsys, "rr2", "--n", "20", "--eps0", "1", "--delta", "0") == DELTA_ZERO
    assert _cli(capsys, "rr2", "--n", "20", "--eps0", "1", "--delta", "0", "--compare") == DELTA_ZERO


def test_scenario_at_delta_zero_is_the_same_line():
    # old: "curve[0].delta: 0 is out of range (allowed: 0 < delta < 1)"
    msg = _scenario({"x": "eps0", "x_range": [0.5, 1.0, 2], "delta": 0.0})
    assert msg == f"curve[0].delta: {DELTA_ZERO}"


# --- every path, the same edge questions ----------------------------------------------------------------

def _delta_paths(capsys, d):
    """The message of every path asked eps(d) (the scenario's without its key path)."""
    out = {
        "account": _message(lambda: account(MECH, delta=d)),
        "account-tight": _message(lambda: account(MECH, delta=d, method="tight")),
        "account-balle": _message(lambda: account(RR2(1000, 1.0), delta=d, method="balle")),
        "tight_epsilon": _message(lambda: tight_epsilon(PAIR, d)),
        "pld": _message(lambda: PrivacyLossDistribution.from_pair(PAIR).epsilon(d)),
        "calibrate_mechanism": _message(lambda: calibrate_mechanism(lambda x: RR2(20, x), "eps0", 1.0, d, 0.1, 5.0,
                                                                    increasing=True)),
        "cli": _cli(capsys, "rr2", "--n", "20", "--eps0", "1", "--delta", repr(d)),
    }
    where = "curve[0].delta: "
    msg = _scenario({"x": "eps0", "x_range": [0.5, 1.0, 2], "delta": d})
    assert msg.startswith(where), msg
    out["scenario"] = msg[len(where):]
    return out


@pytest.mark.parametrize("d", [0.0, 1.0, 1.5, -1e-3, -0.0, math.nan, math.inf, -math.inf])
def test_every_path_gives_one_answer_to_an_edge_delta(capsys, d):
    msgs = _delta_paths(capsys, d)
    assert len(set(msgs.values())) == 1, msgs
    assert next(iter(msgs.values())).startswith("delta must be in (0, 1); got ")


def _eps_paths(capsys, e):
    out = {
        "account": _message(lambda: account(MECH, eps=e)),
        "account-balle": _message(lambda: account(RR2(1000, 1.0), eps=e, method="balle")),
        "tight_delta": _message(lambda: tight_delta(PAIR, e)),
        "pld": _message(lambda: PrivacyLossDistribution.from_pair(PAIR).delta(e)),
        "calibrate_mechanism": _message(lambda: calibrate_mechanism(lambda x: RR2(20, x), "eps0", e, 1e-6, 0.1, 5.0,
                                                                    increasing=True)),
        "cli": _cli(capsys, "rr2", "--n", "20", "--eps0", "1", "--eps", repr(e)),
    }
    where = "curve[0].eps: "
    msg = _scenario({"eps": e})
    assert msg.startswith(where), msg
    out["scenario"] = msg[len(where):]
    return out


@pytest.mark.parametrize("e", [-1.0, -1e-300, math.nan, math.inf, -math.inf])
def test_every_path_gives_one_answer_to_an_edge_eps(capsys, e):
    msgs = _eps_paths(capsys, e)
    assert len(set(msgs.values())) == 1, msgs
    assert next(iter(msgs.values())).startswith("eps must be in [0, inf); got ")


@pytest.mark.parametrize("c", [0, -3, 2.5, 10**300, 1e300, 10**6 + 1], ids=["0", "-3", "2.5", "int1e300", "1e300", "1e6+1"])
def test_every_path_gives_one_answer_to_an_edge_compositions(capsys, c):
    msgs = {
        "account": _message(lambda: account(MECH, eps=1.0, compositions=c)),
        "account-tight": _message(lambda: account(MECH, eps=1.0, compositions=c, method="tight")),
        "tight_delta": _message(lambda: tight_delta(PAIR, 1.0, compositions=c)),
        "tight_epsilon": _message(lambda: tight_epsilon(PAIR, 1e-6, compositions=c)),
    }
    if c != 2.5:  # argparse's int_arg refuses a fractional count itself
        msgs["cli"] = _cli(capsys, "rr2", "--n", "20", "--eps0", "1", "--eps", "1", "--compositions", repr(c))
    where = "curve[0].compositions: "
    msg = _scenario({"eps": 1.0, "compositions": c})
    assert msg.startswith(where), msg
    msgs["scenario"] = msg[len(where):]
    assert len(set(msgs.values())) == 1, msgs
    assert next(iter(msgs.values())).startswith("compositions must be")


def test_published_bounds_compose_beyond_the_pair_based_limit():
    """The pair-based engines' limit is theirs: a composition theorem is asked 10^7 compositions (and says per
    round why its closed form does not apply there, instead of a refusal of the question)."""
    (r,) = account(RR2(1000, 1.0), eps=1.0, compositions=10**7, method="balle").results
    assert r.method == "balle" and not r.applicable and r.reason.startswith("per round (eps=1e-07)")


def test_a_tiny_positive_delta_is_answered_on_every_path():
    """The smallest question the validator lets through is answered (not refused, not a traceback)."""
    d = 1e-300
    (a,) = account(MECH, delta=d).results
    (t,) = tight_epsilon(PAIR, d)
    (p,) = PrivacyLossDistribution.from_pair(PAIR).epsilon(d)
    for r in (a, t, p):
        assert math.isfinite(r.eps_upper) and r.eps_upper <= 1.0 + 1e-9  # eps0 = 1: delta(1) = 0 for this pair
