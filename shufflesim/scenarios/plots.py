"""The scenario plots (matplotlib, the optional ``plot`` extra): one PNG per figure.

Legends sit below the axes, outside the data, so that no curve or error bar is ever hidden behind them.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

Y_LABELS = {"mse": "MSE (95% CI; dotted: exact)", "rmse": "root MSE", "rmse_mean": "root MSE of the mean (95% CI)",
            "mse_expected": "exact MSE", "tv": "TV distance to the true distribution (95% CI)"}


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fig():
    plt = _pyplot()
    return plt, *plt.subplots(figsize=(5.6, 3.9), dpi=110)


def legend_below(ax, fontsize: float = 7) -> None:
    """The legend under the axes (outside the data), in two columns when the labels are short."""
    handles, labels = ax.get_legend_handles_labels()
    if not labels:
        return
    ncol = 2 if max(len(lb) for lb in labels) <= 34 and len(labels) > 2 else 1
    height = ax.get_position().height * ax.figure.get_figheight()  # inches
    ax.legend(handles, labels, fontsize=fontsize, loc="upper center", bbox_to_anchor=(0.5, -0.45 / height),
              ncol=ncol, frameon=False)


def _save(plt, fig, path: Path) -> Path:
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_sweeps(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    plt, fig, ax = _fig()
    s0 = steps[0]
    for s in steps:
        df = frames[s["name"]]
        xcol = "n" if s["x"] == "n" else f"param_{s['x']}"
        for label, g in df.groupby("label", sort=False):
            g = g.sort_values(xcol)
            y = g[s["y"]]
            if s["y"] == "tv" and "tv_lo" in g:
                ax.errorbar(g[xcol], y, yerr=[y - g["tv_lo"], g["tv_hi"] - y], fmt="o-", ms=4, capsize=3, label=label)
            elif s["y"] in ("mse", "rmse", "rmse_mean"):
                lo, hi = g["mse_lo"].clip(lower=0), g["mse_hi"]
                if s["y"] != "mse":
                    lo, hi = np.sqrt(lo), np.sqrt(hi)
                if s["y"] == "rmse_mean":
                    lo, hi = lo / g["n"], hi / g["n"]
                ax.errorbar(g[xcol], y, yerr=[y - lo, hi - y], fmt="o-", ms=4, capsize=3, label=label)
                if s["y"] == "mse" and g["mse_expected"].notna().any():
                    ax.plot(g[xcol], g["mse_expected"], ":", color="grey", lw=1)
            else:
                ax.plot(g[xcol], y, "o-", ms=4, label=label)
    if s0["logx"]:
        ax.set_xscale("log")
    if s0["logy"]:
        ax.set_yscale("log")
    ax.set_xlabel(s0["xlabel"] or ("number of users n" if s0["x"] == "n" else s0["x"]))
    ax.set_ylabel(s0["ylabel"] or Y_LABELS[s0["y"]])
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax)
    return _save(plt, fig, path)


def plot_curves(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """δ(ε) curves, or ε(δ) against a mechanism flag (``x`` = 'eps0', ...)."""
    plt, fig, ax = _fig()
    styles = itertools.cycle(["-", "--", "-.", ":"])
    s0 = steps[0]
    vs_flag = s0["x"] != "eps"
    for s in steps:
        df = frames[s["name"]]
        ls = next(styles)
        for label, g in df.groupby("label", sort=False):
            if vs_flag:
                g = g[g["applicable"] & np.isfinite(g["eps_upper"].astype(float))]
                if len(g):
                    ax.plot(g["x"], g["eps_upper"], ls, marker="o", ms=3, label=label)
            else:
                g = g[g["applicable"] & (g["delta_upper"] > 0) & (g["delta_upper"] <= 1)]  # δ > 1 is vacuous
                if len(g):
                    ax.plot(g["eps"], g["delta_upper"], ls, marker=".", ms=3, label=label)
    if s0["logy"]:
        ax.set_yscale("log")
    if s0["ymin"]:
        ax.set_ylim(bottom=s0["ymin"], top=None if vs_flag else 1.5)
    if vs_flag:
        ax.set_xlabel(s0["xlabel"] or {"eps0": "local ε0"}.get(s0["x"], s0["x"]))
        ax.set_ylabel(s0["ylabel"] or f"ε at δ = {s0['delta']:.3g} (upper bound)")
    else:
        ax.set_xlabel(s0["xlabel"] or "ε")
        ax.set_ylabel(s0["ylabel"] or "δ(ε) (upper bound)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, 6.5)
    return _save(plt, fig, path)


def plot_training(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    plt, fig, ax = _fig()
    for s in steps:
        for label, g in frames[s["name"]].groupby("label", sort=False):
            ax.plot(g["round"], g["accuracy"], "o-", ms=3, label=label)
    ax.set_xlabel("round (0: the initial model)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    legend_below(ax)
    return _save(plt, fig, path)


def plot_heatmaps(steps: list[dict], maps: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """The true cell distribution and one run's estimate of every step, as heatmaps on the step's grid
    (cell = row × columns + column, row 0 at the bottom), one row of panels per n, one square-root colour
    scale (so that the sparse cells stay visible next to the dense ones)."""
    import textwrap

    from matplotlib.colors import PowerNorm

    plt = _pyplot()
    cols, rows = steps[0]["grid"]
    first = maps[steps[0]["name"]]
    ns = sorted(first["n"].unique())
    panels = 1 + len(steps)
    width = 2.6
    fig, axes = plt.subplots(len(ns), panels, figsize=(width * panels + 0.8, (width * rows / cols + 0.7) * len(ns)),
                             dpi=110, squeeze=False)
    for i, n in enumerate(ns):
        truth = first[first["n"] == n].sort_values("cell")["true_p"].to_numpy()
        pics = [("true distribution", truth)]
        for s in steps:
            m = maps[s["name"]]
            m = m[m["n"] == n].sort_values("cell")
            pics.append((f"{m['label'].iloc[0]}: one run", m["estimate"].to_numpy()))
        vmax = max(float(np.max(p)) for _, p in pics)
        norm = PowerNorm(0.5, vmin=0.0, vmax=vmax)
        for ax, (name, p) in zip(axes[i], pics):
            im = ax.imshow(np.asarray(p).reshape(rows, cols), origin="lower", cmap="viridis", norm=norm,
                           interpolation="nearest")
            ax.set_title("\n".join(textwrap.wrap(name, 34)) + f"\n(n = {n})", fontsize=6.5)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.colorbar(im, ax=list(axes[i]), fraction=0.015, pad=0.01, shrink=0.9,
                     label="probability of the cell\n(square-root scale)")
    fig.suptitle(title, fontsize=9)
    return _save(plt, fig, path)


def plot_agreement(rows: pd.DataFrame, path: Path, title: str) -> Path:
    """Every printed number (×) against the range where the paper's experiment would put it if it behaved as
    shufflesim's simulation (bar) and shufflesim's own value of the statistic (•); log scale."""
    plt = _pyplot()
    m = len(rows)
    fig, ax = plt.subplots(figsize=(6.4, 0.8 + 0.24 * m), dpi=110)
    y = np.arange(m)[::-1]
    ok = rows["verdict"].eq("reproduced").to_numpy()
    ax.hlines(y, rows["range_lo"], rows["range_hi"], color="tab:blue", lw=3, alpha=0.5,
              label="range of the paper's statistic under shufflesim")
    ax.plot(rows["shufflesim"], y, "o", color="tab:blue", ms=3, label="shufflesim (all trials)")
    ax.plot(rows["paper"][ok], y[ok], "x", color="tab:green", ms=6, mew=2, label="paper: reproduced")
    ax.plot(rows["paper"][~ok], y[~ok], "x", color="tab:red", ms=6, mew=2, label="paper: not reproduced")
    names = []
    for _, r in rows.iterrows():
        where = f"x0={r['x0']}, " if "x0" in r and pd.notna(r.get("x0")) else ""
        names.append(f"{r['label'][:48]} ({where}n={r['n']}, {r['statistic']})")
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=6)
    positive = pd.concat([rows["range_lo"], rows["paper"], rows["shufflesim"]])
    if (positive > 0).all():
        ax.set_xscale("log")
    ax.set_xlabel("value of the printed statistic")
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    legend_below(ax)
    return _save(plt, fig, path)
