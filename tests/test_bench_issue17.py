"""Smoke test of bench/bench_issue17.py's row code on a tiny rr2 row (no subprocess, no dp_accounting)."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, BENCH)
    try:
        yield importlib.import_module("bench_issue17")
    finally:
        while BENCH in sys.path:
            sys.path.remove(BENCH)


def test_rr2_row_without_subprocess_or_peers(bench):
    from shufflesim.accounting import account
    from shufflesim.mechanisms.rr2 import RR2

    row = bench.run_row("rr2", 300, 2.0, repeat=1, whole=False, dp=False)
    cells = row["cells"]
    assert set(cells) == {"exact", "tight"}
    for m in ("exact", "tight"):
        direct = account(RR2(300, 2.0), delta=[bench.DELTA], method=m).results[0]
        assert (cells[m]["eps_lower"], cells[m]["eps_upper"]) == (direct.eps_lower, direct.eps_upper)
    assert cells["exact"]["eps_upper"] <= cells["tight"]["eps_upper"]  # the true value is below the pair's
    text = "\n".join(bench.format_row(row))
    assert "exact/tight" in text and "not run (--skip-dp)" in text and "whole-process -" in text
