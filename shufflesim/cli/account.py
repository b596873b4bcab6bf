"""``shufflesim account MECHANISM …``: certified (ε, δ) of a shuffled mechanism by a chosen method."""

from __future__ import annotations

import argparse

from shufflesim.cli._common import float_arg, int_arg, print_json

_TYPES = {"int": int_arg, "float": float_arg}


def add_parser(sub: argparse._SubParsersAction) -> None:
    from shufflesim.mechanisms import kinds

    p = sub.add_parser("account", help="certified privacy (eps, delta) of a shuffled mechanism",
                       description="Certified upper and lower bounds on delta(eps) or eps(delta).")
    ms = p.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True, parser_class=type(p))
    for name, cls in kinds().items():
        q = ms.add_parser(name, help=cls.summary, description=cls.summary)
        groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
        for f in cls.flags:
            if f.group is not None:
                if f.group not in groups:
                    groups[f.group] = q.add_mutually_exclusive_group(required=f.required)
                target, required = groups[f.group], {}
            else:
                target, required = q, {"required": f.required}
            kind = {"choices": f.choices} if f.type == "choice" else {"type": _TYPES[f.type]}
            target.add_argument(f"--{f.name}", dest=f.dest, help=f.help, **kind, **required)
        t = q.add_mutually_exclusive_group(required=True)
        t.add_argument("--eps", type=float_arg, nargs="+", help="eps values: report delta(eps)")
        t.add_argument("--delta", type=float_arg, nargs="+", help="delta values: report eps(delta)")
        q.add_argument("--compositions", type=int_arg, default=1, help="number of compositions (default 1)")
        q.add_argument("--method", choices=(*cls.methods, "best"), default=cls.methods[0],
                       help=f"default: {cls.methods[0]}; best: every applicable certified method, the smallest "
                            "upper bound (the winner is named in the notes)")
        q.add_argument("--compare", action="store_true",
                       help="run every applicable method on this question and print them side by side "
                            "(interval, validity, time, ratio to the best); --method is ignored")
        q.add_argument("--composition", choices=("basic", "advanced", "best"), default="basic",
                       help="composition theorem for analytic methods with --compositions > 1 (default basic)")
        q.add_argument("--bennett-variant", choices=("fixed", "original-2019"), default="fixed",
                       help="Bennett bound form (default: fixed; original-2019 is what FLAME used)")
        q.add_argument("--target-accuracy", type=float_arg, default=None,
                       help="relative width of the certified interval for FFT composition (default 1e-3)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
        if name in ("rr2", "krr", "clones"):  # docs/theory.md#dishonest-honest
            q.add_argument("--honest", type=int_arg, default=None, metavar="M",
                           help="only M of the n users are honest (the others' reports are known): account the "
                                "same mechanism among the M honest users")
        q.set_defaults(func=run, mechanism_class=cls)


def run(args: argparse.Namespace) -> int:
    from shufflesim.accounting.account import account

    cls = args.mechanism_class
    mech = cls.from_flags(**{f.dest: getattr(args, f.dest) for f in cls.flags})
    if getattr(args, "honest", None) is not None:
        from shufflesim.validation.dishonest import honest_mechanism

        mech = honest_mechanism(mech, args.honest)
    numerics = {"target_accuracy": args.target_accuracy} if args.target_accuracy is not None else None
    _warn_slow(args, mech)
    if args.compare:
        from shufflesim.accounting.compare import compare, format_table

        cmp = compare(mech, run=account, eps=args.eps, delta=args.delta, compositions=args.compositions,
                      composition=args.composition, numerics=numerics)
        if args.json:
            print_json(cmp.to_dict())
        else:
            print(format_table(cmp))
        return 0
    rep = account(mech, eps=args.eps, delta=args.delta, method=args.method, compositions=args.compositions,
                  composition=args.composition, bennett_variant=args.bennett_variant, numerics=numerics)
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


#: compositions from which the FFT accountant is warned about (measured: 10^3 takes ~25 s, 10^4-10^6 about a
#: minute or more on 2 cores for rr2 with n = 1000)
SLOW_COMPOSITIONS = 1000


def _warn_slow(args: argparse.Namespace, mech) -> None:
    """One ``warning:`` line before a pair-based composition that is known to take long (issue 8)."""
    import sys

    from shufflesim.accounting.mechanism import PAIR_METHODS

    method = args.method or mech.default_method
    if method in PAIR_METHODS and args.compositions >= SLOW_COMPOSITIONS:
        print(f"warning: {args.compositions} compositions with the pair-based method {method!r} may take a minute "
              "or more (each FFT composition step works on a grid that grows with the composed range); fewer "
              "compositions or a published bound (--method erlingsson|feldman) answer at once", file=sys.stderr)
