"""Privacy accounting for shuffled mechanisms.

* :mod:`.pairs` — neighbouring pairs (P, Q) of shuffled mechanisms as :class:`PMFPair` objects;
* :mod:`.pld`, :mod:`.fft`, :mod:`.tails`, :mod:`.tight` — the tight PLD accountant with certified
  two-sided bounds (single use exact; composition by FFT with certified error);
* :mod:`.bounds` — the published analytic and numerical bounds, composition theorems and transforms;
* :mod:`.bruteforce` — enumeration oracles for tiny n;
* :mod:`.calibrate` — safe-side inverse problems; :mod:`.account` — one front end for all of them;
* :mod:`.interop` — export to Google's dp_accounting.
"""

from shufflesim.accounting import bounds, pairs
from shufflesim.accounting.account import AccountReport, Calibrated, account, calibrate_mechanism
from shufflesim.accounting.mechanism import Composition, Mechanism, Relation
from shufflesim.accounting.calibrate import Calibration, calibrate, eps_interval_for_delta
from shufflesim.accounting.exact_compose import compose_exact
from shufflesim.accounting.interop import to_dp_accounting
from shufflesim.accounting.pld import LossAtoms, PrivacyLossDistribution
from shufflesim.accounting.pmf_pair import PMFPair
from shufflesim.accounting.results import DeltaBound, EpsBound, NotApplicable, PrivacyGuarantee
from shufflesim.accounting.tails import tail_delta_interval
from shufflesim.accounting.tight import Numerics, TightAccountant, tight_delta, tight_epsilon

__all__ = [
    "AccountReport", "account", "Calibrated", "calibrate_mechanism", "Composition", "Mechanism", "Relation", "Calibration", "calibrate",
    "eps_interval_for_delta", "compose_exact", "to_dp_accounting", "LossAtoms", "PrivacyLossDistribution",
    "PMFPair", "DeltaBound", "EpsBound", "NotApplicable", "PrivacyGuarantee", "tail_delta_interval",
    "Numerics", "TightAccountant", "tight_delta", "tight_epsilon", "bounds", "pairs",
]
