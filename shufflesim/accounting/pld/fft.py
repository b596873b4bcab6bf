"""n_c-fold composition of privacy loss distributions on a grid, with certified two-sided bounds.

Method (Koskela, Heikkilä, Honkela 2021, arXiv:2106.00477, §2.2, Lemma 6 and Algorithm 1, with a
different treatment of the grid range and a rigorous error budget).  One direction X||Y of every
component is handled at a time; delta = max over the two directions of the composed pair
(P_1 x ... x P_r, Q_1 x ... x Q_r).

1. **Placement on a grid** h·Z (:mod:`.placement`): rounding up / down (Lemma 6) or the mass- and
   Q-mass-preserving split; the strategy travels with each grid PMF (:class:`~.placement.Placement`).

2. **Exponential tilting** (optional, lam >= 0).  Each grid PMF x_i is replaced by
   x~_i(s) = x_i(s) e^{lam s} / C_i(lam), C_i(lam) = sum_s x_i(s) e^{lam s}; the composed PMFs satisfy
   y(s) = e^{Lambda - lam s} y~(s) with Lambda = sum_i n_i log C_i(lam), exactly.  Hence

       delta_fin(eps) = e^{Lambda - lam eps} sum_s w(s) y~(s),   w(s) = f(s) e^{-lam (s - eps)} <= c(lam),

   with c(lam) = lam^lam/(lam+1)^(lam+1) (see :mod:`.tails`).  With lam near the Chernoff-optimal value
   for eps, the terms that make up a tiny delta are O(1) in the tilted measure, so the FFT's absolute
   round-off (~1e-16 of the total tilted mass) becomes a *relative* error of delta: deltas far below
   1e-16 come out with full relative accuracy.  lam = 0 is the plain Fourier accountant.

3. **Circular convolution on a window** [lo, lo + M) of grid indices (M = FFT length).  Every component
   is folded modulo M (index k -> k mod M); folding commutes with convolution, so the FFT returns, at
   each residue, the composed tilted mass summed over all indices congruent to it ("aliasing").  The
   window is chosen so that the tilted mass outside it, P~(S outside window), is tiny; that mass is
   bounded rigorously with a tilted Chernoff bound,

       P~(S >= a) <= exp( sum_i n_i [log C_i(lam + th) - log C_i(lam)] - th a )   (any th > 0),

   and its mirror image for the lower tail.  If the window covers the whole support, there is no
   aliasing and these terms are exactly zero.

4. **Error budget.**  Writing c^ for the computed window, c for the exact circular convolution of the
   computed inputs, and y~ for the tilted composed mass restricted to the window, aliasing gives
   c >= y~ on the window and sum(c - y~) = P~(S outside window).  Then, for every eps,

   upper: delta_fin <= e^{Lambda - lam eps} [ sum_j w_j max(c^_j, 0) (1 + rel) + rho ||w||_2
                                               + P~(S >= hi) + c(lam) P~(S < lo) ]
          (the last term only if (lo - 1) h > eps; mass above the window contributes
           <= e^{Lambda - lam eps} P~(S >= hi) because f <= 1 and e^{-lam (s - eps)} <= 1 there, or
           f e^{-lam(s-eps)} <= c(lam) <= 1 if the window ends below eps);
   lower: delta_fin >= e^{Lambda - lam eps} [ sum_j w_j c^_j (1 - rel) - gamma sum_j w_j |c^_j|
                                               - rho ||w||_2 - c(lam) P~(S outside window) ].

   * rho bounds ||c^ - c||_2.  Model: a length-M (inverse) real FFT has relative l2 error at most
     eps_F = FFT_KAPPA · u · ceil(log2 M) (Higham, *Accuracy and Stability of Numerical Algorithms*,
     Thm 24.2, gives (log2 M) eta/(1 - (log2 M) eta) with eta ~ 6.7u for radix-2 with accurate twiddle
     factors; FFT_KAPPA = 10 adds a margin for mixed radices).  Inputs are non-negative with total mass
     <= 1, so ||x~_i||_2 <= 1 and every Fourier coefficient has modulus <= 1.  A product of N = sum n_i
     spectra (binary powering for repeated factors) then has l2 error <= sqrt(M)(N eps_F + 3 N u), and
     the inverse transform (scaled by 1/M) gives
         ||c^ - c||_2 <= rho = 1.01 [ (N + 1) eps_F + 3 N u ] + (underflow: N K 1e-300).
     By Cauchy-Schwarz |sum_j w_j (c^_j - c_j)| <= rho ||w||_2.  ``tests/test_fft_compose.py`` checks
     the model against direct convolution.
   * rel covers the relative rounding of the tilted inputs (their exponent arguments, the log-sum
     normalisers, the folding sums): rel = 1.01 N theta_max + REL_SLACK; non-negative inputs perturbed
     by factors (1 + theta) give outputs perturbed by at most (1 + theta_max)^N.
   * gamma covers the evaluation of sum_j w_j c^_j through suffix sums computed by a first-order
     recursion (or its blocked form with the same 2Mu bound, _geometric_suffix), gamma = (3M + 40) u + 8u (1 + lam)(max|s| + |eps| + 1); the signed suffix
     sums are the difference of those of max(c^, 0) and max(-c^, 0) (the absolute ones their sum: two
     more roundings, in the constant), and a window sum sum_{i0 <= j <= i1} a^{j-i0} c^+_j is read as
     U[i0] - a^L U[i1 + 1] with the same relative error bound gamma (U[i0] + a^L U[i1 + 1]) (issue 21).

   The round-off floor of the plain accountant (lam = 0) is rho ||w||_2 ~ 1e-10..1e-9 of the total
   mass for M ~ 1e6; below it :mod:`.tight` tilts (or, if tilting is disabled, falls back to
   :mod:`.tails`).

Exact composition without a grid is in :mod:`.exact_compose`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from shufflesim.errors import AccuracyError
from shufflesim.accounting.numerics.logspace import NEG_INF, REL_SLACK, U, exp_down, exp_up
from shufflesim.accounting.pld.mgf import log_c
from shufflesim.accounting.pld.placement import GridLoss, Placement
from shufflesim.accounting.pld.tails import composed_log_inf_mass, composed_tail


def _sfft():
    """scipy.fft, imported on first use: only an FFT composition needs it (issue 17: start-up time)."""
    import scipy.fft

    return scipy.fft


#: margin factor of the FFT round-off model (see module docstring)
FFT_KAPPA = 10.0


# ---------------------------------------------------------------------------------------------
# tilted tail bounds and window choice
# ---------------------------------------------------------------------------------------------

GridComponents = Sequence[tuple[GridLoss, int]]


def _tail_exponent_sketch(comps: GridComponents, log_cs: Sequence[float], lam: float, th: float) -> float:
    """Upper envelope of sum_i n_i [log C_i(lam + th) - log C_i(lam)] (th may be negative)."""
    return float(sum(n * (g.sketch.log_mgf_upper(lam + th) - lc) for (g, n), lc in zip(comps, log_cs)))


def _tail_exponent_exact(comps: GridComponents, log_cs: Sequence[float], lam: float, th: float) -> float:
    return float(sum(n * (g.log_mgf(lam + th) + math.log1p(REL_SLACK) - lc) for (g, n), lc in zip(comps, log_cs)))


def _scale(comps: GridComponents, lam: float) -> float:
    var = 0.0
    for g, n in comps:
        _, v = g.sketch.tilted_moments(lam)
        var += n * v
    h = comps[0][0].h
    return max(math.sqrt(var), h)


def _boundary(comps, log_cs, lam, log_tau, side: str) -> float:
    """Loss value a such that the tilted tail beyond a is <= e^{log_tau} (via a scalar search on th).

    side "upper": smallest a found with P~(S >= a) <= tau; "lower": largest a with P~(S <= a) <= tau.
    Uses the sketch (an upper envelope), so the answer is conservative.
    """
    sc = _scale(comps, lam)
    sign = 1.0 if side == "upper" else -1.0

    def a_of(x: float) -> float:
        # upper side: the boundary a(th); lower side: minus the boundary b(th); minimise both
        th = math.exp(x)
        return (_tail_exponent_sketch(comps, log_cs, lam, sign * th) - log_tau) / th

    lo_x, hi_x = math.log(1e-6 / sc), math.log(1e6 / sc)
    from scipy.optimize import minimize_scalar  # imported here: heavy, and only composition needs it

    res = minimize_scalar(a_of, bounds=(lo_x, hi_x), method="bounded", options={"xatol": 1e-3})
    best = min(float(res.fun), a_of(lo_x), a_of(hi_x))
    return sign * best


def _tail_log_bound(comps, log_cs, lam, a: float, side: str) -> float:
    """log of a certified bound on P~(S >= a) (side "upper") or P~(S <= a) (side "lower")."""
    sign = 1.0 if side == "upper" else -1.0
    sc = _scale(comps, lam)

    def g(x: float) -> float:
        th = math.exp(x)
        return _tail_exponent_sketch(comps, log_cs, lam, sign * th) - sign * th * a

    from scipy.optimize import minimize_scalar

    res = minimize_scalar(g, bounds=(math.log(1e-6 / sc), math.log(1e6 / sc)), method="bounded",
                          options={"xatol": 1e-3})
    th = math.exp(float(res.x))
    val = _tail_exponent_exact(comps, log_cs, lam, sign * th) - sign * th * a
    return min(0.0, val)


@dataclass(frozen=True)
class Window:
    """Grid-index window [lo, lo + M) of a circular convolution of length M."""

    lo: int
    M: int


def choose_window(comps: GridComponents, lam: float, log_cs: Sequence[float], tau_w: float,
                  max_size: int, min_size: int = 64) -> Window:
    """Window containing all but ~tau_w of the tilted composed mass (or the whole support if smaller)."""
    h = comps[0][0].h
    kmin = sum(n * g.kmin for g, n in comps)
    kmax = sum(n * g.kmax for g, n in comps)
    full = kmax - kmin + 1
    if full <= max(min_size, 1 << 12):
        return Window(kmin, _sfft().next_fast_len(max(full, min_size), real=True))
    log_tau = math.log(tau_w / 2)
    hi_a = _boundary(comps, log_cs, lam, log_tau, "upper")
    lo_a = _boundary(comps, log_cs, lam, log_tau, "lower")
    lo = max(kmin, int(math.floor(lo_a / h)) - 2)
    hi = min(kmax, int(math.ceil(hi_a / h)) + 2)
    if hi < lo:
        lo, hi = min(lo, hi), max(lo, hi)
    width = hi - lo + 1
    if full <= 2 * width:
        lo, width = kmin, full
    M = _sfft().next_fast_len(max(width, min_size), real=True)
    if M > max_size:
        raise AccuracyError(
            f"the composed privacy loss needs a grid of {M} points at spacing h={h:.3g} "
            f"(> max_grid_size={max_size}); raise max_grid_size or loosen target_accuracy"
        )
    return Window(lo, M)


# ---------------------------------------------------------------------------------------------
# the composition itself
# ---------------------------------------------------------------------------------------------

def cpow(z: np.ndarray, n: int) -> np.ndarray:
    """z**n by binary powering (relative error <= ~3 n u for |z| <= 1)."""
    result = None
    base = z
    while n > 0:
        if n & 1:
            result = base.copy() if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    return result


def _suffix(x: np.ndarray, a: float) -> np.ndarray:
    """s_j = sum_{j' >= j} x_{j'} a^{j' - j} of a non-negative ``x``, length M + 1 with s_M = 0; 0 <= a <= 1.

    Relative error <= 2 M u per entry (as the first-order recursion s_j = x_j + a s_{j+1}, two roundings a
    step, that gamma's 3M u of :meth:`GridComposition._common` was set for): see :func:`_geometric_suffix`."""
    out = np.zeros(x.size + 1)
    if a == 1.0:
        out[:-1] = np.cumsum(x[::-1])[::-1]
    else:
        out[:-1] = _geometric_suffix(x, a)
    return out


#: :func:`_geometric_suffix` works in blocks of B <= 1/|log a| entries and needs B >= this (else: the recursion)
SUFFIX_MIN_BLOCK = 16


def _geometric_suffix(x: np.ndarray, a: float) -> np.ndarray:
    """s_j = sum_{j' >= j} x_{j'} a^{j' - j} (x >= 0, 0 <= a < 1) in blocks, with numpy only (issue 21: the
    recursion was scipy.signal.lfilter, whose import costs ~0.5 s of CPU at the start of every composition).

    On the reversed array r (r_i = x_{M-1-i}), s is the prefix recursion p_i = r_i + a p_{i-1}.  Blocks of
    B = min(M, floor(1/|L|)) entries, L = log a (so a^{+-k} in [e^-1, e] inside a block): with w_k = exp(k L) and
    w'_k = exp(-k L), the block's own part is q_k = w_k sum_{k' <= k} r_{k'} w'_{k'} (a sequential cumsum), the
    blocks' ends P_b = q_{b,B-1} + a^B P_{b-1} (a recursion over the M/B blocks) and
    p_{bB+k} = q_{b,k} + a^{k+1} P_{b-1}.  Error, every term non-negative (u = 2^-53): w_k, w'_k and
    a^{k+1} = exp((k + 1) L) are within theta <= 8u of the powers of the float a (|k L| <= 1: log, product and
    exp each within a unit or two); q_k within (B - 1) u (the cumsum) + 2 theta + 2u = (B + 17) u; each carry
    step adds theta + 2u, so P_b is within (B + 17) u + 10 u M/B, and p within (B + 28) u + 10 u M/B <= 2 M u
    for M >= 128 and 16 <= B <= M (B + 10 M/B <= M + 10 M/16, and 28 <= 0.375 M): the bound of the recursion
    (two roundings a step) that gamma's 3M u (:meth:`GridComposition._common`) covers.  Where B < 16 or
    M < 128 that recursion itself runs (in Python for M <= 65536, else scipy's lfilter).  Underflow is treated
    as in the recursion (w_k >= e^-1: a product underflows only where x does)."""
    M = x.size
    if a <= 0.0:  # exp(-lam h) underflowed: s_j = x_j + 0 s_{j+1}, exactly as the recursion
        return np.array(x, dtype=float, copy=True)
    L = math.log(a)
    B = int(1.0 / -L) if L < 0 else M
    if M < 128 or B < SUFFIX_MIN_BLOCK:
        if M <= 65536:
            out = np.empty(M)
            acc = 0.0
            vals = x.tolist()
            for j in range(M - 1, -1, -1):
                acc = vals[j] + a * acc
                out[j] = acc
            return out
        from scipy.signal import lfilter  # rare (a steep tilt on a long grid); scipy.signal costs ~0.5 s to import

        return lfilter([1.0], [1.0, -a], x[::-1])[::-1]
    B = min(B, M)
    nb = -(-M // B)
    w, w_inv = _block_powers(L, B)
    if nb == 1:
        y = x[::-1] * w_inv
        np.cumsum(y, out=y)
        y *= w
        return y[::-1]
    Y = np.zeros(nb * B)
    Y[:M] = x[::-1]
    Y = Y.reshape(nb, B)
    Y *= w_inv
    np.cumsum(Y, axis=1, out=Y)
    Y *= w
    A = math.exp(B * L)  # a^B
    ends = Y[:, B - 1].tolist()
    prev = [0.0] * nb  # P_{b-1}
    acc = 0.0
    for b in range(nb - 1):
        acc = ends[b] + A * acc
        prev[b + 1] = acc
    v = np.exp((np.arange(B, dtype=float) + 1.0) * L)  # a^{k+1}
    Y += v[None, :] * np.asarray(prev)[:, None]
    return Y.reshape(-1)[:M][::-1]


_POWERS: dict = {}


def _block_powers(L: float, B: int) -> tuple[np.ndarray, np.ndarray]:
    """(exp(k L), exp(-k L)) for k < B, the last two (L, B) kept (each composition asks twice per ratio)."""
    key = (L, B)
    if key not in _POWERS:
        if len(_POWERS) >= 2:
            _POWERS.pop(next(iter(_POWERS)))
        kL = np.arange(B, dtype=float) * L
        _POWERS[key] = (np.exp(kL), np.exp(-kL))
    return _POWERS[key]


@dataclass(frozen=True, eq=False)
class GridComposition:
    """The FFT composition of one direction on one placement, with certified bounds on delta_dir.

    Placement "up" gives upper bounds only, "down" lower bounds only, "split" both (see
    :meth:`interval`); the error terms are those of the module docstring, item 4.
    """

    placement: Placement
    h: float
    lam: float
    window: Window
    n_total: int
    log_norm: float
    log_tail_above: float
    log_tail_below: float
    rho: float
    rel: float
    s_max: float
    s_absmax: float
    log_inf: float
    tail: float
    shift: float
    c: np.ndarray
    suffixes: dict

    @property
    def M(self) -> int:
        return self.window.M

    # ---------------------------------------------------------------- pieces
    def _common(self, eps: np.ndarray) -> dict:
        h, lam, M, lo = self.h, self.lam, self.M, self.window.lo
        j0 = np.floor(eps / h - lo).astype(np.int64) + 1
        j0 = np.clip(j0, 0, M)
        for _ in range(2):  # fix-ups so that s_{j0} > eps >= s_{j0 - 1}
            s0 = (lo + j0) * h
            j0 = np.where((j0 < M) & (s0 <= eps), j0 + 1, j0)
            sm = (lo + j0 - 1) * h
            j0 = np.where((j0 > 0) & (sm > eps), j0 - 1, j0)
        s0 = (lo + j0) * h
        d0 = np.where(j0 < M, s0 - eps, 0.0)
        n_rest = (M - j0).astype(float)
        log_cl = float(log_c(lam))
        with np.errstate(divide="ignore"):
            half_log_n = 0.5 * np.log(n_rest)
            if lam > 0:
                log_geo = -lam * d0 - 0.5 * math.log(-math.expm1(-2 * lam * h))
                log_w = np.minimum(half_log_n + min(0.0, log_cl), log_geo)
            else:
                log_w = half_log_n
            log_rho = math.log(self.rho) if self.rho > 0 else NEG_INF
        gamma = (3 * M + 40) * U + 8 * U * (1 + lam) * (self.s_absmax + np.abs(eps) + 1)
        return {"j0": j0, "log_e1": -lam * d0, "r2": np.exp(-d0), "log_cl": log_cl, "log_ro": log_rho + log_w,
                "gamma": gamma, "logpre": self.log_norm - lam * eps, "beyond": eps >= self.s_max}

    @staticmethod
    def _log(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), NEG_INF)

    def _upper_log_fin(self, eps: np.ndarray, cm: dict) -> np.ndarray:
        """log of the upper bound on the finite part (pessimistic placements)."""
        j0, r2 = cm["j0"], cm["r2"]
        Up, Vp = self.suffixes["pos"]
        main = np.maximum(Up[j0] - r2 * Vp[j0], 0.0)
        ev = cm["gamma"] * (Up[j0] + r2 * Vp[j0])
        below = np.where((self.window.lo - 1) * self.h > eps, cm["log_cl"] + self.log_tail_below, NEG_INF)
        log_fixed = np.logaddexp(np.logaddexp(cm["log_ro"], self.log_tail_above), below)
        log_b = np.logaddexp(cm["log_e1"] + self._log(main + ev), log_fixed)
        out = cm["logpre"] + log_b + math.log1p(self.rel)
        return np.where(cm["beyond"], NEG_INF, out)

    def _lower_terms(self, eps: np.ndarray, cm: dict) -> tuple[np.ndarray, np.ndarray]:
        """(log positive part, log subtracted part) of the lower bound, relative to e^{logpre}."""
        j0, r2 = cm["j0"], cm["r2"]
        Us, Vs, Ua, Va = self.suffixes["signed"]
        a = (Us[j0] - r2 * Vs[j0]) * (1 - self.rel) - cm["gamma"] * (Ua[j0] + r2 * Va[j0])
        log_pos = cm["log_e1"] + self._log(a)
        log_neg = np.logaddexp(cm["log_ro"], cm["log_cl"] + np.logaddexp(self.log_tail_above, self.log_tail_below))
        return log_pos, log_neg

    def split_correction(self, eps: np.ndarray) -> np.ndarray:
        """log of (delta^split - delta)'s bound, relative to e^{logpre} (placement "split").

        For a product outcome o of the original pair with P-mass p_o, the split produces sub-outcomes
        with the same total P- and Q-mass whose losses lie in an interval of length n h containing
        the (widened) loss of o.  Its contribution changes only if the sub-outcomes straddle eps, and
        then by at most p_o (1 - e^{-n(h + mu)}); all such sub-outcomes have loss in (eps - n h,
        eps + n h].  Widening the losses by at most mu adds at most n mu P'(S' > eps).  Hence

            delta >= delta^split - (1 - e^{-n(h+mu)}) P'(eps - nh < S' <= eps + nh) - n mu P'(S' > eps),

        with P' the split composition, bounded here from the computed window (weights e^{-lam(s-eps)}
        of the tilted sums, round-off rho, tilted tails outside the window); P'(S' > eps) <=
        e^{Lambda - lam eps}(1 + rel) because e^{-lam(s - eps)} <= 1 there.
        """
        h, lam, M, lo, n = self.h, self.lam, self.M, self.window.lo, self.n_total
        span = n * h
        ja = np.floor((eps - span) / h - lo).astype(np.int64)
        jb = np.ceil((eps + span) / h - lo).astype(np.int64)
        # the window's grid indices [i0, i1]; its weighted sum from the suffix sums U of max(c^, 0) at ratio
        # a = e^{-lam h} (issue 21: O(1) per eps instead of O(n)):  sum_{i0 <= j <= i1} a^{j - i0} cp_j =
        # U[i0] - a^L U[i1 + 1], L = i1 - i0 + 1, evaluated with error <= gamma (U[i0] + a^L U[i1 + 1])
        # (gamma of _common covers the suffix recursion and the power); sum of the squared weights
        # sum_{k < L} a^{2k} in closed form
        i0 = np.clip(ja, 0, M)
        i1 = np.clip(jb, -1, M - 1)
        L = np.maximum(i1 - i0 + 1, 0)
        empty = L == 0
        i0c = np.where(empty, M, i0)
        top_w = np.where(empty, 0.0, -lam * ((lo + np.minimum(i0c, M - 1)) * h - eps))
        Up = self.suffixes["pos"][0]
        aL = np.exp(-lam * h * L)
        nxt = Up[np.minimum(i0c + L, M)]
        gamma = (3 * M + 40) * U + 8 * U * (1 + lam) * (self.s_absmax + np.abs(eps) + 1)
        head = Up[i0c]
        win = np.maximum(head - aL * nxt, 0.0) + gamma * (head + aL * nxt)
        if lam > 0:
            sq = np.expm1(-2 * lam * h * L) / math.expm1(-2 * lam * h)
        else:
            sq = L.astype(float)
        sq = sq * (1 + 1e-12) + L * 1e-300
        win = np.where(empty, 0.0, win + self.rho * np.sqrt(sq))
        win *= 1 + self.rel
        log_win = self._log(win) + top_w
        # tilted mass beyond the window that could fall in (eps - span, eps + span]
        top = (lo + M) * h
        above = np.where(eps + span >= top,
                         -lam * (np.maximum(top, eps - span) - eps) + self.log_tail_above, NEG_INF)
        below = np.where(eps - span < lo * h, lam * span + self.log_tail_below, NEG_INF)
        log_win = np.logaddexp(log_win, np.logaddexp(above, below))
        log_fac = math.log(-math.expm1(-n * (h + self.shift)))
        log_mu = math.log(n * self.shift * (1 + self.rel)) if self.shift > 0 else NEG_INF
        return np.logaddexp(log_fac + log_win, log_mu)

    # ---------------------------------------------------------------- public
    def interval(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta_dir(eps); the trivial bound where unavailable."""
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        cm = self._common(eps)
        inf_lo = exp_down(self.log_inf + math.log1p(-REL_SLACK))
        inf_up = exp_up(self.log_inf + math.log1p(REL_SLACK))
        lo_triv = np.full(eps.shape, inf_lo)
        if self.placement.gives_upper:
            logfin = self._upper_log_fin(eps, cm)
            fin = np.array([exp_up(float(v)) for v in logfin])
            # two additions: two ulps up keep the sum above the exact one
            total = np.nextafter(np.nextafter(inf_up + fin + self.tail, np.inf), np.inf)
            upper = np.where((inf_up == 0) & (fin == 0) & (self.tail == 0), 0.0, np.minimum(total, 1.0))
        else:
            upper = np.ones(eps.shape)
        if not self.placement.gives_lower:
            return lo_triv, upper
        log_pos, log_neg = self._lower_terms(eps, cm)
        if self.placement.second_order:
            log_neg = np.logaddexp(log_neg, self.split_correction(eps))
        with np.errstate(invalid="ignore"):
            ok = log_pos > log_neg
            diff = np.where(ok, log_pos + np.log(-np.expm1(np.where(ok, log_neg - log_pos, -1.0))), NEG_INF)
        logfin = np.minimum(cm["logpre"] + diff, 0.0)
        fin = np.where(cm["beyond"] | ~ok, 0.0, np.nextafter(np.exp(np.where(ok, logfin, 0.0)), 0.0))
        lower = np.minimum(np.maximum(np.nextafter(inf_lo + fin, 0.0), 0.0), 1.0)
        return np.minimum(lower, upper), upper

    def fixed_error(self, eps) -> np.ndarray:
        """The part of the interval's width that does not shrink with h (round-off, aliasing, tails)."""
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        cm = self._common(eps)
        terms = [cm["log_ro"], np.full(eps.shape, self.log_tail_above),
                 cm["log_cl"] + np.full(eps.shape, self.log_tail_below)]
        key = "pos" if "pos" in self.suffixes else "signed"
        Us, Vs = self.suffixes[key][0], self.suffixes[key][1]
        j0, r2 = cm["j0"], cm["r2"]
        main = np.abs(Us[j0] - r2 * Vs[j0])
        terms.append(cm["log_e1"] + self._log(cm["gamma"] * (np.abs(Us[j0]) + r2 * np.abs(Vs[j0])) + self.rel * main))
        log_err = terms[0]
        for t in terms[1:]:
            log_err = np.logaddexp(log_err, t)
        with np.errstate(over="ignore"):
            val = 2.0 * np.exp(np.minimum(cm["logpre"] + log_err, 700.0))
        return np.where(cm["beyond"], 0.0, val)

    def ratio(self, eps: float) -> float:
        """P(S > eps)/delta_fin(eps) estimated from the suffix sums."""
        cm = self._common(np.array([eps]))
        key = "pos" if "pos" in self.suffixes else "signed"
        Us, Vs = self.suffixes[key][0], self.suffixes[key][1]
        j0 = int(cm["j0"][0])
        if j0 >= self.M:
            return 1.0
        main = float(Us[j0] - cm["r2"][0] * Vs[j0])
        if main <= 0:
            return 1.0
        return max(float(Us[j0]) / main, 1.0)


def compose_grid(comps: GridComponents, *, lam: float, window: Window, workers: int = 1) -> GridComposition:
    """Compose ``comps`` (grid PMFs with multiplicities) at tilt ``lam`` on ``window`` via the FFT."""
    placement = comps[0][0].placement
    h = comps[0][0].h
    M, lo = window.M, window.lo
    n_total = int(sum(n for _, n in comps))
    atoms_comps = [(g.atoms, n) for g, n in comps]
    log_inf = composed_log_inf_mass(atoms_comps)
    tail = composed_tail(atoms_comps)
    shift = max(g.shift for g, _ in comps)
    if any(g.size == 0 for g, n in comps if n > 0):
        # no finite product outcome: only infinite mass and tails remain
        z = np.zeros(M + 1)
        sfx = {"pos": (z, z), "signed": (z, z, z, z), "cpos": np.zeros(M)}
        return GridComposition(placement, h, lam, window, n_total, NEG_INF, NEG_INF, NEG_INF, 0.0, 0.0,
                               NEG_INF, 0.0, log_inf, tail, shift, np.zeros(M), sfx)
    log_cs = [g.log_mgf(lam) for g, _ in comps]
    spectrum = None
    theta = 0.0
    n_atoms = 0
    for (g, n), lc in zip(comps, log_cs):
        if n == 0:
            continue
        arg = g.log_mass + lam * g.values - lc
        x = np.bincount(np.mod(g.k, M), weights=np.exp(arg), minlength=M)
        fold = -(-g.size // M) + 1
        theta = max(theta, 4 * U * (g.max_abs_log_mass + abs(lam) * float(np.max(np.abs(g.values))) + abs(lc) + 2)
                    + (math.log2(g.size + 1) + 10) * U + fold * U + g.atoms.mass_rel_err + g.agg_rel)
        n_atoms += g.size
        X = _sfft().rfft(x, workers=workers)
        del x
        X = cpow(X, int(n))
        spectrum = X if spectrum is None else spectrum * X
    c = _sfft().irfft(spectrum, n=M, workers=workers)
    del spectrum
    c = np.roll(c, -(lo % M))
    eps_f = FFT_KAPPA * U * math.ceil(math.log2(max(M, 2)))
    rho = 1.01 * ((n_total + 1) * eps_f + 3 * n_total * U) + n_total * n_atoms * 1e-300
    rel = 1.01 * n_total * theta + REL_SLACK
    kmin = sum(n * g.kmin for g, n in comps)
    kmax = sum(n * g.kmax for g, n in comps)
    log_above = NEG_INF if lo + M - 1 >= kmax else _tail_log_bound(comps, log_cs, lam, (lo + M) * h, "upper")
    log_below = NEG_INF if lo <= kmin else _tail_log_bound(comps, log_cs, lam, (lo - 1) * h, "lower")
    a1 = math.exp(-lam * h)
    a2 = math.exp(-(lam + 1.0) * h)
    sfx: dict = {}
    if placement.gives_upper:
        cp = np.maximum(c, 0.0)
        sfx["pos"] = (_suffix(cp, a1), _suffix(cp, a2))
        sfx["cpos"] = cp
    if placement.gives_lower:
        # signed suffixes as (suffix of max(c, 0)) - (suffix of max(-c, 0)), their absolute counterparts as the
        # sum: two recursions fewer when both ends are needed (issue 21); the two extra roundings of the
        # difference / sum are inside gamma's constant (see _common)
        cn = np.maximum(-c, 0.0)
        Pn = (_suffix(cn, a1), _suffix(cn, a2))
        Pp = sfx["pos"] if placement.gives_upper else (_suffix(np.maximum(c, 0.0), a1), _suffix(np.maximum(c, 0.0), a2))
        sfx["signed"] = (Pp[0] - Pn[0], Pp[1] - Pn[1], Pp[0] + Pn[0], Pp[1] + Pn[1])
    s_absmax = max(abs(lo), abs(lo + M), abs(kmin), abs(kmax)) * h
    # beyond s_max the finite part is exactly 0: the grid's largest sum (down grid: it is below the
    # true maximum, which is irrelevant for a lower bound) or the atoms' largest sum, whichever is smaller
    s_true = float(sum(n * (g.atoms.max_loss + g.atoms.loss_tol) for g, n in comps))
    s_true += 4 * U * abs(s_true)
    s_max = min(kmax * h, s_true) if placement.gives_upper else kmax * h
    return GridComposition(
        placement, h, lam, window, n_total, float(sum(n * lc for (g, n), lc in zip(comps, log_cs))),
        log_above, log_below, rho, rel, s_max, s_absmax, log_inf, tail, shift, c, sfx,
    )
