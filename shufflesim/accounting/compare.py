"""Every applicable method on one question, side by side (``shufflesim account … --compare``), and the
``best`` method: the smallest certified upper bound among them, naming the winner.

:func:`compare` runs, for one mechanism description and one question (δ(ε) at given ε or ε(δ) at given δ,
``compositions`` uses), every method the description lists, plus

* the adversary variants of a description with a ``relation`` (k-RR: strong-1d, strong, weak, shuffled), each marked
  with the question it answers — a pair for a stronger adversary is a valid bound for a weaker one, not
  the reverse;
* for any description with a local ``eps0``: the stronger clone pair (Feldman, McMillan, Talwar 2023) and
  the variation-ratio pair (Wang et al. 2024; applicable only with the parameters shufflesim verifies,
  docs/theory.md#pairs-variation-ratio);
* Bennett's bound in its original-2019 form, listed but never certified.

Each row carries the interval, whether it is a certified upper bound *for the question asked*
(``valid``), the time, and the ratio of its upper end to the best valid one.  Methods that do not apply
are listed with the reason.  :func:`best` is the smallest valid upper bound per value; Biswas et al.'s
eq 6 (not certified) and the original-2019 Bennett form never win.

Lower ends (issue 17): a row that accounts another description than the one asked (a stronger adversary's
pair, the stronger clone pair of any ε0-LDP randomiser) bounds the question from above only: its interval
is reported as that pair's bracket (``bound_pair``/``bound_lower``/``bound_upper``) and its lower end is
None.  ``best``'s lower end is the largest lower end among the rows that answer the question itself (each a
genuine construction: the mechanism's own view, or explicit data sets), named in its notes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from shufflesim.accounting.model.mechanism import PAIR_METHODS, Composition, Mechanism, Relation
from shufflesim.accounting.model.provenance import BorrowedLower
from shufflesim.accounting.model.queries import check_question
from shufflesim.accounting.model.results import (AccountReport, NotApplicable, as_dominating, lower_of,
                                           upper_of)
from shufflesim.errors import NotApplicableError, ShufflesimError

#: published methods that are not certified upper bounds (listed, never the best)
NOT_CERTIFIED = {"biswas": "Biswas et al.'s eq 6 as published: not a certified bound (docs/theory.md#bounds-biswas)",
                 "bennett[original-2019]": "the original-2019 Bennett form: not a valid bound (FINDINGS.md)"}

#: (mechanism kind, method) -> why the method's pair answers one data set only (listed, never the best)
ONE_DATA_SET = {("rr2", m): "the all-zeros data set only (seed 001 eq 4.1; docs/theory.md#pairs-rr2, FINDINGS.md "
                "item 3): other data sets have a larger delta" for m in ("tight-koskela", "exact-koskela")}

#: adversaries ordered by what they see (a pair for a later one bounds every earlier one)
_SEES = {Relation.SHUFFLED: 0, Relation.WEAK: 1, Relation.STRONG: 2}


@dataclass(frozen=True)
class _LDPPair(Mechanism):
    """Any ε0-LDP randomiser among n users, accounted by one named clone-mixture pair (internal helper)."""

    kind = "ldp"
    n: int = 1
    eps0: float = 1.0
    methods = ("tight",)

    def pair(self, method: str, tail_bound: float | None = None):
        from shufflesim.accounting.pairs.common import DEFAULT_TAIL_BOUND_MD
        from shufflesim.accounting.pairs.variation import stronger_clones_pair

        return stronger_clones_pair(self.n, self.eps0, tail_bound=DEFAULT_TAIL_BOUND_MD if tail_bound is None
                                    else tail_bound)


@dataclass
class Row:
    """One method's answer in a comparison."""

    method: str
    applicable: bool
    valid: bool
    validity: str
    results: list = field(default_factory=list)
    seconds: float = 0.0
    reason: str = ""
    ratios: list = field(default_factory=list)
    #: the accountant method the row ran (``method`` is its label: ``tight[weak]`` runs ``tight``)
    runs: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"method": self.method, "applicable": self.applicable, "valid": self.valid,
                             "validity": self.validity, "seconds": self.seconds}
        if self.applicable:
            d["results"] = [r.to_dict() for r in self.results]
            d["ratio_to_best"] = self.ratios
        else:
            d["reason"] = self.reason
        return d


@dataclass
class Comparison:
    mechanism: str
    params: dict
    question: dict
    rows: list[Row]
    best: list  # per value: (method, result) or None

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "params": self.params, "question": self.question,
                "rows": [r.to_dict() for r in self.rows],
                "best": [None if b is None else {"method": b[0], **b[1].to_dict()} for b in self.best]}


_upper = upper_of

#: the PLD accountant's methods: between equal lower ends, one of theirs is preferred (:func:`compare`)
PLD_METHODS = frozenset({"tight", "tight-koskela"})


def _candidates(mech: Mechanism):
    """(label, mechanism to account, method, bennett variant, validity text, valid, reason if N/A)."""
    from shufflesim.accounting.pairs.variation import VR_REFUTED

    out = []
    rel = getattr(mech, "relation", None)
    for m in mech.methods:
        if m == "tight" and rel is not None and hasattr(mech, "relation"):
            continue  # the adversary variants below include it
        if m in NOT_CERTIFIED:
            out.append((m, mech, m, "fixed", NOT_CERTIFIED[m], False, None))
        elif (mech.kind, m) in ONE_DATA_SET:
            out.append((m, mech, m, "fixed", ONE_DATA_SET[(mech.kind, m)], False, None))
        elif rel is not None and rel is not Relation.SHUFFLED and m not in PAIR_METHODS:
            # a published bound bounds the shuffled reports, not an adversary who also sees blanket coins
            out.append((m, mech, m, "fixed", f"answers another question (the shuffled reports; the {rel.value} "
                        "adversary also sees blanket coins)", False, None))
        else:
            out.append((m, mech, m, "fixed", "certified", True, None))
        if m == "bennett":
            label = "bennett[original-2019]"
            out.append((label, mech, m, "original-2019", NOT_CERTIFIED[label], False, None))
    if hasattr(mech, "relation") and "tight" in mech.methods:
        for r in Relation:
            variant = replace(mech, relation=r)  # type: ignore[type-var]
            label = f"tight[{r.value}]"
            if rel is None:
                out.append((label, variant, "tight", "fixed", f"certified for the {r.value} adversary (no adversary "
                            "was asked: not compared)", False, None))
            elif r == rel:
                out.append((label, variant, "tight", "fixed", "certified", True, None))
            elif r in _SEES and rel in _SEES and _SEES[r] > _SEES[rel]:
                out.append((label, variant, "tight", "fixed", f"certified (the {r.value} adversary sees more)", True,
                            None))
            else:
                out.append((label, variant, "tight", "fixed", f"answers another question (the {r.value} adversary)",
                            False, None))
    eps0 = getattr(mech, "eps0", None)
    if mech.kind != "clones" and eps0 is not None and not isinstance(mech, Composition):
        if not (math.isfinite(eps0) and eps0 > 0):
            out.append(("stronger-clones", mech, None, "fixed", "", False, "no finite local eps0"))
        else:
            # the clone reductions bound the shuffled reports alone: valid unless the question gives the
            # adversary side information (the k-RR adversaries also see users' blanket coins)
            side = rel is not None and rel is not Relation.SHUFFLED
            text = (f"answers another question (the shuffled reports alone; the {rel.value} adversary also sees "
                    "blanket coins)") if side else "certified (any eps0-LDP randomiser; docs/theory.md#pairs-stronger-clones)"
            out.append(("stronger-clones", _LDPPair(mech.n, eps0), "tight", "fixed", text, not side, None))
            k = getattr(mech, "k", 2)
            if k == 2:
                out.append(("variation-ratio", _LDPPair(mech.n, eps0), "tight", "fixed",
                            text.replace("any eps0-LDP randomiser", "binary RR parameters = stronger clones"),
                            not side, None))
            else:
                out.append(("variation-ratio", mech, None, "fixed", "", False, VR_REFUTED))
    return out


def compare(mechanism: Mechanism, *, run, eps=None, delta=None, compositions: int = 1, composition: str = "basic",
            numerics: dict | None = None) -> Comparison:
    """Every applicable method on one question (module docstring); ``run`` is the accountant
    (:func:`shufflesim.accounting.account.account`, passed in so that this module does not import it)."""
    eps, delta, compositions = check_question(eps=eps, delta=delta, compositions=compositions)  # the one validator
    rows: list[Row] = []
    for label, mech, method, variant, validity, valid, reason in _candidates(mechanism):
        if method is None:
            rows.append(Row(label, False, False, validity, reason=reason))
            continue
        t0 = time.perf_counter()
        try:
            rep = run(mech, eps=eps, delta=delta, method=method, compositions=compositions,
                          composition=composition, bennett_variant=variant, numerics=numerics)
        except (NotApplicableError, ShufflesimError, MemoryError) as exc:
            msg = str(exc)
            rows.append(Row(label, False, False, validity, seconds=time.perf_counter() - t0,
                            reason=msg if len(msg) <= 240 else msg[:200] + " ..."))
            continue
        res = list(rep.results)
        if mech != mechanism:  # another description (a stronger adversary, any eps0-LDP randomiser): upper only
            res = [as_dominating(r, label) for r in res]
        if all(isinstance(r, NotApplicable) or not getattr(r, "applicable", True) for r in res):
            rows.append(Row(label, False, False, validity, seconds=time.perf_counter() - t0,
                            reason="; ".join(dict.fromkeys(getattr(r, "reason", "") for r in res))))
            continue
        rows.append(Row(label, True, valid, validity, res, time.perf_counter() - t0, runs=method))
    n_values = len(eps if eps is not None else delta)
    best: list = []
    for i in range(n_values):
        cands = [(_upper(r.results[i]), r.method, r.results[i]) for r in rows
                 if r.applicable and r.valid and getattr(r.results[i], "applicable", True)]
        cands = [c for c in cands if not math.isnan(c[0])]
        if not cands:
            best.append(None)
            continue
        u, m, res = min(cands, key=lambda c: c[0])
        lows = [(lower_of(r.results[i]), r) for r in rows if r.applicable and r.method not in NOT_CERTIFIED
                and getattr(r.results[i], "applicable", True) and lower_of(r.results[i]) is not None]
        low, low_row = max(lows, key=lambda c: (c[0], c[1].runs in PLD_METHODS)) if lows else (None, None)
        if low_row is not None and low_row.method != m:  # the winner's own lower end is not the largest genuine one
            other = low_row.results[i]
            borrowed = BorrowedLower(low_row.method, other.provenance.lower_ends)
            res = res.with_ends(lower=min(low, _upper(res))).with_provenance(res.provenance.add(borrowed))
        best.append((m, res))
    for r in rows:
        if r.applicable:
            r.ratios = [(_upper(res) / _upper(b[1]) if b is not None and _upper(b[1]) > 0 else None)
                        for res, b in zip(r.results, best)]
    question = {"eps": eps} if eps is not None else {"delta": delta}
    question["compositions"] = compositions
    return Comparison(mechanism.kind, mechanism.params(), question, rows, best)


def best(mechanism: Mechanism, *, run, eps=None, delta=None, compositions: int = 1, composition: str = "basic",
         numerics: dict | None = None):
    """The ``best`` method: per value, the smallest certified upper bound of :func:`compare`, naming the winner."""
    t0 = time.perf_counter()
    eps, delta, compositions = check_question(eps=eps, delta=delta, compositions=compositions)  # lists of floats
    cmp = compare(mechanism, run=run, eps=eps, delta=delta, compositions=compositions, composition=composition,
                  numerics=numerics)
    results, notes = [], []
    for b, v in zip(cmp.best, eps if eps is not None else delta):
        if b is None:
            kw = {"eps": v} if eps is not None else {"delta": v}
            results.append(NotApplicable("best", "no certified method applies", **kw))
            continue
        method, res = b
        results.append(replace(res, method=method))
        what = f"eps={v:.6g}" if eps is not None else f"delta={v:.3g}"
        others = sorted((_upper(r.results[len(results) - 1]), r.method) for r in cmp.rows
                        if r.applicable and r.valid and r.method != method)
        runner = f"; next: {others[0][1]} ({others[0][0]:.6g})" if others else ""
        notes.append(f"best at {what}: {method} ({_upper(res):.6g}){runner}")
        notes += [nt for nt in res.notes if nt not in notes]
    params = dict(mechanism.params())
    return AccountReport(mechanism.kind, params, "best", compositions, tuple(results), tuple(notes),
                         time.perf_counter() - t0, None)


def format_table(cmp: Comparison) -> str:
    """The comparison as a text table."""
    q = cmp.question
    key = "eps" if "eps" in q else "delta"
    values = q[key] if isinstance(q[key], (list, tuple)) else [q[key]]
    lines = [f"{cmp.mechanism}  " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in cmp.params.items()),
             f"question: {'delta(eps)' if key == 'eps' else 'eps(delta)'}, {q['compositions']} composition(s)"]
    for i, v in enumerate(values):
        lines.append(f"\n{key}={v:.6g}")
        lines.append(f"  {'method':<24} {'lower':>12} {'upper':>12} {'x best':>8} {'seconds':>8}  {'pair bracket':<25}  "
                     "validity")
        for r in cmp.rows:
            if not r.applicable:
                continue
            res = r.results[i]
            if not getattr(res, "applicable", True):
                lines.append(f"  {r.method:<24} {'n/a':>12} {'n/a':>12} {'':>8} {r.seconds:8.3f}  {'':<25}  not applicable: "
                             f"{res.reason}")
                continue
            d = res.to_dict()
            lo = d.get("eps_lower", d.get("delta_lower"))
            up = d.get("eps_upper", d.get("delta_upper"))
            ratio = r.ratios[i]
            lo_s = "n/a" if lo is None else f"{lo:.6g}"
            up_s = "inf" if up is None or not math.isfinite(up) else f"{up:.6g}"
            rs = "" if ratio is None or not r.valid else f"{ratio:.3f}"
            pb = "" if d.get("bound_pair") is None else (
                f"[{'n/a' if d['bound_lower'] is None else format(d['bound_lower'], '.6g')}, "
                f"{'inf' if d['bound_upper'] is None else format(d['bound_upper'], '.6g')}]")
            lines.append(f"  {r.method:<24} {lo_s:>12} {up_s:>12} {rs:>8} {r.seconds:8.3f}  {pb:<25}  {r.validity}")
        b = cmp.best[i]
        lines.append(f"  best: {b[0]} ({_upper(b[1]):.6g})" if b else "  best: none")
    na = [r for r in cmp.rows if not r.applicable]
    if na:
        lines.append("\nnot applicable:")
        lines += [f"  {r.method}: {r.reason}" for r in na]
    return "\n".join(lines)
