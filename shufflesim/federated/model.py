"""Multinomial logistic regression in numpy: the model FLAME's experiments train (seed 002 §Evaluations).

Parameters θ of shape (features + 1, classes) (the last row is the bias), flattened to a vector of
d = (features + 1)·classes coordinates for the protocols.  A user's local update is θ_local − θ after
``steps`` full-batch gradient steps on its own few samples (FedAvg's LocalUpdate, Algorithm 2 line 6).
"""

from __future__ import annotations

import numpy as np

__all__ = ["LogisticModel"]


class LogisticModel:
    def __init__(self, features: int, classes: int):
        self.features, self.classes = features, classes

    @property
    def d(self) -> int:
        return (self.features + 1) * self.classes

    def init(self) -> np.ndarray:
        return np.zeros(self.d)

    def _w(self, theta: np.ndarray) -> np.ndarray:
        return theta.reshape(self.features + 1, self.classes)

    def logits(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        W = self._w(theta)
        return X @ W[:-1] + W[-1]

    def accuracy(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(np.argmax(self.logits(theta, X), axis=1) == y))

    def local_updates(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, lr: float, steps: int) -> np.ndarray:
        """Local updates of n users at once.  ``X``: (n, m, features), ``y``: (n, m) — m samples per user.
        Returns (n, d)."""
        n, m, f = X.shape
        W = np.broadcast_to(self._w(theta), (n, f + 1, self.classes)).copy()
        Y = np.zeros((n, m, self.classes))
        np.put_along_axis(Y, y[..., None], 1.0, axis=2)
        for _ in range(steps):
            z = np.einsum("nmf,nfc->nmc", X, W[:, :-1]) + W[:, -1][:, None, :]
            z -= z.max(axis=2, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=2, keepdims=True)
            g = (p - Y) / m
            W[:, :-1] -= lr * np.einsum("nmf,nmc->nfc", X, g)
            W[:, -1] -= lr * g.sum(axis=1)
        return (W - self._w(theta)[None]).reshape(n, -1)
