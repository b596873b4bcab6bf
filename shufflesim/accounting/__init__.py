"""Privacy accounting for shuffled mechanisms.

* :mod:`.pairs` — neighbouring pairs (P, Q) of shuffled mechanisms as :class:`PMFPair` objects;
* :mod:`.pld`, :mod:`.fft`, :mod:`.tails`, :mod:`.tight` — the tight PLD accountant with certified
  two-sided bounds (single use exact; composition by FFT with certified error);
* :mod:`.bounds` — the published analytic and numerical bounds, composition theorems and transforms;
* :mod:`.bruteforce` — enumeration oracles for tiny n;
* :mod:`.calibrate` — safe-side inverse problems; :mod:`.account` — one front end for all of them;
* :mod:`.interop` — export to Google's dp_accounting.
"""

import importlib

# ``account`` and ``calibrate`` are both submodules and functions: bind the functions eagerly (both
# modules are light; the engine is imported on first use), so that importing the submodule elsewhere
# cannot shadow them.
from shufflesim.accounting.account import account
from shufflesim.accounting.numerics.invert import calibrate

#: public name -> the module that defines it; imported on first access (PEP 562), so that importing one
#: small module of this package (e.g. the mechanism interface) does not import the whole engine
_EXPORTS = {
    "AccountReport": "account", "Calibrated": "account", "account": "account", "calibrate_mechanism": "account",
    "Composition": "mechanism", "Mechanism": "mechanism", "Relation": "mechanism",
    "Calibration": "calibrate", "calibrate": "calibrate", "eps_interval_for_delta": "calibrate",
    "compose_exact": "exact_compose", "to_dp_accounting": "interop",
    "LossAtoms": "pld", "PrivacyLossDistribution": "pld", "PMFPair": "pmf_pair",
    "DeltaBound": "results", "EpsBound": "results", "NotApplicable": "results", "PrivacyGuarantee": "results",
    "tail_delta_interval": "tails",
    "Numerics": "tight", "TightAccountant": "tight", "tight_delta": "tight", "tight_epsilon": "tight",
}
_SUBPACKAGES = ("bounds", "pairs")

__all__ = [*_EXPORTS, *_SUBPACKAGES]


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
