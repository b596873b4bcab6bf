"""Shared test configuration.

Long runs are marked ``@pytest.mark.slow`` and skipped unless ``--run-slow`` is given (or
SHUFFLESIM_RUN_SLOW=1); a fast representative subset always runs.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow") or os.environ.get("SHUFFLESIM_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def auto_against_named():
    """The check shared by blanket-sum's and recursive-sum's auto-mode tests (issue 18): build a protocol in auto
    mode and in every named mode; auto is the certified mode with the smallest exact worst-case MSE and says so;
    the function returns that MSE.  The MSE and the certificate are also checked through a route that shares no
    cache with the resolution (the chosen parameters given explicitly; the mechanism accounted on a finer grid)."""
    from shufflesim import InfeasibleError
    from shufflesim.accounting.account import account
    from shufflesim.pipeline import registry

    EXPLICIT = ("k", "gamma", "precisions", "gammas")  # the resolved parameters of the blanket protocols

    def _auto_against_named(name: str, n: int, eps: float, modes, **kw) -> float:
        """Build ``name`` in auto mode and in every named mode: auto is the certified mode with the smallest exact
        worst-case MSE and says so; returns that MSE."""
        from shufflesim.errors import NotApplicableError
    
        auto = registry.create(name, n, eps=eps, **kw)
        named = {}
        for m in modes:
            try:
                named[m] = registry.create(name, n, eps=eps, mode=m, **kw).mse_worst()
            except (InfeasibleError, NotApplicableError):
                pass
        mode = auto.params["mode"]
        # exact: auto returns the very protocol that mode builds (memoised resolution), not a recomputation
        assert auto.mse_worst() == named[mode] == min(named.values()), (named, auto.params)
        reason = auto.params["mode_reason"]
        assert reason.startswith(f"auto: {mode}, the smallest certified worst-case MSE"), reason
        assert all(m in reason for m in modes), reason
        pr = auto.privacy()
        assert pr.eps <= eps and pr.delta <= 1.0 / n**2  # certified at the target (delta defaults to 1/n^2)
        # independently of the memoised resolution: the parameters auto chose, given explicitly, build a protocol
        # (no search) with the same exact worst-case MSE, and its mechanism, accounted afresh on a 10x finer grid
        # than the protocols' calibrations use, is certified at the target
        explicit = {o.name: auto.params[o.name] for o in registry.get(name).options if o.name in EXPLICIT}
        assert explicit, auto.params
        again = registry.create(name, n, eps=eps, mode=mode, **explicit, **kw)
        assert again.mse_worst() == auto.mse_worst(), (again.params, auto.params)
        from shufflesim.accounting.engines.tight import Numerics

        finer = {"target_accuracy": Numerics.target_accuracy / 10}
        (r,) = account(auto.mechanism(), eps=[eps], numerics=finer).results
        assert r.delta_upper <= 1.0 / n**2, (r, auto.params)
        return auto.mse_worst()

    return _auto_against_named
