"""Expanding a validated scenario's steps: the sweep points, the accountant grids, the trials in each mode, and
the run-time estimate (before anything runs)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from shufflesim.scenarios.schema import ScenarioError


def as_list(v) -> list:
    """A scenario value that may be one item or a list, as a list."""
    return list(v) if isinstance(v, list) else [v]


def resolve_data(spec: str) -> str:
    """``datasets/NAME:COLUMN`` names a file shipped in ``shufflesim/datasets/`` (e.g. the Gowalla cells)."""
    if spec.startswith("datasets/") and ":" in spec:
        from importlib.resources import files

        return str(Path(str(files("shufflesim"))) / spec)
    return spec


def shown_data(spec: str) -> str:
    """The data spec as the scenario gives it (a shipped file as ``datasets/NAME:COLUMN``, not this machine's
    path), for result tables and reports."""
    from importlib.resources import files

    root = str(Path(str(files("shufflesim")))) + "/"
    return spec[len(root):] if spec.startswith(root + "datasets/") else spec


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


def sweep_points(step: dict, quick: bool, sc: dict | None = None, section: str = "sweep") -> list:
    """The sweep engine's points of a [[sweep]] (or [[cells]]) step (quick mode: ``quick_n`` if given)."""
    from shufflesim.experiments.sweep import SweepPoint

    if step["matched_to"] is not None and sc is not None:
        return matched_points(step, sweep_points(reference_step(step, sc, section), quick, sc, section))

    from shufflesim.experiments.population import split_attack

    ns = as_list(step["quick_n"] if quick and step["quick_n"] is not None else step["n"])
    names = sorted(step["params"])
    axes = [as_list(step["params"][k]) for k in names]
    pts = []
    for data in as_list(step["data"]):
        data = resolve_data(data)
        for n in ns:
            for combo in itertools.product(*axes):
                params = {}
                for k, v in zip(names, combo):
                    params[k] = 1.0 / n**2 if v == "1/n^2" else (1.0 / n if v == "1/n" else v)
                params, attack = split_attack(params)  # issue 23: the coalition's keys (dishonest, strategy, ...)
                pts.append(SweepPoint(step["protocol"], params, data, int(n), step.get("lower"), step.get("upper"),
                                      attack=attack))
    return pts


def reference_step(step: dict, sc: dict, section: str = "sweep") -> dict:
    """The step that ``step`` is ``matched_to`` (an earlier step of the same section)."""
    return next(s for s in sc[section] if s["name"] == step["matched_to"])


def sweep_trials(step: dict, quick: bool) -> int:
    return (step["quick_trials"] or min(step["trials"], 20)) if quick else step["trials"]


def curve_eps(step: dict, quick: bool) -> list[float]:
    if step["eps"] is not None:
        eps = [float(e) for e in as_list(step["eps"])]
        if quick and len(eps) > step["quick_num"]:
            idx = np.unique(np.linspace(0, len(eps) - 1, step["quick_num"]).round().astype(int))
            eps = [eps[i] for i in idx]
        return eps
    start, stop, num = step["eps_range"]
    num = min(int(num), step["quick_num"]) if quick else int(num)
    return [float(x) for x in np.linspace(start, stop, num)]


def curve_x(step: dict, quick: bool) -> list[float]:
    """The values of the varied mechanism flag of a curve with ``x`` != 'eps'."""
    start, stop, num = step["x_range"]
    num = min(int(num), step["quick_num"]) if quick else int(num)
    return [float(x) for x in np.linspace(start, stop, num)]


def curve_combos(step: dict) -> list[tuple[dict, int]]:
    names = sorted(step["args"])
    axes = [as_list(step["args"][k]) for k in names]
    return [(dict(zip(names, combo)), int(c)) for combo in itertools.product(*axes)
            for c in as_list(step["compositions"])]


def active_sweeps(sc: dict, quick: bool) -> list[dict]:
    """The [[sweep]] steps that run in this mode (``in_quick = false`` ones are left out of --quick)."""
    return [s for s in sc["sweep"] if s["in_quick"] or not quick]


#: The run-time model behind ``run --check`` and the ten-minute question (CPU seconds of one core; the constants
#: below were measured as CPU time per step of ``run --all --quick`` on the 2-core development machine, bench/
#: run_estimates.md, and are used for full runs too).  Each stands for a class of work whose cost the inputs do not
#: determine more closely (an accountant's cost depends on the pair's atoms, a training round on the protocol), so
#: the estimate is stated as a range: within :data:`ESTIMATE_FACTOR` of the measured CPU time either way (times
#: under :data:`ESTIMATE_FLOOR_SECONDS` counted as that), which held for every scenario in quick mode when measured.
ESTIMATE_FACTOR = 4.0
ESTIMATE_FLOOR_SECONDS = 1.0
#: a sweep trial: the fast engine's, and the faithful engine's per user (a point's set-up is its ``point_seconds``)
FAST_TRIAL_SECONDS = 2e-4
FAITHFUL_USER_SECONDS = 1e-7
#: one accountant call of a [[curve]] line (all its ε at once) or of one x value: closed-form bounds, the pair-based
#: methods single use and composed (an FFT composition), and the weak adversary's pair (10-100x the strong one's)
CURVE_CALL_SECONDS = {"closed-form": 0.01, "pair": 0.1, "pair-composed": 1.0, "weak": 0.2, "weak-composed": 2.0}
#: one row of a [[table]] study (balle2020 Table 3: the rows that calibrate by search cost more, measured)
TABLE_ROW_SECONDS = {"cheu": 3.0, "recursive2opt": 1.0, "recursive3opt": 2.0}
TABLE_ROW_DEFAULT_SECONDS = 0.05
#: one registry claim checked by a scenario (the fast checks: 0.01-0.6 s measured)
CLAIM_SECONDS = 0.15
#: one training round of one protocol at one grid point and seed, by data set (d = 650 digits, d = 7850 MNIST)
TRAINING_ROUND_SECONDS = {"digits": 0.05, "mnist": 1.2}
#: a [[cells]] step's set-up per n, and per trial
CELLS_SECONDS = 0.2
CELLS_TRIAL_SECONDS = 2e-4
#: one [[defence]] point: a calibration and two certificates at n = 1000
DEFENCE_POINT_SECONDS = 0.8
#: writing a step's results, one figure, and a scenario's report
STEP_OVERHEAD_SECONDS = 0.02
FIGURE_SECONDS = 0.3
SCENARIO_OVERHEAD_SECONDS = 0.05


def curve_call_class(step: dict, compositions: int) -> str:
    """The cost class of one accountant call of a [[curve]] step at ``compositions`` uses (a key of
    :data:`CURVE_CALL_SECONDS`)."""
    from shufflesim.accounting.model.mechanism import PAIR_METHODS  # the accountant's own list

    if step["method"] not in PAIR_METHODS | {"feldman-numerical"}:  # feldman-numerical evaluates a pair too
        return "closed-form"
    views = {str(v) for key in ("relation", "adversary") for v in as_list(step["args"].get(key, []))}
    composed = compositions > 1 and not (step["method"] == "feldman-numerical" and step["composition"] == "basic")
    return ("weak" if "weak" in views else "pair") + ("-composed" if composed else "")


def curve_seconds(step: dict, quick: bool) -> float:
    """The modelled seconds of a [[curve]] step: one accountant call per line (combination of args and
    compositions) for δ(ε) curves, one per line and x value for ε(δ) against a flag."""
    calls = 1 if step["x"] == "eps" else len(curve_x(step, quick))
    return sum(CURVE_CALL_SECONDS[curve_call_class(step, comps)] * calls for _, comps in curve_combos(step))


def estimate_steps(sc: dict, quick: bool) -> dict[str, float]:
    """The modelled CPU seconds of each step that runs in this mode (by step name; ``claims`` for the registry
    claims), from the step's inputs and the constants above."""
    out: dict[str, float] = {}
    for s in active_sweeps(sc, quick):
        t = sweep_trials(s, quick)
        total = 0.0
        for p in sweep_points(s, quick):
            per = FAST_TRIAL_SECONDS if s["engine"] != "faithful" else FAST_TRIAL_SECONDS + FAITHFUL_USER_SECONDS * p.n
            total += t * per + s["point_seconds"]
        out[s["name"]] = total
    for c in sc["curve"]:
        out[c["name"]] = curve_seconds(c, quick)
    for s in sc["table"]:
        rows = s["quick_rows"] if quick and s["quick_rows"] is not None else s["rows"]
        from shufflesim.studies.balle2020 import ROW_KEYS

        keys = ROW_KEYS if rows is None else as_list(rows)
        out[s["name"]] = sum(TABLE_ROW_SECONDS.get(k, TABLE_ROW_DEFAULT_SECONDS) for k in keys)
    for s in sc["training"]:
        rounds = (s["quick_rounds"] or 2) if quick else s["rounds"]
        seeds = (s["quick_seeds"] or 1) if quick else (s["seeds"] or 1)
        out[s["name"]] = (TRAINING_ROUND_SECONDS[s["dataset"]] * len(as_list(s["protocol"])) * rounds * seeds
                          * len(training_points(training_axes(s))))
    for s in sc["cells"]:
        ns = as_list(s["quick_n"] if quick and s["quick_n"] is not None else s["n"])
        out[s["name"]] = len(ns) * (CELLS_SECONDS + CELLS_TRIAL_SECONDS * cells_trials(s, quick))
    for s in sc["defence"]:
        out[s["name"]] = DEFENCE_POINT_SECONDS * len(as_list(s["protocol"])) * len(defence_fractions(s, quick))
    if sc["claims"]:
        out["claims"] = CLAIM_SECONDS * len(sc["claims"])
    return out


def estimate_seconds(sc: dict, quick: bool) -> float:
    """The modelled run time (CPU seconds on one idle core): the steps of :func:`estimate_steps`, the writing of
    their results and the scenario's plots and report.  The run itself may take :data:`ESTIMATE_FACTOR` times
    more or less (:func:`estimate_range`), and longer on a loaded machine."""
    steps = estimate_steps(sc, quick)
    figures = {s.get("figure") for section in ("sweep", "curve", "cells", "training", "defence") for s in sc[section]
               if s.get("figure") and s["name"] in steps}
    return (sum(steps.values()) + STEP_OVERHEAD_SECONDS * len(steps) + FIGURE_SECONDS * len(figures)
            + SCENARIO_OVERHEAD_SECONDS)


def estimate_range(seconds: float) -> str:
    """``seconds`` as the range it stands for: ``"about 12 s (3 s to 48 s on idle cores)"`` (a lower end below
    :data:`ESTIMATE_FLOOR_SECONDS` is shown as "under" it)."""
    def fmt(x: float) -> str:
        return f"{x:.2g} s" if x < 10 else f"{x:.0f} s" if x < 120 else f"{x / 60:.0f} min"

    lo = seconds / ESTIMATE_FACTOR
    low = fmt(lo) if lo >= ESTIMATE_FLOOR_SECONDS else f"under {ESTIMATE_FLOOR_SECONDS:g} s"
    return f"about {fmt(seconds)} ({low} to {fmt(seconds * ESTIMATE_FACTOR)} on idle cores)"


def defence_fractions(step: dict, quick: bool) -> list[float]:
    """The fractions F a [[defence]] step tolerates in this mode (``quick_tolerate`` in quick mode if given)."""
    return [float(f) for f in as_list(step["quick_tolerate"] if quick and step["quick_tolerate"] is not None
                                       else step["tolerate"])]


def cells_trials(step: dict, quick: bool) -> int:
    return (step["quick_trials"] or min(step["trials"], 50)) if quick else step["trials"]


# --- everything that can be checked before anything runs (issue 18) -------------------------------------------
def _label_fields(where: str, template: str | None, allowed: set[str]) -> None:
    """A label template's ``{field}`` placeholders must name fields the step fills in."""
    import string

    if template is None:
        return
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ScenarioError(f"{where}.label: {template!r} is not a valid label template ({exc}; write a literal "
                            "brace as '{{' or '}}')") from None
    for f in fields:
        name = f.split(".")[0].split("[")[0]
        if name not in allowed:
            raise ScenarioError(f"{where}.label: unknown field {{{f}}} (allowed: {', '.join(sorted(allowed))})")


def _check_data(where: str, spec: str) -> None:
    """A data spec parses, and a file it names exists (it is read only when the step runs)."""
    import os

    from shufflesim.errors import ShufflesimError
    from shufflesim.experiments.data import parse_data_spec

    try:
        ds = parse_data_spec(resolve_data(spec))
    except ShufflesimError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    if ds.kind == "file" and not os.path.isfile(ds.path):
        raise ScenarioError(f"{where}: {spec!r}: no such data file {ds.path}")


def _check_protocol_step(where: str, step: dict, sc: dict, section: str, quick: bool) -> None:
    """A [[sweep]] or [[cells]] step: its protocol, its params (keys, axes), data, label and points."""
    from shufflesim.errors import ShufflesimError
    from shufflesim.pipeline import registry

    try:
        cls = registry.get(step["protocol"])
    except ShufflesimError as exc:
        raise ScenarioError(f"{where}.protocol: {exc}") from None
    from shufflesim.experiments.population import ATTACK_KEYS

    allowed = [o.name for o in cls.options]
    if section == "sweep":
        allowed += list(ATTACK_KEYS)  # issue 23: a deviating coalition
        if step["y"] == "bias" and "dishonest" not in step["params"]:
            raise ScenarioError(f"{where}.y: 'bias' needs params.dishonest (the coalition's size)")
    for key, value in step["params"].items():
        if key not in allowed:
            raise ScenarioError(f"{where}.params.{key}: unknown parameter of {step['protocol']} "
                                f"(allowed: {', '.join(allowed)})")
        if isinstance(value, list) and not value:
            raise ScenarioError(f"{where}.params.{key}: an empty axis (give at least one value)")
    for i, d in enumerate(as_list(step["data"])):
        _check_data(f"{where}.data" + (f"[{i}]" if isinstance(step["data"], list) else ""), d)
    # the fields the runner fills in: a sweep's parameters, data and protocol; a [[cells]] step's parameters, n
    # and protocol (scenarios/runner.py, scenarios/cells.py)
    fields = set(allowed) | {"protocol"} | ({"n"} if section == "cells" else {"data"})
    if step["matched_to"] is not None:
        ref = reference_step(step, sc, section)
        fields |= {f"ref_{o.name}" for o in registry.get(ref["protocol"]).options}
    _label_fields(where, step["label"], fields)
    if step["matched_to"] is not None:
        return  # its eps and delta come from the reference's points, built when the step runs
    points = sweep_points(step, quick)
    # the data of each spec (at the step's largest n): its kind fits the protocol, a file has the column, ...
    from shufflesim.experiments.data import load_data

    seen: set = set()
    for p in sorted(points, key=lambda p: -(p.n or 0)):
        try:  # k as the run loads the data: the protocol's data_k (a matrix's rows for matrix-rr)
            k = cls.data_k(p.params) if cls.data_kind == "categorical" else None
        except (ShufflesimError, TypeError, ValueError, OverflowError) as exc:
            raise ScenarioError(f"{where}: params {dict(p.params)}: {exc}") from None
        key = (p.data, k)
        if key in seen:
            continue
        seen.add(key)
        try:
            load_data(p.data, data_kind=cls.data_kind, n=p.n, k=k, rng=0, lower=p.lower, upper=p.upper)
        except (ShufflesimError, TypeError, ValueError, OverflowError) as exc:  # a parameter of the wrong type
            raise ScenarioError(f"{where}.data: {shown_data(p.data)!r}: {exc}") from None
    # the points are built (the protocol checks its parameters' values) for steps of this mode that declare a
    # quick set-up, for at most about a second a step: the rest are built when the step runs
    if step.get("point_seconds", 0.5) > 0.5 or (section == "sweep" and quick and not step["in_quick"]):
        return
    import time

    t0 = time.perf_counter()
    for p in points:
        try:
            proto = registry.create(p.protocol, p.n, **p.params)
            if p.attack is not None:
                from shufflesim.experiments.population import coalition_of

                coalition_of(p.attack, proto)
        except (ShufflesimError, TypeError, ValueError, OverflowError) as exc:  # a parameter of the wrong type
            extra = f", coalition {dict(p.attack)}" if p.attack is not None else ""
            raise ScenarioError(f"{where}: n={p.n}, params {dict(p.params)}{extra}: {exc}") from None
        if time.perf_counter() - t0 > 1.0:
            break


def _check_curve(where: str, step: dict, quick: bool) -> None:
    from shufflesim.errors import ShufflesimError
    from shufflesim.mechanisms import kinds

    cls = kinds()[step["mechanism"]]
    for key, value in step["args"].items():
        if isinstance(value, list) and not value:
            raise ScenarioError(f"{where}.args.{key}: an empty axis (give at least one value)")
    xs = [None] if step["x"] == "eps" else curve_x(step, quick)[:1]
    for args, _ in curve_combos(step):
        for xv in xs:
            try:
                mech = cls(**args) if xv is None else cls.from_flags(**{**args, step["x"]: xv})
            except TypeError as exc:
                raise ScenarioError(f"{where}.args: {exc} (mechanism {step['mechanism']!r})") from None
            except (ShufflesimError, ValueError, OverflowError) as exc:
                raise ScenarioError(f"{where}.args: {exc}") from None
            if step["method"] != "best":
                from shufflesim.accounting.model.queries import check_method_applies

                try:  # what account() refuses before computing (the run's refusal, the same line)
                    mech.check_method(step["method"])
                except ShufflesimError as exc:
                    raise ScenarioError(f"{where}.method: {exc}") from None
                for c in as_list(step["compositions"]):
                    try:
                        check_method_applies(mech, step["method"], c)
                    except ShufflesimError as exc:
                        raise ScenarioError(f"{where}.args: {exc}") from None
    _label_fields(where, step["label"], set(step["args"]) | {"compositions", "method"})


def _check_training(where: str, step: dict) -> None:
    from dataclasses import fields

    from shufflesim.errors import ShufflesimError
    from shufflesim.federated.training import ALL_PROTOCOLS, FLSettings, validate_settings

    known = [f.name for f in fields(FLSettings) if f.name not in ("protocol", "dataset", "rounds", "seed")]
    for key in step["settings"]:
        if key not in known:
            raise ScenarioError(f"{where}.settings.{key}: unknown setting (allowed: {', '.join(known)})")
    axes = training_axes(step)
    for key in axes:
        if key in step["settings"]:
            raise ScenarioError(f"{where}.settings.{key}: given as the step's own key {key}; give it once")
    if step["x"] == "poisoned" and "poisoned" not in axes:
        raise ScenarioError(f"{where}.x: 'poisoned' needs the step's poisoned = [fractions]")
    for i, proto in enumerate(as_list(step["protocol"])):
        if proto not in ALL_PROTOCOLS:
            raise ScenarioError(f"{where}.protocol: {proto!r} is not allowed (allowed: {', '.join(ALL_PROTOCOLS)})")
        for point in [{}] + (training_points(axes) if axes else []):  # the settings alone, then each point
            try:
                validate_settings(FLSettings(protocol=proto, dataset=step["dataset"], rounds=step["rounds"],
                                     **step["settings"], **point))
            except (TypeError, ValueError, ShufflesimError) as exc:
                at = "settings" if not point else ", ".join(f"{k} = {v!r}" for k, v in point.items())
                raise ScenarioError(f"{where} ({at}): {exc}" if point else f"{where}.settings: {exc}") from None
    _label_fields(where, step["label"], {"protocol"} | set(step["settings"]) | set(axes))


#: a [[training]] step's own keys that are FLSettings fields (a list value is an axis of the grid)
TRAINING_AXES = ("poisoned", "poison_strategy", "range_check")


def training_axes(step: dict) -> dict[str, list]:
    """The step's poisoning keys that are given, each as a list of values."""
    return {k: as_list(step[k]) for k in TRAINING_AXES if step.get(k) is not None}


def training_points(axes: dict[str, list]) -> list[dict]:
    """Every combination of the axes' values (one empty point when there are none)."""
    import itertools

    return [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]


def _check_defence(where: str, step: dict, quick: bool) -> None:
    """A [[defence]] step: every protocol is constructible at n with the step's params, and every fraction F of
    this mode passes what the run's calibration checks first (:func:`~shufflesim.validation.dishonest.check_tolerance`,
    the one function both call; nothing calibrated yet)."""
    from shufflesim.errors import ShufflesimError
    from shufflesim.pipeline import registry
    from shufflesim.validation.dishonest import check_tolerance

    _label_fields(where, step["label"], {"protocol"})
    for name in as_list(step["protocol"]):
        try:
            proto = registry.create(name, step["n"], **step["params"])
        except (ShufflesimError, TypeError, ValueError) as e:
            raise ScenarioError(f"{where}.params: {name}: {e}") from None
        for f in defence_fractions(step, quick):
            try:
                check_tolerance(proto, f)
            except ShufflesimError as e:
                raise ScenarioError(f"{where}.tolerate: {name}: {e}") from None


def _check_claims(ids: list[str]) -> None:
    from shufflesim.validation import claims as registry

    papers = sorted({i.split("/")[0] for i in ids})
    try:
        known = {f"{c.paper}/{c.id}" for c in registry.load(papers=papers)}
    except registry.ClaimsError as exc:
        raise ScenarioError(f"claims: {exc}") from None
    for j, i in enumerate(ids):
        if i not in known:
            raise ScenarioError(f"claims[{j}]: unknown claim {i!r} (known for {', '.join(papers)}: "
                                f"{', '.join(sorted(known))})")


def check_runnable(sc: dict, quick: bool) -> None:
    """Everything about a validated scenario that can be checked without running it: protocols, mechanisms,
    methods, parameter names and values, data specs and files, label templates, table rows, training
    settings and claim ids.  Raises :class:`ScenarioError` (the message starts with the file and names the key
    path); ``run --check`` and the start of every run call it, before anything is written.  A scenario checked
    once for a mode is not checked again (``sc["_checked"]``)."""
    if sc.get("_checked") == ("quick" if quick else "full"):
        return
    try:
        for section in ("sweep", "cells"):
            for i, s in enumerate(sc[section]):
                _check_protocol_step(f"{section}[{i}]", s, sc, section, quick)
        for i, s in enumerate(sc["curve"]):
            _check_curve(f"curve[{i}]", s, quick)
        for i, s in enumerate(sc["table"]):
            from shufflesim.studies.balle2020 import ROW_KEYS

            for key in ("rows", "quick_rows"):
                for r in as_list(s[key]) if s[key] is not None else []:
                    if r not in ROW_KEYS:
                        raise ScenarioError(f"table[{i}].{key}: {r!r} is not allowed (allowed: {', '.join(ROW_KEYS)})")
        for i, s in enumerate(sc["training"]):
            _check_training(f"training[{i}]", s)
        for i, s in enumerate(sc["defence"]):
            _check_defence(f"defence[{i}]", s, quick)
        if sc["claims"]:
            _check_claims(sc["claims"])
        kinds: dict[str, set] = {}  # one figure draws one kind of step
        for section in ("sweep", "curve", "training", "cells", "defence"):
            for s in sc[section]:
                kinds.setdefault(s["figure"] or s["name"], set()).add(section)
        for fig, ks in kinds.items():
            if len(ks) > 1:
                raise ScenarioError(f"figure {fig!r} mixes step kinds ({', '.join(sorted(ks))}); give the steps "
                                    "different figures")
    except ScenarioError as exc:
        raise ScenarioError(f"{sc['_path']}: {exc}") from None
    sc["_checked"] = "quick" if quick else "full"
