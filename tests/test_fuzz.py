"""Fuzz suite (issue 8): every valid question answered, every invalid one refused in one line.

Argument vectors are generated from the CLI's own parsers (every subcommand, protocol and mechanism, so a
new one is fuzzed without touching this file), with values drawn from valid, boundary (0, 1, tiny, huge,
±inf, NaN, empty, 2^63) and wrong-typed pools.  Each call runs in-process (``shufflesim.cli.main.main``)
under a per-call timeout and must either exit 0 with one JSON object whose numbers are finite, or exit 2
with one ``error:`` line — never a traceback, never a hang.  The public Python API gets the same treatment:
only :class:`~shufflesim.errors.ShufflesimError` subclasses for bad input.

The fast profile (default suite) is derandomised with few examples and small sizes; ``--run-slow`` runs the
long profile (more examples, any subcommand with valid values).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import traceback
from contextlib import contextmanager

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from shufflesim.cli.main import build_parser, main  # noqa: E402
from shufflesim.errors import ShufflesimError  # noqa: E402

#: subcommands fuzzed with valid values in the fast profile; the others (studies, federated training,
#: validation, audits, sweeps, any new one) take long when valid, so the fast profile gives them at least
#: one invalid argument and they must refuse quickly (the long profile runs them valid too)
LIGHT = ("simulate", "account")
FAST_TIMEOUT = 30
SLOW_TIMEOUT = 120
#: the long profile's limit for valid calls of the study commands (claims report, table balle2020, …): they
#: legitimately take one or two minutes on an idle 2-core machine, several when it is shared
STUDY_TIMEOUT = 600
#: options that ask for a documented long run (the slow claims, a full table or scenario, a cluster): never
#: drawn, so a valid call can answer within the timeout; scenario runs are always --quick
LONG_BY_DESIGN = ("slow", "full", "yes", "scheduler", "tight")

INT_BOUNDARY = ["0", "1", "2", "3", "-1", "2.5", "1e308", "9223372036854775808", "inf", "nan", "", "abc"]
FLOAT_BOUNDARY = ["0", "1", "0.5", "2", "-1", "1e-320", "5e-324", "1e308", "1000", "inf", "-inf", "nan", "", "abc"]
#: small valid sizes for options that scale the work
SIZES = {"n": ["2", "3", "10", "40"], "trials": ["1", "2", "3"], "compositions": ["1", "2", "3"],
         "messages": ["2", "3"], "rounds": ["1"], "per-user": ["2", "5"], "local-steps": ["1"], "workers": ["1"],
         "k": ["2", "3", "5"], "d": ["2", "3"], "b": ["2", "4"], "n-p": ["1", "2"], "l": ["1", "2"],
         "p": ["2", "5"], "q": ["10007"], "n-x0": ["0", "1", "2"]}
VALID_FLOATS = {"eps": ["0.5", "1", "2"], "eps0": ["0.5", "1", "2"], "delta": ["1e-3", "1e-6"],
                "gamma": ["0.3", "0.9"], "level": ["0.9", "0.95"], "alpha": ["0.05"], "sigma": ["1", "20"],
                "eps-l": ["1", "2"], "nu": ["0.5"], "lr": ["0.1"], "clip": ["1"], "margin": ["0.02"],
                "plant-error": ["0.05"], "target-accuracy": ["0.01"], "leak": ["0.1"], "beta": ["0.5"],
                "l2-clip": ["1"]}
DATA = ["uniform", "zipf:1.1", "constant:0", "counts:3,2,1", "normal:0.5,0.1", "beta:2,2", "adult-age", "bogus",
        "", "counts:1e30,1,1", "/dev/null:c", "zipf:-1", "constant:2"]


class Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds: int):
    def handler(signum, frame):
        raise Timeout(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _leaves(parser: argparse.ArgumentParser, path=()):
    """(argv prefix, leaf parser) for every runnable command."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield list(path), parser
        return
    for name, sp in subs[0].choices.items():
        yield from _leaves(sp, (*path, name))


LEAVES = list(_leaves(build_parser("*")))
LIGHT_LEAVES = [leaf for leaf in LEAVES if leaf[0][0] in LIGHT]


def _name(action) -> str:
    return action.option_strings[-1].lstrip("-") if action.option_strings else action.dest


def _value(draw, action, name: str, valid: bool, tmp: str) -> list[str]:
    tname = getattr(action.type, "__name__", "")
    if action.choices:
        pool = list(action.choices) if valid else list(action.choices) + ["bogus", ""]
    elif name in ("output", "dir", "plot"):
        pool = [f"{tmp}/out-{draw(st.integers(0, 10**9))}"] + ([] if valid else ["", "/dev/null"])
    elif name == "data":
        pool = DATA[:7] if valid else DATA
    elif tname == "int_arg":
        pool = SIZES.get(name, ["1", "2", "3"]) + ([] if valid else INT_BOUNDARY)
    elif tname == "float_arg":
        pool = VALID_FLOATS.get(name, ["0.5", "1"]) + ([] if valid else FLOAT_BOUNDARY)
    elif tname in ("int_list", "float_list"):
        pool = ["2,3", "0.5,0.5"] + ([] if valid else ["", "a,b", "-1,2", "inf,1"])
    else:
        pool = ["1", "x"] + ([] if valid else ["", "abc"])
    if action.nargs == "+":
        return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    if isinstance(action.nargs, int):
        return [draw(st.sampled_from(pool)) for _ in range(action.nargs)]
    return [draw(st.sampled_from(pool))]


@st.composite
def argv_strategy(draw, heavy_invalid: bool, tmp: str = "/tmp/shufflesim-fuzz"):
    path, parser = draw(st.sampled_from(LIGHT_LEAVES) if draw(st.integers(0, 3)) else st.sampled_from(LEAVES))
    heavy = path[0] not in LIGHT
    valid = draw(st.booleans()) and not (heavy and heavy_invalid)
    argv = list(path)
    actions = [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]
    # one member of each mutually exclusive group (always one of a required group); invalid mode may give more
    chosen = set()
    for g in parser._mutually_exclusive_groups:
        members = list(g._group_actions)
        if g.required or draw(st.booleans()):
            chosen.add(id(draw(st.sampled_from(members))))
        if not valid:
            chosen |= {id(a) for a in members if draw(st.integers(0, 5)) == 0}
    grouped = {id(a) for g in parser._mutually_exclusive_groups for a in g._group_actions}
    for a in actions:
        name = _name(a)
        if not a.option_strings:  # positional
            argv += _value(draw, a, name, valid, tmp)
            continue
        if name in ("overwrite", "json", "help") or (valid and name in ("lower", "upper", "output", "workers")):
            continue
        if name in LONG_BY_DESIGN and (path[0] != "simulate" or name != "tight"):
            continue
        if id(a) in grouped:
            if id(a) not in chosen:
                continue
        else:
            force = a.required or (name in ("n", "trials") and path[0] in ("simulate", "validate", "audit"))
            force = force or (valid and name in ("eps", "k", "eps-l") and draw(st.integers(0, 3)) > 0)
            if not force and not draw(st.booleans()):
                continue
        if a.nargs == 0:
            argv.append(a.option_strings[-1])
            continue
        argv += [a.option_strings[-1], *_value(draw, a, name, valid, tmp)]
    if path[0] == "run" and "--quick" not in argv:
        argv.append("--quick")
    if heavy and heavy_invalid:
        argv += ["--bogus-option-for-a-quick-refusal"]
    if any(a.option_strings == ["--json"] for a in actions):
        argv.append("--json")
    return argv


def _finite(obj) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(_finite(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_finite(v) for v in obj)
    return True


def _reject_constant(name):
    raise ValueError(f"non-finite JSON number {name}")


def check_cli(argv: list[str], capsys, seconds: int) -> None:
    """The contract of every CLI call (module docstring)."""
    capsys.readouterr()
    try:
        with time_limit(seconds):
            code = main(argv)
    except Timeout as exc:
        pytest.fail(f"hang: {argv!r}: {exc}")
    except BaseException:  # noqa: BLE001 - any escape is a failure, including SystemExit
        pytest.fail(f"exception escaped for {argv!r}:\n{traceback.format_exc()}")
    out = capsys.readouterr()
    assert "Traceback" not in out.err, (argv, out.err)
    if code == 0:
        if "--json" in argv:
            try:
                obj = json.loads(out.out, parse_constant=_reject_constant)
            except ValueError as exc:
                pytest.fail(f"{argv!r}: stdout is not one finite JSON object ({exc}): {out.out[:300]!r}")
            assert isinstance(obj, dict) and _finite(obj), (argv, out.out[:300])
        return
    lines = [ln for ln in out.err.splitlines() if ln.strip()]
    assert code == 2, (argv, code, out.err[-500:])
    assert lines and lines[-1].startswith("error: "), (argv, out.err[-500:])
    assert sum(ln.startswith("error: ") for ln in lines) == 1, (argv, out.err[-500:])


@settings(derandomize=True, max_examples=300, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(argv=argv_strategy(heavy_invalid=True))
def test_cli_fuzz_fast(argv, capsys, tmp_path_factory):
    check_cli([a.replace("/tmp/shufflesim-fuzz", str(tmp_path_factory.getbasetemp())) for a in argv], capsys,
              FAST_TIMEOUT)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(argv=argv_strategy(heavy_invalid=False))
def test_cli_fuzz_long(argv, capsys, tmp_path_factory):
    check_cli([a.replace("/tmp/shufflesim-fuzz", str(tmp_path_factory.getbasetemp())) for a in argv], capsys,
              SLOW_TIMEOUT if argv[0] in LIGHT else STUDY_TIMEOUT)


# --- the Python API ---------------------------------------------------------------------------------------
WRONG = [None, "1", "abc", [], [1.0], {}, object(), True, -1, 0, 0.0, 2.5, 10**30, 2**63, float("inf"),
         float("-inf"), float("nan"), 1e-320, 1e308]
VALID_KW = {"eps": [0.5, 1.0], "eps0": [0.5, 1.0], "delta": [1e-3], "k": [2, 3], "gamma": [0.5], "p": [2, 5],
            "messages": [2, 3], "sigma": [20.0], "q": [10007]}


def _api_call(fn, *args, **kwargs):
    try:
        with time_limit(FAST_TIMEOUT):
            return fn(*args, **kwargs)
    except ShufflesimError:
        return None
    except Timeout as exc:
        pytest.fail(f"hang: {fn.__name__}{args!r} {kwargs!r}: {exc}")
    except Exception:  # noqa: BLE001
        pytest.fail(f"{fn.__name__}{args!r} {kwargs!r} raised a non-ShufflesimError:\n{traceback.format_exc()}")


@st.composite
def protocol_call(draw):
    from shufflesim.pipeline import registry

    name = draw(st.sampled_from(registry.names()))
    cls = registry.get(name)
    kw = {}
    for opt in cls.options:
        if draw(st.booleans()):
            kw[opt.name] = draw(st.sampled_from(VALID_KW.get(opt.name, [1, 2]) + WRONG
                                                + list(opt.choices or ())))
    n = draw(st.sampled_from([2, 3, 10, 40, 0, -1, 2.5, "10", None, 2**63]))
    return name, n, kw


@settings(derandomize=True, max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(call=protocol_call(), trials=st.sampled_from([1, 2, 0, -1, 2.5, "2"]),
       level=st.sampled_from([0.95, 0.5, 2, -1, float("nan"), "x"]))
def test_api_protocols_fuzz(call, trials, level):
    from shufflesim.experiments.data import load_data
    from shufflesim.experiments.montecarlo import run_trials, summarise
    from shufflesim.pipeline import registry

    name, n, kw = call
    proto = _api_call(registry.create, name, n, **kw)
    if proto is None:
        return
    data = _api_call(load_data, "uniform", data_kind=proto.data_kind, n=proto.n, k=proto.domain_size, rng=0)
    if data is None:
        return
    run = _api_call(run_trials, proto, data, trials=trials, rng=1)
    if run is not None and len(run.records):
        s = _api_call(summarise, run.records, proto, data, level=level)
        if s is not None:
            assert s["mse"] is None or s["mse"] >= 0


@st.composite
def mechanism_call(draw):
    from shufflesim.mechanisms import kinds

    kind, cls = draw(st.sampled_from(sorted(kinds().items())))
    flags = {}
    for f in cls.flags:
        pool = {"int": [1, 2, 3, 10, 100], "float": [0.5, 1.0, 2.0, 1000.0],
                "str": list(MATRICES)}.get(f.type, list(f.choices or ()))
        if f.required or draw(st.booleans()):
            flags[f.dest] = draw(st.sampled_from(pool + WRONG))
    which = draw(st.sampled_from(["eps", "delta"]))
    vals = draw(st.sampled_from([[0.5], [1e-6], [0.0, 1.0], [], 1e-320, float("nan"), "x", None, [2**63],
                                 [0.1, 0.5, 1.0, 3.0], [1e-9, 1e-6, 1e-3, 0.1], [2.0, 0.05, 0.6]]))
    method = draw(st.sampled_from([None, "tight", "exact", "balle", "bogus", 3]))
    comp = draw(st.sampled_from([1, 2, 0, -1, 2.5, 2**63]))
    numerics = draw(st.sampled_from([None, {}, {"bogus": 1}, {"target_accuracy": "x"}, "x"]))
    return cls, flags, which, vals, method, comp, numerics


@settings(derandomize=True, max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(call=mechanism_call())
def test_api_account_fuzz(call):
    from shufflesim.accounting.account import account

    cls, flags, which, vals, method, comp, numerics = call
    mech = _api_call(cls.from_flags, **flags)
    if mech is None:
        return
    rep = _api_call(account, mech, **{which: vals}, method=method, compositions=comp, numerics=numerics)
    if rep is not None:
        json.dumps(rep.to_dict(), allow_nan=True)  # serialisable
        check_intervals(rep, (mech, which, vals, method, comp))


#: valid randomiser matrices (issue 22's matrix mechanism takes a file or, from Python, the rows)
MATRICES = ([[0.75, 0.25], [0.25, 0.75]], [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.3, 0.4, 0.3]])


@st.composite
def valid_mechanism_call(draw):
    """A question with valid values only (one flag of each exclusive group, a method the description lists), so
    that (almost) every example is answered and its intervals checked."""
    from shufflesim.mechanisms import kinds

    kind, cls = draw(st.sampled_from(sorted(kinds().items())))
    flags, groups = {}, {}
    for f in cls.flags:
        if f.group is not None:
            groups.setdefault(f.group, []).append(f)
            continue
        pool = {"int": [2, 3, 10, 100], "float": [0.3, 0.5, 1.0, 2.0],
                "str": list(MATRICES)}.get(f.type, list(f.choices or ()))  # "str": the matrix file, given inline
        if f.required or draw(st.booleans()):
            flags[f.dest] = draw(st.sampled_from(pool))
    for members in groups.values():
        f = draw(st.sampled_from(members))
        flags[f.dest] = draw(st.sampled_from({"int": [2, 3, 10], "float": [0.3, 0.5, 1.0]}[f.type]))
    which = draw(st.sampled_from(["eps", "delta"]))
    vals = draw(st.sampled_from([[0.1, 0.5, 1.0, 3.0], [2.0, 0.05, 0.6], [0.0, 0.2]] if which == "eps" else
                                [[1e-9, 1e-6, 1e-3, 0.1], [0.3, 1e-4], [1e-12, 0.5]]))
    method = draw(st.sampled_from([None, *cls.methods]))
    comp = draw(st.sampled_from([1, 1, 2, 3]))
    return cls, flags, which, vals, method, comp, None


@settings(derandomize=True, max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(call=valid_mechanism_call())
def test_api_account_answers_are_intervals(call):
    test_api_account_fuzz.hypothesis.inner_test(call)


def test_interval_check_rejects_broken_answers():
    from shufflesim.accounting.model.results import AccountReport, DeltaBound, EpsBound

    def rep(*results):
        return AccountReport("x", {}, "m", 1, tuple(results), (), 0.0)

    check_intervals(rep(DeltaBound(0.1, 0.5, 0.2, "m"), DeltaBound(0.5, 0.4, None, "m")), "ok")
    check_intervals(rep(EpsBound(1e-3, math.inf, 0.5, "m"), EpsBound(1e-6, math.inf, 0.7, "m")), "ok")
    broken = [(DeltaBound(0.1, 0.5, 0.6, "m"),), (DeltaBound(0.1, float("nan"), None, "m"),),
              (DeltaBound(0.1, 1.5, None, "m"),), (EpsBound(1e-3, -0.1, None, "m"),),
              (DeltaBound(0.1, 0.3, None, "m"), DeltaBound(0.5, 0.4, None, "m")),
              (EpsBound(1e-6, 1.0, 0.5, "m"), EpsBound(1e-3, 1.0, 0.6, "m"))]
    for results in broken:
        with pytest.raises(AssertionError):
            check_intervals(rep(*results), "broken")


def _bad(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def check_intervals(rep, call) -> None:
    """Every answer is an interval (module docstring of shufflesim.accounting.model.results): no NaN anywhere,
    0 <= delta_lower <= delta_upper <= 1 and 0 <= eps_lower <= eps_upper (upper ends may be infinite where the
    notes say so; a lower end may be None), and both ends non-increasing in the question (delta(eps) in eps,
    eps(delta) in delta), as the true delta(eps) and eps(delta) are."""
    answered = [r for r in rep.results if getattr(r, "applicable", True)]
    for r in answered:
        if hasattr(r, "delta_upper"):
            q, lo, hi, name = r.eps, r.delta_lower, r.delta_upper, "delta"
            assert not _bad(hi) and 0.0 <= hi <= 1.0, (call, r)
        else:
            q, lo, hi, name = r.delta, r.eps_lower, r.eps_upper, "eps"
            assert not _bad(hi) and hi >= 0.0, (call, r)
        assert not (isinstance(q, float) and math.isnan(q)), (call, r)
        assert lo is None or (not _bad(lo) and 0.0 <= lo <= hi), (call, name, r)
    by_question = sorted(answered, key=lambda r: r.eps if hasattr(r, "delta_upper") else r.delta)
    for a, b in zip(by_question, by_question[1:]):
        if hasattr(a, "delta_upper"):
            pairs = ((a.delta_upper, b.delta_upper), (a.delta_lower, b.delta_lower))
        else:
            pairs = ((a.eps_upper, b.eps_upper), (a.eps_lower, b.eps_lower))
        for x, y in pairs:
            assert x is None or y is None or y <= x, (call, "not monotone in the question", a, b)


@settings(derandomize=True, max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(spec=st.sampled_from(DATA + [None, 5, b"uniform"]), kind=st.sampled_from(["categorical", "real", "x", None]),
       n=st.sampled_from([None, 1, 10, 0, -1, 2.5, "10", 2**63]), k=st.sampled_from([None, 2, 3, 2.5, "3", 1]),
       lower=st.sampled_from([None, 0.0, -1.0, float("inf"), "a"]), upper=st.sampled_from([None, 1.0, 2.0]))
def test_api_load_data_fuzz(spec, kind, n, k, lower, upper):
    from shufflesim.experiments.data import load_data

    _api_call(load_data, spec, data_kind=kind, n=n, k=k, rng=0, lower=lower, upper=upper)


# --- `run` with generated scenario files (issue 18) ------------------------------------------------------------
#: step names: valid ones and every way of leaving the output directory or hiding a file
NAMES = ["a", "b_1", "x.y", "A-2", "", "../../escape", "../x", "/ABS/x", "a/b", ".hidden", "..", "é", "a b", "x" * 120,
         "claims", "con\x00x", "a\\b"]
LABELS = [None, "{protocol} k={k}", "{data}", "{bogus}", "{}", "{0}", "{", "}", "{k:d}", "{data:d}", "{n}",
          "{relation} {compositions} {method}", "{eps0:.2f}", "{k.real}", "{k[0]}"]
SWEEP_PROTOCOLS = ["krr", "local-rr-sum", "central-laplace-sum", "central-laplace-hist", "nosuch", ""]
PARAM_VALUES = [1, 2, 3, 0.5, 1.0, 2.0, 1e-6, 0, -1, "x", "1/n^2", "", [], [1.0, 2.0], [3, 5], True, 1e308,
                float("inf"), float("nan")]
CURVE_MECHANISMS = ["krr", "rr2", "clones", "central-laplace", "nosuch"]


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else ("-inf" if v == -math.inf else repr(v)))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string (JSON escapes are TOML escapes)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def _table(header: str, keys: dict) -> str:
    return f"[[{header}]]\n" + "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in keys.items() if v is not None)


#: the fields of a generated scenario that may be hostile; one of them (or none) is, in each example, so that the
#: checks after the first one are reached too
HOSTILE = ("seed", "name", "protocol", "param", "bogus", "n", "trials", "label", "figure", "data", "mechanism",
           "arg", "method", "eps", "curve_label", "claims")


def _pick(draw, field: str, hostile_field: str | None, valid: list, hostile: list):
    """A valid value, or a hostile one when ``field`` is this example's hostile field."""
    return draw(st.sampled_from(hostile if field == hostile_field and hostile else valid))


@st.composite
def scenario_strategy(draw, sandbox: str = "/SANDBOX"):
    """A scenario file's bytes: mostly well-formed TOML with generated steps, names, labels, params and data
    (valid and hostile), sometimes not TOML or not UTF-8."""
    from shufflesim.mechanisms import kinds
    from shufflesim.pipeline import registry

    mode = draw(st.integers(0, 29))
    if mode == 29:
        return b'title = "\xff\xfe"\n'
    if mode == 28:
        return draw(st.sampled_from([b"", b"[[sweep]\n", b"title = 1\n", b"seed = -1\n"]))
    bad = draw(st.sampled_from([None, *HOSTILE]))
    head = {"title": "t", "paper": "none", "reproduces": "none", "seed": _pick(draw, "seed", bad, [1, 2, 0], [-1, "x"])}
    if bad == "claims" or draw(st.integers(0, 9)) == 9:
        head["claims"] = _pick(draw, "claims", bad, [["koskela/strong-1d-pair"]],
                               [["nosuch/x"], ["koskela/nosuch"], ["x"], [1]])
    text = "".join(f"{k} = {_toml(v)}\n" for k, v in head.items())
    names = [_pick(draw, "name", bad, [f"s{i}"], NAMES).replace("/ABS", sandbox) for i in range(3)]
    for i in range(draw(st.integers(1, 2)) if draw(st.integers(0, 5)) != 5 else 0):
        proto = _pick(draw, "protocol", bad, SWEEP_PROTOCOLS[:4], SWEEP_PROTOCOLS[4:])
        options = [o.name for o in registry.get(proto).options] if proto in registry.names() else ["k"]
        params = {}
        for key in draw(st.lists(st.sampled_from(options), max_size=3, unique=True)) if bad == "param" else []:
            params[key] = draw(st.sampled_from(PARAM_VALUES))
        if bad == "bogus":
            params[draw(st.sampled_from(["bogus", "epsilon"]))] = 1.0
        if proto in ("krr", "central-laplace-hist") and bad != "param":
            params.update(k=3, eps0=1.0) if proto == "krr" else params.update(k=3, eps=1.0)
        elif proto in ("local-rr-sum", "central-laplace-sum") and bad != "param":
            params.update(eps=1.0)
        text += _table("sweep", {
            "name": names[i], "protocol": proto, "n": _pick(draw, "n", bad, [20, 50, [20, 40]], [0, [], "x"]),
            "params": params, "trials": _pick(draw, "trials", bad, [2, 3], [0]), "quick_trials": 2,
            "label": _pick(draw, "label", bad, LABELS[:3], LABELS[3:]),
            "figure": _pick(draw, "figure", bad, [None, "f", "g"], NAMES[4:]),
            "data": _pick(draw, "data", bad, [None, "uniform", "zipf:1.1", ["uniform", "zipf:1.1"]],
                          ["bogus", "/nonexistent/x.csv:c", "", []]),
        })
    if draw(st.booleans()):
        mech = _pick(draw, "mechanism", bad, CURVE_MECHANISMS[:4], CURVE_MECHANISMS[4:])
        fields = [f.name for f in __import__("dataclasses").fields(kinds()[mech])] if mech in kinds() else ["n"]
        args = {f: draw(st.sampled_from({"n": [20, 40], "k": [2, 3], "relation": ["strong", "weak"],
                                         "eps0": [0.5, 1.0], "gamma": [0.25], "sensitivity": [1.0],
                                         "bins": [1]}.get(f, [1]) + (
                    [-1, "x", []] if bad == "arg" else []))) for f in fields
                if draw(st.integers(0, 4)) != 4}
        if bad == "arg" and draw(st.booleans()):
            args["bogus"] = 1
        text += _table("curve", {"name": names[2], "mechanism": mech, "args": args,
                                 "method": _pick(draw, "method", bad, [None, "tight", "closed-form", "best"], ["bogus"]),
                                 "eps": _pick(draw, "eps", bad, [[0.5, 1.0], 1.0], [[], [-1.0]]),
                                 "label": _pick(draw, "curve_label", bad, [None, "{method}", "{compositions}"],
                                                LABELS)})
    return text.encode("utf-8")


def _files(root) -> dict:
    from pathlib import Path

    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in Path(root).rglob("*") if p.is_file()}


def check_run(data: bytes, capsys, base, seconds: int) -> None:
    """``run FILE --out OUT --quick`` answers (exit 0, every file written is inside OUT) or refuses (exit 2, one
    ``error:`` line, no traceback, nothing written anywhere: OUT is not created)."""
    import os
    import uuid
    from pathlib import Path

    sandbox = Path(base) / f"run-{uuid.uuid4().hex[:10]}"
    cwd = sandbox / "work" / "deep"  # '../..' from OUT lands inside the sandbox, where it is seen
    cwd.mkdir(parents=True)
    data = data.replace(b"/SANDBOX", str(sandbox).encode())
    (cwd / "s.toml").write_bytes(data)
    before = _files(sandbox)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        argv = ["run", "s.toml", "--out", "out", "--quick"]
        check_cli(argv, capsys, seconds)
    finally:
        os.chdir(old)
    after = _files(sandbox)
    new_or_changed = {p for p in after if before.get(p) != after[p]}
    outside = {p for p in new_or_changed if not p.startswith("work/deep/out/")}
    assert not outside, (data, sorted(outside))
    assert not set(before) - set(after), (data, "a file was removed")
    if not (cwd / "out" / "report.md").exists():  # refused or failed: nothing left behind
        assert not (cwd / "out").exists(), (data, sorted(after))


@settings(derandomize=True, max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=scenario_strategy())
def test_run_fuzz_fast(data, capsys, tmp_path_factory):
    check_run(data, capsys, tmp_path_factory.getbasetemp(), FAST_TIMEOUT)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=scenario_strategy())
def test_run_fuzz_long(data, capsys, tmp_path_factory):
    check_run(data, capsys, tmp_path_factory.getbasetemp(), SLOW_TIMEOUT)
