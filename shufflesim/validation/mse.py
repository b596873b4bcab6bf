"""MSE validation: a protocol's theory hooks checked exactly where theory decides, then against its
Monte-Carlo squared errors (issue 20; docs/validation.md#mse-test).

**Exact theory first.**  Before any simulation the theory values are compared with each other:
``mse_worst`` (the exact worst case of the expectation over all data sets) below the exact
``mse_expected(data)`` is ``violated`` (exact); a paper's ``mse_bound`` below ``mse_expected(data)`` is
violated in expectation at these data, one below ``mse_worst`` at the worst-case data, and one at or above
``mse_worst`` holds for every data set (``holds``, exact).  Comparisons allow a relative round-off of
:data:`ROUNDOFF`, so that two expressions of the same value never produce a verdict.

**Then simulation tests what theory cannot settle**: that the implementation matches the theory.

* ``mse_expected`` — an **equivalence** check: ``agrees`` when the confidence set for E[squared error]
  lies within ± ``margin`` (relative) of ``mse_expected``; ``violated`` when it lies entirely outside
  that band; ``undecided`` otherwise.
* ``mse_worst`` / ``mse_bound`` not settled exactly (no ``mse_expected``) — **one-sided** checks of
  E[squared error] ≤ value: ``violated`` when the confidence set lies above it, ``holds`` when below.
  A bound settled exactly draws no trials of its own, but its exact verdict is checked against the
  confidence set of the trials drawn: where the verdict asserts E[squared error] ≤ value at these data and
  the set lies above the value (or asserts > and the set lies at or below it), the check is ``disagrees``
  (basis "exact vs simulation"), never "holds (exact)": theory is tested, not trusted (issue 29).

Every decision comes from one confidence set for the one mean μ = E[squared error]; a wrong decision of any
check needs that set to miss μ, so the family-wise error of all checks is at most α without correction.
Two designs:

* **sequential** (default, :func:`validate_sequential`): batches of trials until every check is decided or
  a budget is spent, with the anytime-valid asymptotic confidence sequence of
  :mod:`shufflesim.validation.sequential` (valid at every look);
* **fixed** (``trials=N``, :func:`validate_errors`): one look after N trials with the equal-tailed
  bootstrap-t interval at level 1 − α (:mod:`shufflesim.validation.stats`).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
from scipy import stats

from shufflesim.core.checks import ALPHA_PRECISION, check_int, check_real
from shufflesim.core.rng import as_seed_sequence
from shufflesim.errors import ParameterError
from shufflesim.validation.sequential import FIRST_LOOK, METHOD as SEQ_METHOD, T_OPT, AsympCS, RunningMoments, next_look
from shufflesim.validation.stats import bootstrap_t, bootstrap_t_interval

#: relative round-off allowed when theory values are compared exactly
ROUNDOFF = 1e-9
DEFAULT_MARGIN = 0.02
DEFAULT_MAX_TRIALS = 10**7
#: fewest trials from which the fixed design decides a check by its interval: the bootstrap-t interval's coverage
#: is asymptotic (exact only as T grows), so below the sequential design's first look (the smallest sample it
#: trusts its asymptotic confidence sequence at) a fixed run reports its interval but leaves the checks undecided
#: (with 5 trials of a heavy-tailed squared error the interval misses its mean far more often than alpha)
MIN_FIXED_TRIALS = FIRST_LOOK
FIXED_METHOD = ("equal-tailed bootstrap-t interval (studentised bootstrap, {B} resamples) at level {level:g} after "
                "{T} trials: one interval for every check (family-wise error {alpha:g}), used to decide from {m} trials")


def _pct(m: float) -> str:
    return f"{100 * m:.3g} %"


def theory_checks(expected: float | None, worst: float | None, bound: float | None,
                  margin: float = DEFAULT_MARGIN) -> list[dict[str, Any]]:
    """The checks of a run with what exact theory decides (see the module docstring)."""
    ok = [v is not None and math.isfinite(v) for v in (expected, worst, bound)]
    e, w, b = (float(v) if f else None for v, f in zip((expected, worst, bound), ok))
    checks: list[dict[str, Any]] = []
    if e is not None:
        checks.append({"check": "mse_expected", "kind": "equivalence", "theory": e,
                       "hypothesis": f"E[sq error] within ±{_pct(margin)} of mse_expected",
                       "margin": margin, "band": [e * (1.0 - margin), e * (1.0 + margin)],
                       "verdict": "undecided", "basis": "simulation", "reason": ""})

    def below(x, y):  # x < y beyond round-off
        return x < y * (1.0 - ROUNDOFF)

    for name, v in (("mse_worst", w), ("mse_bound", b)):
        if v is None:
            continue
        c = {"check": name, "kind": "bound", "theory": v, "hypothesis": f"E[sq error] <= {name}",
             "verdict": "undecided", "basis": "simulation", "reason": ""}
        # "at_data": what the exact verdict asserts about E[sq error] at these data ("le": at most the value,
        # "gt": above it, None: nothing, the verdict is about other data) -- decide() tests it on the simulation
        if e is not None and below(v, e):
            c.update(verdict="violated", basis="exact", at_data="gt",
                     reason=f"{name} {v:.6g} < exact mse_expected {e:.6g} of these data (violated in expectation)")
        elif name == "mse_worst" and e is not None:
            c.update(verdict="holds", basis="exact", at_data="le",
                     reason=f"exact mse_expected {e:.6g} <= mse_worst {v:.6g} at these data")
        elif name == "mse_bound" and w is not None and below(v, w):
            c.update(verdict="violated", basis="exact", at_data=None,
                     reason=f"mse_bound {v:.6g} < mse_worst {w:.6g}, the exact worst case (violated at the "
                            "worst-case data)")
        elif name == "mse_bound" and w is not None:
            c.update(verdict="holds", basis="exact", at_data="le",
                     reason=f"mse_bound {v:.6g} >= mse_worst {w:.6g}, the exact worst case (every data set)")
        elif name == "mse_bound" and e is not None:
            c.update(verdict="holds", basis="exact", at_data="le",
                     reason=f"exact mse_expected {e:.6g} <= mse_bound {v:.6g} at these data")
        checks.append(c)
    return checks


def _needs_simulation(c: dict) -> bool:
    return c["basis"] == "simulation" and c["verdict"] == "undecided"


def decide(checks: list[dict[str, Any]], lo: float, hi: float, level: float) -> None:
    """Update the checks in place from a confidence set [lo, hi] for E[sq error] at ``level``."""
    iv = f"the {level:.3g} interval [{lo:.6g}, {hi:.6g}]"
    for c in checks:
        v = c["theory"]
        if c["kind"] == "equivalence":
            a, b = c["band"]
            c["theory_in_interval"] = bool(lo <= v <= hi)
            if a <= lo and hi <= b:
                c.update(verdict="agrees", reason=f"{iv} lies within ±{_pct(c['margin'])} of mse_expected: "
                                                   f"[{a:.6g}, {b:.6g}]")
            elif hi < a or lo > b:
                c.update(verdict="violated", reason=f"{iv} lies outside [{a:.6g}, {b:.6g}] (mse_expected ± margin)")
            else:
                c.update(verdict="undecided", reason=f"{iv} overlaps the edge of [{a:.6g}, {b:.6g}]")
        elif c["basis"] in ("exact", "exact vs simulation"):
            # theory decided it, but theory is checked, not trusted: a simulation interval on the other side of
            # the value contradicts the exact verdict, and the check says so ("disagrees")
            at = c.get("at_data")
            if (at == "le" and lo > v) or (at == "gt" and hi <= v):
                exact = c.setdefault("exact_reason", c["reason"])
                side = "above" if at == "le" else "at or below"
                c.update(verdict="disagrees", basis="exact vs simulation",
                         reason=f"exact theory says {exact}, but {iv} lies {side} {c['check']} {v:.6g}: theory "
                                "and simulation disagree (the theory values or the implementation are wrong)")
        else:
            if lo > v:
                c.update(verdict="violated", reason=f"{iv} lies above {c['check']} {v:.6g}")
            elif hi <= v:
                c.update(verdict="holds", reason=f"{iv} lies at or below {c['check']} {v:.6g}")
            else:
                c.update(verdict="undecided", reason=f"{iv} contains {c['check']} {v:.6g}")


def required_radius(c: dict[str, Any], mean: float) -> float | None:
    """The interval radius around ``mean`` that would decide the undecided check ``c`` (None: none would)."""
    if c["kind"] == "equivalence":
        a, b = c["band"]
        r = min(mean - a, b - mean) if a < mean < b else max(a - mean, mean - b)
    else:
        r = abs(mean - c["theory"])
    return r if r > 0 else None


def overall(checks: list[dict[str, Any]]) -> str:
    verdicts = [c["verdict"] for c in checks]
    if "violated" in verdicts or "disagrees" in verdicts:
        return "violated"
    if "undecided" in verdicts or not verdicts:
        return "undecided"
    return "consistent"


def _meaning(margin: float, level: float) -> str:
    return (f"'agrees': the {level:g} confidence set for E[sq error] lies within ±{_pct(margin)} of mse_expected; "
            "'holds'/'violated' for a bound: the set lies below/above it, or theory decides exactly; 'disagrees': "
            "theory decided exactly but the set lies on the other side")


def validate_errors(sq_errors: np.ndarray, *, expected: float | None, worst: float | None = None,
                    bound: float | None = None, alpha: float = 0.05, margin: float = DEFAULT_MARGIN,
                    resamples: int = 2000, rng=None) -> dict[str, Any]:
    """Fixed-size validation of per-trial squared errors: exact theory, then one bootstrap-t interval."""
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True,
               precise=ALPHA_PRECISION)
    margin = check_real("margin", margin, low=0.0, high=1.0, low_open=True, high_open=True)
    x = np.asarray(sq_errors, dtype=float)
    T = int(x.size)
    if T < 3:
        raise ParameterError(f"a fixed-size validation needs at least 3 trials; got {T}")
    checks = theory_checks(expected, worst, bound, margin)
    boot = bootstrap_t(x, float(x.mean()), resamples=resamples, rng=rng)
    lo, hi = bootstrap_t_interval(boot, 1.0 - alpha)
    if T >= MIN_FIXED_TRIALS:
        decide(checks, lo, hi, 1.0 - alpha)
    else:  # the interval's coverage is asymptotic: too few trials to decide anything from it
        for c in checks:
            if _needs_simulation(c):
                c["reason"] = (f"{T} trials are fewer than the {MIN_FIXED_TRIALS} from which shufflesim decides by an "
                               f"asymptotic interval (the bootstrap-t interval [{lo:.6g}, {hi:.6g}] is shown, not "
                               "used)")
    sd = float(x.std(ddof=1))
    z = float(stats.norm.ppf(1.0 - alpha / 2.0))
    for c in checks:
        if c["verdict"] == "undecided":
            r = required_radius(c, boot["mean"])
            c["trials_needed"] = None if r is None else max(MIN_FIXED_TRIALS, int(math.ceil((z * sd / r) ** 2)))
    return {"design": "fixed", "checks": checks, "verdict": overall(checks), "alpha": alpha, "margin": margin,
            "trials": T, "mse": boot["mean"], "sd": sd, "interval": [lo, hi], "interval_level": 1.0 - alpha,
            "meaning": _meaning(margin, 1.0 - alpha),
            "method": FIXED_METHOD.format(B=resamples, level=1.0 - alpha, T=T, alpha=alpha, m=MIN_FIXED_TRIALS)}


def validate_sequential(draw: Callable[[int, int], np.ndarray], *, expected: float | None,
                        worst: float | None = None, bound: float | None = None, alpha: float = 0.05,
                        margin: float = DEFAULT_MARGIN, max_trials: int = DEFAULT_MAX_TRIALS,
                        max_seconds: float | None = None, t_opt: int = T_OPT, first_look: int = FIRST_LOOK,
                        block: int = 256, on_look: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Sequential validation: ``draw(start, stop)`` returns the squared errors of trials [start, stop).

    Looks after ``first_look`` trials and then every ~t/8 trials (:func:`~.sequential.next_look`) until
    every check is decided, ``max_trials`` trials are drawn or ``max_seconds`` have passed (checked between
    batches); an interrupt (Ctrl-C) stops at the last look.  ``on_look`` receives a progress dict."""
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True,
               precise=ALPHA_PRECISION)
    margin = check_real("margin", margin, low=0.0, high=1.0, low_open=True, high_open=True)
    max_trials = check_int("max_trials", max_trials, minimum=first_look)
    if max_seconds is not None:
        max_seconds = check_real("max_seconds", max_seconds, low=0.0, low_open=True)
    cs = AsympCS(alpha, t_opt)
    checks = theory_checks(expected, worst, bound, margin)
    mom = RunningMoments()
    t0 = time.perf_counter()
    lo = hi = math.nan
    looks = 0
    history: list[tuple[int, float, float]] = []
    stopped = "decided"
    if not any(_needs_simulation(c) for c in checks) and not checks:
        stopped = "nothing to simulate"
    try:
        while any(_needs_simulation(c) for c in checks):
            stop = min(next_look(mom.n, first_look, block), max_trials)
            mom.update(draw(mom.n, stop))
            looks += 1
            history.append((mom.n, mom.mean, mom.sd))
            a, b = cs.interval(mom.mean, mom.sd, mom.n)
            # the running intersection: covered whenever every C_t is, so decisions never flip back
            lo, hi = (a, b) if looks == 1 else (max(lo, a), min(hi, b))
            decide(checks, lo, hi, 1.0 - alpha)
            elapsed = time.perf_counter() - t0
            pending = [c for c in checks if _needs_simulation(c)]
            if on_look is not None:
                # for the ETA only: an estimate near a band edge by chance would predict millions of trials,
                # so the radius is taken as at least half the band's half-width
                need = [cs.trials_for_radius(max(required_radius(c, mom.mean) or 0.0,
                                                 0.5 * c.get("margin", 0.0) * c["theory"]), mom.sd) for c in pending]
                eta_trials = max((n for n in need if n is not None), default=None)
                on_look({"trials": mom.n, "seconds": elapsed, "interval": (lo, hi), "mse": mom.mean,
                         "undecided": [c["check"] for c in pending], "trials_needed": eta_trials,
                         "max_trials": max_trials, "max_seconds": max_seconds})
            if not pending:
                break
            if mom.n >= max_trials:
                stopped = "max-trials"
                break
            if max_seconds is not None and elapsed >= max_seconds:
                stopped = "max-seconds"
                break
    except KeyboardInterrupt:
        stopped = "interrupted"
    for c in checks:
        if c["verdict"] == "undecided" and mom.n > 1:
            r = required_radius(c, mom.mean)
            c["trials_needed"] = None if r is None else cs.trials_for_radius(r, mom.sd)
        if c["basis"] == "simulation" and history:
            c.update(_anytime_p_values(cs, history, c))
    level = 1.0 - alpha
    return {"design": "sequential", "checks": checks, "verdict": overall(checks), "alpha": alpha, "margin": margin,
            "trials": mom.n, "looks": looks, "stopped": stopped, "mse": mom.mean if mom.n else math.nan,
            "sd": mom.sd, "interval": [lo, hi], "interval_level": level, "max_trials": max_trials,
            "max_seconds": max_seconds, "seconds_simulating": time.perf_counter() - t0,
            "meaning": _meaning(margin, level),
            "method": SEQ_METHOD.format(t_opt=t_opt, t0=first_look, level=level, alpha=alpha)}


def _anytime_p_values(cs: AsympCS, history, c: dict[str, Any]) -> dict[str, float]:
    """A simulated check's anytime-valid p-values from the sequence's looks (:meth:`.AsympCS.anytime_p`): of
    "agrees" (the intersection inside mse_expected ± margin) or "holds" (its upper end at or below the bound),
    and of "violated"; ``p_value`` is the one of the verdict reached (of "violated" while undecided).  One
    sequence serves every check, so these p-values are simultaneously valid: no multiplicity adjustment."""
    v = c["theory"]
    if "margin" in c:  # the equivalence check against mse_expected
        a, b = v * (1 - c["margin"]), v * (1 + c["margin"])
        p_ok = max(cs.anytime_p(history, b, "upper"), cs.anytime_p(history, a, "lower"))
        p_bad = min(cs.anytime_p(history, b, "lower"), cs.anytime_p(history, a, "upper"))
    else:  # a bound: holds when the mean is at most it
        p_ok = cs.anytime_p(history, v, "upper")
        p_bad = cs.anytime_p(history, v, "lower")
    p = p_ok if c["verdict"] in ("agrees", "holds") else p_bad
    return {"p_value": p, "p_agrees" if "margin" in c else "p_holds": p_ok, "p_violated": p_bad}


def theory_values(protocol, data: np.ndarray, planted_error: float = 0.0) -> dict[str, float | None]:
    """The protocol's theory hooks at ``data``, each multiplied by 1 + ``planted_error`` (a deliberately
    wrong theory, for showing that validation catches it; 0 leaves them alone)."""
    f = 1.0 + planted_error
    from shufflesim.pipeline.fast import mse_expected_of

    vals = {"expected": mse_expected_of(protocol, data), "worst": protocol.mse_worst(), "bound": protocol.mse_bound()}
    return {k: (None if v is None else float(v) * f) for k, v in vals.items()}


_DRAW_STATE: dict[str, Any] = {}


def _init_draw_worker(protocol, data, truth, summary, entropy, spawn_key) -> None:
    """Worker (or in-process) state of the sequential design's trial draws."""
    import signal

    if _DRAW_STATE.get("in_worker"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides what an interrupt means
    _DRAW_STATE.update(protocol=protocol, data=data, truth=truth, summary=summary,
                       root=np.random.SeedSequence(entropy, spawn_key=spawn_key))


def _init_pool_worker(*state) -> None:
    _DRAW_STATE["in_worker"] = True
    _init_draw_worker(*state)


def _draw_chunk(start: int, stop: int, on_progress=None) -> np.ndarray:
    """Squared errors of trials [start, stop): the trials of ``run_trials`` under the same root and engine."""
    from shufflesim.experiments.montecarlo import run_trial
    from shufflesim.pipeline.fast import fast_records

    st = _DRAW_STATE
    if st["summary"] is not None:
        sq = np.asarray(fast_records(st["protocol"], st["summary"], st["truth"], st["root"], 0, start, stop)["sq_error"],
                        dtype=float)
        if on_progress:
            on_progress(stop - start)
        return sq
    out = np.empty(stop - start)
    for i, t in enumerate(range(start, stop)):
        out[i] = run_trial(st["protocol"], st["data"], st["root"], 0, t, st["truth"])["sq_error"]
        if on_progress:
            on_progress(1)
    return out


def _pool(protocol, state, workers: int):
    """A process pool for the sequential design's batches, or None (one worker, or no safe context)."""
    if workers <= 1:
        return None
    from concurrent.futures import ProcessPoolExecutor

    from shufflesim.experiments import parallel

    ctx, reason = parallel.worker_context((protocol,))
    if ctx is None:
        parallel.warn_serial(reason, workers)
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_pool_worker, initargs=state)


def validate_protocol(protocol, data: np.ndarray, *, trials: int | None = None, rng=0, alpha: float = 0.05,
                      margin: float = DEFAULT_MARGIN, engine: str = "auto", max_trials: int = DEFAULT_MAX_TRIALS,
                      max_seconds: float | None = None, workers: int = 1, resamples: int = 2000,
                      planted_error: float = 0.0, on_progress=None, on_look=None) -> dict[str, Any]:
    """Validate ``protocol``'s theory hooks on ``data``: exact theory, then simulation.

    ``trials=None`` (default): the sequential design (:func:`validate_sequential`); ``trials=N``: a
    fixed-size run of N trials (:func:`validate_errors`); both on ``workers`` local processes.  Trial t is trial t of
    :func:`shufflesim.experiments.montecarlo.run_trials` under the root ``rng`` and the chosen ``engine``
    (``auto``: the exact fast engine where the protocol has one), so both designs see the same trials; the
    bootstrap uses the root's child ``spawn_key=(3,)``.  A run is reproducible from its seed unless it is
    stopped by ``max_seconds``.
    """
    from shufflesim.experiments.montecarlo import run_trials
    from shufflesim.pipeline.fast import DataSummary, resolve_engine, summarise_data

    planted_error = check_real("planted_error", planted_error, low=-1.0, high=1.0, low_open=True, high_open=True)
    root = as_seed_sequence(rng)
    engine = resolve_engine(protocol, engine)
    theory = theory_values(protocol, data, planted_error)
    if trials is not None:
        trials = check_int("trials", trials, minimum=3)
        run = run_trials(protocol, data, trials=trials, rng=root, workers=workers, on_progress=on_progress,
                         engine=engine)
        sq = run.records["sq_error"].to_numpy(dtype=float)
        boot_seed = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 3))
        out = validate_errors(sq, **theory, alpha=alpha, margin=margin, resamples=resamples, rng=boot_seed)
        out["complete"] = run.complete
    else:
        if isinstance(data, DataSummary):  # data as counts (issue 29: validate at n = 1e9 on the fast engine)
            from shufflesim.experiments.montecarlo import check_summary

            if engine != "fast":
                raise ParameterError("data given as counts (a DataSummary) run only under the fast engine")
            summary = check_summary(protocol, data)
            truth = protocol.truth_from_summary(summary)
        else:
            if engine == "faithful":  # the faithful trial's messages; the fast engine allocates none of them
                protocol.check_resources()
            data = protocol.check_data(data)
            truth = protocol.truth(data)
            summary = summarise_data(protocol, data) if engine == "fast" else None
        state = (protocol, data, truth, summary, root.entropy, tuple(root.spawn_key))
        pool = _pool(protocol, state, workers)
        try:
            if pool is None:
                _init_draw_worker(*state)

                def draw(start: int, stop: int) -> np.ndarray:
                    return _draw_chunk(start, stop, on_progress)
            else:
                def draw(start: int, stop: int) -> np.ndarray:
                    # whole fast-engine blocks per worker; the trials are the same for any split
                    step = max(256, -(-(stop - start) // workers // 256) * 256)
                    futs = [pool.submit(_draw_chunk, a, min(stop, a + step)) for a in range(start, stop, step)]
                    parts = []
                    for (a, f) in zip(range(start, stop, step), futs):
                        parts.append(f.result())
                        if on_progress:
                            on_progress(len(parts[-1]))
                    return np.concatenate(parts)

            out = validate_sequential(draw, **theory, alpha=alpha, margin=margin, max_trials=max_trials,
                                      max_seconds=max_seconds, on_look=on_look)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        out["complete"] = out["stopped"] != "interrupted"
        out["workers"] = 1 if pool is None else workers
    out["engine"] = engine
    out["planted_error"] = planted_error
    return out
