"""Local randomisers: the part of a protocol that runs on each user's device.

A randomiser is vectorised over users: ``randomise(x, rng)`` takes the n users' inputs as one numpy
array and returns an ``(n, m)`` array, row i holding user i's m messages.  It declares its message space,
m, its local privacy ε0 where defined, and — for the randomised-response family — a ``rr_family``
descriptor that accountants use to choose the right neighbouring pair.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np


@dataclass(frozen=True)
class RRFamily:
    """Marks a randomiser as k-ary randomised response with blanket probability ``gamma``.

    ``k`` is the size of the reported domain.  (Balle et al. 2019's blanket decomposition; FORMULAS §1.)
    """

    k: int
    gamma: float


class LocalRandomiser(ABC):
    """Base class of local randomisers.  Subclasses are immutable after construction."""

    #: messages each user sends
    messages_per_user: int = 1
    #: the space of one message (see :mod:`shufflesim.pipeline.spaces`); a tuple when levels differ
    message_space: Any = None
    #: ε0 of the local randomiser (pure LDP), ``None`` where not defined
    eps0: float | None = None
    #: set for k-ary randomised response, ``None`` otherwise
    rr_family: RRFamily | None = None

    @property
    def bits_per_message(self) -> float:
        spaces = self.message_space if isinstance(self.message_space, tuple) else (self.message_space,)
        return float(max(s.bits for s in spaces))

    @abstractmethod
    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Return an ``(n, messages_per_user)`` array of messages for inputs ``x`` of length n."""

    def describe(self) -> Mapping[str, Any]:
        return {
            "messages_per_user": self.messages_per_user,
            "message_space": str(self.message_space),
            "eps0": self.eps0,
        }
