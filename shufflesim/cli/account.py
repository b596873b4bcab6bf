"""``shufflesim account MECHANISM …``: certified (ε, δ) of a shuffled mechanism by a chosen method."""

from __future__ import annotations

import argparse

from shufflesim.accounting.account import METHODS, account
from shufflesim.cli._common import float_arg, int_arg, print_json

_HELP = {
    "rr2": "shuffled binary randomised response (seed 001 §4)",
    "krr": "shuffled k-ary randomised response (seeds 000/001 §5)",
    "clones": "any eps0-LDP randomiser via Feldman et al.'s clones (seed 001 §6)",
    "biswas": "Biswas et al.'s fixed-dataset histogram setting (seed 003 §IV)",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("account", help="certified privacy (eps, delta) of a shuffled mechanism",
                       description="Certified upper and lower bounds on delta(eps) or eps(delta).")
    ms = p.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True, parser_class=type(p))
    for name, methods in METHODS.items():
        q = ms.add_parser(name, help=_HELP[name], description=_HELP[name])
        q.add_argument("--n", type=int_arg, required=True, help="number of users")
        if name in ("krr", "biswas"):
            q.add_argument("--k", type=int_arg, required=True, help="number of categories")
        if name == "krr":
            g = q.add_mutually_exclusive_group(required=True)
            g.add_argument("--gamma", type=float_arg, help="blanket probability in (0, 1]")
            g.add_argument("--eps0", type=float_arg, help="local epsilon > 0")
            q.add_argument("--adversary", choices=("strong-1d", "strong", "weak"),
                           help="neighbouring pair for tight/exact (required there)")
        else:
            q.add_argument("--eps0", type=float_arg, required=True, help="local epsilon > 0")
        if name == "biswas":
            q.add_argument("--n-x0", dest="n_x0", type=int_arg, required=True,
                           help="other users holding the target's value x0")
        t = q.add_mutually_exclusive_group(required=True)
        t.add_argument("--eps", type=float_arg, nargs="+", help="eps values: report delta(eps)")
        t.add_argument("--delta", type=float_arg, nargs="+", help="delta values: report eps(delta)")
        q.add_argument("--compositions", type=int_arg, default=1, help="number of compositions (default 1)")
        q.add_argument("--method", choices=methods, default="tight", help="default: tight")
        q.add_argument("--composition", choices=("basic", "advanced", "best"), default="basic",
                       help="composition theorem for analytic methods with --compositions > 1 (default basic)")
        q.add_argument("--bennett-variant", choices=("fixed", "original-2019"), default="fixed",
                       help="Bennett bound form (default: fixed; original-2019 is what FLAME used)")
        q.add_argument("--target-accuracy", type=float_arg, default=None,
                       help="relative width of the certified interval for FFT composition (default 1e-3)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
        q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    params = {"n": args.n, "eps0": getattr(args, "eps0", None)}
    for name in ("k", "gamma", "adversary", "n_x0"):
        if hasattr(args, name):
            params[name] = getattr(args, name)
    numerics = {"target_accuracy": args.target_accuracy} if args.target_accuracy is not None else None
    rep = account(args.mechanism, params, eps=args.eps, delta=args.delta, method=args.method,
                  compositions=args.compositions, composition=args.composition,
                  bennett_variant=args.bennett_variant, numerics=numerics)
    if args.json:
        print_json(rep.to_dict())
        return 0
    print(f"{rep.mechanism}  " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                            for k, v in rep.params.items()))
    print(f"method {rep.method}, {rep.compositions} composition(s)"
          + (f" ({rep.composition} theorem)" if rep.composition else ""))
    for r in rep.results:
        d = r.to_dict()
        if not getattr(r, "applicable", True):
            print(f"  not applicable: {r.reason}")
        elif "eps_upper" in d:
            lo = "n/a" if d["eps_lower"] is None else f"{d['eps_lower']:.6g}"
            print(f"  delta={d['delta']:.3g}:  eps in [{lo}, {d['eps_upper']:.6g}]")
        else:
            lo = "n/a" if d["delta_lower"] is None else f"{d['delta_lower']:.6g}"
            print(f"  eps={d['eps']:.6g}:  delta in [{lo}, {d['delta_upper']:.6g}]")
    for nt in rep.notes:
        print(f"  note: {nt}")
    print(f"  seconds: {rep.seconds:.2f}")
    return 0
