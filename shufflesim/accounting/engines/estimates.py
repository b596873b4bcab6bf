"""Memory and time estimates of the pair-based engines, made before anything large is allocated (issue 21).

Every cost estimate the engine choice (:mod:`.choice`) compares or checks lives here: :func:`estimate_accounting`
(the PLD accountant -- exact atoms, exact rows, exact composition, FFT composition -- or the bucket rows, as
the choice says), :func:`exact_row_engine_estimate`, :func:`weak_buckets_estimate` and the time budget
:data:`EXACT_FALLBACK_SECONDS`; each returns an :class:`Estimate` of the peak memory above the process's
baseline and of the run time.  :func:`check_accounting` refuses (``ResourceError``, with the
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
BYTES_PER_TABLE_ENTRY = 30.0
#: fixed working set of one accountant run (block temporaries of 2^20 cells, FFT plans, rows)
FIXED_BYTES = 32 << 20
#: seconds per atom of the exact row engine (tail tables, single use)
SECONDS_PER_ATOM = 1e-7
#: seconds of the FFT composition of one accountant at 1000 uses (measured ~25 s; scaled by (log2 uses / 10)^2)
FFT_SECONDS_AT_1000 = 25.0
#: the exact row engine is chosen over (or instead of) the bucket rows only below this estimated time (seconds)
EXACT_FALLBACK_SECONDS = 60.0
#: bytes per atom of the weak adversary's bucket rows (:mod:`.bucketed_weak`: the rows and their engine's tables)
WEAK_BYTES_PER_ATOM = 64.0
#: seconds per atom of the weak adversary's bucket rows, single use (composed: WEAK_COMPOSED_FACTOR times more)
WEAK_SECONDS_PER_ATOM = 4e-7
WEAK_COMPOSED_FACTOR = 20
#: seconds per user of exact_rr2's branch and bound, per value asked (about a second at n = 1e5, docs of
#: exact_rr2.MAX_N_EXACT); a composed question adds the dominating pair's run (estimated by its own engine)
EXACT_RR2_SECONDS_PER_USER = 1e-5
#: largest n of exact_rr2's branch and bound (exact_rr2.MAX_N_EXACT is this constant); its population path above
EXACT_RR2_BRANCH_MAX_N = 10**6
#: above EXACT_RR2_BRANCH_MAX_N (exact_rr2's population path): seconds per value per sqrt(user) -- ~600-750
#: evaluations of O(sqrt(n)) each (measured 23 s at n = 1e9, eps0 = 1, delta = 1e-9, 28 s at delta = 1e-6, on
#: 2 loaded cores; 8 s at 1e8; docs/theory.md#exact-rr2-population)
EXACT_RR2_POP_SECONDS_PER_SQRT_USER = 9e-4
#: ... and its peak memory per sqrt(user) (two windows of ~20 sqrt(n p q) values and a few temporaries of each)
EXACT_RR2_POP_BYTES_PER_SQRT_USER = 1000.0


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
    return Estimate(FIXED_BYTES + 8.0 * 8 * rows.N.size + BYTES_PER_TABLE_ENTRY * atoms / 2,
                    1.0 + SECONDS_PER_ATOM * atoms, "exact row engine")


def weak_buckets_estimate(atoms: float, compositions: int = 1) -> Estimate:
    """Estimate of the weak adversary's bucket rows (:func:`~.bucketed_weak.weak_bucketed`) with about ``atoms``
    atoms in its upper pair (:func:`~.bucketed_weak.estimate_atoms`)."""
    factor = 1 if compositions == 1 else WEAK_COMPOSED_FACTOR
    return Estimate(WEAK_BYTES_PER_ATOM * atoms + FIXED_BYTES, 1.0 + WEAK_SECONDS_PER_ATOM * atoms * factor,
                    "weak buckets")


def exact_binary_rr_estimate(n: int, values: int = 1) -> Estimate:
    """Estimate of binary RR's exact worst case over every data set (:mod:`.exact_rr2`) at ``values`` values: the
    branch and bound up to n = 1e6 (time linear in n), the population cover above (time and memory like sqrt(n))."""
    if n <= EXACT_RR2_BRANCH_MAX_N:
        return Estimate(FIXED_BYTES, 0.1 + EXACT_RR2_SECONDS_PER_USER * n * values, "exact binary RR")
    root = math.sqrt(n)
    return Estimate(FIXED_BYTES + EXACT_RR2_POP_BYTES_PER_SQRT_USER * root,
                    0.5 + EXACT_RR2_POP_SECONDS_PER_SQRT_USER * root * values, "exact binary RR (population cover)")


def _single(p, uses: int = 1, bucketed: bool | None = None) -> Estimate:
    from shufflesim.accounting.rows.binomial_rows import BinomialRows
    from shufflesim.accounting.rows.bucketed import BLOCK_STEPS, needs_buckets

    if isinstance(p, BinomialRows):
        rows_bytes = 8.0 * 8 * p.N.size
        if needs_buckets(p, compositions=uses) if bucketed is None else bucketed:
            # bucket rows: blocks x window (~ 2 * 8.3 sqrt(N)/2 columns at COLUMN_TAIL) atoms, up to the
            # largest block count, both sides (upper and lower) one after the other
            nmax = float(p.N.max()) if p.N.size else 1.0
            atoms = BLOCK_STEPS[0] * 8.5 * math.sqrt(nmax)
            return Estimate(FIXED_BYTES + rows_bytes + BYTES_PER_TABLE_ENTRY * atoms,
                            2.0 + 2 * 4 * SECONDS_PER_ATOM * atoms + 2e-5 * p.N.size, "bucket rows")
        return exact_row_engine_estimate(p)
    size = float(getattr(p, "size", 0) or 0)
    return Estimate(FIXED_BYTES + 64.0 * size, 0.5 + 1e-7 * size, "exact atoms")


def estimate_accounting(pairs, compositions: int = 1, numerics: dict | None = None,
                        bucketed: bool | None = None) -> Estimate:
    """Estimate of one pair-based accounting run (:func:`~.tight.tight_epsilon` / ``tight_delta``); ``bucketed``:
    whether pairs in row form go through the bucket rows (None: as :func:`~.bucketed.needs_buckets` says)."""
    seq = _seq(pairs)
    parts = [_single(p, len(seq) * compositions, bucketed) for p in {id(p): p for p in seq}.values()]
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
        mem = max(mem, FIXED_BYTES + 300.0 * grid)
        # measured (one accountant, 2 cores): ~1-4 s at 16 uses, ~25 s at 10^3, ~1-2 min at 10^6;
        # bucket rows run two accountants (upper and lower)
        sec += FFT_SECONDS_AT_1000 * (math.log2(uses) / 10.0) ** 2 * (2 if engine == "bucket rows" else 1)
        engine += " + FFT composition"
    return Estimate(mem, sec, engine)


def check_accounting(pairs, compositions: int = 1, numerics: dict | None = None,
                     bucketed: bool | None = None) -> Estimate:
    """Refuse (ResourceError) a run whose estimated memory does not fit or whose time exceeds the limit;
    return the estimate otherwise."""
    return check_estimate(estimate_accounting(pairs, compositions, numerics, bucketed))


def check_estimate(est: Estimate) -> Estimate:
    """Refuse (ResourceError) an engine whose estimate ``est`` does not fit in memory or exceeds the time limit."""
    advice = ("fewer compositions, a smaller n, or a published bound (--method erlingsson|feldman); "
              "SHUFFLESIM_MEMORY_LIMIT / SHUFFLESIM_TIME_LIMIT set the limits")
    check_memory(est.bytes, f"pair-based accounting ({est.engine})", advice)
    check_time(est.seconds, f"pair-based accounting ({est.engine})", advice)
    return est
