"""Smoke tests of bench/bench_issue30.py and bench/bench_sampling.py: tiny cells, in process, no timing asserts."""

from __future__ import annotations

import importlib
import math
import os
import sys

import numpy as np
import pytest

from shufflesim.accounting import account
from shufflesim.accounting.exact.enumeration import enumeration_steps, largest_n
from shufflesim.accounting.model.mechanism import Sampling
from shufflesim.mechanisms import KRR, RR2, Relation
from shufflesim.mechanisms.matrix import ShuffledMatrix
from shufflesim.mechanisms.sampled import with_sampling

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


@pytest.fixture(scope="module")
def benches():
    sys.path.insert(0, BENCH)
    try:
        yield importlib.import_module("bench_issue30"), importlib.import_module("bench_sampling")
    finally:
        while BENCH in sys.path:
            sys.path.remove(BENCH)


def test_local_hashing_matrix_is_the_stated_randomiser(benches):
    b30, _ = benches
    R = b30.local_hashing_matrix()
    assert R.shape == (8, 8)
    assert np.allclose(R.sum(axis=1), 1.0)
    assert len({tuple(r) for r in R.tolist()}) == 8  # the fixed hash family tells every input apart
    assert ShuffledMatrix(10, b30.OLH).eps0 == pytest.approx(1.0, rel=1e-12)  # p/q = e^eps0 within each column


def test_issue30_cells_are_the_accountants_answers(benches):
    b30, _ = benches
    c = b30.cell("krr4", 30, "default", cap=120.0)
    (r,) = account(KRR(30, 4, b30.GAMMA, Relation.SHUFFLED), delta=[b30.DELTA]).results
    assert (c["lower"], c["upper"]) == (r.eps_lower, r.eps_upper)
    tight = b30.cell("krr4", 30, "clones", cap=120.0)
    assert tight["lower"] <= c["upper"] and c["lower"] <= tight["upper"]  # both brackets hold the same truth
    exact = b30.cell("M", 6, "exact", cap=120.0)
    dflt = b30.cell("M", 6, "default", cap=120.0)
    assert dflt["lower"] <= exact["upper"] and exact["lower"] <= dflt["upper"]
    assert b30.cell("M", 10**6, "exact", cap=120.0)["skip"] == "—"  # refused beyond the enumeration's budget
    assert b30.cell("krr4", 30, "wang", cap=120.0) == {"skip": "n/a"}
    w = b30.cell("rr2", 30, "wang", cap=120.0)
    assert w["upper"] >= account(RR2(30, b30.RR2_EPS0), delta=[b30.DELTA], method="exact").results[0].eps_lower
    assert "skipped: estimate" in b30.cell("rr2", 100, "default", cap=-1.0)["skip"]
    lines = b30.table({("M", 6): {"default": dflt, "clones": dflt, "wang": {"skip": "n/a"}, "exact": exact}})
    assert lines[2].startswith("| M | 1.609 | 6e+00 |")


def test_sampling_row_with_dp_accounting(benches):
    _, bs = benches
    pytest.importorskip("dp_accounting")
    row = bs.row("rr2", 50, 0.2, eps0=2.0, rounds=2, delta=1e-6)
    (r,) = account(with_sampling(RR2(50, 2.0), Sampling.poisson(0.2)), delta=[1e-6], compositions=2).results
    assert (row["lower"], row["upper"]) == (r.eps_lower, r.eps_upper)
    # dp_accounting's pessimistic ε of the same dominating pair is at least the mechanism's certified lower end
    assert math.isfinite(row["dp"]["eps"]) and row["dp"]["eps"] >= row["lower"]
    assert bs.dp_accounting_eps(with_sampling(RR2(50, 2.0), Sampling.poisson(0.2)), 2, 1e-6,
                                max_atoms=1)["note"].startswith("not run")
    assert bs.format_row(row).startswith("| rr2 eps0=2 | 50 | 0.2 | 2 |")


def test_issue30_reach_names_the_enumeration_limit(benches):
    b30, _ = benches
    cells = {m: b30.cell("M", 6, m, cap=120.0) for m in b30.METHODS}
    (line,) = b30.reach({("M", 6): cells})
    assert line.startswith("* M: largest n answered in this run: default 6e+00, clones 6e+00, exact 6e+00")
    assert line.endswith(f"n <= {largest_n(3, 3, inverse=True)} within its budget")  # ε(δ): 3 inputs x 3 outputs


def test_issue30_refusal_keeps_the_whole_number(benches):
    """A refusal names the enumeration's cost as log10 of its steps, finite where the float estimate overflows."""
    b30, _ = benches
    small = b30.cell("M", 10**6, "exact", cap=120.0)["why"]
    assert small.endswith(f"n <= {largest_n(3, 3, inverse=True)}")
    log10 = float(small.split("10^")[1].split(" ")[0])
    assert log10 == pytest.approx(math.log10(enumeration_steps(10**6, 3, 3, inverse=True)), abs=0.05)
    huge = b30.cell("krr100", 10**6, "exact", cap=120.0)["why"]
    assert math.isinf(enumeration_steps(10**6, 100, 100, inverse=True))
    assert "inf" not in huge and math.isfinite(float(huge.split("10^")[1].split(" ")[0]))


def test_issue30_series_sets_default_beside_exact(benches):
    b30, _ = benches
    head, rule, row = b30.series((6,))
    assert head.startswith("| n | default") and row.startswith("| 6 | [")
