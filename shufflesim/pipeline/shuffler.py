"""Shufflers and the analyser's view.

The shuffler applies a uniformly random permutation to messages.  Two models (seed 004 §2.3–2.4):

* :class:`SingleShuffler` — every message of every user goes through one shuffler;
* :class:`ParallelShufflers` — message j of every user goes through shuffler j, so the analyser receives
  m separately shuffled channels and knows which index a message had but not whose it was.

The output is a :class:`View`: the analyser's whole view, with no user identities and no positions.

Lazy permutation
----------------
Drawing a permutation of 10⁶ messages costs as much as randomising them, and many analysers (histograms,
sums) are invariant under permutation.  A :class:`View` therefore draws the permutation of a channel from
its own seed only when the ordered messages are requested (:meth:`View.channel`); permutation-invariant
summaries (:meth:`View.counts`, :meth:`View.integer_sum`) are computed from the multiset, which is a
sufficient statistic of the shuffled sequence (given the multiset, the shuffled order is uniform and carries
no information).  Because the permutation uses its own seed, whether it is drawn never changes any other
random quantity: results are bit-identical either way (tested).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.maths.integers import exact_integer_sum


class View:
    """What the analyser sees: one or more channels, each a uniformly shuffled array of messages.

    Do not construct directly; shufflers do.  The unshuffled messages are held privately and only ever
    exposed in permuted order or through permutation-invariant summaries.
    """

    __slots__ = ("_raw", "_seed", "_cache", "padding", "in_user_order")

    def __init__(self, channels: tuple[np.ndarray, ...], seed: np.random.SeedSequence, padding: int = 0,
                 in_user_order: tuple[int, ...] = ()):
        self._raw = channels
        self._seed = seed
        self._cache: dict[int, np.ndarray] = {}
        #: number of dummy messages a padding shuffler added (0 for the shufflers here)
        self.padding = padding
        #: channels that bypass the shuffle and reach the analyser in user order (row i = user i)
        self.in_user_order = tuple(sorted(set(in_user_order)))
        for j in self.in_user_order:
            arr = np.asarray(channels[j])
            arr.setflags(write=False)
            self._cache[j] = arr

    @property
    def n_channels(self) -> int:
        return len(self._raw)

    def channel_size(self, j: int = 0) -> int:
        return int(self._raw[j].shape[0])

    def channel(self, j: int = 0) -> np.ndarray:
        """The messages of channel ``j`` in shuffled order (drawn on first access, then cached)."""
        if j not in self._cache:
            rng = np.random.Generator(np.random.PCG64(_perm_seed(self._seed, j)))
            arr = self._raw[j][rng.permutation(self._raw[j].shape[0])]
            arr.setflags(write=False)
            self._cache[j] = arr
        return self._cache[j]

    @property
    def channels(self) -> tuple[np.ndarray, ...]:
        return tuple(self.channel(j) for j in range(self.n_channels))

    def counts(self, j: int = 0, minlength: int = 0) -> np.ndarray:
        """Histogram of the non-negative integer messages of channel ``j`` (permutation invariant)."""
        return np.bincount(self._raw[j], minlength=minlength)

    def integer_sum(self, j: int = 0) -> int:
        """Exact sum of the integer messages of channel ``j`` as a Python int (permutation invariant)."""
        a = self._raw[j]
        if a.dtype.kind not in "iub":
            raise TypeError("integer_sum needs integer messages; use channel(j) for real-valued ones")
        return exact_integer_sum(a)

    def __repr__(self) -> str:
        sizes = ", ".join(str(self.channel_size(j)) for j in range(self.n_channels))
        return f"View(channels={self.n_channels}, sizes=[{sizes}])"


def _perm_seed(seed: np.random.SeedSequence, j: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed.entropy, spawn_key=tuple(seed.spawn_key) + (j,), pool_size=seed.pool_size)


class Shuffler(ABC):
    """A shuffler stage: ``(n, m)`` messages → :class:`View`."""

    name: str = "shuffler"

    @abstractmethod
    def shuffle(self, messages: np.ndarray, seed: np.random.SeedSequence) -> View:
        """Return the analyser's view of ``messages`` (row i = user i's messages)."""


class SingleShuffler(Shuffler):
    """One shuffler for all messages of all users: the view is one channel of n·m messages."""

    name = "single"

    def shuffle(self, messages: np.ndarray, seed: np.random.SeedSequence) -> View:
        messages = _as_2d(messages)
        return View((messages.reshape(-1),), seed)


class ParallelShufflers(Shuffler):
    """m independent shufflers: message j of every user goes through shuffler j (seed 004 §2.4).

    ``unshuffled`` lists message indices sent *outside* the shuffle (e.g. the share that seed 004's
    Corollary 6.1 sends directly); negative indices count from the end.  Those channels reach the
    analyser in user order.
    """

    def __init__(self, unshuffled: tuple[int, ...] = ()):
        self.unshuffled = tuple(unshuffled)
        self.name = "parallel" if not self.unshuffled else f"parallel (unshuffled: {list(self.unshuffled)})"

    def shuffle(self, messages: np.ndarray, seed: np.random.SeedSequence) -> View:
        messages = _as_2d(messages)
        m = messages.shape[1]
        direct = tuple(j % m for j in self.unshuffled)
        return View(tuple(np.ascontiguousarray(messages[:, j]) for j in range(m)), seed, in_user_order=direct)


class TrustedCurator(Shuffler):
    """No shuffling: the curator sees every user's value (central-model baselines).

    The view has one channel in user order; it exists so that central baselines run through the same
    pipeline and report the same columns.
    """

    name = "curator"

    def shuffle(self, messages: np.ndarray, seed: np.random.SeedSequence) -> View:
        messages = _as_2d(messages)
        return View((messages.reshape(-1),), seed, in_user_order=(0,))


def _as_2d(messages: np.ndarray) -> np.ndarray:
    messages = np.asarray(messages)
    if messages.ndim == 1:
        return messages[:, None]
    if messages.ndim != 2:
        raise ParameterError(f"messages must be an (n, m) array; got shape {messages.shape}")
    return messages


SHUFFLERS = {"single": SingleShuffler, "parallel": ParallelShufflers, "curator": TrustedCurator}
