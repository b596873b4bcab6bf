"""Baselines for real summation (seed 004 §1, §7, Table 3; docs/theory.md#summation-local, docs/theory.md#central).  Inputs x ∈ [0, 1]; the target is
S = Σ x and the error is the squared error of the sum.

* ``cheu-sum``  — Cheu et al. (EUROCRYPT 2019) as seed 004 describes it: randomised rounding of x to
  x̄ ∈ {0..r}, unary encoding into r bits (bit j = 1 iff j ≤ x̄), each bit through binary blanket randomised
  response (keep w.p. 1 − γ, else a uniform bit), all n·r bits through one shuffler; r = ⌈ε√n⌉ by default
  (the message counts of seed 004 Table 3).  Analyser: Ŝ = (Σ y − nrγ/2)/(r(1 − γ)).
  Exact error: Σy_i = x̄_i + Σ_j B_j(U_j − b_j) has E[·|x̄] = (1−γ)x̄ + γr/2 and Var(·|x̄) = rγ(2−γ)/4 for
  every x̄, so a user contributes v_i/r² + γ(2−γ)/(4r(1−γ)²), v_i the rounding variance.
  Privacy ("blanket-binomial", :mod:`shufflesim.mechanisms.cheu`, which ``mechanism()`` returns): an
  upper bound for the adversary who knows the other users' inputs and which of their bits were blanketed;
  γ is the smallest value it certifies (safe-side root finding).
* ``local-rr-sum`` — local model (seed 004 Table 3 "LocalDP"): randomised rounding to a bit, binary
  randomised response with ε (flip probability p = 1/(e^ε + 1)), Ŝ = (Σ y − np)/(1 − 2p).  y is Bernoulli
  with π = p + (1−2p)x, so the exact MSE is Σ π_i(1−π_i)/(1−2p)², worst n(e^ε/(e^ε−1)² + 1/4) at x = ½.
  The bits go through one shuffler, so ``mechanism()`` is shuffled ε-LDP binary randomised response
  (:class:`~shufflesim.mechanisms.rr2.RR2`: its ``tight`` pair bounds every data set of bits, hence their
  mixtures by the rounding): (ε, 0) as claimed, and the amplification below ε.
* ``local-laplace-sum`` — each user sends x + Lap(1/ε); MSE 2n/ε² for every data set.  ``mechanism()``: any
  shuffled ε-LDP randomiser (:class:`~shufflesim.mechanisms.clones.Clones`).
* ``central-laplace-sum`` — a trusted curator adds Lap(1/ε) to Σ x (sensitivity 1); MSE 2/ε² (Table 3
  "CuratorDP").
* ``central-dlap-sum`` — the curator sums the users' randomised roundings at precision p (default ⌈√n⌉,
  as seed 004's experiments), adds DLap(α) with α = e^{−ε/p} (sensitivity p) and divides by p; exact
  MSE Σ v_i/p² + 2α/((1−α)²p²) (docs/theory.md#central), worst n/(4p²) + 2α/((1−α)²p²).  ``mechanism()``:
  :class:`~shufflesim.mechanisms.dlap.CentralDLap` (its exact privacy profile; ε-DP as claimed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shufflesim.core.checks import Precision, check_int, check_real
from shufflesim.accounting.model.results import PrivacyGuarantee
from shufflesim.pipeline.analyser import Analyser
from shufflesim.pipeline.baselines import IdentityRandomiser
from shufflesim.errors import InfeasibleError, ParameterError
from shufflesim.mechanisms.central import CentralLaplace
from shufflesim.accounting.bounds.cheu import cheu_delta, default_tail
from shufflesim.mechanisms.cheu import MAX_CHEU_MESSAGES, MAX_CHEU_NR, CheuSum, check_cheu_size
from shufflesim.mechanisms.clones import Clones
from shufflesim.mechanisms.dlap import CentralDLap
from shufflesim.mechanisms.rr2 import RR2
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.protocol import Protocol
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.registry import register
from shufflesim.maths.rounding import grid_dtype, randomised_round, rounding_variance
from shufflesim.pipeline.shuffler import SingleShuffler, TrustedCurator, View
from shufflesim.pipeline.spaces import IntegerRange, RealNumbers

from shufflesim.protocols._blanket import DELTA_OPTION, GAMMA_MAX, default_delta

__all__ = [
    "cheu_messages",
    "cheu_delta",
    "cheu_gamma",
    "CheuRandomiser",
    "CheuAnalyser",
    "CheuSumProtocol",
    "LocalRRSumProtocol",
    "LocalLaplaceSumProtocol",
    "CentralLaplaceSumProtocol",
    "CentralDLapSumProtocol",
    "local_rr_worst_mse",
]

EPS_REQUIRED = Option("eps", float, "central epsilon > 0 (required)")


#: smallest eps the noise baselines accept: the noise scale 1/eps and the error ~ n/eps^2 of a smaller eps
#: overflow double precision (the answer would be inf/NaN, not a number)
MIN_EPS = 1e-100
EPS_PRECISION_NOISE = Precision(low=MIN_EPS, below="the noise scale 1/eps and the error ~ n/eps^2 overflow double "
                                "precision")


def _eps(eps) -> float:
    if eps is None:
        raise ParameterError("this protocol needs --eps (epsilon > 0)")
    return check_real("eps", eps, low=0.0, low_open=True, precise=EPS_PRECISION_NOISE)


class _RealSum(Protocol):
    data_kind = "real"

    def truth(self, data: np.ndarray) -> float:
        return float(np.sum(data))

    def truth_from_summary(self, summary) -> float:
        """Σ x from the data's multiset (data given as counts, issue 21)."""
        from shufflesim.pipeline.fast import summary_total

        return summary_total(summary)

    def mse_worst(self) -> float:
        return self.mse_expected(None)

    def privacy(self) -> PrivacyGuarantee:
        return self._privacy


# ---------------------------------------------------------------------------------------------------
# Cheu et al.: unary encoding, binary RR per bit, one shuffler
# ---------------------------------------------------------------------------------------------------


def cheu_messages(n: int, eps: float) -> int:
    """r = ⌈ε√n⌉ (the message counts of seed 004 Table 3), at least 1."""
    x = eps * math.sqrt(n) - 1e-12
    return max(1, math.ceil(x)) if x < MAX_PAPER_MESSAGES else MAX_PAPER_MESSAGES  # eps = 1e308: no inf to ceil


#: cheu_messages' value beyond which it is reported as this (a huge eps; the r used is capped far below anyway)
MAX_PAPER_MESSAGES = 2**62
#: the δ range where cheu-sum's bound keeps double precision: its tail charge 10⁻⁶·δ must stay a positive double
CHEU_DELTA_PRECISION = Precision(low=1e-300, below="the bound's tail charge 1e-6*delta underflows double precision")


def cheu_tail(n: int, delta: float) -> float:
    """Mass of M below the bound's first bin (charged δ = 1): :func:`~shufflesim.accounting.bounds.cheu.default_tail`,
    and at most a millionth of the δ asked for."""
    return min(default_tail(n), 1e-6 * delta)


def _gamma_guess(n: int, r: int, eps: float, delta: float) -> float:
    """Where the search starts: the Gaussian mechanism's calibration for the count of ones (sensitivity r,
    variance ≈ n·r·γ/2): γ ≈ 4r·log(1.25/δ)/(n·ε²) -- only where the search looks, never what it accepts."""
    return 4.0 * r * math.log(1.25 / delta) / (n * eps * eps)


@lru_cache(maxsize=64)
def cheu_gamma(n: int, r: int, eps: float, delta: float) -> float:
    """Smallest γ whose :func:`cheu_delta` is ≤ δ (safe-side root finding on log δ, relative bracket 1e-4);
    InfeasibleError if γ → 1.  The search first tries the bracket [g/4, 4g] around :func:`_gamma_guess` (kept
    only when δ brackets the target there: above at g/4, below at 4g), else [1e-4, GAMMA_MAX] as before."""
    from shufflesim.accounting.numerics.invert import calibrate

    tail = cheu_tail(n, delta)

    def fn(g):  # log δ: the same order as δ (the safe side is unchanged), nearly linear in log γ for the secant
        d = cheu_delta(n, r, g, eps, tail=tail)
        return math.log(d) if d > 0 else -math.inf

    target = math.log(delta)
    opts = dict(increasing=False, xtol=0.0, rtol=1e-4, log_scale=True, max_evals=60)
    g0 = _gamma_guess(n, r, eps, delta)
    lo, hi = max(1e-4, g0 / 4.0), min(GAMMA_MAX, 4.0 * g0)
    cal = None
    if lo < hi:
        try:
            cal = calibrate(fn, target, lo, hi, **opts)
        except InfeasibleError:  # even 4·g0 does not certify: the full search
            cal = None
        if cal is not None and cal.x == lo and lo > 1e-4:  # lo already certifies: the root lies below the guess
            cal = None
    if cal is None:
        try:
            cal = calibrate(fn, target, 1e-4, GAMMA_MAX, **opts)
        except InfeasibleError:
            raise InfeasibleError(f"cheu-sum: no blanket gamma < 1 certifies ({eps:.6g}, {delta:.3g})-DP with n={n}, "
                                  f"r={r} messages") from None
    if cal.x >= GAMMA_MAX:
        raise InfeasibleError(f"cheu-sum: ({eps:.6g}, {delta:.3g})-DP with n={n}, r={r} needs gamma -> 1")
    return float(cal.x)


@dataclass(frozen=True, eq=False)
class CheuRandomiser(LocalRandomiser):
    """Randomised rounding to {0..r}, unary encoding into r bits, binary blanket RR on each bit."""

    r: int
    gamma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages_per_user", self.r)
        object.__setattr__(self, "message_space", IntegerRange(0, 1))
        object.__setattr__(self, "eps0", math.log1p(2.0 * (1.0 - self.gamma) / self.gamma))

    #: bits drawn per chunk of users (bounds the temporary float arrays to ~32 MB)
    chunk_bits: int = 1 << 22

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        # blanket-then-uniform flips each bit independently with probability γ/2
        xbar = randomised_round(x, self.r, rng, dtype=np.int64)
        n = xbar.shape[0]
        out = np.empty((n, self.r), dtype=np.uint8)
        pos = np.arange(1, self.r + 1)
        step = max(1, self.chunk_bits // self.r)
        for s in range(0, n, step):  # chunks of users, each vectorised
            e = min(n, s + step)
            bits = pos[None, :] <= xbar[s:e, None]  # unary code
            flips = rng.random((e - s, self.r)) < self.gamma / 2.0
            np.not_equal(bits, flips, out=out[s:e].view(bool))
        return out


class CheuAnalyser(Analyser):
    """Ŝ = (Σ y − nrγ/2)/(r(1 − γ)) from the count of ones in the single shuffled channel."""

    name = "cheu-debias"

    def __init__(self, r: int, gamma: float, n: int):
        self.r, self.gamma, self.n = r, gamma, n

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        ones = view.integer_sum(0)
        return (ones - self.n * self.r * self.gamma / 2.0) / (self.r * (1.0 - self.gamma))


@register
class CheuSumProtocol(_RealSum):
    """Cheu et al.'s multi-message real summation (unary bits, binary RR, one shuffler)."""

    name = "cheu-sum"
    summary = "Cheu et al. real sum: unary encoding into r bits, binary blanket RR per bit, one shuffler"
    example = "--eps 1"
    options = (
        EPS_REQUIRED,
        DELTA_OPTION,
        Option("messages", int, f"bits per user r in 1..{MAX_CHEU_MESSAGES} (default: ceil(eps*sqrt(n)), seed 004 "
               f"Table 3, capped at {MAX_CHEU_MESSAGES} with a note)", metavar="R"),
        Option("gamma", float, "blanket probability per bit in (0, 1) (default: calibrated to eps, delta)"),
    )

    @classmethod
    def create(cls, n: int, *, eps=None, delta=None, messages=None, gamma=None) -> "CheuSumProtocol":
        n = check_int("n", n, minimum=2)
        eps = _eps(eps)
        delta = default_delta(n) if delta is None else check_real("delta", delta, low=0.0, high=1.0, low_open=True,
                                                                     high_open=True, precise=CHEU_DELTA_PRECISION)
        paper_r = cheu_messages(n, eps)
        notes: tuple[str, ...] = ()
        if messages is None:
            r = max(1, min(paper_r, MAX_CHEU_MESSAGES, MAX_CHEU_NR // n))
            if r < paper_r:  # the paper's r would be certified only in minutes; the MSE grows by the rounding part
                why = (f"{MAX_CHEU_MESSAGES}, the most the bound certifies quickly" if r == MAX_CHEU_MESSAGES else
                       f"{r}, so that n*r <= {MAX_CHEU_NR:.0e}, where the bound's error models were checked")
                notes = (f"cheu-sum: r = {r} messages per user (the default ceil(eps*sqrt(n)) = {paper_r} is capped at "
                         f"{why}); --messages chooses r",)
        else:
            r = check_int("messages", messages, minimum=1, maximum=MAX_CHEU_MESSAGES)
        # the accountant's validity range, checked before the calibration evaluates its bound (the certificate is
        # then the description's, :meth:`mechanism`, which Protocol.create builds: the same check, one function)
        check_cheu_size(n, r, "cheu-sum")
        # no memory check here: the fast engine needs none; the faithful engine's n·r messages are checked where
        # it allocates (Protocol.check_resources, pipeline.stream.plan_stream), with the estimate and the knob
        tail = cheu_tail(n, delta)
        if gamma is None:
            gamma = cheu_gamma(n, r, eps, delta)
        else:
            gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True, high_open=True)
        d = cheu_delta(n, r, gamma, eps, tail=tail)
        params = {"messages": r, "gamma": gamma, "eps": eps, "delta": d}
        if r < paper_r and messages is None:
            params["messages_paper"] = paper_r
        proto = cls(n=n, randomiser=CheuRandomiser(r, gamma), shuffler=SingleShuffler(),
                    analyser=CheuAnalyser(r, gamma, n), params=params)
        proto.notes = notes
        proto._tail = tail
        proto._privacy = PrivacyGuarantee(eps, d, "blanket-binomial", (
            "upper bound for the adversary who knows the others' inputs and blanket coins; module docstring",))
        return proto

    def check_resources(self) -> None:
        """The faithful engine's n·r messages in memory (:meth:`Protocol.check_resources`), refused with the
        estimate and the knobs: the fast engine (memory independent of n) or the streamed faithful engine."""
        from shufflesim.core.resources import check_memory

        r = self.params["messages"]
        check_memory(self.memory_estimate(), f"one faithful trial of cheu-sum (n={self.n}, {r} messages per user)",
                     "use --engine fast (the count of ones, no messages), stream with --chunk USERS, or lower "
                     "--messages")

    def mechanism(self) -> CheuSum:
        """n users, r bits each through binary blanket RR with γ, one shuffler (what ``_privacy`` certified)."""
        tail = getattr(self, "_tail", None)  # the default's mechanism carries none (equal descriptions compare equal)
        return CheuSum(self.n, self.params["messages"], self.params["gamma"],
                       tail=None if tail is None or tail == default_tail(self.n) else tail)

    def user_variances(self, data: np.ndarray) -> np.ndarray:
        r, g = self.params["messages"], self.params["gamma"]
        return rounding_variance(data, r) / r**2 + g * (2.0 - g) / (4.0 * r * (1.0 - g) ** 2)

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: U = Σ x̄ (exact sum of randomised roundings) unary ones among n·r bits, each bit
        flipped w.p. γ/2; the analyser needs only the number of ones."""
        from shufflesim.pipeline.fast import flip_count, rounded_total

        r, g = self.params["messages"], self.params["gamma"]
        u = rounded_total(summary.values, summary.counts, r, rng)
        ones = flip_count(u, self.n * r, g / 2.0, rng)
        an = self.analyser
        return (ones - an.n * an.r * an.gamma / 2.0) / (an.r * (1.0 - an.gamma))

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``).

        What the law needs of the data: Σ_v c_v⌊rv⌋ and the multiset of fractional parts of rv (round-ups
        Binomial(c_v, frac_v) per distinct value): for data on a grid, its histogram there."""
        from shufflesim.pipeline.fast import flip_count_batch, rounded_total_batch, scalar_columns

        an = self.analyser
        u = rounded_total_batch(summary.values, summary.counts, an.r, rng, size)
        ones = flip_count_batch(u, self.n * an.r, an.gamma / 2.0, rng)
        return scalar_columns((ones - an.n * an.r * an.gamma / 2.0) / (an.r * (1.0 - an.gamma)), truth)

    def mse_expected(self, data) -> float:
        if data is None:  # worst case: rounding variance 1/4 (x at the middle of a grid cell)
            r, g = self.params["messages"], self.params["gamma"]
            return self.n * (1.0 / (4.0 * r * r) + g * (2.0 - g) / (4.0 * r * (1.0 - g) ** 2))
        return float(np.sum(self.user_variances(data)))

    def mse_expected_summary(self, summary) -> float:
        """:meth:`mse_expected` from the data's multiset: Σ_v c_v·(user variance at v) (issue 21)."""
        from shufflesim.pipeline.fast import summary_dot

        return summary_dot(summary, self.user_variances(summary.values))


# ---------------------------------------------------------------------------------------------------
# Local model: randomised rounding + binary RR; local Laplace
# ---------------------------------------------------------------------------------------------------


def local_rr_worst_mse(n: int, eps: float) -> float:
    """n(e^ε/(e^ε−1)² + 1/4) (seed 004 Table 3 "LocalDP"; docs/theory.md#summation-local)."""
    t = math.exp(-eps)  # e^eps/(e^eps-1)^2 = e^-eps/(1-e^-eps)^2, finite for large eps
    return n * (t / (-math.expm1(-eps)) ** 2 + 0.25)


def _flip(eps: float) -> float:
    """1/(e^eps + 1), also where e^eps overflows."""
    if eps <= 700.0:
        return 1.0 / (math.exp(eps) + 1.0)
    t = math.exp(-eps)
    return t / (1.0 + t)


def _contrast(eps: float) -> float:
    """1 − 2·flip = tanh(eps/2), accurate where 1 − 2·flip cancels to 0 (tiny eps)."""
    return 1.0 - 2.0 * _flip(eps) if eps >= 1e-4 else math.tanh(eps / 2.0)


@dataclass(frozen=True, eq=False)
class LocalRRRandomiser(LocalRandomiser):
    """Randomised rounding to a bit, then binary randomised response with flip probability p."""

    eps: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "flip", _flip(self.eps))
        object.__setattr__(self, "contrast", _contrast(self.eps))
        object.__setattr__(self, "message_space", IntegerRange(0, 1))
        object.__setattr__(self, "eps0", self.eps)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        b = randomised_round(x, 1, rng)
        flip = (rng.random(b.shape[0]) < self.flip).astype(b.dtype)
        return (b ^ flip)[:, None]


class LocalRRAnalyser(Analyser):
    name = "local-rr-debias"

    def __init__(self, flip: float, n: int, contrast: float | None = None):
        self.flip, self.n = flip, n
        self.contrast = 1.0 - 2.0 * flip if contrast is None else contrast

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        return (view.integer_sum(0) - self.n * self.flip) / self.contrast


@register
class LocalRRSumProtocol(_RealSum):
    """Local-model real sum: randomised rounding to {0, 1} + binary randomised response."""

    name = "local-rr-sum"
    summary = "local model: randomised rounding to a bit + binary randomised response (seed 004 LocalDP)"
    example = "--eps 1"
    options = (EPS_REQUIRED,)

    @classmethod
    def create(cls, n: int, *, eps=None) -> "LocalRRSumProtocol":
        n = check_int("n", n, minimum=1)
        eps = _eps(eps)
        rnd = LocalRRRandomiser(eps)
        proto = cls(n=n, randomiser=rnd, shuffler=SingleShuffler(), analyser=LocalRRAnalyser(rnd.flip, n, rnd.contrast),
                    params={"eps": eps, "flip_probability": rnd.flip})
        proto._privacy = PrivacyGuarantee(eps, 0.0, "local", ("eps-LDP randomiser; no amplification claimed",))
        return proto

    def mechanism(self) -> RR2:
        """Shuffled ε-LDP binary randomised response among the n users (their rounded bits)."""
        return RR2(self.n, self.params["eps"])

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: ones among n bits = Σ randomised roundings to {0, 1}, each flipped w.p. p."""
        from shufflesim.pipeline.fast import flip_count, rounded_total

        u = rounded_total(summary.values, summary.counts, 1, rng)
        an = self.analyser
        return (flip_count(u, self.n, an.flip, rng) - an.n * an.flip) / an.contrast

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``)."""
        from shufflesim.pipeline.fast import flip_count_batch, rounded_total_batch, scalar_columns

        # the law needs the multiset of inputs (round-ups Binomial(c_v, v) per distinct value v), not Σx alone
        u = rounded_total_batch(summary.values, summary.counts, 1, rng, size)
        an = self.analyser
        return scalar_columns((flip_count_batch(u, self.n, an.flip, rng) - an.n * an.flip) / an.contrast, truth)

    def mse_expected(self, data) -> float:
        p = self.params["flip_probability"]
        if data is None:
            return local_rr_worst_mse(self.n, self.params["eps"])
        c = _contrast(self.params["eps"])  # 1 - 2p
        pi = p + c * np.asarray(data, dtype=float)
        return float(np.sum(pi * (1.0 - pi)) / c**2)

    def mse_expected_summary(self, summary) -> float:
        """:meth:`mse_expected` from the data's multiset: Σ_v c_v·π_v(1 − π_v)/(1 − 2p)² (issue 21)."""
        from shufflesim.pipeline.fast import summary_dot

        p, c = self.params["flip_probability"], _contrast(self.params["eps"])
        pi = p + c * np.asarray(summary.values, dtype=float)
        return summary_dot(summary, pi * (1.0 - pi)) / c**2

    def mse_bound(self) -> float:
        return local_rr_worst_mse(self.n, self.params["eps"])


@dataclass(frozen=True, eq=False)
class LocalLaplaceRandomiser(LocalRandomiser):
    """x + Lap(1/ε) (ε-LDP for x ∈ [0, 1])."""

    eps: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "message_space", RealNumbers())
        object.__setattr__(self, "eps0", self.eps)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return (np.asarray(x, dtype=float) + rng.laplace(0.0, 1.0 / self.eps, size=np.shape(x)[0]))[:, None]


class ChannelSumAnalyser(Analyser):
    """The sum of the (real) messages of channel 0."""

    name = "sum"

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        return float(np.sum(view.channel(0)))


@register
class LocalLaplaceSumProtocol(_RealSum):
    """Local-model real sum: every user sends x + Lap(1/ε)."""

    name = "local-laplace-sum"
    summary = "local model: each user sends x + Laplace(1/eps)"
    example = "--eps 1"
    options = (EPS_REQUIRED,)

    @classmethod
    def create(cls, n: int, *, eps=None) -> "LocalLaplaceSumProtocol":
        n = check_int("n", n, minimum=1)
        eps = _eps(eps)
        proto = cls(n=n, randomiser=LocalLaplaceRandomiser(eps), shuffler=SingleShuffler(),
                    analyser=ChannelSumAnalyser(), params={"eps": eps})
        proto._privacy = PrivacyGuarantee(eps, 0.0, "local", ("eps-LDP Laplace randomiser",))
        return proto

    def mechanism(self) -> Clones:
        """Any shuffled ε-LDP randomiser among the n users (the Laplace randomiser is one)."""
        return Clones(self.n, self.params["eps"])

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: Σ (x + Lap(1/ε)) = Σ x + Gamma(n, 1/ε) − Gamma(n, 1/ε) (a Laplace variable is
        the difference of two exponentials)."""
        b = 1.0 / self.params["eps"]
        g = rng.gamma(self.n, b, size=2)
        return float(np.dot(summary.values, summary.counts)) + float(g[0] - g[1])

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``)."""
        from shufflesim.pipeline.fast import scalar_columns

        # what the law needs of the data: Σx only (the noise does not depend on the inputs)
        g = rng.gamma(self.n, 1.0 / self.params["eps"], size=(size, 2))
        return scalar_columns(float(np.dot(summary.values, summary.counts)) + (g[:, 0] - g[:, 1]), truth)

    def mse_expected(self, data) -> float:
        return 2.0 * self.n * (1.0 / self.params["eps"]) ** 2  # eps**2 overflows for eps ~ 1e308

    def mse_expected_summary(self, summary) -> float:
        """The exact MSE does not depend on the data (n Laplace draws): as :meth:`mse_expected`."""
        return self.mse_expected(None)


# ---------------------------------------------------------------------------------------------------
# Central model
# ---------------------------------------------------------------------------------------------------


class CentralLaplaceAnalyser(Analyser):
    name = "central-laplace"

    def __init__(self, eps: float):
        self.eps = eps

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        return float(np.sum(view.channel(0))) + float(rng.laplace(0.0, 1.0 / self.eps))


@register
class CentralLaplaceSumProtocol(_RealSum):
    """Trusted curator: Σ x + Lap(1/ε)."""

    name = "central-laplace-sum"
    summary = "central model: the curator adds Laplace(1/eps) to the exact sum (seed 004 CuratorDP)"
    example = "--eps 1"
    options = (EPS_REQUIRED,)

    @classmethod
    def create(cls, n: int, *, eps=None) -> "CentralLaplaceSumProtocol":
        n = check_int("n", n, minimum=1)
        eps = _eps(eps)
        proto = cls(n=n, randomiser=IdentityRandomiser(), shuffler=TrustedCurator(),
                    analyser=CentralLaplaceAnalyser(eps), params={"eps": eps})
        proto._privacy = PrivacyGuarantee(eps, 0.0, "laplace", ("sensitivity 1 (one input in [0, 1] replaced)",))
        return proto

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: the exact total (from the multiset) plus one Laplace draw."""
        return float(np.dot(summary.values, summary.counts)) + float(rng.laplace(0.0, 1.0 / self.params["eps"]))

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``)."""
        from shufflesim.pipeline.fast import scalar_columns

        noise = rng.laplace(0.0, 1.0 / self.params["eps"], size=size)  # the law needs Σx only
        return scalar_columns(float(np.dot(summary.values, summary.counts)) + noise, truth)

    def mse_expected(self, data) -> float:
        return 2.0 * (1.0 / self.params["eps"]) ** 2

    def mse_expected_summary(self, summary) -> float:
        """The exact MSE does not depend on the data (one Laplace draw): as :meth:`mse_expected`."""
        return self.mse_expected(None)

    def mse_bound(self) -> float:
        return 2.0 * (1.0 / self.params["eps"]) ** 2

    def mechanism(self) -> CentralLaplace:
        """Laplace(1/ε) on a sum of L1 sensitivity 1."""
        return CentralLaplace(self.params["eps"], 1.0)


@dataclass(frozen=True, eq=False)
class RoundingRandomiser(LocalRandomiser):
    """Randomised rounding to {0..p}; the integer goes to the curator."""

    p: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "message_space", IntegerRange(0, self.p))

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return randomised_round(x, self.p, rng, dtype=grid_dtype(self.p))[:, None]


class CentralDLapAnalyser(Analyser):
    """(Σ x̄ + DLap(α))/p, DLap sampled as the difference of two geometrics on {0, 1, …}."""

    name = "central-dlap"

    def __init__(self, p: int, alpha: float):
        self.p, self.alpha = p, alpha

    def analyse(self, view: View, rng: np.random.Generator) -> float:
        g = rng.geometric(1.0 - self.alpha, size=2)  # numpy counts trials: support {1, 2, ...}
        return (view.integer_sum(0) + int(g[0]) - int(g[1])) / self.p


@register
class CentralDLapSumProtocol(_RealSum):
    """Trusted curator: randomised rounding at precision p, Σ x̄ + DLap(e^{−ε/p}), divided by p."""

    name = "central-dlap-sum"
    summary = "central model: discrete Laplace on the sum of randomised roundings at precision p"
    example = "--eps 1"
    options = (
        EPS_REQUIRED,
        Option("p", int, "fixed-point precision p >= 1 (default: ceil(sqrt(n)))"),
    )

    @classmethod
    def create(cls, n: int, *, eps=None, p=None) -> "CentralDLapSumProtocol":
        n = check_int("n", n, minimum=1)
        eps = _eps(eps)
        p = math.isqrt(n - 1) + 1 if p is None else check_int("p", p, minimum=1)
        alpha = math.exp(-eps / p)
        if not 1.0 - alpha >= 1e-12:
            raise ParameterError(f"central-dlap-sum: the noise scale p/eps must be <= 1e12 (exp(-eps/p) rounds to 1 in "
                                 f"double precision and the noise cannot be sampled); got p={p}, eps={eps:g}")
        proto = cls(n=n, randomiser=RoundingRandomiser(p), shuffler=TrustedCurator(),
                    analyser=CentralDLapAnalyser(p, alpha), params={"eps": eps, "p": p, "alpha": alpha})
        proto._privacy = PrivacyGuarantee(eps, 0.0, "discrete-laplace", ("sensitivity p on the rounded sum",))
        return proto

    def mechanism(self) -> CentralDLap:
        """DLap(e^{−ε/p}) on the rounded sum, whose sensitivity is p."""
        return CentralDLap(self.params["eps"], self.params["p"])

    def _noise_mse(self) -> float:
        a, p = self.params["alpha"], self.params["p"]
        return 2.0 * a / ((1.0 - a) ** 2 * p * p)

    def sample_fast(self, summary, rng: np.random.Generator) -> float:
        """Fast engine: Σ x̄ drawn exactly (:func:`~shufflesim.pipeline.fast.rounded_total`) plus DLap."""
        from shufflesim.pipeline.fast import rounded_total

        an = self.analyser
        total = rounded_total(summary.values, summary.counts, an.p, rng)
        g = rng.geometric(1.0 - an.alpha, size=2)
        return (total + int(g[0]) - int(g[1])) / an.p

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``)."""
        from shufflesim.pipeline.fast import rounded_total_batch, scalar_columns

        an = self.analyser  # the law needs Σ_v c_v⌊pv⌋ and the multiset of fractional parts of pv
        total = rounded_total_batch(summary.values, summary.counts, an.p, rng, size)
        g = rng.geometric(1.0 - an.alpha, size=(size, 2))
        return scalar_columns((total + g[:, 0] - g[:, 1]) / an.p, truth)

    def mse_expected(self, data) -> float:
        p = self.params["p"]
        if data is None:
            return self.n / (4.0 * p * p) + self._noise_mse()
        return float(np.sum(rounding_variance(data, p))) / (p * p) + self._noise_mse()

    def mse_expected_summary(self, summary) -> float:
        """:meth:`mse_expected` from the data's multiset: Σ_v c_v·r_v(1 − r_v)/p² + Var DLap/p² (issue 21)."""
        from shufflesim.pipeline.fast import summary_dot

        p = self.params["p"]
        return summary_dot(summary, rounding_variance(summary.values, p)) / (p * p) + self._noise_mse()
