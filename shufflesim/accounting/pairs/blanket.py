"""The blanket (optimal) decomposition of a finite randomiser, and the "sum form" of a shuffled pair.

Su, Cheng and Wang (arXiv:2504.07414, IEEE S&P 2026) show that every decomposition-based analysis of
shuffling (standard and stronger clones, the privacy blanket) is one "general clone"; the optimal one is the
*blanket*: ω(y) = min_x R(x, y), γ = Σ_y ω(y) (Balle et al. 2019).  docs/theory.md#pairs-blanket derives the
pair this module evaluates and why it dominates the shuffled view for every data set of the other users
(replacement relation, the analyser sees the multiset of the n reports).

Both the blanket pair (upper end) and the exact δ of the explicit data set "the other n − 1 users all hold c"
(lower end) reduce to one shape, the :class:`SumForm`:

    δ(ε) = Σ_j (off_p[j] − e^ε off_q[j])_+  +  (1/n) E[(Σ_{i=1}^{n} (u[Y_i] − e^ε v[Y_i]))_+],

with Y_1, ..., Y_n i.i.d. on atoms a with P(Y = a) = mass[a] (docs/theory.md#pairs-blanket, "the sum form").
The second term is a one-dimensional n-fold sum of an i.i.d. variable with few atoms: exact enumeration of
the count vectors for small n (:func:`sum_form_delta_exact`, within :data:`MAX_COUNT_VECTORS`); the certified
FFT for large n lives in :mod:`shufflesim.accounting.engines.blanket_fft`.

Directions.  A form is one *ordered* pair (target x under P, x2 under Q) and gives δ_{P‖Q}.  The lists of
:func:`blanket_forms` and :func:`dataset_forms` hold both orders of every pair, and δ_{Q‖P} of (x, x2) is
δ_{P‖Q} of (x2, x), so the maximum over a list (:func:`forms_delta_exact`) is the two-sided δ.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shufflesim.core.checks import check_int
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.accounting.numerics.logspace import EXP_OVERFLOW
from shufflesim.accounting.pairs.common import ragged

REFERENCE_BLANKET = (
    "Su, Cheng, Wang 2025 (arXiv:2504.07414, the optimal general clone = the privacy blanket of Balle et al. "
    "2019); docs/theory.md#pairs-blanket"
)

#: the two kinds of sum form: ``"blanket"`` dominates every data set (upper end); ``"data set"`` is the exact
#: δ of one explicit neighbouring pair of data sets (lower end)
KINDS = ("blanket", "data set")

#: largest number of count vectors C(n + A − 1, A − 1) that :func:`sum_form_delta_exact` enumerates (A atoms):
#: 2·10⁶ vectors are ~1 s and ~100 MB per ε at A = 4; beyond, the FFT engine is the path
MAX_COUNT_VECTORS = 2_000_000

#: count vectors per block of the enumeration (bounds the temporaries to ~ BLOCK × (A + #ε) doubles)
BLOCK = 1 << 16

#: tolerance on a randomiser row's sum (it is a law); rows are not renormalised here
ROW_SUM_TOL = 1e-9

#: largest atom ratio R(x, y)/ω(y) a sum form keeps (u, v <= RATIO_MAX): n·RATIO_MAX stays far below the
#: -1e300 that stands for u − e^ε v = −inf in the sums, and no ratio overflows to inf (R(x, y) = 0.5 over a
#: subnormal ω(y) = 1e-309 did, and its atom's term was lost).  Columns beyond it are treated by
#: :func:`safe_shared` (blanket) and :func:`merge_overflow_columns` (one data set)
RATIO_MAX = 1e150


@dataclass(frozen=True)
class SumForm:
    """δ_{P‖Q}(ε) of one ordered neighbouring pair, in sum form (module docstring; docs/theory.md#pairs-blanket).

    ``mass``, ``u``, ``v``: the atoms of Y (mass sums to 1; u, v ≥ 0).  ``off_p``, ``off_q``: outputs that
    only the target can produce (their terms are exact and need no sum).  ``x``, ``x2``: the target's inputs
    (P: x, Q: x2); ``other``: the input every other user holds (kind ``"data set"``), else None."""

    n: int
    mass: np.ndarray
    u: np.ndarray
    v: np.ndarray
    off_p: np.ndarray
    off_q: np.ndarray
    kind: str
    x: int
    x2: int
    other: int | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ParameterError(f"kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        for name in ("u", "v"):
            a = getattr(self, name)
            if a.size and not (np.all(np.isfinite(a)) and a.min() >= 0.0 and a.max() <= RATIO_MAX):
                raise ParameterError(f"a sum form's {name} must be finite, >= 0 and <= {RATIO_MAX:g} (the atoms' "
                                     "ratios; larger ones belong to the off-support term)")

    def values(self, eps: float) -> np.ndarray:
        """The atoms' values u − e^ε v at ε (an atom with v = 0 keeps u, also at e^ε = inf)."""
        return _values(self.u, self.v, _exp(np.array([eps], dtype=float)))[:, 0]

    def off_delta(self, eps: float) -> float:
        """The exact term of the outputs only the target produces."""
        return float(_off(self.off_p, self.off_q, _exp(np.array([eps], dtype=float)))[0])

    @property
    def count_vectors(self) -> float:
        """C(n + A − 1, A − 1) for A atoms: the number of terms :func:`sum_form_delta_exact` enumerates
        (+inf beyond 1e300)."""
        return count_vectors(self.n, self.mass.size)

    def describe(self) -> str:
        if self.kind == "blanket":
            return f"blanket pair (target {self.x} vs {self.x2})"
        return f"explicit data sets (the other {self.n - 1} users hold {self.other}; the target holds {self.x} or {self.x2})"


def check_randomiser(R) -> np.ndarray:
    """R as a float array (inputs × outputs, ≥ 2 inputs, ≥ 1 output, finite entries ≥ 0, every row summing to 1
    within :data:`ROW_SUM_TOL`); ParameterError otherwise.  LDP is *not* required: outputs only some inputs
    produce enter the pair's off-support term (docs/theory.md#pairs-blanket)."""
    try:
        R = np.array(R, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError("the randomiser must be a matrix (rows: inputs, columns: output probabilities)") from None
    if R.ndim != 2 or R.shape[0] < 2 or R.shape[1] < 1:
        raise ParameterError(f"the randomiser must be a matrix with at least 2 rows (inputs) and 1 column; got shape "
                             f"{R.shape}")
    if not np.all(np.isfinite(R)) or R.min() < 0.0:
        raise ParameterError("the randomiser's entries must be finite probabilities >= 0")
    s = R.sum(axis=1)
    bad = np.flatnonzero(np.abs(s - 1.0) > ROW_SUM_TOL)
    if bad.size:
        raise ParameterError(f"every row of the randomiser must sum to 1; row {int(bad[0])} sums to {s[bad[0]]:.12g}")
    return R


def blanket_decomposition(R: np.ndarray) -> tuple[np.ndarray, float]:
    """ω(y) = min_x R(x, y) and γ = Σ_y ω(y) (Balle et al. 2019 §3; Su, Cheng, Wang 2025;
    docs/theory.md#pairs-blanket)."""
    R = np.asarray(R, dtype=float)
    omega = R.min(axis=0)
    return omega, float(omega.sum())


def safe_shared(R: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """The shared part ω′ ≤ ω with ω′(y) = 0 wherever some R(x, y) > :data:`RATIO_MAX` · ω(y) (else ω′ = ω).  Any
    shared part ω′ ≤ the column minimum gives a valid pair (docs/theory.md#pairs-blanket, "why the blanket is the
    best decomposition": an upper end on every data set), and those outputs enter the exact off-support term, so
    no atom ratio overflows."""
    bad = (omega > 0) & np.any(R > RATIO_MAX * omega[None, :], axis=0)
    return np.where(bad, 0.0, omega)


def merge_overflow_columns(R: np.ndarray, c: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """R with every output y whose ratio R(x, y)/R(c, y) exceeds :data:`RATIO_MAX` (R(c, y) > 0) merged into the
    output c produces most often, and the merged outputs.  Merging outputs is a post-processing of every report,
    hence of the shuffled view, so the merged data set's δ is at most the data set's own (data processing): still
    a lower end, with every ratio <= 1/max_y R(c, y) <= the number of outputs."""
    bad = (R[c] > 0) & np.any(R > RATIO_MAX * R[c][None, :], axis=0)
    if not bad.any():
        return R, ()
    to = int(np.argmax(R[c]))
    M = R.copy()
    M[:, to] += R[:, bad].sum(axis=1)
    M[:, bad] = 0.0
    return M, tuple(int(y) for y in np.flatnonzero(bad))


def _form(n: int, R1: np.ndarray, R2: np.ndarray, nu: np.ndarray, null_mass: float, kind: str, x: int, x2: int,
          other: int | None) -> SumForm:
    on = nu > 0
    mass = nu[on]
    u, v = R1[on] / mass, R2[on] / mass
    if null_mass > 0:
        mass = np.append(mass, null_mass)
        u, v = np.append(u, 0.0), np.append(v, 0.0)
    off = ~on & ((R1 > 0) | (R2 > 0))
    return SumForm(n, mass, u, v, R1[off].copy(), R2[off].copy(), kind, x, x2, other)


def blanket_forms(R: np.ndarray, n: int, *, shared=None) -> list[SumForm]:
    """The blanket pair of every ordered pair of distinct inputs (x, x2) (docs/theory.md#pairs-blanket): the
    atoms are the blanket's outputs (mass ω(y), u = R(x, y)/ω(y), v = R(x2, y)/ω(y)) and a null atom (mass
    1 − γ, u = v = 0); outputs with ω(y) = 0 form the off-support term.  The maximum over the list of the
    forms' δ is the blanket pair's two-sided δ, an upper end for the shuffled view of R on every data set.

    ``shared``: another shared part ω′ common to every input (0 ≤ ω′ ≤ the column minimum; default the column
    minimum itself).  Its pair is also an upper end, never below the blanket's (docs/theory.md#pairs-blanket,
    "why the blanket is the best decomposition"); offered to compare decompositions, not for answers."""
    n = check_int("n", n, minimum=1)
    R = check_randomiser(R)
    omega, gamma = blanket_decomposition(R)
    if shared is not None:
        try:
            w = np.array(shared, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ParameterError("shared must be a vector of one probability mass per output") from None
        if w.size != omega.size or not np.all(np.isfinite(w)) or w.min() < 0.0 or np.any(w > omega):
            raise ParameterError(f"shared must have {omega.size} entries in [0, column minimum] (a part of every "
                                 "row); got " + np.array2string(w, precision=6))
        omega = w
    omega = safe_shared(R, omega)  # no atom ratio beyond RATIO_MAX (a smaller shared part: still an upper end)
    gamma = float(omega.sum())
    k = R.shape[0]
    return [_form(n, R[x], R[x2], omega, max(0.0, 1.0 - gamma), "blanket", x, x2, None)
            for x, x2 in itertools.permutations(range(k), 2)]


def dataset_forms(R: np.ndarray, n: int, others: "list[int] | None" = None) -> list[SumForm]:
    """The exact δ of the explicit data sets "the other n − 1 users hold c, the target x or x2", for every
    ordered pair (x, x2) and every c in ``others`` (default: every input), as sum forms
    (docs/theory.md#pairs-blanket, "one data set exactly"): a lower end on the shuffled view's δ."""
    n = check_int("n", n, minimum=1)
    R = check_randomiser(R)
    k = R.shape[0]
    cs = range(k) if others is None else [check_int("others", c, minimum=0, maximum=k - 1) for c in others]
    forms = []
    for c in cs:
        M, merged = merge_overflow_columns(R, int(c))  # no atom ratio beyond RATIO_MAX (a post-processing)
        for x, x2 in itertools.permutations(range(k), 2):
            f = _form(n, M[x], M[x2], M[c], 0.0, "data set", x, x2, int(c))
            if merged:
                f.params["merged outputs"] = merged
            forms.append(f)
    return forms


def count_vectors(n: int, atoms: int) -> float:
    """C(n + atoms − 1, atoms − 1): the count vectors of n draws over ``atoms`` atoms, +inf beyond 1e300
    (computed in log space first, as :func:`shufflesim.mechanisms.matrix.enumeration_cost`)."""
    if atoms <= 1:
        return 1.0
    log_c = math.lgamma(n + atoms) - math.lgamma(atoms) - math.lgamma(n + 1)
    return math.inf if log_c > 690.0 else float(math.comb(n + atoms - 1, atoms - 1))


def compositions(n: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to n, as the rows of an int64 array (built part
    by part with :func:`~shufflesim.accounting.pairs.common.ragged`, no Python loop over the vectors)."""
    rows = np.zeros((1, 0), dtype=np.int64)
    left = np.array([n], dtype=np.int64)
    for _ in range(parts - 1):
        idx, col = ragged(np.zeros_like(left), left)
        rows = np.concatenate([rows[idx], col[:, None]], axis=1)
        left = left[idx] - col
    return np.concatenate([rows, left[:, None]], axis=1)


def _exp(eps: np.ndarray) -> np.ndarray:
    if np.isnan(eps).any():
        raise ParameterError("eps must be a real number or +inf; got nan")
    with np.errstate(over="ignore"):
        return np.where(eps < EXP_OVERFLOW, np.exp(np.minimum(eps, EXP_OVERFLOW)), np.inf)


def _values(u: np.ndarray, v: np.ndarray, ee: np.ndarray) -> np.ndarray:
    """(atoms × ε) matrix u − e^ε v, with u kept where v = 0 (no inf · 0)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(v[:, None] > 0, u[:, None] - ee[None, :] * v[:, None], u[:, None])


def _off(off_p: np.ndarray, off_q: np.ndarray, ee: np.ndarray) -> np.ndarray:
    return np.maximum(_values(off_p, off_q, ee), 0.0).sum(axis=0)


def sum_form_delta_exact(form: SumForm, eps, *, budget: float = MAX_COUNT_VECTORS):
    """δ_{P‖Q}(ε) of ``form`` by enumerating every count vector of the n draws (docs/theory.md#pairs-blanket,
    "the sum form"): the test oracle and the small-n path.  ``eps``: a number (returns a float) or a 1-D array
    (returns an array, one count-vector pass for all of them).  Refuses (NotApplicableError) more than
    ``budget`` count vectors (default :data:`MAX_COUNT_VECTORS`).  Floating point, no certified error bound:
    each probability carries the rounding of lgamma/exp (relative ~1e-13 at n ≤ 10³) and each sum Σ Z_i an
    absolute rounding of ~1e-16·n·max|Z| (visible as ~1e-16 where δ is exactly 0, e.g. at ε = ε0)."""
    scalar = np.ndim(eps) == 0
    e = np.atleast_1d(np.asarray(eps, dtype=float))
    if e.ndim != 1:
        raise ParameterError(f"eps must be a number or a 1-D array of numbers; got shape {np.shape(eps)}")
    ee = _exp(e)
    A = form.mass.size
    cost = count_vectors(form.n, A)
    if cost > budget:
        raise NotApplicableError(f"the exact sum form needs C(n+A-1, A-1) = {cost:.3g} count vectors (n={form.n}, "
                                 f"A={A} atoms), more than the budget {budget:.3g}; use the FFT engine "
                                 f"(shufflesim.accounting.engines.blanket_fft) or a smaller n")
    out = _off(form.off_p, form.off_q, ee)
    if form.n >= 1 and A:
        V = _values(form.u, form.v, ee)  # atoms × ε
        V = np.where(np.isfinite(V), V, -1e300)  # u − inf·v (e^ε = inf, v > 0)
        with np.errstate(divide="ignore"):
            logm = np.log(form.mass)
        lg = np.array([math.lgamma(i + 1) for i in range(form.n + 1)])
        H = compositions(form.n, A)
        acc = np.zeros(e.size)
        for s in range(0, H.shape[0], BLOCK):
            h = H[s:s + BLOCK]
            logp = lg[form.n] - lg[h].sum(axis=1) + np.where(h > 0, h * logm, 0.0).sum(axis=1)
            with np.errstate(over="ignore"):  # -inf values were made -1e300: a sum using one is <= 0 (or -inf)
                S = h.astype(float) @ V
            acc += np.exp(logp) @ np.maximum(S, 0.0)
        out = out + acc / form.n
    return float(out[0]) if scalar else out


def forms_delta_exact(forms: list[SumForm], eps, *, budget: float = MAX_COUNT_VECTORS):
    """The largest δ(ε) over ``forms`` (both directions when the list holds both orders of each pair, as
    :func:`blanket_forms` and :func:`dataset_forms` do), by :func:`sum_form_delta_exact`; a float for a
    number ``eps``, an array for an array."""
    if not forms:
        raise ParameterError("forms must be a non-empty list of SumForm")
    vals = np.array([np.atleast_1d(sum_form_delta_exact(f, eps, budget=budget)) for f in forms])
    best = vals.max(axis=0)
    return float(best[0]) if np.ndim(eps) == 0 else best
