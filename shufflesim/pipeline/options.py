"""Declarative protocol options: one list serves the CLI, scenario files and the Python API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


def float_list(text: str) -> tuple[float, ...]:
    """Parse "a,b,c" into a tuple of finite floats (the bounded parser of :mod:`shufflesim.core.checks`)."""
    from shufflesim.core.checks import parse_list, parse_real

    return parse_list("list", str(text), parse_real)


def int_list(text: str) -> tuple[int, ...]:
    """Parse "a,b,c" into a tuple of ints (the bounded parser of :mod:`shufflesim.core.checks`)."""
    from shufflesim.core.checks import parse_int, parse_list

    return parse_list("list", str(text), parse_int)


@dataclass(frozen=True)
class Option:
    """One protocol parameter.

    ``name`` is the Python keyword (``eps0``); the CLI flag is ``--eps0`` (underscores become hyphens).
    ``type`` converts a CLI string; ``choices`` restricts values; ``default`` None means "resolved by the
    protocol" (for example γ from ε0).
    """

    name: str
    type: Callable[[str], Any]
    help: str
    default: Any = None
    choices: tuple | None = None
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")
