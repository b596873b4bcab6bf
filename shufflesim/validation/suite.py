"""``validate --all``: every registered protocol's theory validated at a few settings, as one table.

Each setting runs :func:`shufflesim.validation.mse.validate_protocol` (exact theory, then the sequential
design on the fast engine where the protocol has one) from its own child of the root seed, so a row is
reproducible on its own unless its time budget stopped it.  A protocol without a setting here is listed as
such (never silently left out).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

#: (protocol, n, data spec, protocol options): small and typical settings per protocol
SETTINGS: tuple[tuple[str, int, str, dict], ...] = (
    ("krr", 100, "zipf:1.1", {"k": 4, "eps0": 2.0}),
    ("krr", 1000, "zipf:1.1", {"k": 10, "eps0": 1.0}),
    ("blanket-sum", 1000, "uniform", {"eps": 1.0}),
    ("blanket-sum", 1000, "beta:2,5", {"eps": 2.0}),
    ("recursive-sum", 1000, "uniform", {"eps": 1.0}),
    ("cheu-sum", 1000, "uniform", {"eps": 1.0}),
    ("ikos-sum", 1000, "uniform", {"eps": 1.0}),
    ("central-dlap-sum", 1000, "uniform", {"eps": 1.0}),
    ("central-laplace-sum", 1000, "uniform", {"eps": 1.0}),
    ("local-laplace-sum", 1000, "uniform", {"eps": 1.0}),
    ("local-rr-sum", 1000, "uniform", {"eps": 1.0}),
    ("central-laplace-hist", 1000, "zipf:1.1", {"k": 10, "eps": 1.0}),
    ("central-gaussian-hist", 1000, "zipf:1.1", {"k": 10, "eps": 1.0, "delta": 1e-6}),
    ("flame-simple", 1000, "uniform", {}),
    ("flame-double", 1000, "uniform", {}),
    ("flame-topk", 1000, "uniform", {}),
)


def _label(proto: str, n: int, data: str, opts: dict) -> str:
    o = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in opts.items())
    return f"{proto} n={n} {data}" + (f" {o}" if o else "")


def validate_all(*, seed: int = 0, alpha: float = 0.05, margin: float = 0.02, engine: str = "auto",
                 max_trials: int = 10**7, max_seconds: float | None = 20.0, settings=SETTINGS,
                 on_look: Callable[[dict], None] | None = None,
                 on_setting: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One row per (setting, check); settings from :data:`SETTINGS`; setting i uses seed child (i,)."""
    from shufflesim.core.rng import as_seed_sequence, data_seed
    from shufflesim.errors import ShufflesimError
    from shufflesim.experiments.data import load_data
    from shufflesim.pipeline import registry
    from shufflesim.validation.mse import validate_protocol

    rows: list[dict[str, Any]] = []
    root = as_seed_sequence(seed)
    covered = {s[0] for s in settings}
    for i, (name, n, spec, opts) in enumerate(settings):
        label = _label(name, n, spec, opts)
        if on_setting:
            on_setting(label)
        sub = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, i))
        try:
            cls = registry.get(name)
            data = load_data(spec, data_kind=cls.data_kind, n=n, k=opts.get("k"), rng=data_seed(sub))
            proto = cls.create(len(data), **opts)
            res = validate_protocol(proto, data, rng=sub, alpha=alpha, margin=margin, engine=engine,
                                    max_trials=max_trials, max_seconds=max_seconds, on_look=on_look)
        except ShufflesimError as exc:
            rows.append({"setting": label, "protocol": name, "check": "-", "theory": None, "verdict": "not run",
                         "basis": "", "reason": str(exc), "mse": None, "interval": [None, None], "trials": 0,
                         "seconds": 0.0, "engine": ""})
            continue
        if not res["checks"]:
            rows.append({"setting": label, "protocol": name, "check": "-", "theory": None,
                         "verdict": "no theory", "basis": "", "reason": "the protocol gives no theory value",
                         "mse": res["mse"], "interval": res["interval"], "trials": res["trials"],
                         "seconds": res["seconds_simulating"], "engine": res["engine"]})
        for c in res["checks"]:
            rows.append({"setting": label, "protocol": name, "check": c["check"], "theory": c["theory"],
                         "verdict": c["verdict"], "basis": c["basis"], "reason": c["reason"],
                         "trials_needed": c.get("trials_needed"), "mse": res["mse"], "interval": res["interval"],
                         "trials": res["trials"], "stopped": res["stopped"], "seconds": res["seconds_simulating"],
                         "engine": res["engine"]})
    for name in registry.names():
        if name not in covered:
            rows.append({"setting": name, "protocol": name, "check": "-", "theory": None, "verdict": "no setting",
                         "basis": "", "reason": "no setting in shufflesim.validation.suite.SETTINGS", "mse": None,
                         "interval": [None, None], "trials": 0, "seconds": 0.0, "engine": ""})
    return rows


def _g(x) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.6g}"


def render_markdown(rows: list[dict[str, Any]], *, alpha: float, margin: float, seed: int) -> str:
    """The rows as a Markdown table with a header that says what the verdicts mean."""
    out = [f"validate --all  seed={seed}  alpha={alpha:g}  margin=±{100 * margin:g} %", "",
           "| setting | check | theory | simulated MSE | interval | trials | verdict |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["interval"]
        iv = "–" if lo is None or not math.isfinite(lo) else f"[{lo:.6g}, {hi:.6g}]"
        v = r["verdict"] + (f" ({r['basis']})" if r.get("basis") else "")
        if r["verdict"] == "undecided" and r.get("trials_needed"):
            v += f", ~{r['trials_needed']:,} trials needed"
        if r["verdict"] in ("not run", "no setting"):
            v += f": {r['reason']}"
        out.append(f"| {r['setting']} | {r['check']} | {_g(r['theory'])} | {_g(r['mse'])} | {iv} | "
                   f"{r['trials']:,} | {v} |")
    out += ["", f"'agrees': the {1 - alpha:g} confidence sequence for E[sq error] lies within ±{100 * margin:g} % of "
            "mse_expected; a bound 'holds'/'is violated' when the sequence lies below/above it, or exactly when "
            "theory decides (basis 'exact').", ""]
    return "\n".join(out)
