"""Every number a user gives (issue 29, "what to build" 1): one bounded parser and one set of validators for the
command line, scenario files and the library.  One parametrised test per class of the issue:

* numbers at the edges of double precision (1e400, 1e999999999, 400-digit integers, int64 wrap of a sum);
* size before work (a matrix file refused by its size before it is parsed; the enumeration's cost without overflow);
* checks that pass what the run refuses (``run --check`` and the run share one validation);
* a sweep's grid points checked before anything is written.

Every refusal is one ``error:`` line with exit code 2 (CLI) or a ShufflesimError (library), never an
OverflowError, a ZeroDivisionError or a hang.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest

from shufflesim.cli.main import main
from shufflesim.errors import ShufflesimError

HEAD = 'title = "t"\npaper = "none"\nreproduces = "none"\nseed = 1\n'
BIG = "9" * 400  # a 400-digit integer


@contextmanager
def no_hang(seconds: int = 60):
    """Fails the test (instead of hanging) if the block runs longer than ``seconds`` (generous: a bound on a
    hang, not a timing assertion)."""
    def stop(*_):
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused(capsys, *argv) -> str:
    with no_hang():
        code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in out + err
    return lines[0]


# --- numbers at the edges of double precision ----------------------------------------------------------------
EDGE_DATA = {
    "count 1e19 (beyond int64)": ("counts:1e19,1,1", "count[0] must be an integer <="),
    "sum that wraps int64": ("counts:5000000000000000000,5000000000000000000,0", "must be an integer <="),
    "sum beyond 2^62": ("counts:3000000000000000000,3000000000000000000,0", "add up to"),
    "400-digit count": (f"counts:{BIG},1,1", "count[0] must be an integer <="),
    "zipf exponent 1e400": ("zipf:1e400", "within double precision"),
    "a megabyte count": ("counts:" + "1" * 10**6 + ",1,1", "at most"),
}


@pytest.mark.parametrize("spec,needle", EDGE_DATA.values(), ids=EDGE_DATA.keys())
def test_data_specs_at_the_edges_are_refused_in_one_line(capsys, spec, needle):
    # old: OverflowError tracebacks (1e19, 400 digits) and "n must be an integer >= 1; got -8.44674e+18" (int64 wrap)
    line = refused(capsys, "simulate", "krr", "--k", "3", "--eps0", "1", "--data", spec, "--engine", "fast",
                   "--trials", "2")
    assert needle in line, line
    assert len(line) < 400


EDGE_MATRIX = {
    "csv entry 1e400": ("m.csv", "0.5,0.5\n1e400,0.5\n"),
    "csv fraction of 1e999999999": ("m.csv", "1/2,1/2\n1e999999999/3,0.5\n"),
    "toml string 1e999999999": ("m.toml", 'matrix = [[0.5, 0.5], ["1e999999999", 0.5]]\n'),
    "toml string 0e999999999": ("m.toml", 'matrix = [[0.5, 0.5], ["0e999999999", 1]]\n'),
    "toml 400-digit integer": ("m.toml", f"matrix = [[0.5, 0.5], [{BIG}, 0.5]]\n"),
}


@pytest.mark.parametrize("name,text", EDGE_MATRIX.values(), ids=EDGE_MATRIX.keys())
def test_matrix_entries_at_the_edges_are_refused_at_once(tmp_path, name, text):
    # old: OverflowError (1e400, 400 digits), a parse that runs for hours (Fraction('1e999999999'))
    from shufflesim.pipeline.matrix import read_matrix

    f = tmp_path / name
    f.write_text(text)
    with no_hang(), pytest.raises(ShufflesimError):
        read_matrix(f)


EDGE_LIBRARY = {
    "n = 10**400": lambda create: create("krr", 10**400, k=3, eps0=1.0),
    "n = 1e300": lambda create: create("krr", 1e300, k=3, eps0=1.0),
    "n = 2**64": lambda create: create("local-rr-sum", 2**64, eps=1.0),
    "k = 2**64": lambda create: create("central-laplace-hist", 1000, k=2**64, eps=1.0),
    "eps = 10**400": lambda create: create("cheu-sum", 1000, eps=10**400),
    "eps = 1e300 (recursive)": lambda create: create("recursive-sum", 1000, eps=1e300),
}


@pytest.mark.parametrize("make", EDGE_LIBRARY.values(), ids=EDGE_LIBRARY.keys())
def test_library_numbers_at_the_edges_raise_parameter_errors(make):
    # old: OverflowError ("int too large to convert to float", "cannot convert float infinity to integer")
    from shufflesim.pipeline import registry

    with no_hang(), pytest.raises(ShufflesimError):
        p = make(registry.create)
        p.privacy()


@pytest.mark.parametrize("text,ok", [("0.5", 0.5), ("1_000", 1000.0), ("-2e-3", -2e-3), ("1e-320", 1e-320),
                                     ("1e400", None), ("1e-400", None), ("1e999999999", None), ("nan", None),
                                     ("inf", None), (BIG, None), ("x" * 10**6, None), ("", None), ("0x10", None)])
def test_the_bounded_parser(text, ok):
    from shufflesim.core.checks import parse_real
    from shufflesim.errors import ParameterError

    if ok is None:
        with pytest.raises(ParameterError):
            parse_real("v", text)
    else:
        assert parse_real("v", text) == ok


# --- size before work -----------------------------------------------------------------------------------------
def test_a_matrix_file_too_large_is_refused_before_it_is_read(tmp_path):
    # old: read whole (6 min and 12.8 GB for 10000 x 10000) before the entry cap refused it
    from shufflesim.pipeline.matrix import MAX_FILE_BYTES, read_matrix

    f = tmp_path / "big.csv"
    with open(f, "wb") as fh:  # sparse: no disk or memory used unless it is read
        fh.truncate(MAX_FILE_BYTES + 1)
    with no_hang(), pytest.raises(ShufflesimError, match="MB"):
        read_matrix(f)


def test_a_matrix_with_too_many_entries_is_refused_at_the_row_that_passes_the_cap(tmp_path, monkeypatch):
    from shufflesim.pipeline import matrix

    monkeypatch.setattr(matrix, "MAX_ENTRIES", 10)
    f = tmp_path / "m.csv"
    f.write_text("0.5,0.5,0,0\n" * 3 + "not,read,at,all\n" * 100)
    with pytest.raises(ShufflesimError, match="passed on line 3"):
        matrix.read_matrix(f)


@pytest.mark.parametrize("n,k,m", [(1000, 1000, 1000), (1000, 3000, 3000), (10**6, 50, 50), (5, 3, 3),
                                   (200, 310, 310), (200, 318, 318)])  # e^686 and e^694: either side of 1e300
def test_enumeration_cost_never_overflows(n, k, m):
    # old: OverflowError for valid 1000 x 1000 and 3000 x 3000 matrices (the enumeration's cost is now counted by
    # exact.enumeration: count vectors, lattice_size, the same log-space switch at 1e300)
    import math

    from shufflesim.accounting.exact.enumeration import enumeration_steps, lattice_size

    c = lattice_size(n, k)
    exact = math.comb(n + k - 1, k - 1)  # Python's exact integers
    log_exact = math.log(exact)  # math.log of an int works beyond the double range
    if log_exact > 691.0:  # well past the 1e300 switch: beyond any budget
        assert c == math.inf
    elif log_exact < 689.0:  # well below it: the exact count (an exact integer comparison is the point)
        assert c == float(exact)
    assert enumeration_steps(n, k, m) > 0  # no OverflowError, inf at worst


# --- checks that pass what the run refuses --------------------------------------------------------------------
DEFENCE = '[[defence]]\nname = "d"\nprotocol = "{p}"\nn = {n}\nparams = {{ {params} }}\ntolerate = {tol}\n'
CHECK_EQUALS_RUN = {
    "tolerate = nan": (DEFENCE.format(p="krr", n=1000, params="k = 3, eps0 = 1.0", tol="nan"), "tolerate"),
    "n beyond the pair methods' 1e10": (DEFENCE.format(p="krr", n=10**12, params="k = 3, eps0 = 1.0", tol="0.1"),
                                        "1e+10"),
    "eps = 1e300": (DEFENCE.format(p="blanket-sum", n=1000, params="eps = 1e300", tol="0.1"), "eps must be <= 700"),
    "eps with certified delta 0": (DEFENCE.format(p="blanket-sum", n=1000, params="eps = 50.0", tol="0.1"),
                                   "certifies delta = 0"),
    "params eps0 = nan": (DEFENCE.format(p="krr", n=1000, params="k = 3, eps0 = nan", tol="0.1"),
                          "eps0 must be finite"),
    "curve n beyond the pair methods' 1e10": (
        '[[curve]]\nname = "c"\nmechanism = "krr"\nargs = { n = 1000000000000, k = 3, gamma = 0.25, relation = '
        '"strong" }\neps = [1.0]\n', "n must be <= 1e+10"),
}


@pytest.mark.parametrize("step,needle", CHECK_EQUALS_RUN.values(), ids=CHECK_EQUALS_RUN.keys())
def test_run_check_refuses_what_the_run_refuses(tmp_path, capsys, step, needle):
    # old: --check said "ok" to tolerate = nan and n = 1e12; eps = 1e300 (and 50) failed in the run with
    # "delta must be in (0.0, 1.0); got 0.0"
    f = tmp_path / "sc.toml"
    f.write_text(HEAD + step)
    checked = refused(capsys, "run", "--check", f)
    assert needle in checked, checked
    out = tmp_path / "out"
    ran = refused(capsys, "run", f, "--out", out, "--quick")
    assert ran == checked and not out.exists()


# --- a sweep's grid points ------------------------------------------------------------------------------------
def test_every_grid_point_is_checked_before_a_sweep_writes(tmp_path, capsys):
    # old: sweep.json and parts/ were written, then dishonest=2000 (n = 1000) refused in the first chunk
    from shufflesim.experiments.sweep import Sweep, check_point, grid

    sw = Sweep(tuple(grid("blanket-sum", n=1000, eps=1.0, dishonest=[0, 2000])), trials=2, seed=1)
    check_point(sw.to_dict(), 0)
    with pytest.raises(ShufflesimError, match="dishonest"):
        check_point(sw.to_dict(), 1)
    out = tmp_path / "sw"
    line = refused(capsys, "sweep", "blanket-sum", "--n", "1000", "--set", "eps=1", "--set", "dishonest=0,2000",
                   "--trials", "2", "--output", out)
    assert "dishonest" in line and not out.exists()


@pytest.mark.parametrize("question", [{"eps": 10**400}, {"delta": 10**400}, {"eps": -10**400},
                                      {"eps": 1.0, "compositions": 10**400}])
def test_account_refuses_integers_beyond_the_double_range(question):
    # old: OverflowError ("int too large to convert to float") from account(..., eps=10**400)
    from shufflesim.accounting.account import account
    from shufflesim.mechanisms import RR2

    with pytest.raises(ShufflesimError):
        account(RR2(1000, 1.0), **question)


def test_a_csv_file_is_sized_before_it_is_read(tmp_path, monkeypatch):
    """Issue 29 (size before work): a CSV data file whose cells, read as text, would not fit is refused by its
    size before pandas reads it (the estimate is checked against the memory limit; pandas is never called)."""
    import pandas as pd

    from shufflesim.errors import ResourceError
    from shufflesim.experiments.data import csv_read_bytes, load_data

    f = tmp_path / "big.csv"
    f.write_text("age,x\n" + "37,1\n" * 200_000)  # 1 MB: 400,000 cells
    import sys

    text = f.read_text()
    cells = text.count(",") + text.count("\n") + 1  # the file is under 1 MiB: its cells per byte are exact
    size = f.stat().st_size
    assert csv_read_bytes(f) == pytest.approx(cells * (sys.getsizeof("") + 8) + size, rel=1e-12)  # str + pointer
    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "4M")

    def refuse(*a, **k):
        raise AssertionError("the file was read before its size was checked")

    monkeypatch.setattr(pd, "read_csv", refuse)
    with pytest.raises(ResourceError, match=r"big\.csv .*needs about .* of memory"):
        load_data(f"{f}:age", data_kind="categorical", k=100)


def test_a_large_matrix_of_numbers_is_checked_as_an_array(monkeypatch):
    """Issue 29 (size before work / the fuzz walk): a valid 1000 x 1000 matrix given as rows of numbers (as a
    frozen mechanism description keeps it) is checked by numpy, not entry by entry (10 such checks per simulate
    call took over 30 s); strings and bools still go through the entry parser."""
    import numpy as np

    import shufflesim.pipeline.matrix as pm

    rows = np.full((1000, 1000), 1e-3).tolist()

    def one_by_one(*a, **k):
        raise AssertionError("a matrix of plain numbers was read entry by entry")

    monkeypatch.setattr(pm, "_entry", one_by_one)
    assert pm.check_matrix(rows).shape == (1000, 1000)
    with pytest.raises(AssertionError, match="entry by entry"):
        pm.check_matrix([[True, 0.0], [0.5, 0.5]])


# --- classes the full fuzz walk found on main after the first round of fixes (issue 29, item 6) ----------------
PRECISION_EDGES = {
    # a significance level whose 1 - alpha rounds to 1: the interval's quantile is infinite (OverflowError)
    "validate alpha 1e-320": (["validate", "krr", "--k", "3", "--eps0", "1", "--n", "40", "--trials", "3", "--json",
                               "--alpha", "1e-320"], "alpha must be >= 1e-15"),
    "audit alpha 1e-320": (["audit", "krr", "--k", "3", "--eps0", "1", "--n", "10", "--eps", "1", "--trials", "20",
                            "--json", "--alpha", "1e-320"], "alpha must be >= 1e-15"),
    # the DLap closed form divides by eps0/p (ZeroDivisionError) and by 2*eps0 (inf -> nan)
    "ikos eps0 5e-324": (["account", "ikos", "--eps0", "5e-324", "--p", "5", "--sigma", "2", "--eps", "1", "--json"],
                         "eps0 must be >= 1e-100"),
    "ikos eps0 1e308": (["account", "ikos", "--eps0", "1e308", "--p", "5", "--sigma", "2", "--eps", "1", "--json"],
                        "eps0 must be <= 1e+250"),
    # the audit statistic's scale (1 - gamma)/(gamma/k) overflows (nan under numpy)
    "audit gamma 1e-320": (["audit", "blanket-sum", "--protocol-eps", "1", "--n", "10", "--eps", "1", "--trials", "20",
                            "--json", "--gamma", "1e-320"], "gamma must be >= 1e-100"),
    # the number of categories beyond int64 reached the data before the protocol checked it (OverflowError)
    "demo k 1e308": (["demo", "--k", "1e308", "--eps0", "1", "--trials", "2", "--output", "OUT", "--json"],
                     "k must be an integer <="),
}


@pytest.mark.parametrize("argv,needle", PRECISION_EDGES.values(), ids=PRECISION_EDGES.keys())
def test_numbers_at_the_precision_edges_found_by_the_walk(capsys, tmp_path, argv, needle):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert needle in refused(capsys, *argv)
    assert not (tmp_path / "out").exists()  # nothing written before a refusal


def test_run_workers_beyond_the_cpus_are_capped_like_every_other_command(capsys, tmp_path):
    """``run --workers 2^63`` raised OverflowError in multiprocessing (``type=int``, no cap); it is read by the
    one bounded parser and capped at the available CPUs with one warning, as simulate/validate/sweep/demo do."""
    (tmp_path / "t.toml").write_text(HEAD + '[[sweep]]\nname = "s"\nprotocol = "krr"\nn = [40]\n'
                                     'params = { k = 3, eps0 = 1.0 }\ntrials = 2\nquick_trials = 2\n')
    with no_hang(120):
        code = main(["run", str(tmp_path / "t.toml"), "--out", str(tmp_path / "o"), "--quick",
                     "--workers", "9223372036854775807"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err, err
    assert "available CPU(s); using" in err


def test_a_matrix_of_integer_fractions_is_divided_at_once(tmp_path, monkeypatch):
    """A CSV matrix of fractions such as 2/1001 (the walk's valid 1000 x 1000 file) was read entry by entry
    through Fraction, three times per simulate call (over 30 s); rows of integer fractions are divided by numpy,
    to the same doubles (both sides exact, IEEE division correctly rounded); other strings keep the entry parser."""
    import shufflesim.pipeline.matrix as pm

    k = 5
    (tmp_path / "m.csv").write_text("\n".join(",".join("2/6" if j == i else "1/6" for j in range(k))
                                              for i in range(k)) + "\n")
    calls = []
    real = pm._entry
    monkeypatch.setattr(pm, "_entry", lambda v, where: calls.append(v) or real(v, where))
    R, _ = pm.read_matrix(tmp_path / "m.csv")
    assert not calls
    rows = [[real(t, "") for t in line.split(",")] for line in (tmp_path / "m.csv").read_text().split()]
    assert R.tolist() == pm.check_matrix(rows).tolist()
    import random

    rnd = random.Random(29)
    tokens = [f"{rnd.randint(0, 10**12)}/{rnd.randint(10**12, 10**15)}" for _ in range(2000)]
    assert pm.integer_fractions(tokens).tolist() == [real(t, "") for t in tokens]
    assert pm.integer_fractions(["1/0", "1/1"]) is None and pm.integer_fractions(["3/2", "0/1"]) is None


def test_flame_topk_nu_nan_is_refused(capsys):
    """``--nu nan`` passed index_privacy_l's range test (nan compares false) and reached math.ceil (ValueError)."""
    assert "nu must be finite" in refused(capsys, "simulate", "flame-topk", "--eps-l", "1", "--n", "40", "--trials",
                                          "2", "--nu", "nan")


@pytest.mark.parametrize("argv", [
    ["audit", "krr", "--k", "3", "--eps0", "1", "--n", "10", "--eps", "1e308", "--trials", "20", "--json"],
    ["audit", "ikos-sum", "--protocol-eps", "1", "--protocol-delta", "1e-3", "--n", "10", "--eps", "1e308",
     "--trials", "20", "--json"],
    ["account", "matrix", "--n", "20", "--matrix", "M", "--eps", "9223372036854775808", "--json"],
    ["audit", "matrix-rr", "--matrix", "M", "--n", "10", "--eps", "1e308", "--trials", "20", "--json"],
], ids=["audit krr", "audit ikos-sum", "account matrix", "audit matrix-rr"])
def test_delta_at_an_eps_beyond_the_doubles_is_zero_not_an_overflow(capsys, tmp_path, argv):
    """delta(eps) where e^eps overflows double precision (math range error in the exact k-RR lower bound and the
    matrix curves, on main) is computed with e^eps = inf exactly: an outcome possible under both sides adds
    nothing, one impossible under the other adds its probability (here none), so delta = 0 on both ends."""
    import json

    (tmp_path / "m.toml").write_text("matrix = [[0.75, 0.25], [0.25, 0.75]]\n")
    argv = [str(tmp_path / "m.toml") if a == "M" else a for a in argv]
    with no_hang():
        code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err, err
    text = json.dumps(json.loads(out))
    assert '"delta_lower": 0.0' in text and "NaN" not in text and "Infinity" not in text


@pytest.mark.parametrize("eps", ["360", "1000", "1e308"])
@pytest.mark.parametrize("method", [["--method", "feldman"], ["--compare"]])
def test_a_published_bound_at_an_eps_beyond_the_doubles(eps, method, capsys):
    """The second read: with e^eps computed as inf past the doubles, Feldman et al.'s closed form (eq C.2) still
    overflowed from eps ~ 355 (OverflowError in expm1 and in the square).  Every method answers, no warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(["account", "rr2", "--n", "1000", "--eps0", "2", *method, "--eps", eps])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err and "nan" not in out


def test_the_cheu_lower_end_stays_below_the_exact_delta_near_the_double_range():
    """The second read: the tail path's lower end subtracts e^eps times the dropped mass (it multiplied e^min(eps,
    700)).  Checked against the exact delta of the same pair, written out independently: the analyser's count of
    ones is Bin((n-1)r, q) + Bin(r, 1-q) against Bin(nr, q), q = gamma/2 (every other user holds 0; the target
    holds r ones or none), its hockey-stick divergence summed in log space in both directions."""
    import numpy as np
    from scipy.stats import binom

    from shufflesim.accounting.bounds.cheu import cheu_lower_delta

    n, r, gamma = 300, 80, 1e-4
    q, m = gamma / 2.0, (n - 1) * r
    c = np.arange(n * r + 1)
    lQ = binom.logpmf(c, n * r, q)
    lP = np.logaddexp.reduce(binom.logpmf(c[:, None] - np.arange(r + 1)[None, :], m, q)
                             + binom.logpmf(np.arange(r + 1), r, 1.0 - q)[None, :], axis=1)

    def exact(eps):
        out = 0.0
        for la, lb in ((lP, lQ), (lQ, lP)):
            z = eps + lb - la
            keep = z < 0
            out = max(out, float(np.sum(np.exp(la[keep]) * -np.expm1(z[keep]))))
        return out

    for eps in (650.0, 700.0, 705.0, 709.5, 1000.0):
        assert 0.0 <= cheu_lower_delta(n, r, gamma, eps) <= exact(eps), eps