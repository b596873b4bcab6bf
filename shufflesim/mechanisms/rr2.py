"""Shuffled binary randomised response in seed 001 §4's parametrisation: the mechanism description.

``RR2(n, eps0)``: each of n users flips its bit with probability 1/(e^{ε0}+1).  Methods:

* ``tight`` / ``exact`` — Feldman, McMillan, Talwar's stronger clone pair (SODA 2023, arXiv:2208.04591;
  docs/theory.md#pairs-stronger-clones): a bound over every pair of neighbouring data sets, attained by
  binary randomised response, accounted by the PLD engine (``exact``: enumerated, n ≤ 2000);
* ``tight-koskela`` / ``exact-koskela`` — Koskela, Heikkilä, Honkela's pair (arXiv:2106.00477 §4, eq 4.1;
  docs/theory.md#pairs-rr2): exact for the data set "all others hold 0, the target switches 0 → 1" only,
  which is *not* the worst data set (FINDINGS.md item 3), so it is no bound for the mechanism;
* as k-RR it has k = 2 and γ = 2/(e^{ε0}+1), so Balle et al.'s blanket bounds and the ε0-LDP bounds apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.rr import gamma_from_eps0

from ._common import BLANKET_METHODS, LDP_METHODS, blanket_bound, ldp_bound


@dataclass(frozen=True)
class RR2(Mechanism):
    """Shuffled binary randomised response with local privacy ``eps0`` among ``n`` users."""

    kind: ClassVar[str] = "rr2"
    summary: ClassVar[str] = 'shuffled binary randomised response (seed 001 §4)'
    flags: ClassVar[tuple[Flag, ...]] = (Flag("n", "int", "number of users"), Flag("eps0", "float", "local epsilon > 0"))
    methods: ClassVar[tuple[str, ...]] = ("tight", "exact", "tight-koskela", "exact-koskela", *BLANKET_METHODS,
                                          *LDP_METHODS)

    n: int
    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))

    @property
    def gamma(self) -> float:
        """Blanket probability 2/(e^{ε0}+1)."""
        return gamma_from_eps0(self.eps0, 2)

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "eps0": self.eps0, "gamma": self.gamma}

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting import bruteforce as BF
        from shufflesim.accounting.pairs import rr2_pair

        from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD
        from shufflesim.accounting.pairs.variation import stronger_clones_pair

        if method == "tight":  # valid for every data set; binary RR attains it (docs/theory.md#pairs-stronger-clones)
            tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
            return stronger_clones_pair(self.n, self.eps0, as_rows=True, tail_bound=tb)
        if method == "exact":
            if self.n > 2000:
                raise NotApplicableError(f"exact enumeration of the stronger clone pair needs n <= 2000; got n={self.n}")
            return stronger_clones_pair(self.n, self.eps0, tail_bound=0.0, as_rows=False)
        if method == "tight-koskela":  # seed 001 eq 4.1: the all-zeros data set only (FINDINGS.md item 3)
            return rr2_pair(self.n, self.eps0, **({} if tail_bound is None else {"tail_bound": tail_bound}))
        return BF.rr2_bruteforce(self.n, self.eps0)

    def bound(self, method: str, options: BoundOptions):
        if method in BLANKET_METHODS:
            return blanket_bound(method, self.n, 2, self.gamma, options)
        return ldp_bound(method, self.n, self.eps0)
