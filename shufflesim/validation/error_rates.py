"""Error rates of the whole ``validate`` procedure, measured by simulation (issue 20; docs/validation.md).

The sequential procedure (:func:`shufflesim.validation.mse.validate_sequential`: looks, confidence
sequence, decisions, stopping) is run many times on data of **known mean** drawn from laws shaped like
squared errors — a squared normal error (χ²₁: a sum protocol's squared error), a sum of four (χ²₄: a
histogram's), a squared Laplace error (the central Laplace sum's, skewness 6.6) and, beyond the stated
moment assumption, a squared Student-t₅ error (finite variance, infinite third moment) — against theory
values placed where each kind of error can happen:

* ``exact``      — ``mse_expected`` = μ: a ``violated`` is a false alarm; ``agrees`` is the right answer;
* ``edge-high`` / ``edge-low`` — μ at the upper / lower edge of the ±margin band: ``agrees`` is the
  equivalence test's type-I error (the truth is *not* inside the open band);
* ``planted+5`` / ``planted-5`` — ``mse_expected`` = 1.05 μ / 0.95 μ (a 5 % error in a theory hook):
  ``violated`` is the power;
* ``bound-edge`` — no ``mse_expected``, a bound equal to μ: ``violated`` is the one-sided type-I error.

``miscovered`` counts runs in which the confidence sequence missed μ at some look — every wrong decision
needs one, so it bounds every error rate above.  ``python -m shufflesim.validation.error_rates`` prints the
table of docs/validation.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shufflesim.validation.mse import validate_sequential

#: name -> (sampler(generator, size), exact mean)
DISTRIBUTIONS = {
    "chi2_1": (lambda g, s: g.standard_normal(s) ** 2, 1.0),
    "chi2_4": (lambda g, s: g.chisquare(4, s), 4.0),
    "laplace_sq": (lambda g, s: g.laplace(0.0, 1.0, s) ** 2, 2.0),
    "t5_sq": (lambda g, s: g.standard_t(5, s) ** 2, 5.0 / 3.0),
}
SCENARIOS = ("exact", "edge-high", "edge-low", "planted+5", "planted-5", "bound-edge")


def theory_for(scenario: str, mu: float, margin: float) -> dict[str, float | None]:
    """The theory values of ``scenario`` for a true mean ``mu`` (see the module docstring)."""
    expected = {"exact": mu, "edge-high": mu / (1.0 + margin), "edge-low": mu / (1.0 - margin),
                "planted+5": 1.05 * mu, "planted-5": 0.95 * mu, "bound-edge": None}[scenario]
    return {"expected": expected, "worst": None, "bound": mu if scenario == "bound-edge" else None}


def run_rates(dist: str, scenario: str, *, runs: int, max_trials: int, seed: int = 0, alpha: float = 0.05,
              margin: float = 0.02) -> dict[str, Any]:
    """``runs`` independent runs of the sequential procedure; counts of each verdict of the simulated check,
    of runs whose confidence sequence missed μ at some look, and the mean trials per run."""
    sampler, mu = DISTRIBUTIONS[dist]
    theory = theory_for(scenario, mu, margin)
    counts = {"agrees": 0, "holds": 0, "violated": 0, "undecided": 0}
    miscovered = 0
    trials = []
    for ss in np.random.SeedSequence(seed).spawn(runs):
        g = np.random.default_rng(ss)
        missed = [False]

        def look(st, missed=missed):
            lo, hi = st["interval"]
            if not lo <= mu <= hi:
                missed[0] = True

        res = validate_sequential(lambda a, b, g=g: sampler(g, b - a), **theory, alpha=alpha, margin=margin,
                                  max_trials=max_trials, on_look=look)
        (c,) = res["checks"]
        counts[c["verdict"]] += 1
        miscovered += missed[0]
        trials.append(res["trials"])
    return {"distribution": dist, "scenario": scenario, "runs": runs, "max_trials": max_trials, "alpha": alpha,
            "margin": margin, **counts, "miscovered": miscovered, "mean_trials": float(np.mean(trials))}


def table(runs: int = 1000, max_trials: int = 200_000, seed: int = 0):
    """The rows of the docs table, one (distribution, scenario) at a time (a generator)."""
    for i, d in enumerate(DISTRIBUTIONS):
        for j, s in enumerate(SCENARIOS):
            yield run_rates(d, s, runs=runs, max_trials=max_trials, seed=seed + 17 * i + j)


def krr_power(runs: int = 200, seed: int = 1000, planted: tuple[float, ...] = (0.0, 0.05, -0.05)) -> list[dict]:
    """End to end on a real protocol: k-RR (n = 100, k = 4, ε0 = 2, zipf:1.1 data) validated sequentially
    from seeds ``seed`` … ``seed + runs − 1`` with every theory hook multiplied by 1 + planted error."""
    import time

    from shufflesim.experiments.data import load_data
    from shufflesim.pipeline import registry
    from shufflesim.validation.mse import validate_protocol

    x = load_data("zipf:1.1", data_kind="categorical", n=100, k=4, rng=0)
    proto = registry.create("krr", 100, k=4, eps0=2.0)
    out = []
    for pe in planted:
        verdicts: dict[str, int] = {}
        trials, secs = [], []
        for r in range(runs):
            t0 = time.perf_counter()
            res = validate_protocol(proto, x, rng=seed + r, planted_error=pe, max_trials=10**6)
            secs.append(time.perf_counter() - t0)
            (c,) = [c for c in res["checks"] if c["check"] == "mse_expected"]
            verdicts[c["verdict"]] = verdicts.get(c["verdict"], 0) + 1
            trials.append(res["trials"])
        out.append({"planted": pe, "runs": runs, **verdicts, "median_trials": float(np.median(trials)),
                    "max_trials": int(max(trials)), "median_seconds": float(np.median(secs))})
    return out


def _main() -> None:  # pragma: no cover - prints the docs table
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--max-trials", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--krr-runs", type=int, default=0, help="also the end-to-end k-RR runs (planted 0, +5 %%, -5 %%)")
    a = p.parse_args()
    for r in krr_power(a.krr_runs) if a.krr_runs else ():
        print(r, flush=True)
    print("| data | scenario | runs | agrees | holds | violated | undecided | CS missed μ | mean trials |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table(a.runs, a.max_trials, a.seed):
        print(f"| {r['distribution']} | {r['scenario']} | {r['runs']} | {r['agrees']} | {r['holds']} | "
              f"{r['violated']} | {r['undecided']} | {r['miscovered']} | {r['mean_trials']:,.0f} |", flush=True)


if __name__ == "__main__":  # pragma: no cover
    _main()
