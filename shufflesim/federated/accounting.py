"""FLAME's privacy accounting (seed 002), the paper's way and valid/tighter ways (docs/theory.md#flame).

The paper's theorems, as functions:

* :func:`theorem1` — SS-Simple: eps_c = d·eps_cd ∧ (eps_cd·sqrt(2d log(1/δ_cd)) + d·eps_cd(e^eps_cd − 1)),
  δ_c = δ_cd(d + 1) (eqs 2–3; the best of basic and advanced composition);
* :func:`lemma1` — Balle et al.'s closed form for R_{γ,b} among n users: sqrt(14 log(2/δ)(e^eps + b − 1)/(n − 1));
* :func:`theorem3` — SS-Double with R_{γ,b}: eps_ck = Lemma 1 at δ_cd/β among n_p (eq 5), then subsampling
  at rate β: eps_cd = log(1 + β(e^eps_ck − 1)) (eq 6);
* :func:`theorem4` — the vector over 2βd = 2k coordinates: best of basic/advanced, δ_c = δ_cd(2k + 1);
* :func:`corollary2_condition`, :func:`corollary3_condition` — the corollaries' validity ranges of eps_l
  (the corollaries themselves are O(·) statements);
* Theorem 5 and Proposition 2 (index privacy) are in :mod:`shufflesim.federated.encoding`.

:func:`paper_pipeline` reproduces the published eps_c = 0.91 / 0.24 / 20.53 (docs/theory.md#flame documents the
pipeline; FINDINGS.md item 5).  :func:`flame_privacy` gives, for a configured protocol and a number of
rounds, the paper's value and the values shufflesim certifies (see the docs for which are valid).
:func:`sampled_privacy` adds who takes part: SS-Double's k-of-d coordinate sampling credited through the
block argument of docs/theory.md#flame-double (upper end), the explicit data sets of its lower end
(:func:`ss_double_lower`), and client sampling per round (Poisson rate or m clients of a population) — all for
shufflesim's one unlinkable message per reported coordinate.  :func:`ss_double_linked_lower` is the certified
lower end of SS-Double as Algorithms 2–3 print it (one linked message of k values per user,
docs/theory.md#flame-double-linked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shufflesim.accounting.bounds import bennett_eps, best_composition, subsample
from shufflesim.accounting.bounds.balle import KRRBlanket, LaplaceBlanket
from shufflesim.core.checks import check_int

__all__ = ["theorem1", "lemma1", "theorem3", "theorem4", "figure3_ratios", "corollary2_condition", "corollary3_condition",
           "paper_pipeline", "blanket_of", "flame_privacy", "sampled_privacy", "ss_double_upper", "ss_double_lower",
           "ss_double_linked_lower", "linked_message_count", "count_difference_tail", "dummy_is_centre", "omega_share", "overflow_bound", "FLAME_PUBLISHED", "PAPER_SETTING"]

#: PAPER CLAIM (seed 002 §Evaluations): eps_c of one epoch at delta_c = 0.01/n^1.1, n = 1000, d = 7850
FLAME_PUBLISHED = {"simple": 0.91, "double": 0.24, "shuffle_only": 20.53}
PAPER_SETTING = {"n": 1000, "d": 7850, "eps_l": 78.5, "beta": 1 / 50}


def theorem1(eps_cd: float, delta_cd: float, d: int) -> tuple[float, float]:
    eps, delta, _ = best_composition(eps_cd, delta_cd, d, delta_cd)
    return eps, delta


def lemma1(eps_l: float, b: int, n: int, delta: float) -> float:
    """Seed 002 Lemma 1: R_{γ,b} with γ = b/(e^eps_l + b − 1) (the paper's b values) shuffled among n users is
    (sqrt(14 log(2/δ)(e^eps_l + b − 1)/(n − 1)), δ)-DP (Balle et al.'s closed form)."""
    return math.sqrt(14.0 * math.log(2.0 / delta) * (math.exp(eps_l) + b - 1) / (n - 1))


def theorem3(eps_lk: float, b: int, n_p: int, beta: float, delta_cd: float) -> tuple[float, float]:
    """Eqs 5–6 (:func:`lemma1` at δ_cd/β among n_p, then subsampling at rate β).  Returns (eps_ck, eps_cd)."""
    eps_ck = lemma1(eps_lk, b, n_p, delta_cd / beta)
    return eps_ck, math.log1p(beta * math.expm1(eps_ck))


def theorem4(eps_cd: float, delta_cd: float, k: int) -> tuple[float, float]:
    eps, delta, _ = best_composition(eps_cd, delta_cd, 2 * k, delta_cd)
    return eps, delta


def corollary2_condition(eps_l: float, d: int, n: int, delta_c: float) -> bool:
    """Corollary 2's range: eps_l ≤ d·log(n/log((d + 1)/δ_c))/2."""
    return eps_l <= d * math.log(n / math.log((d + 1) / delta_c)) / 2.0


def corollary3_condition(eps_l: float, d: int, n_p: int, beta: float, delta_c: float) -> bool:
    """Corollary 3's range: eps_l ≤ βd·log(n_p/log((2β²d + β)/δ_c))/2."""
    return eps_l <= beta * d * math.log(n_p / math.log((2 * beta**2 * d + beta) / delta_c)) / 2.0


def blanket_of(randomiser: str, eps: float, b: int = 10):
    """Balle et al.'s blanket description of a per-coordinate randomiser (for the Bennett bound)."""
    if randomiser == "laplace":
        return LaplaceBlanket(eps)
    return KRRBlanket.from_eps0(b + 1, eps)


def _theorem4(blanket, n_p: int, rate: float, steps: int, delta_total: float, variant: str) -> tuple:
    """The paper's SS-Double accounting (Theorems 3–4 with the Bennett bound ``variant``): per-step
    δ_cd = δ_total/(steps + 1); the shuffling step among n_p at δ_cd/rate (at most 1) gives eps_ck;
    subsampling at ``rate`` gives (eps_cd, δ_cd'); best of basic/advanced over ``steps`` with δ' = δ_cd.
    Returns (eps, delta, eps_ck, eps_cd, delta_cd')."""
    d_step = delta_total / (steps + 1)
    d_ck = min(1.0, d_step / rate)
    e_ck = bennett_eps(d_ck, n=n_p, randomiser=blanket, variant=variant).eps_upper
    e_cd, d_cd = subsample(e_ck, d_ck, rate=rate)
    eps, delta, _ = best_composition(e_cd, d_cd, steps, d_step)
    return eps, delta, e_ck, e_cd, d_cd


def paper_pipeline(variant: str = "original-2019", *, n: int = 1000, d: int = 7850, eps_l: float = 78.5,
                   beta: float = 1 / 50, n_p: int | None = None, delta_c: float | None = None) -> dict:
    """FLAME's eps_c from the Bennett bound ``variant`` with the δ each step is given (docs/theory.md#flame):

    * SS-Simple: per-coordinate δ_cd = δ_c/(d + 1); Bennett at n users; Theorem 1 over d.
    * SS-Double/Topk: k = βd, T = 2k, per-step δ_cd = δ_c/(T + 1) (Theorem 4); the shuffling step among
      n_p (default ⌊n/3⌋) at δ_cd/β, subsampling at rate β (Lemma 4) gives (eps_cd, δ_cd); best over T.
    * Shuffling only: no subsampling, so the shuffling step itself gets δ_cd.
    * ``shuffle_at_double_delta``: the SS-Double shuffling step's eps (at δ_cd/β) composed without
      subsampling — not a δ_c guarantee (its total δ is returned too).

    Besides each eps, the total δ of each composition (``delta_simple``, ``delta_double``,
    ``delta_shuffle_only``: each is δ_c up to rounding) and the per-step δ after subsampling
    (``delta_cd_double``: δ_cd up to rounding) are returned, so that a caller can check the split.
    """
    delta_c = 0.01 / n**1.1 if delta_c is None else delta_c
    n_p = n // 3 if n_p is None else n_p
    d_coord = delta_c / (d + 1)
    e = bennett_eps(d_coord, n=n, randomiser=LaplaceBlanket(eps_l / d), variant=variant).eps_upper
    simple, d_simple = theorem1(e, d_coord, d)
    k = round(beta * d)
    T, rate = 2 * k, k / d
    d_step = delta_c / (T + 1)
    shuffled = LaplaceBlanket(eps_l / k)
    double, d_double, e_ck, e_cd, d_cd = _theorem4(shuffled, n_p, rate, T, delta_c, variant)
    e_sh = bennett_eps(d_step, n=n_p, randomiser=shuffled, variant=variant).eps_upper
    shuffle_only, d_shuffle, _ = best_composition(e_sh, d_step, T, d_step)
    at_double, d_at_double, _ = best_composition(e_ck, d_step / rate, T, d_step)
    return {"simple": simple, "double": double, "shuffle_only": shuffle_only, "delta_c": delta_c,
            "shuffle_at_double_delta": at_double, "delta_at_double_delta": d_at_double,
            "eps_cd_simple": e, "eps_ck": e_ck, "eps_cd_double": e_cd, "eps_shuffle_step": e_sh,
            "delta_simple": d_simple, "delta_double": d_double, "delta_shuffle_only": d_shuffle, "delta_cd_double": d_cd}


@dataclass(frozen=True)
class FlamePrivacy:
    """(eps, delta) of a FLAME run by several methods; ``eps`` is the smallest *valid* one."""

    eps: float
    delta: float
    method: str
    values: dict
    #: a certified lower end on the run's eps at ``delta`` (explicit data sets), where one is computed
    eps_lower: float | None = None
    #: how the lower end was obtained (data sets, statistic, sampling pattern)
    lower_what: str = ""

    def as_dict(self) -> dict:
        fin = lambda v: v if v is not None and math.isfinite(v) else None  # noqa: E731  (JSON: null, not inf)
        out = {"eps": fin(self.eps), "delta": self.delta, "method": self.method,
               "values": {k: fin(v) for k, v in self.values.items()}}
        if self.eps_lower is not None:  # only the sampled accounting sets it: older results keep their keys
            out |= {"eps_lower": self.eps_lower, "lower_what": self.lower_what}
        return out


def _safe(fn) -> float:
    """A method's value, or inf where it does not apply or overflows (e.g. a local eps beyond e^700)."""
    from shufflesim.errors import ShufflesimError

    try:
        v = float(fn())
    except (OverflowError, ShufflesimError, AttributeError):
        return math.inf
    return v if v == v else math.inf


def _bennett_composed(blanket, n_msgs: int, steps: int, delta: float, variant: str) -> float:
    """Bennett per step at δ/(steps + 1), best of basic/advanced over ``steps`` with δ' = δ/(steps + 1)."""
    d_step = delta / (steps + 1)
    r = bennett_eps(d_step, n=n_msgs, randomiser=blanket, variant=variant)
    e = getattr(r, "eps_upper", math.inf)
    if not math.isfinite(e):
        return math.inf
    return best_composition(e, d_step, steps, d_step)[0]


def _pure_composed(eps0: float, steps: int, delta: float) -> float:
    """Every step is eps0-DP (LDP): the best of basic and advanced composition at δ' = δ."""
    return best_composition(eps0, 0.0, steps, delta)[0]


def _clones_composed(n_msgs: int, eps0: float, steps: int, delta: float) -> float:
    from shufflesim.accounting import account
    from shufflesim.mechanisms import Clones

    if n_msgs < 2:
        return math.inf
    r = account(Clones(n_msgs, eps0), delta=delta, compositions=steps).results[0]
    return float(r.eps_upper)


def flame_privacy(cfg, rounds: int, delta: float, *, tight: bool = True) -> FlamePrivacy:
    """Central (eps, delta) against the analyser of ``rounds`` rounds of a FLAME protocol, for one user
    taking part in every round (no amplification by the sampling of users is claimed).

    Steps composed per round: d (SS-Simple), k (SS-Double: conditioning on the user's random coordinate
    set, only its k reports depend on its data), 2k (SS-Topk: the top sets of two neighbouring vectors
    differ in at most 2k coordinates, where the user sends R(x_j) in one world and ω in the other; ω is
    Lap(1/2, ·) = R(1/2) for Laplace, so each such step is still eps_coord-LDP).  Methods, all valid:
    ``bennett-fixed`` (Balle et al.'s Bennett bound, fixed form, per step at δ/(T + 1), best of
    basic/advanced), ``ldp`` (composition of the eps_coord-LDP guarantee), ``clones`` (the PLD accountant on
    the clones pair of any eps_coord-LDP randomiser among the messages of a coordinate, FFT composition over
    the T steps).  The paper's own values (subsampling credited, original Bennett form) are reported as
    ``paper-*`` and are not used for ``eps`` (docs/theory.md#flame explains why).
    """
    T = {"ss-simple": cfg.d, "ss-double": cfg.k, "ss-topk": 2 * cfg.k}[cfg.protocol] * rounds
    try:
        blanket = blanket_of(cfg.randomiser, cfg.eps_coord, cfg.b)
    except Exception:  # noqa: BLE001 - a description that cannot even be built: the Bennett methods do not apply
        blanket = None
    vals: dict[str, float] = {}
    vals["bennett-fixed"] = _safe(lambda: _bennett_composed(blanket, cfg.n_p, T, delta, "fixed"))
    vals["ldp"] = _safe(lambda: _pure_composed(cfg.eps_coord, T, delta))
    if tight:
        vals["clones"] = _safe(lambda: _clones_composed(cfg.n_p, cfg.eps_coord, T, delta))
    for key in ("bennett-fixed", "clones"):  # each is an upper bound, and so is the LDP composition: never
        if key in vals and vals[key] > vals["ldp"]:  # report a bound above the local guarantee (issue 8)
            vals[key] = vals["ldp"]
    if cfg.protocol != "ss-simple":
        # the paper's pipeline: shuffling at δ_cd/β, subsampling at β, 2k steps per round
        steps = 2 * cfg.k * rounds
        for variant in ("original-2019", "fixed"):
            vals[f"paper-{variant}"] = _safe(lambda: _theorem4(blanket, cfg.n_p, cfg.beta, steps, delta, variant)[0])
    else:
        vals["paper-original-2019"] = _safe(lambda: _bennett_composed(blanket, cfg.n_p, T, delta, "original-2019"))
    valid = {k: v for k, v in vals.items() if not k.startswith("paper")}
    best = min(valid, key=valid.get)
    return FlamePrivacy(valid[best], delta, best, vals)


def figure3_ratios(*, d: int, n: int, b: int, eps_coord: float, beta: float, n_p: int,
                   delta_c: float) -> tuple[float, float]:
    """Seed 002 Figure 3's magnification ratios eps_l/eps_c for R_{γ,b} with the closed form (Lemma 1):
    SS-Simple (Lemma 1 per coordinate at δ_c/(d + 1), Theorem 1; eps_l = d·eps_coord) and SS-Double
    (Theorems 3–4 at δ_c/(2k + 1); eps_l = k·eps_coord), the same eps_coord per perturbed coordinate.
    The paper does not state the figure's n, b, eps_coord, β, n_p or δ_c (docs/flame.md)."""
    d_cd = delta_c / (d + 1)
    e_cd = lemma1(eps_coord, b, n, d_cd)
    simple = d * eps_coord / theorem1(e_cd, d_cd, d)[0]
    k = max(1, round(beta * d))
    d2 = delta_c / (2 * k + 1)
    _, e2 = theorem3(eps_coord, b, n_p, beta, d2)
    double = k * eps_coord / theorem4(e2, d2, k)[0]
    return simple, double


# ---- who takes part: coordinate sampling (SS-Double) and client sampling (docs/theory.md#flame-double) ----

#: the share of δ given to each "bad event" of the sampled accounting (some coordinate receives more than
#: N_max other users' reports; the target takes part in more than j* rounds); the rest goes to the pair
SAMPLING_BAD_SHARE = 1e-3
#: relative error allowed for each probability of the lower end's binomial convolution (docs/theory.md#flame-double:
#: the log-PMF model BINOM_LOG_ERR plus the float sums are below 1e-11; 1e-9 is the margin certified against)
LOWER_REL_ERR = 1e-9
#: largest (window × reports) convolution the lower end evaluates; beyond it fewer rounds are used (ignoring
#: rounds is post-processing, so the lower end stays valid, only weaker)
LOWER_MAX_CELLS = 2 * 10**8


def dummy_is_centre(cfg) -> bool:
    """Whether the padding law ω of ``cfg``'s randomiser satisfies (e^ε0 + 1)·ω(y) ≥ R(a)(y) + R(b)(y) for all
    inputs a, b and outputs y (docs/theory.md#flame-double): then every dummy contains the stronger-clone
    components of every pair of inputs.  Laplace on [0, 1] with ω = R(1/2): R(a)/ω ≤ e^{ε0/2} and
    2e^{ε0/2} ≤ e^{ε0} + 1 always.  R_{γ,b} with ω uniform on b + 1 values: max_y R(a)(y) = e^ε/(e^ε + b), so the
    condition is (e^ε − 1)(e^ε − b) ≥ 0, i.e. e^ε ≥ b (decided with a relative margin of 1e-12)."""
    if cfg.randomiser == "laplace":
        return True
    return math.log(cfg.b) <= cfg.eps_coord * (1.0 - 1e-12)


def omega_share(cfg) -> float:
    """A lower bound on g = min over inputs z and outputs y of R(z)(y)/ω(y): every report is, with probability g,
    a draw of the padding law ω (docs/theory.md#flame-double), so only Bin(·, rate·(1 − g)) of the other
    users' reports in a coordinate are *not* ω-draws.  Laplace with ω = R(1/2): e^{−ε0/2}; R_{γ,b} with ω
    uniform: γ.  Rounded down (one ulp, and a relative 1e-15 for γ's own rounding)."""
    from shufflesim.accounting.numerics.logspace import exp_down
    from shufflesim.maths.rr import gamma_from_eps0

    if cfg.randomiser == "laplace":
        return exp_down(-cfg.eps_coord / 2.0)
    return gamma_from_eps0(cfg.eps_coord, cfg.b + 1) * (1.0 - 1e-15)


def _others_per_coordinate(cfg, participation, clients_per_round, population) -> tuple[float, int, float]:
    """(p, trials, rate): the target takes part in a round with probability p, independently across rounds; the
    number of *other* users' reports in one coordinate of one round is dominated by Bin(trials, rate)."""
    from shufflesim.core.checks import check_probability
    from shufflesim.errors import ParameterError

    q = cfg.k / cfg.d if cfg.protocol != "ss-simple" else 1.0
    if participation is not None and clients_per_round is not None:
        raise ParameterError("give participation (a Poisson rate) or clients_per_round (m of the population), not both")
    pop = cfg.n if population is None else check_int("population", population, minimum=1)
    if participation is not None:
        p = check_probability("participation", participation, allow_zero=False)
        return p, pop - 1, p * q
    if clients_per_round is not None:
        m = check_int("clients_per_round", clients_per_round, minimum=1, maximum=pop)
        return m / pop, m, q  # at most m other participants, each in a coordinate with probability k/d
    return 1.0, cfg.n - 1, q


def ss_double_upper(cfg, rounds: int, delta: float, *, others: tuple[int, float] | None = None,
                    union_rounds: int | None = None) -> tuple[float, dict]:
    """Certified upper end on the eps of ``rounds`` rounds of SS-Double that credits the k-of-d coordinate
    sampling (docs/theory.md#flame-double): a uniformly random partition of the d coordinates into k blocks of
    ⌊d/k⌋ or ⌈d/k⌉, the target's k coordinates one uniform coordinate per block (the same law as k of d
    without replacement); given the partition each block is dominated by the stronger clone pair among
    ⌊d/k⌋·W* messages, W* = n_p − N_max, where N_max bounds every coordinate's count of other users' reports
    that are not ω-draws (:func:`omega_share`) except with probability ``bad`` (union over ``union_rounds``
    rounds and d coordinates; the reports are dominated by Bin(trials, rate) = ``others``, default
    Bin(n − 1, k/d), of which a share 1 − g is not an ω-draw) or some coordinate overflows
    (:func:`overflow_bound`).  The round is a k-fold composition, the run k·rounds-fold, at
    δ − bad.  Needs a padding law that is a "centre" (:func:`dummy_is_centre`) and ⌊d/k⌋ ≥ 2.
    Returns (eps, details)."""
    from shufflesim.accounting.numerics.binomial import chernoff_window_scalar
    from shufflesim.accounting.numerics.logspace import exp_up
    from shufflesim.errors import NotApplicableError

    if cfg.protocol != "ss-double":
        raise NotApplicableError(f"coordinate-sampling credit applies to ss-double only; got {cfg.protocol}")
    if not dummy_is_centre(cfg):
        raise NotApplicableError(f"the padding law of {cfg.randomiser} with b={cfg.b} at eps={cfg.eps_coord:g} is "
                                 "not a centre (needs e^eps >= b): no coordinate-sampling credit")
    m = cfg.d // cfg.k
    if m < 2:
        raise NotApplicableError(f"k={cfg.k} of d={cfg.d}: blocks of one coordinate, no coordinate-sampling credit")
    trials, rate = others if others is not None else (cfg.n - 1, cfg.k / cfg.d)
    union = rounds if union_rounds is None else union_rounds
    log_events = math.log(cfg.d) + math.log(max(1, union))
    # the pool argument needs every coordinate free of overflow (at most n_p − 1 other reports): charged too
    bad = overflow_bound(trials, rate, cfg.n_p, log_events)
    rate = math.nextafter(rate * (1.0 - omega_share(cfg)), 1.0)  # the other reports that are not ω-draws
    log_budget = math.log(delta * SAMPLING_BAD_SHARE) - log_events
    if trials >= 1 and rate > 0.0:
        _, n_max, log_tail = chernoff_window_scalar(trials, rate, log_budget)
        # 1e-12 in the exponent covers the rounding of the logs added (exp_up covers exp's own)
        bad += exp_up(log_tail + log_events + 1e-12) if log_tail > -math.inf else 0.0
    else:
        n_max = 0
    if bad >= delta:
        raise NotApplicableError(f"the bad events (overflow, more than N_max reports) have probability {bad:.3g}, "
                                 "at least delta")
    slots = cfg.n_p - int(n_max)
    if slots < 1:
        raise NotApplicableError(f"n_p={cfg.n_p} leaves no ω slot above N_max={n_max} other reports per coordinate")
    messages = m * slots
    steps = cfg.k * rounds
    rest = math.nextafter(delta - bad, 0.0)
    eps = 0.0 if steps == 0 else _clones_composed(messages, cfg.eps_coord, steps, rest)
    return eps, {"block": m, "n_max": int(n_max), "slots": slots, "messages": messages, "steps": steps, "bad": bad}


def overflow_bound(trials: int, rate: float, n_p: int, log_events: float) -> float:
    """An upper bound on the probability that in one of e^log_events (coordinate, round) cells at least n_p other
    users report (Bin(trials, rate) ≥ n_p; the Chernoff bound exp(−trials·KL(n_p/trials ‖ rate)), union over the
    cells; 1 where n_p is not above the mean, 0 where n_p > trials).  Rounded up (a relative 1e-9 off the
    exponent and 1e-12 on the logs)."""
    from shufflesim.accounting.numerics.binomial import binom_log_kl_scalar
    from shufflesim.accounting.numerics.logspace import exp_up

    if n_p > trials or rate <= 0.0:
        return 0.0
    if n_p <= trials * rate:
        return 1.0
    kl = binom_log_kl_scalar(n_p, trials, rate)
    return min(1.0, exp_up(log_events - kl * (1.0 - 1e-9) + 1e-12))


def _high_probability(cfg) -> float:
    """P(the report of input 0 lands above the midpoint) for the lower end's statistic; the midpoint splits ω
    (and R(1/2)) in halves.  Laplace: ½e^{−ε0/2}; binary R_{γ,1}: 1/(e^ε0 + 1)."""
    from shufflesim.errors import NotApplicableError

    if cfg.randomiser == "laplace":
        return 0.5 * math.exp(-cfg.eps_coord / 2.0)
    if cfg.b == 1:
        return 1.0 / (math.exp(cfg.eps_coord) + 1.0)
    raise NotApplicableError(f"the SS-Double lower end is derived for laplace and rr with b=1; got rr with b={cfg.b}")


def ss_double_lower(cfg, rounds: int, delta: float) -> tuple[float, dict]:
    """Certified lower end on the eps of ``rounds`` rounds of SS-Double from explicit data sets
    (docs/theory.md#flame-double): every other user's rescaled update is 1/2 in every coordinate (update 0);
    the target's is 0 in every coordinate (update −C) vs 1 (update +C).  Statistic: H, the number of messages
    above 1/2 over all coordinates and rounds.  Whatever the sampling pattern (any k-subset for each user),
    every message except the target's k reports per round is above 1/2 with probability 1/2 (dummies and the
    others' reports are ω = R(1/2)), so H = Bin(N − K, ½) + Bin(K, p0) vs Bin(N − K, ½) + Bin(K, 1 − p0),
    N = rounds·d·n_p, K = rounds·k, unless some coordinate overflows (probability ≤ rounds·d·P(Bin(n−1, k/d) ≥
    n_p), charged as (1 + e^ε)·that).  δ of the pair is summed over the outcomes whose convolution is complete,
    each probability lowered by LOWER_REL_ERR; the returned eps has δ_lower(eps) > ``delta``.  Rounds beyond
    what LOWER_MAX_CELLS allows are ignored (post-processing).  Returns (eps_lower, details)."""
    import numpy as np

    from shufflesim.accounting.numerics.binomial import log_binom_pmf
    from shufflesim.accounting.numerics.logspace import exp_up

    p0 = _high_probability(cfg)
    per_round = cfg.d * cfg.n_p
    used = rounds
    while used > 1 and 20.0 * math.sqrt(used * per_round) / 2.0 * (used * cfg.k + 1) > LOWER_MAX_CELLS:
        used //= 2
    K = used * cfg.k
    neutral = used * per_round - K
    sd = math.sqrt(neutral) / 2.0
    lo = max(0, math.floor(neutral / 2.0 - 10.0 * sd))
    hi = min(neutral, math.ceil(neutral / 2.0 + 10.0 * sd))
    base = np.exp(log_binom_pmf(np.arange(lo, hi + 1), neutral, 0.5))
    t0 = np.exp(log_binom_pmf(np.arange(K + 1), K, p0, 1.0 - p0))
    P = np.convolve(base, t0)[K:base.size]  # the outcomes h = lo + K … hi, each with its full sum
    Q = np.convolve(base, t0[::-1])[K:base.size]
    p_over = overflow_bound(cfg.n - 1, cfg.k / cfg.d, cfg.n_p, math.log(used * cfg.d))
    r = LOWER_REL_ERR
    P_lo, Q_hi = P * (1.0 - r), Q * (1.0 + r)

    def delta_lower(eps: float) -> float:
        e = exp_up(eps)
        return (1.0 - r) * math.fsum(np.maximum(P_lo - e * Q_hi, 0.0)) - (1.0 + e) * p_over

    if not delta_lower(0.0) > delta:
        return 0.0, {"rounds_used": used, "p0": p0, "p_over": p_over}
    from shufflesim.accounting.numerics.invert import bisect_decreasing

    b = 1.0
    while delta_lower(b) > delta:
        b *= 2.0
    # delta_lower is a lower bound on δ: the bisection's "a" (δ above the target there) is a safe lower end on ε
    _, a, _ = bisect_decreasing(delta_lower, delta, lo=0.0, hi=b, rtol=1e-12, atol=0.0)
    return a, {"rounds_used": used, "p0": p0, "p_over": p_over, "delta_at": delta_lower(a)}


#: the data sets and statistic of :func:`ss_double_lower`, for reports
LOWER_WHAT = ("explicit data sets: the other users' updates all 0 (1/2 after rescaling), the target's −C vs +C "
              "in every coordinate; statistic: the count of messages above 1/2 over all coordinates and rounds "
              "(its law is the same for every sampling pattern)")


#: the largest k whose (k + 1)² trinomial table :func:`count_difference_tail` builds
LINKED_MAX_K = 3000


def linked_message_count(cfg) -> int:
    """The number of vector messages of Algorithms 2–3 as printed (seed 002): every user sends one message
    ⟨idx, Enc(y)⟩ carrying its k values, the shuffler groups the d·n_p − n·k dummies into ⌊(d·n_p − n·k)/k⌋
    vectors of k values (a shorter remainder vector, if any, is told apart by its length and ignored:
    post-processing), so n + ⌊(d·n_p − n·k)/k⌋ messages of k values (16,650 at the paper's setting)."""
    from shufflesim.errors import NotApplicableError

    pad = cfg.d * cfg.n_p - cfg.n * cfg.k
    if pad < 0:
        raise NotApplicableError(f"d·n_p = {cfg.d * cfg.n_p} is below n·k = {cfg.n * cfg.k}: no padding to group")
    return cfg.n + pad // cfg.k


def _category_laws(cfg) -> dict:
    """(P(y ≤ 0), P(0 < y < 1/2), P(y ≥ 1/2)) of one reported value under ω (the other messages) and under the
    target's R(0), R(1).  Laplace with scale 1/ε0 (ω = R(1/2)): g = ½e^{−ε0/2}, h = ½e^{−ε0}; binary R_{γ,1}
    (ω uniform): 1/(e^ε0 + 1) and e^ε0/(e^ε0 + 1), nothing in between."""
    from shufflesim.errors import NotApplicableError

    e0 = cfg.eps_coord
    if cfg.randomiser == "laplace":
        g, h = 0.5 * math.exp(-e0 / 2.0), 0.5 * math.exp(-e0)
        return {"omega": (g, 0.5 - g, 0.5), "zero": (0.5, 0.5 - g, g), "one": (h, g - h, 1.0 - g)}
    if cfg.b == 1:
        lo = 1.0 / (math.exp(e0) + 1.0)
        return {"omega": (0.5, 0.0, 0.5), "zero": (1.0 - lo, 0.0, lo), "one": (lo, 0.0, 1.0 - lo)}
    raise NotApplicableError(f"the linked SS-Double lower end is derived for laplace and rr with b=1; got rr with b={cfg.b}")


def count_difference_tail(k: int, probs: tuple[float, float, float]):
    """The law of s = #lo − #hi over k i.i.d. values falling lo / mid / hi with ``probs``: returns the upper
    tail S(t) = P(s ≥ t) for t = −k … k (index t + k), each term the trinomial k!/(a!b!c!)·lo^a·mid^c·hi^b
    evaluated in log space (lgamma, abs error below 1e-10 in each exponent at k ≤ LINKED_MAX_K) and summed from the
    top so no tail is a difference; accurate to a relative LOWER_REL_ERR with a wide margin."""
    import numpy as np

    from shufflesim.errors import NotApplicableError

    if k > LINKED_MAX_K:
        raise NotApplicableError(f"k={k} coordinates per message: the trinomial law is computed for k <= {LINKED_MAX_K}")
    lp = [math.log(p) if p > 0.0 else -math.inf for p in probs]
    a = np.arange(k + 1)[:, None]
    b = np.arange(k + 1)[None, :]
    c = k - a - b
    ok = c >= 0
    cc = np.where(ok, c, 0)
    lf = np.vectorize(math.lgamma)
    logc = math.lgamma(k + 1) - lf(a + 1) - lf(b + 1) - lf(cc + 1)

    def term(n, lpx):  # n·log p with 0·log 0 = 0
        return np.where(n > 0, n * lpx if lpx > -math.inf else -np.inf, 0.0)

    logt = np.where(ok, logc + term(a, lp[0]) + term(b, lp[2]) + term(cc, lp[1]), -np.inf)
    pmf = np.zeros(2 * k + 1)
    np.add.at(pmf, np.broadcast_to(a - b + k, logt.shape).ravel(), np.exp(logt).ravel())
    return np.cumsum(pmf[::-1])[::-1]


def ss_double_linked_lower(cfg, delta: float, *, eps: float | None = None) -> tuple[float, dict]:
    """Certified lower end on the eps of one epoch of SS-Double **as Algorithms 2–3 print it** (seed 002): one
    message per user carrying all k values (linked), dummies grouped into vectors of k values
    (:func:`linked_message_count` messages; docs/theory.md#flame-double-linked).  Data sets: every other user's
    rescaled update 1/2 in every coordinate, the target's 0 vs 1.  Post-processing drops the indices (the
    sampling is data-independent), so the view is, unless some coordinate overflows, N − 1 vectors of k i.i.d.
    ω-values and the target's vector of k values R(0) vs R(1).  Statistic T = max over messages of
    s = #{y ≤ 0} − #{y ≥ 1/2} (:func:`count_difference_tail`, an exact trinomial law per message; messages
    independent, so P(T ≥ t) = 1 − (1 − S_ω(t))^{N−1}(1 − S_x(t))).  Events {T ≥ t} for every t: δ(ε) ≥
    P_0 − e^ε P_1 − (1 + e^ε)·p_over, tails moved by the relative LOWER_REL_ERR (down for R(0), up for R(1))
    and again after the log1p/expm1 product, e^ε rounded up; the overflow probability p_over as in
    :func:`ss_double_lower`.  More rounds only add post-processable information, so one epoch's value is a
    lower end for any number of rounds.  Returns (eps_lower, details) with details["delta_at"] the certified
    δ lower end at ``eps`` (when given) and the best threshold."""
    import numpy as np

    from shufflesim.accounting.numerics.logspace import exp_up

    laws = _category_laws(cfg)
    N = linked_message_count(cfg)
    r = LOWER_REL_ERR
    S = {name: count_difference_tail(cfg.k, p) for name, p in laws.items()}
    s_om, s0, s1 = S["omega"], S["zero"], S["one"]
    with np.errstate(divide="ignore"):
        l0 = (N - 1) * np.log1p(-np.minimum(s_om * (1.0 - r), 1.0)) + np.log1p(-np.minimum(s0 * (1.0 - r), 1.0))
        l1 = (N - 1) * np.log1p(-np.minimum(s_om * (1.0 + r), 1.0)) + np.log1p(-np.minimum(s1 * (1.0 + r), 1.0))
    P0 = -np.expm1(l0) * (1.0 - r)  # P_0(T ≥ t), rounded down
    P1 = np.minimum(-np.expm1(l1) * (1.0 + r), 1.0)  # P_1(T ≥ t), rounded up
    p_over = overflow_bound(cfg.n - 1, cfg.k / cfg.d, cfg.n_p, math.log(cfg.d))
    num = P0 - p_over - delta - 4e-16 * (P0 + p_over + delta)  # the two subtractions' rounding, downwards
    den = P1 + p_over
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.where((num > 0) & (den > 0), np.log(num / den) - 1e-12, -np.inf)
    i = int(np.argmax(cand))
    best = max(0.0, float(cand[i]))
    info = {"messages": N, "threshold": i - cfg.k, "p_over": p_over,
            "P0": float(P0[i]), "P1": float(P1[i])}
    if eps is not None:
        e = exp_up(eps)
        diff = P0 - e * P1 - 4e-16 * (P0 + e * P1)
        info["delta_at"] = max(0.0, float(np.max(diff)) - (1.0 + e) * p_over * (1.0 + 1e-15))
    return best, info


def sampled_privacy(cfg, rounds: int, delta: float, *, participation: float | None = None,
                    clients_per_round: int | None = None, population: int | None = None,
                    lower: bool = True) -> FlamePrivacy:
    """Central (eps, delta) of ``rounds`` rounds of a FLAME protocol with who-takes-part accounted
    (docs/theory.md#flame-double):

    * client sampling per round: a Poisson rate ``participation`` of ``population`` users (default cfg.n), or
      ``clients_per_round`` = m of them without replacement; either way the target takes part in a round with
      probability p (p = m/population), independently across rounds.  The upper ends reveal which rounds the
      target takes part in (post-processing of a richer view): their number J ~ Bin(rounds, p) is at most j*
      except with probability ≤ SAMPLING_BAD_SHARE·δ (Chernoff), and the composition runs over j* rounds;
    * SS-Double's k-of-d coordinate sampling (``clones-coordinate-sampling``, :func:`ss_double_upper`);
    * the unsampled methods of :func:`flame_privacy` (``clones``, ``ldp``) over j* rounds.

    ``eps`` is the smallest upper end; ``eps_lower`` (SS-Double with every client in every round, Laplace or
    binary R_{γ,1}) is :func:`ss_double_lower`'s certified lower end.  The per-coordinate message count of
    SS-Simple is the number of participants, taken at its Chernoff lower bound under Poisson sampling.
    All of this is for shufflesim's one-message-per-coordinate protocol (docs/theory.md#flame-protocols); the
    linked messages of Algorithms 2–3 as printed: :func:`ss_double_linked_lower`.  A lower end above the upper
    end raises RuntimeError (an internal inconsistency, never a result)."""
    from shufflesim.accounting.numerics.binomial import chernoff_window_scalar
    from shufflesim.accounting.numerics.logspace import exp_up
    from shufflesim.core.checks import check_real

    rounds = check_int("rounds", rounds, minimum=1)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    p, trials, rate = _others_per_coordinate(cfg, participation, clients_per_round, population)
    budget = delta * SAMPLING_BAD_SHARE
    bad = 0.0
    j_star = rounds
    if p < 1.0:
        _, j_star, lt = chernoff_window_scalar(rounds, p, math.log(budget))
        bad += exp_up(lt + 1e-12) if lt > -math.inf else 0.0
    n_msgs = cfg.n_p
    if cfg.protocol == "ss-simple" and p < 1.0:
        if clients_per_round is not None:
            n_msgs = clients_per_round
        elif j_star > 0:  # 1 + Bin(population − 1, p) participants in each of the (at most j*) rounds the target
            # takes part in: the lower Chernoff end must hold in every one of them, so its tail is charged j* times
            # (a union bound over those rounds), with the budget split among them.  j* = 0: the target takes part
            # in no round (but with the probability charged above), there is no participant window and T = 0
            low, _, lt = chernoff_window_scalar(trials, p, math.log(budget / j_star))
            n_msgs, bad = 1 + int(low), bad + j_star * (exp_up(lt + 1e-12) if lt > -math.inf else 0.0)
    rest = math.nextafter(delta - bad, 0.0)
    T = {"ss-simple": cfg.d, "ss-double": cfg.k, "ss-topk": 2 * cfg.k}[cfg.protocol] * j_star
    vals: dict[str, float] = {}
    vals["ldp"] = 0.0 if T == 0 else _safe(lambda: _pure_composed(cfg.eps_coord, T, rest))
    vals["clones"] = 0.0 if T == 0 else _safe(lambda: _clones_composed(n_msgs, cfg.eps_coord, T, rest))
    if cfg.protocol == "ss-double":
        vals["clones-coordinate-sampling"] = _safe(
            lambda: ss_double_upper(cfg, j_star, rest, others=(trials, rate), union_rounds=rounds)[0])
    for key in ("clones", "clones-coordinate-sampling"):
        if key in vals and vals[key] > vals["ldp"]:
            vals[key] = vals["ldp"]
    best = min(vals, key=vals.get)
    eps_lower, what = None, ""
    if lower and cfg.protocol == "ss-double" and p == 1.0:
        from shufflesim.errors import NotApplicableError

        try:
            eps_lower, info = ss_double_lower(cfg, rounds, delta)
            used = info["rounds_used"]
            what = LOWER_WHAT + (f"; first {used} of {rounds} rounds" if used < rounds else "")
        except NotApplicableError:  # a randomiser the lower end is not derived for: no lower end
            eps_lower = None
        if eps_lower is not None and eps_lower > vals["clones-coordinate-sampling"]:
            # both ends are certified for the same protocol: a lower end above an upper end is a bug, never a result
            raise RuntimeError(f"internal inconsistency: certified lower end {eps_lower!r} above the certified upper "
                               f"end {vals['clones-coordinate-sampling']!r} for {cfg}")
    return FlamePrivacy(vals[best], delta, best, vals, eps_lower, what)
