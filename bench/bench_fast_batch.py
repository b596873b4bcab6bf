"""Benchmark: the fast engine's vectorised batch samplers (``sample_fast_batch``) against the per-trial
samplers (``sample_fast``) they replace, per trial, for the summation protocols.

Both run through :func:`shufflesim.pipeline.fast.fast_records` exactly as sweeps and ``validate`` run them
(blocks of 256 trials with their own seeds); the per-trial contender is the same protocol object with its
batch sampler hidden, so ``fast_block`` falls back to one ``sample_fast`` a trial.  Runs alternate between
the contenders and the median of each is reported — CPU time of this process (``time.process_time``,
one thread: set OMP_NUM_THREADS=1) and wall time — so the ratio is measured in one process under the same
machine load.

    OMP_NUM_THREADS=1 python bench/bench_fast_batch.py [--reps 3] [--trials 2560]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from shufflesim.experiments.data import load_data
from shufflesim.pipeline import registry
from shufflesim.pipeline.fast import fast_records, summarise_data

#: (protocol, n (None: the data set's), parameters, data): the validate examples of issue 20 first
CASES = [
    ("blanket-sum", 1000, dict(eps=1.0), "uniform"),
    ("recursive-sum", None, dict(eps=1.0, messages=2), "adult-age"),
    ("blanket-sum", None, dict(eps=1.0), "adult-age"),
    ("blanket-sum", 100_000, dict(eps=1.0, mode="bennett"), "uniform"),
    ("recursive-sum", 100_000, dict(eps=1.0, messages=2, mode="bennett"), "uniform"),
    ("ikos-sum", 1000, dict(eps=1.0), "uniform"),
    ("cheu-sum", 1000, dict(eps=1.0), "uniform"),
    ("local-rr-sum", 1000, dict(eps=1.0), "uniform"),
    ("local-laplace-sum", 1000, dict(eps=1.0), "uniform"),
    ("central-laplace-sum", 1000, dict(eps=1.0), "uniform"),
    ("central-dlap-sum", 1000, dict(eps=1.0), "uniform"),
]


def per_trial(proto):
    """``proto`` with its batch sampler hidden: fast_block draws one ``sample_fast`` a trial."""

    class PerTrial(type(proto)):
        sample_fast_batch = None

    other = PerTrial.__new__(PerTrial)
    other.__dict__.update(proto.__dict__)
    return other


def timed(proto, summary, truth, trials: int, seed: int) -> tuple[float, float]:
    """(CPU, wall) seconds a trial of ``trials`` fast-engine trials."""
    c0, w0 = time.process_time(), time.perf_counter()
    fast_records(proto, summary, truth, np.random.SeedSequence(seed), 0, 0, trials)
    return (time.process_time() - c0) / trials, (time.perf_counter() - w0) / trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trials", type=int, default=2560,
                    help="per-trial sampler's trials a rep at n <= 1000, fewer above (batch: 10x)")
    a = ap.parse_args()
    print(f"{'protocol':<20} {'n':>7} {'data':<10} {'per-trial µs':>13} {'batch µs':>9} {'ratio cpu':>9} "
          f"{'ratio wall':>10}")
    for name, n, params, data in CASES:
        cls = registry.get(name)
        x = load_data(data, data_kind=cls.data_kind, n=n, rng=7)
        proto = cls.create(x.shape[0], **params)
        summary, truth = summarise_data(proto, x), proto.truth(x)
        slow = per_trial(proto)
        fast_records(proto, summary, truth, np.random.SeedSequence(0), 0, 0, 256)  # warm up
        trials = max(256, min(a.trials, a.trials * 1000 // x.shape[0]))
        single, batch = [], []
        for r in range(a.reps):  # alternate the contenders
            single.append(timed(slow, summary, truth, trials, seed=2 * r + 1))
            batch.append(timed(proto, summary, truth, 10 * trials, seed=2 * r + 2))
        s_cpu, b_cpu = (statistics.median(t[0] for t in v) for v in (single, batch))
        s_wall, b_wall = (statistics.median(t[1] for t in v) for v in (single, batch))
        print(f"{name:<20} {x.shape[0]:>7} {data:<10} {1e6 * s_cpu:>13.1f} {1e6 * b_cpu:>9.2f} "
              f"{s_cpu / b_cpu:>9.1f} {s_wall / b_wall:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
