"""Issue 29, "work that will not fit is not started": every estimate made before a run is weighed by one policy
(:func:`shufflesim.core.resources.choose_path`): beyond the memory or the time limit (default
:data:`~shufflesim.core.resources.DEFAULT_TIME_LIMIT`, ``--yes`` lifts it, SHUFFLESIM_TIME_LIMIT sets it) the run
is refused in one line with the estimate, the knob and the faster path; ``--engine auto`` takes the fast engine
where it answers instead of refusing.

No test asserts wall-clock time: the long runs are never started (the run functions are replaced by ones that
fail the test if called), and the estimates are either far beyond any machine (10^12 users) or replaced.
"""

from __future__ import annotations

import json
import math

import pytest

from shufflesim.cli.main import main
from shufflesim.core import resources
from shufflesim.errors import ResourceError


@pytest.fixture(autouse=True)
def _no_env_limits(monkeypatch):
    monkeypatch.delenv("SHUFFLESIM_TIME_LIMIT", raising=False)
    monkeypatch.delenv("SHUFFLESIM_MEMORY_LIMIT", raising=False)


@pytest.fixture
def never_run(monkeypatch):
    """Replace the faithful runners: a test that reaches one has started work that should have been refused."""
    from shufflesim.experiments import montecarlo

    def started(*args, **kwargs):
        raise AssertionError("the run was started")

    monkeypatch.setattr(montecarlo, "run_trials_streamed", started)
    return started


def _one_error_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------------------------------- the policy itself
def test_choose_path_refuses_with_estimate_knob_and_faster_path():
    paths = [resources.RunPath("the faithful engine", "--engine faithful", seconds=4.7e4),
             resources.RunPath("the fast engine", "--engine fast")]
    with pytest.raises(ResourceError) as exc:
        resources.choose_path("2 trials of krr", paths)
    msg = str(exc.value)
    assert "about 4.7e+04 s" in msg and "time limit of 600 s" in msg and "--yes" in msg and "--engine fast" in msg
    assert resources.choose_path("2 trials of krr", paths, auto=True) is paths[1]  # auto: the path that fits
    assert resources.choose_path("2 trials of krr", paths, yes=True) is paths[0]  # the knob lifts the time limit


def test_memory_is_not_lifted_by_yes_and_the_env_limit_is_named(monkeypatch):
    big = resources.RunPath("the rows", "--engine faithful", bytes=1e30)
    with pytest.raises(ResourceError, match="of memory") as exc:
        resources.choose_path("x", [big], yes=True, advice="lower n")
    assert "--yes" not in str(exc.value) and str(exc.value).endswith("; lower n")
    monkeypatch.setenv("SHUFFLESIM_TIME_LIMIT", "5")
    with pytest.raises(ResourceError, match=r"above SHUFFLESIM_TIME_LIMIT=5 s"):
        resources.choose_path("x", [resources.RunPath("a", "--a", seconds=6.0)])
    assert resources.time_limit() == 5.0 and resources.time_limit(yes=True) == math.inf


@pytest.mark.parametrize("value", ["nan", "0", "-1", "soon"])
def test_a_time_limit_that_is_not_a_positive_number_is_refused(monkeypatch, value):
    monkeypatch.setenv("SHUFFLESIM_TIME_LIMIT", value)
    with pytest.raises(ResourceError, match="SHUFFLESIM_TIME_LIMIT"):
        resources.time_limit()


# ------------------------------------------------------------------------------------------------- simulate
def test_krr_at_1e12_users_is_refused_before_it_starts(capsys, never_run):
    # 2 x 10^12 users: above the default limit on any machine (over 2000 s even at 1 ns a user)
    code = main(["simulate", "krr", "--n", "1e12", "--k", "3", "--eps0", "1", "--trials", "2"])
    err = _one_error_line(capsys.readouterr().err)
    assert code == 2
    assert "is estimated to take about" in err and "time limit of 600 s" in err  # the estimate and the limit
    assert "--yes" in err and "--engine fast answers" in err  # the knob and the faster path


def test_ikos_at_1e9_users_is_refused_under_a_tiny_limit(capsys, monkeypatch, never_run):
    monkeypatch.setattr(resources, "DEFAULT_TIME_LIMIT", 1e-6)
    code = main(["simulate", "ikos-sum", "--n", "1e9", "--eps", "1", "--trials", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--engine fast answers" in err and "--yes" in err and "1e-06 s" in err
    _one_error_line(err)


@pytest.mark.parametrize("argv", [["krr", "--n", "1e12", "--k", "3", "--eps0", "1", "--trials", "2"],
                                  ["ikos-sum", "--n", "1e9", "--eps", "1", "--trials", "1"]])
def test_auto_takes_the_fast_engine_where_the_faithful_one_would_not_fit(capsys, monkeypatch, never_run, argv):
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "2G")  # n rows would not fit: counts are drawn instead
    code = main(["simulate", *argv, "--engine", "auto", "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    out = json.loads(cap.out)
    assert out["engine"] == "fast" and out["trials_completed"] == out["trials"]


def test_the_knob_lifts_the_limit_of_a_streamed_run(capsys, monkeypatch):
    from shufflesim.pipeline import stream

    real = stream.plan_stream

    def long_plan(*args, **kwargs):  # the real plan, with an estimate above any limit
        return dict(real(*args, **kwargs), seconds=1e9)

    monkeypatch.setattr(stream, "plan_stream", long_plan)
    base = ["simulate", "krr", "--k", "4", "--gamma", "0.5", "--n", "2000", "--trials", "2", "--chunk", "500"]
    assert main(base) == 2
    assert "about 1e+09 s" in capsys.readouterr().err
    assert main(base + ["--yes"]) == 0
    assert "mse" in capsys.readouterr().out
    monkeypatch.setenv("SHUFFLESIM_TIME_LIMIT", "1e12")  # the environment raises the limit too
    assert main(base) == 0


def test_the_in_memory_faithful_run_is_estimated_and_refused(capsys, monkeypatch):
    from shufflesim.experiments import montecarlo

    monkeypatch.setattr(montecarlo, "faithful_seconds", lambda *a, **k: 1e9)
    base = ["simulate", "krr", "--k", "4", "--gamma", "0.5", "--n", "2000", "--trials", "2"]
    assert main(base) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "on the faithful engine is estimated to take about 1e+09 s" in err and "--engine fast answers" in err
    assert main(base + ["--engine", "fast"]) == 0  # the fast engine makes no faithful estimate
    capsys.readouterr()
    assert main(base + ["--yes"]) == 0


@pytest.mark.parametrize("engine", ["faithful", "auto"])
def test_a_protocol_without_a_fast_engine_is_refused_with_what_would_make_it_fit(capsys, monkeypatch, engine):
    from shufflesim.experiments import montecarlo

    monkeypatch.setattr(montecarlo, "faithful_seconds", lambda *a, **k: 1e9)
    code = main(["simulate", "flame-simple", "--n", "200", "--trials", "2", "--engine", engine])
    err = _one_error_line(capsys.readouterr().err)
    assert code == 2 and "about 1e+09 s" in err and "--yes" in err
    assert err.rstrip().endswith("lower n or --trials (flame-simple has no fast engine)")


def test_the_probe_changes_no_trial():
    import numpy as np

    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import faithful_seconds, run_trials
    from shufflesim.pipeline import registry

    data = load_data("uniform", data_kind="categorical", n=1000, k=4, rng=0)
    p = registry.create("krr", 1000, k=4, gamma=0.5)
    root = np.random.SeedSequence(7)
    before = run_trials(p, data, trials=3, rng=root).records["sq_error"].to_numpy()
    assert 0 < faithful_seconds(p, data, root, trials=3) < math.inf
    after = run_trials(p, data, trials=3, rng=root).records["sq_error"].to_numpy()
    assert np.array_equal(before, after)


# ------------------------------------------------------------------------------------------------- validate
@pytest.mark.parametrize("argv", [["krr", "--n", "1e9", "--k", "3", "--eps0", "1"],
                                  ["ikos-sum", "--n", "1e9", "--eps", "1"]])
def test_validate_auto_at_1e9_answers_with_the_fast_engine(capsys, monkeypatch, argv):
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "2G")  # 10^9 rows (about 22 GiB) never fit
    code = main(["validate", *argv, "--trials", "5", "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    out = json.loads(cap.out)
    assert out["engine"] == "fast" and out["n"] == 10**9 and out["trials"] == 5


def test_validate_sequential_at_1e9_on_the_fast_engine(capsys, monkeypatch):
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "2G")
    code = main(["validate", "krr", "--n", "1e9", "--k", "3", "--gamma", "0.5", "--max-trials", "2048", "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert json.loads(cap.out)["engine"] == "fast"


def test_validate_a_fixed_faithful_run_is_estimated_and_refused(capsys, monkeypatch):
    from shufflesim.experiments import montecarlo

    monkeypatch.setattr(montecarlo, "faithful_seconds", lambda *a, **k: 1e9)
    base = ["validate", "krr", "--k", "4", "--gamma", "0.5", "--n", "200", "--trials", "5", "--engine", "faithful"]
    assert main(base) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "about 1e+09 s" in err and "--yes" in err and "--engine fast answers" in err
    assert main(base + ["--yes"]) == 0


def test_a_dishonest_faithful_run_is_estimated_and_refused(capsys, monkeypatch):
    from shufflesim.experiments import montecarlo

    monkeypatch.setattr(montecarlo, "faithful_seconds", lambda *a, **k: 1e9)
    base = ["simulate", "krr", "--k", "3", "--gamma", "0.4", "--n", "30", "--trials", "5", "--engine", "faithful",
            "--dishonest", "3", "--target", "1"]
    assert main(base) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "10 trial(s) of krr" in err and "attacked and honest" in err and "--engine fast answers" in err
    assert main(base + ["--yes"]) == 0


def test_sweep_and_run_use_the_same_time_limit(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SHUFFLESIM_TIME_LIMIT", "1e-9")  # every estimate is above it
    code = main(["sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "100", "--trials", "2",
                 "--output", str(tmp_path / "sw")])
    err = _one_error_line(capsys.readouterr().err)
    assert code == 2 and "--yes" in err and not (tmp_path / "sw").exists()
    assert resources.DEFAULT_TIME_LIMIT == 600.0  # the limit the README states


def test_the_fast_engine_is_limited_by_its_trials(capsys, monkeypatch):
    from shufflesim.experiments import montecarlo

    real = montecarlo.run_trials

    def started(*args, **kwargs):
        raise AssertionError("the run was started")

    monkeypatch.setattr(montecarlo, "run_trials", started)
    base = ["simulate", "krr", "--k", "3", "--gamma", "0.5", "--n", "1000", "--engine", "fast"]
    assert main(base + ["--trials", "1e10", "--yes"]) == 2  # 10^10 records: memory, which --yes does not lift
    err = _one_error_line(capsys.readouterr().err)
    assert "on the fast engine needs about" in err and "of memory" in err and err.rstrip().endswith("lower --trials")
    monkeypatch.setattr(montecarlo, "fast_seconds", lambda *a, **k: 1e9)
    assert main(base + ["--trials", "10"]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "about 1e+09 s" in err and "--yes" in err
    monkeypatch.setattr(montecarlo, "run_trials", real)
    assert main(base + ["--trials", "10", "--yes"]) == 0


@pytest.mark.parametrize("argv", [["krr", "--set", "k=3", "--set", "eps0=1"], ["ikos-sum", "--set", "eps=1"]])
def test_sweep_auto_at_1e9_answers_with_the_fast_engine(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "2G")  # 10^9 rows (about 22 GiB) never fit
    code = main(["sweep", *argv, "--n", "1000000000", "--trials", "2", "--engine", "auto", "--json",
                 "--output", str(tmp_path / "sw")])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    row = json.loads(cap.out)["summary"][0]
    assert row["engine"] == "fast" and row["n"] == 10**9 and row["mse_expected"] > 0


def test_validate_a_fixed_fast_run_is_estimated_and_refused(capsys, monkeypatch):
    """``validate`` (default engine auto = fast for krr) with ``--trials 1e15`` ran without an estimate (the fuzz
    walk's class "huge --trials hangs"); it goes through simulate's fast-engine estimate (check_fast_fits)."""
    from shufflesim.validation import mse

    def started(*args, **kwargs):
        raise AssertionError("the run was started")

    monkeypatch.setattr(mse, "validate_protocol", started)
    assert main(["validate", "krr", "--k", "3", "--eps0", "1", "--n", "40", "--trials", "1e15", "--json"]) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "on the fast engine needs about" in err and err.rstrip().endswith("lower --trials")


@pytest.mark.parametrize("command", ["simulate", "validate"])
def test_engine_fast_without_a_fast_engine_is_refused_before_the_probe(capsys, command):
    """``--engine fast`` on a protocol that has none reached the fast engine's time probe (NotImplementedError)."""
    assert main([command, "flame-double", "--eps-l", "1", "--n", "40", "--trials", "3", "--engine", "fast"]) == 2
    assert "has no fast engine" in _one_error_line(capsys.readouterr().err)


TRIAL_COUNTS = {
    "fl rounds": (["fl", "--protocol", "np", "--rounds", "1e15", "--n", "20", "--per-user", "2", "--json"],
                  "lower --rounds or --local-steps"),
    "fl local steps": (["fl", "--protocol", "np", "--rounds", "1", "--local-steps", "1e15", "--n", "20", "--per-user",
                        "2", "--json"], "lower --rounds or --local-steps"),
    "demo trials": (["demo", "--k", "3", "--eps0", "1", "--trials", "1e15", "--output", "OUT", "--json"],
                    "lower --trials"),
    "audit trials": (["audit", "krr", "--k", "3", "--eps0", "1", "--n", "10", "--eps", "1", "--trials", "1e15",
                      "--json"], "lower --trials"),
}


@pytest.mark.parametrize("argv,advice", TRIAL_COUNTS.values(), ids=TRIAL_COUNTS.keys())
def test_every_trial_count_is_weighed_before_work(capsys, tmp_path, argv, advice):
    """A trial count is work (the fuzz walk's "huge --trials/--rounds hangs" class): fl's rounds x local steps,
    demo's and audit's trials are estimated and refused by the one policy, naming the knob, before anything runs
    or is written (on main: fl and demo ran for hours, audit died of MemoryError without an estimate)."""
    import signal

    def hang(*_):
        raise AssertionError("still running after 60 s: the work was started")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        code = main([str(tmp_path / "out") if a == "OUT" else a for a in argv])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = _one_error_line(capsys.readouterr().err)
    assert code == 2 and ("is estimated to take about" in err or "of memory" in err), err
    assert err.rstrip().endswith(advice), err
    assert not (tmp_path / "out").exists()


def test_fl_time_estimate_names_yes(capsys, monkeypatch):
    """fl's estimate is weighed against the time limit, which --yes lifts (SHUFFLESIM_TIME_LIMIT sets it)."""
    monkeypatch.setenv("SHUFFLESIM_TIME_LIMIT", "1e-9")
    argv = ["fl", "--protocol", "np", "--rounds", "1", "--n", "20", "--per-user", "2", "--json"]
    assert main(argv) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "SHUFFLESIM_TIME_LIMIT" in err and "--yes runs it anyway" in err
    assert main(argv + ["--yes"]) == 0
