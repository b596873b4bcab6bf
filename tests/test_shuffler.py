"""Shufflers: uniform permutations that never change the multiset; parallel shufflers never mix indices."""

from __future__ import annotations

import numpy as np
from scipy import stats

from shufflesim.maths.integers import exact_integer_sum
from shufflesim.pipeline.shuffler import ParallelShufflers, SingleShuffler, TrustedCurator


def _seed(i):
    return np.random.SeedSequence(12345, spawn_key=(i,))


def test_single_shuffler_position_of_marked_message_is_uniform():
    n, reps = 12, 24_000
    msgs = np.zeros(n, dtype=np.int64)
    msgs[3] = 1  # the marked message, sent by user 3
    pos = np.empty(reps, dtype=np.int64)
    for r in range(reps):
        pos[r] = int(np.flatnonzero(SingleShuffler().shuffle(msgs, _seed(r)).channel(0))[0])
    obs = np.bincount(pos, minlength=n)
    assert stats.chisquare(obs).pvalue > 1e-3


def test_shuffle_preserves_multiset_and_hides_order():
    rng = np.random.default_rng(0)
    msgs = rng.integers(0, 50, size=(1000, 3))
    view = SingleShuffler().shuffle(msgs, _seed(0))
    out = view.channel(0)
    assert out.size == msgs.size
    assert np.array_equal(np.sort(out), np.sort(msgs.reshape(-1)))
    assert not np.array_equal(out, msgs.reshape(-1))  # the order changed (fixed seed: deterministic)
    assert np.array_equal(view.counts(0, 50), np.bincount(msgs.reshape(-1), minlength=50))


def test_parallel_shufflers_never_mix_indices():
    n, m = 500, 4
    rng = np.random.default_rng(1)
    # message j of each user lies in [100 j, 100 j + 99]: a mixed channel would be visible
    msgs = rng.integers(0, 100, size=(n, m)) + 100 * np.arange(m)
    view = ParallelShufflers().shuffle(msgs, _seed(1))
    assert view.n_channels == m
    for j in range(m):
        ch = view.channel(j)
        assert ch.size == n
        assert np.array_equal(np.sort(ch), np.sort(msgs[:, j]))


def test_parallel_channels_are_permuted_independently():
    n, m, reps = 6, 2, 6_000
    msgs = np.tile(np.arange(n)[:, None], (1, m))  # user i sends i on both channels
    same = 0
    pair_counts = np.zeros((n, n), dtype=np.int64)
    for r in range(reps):
        v = ParallelShufflers().shuffle(msgs, _seed(r))
        a, b = v.channel(0), v.channel(1)
        pair_counts[a[0], b[0]] += 1  # joint law of the first position of both channels
        same += int(np.array_equal(a, b))
    # independent uniform permutations: the pair (a[0], b[0]) is uniform on n x n
    assert stats.chisquare(pair_counts.reshape(-1)).pvalue > 1e-3
    assert same < 30  # P(identical permutations) = 1/720 per rep; expected 8.3, P(>=30) < 1e-8


def test_lazy_and_materialised_views_agree():
    msgs = np.random.default_rng(2).integers(0, 7, size=(1000, 1))
    v1 = SingleShuffler().shuffle(msgs, _seed(5))
    v2 = SingleShuffler().shuffle(msgs, _seed(5))
    _ = v2.channel(0)  # materialise one of them
    assert np.array_equal(v1.counts(0, 7), np.bincount(v2.channel(0), minlength=7))
    assert np.array_equal(v1.channel(0), v2.channel(0))  # the same seed gives the same permutation
    assert v1.integer_sum(0) == int(v2.channel(0).sum())


def test_view_channels_are_read_only():
    v = SingleShuffler().shuffle(np.arange(10), _seed(0))
    ch = v.channel(0)
    try:
        ch[0] = 99
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("view channels must be read-only")


def test_curator_keeps_order():
    v = TrustedCurator().shuffle(np.arange(10), _seed(0))
    assert np.array_equal(v.channel(0), np.arange(10))


def test_exact_integer_sum_large_values():
    a = np.array([2**62, 2**62 + 1, 2**62 + 2, 2**63 - 1] * 1000, dtype=np.int64)
    assert exact_integer_sum(a) == sum(int(x) for x in a)
    u = np.array([2**64 - 1, 2**63, 5], dtype=np.uint64)
    assert exact_integer_sum(u) == sum(int(x) for x in u)
    neg = np.array([-(2**62), 5, -3], dtype=np.int64)
    assert exact_integer_sum(neg) == -(2**62) + 2
