"""The scenario plots (matplotlib, the optional ``plot`` extra): one PNG per figure.

Legends sit below the axes, outside the data, so that no curve or error bar is ever hidden behind them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

Y_LABELS = {"mse": "MSE (95% CI; dashed: exact)", "rmse": "root MSE", "rmse_mean": "root MSE of the mean (95% CI)",
            "mse_expected": "exact MSE", "tv": "TV distance to the true distribution (95% CI)",
            "bias": "bias of the attacked estimate (95% CI; dashed: derived)"}


_Y_WORDS = {"mse": "MSE", "rmse": "root MSE", "rmse_mean": "root MSE of the mean", "mse_expected": "exact MSE",
            "tv": "TV distance", "bias": "bias"}


def _figure_subject(steps: list[dict], kind: str) -> str:
    """What one figure shows, in words, from its steps (not from its file name)."""
    s0 = steps[0]
    if kind == "sweep":
        what = f"{_Y_WORDS.get(s0['y'], s0['y'])} against {'n' if s0['x'] == 'n' else s0['x']}"
        data = {str(s.get("data")) for s in steps}
        return what + (f", {data.pop()} data" if len(data) == 1 else "")
    if kind == "curve":
        what = "δ(ε)" if s0["x"] == "eps" else \
            f"ε at δ = {s0['delta']:.3g} against {({'eps0': 'local ε0'}).get(s0['x'], s0['x'])}"
        ns = {str((s.get("args") or {}).get("n")) for s in steps}
        return what + (f", n = {ns.pop()}" if len(ns) == 1 and "None" not in ns else "")
    if kind == "training":
        sets = {str(s.get("dataset")) for s in steps}
        against = "the poisoned fraction" if s0.get("x") == "poisoned" else "rounds"
        return f"test accuracy against {against}" + (f", {sets.pop()}" if len(sets) == 1 else "")
    if kind == "defence":
        return f"tolerating a fraction F of dishonest users, n = {steps[0]['n']}"
    return "cell distributions"


def figure_title(sc: dict, steps: list[dict], kind: str, several: bool) -> str:
    """A figure's title: the scenario's title (wrapped), and — when the scenario draws several figures — what
    this one shows, in words from its steps (``δ(ε)``, ``MSE against n, uniform data``), never the file slug."""
    lines = textwrap.wrap(sc["title"], 80)
    if several:
        lines.append(_figure_subject(steps, kind))  # a line of its own: "n = 1000" is never split
    return "\n".join(lines)


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
    order = sorted(range(len(labels)), key=lambda i: labels[i].startswith("exact"))  # the exact line's key last
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    ncol = 2 if max(len(lb) for lb in labels) <= 34 and len(labels) > 2 else 1
    height = ax.get_position().height * ax.figure.get_figheight()  # inches
    ax.legend(handles, labels, fontsize=fontsize, loc="upper center", bbox_to_anchor=(0.5, -0.45 / height),
              ncol=ncol, frameon=False)


def _save(plt, fig, path: Path) -> Path:
    from shufflesim.experiments.outdir import atomic_path

    with atomic_path(Path(path)) as tmp:  # no link followed below the output folder (experiments/outdir.py)
        fig.savefig(tmp, format=Path(path).suffix.lstrip(".") or "png", bbox_inches="tight")
    plt.close(fig)
    return path


def plot_sweeps(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """Empirical values with their CI (markers and error bars, joined by a thin line when a series has more
    than one point: a single point, as in quick mode, is a marker, not a "curve"); for ``y = "mse"`` the
    exact expectation is drawn *above* them, dashed in the series' colour, with its own legend entry."""
    plt, fig, ax = _fig()
    s0 = steps[0]
    exact_drawn = False
    for s in steps:
        df = frames[s["name"]]
        xcol = "n" if s["x"] == "n" else f"param_{s['x']}"
        for label, g in df.groupby("label", sort=False):
            g = g.sort_values(xcol)
            y = g[s["y"]]
            fmt = "o-" if len(g) > 1 else "o"
            kw = dict(fmt=fmt, ms=4, capsize=3, lw=1, alpha=0.85, label=label, zorder=2)
            if s["y"] == "tv" and "tv_lo" in g:
                ax.errorbar(g[xcol], y, yerr=[y - g["tv_lo"], g["tv_hi"] - y], **kw)
            elif s["y"] == "bias" and "bias_lo" in g:  # issue 23: measured bias, the derived expectation dashed
                bars = ax.errorbar(g[xcol], y, yerr=[y - g["bias_lo"], g["bias_hi"] - y], **dict(kw, fmt="o"))
                if g["bias_expected"].notna().any():
                    ax.plot(g[xcol], g["bias_expected"], "--" if len(g) > 1 else "_", color=bars.lines[0].get_color(),
                            lw=1.6, ms=14, mew=1.6, zorder=3)
                    exact_drawn = True
            elif s["y"] in ("mse", "rmse", "rmse_mean"):
                lo, hi = g["mse_lo"].clip(lower=0), g["mse_hi"]
                if s["y"] != "mse":
                    lo, hi = np.sqrt(lo), np.sqrt(hi)
                if s["y"] == "rmse_mean":
                    lo, hi = lo / g["n"], hi / g["n"]
                has_exact = s["y"] == "mse" and g["mse_expected"].notna().any()
                # with the exact line drawn through them, the empirical points are markers only (no line of
                # their own that would hide it)
                bars = ax.errorbar(g[xcol], y, yerr=[y - lo, hi - y], **dict(kw, fmt="o" if has_exact else fmt))
                if has_exact:
                    colour = bars.lines[0].get_color()
                    ax.plot(g[xcol], g["mse_expected"], "--" if len(g) > 1 else "_", color=colour, lw=1.6, ms=14,
                            mew=1.6, zorder=3)
                    exact_drawn = True
            else:
                ax.plot(g[xcol], y, fmt, ms=4, label=label)
    if exact_drawn:
        ax.plot([], [], "--", color="black", lw=1.6, label=("derived expected bias" if s0["y"] == "bias" else
                                                             "exact expectation") + " (dashed, each series' colour)")
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


#: a curve figure with more series than this is split into panels when its steps line up (see plot_curves)
MAX_SERIES_ONE_PANEL = 8


def _common_suffix(labels: list[str]) -> str:
    """The longest common suffix of ``labels`` that starts at a separator (", " or " "), without it."""
    rev = [lb[::-1] for lb in labels]
    n = 0
    while all(len(r) > n for r in rev) and len({r[n] for r in rev}) == 1:
        n += 1
    tail = labels[0][len(labels[0]) - n:] if n else ""
    for sep in (", ", "; ", " "):
        if sep in tail:
            return tail[tail.index(sep) + len(sep):]
    return ""


def _curve_xy(g: pd.DataFrame, vs_flag: bool):
    if vs_flag:
        g = g[g["applicable"] & np.isfinite(g["eps_upper"].astype(float))]
        return g["x"], g["eps_upper"], "o"
    g = g[g["applicable"] & (g["delta_upper"] > 0) & (g["delta_upper"] <= 1)]  # δ > 1 is vacuous
    return g["eps"], g["delta_upper"], "."


def plot_curves(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """δ(ε) curves, or ε(δ) against a mechanism flag (``x`` = 'eps0', ...).

    A figure with more than :data:`MAX_SERIES_ONE_PANEL` series whose steps have the same number m of series
    (e.g. seed 001 Figure 1: four methods × n_c ∈ {1, 2, 4}) is drawn as m panels side by side with a shared
    y axis, panel j holding series j of every step: each panel is titled by what its labels share (``n_c=1``)
    and keeps one colour and line style per step, so no panel has more than a handful of curves."""
    styles = ["-", "--", "-.", ":"]
    s0 = steps[0]
    vs_flag = s0["x"] != "eps"
    series = [[(label, g) for label, g in frames[s["name"]].groupby("label", sort=False)] for s in steps]
    m = len(series[0])
    total = sum(len(x) for x in series)
    panels = m if (total > MAX_SERIES_ONE_PANEL and m >= 2 and len(steps) >= 2
                   and all(len(x) == m for x in series)) else 1
    plt = _pyplot()
    if panels == 1:
        fig, ax = plt.subplots(figsize=(5.6, 3.9), dpi=110)
        axes = [ax]
        groups = [[(si, label, g) for si, x in enumerate(series) for label, g in x]]
        titles = [title]
    else:
        fig, axes = plt.subplots(1, panels, figsize=(3.3 * panels + 0.6, 4.0), dpi=110, sharey=True, squeeze=False)
        axes = list(axes[0])
        groups = [[(si, x[j][0], x[j][1]) for si, x in enumerate(series)] for j in range(panels)]
        titles = [_common_suffix([lb for _, lb, _ in grp]) for grp in groups]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, grp, panel_title in zip(axes, groups, titles):
        for i, (si, label, g) in enumerate(grp):
            x, y, marker = _curve_xy(g, vs_flag)
            if not len(x):
                continue
            if panels > 1:
                shown = label[: len(label) - len(panel_title)].rstrip(" ,;") if panel_title and \
                    label.endswith(panel_title) else label
                colour, ls = colours[si % len(colours)], styles[si % len(styles)]
            else:
                shown, colour, ls = label, None, styles[si % len(styles)]
            if len(x) == 1:  # one point (quick mode) is a marker, not a curve
                ax.plot(x, y, marker="o", ls="none", ms=4, color=colour, label=shown)
            else:
                ax.plot(x, y, ls, marker=marker, ms=3, color=colour, label=shown)
        if s0["logy"]:
            ax.set_yscale("log")
        if s0["ymin"]:
            ax.set_ylim(bottom=s0["ymin"], top=None if vs_flag else 1.5)
        if vs_flag:
            ax.set_xlabel(s0["xlabel"] or {"eps0": "local ε0"}.get(s0["x"], s0["x"]))
        else:
            ax.set_xlabel(s0["xlabel"] or "ε")
        if panels > 1:
            ax.set_title(panel_title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    if vs_flag:
        axes[0].set_ylabel(s0["ylabel"] or f"ε at δ = {s0['delta']:.3g} (upper bound)")
    else:
        axes[0].set_ylabel(s0["ylabel"] or "δ(ε) (upper bound)")
    if panels == 1:
        axes[0].set_title(title, fontsize=9)
        legend_below(axes[0], 6.5)
    else:
        fig.suptitle(title, fontsize=10)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, -0.02))
        fig.tight_layout(rect=(0, 0.08, 1, 1))
    return _save(plt, fig, path)


def plot_defence(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """Two panels against the tolerated fraction F: the defence's MSE price (exact worst-case MSE, defended over
    undefended) and the certified ε of the *undefended* protocol when only ⌈(1 − F)n⌉ users are honest (its
    certified interval as a band where a lower end exists; the target ε dashed) — what the defence buys."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10.0, 4.2), dpi=110)
    for s in steps:
        for label, g in frames[s["name"]].groupby("label", sort=False):
            g = g.sort_values("tolerate")
            style = "o-" if len(g) > 1 else "o"
            a1.plot(g["tolerate"], g["mse_ratio"], style, ms=3, label=label)
            line, = a2.plot(g["tolerate"], g["eps_undefended_upper"], style, ms=3, label=label)
            lo = pd.to_numeric(g["eps_undefended_lower"], errors="coerce")
            if lo.notna().all() and len(g) > 1:
                a2.fill_between(g["tolerate"], lo, g["eps_undefended_upper"], color=line.get_color(), alpha=0.15)
            a2.plot(g["tolerate"], g["target_eps"], "--", lw=0.8, color=line.get_color())
    a1.set_xlabel("tolerated fraction F of dishonest users")
    a1.set_ylabel("MSE price (defended / undefended, exact)")
    a2.set_xlabel("fraction F of users dishonest (honest: ⌈(1 − F)n⌉)")
    a2.set_ylabel("ε of the undefended protocol\n(band: certified; dashed: target)")
    for ax in (a1, a2):
        ax.grid(True, alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.88))  # panels clear of each other's labels and of the title
    legend_below(a1)
    return _save(plt, fig, path)


def plot_training(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    plt, fig, ax = _fig()
    x = steps[0].get("x") or "round"  # 'poisoned': the last round's accuracy against the poisoned fraction
    for s in steps:
        for label, g in frames[s["name"]].groupby("label", sort=False):
            if x == "poisoned":
                g = g[g["round"] == g["round"].max()]
            xcol = "poisoned_fraction" if x == "poisoned" else "round"
            g = g.groupby(xcol, sort=True, as_index=False)["accuracy"].mean()  # over a step's seeds
            ax.plot(g[xcol], g["accuracy"], "o-" if len(g) > 1 else "o", ms=3, label=label)
    ax.set_xlabel("round (0: the initial model)" if x == "round" else
                  "poisoned clients per round (fraction of the n sampled); accuracy after the last round")
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
    # above the figure's top edge (the saved area grows to hold it): a title of several lines never runs into
    # the panels' own titles
    fig.suptitle(title, fontsize=9, y=1.0 + 0.05 / fig.get_figheight(), va="bottom")
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
