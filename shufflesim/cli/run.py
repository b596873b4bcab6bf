"""shufflesim run: run a scenario file (scenarios/*.toml) into a directory with results, plots and report.md.

    shufflesim run scenarios/quickstart.toml --out shufflesim-quickstart
    shufflesim run --all --quick --out runs          # every scenario, small grids (CI)

The file is validated before anything runs; a scenario that would take long asks for --yes (or --quick).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shufflesim.cli._common import int_arg


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario file: results, plots and a report next to the paper's numbers",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       examples=("shufflesim run scenarios/quickstart.toml --out shufflesim-quickstart   # the main job",
                                 "shufflesim run scenarios/koskela_fig1.toml --out run-fig1",
                                 "shufflesim run --all --quick --check"),
                       docs="README.md#scenarios-one-command-per-paper-figure-or-table; scenarios/README.md")
    p.add_argument("scenario", nargs="?", help="a scenario file (TOML)")
    p.add_argument("--all", action="store_true", help="run every scenario of --dir (one sub-directory each)")
    p.add_argument("--dir", default="scenarios", help="where --all finds scenarios (default: scenarios)")
    p.add_argument("--out", help="output directory (default: run-STEM, or runs/ with --all)")
    p.add_argument("--quick", action="store_true", help="shrink trials and grids (all scenarios < 5 min)")
    p.add_argument("--workers", type=int_arg, default=1, help="local worker processes for the sweeps")
    p.add_argument("--scheduler", help="Dask scheduler address tcp://HOST:PORT for the sweeps")
    p.add_argument("--resume", action="store_true", help="continue the sweeps of an interrupted run")
    p.add_argument("--yes", action="store_true", help="run a scenario even if it would take long")
    p.add_argument("--check", action="store_true", help="only validate the file(s) and print the estimate")
    p.set_defaults(func=run)


def _bundled() -> Path | None:
    """The installed copy of scenarios/ (package ``shufflesim.scenarios.files``), if any; run from a source
    checkout (no installed copy: the package is the checkout's ``shufflesim/``), the checkout's scenarios/."""
    checkout = Path(__file__).resolve().parents[2] / "scenarios"
    if (checkout.parent / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    try:
        from importlib.resources import files

        p = Path(str(files("shufflesim.scenarios.files")))
    except (ImportError, ModuleNotFoundError, TypeError):
        return None
    return p if p.is_dir() else None


def _resolve(path: Path) -> Path:
    """``path`` if it exists, else the installed scenario of that name (``scenarios/NAME.toml``)."""
    if path.exists() or path.parent.name != "scenarios":
        return path
    b = _bundled()
    return b / path.name if b is not None and (b / path.name).exists() else path


def _resolve_dir(path: Path) -> Path:
    if path.is_dir() or path.name != "scenarios":
        return path
    return _bundled() or path


def run(args: argparse.Namespace) -> int:
    from shufflesim.cli._common import UsageError, cap_workers
    from shufflesim.scenarios.runner import estimate_seconds, run_scenario
    from shufflesim.scenarios.schema import load
    from shufflesim.scenarios.steps import check_runnable, estimate_range

    if args.all == bool(args.scenario):
        raise UsageError("shufflesim run: give either one SCENARIO file or --all")
    if args.workers < 1:
        raise UsageError(f"shufflesim run: --workers must be >= 1 (got {args.workers})")
    args.workers = cap_workers(args.workers)  # the sweeps' pool, as simulate/validate/sweep/demo cap theirs
    if args.out is not None and not args.out.strip():  # Path('') would be the current directory
        raise UsageError("shufflesim run: --out needs a directory name; got an empty string (omit --out for "
                         "run-STEM, or runs/ with --all)")
    if args.all:
        files = sorted(_resolve_dir(Path(args.dir)).glob("*.toml"))
        if not files:
            raise UsageError(f"shufflesim run --all: no scenario files (*.toml) in {args.dir}")
    else:
        files = [_resolve(Path(args.scenario))]
    if args.scheduler is not None:
        from shufflesim.experiments.backends import check_scheduler_address

        check_scheduler_address(args.scheduler)
    scenarios = [load(f) for f in files]  # every file validated before anything runs
    for sc in scenarios:  # and everything checkable in it (protocols, params, data, labels, claims, ...)
        check_runnable(sc, args.quick)
    if args.check:
        for sc in scenarios:
            print(f"{sc['_path']}: ok, {estimate_range(estimate_seconds(sc, args.quick))} "
                  f"({'quick' if args.quick else 'full'})")
        return 0
    if args.all:
        root = Path(args.out or "runs")
        outs = [root / sc["_stem"] for sc in scenarios]
    else:
        outs = [Path(args.out or f"run-{scenarios[0]['_stem']}")]
    if args.all and args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise UsageError(f"shufflesim run --all: --out {args.out} exists and is not a directory")
    if args.all and outs[0].parent.is_dir():  # each run checks its own folder; --all's folder holds them
        from shufflesim.experiments.outdir import check_no_links

        check_no_links(outs[0].parent)  # no link anywhere below --out (experiments/outdir.py)
    for out in outs:
        if args.resume and not out.is_dir():
            print(f"note: nothing to resume in {out} (no earlier run there); starting afresh", file=sys.stderr)
    total = 0.0
    for sc, out in zip(scenarios, outs):
        print(f"{sc['_path']}: {sc['title']} ({'quick' if args.quick else 'full'})", flush=True)
        meta = run_scenario(sc, out, quick=args.quick, workers=args.workers, scheduler=args.scheduler,
                            resume=args.resume, yes=args.yes,
                            log=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
        total += meta["seconds"]
        verdicts = ", ".join(f"{k}: {v}" for k, v in meta["verdicts"].items()) or "no registry claims"
        plots = f"{len(meta['plots'])} plot(s)" if not meta["plots_skipped"] else f"plots skipped ({meta['plots_skipped']})"
        print(f"  -> {out}/report.md  [{meta['seconds']:.1f} s; {plots}; {verdicts}]", flush=True)
    if args.all:
        lines = ["# Scenario runs", "", "| scenario | report |", "|---|---|"]
        lines += [f"| {sc['title']} | [{out.name}/report.md]({out.name}/report.md) |" for sc, out in zip(scenarios, outs)]
        from shufflesim.experiments.outdir import write_text

        write_text(outs[0].parent / "index.md", "\n".join(lines) + "\n")  # atomic: a link there is replaced
        print(f"{len(scenarios)} scenarios in {total:.1f} s -> {outs[0].parent}/index.md")
    return 0
