"""CLI hardening (issue 8): output directories, broken pipes, worker cap, interrupts, help text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shufflesim.cli.main import main

SIM = ["simulate", "krr", "--n", "500", "--k", "3", "--gamma", "0.5", "--trials", "5", "--seed", "1", "--json"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_empty_output_is_an_error(capsys):
    code, out, err = run_cli(capsys, *SIM, "--output", "")
    assert code == 2 and out == "" and err.startswith("error: --output needs a directory name")


def test_output_dev_null_is_reported_truthfully(capsys):
    code, _, err = run_cli(capsys, *SIM, "--output", "/dev/null")
    assert code == 2 and "error: --output /dev/null is not a directory" in err
    assert len(err.strip().splitlines()) == 1


def test_non_empty_directory_refused_unless_overwrite(capsys, tmp_path):
    out = tmp_path / "o"
    assert run_cli(capsys, *SIM, "--output", str(out))[0] == 0
    code, _, err = run_cli(capsys, *SIM, "--output", str(out))
    assert code == 2 and "is not empty" in err and "--overwrite" in err
    code, _, err = run_cli(capsys, *SIM, "--output", str(out), "--overwrite")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["records.csv", "records.meta.json", "records.parquet"]


def test_parquet_schema_metadata_matches_sidecar(capsys, tmp_path):
    pytest.importorskip("pyarrow")
    from shufflesim.experiments.results_io import read_metadata, read_table

    assert run_cli(capsys, *SIM, "--output", str(tmp_path / "o"))[0] == 0
    frame, meta = read_table(tmp_path / "o" / "records.parquet")
    assert meta == read_metadata(tmp_path / "o" / "records.parquet")
    assert meta == json.loads((tmp_path / "o" / "records.meta.json").read_text())
    assert meta["protocol"] == "krr" and len(frame) == 5 and meta["run_id"]


def test_help_names_the_files(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "krr", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "records.meta.json" in text and "metadata.json" not in text.replace("records.meta.json", "")


def test_workers_capped_at_cpus(capsys, monkeypatch):
    from shufflesim.cli import _common

    monkeypatch.setattr(_common, "available_cpus", lambda: 1)
    code, out, err = run_cli(capsys, *SIM, "--workers", "8")
    assert code == 0 and json.loads(out)["workers"] == 1
    assert err.strip() == "warning: --workers 8 is more than the 1 available CPU(s); using 1"


def test_broken_pipe_is_quiet(tmp_path):
    cmd = (f"'{sys.executable}' -P -m shufflesim simulate krr --n 500 --k 3 --gamma 0.5 --trials 3 --json | head -1;"
           " echo rc=${PIPESTATUS[0]}")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.stdout.splitlines() == ["{", "rc=0"], r.stdout
    assert r.stderr == "", r.stderr


def test_broken_pipe_in_process(capsys, monkeypatch):
    import shufflesim.cli.main as m

    monkeypatch.setattr(m, "_silence_stdout", lambda: None)

    def boom(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(m, "build_parser", lambda command=None: _FakeParser(boom))
    assert m.main(["simulate"]) == 0
    assert capsys.readouterr().err == ""


class _FakeParser:
    def __init__(self, func):
        self.func = func

    def parse_args(self, argv):
        import argparse

        return argparse.Namespace(func=self.func)


def test_two_runs_into_one_directory_never_mix(tmp_path):
    """Two simultaneous runs into one directory: exactly one succeeds (the other is refused at once) or,
    with --overwrite, both succeed one after the other; the files always come from one run."""
    pytest.importorskip("pyarrow")
    from shufflesim.experiments.results_io import read_table

    for extra in ([], ["--overwrite"]):
        out = tmp_path / f"o{len(extra)}"
        base = [sys.executable, "-P", "-m", "shufflesim", "simulate", "krr", "--n", "20000", "--k", "4", "--gamma", "0.5",
                "--trials", "40", "--json", "--output", str(out), *extra]
        procs = [subprocess.Popen(base + ["--seed", str(s)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for s in (1, 2)]
        results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
        codes = sorted(r[0] for r in results)
        assert codes in ([0, 0], [0, 2]), results
        if not extra:
            assert codes == [0, 2]
        for code, _, err in results:
            if code == 2:
                assert "in use by another shufflesim run" in err or "is not empty" in err, err
        frame, meta = read_table(out / "records.parquet")
        sidecar = json.loads((out / "records.meta.json").read_text())
        assert meta == sidecar  # data and metadata of the same run
        import pandas as pd

        csv = pd.read_csv(out / "records.csv")
        assert csv["sq_error"].tolist() == frame["sq_error"].tolist()
        assert not [p for p in out.iterdir() if p.name.startswith(".shufflesim-tmp-")]


def test_demo_interrupt_keeps_finished_trials(capsys, tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    from shufflesim.experiments import progress

    calls = []
    original = progress.Progress.update

    def update(self, k=1):
        calls.append(k)
        original(self, k)
        if len(calls) == 5:
            raise KeyboardInterrupt

    monkeypatch.setattr(progress.Progress, "update", update)
    out = tmp_path / "demo"
    code, stdout, err = run_cli(capsys, "demo", "--trials", "10", "--workers", "1", "--eps0", "1", "4",
                                "--output", str(out), "--json")
    assert code == 130
    assert "interrupted: kept the 5 finished trial(s) of 40" in err
    d = json.loads(stdout)
    assert d["complete"] is False
    meta = json.loads((out / "records.meta.json").read_text())
    assert meta["complete"] is False
    import pandas as pd

    assert len(pd.read_csv(out / "records.csv")) == 5
    assert not (out / "tv_vs_eps.png").exists()
