"""The claims registry (issue 10): every file parses, every fast check runs (slow ones behind the slow
marker), FINDINGS.md is what the registry generates, malformed files give one clear error line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shufflesim.validation import claims as C

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_DIR = ROOT / "scenarios" / "claims"
FINDINGS = ROOT / "FINDINGS.md"


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-P", "-m", "shufflesim", *args], capture_output=True, text=True, cwd=cwd)


def test_every_file_parses_and_covers_the_papers():
    claims = C.load(CLAIMS_DIR)
    assert {c.paper for c in claims} == set(C.PAPERS)
    assert {p.stem for p in CLAIMS_DIR.glob("*.toml")} == set(C.PAPERS)
    ids = [(c.paper, c.id) for c in claims]
    assert len(ids) == len(set(ids))
    # the FINDINGS items 1-14 of the previous hand-written file are all covered, and more
    numbers = sorted(c.finding["number"] for c in claims if c.finding)
    assert numbers[:14] == list(range(1, 15))


FAST = [c for c in C.load(CLAIMS_DIR) if not c.slow]
SLOW = [c for c in C.load(CLAIMS_DIR) if c.slow]


#: The verdict of every fast claim that carries no FINDINGS.md item (whose verdict is therefore written nowhere
#: else): a check whose verdict flips fails here.  A deliberate change of a verdict edits this table and says why
#: in the commit.  (Claims with a finding are held to the verdict FINDINGS.md prints.)
VERDICTS_WITHOUT_FINDING = {
    ("balle2020", "table3-localdp"): "reproduced",
    ("balle2020", "table3-curatordp"): "reproduced",
    ("balle2020", "table3-ikos_original"): "not-reproduced",
    ("balle2020", "table3-ikos_improved"): "reproduced-with-caveat",
    ("balle2020", "table3-ikos_ghazi"): "not-checkable",
    ("balle2020", "lemma-a1-error-bound"): "refuted",
    ("balle2020", "s8-ikos-arbitrary-bias"): "reproduced",
    ("balle2020", "s8-recursive-bounded"): "reproduced",
    ("balle2020", "s8-local-manipulable"): "reproduced",
    ("balle2020", "s8-withheld-noise-harms-privacy"): "reproduced",
    ("balle2020", "s8-constant-factor-defence"): "reproduced-with-caveat",
    ("biswas", "krr-mse"): "reproduced",
    ("biswas", "table4-vs-exact"): "refuted",
    ("flame", "figure3-ratios"): "not-checkable",
    ("koskela", "fig1-tight-vs-analytic"): "reproduced-with-caveat",
    ("koskela", "fig2-feldman-close"): "inconclusive",
    ("koskela", "fig4-compositions"): "reproduced",
    ("koskela", "fig10-blanket-vs-clones"): "reproduced",
    ("koskela", "weak-pair-audit"): "reproduced",
}


def test_every_fast_claim_without_a_finding_has_its_verdict_recorded():
    assert set(VERDICTS_WITHOUT_FINDING) == {(c.paper, c.id) for c in FAST if not c.finding}


def _normalised_findings() -> str:
    return " ".join(FINDINGS.read_text(encoding="utf-8").split())


@pytest.mark.parametrize("claim", FAST, ids=[f"{c.paper}/{c.id}" for c in FAST])
def test_fast_claim_runs_and_its_finding_is_in_findings_md(claim):
    r = C.run_claim(claim)
    assert r["verdict"] in C.VERDICTS and r["shufflesim_value"]
    # the verdict itself: FINDINGS.md's for a claim with a finding, the recorded one otherwise
    if claim.finding:
        stamp = f"{claim.paper}/{claim.id}, verdict {r['verdict']};"
        assert stamp in _normalised_findings(), f"verdict {r['verdict']!r} is not FINDINGS.md's for {claim.id}"
    else:
        assert r["verdict"] == VERDICTS_WITHOUT_FINDING[(claim.paper, claim.id)]
    assert r["verdict"] in C.ALLOWED[claim.evidence] and r["evidence_class"] == claim.evidence
    if r["verdict"] not in ("reproduced", "refuted"):
        assert r["caveat"], "a caveat or the missing piece must be said"
    if claim.evidence == "statistical":
        assert {"p_value", "family", "level"} <= set(r["evidence"]) and "p = " in r["caveat"]
    if claim.finding:
        text = C.render(claim.finding["text"].strip(), r["_values"])
        assert " ".join(text.split()) in _normalised_findings(), "FINDINGS.md is stale: run shufflesim claims report --output FINDINGS.md"


@pytest.mark.slow
@pytest.mark.parametrize("claim", SLOW, ids=[f"{c.paper}/{c.id}" for c in SLOW])
def test_slow_claim_runs(claim):
    r = C.run_claim(claim)
    assert r["verdict"] in C.VERDICTS


@pytest.mark.slow
def test_findings_md_is_generated_from_the_registry(tmp_path):
    out = _cli("claims", "report", "--output", str(tmp_path / "F.md"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "F.md").read_text(encoding="utf-8") == FINDINGS.read_text(encoding="utf-8")


def test_findings_md_header_and_items_in_order():
    text = FINDINGS.read_text(encoding="utf-8")
    assert text.startswith(C.HEADER)
    import re

    papers, _, own = text.partition(C.OWN_HEADER)
    nums = [int(m) for m in re.findall(r"^(\d+)\. \*\*", papers, flags=re.M)]
    assert nums == sorted(nums) and nums[:14] == list(range(1, 15))
    own_nums = [int(m) for m in re.findall(r"^(\d+)\. \*\*", own, flags=re.M)]
    assert own_nums == sorted(own_nums)


def _finding_part(text: str, paper: str, claim_id: str) -> str:
    """Which part of FINDINGS.md (``papers`` or ``shufflesim``) carries the item of ``paper/claim_id``."""
    papers, _, own = text.partition(C.OWN_HEADER)
    stamp = f"{paper}/{claim_id}, verdict"
    assert (stamp in papers) != (stamp in own), f"{paper}/{claim_id} must be in exactly one part"
    return "papers" if stamp in papers else "shufflesim"


def test_verdicts_worded_as_precisely_as_their_evidence():
    """Issue 29: four claims said more (or other) than their evidence.
    - flame/eps-c: the published values reproduce only with the invalid original-2019 Bennett form: not certified,
      not refuted (the check returned "refuted" on both branches);
    - balle2020/lemma-a1-error-bound: what fails is the authors' code expression, not Lemma A.1 (lost formula,
      surviving proof exact);
    - beyond/stronger-clones-binary-rr: refutes shufflesim's own earlier reading: not under the seed papers' part;
    - balle2020/s8-ikos-arbitrary-bias: its threshold (width > n) is the project's own, said in the claim."""
    from shufflesim.validation.claim_checks import CHECKS

    claims = {(c.paper, c.id): c for c in C.load(CLAIMS_DIR)}
    flame = claims[("flame", "eps-c")]
    out = CHECKS[flame.check](flame.params, flame.paper_value)
    assert out.verdict != "refuted"  # the matching branch: reproduced by an invalid form only, not shown false
    assert out.verdict == "not-certified" and "no lower bound" in out.caveat
    assert "not-certified" in C.VERDICTS and "not-certified" in C.ALLOWED["published-bound"]
    # a published value that the valid form reproduces is "reproduced", one that neither form gives is no refutation
    assert CHECKS[flame.check](flame.params, [out.values[f"fixed_{k}"] for k in
                                              ("simple", "double", "shuffle_only")]).verdict == "reproduced"
    assert CHECKS[flame.check](flame.params, [5.0, 5.0, 5.0]).verdict == "inconclusive"
    lemma = claims[("balle2020", "lemma-a1-error-bound")]
    assert "authors' code" in lemma.claim and "p_list[j]+islast" in lemma.claim and "lost" in lemma.source
    ikos = claims[("balle2020", "s8-ikos-arbitrary-bias")]
    assert "shufflesim's own" in ikos.claim and "wider than n" in ikos.claim
    text = FINDINGS.read_text(encoding="utf-8")
    assert claims[("beyond", "stronger-clones-binary-rr")].finding["part"] == "shufflesim"
    assert _finding_part(text, "beyond", "stronger-clones-binary-rr") == "shufflesim"
    assert _finding_part(text, "beyond", "variation-ratio-krr") == "papers"
    assert _finding_part(text, "flame", "eps-c") == "papers" and "flame/eps-c, verdict not-certified" in text


def test_finding_part_is_checked(tmp_path):
    bad = (GOOD + '[claim.finding]\nnumber = 1\nsection = "x"\ntext = "t"\npart = "nobody"\n')
    (tmp_path / "biswas.toml").write_text(bad, encoding="utf-8")
    with pytest.raises(C.ClaimsError, match="finding.part"):
        C.load(tmp_path)


def test_cli_claims_check_json_one_paper():
    out = _cli("claims", "check", "--paper", "biswas", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["claims"] and all(c["paper"] == "biswas" for c in d["claims"])
    for c in d["claims"]:
        assert {"paper", "source", "claim", "paper_value", "shufflesim_value", "verdict", "evidence"} <= set(c)
        assert c["verdict"] in C.VERDICTS and c["evidence"]["method"] and c["evidence_class"] in C.EVIDENCE


GOOD = '''paper = "biswas"
title = "t"
seed = "003"
[[claim]]
id = "a"
source = "s"
claim = "c"
paper_value = 1.0
method = "exact"
evidence = "exact"
check = "biswas.histogram_vs_count"
'''


@pytest.mark.parametrize("text, key", [
    (GOOD.replace('title = "t"\n', ""), "'title'"),
    (GOOD.replace('method = "exact"', 'method = "guess"'), "'method'"),
    (GOOD.replace('evidence = "exact"\n', ''), "'evidence'"),
    (GOOD.replace('evidence = "exact"', 'evidence = "hunch"'), "'evidence'"),
    (GOOD.replace('evidence = "exact"', 'evidence = "reconstruction"'), "'reconstruction'"),
    (GOOD.replace('evidence = "exact"', 'evidence = "exact"\nreconstruction = "x"'), "'reconstruction'"),
    (GOOD.replace('check = "biswas.histogram_vs_count"', 'check = "nope"'), "'check'"),
    (GOOD.replace('paper_value = 1.0', 'paper_value = true'), "'paper_value'"),
    (GOOD.replace('id = "a"', 'id = 3'), "'id'"),
    (GOOD + '[claim.finding]\nnumber = 1\nsection = "x"\n', "'finding.text'"),
    (GOOD.replace('source = "s"', 'source = "s"\nsorce = "t"'), "'sorce'"),
    (GOOD.replace('paper = "biswas"', 'paper = "koskela"'), "'paper'"),
    (GOOD + GOOD[GOOD.index("[[claim]]"):], "duplicate id"),
    ("paper = ", "not valid TOML"),
])
def test_malformed_file_gives_one_error_line_naming_the_key(tmp_path, text, key):
    (tmp_path / "biswas.toml").write_text(text, encoding="utf-8")
    with pytest.raises(C.ClaimsError, match="biswas.toml"):
        C.load(tmp_path)
    out = _cli("claims", "check", "--dir", str(tmp_path))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: biswas.toml") and key in out.stderr


def test_good_minimal_file_runs(tmp_path):
    (tmp_path / "biswas.toml").write_text(GOOD, encoding="utf-8")
    out = _cli("claims", "check", "--dir", str(tmp_path), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["claims"][0]["verdict"] == "refuted"


# ---- issue 19: the verdict vocabulary follows from the evidence class --------------------------------


def _claim(evidence: str, **kw) -> C.Claim:
    return C.Claim("biswas", "x", "s", "c", 1.0, "exact", "biswas.histogram_vs_count", file="biswas.toml",
                   evidence=evidence, **kw)


def test_reconstruction_and_fit_cannot_refute():
    refuted = C.Outcome("refuted", "v", caveat="differs")
    v, cav, _ = C.apply_evidence(_claim("reconstruction", reconstruction="eq 4 rebuilt"), refuted)
    assert v == "not-reproduced" and cav.startswith("our reconstruction: eq 4 rebuilt")
    v, _, _ = C.apply_evidence(_claim("reconstruction", reconstruction="r"), C.Outcome("reproduced", "v"))
    assert v == "reproduced-with-caveat"
    v, cav, _ = C.apply_evidence(_claim("fitted"), C.Outcome("reproduced", "v", evidence={"fit": "k = 10"}))
    assert v == "reproduced-with-fitted-parameters" and "k = 10" in cav
    assert C.apply_evidence(_claim("fitted"), C.Outcome("refuted", "v", evidence={"fit": "k"}))[0] == "not-reproduced"
    with pytest.raises(C.ClaimsError, match="fit"):
        C.apply_evidence(_claim("fitted"), C.Outcome("reproduced", "v"))
    with pytest.raises(C.ClaimsError, match="not allowed"):
        C.apply_evidence(_claim("exact"), C.Outcome("reproduced-with-fitted-parameters", "v"))


def test_unsourced_threshold_gives_inconclusive_only():
    thr = {"threshold": {"value": 2.0, "source": None}}
    with pytest.raises(C.ClaimsError, match="threshold"):
        C.apply_evidence(_claim("exact"), C.Outcome("refuted", "v", evidence=thr))
    assert C.apply_evidence(_claim("exact"), C.Outcome("inconclusive", "v", evidence=thr))[0] == "inconclusive"
    cited = {"threshold": {"value": 2.0, "source": "seed 001 §6"}}
    assert C.apply_evidence(_claim("exact"), C.Outcome("refuted", "v", evidence=cited))[0] == "refuted"


def test_statistical_verdict_needs_p_family_level_and_significance_to_refute():
    with pytest.raises(C.ClaimsError, match="p_value"):
        C.apply_evidence(_claim("statistical"), C.Outcome("reproduced", "v"))
    ev = {"p_value": 0.2, "family": "3 checks", "level": 0.05}
    with pytest.raises(C.ClaimsError, match="significant"):
        C.apply_evidence(_claim("statistical"), C.Outcome("refuted", "v", evidence=ev))
    v, cav, e = C.apply_evidence(_claim("statistical"), C.Outcome("reproduced", "v", evidence=ev))
    assert v == "reproduced" and e["borderline"] and "borderline" in cav and "family: 3 checks" in cav
    far = dict(ev, p_value=0.9)
    assert not C.apply_evidence(_claim("statistical"), C.Outcome("reproduced", "v", evidence=far))[2]["borderline"]
    sig = dict(ev, p_value=1e-6)
    v, _, e = C.apply_evidence(_claim("statistical"), C.Outcome("refuted", "v", evidence=sig))
    assert v == "refuted" and not e["borderline"]


def test_no_refutation_rests_on_a_reconstruction_fit_or_unstated_threshold():
    for c in C.load(CLAIMS_DIR):
        assert "refuted" not in C.ALLOWED[c.evidence] or c.evidence in ("exact", "statistical", "published-bound")
    assert {c.id: c.evidence for c in C.load(CLAIMS_DIR, ["balle2020"])}["table3-ikos_original"] == "reconstruction"
    assert "close_factor" not in {c.id: c for c in C.load(CLAIMS_DIR, ["koskela"])}["fig2-feldman-close"].params


def test_cli_claims_list_shows_every_evidence_class():
    out = _cli("claims", "list")
    assert out.returncode == 0, out.stderr
    claims = C.load(CLAIMS_DIR)
    lines = out.stdout.splitlines()
    assert len(lines) == len(claims)
    for c, line in zip(claims, lines):
        assert line.split()[:4] == [c.paper, c.id, c.method, c.evidence]


def test_agreement_family_holds_each_printed_number_once_with_p_values_and_borderline_flags():
    """Seed 004 Table 2's family (issue 19): a diagnostic row that reuses a printed number is tested but not
    counted, so the level is Bonferroni over the distinct numbers; every row has its two-sided p-value."""
    import numpy as np

    from shufflesim.experiments.stats import bonferroni_level
    from shufflesim.scenarios import agreement

    rng = np.random.default_rng(0)
    values = rng.normal(1.0, 0.1, size=4000)
    base = {"source": "T", "quantity": "abs_error_mean", "runs": None, "note": "", "step": "s", "kind": "sweep",
            "n": 10, "x0": None, "statistic": "mean", "values": values}
    rows = [dict(base, label="a", paper=1.0), dict(base, label="diag", paper=1.0), dict(base, label="b", paper=1.3),
            dict(base, label="c", paper=float(np.quantile(values, 0.9985)))]
    df = agreement.evaluate(rows, seed=1)
    assert df["family"].tolist() == [3] * 4 and df["level"].iloc[0] == bonferroni_level(0.95, 3)
    assert df["in_family"].tolist() == [True, False, True, True]
    assert "repeats the number printed for a" in df["flag"].iloc[1]
    # p-values: the printed number's two-sided tail probability in the reference distribution (R = 1: the values)
    p_c = 2 * np.mean(values > rows[3]["paper"])
    assert df["p_value"].iloc[3] == pytest.approx(p_c, abs=1.0 / values.size)
    alpha = 1 - bonferroni_level(0.95, 3)
    assert df["borderline"].iloc[3] == (alpha / 10 <= df["p_value"].iloc[3] < 10 * alpha)
    assert df["borderline"].iloc[3] and "borderline" in df["flag"].iloc[3] and not df["borderline"].iloc[0]
    text = agreement.describe(None, float(df["level"].iloc[0]), 3, 1)
    assert "Bonferroni-corrected over the 3 printed numbers" in text and "1 further row" in text
