"""Confidence intervals for Monte-Carlo summaries."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def mean_ci(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and two-sided Student-t confidence interval for the mean of i.i.d. samples ``x``.

    The t interval relies on the central limit theorem for the sample mean; for the squared errors
    studied here (sums of many independent terms, finite fourth moments) it is accurate at a few hundred
    trials.  Returns (mean, lo, hi); with fewer than two samples the interval is (nan, nan).
    """
    x = np.asarray(x, dtype=float)
    m = float(x.mean()) if x.size else math.nan
    if x.size < 2:
        return m, math.nan, math.nan
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    h = float(stats.t.ppf(0.5 + level / 2.0, df=x.size - 1)) * se
    return m, m - h, m + h


def bonferroni_level(level: float, tests: int) -> float:
    """Per-test confidence level so that ``tests`` intervals hold jointly with probability ≥ ``level``."""
    return 1.0 - (1.0 - level) / tests


#: ``ci_method`` of an interval that cannot be computed (fewer than two trials)
NOT_COMPUTABLE = "not computable with fewer than 2 trials"


def support_ci(x: np.ndarray, level: float = 0.95, *, low: float | None = None,
               high: float | None = None) -> tuple[float, float | None, float | None, str]:
    """Mean and a ``level`` confidence interval for the mean that stays within the support [low, high].

    Student-t on the trial mean (:func:`mean_ci`) where both ends lie in the support — the usual case, so
    recorded outputs keep their intervals.  Where an end leaves the support (few trials of a skewed,
    non-negative quantity such as a squared error, or a TV distance near 0 or 1) it is clipped to the
    support: the mean lies in the support, so clipping never loses coverage, and the returned method says
    ``"student-t on the trial mean, clipped to the support [low, high]"``.  With fewer than two samples the
    interval is ``(None, None)`` and the method is :data:`NOT_COMPUTABLE`.  Returns (mean, lo, hi, method).
    """
    m, lo, hi = mean_ci(x, level)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return m, None, None, NOT_COMPUTABLE
    method = "student-t on the trial mean"
    if (low is None or lo >= low) and (high is None or hi <= high):
        return m, lo, hi, method
    if low is not None:
        lo, hi = max(lo, low), max(hi, low)
    if high is not None:
        lo, hi = min(lo, high), min(hi, high)
    lo_s = "-inf" if low is None else f"{low:g}"
    hi_s = "inf" if high is None else f"{high:g}"
    return m, lo, hi, f"{method}, clipped to the support [{lo_s}, {hi_s}]"
