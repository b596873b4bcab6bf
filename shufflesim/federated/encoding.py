"""FLAME's three parties for one round (seed 002 Algorithms 2–4), on arrays.

* Users (:func:`randomize`): clip every coordinate of the local update to [−C, C] and rescale to [0, 1]
  (Algorithm 2, lines 8–9; :func:`clip_rescale`), then

  - **SS-Simple**: report every coordinate with ε_l/d;
  - **SS-Double**: sample k of the d coordinates *without* replacement (:func:`sample_coordinates`) and
    report them with ε_l/k;
  - **SS-Topk** (Algorithm 4): the k coordinates of largest magnitude |x̄| of the clipped update, reported
    with ε_l/k, plus k(l − 1) coordinates drawn without replacement from the others and filled with
    draws from the blanket distribution ω, all lk permuted (:func:`topk_select`).  (The algorithm ranks
    |x̃|; on the rescaled [0, 1] scale the magnitude of the update is |x̃ − 1/2|, which is what is used.)

  Each reported coordinate is one message (index, value): one message per coordinate keeps the
  per-coordinate shuffling that the accounting composes (a whole-vector message would let the analyser
  link a user's coordinates).
* Shuffler (:class:`PaddingShuffler`, Algorithm 3): counts the messages of each coordinate and pads every
  coordinate to exactly n_p with dummies drawn from ω (encrypted to the analyser when the run is
  encrypted — it only has the public key), then applies one uniform permutation to all messages.  It sees
  (index, payload) and the sender (routing), never a plaintext value of an encrypted run.  Algorithm 3
  groups the dummies into dummy users of k indices; with one message per coordinate that grouping is
  invisible to the analyser and is not simulated.  If a coordinate received more than n_p messages
  (possible in SS-Topk, whose indices are data dependent, when n_p is below n), the excess is dropped
  uniformly at random and counted as ``overflow`` in the report: such a round is outside the accounting
  (docs/theory.md#flame).
* Analyser (:func:`aggregate`): per coordinate, Σ(unit(y) − 1/2) over the received messages divided by
  shrink·n·β estimates the mean of (x̃ − 1/2) — for SS-Double β = k/d (each coordinate is reported with
  probability k/d), for SS-Simple and SS-Topk β = 1 (SS-Topk estimates the mean of the top-k sparsified
  updates); times 2C it is the mean clipped update (Algorithm 2, lines 18–19; eq 1).  It is unbiased
  because E[unit(R(x)) − 1/2] = shrink·(x − 1/2) and E[unit(ω) − 1/2] = 0 (tested).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from shufflesim.core.checks import check_int, check_positive
from shufflesim.errors import ParameterError

#: most messages per coordinate after padding (each is materialised; 10^7 x d messages is already large)
MAX_N_P = 10**7
from shufflesim.federated.randomisers import make_randomiser

__all__ = ["PROTOCOLS", "FlameConfig", "Messages", "clip_rescale", "sample_coordinates", "topk_select",
           "randomize", "PaddingShuffler", "aggregate", "run_round", "RoundResult", "index_privacy_l",
           "strongest_index_privacy", "default_n_p"]

PROTOCOLS = ("ss-simple", "ss-double", "ss-topk")


def index_privacy_l(nu: float, beta: float) -> int:
    """Smallest valid l for ν-index privacy (seed 002 Definition 3, Algorithm 4 line 1):
    l ≥ max{1/(νβ), ν/(ν − 1 + β)}, and l ≤ ⌈1/β⌉ (ν = 1 needs l = ⌈1/β⌉, Proposition 2)."""
    from shufflesim.core.checks import check_real

    if not (0 < beta <= 1):
        raise ParameterError("beta = k/d must lie in (0, 1]")
    top = math.ceil(1.0 / beta - 1e-12)
    nu = check_real("nu", nu)  # a real number, finite (nan passed the range test below)
    if nu < 1 or nu > 1.0 / beta + 1e-12:
        raise ParameterError(f"nu must lie in [1, 1/beta] = [1, {1 / beta:.6g}] (Proposition 2); got {nu}")
    need = max(1.0 / (nu * beta), nu / (nu - 1.0 + beta))
    return min(top, max(1, math.ceil(need - 1e-9)))


def achieved_index_privacy(l: int, beta: float) -> float:
    """ν achieved with l (the smallest ν with l ≥ 1/(νβ)): Pr[top | reported] = 1/l = νβ."""
    return max(1.0, 1.0 / (l * beta))


def strongest_index_privacy(n_p: int, n: int, beta: float) -> tuple[float, int]:
    """Seed 002 Theorem 5: ν = max{1, 1/(⌊n_p/(nβ)⌋·β)}, with l = ⌊n_p/(nβ)⌋ (capped at ⌈1/β⌉)."""
    l = math.floor(n_p / (n * beta) + 1e-9)
    if l < 1:
        raise ParameterError(f"n_p = {n_p} is below n·beta = {n * beta:g}: SS-Topk cannot pad (Theorem 5)")
    l = min(l, math.ceil(1.0 / beta - 1e-12))
    return max(1.0, 1.0 / (l * beta)), l


def default_n_p(protocol: str, n: int) -> int:
    """Messages per coordinate after padding when not given (:class:`FlameConfig`): n for SS-Simple and
    SS-Topk (no coordinate can overflow), ⌊n/3⌋ for SS-Double (the paper's)."""
    return max(1, n // 3) if protocol == "ss-double" else n


@dataclass(frozen=True)
class FlameConfig:
    """One FLAME protocol's resolved parameters (validated).

    ``eps_l`` is the local budget of one user's whole vector per round; the per-coordinate budget is
    ε_l/d (SS-Simple) or ε_l/k.  ``n_p`` is n for SS-Simple; it defaults to ⌊n/3⌋ (the paper's
    experiments) for SS-Double, whose indices are data independent (a coordinate overflows only if more than a
    third of the users sample it: probability below 10⁻⁹⁰ at β = 1/50, n = 300), and to n for SS-Topk, whose
    Top-k indices are data dependent and concentrate: each user sends at most one message per coordinate, so
    with n_p = n no coordinate can overflow and every default run is covered by the accounting (issue 18;
    with the paper's n/3 a default digits run dropped messages); ``l`` for SS-Topk defaults to the l of ν (``nu_target``) if given, else to
    Theorem 5's l (the strongest index privacy n_p allows).
    """

    protocol: str
    d: int
    n: int
    eps_l: float
    C: float = 1.0
    randomiser: str = "laplace"
    b: int = 10
    k: int | None = None
    n_p: int | None = None
    l: int | None = None
    nu_target: float | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ParameterError(f"unknown FLAME protocol {self.protocol!r}; choose from {', '.join(PROTOCOLS)}")
        d = check_int("d", self.d, minimum=1)
        n = check_int("n", self.n, minimum=1)
        check_positive("eps_l", self.eps_l)
        check_positive("C", self.C)
        make_randomiser(self.randomiser, 1.0, self.b)  # validates the kind
        if self.protocol == "ss-simple":
            object.__setattr__(self, "k", d)
            object.__setattr__(self, "n_p", n)
            object.__setattr__(self, "l", 1)
            return
        k = self.k if self.k is not None else max(1, d // 50)
        if isinstance(k, int) and not isinstance(k, bool) and k > d:
            raise ParameterError(f"k (coordinates per user) must be at most the dimension d={d}; got k={k}")
        k = check_int("k", k, minimum=1, maximum=d)
        object.__setattr__(self, "k", k)
        # n_p messages per coordinate are materialised for every coordinate: bounded like other sizes
        n_p = check_int("n_p", self.n_p if self.n_p is not None else default_n_p(self.protocol, n), minimum=1,
                        maximum=MAX_N_P)
        object.__setattr__(self, "n_p", n_p)
        if self.protocol == "ss-double":
            object.__setattr__(self, "l", 1)
            return
        beta = k / d
        if self.l is not None:
            l = check_int("l", self.l, minimum=1, maximum=math.ceil(1.0 / beta - 1e-12))
        elif self.nu_target is not None:
            l = index_privacy_l(self.nu_target, beta)
        else:
            l = strongest_index_privacy(n_p, n, beta)[1]
        if k * l > d:
            raise ParameterError(f"k·l = {k * l} exceeds d = {d}")
        object.__setattr__(self, "l", l)

    @property
    def beta(self) -> float:
        """Fraction k/d of coordinates a user reports (1 for SS-Simple)."""
        return self.k / self.d

    @property
    def eps_coord(self) -> float:
        """Local privacy of one reported coordinate: ε_l/d (SS-Simple) or ε_l/k."""
        return self.eps_l / self.k

    @property
    def nu(self) -> float:
        """Index privacy achieved (Definition 3; 1 for SS-Simple and SS-Double, whose indices are
        data independent)."""
        return achieved_index_privacy(self.l, self.beta) if self.protocol == "ss-topk" else 1.0

    def coord_randomiser(self):
        return make_randomiser(self.randomiser, self.eps_coord, self.b)

    @property
    def messages_per_user(self) -> int:
        return self.k * self.l

    @property
    def estimate_rate(self) -> float:
        """β in the analyser's de-biasing: k/d for SS-Double, 1 otherwise."""
        return self.beta if self.protocol == "ss-double" else 1.0

    def as_params(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "d": self.d, "n": self.n, "eps_l": self.eps_l, "C": self.C,
                "randomiser": self.randomiser, **({"b": self.b} if self.randomiser == "rr" else {}),
                "k": self.k, "n_p": self.n_p, "l": self.l, "beta": self.beta, "eps_coord": self.eps_coord,
                "nu": self.nu, "messages_per_user": self.messages_per_user}


def clip_rescale(x: np.ndarray, C: float) -> np.ndarray:
    """Algorithm 2, lines 8–9: x̃ = (clip(x, −C, C) + C)/(2C) ∈ [0, 1]."""
    return (np.clip(np.asarray(x, dtype=float), -C, C) + C) / (2.0 * C)


def sample_coordinates(n: int, d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """(n, k) coordinates, each row k distinct indices uniform among the d (without replacement)."""
    if k == d:
        return np.tile(np.arange(d), (n, 1))
    keys = rng.random((n, d))
    return np.argpartition(keys, k - 1, axis=1)[:, :k] if k < d else np.argsort(keys, axis=1)


def topk_select(x_tilde: np.ndarray, k: int, l: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 4, lines 2–3: the Top-k coordinates of |x̃ − 1/2| per row (n, k), and k(l − 1) distinct
    coordinates drawn uniformly from the others (n, k(l − 1))."""
    x = np.asarray(x_tilde, dtype=float)
    n, d = x.shape
    mag = np.abs(x - 0.5)
    # ties broken at random so that equal magnitudes do not always favour low indices
    order = np.lexsort((rng.random((n, d)), -mag), axis=1)
    top = order[:, :k]
    m = k * (l - 1)
    if m == 0:
        return top, np.empty((n, 0), dtype=top.dtype)
    keys = rng.random((n, d))
    np.put_along_axis(keys, top, np.inf, axis=1)
    non = np.argpartition(keys, m - 1, axis=1)[:, :m]
    return top, non


@dataclass
class Messages:
    """Messages leaving the users: ``sender`` (routing, seen by the shuffler), ``index`` (seen by the
    shuffler and the analyser), ``value`` (the randomised report; encrypted in an encrypted run) and
    ``kind`` (0 real report, 1 blanket fill; for tests — no party reads it)."""

    sender: np.ndarray
    index: np.ndarray
    value: np.ndarray
    kind: np.ndarray


def randomize(cfg: FlameConfig, x_tilde: np.ndarray, rng: np.random.Generator) -> Messages:
    """Every user's Randomize (module docstring), vectorised over the n users."""
    x = np.asarray(x_tilde, dtype=float)
    n, d = x.shape
    if d != cfg.d:
        raise ParameterError(f"updates have {d} coordinates; the protocol was built for d = {cfg.d}")
    R = cfg.coord_randomiser()
    if cfg.protocol == "ss-simple":
        idx = np.tile(np.arange(d), (n, 1))
        vals = R.randomise(x, rng)
        kind = np.zeros((n, d), dtype=np.int8)
    elif cfg.protocol == "ss-double":
        idx = sample_coordinates(n, d, cfg.k, rng)
        vals = R.randomise(np.take_along_axis(x, idx, axis=1), rng)
        kind = np.zeros(idx.shape, dtype=np.int8)
    else:
        top, non = topk_select(x, cfg.k, cfg.l, rng)
        real = R.randomise(np.take_along_axis(x, top, axis=1), rng)
        fill = R.blanket(non.size, rng).reshape(non.shape)
        idx = np.concatenate([top, non], axis=1)
        vals = np.concatenate([real, fill], axis=1)
        kind = np.concatenate([np.zeros(top.shape, np.int8), np.ones(non.shape, np.int8)], axis=1)
        perm = np.argsort(rng.random(idx.shape), axis=1)  # Algorithm 4, lines 7-9: permute the lk reports
        idx, vals, kind = (np.take_along_axis(a, perm, axis=1) for a in (idx, vals, kind))
    sender = np.repeat(np.arange(n), idx.shape[1])
    return Messages(sender, idx.reshape(-1), vals.reshape(-1), kind.reshape(-1))


@dataclass
class ShuffleReport:
    user_messages: int = 0
    dummies: int = 0
    overflow: int = 0
    per_coordinate: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class PaddingShuffler:
    """Algorithm 3 (``n_p`` = n and no dummies for SS-Simple).  ``encrypt`` is the analyser's public key's
    ``encrypt`` (or ``None`` in a plaintext simulation); ``blanket`` draws dummy values from ω.

    It holds no private key: the only key material it can reach is what ``encrypt`` is bound to
    (tests/test_flame.py walks its references)."""

    def __init__(self, d: int, n_p: int, blanket: Callable[[int, np.random.Generator], np.ndarray],
                 encrypt: Callable[[np.ndarray, np.ndarray, int], list] | None = None):
        self.d, self.n_p = d, n_p
        self.blanket = blanket
        self.encrypt = encrypt

    def shuffle(self, index: np.ndarray, payload: Any, rng: np.random.Generator, round_id: int = 0,
                sender: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, ShuffleReport]:
        """Pad every coordinate to n_p and permute; ``sender`` is dropped here (the routing the shuffler
        removes).  Returns (index, payload) in shuffled order and the counts."""
        index = np.asarray(index, dtype=np.int64)
        payload = np.asarray(payload, dtype=object) if isinstance(payload, list) else np.asarray(payload)
        rep = ShuffleReport(user_messages=int(index.size), per_coordinate=self.n_p)
        counts = np.bincount(index, minlength=self.d)
        if counts.size > self.d:
            raise ParameterError(f"message index out of range [0, {self.d})")
        keep = np.ones(index.size, dtype=bool)
        over = np.flatnonzero(counts > self.n_p)
        if over.size:
            pos = np.argsort(rng.random(index.size), kind="stable")  # random order inside each coordinate
            for j in over:
                mine = pos[index[pos] == j]
                keep[mine[self.n_p:]] = False
            rep.overflow = int((~keep).sum())
            counts = np.minimum(counts, self.n_p)
        need = self.n_p - counts
        d_idx = np.repeat(np.arange(self.d), need)
        d_val = self.blanket(int(d_idx.size), rng)
        rep.dummies = int(d_idx.size)
        if self.encrypt is not None:
            d_pay = np.empty(d_idx.size, dtype=object)
            d_pay[:] = self.encrypt(d_val, d_idx, round_id)
        else:
            d_pay = d_val
        all_idx = np.concatenate([index[keep], d_idx])
        all_pay = np.concatenate([payload[keep], d_pay.astype(payload.dtype, copy=False)])
        perm = rng.permutation(all_idx.size)
        return all_idx[perm], all_pay[perm], rep


def aggregate(cfg: FlameConfig, index: np.ndarray, values: np.ndarray, ok: np.ndarray | None = None) -> np.ndarray:
    """The analyser's estimate of the mean clipped update (length d, original units; module docstring)."""
    R = cfg.coord_randomiser()
    index = np.asarray(index, dtype=np.int64)
    u = R.unit(np.asarray(values, dtype=float)) - 0.5
    if ok is not None:
        index, u = index[ok], u[ok]
    s = np.bincount(index, weights=u, minlength=cfg.d)
    mean_centered = s / (R.shrink * cfg.n * cfg.estimate_rate)
    return 2.0 * cfg.C * mean_centered


@dataclass
class RoundResult:
    estimate: np.ndarray
    report: dict = field(default_factory=dict)


def run_round(cfg: FlameConfig, updates: np.ndarray, rng: np.random.Generator, *, keys=None, round_id: int = 0,
              interfere: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
              decryptor=None, poisoned: np.ndarray | None = None, strategy: str = "worst-in-range",
              range_check: bool = True) -> RoundResult:
    """One round of encoding → (encryption) → padding shuffler → (decryption) → aggregate.

    ``updates``: the n users' raw local updates (n, d).  ``keys``: an
    :class:`~shufflesim.federated.crypto.AnalyserKeys` for the encrypted path (``None``: plaintext
    simulation; the same stages run).  ``interfere``: a function applied to the shuffled (index, payload)
    before the analyser — an active attacker on the channel (tests use it to tamper and replay).
    ``decryptor``: reuse the analyser's decryptor across rounds (replays of earlier rounds are then caught).
    ``poisoned``: a boolean mask of the clients an adversary controls and ``strategy`` what they send
    (:mod:`.poisoning`; ``None``: every client honest, the same draws as without the argument).
    ``range_check=False`` switches the analyser's typecheck off (only non-finite values are still dropped),
    to measure what it protects against; ``out_of_range`` then counts the values it would have dropped.
    """
    x = clip_rescale(updates, cfg.C)
    g_user, g_shuf = rng.spawn(2)
    R = cfg.coord_randomiser()
    attack = poisoned is not None and bool(np.any(poisoned))
    if attack:
        from shufflesim.federated.poisoning import STRATEGIES, poison_inputs, push_down

        if strategy not in STRATEGIES:
            raise ParameterError(f"unknown poison strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
        poisoned = np.asarray(poisoned, dtype=bool)
        if poisoned.shape != (x.shape[0],):
            raise ParameterError(f"poisoned must be a mask over the {x.shape[0]} clients")
        down = push_down(updates)
        if strategy == "worst-in-range":  # the client follows the protocol from the extreme input
            x = poison_inputs(x, poisoned, down)
    msgs = randomize(cfg, x, g_user)
    poison_report = None
    if attack:
        poison_report = {"clients": int(poisoned.sum()), "strategy": strategy, "messages": 0}
        if strategy != "worst-in-range":  # the client replaces the values it encrypts (same indices, same draws)
            from shufflesim.federated.poisoning import poison_messages

            msgs.value, poison_report["messages"] = poison_messages(msgs.value, msgs.index, msgs.sender, poisoned,
                                                                     down, strategy, R)
        else:
            poison_report["messages"] = int(np.count_nonzero(poisoned[msgs.sender]))
    if keys is not None:
        pk = keys.public
        payload = np.empty(msgs.index.size, dtype=object)
        payload[:] = pk.encrypt(msgs.value, msgs.index, round_id)
        shuffler = PaddingShuffler(cfg.d, cfg.n_p, R.blanket, pk.encrypt)
    else:
        payload = msgs.value
        shuffler = PaddingShuffler(cfg.d, cfg.n_p, R.blanket, None)
    idx, pay, srep = shuffler.shuffle(msgs.index, payload, g_shuf, round_id, sender=msgs.sender)
    if interfere is not None:
        idx, pay = interfere(idx, pay)
    report = {"shuffle": srep.as_dict(), "encrypted": keys is not None}
    idx = np.asarray(idx, dtype=np.int64)
    if keys is not None:
        dec = decryptor if decryptor is not None else keys.decryptor()
        vals, ok, drep = dec.decrypt(idx, list(pay), round_id)
        report["decrypt"] = drep.as_dict()
        rejected = drep.rejected
    else:
        # the plaintext simulation runs the same checks: a value per index, nothing beyond
        pay = np.asarray(pay, dtype=float).ravel()
        missing = max(0, idx.size - pay.size)
        report["missing"] = missing
        rejected = missing + max(0, pay.size - idx.size)
        vals = np.full(idx.size, np.nan)
        vals[:min(idx.size, pay.size)] = pay[:idx.size]
        ok = np.arange(idx.size) < pay.size
    # the analyser typechecks what decrypted (seed 004 §8): a value the randomiser cannot output (NaN, 1e6, a
    # non-integer level of R_{gamma,b}) is rejected and counted, so a dishonest sender moves a coordinate by at
    # most one report's range instead of arbitrarily
    typed = R.valid(vals)
    report["out_of_range"] = int(np.count_nonzero(ok & ~typed))
    if range_check:
        ok = ok & typed
        report["rejected_messages"] = rejected + report["out_of_range"]
    else:  # no typecheck: every finite value is summed
        finite = np.isfinite(vals)
        report["range_check"] = False
        report["nonfinite"] = int(np.count_nonzero(ok & ~finite))
        ok = ok & finite
        report["rejected_messages"] = rejected + report["nonfinite"]
    if poison_report is not None:
        report["poisoned"] = poison_report
    return RoundResult(aggregate(cfg, idx, vals, ok), report)
