"""Paper-ready figures (matplotlib, optional extra ``plot``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def data_ticks(axis, values, digits: int = 3) -> None:
    """Major ticks of a (log) axis exactly at the data's x values, labelled with ``digits`` significant
    digits, and no minor tick labels: a log axis over about one decade otherwise labels its minor ticks
    too ("2×10⁻² 3×10⁻² 4×10⁻²…"), which overlap."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter

    ticks = sorted({float(v) for v in values})
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter([f"{v:.{digits}g}" for v in ticks]))
    axis.set_minor_formatter(NullFormatter())


def plot_mse(summary: pd.DataFrame, x: str, path: Path, *, title: str = "", xlabel: str | None = None,
             hue: str | None = None) -> Path:
    """Empirical MSE with its confidence interval against ``x``, with the exact expectation as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.6), dpi=150)
    groups = summary.groupby(hue) if hue else [(None, summary)]
    for label, g in groups:
        g = g.sort_values(x)
        yerr = [g["mse"] - g["mse_lo"], g["mse_hi"] - g["mse"]]
        ax.errorbar(g[x], g["mse"], yerr=yerr, fmt="o", capsize=3, label=f"{label} empirical" if label else "empirical (95% CI)")
        if g["mse_expected"].notna().any():
            ax.plot(g[x], g["mse_expected"], "-", lw=1, label=f"{label} exact" if label else "exact expectation")
    ax.set_xscale("log")
    data_ticks(ax.xaxis, summary[x].unique())
    ax.set_yscale("log")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel("mean squared error")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)  # off the data
    fig.tight_layout()
    from shufflesim.experiments.outdir import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", bbox_inches="tight")
    plt.close(fig)
    return path
