"""MSE validation: a protocol's Monte-Carlo squared errors tested against its theory hooks.

Checks (each present only when the protocol provides the value):

* ``mse_expected`` — H0: E[squared error] = ``mse_expected(data)``, two-sided;
* ``mse_worst``    — H0: E[squared error] ≤ ``mse_worst()``, one-sided (evidence of excess violates it);
* ``mse_bound``    — H0: E[squared error] ≤ ``mse_bound()``, one-sided.

Each p-value is a studentised-bootstrap (bootstrap-t) p-value on the per-trial squared errors (why: see
:mod:`shufflesim.validation.stats` and docs/validation.md); the checks of one run are corrected with
Holm's step-down procedure at family-wise level α.  Verdicts:

* ``violated``     — rejected by Holm at level α;
* ``consistent``   — not rejected, and the run had power ≥ 0.8 (normal approximation, at level α/m)
  against the stated alternative: a relative deviation ``rel_effect`` from the theory value (for the
  one-sided checks: a mean ``(1 + rel_effect)`` × the bound);
* ``inconclusive`` — not rejected, but with less power; ``trials_needed`` says how many trials would give
  power 0.8 against the same alternative.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shufflesim.core.checks import check_int, check_real
from shufflesim.core.rng import as_seed_sequence
from shufflesim.validation.stats import bootstrap_t, bootstrap_t_interval, holm, normal_power, trials_for_power

POWER_TARGET = 0.8
METHOD = ("bootstrap-t (studentised bootstrap, {B} resamples) on the per-trial squared errors; "
          "Holm step-down over the {m} checks at family-wise level {alpha}")


def validate_errors(sq_errors: np.ndarray, *, expected: float | None, worst: float | None = None,
                    bound: float | None = None, alpha: float = 0.05, rel_effect: float = 0.05,
                    resamples: int = 2000, rng=None) -> dict[str, Any]:
    """Test per-trial squared errors against the theory values; see the module docstring."""
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    rel_effect = check_real("rel_effect", rel_effect, low=0.0, low_open=True)
    x = np.asarray(sq_errors, dtype=float)
    T = int(x.size)
    specs = [(name, value, kind) for name, value, kind in
             (("mse_expected", expected, "equal"), ("mse_worst", worst, "at_most"), ("mse_bound", bound, "at_most"))
             if value is not None and math.isfinite(value)]
    sd = float(x.std(ddof=1)) if T > 1 else math.nan
    m = max(1, len(specs))
    checks: list[dict[str, Any]] = []
    pvals = []
    seeds = as_seed_sequence(rng).spawn(max(1, len(specs)))
    for (name, value, kind), ss in zip(specs, seeds):
        boot = bootstrap_t(x, value, resamples=resamples, rng=ss)
        if kind == "equal":
            p = boot["p_two"]
            lo, hi = bootstrap_t_interval(boot, 1.0 - alpha)
            effect = rel_effect * value
            sides = 2
            hypothesis = f"E[sq error] = {name}"
            alternative = f"|E[sq error] - {name}| = {rel_effect:g} x {name}"
        else:
            p = boot["p_greater"]
            lo, hi = -math.inf, bootstrap_t_interval(boot, 1.0 - 2 * alpha)[1]
            effect = rel_effect * value
            sides = 1
            hypothesis = f"E[sq error] <= {name}"
            alternative = f"E[sq error] = (1 + {rel_effect:g}) x {name}"
        power = normal_power(effect, sd, T, alpha / m, sides)
        checks.append({"check": name, "hypothesis": hypothesis, "theory": value, "mse": boot["mean"],
                       "p_value": p, "interval": [lo, hi], "interval_level": 1.0 - alpha,
                       "alternative": alternative, "power": power,
                       "_effect": effect, "_sides": sides})
        pvals.append(p)
    rejected = holm(pvals, alpha) if pvals else []
    for c, rej in zip(checks, rejected):
        effect, sides = c.pop("_effect"), c.pop("_sides")
        if rej:
            c["verdict"] = "violated"
        elif c["power"] >= POWER_TARGET:
            c["verdict"] = "consistent"
        else:
            c["verdict"] = "inconclusive"
            c["trials_needed"] = trials_for_power(effect, sd, alpha / m, POWER_TARGET, sides)
    verdicts = [c["verdict"] for c in checks]
    overall = ("violated" if "violated" in verdicts else "inconclusive" if ("inconclusive" in verdicts or not verdicts)
               else "consistent")
    return {"checks": checks, "verdict": overall, "alpha": alpha, "rel_effect": rel_effect, "trials": T,
            "mse": float(x.mean()) if T else math.nan, "sd": sd, "correction": "holm",
            "method": METHOD.format(B=resamples, m=m, alpha=alpha), "power_target": POWER_TARGET}


def validate_protocol(protocol, data: np.ndarray, *, trials: int, rng=0, alpha: float = 0.05,
                      rel_effect: float = 0.05, workers: int = 1, resamples: int = 2000,
                      on_progress=None) -> dict[str, Any]:
    """Run ``trials`` Monte-Carlo trials of ``protocol`` on ``data`` and validate their squared errors.

    Trial t uses the seed streams of :func:`shufflesim.experiments.montecarlo.run_trials` under the root
    ``rng``; the bootstrap uses the root's child ``spawn_key=(2,)``, so a run is reproducible from the seed.
    """
    from shufflesim.experiments.montecarlo import run_trials

    trials = check_int("trials", trials, minimum=3)
    root = as_seed_sequence(rng)
    run = run_trials(protocol, data, trials=trials, rng=root, workers=workers, on_progress=on_progress)
    sq = run.records["sq_error"].to_numpy(dtype=float)
    boot_seed = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 2))
    out = validate_errors(sq, expected=protocol.mse_expected(data), worst=protocol.mse_worst(),
                          bound=protocol.mse_bound(), alpha=alpha, rel_effect=rel_effect,
                          resamples=resamples, rng=boot_seed)
    out["complete"] = run.complete
    return out
