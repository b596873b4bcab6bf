"""Every number a user gives (issue 29, "what to build" 1): one bounded parser and one set of validators for the
command line, scenario files and the library.  One parametrised test per class of the issue:

* numbers at the edges of double precision (1e400, 1e999999999, 400-digit integers, int64 wrap of a sum);
* size before work (a matrix file refused by its size before it is parsed; enumeration_cost without overflow);
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


@pytest.mark.parametrize("n,k,m", [(1000, 1000, 1000), (1000, 3000, 3000), (10**6, 50, 50), (5, 3, 3)])
def test_enumeration_cost_never_overflows(n, k, m):
    # old: OverflowError for valid 1000 x 1000 and 3000 x 3000 matrices
    import math

    from shufflesim.mechanisms.matrix import enumeration_cost

    c = enumeration_cost(n, k, m)
    exact = math.comb(n + k - 1, k - 1) * n * math.comb(n + m - 1, m - 1) * m if n < 100 else None
    assert c > 0 and (exact is None or c == float(exact))


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
    est = csv_read_bytes(f)
    assert 400_000 * 57 <= est <= 400_000 * 80 + f.stat().st_size  # a str and a pointer a cell
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
