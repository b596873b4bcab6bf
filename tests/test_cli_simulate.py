"""The ``shufflesim`` command: simulate, demo, and every bad-input path (one ``error:`` line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shufflesim import __version__
from shufflesim.cli.main import main
from shufflesim.maths.rr import gamma_from_eps0
from shufflesim.protocols.krr import krr_mse_expected


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_simulate_help_lists_protocols(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = capsys.readouterr().out
    assert "krr" in out and "central-gaussian-hist" in out


def test_simulate_krr_json(capsys):
    code, out, err = run_cli(capsys, "simulate", "krr", "--n", "5000", "--k", "4", "--eps0", "1.5",
                             "--trials", "300", "--seed", "3", "--json")
    assert code == 0, err
    assert "mse_ci95" in json.loads(out)
    # the coverage check itself at a stated significance of 1e-3 (the 95% interval misses 5% of the time
    # by design; test_ci_coverage_rate checks that rate)
    code, out, err = run_cli(capsys, "simulate", "krr", "--n", "5000", "--k", "4", "--eps0", "1.5",
                             "--trials", "300", "--seed", "3", "--json", "--level", "0.999")
    assert code == 0, err
    assert err == ""  # no progress bar under --json
    d = json.loads(out)
    for key in ("protocol", "params", "n", "trials", "seed", "mse", "mse_ci95", "mse_expected",
                "messages_per_user", "seconds"):
        assert key in d
    assert d["protocol"] == "krr" and d["n"] == 5000 and d["trials"] == 300 and d["seed"] == 3
    g = gamma_from_eps0(1.5, 4)
    assert d["params"]["gamma"] == pytest.approx(g, rel=1e-12) and d["params"]["eps0"] == 1.5
    assert d["mse_expected"] == pytest.approx(krr_mse_expected(5000, 4, g), rel=1e-12)
    assert d["ci_level"] == 0.999
    lo, hi = d["mse_ci"]
    assert lo <= d["mse_expected"] <= hi
    assert d["messages_per_user"] == 1 and d["bits_per_message"] == 2


def test_simulate_workers_do_not_change_results(capsys):
    args = ["simulate", "krr", "--n", "2000", "--k", "3", "--gamma", "0.4", "--trials", "16", "--seed", "9", "--json"]
    _, out1, _ = run_cli(capsys, *args, "--workers", "1")
    _, out2, _ = run_cli(capsys, *args, "--workers", "2")
    d1, d2 = json.loads(out1), json.loads(out2)
    assert d1["mse"] == d2["mse"] and d1["mse_ci95"] == d2["mse_ci95"]


def test_simulate_writes_parquet_with_metadata(capsys, tmp_path):
    pytest.importorskip("pyarrow")
    from shufflesim.experiments.results_io import read_metadata

    code, _, err = run_cli(capsys, "simulate", "krr", "--n", "500", "--k", "3", "--gamma", "0.5", "--trials", "5",
                           "--seed", "1", "--output", str(tmp_path), "--json")
    assert code == 0, err
    meta = read_metadata(tmp_path / "records.parquet")
    assert meta["protocol"] == "krr" and meta["seed_sequence"]["entropy"] == "1"
    assert "numpy" in meta["environment"]


BAD = [
    (["--n", "100", "--k", "3", "--gamma", "0"], "gamma must be in"),
    (["--n", "100", "--k", "3", "--gamma", "1.5"], "gamma must be in"),
    (["--n", "100", "--k", "1", "--gamma", "0.5"], "k must be an integer >= 2"),
    (["--n", "0", "--k", "3", "--gamma", "0.5"], "n must be an integer >= 1"),
    (["--n", "100", "--k", "3", "--gamma", "0.5", "--trials", "0"], "trials must be an integer >= 1"),
    (["--n", "100", "--k", "3", "--eps0", "0"], "eps0 must be in"),
    (["--n", "100", "--k", "3", "--eps0", "-2"], "eps0 must be in"),
    (["--n", "100", "--k", "3", "--eps0", "nan"], "eps0 must be finite"),
    (["--n", "100", "--k", "3", "--gamma", "inf"], "gamma must be finite"),
    (["--n", "100", "--k", "3"], "exactly one of gamma"),
    (["--n", "100", "--k", "3", "--gamma", "0.5", "--data", "bogus"], "unknown data spec"),
    (["--n", "100", "--k", "3", "--gamma", "0.5", "--data", "nofile.csv:c"], "no such file"),
    (["--k", "3", "--gamma", "0.5"], "--n is required"),
    (["--n", "100", "--k", "3", "--gamma", "0.5", "--workers", "0"], "workers must be"),
    (["--n", "abc", "--k", "3", "--gamma", "0.5"], "invalid integer"),
    (["--n", "100", "--k", "3", "--gamma", "x"], "invalid number"),
]


@pytest.mark.parametrize("argv,msg", BAD)
def test_bad_input_one_line_exit_2(capsys, argv, msg):
    code, out, err = run_cli(capsys, "simulate", "krr", *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and msg in lines[0], err
    assert "Traceback" not in err


def test_bad_csv_reports_row_and_column(capsys, tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("cat\n0\n1\n5\n")
    code, _, err = run_cli(capsys, "simulate", "krr", "--k", "3", "--gamma", "0.5", "--data", f"{f}:cat")
    assert code == 2 and "row 3 (line 4), column 'cat'" in err and "[0, 3)" in err
    f.write_text("cat\n0\nz\n")
    code, _, err = run_cli(capsys, "simulate", "krr", "--k", "3", "--gamma", "0.5", "--data", f"{f}:cat")
    assert code == 2 and "'z' is not a finite number" in err


def test_unknown_protocol(capsys):
    code, _, err = run_cli(capsys, "simulate", "nonesuch", "--n", "3")
    assert code == 2 and "invalid choice" in err and len(err.strip().splitlines()) == 1


def test_entry_point_subprocess(tmp_path):
    """The installed console entry behaves the same: exit 2, one line, no traceback."""
    r = subprocess.run([sys.executable, "-P", "-m", "shufflesim", "simulate", "krr", "--n", "10", "--k", "3",
                        "--gamma", "2"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-P", "-m", "shufflesim", "simulate", "krr", "--n", "1000", "--k", "3",
                        "--gamma", "0.5", "--trials", "20", "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["trials"] == 20


def test_demo_quick(capsys, tmp_path):
    pytest.importorskip("pyarrow")
    code, out, err = run_cli(capsys, "demo", "--trials", "20", "--workers", "1", "--eps0", "1", "4",
                             "--output", str(tmp_path / "demo"), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert len(d["summary"]) == 2 and d["complete"]
    assert all(r["eps"] <= r["eps0"] for r in d["summary"])
    assert (tmp_path / "demo" / "records.parquet").exists()
    assert (tmp_path / "demo" / "summary.csv").exists()


@pytest.mark.parametrize("argv", [
    ["simulate", "krr", "--n", "1000", "--eps0", "1", "--data", "uniform", "--trials", "2"],
    ["simulate", "krr", "--eps0", "1", "--data", "adult-age", "--trials", "2"],
])
def test_missing_k_names_the_flag(argv, capsys):
    """Issue 18: `simulate krr` without --k says which flag is missing (one error line, exit 2)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "--k" in err[0], err
