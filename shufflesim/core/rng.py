"""Randomness: one ``rng`` argument everywhere, normalised once.

shufflesim never touches global random state.  Public functions accept ``rng`` as an ``int``, a
:class:`numpy.random.SeedSequence`, a :class:`numpy.random.Generator` or ``None`` (fresh OS entropy)
and normalise it with :func:`as_generator` or :func:`as_seed_sequence`.

Independent streams for Monte-Carlo trials are derived with :func:`trial_seed`, which depends only on
(root entropy, grid point, trial index): the stream of a trial is the same whichever worker runs it and
however many workers there are.
"""

from __future__ import annotations

from typing import Union

import numpy as np

from shufflesim.errors import ParameterError

RngLike = Union[int, np.integer, np.random.SeedSequence, np.random.Generator, None]

#: spawn-key prefixes that separate the purposes a root seed is used for
DATA_STREAM = 0
TRIAL_STREAM = 1


def as_seed_sequence(rng: RngLike) -> np.random.SeedSequence:
    """Return a :class:`~numpy.random.SeedSequence` for ``rng``.

    A ``Generator`` is turned into a seed sequence by drawing 128 bits from it (this advances it).
    """
    if rng is None:
        return np.random.SeedSequence()
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=2, dtype=np.uint64).tolist())
    if isinstance(rng, (bool, np.bool_)):
        raise ParameterError("seed must be a non-negative integer, a SeedSequence, a Generator or None; got a bool")
    if isinstance(rng, (int, np.integer)):
        if int(rng) < 0:
            raise ParameterError(f"seed must be a non-negative integer; got {int(rng)}")
        return np.random.SeedSequence(int(rng))
    raise ParameterError(
        f"rng must be an int, a numpy SeedSequence, a numpy Generator or None; got {type(rng).__name__}"
    )


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a :class:`~numpy.random.Generator` (PCG64) for ``rng``; a Generator is returned as is."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.Generator(np.random.PCG64(as_seed_sequence(rng)))


def child(root: np.random.SeedSequence, *key: int) -> np.random.SeedSequence:
    """The child of ``root`` with spawn key ``root.spawn_key + key``.

    Equivalent in construction to :meth:`SeedSequence.spawn`, but addressable: the child for a given key
    is the same no matter how many children were drawn before or by whom.
    """
    return np.random.SeedSequence(
        entropy=root.entropy,
        spawn_key=tuple(root.spawn_key) + tuple(int(k) for k in key),
        pool_size=root.pool_size,
    )


def trial_seed(root: np.random.SeedSequence, point: int, trial: int) -> np.random.SeedSequence:
    """Seed sequence of trial ``trial`` at grid point ``point`` (independent of the worker)."""
    return child(root, TRIAL_STREAM, point, trial)


def data_seed(root: np.random.SeedSequence, point: int = 0) -> np.random.SeedSequence:
    """Seed sequence used to draw a synthetic data set for grid point ``point``."""
    return child(root, DATA_STREAM, point)


def seed_metadata(root: np.random.SeedSequence) -> dict:
    """JSON-able description of a root seed (entropy as a decimal string to keep all its bits)."""
    return {"entropy": str(root.entropy), "spawn_key": list(root.spawn_key)}


def secure_generator() -> np.random.Generator:
    """A Generator seeded from the operating system's cryptographically secure source.

    For deployment-like runs: the bit generator is still PCG64, so this is *not* a CSPRNG; it only
    guarantees that the seed is unpredictable.  Simulation code should use seeded generators.
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence()))
