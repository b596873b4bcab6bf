"""General eps0-LDP randomisers: Feldman, McMillan and Talwar's "clones" pair (seed 001 §6, Appendix B)."""

from __future__ import annotations

import math
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import ParameterError
from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD, TRUNCATIONS, check_tail_bound, flip_probabilities
from shufflesim.accounting.pairs.variation import clone_mixture_pair

REFERENCE_CLONES = (
    "Feldman, McMillan, Talwar 2020 (Remark 3.5) via Koskela, Heikkila, Honkela (seed 001) §6, "
    "eqs 6.1-6.8, Lemmas B.1-B.3, §6.2; docs/theory.md#pairs-clones"
)


def clones_pair(
    n,
    eps0,
    *,
    tail_bound: float = DEFAULT_TAIL_BOUND_MD,
    truncation: str = "chernoff",
    return_outcomes: bool = False,
    as_rows: bool = False,
):
    """P = (A + Delta, C - A), Q = (A, C - A + Delta) (seed 001 eqs 6.1-6.2).

    C ~ Bin(n-1, e^-eps0), A | C ~ Bin(C, 1/2), Delta ~ Bern(e^eps0/(e^eps0+1)).  The pair bounds the
    shuffled output of *any* eps0-LDP randomiser against an adversary that sees the shuffled output;
    it is tight for the pair, not for a specific randomiser (seed 001 §6).

    Outcome (a, b).  As the mixtures of eqs 6.3-6.4, with q = e^eps0/(e^eps0+1), t = a + b and
    w(i) = P(C = i):
        P(a, b) = q w(t-1) Bin(t-1, 1/2)(a-1) + (1-q) w(t) Bin(t, 1/2)(a)
        Q(a, b) = q w(t-1) Bin(t-1, 1/2)(a)   + (1-q) w(t) Bin(t, 1/2)(a)
    which equal eqs 6.7-6.8 (Lemma B.3) and give the log-ratios of Lemma 11 / Lemma B.2 (tests check
    both).  The only infinite-loss outcome of P/Q is (n, 0), with mass 2^-(n-1) e^-(n-2)eps0/(e^eps0+1)
    (§6.1); symmetrically (0, n) for Q/P.  Note Lemma B.2 of the seed writes "q = e^-eps0": the q of
    eq 6.3 is meant.

    Truncation (§6.2): C is kept on a window with half of ``tail_bound``, and A | C = i on a window
    whose budget is spread over the rows (row i gets tail/(2 R w(i))).  ``truncation="hoeffding"``
    uses the paper's Hoeffding window for C, S_c = [(p - c)(n-1), (p + c)(n-1)] with
    c = sqrt(log(2/tau)/(2(n-1))), tau = tail_bound; the default ``"chernoff"`` uses the relative-entropy
    (Chernoff) bound, which certifies the same tail with a much narrower window when e^-eps0 is small.
    Either way the certified dropped mass is stored in tail_p = tail_q and every kept outcome has its
    exact probability.  ``return_outcomes=True`` also returns the (a, b) arrays.  ``as_rows=True``
    returns the :class:`BinomialRows` form (rows t = a + b, which has the same law under P and Q):
    exact single-use delta in O(rows) (the exact counterpart of Feldman et al.'s numerical method,
    docs/theory.md#bounds-feldman-numerical) and atoms block by block.
    """
    n = check_int("n", n, minimum=1)
    eps0 = check_positive("eps0", eps0)
    tail_bound = check_tail_bound(tail_bound)
    if truncation not in TRUNCATIONS:
        raise ParameterError(f"truncation must be one of {', '.join(TRUNCATIONS)}; got {truncation!r}")
    dq0, dq1 = flip_probabilities(eps0)  # P(Delta = 0), P(Delta = 1)
    # the clone mixture with clone probability e^-eps0 and target weights (a, b) = (q, 0): by Lemma B.1,
    # P(a, b) = Bin(t,1/2)(a) [q w(t-1) (2/t) a + (1-q) w(t)] and Q the same with a -> t - a
    return clone_mixture_pair(n, math.exp(-eps0), dq1, 0.0, rc=-math.expm1(-eps0), rest=dq0, tail_bound=tail_bound,
                              truncation=truncation, as_rows=as_rows, return_outcomes=return_outcomes, name="clones",
                              reference=REFERENCE_CLONES, params={"eps0": eps0, "truncation": truncation})
