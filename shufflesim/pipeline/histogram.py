"""What every histogram protocol shares: the estimate type, the truth, the metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.pipeline.protocol import Protocol
from shufflesim.maths.simplex import total_variation


@dataclass(frozen=True)
class HistogramEstimate:
    """An analyser's output for a histogram query."""

    histogram: np.ndarray  # the counts the analyser observed (shuffled counts / exact counts)
    counts: np.ndarray  # the estimate of the true counts (debiased / noisy)
    distribution: np.ndarray  # the distribution estimate, on the probability simplex


class HistogramProtocol(Protocol):
    """A protocol estimating the histogram of categorical inputs in {0..k−1}.

    The squared error is Σ_j (ĉ_j − c_j)² on the count estimate; the metric ``tv`` is the total
    variation distance between the distribution estimate and the empirical distribution c/n.
    """

    data_kind: ClassVar[str] = "categorical"
    metric_names: ClassVar[tuple[str, ...]] = ("tv",)
    metric_support: ClassVar[dict[str, tuple[float | None, float | None]]] = {"tv": (0.0, 1.0)}

    @property
    def k(self) -> int:
        return self.params["k"]

    def truth(self, data: np.ndarray) -> np.ndarray:
        return np.bincount(data, minlength=self.k).astype(float)

    def truth_from_summary(self, summary) -> np.ndarray:
        """The histogram is the counts themselves (data given as counts, issue 21)."""
        return np.asarray(summary.counts, dtype=float)

    def point_estimate(self, raw: HistogramEstimate) -> np.ndarray:
        return raw.counts

    def metrics(self, raw: HistogramEstimate, truth: np.ndarray) -> dict[str, float]:
        return {"tv": total_variation(raw.distribution, truth / self.n)}
