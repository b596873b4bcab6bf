"""Hostile input (issue 18): every class of bad input is refused with exit 2 and one ``error:`` line, before
anything is written; nothing is ever written outside the output directory; nothing is accepted silently.

Each test runs the CLI in-process (``shufflesim.cli.main.main``) and compares a snapshot of the working
folder before and after a refusal.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shufflesim.cli.main import main
from shufflesim.errors import ParameterError

HEAD = 'title = "t"\npaper = "none"\nreproduces = "none"\nseed = 1\n'
SWEEP = '[[sweep]]\nname = "a"\nprotocol = "krr"\nn = 100\nparams = { k = 3, eps0 = 1.0 }\ntrials = 2\n'
CURVE = ('[[curve]]\nname = "c"\nmechanism = "krr"\nargs = { n = 100, k = 3, gamma = 0.25, relation = "strong" }\n'
         'eps = [1.0]\n')


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (a refusal must leave this unchanged)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_failed(code: int, out: str, err: str, *needles: str) -> None:
    """Failed while running (after its progress lines): exit 2, the last line one ``error:`` line."""
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("error: ") and "Traceback" not in err + out, err
    assert sum(ln.startswith("error:") for ln in err.splitlines()) == 1
    for n in needles:
        assert n in last


def assert_refused(code: int, out: str, err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err + out
    for n in needles:
        assert n in lines[0], (n, lines[0])


# --- run: everything checkable is checked by --check and before anything is written -------------------------
BAD_SCENARIOS = {
    "unknown protocol": (SWEEP.replace('"krr"', '"nosuch"'), ["sweep[0].protocol", "nosuch", "krr"]),
    "unknown parameter": (SWEEP.replace("eps0 = 1.0", "epsilon = 1.0"),
                          ["sweep[0].params.epsilon", "unknown parameter", "eps0"]),
    "label with an unknown field": (SWEEP + 'label = "k={k} {bogus}"\n', ["sweep[0].label", "{bogus}", "eps0"]),
    "positional label field": (SWEEP + 'label = "{}"\n', ["sweep[0].label"]),
    "bad data spec": (SWEEP + 'data = "bogus:1"\n', ["sweep[0].data", "bogus:1"]),
    "missing data file": (SWEEP + 'data = "/nonexistent/x.csv:col"\n', ["sweep[0].data", "no such data file"]),
    "empty axis": (SWEEP.replace("eps0 = 1.0", "eps0 = []"), ["sweep[0].params.eps0", "empty axis"]),
    "bad parameter value": (SWEEP.replace("eps0 = 1.0", "eps0 = -1.0"), ["sweep[0]", "eps0"]),
    "unknown curve method": (CURVE + 'method = "bogus"\n', ["curve[0].method", "bogus", "tight"]),
    "unknown curve argument": (CURVE.replace("gamma", "gama"), ["curve[0].args", "gama"]),
    "curve label field": (CURVE + 'label = "{eps0}"\n', ["curve[0].label", "{eps0}"]),
    "unknown claims paper": ('claims = ["nosuch/x"]\n' + CURVE, ["claims", "nosuch"]),
    "unknown claim id": ('claims = ["koskela/nosuch"]\n' + CURVE, ["claims[0]", "koskela/nosuch"]),
    "unknown table row": ('[[table]]\nname = "t3"\nstudy = "balle2020"\nrows = ["nosuch"]\n', ["table[0].rows"]),
    "unknown training setting": ('[[training]]\nname = "fl"\nprotocol = "np"\nrounds = 1\nsettings = { lrate = 1 }\n',
                                 ["training[0].settings.lrate", "lr"]),
    "unknown training protocol": ('[[training]]\nname = "fl"\nprotocol = "nosuch"\nrounds = 1\n',
                                  ["training[0].protocol", "nosuch"]),
    "name with ../": (SWEEP.replace('name = "a"', 'name = "../../escape"'), ["sweep[0].name", "../../escape"]),
    "absolute name": (SWEEP.replace('name = "a"', 'name = "/tmp/escape"'), ["sweep[0].name"]),
    "name with a slash": (SWEEP.replace('name = "a"', 'name = "a/b"'), ["sweep[0].name"]),
    "hidden name": (SWEEP.replace('name = "a"', 'name = ".a"'), ["sweep[0].name"]),
    "figure with ../": (SWEEP + 'figure = "../fig"\n', ["sweep[0].figure"]),
    "curve name with ../": (CURVE.replace('name = "c"', 'name = ".."'), ["curve[0].name"]),
    "figure mixing step kinds": (SWEEP + 'figure = "f"\n' + CURVE + 'figure = "f"\n', ["figure 'f' mixes"]),
    "data of the wrong kind": (SWEEP + 'data = "normal:0.5,0.1"\n', ["sweep[0].data", "normal"]),
}


@pytest.mark.parametrize("case", sorted(BAD_SCENARIOS))
def test_run_checks_everything_before_writing(case, tmp_path, capsys, monkeypatch):
    body, needles = BAD_SCENARIOS[case]
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    scenario = work / "s.toml"
    scenario.write_text(HEAD + body, encoding="utf-8")
    before = snapshot(tmp_path)
    assert_refused(*cli(capsys, "run", scenario, "--check"), *needles)
    assert_refused(*cli(capsys, "run", scenario, "--out", work / "out"), *needles)
    assert snapshot(tmp_path) == before  # nothing written: no --out, no file outside it
    assert not (work / "out").exists()
    # an existing (empty) output directory stays untouched too
    (work / "out2").mkdir()
    assert_refused(*cli(capsys, "run", scenario, "--out", work / "out2"), *needles)
    assert list((work / "out2").iterdir()) == []


def test_valid_scenario_passes_the_check(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(HEAD + SWEEP + CURVE + 'label = "n={n} {relation} {method}"\n', encoding="utf-8")
    code, out, err = cli(capsys, "run", scenario, "--check")
    assert code == 0 and ": ok, about" in out, err


def test_a_run_that_fails_while_running_leaves_no_valid_looking_report(tmp_path, capsys):
    """A failure the checks cannot foresee (a label format spec that does not fit the value): a directory the
    run created is removed; an existing one is marked INCOMPLETE and holds no report.md/run.json."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(HEAD + SWEEP + 'label = "{data:d}"\n', encoding="utf-8")
    out = tmp_path / "out"
    assert_failed(*cli(capsys, "run", scenario, "--out", out / "deep" / "er"), "label")
    assert not out.exists()  # every folder the failed run created is gone
    good = tmp_path / "good.toml"
    good.write_text(HEAD + SWEEP, encoding="utf-8")
    code, _, err = cli(capsys, "run", good, "--out", out)
    assert code == 0 and (out / "report.md").exists() and not (out / "INCOMPLETE").exists(), err
    assert_failed(*cli(capsys, "run", scenario, "--out", out), "label")
    assert (out / "INCOMPLETE").exists()
    assert not (out / "report.md").exists() and not (out / "run.json").exists()


def test_a_refused_second_run_changes_nothing(tmp_path, capsys):
    """Two runs into one --out: the second (here: while the first holds the directory) is refused before it
    writes anything (it used to overwrite scenario.toml first)."""
    from shufflesim.experiments.outdir import DirectoryLock

    first, second = tmp_path / "one.toml", tmp_path / "two.toml"
    first.write_text(HEAD + SWEEP, encoding="utf-8")
    second.write_text(HEAD.replace("seed = 1", "seed = 2") + SWEEP, encoding="utf-8")
    out = tmp_path / "out"
    assert cli(capsys, "run", first, "--out", out)[0] == 0
    before = snapshot(tmp_path)
    with DirectoryLock(out, "busy"):  # the first run, still running
        assert_refused(*cli(capsys, "run", second, "--out", out), "in use")
    assert snapshot(tmp_path) == before


def test_resume_with_nothing_to_resume_says_so(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(HEAD + SWEEP, encoding="utf-8")
    code, _, err = cli(capsys, "run", scenario, "--out", tmp_path / "out", "--resume")
    assert code == 0 and "nothing to resume" in err
    code, _, err = cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "100", "--trials", "2",
                       "--backend", "serial", "--output", tmp_path / "sw", "--resume")
    assert code == 0 and "nothing to resume" in err


# --- files that are not UTF-8 ----------------------------------------------------------------------------------
def test_non_utf8_scenario_file(tmp_path, capsys):
    bad = tmp_path / "s.toml"
    bad.write_bytes(b"title = \"\xff\xfe\"\n")
    assert_refused(*cli(capsys, "run", bad, "--check"), "not UTF-8")
    assert_refused(*cli(capsys, "run", bad, "--out", tmp_path / "out"), "not UTF-8")
    assert not (tmp_path / "out").exists()


def test_non_utf8_claims_file(tmp_path, capsys):
    (tmp_path / "x.toml").write_bytes(b"paper = \"\xff\"\n")
    assert_refused(*cli(capsys, "claims", "check", "--dir", tmp_path), "x.toml", "not UTF-8")


# --- a scheduler that is not an address, or does not answer ----------------------------------------------------
@pytest.mark.parametrize("address", ["notanaddress", "tcp://host", "tcp://host:99999", "http://h:1", ""])
def test_scheduler_address_is_checked_before_anything(address, tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(HEAD + SWEEP, encoding="utf-8")
    before = snapshot(tmp_path)
    assert_refused(*cli(capsys, "run", scenario, "--out", tmp_path / "out", "--scheduler", address), "--scheduler")
    assert_refused(*cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "100", "--trials", "2",
                        "--output", tmp_path / "sw", "--scheduler", address), "--scheduler")
    assert snapshot(tmp_path) == before and not (tmp_path / "out").exists() and not (tmp_path / "sw").exists()


def test_unreachable_scheduler_times_out_with_a_clear_error(monkeypatch):
    pytest.importorskip("distributed")
    from shufflesim.experiments import backends

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", 1.0)
    with pytest.raises(ParameterError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 1 s"):
        backends.DaskBackend("tcp://127.0.0.1:9", timeout=backends.CONNECT_TIMEOUT)


# --- numbers at the ends of the range, and lists with a bad item ---------------------------------------------
def test_audit_at_a_huge_eps(capsys):
    code, out, err = cli(capsys, "audit", "krr", "--k", "3", "--n", "50", "--eps0", "1", "--eps", "1e308",
                         "--delta", "0.1", "--trials", "200")
    assert code == 0, err
    assert "delta(1e+308)  lower 0 " in out and "nan" not in out and "Traceback" not in err


def test_sweep_refuses_bad_parameters_before_writing(tmp_path, capsys):
    """The points are built before the sweep directory is made (it used to be created, then refused)."""
    for sets in (["--set", "k=3"], ["--set", "eps0=1"], ["--set", "k=3", "--set", "eps0=-1"]):
        code, out, err = cli(capsys, "sweep", "krr", *sets, "--n", "100", "--trials", "2", "--output",
                             tmp_path / "sw")
        assert_refused(code, out, err)
        assert not (tmp_path / "sw").exists()


def test_sweep_list_with_a_bad_item(tmp_path, capsys):
    assert_refused(*cli(capsys, "sweep", "krr", "--n", "1e3,abc", "--output", tmp_path / "sw"), "--n", "'abc'")
    assert not (tmp_path / "sw").exists()


@pytest.mark.parametrize("level", ["0", "1", "nan", "-0.5", "inf"])
def test_sweep_level_outside_0_1(level, tmp_path, capsys):
    assert_refused(*cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "100", "--trials", "2",
                        "--level", level, "--output", tmp_path / "sw"), "--level")
    assert not (tmp_path / "sw").exists()


def test_library_unknown_keywords_are_parameter_errors():
    from shufflesim.accounting import account
    from shufflesim.mechanisms import kinds
    from shufflesim.pipeline import registry

    with pytest.raises(ParameterError, match="'bogus'.*eps0"):
        registry.create("krr", 100, k=3, eps0=1.0, bogus=1)
    with pytest.raises(ParameterError, match="'bogus'"):
        account(kinds()["rr2"](n=100, eps0=1.0), eps=[1.0], bogus=1)


# --- nothing accepted silently -----------------------------------------------------------------------------------
def test_claims_check_unknown_id(capsys):
    assert_refused(*cli(capsys, "claims", "check", "--id", "nosuch/id"), "'nosuch/id'", "known:")


def test_compositions_zero_is_the_same_error_with_best(capsys):
    base = ["account", "rr2", "--n", "100", "--eps0", "1", "--eps", "1", "--compositions", "0"]
    code, out, plain = cli(capsys, *base)
    assert_refused(code, out, plain, "compositions")
    for extra in (["--method", "best"], ["--compare"]):
        code, out, err = cli(capsys, *base, *extra)
        assert_refused(code, out, err)
        assert err == plain


def test_no_warning_before_the_error_that_follows(capsys):
    code, out, err = cli(capsys, "account", "rr2", "--n", "100", "--eps0", "1", "--eps", "1",
                         "--compositions", "2000000")
    assert_refused(code, out, err, "compositions must be <=")
    assert "warning" not in err


# --- long runs ask first -------------------------------------------------------------------------------------------
def test_a_very_long_sweep_asks_for_yes_with_an_estimate(tmp_path, capsys):
    ns = ",".join(str(100 + i) for i in range(1001))
    assert_refused(*cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=" + ",".join(str(1 + i) for i in range(10)),
                        "--n", ns, "--output", tmp_path / "sw"), "10010 points", "minutes", "--yes")
    assert not (tmp_path / "sw").exists()


# --- outputs are checked before the work -----------------------------------------------------------------------
def test_claims_report_checks_its_output_first(tmp_path, capsys, monkeypatch):
    from shufflesim.validation import claims

    def must_not_run(*a, **k):
        raise AssertionError("the checks ran before the output was checked")

    monkeypatch.setattr(claims, "run_claim", must_not_run)
    assert_refused(*cli(capsys, "claims", "report", "--output", "/nonexistent/dir/F.md"), "/nonexistent/dir")
    assert_refused(*cli(capsys, "claims", "report", "--output", tmp_path), "is a directory")
    assert_refused(*cli(capsys, "claims", "report", "--output", tmp_path / "F.md", "--records-out",
                        tmp_path / "no" / "r.json"), "--records-out")
    assert list(tmp_path.iterdir()) == []


# --- the sweep's summary: its intervals and a plot -----------------------------------------------------------
def test_sweep_summary_shows_intervals_and_writes_a_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    code, out, err = cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=1,2", "--n", "100,200",
                         "--trials", "20", "--backend", "serial", "--level", "0.9", "--output", tmp_path / "sw")
    assert code == 0, err
    assert "mse [0.9 CI]" in out and "tv [0.9 CI]" in out
    import pandas as pd

    s = pd.read_parquet(tmp_path / "sw" / "summary.parquet")
    first = f"{s['mse'][0]:.6g} [{s['mse_lo'][0]:.6g}, {s['mse_hi'][0]:.6g}]"
    assert first in out  # the printed interval is the one written
    assert (tmp_path / "sw" / "summary.png").stat().st_size > 0 and "summary.png" in out
    assert (s["mse_lo"] >= 0).all()  # the MSE's interval lies in its support
    # one trial has no interval: said so, not "nan"
    code, out, err = cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "100", "--trials", "1",
                         "--backend", "serial", "--output", tmp_path / "sw1")
    assert code == 0 and "[n/a: 1 trial]" in out and "nan" not in out, err


@pytest.mark.slow
def test_calibration_at_delta_1e_320(capsys):
    """The regression of the issue: blanket-sum calibrated at delta = 1e-320 (ZeroDivisionError before)."""
    code, out, err = cli(capsys, "simulate", "blanket-sum", "--n", "10000", "--eps", "1", "--delta", "1e-320",
                         "--trials", "5")
    assert code in (0, 2) and "Traceback" not in err
    if code == 2:
        assert_refused(code, out, err)


def test_run_into_a_file_is_refused(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(HEAD + SWEEP, encoding="utf-8")
    (tmp_path / "f").write_text("x")
    before = snapshot(tmp_path)
    assert_refused(*cli(capsys, "run", scenario, "--out", tmp_path / "f"), "not a directory")
    assert_refused(*cli(capsys, "sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "100", "--trials", "2",
                        "--output", tmp_path / "f"), "not a directory")
    assert snapshot(tmp_path) == before


def test_a_refused_resume_changes_nothing(tmp_path, capsys):
    """--resume of another scenario, or of the same one in another mode, is refused before a file changes."""
    first, second = tmp_path / "one.toml", tmp_path / "two.toml"
    first.write_text(HEAD + SWEEP, encoding="utf-8")
    second.write_text(HEAD.replace("seed = 1", "seed = 2") + SWEEP, encoding="utf-8")
    out = tmp_path / "out"
    assert cli(capsys, "run", first, "--out", out)[0] == 0
    before = snapshot(tmp_path)
    assert_refused(*cli(capsys, "run", second, "--out", out, "--resume"), "different scenario")
    assert snapshot(tmp_path) == before
    # the same file, another mode: its sweep was started with other trials
    first.write_text(HEAD + SWEEP.replace("trials = 2", "trials = 30"), encoding="utf-8")
    assert cli(capsys, "run", first, "--out", out)[0] == 0
    before = snapshot(tmp_path)
    assert_refused(*cli(capsys, "run", first, "--out", out, "--resume", "--quick"), "sweep a", "other settings")
    assert snapshot(tmp_path) == before
    assert cli(capsys, "run", first, "--out", out, "--resume")[0] == 0  # the same run resumes
