"""Lazy imports: a subcommand imports only what it needs (issue 7: `shufflesim account` starts fast)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "matplotlib", "pyarrow", "tqdm", "shufflesim.experiments", "shufflesim.cli.demo",
         "shufflesim.cli.simulate", "shufflesim.cli.table", "shufflesim.studies")


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import sys, json\n"
        "from shufflesim.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def test_account_help_imports_no_experiment_machinery():
    mods = _modules_after(["account", "rr2", "--help"])
    assert "shufflesim.cli.account" in mods
    assert not [m for m in HEAVY if m in mods]


def test_top_level_help_imports_no_subcommand():
    mods = _modules_after(["--help"])
    assert not [m for m in mods if m.startswith("shufflesim.cli.") and m not in
                ("shufflesim.cli.main", "shufflesim.cli._common")]
    assert "numpy" not in mods


#: what `shufflesim account` must not import before it computes: each costs 0.2-0.5 s (scipy.stats,
#: scipy.signal and scipy.optimize are imported by the functions that need them, on use)
SLOW_SCIPY = ("scipy.stats", "scipy.signal", "scipy.optimize")


def test_account_help_imports_no_heavy_scipy():
    mods = _modules_after(["account", "rr2", "--help"])
    assert not [m for m in SLOW_SCIPY if m in mods]
    assert "shufflesim.accounting.tight" not in mods  # parsing alone imports no engine


def test_single_use_tight_question_imports_no_heavy_scipy():
    """A typical question (exact single use) runs on numpy and scipy.special alone."""
    mods = _modules_after(["account", "rr2", "--n", "1000", "--eps0", "2", "--eps", "0.5", "--method", "tight", "--json"])
    assert "shufflesim.accounting.tight" in mods
    assert not [m for m in SLOW_SCIPY + HEAVY if m in mods]


@pytest.mark.parametrize("argv", [
    ["account", "clones", "--n", "10000", "--eps0", "4", "--delta", "1e-6"],  # issue 17 item 5's question
    ["account", "rr2", "--n", "1000", "--eps0", "2", "--delta", "1e-6"],  # rr2's exact default
])
def test_single_use_question_imports_no_scipy_at_all(argv):
    """Issue 17 item 5: a single-use question needs numpy alone (scipy.special, scipy.fft and the version
    lookup through importlib.metadata cost ~0.2 s of a 0.3 s process and are imported on use only)."""
    mods = _modules_after(argv)
    assert "shufflesim.accounting.account" in mods  # the question was answered
    assert not [m for m in mods if m == "scipy" or m.startswith("scipy.")]
    assert "importlib.metadata" not in mods


def test_cli_main_imports_no_subcommand_machinery():
    mods = _modules_after([])
    assert not [m for m in mods if m.startswith(("shufflesim.accounting", "shufflesim.mechanisms", "scipy"))]


def test_every_subcommand_still_parses_and_lists():
    from shufflesim.cli.main import SUBCOMMANDS, build_parser

    full = build_parser()
    for name in SUBCOMMANDS:
        assert name in full.format_help()
    lazy = build_parser(None)
    assert all(name in lazy.format_help() for name in SUBCOMMANDS)
