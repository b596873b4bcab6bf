"""Benchmark: shufflesim's tight accountant vs Google's dp_accounting on the same two PMFs.

Builds shuffled binary randomised response's pair locally (seed 001 eq 4.1: P = Bin(n, p),
Q = Bin(n-1, p) + Bern(1-p), p = 1/(e^eps0 + 1)) and times, in one process,

* single use: PLD construction + delta(eps)   (shufflesim: exact over the atoms; dp_accounting: its
  ``from_two_probability_mass_functions`` on dictionaries, then ``get_delta_for_epsilon``);
* n_c-fold composition (default 16): shufflesim's certified FFT accountant vs dp_accounting's
  ``self_compose`` (which is not certified and floors composed deltas near 1e-15).

Prints wall-clock and CPU seconds, the deltas (shufflesim as a certified interval) and the time
ratios, and the peak resident memory after the shufflesim part.  Run:

    /work/venv/bin/python bench/bench_pld.py [--n 1000000] [--eps0 1.0] [--eps 0.005] [--eps-composed 0.02]
                                            [--compositions 16] [--dp-interval 1e-4] [--skip-dp]

Targets (issue 3): single-use delta(eps) at n = 1e6 <= 2 s; a 16-fold composition adds <= 1 s;
memory <= 2 GB.
"""

from __future__ import annotations

import argparse
import math
import resource
import time

import numpy as np
from scipy.stats import binom

from shufflesim.accounting.pld.distribution import PrivacyLossDistribution
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.engines.tight import TightAccountant


def rr2_pair(n: int, eps0: float) -> PMFPair:
    p = 1.0 / (math.exp(eps0) + 1.0)
    k = np.arange(n + 1)
    lp = binom.logpmf(k, n, p)
    b = binom.logpmf(k, n - 1, p)
    lq = np.logaddexp(math.log(p) + b, math.log1p(-p) + np.concatenate(([-np.inf], b[:-1])))
    return PMFPair(lp, lq, "rr2", {"n": n, "eps0": eps0})


class Timer:
    def __enter__(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--eps0", type=float, default=1.0)
    ap.add_argument("--eps", type=float, default=0.005, help="eps for the single-use delta")
    ap.add_argument("--eps-composed", type=float, default=0.02, help="eps for the composed delta")
    ap.add_argument("--compositions", type=int, default=16)
    ap.add_argument("--dp-interval", type=float, default=1e-4, help="dp_accounting value_discretization_interval")
    ap.add_argument("--skip-dp", action="store_true")
    args = ap.parse_args()

    print(f"rr2 pair: n={args.n}, eps0={args.eps0}; support {args.n + 1} outcomes")
    with Timer() as t_pmf:
        pair = rr2_pair(args.n, args.eps0)
    print(f"  building the two log-PMFs (shared input): {t_pmf.wall:.3f} s")

    # ---------------------------------------------------------------- shufflesim
    with Timer() as s1:
        pld = PrivacyLossDistribution.from_pair(pair)
        r1 = pld.delta(args.eps)[0]
    with Timer() as s2:
        acc = TightAccountant(pld, compositions=args.compositions)
        r2 = acc.delta(args.eps_composed)[0]
    mem = peak_mb()
    print("shufflesim")
    print(f"  single use   delta({args.eps:g}) in [{r1.delta_lower:.6e}, {r1.delta_upper:.6e}]  "
          f"{s1.wall:.3f} s wall / {s1.cpu:.3f} s cpu  ({r1.notes[0]})")
    print(f"  {args.compositions}-fold      delta({args.eps_composed:g}) in [{r2.delta_lower:.6e}, {r2.delta_upper:.6e}]  "
          f"+{s2.wall:.3f} s wall / {s2.cpu:.3f} s cpu (PLD reused)")
    print(f"  peak resident memory so far: {mem:.0f} MB")

    if args.skip_dp:
        return
    try:
        from dp_accounting.pld import privacy_loss_distribution as dpl
    except ImportError:
        print("dp_accounting not installed: skipping the comparison")
        return

    # ---------------------------------------------------------------- dp_accounting
    with Timer() as d1:
        # dp_accounting's loss is log(upper/lower) under 'upper': upper = P, lower = Q
        upper = dict(enumerate(pair.log_p.tolist()))
        lower = dict(enumerate(pair.log_q.tolist()))
        dp = dpl.from_two_probability_mass_functions(
            lower, upper, pessimistic_estimate=True, value_discretization_interval=args.dp_interval,
            symmetric=False)
        v1 = float(dp.get_delta_for_epsilon(args.eps))
    with Timer() as d2:
        v2 = float(dp.self_compose(args.compositions).get_delta_for_epsilon(args.eps_composed))
    print(f"dp_accounting (pessimistic, value_discretization_interval={args.dp_interval:g})")
    print(f"  single use   delta({args.eps:g}) = {v1:.6e}  {d1.wall:.3f} s wall / {d1.cpu:.3f} s cpu")
    print(f"  {args.compositions}-fold      delta({args.eps_composed:g}) = {v2:.6e}  +{d2.wall:.3f} s wall / {d2.cpu:.3f} s cpu")
    print("ratios (dp_accounting time / shufflesim time, wall clock)")
    print(f"  single use: {d1.wall / s1.wall:.2f}x   {args.compositions}-fold composition step: {d2.wall / s2.wall:.2f}x   "
          f"total: {(d1.wall + d2.wall) / (s1.wall + s2.wall):.2f}x")


if __name__ == "__main__":
    main()
