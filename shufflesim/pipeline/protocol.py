"""The protocol: local randomiser → shuffler → analyser, with its theory hooks.

A :class:`Protocol` is an immutable composition of the three stages plus the resolved parameters.  Its
:meth:`~Protocol.run` simulates one execution on a data set and returns a :class:`RunResult`; its theory
hooks (:meth:`~Protocol.mse_expected`, :meth:`~Protocol.mse_worst`, :meth:`~Protocol.mse_bound`,
:meth:`~Protocol.privacy`) expose what the theory says about it, so that Monte-Carlo results can be checked
against exact formulas and published bounds.

Protocols are plug-ins: a subclass sets ``name``, ``summary``, ``data_kind`` and ``options`` and
implements :meth:`Protocol.create`; decorating it with :func:`shufflesim.pipeline.registry.register` makes it
available to the CLI and to scenario files by name.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np

from shufflesim.pipeline.analyser import Analyser
from shufflesim.errors import DataError
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.core.rng import RngLike, as_seed_sequence, child
from shufflesim.pipeline.shuffler import Shuffler, View

#: streams derived from a run's seed, one per stage, so that no stage's draws shift another's
RANDOMISER_STREAM, SHUFFLER_STREAM, ANALYSER_STREAM = 0, 1, 2


@dataclass(frozen=True)
class RunResult:
    """One simulated execution.

    ``estimate`` and ``truth`` are the protocol's estimand (a vector of counts, a scalar sum, …);
    ``sq_error`` is Σ (estimate − truth)²; ``metrics`` holds further per-run figures (e.g. ``tv`` for
    distribution estimates); ``view`` is the analyser's view when ``keep_view=True`` was requested.
    """

    estimate: Any
    truth: Any
    sq_error: float
    metrics: Mapping[str, float]
    messages_per_user: int
    bits_per_message: float
    view: View | None = None
    details: Any = None

    @property
    def error(self) -> Any:
        return np.subtract(self.estimate, self.truth)


class Protocol(ABC):
    """A shuffle-model protocol for n users (see module docstring)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: this protocol's own flags in a runnable example (``--k 10 --eps0 1``), shown by ``--help`` after
    #: ``shufflesim simulate NAME --n N`` (empty: its defaults need no flags)
    example: ClassVar[str] = ""
    #: "categorical" (inputs in {0..k-1}) or "real" (inputs in [0, 1])
    data_kind: ClassVar[str] = "categorical"
    options: ClassVar[tuple[Option, ...]] = ()
    #: the metric columns :meth:`metrics` returns besides ``sq_error``
    metric_names: ClassVar[tuple[str, ...]] = ()
    #: metric name -> (lower, upper) end of its support (None: unbounded), for confidence intervals
    metric_support: ClassVar[dict[str, tuple[float | None, float | None]]] = {}

    def __init__(
        self,
        *,
        n: int,
        randomiser: LocalRandomiser,
        shuffler: Shuffler,
        analyser: Analyser,
        params: Mapping[str, Any],
    ) -> None:
        self.n = n
        self.randomiser = randomiser
        self.shuffler = shuffler
        self.analyser = analyser
        self.params = dict(params)

    # --- construction -------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def create(cls, n: int, **params: Any) -> "Protocol":
        """Validate ``params`` (raising :class:`~shufflesim.errors.ParameterError`) and build the protocol."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every ``create`` a subclass (a plug-in too) defines also builds the protocol's :meth:`mechanism`: the
        description the accountant takes, whose construction runs the accountant's own validity checks.  So a
        protocol whose certificate the accountant would refuse (e.g. cheu-sum beyond n·r <= 2e12) is refused on
        every path that builds one (``simulate``, ``run``, ``validate``, the library), in the description's
        one line, and never prints a certificate the accountant does not give (issue 29)."""
        super().__init_subclass__(**kwargs)
        raw = cls.__dict__.get("create")
        if not isinstance(raw, classmethod) or getattr(raw.__func__, "checks_mechanism", False):
            return
        build = raw.__func__

        @functools.wraps(build)
        def create(klass, n, **params):
            proto = build(klass, n, **params)
            proto.mechanism()
            return proto

        create.checks_mechanism = True
        cls.create = classmethod(create)

    # --- data ---------------------------------------------------------------------------------------
    @classmethod
    def data_k(cls, params: Mapping[str, Any]) -> int | None:
        """k for loading categorical data before the protocol is built: the option ``k`` by default; a protocol
        whose k is implied by other options (e.g. a matrix's rows, protocols/matrix_rr.py) overrides this."""
        return params.get("k")

    @property
    def domain_size(self) -> int | None:
        """k for categorical protocols, ``None`` for real-valued ones."""
        return self.params.get("k") if self.data_kind == "categorical" else None

    def check_data(self, data: np.ndarray) -> np.ndarray:
        """Return ``data`` as an array of the right kind, or raise :class:`DataError`."""
        data = np.asarray(data)
        if data.ndim != 1 or data.shape[0] != self.n:
            raise DataError(f"data must be a 1-D array of n={self.n} inputs; got shape {data.shape}")
        if self.data_kind == "categorical":
            k = self.domain_size
            if data.dtype.kind not in "iu":
                raise DataError(f"categorical data must be integers in [0, {k}); got dtype {data.dtype}")
            lo, hi = int(data.min()), int(data.max())
            if lo < 0 or hi >= k:
                bad = lo if lo < 0 else hi
                raise DataError(f"categories must lie in [0, {k}) for k={k}; found {bad}")
            return data
        data = data.astype(float, copy=False)
        if not np.all(np.isfinite(data)) or data.min() < 0.0 or data.max() > 1.0:
            raise DataError("real-valued inputs must be finite and lie in [0, 1]")
        return data

    def memory_estimate(self) -> float:
        """Bytes one trial needs at its peak (an estimate: messages and their temporaries, the data, and
        arrays of the domain size for categorical protocols)."""
        m = getattr(self.randomiser, "messages_per_user", 1) or 1
        k = self.domain_size or 0
        return 8.0 * (4.0 * float(self.n) * float(m) + 3.0 * float(self.n) + 8.0 * float(k))  # floats: no overflow

    def check_resources(self) -> None:
        """Refuse (:class:`~shufflesim.errors.ResourceError`, with the estimate) a protocol whose trial
        cannot fit in the available memory, before anything is allocated."""
        from shufflesim.core.resources import check_memory

        check_memory(self.memory_estimate(), f"one trial of {self.name} (n={self.n}, "
                     f"{getattr(self.randomiser, 'messages_per_user', 1)} message(s) per user"
                     + (f", k={self.domain_size}" if self.domain_size else "") + ")",
                     "reduce n, k or the messages per user")

    @abstractmethod
    def truth(self, data: np.ndarray) -> Any:
        """The quantity the protocol estimates, computed from the raw data."""

    def truth_from_summary(self, summary: Any) -> Any:
        """The quantity the protocol estimates, from the data's counts
        (:class:`~shufflesim.pipeline.fast.DataSummary`) -- for data given as counts (issue 21).  The base
        class has none: such a protocol needs its n inputs."""
        from shufflesim.errors import NotApplicableError

        raise NotApplicableError(f"protocol {self.name!r} cannot take its data as counts; give the n inputs")

    # --- simulation ---------------------------------------------------------------------------------
    def run(self, data: np.ndarray, rng: RngLike = None, *, keep_view: bool = False, validate: bool = True,
            truth: Any = None) -> RunResult:
        """Simulate one execution: randomise every user's input, shuffle, analyse.

        Each stage draws from its own child of ``rng``'s seed sequence, so the result is a pure function
        of (protocol, data, seed).
        """
        if validate:
            self.check_resources()
            data = self.check_data(data)
        seed = as_seed_sequence(rng)
        gen_rand = np.random.Generator(np.random.PCG64(child(seed, RANDOMISER_STREAM)))
        messages = self.randomiser.randomise(data, gen_rand)
        view = self.shuffler.shuffle(messages, child(seed, SHUFFLER_STREAM))
        gen_an = np.random.Generator(np.random.PCG64(child(seed, ANALYSER_STREAM)))
        raw = self.analyser.analyse(view, gen_an)
        if truth is None:
            truth = self.truth(data)
        estimate = self.point_estimate(raw)
        err = np.subtract(estimate, truth, dtype=float)
        return RunResult(
            estimate=estimate,
            truth=truth,
            sq_error=float(np.sum(np.square(err))),
            metrics=self.metrics(raw, truth),
            messages_per_user=self.randomiser.messages_per_user,
            bits_per_message=self.randomiser.bits_per_message,
            view=view if keep_view else None,
            details=raw,
        )

    def point_estimate(self, raw: Any) -> Any:
        """The estimate of :meth:`truth` inside the analyser's output (identity by default)."""
        return raw

    def metrics(self, raw: Any, truth: Any) -> dict[str, float]:
        """Further per-run figures besides the squared error (none by default)."""
        return {}

    # --- theory hooks -------------------------------------------------------------------------------
    def mse_expected(self, data: np.ndarray) -> float | None:
        """Exact E[sq_error] for this data set, or ``None`` where it is not derived."""
        return None

    def mse_worst(self) -> float | None:
        """Exact worst case of :meth:`mse_expected` over all data sets of n users, or ``None``."""
        return None

    def mse_bound(self) -> float | None:
        """The MSE bound stated by the protocol's paper, or ``None`` where there is none."""
        return None

    def mechanism(self) -> Any:
        """The shuffled mechanism this protocol's privacy rests on, as a description the accountant takes
        (:mod:`shufflesim.mechanisms`), or ``None`` where none is described yet."""
        return None

    def privacy(self) -> Any:
        """The central privacy guarantee (a :class:`~shufflesim.accounting.model.results.PrivacyGuarantee`), or
        ``None`` where the protocol is not parametrised by a central target."""
        return None

    # --- fast engine (shufflesim.pipeline.fast) -----------------------------------------------------
    def sample_fast(self, summary: Any, rng: np.random.Generator) -> Any:
        """The analyser's output sampled directly from its exact distribution given the data's
        :class:`~shufflesim.pipeline.fast.DataSummary` (distinct inputs and their counts).

        A protocol whose analyser depends only on a small sufficient statistic of the view overrides
        this (the fast engine then exists for it); the base class has none.
        """
        raise NotImplementedError(f"{self.name} has no fast engine")

    # --- description --------------------------------------------------------------------------------
    @property
    def messages_per_user(self) -> int:
        return self.randomiser.messages_per_user

    @property
    def bits_per_message(self) -> float:
        return self.randomiser.bits_per_message

    def describe(self) -> dict[str, Any]:
        return {"protocol": self.name, "n": self.n, "params": dict(self.params), "shuffler": self.shuffler.name}

    def __repr__(self) -> str:
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}(n={self.n}, {ps})"
