"""Output folders are ours (issue 29): no write follows a symbolic link inside an output folder, an empty
folder name is refused, and a sweep checks its whole grid before it writes anything.

The one write path is shufflesim/experiments/outdir.py (``refuse_links`` under every locked folder,
``check_no_links`` when the lock is taken); each test here plants a link where a command writes and checks
that the file outside is untouched and the refusal is one line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shufflesim.cli.main import main
from shufflesim.errors import ParameterError

SCENARIO = """title = "tiny"
paper = "none"
reproduces = "none"
seed = 1

[[sweep]]
name = "d"
protocol = "krr"
label = "k={k}"
n = [200]
data = "uniform"
params = { k = 4, eps0 = 1.0 }
trials = 5
engine = "fast"
"""

SWEEP = ["sweep", "krr", "--set", "k=4", "--set", "eps0=0.5,1", "--n", "200", "--trials", "4", "--engine", "fast",
         "--backend", "serial"]


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.fixture
def scenario(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(SCENARIO)
    (tmp_path / "outside").mkdir()
    return tmp_path / "s.toml"


def test_run_does_not_overwrite_through_a_linked_scenario_toml(scenario, tmp_path, capsys):
    """On main: `run`'s copy of the scenario overwrites the file the planted link points to."""
    victim = tmp_path / "outside" / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "o").mkdir()
    os.symlink(victim, tmp_path / "o" / "scenario.toml")
    assert main(["run", "s.toml", "--out", "o"]) == 2
    assert "symbolic link" in one_error(capsys)
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["scenario.toml"]  # nothing written


def test_run_does_not_write_into_a_linked_results_folder(scenario, tmp_path, capsys):
    """On main: d.csv / d.parquet land in the folder the planted `results` link points to."""
    (tmp_path / "o").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "o" / "results")
    assert main(["run", "s.toml", "--out", "o"]) == 2
    assert "symbolic link" in one_error(capsys)
    assert list((tmp_path / "outside").iterdir()) == []


def test_run_all_does_not_write_into_a_linked_scenario_folder(scenario, tmp_path, capsys):
    """On main: `run --all --out runs` writes the scenario's run into the folder `runs/s` links to."""
    (tmp_path / "scen").mkdir()
    scenario.rename(tmp_path / "scen" / "s.toml")
    (tmp_path / "runs").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "runs" / "s")
    assert main(["run", "--all", "--dir", "scen", "--out", "runs"]) == 2
    assert "symbolic link" in one_error(capsys)
    assert list((tmp_path / "outside").iterdir()) == []


def test_sweep_resume_does_not_write_into_a_linked_part_folder(tmp_path, capsys):
    """On main: --resume writes the missing part into the folder the planted `parts/p00001` link points to."""
    out, outside = tmp_path / "sw", tmp_path / "outside"
    outside.mkdir()
    assert main([*SWEEP, "--output", str(out)]) == 0
    capsys.readouterr()
    for f in (out / "parts" / "p00001").iterdir():
        f.unlink()
    (out / "parts" / "p00001").rmdir()
    os.symlink(outside, out / "parts" / "p00001")
    assert main([*SWEEP, "--output", str(out), "--resume"]) == 2
    line = one_error(capsys)
    assert "symbolic link" in line and "p00001" in line
    assert list(outside.iterdir()) == []


def test_simulate_output_with_a_planted_link_is_refused(tmp_path, capsys):
    out, victim = tmp_path / "o", tmp_path / "victim.csv"
    victim.write_text("precious\n")
    out.mkdir()
    os.symlink(victim, out / "records.csv")
    argv = ["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "100", "--trials", "3", "--output", str(out),
            "--overwrite"]
    assert main(argv) == 2
    assert "symbolic link" in one_error(capsys)
    assert victim.read_text() == "precious\n"


def test_a_link_planted_during_the_run_is_refused_at_the_write(tmp_path):
    """The lock's scan sees the folder as it was; every later write checks its path again (refuse_links)."""
    from shufflesim.experiments.outdir import DirectoryLock, atomic_path, make_dirs

    out, outside = tmp_path / "o", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    with DirectoryLock(out, "busy"):
        os.symlink(outside, out / "results")
        with pytest.raises(ParameterError, match="symbolic link"):
            with atomic_path(out / "results" / "d.csv") as tmp:
                tmp.write_text("x")
        with pytest.raises(ParameterError, match="symbolic link"):
            make_dirs(out / "results" / "deeper")
    assert list(outside.iterdir()) == []
    with atomic_path(out / "results" / "d.csv") as tmp:  # the folder is no longer ours: no check
        tmp.write_text("x")


@pytest.mark.parametrize("argv", [["run", "s.toml", "--out", ""], ["run", "s.toml", "--out", "  "],
                                  [*SWEEP, "--output", ""],
                                  ["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "100", "--trials", "3",
                                   "--output", ""]])
def test_empty_output_folder_is_refused(argv, scenario, tmp_path, capsys, monkeypatch):
    """On main: `run --out ''` writes to ./run-s, and `sweep --output ''` into an empty current directory."""
    if argv[0] == "sweep":
        monkeypatch.chdir(tmp_path / "outside")  # empty: on main the sweep's files land here
    before = sorted(p.name for p in Path.cwd().iterdir())
    assert main(argv) == 2
    assert "needs a directory name; got an empty string" in one_error(capsys)
    assert sorted(p.name for p in Path.cwd().iterdir()) == before


BAD_UTF8 = "out-\udcff\udcfe"  # argv bytes b"out-\xff\xfe" as Python receives them (surrogateescape)


@pytest.mark.parametrize("argv", [["run", "s.toml", "--out", BAD_UTF8], [*SWEEP, "--output", BAD_UTF8],
                                  ["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "100", "--trials", "3",
                                   "--output", BAD_UTF8],
                                  ["demo", "--k", "3", "--eps0", "1", "--trials", "2", "--output", BAD_UTF8]])
def test_output_folder_not_utf8_is_refused_before_writing(argv, scenario, tmp_path, capsys, monkeypatch):
    """A folder name that is not UTF-8 is refused in one line before anything is written (the fuzz walk: the
    Parquet writer raised UnicodeEncodeError after the run, leaving a half-written folder)."""
    if argv[0] == "sweep":
        monkeypatch.chdir(tmp_path / "outside")
    before = sorted(p.name for p in Path.cwd().iterdir())
    assert main(argv) == 2
    assert "must be a path in UTF-8 text" in one_error(capsys)
    assert sorted(p.name for p in Path.cwd().iterdir()) == before


@pytest.mark.parametrize("existing", [False, True])
def test_sweep_checks_every_point_before_writing(existing, tmp_path, capsys):
    """dishonest=2000 with n=1000 is refused before the first part is written (on main: sweep.json and the
    first point's part are on disk when the second point is refused)."""
    out = tmp_path / "sw"
    if existing:
        out.mkdir()
    argv = ["sweep", "krr", "--set", "k=4", "--set", "eps0=1", "--set", "dishonest=5,2000", "--n", "1000",
            "--trials", "4", "--backend", "serial", "--output", str(out)]
    assert main(argv) == 2
    assert "dishonest=2000" in one_error(capsys)
    assert (list(out.iterdir()) == []) if existing else not out.exists()


def test_write_table_keeps_a_dotted_stem(tmp_path):
    """A result stem with a dot ("mnist_q0.1", allowed by the scenario schema) keeps its whole name: the
    Parquet and CSV files sit next to its ``.meta.json`` instead of losing ".1" (``Path.with_suffix``)."""
    import pandas as pd

    from shufflesim.experiments.results_io import write_table

    written = write_table(pd.DataFrame({"a": [1, 2]}), tmp_path / "mnist_q0.1", {"k": 1})
    names = sorted(p.name for p in written)
    assert "mnist_q0.1.csv" in names and "mnist_q0.1.meta.json" in names
    assert not (tmp_path / "mnist_q0.csv").exists() and not (tmp_path / "mnist_q0.parquet").exists()
