"""Export of a shufflesim PLD to Google's ``dp_accounting`` (optional extra ``shufflesim[dp-accounting]``).

So that a shuffle-model release can be composed with the rest of a pipeline accounted with
``dp_accounting``.  The export places the atoms on ``dp_accounting``'s grid exactly as its own
``from_two_probability_mass_functions`` does (pessimistic: losses rounded up, mass below
``log_mass_truncation_bound`` and any truncated tail moved to the infinite-loss mass; optimistic:
rounded down, such mass dropped), but builds the dense PMFs from arrays instead of dictionaries.

Direction convention: ``dp_accounting`` computes the loss log(mu_upper/mu_lower) under mu_upper; its
first ("remove") PMF is omega_{P/Q} of the shufflesim PLD (mu_upper = P) and its second ("add") PMF
is omega_{Q/P}.  A symmetric PLD is exported as a symmetric ``dp_accounting`` PLD.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.core.checks import check_positive
from shufflesim.errors import ParameterError
from shufflesim.accounting.numerics.logspace import NEG_INF, log_sum
from shufflesim.accounting.pld.distribution import LossAtoms, PrivacyLossDistribution
from shufflesim.accounting.pld.pmf_pair import PMFPair

#: largest dense grid exported (above this a sparse PMF is used)
_MAX_DENSE = 2_000_000


def _require_dp_accounting():
    try:
        from dp_accounting.pld import pld_pmf, privacy_loss_distribution
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ParameterError(
            "exporting to dp_accounting needs the optional package dp-accounting; "
            "install it with `pip install shufflesim[dp-accounting]`"
        ) from exc
    return pld_pmf, privacy_loss_distribution


def _one_direction(pld_pmf, atoms: LossAtoms, h: float, pessimistic: bool, log_trunc: float):
    lm = atoms.log_mass
    L = atoms.losses
    small = lm <= log_trunc
    inf_mass = atoms.inf_mass
    if pessimistic:
        inf_mass += atoms.tail + (math.exp(log_sum(lm[small])) if np.any(small) else 0.0)
    keep = ~small & (lm > NEG_INF)
    L, lm = L[keep], lm[keep]
    if L.size == 0:
        return pld_pmf.SparsePLDPmf({}, h, min(inf_mass, 1.0), pessimistic)
    if pessimistic:
        k = np.ceil((L + atoms.loss_tol) / h).astype(np.int64)
    else:
        k = np.floor((L - atoms.loss_tol) / h).astype(np.int64)
    kmin, kmax = int(k.min()), int(k.max())
    probs = np.exp(lm)
    if kmax - kmin + 1 <= _MAX_DENSE:
        dense = np.bincount(k - kmin, weights=probs, minlength=kmax - kmin + 1)
        return pld_pmf.DensePLDPmf(h, kmin, dense, min(inf_mass, 1.0), pessimistic)
    uk, inv = np.unique(k, return_inverse=True)
    sums = np.bincount(inv, weights=probs)
    return pld_pmf.SparsePLDPmf(dict(zip(uk.tolist(), sums.tolist())), h, min(inf_mass, 1.0), pessimistic)


def to_dp_accounting(
    pld: PrivacyLossDistribution | PMFPair,
    *,
    value_discretization_interval: float = 1e-4,
    pessimistic_estimate: bool = True,
    log_mass_truncation_bound: float = -math.inf,
):
    """A ``dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution`` for ``pld``.

    Arguments mirror ``dp_accounting``'s ``from_two_probability_mass_functions``.  Import of
    ``dp_accounting`` happens here; a ParameterError explains how to install it if missing.
    """
    pld_pmf, pld_mod = _require_dp_accounting()
    if isinstance(pld, PMFPair):
        pld = PrivacyLossDistribution.from_pair(pld)
    if not isinstance(pld, PrivacyLossDistribution):
        raise ParameterError(f"pld must be a PrivacyLossDistribution or PMFPair; got {type(pld).__name__}")
    h = check_positive("value_discretization_interval", value_discretization_interval)
    log_trunc = float(log_mass_truncation_bound)
    if math.isnan(log_trunc) or log_trunc > 0:
        raise ParameterError(f"log_mass_truncation_bound must be <= 0 or -inf; got {log_mass_truncation_bound!r}")
    remove = _one_direction(pld_pmf, pld.pq, h, bool(pessimistic_estimate), log_trunc)
    add = None if pld.symmetric else _one_direction(pld_pmf, pld.qp, h, bool(pessimistic_estimate), log_trunc)
    return pld_mod.PrivacyLossDistribution(remove, add)
