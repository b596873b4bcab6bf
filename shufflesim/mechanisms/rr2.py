"""Shuffled binary randomised response in seed 001 §4's parametrisation: the mechanism description.

``RR2(n, eps0)``: each of n users flips its bit with probability 1/(e^{ε0}+1); the analyser sees the
shuffled reports (equivalently their count).  Methods (docs/theory.md#exact-rr2):

* ``exact`` (the default up to n = 10⁵ and, single use, at 10⁶ < n <= 10⁹; ``tight`` otherwise: :meth:`RR2.default_for`;
  available single use up to n = 10⁹, composed up to 10⁶) — the mechanism's true δ(ε) / ε(δ): the maximum over
  *every* neighbouring pair of data sets (others hold m ones, m = 0..n−1, the target switches 0 ↔ 1), computed and
  certified from both sides by :mod:`shufflesim.accounting.exact.exact_rr2` (a branch and bound over m that proves no
  m is worse; above n = 10⁶ a cover of every m by pieces: ε(δ) an interval of relative width 10⁻³
  (``exact_rr2.POP_EPS_RTOL``), δ(ε) one of relative width 2·10⁻² (``exact_rr2.POP_DELTA_RTOL``);
  docs/theory.md#exact-rr2-population).
  With ``compositions > 1`` it is a bracket: the composed exact δ of the worst single-use data sets (a lower
  bound) and the stronger clone pair composed (an upper bound); the notes say so;
* ``tight`` — upper end: Feldman, McMillan, Talwar's stronger clone pair (SODA 2023, arXiv:2208.04591;
  docs/theory.md#pairs-stronger-clones), a bound over every data set accounted by the PLD engine, which binary
  RR does *not* attain in general (it would if the adversary knew which reports are clones); its own
  numerical bracket is reported as ``bound_lower``/``bound_upper``, and the lower end is binary RR's own exact
  value (:func:`._common.binary_rr_lower`: the worst data set for a single use up to n = 10⁴, else the data
  sets "all others hold 0" / "all others hold 1"), never the pair's own numerical lower end;
* ``tight-koskela`` / ``exact-koskela`` — Koskela, Heikkilä, Honkela's pair (arXiv:2106.00477 §4, eq 4.1;
  docs/theory.md#pairs-rr2): exact for the one data set "all others hold 0" only, which is not always the
  worst (FINDINGS.md item 3), so it gives a *lower* end; the upper end is the local guarantee (ε ≤ ε0);
* as k-RR it has k = 2 and γ = 2/(e^{ε0}+1), so Balle et al.'s blanket bounds and the ε0-LDP bounds apply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import NotApplicableError
from shufflesim.maths.rr import gamma_from_eps0

from ._common import BLANKET_METHODS, FELDMAN_PAIR, LDP_METHODS, STRONGER_CLONES, binary_rr_lower, blanket_bound, ldp_bound

_KOSKELA_NOTE = ("seed 001's eq 4.1 pair is exact for the one data set 'all others hold 0' (both directions), which "
                 "is not always the worst: it gives a genuine lower end only; the upper end is the local guarantee "
                 "(eps <= eps0 per use); use --method exact for the mechanism's value")

@dataclass(frozen=True)
class RR2(Mechanism):
    """Shuffled binary randomised response with local privacy ``eps0`` among ``n`` users."""

    kind: ClassVar[str] = "rr2"
    summary: ClassVar[str] = 'shuffled binary randomised response (seed 001 §4)'
    example: ClassVar[str] = "--n 1000 --eps0 2 --eps 0.5 1"
    flags: ClassVar[tuple[Flag, ...]] = (Flag("n", "int", "number of users"), Flag("eps0", "float", "local epsilon > 0"))
    methods: ClassVar[tuple[str, ...]] = ("exact", "tight", "tight-koskela", "exact-koskela", *BLANKET_METHODS,
                                          *LDP_METHODS)

    n: int
    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))

    @property
    def default_method(self) -> str:
        """``exact`` up to n = 10⁵ (about a second), ``tight`` above (seconds at any n, two-sided)."""
        from shufflesim.accounting.exact.exact_rr2 import DEFAULT_EXACT_MAX_N

        return "exact" if self.n <= DEFAULT_EXACT_MAX_N else "tight"

    def default_for(self, compositions: int = 1) -> str:
        """Single use at 10⁶ < n <= 10⁹: ``exact`` too (the population cover, seconds; ε(δ) an interval 0.1 % wide,
        δ(ε) 2 % wide: ``exact_rr2.POP_EPS_RTOL``, ``POP_DELTA_RTOL``; docs/theory.md#exact-rr2-population), where
        ``tight``'s stronger clone pair is ~22 % wide; otherwise
        :attr:`default_method` (composed above 10⁶ the exact bracket is refused, 10⁵ < n <= 10⁶ it takes a minute)."""
        from shufflesim.accounting.exact.exact_rr2 import MAX_N_EXACT, MAX_N_POPULATION

        if compositions == 1 and MAX_N_EXACT < self.n <= MAX_N_POPULATION:
            return "exact"
        return self.default_method

    @property
    def gamma(self) -> float:
        """Blanket probability 2/(e^{ε0}+1)."""
        return gamma_from_eps0(self.eps0, 2)

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "eps0": self.eps0, "gamma": self.gamma}

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting.pairs import rr2_pair

        from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD
        from shufflesim.accounting.pairs.variation import stronger_clones_pair

        if method == "tight":  # a bound for every data set (docs/theory.md#pairs-stronger-clones)
            tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
            return stronger_clones_pair(self.n, self.eps0, as_rows=True, tail_bound=tb)
        if method == "exact":
            raise NotApplicableError("rr2's exact method is the maximum over every data set (accounting.exact_rr2); "
                                     "it has no single pair to compose with other mechanisms: use tight")
        if method == "tight-koskela":  # seed 001 eq 4.1: the all-zeros data set only (FINDINGS.md item 3)
            return rr2_pair(self.n, self.eps0, **({} if tail_bound is None else {"tail_bound": tail_bound}))
        from shufflesim.accounting.exact import bruteforce as BF  # imported here: it imports scipy.special (~0.3 s)

        return BF.rr2_bruteforce(self.n, self.eps0)

    def direct(self, method, eps_l, delta_l, compositions, run_pair):
        """``exact`` from :mod:`~shufflesim.accounting.exact.exact_rr2`; ``tight`` and the Koskela methods with their
        lower / upper ends made genuine bounds on the mechanism (module docstring)."""
        if method == "exact":
            from shufflesim.accounting.exact.exact_engine import exact_binary_rr

            # composed: the upper end is the tight method's answer on the stronger clone pair (issue 28: never looser)
            out, _ = exact_binary_rr(self.n, self.eps0, self.eps0, eps_l, delta_l, compositions,
                                     lambda: run_pair("tight"))
            return out, ["mechanism: shuffled binary RR, exact over every neighbouring pair of data sets "
                         "(docs/theory.md#exact-rr2)"]
        if method in ("tight-koskela", "exact-koskela"):
            results, notes = run_pair(method)
            out = []
            for r in results:
                if isinstance(r, DeltaBound):
                    out.append(replace(r, delta_upper=1.0 if r.eps < self.eps0 * compositions else 0.0))
                elif isinstance(r, EpsBound):
                    out.append(replace(r, eps_upper=math.inf))  # capped at the local guarantee by the accountant
                else:
                    out.append(r)
            return out, notes + [_KOSKELA_NOTE]
        return None

    def dominating_pair(self, method: str) -> str | None:
        """``tight`` evaluates the stronger clone pair and ``feldman-numerical`` Feldman et al.'s clone pair:
        both dominate binary RR's view without being its law on any data set."""
        return {"tight": STRONGER_CLONES, "feldman-numerical": FELDMAN_PAIR}.get(method)

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        """The lower end of a dominating pair's answer: binary RR's own exact value (:func:`._common.binary_rr_lower`)."""
        if self.dominating_pair(method) is None:
            return None
        return binary_rr_lower(self.n, self.eps0, eps, delta, compositions)

    def bound(self, method: str, options: BoundOptions):
        """The published bound (Feldman et al.'s numerical method evaluates a dominating pair: its own bracket is
        reported as ``bound_*`` and the accountant takes the lower end from :meth:`genuine_lower`)."""
        if method in BLANKET_METHODS:
            dfun, efun = blanket_bound(method, self.n, 2, self.gamma, options)
        else:
            dfun, efun = ldp_bound(method, self.n, self.eps0)
        return dfun, efun
