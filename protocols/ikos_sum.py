"""``ikos-sum``: real summation from IKOS additive shares with distributed Pólya noise (seed 004 §5–6).

Protocol (seed 004 Lemma 5.2 / Appendix B, Theorem 6.2; docs/theory.md#summation-ikos)
--------------------------------------------------------------------------------------
Each user i holding x_i ∈ [0, 1]

1. encodes x_i with precision p by randomised rounding: x̄_i = ⌊p x_i⌋ + Bern(p x_i − ⌊p x_i⌋) ∈ {0..p};
2. adds Z_i = Pólya(1/n, α) − Pólya(1/n, α) with α = e^{−ε/p}, so that Σ_i Z_i ~ DLap(α) exactly
   (:mod:`shufflesim.maths.polya`);
3. reduces v_i = x̄_i + Z_i modulo q and splits it into m additive shares, uniform in Z_q subject to
   summing to v_i (mod q);
4. sends share j through shuffler j (``variant="all-shuffled"``, m parallel shufflers), or shares 1..m−1
   through m−1 parallel shufflers and share m outside any shuffle (``variant="one-unshuffled"``: the
   analyser sees it next to the user's identity; seed 004 §6, the "IKOS protocol with randomised inputs").

The analyser sums every message modulo q, decodes the representative in (−q/2, q/2] (values above q/2 are
negative sums that wrapped) and divides by p.

Privacy (seed 004 Lemma 5.2 with Lemma F.2)
-------------------------------------------
The comparison mechanism adds DLap(α) to the integer sum Σ x̄_i, whose sensitivity to one user is p, so it
is ε-DP with α = e^{−ε/p}; simulating the secure summation on its output is post-processing.  If the
summation protocol has worst-case statistical security σ (total variation ≤ η = 2^{−σ} between the views
of any two inputs with the same sum), Lemma F.2 gives (ε, (1 + e^ε) η)-DP.
``mechanism()`` returns this argument as a description the accountant takes
(:class:`shufflesim.mechanisms.ikos.IKOSSum`): δ(ε') ≤ δ_DLap(ε') + (1 + e^{ε'})η for every ε', the exact
discrete Laplace profile plus the TV term, with a lower bound from the view's sum modulo q.

Statistical security and messages — **reconstruction**
-------------------------------------------------------
Seed 004's copy lost the formulas of Theorem 6.1, Corollary 6.1 and eq. (4).  shufflesim reconstructs
eq. (4) (docs/theory.md#summation-ikos-messages) as m = ⌈(2σ + log2 q)/(log2 n − log2 e) + 1⌉, consistent with the paper's worked example (n = 10⁴,
q ≈ n·2³², σ = 40 → 12).  We read it, as the surviving text says, as the number of shares of the m-parallel
protocol with *average-case* security σ (Theorem 6.1, "a simple rearrangement of the expression for σ"),
i.e. σ(m) = ((m − 1)(log2 n − log2 e) − log2 q)/2; Lemma 6.1 then gives *worst-case* security σ to the
protocols with **m + 1** messages, whether all are shuffled or one is sent outside the shuffle.  So the
total number of messages per user is eq. (4) + 1.  (With this reading and this module's default q, seed
004 Table 3's "IKOS (Improved)" count of 9 is reproduced in all four columns.)  These formulas could not be
checked against the lost text: treat the certified δ as resting on that reconstruction.

Error (exact; see :meth:`IKOSSumProtocol.mse_expected`)
-------------------------------------------------------
MSE = Σ_i r_i(1 − r_i)/p² + Var DLap(α)/p² + O, with r_i = p x_i − ⌊p x_i⌋, Var DLap(α) = 2α/(1−α)² and O
the effect of wrap-around (overflow) on the decoded sum.  :func:`ikos_overflow_bound` bounds O rigorously
(it is zero unless |noisy encoded sum| reaches q/2); the default q makes the bound smaller than 2⁻⁵² of
the MSE and the overflow probability smaller than 2^{−σ}, so the first two terms are the exact MSE to
double precision.  With a user-chosen q for which the bound is not negligible, ``mse_expected`` is None.

Defaults: p = ⌈√n⌉ (seed 004 uses p = √n so that rounding and noise errors are of the same order; p must
be an integer because the sensitivity of the encoded sum is ⌈p⌉); δ = 1/n² (seed 004's experiments);
q = the smallest modulus meeting the two overflow conditions above (:func:`default_modulus`); m = eq. (4) + 1
for the target σ.  When only ``messages`` is given, the certified σ (hence δ) is what that m achieves, and q
is chosen for the default δ's σ.  ``params["sigma"]`` is always the certified σ, ``sigma_target`` the
requested one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.accounting.model.results import PrivacyGuarantee
from shufflesim.pipeline.analyser import Analyser
from shufflesim.errors import InfeasibleError, NotApplicableError, ParameterError
from shufflesim.mechanisms.ikos import WIDEN as IKOS_WIDEN, IKOSSum
from shufflesim.pipeline.options import Option
from shufflesim.maths.polya import (
    MAX_Q,
    additive_shares,
    check_modulus,
    decode_centered,
    dlap_variance_from_scale,
    reduce_mod,
    sample_polya_difference,
)
from shufflesim.maths.rounding import randomised_round
from shufflesim.pipeline.protocol import Protocol
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.registry import register
from shufflesim.pipeline.shuffler import ParallelShufflers, View
from shufflesim.pipeline.spaces import ModularIntegers

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)
#: the overflow term must be below this fraction of the MSE for ``mse_expected`` to ignore it
OVERFLOW_RELATIVE_TOLERANCE = 2.0**-52
VARIANTS = ("all-shuffled", "one-unshuffled")


# --- message counts and statistical security --------------------------------------------------------------
def _check_n_for_analysis(n) -> int:
    n = check_int("n", n, minimum=1)
    if n < 3:
        raise ParameterError(f"the IKOS security analysis needs n >= 3 users (log2 n > log2 e); got n={n}")
    return n


def ikos_sigma_improved(n: int, q: int, m: int) -> float:
    """Statistical security σ of the m-share parallel IKOS protocol, average case (seed 004 Theorem 6.1).

    σ = ((m − 1)(log2 n − log2 e) − log2 q)/2: the rearrangement of the reconstructed eq. (4) (docs/theory.md#summation-ikos-messages;
    a reconstruction, see the module docstring).  By Lemma 6.1 the same σ holds in the worst case for the
    protocols with m + 1 messages.
    """
    n = _check_n_for_analysis(n)
    q = check_modulus(q)
    m = check_int("m", m, minimum=1)
    return ((m - 1) * (math.log2(n) - LOG2E) - math.log2(q)) / 2.0


def ikos_shuffled_messages_improved(n: int, q: int, sigma: float) -> int:
    """Reconstructed seed 004 eq. (4): m = ⌈(2σ + log2 q)/(log2 n − log2 e) + 1⌉ (docs/theory.md#summation-ikos-messages).

    The number of shares of Theorem 6.1 (average-case security σ), which Corollary 6.1 calls the number
    of shuffled messages of the worst-case protocol; the total per user is this plus one.
    """
    n = _check_n_for_analysis(n)
    q = check_modulus(q)
    sigma = check_positive("sigma", sigma)
    return math.ceil((2.0 * sigma + math.log2(q)) / (math.log2(n) - LOG2E) + 1.0)


def ikos_messages_improved(n: int, q: int, sigma: float) -> int:
    """Messages per user for worst-case statistical security σ: eq. (4) + 1 (Corollary 6.1, Lemma 6.1)."""
    return ikos_shuffled_messages_improved(n, q, sigma) + 1


def _log2_central_binomial(m: int) -> float:
    return float((special.gammaln(2 * m + 1) - 2 * special.gammaln(m + 1)) / LN2)


def ikos_messages_original(n: int, q: int, sigma: float) -> int:
    """Messages per user under the original IKOS analysis (single shuffler; seed 004 Lemma 5.1, App. E).

    Our derivation of Appendix E (its formulas were lost in conversion): for two users with m shares each,
    the leftover hash lemma with the universal family h_Y(S) = Σ_{i∈S} Y_i (S a size-m subset of the 2m
    shuffled shares Y) gives, averaged over uniformly random inputs, Δ ≤ ½ √(q / C(2m, m)) (Lemma E.2);
    translating all shares by a constant shows that Δ does not depend on the sum when gcd(2m, q) = 1 (not
    enforced: the count is for comparison with the paper's table), and
    Markov's inequality (Lemma E.3) turns it into TV ≤ 2qΔ = √(q³ / C(2m, m)) for any two input pairs with
    the same sum.  Any two n-user inputs with the same sum are joined by n − 1 "basic steps" (Lemma 5.1's
    proof), each of which must cost at most 2^{−σ}/(n − 1).  Hence the smallest m with

        log2 C(2m, m) ≥ 3 log2 q + 2 log2(n − 1) + 2σ,

    computed exactly with log-gamma (Appendix E.1 uses an approximation of C(2m, m) instead).
    """
    n = check_int("n", n, minimum=2)
    q = check_modulus(q)
    sigma = check_positive("sigma", sigma)
    need = 3.0 * math.log2(q) + 2.0 * math.log2(n - 1) + 2.0 * sigma
    # log2 C(2m, m) ≤ 2m, so m ≥ need/2; it exceeds 2m − log2(2√m) − 1, so m ≤ need/2 + log2(need) + 2
    lo, hi = max(1, math.floor(need / 2.0)), math.ceil(need / 2.0 + math.log2(max(need, 2.0)) + 2.0)
    while _log2_central_binomial(hi) < need:  # safety; the bracket above already holds
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if _log2_central_binomial(mid) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo


def ikos_messages_ghazi(n: int, q: int, sigma: float) -> int:
    """Ghazi et al.'s message count (seed 004 §1.2, constants extracted from their Theorem 3's proof).

    Not derivable here: the formula is printed only in seed 004 §1.2, whose mathematics was lost in
    conversion, and the appendix does not restate it.  Always raises :class:`NotApplicableError`.
    """
    raise NotApplicableError(
        "Ghazi et al.'s IKOS message count is not available: seed 004 states its constants only in §1.2, "
        "whose formulas were lost in conversion"
    )


def sigma_from_delta(eps: float, delta: float) -> float:
    """σ with (1 + e^ε)·2^{−σ} = δ, i.e. σ = log2((1 + e^ε)/δ) (seed 004 Lemma F.2)."""
    return (math.log1p(math.exp(-eps)) + eps - math.log(delta)) / LN2


def delta_from_sigma(eps: float, sigma: float) -> float:
    """δ = (1 + e^ε)·2^{−σ} (seed 004 Lemma F.2 with η = 2^{−σ} and a pure ε-DP comparison mechanism)."""
    return math.exp(math.log1p(math.exp(-eps)) + eps - sigma * LN2)


def certified_delta(eps: float, sigma: float) -> float:
    """The protocol's reported δ: :func:`delta_from_sigma` widened by the float-error margin the mechanism's
    accountant adds (:class:`~shufflesim.mechanisms.ikos.IKOSSum`), so that the reported δ is never below
    ``account(protocol.mechanism(), eps=[eps])``'s certified upper end (it equals it unless the mechanism's
    profile is smaller there)."""
    return min(1.0, delta_from_sigma(eps, sigma) * (1.0 + IKOS_WIDEN))


# --- overflow -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverflowBound:
    """Rigorous bounds on wrap-around: P(overflow) ≤ ``prob`` and −``mse_lower`` ≤ O ≤ ``mse_upper``.

    Natural logarithms are kept (``log_*``) so that comparisons far below the double range stay exact.
    """

    prob: float
    mse_lower: float
    mse_upper: float
    log_prob: float
    log_mse: float  # log max(mse_lower, mse_upper)

    @property
    def mse_abs(self) -> float:
        return max(self.mse_lower, self.mse_upper)


def ikos_overflow_bound(n: int, p: int, q: int, alpha: float) -> OverflowBound:
    """Bound the overflow probability and the overflow term O of the MSE, for every data set in [0, 1]ⁿ.

    T = R + Z with R = Σ x̄_i ∈ [0, np] and Z ~ DLap(α).  The decoded value D equals T unless T leaves the
    window −q/2 < T ≤ q/2, which requires Z ≥ a = ⌊q/2⌋ − np + 1 or Z ≤ −b, b = ⌈q/2⌉.  So
    P(overflow) ≤ P(Z ≥ a) + P(Z ≥ b) = (α^a + α^b)/(1 + α) (a ≥ 0).  With c = p·S ∈ [0, np],
    O = E[((D − c)² − (T − c)²) 1{overflow}]/p², and

    * O ≤ (q/2 + np)² P(overflow)/p², since |D − c| ≤ q/2 + np;
    * O ≥ −E[(T − c)² 1{overflow}]/p² ≥ −(2n² P(overflow) + 2E[Z² 1{Z ≥ a}] + 2E[Z² 1{Z ≤ −b}])/p²,
      since |R − c| < n (each rounding error is below 1) and (u + v)² ≤ 2u² + 2v².
    """
    n = check_int("n", n, minimum=1)
    p = check_int("p", p, minimum=1)
    q = check_modulus(q)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    la = math.log(alpha)
    a = q // 2 - n * p + 1
    b = (q + 1) // 2
    if a <= 0:
        inf = math.inf
        return OverflowBound(1.0, inf, inf, 0.0, inf)
    l1p = math.log1p(alpha)
    log_prob = min(0.0, float(np.logaddexp(a * la, b * la)) - l1p)

    def log_m2(t: int) -> float:  # log E[Z² 1{Z ≥ t}], geometric sums (docs/theory.md#dlap)
        u = -math.expm1(la)
        series = t * t / u + 2.0 * t * alpha / u**2 + alpha * (1.0 + alpha) / u**3
        return math.log(u) - l1p + t * la + math.log(series)

    log_upper = 2.0 * math.log(q / 2.0 + n * p) + log_prob - 2.0 * math.log(p)
    log_lower = (
        math.log(2.0) + float(np.logaddexp(2.0 * math.log(n) + log_prob, np.logaddexp(log_m2(a), log_m2(b))))
        - 2.0 * math.log(p)
    )
    return OverflowBound(
        prob=math.exp(log_prob),
        mse_lower=math.exp(log_lower),
        mse_upper=math.exp(log_upper),
        log_prob=log_prob,
        log_mse=max(log_lower, log_upper),
    )


def _noise_mse(eps: float, p: int) -> float:
    """Var DLap(e^{−ε/p})/p² (the noise part of the MSE of the sum)."""
    return dlap_variance_from_scale(eps / p) / p**2


def default_modulus(n: int, p: int, eps: float, sigma: float) -> int:
    """The smallest q (found by bisection) with P(overflow) ≤ 2^{−σ} and |O| ≤ 2⁻⁵² · Var DLap/p².

    Both bounds are those of :func:`ikos_overflow_bound`, valid for every data set; the second makes the
    overflow term invisible in double precision next to the noise term, hence next to any MSE.  Both are
    monotone in q once q/2 + np > 2p/ε (then the exponential decay dominates); the returned q satisfies
    both conditions (checked).  Raises :class:`InfeasibleError` if q would exceed 2⁶⁴ − 1.
    """
    alpha = math.exp(-eps / p)
    log_tol = math.log(_noise_mse(eps, p)) + math.log(OVERFLOW_RELATIVE_TOLERANCE)

    def ok(q: int) -> bool:
        ob = ikos_overflow_bound(n, p, q, alpha)
        return ob.log_prob <= -sigma * LN2 and ob.log_mse <= log_tol

    lo = 2 * n * p + 1  # below this a ≤ 0 and nothing is certified
    step = max(2, math.ceil(2.0 * p / eps))
    hi = lo + step
    while not ok(hi):
        step *= 2
        hi = lo + step
        if hi > MAX_Q:
            raise InfeasibleError(f"no modulus q <= 2^64-1 keeps overflow below 2^-{sigma:g} for n={n}, p={p}")
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    assert ok(hi)
    return hi


# --- parameters ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IKOSParameters:
    """Resolved parameters of ``ikos-sum`` (see the module docstring for each rule)."""

    n: int
    eps: float
    p: int
    q: int
    alpha: float
    m: int  # messages per user, total
    variant: str
    sigma: float  # certified worst-case statistical security of this m (reconstructed Thm 6.1 + Lemma 6.1)
    sigma_target: float | None
    delta: float  # (1 + e^ε) 2^{−σ}, widened as the mechanism's certified upper end (certified_delta)

    @property
    def shuffled_messages(self) -> int:
        return self.m if self.variant == "all-shuffled" else self.m - 1

    def as_dict(self) -> dict:
        return {
            "eps": self.eps,
            "delta": self.delta,
            "p": self.p,
            "q": self.q,
            "m": self.m,
            "alpha": self.alpha,
            "sigma": self.sigma,
            "sigma_target": self.sigma_target,
            "variant": self.variant,
            "shuffled_messages": self.shuffled_messages,
            "analysis": "improved (seed 004 Cor. 6.1, reconstructed eq. 4) + 1 message (Lemma 6.1)",
        }


def default_precision(n: int) -> int:
    """p = ⌈√n⌉ (seed 004 App. B: p ≈ √n balances rounding and noise errors)."""
    r = math.isqrt(n)
    return r if r * r == n else r + 1


#: most messages per user simulated (each trial draws n·m shares; the paper's m is ~10-20)
MAX_MESSAGES = 100_000


def resolve_parameters(n, *, eps=None, delta=None, sigma=None, p=None, q=None, messages=None,
                       variant="all-shuffled") -> IKOSParameters:
    """Validate the options and resolve every default (one-line :class:`ParameterError` otherwise)."""
    n = _check_n_for_analysis(n)
    if eps is None:
        raise ParameterError("ikos-sum needs the central privacy parameter eps > 0")
    eps = check_positive("eps", eps)
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    p = default_precision(n) if p is None else check_int("p", p, minimum=1)
    if eps / p > 700.0:
        raise ParameterError(f"eps/p={eps / p:g} makes the noise vanish (alpha underflows); use eps/p <= 700")
    alpha = math.exp(-eps / p)
    if alpha >= 1.0:
        raise ParameterError(f"eps/p={eps / p:g} is too small to represent alpha=exp(-eps/p) < 1; increase eps")
    if delta is not None and sigma is not None:
        raise ParameterError("give at most one of delta (target delta) or sigma (statistical security); "
                             "they determine each other through delta = (1+e^eps)*2^-sigma")
    if sigma is not None:
        sigma_target = check_positive("sigma", sigma)
    elif delta is not None:
        delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        sigma_target = sigma_from_delta(eps, delta)
    elif messages is None:
        sigma_target = sigma_from_delta(eps, 1.0 / n**2)
    else:
        sigma_target = None
    q_sigma = sigma_target if sigma_target is not None else sigma_from_delta(eps, 1.0 / n**2)
    q = default_modulus(n, p, eps, q_sigma) if q is None else check_modulus(q)
    if q <= 2 * n * p:
        raise ParameterError(f"q must be > 2np = {2 * n * p} (n={n}, p={p}): the protocol decodes the sum modulo q "
                             f"in (-q/2, q/2], which must hold every encoded sum in [0, np]; got q={q}")
    if messages is not None:
        m = check_int("messages", messages, minimum=2, maximum=MAX_MESSAGES)
        sig = ikos_sigma_improved(n, q, m - 1)
        if sig <= 0:
            need = ikos_messages_improved(n, q, 1.0)
            raise ParameterError(f"messages={m} certifies no statistical security (sigma={sig:.3g} <= 0) for "
                                 f"n={n}, q={q}; sigma >= 1 needs messages >= {need}")
        if sigma_target is not None and sig < sigma_target:
            need = ikos_messages_improved(n, q, sigma_target)
            raise ParameterError(f"messages={m} gives statistical security sigma={sig:.4g} < {sigma_target:.4g}; "
                                 f"use messages >= {need}")
    else:
        m = ikos_messages_improved(n, q, sigma_target)
        if m > MAX_MESSAGES:
            raise ParameterError(f"statistical security sigma={sigma_target:.6g} needs m={m} messages per user "
                                 f"(n·m = {n * m:.3g} shares per trial); at most {MAX_MESSAGES} are simulated")
        sig = ikos_sigma_improved(n, q, m - 1)
    # the reported delta is the mechanism's own certified upper end at eps (IKOSSum.delta: the closed form
    # widened by its float-error margin), never the bare closed form just below it; a target delta is met by it
    delta_cert = certified_delta(eps, sig)
    while messages is None and delta is not None and delta_cert > delta and m < MAX_MESSAGES:
        m += 1
        sig = ikos_sigma_improved(n, q, m - 1)
        delta_cert = certified_delta(eps, sig)
    if delta is not None and delta_cert > delta:
        raise ParameterError(f"messages={m} certifies delta={delta_cert:.6g} > the target {delta:.6g}; use more "
                             "messages")
    if not delta_cert < 1.0:
        raise ParameterError(f"the certified delta={delta_cert:.3g} is not below 1; raise messages or sigma")
    return IKOSParameters(n=n, eps=eps, p=p, q=q, alpha=alpha, m=m, variant=variant, sigma=sig,
                          sigma_target=sigma_target, delta=delta_cert)


# --- pipeline stages ----------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class IKOSRandomiser(LocalRandomiser):
    """Encode with precision p, add the Pólya noise share, reduce mod q, split into m additive shares."""

    n_users: int
    p: int
    q: int
    alpha: float
    m: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "message_space", ModularIntegers(self.q))
        object.__setattr__(self, "messages_per_user", self.m)

    def encode(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The noisy encodings x̄_i + Z_i reduced mod q (uint64), before sharing."""
        xbar = randomised_round(x, self.p, rng, dtype=np.int64)
        z = sample_polya_difference(self.n_users, self.alpha, xbar.shape[0], rng)
        return reduce_mod(xbar + z, self.q)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return additive_shares(self.encode(x, rng), self.m, self.q, rng)


@dataclass(frozen=True)
class IKOSEstimate:
    """Analyser output: Σ messages mod q, its centred representative, and the estimate of Σ x."""

    total_mod_q: int
    decoded: int
    estimate: float


class IKOSAnalyser(Analyser):
    """Sum every channel mod q (exactly, as Python ints), decode into (−q/2, q/2], divide by p."""

    name = "ikos-sum-mod-q"

    def __init__(self, p: int, q: int):
        self.p, self.q = p, q

    def analyse(self, view: View, rng: np.random.Generator) -> IKOSEstimate:
        total = sum(view.integer_sum(j) for j in range(view.n_channels)) % self.q
        decoded = decode_centered(total, self.q)
        return IKOSEstimate(total, decoded, decoded / self.p)


# --- the protocol -------------------------------------------------------------------------------------------
@register
class IKOSSumProtocol(Protocol):
    """IKOS additive shares mod q with distributed Pólya noise (seed 004 §5–6); see the module docstring."""

    name = "ikos-sum"
    summary = "real summation: IKOS additive shares mod q with Polya noise (parallel shufflers)"
    example = "--eps 1"
    data_kind = "real"
    options = (
        Option("eps", float, "central epsilon > 0; the summed noise is DLap(alpha), alpha = exp(-eps/p)"),
        Option("delta", float, "target delta in (0, 1): sigma = log2((1+e^eps)/delta) (default 1/n^2)"),
        Option("sigma", float, "statistical security: views of equal-sum inputs within 2^-sigma in TV "
                               "(alternative to --delta)"),
        Option("p", int, "fixed-point precision, integer >= 1 (default ceil(sqrt(n)))"),
        Option("q", int, "share modulus, 2 <= q <= 2^64-1 (default: smallest q with overflow probability "
                         "<= 2^-sigma and a negligible overflow MSE term)"),
        Option("messages", int, "messages per user m >= 2 (default from the improved analysis, eq. (4) + 1)"),
        Option("variant", str, "all-shuffled: share j through shuffler j; one-unshuffled: the last share "
                               "outside the shuffle", default="all-shuffled", choices=VARIANTS),
    )

    def __init__(self, *, parameters: IKOSParameters, **stages) -> None:
        super().__init__(**stages)
        self.parameters = parameters

    @classmethod
    def create(cls, n: int, *, eps=None, delta=None, sigma=None, p=None, q=None, messages=None,
               variant=None) -> "IKOSSumProtocol":
        prm = resolve_parameters(n, eps=eps, delta=delta, sigma=sigma, p=p, q=q, messages=messages,
                                 variant="all-shuffled" if variant is None else variant)
        # the one-unshuffled variant sends the last share outside the shuffle (seed 004 Corollary 6.1)
        shuffler = ParallelShufflers() if prm.variant == "all-shuffled" else ParallelShufflers(unshuffled=(-1,))
        return cls(
            n=prm.n,
            randomiser=IKOSRandomiser(prm.n, prm.p, prm.q, prm.alpha, prm.m),
            shuffler=shuffler,
            analyser=IKOSAnalyser(prm.p, prm.q),
            params=prm.as_dict(),
            parameters=prm,
        )

    # --- estimand ---------------------------------------------------------------------------------------
    def truth(self, data: np.ndarray) -> float:
        return math.fsum(np.asarray(data, dtype=float).tolist())

    def point_estimate(self, raw: IKOSEstimate) -> float:
        return raw.estimate

    # --- theory -----------------------------------------------------------------------------------------
    def sample_fast(self, summary, rng: np.random.Generator) -> IKOSEstimate:
        """Fast engine: the shares of user i sum to x̄_i + Z_i mod q and the n Pólya differences sum to
        DLap(α) exactly, so the analyser's total mod q is (Σ x̄ + DLap(α)) mod q: an exact sum of
        randomised roundings (binomials grouped by input value) plus one difference of two geometrics."""
        from shufflesim.pipeline.fast import rounded_total

        an = self.analyser
        xsum = rounded_total(summary.values, summary.counts, an.p, rng)
        g = self._noise_pair(rng, 2)
        total = (xsum + int(g[0]) - int(g[1])) % an.q
        decoded = decode_centered(total, an.q)
        return IKOSEstimate(total, decoded, decoded / an.p)

    def _noise_pair(self, rng: np.random.Generator, size) -> np.ndarray:
        """Two independent Pólya(n/n_users, α) draws (their difference is the summed noise of the n users'
        Pólya(1/n_users, α) differences, by the Pólya family's additivity in its first parameter).  When every
        user's share is designed for n users (the honest protocol) this is a pair of geometrics on {1, 2, ...}
        (the shift cancels in the difference: DLap(α)); a copy designed for n_users < n users (the tolerate-F
        defence, :func:`shufflesim.validation.dishonest.ikos_tolerant`) draws negative binomials with real
        shape n/n_users."""
        a = self.randomiser.alpha
        if self.randomiser.n_users == self.parameters.n:
            return rng.geometric(1.0 - a, size=size)
        return rng.negative_binomial(self.parameters.n / self.randomiser.n_users, 1.0 - a, size=size)

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """:meth:`sample_fast` vectorised over ``size`` trials (the records' ``sq_error`` and ``error``): the
        same draws for every trial at once, the noisy total held in int64 as the randomiser holds x̄ + Z, its
        residue mod q in uint64 (:func:`~shufflesim.maths.polya.reduce_mod`, exact for any q < 2⁶⁴) and
        decoded into (−q/2, q/2] as :func:`~shufflesim.maths.polya.decode_centered` does.

        What the law needs of the data: Σ_v c_v⌊pv⌋ and the multiset of fractional parts of pv (the
        round-ups are Binomial(c_v, frac_v) per distinct value): for data on a grid, its histogram there."""
        from shufflesim.pipeline.fast import rounded_total_batch, scalar_columns

        an = self.analyser
        xsum = rounded_total_batch(summary.values, summary.counts, an.p, rng, size)
        g = self._noise_pair(rng, (size, 2))
        total = reduce_mod(xsum + g[:, 0] - g[:, 1], an.q)  # uint64 in [0, q)
        q = np.uint64(an.q)
        wrapped = total > q // np.uint64(2)  # 2s > q <=> s > floor(q/2) for integers
        mag = np.where(wrapped, q - total, total).astype(np.int64)  # |decoded| <= q/2 < 2^63
        decoded = np.where(wrapped, -mag, mag)
        return scalar_columns(decoded / an.p, truth)

    def overflow_bound(self) -> OverflowBound:
        prm = self.parameters
        return ikos_overflow_bound(prm.n, prm.p, prm.q, prm.alpha)

    def rounding_mse(self, data: np.ndarray) -> float:
        """Σ r_i(1 − r_i)/p² with r_i = p x_i − ⌊p x_i⌋, as the randomiser computes it (Lemma F.1)."""
        px = np.asarray(data, dtype=float) * self.parameters.p
        r = px - np.floor(px)
        return math.fsum((r * (1.0 - r)).tolist()) / self.parameters.p**2

    def noise_mse(self) -> float:
        """Var DLap(α)/p² = 2α/((1 − α)² p²)."""
        return _noise_mse(self.parameters.eps, self.parameters.p)

    def mse_expected_interval(self, data: np.ndarray) -> tuple[float, float]:
        """Rigorous [lower, upper] for E[(Ŝ − S)²] including the overflow term O."""
        base = self.rounding_mse(data) + self.noise_mse()
        ob = self.overflow_bound()
        return max(0.0, base - ob.mse_lower), base + ob.mse_upper

    def mse_expected(self, data: np.ndarray) -> float | None:
        """Exact MSE: rounding variance + Var DLap/p², when the overflow bound is below 2⁻⁵² of it; else None."""
        base = self.rounding_mse(data) + self.noise_mse()
        if self.overflow_bound().log_mse > math.log(base) + math.log(OVERFLOW_RELATIVE_TOLERANCE):
            return None
        return base

    def truth_from_summary(self, summary) -> float:
        """Σ x from the data's multiset (data given as counts, issue 21)."""
        from shufflesim.pipeline.fast import summary_total

        return summary_total(summary)

    def mse_expected_summary(self, summary) -> float | None:
        """:meth:`mse_expected` from the data's multiset: Σ_v c_v·r_v(1 − r_v)/p² + Var DLap/p² (issue 21)."""
        px = np.asarray(summary.values, dtype=float) * self.parameters.p
        r = px - np.floor(px)
        terms = (r * (1.0 - r)) * np.asarray(summary.counts, dtype=float)
        base = math.fsum(terms.tolist()) / self.parameters.p**2 + self.noise_mse()
        if self.overflow_bound().log_mse > math.log(base) + math.log(OVERFLOW_RELATIVE_TOLERANCE):
            return None
        return base

    def mse_worst(self) -> float | None:
        """n/(4p²) + Var DLap/p² (every r_i = 1/2, e.g. x_i = 1/(2p)); None if overflow is not negligible."""
        base = self.n / (4.0 * self.parameters.p**2) + self.noise_mse()
        if self.overflow_bound().log_mse > math.log(base) + math.log(OVERFLOW_RELATIVE_TOLERANCE):
            return None
        return base

    def mse_bound(self) -> float:
        """Seed 004 Lemma 5.2's bound n/(4p²) + 2α/((1−α)²p²) + overflow term.

        The printed overflow term was lost in conversion; the rigorous upper bound of
        :func:`ikos_overflow_bound` stands in for it.  Seed 004 Table 3's IKOS MSE column is the first two
        terms.
        """
        return self.n / (4.0 * self.parameters.p**2) + self.noise_mse() + self.overflow_bound().mse_upper

    def mechanism(self) -> IKOSSum:
        """The description :func:`~shufflesim.accounting.account.account` takes: DLap(α) on the rounded sum
        (sensitivity p) within 2^{−σ} in TV of the view (:mod:`shufflesim.mechanisms.ikos`).  At ε it gives
        this protocol's δ (to its 1e-12 relative widening) and below ε the whole profile."""
        prm = self.parameters
        return IKOSSum(prm.eps, prm.p, prm.sigma, prm.q, n=prm.n)

    def privacy(self) -> PrivacyGuarantee:
        prm = self.parameters
        return PrivacyGuarantee(
            eps=prm.eps,
            delta=prm.delta,
            method="ikos-statistical-distance",
            notes=(
                "seed 004 Lemma 5.2 + Lemma F.2: delta = (1+e^eps)*2^-sigma (widened 1e-12 relative for float "
                "error, as the mechanism's accountant does); the comparison mechanism adds "
                "DLap(exp(-eps/p)) to the rounded sum (sensitivity p, pure eps-DP)",
                f"sigma={prm.sigma:.6g} from the reconstructed Theorem 6.1 / eq. (4) (docs/theory.md#summation-ikos-messages) with "
                f"m-1={prm.m - 1} shares, made worst-case by Lemma 6.1 ({prm.variant})",
            ) + ((f"delta = (1+e^eps)*2^-sigma = 2^{(math.log1p(math.exp(-prm.eps)) + prm.eps) / LN2 - prm.sigma:.6g}"
                  " underflows double precision and is reported as 0 (it is positive, below 1e-308)",)
                 if prm.delta == 0.0 else ()),
        )


# --- seed 004 Table 3 -----------------------------------------------------------------------------------------
def ikos_table3_row(n: int, eps: float, delta: float | None = None) -> dict:
    """shufflesim's values for seed 004 Table 3's IKOS rows at (n, ε, δ = 1/n² by default).

    Uses this module's defaults (p = ⌈√n⌉, q from :func:`default_modulus`, σ = log2((1+e^ε)/δ)).
    ``messages_ghazi`` is None with ``ghazi_reason`` (see :func:`ikos_messages_ghazi`).  ``mse`` is the
    worst-case MSE n/(4p²) + Var DLap/p², which is also what Table 3 reports for these rows.
    """
    delta = 1.0 / n**2 if delta is None else delta
    proto = IKOSSumProtocol.create(n, eps=eps, delta=delta)
    prm = proto.parameters
    sigma = prm.sigma_target
    try:
        ghazi, reason = ikos_messages_ghazi(n, prm.q, sigma), None
    except NotApplicableError as exc:
        ghazi, reason = None, str(exc)
    return {
        "n": n,
        "eps": eps,
        "delta": delta,
        "sigma": sigma,
        "p": prm.p,
        "q": prm.q,
        "log2_q": math.log2(prm.q),
        "messages_improved": prm.m,
        "messages_improved_shuffled_eq4": prm.m - 1,
        "messages_original": ikos_messages_original(n, prm.q, sigma),
        "messages_ghazi": ghazi,
        "ghazi_reason": reason,
        "mse": proto.mse_worst(),
        "mse_bound": proto.mse_bound(),
    }
