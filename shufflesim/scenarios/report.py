"""``report.md``: what was run, the plots, the paper's numbers next to shufflesim's with a verdict column, and
the results tables."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from shufflesim.scenarios.steps import as_list, active_sweeps, cells_trials, curve_eps, curve_x, defence_fractions, \
    sweep_points, sweep_trials


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
                f"{as_list(s['data'])}, params {s['params']}, {sweep_trials(s, quick)} trials a point, engine "
                f"`{s['engine']}` ({len(pts)} points)")
    if kind == "curve":
        if s["x"] != "eps":
            xs = curve_x(s, quick)
            return (f"- accountant `{s['name']}`: `{s['mechanism']}` {s['args']}, method `{s['method']}`, ε at "
                    f"δ = {s['delta']:g} for {len(xs)} values of {s['x']} in [{xs[0]:g}, {xs[-1]:g}]")
        return (f"- accountant `{s['name']}`: `{s['mechanism']}` {s['args']}, method `{s['method']}`, "
                f"compositions {s['compositions']} ({s['composition']}), {len(curve_eps(s, quick))} values of ε")
    if kind == "cells":
        ns = as_list(s["quick_n"] if quick and s["quick_n"] is not None else s["n"])
        at = (f"at the certified central (ε, δ) of every point of `{s['matched_to']}`" if s["matched_to"]
              else f"n ∈ {ns}, data {s['data']!r}")
        return (f"- cells `{s['name']}`: protocol `{s['protocol']}` {at}, params {s['params']}, "
                f"|π̂_x − π_x| at cells {s['cell_labels'] or s['cells']}, {cells_trials(s, quick)} trials a point"
                + (f", heatmaps on a {s['grid'][0]} × {s['grid'][1]} grid" if s["grid"] else ""))
    if kind == "training":
        return (f"- training `{s['name']}`: protocols {as_list(s['protocol'])} on `{s['dataset']}`, "
                f"{(s['quick_rounds'] or min(s['rounds'], 2)) if quick else s['rounds']} rounds, settings {s['settings']}")
    if kind == "defence":
        return (f"- defence `{s['name']}`: protocols {as_list(s['protocol'])} at n = {s['n']}, params {s['params']}, "
                f"calibrated to tolerate F ∈ {defence_fractions(s, quick)} dishonest users")
    return f"- table `{s['name']}`: study `{s['study']}`, rows {s['quick_rows'] if quick else s['rows'] or 'all'}"


PAPER_COLUMNS = ["label", "n", "x0", "statistic", "paper", "shufflesim", "range_lo", "range_hi", "percentile",
                 "verdict", "side", "p_value", "flag"]


def paper_sections(papers: pd.DataFrame) -> list[str]:
    """Every printed number next to shufflesim's, one table per source, with the agreement test spelled out."""
    from shufflesim.scenarios.agreement import QUANTITIES, column_checks, describe

    L: list[str] = []
    for source, g in papers.groupby("source", sort=False):
        quantities = "; ".join(QUANTITIES[q] for q in dict.fromkeys(g["quantity"]))
        std = (g["statistic"] == "std").any()
        L += [f"### {source}", "",
              f"Quantity: {quantities}. `paper` is the printed number (the mean"
              + (" or the standard deviation, ddof = 0," if std else "") + " over the paper's runs); `shufflesim` is "
              "the same statistic over all of shufflesim's trials; `range_lo`–`range_hi` is where the printed number "
              "would fall if the paper's experiment behaved as shufflesim's simulation.", ""]
        for note in dict.fromkeys(x for x in g["note"] if x):
            L += ["Setting: " + note.strip(), ""]
        runs = g["runs"].iloc[0]
        L += [describe(None if pd.isna(runs) else int(runs), float(g["level"].iloc[0]), int(g["family"].iloc[0]),
                       int((~g["in_family"].astype(bool)).sum())), "",
              markdown_table(g if g["x0"].notna().any() else g.drop(columns="x0"), PAPER_COLUMNS), "",
              f"Verdicts: {g['verdict'].value_counts().to_dict()}.", ""]
        checks = column_checks(g)
        if checks:
            L += [f"- {c}" for c in checks] + [""]
    return L


def write_report(sc: dict, out: Path, frames: dict, claims: pd.DataFrame, pngs: list[str], meta: dict,
                 papers: pd.DataFrame | None = None) -> Path:
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
    for kind in ("sweep", "curve", "table", "training", "cells", "defence"):
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
                             ["claim", "source", "paper_value", "shufflesim_value", "verdict", "caveat", "evidence"]))
    for s in sc["table"]:
        verdict_rows.append((f"Table `{s['name']}` (paper vs shufflesim)", frames[s["name"]],
                             ["label", "n", "eps", "paper_messages", "messages", "paper_mse", "shufflesim_mse",
                              "verdict", "reason"]))
    papers = papers if papers is not None else pd.DataFrame()
    L += ["", "## The paper's numbers next to shufflesim's", ""]
    if verdict_rows or len(papers):
        for head, df, cols in verdict_rows:
            L += [f"### {head}", "", markdown_table(df, cols), ""]
        if len(papers):
            L += paper_sections(papers)
    elif any(s["paper"] for k in ("sweep", "cells") for s in sc[k]):
        L += ["None of this mode's points has a printed value (the quick mode's n differ from the paper's).", ""]
    else:
        L += ["The paper gives no numbers for this scenario in its text; compare the plots with the paper's "
              "figure.", ""]
    L += ["## Results", ""]
    for s in active_sweeps(sc, q):
        L += [f"### sweep `{s['name']}`", "", markdown_table(frames[s["name"]], [
            "label", "protocol", "data", "n", *[f"param_{k}" for k in s["params"]],
            *(["param_eps", "param_delta"] if s["matched_to"] else []), "trials", "mse", "mse_lo", "mse_hi", "mse_expected", "rmse", "rmse_mean", "tv", "tv_lo", "tv_hi",
            "coalition", "bias", "bias_lo", "bias_hi", "bias_expected", "bias_worst_low", "bias_worst_high"]), ""]
    for s in sc["curve"]:
        df = frames[s["name"]]
        cols = ["label", "compositions", "eps", "delta_lower", "delta_upper", "reason"] if s["x"] == "eps" else \
            ["label", "x", "delta", "eps_lower", "eps_upper", "reason"]
        L += [f"### accountant `{s['name']}`" + ("" if s["x"] == "eps" else f" (x = {s['x']})"), "",
              markdown_table(df, cols, max_rows=24 if s["x"] == "eps" else 60), ""]
    for s in sc["cells"]:
        L += [f"### cells `{s['name']}`", "", markdown_table(frames[s["name"]], [
            "label", "n", *[f"param_{k}" for k in ("eps0", "eps", "delta") if f"param_{k}" in frames[s["name"]]],
            "cell", "x0", "true_p", "trials", "mean_abs_error", "mean_lo", "mean_hi", "q025", "median", "q975"]), ""]
    for s in sc["training"]:
        df = frames[s["name"]]
        pois = ["poisoned_fraction", "out_of_range"] if "poisoned_fraction" in df else []  # one row a poisoning point
        last = (df[df["round"] == df["round"].max()].groupby(["label", "poisoned_fraction"], sort=False, as_index=False)
                .agg({"protocol": "first", "out_of_range": "first", "round": "first", "accuracy": "mean", "eps": "first",
                      "delta": "first"}) if pois  # the mean over the step's seeds
                else df.sort_values("round").groupby("label", sort=False).tail(1))
        by_eps = ([c for c in ("eps_method", "eps_lower", "eps_paper", "sampling_credit", "participants_mean")
                   if c in df] if "eps_paper" in df else [])
        L += [f"### training `{s['name']}` (final round)", "", markdown_table(last, ["label", "protocol", *pois, "round",
                                                                                   "accuracy", "eps", "delta", *by_eps]),
              ""]
    for s in sc["defence"]:
        L += [f"### defence `{s['name']}` (certified at ⌈(1 − F)n⌉ honest users; docs/theory.md#dishonest-tolerate)",
              "", markdown_table(frames[s["name"]], ["label", "tolerate", "honest_min", "param", "base_value", "value",
                                                    "target_eps", "delta", "eps_defended_upper", "eps_undefended_lower",
                                                    "eps_undefended_upper", "mse_ratio", "certified"]), ""]
    L += ["Result files: `results/*.csv` and `results/*.parquet` (tidy, with `*.meta.json`); run metadata in "
          "`run.json`.", ""]
    from shufflesim.experiments.outdir import write_text

    path = out / "report.md"
    write_text(path, "\n".join(L))  # atomic, no link followed (experiments/outdir.py)
    return path
