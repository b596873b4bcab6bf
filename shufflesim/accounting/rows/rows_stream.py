"""Pairs in row form placed on a base grid without being expanded: their atoms are streamed block by block.

For :class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows` (the k-RR strong/weak pairs after Balle,
Bell, Gascón, Nissim 2019, arXiv:1903.02837, and the clones pair of Feldman, McMillan, Talwar 2021,
arXiv:2012.12803, in the form of Koskela, Heikkilä, Honkela 2021, arXiv:2106.00477, §6): the split
placement of :mod:`.placement` is linear in an atom's (P-mass, Q-mass), so only the two totals per
base-grid cell are accumulated (:func:`rows_base_split`), and every coarser grid follows exactly
(:func:`~shufflesim.accounting.pld.placement.discretise_base`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.accounting.numerics.threads import map_ordered
from shufflesim.accounting.numerics.binomial import BINOM_LOG_ERR, binom_rows, log_int_table, row_blocks
from shufflesim.accounting.rows.binomial_rows import bucket_rows
from shufflesim.accounting.numerics.logspace import NEG_INF, REL_SLACK, U, exp_up, log_sum, sum_up
from shufflesim.accounting.pld.placement import BaseSplit
from shufflesim.accounting.pld.distribution import LossAtoms

#: width (in log-mass) of the scales at which streamed atoms are accumulated: atoms more than
#: _BAND below the largest are summed at a second scale, atoms more than 2 _BAND below it are dropped
#: into the tail (their total is bounded by count * e^{top - 2 _BAND})
_BAND = 700.0
#: cells per block when streaming rows (~2 MB per float64 temporary: measured fastest here)
STREAM_CELLS = 1 << 18
#: largest base grid a pair in row form is streamed onto (two float64 accumulators of this length)
MAX_BASE_POINTS = 1 << 26


def _rows_kept(rows) -> np.ndarray:
    return (rows.lo <= rows.hi) & (rows.log_w > NEG_INF) & ((rows.alpha > 0) | (rows.beta > 0))


def rows_spread(rows) -> float:
    """Width of the range of finite losses of the P||Q direction of ``rows``, extra atoms included
    (0 if there are none)."""
    lmin, lmax, _ = rows_loss_range(rows)
    xp = np.asarray(rows.extra_log_p, dtype=float)
    xq = np.asarray(rows.extra_log_q, dtype=float)
    fin = (xp > NEG_INF) & (xq > NEG_INF)
    if np.any(fin):
        x = xp[fin] - xq[fin]
        lmin, lmax = min(lmin, float(x.min())), max(lmax, float(x.max()))
    return lmax - lmin if lmax >= lmin else 0.0


def rows_loss_range(rows) -> tuple[float, float, float]:
    """(smallest finite loss, largest finite loss, largest |log| of a linear factor) over the kept atoms
    of the P||Q direction of ``rows`` (a BinomialRows), in O(rows).

    In row r the loss log(a x + b) - log(a (N - x) + b) is non-decreasing in the column x, so its
    range is read at the first column with P > 0 and the last with Q > 0."""
    keep = _rows_kept(rows)
    if not np.any(keep):
        return math.inf, NEG_INF, 0.0
    a, b = rows.alpha[keep], rows.beta[keep]
    N = rows.N[keep].astype(float)
    lo, hi = rows.lo[keep].astype(float), rows.hi[keep].astype(float)
    xf = np.where(a * lo + b > 0, lo, lo + 1.0)
    xl = np.where(a * (N - hi) + b > 0, hi, hi - 1.0)
    ok = xf <= xl
    if not np.any(ok):
        return math.inf, NEG_INF, 0.0
    a, b, N, lo, hi, xf, xl = (v[ok] for v in (a, b, N, lo, hi, xf, xl))
    with np.errstate(divide="ignore"):
        v = [a * xf + b, a * hi + b, a * (N - xl) + b, a * (N - lo) + b]
        logs = [np.log(t) for t in v]
        first = np.log(a * xf + b) - np.log(a * (N - xf) + b)
        last = np.log(a * xl + b) - np.log(a * (N - xl) + b)
    labs = max(float(np.max(np.abs(t[np.isfinite(t)]))) if np.any(np.isfinite(t)) else 0.0 for t in logs)
    return float(np.min(first)), float(np.max(last)), labs


def _row_cell_count(rows, keep: np.ndarray, h_b: float) -> float:
    """Upper bound on the number of atoms of one row sharing a cell of width h_b, summed over rows.

    In row r the loss increases by at least 2a / (a (N + 1) + b) per column (log(1 + z) >= z/(1 + z)),
    so at most 1 + h_b (a (N + 1) + b) / (2a) columns share a cell (all of them when a = 0)."""
    a, b = rows.alpha[keep], rows.beta[keep]
    N = rows.N[keep].astype(float)
    width = (rows.hi[keep] - rows.lo[keep] + 1).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(a > 0, 1.0 + h_b * (a * (N + 1.0) + b) / (2.0 * a), width)
    return float(np.sum(np.minimum(per, width)))


def _log_binom_by_n(rows, keep: np.ndarray, cells: int, gap: int):
    """log Bin(N, 1/2) on the union window of the kept rows of each distinct N, flattened with ``gap``
    entries of -inf after each N, when that table is much smaller than the atoms (rows sharing N, as
    in the weak adversary's pair); else None.  Returns (per-row offset such that the entry of column x
    of row r is at offset[r] + x, table)."""
    grp, uniq, LO, HI = bucket_rows(rows, keep)
    W = HI - LO + 1
    if 4 * int(W.sum() + gap * W.size) > int(np.sum(rows.hi[keep] - rows.lo[keep] + 1)):
        return None
    off = np.cumsum(W + gap) - (W + gap)
    table = np.full(int(W.sum() + gap * W.size), NEG_INF)
    for g in row_blocks(W, cells):
        G, mask = binom_rows(uniq[g], 0.5, LO[g], HI[g])
        pos = (off[g][:, None] + np.arange(G.shape[1])[None, :])[mask]
        table[pos] = G[mask]
    base = np.zeros(rows.N.size, dtype=np.int64)
    base[keep] = (off - LO)[grp]
    return base, table


@dataclass(frozen=True, eq=False)
class _Extras:
    """The atoms of ``rows`` outside its rows (finite ones are placed like the others) and the
    infinite-loss mass (Q = 0), as :func:`_extra_atoms` prepares them."""

    fin: np.ndarray  #: mask of the extra atoms with a finite loss
    loss: np.ndarray  #: their losses
    log_p: np.ndarray  #: their log P-masses
    log_inf: float  #: log of the infinite-loss mass (rows and extra atoms), rounded down
    tail: float  #: the rows' tail plus the rounding of the infinite mass (upper bounds only)


def _extra_atoms(rows, keep: np.ndarray) -> _Extras:
    """Extra atoms and the infinite-loss mass: column N of rows with b = 0 (mass w a N 2^-N, summed per
    row in closed form) and extra atoms with Q = 0; the rounding of that sum moves into the tail."""
    xp = np.asarray(rows.extra_log_p, dtype=float)
    xq = np.asarray(rows.extra_log_q, dtype=float)
    x_fin = (xp > NEG_INF) & (xq > NEG_INF)
    inf_rows = keep & (rows.beta == 0) & (rows.alpha > 0) & (rows.hi == rows.N) & (rows.N >= 1)
    log_inf = NEG_INF
    inf_rel = 0.0
    if np.any(inf_rows):
        Ni = rows.N[inf_rows].astype(float)
        terms = rows.log_w[inf_rows] + Ni * math.log(0.5) + np.log(rows.alpha[inf_rows] * Ni)
        log_inf = log_sum(terms)
        inf_rel = 8 * U * (float(np.max(np.abs(terms))) + math.log(terms.size + 1) + 4) + BINOM_LOG_ERR
    x_inf = (xp > NEG_INF) & (xq == NEG_INF)
    if np.any(x_inf):
        log_inf = float(np.logaddexp(log_inf, log_sum(xp[x_inf])))
        inf_rel = max(inf_rel, REL_SLACK)
    tail = float(rows.tail)
    if log_inf > NEG_INF and inf_rel > 0:
        tail = sum_up(tail, exp_up(log_inf + math.log(2 * inf_rel)))
        log_inf = log_inf + math.log1p(-2 * inf_rel)
    return _Extras(x_fin, xp[x_fin] - xq[x_fin], xp[x_fin], log_inf, tail)


@dataclass(frozen=True, eq=False)
class _FactorTable:
    """log(n + c) for every distinct c = b/a of the rows, n = 0..max N, flattened (see :func:`_factor_table`)."""

    F: np.ndarray  #: the table, row c at offset c * (nmax + 1)
    f_off: np.ndarray  #: per streamed row, the offset of its c
    log_a: np.ndarray  #: per streamed row, log a


def _factor_table(rows, idx_rows: np.ndarray, width: np.ndarray, nmax: int) -> _FactorTable | None:
    """Rows sharing c = b/a share F_c(n) = log(n + c): then log p = log(w a B(x)) + F_c(x),
    log q = log(w a B(x)) + F_c(N - x) and the loss is F_c(x) - F_c(N - x) (no per-atom log).  None
    when some a is 0 or the table would not be much smaller than the atoms."""
    a_r = rows.alpha[idx_rows]
    if not (idx_rows.size and np.all(a_r > 0)):
        return None
    cvals, cgrp = np.unique(rows.beta[idx_rows] / a_r, return_inverse=True)
    if 4 * cvals.size * (nmax + 1) > int(width.sum()):
        return None
    with np.errstate(divide="ignore"):
        F = np.log(np.arange(nmax + 1, dtype=float)[None, :] + cvals[:, None]).ravel()
    f_off = cgrp.astype(np.int64) * (nmax + 1)
    with np.errstate(divide="ignore"):
        log_a = np.log(a_r)
    return _FactorTable(F, f_off, log_a)


def _margins(labs: float, lmag: float, h_b: float, c_max: float) -> tuple[float, float]:
    """(tol_assign, mu) of :func:`rows_base_split`.

    tol_assign covers the cell assignment (computed loss: two logs of the factors, 4 ulp each, and
    their difference; then L/h_b + shift and its floor); eps_ratio the ratio of the two accumulated
    totals (factors 2u each, or two exp of arguments <= 745 in size, 2u(745 + 2); <= c_max sequential
    additions each; e^{kh - mu}: u(|kh| + 4)).  Cells are assigned from the computed loss + tol_assign;
    Q is widened by mu = 2 tol_assign + eps_ratio, so that every atom's effective placement lies in
    its cell and above its true loss."""
    tol_assign = 1.01 * (8 * U * (2 * labs + 2) + 8 * U * (lmag + h_b))
    eps_ratio = 4 * U + 2 * U * (745 + 2) + 2 * (c_max + 2) * U + U * (lmag + h_b + 4) + 4 * U
    return tol_assign, 1.01 * (2 * tol_assign + eps_ratio)


def _log_scale(rows, keep: np.ndarray, extras: _Extras, xq_fin: np.ndarray) -> float:
    """An upper bound ``top`` on every log P- and log Q-mass (log B <= 0), the scale of the accumulators."""
    with np.errstate(divide="ignore"):
        vmax = np.where(keep, rows.alpha * np.maximum(rows.hi, rows.N - rows.lo) + rows.beta, 0.0)
        tops = np.where(keep & (vmax > 0), rows.log_w + np.log(vmax), NEG_INF)
        xtop = float(np.max(np.maximum(extras.log_p, xq_fin))) if extras.loss.size else NEG_INF
    return max(float(np.max(tops)) if tops.size else NEG_INF, xtop)


class _CellTotals:
    """P- and Q-mass totals per base cell, in linear scale relative to e^top (band 0) and to
    e^(top - 700) (band 1, created only if some block's masses span more than 700 nats); atoms more
    than 1400 nats below top are counted in ``n_dropped`` (their mass goes to the tail)."""

    def __init__(self, size: int):
        self.size = size
        self.P0 = np.zeros(size)
        self.Q0 = np.zeros(size)
        self.P1: np.ndarray | None = None
        self.Q1: np.ndarray | None = None
        self.n_dropped = 0
        self.arg_max = 0.0  #: largest |log mass - top| seen (for the exp rounding bound)

    def add_one_band(self, idx: np.ndarray, p: np.ndarray, q: np.ndarray) -> None:
        """Every P-mass of the block is within e^-700 of e^top: sums per cell.

        The block's masses are summed per cell by ``np.bincount`` (sequential, in atom order) over the
        block's cell range and the block sums added to the totals: another summation order of the same
        non-negative terms, so the bound of :func:`_margins` (at most c_max additions per term) is
        unchanged; ~3x faster than ``np.add.at`` (issue 9)."""
        _add_cells(self.P0, idx, p.ravel())
        _add_cells(self.Q0, idx, q.ravel())

    def add_two_bands(self, idx: np.ndarray, lp: np.ndarray, lq: np.ndarray) -> None:
        """Rare: masses spanning more than 700 nats -- two bands by the log P-mass (an atom's Q-mass
        goes with its P-mass; a Q-mass that underflows there only lowers Q, which is safe)."""
        if self.P1 is None:
            self.P1, self.Q1 = np.zeros(self.size), np.zeros(self.size)
        ok = (lp > NEG_INF) & (lq > NEG_INF)
        self.n_dropped += int(np.count_nonzero(ok & (lp < -2 * _BAND)))
        for shift, Pd, Qd, sel in ((0.0, self.P0, self.Q0, ok & (lp >= -_BAND)),
                                   (_BAND, self.P1, self.Q1, ok & (lp < -_BAND) & (lp >= -2 * _BAND))):
            _add_cells(Pd, idx, np.where(sel, np.exp(lp + shift), 0.0).ravel())
            _add_cells(Qd, idx, np.where(sel, np.exp(lq + shift), 0.0).ravel())


def _add_cells(total: np.ndarray, idx: np.ndarray, w: np.ndarray) -> None:
    """``total[idx] += w`` with repeated indices accumulated: per-cell sums of the block (bincount over
    the block's index range), then one addition per cell to the running totals; ``np.add.at`` when the
    range is much wider than the block (either way at most c_max additions per term)."""
    if idx.size == 0:
        return
    lo = int(idx.min())
    hi = int(idx.max())
    if hi - lo + 1 > 4 * idx.size:  # few atoms spread over many cells: the dense count would cost more
        np.add.at(total, idx, w)
        return
    total[lo : hi + 1] += np.bincount(idx - lo, weights=w, minlength=hi - lo + 1)


class _RowStreamer:
    """Streams the kept rows block by block into :class:`_CellTotals` (see :func:`rows_base_split`).

    Tables are read through sliding windows (row r of a block reads W consecutive entries from its own
    start: a row copy per row, no per-cell index arithmetic); -inf pads keep windows in range."""

    def __init__(self, rows, keep, idx_rows, width, nmax, factors, top, cells, shift_cells, inv_h, size):
        self.rows, self.idx_rows, self.width = rows, idx_rows, width
        self.factors, self.cells = factors, cells
        self.wshift = rows.log_w - top
        self.shift_cells, self.inv_h, self.size = shift_cells, inv_h, size
        self.wpad = int(width.max()) + 1 if width.size else 1
        self.by_n = _log_binom_by_n(rows, keep, cells, self.wpad)
        self.L = log_int_table(nmax + 2) if self.by_n is None else None
        if self.by_n is not None:
            self.g_tab = np.concatenate((self.by_n[1], np.full(self.wpad, NEG_INF)))
        if factors is not None:
            self.f_tab = np.concatenate((np.full(self.wpad, NEG_INF), factors.F, np.full(self.wpad, NEG_INF)))
            self.f_rev = self.f_tab[::-1].copy()

    def run(self, totals: _CellTotals) -> None:
        # blocks are computed on the accountant's threads (numpy releases the GIL) and added to the
        # totals here, in block order: the same additions in the same order as a serial run (issue 9)
        for gmin, bands, idx, a, b in map_ordered(self._block, row_blocks(self.width, self.cells)):
            totals.arg_max = max(totals.arg_max, -gmin)
            if bands == 1:
                totals.add_one_band(idx, a, b)
            else:
                totals.add_two_bands(idx, a, b)

    def _log_binom(self, g, N_g, lo_g, W):
        if self.by_n is None:
            G, _ = binom_rows(N_g, 0.5, lo_g, self.rows.hi[g], log_int=self.L)
            return G
        return np.lib.stride_tricks.sliding_window_view(self.g_tab, W)[self.by_n[0][g] + lo_g]

    def _block(self, blk: np.ndarray):
        """One block of rows: log masses and cell indices of its atoms, returned as (gmin, bands, idx, P, Q)
        for :meth:`run` to add to the totals per cell (bands 1: linear masses; 2: log masses).
        (Kept as one function of ~70 lines: it is the hot loop, and its in-place operations share
        buffers that splitting would have to copy.)"""
        rows, fac = self.rows, self.factors
        g = self.idx_rows[blk]
        N_g = rows.N[g]
        lo_g = rows.lo[g]
        w_g = self.width[blk]
        nr = g.size
        jj = np.arange(int(w_g.max()))[None, :]
        W = jj.shape[1]
        padded = bool(w_g.min() != W)
        G = self._log_binom(g, N_g, lo_g, W)
        if padded:  # cells past a row's window: zero mass (their loss may lie outside the grid range)
            G[jj >= w_g[:, None]] = NEG_INF
        # cells where P or Q vanishes (zero mass, but a nan or infinite loss): padding, column 0 of
        # rows with b = 0, column N (infinite loss when b = 0)
        one_sided = padded or bool(np.any(rows.hi[g] >= N_g) or np.any((rows.beta[g] == 0) & (lo_g == 0)))
        last = w_g - 1
        ar = np.arange(nr)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if fac is not None:
                G += (self.wshift[g] + fac.log_a[blk])[:, None]
                start = fac.f_off[blk] + self.wpad
                f1 = np.lib.stride_tricks.sliding_window_view(self.f_tab, W)[start + lo_g]  # F(x), x = lo..
                # F(N - x) for x = lo.. read forwards in the reversed table
                f2 = np.lib.stride_tricks.sliding_window_view(self.f_rev, W)[self.f_tab.size - 1 - (start + N_g - lo_g)]
                y = f1 - f2
                lp = f1
                lp += G  # log p - top
                lq = f2
                lq += G  # log q - top
            else:
                G += self.wshift[g][:, None]
                xf = (lo_g[:, None] + jj).astype(float)
                a = rows.alpha[g][:, None]
                b = rows.beta[g][:, None]
                v1 = a * xf
                v2 = N_g[:, None] - xf
                v2 *= a
                if np.any(rows.beta[g] != 0):
                    v1 += b
                    v2 += b
                y = v1 / v2
                np.log(y, out=y)
                lp = None
            y *= self.inv_h
            y += self.shift_cells
            np.floor(y, out=y)
            if one_sided:  # nan/inf there (zero mass): fmax/fmin map them into range
                np.fmax(y, 0.0, out=y)
                np.fmin(y, self.size - 2.0, out=y)
            idx = y.astype(np.int64).ravel()
            # the smallest log P-mass of a row is at one of its ends (B(x)(a x + b) is log-concave)
            if lp is not None:
                ends = np.concatenate([lp[ar, np.minimum(j, last)] for j in (0, 1)]
                                      + [lp[ar, np.maximum(last - j, 0)] for j in (0, 1)])
            else:
                ends = np.concatenate([G[ar, np.minimum(j, last)] + np.log(v1[ar, np.minimum(j, last)]) for j in (0, 1)]
                                      + [G[ar, np.maximum(last - j, 0)] + np.log(v1[ar, np.maximum(last - j, 0)])
                                         for j in (0, 1)])
        gmin = float(np.min(ends, where=np.isfinite(ends), initial=0.0))
        if gmin >= -_BAND:  # every P-mass is within e^-700 of e^top: one band
            if lp is not None:
                p = np.exp(lp, out=lp)
                q = np.exp(lq, out=lq)
            else:
                wgt = np.exp(G, out=G)
                p = v1
                p *= wgt
                q = v2
                q *= wgt
            if one_sided:
                np.copyto(p, 0.0, where=~(q > 0))  # infinite-loss atoms (summed above), columns beyond N
                np.copyto(q, 0.0, where=~(p > 0))  # atoms with P = 0 play no part in P||Q
            return gmin, 1, idx, p, q
        if lp is None:
            lp = G + np.log(v1)
            lq = G + np.log(v2)
        return gmin, 2, idx, lp, lq


def _split_cells(totals: _CellTotals, k_first: int, h_b: float, mu: float, top: float) -> np.ndarray:
    """log of the masses at the base points: each cell's totals split into p_a at k and p_b at k + 1
    (clamped to [0, P_k]; see :func:`rows_base_split`), both bands recombined."""
    size = totals.size
    kc = np.arange(size) + k_first
    den = -math.expm1(-h_b)
    out = np.zeros(size + 1)
    out1 = np.zeros(size + 1) if totals.P1 is not None else None
    for Pd, Qd, o in ((totals.P0, totals.Q0, out), (totals.P1, totals.Q1, out1)):
        if Pd is None:
            continue
        nz = np.flatnonzero(Pd > 0)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            X = np.exp(np.log(Qd[nz]) + (kc[nz] * h_b - mu))  # Q e^{kh - mu} (0 when Q = 0)
        Pn = Pd[nz]
        # p_b = (P - X)/(1 - e^{-h}); p_a = P - p_b = (X - P e^{-h})/(1 - e^{-h}).  P - X is exact when
        # it cancels, so an error in X acts as a loss shift (covered by mu); P is kept to rounding
        pb = np.clip((Pn - X) / den, 0.0, Pn)
        pa = Pn - pb
        o[nz] += pa
        o[nz + 1] += pb
    with np.errstate(divide="ignore"):
        log_dense = np.log(out) + top
        if out1 is not None:
            log_dense = np.logaddexp(log_dense, np.log(out1) + (top - _BAND))
    return log_dense


def rows_base_split(rows, h_b: float, *, cells: int | None = None) -> BaseSplit:
    """The P||Q direction of a pair in row form, split onto h_b·Z (placement "split") and aggregated
    per grid point, streaming the atoms block by block (memory O(block + grid points)).  (Over 80
    lines only because of this docstring: the certification argument belongs with the function.)

    ``rows`` is a :class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows` (pass ``rows.mirrored()`` for the
    Q||P direction).  Atom (r, x) has P-mass p = w_r B(x) (a x + b), Q-mass q = w_r B(x) (a (N - x) + b)
    and loss log(p/q) (see :class:`~shufflesim.accounting.rows.rows_pld.RowsDirection`).

    The split of :func:`discretise` sends an atom with P-mass p and (widened) loss s in the cell
    [kh, (k+1)h] to the two end points with masses p_a = (q' e^{kh} - p e^{-h})/(1 - e^{-h}) and
    p_b = (p - q' e^{kh})/(1 - e^{-h}) = p - p_a, q' = p e^{-s}: linear in (p, q'), so the split of all atoms
    of a cell is the split of their totals (P_k, Q'_k) -- the unique two-point law with that P- and
    Q-mass.  Hence only P_k and Q_k are accumulated per cell of h_b·Z (masses in linear scale
    relative to an upper bound ``top`` of all log-masses), and each cell is split once at the end.
    Per atom this costs a cell index and two masses: rows sharing c = b/a (all rows of the k-RR
    pairs) read log(a x + b) - log a from one table F_c(n) = log(n + c), so there is no per-atom
    log; rows sharing N read log B from one table.  Certification:

    * an atom is assigned to the cell of its computed loss + ``tol_assign`` (the rounding of the
      loss and of the index); Q is widened by ``mu`` = 2 tol_assign + eps_ratio (Q'_k = Q_k e^{-mu}),
      eps_ratio covering the ratio of the accumulated totals (the factors, or the two exps, and the
      sequential sums: at most :func:`_row_cell_count` terms per cell).  Then every atom has an
      effective placement inside its cell and at or above its true loss, and a two-point law with
      the cell's P-mass and a Q-mass at most that of such placed atoms dominates them (move mass to
      the upper point, then merge: a post-processing of a pair with less Q-mass); clamping the two
      masses to [0, P_k] only lowers Q further.  So the result dominates the pair, and any
      h = m h_b splits on from it exactly (:func:`discretise_base`);
    * ``mass_rel_err``: the rounding common to an atom's p and q (exp of the shifted log-mass, the
      binomial model :data:`~shufflesim.accounting.numerics.binomial.BINOM_LOG_ERR`), the sums, the final split;
    * ``loss_tol`` = h_b + 2 mu: every base point lies within it of the true loss of every atom it
      received mass from, so the base atoms stand in for the original atoms in the Chernoff and
      product-event bounds of :mod:`.tails` (which widen by ``loss_tol``);
    * infinite-loss atoms (Q = 0: x = N when b = 0) are summed per row in closed form (B(N) = 2^-N);
      atoms more than 2 * 700 below ``top`` are dropped into ``tail`` (count * e^{top - 1400}).
    """
    if not (h_b > 0 and math.isfinite(h_b)):
        raise ParameterError(f"base grid spacing h_b must be a positive finite number; got {h_b!r}")
    cells = STREAM_CELLS if cells is None else int(cells)
    keep = _rows_kept(rows)
    lmin, lmax, labs = rows_loss_range(rows)
    extras = _extra_atoms(rows, keep)
    if extras.loss.size:
        lmin, lmax = min(lmin, float(extras.loss.min())), max(lmax, float(extras.loss.max()))
    if not math.isfinite(lmin):
        empty = LossAtoms(np.zeros(0), np.zeros(0), extras.log_inf, min(1.0, extras.tail), 0.0)
        return BaseSplit(np.zeros(0, dtype=np.int64), float(h_b), 0.0, empty)
    if not np.any(keep):  # extra atoms only: stream an empty row set
        keep = np.zeros(rows.N.size, dtype=bool)
    lmag = max(abs(lmin), abs(lmax))
    if lmag / h_b > 2.0**61:
        raise ParameterError(f"base grid spacing h_b={h_b!r} is too small for losses of magnitude {lmag:.3g}")
    idx_rows = np.flatnonzero(keep)
    width = rows.hi[idx_rows] - rows.lo[idx_rows] + 1
    c_max = _row_cell_count(rows, keep, h_b) + extras.loss.size + 1
    # blocks of rows of similar width waste little padding (the order of the rows is immaterial)
    order = np.argsort(width, kind="stable")
    idx_rows, width = idx_rows[order], width[order]
    nmax = int(rows.N[idx_rows].max()) if idx_rows.size else 0
    factors = _factor_table(rows, idx_rows, width, nmax)
    if factors is not None:
        fin_f = factors.F[np.isfinite(factors.F)]
        labs = max(labs, float(np.max(np.abs(fin_f))) if fin_f.size else 0.0)
    tol_assign, mu = _margins(labs, lmag, h_b, c_max)
    k_first = int(math.floor((lmin - h_b) / h_b)) - 2
    k_last = int(math.floor((lmax + mu + h_b) / h_b)) + 2
    size = k_last - k_first + 2
    if size > MAX_BASE_POINTS:
        raise ParameterError(f"base grid spacing h_b={h_b:.3g} would need {size} points for losses in "
                             f"[{lmin:.4g}, {lmax:.4g}]; at most {MAX_BASE_POINTS} are allowed")
    xq_fin = np.asarray(rows.extra_log_q, dtype=float)[extras.fin]
    top = _log_scale(rows, keep, extras, xq_fin)
    inv_h = 1.0 / h_b
    totals = _CellTotals(size)
    shift_cells = tol_assign * inv_h - k_first  # y = L / h_b + shift_cells: the cell index
    _RowStreamer(rows, keep, idx_rows, width, nmax, factors, top, cells, shift_cells, inv_h, size).run(totals)
    if extras.loss.size:  # the extra atoms, in the top band
        with np.errstate(divide="ignore"):
            xi = np.clip(np.floor((extras.loss + tol_assign) * inv_h) - k_first, 0, size - 2).astype(np.int64)
        np.add.at(totals.P0, xi, np.exp(extras.log_p - top))
        np.add.at(totals.Q0, xi, np.exp(extras.log_p - extras.loss - top))
        totals.arg_max = max(totals.arg_max, float(np.max(np.abs(extras.log_p - top))))
    log_dense = _split_cells(totals, k_first, h_b, mu, top)
    log_a = factors.log_a if factors is not None else None
    return _base_atoms(rows, keep, log_dense, k_first, h_b, mu, top, labs, c_max, totals, extras, log_a)


def _base_atoms(rows, keep, log_dense, k_first, h_b, mu, top, labs, c_max, totals, extras, log_a) -> BaseSplit:
    """The base points as a :class:`BaseSplit` with the error budget of :func:`rows_base_split`.

    Relative error of every output mass: the part common to an atom's p and q (exp of the shifted
    log-mass, u per unit of its size + 4u; the binomial model), the factors (2u), the sums (c_max u),
    the split formula (4u, after the subtraction, which is exact when it cancels)."""
    ok = np.flatnonzero(log_dense > NEG_INF)
    kk = ok + k_first
    values = kk * h_b
    tail = extras.tail
    if totals.n_dropped:
        tail = sum_up(tail, exp_up(top - 2 * _BAND + math.log(totals.n_dropped)))
    arg_max = totals.arg_max
    rel_bin = BINOM_LOG_ERR * max(1.0, (arg_max + abs(top) + labs) / 100.0)
    wmag = (float(np.max(np.abs(rows.log_w[keep]))) if np.any(keep) else 0.0) + abs(top)
    wmag += float(np.max(np.abs(log_a))) if log_a is not None else 0.0
    rel = 1.01 * (U * (2 * arg_max + 4 * labs + 2 * wmag + 8) + rel_bin + (c_max + 2) * U + 12 * U)
    loss_tol = h_b + 2 * mu + 4 * U * (float(np.max(np.abs(values))) if values.size else 0.0)
    base_atoms = LossAtoms(values, log_dense[ok], extras.log_inf, min(1.0, tail), loss_tol, rel)
    return BaseSplit(kk, float(h_b), 2 * mu, base_atoms)


class RowsComponent:
    """One direction (P||Q) of a pair in row form as an FFT component: its atoms are streamed onto a
    base grid on demand (:func:`rows_base_split`) and never held all at once.

    ``atoms`` (the base atoms at the default spacing ``h_b``) stands in for the original atoms in
    the accountant's heuristics and in the Chernoff/product-event bounds (see
    :func:`rows_base_split` on ``loss_tol``)."""

    def __init__(self, rows, h_b: float):
        self.rows = rows
        self.h_b = float(h_b)
        self._bases: dict[float, BaseSplit] = {}

    def base(self, h_b: float | None = None) -> BaseSplit:
        h_b = self.h_b if h_b is None else float(h_b)
        if h_b not in self._bases:
            for key in [k for k in self._bases if k != self.h_b]:
                del self._bases[key]  # keep the default base and the newest one
            self._bases[h_b] = rows_base_split(self.rows, h_b)
        return self._bases[h_b]

    @property
    def atoms(self) -> LossAtoms:
        return self.base().atoms

    @property
    def size(self) -> int:
        return self.atoms.size
