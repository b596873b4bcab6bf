"""A shuffled local randomiser given by its matrix (or by a declared ε0 alone): the mechanism description.

``ShuffledMatrix(n, matrix)``: n users each running the finite randomiser R (k inputs × m outputs, rows
summing to 1; :mod:`shufflesim.pipeline.matrix`), the analyser seeing the shuffled reports (their
histogram).  Neighbouring data sets differ in one user's input.  By default (``blanket``, issue 30; single use,
at most :data:`BLANKET_MAX_INPUTS` inputs) the upper end is the largest blanket-pair δ over the ordered input
pairs (Su, Cheng, Wang 2025; docs/theory.md#pairs-blanket) and the lower end the largest exact δ of the data sets
"the others all hold c" (and, within the enumeration budget, of every data set), both evaluated by
:mod:`shufflesim.accounting.engines.blanket_fft`.  ``tight`` is accounted two-sided (issue 22):

* **upper end** — R is ε0-LDP with ε0 derived exactly from the matrix (raised by
  :func:`~shufflesim.maths.rr.eps0_upper`), so Feldman, McMillan and Talwar's *stronger clone pair* at ε0
  (SODA 2023, arXiv:2208.04591; docs/theory.md#pairs-stronger-clones) dominates the shuffled view for every
  data set of the other users: ``tight`` accounts it, exactly as :class:`~shufflesim.mechanisms.clones.Clones`;
  the published ε0-LDP bounds (Erlingsson et al. 2019, Feldman et al.) apply as well;
* **lower end** — the exact δ of explicit neighbouring data sets, a genuine construction: for small n every
  multiset of n inputs is enumerated, the law of its shuffled histogram computed exactly
  (:func:`shufflesim.accounting.exact.shuffle_oracle.histogram_law`), and the neighbouring pair with the largest
  δ(ε) (or ε(δ)) at the question is accounted by the PLD accountant, whose *lower* end is then a lower bound
  on the mechanism's own δ (a lower bound on δ of one pair of data sets, which the mechanism's δ — a maximum
  over all pairs — is at least).  Beyond the enumeration's budget: the count of one report y when the other
  n − 1 users all hold one value c and the target holds x or x′ (y, x, x′ attaining ε0) — a post-processing of
  those data sets' view, so its δ is again a valid lower end (n ≤ 10⁷); beyond that, None with a note.

Never the clone pair's own numerical bracket as the lower end: that pair dominates the mechanism and is not
attained in general (issue 17).  ``ShuffledMatrix(n, None, eps0=...)`` describes a randomiser known only as
a sampler with a *declared* ε0: the same upper end, no lower end, and the parameters say the ε0 is declared.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from shufflesim.accounting.model.mechanism import Flag, Mechanism
from shufflesim.accounting.numerics.logspace import exp_or_inf, exp_up
from shufflesim.accounting.model.provenance import LowerEnd
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.rr import eps0_upper

from ._common import LDP_METHODS, ldp_bound

#: ``blanket`` evaluates every ordered input pair's forms up to this many inputs (issue 30's scope: 10 x 10);
#: above it answers as ``tight``
BLANKET_MAX_INPUTS = 10

#: the enumeration of the lower end runs when (multisets of n inputs) · n · (histograms) · m stays below this
ENUMERATION_BUDGET = 3_000_000



@dataclass(frozen=True)
class ShuffledMatrix(Mechanism):
    """``n`` users running the randomiser with matrix ``matrix`` (rows: inputs), shuffled; or, with
    ``matrix=None``, any randomiser with the declared local ``eps0``."""

    kind: ClassVar[str] = "matrix"
    summary: ClassVar[str] = "any finite randomiser given by its matrix (eps0 derived, two-sided: clones + enumeration)"
    example: ClassVar[str] = "--n 1000 --matrix abstain.toml --delta 1e-6   # docs/plugins.md"
    flags: ClassVar[tuple[Flag, ...]] = (
        Flag("n", "int", "number of users"),
        Flag("matrix", "str", "CSV or TOML file of the randomiser matrix (rows: inputs, columns: outputs)",
             required=False),
        Flag("eps0", "float", "declared local epsilon: checked against the matrix; alone (no --matrix) it is "
             "trusted and the answer has no lower end", required=False),
    )
    methods: ClassVar[tuple[str, ...]] = ("blanket", "tight", *LDP_METHODS)

    n: int
    #: the matrix as a tuple of rows (hashable, frozen); None for a sampler with a declared eps0
    matrix: tuple | None = None
    #: derived from the matrix (a declared value must agree); the declared value when there is no matrix
    eps0: float | None = None
    eps0_source: str = field(default="", init=False)

    def __post_init__(self) -> None:
        from shufflesim.pipeline.matrix import check_declared_eps0, check_matrix, matrix_eps0

        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        if self.matrix is None:
            if self.eps0 is None:
                raise ParameterError("give the randomiser's matrix, or (for a sampler) its declared eps0")
            object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))
            object.__setattr__(self, "eps0_source", "declared (no matrix: not derived, not checked)")
            return
        R = check_matrix(self.matrix)  # refuses a matrix that is not eps0-LDP (pipeline.matrix.check_ldp)
        eps0 = matrix_eps0(R)
        declared = self.eps0 is not None
        check_declared_eps0(eps0, check_positive("eps0", self.eps0) if declared else None)
        object.__setattr__(self, "matrix", tuple(tuple(float(v) for v in row) for row in R))
        object.__setattr__(self, "eps0", eps0)
        object.__setattr__(self, "eps0_source", "derived from the matrix" + (" (matches the declared value)"
                                                                            if declared else ""))

    @classmethod
    def from_flags(cls, *, n, matrix=None, eps0=None) -> "ShuffledMatrix":
        if matrix is None:
            return cls(n, None, eps0)
        from shufflesim.pipeline.matrix import read_matrix

        R, declared = read_matrix(matrix)
        if eps0 is not None and declared is not None and eps0 != declared:
            raise ParameterError(f"--eps0 {eps0:g} and the file's eps0 = {declared:g} differ; give one")
        return cls(n, R.tolist(), eps0 if eps0 is not None else declared)

    @property
    def default_method(self) -> str:
        """``blanket`` for a matrix (issue 30), ``tight`` for a sampler known only by its declared ε0."""
        return "tight" if self.matrix is None else "blanket"

    @property
    def array(self) -> np.ndarray | None:
        return None if self.matrix is None else np.array(self.matrix, dtype=float)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "eps0": self.eps0, "eps0_source": self.eps0_source}
        if self.matrix is not None:
            out.update(inputs=len(self.matrix), outputs=len(self.matrix[0]))
        return out

    def local_guarantee(self) -> float | None:
        return eps0_upper(self.eps0)

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.mechanisms.clones import Clones

        if method == "blanket" and self.matrix is None:
            raise NotApplicableError("blanket needs the randomiser's matrix (a declared eps0 alone has no blanket)")
        if method not in ("tight", "blanket"):
            raise NotApplicableError(f"matrix has no neighbouring pair for method {method!r}")
        return Clones(self.n, eps0_upper(self.eps0)).pair("tight", tail_bound)

    def bound(self, method: str, options):
        return ldp_bound(method, self.n, eps0_upper(self.eps0))

    def direct(self, method, eps_l, delta_l, compositions, run_pair):
        """``blanket`` (issue 30, the default): single use, upper end = the largest blanket-pair δ over the ordered
        input pairs, lower end = the largest exact δ of the data sets "the others all hold c"
        (:mod:`shufflesim.accounting.engines.blanket_fft`; docs/theory.md#pairs-blanket).  Composed (> 1 use):
        ``tight`` (stronger clones) with its genuine lower end, and a note saying so (the blanket sum form is
        single-use only)."""
        if method != "blanket":
            return None
        if self.matrix is None:
            raise NotApplicableError("blanket needs the randomiser's matrix (a declared eps0 alone has no blanket)")
        if compositions > 1 or len(self.matrix) > BLANKET_MAX_INPUTS:
            from shufflesim.accounting.model.results import as_dominating

            results, notes = run_pair("tight")
            got = self.genuine_lower("tight", eps=eps_l, delta=delta_l, compositions=compositions)
            lows, what = (got[0], got[1]) if got is not None else ([None] * len(results), None)
            what = what if isinstance(what, LowerEnd) or what is None else LowerEnd(what)
            pair = self.dominating_pair("tight")
            results = [as_dominating(r, pair, lo, what) for r, lo in zip(results, lows)]
            why = (f"the blanket forms are enumerated for at most {BLANKET_MAX_INPUTS} inputs" if compositions == 1
                   else "the blanket sum form is single-use only")
            return results, notes + [f"blanket: {why}; the answer is tight's (stronger clones at eps0) with its "
                                     "explicit data sets below"]
        from shufflesim.accounting.engines.blanket_fft import account_blanket, matrix_forms

        results, notes = account_blanket(matrix_forms(self.array, self.n), eps_l, delta_l, eps0_upper(self.eps0))
        R = self.array
        if enumeration_cost(self.n, R.shape[0], R.shape[1]) <= ENUMERATION_BUDGET:
            # small n: every data set enumerated (the exact worst case at the question), where it is higher
            got = self.genuine_lower("tight", eps=eps_l, delta=delta_l, compositions=1)
            if got is not None and not isinstance(got[1], LowerEnd):
                better = [lo is not None and r.lower is not None and lo > r.lower for r, lo in zip(results, got[0])]
                if any(better):
                    end = LowerEnd(got[1])
                    results = [r.with_ends(lower=min(lo, r.upper)).with_provenance(r.provenance.add(end)) if b else r
                               for r, lo, b in zip(results, got[0], better)]
                    notes = notes + [f"lower end (where higher): {got[1]}"]
        return results, notes

    # --- the genuine lower end (issue 17's hooks, applied by accounting.account) -----------------------------
    def dominating_pair(self, method: str) -> str | None:
        """``tight`` evaluates the stronger clone pair at ε0: it dominates the view, it is not its law."""
        return "stronger clones at the matrix's eps0" if method == "tight" else None

    def genuine_lower(self, method: str, *, eps=None, delta=None, compositions: int = 1):
        """Lower ends on this mechanism's δ(ε) (or ε(δ)) from explicit neighbouring data sets (below), or None."""
        if method != "tight":
            return None
        stubs = ([DeltaBound(float(e), 1.0, None, method) for e in eps] if eps is not None
                 else [EpsBound(float(d), math.inf, None, method) for d in delta])
        out, lower_ends = self.lower_ends(stubs, compositions, {})
        lows = [r.lower for r in out]
        if all(lo is None for lo in lows):  # no explicit data set could be evaluated: the text says why
            return lows, LowerEnd(None, why="; ".join(lower_ends))
        return lows, "; ".join(lower_ends)

    def lower_ends(self, results: list, compositions: int, numerics: dict) -> tuple[list, list[str]]:
        """``results`` (the dominating pair's answers) with their lower ends replaced by lower ends on this
        mechanism's δ (or ε) — the exact worst explicit neighbouring data sets where enumerable, else None —
        and one description per explicit data set used (or, alone, why there is none), for
        :meth:`genuine_lower`."""
        if self.matrix is None:
            return _strip(results), ["no lower end: the randomiser is a sampler with a declared eps0; a lower "
                                     "end needs its matrix"]
        R = self.array
        cost = enumeration_cost(self.n, R.shape[0], R.shape[1])
        if cost > ENUMERATION_BUDGET:
            if self.n > MAX_N_PROJECTED:
                return _strip(results), [
                    f"no lower end: n={self.n} exceeds both the enumeration (budget {ENUMERATION_BUDGET:.3g} steps) and "
                    f"the projected count's range (n <= {MAX_N_PROJECTED:.0e})"]
            return self._projected_lower_ends(R, results, compositions, numerics)
        table = neighbouring_table(R, self.n)
        out, used = [], []
        from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon

        for r in results:
            if isinstance(r, DeltaBound):
                i = int(np.argmax(table.deltas(r.eps)))
                lo = tight_delta(table.pair(i), [r.eps], compositions=compositions, **numerics)[0].delta_lower
                out.append(replace(r, delta_lower=lo))
            elif isinstance(r, EpsBound):
                i = int(np.argmax(table.epsilons(r.delta, eps0_upper(self.eps0))))
                lo = tight_epsilon(table.pair(i), [r.delta], compositions=compositions, **numerics)[0].eps_lower
                out.append(replace(r, eps_lower=lo))
            else:
                out.append(r)
                continue
            used.append(table.describe(i))
        how = "composed, a lower bound on the composition" if compositions > 1 else "its exact delta"
        return out, [f"explicit neighbouring data sets {d} ({how}; the worst of {table.pairs.shape[0]} enumerated "
                     "pairs at the question, shuffle_oracle.histogram_law)" for d in dict.fromkeys(used)]


    def _projected_lower_ends(self, R: np.ndarray, results: list, compositions: int,
                              numerics: dict) -> tuple[list, list[str]]:
        """Lower ends at any n from a post-processing of explicit data sets' view: the count N_y of one report y
        (y, x, x′ attaining ε0) when the other n − 1 users all hold c and the target holds x or x′ — N_y is
        Bin(n − 1, R[c, y]) plus the target's Bernoulli(R[x, y]) or Bernoulli(R[x′, y]).  By post-processing
        its δ is at most that of the shuffled histograms of these data sets, itself at most the mechanism's.
        The PMFs carry a relative error ~1e-13 (Loader's binomial): the lower ends are lowered by
        :data:`PROJECTED_ALLOWANCE` × (1 + e^ε) (δ) or asked at δ raised by it (ε)."""
        from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon
        from shufflesim.pipeline.matrix import eps0_witness

        x, x2, y = eps0_witness(R)
        col = R[:, y].copy()
        if R.shape[0] > 2:
            col[[x, x2]] = np.inf
        cands = sorted({int(np.argmin(col)), x, x2})
        pairs = {c: projected_pair(R, self.n, x, x2, c, y) for c in cands}
        out, used = [], set()
        for r in results:
            if isinstance(r, DeltaBound):
                best = max(((tight_delta(p, [r.eps], compositions=compositions, **numerics)[0].delta_lower or 0.0), c)
                           for c, p in pairs.items())
                lo = max(0.0, best[0] - PROJECTED_ALLOWANCE * compositions * (1.0 + exp_up(r.eps)))
                out.append(replace(r, delta_lower=lo))
            elif isinstance(r, EpsBound):
                d = r.delta + PROJECTED_ALLOWANCE * compositions * (1.0 + exp_up(eps0_upper(self.eps0)))
                if d >= 1.0:
                    out.append(replace(r, eps_lower=0.0))
                    continue
                best = max(((tight_epsilon(p, [d], compositions=compositions, **numerics)[0].eps_lower or 0.0), c)
                           for c, p in pairs.items())
                out.append(replace(r, eps_lower=best[0]))
            else:
                out.append(r)
                continue
            used.add(best[1])
        return out, [f"explicit data sets (the other {self.n - 1} users hold {c}; the target holds {x} or {x2}), "
                     f"through the count of report {y} (a post-processing of their view, so a valid lower end"
                     + (", composed" if compositions > 1 else "") + "; every data set is enumerated for small n only)"
                     for c in sorted(used)]


#: relative error allowance of the projected count's PMFs (Loader's binomial is ~1e-13 in the log)
PROJECTED_ALLOWANCE = 1e-11
#: largest n for the projected count's lower end (its PMF has n + 1 atoms)
MAX_N_PROJECTED = 10**7


def projected_pair(R: np.ndarray, n: int, x: int, x2: int, c: int, y: int):
    """PMFs of N_y (the count of report y) when n − 1 users hold c and the target holds x (P) or x2 (Q)."""
    from shufflesim.accounting.numerics.binomial import log_binom_pmf
    from shufflesim.accounting.pld.pmf_pair import PMFPair

    j = np.arange(n + 1)
    lb = log_binom_pmf(j, n - 1, float(R[c, y]), float(1.0 - R[c, y]))
    lb_shift = np.concatenate(([-np.inf], lb[:-1]))

    def mix(a: float) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.logaddexp(np.log1p(-a) + lb if a < 1 else np.full_like(lb, -np.inf),
                                np.log(a) + lb_shift if a > 0 else np.full_like(lb, -np.inf))

    lp, lq = mix(float(R[x, y])), mix(float(R[x2, y]))
    keep = np.isfinite(lp) | np.isfinite(lq)
    return PMFPair(lp[keep], lq[keep], "projected count of explicit data sets",
                   {"n": n, "x": x, "x2": x2, "c": c, "y": y})


def _strip(results) -> list:
    out = []
    for r in results:
        if isinstance(r, DeltaBound):
            r = replace(r, delta_lower=None)
        elif isinstance(r, EpsBound):
            r = replace(r, eps_lower=None)
        out.append(r)
    return out


def enumeration_cost(n: int, k: int, m: int) -> float:
    """Steps of :func:`neighbouring_table`: multisets of n inputs × n users × histograms × outputs, i.e.
    C(n+k−1, k−1)·n·C(n+m−1, m−1)·m.  Computed in log space first (lgamma), so that a large matrix or n gives
    +inf (beyond any budget) instead of an OverflowError or a slow exact binomial; exact below 1e300."""
    def log_comb(a: int, b: int) -> float:
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)

    log_cost = log_comb(n + k - 1, k - 1) + math.log(n) + log_comb(n + m - 1, m - 1) + math.log(m)
    if log_cost > 690.0:  # e^690 ~ 1e300 (lgamma's rounding cannot move it past the double range)
        return math.inf
    return float(math.comb(n + k - 1, k - 1) * n * math.comb(n + m - 1, m - 1) * m)


@dataclass
class NeighbouringTable:
    """Laws of the shuffled histogram of every multiset of n inputs (rows of ``law``, columns: histograms) and
    the neighbouring pairs (row indices of X and X′; ``moved``: the target's inputs x → x′)."""

    law: np.ndarray
    multisets: list
    pairs: np.ndarray
    moved: np.ndarray
    law_k: int = 0

    def deltas(self, eps: float) -> np.ndarray:
        """Exact δ(ε) (both directions) of every neighbouring pair (floating point)."""
        P, Q = self.law[self.pairs[:, 0]], self.law[self.pairs[:, 1]]
        e = exp_or_inf(eps)  # e^eps beyond the doubles: inf, exactly handled
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 where an outcome has probability 0
            fwd = np.where(Q > 0, P - e * Q, P)
            bwd = np.where(P > 0, Q - e * P, Q)
        return np.maximum(np.maximum(fwd, 0.0).sum(axis=1), np.maximum(bwd, 0.0).sum(axis=1))

    def epsilons(self, delta: float, eps_max: float) -> np.ndarray:
        """ε(δ) of every pair by bisection (60 halvings of [0, eps_max], vectorised over pairs)."""
        from shufflesim.accounting.numerics.invert import bisect_vectorised

        P, Q = self.law[self.pairs[:, 0]], self.law[self.pairs[:, 1]]

        def deltas(x: np.ndarray) -> np.ndarray:
            e = np.exp(x)[:, None]
            return np.maximum(np.maximum(P - e * Q, 0.0).sum(axis=1), np.maximum(Q - e * P, 0.0).sum(axis=1))

        n_pairs = self.pairs.shape[0]
        return bisect_vectorised(deltas, delta, np.zeros(n_pairs), np.full(n_pairs, eps_max), halvings=60)[1]

    def pair(self, i: int):
        from shufflesim.accounting.pld.pmf_pair import PMFPair

        p, q = self.law[self.pairs[i, 0]], self.law[self.pairs[i, 1]]
        keep = (p > 0) | (q > 0)
        with np.errstate(divide="ignore"):
            return PMFPair(np.log(p[keep]), np.log(q[keep]), "explicit neighbouring data sets",
                           {"data": self.describe(i)})

    def describe(self, i: int) -> str:
        x0, x1 = (int(v) for v in self.moved[i])
        others = list(self.multisets[self.pairs[i, 0]])
        others.remove(x0)
        counts = np.bincount(np.array(others, dtype=np.int64), minlength=self.law_k).tolist()
        return f"(the other users' input counts {counts}; the target holds {x0} or {x1})"


def neighbouring_table(R: np.ndarray, n: int) -> NeighbouringTable:
    """Every multiset of n inputs, the exact law of its shuffled histogram, and every neighbouring pair
    (one user's input x → x′, x < x′: δ is symmetric in the pair since both directions are taken)."""
    from shufflesim.accounting.exact.shuffle_oracle import histogram_law

    k, m = R.shape
    multisets = list(itertools.combinations_with_replacement(range(k), n))
    index = {ms: i for i, ms in enumerate(multisets)}
    laws = [histogram_law(R, ms) for ms in multisets]
    keys = sorted(set().union(*laws))
    col = {h: j for j, h in enumerate(keys)}
    law = np.zeros((len(multisets), len(keys)))
    for i, lw in enumerate(laws):
        law[i, [col[h] for h in lw]] = list(lw.values())
    pairs, moved = [], []
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        for x0, x1 in itertools.combinations(range(k), 2):
            pairs.append((index[tuple(sorted((*others, x0)))], index[tuple(sorted((*others, x1)))]))
            moved.append((x0, x1))
    return NeighbouringTable(law, multisets, np.array(pairs, dtype=np.int64), np.array(moved, dtype=np.int64), k)
