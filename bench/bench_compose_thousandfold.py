"""Benchmark (issue 21, item 1, session 6): 1000-fold composition of the stronger clone pair (``account clones`` /
``account rr2``: the same pair and the same binary-RR data-set lower end) at n = 1e8 and 1e9, delta = 1e-9, the
search settings of this session against the ones before it, in the same process.

Two halves, each timed in main-thread CPU seconds (``time.thread_time``; the machine is shared, so wall time is
printed but not compared) after a warm-up that imports scipy and builds the pair:

* upper end: ``tight_epsilon`` on the pair (bucket rows composed by the FFT accountant).  Old: each side's FFT
  accountant asked for rtol/4 with refinements aiming at 0.4 of the width needed; new: 0.9 rtol each (recomputed
  at rtol/4 where the merged interval misses rtol), aiming at 0.8 (bucketed.COMPOSED_EPS_SHARE, COMPOSED_REFINE_AIM).
* lower end: ``exact_rr2.composed_lower_eps`` on the data sets 'all others hold 0' / 'all others hold 1'.  Old: both
  data sets, eps_rtol 2.5e-4, refinement at the estimate until its delta accuracy is met; new: one of the mirror
  pair, eps_rtol 1e-3 aiming at 0.8 from 64 compositions on, refinement stopped once the eps interval is met or
  stalls (tight.EPS_RTOL_STOP, STALL).

Prints each half's interval / value and CPU seconds, old and new, and the ratio old/new.  Every value printed is
certified either way (the settings change only which FFT grids are built).

    PYTHONPATH=$PWD python bench/bench_compose_thousandfold.py [--n 1e8 1e9]
"""

from __future__ import annotations

import argparse
import time


def _settings(old: bool) -> None:
    import shufflesim.accounting.rows.bucketed as BK
    import shufflesim.accounting.exact.exact_rr2 as X
    import shufflesim.accounting.engines.tight as T

    BK.COMPOSED_EPS_SHARE = 0.25 if old else 0.9
    BK.COMPOSED_REFINE_AIM = 0.4 if old else 0.8
    X.LONG_COMPOSITION = 10**12 if old else 64
    T.EPS_RTOL_STOP = not old


def _timed(fn):
    c, w = time.thread_time(), time.perf_counter()
    out = fn()
    return out, time.thread_time() - c, time.perf_counter() - w


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", nargs="+", type=float, default=[1e8, 1e9])
    ap.add_argument("--compositions", type=int, default=1000)
    args = ap.parse_args(argv)

    from shufflesim.accounting.exact import exact_rr2 as X
    from shufflesim.accounting.pairs.variation import stronger_clones_pair
    from shufflesim.accounting.engines.tight import tight_epsilon
    from shufflesim.maths.rr import EPS0_MARGIN

    k, delta = args.compositions, 1e-9
    # warm-up: scipy's modules imported once, outside the timings
    tight_epsilon(stronger_clones_pair(10**4, 1.0), [delta], compositions=4)
    for n in (int(v) for v in args.n):
        pair = stronger_clones_pair(n, 1.0, tail_bound=1e-7 * delta / k)
        ends = [0, n - 1]
        e0 = 1.0 * (1.0 - EPS0_MARGIN)
        row = {}
        for label in ("old", "new"):
            _settings(label == "old")
            (up,), cu, wu = _timed(lambda: tight_epsilon(pair, [delta], compositions=k))
            lo, cl, wl = _timed(lambda: X.composed_lower_eps(n, e0, delta, k, ends if label == "old" else X.mirror_distinct(n, ends)))
            row[label] = (up, cu, wu, lo, cl, wl)
            width = (up.eps_upper - up.eps_lower) / up.eps_upper
            print(f"n={n:.0e} {label}: upper [{up.eps_lower:.7g}, {up.eps_upper:.7g}] (rel width {width:.2e}) "
                  f"cpu {cu:.2f} s (wall {wu:.2f}); data-set lower end {lo[0]:.7g} cpu {cl:.2f} s (wall {wl:.2f})",
                  flush=True)
        _settings(False)
        (o, n_) = row["old"], row["new"]
        print(f"n={n:.0e} ratio old/new CPU: upper {o[1] / n_[1]:.2f}x, lower {o[4] / n_[4]:.2f}x, "
              f"both {(o[1] + o[4]) / (n_[1] + n_[4]):.2f}x", flush=True)


if __name__ == "__main__":
    main()
