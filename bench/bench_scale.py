"""Benchmarks of issue 11 (scale), each ratio measured in one process under the same machine load.

    python bench/bench_scale.py engines   [--ns 1e3,1e5,1e6,1e7] [--ks 2,10,100]
    python bench/bench_scale.py baseline  [--n 1e6] [--k 10] [--reps 15]
    python bench/bench_scale.py workers   [--n 2e5] [--trials 80]
    python bench/bench_scale.py memory    [--trials 1e7] [--workers 2] [--chunk-size 1e5]
    python bench/bench_scale.py accounting [--ns 1e6,1e7,1e8,1e9]   (issue 21: bench/scale_accounting.py)
    python bench/bench_scale.py table [--wang-dir DIR] [--write]     (issue 21: bench/scale_table.py)
    python bench/bench_scale.py wang-check [--wang-dir DIR] [--write] (issue 21: Wang et al. vs enumeration)

* ``engines``  — seconds per k-RR trial under the faithful and the fast engine (``run_trials``), and
  their ratio, for every (n, k); the fast engine's cost should be flat in n.
* ``baseline`` — the faithful engine against a plain numpy simulation of the same trial (alternating
  repetitions, medians).
* ``workers``  — a CPU-bound sweep (faithful k-RR) on 1 and on 2 local worker processes: wall-clock ratio.
* ``memory``   — a sweep of ``--trials`` fast-engine k-RR trials (one point, n = 10⁶, k = 10) streamed to
  disk: wall-clock and peak resident memory of the driver and of the largest worker (ru_maxrss).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from shufflesim.core.rng import trial_seed
from shufflesim.experiments.montecarlo import run_trials
from shufflesim.pipeline import registry


def _ints(text: str) -> list[int]:
    return [int(float(t)) for t in text.split(",")]


def engines(a) -> None:
    print(f"{'n':>10} {'k':>4} {'faithful s/trial':>17} {'fast s/trial':>13} {'ratio':>9}")
    for n in _ints(a.ns):
        for k in _ints(a.ks):
            x = np.random.default_rng(0).integers(0, k, n)
            proto = registry.create("krr", n, k=k, eps0=1.0)
            t_faith = max(3, min(200, int(2e6 / n)))
            t = time.perf_counter()
            run_trials(proto, x, trials=t_faith, rng=1, engine="faithful")
            faithful = (time.perf_counter() - t) / t_faith
            t = time.perf_counter()
            run_trials(proto, x, trials=a.fast_trials, rng=1, engine="fast")
            fast = (time.perf_counter() - t) / a.fast_trials
            print(f"{n:>10,} {k:>4} {faithful:>17.3g} {fast:>13.3g} {faithful / fast:>8.0f}x", flush=True)


def baseline(a) -> None:
    n, k, gamma = int(a.n), a.k, 0.5
    x = np.random.default_rng(0).integers(0, k, n)
    proto = registry.create("krr", n, k=k, gamma=gamma)
    truth = proto.truth(x)
    root = np.random.SeedSequence(1)
    times: dict[str, list[float]] = {"numpy baseline": [], "faithful engine": []}
    for r in range(a.reps):
        g = np.random.default_rng([2, r])
        t = time.perf_counter()
        coins = g.random(n) < gamma
        y = np.where(coins, g.integers(0, k, size=n), x)
        (np.bincount(y, minlength=k) - n * gamma / k) / (1 - gamma)
        times["numpy baseline"].append(time.perf_counter() - t)
        t = time.perf_counter()
        proto.run(x, trial_seed(root, 0, r), validate=False, truth=truth)
        times["faithful engine"].append(time.perf_counter() - t)
    base = statistics.median(times["numpy baseline"])
    print(f"k-RR trial, n={n:,}, k={k}: {a.reps} alternating repetitions (median)")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<18} {med * 1e3:8.2f} ms/trial   speed vs baseline {base / med:5.2f}x")


def _sweep(trials: int, n: int, engine: str):
    from shufflesim.experiments.sweep import Sweep, grid

    return Sweep(tuple(grid("krr", n=n, k=10, eps0=1.0)), trials=trials, seed=0, engine=engine)


def _burn(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s


def _control() -> float:
    """Speed-up of 2 processes over 1 on pure-Python work: what the machine offers right now."""
    from concurrent.futures import ProcessPoolExecutor

    t = time.perf_counter()
    for _ in range(4):
        _burn(3_000_000)
    one = time.perf_counter() - t
    with ProcessPoolExecutor(2) as ex:
        t = time.perf_counter()
        list(ex.map(_burn, [3_000_000] * 4))
        two = time.perf_counter() - t
    return one / two


def workers(a) -> None:
    from shufflesim.experiments.sweep import run_sweep

    sw = _sweep(a.trials, int(a.n), "faithful")
    out = {}
    for w in (1, 2):
        d = tempfile.mkdtemp(prefix="bench-sweep-")
        try:
            t = time.perf_counter()
            run_sweep(sw, d, backend="processes", workers=w, chunk_size=max(1, a.trials // 16))
            out[w] = time.perf_counter() - t
        finally:
            shutil.rmtree(d, ignore_errors=True)
    print(f"faithful k-RR sweep, n={int(a.n):,}, k=10, {a.trials} trials: 1 worker {out[1]:.2f} s, "
          f"2 workers {out[2]:.2f} s, speed-up {out[1] / out[2]:.2f}x")
    print(f"  control: 2 processes vs 1 on pure-Python work right now: {_control():.2f}x "
          f"(os.getloadavg() = {', '.join(f'{v:.1f}' for v in __import__('os').getloadavg())})")


def memory(a) -> None:
    from shufflesim.experiments.sweep import run_sweep

    trials = int(float(a.trials))
    sw = _sweep(trials, 10**6, "fast")
    d = tempfile.mkdtemp(prefix="bench-sweep-")
    try:
        t = time.perf_counter()
        res = run_sweep(sw, d, backend="processes", workers=a.workers, chunk_size=int(float(a.chunk_size)),
                        progress=None)
        wall = time.perf_counter() - t
        size = sum(p.stat().st_size for p in (res.path / "parts").rglob("*.parquet"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{trials:,}-trial fast k-RR sweep (n=10^6, k=10), {a.workers} workers: {wall:.0f} s "
          f"({wall / trials * 1e6:.1f} us/trial wall), parts {size / 2**20:.0f} MiB on disk")
    print(f"  peak RSS: driver {me:.0f} MiB, largest worker {kids:.0f} MiB")
    print(res.summary.to_string(index=False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("engines")
    e.add_argument("--ns", default="1e3,1e5,1e6,1e7")
    e.add_argument("--ks", default="2,10,100")
    e.add_argument("--fast-trials", type=int, default=2000)
    b = sub.add_parser("baseline")
    b.add_argument("--n", type=float, default=1e6)
    b.add_argument("--k", type=int, default=10)
    b.add_argument("--reps", type=int, default=15)
    w = sub.add_parser("workers")
    w.add_argument("--n", type=float, default=2e5)
    w.add_argument("--trials", type=int, default=80)
    m = sub.add_parser("memory")
    m.add_argument("--trials", default="1e7")
    m.add_argument("--workers", type=int, default=2)
    m.add_argument("--chunk-size", default="1e5")
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    import scale_accounting  # issue 21: certified accounting at n = 1e6 .. 1e9

    import scale_table  # issue 21 item 4: the side-by-side table (shufflesim, current, dp_accounting, Wang et al.)

    scale_accounting.add_parser(sub)
    scale_table.add_parser(sub)
    scale_table.add_check_parser(sub)
    a = ap.parse_args()
    {"engines": engines, "baseline": baseline, "workers": workers, "memory": memory,
     "accounting": scale_accounting.accounting, "table": scale_table.run,
     "wang-check": scale_table.wang_check}[a.what](a)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
