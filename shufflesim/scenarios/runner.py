"""Run a validated scenario into an output directory: tidy results (Parquet + CSV), run metadata, PNG plots
(matplotlib optional) and ``report.md`` with the paper's numbers next to shufflesim's and a verdict column.

Layout of ``OUT/``::

    scenario.toml          the file that was run (copied verbatim)
    run.json               mode, versions, seconds per step, what was skipped
    sweeps/NAME/           the sweep engine's directory (parts, summary) of every [[sweep]]
    results/NAME.{parquet,csv,meta.json}   one tidy table per step; results/claims.* the registry verdicts
    FIGURE.png             one plot per figure
    report.md

Running again into the same directory starts each sweep afresh; ``resume=True`` continues an interrupted
one.  Result tables hold only deterministic columns (no timings), so the same scenario and seed give identical
result files.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from shufflesim.scenarios.schema import ScenarioError

#: a scenario whose estimated run time exceeds this many seconds needs --yes (or --quick)
LONG_SECONDS = 600.0


# --- expanding the steps ---------------------------------------------------------------------------------
def _as_list(v) -> list:
    return list(v) if isinstance(v, list) else [v]


def resolve_data(spec: str) -> str:
    """``datasets/NAME:COLUMN`` names a file shipped in ``shufflesim/datasets/`` (e.g. the Gowalla cells)."""
    if spec.startswith("datasets/") and ":" in spec:
        from importlib.resources import files

        return str(Path(str(files("shufflesim"))) / spec)
    return spec


def matched_points(step: dict, reference: list) -> list:
    """One point per point of ``reference`` (an earlier sweep's points): same n and data, this step's params
    with ``eps`` and ``delta`` set to the reference protocol's certified central guarantee."""
    from shufflesim.experiments.sweep import SweepPoint
    from shufflesim.pipeline import registry

    pts = []
    for p in reference:
        g = registry.create(p.protocol, p.n, **p.params).privacy()
        if g is None:
            raise ScenarioError(f"sweep {step['name']}: matched_to protocol {p.protocol!r} states no central "
                                "guarantee")
        params = {k: v for k, v in step["params"].items() if not isinstance(v, list)}
        params.update(eps=float(g.eps), delta=float(g.delta))
        pts.append(SweepPoint(step["protocol"], params, p.data, p.n))
    return pts


def sweep_points(step: dict, quick: bool, sc: dict | None = None) -> list:
    """The sweep engine's points of a [[sweep]] step (quick mode: ``quick_n`` if given)."""
    from shufflesim.experiments.sweep import SweepPoint

    if step["matched_to"] is not None and sc is not None:
        ref = next(s for s in sc["sweep"] if s["name"] == step["matched_to"])
        return matched_points(step, sweep_points(ref, quick, sc))

    ns = _as_list(step["quick_n"] if quick and step["quick_n"] is not None else step["n"])
    names = sorted(step["params"])
    axes = [_as_list(step["params"][k]) for k in names]
    pts = []
    for data in _as_list(step["data"]):
        data = resolve_data(data)
        for n in ns:
            for combo in itertools.product(*axes):
                params = {}
                for k, v in zip(names, combo):
                    params[k] = 1.0 / n**2 if v == "1/n^2" else (1.0 / n if v == "1/n" else v)
                pts.append(SweepPoint(step["protocol"], params, data, int(n)))
    return pts


def sweep_trials(step: dict, quick: bool) -> int:
    return (step["quick_trials"] or min(step["trials"], 20)) if quick else step["trials"]


def curve_eps(step: dict, quick: bool) -> list[float]:
    if step["eps"] is not None:
        eps = [float(e) for e in _as_list(step["eps"])]
        if quick and len(eps) > step["quick_num"]:
            idx = np.unique(np.linspace(0, len(eps) - 1, step["quick_num"]).round().astype(int))
            eps = [eps[i] for i in idx]
        return eps
    start, stop, num = step["eps_range"]
    num = min(int(num), step["quick_num"]) if quick else int(num)
    return [float(x) for x in np.linspace(start, stop, num)]


def curve_combos(step: dict) -> list[tuple[dict, int]]:
    names = sorted(step["args"])
    axes = [_as_list(step["args"][k]) for k in names]
    return [(dict(zip(names, combo)), int(c)) for combo in itertools.product(*axes)
            for c in _as_list(step["compositions"])]


def active_sweeps(sc: dict, quick: bool) -> list[dict]:
    """The [[sweep]] steps that run in this mode (``in_quick = false`` ones are left out of --quick)."""
    return [s for s in sc["sweep"] if s["in_quick"] or not quick]


def estimate_seconds(sc: dict, quick: bool) -> float:
    """A rough estimate of the run time (fast engine ~0.2 ms a trial, faithful ~0.1 µs a user and trial, a
    sweep point's ``point_seconds`` of set-up, half a second an accountant line, a minute for a table, five
    seconds a claim, two seconds a training round)."""
    total = 0.0
    for s in active_sweeps(sc, quick):
        t = sweep_trials(s, quick)
        for p in sweep_points(s, quick):
            per = 2e-4 if s["engine"] != "faithful" else 2e-4 + 1e-7 * p.n
            total += t * per + s["point_seconds"]
    for c in sc["curve"]:
        total += 0.5 * len(curve_combos(c))
    total += 60.0 * len(sc["table"]) + 5.0 * len(sc["claims"])
    for s in sc["training"]:
        total += 2.0 * len(_as_list(s["protocol"])) * ((s["quick_rounds"] or 2) if quick else s["rounds"])
    return total


# --- running the steps -----------------------------------------------------------------------------------
def run_sweep_step(step: dict, sc: dict, out: Path, *, quick: bool, workers: int, scheduler: str | None,
                   resume: bool) -> pd.DataFrame:
    from shufflesim.experiments.sweep import Sweep, run_sweep

    sweep = Sweep(tuple(sweep_points(step, quick, sc)), trials=sweep_trials(step, quick), seed=sc["seed"],
                  engine=step["engine"])
    backend = "dask" if scheduler else ("serial" if workers <= 1 else "processes")
    target = out / "sweeps" / step["name"]
    if not resume and target.exists():  # a fresh run replaces this step's earlier sweep (--resume continues it)
        shutil.rmtree(target)
    res = run_sweep(sweep, target, backend=backend, workers=workers, scheduler=scheduler,
                    chunk_size=step["chunk_size"], resume=resume)
    if not res.complete:
        raise KeyboardInterrupt
    df = res.summary.copy()
    df.insert(0, "step", step["name"])
    template = step["label"] or step["protocol"]
    refs = None
    if step["matched_to"]:  # label fields ref_NAME: the parameters of the matched point of the reference sweep
        ref = next(s for s in sc["sweep"] if s["name"] == step["matched_to"])
        refs = sweep_points(ref, quick, sc)
    labels = []
    for i, r in df.iterrows():
        fields = {c[6:]: r[c] for c in df.columns if c.startswith("param_")}
        if refs is not None:
            fields.update({f"ref_{k}": v for k, v in refs[int(r["point"])].params.items()})
        labels.append(template.format(**fields, data=r["data"], protocol=r["protocol"]))
    df.insert(1, "label", labels)
    df["rmse"] = np.sqrt(df["mse"])
    df["rmse_mean"] = df["rmse"] / df["n"]  # root MSE of the mean (the estimate of a sum divided by n)
    return df


def _mechanism(kind: str, args: dict):
    from shufflesim.mechanisms import kinds

    cls = kinds()[kind]
    try:
        return cls(**args)
    except TypeError as exc:
        raise ScenarioError(f"mechanism {kind!r}: {exc}") from None


def run_curve_step(step: dict, quick: bool) -> pd.DataFrame:
    from shufflesim.accounting import account

    eps = curve_eps(step, quick)
    rows = []
    for args, comps in curve_combos(step):
        mech = _mechanism(step["mechanism"], args)
        rep = account(mech, eps=eps, method=step["method"], compositions=comps, composition=step["composition"])
        fmt = dict(args, compositions=comps, method=step["method"])
        label = (step["label"] or step["name"]).format(**fmt)
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
    cells = table3(rows=None if rows is None else _as_list(rows), tight=step["tight"] and not quick)
    out = []
    for c in cells:
        d = c.to_dict()
        d.pop("details", None)
        value = d["mse_reproduced"] if d["mse_reproduced"] is not None else d["mse_exact"]
        # a cell's own verdict (the study's agreement test); the registry's verdicts are in the claims table
        verdict = {True: "reproduced", False: "not reproduced", None: "not-checkable"}[d["agree"]]
        out.append({"step": step["name"], **d, "shufflesim_mse": value, "verdict": verdict})
    return pd.DataFrame(out)


def run_training_step(step: dict, sc: dict, quick: bool) -> pd.DataFrame:
    """Federated training of every protocol of the step: one row per (protocol, round)."""
    from shufflesim.federated.training import FLSettings, train

    rounds = (step["quick_rounds"] or min(step["rounds"], 2)) if quick else step["rounds"]
    rows = []
    for proto in _as_list(step["protocol"]):
        try:
            settings = FLSettings(protocol=proto, dataset=step["dataset"], rounds=rounds, seed=sc["seed"],
                                  **step["settings"])
        except TypeError as exc:
            raise ScenarioError(f"training {step['name']}: settings: {exc}") from None
        res = train(settings)
        label = (step["label"] or "{protocol}").format(protocol=proto, **step["settings"])
        for r, acc in enumerate(res["accuracy"]):
            rows.append({"step": step["name"], "label": label, "protocol": proto, "dataset": step["dataset"],
                         "round": r, "accuracy": float(acc), "eps": res.get("eps"), "delta": res.get("delta")})
    return pd.DataFrame(rows)


def plot_training(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    plt, fig, ax = _fig()
    for s in steps:
        for label, g in frames[s["name"]].groupby("label", sort=False):
            ax.plot(g["round"], g["accuracy"], "o-", ms=3, label=label)
    ax.set_xlabel("round (0: the initial model)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


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
                     "caveat": r["caveat"]})
    return pd.DataFrame(rows), skipped


# --- plots ---------------------------------------------------------------------------------------------
def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _fig():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, *plt.subplots(figsize=(5.6, 3.9), dpi=110)


def plot_sweeps(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    plt, fig, ax = _fig()
    s0 = steps[0]
    for s in steps:
        df = frames[s["name"]]
        xcol = "n" if s["x"] == "n" else f"param_{s['x']}"
        for label, g in df.groupby("label", sort=False):
            g = g.sort_values(xcol)
            y = g[s["y"]]
            if s["y"] == "tv" and "tv_lo" in g:
                ax.errorbar(g[xcol], y, yerr=[y - g["tv_lo"], g["tv_hi"] - y], fmt="o-", ms=4, capsize=3, label=label)
            elif s["y"] in ("mse", "rmse", "rmse_mean"):
                lo, hi = g["mse_lo"].clip(lower=0), g["mse_hi"]
                if s["y"] != "mse":
                    lo, hi = np.sqrt(lo), np.sqrt(hi)
                if s["y"] == "rmse_mean":
                    lo, hi = lo / g["n"], hi / g["n"]
                ax.errorbar(g[xcol], y, yerr=[y - lo, hi - y], fmt="o-", ms=4, capsize=3, label=f"{label}")
                if s["y"] == "mse" and g["mse_expected"].notna().any():
                    ax.plot(g[xcol], g["mse_expected"], ":", color="grey", lw=1)
            else:
                ax.plot(g[xcol], y, "o-", ms=4, label=label)
    if s0["logx"]:
        ax.set_xscale("log")
    if s0["logy"]:
        ax.set_yscale("log")
    ax.set_xlabel(s0["xlabel"] or ("number of users n" if s0["x"] == "n" else s0["x"]))
    ax.set_ylabel(s0["ylabel"] or {"mse": "MSE (95% CI; dotted: exact)", "rmse": "root MSE", "rmse_mean": "root MSE of the mean (95% CI)",
                                   "mse_expected": "exact MSE",
                                   "tv": "TV distance to the true distribution (95% CI)"}[s0["y"]])
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_curves(steps: list[dict], frames: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    plt, fig, ax = _fig()
    styles = itertools.cycle(["-", "--", "-.", ":"])
    for s in steps:
        df = frames[s["name"]]
        ls = next(styles)
        for label, g in df.groupby("label", sort=False):
            g = g[g["applicable"] & (g["delta_upper"] > 0) & (g["delta_upper"] <= 1)]  # δ > 1 is vacuous
            if len(g):
                ax.plot(g["eps"], g["delta_upper"], ls, marker=".", ms=3, label=label)
    s0 = steps[0]
    if s0["logy"]:
        ax.set_yscale("log")
    if s0["ymin"]:
        ax.set_ylim(bottom=s0["ymin"], top=1.5)
    ax.set_xlabel(s0["xlabel"] or "ε")
    ax.set_ylabel(s0["ylabel"] or "δ(ε) (upper bound)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


# --- report ------------------------------------------------------------------------------------------
def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, columns: list[str] | None = None, max_rows: int = 60) -> str:
    cols = [c for c in (columns or list(df.columns)) if c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.head(max_rows).iterrows():
        lines.append("| " + " | ".join(_cell(r[c]) for c in cols) + " |")
    if len(df) > max_rows:
        lines.append(f"\n({len(df) - max_rows} more rows in the result files)")
    return "\n".join(lines)


def _describe_step(kind: str, s: dict, quick: bool) -> str:
    if kind == "sweep":
        if s["matched_to"]:
            return (f"- sweep `{s['name']}`: protocol `{s['protocol']}` at the certified central (ε, δ) of every "
                    f"point of `{s['matched_to']}`, params {s['params']}, {sweep_trials(s, quick)} trials a point, "
                    f"engine `{s['engine']}`")
        pts = sweep_points(s, quick)
        return (f"- sweep `{s['name']}`: protocol `{s['protocol']}`, n ∈ {sorted({p.n for p in pts})}, data "
                f"{_as_list(s['data'])}, params {s['params']}, {sweep_trials(s, quick)} trials a point, engine "
                f"`{s['engine']}` ({len(pts)} points)")
    if kind == "curve":
        return (f"- accountant `{s['name']}`: `{s['mechanism']}` {s['args']}, method `{s['method']}`, "
                f"compositions {s['compositions']} ({s['composition']}), {len(curve_eps(s, quick))} values of ε")
    if kind == "training":
        return (f"- training `{s['name']}`: protocols {_as_list(s['protocol'])} on `{s['dataset']}`, "
                f"{(s['quick_rounds'] or min(s['rounds'], 2)) if quick else s['rounds']} rounds, settings {s['settings']}")
    return f"- table `{s['name']}`: study `{s['study']}`, rows {s['quick_rows'] if quick else s['rows'] or 'all'}"


def write_report(sc: dict, out: Path, frames: dict, claims: pd.DataFrame, pngs: list[str], meta: dict) -> Path:
    q = meta["quick"]
    L = [f"# {sc['title']}", "", f"- **Paper:** {sc['paper']}", f"- **Reproduces:** {sc['reproduces']}",
         f"- **Scenario:** `{Path(sc['_path']).name}` (copied to `scenario.toml`), seed {sc['seed']}, "
         f"mode **{'quick' if q else 'full'}**" + (" (trials and grids shrunk: not the paper's settings)" if q else ""),
         f"- **Run time:** {meta['seconds']:.1f} s; shufflesim {meta['environment']['shufflesim']}", ""]
    if sc["description"]:
        L += [sc["description"].strip(), ""]
    if sc["paper_notes"]:
        L += ["**What the paper reports:** " + sc["paper_notes"].strip(), ""]
    L += ["## What was run", ""]
    for kind in ("sweep", "curve", "table", "training"):
        L += [_describe_step(kind, s, q) for s in (active_sweeps(sc, q) if kind == "sweep" else sc[kind])]
    if sc["claims"]:
        L.append(f"- claims of the registry: {', '.join(f'`{c}`' for c in sc['claims'])}")
    for s in meta["skipped"]:
        L.append(f"- skipped: {s}")
    L += ["", "## Plots", ""]
    if pngs:
        L += [f"![{p}]({p})" for p in pngs]
    elif meta["plots_skipped"]:
        L.append(f"Plots were skipped: {meta['plots_skipped']}.")
    else:
        L.append("No plots for this scenario (tables only).")
    verdict_rows = []
    if len(claims):
        verdict_rows.append(("Claims of the registry (scenarios/claims/)", claims,
                             ["claim", "source", "paper_value", "shufflesim_value", "verdict", "caveat"]))
    for s in sc["table"]:
        verdict_rows.append((f"Table `{s['name']}` (paper vs shufflesim)", frames[s["name"]],
                             ["label", "n", "eps", "paper_messages", "messages", "paper_mse", "shufflesim_mse",
                              "verdict", "reason"]))
    L += ["", "## The paper's numbers next to shufflesim's", ""]
    if verdict_rows:
        for head, df, cols in verdict_rows:
            L += [f"### {head}", "", markdown_table(df, cols), ""]
    else:
        L += ["The paper gives no numbers for this scenario in its text; compare the plots with the paper's "
              "figure.", ""]
    L += ["## Results", ""]
    for s in active_sweeps(sc, q):
        L += [f"### sweep `{s['name']}`", "", markdown_table(frames[s["name"]], [
            "label", "protocol", "data", "n", *[f"param_{k}" for k in s["params"]],
            *(["param_eps", "param_delta"] if s["matched_to"] else []), "trials", "mse", "mse_lo", "mse_hi", "mse_expected", "rmse", "rmse_mean", "tv", "tv_lo", "tv_hi"]), ""]
    for s in sc["curve"]:
        df = frames[s["name"]]
        L += [f"### accountant `{s['name']}`", "", markdown_table(df, ["label", "compositions", "eps",
                                                                         "delta_lower", "delta_upper", "reason"],
                                                                  max_rows=24), ""]
    for s in sc["training"]:
        df = frames[s["name"]]
        last = df.sort_values("round").groupby("label", sort=False).tail(1)
        L += [f"### training `{s['name']}` (final round)", "", markdown_table(last, ["label", "protocol", "round",
                                                                                   "accuracy", "eps", "delta"]), ""]
    L += ["Result files: `results/*.csv` and `results/*.parquet` (tidy, with `*.meta.json`); run metadata in "
          "`run.json`.", ""]
    path = out / "report.md"
    path.write_text("\n".join(L), encoding="utf-8")
    return path


# --- the whole run -------------------------------------------------------------------------------------
def run_scenario(sc: dict, out: str | Path, *, quick: bool = False, workers: int = 1, scheduler: str | None = None,
                 resume: bool = False, yes: bool = False, log: Callable[[str], None] | None = None) -> dict:
    """Run a validated scenario (:func:`shufflesim.scenarios.schema.load`) into ``out``; returns run.json."""
    from shufflesim.experiments.results_io import environment, write_table

    log = log or (lambda m: None)
    est = estimate_seconds(sc, quick)
    if est > LONG_SECONDS and not yes:
        raise ScenarioError(f"{sc['_path']}: this scenario would take about {est / 60:.0f} minutes in "
                            f"{'quick' if quick else 'full'} mode; pass --yes to run it or --quick for a small run")
    out = Path(out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sc["_path"], out / "scenario.toml")
    t0 = time.perf_counter()
    frames: dict[str, pd.DataFrame] = {}
    timing: dict[str, float] = {}
    skipped: list[str] = []
    base_meta = {"scenario": Path(sc["_path"]).name, "seed": sc["seed"], "quick": quick}
    skipped += [f"sweep {s['name']} (in_quick = false: its setup alone is too slow for --quick)"
                for s in sc["sweep"] if s not in active_sweeps(sc, quick)]
    for kind in ("sweep", "curve", "table", "training"):
        for s in (active_sweeps(sc, quick) if kind == "sweep" else sc[kind]):
            t = time.perf_counter()
            log(f"{kind} {s['name']} …")
            if kind == "sweep":
                df = run_sweep_step(s, sc, out, quick=quick, workers=workers, scheduler=scheduler, resume=resume)
            elif kind == "curve":
                df = run_curve_step(s, quick)
            elif kind == "training":
                df = run_training_step(s, sc, quick)
            else:
                df = run_table_step(s, quick)
            frames[s["name"]] = df
            write_table(df, out / "results" / s["name"], dict(base_meta, step=s))
            timing[s["name"]] = time.perf_counter() - t
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
    for kind in ("sweep", "curve", "training"):
        for s in (active_sweeps(sc, quick) if kind == "sweep" else sc[kind]):
            figures.setdefault(s["figure"] or s["name"], []).append((kind, s))
    if figures:
        if have_matplotlib():
            for fig, members in figures.items():
                kinds_ = {k for k, _ in members}
                if len(kinds_) > 1:
                    raise ScenarioError(f"{sc['_path']}: figure {fig!r} mixes step kinds ({', '.join(sorted(kinds_))})")
                steps = [s for _, s in members]
                title = f"{sc['reproduces']}: {fig}" if sc["reproduces"].lower() != "none" else fig
                plot = plot_sweeps if "sweep" in kinds_ else plot_training if "training" in kinds_ else plot_curves
                plot(steps, frames, out / f"{fig}.png", title)
                pngs.append(f"{fig}.png")
        else:
            plots_skipped = "matplotlib is not installed (pip install 'shufflesim[plot]')"
    meta = {"scenario": Path(sc["_path"]).name, "title": sc["title"], "paper": sc["paper"],
            "reproduces": sc["reproduces"], "seed": sc["seed"], "quick": quick, "workers": workers,
            "scheduler": scheduler, "estimated_seconds": est, "seconds": time.perf_counter() - t0,
            "step_seconds": timing, "plots": pngs, "plots_skipped": plots_skipped, "skipped": skipped,
            "verdicts": claims["verdict"].value_counts().to_dict() if len(claims) else {},
            "environment": environment()}
    write_report(sc, out, frames, claims, pngs, meta)
    (out / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return meta
