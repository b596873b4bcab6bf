"""Result types shared by every accountant and published bound: one answer type, two faces.

Every answer is an :class:`Answer`: an interval ``lower <= true value <= upper`` for one question — δ(ε) at
one ε (:class:`DeltaBound`, whose ends are named ``delta_lower``/``delta_upper``) or ε(δ) at one δ
(:class:`EpsBound`, ``eps_lower``/``eps_upper``) — with the method that certified it and its structured
:class:`~.provenance.Provenance` (pairs, engine, local guarantee, lower-end data sets, truncation, accuracy,
fallbacks), from which its ``notes`` are rendered for people (no code reads a note).  A lower bound is
``None`` where a method has none.  A method asked for outside its validity conditions returns
:class:`NotApplicable` with the reason instead of a number.

Both ends bound the privacy curve of the *mechanism's view* (what its
:class:`~shufflesim.accounting.model.mechanism.Relation` says the adversary sees), never an intermediate bound
(issue 17).  A method that evaluates a *dominating* pair (the stronger clone pair, seed 001's eq 6.1 pair,
Feldman et al.'s pair, a stronger adversary's pair) certifies the upper end through it, and reports the
pair's own numerical bracket separately, as ``bound_pair`` (its name), ``bound_lower`` and ``bound_upper``
— a bracket of that pair's δ (or ε), which says how tightly the pair was evaluated, not how private the
mechanism is.  The mechanism-level lower end then comes from a genuine construction (the exact δ of an
explicit neighbouring pair of data sets, recorded as a :class:`~.provenance.LowerEnd`) or is ``None``.

An exact bracket of the mechanism's own value (``exact_rr2.Bracket``: lower, upper, the worst data set,
evaluations) is an answer whose provenance records ``engine="exact-rr2"``, the search's ``evaluations`` and
the ``worst_data_set``: :meth:`Answer.exact_bracket`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar


from shufflesim.accounting.model.provenance import LowerEnd, Provenance, render


class Answer:
    """One certified answer: the two faces :class:`DeltaBound` (δ(ε)) and :class:`EpsBound` (ε(δ)) share
    these names, so code that does not care which question was asked reads ``at``, ``lower``, ``upper``,
    ``provenance`` and ``notes`` (rendered from the provenance) instead of dispatching on the type."""

    #: "delta" (the answer bounds δ at ε = ``at``) or "eps" (it bounds ε at δ = ``at``)
    asks: ClassVar[str] = ""
    _ENDS: ClassVar[tuple[str, str, str]] = ("", "", "")  # (the question's field, lower field, upper field)

    def _init(self, at, upper, lower, method, notes, applicable, accuracy_met, bound_pair, bound_lower,
              bound_upper, provenance) -> None:
        q, lo, up = self._ENDS
        if provenance is None:  # a fresh answer: its notes are free text (no record to match them against)
            prov = Provenance(items=tuple(notes)) if notes else _NO_PROVENANCE
        else:
            prov = _with_notes(provenance, notes) if notes else provenance
        for name, value in ((q, at), (up, upper), (lo, lower), ("method", method), ("provenance", prov),
                            ("applicable", applicable), ("accuracy_met", accuracy_met), ("bound_pair", bound_pair),
                            ("bound_lower", bound_lower), ("bound_upper", bound_upper)):
            object.__setattr__(self, name, value)

    @property
    def at(self) -> float:
        return getattr(self, self._ENDS[0])

    @property
    def lower(self) -> float | None:
        return getattr(self, self._ENDS[1])

    @property
    def upper(self) -> float:
        return getattr(self, self._ENDS[2])

    def to_dict(self) -> dict:
        """The answer as JSON: the question's value, the upper and lower ends, accuracy_met; the dominating pair's
        bracket where there is one; the engine and why it was chosen where one was recorded."""
        q, lo, up = self._ENDS
        d = {q: self.at, up: self.upper, lo: self.lower, "accuracy_met": self.accuracy_met}  # type: ignore[attr-defined]
        if self.bound_pair is not None:  # type: ignore[attr-defined]
            d.update(bound_pair=self.bound_pair, bound_lower=self.bound_lower,  # type: ignore[attr-defined]
                     bound_upper=self.bound_upper)  # type: ignore[attr-defined]
        if self.provenance.engine is not None:  # type: ignore[attr-defined]
            d.update(engine=self.engine, engine_reason=self.engine_reason)
        return d

    @property
    def engine(self) -> str | None:
        """The engine that computed this answer (its provenance's)."""
        return self.provenance.engine  # type: ignore[attr-defined]

    @property
    def engine_reason(self) -> str | None:
        """Why that engine was chosen (its provenance's)."""
        return self.provenance.engine_reason  # type: ignore[attr-defined]

    def with_engine(self, engine: str | None, reason: str | None):
        """This answer with the engine that computed it and the reason it was chosen recorded."""
        return replace(self, provenance=replace(self.provenance, engine=engine,  # type: ignore[attr-defined]
                                                engine_reason=reason))

    @property
    def notes(self) -> tuple[str, ...]:
        """The provenance rendered for people (:func:`~.provenance.render`)."""
        return self.provenance.notes()  # type: ignore[attr-defined]

    def with_ends(self, lower=..., upper=...):
        """This answer with its lower and/or upper end replaced (``...``: unchanged)."""
        kw = {}
        if lower is not ...:
            kw[self._ENDS[1]] = lower
        if upper is not ...:
            kw[self._ENDS[2]] = upper
        return replace(self, **kw)

    def with_provenance(self, provenance: Provenance):
        return replace(self, provenance=provenance)

    @classmethod
    def exact_bracket(cls, at: float, lower: float, upper: float, method: str = "exact", *, worst=None,
                      evaluations: int = 0, notes=(), engine: str = "exact-rr2"):
        """An exact engine's bracket of the mechanism's own value as an answer (``exact_rr2.Bracket``'s fields:
        ``worst`` is its ``m``, the worst data set found, whose value the lower end is; ``evaluations`` the
        search's cost; ``notes`` its free text), e.g. ``DeltaBound.exact_bracket(eps, b.lower, b.upper,
        worst=b.m, evaluations=b.evaluations, notes=b.notes)``."""
        prov = Provenance(items=tuple(notes), engine=engine, evaluations=evaluations, worst_data_set=worst)
        return cls(at, upper, lower, method, provenance=prov)

    @property
    def pair_bracket(self) -> tuple[str, float | None, float | None] | None:
        """(name, lower, upper) of the dominating pair's own bracket, or None when the method evaluated the
        mechanism's view itself."""
        b = self.bound_pair  # type: ignore[attr-defined]
        return None if b is None else (b, self.bound_lower, self.bound_upper)  # type: ignore[attr-defined]


#: the provenance of an answer constructed without one and without notes (frozen, so one instance serves all)
_NO_PROVENANCE = Provenance()


def _with_notes(prov: Provenance, notes) -> Provenance:
    """``prov`` whose items read ``notes`` (free text given by a caller: a published bound's reference,
    ``dataclasses.replace(answer, notes=...)``): a note that is a record's rendering stays that record, in the
    order given; other notes are kept as text; records not among ``notes`` keep their place at the end."""
    records = [i for i in prov.items if not isinstance(i, str)]
    items, placed = [], set()
    for nt in notes:
        rec = next((k for k, i in enumerate(records) if k not in placed and render(i)[:1] == (nt,)), None)
        if rec is not None:
            placed.add(rec)
            items.append(records[rec])
        elif not any(nt in render(records[k]) for k in placed):
            items.append(nt)
    items += [i for k, i in enumerate(records) if k not in placed]
    return replace(prov, items=tuple(items))


_FACE_DOC = """

    Constructed as before issue 28 — ``{cls}({q}, {up}, {lo}, method, notes=(), applicable=True,
    accuracy_met=True, bound_pair=None, bound_lower=None, bound_upper=None, *, provenance=None)`` — where
    ``notes`` are free text kept in the provenance; ``notes`` reads back the rendered provenance."""


@dataclass(frozen=True, init=False)
class DeltaBound(Answer):
    """Certified bounds on delta(eps) for one eps (the δ(ε) face of :class:`Answer`)."""

    asks: ClassVar[str] = "delta"
    _ENDS: ClassVar[tuple[str, str, str]] = ("eps", "delta_lower", "delta_upper")

    eps: float
    delta_upper: float
    delta_lower: float | None
    method: str
    applicable: bool = True
    #: False when the interval is certified but wider than the accountant's target accuracy (the provenance's
    #: ``accuracy`` says why); True for every other answer, including published bounds (which have no target)
    accuracy_met: bool = True
    #: the dominating pair a method evaluated (None: the method evaluated the mechanism's view itself) and
    #: that pair's own numerical bracket on δ(eps); ``delta_upper`` is certified through it
    bound_pair: str | None = None
    bound_lower: float | None = None
    bound_upper: float | None = None
    provenance: Provenance = field(default_factory=Provenance)

    def __init__(self, eps, delta_upper, delta_lower, method, notes=(), applicable=True, accuracy_met=True,
                 bound_pair=None, bound_lower=None, bound_upper=None, *, provenance=None):
        self._init(eps, delta_upper, delta_lower, method, notes, applicable, accuracy_met, bound_pair,
                   bound_lower, bound_upper, provenance)


@dataclass(frozen=True, init=False)
class EpsBound(Answer):
    """Certified bounds on eps(delta), the smallest eps with delta(eps) <= delta, for one delta (the ε(δ) face
    of :class:`Answer`)."""

    asks: ClassVar[str] = "eps"
    _ENDS: ClassVar[tuple[str, str, str]] = ("delta", "eps_lower", "eps_upper")

    delta: float
    eps_upper: float
    eps_lower: float | None
    method: str
    applicable: bool = True
    #: False when the interval is certified but the delta interval at eps_upper is wider than the
    #: accountant's target accuracy (the provenance's ``accuracy`` says why); True otherwise
    accuracy_met: bool = True
    #: the dominating pair a method evaluated (None: the mechanism's view itself) and that pair's own
    #: numerical bracket on ε(δ); ``eps_upper`` is certified through it
    bound_pair: str | None = None
    bound_lower: float | None = None
    bound_upper: float | None = None
    provenance: Provenance = field(default_factory=Provenance)

    def __init__(self, delta, eps_upper, eps_lower, method, notes=(), applicable=True, accuracy_met=True,
                 bound_pair=None, bound_lower=None, bound_upper=None, *, provenance=None):
        self._init(delta, eps_upper, eps_lower, method, notes, applicable, accuracy_met, bound_pair,
                   bound_lower, bound_upper, provenance)


DeltaBound.__doc__ += _FACE_DOC.format(cls="DeltaBound", q="eps", up="delta_upper", lo="delta_lower")
EpsBound.__doc__ += _FACE_DOC.format(cls="EpsBound", q="delta", up="eps_upper", lo="eps_lower")


def upper_of(r) -> float:
    """The certified upper end of a result (``inf`` for anything else)."""
    return r.upper if isinstance(r, Answer) else float("inf")


def lower_of(r) -> float | None:
    """The mechanism-level lower end of a result (None where there is none)."""
    return r.lower if isinstance(r, Answer) else None


def as_dominating(r, pair: str, lower: float | None = None, lower_end: LowerEnd | None = None):
    """``r`` re-read as the bracket of the dominating pair ``pair``: its interval moves to ``bound_lower`` /
    ``bound_upper``, the upper end stays (the pair dominates the view), the mechanism-level lower end
    becomes ``lower`` (a genuine construction, or None), and ``lower_end`` (where it comes from) is recorded in
    the provenance.  A result that already names a dominating pair keeps it; only its lower end changes."""
    if not isinstance(r, Answer):
        return r
    if lower is not None:
        lower = min(lower, r.upper)
    prov = r.provenance
    if lower_end is not None and lower_end not in prov.items:
        prov = prov.add(lower_end)
    if r.bound_pair is not None:
        pair, b_lo, b_up = r.bound_pair, r.bound_lower, r.bound_upper
    else:
        b_lo, b_up = r.lower, r.upper
    return replace(r.with_ends(lower=lower), bound_pair=pair, bound_lower=b_lo, bound_upper=b_up, provenance=prov)


@dataclass(frozen=True)
class NotApplicable:
    """A method asked for outside its validity conditions; ``reason`` says which condition fails."""

    method: str
    reason: str
    eps: float | None = None
    delta: float | None = None
    notes: tuple[str, ...] = field(default=())
    applicable: bool = False

    def to_dict(self) -> dict:
        d: dict = {"applicable": False, "reason": self.reason}
        if self.eps is not None:
            d.update(eps=self.eps, delta_upper=None, delta_lower=None)
        if self.delta is not None:
            d.update(delta=self.delta, eps_upper=None, eps_lower=None)
        return d


@dataclass(frozen=True)
class PrivacyGuarantee:
    """The central (ε, δ) a protocol satisfies and how it was certified.

    ``method`` names the accountant or bound (``tight``, ``balle``, ``bennett``, ``basic-composition``, …);
    ``notes`` say under which adversary / neighbouring relation.  Not an :class:`Answer`: it is the one
    (ε, δ) point a protocol publishes (the upper end of an answer, possibly capped or composed), not an
    interval for a question; ``source`` is the answer it was read from, when there is one (its provenance
    is then the structured record of how ε was certified; not part of :meth:`to_dict`).
    """

    eps: float
    delta: float
    method: str
    notes: tuple[str, ...] = ()
    source: Answer | None = field(default=None, compare=False)

    def to_dict(self) -> dict:
        return {"eps": self.eps, "delta": self.delta, "method": self.method, "notes": list(self.notes)}


@dataclass(frozen=True)
class AccountReport:
    """The answer to one ``account`` question."""

    mechanism: str
    params: dict
    method: str
    compositions: int
    results: tuple
    notes: tuple[str, ...]
    seconds: float
    composition: str | None = None

    def to_dict(self) -> dict:
        d = {
            "mechanism": self.mechanism,
            "params": self.params,
            "method": self.method,
            "compositions": self.compositions,
            "results": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
            "seconds": self.seconds,
        }
        if self.composition is not None:
            d["composition"] = self.composition
        return d
