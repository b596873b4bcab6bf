"""The scenario schema and its validation (before anything runs).

A scenario file (TOML) has top-level keys :data:`TOP` and any number of steps of three kinds:

* ``[[sweep]]`` — a Monte-Carlo grid of one protocol (the sweep engine), summarised per point;
* ``[[curve]]`` — accountant calls: δ(ε) (or ε(δ)) of a mechanism description over a grid of ε;
* ``[[table]]`` — a published table recomputed by a study (``balle2020``: seed 004 Table 3);
* ``[[training]]`` — federated training (FLAME, :mod:`shufflesim.federated`): accuracy per round.

``claims = ["paper/id", ...]`` names claims of the registry (``scenarios/claims/``) whose paper value,
shufflesim value and verdict the report tabulates.  Every error names the key path and what is allowed.
"""

from __future__ import annotations

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
Y_SWEEP = ("mse", "rmse", "rmse_mean", "mse_expected", "tv")

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
}

SWEEP: dict[str, Key] = {
    "name": Key((str,), True),
    "protocol": Key((str,), True, doc="a registered protocol (shufflesim simulate --help)"),
    "label": Key((str,), False, None),
    "figure": Key((str,), False, None, doc="PNG file stem; steps with the same figure share one plot"),
    "n": Key((int,), True, listable=True, minimum=1),
    "quick_n": Key((int,), False, None, listable=True, minimum=1),
    "data": Key((str,), False, "uniform", listable=True,
                doc="a data spec (shufflesim simulate); datasets/FILE:COLUMN is a file shipped with shufflesim"),
    "params": Key((dict,), False, {}, doc="protocol options; a list value is a grid axis; '1/n^2' is 1/n**2"),
    "trials": Key((int,), True, minimum=1),
    "quick_trials": Key((int,), False, None, minimum=1),
    "engine": Key((str,), False, "auto", choices=ENGINES),
    "matched_to": Key((str,), False, None, doc="an earlier sweep: one point per point of it, with params eps "
                      "and delta set to that point's certified central (eps, delta)"),
    "in_quick": Key((bool,), False, True, doc="false: skipped by --quick (its setup alone is too slow)"),
    "chunk_size": Key((int,), False, 1000, minimum=1),
    "point_seconds": Key((int, float), False, 0.5, minimum=0,
                         doc="set-up cost of one point (calibration), for the run-time estimate"),
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
    "compositions": Key((int,), False, 1, listable=True, minimum=1),
    "composition": Key((str,), False, "basic", choices=("basic", "advanced")),
    "eps": Key((int, float), False, None, listable=True, minimum=0),
    "eps_range": Key((list,), False, None, items=(int, float), doc="[start, stop, num] (linear grid of eps)"),
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
}

SECTIONS = {"sweep": SWEEP, "curve": CURVE, "table": TABLE, "training": TRAINING}


def _tname(types: tuple) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "table"}
    return " or ".join(names[t] for t in types)


def _is(value: Any, types: tuple) -> bool:
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def _check_value(path: str, value: Any, key: Key) -> Any:
    def one(v, where):
        if not _is(v, key.types):
            raise ScenarioError(f"{where}: expected {_tname(key.types)}, got {type(v).__name__} {v!r}")
        if key.choices is not None and v not in key.choices:
            raise ScenarioError(f"{where}: {v!r} is not allowed (allowed: {', '.join(map(str, key.choices))})")
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
        raise ScenarioError(f"{where}{unknown[0]}: unknown key (valid keys: {', '.join(schema)})")
    out = {}
    for name, key in schema.items():
        p = f"{path}.{name}" if path else name
        if name not in table:
            if key.required:
                raise ScenarioError(f"{p}: missing required key ({key.doc or _tname(key.types)})")
            out[name] = key.default
            continue
        out[name] = _check_value(p, table[name], key)
    return out


def validate(doc: dict) -> dict:
    """The scenario with defaults filled in; raises :class:`ScenarioError` naming the key path."""
    top = _check_table("", doc, TOP)
    for section, schema in SECTIONS.items():
        names = set()
        steps = []
        for i, step in enumerate(top[section]):
            s = _check_table(f"{section}[{i}]", step, schema)
            if s["name"] in names:
                raise ScenarioError(f"{section}[{i}].name: {s['name']!r} is used twice")
            names.add(s["name"])
            if section == "sweep" and s["matched_to"] is not None and s["matched_to"] not in names - {s["name"]}:
                raise ScenarioError(f"sweep[{i}].matched_to: {s['matched_to']!r} is not an earlier sweep (earlier: "
                                    f"{', '.join(st['name'] for st in steps) or 'none'})")
            if section == "curve":
                if (s["eps"] is None) == (s["eps_range"] is None):
                    raise ScenarioError(f"curve[{i}]: give exactly one of eps and eps_range")
                if s["eps_range"] is not None:
                    r = s["eps_range"]
                    if len(r) != 3 or not (0 < r[0] < r[1]) or int(r[2]) != r[2] or r[2] < 2:
                        raise ScenarioError(f"curve[{i}].eps_range: {r!r} is not allowed (allowed: [start, stop, "
                                            "num] with 0 < start < stop and an integer num >= 2)")
            steps.append(s)
        top[section] = steps
    for i, c in enumerate(top["claims"]):
        if c.count("/") != 1:
            raise ScenarioError(f"claims[{i}]: {c!r} is not allowed (allowed: 'paper/id' of scenarios/claims/)")
    if not (top["sweep"] or top["curve"] or top["table"] or top["training"] or top["claims"]):
        raise ScenarioError("the scenario has nothing to run (give at least one [[sweep]], [[curve]], [[table]], "
                            "[[training]] or claims)")
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
    try:
        sc = validate(doc)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    sc["_path"] = str(path)
    sc["_stem"] = path.stem
    return sc
