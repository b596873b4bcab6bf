"""docs/validation.md's quality table (audit lower bound ÷ accountant upper bound) recomputed from the code.

Every row of the table is parsed (its ε values and printed figures) and recomputed with the same settings:
10⁶ samples per side, α = 0.05, seed 0, no ε(δ) question.  The printed figures must be the recomputed ones
rounded as printed (3 significant digits, ratios to 2 decimals).  The blanket-sum rows calibrate the protocol
with the tight accountant first (~20 s on a busy core): they run with --run-slow; the others always.

``python tests/test_audit_table.py`` prints the table from the code (how the doc's rows were made).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shufflesim.accounting import account
from shufflesim.mechanisms import KRR, RR2
from shufflesim.pipeline import registry
from shufflesim.validation.audit import krr_worst_case, rr2_count_setup, run_audit, setup_for_protocol

DOC = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
TRIALS, SEED = 10**6, 0
HEADER = "| mechanism | setting | ε | audit δ_lower | accountant δ_upper | ratio |"


def _audit(setup, eps: float, method: str | None = None) -> tuple[float, float]:
    res = run_audit(setup, eps=eps, trials=TRIALS, rng=SEED, method=method)
    return res["delta_lower"], res["accountant"]["delta_upper"]


def _krr(relation: str):
    audited = KRR.from_eps0(100, 4, 2.0, "weak")  # the relation does not change the audited view
    mech = KRR.from_eps0(100, 4, 2.0, relation)

    def row(eps: float) -> tuple[float, float]:
        low, _ = _audit(krr_worst_case(100, 4, audited.gamma, mechanism=audited), eps)
        return low, account(mech, eps=[eps]).results[0].delta_upper

    return row


def _blanket(relation: str):
    proto = registry.create("blanket-sum", 1000, eps=1.0, delta=1e-6, adversary="strong")
    level = proto.mechanism()
    mech = KRR(level.n, level.k, level.gamma, relation)

    def row(eps: float) -> tuple[float, float]:
        low, _ = _audit(setup_for_protocol(proto), eps)
        return low, account(mech, eps=[eps]).results[0].delta_upper

    return row


def _protocol(name: str, n: int, **kw):
    proto = registry.create(name, n, **kw)
    return lambda eps: _audit(setup_for_protocol(proto), eps)


#: the table's first column -> how its row is computed
ROWS = {
    "k-RR, weak relation": lambda: _krr("weak"),
    "k-RR, strong relation": lambda: _krr("strong"),
    "rr2 (seed 001 §4 pair)": lambda: (lambda eps: _audit(rr2_count_setup(100, 2.0, mechanism=RR2(100, 2.0)), eps,
                                                           method="tight-koskela")),
    "rr2 (local-rr-sum, stronger clone pair)": lambda: _protocol("local-rr-sum", 100, eps=2.0),
    "blanket-sum level, weak": lambda: _blanket("weak"),
    "blanket-sum level, strong": lambda: _blanket("strong"),
    "central-laplace-sum": lambda: _protocol("central-laplace-sum", 1000, eps=1.0),
    "central-dlap-sum": lambda: _protocol("central-dlap-sum", 1000, eps=1.0),
    "ikos-sum": lambda: _protocol("ikos-sum", 1000, eps=1.0),
    "cheu-sum": lambda: _protocol("cheu-sum", 1000, eps=1.0, delta=1e-6),
}
SLOW = ("blanket-sum level, weak", "blanket-sum level, strong")


def _split(cell: str) -> list[str]:
    return [c.strip() for c in cell.split("/")]


def doc_rows() -> dict[str, tuple[list[float], list[str], list[str], list[str]]]:
    """{first column: (eps values, delta_lower, delta_upper, ratio as printed)} of the doc's table."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        eps = [float(e) for e in _split(cells[2])]
        rows[cells[0]] = (eps, _split(cells[3]), _split(cells[4]), _split(cells[5]))
    return rows


def computed(name: str, eps_values) -> tuple[list[str], list[str], list[str]]:
    fn = ROWS[name]()
    lows, ups, ratios = [], [], []
    for eps in eps_values:
        low, up = fn(eps)
        lows.append(format(low, ".3g"))
        ups.append(format(up, ".3g"))
        ratios.append(format(low / up, ".2f") if up > 0 else "n/a")
    return lows, ups, ratios


def test_the_table_has_exactly_the_computed_rows():
    assert set(doc_rows()) == set(ROWS)


@pytest.mark.parametrize("name", [pytest.param(r, marks=pytest.mark.slow) if r in SLOW else r for r in ROWS])
def test_table_row_is_recomputed(name):
    eps, lows, ups, ratios = doc_rows()[name]
    assert computed(name, eps) == (lows, ups, ratios)


if __name__ == "__main__":  # print the rows as the doc shows them
    for name, (eps, *_rest) in doc_rows().items():
        lows, ups, ratios = computed(name, eps)
        print(f"| {name} | | {' / '.join(f'{e:g}' for e in eps)} | {' / '.join(lows)} | {' / '.join(ups)} | "
              f"{' / '.join(ratios)} |")
