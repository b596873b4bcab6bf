"""Scenario files: one TOML file per paper figure or table, validated against a schema, run into an output
directory with tidy results, plots and a report (``shufflesim run``).

It sits above :mod:`shufflesim.validation` because a report's verdict column comes from the claims registry,
and below :mod:`shufflesim.cli`.
"""
