"""``shufflesim audit PROTOCOL …``: certified lower bounds on δ(ε) (and ε(δ)) from sampled views, beside
the accountant's upper bound for the same pair and relation.  See :mod:`shufflesim.validation.audit`."""

from __future__ import annotations

import argparse
import time

from shufflesim.cli._common import float_arg, int_arg, print_json
from shufflesim.cli._protocol_args import add_protocol_parsers, protocol_params

#: protocol options fed by the audit's own --eps / --delta unless --protocol-eps / --protocol-delta are given:
#: blanket-sum is calibrated to the (eps, delta) it is audited at; krr reports its central eps at the audited delta
SHARED = ("eps", "delta")


def _common(pp: argparse.ArgumentParser) -> None:
    c = pp.add_argument_group("audit")
    c.add_argument("--n", type=int_arg, required=False, help="number of users (default: the --pair data's size)")
    c.add_argument("--pair", nargs=2, metavar=("X", "X2"),
                   help="two neighbouring data specs (e.g. counts:1,0,99 counts:0,1,99); default: the protocol's "
                   "named worst case")
    c.add_argument("--eps", type=float_arg, required=True, help="epsilon at which delta is bounded below")
    c.add_argument("--delta", type=float_arg, help="also bound epsilon below at this delta")
    c.add_argument("--protocol-eps", dest="protocol_eps", type=float_arg,
                   help="the protocol's own eps option, where it has one (default: --eps); e.g. audit a central "
                   "eps = 1 mechanism at --eps 0.2")
    c.add_argument("--protocol-delta", dest="protocol_delta", type=float_arg,
                   help="the protocol's own delta option, where it has one (default: --delta)")
    c.add_argument("--trials", type=int_arg, default=200_000, help="samples per side (default: 200000)")
    c.add_argument("--seed", type=int_arg, default=0, help="root seed (default: 0)")
    c.add_argument("--alpha", type=float_arg, default=0.05, help="each lower bound holds w.p. >= 1 - alpha (default 0.05)")
    c.add_argument("--method", help="accountant method for the upper bound (default: the mechanism's first, tight)")
    c.add_argument("--leak", type=float_arg, default=0.0,
                   help="audit a deliberately broken randomiser that sends its true value with this probability "
                   "(default: 0, the protocol as specified)")
    c.add_argument("--yes", action="store_true", help="run even if the time estimate is above the limit")
    c.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from shufflesim.validation.audit import auditable

    p = sub.add_parser(
        "audit", help="empirical privacy audit: certified lower bound on delta(eps) vs the accountant",
        description="Sample the analyser's view (an exact sufficient statistic) under two neighbouring data sets, "
        "bound delta(eps) and eps(delta) below (Clopper-Pearson, threshold chosen on a held-out half) and compare "
        "with the accountant's upper bound. Protocols: " + ", ".join(auditable()) + ".",
        examples=("shufflesim audit krr --n 100 --k 2 --eps0 1 --eps 1 --trials 20000",),
        docs="README.md#verdicts-validate-audit-claims; docs/validation.md")
    add_protocol_parsers(p, _common, run, auditable(), shared=SHARED)


def run(args: argparse.Namespace) -> int:
    from shufflesim.core.checks import check_int
    from shufflesim.errors import ParameterError
    from shufflesim.pipeline import registry
    from shufflesim.validation.audit import run_audit, setup_for_protocol

    t0 = time.perf_counter()
    cls = registry.get(args.protocol)
    params = protocol_params(args)
    names = {o.name for o in cls.options}
    for flag, value, option in (("--protocol-eps", args.protocol_eps, "eps"),
                                ("--protocol-delta", args.protocol_delta, "delta")):
        if value is not None and option not in names:
            raise ParameterError(f"{flag}: {args.protocol} has no {option} option of its own")
    if "eps" in names:
        params["eps"] = args.eps if args.protocol_eps is None else args.protocol_eps
    own_delta = args.delta if args.protocol_delta is None else args.protocol_delta
    if "delta" in names and own_delta is not None:
        params["delta"] = own_delta
    check_int("seed", args.seed, minimum=0)
    pair_data = None
    if args.pair:
        from shufflesim.experiments.data import load_data

        pair_data = [load_data(s, data_kind="categorical", n=args.n, k=cls.data_k(params), rng=0) for s in args.pair]
        n = len(pair_data[0])
    elif args.n is None:
        raise ParameterError("give --n (the number of users) or --pair with two data sets")
    else:
        n = check_int("n", args.n, minimum=2)
    protocol = cls.create(n, **params)
    setup = setup_for_protocol(protocol, pair=pair_data, leak=args.leak)
    res = run_audit(setup, eps=args.eps, delta=args.delta, trials=args.trials, rng=args.seed, alpha=args.alpha,
                    yes=args.yes,
                    method=args.method)
    return finish(args, protocol, res, t0, _print)


def finish(args: argparse.Namespace, protocol, res: dict, t0: float, printer, **extra) -> int:
    """The tail shared by ``audit`` and ``validate``: the protocol, its parameters, ``extra`` fields, the seed,
    the result ``res`` and the run time, printed as one JSON object (``--json``) or by ``printer``."""
    out = {"protocol": protocol.name, "params": protocol.params, "n": protocol.n, **extra, "seed": args.seed,
           **res, "seconds": time.perf_counter() - t0}
    if args.json:
        print_json(out)
    else:
        printer(out)
    return 0


def _print(out: dict) -> None:
    print(f"audit {out['protocol']}  n={out['n']}  trials={out['trials']} per side  seed={out['seed']}  "
          f"alpha={out['alpha']:g}")
    print(f"pair        {out['pair']}")
    print(f"statistic   {out['statistic']}; {out['distinguisher']}")
    acc = out["accountant"] or {}
    du = acc.get("delta_upper")
    adversary = acc.get("params", {}).get("adversary")
    print(f"delta({out['eps']:g})  lower {out['delta_lower']:.6g}   accountant upper "
          f"{'n/a' if du is None else format(du, '.6g')} ({acc.get('method', 'n/a')}, {acc.get('mechanism', 'n/a')}"
          + (f", relation {adversary}" if adversary else "") + ")"
          + (f"   ratio {out['ratio']:.3g} (to the {out.get('ratio_to', 'upper bound')})"
             if "ratio" in out and out["ratio"] == out["ratio"] else ""))  # not 0/0
    if out.get("delta") is not None:
        eu = acc.get("eps_upper")
        print(f"eps({out['delta']:g})  lower {out['eps_lower']:.6g}   accountant upper "
              f"{'n/a' if eu is None else format(eu, '.6g')}")
    print(f"verdict     {out['verdict']}: {out['verdict_reason']}")
