"""``shufflesim validate PROTOCOL …``: Monte-Carlo squared errors tested against the protocol's theory.

See :mod:`shufflesim.validation.mse` for the tests (bootstrap-t, Holm) and docs/validation.md for why.
"""

from __future__ import annotations

import argparse
import time

from shufflesim.cli._common import float_arg, int_arg
from shufflesim.cli._protocol_args import add_data_options, add_protocol_parsers, protocol_params


def _common(pp: argparse.ArgumentParser) -> None:
    c = pp.add_argument_group("validation")
    add_data_options(c, trials=400)
    c.add_argument("--alpha", type=float_arg, default=0.05, help="family-wise level of the checks (default: 0.05)")
    c.add_argument("--rel-effect", dest="rel_effect", type=float_arg, default=0.05,
                   help="alternative for the power statement: relative deviation from the theory value (default: 0.05)")
    c.add_argument("--workers", type=int_arg, default=1, help="local worker processes (default: 1)")
    c.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate", help="test a protocol's Monte-Carlo MSE against its theory (consistent / violated / inconclusive)",
        description="Run T trials and test H0: E[sq error] = mse_expected (two-sided), mse <= mse_worst and "
        "mse <= mse_bound (one-sided): bootstrap-t p-values, Holm correction, power and trials needed.")
    add_protocol_parsers(p, _common, run)


def run(args: argparse.Namespace) -> int:
    from shufflesim.cli._common import cap_workers
    from shufflesim.core.checks import check_int
    from shufflesim.core.rng import as_seed_sequence, data_seed
    from shufflesim.errors import ParameterError
    from shufflesim.experiments.data import load_data, parse_data_spec
    from shufflesim.pipeline import registry
    from shufflesim.validation.mse import validate_protocol

    t0 = time.perf_counter()
    cls = registry.get(args.protocol)
    params = protocol_params(args)
    check_int("seed", args.seed, minimum=0)
    root = as_seed_sequence(args.seed)
    spec = parse_data_spec(args.data)
    if args.n is None and spec.kind not in ("file", "counts", "adult-age"):
        raise ParameterError(f"--n is required with the synthetic data spec {args.data!r} (n >= 1)")
    if args.n is not None:
        cls.create(check_int("n", args.n, minimum=1), **params)
    data = load_data(spec, data_kind=cls.data_kind, n=args.n, k=cls.data_k(params), rng=data_seed(root),
                     lower=args.lower, upper=args.upper)
    protocol = cls.create(len(data), **params)
    res = validate_protocol(protocol, data, trials=args.trials, rng=root, alpha=args.alpha,
                            rel_effect=args.rel_effect, workers=cap_workers(check_int("workers", args.workers, minimum=1)))
    from shufflesim.cli.audit import finish  # the output tail audit and validate share

    return finish(args, protocol, res, t0, _print, data=args.data)


def _print(out: dict) -> None:
    print(f"validate {out['protocol']}  n={out['n']}  data={out['data']}  trials={out['trials']}  seed={out['seed']}  "
          f"alpha={out['alpha']:g} (Holm)")
    print(f"{'check':<13} {'theory':>12} {'mse':>12} {'interval':>27} {'p-value':>9} {'power':>6}  verdict")
    for c in out["checks"]:
        lo, hi = c["interval"]
        iv = f"[{lo:.6g}, {hi:.6g}]"
        extra = f" (trials needed for power 0.8: {c['trials_needed']})" if "trials_needed" in c else ""
        print(f"{c['check']:<13} {c['theory']:>12.6g} {c['mse']:>12.6g} {iv:>27} {c['p_value']:>9.3g} "
              f"{c['power']:>6.2f}  {c['verdict']}{extra}")
    if not out["checks"]:
        print("(the protocol gives no theory value to check)")
    print(f"verdict  {out['verdict']}   alternative for power: relative deviation {out['rel_effect']:g}")
    print(f"method   {out['method']}")
