"""Brute-force oracles: enumerate every user's coin and report, for tiny n.

Each oracle builds, for two neighbouring data sets, the exact distribution of the adversary's *actual*
view -- the shuffled multiset of messages (equivalently the histogram of message values) plus whatever
side information the adversary model grants (e.g. which users randomised) -- by enumerating the joint
outcomes of all n local randomisers, and returns it as a :class:`PMFPair` over the distinct views.
The hockey-stick divergence :func:`hockey_stick` then gives the tight delta(eps) directly (seed 001
eq 2.3; docs/theory.md#hockey-stick).  These oracles check the sufficient-statistic pairs of
:mod:`shufflesim.accounting.pairs`; :func:`biswas_histogram_exact` also serves ``--method exact``.

Enumeration is vectorised over the R**n joint outcomes (R outcomes per user) and refused with
:class:`NotApplicableError` above :data:`MAX_JOINT_OUTCOMES`.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
from scipy.special import logsumexp

from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.accounting.pairs.biswas import REFERENCE_BISWAS, check_biswas, krr_eps0_probabilities
from shufflesim.accounting.pairs.clones import REFERENCE_CLONES
from shufflesim.accounting.pairs.krr import REFERENCE_STRONG, REFERENCE_WEAK
from shufflesim.accounting.pairs.rr2 import REFERENCE_RR2
from shufflesim.accounting.pld.pmf_pair import PMFPair

__all__ = [
    "MAX_JOINT_OUTCOMES",
    "hockey_stick",
    "log_hockey_stick",
    "delta_interval",
    "enumerate_views",
    "rr2_bruteforce",
    "krr_bruteforce",
    "clones_bruteforce",
    "biswas_count_bruteforce",
    "biswas_histogram_exact",
    "biswas_histogram_worst",
]

#: Largest number R**n of joint outcomes an oracle enumerates (~1e6: well under a second, ~100 MB).
MAX_JOINT_OUTCOMES = 2**20


# --------------------------------------------------------------------------------------------------
# the hockey-stick divergence
# --------------------------------------------------------------------------------------------------


def log_hockey_stick(log_p, log_q, eps: float) -> float:
    """log delta_{P||Q}(eps) = log sum_o max(0, P(o) - e^eps Q(o)), computed in log space.

    Outcomes with Q(o) = 0 contribute P(o) in full (infinite privacy loss, seed 001 eq 2.3).
    Returns -inf when the divergence is 0.
    """
    lp = np.asarray(log_p, dtype=float)
    lq = np.asarray(log_q, dtype=float)
    eps = float(eps)
    mask = lp > lq + eps
    if not mask.any():
        return -math.inf
    a, b = lp[mask], lq[mask] + eps
    with np.errstate(divide="ignore"):
        terms = a + np.log(-np.expm1(b - a))
    return float(logsumexp(terms))


def hockey_stick(log_p, log_q, eps: float) -> float:
    """delta(eps) = max(delta_{P||Q}(eps), delta_{Q||P}(eps)) over the given atoms (docs/theory.md#hockey-stick)."""
    return math.exp(max(log_hockey_stick(log_p, log_q, eps), log_hockey_stick(log_q, log_p, eps)))


def delta_interval(pair: PMFPair, eps: float) -> tuple[float, float]:
    """(lower, upper) on the pair's delta(eps): lower over the kept atoms, upper adds the dropped tails."""
    d_pq = math.exp(log_hockey_stick(pair.log_p, pair.log_q, eps))
    d_qp = math.exp(log_hockey_stick(pair.log_q, pair.log_p, eps))
    return max(d_pq, d_qp), min(1.0, max(d_pq + pair.tail_p, d_qp + pair.tail_q))


# --------------------------------------------------------------------------------------------------
# generic enumeration
# --------------------------------------------------------------------------------------------------


def _check_size(R: int, n: int) -> None:
    total = R**n
    if total > MAX_JOINT_OUTCOMES:
        max_n = int(math.floor(math.log(MAX_JOINT_OUTCOMES) / math.log(R) + 1e-9))
        raise NotApplicableError(
            f"exact enumeration needs {R}^{n} ~ 10^{n * math.log10(R):.1f} joint outcomes; the limit is "
            f"{MAX_JOINT_OUTCOMES} (n <= {max_n} with {R} outcomes per user)"
        )


def enumerate_views(
    prob_x: np.ndarray,
    prob_xp: np.ndarray,
    message: np.ndarray,
    label: np.ndarray,
    k: int,
    visible: np.ndarray,
    *,
    count_only: int | None = None,
):
    """Exact distribution of the adversary's view under X and X' by enumerating all joint outcomes.

    ``prob_x``, ``prob_xp``: (n, R) probabilities of each user's R local outcomes under X and X';
    ``message``: (n, R) message value in [0, k) of each outcome; ``label``: (n, R) side-information
    label of each outcome (e.g. 1 = randomised); ``visible``: (n,) bool, users whose label the
    adversary sees.  The view is (histogram of messages, labels of visible users) -- or only the count
    of value ``count_only`` when that is given.  Returns (log_p, log_q, views) with one row of
    ``views`` per distinct view that has positive probability under X or X'.
    """
    prob_x = np.asarray(prob_x, dtype=float)
    prob_xp = np.asarray(prob_xp, dtype=float)
    message = np.asarray(message)
    label = np.asarray(label)
    visible = np.asarray(visible, dtype=bool)
    n, R = prob_x.shape
    _check_size(R, n)
    idx = np.indices((R,) * n, dtype=np.int8 if R < 128 else np.int32).reshape(n, -1)
    users = np.arange(n)[:, None]
    px = np.prod(prob_x[users, idx], axis=0)
    pxp = np.prod(prob_xp[users, idx], axis=0)
    live = (px > 0) | (pxp > 0)
    idx, px, pxp = idx[:, live], px[live], pxp[live]
    # one integer code per view: histogram digits in base n+1, then the visible labels' digits
    base = n + 1
    n_lab = int(label.max()) + 1 if label.size else 1
    digits = k if count_only is None else 1
    if digits * math.log2(base) + int(visible.sum()) * math.log2(max(n_lab, 2)) > 62:
        raise NotApplicableError("brute-force view codes exceed 62 bits; reduce n, k or the visible users")
    if count_only is None:
        msg_weight = base ** np.arange(k, dtype=np.int64)  # a message of value c adds (n+1)^c
    else:
        msg_weight = (np.arange(k) == count_only).astype(np.int64)
    code = msg_weight[message[users, idx]].sum(axis=0)
    lab_weight = base**digits * n_lab ** np.arange(int(visible.sum()), dtype=np.int64)
    if visible.any():
        vis = np.flatnonzero(visible)[:, None]
        code = code + (label[vis, idx[vis[:, 0]]] * lab_weight[:, None]).sum(axis=0)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    rep = idx[:, first]  # one joint outcome per view, decoded below
    msgs = message[users, rep]
    if count_only is None:
        counts = (msgs[:, :, None] == np.arange(k)[None, None, :]).sum(axis=0)
    else:
        counts = (msgs == count_only).sum(axis=0)[:, None]
    views = np.concatenate([counts, label[users, rep][visible].T], axis=1)
    inverse = inverse.ravel()
    mp = np.bincount(inverse, weights=px, minlength=views.shape[0])
    mq = np.bincount(inverse, weights=pxp, minlength=views.shape[0])
    with np.errstate(divide="ignore"):
        return np.log(mp), np.log(mq), views


def _pair(log_p, log_q, name, params, reference) -> PMFPair:
    return PMFPair(log_p=log_p, log_q=log_q, name=name, params=params, reference=reference)


# --------------------------------------------------------------------------------------------------
# oracles
# --------------------------------------------------------------------------------------------------


def rr2_bruteforce(n, eps0, *, n_ones: int = 0, return_views: bool = False):
    """Shuffled binary RR by enumeration: every user's flip (prob 1/(e^eps0+1)), shuffler-only view.

    The other n-1 users hold ``n_ones`` ones and n-1-n_ones zeros; the target holds 0 in X and 1 in X'.
    ``n_ones = 0`` is the worst case used by seed 001 §4 (tests check it against the others).
    """
    n = check_int("n", n, minimum=1)
    eps0 = check_positive("eps0", eps0)
    n_ones = check_int("n_ones", n_ones, minimum=0, maximum=n - 1)
    t = math.exp(-eps0)
    p = t / (1.0 + t)  # flip probability
    x = np.zeros(n, dtype=int)
    x[:n_ones] = 1
    message = np.stack([x, 1 - x], axis=1)  # outcome 0: keep, 1: flip
    prob = np.tile([1.0 - p, p], (n, 1))
    prob_xp = prob.copy()
    message[-1] = [0, 1]  # target: outcome = reported bit
    prob[-1] = [1.0 - p, p]  # X: true bit 0
    prob_xp[-1] = [p, 1.0 - p]  # X': true bit 1
    lp, lq, views = enumerate_views(prob, prob_xp, message, np.zeros((n, 2), int), 2, np.zeros(n, bool))
    pair = _pair(lp, lq, "rr2-bruteforce", {"n": n, "eps0": eps0, "n_ones": n_ones}, REFERENCE_RR2)
    return (pair, views) if return_views else pair


KRR_ADVERSARIES = ("strong", "weak", "shuffler")


def krr_bruteforce(n, k, gamma, adversary: str, *, others: Sequence[int] | None = None, return_views: bool = False):
    """Shuffled k-RR (blanket form) by enumeration of every user's coin and report.

    The target holds value 0 in X and 1 in X'; the other users hold ``others`` (default: all 0).
    Each user reports its value w.p. 1-gamma (label 0) or a uniform value w.p. gamma (label 1).
    Views: ``"strong"`` -- histogram + every user's label (seed 001 Definition 8);
    ``"weak"`` -- histogram + the other users' labels (Definition 9); ``"shuffler"`` -- histogram only.
    (The inputs x_1..x_{n-1} are fixed, so knowing them adds nothing to the view's law.)
    """
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    gamma = check_real("gamma", gamma, low=0.0, high=1.0, low_open=True)
    if adversary not in KRR_ADVERSARIES:
        raise ParameterError(f"adversary must be one of {', '.join(KRR_ADVERSARIES)}; got {adversary!r}")
    xs = _others(others, n - 1, 0, k - 1, default=0)
    R = k + 2  # 0: truthful (own value); 1..k: random value j-1; k+1: truthful value 1 (target under X')
    message = np.zeros((n, R), dtype=int)
    message[:, 1 : k + 1] = np.arange(k)
    message[:-1, 0] = xs
    message[:, k + 1] = 1
    label = np.zeros((n, R), dtype=int)
    label[:, 1 : k + 1] = 1
    prob = np.zeros((n, R))
    prob[:, 0] = 1.0 - gamma
    prob[:, 1 : k + 1] = gamma / k
    prob_xp = prob.copy()
    message[-1, 0] = 0
    prob_xp[-1, 0], prob_xp[-1, k + 1] = 0.0, 1.0 - gamma
    visible = np.ones(n, bool) if adversary == "strong" else np.zeros(n, bool)
    if adversary == "weak":
        visible[:-1] = True
    _check_size(R, n)
    lp, lq, views = enumerate_views(prob, prob_xp, message, label, k, visible)
    params = {"n": n, "k": k, "gamma": gamma, "adversary": adversary, "others": tuple(int(v) for v in xs)}
    ref = {"strong": REFERENCE_STRONG, "weak": REFERENCE_WEAK}.get(adversary, "shuffled k-RR, shuffler-only view")
    pair = _pair(lp, lq, f"krr-{adversary}-bruteforce", params, ref)
    return (pair, views) if return_views else pair


def clones_bruteforce(n, eps0, *, return_views: bool = False):
    """Feldman et al.'s clone pair by enumerating every user's latent role (seed 001 eqs 6.1-6.2).

    Each of the other n-1 users is a clone w.p. e^-eps0, then of the target's x (message 0) or x'
    (message 1) with probability 1/2 each; otherwise it sends a neutral message (2).  The target
    sends message 0 (under P) / 1 (under Q) w.p. Delta = e^eps0/(e^eps0+1), else the neutral message.
    The view is the histogram (a, b, n - a - b), i.e. P = (A + Delta, C - A), Q = (A, C - A + Delta).
    This checks the closed forms of eqs 6.5-6.8 and the truncation of :func:`clones_pair`.
    """
    n = check_int("n", n, minimum=1)
    eps0 = check_positive("eps0", eps0)
    p = math.exp(-eps0)
    t = math.exp(-eps0)
    dq1 = 1.0 / (1.0 + t)
    message = np.tile([2, 0, 1], (n, 1))
    prob = np.tile([1.0 - p, p / 2.0, p / 2.0], (n, 1))
    prob_xp = prob.copy()
    prob[-1] = [1.0 - dq1, dq1, 0.0]
    prob_xp[-1] = [1.0 - dq1, 0.0, dq1]
    lp, lq, views = enumerate_views(prob, prob_xp, message, np.zeros((n, 3), int), 3, np.zeros(n, bool))
    pair = _pair(lp, lq, "clones-bruteforce", {"n": n, "eps0": eps0}, REFERENCE_CLONES)
    return (pair, views[:, :2]) if return_views else pair


def _others(others, size, low, high, *, default):
    if others is None:
        return np.full(size, default, dtype=int)
    xs = np.asarray(others)
    if xs.size == 0 and size == 0:
        return np.zeros(0, dtype=int)
    if xs.ndim != 1 or xs.size != size or not np.issubdtype(xs.dtype, np.integer):
        raise ParameterError(f"others must be a sequence of {size} integers in [{low}, {high}]; got {others!r}")
    if xs.size and (xs.min() < low or xs.max() > high):
        raise ParameterError(f"others must be a sequence of {size} integers in [{low}, {high}]; got {others!r}")
    return xs.astype(int)


def _biswas_tables(n, k, eps0, n_x0, others):
    p, pbar = krr_eps0_probabilities(k, eps0)
    rest = _others(others, n - 1 - n_x0, 1, k - 1, default=1)
    inputs = np.concatenate([np.zeros(n_x0, dtype=int), rest])
    message = np.tile(np.arange(k), (n, 1))
    prob = np.full((n, k), pbar)
    prob[np.arange(n - 1), inputs] = p
    prob_xp = prob.copy()
    prob[-1, 0] = p  # target holds x0 = 0 in D(x0)
    prob_xp[-1, 1] = p  # and x1 = 1 in D(x1)
    return prob, prob_xp, message, rest


def biswas_count_bruteforce(n, k, eps0, n_x0, *, others: Sequence[int] | None = None) -> PMFPair:
    """The released count of x0 in Biswas et al.'s setting, by enumerating every user's eps0-k-RR report.

    Value 0 is x0, value 1 is x1; the target holds x0 (P) or x1 (Q); n_x0 other users hold x0 and the
    remaining n-1-n_x0 hold ``others`` (values in 1..k-1; default all x1).  Checks
    :func:`~shufflesim.accounting.pairs.biswas_count_pair`.
    """
    n, k, eps0, n_x0 = check_biswas(n, k, eps0, n_x0)
    prob, prob_xp, message, rest = _biswas_tables(n, k, eps0, n_x0, others)
    _check_size(k, n)
    lp, lq, _ = enumerate_views(prob, prob_xp, message, np.zeros((n, k), int), k, np.zeros(n, bool), count_only=0)
    params = {"n": n, "k": k, "eps0": eps0, "n_x0": n_x0, "others": tuple(int(v) for v in rest)}
    return _pair(lp, lq, "biswas-count-bruteforce", params, REFERENCE_BISWAS)


def biswas_histogram_exact(n, k, eps0, n_x0, *, others: Sequence[int] | None = None) -> PMFPair:
    """The full released histogram in Biswas et al.'s setting (seed 003 Definition III.7), exactly.

    Same data as :func:`biswas_count_bruteforce`, but the view is the whole histogram of the n
    shuffled eps0-k-RR reports (which the mechanism releases), not only the count of x0 that seed
    003's derivation analyses.  The histogram's delta depends on the values of the users not holding
    x0 (default: all x1); :func:`biswas_histogram_worst` maximises over them (for k >= 3 the worst
    case found for small n is "all hold a third value", not x1).  Enumerates k**n joint reports:
    refused with NotApplicableError when k**n > MAX_JOINT_OUTCOMES.
    """
    n, k, eps0, n_x0 = check_biswas(n, k, eps0, n_x0)
    prob, prob_xp, message, rest = _biswas_tables(n, k, eps0, n_x0, others)
    _check_size(k, n)
    lp, lq, _ = enumerate_views(prob, prob_xp, message, np.zeros((n, k), int), k, np.zeros(n, bool))
    params = {"n": n, "k": k, "eps0": eps0, "n_x0": n_x0, "others": tuple(int(v) for v in rest)}
    return _pair(lp, lq, "biswas-histogram-exact", params, REFERENCE_BISWAS)


def biswas_histogram_worst(n, k, eps0, n_x0, eps: float) -> tuple[float, tuple[int, ...]]:
    """max over the other users' values of the full histogram's delta(eps), and the maximising values.

    The n-1-n_x0 users not holding x0 may hold any of x1..x_{k-1}; seed 003 does not fix them (its
    count of x0 does not depend on them, the histogram does).  Enumerates every multiset of their
    values (the order of users does not matter) with :func:`biswas_histogram_exact`.
    """
    n, k, eps0, n_x0 = check_biswas(n, k, eps0, n_x0)
    _check_size(k, n)
    best, arg = -1.0, ()
    for others in itertools.combinations_with_replacement(range(1, k), n - 1 - n_x0):
        pair = biswas_histogram_exact(n, k, eps0, n_x0, others=list(others))
        d = hockey_stick(pair.log_p, pair.log_q, eps)
        if d > best:
            best, arg = d, tuple(others)
    return best, arg
