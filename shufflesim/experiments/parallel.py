"""Choosing how worker processes start, so that ``workers > 1`` works from any kind of caller.

The ``spawn`` start method starts a fresh interpreter per worker and re-imports the caller's main module
in it.  That is safe for a script whose work runs under ``if __name__ == "__main__":``, for a package
run with ``python -m`` (a ``__main__`` module is not re-imported) and for notebooks and ``python -c``
(no main file), but it breaks for

* a script whose call is not under such a guard: each worker would run the script again (RuntimeError,
  leaked semaphores);
* code read from stdin (``python -``): the main "file" ``<stdin>`` cannot be re-imported;
* a protocol class defined in ``__main__`` when the main module is not re-imported: workers cannot
  unpickle it.

In those cases shufflesim uses the ``fork`` start method on Linux (workers inherit the parent's memory;
nothing is re-imported) and otherwise runs the trials in the calling process, with a one-line
:class:`SerialFallbackWarning` saying why.  Which method runs never changes a result: every trial draws
from its own seed stream.
"""

from __future__ import annotations

import ast
import multiprocessing as mp
import os
import sys
import warnings
from types import FrameType
from typing import Any


class SerialFallbackWarning(UserWarning):
    """``workers > 1`` was asked for but the trials ran in the calling process."""


def _is_main_guard(test: ast.expr) -> bool:
    """True for ``__name__ == "__main__"`` (either order)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def _line_is_guarded(source: str, lineno: int) -> bool:
    """Whether line ``lineno`` of a module lies inside a top-level ``if __name__ == "__main__":`` body."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            first = node.body[0].lineno
            last = node.body[-1].end_lineno or first
            if first <= lineno <= last:
                return True
    return False


def _main_module_frame(main_dict: dict) -> FrameType | None:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is main_dict and frame.f_code.co_name == "<module>":
            return frame
        frame = frame.f_back
    return None


def spawn_hazard(objects: tuple[Any, ...] = ()) -> str | None:
    """Why ``spawn`` workers would fail for the current caller, or ``None`` if they are safe.

    ``objects`` are sent to the workers; a class of theirs defined in ``__main__`` needs the main module.
    """
    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    main_file = getattr(main, "__file__", None)
    if spec_name is not None:
        reimported = not (spec_name == "__main__" or spec_name.endswith(".__main__"))
    else:
        reimported = main_file is not None and os.path.splitext(os.path.basename(main_file))[0] != "ipython"
    if not reimported:
        for obj in objects:
            if any(c.__module__ == "__main__" for c in type(obj).__mro__):
                return f"{type(obj).__name__} is defined in __main__, which worker processes cannot import"
        return None
    if main_file is None or not os.path.isfile(main_file):
        return f"the main program ({main_file or spec_name}) cannot be re-imported by worker processes"
    frame = _main_module_frame(main.__dict__)
    if frame is None:
        return f"worker processes would re-run {os.path.basename(main_file)} (called after it finished)"
    try:
        with open(main_file, encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, UnicodeDecodeError):
        return f"the main program {os.path.basename(main_file)} cannot be read"
    if not _line_is_guarded(source, frame.f_lineno):
        return (f"{os.path.basename(main_file)} calls it without an `if __name__ == \"__main__\":` guard, "
                "so worker processes would re-run the script")
    return None


def worker_context(objects: tuple[Any, ...] = ()) -> tuple[Any | None, str | None]:
    """``(context, None)`` for a multiprocessing context that works here, else ``(None, reason)``."""
    hazard = spawn_hazard(objects)
    if hazard is None:
        return mp.get_context("spawn"), None
    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork"), None
    return None, hazard


def warn_serial(reason: str, workers: int) -> None:
    warnings.warn(f"shufflesim: running the trials in this process instead of {workers} workers: {reason}",
                  SerialFallbackWarning, stacklevel=3)
