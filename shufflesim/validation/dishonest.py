"""Dishonest and absent users: the bias a coalition can force, derived and simulated (seed 004 §8;
docs/theory.md#dishonest).

A population of n users runs a protocol; the first ``c`` of them (their position is irrelevant: every
analyser here depends on the messages only through permutation-invariant sums or histograms) deviate with
one of four strategies, each of which sends only messages the protocol's analyser cannot reject:

* ``push``            — the worst well-formed messages in the direction ``direction`` (±1): the top (bottom)
  of every message range (blanket, recursive, Cheu, local RR), the ``target`` category (k-RR; direction −1:
  another category), a real number of size ``magnitude`` (local Laplace: its message space is all of R),
  and for IKOS additive shares of an arbitrary residue s (the whole coalition's shift, default
  :func:`ikos_push_shift`);
* ``extreme-input``   — follow the protocol with the extreme in-range input (1 or 0; k-RR: the target);
* ``withhold-noise``  — send the true (rounded) value without the randomiser's noise (no blanket, no flips,
  no Laplace, no Pólya share);
* ``dropout``         — send nothing (the analyser still debiases for n users).

:func:`influence` gives the derived interval [lo, hi] of what one user's well-formed messages contribute to
E[estimate] (honest users contribute exactly their input, in [0, 1]); :func:`expected_estimate` the exact
E[estimate] of an attacked population (linear analysers: sum of per-user expectations; IKOS: the wrap-around
of the modular decoding included, through the exact law of the honest users' noise);
:func:`simulate_attack` runs the protocol's own randomiser (for the honest users, vectorised), the
strategy's messages for the coalition (vectorised), the protocol's shuffler and analyser.  With c = 0 it
reproduces :meth:`Protocol.run` bit for bit (same seed streams).

Estimand: the sum Σ x (summation protocols) and the debiased count of category ``target`` (k-RR).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shufflesim.core.rng import RngLike, as_seed_sequence, child
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.polya import additive_shares, polya_logpmf, reduce_mod
from shufflesim.maths.rounding import grid_dtype, mixed_radix_digits, randomised_round
from shufflesim.pipeline.protocol import ANALYSER_STREAM, RANDOMISER_STREAM, SHUFFLER_STREAM

STRATEGIES = ("push", "extreme-input", "withhold-noise", "dropout")
PROTOCOLS = ("ikos-sum", "recursive-sum", "blanket-sum", "cheu-sum", "local-rr-sum", "local-laplace-sum", "krr")
#: the coalition's own random stream (the honest users keep the protocol's RANDOMISER_STREAM)
DISHONEST_STREAM = 3
#: default size of a local-Laplace push message (its message space is unbounded: any value is well-formed)
LAPLACE_PUSH = 1000.0


@dataclass(frozen=True)
class Influence:
    """What one user's well-formed messages can contribute to E[estimate] (docs/theory.md#dishonest).

    Honest users contribute exactly their input (unbiased analysers), i.e. [0, 1].  ``lo``/``hi`` bound
    (and attain) a deviating user's contribution; ``modular`` marks IKOS, whose contribution is a residue
    mod q (the coalition's shifts do not add up beyond the decoding window).  ``withhold``: the expected
    contribution of a user with input x who withholds its noise is ``withhold_slope·x + withhold_offset``.
    """

    protocol: str
    lo: float
    hi: float
    modular: bool
    withhold_slope: float
    withhold_offset: float
    dropout: float
    note: str

    @property
    def width(self) -> float:
        """hi − lo: the largest bias one user can force over its true input (honest: 1)."""
        return self.hi - self.lo

    @property
    def excess(self) -> float:
        """How far beyond the honest range [0, 1] one user's contribution reaches (max(hi − 1, −lo))."""
        return max(self.hi - 1.0, -self.lo)


def _check(proto, strategy: str | None = None) -> None:
    if proto.name not in PROTOCOLS:
        raise NotApplicableError(f"dishonest-user analysis is implemented for {', '.join(PROTOCOLS)}; "
                                 f"got {proto.name}")
    if strategy is not None and strategy not in STRATEGIES:
        raise ParameterError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")


def _recursive_terms(proto):
    levels = proto.analyser.levels
    q = proto.analyser.q
    return levels, q


def influence(proto) -> Influence:
    """Derived [lo, hi] of one user's contribution to E[estimate] (docs/theory.md#dishonest, per protocol)."""
    _check(proto)
    name = proto.name
    if name in ("blanket-sum", "cheu-sum"):
        g = proto.params["gamma"]
        # blanket: Ŝ = Σ_i (y_i/k − γ/2)/(1 − γ), y_i ∈ {0..k}; Cheu: Σ_i (Σ_j b_ij/r − γ/2)/(1 − γ), b ∈ {0, 1}
        lo, hi = -g / (2.0 * (1.0 - g)), (1.0 - g / 2.0) / (1.0 - g)
        return Influence(name, lo, hi, False, 1.0 / (1.0 - g), lo, lo,
                         "message range [0, 1] (after dividing by k or r) times the debiasing factor 1/(1-gamma)")
    if name == "recursive-sum":
        levels, q = _recursive_terms(proto)
        lo = -sum(lv.gamma * lv.top / (2.0 * qj * (1.0 - lv.gamma)) for lv, qj in zip(levels, q))
        hi = sum(lv.top * (1.0 - lv.gamma / 2.0) / (qj * (1.0 - lv.gamma)) for lv, qj in zip(levels, q))
        return Influence(name, lo, hi, False, math.nan, lo, lo,
                         "each level's message in {0..D_j}, scaled by 1/(Q_j (1-gamma_j)); withholding noise "
                         "biases level j by gamma_j (d_j - D_j/2)/(Q_j (1-gamma_j)) (digit-dependent)")
    if name == "local-rr-sum":
        f, ctr = proto.analyser.flip, proto.analyser.contrast
        lo, hi = -f / ctr, (1.0 - f) / ctr
        return Influence(name, lo, hi, False, 1.0 / ctr, lo, lo,
                         "one bit, debiased by (y - f)/(1 - 2f): width 1/(1-2f) = coth(eps/2)")
    if name == "local-laplace-sum":
        return Influence(name, -math.inf, math.inf, False, 1.0, 0.0, 0.0,
                         "messages are real numbers: any value is well-formed, the influence is unbounded")
    if name == "krr":
        g, k = proto.gamma, proto.k
        lo, hi = -g / (k * (1.0 - g)), (1.0 - g / k) / (1.0 - g)
        return Influence(name, lo, hi, False, 1.0 / (1.0 - g), lo, lo,
                         "count of the target category: report e_j debiased by (e_j - gamma/k)/(1-gamma)")
    # ikos-sum
    prm = proto.parameters
    lo, hi = -((prm.q - 1) // 2) / prm.p, (prm.q // 2) / prm.p
    return Influence(name, lo, hi, True, 1.0, 0.0, 0.0,
                     "shares are uniform mod q: one user's shares may sum to any residue, so it can move the "
                     "decoded sum anywhere in the window (-q/2, q/2], i.e. the estimate anywhere in "
                     "(-q/(2p), q/(2p)] (wrap-around included)")


def ikos_push_shift(proto, direction: int = -1) -> int:
    """The coalition's default IKOS shift: ±(n·p + ⌈q/2⌉ − ⌊q/2⌋ − 1).

    Downwards this is the largest shift that leaves the lower wrap-around margin of the decoding window at
    least the upper margin ⌊q/2⌋ − np + 1 the protocol's default q was sized for (docs/theory.md#dishonest):
    the estimate drops by ≈ n (the whole range of honest sums) with the protocol's own overflow probability.
    Upwards the same magnitude wraps around (the default q leaves no upper margin): the expected estimate is
    then computed exactly by :func:`expected_estimate`.
    """
    prm = proto.parameters
    mag = prm.n * prm.p + (prm.q + 1) // 2 - prm.q // 2 - 1
    return int(direction) * mag


# --- the attacked population -------------------------------------------------------------------------------
def _split(proto, data, c: int):
    data = proto.check_data(data)
    c = int(c)
    if not 0 <= c <= proto.n:
        raise ParameterError(f"the coalition size c must lie in [0, n={proto.n}]; got {c}")
    return data[:c], data[c:], c


def _dishonest_messages(proto, xd, strategy, direction, target, magnitude, shift, rng) -> np.ndarray | None:
    """The coalition's (c, m) messages (None for a dropout), vectorised over its members."""
    c = xd.shape[0]
    name, rnd = proto.name, proto.randomiser
    up = direction > 0
    if strategy == "dropout":
        return None
    if strategy == "extreme-input":
        if name == "krr":
            x = np.full(c, target if up else (target + 1) % proto.k, dtype=np.int64)
        else:
            x = np.full(c, 1.0 if up else 0.0)
        return np.asarray(rnd.randomise(x, rng))
    if name == "blanket-sum":
        k = rnd.k
        v = randomised_round(xd, k, rng) if strategy == "withhold-noise" else np.full(c, k if up else 0)
        return v.astype(grid_dtype(k))[:, None]
    if name == "cheu-sum":
        r = rnd.r
        if strategy == "withhold-noise":
            xbar = randomised_round(xd, r, rng, dtype=np.int64)
            return (np.arange(1, r + 1)[None, :] <= xbar[:, None]).astype(np.uint8)
        return np.full((c, r), 1 if up else 0, dtype=np.uint8)
    if name == "local-rr-sum":
        v = randomised_round(xd, 1, rng) if strategy == "withhold-noise" else np.full(c, 1 if up else 0)
        return v.astype(np.uint8)[:, None]
    if name == "local-laplace-sum":
        v = xd.astype(float) if strategy == "withhold-noise" else np.full(c, magnitude if up else -magnitude)
        return v[:, None]
    if name == "krr":
        dt = grid_dtype(proto.k - 1)
        v = xd if strategy == "withhold-noise" else np.full(c, target if up else (target + 1) % proto.k)
        return v.astype(dt)[:, None]
    if name == "recursive-sum":
        levels = rnd.levels
        dt = grid_dtype(max(lv.top for lv in levels))
        if strategy == "withhold-noise":
            digits, t = mixed_radix_digits(xd, rnd.precisions)
            digits.append(randomised_round(t, rnd.precisions[-1], rng))
            return np.stack([d.astype(dt) for d in digits], axis=1) if c else np.empty((0, len(levels)), dt)
        tops = np.array([lv.top if up else 0 for lv in levels], dtype=dt)
        return np.broadcast_to(tops, (c, len(levels))).copy()
    # ikos-sum
    prm = proto.parameters
    if strategy == "withhold-noise":  # x̄ without the Pólya share
        vals = reduce_mod(randomised_round(xd, prm.p, rng, dtype=np.int64), prm.q)
    else:  # push: the whole shift s on the first member, the others send shares of 0
        s = ikos_push_shift(proto, direction) if shift is None else int(shift)
        vals = np.zeros(c, dtype=np.uint64)
        if c:
            vals[0] = s % prm.q
    return np.asarray(additive_shares(vals, prm.m, prm.q, rng))


def _scalar(proto, raw, target: int) -> float:
    est = proto.point_estimate(raw)
    return float(est[target]) if proto.name == "krr" else float(est)


def truth(proto, data, target: int = 0) -> float:
    """The estimand of the whole population (the coalition's true inputs included)."""
    t = proto.truth(proto.check_data(data))
    return float(t[target]) if proto.name == "krr" else float(t)


def attacked_estimate(proto, data, c: int, strategy: str, seed: RngLike = None, *, direction: int = 1,
                      target: int = 0, magnitude: float = LAPLACE_PUSH, shift: int | None = None) -> float:
    """One run with the first ``c`` users deviating: the protocol's randomiser on the honest users (stream 0
    of ``seed``, as :meth:`Protocol.run`), the coalition's messages (stream 3), shuffler (1), analyser (2)."""
    _check(proto, strategy)
    xd, xh, c = _split(proto, data, c)
    s = as_seed_sequence(seed)
    gen_honest = np.random.Generator(np.random.PCG64(child(s, RANDOMISER_STREAM)))
    honest = np.asarray(proto.randomiser.randomise(xh, gen_honest))
    if honest.ndim == 1:
        honest = honest[:, None]
    bad = _dishonest_messages(proto, xd, strategy, direction, target, magnitude, shift,
                              np.random.Generator(np.random.PCG64(child(s, DISHONEST_STREAM))))
    messages = honest if bad is None or c == 0 else np.concatenate([np.asarray(bad, dtype=honest.dtype), honest])
    view = proto.shuffler.shuffle(messages, child(s, SHUFFLER_STREAM))
    raw = proto.analyser.analyse(view, np.random.Generator(np.random.PCG64(child(s, ANALYSER_STREAM))))
    return _scalar(proto, raw, target)


def simulate_attack(proto, data, c: int, strategy: str, trials: int, seed: RngLike = None, **kw) -> np.ndarray:
    """``trials`` independent attacked runs (trial t uses child t of ``seed``); returns the estimates."""
    root = as_seed_sequence(seed)
    return np.array([attacked_estimate(proto, data, c, strategy, child(root, t), **kw) for t in range(int(trials))])


# --- exact expectations --------------------------------------------------------------------------------------
def _per_user_expected(proto, xd, strategy, direction, target, magnitude) -> float:
    """Σ over the coalition of E[contribution] (linear analysers), exactly as derived."""
    c = xd.shape[0]
    if c == 0:
        return 0.0
    inf = influence(proto)
    up = direction > 0
    name = proto.name
    if strategy == "dropout":
        return c * inf.dropout
    if strategy == "extreme-input":
        return float(c) if up else 0.0  # honest analysers are unbiased; krr: c users with the target (or not)
    if strategy == "push":
        if name == "local-laplace-sum":
            return c * (magnitude if up else -magnitude)
        return c * (inf.hi if up else inf.lo)
    # withhold-noise
    if name == "krr":
        return inf.withhold_slope * float(np.sum(xd == target)) + c * inf.withhold_offset
    if name == "recursive-sum":
        levels, q = _recursive_terms(proto)
        digits, t = mixed_radix_digits(xd, proto.randomiser.precisions)
        means = [*digits, proto.randomiser.precisions[-1] * t]
        return float(sum(np.sum(m - lv.gamma * lv.top / 2.0) / (qj * (1.0 - lv.gamma))
                         for m, lv, qj in zip(means, levels, q)))
    return inf.withhold_slope * float(np.sum(xd)) + c * inf.withhold_offset


def remaining_noise_pmf(h: int, n: int, alpha: float, tail: float = 1e-300) -> tuple[np.ndarray, np.ndarray, float]:
    """The exact law of the noise left by h honest Pólya shares designed for n users (copies of a cached
    computation; :func:`_remaining_noise_pmf` derives it)."""
    z, pmf, t = _remaining_noise_pmf(int(h), int(n), float(alpha), float(tail))
    return z.copy(), pmf.copy(), t


@lru_cache(maxsize=32)
def _remaining_noise_pmf(h: int, n: int, alpha: float, tail: float = 1e-300) -> tuple[np.ndarray, np.ndarray, float]:
    """The exact law of the noise left when only h IKOS users add shares designed for n users
    (docs/theory.md#dishonest-polya).

    Each share is Pólya(1/n, α) − Pólya(1/n, α) (seed 004 §5.2), and Pólya laws with the same α add in r,
    so the h shares sum to A − B with A, B iid Pólya(h/n, α) (h = n: DLap(α); h > n happens for the
    ``--tolerate`` defence, whose shares are designed for fewer users than there are).  Returns
    (z, pmf, tail_mass): the support −L..L, P(A − B = z) there (Σ_{a, b ≤ L, a − b = z} P(A = a)P(B = b), by
    convolution), and an upper bound 2·P(A > L) on the probability mass the truncation leaves out.  L (a power
    of two) is the first with P(A > L) ≤ ``tail``: for j ≥ L + 1 the ratio P(A = j+1)/P(A = j) =
    α(j + r)/(j + 1) is at most ρ = α·max(1, (L + 1 + r)/(L + 2)), so P(A > L) ≤ P(A = L + 1)/(1 − ρ) once ρ < 1.
    """
    from shufflesim.core.checks import check_int

    n = check_int("n", n, minimum=1)
    h = check_int("h", h, minimum=1)
    r = h / n
    L = 1
    while True:
        rho = alpha * max(1.0, (L + 1 + r) / (L + 2))
        lp = float(polya_logpmf(L + 1, r, alpha))
        if rho < 1.0:
            log_tail = lp - math.log1p(-rho)
            if log_tail <= math.log(tail):
                break
        if L > 1 << 26:
            raise NotApplicableError(f"the remaining noise law needs more than 2^26 support points (alpha={alpha})")
        L *= 2
    a = np.exp(polya_logpmf(np.arange(L + 1), r, alpha))
    pmf = np.convolve(a, a[::-1])  # index i ↔ z = i − L
    z = np.arange(-L, L + 1)
    return z, pmf, 2.0 * math.exp(log_tail)


def _ikos_expected_decoded(R: int, s: int, q: int, z: np.ndarray, pmf: np.ndarray) -> float:
    """E[centre((R + Z + s) mod q)] over the (truncated) noise law, exactly as the analyser decodes."""
    t = R + s + z
    dec = np.mod(t + (q - 1) // 2, q) - (q - 1) // 2  # representative in (−q/2, q/2]
    return float(np.dot(pmf, dec))


def expected_estimate(proto, data, c: int, strategy: str, *, direction: int = 1, target: int = 0,
                      magnitude: float = LAPLACE_PUSH, shift: int | None = None) -> float:
    """Exact E[estimate] with the first ``c`` users deviating (derived; docs/theory.md#dishonest).

    IKOS needs honest inputs with p·x integer (a deterministic rounded sum); its wrap-around is computed from
    the exact law of the honest users' noise (:func:`remaining_noise_pmf`), truncated below 1e-300.
    """
    _check(proto, strategy)
    xd, xh, c = _split(proto, data, c)
    if proto.name != "ikos-sum":
        honest = float(np.sum(xh == target)) if proto.name == "krr" else math.fsum(xh.tolist())
        return honest + _per_user_expected(proto, xd, strategy, direction, target, magnitude)
    prm = proto.parameters
    px = np.concatenate([xh, xd]) * prm.p
    if not np.all(px == np.round(px)):
        raise NotApplicableError("the exact IKOS expectation needs inputs with p*x integer (deterministic rounding)")
    R = int(np.round(xh * prm.p).sum())
    h = prm.n - c
    s = 0
    if strategy == "extreme-input":
        R += c * prm.p if direction > 0 else 0
        h = prm.n
    elif strategy == "withhold-noise":
        R += int(np.round(xd * prm.p).sum())
    elif strategy == "push":
        s = ikos_push_shift(proto, direction) if shift is None else int(shift)
    if h == 0:
        z, pmf = np.zeros(1, dtype=np.int64), np.ones(1)
    else:
        z, pmf, _ = remaining_noise_pmf(h, proto.randomiser.n_users, prm.alpha)
    return _ikos_expected_decoded(R, s, prm.q, z, pmf) / prm.p


def expected_bias(proto, data, c: int, strategy: str, **kw) -> float:
    """E[estimate] − the population's true estimand (the coalition's true inputs included)."""
    return expected_estimate(proto, data, c, strategy, **kw) - truth(proto, data, kw.get("target", 0))


#: largest modulus :func:`ikos_worst_shifts` scans (one FFT of length q)
MAX_SCAN_Q = 1 << 24


def ikos_worst_shifts(proto, data, c: int) -> tuple[int, float, int, float]:
    """The coalition's most damaging IKOS shifts: (s_low, bias_low, s_high, bias_high) over every residue s.

    E[decoded(R + s + Z)] for all s at once: the noise law folded mod q, circularly correlated with the
    decoding map (one FFT of length q, :data:`MAX_SCAN_Q` at most); the two extreme shifts are then
    re-evaluated exactly with :func:`expected_bias` (the FFT only locates them).  The honest inputs need
    p·x integer, as for :func:`expected_estimate`.
    """
    _check(proto)
    if proto.name != "ikos-sum":
        raise NotApplicableError("ikos_worst_shifts is for ikos-sum")
    xd, xh, c = _split(proto, data, c)
    prm = proto.parameters
    if prm.q > MAX_SCAN_Q:
        raise NotApplicableError(f"scanning every shift needs q <= {MAX_SCAN_Q}; got q={prm.q}")
    px = xh * prm.p
    if not np.all(px == np.round(px)):
        raise NotApplicableError("the exact IKOS expectation needs inputs with p*x integer (deterministic rounding)")
    R = int(np.round(px).sum())
    q = prm.q
    if prm.n - c == 0:
        w = np.zeros(q)
        w[0] = 1.0
    else:
        z, pmf, _ = remaining_noise_pmf(prm.n - c, proto.randomiser.n_users, prm.alpha)
        w = np.bincount(np.mod(z, q), weights=pmf, minlength=q)
    u = np.arange(q)
    d_r = np.mod(u + R + (q - 1) // 2, q) - (q - 1) // 2  # decoded value of R + u
    f = np.real(np.fft.ifft(np.fft.fft(d_r.astype(float)) * np.conj(np.fft.fft(w))))  # f[s] = Σ_r w[r] d_r[s + r]
    centred = lambda s: int(s) - q if s > q // 2 else int(s)  # noqa: E731
    s_lo, s_hi = centred(np.argmin(f)), centred(np.argmax(f))
    return (s_lo, expected_bias(proto, data, c, "push", shift=s_lo),
            s_hi, expected_bias(proto, data, c, "push", shift=s_hi))


# --- privacy left with M honest users (docs/theory.md#dishonest-honest) ----------------------------------------
#: mechanism kinds whose view with a coalition is exactly the M-user mechanism's (shuffled identical randomisers;
#: a composition of them: each part among the M honest users)
HONEST_KINDS = ("rr2", "krr", "clones", "cheu", "matrix")
#: kinds whose noise is distributed as Pólya shares (seed 004 §5.2): the honest count shrinks the noise
HONEST_NOISE_KINDS = ("ikos", "central-dlap")


def honest_count(honest, n: int) -> int:
    """The number of honest users from ``honest``: a count (an integer 1..n) or a fraction in (0, 1)
    (⌈fraction·n⌉ honest users, at least 1).  ParameterError for anything else."""
    from shufflesim.core.checks import check_int, check_real

    n = check_int("n", n, minimum=1)
    v = check_real("honest", honest, low=0.0, low_open=True)
    if v < 1.0:
        return max(1, math.ceil(v * n - 1e-9 * n))
    if v != math.floor(v):
        raise ParameterError(f"honest must be a count (an integer 1..n={n}) or a fraction in (0, 1); got {honest!r}")
    return check_int("honest", int(v), minimum=1, maximum=n)


def honest_mechanism(mech, honest: int):
    """The mechanism left when only ``honest`` of its n users are honest (a count, or a fraction in (0, 1)):
    the same shuffled randomiser among M = ``honest`` users (the coalition's reports are known and independent
    of the target's input, so the view is equivalent to the M-user mechanism's; docs/theory.md#dishonest-honest).
    A composition (the recursive protocol's levels, one shuffler each) has every part among the M users."""
    import dataclasses

    from shufflesim.accounting.mechanism import Composition

    kind = getattr(mech, "kind", None)
    if kind == "composition":
        m = honest_count(honest, mech.n)
        return Composition(tuple((honest_mechanism(part, m), c) for part, c in mech.parts))
    if kind not in HONEST_KINDS:
        why = ("its noise is distributed over the users: give --n N (the users sharing it), the honest count "
               "shrinks the noise" if kind in HONEST_NOISE_KINDS else "its view does not depend on how many users "
               "are honest (no shuffled population)" if kind in ("central-laplace", "central-gaussian")
               else "its guarantee is stated for a fixed data set, not a population of randomisers")
        raise NotApplicableError(f"--honest as the same mechanism among the honest users is defined for "
                                 f"{', '.join(HONEST_KINDS)}; {kind}: {why}")
    return dataclasses.replace(mech, n=honest_count(honest, mech.n))


@dataclass(frozen=True)
class HonestIKOSPrivacy:
    """Certified δ(ε) of ikos-sum when only h of its n users add their Pólya shares (two-sided)."""

    h: int
    eps: float
    delta_lower: float
    delta_upper: float
    noise_delta_upper: float
    tv_term: float
    sigma: float
    worst_shift: int


def _hockey(pmf: np.ndarray, d: int, ee: float, side: int = 1) -> float:
    """Σ_z max(0, P(z) − e^ε P(z − d)) over the array's support (P = 0 outside it), each term moved by the
    floating-point error of the computed masses (relative 4e-16 per convolution term, pmf.size terms at
    most) upwards (``side`` = 1, for an upper bound) or downwards (−1, for a lower bound)."""
    shifted = np.zeros_like(pmf)
    shifted[d:] = pmf[:-d] if d > 0 else pmf
    slack = 4e-16 * (pmf.size + 10)
    # + an absolute 1e-290 per term: masses near the subnormal range carry no relative precision
    return max(0.0, float(np.sum(np.maximum(0.0, pmf - ee * shifted + side * slack * (pmf + ee * shifted))))
               + side * 1e-290 * pmf.size)


#: truncation of the remaining noise law for privacy profiles: its mass 2P(A > L) ≤ 2e-40 is added to every
#: upper end (and e^ε times it taken off every lower end), so δ below ~1e-39 is not resolved; the support then
#: stays a few thousand points where 1e-300 needs ~10⁵ (a minute of exact convolution at n = 1000, p = 32)
PRIVACY_TAIL = 1e-40


def polya_honest_delta(alpha: float, p: int, n_design: int, h: int, eps: float, *, q: int | None = None,
                       sigma: float | None = None) -> HonestIKOSPrivacy:
    """Certified δ(ε) of a statistic of sensitivity p released with the noise of h honest Pólya shares, each
    designed for ``n_design`` users to sum to DLap(α) (seed 004 §5.2; docs/theory.md#dishonest-honest).

    Upper: max over shifts d ∈ {1..p} of the hockey-stick divergence of (Z_h, Z_h + d) on the truncated law
    (:func:`remaining_noise_pmf`), + 2P(A > L) for the truncation, + (1 + e^ε)·2^{−σ} when ``sigma`` is given
    (IKOS's statistical distance with h honest users).  Lower: the realised pair at shift p (a user moving the
    statistic by p), folded mod ``q`` when given (the IKOS analyser sees the sum mod q), minus e^ε·2P(A > L)
    (the truncated mass).  Both ends carry the floating-point slack of :func:`_hockey`.
    """
    from shufflesim.core.checks import check_int, check_real

    h = check_int("honest", h, minimum=1)
    eps = check_real("eps", eps, low=0.0)
    ee = math.exp(eps)
    z, pmf, tail = remaining_noise_pmf(h, n_design, alpha, PRIVACY_TAIL)
    per_shift = [_hockey(pmf, d, ee) for d in range(1, p + 1)]
    noise = max(per_shift) + tail
    tv = 0.0
    if sigma is not None:
        tv = math.exp(math.log1p(ee) - sigma * math.log(2.0)) if sigma > 0 else math.inf
    slack = 4e-16 * (pmf.size + 10)
    if q is not None:
        folded = np.bincount(np.mod(z, q), weights=pmf, minlength=q)
        rolled = np.roll(folded, p)  # law of (R + p + Z_h) mod q against that of (R + Z_h) mod q
        low = (float(np.sum(np.maximum(0.0, folded - ee * rolled - slack * (folded + ee * rolled)))) - ee * tail
               - 1e-290 * pmf.size)
    else:
        low = _hockey(pmf, p, ee, side=-1) - ee * tail
    worst = 1 + int(np.argmax(per_shift))
    return HonestIKOSPrivacy(h, eps, max(0.0, low), min(1.0, noise + tv), noise, tv,
                             math.inf if sigma is None else sigma, worst)


def ikos_honest_delta(proto, h: int, eps: float) -> HonestIKOSPrivacy:
    """δ(ε) of the IKOS comparison mechanism with only h honest Pólya shares, plus the IKOS TV term with h
    users, σ(h) from the reconstructed eq. (4) with m − 1 shares (docs/theory.md#dishonest-honest;
    :func:`polya_honest_delta` with the protocol's α, p, q)."""
    from shufflesim.core.checks import check_int
    from shufflesim.protocols.ikos_sum import ikos_sigma_improved

    if proto.name != "ikos-sum":
        raise NotApplicableError("ikos_honest_delta is for ikos-sum")
    prm = proto.parameters
    h = check_int("honest", h, minimum=3, maximum=prm.n)
    return polya_honest_delta(prm.alpha, prm.p, proto.randomiser.n_users, h, eps, q=prm.q,
                              sigma=ikos_sigma_improved(h, prm.q, prm.m - 1))


def honest_eps_interval(delta_at, delta: float, eps_start: float, tol: float = 1e-6, *,
                        noise_only: bool = False) -> tuple[float, float]:
    """[ε_lower, ε_upper] at ``delta`` from ``delta_at(ε)`` (a :class:`HonestIKOSPrivacy`) by bisection (both
    ends certified: δ_upper(ε_upper) ≤ δ and δ_lower(ε_lower) ≥ δ, or ε_lower = 0).  ε_upper = inf when no
    ε ≤ 700 is certified.  ``noise_only``: the noise's δ alone (without the IKOS statistical-distance term)."""
    from shufflesim.core.checks import check_real

    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)

    def bisect(f) -> float:  # smallest ε on the grid with f(ε) ≤ δ, f non-increasing
        lo, hi = 0.0, eps_start
        while f(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 700.0:
                return math.inf
        while hi - lo > tol * max(hi, 1e-12):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) > delta else (lo, mid)
        return hi

    which = "noise_delta_upper" if noise_only else "delta_upper"
    upper = bisect(lambda e: getattr(delta_at(e), which))
    if not math.isfinite(upper):
        return 0.0, upper
    # the largest ε with δ_lower(ε) ≥ δ is a certified lower end
    f_low = lambda e: delta_at(e).delta_lower  # noqa: E731
    if f_low(0.0) < delta:
        return 0.0, upper
    lo, hi = 0.0, upper
    while hi - lo > tol * max(hi, 1e-12):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f_low(mid) >= delta else (lo, mid)
    return lo, upper


def ikos_honest_eps(proto, h: int, delta: float, tol: float = 1e-6, *, noise_only: bool = False) -> tuple[float, float]:
    """[ε_lower, ε_upper] at ``delta`` from :func:`ikos_honest_delta` (:func:`honest_eps_interval`).  ε_upper =
    inf when no ε ≤ 700 is certified (the IKOS term (1 + e^ε)2^{−σ} grows with ε, so a δ below it is never
    reached)."""
    return honest_eps_interval(lambda e: ikos_honest_delta(proto, h, e), delta, proto.parameters.eps, tol,
                               noise_only=noise_only)


# --- the defence: tolerate a fraction F of absent or noiseless users (docs/theory.md#dishonest-tolerate) --------
def ikos_tolerant(proto, fraction: float, *, raise_messages: bool = False):
    """A copy of an ikos-sum protocol whose users add Pólya(1/h0, α) − Pólya(1/h0, α), h0 = ⌈(1 − F)·n⌉.

    Any h ≥ h0 honest shares then sum to DLap(α) plus independent noise Pólya((h − h0)/h0)-differences,
    a post-processing of the DLap mechanism: the comparison mechanism stays ε-DP (seed 004 §8's defence,
    "increase the overall noise by a constant factor"); the noise variance grows by n/h0 ≈ 1/(1 − F).
    Only :func:`attacked_estimate`/:func:`simulate_attack` and the functions of this module know the copy
    (its ``sample_fast`` is the undefended protocol's; its ``noise_mse``, hence ``mse_*``, the defended's).

    ``raise_messages``: also raise the messages per user to the fewest m' ≥ m whose IKOS term with h0 honest
    users, (1 + e^ε)2^{−σ(h0, m'−1)}, plus the remaining noise's certified δ(ε) stays within the protocol's δ
    (σ shrinks with the number of honest users: the noise alone does not restore the (ε, δ) claim).
    """
    import copy
    import dataclasses

    from shufflesim.core.checks import check_real

    if proto.name != "ikos-sum":
        raise NotApplicableError("the --tolerate defence is implemented for ikos-sum only in this slice")
    f = check_real("tolerate", fraction, low=0.0, high=1.0, high_open=True)
    h0 = max(1, math.ceil((1.0 - f) * proto.n - 1e-9))
    if raise_messages:
        from shufflesim.pipeline import registry
        from shufflesim.protocols.ikos_sum import MAX_MESSAGES, ikos_sigma_improved

        prm = proto.parameters
        noise = polya_honest_delta(prm.alpha, prm.p, h0, h0, prm.eps).noise_delta_upper
        m = prm.m
        while noise + math.exp(math.log1p(math.exp(prm.eps)) - ikos_sigma_improved(h0, prm.q, m - 1) * math.log(2.0)) \
                > prm.delta:
            m += 1
            if m > MAX_MESSAGES:
                raise NotApplicableError(f"tolerating F={f:g} needs more than {MAX_MESSAGES} messages per user")
        if m != prm.m:
            proto = registry.create("ikos-sum", proto.n, eps=prm.eps, p=prm.p, q=prm.q, messages=m,
                                    variant=prm.variant)
    out = copy.copy(proto)
    out.randomiser = dataclasses.replace(proto.randomiser, n_users=h0)
    out.params = dict(proto.params, tolerate=f, noise_users=h0)
    # the exact MSE formulas (mse_expected, mse_worst, mse_bound) read the noise term from noise_mse(): the
    # defended noise's (n/h0)·Var DLap/p² (their overflow check still uses DLap(α)'s tail)
    out.noise_mse = _FixedPrivacy(ikos_noise_mse(out))
    return out


def ikos_noise_mse(proto) -> float:
    """Noise part of the MSE of the sum with every user honest: (n/h0)·Var DLap(α)/p², h0 = the design count."""
    prm = proto.parameters
    r = prm.n / proto.randomiser.n_users
    return r * 2.0 * prm.alpha / ((1.0 - prm.alpha) ** 2 * prm.p**2)


def tolerated_count(n: int, fraction: float) -> int:
    """h0 = ⌈(1 − F)·n⌉ (at least 1): the fewest honest users a defence tolerating a fraction F must cover."""
    from shufflesim.core.checks import check_real

    f = check_real("tolerate", fraction, low=0.0, high=1.0, high_open=True)
    return max(1, math.ceil((1.0 - f) * n - 1e-9 * n))


#: the mechanism kinds whose local parameter ``tolerant_mechanism`` calibrates: (field, increasing δ in it,
#: search interval)
TOLERATE_KINDS = {"rr2": ("eps0", True), "clones": ("eps0", True), "krr": ("gamma", False)}


@dataclass(frozen=True)
class Tolerance:
    """A defence calibrated so that the target (ε, δ) holds whenever at least ``h0`` of the ``n`` users are
    honest (docs/theory.md#dishonest-tolerate).

    ``base``/``defended``: the undefended and the defended mechanism (or protocol) over all n users;
    ``param``: the calibrated parameter, ``base_value``/``value`` its two values; ``eps_*``: certified
    [lower, upper] ε at ``delta`` — of the defended at h0 honest (upper ≤ ``target_eps``: the certificate),
    of the undefended at h0 (what the attack leaves without the defence) and at n; ``mse_base``/``mse_defended``:
    the exact worst-case MSE of the estimator built on it (``mse_what`` says which), their ratio the price.
    """

    kind: str
    n: int
    fraction: float
    h0: int
    target_eps: float
    delta: float
    param: str
    base_value: float
    value: float
    eps_defended_h0: tuple[float | None, float]
    eps_base_h0: tuple[float | None, float]
    eps_base_n: tuple[float | None, float]
    delta_defended_h0: float
    delta_base_h0: float
    mse_base: float | None
    mse_defended: float | None
    mse_what: str
    base: object = None
    defended: object = None
    eps_what: str = "certified [lower, upper] eps at delta (tight accountant)"

    @property
    def certified(self) -> bool:
        """The certificate: the defended mechanism among h0 honest users has certified δ_upper(target ε) ≤ δ, or
        a certified ε_upper(δ) ≤ the target ε (δ_upper(ε_upper) ≤ δ was evaluated, and δ(ε) does not increase
        in ε).  For IKOS only the first counts (its ``eps_*`` are the noise's alone)."""
        if self.delta_defended_h0 <= self.delta:
            return True
        return self.kind != "ikos-sum" and self.eps_defended_h0[1] <= self.target_eps

    @property
    def mse_ratio(self) -> float | None:
        if self.mse_base is None or self.mse_defended is None:
            return None
        return self.mse_defended / self.mse_base

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("kind", "n", "fraction", "h0", "target_eps", "delta", "param",
                                            "base_value", "value", "mse_base", "mse_defended", "mse_what")}
        for k in ("eps_defended_h0", "eps_base_h0", "eps_base_n"):
            d[k] = list(getattr(self, k))
        d.update(delta_defended_h0=self.delta_defended_h0, delta_base_h0=self.delta_base_h0, eps_what=self.eps_what,
                 mse_ratio=self.mse_ratio, certified=self.certified)
        return d


def _eps_at(mech, delta: float, method: str | None = None) -> tuple[float | None, float]:
    from shufflesim.accounting.account import account

    (r,) = account(mech, delta=[delta], method=method).results
    if not getattr(r, "applicable", True):
        raise NotApplicableError(f"the accountant cannot answer for {mech.kind}: {r.reason}")
    return r.eps_lower, r.eps_upper


def _delta_at(mech, eps: float, method: str | None = None) -> float:
    from shufflesim.accounting.account import certified_delta_upper

    return certified_delta_upper(mech, eps, method=method)


def _mechanism_mse(mech) -> tuple[float | None, str]:
    """The exact worst-case MSE of the estimator the protocols build on this mechanism (module docstring)."""
    from shufflesim.pipeline import registry

    if mech.kind == "rr2":
        return registry.create("local-rr-sum", mech.n, eps=mech.eps0).mse_worst(), \
            "worst-case MSE of the debiased sum of n bits (local-rr-sum at eps0)"
    if mech.kind == "clones":
        return registry.create("local-laplace-sum", mech.n, eps=mech.eps0).mse_worst(), \
            "MSE of the sum with the Laplace randomiser at eps0 (local-laplace-sum; clones covers every eps0-LDP one)"
    if mech.kind == "krr":
        return registry.create("krr", mech.n, k=mech.k, gamma=mech.gamma).mse_worst(), \
            "worst-case MSE of the debiased histogram (krr protocol)"
    return None, "no estimator"


def tolerant_mechanism(mech, fraction: float, delta: float, *, target_eps: float | None = None,
                       method: str | None = None) -> Tolerance:
    """Calibrate the local parameter of a shuffled k-RR-family mechanism (rr2, krr, clones) so that its
    guarantee at ``delta`` holds whenever at least h0 = ⌈(1 − F)n⌉ users are honest: the certified upper end of
    the same mechanism among h0 users (:func:`honest_mechanism`) meets ``target_eps`` (default: the
    undefended mechanism's own certified ε at n honest users).  The search is the project's safe-side
    calibrator (:func:`~shufflesim.accounting.account.calibrate_mechanism`); the certificate is re-read from the
    accountant at the calibrated value (docs/theory.md#dishonest-tolerate)."""
    import dataclasses

    from shufflesim.accounting.account import calibrate_mechanism
    from shufflesim.core.checks import check_real

    kind = getattr(mech, "kind", None)
    if kind not in TOLERATE_KINDS:
        raise NotApplicableError(f"--tolerate calibrates {', '.join(TOLERATE_KINDS)} (the same mechanism among "
                                 f"the honest users); {kind}: " + (
                                     "use the ikos-sum protocol's --tolerate (its noise is distributed)"
                                     if kind in HONEST_NOISE_KINDS else "no local parameter to calibrate"))
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    h0 = tolerated_count(mech.n, fraction)
    base_n = _eps_at(mech, delta, method)
    target = base_n[1] if target_eps is None else check_real("target_eps", target_eps, low=0.0, low_open=True)
    field_name, increasing = TOLERATE_KINDS[kind]
    base_value = float(getattr(mech, field_name))
    if kind == "krr":
        from shufflesim.mechanisms.krr import KRR

        def make(g, m=mech.n):
            return KRR(m, mech.k, g, mech.relation)
        lo, hi = base_value, 1.0
    else:
        def make(e0, m=mech.n):
            return dataclasses.replace(mech, n=m, eps0=e0)
        lo, hi = 1e-6, base_value
    if h0 == mech.n and target_eps is None:
        value = base_value
    else:
        cal = calibrate_mechanism(lambda x: make(x, h0), field_name, target, delta, lo, hi, increasing=increasing,
                                  method=method)
        value = cal.value
    defended = make(value)
    mse_b, what = _mechanism_mse(mech)
    mse_d, _ = _mechanism_mse(defended)
    return Tolerance(kind, mech.n, float(fraction), h0, target, delta, field_name, base_value, value,
                     _eps_at(make(value, h0), delta, method), _eps_at(make(base_value, h0), delta, method), base_n,
                     _delta_at(make(value, h0), target, method), _delta_at(make(base_value, h0), target, method),
                     mse_b, mse_d, what, mech, defended)


class _FixedPrivacy:
    """A protocol method (``privacy``, ``noise_mse``) replaced by a fixed value (picklable, for worker processes)."""

    def __init__(self, guarantee):
        self.guarantee = guarantee

    def __call__(self):
        return self.guarantee


#: protocols whose privacy does not depend on the other users' honesty, and why (the tolerate refusal)
_NOTHING_TO_TOLERATE = {
    "local-rr-sum": "local model: each honest user's report is eps-LDP whatever the others send",
    "local-laplace-sum": "local model: each honest user's report is eps-LDP whatever the others send",
    "central-laplace-sum": "central model: the trusted curator adds all the noise",
    "central-dlap-sum": "central model: the trusted curator adds all the noise",
    "central-laplace-hist": "central model: the trusted curator adds all the noise",
    "central-gaussian-hist": "central model: the trusted curator adds all the noise",
}
#: protocols whose blanket parameter(s) ``tolerant_protocol`` recalibrates for h0 users, and the parameters kept
_RECALIBRATE = {"blanket-sum": ("gamma", ("k",)), "cheu-sum": ("gamma", ("messages",)),
                "recursive-sum": ("gammas", ("precisions",))}


def _fixed_params(proto, name: str, keep) -> dict:
    """The protocol's resolved parameters that stay fixed when its blanket is recalibrated for fewer users."""
    prm = dict(proto.params)
    out = {"eps": prm["eps"], "delta": prm["delta"]}
    for k in ("mode", "adversary", "bennett_variant"):
        if k in prm:
            out[k] = prm[k]
    for k in keep:
        if k == "messages" and name == "cheu-sum":
            out[k] = proto.randomiser.r
        elif k == "precisions":
            out[k] = list(proto.precisions)
        else:
            out[k] = prm[k]
    return out


def tolerant_protocol(proto, fraction: float) -> Tolerance:
    """The protocol calibrated to keep its (ε, δ) target whenever at least h0 = ⌈(1 − F)n⌉ of its n users are
    honest (seed 004 §8's defence; docs/theory.md#dishonest-tolerate), its certificate and its MSE price.

    blanket-sum, cheu-sum, recursive-sum: the blanket probability (per level) calibrated by the protocol's own
    rule for h0 users at the same ε, δ and precisions/messages, then used by all n (extra honest blankets
    only help: the view among h ≥ h0 honest users is a post-processing of... the h0-user view plus independent
    reports); krr: γ calibrated so that k-RR among h0 users meets the ε the undefended protocol reports
    (:func:`tolerant_mechanism`); ikos-sum: :func:`ikos_tolerant` (noise shares designed for h0 users).
    Certified by the accountant: the defended mechanism among h0 honest users (:func:`honest_mechanism`; for
    IKOS the exact remaining noise law, :func:`ikos_honest_eps`) has ε_upper ≤ the target.  The MSE price is the
    ratio of the exact worst-case MSEs (IKOS: rounding + noise terms).  Local and central protocols are refused
    (their guarantee does not depend on the other users).
    """
    from shufflesim.accounting.results import PrivacyGuarantee
    from shufflesim.pipeline import registry

    name = proto.name
    n = proto.n
    if name in _NOTHING_TO_TOLERATE:
        raise NotApplicableError(f"--tolerate: nothing to calibrate for {name} ({_NOTHING_TO_TOLERATE[name]})")
    h0 = tolerated_count(n, fraction)
    if name == "krr":
        # γ calibrated against the protocol's own certified ε among h0 users (its best pair: the stronger clone
        # pair, the strong and, up to n = 2e4, the weak adversary's pair), by the safe-side calibrator
        from shufflesim.accounting.calibrate import calibrate

        g, adv = proto.privacy(), proto.params["adversary"]

        def eps_h0(gm: float, m: int = h0) -> float:
            return registry.create("krr", m, k=proto.k, gamma=gm, delta=g.delta, adversary=adv).privacy().eps

        cal = calibrate(eps_h0, g.eps, proto.gamma, 1.0 - 1e-9, increasing=False, xtol=0.0, rtol=1e-5)
        defended = registry.create("krr", n, k=proto.k, gamma=cal.x, delta=g.delta, adversary=adv)
        tol = Tolerance(name, n, float(fraction), h0, g.eps, g.delta, "gamma", proto.gamma, cal.x,
                        (None, cal.value), (None, eps_h0(proto.gamma)), (None, g.eps),
                        _delta_at(honest_mechanism(defended.mechanism(), h0), g.eps),
                        _delta_at(honest_mechanism(proto.mechanism(), h0), g.eps), proto.mse_worst(),
                        defended.mse_worst(), "worst-case MSE of the debiased histogram", proto, defended,
                        "the krr protocol's certified eps at delta (its best pair), upper end only")
    elif name in _RECALIBRATE:
        param, keep = _RECALIBRATE[name]
        fixed = _fixed_params(proto, name, keep)
        g = proto.privacy()
        design = registry.create(name, h0, **fixed)
        defended = registry.create(name, n, **fixed, **{param: _param(design, param)})
        mech = defended.mechanism()
        tol = Tolerance(name, n, float(fraction), h0, g.eps, g.delta, param, _scalar_param(proto, param),
                        _scalar_param(defended, param), _eps_at(honest_mechanism(mech, h0), g.delta),
                        _eps_at(honest_mechanism(proto.mechanism(), h0), g.delta),
                        _eps_at(proto.mechanism(), g.delta), _delta_at(honest_mechanism(mech, h0), g.eps),
                        _delta_at(honest_mechanism(proto.mechanism(), h0), g.eps), proto.mse_worst(),
                        defended.mse_worst(),
                        "exact worst-case MSE of the sum", proto, defended)
    elif name == "ikos-sum":
        defended = ikos_tolerant(proto, fraction, raise_messages=True)
        prm = proto.parameters
        rounding = n / (4.0 * prm.p**2)
        tol = Tolerance(name, n, float(fraction), h0, prm.eps, prm.delta, "noise_users", float(n), float(h0),
                        ikos_honest_eps(defended, h0, prm.delta, noise_only=True),
                        ikos_honest_eps(proto, h0, prm.delta, noise_only=True),
                        ikos_honest_eps(proto, n, prm.delta, noise_only=True),
                        ikos_honest_delta(defended, h0, prm.eps).delta_upper,
                        ikos_honest_delta(proto, h0, prm.eps).delta_upper, rounding + ikos_noise_mse(proto),
                        rounding + ikos_noise_mse(defended),
                        "worst-case rounding + noise MSE of the sum, n/(4p^2) + (n/h0) Var DLap/p^2 (the overflow "
                        "term, of order 2^-sigma, left out)", proto, defended,
                        "certified [lower, upper] eps at delta of the remaining Polya noise alone (the IKOS "
                        "statistical-distance term is in delta_*_h0)")
    else:
        raise NotApplicableError(f"--tolerate is implemented for krr, {', '.join(_RECALIBRATE)} and ikos-sum; "
                                 f"{name}: no calibrated noise to scale")
    note = (f"tolerate F={tol.fraction:g}: the target holds whenever at least {h0} of {n} users are honest "
            f"(certified eps_upper {tol.eps_defended_h0[1]:.6g} at {h0} honest users; undefended: "
            f"{tol.eps_base_h0[1]:.6g}); MSE price x{tol.mse_ratio:.4g}")
    base_g = proto.privacy()
    own = tol.defended.privacy()  # the defended protocol's own notes (its blanket, messages) at n honest users
    method = f"{base_g.method}; tolerates {n - h0} of {n} users dishonest"
    if name == "ikos-sum":
        method = f"{base_g.method}; noise tolerates {n - h0} of {n} users absent"
    tol.defended.privacy = _FixedPrivacy(PrivacyGuarantee(tol.target_eps, tol.delta, method,
                                                          (*(own.notes if own is not None else ()), note)))
    tol.defended.params = dict(tol.defended.params, tolerate=tol.fraction, honest_min=h0)
    return tol


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def _param(proto, name: str):
    return list(proto.params[name]) if name == "gammas" else proto.params[name]


def _scalar_param(proto, name: str) -> float:
    """The calibrated parameter as one number (recursive: the smallest level's γ)."""
    v = proto.params[name]
    return float(min(v)) if name == "gammas" else float(v)


def honest_privacy(proto, honest, delta: float | None = None):
    """The protocol's guarantee when only ``honest`` (a count or a fraction) of its n users are honest, as a
    :class:`~shufflesim.accounting.results.PrivacyGuarantee` (ε = the certified upper end at the protocol's δ)
    whose method says "M of N users honest" (docs/theory.md#dishonest-honest): the same mechanism among the
    honest users (shuffled protocols), the remaining Pólya noise (ikos-sum), unchanged (local and central
    protocols: their noise does not depend on the others)."""
    from shufflesim.accounting.results import PrivacyGuarantee

    base = proto.privacy()
    if base is None:
        raise NotApplicableError(f"{proto.name} states no central guarantee")
    n = proto.n
    m = honest_count(honest, n)
    delta = base.delta if delta is None else delta
    what = f"{m} of {n} users honest"
    if proto.name in _NOTHING_TO_TOLERATE:
        return PrivacyGuarantee(base.eps, base.delta, f"{base.method}; {what}",
                                (*base.notes, f"{what}: unchanged ({_NOTHING_TO_TOLERATE[proto.name]})"))
    if proto.name == "ikos-sum":
        lo, up = ikos_honest_eps(proto, m, delta)
        return PrivacyGuarantee(up, delta, f"ikos remaining Polya noise; {what}",
                                (f"{what}: eps in [{lo:.6g}, {up:.6g}] at delta={delta:.3g} (the noise of {m} "
                                 f"shares designed for {proto.randomiser.n_users} users, exact law; IKOS term with "
                                 f"{m} users)",))
    if proto.name == "krr":  # the protocol among m users, certified as the protocol certifies itself
        from shufflesim.pipeline import registry

        g = registry.create("krr", m, k=proto.k, gamma=proto.gamma, delta=delta,
                            adversary=proto.params["adversary"]).privacy()
        return PrivacyGuarantee(g.eps, delta, f"{g.method}; {what}",
                                (f"{what}: the same protocol among the {m} honest users (the others' reports are "
                                 "known)", *g.notes))
    mech = proto.mechanism()
    if mech is None:
        raise NotApplicableError(f"{proto.name} describes no mechanism to account")
    lo, up = _eps_at(honest_mechanism(mech, m), delta)
    return PrivacyGuarantee(up, delta, f"tight; {what}",
                            (f"{what}: the same mechanism among the {m} honest users (the others' reports are "
                             f"known): eps in [{'n/a' if lo is None else f'{lo:.6g}'}, {up:.6g}]",))


def coalition_table(proto, data, sizes, strategies=STRATEGIES, *, trials: int = 200, seed: RngLike = 0,
                    direction: int = 1, **kw) -> list[dict]:
    """Bias and MSE against coalition size: one record per (c, strategy) with the derived bias
    (:func:`expected_bias`), the simulated mean bias and its standard error, and the simulated MSE
    (the rows of the 'bias vs coalition size' plot; trial t of cell (i, j) uses child (i, j, t) of ``seed``)."""
    root = as_seed_sequence(seed)
    t = truth(proto, data, kw.get("target", 0))
    rows = []
    for i, c in enumerate(sizes):
        for j, strategy in enumerate(strategies):
            est = simulate_attack(proto, data, int(c), strategy, trials, child(root, i, j), direction=direction, **kw)
            err = est - t
            try:
                derived = expected_bias(proto, data, int(c), strategy, direction=direction, **kw)
            except NotApplicableError:
                derived = math.nan
            rows.append({"protocol": proto.name, "c": int(c), "strategy": strategy, "direction": direction,
                         "bias_derived": derived, "bias_measured": float(err.mean()),
                         "bias_se": float(err.std(ddof=1) / math.sqrt(err.size)) if err.size > 1 else math.nan,
                         "mse_measured": float(np.mean(err * err)), "trials": int(trials)})
    return rows
