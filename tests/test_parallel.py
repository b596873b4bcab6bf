"""workers > 1 from any caller: guarded and unguarded scripts, stdin, `python -c` (as a notebook: no main
file), protocol classes defined in __main__ — parallel where possible, else serial with a warning; the
records are identical in every case."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from shufflesim.experiments import parallel

SCRIPT = textwrap.dedent("""
    import warnings
    warnings.simplefilter("error")  # any warning (serial fallback, leaked semaphores) fails the run
    from shufflesim.pipeline import registry
    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import run_trials

    x = load_data("zipf:1.0", data_kind="categorical", n=2000, k=4, rng=0)
    proto = registry.create("krr", 2000, k=4, eps0=1.0)
    a = run_trials(proto, x, trials=12, rng=5, workers=2, chunk_size=3).records.drop(columns="seconds")
    b = run_trials(proto, x, trials=12, rng=5, workers=1).records.drop(columns="seconds")
    assert a.equals(b) and len(a) == 12
    print("OK")
""")


def _check(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stderr[-3000:]
    assert "leaked" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]


def test_unguarded_script(tmp_path):
    f = tmp_path / "study.py"
    f.write_text(SCRIPT)
    _check(subprocess.run([sys.executable, str(f)], capture_output=True, text=True, cwd=tmp_path, timeout=300))


def test_guarded_script(tmp_path):
    f = tmp_path / "study.py"
    body = textwrap.indent(SCRIPT, "    ")
    f.write_text("def main():\n" + body + "\n\nif __name__ == '__main__':\n    main()\n")
    _check(subprocess.run([sys.executable, str(f)], capture_output=True, text=True, cwd=tmp_path, timeout=300))


def test_stdin(tmp_path):
    _check(subprocess.run([sys.executable, "-"], input=SCRIPT, capture_output=True, text=True, cwd=tmp_path,
                          timeout=300))


def test_no_main_file_like_a_notebook(tmp_path):
    _check(subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300))


def test_protocol_class_defined_in_main(tmp_path):
    code = SCRIPT.replace('proto = registry.create("krr", 2000, k=4, eps0=1.0)', textwrap.dedent("""
        Base = type(registry.create("krr", 2000, k=4, eps0=1.0))
        class MyKRR(Base):
            pass
        proto = MyKRR.create(2000, k=4, eps0=1.0)
    """))
    _check(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300))


def test_guard_detection():
    src = "import x\nrun()\nif __name__ == '__main__':\n    run()\n    more()\nif '__main__' == __name__:\n    run()\n"
    assert not parallel._line_is_guarded(src, 2)
    assert parallel._line_is_guarded(src, 4) and parallel._line_is_guarded(src, 5)
    assert parallel._line_is_guarded(src, 7)
    assert not parallel._line_is_guarded("if __name__ == 'x':\n    run()\n", 2)


def test_serial_fallback_warns_once_and_matches(monkeypatch):
    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import run_trials
    from shufflesim.pipeline import registry

    x = load_data("uniform", data_kind="categorical", n=500, k=3, rng=0)
    proto = registry.create("krr", 500, k=3, eps0=1.0)
    monkeypatch.setattr(parallel, "worker_context", lambda objects=(): (None, "no safe start method here"))
    with pytest.warns(parallel.SerialFallbackWarning, match="no safe start method here") as rec:
        a = run_trials(proto, x, trials=6, rng=1, workers=2).records.drop(columns="seconds")
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    b = run_trials(proto, x, trials=6, rng=1, workers=1).records.drop(columns="seconds")
    assert a.equals(b)


def test_no_fork_outside_linux(monkeypatch):
    monkeypatch.setattr(parallel, "spawn_hazard", lambda objects=(): "reason")
    monkeypatch.setattr(parallel.sys, "platform", "darwin")
    assert parallel.worker_context() == (None, "reason")
