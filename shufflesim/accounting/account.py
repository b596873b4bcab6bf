"""One entry point for every privacy question the CLI can ask: mechanism × method × composition.

:func:`account` takes a mechanism name (``rr2``, ``krr``, ``clones``, ``biswas``), its parameters, a
method and the eps (or delta) values, and returns an :class:`AccountReport` with one certified result per
value (:class:`~.results.DeltaBound` / :class:`~.results.EpsBound`) or a :class:`~.results.NotApplicable`
with the reason.  Methods:

* ``tight`` — the PLD accountant (:mod:`.tight`) on the mechanism's neighbouring pair (:mod:`.pairs`):
  rr2 (seed 001 §4), krr with an adversary (strong-1d / strong / weak), clones (seed 001 §6),
  biswas = the released count of x0 (seed 003's setting).  ``compositions`` uses FFT composition.
  krr strong/weak and clones are accounted in row form (exact single use in O(rows) per eps; their
  atoms streamed onto the FFT grid for composition), which keeps n = 1e6 within seconds and 2 GB.
* ``exact`` — brute-force enumeration of every user's coin and report (:mod:`.bruteforce`), for small n;
  refuses larger sizes with the limit.  For ``biswas`` it is the exact δ of the released count of x0
  computed directly (any n) — the quantity seed 003's derivation analyses.
* ``exact-histogram`` (biswas only) — the full released histogram by enumeration (small n, k).
* ``balle``, ``bennett``, ``hoeffding`` (k-RR / rr2), ``erlingsson``, ``feldman``, ``feldman-numerical``
  (any ε0-LDP randomiser: rr2, krr, clones), ``biswas`` (seed 003 eq 6, as published) — the published
  bounds of :mod:`.bounds`; with ``compositions > 1`` they are composed with the basic or advanced
  theorem (``composition``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import AccuracyError, NotApplicableError, ParameterError
from shufflesim.accounting import bounds as B
from shufflesim.accounting import bruteforce as BF
from shufflesim.accounting.pairs import (DEFAULT_TAIL_BOUND_MD, biswas_count_pair, clones_pair, krr_pair,
                    rr2_pair)
from shufflesim.accounting.results import DeltaBound, EpsBound, NotApplicable
from shufflesim.accounting.tight import tight_delta, tight_epsilon

MECHANISMS = ("rr2", "krr", "clones", "biswas")
ADVERSARIES = ("strong-1d", "strong", "weak")

METHODS: dict[str, tuple[str, ...]] = {
    "rr2": ("tight", "exact", "balle", "bennett", "hoeffding", "erlingsson", "feldman", "feldman-numerical"),
    "krr": ("tight", "exact", "balle", "bennett", "hoeffding", "erlingsson", "feldman", "feldman-numerical"),
    "clones": ("tight", "exact", "erlingsson", "feldman", "feldman-numerical"),
    "biswas": ("biswas", "exact", "exact-histogram", "tight"),
}
#: largest n and number of compositions the pair-based methods accept (beyond: hours and terabytes)
MAX_N_PAIRS = 10**9
MAX_COMPOSITIONS = 10**6
ANALYTIC = ("balle", "bennett", "hoeffding", "erlingsson", "feldman", "feldman-numerical", "biswas")


@dataclass(frozen=True)
class AccountReport:
    """The answer to one ``account`` question."""

    mechanism: str
    params: dict
    method: str
    compositions: int
    results: tuple
    notes: tuple[str, ...]
    seconds: float
    composition: str | None = None

    def to_dict(self) -> dict:
        d = {
            "mechanism": self.mechanism,
            "params": self.params,
            "method": self.method,
            "compositions": self.compositions,
            "results": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
            "seconds": self.seconds,
        }
        if self.composition is not None:
            d["composition"] = self.composition
        return d


def resolve_params(mechanism: str, **p: Any) -> dict:
    """Validate and complete a mechanism's parameters (γ ↔ ε0 for k-RR)."""
    from shufflesim.protocols.krr import resolve_krr_params

    if mechanism not in MECHANISMS:
        raise ParameterError(f"unknown mechanism {mechanism!r}; allowed: {', '.join(MECHANISMS)}")
    n = check_int("n", p.get("n"), minimum=1) if p.get("n") is not None else None
    if n is None:
        raise ParameterError(f"{mechanism} needs the number of users n >= 1")
    if mechanism in ("rr2", "clones"):
        if p.get("eps0") is None:
            raise ParameterError(f"{mechanism} needs eps0 > 0")
        out = {"n": n, "eps0": check_positive("eps0", p["eps0"])}
        if mechanism == "rr2":
            _, gamma, _ = resolve_krr_params(2, eps0=out["eps0"])
            out["gamma"] = gamma
        return out
    if mechanism == "krr":
        if p.get("k") is None:
            raise ParameterError("krr needs the number of categories k >= 2")
        k, gamma, eps0 = resolve_krr_params(p["k"], p.get("gamma"), p.get("eps0"))
        out = {"n": n, "k": k, "gamma": gamma, "eps0": eps0}
        adv = p.get("adversary")
        if adv is not None:
            if adv not in ADVERSARIES:
                raise ParameterError(f"adversary must be one of {', '.join(ADVERSARIES)}; got {adv!r}")
            out["adversary"] = adv
        return out
    # biswas
    for name in ("k", "eps0", "n_x0"):
        if p.get(name) is None:
            raise ParameterError("biswas needs k >= 2, eps0 > 0 and n_x0 (0 <= n_x0 <= n-1)")
    k = check_int("k", p["k"], minimum=2)
    eps0 = check_positive("eps0", p["eps0"])
    n_x0 = check_int("n_x0", p["n_x0"], minimum=0, maximum=n - 1)
    return {"n": n, "k": k, "eps0": eps0, "n_x0": n_x0}


def _pair(mechanism: str, prm: dict, method: str, tail_bound: float | None = None):
    """The pair a pair-based method accounts (``tail_bound``: truncation mass, None = the pair's default).

    For ``tight``, the 2-D/3-D pairs (krr strong and weak, clones) are built in row form
    (:class:`~.pairs.BinomialRows`): the accountant then evaluates single use exactly in O(rows) per eps
    and streams the atoms onto its grid for composition, without materialising 1e7-1e8 atoms."""
    tb = {} if tail_bound is None else {"tail_bound": tail_bound}
    if method == "tight" or (method == "exact" and mechanism == "biswas"):
        if mechanism == "rr2":
            return rr2_pair(prm["n"], prm["eps0"], **tb)
        if mechanism == "krr":
            if "adversary" not in prm:
                raise ParameterError("krr with --method tight needs --adversary strong-1d|strong|weak")
            return krr_pair(prm["n"], prm["k"], prm["gamma"], prm["adversary"], as_rows=True, **tb)
        if mechanism == "clones":
            tb.setdefault("tail_bound", DEFAULT_TAIL_BOUND_MD)
            return clones_pair(prm["n"], prm["eps0"], as_rows=True, **tb)
        return biswas_count_pair(prm["n"], prm["k"], prm["eps0"], prm["n_x0"], **tb)
    if method == "exact":
        if mechanism == "rr2":
            return BF.rr2_bruteforce(prm["n"], prm["eps0"])
        if mechanism == "krr":
            adv = prm.get("adversary")
            if adv not in ("strong", "weak"):
                raise NotApplicableError(
                    "exact enumeration needs --adversary strong or weak (strong-1d is a stated pair, not a view)")
            return BF.krr_bruteforce(prm["n"], prm["k"], prm["gamma"], adv)
        return BF.clones_bruteforce(prm["n"], prm["eps0"])
    if method == "exact-histogram":
        return BF.biswas_histogram_exact(prm["n"], prm["k"], prm["eps0"], prm["n_x0"])
    raise AssertionError(method)


def _analytic(mechanism: str, prm: dict, method: str, bennett_variant: str):
    """(per-value delta function, per-value eps function) of a published bound."""
    n = prm["n"]
    if method in ("balle", "bennett", "hoeffding"):
        k = prm.get("k", 2)
        gamma = prm["gamma"]
        if method == "balle":
            return (lambda e: B.balle_delta(e, n=n, k=k, gamma=gamma),
                    lambda d: B.balle_eps(d, n=n, k=k, gamma=gamma))
        r = B.KRRBlanket(k, gamma)
        if method == "bennett":
            return (lambda e: B.bennett_delta(e, n=n, randomiser=r, variant=bennett_variant),
                    lambda d: B.bennett_eps(d, n=n, randomiser=r, variant=bennett_variant))
        return (lambda e: B.hoeffding_delta(e, n=n, randomiser=r), lambda d: B.hoeffding_eps(d, n=n, randomiser=r))
    eps0 = prm["eps0"]
    if method == "erlingsson":
        return (lambda e: B.erlingsson_delta(e, n=n, eps0=eps0), lambda d: B.erlingsson_eps(d, n=n, eps0=eps0))
    if method == "feldman":
        return (lambda e: B.feldman_delta(e, n=n, eps0=eps0), lambda d: B.feldman_eps(d, n=n, eps0=eps0))
    if method == "feldman-numerical":
        return (lambda e: B.feldman_numerical_delta(e, n=n, eps0=eps0),
                lambda d: B.feldman_numerical_eps(d, n=n, eps0=eps0))
    if method == "biswas":
        kw = dict(n=n, k=prm["k"], eps0=eps0, n_x0=prm["n_x0"])
        return (lambda e: B.biswas_delta(e, **kw), lambda d: B.biswas_eps(d, **kw))
    raise AssertionError(method)


def _values(name: str, values, low_open: bool) -> list[float]:
    if isinstance(values, (int, float)):
        values = [values]
    out = []
    for v in values:
        if name == "delta":
            out.append(check_real("delta", v, low=0.0, high=1.0, low_open=True, high_open=True))
        else:
            out.append(check_real("eps", v, low=0.0))
    return out


def account(
    mechanism: str,
    params: dict,
    *,
    eps: Sequence[float] | float | None = None,
    delta: Sequence[float] | float | None = None,
    method: str = "tight",
    compositions: int = 1,
    composition: str = "basic",
    bennett_variant: str = "fixed",
    numerics: dict | None = None,
) -> AccountReport:
    """Answer δ(ε) for every ``eps`` or ε(δ) for every ``delta`` (exactly one of the two)."""
    t0 = time.perf_counter()
    prm = resolve_params(mechanism, **params)
    if method not in METHODS[mechanism]:
        raise ParameterError(f"method {method!r} does not apply to {mechanism}; allowed: {', '.join(METHODS[mechanism])}")
    compositions = check_int("compositions", compositions, minimum=1)
    if method not in ANALYTIC:
        if prm["n"] > MAX_N_PAIRS:
            raise ParameterError(f"n must be <= {MAX_N_PAIRS:.0e} for method {method!r} (pair-based); got n={prm['n']}")
        if compositions > MAX_COMPOSITIONS:
            raise ParameterError(f"compositions must be <= {MAX_COMPOSITIONS:.0e} for method {method!r}; got {compositions}")
    if (eps is None) == (delta is None):
        raise ParameterError("give either eps values (to get delta) or delta values (to get eps), not both")
    if composition not in ("basic", "advanced", "best"):
        raise ParameterError(f"composition must be basic, advanced or best; got {composition!r}")
    if bennett_variant not in ("fixed", "original-2019"):
        raise ParameterError(f"bennett variant must be 'fixed' or 'original-2019'; got {bennett_variant!r}")
    eps_l = _values("eps", eps, False) if eps is not None else None
    delta_l = _values("delta", delta, True) if delta is not None else None
    notes: list[str] = []
    comp_used = None
    if method in ANALYTIC:
        dfun, efun = _analytic(mechanism, prm, method, bennett_variant)
        if compositions > 1:
            comp_used = composition
            results = ([B.compose_delta(dfun, e, compositions, composition=composition) for e in eps_l]
                       if eps_l is not None else
                       [B.compose_eps(efun, d, compositions, composition=composition) for d in delta_l])
        else:
            results = [dfun(e) for e in eps_l] if eps_l is not None else [efun(d) for d in delta_l]
        if method == "bennett":
            prm = dict(prm, bennett_variant=bennett_variant)
    else:
        kw = dict(numerics or {})
        # truncated pairs: start from a tail far below the requested deltas (1e-7 of the smallest, per use)
        tb = None if delta_l is None else min(1e-15, 1e-7 * min(delta_l) / compositions)
        pair = _pair(mechanism, prm, method, tail_bound=max(tb, 1e-300) if tb is not None else None)
        try:
            results = _tight(pair, eps_l, delta_l, compositions, kw)
        except AccuracyError:
            if not (pair.tail_p or pair.tail_q):
                raise
            pair = _pair(mechanism, prm, method, tail_bound=max(1e-300, max(pair.tail_p, pair.tail_q) * 1e-30))
            results = _tight(pair, eps_l, delta_l, compositions, kw)
        # a truncated pair whose dropped mass dominates an answer is rebuilt with a smaller tail
        for _ in range(3):
            tail = max(pair.tail_p, pair.tail_q)
            if tail == 0.0 or not _tail_dominated(results, tail, compositions):
                break
            pair = _pair(mechanism, prm, method, tail_bound=max(1e-300, _needed_tail(results, delta_l, tail)))
            results = _tight(pair, eps_l, delta_l, compositions, kw)
        if method != "tight":
            results = [_rename(r, method) for r in results]
        notes.append(f"pair: {pair.name} ({pair.reference})" if pair.reference else f"pair: {pair.name}")
        if pair.tail_p or pair.tail_q:
            notes.append(f"truncated tails (mass <= {max(pair.tail_p, pair.tail_q):.3g}) added to the upper bounds")
    for r in results:
        for nt in r.notes:
            if nt not in notes:
                notes.append(nt)
    return AccountReport(mechanism, prm, method, compositions, tuple(results), tuple(notes),
                         time.perf_counter() - t0, comp_used)


def _tight(pair, eps_l, delta_l, compositions, kw):
    return (tight_delta(pair, eps_l, compositions=compositions, **kw) if eps_l is not None
            else tight_epsilon(pair, delta_l, compositions=compositions, **kw))


def _tail_dominated(results, tail: float, compositions: int) -> bool:
    """True when the truncated mass makes up more than 1% of some delta_upper (widening the interval)."""
    for r in results:
        if isinstance(r, DeltaBound) and r.delta_upper < 1.0 and compositions * tail > 0.01 * r.delta_upper:
            return True
        if isinstance(r, EpsBound) and compositions * tail > 0.01 * r.delta:
            return True
    return False


def _needed_tail(results, delta_l, tail: float) -> float:
    """A tail bound small enough for the answers seen so far (1e-6 of the smallest positive delta)."""
    vals = [r.delta for r in results if isinstance(r, EpsBound)]
    vals += [r.delta_lower for r in results if isinstance(r, DeltaBound) and r.delta_lower]
    smallest = min(vals) if vals else 0.0
    zero = any(isinstance(r, DeltaBound) and not r.delta_lower for r in results)
    cand = smallest * 1e-6 if smallest > 0 else tail * 1e-60
    return min(cand, tail * 1e-30) if zero else cand


def _rename(r, method: str):
    from dataclasses import replace

    return replace(r, method=method)


@dataclass(frozen=True)
class Calibrated:
    """A calibrated parameter, the certified δ it achieves (≤ the target) and how it was found."""

    name: str
    value: float
    delta_upper: float
    target_eps: float
    target_delta: float
    method: str
    evaluations: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _delta_upper(rep: AccountReport) -> float:
    (r,) = rep.results
    if not getattr(r, "applicable", True):
        return math.inf
    return r.delta_upper


def calibrate_krr_gamma(n: int, k: int, eps: float, delta: float, *, adversary: str = "strong",
                        compositions: int = 1, method: str = "tight", rtol: float = 1e-6,
                        numerics: dict | None = None) -> Calibrated:
    """Smallest blanket probability γ for which shuffled k-RR with n users is (ε, δ)-DP.

    δ_upper(γ) is certified by ``method`` on the ``adversary`` pair (or a published bound) after
    ``compositions`` uses; the search (:func:`.calibrate.calibrate`) returns a γ at which the certified
    δ was *evaluated* to be ≤ δ, so it never overshoots.  Raises InfeasibleError if even γ = 1 fails.
    """
    from shufflesim.accounting.calibrate import calibrate

    check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)

    def fn(g: float) -> float:
        return _delta_upper(account("krr", {"n": n, "k": k, "gamma": g, "adversary": adversary}, eps=[eps],
                                    method=method, compositions=compositions, numerics=numerics))

    c = calibrate(fn, delta, 1e-12, 1.0, increasing=False, xtol=0.0, rtol=rtol, log_scale=True)
    return Calibrated("gamma", c.x, c.value, eps, delta, method, c.evaluations)


def calibrate_clones_eps0(n: int, eps: float, delta: float, *, compositions: int = 1, eps0_max: float = 30.0,
                          rtol: float = 1e-6, numerics: dict | None = None) -> Calibrated:
    """Largest ε0 for which any ε0-LDP randomiser shuffled among n users is (ε, δ)-DP (clones pair)."""
    from shufflesim.accounting.calibrate import calibrate

    check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)

    def fn(e0: float) -> float:
        return _delta_upper(account("clones", {"n": n, "eps0": e0}, eps=[eps], compositions=compositions,
                                    numerics=numerics))

    c = calibrate(fn, delta, 1e-6, eps0_max, increasing=True, xtol=0.0, rtol=rtol, log_scale=True)
    return Calibrated("eps0", c.x, c.value, eps, delta, "tight", c.evaluations)
