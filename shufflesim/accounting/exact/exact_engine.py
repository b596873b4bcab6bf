"""The exact binary-RR engine (docs/theory.md#exact-rr2) behind the one engine interface of :mod:`.choice`, and the
one place :mod:`.exact_rr2`'s :class:`~.exact_rr2.Bracket` becomes a bound (issue 28).

It sits above :mod:`.choice` (it uses the exact layer) and registers itself there on import; the descriptions that
answer binary RR's ``exact`` method (``rr2``, ``krr`` with k = 2 for the shuffled reports) call
:func:`exact_binary_rr`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from shufflesim.accounting.exact import exact_rr2 as X
from shufflesim.accounting.engines.choice import Engine, Question, answer, register
from shufflesim.accounting.engines.estimates import exact_binary_rr_estimate
from shufflesim.accounting.model.results import DeltaBound, EpsBound


class ExactBinaryRREngine(Engine):
    """Shuffled binary RR's exact worst case over every data set (:mod:`.exact_rr2`), the one conversion of its
    :class:`~.exact_rr2.Bracket` into a bound.  Single use: the bracket at the upper end's ε0 gives the upper end,
    the one at the lower end's ε0 the lower end.  Composed: the lower end is the composed value of the worst
    single-use data sets (exact for them), and the upper end is the ``tight`` method's answer on the dominating
    pair (``Question.dominating``) -- the same engine choice, so the default is never looser than ``tight``."""

    name = "exact binary RR"

    def supports(self, q):
        if q.binary_rr is None:
            return "not shuffled binary randomised response"
        if q.compositions > 1 and q.dominating is None:
            return "composed: no dominating pair's answer for the upper end"
        return None

    def estimate(self, q):
        return exact_binary_rr_estimate(q.binary_rr[0], len(q.values))

    def run(self, q):
        n, e_hi, e_lo = q.binary_rr
        k = q.compositions
        # refused in one line beyond n = 1e9 single use, 1e6 composed (the lower end's cost), or above the limits
        X.check_exact(n, e_hi, k, len(q.values) * (1 if e_lo == e_hi else 2))
        out = []
        if k == 1:
            for v in q.values:
                if q.eps is not None:
                    hi = X.delta_bracket(n, e_hi, v)
                    lo = hi if e_lo == e_hi else X.delta_bracket(n, e_lo, v)
                    out.append(_as_answer(DeltaBound, v, hi, lo))
                else:
                    hi = X.eps_bracket(n, e_hi, v)
                    lo = hi if e_lo == e_hi else X.eps_bracket(n, e_lo, v)
                    out.append(_as_answer(EpsBound, v, hi, lo))
            return out, []
        ups, _ = q.dominating()
        for v, r in zip(q.values, ups):
            if q.eps is not None:
                up = r.delta_upper
                low, m = X.composed_lower_delta(n, e_lo, v, k, X.lower_candidates(n, e_lo, v / k))
                face, what = DeltaBound, "delta"
            else:
                up = r.eps_upper
                guess = up / k if math.isfinite(up) else e_lo / 2
                low, m = X.composed_lower_eps(n, e_lo, v, k, X.lower_candidates(n, e_lo, guess))
                face, what = EpsBound, "eps"
            ans = face.exact_bracket(v, min(low, up), up, worst=m, notes=(X.composed_note(k, m, what),),
                                     engine=self.name)
            out.append(replace(ans, accuracy_met=r.accuracy_met))
        return out, []

    def prefer(self, q):
        return True, "the mechanism's exact worst case over every data set (binary RR)" + (
            "; composed: lower end from explicit data sets, upper end the tight method's answer" if q.compositions > 1
            else "")


def _as_answer(face, at: float, hi, lo):
    """The answer of the brackets ``hi`` (at the upper end's ε0) and ``lo`` (at the lower end's): the one place a
    :class:`~.exact_rr2.Bracket` becomes an answer (:meth:`~shufflesim.accounting.model.results.Answer.exact_bracket`,
    which records the worst data set found and the search's evaluations)."""
    return face.exact_bracket(at, min(lo.lower, hi.upper), hi.upper, worst=lo.m, evaluations=hi.evaluations,
                              notes=hi.notes, engine=ExactBinaryRREngine.name)


EXACT_BINARY_RR = register(ExactBinaryRREngine())


def exact_binary_rr(n: int, eps0_upper: float, eps0_lower: float, eps, delta, compositions: int,
                    dominating) -> tuple[list, list[str]]:
    """Binary RR's ``exact`` answers (:class:`ExactBinaryRREngine`): the brackets at ``eps0_upper`` give the
    upper ends and those at ``eps0_lower`` the lower ends (binary RR at a smaller ε0 is a post-processing of it at
    a larger one); composed, ``dominating()`` is the ``tight`` method's run on the dominating pair."""
    q = Question(eps=None if eps is None else tuple(eps), delta=None if delta is None else tuple(delta),
                 compositions=compositions, binary_rr=(n, eps0_upper, eps0_lower), dominating=dominating)
    return answer(q)
