"""Issue 9: the accountant's block loops on threads change no number (bit-identical to a serial run).

Table building (rows_pld.RowTables), the per-row terms of the exact single-use delta
(rows_pld.RowsDirection.log_delta_rows) and the streamed placement of atoms for FFT composition
(rows_stream) run on ``shufflesim.accounting.numerics.threads``; each is compared here with a serial run
(SHUFFLESIM_THREADS=1) on a grid of pairs, single use and composed, eps(delta) and delta(eps).
"""

from __future__ import annotations

import pytest

from shufflesim.accounting.rows import rows_pld
from shufflesim.accounting.pairs import krr_pair
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon

GRID = [
    ("clones n=1e5 eps0=1", lambda: stronger_clones_pair(10**5, 1.0)),
    ("clones n=2e4 eps0=3", lambda: stronger_clones_pair(20_000, 3.0)),
    ("krr weak n=1000", lambda: krr_pair(1000, 4, 0.25, "weak", as_rows=True)),
    ("krr strong n=1e4", lambda: krr_pair(10**4, 4, 0.25, "strong", as_rows=True)),
]


def _answers(pair):
    out = []
    for comp in (1, 4):
        (e,) = tight_epsilon(pair, [1e-6], compositions=comp)
        (d,) = tight_delta(pair, [0.5 * e.eps_upper], compositions=comp)
        out.append((e.eps_lower, e.eps_upper, d.delta_lower, d.delta_upper))
    return out


@pytest.mark.parametrize("name,make", GRID, ids=[g[0] for g in GRID])
def test_threads_are_bit_identical(name, make, monkeypatch):
    monkeypatch.setattr(rows_pld, "ROW_BLOCK", 256)  # several row chunks even for small pairs
    monkeypatch.setenv("SHUFFLESIM_THREADS", "1")
    serial = _answers(make())
    monkeypatch.setenv("SHUFFLESIM_THREADS", "2")
    threaded = _answers(make())
    assert threaded == serial
