"""Euclidean projection onto the probability simplex: property tests (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from shufflesim.maths.simplex import project_to_simplex, total_variation

vectors = st.integers(min_value=1, max_value=30).flatmap(
    lambda k: arrays(np.float64, k, elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False))
)


@settings(max_examples=300, deadline=None)
@given(vectors)
def test_lands_on_simplex(v):
    p = project_to_simplex(v)
    assert np.all(p >= 0)
    assert abs(p.sum() - 1.0) <= 1e-9 * max(1.0, np.abs(v).max())


@settings(max_examples=300, deadline=None)
@given(vectors)
def test_idempotent(v):
    p = project_to_simplex(v)
    np.testing.assert_allclose(project_to_simplex(p), p, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(vectors, st.integers(0, 2**32 - 1))
def test_is_the_nearest_point(v, seed):
    """Variational characterisation: <v - p, q - p> <= 0 for every q in the simplex, hence |v-p| <= |v-q|."""
    p = project_to_simplex(v)
    q = np.random.default_rng(seed).dirichlet(np.ones(v.size), size=64)
    scale = 1e-9 * max(1.0, float(np.abs(v).max())) ** 2
    assert np.all((q - p) @ (v - p) <= scale)
    assert np.all(np.linalg.norm(v - p) <= np.linalg.norm(v - q, axis=1) + 1e-9 * max(1.0, np.abs(v).max()))


def test_points_of_the_simplex_are_fixed():
    p = np.array([0.2, 0.0, 0.5, 0.3])
    np.testing.assert_allclose(project_to_simplex(p), p, atol=1e-15)


def test_rows_projected_independently():
    v = np.array([[2.0, 0.0], [0.5, 0.5], [-1.0, 3.0]])
    np.testing.assert_allclose(project_to_simplex(v), [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])


def test_total_variation():
    assert total_variation([0.5, 0.5], [1.0, 0.0]) == 0.5
