"""Tight (eps, delta) accounting of neighbouring pairs, single use and composed, as certified intervals.

User-facing entry points: :func:`tight_delta`, :func:`tight_epsilon` (which go through the one engine choice of
:mod:`.choice`: this accountant, or the bucket rows of :mod:`.bucketed` for very large pairs in row form) and, to
reuse the built PLDs and FFT results across many eps / delta values, :class:`TightAccountant`.

How an answer is obtained (the ``notes`` of every result say which path was taken):

* **single use** - exact hockey-stick divergence over the atoms of the PLD, in log space
  (:mod:`.pld`; seed 001 eq 2.3 with n_c = 1); for a pair in row form
  (:class:`~.binomial_rows.BinomialRows`), exact over its rows in O(rows) per eps (:class:`~.rows_pld.RowsPLD`);
* **small compositions** - exact pairwise convolution of the atoms when the composed support stays
  below ``exact_max_atoms`` (:func:`.exact_compose.compose_exact`);
* **otherwise** - the Fourier accountant of seed 001 (§2.2, Algorithm 1) on a grid with certified
  aliasing/truncation and round-off bounds and, for deltas below the plain FFT's round-off floor,
  exponential tilting (:mod:`.fft`).  Placement: "split" (default; a dominating pair, second-order
  accurate, one FFT per direction) or "lemma6" (seed 001 Lemma 6: omega^R / omega^L, first order, two
  FFTs).  The grid spacing h and window are chosen from ``target_accuracy`` and the result is
  *verified*: if the certified relative width (delta_upper - delta_lower)/delta_upper exceeds the
  target, the grid is refined; if the target cannot be met within ``max_grid_size``, a 2-fold
  composition is composed exactly (pairwise, when its support allows) and otherwise the best
  certified interval is returned with ``accuracy_met=False`` and a note saying why (an
  :class:`~shufflesim.errors.AccuracyError` is kept for invalid questions only).  To stay fast for supports of 10^6-10^7 outcomes, atoms whose total
  mass is far below the accuracy needed are pruned into the dropped tail (upper bound only; the
  budget is tightened if that tail ever shows in the width), and very large components are split
  once onto a fine base grid from which every coarser split follows exactly.  A pair in row form is
  never expanded: its atoms are streamed block by block onto that base grid
  (:func:`~.rows_stream.rows_base_split`, memory O(block + grid points)), streamed again onto a finer one if a
  grid finer than the base is ever needed;
* **Chernoff fallback** - with ``tilt=False``, deltas below the plain FFT's round-off floor are
  reported as the Chernoff upper bound and the product-event lower bound of :mod:`.tails` (flagged
  in ``notes``), never as round-off.

Pairs are :class:`~.pmf_pair.PMFPair`, :class:`~.binomial_rows.BinomialRows` (row form) or an already built
PLD.  Heterogeneous compositions: ``pairs`` may be a sequence of pairs (P_i, Q_i); the composed pair is
(P_1 x ... x P_r, Q_1 x ... x Q_r) (seed 001 Theorem 5, Theorem 7), and ``compositions = c`` repeats
the whole list c times (each pair is used c times).

Invariants of every answer: 0 <= delta_lower <= delta_upper <= 1; delta_upper is non-increasing and
delta_lower non-increasing in eps over the eps values of one call (bounds are tightened across the
eps values of a call using the monotonicity of delta(eps), which keeps them valid); delta_upper is never
below the true delta of the pair(s) as given (the log-PMFs taken as exact; for FFT results, under the
stated round-off model of the FFT itself, see :mod:`.fft`, which the tests check with a wide margin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import AccuracyError, ParameterError, ShufflesimError
from shufflesim.accounting.numerics.invert import calibrate, eps_interval, eps_interval_grid, shortest_certified
from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.pld.discretisation import REFINE_AIM, Discretisation, discretisation_from
from shufflesim.accounting.pld.exact_compose import compose_two
from shufflesim.accounting.pld.fft import GridComposition, Window, choose_window, compose_grid
from shufflesim.accounting.numerics.logspace import NEG_INF, REL_SLACK, U, exp_clamped, exp_down, exp_up, sum_up
from shufflesim.accounting.pld.placement import BaseSplit, base_split, discretise, discretise_base
from shufflesim.accounting.pld.distribution import LossAtoms, PrivacyLossDistribution
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.model.queries import check_compositions, check_delta, check_eps
from shufflesim.accounting.rows.rows_pld import RowsPLD
from shufflesim.accounting.rows.rows_stream import RowsComponent, rows_spread
from shufflesim.accounting.model.provenance import Accuracy, Fallback, Provenance
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.accounting.pld.tails import chernoff_log_delta, composed_log_inf_mass, composed_tail, tail_delta_interval


#: components with more atoms than this (after pruning) are split once onto a base grid of spacing
#: max(range / BASE_POINTS, first grid spacing / 256)
BASE_MIN_ATOMS = 200_000
BASE_POINTS = 2**22
#: pairs in row form are streamed onto a base grid of spacing (loss range) / ROWS_BASE_POINTS; a grid
#: finer than that streams them again (see _DirectionFFT._grids_at)
ROWS_BASE_POINTS = 2**19
#: an existing FFT result's tilt is reused at an eps whose Chernoff-optimal tilt is within this relative
#: distance (see _DirectionFFT.ensure)
LAM_REUSE = 0.1
#: the accuracy fallback composes a 2-fold composition exactly (pairwise) up to this many composed atoms
#: (about 2 s and 0.5 GB at the limit)
FALLBACK_MAX_ATOMS = 8_000_000
#: eps_rtol path: the delta accuracy asked at eps(delta) is this share of eps_rtol x the log-slope x eps
EPS_RTOL_TAU = 0.5
#: eps_rtol path: a direction's refinement stops when it narrowed the eps interval to more than this share of its
#: width before (TightAccountant._epsilon_rtol)
STALL = 0.9
#: eps_rtol path: whether the refinement at the estimate of eps(delta) may stop early at all (False: the search
#: before issue 21's session 6, for bench/bench_compose_thousandfold.py's same-process ratio)
EPS_RTOL_STOP = True


@dataclass(frozen=True)
class Numerics:
    """Numerical knobs of the tight accountant (all explicit; defaults in brackets).

    target_accuracy  relative width (delta_upper - delta_lower)/delta_upper to certify [1e-3];
                     (refinement aims at it; answers that miss it carry accuracy_met=False);
                     None: aim at 1e-3
    max_grid_size    largest FFT length allowed [2**22]
    L, m             overrides in Koskela et al.'s terms: window [-L, L) and/or grid size m (h = 2L/m
                     when both are given; with m alone h is chosen so that the needed window fits
                     in m points) [None: chosen automatically].  A too small L is never hidden:
                     the mass outside the window is bounded and shows up in the interval
    tilt             allow exponential tilting below the round-off floor [True]; False falls back to
                     the Chernoff/product-event bounds of :mod:`.tails` there
    discretisation   "split" (mass- and Q-mass-preserving split between neighbouring grid points,
                     second-order accurate, one FFT per direction) or "lemma6" (seed 001 Lemma 6:
                     losses rounded up for the upper bound and down for the lower bound, first-order
                     accurate, two FFTs per direction) ["split"]
    exact_max_atoms  compose exactly (pairwise convolution) while the composed support stays below
                     this many atoms [100_000]
    eps_tol          absolute tolerance of eps in :meth:`TightAccountant.epsilon` root finding [1e-9]
    absolute_accuracy  an interval narrower than this is accepted even if its relative width is
                     larger (e.g. deltas that are zero up to rounding) [0.0]
    max_refinements  grid refinements before giving up [4]
    workers          threads for scipy.fft [1]
    eps_rtol         :meth:`TightAccountant.epsilon` on the FFT path: the relative width
                     (eps_upper - eps_lower)/eps_upper to aim at; the delta accuracy asked at eps(delta)
                     then follows it (about eps_rtol times the log-slope of delta(eps)), so the grid is
                     only as fine as the eps asked needs, not as fine as target_accuracy in delta would
                     make it (issue 21).  accuracy_met then says whether eps_rtol was met [None: the
                     delta accuracy target_accuracy at eps(delta)]
    refine_aim       a refined grid aims at this share of the width needed, by the discretisation's model
                     of the width (second order in h for "split"): smaller leaves more margin for the
                     model's error, larger builds smaller grids but may need one refinement more; only
                     the grids change, every answer stays certified [0.4]
    """

    target_accuracy: float | None = 1e-3
    max_grid_size: int = 2**22
    L: float | None = None
    m: int | None = None
    tilt: bool = True
    discretisation: str | Discretisation = "split"
    exact_max_atoms: int = 100_000
    eps_tol: float = 1e-9
    absolute_accuracy: float = 0.0
    max_refinements: int = 4
    workers: int = 1
    eps_rtol: float | None = None
    refine_aim: float = REFINE_AIM

    def __post_init__(self) -> None:
        if self.target_accuracy is not None:
            check_real("target_accuracy", self.target_accuracy, low=0.0, high=1.0, low_open=True, high_open=True)
        check_int("max_grid_size", self.max_grid_size, minimum=64)
        if self.L is not None:
            check_real("L", self.L, low=0.0, low_open=True)
        if self.m is not None:
            check_int("m", self.m, minimum=64)
            if self.L is None:
                pass
        check_int("exact_max_atoms", self.exact_max_atoms, minimum=1)
        check_real("eps_tol", self.eps_tol, low=0.0, low_open=True)
        check_real("absolute_accuracy", self.absolute_accuracy, low=0.0, high=1.0)
        check_int("max_refinements", self.max_refinements, minimum=0)
        check_int("workers", self.workers, minimum=1)
        if self.eps_rtol is not None:
            check_real("eps_rtol", self.eps_rtol, low=0.0, high=1.0, low_open=True, high_open=True)
        check_real("refine_aim", self.refine_aim, low=0.0, high=1.0, low_open=True)
        discretisation_from(self.discretisation)  # validates the name
        if not isinstance(self.tilt, bool):
            raise ParameterError(f"tilt must be True or False; got {self.tilt!r}")

    @property
    def strategy(self) -> Discretisation:
        """The discretisation strategy object named by (or given as) ``discretisation``."""
        return discretisation_from(self.discretisation)


#: the pair types the accountant takes (a BinomialRows is a pair in row form, see :mod:`.pairs`)
PAIR_TYPES = (PMFPair, PrivacyLossDistribution, BinomialRows, RowsPLD)


def _as_pld(p) -> PrivacyLossDistribution | RowsPLD:
    if isinstance(p, (PrivacyLossDistribution, RowsPLD)):
        return p
    if isinstance(p, PMFPair):
        return PrivacyLossDistribution.from_pair(p)
    if isinstance(p, BinomialRows):
        return RowsPLD.from_rows(p)
    raise ParameterError(f"pairs must be PMFPair, BinomialRows or PrivacyLossDistribution objects; got {type(p).__name__}")


def _atoms_of(c) -> LossAtoms:
    """The LossAtoms of a component (a RowsComponent or BaseSplit stands in with its base atoms)."""
    return c if isinstance(c, LossAtoms) else c.atoms


# ---------------------------------------------------------------------------------------------
# one direction, FFT path
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class _Result:
    lam: float
    h: float
    comps: tuple[GridComposition, ...]
    span: float  #: loss range the window needs (for the next refinement); >= the window with L fixed
    how: str = ""  #: the discretisation strategy's description (for the notes)

    def interval(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = np.zeros(eps.shape)
        up = np.ones(eps.shape)
        for c in self.comps:
            l2, u2 = c.interval(eps)
            lo = np.maximum(lo, l2)
            up = np.minimum(up, u2)
        return lo, up

    def fixed_error(self, eps: float) -> float:
        return float(sum(c.fixed_error(eps)[0] for c in self.comps))

    def ratio(self, eps: float) -> float:
        return self.comps[0].ratio(eps)

    @property
    def M(self) -> int:
        return max(c.M for c in self.comps)

    def note(self) -> str:
        c = self.comps[0]
        w = c.window
        how = self.how
        return (f"FFT grid h={self.h:.3g}, window [{w.lo * self.h:.4g}, {(w.lo + w.M) * self.h:.4g}) "
                f"(L~{max(abs(w.lo), abs(w.lo + w.M)) * self.h:.3g}, m={w.M}), tilt lam={self.lam:.4g}, {how}")


class _DirectionFFT:
    """Adaptive FFT accounting of one direction (components = [(atoms, count)]).

    A component is a :class:`LossAtoms` or a :class:`~.fft.RowsComponent` (a pair in row form whose
    atoms are streamed onto a base grid of spacing ``h_base``, shared by all components; every grid
    spacing used is then a multiple of it, and a finer one re-streams the rows)."""

    def __init__(self, components: list[tuple[LossAtoms | RowsComponent, int]], numerics: Numerics,
                 h_base: float = 0.0):
        self.sources = components
        self._rows = any(isinstance(c, RowsComponent) for c, _ in components)
        components = [(_atoms_of(c), n) for c, n in components]
        self.components = components
        self.num = numerics
        self.n_total = int(sum(n for _, n in components))
        self.results: list[_Result] = []
        #: eps -> (lower, upper, reason) from the Chernoff/product-event bounds of .tails
        self.tail_bounds: dict[float, tuple[float, float, str]] = {}
        if all(a.size for a, _ in components):
            mt = float(sum(n * (a.max_loss + a.loss_tol) for a, n in components))
            self.max_total = mt + 4 * U * abs(mt)
        else:
            self.max_total = NEG_INF
        self._grids: dict[tuple[float, float], list] = {}
        self.log_inf = composed_log_inf_mass(components)
        self.tail = composed_tail(components)
        #: current pruning budget (log of the mass each component may drop into its tail)
        self.log_budget = math.inf
        self._work: dict[tuple[float, bool], list] = {}
        # large components are split once onto a fine common base grid (placement "split" only)
        self.h_base = 0.0  # 0: no base grid; fixed at the first grid request (see _grids_at)
        self._base_spread = 0.0
        if self._rows:
            self.h_base = float(h_base)  # the accountant expands rows for discretisation="lemma6"
        elif numerics.strategy.uses_base_grid:
            large = [a for a, _ in components if a.size > BASE_MIN_ATOMS]
            if large:
                self._base_spread = max(a.max_loss - a.min_loss + 2 * a.loss_tol for a in large)
                self.h_base = -1.0
        #: components for the Chernoff heuristics (choice of lam, pruning budget)
        self.heuristic_components = components

    def work_components(self, use_base: bool = False) -> list:
        """The components with their lightest atoms pruned into the tail (budget ``log_budget``);
        with ``use_base``, those still larger than BASE_MIN_ATOMS as :class:`BaseSplit` objects."""
        b = self.log_budget
        key = (b, use_base)
        if key not in self._work:
            if len(self._work) > 4:
                self._work.clear()
            out = []
            for (a, n), (src, _) in zip(self.components, self.sources):
                if isinstance(src, RowsComponent):
                    out.append((src.base(self.h_base).prune(b), n))
                    continue
                pa = a.prune(b)
                if use_base and self.h_base > 0 and pa.size > BASE_MIN_ATOMS:
                    out.append((base_split(pa, self.h_base), n))
                else:
                    out.append((pa, n))
            self._work[key] = out
        return self._work[key]

    def pruned_tail(self) -> float:
        """Upper-bound increment caused by pruning at the current budget."""
        comps = [(_atoms_of(c), n) for c, n in self.work_components(self._rows)]
        return max(composed_tail(comps) - self.tail, 0.0)

    # ---- helpers
    def chernoff(self, eps: float, exact: bool = True) -> tuple[float, float]:
        key = (float(eps), exact)
        cache = self.__dict__.setdefault("_chern_cache", {})
        if key not in cache:
            if len(cache) > 256:
                cache.clear()
            cache[key] = chernoff_log_delta(self.heuristic_components, eps, exact=exact)
        return cache[key]

    def _grids_at(self, h: float) -> tuple[float, list]:
        """(effective h, grid components per placement); with a base grid, h is rounded down to a
        multiple of h_base (unless h is finer than h_base, then the atoms are split directly)."""
        use_base = False
        if self.h_base < 0:
            # fine enough for ~8 refinements of the first (coarse) grid, at most BASE_POINTS cells
            self.h_base = max(self._base_spread / BASE_POINTS, h / 256, 1e-300)
        if self._rows and h < self.h_base:
            # finer than the rows' base grid: stream them again onto a finer one
            self.h_base = h / 16
            self._work.clear()
            self._grids.clear()
        if self.h_base > 0 and h >= self.h_base:
            m = int(math.floor(h / self.h_base))
            h = m * self.h_base
            use_base = True
        key = (h, self.log_budget)
        if key not in self._grids:
            if len(self._grids) > 6:
                self._grids.clear()
            placements = self.num.strategy.placements
            comps = self.work_components(use_base)
            grids = []
            for pl in placements:
                row = []
                for c, n in comps:
                    if isinstance(c, BaseSplit):
                        row.append((discretise_base(c, int(round(h / c.h_b))), n))
                    else:
                        row.append((discretise(c, h, pl), n))
                grids.append(row)
            self._grids[key] = grids
        return h, self._grids[key]

    def _initial_h(self, lam: float) -> float:
        """A coarse first grid: 1/100 of the tilted standard deviation of S, but never so fine that the
        whole composed support would need more than a quarter of max_grid_size points."""
        var = 0.0
        total_spread = 0.0
        for a, n in self.heuristic_components:
            _, v = a.sketch.tilted_moments(lam)
            var += n * v
            if a.size:
                total_spread += n * (a.max_loss - a.min_loss)
        s = math.sqrt(var)
        if not s > 0:
            s = max(total_spread, 1e-6)
        floor = total_spread / (self.num.max_grid_size / 4)
        return max(s / 100, floor, 1e-12)

    def build(self, lam: float, h: float, tau_w: float) -> _Result:
        num = self.num
        out = []
        h, grids = self._grids_at(h)
        span = 0.0
        for comps in grids:
            log_cs = [g.log_mgf(lam) for g, _ in comps]
            if num.L is not None:
                lo = int(math.floor(-num.L / h))
                M = num.m if num.m is not None else int(math.ceil(2 * num.L / h))
                if M > num.max_grid_size and num.m is None:
                    raise AccuracyError(
                        f"window [-L, L) with L={num.L} at spacing h={h:.3g} needs {M} grid points "
                        f"(> max_grid_size={num.max_grid_size}); raise max_grid_size or loosen target_accuracy")
                win = Window(lo, M)
                span = max(span, 2 * num.L)
            elif num.m is not None:
                # grid size fixed: centre the window the tail bounds ask for on m points
                need = choose_window(comps, lam, log_cs, tau_w, 2**62)
                win = Window(need.lo - (num.m - need.M) // 2, num.m)
                span = max(span, need.M * h)
            else:
                win = choose_window(comps, lam, log_cs, tau_w, num.max_grid_size)
                span = max(span, win.M * h)
            out.append(compose_grid(comps, lam=lam, window=win, workers=num.workers))
        res = _Result(lam, h, tuple(out), span, num.strategy.description)
        self.results.append(res)
        return res

    def fft_interval(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best certified FFT interval over all results built so far (min of uppers, max of lowers)."""
        lo = np.zeros(eps.shape)
        up = np.ones(eps.shape)
        for r in self.results:
            l2, u2 = r.interval(eps)
            lo = np.maximum(lo, l2)
            up = np.minimum(up, u2)
        return lo, np.maximum(up, lo)

    def interval(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best certified interval: FFT results, the exact zero beyond the largest loss, tail bounds."""
        lo, up = self.fft_interval(eps)
        beyond = eps >= self.max_total
        if np.any(beyond):
            inf_up = min(1.0, sum_up(exp_up(self.log_inf + math.log1p(REL_SLACK)), self.tail))
            inf_lo = exp_down(self.log_inf + math.log1p(-REL_SLACK))
            up = np.where(beyond, np.minimum(up, inf_up), up)
            lo = np.where(beyond, np.maximum(lo, inf_lo), lo)
        for i, e in enumerate(eps):
            tb = self.tail_bounds.get(float(e))
            if tb is not None:
                lo[i] = max(lo[i], tb[0])
                up[i] = min(up[i], tb[1])
        return lo, np.maximum(up, lo)

    def _fixed_error(self, r: _Result, eps: float) -> float:
        """Part of the width of r's interval at eps that does not shrink with h (round-off, tails)."""
        return r.fixed_error(eps)

    def _add_tails(self, eps: float, reason: str) -> None:
        if float(eps) not in self.tail_bounds:
            tl, tu = tail_delta_interval(self.components, np.array([eps]))
            self.tail_bounds[float(eps)] = (float(tl[0]), float(tu[0]), reason)

    # ---- the adaptive procedure
    def ensure(self, eps: float, ref: float, tau: float | None = None, stop=None) -> str:
        """Certify the interval at eps to the target accuracy.

        Returns "fft" (certified by the FFT), "exact" (eps beyond the largest loss), "tails"
        (Chernoff fallback: below the round-off floor with tilting disabled, or the tail bounds meet
        the target where the FFT could not), "fail" (target not met) or "stopped" (``stop(step)``, asked
        before every refinement, said that refining here no longer serves the caller: the eps search of
        :meth:`TightAccountant._epsilon_rtol`, whose answer is the eps interval, not the delta one at eps).  One loop of ~90 lines: every
        branch updates the same refinement state (tilt, spacing, window tolerance, pruning budget).
        """
        num = self.num
        if tau is None:
            tau = num.target_accuracy if num.target_accuracy is not None else 1e-3
        e = np.array([eps])

        def good() -> bool:
            lo, up = self.interval(e)
            return float(up[0] - lo[0]) <= max(tau * max(float(up[0]), ref), num.absolute_accuracy)

        if eps >= self.max_total:
            return "exact"
        if float(eps) in self.tail_bounds:
            return "tails" if good() or self.tail_bounds[float(eps)][2] == "floor" else "fail"
        if self.results and good():
            return "fft"
        log_ch, lam_star = self.chernoff(eps)
        if not math.isfinite(lam_star):
            lam_star = 0.0
        # prune atoms whose total mass is far below the accuracy needed here (Chernoff >= delta)
        budget = math.log(1e-9 * tau) + max(log_ch, math.log(1e-300)) - math.log(max(self.n_total, 1))
        if budget < self.log_budget:
            self.log_budget = budget
        lam = 0.0
        if num.tilt and log_ch < math.log(1e-3):
            lam = lam_star
            # an existing tilt close to this eps's Chernoff-optimal one is as good (any lam >= 0 is certified,
            # module docstring of .fft; 5% off the optimum costs ~0.5 var (0.05 lam)^2 nats of relative
            # accuracy, ~0.2 at log delta ~ -20): reuse it and continue its refinement instead of
            # restarting from the coarse grid at every eps the search visits
            tilts = [r.lam for r in self.results if r.lam > 0]
            if tilts:
                near = min(tilts, key=lambda t: abs(t - lam_star))
                if abs(near - lam_star) <= LAM_REUSE * lam_star:
                    lam = near
        tau_w = 1e-7 * tau
        same = [r for r in self.results if r.lam == lam]
        if same:
            r = min(same, key=lambda r: r.h)
            h = r.h
        else:
            h = 2 * num.L / num.m if (num.L is not None and num.m is not None) else self._initial_h(lam)
            r = self.build(lam, h, tau_w)
        for step in range(num.max_refinements + 1):
            if good():
                return "fft"
            if stop is not None and stop(step):
                return "stopped"
            lo, up = r.interval(e)
            width = float(up[0] - lo[0])
            need = max(tau * max(float(up[0]), ref), num.absolute_accuracy)
            if self.tail > 0:
                # the pairs' own truncated mass is part of the width whatever the grid: refine the rest
                width = max(width - self.tail, 0.0)
                if width <= need:
                    break
            fixed = self._fixed_error(r, eps)
            pruned = self.pruned_tail()
            if pruned > 0.1 * need:
                self.log_budget -= math.log(1e8)
                r = self.build(lam, h, tau_w)
                continue
            fixed += pruned
            if fixed > 0.25 * need:
                if lam == 0.0 and num.tilt and lam_star > 0:
                    lam = lam_star
                    h = self._initial_h(lam)
                    r = self.build(lam, h, tau_w)
                    continue
                if lam == 0.0 and not num.tilt:
                    self._add_tails(eps, "floor")
                    return "tails"
                tau_w *= 1e-6
            if num.L is not None and num.m is not None:
                break
            disc = max(width - fixed, 1e-300)
            h_new = num.strategy.refined_spacing(h, need, disc, ratio=lambda: r.ratio(eps), tau=tau,
                                                 n_total=self.n_total, aim=num.refine_aim)
            h_new = min(h_new, h / 1.5)
            width_loss = r.span
            limit = num.m if num.m is not None else num.max_grid_size
            if width_loss / h_new > 0.95 * limit:
                h_new = width_loss / (0.95 * limit)
                if h_new >= h * 0.999:
                    break
            built = None
            for _retry in range(4):
                try:
                    built = self.build(lam, h_new, tau_w)
                    break
                except AccuracyError:
                    # the window (widened by a smaller tau_w) needs more than max_grid_size points at
                    # h_new: a somewhat coarser grid may still fit and narrow the interval
                    h_new *= 1.3
                    if h_new >= h * 0.999:
                        break
            if built is None:
                break
            h, r = h_new, built
        if good():
            return "fft"
        self._add_tails(eps, "accuracy")
        return "tails" if good() else "fail"


# ---------------------------------------------------------------------------------------------
# the accountant
# ---------------------------------------------------------------------------------------------

class TightAccountant:
    """Tight accountant for one pair used ``compositions`` times, or a list of pairs (heterogeneous).

    Build once, then call :meth:`delta` / :meth:`epsilon` as often as needed: PLDs, exact
    compositions and FFT results are cached and reused across eps / delta values.
    """

    def __init__(self, pairs, *, compositions: int = 1, **numerics):
        self.numerics = Numerics(**numerics)
        self.compositions = check_compositions(compositions, pair_based=True)
        self._args = (pairs, self.compositions, dict(numerics))  # a fresh accountant's (_shortest_upper)
        self._stop = None  # the eps_rtol search's early stop while it runs (_epsilon_rtol)
        if isinstance(pairs, PAIR_TYPES):
            plist = [pairs]
        else:
            try:
                plist = list(pairs)
            except TypeError:
                raise ParameterError(f"pairs must be a PMFPair or a sequence of them; got {type(pairs).__name__}") from None
            if not plist:
                raise ParameterError("pairs must contain at least one pair")
        # group identical objects
        groups: dict[int, list] = {}
        for p in plist:
            groups.setdefault(id(p), [p, 0])[1] += 1
        self.plds: list[tuple[PrivacyLossDistribution | RowsPLD, int]] = [
            (_as_pld(p), cnt * self.compositions) for p, cnt in groups.values()
        ]
        self.n_total = sum(c for _, c in self.plds)
        self.symmetric = all(p.symmetric for p, _ in self.plds)
        self._exact: PrivacyLossDistribution | RowsPLD | None = None
        self._mode = "fft"
        self._mode_reason = (f"the composed support exceeds exact_max_atoms={self.numerics.exact_max_atoms}: certified "
                             "FFT composition")
        if self.n_total == 1:
            self._exact = self.plds[0][0]
            self._mode = "exact"
            self._mode_reason = "single use: exact over the atoms or rows"
        else:
            try:
                plds = self._small_plds()
                pq = _try_exact([(p.pq, c) for p, c in plds], self.numerics.exact_max_atoms)
                qp = pq if self.symmetric else _try_exact([(p.qp, c) for p, c in plds], self.numerics.exact_max_atoms)
            except _TooBig:
                pass
            else:
                self._exact = PrivacyLossDistribution(pq, qp, "composed", {}, "exact pairwise composition")
                self._mode = "exact-composed"
                self._mode_reason = (f"the composed support fits in exact_max_atoms={self.numerics.exact_max_atoms}: "
                                     "exact pairwise composition")
        self._dirs: list[_DirectionFFT] = []
        if self._mode == "fft" and not self.numerics.strategy.uses_base_grid:
            # omega^R / omega^L placement rounds every atom: expand pairs in row form into atoms
            self.plds = [(p.to_pld() if isinstance(p, RowsPLD) else p, c) for p, c in self.plds]
            self.symmetric = all(p.symmetric for p, _ in self.plds)
        if self._mode == "fft":
            ndir = 1 if self.symmetric else 2
            h_base = self._rows_base_spacing()
            for d in range(ndir):
                comps = [(RowsComponent(p.rows if d == 0 else p.rows.mirrored(), h_base) if isinstance(p, RowsPLD)
                          else p.directions[d], c) for p, c in self.plds]
                self._dirs.append(_DirectionFFT(comps, self.numerics, h_base))

    def _small_plds(self, max_atoms: int | None = None) -> list[tuple[PrivacyLossDistribution, int]]:
        """The PLDs as atoms for exact composition; pairs in row form are expanded only when the
        composed support could fit in ``max_atoms`` (default exact_max_atoms; raises _TooBig otherwise)."""
        limit = self.numerics.exact_max_atoms if max_atoms is None else max_atoms
        if any(isinstance(p, RowsPLD) for p, _ in self.plds):
            log_size = 0.0  # in logs: size ** c for c = 10**6 compositions is an integer of millions of digits
            for p, c in self.plds:
                log_size += c * math.log(max(p.size, 1))
                if log_size > math.log(limit):
                    raise _TooBig
        return [(p.to_pld() if isinstance(p, RowsPLD) else p, c) for p, c in self.plds]

    def _rows_base_spacing(self) -> float:
        """Common base-grid spacing for the pairs in row form: their widest loss range / ROWS_BASE_POINTS."""
        spread = 0.0
        for p, _ in self.plds:
            if isinstance(p, RowsPLD):
                for rows in ((p.rows,) if p.symmetric else (p.rows, p.rows.mirrored())):
                    spread = max(spread, rows_spread(rows))
        return max(spread / ROWS_BASE_POINTS, 1e-12) if spread > 0 else 1e-6

    @property
    def mode(self) -> str:
        """"exact" (single use), "exact-composed" (pairwise convolution) or "fft"."""
        return self._mode

    @property
    def mode_reason(self) -> str:
        """Why :attr:`mode` was chosen (recorded by :mod:`.choice` as part of an answer's ``engine_reason``)."""
        return self._mode_reason

    # ------------------------------------------------------------------ delta
    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray, list[tuple[str, ...]]]:
        """(lower, upper, notes) for an array of eps (no monotone post-processing); see :meth:`answers`."""
        ans = self.answers(eps)
        return (np.array([a.lower for a in ans]), np.array([a.upper for a in ans]), [a.notes for a in ans])

    def answers(self, eps, tau: float | None = None) -> list[DeltaBound]:
        """The best certified interval at each eps, and whether it meets the target accuracy (its provenance's
        :class:`~.provenance.Accuracy`), without the monotone tightening of :meth:`delta`.

        Never raises for a target that is out of reach: the FFT grid is refined up to
        ``max_grid_size``; where that is not enough the cheap remedy is tried (exact pairwise
        composition of the atoms, see :meth:`_fallback_exact`) and, if the target is still out of
        reach, the best certified interval is returned with ``accuracy_met=False`` and a note saying why.
        """
        eps = check_eps(eps)
        if self._exact is not None:
            lo, up = self._exact.delta_interval(eps)
            if isinstance(self._exact, RowsPLD):
                note = self._exact.note()
            else:
                n = self._exact.pq.size + (0 if self.symmetric else self._exact.qp.size)
                what = "single use" if self._mode == "exact" else f"exact pairwise composition, n_c={self.n_total}"
                note = f"exact over {n} atoms ({what})"
            eps_max = self._eps_max()
            tail = (float(self._exact.tail) if isinstance(self._exact, RowsPLD)
                    else max(float(d.tail) for d in self._exact.directions))
            return [self._judge(float(e), float(l), float(u), (note,), float(e) >= eps_max, tail, engine=self._mode)
                    for e, l, u in zip(eps, lo, up)]
        return [self._fft_answer(float(e), tau) for e in eps]

    def _fft_answer(self, e: float, tau: float | None = None) -> DeltaBound:
        """One eps on the FFT path: each direction certified adaptively, the fallback where it fails."""
        e_arr = np.array([e])
        order = sorted(range(len(self._dirs)), key=lambda d: -self._dirs[d].chernoff(e, exact=False)[0])
        ref = 0.0
        dl, du, dn = [], [], []
        failed = []
        beyond = True
        for d in order:
            sol = self._dirs[d]
            status = sol.ensure(e, ref, tau, self._stop)
            lo, up = sol.interval(e_arr)
            if status == "fail":
                failed.append(sol)
            beyond = beyond and status == "exact"
            dn.extend(self._notes(sol, status, e_arr))
            ref = max(ref, float(lo[0]))
            dl.append(float(lo[0]))
            du.append(float(up[0]))
        lo_e, up_e = max(dl), max(du)
        tail = max(sol.tail for sol in self._dirs)
        if failed and not self._tail_dominates(lo_e, up_e, tail):
            exact = self._fallback_exact()
            if exact is not None:
                xl, xu = exact.delta_interval(e_arr)
                lo_e, up_e = max(lo_e, float(xl[0])), min(up_e, float(xu[0]))
                lo_e = min(lo_e, up_e)
                dn.append(Fallback("exact-pairwise", (exact.pq.size, exact.qp.size)))
        dn.append(f"composed n_c={self.n_total} ({len(self.plds)} distinct pair(s))")
        return self._judge(e, lo_e, up_e, tuple(dict.fromkeys(dn)), beyond, tail, tau, engine="fft")

    def _judge(self, e: float, lo: float, up: float, items: tuple, beyond: bool, tail: float,
               tau: float | None = None, engine: str | None = None) -> DeltaBound:
        """The answer at ``e`` with ``accuracy_met`` set honestly and the verdict recorded (an
        :class:`~.provenance.Accuracy` after ``items``, saying why when the target is not met).

        The target is met when the relative width (up - lo)/up is within ``target_accuracy`` (1e-3 when
        None), or the width within ``absolute_accuracy``, or eps is beyond the largest finite loss
        (where the finite part is exactly 0 and only the infinite-loss mass and the pairs' truncated
        mass remain, as on the FFT path)."""
        num = self.numerics
        if tau is None:
            tau = num.target_accuracy if num.target_accuracy is not None else 1e-3
        met = bool(beyond or (up - lo) <= max(tau * up, num.absolute_accuracy))
        cause = None if met else ("truncation" if self._tail_dominates(lo, up, tail) else "grid")
        verdict = Accuracy(met, "delta", tau, lo, up, at=e, cause=cause, tail=tail, max_grid_size=num.max_grid_size)
        return DeltaBound(e, up, lo, "tight", accuracy_met=met,
                          provenance=Provenance(items=tuple(items) + (verdict,), engine=engine))

    @staticmethod
    def _tail_dominates(lo: float, up: float, tail: float) -> bool:
        """True when the pairs' truncated mass makes up more than half the width (no grid can help)."""
        return tail > 0.5 * (up - lo)

    def _fallback_exact(self) -> PrivacyLossDistribution | None:
        """Exact pairwise composition of the atoms, built once, when the composition is 2-fold and the
        composed support has at most ``FALLBACK_MAX_ATOMS`` atoms (else None)."""
        if "_fallback" not in self.__dict__:
            self._fallback = None
            if self.n_total == 2:
                try:
                    plds = self._small_plds(FALLBACK_MAX_ATOMS)
                    pq = _try_exact([(p.pq, c) for p, c in plds], FALLBACK_MAX_ATOMS)
                    qp = pq if self.symmetric else _try_exact([(p.qp, c) for p, c in plds], FALLBACK_MAX_ATOMS)
                except _TooBig:
                    pass
                else:
                    self._fallback = PrivacyLossDistribution(pq, qp, "composed", {}, "exact pairwise composition")
        return self._fallback

    @staticmethod
    def _notes(sol: _DirectionFFT, status: str, e_arr: np.ndarray) -> list:
        """One direction's provenance items at one eps: free text and the :class:`~.provenance.Fallback` taken."""
        out: list = []
        tb = sol.tail_bounds.get(float(e_arr[0]))
        if status == "exact":
            out.append("eps beyond the largest composed loss: finite part exactly 0")
        elif status in ("tails", "fail") and tb is not None and tb[2] == "floor":
            out.append(Fallback("chernoff-floor"))
        elif status in ("tails", "fail") and tb is not None:
            out.append(Fallback("tail-bounds"))
        if status == "fail":
            out.append(Fallback("grid-short"))
        if sol.results and status != "exact":
            best = min(sol.results, key=lambda r: float(r.interval(e_arr)[1][0]))
            out.append(best.note())
        return out

    def delta(self, eps) -> list[DeltaBound]:
        """Certified bounds on delta(eps) for a scalar or list of eps >= 0."""
        eps_arr = check_eps(eps)
        order = np.argsort(eps_arr, kind="stable")
        ans = self.answers(eps_arr[order])
        lo = np.array([a.lower for a in ans])
        up = np.array([a.upper for a in ans])
        # monotone tightening: delta is non-increasing in eps, so both stay valid
        up = np.minimum.accumulate(up)
        lo = np.maximum.accumulate(lo[::-1])[::-1]
        lo = np.minimum(lo, up)
        out: list[DeltaBound | None] = [None] * eps_arr.size
        for rank, idx in enumerate(order):
            a = ans[rank]
            met, prov = a.accuracy_met, a.provenance
            if not met:  # the monotone tightening can only narrow an interval: re-judge the accuracy on the result
                j = self._judge(float(eps_arr[idx]), float(lo[rank]), float(up[rank]), (), False, 0.0)
                if j.accuracy_met:  # the verdict recorded is the one the field says (not the earlier interval's)
                    met, prov = True, prov.without(Accuracy).add(*([j.provenance.accuracy] if j.provenance.accuracy else []))
            out[idx] = DeltaBound(float(eps_arr[idx]), float(up[rank]), float(lo[rank]), "tight", accuracy_met=met,
                                  provenance=prov)
        return out  # type: ignore[return-value]

    # ------------------------------------------------------------------ epsilon
    def _combined(self, eps: float) -> tuple[float, float]:
        e = np.array([eps])
        if self._exact is not None:
            lo, up = self._exact.delta_interval(e)
            return float(lo[0]), float(up[0])
        lo = 0.0
        up = 0.0
        for sol in self._dirs:
            l2, u2 = sol.interval(e)
            lo = max(lo, float(l2[0]))
            up = max(up, float(u2[0]))
        fb = self.__dict__.get("_fallback")
        if fb is not None:  # the accuracy fallback, once built, is another certified interval
            xl, xu = fb.delta_interval(e)
            lo, up = max(lo, float(xl[0])), min(up, float(xu[0]))
        return lo, max(up, lo)

    def _combined_vec(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_combined` at many eps at once (FFT path): every direction's best certified interval
        (one vectorised pass over each composed grid's suffix sums), the accuracy fallback if built."""
        eps = np.asarray(eps, dtype=float)
        lo = np.zeros(eps.shape)
        up = np.zeros(eps.shape)
        for sol in self._dirs:
            l2, u2 = sol.interval(eps)
            lo = np.maximum(lo, l2)
            up = np.maximum(up, u2)
        fb = self.__dict__.get("_fallback")
        if fb is not None:
            xl, xu = fb.delta_interval(eps)
            lo, up = np.maximum(lo, xl), np.minimum(up, xu)
        return lo, np.maximum(up, lo)

    def _eps_max(self) -> float:
        if self._exact is not None:
            return max(0.0, self._exact.max_finite_loss()) * (1 + 1e-12) + 1e-300
        return max([0.0] + [s.max_total for s in self._dirs if s.max_total > NEG_INF]) * (1 + 1e-12) + 1e-300

    def epsilon(self, delta) -> list[EpsBound]:
        """Certified interval (eps_lower, eps_upper] for eps(delta) = min{eps >= 0: delta(eps) <= delta}.

        eps_upper is an evaluated eps with certified delta_upper(eps_upper) <= delta; eps_lower one with
        certified delta_lower(eps_lower) > delta (0 if none).  Composed case: the grid is refined at
        the current estimate of eps(delta) until the delta interval there meets the target accuracy.
        """
        deltas = check_delta(delta)
        num = self.numerics
        out = []
        eps_max = self._eps_max()
        for d in deltas:
            d = float(d)
            if self._exact is not None:
                lo_e, up_e = _eps_interval_exact(self._combined, d, eps_max, num.eps_tol)
                out.append(EpsBound(d, float(up_e), float(lo_e), "tight", provenance=self.answers([0.0])[0].provenance))
                continue
            # first guess: where the (sketch) Chernoff bound meets the target; it is >= eps(delta)
            e_guess = self._chernoff_eps(d, eps_max)
            if num.eps_rtol is not None:
                out.append(self._epsilon_rtol(d, e_guess, eps_max))
                continue
            up_e, lo_e = e_guess, 0.0
            for _ in range(num.max_refinements + 2):
                self.answers([e_guess])
                lo_e, up_e = eps_interval_grid(self._combined_vec, d, eps_max, num.eps_tol)
                if not math.isfinite(up_e) or abs(up_e - e_guess) <= 1e-12 + 1e-9 * up_e:
                    break
                e_guess = up_e
            at = up_e if math.isfinite(up_e) else e_guess
            ans = self.answers([at])[0]
            if not ans.accuracy_met:
                # the fallback may have narrowed delta at the estimate: solve again on the best bounds
                lo_e, up_e = eps_interval_grid(self._combined_vec, d, eps_max, num.eps_tol)
            short = self._shortest_upper(d, lo_e, up_e, num.eps_tol)
            prov = ans.provenance.add(SHORT_NOTE.format(short)) if short != up_e else ans.provenance
            out.append(EpsBound(d, float(short), float(lo_e), "tight", accuracy_met=ans.accuracy_met, provenance=prov))
        return out

    def _shortest_upper(self, d: float, lo_e: float, up_e: float, xtol: float) -> float:
        """The FFT path's eps upper end moved to the shortest decimal of (max(lo_e, up_e - xtol - 1e-6 up_e),
        up_e] if the delta query there certifies ``d`` (:func:`~.calibrate.shortest_certified`; otherwise
        unchanged; only an eps of at most :data:`FFT_SHORT_DIGITS` significant digits is tried): first on the grids
        built so far, then on a fresh accountant, whose grid is refined at that eps exactly as :meth:`delta`'s
        is.  Why: an FFT answer depends on the grid it is read from (both certified), and the eps search's grids
        sit near, not at, the eps a protocol reported with delta = delta_upper(eps): recursive-sum (n = 300,
        eps = 1) inverted to 1.000000009 (its search grid's delta_upper(1) is 1.3e-7 relative above the delta
        query's), and 1e-6 covers that grid dependence with margin."""
        if not (math.isfinite(up_e) and up_e > 0.0):
            return up_e
        a = max(0.0, lo_e, up_e - (xtol + 1e-6 * up_e))

        def probe(c: float) -> float:
            up = self.answers([c])[0].upper
            if up <= d:
                return up
            # a typed eps: the grids built for the search sit near it, not at it; a fresh accountant refines at c
            # exactly as the delta query at c does
            pairs, comps, numerics = self._args
            return min(up, TightAccountant(pairs, compositions=comps, **numerics).answers([c])[0].upper)

        return shortest_certified(probe, d, a, up_e, evals=1, max_digits=FFT_SHORT_DIGITS)

    def _epsilon_rtol(self, d: float, e_guess: float, eps_max: float) -> EpsBound:
        """eps(d) on the FFT path with the grid refined only as far as ``eps_rtol`` needs (issue 21).

        A delta interval of relative width tau at eps(delta) gives an eps interval of relative width
        about tau / (s eps), s = -d log delta / d eps (the log-slope, read off the computed upper bound);
        the delta accuracy asked is therefore 0.5 eps_rtol s eps, starting coarse (0.1) and tightened
        until the eps interval meets eps_rtol (or the refinements run out).  Only *where* and *how
        finely* the grid is refined changes: every end is an evaluated, certified point
        (:func:`.calibrate.eps_interval_grid`)."""
        num = self.numerics
        rt = float(num.eps_rtol)
        # first delta accuracy from the Chernoff tilt at the guess (lam* = the log-slope of the Chernoff bound)
        tau_d = 0.1
        slopes = [sol.chernoff(e_guess, exact=False)[1] for sol in self._dirs]
        slopes = [v for v in slopes if math.isfinite(v) and v > 0]
        if slopes and e_guess > 0:
            tau_d = min(0.1, max(EPS_RTOL_TAU * rt * max(slopes) * e_guess, 1e-6))
        last = [math.inf]

        def stop(step: int) -> bool:
            """Issue 21: a direction's refinement at e stops once the eps interval of every grid built so far
            meets eps_rtol (e is only an estimate of eps(delta); the interval is what is asked), or once its last
            refinement narrowed that interval by less than STALL (the interval is held by the other direction or
            by eps itself: refining this one further cannot help; the search goes on with the other direction
            and the next e).  Only which grids are built changes."""
            lo, up = eps_interval_grid(self._combined_vec, d, eps_max, num.eps_tol)
            width = (up - lo) / up if math.isfinite(up) and up > 0 else math.inf
            stalled = step > 0 and math.isfinite(width) and width > STALL * last[0]
            last[0] = width
            return width <= rt or stalled

        self._stop = stop if EPS_RTOL_STOP else None
        try:
            return self._epsilon_rtol_loop(d, e_guess, tau_d, eps_max)
        finally:
            self._stop = None

    def _epsilon_rtol_loop(self, d: float, e: float, tau_d: float, eps_max: float) -> EpsBound:
        num = self.numerics
        rt = float(num.eps_rtol)
        lo_e, up_e, width, state = 0.0, e, math.inf, None
        for _ in range(num.max_refinements + 6):
            self.answers([e], tau_d)
            lo_e, up_e = eps_interval_grid(self._combined_vec, d, eps_max, num.eps_tol)
            if not math.isfinite(up_e):
                break
            now = (sum(len(sol.results) for sol in self._dirs), lo_e, up_e)
            if now == state:
                break  # nothing was built and nothing moved: a smaller tau cannot help here
            state = now
            width = (up_e - lo_e) / up_e if up_e > 0 else 0.0
            if width <= rt:
                break
            moved = abs(up_e - e) > 0.25 * rt * up_e
            x = np.array([up_e, up_e * (1.0 + rt)])
            _, u = self._combined_vec(x)
            want = tau_d / 4
            if u[0] > 0 and u[1] > 0 and u[0] > u[1]:
                slope = (math.log(u[0]) - math.log(u[1])) / (x[1] - x[0])
                want = EPS_RTOL_TAU * rt * slope * up_e
            new = min(max(want, 1e-9), 0.5) if moved else min(tau_d / 2, max(want, 1e-9))
            if not moved and tau_d <= 1e-9:
                break
            tau_d, e = new, up_e
        at = up_e if math.isfinite(up_e) else e
        ans = self.answers([at], tau_d)[0]
        met = math.isfinite(up_e) and width <= rt
        prov = ans.provenance.without(Accuracy)  # the verdict asked here is the eps interval's, not delta's at `at`
        short = self._shortest_upper(d, lo_e, up_e, num.eps_tol)
        prov = prov.add(SHORT_NOTE.format(short)) if short != up_e else prov
        up_e = short
        prov = prov.add(f"grid refined for eps_rtol={rt:g} (delta accuracy {tau_d:.3g} at eps={at:.6g})",
                        Accuracy(bool(met), "eps", rt, lo_e, up_e, width=width))
        return EpsBound(d, float(up_e), float(lo_e), "tight", accuracy_met=bool(met), provenance=prov)

    def _chernoff_eps(self, delta: float, eps_max: float) -> float:
        def chern(x: float) -> float:
            tot = 0.0
            for sol in self._dirs:
                lc, _ = sol.chernoff(x, exact=False)
                tot = max(tot, exp_up(lc) + exp_clamped(sol.log_inf) + sol.tail)
            return tot

        try:
            return calibrate(chern, delta, 0.0, eps_max, increasing=False, xtol=1e-6, rtol=1e-4).x
        except ShufflesimError:
            return eps_max


#: the most significant digits of an eps the FFT path's upper end is moved to (TightAccountant._shortest_upper):
#: its window is 1e-6 relative wide (the grid dependence), which holds a 4-digit decimal for ~1% of answers
FFT_SHORT_DIGITS = 4
#: the note of an FFT-path eps upper end moved to a shorter certified decimal (TightAccountant._shortest_upper)
SHORT_NOTE = "eps upper end {:.10g}: the shortest decimal near the search's end at which the delta query certifies delta"
def _eps_interval_exact(combined, delta: float, eps_max: float, xtol: float) -> tuple[float, float]:
    """Certified (eps_lower, eps_upper) for eps(delta) from ``combined(eps) -> (delta_lower, delta_upper)``: the one
    inverter's log-space search (:func:`.calibrate.eps_interval`, issue 9) on one memoised evaluation of both."""
    memo: dict[float, tuple[float, float]] = {}

    def both(x: float) -> tuple[float, float]:
        if x not in memo:
            memo[x] = combined(x)
        return memo[x]

    return eps_interval(lambda x: both(x)[1], lambda x: both(x)[0], delta, eps_max, search="log", xtol=xtol)


class _TooBig(Exception):
    pass


def _try_exact(components: list[tuple[LossAtoms, int]], max_atoms: int) -> LossAtoms:
    """Exact pairwise composition, abandoned (``_TooBig``) as soon as a step would exceed max_atoms."""
    seq: list[LossAtoms] = []
    for a, n in components:
        seq.extend([a] * int(n))
    out = seq[0]
    for a in seq[1:]:
        if out.size * max(a.size, 1) > max_atoms:
            raise _TooBig
        out = compose_two(out, a, True)
    return out


# ---------------------------------------------------------------------------------------------
# functional interface
# ---------------------------------------------------------------------------------------------

def tight_delta(pairs, eps, *, compositions: int = 1, **numerics) -> list[DeltaBound]:
    """Tight certified delta(eps) for one pair used ``compositions`` times or a list of pairs.

    ``pairs``: a PMFPair (homogeneous: composed ``compositions`` times) or a sequence of PMFPairs
    (heterogeneous: each composed once; ``compositions`` repeats the whole list).  ``eps``: a number
    or list of numbers >= 0.  ``numerics``: see :class:`Numerics`.  Returns one DeltaBound per eps
    (method "tight"; ``notes`` say which path certified it; ``engine``/``engine_reason`` which engine
    :mod:`.choice` chose and why: this accountant, or the bucket rows whose cost does not grow with n).
    """
    from shufflesim.accounting.engines.choice import Question, answer  # the engine choice (it sits below this module)
    check_compositions(compositions, pair_based=True)  # the one question validator (.queries)

    return answer(Question(eps=tuple(check_eps(eps).tolist()), compositions=compositions, numerics=numerics,
                           pairs=pairs, accountant=TightAccountant))[0]


def tight_epsilon(pairs, delta, *, compositions: int = 1, **numerics) -> list[EpsBound]:
    """Tight certified eps(delta) (smallest eps with delta(eps) <= delta); arguments as :func:`tight_delta`."""
    from shufflesim.accounting.engines.choice import Question, answer  # the engine choice (it sits below this module)

    check_compositions(compositions, pair_based=True)  # the one question validator (.queries)
    return answer(Question(delta=tuple(check_delta(delta).tolist()), compositions=compositions, numerics=numerics,
                           pairs=pairs, accountant=TightAccountant))[0]
