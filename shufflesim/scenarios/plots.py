"""The scenario plots (matplotlib, the optional ``plot`` extra): one PNG per figure.

Legends sit below the axes, outside the data, so that no curve or error bar is ever hidden behind them. The
rules of issue 29 ("plots a paper can use") are in :mod:`shufflesim.experiments.plots`: one colour per series for
its points and its exact line, n and k in the title, "seed NNN" keyed to its paper, no axis against n with a single
n, at most six series a panel, every axes labelled, certified intervals as bands from the lower to the upper end.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from shufflesim.experiments.plots import (MAX_SERIES_PER_AXES, fixed_settings, fmt_value, one_point_per_series,
                                          panels_of, with_seed_key)

Y_LABELS = {"mse": "MSE (95% CI; dashed: exact)", "rmse": "root MSE", "rmse_mean": "root MSE of the mean (95% CI)",
            "mse_expected": "exact MSE", "tv": "TV distance to the true distribution (95% CI)",
            "bias": "bias of the attacked estimate (95% CI; dashed: derived)"}


#: the x label of a sweep or curve against a parameter, when the step gives no ``xlabel``
X_WORDS = {"n": "number of users n", "dishonest": "dishonest users c", "eps0": "local ε0", "eps": "ε",
           "k": "number of categories k"}

#: abbreviations used in labels, explained on the figure that uses them (seed 001 §2.2: the Fourier accountant)
ABBREVIATIONS = {"FA": "FA = Fourier accountant (seed 001 §2.2, Algorithm 1)"}

_Y_WORDS = {"mse": "MSE", "rmse": "root MSE", "rmse_mean": "root MSE of the mean", "mse_expected": "exact MSE",
            "tv": "TV distance", "bias": "bias"}


def _figure_subject(steps: list[dict], kind: str) -> str:
    """What one figure shows, in words, from its steps (not from its file name)."""
    s0 = steps[0]
    if kind == "sweep":
        what = f"{_Y_WORDS.get(s0['y'], s0['y'])} against {'n' if s0['x'] == 'n' else X_WORDS.get(s0['x'], s0['x'])}"
        data = {str(s.get("data")) for s in steps}
        return what + (f", {data.pop()} data" if len(data) == 1 else "")
    if kind == "curve":
        what = "δ(ε)" if s0["x"] == "eps" else \
            f"ε at δ = {s0['delta']:.3g} against {({'eps0': 'local ε0'}).get(s0['x'], s0['x'])}"
        ns = {str((s.get("args") or {}).get("n")) for s in steps}
        return what + (f", n = {ns.pop()}" if len(ns) == 1 and "None" not in ns else "")
    if kind == "training":
        sets = {str(s.get("dataset")) for s in steps}
        against = {"poisoned": "the poisoned fraction", "eps": "the run's ε (certified and the paper's)"}.get(
            s0.get("x"), "rounds")
        return f"test accuracy against {against}" + (f", {sets.pop()}" if len(sets) == 1 else "")
    if kind == "defence":
        return f"tolerating a fraction F of dishonest users, n = {steps[0]['n']}"
    return "cell distributions"


def figure_title(sc: dict, steps: list[dict], kind: str, several: bool) -> str:
    """A figure's title: the scenario's title (wrapped), and — when the scenario draws several figures — what
    this one shows, in words from its steps (``δ(ε)``, ``MSE against n, uniform data``), never the file slug."""
    lines = textwrap.wrap(with_seed_key(sc["title"]), 80)
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


def legend_below(ax, fontsize: float = 7, extra=()) -> None:
    """The legend under the axes (outside the data), in two columns when the labels are short; ``extra``:
    (handle, label) pairs drawn on no axes (a band's key)."""
    handles, labels = ax.get_legend_handles_labels()
    handles, labels = handles + [h for h, _ in extra], labels + [lb for _, lb in extra]
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


def with_notes(title: str, texts) -> str:
    """``title`` with a last line explaining every abbreviation of :data:`ABBREVIATIONS` that ``texts`` (labels,
    titles) use as a word."""
    import re

    words = set()
    for t in texts:
        words |= set(re.findall(r"[A-Za-z_]+", str(t)))
    notes = [why for abbr, why in ABBREVIATIONS.items() if abbr in words]
    return title + ("\n" + "; ".join(notes) if notes else "")


def _dodge(xs, i: int, m: int, log: bool, span: tuple[float, float]):
    """Series ``i`` of ``m``'s x positions moved sideways by a small step (about 1 % of the axis each), so that
    equal values of different series do not hide each other's markers; the exact lines stay at the true x."""
    if m <= 1:
        return xs
    off = (i - (m - 1) / 2) * 0.012
    xs = np.asarray(xs, dtype=float)
    if log:
        return xs * 10 ** (off * max(np.log10(span[1] / span[0]), 1.0))
    return xs + off * max(span[1] - span[0], 1.0)


def _coincident_dashes(curves: list, rtol: float = 0.01) -> list:
    """A dash pattern per line: lines whose values agree (within 1 %) share the dashes in turn (each shows its
    own colour in its own gaps), so that a line drawn over another does not hide it; other lines dash '--'."""
    styles: list = ["--"] * len(curves)
    done: set[int] = set()
    for i, a in enumerate(curves):
        if i in done or a is None:
            continue
        group = [i] + [j for j in range(i + 1, len(curves)) if j not in done and curves[j] is not None
                       and len(curves[j]) == len(a)
                       and np.allclose(curves[j], a, rtol=rtol, atol=0.0, equal_nan=True)]
        if len(group) > 1:
            g = len(group)
            for pos, j in enumerate(group):
                styles[j] = (3.0 * pos, (3.0, 3.0 * (g - 1)))
                done.add(j)
    return styles


def plot_sweeps(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """Empirical values with their CI (markers and error bars, joined by a thin line when a series has more
    than one point), one colour per series; for ``y = "mse"`` and ``"bias"`` the exact (derived) expectation is
    drawn *above* them, dashed in the series' colour, with its own legend entry. The title's last line gives n
    and k. Series with equal values are moved sideways by a hair (their markers) and share their dashes (their
    exact lines), so none hides another; more than :data:`MAX_SERIES_PER_AXES` series are split into panels.
    A figure against n whose steps have one n each (quick mode) is not drawn against n: one point per series
    at that n, side by side (:func:`~shufflesim.experiments.plots.one_point_per_series`)."""
    plt = _pyplot()
    s0 = steps[0]
    xcol = "n" if s0["x"] == "n" else f"param_{s0['x']}"
    series = []  # (label, frame, step)
    for s in steps:
        for label, g in frames[s["name"]].groupby("label", sort=False):
            series.append((label, g.sort_values(xcol), s))
    every = pd.concat([g for _, g, _ in series])
    settings = fixed_settings(every, ("n", "param_k"))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour_of = {label: colours[i % len(colours)] for i, (label, _, _) in enumerate(series)}
    full_title = with_notes(title + (f"\n{settings}" if settings else ""), [lb for lb, _, _ in series])
    ylabel = s0["ylabel"] or Y_LABELS[s0["y"]]

    def ends(g, s):
        y = g[s["y"]]
        if s["y"] == "tv" and "tv_lo" in g:
            return y, g["tv_lo"], g["tv_hi"], None
        if s["y"] == "bias" and "bias_lo" in g:
            return y, g["bias_lo"], g["bias_hi"], (g["bias_expected"] if g["bias_expected"].notna().any() else None)
        if s["y"] in ("mse", "rmse", "rmse_mean"):
            lo, hi = g["mse_lo"].clip(lower=0), g["mse_hi"]
            if s["y"] != "mse":
                lo, hi = np.sqrt(lo), np.sqrt(hi)
            if s["y"] == "rmse_mean":
                lo, hi = lo / g["n"], hi / g["n"]
            exact = g["mse_expected"] if s["y"] == "mse" and g["mse_expected"].notna().any() else None
            return y, lo, hi, exact
        return y, None, None, None

    if every[xcol].nunique() == 1:  # one x for every series: no axis against it
        fig, ax = plt.subplots(figsize=(5.6, 4.2), dpi=110)
        names, ys, los, his, exacts = [], [], [], [], []
        for label, g, s in series:
            y, lo, hi, exact = ends(g, s)
            names.append(label)
            ys.append(float(y.iloc[0]))
            los.append(float(lo.iloc[0]) if lo is not None else np.nan)
            his.append(float(hi.iloc[0]) if hi is not None else np.nan)
            exacts.append(float(exact.iloc[0]) if exact is not None and pd.notna(exact.iloc[0]) else np.nan)
        xname = {"n": "n"}.get(s0["x"], X_WORDS.get(s0["x"], s0["x"]))
        at = f"{xname} = {fmt_value(every[xcol].iloc[0])}"
        full_title = full_title.replace(f" against {xname}", f" at {at}")  # the subject line: no curve against n
        full_title += f"\none {xname} in this run ({at}): each series' value there, not a curve against {xname}"
        one_point_per_series(ax, names, ys, np.array(los), np.array(his), colours=[colour_of[n] for n in names],
                             at=at,
                             exact=np.array(exacts) if np.isfinite(exacts).any() else None)
        if np.isfinite(exacts).any():
            ax.plot([], [], "_", color="black", ms=16, mew=1.6, label=("derived expected bias" if s0["y"] == "bias"
                    else "exact expectation") + " (dash, each series' colour)")
        if s0["logy"]:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(full_title, fontsize=9)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        if np.isfinite(exacts).any():  # the series are named on the x axis; the legend keys the exact dash only
            handles, labels = ax.get_legend_handles_labels()
            ax.legend(handles[-1:], labels[-1:], fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35),
                      frameon=False)
        return _save(plt, fig, path)

    groups = panels_of(series)
    fig, axes = plt.subplots(1, len(groups), figsize=(5.6 * len(groups), 3.9), dpi=110, sharey=True,
                             squeeze=False)
    axes = list(axes[0])
    xs_all = every[xcol].astype(float)
    span = (float(xs_all.min()), float(xs_all.max()))
    exact_drawn = False
    for ax, grp in zip(axes, groups):
        drawn = [(label, g, s, *ends(g, s)) for label, g, s in grp]
        dashes = _coincident_dashes([None if e is None else np.asarray(e, dtype=float) for *_, e in drawn])
        for i, (label, g, s, y, lo, hi, exact) in enumerate(drawn):
            colour = colour_of[label]
            x = _dodge(g[xcol], i, len(drawn), bool(s0["logx"]), span)
            line_style = "-" if len(g) > 1 and exact is None else "none"
            kw = dict(marker="o", ls=line_style, ms=4, capsize=3, lw=1, alpha=0.85, label=label, zorder=2,
                      color=colour)
            if lo is not None:
                ax.errorbar(x, y, yerr=[y - lo, hi - y], **kw)
            else:
                ax.plot(x, y, marker="o", ls=line_style, ms=4, label=label, color=colour)
            if exact is not None:
                ax.plot(g[xcol], exact, ls=dashes[i] if len(g) > 1 else "none", marker=None if len(g) > 1 else "_",
                        color=colour, lw=1.6, ms=14, mew=1.6, zorder=3)
                exact_drawn = True
        if s0["logx"]:
            ax.set_xscale("log")
        if s0["logy"]:
            ax.set_yscale("log")
        ax.set_xlabel(s0["xlabel"] or X_WORDS.get(s0["x"], s0["x"]))
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    if exact_drawn:
        key = "derived expected bias" if s0["y"] == "bias" else "exact expectation"
        axes[-1].plot([], [], "--", color="black", lw=1.6, label=key + " (dashed, each series' colour)")
    if len(axes) == 1:
        axes[0].set_title(full_title, fontsize=9)
        legend_below(axes[0])
    else:
        fig.suptitle(full_title, fontsize=9)
        fig.tight_layout(rect=(0, 0, 1, 0.9))
        for ax in axes:
            legend_below(ax)
    return _save(plt, fig, path)


#: a curve figure with more series than this is split into panels (see plot_curves)
MAX_SERIES_ONE_PANEL = MAX_SERIES_PER_AXES


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
    """A curve's x, upper end, lower end (NaN where the method gives none) and marker."""
    if vs_flag:
        g = g[g["applicable"] & np.isfinite(g["eps_upper"].astype(float))]
        lo = pd.to_numeric(g.get("eps_lower", pd.Series(np.nan, index=g.index)), errors="coerce")
        return g["x"], g["eps_upper"].astype(float), lo, "o"
    g = g[g["applicable"] & (g["delta_upper"] > 0) & (g["delta_upper"] <= 1)]  # δ > 1 is vacuous
    lo = pd.to_numeric(g.get("delta_lower", pd.Series(np.nan, index=g.index)), errors="coerce")
    return g["eps"], g["delta_upper"].astype(float), lo, "."


def _last_part(label: str) -> str:
    return label.rsplit(", ", 1)[1] if ", " in label else ""


def curve_panels(series: list[tuple[int, str, pd.DataFrame]]) -> list[list[tuple[int, str, pd.DataFrame]]]:
    """The curves of one figure in panels of at most :data:`MAX_SERIES_ONE_PANEL`: by the last ", "-separated
    part of their labels when that splits them (seed 001 Figure 1: "…, n_c=1" / "n_c=2" / "n_c=4"), otherwise in
    consecutive groups."""
    if len(series) <= MAX_SERIES_ONE_PANEL:
        return [series]
    keys = list(dict.fromkeys(_last_part(lb) for _, lb, _ in series))
    if len(keys) >= 2 and "" not in keys:
        by_key = [[x for x in series if _last_part(x[1]) == k] for k in keys]
        if all(len(p) <= MAX_SERIES_ONE_PANEL for p in by_key):
            return by_key
    return panels_of(series, MAX_SERIES_ONE_PANEL)


BAND_KEY = "band: certified interval of the true value, lower to upper end (grey: shared by several lines)"


def _bands(ax, brackets: list[tuple[np.ndarray, np.ndarray, np.ndarray, str]]) -> bool:
    """Certified intervals as bands from the lower to the upper end. Series that share their lower end (the
    lower end is the true δ's, from explicit data sets, the same for every method) share one grey band, from
    that lower end to their smallest upper end: nested bands of one colour each would hide each other."""
    used: set[int] = set()
    wide = False
    for i, (x, lo, up, colour) in enumerate(brackets):
        if i in used:
            continue
        same = [j for j in range(i, len(brackets)) if j not in used and len(brackets[j][0]) == len(x)
                and np.allclose(brackets[j][0], x) and np.allclose(brackets[j][1], lo, rtol=1e-9)]
        used.update(same)
        top = np.min([brackets[j][2] for j in same], axis=0)
        if np.any(top > lo * (1 + 1e-6)):  # an interval of width zero (an exact value) is its line alone
            ax.fill_between(x, lo, top, color=colour if len(same) == 1 else "grey", alpha=0.2, lw=0, zorder=1)
            wide = True
    return wide


def plot_curves(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """δ(ε) curves, or ε(δ) against a mechanism flag (``x`` = 'eps0', ...).

    Each series is its upper end as a line and, where the method certifies a lower end too, the band from the
    lower to the upper end in the same colour. A method that is not a certified bound (``NOT_CERTIFIED``:
    Biswas et al.'s eq 6 as published) says so in its legend entry, and the y label claims no "upper bound".
    More than :data:`MAX_SERIES_ONE_PANEL` series are drawn as panels side by side with a shared y axis
    (:func:`curve_panels`), each titled by what its labels share (``n_c=1``), one colour and line style per step.
    Series that coincide are drawn once, with both labels; a series entirely outside the axes says so."""
    from shufflesim.accounting.compare import NOT_CERTIFIED

    styles = ["-", "--", "-.", ":"]
    s0 = steps[0]
    vs_flag = s0["x"] != "eps"
    series = [(si, label, g) for si, s in enumerate(steps)
              for label, g in frames[s["name"]].groupby("label", sort=False)]
    groups = curve_panels(series)
    panels = len(groups)
    plt = _pyplot()
    if panels == 1:
        fig, ax = plt.subplots(figsize=(5.6, 3.9), dpi=110)
        axes = [ax]
        titles = [title]
    else:
        fig, axes = plt.subplots(1, panels, figsize=(3.3 * panels + 0.6, 4.0), dpi=110, sharey=True, squeeze=False)
        axes = list(axes[0])
        titles = [_common_suffix([lb for _, lb, _ in grp]) if len(grp) > 1 else _last_part(grp[0][1])
                  for grp in groups]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    banded = False
    ymin = s0["ymin"] or None
    legend: dict[str, object] = {}
    for ax, grp, panel_title in zip(axes, groups, titles):
        drawn: list[tuple[np.ndarray, np.ndarray, object]] = []
        brackets: list[tuple[np.ndarray, np.ndarray, np.ndarray, str]] = []
        for i, (si, label, g) in enumerate(grp):
            x, y, lo, marker = _curve_xy(g, vs_flag)
            method = str(g["method"].iloc[0]) if "method" in g and len(g) else ""
            shown = label[: len(label) - len(panel_title)].rstrip(" ,;") if panels > 1 and panel_title and \
                label.endswith(panel_title) else label
            if method in NOT_CERTIFIED and "certified" not in shown:
                shown += ": not a certified bound" if "as published" in shown else \
                    " (as published: not a certified bound)"
            if not len(x):
                continue
            same = next((ln for xs, ys, ln in drawn if len(xs) == len(x) and np.allclose(xs, x)
                         and np.allclose(ys, y, rtol=1e-9)), None)
            if same is not None:  # drawn over another: one line, both names
                same.set_label(f"{same.get_label()} = {shown}")
                continue
            if ymin and not vs_flag and (y < ymin).all():
                shown += f" (below the axes: δ < {ymin:g} everywhere)"
            colour = colours[(si if panels > 1 else i) % len(colours)]
            ls = styles[si % len(styles)]
            if len(x) == 1:  # one point (quick mode) is a marker, not a curve
                (line,) = ax.plot(x, y, marker="o", ls="none", ms=4, color=colour, label=shown)
            else:
                (line,) = ax.plot(x, y, ls, marker=marker, ms=3, color=colour, label=shown)
            if lo.notna().any() and len(x) > 1 and method not in NOT_CERTIFIED:
                brackets.append((np.asarray(x, dtype=float), np.asarray(lo.fillna(y), dtype=float),
                                 np.asarray(y, dtype=float), colour))
            drawn.append((np.asarray(x, dtype=float), np.asarray(y, dtype=float), line))
        banded |= _bands(ax, brackets)
        for (xs, ys, line), style in zip(drawn, _coincident_dashes([ys for _, ys, _ in drawn], rtol=0.05)):
            if style != "--":  # within 5 % of another line: the two share the dashes in turn, neither hidden
                line.set_linestyle(style)
        if s0["logy"]:
            ax.set_yscale("log")
        if ymin:
            ax.set_ylim(bottom=ymin, top=None if vs_flag else 1.5)
        if vs_flag:
            ax.set_xlabel(s0["xlabel"] or X_WORDS.get(s0["x"], s0["x"]))
        else:
            ax.set_xlabel(s0["xlabel"] or "ε")
        if panels > 1:
            ax.set_title(panel_title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        for h, lb in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lb, h)
    if banded:  # the band's key (a y label given by the scenario does not explain it)
        from matplotlib.patches import Patch

        legend[BAND_KEY] = Patch(color="grey", alpha=0.3, lw=0)
    what = f"ε at δ = {s0['delta']:.3g}" if vs_flag else "δ(ε)"
    band = "\n(band: certified interval)" if banded else ""
    axes[0].set_ylabel(s0["ylabel"] or f"{what}{band}")  # one y axis, shared by the panels
    full_title = with_notes(title, [*legend, title])
    if panels == 1:
        axes[0].set_title(full_title, fontsize=9)
        legend_below(axes[0], 6.5, extra=[(h, lb) for lb, h in legend.items() if lb == BAND_KEY])
    else:
        fig.suptitle(full_title, fontsize=10)
        fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=min(len(legend), 3), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, -0.02))
        fig.tight_layout(rect=(0, 0.1, 1, 1))
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


def smoke_test_note(steps: list[dict], frames: dict[str, pd.DataFrame]) -> str:
    """"" when every training step ran its scenario's rounds; otherwise the line that marks the figure as a
    smoke test (quick mode: ``quick_rounds`` of the study's ``rounds``): such curves say the code runs, not what
    the paper's study shows."""
    ran = max(int(frames[s["name"]]["round"].max()) for s in steps)
    study = max(int(s["rounds"]) for s in steps)
    if ran >= study:
        return ""
    return (f"SMOKE TEST: {ran} of the study's {study} rounds (quick mode); not the paper's curves, "
            "run without --quick for them")


def plot_training(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """Test accuracy against rounds (or, ``x = "poisoned"``, the last round's accuracy against the poisoned
    fraction), one line a label, at most :data:`MAX_SERIES_PER_AXES` a panel (shared y axis); equal curves share
    their dashes; a run with fewer rounds than the study is titled a smoke test (:func:`smoke_test_note`)."""
    plt = _pyplot()
    x = steps[0].get("x") or "round"  # 'poisoned': the last round's accuracy against the poisoned fraction
    if x == "eps":
        return plot_training_eps(steps, frames, path, title)
    xcol = "poisoned_fraction" if x == "poisoned" else "round"
    series = []
    for s in steps:
        for label, g in frames[s["name"]].groupby("label", sort=False):
            if x == "poisoned":
                g = g[g["round"] == g["round"].max()]
            series.append((label, g.groupby(xcol, sort=True, as_index=False)["accuracy"].mean()))  # over seeds
    groups = panels_of(series)
    fig, axes = plt.subplots(1, len(groups), figsize=(5.6 if len(groups) == 1 else 4.4 * len(groups), 3.9),
                             dpi=110, sharey=True, squeeze=False)
    axes = list(axes[0])
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    i = 0
    for ax, grp in zip(axes, groups):
        lines = []
        for label, g in grp:
            (line,) = ax.plot(g[xcol], g["accuracy"], "o-" if len(g) > 1 else "o", ms=3, label=label,
                              color=colours[i % len(colours)])
            i += 1
            lines.append((line, np.asarray(g["accuracy"], dtype=float)))
        for (line, _), style in zip(lines, _coincident_dashes([y for _, y in lines])):
            if style != "--" and len(line.get_xdata()) > 1:  # equal curves share their dashes: none hides another
                line.set_linestyle(style)
        if x == "round":
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("round (0: the initial model)" if x == "round" else
                      "poisoned clients per round (fraction of the n sampled);\naccuracy after the last round")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("test accuracy")
    note = smoke_test_note(steps, frames)
    full = with_notes(title, [lb for lb, _ in series]) + (f"\n{note}" if note else "")
    colour = "black" if not note else "firebrick"
    if len(axes) == 1:
        axes[0].set_title(full, fontsize=9, color=colour)
    else:
        fig.suptitle(full, fontsize=9, color=colour)
        fig.tight_layout(rect=(0, 0, 1, 0.9))
    for ax in axes:
        legend_below(ax)
    return _save(plt, fig, path)


def plot_training_eps(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """The last round's test accuracy against the run's ε (``x = "eps"``, issue 31 item 4): one panel a step, a
    filled marker at the certified ε (the accountant's, ``eps``) and a hollow one at the paper's accounting of the
    same run (``eps_paper``, not a guarantee; docs/flame.md), joined by a dotted line; a run without a finite ε
    (np) is a horizontal dashed line.  Logarithmic ε axis; one legend for the figure."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator, NullFormatter

    plt = _pyplot()
    fig, axes = plt.subplots(1, len(steps), figsize=(5.6 if len(steps) == 1 else 4.6 * len(steps), 4.8), dpi=110,
                             sharey=True, squeeze=False)
    axes = list(axes[0])
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order: dict[str, str] = {}  # label -> colour, the same in every panel
    for ax, s in zip(axes, steps):
        df = frames[s["name"]]
        for label, g in df.groupby("label", sort=False):
            c = order.setdefault(str(label), colours[len(order) % len(colours)])
            last = g[g["round"] == g["round"].max()]
            acc = float(last["accuracy"].mean())  # over seeds
            eps = last["eps"].iloc[0]
            paper = last["eps_paper"].iloc[0] if "eps_paper" in last else None
            if eps is None or not np.isfinite(float(eps)):
                ax.axhline(acc, ls="--", lw=1, color=c)
                continue
            ax.plot([float(eps)], [acc], "o", ms=6, color=c)
            if paper is not None and np.isfinite(float(paper)):
                ax.plot([float(paper)], [acc], "o", ms=6, mfc="none", color=c)
                ax.plot([float(paper), float(eps)], [acc, acc], ":", lw=1, color=c)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10))
        ax.xaxis.set_minor_formatter(NullFormatter())
        st = s.get("settings") or {}
        law = (f"exactly {st['clients_per_round']} clients a round" if st.get("clients_per_round") else
               f"each client with probability {st['participation']:g}" if st.get("participation") else
               "every client every round")
        ax.set_title(f"{s['name']}: {law}", fontsize=8)
        ax.set_xlabel("ε of the whole run at the run's δ")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("test accuracy after the last round")
    handles = [Line2D([], [], color=c, marker="o", ls="none", label=lb) for lb, c in order.items()]
    handles += [Line2D([], [], color="black", marker="o", ls="none", label="certified ε (the accountant's)"),
                Line2D([], [], color="black", marker="o", mfc="none", ls="none",
                       label="the paper's accounting (not a guarantee)"),
                Line2D([], [], color="black", ls="--", lw=1, label="no privacy (ε = ∞)")]
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=7, frameon=False)
    note = smoke_test_note(steps, frames)
    full = with_notes(title, list(order)) + (f"\n{note}" if note else "")
    fig.suptitle(full, fontsize=9, color="black" if not note else "firebrick")
    fig.tight_layout(rect=(0, 0.14, 1, 0.84))
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
            ax.set_xlabel(f"grid column (1…{cols})", fontsize=6)
            ax.set_ylabel(f"grid row (1…{rows})", fontsize=6)
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
    lines = sum(1 + len(str(lb)) // 45 for lb in rows["label"])
    fig, ax = plt.subplots(figsize=(6.4, 0.8 + 0.2 * max(m, lines)), dpi=110)
    y = np.arange(m)[::-1]
    ok = rows["verdict"].eq("reproduced").to_numpy()
    ax.hlines(y, rows["range_lo"], rows["range_hi"], color="tab:blue", lw=3, alpha=0.5,
              label="range of the paper's statistic under shufflesim")
    ax.plot(rows["shufflesim"], y, "o", color="tab:blue", ms=3, label="shufflesim (all trials)")
    ax.plot(rows["paper"][ok], y[ok], "x", color="tab:green", ms=6, mew=2, label="paper: reproduced")
    ax.plot(rows["paper"][~ok], y[~ok], "x", color="tab:red", ms=6, mew=2, label="paper: not reproduced")
    names = []
    for _, r in rows.iterrows():  # the whole label, wrapped: a cut label can end in "ε0=" without its value
        where = f"x0={r['x0']}, " if "x0" in r and pd.notna(r.get("x0")) else ""
        names.append("\n".join(textwrap.wrap(f"{r['label']} ({where}n={r['n']}, {r['statistic']})", 60)))
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=6)
    positive = pd.concat([rows["range_lo"], rows["paper"], rows["shufflesim"]])
    if (positive > 0).all():
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # "2×10⁻² 3×10⁻² 4×10⁻²" labels overlap
        if positive.max() / positive.min() < 100:  # within two decades: ticks at 1, 2 and 5 times a power of ten
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("value of the printed statistic")
    ax.set_ylabel("printed number (label, setting, statistic)")
    ax.set_title(with_seed_key(title), fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    legend_below(ax)
    return _save(plt, fig, path)
