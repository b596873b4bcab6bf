"""Neighbouring pairs in "ancillary rows" form: :class:`BinomialRows` (the k-RR strong/weak and clones pairs).

The data type only (construction, mirroring, streaming its atoms, exact single-use delta through
binomial tails); the certified single-use engine is :mod:`.rows_pld`, the streamed FFT placement
:mod:`.rows_stream`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping

import numpy as np

from shufflesim.accounting.numerics.binomial import CHUNK_CELLS, binom_rows, log_int_table, log_tail_sum, row_blocks


@dataclass(frozen=True)
class BinomialRows:
    """A neighbouring pair in "ancillary rows" form (the shape of the krr strong/weak and clones pairs).

    Outcomes are (r, x) with r a row and x in [0, N_r]; with B_r = Bin(N_r, 1/2),

        P(r, x) = exp(log_w[r]) B_r(x) (alpha[r] x + beta[r]),
        Q(r, x) = exp(log_w[r]) B_r(x) (alpha[r] (N_r - x) + beta[r]),

    so the row (an ancillary statistic) has the same law under P and Q, the privacy loss
    log((alpha x + beta)/(alpha (N - x) + beta)) increases with x, and P(r, x) = Q(r, N_r - x) (the
    pair is symmetric: delta_{P||Q} = delta_{Q||P}).  ``lo``/``hi`` are the columns kept when the pair
    is expanded into atoms; ``extra_log_p``/``extra_log_q`` are atoms outside the rows (e.g. the
    zero-loss atom of the strong adversary's visible coin); ``tail`` is a certified bound on the mass
    (under P and under Q) of the rows dropped and of the columns outside [lo, hi].  ``name``,
    ``params`` and ``reference`` describe the pair as for a :class:`~shufflesim.accounting.pld.pmf_pair.PMFPair`.

    The tight accountant takes this form directly (:class:`~shufflesim.accounting.rows.rows_pld.RowsPLD`:
    exact single use in O(rows) per eps; composition by streaming the atoms onto a grid block by
    block), so the 1e7-1e8 atoms of n = 1e6 never have to be held at once.
    """

    log_w: np.ndarray
    N: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    tail: float
    extra_log_p: np.ndarray
    extra_log_q: np.ndarray
    name: str = "rows"
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = ""

    @property
    def n_atoms(self) -> int:
        return int(np.maximum(self.hi - self.lo + 1, 0).sum() + self.extra_log_p.size)

    @property
    def tail_p(self) -> float:
        """Mass of P dropped by the truncation (as :attr:`PMFPair.tail_p`)."""
        return float(self.tail)

    @property
    def tail_q(self) -> float:
        """Mass of Q dropped by the truncation (equal to ``tail_p`` by symmetry of the bound)."""
        return float(self.tail)

    def mirrored(self) -> "BinomialRows":
        """The pair with the roles of P and Q exchanged, written again in row form.

        Q(r, x) = P(r, N_r - x) (Bin(N, 1/2) is symmetric), so the Q||P direction of these rows is the
        P||Q direction of the rows with the column windows reflected (x -> N_r - x) and the extra
        atoms' two sides swapped.
        """
        return replace(self, lo=self.N - self.hi, hi=self.N - self.lo,
                       extra_log_p=self.extra_log_q, extra_log_q=self.extra_log_p)

    @property
    def symmetric(self) -> bool:
        """True when every kept window is its own reflection and the extra atoms are swap-invariant:
        then delta_{P||Q} = delta_{Q||P} over the kept atoms."""
        keep = self.lo <= self.hi
        if not np.array_equal((self.lo + self.hi)[keep], self.N[keep]):
            return False
        a = sorted(zip(self.extra_log_p.tolist(), self.extra_log_q.tolist()))
        b = sorted(zip(self.extra_log_q.tolist(), self.extra_log_p.tolist()))
        return a == b

    def iter_atoms(self, cells: int = CHUNK_CELLS) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Yield (log_p, log_q, row, x) for the kept atoms in blocks of about ``cells`` atoms.

        An accountant can place the atoms on its grid block by block without holding them all; the
        extra atoms come first (row = -1, x = -1).  Atoms impossible under both sides are skipped.
        """
        if self.extra_log_p.size:
            m = -np.ones(self.extra_log_p.size, dtype=np.int64)
            yield self.extra_log_p, self.extra_log_q, m, m
        width = self.hi - self.lo + 1
        L = log_int_table(int(self.N.max()) + 2) if self.N.size else None
        for rows in row_blocks(width, cells):
            G, mask = binom_rows(self.N[rows], 0.5, self.lo[rows], self.hi[rows], log_int=L)
            x = (self.lo[rows][:, None] + np.arange(G.shape[1])[None, :]).astype(float)
            N = self.N[rows][:, None].astype(float)
            A, B = self.alpha[rows][:, None], self.beta[rows][:, None]
            G += self.log_w[rows][:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                lp = (G + np.log(A * x + B))[mask]  # alpha, beta are O(1): no under/overflow
                lq = (G + np.log(A * (N - x) + B))[mask]
            r = np.broadcast_to(rows[:, None], G.shape)[mask]
            xx = x[mask].astype(np.int64)
            keep = (lp > -np.inf) | (lq > -np.inf)
            if keep.all():
                yield lp, lq, r, xx
            else:
                yield lp[keep], lq[keep], r[keep], xx[keep]

    def expand(self, *, with_outcomes: bool = False):
        """All kept atoms as (log_p, log_q) -- and (row, x) when ``with_outcomes`` -- in one piece."""
        total = self.n_atoms
        log_p = np.empty(total)
        log_q = np.empty(total)
        rows = np.empty(total, dtype=np.int64) if with_outcomes else None
        xs = np.empty(total, dtype=np.int64) if with_outcomes else None
        pos = 0
        for lp, lq, r, x in self.iter_atoms():
            k = lp.size
            log_p[pos : pos + k] = lp
            log_q[pos : pos + k] = lq
            if with_outcomes:
                rows[pos : pos + k] = r
                xs[pos : pos + k] = x
            pos += k
        out = (log_p[:pos], log_q[:pos])
        return out + (rows[:pos], xs[:pos]) if with_outcomes else out

    def log_delta(self, eps: float) -> float:
        """log of the exact delta(eps) of the rows kept (all columns 0..N_r), without expanding atoms.

        Row r contributes exp(log_w) [alpha (1 + e^eps) S1 - (e^eps (alpha N + beta) - beta) S0] with
        S0 = P(B_r >= x*) and S1 = E[B_r 1{B_r >= x*}] = (N/2) P(Bin(N-1, 1/2) >= x* - 1), where x* is
        the first column whose loss exceeds eps; binomial tails come from scipy's regularised
        incomplete beta (tails below ~1e-308 underflow to 0).  Cost O(rows).  A lower bound on the
        pair's delta; add ``tail`` for an upper bound.  Equal in both directions by symmetry (extra
        atoms included).  eps > 700 is evaluated at 700 (an upper bound there).
        """
        eps = min(float(eps), 700.0)  # beyond e^700 only infinite-loss atoms remain; clamping is conservative
        ee = math.exp(eps)
        N = self.N.astype(float)
        a, b = self.alpha, self.beta
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            thr = np.where(a > 0, (ee * (a * N + b) - b) / (a * (1.0 + ee)), np.inf)
            xs = np.floor(np.minimum(thr, N + 1.0)) + 1.0  # first column with loss > eps
            xs = np.maximum(xs, 0.0)
            from scipy.stats import binom as _binom  # imported here: scipy.stats costs ~0.4 s to import

            ls0 = _binom.logsf(xs - 1.0, N, 0.5)
            ls1 = np.log(N / 2.0) + _binom.logsf(xs - 2.0, N - 1.0, 0.5)
            t1 = np.log(a) + np.log1p(ee) + ls1
            t0 = np.log(ee * (a * N + b) - b) + ls0
            diff = np.where(t1 > t0, t1 + np.log(-np.expm1(t0 - t1)), -np.inf)
            diff = np.where(xs > N, -np.inf, diff)
            terms = self.log_w + diff
        parts = [terms[np.isfinite(terms)]]
        lp, lq = self.extra_log_p, self.extra_log_q
        m = lp > lq + eps
        if m.any():
            with np.errstate(divide="ignore"):
                parts.append(lp[m] + np.log(-np.expm1(lq[m] + eps - lp[m])))
        return log_tail_sum(np.concatenate(parts))


def bucket_rows(rows, keep: np.ndarray):
    """Rows grouped by N: (group of each kept row, distinct N, union windows LO/HI per group)."""
    N = rows.N[keep]
    uniq, grp = np.unique(N, return_inverse=True)
    LO = np.full(uniq.size, np.iinfo(np.int64).max, dtype=np.int64)
    HI = np.full(uniq.size, -1, dtype=np.int64)
    np.minimum.at(LO, grp, rows.lo[keep].astype(np.int64))
    np.maximum.at(HI, grp, rows.hi[keep].astype(np.int64))
    return grp, uniq.astype(np.int64), LO, HI
