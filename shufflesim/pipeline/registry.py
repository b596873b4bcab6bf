"""Protocol registry: protocols are found by name.

Built-in protocols live in the ``shufflesim.protocols`` package (the repository's ``protocols/``
folder), one module per protocol; every module there is imported on first use and registers its classes
with :func:`register`.  Third-party packages add protocols through the entry-point group
``shufflesim.protocols`` (the entry point names a module to import).
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from typing import Any

from shufflesim.errors import ParameterError
from shufflesim.pipeline.protocol import Protocol

_REGISTRY: dict[str, type[Protocol]] = {}
_discovered = False


def register(cls: type[Protocol]) -> type[Protocol]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    other = _REGISTRY.get(cls.name)
    if other is not None and other is not cls and other.__qualname__ != cls.__qualname__:
        raise TypeError(f"protocol name {cls.name!r} is taken by {other.__module__}.{other.__qualname__}")
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    package = importlib.import_module("shufflesim.protocols")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"shufflesim.protocols.{info.name}")
    for ep in entry_points(group="shufflesim.protocols"):
        ep.load()


def names() -> list[str]:
    """Names of every registered protocol, sorted."""
    _discover()
    return sorted(_REGISTRY)


def get(name: str) -> type[Protocol]:
    """The protocol class registered as ``name``."""
    _discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError(f"unknown protocol {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None


def create(name: str, n: int, **params: Any) -> Protocol:
    """Build protocol ``name`` for ``n`` users with ``params`` (validated by the protocol); an unknown
    parameter is a :class:`ParameterError` naming it and the protocol's parameters."""
    cls = get(name)
    check_params(name, params)
    return cls.create(n, **params)


def check_params(name: str, params: Any) -> None:
    """Raise :class:`ParameterError` naming the first key of ``params`` that protocol ``name`` has no option for."""
    allowed = [o.name for o in get(name).options]
    for key in params:
        if key not in allowed:
            raise ParameterError(f"{name} has no parameter {key!r}; it has: {', '.join(allowed)}")
