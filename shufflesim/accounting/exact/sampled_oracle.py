"""Brute-force oracle for sampled shuffled mechanisms (docs/theory.md#sampling): the augmented randomiser
R_q = q R + (1 − q) δ_⊥ as a matrix, and the exact δ(ε) of the view on two neighbouring data sets under Poisson
participation (through R_q: :func:`~.shuffle_oracle.histogram_law`) or fixed-size sampling (every m-subset).
The test oracle of :mod:`shufflesim.accounting.pairs.sampled`."""

from __future__ import annotations

import itertools
import math

import numpy as np

from shufflesim.accounting.exact.shuffle_oracle import histogram_law
from shufflesim.accounting.model.mechanism import check_sample_rate, check_sample_relation
from shufflesim.errors import ParameterError


def augmented(R, q: float, *, absent: bool = False) -> np.ndarray:
    """R_q = q R + (1 − q) δ_⊥ as a matrix with one more column (⊥, last); with ``absent`` one more input row
    δ_⊥ (last: the add/remove neighbour's target, who never takes part)."""
    R = np.asarray(R, dtype=float)
    q = check_sample_rate(q)
    out = np.hstack([q * R, np.full((R.shape[0], 1), 1.0 - q)])
    if absent:
        bot = np.zeros((1, out.shape[1]))
        bot[0, -1] = 1.0
        out = np.vstack([out, bot])
    return out


def _hockey(lp: dict, lq: dict, eps: float) -> float:
    keys = set(lp) | set(lq)
    ee = math.exp(eps)
    return max(sum(max(0.0, lp.get(h, 0.0) - ee * lq.get(h, 0.0)) for h in keys),
               sum(max(0.0, lq.get(h, 0.0) - ee * lp.get(h, 0.0)) for h in keys))


def _fixed_law(R, data, m: int) -> dict:
    """Law of the multiset of the reports of a uniformly random m-subset of the users ``data`` (brute force)."""
    n = len(data)
    subsets = list(itertools.combinations(range(n), m))
    law: dict = {}
    for s in subsets:
        for h, p in histogram_law(R, [data[i] for i in s]).items():
            law[h] = law.get(h, 0.0) + p / len(subsets)
    return law


def oracle_delta(R, others, x0: int, x1: int | None, eps: float, *, q: float | None = None,
                 m: int | None = None) -> float:
    """Exact δ(ε) (max of both directions) between the views on (x0, *others) and (x1, *others) under Poisson
    participation at rate ``q`` or fixed-size sampling of ``m`` of the n users; ``x1=None``: add/remove (the
    neighbour has no target)."""
    R = np.asarray(R, dtype=float)
    if (q is None) == (m is None):
        raise ParameterError("give exactly one of q (Poisson) or m (fixed size)")
    if q is not None:
        A = augmented(R, q, absent=True)
        bot = A.shape[0] - 1
        return _hockey(histogram_law(A, [x0, *others]), histogram_law(A, [bot if x1 is None else x1, *others]), eps)
    if x1 is None:
        raise ParameterError("fixed-size sampling is accounted under replace-one only")
    return _hockey(_fixed_law(R, [x0, *others], m), _fixed_law(R, [x1, *others], m), eps)


def worst_delta(R, n: int, eps: float, *, q: float | None = None, m: int | None = None,
                relation: str = "replace-one") -> tuple[float, tuple]:
    """Largest exact δ(ε) over every neighbouring pair of data sets of n users (the target's two values or
    value/absent, every multiset of the other n − 1 inputs).  Returns (δ, (x0, x1, others))."""
    k = np.asarray(R).shape[0]
    check_sample_relation(relation)
    best, arg = 0.0, ()
    targets = (list(itertools.permutations(range(k), 2)) if relation == "replace-one"
               else [(x, None) for x in range(k)])
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        for x0, x1 in targets:
            d = oracle_delta(R, list(others), x0, x1, eps, q=q, m=m)
            if d > best:
                best, arg = d, (x0, x1, others)
    return best, arg
