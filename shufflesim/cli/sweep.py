"""``shufflesim sweep PROTOCOL …``: a resumable parameter sweep streamed to disk (see
:mod:`shufflesim.experiments.sweep`).

Grid syntax: ``--set NAME=V1,V2,…`` gives a protocol parameter its values (repeat for several
parameters; the grid is their Cartesian product); list-valued parameters (``precisions``, ``gammas``)
separate their alternatives with ``;`` (``--set 'precisions=4,8;3,4'``).  ``--n`` and ``--data`` take
lists too (``--n 1e3,1e4``; ``--data 'uniform;zipf:1.1'``).  The same command with ``--resume``
continues after Ctrl-C, ``kill -9`` or a reboot.
"""

from __future__ import annotations

import argparse
import sys

from shufflesim.cli._common import cap_workers, float_arg, int_arg, print_json
from shufflesim.core.resources import time_limit
from shufflesim.errors import ParameterError
from shufflesim.pipeline import registry


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="resumable parameter sweep, streamed to disk",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                       examples=("shufflesim sweep krr --set k=2,10 --set eps0=0.5,1 --n 1e3,1e4 --trials 200 "
                                 "--output sweep1",
                                 "shufflesim sweep krr --set k=2,10 --set eps0=0.5,1 --n 1e3,1e4 --trials 200 "
                                 "--output sweep1 --resume"),
                       docs="README.md#sweeps-fast-engines-and-clusters")
    p.add_argument("protocol", metavar="PROTOCOL", help="a registered protocol (shufflesim simulate --help lists them)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V1,V2",
                   help="a protocol parameter and its values (repeatable)")
    p.add_argument("--n", default=None, help="numbers of users, comma-separated")
    p.add_argument("--data", default="uniform", help="data specs, ';'-separated (default: uniform)")
    p.add_argument("--trials", type=int_arg, default=100, help="trials per point (default: 100)")
    p.add_argument("--seed", type=int_arg, default=0, help="root seed (default: 0)")
    p.add_argument("--engine", choices=("faithful", "fast", "auto"), default="auto",
                   help="auto (default): the exact fast engine where the protocol has one")
    p.add_argument("--chunk-size", type=int_arg, default=1000, help="trials per chunk on disk (default: 1000)")
    p.add_argument("--backend", choices=("serial", "processes", "dask"), default="processes",
                   help="where chunks run (default: local processes)")
    p.add_argument("--workers", type=int_arg, default=1, help="local worker processes (default: 1)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask cluster (implies --backend dask)")
    p.add_argument("--output", metavar="DIR", required=True, help="sweep directory (parts, sweep.json, summary)")
    p.add_argument("--resume", action="store_true", help="continue the sweep already in DIR (same parameters)")
    p.add_argument("--level", type=float_arg, default=0.95, help="confidence level (default: 0.95)")
    p.add_argument("--json", action="store_true", help="print one JSON object; no progress bar")
    p.add_argument("--yes", action="store_true", help="run a sweep even if it is estimated to take long (> 10 min)")
    p.set_defaults(func=run)


def _values(opt, text: str) -> list:
    list_valued = getattr(opt.type, "__name__", "") in ("int_list", "float_list")
    items = [t for t in text.split(";" if list_valued else ",") if t.strip()]
    conv = {int: int_arg, float: float_arg}.get(opt.type, opt.type)
    try:
        vals = [conv(t.strip()) for t in items]
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise ParameterError(f"--set {opt.name}: {exc}") from None
    if opt.choices:
        bad = [v for v in vals if v not in opt.choices]
        if bad:
            raise ParameterError(f"--set {opt.name}: {bad[0]!r} is not one of {', '.join(map(str, opt.choices))}")
    return vals


def _attack_options() -> dict:
    from shufflesim.experiments.population import STRATEGIES
    from shufflesim.pipeline.options import Option

    return {"dishonest": Option("dishonest", float, "coalition size: a count or a fraction of n in (0, 1)"),
            "strategy": Option("strategy", str, "the coalition's strategy", choices=STRATEGIES),
            "direction": Option("direction", int, "+1 or -1", choices=(1, -1)),
            "target": Option("target", int, "krr: the attacked category")}


#: ``--set`` names that describe a deviating coalition (issue 23), not a protocol parameter
ATTACK_OPTIONS = _attack_options()


def build_sweep(args: argparse.Namespace):
    from shufflesim.experiments.sweep import Sweep, grid

    cls = registry.get(args.protocol)
    opts = {o.name: o for o in cls.options}
    params: dict = {}
    for item in args.sets:
        name, eq, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq or not text.strip():
            raise ParameterError(f"--set needs NAME=V1,V2,...; got {item!r}")
        if name in ATTACK_OPTIONS:  # issue 23: a deviating coalition as a grid axis (experiments/population.py)
            params[name] = _values(ATTACK_OPTIONS[name], text)
            continue
        if name not in opts:
            raise ParameterError(f"{args.protocol} has no parameter {name!r}; it has: {', '.join(opts)} (and the "
                                 f"coalition's {', '.join(ATTACK_OPTIONS)})")
        params[name] = _values(opts[name], text)
    try:
        ns = [int_arg(t.strip()) for t in args.n.split(",")] if args.n else [None]
    except argparse.ArgumentTypeError as exc:
        raise ParameterError(f"--n: {exc}") from None
    datas = [d.strip() for d in args.data.split(";") if d.strip()]
    pts = grid(args.protocol, data=datas, n=ns, **params)
    return Sweep(tuple(pts), trials=args.trials, seed=args.seed, engine=args.engine)


def run(args: argparse.Namespace) -> int:
    from shufflesim.core.checks import check_int
    from shufflesim.experiments.sweep import run_sweep

    import math
    from pathlib import Path

    from shufflesim.experiments.outdir import check_dir_name

    check_dir_name(args.output, "--output")
    check_int("trials", args.trials, minimum=1)
    check_int("seed", args.seed, minimum=0)
    check_int("chunk_size", args.chunk_size, minimum=1)
    if not (math.isfinite(args.level) and 0.0 < args.level < 1.0):
        raise ParameterError(f"--level must be a confidence level in (0, 1), e.g. 0.95; got {args.level!r}")
    if args.scheduler is not None:
        from shufflesim.experiments.backends import check_scheduler_address

        check_scheduler_address(args.scheduler)
    workers = cap_workers(check_int("workers", args.workers, minimum=1))
    sweep = build_sweep(args)
    est = estimate_seconds(sweep, workers)
    if est > time_limit(yes=args.yes):  # the one time limit (core.resources; SHUFFLESIM_TIME_LIMIT sets it)
        raise ParameterError(f"this sweep of {len(sweep.points)} points x {sweep.trials} trials would take about "
                             f"{est / 60:.0f} minutes on {workers} worker(s); pass --yes to run it (or fewer points "
                             "or trials)")
    if args.resume and not (Path(args.output) / "sweep.json").exists():
        print(f"note: nothing to resume in {args.output} (no sweep there); starting a new sweep", file=sys.stderr)
    res = run_sweep(sweep, args.output, backend=args.backend, workers=workers, scheduler=args.scheduler,
                    chunk_size=args.chunk_size, resume=args.resume, progress=False if args.json else None,
                    level=args.level)
    out = {"sweep_hash": sweep.hash, "output": str(res.path), "complete": res.complete, "points": len(sweep.points),
           "trials": sweep.trials, "engine": sweep.engine, **res.backend, "chunks": res.chunks_total,
           "chunks_reused": res.chunks_reused, "chunks_recomputed": res.chunks_recomputed,
           "summary": res.summary.to_dict(orient="records")}
    for why in res.chunks_recomputed:
        print(f"warning: recomputed {why}", file=sys.stderr)
    plot = "no plot (interrupted)"
    if res.complete:
        given = ["param_" + item.partition("=")[0].strip().replace("-", "_") for item in args.sets]
        plot = plot_summary(res.summary, res.path / "summary.png", args.level, args.protocol, given)
        out["plot"] = str(res.path / "summary.png") if plot.startswith("plot ") else None
    if args.json:
        print_json(out)
    elif res.complete:
        import pandas as pd

        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(with_intervals(res.summary, args.level).to_string(index=False))
        print(f"sweep {sweep.hash}: {len(sweep.points)} points x {sweep.trials} trials in {res.path} "
              f"({res.chunks_reused} of {res.chunks_total} chunks reused); {plot}")
    if not res.complete:
        print(f"error: interrupted; the finished chunks are in {res.path}: run the same command with --resume",
              file=sys.stderr)
        return 130
    return 0




def estimate_seconds(sweep, workers: int) -> float:
    """A rough run-time estimate (the scenarios' rule: ~0.2 ms a fast-engine trial, plus ~0.1 µs a user and trial on
    the faithful engine, and half a second of set-up a point, which runs before the workers start)."""
    per_trial = sum(2e-4 + (1e-7 * (p.n or 0) if sweep.engine == "faithful" else 0.0) for p in sweep.points)
    return 0.5 * len(sweep.points) + sweep.trials * per_trial / max(1, workers)


def with_intervals(summary, level: float):
    """The summary with every ``X, X_lo, X_hi`` triple shown as one column ``X [level CI]`` = ``v [lo, hi]``."""
    df = summary.copy()
    for col in [c for c in summary.columns if f"{c}_lo" in summary.columns and f"{c}_hi" in summary.columns]:
        df[col] = [f"{v:.6g} [{lo:.6g}, {hi:.6g}]" if lo == lo and hi == hi and lo is not None and hi is not None
                   else f"{v:.6g} [n/a: 1 trial]" for v, lo, hi in
                   zip(summary[col], summary[f"{col}_lo"], summary[f"{col}_hi"])]
        df = df.rename(columns={col: f"{col} [{level:.4g} CI]"}).drop(columns=[f"{col}_lo", f"{col}_hi"])
    return df


def plot_summary(summary, path, level: float, protocol: str, given: list[str]) -> str:
    """The sweep's MSE with its intervals (and the exact expectation) against n, or against the first varied
    numeric ``--set`` parameter (``given``: their summary columns) when n is fixed; one series per combination of
    the other varied ones and data.  Returns what was written, for the last line of the output."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "no plot (matplotlib is not installed: pip install 'shufflesim[plot]')"
    from shufflesim.experiments.plots import plot_mse

    varied = [c for c in dict.fromkeys([*given, "data"]) if c in summary.columns and summary[c].nunique() > 1]
    x = "n"
    if summary["n"].nunique() == 1:
        numeric = [c for c in varied if c.startswith("param_") and summary[c].map(
            lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0).all()]
        x = numeric[0] if numeric else "n"
    others = [c for c in varied if c != x] + (["n"] if x != "n" and summary["n"].nunique() > 1 else [])
    df = summary.copy()
    hue = None
    if others:
        df["series"] = df[others].apply(lambda r: ", ".join(
            f"{c.removeprefix('param_')}={v:g}" if isinstance(v, float) else f"{c.removeprefix('param_')}={v}"
            for c, v in r.items()), axis=1)
        hue = "series"
    plot_mse(df, x, path, title=f"{protocol}: empirical MSE ({level:.4g} CI) and exact expectation",
             xlabel="number of users n" if x == "n" else x.removeprefix("param_"), hue=hue)
    return f"plot {path}"
