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
