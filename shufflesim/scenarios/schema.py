"""The scenario schema and its validation (before anything runs).

A scenario file (TOML) has top-level keys :data:`TOP` and any number of steps of three kinds:

* ``[[sweep]]`` — a Monte-Carlo grid of one protocol (the sweep engine), summarised per point;
* ``[[curve]]`` — accountant calls: δ(ε) (or ε(δ)) of a mechanism description over a grid of ε;
* ``[[table]]`` — a published table recomputed by a study (``balle2020``: seed 004 Table 3);
* ``[[training]]`` — federated training (FLAME, :mod:`shufflesim.federated`): accuracy per round;
* ``[[defence]]`` — seed 004 §8's defence against dishonest or absent users: each protocol calibrated to keep
  its (ε, δ) whenever at least ⌈(1 − F)n⌉ users are honest, its certificate, its MSE price and the ε the
  undefended protocol is left with at that honest count (:func:`shufflesim.validation.dishonest.tolerant_protocol`);
* ``[[cells]]`` — per-cell errors |π̂_x − π_x| of a histogram protocol at chosen cells x (seed 003's
  individual-specific utility, Tables V–VI) and, with ``grid``, heatmaps of the true and estimated cell
  distributions (Figures 4–5).

A ``[sweep.paper]`` or ``[cells.paper]`` table holds the paper's printed values for that step (``mean`` and
optionally ``std``, keyed by n); the report puts each next to shufflesim's with the verdict of
:mod:`shufflesim.scenarios.agreement`.

``claims = ["paper/id", ...]`` names claims of the registry (``scenarios/claims/``) whose paper value,
shufflesim value and verdict the report tabulates.  Every error names the key path and what is allowed.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shufflesim.errors import ShufflesimError


class ScenarioError(ShufflesimError):
    """A malformed scenario file (the message names the file and the key path)."""


@dataclass(frozen=True)
class Key:
    types: tuple
    required: bool = False
    default: Any = None
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: tuple | None = None  # element types of a list (a scalar of these types is also accepted when listable)
    listable: bool = False      # a scalar or a list of scalars
    doc: str = ""


ENGINES = ("faithful", "fast", "auto")
MECHANISMS = ("krr", "rr2", "clones", "biswas", "central-laplace", "central-gaussian")
STUDIES = ("balle2020",)
Y_SWEEP = ("mse", "rmse", "rmse_mean", "mse_expected", "tv", "bias")
#: what a sweep's paper values are: the mean over runs of |estimated mean − true mean| (the error of the sum
#: divided by n), or of the TV distance
PAPER_STATISTICS = ("abs_error_mean", "tv")

TOP: dict[str, Key] = {
    "title": Key((str,), True, doc="one line: what the scenario shows"),
    "paper": Key((str,), True, doc="the paper (seed number and authors) or 'none'"),
    "reproduces": Key((str,), True, doc="which figure or table ('Figure 1', 'Table 3', 'none')"),
    "description": Key((str,), False, ""),
    "seed": Key((int,), True, minimum=0, doc="root seed of every Monte-Carlo step"),
    "claims": Key((list,), False, [], items=(str,), doc="claims registry ids 'paper/id'"),
    "paper_notes": Key((str,), False, "", doc="what the paper reports, in words"),
    "sweep": Key((list,), False, [], items=(dict,)),
    "curve": Key((list,), False, [], items=(dict,)),
    "table": Key((list,), False, [], items=(dict,)),
    "training": Key((list,), False, [], items=(dict,)),
    "cells": Key((list,), False, [], items=(dict,)),
    "defence": Key((list,), False, [], items=(dict,)),
}

PAPER: dict[str, Key] = {
    "source": Key((str,), True, doc="where the numbers are printed (table, text, or where they were transcribed from)"),
    "statistic": Key((str,), False, None, choices=PAPER_STATISTICS,
                     doc="sweeps: the per-trial quantity the paper summarises"),
    "runs": Key((int,), False, None, minimum=1, doc="runs behind each printed number (omit if not stated)"),
    "mean": Key((dict,), True, doc="n -> printed value (sweeps: a number; cells: a list, one per cell)"),
    "std": Key((dict,), False, None, doc="n -> printed standard deviation over the runs (as mean)"),
    "note": Key((str,), False, "", doc="how the paper's setting differs, in words"),
}

SWEEP: dict[str, Key] = {
    "name": Key((str,), True),
    "protocol": Key((str,), True, doc="a registered protocol (shufflesim simulate --help)"),
    "label": Key((str,), False, None),
    "figure": Key((str,), False, None, doc="PNG file stem; steps with the same figure share one plot"),
    "plot": Key((bool,), False, True, doc="false: no plot of this sweep (e.g. a table's single n)"),
    "n": Key((int,), True, listable=True, minimum=1),
    "quick_n": Key((int,), False, None, listable=True, minimum=1),
    "data": Key((str,), False, "uniform", listable=True,
                doc="a data spec (shufflesim simulate); datasets/FILE:COLUMN is a file shipped with shufflesim"),
    "params": Key((dict,), False, {}, doc="protocol options; a list value is a grid axis (a list of lists: an axis "
                  "of list values); '1/n^2' is 1/n**2; dishonest (a count or a fraction of n), strategy, direction "
                  "and target describe a deviating coalition (issue 23; y = 'bias')"),
    "trials": Key((int,), True, minimum=1),
    "quick_trials": Key((int,), False, None, minimum=1),
    "engine": Key((str,), False, "auto", choices=ENGINES),
    "matched_to": Key((str,), False, None, doc="an earlier sweep: one point per point of it, with params eps "
                      "and delta set to that point's certified central (eps, delta)"),
    "in_quick": Key((bool,), False, True, doc="false: skipped by --quick (its setup alone is too slow)"),
    "chunk_size": Key((int,), False, 1000, minimum=1),
    "point_seconds": Key((int, float), False, 0.05, minimum=0,
                         doc="set-up cost of one point (calibration), for the run-time estimate"),
    "lower": Key((int, float), False, None, doc="a real-valued CSV column is scaled by (v − lower)/(upper − lower)"),
    "upper": Key((int, float), False, None),
    "paper": Key((dict,), False, None, doc="the paper's printed values (keys: " + ", ".join(PAPER) + ")"),
    "x": Key((str,), False, "n", doc="'n' or a parameter name"),
    "y": Key((str,), False, "mse", choices=Y_SWEEP),
    "logx": Key((bool,), False, True),
    "logy": Key((bool,), False, True),
    "xlabel": Key((str,), False, None),
    "ylabel": Key((str,), False, None),
}

CURVE: dict[str, Key] = {
    "name": Key((str,), True),
    "mechanism": Key((str,), True, choices=MECHANISMS),
    "args": Key((dict,), True, doc="the description's fields; a list value is a grid axis (one line each)"),
    "label": Key((str,), False, None, doc="legend label; {field} placeholders are filled in"),
    "figure": Key((str,), False, None),
    "method": Key((str,), False, "tight"),
    "compositions": Key((int, float), False, 1, listable=True,
                        doc="checked by the question validator (accounting.queries)"),
    "composition": Key((str,), False, "basic", choices=("basic", "advanced")),
    "eps": Key((int, float), False, None, listable=True, doc="checked by the question validator (accounting.queries)"),
    "eps_range": Key((list,), False, None, items=(int, float), doc="[start, stop, num] (linear grid of eps)"),
    "x": Key((str,), False, "eps", doc="'eps' (δ(ε) curves) or a mechanism flag such as 'eps0': ε(δ) against it"),
    "x_range": Key((list,), False, None, items=(int, float), doc="[start, stop, num]: the values of x (x != 'eps')"),
    "delta": Key((int, float), False, None, doc="x != 'eps': the δ at which ε is reported (checked by the question "
                 "validator, accounting.queries)"),
    "quick_num": Key((int,), False, 5, minimum=2),
    "logy": Key((bool,), False, True),
    "ymin": Key((int, float), False, None, minimum=0, doc="lower end of the δ axis (values below are cut)"),
    "xlabel": Key((str,), False, None),
    "ylabel": Key((str,), False, None),
}

TABLE: dict[str, Key] = {
    "name": Key((str,), True),
    "study": Key((str,), True, choices=STUDIES),
    "rows": Key((str,), False, None, listable=True),
    "quick_rows": Key((str,), False, None, listable=True),
    "tight": Key((bool,), False, False),
}

TRAINING: dict[str, Key] = {
    "name": Key((str,), True),
    "protocol": Key((str,), True, listable=True, doc="FLAME protocols and baselines (shufflesim fl --help)"),
    "dataset": Key((str,), False, "digits", choices=("digits", "mnist")),
    "rounds": Key((int,), True, minimum=1),
    "quick_rounds": Key((int,), False, None, minimum=1),
    "settings": Key((dict,), False, {}, doc="further FLSettings fields (n, lr, eps_l, k, tight, ...)"),
    "label": Key((str,), False, None),
    "figure": Key((str,), False, None),
    "poisoned": Key((int, float), False, None, listable=True, minimum=0,
                    doc="SS-*: poisoned clients per round (fraction in [0, 1) or count); a list is an axis"),
    "poison_strategy": Key((str,), False, None, listable=True, doc="worst-in-range, worst-message, out-of-range"),
    "range_check": Key((bool,), False, None, listable=True, doc="the analyser's range check (a list: both)"),
    "x": Key((str,), False, "round", choices=("round", "poisoned", "eps"),
             doc="'poisoned': plot the last round's accuracy against the poisoned fraction; 'eps': against the "
                 "run's certified ε, next to the paper's accounting of the same run"),
    "seeds": Key((int,), False, 1, minimum=1, doc="runs of every point, seeds seed, seed + 1, ...; plotted: their mean"),
    "quick_seeds": Key((int,), False, 1, minimum=1),
}

CELLS: dict[str, Key] = {
    "name": Key((str,), True),
    "protocol": Key((str,), True, doc="a histogram protocol with a fast engine (krr, central-gaussian-hist, ...)"),
    "label": Key((str,), False, None),
    "n": Key((int,), True, listable=True, minimum=1),
    "quick_n": Key((int,), False, None, listable=True, minimum=1),
    "data": Key((str,), False, "uniform"),
    "params": Key((dict,), False, {}, doc="protocol options (scalars); '1/n^2' is 1/n**2"),
    "matched_to": Key((str,), False, None, doc="an earlier [[cells]] step: eps and delta set to its points' "
                      "certified central (eps, delta)"),
    "cells": Key((list,), True, items=(int,), doc="the cells x (0-based) whose |π̂_x − π_x| is tabulated"),
    "cell_labels": Key((list,), False, None, items=(int,), doc="the paper's names of those cells (e.g. x0 = 1..k)"),
    "trials": Key((int,), True, minimum=2),
    "quick_trials": Key((int,), False, None, minimum=2),
    "grid": Key((list,), False, None, items=(int,), doc="[columns, rows]: draw the cell distributions as heatmaps "
                "(cell = row × columns + column, row 0 at the bottom)"),
    "figure": Key((str,), False, None, doc="heatmap PNG stem; steps with the same figure are panels of one plot"),
    "paper": Key((dict,), False, None, doc="the paper's printed values (keys: " + ", ".join(PAPER) + ")"),
}

#: the protocols whose guarantee depends on the other users' noise (the tolerate-F defence calibrates them)
DEFENCE_PROTOCOLS = ("krr", "blanket-sum", "cheu-sum", "recursive-sum", "ikos-sum")

DEFENCE: dict[str, Key] = {
    "name": Key((str,), True),
    "protocol": Key((str,), True, listable=True, choices=DEFENCE_PROTOCOLS),
    "n": Key((int,), True, minimum=2),
    "params": Key((dict,), False, {}, doc="protocol options (scalars), the same for every protocol of the step"),
    "tolerate": Key((int, float), True, listable=True, minimum=0, maximum=0.99,
                    doc="fractions F of dishonest or absent users to tolerate (F in [0, 0.99])"),
    "quick_tolerate": Key((int, float), False, None, listable=True, minimum=0, maximum=0.99),
    "label": Key((str,), False, None, doc="label template ({protocol})"),
    "figure": Key((str,), False, None),
}

SECTIONS = {"sweep": SWEEP, "curve": CURVE, "table": TABLE, "training": TRAINING, "cells": CELLS,
            "defence": DEFENCE}


def _tname(types: tuple) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "table"}
    return " or ".join(names[t] for t in types)


def _is(value: Any, types: tuple) -> bool:
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def scenario_number(where: str, v: Any) -> Any:
    """A real of a scenario's params, args or settings table by the rule of every number a user gives
    (:func:`shufflesim.core.checks.check_real`): finite.  TOML's nan passes every range comparison, so it is
    refused here, with the validator's own line (``where: eps must be finite; got nan``) — the same line the
    protocol gives when the run builds the point, also for points ``run --check`` does not build."""
    from shufflesim.core.checks import check_real
    from shufflesim.errors import ParameterError

    if isinstance(v, float):
        try:
            check_real(where.rsplit(".", 1)[-1].split("[")[0], v)
        except ParameterError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
    return v


def _params_numbers(where: str, value: Any) -> None:
    """Every number inside a params / args / settings table (and its lists), by :func:`scenario_number`."""
    if isinstance(value, bool) or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        scenario_number(where, value)
    elif isinstance(value, list):
        for i, x in enumerate(value):
            _params_numbers(f"{where}[{i}]", x)
    elif isinstance(value, dict):
        for k, x in value.items():
            _params_numbers(f"{where}.{k}", x)


def _check_value(path: str, value: Any, key: Key) -> Any:
    def one(v, where):
        if not _is(v, key.types):
            raise ScenarioError(f"{where}: expected {_tname(key.types)}, got {type(v).__name__} {v!r}")
        if (key.minimum is not None or key.maximum is not None) and isinstance(v, float) and not math.isfinite(v):
            # nan passes both comparisons below; the schema checks this key's range itself
            raise ScenarioError(f"{where}: {v!r} is out of range (allowed: a finite number"
                                + (f", >= {key.minimum}" if key.minimum is not None else "")
                                + (f", <= {key.maximum}" if key.maximum is not None else "") + ")")
        if key.choices is not None and v not in key.choices:
            from shufflesim.core.checks import did_you_mean

            raise ScenarioError(f"{where}: {v!r} is not allowed (allowed: {', '.join(map(str, key.choices))})"
                                f"{did_you_mean(v, key.choices)}")
        if key.minimum is not None and isinstance(v, (int, float)) and v < key.minimum:
            raise ScenarioError(f"{where}: {v!r} is out of range (allowed: >= {key.minimum})")
        if key.maximum is not None and isinstance(v, (int, float)) and v > key.maximum:
            raise ScenarioError(f"{where}: {v!r} is out of range (allowed: <= {key.maximum})")
        return v

    if key.listable:
        if isinstance(value, list):
            if not value:
                raise ScenarioError(f"{path}: an empty list (give at least one value)")
            return [one(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return one(value, path)
    one(value, path)
    if key.items is not None and isinstance(value, list):
        for i, v in enumerate(value):
            if not _is(v, key.items):
                raise ScenarioError(f"{path}[{i}]: expected {_tname(key.items)}, got {type(v).__name__} {v!r}")
    return value


def _check_table(path: str, table: dict, schema: dict[str, Key]) -> dict:
    unknown = [k for k in table if k not in schema]
    if unknown:
        where = f"{path}." if path else ""
        from shufflesim.core.checks import did_you_mean

        raise ScenarioError(f"{where}{unknown[0]}: unknown key (valid keys: {', '.join(schema)})"
                            f"{did_you_mean(unknown[0], schema)}")
    out = {}
    for name, key in schema.items():
        p = f"{path}.{name}" if path else name
        if name not in table:
            if key.required:
                raise ScenarioError(f"{p}: missing required key ({key.doc or _tname(key.types)})")
            out[name] = key.default
            continue
        out[name] = _check_value(p, table[name], key)
        if name in ("params", "args", "settings"):
            _params_numbers(p, table[name])
    return out


def _check_range(where: str, r: list) -> None:
    if len(r) != 3 or not (0 < r[0] < r[1]) or int(r[2]) != r[2] or r[2] < 2:
        raise ScenarioError(f"{where}: {r!r} is not allowed (allowed: [start, stop, num] with 0 < start < stop and "
                            "an integer num >= 2)")


def _check_paper(where: str, paper: dict, step: dict, section: str) -> dict:
    """A step's ``paper`` table: keys, statistic, and values keyed by an n of the step."""
    pp = _check_table(where, paper, PAPER)
    if section == "sweep" and pp["statistic"] is None:
        raise ScenarioError(f"{where}.statistic: missing required key (allowed: {', '.join(PAPER_STATISTICS)})")
    if section == "cells" and pp["statistic"] is not None:
        raise ScenarioError(f"{where}.statistic: not allowed in [[cells]] (the statistic is |π̂_x − π_x|)")
    if pp["std"] is not None and (pp["runs"] or 1) < 2:
        raise ScenarioError(f"{where}.std: a standard deviation over runs needs runs >= 2 (give runs)")
    ns = {int(v) for v in (step["n"] if isinstance(step["n"], list) else [step["n"]])}
    out: dict[str, dict[int, Any]] = {}
    for field_ in ("mean", "std"):
        table = pp[field_] or {}
        if field_ == "mean" and not table:
            raise ScenarioError(f"{where}.mean: an empty table (give the printed values keyed by n)")
        vals: dict[int, Any] = {}
        for key, v in table.items():
            p = f"{where}.{field_}.{key}"
            if not key.isdigit() or int(key) not in ns:
                raise ScenarioError(f"{p}: {key!r} is not allowed (allowed: an n of this step: "
                                    f"{', '.join(map(str, sorted(ns)))})")
            if section == "cells":
                if not isinstance(v, list) or len(v) != len(step["cells"]):
                    raise ScenarioError(f"{p}: expected an array of {len(step['cells'])} numbers (one per cell)")
                items = v
            else:
                items = [v]
            for j, x in enumerate(items):
                if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0:
                    raise ScenarioError(f"{p}{f'[{j}]' if section == 'cells' else ''}: expected a number >= 0, "
                                        f"got {type(x).__name__} {x!r}")
            vals[int(key)] = [float(x) for x in v] if section == "cells" else float(v)
        out[field_] = vals
    pp["mean"], pp["std"] = out["mean"], out["std"]
    return pp


def _check_step(section: str, i: int, s: dict, earlier: list[dict]) -> None:
    where = f"{section}[{i}]"
    if section in ("sweep", "cells") and s["matched_to"] is not None and \
            s["matched_to"] not in {st["name"] for st in earlier}:
        raise ScenarioError(f"{where}.matched_to: {s['matched_to']!r} is not an earlier "
                            f"{'sweep' if section == 'sweep' else '[[cells]] step'} (earlier: "
                            f"{', '.join(st['name'] for st in earlier) or 'none'})")
    if section in ("sweep", "cells") and s["paper"] is not None:
        s["paper"] = _check_paper(f"{where}.paper", s["paper"], s, section)
    if section == "sweep" and (s["lower"] is None) != (s["upper"] is None):
        raise ScenarioError(f"{where}: give both lower and upper (the scaling of a real-valued CSV column) or neither")
    if section == "sweep" and s["lower"] is not None and not s["lower"] < s["upper"]:
        raise ScenarioError(f"{where}.upper: {s['upper']!r} is not allowed (allowed: > lower = {s['lower']!r})")
    if section == "curve":
        if s["x"] == "eps":
            if s["x_range"] is not None or s["delta"] is not None:
                raise ScenarioError(f"{where}: x_range and delta go with x = a mechanism flag (here x = 'eps': "
                                    "give eps or eps_range)")
            if (s["eps"] is None) == (s["eps_range"] is None):
                raise ScenarioError(f"{where}: give exactly one of eps and eps_range")
            if s["eps_range"] is not None:
                _check_range(f"{where}.eps_range", s["eps_range"])
                _check_question(f"{where}.eps_range", eps=s["eps_range"][:2])
            else:
                _check_question(f"{where}.eps", eps=s["eps"])
        else:
            if s["eps"] is not None or s["eps_range"] is not None:
                raise ScenarioError(f"{where}: eps and eps_range go with x = 'eps'; x = {s['x']!r} takes x_range "
                                    "and delta")
            if s["x_range"] is None or s["delta"] is None:
                raise ScenarioError(f"{where}: x = {s['x']!r} needs x_range = [start, stop, num] and delta")
            _check_range(f"{where}.x_range", s["x_range"])
            _check_question(f"{where}.delta", delta=s["delta"])
            if s["x"] in s["args"]:
                raise ScenarioError(f"{where}.args.{s['x']}: x = {s['x']!r} is the varied flag; do not give it in args")
    if section == "curve":
        from shufflesim.accounting.model.mechanism import PAIR_METHODS

        many = isinstance(s["compositions"], list)
        counts = [_check_question(f"{where}.compositions" + (f"[{j}]" if many else ""), compositions=c,
                                  pair_based=s["method"] in PAIR_METHODS)
                  for j, c in enumerate(s["compositions"] if many else [s["compositions"]])]
        s["compositions"] = counts if many else counts[0]
    if section == "cells":
        if any(isinstance(v, list) for v in s["params"].values()):
            raise ScenarioError(f"{where}.params: a [[cells]] step takes scalar params (one point per n)")
        if any(c < 0 for c in s["cells"]) or not s["cells"]:
            raise ScenarioError(f"{where}.cells: {s['cells']!r} is not allowed (allowed: cell indices >= 0)")
        if s["cell_labels"] is not None and len(s["cell_labels"]) != len(s["cells"]):
            raise ScenarioError(f"{where}.cell_labels: give one label per cell ({len(s['cells'])})")
        if s["grid"] is not None and (len(s["grid"]) != 2 or min(s["grid"]) < 1):
            raise ScenarioError(f"{where}.grid: {s['grid']!r} is not allowed (allowed: [columns, rows], both >= 1)")


def _check_question(where: str, *, eps=None, delta=None, compositions=None, pair_based: bool = False) -> int | None:
    """A curve's eps / delta / compositions by the one question validator of the accountant
    (:mod:`shufflesim.accounting.model.queries`): the same answer as ``account`` and the CLI, with the key path; the
    number of compositions as an integer (None when not given)."""
    from shufflesim.accounting.model import queries
    from shufflesim.errors import ParameterError

    try:
        if eps is not None:
            queries.eps_values(eps)
        if delta is not None:
            queries.delta_values(delta)
        if compositions is not None:
            return queries.check_compositions(compositions, pair_based=pair_based)
    except ParameterError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    return None


#: a step's name and a figure name become file names inside the output directory (results/NAME.*,
#: sweeps/NAME/, FIGURE.png): letters, digits, '_', '-' and '.', starting with a letter or digit, so that no name
#: can reach outside the output directory ('../x', '/abs', 'a/b') or hide a file ('.x')
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def _check_file_name(where: str, value: str | None) -> None:
    if value is not None and (not SAFE_NAME.fullmatch(value) or ".." in value):
        raise ScenarioError(f"{where}: {value!r} is not allowed (allowed: a file name of letters, digits, '_', '-' "
                            "and '.', starting with a letter or digit, at most 100 characters, without '..')")


def validate(doc: dict) -> dict:
    """The scenario with defaults filled in; raises :class:`ScenarioError` naming the key path."""
    top = _check_table("", doc, TOP)
    names: set[str] = set()  # one namespace: a step's name is its result files' name
    for section, schema in SECTIONS.items():
        steps: list[dict] = []
        for i, step in enumerate(top[section]):
            s = _check_table(f"{section}[{i}]", step, schema)
            _check_file_name(f"{section}[{i}].name", s["name"])
            _check_file_name(f"{section}[{i}].figure", s.get("figure"))
            if s["name"] in names or s["name"] in ("claims", "paper"):
                raise ScenarioError(f"{section}[{i}].name: {s['name']!r} is used twice (step names are the result "
                                    "files' names: unique across the scenario, and not 'claims' or 'paper')")
            names.add(s["name"])
            _check_step(section, i, s, steps)
            steps.append(s)
        top[section] = steps
    for i, c in enumerate(top["claims"]):
        if c.count("/") != 1:
            raise ScenarioError(f"claims[{i}]: {c!r} is not allowed (allowed: 'paper/id' of scenarios/claims/)")
    if not any(top[k] for k in ("sweep", "curve", "table", "training", "cells", "defence", "claims")):
        raise ScenarioError("the scenario has nothing to run (give at least one [[sweep]], [[curve]], [[table]], "
                            "[[training]], [[cells]] or claims)")
    return top


def load(path: str | Path) -> dict:
    """Parse and validate a scenario file; errors start with the file name."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {exc.start}); scenario files are UTF-8 TOML") from None
    except IsADirectoryError:
        raise ScenarioError(f"{path}: is a directory, not a scenario file") from None
    try:
        sc = validate(doc)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    sc["_path"] = str(path)
    sc["_stem"] = path.stem
    return sc
