"""Populations, not just users: a protocol run by an honest population plus a deviating coalition
(issue 23; seed 004 §8; docs/theory.md#dishonest).

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
:func:`attacked_estimate` runs the protocol's own randomiser (for the honest users, vectorised), the
strategy's messages for the coalition (vectorised), the protocol's shuffler and analyser.  With c = 0 it
reproduces :meth:`Protocol.run` bit for bit (same seed streams).

Monte-Carlo trials under attack (``simulate --dishonest``, sweeps, scenarios): :class:`Coalition` (the
coalition's size and strategy), :func:`attack_records` (the records of a range of trials, faithful or fast
engine).  The fast engine under attack (:func:`attack_fast_block`) splits the population: the honest n − c
users' estimate drawn by the protocol's own fast engine for n − c users, plus the coalition's contribution
(see that function).  This module sits in the experiments layer (the sweep engine runs attacked points);
:mod:`shufflesim.validation.dishonest` re-exports it with the privacy-left and defence functions.

Estimand: the sum Σ x (summation protocols) and the debiased count of category ``target`` (k-RR).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shufflesim.core.rng import RngLike, as_seed_sequence, child, trial_seed
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.polya import additive_shares, polya_logpmf, reduce_mod, sample_polya
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


def check_supported(proto, strategy: str | None = None) -> None:
    """Refuse a protocol the dishonest-user analysis does not cover (NotApplicableError) or an unknown strategy."""
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
    check_supported(proto)
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
def split_coalition(proto, data, c: int):
    """(coalition inputs, honest inputs, c): the first ``c`` users of the checked ``data`` form the coalition."""
    data = proto.check_data(data)
    c = int(c)
    if not 0 <= c <= proto.n:
        raise ParameterError(f"the coalition size c must lie in [0, n={proto.n}]; got {c}")
    return data[:c], data[c:], c


def dishonest_messages(proto, xd, strategy, direction, target, magnitude, shift, rng) -> np.ndarray | None:
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


def target_estimate(proto, raw, target: int) -> float:
    """The scalar estimate the attack moves: the analyser's point estimate (krr: its count of ``target``)."""
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
    check_supported(proto, strategy)
    xd, xh, c = split_coalition(proto, data, c)
    s = as_seed_sequence(seed)
    gen_honest = np.random.Generator(np.random.PCG64(child(s, RANDOMISER_STREAM)))
    honest = np.asarray(proto.randomiser.randomise(xh, gen_honest))
    if honest.ndim == 1:
        honest = honest[:, None]
    bad = dishonest_messages(proto, xd, strategy, direction, target, magnitude, shift,
                             np.random.Generator(np.random.PCG64(child(s, DISHONEST_STREAM))))
    messages = honest if bad is None or c == 0 else np.concatenate([np.asarray(bad, dtype=honest.dtype), honest])
    view = proto.shuffler.shuffle(messages, child(s, SHUFFLER_STREAM))
    raw = proto.analyser.analyse(view, np.random.Generator(np.random.PCG64(child(s, ANALYSER_STREAM))))
    return target_estimate(proto, raw, target)


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
    check_supported(proto, strategy)
    xd, xh, c = split_coalition(proto, data, c)
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
    elif strategy == "push" and c:  # no coalition, no shift
        s = ikos_push_shift(proto, direction) if shift is None else int(shift)
    if h == 0:
        z, pmf = np.zeros(1, dtype=np.int64), np.ones(1)
    else:
        z, pmf, _ = remaining_noise_pmf(h, proto.randomiser.n_users, prm.alpha)
    return _ikos_expected_decoded(R, s, prm.q, z, pmf) / prm.p


def expected_bias(proto, data, c: int, strategy: str, **kw) -> float:
    """E[estimate] − the population's true estimand (the coalition's true inputs included)."""
    return expected_estimate(proto, data, c, strategy, **kw) - truth(proto, data, kw.get("target", 0))



# --- Monte-Carlo trials under attack (simulate --dishonest, sweeps, scenarios) -------------------------------
@dataclass(frozen=True)
class Coalition:
    """A deviating coalition: ``size`` users (the first ones of the data) following ``strategy``.

    ``direction`` (±1) and ``target`` (k-RR's category) as in :func:`attacked_estimate`; ``magnitude`` is the
    local-Laplace push message, ``shift`` IKOS's residue (None: :func:`ikos_push_shift`)."""

    size: int
    strategy: str = "push"
    direction: int = 1
    target: int = 0
    magnitude: float = LAPLACE_PUSH
    shift: int | None = None

    @property
    def kwargs(self) -> dict:
        """The keyword arguments of :func:`attacked_estimate` and :func:`expected_bias`."""
        return {"direction": self.direction, "target": self.target, "magnitude": self.magnitude, "shift": self.shift}


def coalition_size(value, n: int) -> int:
    """The coalition's size from ``--dishonest C``: a count (an integer 0..n) or a fraction in (0, 1) of n,
    rounded down (⌊C·n⌋: "at most a fraction C of the users")."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"dishonest must be a count or a fraction in (0, 1); got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise ParameterError(f"dishonest must be a count in [0, n={n}] or a fraction in (0, 1); got {value!r}")
    if 0.0 < v < 1.0:
        return int(math.floor(v * n + 1e-9))
    if v != math.floor(v):
        raise ParameterError(f"dishonest must be a whole count of users or a fraction in (0, 1); got {value!r}")
    c = int(v)
    if c > n:
        raise ParameterError(f"dishonest={c} users is more than the n={n} users of the population")
    return c


def check_coalition(proto, coalition: Coalition) -> Coalition:
    """Refuse a coalition the protocol does not support (one-line :class:`ParameterError` /
    :class:`NotApplicableError`)."""
    if proto.name not in PROTOCOLS:
        raise NotApplicableError(f"--dishonest is implemented for {', '.join(PROTOCOLS)}; not for {proto.name} "
                                 "(its analyser and message space have no dishonest-user model yet)")
    if coalition.strategy not in STRATEGIES:
        raise ParameterError(f"strategy must be one of {', '.join(STRATEGIES)}; got {coalition.strategy!r}")
    if coalition.direction not in (1, -1):
        raise ParameterError(f"direction must be +1 or -1; got {coalition.direction!r}")
    if not 0 <= int(coalition.size) <= proto.n:
        raise ParameterError(f"the coalition size must lie in [0, n={proto.n}]; got {coalition.size}")
    if proto.name == "krr":
        if not 0 <= int(coalition.target) < proto.k:
            raise ParameterError(f"target must be a category in [0, {proto.k}); got {coalition.target}")
    elif coalition.target != 0:
        raise ParameterError("target applies to krr only (the summation protocols estimate one sum)")
    return coalition


def _with_n(proto, n: int):
    """A shallow copy of ``proto`` whose size (and its analyser's) is ``n``: its fast engine then draws the
    n inputs it is given and debiases for n (the additive split of :func:`attack_fast_block`)."""
    sub = copy.copy(proto)
    sub.n = int(n)
    an = copy.copy(proto.analyser)
    if hasattr(an, "n"):
        an.n = int(n)
    sub.analyser = an
    sub.__dict__.pop("_fast_cache", None)
    return sub


def _fast_estimates(proto, x: np.ndarray, rng: np.random.Generator, size: int, target: int) -> np.ndarray:
    """``size`` estimates of the protocol run honestly by the users ``x``, debiased for len(x) users, from the
    protocol's own exact fast engine (``sample_fast_batch``; k-RR: the target's count of its histogram sampler)."""
    from shufflesim.pipeline.fast import DataSummary, rr_histogram_batch

    h = int(x.shape[0])
    if h == 0:
        return np.zeros(size)
    if proto.name == "krr":
        counts = np.bincount(x, minlength=proto.k).astype(np.int64)
        hist = rr_histogram_batch(counts, proto.gamma, proto.k, rng, size)
        return (hist[:, target] - h * proto.gamma / proto.k) / (1.0 - proto.gamma)
    sub = proto if h == proto.n else _with_n(proto, h)
    return np.asarray(sub.sample_fast_batch(DataSummary.of(x, "real"), 0.0, rng, size)["error"], dtype=float)


def _coalition_term(proto, messages, c: int, target: int) -> float:
    """What the coalition's ``messages`` (None: a dropout) add to the estimate of a linear analyser: the
    analyser of a c-user copy applied to them alone (the debiasing offsets are linear in n, so the estimate of
    n users is the honest n − c users' estimate plus this)."""
    sub = _with_n(proto, c)
    m = proto.randomiser.messages_per_user
    if messages is None:
        messages = np.zeros((0, m), dtype=float if proto.name == "local-laplace-sum" else np.int64)
    messages = np.asarray(messages)
    if messages.ndim == 1:
        messages = messages[:, None]
    # the protocol's own shuffler (its channels); the order is irrelevant to these analysers' sums and counts
    view = proto.shuffler.shuffle(messages, np.random.SeedSequence(0))
    return target_estimate(sub, sub.analyser.analyse(view, np.random.Generator(np.random.PCG64(0))), target)


def attack_fast_block(proto, data, coalition: Coalition, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` attacked estimates drawn exactly without simulating every message (the fast engine under attack).

    * ``extreme-input``: the coalition follows the protocol with its extreme input, so the population is an
      honest one with modified data: the protocol's own fast engine on it.
    * linear analysers (blanket, recursive, Cheu, local RR, local Laplace, k-RR's counts): the estimate is the
      honest n − c users' estimate (the fast engine of an (n − c)-user copy) plus the coalition's term
      (:func:`_coalition_term`): a constant for ``push`` and ``dropout``; for ``withhold-noise`` the coalition's
      own messages (only their randomised rounding is random) are drawn per trial (a loop over trials, O(c)
      each: the honest users stay vectorised).
    * IKOS: the honest users' rounded total (binomials) plus their Pólya shares, which sum to
      Pólya(h/n, α) − Pólya(h/n, α) (docs/theory.md#dishonest-polya), plus the coalition's residue (the shift
      s, its rounded total without noise, or nothing), decoded mod q as the analyser does.
    """
    from shufflesim.pipeline.fast import rounded_total_batch

    x = proto.check_data(data)
    co = check_coalition(proto, coalition)
    c, strategy, up = int(co.size), co.strategy, co.direction > 0
    xd, xh = x[:c], x[c:]
    if strategy == "extreme-input":
        x2 = x.copy()
        if proto.name == "krr":
            x2[:c] = co.target if up else (co.target + 1) % proto.k
        else:
            x2[:c] = 1.0 if up else 0.0
        if proto.name == "ikos-sum":
            cols = proto.sample_fast_batch(_summary(x2), 0.0, rng, size)
            return np.asarray(cols["error"], dtype=float)
        return _fast_estimates(proto, x2, rng, size, co.target)
    if proto.name == "ikos-sum":
        prm = proto.parameters
        if prm.q >= 1 << 62:  # the noisy total is held in int64 before its reduction mod q
            raise NotApplicableError(f"the fast engine under attack needs q < 2^62 (got q={prm.q}); use --engine "
                                     "faithful")
        h = proto.n - c
        tot = np.zeros(size, dtype=np.int64)
        if h:
            s_h = _summary(xh)
            tot += rounded_total_batch(s_h.values, s_h.counts, prm.p, rng, size)
            r = h / proto.randomiser.n_users
            tot += sample_polya(r, prm.alpha, size, rng) - sample_polya(r, prm.alpha, size, rng)
        if strategy == "push" and c:
            s = ikos_push_shift(proto, co.direction) if co.shift is None else int(co.shift)
            s %= prm.q
            tot += np.int64(s - prm.q if s > prm.q // 2 else s)  # centred: |s| <= q/2 < 2^61
        elif strategy == "withhold-noise" and c:
            s_d = _summary(xd)
            tot += rounded_total_batch(s_d.values, s_d.counts, prm.p, rng, size)
        total = reduce_mod(tot, prm.q)
        q = np.uint64(prm.q)
        wrapped = total > q // np.uint64(2)
        mag = np.where(wrapped, q - total, total).astype(np.int64)
        return np.where(wrapped, -mag, mag) / prm.p
    honest = _fast_estimates(proto, xh, rng, size, co.target)
    if c == 0:
        return honest
    if strategy == "withhold-noise" and proto.name in ("blanket-sum", "cheu-sum", "local-rr-sum", "recursive-sum"):
        terms = np.array([_coalition_term(proto, dishonest_messages(proto, xd, strategy, co.direction, co.target,
                                                                    co.magnitude, co.shift, rng), c, co.target)
                          for _ in range(size)])
        return honest + terms
    msgs = dishonest_messages(proto, xd, strategy, co.direction, co.target, co.magnitude, co.shift, rng)
    return honest + _coalition_term(proto, msgs, c, co.target)


def _summary(x: np.ndarray):
    from shufflesim.pipeline.fast import DataSummary

    return DataSummary.of(x, "real")


def fast_unsupported(proto) -> str | None:
    """Why the fast engine cannot run ``proto`` under attack (None: it can).  Every protocol of
    :data:`PROTOCOLS` can, except IKOS with q >= 2^62 (its noisy total is held in int64); there the
    attacked trials fall back to the faithful engine (:func:`attack_engine`)."""
    if proto.name == "ikos-sum" and proto.parameters.q >= 1 << 62:
        return f"ikos-sum with q={proto.parameters.q} >= 2^62: the fast engine under attack holds the noisy total in int64"
    return None


def attack_engine(proto, engine: str) -> tuple[str, str | None]:
    """(the engine attacked trials run on, a one-line note when the fast engine fell back to faithful)."""
    from shufflesim.pipeline.fast import resolve_engine

    engine = resolve_engine(proto, engine)
    why = fast_unsupported(proto) if engine == "fast" else None
    if why is not None:
        return "faithful", f"note: the fast engine cannot run this attack ({why}); running the faithful engine"
    return engine, None


def attack_records(proto, data, coalition: Coalition, root: RngLike, point: int, start: int, stop: int,
                   engine: str = "faithful", truth_value: float | None = None) -> dict[str, np.ndarray]:
    """Record columns (``sq_error``, ``error``) of trials ``[start, stop)`` of grid point ``point`` under attack.

    Faithful: trial t is :func:`attacked_estimate` with seed ``trial_seed(root, point, t)`` — for c = 0 the
    protocol's own trial t (:func:`~shufflesim.experiments.montecarlo.run_trial`), bit for bit.  Fast: blocks
    of :data:`~shufflesim.pipeline.fast.FAST_BLOCK` trials from the fast engine's block streams
    (:func:`~shufflesim.pipeline.fast.block_seed`), each drawn by :func:`attack_fast_block`, so the records do
    not depend on the chunking.  ``error`` is the attacked estimate minus the whole population's estimand.
    """
    from shufflesim.pipeline.fast import FAST_BLOCK, block_seed

    root = as_seed_sequence(root)
    x = proto.check_data(data)
    co = check_coalition(proto, coalition)
    t = truth(proto, x, co.target) if truth_value is None else truth_value
    if engine == "fast":
        parts = []
        for b in range(start // FAST_BLOCK, (stop - 1) // FAST_BLOCK + 1):
            gen = np.random.Generator(np.random.PCG64(block_seed(root, point, b)))
            est = attack_fast_block(proto, x, co, gen, FAST_BLOCK)
            lo = b * FAST_BLOCK
            parts.append(est[max(start - lo, 0): min(stop - lo, FAST_BLOCK)])
        est = np.concatenate(parts)
    else:
        est = np.array([attacked_estimate(proto, x, co.size, co.strategy, trial_seed(root, point, tt), **co.kwargs)
                        for tt in range(start, stop)])
    err = est - t
    return {"sq_error": err * err, "error": err}


def derived_bias(proto, data, coalition: Coalition) -> dict:
    """The derived figures printed next to a simulated attack: ``expected`` (the exact expected bias of this
    strategy on these data, :func:`expected_bias`; None where it is not derived, e.g. IKOS with p·x not
    integer), and ``worst_low``/``worst_high``, the bias range any well-formed messages of the c users can
    force in expectation (c·lo − Σ x_coalition, c·hi − Σ x_coalition with [lo, hi] = :func:`influence`; IKOS:
    the decoding window, k-RR: the target count's)."""
    co = check_coalition(proto, coalition)
    x = proto.check_data(data)
    c = int(co.size)
    try:
        expected = expected_bias(proto, x, c, co.strategy, **co.kwargs)
    except NotApplicableError:
        expected = None
    inf = influence(proto)
    own = float(np.sum(x[:c] == co.target)) if proto.name == "krr" else math.fsum(x[:c].tolist())
    if inf.modular:  # any residue: the decoded estimate anywhere in the window (-q/2p, q/2p], whatever c >= 1
        lo, hi = (inf.lo - truth(proto, x), inf.hi - truth(proto, x)) if c else (0.0, 0.0)
    else:
        lo, hi = c * inf.lo - own, c * inf.hi - own
    return {"expected": expected, "worst_low": lo, "worst_high": hi, "per_user_low": inf.lo,
            "per_user_high": inf.hi, "note": inf.note}


# --- sweeps and scenarios: a coalition as grid parameters ------------------------------------------------------
#: the sweep and scenario parameters that describe a coalition rather than the protocol
ATTACK_KEYS = ("dishonest", "strategy", "direction", "target")


def split_attack(params: dict) -> tuple[dict, dict | None]:
    """(protocol parameters, the coalition's parameters or None) of one grid point's parameters."""
    attack = {k: params[k] for k in ATTACK_KEYS if k in params}
    rest = {k: v for k, v in params.items() if k not in ATTACK_KEYS}
    if not attack:
        return rest, None
    if "dishonest" not in attack:
        raise ParameterError(f"{', '.join(attack)} needs dishonest (the coalition's size: a count or a fraction)")
    d = attack["dishonest"]
    if isinstance(d, float) and math.isfinite(d) and (d >= 1.0 or d == 0.0) and d == math.floor(d):
        attack["dishonest"] = int(d)  # a count written as 5.0 (the CLI's numbers) is the count 5
    if attack.get("strategy", "push") not in STRATEGIES:
        raise ParameterError(f"strategy must be one of {', '.join(STRATEGIES)}; got {attack['strategy']!r}")
    return rest, attack


def coalition_of(attack: dict, proto) -> Coalition:
    """The :class:`Coalition` of a point's coalition parameters for ``proto`` (checked)."""
    c = coalition_size(attack["dishonest"], proto.n)
    co = Coalition(c, attack.get("strategy", "push"), int(attack.get("direction", 1)), int(attack.get("target", 0)))
    return check_coalition(proto, co)


def attack_summary(proto, data, coalition: Coalition, attack: dict, bias_ci: tuple) -> dict:
    """A sweep summary row's coalition columns: the parameters, the coalition's size, the measured bias with its
    interval (``bias_ci``: mean, lo, hi, count of the records' ``error``) and the derived figures
    (:func:`derived_bias`); ``mse_expected`` is the honest protocol's, so it is blanked (NaN) here."""
    der = derived_bias(proto, data, coalition)
    b, lo, hi, _ = bias_ci
    return {**{f"param_{k}": v for k, v in attack.items()}, "coalition": coalition.size,
            "bias": b, "bias_lo": lo, "bias_hi": hi,
            "bias_expected": math.nan if der["expected"] is None else der["expected"],
            "bias_worst_low": der["worst_low"], "bias_worst_high": der["worst_high"], "mse_expected": math.nan}
