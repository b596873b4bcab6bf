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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shufflesim.accounting.bounds import bennett_eps, best_composition, subsample
from shufflesim.accounting.bounds.balle import KRRBlanket, LaplaceBlanket

__all__ = ["theorem1", "lemma1", "theorem3", "theorem4", "figure3_ratios", "corollary2_condition", "corollary3_condition",
           "paper_pipeline", "blanket_of", "flame_privacy", "FLAME_PUBLISHED", "PAPER_SETTING"]

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

    def as_dict(self) -> dict:
        fin = lambda v: v if v is not None and math.isfinite(v) else None  # noqa: E731  (JSON: null, not inf)
        return {"eps": fin(self.eps), "delta": self.delta, "method": self.method,
                "values": {k: fin(v) for k, v in self.values.items()}}


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
