"""Bring your own randomiser (issue 22): a protocol from a local randomiser's matrix, or from a sampler.

:class:`MatrixProtocol` is the common case — your finite randomiser R (k inputs × m outputs), one report
per user, a single shuffler, and the generic analyser that estimates the input counts by channel inversion
(:mod:`shufflesim.pipeline.matrix`).  A subclass writes only ``name``, ``summary``, its ``options`` and
:meth:`MatrixProtocol.build_matrix`; everything else is derived from the matrix: ε0 (checked, not trusted),
the faithful engine, the exact fast engine (a sum of multinomials), the exact MSE of the estimator (for this
data and worst case), the two-sided shuffled accounting (:class:`~shufflesim.mechanisms.matrix.ShuffledMatrix`),
``privacy()`` at a δ, and an audit setup.  The built-in ``matrix-rr`` reads the matrix from a CSV or TOML file
(or a scenario file's inline table), so a researcher can try a randomiser from the command line first.

:class:`SamplerProtocol` is the fallback for a randomiser known only as code (a sampler with a declared
output space and ε0, and your own estimator): it gets the faithful engine and ε0-based accounting (upper end
only), and :meth:`SamplerProtocol.missing` says what it lacks.  docs/plugins.md is the guide.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from shufflesim.errors import ParameterError, ShufflesimError
from shufflesim.core.checks import check_int, check_real
from shufflesim.maths.simplex import project_to_simplex
from shufflesim.mechanisms.matrix import ShuffledMatrix
from shufflesim.pipeline.analyser import Analyser
from shufflesim.pipeline.histogram import HistogramEstimate, HistogramProtocol
from shufflesim.pipeline.matrix import (MatrixRandomiser, SamplerRandomiser, check_matrix, inversion_bias,
                                        inversion_mse, inversion_mse_terms, inversion_mse_worst, inversion_operator,
                                        matrix_histogram, matrix_histogram_batch, read_matrix, unidentifiable_inputs)
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.registry import register
from shufflesim.pipeline.shuffler import SingleShuffler, View

DELTA_OPTION = Option("delta", float, "delta at which the central eps is reported (default 1/n^2)")


class InversionAnalyser(Analyser):
    """The shuffled histogram N, the counts ĉ = A N (A = (Rᵀ)⁺) and their projection onto the simplex; ``B``:
    the bias operator A Rᵀ − I (0 unless some input is not identifiable; pipeline.matrix.inversion_bias)."""

    name = "channel-inversion"

    def __init__(self, A: np.ndarray, n: int, B: np.ndarray | None = None):
        self.A, self.n = A, n
        self.B = np.zeros((A.shape[0], A.shape[0])) if B is None else B

    def estimate(self, hist: np.ndarray) -> HistogramEstimate:
        counts = np.asarray(hist, dtype=float) @ self.A.T
        return HistogramEstimate(hist, counts, project_to_simplex(counts / self.n))

    def analyse(self, view: View, rng: np.random.Generator) -> HistogramEstimate:
        return self.estimate(view.counts(0, minlength=self.A.shape[1]))


def _resolve_delta(n: int, delta) -> float:
    return 1.0 / max(n, 2) ** 2 if delta is None else check_real("delta", delta, low=0.0, high=1.0, low_open=True,
                                                                   high_open=True)


class _WithDelta(HistogramProtocol):
    """Adds the ``delta`` option to every subclass that does not declare it, and the shared privacy()."""

    #: offered by ``shufflesim account NAME`` (its mechanism() accounted; cli/account.py)
    account_by_name: ClassVar[bool] = True

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "options" in cls.__dict__ and not any(o.name == "delta" for o in cls.options):
            cls.options = (*cls.options, DELTA_OPTION)

    def privacy(self):
        """Central ε at the protocol's δ: the certified upper end of the two-sided accounting, capped at ε0."""
        if getattr(self, "_privacy", None) is None:
            from shufflesim.accounting.account import account
            from shufflesim.accounting.model.results import PrivacyGuarantee

            delta, eps0 = self.params["delta"], self.params["eps0"]
            try:
                rep = account(self.mechanism(), delta=[delta])
            except ShufflesimError as exc:
                self._privacy = PrivacyGuarantee(eps0, delta, "local", (f"shuffled accounting failed: {exc}",))
                return self._privacy
            (r,) = rep.results
            lower = "n/a" if r.eps_lower is None else f"{r.eps_lower:.6g}"
            # account() caps eps_upper at the certified local guarantee (eps0 raised by maths.rr.eps0_upper)
            self._privacy = PrivacyGuarantee(r.eps_upper, delta, "tight",
                                             (f"eps in [{lower}, {r.eps_upper:.6g}]", *rep.notes), source=r)
        return self._privacy


class MatrixProtocol(_WithDelta):
    """Shuffled single-message protocol of a finite local randomiser given by its matrix (module docstring).

    Subclasses set ``name``, ``summary``, ``options`` and implement :meth:`build_matrix`; the option
    ``delta`` (the δ of :meth:`privacy`) is added for them.
    """

    options: ClassVar[tuple[Option, ...]] = ()

    @classmethod
    def build_matrix(cls, **params: Any):
        """The randomiser's matrix (k × m, rows: inputs) for these options, or ``(matrix, declared_eps0)`` to
        have a stated ε0 checked against it.  Raise :class:`~shufflesim.errors.ParameterError` for bad options."""
        raise NotImplementedError(f"{cls.__name__} must implement build_matrix(**options)")

    @classmethod
    def _matrix(cls, params: dict) -> tuple[np.ndarray, float | None]:
        out = cls.build_matrix(**params)
        R, declared = out if isinstance(out, tuple) else (out, None)
        R = check_matrix(R)
        if params.get("k") is not None and params["k"] != R.shape[0]:
            raise ParameterError(f"{cls.name}: the matrix has {R.shape[0]} rows (inputs) but k={params['k']}")
        return R, declared

    @classmethod
    def data_k(cls, params: dict) -> int:
        """The number of input categories (rows of the matrix), for loading data before the protocol exists."""
        return int(cls._matrix({k: v for k, v in params.items() if k != "delta"})[0].shape[0])

    @classmethod
    def create(cls, n: int, *, delta=None, **params: Any) -> "MatrixProtocol":
        n = check_int("n", n, minimum=1)
        R, declared = cls._matrix(params)
        rand = MatrixRandomiser(R, declared)
        resolved = {**params, "k": rand.k, "m": rand.m, "eps0": rand.eps0, "delta": _resolve_delta(n, delta)}
        if declared is not None:
            resolved["eps0_declared"] = float(declared)
        A = inversion_operator(rand.matrix)
        B = inversion_bias(rand.matrix, A)
        biased = unidentifiable_inputs(B)
        if biased:  # rank < k: the estimate is biased for these inputs, and the exact MSE includes the bias
            resolved["unidentifiable_inputs"] = biased
        return cls(n=n, randomiser=rand, shuffler=SingleShuffler(), analyser=InversionAnalyser(A, n, B),
                   params=resolved)

    @property
    def matrix(self) -> np.ndarray:
        return self.randomiser.matrix

    # --- theory: channel inversion's exact MSE (variance + squared bias; pipeline.matrix docstring) -----------
    def _terms(self) -> np.ndarray:
        if getattr(self, "_mse_terms", None) is None:
            self._mse_terms = inversion_mse_terms(self.matrix, self.analyser.A)
        return self._mse_terms

    def mse_expected(self, data: np.ndarray) -> float:
        """Exact E Σ_j (ĉ_j − c_j)² for this data: Σ_x c_x t_x + ‖B c‖² (pipeline.matrix.inversion_mse; the
        bias term is 0 unless some input is not identifiable)."""
        counts = getattr(data, "counts", None)  # a DataSummary (counts input, issue 21) or the users' inputs
        if counts is None:
            counts = np.bincount(np.asarray(data), minlength=self.k)
        return inversion_mse(self._terms(), self.analyser.B, counts)

    def mse_worst(self) -> float:
        """The exact worst case over data sets of n users (every user holding the worst input;
        pipeline.matrix.inversion_mse_worst)."""
        return inversion_mse_worst(self._terms(), self.analyser.B, self.n)

    # --- the exact fast engine ------------------------------------------------------------------------------
    def sample_fast(self, summary, rng: np.random.Generator) -> HistogramEstimate:
        """The shuffled histogram Σ_x Multinomial(c_x, R[x]) drawn directly, then the analyser."""
        return self.analyser.estimate(matrix_histogram(summary.counts, self.matrix, rng))

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        hist = matrix_histogram_batch(summary.counts, self.matrix, rng, size)
        counts = hist.astype(float) @ self.analyser.A.T
        err = counts - truth
        dist = project_to_simplex(counts / self.n)
        tv = np.minimum(1.0, 0.5 * np.abs(dist - truth / self.n).sum(axis=1))
        return {"sq_error": np.sum(err * err, axis=1), "tv": tv}

    # --- accounting and audit -------------------------------------------------------------------------------
    def mechanism(self) -> ShuffledMatrix:
        """The shuffled reports of this randomiser (two-sided accounting: mechanisms.matrix)."""
        if getattr(self, "_mechanism", None) is None:
            # the checked array, not a list: the description re-checks it with numpy, not entry by entry
            self._mechanism = ShuffledMatrix(self.n, self.matrix)
        return self._mechanism

    def audit_matrix(self, pair=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """(R, input counts of X, of X′, description) for ``shufflesim audit``: the explicit ``pair`` of data
        sets, or a named case: the target switches between the inputs x, x′ attaining ε0 at output y, and
        the other n − 1 users hold the input c least likely to report y (a third value where possible)."""
        from shufflesim.pipeline.matrix import eps0_witness

        R, k = self.matrix, self.k
        if pair is not None:
            cx, cy = (np.bincount(np.asarray(d, dtype=np.int64), minlength=k) for d in pair)
            if cx.shape[0] != k or cy.shape[0] != k or cx.sum() != cy.sum() or np.abs(cx - cy).sum() != 2:
                raise ParameterError("--pair data sets must have the same size, inputs in 0..k-1, and differ in "
                                     "exactly one user's input")
            return R, cx, cy, f"explicit data sets of {int(cx.sum())} users"
        x, x2, y = eps0_witness(R)
        col = R[:, y].copy()
        col[[x, x2]] = np.inf if k > 2 else col[[x, x2]]
        c = int(np.argmin(col))
        cx = np.bincount([c] * (self.n - 1) + [x], minlength=k)
        cy = np.bincount([c] * (self.n - 1) + [x2], minlength=k)
        return R, cx, cy, f"the other {self.n - 1} users hold {c}; the target holds {x} (X) or {x2} (X')"


@register
class MatrixRRProtocol(MatrixProtocol):
    """``matrix-rr``: any finite randomiser read from a file (CSV rows or TOML ``matrix = [[...]]``)."""

    name = "matrix-rr"
    summary = "your own randomiser from its matrix file (CSV/TOML); channel inversion, two-sided accounting"
    example = "--matrix abstain.toml   # the matrix file of docs/plugins.md"
    options = (
        Option("matrix", str, "CSV or TOML file of the randomiser matrix (rows: inputs, columns: output "
               "probabilities; TOML: matrix = [[...], ...], optional eps0)", metavar="FILE"),
        Option("eps0", float, "declared local epsilon, checked against the matrix (optional)"),
    )

    @classmethod
    def build_matrix(cls, matrix=None, eps0=None):
        if matrix is None:
            raise ParameterError("matrix-rr needs --matrix FILE (a .csv or .toml file with one row per input)")
        R, declared = read_matrix(matrix)
        if eps0 is not None and declared is not None and not math.isclose(eps0, declared, rel_tol=1e-12):
            raise ParameterError(f"--eps0 {eps0:g} and the file's eps0 = {declared:g} differ; give one")
        return R, eps0 if eps0 is not None else declared


class SamplerProtocol(_WithDelta):
    """A randomiser known only as code: subclasses implement :meth:`build_sampler` (a
    :class:`~shufflesim.pipeline.matrix.SamplerRandomiser` with its declared ε0) and :meth:`estimate_counts`.

    It gets the faithful engine and the ε0-based upper end of the accounting; :meth:`missing` lists what a
    matrix would add."""

    options: ClassVar[tuple[Option, ...]] = ()

    @classmethod
    def build_sampler(cls, **params: Any) -> SamplerRandomiser:
        raise NotImplementedError(f"{cls.__name__} must implement build_sampler(**options)")

    def estimate_counts(self, hist: np.ndarray) -> np.ndarray:
        """Estimate of the k input counts from the m-bin histogram of the shuffled reports."""
        raise NotImplementedError(f"{type(self).__name__} must implement estimate_counts(hist)")

    @classmethod
    def data_k(cls, params: dict) -> int:
        return int(cls.build_sampler(**{k: v for k, v in params.items() if k != "delta"}).k)

    @classmethod
    def create(cls, n: int, *, delta=None, **params: Any) -> "SamplerProtocol":
        n = check_int("n", n, minimum=1)
        rand = cls.build_sampler(**params)
        if not isinstance(rand, SamplerRandomiser):
            raise ParameterError(f"{cls.__name__}.build_sampler must return a SamplerRandomiser")
        resolved = {**params, "k": int(rand.k), "m": int(rand.m), "eps0": rand.eps0,
                    "eps0_source": "declared (not derived: no matrix)", "delta": _resolve_delta(n, delta)}
        proto = cls(n=n, randomiser=rand, shuffler=SingleShuffler(), analyser=_SamplerAnalyser(None), params=resolved)
        proto.analyser.protocol = proto
        return proto

    def mechanism(self) -> ShuffledMatrix:
        return ShuffledMatrix(self.n, None, self.params["eps0"])

    def missing(self) -> list[str]:
        """What shufflesim cannot derive without the randomiser's matrix."""
        return ["eps0 is declared, not derived from the matrix (nor checked)",
                "the exact fast engine (--engine fast): it draws the shuffled histogram from the matrix",
                "the exact MSE (mse_expected, mse_worst): validate has no theory value to test",
                "the lower end of the accounting (explicit data sets' exact delta needs the matrix)",
                "an audit setup (the audit samples the view from the matrix)"]


class _SamplerAnalyser(Analyser):
    name = "sampler-estimate"

    def __init__(self, protocol):
        self.protocol = protocol

    def analyse(self, view: View, rng: np.random.Generator) -> HistogramEstimate:
        p = self.protocol
        hist = view.counts(0, minlength=p.params["m"])
        counts = np.asarray(p.estimate_counts(hist), dtype=float)
        if counts.shape != (p.k,):
            raise ParameterError(f"{p.name}.estimate_counts must return {p.k} counts; got shape {counts.shape}")
        return HistogramEstimate(hist, counts, project_to_simplex(counts / p.n))
