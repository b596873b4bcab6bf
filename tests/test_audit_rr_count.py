"""shufflesim.maths.rr_count: the count of ones of binary randomised response, against enumeration of every
flip pattern (exact rational arithmetic), its windows, and its use by the audits."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from shufflesim import ParameterError
from shufflesim.maths.rr_count import (
    flip_probability,
    rr2_count_pmfs,
    rr_count_pair,
    rr_count_pair_window,
    rr_count_pmf,
    rr_count_window,
)


def _enumerate(bits: list[int], flip: Fraction) -> list[Fraction]:
    """P(count of reported ones = c), summed over all 2^len(bits) flip patterns, exactly."""
    out = [Fraction(0)] * (len(bits) + 1)
    for flips in itertools.product((0, 1), repeat=len(bits)):
        pr = Fraction(1)
        for f in flips:
            pr *= flip if f else 1 - flip
        out[sum(b ^ f for b, f in zip(bits, flips))] += pr
    return out


@pytest.mark.parametrize("zeros,ones,flip", [(3, 2, Fraction(1, 5)), (0, 4, Fraction(7, 10)), (5, 0, Fraction(1, 10)),
                                             (2, 3, Fraction(1, 10**9)), (4, 4, Fraction(1, 2))])
def test_pmf_equals_enumeration(zeros, ones, flip):
    exact = _enumerate([0] * zeros + [1] * ones, flip)
    got = rr_count_pmf(zeros, ones, float(flip))
    assert got.shape == (zeros + ones + 1,)
    for g, e in zip(got, exact):
        assert g == pytest.approx(float(e), rel=1e-13, abs=0.0)


def test_pair_equals_enumeration_with_a_multi_bit_target():
    zeros, ones, bits, flip = 3, 2, 2, Fraction(3, 20)
    P = _enumerate([0] * zeros + [1] * ones + [0] * bits, flip)
    Q = _enumerate([0] * zeros + [1] * ones + [1] * bits, flip)
    gp, gq = rr_count_pair(zeros, ones, float(flip), bits)
    np.testing.assert_allclose(gp, [float(x) for x in P], rtol=1e-13, atol=0)
    np.testing.assert_allclose(gq, [float(x) for x in Q], rtol=1e-13, atol=0)
    c0, wp, wq = rr_count_pair_window(zeros, ones, float(flip), bits)
    np.testing.assert_array_equal(gp[c0: c0 + wp.size], wp)
    np.testing.assert_array_equal(gq[c0: c0 + wq.size], wq)


def test_rr2_parametrisation_and_tiny_flip_probabilities():
    # eps0 = 30: the flip probability is 9.4e-14; the count 0 needs the target's and both ones' bits flipped
    f = flip_probability(30.0)
    assert f == pytest.approx(1.0 / (math.exp(30.0) + 1.0), rel=1e-15)
    P, Q = rr2_count_pmfs(5, 30.0, 2)
    assert Q[0] == pytest.approx(f**3 * (1 - f) ** 2, rel=1e-13)  # 1 - f would lose 1e-4 of it (scipy at p = 1 - f)
    assert P.sum() == pytest.approx(1.0, abs=1e-14) and Q.sum() == pytest.approx(1.0, abs=1e-14)  # 6 terms, each to 1e-15
    assert flip_probability(1e4) == 0.0 and flip_probability(0.0) == 0.5


def test_windows_keep_every_representable_mass_of_a_large_count():
    c0, w = rr_count_window(10**6, 0, 0.01)
    full = rr_count_pmf(10**6, 0, 0.01)
    assert w.size < 10**4 and np.all(full[:c0] == 0) and np.all(full[c0 + w.size:] == 0)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)


def test_bad_arguments():
    with pytest.raises(ParameterError, match="ones"):
        rr2_count_pmfs(5, 1.0, 5)
    with pytest.raises(ParameterError, match="flip"):
        rr_count_pmf(3, 3, 1.5)
    with pytest.raises(ParameterError, match="bits"):
        rr_count_pair(3, 3, 0.1, 0)
