"""Poisoned FL clients in FLAME (issue 23 item 5; seed 004 §8 on messages that must "typecheck").

FLAME's analyser (seed 002 Algorithm 2, lines 17–19) decrypts and de-biases whatever a client encrypts; the
only defence it has is the typecheck of :func:`shufflesim.federated.encoding.run_round` (a value the
randomiser cannot output is dropped and counted).  A *poisoned* client is one that a single adversary
controls: it knows the round's model and every sampled client's true update (an omniscient adversary, the
worst case) and wants to push the model against the round's mean update.  Per round, ``count`` of the n
sampled clients are poisoned, chosen uniformly without replacement with a generator of the run's own seed
(:func:`poison_stream`, a stream the honest rounds never use, so honest draws are unchanged).

Strategies (the direction: where the round's mean true update is ≥ 0 the poisoned clients push down, else up):

* ``worst-in-range`` — the client's clipped input is the opposite extreme of the clipping range, −C or +C
  (x̃ = 0 or 1), and it then follows the protocol (Randomize, index selection, encryption).  Its messages
  have exactly an honest client's distribution, so no check on messages can reject them.  Against the
  honest run with the same noise it moves coordinate j of the analyser's estimate of the mean clipped
  update by −s_j·2C·Σ_{i poisoned}(x̃_ij − x̃*_ij)/n (SS-Simple; x̃* the extreme), so at most
  count·2C/n (= count × range / n, the range being 2C) — what c clients can do even without privacy.
* ``worst-message`` — every message of the client carries the extreme value the typecheck accepts, the
  same for each of its reported coordinates: unit value 1/2 ∓ r with r = :func:`report_radius` (R_{γ,b}:
  the level 0 or b; Laplace: 1/2 ∓ (1/2 + TAIL/ε), the cut-off that rejects an honest report with
  probability 2^−64).  The analyser scales a message by 2C/(shrink·n·β), so one such message moves its
  coordinate by 2C·r/(shrink·n·β) beyond the honest mean — the debiasing factor of seed 004 §8, and with
  the Laplace cut-off r ≈ TAIL/ε_coord ≫ 1/2 the worst case the message space allows.  It passes the check.
* ``out-of-range`` — every message of the client carries unit value 1/2 ∓ 10·r, outside what the randomiser
  can output: the typecheck drops each one and counts it (``out_of_range``); without the check
  (``range_check=False``) they enter the aggregate.

Strategies act on arrays over all clients at once (no loop over clients).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from shufflesim.errors import ParameterError

__all__ = ["STRATEGIES", "Poisoning", "poison_stream", "report_radius", "push_down", "poison_inputs",
           "poison_messages"]

STRATEGIES = ("worst-in-range", "worst-message", "out-of-range")

#: the child of the run's root SeedSequence that draws the poisoned clients: root.spawn gives child i to
#: round i, so this index is never a round's (rounds are far fewer)
POISON_CHILD = 2**31 - 1

#: how far outside the accepted range an ``out-of-range`` message lies, in multiples of the radius
OUT_OF_RANGE_FACTOR = 10.0


@dataclass(frozen=True)
class Poisoning:
    """``poisoned``: a fraction of the n clients sampled per round, in [0, 1), or an integer count ≥ 1
    (at most n); ``strategy``: one of :data:`STRATEGIES`."""

    poisoned: float = 0
    strategy: str = "worst-in-range"

    def __post_init__(self) -> None:
        p = self.poisoned
        if isinstance(p, bool) or not isinstance(p, Real) or not math.isfinite(float(p)):
            raise ParameterError(f"poisoned must be a fraction in [0, 1) or an integer count >= 1; got {p!r}")
        if p < 0 or (p >= 1 and float(p) != int(p)):
            raise ParameterError(f"poisoned must be a fraction in [0, 1) or an integer count >= 1; got {p!r}")
        if self.strategy not in STRATEGIES:
            raise ParameterError(f"unknown poison strategy {self.strategy!r}; choose from {', '.join(STRATEGIES)}")

    def count(self, n: int) -> int:
        """Poisoned clients among n: ⌊fraction·n⌋ (at most the fraction), or the count (≤ n)."""
        p = self.poisoned
        if p < 1:
            return int(math.floor(float(p) * n + 1e-9))
        c = int(p)
        if c > n:
            raise ParameterError(f"poisoned = {c} clients exceeds the n = {n} clients sampled per round")
        return c

    @property
    def active(self) -> bool:
        return self.poisoned > 0


def poison_stream(seed: int) -> np.random.SeedSequence:
    """The SeedSequence of the run's poisoned-client draws: child :data:`POISON_CHILD` of the run's root
    ``SeedSequence(seed)`` (what ``root.spawn`` would return as that child), so that the honest rounds'
    children 0, 1, … and their draws are untouched."""
    return np.random.SeedSequence(seed, spawn_key=(POISON_CHILD,))


def choose(count: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the ``count`` poisoned clients among n (uniform without replacement)."""
    mask = np.zeros(n, dtype=bool)
    if count:
        mask[rng.choice(n, size=count, replace=False)] = True
    return mask


def report_radius(R) -> float:
    """Half-width r on the unit scale of the reports the typecheck accepts around 1/2: 1/2 for R_{γ,b}
    (levels 0…b), :attr:`LaplaceCoord.output_radius` for Laplace."""
    return float(getattr(R, "output_radius", 0.5))


def push_down(updates: np.ndarray) -> np.ndarray:
    """Per coordinate, True where the poisoned clients push down: the mean true update of the round is ≥ 0."""
    return np.asarray(updates, dtype=float).mean(axis=0) >= 0.0


def poison_inputs(x_tilde: np.ndarray, mask: np.ndarray, down: np.ndarray) -> np.ndarray:
    """``worst-in-range``: the poisoned rows of the clipped, rescaled inputs become 0 where ``down``, else 1."""
    x = np.array(x_tilde, dtype=float, copy=True)
    x[mask] = np.where(down, 0.0, 1.0)[None, :]
    return x


def poison_messages(values: np.ndarray, index: np.ndarray, sender: np.ndarray, mask: np.ndarray,
                    down: np.ndarray, strategy: str, R) -> tuple[np.ndarray, int]:
    """``worst-message`` / ``out-of-range``: the value of every message a poisoned client sends (its real
    reports and, in SS-Topk, its fills) replaced by 1/2 ∓ r (resp. 1/2 ∓ 10r) on the unit scale, mapped back
    to the randomiser's scale.  Returns the values and the number of messages replaced."""
    r = report_radius(R)
    half = r if strategy == "worst-message" else OUT_OF_RANGE_FACTOR * r
    sent = np.asarray(mask, dtype=bool)[np.asarray(sender)]
    unit = 0.5 + np.where(np.asarray(down)[np.asarray(index)[sent]], -half, half)
    out = np.array(values, dtype=float, copy=True)
    # unit(y) = y / b for R_{γ,b} and y for Laplace: invert through the unit of 1
    v = unit / float(R.unit(np.array(1.0)))
    if strategy == "worst-message":
        # the extreme the check accepts: a value that rounding put one ulp outside is moved back inside
        centre = 0.5 / float(R.unit(np.array(1.0)))
        for _ in range(4):
            bad = ~R.valid(v)
            if not bad.any():
                break
            v[bad] = np.nextafter(v[bad], centre)
    out[sent] = v
    return out, int(np.count_nonzero(sent))
