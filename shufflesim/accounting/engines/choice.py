"""One engine choice for the pair-based methods (issue 28, item 3): the engines behind one interface, chosen in
one place from the cost estimates of :mod:`.estimates`, with the choice and its reason recorded on every answer.

An engine answers a :class:`Question` (the values asked, the compositions, the numerics, and what it is asked
about: built pairs, or the parameters of a mechanism an engine handles without building its pair) through

* ``supports(question) -> reason | None`` -- why it cannot answer (None: it can),
* ``estimate(question) -> Estimate``     -- its memory and time (:mod:`.estimates`),
* ``run(question) -> (results, notes)``  -- certified :class:`~.results.DeltaBound` / :class:`~.results.EpsBound`.

The engines (the registry :data:`ENGINES`):

* ``pld`` -- the PLD accountant of :mod:`.tight`: exact over the atoms or the rows single use, exact pairwise
  composition, certified FFT composition (its sub-choice by size is :attr:`~.tight.TightAccountant.mode`, recorded
  as ``pld/<mode>``);
* ``bucket rows`` -- :mod:`.bucketed`: pairs in row form reduced to certified bucket rows (cost independent of n);
* ``weak buckets`` -- :mod:`.bucketed_weak`: the weak adversary's k-RR pair bucketed from its parameters, never
  built (docs/theory.md#bucketed-weak);
* ``exact binary RR`` -- :mod:`.exact_engine` (a higher layer, registered there with :func:`register`): shuffled
  binary randomised response's worst case over every data set (docs/theory.md#exact-rr2).

:func:`choose` is the only place an engine is chosen; :func:`answer` runs the choice (and its fallback) and stamps
``engine`` and ``engine_reason`` on each result.  ``account`` (hence ``best`` and ``--compare``, which run it for
every method), :func:`~.tight.tight_delta` / :func:`~.tight.tight_epsilon` and the mechanism descriptions that
answer directly (k-RR's weak adversary, binary RR's exact method) all go through it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.engines.estimates import (EXACT_FALLBACK_SECONDS, Estimate, estimate_accounting,
                                             exact_row_engine_estimate, weak_buckets_estimate)
from shufflesim.accounting.model.results import DeltaBound, EpsBound

#: relative width of a bucket-rows single-use answer above which the exact row engine's answer is taken instead,
#: where that engine fits (both are certified; the exact one is narrower)
BUCKET_MAX_WIDTH = 1e-3
#: the weak adversary's bucket rows are chosen when their estimated atoms are below this share of its row pair's
WEAK_BUCKET_SHARE = 0.25


@dataclass(frozen=True)
class Question:
    """What an engine is asked: δ(ε) at ``eps`` or ε(δ) at ``delta`` (one of the two), ``compositions`` uses, the
    PLD accountant's ``numerics``, and the object: built ``pairs`` (a pair or a sequence of pairs), the weak
    adversary's k-RR parameters ``weak = (n, k, gamma)`` (with ``accountant``, the PLD accountant every engine here
    runs: :class:`~.tight.TightAccountant`), or binary RR's ``binary_rr = (n, eps0 for the upper
    end, eps0 for the lower end)`` with ``dominating`` (the ``tight`` method's answers on its dominating pair,
    the composed upper end)."""

    eps: tuple[float, ...] | None = None
    delta: tuple[float, ...] | None = None
    compositions: int = 1
    numerics: dict = field(default_factory=dict)
    pairs: Any = None
    weak: tuple[int, int, float] | None = None
    #: the PLD accountant class (:class:`~.tight.TightAccountant`), passed in: :mod:`.tight` calls this module
    accountant: Any = None
    binary_rr: tuple[int, float, float] | None = None
    dominating: Callable[[], tuple[list, list[str]]] | None = None

    @property
    def values(self) -> list[float]:
        return list(self.eps if self.eps is not None else self.delta)

    @property
    def pair_list(self) -> list:
        if self.pairs is None:
            return []
        return list(self.pairs) if isinstance(self.pairs, (list, tuple)) else [self.pairs]

    @property
    def uses(self) -> int:
        return self.compositions * max(1, len(self.pair_list))


class Engine(ABC):
    """One way of answering a :class:`Question` (module docstring)."""

    name: ClassVar[str] = ""

    @abstractmethod
    def supports(self, q: Question) -> str | None:
        """Why this engine cannot answer ``q``, or None when it can."""

    @abstractmethod
    def estimate(self, q: Question) -> Estimate:
        """Its memory and time on ``q`` (:mod:`.estimates`)."""

    @abstractmethod
    def run(self, q: Question) -> tuple[list, list[str]]:
        """Certified results, one per value asked, and notes."""

    def prefer(self, q: Question) -> tuple[bool, str]:
        """For an engine that answers from a mechanism's parameters: whether it is preferred to the PLD accountant
        on the mechanism's pair, and why (by default: it is the engine for the question)."""
        return True, f"the {self.name} engine answers this question"


class PLDEngine(Engine):
    """The PLD accountant (:class:`~.tight.TightAccountant`) on the pairs as given."""

    name = "pld"

    def supports(self, q):
        if q.accountant is None:
            return "no PLD accountant given"
        return None if q.pairs is not None else "no neighbouring pair is built"

    def estimate(self, q):
        return estimate_accounting(q.pairs, q.compositions, q.numerics, bucketed=False)

    def run(self, q):
        acc = q.accountant(q.pairs, compositions=q.compositions, **q.numerics)
        res = acc.delta(q.values) if q.eps is not None else acc.epsilon(q.values)
        return [r.with_engine(f"{self.name}/{acc.mode}", f"{acc.mode}: {acc.mode_reason}")
                for r in res], []


class BucketRowsEngine(Engine):
    """Pairs in row form reduced to certified bucket rows (:mod:`.bucketed`), each side by the PLD accountant."""

    name = "bucket rows"

    def supports(self, q):
        from shufflesim.accounting.rows.bucketed import BUCKET_MIN_ATOMS, BUCKET_MIN_ATOMS_COMPOSED, needs_buckets

        if q.accountant is None:
            return "no PLD accountant given"
        if needs_buckets(q.pair_list, compositions=q.compositions):
            return None
        limit = BUCKET_MIN_ATOMS if q.uses == 1 else BUCKET_MIN_ATOMS_COMPOSED
        return f"no pair in row form with more than {limit:.3g} atoms"

    def estimate(self, q):
        return estimate_accounting(q.pairs, q.compositions, q.numerics, bucketed=True)

    def run(self, q):
        from shufflesim.accounting.rows.bucketed import bucketed_delta, bucketed_epsilon

        fn = bucketed_delta if q.eps is not None else bucketed_epsilon
        return fn(q.pairs, q.values, accountant=q.accountant, compositions=q.compositions, **q.numerics), []


class WeakBucketsEngine(Engine):
    """The weak adversary's k-RR pair bucketed from its parameters (:mod:`.bucketed_weak`)."""

    name = "weak buckets"

    def supports(self, q):
        if q.weak is None:
            return "not the weak adversary's k-RR pair"
        if q.accountant is None:
            return "no PLD accountant given"
        if q.weak[2] >= 1.0:
            return "gamma = 1: no privacy loss, the row pair is one atom"
        return None

    def atoms(self, q) -> tuple[float, float]:
        """(estimated atoms of the bucket rows' upper pair, of the row pair)."""
        from shufflesim.accounting.engines.bucketed_weak import DEFAULT_RTOL, H_PER_RTOL, estimate_atoms, exact_atoms

        n, k, gamma = q.weak
        return estimate_atoms(n, k, gamma, H_PER_RTOL * DEFAULT_RTOL), exact_atoms(n, k, gamma)

    def estimate(self, q):
        return weak_buckets_estimate(self.atoms(q)[0], q.compositions)

    def prefer(self, q):
        buckets, rows = self.atoms(q)
        if buckets < WEAK_BUCKET_SHARE * rows:
            return True, f"about {buckets:.3g} atoms in bucket rows against {rows:.3g} in the row pair"
        return False, (f"the row pair (about {rows:.3g} atoms) is no more than {1 / WEAK_BUCKET_SHARE:g} times the "
                       f"bucket rows' {buckets:.3g}: exact rows are as cheap and narrower")

    def run(self, q):
        from shufflesim.accounting.engines.bucketed_weak import weak_bucketed

        n, k, gamma = q.weak
        key = "eps" if q.eps is not None else "delta"
        return weak_bucketed(n, k, gamma, accountant=q.accountant, compositions=q.compositions, **{key: q.values})


PLD = PLDEngine()
BUCKET_ROWS = BucketRowsEngine()
WEAK_BUCKETS = WeakBucketsEngine()
#: every engine, by name
ENGINES: dict[str, Engine] = {e.name: e for e in (PLD, BUCKET_ROWS, WEAK_BUCKETS)}
#: the engines that answer from a mechanism's parameters, without its pair, in the order :func:`choose` asks them
DIRECT: list[Engine] = [WEAK_BUCKETS]


def register(engine: Engine) -> Engine:
    """Add an engine that answers from a mechanism's parameters (a higher layer's, e.g. :mod:`.exact_engine`)."""
    ENGINES[engine.name] = engine
    if engine not in DIRECT:
        DIRECT.append(engine)
    return engine


@dataclass(frozen=True)
class Choice:
    """The engine chosen for a question, why, and the engine whose answer replaces a single-use bucket-rows
    answer wider than :data:`BUCKET_MAX_WIDTH` (None: no fallback)."""

    engine: Engine
    reason: str
    fallback: Engine | None = None
    #: the chosen engine's estimate where the choice already computed it (None: computed on demand)
    cost: Estimate | None = None

    def estimate(self, q: Question) -> Estimate:
        return self.cost if self.cost is not None else self.engine.estimate(q)


def _exact_rows_fit(q: Question) -> Estimate | None:
    """The exact row engine's estimate on a single-use question about one pair in row form when it fits in
    memory and :data:`~.estimates.EXACT_FALLBACK_SECONDS` (else None)."""
    from shufflesim.core.resources import ResourceError, check_memory

    seq = q.pair_list
    if q.uses != 1 or not isinstance(seq[0], BinomialRows):
        return None
    est = exact_row_engine_estimate(seq[0])
    if est.seconds > EXACT_FALLBACK_SECONDS:
        return None
    try:
        check_memory(est.bytes, "exact row engine", "")
    except ResourceError:
        return None
    return est


def choose(q: Question) -> Choice:
    """The engine for ``q`` -- the one place the choice is made:

    * a mechanism's parameters (no pair built): the first engine of :data:`DIRECT` that supports the question, if it
      prefers itself (``weak buckets`` when their estimated atoms are below :data:`WEAK_BUCKET_SHARE` of the row
      pair's; ``exact binary RR`` always), else ``pld`` on the pair (the caller builds it);
    * built pairs: ``bucket rows`` when a pair in row form is larger than :mod:`.bucketed`'s thresholds, except single
      use of rows whose λ varies independently of N (:func:`~.bucketed.two_parameter`: the bucket rows narrow only
      like blocks^-1/2, never to :data:`BUCKET_MAX_WIDTH`) where the exact row engine fits; a single-use
      bucket-rows answer wider than :data:`BUCKET_MAX_WIDTH` is replaced by the exact row engine's where it fits;
      otherwise ``pld``.
    """
    if q.pairs is None:
        for e in DIRECT:
            if e.supports(q) is None:
                ok, why = e.prefer(q)
                return Choice(e if ok else PLD, why)
        return Choice(PLD, "no engine answers this question without its pair")
    why = BUCKET_ROWS.supports(q)
    if why is not None:
        return Choice(PLD, why)
    from shufflesim.accounting.rows.bucketed import two_parameter

    exact = _exact_rows_fit(q)
    if exact is not None and two_parameter(q.pair_list[0]):
        return Choice(PLD, "single use of rows whose lambda varies independently of N (bucket rows narrow only like "
                      f"blocks^-1/2): the exact row engine fits ({exact.describe()})")
    cost = BUCKET_ROWS.estimate(q)
    return Choice(BUCKET_ROWS, f"a pair in row form too large for the exact engines ({cost.describe()})",
                  PLD if exact is not None else None, cost)


def _rel_width(r) -> float:
    up, lo = r.upper, r.lower  # either face of the one answer type
    if lo is None or not math.isfinite(up):
        return math.inf
    return 0.0 if up <= 0 else (up - lo) / up


def answer(q: Question, choice: Choice | None = None) -> tuple[list, list[str]]:
    """Run the engine :func:`choose` picks for ``q`` (or ``choice``), and its fallback where the answer is too wide;
    every result carries ``engine`` (the engine that answered) and ``engine_reason`` (why)."""
    ch = choose(q) if choice is None else choice
    results, notes = ch.engine.run(q)
    engine, reason = ch.engine, ch.reason
    if ch.fallback is not None and not all(_rel_width(r) <= BUCKET_MAX_WIDTH for r in results):
        results, notes = ch.fallback.run(q)
        engine = ch.fallback
        reason = (f"{ch.reason}; its answer was wider than {BUCKET_MAX_WIDTH:g} relative and the exact row engine "
                  "fits, so that engine's (narrower) answer")
    return [stamp(r, engine.name, reason) for r in results], notes


def stamp(r, engine: str, reason: str):
    """``r`` with ``engine`` (kept where the engine named its sub-path) and ``engine_reason`` (the choice's reason,
    then the engine's own for its sub-path) recorded."""
    if not isinstance(r, (DeltaBound, EpsBound)):
        return r
    why = reason if r.engine_reason is None else f"{reason}; {r.engine_reason}"
    named = r.engine is not None and r.engine.startswith(engine + "/")  # the engine named its own sub-path
    return r.with_engine(r.engine if named else engine, why)
