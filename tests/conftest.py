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
