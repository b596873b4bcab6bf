"""Source-checkout bridge to the repository's top-level ``protocols/`` folder (see README, Design).

An installed copy (a wheel, ``pip install .``) never contains this file: setuptools maps the sub-package
``shufflesim.protocols`` to ``protocols/`` (``[tool.setuptools] package-dir`` in pyproject.toml).  When
``shufflesim`` is imported from a checkout instead — ``python`` or ``python -m pytest`` started at the
repository root, a notebook opened there, an editable install — Python finds this folder first; it points
the package's search path at ``protocols/`` and runs that folder's ``__init__``, so ``shufflesim.protocols``
is the same package in all three cases.
"""

from pathlib import Path as _Path

_REAL = _Path(__file__).resolve().parents[2] / "protocols"
__path__ = [str(_REAL)]  # noqa: F811 - submodules (shufflesim.protocols.krr, ...) are found in protocols/
exec(compile((_REAL / "__init__.py").read_text(encoding="utf-8"), str(_REAL / "__init__.py"), "exec"))
