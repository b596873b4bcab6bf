"""Declarative protocol options: one list serves the CLI, scenario files and the Python API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


def float_list(text: str) -> tuple[float, ...]:
    """Parse "a,b,c" into a tuple of floats."""
    return tuple(float(t) for t in str(text).split(",") if t.strip())


def int_list(text: str) -> tuple[int, ...]:
    """Parse "a,b,c" into a tuple of ints."""
    return tuple(int(t) for t in str(text).split(",") if t.strip())


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
