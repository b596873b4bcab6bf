"""Packaging: ``protocols/`` is installed as ``shufflesim.protocols`` (no generic top-level name)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import shufflesim
from shufflesim.pipeline import registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "shufflesim").rglob("__init__.py")}
    on_disk.add("shufflesim.protocols")
    assert on_disk <= listed, f"add to pyproject [tool.setuptools].packages: {sorted(on_disk - listed)}"
    assert cfg["package-dir"]["shufflesim.protocols"] == "protocols"


def test_protocols_subpackage_and_registry(tmp_path):
    import shufflesim.protocols as sp

    assert sp.__name__ == "shufflesim.protocols"
    assert "krr" in registry.names()
    # no generic top-level name is claimed: outside the source tree, `protocols` is not importable
    code = "import importlib.util, shufflesim.protocols; print(importlib.util.find_spec('protocols') is None)"
    # without PYTHONPATH: a developer's PYTHONPATH=<checkout> would put the checkout's top-level folders on the path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True, env=env)
    assert r.stdout.strip() == "True"


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only meaningful in CI, which installs non-editably")
def test_ci_tests_the_installed_copy():
    # the README's test command installs the package with `pip install .` (not editable): the tests must
    # import that copy, not the source tree
    here = Path(shufflesim.__file__).resolve().parent
    assert here != ROOT / "shufflesim" and "site-packages" in here.parts


@pytest.mark.slow
def test_wheel_contents(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True)
    (wheel,) = tmp_path.glob("shufflesim-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "shufflesim/protocols/krr.py" in names
    assert "shufflesim/datasets/adult_age.csv" in names
    assert not any(n.startswith("protocols/") for n in names)
