"""What the accountant accounts: mechanism descriptions as frozen values.

A *mechanism description* says what a shuffled mechanism is (its parameters and the neighbouring relation
under which it is analysed); :func:`shufflesim.accounting.account.account` says what to do with it.  The
split follows Google's dp_accounting (``DpEvent`` values consumed by accountants), with one difference:
here each description also knows *how it is accounted* — which neighbouring pair a pair-based method
evaluates, and which published bounds apply — so that a new mechanism becomes accountable by adding one
module under :mod:`shufflesim.mechanisms` that subclasses :class:`Mechanism`, with no change to the
accountant.

* :class:`Relation` — the neighbouring relations / adversary models (one enum, never strings);
* :class:`Mechanism` — the base of every description: ``methods``, ``pair(method, tail_bound)`` for
  pair-based methods, ``bound(method, options)`` for published closed-form or numerical bounds;
* :class:`Composition` — a sequence of (mechanism, count), heterogeneous allowed (the recursive
  summation protocol's levels, FL rounds).
"""

from __future__ import annotations

import enum
import math
from abc import ABC
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar, Iterator

from shufflesim.errors import NotApplicableError, ParameterError

#: methods that evaluate a neighbouring pair (PLD accountant or brute-force enumeration)
PAIR_METHODS = frozenset({"tight", "exact", "exact-histogram", "tight-koskela", "exact-koskela", "variation-ratio",
                          "blanket"})
#: methods computed from several others (:mod:`.compare`): the smallest certified upper bound
META_METHODS = frozenset({"best"})


class Relation(str, enum.Enum):
    """Neighbouring relation and adversary model under which a shuffled mechanism is accounted.

    For shuffled k-ary randomised response (Koskela, Heikkilä, Honkela 2023, arXiv:2106.00477, §5;
    docs/theory.md#pairs-krr):

    * ``STRONG_1D`` — the one-dimensional pair exactly as the seeds state it (seed 001 eq 5.1);
    * ``STRONG`` — the full view of the strong adversary, who sees every user's blanket coin;
    * ``WEAK`` — the weak adversary, who sees the shuffled reports and the *other* users' blanket coins
      (seed 001 Definition 9, Theorem 10);
    * ``SHUFFLED`` — the analyser, who sees the shuffled reports only (what a shuffle protocol releases).
      Every pair above bounds this view too (each adversary sees more); the pair shufflesim evaluates for it
      is the stronger clone pair at the randomiser's ε0 (Feldman, McMillan, Talwar 2023;
      docs/theory.md#pairs-stronger-clones), valid for every data set of the other users — an upper end only:
      the lower end comes from explicit data sets (docs/theory.md#krr-shuffled-lower).
    """

    STRONG_1D = "strong-1d"
    STRONG = "strong"
    WEAK = "weak"
    SHUFFLED = "shuffled"

    @classmethod
    def parse(cls, value: "Relation | str") -> "Relation":
        """The relation named ``value`` (a :class:`Relation` or its string); ParameterError otherwise."""
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(r.value for r in cls)
            raise ParameterError(f"adversary must be one of {allowed}; got {value!r}") from None

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Flag:
    """A command-line flag of a mechanism description (``shufflesim account KIND --NAME …``).

    ``type`` is "int", "float" or "choice" (with ``choices``); flags sharing a ``group`` are mutually
    exclusive and one of them is required when ``required`` is set on the group's members.  ``dest`` is
    the keyword the flag's value is passed as to :meth:`Mechanism.from_flags`.
    """

    name: str
    type: str
    help: str
    required: bool = True
    choices: tuple[str, ...] = ()
    group: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


#: a published bound as two per-value functions: eps -> DeltaBound|NotApplicable, delta -> EpsBound|...
BoundFunctions = tuple[Callable[[float], Any], Callable[[float], Any]]


@dataclass(frozen=True)
class BoundOptions:
    """Options of the published bounds (``bennett_variant``: "fixed" or "original-2019")."""

    bennett_variant: str = "fixed"

    def __post_init__(self) -> None:
        if self.bennett_variant not in ("fixed", "original-2019"):
            raise ParameterError(f"bennett variant must be 'fixed' or 'original-2019'; got {self.bennett_variant!r}")


class Mechanism(ABC):
    """Base of the mechanism descriptions (frozen dataclasses in :mod:`shufflesim.mechanisms`).

    Subclasses set ``kind`` (the CLI name) and ``methods`` (every method that applies, the default
    first), validate their fields in ``__post_init__`` (raising ParameterError), and implement
    :meth:`pair` for the pair-based methods they list and :meth:`bound` for the published ones.
    """

    kind: ClassVar[str] = ""
    #: one line for the CLI's help
    summary: ClassVar[str] = ""
    #: a runnable ``shufflesim account KIND`` example's flags (``--n 1000 --eps0 2 --eps 0.5 1``), shown by --help
    example: ClassVar[str] = ""
    methods: ClassVar[tuple[str, ...]] = ()
    #: the command-line flags that describe this mechanism
    flags: ClassVar[tuple[Flag, ...]] = ()
    #: largest n for the pair-based methods: the binomial log-PMF's accuracy model is tested to n = 1e10
    #: (tests/test_pairs.py, n p rounding compensated); the bucketed rows' cost does not grow with n (issue 21)
    max_n_pairs: ClassVar[int] = 10**10

    n: int

    @property
    def default_method(self) -> str:
        return self.methods[0]

    def default_for(self, compositions: int = 1) -> str:
        """The method :func:`~shufflesim.accounting.account.account` uses when none is named, for a question of
        ``compositions`` uses: :attr:`default_method` unless a description knows better for that count."""
        return self.default_method

    @classmethod
    def from_flags(cls, **values: Any) -> "Mechanism":
        """The description from its flags' values (flags not given are None)."""
        return cls(**values)  # type: ignore[call-arg]

    def params(self) -> dict[str, Any]:
        """The resolved parameters, as reported (derived quantities such as ε0 ↔ γ included)."""
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None:
                continue
            out[f.name] = v.value if isinstance(v, enum.Enum) else v
        return out

    def check_method(self, method: str) -> None:
        if method not in self.methods:
            raise ParameterError(f"method {method!r} does not apply to {self.kind}; allowed: {', '.join(self.methods)}")

    def pair(self, method: str, tail_bound: float | None = None):
        """The neighbouring pair ``method`` evaluates (``tail_bound``: truncated mass; None = default)."""
        raise NotApplicableError(f"{self.kind} has no neighbouring pair for method {method!r}")

    def bound(self, method: str, options: BoundOptions) -> BoundFunctions:
        """(δ(ε) function, ε(δ) function) of the published bound ``method``."""
        raise NotApplicableError(f"{self.kind} has no published bound {method!r}")

    def direct(self, method: str, eps_l: list[float] | None, delta_l: list[float] | None, compositions: int,
               run_pair: Callable[[str], tuple[list, list[str]]]) -> tuple[list, list[str]] | None:
        """Answer a pair-based ``method`` directly: ``(results, notes)``, or None (the default) to let the
        accountant evaluate :meth:`pair` as usual.  ``run_pair(method)`` is that usual evaluation (its
        results and notes), for a description that adjusts it — e.g. replaces a dominating pair's own lower
        ends by genuine lower bounds on the mechanism (``rr2``'s ``tight``; docs/theory.md#exact-rr2)."""
        return None

    def uses(self) -> Iterator[tuple["Mechanism", int]]:
        """The (mechanism, count) parts of this mechanism; one use of itself for a single mechanism."""
        yield self, 1

    def dominating_pair(self, method: str) -> str | None:
        """The name of the pair ``method`` evaluates when that pair only *dominates* the mechanism's view (is not
        its law on any neighbouring data sets), else None (issue 17).  For a dominating pair the accountant
        reports the pair's numerical bracket as ``bound_lower``/``bound_upper`` and takes the mechanism-level
        lower end from :meth:`genuine_lower`."""
        return None

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        """Mechanism-level lower ends for a method whose pair only dominates: (one lower end per value of
        ``eps`` — on δ — or ``delta`` — on ε —, a note naming the data sets, or a
        :class:`~shufflesim.accounting.model.provenance.LowerEnd` with ``data_sets=None`` and the reason when no data
        set could be evaluated), each the certified δ (ε) of an explicit neighbouring pair of data sets of this
        mechanism used ``compositions`` times; None: none."""
        return None

    def genuine_lower_of(self, parts, method: str, *, eps=None, delta=None, compositions: int = 1):
        """Mechanism-level lower ends of a heterogeneous :class:`Composition` whose first part is this description
        (same contract as :meth:`genuine_lower`); None (the default): no construction for the sequence."""
        return None

    def local_guarantee(self) -> float | None:
        """ε such that the adversary's view is ε-DP whatever the other users hold, or None if there is none.

        By default the description's ``eps0`` (a shuffled ε0-LDP randomiser is ε0-DP by post-processing);
        descriptions whose relation lets the adversary see more than the shuffled reports override it.
        """
        eps0 = getattr(self, "eps0", None)
        return eps0 if isinstance(eps0, float) and math.isfinite(eps0) and eps0 > 0 else None


@dataclass(frozen=True)
class Composition(Mechanism):
    """The adaptive composition of mechanisms: ``parts`` is a sequence of (mechanism, count).

    Pair-based methods compose the parts' pairs by FFT (heterogeneous composition); published bounds apply
    only to a homogeneous composition (one part), composed by the basic or advanced theorem.
    """

    kind: ClassVar[str] = "composition"
    parts: tuple[tuple[Mechanism, int], ...] = ()

    def __post_init__(self) -> None:
        parts = tuple((m, int(c)) for m, c in self.parts)
        if not parts:
            raise ParameterError("a composition needs at least one (mechanism, count) part")
        for m, c in parts:
            if not isinstance(m, Mechanism) or isinstance(m, Composition):
                raise ParameterError(f"composition parts must be single mechanism descriptions; got {m!r}")
            if c < 1:
                raise ParameterError(f"composition counts must be >= 1; got {c}")
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "n", max(m.n for m, _ in parts))

    @property
    def methods(self) -> tuple[str, ...]:  # type: ignore[override]
        common = [m for m in self.parts[0][0].methods if all(m in p.methods for p, _ in self.parts)]
        if len(self.parts) > 1:
            common = [m for m in common if m in PAIR_METHODS]
        return tuple(common)

    def params(self) -> dict[str, Any]:
        return {"parts": [{"mechanism": m.kind, "count": c, **m.params()} for m, c in self.parts]}

    def direct(self, method, eps_l, delta_l, compositions, run_pair):
        """A homogeneous composition is its part used count × compositions times (the part's own answer)."""
        if len(self.parts) == 1:
            mech, count = self.parts[0]
            return mech.direct(method, eps_l, delta_l, compositions * count, run_pair)
        return None

    def uses(self) -> Iterator[tuple[Mechanism, int]]:
        yield from self.parts

    def dominating_pair(self, method: str) -> str | None:
        names = [m.dominating_pair(method) for m, _ in self.parts]
        return None if all(x is None for x in names) else "; ".join(dict.fromkeys(x for x in names if x))

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        if len(self.parts) == 1:  # a homogeneous composition: the part's construction, composed
            m, c = self.parts[0]
            return m.genuine_lower(method, eps=eps, delta=delta, compositions=c * compositions)
        # heterogeneous: the first part's description may know a construction for the whole sequence
        return self.parts[0][0].genuine_lower_of(self.parts, method, eps=eps, delta=delta, compositions=compositions)


#: who takes part in a round (docs/theory.md#sampling)
SAMPLING_KINDS = ("poisson", "fixed")
#: the neighbouring relation under sampling: one user's value replaced, or one user added/removed
SAMPLING_RELATIONS = ("replace-one", "add-remove")


def check_sample_rate(rate) -> float:
    """A Poisson participation rate in (0, 1] (docs/theory.md#sampling); ParameterError otherwise."""
    from shufflesim.core.checks import check_real

    return check_real("sample rate", rate, low=0.0, high=1.0, low_open=True)


def check_sample_relation(relation) -> str:
    """One of :data:`SAMPLING_RELATIONS`; ParameterError otherwise."""
    if relation not in SAMPLING_RELATIONS:
        raise ParameterError(f"sampling relation must be one of {', '.join(SAMPLING_RELATIONS)}; got {relation!r}")
    return relation


@dataclass(frozen=True)
class Sampling:
    """Who takes part in each use of a shuffled mechanism (docs/theory.md#sampling).

    ``kind="poisson"``: every user takes part independently with probability ``rate`` ∈ (0, 1];
    ``kind="fixed"``: a uniformly random ``size`` of the n users (without replacement), 1 ≤ size ≤ n.  The
    analyser sees the participants' reports as a multiset (so their number too); n is public.  ``relation``:
    neighbouring data sets replace one user's value (``replace-one``) or add/remove one user (``add-remove``;
    Poisson only)."""

    kind: str
    rate: float | None = None
    size: int | None = None
    relation: str = "replace-one"

    def __post_init__(self) -> None:
        from shufflesim.core.checks import check_int

        if self.kind not in SAMPLING_KINDS:
            raise ParameterError(f"sampling kind must be one of {', '.join(SAMPLING_KINDS)}; got {self.kind!r}")
        check_sample_relation(self.relation)
        if self.kind == "poisson":
            if self.size is not None or self.rate is None:
                raise ParameterError("Poisson sampling takes a rate in (0, 1] and no size")
            object.__setattr__(self, "rate", check_sample_rate(self.rate))
        else:
            if self.rate is not None or self.size is None:
                raise ParameterError("fixed-size sampling takes a size in [1, n] and no rate")
            object.__setattr__(self, "size", check_int("sample size", self.size, minimum=1))
            if self.relation != "replace-one":
                raise ParameterError("fixed-size sampling is accounted under replace-one only (the number of "
                                     "participants is fixed, so adding a user changes n)")

    @classmethod
    def poisson(cls, rate: float, relation: str = "replace-one") -> "Sampling":
        return cls("poisson", rate=rate, relation=relation)

    @classmethod
    def fixed(cls, size: int) -> "Sampling":
        return cls("fixed", size=size)

    @classmethod
    def from_flags(cls, rate: float | None, size: int | None, relation: str | None) -> "Sampling | None":
        """From ``--sample-rate`` / ``--sample-size`` / ``--sample-relation`` (None: no sampling)."""
        if rate is not None and size is not None:
            raise ParameterError("give at most one of --sample-rate (Poisson, in (0, 1]) or --sample-size "
                                 "(fixed, in [1, n])")
        if rate is None and size is None:
            if relation is not None:
                raise ParameterError("--sample-relation needs --sample-rate or --sample-size")
            return None
        rel = "replace-one" if relation is None else relation
        return cls("poisson", rate=rate, relation=rel) if rate is not None else cls("fixed", size=size, relation=rel)

    def is_identity(self, n: int) -> bool:
        """True when every user always takes part (rate 1, or size n): the unsampled mechanism."""
        return (self.rate == 1.0 if self.kind == "poisson" else self.size == n) and self.relation == "replace-one"

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "relation": self.relation}
        out.update({"rate": self.rate} if self.kind == "poisson" else {"size": self.size})
        return out

    def __str__(self) -> str:
        who = f"Poisson rate {self.rate:g}" if self.kind == "poisson" else f"fixed size {self.size}"
        return f"{who}, {self.relation}"
