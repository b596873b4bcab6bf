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
            "flame_eps_c", "biswas_gowalla_sf", "biswas_gowalla_paris", "flame_training"} <= stems


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_parses_and_runs_quick(path, tmp_path):
    sc = load(path)
    meta = run_scenario(sc, tmp_path / path.stem, quick=True)
    out = tmp_path / path.stem
    report = (out / "report.md").read_text()
    assert sc["title"] in report and "mode **quick**" in report
    assert (out / "run.json").exists() and (out / "scenario.toml").read_bytes() == path.read_bytes()
    for s in sc["curve"] + sc["table"] + sc["training"] + [s for s in sc["sweep"] if s["in_quick"]]:
        assert (out / "results" / f"{s['name']}.csv").exists()
        assert (out / "results" / f"{s['name']}.parquet").exists()
    for png in meta["plots"]:
        assert (out / png).stat().st_size > 1000 and f"![{png}]({png})" in report
    if sc["claims"]:
        assert "| paper_value | shufflesim_value | verdict | caveat |" in report
    for s in sc["table"]:
        assert "| paper_mse | shufflesim_mse | verdict |" in report


# --- schema errors: the exact messages ---------------------------------------------------------------------
@pytest.mark.parametrize("edit, message", [
    (("trials = 30", "trials = 30\ntrails = 3"),
     "sweep[0].trails: unknown key (valid keys: name, protocol, label, figure, n, quick_n, data, params, trials, "
     "quick_trials, engine, matched_to, in_quick, chunk_size, point_seconds, x, y, logx, logy, xlabel, ylabel)"),
    (('title = "small"', 'title = "small"\ncolour = "red"'),
     "colour: unknown key (valid keys: title, paper, reproduces, description, seed, claims, paper_notes, sweep, "
     "curve, table, training)"),
    (("trials = 30", 'trials = "30"'), "sweep[0].trials: expected integer, got str '30'"),
    (("trials = 30", "trials = 0"), "sweep[0].trials: 0 is out of range (allowed: >= 1)"),
    (("n = [200, 400]", "n = [200, -4]"), "sweep[0].n[1]: -4 is out of range (allowed: >= 1)"),
    (('mechanism = "krr"', 'mechanism = "krrr"'),
     "curve[0].mechanism: 'krrr' is not allowed (allowed: krr, rr2, clones, biswas, central-laplace, central-gaussian)"),
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
