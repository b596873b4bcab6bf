"""Fixed-point encodings with randomised rounding, shared by the real-summation protocols (docs/theory.md#summation-rounding).

* :func:`randomised_round` — x̄ = ⌊kx⌋ + Bern(kx − ⌊kx⌋) ∈ {0, …, k} (seed 004 Appendix F, "randomized
  rounding", Lemma F.1): E[x̄] = kx and Var(x̄) = r(1 − r) with r = kx − ⌊kx⌋ (≤ 1/4);
* :func:`rounding_variance` — that variance r(1 − r), in units of the integer grid;
* :func:`mixed_radix_digits` — the deterministic digits of the recursive protocol's encoding (seed 004 §4,
  Algorithm 3; docs/theory.md#summation-recursive): with precisions p_1, …, p_r, rem = x and for j < r: d_j = ⌊p_j·rem⌋,
  rem ← p_j·rem − d_j.  The last digit is then randomised rounding of p_r·rem.  Digits are capped at
  p_j − 1 so that x = 1 is encoded as all digits maximal and a last remainder of exactly 1 (then
  d_r = p_r); every x ∈ [0, 1] satisfies x = Σ_{j<r} d_j/Q_j + rem/Q_{r−1} with Q_j = p_1⋯p_j.

Everything is vectorised over users; randomness comes from the caller's ``numpy.random.Generator``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["grid_dtype", "randomised_round", "rounding_variance", "mixed_radix_digits"]


def grid_dtype(top: int) -> np.dtype:
    """Smallest unsigned integer dtype holding {0, …, top}."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def randomised_round(x: np.ndarray, k: int, rng: np.random.Generator, dtype=None) -> np.ndarray:
    """Randomised rounding of ``k·x`` to an integer in {0, …, k} (seed 004 Appendix F; docs/theory.md#summation-rounding).

    ``x`` must lie in [0, 1].  Returns ⌊kx⌋ + Bern(kx − ⌊kx⌋) with ``dtype`` (default: the smallest
    unsigned type holding k).  Unbiased: E[result] = kx.
    """
    s = np.asarray(x, dtype=float) * k
    lo = np.floor(s)
    frac = s - lo
    up = rng.random(s.shape) < frac
    out = lo.astype(dtype or grid_dtype(k), copy=False)
    out += up.astype(out.dtype, copy=False)
    return out


def rounding_variance(x: np.ndarray, k: int) -> np.ndarray:
    """Var(randomised_round(x, k)) = r(1 − r), r = kx − ⌊kx⌋ (seed 004 Lemma F.1 bounds it by 1/4)."""
    s = np.asarray(x, dtype=float) * k
    r = s - np.floor(s)
    return r * (1.0 - r)


def mixed_radix_digits(x: np.ndarray, precisions: Sequence[int]) -> tuple[list[np.ndarray], np.ndarray]:
    """Deterministic digits d_1, …, d_{r−1} (float arrays of integers) and the last remainder in [0, 1].

    ``precisions`` = (p_1, …, p_r); only p_1..p_{r−1} are used here (the last level rounds
    p_r·remainder at random, :func:`randomised_round`).  See the module docstring for the encoding.
    """
    rem = np.asarray(x, dtype=float)
    digits: list[np.ndarray] = []
    for p in precisions[:-1]:  # r − 1 levels (r is 2 or 3 in practice); vectorised over users
        s = rem * p
        d = np.minimum(np.floor(s), p - 1)
        rem = np.clip(s - d, 0.0, 1.0)
        digits.append(d)
    return digits, rem
