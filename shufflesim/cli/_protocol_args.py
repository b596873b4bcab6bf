"""Protocol sub-parsers shared by ``simulate``, ``validate`` and ``audit``: one sub-command per registered
protocol with its options, and the data-set and trial options of the commands that run a protocol on data."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from shufflesim.cli._common import float_arg, int_arg
from shufflesim.pipeline import registry

#: an option's Python type -> the argparse converter that refuses bad values in one line
CONVERT = {int: int_arg, float: float_arg}


def add_protocol_parsers(p: argparse.ArgumentParser, add_common: Callable[[argparse.ArgumentParser], None],
                         func: Callable, names: list[str] | None = None, shared: tuple[str, ...] = ()) -> None:
    """``shared``: protocol options left out because the command's own flag of that name feeds them."""
    names = names or registry.names()
    psub = p.add_subparsers(dest="protocol", metavar="PROTOCOL", required=True, parser_class=type(p))
    for nm in names:
        cls = registry.get(nm)
        pp = psub.add_parser(nm, help=cls.summary, description=cls.summary, examples=(example(p.prog, nm, cls),),
                             docs="README.md#using-it; docs/plugins.md (protocols of your own)")
        g = pp.add_argument_group(f"{nm} parameters")
        for opt in cls.options:
            if opt.name in shared:
                continue
            kw: dict[str, Any] = {"dest": opt.name, "help": opt.help, "default": None}
            kw["type"] = CONVERT.get(opt.type, opt.type)
            if opt.choices:
                kw["choices"] = opt.choices
            if opt.metavar:
                kw["metavar"] = opt.metavar
            if opt.default is not None:
                kw["help"] += f" (default: {opt.default})"
            g.add_argument(opt.flag, **kw)
        add_common(pp)
        pp.set_defaults(func=func)


#: Monte-Carlo trials in the generated examples of the commands that take --trials
EXAMPLE_TRIALS = {"simulate": 100, "audit": 20000}


def example(prog: str, name: str, cls) -> str:
    """A runnable example of ``prog NAME`` (``shufflesim simulate krr --n 10000 --k 10 --eps0 1 --trials 100``): the
    protocol's own flags from its ``example`` (a plug-in without one runs on its defaults)."""
    command = prog.split()[-1]
    own, _, comment = (cls.example or "").partition("#")
    parts = [prog, name, "--n 10000" if command != "audit" else "--n 100", own.strip()]
    if command in EXAMPLE_TRIALS:
        parts.append(f"--trials {EXAMPLE_TRIALS[command]}")
    if command == "audit":
        parts.append("--eps 1")
    line = " ".join(p for p in parts if p)
    return f"{line}   # {comment.strip()}" if comment.strip() else line


def add_data_options(group: argparse._ArgumentGroup, *, trials: int, data_help: str | None = None) -> None:
    """``--n --data --lower --upper --trials --seed``: the data set a protocol runs on (read by
    :func:`shufflesim.experiments.data.load_data`) and the Monte-Carlo trials with their root seed."""
    group.add_argument("--n", type=int_arg, help="number of users (optional for finite data sets)")
    from shufflesim.experiments.data import spec_forms

    group.add_argument("--data", default="uniform", metavar="SPEC",
                       help=data_help or f"the users' data (default: uniform): {spec_forms()} "
                                         "(README.md#data-specifications)")
    group.add_argument("--lower", type=float_arg, help="lower end for scaling a real CSV column to [0, 1]")
    group.add_argument("--upper", type=float_arg, help="upper end for scaling a real CSV column to [0, 1]")
    group.add_argument("--trials", type=int_arg, default=trials, help=f"Monte-Carlo trials (default: {trials})")
    group.add_argument("--seed", type=int_arg, default=0, help="root seed (default: 0)")


def protocol_params(args: argparse.Namespace) -> dict[str, Any]:
    cls = registry.get(args.protocol)
    return {o.name: getattr(args, o.name) for o in cls.options if getattr(args, o.name, None) is not None}
