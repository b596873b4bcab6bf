"""Cheu et al.'s unary real summation (seed 004 §1, Table 3): the mechanism description (``cheu-sum``).

``CheuSum(n, r, gamma)``: each of n users rounds x ∈ [0, 1] to x̄ ∈ {0..r}, writes it in unary on r bits and
sends every bit through binary blanket randomised response (keep w.p. 1 − γ, else a uniform bit: each bit
flips w.p. γ/2); all n·r bits go through one shuffler (Cheu, Smith, Ullman, Zeber, Zhilyaev, EUROCRYPT 2019,
arXiv:1808.01394, as seed 004 describes it; docs/theory.md#summation-cheu).  The analyser's view is a
multiset of bits, i.e. the count of ones, Bin(U, 1 − γ/2) + Bin(nr − U, γ/2) with U = Σ x̄
(:mod:`shufflesim.maths.rr_count`).

Method ``blanket-binomial`` (shufflesim's bound, docs/theory.md#summation-cheu, derived in
docs/theory.md#summation-cheu-profile; :func:`cheu_delta`): an upper bound for the stronger adversary who
also knows the others' rounded inputs and which of their bits were blanketed.  Given those, the view is the
target's count of ones plus Bin(M, ½), M ~ Bin((n−1)r, γ) the others' blanketed bits; the target's count is
Bin(r, 1 − γ/2) (x̄ = r) against Bin(r, γ/2) (x̄ = 0), the worst pair (stochastic order and monotone
likelihood ratio, docs/theory.md#summation-cheu-profile; checked by brute force in
tests/test_sum_baselines.py), so δ = E_M[δ(P_M‖Q_M)]; δ(P_m‖Q_m) is non-increasing in m, so M is binned
and each bin charged its smallest m, and the masses outside the computed windows are added.  Forgetting
the coins is post-processing, so the bound holds for the analyser's view.  This is the computation
``cheu-sum`` calibrates γ with, so ``account(protocol.mechanism(), eps=[eps])`` reproduces the protocol's δ
exactly.

Lower bound (docs/theory.md#summation-cheu-profile): the exact δ of the analyser's view for the neighbours
"every user holds 0" against "the target holds 1" (the count of ones over (n−1)r zero bits plus the target's
r bits; :func:`shufflesim.maths.rr_count.rr_count_pair_window`), less the PMFs' round-off (1e-10 relative
each, times 1 + e^ε).

Each user's r-bit report is r·log((2 − γ)/γ)-LDP (each bit is log((2 − γ)/γ)-LDP binary randomised
response), which :meth:`CheuSum.local_guarantee` states: the accountant caps every answer there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from shufflesim.accounting.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.accounting.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import ParameterError
from shufflesim.maths.rr import eps0_upper

#: most messages per user: the bound convolves O(r)-term PMFs in ~64 bins (measured: r = 1000 takes ~0.5 s
#: per evaluation, r = 10^4 several seconds), and seed 004 Table 3 uses r <= 317
MAX_CHEU_MESSAGES = 2000
#: most bits in all (n·r): beyond, one evaluation of the bound convolves windows of 10^5 entries per bin
MAX_CHEU_BITS = 10**8
#: relative accuracy claimed for the PMFs of the lower bound (scipy's binomial PMF and a direct convolution
#: of non-negative terms are accurate to ~1e-13 relative; tests/test_audit_rr_count.py checks 2e-15 at small n)
_PMF_RTOL = 1e-10


def _log_binom(n: int, p: float, lo: int, hi: int) -> np.ndarray:
    from scipy import stats

    k = np.arange(lo, hi + 1)
    return stats.binom.logpmf(k, n, p)


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    if eps <= 700.0:
        return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))
    # e^eps overflows: sum of p (1 - e^{eps + log q - log p}) over the atoms where that is positive
    with np.errstate(divide="ignore", invalid="ignore"):  # log 0 = -inf; -inf - -inf = nan is dropped below
        d = eps + np.log(q) - np.log(p)
    m = (p > 0) & (d < 0)
    return float(np.sum(p[m] * -np.expm1(d[m])))


def _pair_at(m: int, r: int, q: float, tail: float):
    """(P_m, Q_m, dropped): P_m = Bin(r, 1−q) + Bin(m, ½), Q_m = Bin(r, q) + Bin(m, ½) on the window of
    Bin(m, ½) outside which at most ``tail`` per side is dropped."""
    from scipy import stats

    if m == 0:
        noise, dropped = np.ones(1), 0.0
    else:
        lo = int(stats.binom.ppf(tail, m, 0.5))
        hi = int(stats.binom.isf(tail, m, 0.5))
        noise = np.exp(_log_binom(m, 0.5, lo, hi))
        dropped = 2.0 * tail
    tp = np.exp(_log_binom(r, 1.0 - q, 0, r))
    tq = np.exp(_log_binom(r, q, 0, r))
    return np.convolve(noise, tp), np.convolve(noise, tq), dropped  # direct: positive terms, relative accuracy


def cheu_components(n: int, r: int, gamma: float, *, bins: int = 64, tail: float = 1e-16):
    """(mass charged δ = 1, [(weight, P_m, Q_m, dropped) per bin of M]): everything of :func:`cheu_delta`
    that does not depend on ε, so that many ε are evaluated at the cost of one."""
    from scipy import stats

    q = gamma / 2.0
    n0 = (n - 1) * r
    if n0 == 0:
        return 0.0, [(1.0, *_pair_at(0, r, q, tail))]
    m_lo = int(stats.binom.ppf(tail, n0, gamma))
    m_hi = int(stats.binom.isf(tail, n0, gamma)) + 1
    edges = np.unique(np.linspace(m_lo, m_hi, bins + 1).round().astype(np.int64))
    cdf = stats.binom.cdf(edges - 1, n0, gamma)
    weights = np.diff(np.r_[cdf, 1.0])  # bin b = [edges[b], edges[b+1]); the last bin takes the upper tail
    below = float(cdf[0])  # P(M < m_lo): charged delta = 1
    return below, [(float(w), *_pair_at(int(a), r, q, tail)) for a, w in zip(edges, weights) if w > 0]


def cheu_delta_from(components, eps: float) -> float:
    """:func:`cheu_delta` at ``eps`` from :func:`cheu_components`."""
    below, parts = components
    total = below
    for w, pp, qq, dropped in parts:  # ~64 bins
        total += w * min(1.0, _hockey(pp, qq, eps) + dropped)
    return min(1.0, total)


def cheu_delta(n: int, r: int, gamma: float, eps: float, *, bins: int = 64, tail: float = 1e-16) -> float:
    """Certified upper bound on δ(ε) of Cheu et al.'s protocol ("blanket-binomial", module docstring)."""
    if gamma >= 1.0:
        return 0.0
    return cheu_delta_from(cheu_components(n, r, gamma, bins=bins, tail=tail), eps)


@dataclass(frozen=True)
class CheuSum(Mechanism):
    """``n`` users, ``r`` unary bits each through binary blanket randomised response with probability ``gamma``,
    one shuffler."""

    kind: ClassVar[str] = "cheu"
    summary: ClassVar[str] = "Cheu et al.'s unary summation: r bits per user, binary blanket RR, one shuffler"
    methods: ClassVar[tuple[str, ...]] = ("blanket-binomial",)
    flags: ClassVar[tuple[Flag, ...]] = (
        Flag("n", "int", "number of users"),
        Flag("messages", "int", f"bits per user r (1..{MAX_CHEU_MESSAGES})"),
        Flag("gamma", "float", "blanket probability per bit in (0, 1]"),
    )

    n: int
    r: int
    gamma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "r", check_int("messages", self.r, minimum=1, maximum=MAX_CHEU_MESSAGES))
        object.__setattr__(self, "gamma", check_real("gamma", self.gamma, low=0.0, high=1.0, low_open=True))
        if self.n * self.r > MAX_CHEU_BITS:
            raise ParameterError(f"cheu: n*r = {self.n * self.r:.3g} bits is more than {MAX_CHEU_BITS:.0e} (one "
                                 "evaluation of the bound would take minutes); reduce n or the messages")

    @classmethod
    def from_flags(cls, *, n, messages, gamma) -> "CheuSum":
        return cls(n, messages, gamma)

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "messages": self.r, "gamma": self.gamma, "eps0_bit": self._eps0_bit()}

    def _eps0_bit(self) -> float:
        """log((2 − γ)/γ): the local privacy of one bit's randomised response (flip probability γ/2)."""
        return math.log1p(2.0 * (1.0 - self.gamma) / self.gamma)

    def local_guarantee(self) -> float | None:
        """r·log((2 − γ)/γ), raised by maths.rr.eps0_upper's margin (None when it is 0 or infinite)."""
        e = self.r * self._eps0_bit()
        e = eps0_upper(e)
        return e if math.isfinite(e) and e > 0 else None

    # --- the curves -------------------------------------------------------------------------------------
    def _lower_pair(self):
        from shufflesim.maths.rr_count import rr_count_pair_window

        return rr_count_pair_window((self.n - 1) * self.r, 0, self.gamma / 2.0, self.r)[1:]

    def bound(self, method: str, options: BoundOptions):
        cache: dict[str, Any] = {}

        def components():
            if "c" not in cache:
                cache["c"] = cheu_components(self.n, self.r, self.gamma) if self.gamma < 1.0 else None
                cache["pq"] = self._lower_pair()
            return cache["c"], cache["pq"]

        def dfun(eps: float) -> DeltaBound:
            eps = check_real("eps", eps, low=0.0)
            comp, (P, Q) = components()
            up = 0.0 if comp is None else cheu_delta_from(comp, eps)
            exact = max(_hockey(P, Q, eps), _hockey(Q, P, eps))
            err = _PMF_RTOL * (1.0 + math.exp(min(eps, 700.0)))
            low = max(0.0, exact - err)
            return DeltaBound(eps=eps, delta_upper=up, delta_lower=min(low, up), method="blanket-binomial",
                              notes=("upper: blanket-binomial bound for the adversary who knows the others' inputs "
                                     "and blanket coins (docs/theory.md#summation-cheu); lower: the analyser's "
                                     "count of ones when every other user holds 0",))

        def efun(delta: float) -> EpsBound:
            from shufflesim.accounting.bounds.transforms import invert_delta_curve

            delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
            hi = self.local_guarantee() or 1.0
            up = math.inf
            if dfun(hi).delta_upper <= delta:  # else: the truncated mass exceeds delta; the cap answers
                up, _, _ = invert_delta_curve(lambda e: dfun(e).delta_upper, delta, lo=0.0, hi=hi, rtol=1e-9)
            low = 0.0
            if dfun(0.0).delta_lower > delta:
                top = hi
                while dfun(top).delta_lower > delta:
                    top *= 2.0
                _, below, _ = invert_delta_curve(lambda e: dfun(e).delta_lower, delta, lo=0.0, hi=top, rtol=1e-9)
                low = 0.0 if below is None else below
            return EpsBound(delta=delta, eps_upper=up, eps_lower=min(low, up), method="blanket-binomial",
                            notes=("blanket-binomial bound and the all-zeros lower pair inverted by bisection",))

        return dfun, efun
