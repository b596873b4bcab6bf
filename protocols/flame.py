"""FLAME's vector-mean protocols as pipeline plug-ins (seed 002; Liu, Cao, Chen, Guo, Yoshikawa, AAAI 2021).

``flame-simple``, ``flame-double`` and ``flame-topk`` estimate the mean of n users' vectors in [0, 1]^d
(already clipped and rescaled — the FL study in :mod:`shufflesim.federated.training` does that to model
updates).  The stages are :mod:`shufflesim.federated.encoding`'s: the users' Randomize
(:class:`FlameRandomiser`, messages are (index, value) records), the padding shuffler of Algorithm 3
(:class:`FlamePaddingShuffler`: the view has one channel per coordinate holding exactly n_p messages,
``View.padding`` dummies) and the de-biasing analyser (:class:`FlameAnalyser`).  1-D data are d = 1.
Encryption is the FL study's (``shufflesim fl --encrypt``); these plug-ins are the plaintext simulation of
the same stages.  The n_p default here is n (no coordinate can overflow); the paper's ⌊n/3⌋ is the
FL study's default.

``mechanism()`` is the description the accountant takes: the clones pair of an eps_coord-LDP randomiser
among the n_p messages of a coordinate, composed over d (simple), k (double) or 2k (topk) coordinates
(docs/flame.md says why these counts and why no subsampling is credited).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shufflesim.errors import DataError
from shufflesim.federated.encoding import FlameConfig, PaddingShuffler, aggregate, randomize, topk_select
from shufflesim.pipeline.analyser import Analyser
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.protocol import Protocol
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.registry import register
from shufflesim.pipeline.shuffler import Shuffler, View
from shufflesim.pipeline.spaces import IntegerRange, RealNumbers

MESSAGE = np.dtype([("index", np.int64), ("value", np.float64)])


class FlameRandomiser(LocalRandomiser):
    def __init__(self, cfg: FlameConfig):
        self.cfg = cfg
        self.messages_per_user = cfg.messages_per_user
        # the value's space (the coordinate index travels in the clear next to it)
        self.message_space = RealNumbers() if cfg.randomiser == "laplace" else IntegerRange(0, cfg.b)
        self.eps0 = cfg.eps_l

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        m = randomize(self.cfg, _as_2d(x), rng)
        out = np.empty(m.index.size, dtype=MESSAGE)
        out["index"], out["value"] = m.index, m.value
        return out.reshape(-1, self.cfg.messages_per_user)


class FlamePaddingShuffler(Shuffler):
    name = "padding (FLAME Algorithm 3)"

    def __init__(self, cfg: FlameConfig):
        self.cfg = cfg

    def shuffle(self, messages: np.ndarray, seed: np.random.SeedSequence) -> View:
        cfg = self.cfg
        msgs = np.asarray(messages).reshape(-1)
        g = np.random.Generator(np.random.PCG64(seed))
        sh = PaddingShuffler(cfg.d, cfg.n_p, cfg.coord_randomiser().blanket)
        idx, val, rep = sh.shuffle(msgs["index"], msgs["value"], g)
        order = np.argsort(idx, kind="stable")
        chans = tuple(np.split(np.asarray(val, dtype=float)[order], np.cumsum(np.bincount(idx, minlength=cfg.d))[:-1]))
        return View(chans, seed, padding=rep.dummies)


class FlameAnalyser(Analyser):
    name = "flame"

    def __init__(self, cfg: FlameConfig):
        self.cfg = cfg

    def analyse(self, view: View, rng: np.random.Generator) -> np.ndarray:
        """Estimate of the mean of the users' vectors in [0, 1]^d (SS-Topk: of the top-k sparsified ones)."""
        cfg = self.cfg
        idx = np.concatenate([np.full(view.channel_size(j), j) for j in range(cfg.d)])
        vals = np.concatenate([view.channel(j) for j in range(cfg.d)])
        return 0.5 + aggregate(cfg, idx, vals) / (2.0 * cfg.C)


def _as_2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[:, None] if x.ndim == 1 else x


class _Flame(Protocol):
    data_kind = "real"
    variant = ""
    options = (
        Option("eps_l", float, "local budget of one user's vector (per coordinate eps_l/d or eps_l/k)", default=1.0),
        Option("d", int, "dimension (default 1; 2-D data set it)", default=1),
        Option("randomiser", str, "per-coordinate randomiser", default="laplace", choices=("laplace", "rr")),
        Option("b", int, "levels of R_{gamma,b} (randomiser rr)", default=10),
        Option("k", int, "coordinates per user (double/topk; default max(1, d/50))"),
        Option("n_p", int, "messages per coordinate after padding (default n)"),
        Option("l", int, "topk: lk indices per user (default: Theorem 5's)"),
        Option("nu", float, "topk: index-privacy level (chooses l)"),
    )

    @classmethod
    def create(cls, n: int, *, eps_l=1.0, d=1, randomiser="laplace", b=10, k=None, n_p=None, l=None,
               nu=None) -> "_Flame":
        cfg = FlameConfig(cls.variant, d, n, eps_l, C=0.5, randomiser=randomiser, b=b, k=k,
                          n_p=n if n_p is None else n_p, l=l, nu_target=nu)
        return cls(n=n, randomiser=FlameRandomiser(cfg), shuffler=FlamePaddingShuffler(cfg),
                   analyser=FlameAnalyser(cfg), params=cfg.as_params())

    @property
    def cfg(self) -> FlameConfig:
        return self.randomiser.cfg

    def check_data(self, data: np.ndarray) -> np.ndarray:
        x = np.asarray(data, dtype=float)
        x2 = _as_2d(x)
        if x2.ndim != 2 or x2.shape != (self.n, self.cfg.d):
            raise DataError(f"data must be an (n, d) = ({self.n}, {self.cfg.d}) array; got shape {x.shape}")
        if not np.all(np.isfinite(x2)) or x2.min() < 0.0 or x2.max() > 1.0:
            raise DataError("inputs must be finite and lie in [0, 1]")
        return x

    def truth(self, data: np.ndarray) -> Any:
        x = _as_2d(data)
        if self.variant != "ss-topk":
            return x.mean(axis=0)
        top, _ = topk_select(x, self.cfg.k, 1, np.random.default_rng(0))
        c = np.zeros_like(x)
        np.put_along_axis(c, top, np.take_along_axis(x, top, axis=1) - 0.5, axis=1)
        return 0.5 + c.mean(axis=0)

    def mechanism(self):
        from shufflesim.accounting.model.mechanism import Composition
        from shufflesim.mechanisms import Clones

        cfg = self.cfg
        steps = {"ss-simple": cfg.d, "ss-double": cfg.k, "ss-topk": 2 * cfg.k}[cfg.protocol]
        return Composition(((Clones(cfg.n_p, cfg.eps_coord), steps),))


@register
class FlameSimple(_Flame):
    name = "flame-simple"
    summary = "FLAME SS-Simple (seed 002): every coordinate with eps_l/d, shuffled per coordinate"
    variant = "ss-simple"


@register
class FlameDouble(_Flame):
    name = "flame-double"
    summary = "FLAME SS-Double (seed 002): k of d coordinates without replacement, padded to n_p (Algorithm 3)"
    variant = "ss-double"


@register
class FlameTopk(_Flame):
    name = "flame-topk"
    summary = "FLAME SS-Topk (seed 002): top-k plus k(l-1) blanket fills (Algorithm 4), padded to n_p"
    variant = "ss-topk"
