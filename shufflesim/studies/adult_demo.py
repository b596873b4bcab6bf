"""The demo study: shuffled k-RR on the embedded Adult ages against the central analytic Gaussian.

For each ε0 of a grid it runs T trials of shuffled k-RR (k age bins) and certifies the central (ε, δ)
that setting satisfies (tight accountant, strong adversary, δ = 1/n²); then it runs the central
analytic-Gaussian baseline at exactly that (ε, δ) — seed 003's shuffle-vs-central comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from shufflesim.core.rng import as_seed_sequence, seed_metadata
from shufflesim.experiments.study import StudyResult, run_grid

DATA = "adult-age"
PRIVACY = "tight accountant, k-RR strong adversary pair, delta = 1/n^2"


@dataclass
class DemoResult:
    records: pd.DataFrame  # every finished trial of both protocols
    summary: pd.DataFrame  # one row per (protocol, point) with finished trials
    table: pd.DataFrame  # one row per eps0 with finished shuffled trials: shuffle vs Gaussian
    complete: bool
    meta: dict


def check_demo_fits(k: int, eps0s: Sequence[float], *, trials: int, seed: int, workers: int,
                    yes: bool = False) -> None:
    """Issue 29, work that will not fit is not started: the shuffled k-RR trials of every ε0 on the faithful
    engine, estimated from one probe (:func:`~shufflesim.experiments.montecarlo.faithful_seconds`; a lower bound:
    the central baseline's trials come on top; records' memory included), weighed by the one policy
    (:func:`shufflesim.core.resources.choose_path`, ``--yes`` lifts the time limit) before any trial runs."""
    from shufflesim.core.resources import RunPath, choose_path
    from shufflesim.core.rng import data_seed
    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import RECORD_BYTES, faithful_seconds
    from shufflesim.pipeline import registry

    cls = registry.get("krr")
    params = {"k": k, "eps0": eps0s[0]}
    root = as_seed_sequence(seed)
    x = load_data(DATA, data_kind=cls.data_kind, n=None, k=cls.data_k(params), rng=data_seed(root))
    proto = cls.create(len(x), **params)
    total = trials * len(eps0s)
    choose_path(f"{total} trial(s) of the demo's shuffled k-RR (n={proto.n}, before the central baseline)",
                [RunPath("the faithful engine", "--trials", bytes=2 * RECORD_BYTES * total,
                         seconds=faithful_seconds(proto, x, root, trials=total, workers=workers))],
                yes=yes, advice="lower --trials")


def run_demo(k: int, eps0s: Sequence[float], *, trials: int, seed: int, workers: int,
             on_progress: Callable[[int], None] | None = None) -> DemoResult:
    """Run the study; on ``KeyboardInterrupt`` stop promptly and return what finished (``complete=False``)."""
    points = [{"k": k, "eps0": e} for e in eps0s]
    shuf = run_grid("krr", points, data=DATA, n=None, trials=trials, rng=seed, workers=workers,
                    on_progress=on_progress)
    cent = StudyResult(pd.DataFrame(), pd.DataFrame(), True)
    if shuf.complete:  # after an interrupt, do not start the baseline
        central_points = [{"k": k, "eps": r.privacy_eps, "delta": r.privacy_delta} for r in shuf.summary.itertuples()]
        cent = run_grid("central-gaussian-hist", central_points, data=DATA, n=None, trials=trials, rng=seed,
                        workers=workers, on_progress=on_progress)
    complete = shuf.complete and cent.complete
    meta = {"study": "demo: shuffled k-RR vs central analytic Gaussian on Adult ages", "data": DATA,
            "points": points, "trials": trials, "seed": seed, "workers": workers,
            "seed_sequence": seed_metadata(as_seed_sequence(seed)), "complete": complete, "privacy": PRIVACY}
    records = pd.concat([f for f in (shuf.records, cent.records) if len(f)], ignore_index=True) \
        if len(shuf.records) or len(cent.records) else pd.DataFrame()
    summary = pd.concat([f for f in (shuf.summary, cent.summary) if len(f)], ignore_index=True) \
        if len(shuf.summary) or len(cent.summary) else pd.DataFrame()
    if len(summary):
        summary["covers"] = _covers(summary)
    return DemoResult(records, summary, _table(shuf.summary, cent.summary), complete, meta)


#: what ``covers`` says when the interval cannot be computed
NOT_COMPUTABLE = "not computable with 1 trial"


def _covers(s: pd.DataFrame) -> list:
    """Whether the MSE interval covers the exact expectation: True/False, or :data:`NOT_COMPUTABLE` where the
    interval is missing (fewer than two trials) — never a silent False."""
    lo = pd.to_numeric(s.mse_lo, errors="coerce")
    hi = pd.to_numeric(s.mse_hi, errors="coerce")
    ex = pd.to_numeric(s.mse_expected, errors="coerce")
    return [NOT_COMPUTABLE if not (np.isfinite(a) and np.isfinite(b)) else bool(a <= e <= b)
            for a, b, e in zip(lo, hi, ex)]


def _table(shuf: pd.DataFrame, cent: pd.DataFrame) -> pd.DataFrame:
    cols = ["eps0", "gamma", "eps", "delta", "mse", "mse_lo", "mse_hi", "mse_expected", "covers", "tv_shuffle",
            "tv_gaussian"]
    if not len(shuf):
        return pd.DataFrame(columns=cols)
    s = shuf
    tv_gauss = pd.Series(cent.tv.to_numpy(), index=cent.point.to_numpy()) if len(cent) else pd.Series(dtype=float)
    return pd.DataFrame({
        "eps0": s.param_eps0, "gamma": s.param_gamma, "eps": s.privacy_eps, "delta": s.privacy_delta,
        "mse": s.mse, "mse_lo": s.mse_lo, "mse_hi": s.mse_hi, "mse_expected": s.mse_expected,
        "covers": _covers(s),
        "tv_shuffle": s.tv, "tv_gaussian": [float(tv_gauss.get(p, np.nan)) for p in s.point],
    })
