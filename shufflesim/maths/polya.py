"""Pólya noise, the discrete Laplace distribution, exact uniform sampling in Z_q and additive sharing.

The building blocks of the IKOS summation protocol with distributed noise (seed 004 §5.2–5.3 and §6;
docs/theory.md#summation-ikos), kept free of any protocol logic so that each can be tested against its closed form.

Distributions
-------------
* **Pólya(r, α)** (negative binomial with real r > 0): P(z) = Γ(z+r)/(z! Γ(r)) · α^z (1−α)^r, z = 0, 1, …
  (seed 004 §5.2, after Goryczka & Xiong).  Library parametrisations differ: numpy's
  ``negative_binomial(n, p)`` and scipy's ``nbinom(n, p)`` count failures before the n-th success with
  *success* probability p, so their pmf is Γ(z+n)/(z! Γ(n)) p^n (1−p)^z: **α corresponds to p = 1 − α**.
  (Passing p = α, as the authors' public experiment code does, gives a distribution with mean
  r(1−α)/α instead of rα/(1−α): almost no noise when α is close to 1.)
* The sum of n independent Pólya(1/n, α) is Geometric: P(z) = α^z (1−α); the difference of two
  independent such geometrics is the **discrete Laplace** DLap(α): P(z) = (1−α)/(1+α) · α^{|z|}, with
  variance 2α/(1−α)² (docs/theory.md#dlap).  Hence users adding Z_i = Pólya(1/n, α) − Pólya(1/n, α) make
  Σ Z_i ~ DLap(α) exactly.

Modular arithmetic
------------------
Group elements of Z_q are ``uint64`` arrays with values in [0, q), for any 2 ≤ q ≤ 2⁶⁴ − 1.  Additions
and subtractions detect wrap-around explicitly, so nothing overflows silently; sums over many elements are
taken exactly (32-bit halves, then a Python int) by :func:`sum_mod`.  Uniform elements are drawn by
rejection from 64-bit words (:func:`uniform_mod_q`), which has no modulo bias for any q.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import ParameterError
from shufflesim.core.rng import RngLike, as_generator
from shufflesim.maths.integers import exact_integer_sum

#: the largest modulus whose elements fit in uint64
MAX_Q = 2**64 - 1

_U64 = np.uint64
_TWO64 = 2**64


# --- parameter checks ---------------------------------------------------------------------------------
def _check_alpha(alpha) -> float:
    return check_real("alpha", alpha, low=0.0, high=1.0, high_open=True)


def check_modulus(q) -> int:
    """q as a Python int in [2, 2⁶⁴ − 1], or :class:`ParameterError`."""
    return check_int("q", q, minimum=2, maximum=MAX_Q)


# --- Pólya ----------------------------------------------------------------------------------------------
def polya_logpmf(z, r: float, alpha: float) -> np.ndarray:
    """log P(Z = z) for Z ~ Pólya(r, α): log Γ(z+r) − log z! − log Γ(r) + z log α + r log(1−α).

    Seed 004 §5.2 (docs/theory.md#summation-polya).  −inf for z < 0 (and for z > 0 when α = 0).
    """
    r = check_real("r", r, low=0.0, low_open=True)
    alpha = _check_alpha(alpha)
    z = np.asarray(z)
    zf = np.where(z >= 0, z, 0).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        zlog = np.where(zf > 0, zf * math.log(alpha) if alpha > 0 else -np.inf, 0.0)
    out = special.gammaln(zf + r) - special.gammaln(zf + 1.0) - special.gammaln(r) + zlog + r * math.log1p(-alpha)
    return np.where(z >= 0, out, -np.inf)


def polya_mean_var(r: float, alpha: float) -> tuple[float, float]:
    """Mean rα/(1−α) and variance rα/(1−α)² of Pólya(r, α) (negative binomial moments)."""
    alpha = _check_alpha(alpha)
    return r * alpha / (1.0 - alpha), r * alpha / (1.0 - alpha) ** 2


def sample_polya(r: float, alpha: float, size, rng: RngLike = None) -> np.ndarray:
    """Draw Pólya(r, α) variates (int64) with numpy's negative binomial at success probability p = 1 − α."""
    r = check_real("r", r, low=0.0, low_open=True)
    alpha = _check_alpha(alpha)
    gen = as_generator(rng)
    return gen.negative_binomial(r, 1.0 - alpha, size=size).astype(np.int64, copy=False)


def sample_polya_difference(n_users: int, alpha: float, size, rng: RngLike = None) -> np.ndarray:
    """Z = Pólya(1/n, α) − Pólya(1/n, α) per user: the noise share whose sum over n users is DLap(α)."""
    n_users = check_int("n_users", n_users, minimum=1)
    gen = as_generator(rng)
    a = sample_polya(1.0 / n_users, alpha, size, gen)
    b = sample_polya(1.0 / n_users, alpha, size, gen)
    return a - b


# --- discrete Laplace --------------------------------------------------------------------------------------
def dlap_logpmf(z, alpha: float) -> np.ndarray:
    """log P(Z = z) = log((1−α)/(1+α)) + |z| log α for Z ~ DLap(α) (docs/theory.md#dlap)."""
    alpha = _check_alpha(alpha)
    z = np.abs(np.asarray(z)).astype(float)
    base = math.log1p(-alpha) - math.log1p(alpha)
    if alpha == 0.0:
        return np.where(z == 0, base, -np.inf)
    return base + z * math.log(alpha)


def dlap_variance(alpha: float) -> float:
    """Var DLap(α) = 2α/(1−α)² (docs/theory.md#dlap)."""
    alpha = _check_alpha(alpha)
    return 2.0 * alpha / (1.0 - alpha) ** 2


def dlap_variance_from_scale(t: float) -> float:
    """Var DLap(e^{−t}) = 2e^{−t}/(1−e^{−t})², computed with expm1 (accurate when t = ε/p is tiny)."""
    t = check_real("t", t, low=0.0, low_open=True)
    return 2.0 * math.exp(-t) / math.expm1(-t) ** 2


def dlap_upper_tail(a: int, alpha: float) -> float:
    """P(Z ≥ a) for Z ~ DLap(α) and integer a: α^a/(1+α) for a ≥ 0, 1 − α^{1−a}/(1+α) for a < 0.

    From P(Z = z) = (1−α)/(1+α) α^{|z|}: Σ_{z≥a} = (1−α)/(1+α) · α^a/(1−α) for a ≥ 0.
    """
    alpha = _check_alpha(alpha)
    a = int(a)
    if a >= 0:
        return alpha**a / (1.0 + alpha) if a > 0 else 1.0 / (1.0 + alpha)
    return 1.0 - alpha ** (1 - a) / (1.0 + alpha)


def dlap_upper_tail_second_moment(a: int, alpha: float) -> float:
    """E[Z² 1{Z ≥ a}] for Z ~ DLap(α) and integer a ≥ 0 (equal to E[Z² 1{Z ≤ −a}] by symmetry).

    (1−α)/(1+α) · Σ_{z≥a} z² α^z with Σ_{j≥0} (a+j)² α^j = a²/(1−α) + 2aα/(1−α)² + α(1+α)/(1−α)³.
    """
    alpha = _check_alpha(alpha)
    a = check_int("a", a, minimum=0)
    u = 1.0 - alpha
    series = a * a / u + 2.0 * a * alpha / u**2 + alpha * (1.0 + alpha) / u**3
    return (u / (1.0 + alpha)) * alpha**a * series


def sample_dlap(alpha: float, size, rng: RngLike = None) -> np.ndarray:
    """DLap(α) variates (int64) as the difference of two Geometric(α) on {0, 1, …} (numpy p = 1 − α)."""
    alpha = _check_alpha(alpha)
    gen = as_generator(rng)
    a = gen.geometric(1.0 - alpha, size=size)
    b = gen.geometric(1.0 - alpha, size=size)
    return (a - b).astype(np.int64, copy=False)


# --- uniform sampling and arithmetic in Z_q ------------------------------------------------------------------
def uniform_mod_q(q: int, size, rng: RngLike = None) -> np.ndarray:
    """Exactly uniform elements of Z_q as uint64, by rejection from uniform 64-bit words.

    A word w is accepted when w < L = 2⁶⁴ − (2⁶⁴ mod q), the largest multiple of q not above 2⁶⁴, and mapped
    to w mod q; each residue then has exactly L/q preimages, so there is no modulo bias.  The rejection
    probability is (2⁶⁴ mod q)/2⁶⁴ < q/2⁶⁴ (below 1/4 for q ≤ 2⁶²; below 1/2 for any q); rejected words are
    redrawn in vectorised rounds.
    """
    q = check_modulus(q)
    gen = as_generator(rng)
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    total = int(np.prod(shape, dtype=np.int64))
    bits = gen.bit_generator  # raw 64-bit words of the generator's own stream
    words = bits.random_raw(total)
    rem = _TWO64 % q
    if rem:  # q is not a power of two: reject the top partial block
        limit = _U64(_TWO64 - rem)
        bad = np.flatnonzero(words >= limit)
        while bad.size:
            redraw = bits.random_raw(bad.size)
            words[bad] = redraw
            bad = bad[redraw >= limit]
        words %= _U64(q)
    else:
        words &= _U64(q - 1)
    return words.reshape(shape)


def reduce_mod(v, q: int) -> np.ndarray:
    """Signed integers (int64 array) reduced into [0, q) as uint64, exactly, for any 2 ≤ q ≤ 2⁶⁴ − 1.

    Works on magnitudes in uint64 (two's complement |v| = ~v + 1, valid even for −2⁶³), so no
    intermediate overflows: v mod q = |v| mod q for v ≥ 0 and (q − |v| mod q) mod q for v < 0.
    """
    q = check_modulus(q)
    v = np.asarray(v)
    if v.dtype.kind == "u":
        return v.astype(_U64, copy=False) % _U64(q)
    if v.dtype.kind != "i":
        raise ParameterError(f"reduce_mod needs an integer array; got dtype {v.dtype}")
    v = v.astype(np.int64, copy=False)
    u = v.view(_U64)
    neg = v < 0
    with np.errstate(over="ignore"):  # ~0 + 1 wraps to 0 by design
        mag = np.where(neg, ~u + _U64(1), u)
    r = mag % _U64(q)
    return np.where(neg & (r != 0), _U64(q) - r, r)


def add_mod(a: np.ndarray, b: np.ndarray, q: int) -> np.ndarray:
    """(a + b) mod q for uint64 arrays with entries in [0, q); exact for any q ≤ 2⁶⁴ − 1.

    The uint64 sum s = a + b may wrap past 2⁶⁴ (only when q > 2⁶³); then the true sum is s + 2⁶⁴ ≥ q and
    s − q (again modulo 2⁶⁴) is the right residue, as it is when s ≥ q without wrapping.
    """
    qq = _U64(q)
    a, b = np.asarray(a, dtype=_U64), np.asarray(b, dtype=_U64)
    with np.errstate(over="ignore"):  # wrap-around is intended and handled (0-d inputs would warn)
        s = a + b
        return np.where((s < a) | (s >= qq), s - qq, s)


def sub_mod(a: np.ndarray, b: np.ndarray, q: int) -> np.ndarray:
    """(a − b) mod q for uint64 arrays with entries in [0, q); exact for any q ≤ 2⁶⁴ − 1."""
    a, b = np.asarray(a, dtype=_U64), np.asarray(b, dtype=_U64)
    with np.errstate(over="ignore"):  # wrap-around is intended and handled (0-d inputs would warn)
        d = a - b
        return np.where(a < b, d + _U64(q), d)


def sum_mod(a: np.ndarray, q: int) -> int:
    """Σ a mod q as a Python int, exact for any number of uint64 elements (no overflow)."""
    return exact_integer_sum(np.asarray(a)) % int(q)


def additive_shares(values: np.ndarray, m: int, q: int, rng: RngLike = None) -> np.ndarray:
    """Split each value of Z_q into m additive shares: an (n, m) uint64 array whose rows sum to the value mod q.

    Shares 1..m−1 are independent uniform elements of Z_q; share m = value − Σ others (mod q), so any m−1
    shares of a row are independent and uniform (seed 004 §5.1, the IKOS randomiser).  The array is
    column-major, so that each share index (one shuffler's channel) is contiguous in memory.
    """
    q = check_modulus(q)
    m = check_int("m", m, minimum=1)
    values = np.asarray(values, dtype=_U64)
    n = values.shape[0]
    out = np.empty((m, n), dtype=_U64)
    if m == 1:
        out[0] = values
        return out.T
    out[: m - 1] = uniform_mod_q(q, (m - 1, n), rng)
    if (m - 1) * (q - 1) <= MAX_Q:  # the column sum cannot wrap in uint64
        acc = out[: m - 1].sum(axis=0, dtype=_U64) % _U64(q)
    else:
        acc = out[0].copy()
        for j in range(1, m - 1):  # loop over share indices (≤ m), vectorised over users
            acc = add_mod(acc, out[j], q)
    out[m - 1] = sub_mod(values, acc, q)
    return out.T


def decode_centered(s: int, q: int) -> int:
    """The representative of s ∈ Z_q in (−q/2, q/2]: s − q when s > q/2, else s (seed 004 App. B)."""
    s, q = int(s), int(q)
    return s - q if 2 * s > q else s
