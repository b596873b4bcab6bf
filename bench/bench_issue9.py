"""Benchmark (issue 9): eps at delta = 1e-6 of a shuffled eps0-LDP randomiser, shufflesim's methods side by side.

Rows: the issue's table (n = 1e4, eps0 = 4; n = 1e6, eps0 = 1, 4, 9).  Columns: ``tight`` (now the stronger
clone pair of Feldman, McMillan, Talwar 2023), ``tight-koskela`` (seed 001's eq 6.1, the default before),
``feldman-numerical`` and ``best``; each with its certified interval's upper end and wall time (pair
construction included), in one process.  The peers' values quoted in the issue are printed next to them
(their code is not part of shufflesim and is never committed).  ``--wang DIR`` additionally runs Wang et
al.'s ``amplificationUB`` from a local copy of their repository (wangsw/PrivacyAmplification, fetched by
the user) with the general-randomiser parameters and T bisection steps, and prints its time and eps.

Machines here are shared: times are indicative (``--repeat`` takes the best of several runs).

``--corners`` instead times the accountant's slow corners of issue 9 in CPU time (``time.process_time``,
serial: SHUFFLESIM_THREADS=1 unless ``--threads``; imports warmed up first, best of ``--repeat``):
clones n = 1e6, eps0 = 1 and k-RR weak n = 1e4 (k = 4, gamma = 0.25), eps at delta = 1e-6, single use and
16-fold, pair construction included; and the k-RR weak pair at n = 1e5 (what ``recursive-sum --mode tight
--adversary weak`` builds per calibration step).  Next to each: the target, the time measured before the
speed-ups on the development machine (commit 58aede8), and with ``--baseline DIR`` (a checkout of another
commit, e.g. ``git worktree add /tmp/ref 58aede8``) the same corners run by that checkout in a subprocess
and the ratio baseline/current.

    .venv/bin/python bench/bench_issue9.py [--rows 0 1 2 3] [--repeat 1] [--threads N] [--wang DIR] [--T 20]
    .venv/bin/python bench/bench_issue9.py --corners [--repeat 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

ROWS = [(10**4, 4.0), (10**6, 1.0), (10**6, 4.0), (10**6, 9.0)]
#: the issue's table: (shufflesim tight before, feldman-numerical, seed 001 authors' code, Wang et al.)
QUOTED = {
    (10**4, 4.0): ("0.6132", "0.6009", "0.4108 (7 s)", "0.4108 (1.4 s)"),
    (10**6, 1.0): ("0.00718 (3.8 s)", "0.00433", "-", "0.00352 (18 s)"),
    (10**6, 4.0): ("0.0503 (0.4 s)", "0.0493", "0.0343 (610 s)", "0.0343 (7 s)"),
    (10**6, 9.0): ("0.792 (0.06 s)", "0.792", "0.5283 (58 s)", "0.5286 (1.3 s)"),
}
METHODS = ("tight", "tight-koskela", "feldman-numerical", "best")
DELTA = 1e-6


def _run(n: int, eps0: float, method: str, repeat: int):
    from shufflesim.accounting import account
    from shufflesim.mechanisms import Clones

    best_t, rep = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        rep = account(Clones(n, eps0), delta=[DELTA], method=method)
        best_t = min(best_t, time.perf_counter() - t0)
    r = rep.results[0]
    winner = ""
    if method == "best":
        winner = next((nt.split(": ", 1)[1].split(" ")[0] for nt in rep.notes if nt.startswith("best at")), "")
    return getattr(r, "eps_upper", math.nan), getattr(r, "eps_lower", None), best_t, winner


def _wang(path: str, n: int, eps0: float, T: int):
    sys.path.insert(0, path)
    try:
        import unifiedamplification as W  # a local, uncommitted copy of the peer's code
    finally:
        sys.path.pop(0)
    p = math.exp(eps0)
    beta = math.tanh(eps0 / 2)
    t0 = time.process_time()
    e = W.amplificationUB(p, beta, p, p, n, DELTA, T)
    return e, time.process_time() - t0


#: name -> (mechanism kind, flags, compositions or None for the pair alone, target CPU seconds)
CORNERS = {
    "clones n=1e6 eps0=1, single": ("clones", {"n": 10**6, "eps0": 1.0}, 1, 1.0),
    "clones n=1e6 eps0=1, 16-fold": ("clones", {"n": 10**6, "eps0": 1.0}, 16, 2.0),
    "krr weak n=1e4, single": ("krr", {"n": 10**4, "k": 4, "gamma": 0.25, "adversary": "weak"}, 1, 1.0),
    "krr weak n=1e4, 16-fold": ("krr", {"n": 10**4, "k": 4, "gamma": 0.25, "adversary": "weak"}, 16, 2.0),
    "krr weak pair n=1e5 (construction)": ("krr", {"n": 10**5, "k": 4, "gamma": 0.25, "adversary": "weak"}, None,
                                           None),
}
#: CPU seconds (serial, process_time, best of 2) of commit 58aede8 (accounting as at 17303b9), 2 shared cores
BEFORE = {
    "clones n=1e6 eps0=1, single": 0.82,
    "clones n=1e6 eps0=1, 16-fold": 1.39,
    "krr weak n=1e4, single": 2.53,
    "krr weak n=1e4, 16-fold": 2.03,
    "krr weak pair n=1e5 (construction)": 6.3,
}


def corners_worker(repeat: int) -> dict:
    """CPU seconds and eps of each corner in this process (shufflesim as found on sys.path)."""
    from shufflesim.accounting import account
    from shufflesim.mechanisms import kinds

    account(kinds()["krr"].from_flags(n=300, k=4, gamma=0.25, adversary="weak"), delta=[DELTA], compositions=2)
    account(kinds()["clones"].from_flags(n=300, eps0=1.0), delta=[DELTA])
    out = {}
    for name, (kind, flags, nc, _) in CORNERS.items():
        best, eps = math.inf, None
        for _ in range(repeat):
            m = kinds()[kind].from_flags(**flags)
            t0 = time.process_time()
            if nc is None:
                m.pair("tight")
            else:
                eps = account(m, delta=[DELTA], compositions=nc).results[0].eps_upper
            best = min(best, time.process_time() - t0)
        out[name] = (best, eps)
    import shufflesim

    out["_src"] = os.path.dirname(os.path.dirname(os.path.abspath(shufflesim.__file__)))
    return out


def corners(repeat: int, baseline: str | None) -> None:
    import json
    import subprocess

    print(f"issue 9 slow corners: CPU seconds (time.process_time; SHUFFLESIM_THREADS="
          f"{os.environ.get('SHUFFLESIM_THREADS', '1')}), eps at delta = {DELTA:g}, best of {repeat}")
    now = corners_worker(repeat)
    base = None
    if baseline:
        code = (f"import sys, json; sys.path.insert(0, {os.path.abspath(baseline)!r}); "
                f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import bench_issue9 as b; "
                f"print(json.dumps(b.corners_worker({repeat})))")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=os.path.abspath(baseline)))
        base = json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else None
        if base is None:
            print(f"baseline {baseline} failed: {res.stderr.strip().splitlines()[-1:]}")
    print(f"current: {now['_src']}" + (f"; baseline: {base['_src']}" if base is not None else ""))
    head = f"{'corner':<38} {'cpu s':>7} {'target':>7} {'before':>7} {'x':>6}"
    if base is not None:
        head += f" {'baseline':>9} {'x':>6}  eps (baseline)"
    print(head + "  eps")
    for name, (_, _, _, target) in CORNERS.items():
        t, eps = now[name]
        b4 = BEFORE[name]
        line = f"{name:<38} {t:7.2f} {target if target else '-':>7} {b4:7.2f} {b4 / t:6.2f}"
        if base is not None:
            tb, eb = base[name]
            line += f" {tb:9.2f} {tb / t:6.2f}  {eb if eb is not None else '-'}"
        print(line + f"  {eps if eps is not None else '-'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=list(range(len(ROWS))))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None, help="SHUFFLESIM_THREADS for this run")
    ap.add_argument("--wang", default=None, help="directory holding Wang et al.'s unifiedamplification.py")
    ap.add_argument("--T", type=int, default=20, help="bisection steps for Wang et al.'s code (theirs: 20)")
    ap.add_argument("--corners", action="store_true", help="time issue 9's slow corners in CPU time instead")
    ap.add_argument("--baseline", default=None, help="with --corners: a checkout to time the same corners with")
    args = ap.parse_args()
    if args.threads is not None:
        os.environ["SHUFFLESIM_THREADS"] = str(args.threads)
    if args.corners:
        os.environ.setdefault("SHUFFLESIM_THREADS", "1")
        corners(max(1, args.repeat), args.baseline)
        return
    print(f"eps at delta = {DELTA:g} (upper end of the certified interval; seconds = wall time, pair included)")
    head = f"{'n':>8} {'eps0':>5} | " + " | ".join(f"{m:>24}" for m in METHODS)
    print(head)
    print("-" * len(head))
    for i in args.rows:
        n, eps0 = ROWS[i]
        cells = []
        tight_eps = None
        for m in METHODS:
            e, lo, t, winner = _run(n, eps0, m, args.repeat)
            if m == "tight":
                tight_eps = e
            label = f"{e:.6g} ({t:.2f}s)" + (f" {winner}" if winner else "")
            cells.append(f"{label:>24}")
        print(f"{n:>8} {eps0:>5g} | " + " | ".join(cells))
        q = QUOTED[(n, eps0)]
        print(f"{'':>14}   quoted: tight before {q[0]}, feldman-numerical {q[1]}, seed 001 authors' code {q[2]}, "
              f"Wang et al. {q[3]}")
        if args.wang:
            e, t = _wang(args.wang, n, eps0, args.T)
            print(f"{'':>14}   Wang et al. amplificationUB here: {e:.6g} ({t:.2f}s cpu); ratio of eps "
                  f"shufflesim/Wang = {tight_eps / e:.4f}")


if __name__ == "__main__":
    main()
