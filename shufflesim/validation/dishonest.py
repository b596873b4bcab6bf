"""Dishonest and absent users: the bias a coalition can force, derived and simulated, the privacy left with
M honest users, and the tolerate-F defence (seed 004 §8; docs/theory.md#dishonest).

The attacked population itself (strategies, :func:`influence`, :func:`attacked_estimate`,
:func:`expected_estimate`, :func:`expected_bias`, the remaining Pólya noise law) lives in
:mod:`shufflesim.experiments.population` (the sweep engine runs attacked points, and the experiments layer
may not import this one); it is re-exported here unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.core.rng import RngLike, as_seed_sequence, child
from shufflesim.errors import NotApplicableError

from shufflesim.experiments.population import (  # noqa: F401 - re-exported (moved for the sweep engine)
    STRATEGIES,
    PROTOCOLS,
    DISHONEST_STREAM,
    LAPLACE_PUSH,
    Influence,
    _check,
    _recursive_terms,
    influence,
    ikos_push_shift,
    _split,
    _dishonest_messages,
    _scalar,
    truth,
    attacked_estimate,
    simulate_attack,
    _per_user_expected,
    remaining_noise_pmf,
    _remaining_noise_pmf,
    _ikos_expected_decoded,
    expected_estimate,
    expected_bias,
)


#: largest modulus :func:`ikos_worst_shifts` scans (one FFT of length q)
MAX_SCAN_Q = 1 << 24


def ikos_worst_shifts(proto, data, c: int) -> tuple[int, float, int, float]:
    """The coalition's most damaging IKOS shifts: (s_low, bias_low, s_high, bias_high) over every residue s.

    E[decoded(R + s + Z)] for all s at once: the noise law folded mod q, circularly correlated with the
    decoding map (one FFT of length q, :data:`MAX_SCAN_Q` at most); the two extreme shifts are then
    re-evaluated exactly with :func:`expected_bias` (the FFT only locates them).  The honest inputs need
    p·x integer, as for :func:`expected_estimate`.
    """
    _check(proto)
    if proto.name != "ikos-sum":
        raise NotApplicableError("ikos_worst_shifts is for ikos-sum")
    xd, xh, c = _split(proto, data, c)
    prm = proto.parameters
    if prm.q > MAX_SCAN_Q:
        raise NotApplicableError(f"scanning every shift needs q <= {MAX_SCAN_Q}; got q={prm.q}")
    px = xh * prm.p
    if not np.all(px == np.round(px)):
        raise NotApplicableError("the exact IKOS expectation needs inputs with p*x integer (deterministic rounding)")
    R = int(np.round(px).sum())
    q = prm.q
    if prm.n - c == 0:
        w = np.zeros(q)
        w[0] = 1.0
    else:
        z, pmf, _ = remaining_noise_pmf(prm.n - c, proto.randomiser.n_users, prm.alpha)
        w = np.bincount(np.mod(z, q), weights=pmf, minlength=q)
    u = np.arange(q)
    d_r = np.mod(u + R + (q - 1) // 2, q) - (q - 1) // 2  # decoded value of R + u
    f = np.real(np.fft.ifft(np.fft.fft(d_r.astype(float)) * np.conj(np.fft.fft(w))))  # f[s] = Σ_r w[r] d_r[s + r]
    centred = lambda s: int(s) - q if s > q // 2 else int(s)  # noqa: E731
    s_lo, s_hi = centred(np.argmin(f)), centred(np.argmax(f))
    return (s_lo, expected_bias(proto, data, c, "push", shift=s_lo),
            s_hi, expected_bias(proto, data, c, "push", shift=s_hi))


# --- privacy left with M honest users (docs/theory.md#dishonest-honest) ----------------------------------------
#: mechanism kinds whose view with a coalition is exactly the M-user mechanism's (shuffled identical randomisers)
HONEST_KINDS = ("rr2", "krr", "clones")


def honest_mechanism(mech, honest: int):
    """The mechanism left when only ``honest`` of its n users are honest: the same shuffled randomiser among
    M = ``honest`` users (the coalition's reports are known and independent of the target's input, so the
    view is equivalent to the M-user mechanism's; docs/theory.md#dishonest-honest)."""
    import dataclasses

    from shufflesim.core.checks import check_int

    kind = getattr(mech, "kind", None)
    if kind not in HONEST_KINDS:
        raise NotApplicableError(f"--honest is defined for {', '.join(HONEST_KINDS)}; got {kind}")
    m = check_int("honest", honest, minimum=1, maximum=mech.n)
    return dataclasses.replace(mech, n=m)


@dataclass(frozen=True)
class HonestIKOSPrivacy:
    """Certified δ(ε) of ikos-sum when only h of its n users add their Pólya shares (two-sided)."""

    h: int
    eps: float
    delta_lower: float
    delta_upper: float
    noise_delta_upper: float
    tv_term: float
    sigma: float
    worst_shift: int


def _hockey(pmf: np.ndarray, d: int, ee: float, side: int = 1) -> float:
    """Σ_z max(0, P(z) − e^ε P(z − d)) over the array's support (P = 0 outside it), each term moved by the
    floating-point error of the computed masses (relative 4e-16 per convolution term, pmf.size terms at
    most) upwards (``side`` = 1, for an upper bound) or downwards (−1, for a lower bound)."""
    shifted = np.zeros_like(pmf)
    shifted[d:] = pmf[:-d] if d > 0 else pmf
    slack = 4e-16 * (pmf.size + 10)
    # + an absolute 1e-290 per term: masses near the subnormal range carry no relative precision
    return max(0.0, float(np.sum(np.maximum(0.0, pmf - ee * shifted + side * slack * (pmf + ee * shifted))))
               + side * 1e-290 * pmf.size)


def ikos_honest_delta(proto, h: int, eps: float) -> HonestIKOSPrivacy:
    """δ(ε) of the IKOS comparison mechanism with only h honest Pólya shares, plus the IKOS TV term with h
    users (docs/theory.md#dishonest-honest).

    Upper: max over shifts d ∈ {1..p} of the hockey-stick divergence of (Z_h, Z_h + d) on the truncated law,
    + 2P(A > L) for the truncation, + (1 + e^ε)·2^{−σ(h)}.  Lower: the pair at shift p (a user changing x
    from 0 to 1) with both laws folded mod q (the analyser sees the sum mod q), minus e^ε·2P(A > L).
    """
    from shufflesim.core.checks import check_int, check_real
    from shufflesim.protocols.ikos_sum import ikos_sigma_improved

    if proto.name != "ikos-sum":
        raise NotApplicableError("ikos_honest_delta is for ikos-sum")
    prm = proto.parameters
    h = check_int("honest", h, minimum=3, maximum=prm.n)
    eps = check_real("eps", eps, low=0.0)
    ee = math.exp(eps)
    z, pmf, tail = remaining_noise_pmf(h, proto.randomiser.n_users, prm.alpha)
    per_shift = [_hockey(pmf, d, ee) for d in range(1, prm.p + 1)]
    noise = max(per_shift) + tail
    sigma = ikos_sigma_improved(h, prm.q, prm.m - 1)
    tv = math.exp(math.log1p(ee) - sigma * math.log(2.0)) if sigma > 0 else math.inf
    folded = np.bincount(np.mod(z, prm.q), weights=pmf, minlength=prm.q)
    rolled = np.roll(folded, prm.p)  # law of (R + p + Z_h) mod q against that of (R + Z_h) mod q
    slack = 4e-16 * (pmf.size + 10)
    low = (float(np.sum(np.maximum(0.0, folded - ee * rolled - slack * (folded + ee * rolled)))) - ee * tail
           - 1e-290 * pmf.size)
    worst = 1 + int(np.argmax(per_shift))
    return HonestIKOSPrivacy(h, eps, max(0.0, low), min(1.0, noise + tv), noise, tv, sigma, worst)


def ikos_honest_eps(proto, h: int, delta: float, tol: float = 1e-6, *, noise_only: bool = False) -> tuple[float, float]:
    """[ε_lower, ε_upper] at ``delta`` from :func:`ikos_honest_delta` by bisection (both ends certified:
    δ_upper(ε_upper) ≤ δ and δ_lower(ε_lower) ≥ δ, or ε_lower = 0).  ε_upper = inf when no ε ≤ 700 is
    certified (the IKOS term (1 + e^ε)2^{−σ} grows with ε, so a δ below it is never reached).
    ``noise_only``: the comparison mechanism's δ alone (without the IKOS statistical-distance term)."""
    from shufflesim.core.checks import check_real

    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    eps0 = proto.parameters.eps

    def bisect(f) -> float:  # smallest ε on the grid with f(ε) ≤ δ, f non-increasing
        lo, hi = 0.0, eps0
        while f(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 700.0:
                return math.inf
        while hi - lo > tol * max(hi, 1e-12):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) > delta else (lo, mid)
        return hi

    which = "noise_delta_upper" if noise_only else "delta_upper"
    upper = bisect(lambda e: getattr(ikos_honest_delta(proto, h, e), which))
    if not math.isfinite(upper):
        return 0.0, upper
    # the largest ε with δ_lower(ε) ≥ δ is a certified lower end
    f_low = lambda e: ikos_honest_delta(proto, h, e).delta_lower  # noqa: E731
    if f_low(0.0) < delta:
        return 0.0, upper
    lo, hi = 0.0, upper
    while hi - lo > tol * max(hi, 1e-12):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f_low(mid) >= delta else (lo, mid)
    return lo, upper


# --- the defence: tolerate a fraction F of absent or noiseless users (docs/theory.md#dishonest-tolerate) --------
def ikos_tolerant(proto, fraction: float):
    """A copy of an ikos-sum protocol whose users add Pólya(1/h0, α) − Pólya(1/h0, α), h0 = ⌈(1 − F)·n⌉.

    Any h ≥ h0 honest shares then sum to DLap(α) plus independent noise Pólya((h − h0)/h0)-differences,
    a post-processing of the DLap mechanism: the comparison mechanism stays ε-DP (seed 004 §8's defence,
    "increase the overall noise by a constant factor"); the noise variance grows by n/h0 ≈ 1/(1 − F).
    Only :func:`attacked_estimate`/:func:`simulate_attack` and the functions of this module know the copy
    (its ``sample_fast`` and ``mse_*`` are the undefended protocol's).
    """
    import copy
    import dataclasses

    from shufflesim.core.checks import check_real

    if proto.name != "ikos-sum":
        raise NotApplicableError("the --tolerate defence is implemented for ikos-sum only in this slice")
    f = check_real("tolerate", fraction, low=0.0, high=1.0, high_open=True)
    h0 = max(1, math.ceil((1.0 - f) * proto.n - 1e-9))
    out = copy.copy(proto)
    out.randomiser = dataclasses.replace(proto.randomiser, n_users=h0)
    out.params = dict(proto.params, tolerate=f, noise_users=h0)
    return out


def ikos_noise_mse(proto) -> float:
    """Noise part of the MSE of the sum with every user honest: (n/h0)·Var DLap(α)/p², h0 = the design count."""
    prm = proto.parameters
    r = prm.n / proto.randomiser.n_users
    return r * 2.0 * prm.alpha / ((1.0 - prm.alpha) ** 2 * prm.p**2)


def coalition_table(proto, data, sizes, strategies=STRATEGIES, *, trials: int = 200, seed: RngLike = 0,
                    direction: int = 1, **kw) -> list[dict]:
    """Bias and MSE against coalition size: one record per (c, strategy) with the derived bias
    (:func:`expected_bias`), the simulated mean bias and its standard error, and the simulated MSE
    (the rows of the 'bias vs coalition size' plot; trial t of cell (i, j) uses child (i, j, t) of ``seed``)."""
    root = as_seed_sequence(seed)
    t = truth(proto, data, kw.get("target", 0))
    rows = []
    for i, c in enumerate(sizes):
        for j, strategy in enumerate(strategies):
            est = simulate_attack(proto, data, int(c), strategy, trials, child(root, i, j), direction=direction, **kw)
            err = est - t
            try:
                derived = expected_bias(proto, data, int(c), strategy, direction=direction, **kw)
            except NotApplicableError:
                derived = math.nan
            rows.append({"protocol": proto.name, "c": int(c), "strategy": strategy, "direction": direction,
                         "bias_derived": derived, "bias_measured": float(err.mean()),
                         "bias_se": float(err.std(ddof=1) / math.sqrt(err.size)) if err.size > 1 else math.nan,
                         "mse_measured": float(np.mean(err * err)), "trials": int(trials)})
    return rows
