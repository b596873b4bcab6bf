"""Shuffled binary randomised response in seed 001 §4's parametrisation: the mechanism description.

``RR2(n, eps0)``: each of n users flips its bit with probability 1/(e^{ε0}+1); Koskela, Heikkilä, Honkela
2023 (arXiv:2106.00477) §4, eq 4.1 give the neighbouring pair (docs/theory.md#pairs-rr2).  As k-RR it has
k = 2 and γ = 2/(e^{ε0}+1), so Balle et al.'s blanket bounds and the ε0-LDP bounds apply too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import ParameterError
from shufflesim.maths.rr import gamma_from_eps0

from ._common import BLANKET_METHODS, LDP_METHODS, blanket_bound, ldp_bound


@dataclass(frozen=True)
class RR2(Mechanism):
    """Shuffled binary randomised response with local privacy ``eps0`` among ``n`` users."""

    kind: ClassVar[str] = "rr2"
    summary: ClassVar[str] = 'shuffled binary randomised response (seed 001 §4)'
    flags: ClassVar[tuple[Flag, ...]] = (Flag("n", "int", "number of users"), Flag("eps0", "float", "local epsilon > 0"))
    methods: ClassVar[tuple[str, ...]] = ("tight", "exact", *BLANKET_METHODS, *LDP_METHODS)

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

        if method == "tight":
            return rr2_pair(self.n, self.eps0, **({} if tail_bound is None else {"tail_bound": tail_bound}))
        return BF.rr2_bruteforce(self.n, self.eps0)

    def bound(self, method: str, options: BoundOptions):
        if method in BLANKET_METHODS:
            return blanket_bound(method, self.n, 2, self.gamma, options)
        return ldp_bound(method, self.n, self.eps0)
