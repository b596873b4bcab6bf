"""Local randomisers: the part of a protocol that runs on each user's device.

A randomiser is vectorised over users: ``randomise(x, rng)`` takes the n users' inputs as one numpy
array and returns an ``(n, m)`` array, row i holding user i's m messages.  It declares its message space,
m and its local privacy ε0 where defined.  What the accountant needs is not here but in the protocol's
mechanism description (``Protocol.mechanism()``, :mod:`shufflesim.mechanisms`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Mapping

import numpy as np


class LocalRandomiser(ABC):
    """Base class of local randomisers.  Subclasses are immutable after construction."""

    #: messages each user sends
    messages_per_user: int = 1
    #: the space of one message (see :mod:`shufflesim.pipeline.spaces`); a tuple when levels differ
    message_space: Any = None
    #: ε0 of the local randomiser (pure LDP), ``None`` where not defined
    eps0: float | None = None

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
