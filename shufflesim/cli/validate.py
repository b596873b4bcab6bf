"""``shufflesim validate PROTOCOL …``: a protocol's theory checked exactly, then against Monte-Carlo trials
until every check is decided; ``shufflesim validate --all``: every protocol at a few settings, as a table.

See :mod:`shufflesim.validation.mse` (the checks and verdicts), :mod:`shufflesim.validation.sequential`
(the anytime-valid confidence sequence) and docs/validation.md#mse-test.
"""

from __future__ import annotations

import argparse
import sys
import time

from shufflesim.cli._common import float_arg, int_arg
from shufflesim.cli._protocol_args import add_data_options, add_protocol_parsers, protocol_params

#: --max-seconds when it is not given: one PROTOCOL's sequential run, and each setting of --all
MAX_SECONDS = 60.0
ALL_MAX_SECONDS = 20.0


def _budget(c: argparse._ArgumentGroup, *, inherited: bool = False) -> None:
    """The sequential design's options.  The ``validate`` parser holds them with their defaults; the PROTOCOL
    sub-parser's copies (``inherited``) set nothing unless given there, so a value given before PROTOCOL
    (``validate --max-seconds 5 krr ...``) is the one in effect, not the sub-parser's default."""
    def default(value):
        return argparse.SUPPRESS if inherited else value

    c.add_argument("--alpha", type=float_arg, default=default(0.05),
                   help="family-wise error of all checks over all looks (default: 0.05)")
    c.add_argument("--margin", type=float_arg, default=default(0.02),
                   help="'agrees' means within this relative deviation of mse_expected (default: 0.02 = ±2 %%)")
    c.add_argument("--engine", choices=("auto", "fast", "faithful"), default=default("auto"),
                   help="fast: the exact sufficient-statistic sampler; faithful: every message; auto (default): "
                        "fast where the protocol has one")
    c.add_argument("--max-trials", dest="max_trials", type=int_arg, default=default(10**7),
                   help="sequential design: stop undecided after this many trials (default: 1e7)")
    c.add_argument("--max-seconds", dest="max_seconds", type=float_arg, default=default(None), metavar="S",
                   help=f"sequential design: stop undecided after S seconds of simulation (default: {MAX_SECONDS:g} "
                        f"for one PROTOCOL, {ALL_MAX_SECONDS:g} for each setting of --all; a run stopped by it is "
                        "not reproducible to the trial)")


def max_seconds(args: argparse.Namespace, default: float) -> float:
    """The --max-seconds in effect: the one given, else ``default``."""
    return default if args.max_seconds is None else args.max_seconds


def _common(pp: argparse.ArgumentParser) -> None:
    c = pp.add_argument_group("validation")
    add_data_options(c, trials=0)
    for a in c._group_actions:  # no trial count by default: the sequential design decides when to stop
        if a.dest == "trials":
            a.default = None
            a.help = "a fixed-size run of this many trials (default: sequential, until every check is decided)"
    _budget(c, inherited=True)
    c.add_argument("--workers", type=int_arg, default=1,
                   help="local worker processes (default: 1)")
    c.add_argument("--yes", action="store_true",
                   help="a fixed-size faithful run (--trials) even when its estimated time is above the time limit "
                        "(default: 600 s; SHUFFLESIM_TIME_LIMIT sets it)")
    c.add_argument("--plant-error", dest="plant_error", type=float_arg, default=0.0, metavar="REL",
                   help="multiply every theory value by 1 + REL: a deliberately wrong theory, to see it caught")
    c.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate", help="test a protocol's Monte-Carlo MSE against its theory (agrees / holds / violated)",
        description="Exact theory first (a bound below the exact expected MSE is violated, one above the exact "
        "worst case holds), then Monte-Carlo trials in batches until every check is decided: mse_expected as an "
        "equivalence check (within ±margin), bounds as one-sided checks, one anytime-valid confidence sequence "
        "for all of them; an exact verdict the simulation contradicts reads 'disagrees'. --all validates every "
        "protocol at a few settings and writes a table.",
        examples=("shufflesim validate krr --n 1000 --k 4 --eps0 1",
                  "shufflesim validate --all --output validation.md"),
        docs="README.md#verdicts-validate-audit-claims; docs/validation.md")
    p.add_argument("--all", action="store_true", help="validate every protocol at a few settings (a table)")
    g = p.add_argument_group("--all")
    g.add_argument("--output", metavar="FILE", help="with --all: also write the table (Markdown) to FILE")
    g.add_argument("--seed", dest="all_seed", type=int_arg, default=0, help="with --all: root seed (default: 0)")
    g.add_argument("--json", dest="all_json", action="store_true", help="with --all: print one JSON object")
    _budget(g)
    add_protocol_parsers(p, _common, run)
    for a in p._subparsers._group_actions:  # PROTOCOL is optional with --all
        if isinstance(a, argparse._SubParsersAction):
            a.required = False
    p.set_defaults(func=run_all)


def _tty() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class _Status:
    """One status line on a terminal: trials, time, the interval, what is undecided and an ETA."""

    def __init__(self, enabled: bool, label: str = ""):
        self.enabled, self.label, self.width = enabled, label, 0

    def __call__(self, st: dict) -> None:
        if not self.enabled:
            return
        rate = st["trials"] / st["seconds"] if st["seconds"] > 0 else float("inf")
        need = st["trials_needed"]
        if not st["undecided"]:
            eta = "decided"
        elif need is None:
            eta = "ETA ?"
        else:
            left = max(0, need - st["trials"])
            secs = left / rate if rate > 0 else float("inf")
            if st["max_seconds"] is not None:
                secs = min(secs, max(0.0, st["max_seconds"] - st["seconds"]))
            eta = f"ETA {secs:.1f} s (~{min(need, st['max_trials']):,} trials)"
        lo, hi = st["interval"]
        line = (f"{self.label}{st['trials']:,} trials  {st['seconds']:.1f} s  mse in [{lo:.6g}, {hi:.6g}]  "
                f"undecided: {', '.join(st['undecided']) or '-'}  {eta}")
        sys.stderr.write("\r" + line.ljust(self.width))
        self.width = len(line)
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from shufflesim.cli._common import cap_workers
    from shufflesim.core.checks import ALPHA_PRECISION, check_int, check_real
    from shufflesim.core.rng import as_seed_sequence, data_seed
    from shufflesim.errors import ParameterError
    from shufflesim.experiments.data import load_data, parse_data_spec
    from shufflesim.cli.simulate import as_summary_path, summary_data
    from shufflesim.pipeline import registry
    from shufflesim.pipeline.fast import resolve_engine
    from shufflesim.validation.mse import validate_protocol

    t0 = time.perf_counter()
    if args.all:
        raise ParameterError("validate: --all takes no PROTOCOL (it validates every protocol)")
    cls = registry.get(args.protocol)
    params = protocol_params(args)
    check_int("seed", args.seed, minimum=0)
    check_real("alpha", args.alpha, low=0.0, high=1.0, low_open=True, high_open=True,
               precise=ALPHA_PRECISION)
    check_real("margin", args.margin, low=0.0, high=1.0, low_open=True, high_open=True)
    check_real("plant_error", args.plant_error, low=-1.0, high=1.0, low_open=True, high_open=True)
    if args.trials is None:
        check_int("max_trials", args.max_trials, minimum=1024)
        check_real("max_seconds", max_seconds(args, MAX_SECONDS), low=0.0, low_open=True)
    else:
        check_int("trials", args.trials, minimum=3)
    workers = cap_workers(check_int("workers", args.workers, minimum=1))
    root = as_seed_sequence(args.seed)
    spec = parse_data_spec(args.data)
    if args.n is None and spec.kind not in ("file", "counts", "adult-age"):
        raise ParameterError(f"--n is required with the synthetic data spec {args.data!r} (n >= 1)")
    if args.n is not None:
        probe = cls.create(check_int("n", args.n, minimum=1), **params)
        resolve_engine(probe, args.engine)  # refuse --engine fast before any work
    if as_summary_path(cls, spec, args):  # issue 29: the fast engine at n = 1e9 reads counts, never n rows
        data = summary_data(cls, spec, args, cls.data_k(params), data_seed(root))
        protocol = probe if args.n is not None and args.n == data.n else cls.create(data.n, **params)
    else:
        data = load_data(spec, data_kind=cls.data_kind, n=args.n, k=cls.data_k(params), rng=data_seed(root),
                         lower=args.lower, upper=args.upper)
        protocol = cls.create(len(data), **params)
    engine = resolve_engine(protocol, args.engine)  # refuse --engine fast before any work
    if engine == "faithful" and args.trials is not None:  # issue 29: a fixed run's time, before it starts
        from shufflesim.cli.simulate import check_faithful_fits
        from shufflesim.experiments.montecarlo import faithful_seconds

        check_faithful_fits(protocol, args, trials=args.trials, label="the faithful engine",
                            seconds=faithful_seconds(protocol, data, root, trials=args.trials, workers=workers))
    elif args.trials is not None:  # the fast engine's time and records grow with the trials: the same policy
        from shufflesim.cli.simulate import check_fast_fits

        check_fast_fits(protocol, args, data, root, trials=args.trials, workers=workers)
    status = _Status(_tty() and not args.json and args.trials is None)
    progress = None
    if args.trials is not None and not args.json:
        from shufflesim.experiments.progress import Progress

        progress = Progress(args.trials)
    try:
        res = validate_protocol(protocol, data, trials=args.trials, rng=root, alpha=args.alpha, margin=args.margin,
                                engine=args.engine, max_trials=args.max_trials,
                                max_seconds=max_seconds(args, MAX_SECONDS),
                                workers=workers, planted_error=args.plant_error,
                                on_progress=progress.update if progress else None, on_look=status)
    finally:
        status.close()
        if progress:
            progress.close()
    from shufflesim.cli.audit import finish  # the output tail audit and validate share

    return finish(args, protocol, res, t0, _print, data=args.data)


def _verdict_text(c: dict) -> str:
    v = c["verdict"]
    if v == "undecided" and c.get("trials_needed"):
        return f"undecided (about {c['trials_needed']:,} trials would decide it)"
    if v == "undecided":
        return v
    p = c.get("p_value")  # the sequential design's anytime-valid p-value of the verdict reached
    return f"{v} ({c['basis']}, anytime p = {p:.2g})" if p is not None else f"{v} ({c['basis']})"


def _print(out: dict) -> None:
    design = ("sequential" if out["design"] == "sequential" else f"fixed {out['trials']} trials")
    planted = f"  PLANTED ERROR {out['planted_error']:+g}" if out.get("planted_error") else ""
    print(f"validate {out['protocol']}  n={out['n']}  data={out['data']}  seed={out['seed']}  engine={out['engine']}  "
          f"{design}  alpha={out['alpha']:g}  margin=±{100 * out['margin']:g} %{planted}")
    print(f"{'check':<13} {'theory':>12}  verdict")
    for c in out["checks"]:
        print(f"{c['check']:<13} {c['theory']:>12.6g}  {_verdict_text(c)}: {c['reason']}")
    if not out["checks"]:
        print("(the protocol gives no theory value to check)")
    lo, hi = out["interval"]
    if out["trials"]:
        stop = f"; stopped: {out['stopped']}, {out['looks']} looks" if out["design"] == "sequential" else ""
        print(f"simulated {out['trials']:,} trials in {out['seconds']:.2f} s{stop}: mse {out['mse']:.6g}, "
              f"{out['interval_level']:g} interval [{lo:.6g}, {hi:.6g}]")
    else:
        print("simulated nothing: exact theory decided every check")
    print(f"verdict  {out['verdict']}")
    print(f"meaning  {out['meaning']}")
    print(f"method   {out['method']}")


# --------------------------------------------------------------------------------------------------------
def run_all(args: argparse.Namespace) -> int:
    from shufflesim.core.checks import ALPHA_PRECISION, check_int, check_real
    from shufflesim.errors import ParameterError
    from shufflesim.validation.suite import render_markdown, validate_all

    if not args.all:
        raise ParameterError("validate: name a PROTOCOL (see shufflesim validate --help) or use --all")
    check_int("seed", args.all_seed, minimum=0)
    check_real("alpha", args.alpha, low=0.0, high=1.0, low_open=True, high_open=True,
               precise=ALPHA_PRECISION)
    check_real("margin", args.margin, low=0.0, high=1.0, low_open=True, high_open=True)
    check_int("max_trials", args.max_trials, minimum=1024)
    check_real("max_seconds", max_seconds(args, ALL_MAX_SECONDS), low=0.0, low_open=True)
    if args.output is not None:
        from pathlib import Path

        out_path = Path(args.output)
        if out_path.exists() and out_path.is_dir():
            raise ParameterError(f"--output {args.output!r} is a directory; give a file name")
        if not out_path.parent.exists():
            raise ParameterError(f"--output: directory {str(out_path.parent)!r} does not exist")
    status = _Status(_tty() and not args.all_json)
    t0 = time.perf_counter()
    try:
        rows = validate_all(seed=args.all_seed, alpha=args.alpha, margin=args.margin, engine=args.engine,
                            max_trials=args.max_trials, max_seconds=max_seconds(args, ALL_MAX_SECONDS), on_look=status,
                            on_setting=lambda label: setattr(status, "label", f"{label}: "))
    finally:
        status.close()
    table = render_markdown(rows, alpha=args.alpha, margin=args.margin, seed=args.all_seed)
    if args.output is not None:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(table)
    if args.all_json:
        from shufflesim.cli._common import print_json

        print_json({"rows": rows, "alpha": args.alpha, "margin": args.margin, "seed": args.all_seed,
                    "seconds": time.perf_counter() - t0})
    else:
        print(table, end="")
    return 0
