"""Scenario files (issue 12): schema errors, every scenario in --quick mode, reports with and without
matplotlib, identical result files for the same seed, the ``shufflesim run`` command."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from shufflesim.cli.main import main
from shufflesim.scenarios.runner import run_scenario
from shufflesim.scenarios.schema import ScenarioError, load

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

SMALL = """
title = "small"
paper = "none"
reproduces = "none"
seed = 7

[[sweep]]
name = "s"
protocol = "krr"
n = [200, 400]
params = { k = 4, eps0 = 1.0 }
trials = 30
chunk_size = 10

[[curve]]
name = "c"
mechanism = "krr"
args = { n = 200, k = 4, gamma = 0.5, relation = "weak" }
eps = [0.5, 1.0]
"""


def _write(tmp_path: Path, text: str, name: str = "sc.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_the_scenarios_exist():
    stems = {p.stem for p in SCENARIOS}
    assert {"quickstart", "koskela_fig1", "koskela_fig2", "koskela_figs3_5", "koskela_figs6_9", "koskela_fig10",
            "balle2020_fig2", "balle2020_table2", "balle2020_table3", "biswas_fig2", "biswas_tables2_4",
            "flame_eps_c", "biswas_gowalla_sf", "biswas_gowalla_paris", "flame_training", "biswas_table5",
            "flame_training_mnist"} <= stems


#: scenarios whose --quick run alone takes 20 s to several minutes of the default suite: their quick run is marked
#: slow (--run-slow runs it); by default they are still parsed and checked (test_slow_scenarios_parse_and_check),
#: and every step kind they use runs quick in a cheaper scenario (curve: koskela_fig10, ...; training:
#: flame_training; cells: biswas_gowalla_paris; sweep with a coalition axis: tests/test_cli_dishonest.py;
#: defence: test_defence_step_runs_quick below)
SLOW_QUICK = {"balle2020_s8_dishonest", "koskela_fig1", "koskela_fig2", "koskela_figs3_5", "koskela_figs6_9",
              "flame_training_mnist", "biswas_gowalla_sf", "flame_training_sampling"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_QUICK else p
                                  for p in SCENARIOS], ids=lambda p: p.stem)
def test_every_scenario_parses_and_runs_quick(path, tmp_path):
    _check_quick_run(path, tmp_path)


@pytest.mark.parametrize("path", [p for p in SCENARIOS if p.stem in SLOW_QUICK], ids=lambda p: p.stem)
def test_slow_scenarios_parse_and_check(path):
    """The scenarios whose quick run is slow: parsed (schema), and every check made before anything runs passes
    (except balle2020_s8_dishonest's, which calibrates its protocols at n = 1000: ~10 s)."""
    from shufflesim.scenarios.steps import check_runnable

    assert set(SLOW_QUICK) <= {p.stem for p in SCENARIOS}
    sc = load(path)
    if path.stem != "balle2020_s8_dishonest":
        check_runnable(sc, quick=True)


DEFENCE = """
title = "defence"
paper = "none"
reproduces = "none"
seed = 3

[[defence]]
name = "tol"
protocol = "blanket-sum"
n = 200
params = { eps = 1.0, mode = "bennett" }
tolerate = [0.0, 0.1, 0.3]
quick_tolerate = [0.0, 0.1]
figure = "price"

[[defence]]
name = "tol_ikos"
protocol = "ikos-sum"
n = 30
params = { eps = 1.0 }
tolerate = 0.2
figure = "price"
"""


def test_defence_step_runs_quick(tmp_path):
    """A [[defence]] step in quick mode (the step kind of balle2020_s8_dishonest, whose quick run is slow): one row
    per (protocol, F) with h0 = ceil((1 - F) n) honest users, each certified; the plot and the report are drawn."""
    import math

    path = _write(tmp_path, DEFENCE)
    _check_quick_run(path, tmp_path)
    df = pd.read_csv(tmp_path / path.stem / "results" / "tol.csv")
    assert df["tolerate"].tolist() == [0.0, 0.1]  # quick_tolerate
    assert df["honest_min"].tolist() == [math.ceil((1 - f) * 200) for f in (0.0, 0.1)] == [200, 180]
    assert df["certified"].all() and (df["mse_ratio"] >= 1.0).all()
    ikos = pd.read_csv(tmp_path / path.stem / "results" / "tol_ikos.csv")
    assert ikos["honest_min"].tolist() == [24] and ikos["certified"].all()


def _check_quick_run(path: Path, tmp_path: Path) -> None:
    sc = load(path)
    meta = run_scenario(sc, tmp_path / path.stem, quick=True)
    out = tmp_path / path.stem
    report = (out / "report.md").read_text()
    assert sc["title"] in report and "mode **quick**" in report
    assert (out / "run.json").exists() and (out / "scenario.toml").read_bytes() == path.read_bytes()
    for s in sc["curve"] + sc["table"] + sc["training"] + sc["cells"] + [s for s in sc["sweep"] if s["in_quick"]]:
        assert (out / "results" / f"{s['name']}.csv").exists()
        assert (out / "results" / f"{s['name']}.parquet").exists()
    if (out / "results" / "paper.csv").exists():  # printed values next to shufflesim's, with verdicts
        assert "| paper | shufflesim | range_lo | range_hi | percentile | verdict |" in report
        assert "paper_vs_shufflesim.png" in meta["plots"]
    for png in meta["plots"]:
        assert (out / png).stat().st_size > 1000 and f"![{png}]({png})" in report
    if sc["claims"]:
        assert "| paper_value | shufflesim_value | verdict | caveat |" in report
    for s in sc["table"]:
        assert "| paper_mse | shufflesim_mse | verdict |" in report


# --- schema errors: the exact messages ---------------------------------------------------------------------
@pytest.mark.parametrize("edit, message", [
    (("trials = 30", "trials = 30\ntrails = 3"),
     "sweep[0].trails: unknown key (valid keys: name, protocol, label, figure, plot, n, quick_n, data, params, trials, "
     "quick_trials, engine, matched_to, in_quick, chunk_size, point_seconds, lower, upper, paper, x, y, logx, logy, "
     "xlabel, ylabel); did you mean 'trials'?"),
    (('title = "small"', 'title = "small"\ncolour = "red"'),
     "colour: unknown key (valid keys: title, paper, reproduces, description, seed, claims, paper_notes, sweep, "
     "curve, table, training, cells, defence)"),
    (("trials = 30", 'trials = "30"'), "sweep[0].trials: expected integer, got str '30'"),
    (("trials = 30", "trials = 0"), "sweep[0].trials: 0 is out of range (allowed: >= 1)"),
    (("n = [200, 400]", "n = [200, -4]"), "sweep[0].n[1]: -4 is out of range (allowed: >= 1)"),
    (('mechanism = "krr"', 'mechanism = "krrr"'),
     "curve[0].mechanism: 'krrr' is not allowed (allowed: krr, rr2, clones, biswas, central-laplace, central-gaussian); "
     "did you mean 'krr'?"),
    (("trials = 30\n", "engine = \"quick\"\n"), None),
    (("seed = 7", ""), "seed: missing required key (root seed of every Monte-Carlo step)"),
    (('protocol = "krr"', ""), "sweep[0].protocol: missing required key (a registered protocol (shufflesim simulate --help))"),
    (("eps = [0.5, 1.0]", ""), "curve[0]: give exactly one of eps and eps_range"),
])
def test_schema_errors_name_the_key(tmp_path, edit, message):
    old, new = edit
    if message is None:  # two edits: the trials line removed and a bad engine: missing trials is reported first
        text = SMALL.replace(old, new)
        message = "sweep[0].trials: missing required key (integer)"
    else:
        text = SMALL.replace(old, new, 1)
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as exc:
        load(path)
    assert str(exc.value) == f"{path}: {message}"


def test_wrong_choice_and_bad_toml(tmp_path):
    path = _write(tmp_path, SMALL.replace('chunk_size = 10', 'chunk_size = 10\nengine = "quick"'))
    with pytest.raises(ScenarioError, match=r"sweep\[0\]\.engine: 'quick' is not allowed \(allowed: faithful, fast, auto\)"):
        load(path)
    path = _write(tmp_path, "title = ", "bad.toml")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load(path)


def test_cli_reports_schema_error_in_one_line(tmp_path, capsys):
    path = _write(tmp_path, SMALL.replace("trials = 30", "trials = 30\ntrails = 3"))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: sweep[0].trails: unknown key (valid keys: name, protocol,")
    assert "\n" not in err and not (tmp_path / "o").exists()  # nothing ran


def test_long_scenario_asks_for_yes_or_quick(tmp_path, capsys):
    path = _write(tmp_path, SMALL.replace("trials = 30", "trials = 30000000\nquick_trials = 5"))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "would take about" in err and "pass --yes to run it or --quick for a small run" in err
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quick"]) == 0


# --- outputs ----------------------------------------------------------------------------------------------
def test_report_with_and_without_matplotlib(tmp_path, monkeypatch):
    sc = load(_write(tmp_path, SMALL))
    meta = run_scenario(sc, tmp_path / "with")
    assert meta["plots"] == ["s.png", "c.png"] and (tmp_path / "with" / "s.png").exists()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    meta = run_scenario(sc, tmp_path / "without")
    assert meta["plots"] == [] and "matplotlib is not installed" in meta["plots_skipped"]
    report = (tmp_path / "without" / "report.md").read_text()
    assert "Plots were skipped: matplotlib is not installed" in report and ".png" not in report
    assert (tmp_path / "without" / "results" / "s.csv").exists()


def test_same_seed_gives_identical_result_files(tmp_path):
    sc = load(_write(tmp_path, SMALL))
    run_scenario(sc, tmp_path / "a", workers=1)
    run_scenario(sc, tmp_path / "b", workers=2)
    run_scenario(sc, tmp_path / "a")  # again into the same directory (starts afresh)
    for name in ("s", "c"):
        assert (tmp_path / "a" / "results" / f"{name}.csv").read_bytes() == \
            (tmp_path / "b" / "results" / f"{name}.csv").read_bytes()
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a" / "results" / f"{name}.parquet"),
                                      pd.read_parquet(tmp_path / "b" / "results" / f"{name}.parquet"))
    other = load(_write(tmp_path, SMALL.replace("seed = 7", "seed = 8"), "other.toml"))
    run_scenario(other, tmp_path / "c")
    assert (tmp_path / "a" / "results" / "s.csv").read_bytes() != (tmp_path / "c" / "results" / "s.csv").read_bytes()


def test_resume_continues_the_sweeps(tmp_path):
    sc = load(_write(tmp_path, SMALL))
    run_scenario(sc, tmp_path / "a")
    first = (tmp_path / "a" / "results" / "s.csv").read_bytes()
    run_scenario(sc, tmp_path / "a", resume=True)
    assert (tmp_path / "a" / "results" / "s.csv").read_bytes() == first


def test_run_all_quick_and_check(tmp_path, capsys):
    d = tmp_path / "sc"
    d.mkdir()
    _write(d, SMALL, "one.toml")
    _write(d, SMALL.replace("seed = 7", "seed = 9"), "two.toml")
    assert main(["run", "--all", "--quick", "--dir", str(d), "--out", str(tmp_path / "runs")]) == 0
    assert (tmp_path / "runs" / "one" / "report.md").exists() and (tmp_path / "runs" / "two" / "report.md").exists()
    assert "one/report.md" in (tmp_path / "runs" / "index.md").read_text()
    assert main(["run", "--check", str(d / "one.toml")]) == 0
    assert ": ok, about" in capsys.readouterr().out
    assert main(["run"]) == 2


def test_matched_to_runs_the_baseline_at_the_certified_guarantee(tmp_path):
    text = SMALL + """
[[sweep]]
name = "g"
protocol = "central-gaussian-hist"
matched_to = "s"
n = 200
params = { k = 4 }
trials = 10
y = "tv"
"""
    sc = load(_write(tmp_path, text))
    run_scenario(sc, tmp_path / "o")
    g = pd.read_csv(tmp_path / "o" / "results" / "g.csv")
    s = pd.read_csv(tmp_path / "o" / "results" / "s.csv")
    assert list(g["n"]) == list(s["n"]) == [200, 400]
    from shufflesim.pipeline import registry

    want = registry.create("krr", 400, k=4, eps0=1.0).privacy()
    assert g["param_eps"].iloc[1] == pytest.approx(want.eps) and g["param_delta"].iloc[1] == pytest.approx(want.delta)
    bad = _write(tmp_path, text.replace('matched_to = "s"', 'matched_to = "later"'), "bad.toml")
    with pytest.raises(ScenarioError, match=r"sweep\[1\]\.matched_to: 'later' is not an earlier sweep \(earlier: s\)"):
        load(bad)


def test_gowalla_cells_are_the_derivation_of_the_shared_data(tmp_path):
    """The shipped cell files are what shufflesim.scenarios.gowalla derives (when the source data are here)."""
    from shufflesim.scenarios import gowalla

    src = ROOT.parent / "shared" / "data" / "gowalla"
    shipped = ROOT / "shufflesim" / "datasets"
    for name, (_, _, _, cols, rows) in gowalla.GRIDS.items():
        cells = pd.read_csv(shipped / f"gowalla_{name}_cells.csv.gz")["cell"]
        assert cells.between(0, cols * rows - 1).all()
    if not src.is_dir():
        pytest.skip("the source check-ins are not on this machine")
    out = gowalla.derive(src, tmp_path)
    for name, path in out.items():
        assert pd.read_csv(path).equals(pd.read_csv(shipped / path.name))
    assert len(pd.read_csv(out["sf"])) == 123026 and len(pd.read_csv(out["paris"])) == 11190
    # the grid: the box's corners fall in the first and the last cell
    assert list(gowalla.cells([37.7228, 37.7946], [-122.5153, -122.3789], (37.7228, 37.7946),
                              (-122.5153, -122.3789), 24, 17)) == [0, 24 * 17 - 1]


# --- the paper's printed values (issue 12: a verdict column from the sampling distribution) ------------------
def test_agreement_ranges_come_from_the_sampling_distribution():
    import numpy as np

    from shufflesim.scenarios import agreement

    x = np.random.default_rng(0).exponential(1.0, size=4000)
    gen = np.random.default_rng(1)
    single = agreement.reference(x, 1, "mean", gen)  # one run: the trials themselves
    a = agreement.compare(float(np.median(x)), single, 0.95)
    assert a.verdict == "reproduced" and a.percentile == pytest.approx(50, abs=0.1)
    assert (a.lo, a.hi) == pytest.approx(tuple(np.quantile(x, [0.025, 0.975])))
    means = agreement.reference(x, 50, "mean", gen)  # the mean of 50 runs: sd 1/sqrt(50) of one run's
    assert agreement.compare(float(x.mean()), means, 0.95).verdict == "reproduced"
    far = agreement.compare(float(x.mean() + 5 * x.std() / np.sqrt(50)), means, 0.95)
    assert far.verdict == "not reproduced" and far.side == "paper above" and far.percentile == 100
    stds = agreement.reference(x, 50, "std", gen)
    assert agreement.compare(float(x.std()), stds, 0.95).verdict == "reproduced"
    with pytest.raises(Exception, match="standard deviation of a single run"):
        agreement.reference(x, 1, "std", gen)


def test_column_check_flags_a_systematically_low_column():
    from shufflesim.scenarios.agreement import column_checks

    rows = pd.DataFrame({"source": "t", "statistic": "mean", "n": 10, "percentile": [3, 10, 20, 30, 1, 5, 40.0]})
    (line,) = column_checks(rows)
    assert "7 of 7" in line and "p = 0.016" in line and "systematically low" in line
    rows["percentile"] = [3, 80, 20, 70, 1, 95, 40.0]
    assert "no systematic offset" in column_checks(rows)[0]
    assert column_checks(rows.head(4)) == []  # too few numbers for a column check


CELLS = SMALL + """
[[cells]]
name = "k"
protocol = "krr"
label = "krr eps0={eps0}"
n = [300, 600]
data = "zipf:1.0"
params = { k = 6, eps0 = 2.0 }
cells = [0, 5]
cell_labels = [1, 6]
trials = 400
grid = [3, 2]
figure = "maps"
[cells.paper]
source = "a made-up table"
mean = { "300" = [0.01, 0.5] }

[[cells]]
name = "g"
protocol = "central-gaussian-hist"
matched_to = "k"
n = [300, 600]
data = "zipf:1.0"
params = { k = 6 }
cells = [0, 5]
trials = 400
grid = [3, 2]
figure = "maps"
"""


def test_cells_step_tables_heatmaps_and_verdicts(tmp_path):
    import numpy as np

    from shufflesim.experiments.data import load_data

    sc = load(_write(tmp_path, CELLS))
    meta = run_scenario(sc, tmp_path / "o")
    out = tmp_path / "o"
    k = pd.read_csv(out / "results" / "k.csv")
    assert list(k["x0"]) == [1, 6, 1, 6] and list(k["n"]) == [300, 300, 600, 600]
    x = load_data("zipf:1.0", data_kind="categorical", n=300, k=6,
                  rng=np.random.SeedSequence(7, spawn_key=(0, 0)))  # the scenario's data stream (0, 0)
    assert k["true_p"].iloc[:2].tolist() == pytest.approx(list(np.bincount(x, minlength=6)[[0, 5]] / 300))
    assert (k["q025"] <= k["median"]).all() and (k["median"] <= k["q975"]).all()
    maps = pd.read_csv(out / "results" / "k_cells.csv")
    assert len(maps) == 2 * 6 and maps.groupby("n")["estimate"].sum().tolist() == pytest.approx([1.0, 1.0])
    assert "maps.png" in meta["plots"] and (out / "maps.png").stat().st_size > 1000
    paper = pd.read_csv(out / "results" / "paper.csv")
    assert list(paper["x0"]) == [1, 6] and list(paper["paper"]) == [0.01, 0.5]
    assert paper["verdict"].tolist()[1] == "not reproduced" and paper["side"].tolist()[1] == "paper above"
    assert paper["level"].iloc[0] == pytest.approx(0.975)  # 95 % over the table's two printed numbers
    g = pd.read_csv(out / "results" / "g.csv")  # the Gaussian at the certified (eps, delta) of k's points
    from shufflesim.pipeline import registry

    want = registry.create("krr", 600, k=6, eps0=2.0).privacy()
    assert g["param_eps"].iloc[-1] == pytest.approx(want.eps)
    run_scenario(sc, tmp_path / "again")
    for name in ("k", "g", "k_cells", "paper"):
        assert (out / "results" / f"{name}.csv").read_bytes() == \
            (tmp_path / "again" / "results" / f"{name}.csv").read_bytes()


def test_sweep_paper_values_use_the_papers_statistic(tmp_path):
    """abs_error_mean is |estimated sum − true sum| / n per trial, as seed 004 Table 2 reports it."""
    import numpy as np

    from shufflesim.experiments.sweep import read_records

    text = """
title = "t"
paper = "none"
reproduces = "none"
seed = 5

[[sweep]]
name = "lap"
protocol = "central-laplace-sum"
n = 1000
data = "uniform"
params = { eps = 1.0 }
trials = 300
plot = false
[sweep.paper]
source = "made up"
statistic = "abs_error_mean"
runs = 20
mean = { "1000" = 0.001 }
std = { "1000" = 0.001 }
"""
    sc = load(_write(tmp_path, text))
    meta = run_scenario(sc, tmp_path / "o")
    paper = pd.read_csv(tmp_path / "o" / "results" / "paper.csv")
    err = np.abs(read_records(tmp_path / "o" / "sweeps" / "lap")["error"].to_numpy()) / 1000
    assert paper["shufflesim"].tolist() == pytest.approx([err.mean(), err.std()])
    # E|Laplace(1/eps)| / n = 1e-3 and its sd 1e-3: both printed numbers are plausible outcomes of 20 runs
    assert paper["verdict"].tolist() == ["reproduced", "reproduced"]
    assert meta["plots"] == ["paper_vs_shufflesim.png"]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "R = 20 (the paper's runs)" in report and "Bonferroni-corrected over the 2 printed numbers" in report


def test_curve_against_a_mechanism_flag(tmp_path):
    from shufflesim.accounting import account
    from shufflesim.mechanisms import KRR

    text = SMALL + """
[[curve]]
name = "v"
mechanism = "krr"
args = { n = 500, k = [2, 5], adversary = "strong-1d" }
x = "eps0"
x_range = [1.0, 3.0, 3]
delta = 1e-6
label = "k={k}"
"""
    sc = load(_write(tmp_path, text))
    run_scenario(sc, tmp_path / "o")
    v = pd.read_csv(tmp_path / "o" / "results" / "v.csv")
    assert v["x"].tolist() == [1.0, 2.0, 3.0] * 2 and v["label"].tolist()[3] == "k=5"
    (r,) = account(KRR.from_eps0(500, 5, 2.0, "strong-1d"), delta=[1e-6]).results
    assert v["eps_upper"].iloc[4] == pytest.approx(r.eps_upper)


@pytest.mark.parametrize("text, message", [
    (CELLS.replace('mean = { "300" = [0.01, 0.5] }', 'mean = { "200" = [0.01, 0.5] }'),
     "cells[0].paper.mean.200: '200' is not allowed (allowed: an n of this step: 300, 600)"),
    (CELLS.replace('mean = { "300" = [0.01, 0.5] }', 'mean = { "300" = [0.01] }'),
     "cells[0].paper.mean.300: expected an array of 2 numbers (one per cell)"),
    (CELLS.replace('source = "a made-up table"', 'source = "a made-up table"\nruns = 1\nstd = { "300" = [1, 2] }'),
     "cells[0].paper.std: a standard deviation over runs needs runs >= 2 (give runs)"),
    (CELLS.replace('cell_labels = [1, 6]', 'cell_labels = [1]'), "cells[0].cell_labels: give one label per cell (2)"),
    (CELLS.replace('name = "k"', 'name = "s"'),
     "cells[0].name: 's' is used twice (step names are the result files' names: unique across the scenario, and "
     "not 'claims' or 'paper')"),
    (SMALL.replace('eps = [0.5, 1.0]', 'eps = [0.5, 1.0]\nx = "eps0"\nx_range = [1.0, 2.0, 3]\ndelta = 1e-6'),
     "curve[0]: eps and eps_range go with x = 'eps'; x = 'eps0' takes x_range and delta"),
    (SMALL.replace('eps = [0.5, 1.0]', 'x = "eps0"\nx_range = [1.0, 2.0, 3]'),
     "curve[0]: x = 'eps0' needs x_range = [start, stop, num] and delta"),
    (SMALL.replace('eps = [0.5, 1.0]', 'x = "eps0"\nx_range = [1.0, 2.0, 3]\ndelta = 1e-6').replace(
        'args = { n = 200, k = 4, gamma = 0.5, relation = "weak" }', 'args = { n = 200, k = 4 }'), None),
    (SMALL.replace("chunk_size = 10", 'chunk_size = 10\n[sweep.paper]\nsource = "s"\nmean = { "200" = 1.0 }'),
     "sweep[0].paper.statistic: missing required key (allowed: abs_error_mean, tv)"),
    (SMALL.replace("chunk_size = 10", "chunk_size = 10\nlower = 3"),
     "sweep[0]: give both lower and upper (the scaling of a real-valued CSV column) or neither"),
])
def test_schema_errors_of_the_new_keys(tmp_path, text, message):
    path = _write(tmp_path, text)
    if message is None:  # a valid file
        load(path)
        return
    with pytest.raises(ScenarioError) as exc:
        load(path)
    assert str(exc.value) == f"{path}: {message}"


def test_adult_squared_ages_are_the_derivation_of_the_shipped_ages(tmp_path):
    """seed 004 Table 2's data as the authors' code feeds them: (age / 130)², from the shipped ages."""
    import numpy as np

    from shufflesim.experiments.data import load_data
    from shufflesim.scenarios import adult

    shipped = ROOT / "shufflesim" / "datasets"
    out = adult.derive(shipped / "adult_age.csv", tmp_path)
    assert out.read_bytes() == (shipped / adult.FILE).read_bytes()
    x = load_data(f"{shipped / adult.FILE}:age_squared", data_kind="real", lower=0, upper=adult.MAX_AGE ** 2)
    ages = pd.read_csv(shipped / "adult_age.csv")["age"].to_numpy()
    assert x.size == 32561 and x == pytest.approx((ages / 130.0) ** 2, rel=1e-15)
    assert np.all((x >= 0) & (x <= 1))


def test_a_list_of_lists_is_an_axis_of_list_values(tmp_path):
    from shufflesim.scenarios.steps import shown_data, sweep_points

    text = SMALL.replace("params = { k = 4, eps0 = 1.0 }", "params = { k = [[4]], eps0 = [1.0, 2.0] }")
    sc = load(_write(tmp_path, text))
    pts = sweep_points(sc["sweep"][0], False)
    assert [p.params for p in pts[:2]] == [{"eps0": 1.0, "k": [4]}, {"eps0": 2.0, "k": [4]}]
    assert shown_data(sweep_points({**sc["sweep"][0], "data": "datasets/adult_age.csv:age"}, False)[0].data) == \
        "datasets/adult_age.csv:age"
