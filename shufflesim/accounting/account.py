"""One entry point for every privacy question: ``account(mechanism, method=…, eps=…|delta=…)``.

``mechanism`` is a description value (:mod:`shufflesim.accounting.model.mechanism`; the built-in ones are in
:mod:`shufflesim.mechanisms`, and a protocol gives its own by ``protocol.mechanism()``).  The description
says which methods apply; :func:`account` dispatches on that and returns an :class:`AccountReport` with one
certified result per value (:class:`~.results.DeltaBound` / :class:`~.results.EpsBound`) or a
:class:`~.results.NotApplicable` with the reason.  Each answer records how it was obtained in its provenance
(the pairs, their truncated mass, the local guarantee, the lower end's data sets: :mod:`.provenance`); the
report's notes are rendered from those records, and every decision below reads the records.  Methods:

* pair-based — ``tight`` (the PLD accountant of :mod:`.tight` on the description's neighbouring pair:
  exact single use, certified FFT composition, heterogeneous for a :class:`~.mechanism.Composition`),
  ``exact`` (brute-force enumeration, small n) and ``exact-histogram``;
* published bounds — whatever :meth:`~.mechanism.Mechanism.bound` provides (Balle et al., Bennett,
  Hoeffding, Erlingsson et al., Feldman et al., Biswas et al. as published); with ``compositions > 1``
  they are composed with the basic or advanced theorem (``composition``).
"""

from __future__ import annotations

import math
import time

from dataclasses import dataclass, replace
from typing import Sequence

from shufflesim.accounting.model.mechanism import PAIR_METHODS, BoundOptions, Mechanism
from shufflesim.accounting.model.provenance import LocalGuarantee, LowerEnd, PairRef, Provenance, render, truncation_note
from shufflesim.accounting.model.queries import (check_compositions, check_method_applies, check_question,
                                                 delta_values, eps_values)
from shufflesim.accounting.model.results import AccountReport, DeltaBound, EpsBound
from shufflesim.errors import AccuracyError, ParameterError

#: above this eps0 (any part) e^eps0 overflows double precision and shuffling amplifies by a relative factor
#: below 1e-300: every method answers from the local guarantee (eps <= eps0 per use)
LDP_ONLY_EPS0 = 700.0
#: below this eps0 the pairs' and bounds' terms underflow: every method answers from the local guarantee
TINY_EPS0 = 1e-100


def account(
    mechanism: Mechanism,
    /,
    *extra,
    eps: Sequence[float] | float | None = None,
    delta: Sequence[float] | float | None = None,
    method: str | None = None,
    compositions: int = 1,
    composition: str = "basic",
    bennett_variant: str = "fixed",
    numerics: dict | None = None,
    **unknown,
) -> AccountReport:
    """Answer δ(ε) for every ``eps`` or ε(δ) for every ``delta`` (exactly one of the two).

    ``method`` defaults to the description's first method (``tight`` where it applies);
    ``compositions`` repeats the whole mechanism; ``numerics`` are the PLD accountant's knobs
    (:class:`~.tight.Numerics`).
    """
    t0 = time.perf_counter()
    if extra:
        raise ParameterError("account takes the mechanism as its only positional argument; give eps=... or "
                             f"delta=... by keyword (got {len(extra)} more positional argument(s))")
    if unknown:
        raise ParameterError(f"account has no parameter {next(iter(unknown))!r}; it takes: eps, delta, method, "
                             "compositions, composition, bennett_variant, numerics")
    # checked before method 'best' dispatches, so 'best' refuses what every single method refuses (issue 18); the
    # one question validator (.queries) that every path uses (issue 28)
    eps_l, delta_l, compositions = check_question(eps=eps, delta=delta, compositions=compositions)
    if numerics is not None:
        _check_numerics(numerics)
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"account needs a mechanism description (shufflesim.mechanisms); got {mechanism!r}")
    method = mechanism.default_for(compositions) if method is None else method
    if method == "best":  # issue 9: every applicable certified method, the smallest upper bound (.compare)
        from shufflesim.accounting.compare import best

        return best(mechanism, run=account, eps=eps, delta=delta, compositions=compositions,
                    composition=composition, numerics=numerics)
    check_method_applies(mechanism, method, compositions)
    pair_based = method in PAIR_METHODS
    if composition not in ("basic", "advanced", "best"):
        raise ParameterError(f"composition must be basic, advanced or best; got {composition!r}")
    options = BoundOptions(bennett_variant)
    prm = mechanism.params()
    notes: list[str] = []
    comp_used = None
    ldp_cap = _ldp_cap(mechanism, compositions)
    lower = None  # a composed question's genuine lower end, when it runs beside the upper end
    local = _local_only(mechanism, ldp_cap)
    if local is not None:
        results = _ldp_only(method, local, eps_l, delta_l)
        notes += render(local)
    elif not pair_based:
        results, comp_used, compositions = _published(mechanism, method, options, eps_l, delta_l, compositions,
                                                      composition)
        if method == "bennett":
            prm = dict(prm, bennett_variant=bennett_variant)
    else:
        kw = dict(numerics or {})
        lower = _lower_in_background(mechanism, method, eps_l, delta_l, compositions)
        answered = mechanism.direct(method, eps_l, delta_l, compositions,
                                    lambda m: _pair_based(mechanism, m, eps_l, delta_l, compositions, kw))
        results, pair_notes = answered or _pair_based(mechanism, method, eps_l, delta_l, compositions, kw)
        notes += pair_notes
    if local is None:  # not the local guarantee itself (whose answers record it): the lower ends apply
        results, honest_notes = _honest(mechanism, method, results, eps_l, delta_l, compositions,
                                        lower=lower)
        notes += [nt for nt in honest_notes if nt not in notes]
    results, cap_notes = _cap_at_ldp(ldp_cap, results)
    for r in results:
        for nt in r.notes:
            if nt not in notes:
                notes.append(nt)
    notes += [nt for nt in cap_notes + _infinite_notes(results) if nt not in notes]
    return AccountReport(mechanism.kind, prm, method, compositions, tuple(results), tuple(notes),
                         time.perf_counter() - t0, comp_used)


#: memory below which a composed question's two ends run one after the other (:func:`_lower_in_background`)
CONCURRENT_MIN_MEMORY = 8 << 30


def _lower_in_background(mechanism: Mechanism, method: str, eps_l, delta_l, compositions: int):
    """Issue 21: a composed question's genuine lower end (explicit data sets composed by the FFT accountant) is
    as costly as the dominating pair's upper end and independent of it, so with two CPUs it runs in a thread of
    its own while the upper end is computed (numpy and scipy's FFT release the GIL); the result is the same
    value either way.  None (computed in line by :func:`_honest`) for single use, one CPU, no dominating pair, or
    less than :data:`CONCURRENT_MIN_MEMORY` available: each half checks its own memory estimate before it
    allocates, which only protects the pair if the two peaks (~2 GB together at n = 1e9) fit side by side."""
    from shufflesim.accounting.numerics.threads import n_threads
    from shufflesim.core.resources import available_memory

    if compositions == 1 or n_threads() < 2 or mechanism.dominating_pair(method) is None:
        return None
    if available_memory() < CONCURRENT_MIN_MEMORY:
        return None
    return _Background(mechanism.genuine_lower, method, eps=eps_l, delta=delta_l, compositions=compositions)


class _Background:
    """A call running in a daemon thread: ``result()`` joins it and returns its value or raises its exception.
    Daemon, so that a refused or failed upper end never keeps the process alive for the lower end's minutes."""

    def __init__(self, fn, *args, **kwargs):
        import threading

        self._value = self._error = None

        def run():
            try:
                self._value = fn(*args, **kwargs)
            except BaseException as exc:  # re-raised in the caller's thread by result()
                self._error = exc

        self._thread = threading.Thread(target=run, name="shufflesim-lower", daemon=True)
        self._thread.start()

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _honest(mechanism: Mechanism, method: str, results, eps_l, delta_l, compositions: int, lower=None):
    """Issue 17: a method whose pair only dominates the mechanism's view reports that pair's bracket as
    ``bound_*``; the mechanism-level lower end is a genuine construction (:meth:`Mechanism.genuine_lower`)
    or None.  ``lower``: that construction already running (:func:`_lower_in_background`)."""
    from shufflesim.accounting.model.results import as_dominating

    pair = mechanism.dominating_pair(method)
    if pair is None:
        return list(results), []
    got = lower.result() if lower is not None else \
        mechanism.genuine_lower(method, eps=eps_l, delta=delta_l, compositions=compositions)
    if got is None:
        lowers, what = [None] * len(results), LowerEnd(None)
    else:
        lowers, what = got[0], got[1] if isinstance(got[1], LowerEnd) else LowerEnd(got[1])
    note = (f"the evaluated pair ({pair}) is not the law of the mechanism's view on any data set: its own "
            "bracket is bound_lower/bound_upper, and the upper end is that pair's (an upper bound where the pair "
            "dominates the view; docs/theory.md#lower-ends)")
    return [as_dominating(r, pair, lo, what) for r, lo in zip(results, lowers)], [note]


def _check_numerics(numerics) -> None:
    """``numerics`` must be a dict of :class:`~.tight.Numerics` fields (values are checked by Numerics)."""
    from dataclasses import fields

    from shufflesim.accounting.engines.tight import Numerics

    if not isinstance(numerics, dict):
        raise ParameterError(f"numerics must be a dict of accountant settings; got {numerics!r}")
    known = {f.name for f in fields(Numerics)}
    bad = sorted(str(k) for k in numerics if k not in known)
    if bad:
        raise ParameterError(f"unknown numerics setting(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    Numerics(**numerics)


def _ldp_cap(mechanism: Mechanism, compositions: int) -> float | None:
    """The pure-DP level every use-sequence of ε0-LDP randomisers has: Σ over uses of ε0 (a shuffled ε0-LDP
    randomiser is ε0-DP by post-processing; basic composition adds), or None when a part states no ε0."""
    total = 0.0
    for m, c in mechanism.uses():
        eps0 = m.local_guarantee()
        if eps0 is None:
            return None
        total += c * eps0
    return total * compositions


def _cap_at_ldp(cap: float | None, results):
    """Cap every answer at the local guarantee ``cap`` (:func:`_ldp_cap`): ε(δ) ≤ cap, δ(ε) = 0 for ε ≥ cap; a
    capped answer records it (:class:`~.provenance.LocalGuarantee` ``"capped"``)."""
    if cap is None:
        return list(results), []
    out, capped = [], LocalGuarantee(cap, "capped")
    for r in results:
        if isinstance(r, EpsBound) and not (r.eps_upper <= cap):
            lower = r.eps_lower if r.eps_lower is None or r.eps_lower <= cap else cap
            r = replace(r, eps_upper=cap, eps_lower=lower, provenance=replace(r.provenance, local=capped))
        elif isinstance(r, DeltaBound) and r.eps >= cap and not (r.delta_upper <= 0.0):
            r = replace(r, delta_upper=0.0, delta_lower=0.0 if r.delta_lower is not None else None,
                        provenance=replace(r.provenance, local=capped))
        out.append(r)
    if not any(isinstance(r, (DeltaBound, EpsBound)) and r.provenance.local == capped for r in out):
        return out, []
    return out, list(render(capped))


def _local_only(mechanism: Mechanism, cap: float | None) -> LocalGuarantee | None:
    """The local guarantee as the whole answer, where ε0 is so small (:data:`TINY_EPS0`) or so large
    (:data:`LDP_ONLY_EPS0`) that every method's terms leave double precision; None otherwise."""
    if cap is None:
        return None
    if any(getattr(m, "eps0", 1.0) < TINY_EPS0 for m, _ in mechanism.uses()):
        return LocalGuarantee(cap, "underflow", TINY_EPS0)
    if any(getattr(m, "eps0", 0.0) > LDP_ONLY_EPS0 for m, _ in mechanism.uses()):
        return LocalGuarantee(cap, "overflow", LDP_ONLY_EPS0)
    return None


def _ldp_only(method: str, local: LocalGuarantee, eps_l, delta_l) -> list:
    """Answers from the pure-DP level ``local.cap`` alone (certified, not tight below it)."""
    cap = local.cap
    prov = Provenance(engine="local guarantee", local=local)
    if eps_l is not None:
        return [DeltaBound(e, 0.0 if e >= cap else 1.0, 0.0 if e >= cap else None, method, provenance=prov)
                for e in eps_l]
    return [EpsBound(d, cap, None, method, provenance=prov) for d in delta_l]


def _infinite_notes(results) -> list[str]:
    """One note per kind of infinite value left in the answers (printed as null in JSON)."""
    notes = []
    for r in results:
        if isinstance(r, EpsBound) and not math.isfinite(r.eps_upper):
            notes.append(f"eps_upper is infinite (null in JSON) at delta={r.delta:.3g}: the method certifies no "
                         "finite eps at this delta (it is below the mechanism's smallest achievable delta or "
                         "the method's numerical range)")
        if isinstance(r, DeltaBound) and not math.isfinite(r.delta_upper):
            notes.append(f"delta_upper is infinite (null in JSON) at eps={r.eps:.6g}: the method gives no finite bound")
    return list(dict.fromkeys(notes))


def _published(mechanism: Mechanism, method: str, options: BoundOptions, eps_l, delta_l, compositions: int,
               composition: str):
    """A published bound, composed by the basic/advanced theorem over a homogeneous composition."""
    from shufflesim.accounting import bounds as B  # imported on use: pair-based questions do not need it

    ((mech, count),) = list(mechanism.uses())  # Composition.methods admits published bounds for one part only
    total = count * compositions
    dfun, efun = mech.bound(method, options)
    if total > 1:
        results = ([B.compose_delta(dfun, e, total, composition=composition) for e in eps_l] if eps_l is not None
                   else [B.compose_eps(efun, d, total, composition=composition) for d in delta_l])
        return results, composition, total
    results = [dfun(e) for e in eps_l] if eps_l is not None else [efun(d) for d in delta_l]
    return results, None, total


def _pairs(mechanism: Mechanism, method: str, tail_bound: float | None):
    """The pair (single mechanism) or list of pairs (heterogeneous composition) that ``method`` evaluates."""
    parts = list(mechanism.uses())
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0].pair(method, tail_bound)
    out = []
    for m, c in parts:
        out += [m.pair(method, tail_bound)] * c  # one pair object per part: the engine composes repeats by powering
    return out


def _tails(pairs) -> float:
    seq = pairs if isinstance(pairs, list) else [pairs]
    return max(max(p.tail_p, p.tail_q) for p in seq)


def _pair_based(mechanism: Mechanism, method: str, eps_l, delta_l, compositions: int, kw: dict):
    """Certified results of a pair-based method, rebuilding truncated pairs whose dropped mass matters."""
    uses = sum(c for _, c in mechanism.uses()) * compositions
    # truncated pairs: start from a tail far below the requested deltas (1e-7 of the smallest, per use)
    tb = None if delta_l is None else max(min(1e-15, 1e-7 * min(delta_l) / uses), 1e-300)
    pairs = _pairs(mechanism, method, tb)
    try:
        results = _tight(pairs, eps_l, delta_l, compositions, kw)
    except AccuracyError:
        if not _tails(pairs):
            raise
        pairs = _pairs(mechanism, method, max(1e-300, _tails(pairs) * 1e-30))
        results = _tight(pairs, eps_l, delta_l, compositions, kw)
    # a truncated pair whose dropped mass dominates an answer is rebuilt with a smaller tail
    for _ in range(3):
        tail = _tails(pairs)
        if tail == 0.0 or not _tail_dominated(results, tail, uses):
            break
        pairs = _pairs(mechanism, method, max(1e-300, _needed_tail(results, delta_l, tail)))
        results = _tight(pairs, eps_l, delta_l, compositions, kw)
    refs = tuple(dict.fromkeys(PairRef(p.name, p.reference or "") for p in
                               (pairs if isinstance(pairs, list) else [pairs])))
    tail = _tails(pairs)
    results = [replace(r, method=method, provenance=replace(r.provenance, pairs=refs, truncation=tail))
               if isinstance(r, (DeltaBound, EpsBound)) else r for r in results]
    notes = list(dict.fromkeys(nt for ref in refs for nt in render(ref)))
    if tail:
        notes.append(truncation_note(tail))
    return results, notes


def _tight(pair, eps_l, delta_l, compositions, kw):
    from shufflesim.accounting.engines.choice import Question, answer, choose  # the engines, imported on first use
    from shufflesim.accounting.engines.estimates import check_estimate
    from shufflesim.accounting.engines.tight import TightAccountant
    from shufflesim.core.progress import stage

    q = Question(eps=None if eps_l is None else tuple(eps_l), delta=None if delta_l is None else tuple(delta_l),
                 compositions=compositions, numerics=kw, pairs=pair, accountant=TightAccountant)
    choice = choose(q)
    est = check_estimate(choice.estimate(q))  # issue 21: refuse before allocating, with the estimate
    name = getattr(pair, "name", "pairs") if not isinstance(pair, list) else "pairs"
    with stage(f"tight accounting of {name} ({est.engine}, {compositions} composition(s))", est.seconds):
        return answer(q, choice)[0]


def _tail_dominated(results, tail: float, compositions: int) -> bool:
    """True when the truncated mass makes up more than 1% of some delta_upper (widening the interval)."""
    for r in results:
        if isinstance(r, DeltaBound) and r.delta_upper < 1.0 and compositions * tail > 0.01 * r.delta_upper:
            return True
        if isinstance(r, EpsBound) and compositions * tail > 0.01 * r.delta:
            return True
    return False


def _needed_tail(results, delta_l, tail: float) -> float:
    """A tail bound small enough for the answers seen so far (1e-6 of the smallest positive delta)."""
    vals = [r.delta for r in results if isinstance(r, EpsBound)]
    vals += [r.delta_lower for r in results if isinstance(r, DeltaBound) and r.delta_lower]
    smallest = min(vals) if vals else 0.0
    zero = any(isinstance(r, DeltaBound) and not r.delta_lower for r in results)
    cand = smallest * 1e-6 if smallest > 0 else tail * 1e-60
    return min(cand, tail * 1e-30) if zero else cand


@dataclass(frozen=True)
class Calibrated:
    """A calibrated parameter, the certified δ it achieves (≤ the target) and how it was found.

    Not an answer (:class:`~.results.Answer`): ``value`` is a parameter of the mechanism, found by the generic
    safe-side search (:class:`~.calibrate.Calibration` is that search's own result: the evaluated feasible and
    infeasible ends); ``delta_upper`` is the upper end of the answer at ``value``."""

    name: str
    value: float
    delta_upper: float
    target_eps: float
    target_delta: float
    method: str
    evaluations: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def estimate_account(mechanism: Mechanism, *, method: str | None = None, compositions: int = 1,
                     numerics: dict | None = None):
    """Estimated memory and time (:class:`~.engines.estimates.Estimate`) of one :func:`account` question about
    ``mechanism`` -- the engine :func:`~.engines.choice.choose` picks and its estimate (:mod:`.engines.estimates`),
    made before anything large is allocated (the pairs in row form are built: about a second at n = 1e9).  A
    published bound answers at once; a question the accountant refuses is refused here the same way."""
    from shufflesim.accounting.engines.choice import WEAK_BUCKETS, Question, choose
    from shufflesim.accounting.engines.estimates import Estimate, exact_binary_rr_estimate
    from shufflesim.accounting.engines.tight import TightAccountant

    method = mechanism.default_for(compositions) if method is None else method
    if method == "best":
        return Estimate(0.0, 0.0, "best")  # every method: estimated (and refused) by each run
    check_method_applies(mechanism, method, compositions)  # what account() would refuse, refused first
    if method not in PAIR_METHODS or _local_only(mechanism, _ldp_cap(mechanism, compositions)) is not None:
        return Estimate(0.0, 0.1, f"{method} (closed form)")
    if method == "blanket":  # single use: a few certified FFTs of <= 2^20 points (engines.blanket_fft); else tight's
        if compositions == 1:
            return Estimate(4e8 if mechanism.n > 10**6 else 5e7, 10.0 if mechanism.n > 10**6 else 2.0,
                            "blanket sum form")
        method = "tight"
    relation = getattr(getattr(mechanism, "relation", None), "value", None)
    if method == "tight" and relation == "weak":
        q = Question(eps=(1.0,), compositions=compositions, weak=(mechanism.n, mechanism.k, mechanism.gamma),
                     accountant=TightAccountant)
        choice = choose(q)
        if choice.engine is WEAK_BUCKETS:
            return choice.estimate(q)
    if method == "exact" and mechanism.kind in ("rr2", "krr") and getattr(mechanism, "k", 2) == 2 \
            and relation in (None, "shuffled"):
        return exact_binary_rr_estimate(mechanism.n)
    if method == "exact" and mechanism.kind in ("matrix", "krr") and relation in (None, "shuffled"):
        # every data set enumerated (exact.enumeration): refused beyond its budget as account() refuses it; composed,
        # the dominating pair's tight run comes on top (exact.enumeration.exact_view)
        from shufflesim.accounting.exact.enumeration import check_enumeration, estimate

        k, m = (mechanism.k, mechanism.k) if mechanism.kind == "krr" else mechanism.array.shape
        check_enumeration(mechanism.n, k, m)
        est = estimate(mechanism.n, k, m)
        if compositions == 1:
            return est
        tight = estimate_account(mechanism, method="tight", compositions=compositions, numerics=numerics)
        return Estimate(max(est.bytes, tight.bytes), est.seconds + tight.seconds, est.engine)
    q = Question(eps=(1.0,), compositions=compositions, numerics=dict(numerics or {}),
                 pairs=_pairs(mechanism, method, 1e-15), accountant=TightAccountant)
    return choose(q).estimate(q)


def certified_delta_upper(mechanism: Mechanism, eps: float, *, method: str | None = None, compositions: int = 1,
                          numerics: dict | None = None, bennett_variant: str = "fixed") -> float:
    """The certified upper bound on δ(ε) (``inf`` where the method does not apply)."""
    rep = account(mechanism, eps=[eps], method=method, compositions=compositions, numerics=numerics,
                  bennett_variant=bennett_variant)
    (r,) = rep.results
    return r.delta_upper if getattr(r, "applicable", True) else math.inf


def calibrate_mechanism(make, name: str, eps: float, delta: float, lo: float, hi: float, *, increasing: bool,
                        method: str | None = None, compositions: int = 1, rtol: float = 1e-6,
                        numerics: dict | None = None, bennett_variant: str = "fixed",
                        max_evals: int = 200) -> Calibrated:
    """Calibrate one parameter of a mechanism to an (ε, δ) target — the one calibrator behind all others.

    ``make(x)`` builds the description for parameter value x ∈ [lo, hi] (lo > 0, searched in log scale);
    ``increasing`` says whether the certified δ(ε) grows with x.  The search (:func:`.calibrate.calibrate`)
    returns the x closest to the boundary at which the certified δ_upper was *evaluated* to be ≤ δ, so it
    never overshoots the target.  Raises InfeasibleError if no x in [lo, hi] meets it.
    """
    from shufflesim.accounting.numerics.invert import calibrate

    eps_l, delta_l = eps_values(eps), delta_values(delta)  # the one question validator (.queries)
    if len(eps_l) != 1 or len(delta_l) != 1:
        raise ParameterError(f"calibrate_mechanism takes one eps and one delta; got eps={eps!r}, delta={delta!r}")
    (eps,), (delta,) = eps_l, delta_l
    compositions = check_compositions(compositions)
    used = {"method": None}

    def fn(x: float) -> float:
        mech = make(x)
        used["method"] = method or mech.default_for(compositions)
        return certified_delta_upper(mech, eps, method=method, compositions=compositions, numerics=numerics,
                                     bennett_variant=bennett_variant)

    c = calibrate(fn, delta, lo, hi, increasing=increasing, xtol=0.0, rtol=rtol, log_scale=True, max_evals=max_evals)
    return Calibrated(name, c.x, c.value, eps, delta, used["method"] or "tight", c.evaluations)
