"""The blanket (optimal) decomposition of a finite randomiser, and the "sum form" of a shuffled pair.

Su, Cheng and Wang (arXiv:2504.07414, IEEE S&P 2026) show that every decomposition-based analysis of
shuffling (standard and stronger clones, the privacy blanket) is one "general clone"; the optimal one is the
*blanket*: ω(y) = min_x R(x, y), γ = Σ_y ω(y) (Balle et al. 2019).  docs/theory.md#pairs-blanket derives the
pair this module evaluates and why it dominates the shuffled view for every data set of the other users.

Both the blanket pair (upper end) and the exact δ of the explicit data set "the other n − 1 users all hold x*"
(lower end) reduce to one shape, the :class:`SumForm`:

    δ(ε) = Σ_j (off_p[j] − e^ε off_q[j])_+  +  (1/n) E[(Σ_{i=1}^{n} (u[Y_i] − e^ε v[Y_i]))_+],

with Y_1, ..., Y_n i.i.d. on atoms a with P(Y = a) = mass[a].  The second term is a one-dimensional n-fold sum
of an i.i.d. variable with few atoms: exact enumeration for small n (:func:`sum_form_delta_exact`), a
certified FFT for large n.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shufflesim.core.checks import check_int
from shufflesim.errors import ParameterError

REFERENCE_BLANKET = (
    "Su, Cheng, Wang 2025 (arXiv:2504.07414, the optimal general clone = the privacy blanket of Balle et al. "
    "2019); docs/theory.md#pairs-blanket"
)

#: the two kinds of sum form: ``"blanket"`` dominates every data set (upper end); ``"data set"`` is the exact
#: δ of one explicit neighbouring pair of data sets (lower end)
KINDS = ("blanket", "data set")


@dataclass(frozen=True)
class SumForm:
    """δ(ε) of one ordered neighbouring pair, in sum form (module docstring).

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

    def values(self, eps: float) -> np.ndarray:
        """The atoms' values u − e^ε v at ε."""
        return self.u - math.exp(eps) * self.v

    def off_delta(self, eps: float) -> float:
        """The exact term of the outputs only the target produces."""
        return float(np.maximum(self.off_p - math.exp(eps) * self.off_q, 0.0).sum())

    def describe(self) -> str:
        if self.kind == "blanket":
            return f"blanket pair (target {self.x} vs {self.x2})"
        return f"explicit data sets (the other {self.n - 1} users hold {self.other}; the target holds {self.x} or {self.x2})"


def blanket_decomposition(R: np.ndarray) -> tuple[np.ndarray, float]:
    """ω(y) = min_x R(x, y) and γ = Σ_y ω(y) (Balle et al. 2019 §3; Su, Cheng, Wang 2025)."""
    R = np.asarray(R, dtype=float)
    omega = R.min(axis=0)
    return omega, float(omega.sum())


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


def blanket_forms(R: np.ndarray, n: int) -> list[SumForm]:
    """The blanket pair of every ordered pair of distinct inputs (x, x2): the atoms are the blanket's outputs
    (mass ω(y), u = R(x, y)/ω(y), v = R(x2, y)/ω(y)) and a null atom (mass 1 − γ, u = v = 0)."""
    n = check_int("n", n, minimum=1)
    R = np.asarray(R, dtype=float)
    omega, gamma = blanket_decomposition(R)
    k = R.shape[0]
    return [_form(n, R[x], R[x2], omega, max(0.0, 1.0 - gamma), "blanket", x, x2, None)
            for x, x2 in itertools.permutations(range(k), 2)]


def dataset_forms(R: np.ndarray, n: int, others: "list[int] | None" = None) -> list[SumForm]:
    """The exact δ of the explicit data sets "the other n − 1 users hold c, the target x or x2", for every
    ordered pair (x, x2) and every c in ``others`` (default: every input), as sum forms."""
    n = check_int("n", n, minimum=1)
    R = np.asarray(R, dtype=float)
    k = R.shape[0]
    cs = range(k) if others is None else others
    return [_form(n, R[x], R[x2], R[c], 0.0, "data set", x, x2, int(c))
            for c in cs for x, x2 in itertools.permutations(range(k), 2)]


def _compositions(n: int, parts: int):
    """Every vector of ``parts`` non-negative integers summing to n (stars and bars), as rows of an array."""
    rows = []
    for bars in itertools.combinations(range(n + parts - 1), parts - 1):
        prev, row = -1, []
        for b in bars:
            row.append(b - prev - 1)
            prev = b
        row.append(n + parts - 2 - prev)
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(-1, parts)


def sum_form_delta_exact(form: SumForm, eps: float) -> float:
    """δ(ε) of ``form`` by enumerating every count vector of the n draws (a test oracle and the small-n path:
    C(n + A − 1, A − 1) vectors for A atoms).  Floating point, no error bound."""
    A = form.mass.size
    H = _compositions(form.n, A)
    with np.errstate(divide="ignore"):
        logm = np.log(form.mass)
    lg = np.array([math.lgamma(i + 1) for i in range(form.n + 1)])
    logp = lg[form.n] - lg[H].sum(axis=1) + np.where(H > 0, H * logm, 0.0).sum(axis=1)
    s = H @ form.values(eps)
    return form.off_delta(eps) + float((np.exp(logp) * np.maximum(s, 0.0)).sum()) / form.n
