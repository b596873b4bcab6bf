"""Euclidean projection onto the probability simplex.

Used by the "shuffle+INV" distribution estimator of Biswas et al. (seed 003, after Kairouz et al. 2016):
invert the k-RR channel, then take the nearest point of {p : p ≥ 0, Σ p = 1}.  The algorithm is the
sort-based one of Held, Wolfe & Crowder (1974) / Duchi et al. (2008): O(k log k).
"""

from __future__ import annotations

import numpy as np


def project_to_simplex(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """The point p ≥ 0 with Σ p = ``total`` nearest to ``v`` in Euclidean distance.

    ``v`` may be 1-D or 2-D (rows projected independently).
    """
    v = np.asarray(v, dtype=float)
    if not np.all(np.isfinite(v)):
        raise ValueError("cannot project a vector with non-finite entries onto the simplex")
    one_d = v.ndim == 1
    x = np.atleast_2d(v)
    k = x.shape[1]
    u = -np.sort(-x, axis=1)  # descending
    css = np.cumsum(u, axis=1) - total
    idx = np.arange(1, k + 1)
    cond = u - css / idx > 0
    rho = k - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    theta = css[np.arange(x.shape[0]), rho] / (rho + 1)
    p = np.maximum(x - theta[:, None], 0.0)
    return p[0] if one_d else p


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance ½ Σ |p − q| between two distributions on the same support."""
    tv = 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())
    return min(1.0, tv)  # round-off on large supports can exceed 1 by ~1e-9; TV is at most 1
