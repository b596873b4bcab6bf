"""Benchmark: the tight accountant on the anchors of issue 3, against Google's dp_accounting.

For every anchor (rr2, k-RR strong-1d, k-RR strong and clones at n = 10^6; k-RR weak at n = 1000 and
n = 10^4) and for its 16-fold composition, prints the wall time of ``shufflesim.accounting.account``
(pair construction included), the peak resident memory of the process, and the certified interval.
Each anchor runs in its own process, so the peak memory is that anchor's.

In the same process, dp_accounting 0.6 is given the same two PMFs (the pair's kept atoms, expanded
into two dictionaries ``outcome -> log-probability``) and times
``from_two_probability_mass_functions(Q, P, symmetric=False)`` + ``get_delta_for_epsilon``, then
``self_compose(16)`` + ``get_delta_for_epsilon``; the ratio is dp_accounting's time over shufflesim's.
Building the dictionaries is not timed.  dp_accounting loops over the outcomes in Python, so above
``--dp-max-atoms`` outcomes (default 2e6; k-RR strong and weak at n = 10^4..10^6 have 1e7-6e7) the
comparison is made at the largest n whose pair fits, shufflesim being timed again at that n; such
rows are labelled "dp at n=...".  dp_accounting's deltas are not certified (its pessimistic
discretisation is an upper estimate for the grid it uses, and it floors composed deltas near 1e-15);
they are printed for reference next to shufflesim's interval.

Times are wall clock with the process's CPU time (``time.process_time``, all threads) next to them; issue 9's
slow corners in serial CPU time, against the engine before its speed-ups, are ``bench/bench_issue9.py --corners``.

Targets (issue 3): single use <= 2 s at n = 10^6 (rr2, krr strong-1d/strong, clones); krr weak
<= 1 s at n = 1000 and <= 10 s at n = 10^4; 16-fold composition adds <= 1 s; memory <= 2 GB.

    /work/venv/bin/python bench/bench_accounting.py [--only NAME ...] [--skip-dp] [--dp-max-atoms 2000000]
                                                    [--dp-interval 1e-5]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

#: name -> (mechanism, params, eps single use, eps 16-fold, note)
ANCHORS: dict[str, tuple[str, dict, float, float, str]] = {
    "rr2 n=1e6": ("rr2", {"n": 10**6, "eps0": 1.0}, 0.005, 0.02, "eps0 = 1"),
    "krr strong-1d n=1e6": ("krr", {"n": 10**6, "k": 4, "gamma": 0.25, "adversary": "strong-1d"}, 0.01, 0.04,
                            "k = 4, gamma = 0.25"),
    "krr strong n=1e6": ("krr", {"n": 10**6, "k": 4, "gamma": 0.25, "adversary": "strong"}, 0.01, 0.04,
                         "k = 4, gamma = 0.25 (full view)"),
    "clones n=1e6 eps0=9": ("clones", {"n": 10**6, "eps0": 9.0}, 0.5, 2.0, "seed 001 Fig 6 parameters"),
    "clones n=1e6 eps0=1": ("clones", {"n": 10**6, "eps0": 1.0}, 0.01, 0.05, "a heavier case: 3.5e7 atoms"),
    "krr weak n=1000": ("krr", {"n": 1000, "k": 4, "gamma": 0.25, "adversary": "weak"}, 0.2, 0.8,
                        "seed 001 Fig 1 parameters"),
    "krr weak n=1e4": ("krr", {"n": 10**4, "k": 4, "gamma": 0.25, "adversary": "weak"}, 0.2, 0.8,
                       "k = 4, gamma = 0.25: 5.7e7 atoms"),
    "krr weak n=1e4 (k=5)": ("krr", {"n": 10**4, "k": 5, "gamma": 0.1, "adversary": "weak"}, 0.2, 0.8,
                             "seed 001 Fig 4 parameters"),
}

PUBLISHED = [
    ("Koskela et al. (seed 001 §6.3): tight clones bound at n = 1e6, single message (cost dominated by "
     "forming the PLD)", "about 60 s (\"approximately one minute\"), about 4x Feldman et al.'s method"),
    ("Koskela et al.'s public weak-adversary script at n = 1000 (as quoted in issue 3)", "about 54 s"),
    ("Feldman et al.'s numerical bound at n = 1e6 (as quoted in issue 3)", "about 8 s"),
    ("Wang et al.'s variation-ratio code at n = 1e6 (as quoted in issue 3)", "about 4 s"),
]

NC = 16


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _mechanism(mech: str, params: dict):
    """The mechanism description of an anchor (``shufflesim.mechanisms``)."""
    from shufflesim.mechanisms import kinds

    return kinds()[mech].from_flags(**params)


def _pair(mech: str, params: dict):
    """The pair account() evaluates for ``tight`` (row form for krr strong/weak and clones)."""
    return _mechanism(mech, params).pair("tight")


def _atoms(pair) -> int:
    return int(pair.n_atoms) if hasattr(pair, "n_atoms") else int(pair.size)


def _expanded(pair):
    if hasattr(pair, "expand"):
        return pair.expand()
    return pair.log_p, pair.log_q


def _time_shufflesim(mech: str, params: dict, eps1: float, eps16: float) -> dict:
    from shufflesim.accounting.account import account

    t, c = time.perf_counter(), time.process_time()
    r1 = account(_mechanism(mech, params), eps=[eps1]).results[0]
    t1, c1 = time.perf_counter() - t, time.process_time() - c
    m1 = peak_mb()
    t, c = time.perf_counter(), time.process_time()
    r16 = account(_mechanism(mech, params), eps=[eps16], compositions=NC).results[0]
    t16, c16 = time.perf_counter() - t, time.process_time() - c
    return {"t1": t1, "t16": t16, "cpu1": c1, "cpu16": c16, "mem1": m1, "mem16": peak_mb(),
            "lo1": r1.delta_lower, "up1": r1.delta_upper, "lo16": r16.delta_lower, "up16": r16.delta_upper}


def _largest_n_that_fits(mech: str, params: dict, limit: int) -> int:
    n_hi = int(params["n"])
    if _atoms(_pair(mech, params)) <= limit:
        return n_hi
    n_lo = 10
    while n_hi - n_lo > max(1, n_lo // 100):  # atoms grow with n: bisection to within 1%
        mid = (n_lo + n_hi) // 2
        if _atoms(_pair(mech, dict(params, n=mid))) <= limit:
            n_lo = mid
        else:
            n_hi = mid
    return n_lo


def worker(name: str, dp: bool, dp_max_atoms: int, dp_interval: float) -> dict:
    mech, params, eps1, eps16, _ = ANCHORS[name]
    out = {"name": name, "atoms": _atoms(_pair(mech, params))}
    out.update(_time_shufflesim(mech, params, eps1, eps16))
    if not dp:
        return out
    try:
        from dp_accounting.pld import privacy_loss_distribution as pldlib
    except ImportError:
        out["dp_error"] = "dp_accounting not installed"
        return out
    n_dp = _largest_n_that_fits(mech, params, dp_max_atoms)
    p_dp = dict(params, n=n_dp)
    out["n_dp"] = n_dp
    if n_dp != params["n"]:
        same = _time_shufflesim(mech, p_dp, eps1, eps16)  # shufflesim again at dp_accounting's size
        out["s_at_dp"] = same
    else:
        same = out
    lp, lq = _expanded(_pair(mech, p_dp))
    upper = {i: v for i, v in enumerate(lp.tolist()) if v > -math.inf}  # mu_upper = P
    lower = {i: v for i, v in enumerate(lq.tolist()) if v > -math.inf}  # mu_lower = Q
    out["dp_atoms"] = int(lp.size)
    t = time.perf_counter()
    d = pldlib.from_two_probability_mass_functions(lower, upper, pessimistic_estimate=True,
                                                   value_discretization_interval=dp_interval, symmetric=False)
    v1 = float(d.get_delta_for_epsilon(eps1))
    out["dp_t1"] = time.perf_counter() - t
    t = time.perf_counter()
    v16 = float(d.self_compose(NC).get_delta_for_epsilon(eps16))
    out["dp_t16"] = time.perf_counter() - t
    out["dp_v1"], out["dp_v16"] = v1, v16
    out["ratio1"] = out["dp_t1"] / same["t1"]
    out["ratio16"] = (out["dp_t1"] + out["dp_t16"]) / same["t16"]
    out["dp_mem"] = peak_mb()
    return out


def _fmt_iv(lo: float, up: float) -> str:
    return f"[{lo:.6e}, {up:.6e}]"


def report(r: dict) -> None:
    name = r["name"]
    mech, params, eps1, eps16, note = ANCHORS[name]
    print(f"\n{name}  ({note}; {r['atoms']:,} kept atoms)")
    print(f"  single use   delta({eps1:g}) in {_fmt_iv(r['lo1'], r['up1'])}   {r['t1']:7.2f} s"
          f" (cpu {r['cpu1']:.2f} s)   peak {r['mem1']:6.0f} MB")
    print(f"  {NC}-fold      delta({eps16:g}) in {_fmt_iv(r['lo16'], r['up16'])}   {r['t16']:7.2f} s"
          f" (cpu {r['cpu16']:.2f} s)   peak {r['mem16']:6.0f} MB   (adds {r['t16'] - r['t1']:+.2f} s over single use)")
    if "dp_error" in r:
        print(f"  dp_accounting: {r['dp_error']}")
        return
    if "dp_t1" not in r:
        return
    lab = "" if r["n_dp"] == params["n"] else (f"  [dp_accounting cannot take {r['atoms']:,} outcomes in reasonable time/memory: "
                                              f"compared at n={r['n_dp']:,} ({r['dp_atoms']:,} outcomes)]")
    if lab:
        print(lab)
        s = r["s_at_dp"]
        print(f"    shufflesim at n={r['n_dp']:,}: single {s['t1']:.2f} s {_fmt_iv(s['lo1'], s['up1'])}; "
              f"{NC}-fold {s['t16']:.2f} s {_fmt_iv(s['lo16'], s['up16'])}")
    print(f"  dp_accounting single use  delta = {r['dp_v1']:.6e}   {r['dp_t1']:7.2f} s   ratio dp/shufflesim {r['ratio1']:8.1f}x")
    print(f"  dp_accounting {NC}-fold     delta = {r['dp_v16']:.6e}   {r['dp_t1'] + r['dp_t16']:7.2f} s   ratio dp/shufflesim {r['ratio16']:8.1f}x"
          f"   (peak after dp {r['dp_mem']:.0f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="anchor names to run (default: all)")
    ap.add_argument("--skip-dp", action="store_true")
    ap.add_argument("--dp-max-atoms", type=int, default=2_000_000)
    ap.add_argument("--dp-interval", type=float, default=1e-5, help="dp_accounting value_discretization_interval")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        print(json.dumps(worker(a.worker, not a.skip_dp, a.dp_max_atoms, a.dp_interval)))
        return
    names = a.only or list(ANCHORS)
    from importlib.metadata import PackageNotFoundError, version

    try:
        dp_version = version("dp-accounting")
    except PackageNotFoundError:
        dp_version = "(not installed)"
    print(f"shufflesim tight accountant vs dp_accounting {dp_version} "
          f"(value_discretization_interval={a.dp_interval:g}); one process per anchor")
    print("published anchors (their reported numbers, other machines; not measured here):")
    for what, val in PUBLISHED:
        print(f"  {what}: {val}")
    for name in names:
        cmd = [sys.executable, __file__, "--worker", name, "--dp-max-atoms", str(a.dp_max_atoms),
               "--dp-interval", str(a.dp_interval)] + (["--skip-dp"] if a.skip_dp else [])
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            print(f"\n{name}: FAILED\n{res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ''}")
            continue
        report(json.loads(res.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
