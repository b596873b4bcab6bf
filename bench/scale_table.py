"""Issue 21 item 4: the side-by-side scale table, n = 10^6 .. 10^9, every cell in its own subprocess.

    PYTHONPATH=$PWD python bench/bench_scale.py table [--wang-dir DIR] [--write] [--ns 1e6,1e7,1e8,1e9]
    PYTHONPATH=$PWD python bench/bench_scale.py wang-check [--wang-dir DIR] [--write]

``wang-check`` compares Wang et al.'s upper bound with exact values by enumeration at small n (shufflesim's
brute-force oracles) and their FFT composition with shufflesim's 1000-fold interval at n = 1e4
(bench/results/wang_small_n.md).

Engines (columns), each answering the same question in a fresh process (wall seconds of the whole process,
peak = the child's VmHWM, a timeout each):

* ``shufflesim``    -- the CLI itself, ``python -m shufflesim account ... --json``: the command the issue times;
* ``current``       -- the exact row engine (``TightAccountant`` on the unreduced rows of the same pair), the
  engine before the bucketed rows, under an address-space cap (``--mem-cap-gb``) so that it fails with a word;
* ``dp_accounting`` -- Google's ``from_two_probability_mass_functions`` on the pair's expanded atoms, only
  where they number <= ``--dp-max-atoms`` (it loops over outcomes in Python); beyond, "not run" with the count;
* ``Wang et al.``   -- ``amplificationUB`` of Wang et al.'s public code (github.com/wangsw/PrivacyAmplification,
  ``unifiedamplification.py``; VLDB 2024), run from wherever it was checked out: ``--wang-dir`` or the
  environment variable ``SHUFFLESIM_WANG_DIR`` (nothing of it is in this repository); "not available" when
  absent.  Its parameters are its README's: binary randomised response / general eps0-LDP randomisers
  p = q = e^eps0, beta = (e^eps0 - 1)/(e^eps0 + 1) (the stronger clone reduction: alpha = r = 1/(e^eps0 + 1));
  k-ary RR beta = (e^eps0 - 1)/(e^eps0 + k - 1).  ``--wang-T`` bisection steps on [0, eps0] (default 20,
  the setting that reproduces the issue's quoted 0.0016956 at n = 1e7); its answer is the bisection's upper
  end, so it carries up to eps0 / 2^T of bisection slack above its own bound.

Questions (row groups), delta = 1e-9 unless said, as in issue 21's table:

* ``clones``          -- ``account clones --n N --eps0 1`` (single use);
* ``clones-x1000``    -- the same, ``--compositions 1000``.  Wang et al.'s ``amplificationUB`` does not compose;
  their composition script (``sequentialComposition/``) builds the pair's PLD one atom at a time in a Python
  loop, and the table says how many atoms that would be instead of running it;
* ``krr-strong``      -- ``account krr --n N --k 4 --gamma 0.25 --adversary strong``; Wang et al.'s k-RR bound
  is for the shuffled reports alone (a weaker adversary than the strong one, who also sees the blanket
  coins), so there it is context, not the same question;
* ``krr-shuffled``    -- ``--adversary shuffled``: the view Wang et al.'s k-RR bound is about (same question);
* ``clones-best``     -- ``account clones --n 2e9 --eps0 2 --delta 1e-6 --method best`` (one n).

Checks printed under the table, for the rows where both answer the same question: shufflesim's upper end
above Wang et al.'s upper bound (issue 21: "eps never above Wang et al.'s at the same n"), and Wang et al.'s
upper bound below shufflesim's certified lower end (then one of the two is wrong).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results", "scale_table.md")
WANG_ENV = "SHUFFLESIM_WANG_DIR"
WANG_FILE = "unifiedamplification.py"

# --------------------------------------------------------------------------------------------------
# the questions
# --------------------------------------------------------------------------------------------------

#: group -> (shufflesim CLI arguments without --n, pair kind, eps0, k, gamma, delta, compositions, same question
#: for Wang et al.?)
QUESTIONS = {
    "clones": (["clones", "--eps0", "1"], "clones", 1.0, None, None, 1e-9, 1, True),
    "clones-x1000": (["clones", "--eps0", "1", "--compositions", "1000"], "clones", 1.0, None, None, 1e-9, 1000,
                     True),
    "krr-strong": (["krr", "--k", "4", "--gamma", "0.25", "--adversary", "strong"], "strong", None, 4, 0.25, 1e-9,
                   1, False),
    "krr-shuffled": (["krr", "--k", "4", "--gamma", "0.25", "--adversary", "shuffled"], "shuffled", None, 4, 0.25,
                     1e-9, 1, True),
    "clones-best": (["clones", "--eps0", "2", "--method", "best"], "clones", 2.0, None, None, 1e-6, 1, True),
}


#: What ``wang-check`` found (bench/results/wang_small_n.md): with the README's k-RR parameters,
#: amplificationUB is below the exact eps of shuffled k-RR (k = 4, gamma = 0.25) at n = 2..6.
KRR_CAVEAT = "Wang et al.'s README k-RR parameters are not an upper bound at small n (wang-check)"


def question_eps0(group: str) -> float:
    _, _, eps0, k, gamma, *_ = QUESTIONS[group]
    return eps0 if eps0 is not None else math.log1p(k * (1 - gamma) / gamma)


def cli_args(group: str, n: int) -> list[str]:
    args, *_, delta, _, _ = QUESTIONS[group]
    return ["account", *args, "--n", f"{n:.0e}" if n >= 10**6 else str(n), "--delta", f"{delta:g}", "--json"]


def wang_params(group: str) -> tuple[float, float, float]:
    """(p, beta, q) of Wang et al.'s README for the question's randomiser (q0 = q1 = q)."""
    _, kind, _, k, _, *_ = QUESTIONS[group]
    p = math.exp(question_eps0(group))
    beta = (p - 1) / (p + 1) if kind == "clones" else (p - 1) / (p + k - 1)
    return p, beta, p


def wang_dir(flag: str | None) -> str | None:
    d = flag or os.environ.get(WANG_ENV) or None
    return d if d and os.path.isfile(os.path.join(d, WANG_FILE)) else None


# --------------------------------------------------------------------------------------------------
# one cell = one subprocess
# --------------------------------------------------------------------------------------------------

CURRENT_CHILD = r"""
import json, sys, resource
cap = float(sys.argv[1])
if cap > 0:
    resource.setrlimit(resource.RLIMIT_AS, (int(cap * 2**30), resource.RLIM_INFINITY))
kind, n, eps0, k, gamma, delta, comp, engine, dp_max = sys.argv[2:11]
n, eps0, delta, comp, dp_max = int(float(n)), float(eps0), float(delta), int(comp), float(dp_max)
tb = max(min(1e-15, 1e-7 * delta / comp), 1e-300)  # the truncation account() asks for (accounting/account.py)
out = {}
try:
    if kind == "clones":
        from shufflesim.accounting.pairs.variation import stronger_clones_pair
        rows = stronger_clones_pair(n, eps0, as_rows=True, tail_bound=tb)
    else:
        from shufflesim.accounting.pairs.krr import krr_pair
        rows = krr_pair(n, int(k), float(gamma), kind, as_rows=True, tail_bound=tb)
    out["atoms"] = int(rows.n_atoms)
    if engine == "current":
        from shufflesim.accounting.engines.tight import TightAccountant
        r = TightAccountant(rows, compositions=comp).epsilon(delta)[0]
        out.update(lo=r.eps_lower, up=r.eps_upper)
    elif rows.n_atoms > dp_max:
        out.update(skip=f"{rows.n_atoms:.3g} atoms > --dp-max-atoms (it loops over outcomes in Python)")
    else:
        import numpy as np
        from dp_accounting.pld import privacy_loss_distribution as pldm
        lp, lq = rows.expand()
        # dp_accounting takes LOG masses: lower = Q, upper = P (privacy loss log P/Q, delta = sum (P - e^eps Q)+)
        P = {i: float(v) for i, v in enumerate(lp)}
        Q = {i: float(v) for i, v in enumerate(lq)}
        pld = pldm.from_two_probability_mass_functions(Q, P, symmetric=False)
        if comp > 1:
            pld = pld.self_compose(comp)
        out.update(up=float(pld.get_epsilon_for_delta(delta)), lo=None,
                   note="dp_accounting's pessimistic estimate (one direction, no lower end)")
except MemoryError:
    out = {"fail": f"MemoryError under the {cap:g} GiB address-space cap"}
print(json.dumps(out))
"""

WANG_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
p, beta, q, n, delta, T = map(float, sys.argv[2:8])
from unifiedamplification import amplificationUB
t0 = time.perf_counter()
up = float(amplificationUB(p, beta, q, q, int(n), delta, int(T)))
print(json.dumps({"up": up, "lo": None, "inner_seconds": time.perf_counter() - t0}))
"""


#: Runs a Python cell (``-m module args`` or ``-c code args``) and, at exit, writes the process's own VmHWM to
#: the file named by BENCH_HWM_FILE.  (The child's ru_maxrss is no measure: Linux keeps, across exec, the high
#: water mark of the forked copy of the parent -- this bench's ~160 MiB -- so every cell would read >= that.)
WRAP = r"""
import atexit, os, runpy, sys
def _hwm(path=os.environ["BENCH_HWM_FILE"]):
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(path, "w").write(line.split()[1])
atexit.register(_hwm)
if sys.argv[1] == "-m":
    sys.argv = [sys.argv[2]] + sys.argv[3:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    code = sys.argv[2]
    sys.argv = ["-c"] + sys.argv[3:]
    exec(compile(code, "<cell>", "exec"), {"__name__": "__main__"})
"""


def _polled_hwm(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def run_cell(cmd: list[str], timeout: float, env: dict | None = None) -> dict:
    """Run the Python cell ``cmd`` = ``[python, "-m", module, ...]`` or ``[python, "-c", code, ...]``.

    Its stdout is one JSON value (the last line, or the whole output; a non-object is put under "value"), to
    which wall seconds and the peak resident set (bytes) are added.  Peak = the child's VmHWM, written by
    the child at exit (:data:`WRAP`), or, when it cannot (killed), the last value polled from /proc every
    20 ms.  A timeout kills the child's
    process group and answers ``{"fail": "timeout ..."}``; a non-zero exit (a refusal, the kernel's kill)
    answers ``{"fail": "exit ...: <last stderr line>"}``.
    """
    env = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="bench-cell-") as tmp:
        hwm_file = env["BENCH_HWM_FILE"] = os.path.join(tmp, "hwm")
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen([cmd[0], "-c", WRAP, *cmd[1:]], stdout=out, stderr=err, env=env,
                                    start_new_session=True)
            polled, timed_out = 0, False
            while proc.poll() is None:
                polled = max(polled, _polled_hwm(proc.pid))
                if time.perf_counter() - t0 > timeout:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    timed_out = True
                    break
                time.sleep(0.02)
            seconds = time.perf_counter() - t0
        try:
            with open(hwm_file) as f:
                peak = int(f.read()) * 1024
        except (OSError, ValueError):
            peak = polled
        with open(out_path) as f:
            stdout = f.read()
        with open(err_path) as f:
            stderr = f.read()
    if timed_out:
        return {"fail": f"timeout {timeout:g} s", "seconds": seconds, "peak": peak}
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or [f"signal {-proc.returncode}" if proc.returncode < 0 else "?"])[-1]
        return {"fail": f"exit {proc.returncode}: {last[:100]}", "seconds": seconds, "peak": peak}
    text = stdout.strip()
    try:
        d = json.loads(text)  # the CLI's --json object spans several lines
    except json.JSONDecodeError:
        d = json.loads(text.splitlines()[-1])
    if not isinstance(d, dict):
        d = {"value": d}
    d.update(seconds=seconds, peak=peak)
    return d


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=ROOT, SHUFFLESIM_PROGRESS="0")


def shufflesim_cell(group: str, n: int, timeout: float) -> dict:
    d = run_cell([sys.executable, "-m", "shufflesim", *cli_args(group, n)], timeout, _env())
    if "results" in d:
        r = d["results"][0]
        d = {"lo": r.get("eps_lower"), "up": r.get("eps_upper"), "seconds": d["seconds"], "peak": d["peak"],
             "notes": d.get("notes", [])}
    return d


def pair_cell(group: str, n: int, engine: str, a) -> dict:
    _, kind, _, k, gamma, delta, comp, _ = QUESTIONS[group]
    if group == "clones-best":
        return {"skip": "'best' is the CLI's choice among methods; the row engine is compared on 'clones'"}
    if comp > 1 and engine == "dp_accounting" and n > 10**6:
        return {"skip": "composed: the single-use dp_accounting cell already does not run"}
    if comp > 1 and engine == "current" and n > a.current_max_n_composed:
        return {"skip": f"composed above n = {a.current_max_n_composed:.0e} (--current-max-n-composed)"}
    cap = a.mem_cap_gb if engine == "current" else 0.0
    cmd = [sys.executable, "-c", CURRENT_CHILD, str(cap), kind, str(n), str(question_eps0(group)), str(k),
           str(gamma), repr(delta), str(comp), engine, str(a.dp_max_atoms)]
    return run_cell(cmd, a.timeout, _env())


def wang_cell(group: str, n: int, a) -> dict:
    d = wang_dir(a.wang_dir)
    if d is None:
        return {"skip": f"not available (give --wang-dir or {WANG_ENV}: a checkout of wangsw/PrivacyAmplification)"}
    _, _, eps0, _, _, delta, comp, _ = QUESTIONS[group]
    if comp > 1:
        return {"skip": wang_composition_note(group, n)}
    p, beta, q = wang_params(group)
    key = (d, p, beta, q, n, delta, a.wang_T)
    if key not in _WANG_CACHE:  # krr-strong and krr-shuffled ask Wang et al. the same thing: run it once
        cmd = [sys.executable, "-c", WANG_CHILD, d, repr(p), repr(beta), repr(q), str(n), repr(delta), str(a.wang_T)]
        _WANG_CACHE[key] = run_cell(cmd, a.wang_timeout, dict(os.environ))
    return dict(_WANG_CACHE[key])


_WANG_CACHE: dict = {}


def wang_composition_atoms(group: str, n: int) -> float:
    """Atoms Wang et al.'s composition script visits one by one (its get_omega's i and j ranges, tol_ = 60)."""
    p, beta, q = wang_params(group)
    alpha = beta / (p - 1)
    r = 2 * alpha * p / q
    width_i = 2 * math.sqrt(60 / (2 * (n - 1))) * (n - 1)
    i = r * (n - 1)
    width_j = 2 * math.sqrt(60 / (2 * (i + 1))) * i
    return width_i * width_j


def wang_composition_note(group: str, n: int) -> str:
    return (f"not run: amplificationUB does not compose; their FFT composition script enumerates "
            f"~{wang_composition_atoms(group, n):.2g} atoms in a Python loop at this n")


# --------------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------------

ENGINES = ("shufflesim", "current", "dp_accounting", "Wang et al.")


def measure(group: str, n: int, a) -> dict:
    cells = {"shufflesim": shufflesim_cell(group, n, a.timeout)}
    for eng in ("current", "dp_accounting"):
        cells[eng] = pair_cell(group, n, eng, a)
    cells["Wang et al."] = wang_cell(group, n, a)
    return cells


def _g(x) -> str:
    return "" if x is None else f"{x:.6g}"


def _ratio(x, y, digits: int = 3) -> str:
    if x is None or y is None or y == 0:
        return ""
    return f"{x / y:.{digits}g}x"


def table_lines(rows: list[tuple[str, int, dict]]) -> list[str]:
    """Markdown: one line per (question, n, engine); ratios are engine / shufflesim."""
    out = ["| question | n | engine | seconds | peak MiB | eps lower | eps upper | time ratio | peak ratio | "
           "eps-upper ratio | status |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for group, n, cells in rows:
        base = cells["shufflesim"]
        ok = lambda d: "fail" not in d and "skip" not in d  # noqa: E731
        for eng in ENGINES:
            d = cells[eng]
            sec = d.get("seconds")
            peak = d.get("peak")
            status = d.get("fail") or d.get("skip") or d.get("note") or "ok"
            if eng == "Wang et al." and ok(d) and not QUESTIONS[group][7]:
                status = "shuffled reports only: a weaker adversary than the question's"
            if eng == "Wang et al." and ok(d) and QUESTIONS[group][1] != "clones":
                status += "; " + KRR_CAVEAT
            tr = pr = er = ""
            if eng != "shufflesim" and ok(d) and ok(base):
                tr, pr, er = _ratio(sec, base.get("seconds")), _ratio(peak, base.get("peak")), \
                    _ratio(d.get("up"), base.get("up"), 5)
            out.append(f"| {group} | {n:.0e} | {eng} | {'' if sec is None or 'skip' in d else f'{sec:.2f}'} | "
                       f"{'' if peak is None or 'skip' in d else f'{peak / 2**20:.0f}'} | "
                       f"{_g(d.get('lo')) if ok(d) else ''} | {_g(d.get('up')) if ok(d) else ''} | {tr} | {pr} | "
                       f"{er} | {status} |")
    return out


def checks(rows: list[tuple[str, int, dict]]) -> list[str]:
    """Issue 21's 'eps never above Wang et al.'s' and the consistency of Wang's upper bound with our lower end."""
    out, compared = [], 0
    for group, n, cells in rows:
        s, w = cells["shufflesim"], cells["Wang et al."]
        if "up" not in s or "up" not in w or "fail" in s or "fail" in w:
            continue
        compared += 1
        same = QUESTIONS[group][7]
        caveat = f" ({KRR_CAVEAT})" if QUESTIONS[group][1] != "clones" else ""
        if same and s["up"] > w["up"]:
            out.append(f"- {group} n={n:.0e}: shufflesim's upper end {s['up']:.6g} is ABOVE Wang et al.'s upper "
                       f"bound {w['up']:.6g} (ratio {s['up'] / w['up']:.4g}){caveat}")
        if s.get("lo") is not None and w["up"] < s["lo"]:
            what = "CONTRADICTION (one of the two is wrong)" if same else \
                "expected: Wang et al. bound the shuffled reports alone, a weaker adversary"
            out.append(f"- {group} n={n:.0e}: Wang et al.'s upper bound {w['up']:.6g} is below shufflesim's "
                       f"certified lower end {s['lo']:.6g}: {what}{caveat}")
    if not compared:
        return ["- no row has both a shufflesim and a Wang et al. answer"]
    return out or ["- none: on every row with both answers, shufflesim's upper end <= Wang et al.'s upper bound, "
                   "and Wang et al.'s upper bound >= shufflesim's lower end"]


def header(a) -> list[str]:
    d = wang_dir(a.wang_dir)
    wang = "not available"
    if d:
        with open(os.path.join(d, WANG_FILE), "rb") as f:
            wang = f"{d} ({WANG_FILE} sha256 {hashlib.sha256(f.read()).hexdigest()[:12]}), T = {a.wang_T}"
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    return [f"# Issue 21: scale table ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
            f"shufflesim commit {commit}; {os.cpu_count()} cores, load average at start {load}; "
            f"Python {platform.python_version()}; Wang et al.: {wang}.", "",
            "Every cell is a fresh process (wall seconds including start-up; peak = its maximum resident set). "
            f"Timeouts: {a.timeout:g} s ({a.wang_timeout:g} s for Wang et al.); the current engine is capped at "
            f"{a.mem_cap_gb:g} GiB of address space. Ratios are the engine's over shufflesim's.", ""]


def _load() -> str:
    return ", ".join(f"{v:.1f}" for v in os.getloadavg())


def _commit_of(part: dict) -> str:
    """"commit X, " from a run's header line (runs merged by ``--render`` may come from different commits)."""
    for line in part["header"]:
        if line.startswith("shufflesim commit "):
            return line.split(";")[0].removeprefix("shufflesim ") + ", "
    return ""


def render(parts: list[dict]) -> list[str]:
    """The markdown of one or more runs' JSON (``--render``): the first run's header, every run's rows."""
    rows = [(r["question"], r["n"], r["cells"]) for part in parts for r in part["rows"]]
    runs = [f"- run {i + 1}: {_commit_of(part)}{part['started']} to {part.get('ended', '(unfinished)')}, load average "
            f"{part['load_start']} at start, {part.get('load_end', '?')} at the end; questions "
            f"{', '.join(dict.fromkeys(r['question'] for r in part['rows']))}" for i, part in enumerate(parts)]
    return parts[0]["header"] + ["Runs (concurrent runs share the machine):", *runs, ""] + table_lines(rows) + \
        ["", "Checks:"] + checks(rows)


def _save(a, part: dict) -> None:
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    with open(os.path.splitext(a.output)[0] + ".json", "w") as f:  # the raw cells, to re-render or quote
        json.dump(part, f, indent=1)
    with open(a.output, "w") as f:
        f.write("\n".join(render([part])) + "\n")


def run(a) -> None:
    if a.render:
        parts = []
        for path in a.render.split(","):
            with open(path) as f:
                got = json.load(f)
            parts += got["parts"] if "parts" in got else [got]  # a merged file holds its parts
        text = "\n".join(render(parts)) + "\n"
        print(text)
        if a.write:
            os.makedirs(os.path.dirname(a.output), exist_ok=True)
            with open(a.output, "w") as f:
                f.write(text)
            with open(os.path.splitext(a.output)[0] + ".json", "w") as f:
                json.dump({"parts": parts}, f, indent=1)
            print(f"written: {a.output} (and .json)")
        return
    ns = [int(float(t)) for t in a.ns.split(",")]
    groups = a.groups.split(",")
    for g in groups:
        if g not in QUESTIONS:
            raise SystemExit(f"error: unknown question {g!r}; choose from {', '.join(QUESTIONS)}")
    part = {"header": header(a), "started": time.strftime("%H:%M UTC", time.gmtime()), "load_start": _load(),
            "rows": []}
    print("\n".join(part["header"]), flush=True)
    for g in groups:
        for n in ([int(float(a.best_n))] if g == "clones-best" else ns):
            cells = measure(g, n, a)
            part["rows"].append({"question": g, "n": n, "cells": cells})
            for line in table_lines([(g, n, cells)])[2:]:
                print(line, flush=True)
            if a.write:  # after every row: a partial table is on disk if the run is cut short
                _save(a, part)
    part.update(ended=time.strftime("%H:%M UTC", time.gmtime()), load_end=_load())
    rows = [(r["question"], r["n"], r["cells"]) for r in part["rows"]]
    print("\n".join(["", "Checks:"] + checks(rows)), flush=True)
    if a.write:
        _save(a, part)
        print(f"written: {a.output} (and .json)")


def add_parser(sub) -> None:
    s = sub.add_parser("table", help="issue 21: side-by-side scale table (shufflesim, current engine, "
                                     "dp_accounting, Wang et al.)")
    s.add_argument("--ns", default="1e6,1e7,1e8,1e9")
    s.add_argument("--groups", default="clones,krr-strong,krr-shuffled,clones-best,clones-x1000",
                   help=f"questions: {', '.join(QUESTIONS)}")
    s.add_argument("--best-n", default="2e9", help="n of the clones-best question (issue 21: 2e9)")
    s.add_argument("--wang-dir", default=None, help=f"checkout of wangsw/PrivacyAmplification (or {WANG_ENV})")
    s.add_argument("--wang-T", type=int, default=20, help="Wang et al.'s bisection steps")
    s.add_argument("--wang-timeout", type=float, default=1800.0)
    s.add_argument("--timeout", type=float, default=300.0)
    s.add_argument("--mem-cap-gb", type=float, default=6.0)
    s.add_argument("--dp-max-atoms", type=float, default=2e6)
    s.add_argument("--current-max-n-composed", type=float, default=1e6)
    s.add_argument("--write", action="store_true", help=f"also write the table to {os.path.relpath(RESULTS, ROOT)}")
    s.add_argument("--output", default=RESULTS)
    s.add_argument("--render", default=None, metavar="A.json,B.json",
                   help="measure nothing: merge these runs' JSON into one table (with --write: to --output)")
    s.set_defaults(func=run)


# --------------------------------------------------------------------------------------------------
# small n: Wang et al.'s upper bound against the exact value by enumeration
# --------------------------------------------------------------------------------------------------

WANG_CHECK_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from unifiedamplification import amplificationUB
print(json.dumps([amplificationUB(*map(float, a[:4]), int(a[4]), float(a[5]), 40) for a in json.loads(sys.argv[2])]))
"""


#: Wang et al.'s composition script (sequentialComposition/use_Hoeffding_and_FFT.py) runs demonstrations at
#: import; this cell executes only its imports and function definitions (from its own file), sets the grid
#: step ``dx`` that its homogeneousComposition reads as a global, and reads delta(eps) off what it prints.
WANG_COMPOSE_CHILD = r"""
import ast, contextlib, io, json, re, sys
import numpy as np
path, n, p, beta, q, k, nx, L, lo, hi, steps = sys.argv[1:12]
tree = ast.parse(open(path).read())
keep = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef))]
ns = {"__name__": "wang_sequential"}
exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
nx, L = int(float(nx)), float(L)
ns["dx"] = 2 * L / nx
grid = np.linspace(float(lo), float(hi), int(steps))
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    ns["homogeneousComposition"](int(float(n)), float(p), float(beta), float(q), float(q), nx, L, grid, int(k))
pat = re.compile(r"^k: (\d+) eps: (\S+) delta : (\S+)$")
out = [(float(m.group(2)), complex(m.group(3)).real) for m in map(pat.match, buf.getvalue().splitlines()) if m]
print(json.dumps(out))
"""


def exact_eps(pair, delta: float) -> float:
    """eps(delta) of an enumerated pair: bisection on the exact hockey-stick divergence (both directions).

    Returns the bisection's lower end after 60 halvings of [0, 20]: a value whose delta still exceeds
    ``delta``, so the pair (a data set of the mechanism) is not (eps, delta)-DP at it.
    """
    from shufflesim.accounting.exact.bruteforce import hockey_stick

    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if hockey_stick(pair.log_p, pair.log_q, mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo


def wang_check(a) -> None:
    """Small n: the exact eps of shuffled k-RR / binary RR on every data set of the others (shufflesim's
    brute-force enumeration of the shuffler's view, accounting/exact/bruteforce.py), against Wang et al.'s
    ``amplificationUB`` with their README's parameters (T = 40).  An exact value above the upper bound means
    the bound, with those parameters, is not an upper bound there."""
    import itertools

    from shufflesim.accounting.exact.bruteforce import krr_bruteforce, rr2_bruteforce

    d = wang_dir(a.wang_dir)
    if d is None:
        print(f"Wang et al.: not available (give --wang-dir or {WANG_ENV})")
        return
    cases = []  # (label, n, delta, exact, worst data set, (p, beta, q, q, n, delta))
    k, gamma = a.k, a.gamma
    p = 1 + k * (1 - gamma) / gamma
    for n in range(2, a.max_n_krr + 1):
        for delta in (1e-2, 1e-3):
            best, worst = -1.0, None
            for others in itertools.combinations_with_replacement(range(k), n - 1):
                e = exact_eps(krr_bruteforce(n, k, gamma, "shuffler", others=list(others)), delta)
                if e > best:
                    best, worst = e, others
            cases.append((f"k-RR k={k} gamma={gamma:g}", n, delta, best, worst, (p, (p - 1) / (p + k - 1), p, p, n,
                                                                                   delta)))
    for n in (4, 8, 12, 16):
        for delta in (1e-2, 1e-3):
            best, worst = max((exact_eps(rr2_bruteforce(n, a.eps0_rr, n_ones=j), delta), j) for j in range(n))
            q = math.exp(a.eps0_rr)
            cases.append((f"binary RR eps0={a.eps0_rr:g}", n, delta, best, f"{worst} ones", (q, (q - 1) / (q + 1), q, q,
                                                                                            n, delta)))
    ubs = run_cell([sys.executable, "-c", WANG_CHECK_CHILD, d, json.dumps([c[5] for c in cases])], a.wang_timeout,
                   dict(os.environ))
    if "fail" in ubs:
        print(f"Wang et al.: {ubs['fail']}")
        return
    ubs = ubs["value"]
    lines = ["| randomiser | n | delta | exact eps (worst data set) | worst others | Wang et al. UB | verdict |",
             "|---|---:|---:|---:|---|---:|---|"]
    for (label, n, delta, ex, worst, _), ub in zip(cases, ubs):
        verdict = "NOT an upper bound" if ub < ex * (1 - 1e-9) else "ok"
        lines.append(f"| {label} | {n} | {delta:g} | {ex:.6g} | {worst} | {ub:.6g} | {verdict} |")
    if a.compose_n:
        lines += ["", *wang_compose_lines(a, d)]
    print("\n".join(lines))
    if a.write:
        os.makedirs(os.path.dirname(a.output), exist_ok=True)
        with open(a.output, "w") as f:
            f.write("# Wang et al.'s amplificationUB against exact enumeration (small n)\n\n"
                    + (wang_check.__doc__ or "").replace("\n    ", "\n") + "\n\n" + "\n".join(lines) + "\n")
        print(f"written: {a.output}")


def wang_compose_lines(a, d: str) -> list[str]:
    """1000-fold composition at a small n: Wang et al.'s FFT script against shufflesim's composed interval."""
    n, k, delta = int(float(a.compose_n)), a.compositions, 1e-9
    path = os.path.join(d, "sequentialComposition", "use_Hoeffding_and_FFT.py")
    if not os.path.isfile(path):
        return [f"Wang et al.'s composition script: not available ({path})"]
    p = math.e
    lo, hi, steps = a.compose_grid.split(",")
    w = run_cell([sys.executable, "-c", WANG_COMPOSE_CHILD, path, str(n), repr(p), repr((p - 1) / (p + 1)), repr(p),
                  str(k), "2e7", "50", lo, hi, steps], a.wang_timeout, dict(os.environ))
    s = shufflesim_cell("clones-x1000", n, a.wang_timeout) if k == 1000 else {"fail": "shufflesim row is x1000"}
    head = [f"1000-fold composition, stronger clones / binary RR eps0 = 1, n = {n}, delta = {delta:g}:"]
    if "fail" in w:
        return head + [f"- Wang et al. (FFT script): {w['fail']}"]
    ok = [e for e, dl in w["value"] if dl <= delta]
    step = (float(hi) - float(lo)) / (int(steps) - 1)
    wang = (f"eps <= {min(ok):.4g} (first grid point with delta <= {delta:g}; grid step {step:.3g}; its delta omits "
            f"its own periodisation error term)" if ok else f"delta > {delta:g} on the whole grid")
    head.append(f"- Wang et al. (FFT script, nx = 2e7, L = 50): {wang}; {w['seconds']:.1f} s, "
                f"{w['peak'] / 2**20:.0f} MiB")
    if "fail" in s:
        head.append(f"- shufflesim: {s['fail']}")
    else:
        head.append(f"- shufflesim: eps in [{_g(s['lo'])}, {_g(s['up'])}]; {s['seconds']:.1f} s, "
                    f"{s['peak'] / 2**20:.0f} MiB")
        if ok and s.get("lo") is not None and min(ok) < s["lo"]:
            head.append("- CONTRADICTION: Wang et al.'s composed value is below shufflesim's certified lower end")
    return head


def add_check_parser(sub) -> None:
    s = sub.add_parser("wang-check", help="small n: Wang et al.'s upper bound against exact enumeration")
    s.add_argument("--wang-dir", default=None)
    s.add_argument("--k", type=int, default=4)
    s.add_argument("--gamma", type=float, default=0.25)
    s.add_argument("--eps0-rr", type=float, default=1.0)
    s.add_argument("--max-n-krr", type=int, default=6)
    s.add_argument("--compose-n", default="1e4", help="n of the composed check (0: skip)")
    s.add_argument("--compositions", type=int, default=1000)
    s.add_argument("--compose-grid", default="1.5,3.5,201", help="eps grid lo,hi,points for Wang et al.'s script")
    s.add_argument("--wang-timeout", type=float, default=600.0)
    s.add_argument("--write", action="store_true")
    s.add_argument("--output", default=os.path.join(ROOT, "bench", "results", "wang_small_n.md"))
