"""Verdicts with evidence: MSE validation, empirical privacy audits and the claims registry (issue 10).

* :mod:`~shufflesim.validation.mse` — Monte-Carlo squared errors tested against a protocol's theory hooks
  (bootstrap-t tests, Holm correction, power and the trials that would settle an inconclusive check);
* :mod:`~shufflesim.validation.audit` — certified (Clopper–Pearson) lower bounds on δ(ε) and ε(δ) from
  samples of the analyser's view (or an exact sufficient statistic of it), compared with the accountant;
* :mod:`~shufflesim.validation.claims` — the seed papers' claims as TOML files under ``scenarios/claims/``,
  the checks that recompute them, and the generated FINDINGS.md.

This package sits above :mod:`shufflesim.studies` (it reuses the table reproductions) and below the CLI.
"""
