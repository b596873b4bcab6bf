"""Issue 31 side by side: Poisson-subsampled shuffled binary RR and k-RR (k = 4), T rounds — shufflesim's certified
interval and seconds (the sampled blanket pair composed by the PLD engine; docs/theory.md#sampling) against the
closed-form route the project offered before (the unsampled mechanism's certified ε at the expected number of
participants qn, Balle–Barthe–Gaboardi's subsampling transform, then the best of basic/advanced composition,
δ split evenly over a small grid; "paper style": not a certified bound for Poisson participation, whose number of
participants is random) and, where it can express the question, dp_accounting's PLD accountant.

dp_accounting cannot express shuffling: it has no shuffled mechanism, so it is given the very single-round dominating
pair shufflesim composes (the sampled blanket pair of docs/theory.md#sampling, expanded to its atoms, both
directions; the pair's truncated mass as an infinite-loss atom) and composes it itself
(``from_two_probability_mass_functions(...).self_compose(T)``, pessimistic estimate, value discretisation
``--dp-interval``).  Its ε is an upper bound of the same pair, not certified against round-off; it loops over the
atoms in Python, so it runs only where the pair has at most ``--dp-max-atoms`` atoms.

    PYTHONPATH=. python bench/bench_sampling.py [--rounds 1000] [--delta 1e-6] [--n 1000 1000000] [--q 0.01 0.1]
        [--dp-max-atoms 200000] [--dp-interval 1e-5] [--skip-dp] [--output bench/results/sampling.md]
"""

from __future__ import annotations

import argparse
import math
import os
import time

from shufflesim.accounting.account import account
from shufflesim.accounting.bounds.composition import best_composition
from shufflesim.accounting.bounds.transforms import subsample
from shufflesim.accounting.model.mechanism import Sampling
from shufflesim.mechanisms import KRR, RR2
from shufflesim.mechanisms.sampled import with_sampling

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results", "sampling.md")
HEADER = ["| mechanism | n | q | T | shufflesim eps interval | seconds | closed form composed | dp_accounting eps (same pair) "
          "| dp seconds |", "|---|---|---|---|---|---|---|---|---|"]


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


def dp_accounting_eps(mech, rounds: int, delta: float, *, max_atoms: int = 200_000,
                      interval: float = 1e-5) -> dict:
    """dp_accounting's ε for ``rounds`` compositions of ``mech``'s single-round pair (module docstring):
    {'eps', 'seconds', 'atoms'} or {'note'}."""
    try:
        from dp_accounting.pld import privacy_loss_distribution as pldlib
    except ImportError:
        return {"note": "dp_accounting not installed"}

    pair = mech.pair("tight")
    if pair.n_atoms > max_atoms:
        return {"note": f"not run: {pair.n_atoms:,} atoms > {max_atoms:,}"}
    t0 = time.perf_counter()
    eps = -math.inf
    for side in ([pair] if pair.symmetric else [pair, pair.mirrored()]):
        lp, lq = side.expand()
        up = {i: v for i, v in enumerate(lp.tolist()) if v > -math.inf}
        lo = {i: v for i, v in enumerate(lq.tolist()) if v > -math.inf}
        if side.tail_p > 0:  # the truncated mass: an outcome Q never gives (infinite privacy loss)
            up[-1] = math.log(side.tail_p)
        if side.tail_q > 0:
            lo[-2] = math.log(side.tail_q)
        d = pldlib.from_two_probability_mass_functions(lo, up, pessimistic_estimate=True,
                                                       value_discretization_interval=interval)
        eps = max(eps, float(d.self_compose(rounds).get_epsilon_for_delta(delta)))
    return {"eps": eps, "seconds": time.perf_counter() - t0, "atoms": int(pair.n_atoms)}


def row(kind: str, n: int, q: float, *, eps0: float = 2.0, rounds: int = 1000, delta: float = 1e-6, dp: bool = True,
        dp_max_atoms: int = 200_000, dp_interval: float = 1e-5) -> dict:
    """One row: shufflesim's certified interval and seconds, the closed form composed, dp_accounting's cell."""
    mech = with_sampling(base(kind, n, eps0), Sampling.poisson(q))
    t0 = time.perf_counter()
    (r,) = account(mech, delta=[delta], compositions=rounds).results
    sec = time.perf_counter() - t0
    return {"kind": kind, "n": n, "q": q, "eps0": eps0, "rounds": rounds, "lower": r.eps_lower, "upper": r.eps_upper,
            "seconds": sec, "closed_form": closed_form(kind, n, eps0, q, rounds, delta),
            "dp": dp_accounting_eps(mech, rounds, delta, max_atoms=dp_max_atoms, interval=dp_interval) if dp
            else {"note": "not run (--skip-dp)"}}


def format_row(r: dict) -> str:
    dp = r["dp"]
    dps = (f"{dp['eps']:.4g} ({dp['atoms']:,} atoms)", f"{dp['seconds']:.1f}") if "eps" in dp else (dp["note"], "—")
    return (f"| {r['kind']} eps0={r['eps0']:g} | {r['n']:g} | {r['q']:g} | {r['rounds']} | [{r['lower']:.4g}, "
            f"{r['upper']:.4g}] | {r['seconds']:.1f} | {r['closed_form']:.4g} | {dps[0]} | {dps[1]} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--eps0", type=float, default=2.0)
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 1000000])
    ap.add_argument("--q", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--kinds", nargs="+", default=["rr2", "krr4"])
    ap.add_argument("--skip-dp", action="store_true", help="do not run dp_accounting")
    ap.add_argument("--dp-max-atoms", type=int, default=200_000)
    ap.add_argument("--dp-interval", type=float, default=1e-5, help="dp_accounting's value discretisation interval")
    ap.add_argument("--output", default=RESULTS, help="markdown file for the table ('-': print only)")
    a = ap.parse_args()
    print("\n".join(HEADER))
    lines = []
    for kind in a.kinds:
        for n in a.n:
            for q in a.q:
                lines.append(format_row(row(kind, n, q, eps0=a.eps0, rounds=a.rounds, delta=a.delta, dp=not a.skip_dp,
                                            dp_max_atoms=a.dp_max_atoms, dp_interval=a.dp_interval)))
                print(lines[-1], flush=True)
    if a.output != "-":
        head = [f"# Issue 31 side by side (bench/bench_sampling.py, one run): Poisson-subsampled shuffled mechanisms, "
                f"δ = {a.delta:g}", "",
                "shufflesim: the certified interval of the sampled blanket pair composed by its PLD engine. Closed form: "
                "the route before issue 31 (not certified for Poisson participation). dp_accounting: the same "
                "single-round pair handed to it as atoms and composed by it (pessimistic, value discretisation "
                f"{a.dp_interval:g}; an upper bound of the same pair, not certified against round-off); it cannot "
                "express shuffling itself.", ""]
        with open(a.output, "w", encoding="utf-8") as f:
            f.write("\n".join(head + HEADER + lines) + "\n")


if __name__ == "__main__":
    main()
