"""How an answer was obtained, as values: the structured provenance of every certified answer, and the one
place its notes are worded for people.

An answer (:class:`~.results.Answer`) carries a :class:`Provenance`.  Code that must know how an answer was
obtained reads its fields — the evaluated pairs, the engine, whether the answer *is* the local guarantee
(and the cap), which explicit data sets gave the lower end, the truncated mass, the accuracy verdict, the
fallbacks taken — never the text (issue 28: rewording a note must not change behaviour).  The text is
rendered from those fields by :func:`render`, through the :data:`RENDERERS` table (one entry per record type,
so a test can reword a note and check that nothing else moves).

``Provenance.items`` is the ordered sequence the answer's ``notes`` are rendered from: records of the types
below (the lower end's data sets, ``best``'s borrowed lower end, the accuracy verdict, the fallbacks) and free
text (a published bound's reference, a grid's description) that no code inspects.  The other fields are not
part of the answer's notes: ``pairs``, ``truncation`` and ``local`` are reported once per question by the
accountant (:mod:`.account`, rendered by the same table into the report's notes); ``engine``, ``evaluations``
and ``worst_data_set`` are for code only (rendered nowhere, not in ``to_dict``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable


@dataclass(frozen=True)
class PairRef:
    """A neighbouring pair an accountant evaluated: its name and the paper / docs section it comes from."""

    name: str
    reference: str = ""


@dataclass(frozen=True)
class LocalGuarantee:
    """The answer is (or is capped at) the local guarantee ``cap`` (ε0 times the number of uses).

    ``why``: ``"underflow"`` (ε0 below ``threshold``: every method's terms underflow), ``"overflow"`` (ε0 above
    ``threshold``: e^ε0 overflows), both meaning the whole answer is the local guarantee; ``"capped"``: the
    method's own upper end was larger and was lowered to the cap."""

    cap: float
    why: str
    threshold: float | None = None

    @property
    def whole_answer(self) -> bool:
        """True when the answer is the local guarantee itself (no method was run)."""
        return self.why in ("underflow", "overflow")


@dataclass(frozen=True)
class LowerEnd:
    """Where the mechanism-level lower end of an answer whose pair only dominates the view comes from:
    ``data_sets`` describes the explicit neighbouring data sets evaluated, None when there are none, and then
    ``why`` may say why none could be evaluated (docs/theory.md#lower-ends)."""

    data_sets: str | None
    why: str | None = None

    @property
    def none(self) -> bool:
        return self.data_sets is None


@dataclass(frozen=True)
class BorrowedLower:
    """``best``'s lower end taken from another method's row (:mod:`.compare`): that ``method`` and the
    lower-end records of its answer (empty when its lower end is its own view's)."""

    method: str
    ends: tuple[LowerEnd, ...] = ()


@dataclass(frozen=True)
class Accuracy:
    """The accuracy verdict of an engine's answer.

    ``scale`` "delta": the δ interval [``lower``, ``upper``] at ε = ``at`` against the relative ``target``;
    ``cause`` (when not met) "truncation" (the pairs' dropped mass ``tail`` dominates) or "grid" (the FFT grid up
    to ``max_grid_size`` and its fallbacks could not narrow it).  ``scale`` "eps": the ε interval
    [``lower``, ``upper``] of relative ``width`` against ``eps_rtol`` = ``target``."""

    met: bool
    scale: str
    target: float
    lower: float
    upper: float
    at: float | None = None
    width: float | None = None
    cause: str | None = None
    tail: float = 0.0
    max_grid_size: int | None = None


@dataclass(frozen=True)
class Fallback:
    """A fallback an engine took: ``kind`` is one of :data:`FALLBACKS`; ``atoms`` the composed atoms of the
    exact pairwise fallback (P over Q, Q over P)."""

    kind: str
    atoms: tuple[int, int] | None = None


#: the fallbacks an engine reports (:class:`Fallback`): the Chernoff / product-event bounds below the plain FFT's
#: round-off floor with tilting disabled (docs/theory.md 5.9), the same bounds where the grid could not certify
#: the target, a direction whose grid missed the target, exact pairwise composition of a 2-fold composition
FALLBACKS = ("chernoff-floor", "tail-bounds", "grid-short", "exact-pairwise")


@dataclass(frozen=True)
class Provenance:
    """How one answer was obtained (module docstring)."""

    #: what the answer's notes are rendered from, in order: records and free text
    items: tuple = ()
    #: the engine that computed it ("exact", "exact-composed", "fft", "local guarantee", ...; None: not recorded)
    engine: str | None = None
    #: why that engine was chosen (recorded by the one engine choice, :mod:`shufflesim.accounting.engines.choice`)
    engine_reason: str | None = None
    #: the pairs the accountant evaluated
    pairs: tuple[PairRef, ...] = ()
    #: the pairs' truncated (dropped) mass, added to the upper end (0: none)
    truncation: float = 0.0
    #: set when the answer is, or is capped at, the local guarantee
    local: LocalGuarantee | None = None
    #: evaluations of the engine's search (an exact bracket's; 0: not recorded)
    evaluations: int = 0
    #: the worst data set an exact engine found — the one its lower end is the value of — as that engine names
    #: it (exact_rr2: m, the number of ones among the other users); None: not an exact search
    worst_data_set: int | str | None = None

    def add(self, *items) -> "Provenance":
        return replace(self, items=self.items + tuple(items))

    def without(self, kind: type) -> "Provenance":
        return replace(self, items=tuple(i for i in self.items if not isinstance(i, kind)))

    def _all(self, kind: type) -> tuple:
        return tuple(i for i in self.items if isinstance(i, kind))

    @property
    def accuracy(self) -> Accuracy | None:
        """The last accuracy verdict (None: the engine recorded none, e.g. a published bound)."""
        got = self._all(Accuracy)
        return got[-1] if got else None

    @property
    def lower_ends(self) -> tuple[LowerEnd, ...]:
        return self._all(LowerEnd)

    @property
    def lower_end(self) -> LowerEnd | None:
        """The latest record of where the mechanism-level lower end comes from (None: not recorded)."""
        got = self.lower_ends
        return got[-1] if got else None

    @property
    def borrowed_lower(self) -> BorrowedLower | None:
        got = self._all(BorrowedLower)
        return got[-1] if got else None

    @property
    def fallbacks(self) -> tuple[Fallback, ...]:
        return self._all(Fallback)

    def notes(self) -> tuple[str, ...]:
        """The items rendered for people, in order."""
        out: list[str] = []
        for it in self.items:
            out += render(it)
        return tuple(out)


# ---------------------------------------------------------------------------------------------------------
# the wording (for people only)

def _local(r: LocalGuarantee) -> tuple[str, ...]:
    if r.why == "underflow":
        return (f"eps0 < {r.threshold:g}: the methods' terms underflow double precision, so the answer is the local "
                f"guarantee eps <= {r.cap:.6g} (sound, without amplification; delta(eps) <= 1 below it, 0 above; no "
                "lower bound)",)
    if r.why == "overflow":
        return (f"eps0 > {r.threshold:g}: e^eps0 overflows double precision and the shuffle's amplification is below "
                f"1e-300 relative, so the answer is the local guarantee eps <= {r.cap:.6g} (delta(eps) <= 1 below "
                "it, 0 above; no lower bound)",)
    return ("capped at the local guarantee: a shuffled eps0-LDP randomiser is eps0-DP (eps0 times the number of "
            f"uses when composed), so eps <= {r.cap:.6g} and delta(eps) = 0 for eps >= {r.cap:.6g}; the method's own "
            "value was larger",)


def _lower_end(r: LowerEnd) -> tuple[str, ...]:
    if r.data_sets is not None:
        return (f"lower end: {r.data_sets}",)
    return (f"lower end: {r.why}" if r.why else "lower end: none (no explicit data sets are evaluated for this method)",)


def _borrowed(r: BorrowedLower) -> tuple[str, ...]:
    got = tuple(t for e in r.ends for t in render(e))
    return got or (f"lower end from {r.method}",)


def _accuracy(r: Accuracy) -> tuple[str, ...]:
    if r.met:
        return ()
    if r.scale == "eps":
        return (f"accuracy_met=false: relative width {r.width:.3g} in eps above eps_rtol={r.target:g}; the best "
                f"certified interval [{r.lower:.6g}, {r.upper:.6g}] is reported",)
    why = (f"the pairs' truncated (dropped) mass {r.tail:.3g} dominates the interval: delta(eps={r.at:.6g}) is "
           f"below what the truncation certifies (build the pairs with a smaller tail_bound if it allows)"
           if r.cause == "truncation" else
           f"the FFT grid (max_grid_size={r.max_grid_size}), its tilting, the Chernoff/product-event "
           f"bounds and exact pairwise composition (when small enough) could not narrow it further")
    return (f"accuracy_met=false: relative accuracy {r.target:g} not reached at eps={r.at:.6g}; the best "
            f"certified interval [{r.lower:.6g}, {r.upper:.6g}] is reported; {why}",)


def _fallback(r: Fallback) -> tuple[str, ...]:
    if r.kind == "chernoff-floor":
        return ("Chernoff fallback below round-off floor (tilting disabled): upper = Chernoff bound, "
                "lower = product-event bound (not tight)",)
    if r.kind == "tail-bounds":
        return ("Chernoff/product-event tail bounds used where the FFT grid could not certify the target",)
    if r.kind == "grid-short":
        return ("the FFT grid did not reach the target accuracy in this direction: interval is certified but wide",)
    pq, qp = r.atoms or (0, 0)
    return (f"FFT grid could not certify the target: exact pairwise composition of the atoms "
            f"({pq}+{qp} composed atoms) used as the accuracy fallback",)


def _pair(r: PairRef) -> tuple[str, ...]:
    return (f"pair: {r.name} ({r.reference})" if r.reference else f"pair: {r.name}",)


#: record type -> its wording (a tuple of notes); the only place note text is made from provenance
RENDERERS: dict[type, Callable] = {LocalGuarantee: _local, LowerEnd: _lower_end, BorrowedLower: _borrowed,
                                   Accuracy: _accuracy, Fallback: _fallback, PairRef: _pair}


def render(item) -> tuple[str, ...]:
    """The notes of one provenance item: free text as is, a record through :data:`RENDERERS`."""
    if isinstance(item, str):
        return (item,)
    return tuple(RENDERERS[type(item)](item))


def truncation_note(mass: float) -> str:
    """The report's note on the pairs' truncated mass."""
    return f"truncated tails (mass <= {mass:.3g}) added to the upper bounds"
