"""The end-to-end FL study: FedAvg rounds with FLAME's protocols and the baselines (seed 002 §Evaluations).

Each round samples n of the users without replacement, computes their local updates of the logistic
regression (:mod:`.model`), aggregates them with the chosen protocol and adds the estimate to the model
(Algorithm 2, line 20).  Protocols:

* ``ss-simple``, ``ss-double``, ``ss-topk`` — :mod:`.encoding` (encrypted with ``encrypt=True``);
* ``np`` — the plain mean of the (unclipped) updates (non-private FedAvg);
* ``dp`` — DP-FL: every update clipped to L2 norm S, the mean plus Gaussian noise from a trusted curator,
  calibrated so that the whole run is (eps, delta)-DP for the replacement relation (sensitivity 2S/n per
  round, as the paper doubles it for bounded DP): ``analytic`` (Balle & Wang; R rounds of the Gaussian
  compose exactly into one with sensitivity √R·2S/n) or ``classical`` (σ for (eps/R, delta/R) per round,
  basic composition; needs eps/R < 1);
* ``ldp`` — LDP-FL: each user perturbs its clipped, rescaled vector with ``laplace`` (Lap(d/ε_l) per
  coordinate, ε_l-LDP) or ``gaussian`` (analytic σ for (ε_l, δ_l) with L2 sensitivity √d).

Without client sampling, privacy is for one user taking part in every round.  With client sampling,
:func:`run_privacy` asks :func:`~shufflesim.federated.accounting.sampled_privacy` for the run's ε, which credits
the sampling (the rounds the target takes part in, bounded by a Chernoff bound charged to δ); with
``tight=False`` no sampling credit is claimed.

Client sampling (issue 31 item 4; docs/flame.md "Client sampling"): with ``clients_per_round = m`` exactly m of
the round's n clients take part (without replacement), with ``participation = q`` each of them independently
with probability q (a round may be empty: the model then does not move).  Only the participants compute and
report, and the analyser divides by their number.  The draw comes from a stream of the round's own
SeedSequence child (:func:`sample_clients`), so the same seed gives the same participants whatever else runs.
The run's ε is asked of the accountant by :func:`run_privacy`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from shufflesim.errors import ParameterError
from shufflesim.federated.data import load
from shufflesim.federated.encoding import PROTOCOLS as SS_PROTOCOLS
from shufflesim.federated.encoding import FlameConfig, clip_rescale, run_round
from shufflesim.federated.model import LogisticModel

__all__ = ["FLSettings", "train", "ALL_PROTOCOLS", "SampledFlameConfig", "sample_clients", "run_privacy",
           "SAMPLING_CHILD"]

ALL_PROTOCOLS = (*SS_PROTOCOLS, "np", "dp", "ldp")


@dataclass
class FLSettings:
    protocol: str = "ss-topk"
    dataset: str = "digits"
    rounds: int = 10
    seed: int = 0
    n: int = 300               # users sampled per round
    per_user: int = 4          # samples per user
    lr: float = 0.5            # local learning rate
    local_steps: int = 1
    C: float = 0.1             # coordinate clipping bound
    eps_l: float | None = None  # local budget per user and round (SS and LDP); default d/25
    randomiser: str = "laplace"
    b: int = 10
    beta: float = 1 / 50
    k: int | None = None
    n_p: int | None = None
    l: int | None = None
    nu: float | None = None
    encrypt: bool = False
    eps: float = 1.0           # DP-FL: total eps of the run
    delta: float | None = None  # default 0.01/n^1.1 (the paper's)
    calibration: str = "analytic"
    ldp_mechanism: str = "laplace"
    l2_clip: float = 1.0       # DP-FL: L2 clipping norm S
    tight: bool = True         # SS: also run the PLD accountant (slower for SS-Simple)
    poisoned: float = 0        # SS: poisoned clients per round, a fraction in [0, 1) or a count (.poisoning)
    poison_strategy: str = "worst-in-range"
    range_check: bool = True   # SS: the analyser's typecheck (False: measure what it protects against)
    clients_per_round: int | None = None  # client sampling: exactly m of the n clients a round (no replacement)
    participation: float | None = None    # client sampling: each of the n clients a round with probability q
    yes: bool = False          # run even when the time estimate is above the limit (the CLI's --yes)
    extra: dict = field(default_factory=dict)


def _eps_total_gaussian(sigma: float, sens: float, delta: float) -> float:
    from shufflesim.maths.central import gaussian_delta

    lo, hi = 0.0, 1.0
    while gaussian_delta(sigma, hi, sens) > delta:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(sigma, mid, sens) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def validate_settings(s: FLSettings) -> None:
    """Every setting checked before any work (bad input fails fast with a ParameterError)."""
    from shufflesim.core.checks import check_int, check_positive, check_real

    for name in ("rounds", "n", "per_user", "local_steps"):
        check_int(name, getattr(s, name), minimum=1)
    check_int("seed", s.seed, minimum=0)
    check_real("lr", s.lr, low=0.0, high=1e3, low_open=True)
    for name in ("C", "eps", "l2_clip"):
        check_positive(name, getattr(s, name))
    if s.eps_l is not None:
        check_positive("eps_l", s.eps_l)
    check_real("beta", s.beta, low=0.0, high=1.0, low_open=True)
    if s.delta is not None:
        check_real("delta", s.delta, low=0.0, high=1.0, low_open=True, high_open=True)
    for name in ("k", "n_p", "l"):
        if getattr(s, name) is not None:
            check_int(name, getattr(s, name), minimum=1)
    if s.nu is not None:
        check_real("nu", s.nu, low=1.0)
    check_int("b", s.b, minimum=1)
    if s.randomiser not in ("laplace", "rr"):
        raise ParameterError("randomiser must be laplace or rr")
    if s.calibration not in ("analytic", "classical"):
        raise ParameterError("calibration must be analytic or classical")
    if s.ldp_mechanism not in ("laplace", "gaussian"):
        raise ParameterError("ldp mechanism must be laplace or gaussian")
    from shufflesim.federated.poisoning import Poisoning

    poison = Poisoning(s.poisoned, s.poison_strategy)  # validates both
    if poison.active and s.protocol not in SS_PROTOCOLS:
        raise ParameterError(f"poisoning is simulated for {', '.join(SS_PROTOCOLS)} (the analyser's typecheck is "
                             f"theirs); got protocol {s.protocol!r}")
    if not isinstance(s.range_check, bool):
        raise ParameterError(f"range_check must be true or false; got {s.range_check!r}")
    if not s.range_check and s.protocol not in SS_PROTOCOLS:
        raise ParameterError(f"range_check is the analyser's typecheck of {', '.join(SS_PROTOCOLS)}; got protocol "
                             f"{s.protocol!r}")
    if poison.active:
        poison.count(s.n)  # a count above n is refused before any work
    check_sampling(s, poison.active)


def check_sampling(s: FLSettings, poisoned: bool = False) -> None:
    """The client-sampling settings (issue 31 item 4): at most one law, m in [1, n], q in (0, 1]."""
    from shufflesim.core.checks import check_int, check_probability

    m, q = s.clients_per_round, s.participation
    if m is None and q is None:
        return
    if m is not None and q is not None:
        raise ParameterError(f"give clients_per_round (exactly m clients a round) or participation (each client with "
                             f"probability q), not both; got clients_per_round={m!r}, participation={q!r}")
    if m is not None:
        m = check_int("clients_per_round", m, minimum=1)
        if m > s.n:
            raise ParameterError(f"clients_per_round must be at most n = {s.n} (the clients a round samples from); "
                                 f"got {m}")
    else:
        check_probability("participation", q, allow_zero=False)
    if poisoned:
        raise ParameterError("poisoned clients are simulated without client sampling; drop clients_per_round/"
                             "participation or poisoned")
    if q is not None and s.protocol == "dp":
        raise ParameterError("participation (Poisson client sampling) is not implemented for dp, whose Gaussian is "
                             "calibrated to a fixed number of clients; use clients_per_round")


#: the spawn index, under a round's SeedSequence child, of the stream that draws the round's participants: no
#: ``spawn`` of the round (run_round's) reaches it, so the protocol's own draws are those of an unsampled run
SAMPLING_CHILD = 2**31 - 2


def sample_clients(round_seq: np.random.SeedSequence, n: int, clients_per_round: int | None = None,
                   participation: float | None = None) -> np.ndarray:
    """Positions (ascending) of the round's participants among its n clients: all of them without sampling;
    exactly m without replacement (uniform over the m-subsets); or each independently with probability q
    (Poisson participation; possibly none).  Drawn from child :data:`SAMPLING_CHILD` of ``round_seq`` (built
    from its entropy and spawn key, so ``round_seq`` is not advanced): a function of the seed and the round
    only.  q = 1 or m = n gives every position in order (an unsampled run's order, bit for bit)."""
    if clients_per_round is None and participation is None:
        return np.arange(n)
    seq = np.random.SeedSequence(round_seq.entropy, spawn_key=(*round_seq.spawn_key, SAMPLING_CHILD),
                                 pool_size=round_seq.pool_size)
    g = np.random.Generator(np.random.PCG64(seq))
    if clients_per_round is not None:
        return np.sort(g.choice(n, size=clients_per_round, replace=False))
    return np.flatnonzero(g.random(n) < participation)


@dataclass(frozen=True)
class SampledFlameConfig(FlameConfig):
    """A FLAME configuration with its client-sampling law, the description handed to the accountant
    (:func:`shufflesim.federated.accounting.flame_privacy`): ``n`` is the population a round samples from,
    ``clients_per_round`` (m of n without replacement) or ``participation`` (each with probability q) the law;
    ``n_p`` (SS-Double/Topk) the messages every coordinate carries after padding whatever the number of
    participants; SS-Simple's coordinates carry exactly the participants' messages (no padding)."""

    clients_per_round: int | None = None
    participation: float | None = None


def run_privacy(cfg: FlameConfig, sampled: SampledFlameConfig | None, rounds: int, delta: float, *,
                tight: bool = True) -> dict:
    """The (ε, δ) of a whole FLAME run as the accountant certifies it, with the method and what sampling credit
    it takes (docs/flame.md "Client sampling"; docs/theory.md#flame-double).

    ``cfg`` is the configuration of a round with every participant of the largest round (m, or all n under
    Poisson participation); ``sampled`` the same with the sampling law (``None``: no client sampling).

    * With client sampling and the tight accountant: :func:`~shufflesim.federated.accounting.sampled_privacy`,
      which reveals to the adversary the rounds the target takes part in (their number bounded by a Chernoff
      bound charged to δ), composes the certified per-round methods over them (SS-Simple: its participants'
      count at its Chernoff lower end under Poisson sampling, exactly m with m fixed) and, for SS-Double, credits
      the k-of-d coordinate sampling.  The paper's values of the same run are added for comparison.
    * Without client sampling: :func:`~shufflesim.federated.accounting.flame_privacy`; for SS-Double also the
      coordinate-sampling credit, taken where it is smaller, with its certified lower end.
    * ``tight=False`` with client sampling: no sampling credit is claimed, and the answer is the unsampled
      accounting of ``rounds`` rounds, valid because the relation replaces one client's data: whether a client
      takes part does not depend on the data, so both worlds are the same mixture over participation patterns,
      and by joint convexity of the hockey-stick divergence the run is dominated by its worst pattern, in which
      the target takes part in every round.  Each round of that pattern must be dominated by the unsampled
      per-round accounting: true for SS-Double/Topk (every coordinate carries exactly n_p messages, padded) and
      for SS-Simple with m fixed (exactly m); for SS-Simple under Poisson participation a round may hold the
      target alone, a pattern the unsampled accounting does not dominate, so only ``ldp`` is claimed."""
    from shufflesim.federated.accounting import flame_privacy, sampled_privacy

    if sampled is not None and (sampled.clients_per_round == sampled.n or sampled.participation == 1.0):
        sampled = None  # every client in every round: the unsampled run, accounted as such
    # the paper's style (not a guarantee) for this run: SS-Simple under Poisson participation has no padding, so its
    # formula is taken at the expected participants q·n; otherwise at the round's configuration
    expected = (max(2, round(sampled.participation * sampled.n))
                if sampled is not None and cfg.protocol == "ss-simple" and sampled.participation is not None else None)
    paper_cfg = cfg if expected is None else replace(cfg, n=expected, n_p=None)
    if sampled is not None and tight:
        # the accountant of who takes part (docs/theory.md#flame-double): the target's participation per round
        # (Chernoff-bounded number of rounds) x SS-Double's coordinate sampling; its eps is the smallest of the
        # methods it certifies, next to the paper's value of the same run for comparison
        sp = sampled_privacy(sampled, rounds, delta, participation=sampled.participation,
                             clients_per_round=sampled.clients_per_round, population=sampled.n)
        out = sp.as_dict()
        paper = flame_privacy(paper_cfg, rounds, delta, tight=False).as_dict()["values"]
        out["values"] |= {k: v for k, v in paper.items() if k.startswith("paper")}
        if expected is not None:
            out["paper_n"] = expected
        out["sampling_credit"] = True
        out["sampling_note"] = (f"sampling credited (docs/theory.md#flame-double): the rounds the target takes part "
                                f"in, bounded by a Chernoff bound charged to delta; method {sp.method}")
        return out
    fp = flame_privacy(cfg, rounds, delta, tight=tight)
    out = fp.as_dict()
    if sampled is None:
        if tight and cfg.protocol == "ss-double":  # the k-of-d coordinate sampling credit (docs/theory.md#flame-double)
            sp = sampled_privacy(cfg, rounds, delta)
            credited = sp.values.get("clones-coordinate-sampling", math.inf)
            out["values"]["clones-coordinate-sampling"] = credited if math.isfinite(credited) else None
            if out["eps"] is None or credited < out["eps"]:
                out["eps"], out["method"] = credited, "clones-coordinate-sampling"
            if sp.eps_lower is not None:
                out["eps_lower"], out["lower_what"] = sp.eps_lower, sp.lower_what
        return out
    out["sampling_credit"] = False
    if cfg.protocol == "ss-simple" and sampled.participation is not None and sampled.participation < 1.0:
        ldp = fp.values.get("ldp", math.inf)
        out["eps"] = ldp if math.isfinite(ldp) else None
        out["method"] = "ldp"
        out["values"] = {"ldp": out["eps"]}  # the shuffling methods assume n messages a coordinate: not claimed
        out["sampling_note"] = ("no sampling credit claimed; SS-Simple under Poisson participation: a round may "
                                "hold the target alone, which the unsampled accounting does not cover, so only the "
                                "composition of the local guarantee is claimed")
        paper = flame_privacy(paper_cfg, rounds, delta, tight=False).as_dict()["values"]
        out["values"]["paper-original-2019"] = paper.get("paper-original-2019")
        out["paper_n"] = expected
    else:
        out["sampling_note"] = (f"no sampling credit claimed: the unsampled accounting of {rounds} round(s) with "
                                f"the target in each ({cfg.n_p} messages a coordinate), valid because participation "
                                f"does not depend on the data (replace-one)")
    return out


def check_training_time(s: FLSettings, model, theta, X, y) -> None:
    """Issue 29, work that will not fit is not started: the rounds x local steps of the users' updates, timed
    from one local step of one round's users (a lower bound: the protocol's own work per round comes on top),
    weighed by the one policy (:func:`shufflesim.core.resources.choose_path`; ``--yes`` lifts the time limit)."""
    from shufflesim.core.resources import RunPath, choose_path

    t0 = time.perf_counter()
    model.local_updates(theta, X, y, s.lr, 1)
    step = time.perf_counter() - t0
    choose_path(f"{s.rounds} round(s) of {s.local_steps} local step(s) for {len(X)} users",
                [RunPath("the local updates alone", "--rounds/--local-steps",
                         seconds=step * float(s.rounds) * float(s.local_steps))],
                yes=s.yes, advice="lower --rounds or --local-steps")


def train(s: FLSettings, progress=None) -> dict:
    """Run the study; returns the JSON-able result (``accuracy`` has the initial model's test accuracy
    first, then one value per round)."""
    if s.protocol not in ALL_PROTOCOLS:
        raise ParameterError(f"unknown protocol {s.protocol!r}; choose from {', '.join(ALL_PROTOCOLS)}")
    validate_settings(s)
    t0 = time.perf_counter()
    data = load(s.dataset, per_user=s.per_user, seed=s.seed)
    if not 1 <= s.n <= data.users:
        raise ParameterError(f"n must lie in [1, {data.users}] (users of {s.dataset} with {s.per_user} samples each)")
    model = LogisticModel(data.features, data.classes)
    d, n = model.d, s.n
    delta = s.delta if s.delta is not None else 0.01 / n**1.1
    root = np.random.SeedSequence(s.seed)
    theta = model.init()
    acc = [model.accuracy(theta, data.X_test, data.y_test)]
    sampling = s.clients_per_round is not None or s.participation is not None
    # the largest round: m clients, or all n under Poisson participation (the defaults of n_p and l follow it)
    n_max = s.clients_per_round if s.clients_per_round is not None else n
    # the cost scales with the clients that compute: m, or the expected q·n (at least one)
    n_cost = n_max if s.participation is None else max(1, math.ceil(s.participation * n))
    check_training_time(s, model, theta, data.X_users[:n_cost], data.y_users[:n_cost])
    params: dict = {"dataset": s.dataset, "d": d, "n": n, "users": data.users, "per_user": s.per_user,
                    "rounds": s.rounds, "lr": s.lr, "local_steps": s.local_steps, "seed": s.seed}
    if sampling:
        params.update({"clients_per_round": s.clients_per_round, "participation": s.participation})
    cfg = sampled_cfg = None
    keys = dec = None
    if s.protocol in SS_PROTOCOLS:
        k = s.k if s.k is not None else max(1, round(s.beta * d))
        if k > d:
            raise ParameterError(f"k = {k} exceeds d = {d}")
        eps_l = s.eps_l if s.eps_l is not None else d / 25.0
        l = s.l
        if s.protocol == "ss-topk" and l is None and s.nu is None and s.n_p is not None and s.n_p < n_max:
            # a given n_p below n: half of Theorem 5's largest l, because top-k indices concentrate on few
            # coordinates and a coordinate that receives more than n_p messages overflows (the excess is dropped
            # and the run is reported as not covered).  The default n_p = n cannot overflow, and FlameConfig
            # takes Theorem 5's l (the strongest index privacy)
            from shufflesim.federated.encoding import strongest_index_privacy

            l = max(1, strongest_index_privacy(s.n_p, n_max, k / d)[1] // 2)
        cfg = FlameConfig(s.protocol, d, n_max, eps_l, C=s.C, randomiser=s.randomiser, b=s.b, k=k, n_p=s.n_p, l=l,
                          nu_target=s.nu)
        params.update(cfg.as_params())
        if sampling:  # the population n with the law; n_p and l fixed for the run (the accountant's description)
            params["n"] = n
            sampled_cfg = SampledFlameConfig(s.protocol, d, n, eps_l, C=s.C, randomiser=s.randomiser, b=s.b, k=k,
                                             n_p=cfg.n_p if s.protocol != "ss-simple" else None, l=cfg.l,
                                             clients_per_round=s.clients_per_round, participation=s.participation)
        params["encrypted"] = s.encrypt
        if s.encrypt:
            from shufflesim.federated.crypto import AnalyserKeys

            keys = AnalyserKeys()
            dec = keys.decryptor()
    elif s.protocol == "dp":
        sens = 2.0 * s.l2_clip / n_max  # the mean of m clients (participation is refused for dp)
        if s.calibration == "analytic":
            from shufflesim.maths.central import analytic_gaussian_sigma

            sigma = analytic_gaussian_sigma(s.eps, delta, sens * math.sqrt(s.rounds))
        elif s.calibration == "classical":
            from shufflesim.maths.central import classical_gaussian_sigma

            sigma = classical_gaussian_sigma(s.eps / s.rounds, delta / s.rounds, sens)
        else:
            raise ParameterError("calibration must be analytic or classical")
        params.update({"l2_clip": s.l2_clip, "sigma": sigma, "calibration": s.calibration, "target_eps": s.eps})
    elif s.protocol == "ldp":
        eps_l = s.eps_l if s.eps_l is not None else d / 25.0
        if s.ldp_mechanism == "laplace":
            scale = d / eps_l
        elif s.ldp_mechanism == "gaussian":
            from shufflesim.maths.central import analytic_gaussian_sigma

            scale = analytic_gaussian_sigma(eps_l, delta / s.rounds, math.sqrt(d))
        else:
            raise ParameterError("ldp mechanism must be laplace or gaussian")
        params.update({"eps_l": eps_l, "C": s.C, "mechanism": s.ldp_mechanism, "noise_scale": scale})
    rejected = 0
    rejections: dict[str, int] = {}  # why messages were rejected (decryption, missing, typecheck)
    reports = {"dummies": 0, "overflow": 0, "user_messages": 0}
    from shufflesim.federated.poisoning import Poisoning, choose, poison_stream

    poison = Poisoning(s.poisoned, s.poison_strategy)
    n_poisoned = poison.count(n)
    # the poisoned clients are drawn from a child of the run's root that no round uses: honest draws unchanged
    g_poison = np.random.Generator(np.random.PCG64(poison_stream(s.seed))) if n_poisoned else None
    poison_totals = {"clients": 0, "messages": 0, "out_of_range": 0}
    counts: list[int] = []  # participants per round (client sampling)
    for r in range(s.rounds):
        child = root.spawn(1)[0]
        g = np.random.Generator(np.random.PCG64(child))
        users = g.choice(data.users, size=n, replace=False)
        if sampling:
            users = users[sample_clients(child, n, s.clients_per_round, s.participation)]
            counts.append(int(users.size))
            if users.size == 0:  # an empty round (Poisson participation): nobody reports, the model stays
                acc.append(acc[-1])
                if progress is not None:
                    progress.update(1)
                continue
        upd = model.local_updates(theta, data.X_users[users], data.y_users[users], s.lr, s.local_steps)
        if cfg is not None:
            bad = choose(n_poisoned, n, g_poison) if n_poisoned else None
            # the analyser divides by the round's participants; n_p and l are the run's (docs/flame.md)
            rcfg = cfg if users.size == cfg.n else FlameConfig(
                s.protocol, d, int(users.size), cfg.eps_l, C=cfg.C, randomiser=cfg.randomiser, b=cfg.b, k=cfg.k,
                n_p=cfg.n_p if s.protocol != "ss-simple" else None, l=cfg.l if s.protocol == "ss-topk" else None)
            res = run_round(rcfg, upd, g, keys=keys, round_id=r, decryptor=dec, poisoned=bad,
                            strategy=s.poison_strategy, range_check=s.range_check)
            if bad is not None:
                poison_totals["clients"] += res.report["poisoned"]["clients"]
                poison_totals["messages"] += res.report["poisoned"]["messages"]
            poison_totals["out_of_range"] += res.report["out_of_range"]
            est = res.estimate
            rejected += res.report["rejected_messages"]
            for key, v in res.report.get("decrypt", {}).items():
                if key not in ("accepted", "rejected"):
                    rejections[key] = rejections.get(key, 0) + v
            for key in ("missing", "out_of_range"):
                if key in res.report:
                    rejections[key] = rejections.get(key, 0) + res.report[key]
            for key in reports:
                reports[key] += res.report["shuffle"][key]
        elif s.protocol == "np":
            est = upd.mean(axis=0)
        elif s.protocol == "dp":
            norms = np.linalg.norm(upd, axis=1, keepdims=True)
            clipped = upd * np.minimum(1.0, s.l2_clip / np.maximum(norms, 1e-300))
            est = clipped.mean(axis=0) + g.normal(0.0, params["sigma"], size=d)
        else:
            x = clip_rescale(upd, s.C)
            if s.ldp_mechanism == "laplace":
                y = x + g.laplace(0.0, params["noise_scale"], size=x.shape)
            else:
                y = x + g.normal(0.0, params["noise_scale"], size=x.shape)
            est = s.C * (2.0 * y.mean(axis=0) - 1.0)
        theta = theta + est
        acc.append(model.accuracy(theta, data.X_test, data.y_test))
        if progress is not None:
            progress.update(1)
    # privacy of the whole run
    privacy: dict = {}
    if cfg is not None:
        privacy = run_privacy(cfg, sampled_cfg, s.rounds, delta, tight=s.tight)
        eps = privacy["eps"] if privacy["eps"] is not None else math.inf
        # the accounting assumes every coordinate carries its users' messages plus dummies up to n_p; a
        # dropped message (overflow) breaks that, so such a run is not covered by the eps above
        privacy["covered"] = reports["overflow"] == 0
        if reports["overflow"]:
            privacy["note"] = (f"NOT COVERED: {reports['overflow']} messages exceeded n_p = {cfg.n_p} and were "
                               f"dropped, so the rounds that dropped them are outside the accounting and eps does "
                               f"not cover this run (use n_p = n = {n_max}, the SS-Topk default, which cannot overflow)")
    elif s.protocol == "np":
        eps, delta = math.inf, 1.0
    elif s.protocol == "dp":
        eps = s.eps if s.calibration == "classical" else _eps_total_gaussian(
            params["sigma"], 2.0 * s.l2_clip / n_max * math.sqrt(s.rounds), delta)
        privacy = {"eps": eps, "delta": delta, "method": f"gaussian-{s.calibration}"}
    else:
        eps = params["eps_l"] * s.rounds
        if s.ldp_mechanism == "laplace":
            delta = 0.0
        privacy = {"eps": eps, "delta": delta, "method": f"ldp-{s.ldp_mechanism}, basic composition over rounds"}
    if not math.isfinite(eps):
        eps = math.inf
    extra: dict = {}
    if sampling:
        extra["sampling"] = {"law": "fixed" if s.clients_per_round is not None else "poisson",
                             "clients_per_round": s.clients_per_round, "participation": s.participation,
                             "population": n, "participants": counts, "empty_rounds": counts.count(0)}
    if n_poisoned or not s.range_check:  # absent from honest, checked runs: their output is unchanged
        extra["poisoning"] = {"poisoned": s.poisoned, "clients_per_round": n_poisoned,
                              "fraction": n_poisoned / n, "strategy": s.poison_strategy,
                              "range_check": s.range_check, **poison_totals,
                              "dropped_out_of_range": poison_totals["out_of_range"] if s.range_check else 0,
                              "privacy_note": "eps above assumes all n clients randomise honestly; poisoned "
                                              "clients' messages are no blanket for the honest ones"}
    return {"protocol": s.protocol, "dataset": s.dataset, "params": params, "accuracy": acc,
            "eps": eps if math.isfinite(eps) else None, "delta": delta, "rejected_messages": rejected,
            **({"rejections": rejections} if cfg is not None else {}), "privacy": privacy, "messages": reports if cfg is not None else None,
            "seconds": time.perf_counter() - t0, **extra}
