"""Issue 31 side by side: Poisson-subsampled shuffled binary RR and k-RR (k = 4), T rounds — shufflesim's certified
interval and seconds (the sampled blanket pair composed by the PLD engine; docs/theory.md#sampling) against the
closed-form route the project offered before (the unsampled mechanism's certified ε at the expected number of
participants qn, Balle–Barthe–Gaboardi's subsampling transform, then the best of basic/advanced composition,
δ split evenly over a small grid; "paper style": not a certified bound for Poisson participation, whose number of
participants is random).

    PYTHONPATH=. python bench/bench_sampling.py [--rounds 1000] [--delta 1e-6] [--n 1000 1000000] [--q 0.01 0.1]
"""

from __future__ import annotations

import argparse
import math
import time

from shufflesim.accounting.account import account
from shufflesim.accounting.bounds.composition import best_composition
from shufflesim.accounting.bounds.transforms import subsample
from shufflesim.accounting.model.mechanism import Sampling
from shufflesim.mechanisms import KRR, RR2
from shufflesim.mechanisms.sampled import with_sampling


def base(kind: str, n: int, eps0: float):
    return RR2(n, eps0) if kind == "rr2" else KRR.from_eps0(n, 4, eps0)


def closed_form(kind: str, n: int, eps0: float, q: float, rounds: int, delta: float) -> float:
    """Smallest total ε over a grid of δ splits: per-round δ_r = f δ / (q T), δ' = (1 − f) δ."""
    m = max(1, round(q * n))
    best = math.inf
    for f in (0.1, 0.3, 0.5, 0.7, 0.9):
        d_base = f * delta / (q * rounds)
        (r,) = account(base(kind, m, eps0), delta=[d_base], method="tight").results
        e1, d1 = subsample(min(r.eps_upper, eps0), d_base, rate=q)
        e_tot, _, _ = best_composition(e1, d1, rounds, (1 - f) * delta)
        best = min(best, e_tot)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--eps0", type=float, default=2.0)
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 1000000])
    ap.add_argument("--q", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--kinds", nargs="+", default=["rr2", "krr4"])
    a = ap.parse_args()
    print("| mechanism | n | q | T | shufflesim eps interval | seconds | closed form composed |")
    print("|---|---|---|---|---|---|---|")
    for kind in a.kinds:
        for n in a.n:
            for q in a.q:
                mech = with_sampling(base(kind, n, a.eps0), Sampling.poisson(q))
                t0 = time.perf_counter()
                (r,) = account(mech, delta=[a.delta], compositions=a.rounds).results
                sec = time.perf_counter() - t0
                cf = closed_form(kind, n, a.eps0, q, a.rounds, a.delta)
                print(f"| {kind} eps0={a.eps0:g} | {n:g} | {q:g} | {a.rounds} | [{r.eps_lower:.4g}, {r.eps_upper:.4g}] "
                      f"| {sec:.1f} | {cf:.4g} |", flush=True)


if __name__ == "__main__":
    main()
