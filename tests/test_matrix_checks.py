"""Matrices are what the docs promise (issue 29): a matrix that is not ε0-LDP is refused on every path; a matrix
whose inputs are not identifiable (more inputs than outputs, equal rows) gets an exact MSE that includes the
squared bias (checked against exact enumeration and a large fixed-seed simulation); an exact theory verdict
that a decisive simulation contradicts says so; and ``matrix-rr`` works in a scenario file as docs/plugins.md
shows.
"""

from __future__ import annotations

import itertools
import warnings
import math
from pathlib import Path

import numpy as np
import pytest

from shufflesim.accounting.exact.shuffle_oracle import histogram_law
from shufflesim.cli.main import main
from shufflesim.errors import ParameterError
from shufflesim.mechanisms.matrix import ShuffledMatrix
from shufflesim.pipeline import registry
from shufflesim.pipeline.matrix import MatrixRandomiser, check_matrix, inversion_mse_terms
from shufflesim.protocols.matrix_rr import MatrixProtocol
from shufflesim.validation.mse import validate_errors

IDENTITY = [[1.0, 0.0], [0.0, 1.0]]
ZERO_IN_USED_COLUMN = [[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.3, 0.3, 0.4]]
#: the issue's 3 × 2 matrix: more inputs than outputs, inputs 0 and 1 with equal rows
M32 = [[0.75, 0.25], [0.75, 0.25], [0.25, 0.75]]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_csv(path: Path, rows) -> Path:
    path.write_text("\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    return path


def assert_refused(code, out, err):
    assert code == 2, (out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "not eps0-LDP" in lines[0], err
    assert "Traceback" not in err


# --- eps0-LDP on every path ---------------------------------------------------------------------------------------
COMMANDS = {
    "simulate": ["simulate", "matrix-rr", "--n", 100, "--trials", 3, "--engine", "fast"],
    "simulate-faithful": ["simulate", "matrix-rr", "--n", 100, "--trials", 3, "--engine", "faithful"],
    "validate": ["validate", "matrix-rr", "--n", 100, "--max-trials", 2048],
    "audit": ["audit", "matrix-rr", "--n", 5, "--eps", 0.5, "--trials", 1000],
    "account-protocol": ["account", "matrix-rr", "--n", 5, "--eps", 0.5],
    "account-mechanism": ["account", "matrix", "--n", 5, "--eps", 0.5],
}


@pytest.mark.parametrize("matrix", [IDENTITY, ZERO_IN_USED_COLUMN], ids=["identity", "zero-in-used-column"])
@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_non_ldp_matrix_refused_by_every_command(tmp_path, capsys, matrix, cmd):
    f = write_csv(tmp_path / "m.csv", matrix)
    assert_refused(*run_cli(capsys, *COMMANDS[cmd], "--matrix", f))


@pytest.mark.parametrize("matrix", [IDENTITY, ZERO_IN_USED_COLUMN], ids=["identity", "zero-in-used-column"])
def test_non_ldp_matrix_refused_from_python(tmp_path, matrix):
    f = write_csv(tmp_path / "m.csv", matrix)

    class Mine(MatrixProtocol):  # a plug-in's build_matrix returning the matrix (not registered)
        name = "i29-mine"
        summary = "test"

        @classmethod
        def build_matrix(cls):
            return np.array(matrix)

    for make in (lambda: check_matrix(matrix), lambda: MatrixRandomiser(matrix),
                 lambda: ShuffledMatrix(10, matrix), lambda: registry.create("matrix-rr", 100, matrix=str(f)),
                 lambda: Mine.create(100), lambda: Mine.data_k({})):
        with pytest.raises(ParameterError, match="not eps0-LDP"):
            make()


def test_non_ldp_matrix_refused_by_sweep_before_writing(tmp_path, capsys):
    f = write_csv(tmp_path / "m.csv", IDENTITY)
    assert_refused(*run_cli(capsys, "sweep", "matrix-rr", "--set", f"matrix={f}", "--n", 100, "--trials", 3,
                            "--output", tmp_path / "sw"))
    assert not (tmp_path / "sw").exists()


def scenario(tmp_path: Path, matrix_file: str) -> Path:
    f = tmp_path / "sc.toml"
    f.write_text(f"""title = "a matrix in a scenario"
paper = "none"
reproduces = "none"
seed = 1

[[sweep]]
name = "mine"
protocol = "matrix-rr"
label = "mine"
figure = "mse_vs_n"
n = [1000]
data = "zipf:1.1"
params = {{ matrix = "{matrix_file}" }}
trials = 20
engine = "fast"
""")
    return f


def test_non_ldp_matrix_refused_in_a_scenario_before_writing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_csv(tmp_path / "id.csv", IDENTITY)
    sc = scenario(tmp_path, "id.csv")
    code, out, err = run_cli(capsys, "run", sc, "--check")
    assert code == 2 and "not eps0-LDP" in err, (out, err)
    code, out, err = run_cli(capsys, "run", sc, "--out", tmp_path / "out")
    assert code == 2 and "not eps0-LDP" in err, (out, err)
    assert not (tmp_path / "out").exists()


def test_matrix_rr_in_a_scenario_file_as_documented(tmp_path, capsys, monkeypatch):
    """docs/plugins.md: ``params = { matrix = "abstain.toml" }``; k comes from the matrix's rows."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "abstain.toml").write_text("matrix = [[0.5, 0.15, 0.15, 0.2], [0.15, 0.5, 0.15, 0.2], "
                                           "[0.15, 0.15, 0.5, 0.2]]\n")
    sc = scenario(tmp_path, "abstain.toml")
    code, out, err = run_cli(capsys, "run", sc, "--check")
    assert code == 0, err
    code, out, err = run_cli(capsys, "run", sc, "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "report.md").is_file()


# --- identifiability: exact MSE with the squared bias -------------------------------------------------------------
def exact_mse_by_enumeration(R: np.ndarray, A: np.ndarray, counts) -> float:
    """E‖A N − c‖² summed over the exact law of the shuffled histogram N (shuffle_oracle.histogram_law)."""
    data = [x for x, c in enumerate(counts) for _ in range(int(c))]
    c = np.asarray(counts, dtype=float)
    return math.fsum(p * float(np.sum((A @ np.array(h, dtype=float) - c) ** 2))
                     for h, p in histogram_law(R, data).items())


@pytest.mark.parametrize("matrix", [M32, [[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]],
                                    [[0.6, 0.4], [0.4, 0.6]]], ids=["3x2", "3x3-equal-rows", "2x2-identifiable"])
def test_exact_mse_includes_the_squared_bias(tmp_path, matrix):
    n = 6
    f = write_csv(tmp_path / "m.csv", matrix)
    proto = registry.create("matrix-rr", n, matrix=str(f))
    R, A, k = proto.matrix, proto.analyser.A, proto.k
    worst = 0.0
    for ms in itertools.combinations_with_replacement(range(k), n):
        counts = np.bincount(np.array(ms), minlength=k)
        truth = exact_mse_by_enumeration(R, A, counts)
        worst = max(worst, truth)
        assert math.isclose(proto.mse_expected(np.array(ms)), truth, rel_tol=1e-9, abs_tol=1e-12), ms
    assert math.isclose(proto.mse_worst(), worst, rel_tol=1e-9)
    identifiable = matrix[0] != matrix[1]
    assert ("unidentifiable_inputs" in proto.params) != identifiable
    if not identifiable:
        assert proto.params["unidentifiable_inputs"] == [0, 1]


def test_exact_mse_with_bias_against_a_large_simulation(tmp_path):
    """n = 1000 users with input counts (600, 100, 300) on the 3 × 2 matrix: 40000 fixed-seed trials of the fast
    engine.  Tolerance: 5 standard errors of the trial mean (two-sided normal tail 6e-7); the variance-only
    formula (the bias left out) is then more than 5 standard errors away, so the test tells them apart."""
    f = write_csv(tmp_path / "m.csv", M32)
    proto = registry.create("matrix-rr", 1000, matrix=str(f))
    counts = np.array([600, 100, 300])
    data = np.repeat(np.arange(3), counts)
    from shufflesim.pipeline.fast import summarise_data

    sq = proto.sample_fast_batch(summarise_data(proto, data), counts.astype(float), np.random.default_rng(29),
                                 40_000)["sq_error"]
    se = float(np.std(sq, ddof=1)) / math.sqrt(sq.size)
    expected = proto.mse_expected(data)
    assert abs(float(np.mean(sq)) - expected) <= 5 * se, (np.mean(sq), expected, se)
    variance_only = float(counts @ inversion_mse_terms(proto.matrix, proto.analyser.A))
    assert math.isclose(expected - variance_only, (600 - 100) ** 2 / 2, rel_tol=1e-9)  # ‖B c‖² = (c0 − c1)² / 2
    assert abs(float(np.mean(sq)) - variance_only) > 5 * se


# --- an exact verdict contradicted by the simulation says so -----------------------------------------------------
def test_exact_holds_contradicted_by_simulation_disagrees():
    sq = np.random.default_rng(1).normal(100.0, 10.0, 4000)  # E[sq error] ≈ 100 (interval ~ [99.4, 100.6])
    res = validate_errors(sq, expected=90.0, worst=90.0, bound=95.0, rng=2)
    checks = {c["check"]: c for c in res["checks"]}
    assert checks["mse_expected"]["verdict"] == "violated"
    for name in ("mse_worst", "mse_bound"):  # both "hold (exact)" from theory alone; the interval lies above
        assert checks[name]["verdict"] == "disagrees" and checks[name]["basis"] == "exact vs simulation"
        assert "disagree" in checks[name]["reason"]
    assert res["verdict"] == "violated"


def test_exact_violated_contradicted_by_simulation_disagrees():
    sq = np.random.default_rng(1).normal(50.0, 5.0, 4000)
    res = validate_errors(sq, expected=100.0, bound=90.0, rng=2)
    (bound,) = [c for c in res["checks"] if c["check"] == "mse_bound"]
    assert bound["verdict"] == "disagrees"  # exact: 90 < 100 "violated in expectation"; the interval is below 90


def test_exact_verdict_kept_when_simulation_agrees():
    sq = np.random.default_rng(1).normal(100.0, 10.0, 4000)
    res = validate_errors(sq, expected=100.0, worst=150.0, rng=2)
    (worst,) = [c for c in res["checks"] if c["check"] == "mse_worst"]
    assert worst["verdict"] == "holds" and worst["basis"] == "exact"


def test_validate_cli_says_theory_and_simulation_disagree(capsys):
    """k-RR's per-input MSE terms are equal, so mse_worst = mse_expected; planted 10 % low, the simulation lies
    above both: mse_worst must not print "holds (exact)"."""
    code, out, err = run_cli(capsys, "validate", "krr", "--k", 4, "--eps0", 1, "--n", 1000, "--plant-error", -0.1)
    line = next(ln for ln in out.splitlines() if ln.startswith("mse_worst"))
    assert "holds" not in line and "disagrees (exact vs simulation)" in line, out
    assert "verdict  violated" in out


def test_ratio_beyond_double_precision_is_named_not_called_zero(tmp_path, capsys):
    """An entry near the subnormal range makes a column's ratio overflow: refused in one line that says so (not
    "probability 0"), with no RuntimeWarning on the way."""
    f = tmp_path / "m.csv"
    f.write_text("0.5,0.5\n1e-320,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run_cli(capsys, "simulate", "matrix-rr", "--matrix", f, "--n", 100, "--trials", 3)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "beyond double precision" in err, err
