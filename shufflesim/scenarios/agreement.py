"""Is a paper's printed number what shufflesim's simulation of the same setting would print?

A paper reports a statistic of R runs of a protocol (the mean of |error| over R runs and its standard
deviation, as seed 004 Table 2; or a single run's value, as seed 003 Tables V and VI seem to be).  shufflesim
runs T ≫ R trials of the same setting.  The agreement test asks whether the printed number is a plausible
outcome of the paper's own experiment if the protocol behaves as shufflesim simulates it:

* the *reference distribution* of the paper's statistic is that statistic (mean or standard deviation,
  ddof = 0) of R draws from shufflesim's T per-trial values — resampled with replacement (bootstrap, a
  fixed seed), or for R = 1 and the mean the T values themselves;
* the verdict is ``reproduced`` when the printed number lies in the central ``level`` range of that
  distribution, else ``not reproduced`` (with the side).  ``level`` is 95 % Bonferroni-corrected over the
  *distinct* printed numbers of one table (:func:`~shufflesim.experiments.stats.bonferroni_level`), so that a
  table whose every number comes from the simulated setting is wholly ``reproduced`` with probability ≥ 95 %.
  The family holds each printed number once (issue 19): a diagnostic or duplicate row that reuses a number
  printed for an earlier row (same statistic, n and cell) is tested at the same level but is not a member of
  the family, and is marked so;
* every number's two-sided p-value (twice the smaller tail of the reference distribution at the printed
  number) is reported; it is *borderline* when within a factor 10 of the per-number level 1 − ``level``
  (either side), and the verdict says so;
* where the paper does not say how many runs a number summarises, R = 1 is used: the widest range (a mean
  of more runs would have a narrower one), so ``not reproduced`` is then conclusive and ``reproduced`` is not.

The position of the printed number in the reference distribution (its percentile) is reported as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.experiments.stats import bonferroni_level

#: bootstrap resamples of the reference distribution
RESAMPLES = 20_000
#: spawn-key prefix of the bootstrap streams (after data 0, trials 1, fast blocks 2, [[cells]] trials 3)
AGREEMENT_STREAM = 4
STATISTICS = ("mean", "std")


@dataclass(frozen=True)
class Agreement:
    """One printed number against shufflesim's reference distribution of the same statistic."""

    paper: float
    lo: float
    hi: float
    percentile: float
    verdict: str
    side: str  # "" | "paper below" | "paper above"


def reference(values: np.ndarray, runs: int, statistic: str, rng: np.random.Generator) -> np.ndarray:
    """Draws of ``statistic`` over ``runs`` runs, each run a draw from ``values`` (shufflesim's trials)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 2 or not np.all(np.isfinite(x)):
        raise ParameterError("the reference distribution needs at least two finite per-trial values")
    if statistic not in STATISTICS:
        raise ParameterError(f"statistic must be one of {', '.join(STATISTICS)}; got {statistic!r}")
    if runs < 1:
        raise ParameterError(f"runs must be >= 1; got {runs}")
    if runs == 1:
        if statistic == "std":
            raise ParameterError("the standard deviation of a single run is 0: give the number of runs")
        return x
    sample = x[rng.integers(0, x.size, size=(RESAMPLES, runs))]
    return sample.mean(axis=1) if statistic == "mean" else sample.std(axis=1)


def compare(paper: float, draws: np.ndarray, level: float) -> Agreement:
    """The verdict for the printed number ``paper`` against ``draws`` of the reference distribution."""
    lo, hi = (float(q) for q in np.quantile(draws, [(1.0 - level) / 2.0, (1.0 + level) / 2.0]))
    below = float(np.mean(draws < paper))
    ties = float(np.mean(draws == paper))
    pct = 100.0 * (below + ties / 2.0)
    if lo <= paper <= hi:
        return Agreement(float(paper), lo, hi, pct, "reproduced", "")
    return Agreement(float(paper), lo, hi, pct, "not reproduced", "paper below" if paper < lo else "paper above")


#: a p-value within this factor of the per-number level (either side) is borderline
BORDERLINE_FACTOR = 10.0


def p_value(draws: np.ndarray, paper: float) -> float:
    """Two-sided p-value of the printed number in the reference distribution: twice the smaller tail (ties
    counted half), at most 1."""
    below = float(np.mean(draws < paper))
    ties = float(np.mean(draws == paper))
    above = 1.0 - below - ties
    return min(1.0, 2.0 * (min(below, above) + ties / 2.0))


def describe(runs: int | None, level: float, count: int, duplicates: int = 0) -> str:
    """The agreement test in one paragraph, for the report: its family, level and what 'borderline' means."""
    r = "R = 1 (the paper does not say how many runs a number summarises; a single run's range is the widest, " \
        "so only 'not reproduced' is conclusive)" if runs is None else f"R = {runs} (the paper's runs)"
    dup = (f" The family holds each printed number once: {duplicates} further row(s) reuse a number printed for an "
           "earlier row (diagnostic or duplicate rows); they are tested at the same level but are not members of "
           "the family ('flag' says which)." if duplicates else "")
    return (f"Agreement test: a printed number is *reproduced* when it lies in the central {100 * level:.4g} % "
            f"range of the same statistic of R runs drawn from shufflesim's trials (bootstrap, "
            f"{RESAMPLES} resamples, fixed seed), {r}; level: {100 * level:.4g} % is 95 % Bonferroni-corrected "
            f"over the {count} printed numbers of this table (the family: each distinct printed number once; each "
            f"tested at α = {1 - level:.3g}).{dup} 'percentile' is the printed number's position in that distribution, "
            f"'p_value' its two-sided p-value; a p-value within {BORDERLINE_FACTOR:g}× of α (either side) is flagged "
            "*borderline* ('flag').")


def fmt_range(a: Agreement) -> str:
    return f"[{a.lo:.3g}, {a.hi:.3g}]" if math.isfinite(a.lo) else "–"


# --- a scenario's printed values against its simulations --------------------------------------------------
QUANTITIES = {"abs_error_mean": "|estimated mean − true mean| (the error of the sum divided by n)",
              "tv": "the TV distance between the estimated and the true distribution",
              "abs_cell_error": "|π̂_x − π_x| at cell x0 (individual-specific utility, as frequencies)"}


def printed_numbers(step: dict, kind: str, rows: list[dict]) -> list[dict]:
    """The printed numbers of one step (its ``paper`` table, :mod:`~shufflesim.scenarios.schema`), each with
    shufflesim's per-trial values of the same quantity.

    ``rows`` are the step's points (or, for [[cells]], its (point, cell) pairs): dicts with ``label``, ``n``,
    ``values`` and, for cells, ``index`` (the cell's position in the step's ``cells``) and ``x0``.  Points
    whose n has no printed number are left out (the quick mode's n, say).
    """
    paper = step["paper"]
    out = []
    for r in rows:
        for stat in STATISTICS:
            table = paper[stat] or {}
            if r["n"] not in table:
                continue
            v = table[r["n"]]
            out.append({"source": paper["source"], "quantity": paper["statistic"] or "abs_cell_error",
                        "runs": paper["runs"], "note": paper["note"], "step": step["name"], "kind": kind,
                        "label": r["label"], "n": r["n"], "x0": r.get("x0"), "statistic": stat,
                        "paper": v[r["index"]] if isinstance(v, list) else v, "values": r["values"]})
    return out


def evaluate(numbers: list[dict], seed: int) -> "pd.DataFrame":
    """The verdict of every printed number.  The numbers of one ``source`` (one table of the paper) share the
    Bonferroni-corrected level; bootstrap streams ``(AGREEMENT_STREAM, source index, number index)``."""
    import pandas as pd

    from shufflesim.core.rng import child

    root = np.random.SeedSequence(seed)
    sources = list(dict.fromkeys(x["source"] for x in numbers))
    out = []
    for si, src in enumerate(sources):
        group = [x for x in numbers if x["source"] == src]
        first: dict[tuple, str] = {}  # a printed number (statistic, n, cell, value) -> the row that printed it
        dup_of = []
        for x in group:
            key = (x["statistic"], x["n"], x.get("x0"), float(x["paper"]))
            dup_of.append(first.get(key))
            first.setdefault(key, x["label"])
        family = len(first)
        level = bonferroni_level(0.95, max(family, 1))
        alpha = 1.0 - level
        for i, (x, dup) in enumerate(zip(group, dup_of)):
            gen = np.random.Generator(np.random.PCG64(child(root, AGREEMENT_STREAM, si, i)))
            values = np.asarray(x["values"], dtype=float)
            draws = reference(values, x["runs"] or 1, x["statistic"], gen)
            a = compare(x["paper"], draws, level)
            p = p_value(draws, x["paper"])
            borderline = alpha / BORDERLINE_FACTOR <= p < alpha * BORDERLINE_FACTOR
            flag = "; ".join(t for t in ("borderline" if borderline else "",
                                          f"not in the family (repeats the number printed for {dup})" if dup else "")
                             if t)
            row = {k: v for k, v in x.items() if k != "values"}
            row.update(shufflesim=float(values.mean() if x["statistic"] == "mean" else values.std()),
                       trials=int(values.size), range_lo=a.lo, range_hi=a.hi, percentile=a.percentile,
                       verdict=a.verdict, side=a.side, level=level, p_value=p, flag=flag, alpha=alpha,
                       family=family, borderline=borderline, in_family=dup is None)
            out.append(row)
    return pd.DataFrame(out)


def column_checks(papers: "pd.DataFrame", minimum: int = 5) -> list[str]:
    """A sign test per column of a printed table (same source, statistic and n, at least ``minimum`` numbers).

    If every printed number were an outcome of the simulated setting, each would fall below the median of
    its reference distribution with probability 1/2, independently: the count below is Binomial(m, 1/2).  A
    small two-sided p-value says the printed column sits systematically low (or high) against shufflesim,
    even where every single number is within its own range.
    """
    from scipy.stats import binomtest

    out = []
    for (src, stat, n), g in papers.groupby(["source", "statistic", "n"], sort=False):
        m = len(g)
        if m < minimum:
            continue
        below = int((g["percentile"] < 50).sum())
        p = binomtest(below, m, 0.5).pvalue
        out.append(f"Column check ({stat}, n = {n}): {below} of {m} printed numbers lie below the median of their "
                   f"reference distribution; two-sided sign-test p = {p:.2g}"
                   + (" — the column is systematically " + ("low" if below > m / 2 else "high") + " against "
                      "shufflesim's simulation." if p < 0.05 else " (no systematic offset detected)."))
    return out
