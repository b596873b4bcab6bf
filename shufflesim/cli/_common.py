"""Argument-parsing helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, NoReturn

from shufflesim.errors import ParameterError


#: the namespace attribute naming the innermost parser that was left with unknown arguments
_LEFT_WITH_EXTRAS = "_shufflesim_left_with_extras"

_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class UsageError(ParameterError):
    """Bad command-line usage (reported as one ``error:`` line, exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2 (no usage dump).

    Values that look like negative numbers — ``-1``, ``-1e-3``, ``-inf``, ``-nan`` — are values, not options
    (argparse's own rule knows only ``-1`` and ``-.5``), so ``--lower -inf`` reaches the range check.
    """

    def __init__(self, *args, examples: tuple[str, ...] | list[str] = (), docs: str | None = None, **kwargs) -> None:
        """``examples``: command lines shown under "examples:" at the end of ``--help`` (as written, not
        re-wrapped); ``docs``: where the documentation of the command is (shown as "docs: ...")."""
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER
        self.examples = tuple(examples)
        self.docs = docs

    def format_help(self) -> str:
        """argparse's help, then the examples, the papers behind any "seed NNN" the help names
        (:func:`shufflesim.core.papers.seed_key`) and the pointer to the docs, kept as written."""
        from shufflesim.core.papers import seed_key

        text = super().format_help()
        sections = []
        if self.examples:
            sections.append(["examples:", *(f"  {e}" for e in self.examples)])
        key = seed_key(text + "\n".join(self.examples))
        if key:
            sections.append(["papers:", *(f"  {line}" for line in key)])
        if self.docs:
            sections.append([f"docs: {self.docs}"])
        return text + "".join("\n" + "\n".join(lines) + "\n" for lines in sections)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    # --- "did you mean" (one helper, :func:`shufflesim.core.checks.did_you_mean`) ----------------------------
    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's choice check (subcommands, protocols, mechanisms, ``choices=`` options), with the closest
        allowed name suggested (overrides ``argparse.ArgumentParser``'s own hook of this name)."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            from shufflesim.core.checks import did_you_mean

            choices = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{did_you_mean(value, action.choices)} (choose from {choices})"
            ) from None

    def parse_known_args(self, args=None, namespace=None):
        """argparse's own, and the innermost parser that was left with unknown arguments is remembered on the
        namespace, so that :meth:`parse_args` names that parser and suggests one of its own flags."""
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and getattr(namespace, _LEFT_WITH_EXTRAS, None) is None:
            setattr(namespace, _LEFT_WITH_EXTRAS, self)
        return namespace, extras

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        owner = vars(namespace).pop(_LEFT_WITH_EXTRAS, None) or self
        if extras:
            from shufflesim.core.checks import did_you_mean

            first = next((a for a in extras if a.startswith("-")), extras[0])
            flag = first.split("=", 1)[0]
            hint = did_you_mean(flag, owner.option_strings()) if flag.startswith("-") else ""
            owner.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return namespace

    def option_strings(self) -> list[str]:
        """Every option string this parser accepts (``--n``, ``--eps0``, ``-h``, ...)."""
        return [o for a in self._actions for o in a.option_strings]


def int_arg(text: str) -> int:
    """An integer, also written as 1e6 or 1_000_000 (the one bounded parser, :func:`shufflesim.core.checks.parse_int`:
    at most 64 characters, no conversion of a huge token)."""
    from shufflesim.core.checks import parse_int

    try:
        return parse_int("value", text)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(_invalid("integer", text, exc)) from None


def float_arg(text: str) -> float:
    """A real number, read by the one bounded parser (:func:`shufflesim.core.checks.parse_real`; '1e400' is refused
    as beyond double precision, not read as inf); 'inf' and 'nan' pass to the library, which names the parameter."""
    from shufflesim.core.checks import parse_real

    try:
        return parse_real("value", text, finite=False)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(_invalid("number", text, exc)) from None


def _invalid(what: str, text: str, exc: Exception) -> str:
    """'invalid number '1e400': must be a finite number within double precision ...' (a long token shortened)."""
    shown = repr(text) if len(text) <= 40 else repr(text[:20] + "...") + f" ({len(text)} characters)"
    reason = str(exc).split("; got", 1)[0].removeprefix("value ")
    return f"invalid {what} {shown}: {reason}"


def print_json(obj: Any) -> None:
    from shufflesim.core.serialise import jsonable

    json.dump(jsonable(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def add_output_options(group, files: str, default: str | None = None) -> None:
    """``--output DIR`` (the files written into it are named in the help) and ``--overwrite``."""
    where = f" (default: {default})" if default else ""
    group.add_argument("--output", metavar="DIR", default=default,
                       help=f"directory to write {files} into{where}; it must be empty or new unless --overwrite")
    group.add_argument("--overwrite", action="store_true",
                       help="write into a non-empty --output directory, replacing files of the same names")


def open_output(args):
    """The run's locked output directory (an :class:`~shufflesim.experiments.outdir.OutputDir`, not yet
    entered), or ``None`` without ``--output``."""
    if args.output is None:
        return None
    from shufflesim.experiments.outdir import OutputDir

    return OutputDir(args.output, overwrite=args.overwrite)


def available_cpus() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cap_workers(workers: int) -> int:
    """``workers`` capped at the CPUs this process may use, with a one-line warning when capped."""
    cpus = available_cpus()
    if workers > cpus:
        print(f"warning: --workers {workers} is more than the {cpus} available CPU(s); using {cpus}",
              file=sys.stderr)
        return cpus
    return workers
