"""A shuffled mechanism whose users take part at random: the mechanism description (docs/theory.md#sampling).

``with_sampling(mechanism, Sampling(...))`` wraps ``rr2``, ``krr`` (shuffled reports) or ``clones`` with Poisson
participation (rate q) or fixed-size sampling (m of n); ``account`` then accounts the sampled mechanism:

* Poisson, ``tight`` — upper end: the blanket pair of the augmented randomiser R_q = q R + (1 − q) δ_⊥
  (:func:`~shufflesim.accounting.pairs.sampled.sampled_krr_rows`, replace-one; add/remove:
  :func:`~shufflesim.accounting.pairs.sampled.sampled_krr_addremove_pair`), composed by the PLD engine; for
  ``clones`` the clone decomposition of R_q for any ε0-LDP randomiser (clone probability q e^{−ε0};
  :func:`~shufflesim.accounting.pairs.sampled.sampled_ldp_rows`, docs/theory.md#sampling), with binary RR's data
  sets as the lower end.  Lower end: the exact count of the target's value on the explicit data set "every
  other user holds 1", composed on the same data (:func:`~shufflesim.accounting.pairs.sampled.data_set_pair`);
* fixed size, single use — upper end: Balle, Barthe, Gaboardi 2018's coupling bound for sampling without
  replacement under substitution (seed 002 Lemma 4, :func:`shufflesim.accounting.bounds.transforms.subsample`)
  applied to the unsampled mechanism's certified upper end at m users; lower end: the same explicit data set,
  its exact law under fixed-size sampling.

A sampling that always takes everybody (rate 1 or size n, replace-one) is the unsampled mechanism itself:
:func:`with_sampling` returns it unchanged, so q = 1 reproduces today's answers exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import Mechanism, Relation, Sampling
from shufflesim.errors import NotApplicableError, ParameterError, ShufflesimError

#: the mechanisms that take a sampling
SAMPLED_KINDS = ("rr2", "krr", "clones")
SAMPLED_PAIR = "blanket pair of the augmented randomiser R_q (docs/theory.md#sampling)"
SAMPLED_CLONES = "clone pair of the augmented randomiser R_q, any eps0-LDP randomiser (docs/theory.md#sampling)"


def with_sampling(mechanism: Mechanism, sampling: Sampling | None) -> Mechanism:
    """``mechanism`` with its users sampled by ``sampling`` (None or an identity sampling: unchanged)."""
    if sampling is None:
        return mechanism
    if not isinstance(sampling, Sampling):
        raise ParameterError(f"sampling must be a Sampling description; got {sampling!r}")
    if mechanism.kind not in SAMPLED_KINDS:
        raise ParameterError(f"sampling applies to {', '.join(SAMPLED_KINDS)}; got {mechanism.kind}")
    if sampling.kind == "fixed" and sampling.size > mechanism.n:
        raise ParameterError(f"sample size must be in [1, n] = [1, {mechanism.n}]; got {sampling.size}")
    if sampling.is_identity(mechanism.n):
        return mechanism
    return SampledMechanism(mechanism, sampling)


@dataclass(frozen=True)
class SampledMechanism(Mechanism):
    """``base`` (rr2, krr with the shuffled-reports view, clones) with its users sampled by ``sampling``."""

    #: empty: not a command of its own (``account rr2|krr|clones --sample-rate``); each instance is named
    #: ``<base>-sampled`` (set in __post_init__)
    kind: ClassVar[str] = ""
    summary: ClassVar[str] = "a shuffled mechanism with Poisson or fixed-size participation"
    methods: ClassVar[tuple[str, ...]] = ("tight",)

    base: Mechanism
    sampling: Sampling

    def __post_init__(self) -> None:
        if self.base.kind not in SAMPLED_KINDS:
            raise ParameterError(f"sampling applies to {', '.join(SAMPLED_KINDS)}; got {self.base.kind}")
        if self.base.kind == "krr" and self.base.view is not Relation.SHUFFLED:
            raise ParameterError("sampled krr is accounted for the shuffled reports (no --adversary)")
        object.__setattr__(self, "n", self.base.n)
        object.__setattr__(self, "kind", f"{self.base.kind}-sampled")

    @property
    def k(self) -> int:
        return getattr(self.base, "k", 2)

    @property
    def eps0_upper(self) -> float:
        """The randomiser's ε0, raised past the round-off of a γ → ε0 conversion (upper ends)."""
        from shufflesim.maths.rr import eps0_upper

        return eps0_upper(self.base.eps0) if self.base.kind == "krr" else self.base.eps0

    @property
    def eps0_lower(self) -> float:
        """... lowered by the same margin (lower ends: k-RR at a smaller ε0 is a post-processing)."""
        from shufflesim.maths.rr import EPS0_MARGIN

        return self.base.eps0 * (1.0 - EPS0_MARGIN)

    def params(self) -> dict[str, Any]:
        return {"mechanism": self.base.kind, **self.base.params(), "sampling": self.sampling.params()}

    def local_guarantee(self) -> float | None:
        """ε0 under replace-one (R_q is ε0-LDP, the view a post-processing of its shuffle); None under add/remove:
        the target's presence changes the number of participants (an infinite-loss atom, and losses above ε0
        where few users are absent)."""
        return self.base.local_guarantee() if self.sampling.relation == "replace-one" else None

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD
        from shufflesim.accounting.pairs.sampled import sampled_krr_addremove_pair, sampled_krr_rows, sampled_ldp_rows

        self.check_method(method)
        if self.sampling.kind != "poisson":
            raise NotApplicableError("fixed-size sampling has no dominating pair here (docs/theory.md#sampling): it "
                                     "is accounted single use by the coupling bound; compose with --sample-rate")
        tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
        if self.base.kind == "clones":  # any eps0-LDP randomiser: the provable clone decomposition of R_q
            if self.sampling.relation == "add-remove":
                raise NotApplicableError("clones with add/remove sampling: no pair is derived (docs/theory.md#sampling); "
                                         "use rr2 or krr, or --sample-relation replace-one")
            return sampled_ldp_rows(self.n, self.eps0_upper, self.sampling.rate, tail_bound=tb)
        if self.sampling.relation == "add-remove":
            return sampled_krr_addremove_pair(self.n, self.k, self.eps0_upper, self.sampling.rate, tail_bound=tb)
        return sampled_krr_rows(self.n, self.k, self.eps0_upper, self.sampling.rate, tail_bound=tb)

    def dominating_pair(self, method: str) -> str | None:
        if self.sampling.kind != "poisson":
            return None
        return SAMPLED_CLONES if self.base.kind == "clones" else SAMPLED_PAIR

    def direct(self, method, eps_l, delta_l, compositions, run_pair):
        """Fixed-size sampling: the coupling bound on the unsampled mechanism at m users (single use)."""
        if self.sampling.kind == "poisson":
            return None
        return fixed_size_answer(self, eps_l, delta_l, compositions)

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        """The explicit data set's exact counts, composed on the same data (docs/theory.md#sampling)."""
        if self.sampling.kind != "poisson":
            return None  # fixed size: direct() reports its own lower end
        return data_set_lower(self, eps=eps, delta=delta, compositions=compositions)

    def genuine_lower_of(self, parts, method: str, *, eps=None, delta=None, compositions: int = 1):
        """A heterogeneous sequence of Poisson-sampled parts (same n and relation; q, ε0, k may differ): one pair
        of data sets for the whole sequence, each round's exact law composed (:func:`composed_data_set_lower`)."""
        return composed_data_set_lower(parts, eps=eps, delta=delta, compositions=compositions)


def data_set_lower(mech: SampledMechanism, *, eps=None, delta=None, compositions: int = 1) -> tuple[list, str]:
    """Certified lower ends of ``mech`` used ``compositions`` times: :func:`composed_data_set_lower` of one part."""
    return composed_data_set_lower(((mech, 1),), eps=eps, delta=delta, compositions=compositions)


def composed_data_set_lower(parts, *, eps=None, delta=None, compositions: int = 1):
    """Certified lower ends of the sequence ``parts`` ((sampled mechanism, count), ...) repeated ``compositions``
    times, on one explicit pair of data sets for the whole sequence (the same n users in every round): Poisson —
    the exact law of (c_0, c_1) of each round
    (:func:`~shufflesim.accounting.pairs.sampled.data_set_pair_2d`; the others hold 1 and, when every part has
    k ≥ 3, also 2), fixed size (one part) — the count c_0 (:func:`~shufflesim.accounting.pairs.sampled.data_set_pair`);
    composed by the PLD engine, the largest kept.  The log-probabilities' error η (summed over the rounds) is
    accounted as in :func:`shufflesim.accounting.exact.exact_rr2.composed_lower_delta`:
    δ_true(ε) ≥ e^{−η} δ̂(ε + 2η), ε_true(δ) ≥ ε̂(δ e^{η}) − 2η.  None where the parts do not share n, relation
    and Poisson sampling."""
    from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon
    from shufflesim.accounting.pairs.sampled import data_set_pair, data_set_pair_2d

    mechs = [m for m, _ in parts]
    if not all(isinstance(m, SampledMechanism) for m in mechs):
        return None
    first = mechs[0]
    s = first.sampling
    if len(parts) > 1 and any(m.n != first.n or m.sampling.kind != "poisson" or m.sampling.relation != s.relation
                              for m in mechs):
        return None
    if s.kind == "poisson":
        others = (1,) if any(m.k == 2 for m in mechs) else (1, 2)
        sequences = [[(data_set_pair_2d(m.n, m.k, m.eps0_lower, m.sampling.rate, other=o, relation=s.relation), c)
                      for m, c in parts] for o in others]
    else:
        others = (1,)
        sequences = [[(data_set_pair(first.n, first.k, first.eps0_lower, m=s.size), 1)]]
    values = eps if eps is not None else delta
    vals = [0.0] * len(values)
    best_other: list = [None] * len(values)
    for o, seq in zip(others, sequences):
        pairs = [p for p, c in seq for _ in range(c)]  # one object per part: the engine composes repeats by powering
        pairs_arg = pairs[0] if len(pairs) == 1 else pairs
        eta = sum(p.params["log_err"] * c for p, c in seq) * compositions
        for i, v in enumerate(values):
            if eps is not None:
                (r,) = tight_delta(pairs_arg, [v + 2 * eta], compositions=compositions)
                lo = (r.delta_lower or 0.0) * math.exp(-eta) * (1 - 1e-12)
            else:
                dd = v * math.exp(eta)
                if dd >= 1.0:
                    continue
                (r,) = tight_epsilon(pairs_arg, [dd], compositions=compositions)
                lo = max(0.0, (r.eps_lower or 0.0) - 2 * eta)
            if lo > vals[i]:
                vals[i], best_other[i] = lo, o
    held = sorted({o for o in best_other if o is not None}) or [1]
    target = "0 or 1" if s.relation == "replace-one" else "0 or is absent"
    rounds = sum(c for _, c in parts) * compositions
    what = (f"explicit data sets: the other {first.n - 1} users all hold {' / '.join(map(str, held))}, the target "
            f"holds {target} ({'the counts of reports 0 and 1' if s.kind == 'poisson' else 'the count of reports 0'}"
            f", {s})" + (f", the same data in all {rounds} uses" if rounds > 1 else ""))
    return vals, what


def fixed_size_answer(mech: SampledMechanism, eps_l, delta_l, compositions: int):
    """Fixed-size sampling of m of n, single use: upper end = seed 002 Lemma 4 (Balle, Barthe, Gaboardi 2018,
    substitution relation) on the unsampled mechanism's certified upper end at m users; lower end = the explicit
    data set's exact law (:func:`data_set_lower`)."""
    from dataclasses import replace as dc_replace

    from shufflesim.accounting.account import account
    from shufflesim.accounting.bounds.transforms import subsample, subsample_inverse
    from shufflesim.accounting.model.results import DeltaBound, EpsBound

    if compositions != 1:
        raise NotApplicableError("fixed-size sampling is accounted for a single use (no dominating pair for its "
                                 "composition here; docs/theory.md#sampling); compose with --sample-rate")
    m, n = mech.sampling.size, mech.n
    eta = m / n
    inner = dc_replace(mech.base, n=m)
    out = []
    if eps_l is not None:
        lows, _ = data_set_lower(mech, eps=eps_l)
        inner_eps = [subsample_inverse(e, 0.0, rate=eta)[0] for e in eps_l]  # log(1 + (e^eps - 1)/eta)
        rep = account(inner, eps=inner_eps)
        for e, r, lo in zip(eps_l, rep.results, lows):
            up = min(1.0, eta * r.delta_upper * (1 + 1e-12))
            out.append(DeltaBound(eps=e, delta_lower=min(lo, up), delta_upper=up, method="tight",
                                  notes=("fixed-size sampling: Balle-Barthe-Gaboardi 2018 coupling (seed 002 Lemma 4) "
                                         f"on the unsampled mechanism at m = {m} users",)))
    else:
        lows, _ = data_set_lower(mech, delta=delta_l)
        # δ ≥ m/n: the unsampled mechanism is (0, 1)-DP (any pair of laws), so the coupling gives (0, m/n) ⊆ (0, δ)
        vacuous = [Fraction(d) >= Fraction(m, n) for d in delta_l]
        asked = [inner_delta(d, m, n) for d, v in zip(delta_l, vacuous) if not v]
        try:
            inner_eps = iter(account(inner, delta=asked).results if asked else ())
        except ShufflesimError as err:
            raise type(err)(f"fixed-size sampling at delta = {', '.join(map(repr, delta_l))} asks the unsampled "
                            f"mechanism at m = {m} users for delta * n/m = {', '.join(map(repr, asked))}: "
                            f"{err}") from None
        for d, v, lo in zip(delta_l, vacuous, lows):
            r_eps = 0.0 if v else next(inner_eps).eps_upper
            up = subsample(r_eps, 0.0, rate=eta)[0] * (1 + 1e-12) if math.isfinite(r_eps) else math.inf
            out.append(EpsBound(delta=d, eps_lower=min(lo, up), eps_upper=up, method="tight",
                                notes=("fixed-size sampling: Balle-Barthe-Gaboardi 2018 coupling (seed 002 Lemma 4) "
                                       f"on the unsampled mechanism at m = {m} users",)))
    return out, ["sampling: " + str(mech.sampling) + f" of n = {n}"]


def inner_delta(delta: float, m: int, n: int) -> float:
    """The δ′ < 1 asked of the unsampled mechanism at m users so that the coupling's (m/n) δ′ ≤ ``delta``
    (docs/theory.md#sampling, fixed size): δ n/m rounded down (exactly, on the floats' rational values)."""
    exact = Fraction(delta) * n / m
    d = float(exact)
    return math.nextafter(d, 0.0) if Fraction(d) > exact else d


def sampled_pair(R, n: int, q: float, relation: str = "replace-one", *, tail_bound: float | None = None):
    """A dominating pair of the shuffled finite randomiser ``R`` (a k x m matrix) among ``n`` users with Poisson
    participation at rate ``q`` (docs/theory.md#sampling), for the PLD engine (compose with
    :func:`~shufflesim.accounting.engines.tight.tight_epsilon` or put it in a
    :class:`~shufflesim.accounting.model.mechanism.Composition`): k-RR matrices get their blanket pair
    (replace-one: rows; add-remove: atoms), any other matrix the clone pair at its local ε0 (replace-one only).
    A matrix is k-RR when it is square with all diagonal entries equal and all others equal (exactly, as given: a
    near-k-RR matrix gets the clone pair); ε0 is :func:`~shufflesim.pipeline.matrix.matrix_eps0` raised by
    :func:`~shufflesim.maths.rr.eps0_upper` (an upper end, as every pair here needs).
    The pair only dominates: a lower end needs explicit data sets (:func:`data_set_lower` for k-RR)."""
    import numpy as np

    from shufflesim.accounting.model.mechanism import check_sample_rate, check_sample_relation
    from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD
    from shufflesim.accounting.pairs.sampled import sampled_krr_addremove_pair, sampled_krr_rows, sampled_ldp_rows
    from shufflesim.maths.rr import eps0_upper
    from shufflesim.pipeline.matrix import check_matrix, matrix_eps0

    checked = check_matrix(R, name="R")  # refuses a matrix that is not eps0-LDP for a finite eps0
    try:  # the entries as given decide the k-RR shape (dividing by rounded row sums may break the equalities)
        raw = np.asarray(R, dtype=float)
    except (TypeError, ValueError):  # entries given as text ("1/3"): the checked matrix
        raw = checked
    is_krr = raw.shape == checked.shape and is_krr_matrix(raw)
    # a k-RR shape has equal row sums (the same entries), so its ratios are the given ones exactly
    R = raw if is_krr else checked
    q, relation = check_sample_rate(q), check_sample_relation(relation)
    tb = DEFAULT_TAIL_BOUND_MD if tail_bound is None else tail_bound
    eps0 = matrix_eps0(R)
    if not eps0 > 0:
        raise NotApplicableError(f"R has local epsilon {eps0}: every input has the same report law (no sampled pair "
                                 "needed: the view does not depend on the data)")
    eps0 = eps0_upper(eps0)
    k = R.shape[0]
    if relation == "add-remove":
        if not is_krr:
            raise NotApplicableError("add/remove sampling has a pair for k-RR matrices only (docs/theory.md#sampling)")
        return sampled_krr_addremove_pair(n, k, eps0, q, tail_bound=tb)
    if is_krr:
        return sampled_krr_rows(n, k, eps0, q, tail_bound=tb)
    return sampled_ldp_rows(n, eps0, q, tail_bound=tb)


def is_krr_matrix(R) -> bool:
    """True when the square matrix ``R`` is k-RR exactly (docs/theory.md#sampling): every diagonal entry equal and
    above every other entry, those all equal; no tolerance (a near-k-RR matrix is another randomiser)."""
    import numpy as np

    R = np.asarray(R, dtype=float)
    if R.ndim != 2 or R.shape[0] != R.shape[1]:
        return False
    k = R.shape[0]
    off = R[~np.eye(k, dtype=bool)]
    return bool(np.all(np.diag(R) == R[0, 0]) and np.all(off == off[0]) and R[0, 0] > off[0])
