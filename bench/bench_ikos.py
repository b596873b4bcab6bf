"""Benchmark: IKOS summation (``ikos-sum``) messages per second at n = 10⁶, m = 10, against plain numpy.

The baseline is the minimal vectorised simulation written here: randomised rounding, two negative-binomial
draws per user (success probability 1 − α), reduction mod q in int64, m − 1 uniform shares from numpy's
bounded integer sampler, the last share by int64 arithmetic (valid because m·q < 2⁶³ here), and the sum of
all shares mod q.  shufflesim runs the same trial through its full pipeline (randomiser with rejection
sampling of the shares and overflow-safe uint64 arithmetic → parallel shufflers → analyser summing each
channel exactly → decoding → squared error).  Runs alternate between the two contenders and the median of
each is reported, so the ratio is measured in one process under the same machine load.

    python bench/bench_ikos.py [--n 1000000] [--m 10] [--eps 1.0] [--reps 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from shufflesim.pipeline import registry
from shufflesim.core.rng import trial_seed


def baseline_trial(x: np.ndarray, p: int, q: int, alpha: float, m: int, rng: np.random.Generator) -> float:
    n = x.shape[0]
    px = x * p
    fl = np.floor(px)
    xbar = (fl + (rng.random(n) < px - fl)).astype(np.int64)
    z = rng.negative_binomial(1.0 / n, 1.0 - alpha, n) - rng.negative_binomial(1.0 / n, 1.0 - alpha, n)
    v = np.mod(xbar + z, q)
    shares = rng.integers(0, q, size=(m - 1, n), dtype=np.int64)
    last = np.mod(v - shares.sum(axis=0), q)
    total = (int(shares.sum()) + int(last.sum())) % q
    decoded = total - q if 2 * total > q else total
    return decoded / p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    x = np.random.default_rng(0).random(a.n)
    proto = registry.get("ikos-sum").create(a.n, eps=a.eps, messages=a.m)
    prm = proto.parameters
    assert a.m * prm.q < 2**63, "the int64 baseline needs m*q < 2^63"
    truth = proto.truth(x)
    root = np.random.SeedSequence(1)
    times: dict[str, list[float]] = {"numpy baseline": [], "shufflesim": []}
    for r in range(a.reps):
        g = np.random.default_rng([2, r])
        t = time.perf_counter()
        baseline_trial(x, prm.p, prm.q, prm.alpha, a.m, g)
        times["numpy baseline"].append(time.perf_counter() - t)
        t = time.perf_counter()
        proto.run(x, trial_seed(root, 0, r), validate=False, truth=truth)
        times["shufflesim"].append(time.perf_counter() - t)
    msgs = a.n * a.m
    base = statistics.median(times["numpy baseline"])
    print(f"IKOS trial, n={a.n:,}, m={a.m}, p={prm.p}, q={prm.q} ({proto.bits_per_message} bits), "
          f"eps={a.eps}; {a.reps} alternating repetitions (median)")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<16} {med:8.3f} s/trial  {msgs / med / 1e6:8.2f} M messages/s  "
              f"ratio to baseline {med / base:5.2f}")


if __name__ == "__main__":
    main()
