"""Every fenced code block of README.md runs as written.

```python blocks run as a script file (``python file.py``) and from stdin (``python -``).  ```bash blocks
run with bash (``set -euo pipefail``) in an empty directory, with this interpreter's ``bin`` first on
PATH so that ``shufflesim`` is the package under test.  Exceptions, each with its reason:

* the two set-up lines (``python3 -m venv .venv && … pip install …``, in "The first ten minutes") create a
  fresh environment from the network; they run only with ``--run-slow`` (the test-suite line's final
  ``pytest`` is this very suite and is not run again inside itself);
* the ``shufflesim run …`` at the end of the first of those lines runs in the default suite on its own;
* the line ``source .venv/bin/activate`` that puts ``shufflesim`` on the PATH after the set-up is a no-op in the
  default suite (this interpreter's ``bin`` is already first on PATH); ``--run-slow`` runs it after the set-up
  line and then a bare ``shufflesim --version`` in a clean PATH, and :func:`test_readme_activation_line` checks
  in the default suite that the line is there, before the first bare ``shufflesim``, and that it puts the
  environment's ``bin`` first on PATH.

A block in any other language fails the test, so that no untested block can be added.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SETUP = re.compile(r"^python3 -m venv \.venv && \.venv/bin/pip install .*$", re.M)
ACTIVATE = re.compile(r"^source \.venv/bin/activate$", re.M)


def blocks() -> list[tuple[int, str, str]]:
    text = README.read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _run(cmd: list[str], block: str, cwd: Path, **kw) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=_env(), timeout=1800, **kw)
    assert r.returncode == 0, f"README block failed (exit {r.returncode}):\n{block}\n--- stderr ---\n{r.stderr[-4000:]}"


def _bash_ready(code: str) -> str:
    """The block with the set-up lines replaced by their last command (the `shufflesim …` part)."""
    def keep_shufflesim(m: re.Match) -> str:
        tail = m.group(0).split("&&")[-1].strip()
        return tail.replace(".venv/bin/", "") if "shufflesim" in tail else ": # set-up line, see --run-slow"

    return ACTIVATE.sub(": # activation, see --run-slow", SETUP.sub(keep_shufflesim, code))


CASES = [pytest.param(lang, code, id=f"line{line}-{lang or 'plain'}") for line, lang, code in blocks()]


def test_readme_has_blocks():
    langs = {lang for _, lang, _ in blocks()}
    assert {"bash", "python"} <= langs
    assert langs <= {"bash", "python"}, f"README blocks in an untested language: {langs - {'bash', 'python'}}"


@pytest.mark.parametrize("lang,code", CASES)
def test_readme_block_runs(lang, code, tmp_path):
    if lang == "python":
        script = tmp_path / "readme_example.py"
        script.write_text(code)
        _run([sys.executable, str(script)], code, tmp_path)
        _run([sys.executable, "-"], code, tmp_path, input=code)
    elif lang == "bash":
        _run(["bash", "-c", "set -euo pipefail\n" + _bash_ready(code)], code, tmp_path)
    else:
        pytest.fail(f"README block in language {lang!r} has no runner:\n{code}")


@pytest.mark.slow
@pytest.mark.parametrize("line", [m.group(0) for m in SETUP.finditer(README.read_text())])
def test_readme_setup_lines(line, tmp_path):
    """The set-up lines in a copy of the repository (needs the package index); `pytest` is not re-run."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info",
                                                              "build", "shufflesim-demo"))
    cmd = line.replace("&& .venv/bin/pytest", "&& .venv/bin/python -c 'import pytest, shufflesim'")
    if ACTIVATE.search(README.read_text()[README.read_text().index(line):].split("```")[0]):
        # the README's activation line, then a bare shufflesim with only the system's PATH before it
        cmd += "\nexport PATH=/usr/bin:/bin\nsource .venv/bin/activate\nshufflesim --version"
    r = subprocess.run(["bash", "-c", "set -euo pipefail\n" + cmd], capture_output=True, text=True, cwd=repo,
                       timeout=3600)
    assert r.returncode == 0, f"README set-up line failed:\n{line}\n{r.stderr[-4000:]}"


def _writes_files(code: str) -> bool:
    # the sweep example writes sweep-demo/ into its working directory: it runs in a temporary directory above
    return "run_sweep(" in code


CHECKOUT_CASES = [pytest.param(code, id=f"line{line}") for line, lang, code in blocks()
                  if lang == "python" and not _writes_files(code)]


@pytest.mark.parametrize("code", CHECKOUT_CASES)
def test_readme_python_block_runs_from_checkout_root(code):
    """Issue 18: a README Python block piped to ``python -`` at the repository root (as a notebook opened in
    the checkout, or ``python -m pytest``, sees it) imports the checkout's ``shufflesim/``, which shadows any
    installed copy, and still finds ``shufflesim.protocols`` (the bridge shufflesim/protocols/__init__.py to
    the top-level protocols/ folder).  PYTHONPATH is removed, so only the interpreter's site-packages (the
    dependencies, perhaps an installed copy that the checkout shadows) are on the path."""
    probe = (
        "\nimport shufflesim, shufflesim.protocols as _p, shufflesim.protocols.krr as _k\n"
        "from pathlib import Path as _P\n"
        f"_root = _P({str(ROOT)!r}).resolve()\n"
        "assert _P(shufflesim.__file__).resolve().parent == _root / 'shufflesim', shufflesim.__file__\n"
        "assert _P(_k.__file__).resolve().parent == _root / 'protocols', _k.__file__\n"
    )
    env = _env()
    env.pop("PYTHONPATH", None)
    before = {p.name for p in ROOT.iterdir()}
    r = subprocess.run([sys.executable, "-"], input=code + probe, capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=1800)
    assert r.returncode == 0, f"README block failed at the repository root:\n{code}\n{r.stderr[-4000:]}"
    assert {p.name for p in ROOT.iterdir()} - before - {"__pycache__"} == set(), "the block wrote into the checkout"


def test_readme_activation_line(tmp_path):
    """The README says how to put ``shufflesim`` on the PATH after the set-up line, before it first calls a bare
    ``shufflesim``; the line it gives puts the environment's ``bin`` first on PATH (a venv without pip: no
    network)."""
    text = README.read_text()
    setup = SETUP.search(text)
    activate = ACTIVATE.search(text)
    assert setup is not None and activate is not None, "README: no activation line after the set-up line"
    assert setup.start() < activate.start()
    first_bare = re.search(r"^shufflesim ", text, re.M)
    assert first_bare is not None and activate.start() < first_bare.start()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=tmp_path, check=True, timeout=300)
    r = subprocess.run(["bash", "-c", f"set -euo pipefail\n{activate.group(0)}\ncommand -v python"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and Path(r.stdout.strip()).parent == (tmp_path / ".venv" / "bin"), r.stdout + r.stderr
