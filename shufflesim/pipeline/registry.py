"""Protocol registry: protocols are found by name.

Built-in protocols live in the ``shufflesim.protocols`` package (the repository's ``protocols/``
folder), one module per protocol; every module there is imported on first use and registers its classes
with :func:`register`.  Third-party packages add protocols through the entry-point group
``shufflesim.protocols`` (the entry point names a module to import, or a Protocol class); a plug-in that
fails to load is skipped with one line naming its package (:func:`problems`, :class:`PluginWarning`) and
never breaks the built-ins.  docs/plugins.md is the guide.

Plug-ins are guests (issue 29; docs/plugins.md, "When a plug-in is broken"):

- loading: anything a plug-in's import raises, ``SystemExit`` and a ``KeyboardInterrupt`` raised by its code
  included, skips it with one line; only a Ctrl-C that really arrives while it loads interrupts
  (:func:`watch_sigint` tells the two apart);
- options: a name a command uses for its own flags (:data:`RESERVED_OPTION_NAMES`), a name that is not a
  Python identifier, or the same name twice is refused by :func:`register`, so such a plug-in is skipped and
  every command keeps working;
- running: every function and method defined in a loaded plug-in's modules is wrapped by :func:`guard`, which
  turns any exception but a :class:`~shufflesim.errors.ShufflesimError` into one
  :class:`~shufflesim.errors.PluginError` naming the plug-in; :func:`plugin_failure` names the plug-in of an
  exception raised by plug-in code the framework reached otherwise (a closure handed over as a callback).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import signal
import sys
import threading
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Any

from shufflesim.core.checks import did_you_mean
from shufflesim.errors import ParameterError, PluginError, ShufflesimError
from shufflesim.pipeline.protocol import Protocol

_REGISTRY: dict[str, type[Protocol]] = {}
_discovered = False


class PluginWarning(UserWarning):
    """A plug-in of the entry-point group ``shufflesim.protocols`` failed to load and was skipped (one line
    naming its package; the CLI prints it as ``warning: ...``)."""


#: one line per plug-in that failed to load (also issued as a :class:`PluginWarning`)
_PROBLEMS: list[str] = []

#: names a protocol option may not take: the flags and argparse destinations that ``simulate``, ``validate``,
#: ``audit``, ``account`` and ``sweep`` (with its coalition axes) set beside a protocol's own options, and the
#: keys of a scenario sweep.  ``eps`` and ``delta`` are not here: where a command has such a flag it feeds the
#: protocol option of that name (cli/audit.py SHARED).  tests/test_plugins.py checks this list against the
#: parsers, so a new flag of those commands must be added here.  Checked for plug-ins when they load
#: (:func:`check_plugin_options`); a built-in may share a name where the command never meets it
#: (``bennett_variant``: a built-in that ``account`` does not build by name).
RESERVED_OPTION_NAMES = frozenset({
    "help", "h", "version", "command", "protocol", "func", "protocol_class", "mechanism_class",
    "n", "data", "lower", "upper", "trials", "seed", "workers", "engine", "level", "tolerate", "chunk", "json",
    "alpha", "margin", "max_trials", "max_seconds", "plant_error", "all", "all_seed", "all_json", "output", "out",
    "overwrite", "pair", "protocol_eps", "protocol_delta", "method", "leak", "compositions", "compare",
    "composition", "bennett_variant", "target_accuracy", "honest", "target_eps", "noise_users", "set", "sets",
    "chunk_size", "backend", "scheduler", "resume", "yes", "dishonest", "strategy", "direction", "target",
    "sample_rate", "sample_size", "sample_relation",
})


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
    seen: set[str] = set()
    for o in cls.options:
        if not (isinstance(o.name, str) and o.name.isidentifier()):
            raise TypeError(f"{cls.__name__}.options: option name {o.name!r} is not a Python identifier")
        if o.name in seen:
            raise TypeError(f"{cls.__name__}.options: option {o.name!r} is declared twice")
        seen.add(o.name)
    if getattr(cls.create, "__isabstractmethod__", False):
        raise TypeError(f"{cls.__name__} does not implement the classmethod create(n, **options)")
    import inspect

    if not isinstance(inspect.getattr_static(cls, "create"), classmethod):
        # Protocol.__init_subclass__ wraps a classmethod create so that it also builds the accountant's description
        raise TypeError(f"{cls.__name__}.create must be a classmethod create(cls, n, **options)")


def check_plugin_options(cls: type[Protocol]) -> None:
    """TypeError if a plug-in protocol's option takes a name of :data:`RESERVED_OPTION_NAMES`."""
    for o in cls.options:
        if o.name in RESERVED_OPTION_NAMES:
            raise TypeError(f"{cls.__name__}.options: option {o.name!r} clashes with the commands' own flag "
                            f"{o.flag}; rename it (taken: {', '.join(sorted(RESERVED_OPTION_NAMES))})")


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


@contextmanager
def watch_sigint():
    """Yield a dict whose ``"arrived"`` becomes True when a real SIGINT (Ctrl-C) arrives inside the block; the
    interrupt itself is delivered as before (the previous handler runs).  A ``KeyboardInterrupt`` raised with
    ``"arrived"`` still False was raised by code, not by the user.  Outside the main thread no handler can be
    set and no SIGINT is delivered there, so ``"arrived"`` stays False."""
    state = {"arrived": False}
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        if previous == signal.SIG_IGN:
            return  # ignored here (e.g. a worker process): not an interrupt
        state["arrived"] = True
        if callable(previous):
            previous(signum, frame)  # signal.default_int_handler raises KeyboardInterrupt
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


#: exceptions :func:`guard` lets through unchanged: user errors, a Ctrl-C, memory exhaustion (the CLI names
#: it), and the ones Python's protocols use for control flow
_PASS_THROUGH = (ShufflesimError, KeyboardInterrupt, GeneratorExit, MemoryError, StopIteration, StopAsyncIteration)

#: plug-in module name -> "plug-in 'NAME' of package 'PKG'", for every module a loaded plug-in brought in
_PLUGIN_MODULES: dict[str, str] = {}


def guard(fn, label: str, *, attribute_errors: bool = False):
    """``fn`` wrapped so that any exception it raises other than :data:`_PASS_THROUGH` becomes one
    :class:`PluginError` naming ``label`` (the plug-in and its package), the function and the exception.
    ``attribute_errors``: let ``AttributeError`` through too (a property: ``getattr(obj, name, default)``)."""
    if getattr(fn, "__shufflesim_guard__", None) is not None:
        return fn
    passing = _PASS_THROUGH + ((AttributeError,) if attribute_errors else ())

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except passing:
            raise
        except BaseException as exc:  # SystemExit included: a plug-in does not end the program
            raise PluginError(f"{label} failed in {getattr(fn, '__qualname__', fn)!s}: {describe(exc)} "
                              "(an error in the plug-in's code; report it to its authors)") from exc

    guarded.__shufflesim_guard__ = label
    return guarded


def describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (the type alone for an empty message)."""
    text = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {text[0]}" if text else "")


def _guard_class(cls: type, label: str) -> None:
    """Wrap every method, class method, static method and property defined in ``cls`` itself (dunders other
    than ``__init__`` and ``__call__`` are left alone: Python calls them for its own protocols)."""
    for attr, value in list(vars(cls).items()):
        if attr.startswith("__") and attr.endswith("__") and attr not in ("__init__", "__call__"):
            continue
        if isinstance(value, (classmethod, staticmethod)):
            setattr(cls, attr, type(value)(guard(value.__func__, label)))
        elif isinstance(value, property):
            setattr(cls, attr, property(*(f and guard(f, label, attribute_errors=True)
                                          for f in (value.fget, value.fset, value.fdel)), value.__doc__))
        elif callable(value) and not isinstance(value, type):
            setattr(cls, attr, guard(value, label))


def _guard_plugin(ep, label: str, new: list[type]) -> None:
    """Guard the plug-in's code: every class and function defined in the module its entry point names, that
    module's submodules, and the modules of the protocols it registered (never shufflesim's own modules, nor
    the libraries the plug-in imports)."""
    top = str(ep.value).split(":")[0].strip()
    mods = {m for m in list(sys.modules) if m == top or m.startswith(top + ".")}
    mods |= {cls.__module__ for cls in new}
    for name in mods:
        module = sys.modules.get(name)
        if module is None or name == "shufflesim" or name.startswith("shufflesim."):
            continue
        _PLUGIN_MODULES[name] = label
        for attr, value in list(vars(module).items()):
            if getattr(value, "__module__", None) != name:
                continue  # imported from elsewhere
            if isinstance(value, type):
                _guard_class(value, label)
            elif callable(value) and hasattr(value, "__code__"):
                setattr(module, attr, guard(value, label))


def plugin_failure(exc: BaseException) -> str | None:
    """The one line naming the plug-in whose code raised ``exc`` (a frame of its traceback lies in a loaded
    plug-in's module), or None: for plug-in code the framework calls outside :func:`guard` (a closure handed
    over as a callback)."""
    if not _PLUGIN_MODULES or isinstance(exc, _PASS_THROUGH):
        return None
    tb = exc.__traceback__
    label = None
    while tb is not None:
        label = _PLUGIN_MODULES.get(tb.tb_frame.f_globals.get("__name__", "")) or label
        tb = tb.tb_next
    if label is None:
        return None
    return f"{label} failed: {describe(exc)} (an error in the plug-in's code; report it to its authors)"


def _load_plugin(ep) -> None:
    """Import one plug-in (its module registers its protocols; an entry point naming a Protocol class registers
    it) and guard its code (:func:`_guard_plugin`).  Any failure — an import error, bad metadata or options, a
    name taken, ``SystemExit`` or a ``KeyboardInterrupt`` raised by its code — skips the plug-in with one line
    naming its package; the built-ins and the other plug-ins are unaffected.  A Ctrl-C that really arrives while
    it loads (:func:`watch_sigint`) interrupts as everywhere else."""
    import warnings

    dist = getattr(getattr(ep, "dist", None), "name", None) or "unknown package"
    label = f"plug-in {ep.name!r} of package {dist!r}"
    before = dict(_REGISTRY)
    with watch_sigint() as sigint:
        try:
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Protocol):
                register(obj)
            new = [c for k, c in _REGISTRY.items() if before.get(k) is not c]
            for cls in new:
                check_plugin_options(cls)
            _guard_plugin(ep, label, new)
            return
        except BaseException as exc:  # a plug-in must never break the built-ins
            if isinstance(exc, KeyboardInterrupt) and sigint["arrived"]:
                raise  # the user's Ctrl-C
            problem = exc
        finally:
            if sigint["arrived"]:
                raise KeyboardInterrupt  # the user's Ctrl-C, even if the plug-in caught it
    _REGISTRY.clear()
    _REGISTRY.update(before)  # nothing half-registered stays
    msg = f"{label} ({ep.value}) was not loaded: {describe(problem)}"
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
