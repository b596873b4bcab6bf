"""``ikos-sum``: parameters, message counts, exact error theory, pipeline model, Monte-Carlo and CLI.

Oracles: exact enumeration of the noisy encoded sum (Poisson-binomial rounding ⊛ discrete Laplace) with
the wrap-around decoding applied cell by cell; exact integer comparisons for the original-IKOS count;
Python integers for the arithmetic mod q.  Paper claims (seed 004) are labelled as such.

Statistical tests: fixed seeds, confidence intervals at a Bonferroni-corrected level so that the
family-wise error over this file is below 1e-3 (FAMILY = number of statistical assertions).
"""

from __future__ import annotations

import json
import math
import time

import numpy as np

from shufflesim.maths.rounding import randomised_round
import pytest
from scipy import stats

from shufflesim.accounting.account import account
from shufflesim.cli.main import main
from shufflesim.experiments.data import load_data
from shufflesim.errors import NotApplicableError, ParameterError
from shufflesim.experiments.montecarlo import run_trials
from shufflesim.maths.polya import decode_centered, dlap_logpmf, polya_logpmf, sample_polya_difference, sum_mod
from shufflesim.protocols.ikos_sum import (
    IKOSSumProtocol,
    default_modulus,
    delta_from_sigma,
    ikos_messages_ghazi,
    ikos_messages_improved,
    ikos_messages_original,
    ikos_overflow_bound,
    ikos_shuffled_messages_improved,
    ikos_sigma_improved,
    ikos_table3_row,
    sigma_from_delta,
)
from shufflesim.core.rng import child
from shufflesim.experiments.stats import bonferroni_level, mean_ci

FAMILY = 10  # statistical assertions in this file (6 Monte-Carlo, 3 goodness of fit, 1 CLI interval)
LEVEL = bonferroni_level(0.999, FAMILY)


# --- exact oracle --------------------------------------------------------------------------------------------
def exact_error_distribution(data, p, alpha, q):
    """Exact law of the decoded estimate: returns (mse, P(overflow)) by enumeration.

    R = Σ x̄_i is a sum of independent two-point variables (convolved exactly); Z ~ DLap(α) is truncated
    where α^|z| < 1e-40 (negligible at the tolerances used).
    """
    px = np.asarray(data, dtype=float) * p
    fl = np.floor(px)
    frac = px - fl
    pmf_r = np.array([1.0])
    for f in frac:  # n is tiny here
        pmf_r = np.convolve(pmf_r, [1.0 - f, f])
    r0 = int(fl.sum())
    zmax = int(math.ceil(40 * math.log(10) / -math.log(alpha)))
    z = np.arange(-zmax, zmax + 1)
    pmf_z = np.exp(dlap_logpmf(z, alpha))
    pmf_t = np.convolve(pmf_r, pmf_z)
    t = np.arange(r0 - zmax, r0 - zmax + pmf_t.size)
    dec = np.array([decode_centered(int(v) % q, q) for v in t])
    s = math.fsum(np.asarray(data, dtype=float).tolist())
    mse = math.fsum((pmf_t * (dec / p - s) ** 2).tolist())
    p_ovf = math.fsum(pmf_t[dec != t].tolist())
    return mse, p_ovf


SMALL_DATA = [0.13, 0.5, 0.77, 1.0, 0.0, 0.31]


def small_protocol(q, p=3, alpha=0.5):
    eps = -p * math.log(alpha)
    return IKOSSumProtocol.create(len(SMALL_DATA), eps=eps, p=p, q=q, messages=80)


def test_mse_expected_equals_exact_enumeration_when_q_is_large():
    pr = small_protocol(q=10_001)
    mse, p_ovf = exact_error_distribution(SMALL_DATA, 3, 0.5, 10_001)
    assert p_ovf == 0.0
    assert pr.mse_expected(SMALL_DATA) == pytest.approx(mse, rel=1e-12)
    # and the two terms separately: rounding Σ r(1−r)/p², noise 2α/((1−α)² p²)
    r = (np.array(SMALL_DATA) * 3) % 1.0
    assert pr.rounding_mse(SMALL_DATA) == pytest.approx(float(np.sum(r * (1 - r))) / 9, rel=1e-12)
    assert pr.noise_mse() == pytest.approx(2 * 0.5 / 0.25 / 9, rel=1e-12)


@pytest.mark.parametrize("q", [37, 41, 45, 60])
def test_overflow_bounds_bracket_the_exact_wraparound(q):
    """Small q, where wrap-around matters: the exact MSE and overflow probability obey the bounds."""
    pr = small_protocol(q=q)
    mse, p_ovf = exact_error_distribution(SMALL_DATA, 3, 0.5, q)
    ob = pr.overflow_bound()
    assert p_ovf <= ob.prob
    lo, hi = pr.mse_expected_interval(SMALL_DATA)
    assert lo <= mse <= hi
    base = pr.rounding_mse(SMALL_DATA) + pr.noise_mse()
    assert mse != pytest.approx(base, rel=1e-6)  # overflow does matter here ...
    assert pr.mse_expected(SMALL_DATA) is None  # ... so no "exact" value is claimed
    assert pr.mse_worst() is None


def test_default_modulus_meets_both_conditions_and_is_minimal():
    for n, eps in ((1000, 0.5), (10_000, 1.0), (50, 3.0)):
        pr = IKOSSumProtocol.create(n, eps=eps)
        prm = pr.parameters
        ob = ikos_overflow_bound(n, prm.p, prm.q, prm.alpha)
        assert ob.prob <= 2.0 ** -prm.sigma_target
        assert ob.mse_abs <= 2.0**-52 * pr.noise_mse()
        worse = ikos_overflow_bound(n, prm.p, prm.q - 1, prm.alpha)
        assert worse.prob > 2.0 ** -prm.sigma_target or worse.mse_abs > 2.0**-52 * pr.noise_mse()
        assert prm.q == default_modulus(n, prm.p, eps, prm.sigma_target)


# --- parameters and message counts ---------------------------------------------------------------------------
def test_defaults_and_params_keys():
    pr = IKOSSumProtocol.create(10_000, eps=1.0)
    d = pr.params
    for key in ("p", "q", "m", "alpha", "sigma", "eps", "delta", "variant"):
        assert key in d
    assert d["p"] == 100 and d["alpha"] == pytest.approx(math.exp(-0.01), rel=1e-15)
    assert d["sigma_target"] == pytest.approx(math.log2((1 + math.e) * 1e8), rel=1e-12)  # δ = 1/n²
    assert d["m"] == ikos_shuffled_messages_improved(10_000, d["q"], d["sigma_target"]) + 1
    assert d["sigma"] >= d["sigma_target"]
    priv = pr.privacy()
    # the closed form widened by the mechanism's float-error margin 1e-12 (protocols.ikos_sum.certified_delta)
    assert priv.eps == 1.0 and priv.delta == pytest.approx((1 + math.e) * 2.0 ** -d["sigma"] * (1 + 1e-12),
                                                           rel=1e-14)
    # the reported delta is never below the mechanism's own certified upper end (exactness is the point)
    assert account(pr.mechanism(), eps=[1.0]).results[0].delta_upper <= priv.delta
    assert priv.delta <= 1e-8
    assert pr.messages_per_user == d["m"] and pr.bits_per_message == math.ceil(math.log2(d["q"]))
    assert IKOSSumProtocol.create(10_001, eps=1.0).params["p"] == 101  # ⌈√n⌉


def test_sigma_and_delta_conversions_round_trip():
    for eps in (0.1, 1.0, 5.0):
        for delta in (1e-5, 1e-12):
            s = sigma_from_delta(eps, delta)
            assert s == pytest.approx(math.log2((1 + math.exp(eps)) / delta), rel=1e-12)
            assert delta_from_sigma(eps, s) == pytest.approx(delta, rel=1e-12)


def test_improved_count_is_the_smallest_with_the_security():
    for n, q, sigma in ((10**4, 2**20, 28.0), (10**5, 10**9, 40.0), (50, 1000, 10.0), (10**6, 2**40, 64.0)):
        m = ikos_shuffled_messages_improved(n, q, sigma)
        assert ikos_sigma_improved(n, q, m) >= sigma > ikos_sigma_improved(n, q, m - 1)
        assert ikos_messages_improved(n, q, sigma) == m + 1


def test_paper_claim_worked_example_12_messages():
    """Paper claim (seed 004 §1, as reconstructed in docs/theory.md#summation-ikos-messages): 32-bit inputs, n = 10⁴, σ = 40 → 12."""
    assert ikos_shuffled_messages_improved(10**4, 10**4 * 2**32, 40) == 12


@pytest.mark.parametrize("n,eps", [(10**4, 0.5), (10**4, 1.0), (10**5, 0.5), (10**5, 1.0)])
def test_paper_claim_table3_ikos_improved_9_messages(n, eps):
    """Paper claim (seed 004 Table 3, IKOS (Improved)): 9 messages; MSE 8.2 (ε = 0.5) / 2.2 (ε = 1)."""
    row = ikos_table3_row(n, eps)
    assert row["messages_improved"] == 9
    assert f"{row['mse']:.1f}" == ("8.2" if eps == 0.5 else "2.2")
    assert row["messages_ghazi"] is None and "lost" in row["ghazi_reason"]


def test_original_ikos_count_against_exact_integer_binomials():
    """Smallest m with C(2m, m) ≥ q³ (n−1)² 4^σ, checked with exact integers for integer σ."""
    for n, q, sigma in ((100, 101, 10), (10**4, 2**20, 28), (10**5, 63_473_144, 35), (3, 2, 1)):
        m = ikos_messages_original(n, q, sigma)
        need = q**3 * (n - 1) ** 2 * 4**sigma
        assert math.comb(2 * m, m) >= need > math.comb(2 * m - 2, m - 1)


def test_ghazi_count_is_reported_unavailable():
    with pytest.raises(NotApplicableError, match="lost in conversion"):
        ikos_messages_ghazi(10**4, 2**20, 28)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({}, "eps"),
        ({"eps": 1.0, "delta": 1e-6, "sigma": 20}, "at most one"),
        ({"eps": 1.0, "sigma": 40, "messages": 4}, "messages >="),
        ({"eps": 1.0, "messages": 2}, "no statistical security"),
        ({"eps": 1.0, "q": 1}, "q must be"),
        ({"eps": 1.0, "q": 2**64}, "q must be"),
        ({"eps": 1.0, "p": 0}, "p must be"),
        ({"eps": -1.0}, "eps must be"),
        ({"eps": 1.0, "variant": "bogus"}, "variant"),
        ({"eps": 1.0, "delta": 1.5}, "delta must be"),
    ],
)
def test_parameter_errors_are_one_line(kwargs, match):
    with pytest.raises(ParameterError, match=match) as e:
        IKOSSumProtocol.create(1000, **kwargs)
    assert "\n" not in str(e.value)


def test_too_few_users_is_an_error():
    with pytest.raises(ParameterError, match="n >= 3"):
        IKOSSumProtocol.create(2, eps=1.0)


# --- the randomiser ---------------------------------------------------------------------------------------------
def test_randomiser_encoding_distribution_chisquare():
    """One user's residue (x̄ + Pólya(1/n) − Pólya(1/n)) mod q against its exact pmf (x = 0.3, p = 5)."""
    n_users, p, q, alpha = 4, 5, 11, 0.6
    # q = 11 < 2np breaks the protocol's decoding assumption (create refuses it); the randomiser alone is tested
    from types import SimpleNamespace

    from shufflesim.protocols.ikos_sum import IKOSRandomiser

    pr = SimpleNamespace(randomiser=IKOSRandomiser(n_users, p, q, alpha, 200))
    reps = 60_000
    g = np.random.default_rng(30)
    x = np.full(reps, 0.3)
    v = pr.randomiser.encode(x, g).astype(np.int64)
    # exact pmf: x̄ ∈ {1, 2} w.p. 1/2 each, Z = difference of two Pólya(1/4, 0.6)
    k = np.arange(0, 400)
    pol = np.exp(polya_logpmf(k, 1.0 / n_users, alpha))
    z_pmf = np.convolve(pol, pol[::-1])  # support −399..399
    z = np.arange(-399, 400)
    probs = np.zeros(q)
    for xbar in (1, 2):
        np.add.at(probs, (xbar + z) % q, 0.5 * z_pmf)
    obs = np.bincount(v, minlength=q)
    assert stats.chisquare(obs, probs / probs.sum() * reps).pvalue > 1e-3 / FAMILY
    # a message on its own carries nothing: each share is uniform on Z_q
    msgs = pr.randomiser.randomise(np.full(20_000, 0.3), np.random.default_rng(31)).astype(np.int64)
    assert stats.chisquare(np.bincount(msgs[:, 0], minlength=q)).pvalue > 1e-3 / FAMILY


def test_rounding_is_unbiased_with_the_right_support():
    g = np.random.default_rng(32)
    x = np.full(100_000, 0.4567)
    xb = randomised_round(x, 10, g, dtype=np.int64)
    assert set(np.unique(xb).tolist()) == {4, 5}
    k = int((xb == 5).sum())
    assert stats.binomtest(k, x.size, 0.567).pvalue > 1e-3 / FAMILY


# --- the pipeline: shufflers and analyser -------------------------------------------------------------------
def _messages_and_view(variant, n=2000, seed=40):
    pr = IKOSSumProtocol.create(n, eps=1.0, variant=variant)
    x = np.random.default_rng(seed).random(n)
    msgs = pr.randomiser.randomise(x, np.random.default_rng(seed + 1))
    view = pr.shuffler.shuffle(msgs, np.random.SeedSequence(seed + 2))
    return pr, x, msgs, view


@pytest.mark.parametrize("variant", ["all-shuffled", "one-unshuffled"])
def test_parallel_shuffler_model(variant):
    pr, x, msgs, view = _messages_and_view(variant)
    m = pr.params["m"]
    assert view.n_channels == m
    perms = []
    for j in range(m):
        ch = view.channel(j)
        assert np.array_equal(np.sort(ch), np.sort(msgs[:, j]))  # channel j holds exactly the j-th shares
        order = np.argsort(msgs[:, j], kind="stable")
        pos = order[np.searchsorted(msgs[:, j], ch, sorter=order)]  # which user sent each message
        perms.append(pos)
    shuffled = range(m) if variant == "all-shuffled" else range(m - 1)
    for j in shuffled:
        assert not np.array_equal(perms[j], np.arange(pr.n))  # not in user order
    for j, k in zip(list(shuffled)[:-1], list(shuffled)[1:]):
        assert not np.array_equal(perms[j], perms[k])  # independent shufflers: rows are not aligned
    if variant == "one-unshuffled":
        assert np.array_equal(view.channel(m - 1), msgs[:, m - 1])  # sent outside the shuffle
        assert pr.params["shuffled_messages"] == m - 1


def test_analyser_sees_only_multisets_and_recovers_the_exact_noisy_sum():
    pr, x, msgs, view = _messages_and_view("all-shuffled")
    est = pr.analyser.analyse(view, np.random.default_rng(0))
    # the analyser's total is Σ of all messages mod q, i.e. Σ of the users' residues
    assert est.total_mod_q == sum_mod(msgs.reshape(-1), pr.params["q"])
    # permuting each channel independently (re-linking messages arbitrarily) changes nothing
    g = np.random.default_rng(1)
    mixed = np.stack([g.permutation(msgs[:, j]) for j in range(msgs.shape[1])], axis=1)
    view2 = pr.shuffler.shuffle(mixed, np.random.SeedSequence(9))
    assert pr.analyser.analyse(view2, np.random.default_rng(0)) == est


@pytest.mark.parametrize("q", [2**62 - 57, 2**64 - 59])
def test_exact_arithmetic_with_q_near_the_top_of_uint64(q):
    """A full run with q near 2⁶² and near 2⁶⁴: the decoded sum equals Σ (x̄_i + Z_i) computed separately."""
    n = 3000
    pr = IKOSSumProtocol.create(n, eps=0.7, q=q, sigma=30)
    x = load_data("uniform", data_kind="real", n=n, rng=5)
    seed = np.random.SeedSequence(77)
    res = pr.run(x, seed)
    g = np.random.Generator(np.random.PCG64(child(seed, 0)))  # the randomiser's stream in Protocol.run
    xbar = randomised_round(x, pr.parameters.p, g, dtype=np.int64)
    z = sample_polya_difference(n, pr.parameters.alpha, n, g)
    exact = int(xbar.sum()) + int(z.sum())
    assert res.details.decoded == exact
    assert res.estimate == exact / pr.parameters.p
    assert pr.params["m"] >= 3 and pr.bits_per_message == math.ceil(math.log2(q))


def test_negative_noisy_sum_decodes_negative():
    """All-zero data and a large noise: about half the runs have a negative noisy sum, decoded as such."""
    n = 200
    pr = IKOSSumProtocol.create(n, eps=0.05, p=2)
    x = np.zeros(n)
    est = [pr.run(x, s).details.decoded for s in range(40)]
    assert min(est) < 0 < max(est)
    assert all(-pr.params["q"] / 2 < d <= pr.params["q"] / 2 for d in est)


# --- theory relations ------------------------------------------------------------------------------------------
def test_mse_expected_le_worst_le_bound():
    n = 5000
    pr = IKOSSumProtocol.create(n, eps=0.8)
    p = pr.parameters.p
    g = np.random.default_rng(50)
    worst = pr.mse_worst()
    for x in (g.random(n), np.zeros(n), np.ones(n), np.full(n, 0.37), g.beta(0.5, 0.5, n)):
        assert pr.mse_expected(x) <= worst
    assert pr.mse_expected(np.full(n, 0.5 / p)) == pytest.approx(worst, rel=1e-12)  # every r_i = 1/2
    assert worst <= pr.mse_bound() <= worst * (1 + 1e-12)
    assert pr.mse_expected(np.zeros(n)) == pytest.approx(pr.noise_mse(), rel=1e-15)


# --- Monte Carlo ---------------------------------------------------------------------------------------------------
MC_CASES = [
    ("constant:0.37", {"eps": 1.0}, 1500, 11),
    ("uniform", {"eps": 0.5, "p": 12, "variant": "one-unshuffled"}, 2000, 12),
    ("adult-age", {"eps": 1.0, "messages": 14}, 3000, 13),
]


@pytest.mark.parametrize("spec,kwargs,n,seed", MC_CASES)
def test_empirical_mse_covers_mse_expected_and_is_unbiased(spec, kwargs, n, seed):
    """Each case makes two assertions (MSE interval covers mse_expected; error interval covers 0)."""
    x = load_data(spec, data_kind="real", n=n, rng=seed)
    pr = IKOSSumProtocol.create(n, **kwargs)
    recs = run_trials(pr, x, trials=600, rng=seed).records
    exp = pr.mse_expected(x)
    _, lo, hi = mean_ci(recs["sq_error"].to_numpy(), LEVEL)
    assert lo <= exp <= hi, (lo, exp, hi)
    _, elo, ehi = mean_ci(recs["error"].to_numpy(), LEVEL)
    assert elo <= 0.0 <= ehi
    # the interval is informative.  For a Laplace-like error E e⁴ = 6 (E e²)², so sd(e²) ≈ √5·MSE and the
    # half-width is about t·√5/√T·MSE ≈ 0.36·MSE here (t ≈ 3.9 at LEVEL, T = 600); 0.6 would mean trouble.
    assert (hi - lo) / 2 < 0.6 * exp


# --- CLI --------------------------------------------------------------------------------------------------------------
def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_simulate_json(capsys):
    code, out, err = run_cli(capsys, "simulate", "ikos-sum", "--n", "3000", "--eps", "1", "--trials", "200",
                             "--seed", "2", "--json", "--level", "0.999")
    assert code == 0, err
    d = json.loads(out)
    assert d["protocol"] == "ikos-sum"
    for key in ("p", "q", "m", "alpha", "sigma"):
        assert key in d["params"]
    assert d["privacy"]["eps"] == 1.0 and d["privacy"]["method"] == "ikos-statistical-distance"
    assert d["privacy"]["delta"] == pytest.approx(delta_from_sigma(1.0, d["params"]["sigma"]) * (1 + 1e-12),
                                                  rel=1e-14)  # widened by the mechanism's float-error margin
    assert d["messages_per_user"] == d["params"]["m"]
    assert d["mse_expected"] <= d["mse_worst"] <= d["mse_bound"]
    lo, hi = d["mse_ci"]
    assert lo <= d["mse_expected"] <= hi  # level 0.999; counted in FAMILY


def test_cli_options_and_errors(capsys):
    code, out, err = run_cli(capsys, "simulate", "ikos-sum", "--n", "500", "--eps", "2", "--p", "9", "--q",
                             "1000003", "--messages", "40", "--variant", "one-unshuffled", "--trials", "5",
                             "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["params"]["p"], d["params"]["q"], d["params"]["m"]) == (9, 1000003, 40)
    assert d["params"]["variant"] == "one-unshuffled" and d["bits_per_message"] == 20
    code, out, err = run_cli(capsys, "simulate", "ikos-sum", "--n", "500", "--eps", "1", "--delta", "1e-6",
                             "--sigma", "30", "--trials", "2")
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1


# --- performance -------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_one_trial_at_a_million_users_and_ten_messages_takes_seconds():
    n = 10**6
    pr = IKOSSumProtocol.create(n, eps=1.0, messages=10)
    x = np.random.default_rng(0).random(n)
    t0 = time.perf_counter()
    pr.run(x, 1)
    assert time.perf_counter() - t0 < 5.0
