"""``shufflesim claims check|report``: run the claims registry (scenarios/claims/*.toml) and print verdicts,
or generate FINDINGS.md from it.  See :mod:`shufflesim.validation.claims`."""

from __future__ import annotations

import argparse
import sys

from shufflesim.cli._common import print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("claims", help="check the seed papers' claims (scenarios/claims/) and generate FINDINGS.md",
                       description="The claims registry: one TOML file per paper under scenarios/claims/.",
                       examples=("shufflesim claims list", "shufflesim claims check --paper koskela",
                                 "shufflesim claims report --output FINDINGS.md"),
                       docs="README.md#verdicts-validate-audit-claims; FINDINGS.md; docs/validation.md")
    s = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    docs = "README.md#verdicts-validate-audit-claims; docs/validation.md"
    c = s.add_parser("check", help="run the checks; print claim | paper value | shufflesim value | verdict",
                     examples=("shufflesim claims check --paper biswas", "shufflesim claims check --id koskela/fig1-"
                               "tight-vs-analytic --json"), docs=docs)
    _common(c)
    c.add_argument("--json", action="store_true", help="print one JSON object with a 'claims' list")
    c.set_defaults(func=run_check)
    r = s.add_parser("report", help="generate FINDINGS.md (the claims that carry a finding; runs slow checks too)",
                     examples=("shufflesim claims report --output FINDINGS.md",), docs=docs)
    _common(r)
    r.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    r.add_argument("--records-out", metavar="FILE", help="also write the checks' records (JSON) here")
    r.add_argument("--records-in", metavar="FILE",
                   help="render from records written by --records-out instead of running the checks")
    r.set_defaults(func=run_report)
    v = s.add_parser("list", help="parse the registry and list the claims without running them "
                                  "(paper, id, method, evidence class, speed, source)",
                     examples=("shufflesim claims list --paper flame",), docs=docs)
    _common(v)
    v.set_defaults(func=run_list)


def _common(p: argparse.ArgumentParser) -> None:
    from shufflesim.validation.claims import PAPERS

    p.add_argument("--paper", action="append", choices=PAPERS, help="only this paper's claims (repeatable)")
    p.add_argument("--dir", help="directory of the claims files (default: scenarios/claims)")
    p.add_argument("--slow", action="store_true", help="also run the slow checks (minutes)")
    p.add_argument("--id", action="append", help="only the claim with this id (repeatable)")


def _select(args, *, all_for_report: bool = False):
    from shufflesim.validation.claims import load

    claims = load(args.dir, args.paper)
    if args.id:  # an id is 'id' or 'paper/id'; one that names no claim is an error, not an empty selection
        from shufflesim.validation.claims import ClaimsError

        for i in args.id:
            if not any(i in (c.id, f"{c.paper}/{c.id}") for c in claims):
                ids = [f"{c.paper}/{c.id}" for c in claims]
                hint = ", ".join(ids[:8]) + (f", … ({len(ids)} in all)" if len(ids) > 8 else "")
                raise ClaimsError(f"--id {i!r} names no claim{' of ' + ', '.join(args.paper) if args.paper else ''}"
                                  f" (known: {hint or 'none'}; shufflesim claims list shows them all)")
        claims = [c for c in claims if c.id in set(args.id) or f"{c.paper}/{c.id}" in set(args.id)]
    if not (args.slow or all_for_report):
        skipped = [c for c in claims if c.slow]
        claims = [c for c in claims if not c.slow]
    else:
        skipped = []
    return claims, skipped


def run_list(args) -> int:
    claims, skipped = _select(args, all_for_report=True)
    for c in claims:
        print(f"{c.paper:<10} {c.id:<28} {c.method:<16} {c.evidence:<16} {'slow' if c.slow else 'fast'}  {c.source}")
    return 0


def run_check(args) -> int:
    from shufflesim.validation.claims import run_claim

    claims, skipped = _select(args)
    records = []
    for c in claims:
        r = run_claim(c)
        r.pop("_values", None)
        records.append(r)
        if not args.json:
            _row(r)
    if args.json:
        print_json({"claims": records, "skipped_slow": [f"{c.paper}/{c.id}" for c in skipped]})
    else:
        counts = {}
        for r in records:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        print("summary   " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) +
              (f"; {len(skipped)} slow claims skipped (--slow runs them)" if skipped else ""))
    return 0


def _row(r: dict) -> None:
    from shufflesim.validation.claims import evidence_line

    pv = r["paper_value"]
    pv = " / ".join(map(str, pv)) if isinstance(pv, list) else str(pv)
    print(f"[{r['verdict']}] {r['paper']}/{r['id']} ({r['source']})")
    print(f"    claim       {r['claim']}")
    print(f"    paper       {pv}")
    print(f"    shufflesim  {r['shufflesim_value']}")
    print(f"    {evidence_line(r)}")
    if r["caveat"]:
        print(f"    caveat      {r['caveat']}")


def run_report(args) -> int:
    import json
    from pathlib import Path

    from shufflesim.validation.claims import ClaimsError, findings_markdown, records_with_findings, run_claim

    for flag, target in (("--output", args.output), ("--records-out", args.records_out)):
        _check_writable(flag, target)  # before the checks run (minutes), not after
    claims, _ = _select(args, all_for_report=True)
    claims = [c for c in claims if c.finding]
    if args.records_in:
        try:
            saved = {(r["paper"], r["id"]): r for r in json.loads(Path(args.records_in).read_text())["claims"]}
        except (OSError, ValueError, KeyError) as exc:
            raise ClaimsError(f"{args.records_in}: not a records file of claims report ({exc})") from None
        missing = [f"{c.paper}/{c.id}" for c in claims if (c.paper, c.id) not in saved]
        if missing:
            raise ClaimsError(f"{args.records_in}: no record for {missing[0]}")
        done = [dict(saved[(c.paper, c.id)], _values=saved[(c.paper, c.id)]["evidence"]["values"]) for c in claims]
    else:
        done = []
        for c in claims:
            done.append(run_claim(c))
            print(f"  {c.paper}/{c.id}: {done[-1]['verdict']} ({done[-1]['seconds']:.1f} s)", file=sys.stderr)
    if args.records_out:
        from shufflesim.core.serialise import jsonable

        recs = [{k: v for k, v in r.items() if k != "_values"} for r in done]
        Path(args.records_out).write_text(json.dumps(jsonable({"claims": recs}), indent=1), encoding="utf-8")
    records = records_with_findings(claims, done)
    text = findings_markdown(records)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({len(records)} items)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _check_writable(flag: str, target: str | None) -> None:
    """``target`` can be written: its folder exists and is writable, and it is not a folder itself."""
    import os
    from pathlib import Path

    from shufflesim.validation.claims import ClaimsError

    if target is None:
        return
    path = Path(target)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ClaimsError(f"{flag} {target}: is a directory; give a file name")
    if not folder.is_dir():
        raise ClaimsError(f"{flag} {target}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ClaimsError(f"{flag} {target}: not writable")
