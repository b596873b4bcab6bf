"""Biswas, Jung, Palamidessi's fixed-data-set histogram setting: the mechanism description.

``BiswasCount(n, k, eps0, n_x0)``: shuffled k-RR (ε0 form) where ``n_x0`` of the other n − 1 users hold the
target's value x0; the released quantity is the count of x0 (Biswas, Jung, Palamidessi, "Tight differential
privacy guarantees for the shuffle model with k-randomized response", Definition IV.2, Theorem IV.1,
Appendix A eqs 11–13; docs/theory.md#pairs-biswas).

* ``biswas`` — their eq 6 as published (*not* a certified bound: docs/theory.md#bounds-biswas);
* ``exact`` / ``tight`` — the exact δ of the released count (any n);
* ``exact-histogram`` — the full released histogram by enumeration (small n, k).  The count is a
  post-processing of the histogram, so the histogram's δ only bounds the count's from above: its exact
  value is reported as ``bound_lower``/``bound_upper`` and the lower end is the count's exact δ (issue 17).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.core.checks import check_int, check_positive


@dataclass(frozen=True)
class BiswasCount(Mechanism):
    """The released count of x0 when ``n_x0`` of the others hold x0 (k-RR with local privacy ``eps0``)."""

    kind: ClassVar[str] = "biswas"
    summary: ClassVar[str] = "Biswas et al.'s fixed-dataset histogram setting (seed 003 §IV)"
    example: ClassVar[str] = "--n 100 --k 10 --eps0 2 --n-x0 80 --eps 0.1 --method exact"
    flags: ClassVar[tuple[Flag, ...]] = (Flag("n", "int", "number of users"), Flag("k", "int", "number of categories"),
             Flag("eps0", "float", "local epsilon > 0"),
             Flag("n-x0", "int", "other users holding the target's value x0"))
    methods: ClassVar[tuple[str, ...]] = ("biswas", "exact", "exact-histogram", "tight")

    n: int
    k: int
    eps0: float
    n_x0: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "k", check_int("k", self.k, minimum=2))
        object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))
        object.__setattr__(self, "n_x0", check_int("n_x0", self.n_x0, minimum=0, maximum=self.n - 1))

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting.exact import bruteforce as BF
        from shufflesim.accounting.pairs import biswas_count_pair

        if method == "exact-histogram":
            return BF.biswas_histogram_exact(self.n, self.k, self.eps0, self.n_x0)
        tb = {} if tail_bound is None else {"tail_bound": tail_bound}
        return biswas_count_pair(self.n, self.k, self.eps0, self.n_x0, **tb)

    def dominating_pair(self, method: str) -> str | None:
        if method == "exact-histogram":
            return "the full released histogram for this data set (the count is a post-processing of it)"
        return None

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        from shufflesim.accounting.pairs import biswas_count_pair
        from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon

        pair = biswas_count_pair(self.n, self.k, self.eps0, self.n_x0)
        if eps is not None:
            vals = [r.delta_lower for r in tight_delta(pair, list(eps), compositions=compositions)]
        else:
            vals = [r.eps_lower for r in tight_epsilon(pair, list(delta), compositions=compositions)]
        return vals, "the exact delta of the released count (this data set)"

    def bound(self, method: str, options: BoundOptions):
        from shufflesim.accounting import bounds as B

        kw = dict(n=self.n, k=self.k, eps0=self.eps0, n_x0=self.n_x0)
        return (lambda e: B.biswas_delta(e, **kw), lambda d: B.biswas_eps(d, **kw))
