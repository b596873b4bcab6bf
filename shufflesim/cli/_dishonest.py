"""``simulate PROTOCOL ... --dishonest C --strategy NAME [--direction ±1] [--target T]``: a Monte-Carlo study of
a protocol run by an honest population plus a deviating coalition (issue 23; seed 004 §8;
:mod:`shufflesim.experiments.population`, docs/theory.md#dishonest).

The attacked runs and the honest runs use the same trial seeds (faithful engine: trial t of both draws the
honest users' randomness from the same stream, so the honest run is the protocol's own ``simulate`` trial t);
the output puts the attacked estimate's bias and MSE (with intervals) next to the derived expected bias, the
derived worst case of any well-formed messages and the honest run's.  Without ``--dishonest`` or with
``--dishonest 0`` ``simulate`` is unchanged (this module is not reached).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from shufflesim.cli._common import float_arg, int_arg, print_json
from shufflesim.errors import ParameterError

STRATEGY_NAMES = ("push", "extreme-input", "withhold-noise", "dropout")


def add_options(group: argparse._ArgumentGroup) -> None:
    """``--dishonest --strategy --direction --target`` (all default to None: absent)."""
    group.add_argument("--dishonest", type=float_arg, default=None, metavar="C",
                       help="a coalition of C deviating users (a count, or a fraction of n in (0, 1)); 0 or absent: "
                       "every user is honest (docs/theory.md#dishonest)")
    group.add_argument("--strategy", default=None, metavar="NAME",
                       help=f"the coalition's strategy: {', '.join(STRATEGY_NAMES)} (default: push)")
    group.add_argument("--direction", type=int_arg, default=None, metavar="±1",
                       help="push the estimate up (+1, default) or down (-1)")
    group.add_argument("--target", type=int_arg, default=None, metavar="T",
                       help="krr: the category whose count the coalition attacks (default: 0)")


def active(args: argparse.Namespace) -> bool:
    """Whether the run is attacked (``--dishonest`` given and not 0); checks the flags' syntax first, so that a
    bad value is refused before anything runs (``--strategy`` and friends without ``--dishonest`` included)."""
    c = getattr(args, "dishonest", None)
    extra = [f"--{k}" for k in ("strategy", "direction", "target") if getattr(args, k, None) is not None]
    if c is None:
        if extra:
            raise ParameterError(f"{', '.join(extra)} needs --dishonest C (the coalition's size)")
        return False
    if not math.isfinite(c) or c < 0:
        raise ParameterError(f"--dishonest must be a count >= 0 or a fraction in (0, 1); got {c!r}")
    if c >= 1 and c != math.floor(c):
        raise ParameterError(f"--dishonest must be a whole count of users or a fraction in (0, 1); got {c!r}")
    if args.strategy is not None and args.strategy not in STRATEGY_NAMES:
        raise ParameterError(f"--strategy must be one of {', '.join(STRATEGY_NAMES)}; got {args.strategy!r}")
    if args.direction is not None and args.direction not in (1, -1):
        raise ParameterError(f"--direction must be +1 or -1; got {args.direction!r}")
    return c != 0


def coalition(args: argparse.Namespace, protocol):
    """The :class:`~shufflesim.experiments.population.Coalition` of the flags for this protocol (refusing what
    it does not support)."""
    from shufflesim.experiments.population import Coalition, check_coalition, coalition_size

    c = coalition_size(int(args.dishonest) if args.dishonest >= 1 else args.dishonest, protocol.n)
    co = Coalition(c, args.strategy or "push", 1 if args.direction is None else args.direction,
                   0 if args.target is None else args.target)
    return check_coalition(protocol, co)


def run(args: argparse.Namespace, protocol, data, root, *, trials: int, level: float, output, t0: float,
        workers: int) -> int:
    """The attacked study (see the module docstring); prints and returns the exit code."""
    import numpy as np

    from shufflesim import __version__
    from shufflesim.experiments.population import attack_records, derived_bias, truth
    from shufflesim.experiments.stats import support_ci
    from shufflesim.experiments.population import attack_engine

    co = coalition(args, protocol)
    engine, note = attack_engine(protocol, args.engine)
    if note:
        print(note, file=sys.stderr)
    if workers > 1:
        print("note: --dishonest runs its trials in this process (--workers is ignored)", file=sys.stderr)
    from shufflesim.experiments.population import Coalition

    honest_co = Coalition(0, co.strategy, co.direction, co.target)
    t_val = truth(protocol, data, co.target)
    att = attack_records(protocol, data, co, root, 0, 0, trials, engine, t_val)
    hon = attack_records(protocol, data, honest_co, root, 0, 0, trials, engine, t_val)
    der = derived_bias(protocol, data, co)

    def stats(cols):
        b, blo, bhi, bm = support_ci(cols["error"], level)
        m, mlo, mhi, mm = support_ci(cols["sq_error"], level, low=0.0)
        return {"bias": b, "bias_ci": [blo, bhi], "bias_ci_method": bm, "mse": m, "mse_ci": [mlo, mhi],
                "mse_ci_method": mm}

    a, h = stats(att), stats(hon)
    privacy = protocol.privacy()
    left, left_why = None, ""
    if privacy is not None and 0 < co.size < protocol.n:  # issue 23 (3): the guarantee among the honest users
        from shufflesim.errors import ShufflesimError
        from shufflesim.validation.dishonest import honest_privacy

        try:
            left = honest_privacy(protocol, protocol.n - co.size)
        except ShufflesimError as exc:
            left_why = str(exc)
        if left is not None and not math.isfinite(left.eps):
            left, left_why = None, (f"no finite eps is certified at delta={privacy.delta:.3g} with "
                                    f"{protocol.n - co.size} of {protocol.n} users honest ({left.method})")
    out: dict[str, Any] = {
        "protocol": protocol.name, "params": protocol.params, "n": protocol.n, "data": args.data,
        "trials": trials, "trials_completed": trials, "complete": True, "seed": args.seed, "workers": 1,
        "engine": engine,
        "dishonest": {"given": args.dishonest, "size": co.size, "strategy": co.strategy, "direction": co.direction,
                      **({"target": co.target} if protocol.name == "krr" else {})},
        "estimand": f"count of category {co.target}" if protocol.name == "krr" else "sum",
        "truth": t_val, "ci_level": level,
        "attacked": a, "honest": h,
        "bias_expected": der["expected"], "bias_worst": [der["worst_low"], der["worst_high"]],
        "influence_per_user": [der["per_user_low"], der["per_user_high"]], "influence_note": der["note"],
        "privacy": privacy.to_dict() if privacy is not None else None,
        "privacy_honest": left.to_dict() if left is not None else None,
        **({"privacy_honest_reason": left_why} if left_why else {}),
        "version": __version__, "seconds": time.perf_counter() - t0,
    }
    if output is not None:
        import pandas as pd

        from shufflesim.core.rng import seed_metadata
        from shufflesim.experiments.results_io import write_table

        frame = pd.DataFrame({"trial": np.arange(trials), "error": att["error"], "sq_error": att["sq_error"],
                              "honest_error": hon["error"], "honest_sq_error": hon["sq_error"]})
        write_table(frame, output.path / "records", dict(out, seed_sequence=seed_metadata(root), run_id=output.run_id))
    if args.json:
        print_json(out)
    else:
        _print(out)
    return 0


def _print(out: dict) -> None:
    def f(x):
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6g}"

    d, a, h = out["dishonest"], out["attacked"], out["honest"]
    lv = f"{100 * out['ci_level']:.4g}%"
    print(f"protocol  {out['protocol']}  n={out['n']}  trials={out['trials_completed']}/{out['trials']}  "
          f"seed={out['seed']}  engine={out['engine']}")
    print("params    " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in out["params"].items()))
    tgt = f"  target={d['target']}" if "target" in d else ""
    print(f"coalition {d['size']} of {out['n']} users  strategy={d['strategy']}  direction={d['direction']:+d}{tgt}  "
          f"(estimand: {out['estimand']}, true value {f(out['truth'])})")
    print(f"bias      attacked {f(a['bias'])}  {lv} CI [{f(a['bias_ci'][0])}, {f(a['bias_ci'][1])}]   "
          f"honest {f(h['bias'])}  {lv} CI [{f(h['bias_ci'][0])}, {f(h['bias_ci'][1])}]")
    w = out["bias_worst"]
    why = ("exact, this strategy and data" if out["bias_expected"] is not None else
           "derived for IKOS only with p*x integer inputs: a deterministic rounded sum")
    print(f"derived   expected bias {f(out['bias_expected'])} ({why})   worst case "
          f"[{f(w[0])}, {f(w[1])}] (any well-formed messages of the coalition; one user's contribution "
          f"[{f(out['influence_per_user'][0])}, {f(out['influence_per_user'][1])}])")
    print(f"mse       attacked {f(a['mse'])}  {lv} CI [{f(a['mse_ci'][0])}, {f(a['mse_ci'][1])}]   "
          f"honest {f(h['mse'])}  {lv} CI [{f(h['mse_ci'][0])}, {f(h['mse_ci'][1])}]")
    if out["privacy"]:
        p = out["privacy"]
        print(f"privacy   eps={p['eps']:.6g} delta={p['delta']:.3g} ({p['method']}; all n users honest)")
    if out["privacy_honest"]:
        p = out["privacy_honest"]
        print(f"left      eps={p['eps']:.6g} delta={p['delta']:.3g} ({p['method']}: the coalition's reports known "
              "to the analyser)")
    elif out.get("privacy_honest_reason"):
        print(f"left      {out['privacy_honest_reason']}")
    print(f"seconds   {out['seconds']:.2f}")
