"""Published analytic and numerical amplification bounds for shuffled mechanisms, composition theorems and
transforms (issue 3, "Published bounds").

Every bound is a pair of functions, ``<method>_delta(eps, ...)`` returning a
:class:`~shufflesim.accounting.model.results.DeltaBound` and ``<method>_eps(delta, ...)`` returning an
:class:`~shufflesim.accounting.model.results.EpsBound`, or :class:`~shufflesim.accounting.model.results.NotApplicable`
with a one-line reason outside the bound's validity conditions.  ``method`` is one of

    balle, bennett, hoeffding, erlingsson, feldman, feldman-numerical, biswas

Only ``feldman-numerical`` reports a lower bound (on the delta of Feldman et al.'s pair).  ``biswas`` is
the published formula of seed 003, implemented exactly as printed and NOT a certified bound.
"""

from shufflesim.accounting.bounds.balle import (
    BennettVariant,
    KRRBlanket,
    LaplaceBlanket,
    balle_delta,
    balle_eps,
    balle_gamma,
    bennett_delta,
    bennett_eps,
    bennett_gamma,
    hoeffding_delta,
    hoeffding_eps,
)
from shufflesim.accounting.bounds.biswas import biswas_delta, biswas_eps, biswas_log_pmfs, biswas_privacy_loss
from shufflesim.accounting.bounds.composition import (
    Composition,
    advanced_composition,
    advanced_eps_per_round,
    basic_composition,
    best_composition,
    compose_delta,
    compose_eps,
)
from shufflesim.accounting.bounds.erlingsson import erlingsson_delta, erlingsson_eps
from shufflesim.accounting.bounds.feldman import (
    feldman_delta,
    feldman_eps,
    feldman_numerical_delta,
    feldman_numerical_eps,
    feldman_numerical_log_delta,
)
from shufflesim.accounting.bounds.transforms import dp_from_tv, invert_delta_curve, subsample, subsample_inverse

#: the ``method`` names of the published bounds
METHODS = ("balle", "bennett", "hoeffding", "erlingsson", "feldman", "feldman-numerical", "biswas")

__all__ = [
    "METHODS",
    "BennettVariant",
    "KRRBlanket",
    "LaplaceBlanket",
    "balle_delta",
    "balle_eps",
    "balle_gamma",
    "bennett_delta",
    "bennett_eps",
    "bennett_gamma",
    "hoeffding_delta",
    "hoeffding_eps",
    "erlingsson_delta",
    "erlingsson_eps",
    "feldman_delta",
    "feldman_eps",
    "feldman_numerical_delta",
    "feldman_numerical_eps",
    "feldman_numerical_log_delta",
    "biswas_delta",
    "biswas_eps",
    "biswas_log_pmfs",
    "biswas_privacy_loss",
    "Composition",
    "basic_composition",
    "advanced_composition",
    "best_composition",
    "advanced_eps_per_round",
    "compose_eps",
    "compose_delta",
    "subsample",
    "subsample_inverse",
    "dp_from_tv",
    "invert_delta_curve",
]
