"""``run --check``'s estimate against a measured run, per scenario and per step (issue 29).

    PYTHONPATH=. python bench/run_estimates.py RUNS_DIR [--quick]

RUNS_DIR is the output of ``shufflesim run --all [--quick] --out RUNS_DIR``: each ``run.json`` records the measured
seconds per step.  Run it with ``--cpu`` timing (bench/run_estimates.md says how) for CPU seconds, which a loaded
machine does not inflate.  Prints one Markdown row per scenario: the estimate, the measured time and their ratio.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from shufflesim.scenarios.schema import load
    from shufflesim.scenarios.steps import ESTIMATE_FACTOR, ESTIMATE_FLOOR_SECONDS, estimate_seconds, estimate_steps

    root, quick = Path(argv[0]), "--quick" in argv
    print("| scenario | estimate (s) | measured (s) | estimate / measured | worst step (estimate / measured) |")
    print("|---|---:|---:|---:|---|")
    worst = 1.0
    for run in sorted(root.glob("*/run.json")):
        rec = json.loads(run.read_text())
        sc = load(Path("scenarios") / rec["scenario"])
        est, took = estimate_seconds(sc, quick), rec["seconds"]
        steps = estimate_steps(sc, quick)
        ratios = {k: steps[k] / v for k, v in rec["step_seconds"].items() if k in steps and v > 0.05}
        name, r = max(ratios.items(), key=lambda kv: max(kv[1], 1 / kv[1]), default=("-", 1.0))
        ratio = max(est, ESTIMATE_FLOOR_SECONDS) / max(took, ESTIMATE_FLOOR_SECONDS)
        worst = max(worst, ratio, 1 / ratio)
        print(f"| {rec['scenario']} | {est:.1f} | {took:.1f} | {est / took:.2f} | {name}: {r:.2g} |")
    print(f"\nworst scenario ratio (times under {ESTIMATE_FLOOR_SECONDS:g} s counted as {ESTIMATE_FLOOR_SECONDS:g} s): "
          f"{worst:.2f} (stated factor: {ESTIMATE_FACTOR:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
