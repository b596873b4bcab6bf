"""Validation of the questions put to an accountant: eps values for delta(eps), delta values for eps(delta)."""

from __future__ import annotations

import numpy as np

from shufflesim.errors import ParameterError


def check_eps(eps) -> np.ndarray:
    """``eps`` (a number or a non-empty list of finite numbers >= 0) as a 1-D float array."""
    arr = np.atleast_1d(np.asarray(eps, dtype=float))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError("eps must be a number or a non-empty list of numbers")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ParameterError(f"eps must be finite and >= 0; got {arr.tolist()!r}")
    return arr


def check_delta(delta) -> np.ndarray:
    """``delta`` (a number or a non-empty list of numbers in [0, 1)) as a 1-D float array."""
    arr = np.atleast_1d(np.asarray(delta, dtype=float))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError("delta must be a number or a non-empty list of numbers")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr >= 1):
        raise ParameterError(f"delta must be in [0, 1); got {arr.tolist()!r}")
    return arr
