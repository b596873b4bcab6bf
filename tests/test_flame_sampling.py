"""SS-Double's coordinate sampling (issue 31 item 3; docs/theory.md#flame-double).

Brute force at a tiny setting: the analyser's whole view of SS-Double with binary R_{γ,1} per coordinate and
uniform dummies (the per-coordinate counts of 1s among n_p messages, mixed over every user's k-of-d set) is
enumerated exactly for every data set at the vertices of [0, 1]^d; the certified interval of
:func:`sampled_privacy` brackets the worst data set's exact eps, and the lower end's explicit data sets and
statistic reproduce by brute force for every sampling pattern."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.federated.accounting import (dummy_is_centre, sampled_privacy, ss_double_lower, ss_double_upper)
from shufflesim.federated.encoding import FlameConfig

D, K, N, NP = 4, 2, 2, 3  # dimension, coordinates per user, users, messages per coordinate


def _cfg(eps0: float, **kw) -> FlameConfig:
    return FlameConfig("ss-double", d=kw.get("d", D), n=kw.get("n", N), eps_l=kw.get("k", K) * eps0,
                       randomiser="rr", b=1, k=kw.get("k", K), n_p=kw.get("n_p", NP))


def _one(x: float, eps0: float) -> float:
    """P(report = 1) of binary R_{γ,1} with randomised rounding at input x in [0, 1]."""
    e = math.exp(eps0)
    return (1.0 - x) / (e + 1.0) + x * e / (e + 1.0)


def _count_pmf(probs: list[float]) -> np.ndarray:
    pmf = np.array([1.0])
    for p in probs:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def _view_law(target, others, eps0: float, d=D, k=K, n_p=NP) -> np.ndarray:
    """Exact law of the tuple of per-coordinate counts of 1s (the analyser's view: each coordinate's multiset of
    n_p binary messages), mixed over the target's and every other user's uniform k-subset; dummies uniform."""
    sets = list(itertools.combinations(range(d), k))
    law = np.zeros((n_p + 1,) * d)
    for combo in itertools.product(sets, repeat=1 + len(others)):
        joint = np.array(1.0)
        for j in range(d):
            probs = [_one(v[j], eps0) for v, s in zip([target, *others], combo) if j in s]
            assert len(probs) <= n_p  # no overflow at these sizes
            joint = np.multiply.outer(joint, _count_pmf(probs + [0.5] * (n_p - len(probs))))
        law += joint
    return law / len(sets) ** (1 + len(others))


def _delta(P: np.ndarray, Q: np.ndarray, eps: float) -> float:
    return float(np.maximum(P - math.exp(eps) * Q, 0.0).sum())


@pytest.mark.parametrize("eps0,delta", [(1.0, 0.05), (2.0, 0.02)])
def test_interval_brackets_the_enumerated_truth(eps0, delta):
    cfg = _cfg(eps0)
    fp = sampled_privacy(cfg, 1, delta)
    up, low = fp.values["clones-coordinate-sampling"], fp.eps_lower
    assert fp.method == "clones-coordinate-sampling" and fp.eps == up
    assert 0.0 < low < up
    verts = list(itertools.product([0.0, 1.0], repeat=D))
    worst = 0.0
    laws = {}
    for other in verts:
        for x in verts:
            laws[x] = _view_law(x, [other], eps0)
        for x, x2 in itertools.permutations(verts, 2):
            worst = max(worst, _delta(laws[x], laws[x2], up))
    assert worst <= delta + 1e-12  # the upper end holds for every data set (vertices: the law is multi-affine)
    # the lower end's explicit data sets: the other user at 1/2 everywhere, the target at 0 vs 1
    half = (0.5,) * D
    P, Q = _view_law((0.0,) * D, [half], eps0), _view_law((1.0,) * D, [half], eps0)
    assert _delta(P, Q, low) > delta


@pytest.mark.parametrize("eps0", [0.5, 1.5])
def test_lower_end_statistic_reproduces_for_every_sampling_pattern(eps0):
    """The count of 1s over all coordinates under the lower end's data sets, by brute force for each fixed
    pattern (the target's set and the other user's set): Bin(d·n_p − k, ½) + Bin(k, p0) whatever the pattern."""
    p0 = 1.0 / (math.exp(eps0) + 1.0)
    assert ss_double_lower(_cfg(eps0), 1, 0.1)[1]["p0"] == pytest.approx(p0, rel=1e-15)
    closed = np.convolve(_count_pmf([0.5] * (D * NP - K)), _count_pmf([p0] * K))
    sets = list(itertools.combinations(range(D), K))
    for s_t, s_o in itertools.product(sets, repeat=2):
        total = np.array([1.0])
        for j in range(D):
            probs = ([p0] if j in s_t else []) + ([_one(0.5, eps0)] if j in s_o else [])
            total = np.convolve(total, _count_pmf(probs + [0.5] * (NP - len(probs))))
        np.testing.assert_allclose(total, closed, rtol=1e-12, atol=0)


def test_block_credit_needs_a_centre_and_two_coordinates_per_block():
    assert dummy_is_centre(FlameConfig("ss-double", d=100, n=50, eps_l=10 * 0.5, k=10, n_p=20))  # Laplace
    rr10 = FlameConfig("ss-double", d=100, n=50, eps_l=10 * 0.5, randomiser="rr", b=10, k=10, n_p=20)
    assert not dummy_is_centre(rr10)  # e^0.5 < 10
    with pytest.raises(NotApplicableError):
        ss_double_upper(rr10, 1, 1e-6)
    assert dummy_is_centre(FlameConfig("ss-double", d=100, n=50, eps_l=10 * 2.5, randomiser="rr", b=10, k=10, n_p=20))
    with pytest.raises(NotApplicableError):
        ss_double_upper(_cfg(1.0, d=3, k=2), 1, 1e-3)  # blocks of one coordinate


def test_credit_is_below_the_unsampled_value_and_client_sampling():
    cfg = FlameConfig("ss-double", d=500, n=300, eps_l=10 * 0.5, k=10, n_p=100)
    fp = sampled_privacy(cfg, 2, 1e-6, lower=False)
    assert fp.values["clones-coordinate-sampling"] < fp.values["clones"]
    # client sampling: fewer counted rounds can only lower each upper end; both ways of sampling refused together
    fs = sampled_privacy(cfg, 40, 1e-6, participation=0.05, population=6000, lower=False)
    full = sampled_privacy(cfg, 40, 1e-6, lower=False)
    assert fs.eps < full.eps and fs.eps_lower is None
    fm = sampled_privacy(cfg, 40, 1e-6, clients_per_round=300, population=6000, lower=False)
    assert fm.eps < full.eps
    with pytest.raises(ParameterError, match="not both"):
        sampled_privacy(cfg, 2, 1e-6, participation=0.1, clients_per_round=10)


@pytest.mark.parametrize("n_p", [2, 3])
def test_interval_brackets_at_three_coordinates_per_block(n_p):
    """d = 6, k = 2 (blocks of 3): the target at 0 vs 1 everywhere, the other user at 0, 1 or 1/2 everywhere."""
    eps0, delta, d = 1.0, 0.05, 6
    cfg = _cfg(eps0, d=d, n_p=n_p)
    fp = sampled_privacy(cfg, 1, delta)
    up, low = fp.values["clones-coordinate-sampling"], fp.eps_lower
    assert up < fp.values["clones"]  # the credit is real here
    for v in (0.0, 1.0, 0.5):
        P = _view_law((0.0,) * d, [(v,) * d], eps0, d=d, n_p=n_p)
        Q = _view_law((1.0,) * d, [(v,) * d], eps0, d=d, n_p=n_p)
        assert max(_delta(P, Q, up), _delta(Q, P, up)) <= delta + 1e-12
        if v == 0.5:
            assert _delta(P, Q, low) > delta


def test_full_participation_and_all_coordinates_reproduce_the_unsampled_answers():
    from shufflesim.federated.accounting import flame_privacy

    cfg = FlameConfig("ss-double", d=500, n=300, eps_l=10 * 0.5, k=10, n_p=100)
    a, b = sampled_privacy(cfg, 3, 1e-6, lower=False), sampled_privacy(cfg, 3, 1e-6, participation=1.0, lower=False)
    assert a.values == b.values
    every = FlameConfig("ss-double", d=20, n=300, eps_l=20 * 0.5, k=20, n_p=100)  # k = d: nothing is sampled
    s = sampled_privacy(every, 2, 1e-6, lower=False)
    # no credit claimed (blocks of one coordinate): the method falls back to the LDP composition, like any
    # method that does not apply in flame_privacy
    assert s.values["clones-coordinate-sampling"] == s.values["ldp"]
    assert s.values["clones"] == flame_privacy(every, 2, 1e-6).values["clones"]
    # the Poisson rate going to 0: no round is counted, the upper end goes to 0
    assert sampled_privacy(cfg, 3, 1e-6, participation=1e-12, population=300, lower=False).eps == 0.0
