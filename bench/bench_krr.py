"""Benchmark: shuffled k-RR trials per second at n = 10⁶, k = 10, against plain numpy.

The baseline is the minimal vectorised simulation written here: draw the blanket coins, draw the
uniform categories, select, bincount, debias.  shufflesim runs the same trial through its full pipeline
(randomiser → shuffler → analyser, with the debiased counts, the simplex-projected distribution and the
squared error).  A second line forces the shuffler to materialise the permutation (what an
order-sensitive analyser would pay).  Runs alternate between the contenders and the median of each is
reported, so the ratio is measured in one process under the same machine load.

    python bench/bench_krr.py [--n 1000000] [--k 10] [--reps 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from shufflesim.pipeline import registry
from shufflesim.core.rng import trial_seed


def baseline_trial(x: np.ndarray, k: int, gamma: float, rng: np.random.Generator) -> np.ndarray:
    n = x.shape[0]
    coins = rng.random(n) < gamma
    noise = rng.integers(0, k, size=n)
    y = np.where(coins, noise, x)
    return (np.bincount(y, minlength=k) - n * gamma / k) / (1 - gamma)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    x = np.random.default_rng(0).integers(0, a.k, a.n)
    proto = registry.create("krr", a.n, k=a.k, gamma=a.gamma)
    truth = proto.truth(x)
    root = np.random.SeedSequence(1)
    times = {"numpy baseline": [], "shufflesim": [], "shufflesim (materialised shuffle)": []}
    for r in range(a.reps):
        g = np.random.default_rng([2, r])
        t = time.perf_counter()
        baseline_trial(x, a.k, a.gamma, g)
        times["numpy baseline"].append(time.perf_counter() - t)
        t = time.perf_counter()
        proto.run(x, trial_seed(root, 0, r), validate=False, truth=truth)
        times["shufflesim"].append(time.perf_counter() - t)
        t = time.perf_counter()
        res = proto.run(x, trial_seed(root, 0, r), validate=False, truth=truth, keep_view=True)
        res.view.channel(0)
        times["shufflesim (materialised shuffle)"].append(time.perf_counter() - t)
    base = statistics.median(times["numpy baseline"])
    print(f"k-RR trial, n={a.n:,}, k={a.k}, gamma={a.gamma}, {a.reps} alternating repetitions (median)")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<36} {1 / med:8.2f} trials/s   ratio vs baseline {base / med:5.2f}x")


if __name__ == "__main__":
    main()
