"""Entry point of the ``shufflesim`` command."""

from __future__ import annotations

import sys

from shufflesim import __version__
from shufflesim.errors import ShufflesimError
from shufflesim.cli._common import Parser


def build_parser() -> Parser:
    p = Parser(prog="shufflesim", description="Simulation, tight accounting and validation for the shuffle model of DP.")
    p.add_argument("--version", action="version", version=f"shufflesim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    from shufflesim.cli import demo, simulate

    simulate.add_parser(sub)
    demo.add_parser(sub)
    for name in ("account", "table"):
        try:
            mod = __import__(f"shufflesim.cli.{name}", fromlist=["add_parser"])
        except ModuleNotFoundError:
            continue
        mod.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except ShufflesimError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: not enough memory for this request; reduce n, k, the number of compositions or the trials",
              file=sys.stderr)
        return 2
    except OSError as exc:
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
