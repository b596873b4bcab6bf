"""Exact single-use delta(eps) of a pair in row form (:class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows`).

Pairs in row form (:class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows`: the k-RR strong and weak
adversaries' pairs and the clones pair, 1e7-1e8 atoms at n = 1e6) have their own single-use engine,
:class:`RowsPLD`: in row r, p - e^eps q = w a (1 + e^eps) B(x) (x - t_r) with a real threshold t_r, so
delta is a sum over rows of partial expectations of Bin(N, 1/2) read from tail tables (one pass over
the atoms to build them, then O(rows) per eps, no sort, no atoms kept).  Its intervals are certified
for the mathematical pair under the stated accuracy model of the binomial log-PMF
(:data:`~shufflesim.accounting.numerics.binomial.BINOM_LOG_ERR`), with the same discipline: every rounding covered by an explicit slack, the
truncated tail added to the upper bound only.

The hockey-stick divergence is that of Koskela, Heikkilä, Honkela (2021, arXiv:2106.00477, eq 2.3);
the row form of the k-RR pairs follows Balle, Bell, Gascón, Nissim (2019, arXiv:1903.02837) and of
the clones pair Feldman, McMillan, Talwar (2021, arXiv:2012.12803).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np

from shufflesim.errors import DataError, ParameterError
from shufflesim.accounting.numerics.binomial import BINOM_LOG_ERR, binom_rows, log_int_table, row_blocks
from shufflesim.accounting.rows.binomial_rows import BinomialRows, bucket_rows
from shufflesim.accounting.numerics.threads import run_blocks
from shufflesim.accounting.numerics.logspace import NEG_INF, U, exp_down, exp_up, log_sum, sum_down, sum_up
from shufflesim.accounting.pld.distribution import LossAtoms, PrivacyLossDistribution, TwoDirections
from shufflesim.accounting.pld.pmf_pair import PMFPair

#: kept rows per block of :meth:`RowsDirection.log_delta_rows` (256 kB per float64 temporary).  Issue 28: one block
#: per thread (130k rows each for the weak k-RR pair at n = 1e4) made ~1 MB temporaries that the allocator mapped
#: afresh at every eps (a page fault per 4 kB: a third of the eps search's CPU time was the kernel's)
ROW_BLOCK = 32768
#: cells per block of :meth:`RowTables.build` (2 MB per float64 temporary: the ~10 passes over a block stay
#: in cache; the tables are bit-identical for any block size, 1 << 20 cells was ~1.4x slower, issue 9)
_TABLE_CELLS = 1 << 18
#: smallest positive subnormal double (absolute rounding error of an underflowing exp)
_SUBNORMAL = 5e-324


@dataclass(frozen=True, eq=False)
class RowTables:
    """Tail tables of Bin(N, 1/2) on a window [LO, HI] for each distinct N of a pair in row form.

    For group g (one value N_g) with scale m_g = max log B(x) over the window and e(x) = B(x) e^{-m_g}:

        T_g(j) = sum_{x=j}^{HI} e(x),        U_g(j) = sum_{i=j}^{HI} T_g(i) = sum_{x >= j} (x - j + 1) e(x),

    stored flat (``off[g]`` is the position of j = LO_g).  Both are reverse cumulative sums of
    non-negative terms (sequential), so each entry has relative error <= ``rel`` (exp of the
    rounded argument, (W + 1)u per accumulation, the binomial model BINOM_LOG_ERR) plus an absolute
    ``W^2 2^-1074`` in units of e^{m_g} where some e(x) underflowed (``abs_slack``).
    """

    N: np.ndarray
    LO: np.ndarray
    HI: np.ndarray
    off: np.ndarray
    m: np.ndarray
    T: np.ndarray
    U: np.ndarray
    rel: float
    abs_slack: np.ndarray

    @classmethod
    def build(cls, N: np.ndarray, LO: np.ndarray, HI: np.ndarray) -> "RowTables":
        W = (HI - LO + 1).astype(np.int64)
        off = np.cumsum(W) - W
        total = int(W.sum())
        t_flat = np.empty(total)
        u_flat = np.empty(total)
        m = np.full(N.size, NEG_INF)
        abs_slack = np.zeros(N.size)
        L = log_int_table(int(N.max()) + 2) if N.size else None

        def block(g):
            G, mask = binom_rows(N[g], 0.5, LO[g], HI[g], log_int=L)
            G[~mask] = NEG_INF
            top = np.max(G, axis=1)
            top = np.where(top > NEG_INF, top, 0.0)
            G -= top[:, None]
            dmin = np.min(np.where(mask & (G > NEG_INF), G, 0.0), axis=1)
            np.exp(G, out=G)
            # reverse cumulative sums along each row, computed on the block with both axes reversed;
            # selecting the kept cells then gives rows last..first with columns hi..lo, and one flat
            # flip restores rows first..last with columns lo..hi (the layout of ``off``)
            t_rev = np.cumsum(G[::-1, ::-1], axis=1)
            u_rev = np.cumsum(t_rev, axis=1)
            sel = mask[::-1, ::-1]
            a = int(off[g[0]])
            b = a + int(W[g].sum())
            t_flat[a:b] = t_rev[sel][::-1]
            u_flat[a:b] = u_rev[sel][::-1]
            m[g] = top
            w = W[g].astype(float)
            abs_slack[g] = np.where(dmin < -708.0, (w * w + w + 2.0) * _SUBNORMAL * 2.0, 0.0)
            return float(-dmin.min()), float(np.max(-(top + dmin)))

        # blocks write disjoint slices and do the same arithmetic in any order: threads (numpy releases
        # the GIL in these loops) give bit-identical tables (issue 9)
        spans = run_blocks(block, list(row_blocks(W, _TABLE_CELLS)))
        max_span = max([0.0] + [sp for sp, _ in spans])
        max_abs_g = max([0.0] + [ag for _, ag in spans])
        wmax = float(W.max()) if W.size else 0.0
        rel_exp = U * (min(max_span, 746.0) + 4.0)
        rel_acc = 2.0 * (wmax + 2.0) * U
        rel_bin = 1.01 * BINOM_LOG_ERR * max(1.0, max_abs_g / 100.0)
        # relative errors compose multiplicatively; 1.01 covers the second-order terms
        return cls(N, LO, HI, off, m, t_flat, u_flat, 1.01 * (rel_exp + rel_acc + rel_bin), abs_slack)

    @property
    def size(self) -> int:
        return int(self.T.size)


@dataclass(frozen=True, eq=False)
class RowsDirection:
    """The P||Q direction of a pair in row form (:class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows`).

    Row r has weight w_r = exp(log_w[r]) and columns x ~ Bin(N_r, 1/2) with
    P(r, x) = w_r B(x) (a x + b), Q(r, x) = w_r B(x) (a (N - x) + b) (a = alpha_r, b = beta_r >= 0).
    Then p - e^eps q = w_r a (1 + e^eps) B(x) (x - t_r) with the real threshold

        t_r = N sigma + (b/a) tanh(eps/2),   sigma = e^eps / (1 + e^eps),

    so the row's share of the hockey-stick divergence (seed 001 eq 2.3; outcomes with Q = 0, x = N
    when b = 0, included: their term is exactly their P-mass) is

        delta_r(eps) = w_r a (1 + e^eps) sum_x B(x) (x - t_r)_+ ,

    a sum of non-negative terms read from the tail tables T, U of :class:`RowTables` in O(1) per row
    (with j the first column above t_r and d = j - t_r, the inner sum is e^m [d T(j) + U(j + 1)])
    (no cancellation).  Each row is evaluated over the union window of the rows with the same N (a
    superset of its kept columns; every column has its exact mass, so the result is still a lower
    bound and the constructor's ``tail`` still bounds what is missing).

    Certification: the computed t_r has relative error <= 8u; the sum is non-increasing in t, so it
    is evaluated at t_r (1 +- 12u) (or, for t_r > N/2, at N - s_r with s_r = N - t_r computed
    directly as N/(1 + e^eps) - (b/a) tanh(eps/2), whichever bound is tighter) for the lower and the
    upper bound; table errors (:class:`RowTables`), the evaluation and the log-space sum over rows
    are covered by explicit relative slacks.  The extra atoms (row -1) go through :class:`LossAtoms`.
    """

    rows: Any

    @cached_property
    def _kept(self) -> np.ndarray:
        r = self.rows
        return (r.lo <= r.hi) & (r.alpha > 0) & (r.log_w > NEG_INF)

    @cached_property
    def tables(self) -> RowTables:
        keep = self._kept
        grp, N, LO, HI = bucket_rows(self.rows, keep)
        # for eps >= 0 every threshold is >= N/2 (t = N sigma + (b/a) tanh(eps/2), sigma >= 1/2), so
        # the first column ever read is >= floor(N/2 - 12uN) + 1 >= N//2 - 1: tabulate from there
        LO = np.minimum(np.maximum(LO, N // 2 - 1), HI)
        tab = RowTables.build(N, LO, HI)
        object.__setattr__(self, "_grp", grp)
        return tab

    @cached_property
    def extra(self) -> LossAtoms | None:
        r = self.rows
        if r.extra_log_p.size == 0:
            return None
        pair = PMFPair(np.asarray(r.extra_log_p, dtype=float), np.asarray(r.extra_log_q, dtype=float), "extra")
        return PrivacyLossDistribution.from_pair(pair).pq

    @property
    def n_atoms(self) -> int:
        return int(self.rows.n_atoms)

    @property
    def n_rows(self) -> int:
        return int(np.count_nonzero(self._kept))

    @cached_property
    def _consts(self) -> dict:
        """Per-row constants of :meth:`log_delta_rows` (kept rows only)."""
        tab = self.tables
        grp = self._grp
        r = self.rows
        keep = self._kept
        a = r.alpha[keep].astype(float)
        with np.errstate(over="ignore"):
            c = np.minimum(r.beta[keep] / a, 1e300)  # b/a beyond 1e300: the threshold is far above every column
        N = r.N[keep]
        return {"N": N.astype(float), "c": c, "half": (N // 2 - 1).astype(float),
                "LO": tab.LO[grp].astype(float), "HI": tab.HI[grp].astype(float),
                "base": (tab.off[grp] - tab.LO[grp]).astype(np.int64),
                "pre": r.log_w[keep] + np.log(a) + tab.m[grp], "slack": tab.abs_slack[grp]}

    def log_delta_rows(self, eps: float) -> tuple[float, float]:
        """(log lower, log upper) of the rows' part of delta_{P||Q}(eps) (no extra atoms, no tail).

        The per-row terms are computed in blocks of :data:`ROW_BLOCK` rows on the accountant's threads (issue 9);
        the blocks are concatenated in row order before the log-space sums, so the result is bit-identical
        to one pass over all rows."""
        self.tables
        if not np.any(self._kept):
            return NEG_INF, NEG_INF
        n = int(np.count_nonzero(self._kept))
        step = ROW_BLOCK
        parts = [p for p in run_blocks(lambda a: self._row_terms(eps, slice(a, a + step)), list(range(0, n, step)))
                 if p is not None]
        if not parts:
            return NEG_INF, NEG_INF
        t_lo = np.concatenate([p[0] for p in parts])
        t_up = np.concatenate([p[1] for p in parts])
        fin = t_up[np.isfinite(t_up)]
        if fin.size == 0:
            return NEG_INF, NEG_INF
        # log-space sum: per-term rounding of the log and exp, pairwise summation (see module docstring)
        err = 8.0 * U * (float(np.max(np.abs(fin))) + math.log(fin.size) + 2.0) + (math.log2(fin.size) + 4.0) * U
        lo = log_sum(t_lo[np.isfinite(t_lo)])
        up = log_sum(fin)
        return (lo + math.log1p(-min(err * 1.01, 0.5)) if lo > NEG_INF else NEG_INF), up + 1.01 * err

    def _row_terms(self, eps: float, sl: slice):
        """(log lower, log upper) per active row of the kept rows ``sl`` (None when none is active)."""
        tab = self.tables
        k = {key: v[sl] for key, v in self._consts.items()}
        em = math.exp(-eps)
        den = 1.0 + em
        sig = 1.0 / den
        tau = em / den
        th = -math.expm1(-eps) / den
        with np.errstate(over="ignore", invalid="ignore"):
            ct = k["c"] * th
            t = k["N"] * sig + ct
            s_pos = k["N"] * tau
            s = s_pos - ct
            e_t = 12.0 * U * t
            e_s = 12.0 * U * (s_pos + ct)
        # rows whose lowest possible threshold is above their last column contribute exactly 0
        act = np.flatnonzero(np.minimum(t - e_t, k["N"] - (s + e_s)) < k["HI"] + 1.0)
        if act.size == 0:
            return None
        t, s, e_t, e_s = t[act], s[act], e_t[act], e_s[act]
        N, HI, LO, half = k["N"][act], k["HI"][act], k["LO"][act], k["half"][act]
        base = k["base"][act]
        use_s = e_s < e_t

        vals = []
        for sign in (+1.0, -1.0):  # threshold moved up (lower bound on delta), then down (upper bound)
            # t >= 0 always; thresholds above HI + 1 contribute nothing, so only large values are clipped
            tt = np.minimum(t + sign * e_t, HI + 2.0)
            jt = np.floor(tt) + 1.0
            ss = np.maximum(s - sign * e_s, N - HI - 2.0)  # threshold N - ss
            cs = np.ceil(ss)
            j = np.where(use_s, N - cs + 1.0, jt)
            d = np.where(use_s, ss + (1.0 - cs), jt - tt)  # ss + (1 - cs) is exact (Sterbenz), also for tiny ss
            if not (np.all(np.isfinite(j)) and np.all(np.isfinite(d))):
                raise AssertionError("row thresholds must be finite")  # c <= 1e300 and eps finite
            if np.any((j < half) & (j <= HI)):
                raise AssertionError("row threshold below N/2 - 1 (the tables start there)")
            # sum_x e(x) (x - thr)_+ = d T(j) + U(j + 1) over the window, j the first column above thr
            # (d = j - thr); a j below the window moves to LO (d grows by the shift), beyond HI gives 0
            below = j < LO
            d = np.where(below, d + (LO - j), d)
            j = np.where(below, LO, j)
            inside = j <= HI
            idx = base + np.where(inside, j, LO).astype(np.int64)
            t_j = np.where(inside, tab.T[idx], 0.0)
            nxt = inside & (j + 1.0 <= HI)
            u_next = np.where(nxt, tab.U[np.where(nxt, idx + 1, idx)], 0.0)
            vals.append(d * t_j + u_next)
        v_lo, v_up = vals
        v_lo *= 1.0 - tab.rel - 4 * U
        v_up *= 1.0 + tab.rel + 4 * U
        v_up += k["slack"][act]
        with np.errstate(divide="ignore"):
            pre = k["pre"][act] + (eps + math.log1p(em))
            t_lo = pre + np.log(v_lo)
            t_up = pre + np.log(v_up)
        return t_lo, t_up

    def delta_interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta_{P||Q}(eps) for an array of eps >= 0 (single use)."""
        eps_arr = np.atleast_1d(np.asarray(eps, dtype=float))
        lo = np.empty(eps_arr.shape)
        up = np.empty(eps_arr.shape)
        tail = float(self.rows.tail)
        cache = self.__dict__.setdefault("_cache", {})  # root finding asks for both bounds at each eps
        for i, e in enumerate(eps_arr):
            e = float(e)
            if e not in cache:
                if len(cache) > 64:
                    cache.clear()
                llo, lup = self.log_delta_rows(e)
                x_lo, x_up = (self.extra.delta_interval(e) if self.extra is not None else (np.zeros(1), np.zeros(1)))
                cache[e] = (min(1.0, sum_down(exp_down(llo), float(x_lo[0]))),
                            min(1.0, sum_up(exp_up(lup), float(x_up[0]), tail)))
            lo[i], up[i] = cache[e]
        return lo, up

    def max_finite_loss(self) -> float:
        """An upper bound on the largest finite privacy loss among the columns evaluated (computed once: the rows
        do not change, and the accountant asks at every query)."""
        return self._max_finite_loss

    @cached_property
    def _max_finite_loss(self) -> float:
        best = NEG_INF
        keep = self._kept
        if np.any(keep):
            tab = self.tables
            r = self.rows
            N = r.N[keep].astype(float)
            a, b = r.alpha[keep], r.beta[keep]
            x = tab.HI[self._grp].astype(float)
            x = np.where((b == 0) & (x >= N), x - 1.0, x)
            ok = x >= tab.LO[self._grp]
            if np.any(ok):
                with np.errstate(divide="ignore"):
                    loss = np.log(a * x + b) - np.log(a * (N - x) + b)
                loss = loss[ok & np.isfinite(loss)]
                if loss.size:
                    best = float(np.max(loss))
        if np.any((self.rows.lo <= self.rows.hi) & (self.rows.alpha == 0)):
            best = max(best, 0.0)
        if self.extra is not None and self.extra.size:
            best = max(best, self.extra.max_loss + self.extra.loss_tol)
        return best + 16 * U * abs(best) + 1e-300 if best > NEG_INF else NEG_INF


@dataclass(frozen=True, eq=False)
class RowsPLD(TwoDirections):
    """Both directions of the PLD of a pair in row form; the single-use counterpart of
    :class:`PrivacyLossDistribution` for :class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows`.

    ``pq`` is the P||Q direction, ``qp`` the Q||P direction (the P||Q direction of the mirrored rows).
    Single-use delta(eps) costs O(rows) per eps after one O(atoms) pass building tail tables (one
    per distinct N); nothing of size O(atoms) is kept except the tables.  For composition the tight
    accountant streams the atoms onto its grid (:func:`~shufflesim.accounting.rows.rows_stream.rows_base_split`).
    """

    rows: Any
    name: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = ""

    @classmethod
    def from_rows(cls, rows) -> "RowsPLD":
        """Validate ``rows`` (a BinomialRows) and wrap it."""
        if not isinstance(rows, BinomialRows):
            raise ParameterError(f"rows must be a BinomialRows; got {type(rows).__name__}")
        n = rows.N.size
        for nm in ("log_w", "N", "alpha", "beta", "lo", "hi"):
            arr = getattr(rows, nm)
            if np.ndim(arr) != 1 or np.size(arr) != n:
                raise DataError(f"rows {rows.name!r}: {nm} must be a 1-D array with one entry per row ({n})")
        if np.any(np.isnan(rows.log_w)) or np.any(rows.log_w == math.inf):
            raise DataError(f"rows {rows.name!r}: log_w must be finite log-weights (or -inf)")
        if not (np.all(np.isfinite(rows.alpha)) and np.all(np.isfinite(rows.beta))
                and np.all(rows.alpha >= 0) and np.all(rows.beta >= 0)):
            raise DataError(f"rows {rows.name!r}: alpha and beta must be finite and >= 0")
        keep = rows.lo <= rows.hi
        if np.any(rows.N < 0) or np.any((rows.lo < 0) & keep) or np.any((rows.hi > rows.N) & keep):
            raise DataError(f"rows {rows.name!r}: every kept window [lo, hi] must lie in [0, N] with N >= 0")
        if not (0.0 <= float(rows.tail) <= 1.0):
            raise DataError(f"rows {rows.name!r}: tail={rows.tail!r} must be a dropped mass in [0, 1]")
        if rows.extra_log_p.shape != rows.extra_log_q.shape:
            raise DataError(f"rows {rows.name!r}: extra_log_p and extra_log_q must have the same shape")
        return cls(rows, rows.name, dict(rows.params), rows.reference)

    @cached_property
    def pq(self) -> RowsDirection:
        return RowsDirection(self.rows)

    @cached_property
    def qp(self) -> RowsDirection:
        return self.pq if self.symmetric else RowsDirection(self.rows.mirrored())

    @property
    def directions(self) -> tuple[RowsDirection, RowsDirection]:
        return (self.pq, self.qp)

    @cached_property
    def symmetric(self) -> bool:
        return bool(self.rows.symmetric)

    @property
    def size(self) -> int:
        return int(self.rows.n_atoms)

    @property
    def tail(self) -> float:
        return float(self.rows.tail)

    def max_finite_loss(self) -> float:
        return max(self.pq.max_finite_loss(), self.qp.max_finite_loss())

    def note(self) -> str:
        return (f"exact over {self.pq.n_rows} rows ({self.size} atoms) in row form, "
                f"{self.pq.tables.size} tail-table entries (single use)")

    def to_pld(self) -> PrivacyLossDistribution:
        """The same pair with its kept atoms expanded (for exact pairwise composition of small pairs)."""
        lp, lq = self.rows.expand()
        pair = PMFPair(lp, lq, self.name, dict(self.params), self.reference, self.tail, self.tail)
        return PrivacyLossDistribution.from_pair(pair)
