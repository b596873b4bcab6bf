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
    assert "shufflesim.accounting.engines.tight" not in mods  # parsing alone imports no engine


def test_single_use_tight_question_imports_no_heavy_scipy():
    """A typical question (exact single use) runs on numpy and scipy.special alone."""
    mods = _modules_after(["account", "rr2", "--n", "1000", "--eps0", "2", "--eps", "0.5", "--method", "tight", "--json"])
    assert "shufflesim.accounting.engines.tight" in mods
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


def test_scipy_free_replacements_agree_with_scipy():
    """Issue 17 item 5: the numpy replacements of scipy.special on the start-up path agree with scipy (bit for bit
    with the newest releases, within the final roundings with the oldest the pyproject allows)."""
    import math

    import numpy as np
    from scipy.special import gammaln, logsumexp, xlogy

    from shufflesim.accounting.numerics.binomial import _LOG_FACT, log_tail_sum
    from shufflesim.accounting.pld.mgf import log_c

    assert [float(v) for v in _LOG_FACT] == [float(gammaln(j + 1.0)) for j in range(17)]  # exactness is the point
    rng = np.random.default_rng(17)
    for t in range(500):
        a = rng.normal(0.0, rng.uniform(0.1, 50.0), int(rng.integers(1, 400)))
        if t % 3 == 0:
            a[int(rng.integers(0, a.size))] = a.max()  # ties at the maximum
        if t % 7 == 0:
            a[: a.size // 2] = -np.inf
        # bit-identical to scipy 1.17's logsumexp (the golden outputs did not move); scipy 1.11, the floor, sums
        # in another order, so across the declared range the guarantee is the last two roundings (the sum's and
        # the log's): at most 2 ulps
        got, want = log_tail_sum(a), float(logsumexp(a))
        assert abs(got - want) <= 2 * math.ulp(want), (got, want)
    assert log_tail_sum([]) == -math.inf and log_tail_sum([-np.inf]) == -math.inf
    lam = np.concatenate(([0.0], rng.uniform(0.0, 50.0, 200)))
    a, b = xlogy(lam, lam), (lam + 1.0) * np.log1p(lam)
    # bit for bit with the newest scipy; across releases xlogy's log may differ by an ulp, and the difference of
    # the two terms (~150 each here, the result ~-4) carries their absolute rounding: 4 ulps of the larger term
    assert np.all(np.abs(log_c(lam) - (a - b)) <= 4 * np.spacing(np.maximum(np.abs(a), np.abs(b))))
