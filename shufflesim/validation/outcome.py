"""What a claim's check returns (kept apart from the registry so that the checks do not import it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    """A check's result: the verdict (one of :data:`shufflesim.validation.claims.VERDICTS`: ``reproduced`` |
    ``reproduced-with-caveat`` | ``refuted`` | ``not-certified`` | ``inconclusive`` | ``not-checkable`` ...), a one-line ``shufflesim_value``, the named ``values`` it computed (the FINDINGS.md
    templates use them), the caveat or the missing piece, and the evidence (numbers, method, trials, seed)."""

    verdict: str
    shufflesim_value: str
    values: dict = field(default_factory=dict)
    caveat: str = ""
    evidence: dict = field(default_factory=dict)
