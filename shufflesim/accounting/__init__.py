"""Privacy accounting for shuffled mechanisms: certified two-sided (ε, δ) answers.

The package is one stack of layers; a module imports only from its own layer or the layers below it
(pyproject.toml's import-linter contract "accounting layers" checks this in the tests)::

    account.py             the front end: account(mechanism, eps=…|delta=…, method=…) -> AccountReport
      compare.py           every applicable method side by side; ``best`` (the smallest certified upper end)
      interop.py           export to Google's dp_accounting
    exact/                 answers from enumeration or exact formulas over data sets: exact binary RR at
                           every n up to 1e6, brute-force oracles for tiny n, explicit data sets' lower ends
    engines/               the pair-based accountant: tight.py (single use exact, certified FFT
                           composition), estimates.py (cost before work), bucketed_weak.py
    pairs/   bounds/       neighbouring pairs (P, Q) of shuffled mechanisms | the published bounds,
                           composition theorems and transforms (each module cites its paper)
    rows/                  pairs in row form: exact single use, streamed placement, certified bucket rows
    pld/                   privacy loss distributions: atoms, grid placement, FFT composition, MGF tails
    model/                 values: mechanism descriptions (Mechanism, Relation, Composition), the answer
                           types (DeltaBound, EpsBound, NotApplicable), the question validator
    numerics/              log-space arithmetic with directed rounding, the binomial log-PMF and its
                           error model, the one safe-side inverter (invert.py), the thread pool

A mechanism description (:mod:`shufflesim.mechanisms`, or a protocol's ``mechanism()``) says what is
accounted; the layers below say how.  Every answer is an interval ``lower <= true value <= upper``.
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
    "Composition": "model.mechanism", "Mechanism": "model.mechanism", "Relation": "model.mechanism",
    "Calibration": "numerics.invert", "calibrate": "numerics.invert", "eps_interval_for_delta": "numerics.invert",
    "compose_exact": "pld.exact_compose", "to_dp_accounting": "interop",
    "LossAtoms": "pld.distribution", "PrivacyLossDistribution": "pld.distribution", "PMFPair": "pld.pmf_pair",
    "DeltaBound": "model.results", "EpsBound": "model.results", "NotApplicable": "model.results",
    "PrivacyGuarantee": "model.results",
    "tail_delta_interval": "pld.tails",
    "Numerics": "engines.tight", "TightAccountant": "engines.tight", "tight_delta": "engines.tight",
    "tight_epsilon": "engines.tight",
}
_SUBPACKAGES = ("numerics", "model", "pld", "rows", "pairs", "bounds", "engines", "exact")

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
