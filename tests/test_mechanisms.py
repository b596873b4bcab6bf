"""Mechanism descriptions (issue 7): values shared by simulation and accounting.

* the ε0 ↔ γ conversion is one function pair and stays finite at the extremes;
* the CLI's mechanisms are exactly the descriptions in shufflesim.mechanisms, found by kinds();
* account() dispatches on the value: a description defined outside the package is accountable with no
  change to the accountant (the one-module extension point), checked against a closed form;
* a protocol's mechanism() is what its privacy() was certified on;
* a heterogeneous Composition is the FFT composition of its parts' pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from shufflesim import NotApplicableError, ParameterError
from shufflesim.accounting import Composition, Mechanism, PMFPair, Relation, account, tight_delta
from shufflesim.maths.rr import eps0_from_gamma, gamma_from_eps0
from shufflesim.mechanisms import KRR, RR2, BiswasCount, Clones, kinds
from shufflesim.pipeline import registry


def test_conversion_round_trip_and_extremes():
    for k in (2, 3, 10, 1000):
        for eps0 in (1e-6, 0.1, 1.0, 5.0, 30.0, 600.0):
            g = gamma_from_eps0(eps0, k)
            assert eps0_from_gamma(g, k) == pytest.approx(eps0, rel=1e-9)
    # beyond exp's range: γ is subnormal (or 0.0) instead of an OverflowError; a subnormal γ maps back
    assert gamma_from_eps0(1000.0, 3) == 0.0
    assert 0.0 < gamma_from_eps0(740.0, 3) < 1e-300
    assert eps0_from_gamma(1e-320, 2) == pytest.approx(math.log(2.0) + 320 * math.log(10.0), rel=1e-3)
    assert eps0_from_gamma(1.0, 5) == 0.0


def test_krr_description_validates_and_reports_given_eps0():
    m = KRR.from_eps0(1000, 4, 1.0, "weak")
    assert m.params() == {"n": 1000, "k": 4, "gamma": gamma_from_eps0(1.0, 4), "eps0": 1.0, "adversary": "weak"}
    assert m.relation is Relation.WEAK
    with pytest.raises(ParameterError, match="adversary must be one of"):
        KRR(10, 3, 0.5, "medium")
    with pytest.raises(ParameterError, match="exactly one of gamma"):
        KRR.resolve(10, 3)
    with pytest.raises(ParameterError, match="disagree"):
        KRR(10, 3, 0.5, None, 2.0)
    # no adversary named: the default view, the shuffled reports (issue 29: one default for simulate and account)
    assert account(KRR(10, 3, 0.5), eps=[0.1]).results[0].delta_upper == \
        account(KRR(10, 3, 0.5, "shuffled"), eps=[0.1]).results[0].delta_upper
    with pytest.raises(ParameterError, match="does not apply"):
        account(Clones(40, 1.0), eps=[0.5], method="balle")
    with pytest.raises(ParameterError, match="mechanism description"):
        account("krr", eps=[0.5])  # type: ignore[arg-type]


def test_cli_kinds_are_the_package_descriptions():
    from shufflesim.mechanisms.central import CentralGaussian, CentralLaplace

    found = kinds()
    builtin = {"biswas": BiswasCount, "clones": Clones, "krr": KRR, "rr2": RR2, "central-laplace": CentralLaplace,
               "central-gaussian": CentralGaussian}
    assert {k: found[k] for k in builtin} == builtin  # (later issues add more)
    for cls in kinds().values():
        assert cls.methods and cls.flags and cls.summary


@dataclass(frozen=True)
class _LocalRR(Mechanism):
    """Binary randomised response of ONE user, unshuffled: δ(ε) = max(0, (e^{ε0} − e^{ε})/(e^{ε0} + 1))."""

    kind: ClassVar[str] = "local-rr-test"
    methods: ClassVar[tuple[str, ...]] = ("tight",)
    n: int
    eps0: float

    def pair(self, method, tail_bound=None):
        p = 1.0 / (math.exp(self.eps0) + 1.0)
        return PMFPair(np.log([1 - p, p]), np.log([p, 1 - p]), name="local-rr")


def test_a_new_description_is_accountable_without_touching_the_accountant():
    for eps0, eps in ((1.0, 0.0), (1.0, 0.4), (2.0, 1.5), (2.0, 2.5)):
        (r,) = account(_LocalRR(1, eps0), eps=[eps]).results
        exact = max(0.0, (math.exp(eps0) - math.exp(eps)) / (math.exp(eps0) + 1.0))
        assert r.delta_lower <= exact * (1 + 1e-12) + 1e-300
        assert exact <= r.delta_upper * (1 + 1e-12) + 1e-300
        assert r.delta_upper - r.delta_lower <= 1e-12


def test_protocol_mechanism_is_what_privacy_was_certified_on():
    proto = registry.create("krr", 5000, k=4, eps0=1.0, adversary="weak")
    mech = proto.mechanism()
    assert mech == KRR.from_eps0(5000, 4, 1.0, "weak")
    (r,) = account(mech, delta=[proto.params["delta"]]).results
    assert proto.privacy().eps == pytest.approx(min(r.eps_upper, 1.0), rel=1e-12)

    bl = registry.create("blanket-sum", 20000, eps=1.0, mode="bennett")
    m = bl.mechanism()
    assert (m.k, m.gamma) == (bl.params["k"] + 1, bl.params["gamma"])
    (d,) = account(m, eps=[1.0], method="bennett").results
    assert d.delta_upper <= bl.params["delta"] * (1 + 1e-9)


def test_recursive_protocol_mechanism_is_the_composition_of_its_levels():
    proto = registry.create("recursive-sum", 100000, eps=1.0, messages=2, mode="bennett")
    comp = proto.mechanism()
    assert isinstance(comp, Composition) and len(comp.parts) == 2
    ps, gs = proto.params["precisions"], proto.params["gammas"]
    assert [m.k for m, _ in comp.parts] == [ps[0], ps[1] + 1]
    assert [m.gamma for m, _ in comp.parts] == gs
    # the tight composition certifies at least what basic composition of the Bennett bounds claimed
    (r,) = account(comp, eps=[1.0]).results
    assert r.delta_upper <= proto.params["delta"]


def test_heterogeneous_composition_equals_the_engine_on_the_pairs():
    a, b = KRR(2000, 4, 0.3, "strong"), KRR(2000, 7, 0.2, "strong")
    comp = Composition(((a, 2), (b, 1)))
    assert comp.methods == ("tight", "exact", "blanket")
    eps = [0.3, 0.8]
    got = account(comp, eps=eps).results
    pa, pb = a.pair("tight"), b.pair("tight")
    want = tight_delta([pa, pa, pb], eps)
    for g, w in zip(got, want):
        assert (g.delta_lower, g.delta_upper) == (w.delta_lower, w.delta_upper)
    with pytest.raises(ParameterError, match="does not apply"):
        account(comp, eps=[0.5], method="balle")  # published bounds: homogeneous compositions only
    with pytest.raises(ParameterError, match="at least one"):
        Composition(())


def test_homogeneous_composition_equals_compositions_argument():
    m = RR2(3000, 1.0)
    one = account(Composition(((m, 3),)), delta=[1e-6]).results[0]
    two = account(m, delta=[1e-6], compositions=3).results[0]
    assert (one.eps_lower, one.eps_upper) == (two.eps_lower, two.eps_upper)
    pub = account(Composition(((m, 3),)), delta=[1e-6], method="erlingsson").results[0]
    assert not pub.applicable or pub.eps_upper > two.eps_upper


def test_exact_needs_a_view_not_a_stated_pair():
    with pytest.raises(NotApplicableError, match="strong-1d is a stated pair"):
        account(KRR(5, 3, 0.5, "strong-1d"), eps=[0.5], method="exact")


def test_central_closed_forms_match_numerical_integration():
    from scipy import integrate, stats

    from shufflesim.mechanisms.central import CentralGaussian, CentralLaplace

    def hockey(p, q, eps, lo, hi):
        f = lambda x: max(0.0, p.pdf(x) - math.exp(eps) * q.pdf(x))  # noqa: E731
        return integrate.quad(f, lo, hi, limit=400, epsabs=1e-13, epsrel=1e-10)[0]

    for eps0, eps in ((1.0, 0.0), (1.0, 0.3), (2.0, 1.0)):
        b = 1.0 / eps0
        num = hockey(stats.laplace(0, b), stats.laplace(1, b), eps, -40 * b, 40 * b)
        (r,) = account(CentralLaplace(eps0), eps=[eps]).results
        assert r.delta_lower - 1e-9 <= num <= r.delta_upper + 1e-9
    for sigma, eps in ((1.0, 0.5), (3.0, 0.2), (0.7, 2.0)):
        num = hockey(stats.norm(0, sigma), stats.norm(1, sigma), eps, -40 * sigma, 40 * sigma)
        (r,) = account(CentralGaussian(sigma), eps=[eps]).results
        assert r.delta_lower - 1e-9 <= num <= r.delta_upper + 1e-9
    (e,) = account(CentralGaussian(3.0), delta=[1e-6]).results
    assert CentralGaussian(3.0).delta(e.eps_upper).delta_upper <= 1e-6 < CentralGaussian(3.0).delta(e.eps_lower * 0.999).delta_lower


def test_central_protocols_mechanisms_certify_their_targets():
    proto = registry.create("central-gaussian-hist", 1000, k=5, eps=1.0, delta=1e-6)
    (r,) = account(proto.mechanism(), eps=[1.0]).results
    assert r.delta_upper <= 1e-6 * (1 + 1e-9)
    lap = registry.create("central-laplace-hist", 1000, k=5, eps=0.5)
    (d,) = account(lap.mechanism(), eps=[0.5]).results
    assert d.delta_upper == 0.0
