"""Parameter-grid studies: one protocol, several parameter points, T trials each.

Point g of a grid uses the trial streams ``(1, g, t)`` of the root seed and the data stream ``(0, 0)``
(the same data at every point that has the same data parameters), so a grid's records are reproducible
point by point and independent of the worker count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from shufflesim.pipeline import registry
from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.core.rng import RngLike, as_seed_sequence, data_seed


def _run_point(cls, protocol: str, g: int, params: Mapping[str, Any], root, *, data, n, trials, workers, level,
               lower, upper, on_progress, engine="faithful"):
    x = load_data(data, data_kind=cls.data_kind, n=n, k=cls.data_k(params), rng=data_seed(root),
                  lower=lower, upper=upper)
    proto = cls.create(len(x), **params)
    run = run_trials(proto, x, trials=trials, rng=root, point=g, workers=workers, on_progress=on_progress,
                     engine=engine)
    labels = {f"param_{k}": v for k, v in proto.params.items() if isinstance(v, (int, float, str))}
    frame = run.records.assign(point=g, protocol=protocol, **labels)
    if not len(run.records):
        return run, frame, None
    try:
        return run, frame, _summary_row(proto, x, run, g, protocol, labels, level)
    except KeyboardInterrupt:  # interrupted while summarising: keep the finished trials
        run.complete = False
        return run, frame, None


def _summary_row(proto, x, run, g, protocol, labels, level) -> dict[str, Any]:
    s = summarise(run.records, proto, x, level=level)
    row = {"point": g, "protocol": protocol, "n": proto.n, **labels}
    row.update(trials=s["trials"], mse=s["mse"], mse_lo=s["mse_ci"][0], mse_hi=s["mse_ci"][1],
               mse_expected=s["mse_expected"], mse_worst=s["mse_worst"], mse_bound=s["mse_bound"])
    for m in proto.metric_names:
        if m in s:
            row.update({m: s[m], f"{m}_lo": s[f"{m}_ci"][0], f"{m}_hi": s[f"{m}_ci"][1]})
    pg = proto.privacy()
    if pg is not None:
        row.update(privacy_eps=pg.eps, privacy_delta=pg.delta, privacy_method=pg.method)
    return row


@dataclass
class StudyResult:
    """Tidy per-trial records and one summary row per grid point."""

    records: pd.DataFrame
    summary: pd.DataFrame
    complete: bool


def run_grid(
    protocol: str,
    points: Sequence[Mapping[str, Any]],
    *,
    data: str,
    n: int | None,
    trials: int,
    rng: RngLike = 0,
    workers: int = 1,
    level: float = 0.95,
    lower: float | None = None,
    upper: float | None = None,
    on_progress: Callable[[int], None] | None = None,
    engine: str = "faithful",
) -> StudyResult:
    """Run ``trials`` trials at every parameter point.

    On ``KeyboardInterrupt`` it stops at once and returns what finished (``complete=False``): the records
    of every finished trial, and a summary row (its ``trials`` column says how many ran) for every point
    whose summary was computed before the interrupt.
    """
    cls = registry.get(protocol)
    root = as_seed_sequence(rng)
    recs, rows = [], []
    complete = True
    for g, params in enumerate(points):
        try:
            run, frame, row = _run_point(cls, protocol, g, params, root, data=data, n=n, trials=trials,
                                         workers=workers, level=level, lower=lower, upper=upper,
                                         on_progress=on_progress, engine=engine)
        except KeyboardInterrupt:  # between or inside trial batches: keep every finished point
            complete = False
            break
        recs.append(frame)
        if row is not None:
            rows.append(row)
        if not run.complete:
            complete = False
            break
    return StudyResult(pd.concat(recs, ignore_index=True) if recs else pd.DataFrame(), pd.DataFrame(rows), complete)
