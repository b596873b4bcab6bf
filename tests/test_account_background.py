"""Issue 21: a composed question's genuine lower end runs beside the upper end (accounting.account's
_lower_in_background); the answer is the same as computed in line, and the concurrency is off where memory is tight."""

from __future__ import annotations

import importlib

import pytest

from shufflesim.mechanisms import Clones

A = importlib.import_module("shufflesim.accounting.account")  # the module (the package re-exports the function)


def test_background_lower_end_equals_the_inline_one(monkeypatch):
    mech = Clones(2000, 1.0)
    monkeypatch.setattr(A, "CONCURRENT_MIN_MEMORY", 0)
    if A._lower_in_background(mech, "tight", None, [1e-6], 3) is None:
        pytest.skip("one CPU: the lower end is computed in line")
    both = A.account(mech, delta=1e-6, compositions=3).results[0]
    monkeypatch.setattr(A, "CONCURRENT_MIN_MEMORY", 1 << 62)  # more than any machine: in line
    assert A._lower_in_background(mech, "tight", None, [1e-6], 3) is None
    inline = A.account(mech, delta=1e-6, compositions=3).results[0]
    # exactness is the point: the same computation in another thread gives the same floats
    assert (both.eps_lower, both.eps_upper) == (inline.eps_lower, inline.eps_upper)


def test_background_errors_reach_the_caller():
    def boom():
        raise ValueError("lower end failed")

    with pytest.raises(ValueError, match="lower end failed"):
        A._Background(boom).result()
    assert A._Background(lambda x: x + 1, 1).result() == 2
