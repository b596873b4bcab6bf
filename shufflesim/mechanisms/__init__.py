"""Mechanism descriptions: what a shuffled mechanism is, as a frozen value the accountant consumes.

One module per mechanism family; each class subclasses
:class:`shufflesim.accounting.model.mechanism.Mechanism` and states which methods account it, which
neighbouring pair a pair-based method evaluates, which published bounds apply, and which command-line
flags describe it.  Protocols expose theirs (``protocol.mechanism()``); the CLI builds them from flags;
``account(mechanism, …)`` answers.

To make a new mechanism accountable, add one module here that defines a frozen dataclass subclass with
a ``kind``: :func:`kinds` finds it, ``shufflesim account KIND`` offers it, and ``account`` accounts it.
"""

from __future__ import annotations

import importlib
import pkgutil

from shufflesim.accounting.model.mechanism import Composition, Mechanism, Relation

from .biswas import BiswasCount
from .clones import Clones
from .krr import KRR
from .rr2 import RR2


def kinds() -> dict[str, type[Mechanism]]:
    """Every mechanism description in this package, by ``kind`` (modules are imported on first call)."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    found: dict[str, type[Mechanism]] = {}
    stack = list(Mechanism.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.kind and cls is not Composition and cls.__module__.startswith(__name__ + "."):
            found[cls.kind] = cls
    return dict(sorted(found.items()))


__all__ = ["BiswasCount", "Clones", "Composition", "KRR", "Mechanism", "RR2", "Relation", "kinds"]
