"""The restructuring of issue 7 changes no number: every command of tests/golden/commands.txt prints the
JSON recorded in tests/golden/cli_outputs.json before the change (recorded by tests/golden/record.py).

Timing fields (``seconds``) are ignored.  Floats are compared to a relative tolerance ``FLOAT_RTOL`` (see there
for why); integers, strings, booleans and None are compared exactly, since there exactness is the point
(counts, seeds, method names, verdicts).  Keys added since the recording are listed in ``ADDED_KEYS``
(new information, not changed numbers); deliberate fixes that change a recorded value are listed in
``DELIBERATE`` with the reason — each one is also stated in the issue's note.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from shufflesim.cli.main import main

GOLDEN = Path(__file__).resolve().parent / "golden"
IGNORED = {"seconds"}
#: Every recorded float may move by this much relative to the recording, because numpy and scipy may change a
#: float by a few ulps between releases within the declared ranges (summation order, SIMD kernels, libm: numpy
#: 2.4.6 / scipy 1.17.1 moved cheu-sum's 2.499992815379102e-07 to 2.4999928153791015e-07, 1 ulp), and such a
#: change passes through the sums, calibrations and root-finders behind a printed number.  1e-12 (~4500 ulps)
#: is far below any deliberate change of a printed value (those are >= 1e-9 relative, see NEAR) and below
#: what a real behaviour change moves, so the comparison still catches every change of the method.
FLOAT_RTOL = 1e-12
#: The atom count in an exact accountant's note ("exact over 11 atoms") is not compared: atoms are merged where
#: their float privacy losses are equal and a pair is treated as symmetric where both directions' atoms are
#: equal as floats, so the count moves with the library's round-off (numpy 1.26 / scipy 1.11: 15 and 92 atoms
#: where 2.4 / 1.17 give 11 and 98) while the certified values, compared above, stay the same.
_ATOM_COUNT = re.compile(r"exact over \d+ atoms")
#: keys that outputs may carry beyond the recording (new fields, not changed numbers)
ADDED_KEYS: set[str] = {"accuracy_met", "mode_reason", "ci_method_at_level", "tv_ci_method", "engine", "engine_reason",
                        "bound_pair", "bound_lower", "bound_upper"}
#: (command, key path) -> why the recorded value was deliberately changed (the path is then not compared)
DELIBERATE: dict[tuple[str, str], str] = {}
#: command -> why its recording was deliberately replaced after the restructuring (tests/golden/record.py's
#: run() on the tree of the change; every other command keeps the recording made before issue 7)
_CAP = ("issue 8: no answer for shuffled eps0-LDP randomisers may exceed the local guarantee; 4 uses of "
        "eps0 = 0.5 are 2-DP, so the advanced-composition 2.868 is capped at 2 with a note")
_CLIP = ("issue 8: the Student-t interval of the MSE left its support (its lower end was negative); it is "
         "clipped to [0, inf) and ci_method says so (intervals within the support are unchanged)")
_STRONGER = ("issue 9: the tight (and exact) pair for any eps0-LDP randomiser is Feldman, McMillan, Talwar's "
             "stronger clone pair (SODA 2023; docs/theory.md#pairs-stronger-clones), checked against brute force "
             "of real randomisers; eps/delta are smaller (e.g. 4-fold n=1e4 eps0=4: 1.2617 -> 0.8539); seed 001's "
             "eq 6.1 pair is --method tight-koskela")
_RR2 = ("review of issues 7-9: rr2's old tight/exact pair (seed 001 eq 4.1) is exact for the all-zeros data set "
        "only and below the truth for others (n=10, eps0=2, eps=0.2: 0.2346 vs 0.2794 for a mixed data set, "
        "FINDINGS.md item 3), so it is no bound for the mechanism; tight/exact are now the stronger clone pair, "
        "which binary RR attains (larger values), and the old pair is --method tight-koskela / exact-koskela")
_SHUFFLED = ("issue 9 (session 3): the protocols certify the view they release, the shuffled reports "
             "(--adversary shuffled, the default), by the stronger clone pair at the randomiser's eps0, instead of "
             "the strong adversary's pair, which also sees every blanket coin: krr n=2000 k=5 eps0=1 central eps "
             "0.3244 -> 0.1118; blanket-sum tight gamma 0.0670 -> 0.0618 (worst MSE 160.0 -> 150.5); "
             "recursive-sum tight on adult-age worst MSE 123.4 -> 120.7. --adversary strong gives the old values. "
             "Re-recorded again after review: eps0 computed from gamma is raised by maths.rr.eps0_upper (1e-14 "
             "relative) instead of two ulps, which moves these values by ~1e-14 (recursive-sum's delta by 5e-10 "
             "relative)")
_EXACT_RR2 = ("issue 17: rr2's default method is exact, the mechanism's true value over every neighbouring data set "
              "(accounting.exact_rr2, checked against an O(n^2) oracle and brute force); the stronger clone pair is "
              "a bound binary RR does not attain in general (n=1000, eps0=2, eps=0.3: 4.169e-5 -> 2.931e-6; n=12 "
              "exact at eps=0.5: 0.21544 -> 0.17867); with 4 compositions the upper end is still the pair composed "
              "and the lower end is now the composed exact eps of the worst data set (0.8263 -> 0.6429), not the "
              "pair's own; feldman-numerical's lower end (its pair's, above the truth at n = 2) is the genuine one "
              "of the data sets 'all others hold 0 / 1'")
_HONEST = ("issue 17: a lower end bounds the mechanism's own view, never an intermediate bound. Methods whose "
           "pair only dominates the view (stronger clones for clones and krr --adversary shuffled, Feldman et al.'s "
           "pair of feldman-numerical, the stated strong-1d pair, the full histogram for Biswas et al.'s count) "
           "report that pair's bracket as bound_pair/bound_lower/bound_upper (the upper ends are unchanged) and "
           "take their lower end from explicit data sets (binary RR's all-zeros data set for clones, all others "
           "holding a third value for k-RR, the count's exact delta for biswas) or none (strong-1d; rr2's "
           "feldman-numerical until rr2 gets its own construction): e.g. clones n=8 eps0=1 eps=0.5 exact: "
           "delta_lower 0.040215 -> 0.032102. The krr protocol's central eps for the shuffled reports is the "
           "smallest certified upper end among the stronger clone, strong and (n <= 2e4) weak pairs, named in the "
           "notes: n=2000 k=5 eps0=1: [0.111776, 0.111776] (stronger clones' bracket) -> [0.0814785, 0.0815321] "
           "(weak pair)")
_MERGED_LOWER = ("issue 17 (both halves merged): the one binary-RR lower end (mechanisms._common.binary_rr_lower, used "
                 "by clones, rr2's tight and feldman-numerical, krr with k = 2) is exact_rr2's: for a single use up to "
                 "n = 1e4 the worst case over every data set (clones n=8 eps0=1 eps=0.5: 0.0321017212202882 -> "
                 "0.0321017212202212, the same data set now certified from below with exact_rr2's log-space bracket), "
                 "above that the data sets 'all others hold 0 / 1' (n=1e6 eps0=2 delta=1e-8: eps_lower 0.0097088034604 "
                 "-> 0.0097088034171); eps0 is lowered by the eps0_upper margin first. Upper ends unchanged")
_ISSUE21 = ("issue 21 (session 5): composed eps searches keep every evaluated point and refine the FFT grid only as far "
            "as eps_rtol asks (upper ends move within the 1e-9 search tolerance: krr strong 16-fold 3.0139532475 -> "
            "3.0139532443; rr2 4-fold 0.82626927575 -> 0.82626927597); a composed data-set lower end is refined to "
            "2.5e-4 relative (rr2 4-fold eps_lower 0.64287022 -> 0.64284055, clones 0.62554025 -> 0.62551004, still "
            "certified from below); feldman-numerical evaluates the binomial in a window with Loader's form and "
            "bounds the tails by Chernoff (its gammaln arithmetic drifted 4e-9 at n = 1e6, beyond its 1e-9 margin); "
            "the binomial log-PMF compensates the rounding of n p (Dekker), moving values by ~1e-13")
_ISSUE21_S6 = ("issue 21 (session 6): the blanket and recursive tight calibrations place their evaluations by secant "
               "steps on log(-log delta) and return another evaluated feasible point within the same tolerance "
               "(blanket gamma 0.06184200 -> 0.06184135, recursive gammas ~3.7e-4 relative); cheu's blanket-binomial "
               "bound is computed from tails (gamma 0.350699 -> 0.350709, within the calibration's 1e-4 bracket); "
               "the simulated errors move with gamma under the same seed")
_IKOS_WIDENED = ("ikos-sum reports the mechanism's own certified delta (the closed form widened by the accountant's "
                 "1e-12 float margin; the bare closed form was 1e-12 relative below it)")
RERECORDED: dict[str, str] = {
    "simulate krr --n 2000 --k 5 --eps0 1 --data zipf:1.1 --trials 20 --seed 1": _SHUFFLED + "; then " + _HONEST,
    "simulate krr --n 2000 --k 5 --gamma 0.3 --data uniform --trials 20 --seed 2": _SHUFFLED + "; then " + _HONEST,
    "simulate blanket-sum --n 5000 --eps 1 --mode tight --data uniform --trials 20 --seed 5": _SHUFFLED + "; then " + _ISSUE21_S6,
    "simulate recursive-sum --eps 1 --messages 2 --mode tight --data adult-age --trials 20 --seed 6": _SHUFFLED + "; then " + _ISSUE21_S6,
    "account rr2 --n 1000 --eps0 2 --eps 0.3 0.5 1": _EXACT_RR2,  # earlier: _RR2
    "account rr2 --n 1000 --eps0 2 --delta 1e-6 --compositions 4": _EXACT_RR2 + "; then " + _ISSUE21,  # earlier: _RR2
    "account rr2 --n 12 --eps0 2 --eps 0.5 --method exact": _EXACT_RR2,  # earlier: _RR2
    "account clones --n 1000000 --eps0 2 --delta 1e-8": _STRONGER + "; then " + _HONEST + "; then " + _MERGED_LOWER,
    "account clones --n 10000 --eps0 4 --delta 1e-6 --compositions 4": _STRONGER + "; then " + _HONEST + "; then " + _MERGED_LOWER + "; then " + _ISSUE21,
    "account clones --n 8 --eps0 1 --eps 0.5 --method exact": _STRONGER + "; then " + _HONEST + "; then " + _MERGED_LOWER,
    "account rr2 --n 10000 --eps0 0.5 --delta 1e-6 --method erlingsson --compositions 4 --composition advanced": _CAP,
    "simulate cheu-sum --n 2000 --eps 1 --data uniform --trials 20 --seed 8": _CLIP + "; then " + _ISSUE21_S6,
    "simulate ikos-sum --n 2000 --eps 1 --data uniform --trials 20 --seed 7": _IKOS_WIDENED,
    "table balle2020": _ISSUE21_S6,
    "account rr2 --n 1000 --eps0 2 --eps 0.5 --method feldman-numerical": _HONEST + "; then " + _EXACT_RR2 + "; then " + _MERGED_LOWER + "; then " + _ISSUE21,
    "account krr --n 1000 --k 4 --gamma 0.25 --adversary strong-1d --eps 0.5 1": _HONEST,
    "account krr --n 1000 --k 4 --eps0 2 --eps 0.5 --method feldman-numerical": _HONEST + "; then " + _ISSUE21,
    "account clones --n 100000 --eps0 1 --eps 0.5 --method feldman-numerical": _HONEST + "; then " + _MERGED_LOWER + "; then " + _ISSUE21,
    "account biswas --n 6 --k 3 --eps0 2 --n-x0 1 --eps 1 --method exact-histogram": _HONEST,
    "simulate central-laplace-sum --n 2000 --eps 1 --data uniform --trials 20 --seed 11": _CLIP,
    "account krr --n 1000 --k 4 --gamma 0.25 --adversary strong --delta 1e-6 --compositions 16": _ISSUE21,
}
#: command -> (relative tolerance, reason): floats of these commands may move by at most that much
_BENNETT_CALIBRATOR = (
    "bennett_gamma now uses the one safe-side calibrator (bracket to rtol 1e-9) instead of its own "
    "bisection: gammas move within that tolerance (~1e-9 relative) and what depends on them with them"
)
#: (command, key-path substring) -> (relative tolerance, reason): wider tolerance for those paths only
NEAR_PATHS: dict[tuple[str, str], tuple[float, str]] = {
    ("table balle2020", "/certified_eps_split"): (
        1e-3,
        "the optimised recursive rows' eps split is the argmin of a flat objective (bounded Brent): the ~1e-9 "
        "change of the Bennett gammas moves it by up to ~2e-5 relative while every MSE stays within 1e-6",
    ),
}
_ROOT_LOG = (
    "issue 9 (slow corners): the exact single-use eps(delta) is found by Illinois on log delta with both bounds "
    "read at every evaluated eps (60 -> 11 evaluations at krr weak n=1e4); eps_upper is still an evaluated eps "
    "with certified delta_upper <= delta, but a different one within the root tolerance xtol + rtol eps "
    "(1e-9 + 1e-9 eps: relative >= 2.7e-9 at these eps <= 0.57); the values move by <= 1.7e-9 relative"
)
_BRENT_GAMMAS = (
    "recursive-sum tight: each level's gamma(nu) is a bounded Brent minimiser with xatol 1e-7 on log gamma, so a "
    "few-ulp change of its objective between numpy/scipy releases moves gamma within that tolerance (numpy 1.26 / "
    "scipy 1.11 against 2.4 / 1.17: 1.7e-11 relative) and delta, ~13x as sensitive to the gammas (2.2e-10 relative "
    "against 1.7e-11), and the MSEs with them: 1e-7 x 13 x 1.5 = 2e-6 relative"
)
NEAR: dict[str, tuple[float, str]] = {
    "simulate recursive-sum --eps 1 --messages 2 --mode tight --data adult-age --trials 20 --seed 6": (2e-6, _BRENT_GAMMAS),
    # re-recorded (RERECORDED) between the two root-finder commits: both ends move within the root tolerance
    # 1e-9 + 1e-9 eps, 7.8e-8 relative at eps = 0.013 (observed 5e-9)
    "account clones --n 1000000 --eps0 2 --delta 1e-8": (2e-8, _ROOT_LOG),
    "simulate blanket-sum --n 5000 --eps 1 --mode bennett --data uniform --trials 20 --seed 5": (1e-6, _BENNETT_CALIBRATOR),
    "simulate recursive-sum --n 100000 --eps 1 --messages 2 --mode bennett --data uniform --trials 20 --seed 6": (1e-6, _BENNETT_CALIBRATOR),
    "simulate recursive-sum --n 100000 --eps 1 --messages 2 --mode optimised --data uniform --trials 20 --seed 6": (1e-6, _BENNETT_CALIBRATOR),
    "table balle2020": (1e-6, _BENNETT_CALIBRATOR),
}


def _commands() -> list[str]:
    lines = (GOLDEN / "commands.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


_RECORDED = json.loads((GOLDEN / "cli_outputs.json").read_text())


def _diff(cmd: str, want, got, path: str = "") -> list[str]:
    if (cmd, path) in DELIBERATE:
        return []
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in want:
            if k in IGNORED:
                continue
            if k not in got:
                out.append(f"{path}/{k}: missing")
            else:
                out += _diff(cmd, want[k], got[k], f"{path}/{k}")
        for k in got:
            if k not in want and k not in IGNORED and k not in ADDED_KEYS:
                out.append(f"{path}/{k}: new key (add to ADDED_KEYS if intended)")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: length {len(got)} != recorded {len(want)}"]
        out = []
        for i, (a, b) in enumerate(zip(want, got)):
            out += _diff(cmd, a, b, f"{path}[{i}]")
        return out
    if isinstance(want, float) and isinstance(got, float) and (cmd in NEAR or any(
            c == cmd and sub in path for c, sub in NEAR_PATHS)):
        rels = [NEAR[cmd][0]] if cmd in NEAR else []
        rels += [r for (c, sub), (r, _) in NEAR_PATHS.items() if c == cmd and sub in path]
        rel = max(rels)
        return [] if abs(got - want) <= rel * abs(want) else [f"{path}: {got!r} != recorded {want!r} (rel {rel})"]
    if isinstance(want, float) and isinstance(got, float):
        # a few ulps of library round-off (FLOAT_RTOL); a recorded 0.0 or inf must stay exactly that
        if want == got or abs(got - want) <= FLOAT_RTOL * abs(want):
            return []
        return [f"{path}: {got!r} != recorded {want!r} (rel {FLOAT_RTOL})"]
    if isinstance(want, str) and isinstance(got, str) and "/notes" in path:
        want, got = (_ATOM_COUNT.sub("exact over N atoms", x) for x in (want, got))
    # integers, strings, booleans, None: exactness is the point (counts, seeds, names, verdicts)
    return [] if want == got else [f"{path}: {got!r} != recorded {want!r}"]


@pytest.mark.parametrize("cmd", _commands())
def test_cli_output_matches_recording(cmd, capsys):
    assert cmd in _RECORDED, f"no recording for {cmd!r}: run tests/golden/record.py on the reference tree"
    code = main([*shlex.split(cmd), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    diffs = _diff(cmd, _RECORDED[cmd], json.loads(out.out))
    assert not diffs, "\n".join(diffs[:20])


def _has_path(obj, path: str) -> bool:
    import re

    for key, idx in re.findall(r"/([^/\[]+)|\[(\d+)\]", path):
        if key:
            if not isinstance(obj, dict) or key not in obj:
                return False
            obj = obj[key]
        else:
            if not isinstance(obj, list) or int(idx) >= len(obj):
                return False
            obj = obj[int(idx)]
    return True


def test_deliberate_entries_name_recorded_paths():
    """Each DELIBERATE entry skips exactly one recorded path (and what is under it): no stale entries; each
    RERECORDED command is one of the recorded commands and has its reason."""
    for cmd, path in DELIBERATE:
        assert cmd in _RECORDED, cmd
        assert _has_path(_RECORDED[cmd], path), (cmd, path)
    for cmd, why in RERECORDED.items():
        assert cmd in _RECORDED and cmd in _commands() and len(why) > 40, cmd
    assert _diff("x", {"x": 1}, {"x": 2}, "/elsewhere") != []  # paths not listed are compared


def test_float_tolerance_is_a_few_ulps_not_a_loophole():
    """Golden floats tolerate library round-off (FLOAT_RTOL) and nothing more; other types are exact."""
    import math

    x = 2.499992815379102e-07  # the value numpy 2.4.6 / scipy 1.17.1 moved by one ulp
    assert _diff("x", {"v": x}, {"v": math.nextafter(x, 0.0)}) == []
    assert _diff("x", {"v": x}, {"v": x * (1 + 1e-9)}) != []  # a real change of the value is caught
    assert _diff("x", {"v": 0.0}, {"v": 1e-300}) != []  # a recorded zero stays zero
    assert _diff("x", {"v": 3}, {"v": 4}) != [] and _diff("x", {"v": "tight"}, {"v": "paper"}) != []
    # only the atom count of an exact note is free; the rest of a note is compared
    note = {"notes": ["exact over 11 atoms (single use)"]}
    assert _diff("x", note, {"notes": ["exact over 15 atoms (single use)"]}) == []
    assert _diff("x", note, {"notes": ["exact over 11 atoms (pairwise)"]}) != []
