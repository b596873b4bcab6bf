"""Exact composition of privacy loss distributions by pairwise convolution of their atoms (no grid).

The composed pair of (P_i, Q_i) is (P_1 x ... x P_r, Q_1 x ... x Q_r) (Koskela, Heikkilä, Honkela 2021,
arXiv:2106.00477, Theorem 5): each direction's atoms are summed pairwise (losses add, masses multiply),
equal float losses merged.  Feasible only for small supports; used by the tight accountant for small
compositions, as its accuracy fallback for 2-fold compositions, and as a cross-check of the FFT.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.accounting.numerics.logspace import NEG_INF, U, compose_log_extra, exp_up, group_log_sum
from shufflesim.accounting.pld.distribution import LossAtoms, PrivacyLossDistribution


def compose_two(a: LossAtoms, b: LossAtoms, merge: bool) -> LossAtoms:
    """One direction of the composition of two components: atoms summed pairwise, masses multiplied.

    Infinite-loss mass and dropped tails compose as prod(f_i + m_i) - prod f_i; the loss tolerance
    and mass rounding add up (plus the sort-merge rounding when ``merge``)."""
    losses = (a.losses[:, None] + b.losses[None, :]).ravel()
    log_mass = (a.log_mass[:, None] + b.log_mass[None, :]).ravel()
    order = np.argsort(losses, kind="stable")
    losses = losses[order]
    log_mass = log_mass[order]
    err = a.mass_rel_err + b.mass_rel_err + 4 * U
    if merge:
        losses, log_mass, e2 = group_log_sum(losses, log_mass)
        err += e2
    log_inf = compose_log_extra([a.log_finite_mass, b.log_finite_mass], [a.log_inf_mass, b.log_inf_mass])
    with np.errstate(divide="ignore"):
        lt = [math.log(t) if t > 0 else NEG_INF for t in (a.tail, b.tail)]
    tail = exp_up(compose_log_extra([a.log_kept_mass, b.log_kept_mass], lt)) * (1 + 1e-9) if (a.tail or b.tail) else 0.0
    absmax = float(np.max(np.abs(losses))) if losses.size else 0.0
    tol = a.loss_tol + b.loss_tol + 2 * U * absmax
    return LossAtoms(losses, log_mass, log_inf, min(tail, 1.0), tol, err)


def compose_atoms_exact(components: Sequence[tuple[LossAtoms, int]], *, max_atoms: int = 4_000_000,
                        merge: bool = True) -> LossAtoms:
    """Exact composition of one direction by pairwise convolution of atoms (no grid)."""
    seq: list[LossAtoms] = []
    for a, n in components:
        seq.extend([a] * int(n))
    if not seq:
        raise ParameterError("nothing to compose: the list of components is empty")
    size = 1
    for a in seq:
        size *= max(a.size, 1)
        if size > max_atoms:
            raise ParameterError(
                f"exact composition would need more than max_atoms={max_atoms} atoms; use the FFT accountant"
            )
    out = seq[0]
    for a in seq[1:]:
        out = compose_two(out, a, merge)
    return out


def compose_exact(plds: Sequence[PrivacyLossDistribution], *, compositions: int = 1,
                  max_atoms: int = 4_000_000, merge: bool = True) -> PrivacyLossDistribution:
    """Exact PLD of the composition of ``plds`` (each ``compositions`` times), by pairwise convolution.

    The composed pair is (P_1 x ... x P_r, Q_1 x ... x Q_r) (seed 001 Theorem 5); feasible only for small
    supports (the product of the support sizes must not exceed ``max_atoms``).
    """
    plds = list(plds)
    if not plds:
        raise ParameterError("compose_exact needs at least one PrivacyLossDistribution")
    pq = compose_atoms_exact([(p.pq, compositions) for p in plds], max_atoms=max_atoms, merge=merge)
    qp = compose_atoms_exact([(p.qp, compositions) for p in plds], max_atoms=max_atoms, merge=merge)
    names = "+".join(p.name for p in plds)
    return PrivacyLossDistribution(pq, qp, f"({names})^{compositions}" if compositions > 1 else names,
                                   {"components": [p.name for p in plds], "compositions": compositions},
                                   "exact pairwise composition")
