"""Fuzz suite (issue 8): every valid question answered, every invalid one refused in one line.

Argument vectors are generated from the CLI's own parsers (every subcommand, protocol and mechanism, so a
new one is fuzzed without touching this file), with values drawn from valid, boundary (0, 1, tiny, huge,
±inf, NaN, empty, 2^63) and wrong-typed pools.  Each call runs in-process (``shufflesim.cli.main.main``)
under a per-call timeout and must either exit 0 with one JSON object whose numbers are finite, or exit 2
with one ``error:`` line — never a traceback, never a hang.  The public Python API gets the same treatment:
only :class:`~shufflesim.errors.ShufflesimError` subclasses for bad input.

The fast profile (default suite) is derandomised with few examples and small sizes; ``--run-slow`` runs the
long profile (more examples, any subcommand with valid values).

Issue 29 adds a systematic walk (second half of this file): every (command, flag) x edge value, one flag edged at a
time on a valid base call, each call in a fresh empty working directory and checked for files written outside its
output.  ``test_walk_sample`` (default suite) runs a stratified, fixed sample of it; ``test_walk_full`` (slow) runs
all of it.  ``python tests/test_fuzz.py`` prints the sizes of both.

"One line" (every contract here): a refusal is exit code 2 with exactly one ``error: ...`` line, the last line on
stderr; lines before it may only be ``warning: ...`` (a plug-in that failed to load) or ``note: ...`` (what a
valid run prints before it starts); never a traceback.
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
    import sys

    capsys.readouterr()
    # the interpreter's own stderr escapes what it cannot encode (a non-UTF-8 argument echoed in an error line);
    # its stdout does not: the captured streams are made to behave the same
    if hasattr(sys.stderr, "reconfigure"):
        sys.stderr.reconfigure(errors="backslashreplace")
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
    assert all(ln.startswith(("warning: ", "note: ")) for ln in lines[:-1]), (argv, "not one line", out.err[-500:])


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


# --- the systematic walk over the whole command line (issue 29, item 6) ----------------------------------------
#
# Every runnable command (subcommand, protocol or mechanism, plug-in protocols included) has one valid BASE call
# that answers quickly.  A case edges ONE flag (or positional) of that call with ONE value of a value class (the
# issue's edge numbers, data specifications, matrix files, output paths, huge and non-UTF-8 strings) and keeps the
# rest valid, so each refusal is reached past the checks that come first.  The walk is the cross product, so its
# size is known (``walk()``); the default suite runs a deterministic stratified sample of it (``sample()``: every
# command and every value class at least once), ``--run-slow`` the whole walk.
#
# Contract of a case (``check_walk_case``), on top of ``check_cli``'s (exit 0 or 2, one ``error:`` line last on
# stderr, no traceback): it runs with cwd = a fresh empty directory; afterwards no file exists or changed outside the
# folders/files the call names as its output (--output, --out, --plot, --records-out), nothing in the repository
# root changed; and it answers or refuses within WALK_TIMEOUT seconds (a call that would run long must refuse).
import itertools  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: per-call bound of the walk: generous (a base call answers in well under a second), so only a run that would go
#: on for minutes — which must refuse with its estimate instead (issue 29 §2) — hits it
WALK_TIMEOUT = 30
HUGE = "9" * 2**20  # a 1 MB argument
NON_UTF8 = b"\xff\xfe1".decode("utf-8", "surrogateescape")  # what Python makes of non-UTF-8 argv bytes
DIGITS400 = "1" + "0" * 399
#: value class -> values, for any flag that takes a value (numbers, names, choices alike)
EDGE_VALUES = {
    "zero": ["0"], "negative": ["-1"], "nan": ["nan"], "inf": ["inf", "-inf"], "subnormal": ["1e-320", "5e-324"],
    "huge-number": ["1e308", "1e400"], "2^63": ["9223372036854775808", "-9223372036854775809"],
    "400-digit": [DIGITS400], "empty": [""], "huge-string": [HUGE], "non-utf8": [NON_UTF8], "text": ["abc"],
}
#: --data: counts that are huge, wrap int64, have 400 digits, overflow a double; distributions at the edges; CSVs
EDGE_DATA = {"data-spec": [
    "counts:1e19,1,1", "counts:5000000000000000000,5000000000000000000",
    "counts:5000000000000000000,5000000000000000000,1", f"counts:{DIGITS400},1", f"counts:{DIGITS400},1,1",
    "counts:18446744073709551617,1", "counts:1e400,1", "counts:1e999999999,1", "counts:-1,2", "counts:nan,1",
    "counts:0,0", "counts:", "counts:1,,1", "zipf:1e-320", "zipf:1e308", "zipf:nan", "normal:1e308,1e308",
    "beta:1e-320,1e-320", "constant:1e308", "@data_1e400.csv:x", "@data_nonutf8.csv:x", "@data_ragged.csv:x",
    "@data_huge_header.csv:x", "counts:" + ",".join(["1"] * 100000)]}
#: --matrix: files written into the inputs folder (``write_inputs``)
MATRIX_FILES = {
    "m_1e400.csv": "1e400,0.5\n0.5,0.5\n",
    "m_bigexp.csv": "1e999999999,0.5\n0.5,0.5\n",
    "m_400digit.csv": f"{DIGITS400},1\n1,1\n",
    "m_identity.csv": "1,0\n0,1\n",
    "m_3x2_equal_rows.csv": "0.6,0.4\n0.6,0.4\n0.4,0.6\n",
    "m_ragged.csv": "0.5,0.5\n1\n",
    "m_nonutf8.csv": b"\xff\xfe0.5,0.5\n0.5,0.5\n",
    "m_huge_header.csv": "x" * 2**21 + "\n0.5,0.5\n0.5,0.5\n",
    "m_empty.csv": "",
    "m_subnormal.csv": "1e-320,1\n1,1e-320\n",
    "m_nan.csv": "nan,0.5\n0.5,0.5\n",
    "m_1000x1000.csv": None,  # valid, large (written by write_inputs)
}
EDGE_MATRIX = {"matrix-file": [f"@{name}" for name in MATRIX_FILES] + ["@missing.csv", "@."]}
#: output flags: relative paths that leave the call's folder, are not paths, or hold a planted symlink
OUTPUT_FLAGS = ("output", "out", "plot", "records-out")
EDGE_PATHS = {"output-path": ["", ".", "..", "out/../..", "x" * 300, "/dev/null", "@planted", "out/" + NON_UTF8]}
PLANTED = ("scenario.toml", "results", "parts", "report.md", "summary.csv", "sweep.json", "records.json")


def write_inputs(where: Path) -> Path:
    """The input files the values refer to as ``@NAME`` (matrices, data CSVs), written once."""
    where.mkdir(parents=True, exist_ok=True)
    for name, text in MATRIX_FILES.items():
        if text is None:
            k = 1000
            row = lambda i: ",".join("2/1001" if j == i else "1/1001" for j in range(k))  # noqa: E731
            text = "\n".join(row(i) for i in range(k)) + "\n"
        (where / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    (where / "data_1e400.csv").write_text("x\n1e400\n1\n")
    (where / "data_nonutf8.csv").write_bytes(b"x\n\xff\xfe\n1\n")
    (where / "data_ragged.csv").write_text("x,y\n1\n2,3,4\n")
    (where / "data_huge_header.csv").write_text("x" * 2**21 + "\n1\n")
    (where / "ok.toml").write_text("matrix = [[0.75, 0.25], [0.25, 0.75]]\n")
    (where / "tiny.toml").write_text(
        'title = "t"\npaper = "none"\nreproduces = "none"\nseed = 1\n'
        '[[sweep]]\nname = "s"\nprotocol = "krr"\nn = [40]\nparams = { k = 3, eps0 = 1.0 }\ntrials = 2\n'
        'quick_trials = 2\n')
    return where


#: valid options of each protocol (simulate / validate / audit share them; audit's question is --eps)
PROTOCOL_BASE = {
    "blanket-sum": ["--eps", "1"], "central-dlap-sum": ["--eps", "1"], "central-laplace-sum": ["--eps", "1"],
    "central-gaussian-hist": ["--k", "3", "--eps", "1", "--delta", "1e-3"],
    "central-laplace-hist": ["--k", "3", "--eps", "1"], "cheu-sum": ["--eps", "1", "--delta", "1e-3"],
    "flame-double": ["--eps-l", "1"], "flame-simple": ["--eps-l", "1"], "flame-topk": ["--eps-l", "1"], "ikos-sum": ["--eps", "1", "--delta", "1e-3"],
    "krr": ["--k", "3", "--eps0", "1"], "local-laplace-sum": ["--eps", "1"], "local-rr-sum": ["--eps", "1"],
    "matrix-rr": ["--matrix", "@ok.toml"], "recursive-sum": ["--eps", "1"],
    "subset-selection": ["--k", "4", "--d", "2", "--eps0", "1"],
}
MECHANISM_BASE = {
    "biswas": ["--n", "20", "--k", "3", "--eps0", "1", "--n-x0", "2"], "central-dlap": ["--eps0", "1"],
    "central-gaussian": ["--sigma", "2"], "central-laplace": ["--eps0", "1"], "cheu": ["--n", "20", "--messages", "2", "--gamma", "0.5"],
    "clones": ["--n", "20", "--eps0", "1"], "ikos": ["--eps0", "1", "--p", "5", "--sigma", "2"],
    "krr": ["--n", "20", "--k", "3", "--eps0", "1", "--adversary", "strong"], "matrix": ["--n", "20", "--matrix", "@ok.toml"],
    "rr2": ["--n", "20", "--eps0", "1"],
}


def base_call(path: list[str]) -> list[str]:
    """A valid call of the command at ``path`` that answers in well under a second."""
    head, rest = path[0], path[1:]
    if head == "simulate":
        return [*path, *PROTOCOL_BASE[rest[0]], "--n", "40", "--trials", "2", "--json"]
    if head == "validate":
        return [*path, *PROTOCOL_BASE[rest[0]], "--n", "40", "--trials", "3", "--json"]
    if head == "audit":
        proto = [a for a in PROTOCOL_BASE[rest[0]]]
        proto = ["--protocol-eps" if a == "--eps" else ("--protocol-delta" if a == "--delta" else a) for a in proto]
        return [*path, *proto, "--n", "10", "--eps", "1", "--trials", "20", "--json"]
    if head == "account":
        if rest[0] in MECHANISM_BASE:
            return [*path, *MECHANISM_BASE[rest[0]], "--eps", "1", "--json"]
        return [*path, *PROTOCOL_BASE[rest[0]], "--n", "20", "--eps", "1", "--json"]
    return {
        "demo": ["demo", "--k", "3", "--eps0", "1", "--trials", "2", "--output", "out", "--json"],
        "table": ["table", "balle2020", "--rows", "localdp", "--json"],
        "sweep": ["sweep", "krr", "--set", "k=3", "--set", "eps0=1", "--n", "40", "--trials", "2",
                  "--backend", "serial", "--output", "out", "--json"],
        "fl": ["fl", "--protocol", "np", "--rounds", "1", "--n", "20", "--per-user", "2", "--json"],
        "run": ["run", "@tiny.toml", "--out", "out", "--quick"],
        "claims": [*path, "--id", "s8-recursive-bounded"] + (["--json"] if rest == ["check"] else []),
    }[head]


def _nodes(parser: argparse.ArgumentParser, path=()):
    """(argv prefix, parser, is_leaf) of every parser of the tree: the leaves (runnable commands) and the
    parents whose own options come before the next name (``validate --max-seconds X krr ...``)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    yield list(path), parser, not subs
    for sp_action in subs[:1]:
        if type(sp_action.choices) is not dict:  # a container that builds a sub-parser when named (account PROTOCOL)
            from shufflesim.pipeline import registry

            for name in registry.names():
                name in sp_action.choices  # noqa: B015 - the lookup builds it
        for name, sp in list(sp_action.choices.items()):
            yield from _nodes(sp, (*path, name))


def _value_classes(action, name: str) -> dict[str, list[str]]:
    if name == "data":  # the data specs also with --engine fast where there is an engine (the counts' own path)
        has_engine = any(_name(a) == "engine" for a in getattr(action, "walk_siblings", ()))
        return {**EDGE_VALUES, **EDGE_DATA, **({"data-spec-fast": EDGE_DATA["data-spec"]} if has_engine else {})}
    if name == "matrix":
        return {**EDGE_VALUES, **EDGE_MATRIX}
    if name in OUTPUT_FLAGS or name in ("dir", "records-in", "scenario", "rows", "id", "pair", "set", "method",
                                        "strategy", "n"):
        return {**EDGE_VALUES, **(EDGE_PATHS if name in OUTPUT_FLAGS else {})}
    return EDGE_VALUES


def _edge(argv: list[str], action, value: str | None, prefix_len: int) -> list[str]:
    """``argv`` with ``action`` given ``value`` (its value replaced where the base gives it; appended otherwise;
    a positional's value replaced in place; ``None``: the flag without a value, for switches)."""
    if not action.option_strings:  # positional: the first word after the prefix that is not an option value
        out = list(argv)
        i = prefix_len
        out[i] = value
        return out
    flag = action.option_strings[-1]
    out = list(argv)
    if flag in out:
        i = out.index(flag)
        if value is None:
            return out
        n_old = 1
        while i + n_old < len(out) and not (out[i + n_old].startswith("--") and len(out[i + n_old]) > 2):
            n_old += 1
        return out[:i + 1] + [value] + out[i + n_old:]
    return out + ([flag] if value is None else [flag, value])


#: options never walked: --help/--version exit through SystemExit by design; the documented long runs (a
#: cluster address, the slow claims, a full table, "run it even though it is long") are asked for explicitly
WALK_SKIP = ("help", "version", "scheduler", "slow", "full", "yes")


def walk(parser: argparse.ArgumentParser | None = None) -> list[tuple[str, ...]]:
    """Every case of the walk: (command, flag, value class, value index), in a fixed order.  The command is the
    space-joined argv prefix; the flag is the option string or the positional's dest."""
    parser = parser or build_parser("*")
    cases = []
    for path, p, leaf in _nodes(parser):
        if not path or (path == ["claims"]):
            continue
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            a.walk_siblings = p._actions
            name = _name(a)
            if name in WALK_SKIP:
                continue
            if not leaf and not a.option_strings:
                continue
            flag = a.option_strings[-1] if a.option_strings else a.dest
            if a.nargs == 0:
                cases.append((" ".join(path), flag, "switch", 0))
                continue
            for cls, values in _value_classes(a, name).items():
                cases.extend((" ".join(path), flag, cls, i) for i in range(len(values)))
    return cases


def _child_base(path: list[str], parser) -> list[str]:
    """For a parent's option: the parent's prefix, then a base call of its first runnable child (krr when it has one)."""
    sub = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0]
    child = "krr" if "krr" in sub.choices else next(iter(sub.choices))
    return base_call([*path, child])


def case_argv(case: tuple, parser, inputs: Path) -> list[str]:
    """The argv of one case (``@NAME`` values refer to the inputs folder; ``@planted`` stays for check_walk_case)."""
    command, flag, cls, i = case
    path = command.split()
    if getattr(parser, "walk_nodes", None) is None:
        parser.walk_nodes = {" ".join(pth): (p, leaf) for pth, p, leaf in _nodes(parser)}
    p, leaf = parser.walk_nodes[command]
    action = next(a for a in p._actions if (a.option_strings[-1] if a.option_strings else a.dest) == flag)
    if cls == "switch":
        value = None
    else:
        value = _value_classes(action, _name(action))[cls][i]
    if leaf:
        argv = _edge(base_call(path), action, value, len(path))
        if cls.endswith("-fast"):
            argv = _edge(argv, next(a for a in p._actions if _name(a) == "engine"), "fast", len(path))
    else:  # the parent's option goes between the parent's prefix and the child's name
        child = _child_base(path, p)
        argv = child[:len(path)] + ([flag] if value is None else [flag, value]) + child[len(path):]
    return [str(inputs / a[1:]) if a.startswith("@") and a != "@planted" else a for a in argv]


def _tree(root: Path) -> dict:
    """Every file and symlink under ``root`` (not following links) with its size and modification time."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st_ = p.lstat()
            if p.is_symlink() or not p.is_dir():
                out[str(p.relative_to(root))] = (st_.st_size, st_.st_mtime_ns)
    return out


def _root_listing() -> dict:
    """The repository root's entries, with the modification time of its files (a folder's own time changes when
    Python caches bytecode inside it, so only its presence counts)."""
    return {p.name: None if p.is_dir() else p.lstat().st_mtime_ns for p in ROOT.iterdir()}


def _plant(sandbox: Path, cwd: Path) -> None:
    """An existing output folder ``cwd/planted`` whose usual entries are symlinks to files and folders outside it."""
    victims = sandbox / "victims"
    victims.mkdir()
    planted = cwd / "planted"
    planted.mkdir()
    for name in PLANTED:
        target = victims / name
        if "." in name:
            target.write_text("victim\n")
        else:
            target.mkdir()
        (planted / name).symlink_to(target)


def _outputs(argv: list[str], cwd: Path) -> list[Path]:
    """Where the call may write: the values of its output flags, resolved from cwd (lexically: '..' counts)."""
    outs = []
    for i, a in enumerate(argv[:-1]):
        if a.lstrip("-") in OUTPUT_FLAGS and a.startswith("--"):
            outs.append(Path(os.path.normpath(cwd / argv[i + 1])))
    if argv[0] == "run" and "--out" not in argv:
        outs.append(cwd / "run-tiny")  # run's documented default
    if argv[0] == "demo" and "--output" not in argv:
        outs.append(cwd / "shufflesim-demo")  # demo's documented default
    return outs


def check_walk_case(argv: list[str], capsys, base: Path, seconds: int = WALK_TIMEOUT) -> None:
    """One case of the walk (contract in the comment above WALK_TIMEOUT)."""
    import uuid

    sandbox = base / f"case-{uuid.uuid4().hex[:12]}"
    cwd = sandbox / "work"
    cwd.mkdir(parents=True)
    if "@planted" in argv:
        _plant(sandbox, cwd)
        argv = [("planted" if a == "@planted" else a) for a in argv]
        argv += [] if "--overwrite" in argv or not any(a == "--output" for a in argv) else ["--overwrite"]
    before, root_before = _tree(sandbox), _root_listing()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        check_cli(argv, capsys, seconds)
    finally:
        os.chdir(old)
    after = _tree(sandbox)
    allowed = _outputs(argv, cwd)
    changed = sorted(p for p in after if before.get(p) != after[p])

    def inside(rel: str) -> bool:  # in an output folder, or the output file (a suffix may be added: x -> x.png)
        p = Path(os.path.normpath(sandbox / rel))
        return any(p == o or o in p.parents or (p.parent == o.parent and p.name.startswith(o.name + "."))
                   for o in allowed)

    outside = [p for p in changed if not inside(p)]
    assert not outside, (argv, "written outside the output", outside)
    assert not set(before) - set(after), (argv, "removed", sorted(set(before) - set(after)))
    assert _root_listing() == root_before, (argv, "the repository root changed")


@contextmanager
def guide_plugin():
    """docs/plugins.md's plug-in (``subset-selection``, options --k --d --eps0) registered through a fake entry
    point, as tests/test_plugins.py installs it (its helpers are loaded from that file, not copied), so that the
    walk reaches a plug-in's options in every command that takes a protocol; the registry is restored after."""
    import importlib.util
    import sys
    import tempfile

    from shufflesim.pipeline import registry

    spec = importlib.util.spec_from_file_location("shufflesim_test_plugins", ROOT / "tests" / "test_plugins.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    where = Path(tempfile.mkdtemp(prefix="shufflesim-fuzz-plugin-"))
    helpers.write_files(where)
    registry.names()
    saved = dict(registry._REGISTRY), registry._discovered, list(registry._PROBLEMS), registry.entry_points
    eps = [helpers.FakeEntryPoint("subset-selection", "subset_selection", "shufflesim-subset-selection")]
    sys.path.insert(0, str(where / "my-plugin"))
    registry.entry_points = lambda group: list(eps) if group == "shufflesim.protocols" else []
    registry._discovered = False
    registry._PROBLEMS.clear()
    mods = set(sys.modules)
    try:
        assert "subset-selection" in registry.names(), registry.problems()
        yield
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved[0])
        registry._discovered, registry._PROBLEMS[:], registry.entry_points = saved[1], saved[2], saved[3]
        sys.path.remove(str(where / "my-plugin"))
        for m in set(sys.modules) - mods:
            if m.startswith("subset_selection"):
                del sys.modules[m]


with guide_plugin():
    WALK_PARSER = build_parser("*")
    WALK = walk(WALK_PARSER)
WALK_COMMANDS = sorted({c[0] for c in WALK})
#: a flag's value class in the default sample; the seed fixes the sample (the walk's order is the parsers')
SAMPLE_SEED = 29


def sample(cases=None, seed: int = SAMPLE_SEED) -> list[tuple]:
    """The default suite's part of the walk, deterministic and stratified: one case of every (subcommand, value
    class) pair, one of every command (each protocol, mechanism and plug-in of each subcommand), one of every
    flag of each subcommand, every data specification and matrix file of the pools (in simulate, where they are
    read for a run), and every output path in each subcommand that writes."""
    cases = WALK if cases is None else cases
    rng = random.Random(seed)
    strata: dict[tuple, list] = {}
    for c in cases:
        head = c[0].split()[0]
        strata.setdefault(("class", head, c[2]), []).append(c)
        strata.setdefault(("command", c[0]), []).append(c)
        strata.setdefault(("flag", head, c[1]), []).append(c)
        if c[2] in ("data-spec", "data-spec-fast", "matrix-file") and head == "simulate":
            strata.setdefault(("value", c[2], c[3]), []).append(c)
        if c[2] == "output-path":
            strata.setdefault(("value", head, c[2], c[3]), []).append(c)
    chosen = {rng.choice(group) for _, group in sorted(strata.items())}
    return sorted(chosen, key=WALK.index)


WALK_SAMPLE = sample()


@pytest.fixture(scope="module")
def walk_env(tmp_path_factory):
    """The plug-in installed and the input files written, for the cases of this module."""
    inputs = write_inputs(tmp_path_factory.mktemp("fuzz-inputs"))
    with guide_plugin():
        yield inputs, tmp_path_factory.mktemp("fuzz-cases")


def test_walk_bases_answer(walk_env, capsys):
    """Each command's base call answers (exit 0), so a case's refusal is its edged value's."""
    inputs, base = walk_env
    for command in WALK_COMMANDS:
        path = command.split()
        nodes = {" ".join(p): leaf for p, _, leaf in _nodes(WALK_PARSER)}
        if not nodes[command]:
            continue
        argv = [str(inputs / a[1:]) if a.startswith("@") else a for a in base_call(path)]
        capsys.readouterr()
        old = os.getcwd()
        os.chdir(base.joinpath(f"base-{command.replace(' ', '-')}").mkdir() or base / f"base-{command.replace(' ', '-')}")
        try:
            with time_limit(WALK_TIMEOUT):
                code = main(argv)
        finally:
            os.chdir(old)
        assert code == 0, (argv, capsys.readouterr().err[-500:])


def _case_id(c) -> str:
    return f"{c[0]}|{c[1]}|{c[2]}{c[3]}".replace(" ", "_")


@pytest.mark.parametrize("case", WALK_SAMPLE, ids=_case_id)
def test_walk_sample(case, walk_env, capsys):
    inputs, base = walk_env
    check_walk_case(case_argv(case, WALK_PARSER, inputs), capsys, base)


@pytest.mark.slow
@pytest.mark.parametrize("command", WALK_COMMANDS)
def test_walk_full(command, walk_env, capsys):
    """The whole walk, one test per command; every failing case of the command is listed."""
    inputs, base = walk_env
    failures = []
    for case in (c for c in WALK if c[0] == command):
        argv = case_argv(case, WALK_PARSER, inputs)
        try:
            check_walk_case(argv, capsys, base)
        except (AssertionError, pytest.fail.Exception) as exc:
            failures.append(f"{_case_id(case)}: {str(exc)[:400]}")
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures)


if __name__ == "__main__":
    from collections import Counter

    print(f"walk: {len(WALK)} cases over {len(WALK_COMMANDS)} commands; default sample: {len(WALK_SAMPLE)} cases")
    for name, counter in (("walk", Counter(c[0].split()[0] for c in WALK)),
                          ("sample", Counter(c[0].split()[0] for c in WALK_SAMPLE))):
        print(f"{name} by subcommand: " + ", ".join(f"{k} {v}" for k, v in sorted(counter.items())))
    print("sample by value class: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(c[2] for c in WALK_SAMPLE).items())))
