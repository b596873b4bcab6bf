"""Plots for a paper (issue 18): titles from the scenario, the exact line visible and in the legend, single
points drawn as markers, crowded curve figures split into panels, data ticks that do not overlap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from shufflesim.scenarios import plots  # noqa: E402

SWEEP = {"name": "s", "x": "n", "y": "mse", "logx": True, "logy": True, "xlabel": None, "ylabel": None,
         "data": "uniform"}
CURVE = {"x": "eps", "logy": True, "ymin": 1e-12, "xlabel": None, "ylabel": None, "delta": None}


@pytest.fixture
def captured(monkeypatch):
    """The figure a plot function drew (instead of writing it)."""
    got = {}

    def keep(plt, fig, path):
        got["fig"] = fig
        return path

    monkeypatch.setattr(plots, "_save", keep)
    yield got
    import matplotlib.pyplot as plt

    plt.close("all")


def _sweep_frame(ns):
    rows = []
    for label, scale in (("a", 1.0), ("b", 3.0)):
        for n in ns:
            rows.append({"label": label, "n": n, "mse": scale * n * 1.02, "mse_lo": scale * n * 0.9,
                         "mse_hi": scale * n * 1.1, "mse_expected": scale * n})
    return pd.DataFrame(rows)


def test_titles_are_the_scenarios_not_file_slugs():
    sc = {"title": "Seed 004 Figure 2: error of the mean vs n for every summation protocol"}
    one = plots.figure_title(sc, [dict(SWEEP, figure="fig2_uniform")], "sweep", several=False)
    keyed = sc["title"].replace("Seed 004", "Seed 004 (Balle et al. 2020)")  # issue 29: the seed's paper named
    assert one.replace("\n", " ") == keyed and "fig2_uniform" not in one
    two = plots.figure_title(sc, [dict(SWEEP, figure="fig2_uniform")], "sweep", several=True)
    assert two.replace("\n", " ").startswith(keyed) and two.splitlines()[-1] == "MSE against n, uniform data"
    curve = plots.figure_title(sc, [dict(CURVE, args={"n": 1000})], "curve", several=True)
    assert curve.splitlines()[-1] == "δ(ε), n = 1000"


def test_exact_line_is_drawn_above_the_empirical_points_and_in_the_legend(captured):
    plots.plot_sweeps([SWEEP], {"s": _sweep_frame([1000, 10000, 100000])}, Path("x.png"), "t")
    ax = captured["fig"].axes[0]
    exact = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and len(ln.get_xdata()) == 3]
    assert len(exact) == 2
    points = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert points and all(p.get_linestyle() == "None" for p in points)  # markers only: nothing hides the line
    assert min(e.get_zorder() for e in exact) > max(p.get_zorder() for p in points)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1].startswith("exact expectation") and {"a", "b"} <= set(labels)


def test_a_single_point_is_a_marker_not_a_curve(captured):
    frame = _sweep_frame([10000])
    frame["rmse"] = np.sqrt(frame["mse"])
    plots.plot_sweeps([dict(SWEEP, y="rmse")], {"s": frame}, Path("x.png"), "t")
    ax = captured["fig"].axes[0]
    drawn = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
    assert drawn and all(ln.get_linestyle() == "None" for ln in drawn)


def test_twelve_curves_become_panels_with_short_legends(captured):
    """Seed 001 Figure 1's layout: 4 methods x n_c in {1, 2, 4} -> 3 panels of 4 curves, one legend."""
    steps, frames = [], {}
    eps = np.linspace(0.1, 2.0, 6)
    for j, (name, what) in enumerate((("s1", "P_s (strong-1d)"), ("st", "strong full view"), ("w", "P_w (weak)"),
                                      ("b", "Balle et al. (basic comp.)"))):
        steps.append(dict(CURVE, name=name))  # four different curves (equal ones are drawn once: issue 29)
        frames[name] = pd.DataFrame([{"label": f"{what}, n_c={c}", "eps": e, "delta_upper": np.exp(-(5 + j) * e / c),
                                      "applicable": True} for c in (1, 2, 4) for e in eps])
    plots.plot_curves(steps, frames, Path("x.png"), "Seed 001 Figure 1")
    fig = captured["fig"]
    axes = [a for a in fig.axes if a.get_lines()]
    assert [a.get_title() for a in axes] == ["n_c=1", "n_c=2", "n_c=4"]
    assert all(len(a.get_lines()) == 4 for a in axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["P_s (strong-1d)", "strong full view", "P_w (weak)",
                                                          "Balle et al. (basic comp.)"]


def test_few_curves_stay_in_one_panel(captured):
    frames = {"c": pd.DataFrame([{"label": f"k-RR ({r})", "eps": e, "delta_upper": 0.1 / (1 + e),
                                  "applicable": True} for r in ("strong", "weak") for e in (0.1, 0.5, 1.0)])}
    plots.plot_curves([dict(CURVE, name="c")], frames, Path("x.png"), "Quickstart")
    fig = captured["fig"]
    assert len(fig.axes) == 1 and fig.axes[0].get_title() == "Quickstart"


def test_data_ticks_label_only_the_data():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shufflesim.experiments.plots import data_ticks

    fig, ax = plt.subplots()
    ax.plot([0.0146, 0.0337, 0.0866, 0.298], [1, 2, 3, 4])
    ax.set_xscale("log")
    data_ticks(ax.xaxis, [0.0146, 0.0337, 0.0866, 0.298])
    fig.canvas.draw()
    major = [t.get_text() for t in ax.get_xticklabels()]
    minor = [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    plt.close(fig)
    assert major == ["0.0146", "0.0337", "0.0866", "0.298"] and minor == []
