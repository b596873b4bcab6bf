"""Issue 21: certified accounting at n = 10^6 .. 10^9, the bucket rows against the current (exact row)
engine and dp_accounting, same run; every cell is measured in its own subprocess (peak = VmHWM).

    PYTHONPATH=$PWD python bench/bench_scale.py accounting [--ns 1e6,1e7,1e8,1e9] [--mem-cap-gb 6]
                                                           [--timeout 120] [--compositions 1000]

* ``bucketed`` -- ``tight_epsilon`` (which picks the bucket rows above 3e7 atoms; the exact engine below);
* ``current``  -- the exact row engine (``TightAccountant`` on the unreduced rows), under an address-space
  cap (``--mem-cap-gb``) and a timeout so that it fails with a word instead of taking the machine;
* ``dp_accounting`` -- ``from_two_probability_mass_functions`` on the pair's expanded atoms, only where
  they number <= ``--dp-max-atoms`` (it loops over outcomes in Python); beyond, "not run" with the count.

Wang et al.'s figures are not re-measured here: the issue quotes eps = 0.0016956 at n = 1e7 and 0.00050449 at
n = 1e8 (eps0 = 1, delta = 1e-9; 14.7 s and 36 s), printed as quoted, labelled so.  ``bench_scale.py table``
(bench/scale_table.py) re-measures them in the same run from a checkout of their code (--wang-dir).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WANG_QUOTED = {10**7: (0.0016956, 14.7), 10**8: (0.00050449, 36.0)}

CHILD = r"""
import json, sys, time, resource
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
cap = float(sys.argv[5])
if cap > 0:
    resource.setrlimit(resource.RLIMIT_AS, (int(cap * 2**30), resource.RLIM_INFINITY))
kind, n, engine, comp = sys.argv[1], int(float(sys.argv[2])), sys.argv[3], int(sys.argv[4])
t0 = time.perf_counter()
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.accounting.pairs.krr import krr_pair
tb = max(min(1e-15, 1e-7 * 1e-9 / comp), 1e-300)  # the truncation account() asks for (accounting/account.py)
rows = (stronger_clones_pair(n, 1.0, as_rows=True, tail_bound=tb) if kind == "clones"
        else krr_pair(n, 4, 0.25, kind, as_rows=True, tail_bound=tb))
out = {"atoms": rows.n_atoms}
try:
    if engine == "bucketed":
        from shufflesim.accounting.engines.tight import tight_epsilon
        r = tight_epsilon(rows, 1e-9, compositions=comp)[0]
        out.update(lo=r.eps_lower, up=r.eps_upper)
    elif engine == "current":
        from shufflesim.accounting.engines.tight import TightAccountant
        r = TightAccountant(rows, compositions=comp).epsilon(1e-9)[0]
        out.update(lo=r.eps_lower, up=r.eps_upper)
    else:
        if rows.n_atoms > int(float(sys.argv[6])):
            out.update(skip=f"{rows.n_atoms:.3g} atoms > dp-max-atoms (dp_accounting loops over outcomes in Python)")
        else:
            import numpy as np
            from dp_accounting.pld import privacy_loss_distribution as pldm
            lp, lq = rows.expand()
            # dp_accounting takes LOG masses (lower = Q, upper = P); passing masses answered ~1e-4 for everything
            P = {i: float(v) for i, v in enumerate(lp)}
            Q = {i: float(v) for i, v in enumerate(lq)}
            t0 = time.perf_counter()
            pld = pldm.from_two_probability_mass_functions(Q, P, symmetric=False)
            if comp > 1:
                pld = pld.self_compose(comp)
            out.update(up=float(pld.get_epsilon_for_delta(1e-9)), lo=None)
except MemoryError:
    out.update(fail="MemoryError under the address-space cap")
out.update(seconds=time.perf_counter() - t0, peak=hwm())
print(json.dumps(out))
"""


def cell(kind: str, n: int, engine: str, comp: int, cap: float, timeout: float, dp_max: float) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, SHUFFLESIM_PROGRESS="0")
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, kind, str(n), engine, str(comp), str(cap), str(dp_max)],
                           capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"fail": f"timeout {timeout:.0f} s"}
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"fail": f"exit {p.returncode}: {last[:80]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _fmt(d: dict) -> str:
    if "fail" in d:
        return f"FAILED ({d['fail']})"
    if "skip" in d:
        return f"not run ({d['skip']})"
    lo = "" if d.get("lo") is None else f"[{d['lo']:.6g}, "
    hi = f"{d['up']:.6g}]" if lo else f"{d['up']:.6g}"
    return f"{d['seconds']:7.2f} s {d['peak'] / 2**20:7.0f} MiB  eps {lo}{hi}"


def accounting(a) -> None:
    ns = [int(float(t)) for t in a.ns.split(",")]
    kinds = a.kinds.split(",")
    print(f"delta = 1e-9; clones: stronger clones eps0 = 1; strong/shuffled: k-RR k = 4, gamma = 0.25; "
          f"current engine capped at {a.mem_cap_gb} GiB address space and {a.timeout:.0f} s")
    for kind in kinds:
        for comp in ((a.compositions,) if a.composed_only else (1, a.compositions)):
            for n in ns:
                res = {}
                for eng in ("bucketed", "current", "dp_accounting"):
                    if comp > 1 and eng != "bucketed" and n > 10**6:
                        res[eng] = {"skip": "composed: bucketed only above n = 1e6"}
                        continue
                    res[eng] = cell(kind, n, eng, comp, a.mem_cap_gb if eng == "current" else 0.0, a.timeout,
                                    a.dp_max_atoms)
                print(f"{kind:>8} n={n:.0e} x{comp}:", flush=True)
                for eng, d in res.items():
                    print(f"    {eng:<14} {_fmt(d)}", flush=True)
                b, c = res["bucketed"], res["current"]
                if "seconds" in b and "seconds" in c and "fail" not in c:
                    print(f"    ratio current/bucketed: time {c['seconds'] / b['seconds']:.1f}x, "
                          f"peak {c['peak'] / b['peak']:.1f}x", flush=True)
                if kind == "clones" and comp == 1 and n in WANG_QUOTED:
                    e, s = WANG_QUOTED[n]
                    print(f"    Wang et al. (as quoted in issue 21, not re-measured): eps {e} in {s} s", flush=True)


def add_parser(sub) -> None:
    s = sub.add_parser("accounting", help="issue 21: certified accounting at n = 1e6 .. 1e9")
    s.add_argument("--ns", default="1e6,1e7,1e8,1e9")
    s.add_argument("--kinds", default="clones,strong,shuffled")
    s.add_argument("--compositions", type=int, default=1000)
    s.add_argument("--mem-cap-gb", type=float, default=6.0)
    s.add_argument("--timeout", type=float, default=120.0)
    s.add_argument("--dp-max-atoms", type=float, default=2e6)
    s.add_argument("--composed-only", action="store_true", help="only the --compositions-fold rows")
