"""No private name is reached across modules (issue 28, item 5): a name with a leading underscore is its module's
own business; another module that needs it gets it made public where it lives.

An AST scan of ``shufflesim/`` and ``protocols/`` (``shufflesim.protocols``) flags

* ``from X import _y`` (absolute or relative) where X is another shufflesim module, and
* ``m._y`` where ``m`` is a name bound by an import to another shufflesim module (``import shufflesim.a as m``,
  ``from shufflesim import a as m``, ``from . import a``).

Allowed: a module's own names, dunder names (``__version__``, ``__future__``), and a private *sub-module* imported
by a module of the same package (``from shufflesim.cli import _dishonest`` inside ``shufflesim.cli``: a package's
private module is shared by its own modules, as ``protocols/_blanket.py`` is by the blanket protocols).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
TREES = ("shufflesim", "protocols")


def _module_name(path: Path) -> tuple[str, bool]:
    """(dotted name, is a package's __init__) of a file under ROOT; ``protocols/`` is ``shufflesim.protocols``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "protocols":
        parts = ["shufflesim", *parts]
    package = parts[-1] == "__init__"
    if package:
        parts = parts[:-1]
    return ".".join(parts), package


def _file_of(module: str) -> Path | None:
    parts = module.split(".")
    if parts[:2] == ["shufflesim", "protocols"]:
        parts = ["protocols", *parts[2:]]
    base = ROOT.joinpath(*parts)
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _absolute(node: ast.ImportFrom, module: str, package: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = module.split(".") if package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _violations_in(path: Path) -> list[str]:
    module, package = _module_name(path)
    own_package = module if package else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(ROOT)
    out: list[str] = []
    modules: dict[str, str] = {}  # local name -> the shufflesim module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "shufflesim":
                    if a.asname:
                        modules[a.asname] = a.name
                    if _private(a.name.rpartition(".")[2]) and a.name.rpartition(".")[0] != own_package:
                        out.append(f"{where}:{node.lineno}: import {a.name}")
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(node, module, package)
            if src is None or src.split(".")[0] != "shufflesim" or src == module:
                continue
            for a in node.names:
                sub = f"{src}.{a.name}"
                is_module = _file_of(sub) is not None
                if is_module:
                    modules[a.asname or a.name] = sub
                if not _private(a.name):
                    continue
                if is_module and src == own_package:
                    continue  # a private sub-module of the importer's own package
                out.append(f"{where}:{node.lineno}: from {src} import {a.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in modules and modules[node.value.id] != module):
            target = f"{modules[node.value.id]}.{node.attr}"
            if _file_of(target) is not None and modules[node.value.id] == own_package:
                continue
            out.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr} ({modules[node.value.id]})")
    return out


@functools.lru_cache(maxsize=1)
def _scan() -> tuple[str, ...]:
    return tuple(violations())


def violations() -> list[str]:
    out: list[str] = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            out += _violations_in(path)
    return out


def test_no_private_name_imported_across_modules():
    found = _scan()
    assert not found, "private names reached across modules:\n" + "\n".join(found)


def test_the_scan_finds_what_it_should(tmp_path, monkeypatch):
    """The scanner flags the three forms and passes the allowed ones (a scan that finds nothing proves nothing)."""
    pkg = tmp_path / "shufflesim" / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "shufflesim" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "_private_mod.py").write_text("")
    (pkg / "a.py").write_text("_x = 1\n")
    (pkg / "b.py").write_text(
        "from __future__ import annotations\n"
        "from shufflesim.pkg.a import _x\n"          # flagged
        "from .a import _x as y\n"                   # flagged (relative)
        "from shufflesim.pkg import a\n"
        "import shufflesim.pkg.a as am\n"
        "v = a._x + am._x\n"                         # two flagged
        "from shufflesim.pkg import _private_mod\n"  # allowed: own package's private module
        "from shufflesim.pkg.a import __doc__\n"     # allowed: dunder
        "_own = 1\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    found = _violations_in(pkg / "b.py")
    assert len(found) == 4, found
    assert _violations_in(pkg / "a.py") == []
