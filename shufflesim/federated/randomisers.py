"""Per-coordinate local randomisers for FLAME (seed 002): inputs in [0, 1] (a clipped, rescaled coordinate).

Both randomisers decompose as R(x) = γ·ω + (1 − γ)·(data part) with a *blanket* distribution ω that does
not depend on x (Balle, Bell, Gascón, Nissim 2019, "The privacy blanket"):

* :class:`LaplaceCoord` — x + Lap(1/ε) (sensitivity 1 on [0, 1]).  ω is Lap(1/ε) centred at 1/2, i.e. the
  mechanism's own output distribution for the input 1/2, and γ = e^{−ε/2} (docs/theory.md#flame).
* :class:`BlanketRR` — seed 002 Algorithm 1: randomised rounding of b·x to {0, …, b}, then with
  probability γ a uniform value of {0, …, b}.  With the b + 1 reportable values γ = (b + 1)/(e^ε + b)
  (the paper's [b] has b values and writes γ = b/(e^ε + b − 1); shufflesim reports the b + 1 values of the
  rounding, as the summation protocols do).

Every report is mapped to the unit scale by :meth:`unit` and satisfies E[unit(R(x))] − 1/2 =
``shrink``·(x − 1/2) and E[unit(ω)] = 1/2, which is what the analyser's de-biasing uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.core.checks import check_int, check_positive
from shufflesim.maths.rounding import randomised_round
from shufflesim.maths.rr import gamma_from_eps0

__all__ = ["LaplaceCoord", "BlanketRR", "make_randomiser", "RANDOMISERS", "LAPLACE_TAIL"]

#: the Laplace report's typecheck cut-off in units of its scale 1/eps: 64 ln 2, so an honest report is
#: rejected with probability 2^-64 (LaplaceCoord.valid)
LAPLACE_TAIL = 64.0 * math.log(2.0)


@dataclass(frozen=True)
class LaplaceCoord:
    """The Laplace mechanism Lap(1/eps) on one coordinate in [0, 1]."""

    eps: float
    name = "laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", check_positive("eps", self.eps))

    @property
    def gamma(self) -> float:
        return math.exp(-self.eps / 2.0)

    #: E[unit(R(x))] − 1/2 = shrink·(x − 1/2)
    shrink = 1.0

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return x + rng.laplace(0.0, 1.0 / self.eps, size=x.shape)

    def blanket(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws from ω = Lap(1/2, 1/eps)."""
        return 0.5 + rng.laplace(0.0, 1.0 / self.eps, size=size)

    @staticmethod
    def unit(y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=float)

    @property
    def output_radius(self) -> float:
        """Half-width of the accepted report range around 1/2: 1/2 + TAIL/eps.  x + Lap(1/eps) ranges over
        the whole real line, so the analyser's typecheck needs a cut-off: an honest report (x ∈ [0, 1], or ω)
        lies farther than TAIL/eps from [0, 1] with probability e^{−TAIL} = 2^{−64}."""
        return 0.5 + LAPLACE_TAIL / self.eps

    def valid(self, y: np.ndarray) -> np.ndarray:
        """The analyser's typecheck (seed 004 §8): finite and within :attr:`output_radius` of 1/2."""
        y = np.asarray(y, dtype=float)
        with np.errstate(invalid="ignore"):
            return np.isfinite(y) & (np.abs(y - 0.5) <= self.output_radius)

    def report_variance(self) -> float:
        """Var of one report around its mean (the same for ω)."""
        return 2.0 / self.eps**2


@dataclass(frozen=True)
class BlanketRR:
    """Seed 002 Algorithm 1 (Balle et al. 2019's R_{γ,b}) with local privacy ``eps`` over {0, …, b}."""

    eps: float
    b: int = 10
    name = "rr"

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", check_positive("eps", self.eps))
        object.__setattr__(self, "b", check_int("b", self.b, minimum=1))

    @property
    def gamma(self) -> float:
        """γ of k-ary randomised response with k = b + 1 values (docs/theory.md#randomised-response)."""
        return gamma_from_eps0(self.eps, self.b + 1)

    @property
    def shrink(self) -> float:
        return 1.0 - self.gamma

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = randomised_round(x, self.b, rng).astype(np.int64)
        flip = rng.random(x.shape) < self.gamma
        out[flip] = rng.integers(0, self.b + 1, size=int(flip.sum()))
        return out.astype(float)

    def blanket(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws from ω = uniform on {0, …, b}."""
        return rng.integers(0, self.b + 1, size=size).astype(float)

    def unit(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=float) / self.b

    def valid(self, y: np.ndarray) -> np.ndarray:
        """The analyser's typecheck (seed 004 §8): an integer in {0, …, b}, the randomiser's only outputs."""
        y = np.asarray(y, dtype=float)
        with np.errstate(invalid="ignore"):
            return np.isfinite(y) & (y == np.round(y)) & (y >= 0) & (y <= self.b)

    def report_variance(self) -> float:
        """Upper bound on Var(unit(y)) of one report (uniform variance plus rounding)."""
        return ((self.b + 1) ** 2 - 1) / 12.0 / self.b**2 + 0.25 / self.b**2 + 0.25


RANDOMISERS = ("laplace", "rr")


def make_randomiser(kind: str, eps: float, b: int = 10):
    """``"laplace"`` or ``"rr"`` (R_{γ,b}) with local privacy ``eps`` per coordinate."""
    if kind == "laplace":
        return LaplaceCoord(eps)
    if kind == "rr":
        return BlanketRR(eps, b)
    from shufflesim.errors import ParameterError

    raise ParameterError(f"unknown randomiser {kind!r}; choose from {', '.join(RANDOMISERS)}")
