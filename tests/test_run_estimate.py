"""``run --check``'s run-time estimate models what the run does (issue 29: it was off by up to 400x both ways:
Table 3 in quick mode estimated 80 s and took 0.2 s, FLAME's MNIST study estimated 7 s and took 32 s).

No wall-clock time is asserted: the tests check the model's inputs (which rows, which data set, which accountant
class, how many calls).  The estimate against measured runs is bench/run_estimates.md."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from shufflesim.scenarios.schema import load
from shufflesim.scenarios.steps import estimate_seconds

ROOT = Path(__file__).resolve().parents[1]


def _scenario(name: str) -> dict:
    return load(ROOT / "scenarios" / f"{name}.toml")


def _only(sc: dict, section: str, step: dict) -> dict:
    """``sc`` with ``step`` as its only step (and no claims)."""
    out = copy.deepcopy(sc)
    for key in ("sweep", "curve", "table", "training", "cells", "defence"):
        out[key] = []
    out["claims"] = []
    out[section] = [step]
    return out


def test_table_estimate_counts_the_rows_that_run():
    """Quick mode runs three closed-form rows of Table 3: far less than the full table, whose Cheu et al. row and
    optimised recursive rows search (the old estimate was a minute a table in either mode)."""
    sc = _scenario("balle2020_table3")
    assert estimate_seconds(sc, False) > 3 * estimate_seconds(sc, True)
    step = sc["table"][0]

    def cost(rows):
        return estimate_seconds(_only(sc, "table", dict(step, rows=rows, quick_rows=None)), False)

    assert cost(["cheu"]) > 10 * cost(["curatordp"])


def test_training_estimate_follows_the_data_set():
    """A round on MNIST (d = 7850) costs more than on the digits (d = 650): the old model had them the other
    way round (2 s a digits round, 1 s an MNIST one)."""
    sc = _scenario("flame_training_mnist")
    step = sc["training"][0]
    mnist = estimate_seconds(_only(sc, "training", step), True)
    digits = estimate_seconds(_only(sc, "training", dict(step, dataset="digits")), True)
    assert mnist > 5 * digits


def test_curve_estimate_follows_the_accountant():
    """A closed-form bound costs less than a pair-based method, a composed pair more than a single use, and the
    weak adversary's composed pair more than the strong one's (the old model: half a second a line, whatever
    the method)."""
    sc = _scenario("koskela_fig1")
    strong, balle = (next(c for c in sc["curve"] if c["name"] == n) for n in ("strong", "balle"))

    def cost(step):
        return estimate_seconds(_only(sc, "curve", step), True)

    single = dict(strong, compositions=[1])
    composed = dict(strong, compositions=[4])
    weak_composed = dict(composed, args=dict(strong["args"], relation="weak"))
    assert cost(dict(balle, compositions=[1])) < cost(single) < cost(composed) < cost(weak_composed)


def test_estimate_is_stated_as_a_range():
    from shufflesim.scenarios.steps import ESTIMATE_FACTOR, estimate_range

    text = estimate_range(40.0)
    assert text.startswith("about 40 s") and f"({40 / ESTIMATE_FACTOR:.0f} s to" in text and "under" in estimate_range(2.0) and \
        f"{40 * ESTIMATE_FACTOR / 60:.0f} min" in text


def test_run_check_prints_the_range(capsys):
    from shufflesim.cli.main import main

    assert main(["run", "--check", "--quick", str(ROOT / "scenarios" / "quickstart.toml")]) == 0
    assert "on idle cores" in capsys.readouterr().out
