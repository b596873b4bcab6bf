"""``shufflesim sweep`` and ``shufflesim simulate --engine`` from the command line."""

from __future__ import annotations

import json

import pytest

from shufflesim.cli.main import main

pytest.importorskip("pyarrow")


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_sweep_runs_resumes_and_refuses_a_different_grid(tmp_path, capsys):
    out = str(tmp_path / "sw")
    argv = ["sweep", "krr", "--set", "k=2,5", "--set", "eps0=1", "--n", "200,400", "--trials", "30",
            "--chunk-size", "8", "--backend", "serial", "--output", out, "--json"]
    assert main(argv) == 0
    first = _json(capsys)
    assert first["complete"] and first["points"] == 4 and first["chunks"] == 16 and first["engine"] == "auto"
    assert [r["engine"] for r in first["summary"]] == ["fast"] * 4
    assert main(argv + ["--resume"]) == 0
    again = _json(capsys)
    assert again["chunks_reused"] == 16 and again["summary"] == first["summary"]
    assert main(argv) == 2  # exists, no --resume
    assert "pass --resume" in capsys.readouterr().err
    assert main([a if a != "30" else "31" for a in argv] + ["--resume"]) == 2
    assert "sweep.trials: 30 on disk, 31 now" in capsys.readouterr().err


def test_sweep_grid_syntax_errors(tmp_path, capsys):
    base = ["sweep", "krr", "--n", "100", "--output", str(tmp_path / "x"), "--backend", "serial"]
    assert main(base + ["--set", "kk=2"]) == 2
    assert "has no parameter 'kk'" in capsys.readouterr().err
    assert main(base + ["--set", "k"]) == 2
    assert "NAME=V1,V2" in capsys.readouterr().err
    assert main(base + ["--set", "k=2", "--set", "adversary=nobody"]) == 2
    assert "not one of" in capsys.readouterr().err


def test_simulate_names_the_engine(capsys):
    common = ["simulate", "krr", "--n", "500", "--k", "4", "--eps0", "1", "--trials", "20", "--json"]
    assert main(common) == 0
    assert _json(capsys)["engine"] == "faithful"  # the default: recorded outputs keep their numbers
    assert main(common + ["--engine", "auto"]) == 0
    assert _json(capsys)["engine"] == "fast"
