"""The checks behind the claims registry (scenarios/claims/*.toml), one function per kind of claim.

Each check takes the claim's ``params`` and ``paper_value`` and returns an
:class:`~shufflesim.validation.claims.Outcome` whose ``values`` name every number it computed (the
FINDINGS.md templates use them).  Only settings and the papers' printed values come from the TOML files.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from shufflesim.validation.outcome import Outcome

CHECKS: dict[str, Callable[[dict, Any], Outcome]] = {}


def check(name: str):
    def deco(fn):
        CHECKS[name] = fn
        return fn
    return deco


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def hs(pair, eps: float) -> float:
    """δ(ε) of a pair (PMFPair or row form), P against Q."""
    from shufflesim.accounting.exact import bruteforce as bf

    if hasattr(pair, "log_delta"):
        return math.exp(pair.log_delta(eps))
    return bf.hockey_stick(pair.log_p, pair.log_q, eps)


def rounds_to(x: float, printed: float, digits: int = 3) -> bool:
    """``x`` printed with ``digits`` significant digits is ``printed`` (0 printed as 0)."""
    if printed == 0:
        return x == 0.0
    return float(f"{x:.{digits - 1}e}") == float(f"{printed:.{digits - 1}e}")


def rr2_mixed_delta(n: int, eps0: float, ones: int, eps: float) -> float:
    """Exact δ of the shuffled binary-RR count when ``ones`` of the other n − 1 users hold 1."""
    from shufflesim.accounting.exact import bruteforce as bf
    from shufflesim.maths.rr_count import rr2_count_pmfs

    P, Q = rr2_count_pmfs(n, eps0, ones)
    with np.errstate(divide="ignore"):
        return bf.hockey_stick(np.log(P), np.log(Q), eps)


def krr_realised_log_delta(n: int, k: int, gamma: float, eps: float) -> float:
    """log δ of the counts (N_x1, N_x2) when the target holds x1 / x2 and every other user x3 (k ≥ 3):
    post-processing of the released histogram, so a lower bound on the mechanism's δ."""
    from scipy.special import logsumexp
    from scipy.stats import binom

    q, N = gamma / k, n - 1
    a, b = np.arange(n + 1)[:, None], np.arange(n + 1)[None, :]

    def others(a, b):
        s = a + b
        with np.errstate(divide="ignore", invalid="ignore"):
            v = binom.logpmf(s, N, 2 * q) + binom.logpmf(a, s, 0.5)
        return np.where((a >= 0) & (b >= 0) & (s <= N), v, -np.inf)

    t1, tr = 1 - gamma + q, (k - 2) * q
    terms = [others(a - 1, b), others(a, b - 1), others(a, b)]
    lP = np.logaddexp.reduce([math.log(t1) + terms[0], math.log(q) + terms[1], math.log(tr) + terms[2]]
                             if tr > 0 else [math.log(t1) + terms[0], math.log(q) + terms[1]])
    lQ = np.logaddexp.reduce([math.log(q) + terms[0], math.log(t1) + terms[1], math.log(tr) + terms[2]]
                             if tr > 0 else [math.log(q) + terms[0], math.log(t1) + terms[1]])
    lP, lQ = lP.ravel(), lQ.ravel()
    out = []
    for x, y in ((lP, lQ), (lQ, lP)):
        sel = x > y + eps
        out.append(float(logsumexp(x[sel] + np.log(-np.expm1(y[sel] + eps - x[sel])))) if sel.any() else -math.inf)
    return max(out)


def holm_adjusted(pvals: dict[str, float]) -> dict[str, float]:
    """Holm step-down adjusted p-values: a check is rejected at family-wise level a iff its value is <= a."""
    order = sorted(pvals, key=pvals.get)
    m, run, out = len(order), 0.0, {}
    for i, k in enumerate(order):
        run = max(run, min(1.0, (m - i) * pvals[k]))
        out[k] = run
    return out


def _with_statistics(check_fn):
    """A statistical check's outcome with its p-value, family and level (issue 19): the Holm-adjusted p-value of
    the deciding theory value (``focus``, else the smallest) when the run reports p-values; otherwise (an
    interval design) the decision rule, with ``p_value`` None."""

    def wrapped(params, paper_value) -> Outcome:
        out = check_fn(params, paper_value)
        checks = {c["check"]: c for c in out.evidence.get("checks", [])}
        alpha = params.get("alpha", 0.05)
        focus = params.get("focus")
        names = ", ".join(checks)
        simulated = {k: c for k, c in checks.items() if c.get("basis") == "simulation"}
        sps = {k: c.get("p_value") for k, c in simulated.items()}
        ps = {k: c.get("p_value") for k, c in checks.items()}
        violated_sim = [sps[k] for k, c in simulated.items() if c["verdict"] == "violated"]
        exact_violation = any(c["verdict"] == "violated" and k not in simulated for k, c in checks.items())
        if (out.evidence.get("design") == "sequential" and simulated and all(p is not None for p in sps.values())
                and (focus in sps or violated_sim or not exact_violation)):
            # one confidence sequence decides every simulated check: its anytime p-values are simultaneous; the
            # deciding p is the focus's, else a violated check's (the smallest), else the largest agreement p
            deciding = sps[focus] if focus in sps else (min(violated_sim) if violated_sim else max(sps.values()))
            out.evidence.update(p_value=deciding, level=alpha,
                                family=f"the {len(simulated)} simulated theory value(s) of this run "
                                       f"({', '.join(simulated)}), one anytime-valid confidence sequence (simultaneous, "
                                       "no adjustment); exact ones decided by theory")
        elif checks and all(p is not None for p in ps.values()):
            adj = holm_adjusted(ps)
            out.evidence.update(p_value=adj[focus] if focus else min(adj.values()), level=alpha,
                                family=f"the {len(checks)} theory values of this run ({names}), Holm-adjusted p")
        else:
            out.evidence.update(p_value=None, level=alpha, family=f"the {len(checks)} theory values of this run "
                                f"({names}), one simultaneous interval",
                                decision="the theory values against the simulated MSE's interval at level 1 - alpha "
                                         "(this design reports no p-value)")
        return out

    wrapped.__doc__ = check_fn.__doc__
    return wrapped


# --------------------------------------------------------------------------------------------------
# koskela (seed 001)
# --------------------------------------------------------------------------------------------------


@check("koskela.strong_1d_vs_full_view")
def strong_1d_vs_full_view(params, paper_value) -> Outcome:
    from shufflesim.accounting.exact import bruteforce as bf
    from shufflesim.accounting.pairs import krr_pair
    from shufflesim.accounting.pairs.krr import krr_strong_pair

    v: dict[str, float] = {}
    s1 = krr_pair(1000, 4, 0.25, "strong-1d")
    full = krr_pair(1000, 4, 0.25, "strong", as_rows=True)
    item3 = krr_strong_pair(1000, 4, 0.25, target_coin_visible=False, as_rows=True)
    v.update(s1_05=hs(s1, 0.5), full_05=hs(full, 0.5), s1_1=hs(s1, 1.0), full_1=hs(full, 1.0),
             item3_05=hs(item3, 0.5), item3_1=hs(item3, 1.0))
    n, k, g, e = 10**4, 5, 0.1, 0.3
    v.update(s1_fig4=hs(krr_pair(n, k, g, "strong-1d"), e), weak_fig4=hs(krr_pair(n, k, g, "weak", as_rows=True), e),
             full_fig4=hs(krr_pair(n, k, g, "strong", as_rows=True), e))
    v.update(s1_tiny=hs(krr_pair(5, 3, 0.9, "strong-1d"), 0.5), brute_tiny=hs(bf.krr_bruteforce(5, 3, 0.9, "strong"), 0.5),
             coinless_tiny=hs(krr_strong_pair(5, 3, 0.9, target_coin_visible=False), 0.5))
    below = v["s1_05"] < v["full_05"] and v["s1_1"] < v["full_1"] and v["s1_fig4"] < v["weak_fig4"]
    return Outcome("refuted" if below else "reproduced",
                   f"strong-1d {v['s1_05']:.3g} < full view {v['full_05']:.3g} (n=1000, eps=0.5); "
                   f"{v['s1_fig4']:.3g} < weak {v['weak_fig4']:.3g} (n=1e4, eps=0.3)", v,
                   evidence={"method": "tight (exact single-use PLD over the pairs' atoms) and brute force (n = 5)"})


@check("koskela.rr2_worst_data_set")
def rr2_worst_data_set(params, paper_value) -> Outcome:
    from shufflesim.accounting.pairs import rr2_pair

    v = {}
    for tag, (n, eps0, eps) in (("6", (6, 2.0, 0.05)), ("10", (10, 2.0, 0.2))):
        v["seed_" + tag] = hs(rr2_pair(n, eps0), eps)
        worst = [rr2_mixed_delta(n, eps0, j, eps) for j in range(n)]
        v["worst_" + tag] = max(worst)
        v["argworst_" + tag] = int(np.argmax(worst))
    seed = hs(rr2_pair(100, 4.0), 0.5)
    worst = max(rr2_mixed_delta(100, 4.0, j, 0.5) for j in range(100))
    v["pct_100"] = 100 * (worst / seed - 1)
    refuted = v["worst_6"] > v["seed_6"] and v["worst_10"] > v["seed_10"] and v["pct_100"] > 0
    return Outcome("refuted" if refuted else "reproduced",
                   f"mixed data: {v['worst_6']:.4f} vs all-zeros {v['seed_6']:.4f} (n=6); +{v['pct_100']:.0f}% at n=100",
                   v, evidence={"method": "exact delta of the count of ones over every number of other users holding 1"})


@check("koskela.clones_vs_feldman_pair")
def clones_vs_feldman_pair(params, paper_value) -> Outcome:
    """Seed 001's eq 6.1 clones pair against Feldman et al.'s (2021) numerical bound and against Feldman,
    McMillan, Talwar's (2023) stronger clone pair (shufflesim's default ``clones`` pair)."""
    from shufflesim.accounting.bounds import feldman_numerical_delta
    from shufflesim.accounting.pairs import clones_pair
    from shufflesim.accounting.pairs.variation import stronger_clones_pair

    v = {}
    for tag, (n, eps0, eps) in (("20", (20, 1.0, 0.3)), ("200", (200, 0.5, 0.3))):
        v["clones_" + tag] = hs(clones_pair(n, eps0, as_rows=True), eps)
        v["feldman_" + tag] = feldman_numerical_delta(eps, n=n, eps0=eps0).delta_upper
        v["stronger_" + tag] = hs(stronger_clones_pair(n, eps0), eps)
    looser = v["clones_20"] > v["feldman_20"] and v["clones_200"] > v["feldman_200"]
    return Outcome("reproduced-with-caveat" if looser else "reproduced",
                   f"eq 6.1 clones pair {v['clones_20']:.3g} vs Feldman et al.'s numerical bound {v['feldman_20']:.3g} "
                   f"vs the 2023 stronger clone pair {v['stronger_20']:.3g} (n=20, eps0=1, eps=0.3)", v,
                   caveat="valid, but the eq 6.1 pair is looser than Feldman et al.'s numerical bound, itself looser "
                          "than the 2023 stronger clone pair: the methods account different dominating pairs"
                   if looser else "",
                   evidence={"method": "tight on the eq 6.1 and stronger clone pairs; feldman-numerical"})


@check("koskela.strong_exceeds_clones")
def strong_exceeds_clones(params, paper_value) -> Outcome:
    """The strong adversary's full view of shuffled k-RR against seed 001's eq 6.1 clones pair (the bound §6
    offers) and the 2023 stronger clone pair (shufflesim's default ``clones``), both at k-RR's eps0."""
    from shufflesim.accounting.pairs import clones_pair, krr_gamma_from_eps0, krr_pair
    from shufflesim.accounting.pairs.variation import stronger_clones_pair

    strong = hs(krr_pair(1000, 4, krr_gamma_from_eps0(4, 1.0), "strong", as_rows=True), 0.5)
    clones = hs(clones_pair(1000, 1.0, as_rows=True), 0.5)
    stronger = hs(stronger_clones_pair(1000, 1.0), 0.5)
    v = {"strong": strong, "clones": clones, "stronger": stronger}
    return Outcome("reproduced-with-caveat" if strong > clones else "reproduced",
                   f"strong adversary {strong:.2g} vs eq 6.1 clones pair {clones:.2g} (stronger clone pair "
                   f"{stronger:.2g})", v,
                   caveat="the clones bounds cover the analyser's view only, not an adversary who sees the coins"
                   if strong > clones else "", evidence={"method": "tight"})


@check("koskela.coin_left_out")
def coin_left_out(params, paper_value) -> Outcome:
    from shufflesim.accounting.exact import bruteforce as bf
    from shufflesim.accounting.pairs.krr import krr_strong_pair

    n, k, g, e = 5, 3, 0.9, 0.5
    brute = hs(bf.krr_bruteforce(n, k, g, "strong"), e)
    coinless = hs(krr_strong_pair(n, k, g, target_coin_visible=False), e)
    visible = hs(krr_strong_pair(n, k, g), e)
    ratio = brute / coinless
    ok = abs(ratio - (1 - g)) < 1e-9 and abs(visible - brute) < 1e-12
    return Outcome("reproduced-with-caveat" if ok else "refuted",
                   f"exact delta with the coin = {ratio:.6f} x the item-3 pair's (1 - gamma = {1 - g:g})",
                   {"ratio": ratio, "brute": brute, "coinless": coinless},
                   caveat="the later code's pair leaves the target's coin out: valid, but (1-gamma)^-1 times looser "
                          "than the view Definition 8 describes",
                   evidence={"method": "brute-force enumeration vs the coin-visible and coinless pairs", "n": n, "k": k,
                             "gamma": g, "eps": e})


@check("koskela.feldman_validity")
def feldman_validity(params, paper_value) -> Outcome:
    from shufflesim.accounting.bounds import feldman_eps

    def applies(delta):
        return hasattr(feldman_eps(delta, n=10**6, eps0=9.0), "eps_upper")

    lo, hi = 1e-6, 0.5
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if applies(mid) else (mid, hi)
    return Outcome("refuted", f"eq C.2 applies at n=1e6, eps0=9 only for delta >= {hi:.3g}", {"threshold": hi},
                   caveat="", evidence={"method": "bisection on the bound's validity condition (4/delta form)"})


def _delta(mech, eps, **kw) -> float:
    from shufflesim.accounting import account

    r = account(mech, eps=[eps], **kw).results[0]
    return getattr(r, "delta_upper", math.nan)


@check("koskela.fig1")
def koskela_fig1(params, paper_value) -> Outcome:
    """Seed 001 Fig 1 (n = 1000, γ = 0.25, k = 4): the tight bounds (P_s of eq 5.1 and the weak adversary's
    P_w) are significantly better than Balle et al.'s analytic bound; P_w below P_s."""
    from shufflesim.mechanisms import KRR

    n, k, g = params["n"], params["k"], params["gamma"]
    rows = []
    for eps in params["eps"]:
        rows.append({"eps": eps, "strong_1d": _delta(KRR(n, k, g, "strong-1d"), eps),
                     "weak": _delta(KRR(n, k, g, "weak"), eps), "strong_full": _delta(KRR(n, k, g, "strong"), eps),
                     "analytic": _delta(KRR(n, k, g, "strong"), eps, method="balle")})
    better = all(r["strong_1d"] < r["analytic"] and r["weak"] < r["analytic"] for r in rows)
    weak_below = all(r["weak"] <= r["strong_1d"] for r in rows)
    ratio = max(r["strong_1d"] / r["analytic"] for r in rows)
    v = {"ratio": ratio}
    verdict = "reproduced-with-caveat" if better and weak_below else "refuted"
    return Outcome(verdict, "; ".join(f"eps={r['eps']}: P_s {r['strong_1d']:.3g}, P_w {r['weak']:.3g}, analytic "
                                       f"{r['analytic']:.3g}" for r in rows), v,
                   caveat="P_s (eq 5.1) is not an upper bound for the strong adversary's full view "
                          "(koskela/strong-1d-pair); the full view's delta is also below the analytic bound"
                          if better else "", evidence={"method": "tight vs balle", "rows": rows})


@check("koskela.fig2")
def koskela_fig2(params, paper_value) -> Outcome:
    """Seed 001 Fig 2 (n = 10⁴, ε0 = 4): Feldman et al.'s numerical method is "close" to the tight bound.  The
    paper states no threshold for "close" (the figure is a log plot), so the ratios are reported and the
    verdict is ``inconclusive`` (issue 19: a threshold nobody stated cannot refute)."""
    from shufflesim.accounting.bounds import feldman_numerical_delta
    from shufflesim.mechanisms import Clones

    n, eps0 = params["n"], params["eps0"]
    rows = []
    for eps in params["eps"]:
        t = _delta(Clones(n, eps0), eps, method="tight-koskela")  # the paper's FA: seed 001's eq 6.1 pair
        f = feldman_numerical_delta(eps, n=n, eps0=eps0).delta_upper
        rows.append({"eps": eps, "tight_clones": t, "feldman_numerical": f, "ratio": t / f if f > 0 else math.inf})
    v = {f"ratio_{i}": r["ratio"] for i, r in enumerate(rows)}
    ratios = ", ".join(f"{r['ratio']:.3g} at eps = {r['eps']:g} (delta ~ {r['tight_clones']:.1e})" for r in rows)
    return Outcome("inconclusive",
                   "; ".join(f"eps={r['eps']}: FA {r['tight_clones']:.3g}, Feldman {r['feldman_numerical']:.3g}"
                             for r in rows), v,
                   caveat=f"FA (eq 6.1 pair) / Feldman's numerical bound = {ratios}; the paper says 'close' on a log "
                          "plot and states no threshold, so these ratios neither reproduce nor refute it",
                   evidence={"method": "tight-koskela (seed 001's clones pair) vs feldman-numerical", "rows": rows,
                             "threshold": {"value": None, "source": None}})


@check("koskela.fig4")
def koskela_fig4(params, paper_value) -> Outcome:
    """Seed 001 Fig 4 (n = 10⁴, γ = 0.1, k = 5, n_c = 1, 2, 4): FA tighter than Thm C.1 + basic composition."""
    from shufflesim.mechanisms import KRR

    n, k, g = params["n"], params["k"], params["gamma"]
    rows = []
    for c in params["compositions"]:
        for eps in params["eps"]:
            fa = _delta(KRR(n, k, g, "strong-1d"), eps, compositions=c)
            an = _delta(KRR(n, k, g, "strong"), eps, method="balle", compositions=c, composition="basic")
            fa_full = _delta(KRR(n, k, g, "strong"), eps, compositions=c)
            rows.append({"compositions": c, "eps": eps, "fa_strong_1d": fa, "fa_strong_full": fa_full, "analytic": an})
    ok = all(r["fa_strong_1d"] < r["analytic"] for r in rows if math.isfinite(r["analytic"]))
    ok_full = all(r["fa_strong_full"] < r["analytic"] for r in rows if math.isfinite(r["analytic"]))
    return Outcome("reproduced" if ok and ok_full else "reproduced-with-caveat" if ok else "refuted",
                   "; ".join(f"n_c={r['compositions']} eps={r['eps']}: FA {r['fa_strong_1d']:.3g} (full view "
                             f"{r['fa_strong_full']:.3g}) vs analytic {r['analytic']:.3g}" for r in rows), {},
                   caveat="" if ok_full else "with the strong adversary's full view FA is not below the analytic bound "
                   "everywhere", evidence={"method": "tight (compositions by FFT) vs balle + basic composition",
                                            "rows": rows})


@check("koskela.fig10")
def koskela_fig10(params, paper_value) -> Outcome:
    """Seed 001 Fig 10: the Blanket (P_s, γ = k/(e^{ε0}+k−1)) bound is often better than the Clones bound,
    more so for larger ε0 and n; amplification weakens as k grows."""
    from shufflesim.mechanisms import KRR, Clones

    rows = []
    for n in params["n"]:
        for eps0 in params["eps0"]:
            eps = params["eps_fraction"] * eps0
            cl = _delta(Clones(n, eps0), eps, method="tight-koskela")  # the paper's Clones bound (eq 6.1 pair)
            for k in params["k"]:
                bl = _delta(KRR.from_eps0(n, k, eps0, "strong-1d"), eps)
                rows.append({"n": n, "eps0": eps0, "eps": eps, "k": k, "blanket": bl, "clones": cl})
    better = sum(r["blanket"] < r["clones"] for r in rows)
    weaker_k = all(
        all(a["blanket"] <= b["blanket"] for a, b in zip(grp, grp[1:]))
        for grp in ([r for r in rows if r["n"] == n and r["eps0"] == e] for n in params["n"] for e in params["eps0"]))
    often = better >= len(rows) / 2
    return Outcome("reproduced" if often and weaker_k else "refuted",
                   f"blanket better than clones in {better} of {len(rows)} settings; delta grows with k: {weaker_k}",
                   {"better": better, "total": len(rows)},
                   evidence={"method": "tight on both pairs", "rows": rows})


# --------------------------------------------------------------------------------------------------
# flame (seed 002)
# --------------------------------------------------------------------------------------------------


def flame_pipeline(variant: str) -> dict:
    """FLAME's ε_c (seed 002) from the Bennett bound ``variant`` (see FINDINGS item 5 for the steps)."""
    from shufflesim.accounting.bounds import LaplaceBlanket, bennett_eps, best_composition, subsample

    n, d = 1000, 7850
    delta_c = 0.01 / n**1.1
    d_coord = delta_c / (d + 1)
    e = bennett_eps(d_coord, n=n, randomiser=LaplaceBlanket(78.5 / d), variant=variant).eps_upper
    simple, d_simple, _ = best_composition(e, d_coord, d, d_coord)
    k, n_p = d // 50, n // 3
    T, beta = 2 * k, k / d
    d_step = delta_c / (T + 1)
    shuffled = LaplaceBlanket(0.5)
    e_ck = bennett_eps(d_step / beta, n=n_p, randomiser=shuffled, variant=variant).eps_upper
    e_cd, d_cd = subsample(e_ck, d_step / beta, rate=beta)
    double, d_double, _ = best_composition(e_cd, d_cd, T, d_step)
    e_sh = bennett_eps(d_step, n=n_p, randomiser=shuffled, variant=variant).eps_upper
    shuffle_only, d_shuffle, _ = best_composition(e_sh, d_step, T, d_step)
    at_double, d_at_double, _ = best_composition(e_ck, d_step / beta, T, d_step)
    return {"simple": simple, "double": double, "shuffle_only": shuffle_only, "shuffle_at_double_delta": at_double,
            "delta_at_double_delta": d_at_double, "delta_c": delta_c, "totals": [d_simple, d_double, d_shuffle]}


@check("flame.eps_c")
def flame_eps_c(params, paper_value) -> Outcome:
    orig, fixed = flame_pipeline("original-2019"), flame_pipeline("fixed")
    keys = ("simple", "double", "shuffle_only")
    pub = [float(x) for x in paper_value]
    v = {f"orig_{k}": orig[k] for k in keys} | {f"fixed_{k}": fixed[k] for k in keys}
    v |= {"pub_" + k: p for k, p in zip(keys, pub)}
    v |= {"fixed_at_double": fixed["shuffle_at_double_delta"], "orig_at_double": orig["shuffle_at_double_delta"],
          "delta_at_double": fixed["delta_at_double_delta"]}
    match_orig = all(abs(orig[k] - p) < 0.01 for k, p in zip(keys, pub))
    match_fixed = all(abs(fixed[k] - p) < 0.01 for k, p in zip(keys, pub))
    # the published values reproduce with the original-2019 form only: they are not certified (that form is not
    # a valid bound elsewhere, and the valid form gives larger values); no lower bound above them is computed,
    # so they are not shown false (not "refuted").  Matching neither form: the numbers, inconclusive.
    verdict = "reproduced" if match_fixed else ("not-certified" if match_orig else "inconclusive")
    return Outcome(verdict, f"original-2019 Bennett: {' / '.join(f'{orig[k]:.4f}' for k in keys)}; fixed: "
                   f"{' / '.join(f'{fixed[k]:.3f}' for k in keys)}", v,
                   caveat=("reproduced only with the original-2019 Bennett form, which is not a valid bound (it fails "
                           "elsewhere); the valid form certifies only the larger values; no lower bound above the "
                           "published values is shown" if match_orig and not match_fixed else
                           "neither Bennett form reproduces the published values" if not match_fixed else ""),
                   evidence={"method": "published-bound formulas (Bennett, composition, subsampling) recomputed",
                             "delta_c": orig["delta_c"]})


@check("flame.ss_double_interval")
def flame_ss_double_interval(params, paper_value) -> Outcome:
    """Seed 002's SS-Double ε_c as a guarantee: the certified interval of docs/theory.md#flame-double (upper end:
    blocks of coordinates + the stronger clone pair among the ω pool; lower end: explicit data sets, the count of
    messages above 1/2) at the paper's setting, one epoch, against the published value."""
    from shufflesim.federated.accounting import sampled_privacy, ss_double_linked_lower, ss_double_upper
    from shufflesim.federated.encoding import FlameConfig

    n = params["n"]
    cfg = FlameConfig("ss-double", d=params["d"], n=n, eps_l=params["eps_l"], k=params["k"], n_p=params["n_p"])
    delta = params["delta_c_num"] / n ** params["delta_c_pow"]
    fp = sampled_privacy(cfg, params.get("rounds", 1), delta)
    info = ss_double_upper(cfg, params.get("rounds", 1), math.nextafter(delta, 0.0))[1]
    up, low, none = fp.values["clones-coordinate-sampling"], fp.eps_lower, fp.values["clones"]
    pub = float(paper_value)
    # printed ends rounded outwards: the lower end down, the upper end up (a printed interval stays certified)
    low_s, up_s = f"{math.floor(low * 1e4) / 1e4:.4f}", f"{math.ceil(up * 1e3) / 1e3:.3f}"
    v = {"upper": up, "lower": low, "lower_down": low_s, "upper_up": up_s, "gap_small": f"{pub - float(up_s):.3f}",
         "gap_large": f"{pub - float(low_s):.3f}", "no_credit": none, "published": pub, "delta": delta, "k": cfg.k, "d": cfg.d,
         "n_p": cfg.n_p, "block": info.get("block"), "slots": info.get("slots"), "messages": info.get("messages"),
         "n_max": info.get("n_max"), "bad": info.get("bad")}
    if low is not None and low > up:  # both ends certified for the same protocol: a bug, never a verdict
        raise RuntimeError(f"flame.ss_double_interval: certified lower end {low!r} above the upper end {up!r}")
    # Algorithms 2–3 as printed: one linked message of k values per user, dummies grouped into vectors
    linked, linfo = ss_double_linked_lower(cfg, delta, eps=pub)
    linked_s = f"{math.floor(linked * 100) / 100:.2f}"
    v |= {"linked_lower": linked, "linked_lower_down": linked_s, "linked_messages": linfo["messages"],
          "linked_delta_at_published": linfo["delta_at"], "linked_threshold": linfo["threshold"],
          "linked_factor": math.floor(float(linked_s) / float(up_s))}  # printed ends: a factor never overstated
    scope = ("for shufflesim's variant (one unlinkable message per reported coordinate, real-valued Laplace — the "
             "float64 x + rng.laplace is not covered, Mironov 2012 —, shuffler and analyser not colluding, one "
             f"round per epoch with the target in it) the certified interval is [{low_s}, {up_s}]")
    if linked > pub:
        verdict, cav = "refuted", (f"for Algorithms 2–3 as printed (linked messages) a certified lower end from "
                                   f"explicit data sets is ε ≥ {linked_s} > {pub}; {scope}, below the published value")
    elif up <= pub:
        verdict, cav = "reproduced-with-caveat", (f"{scope}; the published value holds for that variant only "
                                                  "(docs/theory.md#flame-double)")
    else:
        verdict, cav = "inconclusive", f"the published value lies inside the certified interval; {scope}"
    return Outcome(verdict, f"as printed (linked): ε ≥ {linked_s}; per-coordinate messages: certified interval "
                   f"[{low_s}, {up_s}] (no sampling credit: {none:.3f})", v,
                   caveat=cav, evidence={"method": "stronger clone pair composed by FFT (upper); exact binomial "
                                         "convolution of explicit data sets (lower); exact trinomial law of the "
                                         "max statistic over linked messages (linked lower)", "delta_c": delta})


@check("flame.figure3_ratios")
def flame_figure3_ratios(params, paper_value) -> Outcome:
    """Seed 002 Fig 3 / §"Simulation of privacy amplification": magnification ratios ε_l/ε_c of SS-Simple and
    SS-Double for d = 75755.  The text does not state n, ε_l, δ_c or β for this figure; shufflesim evaluates
    one explicit reading (the ε_c pipeline's n, δ_c, β and per-dimension budget, params) and reports it."""
    from shufflesim.accounting.bounds import LaplaceBlanket, bennett_eps, best_composition, subsample

    variant = params.get("variant", "original-2019")
    n, d, e_dim = params["n"], params["d"], params["eps_per_dimension"]
    delta_c = params["delta_c_num"] / n ** params["delta_c_pow"]
    d_coord = delta_c / (d + 1)
    e = bennett_eps(d_coord, n=n, randomiser=LaplaceBlanket(e_dim), variant=variant).eps_upper
    simple = best_composition(e, d_coord, d, d_coord)[0]
    k, n_p = int(d * params["rate"]), n // 3
    T, beta = 2 * k, k / d
    d_step = delta_c / (T + 1)
    e_ck = bennett_eps(d_step / beta, n=n_p, randomiser=LaplaceBlanket(e_dim), variant=variant).eps_upper
    e_cd, d_cd = subsample(e_ck, d_step / beta, rate=beta)
    double = best_composition(e_cd, d_cd, T, d_step)[0]
    r_simple, r_double = e_dim * d / simple, e_dim * k / double
    pub = [float(x) for x in paper_value]
    v = {"simple": simple, "double": double, "r_simple": r_simple, "r_double": r_double}
    ok = abs(r_simple - pub[0]) / pub[0] < 0.01 and abs(r_double - pub[1]) / pub[1] < 0.01
    return Outcome("reproduced-with-caveat" if ok else "not-checkable",
                   f"under shufflesim's reading: x{r_simple:.3g} (SS-Simple), x{r_double:.3g} (SS-Double)", v,
                   caveat=f"reproduced under the reading in params ({variant} Bennett form)" if ok else
                   "the figure's n, local budget, delta_c and sampling rate are not stated in the paper; the reading "
                   "in params (the eps_c pipeline's values) does not give x2.55 / x137.36",
                   evidence={"method": "published-bound formulas recomputed", "params": params})


# --------------------------------------------------------------------------------------------------
# biswas (seed 003)
# --------------------------------------------------------------------------------------------------


@check("biswas.eq6_vs_exact_count")
def biswas_eq6_vs_exact(params, paper_value) -> Outcome:
    from shufflesim.accounting.bounds import biswas_delta
    from shufflesim.accounting.pairs import biswas_count_pair

    n, k, eps0, m, eps = params["n"], params["k"], params["eps0"], params["n_x0"], params["eps"]
    eq6 = biswas_delta(eps, n=n, k=k, eps0=eps0, n_x0=m).delta_upper
    exact = hs(biswas_count_pair(n, k, eps0, m), eps)
    zero = all(biswas_delta(e, n=n, k=k, eps0=eps0, n_x0=m).delta_upper == 0.0 for e in (eps0, eps0 + 0.5))
    v = {"eq6": eq6, "exact": exact, "orders": math.log10(exact / eq6)}
    return Outcome("refuted" if exact > eq6 else "reproduced",
                   f"eq 6 {eq6:.3g} vs exact delta of the released count {exact:.3g} ({v['orders']:.1f} orders)", v,
                   evidence={"method": "exact (the count's PMFs, seed 003 eqs 12-13) vs the printed formula",
                             "eq6_zero_for_eps_ge_eps0": zero})


@check("biswas.histogram_vs_count")
def biswas_histogram_vs_count(params, paper_value) -> Outcome:
    from shufflesim.accounting.exact import bruteforce as bf
    from shufflesim.accounting.pairs import biswas_count_pair

    worst, arg = bf.biswas_histogram_worst(6, 3, 2.0, 1, 1.0)
    v = {"count": hs(biswas_count_pair(6, 3, 2.0, 1), 1.0), "hist": hs(bf.biswas_histogram_exact(6, 3, 2.0, 1), 1.0),
         "worst": worst}
    return Outcome("refuted" if worst > v["count"] else "reproduced",
                   f"count {v['count']:.4f}, histogram {v['hist']:.4f} / {worst:.4f}", v,
                   evidence={"method": "exact (brute force)", "worst_others": list(arg)})


@check("biswas.table4")
def biswas_table4(params, paper_value) -> Outcome:
    from shufflesim.accounting.bounds import biswas_delta

    eps_l = params["eps"]
    agree = total = 0
    bad = []
    for row in params["rows"]:
        prm = {k: row[k] for k in ("n", "k", "eps0", "n_x0")}
        for eps, pub in zip(eps_l, row["published"]):
            got = biswas_delta(eps, **prm).delta_upper
            total += 1
            if rounds_to(got, pub):
                agree += 1
            else:
                bad.append({"row": row["label"], "eps": eps, "paper": pub, "shufflesim": got})
    words = {0: "none", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    by_row: dict[str, list[str]] = {}
    for b in bad:
        by_row.setdefault(b["row"], []).append(f"{b['eps']:g}")
    disagree = "; ".join(f"{r} at ε = {', '.join(e)}" for r, e in by_row.items())
    v = {"agree": agree, "total": total, "bad": total - agree, "bad_words": words.get(total - agree, str(total - agree)),
         "disagree": disagree}
    return Outcome("reproduced-with-caveat" if agree < total else "reproduced",
                   f"{agree} of {total} entries reproduce from eq 6", v,
                   caveat=f"{total - agree} entries do not reproduce to printed precision; eq 6 itself is not the "
                          "delta of the count (biswas/eq6-vs-exact)", evidence={"method": "published-bound formula "
                                                                                "(eq 6) recomputed", "disagree": bad})


def _biswas_log_deltas(n, k, eps0, n_x0, eps_l):
    """log δ of eq 6 at each ε (no float underflow): the published v_s and P0 of Theorem IV.1."""
    from scipy.special import logsumexp

    from shufflesim.accounting.bounds import biswas_log_pmfs, biswas_privacy_loss

    v = biswas_privacy_loss(n=n, k=k, eps0=eps0, n_x0=n_x0)
    lp0 = biswas_log_pmfs(n=n, k=k, eps0=eps0, n_x0=n_x0)[0]
    out = []
    for e in eps_l:
        sel = v > e
        out.append(float(logsumexp(np.log(-np.expm1(e - v[sel])) + lp0[sel])) if sel.any() else -math.inf)
    return out


@check("biswas.table2_ours")
def biswas_table2_ours(params, paper_value) -> Outcome:
    """Seed 003 Table II's "our δ" column: eq 6 at eps0 = 0.49, with k and n_x0 not stated.  k = 10 is taken
    from Table IV's setting; n_x0 is fitted (the smallest largest log-error over the column) at each n."""
    eps_l = params["eps"]
    pub100, pub1000 = params["published_n100"], params["published_n1000"]
    k = params.get("k", 10)

    def err(logs, pub):
        return max(abs(lg - math.log(p)) for lg, p in zip(logs, pub))

    def fit(n, pub):
        best = None
        for m in range(0, n, params.get("n_x0_step", 1)):
            e = err(_biswas_log_deltas(n, k, 0.49, m, eps_l), pub)
            if best is None or e < best[0]:
                best = (e, m)
        return best

    err100, m100 = fit(100, pub100)
    best = fit(1000, pub1000)
    v = {"rel100": math.expm1(err100), "m100": m100, "k": k, "best_m": best[1], "best_log_err": best[0],
         "best_factor": math.exp(best[0])}
    # match: every entry within 1 % (the printed values have 3 significant digits: a half unit of the last
    # digit is at most 0.5 / 1.00 = 0.5 % relative, so 1 % allows the paper's own rounding of an exact value)
    ok100 = err100 < 0.01
    match1000 = best[0] < 0.01
    fit_text = f"k = {k} (Table IV's k), n_x0 = {m100} at n = 100" + (f", n_x0 = {best[1]} at n = 1000" if match1000
                                                                     else "")
    return Outcome("reproduced-with-caveat" if ok100 else "refuted",
                   f"n=100 column within {100 * v['rel100']:.2f}% at k={k}, n_x0={m100} (fitted); n=1000 column: "
                   f"closest n_x0={best[1]}, off by a factor up to {v['best_factor']:.3g}", v,
                   caveat="the n = 1000 column matches no n_x0 with k = 10" if not match1000 else "",
                   evidence={"method": "published-bound formula (eq 6) recomputed in log space, n_x0 fitted",
                             "fit": fit_text,
                             "threshold": {"value": "1 % relative", "source": "the paper's printed precision "
                                           "(3 significant digits) with a factor 2 margin"}})


@check("biswas.table2_other_columns")
def biswas_table2_other(params, paper_value) -> Outcome:
    """Table II's [11] (Erlingsson et al.) column: the raw formula exp(−n(ε/12ε0)²) printed even where the bound
    does not apply (n < 1000); [10] (Balle et al.) and [12] (Feldman et al.) columns vs shufflesim's methods."""
    from shufflesim.accounting import account
    from shufflesim.accounting.bounds.erlingsson import erlingsson_delta, erlingsson_log_delta
    from shufflesim.mechanisms import KRR

    eps_l = params["eps"]
    v: dict[str, Any] = {}
    raw_ok = True
    for n in (100, 1000):
        for e, pub in zip(eps_l, params[f"erlingsson_n{n}"]):
            raw_ok &= abs(math.exp(erlingsson_log_delta(e, n=n, eps0=0.49)) - pub) <= 0.01
    applies_100 = erlingsson_delta(0.1, n=100, eps0=0.49).applicable
    matches: dict[str, list[str]] = {"balle": [], "feldman": []}
    for col in ("balle", "feldman"):
        for k in params["k_values"]:
            for method in params["methods"]:
                ok = True
                for n in (100, 1000):
                    mech = KRR.from_eps0(n, k, 0.49, "strong")
                    try:
                        got = [getattr(r, "delta_upper", math.nan) for r in account(mech, eps=eps_l, method=method).results]
                    except Exception:  # a method outside its validity range: no match
                        ok = False
                        break
                    for g, p in zip(got, params[f"{col}_n{n}"]):
                        ok &= bool(g > 0 and abs(math.log(g / p)) < 0.05)
                if ok:
                    matches[col].append(f"{method} (k={k})")
    v["raw_ok"], v["applies_100"] = raw_ok, applies_100
    none = not matches["balle"] and not matches["feldman"]
    return Outcome("reproduced-with-caveat" if raw_ok and none else "refuted" if not raw_ok else "reproduced",
                   f"[11] column = raw formula: {raw_ok} (applies at n=100: {applies_100}); [10] matches "
                   f"{matches['balle'] or 'none'}, [12] matches {matches['feldman'] or 'none'}", v,
                   caveat="the [11] column is the raw formula outside its validity range (n >= 1000); the [10] and "
                          "[12] columns match none of shufflesim's methods, so how they were computed is unknown",
                   evidence={"method": "published-bound formulas recomputed", "matches": matches})


# --------------------------------------------------------------------------------------------------
# bennett (seed 002 / Balle et al.'s package)
# --------------------------------------------------------------------------------------------------


@check("flame.original_bennett_invalid")
def original_bennett_invalid(params, paper_value) -> Outcome:
    from shufflesim.accounting.bounds import KRRBlanket, bennett_delta

    k, g = 20, 0.2
    r = KRRBlanket(k, g)
    eps = 0.1 * r.eps0
    v: dict[str, Any] = {"eps": eps}
    for n in (200, 1000):
        v[f"orig_{n}"] = bennett_delta(eps, n=n, randomiser=r, variant="original-2019").delta_upper
        v[f"exact_{n}"] = math.exp(krr_realised_log_delta(n, k, g, eps))
    v["ratio"] = v["exact_1000"] / v["orig_1000"]
    below = v["orig_200"] < v["exact_200"]
    return Outcome("refuted" if below else "reproduced",
                   f"original-2019 Bennett {v['orig_200']:.3g} < exact {v['exact_200']:.3g} (n=200)", v,
                   evidence={"method": "exact delta of a realised neighbouring pair (post-processing of the histogram)"})


@check("flame.bennett_sweep")
def bennett_sweep(params, paper_value) -> Outcome:
    from shufflesim.accounting.bounds import KRRBlanket, balle_delta, bennett_delta, hoeffding_delta

    below = {"original": 0, "fixed": 0, "hoeffding": 0, "closed": 0}
    total = 0
    for n in params["n"]:
        for k in params["k"]:
            for g in params["gamma"]:
                r = KRRBlanket(k, g)
                for f in params["eps_fraction"]:
                    eps = f * r.eps0
                    exact = math.exp(krr_realised_log_delta(n, k, g, eps))
                    total += 1
                    for key, res in (("original", bennett_delta(eps, n=n, randomiser=r, variant="original-2019")),
                                     ("fixed", bennett_delta(eps, n=n, randomiser=r, variant="fixed")),
                                     ("hoeffding", hoeffding_delta(eps, n=n, randomiser=r)),
                                     ("closed", balle_delta(eps, n=n, k=k, gamma=g))):
                        du = getattr(res, "delta_upper", None)
                        if du is not None and du < exact * (1 - 1e-9):
                            below[key] += 1
    v = {"total": total, **{f"below_{k}": c for k, c in below.items()}}
    return Outcome("refuted" if below["original"] else "reproduced",
                   f"original-2019 Bennett below the exact delta of a realised pair in {below['original']} of {total} "
                   f"settings (fixed {below['fixed']}, Hoeffding {below['hoeffding']}, closed form {below['closed']})",
                   v, evidence={"method": "exact delta of the (N_x1, N_x2) counts, sweep grid in params"})


# --------------------------------------------------------------------------------------------------
# balle2020 (seed 004)
# --------------------------------------------------------------------------------------------------


def _table(rows, **kw):
    from shufflesim.studies.balle2020 import table3

    return table3(rows=list(rows), **kw)


@check("balle2020.table3_row")
def table3_row(params, paper_value) -> Outcome:
    row = params["row"]
    cells = _table([row], full=params.get("full", False), tight=params.get("tight", False))
    agree = [c.agree for c in cells]
    v = {}
    for i, c in enumerate(cells):
        for key in ("messages", "paper_messages", "paper_mse", "mse_reproduced", "mse_exact", "mse_certified",
                    "mse_tight"):
            v[f"{key}_{i}"] = getattr(c, key)
    shown = " / ".join("n/a" if c.mse_reproduced is None and c.mse_exact is None else
                       f"{(c.mse_reproduced if c.mse_reproduced is not None else c.mse_exact):.1f}" for c in cells)
    paper = " / ".join("–" if c.paper_mse is None else f"{c.paper_mse:.1f}" for c in cells)
    known = [a for a in agree if a is not None]
    if not known:
        verdict, cav = "not-checkable", "; ".join(dict.fromkeys(c.reason for c in cells if c.reason))
    elif all(known) and len(known) == len(cells):
        verdict, cav = "reproduced", ""
    elif any(known):
        verdict, cav = "reproduced-with-caveat", "; ".join(dict.fromkeys(c.reason for c in cells if c.reason))
    else:
        verdict, cav = "refuted", "; ".join(dict.fromkeys(c.reason for c in cells if c.reason))
    return Outcome(verdict, f"MSE {shown} (paper {paper}); messages {[c.messages for c in cells]}", v, caveat=cav,
                   evidence={"method": "studies.balle2020.table3", "cells": [c.to_dict() for c in cells]})


@check("balle2020.findings_rows")
def findings_rows(params, paper_value) -> Outcome:
    """The FINDINGS item 13/14 numbers: IKOS message counts, the recursive/Balle/Cheu rows."""
    want = params["rows"]
    v: dict[str, Any] = {}
    cells = {r: _table([r], full=params.get("full", False), tight=params.get("tight", False)) for r in want}
    for r, cs in cells.items():
        for i, c in enumerate(cs):
            for key in ("messages", "paper_messages", "paper_mse", "mse_reproduced", "mse_exact", "mse_certified",
                        "mse_tight"):
                v[f"{r}_{key}_{i}"] = getattr(c, key)
    refuted = any(c.agree is False for cs in cells.values() for c in cs)
    return Outcome("refuted" if refuted else "reproduced", ", ".join(f"{r}: {[c.agree for c in cs]}"
                                                                     for r, cs in cells.items()), v,
                   caveat="see the item text", evidence={"method": "studies.balle2020.table3", "rows": want})


@check("balle2020.ikos_noise")
def ikos_noise(params, paper_value) -> Outcome:
    from scipy.stats import nbinom

    n, eps = params["n"], params["eps"]
    precision = math.isqrt(n)
    alpha = math.exp(-eps / precision)
    wrong = 2 * n * nbinom(1 / n, alpha).var() / precision**2
    right = 2 * n * nbinom(1 / n, 1 - alpha).var() / precision**2
    return Outcome("refuted", f"authors' parametrisation: noise MSE {wrong:.2g} instead of {right:.2g}",
                   {"wrong": wrong, "right": right},
                   evidence={"method": "exact variance of the summed Polya noise under both parametrisations"})


@check("balle2020.ikos_vs_central_laplace")
def ikos_vs_central_laplace(params, paper_value) -> Outcome:
    """Seed 004 Section 7: IKOS has lower error than CentralLaplace — simulated with correct noise, and with
    the authors' noise parametrisation (success probability α instead of 1 − α) as a variant."""
    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import run_trials
    from shufflesim.experiments.stats import mean_ci
    from shufflesim.pipeline import registry

    n, eps, trials, seed = params["n"], params["eps"], params["trials"], params["seed"]
    x = load_data(params["data"], data_kind="real", n=n, rng=seed)
    out, expected = {}, {}
    for name in ("ikos-sum", "central-laplace-sum"):
        proto = registry.create(name, n, eps=eps)
        recs = run_trials(proto, x, trials=trials, rng=seed).records
        out[name] = mean_ci(recs["sq_error"].to_numpy())
        expected[name] = proto.mse_expected(x)
    # the authors' parametrisation: summed noise variance 2(1−α)/α² instead of 2α/(1−α)² (precision p)
    p = math.isqrt(n)
    a = math.exp(-eps / p)
    noise_right, noise_wrong = 2 * a / (1 - a) ** 2 / p**2, 2 * (1 - a) / a**2 / p**2
    # the estimator simulated directly with both noise parametrisations: randomised rounding at precision
    # p, plus per user Polya(1/n, .) - Polya(1/n, .) drawn as numpy's negative_binomial(1/n, prob) with
    # prob = 1 - alpha (correct) or prob = alpha (the authors' call)
    from shufflesim.core.rng import as_generator
    from shufflesim.maths.rounding import randomised_round

    g = as_generator(np.random.SeedSequence(seed, spawn_key=(9,)))
    variants = {}
    for tag, prob in (("direct_correct", 1 - a), ("direct_authors", a)):
        errs = np.empty(trials)
        for t in range(trials):
            xbar = randomised_round(x, p, g, dtype=np.int64)
            z = g.negative_binomial(1.0 / n, prob, size=n).sum() - g.negative_binomial(1.0 / n, prob, size=n).sum()
            errs[t] = ((xbar.sum() + z) / p - x.sum()) ** 2
        variants[tag] = mean_ci(errs)
    # exact expectation with the authors' noise: the protocol's exact MSE with the noise term swapped
    ikos_authors = (expected["ikos-sum"] - noise_right + noise_wrong) if expected["ikos-sum"] is not None else math.nan
    lap = out["central-laplace-sum"]
    v = {"ikos": out["ikos-sum"][0], "ikos_lo": out["ikos-sum"][1], "ikos_hi": out["ikos-sum"][2], "lap": lap[0],
         "lap_lo": lap[1], "lap_hi": lap[2], "ikos_authors": ikos_authors,
         "ikos_expected": expected["ikos-sum"], "lap_expected": expected["central-laplace-sum"],
         "direct_correct": variants["direct_correct"][0], "direct_authors": variants["direct_authors"][0],
         "direct_authors_lo": variants["direct_authors"][1], "direct_authors_hi": variants["direct_authors"][2]}
    lower = out["ikos-sum"][2] < lap[1]
    higher = out["ikos-sum"][1] > lap[2]
    covered = all(lo <= e <= hi for (m, lo, hi), e in ((out["ikos-sum"], v["ikos_expected"]), (lap, v["lap_expected"])))
    theory_higher = v["ikos_expected"] > v["lap_expected"]
    # the exact expected MSEs decide (evidence class exact); the simulation shows them, it does not decide
    verdict = "refuted" if theory_higher else "reproduced"
    return Outcome(verdict, f"IKOS {v['ikos']:.3g} [{v['ikos_lo']:.3g}, {v['ikos_hi']:.3g}] vs CentralLaplace "
                   f"{v['lap']:.3g} [{v['lap_lo']:.3g}, {v['lap_hi']:.3g}]; with the authors' noise (simulated) "
                   f"{v['direct_authors']:.3g}, exact {ikos_authors:.3g}",
                   v, caveat=(f"decided by the exact expected MSEs ({v['ikos_expected']:.3f} vs {v['lap_expected']:.3f});"
                              " the simulated errors are " + ("separated" if lower or higher else "not separated") +
                              " at this many trials" +
                              ("" if covered else " (a simulated 95 % interval misses its exact value at this seed)")),
                   evidence={"method": "simulation", "trials": trials, "seed": seed, "n": n, "eps": eps,
                             "data": params["data"]})


# --------------------------------------------------------------------------------------------------
# generic: an MSE validation or a privacy audit as a claim's check
# --------------------------------------------------------------------------------------------------


@check("generic.mse_validation")
def generic_mse_validation(params, paper_value) -> Outcome:
    """``validate`` as a check: params protocol, n, data, seed, alpha, margin, options (protocol options) and
    either trials (a fixed-size run) or max_trials (the sequential design; default 10⁶, no time budget, so the
    outcome is reproducible); focus names the check the claim is about (default: the run's verdict)."""
    from shufflesim.core.rng import as_seed_sequence, data_seed
    from shufflesim.experiments.data import load_data
    from shufflesim.pipeline import registry
    from shufflesim.validation.mse import validate_protocol

    cls = registry.get(params["protocol"])
    opts = dict(params.get("options", {}))
    root = as_seed_sequence(params["seed"])
    data = load_data(params["data"], data_kind=cls.data_kind, n=params["n"], k=cls.data_k(opts), rng=data_seed(root))
    proto = cls.create(len(data), **opts)
    res = validate_protocol(proto, data, trials=params.get("trials"), rng=root, alpha=params.get("alpha", 0.05),
                            margin=params.get("margin", 0.02), max_trials=params.get("max_trials", 10**6))
    checks = {c["check"]: c for c in res["checks"]}
    focus = params.get("focus")  # the theory value the claim is about (default: every check of the run)
    decided = checks[focus]["verdict"] if focus else res["verdict"]
    verdict = {"agrees": "reproduced", "holds": "reproduced", "consistent": "reproduced", "violated": "refuted",
               "disagrees": "refuted", "undecided": "not-checkable"}[decided]
    v = {f"{k}_theory": c["theory"] for k, c in checks.items()} | {"mse": res["mse"], "trials": res["trials"]}
    lo, hi = res["interval"]
    text = "; ".join(f"{k}: theory {c['theory']:.6g}, {c['verdict']} ({c['basis']})" for k, c in checks.items())
    text += f"; simulated {res['mse']:.6g}, {res['interval_level']:g} interval [{lo:.6g}, {hi:.6g}], {res['trials']} trials"
    return Outcome(verdict, text, v, caveat="" if verdict == "reproduced" else
                   "undecided within the trial budget" if verdict == "not-checkable" else "",
                   evidence={"method": res["method"], "meaning": res["meaning"], "trials": res["trials"],
                             "seed": params["seed"], "checks": res["checks"], "design": res.get("design")})


@check("generic.audit")
def generic_audit(params, paper_value) -> Outcome:
    """``audit`` as a check: params protocol, n, options, eps, delta (optional), trials, seed, alpha."""
    from shufflesim.pipeline import registry
    from shufflesim.validation.audit import run_audit, setup_for_protocol

    proto = registry.create(params["protocol"], params["n"], **params.get("options", {}))
    res = run_audit(setup_for_protocol(proto), eps=params["eps"], delta=params.get("delta"), trials=params["trials"],
                    rng=params["seed"], alpha=params.get("alpha", 0.05))
    du = res["accountant"]["delta_upper"]
    verdict = {"consistent": "reproduced", "violated": "refuted", "inconclusive": "not-checkable"}[res["verdict"]]
    v = {"delta_lower": res["delta_lower"], "delta_upper": du, "ratio": res.get("ratio", math.nan)}
    p_value = audit_p_value(res["delta_evidence"]["hits_first"], res["delta_evidence"]["hits_second"],
                            res["evaluation_trials"], params["eps"], du)
    return Outcome(verdict, f"audit delta_lower {res['delta_lower']:.4g} <= accountant {du:.4g} (ratio "
                   f"{v['ratio']:.2f})" if verdict == "reproduced" else res["verdict_reason"], v,
                   evidence={"method": res["method"], "trials": res["trials"], "seed": params["seed"],
                             "pair": res["pair"], "accountant": res["accountant"], "p_value": p_value,
                             "level": res["alpha"], "family": "one hypothesis, delta(eps) <= the accountant's "
                             "delta_upper (Clopper-Pearson on the evaluation half)"})


def audit_p_value(kx: int, ky: int, T: int, eps: float, du: float) -> float:
    """The smallest a at which the audit's lower bound CP_lo(kx; a/2) - e^eps CP_hi(ky; a/2) exceeds ``du``
    (the p-value of H0: delta(eps) <= du for the chosen rejection set), by bisection on log a; 1 when even
    a -> 1 does not exceed it."""
    from scipy.stats import beta

    def excess(a):
        lo = 0.0 if kx <= 0 else float(beta.ppf(a / 2, kx, T - kx + 1))
        hi = 1.0 if ky >= T else float(beta.ppf(1 - a / 2, ky + 1, T - ky))
        return lo - math.exp(eps) * hi - du

    if excess(1.0 - 1e-12) <= 0:
        return 1.0
    a_lo, a_hi = 1e-300, 1.0 - 1e-12  # excess(a_lo) <= 0 < excess(a_hi)
    if excess(a_lo) > 0:
        return a_lo
    for _ in range(200):
        mid = math.sqrt(a_lo * a_hi)
        a_lo, a_hi = (a_lo, mid) if excess(mid) > 0 else (mid, a_hi)
        if a_hi / a_lo < 1 + 1e-6:
            break
    return a_hi


@check("biswas.table4_vs_exact")
def biswas_table4_vs_exact(params, paper_value) -> Outcome:
    """Every Table IV entry: the printed eq-6 value against the exact δ of the released count (both orders)."""
    from shufflesim.accounting.pairs import biswas_count_pair

    rows_out = []
    below = total = 0
    worst = 0.0
    for row in params["rows"]:
        prm = {k: row[k] for k in ("n", "k", "eps0", "n_x0")}
        pair = biswas_count_pair(prm["n"], prm["k"], prm["eps0"], prm["n_x0"])
        for eps, pub in zip(params["eps"], row["published"]):
            from shufflesim.accounting.exact import bruteforce as bf

            ex = max(bf.hockey_stick(pair.log_p, pair.log_q, eps), bf.hockey_stick(pair.log_q, pair.log_p, eps))
            total += 1
            if pub < ex:
                below += 1
                if pub > 0:
                    worst = max(worst, math.log10(ex / pub))
            rows_out.append({"row": row["label"], "eps": eps, "paper": pub, "exact_count_delta": ex})
    v = {"below": below, "total": total, "worst_orders": worst}
    return Outcome("refuted" if below else "reproduced",
                   f"the printed delta is below the exact delta of the released count in {below} of {total} entries "
                   f"(by up to {worst:.1f} orders of magnitude where it is nonzero)", v,
                   evidence={"method": "exact (count PMFs) vs the paper's printed values", "entries": rows_out})


# --------------------------------------------------------------------------------------------------
# beyond the seeds (issue 19): seed 001's rr2 pair against the worst data set; FMT 2023's stronger clone
# pair against binary RR; Wang et al.'s variation-ratio reduction for k-RR with k >= 3
# --------------------------------------------------------------------------------------------------


@check("koskela.rr2_all_zeros_gap")
def rr2_all_zeros_gap(params, paper_value) -> Outcome:
    """Seed 001 §4's all-zeros pair for shuffled binary RR (m = 0 others holding 1) against the worst data set:
    the exact δ of the released count for every m = 0..n-1 (a convolution of two binomials), how much larger
    the worst is and at which m."""
    from shufflesim.accounting.pairs import rr2_pair

    rows = []
    for n in params["n"]:
        for eps0 in params["eps0"]:
            for eps in params["eps"]:
                d = np.array([rr2_mixed_delta(n, eps0, m, eps) for m in range(n)])
                # delta(m) = delta(n-1-m) (exchange 0 and 1): report the smaller m of the symmetric pair
                m = int(np.argmax(d))
                m = min(m, n - 1 - m)
                rows.append({"n": n, "eps0": eps0, "eps": eps, "all_zeros": hs(rr2_pair(n, eps0), eps),
                             "m0": float(d[0]), "worst": float(d[m]), "worst_m": m, "ratio": float(d[m] / d[0])})
    top = max(rows, key=lambda r: r["ratio"])
    big_n = max(params["n"])
    top_big = max((r for r in rows if r["n"] == big_n), key=lambda r: r["ratio"])
    interior = sum(r["worst_m"] > 0 for r in rows)
    v = {"points": len(rows), "interior": interior, "pct_max": 100 * (top["ratio"] - 1), "n_max": top["n"],
         "eps0_max": top["eps0"], "eps_max": top["eps"], "m_max": top["worst_m"], "worst_max": top["worst"],
         "zeros_max": top["all_zeros"], "pct_big": 100 * (top_big["ratio"] - 1), "n_big": big_n,
         "eps0_big": top_big["eps0"], "eps_big": top_big["eps"], "m_big": top_big["worst_m"],
         "worst_big": top_big["worst"], "zeros_big": top_big["all_zeros"],
         "max_worst_m": max(r["worst_m"] for r in rows), "m_max_sym": top["n"] - 1 - top["worst_m"],
         "m_big_sym": big_n - 1 - top_big["worst_m"]}
    return Outcome("refuted" if interior else "reproduced",
                   f"the worst m is interior at {interior} of {len(rows)} points; all-zeros understates the exact "
                   f"delta by up to {v['pct_max']:.1f}% (n={top['n']}, eps0={top['eps0']}, eps={top['eps']}, worst "
                   f"m={top['worst_m']})", v,
                   evidence={"method": "exact delta of the released count for every m (others holding 1)",
                             "rows": rows})


@check("beyond.stronger_clones_vs_binary_rr")
def stronger_clones_vs_binary_rr(params, paper_value) -> Outcome:
    """Feldman, McMillan, Talwar 2023's stronger clone pair against the exact δ of shuffled binary RR, maximised
    over every neighbouring pair of data sets by brute-force enumeration (accounting.shuffle_oracle)."""
    from shufflesim.accounting.pairs.variation import stronger_clones_pair
    from shufflesim.accounting.exact.shuffle_oracle import krr_matrix, worst_neighbouring_delta

    rows = []
    for n, eps0, eps in params["points"]:
        exact, arg = worst_neighbouring_delta(krr_matrix(2, eps0), n, eps)
        rows.append({"n": n, "eps0": eps0, "eps": eps, "exact": float(exact), "pair": hs(stronger_clones_pair(n, eps0), eps),
                     "worst_m": int(sum(arg[2])) if arg else 0})
    v = {}
    for i, r in enumerate(rows):
        v |= {f"exact_{i}": r["exact"], f"pair_{i}": r["pair"], f"m_{i}": r["worst_m"]}
    # the pair's delta is computed from its exact PMFs (float round-off ~1e-15 relative): a gap of 1e-9
    # relative is not numerical noise
    gaps = [r for r in rows if r["exact"] < r["pair"] * (1 - 1e-9)]
    v["not_attained"] = len(gaps)
    v["attained"] = len(rows) - len(gaps)
    return Outcome("refuted" if gaps else "reproduced",
                   "; ".join(f"n={r['n']}, eps0={r['eps0']:g}, eps={r['eps']:g}: binary RR {r['exact']:.5f} "
                             f"(worst m={r['worst_m']}) vs pair {r['pair']:.5f}" for r in rows), v,
                   caveat="" if gaps else "", evidence={"method": "brute-force enumeration of every neighbouring "
                                                        "pair of data sets vs the pair's exact delta", "rows": rows})


@check("beyond.variation_ratio_krr")
def variation_ratio_krr(params, paper_value) -> Outcome:
    """Wang et al.'s variation-ratio reduction with k-RR's (p, beta, q) for k >= 3 against the exact worst δ of
    shuffled k-RR over every neighbouring pair of data sets (brute force), and whether shufflesim keeps the
    reduction out of k-RR's methods (so out of ``best``)."""
    from shufflesim.accounting.pairs import krr_eps0_from_gamma
    from shufflesim.accounting.pairs.variation import variation_ratio_pair, vr_params_krr
    from shufflesim.accounting.exact.shuffle_oracle import krr_matrix, worst_neighbouring_delta
    from shufflesim.errors import NotApplicableError
    from shufflesim.mechanisms import KRR

    n, k, gamma, eps = params["n"], params["k"], params["gamma"], params["eps"]
    eps0 = krr_eps0_from_gamma(k, gamma)
    exact, arg = worst_neighbouring_delta(krr_matrix(k, eps0), n, eps)
    vr = hs(variation_ratio_pair(n, *vr_params_krr(k, eps0), unverified=True), eps)
    try:
        variation_ratio_pair(n, *vr_params_krr(k, eps0))
        refused = False
    except NotApplicableError:
        refused = True
    kept_out = refused and "variation-ratio" not in KRR.methods
    v = {"exact": float(exact), "vr": vr, "ratio": float(exact) / vr, "eps0": eps0, "kept_out": kept_out,
         "x0": arg[0], "x1": arg[1], "others": " ".join(map(str, arg[2]))}
    return Outcome("refuted" if exact > vr * (1 + 1e-9) else "reproduced",
                   f"exact {float(exact):.5f} (target {arg[0]} vs {arg[1]}, others {list(arg[2])}) vs the reduction's "
                   f"{vr:.5f}; kept out of k-RR's methods: {kept_out}", v,
                   caveat="" if kept_out else "the reduction is offered for k-RR with k >= 3",
                   evidence={"method": "brute-force enumeration of every neighbouring pair of data sets vs the "
                                       "reduction's pair", "eps0": eps0})


@check("balle2020.lemma_a1_error_bound")
def lemma_a1_error_bound(params, paper_value) -> Outcome:
    """The authors' code's error expression for seed 004 Lemma A.1 (one level; γ calibrated with the
    ``p_list[j]+islast`` values, B_j with p -- the lemma's own formula is lost from the text) against the exact
    expected MSE of the blanket summation protocol on the same data (the sum of the users' variances), with the
    simulation of ``generic.mse_validation`` beside it (it tests that expectation, and the expression)."""
    sim = generic_mse_validation(params, paper_value)
    checks = {c["check"]: c for c in sim.evidence["checks"]}
    expected, bound = checks["mse_expected"]["theory"], checks["mse_bound"]["theory"]
    v = dict(sim.values, expected=expected, bound=bound)
    below = expected > bound * (1 + 1e-12)
    return Outcome("refuted" if below else "reproduced",
                   f"exact expected MSE {expected:.6g} vs the authors' code expression {bound:.6g}; simulated "
                   f"{sim.values['mse']:.6g}",
                   v, caveat=("what fails is the authors' code expression (gamma calibrated with the p_list[j]+islast "
                              "values, B_j with p), not Lemma A.1: the lemma's formula is lost from the text and its "
                              "surviving proof (the sum of the users' variances, the exact expected MSE here) holds "
                              "exactly; the code expression is below the protocol's exact expected MSE on these data; "
                              "the simulation "
                              f"of the expected MSE: {checks['mse_expected'].get('verdict')}" +
                              (f" (p = {checks['mse_expected']['p_value']:.3g})"
                               if checks["mse_expected"].get("p_value") is not None else "")
                              if below else ""),
                   evidence={"method": "exact expected MSE (closed form: sum of the users' variances) vs the printed "
                                       "expression; " + sim.evidence["method"], "simulation": sim.evidence})


# --------------------------------------------------------------------------------------------------
# seed 004 §8: dishonest users (issue 23; docs/theory.md#dishonest)
# --------------------------------------------------------------------------------------------------
def _paired_width(proto, seed: int) -> float:
    """One dishonest user pushing up minus the same user pushing down, the honest users' randomness fixed (the
    protocol's own randomiser, shuffler and analyser): the width of what one user can contribute."""
    from shufflesim.validation import dishonest as D

    data = np.full(proto.n, 0.5)
    up = D.attacked_estimate(proto, data, 1, "push", seed, direction=1)
    down = D.attacked_estimate(proto, data, 1, "push", seed, direction=-1)
    return up - down


@check("balle2020.s8_ikos_arbitrary_bias")
def s8_ikos_arbitrary_bias(params, paper_value) -> Outcome:
    """One IKOS user's shares may sum to any residue mod q: over every shift s the coalition of one moves
    E[estimate] by the exact extremes of :func:`~shufflesim.validation.dishonest.ikos_worst_shifts` (an FFT scan
    of all q shifts, re-evaluated exactly through the noise law and the analyser's decoding), compared with the
    derived window (−q/2, q/2]/p and with n, the most all honest inputs together can move it."""
    from shufflesim.pipeline import registry
    from shufflesim.validation import dishonest as D

    n, eps = int(params["n"]), float(params["eps"])
    proto = registry.create("ikos-sum", n, eps=eps)
    prm = proto.parameters
    data = np.zeros(n)  # p·x integer: the exact expectation applies
    s_lo, b_lo, s_hi, b_hi = D.ikos_worst_shifts(proto, data, 1)
    inf = D.influence(proto)
    width = b_hi - b_lo
    big = registry.create("ikos-sum", n, eps=eps, q=4 * prm.q, messages=prm.m + 1)  # the same with 4x the modulus
    _, b4_lo, _, b4_hi = D.ikos_worst_shifts(big, data, 1)
    v = {"n": n, "eps": eps, "p": prm.p, "q": prm.q, "bias_low": b_lo, "bias_high": b_hi, "shift_low": s_lo,
         "shift_high": s_hi, "width": width, "window": inf.width, "ratio_to_n": width / n,
         "width_4q": b4_hi - b4_lo, "growth_4q": (b4_hi - b4_lo) / width}
    ok = width > n
    return Outcome("reproduced" if ok else "refuted",
                   f"one user moves E[estimate] from {b_lo:.6g} to {b_hi:.6g} (width {width:.6g} = {width / n:.3g} n; "
                   f"window (q-1)/p = {inf.width:.6g}) at n = {n}, p = {prm.p}, q = {prm.q}; with 4q the width is "
                   f"{b4_hi - b4_lo:.6g} ({(b4_hi - b4_lo) / width:.3g}x)", v,
                   caveat="bounded only by the modulus: the width is (q-1)/p up to the noise's smoothing at the "
                          "window's edges",
                   evidence={"method": "exact E[estimate] over every shift mod q (noise law + the analyser's decoding), "
                                       "dishonest.ikos_worst_shifts", "threshold": {
                       "value": "n", "source": "shufflesim's own reading of seed 004 §8's 'bias the result by an "
                                               "arbitrary amount' (the paper gives no threshold): more than all n "
                                               "honest inputs in [0, 1] together can move the sum"}})


@check("balle2020.s8_recursive_bounded")
def s8_recursive_bounded(params, paper_value) -> Outcome:
    """The recursive protocol's messages must typecheck (each level's value in {0..D_j}), so one user's
    contribution lies in the derived [lo, hi] (docs/theory.md#dishonest); measured with the protocol's own
    analyser: pushing up minus pushing down with the honest randomness fixed equals hi − lo exactly."""
    from shufflesim.pipeline import registry
    from shufflesim.validation import dishonest as D

    n, eps = int(params["n"]), float(params["eps"])
    rows, v = [], {"n": n, "eps": eps}
    for name in ("recursive-sum", "blanket-sum", "cheu-sum"):
        key = name.split("-")[0]
        proto = registry.create(name, n, eps=eps, **params.get(key, {}))
        inf = D.influence(proto)
        measured = _paired_width(proto, int(params.get("seed", 0)))
        v.update({f"{key}_width": inf.width, f"{key}_measured": measured, f"{key}_hi": inf.hi, f"{key}_lo": inf.lo})
        rows.append((name, inf, measured))
    ikos = D.influence(registry.create("ikos-sum", n, eps=eps))
    v["ikos_width"] = ikos.width
    agree = all(math.isfinite(i.width) and abs(m - i.width) <= 1e-9 * max(1.0, i.width) for _, i, m in rows)
    bounded = all(i.width < ikos.width for _, i, _ in rows)
    return Outcome("reproduced" if agree and bounded else "refuted",
                   "; ".join(f"{nm}: one user's contribution in [{i.lo:.4g}, {i.hi:.4g}] (width {i.width:.4g}, "
                             f"measured {m:.6g})" for nm, i, m in rows) + f"; IKOS: {ikos.width:.4g}", v,
                   evidence={"method": "derived influence (message ranges x debiasing) vs paired runs of the "
                                       "protocol's own analyser (same honest randomness, push up vs down)",
                             "seed": int(params.get("seed", 0))})


@check("balle2020.s8_local_manipulable")
def s8_local_manipulable(params, paper_value) -> Outcome:
    """Local model: a user's debiased bit moves the estimate by coth(ε/2) = (e^ε + 1)/(e^ε − 1) ≥ 2/ε, more
    than its own input range 1, and without bound for the Laplace randomiser (any real is well-formed)."""
    from shufflesim.pipeline import registry
    from shufflesim.validation import dishonest as D

    n = int(params["n"])
    v, parts = {"n": n}, []
    for i, eps in enumerate(params["eps"]):
        proto = registry.create("local-rr-sum", n, eps=float(eps))
        inf = D.influence(proto)
        measured = _paired_width(proto, int(params.get("seed", 0)))
        v.update({f"rr_width_{i}": inf.width, f"rr_measured_{i}": measured, f"eps_{i}": float(eps),
                  f"coth_{i}": 1.0 / math.tanh(float(eps) / 2.0)})
        parts.append((float(eps), inf.width, measured))
    lap = D.influence(registry.create("local-laplace-sum", n, eps=float(params["eps"][0])))
    v["laplace_width"] = lap.width
    agree = all(abs(m - w) <= 1e-9 * w for _, w, m in parts)
    more = all(w > 1.0 for _, w, _ in parts) and math.isinf(lap.width)
    return Outcome("reproduced" if agree and more else "refuted",
                   "; ".join(f"local RR eps={e:g}: one user moves the estimate by {w:.4g} (measured {m:.6g}) "
                             f"vs its own input range 1" for e, w, m in parts) + "; local Laplace: unbounded", v,
                   caveat="the factor coth(eps/2) grows as 2/eps: the smaller eps, the larger the manipulation "
                          "(Cheu, Smith, Ullman 2019's general lower bounds for manipulating local protocols are not "
                          "checked here, only these two protocols)",
                   evidence={"method": "derived influence vs paired runs of the protocol's own analyser",
                             "threshold": {"value": 1.0, "source": "seed 004 §8: 'more than its own input' (an "
                                                                   "input lies in [0, 1])"}})


@check("balle2020.s8_withheld_noise_harms_privacy")
def s8_withheld_noise_harms_privacy(params, paper_value) -> Outcome:
    """ε at δ with a fraction ``honest`` of the users honest (the others' reports known / noise withheld) against
    all honest, certified two-sided: shuffled binary RR (exact: both ends are the mechanism's own) and the IKOS
    comparison mechanism (the exact remaining Pólya noise law).  (The blanket protocols' k-RR reports are left
    out: the tight accountant's lower end there comes from explicit data sets, and its bracket is wider than
    the 90 % step at small n.)  Reproduced when every lower end at the honest
    fraction exceeds the upper end with everybody honest."""
    from shufflesim.accounting.account import account
    from shufflesim.mechanisms.rr2 import RR2
    from shufflesim.pipeline import registry
    from shufflesim.validation import dishonest as D

    frac, delta = float(params["honest"]), float(params["delta"])
    v, parts = {"honest": frac, "delta": delta}, []

    def ends(mech):
        (r,) = account(mech, delta=[delta]).results
        return (r.eps_lower or 0.0), r.eps_upper

    n_rr, eps0 = int(params["rr2_n"]), float(params["rr2_eps0"])
    mech = RR2(n_rr, eps0)
    parts.append(("rr2", ends(mech), ends(D.honest_mechanism(mech, frac))))
    ikos = registry.create("ikos-sum", int(params["ikos_n"]), eps=float(params["eps"]))
    h = D.honest_count(frac, ikos.n)
    parts.append(("ikos", D.ikos_honest_eps(ikos, ikos.n, delta, noise_only=True),
                  D.ikos_honest_eps(ikos, h, delta, noise_only=True)))
    for name, full, part in parts:
        v.update({f"{name}_full_lower": full[0], f"{name}_full_upper": full[1], f"{name}_part_lower": part[0],
                  f"{name}_part_upper": part[1]})
    ok = all(part[0] > full[1] for _, full, part in parts)
    return Outcome("reproduced" if ok else "refuted",
                   "; ".join(f"{nm}: eps {full[1]:.6g} with all honest -> [{part[0]:.6g}, {part[1]:.6g}] with "
                             f"{frac:.0%} honest" for nm, full, part in parts) + f" (delta = {delta:g})", v,
                   caveat="IKOS: the comparison mechanism's noise (the statistical-distance term of the reconstructed "
                          "Theorem 6.1 left out)",
                   evidence={"method": "certified eps(delta) of the same mechanism among the honest users (rr2 exact) "
                                       "and of the remaining Polya noise (exact law), two-sided"})


@check("balle2020.s8_constant_factor_defence")
def s8_constant_factor_defence(params, paper_value) -> Outcome:
    """Seed 004 §8's defence: noise scaled by 1/(1 − F).  IKOS: shares designed for h0 = ⌈(1 − F)n⌉ users
    (variance × n/h0); the remaining noise at h0 honest users is DLap(α) again — its certified ε(δ) meets the
    target, the undefended protocol's does not; binary RR: ε0 recalibrated for h0 users (the accountant's
    certificate at h0).  The MSE price of each is its exact worst-case MSE ratio."""
    from shufflesim.mechanisms.rr2 import RR2
    from shufflesim.pipeline import registry
    from shufflesim.validation import dishonest as D

    f, delta = float(params["tolerate"]), float(params["delta"])
    ikos = registry.create("ikos-sum", int(params["ikos_n"]), eps=float(params["eps"]))
    tol = D.tolerant_protocol(ikos, f)
    rr = D.tolerant_mechanism(RR2(int(params["rr2_n"]), float(params["rr2_eps0"])), f, delta)
    noise_factor = D.ikos_noise_mse(tol.defended) / D.ikos_noise_mse(ikos)
    v = {"tolerate": f, "ikos_h0": tol.h0, "ikos_n": ikos.n, "ikos_noise_factor": noise_factor,
         "one_over": 1.0 / (1.0 - f), "ikos_eps_defended": tol.eps_defended_h0[1],
         "ikos_eps_undefended_lower": tol.eps_base_h0[0], "ikos_target": tol.target_eps,
         "ikos_delta_defended": tol.delta_defended_h0, "ikos_delta_target": tol.delta,
         "ikos_messages": tol.defended.parameters.m, "ikos_messages_base": ikos.parameters.m,
         "ikos_mse_ratio": tol.mse_ratio, "rr2_eps0": rr.base_value, "rr2_eps0_defended": rr.value,
         "rr2_delta_defended": rr.delta_defended_h0, "rr2_eps_undefended_h0": rr.eps_base_h0[0],
         "rr2_target": rr.target_eps, "rr2_mse_ratio": rr.mse_ratio}
    ok = (tol.eps_defended_h0[1] <= tol.target_eps < tol.eps_base_h0[0] and tol.certified and rr.certified
          and rr.eps_base_h0[0] > rr.target_eps)
    bumped = tol.defended.parameters.m != ikos.parameters.m
    return Outcome(("reproduced-with-caveat" if bumped else "reproduced") if ok else "refuted",
                   f"F = {f:g}: IKOS noise x{noise_factor:.4g} (1/(1-F) = {1 / (1 - f):.4g}): eps at {tol.h0} of "
                   f"{ikos.n} honest {tol.eps_defended_h0[1]:.6g} <= target {tol.target_eps:g} (undefended >= "
                   f"{tol.eps_base_h0[0]:.6g}), MSE x{tol.mse_ratio:.4g}; binary RR eps0 {rr.base_value:g} -> "
                   f"{rr.value:.6g} keeps eps {rr.target_eps:.6g} at {rr.h0} of {rr.n} honest, MSE x{rr.mse_ratio:.4g}",
                   v, caveat=(f"IKOS's (eps, delta) also needs the messages raised from {ikos.parameters.m} to "
                              f"{tol.defended.parameters.m}: the statistical security sigma falls with the number of "
                              "honest users (reconstructed eq. 4)") if bumped else "",
                   evidence={"method": "exact remaining Polya noise law (IKOS) and the tight/exact accountant "
                                       "(binary RR) at ceil((1-F)n) honest users; exact worst-case MSE formulas"})


# the statistical checks report their p-value, family and level (issue 19)
CHECKS["generic.mse_validation"] = _with_statistics(CHECKS["generic.mse_validation"])
