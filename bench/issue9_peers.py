"""Adapters for issue 9's side-by-side benchmark (``bench/bench_issue9.py``): eps at a delta of a shuffled
eps0-LDP randomiser computed by the peers' own code and by dp_accounting, in the benchmark's process.

The peers' code is never part of shufflesim and is never committed: each adapter loads it from a local copy
whose directory is given on the command line.

* :class:`WangPeer` -- Wang et al. (VLDB 2024, doi:10.14778/3659437.3659444), repository
  wangsw/PrivacyAmplification: ``amplificationUB(p, beta, q0, q1, n, delta, T)`` of
  ``unifiedamplification.py`` with the general eps0-LDP parameters (shufflesim's ``vr_params_ldp``).  It
  bisects eps over [0, eps0] T times and returns the upper end of its bracket (width eps0 / 2^T).
* :class:`KoskelaPeer` -- Koskela, Heikkila, Honkela (seed 001), repository
  DPBayes/numerical-shuffler-experiments: ``get_omega(n, k, eps0, nx, L)`` of
  ``clones_comparison_fig1/delta_shuffler_fa.py`` builds the privacy-loss distribution of the stronger clone
  pair on their grid (nx points on [-L, L], losses rounded up); that file is a script, so only its imports
  and function definitions are executed (plus its module-level ``nx`` and ``L``, the settings it uses).  The
  file computes delta at given eps; eps at delta is found here by bisection on that delta (their formula
  sum_{x >= eps} (1 - e^(eps - x)) omega(x), plus their periodisation error term), to double precision,
  returning the end where their delta <= the target.  Their code loops in Python over the atoms, so the
  adapter predicts a row's time from the number of atoms their truncation keeps (counted from their
  windows, with their constant ``tol_`` read from the function) and two calibration runs.
* :class:`DpAccounting` -- Google's dp_accounting: the same PMFs shufflesim accounts (the atoms of
  ``Clones(n, eps0).pair("tight")``, the stronger clone pair) as two dictionaries outcome -> log-probability,
  ``from_two_probability_mass_functions(Q, P, pessimistic_estimate=True, symmetric=False)`` and
  ``get_epsilon_for_delta``, as ``bench/bench_accounting.py`` does.  Building the dictionaries is not timed.
  dp_accounting's eps is not certified (the dropped tail mass is not accounted; the discretisation is
  pessimistic only for the atoms it is given).  Above ``max_atoms`` atoms it is run at the largest n whose
  pair fits, and the benchmark times shufflesim again at that n.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import math
import os
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Timed:
    """A value with the wall and CPU (``time.process_time``, all threads) seconds it took."""

    value: object
    wall: float
    cpu: float


def timed(fn, *args, **kwargs) -> Timed:
    t, c = time.perf_counter(), time.process_time()
    v = fn(*args, **kwargs)
    return Timed(v, time.perf_counter() - t, time.process_time() - c)


class PeerUnavailable(Exception):
    """The peer's code could not be loaded from the directory given."""


# ---------------------------------------------------------------------------------------------------------
# Wang et al.
# ---------------------------------------------------------------------------------------------------------

class WangPeer:
    """Wang et al.'s ``amplificationUB`` loaded from ``path/unifiedamplification.py``."""

    FILE = "unifiedamplification.py"

    def __init__(self, path: str, T: int = 20):
        f = os.path.join(path, self.FILE)
        if not os.path.isfile(f):
            raise PeerUnavailable(f"no {self.FILE} in {path}")
        spec = importlib.util.spec_from_file_location("_peer_unifiedamplification", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        self._ub = mod.amplificationUB
        self.T = int(T)
        self.label = f"Wang et al. amplificationUB (T={self.T})"

    def bracket(self, eps0: float) -> float:
        """Width of the final bisection bracket: the answer is within this much above the code's exact eps."""
        return eps0 / 2.0 ** self.T

    def predict(self, n: int, eps0: float) -> float | None:
        return None

    def run(self, n: int, eps0: float, delta: float) -> float:
        from shufflesim.accounting.pairs.variation import vr_params_ldp

        p, beta, q = vr_params_ldp(eps0)
        return float(self._ub(p, beta, q, q, n, delta, self.T))


# ---------------------------------------------------------------------------------------------------------
# Koskela et al. (seed 001's authors)
# ---------------------------------------------------------------------------------------------------------

class KoskelaPeer:
    """The stronger-clone PLD of ``clones_comparison_fig1/delta_shuffler_fa.py`` (function ``get_omega``)."""

    FILE = os.path.join("clones_comparison_fig1", "delta_shuffler_fa.py")
    #: calibration cases (n, eps0): CPU seconds = fixed + rate x atoms, fitted through these two runs
    CALIBRATION = ((1000, 4.0), (4000, 4.0))

    def __init__(self, path: str, nx: int | None = None, L: float | None = None):
        f = os.path.join(path, self.FILE)
        if not os.path.isfile(f):
            raise PeerUnavailable(f"no {self.FILE} in {path}")
        tree = ast.parse(open(f, encoding="utf-8").read(), f)
        ns: dict = {}
        settings: dict = {}
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                with contextlib.suppress(ImportError):  # plotting imports the functions do not use
                    exec(compile(ast.Module([node], []), f, "exec"), ns)
            elif isinstance(node, ast.FunctionDef):
                exec(compile(ast.Module([node], []), f, "exec"), ns)
                if node.name == "get_omega":
                    for sub in ast.walk(node):
                        if (isinstance(sub, ast.Assign) and len(sub.targets) == 1
                                and isinstance(sub.targets[0], ast.Name) and sub.targets[0].id == "tol_"):
                            settings["tol_"] = ast.literal_eval(sub.value)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and node.targets[0].id in ("nx", "L") and node.targets[0].id not in settings):
                scratch = dict(ns)
                exec(compile(ast.Module([node], []), f, "exec"), scratch)
                settings[node.targets[0].id] = scratch[node.targets[0].id]
        if "get_omega" not in ns:
            raise PeerUnavailable(f"no get_omega in {f}")
        missing = [k for k in ("nx", "L", "tol_") if k not in settings]
        if missing:
            raise PeerUnavailable(f"cannot find {', '.join(missing)} in {f}")
        self._get_omega = ns["get_omega"]
        self.nx = int(nx if nx is not None else settings["nx"])
        self.L = float(L if L is not None else settings["L"])
        self.tol = float(settings["tol_"])
        self.label = f"Koskela et al. get_omega (nx={self.nx:.0e}, L={self.L:g})"
        self._rate: float | None = None

    def atoms(self, n: int, eps0: float) -> int:
        """Atoms their loops visit: rows i in [lower_i, upper_i), columns j in [lower_j, upper_j) (their windows)."""
        r = 2.0 / (1.0 + math.exp(eps0))
        half = math.sqrt(self.tol / (2 * (n - 1)))
        lo = int(max(0, math.floor((n - 1) * (r - half))))
        hi = int(min(n, math.ceil((n - 1) * (r + half))))
        i = np.arange(lo, hi, dtype=float)
        s = np.sqrt(self.tol / (2 * (i + 1)))
        lj = np.maximum(0, np.floor(i * (0.5 - s)))
        uj = np.minimum(i, np.ceil(i * (0.5 + s)))
        return int(np.maximum(uj - lj, 0).sum())

    def calibrate(self) -> tuple[float, float]:
        """(fixed CPU seconds, CPU seconds per atom) of ``get_omega`` (their eps search is not included: it is
        O(nx) and fast), from the two calibration runs; a non-positive slope (noise) falls back to the larger
        run's seconds per atom with no fixed part."""
        if self._rate is None:
            (n1, e1), (n2, e2) = self.CALIBRATION
            a1, a2 = self.atoms(n1, e1), self.atoms(n2, e2)
            t1, t2 = timed(self._omega, n1, e1).cpu, timed(self._omega, n2, e2).cpu
            slope = (t2 - t1) / (a2 - a1) if a2 > a1 else 0.0
            self._rate = (t1 - slope * a1, slope) if slope > 0 and t1 - slope * a1 >= 0 else (0.0, t2 / max(1, a2))
        return self._rate

    def rate(self) -> float:
        return self.calibrate()[1]

    def predict(self, n: int, eps0: float) -> float:
        fixed, rate = self.calibrate()
        return fixed + rate * self.atoms(n, eps0)

    def _omega(self, n: int, eps0: float):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            omega, _, err = self._get_omega(n, 1, eps0, self.nx, self.L)
        if "OUTSIDE" in out.getvalue():
            raise RuntimeError(f"Koskela et al.'s grid [-{self.L:g}, {self.L:g}] misses some losses "
                               f"(n={n}, eps0={eps0})")
        return np.real(np.asarray(omega)), float(err)

    def eps_for_delta(self, omega: np.ndarray, err: float, delta: float) -> float:
        """Smallest eps (to double precision) with their delta(eps) + err <= delta on their grid."""
        nx, L = self.nx, self.L
        dx = 2 * L / nx
        x = -L + dx * np.arange(nx)
        s0 = np.cumsum(omega[::-1])[::-1]  # sum_{j' >= j} omega
        s1 = np.cumsum((omega * np.exp(-x))[::-1])[::-1]  # sum_{j' >= j} omega e^-x

        def d(eps: float) -> float:
            j = int(math.ceil((L + eps) / dx))  # their j_start: grid points x >= eps
            return (s0[j] - math.exp(eps) * s1[j] if j < nx else 0.0) + err

        lo, hi = 0.0, L - dx
        if d(lo) <= delta:
            return 0.0
        while hi - lo > 1e-15 * max(1.0, hi):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if d(mid) > delta:
                lo = mid
            else:
                hi = mid
        return hi

    def run(self, n: int, eps0: float, delta: float) -> float:
        omega, err = self._omega(n, eps0)
        return self.eps_for_delta(omega, err, delta)


# ---------------------------------------------------------------------------------------------------------
# dp_accounting
# ---------------------------------------------------------------------------------------------------------

@dataclass
class DpCase:
    """dp_accounting's input for one row: n actually used, atom counts, the two PMF dictionaries."""

    n: int
    atoms_full: int
    atoms: int
    directions: list  # [(lower = Q, upper = P)], plus the mirrored direction if the pair is not symmetric


class DpAccounting:
    """dp_accounting on the atoms of shufflesim's tight (stronger clone) pair."""

    def __init__(self, interval: float = 1e-5, max_atoms: int = 5_000_000):
        from importlib.metadata import version

        from dp_accounting.pld import privacy_loss_distribution  # noqa: F401  (ImportError if not installed)

        self.interval = float(interval)
        self.max_atoms = int(max_atoms)
        self.label = f"dp_accounting {version('dp-accounting')} (interval {self.interval:g}; not certified)"

    @staticmethod
    def _pair(n: int, eps0: float):
        from shufflesim.mechanisms import Clones

        return Clones(n, eps0).pair("tight")

    def fitting_n(self, n: int, eps0: float) -> int:
        """n itself if its pair has at most ``max_atoms`` atoms, else the largest such n (to within 1 %)."""
        if self._pair(n, eps0).n_atoms <= self.max_atoms:
            return n
        lo, hi = 2, n
        while hi - lo > max(1, lo // 100):  # atoms grow with n
            mid = (lo + hi) // 2
            if self._pair(mid, eps0).n_atoms <= self.max_atoms:
                lo = mid
            else:
                hi = mid
        return lo

    def prepare(self, n: int, eps0: float) -> DpCase:
        full = self._pair(n, eps0).n_atoms
        m = self.fitting_n(n, eps0)
        pair = self._pair(m, eps0)
        sides = [pair] if pair.symmetric else [pair, pair.mirrored()]
        directions = []
        for pr in sides:
            lp, lq = pr.expand()
            upper = {i: v for i, v in enumerate(lp.tolist()) if v > -math.inf}  # P
            lower = {i: v for i, v in enumerate(lq.tolist()) if v > -math.inf}  # Q
            directions.append((lower, upper))
        return DpCase(n=m, atoms_full=int(full), atoms=int(pair.n_atoms), directions=directions)

    def run(self, case: DpCase, delta: float) -> float:
        from dp_accounting.pld import privacy_loss_distribution as pldlib

        eps = -math.inf
        for lower, upper in case.directions:
            d = pldlib.from_two_probability_mass_functions(lower, upper, pessimistic_estimate=True,
                                                           value_discretization_interval=self.interval,
                                                           symmetric=False)
            eps = max(eps, float(d.get_epsilon_for_delta(delta)))
        return eps
