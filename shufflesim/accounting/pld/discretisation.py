"""The accountant's discretisation strategies: which placements to compose and how to refine the grid.

A :class:`Discretisation` is chosen once (from ``Numerics.discretisation``, a name or an instance) and
passed down to every direction of the FFT accountant, in the way prv_accountant (Gopi, Lee, Wutschitz
2021, arXiv:2106.02848) makes its discretisers and composers classes:

* :class:`SplitDiscretisation` ("split", the default): one placement, :data:`~.placement.SPLIT`, giving
  both bounds with a width second order in h; pairs in row form are streamed onto a base grid without
  being expanded, and large supports are split once onto a fine base grid;
* :class:`Lemma6Discretisation` ("lemma6"): losses rounded up for the upper bound and down for the lower
  bound (Koskela, Heikkilä, Honkela 2021, arXiv:2106.00477, Lemma 6), first order in h, two FFTs.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Callable

from shufflesim.errors import ParameterError
from shufflesim.accounting.pld.placement import ROUND_DOWN, ROUND_UP, SPLIT, Placement


#: a refined grid aims at this share of the width needed (Numerics.refine_aim's default)
REFINE_AIM = 0.4


class Discretisation(ABC):
    """A discretisation strategy of the tight accountant (stateless; use :func:`discretisation_from`)."""

    name: str = ""
    #: the grid PMFs composed per direction (one FFT each)
    placements: tuple[Placement, ...] = ()
    #: pairs in row form can be placed by streaming their atoms (else they are expanded first),
    #: and very large components can be split once onto a fine base grid
    uses_base_grid: bool = False
    #: how the notes describe the bounds
    description: str = ""

    @abstractmethod
    def refined_spacing(self, h: float, need: float, disc: float, *, ratio: Callable[[], float], tau: float,
                        n_total: int, aim: float = REFINE_AIM) -> float:
        """A grid spacing expected to bring the discretisation part ``disc`` of the width at spacing
        ``h`` below ``need`` (before the caller's caps): to about ``aim`` x ``need`` by the strategy's model of
        the width (a margin for the model's error); ``ratio()`` estimates P(S > eps)/delta
        (called only by strategies that need it)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SplitDiscretisation(Discretisation):
    """Mass- and Q-mass-preserving split (see :mod:`.placement`); width second order in h."""

    name = "split"
    placements = (SPLIT,)
    uses_base_grid = True
    description = "split placement (upper bound; lower = upper - second-order correction)"

    def refined_spacing(self, h, need, disc, *, ratio, tau, n_total, aim=REFINE_AIM):
        return h * math.sqrt(aim * need / disc)


class Lemma6Discretisation(Discretisation):
    """omega^R / omega^L of Koskela et al. (arXiv:2106.00477, Lemma 6); width first order in h."""

    name = "lemma6"
    placements = (ROUND_UP, ROUND_DOWN)
    uses_base_grid = False
    description = "pessimistic (omega^R) upper / optimistic (omega^L) lower"

    def refined_spacing(self, h, need, disc, *, ratio, tau, n_total, aim=REFINE_AIM):
        # the gap is about n h (P(S > eps) - delta): match both the observed width and that model
        h_disc = aim * need / disc * h
        h_model = aim * tau / (n_total * max(ratio() - 1.0, 1e-6))
        return min(h_disc, h_model)


SPLIT_DISCRETISATION = SplitDiscretisation()
LEMMA6_DISCRETISATION = Lemma6Discretisation()
DISCRETISATIONS = {d.name: d for d in (SPLIT_DISCRETISATION, LEMMA6_DISCRETISATION)}


def discretisation_from(value: "str | Discretisation") -> Discretisation:
    """The strategy named by ``value`` ("split", "lemma6") or ``value`` itself."""
    if isinstance(value, Discretisation):
        return value
    if isinstance(value, str) and value in DISCRETISATIONS:
        return DISCRETISATIONS[value]
    raise ParameterError(f"discretisation must be 'split' or 'lemma6'; got {value!r}")
