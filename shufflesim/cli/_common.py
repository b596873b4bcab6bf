"""Argument-parsing helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, NoReturn

import numpy as np

from shufflesim.core.serialise import jsonable
from shufflesim.errors import ParameterError


class UsageError(ParameterError):
    """Bad command-line usage (reported as one ``error:`` line, exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2 (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def int_arg(text: str) -> int:
    """An integer, also written as 1e6 or 1_000_000."""
    try:
        return int(text.replace("_", ""))
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if not math.isfinite(v) or v != int(v):
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}")
    return int(v)


def float_arg(text: str) -> float:
    """A real number (finiteness is checked by the library, which names the parameter)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None


def print_json(obj: Any) -> None:
    json.dump(jsonable(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
