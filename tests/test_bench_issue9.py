"""Smoke test of bench/bench_issue9.py's side-by-side code path on a tiny row, without the peers' code."""

from __future__ import annotations

import importlib
import math
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, BENCH)
    try:
        yield importlib.import_module("bench_issue9")
    finally:
        while BENCH in sys.path:  # the bench also puts its directory on sys.path
            sys.path.remove(BENCH)


def test_row_without_peers(bench):
    from shufflesim.accounting import account
    from shufflesim.mechanisms import Clones

    row = bench.side_by_side_row(500, 4.0, 2, methods=("tight", "best"), peer_notes={"dp": "not run (--skip-dp)"})
    cells = row["cells"]
    direct = account(Clones(500, 4.0), delta=[bench.DELTA], method="tight").results[0]
    assert cells["tight"].eps == direct.eps_upper
    assert cells["tight"].reps == 2 and cells["best"].reps == 2
    assert cells["best"].eps <= cells["tight"].eps
    for key in ("wang", "koskela"):
        assert not cells[key].ran and cells[key].note == "not given"
    assert cells["dp"].note == "not run (--skip-dp)"
    assert bench.verdict(row) == {"assessed": False, "text": "no peer run: target not assessed"}
    text = "\n".join(bench.format_row(row) + bench.format_summary([row]))
    assert "not given" in text and "not run (--skip-dp)" in text


def test_verdict_against_a_peer(bench):
    row = bench.side_by_side_row(500, 4.0, 1, methods=("tight",))
    s = row["cells"]["tight"]
    # a peer 10x slower with a larger eps meets the target; 2x slower does not; a smaller eps does not
    for cpu, eps, met in ((10 * s.cpu, 2 * s.eps, True), (2 * s.cpu, 2 * s.eps, False), (10 * s.cpu, s.eps / 2, False)):
        row["cells"]["wang"] = bench.Cell("peer", eps=eps, cpu=cpu, wall=cpu, reps=1)
        v = bench.verdict(row)
        assert v["met"] is met and math.isclose(v["speedup"], cpu / s.cpu)


def test_dp_accounting_column_and_smaller_n(bench):
    pytest.importorskip("dp_accounting")
    from issue9_peers import DpAccounting
    from shufflesim.mechanisms import Clones

    full = Clones(1000, 4.0).pair("tight")
    dp = DpAccounting(interval=1e-5, max_atoms=full.n_atoms)
    row = bench.side_by_side_row(1000, 4.0, 1, methods=("tight",), dp=dp)
    cells = row["cells"]
    assert row["dp_n"] == 1000 and "tight@dp" not in cells
    s, d = cells["tight"], cells["dp"]
    # dp's pessimistic rounding moves every loss up by at most the interval, so its eps is at most the
    # interval above the exact eps of the atoms given.  It is not given the tail shufflesim drops, which lowers
    # delta by at most that mass; delta(eps) is convex and decreasing, so eps moves down by at most
    # tail / |slope|, with the slope bounded below by the secant over [eps_upper, eps_upper + h].
    from shufflesim.accounting import account

    h = 1e-3
    d0, d1 = (r.delta_lower for r in account(Clones(1000, 4.0), eps=[s.eps, s.eps + h]).results)
    shift = full.tail / ((d0 - d1) / h)
    assert s.eps_lower - shift <= d.eps <= s.eps + dp.interval
    small = DpAccounting(interval=1e-5, max_atoms=full.n_atoms // 3)
    row = bench.side_by_side_row(1000, 4.0, 1, methods=("tight",), dp=small)
    assert row["dp_n"] < 1000
    assert Clones(row["dp_n"], 4.0).pair("tight").n_atoms <= small.max_atoms
    assert "cannot take" in row["cells"]["dp"].note and row["cells"]["tight@dp"].ran
