"""Issue 28, second defect: ``simulate recursive-sum --n 20000 --eps 1e-310 --trials 3`` ended in a traceback
(ZeroDivisionError: ε² underflowed to 0 behind an ``eps > 0`` guard in a second copy of Theorem C.1's blanket γ).

The formula is now computed once (:func:`shufflesim.accounting.bounds.balle.c1_gamma_terms`), where no ε can
divide by an underflowed zero, and every summation protocol refuses an ε that small in one line (exit code 2).
Each ε below is subnormal or near it: 1e-310 and 1e-320 are subnormal, 5e-324 the smallest positive double.
"""

from __future__ import annotations

import math

import pytest

from shufflesim.accounting.bounds import balle
from shufflesim.cli.main import main
from shufflesim.errors import InfeasibleError, ParameterError, ShufflesimError

TINY = (1e-310, 1e-320, 5e-324)
#: every protocol of the registry with a central ε parameter that sums numbers
SUMMATION = ("blanket-sum", "recursive-sum", "cheu-sum", "ikos-sum", "local-rr-sum", "local-laplace-sum",
             "central-laplace-sum", "central-dlap-sum")


def test_every_summation_protocol_is_listed():
    from shufflesim.pipeline import registry

    sums = {name for name in registry.names() if name.endswith("-sum")}
    assert sums == set(SUMMATION)


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("eps", TINY)
def test_the_issue_command_is_refused_in_one_line(capsys, eps):
    code, out, err = _cli(capsys, "simulate", "recursive-sum", "--n", "20000", "--eps", repr(eps), "--trials", "3")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert f"eps must be >= {balle.MIN_EPS:g}" in err and "Traceback" not in err + out


@pytest.mark.parametrize("eps", TINY)
@pytest.mark.parametrize("protocol", SUMMATION)
def test_every_summation_protocol_refuses_a_tiny_eps_in_one_line(capsys, protocol, eps):
    code, out, err = _cli(capsys, "simulate", protocol, "--n", "2000", "--eps", repr(eps), "--trials", "2")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("mode", ["paper", "bennett", "tight", "optimised"])
def test_recursive_sum_every_mode_refuses(mode):
    from shufflesim.pipeline import registry

    with pytest.raises(ParameterError, match=f"eps must be >= {balle.MIN_EPS:g}"):
        registry.create("recursive-sum", 20000, eps=1e-310, mode=mode)


@pytest.mark.parametrize("eps", TINY)
@pytest.mark.parametrize("protocol", SUMMATION)
def test_library_refuses_with_a_shufflesim_error(protocol, eps):
    from shufflesim.pipeline import registry

    with pytest.raises(ShufflesimError):
        registry.create(protocol, 2000, eps=eps)


# ---- the one formula: no input divides by an underflowed zero ----
@pytest.mark.parametrize("eps", (*TINY, 1e-160))
def test_c1_gamma_is_infinite_where_it_leaves_the_double_range(eps):
    first, second = balle.c1_gamma_terms(20000, 3, eps, 1e-9)
    assert first == math.inf  # eps^2 (n-1) underflows, or 14k log(2/delta) / it overflows
    assert second > 1.0
    assert balle.c1_gamma_terms(20000, 3, 1e-154, 1e-9)[0] > 1e300  # just inside the range: finite, huge


@pytest.mark.parametrize("eps", (*TINY, 1e-160))
def test_balle_gamma_refuses_as_infeasible(eps):
    """(1e-160 used to raise OverflowError: the message's ceil of an infinite gamma.)"""
    with pytest.raises(InfeasibleError):
        balle.balle_gamma(20000, 3, eps, 1e-9)


@pytest.mark.parametrize("eps", TINY)
def test_bennett_gamma_near_answers_soundly(eps):
    """No blanket γ < 1 certifies so small an ε by the Bennett bound: the search returns γ = 1 (evaluated)."""
    g = balle.bennett_gamma_near(20000, 3, eps, 1e-9)
    d = balle.bennett_delta(eps, n=20000, randomiser=balle.KRRBlanket(k=3, gamma=g)).delta_upper
    assert d <= 1e-9 and g == balle.bennett_gamma(20000, 3, eps, 1e-9) == 1.0


@pytest.mark.parametrize("eps_j", (5e-324 / 2, 5e-324, 1e-310))
def test_recursive_pmax_is_zero_not_a_division_by_zero(eps_j):
    from shufflesim.protocols.recursive_sum import closed_form_pmax

    assert closed_form_pmax(20000, eps_j, 1e-9) == 0.0


def test_the_formula_is_computed_once():
    """balle_gamma and the recursive rule's p_max are Theorem C.1's formula, written out here independently
    (gamma = max(14 k log(2/delta)/((n-1) eps^2), 27 k/((n-1) eps)); p_max = the largest real k with gamma <= 1), and
    the blanket protocols' Bennett-gamma search is balle's."""
    from shufflesim.protocols import _blanket
    from shufflesim.protocols.recursive_sum import closed_form_pmax

    def c1(n, k, eps, delta):
        return max(14.0 * k * math.log(2.0 / delta) / ((n - 1) * eps * eps), 27.0 * k / ((n - 1) * eps))

    assert _blanket.bennett_gamma_near is balle.bennett_gamma_near
    for n, k, eps, delta in [(10**4, 3, 0.5, 1e-8), (10**6, 17, 1.0, 1e-12), (5000, 2, 0.05, 1e-3)]:
        want = c1(n, k, eps, delta)
        if want > 1.0:
            with pytest.raises(InfeasibleError):
                balle.balle_gamma(n, k, eps, delta)
        else:
            assert balle.balle_gamma(n, k, eps, delta) == pytest.approx(want, rel=1e-15)
        assert closed_form_pmax(n, eps, delta) == pytest.approx(1.0 / c1(n, 1, eps, delta), rel=1e-15)
