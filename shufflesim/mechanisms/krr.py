"""Shuffled k-ary randomised response: the mechanism description.

``KRR(n, k, gamma, relation)`` is n users each running k-RR with blanket probability γ (equivalently
local privacy ε0, :meth:`KRR.from_eps0`; the conversion is :mod:`shufflesim.maths.rr`), their reports
shuffled.  Accounted by:

* ``blanket`` (the default for the shuffled reports, issue 30) — single use: the blanket pair (for k-RR the weak
  adversary's pair) above and the exact δ of the data sets "the others all hold 0, 1 or a third value" below,
  both as sum forms evaluated by :mod:`shufflesim.accounting.engines.blanket_fft` (certified, any n: seconds at
  n = 1e8); composed: ``tight``'s answer with a note;
* ``tight`` / ``exact`` — the neighbouring pair of the chosen :class:`~shufflesim.accounting.model.mechanism.Relation`
  (strong-1d, strong, weak; Koskela, Heikkilä, Honkela 2023, arXiv:2106.00477, §5; docs/theory.md#pairs-krr),
  by the PLD accountant or by brute-force enumeration (small n); for ``shuffled`` (the shuffled reports
  alone) ``tight`` is the stronger clone pair at k-RR's ε0 (docs/theory.md#pairs-stronger-clones);
* ``balle``, ``bennett``, ``hoeffding`` — Balle, Bell, Gascón, Nissim 2019 (arXiv:1903.02837), Thm 3.1 and
  their numerical bounds;
* ``erlingsson``, ``feldman``, ``feldman-numerical`` — bounds for any shuffled ε0-LDP randomiser.

Lower ends (issue 17; docs/theory.md#lower-ends).  The ``strong`` and ``weak`` pairs are the laws of those
adversaries' views (for every data set: the removed truthful reports are known to them), so their
brackets are the mechanism's, ``exact`` included.  ``strong-1d`` is a stated pair, not the law of any view:
its bracket is reported as ``bound_lower``/``bound_upper`` and it has no lower end.  For ``shuffled`` the
stronger clone pair (and Feldman et al.'s pair of ``feldman-numerical``) only dominate the view: the pair's
bracket is ``bound_*`` and the lower end is :func:`shuffled_lower`, the δ of explicit data sets.  ``best``
takes the smallest certified upper end among all valid methods (stronger clones, weak, strong, published)
with that same lower end.

Binary randomised response in seed 001 §4's parametrisation is :class:`shufflesim.mechanisms.rr2.RR2`;
the blanket summation protocol's levels are ``KRR`` with k + 1 values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism, Relation
from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.rr import eps0_from_gamma, eps0_upper, gamma_from_eps0

#: above this eps0 accounting answers from the local guarantee (accounting.account.LDP_ONLY_EPS0)
LDP_ONLY_EPS0 = 700.0

from ._common import (BLANKET_METHODS, FELDMAN_PAIR, LDP_METHODS, STRONGER_CLONES, binary_rr_lower, blanket_bound,
                      ldp_bound)

#: what ``strong-1d``'s pair is, as reported in ``bound_pair``
STRONG_1D_PAIR = "strong-1d pair of seed 001 eq 5.1 as stated (not the law of any view)"

#: the view accounted when no adversary is named: the shuffled reports, the view the protocol releases (the
#: default of ``simulate krr``, ``account krr`` and the library alike; docs/theory.md#adversaries)
DEFAULT_ADVERSARY = Relation.SHUFFLED

#: largest k accepted (messages are stored as unsigned integers of at most 32 bits)
MAX_K = 2**31 - 1


@dataclass(frozen=True)
class KRR(Mechanism):
    """Shuffled k-RR: ``n`` users, ``k`` values, blanket probability ``gamma`` ∈ (0, 1], and the
    neighbouring ``relation`` for pair-based methods (None: only the published bounds apply)."""

    kind: ClassVar[str] = "krr"
    summary: ClassVar[str] = 'shuffled k-ary randomised response (seeds 000/001 §5)'
    example: ClassVar[str] = "--n 1000 --k 4 --gamma 0.25 --delta 1e-6"
    flags: ClassVar[tuple[Flag, ...]] = (
        Flag("n", "int", "number of users"),
        Flag("k", "int", "number of categories"),
        Flag("gamma", "float", "blanket probability in (0, 1]", group="randomiser"),
        Flag("eps0", "float", "local epsilon > 0", group="randomiser"),
        Flag("adversary", "choice", "view for tight/exact: shuffled (the shuffled reports alone, the view the protocol "
             "releases; stronger clone pair; the default) or strong-1d, strong, weak (seed 001's adversaries)",
             required=False,
             choices=tuple(r.value for r in Relation)),
    )
    methods: ClassVar[tuple[str, ...]] = ("tight", "exact", "blanket", *BLANKET_METHODS, *LDP_METHODS)

    n: int
    k: int
    gamma: float
    relation: Relation | None = None
    #: local privacy log(1 + k(1−γ)/γ); computed from γ unless given (as :meth:`from_eps0` does, so that
    #: the ε0 a user asked for is reported as given rather than after a round trip through γ)
    eps0: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        object.__setattr__(self, "k", check_int("k", self.k, minimum=2, maximum=MAX_K))
        underflow = self.gamma == 0.0 and self.eps0 is not None  # eps0 so large that gamma is below 5e-324
        object.__setattr__(self, "gamma", check_real("gamma", self.gamma, low=0.0, high=1.0, low_open=not underflow))
        if self.relation is not None:
            object.__setattr__(self, "relation", Relation.parse(self.relation))
        if self.eps0 is None:
            object.__setattr__(self, "eps0", eps0_from_gamma(self.gamma, self.k))
        elif not math.isclose(gamma_from_eps0(self.eps0, self.k), self.gamma, rel_tol=1e-9):
            raise ParameterError(f"eps0={self.eps0} and gamma={self.gamma} disagree for k={self.k}; give one of them")

    @classmethod
    def from_eps0(cls, n: int, k: int, eps0: float, relation: Relation | str | None = None) -> "KRR":
        """The k-RR with local privacy ε0: γ = k/(e^{ε0}+k−1)."""
        k = check_int("k", k, minimum=2, maximum=MAX_K)
        eps0 = check_positive("eps0", eps0)
        gamma = gamma_from_eps0(eps0, k)  # 0.0 when it underflows: account() answers from eps0 then
        return cls(n, k, gamma, relation, eps0)  # type: ignore[arg-type]

    @classmethod
    def resolve(cls, n: int, k: int, gamma: float | None = None, eps0: float | None = None,
                relation: Relation | str | None = None) -> "KRR":
        """From exactly one of ``gamma`` or ``eps0`` (what the CLI and the protocols accept)."""
        if (gamma is None) == (eps0 is None):
            raise ParameterError("give exactly one of gamma (blanket probability in (0, 1]) or eps0 (local epsilon > 0)")
        if gamma is not None:
            return cls(n, k, gamma, relation)  # type: ignore[arg-type]
        return cls.from_eps0(n, k, eps0, relation)  # type: ignore[arg-type]

    @classmethod
    def from_flags(cls, *, n, k, gamma=None, eps0=None, adversary=None) -> "KRR":
        return cls.resolve(n, k, gamma, eps0, adversary)

    def local_guarantee(self) -> float | None:
        """ε0 of the randomiser that γ implies (raised by maths.rr.eps0_upper, never below a given ``eps0``) — but None
        for the strong adversary, who sees every user's blanket coin: the target's coin reveals whether its
        report is its input, so that view is not ε0-DP (docs/theory.md#adversaries)."""
        if self.relation in (Relation.STRONG, Relation.STRONG_1D):
            return None
        eps0 = eps0_upper(self.eps0 if self.gamma == 0.0 else max(self.eps0, eps0_from_gamma(self.gamma, self.k)))
        return eps0 if math.isfinite(eps0) and eps0 > 0 else None

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "k": self.k, "gamma": self.gamma, "eps0": self.eps0}
        if self.relation is not None:
            out["adversary"] = self.relation.value
        return out

    @property
    def default_method(self) -> str:
        """``blanket`` for the shuffled reports (issue 30: the tightest certified interval, fast at any n), else
        ``tight`` (the adversary's own pair)."""
        return "blanket" if self.view is Relation.SHUFFLED and self.gamma > 0 else "tight"

    @property
    def view(self) -> Relation:
        """The view the pair-based methods account: the adversary named, else :data:`DEFAULT_ADVERSARY`."""
        return DEFAULT_ADVERSARY if self.relation is None else self.relation

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting.pairs import krr_pair

        rel = self.view
        if method == "blanket":
            raise NotApplicableError("blanket is answered directly (its sum form), not through a pair")
        if method == "tight":
            tb = {} if tail_bound is None else {"tail_bound": tail_bound}
            return krr_pair(self.n, self.k, self.gamma, rel.value, as_rows=True, **tb)
        if rel is Relation.STRONG_1D:
            raise NotApplicableError(
                "exact enumeration needs --adversary strong or weak (strong-1d is a stated pair, not a view)")
        if rel is Relation.SHUFFLED:
            raise NotApplicableError(
                "exact for the shuffled reports has no pair: it is the enumeration of every data set (k >= 3, small n) "
                "or binary RR's exact engine (k = 2)")
        from shufflesim.accounting.exact import bruteforce as BF  # imported here: it imports scipy.special (~0.3 s)

        return BF.krr_bruteforce(self.n, self.k, self.gamma, rel.value)

    def bound(self, method: str, options: BoundOptions):
        if method in BLANKET_METHODS:
            return blanket_bound(method, self.n, self.k, self.gamma, options)
        return ldp_bound(method, self.n, self.eps0)

    def direct(self, method, eps_l, delta_l, compositions, run_pair):
        """``tight`` for the weak adversary where its row pair is large: its bucket rows
        (:mod:`shufflesim.accounting.engines.bucketed_weak`, docs/theory.md#bucketed-weak).  ``exact`` of the shuffled reports for k = 2: binary randomised response at the randomiser's ε0, the
        worst case over every data set (:mod:`shufflesim.accounting.exact.exact_rr2`; docs/theory.md#exact-rr2).  ε0
        computed from γ is a few ulps off: the upper end uses it raised (:func:`~shufflesim.maths.rr.eps0_upper`),
        the lower end lowered by the same margin (binary RR at a smaller ε0 is a post-processing of it at a larger
        one, so both ends stay certified)."""
        if method == "blanket":
            return self._blanket(eps_l, delta_l, compositions, run_pair)
        if method == "tight" and self.view is Relation.WEAK:
            from shufflesim.accounting.engines.choice import WEAK_BUCKETS, Question, answer, choose
            from shufflesim.accounting.engines.tight import TightAccountant

            q = Question(eps=None if eps_l is None else tuple(eps_l), delta=None if delta_l is None else tuple(delta_l),
                         compositions=compositions, weak=(self.n, self.k, self.gamma), accountant=TightAccountant)
            choice = choose(q)  # issue 21: the weak pair at any n, bucketed from its parameters where cheaper
            if choice.engine is WEAK_BUCKETS:
                return answer(q, choice)
        if method == "exact" and self.k >= 3 and self.view is Relation.SHUFFLED:
            return self.exact_enumerated(eps_l, delta_l, compositions, run_pair)
        if method != "exact" or self.k != 2 or self.view is not Relation.SHUFFLED:
            return None
        if eps0_upper(eps0_from_gamma(self.gamma, 2)) > LDP_ONLY_EPS0:
            raise NotApplicableError(f"exact needs eps0 <= {LDP_ONLY_EPS0:g} with its round-off margin (e^eps0 "
                                     "overflows above); the local guarantee bounds the view there")
        from shufflesim.accounting.exact.exact_engine import exact_binary_rr
        from shufflesim.maths.rr import EPS0_MARGIN

        e0 = eps0_from_gamma(self.gamma, 2)
        out, _ = exact_binary_rr(self.n, eps0_upper(e0), e0 * (1.0 - EPS0_MARGIN), eps_l, delta_l, compositions,
                                 lambda: run_pair("tight"))
        return out, ["mechanism: k = 2, so the shuffled reports are binary randomised response at eps0: exact over "
                     "every neighbouring pair of data sets (docs/theory.md#exact-rr2)"]

    def exact_enumerated(self, eps_l, delta_l, compositions, run_pair):
        """``exact`` of the shuffled reports for k >= 3: every data set enumerated within a stated budget, k-RR being
        the matrix p̄ + (1 − γ)·I (:mod:`shufflesim.accounting.exact.enumeration`, docs/theory.md#exact-finite;
        refused in one line beyond the budget, before the k × k matrix is built)."""
        import numpy as np

        from shufflesim.accounting.exact.enumeration import check_enumeration, exact_view
        from shufflesim.accounting.exact.krr_shuffled import krr_probs

        check_enumeration(self.n, self.k, self.k, len(eps_l if eps_l is not None else delta_l), eps_l is None)
        p, pb, _ = krr_probs(self.k, self.gamma)
        R = np.full((self.k, self.k), pb)
        np.fill_diagonal(R, p)
        return exact_view(R, self.n, eps_l, delta_l, compositions, run_pair, self.genuine_lower)

    def cheap_exact(self, eps_l, delta_l, compositions: int) -> str | None:
        """Why the default (``blanket``) may answer with ``exact``'s worst case over every data set instead, or None:
        k = 2, single use, n <= 10⁵ (the branch and bound, about a second) or 10⁶ < n <= 10⁹ (the population cover,
        seconds; docs/theory.md#exact-rr2-population); k >= 3 within the default enumeration budget
        (:data:`shufflesim.mechanisms.matrix.ENUMERATION_BUDGET`, about a second)."""
        if compositions != 1:
            return None
        if self.k == 2:
            from shufflesim.accounting.exact.exact_rr2 import DEFAULT_EXACT_MAX_N, MAX_N_EXACT, MAX_N_POPULATION

            if self.n <= DEFAULT_EXACT_MAX_N or MAX_N_EXACT < self.n <= MAX_N_POPULATION:
                return "k = 2: binary randomised response, exact over every data set at this n"
            return None
        from shufflesim.accounting.exact.enumeration import enumeration_steps
        from shufflesim.mechanisms.matrix import ENUMERATION_BUDGET

        values = len(eps_l if eps_l is not None else delta_l)
        if enumeration_steps(self.n, self.k, self.k, values, eps_l is None) <= ENUMERATION_BUDGET:
            return f"n is small enough to enumerate every data set (within {ENUMERATION_BUDGET:.3g} steps)"
        return None

    def _blanket(self, eps_l, delta_l, compositions, run_pair):
        """``blanket`` (issue 30): the shuffled reports' interval from the blanket pair (for k-RR the weak adversary's
        pair: the blanket is γ/k on every output) above and the exact δ of the data sets "the others all hold 0, 1
        or a third value" below (:mod:`shufflesim.accounting.engines.blanket_fft`, single use, any n); at
        n <= EXHAUSTIVE_N also every split of the others (:func:`shuffled_lower`), where higher.  Composed: the
        answer of ``tight`` with its lower end, and a note (the blanket sum form is single-use only)."""
        if self.view is not Relation.SHUFFLED:
            raise NotApplicableError("blanket accounts the shuffled reports (--adversary shuffled); the strong, "
                                     "strong-1d and weak adversaries see more: use tight or exact")
        if self.gamma == 0.0:
            raise NotApplicableError("blanket needs gamma > 0 (gamma underflowed: the local guarantee answers)")
        exact = self.cheap_exact(eps_l, delta_l, compositions)
        if exact is not None:
            results, notes = self.direct("exact", eps_l, delta_l, compositions, run_pair)
            return results, notes + [f"blanket: {exact}: the answer is the exact worst case"]
        if compositions > 1:
            from shufflesim.accounting.model.provenance import LowerEnd
            from shufflesim.accounting.model.results import as_dominating

            results, notes = run_pair("tight")
            lows, what = shuffled_lower(self.n, self.k, self.gamma, eps=eps_l, delta=delta_l,
                                        compositions=compositions)
            results = [as_dominating(r, STRONGER_CLONES, lo, LowerEnd(what)) for r, lo in zip(results, lows)]
            return results, notes + ["blanket: the blanket sum form is single-use only; composed, the answer is "
                                     "tight's (stronger clones) with its explicit data sets below"]
        from shufflesim.accounting.engines.blanket_fft import account_blanket, krr_forms
        from shufflesim.accounting.exact.krr_shuffled import EXHAUSTIVE_N

        eps_max = eps0_upper(max(self.eps0, eps0_from_gamma(self.gamma, self.k)))
        results, notes = account_blanket(krr_forms(self.k, self.gamma, self.n), eps_l, delta_l, eps_max)
        if self.n <= EXHAUSTIVE_N:
            lows, what = shuffled_lower(self.n, self.k, self.gamma, eps=eps_l, delta=delta_l)
            better = [lo is not None and r.lower is not None and lo > r.lower for r, lo in zip(results, lows)]
            if any(better):
                from shufflesim.accounting.model.provenance import LowerEnd

                results = [r.with_ends(lower=min(lo, r.upper)).with_provenance(r.provenance.add(LowerEnd(what)))
                           if b else r for r, lo, b in zip(results, lows, better)]
                notes = notes + [f"lower end (where higher): {what}"]
        return self._blanket_fallback(results, notes, eps_l, delta_l, run_pair)

    def _blanket_fallback(self, results, notes, eps_l, delta_l, run_pair):
        """Where a blanket answer misses the accuracy target (vacuous or wide): the tighter certified ends of tight's
        stronger clone pair (upper; it dominates the view) and of its explicit data sets (lower)
        (:func:`~shufflesim.accounting.engines.blanket_fft.tighter_of`)."""
        from shufflesim.accounting.engines.blanket_fft import BLANKET_RTOL, FALLBACK_NOTE, rejudged, tighter_of
        from shufflesim.errors import ShufflesimError

        results = [rejudged(r) for r in results]
        if all(r.accuracy_met for r in results):
            return results, notes
        try:
            clones, _ = run_pair("tight")
            got = self.genuine_lower("tight", eps=eps_l, delta=delta_l)
        except ShufflesimError:  # tight cannot answer here: the blanket answer stands, flagged
            return results, notes
        lows, what = got if got is not None else (None, None)
        results, moved = tighter_of(results, clones, lows, what)
        return results, notes + ([FALLBACK_NOTE.format(rtol=BLANKET_RTOL)] if moved else [])

    def dominating_pair(self, method: str) -> str | None:
        if method == "feldman-numerical":
            return FELDMAN_PAIR
        if method == "tight" and self.view is Relation.SHUFFLED:
            return STRONGER_CLONES
        if method == "tight" and self.view is Relation.STRONG_1D:
            return STRONG_1D_PAIR
        return None

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        if self.relation not in (None, Relation.SHUFFLED) or self.gamma == 0.0:
            return None  # strong-1d: no view; weak/strong with feldman-numerical: a bound for another view
        return shuffled_lower(self.n, self.k, self.gamma, eps=eps, delta=delta, compositions=compositions)


def shuffled_lower(n: int, k: int, gamma: float, *, eps=None, delta=None, compositions: int = 1):
    """Certified lower ends on δ(ε) (per ``eps``) or ε(δ) (per ``delta``) of shuffled k-RR's analyser view,
    used ``compositions`` times, from explicit neighbouring data sets (docs/theory.md#krr-shuffled-lower):

    * k ≥ 3: all n − 1 others hold one value c ∉ {a, b} while the target switches a → b.  The counts of
      reports equal to a and to b are then §4.3.2's clone mixture with r = 2γ/k, a = 1 − γ + γ/k, b = γ/k
      (``rest`` = (k − 2)γ/k): a post-processing of the histogram, so its δ — composed by the PLD engine,
      certified lower end — is at most the mechanism's;
    * k = 2: binary randomised response at ε0 (:func:`._common.binary_rr_lower`);
    * n ≤ :data:`~shufflesim.accounting.exact.krr_shuffled.EXHAUSTIVE_N`, single use: also every split (N_a, N_b,
      rest) of the others (:func:`shufflesim.accounting.exact.krr_shuffled.krr_shuffled_lower`).

    Returns (values, a note naming the data sets).
    """
    from shufflesim.accounting.exact.krr_shuffled import EXHAUSTIVE_N, krr_probs, krr_shuffled_lower

    vals_in = list(eps if eps is not None else delta)
    if k == 2:
        vals, what = binary_rr_lower(n, eps0_from_gamma(gamma, 2), eps, delta, compositions)
        vals = [0.0 if v is None else v for v in vals]
        whats = [what] * len(vals)
    else:
        from shufflesim.accounting.pairs.variation import clone_mixture_pair
        from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon

        p, pb, rest = krr_probs(k, gamma)
        pair = clone_mixture_pair(n, 2.0 * pb, p, pb, rest=rest, name="krr-all-third-value")
        res = (tight_delta(pair, vals_in, compositions=compositions) if eps is not None
               else tight_epsilon(pair, vals_in, compositions=compositions))
        vals = [(r.delta_lower if eps is not None else r.eps_lower) or 0.0 for r in res]
        whats = [f"the delta of the counts of a and b when all {n - 1} others hold a third value (the target "
                 "switching a -> b)" + (f", composed {compositions} times" if compositions > 1 else "")] * len(vals)
    if compositions == 1 and n <= EXHAUSTIVE_N:
        ex, arg = krr_shuffled_lower(n, k, gamma, eps=eps, delta=delta)
        for i, (x, a) in enumerate(zip(ex, arg)):
            if x > vals[i]:
                vals[i], whats[i] = x, f"the exact delta of the data set {a} (every split enumerated)"
    return vals, "; ".join(dict.fromkeys(whats))


def calibrate_krr_gamma(n: int, k: int, eps: float, delta: float, *, adversary: Relation | str = Relation.STRONG,
                        compositions: int = 1, method: str = "tight", rtol: float = 1e-6,
                        numerics: dict | None = None):
    """Smallest blanket probability γ for which shuffled k-RR with n users is (ε, δ)-DP.

    The certified δ_upper(γ) of ``method`` on the ``adversary`` pair after ``compositions`` uses is
    searched by :func:`~shufflesim.accounting.account.calibrate_mechanism` (never overshoots).
    Raises InfeasibleError if even γ = 1 fails.
    """
    from shufflesim.accounting.account import calibrate_mechanism

    rel = Relation.parse(adversary)
    return calibrate_mechanism(lambda g: KRR(n, k, g, rel), "gamma", eps, delta, 1e-12, 1.0, increasing=False,
                               method=method, compositions=compositions, rtol=rtol, numerics=numerics)
