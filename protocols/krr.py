"""k-ary randomised response in the shuffle model (Koskela, Heikkilä, Honkela 2021, arXiv:2106.00477, §5; Biswas et al. 2023, arXiv:2205.08858;
docs/theory.md#randomised-response).

Randomiser, blanket form (Balle et al. 2019): with probability 1−γ report the true value, with probability
γ a value drawn uniformly from all k values.  ε0 form: P(true) = e^{ε0}/(e^{ε0}+k−1); the two coincide when
γ = k/(e^{ε0}+k−1).  Binary randomised response is k = 2.

Analysers: the shuffled histogram N; the debiased counts ĉ_j = (N_j − nγ/k)/(1−γ) (unbiased); the
distribution estimate by channel inversion projected onto the simplex ("shuffle+INV", seed 003).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.accounting.model.mechanism import Relation
from shufflesim.core.checks import Precision, check_int, check_real
from shufflesim.maths.rounding import grid_dtype
from shufflesim.maths.rr import eps0_from_gamma
from shufflesim.mechanisms.krr import DEFAULT_ADVERSARY, KRR
from shufflesim.pipeline.analyser import Analyser
from shufflesim.errors import ParameterError, ShufflesimError
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.histogram import HistogramEstimate, HistogramProtocol
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.registry import register
from shufflesim.pipeline.shuffler import SingleShuffler, View
from shufflesim.maths.simplex import project_to_simplex
from shufflesim.pipeline.spaces import IntegerRange


@dataclass(frozen=True, eq=False)
class KRRRandomiser(LocalRandomiser):
    """k-RR over {0..k−1}, blanket probability γ (one message per user)."""

    k: int
    gamma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "message_space", IntegerRange(0, self.k - 1))
        object.__setattr__(self, "eps0", eps0_from_gamma(self.gamma, self.k) if self.gamma > 0 else math.inf)
        object.__setattr__(self, "messages_per_user", 1)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n = x.shape[0]
        dt = grid_dtype(self.k - 1)
        blanket = rng.random(n) < self.gamma
        noise = rng.integers(0, self.k, size=n, dtype=dt)
        return np.where(blanket, noise, x.astype(dt, copy=False))[:, None]

    def report_probabilities(self, value: int) -> np.ndarray:
        """P(report = j | input = value) for j = 0..k−1."""
        p = np.full(self.k, self.gamma / self.k)
        p[value] += 1.0 - self.gamma
        return p


class KRRAnalyser(Analyser):
    """Shuffled histogram, debiased counts and the shuffle+INV distribution estimate."""

    name = "krr-debias"

    def __init__(self, k: int, gamma: float, n: int):
        if gamma >= 1.0:
            raise ParameterError("gamma=1 reports pure noise, so the counts cannot be debiased; use gamma < 1")
        self.k, self.gamma, self.n = k, gamma, n

    def analyse(self, view: View, rng: np.random.Generator) -> HistogramEstimate:
        hist = view.counts(0, minlength=self.k)
        counts = debias_counts(hist, self.n, self.k, self.gamma)
        dist = project_to_simplex(counts / self.n)
        return HistogramEstimate(hist, counts, dist)


def debias_counts(hist: np.ndarray, n: int, k: int, gamma: float) -> np.ndarray:
    """ĉ_j = (N_j − nγ/k)/(1−γ) (docs/theory.md#rr-estimators)."""
    return (np.asarray(hist, dtype=float) - n * gamma / k) / (1.0 - gamma)


def krr_mse_expected(n: int, k: int, gamma: float) -> float:
    """E Σ_j (ĉ_j − c_j)² = Σ_i Σ_j p_ij(1 − p_ij)/(1−γ)² (docs/theory.md#rr-estimators).

    Every user contributes the same a(1−a) + (k−1)b(1−b) with a = 1−γ+γ/k, b = γ/k, so the value does not
    depend on the data.
    """
    a = 1.0 - gamma + gamma / k
    b = gamma / k
    return n * (a * (1 - a) + (k - 1) * b * (1 - b)) / (1.0 - gamma) ** 2


#: largest n for which privacy() also evaluates the weak adversary's exact row pair for the shuffled view
#: (~1 s at 10⁴, ~100 s at 10⁵ on the shared 2-core machine), and binary RR's exact value for k = 2
WEAK_PAIR_MAX_N = 20_000
#: from this n on the weak adversary's pair is evaluated through its bucket rows
#: (shufflesim.accounting.engines.bucketed_weak; ~2-5 s single use at 10⁵-10⁹, 10-15 s between 2·10⁴ and 5·10⁴)
WEAK_BUCKETS_MIN_N = 100_000


def _weak_in_budget(n: int) -> bool:
    return n <= WEAK_PAIR_MAX_N or n >= WEAK_BUCKETS_MIN_N


@register
class KRRProtocol(HistogramProtocol):
    """Shuffled k-ary randomised response (single message, single shuffler)."""

    name = "krr"
    summary = "k-ary randomised response, shuffled; debiased counts and shuffle+INV distribution"
    example = "--k 10 --eps0 1"
    options = (
        Option("k", int, "number of categories (k >= 2; k = 2 is binary RR)", default=None, metavar="K"),
        Option("gamma", float, "blanket probability in (0, 1): report a uniform value w.p. gamma"),
        Option("eps0", float, "local epsilon > 0 (alternative to --gamma)"),
        Option("delta", float, "delta at which the central eps is reported (default 1/n^2)"),
        Option("adversary", str, "view the reported central eps is certified for: shuffled (the released reports), "
               "weak, strong, strong-1d (docs/theory.md#adversaries)", default=DEFAULT_ADVERSARY.value,
               choices=("shuffled", "weak", "strong", "strong-1d")),
    )

    @classmethod
    def create(cls, n: int, *, k=None, gamma=None, eps0=None, delta=None, adversary=DEFAULT_ADVERSARY.value) -> "KRRProtocol":
        n = check_int("n", n, minimum=1)
        if k is None:
            raise ParameterError("krr needs the number of categories k >= 2 (--k on the command line)")
        mech = KRR.resolve(n, k, gamma, eps0, Relation.parse(adversary))
        if gamma is None and mech.gamma == 1.0:  # eps0 given below the range where gamma stays below 1
            Precision(low=mech.k * 2.0**-52, below=f"gamma = k/(e^eps0 - 1 + k) rounds to 1 in double precision (pure "
                      "noise: the counts cannot be debiased)").check("eps0", float(eps0))
        k, gamma, eps0, adversary = mech.k, mech.gamma, mech.eps0, mech.relation.value
        # default 1/n^2; for n = 1 that is 1 (not a valid delta): use 1/4, as for n = 2 (params say so)
        delta = 1.0 / max(n, 2)**2 if delta is None else check_real("delta", delta, low=0.0, high=1.0,
                                                                      low_open=True, high_open=True)
        return cls(
            n=n,
            randomiser=KRRRandomiser(k, gamma),
            shuffler=SingleShuffler(),
            analyser=KRRAnalyser(k, gamma, n),
            params={"k": k, "gamma": gamma, "eps0": eps0, "delta": delta, "adversary": adversary},
        )

    @property
    def gamma(self) -> float:
        return self.params["gamma"]

    def mse_expected(self, data: np.ndarray) -> float:
        return krr_mse_expected(self.n, self.k, self.gamma)

    def mse_worst(self) -> float:
        return krr_mse_expected(self.n, self.k, self.gamma)

    def sample_fast(self, summary, rng: np.random.Generator) -> HistogramEstimate:
        """Fast engine: the shuffled histogram drawn exactly (:func:`~shufflesim.pipeline.fast.rr_histogram`,
        O(k)), then this protocol's analyser."""
        from shufflesim.pipeline.fast import rr_histogram

        hist = rr_histogram(summary.counts, self.gamma, self.k, rng)
        counts = debias_counts(hist, self.n, self.k, self.gamma)
        return HistogramEstimate(hist, counts, project_to_simplex(counts / self.n))

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """The fast engine vectorised over ``size`` trials: the records' columns (``sq_error``, ``tv``)."""
        from shufflesim.pipeline.fast import rr_histogram_batch

        hist = rr_histogram_batch(summary.counts, self.gamma, self.k, rng, size)
        counts = debias_counts(hist, self.n, self.k, self.gamma)
        err = counts - truth
        dist = project_to_simplex(counts / self.n)
        tv = np.minimum(1.0, 0.5 * np.abs(dist - truth / self.n).sum(axis=1))
        return {"sq_error": np.sum(err * err, axis=1), "tv": tv}

    def _smallest_shuffled(self, r, delta: float):
        """(result, what) with the smallest certified ε upper end among the pairs bounding the shuffled reports,
        keeping the shuffled view's genuine lower end (``r``: the stronger clone pair's answer)."""
        from dataclasses import replace

        from shufflesim.accounting.account import account

        first = "blanket pair" if getattr(r, "method", None) == "blanket" else "stronger clone pair"  # account's default
        cands = [(first, r.eps_upper, (self.mechanism(), None))]
        rels = [Relation.STRONG] + ([Relation.WEAK] if _weak_in_budget(self.n) else [])
        for rel in rels:
            mech = KRR(self.n, self.k, self.gamma, rel, self.params["eps0"])
            try:
                (x,) = account(mech, delta=[delta]).results
            except ShufflesimError:
                continue
            if getattr(x, "applicable", True):
                cands.append((f"{rel.value} adversary's pair", x.eps_upper, (mech, None)))
        if self.k == 2 and self.n <= WEAK_PAIR_MAX_N:  # binary RR's exact value (docs/theory.md#exact-rr2); the
            # same time budget as the weak pair (the exact search costs ~1 s at 10⁴, a minute at 10⁶)
            mech = KRR(self.n, 2, self.gamma, Relation.SHUFFLED, self.params["eps0"])
            (x,) = account(mech, delta=[delta], method="exact").results
            cands.append(("binary RR's exact value", x.eps_upper, (mech, "exact")))
            r = replace(r, eps_lower=max(r.eps_lower or 0.0, x.eps_lower or 0.0))
        name, up, self._certifier = min(cands, key=lambda c: c[1])
        tried = ", ".join(c[0] for c in cands)
        budget = ("" if _weak_in_budget(self.n) else
                  f" (the weak pair is skipped for {WEAK_PAIR_MAX_N} < n < {WEAK_BUCKETS_MIN_N}: time budget)")
        return (replace(r, eps_upper=up),
                f"the shuffled reports: smallest certified upper end among {tried}: {name}{budget}")

    def certifier(self):
        """(mechanism, method): the pair whose certified ε upper end :meth:`privacy` reports (the smallest among
        those it tries, :meth:`_smallest_shuffled`), to ask the accountant anything else of the same pair (δ at
        another ε); ``None`` where the certificate is the local ε0 (post-processing of ε0-LDP reports)."""
        if "_certifier" not in self.__dict__:
            self._privacy = None  # computed elsewhere without its pair: the accountant runs again
        KRRProtocol.privacy(self)  # this class's certificate (an instance may carry a replaced ``privacy``)
        return self._certifier

    def mechanism(self) -> KRR:
        """Shuffled k-RR with this protocol's n, k, γ and neighbouring relation (``adversary``)."""
        return KRR(self.n, self.k, self.gamma, Relation.parse(self.params["adversary"]), self.params["eps0"])

    def privacy(self):
        """Central ε at the protocol's δ, certified by the tight accountant on the chosen k-RR pair.

        ``eps`` is the certified upper end of the interval; n = 1 has no shuffle amplification and
        reports ε0.  For the shuffled reports (the default) it is the smallest certified upper end among
        the pairs that bound that view — the stronger clone pair, the strong adversary's pair and, for
        n ≤ :data:`WEAK_PAIR_MAX_N` or n ≥ :data:`WEAK_BUCKETS_MIN_N` (time budget; from 10⁵ on through its
        bucket rows, docs/theory.md#bucketed-weak), the weak adversary's pair — and the notes name the pair (issue 17); the lower end is the shuffled view's own
        (explicit data sets, docs/theory.md#krr-shuffled-lower).  Cached: the accountant runs once per
        protocol object.
        """
        if getattr(self, "_privacy", None) is None:
            from shufflesim.accounting.account import account
            from shufflesim.accounting.model.provenance import render
            from shufflesim.accounting.model.results import PrivacyGuarantee

            adv, delta, eps0 = self.params["adversary"], self.params["delta"], self.params["eps0"]
            what = ("the shuffled reports (stronger clone pair)" if adv == "shuffled" else f"k-RR {adv} adversary pair")
            post = (f"the analyser sees only the shuffled reports, which are eps0-DP by post-processing, so "
                    f"eps <= eps0 = {eps0:.6g}")
            self._certifier = None  # the local guarantee (eps0-LDP, post-processing) unless a pair certifies below it
            try:
                rep = account(self.mechanism(), delta=[delta])
            except ShufflesimError as exc:  # e.g. gamma underflows to 0: the adversary's pair cannot be built
                self._privacy = PrivacyGuarantee(eps0, delta, "local", (f"{what}: {exc}", post))
                return self._privacy
            self._certifier = (self.mechanism(), None)
            (r,) = rep.results
            local = getattr(getattr(r, "provenance", None), "local", None)  # the accountant's answer, before the search
            if adv == "shuffled" and getattr(r, "applicable", True):
                r, what = self._smallest_shuffled(r, delta)
            eps = min(r.eps_upper, eps0)
            lower = "n/a" if r.eps_lower is None else f"{r.eps_lower:.6g}"
            notes = (what, f"eps in [{lower}, {r.eps_upper:.6g}]"
                     if math.isfinite(r.eps_upper) else
                     f"the {adv} adversary's view certifies no finite eps at this delta")
            if not r.eps_upper <= eps0:
                notes += (post,)
                self._certifier = None
            if local is not None and local.why in ("capped", "overflow"):
                notes += render(local)
            self._privacy = PrivacyGuarantee(eps, delta, "tight", notes, source=r)
        return self._privacy
