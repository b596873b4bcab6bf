"""The weak adversary's k-RR pair at any n: certified bucket rows built from CDF differences, streamed
strip by strip, never materialising its ~n rows (issue 21; docs/theory.md#bucketed-weak).

The weak pair (:func:`~shufflesim.accounting.pairs.krr.krr_weak_pair`; Koskela et al., seed 001, Theorem 10,
Appendix A) has rows (b, s'): b ~ Bin(n − 1, γ) other users randomised, t = b + 1 messages left after the
truthful reports are removed, s' = n1 + n2 of them in {1, 2}.  Row (b, s') is the two-parameter pair
R(M, λ) of docs/theory.md#bucketed-rows with

    M = s' − 1,     λ(s', t) = (a s'/2) / (a s'/2 + g t),     a = 1 − γ, g = γ/k,

and its mass is P(B = b) P(s' | b), where s' | b is, with probability 1 − γ (target truthful), 1 + Bin(b, κ)
and, with probability γ, Bin(b + 1, κ), κ = 2/k.  There are ~n rows (26M at n = 10⁶), which is why the
row pair does not scale.

**Reduction.**  Cut the (b, s') plane into rectangles: strips b ∈ [b1, b2] of width ≈ h·t̄ and, in every
strip, blocks s' ∈ [c_j, c_{j+1} − 1] of width ≈ h·s̄.  M increases with s'; λ increases with s' and
decreases with t.  So every row of a block is a post-processing of

    upper representative  R(c_j − 1,      λ(c_{j+1} − 1, b1 + 1)),

and dominates

    lower representative  R(c_{j+1} − 2,  λ(c_j, b2 + 1))

(docs/theory.md#bucketed-rows: R(M, λ) is a post-processing of R(M', λ') when M ≥ M', λ ≤ λ').  One row per
block carrying the block's mass gives a pair dominating the weak pair (upper ends) and one dominated by it
(lower ends).

**Block masses from CDF differences.**  With S_b ~ Bin(b, κ), F_b(x) = P(S_b ≤ x), U_b(c) = P(S_b ≥ c):

    P(s' < c | b)  = F_b(c − 2) + γ(1 − κ) P(S_b = c − 1),
    P(s' ≥ c | b)  = U_b(c) + (1 − γ(1 − κ)) P(S_b = c − 1),

and along a strip F_b(x) = F_{b2}(x) + κ Σ_{b'=b}^{b2−1} P(S_{b'} = x),  U_b(c) = U_{b1}(c) + κ Σ_{b'=b1}^{b−1} P(S_{b'} = c − 1)
(one more trial moves S up by one with probability κ).  Every quantity is a sum of non-negative terms
(binomial mass functions by Loader's method), so each is computed to a relative error below :data:`REL_ERR`;
F_{b2} and U_{b1} are cumulative sums over a Chernoff window of Bin(b2, κ) / Bin(b1, κ), whose outside mass
(≤ the window's certified bound) is an absolute error on every value.  A block's mass is a difference of two
such values (the lower form below the strip's median, the upper form above it, 1 minus both for the block
holding the median); the upper pair takes it rounded up by its error bound, the lower pair rounded down.
The mass of s' outside the strip's blocks (rounded up) and of b outside a Chernoff window of B goes to the
upper pair's tail (infinite loss); the lower pair drops it.  Mass added to a row of the upper pair only adds
hockey-stick mass on an outcome of its own (single use and composed), so upper rounding stays certified.

Cost per strip: O(strip width × blocks) mass-function values and O(√n) for the cumulative windows, so
O(√n · blocks) in all and O(blocks · √n) atoms for the engines — never O(n) rows.  h is halved until the
relative width of the ε interval meets the requested precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.accounting.numerics.binomial import certified_tail, chernoff_window, log_binom_pmf
from shufflesim.accounting.rows.binomial_rows import BinomialRows

#: relative error allowed on every computed sum of binomial mass-function values (Loader's log-PMF is
#: accurate to ~1e-13 in the log; cumulative sums of <= 1e6 non-negative doubles add < 1e6 * 1.1e-16)
REL_ERR = 1e-9
#: the first relative block width tried is this fraction of the requested relative width (measured: the
#: relative width in eps is ~1.05 h at n = 1e6..1e9, k = 4, gamma = 0.25); then h is halved
H_PER_RTOL = 0.8
#: halvings of h tried at most
H_HALVINGS = 3
#: the refinement stops before the bucket rows would exceed this many atoms (upper pair)
MAX_ATOMS = 40_000_000
#: relative width in eps asked by default (issue 21)
DEFAULT_RTOL = 1e-3
#: per-row column truncation of the bucket rows, at most (its mass outside goes to the upper tail)
COLUMN_TAIL = 1e-16
#: relative margin on the representatives' lambda (float round-off of lambda is < 1e-15)
_LAM_MARGIN = 1e-12
REFERENCE = ("Koskela, Heikkila, Honkela (seed 001) Definition 9, Theorem 10, Appendix A, bucketed from CDF "
             "differences; docs/theory.md#bucketed-weak")


@dataclass(frozen=True)
class WeakBuckets:
    """The two reduced pairs of the weak adversary's pair: ``upper`` dominates it, ``lower`` is dominated."""

    upper: BinomialRows
    lower: BinomialRows
    h: float
    blocks: int


def _lam(s, t, a: float, g: float):
    half = a * np.asarray(s, dtype=float) / 2.0
    return half / (half + g * np.asarray(t, dtype=float))


def _pmf(x, b, kappa: float) -> np.ndarray:
    """P(Bin(b, kappa) = x) elementwise (0 outside the support)."""
    x = np.asarray(x, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    x, b = np.broadcast_arrays(x, b)
    ok = (x >= 0) & (x <= b)
    out = np.zeros(x.shape)
    if np.any(ok):
        out[ok] = np.exp(log_binom_pmf(x[ok], b[ok], kappa))
    return out


#: the recurrences below restart from Loader's log-PMF every this many steps (the log error of a run of
#: sums is < CHUNK * 3 u * max|step| ~ 1e-12 for steps of magnitude <= 2)
CHUNK = 1024


def _runs(anchor, step: np.ndarray) -> np.ndarray:
    """Values v_0..v_{m-1} (axis 0) with v_{i+1} = v_i + step[i], restarted every :data:`CHUNK` rows from
    ``anchor(indices)`` (exact values at those rows)."""
    m = step.shape[0] + 1
    na = -(-m // CHUNK)
    L0 = anchor(np.arange(na) * CHUNK)  # (na, ...)
    d = np.zeros((na * CHUNK,) + step.shape[1:])
    d[1:m] = step
    d = d.reshape((na, CHUNK) + step.shape[1:])
    d[:, 0] = 0.0
    out = np.cumsum(d, axis=1) + L0[:, None]
    return out.reshape((na * CHUNK,) + step.shape[1:])[:m]


def _pmf_b(x: np.ndarray, b1: int, nb: int, kappa: float) -> np.ndarray:
    """P(Bin(b, kappa) = x) on the grid b = b1..b1+nb-1 (rows) x x (columns), through the ratio
    P(S_{b+1} = x)/P(S_b = x) = (1 - kappa)(b + 1)/(b + 1 - x) (Loader's log-PMF every CHUNK rows)."""
    b = np.arange(b1, b1 + nb, dtype=np.int64)
    if kappa >= 1.0 or nb < 64 or x.size == 0 or int(x.max()) > b1 or int(x.min()) < 0:
        return _pmf(x[None, :], b[:, None], kappa)
    xf = x.astype(float)[None, :]
    step = np.log1p(-kappa) - np.log1p(-xf / (b[:-1, None] + 1.0))
    return np.exp(_runs(lambda i: log_binom_pmf(x[None, :], b[i][:, None], kappa), step))


def _pmf_x(ys: np.ndarray, b: int, kappa: float) -> np.ndarray:
    """P(Bin(b, kappa) = y) for consecutive y = ys, through P(y + 1)/P(y) = (b - y) kappa / ((y + 1)(1 - kappa))."""
    if kappa >= 1.0 or ys.size < 64 or int(ys[0]) < 0 or int(ys[-1]) > b:
        return _pmf(ys, b, kappa)
    y = ys[:-1].astype(float)
    step = math.log(kappa) - math.log1p(-kappa) + np.log((b - y) / (y + 1.0))
    return np.exp(_runs(lambda i: log_binom_pmf(ys[i], b, kappa), step))


def _strip(b1: int, b2: int, c: np.ndarray, kappa: float, gamma: float, lw_b: np.ndarray, win):
    """Block masses of one strip b in [b1, b2] with boundaries c (blocks [c_j, c_{j+1})), weighted by
    P(B = b) = exp(lw_b): (mass_hat[j], err[j], outside_hat + err) -- err bounds |mass_hat - mass|.
    ``win``: the Chernoff windows (ylo, yhi, T) of Bin(b2, kappa) and of Bin(b1, kappa)."""
    b = np.arange(b1, b2 + 1, dtype=np.int64)
    w = np.exp(lw_b)
    nb = b.size
    t_mid = 0.5 * (b1 + b2) + 1.0
    med = kappa * t_mid
    low = c <= med  # boundaries evaluated through the lower CDF
    cl, cu = c[low], c[~low]
    r = 1.0 - kappa
    p1 = _pmf_b(c - 1, b1, nb, kappa)  # P(S_b = c - 1), nb x J+1
    # lower form: G_b(c) = F_b(c - 2) + gamma (1 - kappa) P(S_b = c - 1)
    ylo, yhi, T_lo, T_hi = win  # T_lo >= P(S_b2 < ylo[0]), T_hi >= P(S_b1 > yhi[1])
    G = np.zeros((nb, cl.size))
    if cl.size:
        ys = np.arange(int(ylo[0]), int(yhi[0]) + 1)
        cum = np.cumsum(_pmf_x(ys, b2, kappa))
        x = cl - 2
        idx = np.clip(x - ys[0], -1, ys.size - 1)
        Cx = np.where(idx >= 0, cum[np.maximum(idx, 0)], 0.0)  # F_b2(x) - P(S_b2 < ylo)
        p2 = _pmf_b(x, b1, nb, kappa)
        R = np.zeros_like(p2)
        if nb > 1:
            R[:-1] = np.cumsum(p2[:-1][::-1], axis=0)[::-1]  # sum_{b'=b}^{b2-1}
        G = Cx[None, :] + kappa * R + gamma * r * p1[:, low]
    H = np.zeros((nb, cu.size))
    if cu.size:
        ys = np.arange(int(ylo[1]), int(yhi[1]) + 1)
        rc = np.cumsum(_pmf_x(ys, b1, kappa)[::-1])[::-1]  # rc[i] = P(ys[i] <= S_b1 <= yhi)
        idx = cu - ys[0]
        Ux = np.where(idx < ys.size, rc[np.clip(idx, 0, ys.size - 1)], 0.0)
        Ux = np.where(idx < 0, rc[0], Ux)  # c below the window: P(S_b1 >= c) >= P(window)
        pu = p1[:, ~low]
        S = np.zeros_like(pu)
        if nb > 1:
            S[1:] = np.cumsum(pu[:-1], axis=0)  # sum_{b'=b1}^{b-1} P(S_b' = c - 1)
        H = Ux[None, :] + kappa * S + (1.0 - gamma * r) * pu
    # P(s' < c_j | b): G below the median, 1 - H above; E its rounding error bound (relative to the sum
    # actually computed); every value may also miss up to T_lo (G) / T_hi (H) of window mass
    tau = REL_ERR
    Pl = np.empty((nb, c.size))
    E = np.empty((nb, c.size))
    Pl[:, low], E[:, low] = G, tau * G
    Pl[:, ~low], E[:, ~low] = 1.0 - H, tau * H
    T = T_lo + T_hi
    m = Pl[:, 1:] - Pl[:, :-1]
    e = E[:, 1:] + E[:, :-1] + T
    out_lo = Pl[:, 0] + E[:, 0] + T  # P(s' < c_0 | b), rounded up
    out_hi = 1.0 - Pl[:, -1] + E[:, -1] + T  # P(s' >= c_J | b), rounded up
    wm = w @ m
    we = w @ e + tau * (w @ np.abs(m)) + 1e-300  # and P(B = b)'s own relative error
    out = float(w @ (out_lo + out_hi)) * (1 + tau)
    return wm, we, out


def weak_buckets(n, k, gamma, h: float, *, tail_bound: float = 1e-15,
                 column_tail: float = COLUMN_TAIL) -> WeakBuckets:
    """The upper and lower bucket rows of the weak adversary's pair with relative block width ``h``."""
    from shufflesim.accounting.pairs.krr import _check

    n, k, gamma, tail_bound = _check(n, k, gamma, tail_bound)
    if not (0.0 < h <= 1.0):
        raise ParameterError(f"h must be in (0, 1]; got {h}")
    a, g, kappa = 1.0 - gamma, gamma / k, 2.0 / k
    lb = math.log(tail_bound) - math.log(3.0)
    b_lo, b_hi, lt_b = chernoff_window(n - 1, gamma, lb)
    b_lo, b_hi = int(b_lo), int(b_hi)
    tail = certified_tail(float(lt_b))
    ups, los = [], []  # (N, lam, mass) of the representatives
    if a > 0.0:
        t_bar = (n - 1) * gamma + 1.0
        wb = max(1, int(h * t_bar))
        edges = np.arange(b_lo, b_hi + 2, wb)
        if edges[-1] != b_hi + 1:
            edges = np.append(edges, b_hi + 1)
        lw_all = log_binom_pmf(np.arange(b_lo, b_hi + 1), n - 1, gamma)
        # the s' window of each strip: from Bin(b1, kappa)'s lower end to Bin(b2 + 1, kappa)'s upper end + 1
        b1s, b2s = edges[:-1], edges[1:] - 1
        slo, shi1, lt1 = chernoff_window(b1s, kappa, lb)
        slo2, shi2, lt2 = chernoff_window(b2s, kappa, lb)
        _, shi, _ = chernoff_window(b2s + 1, kappa, lb)
        T2 = np.exp(lt2) * (1 + 1e-12)
        T1 = np.exp(lt1) * (1 + 1e-12)
        for i, (b1, b2, s0, s1) in enumerate(zip(b1s.tolist(), b2s.tolist(), slo.tolist(), shi.tolist())):
            c0 = max(1, int(s0))
            cend = int(s1) + 2  # exclusive: s' <= s1 + 1
            ws = max(1, int(h * kappa * (0.5 * (b1 + b2) + 1.0)))
            c = np.arange(c0, cend + 1, ws)
            if c[-1] != cend:
                c = np.append(c, cend)
            win = ((int(slo2[i]), int(slo[i])), (int(shi2[i]), int(shi1[i])), float(T2[i]), float(T1[i]))
            mhat, err, out = _strip(b1, b2, c, kappa, gamma, lw_all[b1 - b_lo:b2 - b_lo + 1], win)
            tail += out
            cj, cj1 = c[:-1], c[1:]
            ups.append((cj, _lam(cj1 - 1, b1 + 1, a, g) * (1 + _LAM_MARGIN), mhat + err))
            los.append((cj1 - 1, _lam(cj, b2 + 1, a, g) * (1 - _LAM_MARGIN), np.maximum(mhat - err, 0.0)))
    tail = min(1.0, tail * (1 + 1e-12))
    params = dict(n=n, k=k, gamma=gamma, adversary="weak", tail_bound=tail_bound, bucket_h=h)
    upper = _rows(ups, "upper", tail, column_tail, params, gamma)
    lower = _rows(los, "lower", tail, column_tail, params, gamma)
    return WeakBuckets(upper, lower, h, int(upper.N.size))


def _rows(reps, side: str, tail: float, column_tail: float, params: dict, gamma: float) -> BinomialRows:
    up = side == "upper"
    if reps:
        N = np.concatenate([r[0] for r in reps]).astype(np.int64)
        lam = np.minimum(np.concatenate([r[1] for r in reps]), 1.0)
        mass = np.concatenate([r[2] for r in reps])
    else:
        N, lam, mass = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    keep = (mass > 0) & (N >= 1) & (lam > 0)
    N, lam, mass = N[keep], lam[keep], mass[keep]
    half = N.astype(float) / 2.0
    beta = half * (1.0 - lam) / lam
    beta = np.maximum(np.nextafter(beta, 0.0 if up else np.inf), 0.0)  # lambda errs the safe way
    if up:
        beta = np.where(lam >= 1.0, 0.0, beta)
    log_w = np.log(mass) - np.log(half + beta)
    if N.size:
        l, hh, lt = chernoff_window(N - 1, 0.5, math.log(column_tail))
        lo = np.maximum(np.minimum(l, N - (hh + 1)), 0)
        hi = N - lo
        if up:
            tail = min(1.0, (tail + certified_tail(float(np.max(lt))) * float(mass.sum())) * (1 + 1e-12))
    else:
        lo = hi = np.zeros(0, np.int64)
    extra = np.zeros(0) if N.size or gamma < 1.0 else np.zeros(1)  # gamma = 1: one zero-loss atom
    return BinomialRows(log_w, N, np.ones(N.size), beta, lo.astype(np.int64), hi.astype(np.int64), tail,
                        extra, extra.copy(), name="krr-weak-buckets",
                        params=dict(params, bucket_side=side, rows=int(N.size)), reference=REFERENCE)


def estimate_atoms(n, k, gamma, h: float) -> float:
    """Rough upper estimate of the upper pair's atoms at relative width h (before building it)."""
    t_bar = (n - 1) * gamma + 1.0
    sd_b = math.sqrt(max((n - 1) * gamma * (1 - gamma), 1.0))
    kappa = 2.0 / k
    strips = 20.0 * sd_b / max(1.0, h * t_bar) + 1
    s_bar = kappa * t_bar
    sd_s = math.sqrt(max(t_bar * kappa * (1 - kappa), 1.0)) + kappa * max(1.0, h * t_bar)
    blocks = strips * (20.0 * sd_s / max(1.0, h * s_bar) + 2)
    return blocks * (17.0 * math.sqrt(s_bar) / 2 + 2)


def exact_atoms(n, k, gamma) -> float:
    """Rough estimate of the exact row pair's atoms (:func:`~.pairs.krr.krr_weak_pair`): one row per (b, s')."""
    return estimate_atoms(n, k, gamma, 0.0)


def use_buckets(n, k, gamma, compositions: int = 1, rtol: float = DEFAULT_RTOL) -> bool:
    """True when the bucket rows are the cheaper engine: their estimated atoms below a quarter of the exact
    row pair's (n >~ 3e4 at k = 4, gamma = 0.25; below, blocks hold one row each and the exact engine is as
    cheap and narrower).  gamma = 1 (no loss) always takes the exact pair."""
    if gamma >= 1.0:
        return False
    return estimate_atoms(n, k, gamma, H_PER_RTOL * rtol) < 0.25 * exact_atoms(n, k, gamma)


def _width(up, lo) -> float:
    if lo is None or not math.isfinite(up) or up <= 0:
        return 0.0 if up == 0 else math.inf
    return (up - lo) / up


def weak_bucketed(n, k, gamma, *, eps=None, delta=None, compositions: int = 1, rtol: float = DEFAULT_RTOL,
                  tail_bound: float | None = None, steps: tuple[float, ...] | None = None, **numerics):
    """Certified eps(delta) (``delta`` given) or delta(eps) (``eps`` given) intervals of the weak adversary's
    pair through its bucket rows; h is refined until every relative width is <= ``rtol`` (eps; 10 rtol in
    delta), the engine's own interval is the wider part, or the next h would exceed :data:`MAX_ATOMS`.
    Returns (results, notes)."""
    from shufflesim.accounting.model.results import DeltaBound, EpsBound
    from shufflesim.accounting.engines.tight import TightAccountant
    from shufflesim.accounting.engines.estimates import check_accounting
    from shufflesim.core.progress import stage
    from shufflesim.core.resources import check_memory

    if (eps is None) == (delta is None):
        raise ParameterError("give either eps or delta")
    vals = [float(v) for v in (eps if eps is not None else delta)]
    if compositions > 1:
        from shufflesim.accounting.rows.bucketed import COMPOSED_NUMERICS

        numerics = {**COMPOSED_NUMERICS, **numerics}
    if tail_bound is None:
        tail_bound = 1e-20 if delta is None else max(min(1e-15, 1e-7 * min(vals) / compositions), 1e-300)
    if steps is None:
        steps = tuple(H_PER_RTOL * rtol / 2**i for i in range(H_HALVINGS + 1))
    res, used = None, None
    for i, h in enumerate(steps):
        atoms = estimate_atoms(n, k, gamma, h)
        if i > 0 and atoms > MAX_ATOMS:
            break
        check_memory(64.0 * atoms + (32 << 20), f"the weak adversary's bucket rows at n={n} (h={h:g})",
                     "a smaller n, --adversary strong (dominates the weak adversary's view) or a published bound")
        est_s = 1.0 + 4e-7 * atoms * (1 if compositions == 1 else 20)
        # the column truncation as far below the deltas asked as the pair's own tail (bucketed.bucketed_epsilon)
        wb = weak_buckets(n, k, gamma, h, tail_bound=tail_bound, column_tail=min(COLUMN_TAIL, tail_bound))
        # the engines' own estimate on the (small) reduced rows, before they allocate (issue 21, item 2)
        est_s = max(est_s, check_accounting(wb.upper, compositions, numerics).seconds * 2)
        with stage(f"the weak adversary's bucket rows (h={h:g}, {compositions} composition(s))", est_s):
            up = TightAccountant(wb.upper, compositions=compositions, **numerics)
            lo = TightAccountant(wb.lower, compositions=compositions, **numerics)
            if delta is not None:
                ru, rl = up.epsilon(vals), lo.epsilon(vals)
            else:
                ru, rl = up.delta(vals), lo.delta(vals)
        if delta is not None:
            res, widths, own = _paired(ru, rl, "eps_upper", "eps_lower", EpsBound, "delta")
            done = all(w <= rtol for w in widths)
        else:
            res, widths, own = _paired(ru, rl, "delta_upper", "delta_lower", DeltaBound, "eps")
            done = all(w <= 10 * rtol for w in widths)
        used = wb
        if done or any(w > (rtol if delta is not None else 10 * rtol) / 2 for w in own):
            break
    if delta is None and tail_bound > 1e-300 and any(r.delta_upper < 1e3 * used.upper.tail * compositions
                                                     for r in res):  # the truncated mass would dominate
        tb = max(1e-300, 1e-7 * min(r.delta_upper for r in res) / compositions)
        if tb < tail_bound:
            return weak_bucketed(n, k, gamma, eps=eps, compositions=compositions, rtol=rtol, tail_bound=tb,
                                 steps=steps, **numerics)
    note = (f"weak adversary's pair bucketed from CDF differences: {used.blocks} blocks, relative width "
            f"h = {used.h:g} (docs/theory.md#bucketed-weak); certified by post-processing both ways")
    notes = [f"pair: krr-weak ({REFERENCE})", note]
    if used.upper.tail:
        notes.append(f"truncated tails (mass <= {used.upper.tail:.3g}) added to the upper bounds")
    res = [replace(r, notes=(note,)) for r in res]
    return res, notes


def _paired(ru, rl, up: str, lo: str, cls, key: str):
    """The upper ends of the upper pair's answers ``ru`` with the lower ends of the lower pair's ``rl`` (fields
    ``up``/``lo`` of ``cls``, keyed by ``key``), their widths and the upper pair's own widths."""
    res = []
    for u, l in zip(ru, rl):
        low, high = getattr(l, lo), getattr(u, up)
        if low is not None and low > high:
            raise ParameterError(f"weak buckets: lower end {low} above upper end {high} (a bug)")
        res.append(cls(getattr(u, key), high, low, "tight", accuracy_met=bool(u.accuracy_met and l.accuracy_met)))
    widths = [_width(getattr(r, up), getattr(r, lo)) for r in res]
    own = [_width(getattr(u, up), getattr(u, lo)) for u in ru]
    return res, widths, own
