"""Run a validated scenario into an output directory: tidy results (Parquet + CSV), run metadata, PNG plots
(matplotlib optional) and ``report.md`` with the paper's numbers next to shufflesim's and a verdict column.

Layout of ``OUT/``::

    scenario.toml          the file that was run (copied verbatim)
    run.json               mode, versions, seconds per step, what was skipped
    sweeps/NAME/           the sweep engine's directory (parts, summary) of every [[sweep]]
    results/NAME.{parquet,csv,meta.json}   one tidy table per step; results/claims.* the registry verdicts;
                           results/paper.* every printed value of the paper next to shufflesim's, with verdicts;
                           results/NAME_cells.* a [[cells]] step's true and estimated cell distributions
    FIGURE.png             one plot per figure
    report.md

Running again into the same directory starts each sweep afresh; ``resume=True`` continues an interrupted
one.  Result tables hold only deterministic columns (no timings), so the same scenario and seed give identical
result files.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import textwrap
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from shufflesim.core.resources import time_limit
from shufflesim.scenarios.plots import (figure_title, have_matplotlib, plot_agreement, plot_curves, plot_defence,
                                        plot_heatmaps, plot_sweeps, plot_training)
from shufflesim.scenarios.report import write_report
from shufflesim.scenarios.schema import ScenarioError
from shufflesim.scenarios.steps import (as_list, active_sweeps, cells_trials, check_runnable, curve_combos,
                                        defence_fractions,
                                        curve_eps, curve_x, estimate_seconds, reference_step, shown_data,
                                        sweep_points, sweep_trials, training_axes, training_points)

__all__ = ["run_scenario", "estimate_seconds"]

#: the marker file of an output directory whose run has not finished (or failed)
INCOMPLETE = "INCOMPLETE"

def _label(kind: str, step: dict, template: str, **fields) -> str:
    """``template`` filled in; a format spec that does not fit a value is a :class:`ScenarioError` (the field
    names were checked before the run: :func:`~shufflesim.scenarios.steps.check_runnable`)."""
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise ScenarioError(f"{kind} {step['name']}: label {template!r}: {type(exc).__name__} {exc}") from None


# --- running the steps -----------------------------------------------------------------------------------
def run_sweep_step(step: dict, sc: dict, out: Path, *, quick: bool, workers: int, scheduler: str | None,
                   resume: bool, log: Callable[[str], None] | None = None) -> tuple[pd.DataFrame, list[dict]]:
    """The sweep's summary (one row per point, labelled) and its printed numbers with shufflesim's per-trial
    values of the same quantity (:func:`shufflesim.scenarios.agreement.printed_numbers`)."""
    from shufflesim.experiments.sweep import SPEC_NAME, Sweep, run_sweep

    sweep = Sweep(tuple(sweep_points(step, quick, sc)), trials=sweep_trials(step, quick), seed=sc["seed"],
                  engine=step["engine"])
    backend = "dask" if scheduler else ("serial" if workers <= 1 else "processes")
    target = out / "sweeps" / step["name"]
    if not resume and target.exists():  # a fresh run replaces this step's earlier sweep (--resume continues it)
        shutil.rmtree(target)
    if resume and not (target / SPEC_NAME).exists() and log is not None:
        log(f"sweep {step['name']}: nothing to resume in {target}; starting it afresh")
    res = run_sweep(sweep, target, backend=backend, workers=workers, scheduler=scheduler,
                    chunk_size=step["chunk_size"], resume=resume)
    if not res.complete:
        raise KeyboardInterrupt
    df = res.summary.copy()
    df.insert(0, "step", step["name"])
    df["data"] = df["data"].map(shown_data)
    template = step["label"] or step["protocol"]
    refs = None
    if step["matched_to"]:  # label fields ref_NAME: the parameters of the matched point of the reference sweep
        refs = sweep_points(reference_step(step, sc), quick, sc)
    labels = []
    for i, r in df.iterrows():
        fields = {c[6:]: r[c] for c in df.columns if c.startswith("param_")}
        if refs is not None:
            fields.update({f"ref_{k}": v for k, v in refs[int(r["point"])].params.items()})
        labels.append(_label("sweep", step, template, **fields, data=r["data"], protocol=r["protocol"]))
    df.insert(1, "label", labels)
    df["rmse"] = np.sqrt(df["mse"])
    df["rmse_mean"] = df["rmse"] / df["n"]  # root MSE of the mean (the estimate of a sum divided by n)
    if step["paper"] is None:
        return df, []
    from shufflesim.scenarios.agreement import printed_numbers

    records = res.records()
    column = "error" if step["paper"]["statistic"] == "abs_error_mean" else "tv"
    if column not in records:
        raise ScenarioError(f"sweep {step['name']}: paper.statistic {step['paper']['statistic']!r} needs the "
                            f"records' {column!r} column, which protocol {step['protocol']!r} does not produce")
    rows = []
    for _, r in df.iterrows():
        v = records.loc[records["point"] == r["point"], column].to_numpy(dtype=float)
        rows.append({"label": r["label"], "n": int(r["n"]), "values": np.abs(v) / r["n"] if column == "error" else v})
    return df, printed_numbers(step, "sweep", rows)


def _mechanism(kind: str, args: dict, flags: bool = False):
    """The mechanism description from its fields (``flags``: from its CLI flags, e.g. ``eps0`` for k-RR)."""
    from shufflesim.errors import ShufflesimError
    from shufflesim.mechanisms import kinds

    cls = kinds()[kind]
    try:
        return cls.from_flags(**args) if flags else cls(**args)
    except (TypeError, ShufflesimError) as exc:
        raise ScenarioError(f"mechanism {kind!r}: {exc}") from None


def run_curve_vs_flag(step: dict, quick: bool) -> pd.DataFrame:
    """ε(δ) at the step's δ against the mechanism flag ``x`` (one line per combination of the other args)."""
    from shufflesim.accounting import account

    xs = curve_x(step, quick)
    rows = []
    for args, comps in curve_combos(step):
        label = _label("curve", step, step["label"] or step["name"], **dict(args, compositions=comps,
                                                                            method=step["method"]))
        for xv in xs:
            mech = _mechanism(step["mechanism"], {**args, step["x"]: xv}, flags=True)
            (r,) = account(mech, delta=[step["delta"]], method=step["method"], compositions=comps,
                           composition=step["composition"]).results
            ok = hasattr(r, "eps_upper")
            rows.append({"step": step["name"], "label": label, "mechanism": step["mechanism"],
                         **{f"arg_{k}": v for k, v in args.items()}, "method": step["method"], "compositions": comps,
                         "x_name": step["x"], "x": xv, "delta": step["delta"],
                         "eps_lower": getattr(r, "eps_lower", None) if ok else None,
                         "eps_upper": r.eps_upper if ok else None, "applicable": ok,
                         "reason": "" if ok else str(getattr(r, "reason", r))})
    return pd.DataFrame(rows)


def run_curve_step(step: dict, quick: bool) -> pd.DataFrame:
    from shufflesim.accounting import account

    if step["x"] != "eps":
        return run_curve_vs_flag(step, quick)
    eps = curve_eps(step, quick)
    rows = []
    for args, comps in curve_combos(step):
        mech = _mechanism(step["mechanism"], args)
        rep = account(mech, eps=eps, method=step["method"], compositions=comps, composition=step["composition"])
        fmt = dict(args, compositions=comps, method=step["method"])
        label = _label("curve", step, step["label"] or step["name"], **fmt)
        for e, r in zip(eps, rep.results):
            ok = hasattr(r, "delta_upper")
            rows.append({"step": step["name"], "label": label, "mechanism": step["mechanism"],
                         **{f"arg_{k}": v for k, v in args.items()}, "method": step["method"],
                         "compositions": comps, "composition": step["composition"], "eps": e,
                         "delta_lower": getattr(r, "delta_lower", None) if ok else None,
                         "delta_upper": r.delta_upper if ok else None, "applicable": ok,
                         "reason": "" if ok else str(getattr(r, "reason", r))})
    return pd.DataFrame(rows)


def run_table_step(step: dict, quick: bool) -> pd.DataFrame:
    from shufflesim.studies.balle2020 import table3

    rows = step["quick_rows"] if quick and step["quick_rows"] is not None else step["rows"]
    cells = table3(rows=None if rows is None else as_list(rows), tight=step["tight"] and not quick)
    out = []
    for c in cells:
        d = c.to_dict()
        d.pop("details", None)
        value = d["mse_reproduced"] if d["mse_reproduced"] is not None else d["mse_exact"]
        # a cell's own verdict (the study's agreement test); the registry's verdicts are in the claims table
        verdict = {True: "reproduced", False: "not reproduced", None: "not-checkable"}[d["agree"]]
        out.append({"step": step["name"], **d, "shufflesim_mse": value, "verdict": verdict})
    return pd.DataFrame(out)


def run_defence_step(step: dict, quick: bool) -> pd.DataFrame:
    """A [[defence]] step: one row per (protocol, F) — the calibrated parameter, the certificate at h0 =
    ⌈(1 − F)n⌉ honest users, the ε the *undefended* protocol is left with at h0 and the exact worst-case MSE price
    (:func:`shufflesim.validation.dishonest.tolerant_protocol`; docs/theory.md#dishonest-tolerate)."""
    from shufflesim.pipeline import registry
    from shufflesim.validation.dishonest import tolerant_protocol

    rows = []
    for name in as_list(step["protocol"]):
        base = registry.create(name, step["n"], **step["params"])
        label = _label("defence", step, step["label"] or "{protocol}", protocol=name)
        for f in defence_fractions(step, quick):
            t = tolerant_protocol(base, f)
            rows.append({"step": step["name"], "label": label, "protocol": name, "n": t.n, "tolerate": t.fraction,
                         "honest_min": t.h0, "honest_fraction": t.h0 / t.n, "param": t.param,
                         "base_value": t.base_value, "value": t.value, "target_eps": t.target_eps, "delta": t.delta,
                         "eps_defended_lower": t.eps_defended_h0[0], "eps_defended_upper": t.eps_defended_h0[1],
                         "eps_undefended_lower": t.eps_base_h0[0], "eps_undefended_upper": t.eps_base_h0[1],
                         "mse_undefended": t.mse_base, "mse_defended": t.mse_defended, "mse_ratio": t.mse_ratio,
                         "certified": bool(t.certified)})
    return pd.DataFrame(rows)


def run_training_step(step: dict, sc: dict, quick: bool) -> pd.DataFrame:
    """Federated training of every protocol of the step: one row per (protocol, round), and per point of the
    poisoning axes (``poisoned``, ``poison_strategy``, ``range_check``) when the step gives them."""
    from shufflesim.federated.training import FLSettings, train

    rounds = (step["quick_rounds"] or min(step["rounds"], 2)) if quick else step["rounds"]
    rows = []
    axes = training_axes(step)
    seeds = (step.get("quick_seeds") or 1) if quick else (step.get("seeds") or 1)
    for proto, point, k in [(p, pt, k) for p in as_list(step["protocol"]) for pt in training_points(axes)
                            for k in range(seeds)]:
        try:
            settings = FLSettings(protocol=proto, dataset=step["dataset"], rounds=rounds, seed=sc["seed"] + k,
                                  **step["settings"], **point)
        except TypeError as exc:
            raise ScenarioError(f"training {step['name']}: settings: {exc}") from None
        # the scenario's own estimate was weighed by run_scenario (its --yes); train does not ask again
        res = train(dataclasses.replace(settings, yes=True))
        label = _label("training", step, step["label"] or _training_label(step, axes), protocol=proto,
                       **step["settings"], **point)
        pois = res.get("poisoning")
        priv, smp = res.get("privacy") or {}, res.get("sampling") or {}
        by_eps = {} if step["x"] != "eps" else {  # x = 'eps': the accountant's method and the paper's value
            "eps_method": priv.get("method"), "eps_lower": priv.get("eps_lower"),
            "eps_paper": (priv.get("values") or {}).get("paper-original-2019"),
            "sampling_credit": bool(priv.get("sampling_credit", False)),
            "clients_per_round": smp.get("clients_per_round"), "participation": smp.get("participation"),
            "participants_mean": float(np.mean(smp["participants"])) if smp.get("participants") else None}
        for r, acc in enumerate(res["accuracy"]):
            rows.append({"step": step["name"], "label": label, "protocol": proto, "dataset": step["dataset"],
                         "round": r, "accuracy": float(acc), "eps": res.get("eps"), "delta": res.get("delta"),
                         # False when the run dropped messages (FLAME overflow): eps does not cover it
                         "covered": bool((res.get("privacy") or {}).get("covered", True)),
                         **({"seed": settings.seed} if seeds > 1 else {}), **by_eps,
                         **({} if not axes else {
                             "poisoned": point.get("poisoned", settings.poisoned),
                             "poisoned_fraction": pois["fraction"] if pois else 0.0,
                             "poison_strategy": settings.poison_strategy, "range_check": settings.range_check,
                             "out_of_range": pois["out_of_range"] if pois else 0})})
    return pd.DataFrame(rows)


def _training_label(step: dict, axes: dict[str, list]) -> str:
    """The default legend label: the protocol and every axis with more than one value (the poisoned axis is
    the x axis when x = 'poisoned')."""
    parts = ["{protocol}"]
    if len(axes.get("poison_strategy", [])) > 1:
        parts.append("{poison_strategy}")
    if len(axes.get("range_check", [])) > 1:
        parts.append("range check {range_check}")
    if step["x"] != "poisoned" and len(axes.get("poisoned", [])) > 1:
        parts.append("poisoned {poisoned}")
    return ", ".join(parts)


def run_cells(step: dict, sc: dict, quick: bool) -> tuple[pd.DataFrame, pd.DataFrame, list[dict]]:
    """A [[cells]] step: its table (one row per point and cell), its cell maps, its printed numbers."""
    from shufflesim.scenarios.agreement import printed_numbers
    from shufflesim.scenarios.cells import run_cells_step

    points = sweep_points(step, quick, sc, "cells")
    refs = sweep_points(reference_step(step, sc, "cells"), quick, sc, "cells") if step["matched_to"] else None
    table, maps = run_cells_step(step, points, refs, cells_trials(step, quick), sc["seed"])
    table["data"] = table["data"].map(shown_data)
    numbers = []
    if step["paper"] is not None:
        rows = [{"label": r["label"], "n": int(r["n"]), "x0": int(r["x0"]), "index": i % len(step["cells"]),
                 "values": r["errors"]} for i, (_, r) in enumerate(table.iterrows())]
        numbers = printed_numbers(step, "cells", rows)
    return table.drop(columns="errors"), maps, numbers


def run_claims(ids: list[str], quick: bool) -> tuple[pd.DataFrame, list[str]]:
    """The registry's record (paper value, shufflesim value, verdict) of every named claim."""
    from shufflesim.validation import claims as registry

    papers = sorted({i.split("/")[0] for i in ids})
    try:
        known = {f"{c.paper}/{c.id}": c for c in registry.load(papers=papers)}
    except registry.ClaimsError as exc:
        raise ScenarioError(f"claims: {exc}") from None
    rows, skipped = [], []
    for i in ids:
        if i not in known:
            raise ScenarioError(f"claims: unknown claim {i!r} (known for {', '.join(papers)}: "
                                f"{', '.join(sorted(known))})")
        c = known[i]
        if quick and c.slow:
            skipped.append(f"claim {i} (slow; run without --quick)")
            continue
        r = registry.run_claim(c)
        rows.append({"claim": i, "source": r["source"], "claim_text": r["claim"],
                     "paper_value": json.dumps(r["paper_value"]) if not isinstance(r["paper_value"], str)
                     else r["paper_value"], "shufflesim_value": r["shufflesim_value"], "verdict": r["verdict"],
                     "evidence": registry.evidence_line(r).removeprefix("evidence: "), "caveat": r["caveat"]})
    return pd.DataFrame(rows), skipped

# --- the whole run -------------------------------------------------------------------------------------
def run_scenario(sc: dict, out: str | Path, *, quick: bool = False, workers: int = 1, scheduler: str | None = None,
                 resume: bool = False, yes: bool = False, log: Callable[[str], None] | None = None) -> dict:
    """Run a validated scenario (:func:`shufflesim.scenarios.schema.load`) into ``out``; returns run.json.

    Everything checkable is checked first (:func:`~shufflesim.scenarios.steps.check_runnable`); the directory is
    locked for the whole run; ``INCOMPLETE`` marks it until report.md and run.json are written, and a failed run
    removes the folders it created (an interrupted one keeps its sweeps for ``resume``)."""
    from shufflesim.experiments.outdir import DirectoryLock, check_dir_name, write_text

    log = log or (lambda m: None)
    est = estimate_seconds(sc, quick)
    if est > time_limit(yes=yes):  # the one time limit (core.resources; SHUFFLESIM_TIME_LIMIT sets it)
        raise ScenarioError(f"{sc['_path']}: this scenario would take about {est / 60:.0f} minutes in "
                            f"{'quick' if quick else 'full'} mode; pass --yes to run it or --quick for a small run")
    check_runnable(sc, quick)  # everything checkable is checked before anything is written
    check_dir_name(out, "the output directory")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ScenarioError(f"{out}: exists and is not a directory; choose another output directory")
    created = out.resolve()  # the topmost folder this run creates (removed again if the run fails)
    while not created.parent.exists():
        created = created.parent
    created = None if out.exists() else created
    out.mkdir(parents=True, exist_ok=True)
    # the whole run holds the directory: a second run into it is refused before it changes anything
    with DirectoryLock(out, f"{out} is in use by another shufflesim run (locked); choose another output directory"):
        if resume:
            try:
                _check_resume(sc, out, quick)
            except BaseException:
                if created is not None:
                    shutil.rmtree(created, ignore_errors=True)
                raise
        marker = out / INCOMPLETE
        try:
            for stale in ("report.md", "run.json"):  # an earlier run's report must not outlive a failed rerun
                (out / stale).unlink(missing_ok=True)
            write_text(marker, "This run has not finished (or failed): the files here are partial; report.md and "
                               "run.json are written last.\n")
            meta = _run_scenario(sc, out, quick=quick, workers=workers, scheduler=scheduler, resume=resume, est=est,
                                 log=log)
        except KeyboardInterrupt:
            write_text(marker, "This run was interrupted: the files here are partial. Run the same command with "
                               "--resume to continue its sweeps.\n")
            raise
        except BaseException as exc:
            if created is not None:  # nothing of a failed run is left behind in the folders it created
                shutil.rmtree(created, ignore_errors=True)
            else:
                why = str(exc).splitlines()[0] if str(exc) else ""
                write_text(marker, f"This run failed ({type(exc).__name__}: {why}): the files here are partial.\n")
            raise
        marker.unlink(missing_ok=True)
    return meta


def _check_resume(sc: dict, out: Path, quick: bool) -> None:
    """``resume`` continues the same scenario in the same mode: anything else is refused before a file changes."""
    import json as _json

    from shufflesim.experiments.sweep import SPEC_NAME, Sweep

    prior = out / "scenario.toml"
    if prior.exists() and prior.read_bytes() != Path(sc["_path"]).read_bytes():
        raise ScenarioError(f"cannot resume {out}: it holds a run of a different scenario file (its scenario.toml "
                            "differs); run without --resume to start afresh, or choose another --out")
    for step in active_sweeps(sc, quick):
        spec = out / "sweeps" / step["name"] / SPEC_NAME
        if not spec.exists():
            continue
        sweep = Sweep(tuple(sweep_points(step, quick, sc)), trials=sweep_trials(step, quick), seed=sc["seed"],
                      engine=step["engine"])
        try:
            old = _json.loads(spec.read_text())
        except (OSError, ValueError):
            continue  # the sweep engine reports an unreadable spec itself
        if old.get("sweep_hash") != sweep.hash or old.get("chunk_size") != step["chunk_size"]:
            raise ScenarioError(f"cannot resume sweep {step['name']} in {out}: it was started with other settings "
                                f"(another mode, seed, grid or trials); run without --resume to start afresh")


def _run_scenario(sc: dict, out: Path, *, quick: bool, workers: int, scheduler: str | None, resume: bool, est: float,
                  log: Callable[[str], None]) -> dict:
    from shufflesim.experiments.outdir import atomic_path, make_dirs, write_text
    from shufflesim.experiments.results_io import environment, write_table

    make_dirs(out / "results")  # every write below `out` refuses a link (experiments/outdir.py)
    with atomic_path(out / "scenario.toml") as tmp:
        shutil.copyfile(sc["_path"], tmp)
    t0 = time.perf_counter()
    frames: dict[str, pd.DataFrame] = {}
    timing: dict[str, float] = {}
    skipped: list[str] = []
    base_meta = {"scenario": Path(sc["_path"]).name, "seed": sc["seed"], "quick": quick}
    skipped += [f"sweep {s['name']} (in_quick = false: its setup alone is too slow for --quick)"
                for s in sc["sweep"] if s not in active_sweeps(sc, quick)]
    numbers: list[dict] = []
    maps: dict[str, pd.DataFrame] = {}
    for kind in ("sweep", "curve", "table", "training", "cells", "defence"):
        for s in (active_sweeps(sc, quick) if kind == "sweep" else sc[kind]):
            t = time.perf_counter()
            log(f"{kind} {s['name']} …")
            nums: list[dict] = []
            if kind == "sweep":
                df, nums = run_sweep_step(s, sc, out, quick=quick, workers=workers, scheduler=scheduler, resume=resume,
                                           log=log)
            elif kind == "curve":
                df = run_curve_step(s, quick)
            elif kind == "training":
                df = run_training_step(s, sc, quick)
            elif kind == "defence":
                df = run_defence_step(s, quick)
            elif kind == "cells":
                df, m, nums = run_cells(s, sc, quick)
                if len(m):
                    maps[s["name"]] = m
                    write_table(m, out / "results" / f"{s['name']}_cells", dict(base_meta, step=s))
            else:
                df = run_table_step(s, quick)
            frames[s["name"]] = df
            write_table(df, out / "results" / s["name"], dict(base_meta, step=s))
            numbers += nums
            timing[s["name"]] = time.perf_counter() - t
    papers = pd.DataFrame()
    if numbers:
        from shufflesim.scenarios.agreement import evaluate

        papers = evaluate(numbers, sc["seed"])
        write_table(papers, out / "results" / "paper", dict(base_meta, paper_values=True))
    claims = pd.DataFrame()
    if sc["claims"]:
        t = time.perf_counter()
        log("claims …")
        claims, sk = run_claims(sc["claims"], quick)
        skipped += sk
        if len(claims):
            write_table(claims, out / "results" / "claims", dict(base_meta, claims=sc["claims"]))
        timing["claims"] = time.perf_counter() - t
    pngs: list[str] = []
    plots_skipped = ""
    figures: dict[str, list[tuple[str, dict]]] = {}
    for kind in ("sweep", "curve", "training", "cells", "defence"):
        for s in (active_sweeps(sc, quick) if kind == "sweep" else sc[kind]):
            if kind == "cells" and (s["grid"] is None or s["name"] not in maps):
                continue  # a [[cells]] step is drawn only as heatmaps
            if kind == "sweep" and not s["plot"]:
                continue
            figures.setdefault(s["figure"] or s["name"], []).append((kind, s))
    if figures or len(papers):
        if have_matplotlib():
            for fig, members in figures.items():
                kinds_ = {k for k, _ in members}
                if len(kinds_) > 1:
                    raise ScenarioError(f"{sc['_path']}: figure {fig!r} mixes step kinds ({', '.join(sorted(kinds_))})")
                steps = [s for _, s in members]
                title = figure_title(sc, steps, next(iter(kinds_)), several=len(figures) > 1)
                if "cells" in kinds_:
                    plot_heatmaps(steps, maps, out / f"{fig}.png", title)
                else:
                    plot = plot_sweeps if "sweep" in kinds_ else plot_training if "training" in kinds_ else \
                        plot_defence if "defence" in kinds_ else plot_curves
                    plot(steps, frames, out / f"{fig}.png", title)
                pngs.append(f"{fig}.png")
            if len(papers):
                plot_agreement(papers, out / "paper_vs_shufflesim.png",
                               textwrap.fill(f"{sc['title']}: the paper's numbers in shufflesim's ranges", 80))
                pngs.append("paper_vs_shufflesim.png")
        else:
            plots_skipped = "matplotlib is not installed (pip install 'shufflesim[plot]')"
    meta = {"scenario": Path(sc["_path"]).name, "title": sc["title"], "paper": sc["paper"],
            "reproduces": sc["reproduces"], "seed": sc["seed"], "quick": quick, "workers": workers,
            "scheduler": scheduler, "estimated_seconds": est, "seconds": time.perf_counter() - t0,
            "step_seconds": timing, "plots": pngs, "plots_skipped": plots_skipped, "skipped": skipped,
            "verdicts": claims["verdict"].value_counts().to_dict() if len(claims) else {},
            "paper_verdicts": papers["verdict"].value_counts().to_dict() if len(papers) else {},
            "environment": environment()}
    write_report(sc, out, frames, claims, pngs, meta, papers)
    write_text(out / "run.json", json.dumps(meta, indent=2, default=str) + "\n")
    return meta
