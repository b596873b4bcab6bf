"""``shufflesim table NAME``: a published table recomputed by shufflesim, next to the paper's numbers.

``shufflesim table balle2020`` — seed 004's Table 3 (messages and worst-case MSE of the sum for
(n, ε) ∈ {10⁴, 10⁵} × {0.5, 1}, δ = 1/n²): the paper's value (a transcribed *paper claim*), shufflesim's
reproduction of the paper's computation, the exact worst-case MSE at the same parameters, shufflesim's
certified protocol, whether paper and shufflesim agree (|difference| ≤ 0.05: the paper prints one decimal)
and why they differ.  ``--tight`` adds the tight-accountant column (about a minute more); ``--full`` also
reproduces the paper's optimised recursive rows (slow: the Bennett bound of 2019 inside a search, about
15 minutes).
"""

from __future__ import annotations

import argparse
import sys

from shufflesim.cli._common import print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("table", help="recompute a published table (balle2020: seed 004 Table 3)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       examples=("shufflesim table balle2020 --rows localdp,curatordp,balle",
                                 "shufflesim table balle2020 --json"),
                       docs="README.md#using-it; docs/theory.md#summation-table3")
    p.add_argument("name", choices=("balle2020",), help="which table")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--tight", action="store_true", help="add the tight-accountant column (slower)")
    p.add_argument("--full", action="store_true", help="also reproduce the optimised recursive rows (slow)")
    p.add_argument("--rows", help="comma-separated subset of rows: " + ", ".join(_row_keys()))
    p.set_defaults(func=run)


def _row_keys() -> tuple[str, ...]:
    from shufflesim.studies.balle2020 import ROW_KEYS

    return ROW_KEYS


def _f(x, width: int = 9) -> str:
    if x is None:
        return "-".rjust(width)
    if isinstance(x, float):
        return f"{x:.1f}".rjust(width)
    return str(x).rjust(width)


def run(args: argparse.Namespace) -> int:
    from shufflesim.studies import balle2020

    rows = None if args.rows is None else [r.strip() for r in args.rows.split(",") if r.strip()]
    if rows is not None and not rows:
        from shufflesim.errors import ParameterError

        raise ParameterError("--rows needs at least one row name; allowed: " + ", ".join(_row_keys()))
    cells = balle2020.table3(rows=rows, full=args.full, tight=args.tight)
    if args.json:
        print_json({
            "table": "balle2020",
            "source": "seed 004 (Balle, Bell, Gascon, Nissim), Appendix G.1, Table 3",
            "settings": [{"n": n, "eps": e, "delta": 1.0 / n**2} for n, e in balle2020.SETTINGS],
            "agreement_criterion": f"|shufflesim - paper| <= {balle2020.AGREEMENT_TOLERANCE} (the paper prints one "
                                   "decimal) and equal message counts; shufflesim's value is mse_reproduced when "
                                   "available, else mse_exact",
            "paper_values": "transcribed from the seed's text: paper claims, not computed",
            "full": args.full,
            "tight": args.tight,
            "rows": [c.to_dict() for c in cells],
        })
        return 0
    out = sys.stdout
    out.write("seed 004 Table 3 (paper claims) vs shufflesim; delta = 1/n^2; agree: |diff| <= 0.05 and equal messages\n")
    head = (f"{'row':<28}{'n':>7}{'eps':>5}{'msg':>5}{'ours':>5}{'paper':>10}{'reprod.':>10}{'exact':>10}"
            f"{'certif.':>10}{'tight':>10}  agree  note\n")
    out.write(head)
    out.write("-" * (len(head) + 10) + "\n")
    notes: dict[str, int] = {}
    for c in cells:
        if c.reason and c.reason != "agrees":
            ref = notes.setdefault(c.reason, len(notes) + 1)
            note = f"[{ref}]"
        else:
            note = ""
        agree = {True: "yes", False: "NO", None: "n/a"}[c.agree]
        out.write(f"{c.label:<28}{c.n:>7}{c.eps:>5g}{_f(c.paper_messages, 5)}{_f(c.messages, 5)}"
                  f"{_f(c.paper_mse, 10)}{_f(c.mse_reproduced, 10)}{_f(c.mse_exact, 10)}{_f(c.mse_certified, 10)}"
                  f"{_f(c.mse_tight, 10)}  {agree:<5}  {note}\n")
    out.write("\nnotes:\n")
    for text, ref in notes.items():
        out.write(f"[{ref}] {text}\n")
    out.write("\ncolumns: paper = transcribed paper claim; reprod. = the paper's computation redone by shufflesim; "
              "exact = exact worst-case MSE at those parameters; certif. = shufflesim's certified protocol "
              "(corrected Bennett bound / blanket-binomial for Cheu); tight = tight accountant (--tight)\n")
    return 0
