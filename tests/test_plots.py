"""Plots for a paper (issue 18): titles from the scenario, the exact line visible and in the legend, single
points drawn as markers, crowded curve figures split into panels, data ticks that do not overlap."""

from __future__ import annotations

from pathlib import Path

import zlib

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


# --- issue 29: plots a paper can use ---------------------------------------------------------------------------
# Every test below inspects the matplotlib figure objects (not pixels) and fails on the code before issue 29.

def _colour(artist) -> tuple:
    import matplotlib.colors as mcolors

    c = artist.get_color() if hasattr(artist, "get_color") else artist.get_facecolor()
    return tuple(np.round(mcolors.to_rgba(c), 3))


def _data_axes(fig):
    """The axes that draw data (not colour bars)."""
    return [a for a in fig.axes if a.get_label() != "<colorbar>"]


def test_the_seed_key_names_each_seed_paper_once():
    from shufflesim.core.papers import SEED_PAPERS, SEED_SHORT
    from shufflesim.experiments.plots import with_seed_key

    assert with_seed_key("Seed 004 Table 3 and seed 004 §8; seed 003") == \
        "Seed 004 (Balle et al. 2020) Table 3 and seed 004 §8; seed 003 (Biswas et al. 2023)"
    assert with_seed_key("seed 004 (Balle, Bell, Gascon, Nissim)") == "seed 004 (Balle, Bell, Gascon, Nissim)"
    assert set(SEED_SHORT) == set(SEED_PAPERS) == {"000", "001", "002", "003", "004"}  # shared/papers holds five


def test_sweep_cli_plot_has_one_colour_per_series_and_n_k_in_the_title():
    """``shufflesim sweep``'s plot: a series' points and its exact line in one colour; n and k in the title."""
    from shufflesim.experiments.plots import draw_mse

    rows = [{"series": f"eps0={e}", "param_eps0": e, "param_k": 4, "n": 1000, "mse": m * 1.05, "mse_lo": m * 0.9,
             "mse_hi": m * 1.2, "mse_expected": m} for e in (1.0, 2.0) for m in (10.0 / e, 5.0 / e, 2.0 / e)]
    for i, r in enumerate(rows):
        r["param_eps0"] = (1.0, 2.0)[i // 3] + 0.1 * (i % 3)
    df = pd.DataFrame(rows)
    fig = draw_mse(df, "param_eps0", title="krr: empirical MSE", hue="series")
    try:
        (ax,) = fig.axes
        markers = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
        exact = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-" and len(ln.get_xdata()) == 3]
        assert len(markers) == len(exact) == 2
        assert [_colour(m) for m in markers] == [_colour(e) for e in exact]
        assert len({_colour(m) for m in markers}) == 2
        title = ax.get_title()
        assert "n = 1,000" in title and "k = 4" in title
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_sweep_cli_plot_with_one_n_is_not_a_plot_against_n():
    from shufflesim.experiments.plots import draw_mse

    df = pd.DataFrame([{"series": s, "n": 1000, "mse": v, "mse_lo": v * 0.9, "mse_hi": v * 1.1,
                        "mse_expected": v} for s, v in (("data=uniform", 3.0), ("data=zipf", 5.0))])
    fig = draw_mse(df, "n", title="krr", hue="series")
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == "linear" and [t.get_text() for t in ax.get_xticklabels()] == \
            ["data=uniform", "data=zipf"]
        assert "n = 1,000" in ax.get_xlabel()
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_scenario_sweep_title_has_n_k_and_the_seed_key(captured):
    sc = {"title": "Seed 003 Figure 2: TV distance vs n"}
    frame = _sweep_frame([1000, 10000])
    frame["param_k"] = 15
    title = plots.figure_title(sc, [SWEEP], "sweep", several=False)
    plots.plot_sweeps([SWEEP], {"s": frame}, Path("x.png"), title)
    text = captured["fig"].axes[0].get_title()
    assert "Seed 003 (Biswas et al. 2023)" in text
    assert "n = 1,000…10,000" in text and "k = 15" in text


def test_a_single_n_is_not_drawn_against_n(captured):
    """Quick mode's one n: each series' value at that n, side by side, not an axis "against n" with one tick."""
    frame = _sweep_frame([10000])
    frame["rmse_mean"] = np.sqrt(frame["mse"]) / frame["n"]
    plots.plot_sweeps([dict(SWEEP, y="rmse_mean")], {"s": frame}, Path("x.png"), "t")
    ax = captured["fig"].axes[0]
    assert ax.get_xscale() == "linear"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert "n = 10,000" in ax.get_xlabel() and "one n" in ax.get_title()


def test_equal_series_hide_nothing(captured):
    """Two series with the same values: their markers side by side, their exact lines dashed in turn."""
    frame = _sweep_frame([0, 10, 50])
    frame.loc[frame["label"] == "b", ["mse", "mse_lo", "mse_hi", "mse_expected"]] = \
        frame.loc[frame["label"] == "a", ["mse", "mse_lo", "mse_hi", "mse_expected"]].to_numpy()
    step = dict(SWEEP, x="dishonest", logx=False, logy=False)
    frame["param_dishonest"] = frame["n"]
    frame["n"] = 1000
    plots.plot_sweeps([step], {"s": frame}, Path("x.png"), "t")
    ax = captured["fig"].axes[0]
    points = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    xs = [np.asarray(p.get_xdata(), dtype=float) for p in points]
    assert len(points) == 2 and not np.allclose(xs[0], xs[1])
    exact = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 3 and ln.get_marker() in ("None", None, "")]
    # each colour shows in turn: the dash offsets differ (matplotlib has no public getter for the dash pattern)
    assert len(exact) == 2 and exact[0]._dash_pattern[0] != exact[1]._dash_pattern[0]
    assert ax.get_xlabel() == "dishonest users c"  # issue 29: the IKOS panel's x label was the bare key


CURVE_ROWS = dict(applicable=True, method="tight")


def _curves(steps_spec):
    steps, frames = [], {}
    for name, labels, method in steps_spec:
        steps.append(dict(CURVE, name=name))
        frames[name] = pd.DataFrame([dict(CURVE_ROWS, label=lb, method=method, eps=e,
                                          delta_upper=np.exp(-(3 + j + 7 * k) * e) / (1 + k),
                                          delta_lower=np.exp(-(3 + j + 7 * k) * e) / (1 + k) / 10)
                                     for j, lb in enumerate(labels) for e in np.linspace(0.1, 2.0, 5)
                                     for k in [zlib.crc32(name.encode()) % 5]])  # not hash(): salted per process
    return steps, frames


def test_at_most_six_series_a_panel_and_every_axes_labelled(captured):
    """Seed 001 Figures 3–5: 3 + 3 + 3 + 2 = 11 curves (the last method has no n_c = 1) -> panels by n_c."""
    spec = [(n, [f"{n} curve, n_c={c}" for c in cs], "tight") for n, cs in
            (("fa", (1, 4, 16)), ("fa2", (1, 4, 16)), ("fb", (1, 4, 16)), ("fadv", (4, 16)))]
    steps, frames = _curves(spec)
    plots.plot_curves(steps, frames, Path("x.png"), "Seed 001 Figures 3–5, FA against baselines")
    fig = captured["fig"]
    axes = _data_axes(fig)
    assert len(axes) >= 2
    for a in axes:
        assert 0 < len(a.get_lines()) <= 6
        assert a.get_xlabel()
    assert axes[0].get_ylabel()  # the panels share their y axis
    assert "Fourier accountant" in fig._suptitle.get_text()  # "FA" explained


def test_certified_intervals_are_bands_from_lower_to_upper(captured):
    from matplotlib.collections import PolyCollection

    steps, frames = _curves([("t", ["tight"], "tight")])
    plots.plot_curves(steps, frames, Path("x.png"), "t")
    ax = captured["fig"].axes[0]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1
    ys = bands[0].get_paths()[0].vertices[:, 1]
    f = frames["t"]
    assert np.isclose(ys.min(), f["delta_lower"].min()) and np.isclose(ys.max(), f["delta_upper"].max())


def test_biswas_eq6_is_not_called_an_upper_bound(captured):
    steps, frames = _curves([("eq6", ["eq 6 (closed form, as published)"], "biswas")])
    frames["eq6"]["delta_lower"] = None
    plots.plot_curves(steps, frames, Path("x.png"), "Seed 003 Tables II and IV")
    ax = captured["fig"].axes[0]
    assert "upper bound" not in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("not a certified bound" in lb for lb in labels)


def test_curves_drawn_over_each_other_are_one_line_with_both_names(captured):
    steps, frames = _curves([("a", ["method A"], "tight"), ("b", ["method B"], "tight")])
    frames["b"][["delta_upper", "delta_lower"]] = frames["a"][["delta_upper", "delta_lower"]].to_numpy()
    plots.plot_curves(steps, frames, Path("x.png"), "t")
    ax = captured["fig"].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "method A = method B" in labels


def test_agreement_labels_keep_their_values(captured):
    """The cut at 48 characters printed "…of ε0=" without the value (biswas_fig2, Gowalla)."""
    label = "analytic Gaussian at the certified (ε, δ) of ε0=4.0"
    rows = pd.DataFrame([{"label": label, "n": 1000, "statistic": "mean", "paper": 0.014, "shufflesim": 0.025,
                          "range_lo": 0.015, "range_hi": 0.035, "verdict": "not reproduced"}])
    plots.plot_agreement(rows, Path("x.png"), "Seed 003 Figure 2: the paper's numbers")
    ax = captured["fig"].axes[0]
    (tick,) = [t.get_text() for t in ax.get_yticklabels()]
    assert "ε0=4.0" in tick.replace("\n", " ")
    assert "(Biswas et al. 2023)" in ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


def test_heatmap_panels_have_axis_labels(captured):
    cells = pd.DataFrame([{"n": 100, "cell": c, "true_p": 1 / 6, "estimate": 1 / 6, "label": "shuffle + INV"}
                          for c in range(6)])
    plots.plot_heatmaps([{"name": "c", "grid": [3, 2]}], {"c": cells}, Path("x.png"), "t")
    for ax in _data_axes(captured["fig"]):
        assert ax.get_xlabel() and ax.get_ylabel()


def test_a_quick_training_run_is_titled_a_smoke_test(captured):
    frame = pd.DataFrame([{"label": p, "round": r, "accuracy": 0.1 + 0.1 * r} for p in ("np", "ss-topk")
                          for r in range(3)])
    step = {"name": "t", "x": "round", "rounds": 10}
    plots.plot_training([step], {"t": frame}, Path("x.png"), "Seed 002 training study")
    assert "SMOKE TEST" in captured["fig"].axes[0].get_title()
    plots.plot_training([dict(step, rounds=2)], {"t": frame}, Path("x.png"), "Seed 002 training study")
    assert "SMOKE TEST" not in captured["fig"].axes[0].get_title()  # the study's own rounds: no mark


def test_seven_training_curves_are_two_panels(captured):
    """flame_training_mnist draws seven protocols: at most six a panel."""
    frame = pd.DataFrame([{"label": f"p{j}", "round": r, "accuracy": 0.1 + 0.05 * j * r} for j in range(7)
                          for r in range(3)])
    plots.plot_training([{"name": "t", "x": "round", "rounds": 2}], {"t": frame}, Path("x.png"), "t")
    axes = captured["fig"].axes
    assert len(axes) == 2 and all(0 < len(a.get_lines()) <= 6 and a.get_xlabel() for a in axes)
    assert axes[0].get_ylabel()


def test_equal_training_curves_hide_nothing(captured):
    """balle2020_s8's poisoning plot: two range-check settings with equal accuracies drew one line over the other."""
    frame = pd.DataFrame([{"label": p, "round": r, "accuracy": 0.1 + 0.1 * r + (0.05 if p == "c" else 0.0)}
                          for p in ("a", "b", "c") for r in range(3)])
    plots.plot_training([{"name": "t", "x": "round", "rounds": 2}], {"t": frame}, Path("x.png"), "t")
    a, b, c = captured["fig"].axes[0].get_lines()
    assert a._dash_pattern[0] != b._dash_pattern[0]  # equal curves: their dashes in turn (no public getter)
    assert c.get_linestyle() == "-"


def test_a_curve_entirely_below_the_axes_says_so(captured):
    steps, frames = _curves([("lo", ["tiny"], "tight"), ("hi", ["visible"], "tight")])
    frames["lo"]["delta_upper"] = 1e-20
    frames["lo"]["delta_lower"] = 1e-21
    plots.plot_curves(steps, frames, Path("x.png"), "t")
    labels = [t.get_text() for t in captured["fig"].axes[0].get_legend().get_texts()]
    assert any(lb.startswith("tiny") and "below the axes" in lb for lb in labels)


def test_demo_at_an_eps0_beyond_what_an_axis_shows_skips_its_plots(tmp_path, capsys):
    """The fuzz walk: `demo --eps0 1e308` printed matplotlib's multi-line warnings (no positive value on a log
    axis, a ticker overflow); its figures are skipped with one note, and nothing warns."""
    import warnings

    from shufflesim.cli.main import main

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["demo", "--k", "3", "--eps0", "1e308", "--trials", "2", "--output", str(tmp_path / "d")]) == 0
    assert [str(w.message) for w in caught] == []
    err = capsys.readouterr().err
    assert "note: no plots: a value beyond 1e+300" in err
    assert not list((tmp_path / "d").glob("*.png"))


def test_an_all_zero_series_keeps_a_linear_axis():
    import matplotlib.pyplot as plt

    from shufflesim.experiments.plots import log_scale

    fig, ax = plt.subplots()
    assert not log_scale(ax, "y", [0.0, 0.0, float("nan")]) and ax.get_yscale() == "linear"
    assert log_scale(ax, "x", [0.0, 2.0]) and ax.get_xscale() == "log"
    plt.close(fig)
