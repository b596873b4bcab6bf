"""[[cells]] steps: the error of a histogram protocol's distribution estimate at chosen cells.

Seed 003 (Biswas, Jung, Palamidessi) §V-A defines the *individual-specific utility* of a mechanism for the
primary input x0 as the error of the estimated frequency of x0 (shuffle+INV: the debiased, simplex-projected
estimate π̂; the central Gaussian: the noisy histogram).  The formulas carry a factor n (counts), but the
values printed in Tables V and VI (10⁻⁶ … 10⁻³ at n = 10³ … 10⁵) are on the scale of frequencies, so this
step reports |π̂_x − π_x| with π the data's empirical distribution.

Every point is the protocol at one n, on the same data as the scenario's sweeps (data stream (0, 0) of the
scenario seed, :func:`shufflesim.experiments.sweep.build_point`); its trials draw the analyser's output with
the protocol's exact fast engine (:meth:`~shufflesim.pipeline.protocol.Protocol.sample_fast`) from the
generator of ``SeedSequence(seed, spawn_key=(3, point))`` — prefix 3, beside the data (0), the faithful
trials (1) and the fast-engine blocks (2).  The first trial's estimate of every cell is kept for the heatmaps
(seed 003 Figures 4–5).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from shufflesim.errors import ShufflesimError
from shufflesim.experiments.stats import mean_ci
from shufflesim.scenarios.schema import ScenarioError

#: spawn-key prefix of the [[cells]] trials
CELLS_STREAM = 3


def run_cells_step(step: dict, points: list, refs: list | None, trials: int,
                   seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(table, maps)``: one row per (point, tabulated cell) with the per-trial errors' summary and the raw
    per-trial errors (column ``errors``, for the agreement test); and one row per (point, cell) of the grid
    with the true probability and the first trial's estimate.  ``refs`` are the points of the step this one
    is ``matched_to`` (label fields ``ref_NAME``)."""
    from shufflesim.core.rng import child
    from shufflesim.experiments.sweep import Sweep, build_point

    spec = Sweep(tuple(points), trials=trials, seed=seed, engine="fast").to_dict()
    root = np.random.SeedSequence(seed)
    rows, maps = [], []
    for g, pt in enumerate(points):
        try:  # a protocol without a fast engine, or bad options: one line, naming the step
            proto, _, truth, summary, _ = build_point(spec, g)
        except ShufflesimError as exc:
            raise ScenarioError(f"cells {step['name']}: {exc}") from None
        if not hasattr(proto, "k"):
            raise ScenarioError(f"cells {step['name']}: protocol {pt.protocol!r} is not a histogram protocol")
        k = proto.k
        bad = [c for c in step["cells"] if c >= k]
        if bad:
            raise ScenarioError(f"cells {step['name']}: cell {bad[0]} is outside the protocol's k = {k} categories")
        if step["grid"] is not None and step["grid"][0] * step["grid"][1] != k:
            raise ScenarioError(f"cells {step['name']}: grid {step['grid']} has {step['grid'][0] * step['grid'][1]} "
                                f"cells; the protocol has k = {k}")
        gen = np.random.Generator(np.random.PCG64(child(root, CELLS_STREAM, g)))
        dist = np.stack([proto.sample_fast(summary, gen).distribution for _ in range(trials)])  # trials × k
        true_p = np.asarray(truth, dtype=float) / proto.n
        errors = np.abs(dist[:, step["cells"]] - true_p[step["cells"]])  # trials × cells
        params = {f"param_{key}": v for key, v in proto.params.items() if isinstance(v, (int, float, str))}
        fields = {key[6:]: v for key, v in params.items()}
        if refs is not None:
            fields.update({f"ref_{key}": v for key, v in refs[g].params.items()})
        try:
            label = (step["label"] or pt.protocol).format(**fields, n=proto.n, protocol=pt.protocol)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise ScenarioError(f"cells {step['name']}: label {step['label']!r}: {type(exc).__name__} {exc}") from None
        names = step["cell_labels"] or step["cells"]
        for j, (cell, name) in enumerate(zip(step["cells"], names)):
            e = errors[:, j]
            m, lo, hi = mean_ci(e)
            q = np.quantile(e, [0.025, 0.5, 0.975])
            rows.append({"step": step["name"], "label": label, "protocol": pt.protocol, "data": pt.data,
                         "n": proto.n, **params, "cell": int(cell), "x0": int(name), "true_p": float(true_p[cell]),
                         "trials": trials, "mean_abs_error": m, "mean_lo": lo, "mean_hi": hi,
                         "q025": float(q[0]), "median": float(q[1]), "q975": float(q[2]), "errors": e})
        if step["grid"] is not None:
            maps.append(pd.DataFrame({"step": step["name"], "label": label, "n": proto.n, "cell": np.arange(k),
                                      "true_p": true_p, "estimate": dist[0], "mean_estimate": dist.mean(axis=0)}))
    return pd.DataFrame(rows), (pd.concat(maps, ignore_index=True) if maps else pd.DataFrame())
