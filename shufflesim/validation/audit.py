"""Empirical privacy audits with certified lower bounds on δ(ε) and ε(δ).

An audit samples, T times under each of two neighbouring data sets X and X′, the analyser's view or an
exact sufficient statistic of it, and turns the empirical rates of a rejection set S into certified lower
bounds: for every S and ε, δ(ε) ≥ P(S) − e^ε Q(S) (and the same with P and Q swapped), so with
Clopper–Pearson bounds P(S) ≥ p_lo, Q(S) ≤ q_hi, each at confidence 1 − α/2,

    delta_lower = max(0, p_lo − e^ε q_hi)        eps_lower = log((p_lo − δ) / q_hi)   (when p_lo > δ)

hold with probability ≥ 1 − α each.  S is a threshold set of the log-likelihood ratio L = log dP/dQ of the
statistic (the optimal distinguisher) where L is computable, otherwise of a plain statistic.  The threshold
(and the direction, P against Q or Q against P) is chosen on the first half of the samples and evaluated
on the second half, so the selection costs nothing in confidence (docs/validation.md#audit).

Setups (``AuditSetup``): :func:`krr_worst_case` (the histogram of shuffled k-RR — also the blanket
summation levels — when the other n − 1 users hold one value c and the target switches between a and b;
optionally a *broken* randomiser that leaks its input), :func:`krr_explicit` (any two neighbouring data
sets; statistic N_a − N_b, threshold chosen on the held-out half), :func:`pmf_setup` (a statistic with
known PMFs, e.g. the rr2 count, Biswas et al.'s count, the clones pair: sampled from its exact law;
:func:`rr2_count_setup` and :func:`cheu_count_setup` build it for binary randomised response and Cheu et
al.'s unary bits), :func:`noisy_sum_setup` (a sum plus Laplace, Gaussian or discrete Laplace noise, the
central baselines and IKOS's decoded sum) and :func:`noisy_histogram_setup` (the central histograms).
:func:`setup_for_protocol` picks the setup of a registered protocol (:data:`AUDITABLE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from shufflesim.accounting.numerics.logspace import exp_or_inf
from shufflesim.core.checks import ALPHA_PRECISION, Precision, check_int, check_real
from shufflesim.core.rng import as_seed_sequence
from shufflesim.errors import ParameterError
from shufflesim.validation.stats import cp_lower, cp_upper

#: most candidate thresholds examined on the selection half (quantiles of the statistic beyond this)
MAX_THRESHOLDS = 4000


@dataclass
class AuditSetup:
    """A neighbouring pair and how to sample a statistic of the view under each side.

    ``sample(gen, T, side)`` returns T values of the statistic under X (side 0) or X′ (side 1); larger
    values are evidence for X.  ``llr`` says whether the statistic is the exact log-likelihood ratio.
    ``mechanism`` is the description the accountant bounds (None: no upper bound to compare with).
    """

    pair: str
    statistic: str
    sample: Callable[[np.random.Generator, int, int], np.ndarray]
    llr: bool
    mechanism: Any = None
    details: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# setups
# --------------------------------------------------------------------------------------------------



#: the precision range of a mixing probability gamma in the exact log-likelihood ratio statistics: their scale
#: (1 - gamma)/(gamma/k) overflows to inf (and inf * 0 is nan) once gamma/k underflows double precision
GAMMA_PRECISION = Precision(low=1e-100, below="the statistic's scale (1 - gamma)/(gamma/k) overflows double "
                            "precision")

def krr_worst_case(n: int, k: int, gamma: float, *, a: int = 0, b: int = 1, c: int = 2, leak: float = 0.0,
                   mechanism=None) -> AuditSetup:
    """Shuffled k-RR (k ≥ 3): the other n − 1 users hold c, the target holds a (X) or b (X′).

    The released histogram's likelihood depends on it only through (N_a, N_b, N_c): with the others'
    report probabilities p_c = 1 − γ + γ/k and γ/k elsewhere, P_X(h) ∝ Σ_j r_a(j) h_j / p_j, so

        L(h) = log(B + (1−γ)(k/γ) N_a) − log(B + (1−γ)(k/γ) N_b),   B = n − N_c + (γ/k) N_c / p_c.

    (N_a, N_b, N_c) is drawn directly: a four-cell multinomial for the others plus the target's report.
    ``leak`` > 0 audits a *broken* randomiser: with that probability a user sends its true value in a
    tagged message instead of its report (a tagged a or b identifies the side: L = ±∞; the others' tagged
    messages remove them from the histogram).
    """
    n = check_int("n", n, minimum=2)
    k = check_int("k", k, minimum=3)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True, high_open=True, precise=GAMMA_PRECISION)
    leak = check_real("leak", leak, low=0.0, high=1.0, high_open=True)
    if len({a, b, c}) != 3 or not all(0 <= v < k for v in (a, b, c)):
        raise ParameterError(f"a, b, c must be three different values in 0..{k - 1}; got {a}, {b}, {c}")
    q = gamma / k
    pc = 1.0 - gamma + q
    others_p = np.array([q, q, pc, max(0.0, 1.0 - 2 * q - pc)])
    target_p = np.array([1.0 - gamma + q, q, q, max(0.0, (k - 3) * q)])

    def sample(gen: np.random.Generator, T: int, side: int) -> np.ndarray:
        N = n - 1
        active = gen.binomial(N, 1.0 - leak, size=T) if leak > 0 else np.full(T, N)
        h = gen.multinomial(active, others_p).astype(float)
        rep = gen.choice(4, size=T, p=target_p)
        if side == 1:  # the target holds b: its report's a and b cells swap
            rep = np.where(rep == 0, 1, np.where(rep == 1, 0, rep))
        h[np.arange(T), rep] += 1.0
        users = active + 1.0
        base = users - h[:, 2] + q * h[:, 2] / pc
        s = (1.0 - gamma) / q
        L = np.log(base + s * h[:, 0]) - np.log(base + s * h[:, 1])
        if leak > 0:
            leaked = gen.random(T) < leak
            L = np.where(leaked, math.inf if side == 0 else -math.inf, L)
        return L

    desc = f"the other {n - 1} users hold {c}; the target holds {a} (X) or {b} (X')"
    return AuditSetup(
        pair=desc, statistic="exact log-likelihood ratio of the released histogram (via N_a, N_b, N_c)",
        sample=sample, llr=True, mechanism=mechanism,
        details={"n": n, "k": k, "gamma": gamma, "a": a, "b": b, "c": c, "leak": leak, "kind": "krr-worst-case"})


def krr_explicit(data_x: np.ndarray, data_x2: np.ndarray, k: int, gamma: float, *, mechanism=None) -> AuditSetup:
    """Shuffled k-RR on two explicit neighbouring data sets (same size, one user's value changed).

    The histogram's likelihood ratio has no closed form for general data, so the statistic is
    N_a − N_b (a: the changed user's value in X, b: in X′), thresholded on the held-out half.
    """
    x, y = np.asarray(data_x, dtype=np.int64), np.asarray(data_x2, dtype=np.int64)
    k = check_int("k", k, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True, high_open=True)
    if x.shape != y.shape or x.ndim != 1:
        raise ParameterError(f"--pair data sets must have the same number of users; got {x.size} and {y.size}")
    if x.size and (x.min() < 0 or y.min() < 0 or x.max() >= k or y.max() >= k):
        raise ParameterError(f"--pair data must hold categories in 0..{k - 1}")
    cx, cy = np.bincount(x, minlength=k), np.bincount(y, minlength=k)
    diff = cx - cy
    if np.abs(diff).sum() != 2:
        raise ParameterError("--pair data sets must differ in exactly one user's value "
                             f"(their histograms differ by {int(np.abs(diff).sum())} entries)")
    a, b = int(np.argmax(diff)), int(np.argmin(diff))
    probs = np.full((k, k), gamma / k) + (1.0 - gamma) * np.eye(k)

    def sample(gen: np.random.Generator, T: int, side: int) -> np.ndarray:
        counts = cx if side == 0 else cy
        h = np.zeros((T, k))
        for v in range(k):
            if counts[v]:
                h += gen.multinomial(int(counts[v]), probs[v], size=T)
        return h[:, a] - h[:, b]

    return AuditSetup(
        pair=f"explicit data sets of {x.size} users; one user holds {a} (X) or {b} (X')",
        statistic=f"N_{a} - N_{b} of the released histogram (threshold chosen on the held-out half)",
        sample=sample, llr=False, mechanism=mechanism,
        details={"n": int(x.size), "k": k, "gamma": gamma, "a": a, "b": b, "kind": "krr-explicit",
                 "counts_x": cx.tolist(), "counts_x2": cy.tolist()})


def pmf_setup(log_p: np.ndarray, log_q: np.ndarray, *, pair: str, statistic: str, mechanism=None,
              details: dict | None = None) -> AuditSetup:
    """A finite statistic with known PMFs: draws outcomes from its exact law (inverse CDF), returns L."""
    lp, lq = np.asarray(log_p, dtype=float), np.asarray(log_q, dtype=float)
    with np.errstate(invalid="ignore"):
        L = np.where(np.isneginf(lp) & np.isneginf(lq), 0.0, lp - lq)
    cdfs = []
    for lg in (lp, lq):
        w = np.exp(lg - np.max(lg))
        c = np.cumsum(w)
        cdfs.append(c / c[-1])

    def sample(gen: np.random.Generator, T: int, side: int) -> np.ndarray:
        idx = np.searchsorted(cdfs[side], gen.random(T), side="right")
        return L[np.minimum(idx, L.size - 1)]

    return AuditSetup(pair=pair, statistic=statistic, sample=sample, llr=True, mechanism=mechanism,
                      details=dict(details or {}, kind="pmf"))


def rr2_count_setup(n: int, eps0: float, *, ones: int = 0, mechanism=None) -> AuditSetup:
    """Shuffled binary RR (flip probability 1/(e^{ε0}+1)): ``ones`` of the other n − 1 users hold 1, the
    rest 0; the target holds 0 (X) or 1 (X′).  The count of ones is sufficient; its exact PMFs are
    :func:`shufflesim.maths.rr_count.rr2_count_pmfs`."""
    from shufflesim.maths.rr_count import rr2_count_pmfs

    n = check_int("n", n, minimum=2)
    ones = check_int("ones", ones, minimum=0)
    if ones > n - 1:
        raise ParameterError(f"ones must be <= n - 1 = {n - 1}; got {ones}")
    P, Q = rr2_count_pmfs(n, eps0, ones)
    with np.errstate(divide="ignore"):
        lp, lq = np.log(P), np.log(Q)
    return pmf_setup(lp, lq, pair=f"{ones} of the other {n - 1} users hold 1, the rest 0; the target holds 0 (X) "
                     "or 1 (X')", statistic="exact log-likelihood ratio of the count of ones", mechanism=mechanism,
                     details={"n": n, "eps0": eps0, "ones": ones, "kind": "rr2-count"})


def cheu_count_setup(n: int, r: int, gamma: float, *, mechanism=None) -> AuditSetup:
    """Cheu et al.'s unary protocol (r bits per user, each flipped w.p. γ/2, one shuffler): every other user
    holds 0 and the target 0 (X) or 1 (X′), i.e. r of the n·r bits hold 1 under X′.  The count of ones is
    sufficient for the shuffled bits; its exact PMFs are :func:`shufflesim.maths.rr_count.rr_count_pair_window`."""
    from shufflesim.maths.rr_count import rr_count_pair_window

    n = check_int("n", n, minimum=2)
    r = check_int("r", r, minimum=1)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    _, P, Q = rr_count_pair_window((n - 1) * r, 0, gamma / 2.0, r)
    with np.errstate(divide="ignore"):
        lp, lq = np.log(P), np.log(Q)
    return pmf_setup(lp, lq, pair=f"the other {n - 1} users hold 0; the target holds 0 (X) or 1 (X'): its {r} unary "
                     "bits are all 0 or all 1", statistic="exact log-likelihood ratio of the count of ones",
                     mechanism=mechanism, details={"n": n, "r": r, "gamma": gamma, "kind": "cheu-count"})


#: noises of :func:`noisy_sum_setup`
NOISES = ("laplace", "gaussian", "dlap")
#: relative step of the grid a Laplace log-likelihood ratio is rounded to (:func:`_on_grid`)
LLR_GRID = 1e-9


def _on_grid(L: np.ndarray, bound: float) -> np.ndarray:
    """L rounded to multiples of LLR_GRID·``bound`` (``bound`` = the largest |L|).

    A Laplace LLR has atoms (±shift/scale where the noise is beyond the shift), which floating point computes
    with different last bits under X and X′ (t = shift + z loses z's low bits): a threshold between those
    bits would "distinguish" the sides by round-off, not by the mechanism.  On the grid the atoms coincide;
    the continuous part moves by less than the grid step, and each grid point is a set of views, so the
    bounds stay certified statements about the sampled statistic."""
    h = LLR_GRID * bound
    return np.round(L / h) * h


def noisy_sum_setup(noise: str, scale: float, shift: float, *, modulus: int | None = None, mechanism=None,
                    pair: str | None = None, statistic: str | None = None, llr: bool = True) -> AuditSetup:
    """A statistic of sensitivity ``shift`` plus noise: T = Z (X) or T = shift + Z (X′), the other users'
    contribution being a constant that the analyser subtracts.

    ``noise``: ``laplace`` (Z ~ Lap(scale)), ``gaussian`` (Z ~ N(0, scale²)) or ``dlap`` (Z ~ DLap(α) with
    α = e^{−1/scale}, drawn as the difference of two geometric variables; ``shift`` an integer).  With
    ``modulus`` q (dlap only) T is reduced to its representative in (−q/2, q/2], as IKOS's analyser decodes it.
    Returns the log-likelihood ratio L(T) = log P_X(T)/P_X′(T) of the unwrapped law:
    (|T − shift| − |T|)/scale for laplace and dlap, ((T − shift)² − T²)/(2 scale²) for gaussian.
    """
    if noise not in NOISES:
        raise ParameterError(f"noise must be one of {', '.join(NOISES)}; got {noise!r}")
    scale = check_real("scale", scale, low=0.0, low_open=True)
    shift = check_real("shift", shift, low=0.0, low_open=True)
    if noise == "dlap":
        shift = check_int("shift", shift, minimum=1)
        alpha = math.exp(-1.0 / scale)
        if not alpha < 1.0:
            raise ParameterError(f"dlap noise of scale {scale:g} cannot be sampled (exp(-1/scale) rounds to 1)")
    if modulus is not None:
        if noise != "dlap":
            raise ParameterError("a modulus applies to integer (dlap) noise only")
        modulus = check_int("modulus", modulus, minimum=2 * shift + 1)

    def sample(gen: np.random.Generator, T: int, side: int) -> np.ndarray:
        if noise == "laplace":
            t = gen.laplace(0.0, scale, size=T) + side * shift
        elif noise == "gaussian":
            t = gen.normal(0.0, scale, size=T) + side * shift
        else:
            g = gen.geometric(1.0 - alpha, size=(2, T))
            ti = g[0] - g[1] + side * int(shift)
            if modulus is not None and modulus <= 2**62:  # beyond, |T| < 2^61 <= q/2: nothing wraps
                ti = np.mod(ti, modulus)
                ti = np.where(ti > modulus // 2, ti - modulus, ti)
            t = ti.astype(float)
        if noise == "gaussian":
            return ((t - shift) ** 2 - t**2) / (2.0 * scale * scale)
        return _on_grid((np.abs(t - shift) - np.abs(t)) / scale, shift / scale)

    name = {"laplace": f"Laplace({scale:.6g})", "gaussian": f"N(0, {scale:.6g}^2)",
            "dlap": f"DLap(exp(-1/{scale:.6g}))"}[noise]
    return AuditSetup(
        pair=pair or f"the target adds 0 (X) or {shift:g} (X') to the statistic; noise {name}",
        statistic=statistic or f"exact log-likelihood ratio of the noisy statistic ({name} noise)",
        sample=sample, llr=llr, mechanism=mechanism,
        details={"noise": noise, "scale": scale, "shift": shift, "modulus": modulus, "kind": "noisy-sum"})


def noisy_histogram_setup(noise: str, scale: float, *, replace: bool = True, mechanism=None) -> AuditSetup:
    """A histogram with i.i.d. noise per bin (``laplace``: Lap(scale); ``gaussian``: N(0, scale²)).  With
    ``replace`` the target's value moves from bin a (X) to bin b (X′): the other bins are the same under both
    and ancillary, so (Y_a, Y_b) with means (1, 0) against (0, 1) is sufficient and
    L = (|Y_a| − |Y_a − 1| + |Y_b − 1| − |Y_b|)/scale (Laplace) or (Y_a − Y_b)/scale² (Gaussian).  Without
    (add-remove), the target is present (X) or absent (X′): one bin with mean 1 against 0."""
    if noise not in ("laplace", "gaussian"):
        raise ParameterError(f"noise must be laplace or gaussian; got {noise!r}")
    scale = check_real("scale", scale, low=0.0, low_open=True)
    if not replace:
        one = noisy_sum_setup(noise, scale, 1.0, mechanism=mechanism)

        def sample1(gen: np.random.Generator, T: int, side: int) -> np.ndarray:  # X: present, i.e. mean 1
            return -one.sample(gen, T, 1 - side)

        return AuditSetup(pair="the target is in a bin (X) or absent (X'), add-remove neighbours",
                          statistic=f"exact log-likelihood ratio of that bin's noisy count ({noise} noise)",
                          sample=sample1, llr=True, mechanism=mechanism,
                          details={"noise": noise, "scale": scale, "replace": False, "kind": "noisy-histogram"})

    def sample(gen: np.random.Generator, T: int, side: int) -> np.ndarray:
        draw = gen.laplace if noise == "laplace" else gen.normal
        y = draw(0.0, scale, size=(2, T))
        y[side] += 1.0  # side 0: the target in bin a; side 1: in bin b
        if noise == "laplace":
            return _on_grid((np.abs(y[0]) - np.abs(y[0] - 1.0) + np.abs(y[1] - 1.0) - np.abs(y[1])) / scale, 2.0 / scale)
        return (y[0] - y[1]) / (scale * scale)

    return AuditSetup(pair="the target's value is in bin a (X) or bin b (X'), replacement neighbours",
                      statistic=f"exact log-likelihood ratio of the two bins' noisy counts ({noise} noise)",
                      sample=sample, llr=True, mechanism=mechanism,
                      details={"noise": noise, "scale": scale, "replace": True, "kind": "noisy-histogram"})


# --------------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------------


def _rates(sel: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Counts of samples ≥ each threshold (``sel`` sorted ascending)."""
    return sel.size - np.searchsorted(sel, thresholds, side="left")


def _candidates(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    u = np.unique(np.concatenate([x, y]))
    if u.size > MAX_THRESHOLDS:
        finite = u[np.isfinite(u)]
        qs = np.quantile(finite, np.linspace(0, 1, MAX_THRESHOLDS - 2)) if finite.size else np.empty(0)
        u = np.unique(np.concatenate([qs, u[~np.isfinite(u)]]))
    return u


def _cp_vec(k: np.ndarray, T: int, alpha: float, upper: bool) -> np.ndarray:
    from scipy import stats

    k = np.asarray(k, dtype=float)
    if upper:
        out = stats.beta.ppf(1.0 - alpha, k + 1, np.maximum(T - k, 1e-300))
        return np.where(k >= T, 1.0, out)
    out = stats.beta.ppf(alpha, np.maximum(k, 1e-300), T - k + 1)
    return np.where(k <= 0, 0.0, out)


def _hockey(plo, eps: float, qhi):
    """plo − e^ε·qhi without overflow: e^ε is +inf beyond ~709 (then any qhi > 0 gives −inf, and qhi = 0 gives
    plo, never the nan of inf·0)."""
    e = exp_or_inf(eps)
    plo, qhi = np.asarray(plo, dtype=float), np.asarray(qhi, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where(qhi > 0, plo - e * qhi, plo)
    return out if out.ndim else float(out)


def _best(P_sel, Q_sel, T, eps, delta, alpha):
    """Best (direction, threshold) on the selection half for δ(ε) and (if delta) for ε(δ)."""
    best_d, best_e = (-math.inf, None), (-math.inf, None)
    for direction, (x, y) in enumerate(((P_sel, Q_sel), (-Q_sel, -P_sel))):
        # direction 0: S = {L >= t}, P vs Q;  direction 1: S = {L <= -t}, Q vs P (sign flipped)
        xs, ys = np.sort(x), np.sort(y)
        t = _candidates(xs, ys)
        kx, ky = _rates(xs, t), _rates(ys, t)
        plo, qhi = _cp_vec(kx, T, alpha / 2, False), _cp_vec(ky, T, alpha / 2, True)
        d = _hockey(plo, eps, qhi)
        i = int(np.argmax(d))
        if best_d[1] is None or d[i] > best_d[0]:  # (all −inf at a huge eps: still a choice)
            best_d = (float(d[i]), (direction, float(t[i])))
        if delta is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                e = np.where(plo > delta, np.log((plo - delta) / qhi), -math.inf)
            j = int(np.argmax(e))
            if best_e[1] is None or e[j] > best_e[0]:
                best_e = (float(e[j]), (direction, float(t[j])))
    return best_d[1], best_e[1]


def _evaluate(choice, P_ev, Q_ev, T, alpha):
    direction, t = choice
    x, y = (P_ev, Q_ev) if direction == 0 else (-Q_ev, -P_ev)
    kx, ky = int(np.count_nonzero(x >= t)), int(np.count_nonzero(y >= t))
    return kx, ky, cp_lower(kx, T, alpha / 2), cp_upper(ky, T, alpha / 2)


def accountant_bound(mechanism, eps: float, delta: float | None, method: str | None = None) -> dict | None:
    """The accountant's certified upper bounds δ(ε) (and ε(δ)) for ``mechanism``; None without one."""
    if mechanism is None:
        return None
    from shufflesim.accounting import account

    rep = account(mechanism, eps=[eps], method=method)
    r = rep.results[0]
    out = {"method": rep.method if hasattr(rep, "method") else method, "mechanism": mechanism.kind,
           "params": {k: (v.value if hasattr(v, "value") else v) for k, v in mechanism.params().items()},
           "delta_upper": getattr(r, "delta_upper", None), "delta_lower": getattr(r, "delta_lower", None),
           "bound_pair": getattr(r, "bound_pair", None)}
    if delta is not None:
        r2 = account(mechanism, delta=[delta], method=method).results[0]
        out["eps_upper"] = getattr(r2, "eps_upper", None)
    return out


#: an accountant interval this narrow (relative) is the mechanism's true δ for the audit's ratio
TRUE_DELTA_RTOL = 1e-6


def ratio_denominator(acc: dict) -> str:
    """What ``ratio`` divides by (issue 17): "true delta" when the accountant's interval is the mechanism's own
    (no dominating pair) and narrower than :data:`TRUE_DELTA_RTOL` — then δ_upper is the mechanism's true δ to
    that accuracy —, otherwise "upper bound (method[, pair])": a ratio to an upper bound, not to the truth."""
    from shufflesim.accounting.compare import ONE_DATA_SET

    du, dl, pair = acc.get("delta_upper"), acc.get("delta_lower"), acc.get("bound_pair")
    if (acc.get("mechanism"), acc.get("method")) in ONE_DATA_SET:
        return f"exact delta of one data set ({acc.get('method')}), not the mechanism's"
    if pair is None and dl is not None and du is not None and du - dl <= TRUE_DELTA_RTOL * du:
        return "true delta"
    return f"upper bound ({acc.get('method')}" + (f", {pair}" if pair else "") + ")"


#: samples drawn by the probe of :func:`check_audit_fits`
AUDIT_PROBE = 256
#: bytes one trial takes at the peak of :func:`run_audit`: two sides of float64 statistics, their sorted copies
#: and the candidate thresholds' work arrays (an estimate: 8 arrays of 8 bytes)
AUDIT_TRIAL_BYTES = 64.0


def check_audit_fits(setup: AuditSetup, root, trials: int, *, yes: bool = False) -> None:
    """Issue 29, work that will not fit is not started: the audit's samples, timed from a probe of
    :data:`AUDIT_PROBE` draws per side on a stream no trial uses (``spawn_key=(..., 4, side)``) and scaled to
    ``trials`` (a lower bound: choosing the threshold comes on top), with their memory, weighed by the one policy
    (:func:`shufflesim.core.resources.choose_path`; ``--yes`` lifts the time limit) before any sample is drawn."""
    import time

    from shufflesim.core.resources import RunPath, choose_path

    probe = min(trials, AUDIT_PROBE)
    t0 = time.perf_counter()
    for side in (0, 1):
        gen = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 4, side)))
        setup.sample(gen, probe, side)
    seconds = (time.perf_counter() - t0) / probe * float(trials)
    choose_path(f"an audit of {trials} trials per side", [RunPath("the sampler", "--trials", seconds=seconds,
                                                                  bytes=AUDIT_TRIAL_BYTES * float(trials))],
                yes=yes, advice="lower --trials")


def run_audit(setup: AuditSetup, *, eps: float, delta: float | None = None, trials: int, rng=0,
              alpha: float = 0.05, method: str | None = None, yes: bool = False) -> dict[str, Any]:
    """Audit ``setup`` at ``eps`` (and ``delta``): certified lower bounds beside the accountant's upper bounds.

    ``trials`` samples are drawn under each side (streams ``spawn_key=(3, side)`` of the root seed); the
    first half selects the rejection set, the second half certifies it.  Verdict ``violated`` when a
    lower bound exceeds the accountant's upper bound, ``consistent`` when it does not, ``inconclusive``
    when there is no upper bound to compare with.
    """
    eps = check_real("eps", eps, low=0.0)
    if delta is not None:
        delta = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
    trials = check_int("trials", trials, minimum=4)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True, precise=ALPHA_PRECISION)
    root = as_seed_sequence(rng)
    check_audit_fits(setup, root, trials, yes=yes)
    gens = [np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 3, s)))
            for s in (0, 1)]
    P = np.asarray(setup.sample(gens[0], trials, 0), dtype=float)
    Q = np.asarray(setup.sample(gens[1], trials, 1), dtype=float)
    h = trials // 2
    T_ev = trials - h
    # the verdict may rest on two lower bounds (delta at eps, and eps at delta): Bonferroni, alpha/2 each
    alpha_each = alpha / 2 if delta is not None else alpha
    choice_d, choice_e = _best(P[:h], Q[:h], h, eps, delta, alpha_each)
    kx, ky, plo, qhi = _evaluate(choice_d, P[h:], Q[h:], T_ev, alpha_each)
    delta_lower = max(0.0, _hockey(plo, eps, qhi))
    out: dict[str, Any] = {
        "pair": setup.pair, "statistic": setup.statistic, "distinguisher": "optimal (likelihood-ratio threshold)"
        if setup.llr else "threshold on the statistic", "eps": eps, "delta": delta, "trials": trials,
        "alpha": alpha, "selection_trials": h, "evaluation_trials": T_ev,
        "delta_lower": delta_lower,
        "delta_evidence": {"direction": "P vs Q" if choice_d[0] == 0 else "Q vs P", "threshold": choice_d[1],
                           "hits_first": kx, "hits_second": ky, "p_lower": plo, "q_upper": qhi},
        "method": ("Clopper-Pearson bounds at 1 - a/2 each on the evaluation half, a = alpha" +
                   (" / 2 per lower bound (Bonferroni over delta_lower and eps_lower)" if delta is not None else "") +
                   "; rejection set chosen on the selection half"),
        "setup": setup.details,
    }
    if delta is not None:
        if choice_e is None:
            out["eps_lower"] = 0.0
        else:
            kx2, ky2, plo2, qhi2 = _evaluate(choice_e, P[h:], Q[h:], T_ev, alpha_each)
            e = math.log((plo2 - delta) / qhi2) if plo2 > delta else 0.0
            out["eps_lower"] = max(0.0, e)
            out["eps_evidence"] = {"direction": "P vs Q" if choice_e[0] == 0 else "Q vs P", "threshold": choice_e[1],
                                   "hits_first": kx2, "hits_second": ky2, "p_lower": plo2, "q_upper": qhi2}
    acc = accountant_bound(setup.mechanism, eps, delta, method)
    out["accountant"] = acc
    violated: list[str] = []
    if acc is None or acc.get("delta_upper") is None:
        out["verdict"] = "inconclusive"
        out["verdict_reason"] = "no accountant upper bound for this setup"
    else:
        du = acc["delta_upper"]
        out["ratio"] = delta_lower / du if du > 0 else (math.inf if delta_lower > 0 else math.nan)
        out["ratio_to"] = ratio_denominator(acc)
        if delta_lower > du:
            violated.append(f"the claim delta({eps:g}) <= {du:.6g} ({acc['method']}, {acc['mechanism']} "
                            f"{acc['params']}) is violated: delta_lower = {delta_lower:.6g}")
        eu = acc.get("eps_upper")
        if delta is not None and eu is not None and out["eps_lower"] > eu:
            violated.append(f"the claim eps({delta:g}) <= {eu:.6g} is violated: eps_lower = {out['eps_lower']:.6g}")
        out["verdict"] = "violated" if violated else "consistent"
        out["verdict_reason"] = "; ".join(violated) if violated else (
            "every certified lower bound is at most the accountant's upper bound")
    return out


#: protocols with an exact sampler of (a sufficient statistic of) their view, for :func:`setup_for_protocol`
AUDITABLE = ("krr", "blanket-sum", "local-rr-sum", "cheu-sum", "ikos-sum", "central-dlap-sum",
             "central-laplace-sum", "central-laplace-hist", "central-gaussian-hist")


def auditable() -> list[str]:
    """The built-in :data:`AUDITABLE` protocols and every registered protocol (plug-ins included) that describes
    its audit by ``audit_matrix`` (the matrix protocols of protocols/matrix_rr.py, issue 22)."""
    from shufflesim.pipeline import registry

    extra = [nm for nm in registry.names() if nm not in AUDITABLE and callable(getattr(registry.get(nm), "audit_matrix", None))]
    return [*AUDITABLE, *extra]


#: most histograms of the exact law for :func:`matrix_setup`'s likelihood-ratio statistic
MATRIX_LLR_HISTOGRAMS = 20_000


def matrix_setup(R: np.ndarray, counts_x: np.ndarray, counts_x2: np.ndarray, *, pair: str, mechanism=None) -> AuditSetup:
    """A finite randomiser R shuffled, on two neighbouring data sets given by their input counts.

    Where the exact law of the released histogram is small (at most :data:`MATRIX_LLR_HISTOGRAMS` histograms)
    the statistic is its exact log-likelihood ratio (shuffle_oracle.histogram_law, drawn by :func:`pmf_setup`);
    otherwise Σ_y N_y log(R[a,y]/R[b,y]) (the target's own log-likelihood ratio summed over all reports; a
    threshold statistic), with N drawn exactly as Σ_x Multinomial(c_x, R[x]).
    """
    R = np.asarray(R, dtype=float)
    cx, cy = np.asarray(counts_x, dtype=np.int64), np.asarray(counts_x2, dtype=np.int64)
    a, b = int(np.argmax(cx - cy)), int(np.argmin(cx - cy))
    n, m = int(cx.sum()), R.shape[1]
    details = {"kind": "matrix", "n": n, "a": a, "b": b, "counts_x": cx.tolist(), "counts_x2": cy.tolist()}
    if math.comb(n + m - 1, m - 1) <= MATRIX_LLR_HISTOGRAMS and n * math.comb(n + m - 1, m - 1) * m <= 2_000_000:
        from shufflesim.accounting.exact.shuffle_oracle import histogram_law

        lp, lq = (histogram_law(R, np.repeat(np.arange(R.shape[0]), c)) for c in (cx, cy))
        keys = sorted(set(lp) | set(lq))
        with np.errstate(divide="ignore"):
            P = np.log(np.array([lp.get(h, 0.0) for h in keys]))
            Q = np.log(np.array([lq.get(h, 0.0) for h in keys]))
        return pmf_setup(P, Q, pair=pair, mechanism=mechanism, details=details,
                         statistic="exact log-likelihood ratio of the released histogram (its exact law enumerated)")
    with np.errstate(divide="ignore"):
        w = np.log(R[a]) - np.log(R[b])
    w = np.where(np.isfinite(w), w, np.sign(w) * 1e6)

    def sample(gen: np.random.Generator, T: int, side: int) -> np.ndarray:
        counts = cx if side == 0 else cy
        out = np.empty(T)
        step = max(1, 2_000_000 // (R.shape[0] * m))
        for s in range(0, T, step):  # blocks of trials bound the memory; vectorised within a block
            t = min(step, T - s)
            out[s:s + t] = gen.multinomial(counts, R, size=(t, R.shape[0])).sum(axis=1) @ w
        return out

    return AuditSetup(pair=pair, statistic=f"sum over reports of log R[{a},y]/R[{b},y] (threshold chosen on the "
                      "held-out half)", sample=sample, llr=False, mechanism=mechanism, details=details)


def setup_for_protocol(protocol, *, pair=None, leak: float = 0.0) -> AuditSetup:
    """The audit setup of a protocol: its named worst case, or the explicit ``pair`` of data sets.

    * ``krr`` (k ≥ 3) and ``blanket-sum`` (its (k+1)-ary level reports): :func:`krr_worst_case` with
      a = 0, b = 1, c = 2; k = 2: :func:`rr2_count_setup` (all other users hold 0);
    * ``pair`` (two arrays of categories) for ``krr``: :func:`krr_explicit`;
    * ``local-rr-sum``: :func:`rr2_count_setup` (the other users hold 0, the target 0 or 1);
    * ``cheu-sum``: :func:`cheu_count_setup` (the other users hold 0, the target 0 or 1);
    * ``central-laplace-sum``, ``central-dlap-sum`` and ``ikos-sum``: :func:`noisy_sum_setup` (the target
      holds 0 or 1: the rounded sum moves by the sensitivity; for ikos-sum the decoded sum of the shares,
      wrapped modulo q — a statistic of the view, which the shares can add at most 2^-σ to in TV);
    * ``central-laplace-hist``, ``central-gaussian-hist``: :func:`noisy_histogram_setup`.

    The accountant's description is ``protocol.mechanism()`` (for krr its relation: the protocol's
    ``adversary``).
    """
    name = getattr(protocol, "name", "")
    if name not in AUDITABLE and callable(getattr(protocol, "audit_matrix", None)):
        if leak:
            raise ParameterError(f"--leak is supported for krr and blanket-sum (k >= 3) only; got {name}")
        R, cx, cy, what = protocol.audit_matrix(pair)
        return matrix_setup(R, cx, cy, pair=what, mechanism=protocol.mechanism())
    if name not in AUDITABLE:
        raise ParameterError(f"audit supports the protocols {', '.join(AUDITABLE)} (an exact sampler of their "
                             f"view's sufficient statistic); got {name!r}")
    mech = protocol.mechanism()
    if pair is not None and name != "krr":
        raise ParameterError(f"--pair is supported for krr only; {name} audits its named worst case")
    if leak and name not in ("krr", "blanket-sum"):
        raise ParameterError(f"--leak is supported for krr and blanket-sum (k >= 3) only; got {name}")
    prm = protocol.params
    if name == "local-rr-sum":
        return rr2_count_setup(protocol.n, prm["eps"], mechanism=mech)
    if name == "cheu-sum":
        return cheu_count_setup(protocol.n, prm["messages"], prm["gamma"], mechanism=mech)
    if name == "central-laplace-sum":
        return noisy_sum_setup("laplace", 1.0 / prm["eps"], 1.0, mechanism=mech,
                               pair="the target holds 0 (X) or 1 (X'): the sum moves by its sensitivity 1")
    if name in ("central-dlap-sum", "ikos-sum"):
        p = prm["p"]
        what = "the target holds 0 (X) or 1 (X'): the rounded sum moves by its sensitivity p"
        if name == "central-dlap-sum":
            return noisy_sum_setup("dlap", p / prm["eps"], p, mechanism=mech, pair=what)
        return noisy_sum_setup("dlap", p / prm["eps"], p, modulus=prm["q"], mechanism=mech, pair=what, llr=False,
                               statistic="log-likelihood ratio of the decoded sum of all shares (mod q; the shares "
                               "are within 2^-sigma in TV of a function of it)")
    if name in ("central-laplace-hist", "central-gaussian-hist"):
        noise, scale = ("laplace", prm["scale"]) if name == "central-laplace-hist" else ("gaussian", prm["sigma"])
        return noisy_histogram_setup(noise, scale, replace=prm["neighbouring"] == "replace", mechanism=mech)
    if mech is None or getattr(mech, "kind", None) != "krr":
        raise ParameterError(f"{name} has no k-RR mechanism description to audit")
    k, gamma, n = mech.k, mech.gamma, mech.n
    if pair is not None:
        if leak:
            raise ParameterError("--leak is supported with the named worst case only (no --pair)")
        return krr_explicit(pair[0], pair[1], k, gamma, mechanism=mech)
    if k == 2:
        if leak:
            raise ParameterError("--leak needs k >= 3")
        eps0 = math.log(2.0 / gamma - 1.0)
        return rr2_count_setup(n, eps0, mechanism=mech)
    return krr_worst_case(n, k, gamma, leak=leak, mechanism=mech)
