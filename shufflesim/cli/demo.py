"""``shufflesim demo``: the main job — a quick shuffled k-RR study on the embedded Adult ages.

For ε0 in a small grid it runs T trials of shuffled k-RR (k age bins) and certifies the central (ε, δ)
each setting satisfies (tight accountant, strong adversary, δ = 1/n²); then it runs the central
analytic-Gaussian baseline at exactly that (ε, δ) — seed 003's shuffle-vs-central comparison.  It writes
tidy per-trial records and per-point summaries (Parquet with run metadata, and CSV), PNG plots (MSE of the
debiased counts against its exact expectation; TV distance of both distribution estimates) and prints the
summary table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from shufflesim.experiments.progress import Progress
from shufflesim.core.rng import as_seed_sequence, seed_metadata
from shufflesim.experiments.study import run_grid
from shufflesim.cli._common import float_arg, int_arg, print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="quick shuffled k-RR study on the embedded Adult ages (the main job)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k", type=int_arg, default=10, help="age bins (default: 10)")
    p.add_argument("--eps0", type=float_arg, nargs="+", default=[0.5, 1.0, 2.0, 4.0], help="local epsilons")
    p.add_argument("--trials", type=int_arg, default=200, help="trials per point (default: 200)")
    p.add_argument("--seed", type=int_arg, default=2026, help="root seed (default: 2026)")
    p.add_argument("--workers", type=int_arg, default=2, help="local worker processes (default: 2)")
    p.add_argument("--output", type=Path, default=Path("shufflesim-demo"), help="output directory")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shufflesim.experiments.results_io import write_table

    points = [{"k": args.k, "eps0": e} for e in args.eps0]
    total = 2 * len(points) * args.trials
    progress = Progress(total, enabled=False if args.json else None)
    shuf = run_grid("krr", points, data="adult-age", n=None, trials=args.trials, rng=args.seed,
                    workers=args.workers, on_progress=progress.update)
    # the central baseline at the (eps, delta) the shuffled protocol was certified for
    central_points = [{"k": args.k, "eps": r.privacy_eps, "delta": r.privacy_delta}
                      for r in shuf.summary.itertuples()]
    cent = run_grid("central-gaussian-hist", central_points, data="adult-age", n=None, trials=args.trials,
                    rng=args.seed, workers=args.workers, on_progress=progress.update)
    progress.close()
    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    complete = shuf.complete and cent.complete
    meta = {"study": "demo: shuffled k-RR vs central analytic Gaussian on Adult ages", "data": "adult-age",
            "points": points, "trials": args.trials, "seed": args.seed, "workers": args.workers,
            "seed_sequence": seed_metadata(as_seed_sequence(args.seed)), "complete": complete,
            "privacy": "tight accountant, k-RR strong adversary pair, delta = 1/n^2"}
    records = pd.concat([shuf.records, cent.records], ignore_index=True)
    summary = pd.concat([shuf.summary, cent.summary], ignore_index=True)
    summary["covers"] = (summary.mse_lo <= summary.mse_expected) & (summary.mse_expected <= summary.mse_hi)
    write_table(records, out / "records", meta)
    write_table(summary, out / "summary", meta)
    s = shuf.summary.assign(covers=(shuf.summary.mse_lo <= shuf.summary.mse_expected)
                            & (shuf.summary.mse_expected <= shuf.summary.mse_hi))
    table = pd.DataFrame({
        "eps0": s.param_eps0, "gamma": s.param_gamma, "eps": s.privacy_eps, "delta": s.privacy_delta,
        "mse": s.mse, "mse_lo": s.mse_lo, "mse_hi": s.mse_hi, "mse_expected": s.mse_expected, "covers": s.covers,
        "tv_shuffle": s.tv, "tv_gaussian": cent.summary.tv.to_numpy(),
    })
    try:
        _plots(s, table, out, args.k)
    except ImportError:
        print("note: matplotlib is not installed; skipping plots (pip install 'shufflesim[plot]')", file=sys.stderr)
    if args.json:
        print_json({"summary": table.to_dict(orient="records"), "output": str(out), "complete": complete})
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
        print(f"\nwrote {out}/records.parquet, summary.parquet (+csv, meta.json), mse_vs_eps0.png, tv_vs_eps.png")
    return 0 if complete else 130


def _plots(s: pd.DataFrame, table: pd.DataFrame, out: Path, k: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shufflesim.experiments.plots import plot_mse

    n = int(s.n.iloc[0])
    plot_mse(s, "param_eps0", out / "mse_vs_eps0.png", xlabel="local ε0",
             title=f"shuffled k-RR, Adult ages in {k} bins, n={n}")
    fig, ax = plt.subplots(figsize=(5.0, 3.6), dpi=150)
    t = table.sort_values("eps")
    ax.plot(t.eps, t.tv_shuffle, "o-", label="shuffle + INV (k-RR)")
    ax.plot(t.eps, t.tv_gaussian, "s--", label="central analytic Gaussian")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("central ε (certified, δ = 1/n²)")
    ax.set_ylabel("mean TV distance")
    ax.set_title(f"same (ε, δ): shuffle vs central, n={n}, k={k}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "tv_vs_eps.png")
    plt.close(fig)
