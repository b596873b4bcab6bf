"""Any shuffled ε0-LDP randomiser, via the clones reduction: the mechanism description.

``Clones(n, eps0)``: n users each running *some* ε0-LDP randomiser, shuffled.  Feldman, McMillan, Talwar
(FOCS 2021, arXiv:2012.12803) reduce every such mechanism to a pair of distributions over "clone" counts.
``tight`` accounts the *stronger* clone pair of Feldman, McMillan, Talwar (SODA 2023, arXiv:2208.04591;
docs/theory.md#pairs-stronger-clones), the tightest pair shufflesim knows for a general ε0-LDP randomiser
(it is also the variation-ratio pair of Wang et al. 2024 with the general parameters, so ``variation-ratio``
gives the same answer); ``tight-koskela`` accounts Koskela, Heikkilä, Honkela 2023 (arXiv:2106.00477) §6,
eqs 6.1–6.8 as printed (docs/theory.md#pairs-clones), the default before issue 9.  ``exact`` enumerates the
stronger clone pair at small n (no truncation); ``best`` is the smallest certified upper bound of all
methods; the ε0-LDP bounds of Erlingsson et al. 2019 and Feldman et al. apply.

Lower ends (issue 17; docs/theory.md#lower-ends).  Every pair above only *dominates* the question's
answer (the worst case over all ε0-LDP randomisers and data sets): no randomiser is known to attain it
(binary randomised response does not in general).  So each pair-based answer reports its pair's numerical
bracket as ``bound_lower``/``bound_upper`` (``exact``: the stronger clone pair's exact δ — exact for the
*pair*, not for the question), certifies the upper end through it, and takes the lower end from binary
randomised response at ε0 (an ε0-LDP randomiser, so its δ is a lower bound on the worst case):
:func:`~._common.binary_rr_lower`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.core.checks import check_int, check_positive

from ._common import FELDMAN_PAIR, KOSKELA_CLONES, LDP_METHODS, STRONGER_CLONES, binary_rr_lower, ldp_bound

#: the pair each pair-based method (and feldman-numerical) evaluates; every one only dominates the answer
_DOMINATING = {"tight": STRONGER_CLONES, "variation-ratio": STRONGER_CLONES + " (= variation-ratio pair)",
               "exact": STRONGER_CLONES + ", enumerated", "tight-koskela": KOSKELA_CLONES,
               "feldman-numerical": FELDMAN_PAIR}


@dataclass(frozen=True)
class Clones(Mechanism):
    """Any ε0-LDP randomiser shuffled among ``n`` users (the clones pair)."""

    kind: ClassVar[str] = "clones"
    summary: ClassVar[str] = "any eps0-LDP randomiser via Feldman et al.'s clones (seed 001 §6)"
    example: ClassVar[str] = "--n 10000 --eps0 4 --delta 1e-6"
    flags: ClassVar[tuple[Flag, ...]] = (Flag("n", "int", "number of users"), Flag("eps0", "float", "local epsilon > 0"))
    methods: ClassVar[tuple[str, ...]] = ("tight", "tight-koskela", "variation-ratio", "exact", *LDP_METHODS)

    n: int
    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting.pairs import DEFAULT_TAIL_BOUND_MD, clones_pair
        from shufflesim.accounting.pairs.variation import stronger_clones_pair, variation_ratio_pair, vr_params_ldp

        tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
        if method == "tight":
            return stronger_clones_pair(self.n, self.eps0, as_rows=True, tail_bound=tb)
        if method == "tight-koskela":
            return clones_pair(self.n, self.eps0, as_rows=True, tail_bound=tb)
        if method == "variation-ratio":
            return variation_ratio_pair(self.n, *vr_params_ldp(self.eps0), as_rows=True, tail_bound=tb)
        if self.n > 2000:
            from shufflesim.errors import NotApplicableError

            raise NotApplicableError(f"exact enumeration of the stronger clone pair needs n <= 2000; got n={self.n}")
        return stronger_clones_pair(self.n, self.eps0, tail_bound=0.0, as_rows=False)

    def bound(self, method: str, options: BoundOptions):
        return ldp_bound(method, self.n, self.eps0)

    def dominating_pair(self, method: str) -> str | None:
        return _DOMINATING.get(method)

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        vals, what = binary_rr_lower(self.n, self.eps0, eps, delta, compositions)
        return vals, what + " (binary RR is an eps0-LDP randomiser)"


def calibrate_clones_eps0(n: int, eps: float, delta: float, *, compositions: int = 1, eps0_max: float = 30.0,
                          rtol: float = 1e-6, numerics: dict | None = None):
    """Largest ε0 for which any ε0-LDP randomiser shuffled among n users is (ε, δ)-DP (clones pair)."""
    from shufflesim.accounting.account import calibrate_mechanism

    return calibrate_mechanism(lambda e0: Clones(n, e0), "eps0", eps, delta, 1e-6, eps0_max, increasing=True,
                               compositions=compositions, rtol=rtol, numerics=numerics)
