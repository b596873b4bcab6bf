"""Paper-ready figures (matplotlib, optional extra ``plot``) and the rules every shufflesim figure follows
(issue 29, "plots a paper can use"):

* a series' points and its exact line share one colour (:func:`plot_mse`);
* the fixed settings (n, k) are in the title (:func:`fixed_settings`);
* an axis "against n" is drawn only with two or more n: one n is drawn as one point per series at that n, the
  series side by side (:func:`one_point_per_series`);
* at most :data:`MAX_SERIES_PER_AXES` series share one axes (:func:`panels_of`);
* a "seed NNN" in a title names its paper (:func:`with_seed_key`, :data:`shufflesim.core.papers.SEED_SHORT`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from shufflesim.core.papers import SEED_SHORT

#: a "seed NNN" not already followed by a parenthesis
_SEED = re.compile(r"\b([Ss]eed )(00[0-4])\b(?!\s*\()")

#: more series than this on one axes are split into panels (a reader tells about six colours apart)
MAX_SERIES_PER_AXES = 6


#: largest magnitude a figure's axis can show: matplotlib's tickers step past the data (a decade on a log axis, a
#: margin on a linear one), which overflows near the double range
DRAWABLE_MAX = 1e300


def drawable(*values) -> bool:
    """Whether every finite value of ``values`` is within ±:data:`DRAWABLE_MAX` (a figure of eps0 = 1e308 cannot
    be drawn: its caller skips it with a note)."""
    import numpy as np

    for vals in values:
        v = np.asarray(pd.to_numeric(pd.Series(np.ravel(vals)), errors="coerce"), dtype=float)
        v = v[np.isfinite(v)]
        if v.size and np.abs(v).max() > DRAWABLE_MAX:
            return False
    return True


def log_scale(ax, which: str, values) -> bool:
    """Set ``which`` ("x" or "y") of ``ax`` to a log scale when ``values`` has a finite positive value; otherwise
    keep the linear scale (an MSE of 0 everywhere has nothing to draw on a log axis).  Returns whether the axis
    is logarithmic."""
    import numpy as np

    v = np.asarray(pd.to_numeric(pd.Series(np.ravel(values)), errors="coerce"), dtype=float)
    if not np.any(np.isfinite(v) & (v > 0)):
        return False
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    return True


def with_seed_key(text: str) -> str:
    """``text`` with the first "seed NNN" of every seed followed by its paper: "Seed 004 (Balle et al. 2020)".
    A mention already followed by a parenthesis is left as it is."""
    seen: set[str] = set()

    def key(m: re.Match) -> str:
        if m.group(2) in seen:
            return m.group(0)
        seen.add(m.group(2))
        return f"{m.group(0)} ({SEED_SHORT[m.group(2)]})"

    return _SEED.sub(key, text)


def fmt_value(v) -> str:
    """A setting's value for a title: integers with thousands separators, floats in 4 significant digits."""
    if hasattr(v, "item"):  # a numpy scalar
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.4g}"


def fixed_settings(summary: pd.DataFrame, names=("n", "param_k")) -> str:
    """The settings among ``names`` (summary columns) of one figure, as "n = 1,000, k = 4"; a varied one as its
    range "n = 1,000…100,000"; one that only some series have (``label`` column) with their names,
    "k = 21 (blanket-sum)". Empty when none is present."""
    parts = []
    for c in names:
        if c not in summary.columns:
            continue
        have = summary[summary[c].notna()]
        vals = pd.unique(have[c])
        if not len(vals):
            continue
        name = c.removeprefix("param_")
        if len(vals) == 1:
            part = f"{name} = {fmt_value(vals[0])}"
        else:
            try:
                part = f"{name} = {fmt_value(min(vals))}…{fmt_value(max(vals))}"
            except TypeError:
                part = f"{name} varied"
        if len(have) < len(summary) and "label" in summary.columns:
            part += f" ({', '.join(map(str, pd.unique(have['label'])))})"
        parts.append(part)
    return ", ".join(parts)


def panels_of(items: list, limit: int = MAX_SERIES_PER_AXES) -> list[list]:
    """``items`` in consecutive panels of at most ``limit``, as even as possible (13 → 5, 4, 4)."""
    if not items:
        return [[]]
    m = math.ceil(len(items) / limit)
    size = math.ceil(len(items) / m)
    return [items[i:i + size] for i in range(0, len(items), size)]


def one_point_per_series(ax, names: list[str], ys, lo=None, hi=None, *, colours=None, at: str = "",
                         exact=None) -> None:
    """One x value for every series (quick mode's single n): no axis "against n" with one tick. Each series
    gets its own x position, labelled with its name, so that no point hides another; ``at`` ("n = 1,000") is
    the x label. ``exact``: the exact values, drawn as a short dash in the series' colour."""
    import numpy as np

    x = np.arange(len(names))
    ys = np.asarray(ys, dtype=float)
    if lo is not None and hi is not None:  # an interval not computable (one trial) is None: no error bar
        lo, hi = ([np.nan if v is None else float(v) for v in ends] for ends in (lo, hi))
    for i, name in enumerate(names):
        kw = {"color": colours[i]} if colours else {}
        if lo is not None and hi is not None and np.isfinite(lo[i]) and np.isfinite(hi[i]):
            bars = ax.errorbar([x[i]], [ys[i]], yerr=[[ys[i] - lo[i]], [hi[i] - ys[i]]], fmt="o", ms=4, capsize=3,
                               label=name, zorder=2, **kw)
            colour = bars.lines[0].get_color()
        else:
            (line,) = ax.plot([x[i]], [ys[i]], "o", ms=4, label=name, zorder=2, **kw)
            colour = line.get_color()
        if exact is not None and np.isfinite(exact[i]):
            ax.plot([x[i]], [exact[i]], "_", color=colour, ms=16, mew=1.6, zorder=3)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=7)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_xlabel(f"series, at {at}" if at else "series")


def data_ticks(axis, values, digits: int = 3) -> None:
    """Major ticks of a (log) axis exactly at the data's x values, labelled with ``digits`` significant
    digits, and no minor tick labels: a log axis over about one decade otherwise labels its minor ticks
    too ("2×10⁻² 3×10⁻² 4×10⁻²…"), which overlap."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter

    ticks = sorted({float(v) for v in values})
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter([f"{v:.{digits}g}" for v in ticks]))
    axis.set_minor_formatter(NullFormatter())


def draw_mse(summary: pd.DataFrame, x: str, *, title: str = "", xlabel: str | None = None, hue: str | None = None):
    """The figure of :func:`plot_mse` (not saved): empirical MSE with its confidence interval against ``x``
    (markers and error bars) and the exact expectation as a line in the same colour, one colour a series;
    at most :data:`MAX_SERIES_PER_AXES` series a panel; n and k in the title; one x value is drawn as one
    point per series side by side (:func:`one_point_per_series`), not as an axis with one tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [(label, g.sort_values(x)) for label, g in summary.groupby(hue, sort=False)] if hue else \
        [(None, summary.sort_values(x))]
    single_x = summary[x].nunique() == 1
    panels = [groups] if single_x else panels_of(groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.6), dpi=150, sharey=True,
                             squeeze=False)
    axes = list(axes[0])
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    xname = xlabel or x.removeprefix("param_")
    if single_x:
        ax = axes[0]
        names = [label if label is not None else "empirical (95% CI)" for label, _ in groups]
        rows = [g.iloc[0] for _, g in groups]
        one_point_per_series(ax, names, [r["mse"] for r in rows], [r["mse_lo"] for r in rows],
                             [r["mse_hi"] for r in rows], colours=[colours[i % len(colours)] for i in range(len(rows))],
                             at=f"{x.removeprefix('param_')} = {fmt_value(summary[x].iloc[0])}",
                             exact=[r["mse_expected"] if pd.notna(r["mse_expected"]) else math.nan for r in rows])
        if summary["mse_expected"].notna().any():
            ax.plot([], [], "_", color="black", ms=16, mew=1.6, label="exact expectation (dash, each series' colour)")
    else:
        i = 0
        for ax, grp in zip(axes, panels):
            for label, g in grp:
                colour = colours[i % len(colours)]
                i += 1
                yerr = [g["mse"] - g["mse_lo"], g["mse_hi"] - g["mse"]]
                ax.errorbar(g[x], g["mse"], yerr=yerr, fmt="o", capsize=3, color=colour, zorder=2,
                            label=f"{label} empirical" if label is not None else "empirical (95% CI)")
                if g["mse_expected"].notna().any():
                    ax.plot(g[x], g["mse_expected"], "-", lw=1, color=colour, zorder=3,
                            label=f"{label} exact" if label is not None else "exact expectation")
            if log_scale(ax, "x", summary[x].unique()):
                data_ticks(ax.xaxis, summary[x].unique())
            ax.set_xlabel(xname)
    ys = summary[[c for c in ("mse", "mse_lo", "mse_hi", "mse_expected") if c in summary.columns]].to_numpy()
    for ax in axes:
        log_scale(ax, "y", ys)
        ax.grid(True, which="both", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if single_x:  # the series are named on the x axis: the legend keys the exact dash only
            keep = [i for i, lb in enumerate(labels) if lb.startswith("exact")]
            handles, labels = [handles[i] for i in keep], [labels[i] for i in keep]
        if labels:
            ax.legend(handles, labels, fontsize=7, loc="upper center", ncol=1 if single_x else 2, frameon=False,
                      bbox_to_anchor=(0.5, -0.42 if single_x else -0.18))  # off the data, under the x label
    axes[0].set_ylabel("mean squared error")
    fixed = fixed_settings(summary.drop(columns=[c for c in (None if single_x else x, hue) if c]))
    full = with_seed_key(title) + (f"\n{fixed}" if fixed else "")
    if full:
        (axes[0].set_title if len(axes) == 1 else fig.suptitle)(full, fontsize=9)
    fig.tight_layout()
    return fig


def plot_mse(summary: pd.DataFrame, x: str, path: Path, *, title: str = "", xlabel: str | None = None,
             hue: str | None = None) -> Path:
    """Empirical MSE with its confidence interval against ``x``, with the exact expectation as a line
    (:func:`draw_mse`), written to ``path`` atomically."""
    import matplotlib.pyplot as plt

    from shufflesim.experiments.outdir import atomic_path

    fig = draw_mse(summary, x, title=title, xlabel=xlabel, hue=hue)
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", bbox_inches="tight")
    plt.close(fig)
    return path
