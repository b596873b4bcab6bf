"""Plug-ins (issue 22): discovery through the entry-point group ``shufflesim.protocols``, broken plug-ins
reported in one line, and every block of docs/plugins.md run as written.

The fast tests register the guide's plug-in through a fake entry point, in process; the slow test installs
it (and a broken plug-in) as real packages into a fresh virtual environment and runs the guide's commands
there, as a new user would.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import time
import warnings
from pathlib import Path

import pytest

from shufflesim.pipeline import registry

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugins.md"


def blocks() -> list[tuple[str, str]]:
    """(language, body) of every fenced block of the guide, in order."""
    return re.findall(r"```(\w+)\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def write_files(where: Path) -> None:
    """The guide's files (blocks whose first line is ``# file: PATH``) written under ``where``."""
    for _, body in blocks():
        first = body.splitlines()[0]
        if first.startswith("# file: "):
            path = where / first[len("# file: "):].strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")


def commands() -> list[str]:
    return [ln.strip() for lang, body in blocks() if lang == "bash" for ln in body.splitlines() if ln.strip()]


class FakeEntryPoint:
    """What registry._discover needs of an importlib.metadata.EntryPoint (name, value, dist.name, load)."""

    def __init__(self, name: str, module: str, package: str):
        self.name, self.value = name, module
        self.dist = type("Dist", (), {"name": package})()

    def load(self):
        return importlib.import_module(self.value)


@pytest.fixture
def fresh_registry(monkeypatch):
    """Rediscover with the entry points a test sets; restore the registry afterwards."""
    registry.names()  # the built-ins are imported (and stay registered)
    saved = dict(registry._REGISTRY), registry._discovered, list(registry._PROBLEMS)
    mods = set(sys.modules)
    eps: list = []
    monkeypatch.setattr(registry, "entry_points", lambda group: list(eps) if group == "shufflesim.protocols" else [])
    registry._discovered = False
    registry._PROBLEMS.clear()
    yield eps
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved[0])
    registry._discovered = saved[1]
    registry._PROBLEMS[:] = saved[2]
    for m in set(sys.modules) - mods:
        if m.startswith(("subset_selection", "i22_")):
            del sys.modules[m]


BROKEN = {
    "i22_import_error": "import scipyy  # a typo: the plug-in cannot be imported\n",
    "i22_taken_name": ("from shufflesim.pipeline.registry import register\nfrom shufflesim.protocols.krr import KRRProtocol\n\n"
                       "@register\nclass Mine(KRRProtocol):\n    name = 'krr'\n"),
    "i22_bad_metadata": ("from shufflesim.pipeline.registry import register\nfrom shufflesim.protocols.krr import KRRProtocol\n\n"
                         "@register\nclass Mine(KRRProtocol):\n    name = 'my protocol!'\n"),
    "i22_raises": "raise RuntimeError('plug-in start-up failed\\nsecond line')\n",
}


def _install_fakes(tmp_path: Path, monkeypatch, eps: list, broken: bool = True) -> None:
    write_files(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "my-plugin"))
    eps.append(FakeEntryPoint("subset-selection", "subset_selection", "shufflesim-subset-selection"))
    if broken:
        for mod, text in BROKEN.items():
            (tmp_path / f"{mod}.py").write_text(text)
            eps.append(FakeEntryPoint(mod, mod, f"pkg-{mod}"))
        monkeypatch.syspath_prepend(str(tmp_path))


def test_discovery_and_broken_plugins(tmp_path, monkeypatch, capsys, fresh_registry):
    builtins = set(registry.names()) - {"subset-selection"}
    registry._discovered = False
    _install_fakes(tmp_path, monkeypatch, fresh_registry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = registry.names()
    assert "subset-selection" in names and builtins <= set(names)
    assert registry.get("krr").__module__ == "shufflesim.protocols.krr"  # the built-in is not replaced
    assert "my protocol!" not in names
    problems = registry.problems()
    assert len(problems) == len(BROKEN)
    for mod, line in zip(BROKEN, problems):
        assert "\n" not in line and f"pkg-{mod}" in line and mod in line, line
    assert "ModuleNotFoundError" in problems[0] and "taken" in problems[1] and "letters, digits" in problems[2]
    assert [str(w.message) for w in caught if w.category is registry.PluginWarning] == problems

    from shufflesim.cli.main import main

    registry._discovered, registry._PROBLEMS[:] = False, []  # a new process: discovery again, warnings again
    assert main(["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "200", "--trials", "5"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == len(BROKEN) and all(e.startswith("warning: plug-in ") for e in err), err


def test_plugin_errors_are_as_clean_as_builtins(tmp_path, monkeypatch, capsys, fresh_registry):
    _install_fakes(tmp_path, monkeypatch, fresh_registry, broken=False)
    from shufflesim.cli.main import main

    for argv in (["simulate", "subset-selection", "--k", "2", "--d", "1", "--eps0", "1", "--n", "100"],
                 ["simulate", "subset-selection", "--k", "4", "--d", "2", "--n", "100"],
                 ["account", "subset-selection", "--k", "4", "--d", "9", "--eps0", "1", "--n", "5", "--eps", "1"],
                 ["validate", "subset-selection", "--k", "4", "--d", "2", "--eps0", "-1", "--n", "100"],
                 ["audit", "subset-selection", "--k", "4", "--d", "2", "--eps0", "1", "--eps", "1"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), (argv, err)


def test_guide_in_process(tmp_path, monkeypatch, capsys, fresh_registry):
    """Every command and Python block of docs/plugins.md, the plug-in registered by a fake entry point."""
    _install_fakes(tmp_path, monkeypatch, fresh_registry, broken=False)
    monkeypatch.chdir(tmp_path)
    from shufflesim.cli.main import main

    ran = 0
    for line in commands():
        argv = shlex.split(line)
        if argv[:2] == ["pip", "install"]:
            continue  # the fake entry point stands for the installation (the slow test installs it)
        assert argv[0] == "shufflesim", line
        try:
            code = main(argv[1:])
        except SystemExit as exc:  # --help
            code = exc.code
        out = capsys.readouterr()
        assert code == 0, (line, out.err)
        if line.startswith("shufflesim account matrix-rr --matrix abstain.toml --n 5"):
            assert "delta in [n/a" not in out.out and "lower end: explicit" in out.out
        if "--n 10000 --delta" in line:
            assert "eps in [n/a" not in out.out and "through the count of report" in out.out
        if line.startswith(("shufflesim audit", "shufflesim validate")):  # fixed seeds: deterministic verdicts
            assert "verdict  consistent" in out.out or "verdict     consistent" in out.out, out.out
        if line == "shufflesim simulate --help":
            assert "subset-selection" in out.out
        ran += 1
    assert ran >= 10
    assert (tmp_path / "run-subsets" / "report.md").is_file()
    assert (tmp_path / "run-abstain" / "report.md").is_file()  # matrix-rr in a scenario file, as the guide shows
    for lang, body in blocks():
        if lang == "python" and not body.startswith("# file: "):
            exec(compile(body, "docs/plugins.md", "exec"), {})
    out = capsys.readouterr().out
    assert "delta_lower" in out and "mse_expected" in out


# --- the real thing: installed packages in a fresh virtual environment --------------------------------------------
BROKEN_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shufflesim-broken-plugin"
version = "0.1.0"

[project.entry-points."shufflesim.protocols"]
broken = "broken_plugin"

[tool.setuptools]
packages = ["broken_plugin"]
"""


@pytest.mark.slow
def test_guide_in_a_fresh_venv(tmp_path):
    """The guide as a new user runs it: a fresh venv, ``pip install ./my-plugin`` (a real entry point), then every
    command; a second, broken plug-in installed beside it is reported in one line and breaks nothing.

    The venv sees shufflesim's source tree and the test environment's packages through a .pth file; pip installs
    the plug-ins with --no-deps (shufflesim is there already), building them in an isolated environment from the
    package index, or offline with the test environment's setuptools when the index cannot be reached."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "shufflesim-test.pth").write_text(f"{ROOT}\n{sysconfig.get_paths()['purelib']}\n")
    work = tmp_path / "work"
    work.mkdir()
    write_files(work)
    (work / "broken" / "broken_plugin").mkdir(parents=True)
    (work / "broken" / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    (work / "broken" / "broken_plugin" / "__init__.py").write_text("import scipyy\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps"]
    times = []
    for line in [*commands(), "pip install ./broken", "shufflesim simulate krr --k 4 --eps0 1 --n 1000 --trials 10"]:
        argv = shlex.split(line)
        argv = pip + argv[2:] if argv[:2] == ["pip", "install"] else [str(py), "-m", "shufflesim", *argv[1:]]
        t0 = time.perf_counter()
        res = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        if res.returncode and argv[:3] == pip[:3]:  # offline: build with the test environment's setuptools instead
            first = res.stderr
            res = subprocess.run(argv + ["--no-build-isolation", "--no-index"], cwd=work, env=env, capture_output=True,
                                 text=True, timeout=600)
            assert res.returncode == 0, (line, first, res.stderr)
        times.append((line, time.perf_counter() - t0))
        assert res.returncode == 0, (line, res.stderr)
        if "broken" in line or line.startswith("pip"):
            continue
        if times and any(t[0] == "pip install ./broken" for t in times):
            err = res.stderr.strip().splitlines()
            assert len(err) == 1 and "shufflesim-broken-plugin" in err[0] and err[0].startswith("warning: plug-in")
        else:
            assert "warning" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    for line, sec in times:
        print(f"{sec:7.2f} s  {line}")
