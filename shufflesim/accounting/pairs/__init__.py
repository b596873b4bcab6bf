"""Neighbouring pairs (P, Q) of shuffled mechanisms, as :class:`~shufflesim.accounting.pld.pmf_pair.PMFPair`.

Each constructor returns the log-PMFs of a sufficient statistic of the adversary's view under the two
neighbouring data sets (docs/theory.md#pairs):

==============================  =====================================================================
:func:`rr2_pair`                shuffled binary randomised response (Koskela et al., seed 001 §4, eq 4.1)
:func:`krr_pair`                shuffled k-RR: ``adversary="strong-1d"`` (seed 000 eq 3.1 / seed 001
                                eq 5.1), ``"strong"`` (full view, docs/theory.md#pairs-krr-strong), ``"weak"``
                                (seed 001 Definition 9, Theorem 10, Appendix A)
:func:`clones_pair`             general eps0-LDP randomisers via Feldman et al.'s clones (seed 001 §6,
                                eqs 6.1-6.8, Lemmas B.1-B.3)
:func:`biswas_count_pair`       released count of x0 in Biswas et al.'s fixed-data set setting
                                (seed 003 Definition IV.2, Appendix A eqs 11-13)
==============================  =====================================================================

Truncation.  For large n only outcomes whose mass matters are kept.  Every pair is "others' latent
variables + the target's contribution": a window W of the latent variables of the other n-1 users is
chosen with a Chernoff (relative-entropy) tail bound, and the outcome set is every outcome that a latent
value in W can produce, whatever the target reports.  Hence the mass of outcomes dropped is at most
P(latent not in W) under *both* data sets; that certified bound is stored in ``tail_p``/``tail_q`` (an
accountant adds it to its upper bound on delta).  Kept outcomes carry their exact probabilities
(computed in closed form), so delta computed over the kept outcomes alone is a valid lower bound.
(Exception, documented there: :func:`biswas_count_pair`'s kept masses are exact up to 1e-20 of its
tail bound.)

Row form.  The krr strong/weak and clones pairs all have an ancillary "row" statistic (same law
under P and Q) and, within a row, a Bin(N, 1/2) column with a loss monotone in the column.
``as_rows=True`` returns them as :class:`~shufflesim.accounting.rows.binomial_rows.BinomialRows`: ``log_delta(eps)`` is the exact single-use
delta in O(rows) with binomial tail functions (no atoms, no grid), and ``iter_atoms()`` yields the
atoms block by block so an accountant can place 1e7-1e8 atoms on its grid without holding them all.
Their PMFPair constructors expand the rows.

The numerics the constructors share live elsewhere: the binomial PMF, Chernoff windows and row blocks
in :mod:`shufflesim.accounting.numerics.binomial`, the row form in :mod:`shufflesim.accounting.rows.binomial_rows`,
truncation knobs and ragged-row helpers in :mod:`.common`.  This package only re-exports the
constructors.
"""

from __future__ import annotations

from shufflesim.accounting.rows.binomial_rows import BinomialRows
from shufflesim.accounting.pairs.biswas import biswas_count_pair
from shufflesim.accounting.pairs.clones import clones_pair
from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_1D, DEFAULT_TAIL_BOUND_MD
from shufflesim.accounting.pairs.krr import (
    krr_eps0_from_gamma,
    krr_gamma_from_eps0,
    krr_pair,
    krr_strong_1d_pair,
    krr_strong_pair,
    krr_weak_pair,
)
from shufflesim.accounting.pairs.rr2 import rr2_pair

__all__ = [
    "DEFAULT_TAIL_BOUND_1D",
    "DEFAULT_TAIL_BOUND_MD",
    "BinomialRows",
    "rr2_pair",
    "krr_pair",
    "krr_strong_1d_pair",
    "krr_strong_pair",
    "krr_weak_pair",
    "krr_gamma_from_eps0",
    "krr_eps0_from_gamma",
    "clones_pair",
    "biswas_count_pair",
]
