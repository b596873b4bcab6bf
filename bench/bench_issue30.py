"""Benchmark (issue 30, item 4): certified ε intervals per randomiser, side by side, at δ = 10⁻⁹.

One run, one process; every figure below comes from this run (read the ratios, not the seconds, on a shared
machine).  Randomisers (ε0 derived from the matrix where there is one):

* ``rr2``     binary randomised response, ε0 = 1;
* ``krr4``, ``krr10``, ``krr100``  k-RR with blanket probability γ = 0.25 (ε0 = ln(1 + k(1 − γ)/γ)), the
  released view (``KRR(..., Relation.SHUFFLED)``, ``account krr --adversary shuffled``);
* ``M``       the 3 × 3 matrix [[.6, .3, .1], [.2, .5, .3], [.25, .25, .5]] (``account matrix``);
* ``olh``     a local-hashing randomiser written out as a matrix (:func:`local_hashing_matrix`): d = 8 inputs,
  H = 4 fixed hash functions into g = 2 buckets (h_j(x) = bit j of x for j = 0, 1, 2; h_3(x) = parity of x),
  the user sends (j, randomised bucket) with j uniform and the bucket kept with probability e^ε0/(e^ε0 + g − 1),
  ε0 = 1: an 8 × 8 matrix.

Columns per n ∈ {10, 10³, 10⁶, 10⁸}: ε lower / ε upper / seconds and the relative width (upper / lower − 1) of

* ``default``  ``account`` with no method (``blanket``, docs/theory.md#pairs-blanket: for k-RR's released view the
  blanket pair's upper end, for the matrices the smaller of the blanket pair's and the stronger clone pair's; for rr2 ``exact`` for n <= 10⁵
  and, single use, 10⁶ < n <= 10⁹, ``tight`` for 10⁵ < n <= 10⁶ — RR2.default_for);
* ``clones``   ``method="tight"``: the stronger clone pair at the randomiser's ε0 with tight's own lower end (the
  explicit data sets of its pair; rr2's "all others hold 0/1") — the answer before issue 30 for the matrices and
  k-RR's released view, and for rr2 above n = 10⁵;
* ``wang``     Wang et al.'s variation-ratio pair (binary RR only: its parameters (e^ε0, tanh(ε0/2), e^ε0) are the
  general ε0-LDP ones, so the pair is the stronger clone pair; ``Clones(..., method="variation-ratio")``);
* ``exact``    ``method="exact"`` where it runs within its budget ("—" where it refuses, with the reason; the
  enumeration of every data set for k-RR (k ≥ 3) and matrices has no estimate and refuses beyond its own budget of
  2·10⁹ steps, about 20 s).

Below the table, :func:`series`: M at n = 30, 60, 90, the default beside ``exact`` (every data set enumerated).

A cell whose estimate (:func:`~shufflesim.accounting.account.estimate_account`) exceeds ``--cap`` seconds is
skipped ("skipped: estimate …").

    PYTHONPATH=$PWD python bench/bench_issue30.py [--n 10 1000 1000000 100000000] [--rows rr2 krr4 ...]
        [--cap 120] [--output bench/results/issue30.md]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from shufflesim.accounting.account import account, estimate_account
from shufflesim.errors import NotApplicableError, ParameterError, ResourceError
from shufflesim.mechanisms import KRR, RR2, Clones, Relation
from shufflesim.mechanisms.matrix import ShuffledMatrix

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results", "issue30.md")
DELTA = 1e-9
NS = (10, 10**3, 10**6, 10**8)
GAMMA = 0.25
RR2_EPS0 = 1.0
M = ((0.6, 0.3, 0.1), (0.2, 0.5, 0.3), (0.25, 0.25, 0.5))
ROWS = ("rr2", "krr4", "krr10", "krr100", "M", "olh")
METHODS = ("default", "clones", "wang", "exact")


def local_hashing_matrix(d: int = 8, hashes: int = 4, g: int = 2, eps0: float = 1.0) -> np.ndarray:
    """The d × (hashes·g) matrix of a local-hashing randomiser with a fixed hash family (module docstring):
    row x, column j·g + b is P(report (j, b) | x) = (1/hashes)·(p if h_j(x) = b else (1 − p)/(g − 1)),
    p = e^ε0/(e^ε0 + g − 1) (optimised local hashing's bucket randomiser, Wang et al. 2017)."""
    def h(j: int, x: int) -> int:
        return (x >> j) % g if j < hashes - 1 else bin(x).count("1") % g

    p = math.exp(eps0) / (math.exp(eps0) + g - 1)
    R = np.empty((d, hashes * g))
    for x in range(d):
        for j in range(hashes):
            for b in range(g):
                R[x, j * g + b] = (p if h(j, x) == b else (1 - p) / (g - 1)) / hashes
    return R


OLH = tuple(tuple(float(v) for v in row) for row in local_hashing_matrix())


def mechanism(row: str, n: int, method: str):
    """The description a cell accounts (``wang`` is the Clones description at rr2's ε0)."""
    if row == "rr2":
        return Clones(n, RR2_EPS0) if method == "wang" else RR2(n, RR2_EPS0)
    if row.startswith("krr"):
        return KRR(n, int(row[3:]), GAMMA, Relation.SHUFFLED)
    return ShuffledMatrix(n, M if row == "M" else OLH)


def method_arg(row: str, method: str) -> str | None:
    return {"default": None, "clones": "tight", "wang": "variation-ratio", "exact": "exact"}[method]


def cell(row: str, n: int, method: str, cap: float) -> dict:
    """One cell: {'lower', 'upper', 'seconds', 'method'} or {'skip': reason}."""
    if method == "wang" and row != "rr2":
        return {"skip": "n/a"}
    try:
        mech = mechanism(row, n, method)
        meth = method_arg(row, method)
        try:
            est = estimate_account(mech, method=meth).seconds
        except NotApplicableError:
            if method != "exact":
                raise
            est = 0.0  # the enumeration of every data set has no estimate here; it refuses beyond its own budget
        if est > cap:
            return {"skip": f"skipped: estimate {est:.0f} s"}
        t0 = time.perf_counter()
        (r,) = account(mech, delta=[DELTA], method=meth).results
        secs = time.perf_counter() - t0
    except (NotApplicableError, ParameterError, ResourceError) as e:
        return {"skip": "—", "why": refusal(row, n, str(e))}
    if not getattr(r, "applicable", True):
        return {"skip": "—", "why": "not applicable"}
    return {"lower": r.eps_lower, "upper": r.eps_upper, "seconds": secs, "method": r.method}


def refusal(row: str, n: int, message: str) -> str:
    """A refusal's reason, short and never cut mid-number: the enumeration's cost as log10 of its steps (computed
    in log space, so it stays finite where the library's float estimate overflows to inf), else the message's
    first clause in full."""
    from shufflesim.accounting.exact.enumeration import (EXACT_ENUMERATION_BUDGET, enumeration_steps, largest_n,
                                                         log_comb)

    if not message.startswith("exact enumeration of every data set"):
        return message.split(";")[0]
    R = mechanism(row, n, "exact")
    k, m = (R.k, R.k) if row.startswith("krr") else (len(R.matrix), len(R.matrix[0]))
    steps = enumeration_steps(n, k, m, inverse=True)
    if math.isfinite(steps):
        log10 = math.log10(steps)
    else:  # enumeration_steps' own formula beyond 1e12 lattice points, in log space
        log_mh = log_comb(n - 1 + k - 1, k - 1) + log_comb(n + m - 1, m - 1)
        log10 = (log_mh + math.log(3 * k * m + 3 * k * (k - 1) + n / (k + m - 1) * m)) / math.log(10)
    return (f"enumeration of every data set needs about 10^{log10:.1f} steps, budget "
            f"{EXACT_ENUMERATION_BUDGET:.0e}: n <= {largest_n(k, m, inverse=True)}")


def eps0_of(row: str) -> float:
    return mechanism(row, 10, "default").eps0


def width(c: dict) -> float:
    return c["upper"] / c["lower"] - 1 if (c.get("lower") or 0) > 0 else math.inf


def fmt(c: dict) -> str:
    if "skip" in c:
        return c["skip"] + (f" ({c['why']})" if c.get("why") else "")
    lo = "n/a" if c["lower"] is None else f"{c['lower']:.6g}"
    w = width(c)
    return f"[{lo}, {c['upper']:.6g}] {'width n/a' if math.isinf(w) else f'{w:.2%}'} {c['seconds']:.2f} s"


def table(results: dict) -> list[str]:
    out = ["| randomiser | ε0 | n | default (method) | stronger clones (tight) | Wang et al. VR | exact |",
           "|---|---|---|---|---|---|---|"]
    for (row, n), cells in results.items():
        d = cells["default"]
        dflt = fmt(d) + (f" ({d['method']})" if "method" in d else "")
        out.append(f"| {row} | {eps0_of(row):.4g} | {n:.0e} | {dflt} | {fmt(cells['clones'])} | "
                   f"{fmt(cells['wang'])} | {fmt(cells['exact'])} |")
    return out


def reach(results: dict) -> list[str]:
    """The largest n each path answered in this run, and the enumeration's largest n within its budget (ε(δ))."""
    from shufflesim.accounting.exact.enumeration import largest_n

    out = []
    for row in dict.fromkeys(r for r, _ in results):
        got = {m: max((n for (r, n), c in results.items() if r == row and "upper" in c[m]), default=None)
               for m in METHODS}
        text = ", ".join(f"{m} {got[m]:.0e}" for m in METHODS if got[m] is not None)
        if row != "rr2":
            R = mechanism(row, 10, "default")
            k, m = (R.k, R.k) if row.startswith("krr") else (len(R.matrix), len(R.matrix[0]))
            text += f"; exact enumeration of every data set: n <= {largest_n(k, m, inverse=True)} within its budget"
        out.append(f"* {row}: largest n answered in this run: {text}")
    return out


#: the small-n series of the matrix M where ``exact`` enumerates every data set (its budget reaches n = 93)
SERIES_NS = (30, 60, 90)


def series(ns=SERIES_NS) -> list[str]:
    """M at small n: the default (the blanket upper end; the lower end the best "all others hold c" data set through
    the certified size-biased FFT, or the enumeration itself where it costs about a second) beside ``exact``
    (every neighbouring pair of data sets): how far each of the default's ends is from the exact worst case."""
    out = ["| n | default [lower, upper] (method) s | exact [lower, upper] s | default lower / exact − 1 | "
           "default upper / exact − 1 |", "|---|---|---|---|---|"]
    for n in ns:
        d, e = cell("M", n, "default", math.inf), cell("M", n, "exact", math.inf)
        out.append(f"| {n} | [{d['lower']:.6g}, {d['upper']:.6g}] ({d['method']}) {d['seconds']:.2f} s | "
                   f"[{e['lower']:.6g}, {e['upper']:.6g}] {e['seconds']:.2f} s | "
                   f"{d['lower'] / e['upper'] - 1:.1e} | {d['upper'] / e['lower'] - 1:.2%} |")
        print(out[-1], flush=True)
    return out


def run(rows, ns, cap: float, methods=METHODS) -> dict:
    results = {}
    for row in rows:
        for n in ns:
            results[(row, n)] = {m: (cell(row, n, m, cap) if m in methods else {"skip": "not run"}) for m in METHODS}
            print(f"{row} n={n:.0e}: " + " | ".join(f"{m}: {fmt(c)}" for m, c in results[(row, n)].items()),
                  flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS)
    ap.add_argument("--n", type=int, nargs="+", default=list(NS))
    ap.add_argument("--cap", type=float, default=120.0, help="skip a cell whose estimate exceeds this (seconds)")
    ap.add_argument("--output", default=RESULTS, help="markdown file for the table ('-': print only)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    results = run(a.rows, a.n, a.cap)
    small = series() if "M" in a.rows else []
    lines = table(results)
    print("\n".join(lines))
    if a.output != "-":
        head = [f"# Issue 30 side by side (bench/bench_issue30.py, δ = {DELTA:g}, one run, "
                f"{time.perf_counter() - t0:.0f} s in all)", "",
                "Cells: [ε lower, ε upper] relative width (upper/lower − 1) seconds. k-RR: γ = 0.25, released view. "
                "M = [[.6,.3,.1],[.2,.5,.3],[.25,.25,.5]]. olh: d = 8, H = 4 fixed hashes into g = 2 buckets, "
                "ε0 = 1 (8 × 8). '—': the method refuses (reason in brackets).", ""]
        with open(a.output, "w", encoding="utf-8") as f:
            tail = ["", "M where the enumeration runs (δ = 1e-09; exact: every neighbouring pair of data sets; the "
                    "lower column compares with exact's upper end, the upper column with its lower end):", ""]
            f.write("\n".join(head + lines + (tail + small if small else []) + ["", "Largest n per path:", ""]
                              + reach(results)) + "\n")


if __name__ == "__main__":
    main()
