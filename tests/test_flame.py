"""FLAME (seed 002, issue 13): the protocols' mechanics, encryption, accounting and a short training run."""

from __future__ import annotations

import gc
import math
import re
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.federated import crypto
from shufflesim.federated.accounting import (
    FLAME_PUBLISHED,
    corollary2_condition,
    corollary3_condition,
    flame_privacy,
    paper_pipeline,
    theorem1,
    theorem3,
    theorem4,
)
from shufflesim.federated.encoding import (
    FlameConfig,
    PaddingShuffler,
    achieved_index_privacy,
    aggregate,
    clip_rescale,
    index_privacy_l,
    randomize,
    run_round,
    sample_coordinates,
    strongest_index_privacy,
    topk_select,
)
from shufflesim.federated.randomisers import BlanketRR, LaplaceCoord


def rng(s=0):
    return np.random.default_rng(s)


DOCS_FLAME = Path(__file__).resolve().parent.parent / "docs" / "flame.md"


def assert_as_printed(value: float, printed: str) -> None:
    """``value`` rounds to the decimal string ``printed`` (within half a unit of its last printed digit)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    assert abs(value - float(printed)) <= 0.5 * 10.0**-decimals * (1 + 1e-9), (value, printed)


def docs_flame_table() -> dict[str, list[str]]:
    """docs/flame.md's table of what shufflesim certifies at the paper's setting: protocol -> the printed
    [clones, fixed Bennett, paper original-2019] values."""
    rows = {}
    for line in DOCS_FLAME.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (SS-\w+) \|[^|]*\| \*\*([\d.]+)\*\* \| ([\d.]+) \| ([\d.]+)", line)
        if m:
            rows[m.group(1).lower()] = list(m.groups()[1:])
    assert set(rows) == {"ss-simple", "ss-double", "ss-topk"}, rows
    return rows


def stronger_clones_pld(n: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """Every outcome's privacy loss log P/Q and P-mass of Feldman, McMillan, Talwar's stronger clone pair,
    written here from its definition (C ~ Bin(n-1, 2/(e^eps0+1)), A | C ~ Bin(C, 1/2), D ~ Bern(e^eps0/(e^eps0+1)),
    P = (A + D, C - A + 1 - D), Q = (A + 1 - D, C - A + D)), independently of shufflesim's pair code.
    Outcome (a, c + 1 - a): P = w(c)[q Bin(c, 1/2)(a - 1) + (1 - q) Bin(c, 1/2)(a)], Q the same with a - 1 and a
    swapped, so P/Q = (e^eps0 a + c + 1 - a)/(e^eps0 (c + 1 - a) + a).  The map a -> c + 1 - a swaps P and Q:
    the loss distribution of Q/P is the same, so one direction gives delta."""
    c = np.arange(n)
    cc, a = np.meshgrid(c, np.arange(n + 1), indexing="ij")
    keep = a <= cc + 1
    cc, a = cc[keep], a[keep]
    q = 1.0 / (1.0 + math.exp(-eps0))
    p = binom.pmf(cc, n - 1, 2.0 / (math.exp(eps0) + 1.0)) * (q * binom.pmf(a - 1, cc, 0.5)
                                                             + (1.0 - q) * binom.pmf(a, cc, 0.5))
    loss = np.log((math.exp(eps0) * a + (cc + 1 - a)) / (math.exp(eps0) * (cc + 1 - a) + a))
    return loss, p


def composed_eps_bracket(loss: np.ndarray, p: np.ndarray, steps: int, delta: float, h: float) -> tuple[float, float]:
    """[lo, hi] containing the exact eps(delta) of the ``steps``-fold composition of the pair with these
    losses, by rounding every loss down (lo) and up (hi) to the grid hZ: the composed loss only moves down
    (up), and delta(eps) = E_P[(1 - e^{eps - L})_+] is increasing in L, so hi - lo = steps * h.  The
    convolution power is one FFT on a window around its mean wide enough that Bernstein's inequality puts
    less than 1e-25 of mass outside it on either side; the wrapped mass and the round-off (100 times the
    largest negative entry, in every bin) are added to (subtracted from) delta before solving."""
    out = []
    for rounding in (np.floor, np.ceil):
        j = rounding(loss / h).astype(np.int64)
        pmf = np.bincount(j - j.min(), weights=p)
        x = (np.arange(pmf.size) + j.min()) * h
        mu = float(pmf @ x)
        var = float(pmf @ (x - mu) ** 2)
        m = float(np.max(np.abs(x[pmf > 0] - mu)))
        log_tail = math.log(1e25)
        half = (2 * log_tail * m / 3 + math.sqrt((2 * log_tail * m / 3) ** 2 + 8 * log_tail * steps * var)) / 2
        size = 1 << math.ceil(math.log2(2 * (half / h + steps) + 2))
        shift = int(round(mu / h))
        one = np.zeros(size)
        np.add.at(one, (np.arange(pmf.size) + j.min() - shift) % size, pmf)
        tot = np.fft.irfft(np.fft.rfft(one) ** steps, size)
        err = 2e-25 + size * 100 * max(float(-tot.min()), 2.0**-52 * float(tot.max()))
        pos = np.arange(size)
        s = np.sort((pos - np.where(pos >= size // 2, size, 0) + steps * shift) * h)
        tot = np.clip(tot[np.argsort(pos - np.where(pos >= size // 2, size, 0))], 0.0, None)
        above = np.cumsum(tot[::-1])[::-1]  # P(S >= s_i) and E[e^{s_top - S}; S >= s_i]
        above_w = np.cumsum((tot * np.exp(s[-1] - s))[::-1])[::-1]
        out.append((s, above, above_w, err))

    def delta_at(eps: float, which: int) -> float:
        s, above, above_w, err = out[which]
        i = int(np.searchsorted(s, eps, side="right"))
        d = 0.0 if i == s.size else float(above[i] - math.exp(eps - s[-1]) * above_w[i])
        return d - err if which == 0 else d + err

    ends = []
    for which in (0, 1):
        lo, hi = 0.0, steps * float(np.max(np.abs(loss)))
        while hi - lo > 1e-3 * h:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if delta_at(mid, which) > delta else (lo, mid)
        ends.append(lo if which == 0 else hi)
    return ends[0], ends[1]


# --------------------------------------------------------------------------------------------------
# Users' Randomize
# --------------------------------------------------------------------------------------------------


def test_sampling_is_without_replacement_and_uniform():
    idx = sample_coordinates(4000, 20, 5, rng(1))
    assert idx.shape == (4000, 5)
    assert all(len(set(r)) == 5 for r in idx.tolist())
    counts = np.bincount(idx.ravel(), minlength=20)
    # each coordinate is chosen w.p. k/d = 1/4: 1000 expected, sd sqrt(4000 * 1/4 * 3/4) ~ 27
    assert np.all(np.abs(counts - 1000) < 5 * 27.4)


def test_topk_and_non_top_fills_follow_algorithm_4():
    n, d, k, l = 50, 30, 3, 4
    x = rng(2).random((n, d))
    cfg = FlameConfig("ss-topk", d, n, eps_l=6.0, k=k, n_p=n, l=l)
    top, non = topk_select(x, k, l, rng(3))
    mag = np.abs(x - 0.5)
    for i in range(n):
        assert set(top[i]) == set(np.argsort(-mag[i])[:k])  # the k largest magnitudes
        assert len(set(non[i])) == k * (l - 1) and not set(non[i]) & set(top[i])  # distinct, non-top
    msgs = randomize(cfg, x, rng(4))
    assert msgs.index.size == n * k * l
    for i in range(n):
        mine = msgs.sender == i
        assert len(set(msgs.index[mine])) == k * l
        real = set(msgs.index[mine & (msgs.kind == 0)])
        assert real == set(np.argsort(-mag[i])[:k])
        assert (msgs.kind[mine] == 1).sum() == k * (l - 1)
    # the lk reports are permuted: the real ones are not always first
    first = msgs.kind.reshape(n, k * l)[:, :k]
    assert first.any()


def test_index_privacy_l_and_theorem5():
    beta = 1 / 50
    assert index_privacy_l(1.0, beta) == 50  # Proposition 2: nu = 1 needs l = ceil(1/beta)
    assert achieved_index_privacy(1, beta) == 50.0  # Proposition 2: l = 1 gives no index privacy (nu = 1/beta)
    # Algorithm 4's second term nu/(nu - 1 + beta) = 1.02 > 1 at nu = 1/beta, so its formula asks for l = 2
    # there: a (harmless) inconsistency with Proposition 2, recorded in docs/flame.md
    assert index_privacy_l(50.0, beta) == 2 and index_privacy_l(40.0, beta) == 2
    # the paper's setting: n = 1000, n_p = 333 -> l = 16, nu = 3.125 (seed 002 §Evaluations)
    assert strongest_index_privacy(333, 1000, beta) == (3.125, 16)
    cfg = FlameConfig("ss-topk", 7850, 1000, 78.5, k=157, n_p=333)
    assert cfg.l == 16 and cfg.nu == pytest.approx(3.125)


def test_padding_gives_exactly_n_p_messages_per_coordinate():
    n, d, k, n_p = 90, 25, 3, 40
    cfg = FlameConfig("ss-double", d, n, eps_l=3.0, k=k, n_p=n_p)
    x = rng(5).random((n, d))
    msgs = randomize(cfg, x, rng(6))
    R = cfg.coord_randomiser()
    sh = PaddingShuffler(d, n_p, R.blanket)
    idx, pay, rep = sh.shuffle(msgs.index, msgs.value, rng(7))
    assert np.all(np.bincount(idx, minlength=d) == n_p)
    assert rep.dummies == d * n_p - n * k and rep.overflow == 0
    # the user messages all arrive (as a multiset)
    assert sorted(np.round(pay, 12).tolist()) == sorted(
        np.round(np.concatenate([msgs.value, pay[~np.isin(np.round(pay, 12), np.round(msgs.value, 12))]]), 12).tolist())


def test_overflow_is_dropped_and_reported():
    d, n_p = 4, 3
    sh = PaddingShuffler(d, n_p, LaplaceCoord(1.0).blanket)
    idx = np.array([0, 0, 0, 0, 0, 1])
    idx_out, _, rep = sh.shuffle(idx, np.zeros(6), rng(0))
    assert np.all(np.bincount(idx_out, minlength=d) == n_p)
    assert rep.overflow == 2 and rep.dummies == 0 + 2 + 3 + 3


# --------------------------------------------------------------------------------------------------
# The analyser's aggregate is unbiased
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol,randomiser", [("ss-simple", "laplace"), ("ss-double", "laplace"),
                                                 ("ss-double", "rr"), ("ss-topk", "laplace")])
def test_aggregate_is_unbiased_for_the_clipped_mean(protocol, randomiser):
    n, d, trials = 40, 12, 300
    # SS-Topk: no clipping, so that no two coordinates tie in magnitude (ties are broken at random and the
    # sparsified estimand would then be an average over tie-breaks)
    C = 2.0 if protocol == "ss-topk" else 0.5
    upd = rng(8).normal(0.0, 0.4, (n, d))
    cfg = FlameConfig(protocol, d, n, eps_l=2.0 * (d if protocol == "ss-simple" else 3), C=C,
                      randomiser=randomiser, b=8, k=3, n_p=n, l=2)  # n_p = n: no coordinate can overflow
    clipped = np.clip(upd, -C, C)
    if protocol == "ss-topk":
        # the estimand of SS-Topk: the mean of the top-k sparsified clipped updates
        top, _ = topk_select(clip_rescale(upd, C), 3, 2, rng(0))
        sparse = np.zeros_like(clipped)
        np.put_along_axis(sparse, top, np.take_along_axis(clipped, top, axis=1), axis=1)
        truth = sparse.mean(axis=0)
    else:
        truth = clipped.mean(axis=0)
    est = np.array([run_round(cfg, upd, rng(100 + t)).estimate for t in range(trials)])
    mean, se = est.mean(axis=0), est.std(axis=0, ddof=1) / math.sqrt(trials)
    z = (mean - truth) / se
    # d independent-ish z-scores: all within 4.5 standard errors (fixed seeds; P(fail) < 1e-4 under H0)
    assert np.all(np.abs(z) < 4.5), z
    assert abs(z.mean()) * math.sqrt(d) < 4.5


def test_blanket_distributions():
    g = rng(9)
    lap = LaplaceCoord(1.5)
    assert lap.gamma == pytest.approx(math.exp(-0.75))
    # omega = Lap(1/2, 1/eps) = the mechanism's output for input 1/2
    a, b = lap.blanket(200_000, g), lap.randomise(np.full(200_000, 0.5), g)
    assert abs(np.median(a) - 0.5) < 0.01 and abs(np.mean(np.abs(a - 0.5)) - np.mean(np.abs(b - 0.5))) < 0.01
    rr = BlanketRR(1.0, 4)
    assert rr.gamma == pytest.approx(5 / (math.e + 4))
    y = rr.randomise(np.full(100_000, 0.8), g)
    assert np.mean(rr.unit(y)) - 0.5 == pytest.approx(rr.shrink * 0.3, abs=0.01)


@pytest.mark.parametrize("b", [1, 2, 10, 1000, 10**6])
def test_blanket_rr_gamma_is_krr_gamma_with_b_plus_1_values(b):
    """R_{γ,b} over {0, …, b} is (b + 1)-ary RR: γ = (b + 1)/(e^ε + b) (docs/flame.md), which is maths.rr's
    conversion at k = b + 1 — checked against 60-digit decimal arithmetic on a grid from ε = 1e-300 to
    ε = 1e4, across the switch of forms at 700 and into the subnormal range (745) and underflow."""
    k = b + 1
    for eps in (1e-300, 1e-12, 1e-3, 0.5, 1.0, 5.0, 50.0, 699.9, 700.0, 700.1, 709.8, 740.0, 745.0, 800.0, 1e4):
        with localcontext() as ctx:
            ctx.prec = 60
            exact = Decimal(k) / (Decimal(eps).exp() + Decimal(k - 1))
        ref = float(exact)
        g = BlanketRR(eps, b).gamma
        # a few roundings (relative 4u) plus, where γ is subnormal, the spacing 2^-1074 of e^-ε times k
        bound = 4 * 2.0**-52 * ref + 2 * k * 2.0**-1074
        assert abs(g - ref) <= bound, (eps, g, ref)
        if 0.0 < ref < 1.0:
            # ε-LDP and no more: the largest ratio of report probabilities (1 - γ + γ/k)/(γ/k) is e^ε, evaluated
            # exactly from the float γ; γ's relative error r becomes at most r (1 - e^-ε)/(1 - γ) in that log
            with localcontext() as ctx:
                ctx.prec = 60
                gd = Decimal(g)
                log_ratio = float((1 + Decimal(k) * (1 - gd) / gd).ln())
            assert abs(log_ratio - eps) <= (bound / ref + 2.0**-53) * -math.expm1(-eps) / (1.0 - g), (eps, log_ratio)


# --------------------------------------------------------------------------------------------------
# Encryption
# --------------------------------------------------------------------------------------------------


def test_encryption_round_trip_and_tampering():
    keys = crypto.AnalyserKeys()
    pk = keys.public
    vals = np.array([0.25, -3.5, 1e300, 0.0])
    idx = np.array([3, 0, 7, 3])
    cts = pk.encrypt(vals, idx, round_id=5)
    assert len(cts) == 4 and all(len(c) == crypto.CIPHERTEXT_BYTES for c in cts)
    assert len({c[:32] for c in cts}) == 4  # a fresh ephemeral key per message (unlinkable)
    dec = keys.decryptor()
    out, ok, rep = dec.decrypt(idx, cts, round_id=5)
    assert ok.all() and np.array_equal(out, vals) and rep.rejected == 0
    # replay: the same ciphertext again is rejected
    _, ok2, rep2 = dec.decrypt(idx[:1], cts[:1], round_id=5)
    assert not ok2.any() and rep2.replayed == 1
    dec = keys.decryptor()
    bad = bytearray(cts[0])
    bad[-1] ^= 1
    moved = cts[1]
    _, ok3, rep3 = dec.decrypt(np.array([3, 1, 7, 3]), [bytes(bad), moved, cts[2], b"short"], round_id=5)
    assert ok3.tolist() == [False, False, True, False]
    assert (rep3.tampered, rep3.malformed, rep3.accepted) == (2, 1, 1)  # flipped bit; moved to coordinate 1
    _, ok4, rep4 = keys.decryptor().decrypt(idx[2:3], cts[2:3], round_id=6)  # another round
    assert not ok4.any() and rep4.tampered == 1


def test_shuffler_cannot_decrypt():
    keys = crypto.AnalyserKeys()
    pk = keys.public
    assert not hasattr(pk, "decrypt") and not hasattr(pk, "decryptor")
    with pytest.raises(TypeError):
        crypto.Decryptor(None, object())
    sh = PaddingShuffler(5, 4, LaplaceCoord(1.0).blanket, pk.encrypt)
    # walk everything the shuffler can reach: no private key, no decryptor, no AnalyserKeys
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    seen, stack = set(), [sh]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type) or type(o).__name__ == "module":
            continue
        seen.add(id(o))
        assert not isinstance(o, (X25519PrivateKey, crypto.Decryptor, crypto.AnalyserKeys)), o
        stack.extend(gc.get_referents(o))


def test_encrypted_round_equals_plaintext_and_counts_rejections():
    n, d = 30, 10
    upd = rng(10).normal(0, 0.3, (n, d))
    cfg = FlameConfig("ss-topk", d, n, eps_l=4.0, k=2, n_p=20, l=2)
    plain = run_round(cfg, upd, rng(11))
    keys = crypto.AnalyserKeys()
    enc = run_round(cfg, upd, rng(11), keys=keys, round_id=3)
    assert np.array_equal(plain.estimate, enc.estimate)
    assert enc.report["decrypt"]["accepted"] == d * cfg.n_p and enc.report["rejected_messages"] == 0

    def attack(idx, pay):  # flip a bit of one ciphertext and replay another in place of a third
        pay = pay.copy()
        b = bytearray(pay[0])
        b[40] ^= 0x10
        pay[0] = bytes(b)
        pay[2] = pay[1]
        return idx, pay

    hit = run_round(cfg, upd, rng(11), keys=keys, round_id=4, interfere=attack)
    assert hit.report["decrypt"]["tampered"] >= 1 and hit.report["rejected_messages"] == 2
    assert np.all(np.isfinite(hit.estimate))


def _honest_messages(cfg, upd, seed):
    """The shuffled (index, value) the analyser receives in the plaintext round with this seed (the encrypted
    round draws the same messages in the same order: test above)."""
    seen = {}

    def capture(idx, pay):
        seen["idx"], seen["val"] = np.asarray(idx).copy(), np.asarray(pay, dtype=float).copy()
        return idx, pay

    run_round(cfg, upd, rng(seed), interfere=capture)
    return seen["idx"], seen["val"]


@pytest.mark.parametrize("randomiser", ["laplace", "rr"])
def test_encrypted_values_outside_the_randomisers_range_are_rejected_and_counted(randomiser):
    """Issue 18 / seed 004 §8: the analyser typechecks what decrypts.  A correctly encrypted NaN, 1e6 (and for
    R_{gamma,b} a non-integer level or b + 1) is rejected and counted; the estimate is then exactly the one
    without those messages (it moved a coordinate by 66,667 before)."""
    n, d = 30, 10
    upd = rng(10).normal(0, 0.3, (n, d))
    cfg = FlameConfig("ss-topk", d, n, eps_l=4.0, k=2, randomiser=randomiser, b=8, n_p=n, l=2)
    idx, val = _honest_messages(cfg, upd, 11)
    bad = [np.nan, 1e6, -np.inf] + ([2.5, 9.0] if randomiser == "rr" else [])
    where = np.arange(len(bad)) * 7  # distinct positions
    keys = crypto.AnalyserKeys()

    def forge(i, p):  # replace some ciphertexts by correctly encrypted out-of-range values at their index
        p = list(p)
        forged = keys.public.encrypt(np.array(bad), np.asarray(i)[where], 5)
        for w, c in zip(where, forged):
            p[w] = c
        return i, p

    hit = run_round(cfg, upd, rng(11), keys=keys, round_id=5, interfere=forge)
    assert hit.report["decrypt"]["accepted"] == idx.size and hit.report["decrypt"]["rejected"] == 0
    assert hit.report["out_of_range"] == len(bad) and hit.report["rejected_messages"] == len(bad)
    keep = np.ones(idx.size, dtype=bool)
    keep[where] = False
    # exact: the same messages summed in the same order by the same function
    assert np.array_equal(hit.estimate, aggregate(cfg, idx, val, keep))
    # honest reports pass the typecheck (plaintext: nothing is rejected)
    plain = run_round(cfg, upd, rng(11))
    assert plain.report["out_of_range"] == 0 and plain.report["rejected_messages"] == 0


def test_typecheck_ranges():
    lap = LaplaceCoord(2.0)
    r = lap.output_radius
    assert r == 0.5 + 64 * math.log(2) / 2.0  # the stated cut-off: e^-TAIL = 2^-64 (exact by definition)
    y = np.array([0.5, 0.5 + r, 0.5 - r, 0.5 + r * (1 + 1e-12), np.nan, np.inf, 1e6])
    assert lap.valid(y).tolist() == [True, True, True, False, False, False, False]
    # an honest report leaves the range with probability 2^-64: none of 10^6 draws does
    assert lap.valid(lap.randomise(rng(1).random(10**6), rng(2))).all()
    assert lap.valid(lap.blanket(10**6, rng(3))).all()
    rr = BlanketRR(1.0, b=4)
    assert rr.valid(np.array([0, 1, 4, 5, -1, 2.5, np.nan])).tolist() == [True, True, True, False, False, False,
                                                                          False]


def test_missing_ciphertexts_are_counted():
    """Issue 18: fewer ciphertexts than indices were not counted; now each index without one is ``missing``
    and rejected (and ciphertexts beyond the indices are ``malformed``); the plaintext path counts the same."""
    n, d = 30, 10
    upd = rng(10).normal(0, 0.3, (n, d))
    cfg = FlameConfig("ss-topk", d, n, eps_l=4.0, k=2, n_p=n, l=2)
    keys = crypto.AnalyserKeys()
    short = run_round(cfg, upd, rng(11), keys=keys, round_id=1, interfere=lambda i, p: (i, list(p)[:-5]))
    assert short.report["decrypt"]["missing"] == 5 and short.report["rejected_messages"] == 5
    assert short.report["decrypt"]["accepted"] == d * n - 5 and np.all(np.isfinite(short.estimate))
    longer = run_round(cfg, upd, rng(11), keys=keys, round_id=2, interfere=lambda i, p: (i[:-3], p))
    assert longer.report["decrypt"]["malformed"] == 3 and longer.report["rejected_messages"] == 3
    plain = run_round(cfg, upd, rng(11), interfere=lambda i, p: (i, p[:-4]))
    assert plain.report["missing"] == 4 and plain.report["rejected_messages"] == 4


def test_default_ss_topk_run_cannot_overflow_and_is_covered():
    """Issue 18: `fl --protocol ss-topk --rounds 3` dropped a message with the paper's n_p = n/3.  The SS-Topk
    default is n_p = n: every user sends at most one message per coordinate, so nothing can be dropped; a run
    that does drop messages (a given n_p below n) says it is not covered."""
    from shufflesim.federated.training import FLSettings, train

    cfg = FlameConfig("ss-topk", 650, 300, eps_l=26.0, k=13)
    assert cfg.n_p == 300 and FlameConfig("ss-double", 650, 300, eps_l=26.0, k=13).n_p == 100
    x = np.zeros((300, 650))
    x[:, :13] = 1.0  # every user's top-k on the same 13 coordinates: the worst concentration
    _, _, rep = PaddingShuffler(650, cfg.n_p, LaplaceCoord(1.0).blanket).shuffle(
        randomize(cfg, x, rng(1)).index, np.zeros(300 * cfg.messages_per_user), rng(2))
    assert rep.overflow == 0
    ok = train(FLSettings(protocol="ss-topk", rounds=3, tight=False))
    assert ok["messages"]["overflow"] == 0 and ok["privacy"]["covered"] and "note" not in ok["privacy"]
    bad = train(FLSettings(protocol="ss-topk", rounds=3, tight=False, n_p=60))
    assert bad["messages"]["overflow"] > 0 and not bad["privacy"]["covered"]
    assert bad["privacy"]["note"].startswith("NOT COVERED")


# --------------------------------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------------------------------


def test_published_eps_c_reproduce_to_the_printed_digits():
    orig, fixed = paper_pipeline("original-2019"), paper_pipeline("fixed")
    # the paper's printed values (2 decimals); its 20.53 is 20.5353 truncated (rounding gives 20.54)
    assert round(orig["simple"], 2) == FLAME_PUBLISHED["simple"]
    assert round(orig["double"], 2) == FLAME_PUBLISHED["double"]
    assert math.floor(orig["shuffle_only"] * 100) / 100 == FLAME_PUBLISHED["shuffle_only"]
    # docs/flame.md states both columns to the digits it prints
    text = DOCS_FLAME.read_text(encoding="utf-8")
    num = r"([\d.]+) / ([\d.]+) / ([\d.]+)"
    printed_orig = re.search(r"reproduces the paper: \*\*" + num + r"\*\*", text).groups()
    printed_fixed = re.search(r"the same pipeline gives\s+" + num, text).groups()
    keys = ("simple", "double", "shuffle_only")
    for k, po, pf in zip(keys, printed_orig, printed_fixed):
        assert_as_printed(orig[k], po)
        assert_as_printed(fixed[k], pf)
    # the delta split (Theorems 1 and 4): every composition totals delta_c, the subsampled step is delta_c/(2k + 1)
    for r in (orig, fixed):
        for k in keys:
            assert r[f"delta_{k}"] == pytest.approx(r["delta_c"], rel=1e-12)
        assert r["delta_cd_double"] == pytest.approx(r["delta_c"] / (2 * 157 + 1), rel=1e-12)


def test_theorems_closed_forms():
    e, dl = theorem1(0.001, 1e-9, 100)
    assert dl == pytest.approx(101e-9) and e <= 0.1 + 1e-12
    eps_ck, eps_cd = theorem3(0.5, 10, 333, 0.02, 1e-8)
    assert eps_ck == pytest.approx(math.sqrt(14 * math.log(2 * 0.02 / 1e-8) * (math.exp(0.5) + 9) / 332))
    assert eps_cd == pytest.approx(math.log(1 + 0.02 * math.expm1(eps_ck)))
    e4, d4 = theorem4(eps_cd, 1e-8, 157)
    assert d4 == pytest.approx(315e-8) and e4 <= 314 * eps_cd * (1 + 1e-12)
    assert corollary2_condition(78.5, 7850, 1000, 5e-6)
    assert corollary3_condition(78.5, 7850, 333, 0.02, 5e-6)


def test_flame_privacy_valid_values_at_small_setting():
    cfg = FlameConfig("ss-double", 100, 300, eps_l=2.0, k=4, n_p=100)
    p = flame_privacy(cfg, rounds=2, delta=1e-6)
    v = p.values
    assert p.eps == min(v["bennett-fixed"], v["ldp"], v["clones"])
    assert v["ldp"] <= 8 * 0.5 + 1e-12  # 2 rounds x k = 4 steps of eps_coord = 0.5
    assert v["clones"] < v["ldp"]
    # the paper's value credits subsampling and is smaller than every valid value here
    assert v["paper-fixed"] < p.eps


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["np", "ss-topk"])
def test_short_training_improves_accuracy(protocol):
    from shufflesim.federated.training import FLSettings, train

    r = train(FLSettings(protocol=protocol, rounds=5, seed=1, tight=False))
    acc = r["accuracy"]
    assert len(acc) == 6 and acc[0] < 0.15
    assert max(acc[1:]) > acc[0] + 0.15 and acc[-1] > acc[0] + 0.1


def test_cli_fl_json(capsys):
    import json

    from shufflesim.cli.main import main

    assert main(["fl", "--protocol", "ss-double", "--rounds", "2", "--n", "40", "--encrypt", "--no-tight",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"accuracy", "eps", "delta", "protocol", "params", "rejected_messages"} <= set(out)
    assert len(out["accuracy"]) == 3 and out["rejected_messages"] == 0 and out["params"]["encrypted"]
    assert main(["fl", "--protocol", "dp", "--rounds", "2", "--eps", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eps"] == pytest.approx(2.0, rel=1e-6)
    assert main(["fl", "--protocol", "nope"]) == 2


# --------------------------------------------------------------------------------------------------
# Pipeline plug-ins (protocols/flame.py)
# --------------------------------------------------------------------------------------------------


def test_plugins_run_through_the_pipeline():
    from shufflesim.accounting import account
    from shufflesim.pipeline import registry

    x = rng(12).random((150, 10))
    for name in ("flame-simple", "flame-double", "flame-topk"):
        p = registry.create(name, 150, eps_l=6.0, d=10, k=2, l=2)
        r = p.run(x, rng=3, keep_view=True)
        assert r.view.n_channels == 10 and all(r.view.channel_size(j) == p.params["n_p"] for j in range(10))
        assert r.estimate.shape == (10,) and np.all(np.isfinite(r.estimate))
        assert math.isfinite(account(p.mechanism(), delta=1e-6).results[0].eps_upper)
    one = registry.create("flame-double", 400, eps_l=1.0).run(rng(13).random(400), rng=4)
    assert one.estimate.shape == (1,)


def check_paper_setting(protocol: str, steps: int, h: float) -> dict:
    """flame_privacy at the paper's setting (one epoch, δ = 0.01/n^1.1): the clones value lies in the bracket
    of :func:`composed_eps_bracket` (so it is not below the exact eps of the composed stronger clone pair, and
    within the bracket's width steps·h above it), and docs/flame.md's table states every value to its digits."""
    delta = 0.01 / 1000**1.1
    cfg = FlameConfig(protocol, 7850, 1000, 78.5, k=157, n_p=333)
    v = flame_privacy(cfg, 1, delta).values
    lo, hi = composed_eps_bracket(*stronger_clones_pld(cfg.n_p, cfg.eps_coord), steps, delta, h)
    assert hi - lo <= steps * h * (1 + 1e-6) and lo <= v["clones"] <= hi, (lo, v["clones"], hi)
    for key, printed in zip(("clones", "bennett-fixed", "paper-original-2019"), docs_flame_table()[protocol]):
        assert_as_printed(v[key], printed)
    return v


@pytest.mark.parametrize("protocol,steps", [("ss-double", 157), ("ss-topk", 314)])
def test_valid_values_at_the_paper_setting(protocol, steps):
    """docs/theory.md#flame-validity: SS-Double (k steps, no subsampling credit) and SS-Topk (2k steps) by the
    clones PLD; both far above the paper's 0.24 and far below the fixed-Bennett values for the same steps."""
    v = check_paper_setting(protocol, steps, h=2e-5)  # bracket width 0.003 / 0.006
    # the paper's own SS-Double/Topk value is paper_pipeline's (the same Theorem 4 pipeline at this setting)
    assert v["paper-original-2019"] == pytest.approx(paper_pipeline("original-2019")["double"], rel=1e-12)
    assert v["paper-original-2019"] < v["clones"] < v["bennett-fixed"]


@pytest.mark.slow
def test_valid_value_ss_simple_at_the_paper_setting():
    v = check_paper_setting("ss-simple", 7850, h=1.27e-7)  # bracket width 0.001
    assert v["paper-original-2019"] == pytest.approx(paper_pipeline("original-2019")["simple"], rel=1e-12)


def test_figure3_ratio_function_follows_theorems():
    from shufflesim.federated.accounting import figure3_ratios

    d, n, b, e, beta, n_p, delta_c = 75755, 10000, 8, 1.0, 0.1, 20000, 1e-4
    s, dbl = figure3_ratios(d=d, n=n, b=b, eps_coord=e, beta=beta, n_p=n_p, delta_c=delta_c)

    def best(eps, steps, dp):  # Theorems 1/4: the smaller of basic and advanced composition
        return min(steps * eps, math.sqrt(2 * steps * math.log(1 / dp)) * eps + steps * eps * math.expm1(eps))

    # the closed forms typed from seed 002 (Lemma 1, Theorems 1, 3, 4); best_composition rounds up by <= 8 ulps
    d1 = delta_c / (d + 1)
    simple = d * e / best(math.sqrt(14 * math.log(2 / d1) * (math.exp(e) + b - 1) / (n - 1)), d, d1)
    k = round(beta * d)
    d2 = delta_c / (2 * k + 1)
    e_ck = math.sqrt(14 * math.log(2 * beta / d2) * (math.exp(e) + b - 1) / (n_p - 1))
    double = k * e / best(math.log1p(beta * math.expm1(e_ck)), 2 * k, d2)
    assert s == pytest.approx(simple, rel=1e-12) and dbl == pytest.approx(double, rel=1e-12)
    # docs/flame.md: this grid point hits x2.55 within 0.3 % and its SS-Double ratio is x137.79 (paper: x137.36)
    assert abs(s / 2.55 - 1) <= 0.003
    assert_as_printed(dbl, re.search(r"ratio among them is ×([\d.]+)", DOCS_FLAME.read_text(encoding="utf-8")).group(1))
