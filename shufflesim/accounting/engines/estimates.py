"""Memory and time estimates of the pair-based accountant, made before anything large is allocated (issue 21).

:func:`estimate_accounting` mirrors the engine choice of :mod:`.tight` (exact row engine, bucket rows,
exact composition, FFT composition) and returns an :class:`Estimate` of the peak memory above the
process's baseline and of the run time.  :func:`check_accounting` refuses (``ResourceError``, with the
estimate and the knob to turn) when the memory would not fit (:func:`shufflesim.core.resources.check_memory`)
or the time exceeds ``SHUFFLESIM_TIME_LIMIT``.

The constants are measured on the development machine (2 cores; tests/test_scale.py checks the memory
estimate against measured peaks within the factor :data:`MEMORY_FACTOR`): they are upper estimates of
the dominant arrays, not of every temporary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shufflesim.core.resources import check_memory, check_time

#: the memory estimate is within this factor of the measured peak (either way) -- tests/test_scale.py
MEMORY_FACTOR = 4.0
#: with composition the estimate is the largest FFT grid's, an upper estimate within this factor
COMPOSED_MEMORY_FACTOR = 8.0
#: bytes per tail-table entry of the exact row engine (T, U float64 and the block temporaries)
_BYTES_PER_TABLE_ENTRY = 30.0
#: fixed working set of one accountant run (block temporaries of 2^20 cells, FFT plans, rows)
_FIXED_BYTES = 32 << 20
#: seconds per atom of the exact row engine (tail tables, single use)
_SECONDS_PER_ATOM = 1e-7
#: seconds of the FFT composition of one accountant at 1000 uses (measured ~25 s; scaled by (log2 uses / 10)^2)
_FFT_SECONDS_AT_1000 = 25.0


@dataclass(frozen=True)
class Estimate:
    """Estimated peak memory (bytes above the baseline) and run time (seconds) of a request."""

    bytes: float
    seconds: float
    engine: str

    def describe(self) -> str:
        from shufflesim.core.resources import human_bytes

        return f"{self.engine}: about {human_bytes(self.bytes)} and {self.seconds:.3g} s"


def _seq(pairs):
    return list(pairs) if isinstance(pairs, (list, tuple)) else [pairs]


def exact_row_engine_estimate(rows) -> Estimate:
    """Estimate of the exact row engine (:class:`~.rows_pld.RowsPLD`'s tail tables, single use) on a pair in
    row form (:class:`~.binomial_rows.BinomialRows`): the tail tables start at N/2 - 1, about half the
    atoms.  Public for the engine choice of :mod:`.tight` (its fallback from wide bucket rows)."""
    atoms = float(rows.n_atoms)
    return Estimate(_FIXED_BYTES + 8.0 * 8 * rows.N.size + _BYTES_PER_TABLE_ENTRY * atoms / 2,
                    1.0 + _SECONDS_PER_ATOM * atoms, "exact row engine")


def _single(p, uses: int = 1) -> Estimate:
    from shufflesim.accounting.rows.binomial_rows import BinomialRows
    from shufflesim.accounting.rows.bucketed import BLOCK_STEPS, needs_buckets

    if isinstance(p, BinomialRows):
        rows_bytes = 8.0 * 8 * p.N.size
        if needs_buckets(p, compositions=uses):
            # bucket rows: blocks x window (~ 2 * 8.3 sqrt(N)/2 columns at COLUMN_TAIL) atoms, up to the
            # largest block count, both sides (upper and lower) one after the other
            nmax = float(p.N.max()) if p.N.size else 1.0
            atoms = BLOCK_STEPS[0] * 8.5 * math.sqrt(nmax)
            return Estimate(_FIXED_BYTES + rows_bytes + _BYTES_PER_TABLE_ENTRY * atoms,
                            2.0 + 2 * 4 * _SECONDS_PER_ATOM * atoms + 2e-5 * p.N.size, "bucket rows")
        return exact_row_engine_estimate(p)
    size = float(getattr(p, "size", 0) or 0)
    return Estimate(_FIXED_BYTES + 64.0 * size, 0.5 + 1e-7 * size, "exact atoms")


def estimate_accounting(pairs, compositions: int = 1, numerics: dict | None = None) -> Estimate:
    """Estimate of one pair-based accounting run (:func:`~.tight.tight_epsilon` / ``tight_delta``)."""
    seq = _seq(pairs)
    parts = [_single(p, len(seq) * compositions) for p in {id(p): p for p in seq}.values()]
    mem = max(e.bytes for e in parts)
    sec = sum(e.seconds for e in parts)
    engine = parts[0].engine
    uses = len(seq) * compositions
    if uses > 1:
        num = dict(numerics or {})
        if engine == "bucket rows":
            from shufflesim.accounting.rows.bucketed import COMPOSED_NUMERICS

            num = {**COMPOSED_NUMERICS, **num}
        grid = float(num.get("max_grid_size", 2**22))
        # FFT at the largest grid: <= 300 bytes per point (complex grids, their transforms, the placement
        # and the base-grid accumulators; measured 1.1-2.3 GB with the 2^23 cap, at most 273 B per point).
        # An upper estimate: the refinement often stops at a smaller grid (COMPOSED_MEMORY_FACTOR)
        mem = max(mem, _FIXED_BYTES + 300.0 * grid)
        # measured (one accountant, 2 cores): ~1-4 s at 16 uses, ~25 s at 10^3, ~1-2 min at 10^6;
        # bucket rows run two accountants (upper and lower)
        sec += _FFT_SECONDS_AT_1000 * (math.log2(uses) / 10.0) ** 2 * (2 if engine == "bucket rows" else 1)
        engine += " + FFT composition"
    return Estimate(mem, sec, engine)


def check_accounting(pairs, compositions: int = 1, numerics: dict | None = None) -> Estimate:
    """Refuse (ResourceError) a run whose estimated memory does not fit or whose time exceeds the limit;
    return the estimate otherwise."""
    est = estimate_accounting(pairs, compositions, numerics)
    advice = ("fewer compositions, a smaller n, or a published bound (--method erlingsson|feldman); "
              "SHUFFLESIM_MEMORY_LIMIT / SHUFFLESIM_TIME_LIMIT set the limits")
    check_memory(est.bytes, f"pair-based accounting ({est.engine})", advice)
    check_time(est.seconds, f"pair-based accounting ({est.engine})", advice)
    return est
