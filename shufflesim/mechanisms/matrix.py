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
* **lower end** — the exact δ of explicit neighbouring data sets, a genuine construction: within
  :data:`ENUMERATION_BUDGET` every data set of the others × every switch of the target is enumerated
  (:mod:`shufflesim.accounting.exact.enumeration`, docs/theory.md#exact-finite) and the worst pair's certified
  lower end at the question is taken (single use: the mechanism's own value, to the rounding allowance;
  composed: that pair composed by the PLD accountant, whose *lower* end is a lower bound on the composition).
  ``exact`` answers both ends from the same enumeration within its own budget.  Beyond the enumeration's budget: the count of one report y when the other
  n − 1 users all hold one value c and the target holds x or x′ (y, x, x′ attaining ε0) — a post-processing of
  those data sets' view, so its δ is again a valid lower end (n ≤ 10⁷); beyond that, None with a note.

Never the clone pair's own numerical bracket as the lower end: that pair dominates the mechanism and is not
attained in general (issue 17).  ``ShuffledMatrix(n, None, eps0=...)`` describes a randomiser known only as
a sampler with a *declared* ε0: the same upper end, no lower end, and the parameters say the ε0 is declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from shufflesim.accounting.model.mechanism import Flag, Mechanism
from shufflesim.accounting.numerics.logspace import exp_up
from shufflesim.accounting.model.provenance import LowerEnd
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.maths.rr import eps0_upper

from ._common import LDP_METHODS, ldp_bound

#: the enumeration of the lower end (every data set, :mod:`shufflesim.accounting.exact.enumeration`) runs when its
#: steps stay below this (about a second); ``--method exact`` has its own, larger budget there
ENUMERATION_BUDGET = 2e8
#: ``blanket`` evaluates every ordered input pair's forms up to this many inputs (issue 30's scope: 10 x 10);
#: above it answers as ``tight``
BLANKET_MAX_INPUTS = 10



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
    methods: ClassVar[tuple[str, ...]] = ("blanket", "tight", "exact", *LDP_METHODS)

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
        """``exact``: the worst case over every neighbouring pair of data sets, enumerated within a stated budget
        (:mod:`shufflesim.accounting.exact.enumeration`, docs/theory.md#exact-finite); composed, its upper end is
        ``tight``'s and its lower end :meth:`genuine_lower`'s (said in the note)."""
        if method == "blanket":
            return self.blanket(eps_l, delta_l, compositions, run_pair)
        if method != "exact":
            return None
        if self.matrix is None:
            raise NotApplicableError("exact needs the randomiser's matrix (a sampler with a declared eps0 has none)")
        from shufflesim.accounting.exact.enumeration import exact_view

        return exact_view(self.array, self.n, eps_l, delta_l, compositions, run_pair, self.genuine_lower)

    def blanket(self, eps_l, delta_l, compositions, run_pair):
        """``blanket`` (issue 30, the default): single use, upper end = the largest blanket-pair δ over the ordered
        input pairs, lower end = the largest exact δ of the data sets "the others all hold c"
        (:mod:`shufflesim.accounting.engines.blanket_fft`; docs/theory.md#pairs-blanket).  Where every data set
        can be enumerated within :data:`ENUMERATION_BUDGET` (about a second), the answer is that worst case, both
        ends (:mod:`shufflesim.accounting.exact.enumeration`; docs/theory.md#exact-finite).  Composed (> 1 use):
        ``tight`` (stronger clones) with its genuine lower end, and a note saying so (the blanket sum form is
        single-use only)."""
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
        from shufflesim.accounting.exact.enumeration import enumeration_steps, exact_view

        R = self.array
        values = len(eps_l if eps_l is not None else delta_l)
        if enumeration_steps(self.n, R.shape[0], R.shape[1], values, eps_l is None) <= ENUMERATION_BUDGET:
            results, notes = exact_view(R, self.n, eps_l, delta_l, 1, run_pair, self.genuine_lower)
            return results, notes + ["blanket: n is small enough to enumerate every data set (within "
                                     f"{ENUMERATION_BUDGET:.3g} steps): the answer is the exact worst case"]
        from shufflesim.accounting.engines.blanket_fft import account_blanket, matrix_forms

        results, notes = account_blanket(matrix_forms(self.array, self.n), eps_l, delta_l, eps0_upper(self.eps0))
        # the stronger clone pair also dominates the view: where its certified upper end is smaller (randomisers
        # whose blanket is the clones' weight, e.g. local hashing, where the blanket FFT's own slack decides), the
        # answer takes it, so the default is never looser than tight
        clones, _ = run_pair("tight")
        tighter = [hasattr(c, "upper") and c.upper < r.upper for r, c in zip(results, clones)]
        if any(tighter):
            results = [r.with_ends(upper=max(c.upper, r.lower if r.lower is not None else 0.0)) if t else r
                       for r, c, t in zip(results, clones, tighter)]
            notes = notes + ["upper end (where smaller): the stronger clone pair at eps0 (tight), which also dominates "
                             "the view"]
        from shufflesim.accounting.engines.blanket_fft import BLANKET_RTOL, FALLBACK_NOTE, rejudged, tighter_of

        results = [rejudged(r) for r in results]
        if not all(r.accuracy_met for r in results):  # the explicit data sets' lower end, where higher
            got = self.genuine_lower("tight", eps=eps_l, delta=delta_l)
            lows, what = got if got is not None else (None, None)
            results, moved = tighter_of(results, clones, lows, what)
            notes = notes + ([FALLBACK_NOTE.format(rtol=BLANKET_RTOL)] if moved else [])
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
        from shufflesim.accounting.exact.enumeration import Enumeration, allowance, enumeration_steps

        R = self.array
        k, m = R.shape
        inverse = any(isinstance(r, EpsBound) for r in results)
        if enumeration_steps(self.n, k, m, len(results), inverse) > ENUMERATION_BUDGET:
            if self.n > MAX_N_PROJECTED:
                return _strip(results), [
                    f"no lower end: n={self.n} exceeds both the enumeration (budget {ENUMERATION_BUDGET:.3g} steps) and "
                    f"the projected count's range (n <= {MAX_N_PROJECTED:.0e})"]
            return self._projected_lower_ends(R, results, compositions, numerics)
        from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon

        en = Enumeration(R, self.n)
        allow = allowance(self.n, m, compositions)
        out, used = [], []
        for r in results:
            if isinstance(r, DeltaBound):
                w = en.worst_delta([r.eps])[0]
                if compositions > 1:
                    lo = tight_delta(en.pair(w), [r.eps], compositions=compositions, **numerics)[0].delta_lower
                    lo = max(0.0, (lo or 0.0) - allow)
                else:
                    lo = w.lower
                out.append(replace(r, delta_lower=lo))
            elif isinstance(r, EpsBound):
                w = en.worst_eps([r.delta])[0]
                if compositions > 1:
                    d = r.delta + allow
                    lo = 0.0 if d >= 1.0 else (tight_epsilon(en.pair(w), [d], compositions=compositions,
                                                             **numerics)[0].eps_lower or 0.0)
                else:
                    lo = w.lower
                out.append(replace(r, eps_lower=lo))
            else:
                out.append(r)
                continue
            used.append(w.describe())
        how = "composed, a lower bound on the composition" if compositions > 1 else "its exact delta"
        return out, [f"explicit neighbouring data sets {d} ({how}; the worst of {en.pairs} enumerated ordered pairs "
                     "at the question, exact.enumeration)" for d in dict.fromkeys(used)]

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
