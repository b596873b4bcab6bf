"""Entry point of the ``shufflesim`` command.

Subcommand modules are imported only when their subcommand runs: ``shufflesim account …`` never imports
the Monte-Carlo machinery (pandas, matplotlib), and ``shufflesim --help`` imports no subcommand at all.
The top-level help lists every subcommand from :data:`SUBCOMMANDS` (names and one-line help only).
"""

from __future__ import annotations

import os
import sys

import argparse

from shufflesim.cli._common import Parser
from shufflesim.errors import ShufflesimError

#: subcommand name -> (module that builds its parser and runs it, one-line help for the top-level list)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("shufflesim.cli.simulate", "Monte-Carlo error study of a protocol"),
    "demo": ("shufflesim.cli.demo", "shuffled k-RR on the embedded Adult ages vs the central Gaussian baseline"),
    "account": ("shufflesim.cli.account", "certified privacy (eps, delta) of a shuffled mechanism"),
    "table": ("shufflesim.cli.table", "recompute a published table (balle2020: seed 004 Table 3)"),
    "sweep": ("shufflesim.cli.sweep", "resumable parameter sweep streamed to disk (serial, processes or Dask)"),
    "fl": ("shufflesim.cli.fl", "federated learning in the shuffle model (FLAME) and baselines"),
    "validate": ("shufflesim.cli.validate", "test a protocol's Monte-Carlo MSE against its theory (verdicts)"),
    "audit": ("shufflesim.cli.audit", "empirical privacy audit: certified lower bound on delta(eps) vs the accountant"),
    "run": ("shufflesim.cli.run", "run a scenario file (scenarios/*.toml): results, plots, report vs the paper"),
    "claims": ("shufflesim.cli.claims", "check the seed papers' claims (scenarios/claims/) and generate FINDINGS.md"),
}


#: the top-level help's examples: the first ten minutes (README.md, "The first ten minutes")
EXAMPLES = (
    "shufflesim run scenarios/quickstart.toml --out shufflesim-quickstart   # the main job, about 3 s",
    "shufflesim simulate krr --n 10000 --k 10 --eps0 1 --trials 200",
    "shufflesim account rr2 --n 1000 --eps0 2 --eps 0.5 1",
    "shufflesim run --all --quick --check        # every scenario checked, with its estimated time",
)
#: where the documentation is (the source distribution's README.md and docs/)
DOCS = "README.md (the first ten minutes, then every command); docs/theory.md, docs/validation.md, docs/plugins.md"


def _chosen_command(argv: list[str]) -> str | None:
    """The subcommand named on the command line (the first argument that is not an option), if any."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _check_top_level_options(argv: list[str]) -> None:
    """An option before the subcommand that shufflesim does not know is named as such (argparse would say
    that COMMAND is missing)."""
    from shufflesim.cli._common import UsageError
    from shufflesim.core.checks import did_you_mean

    for arg in argv:
        if arg == "--" or not arg.startswith("-"):
            return
        if arg not in ("-h", "--help", "--version"):
            flag = arg.split("=")[0]
            raise UsageError(f"shufflesim: unknown option {flag!r}; before COMMAND only --help and --version are "
                             f"allowed (commands: {', '.join(SUBCOMMANDS)}){did_you_mean(flag, ('--help', '--version'))}")


class _Version(argparse.Action):
    """``--version``: the version is looked up only when asked for (importlib.metadata is slow to import)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from shufflesim import __version__

        sys.stdout.write(f"shufflesim {__version__}\n")
        parser.exit()


def build_parser(command: str | None = "*") -> Parser:
    """The ``shufflesim`` parser.

    ``command`` names the one subcommand whose full parser is built (its module is imported); the others
    are listed by name and help only.  ``None`` builds none of them fully (enough for ``--help`` and for
    rejecting an unknown command); ``"*"`` (the default) builds every subcommand.
    """
    import importlib

    p = Parser(prog="shufflesim",
               description="Simulation, tight accounting and validation for the shuffle model of DP. The main job: "
                           "shufflesim run scenarios/quickstart.toml (a Monte-Carlo sweep and a certified privacy "
                           "curve, with plots and a report). COMMAND --help shows each command's options and examples.",
               examples=EXAMPLES, docs=DOCS)
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for name, (module, help_text) in SUBCOMMANDS.items():
        if command == "*" or command == name:
            importlib.import_module(module).add_parser(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return p


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


_default_showwarning = None


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A plug-in that failed to load is reported as one ``warning: ...`` line (other warnings as Python shows them)."""
    if category.__name__ == "PluginWarning":
        print(f"warning: {message}", file=sys.stderr)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


def main(argv: list[str] | None = None) -> int:
    import warnings

    global _default_showwarning
    if warnings.showwarning is not _show_warning:
        _default_showwarning, warnings.showwarning = warnings.showwarning, _show_warning
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        _check_top_level_options(argv)
        parser = build_parser(_chosen_command(argv))
        args = parser.parse_args(argv)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a broken pipe surfaces here, inside the handlers below, not at exit
        return code
    except ShufflesimError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: not enough memory for this request; reduce n, k, the number of compositions or the trials",
              file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader stopped reading (e.g. `shufflesim … | head -1`): not an error of ours, exit quietly
        _silence_stdout()
        return 0
    except OSError as exc:
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except (Exception, SystemExit) as exc:
        # plug-in code the registry's guard did not wrap (a callback built at run time): one line naming the
        # plug-in (shufflesim.pipeline.registry.plugin_failure); anything else is a bug of shufflesim's, shown
        registry = sys.modules.get("shufflesim.pipeline.registry")  # not imported: no plug-in ran
        line = registry.plugin_failure(exc) if registry is not None else None
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
