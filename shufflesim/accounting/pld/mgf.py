"""Moment-generating functions of privacy-loss atoms: cheap upper envelopes and the Chernoff constant.

The Chernoff bound on the hockey-stick divergence (Koskela, Heikkilä, Honkela 2021,
arXiv:2106.00477; used in :mod:`.tails`) and the tilted window of the FFT accountant (:mod:`.fft`)
both search over a tilt parameter using the log-MGF of each component; :class:`MGFSketch` gives a
valid upper envelope of it at a cost independent of the number of atoms, and :func:`log_c` is the
constant c(lam) = sup_{x > 0} (1 - e^{-x}) e^{-lam x} = lam^lam / (lam + 1)^(lam + 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.accounting.numerics.logspace import NEG_INF, group_log_sum, log_sum

#: number of equal-width blocks in an MGF sketch
SKETCH_BLOCKS = 2048


def log_c(lam: float | np.ndarray) -> float | np.ndarray:
    """log c(lam) = lam log lam - (lam + 1) log(lam + 1), the Chernoff constant of this module."""
    lam = np.asarray(lam, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam_log_lam = np.where(lam == 0.0, 0.0, lam * np.log(np.where(lam == 0.0, 1.0, lam)))  # xlogy(lam, lam)
    out = lam_log_lam - (lam + 1.0) * np.log1p(lam)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True, eq=False)
class MGFSketch:
    """Upper envelope of a log-MGF: atoms grouped into equal-width blocks of values.

    For t >= 0, sum_i m_i e^{t v_i} <= sum_b M_b e^{t vmax_b}; for t < 0 use vmin_b.  Valid for every
    t, exact when blocks hold one value; used to search for Chernoff parameters cheaply.
    """

    log_mass: np.ndarray
    vmin: np.ndarray
    vmax: np.ndarray

    @classmethod
    def from_values(cls, values: np.ndarray, log_mass: np.ndarray, *, tol: float = 0.0,
                    blocks: int = SKETCH_BLOCKS) -> "MGFSketch":
        """Sketch of atoms with sorted ``values`` (each known to within ``tol``) and ``log_mass``."""
        values = np.asarray(values, dtype=float)
        keep = log_mass > NEG_INF
        values = values[keep]
        log_mass = np.asarray(log_mass, dtype=float)[keep]
        if values.size == 0:
            e = np.zeros(0)
            return cls(e, e, e)
        n = values.size
        v0, v1 = float(values[0]), float(values[-1])
        if n <= 3 * blocks:
            starts = np.arange(n)
        else:
            # union of equal-width blocks, equal-count blocks and geometric blocks at both ends
            # (1, 1, 2, 4, ... atoms), so that strongly tilted MGFs are still tight
            width = np.searchsorted(values, np.linspace(v0, v1, blocks + 1)[1:-1], side="left")
            count = (np.arange(1, blocks) * (n / blocks)).astype(np.int64)
            geo = np.unique(np.concatenate(([0], 2 ** np.arange(0, int(math.log2(n)) + 1)))).astype(np.int64)
            geo = geo[geo < n]
            starts = np.unique(np.concatenate(([0], width, count, geo, n - geo)))
            starts = starts[(starts >= 0) & (starts < n)]
        ids = np.zeros(n, dtype=np.int64)
        ids[starts[1:]] = 1
        ids = np.cumsum(ids)
        ends = np.concatenate((starts[1:], [n])) - 1
        _, lm, err = group_log_sum(ids, log_mass)
        return cls(lm + math.log1p(err), values[starts] - tol, values[ends] + tol)

    def log_mgf_upper(self, t: float) -> float:
        if self.log_mass.size == 0:
            return NEG_INF
        v = self.vmax if t >= 0 else self.vmin
        return log_sum(self.log_mass + t * v)

    def tilted_moments(self, t: float) -> tuple[float, float]:
        """Approximate mean and variance of the values under weights m e^{t v} (block midpoints)."""
        if self.log_mass.size == 0:
            return 0.0, 0.0
        mid = 0.5 * (self.vmin + self.vmax)
        w = self.log_mass + t * mid
        w = np.exp(w - np.max(w))
        w /= w.sum()
        mean = float(np.dot(w, mid))
        var = float(np.dot(w, (mid - mean) ** 2 + (self.vmax - self.vmin) ** 2 / 12.0))
        return mean, var

