"""The exact worst case of a finite randomiser's shuffled view, by enumerating every data set
(docs/theory.md#exact-finite).

The shuffled view of n users running the randomiser R (k inputs × m outputs) is, up to a bijection, the
histogram of the n reports.  A neighbouring pair of data sets is (the others' inputs, the target's x, the
target's x′); the others enter only through their count vector c (k inputs, Σ c = n − 1).  The others'
histogram law O_c is the convolution of the multinomials Mult(c_x, R[x]); the target adds one report:

    P_x(h) = Σ_y R(x, y) O_c(h − e_y).

So every neighbouring pair is covered by (every count vector c) × (every ordered pair x ≠ x′), and the
mechanism's δ(ε) is the largest δ of these pairs (both directions: ordered pairs), its ε(δ) the largest ε.

Speed.  O_c is computed once per count vector, by a dynamic programme over the lattice of count vectors
(O_c = R[x] ∗ O_{c − e_x} for the first x with c_x > 0: one shift-and-add per output), vectorised over all
count vectors of one size and all histograms (numpy; Python loops only over the levels, inputs and outputs).
It is reused by the k targets, so the cost is about #count vectors × #histograms × (k·m + k(k − 1)) steps
(:func:`enumeration_steps`), not × n as the per-data-set oracle
(:func:`shufflesim.accounting.exact.shuffle_oracle.histogram_law`).

Certification (floating point).  Every probability is a sum of products of n matrix entries, all
non-negative; along every path a cell meets at most m + 2 roundings per user (two for the matrix entry's
own computation or representation, one per product and addition), so each computed cell is P̂ = P(1 + θ) with
|θ| ≤ γ_N = N u/(1 − N u), N = n(m + 2) + 4 (the extra 4: e^ε and the product e^ε Q̂).  For the set E where
the computed terms are positive, and the true optimal set E*, the hockey-stick divergence then differs from
Σ_h (P̂_h − e^ε Q̂_h)_+ by at most 2γ_N(1 + γ_N)/(1 − γ_N) · P̂(E) ≤ :func:`allowance` (both ways); the
summation of the non-negative terms adds a relative γ_H (H histograms).  The reported ends are lowered and
raised by these amounts: they bracket the mechanism's value, a few 1e-15 apart, never a bare float.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.accounting.numerics.logspace import U, exp_or_inf
from shufflesim.errors import NotApplicableError

#: the stated cost budget of ``exact`` by enumeration (steps of :func:`enumeration_steps`, at most ~20 s)
EXACT_ENUMERATION_BUDGET = 2e9
#: seconds per step, measured 1e-9 to 1.6e-8 (numpy, one core, 3x3 to 10x10 matrices; docs/theory.md#exact-finite)
SECONDS_PER_STEP = 1e-8
#: bytes of the target laws held at once (the count vectors are processed in chunks of this size)
CHUNK_BYTES = 64 << 20


def log_comb(a: int, b: int) -> float:
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def lattice_size(total: int, parts: int) -> float:
    """C(total + parts − 1, parts − 1): count vectors of ``parts`` non-negative integers summing to ``total``
    (float, +inf beyond 1e300)."""
    lc = log_comb(total + parts - 1, parts - 1)
    return math.inf if lc > 690.0 else float(math.comb(total + parts - 1, parts - 1))


def enumeration_steps(n: int, k: int, m: int, values: int = 1, inverse: bool = False) -> float:
    """Steps of :func:`worst_case` for ``values`` questions: the others' laws (Σ_t #count vectors(t + 1) ×
    #histograms(t) × m), the targets' laws (#count vectors(n − 1) × #histograms(n) × k m) and the ordered pairs'
    δ (× k(k − 1) per value; ε(δ): three passes, the screening, the inversions and the check of the upper end)."""
    from scipy.special import gammaln

    M, H = lattice_size(n - 1, k), lattice_size(n, m)
    if math.isinf(M * H):
        return math.inf
    per_pair = 3.0 * values if inverse else values  # ε(δ): the screening pass, the inversions, the check
    final = M * H * (k * m * (3 if inverse else 1) + k * (k - 1) * per_pair)
    if M * H > 1e12:  # far beyond any budget: the others' sum by its integral (~ n/(k + m − 1) of the last level)
        return final + n / (k + m - 1) * M * H * m
    t = np.arange(max(n - 1, 0), dtype=float)  # Σ_t C(t + k, k − 1) C(t + m − 1, m − 1) m, in log space (no loop)
    log_terms = (gammaln(t + k + 1) - gammaln(k) - gammaln(t + 2) + gammaln(t + m) - gammaln(m) - gammaln(t + 1))
    with np.errstate(over="ignore"):
        others = float(np.exp(np.minimum(log_terms, 700.0)).sum()) * m if t.size else 0.0
    return others + final


def enumeration_bytes(n: int, k: int, m: int) -> float:
    """Peak memory of :func:`worst_case`: two levels of the others' laws and one chunk of target laws."""
    M1, H1 = lattice_size(n - 1, k), lattice_size(n - 1, m)
    M2, H2 = lattice_size(max(n - 2, 0), k), lattice_size(max(n - 2, 0), m)
    return 8.0 * (M1 * H1 * 2 + M2 * H2) + 4 * CHUNK_BYTES + (32 << 20)


def largest_n(k: int, m: int, budget: float = EXACT_ENUMERATION_BUDGET, values: int = 1,
              inverse: bool = False) -> int:
    """The largest n whose :func:`enumeration_steps` stays within ``budget`` (0 when even n = 1 does not)."""
    n = 0
    while enumeration_steps(n + 1, k, m, values, inverse) <= budget:
        n += 1
    return n


def check_enumeration(n: int, k: int, m: int, values: int = 1, inverse: bool = False,
                      budget: float = EXACT_ENUMERATION_BUDGET) -> float:
    """The steps of the enumeration, or NotApplicableError (one line: the cost, the budget, the largest n within
    it) beyond ``budget``; also refused where the histogram keys would not fit 63 bits."""
    steps = enumeration_steps(n, k, m, values, inverse)
    if steps > budget or m * math.log2(n + 1) > 62 or k * math.log2(n + 1) > 62:
        big = largest_n(k, m, budget, values, inverse)
        raise NotApplicableError(
            f"exact enumeration of every data set ({k} inputs x {m} outputs, n={n}) needs about {steps:.3g} steps "
            f"(~{steps * SECONDS_PER_STEP:.3g} s), beyond its budget of {budget:.3g} steps: the largest n within it is "
            f"{big}; --method best brackets larger n")
    return steps


def gamma_n(count: float) -> float:
    """γ_N = N u/(1 − N u) (Higham's bound on N roundings of non-negative terms)."""
    return count * U / (1.0 - count * U)


def allowance(n: int, m: int, compositions: int = 1) -> float:
    """Absolute allowance on any pair's δ(ε) from the laws' rounding (module docstring): 2γ_N(1 + γ_N)/(1 − γ_N)
    with N = n(m + 2) + 4, raised by 1 % for the float evaluation of this very formula.  ``compositions`` > 1: the
    pair handed to the PLD accountant as log-probabilities (fl(log p) is within u·745 of log p, so each cell within
    a relative γ_{N + 746}), composed: its cells are products of that many cells, N_c = c (N + 746)."""
    count = n * (m + 2) + 4 if compositions == 1 else compositions * (n * (m + 2) + 750)
    g = gamma_n(count)
    return 2.0 * g * (1.0 + g) / (1.0 - g) * 1.01


# --- lattices of count vectors, as sorted int64 keys ---------------------------------------------------------------

def _levels(top: int, parts: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Sorted keys Σ_j h_j r^j (r = top + 1) of every count vector of total t = 0..top, and the powers r^j."""
    pw = (top + 1) ** np.arange(parts, dtype=np.int64)
    keys = [np.zeros(1, dtype=np.int64)]
    for _ in range(top):
        keys.append(np.unique((keys[-1][:, None] + pw[None, :]).ravel()))
    return keys, pw


def digits(keys: np.ndarray, top: int, parts: int) -> np.ndarray:
    """The count vectors (rows) of the keys of :func:`_levels`."""
    pw = (top + 1) ** np.arange(parts, dtype=np.int64)
    return (keys[:, None] // pw[None, :]) % (top + 1)



def _shift_matrix(row: np.ndarray, up: list[np.ndarray], rows_out: int):
    """The sparse map law ↦ Σ_y row[y] law(· − e_y) from one level of histograms to the next (``up[y]``: the index
    at the next level of each histogram plus e_y): m products and m − 1 additions per cell (CSR product)."""
    from scipy.sparse import csr_matrix

    cols_in = up[0].size
    ys = [y for y, ry in enumerate(row) if ry != 0.0]
    data = np.concatenate([np.full(cols_in, row[y]) for y in ys])
    r = np.concatenate([up[y] for y in ys])
    c = np.tile(np.arange(cols_in), len(ys))
    return csr_matrix((data, (r, c)), shape=(rows_out, cols_in))


@dataclass(frozen=True)
class Worst:
    """The worst neighbouring pair at one question: the computed value (δ̂ or ε̂), its certified bracket
    [lower, upper], and the data set (the others' input counts, the target's x → x′)."""

    value: float
    lower: float
    upper: float
    counts: tuple[int, ...]
    x: int
    x2: int
    pairs: int

    def describe(self) -> str:
        return f"(the other users' input counts {list(self.counts)}; the target holds {self.x} or {self.x2})"


def _deltas(P: np.ndarray, Q: np.ndarray, e: float) -> np.ndarray:
    """Σ_h (P − e Q)_+ per column (e = inf: the mass of P where Q = 0)."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = np.where(Q > 0, P - e * Q, P) if math.isinf(e) else P - e * Q
    return np.maximum(t, 0.0).sum(axis=0)


def _pair_eps(P: np.ndarray, Q: np.ndarray, deltas) -> list[np.ndarray]:
    """Per δ in ``deltas``: ε(δ) of every column pair (P[:, j], Q[:, j]), the maximum over the likelihood-ratio
    prefixes E of log((P(E) − δ)/Q(E)) (0 when none exceeds δ; inf where Q(E) = 0 < P(E) − δ)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(Q > 0, np.log(P) - np.log(Q), np.where(P > 0, np.inf, -np.inf))
    order = np.argsort(-ratio, axis=0)
    cp = np.cumsum(np.take_along_axis(P, order, axis=0), axis=0)
    cq = np.cumsum(np.take_along_axis(Q, order, axis=0), axis=0)
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        lq = np.log(cq)
        for d in deltas:
            num = cp - d
            val = np.where(num > 0, np.where(cq > 0, np.log(num) - lq, np.inf), -np.inf)
            out.append(np.maximum(val.max(axis=0), 0.0))
    return out


class Enumeration:
    """Every neighbouring pair of data sets of the randomiser R among n users (module docstring): the others' laws
    are computed once (:meth:`others`) and serve every question asked of this object."""

    def __init__(self, R, n: int) -> None:
        self.R = np.asarray(R, dtype=float)
        self.n = n
        self.k, self.m = self.R.shape
        self.allow = allowance(n, self.m)
        self.gamma_h = gamma_n(lattice_size(n, self.m))
        self._laws = None

    def others(self):
        """(O, counts, last shift matrices): the others' histogram laws (rows: histograms of n − 1 reports, columns:
        count vectors), the count vectors (rows), and the sparse maps adding the target's report, one per input."""
        if self._laws is not None:
            return self._laws
        R, n, k, m = self.R, self.n, self.k, self.m
        N = n - 1
        hkeys, hpw = _levels(n, m)  # histograms of 0..n reports (the target's level included), sorted keys
        cpw = (max(N, 0) + 1) ** np.arange(k, dtype=np.int64)
        # the count vectors of one level, grouped by their first input held (ascending): the children c = p + e_x
        # with first input x are the parents p whose first input is >= x, a contiguous suffix of the level
        ckeys, first = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        O = np.ones((1, 1))
        for t in range(N):
            up = [np.searchsorted(hkeys[t + 1], hkeys[t] + hpw[y]) for y in range(m)]
            blocks, keys, firsts = [], [], []
            for x in range(k):
                start = 0 if t == 0 else int(np.searchsorted(first, x))
                if start == first.size:
                    continue
                blocks.append(_shift_matrix(R[x], up, hkeys[t + 1].size) @ np.ascontiguousarray(O[:, start:]))
                keys.append(ckeys[start:] + cpw[x])
                firsts.append(np.full(keys[-1].size, x, dtype=np.int64))
            O = np.hstack(blocks)
            ckeys, first = np.concatenate(keys), np.concatenate(firsts)
            del blocks
        up = [np.searchsorted(hkeys[n], hkeys[n - 1] + hpw[y]) for y in range(m)]
        last = [_shift_matrix(R[x], up, hkeys[n].size) for x in range(k)]
        self._laws = (O, digits(ckeys, max(N, 0), k), last, ckeys, cpw)
        return self._laws

    def chunks(self):
        """Yield (column indices, [P_x for every input x]) over chunks of the others' count vectors."""
        O, _, last, _, _ = self.others()
        H = last[0].shape[0]
        chunk = max(1, int(CHUNK_BYTES // (8 * H * max(self.k, 1))))
        for s in range(0, O.shape[1], chunk):
            cols = np.arange(s, min(s + chunk, O.shape[1]))
            block = O[:, cols]
            yield cols, [S @ block for S in last]

    def column(self, counts) -> int:
        _, _, _, ckeys, cpw = self.others()
        return int(np.nonzero(ckeys == int(np.dot(np.asarray(counts, dtype=np.int64), cpw)))[0][0])

    @property
    def pairs(self) -> int:
        return self.others()[0].shape[1] * self.k * (self.k - 1)

    def bracket(self, v: float) -> tuple[float, float]:
        """Certified (lower, upper) of a δ computed as ``v`` (module docstring)."""
        lo = max(0.0, v / (1.0 + self.gamma_h) - self.allow)
        hi = min(1.0, v / (1.0 - self.gamma_h) + self.allow)
        return (math.nextafter(lo, 0.0) if lo > 0 else 0.0), math.nextafter(hi, 2.0)

    def worst_delta(self, eps) -> list[Worst]:
        """Per ε: the largest δ(ε) over every neighbouring pair, with its certified bracket."""
        eps = [float(e) for e in eps]
        es = [exp_or_inf(e) for e in eps]
        best = [(-1.0, 0, 0, 0) for _ in eps]
        counts = self.others()[1]
        for cols, T in self.chunks():
            for x, x2 in itertools.permutations(range(self.k), 2):
                for i, e in enumerate(es):
                    d = _deltas(T[x], T[x2], e)
                    j = int(np.argmax(d))
                    if d[j] > best[i][0]:
                        best[i] = (float(d[j]), int(cols[j]), x, x2)
        return [Worst(v, *self.bracket(v), tuple(int(c) for c in counts[j]), x, x2, self.pairs)
                for v, j, x, x2 in best]

    def pair(self, w: Worst):
        """The :class:`~shufflesim.accounting.pld.pmf_pair.PMFPair` of the ordered pair ``w`` (its computed laws, for
        the PLD accountant; the rounding of the laws is :func:`allowance`'s with ``compositions``)."""
        from shufflesim.accounting.pld.pmf_pair import PMFPair

        O, _, last, _, _ = self.others()
        block = O[:, [self.column(w.counts)]]
        p, q = (last[w.x] @ block)[:, 0], (last[w.x2] @ block)[:, 0]
        keep = (p > 0) | (q > 0)
        with np.errstate(divide="ignore"):
            return PMFPair(np.log(p[keep]), np.log(q[keep]), "explicit neighbouring data sets", {"data": w.describe()})

    def pair_delta(self, counts, x: int, x2: int, eps: float) -> tuple[float, float]:
        """Certified (lower, upper) of δ(ε) of one ordered pair: the others' input counts, the target x against x2."""
        O, _, last, _, _ = self.others()
        block = O[:, [self.column(counts)]]
        return self.bracket(float(_deltas(last[x] @ block, last[x2] @ block, exp_or_inf(eps))[0]))

    def worst_eps(self, delta) -> list[Worst]:
        """Per δ: the largest ε(δ) over every neighbouring pair, with a certified bracket.  The exact inversion of
        each pair's computed law gives candidates at δ ∓ the allowance; the upper end is then checked by every
        pair's certified δ upper end (≤ δ), the lower end by the worst pair's certified δ lower end (> δ), each
        moved outward until the check holds."""
        deltas = [float(d) for d in delta]
        slack = [1.01 * (self.allow + self.gamma_h * d) + 1e-300 for d in deltas]
        targets = [t for d, s in zip(deltas, slack) for t in (d, max(d - s, 0.0), d + s)]
        best = [(-1.0, 0, 0, 0) for _ in targets]
        O, counts, last, _, _ = self.others()

        def invert(cols: np.ndarray, T) -> None:
            for x, x2 in itertools.permutations(range(self.k), 2):
                for i, ev in enumerate(_pair_eps(T[x], T[x2], targets)):
                    j = int(np.argmax(ev))
                    if ev[j] > best[i][0]:
                        best[i] = (float(ev[j]), int(cols[j]), x, x2)

        # screening: the data sets "all others hold one input" give a candidate ε_c per δ; only the pairs whose δ at
        # ε_c reaches δ − 2·slack can have a larger ε (δ is non-increasing in ε), and only they are inverted
        single = np.array(sorted({self.column([self.n - 1 if i == c else 0 for i in range(self.k)])
                                  for c in range(self.k)}))
        block = O[:, single]
        invert(single, [S @ block for S in last])
        cand = [best[3 * i + 2][0] for i in range(len(deltas))]
        for cols, T in self.chunks():
            sel = np.zeros(cols.size, dtype=bool)
            for x, x2 in itertools.permutations(range(self.k), 2):
                for d, s, e in zip(deltas, slack, cand):
                    sel |= _deltas(T[x], T[x2], exp_or_inf(e)) > (d - 2.0 * s) * (1.0 - 1e-9)
            if sel.any():
                invert(cols[sel], [t[:, sel] for t in T])
        out = []
        for i, d in enumerate(deltas):
            (v, j, x, x2), (up, _, _, _), (low, jl, xl, xl2) = best[3 * i:3 * i + 3]
            hi = self._eps_upper(d, up)
            lo = self._eps_lower(d, low, tuple(int(c) for c in counts[jl]), xl, xl2)
            out.append(Worst(v, min(lo, v), max(hi, v), tuple(int(c) for c in counts[j]), x, x2, self.pairs))
        return out

    def _eps_upper(self, delta: float, start: float) -> float:
        if math.isinf(start):
            return math.inf
        step = 1e-13 + 1e-12 * start
        hi = start + step
        for _ in range(40):
            if self.worst_delta([hi])[0].upper <= delta:
                return hi
            hi += step
            step *= 4.0
        return math.inf

    def _eps_lower(self, delta: float, start: float, counts, x: int, x2: int) -> float:
        if math.isinf(start):
            return math.inf if self.pair_delta(counts, x, x2, math.inf)[0] > delta else 0.0
        step = 1e-13 + 1e-12 * start
        lo = start - step
        for _ in range(40):
            if lo <= 0.0:
                return 0.0
            if self.pair_delta(counts, x, x2, lo)[0] > delta:
                return lo
            lo -= step
            step *= 4.0
        return 0.0


def worst_delta(R, n: int, eps) -> list[Worst]:
    """Per ε: the largest δ(ε) over every neighbouring pair (every count vector of the others, every ordered x ≠ x′),
    with its certified bracket (:class:`Enumeration`)."""
    return Enumeration(R, n).worst_delta(eps)


def worst_eps(R, n: int, delta) -> list[Worst]:
    """Per δ: the largest ε(δ) over every neighbouring pair, with its certified bracket (:class:`Enumeration`)."""
    return Enumeration(R, n).worst_eps(delta)


# --- answers ---------------------------------------------------------------------------------------------------------

#: the engine name recorded in the answers' provenance
ENGINE = "exact enumeration"


def estimate(n: int, k: int, m: int, values: int = 1, inverse: bool = False):
    """The enumeration's :class:`~shufflesim.accounting.engines.estimates.Estimate` (steps × seconds per step, peak
    memory), for the resource checks of :func:`~shufflesim.accounting.engines.estimates.check_estimate`."""
    from shufflesim.accounting.engines.estimates import Estimate

    return Estimate(enumeration_bytes(n, k, m), 0.05 + SECONDS_PER_STEP * enumeration_steps(n, k, m, values, inverse),
                    ENGINE)


def exact_answers(R, n: int, eps=None, delta=None) -> tuple[list, list[str]]:
    """Single-use ``exact`` answers of the shuffled view of randomiser R among n users: per ε (δ) the worst case
    over every neighbouring pair of data sets, a certified bracket a few ulps wide (module docstring).  Refused
    in one line beyond :data:`EXACT_ENUMERATION_BUDGET` (NotApplicableError: the cost and the largest n within
    it) or beyond the memory (ResourceError)."""
    from shufflesim.accounting.engines.estimates import check_estimate
    from shufflesim.accounting.model.provenance import LowerEnd
    from shufflesim.accounting.model.results import DeltaBound, EpsBound

    R = np.asarray(R, dtype=float)
    k, m = R.shape
    vals = list(eps if eps is not None else delta)
    inverse = eps is None
    check_enumeration(n, k, m, len(vals), inverse)
    check_estimate(estimate(n, k, m, len(vals), inverse))
    worst = worst_delta(R, n, vals) if not inverse else worst_eps(R, n, vals)
    face = EpsBound if inverse else DeltaBound
    out = []
    for v, w in zip(vals, worst):
        note = (f"exact: the worst of every neighbouring pair of data sets ({w.pairs} ordered pairs: every count "
                f"vector of the other {n - 1} users' inputs x every switch of the target), attained by {w.describe()}; "
                "both ends bracket that floating-point value with its certified rounding allowance "
                "(docs/theory.md#exact-finite)")
        r = face.exact_bracket(v, w.lower, w.upper, worst=w.describe(), evaluations=w.pairs, notes=(note,),
                               engine=ENGINE)
        # the lower end is an explicit pair of data sets (the worst one): said as such, like every lower end
        end = LowerEnd(f"explicit neighbouring data sets {w.describe()} (its exact delta; the worst of {w.pairs} "
                       "enumerated ordered pairs at the question, exact.enumeration)")
        out.append(r.with_provenance(r.provenance.add(end)))
    return out, []


#: what a composed ``exact`` answer certifies (the note of :func:`exact_view`)
COMPOSED_NOTE = ("exact, composed {c} times: the enumeration is exact for a single use only; the upper end is the "
                 "tight method's (its dominating pair composed), the lower end the certified composed delta of "
                 "explicit neighbouring data sets (the single-use worst pair composed): a lower bound on the "
                 "composition, not its worst case, which would need every pair's composition")


def exact_view(R, n: int, eps, delta, compositions: int, run_pair, genuine_lower) -> tuple[list, list[str]]:
    """The ``exact`` method of a description whose shuffled view is the randomiser R's (``matrix``, ``krr
    --adversary shuffled``).  Single use: :func:`exact_answers`.  Composed (what is certified is said in
    :data:`COMPOSED_NOTE`): the upper ends of ``run_pair("tight")`` (the description's dominating pair composed)
    and the lower ends of ``genuine_lower("tight", ...)`` (explicit data sets composed), within the budget of
    the single-use enumeration (refused beyond it, as single use)."""
    from shufflesim.accounting.model.provenance import LowerEnd

    if compositions == 1:
        return exact_answers(R, n, eps=eps, delta=delta)
    R = np.asarray(R, dtype=float)
    check_enumeration(n, R.shape[0], R.shape[1], len(eps if eps is not None else delta), eps is None)
    results, notes = run_pair("tight")
    got = genuine_lower("tight", eps=eps, delta=delta, compositions=compositions)
    lows = [None] * len(results) if got is None else got[0]
    what = got[1] if got is not None and isinstance(got[1], LowerEnd) else LowerEnd(None if got is None else got[1])
    out = []
    for r, lo in zip(results, lows):
        if hasattr(r, "with_ends"):  # an answer (a NotApplicable stays as it is)
            r = r.with_ends(lower=lo if lo is None else min(lo, r.upper))
            r = r.with_provenance(r.provenance.add(what))
        out.append(r)
    return out, [*notes, COMPOSED_NOTE.format(c=compositions)]


# --- explicit data sets beyond the enumeration ---------------------------------------------------------------------

def dataset_steps(n: int, m: int) -> float:
    """Steps of :func:`dataset_worst`: one data set's law, Σ_t #histograms(t) × m, and its k(k − 1) pairs."""
    return sum(lattice_size(t, m) for t in range(n + 1)) * m


def dataset_worst(R, counts, *, eps=None, delta=None, budget: float = EXACT_ENUMERATION_BUDGET) -> list[Worst]:
    """The certified δ(ε) (or ε(δ)) of ONE explicit data set of the others (``counts``: how many of the n − 1 others
    hold each input), the worst over the target's switches x → x′: a lower end on the mechanism's own value at any n
    its law fits (the others' histogram law by the same one-user shifts, O(n·#histograms·m), a single column of
    :class:`Enumeration`'s lattice).  The families worth evaluating are those the enumeration finds worst at small n
    (docs/theory.md#exact-finite: "all others hold c", a two-input split)."""
    R = np.asarray(R, dtype=float)
    k, m = R.shape
    counts = [int(c) for c in counts]
    n = sum(counts) + 1
    steps = dataset_steps(n, m)
    if steps > budget or m * math.log2(n + 1) > 62:
        raise NotApplicableError(f"the law of one data set of n={n} users with {m} outputs needs about {steps:.3g} "
                                 f"steps, beyond the budget of {budget:.3g}")
    pw = (n + 1) ** np.arange(m, dtype=np.int64)
    keys, law = np.zeros(1, dtype=np.int64), np.ones((1, 1))
    for x, c in enumerate(counts):
        for _ in range(c):
            nxt = np.unique((keys[:, None] + pw[None, :]).ravel())
            up = [np.searchsorted(nxt, keys + pw[y]) for y in range(m)]
            law = _shift_matrix(R[x], up, nxt.size) @ law
            keys = nxt
    nxt = np.unique((keys[:, None] + pw[None, :]).ravel())
    up = [np.searchsorted(nxt, keys + pw[y]) for y in range(m)]
    T = [_shift_matrix(R[x], up, nxt.size) @ law for x in range(k)]
    en = Enumeration(R, n)  # for its allowance and bracket only (its laws are never computed here)
    vals = list(eps if eps is not None else delta)
    out = []
    for v in vals:
        best = (-1.0, 0, 0)
        for x, x2 in itertools.permutations(range(k), 2):
            got = (_deltas(T[x], T[x2], exp_or_inf(v))[0] if eps is not None
                   else _pair_eps(T[x], T[x2], [v + 1.01 * (en.allow + en.gamma_h * v)])[0][0])
            if got > best[0]:
                best = (float(got), x, x2)
        val, x, x2 = best
        if eps is not None:
            lo, hi = en.bracket(val)
        else:  # ε at δ raised by the allowance, checked: the pair's certified δ lower end there exceeds δ
            lo, hi, step = val, math.inf, 1e-13 + 1e-12 * val
            while lo > 0.0 and not en.bracket(float(_deltas(T[x], T[x2], exp_or_inf(lo))[0]))[0] > v:
                lo, step = lo - step, step * 4.0
            lo = max(lo, 0.0)
        out.append(Worst(val, lo, hi, tuple(counts), x, x2, k * (k - 1)))
    return out
