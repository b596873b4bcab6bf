"""Issue 9: ``--method best`` and ``--compare`` (shufflesim.accounting.compare)."""

from __future__ import annotations

import json
import math

import pytest

from shufflesim.accounting import Composition, account
from shufflesim.accounting.compare import NOT_CERTIFIED, compare
from shufflesim.cli.main import main
from shufflesim.mechanisms import KRR, RR2, Clones

CASES = [
    (Clones(2000, 2.0), {"delta": [1e-6, 1e-3]}),
    (Clones(500, 0.5), {"eps": [0.1, 0.3]}),
    (RR2(1000, 1.0), {"delta": [1e-6]}),
    (KRR(500, 4, 0.3, "weak"), {"delta": [1e-5]}),
    (KRR(500, 4, 0.3, "strong"), {"eps": [0.5]}),
    (KRR(500, 3, 0.3), {"delta": [1e-5]}),
]


_BEST: dict = {}


def _best(mech, q):
    """account(mech, method="best", **q), computed once per case for the three tests below (each only reads it)."""
    key = (repr(mech), repr(q))
    if key not in _BEST:
        _BEST[key] = account(mech, method="best", **q)
    return _BEST[key]


def _upper(r):
    return r.eps_upper if hasattr(r, "eps_upper") else r.delta_upper


@pytest.mark.parametrize("mech,q", CASES)
def test_best_never_exceeds_a_certified_method(mech, q):
    rep = _best(mech, q)
    cmp = compare(mech, run=account, **q)
    for i, r in enumerate(rep.results):
        for row in cmp.rows:
            if row.applicable and row.valid and getattr(row.results[i], "applicable", True):
                assert _upper(r) <= _upper(row.results[i]) * (1 + 1e-12), (row.method, i)
        # and it is one of them, named in the notes
        assert any(_upper(r) == _upper(row.results[i]) for row in cmp.rows if row.applicable and row.valid)
    assert any(nt.startswith("best at") for nt in rep.notes)


@pytest.mark.parametrize("mech,q", CASES)
def test_best_never_exceeds_an_independent_account_call(mech, q):
    """Independently of compare's rows: best is at most every certified method of the description itself,
    each asked through account() directly (uncertified ones and one-data-set pairs excluded)."""
    from shufflesim.accounting.compare import ONE_DATA_SET
    from shufflesim.errors import ShufflesimError

    rep = _best(mech, q)
    checked = 0
    for m in mech.methods:
        if m in NOT_CERTIFIED or (mech.kind, m) in ONE_DATA_SET:
            continue
        try:
            other = account(mech, method=m, **q).results
        except ShufflesimError:
            continue
        for r, o in zip(rep.results, other):
            if getattr(o, "applicable", True):
                assert _upper(r) <= _upper(o) * (1 + 1e-12), m
                checked += 1
    assert checked >= 1


@pytest.mark.parametrize("mech,q", CASES)
def test_best_never_picks_an_uncertified_method(mech, q):
    rep = _best(mech, q)
    for r in rep.results:
        assert r.method not in NOT_CERTIFIED
        assert r.method != "biswas"


def test_compare_lists_not_applicable_with_reasons():
    cmp = compare(KRR(1000, 4, 0.25, "weak"), run=account, delta=[1e-6])
    na = {r.method: r.reason for r in cmp.rows if not r.applicable}
    assert "variation-ratio" in na and "not certified" in na["variation-ratio"]
    assert "erlingsson" in na and "eps0 <= 0.5" in na["erlingsson"]
    assert "exact" in na
    ok = {r.method for r in cmp.rows if r.applicable}
    assert {"tight[weak]", "tight[strong]", "bennett", "feldman-numerical"} <= ok
    for r in cmp.rows:
        assert r.applicable or r.reason
    rows = {r.method: r for r in cmp.rows}
    assert not rows["bennett[original-2019]"].valid
    assert not rows["stronger-clones"].valid  # the weak adversary also sees other users' coins
    assert rows["tight[strong]"].valid  # the strong adversary sees more: a valid bound
    assert not rows["tight[strong-1d]"].valid
    assert cmp.best[0][0] == "tight[weak]"


def test_compare_clones_issue_row():
    cmp = compare(Clones(10**4, 4.0), run=account, delta=[1e-6])
    rows = {r.method: r for r in cmp.rows}
    assert rows["tight"].results[0].eps_upper == pytest.approx(0.4108, rel=1e-3)
    assert rows["tight-koskela"].results[0].eps_upper == pytest.approx(0.6132, rel=1e-3)
    assert rows["variation-ratio"].results[0].eps_upper == pytest.approx(rows["tight"].results[0].eps_upper, rel=1e-9)
    assert cmp.best[0][0] in ("tight", "variation-ratio")
    assert rows["tight-koskela"].ratios[0] > 1.4


def test_best_on_a_heterogeneous_composition():
    comp = Composition(((KRR(800, 4, 0.3, "weak"), 1), (KRR(800, 3, 0.4, "weak"), 1)))
    rep = account(comp, method="best", delta=[1e-5])
    direct = account(comp, delta=[1e-5])
    assert rep.results[0].eps_upper <= direct.results[0].eps_upper * (1 + 1e-12)


def test_cli_compare_and_best(capsys):
    assert main(["account", "clones", "--n", "1000", "--eps0", "1", "--eps", "0.1", "--compare", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in d["rows"]} >= {"tight", "tight-koskela", "variation-ratio", "feldman-numerical"}
    assert d["best"][0]["method"] in ("tight", "variation-ratio", "exact")  # the same pair
    for r in d["rows"]:
        assert ("results" in r) == r["applicable"]
        assert r["applicable"] or r["reason"]
    assert main(["account", "clones", "--n", "1000", "--eps0", "1", "--eps", "0.1", "--compare"]) == 0
    out = capsys.readouterr().out
    assert "best: " in out and "not applicable:" in out
    assert main(["account", "rr2", "--n", "1000", "--eps0", "1", "--delta", "1e-6", "--method", "best", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["method"] == "best" and math.isfinite(d["results"][0]["eps_upper"])
    assert any(nt.startswith("best at") for nt in d["notes"])


def test_rr2_all_zeros_pair_is_listed_not_compared():
    """rr2's seed 001 pair is one data set's (FINDINGS.md item 3): listed, never best; tight is a bound over all
    data sets (the stronger clone pair) and is at least the one data set's value."""
    cmp = compare(RR2(1000, 1.0), run=account, delta=[1e-6])
    rows = {r.method: r for r in cmp.rows}
    assert not rows["tight-koskela"].valid and "all-zeros" in rows["tight-koskela"].validity
    assert rows["tight"].valid
    assert cmp.best[0][0] in ("tight", "exact", "stronger-clones", "variation-ratio")
    assert cmp.best[0][1].eps_upper >= rows["tight-koskela"].results[0].eps_lower  # issue 17: a lower end only


def test_best_and_compare_take_any_form_of_the_question_values():
    # review of issue 28: a numpy array of eps gave compare one best for two values and crashed best (f"{v:.6g}" on an
    # ndarray); every form is validated once by the one question validator and answered per value
    import numpy as np

    from shufflesim.accounting import account
    from shufflesim.mechanisms import RR2

    mech = RR2(100, 1.0)
    as_list = account(mech, eps=[0.3, 0.6], method="best")
    as_array = account(mech, eps=np.array([0.3, 0.6]), method="best")
    assert [r.to_dict() for r in as_array.results] == [r.to_dict() for r in as_list.results]
    assert len(as_array.results) == 2
