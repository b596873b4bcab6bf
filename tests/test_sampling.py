"""Sampled shuffled mechanisms (issue 31; docs/theory.md#sampling): both ends bracket the brute-force truth over
every participation pattern and data set (binary RR and 3-RR, n <= 8), single use and 2-fold; q = 1 is the
unsampled mechanism; q -> 0 gives delta -> 0; bad input refused in one line."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from shufflesim import NotApplicableError, ParameterError
from shufflesim.accounting.account import account
from shufflesim.accounting.exact.shuffle_oracle import histogram_law, krr_matrix
from shufflesim.accounting.model.mechanism import Sampling
from shufflesim.accounting.exact import sampled_oracle as O
from shufflesim.accounting.pairs import sampled as S
from shufflesim.accounting.pairs.variation import stronger_clones_pair
from shufflesim.cli.main import main
from shufflesim.mechanisms import KRR, RR2, Clones
from shufflesim.mechanisms.sampled import SampledMechanism, with_sampling

SLACK = 1e-9  # float round-off of the brute force's own sums


def _mech(k: int, n: int, eps0: float, sampling: Sampling):
    base = RR2(n, eps0) if k == 2 else KRR.from_eps0(n, k, eps0)
    return with_sampling(base, sampling)


def _participation_law(R, data, q):
    """The view's law by enumerating every participation pattern (each user in or out), independently of
    the augmented-randomiser reduction: {histogram of the participants' reports: probability}."""
    law: dict = {}
    n = len(data)
    for pattern in itertools.product((0, 1), repeat=n):
        w = math.prod(q if b else 1.0 - q for b in pattern)
        sub = [x for x, b in zip(data, pattern) if b]
        for h, p in histogram_law(R, sub).items():
            law[h] = law.get(h, 0.0) + w * p
    return law


def _delta(lp, lq, eps):
    ee = math.exp(eps)
    keys = set(lp) | set(lq)
    return max(sum(max(0.0, lp.get(h, 0.0) - ee * lq.get(h, 0.0)) for h in keys),
               sum(max(0.0, lq.get(h, 0.0) - ee * lp.get(h, 0.0)) for h in keys))


def _pairs_of_data_sets(k, n, relation):
    targets = (list(itertools.permutations(range(k), 2)) if relation == "replace-one"
               else [(x, None) for x in range(k)])
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        for x0, x1 in targets:
            yield [x0, *others], ([x1, *others] if x1 is not None else list(others))


def _truth(k, n, eps0, q, relation, eps, folds=1):
    """max over neighbouring data sets of the exact delta of the ``folds``-fold view (every pattern enumerated)."""
    R = krr_matrix(k, eps0)
    best = 0.0
    for d0, d1 in _pairs_of_data_sets(k, n, relation):
        lp, lq = _participation_law(R, d0, q), _participation_law(R, d1, q)
        if folds == 2:
            lp = {(a, b): pa * pb for a, pa in lp.items() for b, pb in lp.items()}
            lq = {(a, b): pa * pb for a, pa in lq.items() for b, pb in lq.items()}
        best = max(best, _delta(lp, lq, eps))
    return best


def test_participation_patterns_equal_the_augmented_randomiser():
    """The reduction itself: the law over every participation pattern is the augmented randomiser's histogram
    law with the ⊥ count dropped (n public), for replace-one and add/remove data sets."""
    R = krr_matrix(3, 1.3)
    data = [0, 2, 2, 1]
    law = _participation_law(R, data, 0.35)
    aug = histogram_law(O.augmented(R, 0.35), data)
    assert set(law) == {h[:-1] for h in aug}
    for h, p in aug.items():
        assert law[h[:-1]] == pytest.approx(p, rel=1e-12, abs=1e-15)


CASES = [(k, n, eps0, q, rel) for k, n in ((2, 3), (2, 6), (3, 4)) for eps0 in (1.0, 2.5) for q in (0.2, 0.6)
         for rel in ("replace-one", "add-remove")]


@pytest.mark.parametrize("k,n,eps0,q,relation", CASES)
def test_single_use_brackets_brute_force(k, n, eps0, q, relation):
    mech = _mech(k, n, eps0, Sampling.poisson(q, relation))
    eps = [0.0, 0.3, 0.9]
    rep = account(mech, eps=eps)
    for e, r in zip(eps, rep.results):
        t = _truth(k, n, eps0, q, relation, e)
        assert r.delta_lower is not None
        assert r.delta_lower <= t + SLACK, (e, r.delta_lower, t)
        assert t <= r.delta_upper + SLACK, (e, t, r.delta_upper)


@pytest.mark.parametrize("k,n,eps0,q,relation", [(2, 8, 1.5, 0.3, "replace-one"), (2, 8, 1.5, 0.3, "add-remove"),
                                                 (3, 5, 2.0, 0.5, "replace-one"), (3, 5, 2.0, 0.5, "add-remove")])
def test_single_use_brackets_brute_force_n_up_to_8(k, n, eps0, q, relation):
    mech = _mech(k, n, eps0, Sampling.poisson(q, relation))
    rep = account(mech, eps=[0.2, 0.6])
    for e, r in zip((0.2, 0.6), rep.results):
        t = _truth(k, n, eps0, q, relation, e)
        assert r.delta_lower <= t + SLACK <= r.delta_upper + 2 * SLACK


@pytest.mark.parametrize("k,n,eps0,q,relation", [(2, 4, 2.0, 0.4, "replace-one"), (2, 4, 1.0, 0.7, "add-remove"),
                                                 (3, 3, 1.5, 0.5, "replace-one"), (3, 3, 1.5, 0.5, "add-remove")])
def test_two_fold_brackets_brute_force(k, n, eps0, q, relation):
    """The 2-fold truth: max over data sets of the exact delta of the pair of views on the same data."""
    mech = _mech(k, n, eps0, Sampling.poisson(q, relation))
    eps = [0.2, 0.8]
    rep = account(mech, eps=eps, compositions=2)
    for e, r in zip(eps, rep.results):
        t = _truth(k, n, eps0, q, relation, e, folds=2)
        assert r.delta_lower <= t + SLACK, (e, r.delta_lower, t)
        assert t <= r.delta_upper + SLACK, (e, t, r.delta_upper)


def test_blanket_rows_dominate_every_data_set_exactly():
    """The pair itself (no engine): its exact delta is >= every data set's (for 3-RR too it is not attained in
    general: :func:`test_krr3_blanket_pair_is_not_attained`)."""
    for k, n, eps0, q in ((2, 5, 2.5, 0.3), (3, 5, 1.0, 0.7)):
        rows = S.sampled_krr_rows(n, k, eps0, q, tail_bound=0.0, groups=10**6)
        for e in (0.0, 0.4):
            worst, _ = O.worst_delta(krr_matrix(k, eps0), n, e, q=q)
            assert worst <= math.exp(rows.log_delta(e)) * (1 + 1e-12)


def test_grouped_blanket_count_is_an_upper_end():
    """Rounding the blanket count down to its group's smallest value (post-processing) only raises delta."""
    exact = S.sampled_krr_rows(300, 2, 2.0, 0.2, tail_bound=0.0, groups=10**6)
    grouped = S.sampled_krr_rows(300, 2, 2.0, 0.2, tail_bound=0.0, groups=3)
    for e in (0.1, 0.3):
        assert exact.log_delta(e) <= grouped.log_delta(e) + 1e-12


@pytest.mark.parametrize("n,m", [(4, 2), (5, 3)])
def test_fixed_size_brackets_brute_force(n, m):
    for k, eps0 in ((2, 1.5), (3, 2.0)):
        mech = _mech(k, n, eps0, Sampling.fixed(m))
        rep = account(mech, eps=[0.1, 0.5])
        for e, r in zip((0.1, 0.5), rep.results):
            t, _ = O.worst_delta(krr_matrix(k, eps0), n, e, m=m)
            assert r.delta_lower <= t + SLACK <= r.delta_upper + 2 * SLACK


def test_rate_one_is_the_unsampled_mechanism():
    for base in (RR2(1000, 2.0), KRR.from_eps0(500, 4, 1.5), Clones(2000, 3.0)):
        assert with_sampling(base, Sampling.poisson(1.0)) is base
        assert with_sampling(base, Sampling.fixed(base.n)) is base
    a = account(RR2(1000, 2.0), delta=[1e-6], compositions=3)
    b = account(with_sampling(RR2(1000, 2.0), Sampling.poisson(1.0)), delta=[1e-6], compositions=3)
    assert a.results == b.results


def test_rate_one_rows_are_the_stronger_clone_pair():
    """At q = 1 the blanket pair of R_q is the stronger clone pair (the unsampled tight pair)."""
    rows = S.sampled_krr_rows(400, 2, 2.0, 1.0, tail_bound=0.0, groups=10**6)
    clones = stronger_clones_pair(400, 2.0, tail_bound=0.0)
    for e in (0.1, 0.5):
        assert rows.log_delta(e) == pytest.approx(clones.log_delta(e), rel=1e-9)


def test_cli_rate_one_reproduces_unsampled(capsys):
    main(["account", "rr2", "--n", "500", "--eps0", "2", "--delta", "1e-6", "--json"])
    plain = capsys.readouterr().out
    main(["account", "rr2", "--n", "500", "--eps0", "2", "--delta", "1e-6", "--sample-rate", "1", "--json"])
    sampled = capsys.readouterr().out
    strip = lambda s: "\n".join(l for l in s.splitlines() if "seconds" not in l)  # noqa: E731
    assert strip(plain) == strip(sampled)


def test_delta_goes_to_zero_with_the_rate():
    ups = []
    for q in (1e-1, 1e-3, 1e-5):
        (r,) = account(_mech(2, 1000, 2.0, Sampling.poisson(q)), eps=[0.01]).results
        assert r.delta_upper <= q
        ups.append(r.delta_upper)
    assert ups[0] > ups[1] > ups[2]


def test_sampling_is_stated_in_params():
    rep = account(_mech(2, 100, 1.0, Sampling.poisson(0.2, "add-remove")), eps=[1.0])
    assert rep.params["sampling"] == {"kind": "poisson", "relation": "add-remove", "rate": 0.2}


@pytest.mark.parametrize("flags,msg", [
    (["--sample-rate", "0"], "sample rate"), (["--sample-rate", "1.5"], "sample rate"),
    (["--sample-size", "0"], "sample size"), (["--sample-size", "101"], "sample size"),
    (["--sample-rate", "0.1", "--sample-size", "3"], "at most one"),
    (["--sample-relation", "add-remove"], "needs --sample-rate"),
    (["--sample-size", "10", "--sample-relation", "add-remove"], "replace-one only"),
])
def test_cli_refuses_bad_sampling_in_one_line(capsys, flags, msg):
    code = main(["account", "rr2", "--n", "100", "--eps0", "1", "--eps", "1", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and msg in err


def test_library_refuses_bad_sampling():
    with pytest.raises(ParameterError):
        Sampling.poisson(0.0)
    with pytest.raises(ParameterError):
        with_sampling(RR2(10, 1.0), Sampling.fixed(11))
    with pytest.raises(ParameterError):
        SampledMechanism(KRR.from_eps0(10, 3, 1.0, "weak"), Sampling.poisson(0.5))
    with pytest.raises(ParameterError):
        Sampling("poisson", rate=0.5, size=3)


def test_clones_pair_dominates_random_ldp_randomisers():
    """Any eps0-LDP randomiser (random matrices, fixed seed): the sampled clone pair bounds every data set."""
    from shufflesim.accounting.exact.shuffle_oracle import local_eps

    rng = np.random.default_rng(31)
    for _ in range(25):
        k_in, k_out = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        W = np.exp(rng.uniform(0.0, float(rng.uniform(0.5, 3.0)), (k_in, k_out)))
        R = W / W.sum(axis=1, keepdims=True)
        n, q = int(rng.integers(2, 5)), float(rng.uniform(0.1, 1.0))
        rows = S.sampled_ldp_rows(n, local_eps(R), q, tail_bound=0.0, groups=10**6)
        for e in (0.0, 0.3, 0.8):
            worst, _ = O.worst_delta(R, n, e, q=q)
            assert worst <= math.exp(rows.log_delta(e)) * (1 + 1e-9) + 1e-15


def test_clones_sampled_brackets_binary_rr():
    """clones' upper end bounds binary RR's sampled truth (an eps0-LDP randomiser), its lower end is binary RR's."""
    mech = with_sampling(Clones(5, 2.0), Sampling.poisson(0.4))
    rep = account(mech, eps=[0.1, 0.5])
    for e, r in zip((0.1, 0.5), rep.results):
        t = _truth(2, 5, 2.0, 0.4, "replace-one", e)
        assert r.delta_lower <= t + SLACK <= r.delta_upper + 2 * SLACK


@pytest.mark.parametrize("cut", [1e-3, 3e-2])
def test_lower_pair_with_dropped_atoms_stays_below(cut):
    """The lower end's pair drops its small atoms (a sub-probability pair, no tail): the engine's composed lower
    end equals the kept atoms' exact hockey-stick and stays below the full pair's, T = 1, 2, 3."""
    from shufflesim.accounting.engines.tight import tight_delta

    def composed(pair, eps, T):
        P, Q = np.exp(pair.log_p), np.exp(pair.log_q)
        PP, QQ = P, Q
        for _ in range(T - 1):
            PP, QQ = np.outer(PP, P).ravel(), np.outer(QQ, Q).ravel()
        ee = math.exp(eps)
        return max(np.maximum(PP - ee * QQ, 0).sum(), np.maximum(QQ - ee * PP, 0).sum())

    full = S.data_set_pair_2d(6, 2, 1.5, 0.5, atom_cut=1e-300)
    sub = S.data_set_pair_2d(6, 2, 1.5, 0.5, atom_cut=cut)
    assert sub.size < full.size
    for T in (1, 2, 3):
        for e in (0.1, 1.0):
            (r,) = tight_delta(sub, [e], compositions=T)
            assert r.delta_lower <= composed(sub, e, T) * (1 + 1e-9) + 1e-15
            assert composed(sub, e, T) <= composed(full, e, T) * (1 + 1e-12)


def test_sampled_pair_api():
    """The matrix entry point (used by FLAME's sampling): k-RR gets its blanket pair, others the clone pair."""
    from shufflesim.mechanisms.sampled import sampled_pair

    krr = sampled_pair(krr_matrix(3, 1.2), 5, 0.4)
    assert krr.name == "sampled-blanket"
    W = np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])
    other = sampled_pair(W, 4, 0.3)
    assert other.name == "sampled-clones"
    for e in (0.0, 0.4):
        worst, _ = O.worst_delta(W, 4, e, q=0.3)
        assert worst <= math.exp(other.log_delta(e)) + other.tail
    with pytest.raises(ParameterError):
        sampled_pair(W, 4, 0.0)


@pytest.mark.parametrize("k,relation", [(2, "replace-one"), (2, "add-remove"), (3, "replace-one")])
def test_heterogeneous_two_rounds_bracket_brute_force(k, relation):
    """Two rounds with different q and eps0 (a Composition): the truth is the max over data sets of the exact
    delta of the product of the two rounds' views on the same data."""
    from shufflesim.accounting.model.mechanism import Composition

    n, rounds = 4, ((2.0, 0.4), (1.0, 0.7))
    comp = Composition(tuple((_mech(k, n, e0, Sampling.poisson(q, relation)), 1) for e0, q in rounds))
    rep = account(comp, eps=[0.2, 0.8])
    for e, r in zip((0.2, 0.8), rep.results):
        best = 0.0
        for d0, d1 in _pairs_of_data_sets(k, n, relation):
            laws = [(_participation_law(krr_matrix(k, e0), d0, q), _participation_law(krr_matrix(k, e0), d1, q))
                    for e0, q in rounds]
            (p1, q1), (p2, q2) = laws
            lp = {(a, b): x * y for a, x in p1.items() for b, y in p2.items()}
            lq = {(a, b): x * y for a, x in q1.items() for b, y in q2.items()}
            best = max(best, _delta(lp, lq, e))
        assert r.delta_lower is not None
        assert r.delta_lower <= best + SLACK <= r.delta_upper + 2 * SLACK, (e, r.delta_lower, best, r.delta_upper)


def test_add_remove_is_not_capped_at_eps0():
    """Under add/remove the view is not eps0-DP (the number of participants moves): above eps0 the truth is
    positive and both ends still bracket it (a cap at the local guarantee would put the upper end at 0)."""
    n, eps0, q = 3, 1.0, 0.7
    mech = _mech(2, n, eps0, Sampling.poisson(q, "add-remove"))
    assert mech.local_guarantee() is None
    for e in (1.2, 2.0):
        (r,) = account(mech, eps=[e]).results
        t = _truth(2, n, eps0, q, "add-remove", e)
        assert t > 0
        assert r.delta_lower <= t + SLACK <= r.delta_upper + 2 * SLACK


#: rates at and just below 1 (review of issue 31: 0.9999999999999999 failed with "r must be in (0.0, 1.0]")
NEAR_ONE = [1.0, 0.9999999999999999, 1.0 - 2.0 ** -52, 1.0 - 3e-16, 1.0 - 1e-15, 1.0 - 1e-12, 0.99999]
#: local budgets, including ones where 1 − γ rounds to 1 (ε0 = 40) and the ones that failed at q = 1
NEAR_ONE_EPS0 = [0.05 + 0.3 * i for i in range(40)] + [15.0, 20.0, 40.0]


def _exact_krr_blanket(k, eps0, q):
    """γ, r, 1 − r of k-RR's R_q in exact rational arithmetic (t = e^{−ε0} taken as the float it is)."""
    from fractions import Fraction as F
    t, q = F(math.exp(-eps0)), F(q)
    D = 1 + (k - 1) * t
    low = q * t / D
    gamma = (1 - q) + k * low
    return gamma, 2 * low / gamma, ((1 - q) + (k - 2) * low) / gamma


@pytest.mark.parametrize("q", NEAR_ONE)
def test_rates_near_one_are_probabilities(q):
    """Review of issue 31: the blanket's γ, r, 1 − r (k-RR and any-LDP clones) are probabilities at every ε0, and
    accurate to 1e-13 relative against exact rational arithmetic (γ = 1 − (1 − γ) had cancelled: 1 − r came out
    1.038 for 3-RR at q = 1, ε0 = 40; r exceeded 1 at q = 1 for about half the ε0); the rows and the lower-end
    pairs build."""
    for eps0 in NEAR_ONE_EPS0:
        for k in (2, 3, 5):
            s = S.krr_sampled_parameters(k, eps0, q)
            gamma, r, rc = _exact_krr_blanket(k, eps0, q)
            for key, exact in (("gamma", gamma), ("r", r), ("one_minus_r", rc)):
                assert 0.0 <= s[key] <= 1.0, (k, eps0, key, s[key])
                assert abs(s[key] - float(exact)) <= 1e-13 * float(exact), (k, eps0, key, s[key], float(exact))
            S.sampled_krr_rows(10, k, eps0, q)
            S.data_set_pair_2d(6, k, eps0, q)
            S.data_set_pair(6, k, eps0, q=q)
        s = S.ldp_sampled_parameters(eps0, q)
        assert all(0.0 <= s[key] <= 1.0 for key in ("gamma", "r", "one_minus_r")), (eps0, s)
        S.sampled_ldp_rows(10, eps0, q)
        S.sampled_krr_addremove_pair(6, 2, eps0, q)


def test_cli_rate_just_below_one(capsys):
    """The review's command: exits 0, and its interval holds the rate-1 mechanism's exact δ (the rates differ by
    one ulp, so the truths differ by ~1e-16; rate 1 is accounted as the unsampled mechanism, exactly)."""
    args = ["account", "rr2", "--n", "10", "--eps0", "5", "--eps", "0.1", "--json"]
    assert main([*args, "--sample-rate", "0.9999999999999999"]) == 0
    below = capsys.readouterr().out
    assert main([*args, "--sample-rate", "1"]) == 0
    one = capsys.readouterr().out
    import json
    a, b = json.loads(below), json.loads(one)
    ra, rb = a["results"][0], b["results"][0]
    assert ra["delta_lower"] <= rb["delta_upper"] + 1e-12 and rb["delta_lower"] <= ra["delta_upper"] + 1e-12, (ra, rb)


@pytest.mark.parametrize("n", [6, 8])
def test_krr3_blanket_pair_is_not_attained(n):
    """Review of issue 31: docs/theory.md#sampling said the sampled 3-RR blanket pair is attained by "the others
    hold a third value" (the interval closes).  It is not: the blanket adversary learns N, the number of blanket
    draws, and no data set's view reveals it.  Full enumeration (every data set and participation pattern):
    at ε0 = 2, q = 0.7, ε = 1 the pair's exact δ is >= 3 % above the worst data set's (0.100721 vs 0.097126 at
    n = 6; 0.066529 vs 0.061983 at n = 8); at ε = 0.2 the two agree to 1e-11."""
    rows = S.sampled_krr_rows(n, 3, 2.0, 0.7, tail_bound=0.0, groups=10**6)
    worst, _ = O.worst_delta(krr_matrix(3, 2.0), n, 1.0, q=0.7)
    assert math.exp(rows.log_delta(1.0)) >= 1.03 * worst
    # ... while at ε = 0.2 the pair's δ is the worst data set's (measured: 9.2e-13 above at n = 6, 8.0e-13 at n = 8)
    worst, _ = O.worst_delta(krr_matrix(3, 2.0), n, 0.2, q=0.7)
    assert 0.0 <= math.exp(rows.log_delta(0.2)) - worst <= 1e-11


@pytest.mark.parametrize("argv", [["rr2", "--n", "100", "--eps0", "1", "--sample-size", "10", "--delta", "0.1"],
                                  ["krr", "--n", "100", "--k", "4", "--eps0", "1", "--sample-size", "1",
                                   "--delta", "0.2"]])
def test_fixed_size_delta_at_least_the_fraction_is_eps_zero(capsys, argv):
    """δ ≥ m/n: the unsampled mechanism is (0, 1)-DP, Balle-Barthe-Gaboardi's coupling gives (0, m/n) ⊆ (0, δ)
    (docs/theory.md#sampling); it was refused with 'delta must be in (0, 1); got 1.0'."""
    assert main(["account", *argv, "--json"]) == 0
    import json
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["eps_lower"] == 0.0 and r["eps_upper"] == 0.0


@pytest.mark.parametrize("k,n,m,delta", [(2, 5, 2, 0.4), (3, 4, 1, 0.3), (2, 4, 2, 0.5)])
def test_fixed_size_eps_zero_is_certified_by_brute_force(k, n, m, delta):
    """Brute force: at δ ≥ m/n the worst δ(0) over every data set is at most δ, so ε = 0 is an upper end."""
    rep = account(_mech(k, n, 1.5, Sampling.fixed(m)), delta=[delta])
    assert rep.results[0].eps_upper == 0.0
    worst, _ = O.worst_delta(krr_matrix(k, 1.5), n, 0.0, m=m)
    assert worst <= delta


def test_fixed_size_inner_refusal_names_the_users_delta(monkeypatch):
    import sys

    from shufflesim.mechanisms.sampled import fixed_size_answer, inner_delta

    A = sys.modules["shufflesim.accounting.account"]

    assert inner_delta(0.03, 10, 100) * 10 / 100 <= 0.03

    def refuse(*args, **kwargs):
        raise ParameterError("delta must be in (0, 1); got 0.3")
    monkeypatch.setattr(A, "account", refuse)
    with pytest.raises(ParameterError, match=r"at delta = 0\.03 .*delta \* n/m = 0\.3"):
        fixed_size_answer(_mech(2, 100, 1.0, Sampling.fixed(10)), None, [0.03], 1)


@pytest.mark.parametrize("R", [[[0.7, 0.3], [0.1, 0.9]], [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]],
                               [[0.6, 0.4], [0.4 + 1e-13, 0.6 - 1e-13]], [[0.25, 0.75], [0.75, 0.25]]])
def test_sampled_pair_eps0_is_an_upper_end(R):
    """sampled_pair's ε0 is at least the matrix's exact ε0 (max column ratio, in exact arithmetic, compared with
    e^{ε0} to 40 digits); local_eps (the test oracle's) rounded [[.7,.3],[.1,.9]]'s ε0 = log 7 down."""
    from decimal import Decimal, getcontext
    from fractions import Fraction

    from shufflesim.mechanisms.sampled import sampled_pair

    F = [[Fraction(v) for v in row] for row in R]
    F = [[v / sum(row) for v in row] for row in F]
    ratio = max(max(col) / min(col) for col in zip(*F))
    eps0 = sampled_pair(R, 6, 0.5).params["eps0"]
    getcontext().prec = 40
    assert Decimal(eps0).exp() >= Decimal(ratio.numerator) / Decimal(ratio.denominator)


def test_near_krr_matrix_gets_the_clone_pair():
    """Only an exact k-RR matrix gets the k-RR blanket pair (it was taken within rtol 1e-12)."""
    from shufflesim.mechanisms.sampled import sampled_pair

    K = krr_matrix(3, 1.2)
    assert sampled_pair(K, 5, 0.4).name == "sampled-blanket"
    near = K.copy()
    near[0, 1] *= 1 + 1e-13
    near[0, 2] = 1.0 - near[0, 0] - near[0, 1]
    assert sampled_pair(near, 5, 0.4).name == "sampled-clones"
    with pytest.raises(NotApplicableError):
        sampled_pair(near, 5, 0.4, "add-remove")
