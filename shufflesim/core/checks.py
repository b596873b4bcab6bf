"""Parameter validation helpers: each raises :class:`ParameterError` with one line saying what is allowed."""

from __future__ import annotations

import math
from numbers import Integral, Real

from shufflesim.errors import ParameterError


def _as_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(f"{name} must be a real number; got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    return v


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ParameterError(f"{name} must be an integer; got {value!r}")
    v = int(value)
    shown = v if abs(v) < 10**15 else f"{float(v):.6g}"  # one readable line, not a 300-digit integer
    if minimum is not None and v < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}; got {shown}")
    if maximum is not None and v > maximum:
        raise ParameterError(f"{name} must be an integer <= {maximum}; got {shown}")
    return v


def check_real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real in the interval given by ``low``/``high`` (closed unless ``*_open``)."""
    v = _as_real(name, value)
    bad = False
    if low is not None and (v < low or (low_open and v == low)):
        bad = True
    if high is not None and (v > high or (high_open and v == high)):
        bad = True
    if bad:
        lo = "-inf" if low is None else repr(low)
        hi = "inf" if high is None else repr(high)
        interval = ("(" if low_open or low is None else "[") + f"{lo}, {hi}" + (")" if high_open or high is None else "]")
        raise ParameterError(f"{name} must be in {interval}; got {v!r}")
    return v


def check_positive(name: str, value) -> float:
    """A finite real > 0."""
    return check_real(name, value, low=0.0, low_open=True)


def check_probability(name: str, value, *, allow_zero: bool = True, allow_one: bool = True) -> float:
    """A probability in [0, 1] with optional open ends."""
    return check_real(name, value, low=0.0, high=1.0, low_open=not allow_zero, high_open=not allow_one)


def did_you_mean(word, allowed) -> str:
    """``"; did you mean 'krr'?"`` when ``word`` is close to one of ``allowed`` (difflib's similarity ratio
    ≥ 0.6, the closest first), else ``""``: the one place that suggests a name for a misspelt protocol,
    mechanism, subcommand, flag or key, appended to the error that refuses it."""
    import difflib

    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [str(a) for a in allowed], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
