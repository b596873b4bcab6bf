"""Issue 28, third defect (`account krr --n 10000 --k 4 --gamma 0.25 --adversary weak --delta 1e-6`: 1.8 s of CPU,
target <= 1 s): the mechanism of the speed-up, guarded without timing anything.

Half of that CPU time was the kernel's: the binomial numerics over the weak pair's 259k latent rows and the exact
row engine's per-row delta terms made 1-2 MB temporaries, which the allocator maps afresh at every step (a page
fault per 4 kB).  Both now work on blocks of rows (:func:`shufflesim.accounting.pairs.common.by_row_chunks`,
``rows_pld.ROW_BLOCK``); these tests check that they do, and that the blocks give the values of one pass, bit for
bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.accounting.numerics.binomial import chernoff_window, log_binom_pmf
from shufflesim.accounting.numerics.threads import run_blocks
from shufflesim.accounting.pairs import common, krr_pair
from shufflesim.accounting.pairs.common import ROW_CHUNK, by_row_chunks
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.accounting.rows import rows_pld
from shufflesim.accounting.rows.rows_pld import RowsPLD


def _same(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return len(a) == len(b) and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("p", [0.5, 0.25, 1e-3, 0.9])
def test_chernoff_windows_in_blocks_equal_one_call(p):
    rng = np.random.default_rng(28)
    n = rng.integers(0, 5000, size=1201)
    n[:5] = [0, 1, 2, 10**6, 10**9]
    budget = rng.uniform(-120.0, 1.0, size=n.size)
    budget[5:9] = [-np.inf, np.inf, 0.0, -1e-300]
    whole = chernoff_window(n, p, budget)
    for chunk in (61, 500):
        assert _same(by_row_chunks(lambda n_, b_: chernoff_window(n_, p, b_), n, budget, chunk=chunk), whole)


def test_log_binom_pmf_in_blocks_equals_one_call():
    rng = np.random.default_rng(9)
    m = rng.integers(0, 10**7, size=4000)
    x = np.minimum(rng.binomial(m, 0.3) + rng.integers(-50, 50, size=m.size), m + 2)
    whole = log_binom_pmf(x, m, 0.3)
    for chunk in (3, 1000):
        assert _same(by_row_chunks(lambda x_, m_: log_binom_pmf(x_, m_, 0.3), x, m, chunk=chunk), whole)


@pytest.mark.parametrize("make", [
    lambda: krr_pair(1000, 4, 0.25, "weak", as_rows=True),
    lambda: krr_pair(3000, 4, 0.25, "strong", as_rows=True),
    lambda: stronger_clones_pair(20_000, 1.0),
], ids=["krr weak", "krr strong", "clones"])
def test_pairs_built_in_blocks_equal_one_pass(make, monkeypatch):
    """The row-form pairs whose windows go through :func:`common.row_windows`: blocks of 97 rows vs one call."""
    monkeypatch.setattr(common, "ROW_CHUNK", 10**9)
    one = make()
    monkeypatch.setattr(common, "ROW_CHUNK", 97)
    blocks = make()
    for name in ("log_w", "N", "alpha", "beta", "lo", "hi"):
        assert _same(getattr(blocks, name), getattr(one, name)), name
    assert blocks.tail == one.tail


def test_weak_pair_windows_are_computed_in_blocks(monkeypatch):
    """The weak pair at n = 1e4 (259k latent rows) asks for its Chernoff windows ROW_CHUNK rows at a time; before
    issue 28 one call took all rows (fails there)."""
    sizes = []

    def spy(n, p, budget, q=None):
        sizes.append(np.size(budget))
        return chernoff_window(n, p, budget, q)

    monkeypatch.setattr(common, "chernoff_window", spy)
    krr_pair(10_000, 4, 0.25, "weak", as_rows=True)
    assert sum(sizes) > 10 * ROW_CHUNK  # the case the bound matters for
    assert max(sizes) <= ROW_CHUNK


def test_row_terms_are_computed_in_fixed_blocks(monkeypatch):
    """The exact row engine's delta(eps) evaluates ROW_BLOCK rows at a time whatever the number of threads; before
    issue 28 each thread took 1/threads of the rows at once (fails there)."""
    monkeypatch.setenv("SHUFFLESIM_THREADS", "2")
    monkeypatch.setattr(rows_pld, "ROW_BLOCK", 256)
    pld = RowsPLD.from_rows(krr_pair(1000, 4, 0.25, "weak", as_rows=True))
    n = pld.pq.n_rows
    pld.pq.tables  # built first: their blocks are not the ones checked here
    calls = []

    def spy(fn, blocks):
        calls.append(list(blocks))
        return run_blocks(fn, blocks)

    monkeypatch.setattr(rows_pld, "run_blocks", spy)
    lo, up = pld.delta_interval([0.5])
    assert n > 4 * 256 and calls
    assert all(c == list(range(0, n, 256)) for c in calls), calls  # every pass: blocks of ROW_BLOCK rows
    assert 0.0 < lo[0] <= up[0]
