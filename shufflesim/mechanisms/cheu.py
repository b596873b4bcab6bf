"""Cheu et al.'s unary real summation (seed 004 §1, Table 3): the mechanism description (``cheu-sum``).

``CheuSum(n, r, gamma)``: each of n users rounds x ∈ [0, 1] to x̄ ∈ {0..r}, writes it in unary on r bits and
sends every bit through binary blanket randomised response (keep w.p. 1 − γ, else a uniform bit: each bit
flips w.p. γ/2); all n·r bits go through one shuffler (Cheu, Smith, Ullman, Zeber, Zhilyaev, EUROCRYPT 2019,
arXiv:1808.01394, as seed 004 describes it; docs/theory.md#summation-cheu).  The analyser's view is a
multiset of bits, i.e. the count of ones, Bin(U, 1 − γ/2) + Bin(nr − U, γ/2) with U = Σ x̄
(:mod:`shufflesim.maths.rr_count`).

Method ``blanket-binomial``: the bound of :mod:`shufflesim.accounting.bounds.cheu` (an upper bound for the
adversary who also knows the others' inputs and blanket coins; the lower end is the exact δ of the all-zeros
neighbours).  It is the computation ``cheu-sum`` calibrates γ with, so ``account(protocol.mechanism(),
eps=[eps])`` reproduces the protocol's δ exactly.

Each user's r-bit report is r·log((2 − γ)/γ)-LDP (each bit is log((2 − γ)/γ)-LDP binary randomised
response), which :meth:`CheuSum.local_guarantee` states: the accountant caps every answer there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import ParameterError
from shufflesim.maths.rr import eps0_upper

#: most messages per user: a bin's tail window grows like r at the calibrated γ (m = nrγ ~ r², its standard
#: deviation ~ r); at r = 2000 one evaluation of the bound takes ~0.1-0.4 s at any n (seed 004 Table 3 uses r <= 317)
MAX_CHEU_MESSAGES = 2000
#: the largest n·r the bound is offered at: where its binomial error models (log-PMF, tail sums, scipy's CDF for
#: the bins' weights) were checked against mpmath (2e12); beyond, a refusal naming --messages.  (Both limits
#: are the description's accepted range; they stay here because importing the engine's package,
#: accounting.bounds, imports scipy.special, which a single-use CLI question must not.)
MAX_CHEU_NR = 2 * 10**12


def check_cheu_size(n: int, r: int, what: str = "cheu") -> None:
    """Refuse (:class:`ParameterError`) n·r > :data:`MAX_CHEU_NR`, beyond where the bound's binomial error models
    were checked: the accountant's validity range, which every caller that certifies with the bound (the
    description below, ``cheu-sum``'s calibration) checks through this one function."""
    if n * r <= MAX_CHEU_NR:
        return
    if n > MAX_CHEU_NR:
        raise ParameterError(f"{what}: n must be <= {MAX_CHEU_NR:.0e} (n*r <= {MAX_CHEU_NR:.0e} with r >= 1 "
                             f"message, where the bound's binomial error models were checked); got n={n}")
    raise ParameterError(f"{what}: n*r must be <= {MAX_CHEU_NR:.0e} (where the bound's binomial error models "
                         f"were checked); got n={n}, r={r}: give --messages <= {MAX_CHEU_NR // n}")


@dataclass(frozen=True)
class CheuSum(Mechanism):
    """``n`` users, ``r`` unary bits each through binary blanket randomised response with probability ``gamma``,
    one shuffler."""

    kind: ClassVar[str] = "cheu"
    summary: ClassVar[str] = "Cheu et al.'s unary summation: r bits per user, binary blanket RR, one shuffler"
    example: ClassVar[str] = "--n 2000 --messages 50 --gamma 0.3 --delta 1e-6"
    methods: ClassVar[tuple[str, ...]] = ("blanket-binomial",)
    flags: ClassVar[tuple[Flag, ...]] = (
        Flag("n", "int", "number of users"),
        Flag("messages", "int", f"bits per user r (1..{MAX_CHEU_MESSAGES})"),
        Flag("gamma", "float", "blanket probability per bit in (0, 1]"),
    )

    n: int
    r: int
    gamma: float
    #: mass of M below the first bin (None: the engine's ``default_tail``); cheu-sum passes the one it calibrated with
    tail: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "r", check_int("messages", self.r, minimum=1, maximum=MAX_CHEU_MESSAGES))
        check_cheu_size(self.n, self.r)
        object.__setattr__(self, "gamma", check_real("gamma", self.gamma, low=0.0, high=1.0, low_open=True))
        if self.tail is not None:
            object.__setattr__(self, "tail", check_real("tail", self.tail, low=0.0, high=1.0, low_open=True))

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
    def bound(self, method: str, options: BoundOptions):
        """δ(ε) and ε(δ) from :class:`~shufflesim.accounting.bounds.cheu.CheuCurves` (one per call: its
        ε-independent parts are computed once for every ε asked)."""
        from shufflesim.accounting.bounds.cheu import CheuCurves

        curves = CheuCurves(self.n, self.r, self.gamma, self.tail)

        def dfun(eps: float) -> DeltaBound:
            eps = check_real("eps", eps, low=0.0)
            up, low = curves.delta(eps)
            return DeltaBound(eps=eps, delta_upper=up, delta_lower=low, method="blanket-binomial",
                              notes=("upper: blanket-binomial bound for the adversary who knows the others' inputs "
                                     "and blanket coins (docs/theory.md#summation-cheu); lower: the analyser's "
                                     "count of ones when every other user holds 0",))

        def efun(delta: float) -> EpsBound:
            delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
            up, low = curves.eps(delta, self.local_guarantee() or 1.0)
            return EpsBound(delta=delta, eps_upper=up, eps_lower=low, method="blanket-binomial",
                            notes=("blanket-binomial bound and the all-zeros lower pair inverted by bisection",))

        return dfun, efun
