"""Issue 8: every valid question answered meaningfully, every invalid one refused in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from shufflesim.accounting.account import account
from shufflesim.cli.main import main
from shufflesim.mechanisms import KRR, RR2, Clones


def _cli(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


# --- privacy answers that must mean something -------------------------------------------------------------
@pytest.mark.parametrize("mech, delta", [(Clones(10, 1e-5), 1e-3), (Clones(1000, 0.05), 1e-6), (Clones(1, 2.0), 1e-6),
                                         (RR2(1000, 2.0), 1e-320), (KRR(1000, 4, 1e-320, "strong"), 1e-6)])
def test_no_answer_exceeds_eps0(mech, delta):
    rep = account(mech, delta=delta)
    (r,) = rep.results
    assert r.eps_upper <= mech.eps0 and math.isfinite(r.eps_upper)
    assert r.eps_lower is None or r.eps_lower <= r.eps_upper


def test_cap_is_explained_and_delta_zero_above_eps0():
    rep = account(Clones(1000, 0.05), delta=1e-6)
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
        assert r.get("eps_upper", 1000.0) == 1000.0 and r.get("delta_upper", 1.0) == 1.0
        assert any(nt.startswith("eps0 > 700") for nt in d["notes"])
    else:
        assert d["privacy"]["eps"] == 1000.0
