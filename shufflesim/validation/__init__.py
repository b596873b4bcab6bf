"""Verdicts with evidence: MSE validation, empirical privacy audits and the claims registry (issue 10).

* :mod:`~shufflesim.validation.mse` — a protocol's theory hooks compared exactly, then against Monte-Carlo
  squared errors drawn until every check is decided (:mod:`~shufflesim.validation.sequential`: one
  anytime-valid confidence sequence; :mod:`~shufflesim.validation.suite`: ``validate --all``;
  :mod:`~shufflesim.validation.error_rates`: the procedure's measured error rates);
* :mod:`~shufflesim.validation.audit` — certified (Clopper–Pearson) lower bounds on δ(ε) and ε(δ) from
  samples of the analyser's view (or an exact sufficient statistic of it), compared with the accountant;
* :mod:`~shufflesim.validation.claims` — the seed papers' claims as TOML files under ``scenarios/claims/``,
  the checks that recompute them, and the generated FINDINGS.md.

This package sits above :mod:`shufflesim.studies` (it reuses the table reproductions) and below the CLI.
"""
