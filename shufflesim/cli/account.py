"""``shufflesim account MECHANISM …``: certified (ε, δ) of a shuffled mechanism by a chosen method."""

from __future__ import annotations

import argparse

from shufflesim.cli._common import float_arg, int_arg, print_json

_TYPES = {"int": int_arg, "float": float_arg, "str": str}


def add_parser(sub: argparse._SubParsersAction) -> None:
    from shufflesim.mechanisms import kinds

    p = sub.add_parser("account", help="certified privacy (eps, delta) of a shuffled mechanism",
                       description="Certified upper and lower bounds on delta(eps) or eps(delta). MECHANISM may also "
                       "name a protocol built on a matrix randomiser (matrix-rr, plug-ins; docs/plugins.md): "
                       "shufflesim account PROTOCOL --n N <its options> --eps ...")
    ms = p.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True, parser_class=type(p))
    ms._name_parser_map = ms.choices = _MechanismsOrProtocols(ms)
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
        q.add_argument("--method", choices=(*cls.methods, "best"), default=None,
                       help=f"default: the mechanism's own ({cls.methods[0]}"
                            + ("; tight above n = 1e5" if cls.kind == "rr2" else "")
                            + "); best: every applicable certified method, the smallest "
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
    ms.choices.building = False  # from now on an unknown name may be a protocol's


class _MechanismsOrProtocols(dict):
    """The sub-parsers of ``account``: the mechanism kinds, and — built only when named, so that ``account KIND``
    imports no protocol — every registered protocol with ``account_by_name`` (matrix-rr, plug-ins built on
    protocols/matrix_rr.py; issue 22): ``shufflesim account PROTOCOL --n N <its options> --eps ...`` accounts the
    protocol's ``mechanism()``."""

    def __init__(self, action):
        super().__init__()
        self.action = action

    building = True  # while the kinds are added (argparse's own duplicate check asks for each)

    def __contains__(self, name) -> bool:
        if not (self.building or dict.__contains__(self, name)) and isinstance(name, str) and not name.startswith("-"):
            self.building = True
            try:
                _add_protocol_parser(self.action, name)
            finally:
                self.building = False
        return dict.__contains__(self, name)


def _add_protocol_parser(ms, name: str) -> None:
    from shufflesim.cli._protocol_args import _CONVERT
    from shufflesim.pipeline import registry

    if name not in registry.names():
        return  # argparse names the unknown choice
    cls = registry.get(name)
    if getattr(cls, "account_by_name", False):
        q = ms.add_parser(name, help=f"the shuffled mechanism of protocol {name}: {cls.summary}", description=cls.summary)
        q.add_argument("--n", type=int_arg, required=True, help="number of users")
        for opt in cls.options:
            if opt.name != "delta":
                q.add_argument(opt.flag, dest=opt.name, type=_CONVERT.get(opt.type, opt.type), default=None,
                               help=opt.help, choices=opt.choices, metavar=opt.metavar)
        t = q.add_mutually_exclusive_group(required=True)
        t.add_argument("--eps", type=float_arg, nargs="+", help="eps values: report delta(eps)")
        t.add_argument("--delta", type=float_arg, nargs="+", help="delta values: report eps(delta)")
        q.add_argument("--compositions", type=int_arg, default=1, help="number of compositions (default 1)")
        q.add_argument("--method", default=None, help="accounting method (default: the mechanism's first, tight); best")
        q.add_argument("--compare", action="store_true", help="every applicable method side by side")
        q.add_argument("--composition", choices=("basic", "advanced", "best"), default="basic",
                       help="composition theorem for analytic methods with --compositions > 1 (default basic)")
        q.add_argument("--bennett-variant", choices=("fixed", "original-2019"), default="fixed", help=argparse.SUPPRESS)
        q.add_argument("--target-accuracy", type=float_arg, default=None,
                       help="relative width of the certified interval for FFT composition (default 1e-3)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
        q.set_defaults(func=run, mechanism_class=None, protocol_class=cls)


def _mechanism(args: argparse.Namespace):
    cls = args.mechanism_class
    if cls is not None:
        return cls.from_flags(**{f.dest: getattr(args, f.dest) for f in cls.flags})
    from shufflesim.errors import ParameterError

    pcls = args.protocol_class
    params = {o.name: getattr(args, o.name) for o in pcls.options
              if o.name != "delta" and getattr(args, o.name, None) is not None}
    mech = pcls.create(args.n, **params).mechanism()
    if mech is None:
        raise ParameterError(f"protocol {pcls.name} describes no mechanism to account")
    return mech


def run(args: argparse.Namespace) -> int:
    from shufflesim.accounting.account import account

    mech = _mechanism(args)
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
            print(f"  delta={d['delta']:.3g}:  eps in [{lo}, {d['eps_upper']:.6g}]" + _pair_bracket(d))
        else:
            lo = "n/a" if d["delta_lower"] is None else f"{d['delta_lower']:.6g}"
            print(f"  eps={d['eps']:.6g}:  delta in [{lo}, {d['delta_upper']:.6g}]" + _pair_bracket(d))
    for nt in rep.notes:
        print(f"  note: {nt}")
    print(f"  seconds: {rep.seconds:.2f}")
    return 0


def _pair_bracket(d: dict) -> str:
    """The evaluated pair's own bracket (issue 17), when the method's pair only dominates the view."""
    if d.get("bound_pair") is None:
        return ""
    lo, up = d["bound_lower"], d["bound_upper"]
    return (f"   (pair bracket [{'n/a' if lo is None else f'{lo:.6g}'}, "
            f"{'inf' if up is None else f'{up:.6g}'}]: {d['bound_pair']})")


#: compositions from which the FFT accountant is warned about (measured: 10^3 takes ~25 s, 10^4-10^6 about a
#: minute or more on 2 cores for rr2 with n = 1000)
SLOW_COMPOSITIONS = 1000


def _warn_slow(args: argparse.Namespace, mech) -> None:
    """One ``warning:`` line before a pair-based composition that is known to take long (issue 8)."""
    import sys

    from shufflesim.accounting.account import MAX_COMPOSITIONS
    from shufflesim.accounting.mechanism import PAIR_METHODS
    from shufflesim.core.checks import check_int

    method = args.method or mech.default_method
    # no warning before an error: a request the accountant refuses is refused first (issue 18)
    check_int("compositions", args.compositions, minimum=1)
    if method in PAIR_METHODS and MAX_COMPOSITIONS >= args.compositions >= SLOW_COMPOSITIONS \
            and mech.n <= mech.max_n_pairs:
        print(f"warning: {args.compositions} compositions with the pair-based method {method!r} may take a minute "
              "or more (each FFT composition step works on a grid that grows with the composed range); fewer "
              "compositions or a published bound (--method erlingsson|feldman) answer at once", file=sys.stderr)
