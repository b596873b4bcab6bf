"""docs/validation.md's quality table (audit lower bound ÷ accountant upper bound) recomputed from the code.

Every row of the table is parsed (its ε values and printed figures) and recomputed with the same settings:
10⁶ samples per side, α = 0.05, seed 0, no ε(δ) question.  The printed figures must be the recomputed ones
rounded as printed (3 significant digits, ratios to 2 decimals).  Rows that audit the same view (the two
k-RR relations, the two blanket-sum relations) share one audit; the blanket-sum protocol is calibrated once
(~2 s).  The whole file takes ~12 s of CPU (~25 s on the shared machine): nothing in it is marked slow.

The prose below the table is pinned too: every figure in it (the exact δ of the k-RR histogram, the
rr2 count and Cheu et al.'s all-zeros count, enumerated here from their binomial/multinomial laws; the
audit's share of them; the central sums' ratio range; IKOS's total-variation term; the Clopper–Pearson
floor; the settings column's p, r, k and γ) is recomputed and must appear in the doc as printed.  The
audits are cached, so a figure shares the row tests' runs.

``python tests/test_audit_table.py`` prints the table from the code (how the doc's rows were made).
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

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


@functools.lru_cache(maxsize=None)
def _krr_audit(eps: float) -> float:
    audited = KRR.from_eps0(100, 4, 2.0, "weak")  # the relation does not change the audited view
    return _audit(krr_worst_case(100, 4, audited.gamma, mechanism=audited), eps)[0]


def _krr(relation: str):
    mech = KRR.from_eps0(100, 4, 2.0, relation)
    return lambda eps: (_krr_audit(eps), account(mech, eps=[eps]).results[0].delta_upper)


@functools.lru_cache(maxsize=None)
def _blanket_protocol():
    return registry.create("blanket-sum", 1000, eps=1.0, delta=1e-6, adversary="strong")


@functools.lru_cache(maxsize=None)
def _blanket_audit(eps: float) -> float:
    return _audit(setup_for_protocol(_blanket_protocol()), eps)[0]


def _blanket(relation: str):
    level = _blanket_protocol().mechanism()
    mech = KRR(level.n, level.k, level.gamma, relation)
    return lambda eps: (_blanket_audit(eps), account(mech, eps=[eps]).results[0].delta_upper)


def _protocol(name: str, n: int, **kw):
    proto = registry.create(name, n, **kw)
    return lambda eps: _audit(setup_for_protocol(proto), eps)


#: the table's first column -> how its row is computed
ROWS = {
    "k-RR, weak relation": lambda: _krr("weak"),
    "k-RR, strong relation": lambda: _krr("strong"),
    "rr2 (exact)": lambda: (lambda eps: _audit(rr2_count_setup(100, 2.0, mechanism=RR2(100, 2.0)), eps,
                                               method="exact")),
    "rr2 (stronger clone pair)": lambda: (lambda eps: _audit(rr2_count_setup(100, 2.0, mechanism=RR2(100, 2.0)), eps,
                                                             method="tight")),
    "rr2 (local-rr-sum)": lambda: _protocol("local-rr-sum", 100, eps=2.0),
    "blanket-sum level, weak": lambda: _blanket("weak"),
    "blanket-sum level, strong": lambda: _blanket("strong"),
    "central-laplace-sum": lambda: _protocol("central-laplace-sum", 1000, eps=1.0),
    "central-dlap-sum": lambda: _protocol("central-dlap-sum", 1000, eps=1.0),
    "ikos-sum": lambda: _protocol("ikos-sum", 1000, eps=1.0),
    "cheu-sum": lambda: _protocol("cheu-sum", 1000, eps=1.0, delta=1e-6),
}


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


@functools.lru_cache(maxsize=None)
def _row(name: str):
    return ROWS[name]()


@functools.lru_cache(maxsize=None)
def values(name: str, eps: float) -> tuple[float, float]:
    """(audit δ_lower, accountant δ_upper) of a row at ε, computed once per session."""
    return _row(name)(eps)


def computed(name: str, eps_values) -> tuple[list[str], list[str], list[str]]:
    lows, ups, ratios = [], [], []
    for eps in eps_values:
        low, up = values(name, eps)
        lows.append(format(low, ".3g"))
        ups.append(format(up, ".3g"))
        ratios.append(format(low / up, ".2f") if up > 0 else "n/a")
    return lows, ups, ratios


def test_the_table_has_exactly_the_computed_rows():
    assert set(doc_rows()) == set(ROWS)


@pytest.mark.parametrize("name", list(ROWS))
def test_table_row_is_recomputed(name):
    eps, lows, ups, ratios = doc_rows()[name]
    assert computed(name, eps) == (lows, ups, ratios)


# ------------------------------------------------------------------------------ the prose below the table
SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _prose() -> str:
    """The paragraphs between the table and the next code block, with line breaks as spaces."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(HEADER)
    start = text.index("\n\n", start)
    end = text.index("```", start)
    return " ".join(text[start:end].split())


def _assert_in_prose(fragment: str):
    assert fragment in _prose(), f"docs/validation.md should say: {fragment!r}"


def _slashed(xs, fmt: str) -> str:
    return " / ".join(format(x, fmt) for x in xs)


def _pct(xs) -> str:
    """Shares printed as whole per cent: 0.947 -> '95 %'."""
    return " / ".join(f"{100 * x:.0f} %" for x in xs)


def _sci(x: float) -> str:
    """2.98e-8 -> '3.0·10⁻⁸'."""
    mant, exp = format(x, ".1e").split("e")
    return f"{mant}·10{str(int(exp)).translate(SUP)}"


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return max(float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0))),
               float(np.sum(np.maximum(q - math.exp(eps) * p, 0.0))))


def _eps(name: str) -> list[float]:
    return doc_rows()[name][0]


def krr_histogram_exact(eps_values) -> list[float]:
    """Exact δ of the released histogram of the k-RR worst case (n = 100, k = 4, ε0 = 2): the others' cells
    (N_a, N_b, N_c, N_d) are Mult(99; γ/4, γ/4, 1 − γ + γ/4, γ/4), plus the target's report, enumerated."""
    gamma = KRR.from_eps0(100, 4, 2.0, "weak").gamma
    g = gamma / 4
    others = [g, g, 1 - gamma + g, g]
    N = 99
    a, b, c = (x.ravel() for x in np.meshgrid(*[np.arange(N + 1)] * 3, indexing="ij"))
    keep = a + b + c <= N
    a, b, c = a[keep], b[keep], c[keep]
    w = stats.multinomial.pmf(np.stack([a, b, c, N - a - b - c], axis=1), N, others)
    laws = []
    for target in ([1 - gamma + g, g, g, g], [g, 1 - gamma + g, g, g]):  # the target holds a (X) or b (X')
        law = np.zeros((N + 2,) * 3)
        for j, pj in enumerate(target):
            np.add.at(law, (a + (j == 0), b + (j == 1), c + (j == 2)), w * pj)
        laws.append(law.ravel())
    assert all(abs(law.sum() - 1) < 1e-12 for law in laws)
    return [_hockey(laws[0], laws[1], eps) for eps in eps_values]


def test_prose_krr_exact_histogram():
    eps = _eps("k-RR, weak relation")
    exact = krr_histogram_exact(eps)
    lows, weak = zip(*(values("k-RR, weak relation", e) for e in eps))
    assert all(lo <= ex <= up for lo, ex, up in zip(lows, exact, weak))  # audit <= exact <= weak bound
    _assert_in_prose(f"(N_a, N_b, N_c)) is {_slashed(exact, '.3g')},")
    gaps = [100 * (up - ex) / ex for ex, up in zip(exact, weak)]
    _assert_in_prose(f"upper bound by {_slashed(gaps, '.1g').replace(' /', ' % /')} %")
    _assert_in_prose(f"the audit reaches {_pct(lo / ex for lo, ex in zip(lows, exact))} of it. The larger gap")


def test_prose_clopper_pearson_floor():
    """q_hi for 0 hits among T/2 evaluation samples at confidence 1 − α/2 (run_audit without --delta)."""
    T, alpha = TRIALS, 0.05
    q_hi = stats.beta.ppf(1 - alpha / 2, 1, T - T // 2)
    _assert_in_prose(f"q_hi = {q_hi * T:.2g}/T,")
    _assert_in_prose(f"well above e^ε·{q_hi * T:.2g}/T.")


def test_prose_blanket_level_sees_nothing_at_its_own_target():
    proto = _blanket_protocol()
    assert proto.privacy().eps == 1.0 and proto.privacy().delta <= 1e-6
    assert _blanket_audit(1.0) == 0.0
    _assert_in_prose("(ε = 1, δ = 10⁻⁶) an audit of 10⁶ samples sees nothing (δ_lower = 0)")
    setting = doc_settings()["blanket-sum level, weak"]
    assert f"{proto.params['k'] + 1}-ary RR, γ = {proto.params['gamma']:.3g}" in setting


def test_prose_rr2_exact_is_the_audited_data_set():
    eps = _eps("rr2 (exact)")
    flip = 1 / (math.exp(2.0) + 1)
    others = stats.binom.pmf(np.arange(100), 99, flip)  # the 99 others hold 0
    P, Q = np.convolve(others, [1 - flip, flip]), np.convolve(others, [flip, 1 - flip])
    exact = [_hockey(P, Q, e) for e in eps]
    lows, ups = zip(*(values("rr2 (exact)", e) for e in eps))
    for ex, up in zip(exact, ups):
        # the mechanism's true delta (worst over every data set) is this data set's at these eps
        assert ex <= up <= ex * (1 + 1e-9)
    assert values("rr2 (local-rr-sum)", eps[0]) == pytest.approx(values("rr2 (exact)", eps[0]), rel=1e-9)
    clones = [values("rr2 (stronger clone pair)", e)[1] for e in eps]
    assert all(c > 1.2 * ex for c, ex in zip(clones, exact))  # the dominating pair is not attained here
    _assert_in_prose(f"and the audit reaches {_pct(lo / ex for lo, ex in zip(lows, exact))} of it; the stronger")


def test_prose_central_sums():
    ratios = [lo / up for name in ("central-laplace-sum", "central-dlap-sum", "ikos-sum")
              for lo, up in (values(name, e) for e in _eps(name))]
    _assert_in_prose(f"reach {100 * min(ratios):.0f} %–{100 * max(ratios):.0f} % of the accountant's curves")
    eps = _eps("ikos-sum")
    assert _eps("central-dlap-sum") == eps
    dlap = [values("central-dlap-sum", e) for e in eps]
    ikos = [values("ikos-sum", e) for e in eps]
    assert [d[0] for d in dlap] == [i[0] for i in ikos]  # the same audit figures
    sigma = registry.create("ikos-sum", 1000, eps=1.0).parameters.sigma
    tv = [(1 + math.exp(e)) * 2.0 ** -sigma for e in eps]
    for (_, d_up), (_, i_up), t in zip(dlap, ikos, tv):
        assert i_up - d_up == pytest.approx(t, rel=1e-3)  # what IKOS's curve adds to the DLap profile
    _assert_in_prose(f"adds (1 + e^ε)2^{{−σ}} = {' / '.join(_sci(t) for t in tv)} (σ = {sigma:.4g})")


def test_prose_cheu_all_zeros_count():
    eps = _eps("cheu-sum")
    proto = registry.create("cheu-sum", 1000, eps=1.0, delta=1e-6)
    r, f = proto.params["messages"], proto.params["gamma"] / 2
    n0 = 999 * r
    base = stats.binom.pmf(np.arange(n0 + 1), n0, f)  # the others' bits, all 0
    P = np.convolve(base, stats.binom.pmf(np.arange(r + 1), r, f))
    Q = np.convolve(base, stats.binom.pmf(np.arange(r + 1), r, 1 - f))
    exact = [_hockey(P, Q, e) for e in eps]
    lows, ups = zip(*(values("cheu-sum", e) for e in eps))
    described = [res.delta_lower for res in account(proto.mechanism(), eps=eps).results]
    for ex, d, up in zip(exact, described, ups):
        assert d <= ex <= up and ex - d <= 1e-9  # the description's lower end is this count's δ
    _assert_in_prose(f"(the description's lower end) is {_slashed(exact, '.3g')}, "
                     f"{_pct(ex / up for ex, up in zip(exact, ups))} of the upper bound")
    _assert_in_prose(f"the audit reaches {_pct(lo / ex for lo, ex in zip(lows, exact))} of it.")


def doc_settings() -> dict[str, str]:
    """{first column: setting column} of the doc's table."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    out = {}
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out[cells[0]] = cells[1]
    return out


def test_settings_column_figures():
    settings = doc_settings()
    for name in ("central-dlap-sum", "ikos-sum"):
        p = registry.create(name, 1000, eps=1.0).params["p"]
        assert re.search(rf"\bp = {p}\b", settings[name])
    r = registry.create("cheu-sum", 1000, eps=1.0, delta=1e-6).params["messages"]
    assert re.search(rf"\br = {r}\b", settings["cheu-sum"])


if __name__ == "__main__":  # print the rows as the doc shows them
    for name, (eps, *_rest) in doc_rows().items():
        lows, ups, ratios = computed(name, eps)
        print(f"| {name} | | {' / '.join(f'{e:g}' for e in eps)} | {' / '.join(lows)} | {' / '.join(ups)} | "
              f"{' / '.join(ratios)} |")
