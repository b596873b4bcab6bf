"""Any shuffled ε0-LDP randomiser, via the clones reduction: the mechanism description.

``Clones(n, eps0)``: n users each running *some* ε0-LDP randomiser, shuffled.  Feldman, McMillan, Talwar
(FOCS 2021, arXiv:2012.12803) reduce every such mechanism to a pair of distributions over "clone" counts;
the pair accounted by ``tight`` is Koskela, Heikkilä, Honkela 2023 (arXiv:2106.00477) §6, eqs 6.1–6.8
(docs/theory.md#pairs-clones).  ``exact`` enumerates the same pair at small n; the ε0-LDP bounds of
Erlingsson et al. 2019 and Feldman et al. apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shufflesim.accounting.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.core.checks import check_int, check_positive

from ._common import LDP_METHODS, ldp_bound


@dataclass(frozen=True)
class Clones(Mechanism):
    """Any ε0-LDP randomiser shuffled among ``n`` users (the clones pair)."""

    kind: ClassVar[str] = "clones"
    summary: ClassVar[str] = "any eps0-LDP randomiser via Feldman et al.'s clones (seed 001 §6)"
    flags: ClassVar[tuple[Flag, ...]] = (Flag("n", "int", "number of users"), Flag("eps0", "float", "local epsilon > 0"))
    methods: ClassVar[tuple[str, ...]] = ("tight", "exact", *LDP_METHODS)

    n: int
    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting import bruteforce as BF
        from shufflesim.accounting.pairs import DEFAULT_TAIL_BOUND_MD, clones_pair

        if method == "tight":
            tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
            return clones_pair(self.n, self.eps0, as_rows=True, tail_bound=tb)
        return BF.clones_bruteforce(self.n, self.eps0)

    def bound(self, method: str, options: BoundOptions):
        return ldp_bound(method, self.n, self.eps0)


def calibrate_clones_eps0(n: int, eps: float, delta: float, *, compositions: int = 1, eps0_max: float = 30.0,
                          rtol: float = 1e-6, numerics: dict | None = None):
    """Largest ε0 for which any ε0-LDP randomiser shuffled among n users is (ε, δ)-DP (clones pair)."""
    from shufflesim.accounting.account import calibrate_mechanism

    return calibrate_mechanism(lambda e0: Clones(n, e0), "eps0", eps, delta, 1e-6, eps0_max, increasing=True,
                               compositions=compositions, rtol=rtol, numerics=numerics)
