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
from shufflesim.errors import NotApplicableError, ParameterError

from shufflesim.experiments.population import (  # noqa: F401 - re-exported (moved for the sweep engine)
    STRATEGIES,
    PROTOCOLS,
    DISHONEST_STREAM,
    LAPLACE_PUSH,
    Influence,
    check_supported,
    influence,
    ikos_push_shift,
    split_coalition,
    dishonest_messages,
    target_estimate,
    truth,
    attacked_estimate,
    simulate_attack,
    remaining_noise_pmf,
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
    check_supported(proto)
    if proto.name != "ikos-sum":
        raise NotApplicableError("ikos_worst_shifts is for ikos-sum")
    xd, xh, c = split_coalition(proto, data, c)
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
#: mechanism kinds whose view with a coalition is exactly the M-user mechanism's (shuffled identical randomisers;
#: a composition of them: each part among the M honest users)
HONEST_KINDS = ("rr2", "krr", "clones", "cheu", "matrix")
#: kinds whose noise is distributed as Pólya shares (seed 004 §5.2): the honest count shrinks the noise
HONEST_NOISE_KINDS = ("ikos", "central-dlap")


def honest_count(honest, n: int) -> int:
    """The number of honest users from ``honest``: a count (an integer 1..n) or a fraction in (0, 1)
    (⌈fraction·n⌉ honest users, at least 1).  ParameterError for anything else."""
    from shufflesim.core.checks import check_int, check_real

    n = check_int("n", n, minimum=1)
    v = check_real("honest", honest, low=0.0, low_open=True)
    if v < 1.0:
        return max(1, math.ceil(v * n - 1e-9 * n))
    if v != math.floor(v):
        raise ParameterError(f"honest must be a count (an integer 1..n={n}) or a fraction in (0, 1); got {honest!r}")
    return check_int("honest", int(v), minimum=1, maximum=n)


def honest_mechanism(mech, honest: int):
    """The mechanism left when only ``honest`` of its n users are honest (a count, or a fraction in (0, 1)):
    the same shuffled randomiser among M = ``honest`` users (the coalition's reports are known and independent
    of the target's input, so the view is equivalent to the M-user mechanism's; docs/theory.md#dishonest-honest).
    A composition (the recursive protocol's levels, one shuffler each) has every part among the M users."""
    import dataclasses

    from shufflesim.accounting.model.mechanism import Composition

    kind = getattr(mech, "kind", None)
    if kind == "composition":
        m = honest_count(honest, mech.n)
        return Composition(tuple((honest_mechanism(part, m), c) for part, c in mech.parts))
    if kind not in HONEST_KINDS:
        why = ("its noise is distributed over the users: give --n N (the users sharing it), the honest count "
               "shrinks the noise" if kind in HONEST_NOISE_KINDS else "its view does not depend on how many users "
               "are honest (no shuffled population)" if kind in ("central-laplace", "central-gaussian")
               else "its guarantee is stated for a fixed data set, not a population of randomisers")
        raise NotApplicableError(f"--honest as the same mechanism among the honest users is defined for "
                                 f"{', '.join(HONEST_KINDS)}; {kind}: {why}")
    return dataclasses.replace(mech, n=honest_count(honest, mech.n))


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


#: truncation of the remaining noise law for privacy profiles: its mass 2P(A > L) ≤ 2e-40 is added to every
#: upper end (and e^ε times it taken off every lower end), so δ below ~1e-39 is not resolved; the support then
#: stays a few thousand points where 1e-300 needs ~10⁵ (a minute of exact convolution at n = 1000, p = 32)
PRIVACY_TAIL = 1e-40


def polya_honest_delta(alpha: float, p: int, n_design: int, h: int, eps: float, *, q: int | None = None,
                       sigma: float | None = None) -> HonestIKOSPrivacy:
    """Certified δ(ε) of a statistic of sensitivity p released with the noise of h honest Pólya shares, each
    designed for ``n_design`` users to sum to DLap(α) (seed 004 §5.2; docs/theory.md#dishonest-honest).

    Upper: max over shifts d ∈ {1..p} of the hockey-stick divergence of (Z_h, Z_h + d) on the truncated law
    (:func:`remaining_noise_pmf`), + 2P(A > L) for the truncation, + (1 + e^ε)·2^{−σ} when ``sigma`` is given
    (IKOS's statistical distance with h honest users).  Lower: the realised pair at shift p (a user moving the
    statistic by p), folded mod ``q`` when given (the IKOS analyser sees the sum mod q), minus e^ε·2P(A > L)
    (the truncated mass).  Both ends carry the floating-point slack of :func:`_hockey`.
    """
    from shufflesim.core.checks import check_int, check_real

    h = check_int("honest", h, minimum=1)
    eps = check_real("eps", eps, low=0.0)
    ee = math.exp(eps)
    z, pmf, tail = remaining_noise_pmf(h, n_design, alpha, PRIVACY_TAIL)
    per_shift = [_hockey(pmf, d, ee) for d in range(1, p + 1)]
    noise = max(per_shift) + tail
    tv = 0.0
    if sigma is not None:
        tv = math.exp(math.log1p(ee) - sigma * math.log(2.0)) if sigma > 0 else math.inf
    slack = 4e-16 * (pmf.size + 10)
    if q is not None:
        folded = np.bincount(np.mod(z, q), weights=pmf, minlength=q)
        rolled = np.roll(folded, p)  # law of (R + p + Z_h) mod q against that of (R + Z_h) mod q
        low = (float(np.sum(np.maximum(0.0, folded - ee * rolled - slack * (folded + ee * rolled)))) - ee * tail
               - 1e-290 * pmf.size)
    else:
        low = _hockey(pmf, p, ee, side=-1) - ee * tail
    worst = 1 + int(np.argmax(per_shift))
    return HonestIKOSPrivacy(h, eps, max(0.0, low), min(1.0, noise + tv), noise, tv,
                             math.inf if sigma is None else sigma, worst)


def ikos_honest_delta(proto, h: int, eps: float) -> HonestIKOSPrivacy:
    """δ(ε) of the IKOS comparison mechanism with only h honest Pólya shares, plus the IKOS TV term with h
    users, σ(h) from the reconstructed eq. (4) with m − 1 shares (docs/theory.md#dishonest-honest;
    :func:`polya_honest_delta` with the protocol's α, p, q)."""
    from shufflesim.core.checks import check_int
    from shufflesim.protocols.ikos_sum import ikos_sigma_improved

    if proto.name != "ikos-sum":
        raise NotApplicableError("ikos_honest_delta is for ikos-sum")
    prm = proto.parameters
    h = check_int("honest", h, minimum=3, maximum=prm.n)
    return polya_honest_delta(prm.alpha, prm.p, proto.randomiser.n_users, h, eps, q=prm.q,
                              sigma=ikos_sigma_improved(h, prm.q, prm.m - 1))


def honest_eps_interval(delta_at, delta: float, eps_start: float, tol: float = 1e-6, *,
                        noise_only: bool = False) -> tuple[float, float]:
    """[ε_lower, ε_upper] at ``delta`` from ``delta_at(ε)`` (a :class:`HonestIKOSPrivacy`) by bisection (both
    ends certified: δ_upper(ε_upper) ≤ δ and δ_lower(ε_lower) ≥ δ, or ε_lower = 0).  ε_upper = inf when no
    ε ≤ 700 is certified.  ``noise_only``: the noise's δ alone (without the IKOS statistical-distance term)."""
    from shufflesim.core.checks import check_real

    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)

    def bisect(f) -> float:  # smallest ε on the grid with f(ε) ≤ δ, f non-increasing
        lo, hi = 0.0, eps_start
        while f(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 700.0:
                return math.inf
        while hi - lo > tol * max(hi, 1e-12):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) > delta else (lo, mid)
        return hi

    which = "noise_delta_upper" if noise_only else "delta_upper"
    upper = bisect(lambda e: getattr(delta_at(e), which))
    if not math.isfinite(upper):
        return 0.0, upper
    # the largest ε with δ_lower(ε) ≥ δ is a certified lower end
    f_low = lambda e: delta_at(e).delta_lower  # noqa: E731
    if f_low(0.0) < delta:
        return 0.0, upper
    lo, hi = 0.0, upper
    while hi - lo > tol * max(hi, 1e-12):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f_low(mid) >= delta else (lo, mid)
    return lo, upper


def ikos_honest_eps(proto, h: int, delta: float, tol: float = 1e-6, *, noise_only: bool = False) -> tuple[float, float]:
    """[ε_lower, ε_upper] at ``delta`` from :func:`ikos_honest_delta` (:func:`honest_eps_interval`).  ε_upper =
    inf when no ε ≤ 700 is certified (the IKOS term (1 + e^ε)2^{−σ} grows with ε, so a δ below it is never
    reached)."""
    return honest_eps_interval(lambda e: ikos_honest_delta(proto, h, e), delta, proto.parameters.eps, tol,
                               noise_only=noise_only)


# --- the defence: tolerate a fraction F of absent or noiseless users (docs/theory.md#dishonest-tolerate) --------
def ikos_tolerant(proto, fraction: float, *, raise_messages: bool = False):
    """A copy of an ikos-sum protocol whose users add Pólya(1/h0, α) − Pólya(1/h0, α), h0 = ⌈(1 − F)·n⌉.

    Any h ≥ h0 honest shares then sum to DLap(α) plus independent noise Pólya((h − h0)/h0)-differences,
    a post-processing of the DLap mechanism: the comparison mechanism stays ε-DP (seed 004 §8's defence,
    "increase the overall noise by a constant factor"); the noise variance grows by n/h0 ≈ 1/(1 − F).
    Only :func:`attacked_estimate`/:func:`simulate_attack` and the functions of this module know the copy
    (its fast engine draws the defended noise, Pólya(n/h0, α) − Pólya(n/h0, α); its ``noise_mse``, hence
    ``mse_*``, is the defended noise's).

    ``raise_messages``: also raise the messages per user to the fewest m' ≥ m whose IKOS term with h0 honest
    users, (1 + e^ε)2^{−σ(h0, m'−1)}, plus the remaining noise's certified δ(ε) stays within the protocol's δ
    (σ shrinks with the number of honest users: the noise alone does not restore the (ε, δ) claim).
    """
    import copy
    import dataclasses

    from shufflesim.core.checks import check_real

    if proto.name != "ikos-sum":
        raise NotApplicableError("the --tolerate defence is implemented for ikos-sum only in this slice")
    f = check_real("tolerate", fraction, low=0.0, high=1.0, high_open=True)
    h0 = max(1, math.ceil((1.0 - f) * proto.n - 1e-9))
    if raise_messages:
        from shufflesim.pipeline import registry
        from shufflesim.protocols.ikos_sum import MAX_MESSAGES, ikos_sigma_improved

        prm = proto.parameters
        noise = polya_honest_delta(prm.alpha, prm.p, h0, h0, prm.eps).noise_delta_upper
        m = prm.m
        while noise + math.exp(math.log1p(math.exp(prm.eps)) - ikos_sigma_improved(h0, prm.q, m - 1) * math.log(2.0)) \
                > prm.delta:
            m += 1
            if m > MAX_MESSAGES:
                raise NotApplicableError(f"tolerating F={f:g} needs more than {MAX_MESSAGES} messages per user")
        if m != prm.m:
            proto = registry.create("ikos-sum", proto.n, eps=prm.eps, p=prm.p, q=prm.q, messages=m,
                                    variant=prm.variant)
    out = copy.copy(proto)
    out.randomiser = dataclasses.replace(proto.randomiser, n_users=h0)
    out.params = dict(proto.params, tolerate=f, noise_users=h0)
    # the exact MSE formulas (mse_expected, mse_worst, mse_bound) read the noise term from noise_mse(): the
    # defended noise's (n/h0)·Var DLap/p² (their overflow check still uses DLap(α)'s tail)
    out.noise_mse = _FixedPrivacy(ikos_noise_mse(out))
    return out


def ikos_noise_mse(proto) -> float:
    """Noise part of the MSE of the sum with every user honest: (n/h0)·Var DLap(α)/p², h0 = the design count."""
    prm = proto.parameters
    r = prm.n / proto.randomiser.n_users
    return r * 2.0 * prm.alpha / ((1.0 - prm.alpha) ** 2 * prm.p**2)


def tolerated_count(n: int, fraction: float) -> int:
    """h0 = ⌈(1 − F)·n⌉ (at least 1): the fewest honest users a defence tolerating a fraction F must cover."""
    from shufflesim.core.checks import check_real

    f = check_real("tolerate", fraction, low=0.0, high=1.0, high_open=True)
    return max(1, math.ceil((1.0 - f) * n - 1e-9 * n))


#: the mechanism kinds whose local parameter ``tolerant_mechanism`` calibrates: (field, increasing δ in it,
#: search interval)
TOLERATE_KINDS = {"rr2": ("eps0", True), "clones": ("eps0", True), "krr": ("gamma", False)}


@dataclass(frozen=True)
class Tolerance:
    """A defence calibrated so that the target (ε, δ) holds whenever at least ``h0`` of the ``n`` users are
    honest (docs/theory.md#dishonest-tolerate).

    ``base``/``defended``: the undefended and the defended mechanism (or protocol) over all n users;
    ``param``: the calibrated parameter, ``base_value``/``value`` its two values; ``eps_*``: certified
    [lower, upper] ε at ``delta`` — of the defended at h0 honest (upper ≤ ``target_eps``: the certificate),
    of the undefended at h0 (what the attack leaves without the defence) and at n; ``mse_base``/``mse_defended``:
    the exact worst-case MSE of the estimator built on it (``mse_what`` says which), their ratio the price.
    """

    kind: str
    n: int
    fraction: float
    h0: int
    target_eps: float
    delta: float
    param: str
    base_value: float
    value: float
    eps_defended_h0: tuple[float | None, float]
    eps_base_h0: tuple[float | None, float]
    eps_base_n: tuple[float | None, float]
    delta_defended_h0: float
    delta_base_h0: float
    mse_base: float | None
    mse_defended: float | None
    mse_what: str
    base: object = None
    defended: object = None
    eps_what: str = "certified [lower, upper] eps at delta (tight accountant)"

    @property
    def certified(self) -> bool:
        """The certificate: the defended mechanism among h0 honest users has certified δ_upper(target ε) ≤ δ, or
        a certified ε_upper(δ) ≤ the target ε (δ_upper(ε_upper) ≤ δ was evaluated, and δ(ε) does not increase
        in ε).  For IKOS only the first counts (its ``eps_*`` are the noise's alone)."""
        if self.delta_defended_h0 <= self.delta:
            return True
        return self.kind != "ikos-sum" and self.eps_defended_h0[1] <= self.target_eps

    @property
    def mse_ratio(self) -> float | None:
        if self.mse_base is None or self.mse_defended is None:
            return None
        return self.mse_defended / self.mse_base

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("kind", "n", "fraction", "h0", "target_eps", "delta", "param",
                                            "base_value", "value", "mse_base", "mse_defended", "mse_what")}
        for k in ("eps_defended_h0", "eps_base_h0", "eps_base_n"):
            d[k] = list(getattr(self, k))
        d.update(delta_defended_h0=self.delta_defended_h0, delta_base_h0=self.delta_base_h0, eps_what=self.eps_what,
                 mse_ratio=self.mse_ratio, certified=self.certified)
        return d


def _eps_at(mech, delta: float, method: str | None = None) -> tuple[float | None, float]:
    from shufflesim.accounting.account import account

    (r,) = account(mech, delta=[delta], method=method).results
    if not getattr(r, "applicable", True):
        raise NotApplicableError(f"the accountant cannot answer for {mech.kind}: {r.reason}")
    return r.eps_lower, r.eps_upper


def _delta_at(mech, eps: float, method: str | None = None) -> float:
    from shufflesim.accounting.account import certified_delta_upper

    return certified_delta_upper(mech, eps, method=method)


def certifier_delta(proto, eps: float) -> float:
    """Certified δ upper end at ``eps`` of the pair that certifies ``proto``'s ε (a krr protocol's
    :meth:`certifier`): the accountant's answer for that pair; where the certificate is the local ε0 (ε0-LDP
    reports, post-processing) the largest hockey-stick divergence of an ε0-DP pair, (e^ε0 − e^ε)/(e^ε0 + 1) for
    ε < ε0 and 0 beyond (binary randomised response's: every ε0-DP pair is a post-processing of it, Kairouz, Oh and
    Viswanath, ICML 2015)."""
    cert = proto.certifier()
    if cert is None:
        e0 = float(proto.params["eps0"])
        return 0.0 if eps >= e0 else -math.expm1(eps - e0) / (1.0 + math.exp(-e0))
    mech, method = cert
    return _delta_at(mech, eps, method)


def _mechanism_mse(mech) -> tuple[float | None, str]:
    """The exact worst-case MSE of the estimator the protocols build on this mechanism (module docstring)."""
    from shufflesim.pipeline import registry

    if mech.kind == "rr2":
        return registry.create("local-rr-sum", mech.n, eps=mech.eps0).mse_worst(), \
            "worst-case MSE of the debiased sum of n bits (local-rr-sum at eps0)"
    if mech.kind == "clones":
        return registry.create("local-laplace-sum", mech.n, eps=mech.eps0).mse_worst(), \
            "MSE of the sum with the Laplace randomiser at eps0 (local-laplace-sum; clones covers every eps0-LDP one)"
    if mech.kind == "krr":
        return registry.create("krr", mech.n, k=mech.k, gamma=mech.gamma).mse_worst(), \
            "worst-case MSE of the debiased histogram (krr protocol)"
    return None, "no estimator"


def tolerant_mechanism(mech, fraction: float, delta: float, *, target_eps: float | None = None,
                       method: str | None = None) -> Tolerance:
    """Calibrate the local parameter of a shuffled k-RR-family mechanism (rr2, krr, clones) so that its
    guarantee at ``delta`` holds whenever at least h0 = ⌈(1 − F)n⌉ users are honest: the certified upper end of
    the same mechanism among h0 users (:func:`honest_mechanism`) meets ``target_eps`` (default: the
    undefended mechanism's own certified ε at n honest users).  The search is the project's safe-side
    calibrator (:func:`~shufflesim.accounting.account.calibrate_mechanism`); the certificate is re-read from the
    accountant at the calibrated value (docs/theory.md#dishonest-tolerate)."""
    import dataclasses

    from shufflesim.accounting.account import calibrate_mechanism
    from shufflesim.core.checks import check_real
    from shufflesim.core.progress import stage

    kind = getattr(mech, "kind", None)
    if kind not in TOLERATE_KINDS:
        raise NotApplicableError(f"--tolerate calibrates {', '.join(TOLERATE_KINDS)} (the same mechanism among "
                                 f"the honest users); {kind}: " + (
                                     "use the ikos-sum protocol's --tolerate (its noise is distributed)"
                                     if kind in HONEST_NOISE_KINDS else "no local parameter to calibrate"))
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    h0 = tolerated_count(mech.n, fraction)
    if target_eps is not None:
        target_eps = check_real("target_eps", target_eps, low=0.0, low_open=True)
    field_name, increasing = TOLERATE_KINDS[kind]
    base_value = float(getattr(mech, field_name))
    if kind == "krr":
        from shufflesim.mechanisms.krr import KRR

        def make(g, m=mech.n):
            return KRR(m, mech.k, g, mech.relation)
        lo, hi = base_value, 1.0
    else:
        def make(e0, m=mech.n):
            return dataclasses.replace(mech, n=m, eps0=e0)
        lo, hi = 1e-6, base_value
    calibrating = not (h0 == mech.n and target_eps is None)
    est = tolerate_estimate(mech, lo, hi, method, calibrating)
    tolerate_check(est, method)  # before the first question
    with stage(f"--tolerate calibration of {kind} ({est.engine})", est.seconds):  # the estimate, then its ETA
        base_n = _eps_at(mech, delta, method)
        target = base_n[1] if target_eps is None else target_eps
        if not calibrating:
            value = base_value
        else:
            cal = calibrate_mechanism(lambda x: make(x, h0), field_name, target, delta, lo, hi,
                                      increasing=increasing, method=method, rtol=TOLERATE_RTOL)
            value = cal.value
        defended = make(value)
        mse_b, what = _mechanism_mse(mech)
        mse_d, _ = _mechanism_mse(defended)
        return Tolerance(kind, mech.n, float(fraction), h0, target, delta, field_name, base_value, value,
                         _eps_at(make(value, h0), delta, method), _eps_at(make(base_value, h0), delta, method),
                         base_n, _delta_at(make(value, h0), target, method),
                         _delta_at(make(base_value, h0), target, method), mse_b, mse_d, what, mech, defended)


#: accountant questions of :func:`tolerant_mechanism` besides the calibration's: ε at n, ε and δ of the defended and
#: of the undefended mechanism at h0
TOLERATE_FIXED_RUNS = 5
#: the relative tolerance of :func:`~shufflesim.accounting.account.calibrate_mechanism` (its default)
TOLERATE_RTOL = 1e-6


def tolerate_estimate(mech, lo: float, hi: float, method: str | None = None, calibrating: bool = True):
    """Estimated memory and time of :func:`tolerant_mechanism` (an :class:`~shufflesim.accounting.engines.estimates.
    Estimate`): one accountant question's estimate at n (:func:`~shufflesim.accounting.account.estimate_account`; h0 <= n
    costs no more) times the questions it asks -- :data:`TOLERATE_FIXED_RUNS`, plus the calibration's evaluations
    on [lo, hi] in log scale, at most those of a bisection to :data:`TOLERATE_RTOL`, log2(ln(hi/lo)/rtol) + 2."""
    from shufflesim.accounting.account import estimate_account
    from shufflesim.accounting.engines.estimates import Estimate

    one = estimate_account(mech, method=method)
    evals = math.ceil(math.log2(max(2.0, math.log(hi / lo) / TOLERATE_RTOL))) + 2 if calibrating else 0
    runs = evals + TOLERATE_FIXED_RUNS
    return Estimate(one.bytes, runs * one.seconds, f"{runs} accountant questions of {one.engine}")


def tolerate_check(est, method: str | None = None) -> None:
    """Refuse (:class:`~shufflesim.errors.ResourceError`, one line) a --tolerate calibration whose estimate ``est``
    does not fit in memory or exceeds the time limit (the account command's knobs, SHUFFLESIM_MEMORY_LIMIT and
    SHUFFLESIM_TIME_LIMIT; :mod:`shufflesim.core.resources`), naming the faster path: a published bound."""
    from shufflesim.core.resources import check_memory, check_time

    what = f"the --tolerate calibration ({est.engine})"
    advice = ("a published bound answers each question at once (--method erlingsson|feldman), or a smaller n; "
              "SHUFFLESIM_MEMORY_LIMIT / SHUFFLESIM_TIME_LIMIT set the limits")
    if method in ("erlingsson", "feldman", "feldman-numerical"):
        advice = "a smaller n; SHUFFLESIM_MEMORY_LIMIT / SHUFFLESIM_TIME_LIMIT set the limits"
    check_memory(est.bytes, what, advice)
    check_time(est.seconds, what, advice)


class _FixedPrivacy:
    """A protocol method (``privacy``, ``noise_mse``) replaced by a fixed value (picklable, for worker processes)."""

    def __init__(self, guarantee):
        self.guarantee = guarantee

    def __call__(self):
        return self.guarantee


#: protocols whose privacy does not depend on the other users' honesty, and why (the tolerate refusal)
_NOTHING_TO_TOLERATE = {
    "local-rr-sum": "local model: each honest user's report is eps-LDP whatever the others send",
    "local-laplace-sum": "local model: each honest user's report is eps-LDP whatever the others send",
    "central-laplace-sum": "central model: the trusted curator adds all the noise",
    "central-dlap-sum": "central model: the trusted curator adds all the noise",
    "central-laplace-hist": "central model: the trusted curator adds all the noise",
    "central-gaussian-hist": "central model: the trusted curator adds all the noise",
}
#: protocols whose blanket parameter(s) ``tolerant_protocol`` recalibrates for h0 users, and the parameters kept
_RECALIBRATE = {"blanket-sum": ("gamma", ("k",)), "cheu-sum": ("gamma", ("messages",)),
                "recursive-sum": ("gammas", ("precisions",))}


def _fixed_params(proto, name: str, keep) -> dict:
    """The protocol's resolved parameters that stay fixed when its blanket is recalibrated for fewer users."""
    prm = dict(proto.params)
    out = {"eps": prm["eps"], "delta": prm["delta"]}
    for k in ("mode", "adversary", "bennett_variant"):
        if k in prm:
            out[k] = prm[k]
    for k in keep:
        if k == "messages" and name == "cheu-sum":
            out[k] = proto.randomiser.r
        elif k == "precisions":
            out[k] = list(proto.precisions)
        else:
            out[k] = prm[k]
    return out


def check_tolerance(proto, fraction) -> int:
    """Everything :func:`tolerant_protocol` refuses before it calibrates, without calibrating: the protocol has
    noise to scale, F is a finite fraction in [0, 1), and the accountant can certify the protocol among the
    h0 = ⌈(1 − F)n⌉ honest users (a pair-based method's n limit).  ``run --check`` and the run call this one
    function, so the check refuses exactly what the run would.  Returns h0."""
    name = proto.name
    if name in _NOTHING_TO_TOLERATE:
        raise NotApplicableError(f"--tolerate: nothing to calibrate for {name} ({_NOTHING_TO_TOLERATE[name]})")
    if name != "krr" and name not in _RECALIBRATE and name != "ikos-sum":
        raise NotApplicableError(f"--tolerate is implemented for krr, {', '.join(_RECALIBRATE)} and ikos-sum; "
                                 f"{name}: no calibrated noise to scale")
    h0 = tolerated_count(proto.n, fraction)
    if name in _RECALIBRATE and not proto.params.get("delta", 1.0) > 0.0:
        raise NotApplicableError(f"--tolerate: {name} at eps={proto.params.get('eps', float('nan')):g} certifies "
                                 "delta = 0 (its delta(eps) is 0, or below the smallest double), so "
                                 "there is no delta target to recalibrate for the honest users; give a smaller eps")
    if name != "ikos-sum":  # the certificate among h0 honest users: what account() refuses before computing
        from shufflesim.accounting.model.queries import check_method_applies

        mech = honest_mechanism(proto.mechanism(), h0)
        parts = [p for p, _ in mech.parts] if getattr(mech, "kind", None) == "composition" else [mech]
        for part in parts:
            try:
                check_method_applies(part, part.default_method)
            except ParameterError as exc:
                raise ParameterError(f"--tolerate {float(fraction):g}: the defence is certified among h0 = {part.n} "
                                     f"honest users: {exc}") from None
    return h0


def tolerant_protocol(proto, fraction: float) -> Tolerance:
    """The protocol calibrated to keep its (ε, δ) target whenever at least h0 = ⌈(1 − F)n⌉ of its n users are
    honest (seed 004 §8's defence; docs/theory.md#dishonest-tolerate), its certificate and its MSE price.

    blanket-sum, cheu-sum, recursive-sum: the blanket probability (per level) calibrated by the protocol's own
    rule for h0 users at the same ε, δ and precisions/messages, then used by all n (extra honest blankets
    only help: the view among h ≥ h0 honest users is a post-processing of... the h0-user view plus independent
    reports); krr: γ calibrated so that k-RR among h0 users meets the ε the undefended protocol reports
    (:func:`tolerant_mechanism`); ikos-sum: :func:`ikos_tolerant` (noise shares designed for h0 users).
    Certified by the accountant: the defended mechanism among h0 honest users (:func:`honest_mechanism`; for
    IKOS the exact remaining noise law, :func:`ikos_honest_eps`) has ε_upper ≤ the target.  The MSE price is the
    ratio of the exact worst-case MSEs (IKOS: rounding + noise terms).  Local and central protocols are refused
    (their guarantee does not depend on the other users).
    """
    from shufflesim.accounting.model.results import PrivacyGuarantee
    from shufflesim.pipeline import registry

    name = proto.name
    n = proto.n
    h0 = check_tolerance(proto, fraction)
    if name == "krr":
        # γ calibrated against the protocol's own certified ε among h0 users (its best pair: the stronger clone
        # pair, the strong and, up to n = 2e4, the weak adversary's pair), by the safe-side calibrator
        from shufflesim.accounting.numerics.invert import calibrate

        g, adv = proto.privacy(), proto.params["adversary"]

        def at_h0(gm: float, m: int = h0):
            return registry.create("krr", m, k=proto.k, gamma=gm, delta=g.delta, adversary=adv)

        cal = calibrate(lambda gm: at_h0(gm).privacy().eps, g.eps, proto.gamma, 1.0 - 1e-9, increasing=False,
                        xtol=0.0, rtol=1e-5)
        defended = registry.create("krr", n, k=proto.k, gamma=cal.x, delta=g.delta, adversary=adv)
        # every field at h0 from the pair that certified it (KRRProtocol.certifier): the ε upper end and δ at the
        # target ε of one pair, so that a certificate never stands next to a looser pair's δ (issue 29)
        d_h0, b_h0 = at_h0(cal.x), at_h0(proto.gamma)
        tol = Tolerance(name, n, float(fraction), h0, g.eps, g.delta, "gamma", proto.gamma, cal.x,
                        (None, d_h0.privacy().eps), (None, b_h0.privacy().eps), (None, g.eps),
                        certifier_delta(d_h0, g.eps), certifier_delta(b_h0, g.eps), proto.mse_worst(),
                        defended.mse_worst(), "worst-case MSE of the debiased histogram", proto, defended,
                        "the krr protocol's certified eps at delta (its best pair), upper end only; delta_*_h0: "
                        "the same pair's certified delta at the target eps")
    elif name in _RECALIBRATE:
        param, keep = _RECALIBRATE[name]
        fixed = _fixed_params(proto, name, keep)
        g = proto.privacy()
        # with every user honest there is nothing to recalibrate (params' delta is the certified delta_upper(eps),
        # below the target the protocol was calibrated to: recalibrating to it would move gamma for F = 0)
        design = proto if h0 == n else registry.create(name, h0, **fixed)
        defended = registry.create(name, n, **fixed, **{param: _param(design, param)})
        mech = defended.mechanism()
        tol = Tolerance(name, n, float(fraction), h0, g.eps, g.delta, param, _scalar_param(proto, param),
                        _scalar_param(defended, param), _eps_at(honest_mechanism(mech, h0), g.delta),
                        _eps_at(honest_mechanism(proto.mechanism(), h0), g.delta),
                        _eps_at(proto.mechanism(), g.delta), _delta_at(honest_mechanism(mech, h0), g.eps),
                        _delta_at(honest_mechanism(proto.mechanism(), h0), g.eps), proto.mse_worst(),
                        defended.mse_worst(),
                        "exact worst-case MSE of the sum", proto, defended)
    elif name == "ikos-sum":
        defended = ikos_tolerant(proto, fraction, raise_messages=True)
        prm = proto.parameters
        rounding = n / (4.0 * prm.p**2)
        tol = Tolerance(name, n, float(fraction), h0, prm.eps, prm.delta, "noise_users", float(n), float(h0),
                        ikos_honest_eps(defended, h0, prm.delta, noise_only=True),
                        ikos_honest_eps(proto, h0, prm.delta, noise_only=True),
                        ikos_honest_eps(proto, n, prm.delta, noise_only=True),
                        ikos_honest_delta(defended, h0, prm.eps).delta_upper,
                        ikos_honest_delta(proto, h0, prm.eps).delta_upper, rounding + ikos_noise_mse(proto),
                        rounding + ikos_noise_mse(defended),
                        "worst-case rounding + noise MSE of the sum, n/(4p^2) + (n/h0) Var DLap/p^2 (the overflow "
                        "term, of order 2^-sigma, left out)", proto, defended,
                        "certified [lower, upper] eps at delta of the remaining Polya noise alone (the IKOS "
                        "statistical-distance term is in delta_*_h0)")
    else:
        raise NotApplicableError(f"--tolerate is implemented for krr, {', '.join(_RECALIBRATE)} and ikos-sum; "
                                 f"{name}: no calibrated noise to scale")
    note = (f"tolerate F={tol.fraction:g}: the target holds whenever at least {h0} of {n} users are honest "
            f"(certified eps_upper {tol.eps_defended_h0[1]:.6g} at {h0} honest users; undefended: "
            f"{tol.eps_base_h0[1]:.6g}); MSE price x{tol.mse_ratio:.4g}")
    base_g = proto.privacy()
    own = tol.defended.privacy()  # the defended protocol's own notes (its blanket, messages) at n honest users
    method = f"{base_g.method}; tolerates {n - h0} of {n} users dishonest"
    if name == "ikos-sum":
        method = f"{base_g.method}; noise tolerates {n - h0} of {n} users absent"
    tol.defended.privacy = _FixedPrivacy(PrivacyGuarantee(tol.target_eps, tol.delta, method,
                                                          (*(own.notes if own is not None else ()), note)))
    tol.defended.params = dict(tol.defended.params, tolerate=tol.fraction, honest_min=h0)
    return tol


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def _param(proto, name: str):
    return list(proto.params[name]) if name == "gammas" else proto.params[name]


def _scalar_param(proto, name: str) -> float:
    """The calibrated parameter as one number (recursive: the smallest level's γ)."""
    v = proto.params[name]
    return float(min(v)) if name == "gammas" else float(v)


def honest_privacy(proto, honest, delta: float | None = None):
    """The protocol's guarantee when only ``honest`` (a count or a fraction) of its n users are honest, as a
    :class:`~shufflesim.accounting.model.results.PrivacyGuarantee` (ε = the certified upper end at the protocol's δ)
    whose method says "M of N users honest" (docs/theory.md#dishonest-honest): the same mechanism among the
    honest users (shuffled protocols), the remaining Pólya noise (ikos-sum), unchanged (local and central
    protocols: their noise does not depend on the others)."""
    from shufflesim.accounting.model.results import PrivacyGuarantee

    base = proto.privacy()
    if base is None:
        raise NotApplicableError(f"{proto.name} states no central guarantee")
    n = proto.n
    m = honest_count(honest, n)
    delta = base.delta if delta is None else delta
    what = f"{m} of {n} users honest"
    if proto.name in _NOTHING_TO_TOLERATE:
        return PrivacyGuarantee(base.eps, base.delta, f"{base.method}; {what}",
                                (*base.notes, f"{what}: unchanged ({_NOTHING_TO_TOLERATE[proto.name]})"))
    if proto.name == "ikos-sum":
        lo, up = ikos_honest_eps(proto, m, delta)
        return PrivacyGuarantee(up, delta, f"ikos remaining Polya noise; {what}",
                                (f"{what}: eps in [{lo:.6g}, {up:.6g}] at delta={delta:.3g} (the noise of {m} "
                                 f"shares designed for {proto.randomiser.n_users} users, exact law; IKOS term with "
                                 f"{m} users)",))
    if proto.name == "krr":  # the protocol among m users, certified as the protocol certifies itself
        from shufflesim.pipeline import registry

        g = registry.create("krr", m, k=proto.k, gamma=proto.gamma, delta=delta,
                            adversary=proto.params["adversary"]).privacy()
        return PrivacyGuarantee(g.eps, delta, f"{g.method}; {what}",
                                (f"{what}: the same protocol among the {m} honest users (the others' reports are "
                                 "known)", *g.notes))
    mech = proto.mechanism()
    if mech is None:
        raise NotApplicableError(f"{proto.name} describes no mechanism to account")
    lo, up = _eps_at(honest_mechanism(mech, m), delta)
    return PrivacyGuarantee(up, delta, f"tight; {what}",
                            (f"{what}: the same mechanism among the {m} honest users (the others' reports are "
                             f"known): eps in [{'n/a' if lo is None else f'{lo:.6g}'}, {up:.6g}]",))


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
