"""Whole-process times and answers of the CLI at two commits, run side by side in the same session (issue 28).

A refactoring must move no certified number and slow no row: this runs each command below in a fresh process
against a checkout of ``--base`` and against this working tree, interleaved (base, head, base, head, ...) so that
both see the same machine load, ``--reps`` times each, and prints

* the median wall seconds and the median CPU seconds (user + system of the child) of each side, and their ratio
  head / base (below 1: faster now), after one warm-up run per side (which compiles and caches the bytecode of
  both, as an installed package has it);
* whether the two sides printed the same JSON answer: ``same`` (equal, the ``seconds`` fields aside), or the
  largest relative difference of any number in it and its path.

    PYTHONPATH=$PWD python bench/bench_before_after.py --base b2b8780 [--reps 3] [--only REGEX] [--out FILE.md]

The base checkout is a detached ``git worktree`` in a temporary folder, removed at the end.  Nothing here
asserts a time: the machine is shared, so only ratios measured in the same run mean anything.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (label, argv after ``python -m shufflesim``): the accounting rows of bench/results/scale_table.md and
#: compose_thousandfold.md, and the questions issue 28 names
COMMANDS = [
    ("clones 1e7", "account clones --n 1e7 --eps0 1 --delta 1e-9"),
    ("clones 1e8", "account clones --n 1e8 --eps0 1 --delta 1e-9"),
    ("clones 1e9", "account clones --n 1e9 --eps0 1 --delta 1e-9"),
    ("clones 1e8 x1000", "account clones --n 1e8 --eps0 1 --delta 1e-9 --compositions 1000"),
    ("rr2 1e8 x1000", "account rr2 --n 1e8 --eps0 1 --delta 1e-9 --compositions 1000"),
    ("krr strong 1e8", "account krr --n 1e8 --k 4 --gamma 0.25 --adversary strong --delta 1e-9"),
    ("krr shuffled 1e7", "account krr --n 1e7 --k 4 --gamma 0.25 --adversary shuffled --delta 1e-9"),
    ("krr weak 1e4", "account krr --n 10000 --k 4 --gamma 0.25 --adversary weak --delta 1e-6"),
    ("clones best 2e9", "account clones --n 2e9 --eps0 2 --delta 1e-6 --method best"),
    ("rr2 exact 1e5", "account rr2 --n 1e5 --eps0 1 --delta 1e-6"),
    ("rr2 default x2", "account rr2 --n 4479 --eps0 1.187 --eps 1.3252 --compositions 2"),
    ("cheu", "account cheu --n 2000 --messages 50 --gamma 0.3 --delta 1e-6"),
    ("krr compare", "account krr --n 1000 --k 4 --eps0 1 --delta 1e-6 --compare"),
    ("ikos", "account ikos --eps0 1 --p 100 --sigma 40 --q 1000000 --delta 1e-9"),
    ("central-gaussian", "account central-gaussian --sigma 2 --delta 1e-9"),
    ("simulate recursive-sum", "simulate recursive-sum --n 20000 --eps 1 --trials 3 --seed 1"),
    ("simulate blanket-sum", "simulate blanket-sum --n 10000 --eps 1 --trials 3 --seed 1"),
    ("simulate krr 1e8", "simulate krr --n 1e8 --k 10 --eps0 1 --data uniform --engine fast --trials 1000 --seed 1"),
]


def _run(tree: str, argv: list[str]) -> tuple[float, float, str, int]:
    # bytecode is cached as in an installed package (a machine that sets PYTHONDONTWRITEBYTECODE would otherwise
    # charge every run the compilation of every module it imports, which grows with the source, not the work)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = tree
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-P", "-m", "shufflesim", *argv, "--json"], cwd=tree, env=env,
                         capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout if out.returncode == 0 else out.stderr.strip().splitlines()[-1:], out.returncode


def _numbers(obj, path=""):
    """(path, number) for every number of a JSON value, timing fields left out."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("seconds", "elapsed", "wall_seconds", "cpu_seconds", "started", "finished", "version",
                     "commit", "git"):
                continue
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, float(obj)


def _compare(a, b) -> str:
    if isinstance(a, list) or isinstance(b, list) or not a or not b:
        return f"failed: {a if isinstance(a, list) else b}"
    try:
        ja, jb = json.loads(a), json.loads(b)
    except json.JSONDecodeError:
        return "same" if a == b else "text differs"
    na, nb = dict(_numbers(ja)), dict(_numbers(jb))
    if na.keys() != nb.keys():
        return f"fields differ: {sorted(set(na) ^ set(nb))[:3]}"
    worst, where = 0.0, ""
    for k in na:
        x, y = na[k], nb[k]
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        rel = abs(x - y) / max(abs(x), abs(y))
        if rel > worst:
            worst, where = rel, f"{k}: {x:.9g} -> {y:.9g}"
    return "same" if worst == 0.0 else f"rel. diff {worst:.2g} at {where}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git commit to compare with (e.g. the commit before a refactor)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=None, help="run only the rows whose label matches this regular expression")
    ap.add_argument("--out", default=None, help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    base = tempfile.mkdtemp(prefix="shufflesim-base-")
    subprocess.run(["git", "worktree", "add", "--detach", base, args.base], cwd=ROOT, check=True,
                   capture_output=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    rows = []
    try:
        for label, cmd in COMMANDS:
            if args.only and not re.search(args.only, label):
                continue
            argv_ = cmd.split()
            t = {"base": [], "head": []}
            outs = {}
            for tree in (base, ROOT):  # warm-up: bytecode compiled and the file cache filled on both sides
                _run(tree, argv_)
            for _ in range(args.reps):
                for side, tree in (("base", base), ("head", ROOT)):
                    wall, cpu, out, rc = _run(tree, argv_)
                    t[side].append((wall, cpu))
                    outs[side] = out
            med = {s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for s, v in t.items()}
            row = (label, cmd, med["base"], med["head"], _compare(outs["base"], outs["head"]))
            rows.append(row)
            print(f"{label:18s} wall {med['base'][0]:7.2f} -> {med['head'][0]:7.2f} s "
                  f"({med['head'][0] / med['base'][0]:.2f}x)  cpu {med['base'][1]:7.2f} -> {med['head'][1]:7.2f} s "
                  f"({med['head'][1] / med['base'][1]:.2f}x)  {row[4]}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", base], cwd=ROOT, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    load = os.getloadavg()
    lines = [f"# Before/after: {args.base} -> {head}{' (+ uncommitted changes)' if dirty else ''}", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; load average at the "
             f"end {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}; medians of {args.reps} interleaved runs per side, "
             "each a fresh process (`python -m shufflesim ... --json`). Ratios are head / base.", "",
             "| row | command | wall base s | wall head s | wall ratio | cpu base s | cpu head s | cpu ratio | answer |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for label, cmd, b, h, same in rows:
        lines.append(f"| {label} | `{cmd}` | {b[0]:.2f} | {h[0]:.2f} | {h[0] / b[0]:.2f}x | {b[1]:.2f} | {h[1]:.2f} | "
                     f"{h[1] / b[1]:.2f}x | {same} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
