"""Benchmark (issue 9): eps at delta = 1e-6 of a shuffled eps0-LDP randomiser, side by side with the peers.

Rows: the issue's table (n = 1e4, eps0 = 4; n = 1e6, eps0 = 1, 4, 9).  In one process, interleaved (every
column once per repeat, best of ``--repeat``), each row runs:

* shufflesim ``tight`` (the stronger clone pair of Feldman, McMillan, Talwar 2023), ``best`` (smallest
  certified upper bound of all methods, winner named), ``tight-koskela`` (seed 001's eq 6.1) and
  ``feldman-numerical``: the upper end of the certified interval, mechanism and pair construction included,
  shufflesim's function caches cleared before every run (no run profits from an earlier one);
* ``--wang DIR``: Wang et al.'s ``amplificationUB`` from a local copy of wangsw/PrivacyAmplification;
* ``--koskela DIR``: the stronger-clone PLD of seed 001's authors (DPBayes/numerical-shuffler-experiments),
  rows predicted to take longer than ``--koskela-max`` seconds (default 120) are skipped and say so;
* dp_accounting (unless ``--skip-dp``) on the atoms of the same pair; above ``--dp-max-atoms`` atoms at the
  largest n that fits, shufflesim being timed again at that n.

The peers' code is loaded from the directories given and never committed (adapters: ``bench/issue9_peers.py``,
which also says what each peer's eps means).  Without a directory a peer's column says "not given".
Times are CPU seconds (``time.process_time``, all threads: shufflesim's threads count against it) with wall
seconds next to them; the machine is shared, so the ratios peer / shufflesim from the same process are what
to read, not the absolute times.  A slow peer cell is repeated only while its CPU seconds so far are below
``--peer-budget``.  Each row ends with issue 9's target: shufflesim ``tight`` >= 3x faster (CPU) than the
fastest peer run, with an eps at least as small.

``--corners`` instead times the accountant's slow corners of issue 9 in CPU time (``time.process_time``,
serial: SHUFFLESIM_THREADS=1 unless ``--threads``; imports warmed up first, best of ``--repeat``):
clones n = 1e6, eps0 = 1 and k-RR weak n = 1e4 (k = 4, gamma = 0.25), eps at delta = 1e-6, single use and
16-fold, pair construction included; and the k-RR weak pair at n = 1e5 (what ``recursive-sum --mode tight
--adversary weak`` builds per calibration step).  Next to each: the target, the time measured before the
speed-ups on the development machine (commit 58aede8), and with ``--baseline DIR`` (a checkout of another
commit, e.g. ``git worktree add /tmp/ref 58aede8``) the same corners run by that checkout in a subprocess
and the ratio baseline/current.

    .venv/bin/python bench/bench_issue9.py [--rows 0 1 2 3] [--repeat 3] [--threads N] [--wang DIR] [--T 20]
        [--koskela DIR] [--koskela-max 120] [--skip-dp] [--dp-max-atoms 5000000] [--dp-interval 1e-5]
        [--peer-budget 60]
    .venv/bin/python bench/bench_issue9.py --corners [--repeat 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from issue9_peers import DpAccounting, KoskelaPeer, PeerUnavailable, Timed, WangPeer, timed  # noqa: E402

ROWS = [(10**4, 4.0), (10**6, 1.0), (10**6, 4.0), (10**6, 9.0)]
#: the issue's table: (shufflesim tight before, feldman-numerical, seed 001 authors' code, Wang et al.)
QUOTED = {
    (10**4, 4.0): ("0.6132", "0.6009", "0.4108 (7 s)", "0.4108 (1.4 s)"),
    (10**6, 1.0): ("0.00718 (3.8 s)", "0.00433", "-", "0.00352 (18 s)"),
    (10**6, 4.0): ("0.0503 (0.4 s)", "0.0493", "0.0343 (610 s)", "0.0343 (7 s)"),
    (10**6, 9.0): ("0.792 (0.06 s)", "0.792", "0.5283 (58 s)", "0.5286 (1.3 s)"),
}
METHODS = ("tight", "best", "tight-koskela", "feldman-numerical")
DELTA = 1e-6
#: issue 9: shufflesim at least this many times faster than the fastest peer, with an eps at least as small
SPEED_TARGET = 3.0


def _clear_caches() -> None:
    """Clear every functools cache of the loaded shufflesim modules (a repeat must not reuse an earlier run)."""
    for name, mod in list(sys.modules.items()):
        if name == "shufflesim" or name.startswith("shufflesim."):
            for v in list(vars(mod).values()):
                if callable(getattr(v, "cache_clear", None)) and hasattr(v, "cache_info"):
                    v.cache_clear()


def _account(n: int, eps0: float, method: str):
    """(eps upper, eps lower, winner of best) of ``account(Clones(n, eps0), delta=[DELTA], method=method)``."""
    from shufflesim.accounting import account
    from shufflesim.mechanisms import Clones

    _clear_caches()
    rep = account(Clones(n, eps0), delta=[DELTA], method=method)
    r = rep.results[0]
    winner = ""
    if method == "best":
        winner = next((nt.split(": ", 1)[1].split(" ")[0] for nt in rep.notes if nt.startswith("best at")), "")
    return getattr(r, "eps_upper", math.nan), getattr(r, "eps_lower", None), winner


@dataclass
class Cell:
    """One column of a row: the best (CPU) of its repeats, or a note saying why it did not run."""

    label: str
    eps: float | None = None
    eps_lower: float | None = None
    cpu: float = math.inf
    wall: float = math.inf
    reps: int = 0
    spent: float = 0.0
    note: str = ""
    extra: str = ""

    def record(self, t: Timed) -> None:
        v = t.value
        if isinstance(v, tuple):
            self.eps, self.eps_lower, self.extra = v
        else:
            self.eps = float(v)
        self.reps += 1
        self.spent += t.cpu
        if t.cpu < self.cpu:
            self.cpu, self.wall = t.cpu, t.wall

    @property
    def ran(self) -> bool:
        return self.reps > 0


def side_by_side_row(n: int, eps0: float, repeat: int, *, methods=METHODS, wang: WangPeer | None = None,
                     koskela: KoskelaPeer | None = None, dp: DpAccounting | None = None,
                     peer_notes: dict | None = None, peer_budget: float = 60.0,
                     koskela_max: float = 120.0) -> dict:
    """Every column of one row, interleaved, best of ``repeat`` (peers: while under ``peer_budget`` CPU s)."""
    from shufflesim.mechanisms import Clones

    notes = dict(peer_notes or {})
    cells: dict[str, Cell] = {}
    tasks = []  # (cell, function, budgeted)
    for m in methods:
        cells[m] = Cell(f"shufflesim {m}")
        tasks.append((cells[m], (lambda m=m: _account(n, eps0, m)), False))
    cells["wang"] = Cell(wang.label if wang else "Wang et al.", note="" if wang else notes.get("wang", "not given"))
    if wang:
        tasks.append((cells["wang"], lambda: wang.run(n, eps0, DELTA), True))
    cells["koskela"] = Cell(koskela.label if koskela else "Koskela et al.",
                            note="" if koskela else notes.get("koskela", "not given"))
    if koskela:
        pred = koskela.predict(n, eps0)
        if pred > koskela_max:
            cells["koskela"].note = (f"skipped: predicted {pred:.0f} s cpu > {koskela_max:g} s "
                                     f"({koskela.atoms(n, eps0):.3g} atoms x {koskela.rate() * 1e6:.2f} us/atom)")
        else:
            tasks.append((cells["koskela"], lambda: koskela.run(n, eps0, DELTA), True))
    case = dp.prepare(n, eps0) if dp else None
    if case is not None and case.n != n:  # shufflesim again at dp_accounting's n (listed before dp's cell)
        cells["tight@dp"] = Cell(f"shufflesim tight at n = {case.n:,}")
        tasks.append((cells["tight@dp"], lambda: _account(case.n, eps0, "tight"), False))
    cells["dp"] = Cell(dp.label if dp else "dp_accounting", note="" if dp else notes.get("dp", "not given"))
    if case is not None:
        if case.n != n:
            cells["dp"].note = (f"cannot take {case.atoms_full:,} atoms in reasonable time/memory "
                                f"(> {dp.max_atoms:,}): run at n = {case.n:,} ({case.atoms:,} atoms)")
        tasks.append((cells["dp"], lambda: dp.run(case, DELTA), True))
    for _ in range(max(1, repeat)):
        for cell, fn, budgeted in tasks:
            if budgeted and cell.ran and cell.spent >= peer_budget:
                continue
            cell.record(timed(fn))
    atoms = Clones(n, eps0).pair("tight").n_atoms
    return {"n": n, "eps0": eps0, "atoms": atoms, "cells": cells, "dp_n": case.n if case else None,
            "repeat": max(1, repeat)}


def verdict(row: dict) -> dict:
    """Issue 9's target on one row: shufflesim tight vs the fastest peer run (Wang et al., Koskela et al.)."""
    c = row["cells"]
    s = c["tight"]
    peers = [c[k] for k in ("wang", "koskela") if c[k].ran]
    if not peers:
        return {"assessed": False, "text": "no peer run: target not assessed"}
    fast = min(peers, key=lambda p: p.cpu)
    x = fast.cpu / s.cpu
    smaller = s.eps <= fast.eps
    met = x >= SPEED_TARGET and smaller
    text = (f"fastest peer run: {fast.label} {fast.cpu:.3g} s cpu = {x:.3g}x shufflesim tight's {s.cpu:.3g} s; "
            f"shufflesim eps {'<=' if smaller else '>'} peer eps (rel. diff {s.eps / fast.eps - 1:+.2e}) "
            f"=> target (>= {SPEED_TARGET:g}x, eps at least as small) {'MET' if met else 'NOT MET'}")
    return {"assessed": True, "met": met, "speedup": x, "smaller": smaller, "peer": fast.label, "text": text}


def _fmt_eps(e) -> str:
    return "-" if e is None or (isinstance(e, float) and math.isnan(e)) else f"{e:.9g}"


def format_row(row: dict) -> list[str]:
    n, eps0, c = row["n"], row["eps0"], row["cells"]
    s = c["tight"]
    out = [f"n = {n:,}, eps0 = {eps0:g}  (stronger clone pair: {row['atoms']:,} atoms; best of {row['repeat']})"]
    out.append(f"  {'column':<52} {'eps':>15} {'cpu s':>8} {'wall s':>8} {'reps':>4} {'cpu x/ref':>10} "
               f"{'eps x/ref':>11}  ref")
    for key, cell in c.items():
        if not cell.ran:
            out.append(f"  {cell.label:<52} {cell.note}")
            continue
        ref_key = "tight@dp" if key == "dp" and "tight@dp" in c else "tight"
        ref = c[ref_key]
        label = cell.label + (f" [{cell.extra}]" if cell.extra else "")
        line = (f"  {label:<52} {_fmt_eps(cell.eps):>15} {cell.cpu:8.3f} {cell.wall:8.3f} {cell.reps:>4} "
                f"{cell.cpu / ref.cpu:10.3g} {cell.eps / ref.eps:11.7f}  {ref.label.replace('shufflesim ', '')}")
        if key in ("wang", "koskela"):
            line += f"; shufflesim eps {'<=' if s.eps <= cell.eps else '>'} peer's"
        out.append(line)
        if key == "dp" and cell.note:
            out.append(f"  {'':<52} ({cell.note})")
    q = QUOTED.get((n, eps0))
    if q:
        out.append(f"  quoted in issue 9: tight before {q[0]}, feldman-numerical {q[1]}, seed 001 authors' code "
                   f"{q[2]}, Wang et al. {q[3]}")
    out.append("  => " + verdict(row)["text"])
    return out


def format_summary(rows: list[dict]) -> list[str]:
    """One line per row: eps and CPU seconds of tight, best and each peer, ratios peer/tight, target."""
    head = (f"{'n':>9} {'eps0':>4} | {'tight eps (cpu s)':>24} | {'best eps (cpu s)':>24} | "
            f"{'Wang eps (cpu s, x)':>30} | {'Koskela eps (cpu s, x)':>30} | "
            f"{'dp_accounting eps (cpu s, x)':>34} | target")
    out = ["summary (x = column's cpu / shufflesim tight's cpu at the same n; dp at a smaller n is marked *)", head,
           "-" * len(head)]
    for row in rows:
        c = row["cells"]
        s = c["tight"]

        def cell(key, width):
            x = c[key]
            if not x.ran:
                return f"{x.note.split(':')[0][:width]:>{width}}"
            ref = c["tight@dp"] if key == "dp" and "tight@dp" in c else s
            star = "*" if ref is not s else ""
            return f"{_fmt_eps(x.eps)} ({x.cpu:.3g}, {x.cpu / ref.cpu:.3g}x{star})".rjust(width)

        v = verdict(row)
        tgt = ("met" if v["met"] else "NOT met") if v["assessed"] else "-"
        b = c.get("best", s)
        out.append(f"{row['n']:>9} {row['eps0']:>4g} | {_fmt_eps(s.eps) + f' ({s.cpu:.3g})':>24} | "
                   f"{_fmt_eps(b.eps) + f' ({b.cpu:.3g})':>24} | {cell('wang', 30)} | {cell('koskela', 30)} | "
                   f"{cell('dp', 34)} | {tgt}")
    return out


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


def _load_peers(args) -> tuple[dict, dict]:
    """The peers and dp_accounting asked for on the command line, and notes for those not loaded."""
    peers: dict = {"wang": None, "koskela": None, "dp": None}
    notes: dict = {}
    if args.wang:
        try:
            peers["wang"] = WangPeer(args.wang, args.T)
        except (PeerUnavailable, ImportError) as e:
            notes["wang"] = f"not loaded: {e}"
    if args.koskela:
        try:
            peers["koskela"] = KoskelaPeer(args.koskela, nx=args.koskela_nx, L=args.koskela_L)
        except (PeerUnavailable, ImportError, SyntaxError) as e:
            notes["koskela"] = f"not loaded: {e}"
    if args.skip_dp:
        notes["dp"] = "not run (--skip-dp)"
    else:
        try:
            peers["dp"] = DpAccounting(args.dp_interval, args.dp_max_atoms)
        except ImportError:
            notes["dp"] = "not installed"
    return peers, notes


def side_by_side(args) -> list[dict]:
    from shufflesim.accounting import account
    from shufflesim.mechanisms import Clones

    peers, notes = _load_peers(args)
    account(Clones(300, 1.0), delta=[DELTA], method="best")  # imports warmed up
    threads = os.environ.get("SHUFFLESIM_THREADS", "default")
    print(f"issue 9 side by side: eps at delta = {DELTA:g} of any shuffled eps0-LDP randomiser; "
          f"SHUFFLESIM_THREADS={threads}; repeat {args.repeat} (peers while under {args.peer_budget:g} cpu s)")
    print("shufflesim: upper end of the certified interval.  Wang et al.: upper end of its bisection bracket "
          f"(width eps0/2^T).  Koskela et al.: eps where its grid delta <= {DELTA:g} (not certified: dropped "
          "tails not counted).  dp_accounting: NOT certified (its pessimistic discretisation covers only the "
          "atoms it is given), same atoms as shufflesim tight; building its input dictionaries is not timed.")
    if peers["koskela"] is not None:
        k = peers["koskela"]
        fixed, rate = k.calibrate()
        print(f"Koskela et al.: calibration runs {k.CALIBRATION} -> {fixed:.2f} s + {rate * 1e6:.2f} us per atom "
              f"(cpu); rows predicted above {args.koskela_max:g} s are skipped")
    rows = []
    for i in args.rows:
        n, eps0 = ROWS[i]
        row = side_by_side_row(n, eps0, args.repeat, wang=peers["wang"], koskela=peers["koskela"],
                               dp=peers["dp"], peer_notes=notes, peer_budget=args.peer_budget,
                               koskela_max=args.koskela_max)
        print()
        print("\n".join(format_row(row)), flush=True)
        rows.append(row)
    print()
    print("\n".join(format_summary(rows)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=list(range(len(ROWS))))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="SHUFFLESIM_THREADS for this run")
    ap.add_argument("--wang", default=None, help="directory holding Wang et al.'s unifiedamplification.py")
    ap.add_argument("--T", type=int, default=20, help="bisection steps for Wang et al.'s code")
    ap.add_argument("--koskela", default=None, help="directory of a copy of numerical-shuffler-experiments")
    ap.add_argument("--koskela-max", type=float, default=120.0, help="skip Koskela rows predicted above this (s)")
    ap.add_argument("--koskela-nx", type=int, default=None, help="their grid size (default: their script's)")
    ap.add_argument("--koskela-L", type=float, default=None, help="their grid half-width (default: their script's)")
    ap.add_argument("--skip-dp", action="store_true", help="do not run dp_accounting")
    ap.add_argument("--dp-max-atoms", type=int, default=5_000_000)
    ap.add_argument("--dp-interval", type=float, default=1e-5, help="dp_accounting value_discretization_interval")
    ap.add_argument("--peer-budget", type=float, default=60.0, help="repeat a peer cell while its cpu s < this")
    ap.add_argument("--corners", action="store_true", help="time issue 9's slow corners in CPU time instead")
    ap.add_argument("--baseline", default=None, help="with --corners: a checkout to time the same corners with")
    args = ap.parse_args()
    if args.threads is not None:
        os.environ["SHUFFLESIM_THREADS"] = str(args.threads)
    if args.corners:
        os.environ.setdefault("SHUFFLESIM_THREADS", "1")
        corners(max(1, args.repeat), args.baseline)
        return
    bad = [i for i in args.rows if not 0 <= i < len(ROWS)]
    if bad:
        ap.error(f"--rows takes indices 0..{len(ROWS) - 1}; got {bad}")
    side_by_side(args)


if __name__ == "__main__":
    main()
