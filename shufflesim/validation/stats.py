"""Statistics behind the verdicts: Clopper–Pearson bounds, the bootstrap-t test, Holm's correction.

Why the bootstrap-t for mean squared errors (docs/validation.md): a squared error is a sum of squares, so
its distribution is right-skewed (for k-RR a scaled sum of k correlated χ²₁-like terms).  The Student-t
test's level error is of order n^{-1/2} and its size depends on the skewness; the bootstrap-t (studentised
bootstrap) p-value approximates the law of the studentised mean itself, with level error of order n^{-1}
(Hall 1992, *The Bootstrap and Edgeworth Expansion*, §3.5).  Its level is checked by simulation on skewed
data in ``tests/test_validation.py``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def cp_lower(successes: int, trials: int, alpha: float) -> float:
    """One-sided (1 − α) Clopper–Pearson lower bound on a binomial proportion."""
    if successes <= 0:
        return 0.0
    return float(stats.beta.ppf(alpha, successes, trials - successes + 1))


def cp_upper(successes: int, trials: int, alpha: float) -> float:
    """One-sided (1 − α) Clopper–Pearson upper bound on a binomial proportion."""
    if successes >= trials:
        return 1.0
    return float(stats.beta.ppf(1.0 - alpha, successes + 1, trials - successes))


def bootstrap_t(x: np.ndarray, mu0: float, *, resamples: int = 2000, rng=None) -> dict:
    """Studentised-bootstrap p-values for H0: E[x] = mu0 (two-sided), E[x] ≤ mu0 and E[x] ≥ mu0.

    Returns ``mean``, ``se``, ``t`` and the three p-values (``p_two``, ``p_greater`` — evidence that
    E[x] > mu0 —, ``p_less``), plus ``tstar`` (the sorted bootstrap t values, for intervals).  p-values
    use the (count + 1)/(B + 1) rule, so they are never 0.
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 3:
        raise ValueError("the bootstrap-t test needs at least 3 samples")
    g = np.random.default_rng(rng)
    mean = float(x.mean())
    se = float(x.std(ddof=1)) / math.sqrt(n)
    tstar = np.empty(resamples)
    chunk = max(1, 2_000_000 // n)
    for s in range(0, resamples, chunk):
        b = min(chunk, resamples - s)
        idx = g.integers(0, n, size=(b, n))
        xs = x[idx]
        m = xs.mean(axis=1)
        sd = xs.std(axis=1, ddof=1) / math.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            tstar[s:s + b] = np.where(sd > 0, (m - mean) / sd, 0.0)
    tstar.sort()
    if se == 0.0:
        t = 0.0 if mean == mu0 else math.copysign(math.inf, mean - mu0)
    else:
        t = (mean - mu0) / se
    B = resamples
    p_greater = (np.count_nonzero(tstar >= t) + 1) / (B + 1)
    p_less = (np.count_nonzero(tstar <= t) + 1) / (B + 1)
    p_two = min(1.0, 2.0 * min(p_greater, p_less))
    return {"mean": mean, "se": se, "t": t, "p_two": float(p_two), "p_greater": float(p_greater),
            "p_less": float(p_less), "tstar": tstar}


def bootstrap_t_interval(boot: dict, level: float) -> tuple[float, float]:
    """Equal-tailed bootstrap-t interval for the mean at ``level`` (from :func:`bootstrap_t`'s output)."""
    tstar, mean, se = boot["tstar"], boot["mean"], boot["se"]
    a = (1.0 - level) / 2.0
    lo_q, hi_q = np.quantile(tstar, [a, 1.0 - a])
    return mean - float(hi_q) * se, mean - float(lo_q) * se


def holm(pvalues: list[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise level ``alpha``."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    reject = [False] * len(pvalues)
    m = len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] <= alpha / (m - rank):
            reject[i] = True
        else:
            break
    return reject


def normal_power(effect: float, sd: float, trials: int, alpha: float, sides: int = 2) -> float:
    """Power of a level-α z-test on the mean against a shift ``effect`` (normal approximation)."""
    if sd <= 0:
        return 1.0
    z = stats.norm.ppf(1.0 - alpha / sides)
    shift = abs(effect) * math.sqrt(trials) / sd
    return float(stats.norm.cdf(shift - z) + (stats.norm.cdf(-shift - z) if sides == 2 else 0.0))


def trials_for_power(effect: float, sd: float, alpha: float, power: float = 0.8, sides: int = 2) -> int:
    """Trials a level-α z-test needs for ``power`` against a shift ``effect`` (normal approximation)."""
    if effect == 0:
        return 0
    z = stats.norm.ppf(1.0 - alpha / sides) + stats.norm.ppf(power)
    return int(math.ceil((z * sd / abs(effect)) ** 2))
