"""Dishonest users (issue 23, first slice; docs/theory.md#dishonest): the bias a coalition forces.

Oracles: exact integer/float identities for deterministic shifts (the same honest randomness with two
coalition strategies), brute-force enumeration of every honest and dishonest message outcome at n = 3
run through the protocol's own shuffler and analyser, the DLap closed form and an h-fold convolution for
the remaining Pólya noise.  Monte-Carlo comparisons use fixed seeds and a Bonferroni-corrected normal
interval so that the family-wise error of this file is below 1e-3.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.errors import ParameterError
from shufflesim.maths.polya import dlap_logpmf, polya_logpmf
from shufflesim.pipeline.registry import create
from shufflesim.validation import dishonest as D

N = 30
FAMILY = 7 * 4 * 2
Z = float(stats.norm.isf(1e-3 / FAMILY / 2.0))


def _protocols(n: int = N) -> dict:
    return {
        "blanket-sum": create("blanket-sum", n, gamma=0.3, k=4),
        "recursive-sum": create("recursive-sum", n, precisions=[3, 4], gammas=[0.2, 0.3], eps=1.0),
        "cheu-sum": create("cheu-sum", n, eps=1.0, messages=3, gamma=0.4),
        "local-rr-sum": create("local-rr-sum", n, eps=1.0),
        "local-laplace-sum": create("local-laplace-sum", n, eps=1.0),
        "krr": create("krr", n, k=3, gamma=0.4),
        "ikos-sum": create("ikos-sum", n, eps=1.0),
    }


PROTOS = _protocols()


def _data(proto):
    n = proto.n
    if proto.name == "krr":
        return np.arange(n) % proto.k
    if proto.name == "ikos-sum":  # p·x integer: the exact IKOS expectation needs a deterministic rounded sum
        p = proto.parameters.p
        return (np.arange(n) % (p + 1)) / p
    return (np.arange(n) % 5) / 4.0


LINEAR = [k for k in PROTOS if k not in ("ikos-sum", "local-laplace-sum")]


@pytest.mark.parametrize("name", list(PROTOS))
def test_no_coalition_reproduces_the_protocol_run(name):
    """c = 0: the attacked population is the protocol's own run, bit for bit (same seed streams)."""
    proto = PROTOS[name]
    data = _data(proto)
    for seed in (0, 7):
        got = D.attacked_estimate(proto, data, 0, "push", seed)
        want = proto.run(data, seed).estimate
        want = float(want[0]) if name == "krr" else float(want)
        assert got == want  # exactness is the point: identical random streams


@pytest.mark.parametrize("name", LINEAR)
@pytest.mark.parametrize("c", [1, 3])
def test_push_attains_the_derived_influence_exactly(name, c):
    """With the honest users' randomness fixed, pushing up instead of down moves the estimate by exactly
    c·(hi − lo), the derived width; pushing down sends only zero messages, so it equals a dropout."""
    proto = PROTOS[name]
    inf = D.influence(proto)
    data = _data(proto)
    for seed in range(3):
        up = D.attacked_estimate(proto, data, c, "push", seed, direction=1)
        down = D.attacked_estimate(proto, data, c, "push", seed, direction=-1)
        drop = D.attacked_estimate(proto, data, c, "dropout", seed)
        assert math.isclose(up - down, c * inf.width, rel_tol=1e-12, abs_tol=1e-12 * proto.n)
        assert down == drop  # exactness is the point: the same integer message sum goes to the analyser


def test_local_laplace_push_is_unbounded():
    """Any real message is well-formed: a push of size M moves the estimate by exactly 2M·c between directions."""
    proto = PROTOS["local-laplace-sum"]
    assert D.influence(proto).width == math.inf
    data = _data(proto)
    for m in (10.0, 1e6):
        up = D.attacked_estimate(proto, data, 2, "push", 3, magnitude=m)
        down = D.attacked_estimate(proto, data, 2, "push", 3, direction=-1, magnitude=m)
        assert math.isclose(up - down, 4.0 * m, rel_tol=1e-9)


def test_ikos_shift_is_exact_and_spans_the_window():
    """IKOS: one user's shares of s move the decoded sum by exactly s (no wrap), and the window it can reach
    is (−q/2, q/2] — the estimate anywhere in (−q/(2p), q/(2p)], far beyond the honest range [0, 1]."""
    proto = PROTOS["ikos-sum"]
    prm = proto.parameters
    data = _data(proto)
    inf = D.influence(proto)
    assert inf.modular and inf.width == pytest.approx((prm.q - 1) / prm.p, rel=1e-12)
    assert inf.width > prm.n  # one user moves the estimate by more than all n honest inputs can
    for s in (1, -17, 5 * prm.p, -prm.n * prm.p):
        for seed in range(3):
            a = D.attacked_estimate(proto, data, 1, "push", seed, shift=s)
            b = D.attacked_estimate(proto, data, 1, "push", seed, shift=0)
            assert round((a - b) * prm.p) == s  # decoded values are integers: the shift is exact


def _message_laws(proto, x):
    """Per-user law of the message row (as a dict row-tuple -> probability), by enumeration of the randomiser."""
    name = proto.name
    if name == "krr":
        return {(j,): float(pj) for j, pj in enumerate(proto.randomiser.report_probabilities(int(x)))}
    if name == "blanket-sum":
        k, lv = proto.k, proto.randomiser.level
        law: dict = {}
        lo, f = math.floor(k * x), k * x - math.floor(k * x)
        for xb, pw in ((lo, 1 - f), (min(lo + 1, k), f)):
            for j, pj in enumerate(lv.report_probabilities(xb)):
                law[(j,)] = law.get((j,), 0.0) + pw * pj
        return law
    if name == "local-rr-sum":
        fl = proto.analyser.flip
        p1 = x * (1 - fl) + (1 - x) * fl
        return {(0,): 1 - p1, (1,): p1}
    if name == "cheu-sum":
        r, g = proto.params["messages"], proto.params["gamma"]
        law = {}
        lo, f = math.floor(r * x), r * x - math.floor(r * x)
        for xb, pw in ((lo, 1 - f), (min(lo + 1, r), f)):
            for bits in itertools.product((0, 1), repeat=r):
                p = pw
                for j, b in enumerate(bits):
                    true = 1 if j + 1 <= xb else 0
                    p *= (1 - g / 2) if b == true else g / 2
                law[bits] = law.get(bits, 0.0) + p
        return law
    raise AssertionError(name)


def _det_law(rows):
    return {tuple(int(v) for v in r): 1.0 for r in rows}


def _enumerated_expectation(proto, data, c, strategy, direction):
    """E[estimate] by enumerating every message outcome of every user (n = 3) through the protocol's own
    shuffler and analyser; the coalition's messages are deterministic for push/dropout and enumerated for
    withhold-noise/extreme-input."""
    xd, xh = data[:c], data[c:]
    laws = [_message_laws(proto, x) for x in xh]
    if strategy == "push":
        rows = D._dishonest_messages(proto, xd, "push", direction, 0, 0.0, None, np.random.default_rng(0))
        laws += [{tuple(int(v) for v in r): 1.0} for r in rows]
    elif strategy == "extreme-input":
        ext = (0 if direction > 0 else 1) if proto.name == "krr" else (1.0 if direction > 0 else 0.0)
        laws += [_message_laws(proto, ext) for _ in range(c)]
    elif strategy == "withhold-noise":  # the same randomiser with no noise: the rounding only
        for x in xd:
            if proto.name == "krr":
                laws.append({(int(x),): 1.0})
            else:
                k = {"blanket-sum": proto.params.get("k"), "local-rr-sum": 1,
                     "cheu-sum": proto.params.get("messages")}[proto.name]
                lo, f = math.floor(k * x), k * x - math.floor(k * x)
                law = {}
                for xb, pw in ((lo, 1 - f), (min(lo + 1, k), f)):
                    row = (xb,) if proto.name != "cheu-sum" else tuple(int(j + 1 <= xb) for j in range(k))
                    law[row] = law.get(row, 0.0) + pw
                laws.append(law)
    total = 0.0
    seed = np.random.SeedSequence(0)
    for combo in itertools.product(*[list(law.items()) for law in laws]):
        p = math.prod(pr for _, pr in combo)
        if p == 0.0:
            continue
        msgs = np.array([row for row, _ in combo], dtype=np.int64).reshape(len(combo), -1)
        if msgs.size == 0:
            msgs = np.zeros((0, proto.messages_per_user), dtype=np.int64)
        raw = proto.analyser.analyse(proto.shuffler.shuffle(msgs, seed), np.random.default_rng(0))
        total += p * D._scalar(proto, raw, 0)
    return total


@pytest.mark.parametrize("name", ["blanket-sum", "krr", "local-rr-sum", "cheu-sum"])
@pytest.mark.parametrize("strategy", D.STRATEGIES)
@pytest.mark.parametrize("direction", [1, -1])
def test_expected_estimate_matches_enumeration(name, strategy, direction):
    """The derived E[estimate] under attack equals the brute-force expectation at n = 3 with c = 1, 2."""
    small = {"blanket-sum": create("blanket-sum", 3, gamma=0.3, k=2),
             "krr": create("krr", 3, k=3, gamma=0.4),
             "local-rr-sum": create("local-rr-sum", 3, eps=0.7),
             "cheu-sum": create("cheu-sum", 3, eps=1.0, messages=2, gamma=0.4)}[name]
    data = np.array([0, 2, 1]) if name == "krr" else np.array([0.3, 1.0, 0.75])
    for c in (1, 2):
        want = _enumerated_expectation(small, data, c, strategy, direction)
        got = D.expected_estimate(small, data, c, strategy, direction=direction)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", list(PROTOS))
@pytest.mark.parametrize("strategy", D.STRATEGIES)
@pytest.mark.parametrize("direction", [1, -1])
def test_simulated_bias_agrees_with_the_derived_value(name, strategy, direction):
    """Monte-Carlo mean of the attacked estimate (c = 2) within Z standard errors of the derived E."""
    proto = PROTOS[name]
    data = _data(proto)
    est = D.simulate_attack(proto, data, 2, strategy, 200, seed=11, direction=direction, magnitude=50.0)
    want = D.expected_estimate(proto, data, 2, strategy, direction=direction, magnitude=50.0)
    se = est.std(ddof=1) / math.sqrt(est.size)
    assert abs(est.mean() - want) <= Z * se


def test_ikos_wraparound_expectation_and_worst_shift():
    """Past the window the estimate wraps: the derived E (exact noise law) tracks the simulated mean, and
    the worst shift found by scanning every residue moves the estimate by nearly the whole window."""
    proto = PROTOS["ikos-sum"]
    prm = proto.parameters
    data = _data(proto)
    R = int(np.round(data[1:] * prm.p).sum())
    s = prm.q // 2 - R  # centre of the noise at the upper edge: about half the runs wrap
    est = D.simulate_attack(proto, data, 1, "push", 400, seed=5, shift=s)
    want = D.expected_estimate(proto, data, 1, "push", shift=s)
    assert abs(est.mean() - want) <= Z * est.std(ddof=1) / math.sqrt(est.size)
    lo_s, lo_b, hi_s, hi_b = D.ikos_worst_shifts(proto, data, 1)
    assert hi_b == pytest.approx(D.expected_bias(proto, data, 1, "push", shift=hi_s), rel=1e-12)
    assert lo_b == pytest.approx(D.expected_bias(proto, data, 1, "push", shift=lo_s), rel=1e-12)
    assert hi_b - lo_b > 0.9 * D.influence(proto).width


def test_remaining_noise_law():
    """h of n Pólya shares: h = n is DLap(α) exactly; h < n is the h-fold convolution of one share's law."""
    n, alpha = 5, math.exp(-0.8)
    z, pmf, tail = D.remaining_noise_pmf(n, n, alpha)
    assert tail < 1e-290
    np.testing.assert_allclose(pmf, np.exp(dlap_logpmf(z, alpha)), rtol=1e-10, atol=1e-300)
    one = np.exp(polya_logpmf(np.arange(400), 1.0 / n, alpha))
    share = np.convolve(one, one[::-1])  # z = -399..399
    for h in (1, 2, 3):
        law = share
        for _ in range(h - 1):
            law = np.convolve(law, share)
        L = (law.size - 1) // 2
        zz, pm, _ = D.remaining_noise_pmf(h, n, alpha)
        Lh = (pm.size - 1) // 2
        m = min(L, Lh, 200)
        np.testing.assert_allclose(pm[Lh - m:Lh + m + 1], law[L - m:L + m + 1], rtol=1e-9, atol=1e-300)
        assert abs(pm.sum() - 1.0) < 1e-12


def test_bad_arguments():
    proto = PROTOS["blanket-sum"]
    with pytest.raises(ParameterError):
        D.attacked_estimate(proto, _data(proto), 1, "bribe", 0)
    with pytest.raises(ParameterError):
        D.attacked_estimate(proto, _data(proto), N + 1, "push", 0)


# --- privacy left with M honest users ---------------------------------------------------------------------------
from shufflesim.accounting.exact import shuffle_oracle as O  # noqa: E402
from shufflesim.accounting.account import account  # noqa: E402
from shufflesim.errors import NotApplicableError  # noqa: E402
from shufflesim.mechanisms.krr import KRR  # noqa: E402
from shufflesim.mechanisms.rr2 import RR2  # noqa: E402

TOL = 1e-9


def _joint_view_delta(R, honest_others, colluders, x0, x1, eps):
    """Exact δ(ε) of the view (histogram of all n reports, the colluders' own reports) — brute force."""
    def law(target):
        hon = O.histogram_law(R, [target, *honest_others])
        out = {}
        for ys in itertools.product(range(R.shape[1]), repeat=len(colluders)):
            py = math.prod(R[x, y] for x, y in zip(colluders, ys))
            for hist, ph in hon.items():
                full = list(hist)
                for y in ys:
                    full[y] += 1
                key = (tuple(full), ys)
                out[key] = out.get(key, 0.0) + ph * py
        return out
    lp, lq = law(x0), law(x1)
    ee = math.exp(eps)
    keys = set(lp) | set(lq)
    return max(sum(max(0.0, lp.get(h, 0.0) - ee * lq.get(h, 0.0)) for h in keys),
               sum(max(0.0, lq.get(h, 0.0) - ee * lp.get(h, 0.0)) for h in keys))


@pytest.mark.parametrize("k,eps0", [(2, 1.5), (3, 2.0)])
def test_honest_krr_is_the_mechanism_of_the_honest_users(k, eps0):
    """n = 4 users, 2 colluders whose reports the adversary knows: the worst δ of the joint view (brute
    force over the honest others and both colluders' inputs) equals the 2-user shuffled k-RR's brute-force δ,
    and account(honest_mechanism(·, 2)) brackets it."""
    n, m = 4, 2
    R = O.krr_matrix(k, eps0)
    # k = 2: rr2's exact method, both ends bound the mechanism's own δ.  k = 3: the shuffled k-RR pair's
    # upper end only — its lower end is the dominating pair's δ, which here lies ABOVE the brute-force δ of the
    # shuffled reports (0.671 > 0.608 at n = 2, eps = 0; reported to the lead, not this slice's to fix)
    mech = RR2(n, eps0) if k == 2 else KRR.from_eps0(n, k, eps0, "shuffled")
    hm = D.honest_mechanism(mech, m)
    assert hm == (RR2(m, eps0) if k == 2 else KRR.from_eps0(m, k, eps0, "shuffled"))
    for eps in (0.0, 0.3 * eps0, 0.7 * eps0):
        joint = max(_joint_view_delta(R, others, col, x0, x1, eps)
                    for others in itertools.combinations_with_replacement(range(k), m - 1)
                    for col in itertools.combinations_with_replacement(range(k), n - m)
                    for x0, x1 in itertools.permutations(range(k), 2))
        alone, _ = O.worst_neighbouring_delta(R, m, eps)
        assert joint == pytest.approx(alone, rel=1e-12, abs=1e-15)
        r = account(hm, eps=[eps]).results[0]
        assert joint <= r.delta_upper * (1 + TOL) + 1e-15
        if k == 2:
            assert r.delta_lower <= joint * (1 + TOL) + 1e-15
        full = account(mech, eps=[eps]).results[0]
        assert full.delta_upper <= r.delta_upper * (1 + TOL) + 1e-15  # fewer honest users: no more privacy


def test_honest_mechanism_refusals():
    with pytest.raises(ParameterError):
        D.honest_mechanism(RR2(10, 1.0), 11)
    with pytest.raises(ParameterError):
        D.honest_mechanism(RR2(10, 1.0), 0)
    from shufflesim.mechanisms.dlap import CentralDLap
    with pytest.raises(NotApplicableError):
        D.honest_mechanism(CentralDLap(1.0, 4), 3)


def test_ikos_with_all_honest_is_the_protocols_guarantee():
    """h = n: the noise part is DLap's exact profile (mechanisms.dlap) and the TV term the protocol's."""
    from shufflesim.mechanisms.dlap import dlap_delta

    proto = PROTOS["ikos-sum"]
    prm = proto.parameters
    for eps in (0.3, 0.6, prm.eps):
        r = D.ikos_honest_delta(proto, prm.n, eps)
        exact = dlap_delta(eps, prm.eps, prm.p)
        assert r.delta_lower <= exact <= r.noise_delta_upper
        assert r.noise_delta_upper - r.delta_lower <= 1e-10
        assert r.tv_term == pytest.approx((1 + math.exp(eps)) * 2.0**-prm.sigma, rel=1e-12)
    # at eps = eps0 DLap's δ is 0: the upper end is the protocol's δ plus the floating-point slack only
    up = D.ikos_honest_delta(proto, prm.n, prm.eps).delta_upper
    assert prm.delta * (1 - 1e-12) <= up <= prm.delta + 1e-10


def test_ikos_fewer_honest_shares_brute_force():
    """h < n: the noise δ at every shift equals the hockey-stick divergence computed from the h-fold
    convolution of one share's law (an independent construction), within the stated bracket."""
    proto = create("ikos-sum", 6, eps=1.0, p=3, q=4001, messages=40)
    prm = proto.parameters
    one = np.exp(polya_logpmf(np.arange(600), 1.0 / prm.n, prm.alpha))
    share = np.convolve(one, one[::-1])
    for h in (3, 4, 5):
        law = share
        for _ in range(h - 1):
            law = np.convolve(law, share)
        for eps in (0.2, 0.8):
            ee = math.exp(eps)
            brute = max(float(np.sum(np.maximum(0.0, law[d:] - ee * law[:-d]))) for d in range(1, prm.p + 1))
            r = D.ikos_honest_delta(proto, h, eps)
            assert r.delta_lower <= brute * (1 + TOL) + 1e-15
            assert brute <= r.noise_delta_upper * (1 + TOL) + 1e-15
            assert r.noise_delta_upper > D.ikos_honest_delta(proto, prm.n, eps).noise_delta_upper


def test_cli_account_honest(capsys):
    """``account rr2 --n N --honest M`` prints what ``account rr2 --n M`` prints; a bad M is one error line."""
    import json

    from shufflesim.cli.main import main

    def run(*argv):
        code = main(["account", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    base = ["--eps0", "1", "--delta", "1e-6", "--json"]
    c1, o1, _ = run("rr2", "--n", "1000", "--honest", "900", *base)
    c2, o2, _ = run("rr2", "--n", "900", *base)
    assert c1 == c2 == 0
    a, b = json.loads(o1), json.loads(o2)
    a.pop("seconds", None), b.pop("seconds", None)
    assert a["results"] == b["results"] and a["params"] == b["params"]
    code, out, err = run("krr", "--n", "50", "--k", "3", "--eps0", "1", "--eps", "0.5", "--honest", "51")
    assert code == 2 and out == "" and err.startswith("error: ") and len(err.strip().splitlines()) == 1


# --- the tolerate defence (IKOS) -------------------------------------------------------------------------------
def test_ikos_tolerate_keeps_dlap_with_f_n_absent_users():
    """F = 0.2 of n = 30: with 6 dropouts the remaining noise is exactly DLap(α) and the noise δ is DLap's
    exact profile; with 10 dropouts (more than tolerated) it is worse; the undefended protocol is worse at 6."""
    from shufflesim.mechanisms.dlap import dlap_delta

    proto = PROTOS["ikos-sum"]
    prm = proto.parameters
    d = D.ikos_tolerant(proto, 0.2)
    assert d.randomiser.n_users == 24
    z, pmf, _ = D.remaining_noise_pmf(24, d.randomiser.n_users, prm.alpha)
    np.testing.assert_allclose(pmf, np.exp(dlap_logpmf(z, prm.alpha)), rtol=1e-10, atol=1e-300)
    eps = 0.5
    exact = dlap_delta(eps, prm.eps, prm.p)
    ok = D.ikos_honest_delta(d, 24, eps)
    assert ok.delta_lower <= exact <= ok.noise_delta_upper
    more = D.ikos_honest_delta(d, 30, eps)  # extra honest noise only helps
    assert more.noise_delta_upper <= exact + 1e-10
    assert D.ikos_honest_delta(d, 20, eps).delta_lower > exact
    assert D.ikos_honest_delta(proto, 24, eps).delta_lower > exact
    assert D.ikos_noise_mse(d) == pytest.approx(D.ikos_noise_mse(proto) * 30 / 24, rel=1e-12)


def test_ikos_tolerate_noise_variance_simulated():
    """The defended protocol's estimate (inputs with p·x integer: no rounding noise, so the error is the
    noise over p, if nothing wraps) has variance (n/h0)·Var DLap/p²: a chi-square interval at level 1e-4."""
    proto = create("ikos-sum", 30, eps=1.0)
    d = D.ikos_tolerant(proto, 0.5)
    data = _data(proto)
    est = D.simulate_attack(d, data, 0, "push", 400, seed=21)
    t = D.truth(d, data)
    ss = float(np.sum((est - t) ** 2))  # known mean (unbiased): n = 400 degrees of freedom
    want = D.ikos_noise_mse(d)
    lo, hi = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], est.size)
    assert lo <= ss / want <= hi


def test_coalition_table_rows():
    """One row per (c, strategy); c = 0 rows have derived bias 0 (honest population) and the bias grows
    linearly in c for push (derived c·hi − Σ x_coalition)."""
    proto = PROTOS["blanket-sum"]
    data = _data(proto)
    rows = D.coalition_table(proto, data, [0, 2, 4], ("push", "dropout"), trials=20, seed=3)
    assert [(r["c"], r["strategy"]) for r in rows] == [(c, s) for c in (0, 2, 4) for s in ("push", "dropout")]
    inf = D.influence(proto)
    for r in rows:
        want = r["c"] * (inf.hi if r["strategy"] == "push" else inf.dropout) - float(np.sum(data[:r["c"]]))
        assert r["bias_derived"] == pytest.approx(want, abs=1e-12)
