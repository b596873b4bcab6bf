"""A pair of probability mass functions on a common finite support: the input of the PLD accountant.

A neighbouring pair (P, Q) of a shuffled mechanism is described by the log-probabilities of the
outcomes of a sufficient statistic of the adversary's view under the two neighbouring data sets.
Outcomes that only one side can produce carry ``-inf`` on the other side (infinite privacy loss;
Koskela et al., seed 001 eq 2.3).

``tail_p`` / ``tail_q`` are the masses of P / Q that a constructor dropped (e.g. the Hoeffding tail
truncation of seed 001 §6.2); an accountant must add them to its upper bound on delta and may ignore
them in its lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np


@dataclass(frozen=True)
class PMFPair:
    """Log-PMFs ``log_p`` and ``log_q`` over the same outcomes (1-D float arrays, ``-inf`` allowed)."""

    log_p: np.ndarray
    log_q: np.ndarray
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = ""
    tail_p: float = 0.0
    tail_q: float = 0.0

    def __post_init__(self) -> None:
        lp = np.asarray(self.log_p, dtype=float)
        lq = np.asarray(self.log_q, dtype=float)
        if lp.ndim != 1 or lp.shape != lq.shape:
            raise ValueError("log_p and log_q must be 1-D arrays of the same length")
        object.__setattr__(self, "log_p", lp)
        object.__setattr__(self, "log_q", lq)

    @property
    def size(self) -> int:
        return int(self.log_p.size)
