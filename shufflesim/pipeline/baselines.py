"""Building blocks shared by central-model baseline protocols: users send their raw value to a trusted
curator, who adds noise once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.spaces import IntegerRange, RealNumbers


@dataclass(frozen=True, eq=False)
class IdentityRandomiser(LocalRandomiser):
    """Sends the input unchanged (one message); ``k`` set for categorical inputs, ``None`` for reals."""

    k: int | None = None

    def __post_init__(self) -> None:
        space: Any = IntegerRange(0, self.k - 1) if self.k is not None else RealNumbers()
        object.__setattr__(self, "message_space", space)
        object.__setattr__(self, "messages_per_user", 1)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(x)[:, None]
