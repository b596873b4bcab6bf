"""The claims registry: the seed papers' claims as TOML files, the checks that recompute them, the report.

One file per paper under ``scenarios/claims/`` (``koskela.toml``, ``flame.toml``, ``biswas.toml``,
``balle2020.toml``; ``beyond.toml`` holds the literature checked beyond the seed papers).  Schema (every key is checked; an error names the file, the claim and the key)::

    paper = "koskela"                 # one of PAPERS, equal to the file's stem
    title = "..."                     # the paper, for the report
    seed  = "001"                     # the number that starts the seed paper's file name
    [[claim]]
    id          = "strong-1d-pair"    # unique within the file
    source      = "seed 001 eq 5.1, Fig 1"
    claim       = "the claim in words"
    paper_value = "..."               # string, number or list: the paper's value(s), as printed
    method      = "tight"             # tight | exact | published-bound | audit | mse-validation | simulation
    evidence    = "exact"             # exact | statistical | published-bound | reconstruction | fitted (EVIDENCE)
    reconstruction = "..."            # required with evidence = "reconstruction": what the text lost, what we used
    check       = "koskela.strong_1d" # a function in shufflesim.validation.claim_checks (CHECKS)
    slow        = false               # optional: run only with --slow (CI's slow job)
    [claim.params]                    # optional: the check's inputs (settings, transcribed paper tables)
    [claim.finding]                   # optional: an item of the generated FINDINGS.md
    number  = 1
    section = "Accounting (issue 3)"
    text    = "... {value:.2e} ..."   # str.format template over the check's named values

A check returns an :class:`Outcome`: the named values it computed, a one-line ``shufflesim_value``,
the verdict, the caveat or the missing piece, and the evidence (numbers, method, trials, seed).  No result
is ever typed into a TOML file or a template: templates hold placeholders, the numbers come from the check.

The verdict vocabulary follows from the claim's evidence class (issue 19), and :func:`run_claim` enforces it:

* ``exact`` (exact computation or enumeration) and ``published-bound`` (a formula the paper prints, evaluated
  as printed) may give every verdict except the two below;
* ``statistical`` (a test) must report its p-value, its family and its level (``Outcome.evidence``:
  ``p_value``, ``family``, ``level``); "refuted" needs p < level; a p-value within 10x of the level (either
  side) is flagged *borderline* in the record, the report and FINDINGS.md;
* ``reconstruction`` (a formula the text lost, rebuilt by the project: the claim's ``reconstruction`` key
  says which) gives at most "not-reproduced" or "reproduced-with-caveat" (our reconstruction: ...): a check's
  "refuted" becomes "not-reproduced", its "reproduced" "reproduced-with-caveat";
* ``fitted`` (parameters the paper does not state, fitted by the check; it reports them in
  ``Outcome.evidence["fit"]``) gives "reproduced-with-fitted-parameters" or "not-reproduced" at most;
* a check that decides by a threshold reports it in ``Outcome.evidence["threshold"]`` (``value``,
  ``source``); without a cited ``source`` the verdict must be "inconclusive" (with the numbers).

"refuted" says the claim is false (a lower bound, an exact value or a significant test beyond it);
"not-certified" says a claimed privacy value is reproduced only by a bound that is not valid, and no valid
bound certifies it, while no lower bound shows it false either (issue 29: the evidence decides which).
A finding's optional ``part`` says whom it disagrees with (:data:`PARTS`): ``papers`` (the default: the seed
papers and the literature) or ``shufflesim`` (the project's own earlier reading), each its own part of
FINDINGS.md.
"""

from __future__ import annotations

import re
import string
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shufflesim.errors import ShufflesimError
from shufflesim.validation.outcome import Outcome  # noqa: F401  (re-exported: the checks' return type)

#: the seed papers' files, and ``beyond``: claims of the literature the project checked beyond the seeds
PAPERS = ("koskela", "flame", "biswas", "balle2020", "beyond")
METHODS = ("tight", "exact", "published-bound", "audit", "mse-validation", "simulation")
VERDICTS = ("reproduced", "reproduced-with-caveat", "reproduced-with-fitted-parameters", "not-reproduced", "refuted",
            "not-certified", "inconclusive", "not-checkable")
#: the evidence classes (issue 19): the key of a claim's ``evidence``, and how reports describe it
EVIDENCE = {"exact": "exact computation or enumeration",
            "statistical": "statistical test (p-value, family, level)",
            "published-bound": "published bound or formula evaluated as printed",
            "reconstruction": "reconstruction of a formula the text lost",
            "fitted": "parameters the paper does not state, fitted"}
_DECISIVE = ("reproduced", "reproduced-with-caveat", "refuted", "not-certified", "inconclusive", "not-checkable")
#: the verdicts each evidence class can carry
ALLOWED = {"exact": _DECISIVE, "published-bound": _DECISIVE, "statistical": _DECISIVE,
           "reconstruction": ("reproduced-with-caveat", "not-reproduced", "inconclusive", "not-checkable"),
           "fitted": ("reproduced-with-fitted-parameters", "not-reproduced", "inconclusive", "not-checkable")}
#: a p-value within this factor of the level (either side) is borderline
BORDERLINE_FACTOR = 10.0
_TOP = {"paper": str, "title": str, "seed": str, "claim": list}
_CLAIM_REQUIRED = {"id": str, "source": str, "claim": str, "paper_value": (str, int, float, list), "method": str,
                   "evidence": str, "check": str}
_CLAIM_OPTIONAL = {"slow": bool, "params": dict, "finding": dict, "reconstruction": str}
_FINDING = {"number": int, "section": str, "text": str}
_FINDING_OPTIONAL = {"part": str}


class ClaimsError(ShufflesimError):
    """A malformed claims file (the message names the file, the claim and the key)."""


@dataclass(frozen=True)
class Claim:
    paper: str
    id: str
    source: str
    claim: str
    paper_value: Any
    method: str
    check: str
    slow: bool = False
    params: dict = field(default_factory=dict)
    finding: dict | None = None
    file: str = ""
    evidence: str = "exact"
    reconstruction: str = ""


def default_dir() -> Path:
    """``scenarios/claims`` of the working directory, else of the source checkout this package lives in."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        d = base / "scenarios" / "claims"
        if d.is_dir():
            return d
    try:  # an installed copy: scenarios/ ships as the data package shufflesim.scenarios.files
        from importlib.resources import files

        d = Path(str(files("shufflesim.scenarios.files") / "claims"))
        if d.is_dir():
            return d
    except (ImportError, ModuleNotFoundError, TypeError):
        pass
    raise ClaimsError("no scenarios/claims directory here, next to the package or installed with it; give --dir")


def _type_name(t) -> str:
    if isinstance(t, tuple):
        return " or ".join(x.__name__ for x in t)
    return t.__name__


def parse_file(path: Path) -> list[Claim]:
    """Parse and validate one claims file; :class:`ClaimsError` names the file, claim and key."""
    from shufflesim.validation.claim_checks import CHECKS

    name = Path(path).name
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ClaimsError(f"{name}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ClaimsError(f"{name}: not UTF-8 text (byte {exc.start}); claims files are UTF-8 TOML") from None
    except OSError as exc:
        raise ClaimsError(f"{name}: cannot read: {exc.strerror}") from None
    for key, t in _TOP.items():
        if key not in data:
            raise ClaimsError(f"{name}: missing key '{key}'")
        if not isinstance(data[key], t):
            raise ClaimsError(f"{name}: key '{key}' must be a {_type_name(t)}; got {type(data[key]).__name__}")
    extra = set(data) - set(_TOP)
    if extra:
        raise ClaimsError(f"{name}: unknown key '{sorted(extra)[0]}' (allowed: {', '.join(_TOP)})")
    paper = data["paper"]
    if paper not in PAPERS:
        raise ClaimsError(f"{name}: key 'paper': unknown paper {paper!r} (known: {', '.join(PAPERS)})")
    if Path(path).stem != paper:
        raise ClaimsError(f"{name}: key 'paper' is {paper!r} but the file is named {name}")
    out: list[Claim] = []
    seen: set[str] = set()
    for i, c in enumerate(data["claim"]):
        where = f"{name}: claim[{i}]"
        if not isinstance(c, dict):
            raise ClaimsError(f"{where}: must be a table ([[claim]])")
        if isinstance(c.get("id"), str):
            where += f" (id {c['id']!r})"
        for key, t in _CLAIM_REQUIRED.items():
            if key not in c:
                raise ClaimsError(f"{where}: missing key '{key}'")
            if not isinstance(c[key], t) or isinstance(c[key], bool):
                raise ClaimsError(f"{where}: key '{key}' must be a {_type_name(t)}; got {type(c[key]).__name__}")
        for key, t in _CLAIM_OPTIONAL.items():
            if key in c and not isinstance(c[key], t):
                raise ClaimsError(f"{where}: key '{key}' must be a {_type_name(t)}; got {type(c[key]).__name__}")
        extra = set(c) - set(_CLAIM_REQUIRED) - set(_CLAIM_OPTIONAL)
        if extra:
            raise ClaimsError(f"{where}: unknown key '{sorted(extra)[0]}'")
        if c["id"] in seen:
            raise ClaimsError(f"{where}: key 'id': duplicate id {c['id']!r}")
        seen.add(c["id"])
        if c["method"] not in METHODS:
            raise ClaimsError(f"{where}: key 'method': {c['method']!r} is not one of {', '.join(METHODS)}")
        if c["check"] not in CHECKS:
            raise ClaimsError(f"{where}: key 'check': unknown check {c['check']!r}")
        if c["evidence"] not in EVIDENCE:
            raise ClaimsError(f"{where}: key 'evidence': {c['evidence']!r} is not one of {', '.join(EVIDENCE)}")
        if (c["evidence"] == "reconstruction") != ("reconstruction" in c):
            raise ClaimsError(f"{where}: key 'reconstruction': required with evidence = \"reconstruction\" (what the "
                              "text lost and what the project uses instead), and only then")
        f = c.get("finding")
        if f is not None:
            for key, t in _FINDING.items():
                if key not in f:
                    raise ClaimsError(f"{where}: missing key 'finding.{key}'")
                if not isinstance(f[key], t):
                    raise ClaimsError(f"{where}: key 'finding.{key}' must be a {t.__name__}")
            extra = set(f) - set(_FINDING) - set(_FINDING_OPTIONAL)
            if extra:
                raise ClaimsError(f"{where}: unknown key 'finding.{sorted(extra)[0]}'")
            if f.get("part", "papers") not in PARTS:
                raise ClaimsError(f"{where}: key 'finding.part': {f['part']!r} is not one of {', '.join(PARTS)}")
            for _, field_name, _, _ in string.Formatter().parse(f["text"]):
                if field_name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", field_name):
                    raise ClaimsError(f"{where}: key 'finding.text': bad placeholder {{{field_name}}}")
        out.append(Claim(paper, c["id"], c["source"], c["claim"], c["paper_value"], c["method"], c["check"],
                         c.get("slow", False), c.get("params", {}), f, name, c["evidence"],
                         c.get("reconstruction", "")))
    return out


def load(directory: Path | None = None, papers: list[str] | None = None) -> list[Claim]:
    """Every claim of the files in ``directory`` (default :func:`default_dir`), optionally of some papers."""
    d = Path(directory) if directory is not None else default_dir()
    files = sorted(d.glob("*.toml"))
    if not files:
        raise ClaimsError(f"{d}: no claims files (*.toml)")
    claims = [c for f in files for c in parse_file(f)]
    if papers:
        for p in papers:
            if p not in PAPERS:
                raise ClaimsError(f"unknown paper {p!r} (known: {', '.join(PAPERS)})")
        claims = [c for c in claims if c.paper in papers]
    numbers = [c.finding["number"] for c in claims if c.finding]
    dup = {n for n in numbers if numbers.count(n) > 1}
    if dup:
        raise ClaimsError(f"finding number {min(dup)} is used by two claims")
    return claims


def run_claim(claim: Claim) -> dict[str, Any]:
    """Run one claim's check; the JSON record of ``claims check``.  The verdict is the check's, held to what
    the claim's evidence class can carry (module docstring); a check that claims more raises ClaimsError."""
    from shufflesim.validation.claim_checks import CHECKS

    t0 = time.perf_counter()
    out = CHECKS[claim.check](claim.params, claim.paper_value)
    verdict, caveat, evidence = apply_evidence(claim, out)
    return {"paper": claim.paper, "id": claim.id, "source": claim.source, "claim": claim.claim,
            "paper_value": claim.paper_value, "shufflesim_value": out.shufflesim_value, "verdict": verdict,
            "caveat": caveat, "method": claim.method, "evidence_class": claim.evidence, "check": claim.check,
            "params": claim.params, "evidence": dict(evidence, values=out.values), "slow": claim.slow,
            "seconds": time.perf_counter() - t0, "_values": out.values}


def apply_evidence(claim: Claim, out: Outcome) -> tuple[str, str, dict]:
    """(verdict, caveat, evidence) of a check's outcome under the claim's evidence class (module docstring)."""
    where = f"{claim.file}: claim {claim.id!r}"
    verdict, caveat = out.verdict, out.caveat
    if verdict not in VERDICTS:
        raise ClaimsError(f"{where}: check returned verdict {verdict!r}")
    ev = dict(out.evidence, **{"class": claim.evidence, "class_text": EVIDENCE[claim.evidence]})
    thr = ev.get("threshold")
    if thr is not None and not thr.get("source") and verdict not in ("inconclusive", "not-checkable"):
        raise ClaimsError(f"{where}: the verdict {verdict!r} rests on a threshold ({thr.get('value')}) that cites no "
                          "source; it must be 'inconclusive' with the numbers")
    if claim.evidence == "statistical":
        missing = [k for k in ("p_value", "family", "level") if k not in ev]
        if missing:
            raise ClaimsError(f"{where}: a statistical verdict must report {', '.join(missing)}")
        level = float(ev["level"])
        if ev["p_value"] is None:  # an interval design: its decision rule instead of a p-value
            if not ev.get("decision"):
                raise ClaimsError(f"{where}: a statistical verdict without a p-value must state its decision rule")
            ev["borderline"] = False
            stat = f"{ev['decision']} (family: {ev['family']}; level {level:.3g})"
        else:
            p = float(ev["p_value"])
            if verdict == "refuted" and not p < level:
                raise ClaimsError(f"{where}: 'refuted' needs a significant test (p = {p:.3g}, level {level:.3g})")
            ev["borderline"] = bool(level / BORDERLINE_FACTOR <= p < level * BORDERLINE_FACTOR)
            stat = f"p = {p:.3g} (family: {ev['family']}; level {level:.3g})"
            if ev["borderline"]:
                stat += f"; borderline: p within {BORDERLINE_FACTOR:g}x of the level"
        caveat = f"{caveat}; {stat}" if caveat else stat
    elif claim.evidence == "reconstruction":
        verdict = {"refuted": "not-reproduced", "reproduced": "reproduced-with-caveat"}.get(verdict, verdict)
        if verdict in ("not-reproduced", "reproduced-with-caveat"):
            caveat = f"our reconstruction: {claim.reconstruction}" + (f"; {caveat}" if caveat else "")
    elif claim.evidence == "fitted":
        if "fit" not in ev:
            raise ClaimsError(f"{where}: evidence 'fitted' needs the fit in the check's evidence ('fit')")
        verdict = {"refuted": "not-reproduced", "reproduced": "reproduced-with-fitted-parameters",
                   "reproduced-with-caveat": "reproduced-with-fitted-parameters"}.get(verdict, verdict)
        caveat = f"fitted: {ev['fit']}" + (f"; {caveat}" if caveat else "")
    if verdict not in ALLOWED[claim.evidence]:
        raise ClaimsError(f"{where}: verdict {verdict!r} is not allowed with evidence {claim.evidence!r} "
                          f"(allowed: {', '.join(ALLOWED[claim.evidence])})")
    return verdict, caveat, ev


def evidence_line(record: dict) -> str:
    """'evidence: <class>' with, for a statistical verdict, its p-value, family and level."""
    ev = record.get("evidence", {})
    cls = record.get("evidence_class") or ev.get("class", "")
    line = f"evidence: {EVIDENCE.get(cls, cls)}"
    if cls == "statistical" and ev.get("p_value") is not None:
        line += f", p = {float(ev['p_value']):.3g}, family: {ev['family']}, level {float(ev['level']):.3g}"
    elif cls == "statistical" and "level" in ev:
        line += f", {ev.get('decision', '')}, family: {ev['family']}, level {float(ev['level']):.3g}"
        if ev.get("borderline"):
            line += " (borderline)"
    return line


# --------------------------------------------------------------------------------------------------
# the generated FINDINGS.md
# --------------------------------------------------------------------------------------------------

HEADER = """# Where shufflesim and the seed papers disagree

Generated by `shufflesim claims report --output FINDINGS.md` from the claims registry
(`scenarios/claims/*.toml`): every number below is computed by the check named in brackets when the report
is generated, never typed in; `tests/test_claims.py` checks that this file is what the registry generates
and `tests/test_findings.py` recomputes the numbers through the library once more.  None of the code was
bent to match a paper.  "Seed NNN" is the seed paper whose file name starts with NNN (citations in
docs/theory.md).
`shufflesim claims check` prints every claim of the registry (not only these disagreements) with its verdict.
Each item ends with its verdict and its evidence class: exact computation or enumeration; statistical test
(with its p-value, family and level); published bound evaluated; reconstruction of a formula the text lost
(at most "not-reproduced"); fitted parameters (at most "reproduced-with-fitted-parameters").  "refuted" means
shown false; "not-certified" means a privacy value reproduced only by a bound that is not valid, and not
shown false either.
"""


OWN_HEADER = """# Where shufflesim corrects its own earlier reading

Generated from the same registry as the part above: claims the project itself once made or relied on (in its
docs or code), checked like the papers' claims, whose check shows the earlier reading wrong.  They are no
disagreement with a paper.
"""

#: the parts of FINDINGS.md, in order: a finding's ``part`` (whom it disagrees with) and the part's header
PARTS = {"papers": HEADER, "shufflesim": OWN_HEADER}


class _Fmt(string.Formatter):
    """str.format with exponents written as in the papers: 2.41e-5, not 2.41e-05."""

    def format_field(self, value, format_spec):
        s = super().format_field(value, format_spec)
        return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), s)


def render(template: str, values: dict) -> str:
    return _Fmt().format(template, **values)


def findings_markdown(records: list[dict]) -> str:
    """FINDINGS.md from the records of the claims that carry a ``finding`` (ordered by number)."""
    items = []
    for r in records:
        f = r.get("finding")
        if f:
            items.append((f["number"], f["section"], render(f["text"].strip(), r["_values"]), r,
                          f.get("part", "papers")))
    items.sort(key=lambda t: t[0])
    lines = []
    for part, header in PARTS.items():
        mine = [t for t in items if t[4] == part]
        if not mine and part != "papers":
            continue
        lines.append(header)
        section = None
        for number, sec, text, r, _ in mine:
            if sec != section:
                lines.append(f"## {sec}\n")
                section = sec
            body = (f"{number}. {text}\n\n[`{r['check']}`: {r['paper']}/{r['id']}, verdict {r['verdict']}; "
                    f"{evidence_line(r)}]")
            lines.append(_wrap_item(body))
    return "\n".join(lines).rstrip() + "\n"


def _wrap_item(body: str, width: int = 110) -> str:
    """Wrap an item.  Line breaks of the template are spaces, except before a line that starts with '- '
    (a sub-bullet: "   - ", continuation 5 spaces) and at a blank line (a new paragraph, indented 3).  The
    first paragraph follows "N. " (continuation indented 3 spaces)."""
    import textwrap

    paras: list[str] = []
    for line in body.split("\n"):
        t = line.strip()
        if not t:
            paras.append("")
        elif t.startswith("- ") or not paras or paras[-1] == "":
            if paras and paras[-1] == "":
                paras[-1] = t
            else:
                paras.append(t)
        else:
            paras[-1] += " " + t
    out = []
    for k, para in enumerate(p for p in paras if p):
        if k == 0:
            first, rest = "", "   "
        elif para.startswith("- "):
            first, rest, para = "   - ", "     ", para[2:]
        else:
            first, rest = "   ", "   "
        out.append(textwrap.fill(para, width=width, initial_indent=first, subsequent_indent=rest,
                                 break_long_words=False, break_on_hyphens=False))
    return "\n".join(out) + "\n"


def records_with_findings(claims: list[Claim], records: list[dict]) -> list[dict]:
    for c, r in zip(claims, records):
        r["finding"] = c.finding
    return records
