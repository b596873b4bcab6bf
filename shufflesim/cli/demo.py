"""``shufflesim demo``: a quick shuffled k-RR study on the embedded Adult ages (the main job is
``shufflesim run scenarios/quickstart.toml``).

For ε0 in a small grid it runs T trials of shuffled k-RR (k age bins) and certifies the central (ε, δ)
each setting satisfies (tight accountant, strong adversary, δ = 1/n²); then it runs the central
analytic-Gaussian baseline at exactly that (ε, δ) — seed 003's shuffle-vs-central comparison.  It writes
tidy per-trial records and per-point summaries (Parquet with run metadata, and CSV), PNG plots (MSE of the
debiased counts against its exact expectation; TV distance of both distribution estimates) and prints the
summary table.  The study itself is shufflesim.studies.adult_demo.  Ctrl-C stops it promptly and keeps
the finished trials (marked complete: false).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shufflesim.cli._common import add_output_options, cap_workers, float_arg, int_arg, open_output, print_json

OUTPUT_FILES = ("records.parquet, summary.parquet (run metadata in their schema), records.csv, summary.csv, "
                "records.meta.json, summary.meta.json, mse_vs_eps0.png, tv_vs_eps.png")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="shuffled k-RR on the embedded Adult ages vs the central Gaussian baseline",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       examples=("shufflesim demo --output shufflesim-demo",),
                       docs="README.md#the-first-ten-minutes")
    p.add_argument("--k", type=int_arg, default=10, help="age bins (default: 10)")
    p.add_argument("--eps0", type=float_arg, nargs="+", default=[0.5, 1.0, 2.0, 4.0], help="local epsilons")
    p.add_argument("--trials", type=int_arg, default=200, help="trials per point (default: 200)")
    p.add_argument("--seed", type=int_arg, default=2026, help="root seed (default: 2026)")
    # one process by default: the study's 8 points take a few seconds of CPU, and each point's pool of worker
    # processes re-imports numpy/scipy/pandas - measured on a loaded 2-core machine, 152 s with 2 workers
    # against 21 s with 1 (issue 18); the results are identical for any number of workers
    p.add_argument("--workers", type=int_arg, default=1,
                   help="local worker processes (default: 1, the fastest for this small study; at most the CPUs)")
    add_output_options(p, OUTPUT_FILES, default="shufflesim-demo")
    p.add_argument("--yes", action="store_true", help="run even if the time estimate is above the limit")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shufflesim.core.checks import check_int
    from shufflesim.studies.adult_demo import check_demo_fits

    trials = check_int("trials", args.trials, minimum=1)
    workers = cap_workers(check_int("workers", args.workers, minimum=1))
    check_int("k", args.k, minimum=2)  # before the output folder is made (the data read k before the protocol)
    check_demo_fits(args.k, args.eps0, trials=trials, seed=args.seed, workers=workers, yes=args.yes)
    with open_output(args) as output:
        return _run(args, output, trials, workers)


def _run(args: argparse.Namespace, output, trials: int, workers: int) -> int:
    from shufflesim.experiments.progress import Progress
    from shufflesim.experiments.results_io import write_table
    from shufflesim.studies.adult_demo import run_demo

    progress = Progress(2 * len(args.eps0) * trials, enabled=False if args.json else None)
    try:
        res = run_demo(args.k, args.eps0, trials=trials, seed=args.seed, workers=workers,
                       on_progress=progress.update)
    finally:
        progress.close()
    out = output.path
    meta = dict(res.meta, run_id=output.run_id)
    written = []
    if len(res.records):
        written += write_table(res.records, out / "records", meta)
    if len(res.summary):
        written += write_table(res.summary, out / "summary", meta)
    if res.complete:
        try:
            written += _plots(res.summary[res.summary.protocol == "krr"], res.table, out, args.k)
        except ImportError:
            print("note: matplotlib is not installed; skipping plots (pip install 'shufflesim[plot]')",
                  file=sys.stderr)
    if args.json:
        print_json({"summary": res.table.to_dict(orient="records"), "output": str(out), "complete": res.complete})
    else:
        print(res.table.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
        names = ", ".join(p.name for p in written) or "nothing"
        print(f"\nwrote {out}/: {names}")
    if not res.complete:
        done = int(len(res.records))
        print(f"interrupted: kept the {done} finished trial(s) of {2 * len(args.eps0) * trials} "
              f"(metadata says complete: false); no plots", file=sys.stderr)
        return 130
    return 0


def _plots(s, table, out: Path, k: int) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shufflesim.experiments.plots import DRAWABLE_MAX, data_ticks, drawable, log_scale, plot_mse

    if not drawable(s.param_eps0, s.mse, s.mse_expected, table.eps, table.tv_shuffle, table.tv_gaussian):
        print(f"note: no plots: a value beyond {DRAWABLE_MAX:g} (eps0 = {s.param_eps0.max():g}) cannot be drawn on "
              "an axis", file=sys.stderr)
        return []
    n = int(s.n.iloc[0])
    plot_mse(s, "param_eps0", out / "mse_vs_eps0.png", xlabel="local ε0",
             title="shuffled k-RR, Adult ages")  # plot_mse adds n and k
    fig, ax = plt.subplots(figsize=(5.0, 3.6), dpi=150)
    t = table.sort_values("eps")
    ax.plot(t.eps, t.tv_shuffle, "o-", label="shuffle + INV (k-RR)")
    ax.plot(t.eps, t.tv_gaussian, "s--", label="central analytic Gaussian")
    log_scale(ax, "y", t[["tv_shuffle", "tv_gaussian"]].to_numpy())
    if log_scale(ax, "x", t.eps):
        data_ticks(ax.xaxis, t.eps)  # ticks at the certified eps, no overlapping minor labels
    ax.set_xlabel("central ε (certified, δ = 1/n²)")
    ax.set_ylabel("mean TV distance")
    ax.set_title(f"Adult ages in {k} bins, n={n}:\nshuffled k-RR vs the central Gaussian at the same (ε, δ)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    from shufflesim.experiments.outdir import atomic_path

    with atomic_path(out / "tv_vs_eps.png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return [out / "mse_vs_eps0.png", out / "tv_vs_eps.png"]
