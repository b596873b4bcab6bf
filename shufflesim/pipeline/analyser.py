"""Analysers: the untrusted party's computation, from the shuffled view to an estimate."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from shufflesim.pipeline.shuffler import View


class Analyser(ABC):
    """Maps a :class:`~shufflesim.pipeline.shuffler.View` to an estimate.

    ``rng`` is only used by analysers that add noise themselves (central-model baselines); analysers of
    shuffle protocols are deterministic functions of the view.
    """

    name: str = "analyser"

    @abstractmethod
    def analyse(self, view: View, rng: np.random.Generator) -> Any:
        """Return the estimate computed from ``view``."""
