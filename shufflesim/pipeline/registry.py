"""Protocol registry: protocols are found by name.

Built-in protocols live in the ``shufflesim.protocols`` package (the repository's ``protocols/``
folder), one module per protocol; every module there is imported on first use and registers its classes
with :func:`register`.  Third-party packages add protocols through the entry-point group
``shufflesim.protocols`` (the entry point names a module to import, or a Protocol class); a plug-in that
fails to load is skipped with one line naming its package (:func:`problems`, :class:`PluginWarning`) and
never breaks the built-ins.  docs/plugins.md is the guide.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from typing import Any

from shufflesim.core.checks import did_you_mean
from shufflesim.errors import ParameterError
from shufflesim.pipeline.protocol import Protocol

_REGISTRY: dict[str, type[Protocol]] = {}
_discovered = False


class PluginWarning(UserWarning):
    """A plug-in of the entry-point group ``shufflesim.protocols`` failed to load and was skipped (one line
    naming its package; the CLI prints it as ``warning: ...``)."""


#: one line per plug-in that failed to load (also issued as a :class:`PluginWarning`)
_PROBLEMS: list[str] = []


def _check_metadata(cls) -> None:
    """TypeError unless ``cls`` is a Protocol subclass with the metadata the CLI and scenario files need."""
    from shufflesim.pipeline.options import Option

    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise TypeError(f"{cls!r} is not a subclass of shufflesim.pipeline.protocol.Protocol")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise TypeError(f"{cls.__name__}.name must be a non-empty string of letters, digits, '-', '_' or '.'; got {name!r}")
    if not isinstance(cls.summary, str):
        raise TypeError(f"{cls.__name__}.summary must be a string")
    if cls.data_kind not in ("categorical", "real"):
        raise TypeError(f"{cls.__name__}.data_kind must be 'categorical' or 'real'; got {cls.data_kind!r}")
    if not isinstance(cls.options, tuple) or not all(isinstance(o, Option) for o in cls.options):
        raise TypeError(f"{cls.__name__}.options must be a tuple of shufflesim.pipeline.options.Option")
    if getattr(cls.create, "__isabstractmethod__", False):
        raise TypeError(f"{cls.__name__} does not implement the classmethod create(n, **options)")


def register(cls: type[Protocol]) -> type[Protocol]:
    """Class decorator: make ``cls`` available under ``cls.name`` (its metadata is checked: TypeError)."""
    if isinstance(cls, type) and issubclass(cls, Protocol) and not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    _check_metadata(cls)
    other = _REGISTRY.get(cls.name)
    if other is not None and other is not cls and (other.__module__, other.__qualname__) != (cls.__module__, cls.__qualname__):
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
        _load_plugin(ep)


def _load_plugin(ep) -> None:
    """Import one plug-in (its module registers its protocols; an entry point naming a Protocol class registers
    it).  Any failure — an import error, bad metadata, a name taken — skips the plug-in with one line naming its
    package; the built-ins and the other plug-ins are unaffected."""
    import warnings

    dist = getattr(getattr(ep, "dist", None), "name", None) or "unknown package"
    before = dict(_REGISTRY)
    try:
        obj = ep.load()
        if isinstance(obj, type) and issubclass(obj, Protocol):
            register(obj)
    except (Exception, SystemExit) as exc:  # a plug-in must never break the built-ins
        _REGISTRY.clear()
        _REGISTRY.update(before)  # nothing half-registered stays
        text = str(exc).strip().splitlines()
        msg = (f"plug-in {ep.name!r} of package {dist!r} ({ep.value}) was not loaded: {type(exc).__name__}"
               + (f": {text[0]}" if text else ""))
        _PROBLEMS.append(msg)
        warnings.warn(msg, PluginWarning, stacklevel=3)


def problems() -> list[str]:
    """One line per plug-in that failed to load (after discovery)."""
    _discover()
    return list(_PROBLEMS)


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
        raise ParameterError(f"unknown protocol {name!r}{did_you_mean(name, _REGISTRY)}; registered: "
                             f"{', '.join(sorted(_REGISTRY))}") from None


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
            raise ParameterError(f"{name} has no parameter {key!r}{did_you_mean(key, allowed)}; it has: "
                                 f"{', '.join(allowed)}")
