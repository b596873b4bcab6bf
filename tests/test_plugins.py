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
            assert "eps in [n/a" not in out.out and "lower end: explicit data sets" in out.out
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


# --- issue 29: plug-ins are guests ----------------------------------------------------------------------------------
MATRIX_PLUGIN = """from shufflesim.pipeline.options import Option
from shufflesim.pipeline.registry import register
from shufflesim.protocols.matrix_rr import MatrixProtocol


@register
class Guest(MatrixProtocol):
    name = {name!r}
    summary = "a test plug-in"
    options = ({options},)

    @classmethod
    def build_matrix(cls, **options):
{body}
"""
GOOD_BODY = "        return [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], None"


def _plugin(tmp_path: Path, monkeypatch, eps: list, mod: str, text: str) -> None:
    (tmp_path / f"{mod}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps.append(FakeEntryPoint(mod.replace("_", "-"), mod, f"pkg-{mod}"))


@pytest.mark.parametrize("clash", ["n", "data", "trials", "seed", "json", "engine", "help", "protocol", "func",
                                   "max_seconds", "target"])
def test_option_clash_disables_only_that_plugin(clash, tmp_path, monkeypatch, capsys, fresh_registry):
    """An option named like a command's own flag is refused when the plug-in loads (one warning naming it);
    every command, the other plug-ins included, keeps working.  On main: argparse's conflict, a traceback in
    every ``simulate``."""
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_clash",
            MATRIX_PLUGIN.format(name="i22-clash", options=f"Option({clash!r}, int, 'x')", body=GOOD_BODY))
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_fine",
            MATRIX_PLUGIN.format(name="i22-fine", options="Option('size', int, 'x')", body=GOOD_BODY))
    from shufflesim.cli.main import main

    runs = [["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "200", "--trials", "5"],
            ["simulate", "i22-fine", "--n", "200", "--trials", "5", "--engine", "fast"],
            ["audit", "krr", "--k", "3", "--eps0", "1", "--n", "5", "--eps", "0.5", "--trials", "2000"],
            ["account", "i22-fine", "--n", "5", "--eps", "1"]]
    warnings.simplefilter("always", registry.PluginWarning)  # each run stands for a new process
    for argv in runs if clash == "n" else runs[:1]:
        registry._discovered, registry._PROBLEMS[:] = False, []
        sys.modules.pop("i22_clash", None)
        assert main(argv) in (0, 1), (argv, capsys.readouterr().err)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("warning: plug-in 'i22-clash' of package 'pkg-i22_clash'"), err
        assert repr(clash) in err[0] and "clashes" in err[0]
    assert "i22-clash" not in registry.names() and "i22-fine" in registry.names()


def test_reserved_names_cover_every_command_flag():
    """The flags and destinations every command adds beside a protocol's options are in
    registry.RESERVED_OPTION_NAMES (or fed by the protocol option of the same name: eps, delta), so that a
    plug-in's option can never collide with one; no built-in protocol uses a reserved name."""
    import argparse

    from shufflesim.cli.main import build_parser

    def own(parser: argparse.ArgumentParser, protocol_opts: set[str]) -> set[str]:
        out = set()
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction) or a.dest in protocol_opts:
                continue
            out |= {a.dest} | {s.lstrip("-").replace("-", "_") for s in a.option_strings}
        return out

    seen: set[str] = set()
    top = build_parser("*")
    for cmd_action in [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]:
        for cmd, cp in cmd_action.choices.items():
            if cmd not in ("simulate", "validate", "audit", "account", "sweep"):
                continue
            seen |= own(cp, set())
            for a in cp._actions:
                if isinstance(a, argparse._SubParsersAction):
                    for name, pp in a.choices.items():
                        opts = {o.name for o in registry.get(name).options} if name in registry.names() else set()
                        if name in registry.names():
                            seen |= own(pp, opts)
                            seen |= {"protocol", "func", "command"}
    from shufflesim.cli.sweep import ATTACK_OPTIONS

    seen |= set(ATTACK_OPTIONS)
    missing = seen - registry.RESERVED_OPTION_NAMES - {"eps", "delta"}
    assert not missing, f"add to registry.RESERVED_OPTION_NAMES: {sorted(missing)}"
    for name in registry.names():  # bennett_variant: built-ins that account does not build by name
        cls = registry.get(name)
        shared = {"bennett_variant"} if not getattr(cls, "account_by_name", False) else set()
        assert not {o.name for o in cls.options} & registry.RESERVED_OPTION_NAMES - shared, name


BOOM = "        return 1 / 0  # a bug in the plug-in"


@pytest.mark.parametrize("body", [BOOM, "        raise SystemExit(3)", "        raise KeyError('matrix')"])
def test_plugin_exception_is_one_line_naming_it(body, tmp_path, monkeypatch, capsys, fresh_registry):
    """Any exception of a plug-in's code that is not a ShufflesimError (SystemExit included) is one error line
    naming the plug-in, exit 2, in simulate, account, audit and validate.  On main: a traceback."""
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_boom",
            MATRIX_PLUGIN.format(name="i22-boom", options="Option('size', int, 'x')", body=body))
    from shufflesim.cli.main import main

    for argv in (["simulate", "i22-boom", "--n", "100", "--trials", "5"],
                 ["simulate", "i22-boom", "--n", "100", "--trials", "5", "--engine", "fast", "--json"],
                 ["account", "i22-boom", "--n", "5", "--eps", "1"],
                 ["audit", "i22-boom", "--n", "5", "--eps", "1", "--trials", "1000"],
                 ["validate", "i22-boom", "--n", "100"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: plug-in 'i22-boom' of package 'pkg-i22_boom' failed"), \
            (argv, err)
        assert "build_matrix" in err[0]
    from shufflesim.errors import PluginError

    with pytest.raises(PluginError, match="i22-boom"):  # the library raises the same error
        registry.create("i22-boom", 100)


def test_plugin_shufflesim_error_passes_through(tmp_path, monkeypatch, capsys, fresh_registry):
    body = "        from shufflesim.errors import ParameterError\n        raise ParameterError('size must be >= 2')"
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_refuse",
            MATRIX_PLUGIN.format(name="i22-refuse", options="Option('size', int, 'x')", body=body))
    from shufflesim.cli.main import main
    from shufflesim.errors import ParameterError

    assert main(["simulate", "i22-refuse", "--n", "100", "--trials", "5"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["error: size must be >= 2"]
    with pytest.raises(ParameterError) as info:
        registry.create("i22-refuse", 100)
    assert type(info.value) is ParameterError


SAMPLER_PLUGIN = """import numpy as np
from shufflesim.pipeline.matrix import SamplerRandomiser
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.registry import register
from shufflesim.protocols.matrix_rr import SamplerProtocol


@register
class Sampled(SamplerProtocol):
    name = "i22-sampled"
    summary = "a sampler whose callback fails"
    options = (Option("size", int, "x"),)

    @classmethod
    def build_sampler(cls, **options):
        def sample(x, rng):
            raise FloatingPointError("callback failed")
        return SamplerRandomiser(sample, 3, 3, 1.0)
"""


def test_plugin_callback_exception_is_one_line(tmp_path, monkeypatch, capsys, fresh_registry):
    """A closure the plug-in hands to the framework (outside the registry's wrappers) fails: still one line."""
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_sampled", SAMPLER_PLUGIN)
    from shufflesim.cli.main import main

    assert main(["simulate", "i22-sampled", "--n", "100", "--trials", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: plug-in 'i22-sampled' of package 'pkg-i22_sampled' failed"), err
    assert "FloatingPointError: callback failed" in err[0]


@pytest.mark.parametrize("raise_", ["raise KeyboardInterrupt", "raise SystemExit(1)", "raise BaseException('x')"])
def test_interrupt_raised_at_import_is_contained(raise_, tmp_path, monkeypatch, capsys, fresh_registry):
    """A plug-in whose import raises KeyboardInterrupt, SystemExit or any BaseException is skipped with one
    warning; the command runs.  On main: every command "interrupted" (or ended by the plug-in)."""
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_interrupts", raise_ + "\n")
    from shufflesim.cli.main import main

    assert main(["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "200", "--trials", "5"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: plug-in 'i22-interrupts' of package 'pkg-i22_interrupts'")


def test_real_ctrl_c_during_plugin_import_still_interrupts(tmp_path, monkeypatch, capsys, fresh_registry):
    """A SIGINT that really arrives while a plug-in loads interrupts the command (registry.watch_sigint), even if
    the plug-in catches the KeyboardInterrupt."""
    _plugin(tmp_path, monkeypatch, fresh_registry, "i22_slow",
            "import os, signal\ntry:\n    os.kill(os.getpid(), signal.SIGINT)\n    import time; time.sleep(5)\n"
            "except KeyboardInterrupt:\n    pass  # swallowed by the plug-in\n")
    from shufflesim.cli.main import main

    assert main(["simulate", "krr", "--k", "4", "--eps0", "1", "--n", "200", "--trials", "5"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["error: interrupted"]


def test_a_create_that_is_not_a_classmethod_is_refused_at_registration():
    """The second read: Protocol.__init_subclass__ wraps a classmethod ``create`` so that it builds the accountant's
    description (its validity checks); a staticmethod ``create`` escaped that wrapping silently."""
    from shufflesim.pipeline.protocol import Protocol

    class Static(Protocol):
        name = "static-create"
        summary = "a protocol whose create is a staticmethod"

        @staticmethod
        def create(n, **params):
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="create must be a classmethod"):
        registry.register(Static)
    assert "static-create" not in registry.names()
