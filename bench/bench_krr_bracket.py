"""Benchmark (issue 17): shuffled k-RR's analyser view (``krr --adversary shuffled``) bracketed from both sides.

For each n ∈ {10³, 10⁴}, k ∈ {2, 4, 10}, γ ∈ {0.1, 0.5} at δ = 10⁻⁶:

* ε lower — the mechanism-level lower end: the certified ε(δ) of explicit neighbouring data sets
  (k ≥ 3: all others hold a third value while the target switches a → b; k = 2: binary randomised response,
  mechanisms._common.binary_rr_lower — the all-zeros data set until exact_rr2 is wired in);
* ε upper — the smallest certified upper end among every valid method (``--method best``: the stronger
  clone pair, the weak and strong adversaries' pairs, the published bounds), and which one gave it;
* the gap (upper / lower) and the seconds of the whole ``best`` answer (every candidate plus the lower end).

    python bench/bench_krr_bracket.py [--markdown]
"""

from __future__ import annotations

import argparse
import time

from shufflesim.accounting import account
from shufflesim.mechanisms import KRR, Relation

GRID = [(n, k, g) for n in (1000, 10000) for k in (2, 4, 10) for g in (0.1, 0.5)]
DELTA = 1e-6


def row(n: int, k: int, gamma: float) -> dict:
    mech = KRR(n, k, gamma, Relation.SHUFFLED)
    t0 = time.perf_counter()
    rep = account(mech, delta=[DELTA], method="best")
    secs = time.perf_counter() - t0
    (r,) = rep.results
    return {"n": n, "k": k, "gamma": gamma, "eps0": mech.eps0, "eps_lower": r.eps_lower, "eps_upper": r.eps_upper,
            "best": r.method, "seconds": secs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="print the README table")
    a = ap.parse_args()
    rows = [row(*c) for c in GRID]
    if a.markdown:
        print("| n | k | γ | ε0 | ε lower | ε upper | upper / lower | upper from | seconds |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['n']:.0e} | {r['k']} | {r['gamma']} | {r['eps0']:.4g} | {r['eps_lower']:.5g} | "
                  f"{r['eps_upper']:.5g} | {r['eps_upper'] / r['eps_lower']:.4f} | {r['best']} | {r['seconds']:.2f} |")
        return
    for r in rows:
        print(f"n={r['n']:>6} k={r['k']:>2} gamma={r['gamma']:<4} eps0={r['eps0']:.4g}  eps in "
              f"[{r['eps_lower']:.6g}, {r['eps_upper']:.6g}]  gap x{r['eps_upper'] / r['eps_lower']:.4f}  "
              f"upper: {r['best']}  {r['seconds']:.2f} s")


if __name__ == "__main__":
    main()
