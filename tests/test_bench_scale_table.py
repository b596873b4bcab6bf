"""The harness of bench/scale_table.py (issue 21's side-by-side table): cells, Wang et al.'s hook, checks.

Nothing of Wang et al.'s code is used here: their hook is exercised with a stand-in module written to a
temporary directory, which records the arguments it is called with.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


@pytest.fixture(scope="module")
def st():
    sys.path.insert(0, BENCH)
    try:
        yield importlib.import_module("scale_table")
    finally:
        while BENCH in sys.path:
            sys.path.remove(BENCH)


def _args(st, **kw):
    ap = argparse.ArgumentParser()
    st.add_parser(ap.add_subparsers(dest="what"))
    a = ap.parse_args(["table"])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def test_run_cell_reports_json_time_peak_failures_and_timeouts(st):
    ok = st.run_cell([sys.executable, "-c", "import json; print('noise'); print(json.dumps({'up': 0.5}))"], 60)
    assert ok["up"] == 0.5 and ok["seconds"] > 0 and ok["peak"] > 2**20  # a Python process holds > 1 MiB
    big = st.run_cell([sys.executable, "-c", "import json; b = bytearray(300 * 2**20); "
                       "b[::4096] = b'x' * len(b[::4096]); print(json.dumps({}))"], 60)
    assert big["peak"] >= 300 * 2**20
    held = bytearray(200 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # this process now holds > 200 MiB
    bare = st.run_cell([sys.executable, "-c", "print('{}')"], 60)
    del held
    # the child's own peak: a bare interpreter holds some 10 MiB; its ru_maxrss would report at least this
    # process's resident set (Linux keeps the forked copy's high water mark across exec)
    assert bare["peak"] < 64 * 2**20
    bad = st.run_cell([sys.executable, "-c", "import sys; sys.stderr.write('error: refused\\n'); sys.exit(2)"], 60)
    assert bad["fail"] == "exit 2: error: refused"
    slow = st.run_cell([sys.executable, "-c", "import time; time.sleep(60)"], 0.5)
    assert slow["fail"].startswith("timeout") and slow["seconds"] < 30


def test_questions_are_the_issue_commands(st):
    assert st.cli_args("clones", 10**8) == ["account", "clones", "--eps0", "1", "--n", "1e+08", "--delta", "1e-09",
                                            "--json"]
    assert st.cli_args("clones-best", 2 * 10**9)[1:] == ["clones", "--eps0", "2", "--method", "best", "--n", "2e+09",
                                                         "--delta", "1e-06", "--json"]
    assert "--compositions" in st.cli_args("clones-x1000", 10**6)
    # k-RR with blanket gamma: eps0 = log(1 + k(1-gamma)/gamma), and Wang et al.'s README beta for k-ary RR,
    # (e^eps0 - 1)/(e^eps0 + k - 1), is then the probability 1 - gamma of reporting truthfully without the blanket
    p, beta, q = st.wang_params("krr-strong")
    assert math.isclose(p, 13.0, rel_tol=1e-12) and q == p and math.isclose(beta, 0.75, rel_tol=1e-12)
    # binary RR / stronger clones: alpha = beta/(p-1) = 1/(e^eps0 + 1)
    p, beta, q = st.wang_params("clones")
    assert math.isclose(beta / (p - 1), 1 / (math.e + 1), rel_tol=1e-12)


def test_wang_hook_absent_and_present(st, tmp_path, monkeypatch):
    monkeypatch.delenv(st.WANG_ENV, raising=False)
    a = _args(st, wang_dir=None, wang_T=7)
    assert st.wang_cell("clones", 1000, a)["skip"].startswith("not available")
    a.wang_dir = str(tmp_path)  # a directory without their module
    assert st.wang_cell("clones", 1000, a)["skip"].startswith("not available")
    (tmp_path / st.WANG_FILE).write_text(
        "import json\n"
        "def amplificationUB(p, beta, q0, q1, n, delta, T):\n"
        f"    open({str(tmp_path / 'args.json')!r}, 'w').write(json.dumps([p, beta, q0, q1, n, delta, T]))\n"
        "    return 0.25\n")
    monkeypatch.setenv(st.WANG_ENV, str(tmp_path))
    a.wang_dir = None
    d = st.wang_cell("clones-best", 1234, a)
    assert d["up"] == 0.25 and d["lo"] is None  # the stand-in's answer, passed through as is
    p, beta, q0, q1, n, delta, T = json.loads((tmp_path / "args.json").read_text())
    assert (n, delta, T) == (1234, 1e-6, 7) and q0 == q1 == p and math.isclose(p, math.exp(2), rel_tol=1e-12)
    assert "does not compose" in st.wang_cell("clones-x1000", 10**6, a)["skip"]


def test_checks_flag_above_wang_and_contradictions(st):
    def cells(lo, up, wang):
        return {"shufflesim": {"lo": lo, "up": up, "seconds": 1.0, "peak": 2**20},
                "current": {"skip": "x"}, "dp_accounting": {"skip": "x"},
                "Wang et al.": {"lo": None, "up": wang, "seconds": 2.0, "peak": 2**21}}

    assert "none" in st.checks([("clones", 10**6, cells(0.1, 0.2, 0.3))])[0]
    above = st.checks([("clones", 10**6, cells(0.1, 0.4, 0.3))])
    assert len(above) == 1 and "ABOVE" in above[0]
    both = st.checks([("krr-shuffled", 10**6, cells(0.35, 0.4, 0.3))])
    assert any("CONTRADICTION" in c for c in both) and any("ABOVE" in c for c in both)
    other = st.checks([("krr-strong", 10**6, cells(0.35, 0.4, 0.3))])  # Wang et al. answer a weaker adversary
    assert len(other) == 1 and "expected" in other[0]
    assert "no row" in st.checks([("clones", 10**6, cells(0.1, 0.2, None) | {"Wang et al.": {"skip": "x"}})])[0]
    lines = st.table_lines([("clones", 10**6, cells(0.1, 0.2, 0.3))])
    wang = [ln for ln in lines if "Wang" in ln][0]
    assert "| 2x | 2x | 1.5x |" in wang  # time, peak and eps-upper ratios over shufflesim's


def test_shufflesim_cell_is_the_cli_answer(st):
    from shufflesim.accounting import account
    from shufflesim.mechanisms.clones import Clones

    d = st.shufflesim_cell("clones", 2000, 120)
    r = account(Clones(2000, 1.0), delta=[1e-9]).results[0]
    # the same computation in another process: equal to the last bit (json round-trips doubles exactly)
    assert (d["lo"], d["up"]) == (r.eps_lower, r.eps_upper)


@pytest.mark.slow
def test_small_table_written(st, tmp_path):
    out = tmp_path / "t.md"
    a = _args(st, ns="1e4", groups="clones,krr-shuffled", wang_dir=None, write=True, output=str(out))
    st.run(a)
    text = out.read_text()
    assert text.count("| clones | 1e+04 |") == 4 and "not available" in text and "Checks:" in text
    merged = tmp_path / "m.md"
    st.run(_args(st, render=f"{tmp_path / 't.json'},{tmp_path / 't.json'}", write=True, output=str(merged)))
    assert merged.read_text().count("| clones | 1e+04 |") == 8
